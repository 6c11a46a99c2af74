/* test_pack_topology: topology pack and rack over the hierarchy host < rack (NVLink
 * domain) < scale unit (InfiniBand block), as each provider's fleet has it: GB200 NVL72
 * racks (18 trays x 4 GPUs, two scale units of 4 racks), H100 hosts (8 GPUs, racks of 4
 * hosts), TPU v6e slices (GKE only, whole slices: test_tpu_v6e), TPU7x sub-slices carved out
 * of dynamic-slicing sub-blocks (test_tpu7x_subslice).  A table: fits one rack, spans N racks of one scale
 * unit (never two units), does not fit a scale unit; then the choice among racks (whole
 * racks for a multi-rack gang, best fit for a one-rack gang) and the scattered count. */
#include "sched_fixture.h"

#define U SCHED_UNSET

/* One pool of units x racks x nodes_per_rack nodes of per accelerators. */
static struct sched_cluster *
hier_cluster(struct sched_model *m, const char *id, const char *provider, const char *flavor,
	     int units, int racks, int nodes_per_rack, int64_t per)
{
	struct err e = { 0 };
	struct sched_cluster *c = sched_model_add_cluster(m, id, "prod", "r1", provider, &e);
	struct sched_pool *p = sched_cluster_add_pool(m, c, flavor, false, 10.0, &e);

	assert_non_null(p);
	for (int u = 0; u < units; u++)
		for (int r = 0; r < racks; r++)
			for (int n = 0; n < nodes_per_rack; n++) {
				char nid[64], rack[64], block[64];

				snprintf(nid, sizeof(nid), "%s-u%d-r%d-n%d", id, u, r, n);
				snprintf(rack, sizeof(rack), "%s-u%d-r%d", id, u, r);
				snprintf(block, sizeof(block), "%s-u%d", id, u);
				assert_true(sched_pool_add_node(m, c, p, nid, rack, NULL, NULL,
				    fx_vec(per, 140000, 884 * 1024), fx_vec(per, 140000, 884 * 1024),
				    &e));
				sched_node_set_block(m, c, block);
			}
	return c;
}

struct row {
	const char	*provider, *flavor;
	int		 per_node, nodes_per_rack;
	enum sched_topo	 topo;
	int		 pods;		/* pods of per_node accelerators each (one per node) */
	const char	*want;		/* reason code */
	int		 racks;		/* racks used when chosen */
};

static const struct row table[] = {
	/* GB200 NVL72: 72 GPUs a rack, 4 racks a scale unit (288 GPUs) */
	{ "gke", "nvidia-gb200", 4, 18, SCHED_TOPO_PACK, 18, "chosen", 1 },	/* 72 */
	{ "gke", "nvidia-gb200", 4, 18, SCHED_TOPO_PACK, 36, "chosen", 2 },	/* 144 */
	{ "gke", "nvidia-gb200", 4, 18, SCHED_TOPO_PACK, 72, "chosen", 4 },	/* 288 */
	{ "gke", "nvidia-gb200", 4, 18, SCHED_TOPO_PACK, 73, "topology_split", 0 },
	{ "gke", "nvidia-gb200", 4, 18, SCHED_TOPO_RACK, 18, "chosen", 1 },
	{ "gke", "nvidia-gb200", 4, 18, SCHED_TOPO_RACK, 36, "topology_split", 0 },
	{ "gke", "nvidia-gb200", 4, 18, SCHED_TOPO_NONE, 73, "chosen", 5 },
	{ "aks", "nvidia-gb200", 4, 18, SCHED_TOPO_PACK, 10, "chosen", 1 },
	{ "aks", "nvidia-gb200", 4, 18, SCHED_TOPO_PACK, 50, "chosen", 3 },	/* 200 */
	{ "aks", "nvidia-gb200", 4, 18, SCHED_TOPO_PACK, 100, "topology_split", 0 },
	{ "hyperpod", "nvidia-gb200", 4, 18, SCHED_TOPO_PACK, 36, "chosen", 2 },
	{ "hyperpod", "nvidia-gb200", 4, 18, SCHED_TOPO_PACK, 80, "topology_split", 0 },
	{ "hyperpod", "nvidia-gb200", 4, 18, SCHED_TOPO_RACK, 19, "topology_split", 0 },
	/* H100 hosts: 8 GPUs a host, 4 hosts a rack (32 GPUs), 4 racks a unit (128) */
	{ "gke", "nvidia-h100-80gb", 8, 4, SCHED_TOPO_PACK, 4, "chosen", 1 },
	{ "gke", "nvidia-h100-80gb", 8, 4, SCHED_TOPO_PACK, 12, "chosen", 3 },
	{ "gke", "nvidia-h100-80gb", 8, 4, SCHED_TOPO_PACK, 17, "topology_split", 0 },
	{ "aks", "nvidia-h100-80gb", 8, 4, SCHED_TOPO_PACK, 8, "chosen", 2 },
	{ "aks", "nvidia-h100-80gb", 8, 4, SCHED_TOPO_RACK, 5, "topology_split", 0 },
	{ "hyperpod", "nvidia-h100-80gb", 8, 4, SCHED_TOPO_PACK, 16, "chosen", 4 },
	{ "hyperpod", "nvidia-h100-80gb", 8, 4, SCHED_TOPO_PACK, 33, "insufficient_capacity",
	  0 },
};

