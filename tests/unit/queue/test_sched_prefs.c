/* test_sched_prefs: capacity preferences (queue/sched/sched_prefs.c) — a job starts on the
 * best type with room, waits when it takes only its first choice, migrates to a more
 * preferred type when one frees (after its minimum run time, at most max_migrations times,
 * not within its cooldown), never through a victim, and within max_price per GPU-hour. */
#include "sched_fixture.h"

#define U SCHED_UNSET

/* One cluster "c" with one 8-GPU node per pool: spot "c-spot" (8 $/h), on-demand "c-od"
 * (24 $/h), reservation "c-res" (16 $/h) when with_res; free says which are free. */
static struct sched_model *
fleet(bool spot_free, bool od_free, bool with_res, bool res_free)
{
	struct sched_model *m = fx_model();
	struct err e = { 0 };
	struct sched_cluster *c = sched_model_add_cluster(m, "c", "prod", "us-east1", "gke", &e);
	struct sched_pool *p;
	struct {
		const char *node;
		bool spot;
		enum sched_ctype t;
		double price;
		bool free, on;
	} pools[] = {
		{ "c-spot", true, SCHED_CT_SPOT, 8, spot_free, true },
		{ "c-od", false, SCHED_CT_ON_DEMAND, 24, od_free, true },
		{ "c-res", false, SCHED_CT_RESERVATION, 16, res_free, with_res },
	};

	assert_non_null(c);
	/* the head's on-demand cpu pool */
	p = sched_cluster_add_pool(m, c, "cpu", false, 1, &e);
	assert_true(sched_pool_add_node(m, c, p, "c-cpu", NULL, NULL, NULL,
	    fx_vec(0, 64000, 524288), fx_vec(0, 64000, 524288), &e));
	for (size_t i = 0; i < 3; i++) {
		if (!pools[i].on)
			continue;
		p = sched_cluster_add_pool(m, c, "gpu", pools[i].spot, pools[i].price, &e);
		assert_non_null(p);
		p->ctype = pools[i].t;
		assert_true(sched_pool_add_node(m, c, p, pools[i].node, NULL, NULL, NULL,
		    fx_vec(8, 64000, 524288), pools[i].free ? fx_vec(8, 64000, 524288) :
		    fx_vec(0, 0, 0), &e));
	}
	{
		/* heads are bounded by capacity, not quota (as queue/sched/loader.c sets it) */
		struct sched_queue *q = fx_queue(m, "q", NULL, 1, "gpu", 100, U, U);
		struct sched_quota free_cpu = fx_quota(U, U, U);

		free_cpu.nominal = fx_vec(U, U, U);
		assert_true(sched_queue_set_quota(m, q, "cpu", &free_cpu, &e));
	}
	return m;
}

/* A pending job with a head and one 8-GPU worker, ranking types as given. */
static struct sched_job *
job(struct sched_model *m, const char *id, const enum sched_ctype *order, int n)
{
	struct err e = { 0 };
	struct sched_job *j = sched_model_add_job(m, id, "q", 0, FX_NOW - 100, SCHED_PENDING, &e);

	assert_non_null(j);
	assert_true(sched_job_add_group(m, j, "cpu", 1, 1, fx_vec(0, 1000, 1024), &e));
	j->groups[0].head = true;
	assert_true(sched_job_add_group(m, j, "gpu", 1, 1, fx_vec(8, 1000, 1024), &e));
	for (int i = 0; i < n; i++)
		j->pref[j->n_pref++] = (unsigned char)order[i];
	return j;
}

/* The same job running on node (free already shows it taken), since started_at. */
static struct sched_job *
running(struct sched_model *m, const char *id, const enum sched_ctype *order, int n,
	const char *node, int64_t started_at)
{
	struct err e = { 0 };
	struct sched_job *j = job(m, id, order, n);

	j->state = SCHED_RUNNING;
	assert_true(sched_job_set_cluster(m, j, "c", false, started_at, &e));
	assert_true(sched_job_add_alloc(m, j, 0, "c-cpu", 1, &e));
	assert_true(sched_job_add_alloc(m, j, 1, node, 1, &e));
	j->started_at = started_at;
	return j;
}

