/* janitor: deletes idempotency keys past their 24-hour window every
 * FLEETD_JANITOR_INTERVAL_MS (PgBouncer's janitor timer, our housekeeping loop). */
#include <pthread.h>
#include <stdbool.h>
#include <time.h>

#include "api/janitor.h"
#include "api/server.h"
#include "core/config.h"
#include "core/idem_store.h"
#include "core/log.h"

static pthread_t thread;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static bool running, started;

static void
sweep(void)
{
	struct err e = { 0 };
	struct db *c = db_acquire(1000, &e);
	long n = 0;

	if (c == NULL || !idem_store_expire(c, &n, &e))
		log_warn(NULL, "janitor", "sweep failed", "{s:s}", "code", e.code);
	else if (n > 0)
		log_info(NULL, "janitor", "expired idempotency keys deleted", "{s:i}", "rows", (int)n);
	db_release(c);
}

static void *
loop(void *arg)
{
	(void)arg;
	pthread_mutex_lock(&mu);
	while (running) {
		struct timespec until;
		long ms = cfg.janitor_interval_ms > 0 ? cfg.janitor_interval_ms : 600000;

		pthread_mutex_unlock(&mu);
		sweep();
		pthread_mutex_lock(&mu);
		clock_gettime(CLOCK_REALTIME, &until);
		until.tv_sec += ms / 1000;
		until.tv_nsec += (ms % 1000) * 1000000L;
		if (until.tv_nsec >= 1000000000L) {
			until.tv_sec++;
			until.tv_nsec -= 1000000000L;
		}
		while (running && pthread_cond_timedwait(&cv, &mu, &until) == 0)
			;
	}
	pthread_mutex_unlock(&mu);
	return NULL;
}

bool
janitor_start(struct err *e)
{
	running = true;
	if (pthread_create(&thread, NULL, loop, NULL) != 0) {
		running = false;
		return err_set(e, 500, "janitor.start", "cannot start the janitor thread");
	}
	started = true;
	return true;
}

void
janitor_stop(void)
{
	if (!started)
		return;
	pthread_mutex_lock(&mu);
	running = false;
	pthread_cond_broadcast(&cv);
	pthread_mutex_unlock(&mu);
	pthread_join(thread, NULL);
	started = false;
}
