/* dispatch_pool: a fixed set of threads running keyed tasks; tasks of one key (a member
 * cluster) run one at a time and in order, so a hanging cluster occupies one thread. */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "queue/dispatch/dispatch.h"

#define KEY_MAX	40

struct task {
	char		 key[KEY_MAX];
	uint64_t	 h;		/* of key: most comparisons are one integer's */
	dispatch_task_fn fn, drop;
	void		*arg;
	struct task	*next;
};

/* Wake-ups are aimed: each thread waits on a condition of its own, a new task wakes its
 * home thread (or one idle thread when the home is busy), a finished one wakes only the
 * home of its key's next task.  Waking every thread at every end made each of 64 scan the
 * whole queue for nothing (the status worker's CPU with 500 members in bench/api.sh). */
struct dispatch_pool {
	pthread_mutex_t	 mu;
	pthread_cond_t	 idle;
	pthread_cond_t	*cv;			/* per thread */
	bool		*waiting;		/* per thread: in its wait, not yet woken */
	pthread_t	*threads;
	int		 nthreads;
	struct task	*head, *tail;
	char		(*running)[KEY_MAX];	/* key per thread, "" when idle */
	uint64_t	*rhash;			/* hash of running[i] */
	size_t		 queued, active;
	bool		 stop;
};

static uint64_t
key_hash(const char *k)
{
	uint64_t h = 0xcbf29ce484222325ULL;

	while (*k != '\0')
		h = (h ^ (unsigned char)*k++) * 0x100000001b3ULL;
	return h;
}

static bool
key_running(struct dispatch_pool *p, const char *key, uint64_t h)
{
	for (int i = 0; i < p->nthreads; i++)
		if (p->rhash[i] == h && strcmp(p->running[i], key) == 0)
			return true;
	return false;
}

/* The thread a key's tasks prefer: a member cluster keeps meeting the same thread, whose
 * kept connections (http_do, kube_apply_all) then skip the TLS set-up that a new
 * connection costs (with OpenSSL 3 most of the dispatcher's CPU). */
static int
home_of(const struct dispatch_pool *p, uint64_t h)
{
	return (int)(h % (uint64_t)p->nthreads);
}

/* Wakes thread idx when it waits; idx < 0 (or idx busy and any): some waiting thread. */
static void
wake(struct dispatch_pool *p, int idx, bool any)
{
	if (idx >= 0 && p->waiting[idx]) {
		p->waiting[idx] = false;
		pthread_cond_signal(&p->cv[idx]);
		return;
	}
	if (idx >= 0 && !any)
		return;
	for (int i = 0; i < p->nthreads; i++)
		if (p->waiting[i]) {
			p->waiting[i] = false;
			pthread_cond_signal(&p->cv[i]);
			return;
		}
}

/* First queued task whose key is not running and has no earlier queued task, for thread
 * idx: one of its own keys first, else one whose home thread is busy (a hanging cluster
 * still holds one thread only); unlinked. */
static struct task *
take(struct dispatch_pool *p, int idx)
{
	for (int pass = 0; pass < 2; pass++) {
		struct task *prev = NULL;

		for (struct task *t = p->head; t != NULL; prev = t, t = t->next) {
			bool earlier = false;
			int home = home_of(p, t->h);

			if (pass == 0 ? home != idx : home == idx || p->running[home][0] == '\0')
				continue;
			for (struct task *u = p->head; u != t && !earlier; u = u->next)
				earlier = u->h == t->h && strcmp(u->key, t->key) == 0;
			if (earlier || key_running(p, t->key, t->h))
				continue;
			if (prev == NULL)
				p->head = t->next;
			else
				prev->next = t->next;
			if (p->tail == t)
				p->tail = prev;
			t->next = NULL;
			p->queued--;
			return t;
		}
	}
	return NULL;
}

/* The first queued task of key h (NULL: none). */
static struct task *
next_of(struct dispatch_pool *p, const char *key, uint64_t h)
{
	for (struct task *t = p->head; t != NULL; t = t->next)
		if (t->h == h && strcmp(t->key, key) == 0)
			return t;
	return NULL;
}

struct worker_arg {
	struct dispatch_pool	*p;
	int			 idx;
};

