/* test_capacity_rank: the capacity search without a database — request validation with
 * pointers, every rejection reason, rack / host / slice fit, ranking and the environment
 * ceiling; and the poller's merge of provider pools with Kubernetes nodes into rows. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "regions/capacity_int.h"
#include "regions/poller_int.h"

static void
test_request_errors(void **state)
{
	static const struct { const char *body, *code, *ptr; } t[] = {
		{ "{\"environment\":\"p\",\"flavor\":\"nvidia-h200\",\"count\":8}",
		  "catalog.unknown_flavor", "/flavor" },
		{ "{\"environment\":\"p\",\"flavor\":\"nvidia-h100-80gb\",\"count\":0}",
		  "capacity.bad_count", "/count" },
		{ "{\"environment\":\"p\",\"flavor\":\"nvidia-h100-80gb\",\"count\":-3}",
		  "capacity.bad_count", "/count" },
		{ "{\"environment\":\"p\",\"flavor\":\"nvidia-h100-80gb\"}", NULL, "/count" },
		{ "{\"environment\":\"p\",\"flavor\":\"tpu-v5p\",\"count\":8,\"topology\":\"slice\"}",
		  "capacity.bad_slice", "/slice_topology" },
		{ "{\"environment\":\"p\",\"flavor\":\"tpu-v5p\",\"count\":8,\"topology\":\"slice\","
		  "\"slice_topology\":\"3x3x3\"}", "catalog.bad_slice", "/slice_topology" },
		{ "{\"environment\":\"p\",\"flavor\":\"nvidia-h100-80gb\",\"count\":8,\"topology\":"
		  "\"slice\",\"slice_topology\":\"2x2x2\"}", "catalog.bad_slice", "/slice_topology" },
		{ "{\"environment\":\"p\",\"flavor\":\"tpu-v5p\",\"count\":4,\"topology\":\"slice\","
		  "\"slice_topology\":\"2x2x2\"}", "capacity.bad_count", "/count" },
		{ "{\"environment\":\"p\",\"flavor\":\"nvidia-h100-80gb\",\"count\":8,\"topology\":"
		  "\"zone\"}", "capacity.bad_topology", "/topology" },
		{ "{\"environment\":\"p\",\"flavor\":\"nvidia-h100-80gb\",\"count\":8,\"regions\":"
		  "[\"us-central1\",\"mars-1\"]}", "capacity.unknown_region", "/regions/1" },
		{ "{\"environment\":\"p\",\"flavor\":\"nvidia-h100-80gb\",\"count\":8,\"providers\":"
		  "[\"eks\"]}", "capacity.unknown_provider", "/providers/0" },
		{ "{\"environment\":\"p\",\"flavor\":\"nvidia-h100-80gb\",\"count\":8,\"colour\":1}",
		  "api.unknown_field", "/colour" },
		{ "{\"environment\":\"p\",\"flavor\":\"nvidia-h100-80gb\",\"count\":8,\"per_node\":9}",
		  "capacity.bad_per_node", "/per_node" },
		{ "{\"environment\":\"p\",\"flavor\":\"nvidia-h100-80gb\",\"count\":8,\"max_price\":0}",
		  "capacity.bad_max_price", "/max_price" },
	};
	struct capacity_req q;

	(void)state;
	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		json_t *b = json_loads(t[i].body, 0, NULL);
		struct err e = { 0 };

		assert_non_null(b);
		if (capacity_request_parse(b, &q, &e))
			fail_msg("accepted %s", t[i].body);
		assert_int_equal(e.status, 400);
		if (t[i].code != NULL && strcmp(e.code, t[i].code) != 0)
			fail_msg("%s: code %s", t[i].body, e.code);
		assert_string_equal(e.pointer, t[i].ptr);
		if (strcmp(t[i].ptr, "/flavor") == 0)
			assert_non_null(strstr(e.detail, "nvidia-h100-80gb"));	/* lists known */
		json_decref(b);
	}
}

