/* dispatch_pool: a fixed set of threads running keyed tasks; tasks of one key (a member
 * cluster) run one at a time and in order, so a hanging cluster occupies one thread. */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "queue/dispatch.h"

#define KEY_MAX	40

struct task {
	char		 key[KEY_MAX];
	dispatch_task_fn fn, drop;
	void		*arg;
	struct task	*next;
};

struct dispatch_pool {
	pthread_mutex_t	 mu;
	pthread_cond_t	 cv, idle;
	pthread_t	*threads;
	int		 nthreads;
	struct task	*head, *tail;
	char		(*running)[KEY_MAX];	/* key per thread, "" when idle */
	size_t		 queued, active;
	bool		 stop;
};

static bool
key_running(struct dispatch_pool *p, const char *key)
{
	for (int i = 0; i < p->nthreads; i++)
		if (strcmp(p->running[i], key) == 0)
			return true;
	return false;
}

/* The thread a key's tasks prefer (FNV-1a): a member cluster keeps meeting the same
 * thread, whose kept connections (http_do, kube_apply_all) then skip the TLS set-up that
 * a new connection costs (with OpenSSL 3 most of the dispatcher's CPU). */
static int
home_of(const struct dispatch_pool *p, const char *key)
{
	uint32_t h = 2166136261u;

	for (; *key != '\0'; key++)
		h = (h ^ (unsigned char)*key) * 16777619u;
	return (int)(h % (uint32_t)p->nthreads);
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
			int home = home_of(p, t->key);

			if (pass == 0 ? home != idx : home == idx || p->running[home][0] == '\0')
				continue;
			for (struct task *u = p->head; u != t && !earlier; u = u->next)
				earlier = strcmp(u->key, t->key) == 0;
			if (earlier || key_running(p, t->key))
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
		struct task *t = NULL;

		while (!p->stop && (t = take(p, idx)) == NULL)
			pthread_cond_wait(&p->cv, &p->mu);
		if (p->stop)
			break;
		snprintf(p->running[idx], KEY_MAX, "%s", t->key);
		p->active++;
		pthread_mutex_unlock(&p->mu);
		t->fn(t->arg);
		free(t);
		pthread_mutex_lock(&p->mu);
		p->running[idx][0] = '\0';
		p->active--;
		pthread_cond_broadcast(&p->cv);	/* the key is free again */
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
	pthread_cond_init(&p->cv, NULL);
	pthread_cond_init(&p->idle, NULL);
	p->threads = calloc((size_t)threads, sizeof(*p->threads));
	p->running = calloc((size_t)threads, sizeof(*p->running));
	if (p->threads == NULL || p->running == NULL)
		abort();
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
	return p;
}

void
dispatch_pool_free(struct dispatch_pool *p)
{
	struct task *t;

	if (p == NULL)
		return;
	pthread_mutex_lock(&p->mu);
	p->stop = true;
	pthread_cond_broadcast(&p->cv);
	pthread_mutex_unlock(&p->mu);
	for (int i = 0; i < p->nthreads; i++)
		pthread_join(p->threads[i], NULL);
	while ((t = p->head) != NULL) {
		p->head = t->next;
		if (t->drop != NULL)
			t->drop(t->arg);
		free(t);
	}
	pthread_mutex_destroy(&p->mu);
	pthread_cond_destroy(&p->cv);
	pthread_cond_destroy(&p->idle);
	free(p->threads);
	free(p->running);
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
	pthread_cond_broadcast(&p->cv);
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
	bool busy;

	pthread_mutex_lock(&p->mu);
	busy = key_running(p, key);
	for (struct task *t = p->head; t != NULL && !busy; t = t->next)
		busy = strcmp(t->key, key) == 0;
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
