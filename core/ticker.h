/* ticker: a background thread that runs one round, waits a period (woken early only by
 * ticker_stop), and runs the next — the loop of the janitor and of iam-verify. */
#ifndef FLEET_CORE_TICKER_H
#define FLEET_CORE_TICKER_H

#include <pthread.h>
#include <stdbool.h>

#include "core/err.h"

struct ticker {
	void		(*round)(void);		/* one round, run without the lock */
	long		(*period_ms)(void);	/* the wait after each round */
	pthread_t	 thread;
	pthread_mutex_t	 mu;
	pthread_cond_t	 cv;
	bool		 running, started;
};

#define TICKER_INIT(fn, period) { .round = (fn), .period_ms = (period), \
	.mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER }

/* Starts the thread; on failure err code/message as given (the caller's module). */
bool	ticker_start(struct ticker *t, const char *code, const char *msg, struct err *e);
/* Wakes the thread, waits for its round to end and joins it; a no-op when not started. */
void	ticker_stop(struct ticker *t);

#endif
