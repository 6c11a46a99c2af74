/* test_preempt_memo: a cycle does not search again for victims for a job equal to one whose
 * search just failed while the model stayed the same, and that changes no decision; nor do
 * the scheduler's lean pending decisions (reason only, no candidates or counts: issue 17's
 * memory at 100,000 pending jobs), whose admissions keep every detail. */
#include "sched_fixture.h"

#define U SCHED_UNSET

/* 300 equal jobs that may preempt but find no lower-priority victim: one search. */
static void
test_equal_jobs_search_once(void **state)
{
	struct sched_model *m = fx_model();
	struct arena *a = arena_new();
	struct sched_cycle cy;
	const struct sched_decision *first;
	char id[32];
	size_t i;

	(void)state;
	fx_cluster(m, "c1", "r1", "gpu", 10.0, 2, 8, 0);
	fx_queue(m, "q", NULL, 1.0, "gpu", 64, U, U);
	fx_admitted(m, "h1", "q", 10, "gpu", 1, 8, "c1", 0, FX_NOW - 100);
	fx_admitted(m, "h2", "q", 10, "gpu", 1, 8, "c1", 1, FX_NOW - 100);
	for (i = 0; i < 300; i++) {
		snprintf(id, sizeof(id), "p%zu", i);
		fx_job(m, id, "q", 10, FX_NOW - 50 + (int64_t)i, "gpu", 1, 8)->can_preempt = true;
	}
	/* another class in between: its own search */
	fx_job(m, "other", "q", 10, FX_NOW - 49, "gpu", 1, 4)->can_preempt = true;
	fx_finalize(m);
	sched_cycle_run(m, a, &cy);
	assert_int_equal(cy.admitted, 0);
	assert_int_equal(cy.preempted, 0);
	assert_int_equal(cy.preempt_searches, 2);
	assert_int_equal(cy.preempt_memo_hits, 299);
	first = fx_decision(m, &cy, "p0");
	assert_non_null(first);
	for (i = 1; i < 300; i++) {
		snprintf(id, sizeof(id), "p%zu", i);
		assert_int_equal(fx_decision(m, &cy, id)->reason, first->reason);
	}
	arena_free(a);
	sched_model_free(m);
}

/* After an admission or eviction the model changed: an equal job searches again and may
 * find victims the earlier one did not have (here: the second eviction). */
static void
test_change_searches_again(void **state)
{
	struct sched_model *m = fx_model();
	struct arena *a = arena_new();
	struct sched_cycle cy;
	char id[32];
	size_t i;

	(void)state;
	fx_cluster(m, "c1", "r1", "gpu", 10.0, 2, 8, 0);
	fx_queue(m, "q", NULL, 1.0, "gpu", 64, U, U);
	fx_admitted(m, "low1", "q", 0, "gpu", 1, 8, "c1", 0, FX_NOW - 100);
	fx_admitted(m, "low2", "q", 0, "gpu", 1, 8, "c1", 1, FX_NOW - 90);
	for (i = 0; i < 20; i++) {
		snprintf(id, sizeof(id), "p%zu", i);
		fx_job(m, id, "q", 10, FX_NOW - 50 + (int64_t)i, "gpu", 1, 8)->can_preempt = true;
	}
	fx_finalize(m);
	sched_cycle_run(m, a, &cy);
	assert_int_equal(cy.admitted, 2);
	assert_int_equal(cy.preempted, 2);
	assert_int_equal(cy.preempt_searches, 3);	/* two evictions, then one failure */
	assert_int_equal(cy.preempt_memo_hits, 17);
	arena_free(a);
	sched_model_free(m);
}

static uint64_t rng_state;

static int
pick(int lo, int hi)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return lo + (int)(rng_state % (uint64_t)(hi - lo + 1));
}

/* A random fleet with jobs of few shapes (many equal); distinct: every job its own price
 * limit, high enough to filter nothing, so no two jobs are equal and nothing is skipped. */
/* world() builds a model whose cycles keep lean pending decisions (the scheduler's way). */
static bool world_lean;