/* Nodes "name:rack:slice:free[:ready]" into a topology object. */
static json_t *
topo(const char *tpu, const char *spec)
{
	json_t *nodes = json_array(), *t;
	char *dup = strdup(spec), *save = NULL, *tok;

	for (tok = strtok_r(dup, " ", &save); tok; tok = strtok_r(NULL, " ", &save)) {
		char name[32], rack[32], slice[32];
		int free = 0, ready = 1;

		sscanf(tok, "%31[^:]:%31[^:]:%31[^:]:%d:%d", name, rack, slice, &free, &ready);
		json_array_append_new(nodes, json_pack("{s:s, s:s, s:s, s:i, s:i, s:i, s:b}",
		    "name", name, "rack", rack, "slice", strcmp(slice, "-") ? slice : "",
		    "free_accel", free, "free_cpu_m", 1000, "free_mem", 1000, "ready", ready));
	}
	free(dup);
	t = json_pack("{s:o}", "nodes", nodes);
	if (tpu != NULL)
		json_object_set_new(t, "tpu_topology", json_string(tpu));
	return t;
}

static struct cap_row
mkrow(const char *pool, const char *flavor, bool spot, double price, int apn, int nodes,
    int max, int quota, int free, json_t *t)
{
	struct cap_row r;

	memset(&r, 0, sizeof(r));
	snprintf(r.pool, sizeof(r.pool), "%s", pool);
	snprintf(r.flavor, sizeof(r.flavor), "%s", flavor);
	snprintf(r.machine_type, sizeof(r.machine_type), "m-%s", pool);
	r.spot = spot;
	r.price_hour = price;
	r.accel_per_node = apn;
	r.nodes = nodes;
	r.max_nodes = max;
	r.autoscaling = max > nodes;
	r.quota_left = quota;
	r.free_accel = free;
	r.topology = t;
	r.age_s = 5;
	return r;
}

#define H100 "nvidia-h100-80gb"

struct fleet {
	struct cap_cluster	c[8];
	size_t			n;
};

static void
add(struct fleet *f, const char *name, const char *region, const char *prov, int nrows, ...)
{
	struct cap_cluster *c = &f->c[f->n++];
	va_list ap;

	memset(c, 0, sizeof(*c));
	snprintf(c->id, sizeof(c->id), "id-%s", name);
	snprintf(c->name, sizeof(c->name), "%s", name);
	snprintf(c->region, sizeof(c->region), "%s", region);
	snprintf(c->provider, sizeof(c->provider), "%s", prov);
	c->rows = calloc((size_t)(nrows ? nrows : 1), sizeof(*c->rows));
	c->nrows = (size_t)nrows;
	va_start(ap, nrows);
	for (int i = 0; i < nrows; i++)
		c->rows[i] = va_arg(ap, struct cap_row);
	va_end(ap);
}

static void
fleet_free(struct fleet *f)
{
	for (size_t i = 0; i < f->n; i++) {
		for (size_t k = 0; k < f->c[i].nrows; k++)
			json_decref(f->c[i].rows[k].topology);
		free(f->c[i].rows);
	}
}

