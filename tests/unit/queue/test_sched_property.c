/* test_sched_property: seeded random fleets, queues and job mixes run through
 * many cycles; invariants: capacity, quota, whole gangs, no priority inversion,
 * bounded wait with aging, no preemption loop. */
#include "sched_fixture.h"

#define U SCHED_UNSET

static uint64_t rng_state;

static uint64_t
rnd(void)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return rng_state;
}

static int
pick(int lo, int hi)
{
	return lo + (int)(rnd() % (uint64_t)(hi - lo + 1));
}

struct world {
	struct sched_model	*m;
	int			 n_queues;
	int			 job_seq;
	int			 runtime[4096];	/* cycles left, by job index */
};

static void
add_random_job(struct world *w, int64_t t, bool small)
{
	struct err e = { 0 };
	char id[32], q[16];
	struct sched_job *j;
	int pods = small ? 1 : pick(1, 4), per = small ? pick(1, 2) : pick(1, 8);
	int extra = pick(0, 2);
	enum sched_topo topo = small ? SCHED_TOPO_NONE : (enum sched_topo)pick(0, 2);

	/* host: the gang at its maximum fits one 8-accelerator node (submit refuses more) */
	if (topo == SCHED_TOPO_HOST && per * (pods + extra) > 8)
		per = 8 / (pods + extra) > 0 ? 8 / (pods + extra) : 1;
	if (topo == SCHED_TOPO_HOST && per * (pods + extra) > 8)
		extra = 0, pods = 8 / per;
	snprintf(id, sizeof(id), "j%d", w->job_seq++);
	snprintf(q, sizeof(q), "q%d", pick(0, w->n_queues - 1));
	j = sched_model_add_job(w->m, id, q, pick(0, 3), t, SCHED_PENDING, &e);
	assert_non_null(j);
	assert_true(sched_job_add_group(w->m, j, pick(0, 3) ? "gpu" : "gpu-b", pods, pods + extra,
	    fx_vec(per, 1000, 1024), &e));
	j->topo = topo;
	j->can_preempt = pick(0, 2) == 0;
}

static struct world *
random_world(int n_jobs, bool preempt, size_t holds)
{
	struct world *w = calloc(1, sizeof(*w));
	struct sched_config cfg;
	struct err e = { 0 };
	int i, n_clusters = pick(1, 5);

	sched_config_default(&cfg);
	cfg.preempt = preempt;
	cfg.max_holds = holds;
	cfg.starve_after = 120;
	cfg.max_candidates = 4;
	w->m = sched_model_new(&cfg, FX_NOW);
	for (i = 0; i < n_clusters; i++) {
		char id[16];
		int k, nodes = pick(1, 6);
		struct sched_cluster *c;
		struct sched_pool *p;

		snprintf(id, sizeof(id), "c%d", i);
		c = sched_model_add_cluster(w->m, id, "prod", pick(0, 1) ? "r1" : "r2", "gke", &e);
		p = sched_cluster_add_pool(w->m, c, i % 3 == 2 ? "gpu-b" : "gpu", false,
		    (double)pick(5, 20), &e);
		p->grow_nodes = pick(0, 1);
		for (k = 0; k < nodes; k++) {
			char nid[32], rack[32];
			int64_t acc = pick(0, 1) ? 8 : 4;

			snprintf(nid, sizeof(nid), "%s-n%d", id, k);
			snprintf(rack, sizeof(rack), "%s-r%d", id, k / 2);
			assert_true(sched_pool_add_node(w->m, c, p, nid, rack, NULL, NULL,
			    fx_vec(acc, 64000, 524288), fx_vec(acc, 64000, 524288), &e));
		}
	}
	w->n_queues = pick(1, 4);
	for (i = 0; i < w->n_queues; i++) {
		char id[16];
		struct sched_queue *q;
		struct sched_quota qa = fx_quota(pick(0, 24), pick(0, 1) ? U : pick(0, 8),
		    pick(0, 1) ? U : pick(0, 8));
		struct sched_quota qb = fx_quota(pick(0, 16), U, U);

		snprintf(id, sizeof(id), "q%d", i);
		q = sched_model_add_queue(w->m, id, "prod", i < 3 ? "co" : NULL, pick(1, 3),
		    pick(0, 3) ? SCHED_BEST_EFFORT_FIFO : SCHED_STRICT_FIFO, &e);
		assert_true(sched_queue_set_quota(w->m, q, "gpu", &qa, &e));
		assert_true(sched_queue_set_quota(w->m, q, "gpu-b", &qb, &e));
	}
	for (i = 0; i < n_jobs; i++)
		add_random_job(w, FX_NOW - pick(0, 1000), false);
	fx_finalize(w->m);
	return w;
}

