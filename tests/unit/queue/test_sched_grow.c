/* test_sched_grow: grow requests of elastic groups (issue 26) in the scheduler's model — admitted
 * and charged to the queue like a job, held when the queue has no quota or the group's
 * domain no room (never placed on another pool or cluster), and taken back before any
 * whole job is preempted. */
#include "sched_fixture.h"

#define U SCHED_UNSET

/* A running job of queue q: one elastic group (min 1, max 3 workers of 8 accelerators)
 * admitted with its one worker on node `node` of c1. */
static struct sched_job *
elastic_job(struct sched_model *m, const char *id, const char *q, int prio, const char *node,
	    int64_t admitted_at)
{
	struct err e = { 0 };
	struct sched_job *j = sched_model_add_job(m, id, q, prio, admitted_at - 10, SCHED_RUNNING,
	    &e);

	assert_non_null(j);
	assert_true(sched_job_add_group(m, j, "gpu", 1, 3, fx_vec(8, 1000, 1024), &e));
	assert_true(sched_job_set_cluster(m, j, "c1", false, admitted_at, &e));
	assert_true(sched_job_add_alloc(m, j, 0, node, 1, &e));
	return j;
}

static struct sched_job *
grow(struct sched_model *m, struct sched_job *p, const char *n, int pods,
     enum sched_state st, const char *node, int64_t at)
{
	struct err e = { 0 };
	char id[96];
	struct sched_job *g;

	snprintf(id, sizeof(id), "%s#grow:%s", p->id, n);
	g = sched_model_add_grow(m, id, p, 0, pods, st, at, &e);
	if (g == NULL)
		fail_msg("add grow: %s", e.msg);
	if (st != SCHED_PENDING) {
		assert_true(sched_job_set_cluster(m, g, "c1", true, at, &e));
		assert_true(sched_job_add_alloc(m, g, 0, node, pods, &e));
	}
	return g;
}

/* Node n of the cluster shows `used` accelerators in use (the snapshot of a running job). */
static void
busy(struct sched_model *m, const char *cluster, int n, int64_t used)
{
	struct sched_cluster *c = sched_model_find_cluster(m, cluster);

	c->nodes[n].free.v[SCHED_ACCEL] -= used;
	sched_cluster_refresh(c);
}

static const struct sched_decision *
run(struct sched_model *m, struct arena *a, struct sched_cycle *cy, const char *id)
{
	const struct sched_decision *d;

	sched_cycle_run(m, a, cy);
	d = fx_decision(m, cy, id);
	if (d == NULL)
		fail_msg("no decision for %s", id);
	return d;
}

/* The queue has room: the grow is admitted on the job's cluster and pool, on a node that
 * exists, and the queue's usage grows by its accelerators. */
static void
test_grow_admitted_and_charged(void **state)
{
	struct sched_model *m = fx_model();
	struct arena *a = arena_new();
	struct sched_cycle cy;
	const struct sched_decision *d;
	struct sched_job *p, *g;
	struct sched_cluster *c1;

	(void)state;
	c1 = fx_cluster(m, "c1", "r1", "gpu", 10.0, 3, 8, 0);
	fx_cluster(m, "c2", "r1", "gpu", 1.0, 3, 8, 0);	/* cheaper, empty: never the grow's */
	fx_queue(m, "q", NULL, 1, "gpu", 24, U, U);
	p = elastic_job(m, "job", "q", 0, "c1-n0", FX_NOW - 100);
	g = grow(m, p, "1", 1, SCHED_PENDING, NULL, FX_NOW - 5);
	fx_finalize(m);
	busy(m, "c1", 0, 8);	/* the snapshot shows the running job's worker */
	assert_int_equal(fx_usage(m, "q", "gpu"), 8);
	d = run(m, a, &cy, g->id);
	assert_int_equal(d->outcome, SCHED_OUT_ADMIT);
	assert_int_equal(d->place->cluster, c1->idx);
	assert_int_equal(d->place->n_allocs, 1);
	assert_true(d->place->allocs[0].node == 1 || d->place->allocs[0].node == 2);
	assert_false(d->place->allocs[0].grown);
	assert_int_equal(fx_usage(m, "q", "gpu"), 16);	/* charged */
	assert_int_equal(g->state, SCHED_ADMITTED);
	arena_free(a);
	sched_model_free(m);
}