static const char *
pool_type_of(struct sched_model *m, const struct sched_placement *pl)
{
	const struct sched_cluster *c;

	if (pl->cluster < 0)
		return "(not placed)";
	c = sched_model_cluster(m, (size_t)pl->cluster);
	for (size_t i = 0; i < pl->n_allocs; i++)
		if (pl->allocs[i].group == 1)
			return sched_ctype_name(c->pools[pl->allocs[i].pool].ctype);
	return NULL;
}

static const enum sched_ctype od_spot[] = { SCHED_CT_ON_DEMAND, SCHED_CT_SPOT };

static void
test_starts_on_best_free(void **state)
{
	struct sched_model *m = fleet(true, false, false, false);
	struct arena *a = arena_new();
	struct sched_cycle cy;
	const struct sched_decision *d;

	(void)state;
	job(m, "j", od_spot, 2);
	fx_finalize(m);
	sched_cycle_run(m, a, &cy);
	d = fx_decision(m, &cy, "j");
	assert_int_equal(d->outcome, SCHED_OUT_ADMIT);
	assert_string_equal(pool_type_of(m, d->place), "spot");
	assert_int_equal(cy.n_mig, 0);
	arena_free(a);
	sched_model_free(m);

	/* both free: the first choice */
	m = fleet(true, true, false, false);
	a = arena_new();
	job(m, "j", od_spot, 2);
	fx_finalize(m);
	sched_cycle_run(m, a, &cy);
	d = fx_decision(m, &cy, "j");
	assert_int_equal(d->outcome, SCHED_OUT_ADMIT);
	assert_string_equal(pool_type_of(m, d->place), "on_demand");
	arena_free(a);
	sched_model_free(m);
}

static void
test_first_choice_only_waits(void **state)
{
	struct sched_model *m = fleet(true, false, false, false);
	struct arena *a = arena_new();
	struct sched_cycle cy;
	const struct sched_decision *d;
	struct sched_job *j;
	json_t *ex;

	(void)state;
	j = job(m, "j", od_spot, 2);
	j->first_only = true;
	j->can_preempt = true;
	running(m, "blocker", NULL, 0, "c-od", FX_NOW - 50);	/* no preference, no victim */
	fx_finalize(m);
	sched_cycle_run(m, a, &cy);
	d = fx_decision(m, &cy, "j");
	assert_int_equal(d->outcome, SCHED_OUT_PENDING);
	assert_string_equal(sched_reason_code(d->reason), "insufficient_capacity");
	assert_int_equal(cy.preempted, 0);	/* same priority: no victim */
	ex = sched_explain_job(m, j);
	assert_true(json_is_true(json_object_get(json_object_get(ex, "capacity_preference"),
	    "first_choice_only")));
	assert_string_equal(json_string_value(json_object_get(json_array_get(json_object_get(ex,
	    "clusters"), 0), "reason")), "insufficient_capacity");
	json_decref(ex);
	arena_free(a);
	sched_model_free(m);
}

/* The job's one type missing from the cluster: capacity_type_mismatch. */
static void
test_type_mismatch(void **state)
{
	static const enum sched_ctype res_only[] = { SCHED_CT_RESERVATION };
	struct sched_model *m = fleet(true, true, false, false);
	struct arena *a = arena_new();
	struct sched_cycle cy;

	(void)state;
	job(m, "j", res_only, 1);
	fx_finalize(m);
	sched_cycle_run(m, a, &cy);
	assert_int_equal(fx_decision(m, &cy, "j")->outcome, SCHED_OUT_PENDING);
	assert_string_equal(sched_reason_code(fx_decision(m, &cy, "j")->reason),
	    "capacity_type_mismatch");
	arena_free(a);
	sched_model_free(m);
}

static const char *
verdict(struct sched_model *m, struct sched_job *j)
{
	static char buf[32];
	json_t *o = sched_explain_prefs(m, j);

	snprintf(buf, sizeof(buf), "%s", json_string_value(json_object_get(o, "verdict")));
	json_decref(o);
	return buf;
}

static void
test_migrates_when_preferred_frees(void **state)
{
	struct sched_model *m = fleet(false, true, false, false);
	struct arena *a = arena_new();
	struct sched_cycle cy;
	struct sched_job *j;

	(void)state;
	j = running(m, "j", od_spot, 2, "c-spot", FX_NOW - 1000);
	fx_finalize(m);
	assert_string_equal(verdict(m, j), "migrate");
	sched_cycle_run(m, a, &cy);
	assert_int_equal(cy.n_mig, 1);
	assert_string_equal(sched_model_job(m, (size_t)cy.mig[0].job)->id, "j");
	assert_int_equal(cy.mig[0].from_rank, 1);
	assert_int_equal(cy.mig[0].to_rank, 0);
	assert_string_equal(pool_type_of(m, &cy.mig[0].place), "on_demand");
	arena_free(a);
	sched_model_free(m);
}

