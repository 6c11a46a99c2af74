/* test_placement: cluster filters (one reason each), scoring, topology, gangs,
 * growth, in-flight reservations and the explain JSON. */
#include <math.h>

#include "sched_fixture.h"

#define U SCHED_UNSET

struct pl_cluster {
	const char	*id;
	const char	*region, *provider, *flavor;
	bool		 spot;
	double		 price;
	int		 nodes;
	int64_t		 accel;
	int		 defect;	/* 1 not ready, 2 unreachable, 3 stale, 4 cordoned */
	const char	*want;
};

static const struct pl_cluster filter_table[] = {
	{ "c-notready", "us-east1", "gke", "gpu", false, 10, 2, 8, 1, "not_ready" },
	{ "c-unreach", "us-east1", "gke", "gpu", false, 10, 2, 8, 2, "unreachable" },
	{ "c-stale", "us-east1", "gke", "gpu", false, 10, 2, 8, 3, "stale" },
	{ "c-cordon", "us-east1", "gke", "gpu", false, 10, 2, 8, 4, "cordoned" },
	{ "c-tpu", "us-east1", "gke", "tpu", false, 10, 2, 8, 0, "wrong_flavor" },
	{ "c-eu", "europe-west4", "gke", "gpu", false, 10, 2, 8, 0, "region_not_allowed" },
	{ "c-aks", "us-east1", "aks", "gpu", false, 10, 2, 8, 0, "provider_not_allowed" },
	{ "c-spot", "us-east1", "gke", "gpu", true, 10, 2, 8, 0, "spot_mismatch" },
	{ "c-dear", "us-east1", "gke", "gpu", false, 900, 2, 8, 0, "over_price" },
	{ "c-small", "us-east1", "gke", "gpu", false, 10, 3, 4, 0, "insufficient_capacity" },
	{ "c-good", "us-west1", "gke", "gpu", false, 10, 2, 8, 0, "chosen" },
	{ "c-also", "us-east1", "gke", "gpu", false, 12, 2, 8, 0, "outscored" },
};

static struct sched_cluster *
add_cluster(struct sched_model *m, const struct pl_cluster *pc)
{
	struct err e = { 0 };
	struct sched_cluster *c = sched_model_add_cluster(m, pc->id, "prod", pc->region,
	    pc->provider, &e);
	struct sched_pool *p = sched_cluster_add_pool(m, c, pc->flavor, pc->spot, pc->price, &e);
	int i;

	assert_non_null(p);
	for (i = 0; i < pc->nodes; i++) {
		char nid[64];

		snprintf(nid, sizeof(nid), "%s-n%d", pc->id, i);
		assert_true(sched_pool_add_node(m, c, p, nid, NULL, NULL, NULL,
		    fx_vec(pc->accel, 64000, 524288), fx_vec(pc->accel, 64000, 524288), &e));
	}
	c->ready = pc->defect != 1;
	c->reachable = pc->defect != 2;
	if (pc->defect == 3)
		c->observed_at = FX_NOW - 10000;
	c->cordoned = pc->defect == 4;
	return c;
}

static struct sched_job *
constrained_job(struct sched_model *m)
{
	struct err e = { 0 };
	struct sched_job *j = fx_job(m, "j", "q", 0, FX_NOW, "gpu", 2, 8);

	assert_true(sched_job_allow_region(m, j, "us-west1", &e));
	assert_true(sched_job_allow_region(m, j, "us-east1", &e));
	assert_true(sched_job_allow_provider(m, j, "gke", &e));
	j->spot = SCHED_SPOT_NEVER;
	j->max_price = 50.0;
	return j;
}

