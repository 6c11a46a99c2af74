/* test_preempt: victims within a queue and reclaimed from borrowing queues,
 * candidate order, minimal sets on one cluster and the no-loop share rule. */
#include "sched_fixture.h"

#define U SCHED_UNSET

struct pr_admitted {
	const char	*id, *queue, *cluster;
	int		 prio, pods, node;
	int64_t		 per_pod, admitted_at;
};

struct pr_case {
	const char	*name;
	const char	*cite;
	int		 clusters, nodes;		/* clusters c1.. of nodes x 8 */
	struct { const char *id; int64_t nominal; } queues[3];
	struct pr_admitted admitted[6];
	const char	*pending_queue;
	int		 pending_prio, pending_pods;
	int64_t		 pending_per_pod;
	const char	*want;			/* victims, comma separated; "" = none */
};

static const struct pr_case cases[] = {
	{ "own_queue_newest_lower_priority",
	  "issue 6: lowest priority, most recently admitted", 1, 2,
	  { { "q", 16 } },
	  { { "low-old", "q", "c1", 0, 1, 0, 8, FX_NOW - 100 },
	    { "low-new", "q", "c1", 0, 1, 1, 8, FX_NOW - 50 } },
	  "q", 10, 1, 8, "low-new" },
	{ "own_queue_equal_priority_is_safe",
	  "issue 6: only lower priority jobs of the own queue", 1, 2,
	  { { "q", 16 } },
	  { { "a", "q", "c1", 10, 1, 0, 8, FX_NOW - 100 },
	    { "b", "q", "c1", 10, 1, 1, 8, FX_NOW - 50 } },
	  "q", 10, 1, 8, "" },
	{ "drop_unnecessary_victims",
	  "Kueue docs concepts/preemption.md: minimize targets in reverse order", 1, 2,
	  { { "q", 16 } },
	  { { "v1", "q", "c1", 0, 1, 0, 1, FX_NOW - 10 },
	    { "w", "q", "c1", 20, 7, 0, 1, FX_NOW - 10 },
	    { "v2", "q", "c1", 1, 1, 1, 8, FX_NOW - 10 } },
	  "q", 10, 1, 8, "v2" },
	{ "reclaim_from_borrowing_queue_any_priority",
	  "Kueue docs concepts/cluster_queue.md: reclaimWithinCohort Any", 1, 2,
	  { { "team-a", 8 }, { "team-b", 8 } },
	  { { "b1", "team-b", "c1", 5, 1, 0, 8, FX_NOW - 100 },
	    { "b2", "team-b", "c1", 5, 1, 1, 8, FX_NOW - 50 } },
	  "team-a", 0, 1, 8, "b2" },
	{ "no_reclaim_from_queue_within_nominal",
	  "Kueue classic preemption: only queues that borrow are candidates", 1, 2,
	  { { "team-a", 8 }, { "team-b", 8 } },
	  { { "a1", "team-a", "c1", 10, 1, 0, 8, FX_NOW - 100 },
	    { "b1", "team-b", "c1", 0, 1, 1, 8, FX_NOW - 50 } },
	  "team-a", 10, 1, 8, "" },
	{ "borrowing_queues_first",
	  "Kueue docs concepts/preemption.md: candidates from borrowing queues first", 1, 3,
	  { { "team-a", 24 }, { "team-b", 0 } },
	  { { "own-low", "team-a", "c1", 0, 1, 0, 8, FX_NOW - 100 },
	    { "bor", "team-b", "c1", 9, 1, 1, 8, FX_NOW - 100 },
	    { "own-mid", "team-a", "c1", 1, 1, 2, 8, FX_NOW - 100 } },
	  "team-a", 10, 1, 8, "bor" },
	{ "victims_on_one_cluster",
	  "issue 6: all victims on the one chosen cluster", 2, 1,
	  { { "q", 64 } },
	  { { "v1", "q", "c1", 0, 1, 0, 8, FX_NOW - 100 },
	    { "v2", "q", "c2", 0, 1, 0, 8, FX_NOW - 100 } },
	  "q", 10, 2, 8, "" },
};

