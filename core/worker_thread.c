/* worker_thread: start, run flag and join of a background loop's thread. */
#include "core/worker_thread.h"

bool
worker_thread_start(struct worker_thread *t, void *(*fn)(void *), const char *code,
    const char *msg, struct err *e)
{
	atomic_store(&t->running, true);
	if (pthread_create(&t->thread, NULL, fn, NULL) != 0) {
		atomic_store(&t->running, false);
		return err_set(e, 500, code, "%s", msg);
	}
	t->started = true;
	return true;
}

void
worker_thread_stop(struct worker_thread *t)
{
	if (!t->started)
		return;
	atomic_store(&t->running, false);
	pthread_join(t->thread, NULL);
	t->started = false;
}

bool
worker_thread_running(struct worker_thread *t)
{
	return atomic_load(&t->running);
}
