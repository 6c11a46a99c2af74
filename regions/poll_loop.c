/* poll_loop: a thread holding a dedicated connection for the poller's advisory lock and
 * LISTEN fleet_poll; refreshes through poller_refresh_all. */
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>
#include <time.h>

#include <libpq-fe.h>

#include "core/config.h"
#include "core/listen.h"
#include "core/log.h"
#include "core/mono.h"
#include "core/worker_thread.h"
#include "regions/poll_loop.h"
#include "regions/poller.h"

static struct {
	struct worker_thread	th;
	atomic_bool		kicked;
} P;

void
poll_loop_kick(void)
{
	atomic_store(&P.kicked, true);
}

/* Waits up to ms for a NOTIFY, a kick or the stop flag, in slices of 200 ms. */
static void
wait_for(PGconn *c, int ms)
{
	double until = mono_s() + ms / 1000.0;

	while (worker_thread_running(&P.th) && !atomic_load(&P.kicked) && mono_s() < until)
		if (listen_wait(c, 200))
			break;
}

static void *
loop(void *arg)
{
	PGconn *c = NULL;
	bool leader = false;

	(void)arg;
	while (worker_thread_running(&P.th)) {
		if (c == NULL || PQstatus(c) != CONNECTION_OK) {
			if (c != NULL)
				PQfinish(c);
			leader = false;
			if ((c = listen_open(cfg.database_url, "fleet_poll")) == NULL) {
				wait_for(NULL, 1000);
				continue;
			}
		}
		if (!leader) {
			PGresult *r = PQexec(c, "SELECT pg_try_advisory_lock(7315, 0)");

			leader = PQresultStatus(r) == PGRES_TUPLES_OK && PQgetvalue(r, 0, 0)[0] == 't';
			PQclear(r);
		}
		if (leader) {
			struct poller_stats st;
			struct err e = { 0 };

			atomic_store(&P.kicked, false);
			if (!poller_refresh_all(cfg.poll_concurrency, &st, &e))
				log_warn(NULL, "poller", "refresh failed", "{s:s}", "error", e.msg);
			else
				log_debug(NULL, "poller", "refresh", "{s:i, s:i, s:i, s:f}", "clusters",
				    st.clusters, "ok", st.ok, "failed", st.failed, "ms", st.elapsed_ms);
		} else if (atomic_exchange(&P.kicked, false)) {
			PQclear(PQexec(c, "NOTIFY fleet_poll"));
		}
		wait_for(c, cfg.poll_interval_ms);
	}
	if (c != NULL)
		PQfinish(c);
	return NULL;
}

bool
poll_loop_start(struct err *e)
{
	atomic_store(&P.kicked, true);
	return worker_thread_start(&P.th, loop, "poller.start", "cannot start the poller thread",
	    e);
}

void
poll_loop_stop(void)
{
	worker_thread_stop(&P.th);
}