static struct sched_model *
build(const struct pr_case *c, struct sched_job **pending)
{
	struct sched_model *m = fx_model();
	int i;

	for (i = 0; i < c->clusters; i++) {
		char id[16];

		snprintf(id, sizeof(id), "c%d", i + 1);
		fx_cluster(m, id, "r1", "gpu", 10.0, c->nodes, 8, 0);
	}
	for (i = 0; i < 3 && c->queues[i].id != NULL; i++)
		fx_queue(m, c->queues[i].id, "cohort", 1, "gpu", c->queues[i].nominal, U, U);
	for (i = 0; i < 6 && c->admitted[i].id != NULL; i++) {
		const struct pr_admitted *a = &c->admitted[i];

		fx_admitted(m, a->id, a->queue, a->prio, "gpu", a->pods, a->per_pod, a->cluster,
		    a->node, a->admitted_at);
	}
	*pending = fx_job(m, "preemptor", c->pending_queue, c->pending_prio, FX_NOW,
	    "gpu", c->pending_pods, c->pending_per_pod);
	(*pending)->can_preempt = true;
	fx_finalize(m);
	return m;
}

static void
test_cases(void **state)
{
	size_t ci, i;

	(void)state;
	for (ci = 0; ci < sizeof(cases) / sizeof(cases[0]); ci++) {
		const struct pr_case *c = &cases[ci];
		struct sched_job *j;
		struct sched_model *m = build(c, &j);
		struct arena *a = arena_new();
		struct sched_preemption pp;
		char got[256] = "";
		int64_t before = fx_usage(m, "q", "gpu");

		sched_preempt_plan(m, j, SCHED_PREEMPT_ADMIT, a, &pp);
		for (i = 0; i < pp.n_victims; i++) {
			struct sched_job *v = sched_model_job(m, (size_t)pp.victims[i]);

			snprintf(got + strlen(got), sizeof(got) - strlen(got), "%s%s",
			    i ? "," : "", v->id);
			assert_int_equal(v->cluster, pp.cluster);
			assert_int_equal(v->state, SCHED_ADMITTED);	/* plan leaves the model */
		}
		if (strcmp(got, c->want) != 0)
			fail_msg("%s (%s): victims [%s], want [%s]", c->name, c->cite, got, c->want);
		assert_int_equal(fx_usage(m, "q", "gpu"), before);
		arena_free(a);
		sched_model_free(m);
	}
}

/* Fair-share preemption must not loop: A may take from B, then B may not take back. */
static void
test_no_loop(void **state)
{
	struct sched_model *m = fx_model();
	struct arena *a = arena_new();
	struct sched_cycle cy;
	const struct sched_decision *d;
	struct sched_job *j, *v;
	int i;

	(void)state;
	fx_cluster(m, "c1", "r1", "gpu", 10.0, 3, 4, 0);	/* 12 accelerators */
	fx_queue(m, "a", "co", 1, "gpu", 4, U, U);
	fx_queue(m, "b", "co", 1, "gpu", 4, U, U);
	fx_queue(m, "lender", "co", 1, "gpu", 8, U, U);
	fx_admitted(m, "a-0", "a", 5, "gpu", 2, 2, "c1", 0, FX_NOW - 90);
	for (i = 0; i < 4; i++) {
		char id[16];

		snprintf(id, sizeof(id), "b-%d", i);
		fx_admitted(m, id, "b", 5, "gpu", 1, 2, "c1", 1 + i / 2, FX_NOW - 80 + i);
	}
	j = fx_job(m, "a-new", "a", 5, FX_NOW - 5, "gpu", 1, 2);
	j->can_preempt = true;
	fx_finalize(m);
	for (i = 0; i < (int)sched_model_n_jobs(m); i++)
		sched_model_job(m, (size_t)i)->can_preempt = true;
	/* a: 4 of nominal 4, after +2 borrows 2 (share 2/16); b borrows 4 (4/16), after
	 * losing one 2-accelerator job 2/16: allowed (<= final, < initial). */
	sched_cycle_run(m, a, &cy);
	d = fx_decision(m, &cy, "a-new");
	assert_int_equal(d->outcome, SCHED_OUT_ADMIT);
	assert_int_equal(d->n_victims, 1);
	v = sched_model_job(m, (size_t)d->victims[0]);
	assert_string_equal(v->id, "b-3");	/* newest */
	assert_int_equal(v->state, SCHED_PREEMPTED);
	/* requeued, it keeps its enqueue time and cannot take its place back */
	sched_model_requeue_job(m, v);
	assert_int_equal(v->enqueued_at, FX_NOW - 80 + 3 - 10);
	sched_cycle_run(m, a, &cy);
	assert_int_equal(cy.preempted, 0);
	assert_int_equal(fx_decision(m, &cy, "b-3")->outcome, SCHED_OUT_PENDING);
	arena_free(a);
	sched_model_free(m);
}