static struct sched_model *
world(uint64_t seed, bool distinct)
{
	struct sched_config cfg;
	struct sched_model *m;
	struct err e = { 0 };
	int i, n, nq;

	rng_state = seed;
	sched_config_default(&cfg);
	cfg.max_candidates = 4;
	cfg.starve_after = 120;
	cfg.lean_pending = world_lean;
	m = sched_model_new(&cfg, FX_NOW);
	n = pick(1, 4);
	for (i = 0; i < n; i++) {
		char cid[16];

		snprintf(cid, sizeof(cid), "c%d", i);
		fx_cluster(m, cid, pick(0, 1) ? "r1" : "r2", "gpu", 10.0, pick(1, 4), 8, 0);
	}
	nq = pick(1, 3);
	for (i = 0; i < nq; i++) {
		char qid[16];

		snprintf(qid, sizeof(qid), "q%d", i);
		fx_queue(m, qid, "co", pick(1, 3), "gpu", pick(0, 24), U, U);
	}
	n = pick(20, 80);
	for (i = 0; i < n; i++) {
		char jid[16], qid[16];
		struct sched_job *j;
		int pods = pick(1, 2), per = pick(0, 1) ? 4 : 8;

		snprintf(jid, sizeof(jid), "j%d", i);
		snprintf(qid, sizeof(qid), "q%d", pick(0, nq - 1));
		j = sched_model_add_job(m, jid, qid, pick(0, 2) * 10, FX_NOW - pick(0, 1000),
		    SCHED_PENDING, &e);
		assert_non_null(j);
		assert_true(sched_job_add_group(m, j, "gpu", pods, pods, fx_vec(per, 1000, 1024), &e));
		j->can_preempt = pick(0, 1);
		if (distinct)
			j->max_price = 1e9 + i;
	}
	fx_finalize(m);
	return m;
}

static void
test_same_decisions_as_without(void **state)
{
	size_t hits = 0, preempted = 0;
	uint64_t seed;

	(void)state;
	for (seed = 1; seed <= 300; seed++) {
		struct sched_model *m[3];
		struct sched_cycle cy[3];
		struct arena *a = arena_new();
		int round, k;
		size_t i, v;

		m[0] = world(seed * 7919, false);
		m[1] = world(seed * 7919, true);
		world_lean = true;
		m[2] = world(seed * 7919, false);
		world_lean = false;

		for (round = 0; round < 4; round++) {
			for (k = 0; k < 3; k++) {
				sched_model_set_now(m[k], FX_NOW + round * 60);
				sched_cycle_run(m[k], a, &cy[k]);
			}
			assert_int_equal(cy[1].preempt_memo_hits, 0);
			hits += cy[0].preempt_memo_hits;
			preempted += cy[0].preempted;
			assert_int_equal(cy[0].n, cy[1].n);
			for (i = 0; i < cy[0].n; i++) {
				const struct sched_decision *x = &cy[0].d[i], *y = &cy[1].d[i];

				assert_int_equal(x->job, y->job);
				assert_int_equal(x->outcome, y->outcome);
				assert_int_equal(x->reason, y->reason);
				assert_int_equal(x->place->cluster, y->place->cluster);
				assert_int_equal(x->n_victims, y->n_victims);
				for (v = 0; v < x->n_victims; v++)
					assert_int_equal(x->victims[v], y->victims[v]);
			}
			/* lean pending decisions: the same decisions; an admission keeps all its
			 * detail (candidates, rejections by reason), a pending one its reason */
			assert_int_equal(cy[0].n, cy[2].n);
			for (i = 0; i < cy[0].n; i++) {
				const struct sched_decision *x = &cy[0].d[i], *z = &cy[2].d[i];

				assert_int_equal(x->job, z->job);
				assert_int_equal(x->outcome, z->outcome);
				assert_int_equal(x->reason, z->reason);
				assert_int_equal(x->place->cluster, z->place->cluster);
				if (x->outcome == SCHED_OUT_ADMIT) {
					json_t *jx = sched_decision_to_json(m[0], x);
					json_t *jz = sched_decision_to_json(m[2], z);

					assert_true(json_equal(jx, jz));
					json_decref(jx);
					json_decref(jz);
				} else {
					assert_null(z->place->counts);
				}
			}
			/* the next round: victims back in line, some admitted jobs finish */
			for (i = 0; i < sched_model_n_jobs(m[0]); i++) {
				bool done = pick(0, 2) == 0;

				for (k = 0; k < 3; k++) {
					struct sched_job *j = sched_model_job(m[k], i);

					if (j->state == SCHED_PREEMPTED)
						sched_model_requeue_job(m[k], j);
					else if (j->state == SCHED_ADMITTED && done)
						sched_model_finish_job(m[k], j);
				}
			}
		}
		arena_free(a);
		sched_model_free(m[0]);
		sched_model_free(m[1]);
		sched_model_free(m[2]);
	}
	assert_true(hits > 100);	/* the memo was used */
	assert_true(preempted > 20);	/* and evictions happened around it */
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_equal_jobs_search_once),
		cmocka_unit_test(test_change_searches_again),
		cmocka_unit_test(test_same_decisions_as_without),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
