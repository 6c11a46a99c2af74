/* test_fairshare: quota floors, borrowing and lending limits, dominant resource
 * share ordering and queueing strategies, as tables of cycles. */
#include "sched_fixture.h"

struct fs_queue {
	const char	*id;
	const char	*cohort;
	double		 weight;
	int64_t		 nominal, borrow_limit, lend_limit;
	enum sched_strategy strategy;
};

struct fs_jobs {
	const char	*queue;
	int		 count;
	int		 prio;
	int64_t		 t0;		/* enqueue time of the first; +1 each */
	int		 pods;
	int64_t		 per_pod;
	bool		 admitted;	/* already admitted before the cycle */
};

struct fs_case {
	const char	*name;
	const char	*cite;
	int		 cluster_nodes;	/* 8 accelerators each */
	struct fs_queue	 queues[4];
	struct fs_jobs	 jobs[6];
	int		 want[4];	/* admissions this cycle per queue */
	const char	*want_reason[4];	/* reason of the queue's first pending job */
	const char	*first_from;	/* queue of the first admission, NULL = any */
};

#define U SCHED_UNSET

static const struct fs_case cases[] = {
	{ "kueue_borrow_all_unused_nominal",
	  "Kueue docs concepts/cluster_queue.md, Borrowing example: team-a 9 + team-b 12 = 21",
	  4, { { "team-a", "team-ab", 1, 9, U, U, 0 }, { "team-b", "team-ab", 1, 12, U, U, 0 } },
	  { { "team-a", 22, 0, 0, 1, 1, false } }, { 21, 0 }, { "over_quota", NULL }, NULL },
	{ "kueue_borrowing_limit",
	  "Kueue docs concepts/cluster_queue.md, BorrowingLimit: 9 + borrowingLimit 1 = 10",
	  4, { { "team-a", "team-ab", 1, 9, 1, U, 0 }, { "team-b", "team-ab", 1, 12, U, U, 0 } },
	  { { "team-a", 12, 0, 0, 1, 1, false } }, { 10, 0 }, { "borrowing_limit", NULL }, NULL },
	{ "kueue_borrower_without_limit_takes_21",
	  "Kueue docs concepts/cluster_queue.md, BorrowingLimit: team-b can borrow 12+9",
	  4, { { "team-a", "team-ab", 1, 9, 1, U, 0 }, { "team-b", "team-ab", 1, 12, U, U, 0 } },
	  { { "team-b", 25, 0, 0, 1, 1, false } }, { 0, 21 }, { NULL, "over_quota" }, NULL },
	{ "kueue_nominal_of_other_queue_served_first",
	  "Kueue docs concepts/cluster_queue.md, Borrowing example, second bullet",
	  4, { { "team-a", "team-ab", 1, 9, U, U, 0 }, { "team-b", "team-ab", 1, 12, U, U, 0 } },
	  { { "team-a", 9, 0, 0, 1, 1, true }, { "team-a", 12, 0, 10, 1, 1, false },
	    { "team-b", 12, 0, 500, 1, 1, false } },
	  { 0, 12 }, { "over_quota", NULL }, "team-b" },
	{ "drs_weights_two_to_one",
	  "issue 6: share = max_r(borrowed_r / lendable_r) / weight; ties by age",
	  4, { { "a", "c", 2, 0, U, U, 0 }, { "b", "c", 1, 0, U, U, 0 },
	       { "lender", "c", 1, 12, U, U, 0 } },
	  { { "a", 12, 0, 100, 1, 1, false }, { "b", 12, 0, 0, 1, 1, false } },
	  { 8, 4, 0 }, { "over_quota", "over_quota", NULL }, NULL },
	{ "lending_limit_caps_borrower",
	  "Kueue lendingLimit semantics: only min(lendingLimit, nominal) crosses queues",
	  4, { { "owner", "c", 1, 10, U, 4, 0 }, { "borrower", "c", 1, 0, U, U, 0 } },
	  { { "borrower", 10, 0, 0, 1, 1, false } }, { 0, 4 }, { NULL, "over_quota" }, NULL },
	{ "floor_before_borrower",
	  "issue 6: a queue under its nominal quota with demand is served before anyone borrows",
	  4, { { "owner", "c", 1, 10, U, 4, 0 }, { "borrower", "c", 1, 0, U, U, 0 } },
	  { { "borrower", 10, 0, 0, 1, 1, false }, { "owner", 10, 0, 50, 1, 1, false } },
	  { 10, 0 }, { NULL, "over_quota" }, "owner" },
	{ "lone_queue_capped_at_nominal",
	  "a queue without cohort cannot borrow",
	  4, { { "solo", NULL, 1, 5, U, U, 0 } },
	  { { "solo", 8, 0, 0, 1, 1, false } }, { 5 }, { "over_quota" }, NULL },
	{ "priority_then_age_within_queue",
	  "DESIGN.md Scheduling: within a queue priority, then age",
	  4, { { "q", NULL, 1, 3, U, U, 0 } },
	  { { "q", 3, 1, 0, 1, 1, false }, { "q", 1, 10, 99, 1, 1, false } },
	  { 3 }, { "over_quota" }, NULL },
	{ "best_effort_lets_small_jobs_pass",
	  "Kueue BestEffortFIFO: an inadmissible head does not block",
	  1, { { "q", NULL, 1, 100, U, U, SCHED_BEST_EFFORT_FIFO } },
	  { { "q", 1, 5, 0, 2, 8, false }, { "q", 4, 0, 10, 1, 1, false } },
	  { 4 }, { "insufficient_capacity" }, NULL },
	{ "strict_fifo_blocks_behind_head",
	  "Kueue StrictFIFO: the head blocks the queue",
	  1, { { "q", NULL, 1, 100, U, U, SCHED_STRICT_FIFO } },
	  { { "q", 1, 5, 0, 2, 8, false }, { "q", 4, 0, 10, 1, 1, false } },
	  { 0 }, { "insufficient_capacity" }, NULL },
};