static void
test_filter_reasons(void **state)
{
	struct sched_model *m = fx_model();
	struct arena *a = arena_new();
	struct sched_placement pl;
	struct sched_job *j;
	json_t *ex, *cl;
	size_t i, k, n = sizeof(filter_table) / sizeof(filter_table[0]);

	(void)state;
	for (i = 0; i < n; i++)
		add_cluster(m, &filter_table[i]);
	fx_queue(m, "q", NULL, 1, "gpu", 100, U, U);
	j = constrained_job(m);
	fx_finalize(m);
	/* Fresh explain: one reason per cluster of the environment. */
	ex = sched_explain_job(m, j);
	assert_non_null(ex);
	assert_int_equal(json_integer_value(json_object_get(ex, "position")), 1);
	cl = json_object_get(ex, "clusters");
	assert_int_equal(json_array_size(cl), n);
	for (i = 0; i < n; i++) {
		json_t *o = json_array_get(cl, i);
		const char *id = json_string_value(json_object_get(o, "cluster"));
		const char *why = json_string_value(json_object_get(o, "reason"));

		for (k = 0; k < n && strcmp(filter_table[k].id, id) != 0; k++)
			;
		assert_true(k < n);
		if (strcmp(filter_table[k].want, "outscored") == 0)
			assert_string_equal(why, "chosen");	/* explain: it would fit */
		else if (strcmp(why, filter_table[k].want) != 0)
			fail_msg("explain %s: %s, want %s", id, why, filter_table[k].want);
	}
	json_decref(ex);
	/* Placement: c-good wins (cheaper than c-also), each loser keeps its reason. */
	assert_true(sched_place(m, j, SCHED_R_CHOSEN, a, &pl));
	assert_string_equal(sched_model_cluster(m, (size_t)pl.cluster)->id, "c-good");
	assert_int_equal(pl.cands[0].cluster, pl.cluster);
	for (i = 0; i < pl.n_cands; i++) {
		const char *id = sched_model_cluster(m, (size_t)pl.cands[i].cluster)->id;

		for (k = 0; k < n && strcmp(filter_table[k].id, id) != 0; k++)
			;
		if (strcmp(sched_reason_code(pl.cands[i].reason), filter_table[k].want) != 0)
			fail_msg("place %s: %s, want %s", id, sched_reason_code(pl.cands[i].reason),
			    filter_table[k].want);
	}
	/* wrong_flavor clusters are counted, not enumerated from the flavor index. */
	assert_int_equal(pl.counts[SCHED_R_WRONG_FLAVOR], 1);
	/* Quota failure blocks every cluster that passes the filters. */
	assert_false(sched_place(m, j, SCHED_R_BORROWING_LIMIT, a, &pl));
	assert_int_equal(pl.reason, SCHED_R_BORROWING_LIMIT);
	arena_free(a);
	sched_model_free(m);
}

static const char *
winner(struct sched_model *m, struct sched_job *j)
{
	struct arena *a = arena_new();
	struct sched_placement pl;
	const char *id = NULL;

	if (sched_place(m, j, SCHED_R_CHOSEN, a, &pl))
		id = sched_model_cluster(m, (size_t)pl.cluster)->id;
	arena_free(a);
	return id;
}