static void
build(struct fleet *f)
{
	memset(f, 0, sizeof(*f));
	/* a: 16 free in rack r1, cheap */
	add(f, "a", "us-central1", "gke", 1, mkrow("h100", H100, false, 80, 8, 3, 3, 100, 16,
	    topo(NULL, "n1:r1:-:8 n2:r1:-:8 n3:r2:-:0")));
	/* b: 16 free but split over two racks */
	add(f, "b", "eastus", "aks", 1, mkrow("h100", H100, false, 64, 8, 2, 2, -1, 16,
	    topo(NULL, "n1:r1:-:8 n2:r2:-:8")));
	/* c: only A100 */
	add(f, "c", "us-west-2", "hyperpod", 1, mkrow("a100", "nvidia-a100-80gb", false, 40, 8,
	    2, 2, -1, 16, topo(NULL, "n1:r1:-:8 n2:r1:-:8")));
	/* d: empty now, can grow but quota stops it */
	add(f, "d", "us-east4", "gke", 1, mkrow("h100", H100, false, 70, 8, 1, 4, 8, 0,
	    topo(NULL, "n1:r1:-:0")));
	/* e: spot only, 16 free in one rack, cheapest */
	add(f, "e", "us-central1", "gke", 1, mkrow("h100s", H100, true, 24, 8, 2, 2, -1, 16,
	    topo(NULL, "n1:r1:-:8 n2:r1:-:8")));
	add(f, "u", "us-central1", "gke", 1, mkrow("h100", H100, false, 80, 8, 2, 2, -1, 16,
	    topo(NULL, "n1:r1:-:8 n2:r1:-:8")));
	f->c[f->n - 1].unreachable = true;
	add(f, "k", "us-central1", "gke", 1, mkrow("h100", H100, false, 80, 8, 2, 2, -1, 16,
	    topo(NULL, "n1:r1:-:8 n2:r1:-:8")));
	f->c[f->n - 1].cordoned = true;
	add(f, "s", "us-central1", "gke", 1, mkrow("h100", H100, false, 80, 8, 2, 2, -1, 16,
	    topo(NULL, "n1:r1:-:8 n2:r1:-:8")));
	f->c[f->n - 1].rows[0].age_s = 1000;
}

static const char *
reason_of(json_t *ans, const char *cluster)
{
	json_t *r;
	size_t i;

	json_array_foreach(json_object_get(ans, "rejected"), i, r)
		if (strcmp(json_string_value(json_object_get(r, "cluster")), cluster) == 0)
			return json_string_value(json_object_get(r, "reason"));
	return NULL;
}

static json_t *
search(struct fleet *f, const char *body)
{
	json_t *b = json_loads(body, 0, NULL), *ans;
	struct capacity_req q;
	struct err e = { 0 };

	if (!capacity_request_parse(b, &q, &e))
		fail_msg("%s: %s %s", body, e.code, e.msg);
	q.max_age_s = 120;
	ans = capacity_rank(&q, f->c, f->n);
	json_decref(b);
	return ans;
}

static void
test_rack_search(void **state)
{
	struct fleet f;
	json_t *ans, *c0;

	(void)state;
	build(&f);
	ans = search(&f, "{\"environment\":\"prod\",\"flavor\":\"" H100 "\",\"count\":16,"
	    "\"topology\":\"rack\",\"spot\":false}");
	assert_int_equal(json_array_size(json_object_get(ans, "candidates")), 1);
	c0 = json_array_get(json_object_get(ans, "candidates"), 0);
	assert_string_equal(json_string_value(json_object_get(c0, "cluster")), "a");
	assert_string_equal(json_string_value(json_object_get(c0, "rack")), "r1");
	assert_string_equal(json_string_value(json_object_get(c0, "fit")), "now");
	assert_non_null(strstr(json_string_value(json_object_get(c0, "why")), "rack r1"));
	assert_string_equal(reason_of(ans, "b"), "topology_split");
	assert_string_equal(reason_of(ans, "c"), "wrong_flavor");
	assert_string_equal(reason_of(ans, "d"), "over_quota");
	assert_string_equal(reason_of(ans, "e"), "spot_mismatch");
	assert_string_equal(reason_of(ans, "u"), "unreachable");
	assert_string_equal(reason_of(ans, "k"), "cordoned");
	assert_string_equal(reason_of(ans, "s"), "stale");
	/* every cluster is either a candidate or rejected with a reason */
	assert_int_equal(json_array_size(json_object_get(ans, "rejected")) + 1, f.n);
	assert_false(json_is_true(json_object_get(ans, "exceeds_environment")));
	json_decref(ans);

	/* no topology, spot allowed: e (cheapest) first, then b (cheaper than a) then a */
	ans = search(&f, "{\"environment\":\"prod\",\"flavor\":\"" H100 "\",\"count\":16}");
	c0 = json_object_get(ans, "candidates");
	assert_int_equal(json_array_size(c0), 3);
	assert_string_equal(json_string_value(json_object_get(json_array_get(c0, 0), "cluster")),
	    "e");
	assert_string_equal(json_string_value(json_object_get(json_array_get(c0, 1), "cluster")),
	    "b");
	assert_non_null(strstr(json_string_value(json_object_get(json_array_get(c0, 1), "why")),
	    "higher price"));
	json_decref(ans);

	/* filters and price */
	ans = search(&f, "{\"environment\":\"prod\",\"flavor\":\"" H100 "\",\"count\":8,"
	    "\"regions\":[\"us-central1\"],\"providers\":[\"gke\"],\"max_price\":5}");
	assert_string_equal(reason_of(ans, "b"), "region_not_allowed");
	assert_string_equal(reason_of(ans, "a"), "over_price");
	assert_int_equal(json_array_size(json_object_get(ans, "candidates")), 1);	/* e: $3 */
	json_decref(ans);
	ans = search(&f, "{\"environment\":\"prod\",\"flavor\":\"" H100 "\",\"count\":8,"
	    "\"providers\":[\"aks\"]}");
	assert_string_equal(reason_of(ans, "a"), "provider_not_allowed");
	json_decref(ans);
	fleet_free(&f);
}

