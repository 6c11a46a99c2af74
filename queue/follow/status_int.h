/* status_int: what status.c (reading clusters) and status_act.c (acting on jobs) share. */
#ifndef FLEET_QUEUE_STATUS_INT_H
#define FLEET_QUEUE_STATUS_INT_H

#include <stdbool.h>

#include <jansson.h>

#include "queue/dispatch/dispatch.h"
#include "queue/follow/status.h"
#include "queue/job_state.h"

/* One followed job as the cycle loaded it. */
struct status_job {
	char	id[40];
	enum job_state state;
	char	kind[16];
	char	object[64];
	char	ns[64];
	char	deadline[40];		/* checkpoint deadline, RFC 3339, "" when none */
	char	flavor[48];
	int	attempt;
	int	stockout_timeout_s;
	bool	cancel;
	bool	deadline_passed;
	bool	ttl_due;
	bool	scale_failed;		/* the autoscaler said it cannot grow */
	double	pending_for;		/* seconds since the first FailedScheduling, -1 none */
	bool	spot_loss;		/* preempted because spot capacity was reclaimed */
	int	grace_s;		/* the spec's checkpoint grace (SCHED_GRACE_S without one) */
	int	cron_runs;		/* RayCronJob: runs counted (queue/follow/cron.c) */
	int	infra_retries;		/* attempts given after infrastructure/preemption */
	int	max_infra_retries;	/* the spec's, else the queue's */
	json_t	*manifest;		/* as applied, NULL when never applied */
	char	*manifest_text;		/* as loaded, until the sync parses it */
};

/* What the cluster showed about one job this cycle. */
struct status_seen {
	json_t	*live;			/* the object, NULL when absent from the list */
	int	unscheduled;		/* pods of this attempt without a node */
	bool	spot;			/* a pod of this attempt got a spot reclaim notice */
	json_t	*events;		/* array of Warning events about its pods */
	const char *no_room;		/* FailedScaleUp about a pod of this attempt
					 * (borrowed from events), NULL */
	json_t	*pods;			/* array of its attempt's Pods as listed */
	json_t	*nodes;			/* node name -> Node (borrowed), NULL when unread */
};

#define STATUS_SEL_MANAGED	"labelSelector=app.kubernetes.io%2Fmanaged-by%3Dfleetd"

/* ---- status_watch.c: the clusters' objects as watches keep them */
bool	status_watch_start(struct err *e);	/* no-op when status-watch is 0 */
void	status_watch_stop(void);
bool	status_watch_on(void);
/* The status cycle needs kind ("RayJob", "Pod", "Event", "Node", ...) of this cluster:
 * watched from now until it is not asked for IDLE_DROP_S (status_watch.c). */
void	status_watch_want(const char *cluster_id, const char *kind);
/* A new array of the kind's objects in ns when its watch is in sync, else NULL (list it). */
json_t	*status_watch_list(const char *cluster_id, const char *kind, const char *ns);
/* A new object of the cluster's nodes (name -> Node) when its node watch is in sync, else
 * NULL (list them). */
json_t	*status_watch_nodes(const char *cluster_id);
/* A Node list (array, reference stolen) as name -> Node (a new object). */
json_t	*status_nodes_by_name(json_t *items);
/* A new object: what the watch cache keeps of object o of kind (the fields the status
 * path reads; values shared with o). */
json_t	*status_watch_trim(const char *kind, json_t *o);
/* Moves what the watches saw change since the last call into jobs (job id -> true: the
 * jobs the events concern) and clusters (cluster id -> true: relisted, every job there is
 * looked at); true when anything changed. */
bool	status_watch_take_changes(json_t *jobs, json_t *clusters);
/* Whether the cycle must list the cluster itself each turn: watches are off, it refuses
 * them, or a kind it needs is out of sync.  A cluster never followed yet is not. */
bool	status_watch_polled(const char *cluster_id);
void	status_watch_count_list(void);		/* a list the cycle made itself */
void	status_watch_metrics(char **buf, size_t *len, size_t *cap);

/* ---- status_stockout.c: a dispatched job the member has no room for */

/* Whether an event reason says the cluster has no room for a pod (FailedScaleUp,
 * NotTriggerScaleUp). */
bool	status_no_room(const char *reason);
/* Whether to withdraw j (dispatched, pods waiting for a node) to be placed elsewhere;
 * *why: the member's signal that decided, or "timeout" (the backstop). */
bool	status_stocked_out(const struct member *t, const struct status_job *j,
	    const struct status_seen *seen, const char **why);
/* Acts on one job: cancel, TTL, preemption, state mapping, stockout, spot loss. */
void	status_act(const struct member *t, struct status_job *j,
	    const struct status_seen *seen, struct status_stats *st);
/* Appends a job event of the attempt once per (type, key) (job_event_once, remembered). */
void	status_note_once(const struct status_job *j, const char *type, const char *key,
	    const char *msg, json_t *data, struct status_stats *st);
/* repair.c: a node lost under the job (deleted, NotReady past a grace) gets a spare of its
 * domain re-pinned and recorded, or one waiting_for_spare event. */
void	status_repair(const struct member *t, struct status_job *j,
	    const struct status_seen *seen, struct status_stats *st);
/* repair.c: the values of the required kubernetes.io/hostname In expression of a pod
 * template or a Pod (an object with a spec; borrowed), NULL when it has none. */
json_t	*status_pin_values(json_t *tmpl);
/* repair.c: the node names the manifest pins the job's groups to (hostname In values and
 * host nodeSelectors; a new array, empty for an unpinned job). */
json_t	*status_pins(json_t *manifest, const char *kind);
/* grow.c (issue 26): an autoscaled group's replicas above what fleetd admitted become a
 * grow request; admitted grows widen the group's pin and lift the gate of that many pods;
 * grows the scheduler shrank, or the autoscaler no longer uses, are released. */
void	status_grow(const struct member *t, struct status_job *j,
	    const struct status_seen *seen, struct status_stats *st);
/* Reports once per attempt that the cluster could not be read (why: e->code). */
void	status_unreadable(const struct status_job *j, const char *cluster, const struct err *why);

#endif