static void
world_free(struct world *w)
{
	sched_model_free(w->m);
	free(w);
}

/* Capacity and gangs, recomputed from the jobs' allocations. */
static void
check_capacity_and_gangs(struct sched_model *m)
{
	size_t ci, ji, a, b;
	int r, g;

	for (ci = 0; ci < sched_model_n_clusters(m); ci++) {
		struct sched_cluster *c = sched_model_cluster(m, ci);
		struct sched_vec *used = calloc(c->n_nodes + 1, sizeof(*used));

		for (ji = 0; ji < sched_model_n_jobs(m); ji++) {
			struct sched_job *j = sched_model_job(m, ji);

			if (j->state != SCHED_ADMITTED || j->cluster != (int)ci)
				continue;
			for (a = 0; a < j->n_allocs; a++) {
				assert_true(j->allocs[a].node >= 0 && (size_t)j->allocs[a].node < c->n_nodes);
				for (r = 0; r < SCHED_NRES; r++)
					used[j->allocs[a].node].v[r] += j->allocs[a].res.v[r];
			}
		}
		for (a = 0; a < c->n_nodes; a++)
			for (r = 0; r < SCHED_NRES; r++) {
				if (used[a].v[r] > c->nodes[a].alloc.v[r])
					fail_msg("node %s over capacity", c->id);
				assert_int_equal(c->nodes[a].free.v[r], c->nodes[a].alloc.v[r] - used[a].v[r]);
			}
		free(used);
	}
	for (ji = 0; ji < sched_model_n_jobs(m); ji++) {
		struct sched_job *j = sched_model_job(m, ji);
		struct sched_cluster *c;
		int pods[SCHED_MAX_GROUPS] = { 0 };

		if (j->state != SCHED_ADMITTED)
			continue;
		c = sched_model_cluster(m, (size_t)j->cluster);
		for (a = 0; a < j->n_allocs; a++) {
			pods[j->allocs[a].group] += j->allocs[a].pods;
			assert_int_equal(c->pools[c->nodes[j->allocs[a].node].pool].flavor,
			    j->groups[j->allocs[a].group].flavor);
			for (b = a + 1; b < j->n_allocs; b++) {
				if (j->topo == SCHED_TOPO_HOST &&
				    j->groups[j->allocs[a].group].pod.v[SCHED_ACCEL] > 0 &&
				    j->groups[j->allocs[b].group].pod.v[SCHED_ACCEL] > 0)
					assert_int_equal(j->allocs[a].node, j->allocs[b].node);
				if (j->topo == SCHED_TOPO_RACK)
					assert_int_equal(c->nodes[j->allocs[a].node].rack,
					    c->nodes[j->allocs[b].node].rack);
			}
		}
		for (g = 0; g < j->n_groups; g++)
			assert_int_equal(pods[g], j->groups[g].min);
	}
}

/* Quota: usage from the jobs themselves, against nominal + borrowing limit and
 * the cohort's lendable pool. */
