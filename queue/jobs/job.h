/* job: the job state machine — submit, read, list, cancel, events; every transition is one
 * statement pair (state change + job_events row) inside the caller's transaction. */
#ifndef FLEET_QUEUE_JOB_H
#define FLEET_QUEUE_JOB_H

#include <stdbool.h>

#include <jansson.h>

#include "core/db.h"
#include "core/err.h"
#include "providers/jobspec.h"
#include "queue/job_state.h"

/* A RayService's serve endpoint while it is placed: KubeRay's Service <object>-serve-svc
 * (port 8000) in the job's namespace on its cluster; the object keeps its name across
 * attempts (kuberay_object_name), so does the Service. The in-cluster URL. */
#define JOB_SERVE_ENDPOINT \
	"CASE WHEN j.kind = 'RayService' AND j.object_name IS NOT NULL AND j.state IN" \
	" ('dispatched', 'running', 'preempted', 'moving') THEN jsonb_build_object('cluster'," \
	" k.name, 'namespace', j.manifest->'metadata'->>'namespace', 'service', j.object_name" \
	" || '-serve-svc', 'port', 8000, 'url', 'http://' || j.object_name || '-serve-svc.' ||" \
	" (j.manifest->'metadata'->>'namespace') || '.svc.cluster.local:8000') END"
/* The last spec update (PUT /v1/jobs/{id}/spec) as users see it: its generation, state
 * (pending, upgrading, done, failed), whether it is an upgrade with a second Ray cluster,
 * the fields that changed, when it started and ended, and the room it holds meanwhile. */
#define JOB_SPEC_UPDATE \
	"CASE WHEN j.spec_update IS NOT NULL THEN jsonb_strip_nulls(jsonb_build_object(" \
	" 'generation', j.spec_update->'generation', 'state', j.spec_update->'phase'," \
	" 'upgrade', j.spec_update->'upgrade', 'fields', j.spec_update->'fields'," \
	" 'started_at', j.spec_update->'requested_at', 'finished_at'," \
	" j.spec_update->'finished_at', 'extra', j.spec_update->'extra')) END"

/* SQL rendering of a job j joined with queues q, clusters k and clouds c. */
/* queue/jobs/job_text.c writes the same members from the columns (GET /v1/jobs/{id}, GET
 * /v1/jobs): a member added here goes there too; test_api_reads compares the two. */
#define JOB_JSON \
	"json_build_object('id', j.id, 'name', j.name, 'environment', j.environment," \
	" 'queue', q.name, 'queue_id', j.queue_id, 'kind', j.kind, 'state', j.state," \
	" 'reason', j.reason, 'priority_class', j.priority_class, 'priority', j.priority," \
	" 'attempt', j.attempt, 'cluster_id', j.cluster_id, 'cluster', k.name," \
	" 'region', c.region, 'provider', c.provider, 'placement', j.placement," \
	" 'object_name', j.object_name, 'spec', j.spec, 'enqueued_at', j.enqueued_at," \
	" 'dispatched_at', j.dispatched_at, 'started_at', j.started_at," \
	" 'finished_at', j.finished_at, 'version', j.version, 'created_at', j.created_at," \
	" 'updated_at', j.updated_at, 'checkpoint', j.checkpoint || jsonb_build_object(" \
	" 'age_seconds', extract(epoch from now() - (j.checkpoint->>'at')::timestamptz)::int)," \
	" 'serve_endpoint', " JOB_SERVE_ENDPOINT ", 'spec_update', " JOB_SPEC_UPDATE "," \
	" 'team', q.team, 'capacity_migrations', j.capacity_migrations)::text"
#define JOB_FROM " FROM jobs j JOIN queues q ON q.id = j.queue_id" \
	" LEFT JOIN clusters k ON k.id = j.cluster_id LEFT JOIN clouds c ON c.id = k.cloud_id"

/* Validates the spec (plus "environment"), resolves queue and priority class, refuses
 * what the environment could never hold, inserts the job pending with its first event,
 * and NOTIFYs the scheduler. */
bool	job_submit(struct db *c, json_t *body, json_t **out, struct err *e);
/* Whether the environment's pod policy allows every pod section of s (422
 * jobspec.pod_not_allowed with the pointer; no pod section: true without a query). */
bool	pod_policy_ok(struct db *c, const char *env, const struct job_spec *s, struct err *e);
/* job_submit by an actor (its id kept as the job's submitter); with team not NULL, a queue
 * of another team (or of none) is 404 queue.not_found at /queue, as a missing one. */
bool	job_submit_by(struct db *c, json_t *body, const char *team, const char *actor,
	    json_t **out, struct err *e);
/* *mine: actor submitted job id. */
bool	job_submitted_by(struct db *c, const char *id, const char *actor, bool *mine,
	    struct err *e);
bool	job_get(struct db *c, const char *id, bool for_update, json_t **out, struct err *e);
/* The manifest last applied for job id; 404 "queue.no_manifest" before the first apply. */
bool	job_manifest(struct db *c, const char *id, json_t **out, struct err *e);
struct job_filter {
	const char	*state, *queue, *environment, *region, *cluster;
	const char	*const *envs;	/* caller's environments; NULL = all */
	int		 nenvs;
	const char	*team;		/* only the jobs of this team's queues; NULL = all */
};
bool	job_list(struct db *c, int limit, const char *after, const struct job_filter *f,
	    json_t **out, struct err *e);
bool	job_events(struct db *c, const char *id, int limit, const char *after, json_t **out,
	    struct err *e);
/* Moves the job from one of from (comma list, e.g. "pending,admitted") to to, writes the
 * event, and NOTIFYs.  409 "job.state" when the job is in another state. */
bool	job_transition(struct db *c, const char *id, const char *from, const char *to,
	    const char *reason, json_t *data, struct err *e);
/* Appends an event that is not a state change (observed on the cluster, etc.). */
bool	job_event(struct db *c, const char *id, const char *type, const char *message,
	    json_t *data, struct err *e);
/* Appends a job event unless one with the same type and data.key exists for the job's
 * current attempt (attempt must still be the job's).  data gets "key". */
bool	job_event_once(struct db *c, const char *job_id, int attempt, const char *type,
	    const char *key, const char *message, json_t *data, struct err *e);
/* pending/admitted -> cancelled at once; dispatched/running -> cancel_requested for the
 * status worker, which deletes the object and then records cancelled. */
bool	job_cancel(struct db *c, const char *id, const char *reason, json_t **out,
	    struct err *e);

#endif
