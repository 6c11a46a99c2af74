/* workers: the table of fleetd's background loops.  FLEETD_WORKERS names the rows to run
 * ("none", or a name no row has, runs nothing); they start in table order and stop in
 * reverse.  A new loop is one row here plus its module's start/stop (CONTRIBUTING.md). */
#include <stddef.h>
#include <string.h>

#include "api/janitor.h"
#include "api/metrics.h"
#include "api/workers.h"
#include "core/config.h"
#include "core/log.h"
#include "core/mono.h"
#include "iam/reverify.h"
#include "queue/change/change.h"
#include "queue/cost/budget.h"
#include "regions/price_feed.h"
#include "queue/cost/cost.h"
#include "queue/dispatch/dispatch.h"
#include "queue/follow/status.h"
#include "queue/follow/sweep.h"
#include "queue/hooks/delivery.h"
#include "queue/sched/scheduler.h"
#include "regions/lease.h"
#include "regions/poll_loop.h"
#include "regions/poller.h"

struct worker {
	const char	*name;		/* as written in FLEETD_WORKERS */
	bool		(*start)(struct err *e);
	void		(*stop)(void);
	void		(*metrics)(char **buf, size_t *len, size_t *cap);	/* or NULL */
};

static const struct worker table[] = {
	{ "poller",	poll_loop_start,	poll_loop_stop,		poller_metrics },
	{ "scheduler",	scheduler_start,	scheduler_stop,		scheduler_metrics },
	{ "dispatch",	dispatch_start,		dispatch_stop,		dispatch_metrics },
	{ "mover",	mover_start,		mover_stop,		NULL },
	{ "updater",	updater_start,		updater_stop,		NULL },
	{ "status",	status_start,		status_stop,		status_metrics },
	{ "janitor",	janitor_start,		janitor_stop,		NULL },
	{ "sweep",	sweep_start,		sweep_stop,		sweep_metrics },
	{ "iam-verify",	iam_verify_start,	iam_verify_stop,	iam_verify_metrics },
	{ "webhooks",	delivery_start,		delivery_stop,		delivery_metrics },
	{ "budgets",	budget_start,		budget_stop,		NULL },
	{ "prices",	price_feed_start,	price_feed_stop,	NULL },
};

#define NWORKERS	(sizeof(table) / sizeof(table[0]))

static bool running[NWORKERS];

/* Whether the comma-separated list names name. */
static bool
listed(const char *list, const char *name, size_t n)
{
	for (const char *p = list; (p = strstr(p, name)) != NULL; p += n)
		if ((p == list || p[-1] == ',') && (p[n] == '\0' || p[n] == ','))
			return true;
	return false;
}

bool
workers_start(struct err *e)
{
	static bool registered;
	const char *list = cfg.workers ? cfg.workers : "";

	if (!registered) {	/* every row's metrics, running or not: /metrics keeps its shape */
		for (size_t i = 0; i < NWORKERS; i++)
			if (table[i].metrics != NULL)
				metrics_register(table[i].metrics);
		metrics_register(lease_metrics);	/* the clusters this replica holds */
		metrics_register(cost_metrics);		/* spend, as the budgets worker last read it */
		registered = true;
	}
	for (size_t i = 0; i < NWORKERS; i++) {
		if (running[i] || !listed(list, table[i].name, strlen(table[i].name)))
			continue;
		if (!table[i].start(e))
			return false;
		running[i] = true;
	}
	return true;
}

void
workers_stop(void)
{
	for (size_t i = NWORKERS; i-- > 0;) {
		if (running[i]) {
			double t0 = mono_s();

			table[i].stop();
			log_info(NULL, "workers", "worker stopped", "{s:s, s:f}", "worker",
			    table[i].name, "seconds", mono_s() - t0);
		}
		running[i] = false;
	}
}