static void
test_scoring(void **state)
{
	struct sched_model *m;
	struct sched_cluster *c;
	struct sched_job *j;
	struct err e = { 0 };

	(void)state;
	/* price */
	m = fx_model();
	fx_cluster(m, "dear", "r1", "gpu", 20.0, 2, 8, 0);
	fx_cluster(m, "cheap", "r1", "gpu", 10.0, 2, 8, 0);
	fx_queue(m, "q", NULL, 1, "gpu", 100, U, U);
	j = fx_job(m, "j", "q", 0, FX_NOW, "gpu", 1, 8);
	fx_finalize(m);
	assert_string_equal(winner(m, j), "cheap");
	sched_model_free(m);
	/* best fit: the cluster the job fills exactly */
	m = fx_model();
	fx_cluster(m, "roomy", "r1", "gpu", 10.0, 4, 8, 0);
	c = fx_cluster(m, "snug", "r1", "gpu", 10.0, 4, 8, 0);
	fx_queue(m, "q", NULL, 1, "gpu", 100, U, U);
	j = fx_job(m, "j", "q", 0, FX_NOW, "gpu", 1, 8);
	c->nodes[0].free.v[SCHED_ACCEL] = c->nodes[1].free.v[SCHED_ACCEL] = 0;
	c->nodes[2].free.v[SCHED_ACCEL] = 0;
	fx_finalize(m);
	assert_string_equal(winner(m, j), "snug");
	sched_model_free(m);
	/* region preference follows the order of the allowed regions */
	m = fx_model();
	fx_cluster(m, "in-r1", "r1", "gpu", 10.0, 2, 8, 0);
	fx_cluster(m, "in-r2", "r2", "gpu", 10.0, 2, 8, 0);
	fx_queue(m, "q", NULL, 1, "gpu", 100, U, U);
	j = fx_job(m, "j", "q", 0, FX_NOW, "gpu", 1, 8);
	assert_true(sched_job_allow_region(m, j, "r2", &e));
	assert_true(sched_job_allow_region(m, j, "r1", &e));
	fx_finalize(m);
	assert_string_equal(winner(m, j), "in-r2");
	sched_model_free(m);
	/* stockout penalty, then its decay */
	m = fx_model();
	c = fx_cluster(m, "burnt", "r1", "gpu", 9.0, 2, 8, 0);	/* cheaper once forgiven */
	fx_cluster(m, "other", "r1", "gpu", 10.0, 2, 8, 0);
	fx_queue(m, "q", NULL, 1, "gpu", 100, U, U);
	j = fx_job(m, "j", "q", 0, FX_NOW, "gpu", 1, 8);
	c->pools[0].stockout_penalty = 2.0;
	c->pools[0].stockout_at = FX_NOW - 60;
	fx_finalize(m);
	assert_string_equal(winner(m, j), "other");
	assert_true(fabs(sched_stockout_now(m, &c->pools[0]) - 2.0 * pow(0.5, 60.0 / 900.0)) < 1e-9);
	sched_model_set_now(m, FX_NOW + 900 * 40);
	c->observed_at = sched_model_cluster(m, 1)->observed_at = FX_NOW + 900 * 40;
	assert_true(sched_stockout_now(m, &c->pools[0]) < 1e-9);
	assert_string_equal(winner(m, j), "burnt");
	sched_model_free(m);
}

static struct sched_model *
topo_model(int nodes, int rack_size, enum sched_topo topo, int pods, int64_t per_pod,
	   struct sched_job **out)
{
	struct sched_model *m = fx_model();

	fx_cluster(m, "c1", "r1", "gpu", 10.0, nodes, 8, rack_size);
	fx_queue(m, "q", NULL, 1, "gpu", 1000, U, U);
	*out = fx_job(m, "j", "q", 0, FX_NOW, "gpu", pods, per_pod);
	(*out)->topo = topo;
	fx_finalize(m);
	return m;
}