static void
build(struct sched_model *m, const struct fs_case *c)
{
	struct err e = { 0 };
	int i, k, node = 0;

	fx_cluster(m, "c1", "us-east1", "gpu", 10.0, c->cluster_nodes, 8, 0);
	for (i = 0; i < 4 && c->queues[i].id != NULL; i++) {
		const struct fs_queue *fq = &c->queues[i];
		struct sched_queue *q = sched_model_add_queue(m, fq->id, "prod", fq->cohort,
		    fq->weight, fq->strategy, &e);
		struct sched_quota quota = fx_quota(fq->nominal, fq->borrow_limit, fq->lend_limit);

		assert_non_null(q);
		assert_true(sched_queue_set_quota(m, q, "gpu", &quota, &e));
	}
	for (i = 0; i < 6 && c->jobs[i].queue != NULL; i++) {
		const struct fs_jobs *fj = &c->jobs[i];

		for (k = 0; k < fj->count; k++) {
			char id[64];

			snprintf(id, sizeof(id), "%s-%d-%d", fj->queue, i, k);
			if (fj->admitted) {
				fx_admitted(m, id, fj->queue, fj->prio, "gpu", fj->pods, fj->per_pod, "c1",
				    node / 8, FX_NOW - 100);
				node++;
			} else {
				struct sched_job *j = fx_job(m, id, fj->queue, fj->prio,
				    fj->t0 + k, "gpu", fj->pods, fj->per_pod);

				j->can_preempt = false;
			}
		}
	}
	fx_finalize(m);
}

static void
test_cases(void **state)
{
	size_t ci, d;
	int i;

	(void)state;
	for (ci = 0; ci < sizeof(cases) / sizeof(cases[0]); ci++) {
		const struct fs_case *c = &cases[ci];
		struct sched_model *m = fx_model();
		struct arena *a = arena_new();
		struct sched_cycle cy;
		int got[4] = { 0 };

		build(m, c);
		sched_cycle_run(m, a, &cy);
		for (d = 0; d < cy.n; d++) {
			const struct sched_job *j = sched_model_job(m, (size_t)cy.d[d].job);

			if (cy.d[d].outcome == SCHED_OUT_ADMIT)
				got[j->queue]++;
		}
		if (c->first_from != NULL) {
			assert_true(cy.n > 0);
			assert_int_equal(cy.d[0].outcome, SCHED_OUT_ADMIT);
			assert_string_equal(sched_model_queue(m,
			    (size_t)sched_model_job(m, (size_t)cy.d[0].job)->queue)->id, c->first_from);
		}
		for (i = 0; i < 4 && c->queues[i].id != NULL; i++) {
			if (got[i] != c->want[i])
				fail_msg("%s (%s): queue %s admitted %d, want %d", c->name, c->cite,
				    c->queues[i].id, got[i], c->want[i]);
			if (c->want_reason[i] == NULL)
				continue;
			for (d = 0; d < cy.n; d++) {
				const struct sched_job *j = sched_model_job(m, (size_t)cy.d[d].job);

				if (j->queue == i && cy.d[d].outcome == SCHED_OUT_PENDING &&
				    cy.d[d].position == 1)
					break;
			}
			if (d == cy.n)
				fail_msg("%s: queue %s has no pending head", c->name, c->queues[i].id);
			if (strcmp(sched_reason_code(cy.d[d].reason), c->want_reason[i]) != 0)
				fail_msg("%s: queue %s head reason %s, want %s", c->name,
				    c->queues[i].id, sched_reason_code(cy.d[d].reason), c->want_reason[i]);
		}
		arena_free(a);
		sched_model_free(m);
	}
}

