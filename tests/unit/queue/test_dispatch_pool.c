/* test_dispatch_pool: the keyed pool of dispatch and status: every task runs once, a key's
 * tasks one at a time and in order, and threads are not woken for nothing (a finished
 * task used to wake all of them, each scanning the whole queue). */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "queue/dispatch/dispatch.h"

#define KEYS	10
#define PER_KEY	100

static struct {
	pthread_mutex_t	 mu;
	int		 next[300];	/* the sequence number each key expects next */
	atomic_int	 running[300];
	atomic_int	 done, bad_order, overlap;
} S = { .mu = PTHREAD_MUTEX_INITIALIZER };

struct arg {
	int	key, seq;
};

static void
run(void *varg)
{
	struct arg *a = varg;
	struct timespec ts = { 0, 200000 };	/* 0.2 ms: the queue stays long */

	if (atomic_fetch_add(&S.running[a->key], 1) != 0)
		atomic_fetch_add(&S.overlap, 1);
	pthread_mutex_lock(&S.mu);
	if (S.next[a->key] != a->seq)
		atomic_fetch_add(&S.bad_order, 1);
	S.next[a->key] = a->seq + 1;
	pthread_mutex_unlock(&S.mu);
	nanosleep(&ts, NULL);
	atomic_fetch_sub(&S.running[a->key], 1);
	atomic_fetch_add(&S.done, 1);
	free(a);
}

static double
cpu_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void
test_keyed_order_and_wakeups(void **state)
{
	struct dispatch_pool *p = dispatch_pool_new(64);
	char key[40];
	double cpu0;
	int i, k;

	(void)state;
	cpu0 = cpu_s();
	for (i = 0; i < PER_KEY; i++)
		for (k = 0; k < KEYS; k++) {
			struct arg *a = malloc(sizeof(*a));

			assert_non_null(a);
			a->key = k;
			a->seq = i;
			snprintf(key, sizeof(key), "00000000-0000-0000-0000-%012d", k);
			dispatch_pool_add(p, key, run, free, a);
		}
	dispatch_pool_wait(p);
	assert_int_equal(atomic_load(&S.done), KEYS * PER_KEY);
	assert_int_equal(atomic_load(&S.bad_order), 0);
	assert_int_equal(atomic_load(&S.overlap), 0);
	assert_int_equal(dispatch_pool_pending(p), 0);
	/* 1,000 tasks of 10 clusters on 64 threads: 54 idle ones woken at every end, each
	 * scanning a queue of up to 1,000 tasks for one whose cluster is free, took seconds
	 * of CPU; one wake-up per end takes milliseconds */
	print_message("pool CPU %.3f s\n", cpu_s() - cpu0);
	assert_true(cpu_s() - cpu0 < 0.5);
	dispatch_pool_free(p);
}

/* A key's task added while the key runs starts when it ends (no lost wake-up). */
static void
test_same_key_chain(void **state)
{
	struct dispatch_pool *p = dispatch_pool_new(8);
	int i;

	(void)state;
	memset(S.next, 0, sizeof(S.next));
	atomic_store(&S.done, 0);
	for (i = 0; i < 200; i++) {
		struct arg *a = malloc(sizeof(*a));

		assert_non_null(a);
		a->key = 7;
		a->seq = i;
		dispatch_pool_add(p, "one-cluster", run, free, a);
	}
	dispatch_pool_wait(p);
	assert_int_equal(atomic_load(&S.done), 200);
	assert_int_equal(atomic_load(&S.bad_order), 0);
	assert_int_equal(atomic_load(&S.overlap), 0);
	assert_false(dispatch_pool_busy(p, "one-cluster"));
	dispatch_pool_free(p);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_keyed_order_and_wakeups),
		cmocka_unit_test(test_same_key_chain),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
