/* test_sched_window: a cycle over a model whose loader cut a queue's pending jobs
 * (sched_queue.more, issue 29) decides what a model of every pending job decides up to the
 * point where the cut queue's next job would be served, and stops there. */
#include "sched_fixture.h"

#define U SCHED_UNSET

/* Queues a and b (nominal 100 each: never borrowing, so served by priority then age) on
 * one cluster of 32 accelerators; a's jobs enqueued a_t[] seconds after FX_NOW - 100 (none
 * waits long enough to hold a cluster), b's b_t[]; 1 accelerator each (a_big: a's last one
 * asks for 64, more than the cluster). */
static struct sched_model *
two_queues(const int64_t *a_t, size_t na, const int64_t *b_t, size_t nb, bool a_big)
{
	struct sched_model *m = fx_model();
	size_t i;

	fx_cluster(m, "c1", "us-east1", "gpu", 10.0, 4, 8, 0);
	fx_queue(m, "a", NULL, 1.0, "gpu", 100, U, U);
	fx_queue(m, "b", NULL, 1.0, "gpu", 100, U, U);
	for (i = 0; i < na; i++) {
		char id[32];

		snprintf(id, sizeof(id), "a%zu", i);
		if (a_big && i == na - 1)
			fx_job(m, id, "a", 0, FX_NOW - 100 + a_t[i], "gpu", 8, 8);
		else
			fx_job(m, id, "a", 0, FX_NOW - 100 + a_t[i], "gpu", 1, 1);
	}
	for (i = 0; i < nb; i++) {
		char id[32];

		snprintf(id, sizeof(id), "b%zu", i);
		fx_job(m, id, "b", 0, FX_NOW - 100 + b_t[i], "gpu", 1, 1);
	}
	fx_finalize(m);
	return m;
}

static struct sched_queue *
queue_of(struct sched_model *m, const char *id)
{
	struct sched_queue *q = sched_model_find_queue(m, id);

	assert_non_null(q);
	return q;
}

static const char *
nth(const struct sched_model *m, const struct sched_cycle *cy, size_t i)
{
	return sched_model_job(m, (size_t)cy->d[i].job)->id;
}

/* a's window holds a0 and a1 of a0..a2: after a1 (admitted, the last loaded) comes a2 in
 * the full order, before b1: the cycle stops there, b1 and b2 are not attempted, and the
 * decisions made are the full model's first three. */
static void
test_stops_where_the_cut_queue_comes(void **state)
{
	static const int64_t at[] = { 10, 30, 35 }, bt[] = { 20, 40, 50 };
	struct sched_model *full = two_queues(at, 3, bt, 3, false);
	struct sched_model *cut = two_queues(at, 2, bt, 3, false);
	struct arena *a = arena_new();
	struct sched_cycle cf, cc;
	size_t i;

	(void)state;
	queue_of(cut, "a")->more = true;
	sched_cycle_run(full, a, &cf);
	sched_cycle_run(cut, a, &cc);
	assert_int_equal(cf.admitted, 6);
	assert_int_equal(cc.admitted, 3);
	for (i = 0; i < 3; i++) {
		assert_string_equal(nth(cut, &cc, i), nth(full, &cf, i));
		assert_int_equal(cc.d[i].outcome, SCHED_OUT_ADMIT);
	}
	assert_string_equal(nth(cut, &cc, 2), "a1");
	assert_int_equal(fx_decision(cut, &cc, "b1")->reason, SCHED_R_NOT_ATTEMPTED);
	assert_int_equal(fx_decision(cut, &cc, "b2")->reason, SCHED_R_NOT_ATTEMPTED);
	assert_int_equal(cc.pending, 2);
	sched_model_free(full);
	sched_model_free(cut);
	arena_free(a);
}

/* Without the cut the same model admits all five: the stop comes from the cut alone. */
static void
test_no_cut_no_stop(void **state)
{
	static const int64_t at[] = { 10, 30 }, bt[] = { 20, 40, 50 };
	struct sched_model *m = two_queues(at, 2, bt, 3, false);
	struct arena *a = arena_new();
	struct sched_cycle cy;

	(void)state;
	sched_cycle_run(m, a, &cy);
	assert_int_equal(cy.admitted, 5);
	assert_int_equal(cy.pending, 0);
	sched_model_free(m);
	arena_free(a);
}

/* The cut stops nothing before the cut queue's last loaded job is tried: b's jobs, all
 * older than a's, go first. */
static void
test_older_heads_go_first(void **state)
{
	static const int64_t at[] = { 10, 30 }, bt[] = { 1, 2, 3 };
	struct sched_model *m = two_queues(at, 2, bt, 3, false);
	struct arena *a = arena_new();
	struct sched_cycle cy;

	(void)state;
	queue_of(m, "a")->more = true;
	sched_cycle_run(m, a, &cy);
	assert_int_equal(cy.admitted, 5);
	assert_string_equal(nth(m, &cy, 4), "a1");
	sched_model_free(m);
	arena_free(a);
}

/* A cut queue whose last loaded job stays pending is done for the cycle: the other queue
 * goes on (stopping for it could stop every cycle at the same place). */
static void
test_pending_tail_does_not_stop(void **state)
{
	static const int64_t at[] = { 10, 30 }, bt[] = { 20, 40, 50 };
	struct sched_model *m = two_queues(at, 2, bt, 3, true);
	struct arena *a = arena_new();
	struct sched_cycle cy;

	(void)state;
	queue_of(m, "a")->more = true;
	sched_cycle_run(m, a, &cy);
	assert_int_equal(cy.admitted, 4);
	assert_int_equal(fx_decision(m, &cy, "a1")->outcome, SCHED_OUT_PENDING);
	assert_int_equal(fx_decision(m, &cy, "a1")->reason, SCHED_R_INSUFFICIENT_CAPACITY);
	assert_int_equal(fx_decision(m, &cy, "b2")->outcome, SCHED_OUT_ADMIT);
	sched_model_free(m);
	arena_free(a);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_stops_where_the_cut_queue_comes),
		cmocka_unit_test(test_no_cut_no_stop),
		cmocka_unit_test(test_older_heads_go_first),
		cmocka_unit_test(test_pending_tail_does_not_stop),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