static void
test_host_growth_and_ceiling(void **state)
{
	struct fleet f;
	json_t *ans, *c;

	(void)state;
	build(&f);
	/* 8 on one host: a's n1 fits exactly */
	ans = search(&f, "{\"environment\":\"prod\",\"flavor\":\"" H100 "\",\"count\":8,"
	    "\"topology\":\"host\",\"spot\":false}");
	c = json_array_get(json_object_get(ans, "candidates"), 0);
	assert_non_null(json_object_get(c, "node"));
	assert_string_equal(json_string_value(json_object_get(c, "fit")), "now");
	json_decref(ans);
	/* 24 anywhere: nobody has it free; nobody can grow enough (d's quota) */
	ans = search(&f, "{\"environment\":\"prod\",\"flavor\":\"" H100 "\",\"count\":24,"
	    "\"spot\":false}");
	assert_string_equal(reason_of(ans, "a"), "insufficient_capacity");
	assert_int_equal(json_array_size(json_object_get(ans, "candidates")), 0);
	assert_non_null(json_object_get(ans, "message"));
	json_decref(ans);
	/* d can grow by its quota (8): 8 fits after scale-up there */
	f.c[0].cordoned = f.c[1].cordoned = f.c[4].cordoned = true;
	ans = search(&f, "{\"environment\":\"prod\",\"flavor\":\"" H100 "\",\"count\":8}");
	c = json_array_get(json_object_get(ans, "candidates"), 0);
	assert_string_equal(json_string_value(json_object_get(c, "cluster")), "d");
	assert_string_equal(json_string_value(json_object_get(c, "fit")), "after_scale_up");
	json_decref(ans);
	/* more than the whole environment could ever hold */
	ans = search(&f, "{\"environment\":\"prod\",\"flavor\":\"" H100 "\",\"count\":5000}");
	assert_true(json_is_true(json_object_get(ans, "exceeds_environment")));
	assert_non_null(strstr(json_string_value(json_object_get(ans, "message")),
	    "can never hold 5000"));
	json_decref(ans);
	fleet_free(&f);
}

