/* cron: the runs of a RayCronJob — the child RayJobs KubeRay's RayCronJob controller
 * creates on the schedule (label ray.io/cronjob-name, owner reference to the cron).
 * fleetd counts each running child against the queue's quota and the cluster's capacity
 * (jobs.cron_runs, read by queue/sched/loader.c) and enforces the spec's concurrency policy,
 * which the CRD does not have, by deleting the child that must not run.  Called by the
 * status worker (queue/follow/status.c); the decision table itself is pure (cron_decide). */
#ifndef FLEET_QUEUE_CRON_H
#define FLEET_QUEUE_CRON_H

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

#include "providers/jobspec.h"
#include "queue/follow/status_int.h"

#define CRON_LABEL	"ray.io/cronjob-name"
#define CRON_SCHEDULED	"ray.io/cronjob-scheduled-timestamp"

/* One child RayJob as the member shows it. */
struct cron_child {
	char	name[64];
	bool	known;		/* already a counted run (in jobs.cron_runs) */
	bool	active;		/* neither finished nor being deleted */
};

enum cron_action {
	CRON_IGNORE,		/* finished before fleetd counted it, or being deleted */
	CRON_RUN,		/* counted while it runs (a new one: cron.run_started) */
	CRON_SKIP,		/* a new run that must not run: deleted, cron.run_skipped */
	CRON_STOP,		/* a counted run replaced by a newer one: deleted,
				 * cron.run_replaced */
	CRON_DONE,		/* a counted run that finished: cron.run_finished */
};

enum cron_why {
	CRON_WHY_NONE, CRON_WHY_FORBID, CRON_WHY_QUOTA, CRON_WHY_REPLACED,
	CRON_WHY_CAPACITY	/* the cluster has no room for the run now (queue/follow/cron.c) */
};

struct cron_verdict {
	enum cron_action action;
	enum cron_why	 why;
};

/* The policy's answer for children v (oldest first).  room: how many runs of this cron
 * the queue's quota holds at once besides everything else it runs (this cron's own runs
 * left out).  A counted run is never stopped for quota (it was admitted); a new run that
 * does not fit is skipped, whatever the policy.  Pure. */
void		 cron_decide(enum jobspec_cron_policy p, const struct cron_child *v, size_t n,
		    int room, struct cron_verdict *out);
const char	*cron_why_name(enum cron_why w);	/* "forbid", "quota", "replaced",
							 * "capacity", "" */

/* A finished run (status.endTime) whose ttlSecondsAfterFinished (its own spec's) has
 * passed at now: fleetd deletes it, or the member would keep every run ever made (the CRD
 * has no history limit).  Pure. */
bool		 cron_expired(json_t *child, long long now);

/* Each run is created suspended (the renderer's jobTemplate): a run that goes on is
 * placed by the scheduler's model against the capacity and quota of that moment, on the
 * cron's cluster, and fleetd writes that placement into the child (its rayClusterSpec,
 * pinned like any job) and lifts suspend; a run with no room is skipped (reason
 * "capacity").  The run's placement is kept in jobs.cron_runs[].placement.
 * Sorts and acts on the children (RayJob items of the namespace, any cron) of cron job j
 * whose live RayCronJob is cron: deletes what the policy refuses, then records the runs and
 * their events in one transaction (nothing written when nothing changed). */
void		 cron_sync(const struct member *t, const struct status_job *j,
		    json_t *cron, json_t *children, struct status_stats *st);

#endif
