/* poll_loop: a thread holding a dedicated connection for LISTEN fleet_poll; refreshes the
 * clusters whose lease this replica holds (regions/lease.h) through poller_refresh_all:
 * every replica refreshes its share of the fleet. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <libpq-fe.h>

#include "core/config.h"
#include "core/listen.h"
#include "core/log.h"
#include "core/mono.h"
#include "core/worker_thread.h"
#include "regions/lease.h"
#include "regions/poll_loop.h"
#include "regions/poller.h"

static struct {
	struct worker_thread	th;
	atomic_bool		kicked;
	unsigned long		gen;	/* lease_generation of the last refresh */
} P;

void
poll_loop_kick(void)
{
	atomic_store(&P.kicked, true);
}

/* Waits up to ms for a NOTIFY, a kick, a change of the held leases (a cluster taken is
 * refreshed at once) or the stop flag, in slices of 200 ms. */
static void
wait_for(PGconn *c, int ms)
{
	double until = mono_s() + ms / 1000.0;

	while (worker_thread_running(&P.th) && !atomic_load(&P.kicked) &&
	    lease_generation() == P.gen && mono_s() < until)
		if (listen_wait(c, 200))
			break;
}

static void *
loop(void *arg)
{
	PGconn *c = NULL;

	(void)arg;
	while (worker_thread_running(&P.th)) {
		struct poller_stats st;
		struct err e = { 0 };
		unsigned long gen;
		char *held;

		if (c == NULL || PQstatus(c) != CONNECTION_OK) {
			if (c != NULL)
				PQfinish(c);
			if ((c = listen_open(cfg.database_url, "fleet_poll")) == NULL) {
				wait_for(NULL, 1000);
				continue;
			}
		}
		/* A kick here is every replica's: the others refresh their shares too. */
		if (atomic_exchange(&P.kicked, false))
			PQclear(PQexec(c, "NOTIFY fleet_poll"));
		gen = lease_generation();
		held = lease_ids();
		if (strcmp(held, "{}") != 0 &&
		    !poller_refresh_all(cfg.poll_concurrency, held, &st, &e))
			log_warn(NULL, "poller", "refresh failed", "{s:s}", "error", e.msg);
		else if (strcmp(held, "{}") != 0)
			log_debug(NULL, "poller", "refresh", "{s:i, s:i, s:i, s:i, s:f}",
			    "clusters", st.clusters, "ok", st.ok, "failed", st.failed, "calls",
			    st.calls, "ms", st.elapsed_ms);
		free(held);
		P.gen = gen;
		wait_for(c, cfg.poll_interval_ms);
	}
	if (c != NULL)
		PQfinish(c);
	return NULL;
}

bool
poll_loop_start(struct err *e)
{
	if (!lease_start(e))
		return false;
	atomic_store(&P.kicked, true);
	if (!worker_thread_start(&P.th, loop, "poller.start", "cannot start the poller thread",
	    e)) {
		lease_stop();
		return false;
	}
	return true;
}

void
poll_loop_stop(void)
{
	if (!P.th.started)
		return;
	worker_thread_stop(&P.th);
	lease_stop();
}
