/* dispatch: admitted jobs become KubeRay objects on their member clusters — claim with
 * SKIP LOCKED, commit, render and server-side apply outside any transaction (exactly
 * once per attempt), record in a new transaction; plus what the status worker shares. */
#ifndef FLEET_QUEUE_DISPATCH_H
#define FLEET_QUEUE_DISPATCH_H

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

#include "core/db.h"
#include "core/err.h"
#include "providers/kuberay.h"
#include "providers/provider.h"
#include "queue/member.h"

#define DISPATCH_MAX_TRIES	8	/* transient failures before the job is placed again */
#define DISPATCH_LEASE_S	600	/* a claim older than this is taken over regardless */
#define DISPATCH_LOCK_CLASS	7315	/* advisory lock class of replica liveness */
/* A dead claimant's apply may still be in flight (its request outlives it on the member
 * cluster): its claim is taken over only after this long, beyond any apply's timeout,
 * so the next claimant's GET sees that apply and does not repeat it. */
#define DISPATCH_INFLIGHT_S	"20"

/* One admitted job as claimed (heap, dispatch_job_free). */
struct dispatch_job {
	char	id[40];
	char	cluster_id[40];
	char	environment[64];
	char	queue[64];
	int	attempt;
	int	tries;
	bool	first;		/* the attempt's first claim (never claimed, no retry): nothing
				 * can be on the cluster yet, so no GET before the apply */
	int	priority;	/* the job's priority value (its WorkloadPriorityClass) */
	json_t	*spec;		/* canonical job spec */
	json_t	*placement;	/* the scheduler's placement document */
	bool	 history_known;	/* history read with the claim (else the render reads it) */
	json_t	*history;	/* the environment's History Server setting, NULL: none */
	char	*ray_token;	/* the job's Ray auth token read for the whole batch
				 * (dispatch_many); NULL: the signal render reads it */
};

struct dispatch_stats {
	size_t	claimed;
	size_t	dispatched;	/* recorded as dispatched */
	size_t	reused;		/* the object of this attempt already existed: no apply */
	size_t	retried;	/* transient failure, next try scheduled */
	size_t	failed;		/* refused by the cluster (422) or unrenderable */
	size_t	replaced;	/* too many failures: back to pending */
	size_t	withdrawn;	/* the job changed meanwhile: object deleted */
};

void	dispatch_job_free(struct dispatch_job *j);

/* Renders the job's manifest for its placement on t (pure apart from the inputs);
 * 422 "kuberay.*" when the spec cannot be expressed there. */
json_t	*dispatch_render(const struct dispatch_job *j, const struct member *t,
	    struct err *e);
/* dispatch_render and dispatch_signal_render (no signal, every object) of j on t from one
 * reading of its spec, for a dispatch batch: *manifest, *signals (the objects' array) and
 * *warning ({message, image} when the image looks like a CPU build on NVIDIA workers,
 * kuberay_image_warning; else NULL), all new.  False + e: *manifest NULL when the Ray
 * object cannot be rendered (as dispatch_render), else only the signal objects failed (as
 * dispatch_signal_render) and *manifest is the caller's to free. */
bool	 dispatch_render_job(const struct dispatch_job *j, const struct member *t,
	    json_t **manifest, json_t **signals, json_t **warning, struct err *e);
/* The same for a job known by its parts (the mover's next attempt, a spec update, a cron
 * run): attempt on t with spec and placement. */
json_t	*dispatch_render_for(const struct member *t, const char *id,
	    const char *environment, const char *queue, int attempt, json_t *spec,
	    json_t *placement, struct err *e);
/* The attempt's checkpoint-signal objects (kuberay_signal_objects), or its ConfigMap alone
 * (a new JSON object) when configmap_only; NULL + e on an unrenderable job. */
json_t	*dispatch_signal_render(const struct dispatch_job *j, const struct member *t,
	    const struct kuberay_signal *sig, bool configmap_only, struct err *e);
/* Whether Kueue gates j on t (the queue-name label) and the sentence why (static text). */
const char *dispatch_kueue_reason(const struct dispatch_job *j, const struct member *t,
	    bool *gated);
/* Renders and server-side applies them, in order (network call: no transaction held). */
bool	 dispatch_signal_apply(const struct dispatch_job *j, const struct member *t,
	    const struct kuberay_signal *sig, bool configmap_only, struct err *e);
/* The same for a job known by its parts (the mover's next attempt at its target). */
bool	 dispatch_signal_apply_for(const struct member *t, const char *id,
	    const char *environment, const char *queue, int attempt, json_t *spec,
	    json_t *placement, struct err *e);
/* Deletes attempt's checkpoint-signal objects (RoleBinding, Role, ServiceAccount, ConfigMap
 * fleet-signal-<8hex>-<attempt>) from ns: once that attempt's Ray object is gone for good.
 * Absent objects are success; false + e on the first refusal (network call: no transaction
 * held). */
bool	 dispatch_signal_delete(const struct prov_cluster *pc, const char *ns,
	    const char *job_id, int attempt, struct err *e);
/* The same for the attempt a Ray object (manifest) is labelled with; a manifest without
 * fleetd's labels has nothing to delete.  Failures are logged (who) and otherwise ignored:
 * the objects are small and the next attempt's are distinct. */
void	 dispatch_signal_delete_for(const struct prov_cluster *pc, const json_t *manifest,
	    const char *who);
/* The render -> apply -> record of n claimed jobs of one cluster at once: one target load,
 * the signal objects of all in one round of concurrent applies, the Ray objects in
 * another, one transaction to record them.  Each job keeps its own outcome (fills st). */
void	dispatch_many(const char *who, struct dispatch_job **jobs, size_t n,
	    struct dispatch_stats *st);
/* dispatch_many of one job. */
void	dispatch_one(const char *who, struct dispatch_job *j, struct dispatch_stats *st);

bool	dispatch_start(struct err *e);
void	dispatch_stop(void);
void	dispatch_metrics(char **buf, size_t *len, size_t *cap);

/* ---- keyed worker pool: tasks with the same key (a cluster) run one at a time, so a
 * hanging cluster holds one thread and never the others. */
struct dispatch_pool;
typedef void (*dispatch_task_fn)(void *arg);
struct dispatch_pool *dispatch_pool_new(int threads);
/* Stops after the running tasks; queued tasks are dropped through their drop function. */
void	dispatch_pool_free(struct dispatch_pool *p);
void	dispatch_pool_add(struct dispatch_pool *p, const char *key, dispatch_task_fn fn,
	    dispatch_task_fn drop, void *arg);
size_t	dispatch_pool_pending(struct dispatch_pool *p);	/* queued + running */
bool	dispatch_pool_busy(struct dispatch_pool *p, const char *key);
void	dispatch_pool_wait(struct dispatch_pool *p);	/* until nothing is queued or running */

#endif