static void
test_topology(void **state)
{
	struct sched_model *m;
	struct sched_job *j;
	struct sched_alloc *al;
	struct arena *a = arena_new();
	size_t n, i;

	(void)state;
	/* host: every accelerator pod of the gang on one node (issue 13) */
	m = topo_model(2, 0, SCHED_TOPO_HOST, 4, 2, &j);
	assert_int_equal(sched_pack(m, j, sched_model_cluster(m, 0), a, &al, &n), SCHED_R_CHOSEN);
	assert_int_equal(n, 1);
	assert_int_equal(al[0].pods, 4);
	sched_model_free(m);
	/* 5 x 2 GPUs never fit one 8-GPU node, though the cluster holds them */
	m = topo_model(4, 0, SCHED_TOPO_HOST, 5, 2, &j);
	assert_int_equal(sched_pack(m, j, sched_model_cluster(m, 0), a, &al, &n),
	    SCHED_R_TOPOLOGY_SPLIT);
	sched_model_free(m);
	/* best fit: the node that is already partly used takes the gang */
	m = topo_model(4, 0, SCHED_TOPO_HOST, 2, 2, &j);
	sched_model_cluster(m, 0)->nodes[2].free.v[SCHED_ACCEL] = 4;
	sched_cluster_refresh(sched_model_cluster(m, 0));
	assert_int_equal(sched_pack(m, j, sched_model_cluster(m, 0), a, &al, &n), SCHED_R_CHOSEN);
	assert_int_equal(n, 1);
	assert_int_equal(al[0].node, 2);
	sched_model_free(m);
	/* elastic: the node must hold the gang at its maximum, so growth stays on it */
	m = fx_model();
	fx_cluster(m, "c1", "r1", "gpu", 10.0, 2, 8, 0);
	fx_queue(m, "q", NULL, 1, "gpu", 1000, U, U);
	{
		struct err e = { 0 };

		j = sched_model_add_job(m, "j", "q", 0, FX_NOW, SCHED_PENDING, &e);
		assert_true(sched_job_add_group(m, j, "gpu", 1, 4, fx_vec(4, 1000, 1024), &e));
	}
	j->topo = SCHED_TOPO_HOST;
	fx_finalize(m);
	assert_int_equal(sched_pack(m, j, sched_model_cluster(m, 0), a, &al, &n),
	    SCHED_R_TOPOLOGY_SPLIT);
	sched_model_free(m);
	/* the same gang without topology packs densely */
	m = topo_model(4, 0, SCHED_TOPO_NONE, 4, 2, &j);
	assert_int_equal(sched_pack(m, j, sched_model_cluster(m, 0), a, &al, &n), SCHED_R_CHOSEN);
	assert_int_equal(n, 1);
	assert_int_equal(al[0].pods, 4);
	sched_model_free(m);
	/* rack: racks of one node cannot hold a 2-node gang */
	m = topo_model(4, 1, SCHED_TOPO_RACK, 2, 8, &j);
	assert_int_equal(sched_pack(m, j, sched_model_cluster(m, 0), a, &al, &n),
	    SCHED_R_TOPOLOGY_SPLIT);
	sched_model_free(m);
	m = topo_model(6, 3, SCHED_TOPO_RACK, 2, 8, &j);
	sched_model_cluster(m, 0)->nodes[0].free.v[SCHED_ACCEL] = 0;	/* rack 0 has 2 left */
	sched_cluster_refresh(sched_model_cluster(m, 0));
	assert_int_equal(sched_pack(m, j, sched_model_cluster(m, 0), a, &al, &n), SCHED_R_CHOSEN);
	assert_int_equal(n, 2);
	for (i = 0; i < n; i++)	/* best fit: the fuller rack r0 */
		assert_int_equal(sched_model_cluster(m, 0)->nodes[al[i].node].rack,
		    sched_model_cluster(m, 0)->nodes[1].rack);
	sched_model_free(m);
	/* all or nothing: a gang one node too big gets nothing */
	m = topo_model(4, 0, SCHED_TOPO_NONE, 5, 8, &j);
	assert_int_equal(sched_pack(m, j, sched_model_cluster(m, 0), a, &al, &n),
	    SCHED_R_INSUFFICIENT_CAPACITY);
	assert_int_equal(n, 0);
	assert_int_equal(sched_model_cluster(m, 0)->pools[0].sum_free.v[SCHED_ACCEL], 32);
	sched_model_free(m);
	arena_free(a);
}

