/* reverify: continuous IAM verification of locked pairs (see reverify.c). */
#ifndef FLEET_IAM_REVERIFY_H
#define FLEET_IAM_REVERIFY_H

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

#include "core/audit.h"
#include "core/err.h"

enum iam_verify_result {
	IAM_VERIFY_PASSED,	/* every check passed: the cloud is active */
	IAM_VERIFY_FAILED,	/* a check failed: the cloud is degraded */
	IAM_VERIFY_UNVERIFIED,	/* the provider could not be asked: nothing changed */
};

/* Verifies cloud_id's locked pair again (network; no transaction held across it) and
 * records the verdict.  *cloud is the cloud afterwards, *checks every check (new
 * references); for UNVERIFIED, e holds why (and true is returned).  409 "iam.not_locked"
 * for a cloud still pending_iam. */
bool	iam_reverify(const char *cloud_id, const struct actor *who, json_t **cloud,
	    json_t **checks, enum iam_verify_result *result, struct err *e);
/* The iam-verify worker (api/workers.c): due clouds, claimed with SKIP LOCKED. */
bool	iam_verify_start(struct err *e);
void	iam_verify_stop(void);
void	iam_verify_metrics(char **buf, size_t *len, size_t *cap);

#endif