static void
check_quota(struct sched_model *m)
{
	int64_t use[8][2] = { { 0 } }, over[8][2] = { { 0 } }, lend[8][2] = { { 0 } };
	size_t i;
	int f, fl[2];

	assert_true(sched_model_flavor(m, "gpu", &fl[0], NULL));
	assert_true(sched_model_flavor(m, "gpu-b", &fl[1], NULL));
	for (i = 0; i < sched_model_n_jobs(m); i++) {
		struct sched_job *j = sched_model_job(m, i);
		int g;

		if (j->state != SCHED_ADMITTED)
			continue;
		for (g = 0; g < j->n_groups; g++)
			use[j->queue][j->groups[g].flavor == fl[0] ? 0 : 1] +=
			    j->groups[g].min * j->groups[g].pod.v[SCHED_ACCEL];
	}
	for (i = 0; i < sched_model_n_queues(m); i++) {
		struct sched_queue *q = sched_model_queue(m, i);

		for (f = 0; f < 2; f++) {
			const struct sched_quota *qq = &q->quota[fl[f]];
			int64_t nom = qq->nominal.v[SCHED_ACCEL], bl = qq->borrow_limit.v[SCHED_ACCEL];
			int64_t ll = qq->lend_limit.v[SCHED_ACCEL];
			int64_t lendable = ll == U || ll > nom ? nom : ll;

			assert_int_equal(q->usage[fl[f]].v[SCHED_ACCEL], use[i][f]);
			if (bl != U && use[i][f] > nom + bl)
				fail_msg("queue %s over nominal + borrowing limit", q->id);
			over[q->group][f] += use[i][f] > nom - lendable ? use[i][f] - (nom - lendable) : 0;
			lend[q->group][f] += lendable;
		}
	}
	for (i = 0; i < 8; i++)
		for (f = 0; f < 2; f++)
			if (over[i][f] > lend[i][f])
				fail_msg("cohort %zu borrows %lld of %lld lendable", i,
				    (long long)over[i][f], (long long)lend[i][f]);
}

/* Within a queue, no job is admitted while a better-ranked one that fits waits. */
static void
check_order(struct sched_model *m, const struct sched_cycle *cy)
{
	size_t a, p;

	for (a = 0; a < cy->n; a++) {
		const struct sched_job *ja = sched_model_job(m, (size_t)cy->d[a].job);

		if (cy->d[a].outcome != SCHED_OUT_ADMIT)
			continue;
		for (p = 0; p < cy->n; p++) {
			const struct sched_job *jp = sched_model_job(m, (size_t)cy->d[p].job);
			struct sched_placement pl;

			if (cy->d[p].outcome != SCHED_OUT_PENDING || jp->queue != ja->queue ||
			    jp->rank > ja->rank)
				continue;
			if (p > a)
				fail_msg("job %s attempted after lower-ranked %s", jp->id, ja->id);
			/* it was tried first and still does not fit */
			assert_false(sched_place(m, jp, sched_quota_check(m, jp), NULL, &pl));
		}
	}
}

static void
test_invariants(void **state)
{
	int iter, cycle;
	size_t i, admitted = 0, preempted = 0, holds = 0;

	(void)state;
	rng_state = 0x9e3779b97f4a7c15ULL;
	for (iter = 0; iter < 400; iter++) {
		bool preempt = iter % 2 == 0;
		struct world *w = random_world(pick(5, 30), preempt, preempt ? 8 : 0);
		struct sched_model *m = w->m;

		for (cycle = 0; cycle < 8; cycle++) {
			struct arena *a = arena_new();
			struct sched_cycle cy;

			sched_model_set_now(m, FX_NOW + cycle * 60);
			for (i = 0; i < sched_model_n_clusters(m); i++)
				sched_model_cluster(m, i)->observed_at = FX_NOW + cycle * 60;
			sched_cycle_run(m, a, &cy);
			assert_int_equal(cy.admitted + cy.pending, cy.n);
			admitted += cy.admitted;
			preempted += cy.preempted;
			for (i = 0; i < cy.n; i++)
				holds += cy.d[i].hold_cluster >= 0;
			check_capacity_and_gangs(m);
			check_quota(m);
			if (!preempt)
				check_order(m, &cy);
			for (i = 0; i < sched_model_n_jobs(m); i++) {
				struct sched_job *j = sched_model_job(m, i);

				if (j->state == SCHED_PREEMPTED)
					sched_model_requeue_job(m, j);
				else if (j->state == SCHED_ADMITTED && pick(0, 2) == 0)
					sched_model_finish_job(m, j);
			}
			arena_free(a);
		}
		world_free(w);
	}
	/* the mix exercised admissions, preemptions and holds */
	assert_true(admitted > 1000);
	assert_true(preempted > 10);
	assert_true(holds > 10);
}