static void
test_slice(void **state)
{
	static const struct { const char *slice, *shape; int64_t free; } nodes[] = {
		{ "s1", "2x2x4", 0 }, { "s1", "2x2x4", 4 }, { "s1", "2x2x4", 4 }, { "s1", "2x2x4", 4 },
		{ "s3", "2x2x2", 4 }, { "s3", "2x2x2", 4 },
		{ "s2", "2x2x4", 4 }, { "s2", "2x2x4", 4 }, { "s2", "2x2x4", 4 }, { "s2", "2x2x4", 4 },
	};
	struct sched_model *m = fx_model();
	struct err e = { 0 };
	struct sched_cluster *c = sched_model_add_cluster(m, "tpu1", "prod", "r1", "gke", &e);
	struct sched_pool *p = sched_cluster_add_pool(m, c, "tpu-v5p", false, 4.0, &e);
	struct arena *a = arena_new();
	struct sched_alloc *al;
	struct sched_job *j;
	size_t i, n;

	(void)state;
	for (i = 0; i < sizeof(nodes) / sizeof(nodes[0]); i++) {
		char nid[32];

		snprintf(nid, sizeof(nid), "t%zu", i);
		assert_true(sched_pool_add_node(m, c, p, nid, NULL, nodes[i].slice, nodes[i].shape,
		    fx_vec(4, 8000, 65536), fx_vec(nodes[i].free, 8000, 65536), &e));
	}
	fx_queue(m, "q", NULL, 1, "tpu-v5p", 1000, U, U);
	j = fx_job(m, "j", "q", 0, FX_NOW, "tpu-v5p", 4, 4);
	j->groups[0].hosts = 4;		/* one replica of a 4-host slice */
	j->topo = SCHED_TOPO_SLICE;
	j->shape = sched_model_intern(m, "2x2x4");
	fx_finalize(m);
	assert_int_equal(sched_pack(m, j, c, a, &al, &n), SCHED_R_CHOSEN);
	assert_int_equal(n, 4);
	for (i = 0; i < n; i++)
		assert_string_equal(sched_model_name(m, c->nodes[al[i].node].slice), "s2");
	/* with s2 partly used, no whole slice of that shape is free */
	c->nodes[7].free.v[SCHED_ACCEL] = 0;
	sched_cluster_refresh(c);
	assert_int_equal(sched_pack(m, j, c, a, &al, &n), SCHED_R_TOPOLOGY_SPLIT);
	/* multi-slice: 2 replicas of a 4-host slice take two whole slices, one pod per host
	 * (issue 13: they were packed into one slice and never admitted) */
	c->nodes[7].free.v[SCHED_ACCEL] = 4;
	c->nodes[0].free.v[SCHED_ACCEL] = 4;
	sched_cluster_refresh(c);
	{
		struct sched_job *j2 = fx_job(m, "j2", "q", 0, FX_NOW, "tpu-v5p", 8, 4);
		int s1 = 0, s2 = 0;

		j2->groups[0].hosts = 4;
		j2->topo = SCHED_TOPO_SLICE;
		j2->shape = sched_model_intern(m, "2x2x4");
		assert_int_equal(sched_pack(m, j2, c, a, &al, &n), SCHED_R_CHOSEN);
		assert_int_equal(n, 8);
		for (i = 0; i < n; i++) {
			const char *sl = sched_model_name(m, c->nodes[al[i].node].slice);

			assert_int_equal(al[i].pods, 1);
			s1 += strcmp(sl, "s1") == 0;
			s2 += strcmp(sl, "s2") == 0;
		}
		assert_int_equal(s1, 4);
		assert_int_equal(s2, 4);
		/* one of the two slices busy: no room for the second replica */
		c->nodes[0].free.v[SCHED_ACCEL] = 0;
		sched_cluster_refresh(c);
		assert_int_not_equal(sched_pack(m, j2, c, a, &al, &n), SCHED_R_CHOSEN);
	}
	arena_free(a);
	sched_model_free(m);
}

static void
test_growth_and_inflight(void **state)
{
	struct sched_model *m = fx_model();
	struct err e = { 0 };
	struct sched_cluster *c = sched_model_add_cluster(m, "g", "prod", "r1", "gke", &e);
	struct sched_pool *p = sched_cluster_add_pool(m, c, "gpu", false, 10.0, &e);
	struct arena *a = arena_new();
	struct sched_cycle cy;
	const struct sched_decision *d;

	(void)state;
	p->node_alloc = fx_vec(8, 64000, 524288);
	p->grow_nodes = 2;
	fx_cluster(m, "c2", "r1", "gpu", 10.0, 2, 8, 0);
	fx_queue(m, "q", NULL, 1, "gpu", 1000, U, U);
	/* c2 is taken by an in-flight reservation the snapshot does not show yet */
	fx_admitted(m, "old", "q", 0, "gpu", 2, 8, "c2", 0, FX_NOW - 5);
	fx_job(m, "big", "q", 0, FX_NOW, "gpu", 2, 8);
	fx_job(m, "next", "q", 0, FX_NOW + 1, "gpu", 1, 8);
	fx_finalize(m);
	assert_int_equal(sched_model_cluster(m, 1)->pools[0].sum_free.v[SCHED_ACCEL], 0);
	sched_cycle_run(m, a, &cy);
	d = fx_decision(m, &cy, "big");
	assert_int_equal(d->outcome, SCHED_OUT_ADMIT);
	assert_string_equal(sched_model_cluster(m, (size_t)d->place->cluster)->id, "g");
	assert_true(d->place->allocs[0].grown);
	assert_int_equal(c->n_nodes, 2);
	assert_int_equal(c->pools[0].grow_nodes, 0);
	d = fx_decision(m, &cy, "next");
	assert_int_equal(d->outcome, SCHED_OUT_PENDING);
	assert_int_equal(d->reason, SCHED_R_INSUFFICIENT_CAPACITY);
	arena_free(a);
	sched_model_free(m);
}