/* Pending jobs come first: a migration takes only what admissions left. */
static void
test_admission_before_migration(void **state)
{
	struct sched_model *m = fleet(false, true, false, false);
	struct arena *a = arena_new();
	struct sched_cycle cy;

	(void)state;
	running(m, "j", od_spot, 2, "c-spot", FX_NOW - 1000);
	job(m, "waiting", NULL, 0);
	fx_finalize(m);
	sched_cycle_run(m, a, &cy);
	assert_int_equal(fx_decision(m, &cy, "waiting")->outcome, SCHED_OUT_ADMIT);
	assert_int_equal(cy.n_mig, 0);
	arena_free(a);
	sched_model_free(m);
}

static void
test_min_run_max_and_cooldown(void **state)
{
	static const enum sched_ctype three[] = { SCHED_CT_RESERVATION, SCHED_CT_ON_DEMAND,
	    SCHED_CT_SPOT };
	struct sched_model *m = fleet(false, true, false, false);
	struct arena *a = arena_new();
	struct sched_cycle cy;
	struct sched_job *j;

	(void)state;
	/* minimum run time */
	j = running(m, "young", od_spot, 2, "c-spot", FX_NOW - 100);
	fx_finalize(m);
	assert_string_equal(verdict(m, j), "min_run_time");
	sched_cycle_run(m, a, &cy);
	assert_int_equal(cy.n_mig, 0);
	sched_model_free(m);

	/* as often as it may */
	m = fleet(false, true, false, false);
	j = running(m, "tired", od_spot, 2, "c-spot", FX_NOW - 5000);
	j->migrations = 2;
	fx_finalize(m);
	assert_string_equal(verdict(m, j), "max_migrations");
	sched_cycle_run(m, a, &cy);
	assert_int_equal(cy.n_mig, 0);
	sched_model_free(m);

	/* hysteresis: it just moved spot -> on-demand; the reservation frees at once; it waits
	 * its cooldown, then moves once more */
	m = fleet(false, false, true, true);
	j = running(m, "moved", three, 3, "c-od", FX_NOW - 5000);
	j->migrations = 1;
	j->migrated_at = FX_NOW - 60;
	fx_finalize(m);
	assert_string_equal(verdict(m, j), "cooldown");
	sched_cycle_run(m, a, &cy);
	assert_int_equal(cy.n_mig, 0);
	sched_model_set_now(m, FX_NOW + j->cooldown_s);
	sched_model_find_cluster(m, "c")->observed_at = FX_NOW + j->cooldown_s;	/* fresh */
	assert_string_equal(verdict(m, j), "migrate");
	sched_cycle_run(m, a, &cy);
	assert_int_equal(cy.n_mig, 1);
	assert_string_equal(pool_type_of(m, &cy.mig[0].place), "reservation");
	arena_free(a);
	sched_model_free(m);
}

/* Two jobs with opposite preferences, each on the other's first choice, nothing free: no
 * migration (never a victim), and no swap. */
static void
test_no_swap(void **state)
{
	static const enum sched_ctype spot_od[] = { SCHED_CT_SPOT, SCHED_CT_ON_DEMAND };
	struct sched_model *m = fleet(false, false, false, false);
	struct arena *a = arena_new();
	struct sched_cycle cy;
	struct sched_job *x, *y;

	(void)state;
	x = running(m, "x", spot_od, 2, "c-od", FX_NOW - 5000);
	y = running(m, "y", od_spot, 2, "c-spot", FX_NOW - 5000);
	x->can_preempt = y->can_preempt = true;
	x->priority = 10;
	fx_finalize(m);
	assert_string_equal(verdict(m, x), "no_room");
	assert_string_equal(verdict(m, y), "no_room");
	for (int k = 0; k < 3; k++) {
		sched_cycle_run(m, a, &cy);
		assert_int_equal(cy.n_mig, 0);
		assert_int_equal(cy.preempted, 0);
	}
	arena_free(a);
	sched_model_free(m);
}

/* One free on-demand node, two jobs below it: one migration per free slot, the higher
 * priority first; the other stays. */
