/* move: moving a placed job to another region, cloud or cluster — plan by the normal
 * placement rules restricted to the target, reserve there first, then hand the job to the
 * mover (state 'moving'); drains issue one move per job as a long-running operation. */
#ifndef FLEET_QUEUE_MOVE_H
#define FLEET_QUEUE_MOVE_H

#include <stdbool.h>

#include <jansson.h>

#include "core/audit.h"
#include "core/db.h"
#include "core/err.h"

/* body: {"target": {"region"|"cloud_id"|"cluster_id"}, "reason", "dry_run"?}.
 * dry_run: *out is the plan.  Otherwise reserves at the target and marks the job moving;
 * *out is {plan, job}.  409 with per-cluster reasons (in e->detail and *reasons) when the
 * target cannot hold the job; nothing changes then. */
bool	move_request(struct db *c, const struct actor *who, const char *job_id, json_t *body,
	    const char *operation, json_t **out, json_t **reasons, struct err *e);
/* Drain: cordons the cluster(s) and creates an operation moving every placed job to
 * another cluster of the same environment.  scope: {"cluster_id"} or {"environment",
 * "region"}.  *out is the operation. */
bool	move_drain(struct db *c, const struct actor *who, json_t *scope, json_t **out,
	    struct err *e);
/* Retries drain jobs still waiting for room (a few per call); *tried counts them. */
bool	move_retry_waiting(struct db *c, const struct actor *who, int *tried, struct err *e);
/* A page of operations, newest first (after: the id of the last one seen; state: as
 * reported; envs: the caller's scope, "*" for all). */
bool	move_operation_list(struct db *c, int limit, const char *after, const char *state,
			    const char *environment, const char *const *envs, int nenvs,
			    json_t **out, struct err *e);
bool	move_operation_get(struct db *c, const char *id, json_t **out, struct err *e);
bool	move_operation_cancel(struct db *c, const char *id, json_t **out, struct err *e);

#endif
