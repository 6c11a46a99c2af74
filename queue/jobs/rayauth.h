/* rayauth: each job's Ray auth token (issue 25) — random, stored only sealed with the
 * master key (table job_ray_auth); in plaintext only in the member's Secret and in the
 * dashboard answer to those who may have it (api/h_job.c).  Never logged. */
#ifndef FLEET_QUEUE_JOBS_RAYAUTH_H
#define FLEET_QUEUE_JOBS_RAYAUTH_H

#include <stdbool.h>
#include <stddef.h>

#include "core/db.h"
#include "core/err.h"

/* The job's token, made (32 random bytes, base64url) and stored on first use: one short
 * transaction on a pooled connection of its own, no network call.  *token is malloc'd;
 * release it with rayauth_free.  503 config.no_master_key without a master key. */
bool	rayauth_ensure(const char *job_id, char **token, struct err *e);
/* rayauth_ensure of n jobs in one transaction (a dispatch batch: one commit, not one per
 * job): tokens[i] the token of ids[i] (malloc'd, rayauth_free each); on failure every
 * tokens[i] is NULL. */
bool	rayauth_ensure_many(const char *const *ids, size_t n, char **tokens, struct err *e);
/* The job's token on c; 404 rayauth.not_yet while the job was never dispatched. */
bool	rayauth_get(struct db *c, const char *job_id, char **token, struct err *e);
/* GET /v1/jobs/{id}/dashboard for job (its public object, already visible to the caller):
 * {job_id, auth: token|none, token, url, ingress_url, namespace, kind, object,
 * secret_name, secret_key} from the applied manifest and the sealed token.  409
 * dashboard.no_cluster while the job has no live Ray object.  *out a new reference; it
 * holds the token: never log it. */
bool	rayauth_dashboard(struct db *c, json_t *job, json_t **out, struct err *e);
/* Wipes and frees a token (NULL is fine). */
void	rayauth_free(char *token);

#endif