/* bench/trace.sh's preempt-requeue cycle (eval j02948 evicts training j03913, which
 * evicts it back 20 s later): a1 evicts b2 by fair share; b1 then finishes and a2 takes
 * its place while b2 is in its grace period, so when b2 is requeued its queue has nothing
 * and a1's has everything.  The no-loop rule alone lets b2 evict a1 (lowest priority)
 * back; b2 must take its share from a2 instead, never from the job that evicted it. */
static void
test_no_requeue_cycle(void **state)
{
	struct sched_model *m = fx_model();
	struct arena *a = arena_new();
	struct sched_cycle cy;
	const struct sched_decision *d;
	struct sched_job *b2, *a2;
	int i;

	(void)state;
	fx_cluster(m, "c1", "r1", "gpu", 10.0, 1, 8, 0);
	fx_cluster(m, "c2", "r1", "gpu", 10.0, 1, 8, 0);
	fx_queue(m, "a", "co", 1, "gpu", 0, U, U);
	fx_queue(m, "b", "co", 1, "gpu", 0, U, U);
	fx_queue(m, "lender", "co", 1, "gpu", 32, U, U);
	fx_admitted(m, "b1", "b", 0, "gpu", 1, 8, "c1", 0, FX_NOW - 100);
	b2 = fx_admitted(m, "b2", "b", 0, "gpu", 1, 8, "c2", 0, FX_NOW - 50);
	fx_job(m, "a1", "a", 0, FX_NOW - 5, "gpu", 1, 8);
	fx_finalize(m);
	for (i = 0; i < (int)sched_model_n_jobs(m); i++)
		sched_model_job(m, (size_t)i)->can_preempt = true;
	sched_cycle_run(m, a, &cy);
	d = fx_decision(m, &cy, "a1");
	assert_int_equal(d->outcome, SCHED_OUT_ADMIT);
	assert_int_equal(d->n_victims, 1);
	assert_string_equal(sched_model_job(m, (size_t)d->victims[0])->id, "b2");
	assert_int_equal(b2->n_evicted_by, 1);
	assert_string_equal(b2->evicted_by[0], "a1");

	sched_model_finish_job(m, sched_model_find_job(m, "b1"));
	a2 = fx_job(m, "a2", "a", 10, FX_NOW + 10, "gpu", 1, 8);
	a2->can_preempt = true;
	sched_model_set_now(m, FX_NOW + 20);
	sched_cycle_run(m, a, &cy);
	assert_int_equal(fx_decision(m, &cy, "a2")->outcome, SCHED_OUT_ADMIT);
	assert_int_equal(fx_usage(m, "a", "gpu"), 16);

	sched_model_requeue_job(m, b2);
	sched_model_set_now(m, FX_NOW + 40);
	sched_cycle_run(m, a, &cy);
	d = fx_decision(m, &cy, "b2");
	assert_int_equal(d->outcome, SCHED_OUT_ADMIT);
	assert_int_equal(d->n_victims, 1);
	assert_string_equal(sched_model_job(m, (size_t)d->victims[0])->id, "a2");
	assert_int_equal(sched_model_find_job(m, "a1")->state, SCHED_ADMITTED);

	/* the history survives a reload: the loader passes the ids of the preempted events */
	assert_true(sched_job_evicted_by(m, a2, "b2"));
	assert_true(sched_job_evicted_by(m, a2, "b2"));
	assert_int_equal(a2->n_evicted_by, 1);
	arena_free(a);
	sched_model_free(m);
}

/* The failed-search memo of a cycle must not lend one job's eviction history to an equal
 * job: x may not evict v (v evicted it), y may. */
