/* status: follows the KubeRay objects of dispatched jobs, batched per member cluster —
 * state mapping, pod events worth reading, cancellation, TTL cleanup, checkpoint and
 * suspension of preempted jobs, stockout withdrawal and spot loss. */
#ifndef FLEET_QUEUE_STATUS_H
#define FLEET_QUEUE_STATUS_H

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

#include "core/err.h"

enum status_phase {
	STATUS_PENDING,		/* accepted, not running yet */
	STATUS_RUNNING,
	STATUS_SUCCEEDED,
	STATUS_FAILED,
	STATUS_SUSPENDED,
};

struct status_obs {
	enum status_phase phase;
	char	word[64];	/* KubeRay's own words: "Running", "Complete/SUCCEEDED", "ready" */
	char	message[400];	/* reason and message, for failures and trouble */
};

/* Maps a live ray.io/v1 object of kind to what fleetd tracks (pure; any input). */
void	status_map(const char *kind, json_t *live, struct status_obs *out);
/* Whether a pod event reason means the node is being taken away (spot reclaim). */
bool	status_event_spot(const char *reason, const char *message);
const char *status_phase_name(enum status_phase p);

/* queue/follow/status_class.c: classified failure signals of one attempt — pods (array of
 * Pod objects), nodes (name -> Node, NULL when unread), events (Warning events of the pods
 * and their nodes), pinned (array of the node names the job's manifest pins it to, or
 * NULL: their reclaim signals count though no pod of the job sits there).  A new array of
 * {key, class, reason, message, pods, ranks, nodes, evidence}; key is stable across cycles
 * (class:reason:node). */
json_t	*status_classify(json_t *pods, json_t *nodes, json_t *events, json_t *pinned);
/* Which class most likely ended an attempt: lower first (infrastructure ... capacity). */
int	status_class_rank(const char *cls);
/* Whether a failure of class cls gets a new attempt (infrastructure, preemption). */
bool	status_class_retried(const char *cls);

/* queue/follow/status_postmortem.c: the bounded record of an attempt (see there). */
#define STATUS_PM_PODS		64
#define STATUS_PM_CONTAINERS	4
#define STATUS_PM_EVENTS	30
#define STATUS_PM_MAX_BYTES	65536
/* A new object {pods, pods_total, nodes, events, ray, findings[, truncated]}: pods and
 * events as listed (events oldest first), nodes name -> Node or NULL, live the Ray object
 * or NULL, word/message the status as mapped, findings status_classify's. */
json_t	*status_postmortem(json_t *pods, json_t *events, json_t *nodes, const char *kind,
	    json_t *live, const char *word, const char *message, json_t *findings);
struct member;
/* queue/follow/postmortem_keep.c: before an attempt's object is deleted (cancel, sweep),
 * keeps its post-mortem unless one is kept already; reads the member (no transaction
 * open); logs and returns on any failure. */
void	status_postmortem_keep(const struct member *t, const char *job, int attempt,
	    const char *ns, const char *kind, const char *trigger);

struct status_stats {
	size_t	clusters, jobs;
	size_t	transitions;	/* state changes written */
	size_t	events;		/* cluster events surfaced */
	size_t	deleted;	/* objects deleted (cancel, TTL, withdrawal) */
	size_t	errors;		/* clusters that could not be read */
};

/* One sync over every member cluster with followed jobs, on the calling thread (tests). */
bool	status_cycle(struct status_stats *st, struct err *e);
bool	status_start(struct err *e);
void	status_stop(void);
void	status_metrics(char **buf, size_t *len, size_t *cap);

#endif