/* A victim requeued at once never preempts the job that displaced it. */
static void
test_no_preemption_loop(void **state)
{
	int iter, loops = 0, preemptions = 0;
	size_t d, v;

	(void)state;
	rng_state = 0x1234567887654321ULL;
	for (iter = 0; iter < 600; iter++) {
		struct world *w = random_world(pick(10, 30), true, 0);
		struct sched_model *m = w->m;
		struct arena *a = arena_new();
		struct sched_cycle first, second;
		size_t i;

		for (i = 0; i < sched_model_n_jobs(m); i++)
			sched_model_job(m, i)->can_preempt = true;
		sched_cycle_run(m, a, &first);
		for (i = 0; i < sched_model_n_jobs(m); i++)
			if (sched_model_job(m, i)->state == SCHED_PREEMPTED)
				sched_model_requeue_job(m, sched_model_job(m, i));
		sched_cycle_run(m, a, &second);
		for (d = 0; d < first.n; d++)
			for (v = 0; v < first.d[d].n_victims; v++) {
				size_t e, k;

				preemptions++;
				for (e = 0; e < second.n; e++) {
					if (second.d[e].job != first.d[d].victims[v])
						continue;
					for (k = 0; k < second.d[e].n_victims; k++)
						loops += second.d[e].victims[k] == first.d[d].job;
				}
			}
		check_capacity_and_gangs(m);
		check_quota(m);
		arena_free(a);
		world_free(w);
	}
	assert_int_equal(loops, 0);
	assert_true(preemptions > 0);	/* the property was exercised */
}

/* Big jobs that fit an empty cluster are admitted within a bound while a steady
 * stream of small jobs keeps arriving: the hold keeps them from starving. */
static void
test_bounded_wait(void **state)
{
	int iter, cycle, waited_max = 0;
	size_t i;

	(void)state;
	rng_state = 0xdeadbeefcafef00dULL;
	for (iter = 0; iter < 60; iter++) {
		struct world *w = calloc(1, sizeof(*w));
		struct sched_config cfg;
		struct sched_model *m;
		struct sched_job *big;
		struct arena *a;
		int admitted_at = -1;

		sched_config_default(&cfg);
		cfg.preempt = false;
		cfg.starve_after = 120;
		cfg.max_candidates = 2;
		m = w->m = sched_model_new(&cfg, FX_NOW);
		for (i = 0; i < 3; i++) {
			char id[8];

			snprintf(id, sizeof(id), "c%zu", i);
			fx_cluster(m, id, "r1", "gpu", 10.0, 2, 8, 0);
		}
		w->n_queues = 2;
		fx_queue(m, "q0", "co", 1, "gpu", 1000, U, U);
		fx_queue(m, "q1", "co", 1, "gpu", 1000, U, U);
		for (i = 0; i < 30; i++)
			add_random_job(w, FX_NOW - 1, true);
		big = fx_job(m, "big", "q1", 0, FX_NOW, "gpu", 2, 8);
		fx_finalize(m);
		for (cycle = 0; cycle < 40 && admitted_at < 0; cycle++) {
			struct sched_cycle cy;
			int64_t now = FX_NOW + cycle * 60;

			a = arena_new();
			sched_model_set_now(m, now);
			for (i = 0; i < sched_model_n_clusters(m); i++)
				sched_model_cluster(m, i)->observed_at = now;
			sched_cycle_run(m, a, &cy);
			check_capacity_and_gangs(m);
			if (big->state == SCHED_ADMITTED)
				admitted_at = cycle;
			for (i = 0; i < sched_model_n_jobs(m); i++) {
				struct sched_job *j = sched_model_job(m, i);

				if (j->state == SCHED_ADMITTED && j != big && --w->runtime[i] <= 0) {
					if (w->runtime[i] < -3 || pick(0, 1))
						sched_model_finish_job(m, j);
				}
			}
			arena_free(a);
			/* new small jobs every cycle, as many as the fleet drains */
			for (i = 0; i < 14; i++) {
				struct err e = { 0 };
				char id[32];
				struct sched_job *j;

				snprintf(id, sizeof(id), "s%d", w->job_seq++);
				j = sched_model_add_job(m, id, pick(0, 1) ? "q0" : "q1", 0, now + 1,
				    SCHED_PENDING, &e);
				assert_true(sched_job_add_group(m, j, "gpu", 1, 1, fx_vec(2, 1000, 1024), &e));
			}
		}
		if (admitted_at < 0)
			fail_msg("iteration %d: big job still pending after 40 cycles", iter);
		if (admitted_at > waited_max)
			waited_max = admitted_at;
		world_free(w);
	}
	assert_true(waited_max <= 12);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_invariants),
		cmocka_unit_test(test_no_preemption_loop),
		cmocka_unit_test(test_bounded_wait),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