/* The queue has no quota left: the grow waits (over_quota) and nothing is charged. */
static void
test_grow_held_by_quota(void **state)
{
	struct sched_model *m = fx_model();
	struct arena *a = arena_new();
	struct sched_cycle cy;
	const struct sched_decision *d;
	struct sched_job *p, *g;

	(void)state;
	fx_cluster(m, "c1", "r1", "gpu", 10.0, 3, 8, 0);
	fx_queue(m, "q", NULL, 1, "gpu", 8, U, U);
	p = elastic_job(m, "job", "q", 0, "c1-n0", FX_NOW - 100);
	g = grow(m, p, "1", 1, SCHED_PENDING, NULL, FX_NOW - 5);
	fx_finalize(m);
	busy(m, "c1", 0, 8);
	d = run(m, a, &cy, g->id);
	assert_int_equal(d->outcome, SCHED_OUT_PENDING);
	assert_string_equal(sched_reason_code(d->reason), "over_quota");
	assert_int_equal(fx_usage(m, "q", "gpu"), 8);
	assert_int_equal(g->state, SCHED_PENDING);
	arena_free(a);
	sched_model_free(m);
}

/* Room in another pool of the job's cluster and on another cluster, none in the job's
 * pool: the grow waits (insufficient_capacity), it is not placed elsewhere. */
static void
test_grow_held_by_domain(void **state)
{
	struct sched_model *m = fx_model();
	struct arena *a = arena_new();
	struct sched_cycle cy;
	const struct sched_decision *d;
	struct sched_cluster *c1;
	struct sched_pool *other;
	struct sched_job *p, *g;
	struct err e = { 0 };

	(void)state;
	c1 = fx_cluster(m, "c1", "r1", "gpu", 10.0, 2, 8, 0);
	other = sched_cluster_add_pool(m, c1, "gpu", false, 10.0, &e);
	assert_non_null(other);
	assert_true(sched_pool_add_node(m, c1, other, "c1-b0", NULL, NULL, NULL,
	    fx_vec(8, 64000, 524288), fx_vec(8, 64000, 524288), &e));
	fx_cluster(m, "c2", "r1", "gpu", 1.0, 3, 8, 0);
	fx_queue(m, "q", NULL, 1, "gpu", 64, U, U);
	p = elastic_job(m, "job", "q", 0, "c1-n0", FX_NOW - 100);
	g = grow(m, p, "1", 1, SCHED_PENDING, NULL, FX_NOW - 5);
	fx_finalize(m);
	busy(m, "c1", 0, 8);
	busy(m, "c1", 1, 8);	/* the job's pool is full */
	d = run(m, a, &cy, g->id);
	assert_int_equal(d->outcome, SCHED_OUT_PENDING);
	assert_string_equal(sched_reason_code(d->reason), "insufficient_capacity");
	assert_int_equal(fx_usage(m, "q", "gpu"), 8);
	/* a plain job of the same shape would have taken the other pool */
	{
		struct sched_job *j = fx_job(m, "plain", "q", 0, FX_NOW - 1, "gpu", 1, 8);
		struct sched_placement pl;

		assert_true(sched_place(m, j, SCHED_R_CHOSEN, a, &pl));
	}
	arena_free(a);
	sched_model_free(m);
}

/* A higher-priority job needs room the queue's quota gives only back: the grown workers of
 * the older job go first, although a whole job was admitted more recently (the victim
 * order alone, newest first, would have preempted it). */