static void
test_slice(void **state)
{
	struct fleet f;
	json_t *ans, *c;

	(void)state;
	memset(&f, 0, sizeof(f));
	/* two 2x2x2 slices (2 hosts each): s1 has a busy host, s2 is free */
	add(&f, "t", "us-central1", "gke", 1, mkrow("v5p", "tpu-v5p", false, 16.8, 4, 4, 4, -1,
	    12, topo("2x2x2", "h1:r:s1:4 h2:r:s1:0 h3:r:s2:4 h4:r:s2:4")));
	add(&f, "t4", "us-east5", "gke", 1, mkrow("v5p", "tpu-v5p", false, 16.8, 4, 4, 4, -1,
	    16, topo("2x2x4", "h1:r:p:4 h2:r:p:4 h3:r:p:4 h4:r:p:4")));
	ans = search(&f, "{\"environment\":\"prod\",\"flavor\":\"tpu-v5p\",\"count\":8,"
	    "\"topology\":\"slice\",\"slice_topology\":\"2x2x2\"}");
	c = json_array_get(json_object_get(ans, "candidates"), 0);
	assert_string_equal(json_string_value(json_object_get(c, "cluster")), "t");
	assert_string_equal(json_string_value(json_object_get(c, "slice")), "s2");
	assert_string_equal(reason_of(ans, "t4"), "topology_split");
	json_decref(ans);
	f.c[0].rows[0].topology = (json_decref(f.c[0].rows[0].topology),
	    topo("2x2x2", "h1:r:s1:4 h2:r:s1:0 h3:r:s2:4 h4:r:s2:4:0"));
	ans = search(&f, "{\"environment\":\"prod\",\"flavor\":\"tpu-v5p\",\"count\":8,"
	    "\"topology\":\"slice\",\"slice_topology\":\"2x2x2\"}");
	assert_int_equal(json_array_size(json_object_get(ans, "candidates")), 0);
	assert_string_equal(reason_of(ans, "t"), "topology_split");	/* s2 host not ready */
	json_decref(ans);
	fleet_free(&f);
}

static void
test_poller_rows(void **state)
{
	struct prov_pools p;
	struct kube_capacity k;
	struct prov_pool *pool;
	json_t *rows, *r;

	(void)state;
	prov_pools_init(&p);
	pool = prov_pools_add(&p);
	snprintf(pool->name, sizeof(pool->name), "h100");
	snprintf(pool->machine_type, sizeof(pool->machine_type), "a3-highgpu-8g");
	pool->accel_per_node = 8;
	pool->nodes = 2;
	pool->max_nodes = 4;
	pool->autoscaling = true;
	pool->quota_left = 40;
	pool->reserved = 8;
	kube_capacity_init(&k, "p", "r");
	k.v = calloc(3, sizeof(*k.v));
	k.n = 3;
	snprintf(k.v[0].name, sizeof(k.v[0].name), "n1");
	snprintf(k.v[0].pool, sizeof(k.v[0].pool), "h100");
	snprintf(k.v[0].rack, sizeof(k.v[0].rack), "r1");
	k.v[0].alloc_accel = 8;
	k.v[0].used_accel = 3;
	k.v[0].alloc_cpu_m = 1000;
	k.v[0].ready = true;
	k.v[1] = k.v[0];
	snprintf(k.v[1].name, sizeof(k.v[1].name), "n2");
	k.v[1].ready = false;	/* its free capacity does not count */
	snprintf(k.v[2].name, sizeof(k.v[2].name), "c1");
	snprintf(k.v[2].pool, sizeof(k.v[2].pool), "system");
	snprintf(k.v[2].instance_type, sizeof(k.v[2].instance_type), "e2-standard-8");
	k.v[2].alloc_cpu_m = 7500;
	k.v[2].ready = true;
	rows = poller_rows("gke", &p, &k);
	assert_int_equal(json_array_size(rows), 2);
	r = json_array_get(rows, 0);
	assert_string_equal(json_string_value(json_object_get(r, "flavor")), H100);
	assert_int_equal(json_integer_value(json_object_get(r, "free_accel")), 5);
	assert_int_equal(json_integer_value(json_object_get(r, "nodes")), 2);
	assert_int_equal(json_integer_value(json_object_get(r, "max_nodes")), 4);
	assert_int_equal(json_integer_value(json_object_get(r, "quota_left")), 40);
	assert_true(json_real_value(json_object_get(r, "price_hour")) > 10);
	assert_int_equal(json_array_size(json_object_get(json_object_get(r, "topology"),
	    "nodes")), 2);
	r = json_array_get(rows, 1);
	assert_string_equal(json_string_value(json_object_get(r, "pool")), "system");
	assert_string_equal(json_string_value(json_object_get(r, "flavor")), "cpu");
	assert_true(json_is_null(json_object_get(r, "quota_left")));
	assert_int_equal(json_integer_value(json_object_get(r, "free_cpu_m")), 7500);
	json_decref(rows);
	prov_pools_cleanup(&p);
	kube_capacity_cleanup(&k);
}