static void
test_table(void **state)
{
	struct arena *a = arena_new();

	(void)state;
	for (size_t i = 0; i < sizeof(table) / sizeof(table[0]); i++) {
		const struct row *r = &table[i];
		struct sched_model *m = fx_model();
		struct sched_cluster *c = hier_cluster(m, "c1", r->provider, r->flavor, 2, 4,
		    r->nodes_per_rack, r->per_node);
		struct sched_job *j;
		struct sched_alloc *al;
		size_t n;
		enum sched_reason why;
		int blocks[8], nb = 0;

		fx_queue(m, "q", NULL, 1, r->flavor, 100000, U, U);
		j = fx_job(m, "j", "q", 0, FX_NOW, r->flavor, r->pods, r->per_node);
		j->topo = r->topo;
		fx_finalize(m);
		why = sched_pack(m, j, c, a, &al, &n);
		if (strcmp(sched_reason_code(why), r->want) != 0)
			fail_msg("row %zu (%s %s topo %d, %d pods): %s, want %s", i, r->provider,
			    r->flavor, r->topo, r->pods, sched_reason_code(why), r->want);
		if (why == SCHED_R_CHOSEN) {
			assert_int_equal(sched_racks_of(j, c, al, n), r->racks);
			for (size_t k = 0; k < n; k++) {
				int b = c->nodes[al[k].node].block, x;

				for (x = 0; x < nb && blocks[x] != b; x++)
					;
				if (x == nb)
					blocks[nb++] = b;
			}
			/* pack and rack: one scale unit */
			if (r->topo != SCHED_TOPO_NONE)
				assert_int_equal(nb, 1);
		}
		sched_model_free(m);
	}
	arena_free(a);
}

/* Marks `used` accelerators of rack (u, r) as taken by another gang. */
static void
use_rack(struct sched_cluster *c, int nodes_per_rack, int racks, int u, int r, int nodes)
{
	for (int n = 0; n < nodes; n++)
		c->nodes[(u * racks + r) * nodes_per_rack + n].free.v[SCHED_ACCEL] = 0;
	sched_cluster_refresh(c);
}

static const char *
rack_of(const struct sched_model *m, const struct sched_cluster *c, const struct sched_alloc *al)
{
	return sched_model_name(m, c->nodes[al->node].rack);
}

/* A 144-GPU gang takes two racks no other gang uses, in the unit that has them, though a
 * partly used unit has room; a 40-GPU gang takes the partly used rack that fits it best;
 * the scattered count is what topology none would use on the same free nodes. */