static void
test_elastic_and_groups(void **state)
{
	struct sched_model *m = fx_model();
	struct err e = { 0 };
	struct sched_cluster *c = fx_cluster(m, "c1", "r1", "gpu", 10.0, 2, 8, 0);
	struct sched_pool *cpu = sched_cluster_add_pool(m, c, "cpu", false, 1.0, &e);
	struct arena *a = arena_new();
	struct sched_cycle cy;
	struct sched_job *j;
	const struct sched_decision *d;
	struct sched_quota quota;
	json_t *js;
	size_t i;
	int pods[2] = { 0, 0 };

	(void)state;
	assert_true(sched_pool_add_node(m, c, cpu, "cpu-0", NULL, NULL, NULL,
	    fx_vec(0, 16000, 65536), fx_vec(0, 16000, 65536), &e));
	quota = fx_quota(1000, U, U);
	assert_true(sched_queue_set_quota(m, fx_queue(m, "q", NULL, 1, "gpu", 1000, U, U), "cpu",
	    &quota, &e));
	j = sched_model_add_job(m, "ray", "q", 0, FX_NOW, SCHED_PENDING, &e);
	assert_true(sched_job_add_group(m, j, "cpu", 1, 1, fx_vec(0, 4000, 16384), &e));
	assert_true(sched_job_add_group(m, j, "gpu", 2, 16, fx_vec(2, 8000, 65536), &e));
	assert_false(sched_job_add_group(m, j, "gpu", 3, 2, fx_vec(1, 1, 1), &e));
	assert_string_equal(e.code, "queue.bad_replicas");
	fx_finalize(m);
	sched_cycle_run(m, a, &cy);
	d = fx_decision(m, &cy, "ray");
	assert_int_equal(d->outcome, SCHED_OUT_ADMIT);
	for (i = 0; i < d->place->n_allocs; i++)
		pods[d->place->allocs[i].group] += d->place->allocs[i].pods;
	assert_int_equal(pods[0], 1);
	assert_int_equal(pods[1], 2);	/* elastic: admitted at min */
	assert_int_equal(fx_usage(m, "q", "gpu"), 4);
	js = sched_decision_to_json(m, d);
	assert_non_null(js);
	assert_string_equal(json_string_value(json_object_get(js, "outcome")), "admitted");
	assert_string_equal(json_string_value(json_object_get(js, "cluster")), "c1");
	assert_int_equal(json_array_size(json_object_get(js, "allocations")), d->place->n_allocs);
	json_decref(js);
	js = sched_explain_job(m, j);
	assert_string_equal(json_string_value(json_object_get(js, "state")), "admitted");
	json_decref(js);
	arena_free(a);
	sched_model_free(m);
}

/* Two jobs that each fit alone but not together: one cycle admits one. */
static void
test_no_double_count(void **state)
{
	struct sched_model *m = fx_model();
	struct arena *a = arena_new();
	struct sched_cycle cy;
	json_t *js;

	(void)state;
	fx_cluster(m, "c1", "r1", "gpu", 10.0, 4, 8, 0);
	fx_queue(m, "q", NULL, 1, "gpu", 1000, U, U);
	fx_job(m, "a", "q", 0, FX_NOW - 2, "gpu", 3, 8);
	fx_job(m, "b", "q", 0, FX_NOW - 1, "gpu", 3, 8);
	fx_finalize(m);
	sched_cycle_run(m, a, &cy);
	assert_int_equal(cy.admitted, 1);
	assert_int_equal(fx_decision(m, &cy, "a")->outcome, SCHED_OUT_ADMIT);
	assert_int_equal(fx_decision(m, &cy, "b")->reason, SCHED_R_INSUFFICIENT_CAPACITY);
	assert_int_equal(fx_decision(m, &cy, "b")->position, 1);
	js = sched_decision_to_json(m, fx_decision(m, &cy, "b"));
	assert_string_equal(json_string_value(json_object_get(js, "reason")),
	    "insufficient_capacity");
	assert_int_equal(json_integer_value(json_object_get(json_object_get(js, "rejections"),
	    "insufficient_capacity")), 1);
	json_decref(js);
	arena_free(a);
	sched_model_free(m);
}