static void
test_evicted_history_not_shared(void **state)
{
	struct sched_model *m = fx_model();
	struct arena *a = arena_new();
	struct sched_cycle cy;
	const struct sched_decision *d;
	struct sched_job *x, *y;
	int i;

	(void)state;
	fx_cluster(m, "c1", "r1", "gpu", 10.0, 1, 8, 0);
	fx_queue(m, "a", "co", 1, "gpu", 0, U, U);
	fx_queue(m, "b", "co", 1, "gpu", 8, U, U);
	fx_admitted(m, "v", "a", 0, "gpu", 1, 8, "c1", 0, FX_NOW - 100);
	x = fx_job(m, "x", "b", 0, FX_NOW - 20, "gpu", 1, 8);
	y = fx_job(m, "y", "b", 0, FX_NOW - 10, "gpu", 1, 8);
	fx_finalize(m);
	for (i = 0; i < (int)sched_model_n_jobs(m); i++)
		sched_model_job(m, (size_t)i)->can_preempt = true;
	assert_true(sched_job_evicted_by(m, x, "v"));
	sched_cycle_run(m, a, &cy);
	assert_int_equal(fx_decision(m, &cy, "x")->outcome, SCHED_OUT_PENDING);
	d = fx_decision(m, &cy, "y");
	assert_int_equal(d->outcome, SCHED_OUT_ADMIT);
	assert_int_equal(d->n_victims, 1);
	assert_string_equal(sched_model_job(m, (size_t)d->victims[0])->id, "v");
	assert_int_equal(y->state, SCHED_ADMITTED);
	arena_free(a);
	sched_model_free(m);
}

/* A preemptor that does not need borrowing can always reclaim its floor. */
static void
test_cycle_reclaim_frees_quota(void **state)
{
	struct sched_model *m = fx_model();
	struct arena *a = arena_new();
	struct sched_cycle cy;
	const struct sched_decision *d;
	struct sched_job *j;
	json_t *js;

	(void)state;
	fx_cluster(m, "c1", "r1", "gpu", 10.0, 4, 8, 0);
	fx_queue(m, "a", "co", 1, "gpu", 16, U, U);
	fx_queue(m, "b", "co", 1, "gpu", 16, U, U);
	fx_admitted(m, "b-0", "b", 0, "gpu", 2, 8, "c1", 0, FX_NOW - 60);
	fx_admitted(m, "b-1", "b", 0, "gpu", 2, 8, "c1", 2, FX_NOW - 30);
	j = fx_job(m, "a-0", "a", 0, FX_NOW - 5, "gpu", 1, 8);
	j->can_preempt = true;
	fx_finalize(m);
	assert_int_equal(sched_quota_check(m, j), SCHED_R_OVER_QUOTA);
	sched_cycle_run(m, a, &cy);
	d = fx_decision(m, &cy, "a-0");
	assert_int_equal(d->outcome, SCHED_OUT_ADMIT);
	assert_int_equal(d->n_victims, 1);
	assert_string_equal(sched_model_job(m, (size_t)d->victims[0])->id, "b-1");
	assert_int_equal(fx_usage(m, "b", "gpu"), 16);
	assert_int_equal(fx_usage(m, "a", "gpu"), 8);
	js = sched_decision_to_json(m, d);
	assert_string_equal(json_string_value(json_array_get(json_object_get(js, "victims"), 0)),
	    "b-1");
	json_decref(js);
	arena_free(a);
	sched_model_free(m);
}

/* Without can_preempt (or with preemption off) the job just waits. */
static void
test_preemption_disabled(void **state)
{
	struct sched_model *m = fx_model();
	struct arena *a = arena_new();
	struct sched_cycle cy;

	(void)state;
	fx_cluster(m, "c1", "r1", "gpu", 10.0, 1, 8, 0);
	fx_queue(m, "q", NULL, 1, "gpu", 16, U, U);
	fx_admitted(m, "low", "q", 0, "gpu", 1, 8, "c1", 0, FX_NOW - 60);
	fx_job(m, "high", "q", 10, FX_NOW - 5, "gpu", 1, 8);
	fx_finalize(m);
	sched_cycle_run(m, a, &cy);
	assert_int_equal(cy.preempted, 0);
	assert_int_equal(fx_decision(m, &cy, "high")->reason, SCHED_R_INSUFFICIENT_CAPACITY);
	sched_model_find_job(m, "high")->can_preempt = true;
	sched_cycle_run(m, a, &cy);
	assert_int_equal(cy.preempted, 1);
	arena_free(a);
	sched_model_free(m);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_cases),
		cmocka_unit_test(test_no_loop),
		cmocka_unit_test(test_no_requeue_cycle),
		cmocka_unit_test(test_evicted_history_not_shared),
		cmocka_unit_test(test_cycle_reclaim_frees_quota),
		cmocka_unit_test(test_preemption_disabled),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