static void
test_choice(void **state)
{
	struct arena *a = arena_new();
	struct sched_model *m = fx_model();
	struct sched_cluster *c = hier_cluster(m, "c1", "gke", "nvidia-gb200", 2, 4, 18, 4);
	struct sched_job *big, *small;
	struct sched_alloc *al;
	struct sched_placement pl;
	size_t n;

	(void)state;
	fx_queue(m, "q", NULL, 1, "nvidia-gb200", 100000, U, U);
	big = fx_job(m, "big", "q", 0, FX_NOW, "nvidia-gb200", 36, 4);
	big->topo = SCHED_TOPO_PACK;
	small = fx_job(m, "small", "q", 0, FX_NOW + 1, "nvidia-gb200", 10, 4);
	small->topo = SCHED_TOPO_PACK;
	fx_finalize(m);
	/* unit 0: every rack partly used (4 trays each); unit 1: racks 0, 1 partly used
	 * (12 and 4 trays), racks 2, 3 whole */
	for (int r = 0; r < 4; r++)
		use_rack(c, 18, 4, 0, r, 4);
	use_rack(c, 18, 4, 1, 0, 12);
	use_rack(c, 18, 4, 1, 1, 4);
	assert_int_equal(sched_pack(m, big, c, a, &al, &n), SCHED_R_CHOSEN);
	assert_int_equal(sched_racks_of(big, c, al, n), 2);
	for (size_t k = 0; k < n; k++)
		assert_true(strcmp(rack_of(m, c, &al[k]), "c1-u1-r2") == 0 ||
		    strcmp(rack_of(m, c, &al[k]), "c1-u1-r3") == 0);
	/* 10 trays: the rack with 6 free is too small, a partly used one with 14 free fits
	 * best; the whole racks stay whole */
	assert_int_equal(sched_pack(m, small, c, a, &al, &n), SCHED_R_CHOSEN);
	assert_int_equal(sched_racks_of(small, c, al, n), 1);
	assert_string_not_equal(rack_of(m, c, &al[0]), "c1-u1-r0");
	assert_string_not_equal(rack_of(m, c, &al[0]), "c1-u1-r2");
	assert_string_not_equal(rack_of(m, c, &al[0]), "c1-u1-r3");
	/* the placement compares with a scattered one: best fit by node spreads the 36 trays
	 * over the partly used racks first */
	assert_true(sched_place(m, big, SCHED_R_CHOSEN, a, &pl));
	assert_int_equal(pl.racks_used, 2);
	assert_true(pl.racks_scattered >= 2);
	sched_model_free(m);
	arena_free(a);
}

/* A one-rack gang of topology rack and the same of pack agree; a gang larger than any
 * scale unit is refused with topology_split, not scattered over two units. */
static void
test_units_never_mix(void **state)
{
	struct arena *a = arena_new();
	struct sched_model *m = fx_model();
	struct sched_cluster *c = hier_cluster(m, "c1", "hyperpod", "nvidia-gb200", 3, 2, 18, 4);
	struct sched_job *j;
	struct sched_alloc *al;
	size_t n;

	(void)state;
	fx_queue(m, "q", NULL, 1, "nvidia-gb200", 100000, U, U);
	j = fx_job(m, "j", "q", 0, FX_NOW, "nvidia-gb200", 36, 4);
	j->topo = SCHED_TOPO_PACK;
	fx_finalize(m);
	/* unit 0 and 1 each lose half a rack: 108 GPUs free in each, 144 in unit 2 */
	use_rack(c, 18, 2, 0, 0, 9);
	use_rack(c, 18, 2, 1, 1, 9);
	assert_int_equal(sched_pack(m, j, c, a, &al, &n), SCHED_R_CHOSEN);
	for (size_t k = 0; k < n; k++)
		assert_string_equal(sched_model_name(m, c->nodes[al[k].node].block), "c1-u2");
	use_rack(c, 18, 2, 2, 0, 1);	/* now no unit holds 144 */
	assert_int_equal(sched_pack(m, j, c, a, &al, &n), SCHED_R_TOPOLOGY_SPLIT);
	sched_model_free(m);
	arena_free(a);
}

/* TPU v6e (GKE only): slices of a 2x4 topology (2 hosts of 4 chips), 4 slices in one
 * block: a slice job takes whole slices, one pod per host; one replica fits one slice, three
 * take three, five do not fit (the chips are not there); three do not fit two whole slices
 * and two partly used ones (topology_split: the chips are there). */