/* share = max_r(borrowed_r / lendable_r) / weight, checked by number. */
static void
test_share_values(void **state)
{
	struct sched_model *m = fx_model();
	struct sched_job *probe;
	bool borrowing;
	double s;

	(void)state;
	fx_cluster(m, "c1", "us-east1", "gpu", 10.0, 4, 8, 0);
	fx_queue(m, "a", "c", 2.0, "gpu", 4, U, U);
	fx_queue(m, "b", "c", 1.0, "gpu", 8, U, U);
	fx_admitted(m, "a-run", "a", 0, "gpu", 6, 1, "c1", 0, FX_NOW - 50);
	probe = fx_job(m, "a-next", "a", 0, 5, "gpu", 3, 1);
	fx_finalize(m);
	/* a uses 6 of nominal 4: borrowed 2 of lendable 12, weight 2. */
	s = sched_share(m, sched_model_queue(m, 0), NULL, &borrowing);
	assert_true(borrowing);
	assert_true(s > 2.0 / 12.0 / 2.0 - 1e-9 && s < 2.0 / 12.0 / 2.0 + 1e-9);
	/* after admitting 3 more: borrowed 5. */
	s = sched_share(m, sched_model_queue(m, 0), probe, &borrowing);
	assert_true(s > 5.0 / 12.0 / 2.0 - 1e-9 && s < 5.0 / 12.0 / 2.0 + 1e-9);
	s = sched_share(m, sched_model_queue(m, 1), NULL, &borrowing);
	assert_false(borrowing);
	assert_true(s == 0.0);
	assert_int_equal(sched_quota_check(m, probe), SCHED_R_CHOSEN);
	sched_model_free(m);
}

/* Only accelerators are managed here; cpu and memory are SCHED_UNSET. */
static void
test_unmanaged_resources_ignored(void **state)
{
	struct sched_model *m = fx_model();
	struct sched_job *j;

	(void)state;
	fx_cluster(m, "c1", "us-east1", "gpu", 10.0, 4, 8, 0);
	fx_queue(m, "q", NULL, 1.0, "gpu", 8, U, U);
	j = fx_job(m, "j", "q", 0, 0, "gpu", 8, 1);
	j->groups[0].pod.v[SCHED_CPU] = 32000;
	fx_finalize(m);
	assert_int_equal(sched_quota_check(m, j), SCHED_R_CHOSEN);
	sched_model_free(m);
}

/* A flavor the queue has no quota for counts as nominal 0 (must borrow). */
static void
test_flavor_without_quota(void **state)
{
	struct sched_model *m = fx_model();
	struct sched_job *j;

	(void)state;
	fx_cluster(m, "c1", "us-east1", "gpu", 10.0, 4, 8, 0);
	fx_cluster(m, "c2", "us-east1", "tpu", 10.0, 4, 8, 0);
	fx_queue(m, "q", NULL, 1.0, "gpu", 8, U, U);
	j = fx_job(m, "j", "q", 0, 0, "tpu", 1, 1);
	fx_finalize(m);
	assert_int_equal(sched_quota_check(m, j), SCHED_R_OVER_QUOTA);
	sched_model_free(m);
}

/* Admissions update usage so nothing is counted twice within a cycle. */
static void
test_usage_tracks_admissions(void **state)
{
	struct sched_model *m = fx_model();
	struct arena *a = arena_new();
	struct sched_cycle cy;

	(void)state;
	fx_cluster(m, "c1", "us-east1", "gpu", 10.0, 4, 8, 0);
	fx_queue(m, "q", NULL, 1.0, "gpu", 32, U, U);
	fx_job(m, "j1", "q", 0, 0, "gpu", 2, 4);
	fx_job(m, "j2", "q", 0, 1, "gpu", 1, 8);
	fx_finalize(m);
	sched_cycle_run(m, a, &cy);
	assert_int_equal(cy.admitted, 2);
	assert_int_equal(fx_usage(m, "q", "gpu"), 16);
	sched_model_finish_job(m, sched_model_find_job(m, "j1"));
	assert_int_equal(fx_usage(m, "q", "gpu"), 8);
	arena_free(a);
	sched_model_free(m);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_cases),
		cmocka_unit_test(test_share_values),
		cmocka_unit_test(test_unmanaged_resources_ignored),
		cmocka_unit_test(test_flavor_without_quota),
		cmocka_unit_test(test_usage_tracks_admissions),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
