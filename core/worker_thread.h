/* worker_thread: the thread of a background loop that waits its own way (LISTEN/NOTIFY,
 * watch streams, a sleep) and checks its running flag every turn.  A loop with a fixed
 * period and nothing else to wait on uses core/ticker.h instead. */
#ifndef FLEET_CORE_WORKER_THREAD_H
#define FLEET_CORE_WORKER_THREAD_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>

#include "core/err.h"

struct worker_thread {
	pthread_t	thread;
	atomic_bool	running;	/* the loop runs while this holds */
	bool		started;
};

/* Sets running and starts fn(NULL); on failure err 500 with the caller's code ("mover.start")
 * and message, and running is cleared. */
bool	worker_thread_start(struct worker_thread *t, void *(*fn)(void *), const char *code,
	    const char *msg, struct err *e);
/* Clears running and joins the thread; a no-op when not started. */
void	worker_thread_stop(struct worker_thread *t);
/* The loop's condition. */
bool	worker_thread_running(struct worker_thread *t);

#endif