/* Head pool choice (issue 13), one row per cluster shape: the head goes to an on-demand
 * cpu pool whose node holds it, whatever the job's spot constraint; a cluster without one
 * is refused as no_head_pool. */
static void
test_head_pool(void **state)
{
	static const struct {
		const char	*name;
		bool		 cpu_pool, cpu_spot;
		int64_t		 cpu_node_m;	/* allocatable cpu of the cpu pool's node */
		int64_t		 head_m;
		enum sched_reason want;
	} rows[] = {
		{ "dedicated on-demand pool", true, false, 16000, 4000, SCHED_R_CHOSEN },
		{ "only a spot cpu pool", true, true, 16000, 4000, SCHED_R_NO_HEAD_POOL },
		{ "no cpu pool at all", false, false, 0, 4000, SCHED_R_NO_HEAD_POOL },
		{ "system pool too small", true, false, 8000, 12000, SCHED_R_NO_HEAD_POOL },
		{ "system pool big enough", true, false, 8000, 4000, SCHED_R_CHOSEN },
	};
	struct arena *a = arena_new();

	(void)state;
	for (size_t r = 0; r < sizeof(rows) / sizeof(rows[0]); r++) {
		struct sched_model *m = fx_model();
		struct sched_cluster *c = fx_cluster(m, "c1", "r1", "gpu", 10.0, 2, 8, 0);
		struct err e = { 0 };
		struct sched_job *j;
		struct sched_placement pl;

		if (rows[r].cpu_pool) {
			struct sched_pool *p = sched_cluster_add_pool(m, c, "cpu", rows[r].cpu_spot,
			    0.4, &e);

			assert_true(sched_pool_add_node(m, c, p, "cpu-0", NULL, NULL, NULL,
			    fx_vec(0, rows[r].cpu_node_m, 65536), fx_vec(0, rows[r].cpu_node_m, 65536),
			    &e));
		}
		fx_queue(m, "q", NULL, 1, "gpu", 1000, U, U);
		j = sched_model_add_job(m, "j", "q", 0, FX_NOW, SCHED_PENDING, &e);
		assert_true(sched_job_add_group(m, j, "cpu", 1, 1, fx_vec(0, rows[r].head_m, 8192),
		    &e));
		j->groups[0].head = true;
		assert_true(sched_job_add_group(m, j, "gpu", 2, 2, fx_vec(8, 1000, 1024), &e));
		j->spot = SCHED_SPOT_ANY;
		fx_finalize(m);
		assert_true(sched_place(m, j, SCHED_R_CHOSEN, a, &pl) == (rows[r].want ==
		    SCHED_R_CHOSEN));
		if (rows[r].want != SCHED_R_CHOSEN) {
			if (pl.reason != rows[r].want)
				fail_msg("%s: reason %s", rows[r].name, sched_reason_code(pl.reason));
		} else {
			/* the head's cpu is taken on the cpu pool's node */
			bool head = false;

			for (size_t i = 0; i < pl.n_allocs; i++)
				if (pl.allocs[i].group == 0) {
					assert_int_equal(c->pools[pl.allocs[i].pool].flavor,
					    c->pools[1].flavor);
					head = true;
				}
			assert_true(head);
		}
		sched_model_free(m);
	}
	arena_free(a);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_filter_reasons),
		cmocka_unit_test(test_scoring),
		cmocka_unit_test(test_topology),
		cmocka_unit_test(test_slice),
		cmocka_unit_test(test_head_pool),
		cmocka_unit_test(test_growth_and_inflight),
		cmocka_unit_test(test_elastic_and_groups),
		cmocka_unit_test(test_no_double_count),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