/* issue 27: a flex-start pool with no node gets the shape of the node it would add, from
 * its machine type, the catalog and GKE's documented reservations; other pools and a
 * flex-start pool with a node do not. */
static void
test_flex_start_template(void **state)
{
	struct prov_pools p;
	struct kube_capacity k;
	struct prov_pool *pool;
	json_t *rows, *t, *r;
	long long mib;

	(void)state;
	prov_pools_init(&p);
	pool = prov_pools_add(&p);
	snprintf(pool->name, sizeof(pool->name), "h100-flex");
	snprintf(pool->machine_type, sizeof(pool->machine_type), "a3-highgpu-8g");
	snprintf(pool->capacity_type, sizeof(pool->capacity_type), "flex_start");
	pool->accel_per_node = 8;
	pool->max_nodes = 2;
	pool->autoscaling = true;
	pool = prov_pools_add(&p);
	snprintf(pool->name, sizeof(pool->name), "h100-od");
	snprintf(pool->machine_type, sizeof(pool->machine_type), "a3-highgpu-8g");
	pool->accel_per_node = 8;
	pool->max_nodes = 2;
	pool->autoscaling = true;
	kube_capacity_init(&k, "p", "r");
	rows = poller_rows("gke", &p, &k);
	assert_int_equal(json_array_size(rows), 2);
	r = json_array_get(rows, 0);
	assert_string_equal(json_string_value(json_object_get(r, "capacity_type")), "flex_start");
	assert_int_equal(json_integer_value(json_object_get(r, "nodes")), 0);
	t = json_object_get(json_object_get(r, "topology"), "node_template");
	assert_non_null(t);
	assert_int_equal(json_integer_value(json_object_get(t, "alloc_accel")), 8);
	/* 208 vCPUs less 6 % + 1 % + 2 x 0.5 % + 204 x 0.25 % of a core = 590 m */
	assert_int_equal(json_integer_value(json_object_get(t, "alloc_cpu_m")), 207410);
	/* 1872 GiB less 1 + 0.8 + 0.8 + 6.72 + 34.88 GiB and 100 MiB */
	mib = (long long)json_integer_value(json_object_get(t, "alloc_mem")) / (1024 * 1024);
	assert_true(mib >= 1871566 && mib <= 1871568);
	/* an on-demand pool with no node: none (it learns its shape from a node) */
	assert_null(json_object_get(json_object_get(json_array_get(rows, 1), "topology"),
	    "node_template"));
	json_decref(rows);
	/* once a node registers, its allocatable is the shape: no template */
	k.v = calloc(1, sizeof(*k.v));
	k.n = 1;
	snprintf(k.v[0].name, sizeof(k.v[0].name), "n1");
	snprintf(k.v[0].pool, sizeof(k.v[0].pool), "h100-flex");
	k.v[0].alloc_accel = 8;
	k.v[0].alloc_cpu_m = 207500;
	k.v[0].ready = true;
	rows = poller_rows("gke", &p, &k);
	assert_null(json_object_get(json_object_get(json_array_get(rows, 0), "topology"),
	    "node_template"));
	json_decref(rows);
	/* a small machine: g2-standard-8, 8 vCPUs, 32 GiB and one L4 (the catalog's count
	 * when the API names none) */
	t = poller_node_template("gke", "g2-standard-8", 0);
	assert_non_null(t);
	assert_int_equal(json_integer_value(json_object_get(t, "alloc_accel")), 1);
	assert_int_equal(json_integer_value(json_object_get(t, "alloc_cpu_m")), 7910);
	mib = (long long)json_integer_value(json_object_get(t, "alloc_mem")) / (1024 * 1024);
	assert_true(mib >= 29021 && mib <= 29023);	/* 28.44 GiB less 100 MiB */
	json_decref(t);
	assert_null(poller_node_template("gke", "no-such-machine", 8));
	prov_pools_cleanup(&p);
	kube_capacity_cleanup(&k);
}