static void
test_one_slot_one_migration(void **state)
{
	struct sched_model *m = fleet(false, true, false, false);
	struct err e = { 0 };
	struct arena *a = arena_new();
	struct sched_cycle cy;
	struct sched_cluster *c;
	struct sched_pool *p;
	struct sched_job *lo, *hi;

	(void)state;
	c = sched_model_find_cluster(m, "c");
	p = sched_cluster_add_pool(m, c, "gpu", true, 8, &e);
	assert_true(sched_pool_add_node(m, c, p, "c-spot2", NULL, NULL, NULL,
	    fx_vec(8, 64000, 524288), fx_vec(0, 0, 0), &e));
	lo = running(m, "lo", od_spot, 2, "c-spot", FX_NOW - 5000);
	hi = running(m, "hi", od_spot, 2, "c-spot2", FX_NOW - 5000);
	hi->priority = 5;
	(void)lo;
	fx_finalize(m);
	sched_cycle_run(m, a, &cy);
	assert_int_equal(cy.n_mig, 1);
	assert_string_equal(sched_model_job(m, (size_t)cy.mig[0].job)->id, "hi");
	arena_free(a);
	sched_model_free(m);
}

/* max_price is per GPU-hour: 24 $/h for 8 GPUs is 3 $/GPU-h, over a max of 2: the job
 * starts on spot (1 $/GPU-h) and never migrates to on-demand. */
static void
test_max_price_per_gpu_hour(void **state)
{
	struct sched_model *m = fleet(true, true, false, false);
	struct arena *a = arena_new();
	struct sched_cycle cy;
	struct sched_job *j;

	(void)state;
	j = job(m, "j", od_spot, 2);
	j->max_price = 2.0;
	fx_finalize(m);
	sched_cycle_run(m, a, &cy);
	assert_string_equal(pool_type_of(m, fx_decision(m, &cy, "j")->place), "spot");
	sched_model_free(m);

	m = fleet(false, true, false, false);
	j = running(m, "r", od_spot, 2, "c-spot", FX_NOW - 5000);
	j->max_price = 2.0;
	fx_finalize(m);
	assert_string_equal(verdict(m, j), "no_room");
	sched_cycle_run(m, a, &cy);
	assert_int_equal(cy.n_mig, 0);
	sched_model_free(m);

	/* 3.5 $/GPU-h allows it */
	m = fleet(false, true, false, false);
	j = running(m, "r", od_spot, 2, "c-spot", FX_NOW - 5000);
	j->max_price = 3.5;
	fx_finalize(m);
	sched_cycle_run(m, a, &cy);
	assert_int_equal(cy.n_mig, 1);
	arena_free(a);
	sched_model_free(m);
}

/* Price breaks a tie: with the price weight off, two clusters equal in every other score
 * part, the cheaper wins whatever the order they were added in. */
static void
test_price_breaks_ties(void **state)
{
	struct sched_config cfg;
	struct sched_model *m;
	struct arena *a = arena_new();
	struct sched_placement pl;
	struct sched_job *j;

	(void)state;
	sched_config_default(&cfg);
	cfg.w_price = 0;
	m = sched_model_new(&cfg, FX_NOW);
	fx_cluster(m, "dear", "us-east1", "gpu", 40, 2, 8, 0);
	fx_cluster(m, "cheap", "us-east1", "gpu", 20, 2, 8, 0);
	fx_queue(m, "q", NULL, 1, "gpu", 100, U, U);
	j = fx_job(m, "j", "q", 0, FX_NOW, "gpu", 1, 8);
	fx_finalize(m);
	assert_true(sched_place(m, j, SCHED_R_CHOSEN, a, &pl));
	assert_string_equal(sched_model_cluster(m, (size_t)pl.cluster)->id, "cheap");
	arena_free(a);
	sched_model_free(m);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_starts_on_best_free),
		cmocka_unit_test(test_first_choice_only_waits),
		cmocka_unit_test(test_type_mismatch),
		cmocka_unit_test(test_migrates_when_preferred_frees),
		cmocka_unit_test(test_admission_before_migration),
		cmocka_unit_test(test_min_run_max_and_cooldown),
		cmocka_unit_test(test_no_swap),
		cmocka_unit_test(test_one_slot_one_migration),
		cmocka_unit_test(test_max_price_per_gpu_hour),
		cmocka_unit_test(test_price_breaks_ties),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
