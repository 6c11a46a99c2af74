/* loader: builds the scheduler's in-memory model of one environment from Postgres —
 * fresh capacity snapshots, queues with quotas, every job that holds, and the jobs that
 * wait (with sched_config.pending_window, the head of each queue's). */
#ifndef FLEET_QUEUE_LOADER_H
#define FLEET_QUEUE_LOADER_H

#include <stdbool.h>

#include "core/db.h"
#include "core/err.h"
#include "queue/sched/sched.h"

/* Fills a new model for env (NULL = every environment) as seen by c's snapshot; the
 * caller frees it with sched_model_free.  stale_after: seconds a snapshot is trusted. */
bool	loader_model(struct db *c, const char *env, int stale_after, struct sched_model **out,
	    struct err *e);
/* Same, and *pools (when not NULL) gets {cluster id: [{pool, machine_type, flavor, spot,
 * price_hour, accel_per_node, name}]} in the model's pool index order, plus each cluster's
 * "name" under {"_names": {id: name}}. */
bool	loader_model_pools(struct db *c, const char *env, int stale_after,
	    struct sched_model **out, json_t **pools, struct err *e);
/* The model of a one-job plan (a move, a spec update): default configuration with
 * stale_after and every candidate cluster (max_candidates 0). */
bool	loader_model_plan(struct db *c, const char *env, int stale_after,
	    struct sched_model **out, json_t **pools, struct err *e);
/* Same with a full configuration (NULL = defaults). */
bool	loader_model_cfg(struct db *c, const char *env, const struct sched_config *cfg,
	    struct sched_model **out, json_t **pools, struct err *e);
/* Adds the job of a spec (canonical JSON) to m, its groups and constraints included. */
struct sched_job *loader_add_job(struct sched_model *m, const char *id, const char *queue_id,
	    int priority, bool can_preempt, int64_t enqueued_at, enum sched_state st,
	    json_t *spec, struct err *e);

#endif