/* Nodes "name:block:rack:free:alloc" (block "-": none) into a topology object. */
static json_t *
ptopo(const char *spec)
{
	json_t *nodes = json_array();
	char *dup = strdup(spec), *save = NULL, *tok;

	for (tok = strtok_r(dup, " ", &save); tok; tok = strtok_r(NULL, " ", &save)) {
		char name[32], block[32], rack[32];
		int free = 0, alloc = 0;
		json_t *n;

		sscanf(tok, "%31[^:]:%31[^:]:%31[^:]:%d:%d", name, block, rack, &free, &alloc);
		n = json_pack("{s:s, s:s, s:s, s:i, s:i, s:i, s:i, s:b}", "name", name, "rack", rack,
		    "slice", "", "free_accel", free, "alloc_accel", alloc, "free_cpu_m", 1000,
		    "free_mem", 1000, "ready", 1);
		if (strcmp(block, "-") != 0)
			json_object_set_new(n, "block", json_string(block));
		json_array_append_new(nodes, n);
	}
	free(dup);
	return json_pack("{s:o}", "nodes", nodes);
}

/* topology pack (issue 26): the fewest racks of one scale unit, racks no other gang uses
 * first, best fit; the candidate names its racks and scale unit; larger than every scale
 * unit is rejected and exceeds the environment (the largest unit, not the sum). */
static void
test_pack(void **state)
{
	struct fleet f;
	json_t *ans, *c0, *racks;

	(void)state;
	memset(&f, 0, sizeof(f));
	/* g: block b1 has racks r1 (8 free of 8), r2 (8 of 8), r3 (4 of 8: another gang uses
	 * it) and r4 (8 of 8); block b2 has r5 and r6 (8 of 8 each) */
	add(&f, "g", "us-central1", "gke", 1, mkrow("gb", "nvidia-gb200", false, 60, 4, 12, 12,
	    -1, 44, ptopo("n1:b1:r1:4:4 n2:b1:r1:4:4 n3:b1:r2:4:4 n4:b1:r2:4:4 n5:b1:r3:0:4 "
	    "n6:b1:r3:4:4 n7:b1:r4:4:4 n8:b1:r4:4:4 n9:b2:r5:4:4 n10:b2:r5:4:4 n11:b2:r6:4:4 "
	    "n12:b2:r6:4:4")));
	ans = search(&f, "{\"environment\":\"prod\",\"flavor\":\"nvidia-gb200\",\"count\":20,"
	    "\"topology\":\"pack\"}");
	c0 = json_array_get(json_object_get(ans, "candidates"), 0);
	if (c0 == NULL)
		fail_msg("no candidate: %s", json_dumps(ans, 0));
	/* 20 needs three racks: only b1 has three; the shared r3 is left out */
	assert_string_equal(json_string_value(json_object_get(c0, "scale_unit")), "b1");
	racks = json_object_get(c0, "racks");
	assert_int_equal(json_array_size(racks), 3);
	for (size_t i = 0; i < 3; i++)
		assert_string_not_equal(json_string_value(json_array_get(racks, i)), "r3");
	assert_int_equal(json_integer_value(json_object_get(c0, "free")), 24);
	assert_non_null(strstr(json_string_value(json_object_get(c0, "why")), "3 racks"));
	json_decref(ans);

	/* 8: one whole rack with nothing left over (r3, shared, has only 4 free) */
	ans = search(&f, "{\"environment\":\"prod\",\"flavor\":\"nvidia-gb200\",\"count\":8,"
	    "\"topology\":\"pack\"}");
	c0 = json_array_get(json_object_get(ans, "candidates"), 0);
	assert_non_null(c0);
	assert_int_equal(json_array_size(json_object_get(c0, "racks")), 1);
	assert_int_equal(json_integer_value(json_object_get(c0, "free")), 8);
	json_decref(ans);

	/* 40: more than any unit holds (b1: 32 at allocatable) though the cluster has 48 */
	ans = search(&f, "{\"environment\":\"prod\",\"flavor\":\"nvidia-gb200\",\"count\":40,"
	    "\"topology\":\"pack\"}");
	assert_int_equal(json_array_size(json_object_get(ans, "candidates")), 0);
	assert_string_equal(reason_of(ans, "g"), "topology_split");	/* 44 free in all */
	assert_int_equal(json_integer_value(json_object_get(ans, "environment_max")), 32);
	assert_true(json_is_true(json_object_get(ans, "exceeds_environment")));
	assert_non_null(strstr(json_string_value(json_object_get(ans, "message")),
	    "scale unit"));
	json_decref(ans);

	/* 28: b1 has 28 free but needs all four racks, shared r3 included: still one unit */
	ans = search(&f, "{\"environment\":\"prod\",\"flavor\":\"nvidia-gb200\",\"count\":28,"
	    "\"topology\":\"pack\"}");
	c0 = json_array_get(json_object_get(ans, "candidates"), 0);
	assert_non_null(c0);
	assert_int_equal(json_array_size(json_object_get(c0, "racks")), 4);
	json_decref(ans);

	/* 30: 44 free in the cluster, but 28 in b1 and 16 in b2: no one unit holds it */
	ans = search(&f, "{\"environment\":\"prod\",\"flavor\":\"nvidia-gb200\",\"count\":30,"
	    "\"topology\":\"pack\"}");
	assert_int_equal(json_array_size(json_object_get(ans, "candidates")), 0);
	assert_string_equal(reason_of(ans, "g"), "topology_split");
	json_decref(ans);
	fleet_free(&f);
}

