/* submit_cache: a small table of numbers by key, valid for one generation; the listener
 * thread bumps the generation on every NOTIFY fleet_capacity and on every (re)connect or
 * loss of its connection, so a value read before a change is never served after it. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/hash.h"
#include "core/listen.h"
#include "core/log.h"
#include "queue/jobs/submit_cache.h"

#define SLOTS 512

struct slot {
	char		 key[160];
	long long	 v[2];
	unsigned long	 gen;
};

static struct {
	pthread_mutex_t	 mu;
	struct slot	 slots[SLOTS];
} table = { .mu = PTHREAD_MUTEX_INITIALIZER };

static atomic_ulong generation = 1;
static atomic_bool live;		/* the listener is connected and listening */
static atomic_bool run;
static pthread_t thread;
static char *listen_url;

static unsigned
slot_of(const char *key)
{
	return hash_str(key) % SLOTS;
}

bool
submit_cache_get(const char *key, long long v[2], unsigned long *gen)
{
	struct slot *s = &table.slots[slot_of(key)];
	bool hit = false;

	*gen = atomic_load(&generation);
	if (!atomic_load(&live))
		return false;
	pthread_mutex_lock(&table.mu);
	if (s->gen == *gen && strcmp(s->key, key) == 0) {
		v[0] = s->v[0];
		v[1] = s->v[1];
		hit = true;
	}
	pthread_mutex_unlock(&table.mu);
	return hit;
}

void
submit_cache_put(const char *key, const long long v[2], unsigned long gen)
{
	struct slot *s = &table.slots[slot_of(key)];

	if (!atomic_load(&live) || strlen(key) >= sizeof(s->key))
		return;
	pthread_mutex_lock(&table.mu);
	/* a value read under an older generation may be stale: not kept */
	if (gen == atomic_load(&generation)) {
		snprintf(s->key, sizeof(s->key), "%s", key);
		s->v[0] = v[0];
		s->v[1] = v[1];
		s->gen = gen;
	}
	pthread_mutex_unlock(&table.mu);
}

static void *
loop(void *arg)
{
	PGconn *c = NULL;

	(void)arg;
	while (atomic_load(&run)) {
		if (c == NULL) {
			if ((c = listen_open(listen_url, "fleet_capacity")) == NULL) {
				struct timespec ts = { 0, 500 * 1000000L };

				nanosleep(&ts, NULL);
				continue;
			}
			/* changes while disconnected were not heard: start afresh */
			atomic_fetch_add(&generation, 1);
			atomic_store(&live, true);
		}
		if (listen_wait(c, 200))
			atomic_fetch_add(&generation, 1);
		if (PQstatus(c) != CONNECTION_OK) {
			atomic_store(&live, false);
			atomic_fetch_add(&generation, 1);
			PQfinish(c);
			c = NULL;
		}
	}
	atomic_store(&live, false);
	atomic_fetch_add(&generation, 1);
	PQfinish(c);
	return NULL;
}

bool
submit_cache_start(const char *url)
{
	free(listen_url);
	if ((listen_url = strdup(url ? url : "")) == NULL)
		return false;
	atomic_store(&run, true);
	if (pthread_create(&thread, NULL, loop, NULL) != 0) {
		atomic_store(&run, false);
		return false;
	}
	return true;
}

void
submit_cache_stop(void)
{
	if (!atomic_load(&run))
		return;
	atomic_store(&run, false);
	pthread_join(thread, NULL);
	free(listen_url);
	listen_url = NULL;
}