static void
test_tpu_v6e(void **state)
{
	static const struct { int replicas, partly_used; const char *want; } rows[] = {
		{ 1, 0, "chosen" }, { 3, 0, "chosen" }, { 5, 0, "insufficient_capacity" },
		{ 3, 2, "topology_split" },	/* 6 free hosts, 2 whole slices */
	};
	struct arena *a = arena_new();

	(void)state;
	for (size_t r = 0; r < sizeof(rows) / sizeof(rows[0]); r++) {
		struct sched_model *m = fx_model();
		struct err e = { 0 };
		struct sched_cluster *c = sched_model_add_cluster(m, "v6e", "prod", "r1", "gke", &e);
		struct sched_pool *p = sched_cluster_add_pool(m, c, "tpu-v6e", false, 10.8, &e);
		struct sched_alloc *al;
		struct sched_job *j;
		size_t n;

		for (int sl = 0; sl < 4; sl++)
			for (int h = 0; h < 2; h++) {
				char nid[32], slice[16];

				snprintf(nid, sizeof(nid), "v6e-s%d-h%d", sl, h);
				snprintf(slice, sizeof(slice), "s%d", sl);
				assert_true(sched_pool_add_node(m, c, p, nid, "sub-0", slice, "2x4",
				    fx_vec(4, 180000, 720 * 1024), fx_vec(h == 0 && sl <
				    rows[r].partly_used ? 2 : 4, 180000, 720 * 1024), &e));
				sched_node_set_block(m, c, "block-0");
			}
		fx_queue(m, "q", NULL, 1, "tpu-v6e", 1000, U, U);
		j = fx_job(m, "j", "q", 0, FX_NOW, "tpu-v6e", rows[r].replicas * 2, 4);
		j->groups[0].hosts = 2;
		j->topo = SCHED_TOPO_SLICE;
		j->shape = sched_model_intern(m, "2x4");
		fx_finalize(m);
		assert_string_equal(sched_reason_code(sched_pack(m, j, c, a, &al, &n)), rows[r].want);
		if (strcmp(rows[r].want, "chosen") == 0) {
			assert_int_equal(n, (size_t)rows[r].replicas * 2);
			for (size_t k = 0; k < n; k++)
				assert_int_equal(al[k].pods, 1);
		}
		sched_model_free(m);
	}
	arena_free(a);
}

/* GKE dynamic slicing (issue 26): two TPU7x sub-blocks of 16 hosts (4x4x4 chips), each
 * host labelled with its partition of every shape as GKE labels them (cloudsim/tpuslice.c
 * nests them the same way).  A slice job of a sub-slice shape is carved out of a free
 * partition of its shape; sub-blocks another job already uses are carved first, so a
 * whole-sub-block job still finds one whole; a partition with a busy host is not free. */
static struct sched_cluster *
dyn_cluster(struct sched_model *m, int subs, const int *busy)
{
	static const char *const shapes[] = { "2x2x1", "2x2x2", "2x2x4", "2x4x4", "4x4x4" };
	struct err e = { 0 };
	struct sched_cluster *c = sched_model_add_cluster(m, "tpu7x", "prod", "r1", "gke", &e);
	struct sched_pool *p = sched_cluster_add_pool(m, c, "tpu-v7x", false, 12.0, &e);

	assert_non_null(p);
	for (int sb = 0; sb < subs; sb++)
		for (int q = 0; q < 16; q++) {
			int hx = q % 2, hy = q / 2 % 2, hz = q / 4;
			int idx[5] = { q, hx + 2 * hy + 4 * (hz / 2), hx + 2 * hy, hx, 0 };
			bool b = false;
			char nid[32];

			for (const int *x = busy; x != NULL && *x >= 0; x++)
				b |= *x == sb * 16 + q;
			snprintf(nid, sizeof(nid), "sb%d-h%d", sb, q);
			assert_true(sched_pool_add_node(m, c, p, nid, NULL, NULL, NULL,
			    fx_vec(4, 200000, 900 * 1024), fx_vec(b ? 0 : 4, 200000, 900 * 1024), &e));
			for (int k = 0; k < 5; k++) {
				char id[32];

				snprintf(id, sizeof(id), "sb%d-%s-%d", sb, shapes[k], idx[k]);
				sched_node_set_partition(m, c, k, id);
			}
		}
	return c;
}