/* topology slice on GKE dynamic slicing (issue 26): a TPU7x sub-block of 4 hosts shown
 * here (2x2x2 partitions p0 = h0+h1, p1 = h2+h3); p0 has a busy host, p1 is free: the
 * search names p1; a 2x2x4 (4 hosts) partition is not whole free. */
static void
test_partition(void **state)
{
	struct fleet f;
	json_t *nodes = json_array(), *ans, *c0;

	(void)state;
	memset(&f, 0, sizeof(f));
	for (int h = 0; h < 4; h++)
		json_array_append_new(nodes, json_pack("{s:s, s:s, s:s, s:i, s:i, s:b,"
		    " s:{s:s, s:s}}", "name", h == 0 ? "h0" : h == 1 ? "h1" : h == 2 ? "h2" : "h3",
		    "rack", "", "slice", "", "free_accel", h == 0 ? 0 : 4, "alloc_accel", 4,
		    "ready", 1, "partitions", "2x2x2", h < 2 ? "p0" : "p1", "2x2x4", "q0"));
	add(&f, "d", "us-central1", "gke", 1, mkrow("ironwood", "tpu-v7x", false, 48, 4, 4, 4,
	    -1, 12, json_pack("{s:o}", "nodes", nodes)));
	ans = search(&f, "{\"environment\":\"prod\",\"flavor\":\"tpu-v7x\",\"count\":8,"
	    "\"topology\":\"slice\",\"slice_topology\":\"2x2x2\"}");
	c0 = json_array_get(json_object_get(ans, "candidates"), 0);
	if (c0 == NULL)
		fail_msg("no candidate: %s", json_dumps(ans, 0));
	assert_string_equal(json_string_value(json_object_get(c0, "slice")), "p1");
	assert_int_equal(json_integer_value(json_object_get(c0, "free")), 8);
	json_decref(ans);
	ans = search(&f, "{\"environment\":\"prod\",\"flavor\":\"tpu-v7x\",\"count\":16,"
	    "\"topology\":\"slice\",\"slice_topology\":\"2x2x4\"}");
	assert_int_equal(json_array_size(json_object_get(ans, "candidates")), 0);
	json_decref(ans);
	fleet_free(&f);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_request_errors),
		cmocka_unit_test(test_rack_search),
		cmocka_unit_test(test_host_growth_and_ceiling),
		cmocka_unit_test(test_slice),
		cmocka_unit_test(test_pack),
		cmocka_unit_test(test_partition),
		cmocka_unit_test(test_poller_rows),
		cmocka_unit_test(test_flex_start_template),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