static void
test_shrink_before_preempt(void **state)
{
	struct sched_model *m = fx_model();
	struct arena *a = arena_new();
	struct sched_cycle cy;
	const struct sched_decision *d;
	struct sched_job *p, *g, *newer, *hi;

	(void)state;
	fx_cluster(m, "c1", "r1", "gpu", 10.0, 4, 8, 0);
	fx_queue(m, "q", NULL, 1, "gpu", 24, U, U);
	p = elastic_job(m, "old", "q", 0, "c1-n0", FX_NOW - 100);
	g = grow(m, p, "1", 1, SCHED_ADMITTED, "c1-n1", FX_NOW - 90);
	newer = fx_admitted(m, "newer", "q", 0, "gpu", 1, 8, "c1", 2, FX_NOW - 50);
	hi = fx_job(m, "hi", "q", 10, FX_NOW - 1, "gpu", 1, 8);
	hi->can_preempt = true;
	fx_finalize(m);
	busy(m, "c1", 0, 8);
	assert_int_equal(fx_usage(m, "q", "gpu"), 24);
	d = run(m, a, &cy, "hi");
	assert_int_equal(d->outcome, SCHED_OUT_ADMIT);
	assert_int_equal(d->n_victims, 1);
	assert_string_equal(sched_model_job(m, (size_t)d->victims[0])->id, g->id);
	assert_int_equal(g->state, SCHED_PREEMPTED);
	assert_int_equal(p->state, SCHED_RUNNING);	/* back to its admitted minimum */
	assert_int_equal(newer->state, SCHED_ADMITTED);
	assert_int_equal(fx_usage(m, "q", "gpu"), 24);	/* 8 + 8 + 8: the grow's went to hi */
	arena_free(a);
	sched_model_free(m);
}

/* A grow never takes its own job's room, and a move never shrinks a grow (it preempts
 * whole jobs only). */
static void
test_grow_never_evicts_its_job(void **state)
{
	struct sched_model *m = fx_model();
	struct arena *a = arena_new();
	struct sched_preemption pp;
	struct sched_job *p, *g, *mover;

	(void)state;
	fx_cluster(m, "c1", "r1", "gpu", 10.0, 2, 8, 0);
	fx_queue(m, "q", NULL, 1, "gpu", 16, U, U);
	p = elastic_job(m, "job", "q", 0, "c1-n0", FX_NOW - 100);
	grow(m, p, "1", 1, SCHED_ADMITTED, "c1-n1", FX_NOW - 90);
	g = grow(m, p, "2", 1, SCHED_PENDING, NULL, FX_NOW - 5);
	g->can_preempt = true;
	g->priority = 100;	/* even were it higher */
	mover = fx_job(m, "mover", "q", 50, FX_NOW - 1, "gpu", 1, 8);
	mover->can_preempt = true;
	fx_finalize(m);
	busy(m, "c1", 0, 8);
	assert_false(sched_preempt_plan(m, g, SCHED_PREEMPT_ADMIT, a, &pp));
	if (sched_preempt_plan(m, mover, SCHED_PREEMPT_MOVE, a, &pp))
		for (size_t i = 0; i < pp.n_victims; i++)
			assert_null(strstr(sched_model_job(m, (size_t)pp.victims[i])->id, "#grow"));
	assert_true(sched_preempt_plan(m, mover, SCHED_PREEMPT_ADMIT, a, &pp));
	assert_int_equal(pp.n_victims, 1);
	assert_non_null(strstr(sched_model_job(m, (size_t)pp.victims[0])->id, "#grow:1"));
	arena_free(a);
	sched_model_free(m);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_grow_admitted_and_charged),
		cmocka_unit_test(test_grow_held_by_quota),
		cmocka_unit_test(test_grow_held_by_domain),
		cmocka_unit_test(test_shrink_before_preempt),
		cmocka_unit_test(test_grow_never_evicts_its_job),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