static void
test_tpu7x_subslice(void **state)
{
	static const int none[] = { -1 }, sb0_used[] = { 5, -1 }, both_used[] = { 5, 21, -1 };
	static const struct {
		const char	*shape;
		int		 hosts, replicas;
		const int	*busy;
		const char	*want;
		const char	*sub;		/* the sub-block every pod lands in; NULL any */
	} rows[] = {
		{ "2x2x1", 1, 1, none, "chosen", NULL },
		{ "2x2x2", 2, 1, none, "chosen", NULL },
		{ "2x2x4", 4, 3, none, "chosen", NULL },
		{ "2x4x4", 8, 2, none, "chosen", NULL },
		{ "4x4x4", 16, 2, none, "chosen", NULL },
		{ "4x4x4", 16, 3, none, "insufficient_capacity", NULL },
		/* sub-block 0 partly used: a sub-slice is carved there, sub-block 1 stays whole */
		{ "2x2x2", 2, 1, sb0_used, "chosen", "sb0-" },
		{ "2x4x4", 8, 1, sb0_used, "chosen", "sb0-" },
		{ "4x4x4", 16, 1, sb0_used, "chosen", "sb1-" },
		/* a busy host in each: the chips are there, no whole 4x4x4 partition is */
		{ "4x4x4", 16, 1, both_used, "topology_split", NULL },
		/* 2x4x4: each sub-block has one whole half left */
		{ "2x4x4", 8, 2, both_used, "chosen", NULL },
		{ "2x4x4", 8, 3, both_used, "topology_split", NULL },
	};
	struct arena *a = arena_new();

	(void)state;
	for (size_t r = 0; r < sizeof(rows) / sizeof(rows[0]); r++) {
		struct sched_model *m = fx_model();
		struct sched_cluster *c = dyn_cluster(m, 2, rows[r].busy);
		struct sched_alloc *al;
		struct sched_job *j;
		size_t n;
		int k;

		fx_queue(m, "q", NULL, 1, "tpu-v7x", 1000, U, U);
		j = fx_job(m, "j", "q", 0, FX_NOW, "tpu-v7x", rows[r].replicas * rows[r].hosts, 4);
		j->groups[0].hosts = rows[r].hosts;
		j->topo = SCHED_TOPO_SLICE;
		j->shape = sched_model_intern(m, rows[r].shape);
		fx_finalize(m);
		k = sched_tpu_part_of(m, j->shape);
		assert_true(k >= 0);
		if (strcmp(sched_reason_code(sched_pack(m, j, c, a, &al, &n)), rows[r].want) != 0)
			fail_msg("row %zu (%s x%d): %s", r, rows[r].shape, rows[r].replicas,
			    sched_reason_code(sched_pack(m, j, c, a, &al, &n)));
		if (strcmp(rows[r].want, "chosen") == 0) {
			const char *seen[8] = { NULL };
			int ns = 0;

			assert_int_equal(n, (size_t)(rows[r].replicas * rows[r].hosts));
			for (size_t i = 0; i < n; i++) {
				const struct sched_node *nd = &c->nodes[al[i].node];
				const char *id = sched_model_name(m, nd->part[k]);
				int x;

				assert_int_equal(al[i].pods, 1);	/* one pod per host */
				assert_int_equal(nd->free.v[SCHED_ACCEL], 4);	/* never a busy one */
				if (rows[r].sub != NULL)
					assert_memory_equal(nd->id, rows[r].sub, 4);
				for (x = 0; x < ns && strcmp(seen[x], id) != 0; x++)
					;
				if (x == ns && ns < 8)
					seen[ns++] = id;
			}
			/* each replica one whole partition of the shape */
			assert_int_equal(ns, rows[r].replicas);
			assert_int_equal(sched_slice_part_of(m, j, c, al, n), k + 1);
		}
		sched_model_free(m);
	}
	arena_free(a);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_table),
		cmocka_unit_test(test_choice),
		cmocka_unit_test(test_units_never_mix),
		cmocka_unit_test(test_tpu_v6e),
		cmocka_unit_test(test_tpu7x_subslice),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
