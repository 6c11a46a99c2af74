/* registry: two-phase cloud registration — phase 1 creates the cloud `pending_iam` with the
 * exact policy documents; phase 2 verifies the named identities against the provider and
 * locks the pair; rotation swaps a locked pair for another verified one. */
#ifndef FLEET_IAM_REGISTRY_H
#define FLEET_IAM_REGISTRY_H

#include <stdbool.h>

#include <jansson.h>

#include "core/audit.h"
#include "core/db.h"
#include "core/err.h"
#include "iam/policy.h"

/* Phase 1.  body as POST /v1/clouds; env visibility is the caller's check.  *out is the
 * created cloud (new reference). */
bool	registry_cloud_create(struct db *c, json_t *body, json_t **out, struct err *e);
/* PUT: name is the only mutable field; environment, provider, region and account
 * changed -> 409 "cloud.immutable" naming the field. */
bool	registry_cloud_replace(struct db *c, const char *id, json_t *body, json_t **before,
	    json_t **out, struct err *e);
/* Unpacks a phase-2 / rotation body {"control_plane_role", "cluster_role"} and checks the
 * grammar against the cloud's account. */
bool	registry_pair_parse(json_t *cloud, json_t *body, const char **cp, const char **cl,
	    struct err *e);
/* Refuses identities already bound to another cloud (409 "iam.identity_in_use"). */
bool	registry_pair_unused(struct db *c, const char *cloud_id, const char *cp,
	    const char *cl, struct err *e);
/* Asks the provider: can fleetd assume cp with the external id, do both carry the
 * cloud-id tag, does the cluster identity exist.  Network; call outside a transaction.
 * checks gets one {check, ok, message} per check; false when any failed (422). */
bool	registry_pair_verify(json_t *cloud, const char *cp, const char *cl, json_t *checks,
	    struct err *e);
/* Locks the verified pair (phase 2) or swaps it (rotate).  Re-reads the cloud FOR UPDATE:
 * 409 "iam.locked" when phase 2 finds a locked pair, 409 "cloud.changed" when the cloud
 * changed since verification.  A rotation to the pair already locked changes nothing
 * (no write, no audit row) and answers the cloud as it is. */
bool	registry_pair_lock(struct db *c, const struct actor *who, const char *cloud_id,
	    long version, const char *cp, const char *cl, bool rotate, json_t **out,
	    struct err *e);
/* Fills acct from a cloud's JSON (borrowed strings). */
void	registry_account(json_t *cloud, struct iam_account *acct);

#endif
