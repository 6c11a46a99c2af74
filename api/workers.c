/* workers: starts the background loops named in FLEETD_WORKERS and stops them in reverse. */
#include <string.h>

#include "api/janitor.h"
#include "api/metrics.h"
#include "api/workers.h"
#include "core/config.h"
#include "queue/dispatch.h"
#include "queue/mover.h"
#include "queue/scheduler.h"
#include "queue/status.h"
#include "regions/poll_loop.h"
#include "regions/poller.h"

static bool sched_on, dispatch_on, status_on;
static bool poll_on, mover_on, janitor_on;

static bool
wanted(const char *name)
{
	const char *w = cfg.workers ? cfg.workers : "";
	size_t n = strlen(name);

	for (const char *p = w; (p = strstr(p, name)) != NULL; p += n)
		if ((p == w || p[-1] == ',') && (p[n] == '\0' || p[n] == ','))
			return true;
	return false;
}

bool
workers_start(struct err *e)
{
	static bool registered;

	if (!registered) {
		metrics_register(scheduler_metrics);
		metrics_register(dispatch_metrics);
		metrics_register(status_metrics);
		metrics_register(poller_metrics);
		registered = true;
	}
	if (wanted("poller")) {
		if (!poll_loop_start(e))
			return false;
		poll_on = true;
	}
	if (wanted("scheduler")) {
		if (!scheduler_start(e))
			return false;
		sched_on = true;
	}
	if (wanted("dispatch")) {
		if (!dispatch_start(e))
			return false;
		dispatch_on = true;
	}
	if (wanted("mover")) {
		if (!mover_start(e))
			return false;
		mover_on = true;
	}
	if (wanted("status")) {
		if (!status_start(e))
			return false;
		status_on = true;
	}
	if (wanted("janitor")) {
		if (!janitor_start(e))
			return false;
		janitor_on = true;
	}
	return true;
}

void
workers_stop(void)
{
	if (janitor_on)
		janitor_stop();
	janitor_on = false;
	if (status_on)
		status_stop();
	if (mover_on)
		mover_stop();
	mover_on = false;
	if (dispatch_on)
		dispatch_stop();
	if (sched_on)
		scheduler_stop();
	sched_on = dispatch_on = status_on = false;
	if (poll_on)
		poll_loop_stop();
	poll_on = false;
}
