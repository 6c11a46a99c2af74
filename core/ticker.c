/* ticker: one background loop of rounds and waits, stopped at once by ticker_stop. */
#include <time.h>

#include "core/ticker.h"

static void *
loop(void *arg)
{
	struct ticker *t = arg;

	pthread_mutex_lock(&t->mu);
	while (t->running) {
		struct timespec until;
		long ms;

		pthread_mutex_unlock(&t->mu);
		t->round();
		ms = t->period_ms();
		pthread_mutex_lock(&t->mu);
		clock_gettime(CLOCK_REALTIME, &until);
		until.tv_sec += ms / 1000;
		until.tv_nsec += (ms % 1000) * 1000000L;
		if (until.tv_nsec >= 1000000000L) {
			until.tv_sec++;
			until.tv_nsec -= 1000000000L;
		}
		while (t->running && pthread_cond_timedwait(&t->cv, &t->mu, &until) == 0)
			;
	}
	pthread_mutex_unlock(&t->mu);
	return NULL;
}

bool
ticker_start(struct ticker *t, const char *code, const char *msg, struct err *e)
{
	t->running = true;
	if (pthread_create(&t->thread, NULL, loop, t) != 0) {
		t->running = false;
		return err_set(e, 500, code, "%s", msg);
	}
	t->started = true;
	return true;
}

void
ticker_stop(struct ticker *t)
{
	if (!t->started)
		return;
	pthread_mutex_lock(&t->mu);
	t->running = false;
	pthread_cond_broadcast(&t->cv);
	pthread_mutex_unlock(&t->mu);
	pthread_join(t->thread, NULL);
	t->started = false;
}
