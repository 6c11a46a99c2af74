/* change: changing a placed job — moves to another region, cloud or cluster (move.c takes
 * the request and reserves, mover.c carries it out step by step) and spec updates of a
 * running job (job_update.c records them, updater.c applies them).  Both re-render the job
 * through dispatch_render_for and apply with no transaction open. */
#ifndef FLEET_QUEUE_CHANGE_H
#define FLEET_QUEUE_CHANGE_H

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

#include "core/audit.h"
#include "core/db.h"
#include "core/err.h"

/* ---- move: moving a placed job to another region, cloud or cluster — plan by the normal
 * placement rules restricted to the target, reserve there first, then hand the job to the
 * mover (state 'moving'); drains issue one move per job as a long-running operation. */

/* body: {"target": {"region"|"cloud_id"|"cluster_id"}, "reason", "dry_run"?}.
 * dry_run: *out is the plan.  Otherwise reserves at the target and marks the job moving;
 * *out is {plan, job}.  409 with per-cluster reasons (in e->detail and *reasons) when the
 * target cannot hold the job; nothing changes then. */
bool	move_request(struct db *c, const struct actor *who, const char *job_id, json_t *body,
	    const char *operation, json_t **out, json_t **reasons, struct err *e);
/* A rack-topology job whose rack is lost: reserves a placement on another rack of its own
 * cluster (free capacity only, never on rack_nodes or down_nodes, names of the source's
 * nodes; *same true), else on another cluster of the environment, and marks the job moving
 * with reason (the mover carries it out); rack_nodes join the job's avoid_nodes.  *plan is
 * the plan (new reference).  409 move.no_capacity when nothing holds it. */
bool	move_rack_lost(struct db *c, const char *job_id, const char *reason,
	    json_t *rack_nodes, json_t *down_nodes, json_t **plan, bool *same, struct err *e);
/* Drain: cordons the cluster(s) and creates an operation moving every placed job to
 * another cluster of the same environment.  scope: {"cluster_id"} or {"environment",
 * "region"}, and "team" for a team's drain: only the jobs of that team's queues move and
 * nothing is cordoned.  *out is the operation (its target is the scope). */
bool	move_drain(struct db *c, const struct actor *who, json_t *scope, json_t **out,
	    struct err *e);
/* Retries drain jobs still waiting for room (a few per call); *tried counts them. */
bool	move_retry_waiting(struct db *c, const struct actor *who, int *tried, struct err *e);
/* A page of operations, newest first (after: the id of the last one seen; state: as
 * reported; team: only that team's drains (NULL: all); envs: the caller's scope, "*" for
 * all). */
bool	move_operation_list(struct db *c, int limit, const char *after, const char *state,
	    const char *environment, const char *team, const char *const *envs, int nenvs,
	    json_t **out, struct err *e);
bool	move_operation_get(struct db *c, const char *id, json_t **out, struct err *e);
bool	move_operation_cancel(struct db *c, const char *id, json_t **out, struct err *e);

/* ---- mover: carries out moves reserved by queue/change/move.c, one step per visit, recording the
 * phase in jobs.move so a replica that dies mid-move leaves a job the next one resumes:
 * reserved -> checkpointing -> suspended -> applied (-> ready for RayService) -> done. */

struct mover_stats {
	size_t	claimed;
	size_t	stepped;	/* phases advanced */
	size_t	moved;		/* moves finished */
	size_t	failed;		/* moves abandoned (job requeued) */
	size_t	cancelled;	/* moves ended by a cancel (job cancelled) */
	size_t	retried;
};

/* One pass over moving jobs whose next step is due (tests call it directly). */
bool	mover_round(const char *who, struct mover_stats *st, struct err *e);
bool	mover_start(struct err *e);
void	mover_stop(void);

/* ---- job_update: changing a running job's spec (PUT /v1/jobs/{id}/spec). The request side
 * checks what the kind allows and records the update; the updater worker re-renders and
 * server-side applies it with no transaction open, then follows KubeRay's upgrade status. */

/* job is the job as job_get(for_update) gives it; body the new spec (the submit form,
 * "environment" optional and unchanged). RayService: image, serve_config, worker_groups,
 * autoscaler; RayCluster: worker group sizes; anything else 422 job.field_immutable with
 * the pointer; RayJob/RayCronJob 409 job.update_not_allowed; a job not dispatched or
 * running, or with an update in flight, 409. *changed false: nothing differed (no write). */
bool	job_update_spec(struct db *c, json_t *job, json_t *body, bool *changed, struct err *e);

struct updater_stats {
	size_t	claimed, applied, upgraded, failed, retried, rolled_back;
};

/* One round of the updater (claim, apply or follow, record). */
bool	updater_round(struct updater_stats *st, struct err *e);
bool	updater_start(struct err *e);
void	updater_stop(void);

#endif