static void *
worker(void *varg)
{
	struct worker_arg *wa = varg;
	struct dispatch_pool *p = wa->p;
	int idx = wa->idx;

	free(wa);
	pthread_mutex_lock(&p->mu);
	for (;;) {
		struct task *t = NULL, *n;
		char key[KEY_MAX];
		uint64_t h;

		while (!p->stop && (t = take(p, idx)) == NULL) {
			p->waiting[idx] = true;
			pthread_cond_wait(&p->cv[idx], &p->mu);
			p->waiting[idx] = false;
		}
		if (p->stop)
			break;
		snprintf(p->running[idx], KEY_MAX, "%s", t->key);
		p->rhash[idx] = t->h;
		p->active++;
		/* busy now: a task homed here may go to an idle thread (take's second pass) */
		if (p->queued > 0)
			wake(p, -1, true);
		memcpy(key, t->key, KEY_MAX);
		h = t->h;
		pthread_mutex_unlock(&p->mu);
		t->fn(t->arg);
		free(t);
		pthread_mutex_lock(&p->mu);
		p->running[idx][0] = '\0';
		p->rhash[idx] = key_hash("");
		p->active--;
		/* the key is free again: its next task's home takes it (this thread loops) */
		if ((n = next_of(p, key, h)) != NULL && home_of(p, n->h) != idx)
			wake(p, home_of(p, n->h), false);
		if (p->active == 0 && p->queued == 0)
			pthread_cond_broadcast(&p->idle);
	}
	pthread_mutex_unlock(&p->mu);
	return NULL;
}

struct dispatch_pool *
dispatch_pool_new(int threads)
{
	struct dispatch_pool *p = calloc(1, sizeof(*p));

	if (p == NULL)
		abort();
	if (threads < 1)
		threads = 1;
	pthread_mutex_init(&p->mu, NULL);
	pthread_cond_init(&p->idle, NULL);
	p->threads = calloc((size_t)threads, sizeof(*p->threads));
	p->running = calloc((size_t)threads, sizeof(*p->running));
	p->rhash = calloc((size_t)threads, sizeof(*p->rhash));
	p->cv = calloc((size_t)threads, sizeof(*p->cv));
	p->waiting = calloc((size_t)threads, sizeof(*p->waiting));
	if (p->threads == NULL || p->running == NULL || p->rhash == NULL || p->cv == NULL ||
	    p->waiting == NULL)
		abort();
	for (int i = 0; i < threads; i++) {
		pthread_cond_init(&p->cv[i], NULL);
		p->rhash[i] = key_hash("");
	}
	/* under the lock: no task is homed on a thread count that still grows */
	pthread_mutex_lock(&p->mu);
	for (int i = 0; i < threads; i++) {
		struct worker_arg *wa = malloc(sizeof(*wa));

		if (wa == NULL)
			abort();
		wa->p = p;
		wa->idx = i;
		if (pthread_create(&p->threads[i], NULL, worker, wa) != 0) {
			free(wa);
			break;
		}
		p->nthreads++;
	}
	pthread_mutex_unlock(&p->mu);
	return p;
}

void
dispatch_pool_free(struct dispatch_pool *p)
{
	struct task *t;
	int i;

	if (p == NULL)
		return;
	pthread_mutex_lock(&p->mu);
	p->stop = true;
	for (i = 0; i < p->nthreads; i++)
		pthread_cond_signal(&p->cv[i]);
	pthread_mutex_unlock(&p->mu);
	for (i = 0; i < p->nthreads; i++)
		pthread_join(p->threads[i], NULL);
	while ((t = p->head) != NULL) {
		p->head = t->next;
		if (t->drop != NULL)
			t->drop(t->arg);
		free(t);
	}
	pthread_mutex_destroy(&p->mu);
	for (i = 0; i < p->nthreads; i++)
		pthread_cond_destroy(&p->cv[i]);
	pthread_cond_destroy(&p->idle);
	free(p->threads);
	free(p->running);
	free(p->rhash);
	free(p->cv);
	free(p->waiting);
	free(p);
}

void
dispatch_pool_add(struct dispatch_pool *p, const char *key, dispatch_task_fn fn,
    dispatch_task_fn drop, void *arg)
{
	struct task *t = calloc(1, sizeof(*t));

	if (t == NULL)
		abort();
	snprintf(t->key, sizeof(t->key), "%s", key ? key : "");
	t->h = key_hash(t->key);
	t->fn = fn;
	t->drop = drop;
	t->arg = arg;
	pthread_mutex_lock(&p->mu);
	if (p->tail != NULL)
		p->tail->next = t;
	else
		p->head = t;
	p->tail = t;
	p->queued++;
	/* its home when idle; else any idle thread (take's second pass) */
	wake(p, home_of(p, t->h), true);
	pthread_mutex_unlock(&p->mu);
}

size_t
dispatch_pool_pending(struct dispatch_pool *p)
{
	size_t n;

	pthread_mutex_lock(&p->mu);
	n = p->queued + p->active;
	pthread_mutex_unlock(&p->mu);
	return n;
}

bool
dispatch_pool_busy(struct dispatch_pool *p, const char *key)
{
	uint64_t h = key_hash(key);
	bool busy;

	pthread_mutex_lock(&p->mu);
	busy = key_running(p, key, h) || next_of(p, key, h) != NULL;
	pthread_mutex_unlock(&p->mu);
	return busy;
}

void
dispatch_pool_wait(struct dispatch_pool *p)
{
	pthread_mutex_lock(&p->mu);
	while (p->queued > 0 || p->active > 0)
		pthread_cond_wait(&p->idle, &p->mu);
	pthread_mutex_unlock(&p->mu);
}
