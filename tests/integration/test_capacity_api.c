/* test_capacity_api: GET /v1/capacity and POST /v1/capacity/search end to end — cloudsim's
 * test fleet registered through the API (phase 1, identities, phase 2, clusters), fleetd's
 * own poller fills the snapshots, and the answers are checked against cloudsim's state. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/harness/harness.h"

#define ENV		"test"
#define H100		"nvidia-h100-80gb"
#define MAXCL		8

static struct fleetd_proc fd;
static struct harness_cs cs;
static char dburl[512];
static char *admin;
static const char *registered[MAXCL + 1];	/* names of the clusters fleetd knows */
static size_t nreg;

static bool
is_registered(const char *name)
{
	for (size_t i = 0; i < nreg; i++)
		if (strcmp(registered[i], name) == 0)
			return true;
	return false;
}

/* The test fleet's clusters of ENV registered through the API, snapshots polled by fleetd. */
static int
setup(void **state)
{
	size_t i;
	json_t *c;

	(void)state;
	harness_cs_start(&cs, NULL, NULL);
	harness_cs_env_add(&cs, "FLEETD_WORKERS=poller");
	harness_cs_env_add(&cs, "FLEETD_POLL_INTERVAL_MS=1000");
	harness_db_create("capapi", dburl, sizeof(dburl));
	harness_fleetd_start(&fd, dburl, (const char *const *)cs.env);
	admin = harness_keep(harness_token(dburl, "admin", "*"));
	harness_post_created(admin, "/v1/environments", "{\"name\":\"" ENV "\"}");
	harness_post_created(admin, "/v1/environments", "{\"name\":\"other\"}");
	json_array_foreach(cs.clusters, i, c)
		if (strcmp(harness_js(c, "environment"), ENV) == 0 && nreg < MAXCL) {
			harness_register(&cs, admin, harness_js(c, "name"), NULL, NULL);
			registered[nreg++] = harness_js(c, "name");
		}
	assert_true(is_registered("test-gke-usc1") && is_registered("test-aks-eus"));
	assert_true(is_registered("test-hp-usw2") && is_registered("test-hp-use1"));
	harness_wait_capacity(registered, 60);
	return 0;
}

/* ---- ground truth from cloudsim */

struct truth {
	long long free, total, growable, max_all;
};

/* Sums cloudsim's pools of accelerator flavor (any capacity type when spot < 0) over the
 * registered clusters of region/provider (NULL = any). */
static struct truth
truth_of(json_t *sim, const char *flavor, int spot, const char *region, const char *provider)
{
	struct truth t = { 0 };
	json_t *c, *p;
	size_t i, k;

	json_array_foreach(json_object_get(sim, "clusters"), i, c) {
		if (!is_registered(harness_js(c, "name")) || (region &&
		    strcmp(region, harness_js(c, "region"))) ||
		    (provider && strcmp(provider, harness_js(c, "provider"))))
			continue;
		json_array_foreach(json_object_get(c, "pools"), k, p) {
			long long apn = harness_ji(p, "accelerators_per_node"),
			    nodes = harness_ji(p, "nodes"),
			    max = harness_ji(p, "max");

			if (harness_js(p, "accelerator") == NULL ||
			    strcmp(harness_js(p, "accelerator"), flavor) != 0 ||
			    (spot >= 0 && json_is_true(harness_jp(p, "spot")) != (spot == 1)))
				continue;
			t.free += harness_ji(p, "free_accelerators");
			t.total += harness_ji(p, "accelerators");
			t.growable += (max > nodes ? max - nodes : 0) * apn;
			t.max_all += (max > nodes ? max : nodes) * apn;
		}
	}
	return t;
}

/* Largest free count in one rack of an H100 pool of cluster name; -1 without H100. */
static long long
best_rack(json_t *sim, const char *name, long long *free_all, bool *growable)
{
	long long best = -1;
	json_t *c, *p, *r;
	const char *key;
	size_t i, k;

	*free_all = 0;
	*growable = false;
	json_array_foreach(json_object_get(sim, "clusters"), i, c) {
		if (strcmp(harness_js(c, "name"), name) != 0)
			continue;
		json_array_foreach(json_object_get(c, "pools"), k, p) {
			if (harness_js(p, "accelerator") == NULL ||
			    strcmp(harness_js(p, "accelerator"), H100) != 0)
				continue;
			*free_all += harness_ji(p, "free_accelerators");
			*growable |= harness_ji(p, "max") > harness_ji(p, "nodes");
			if (best < 0)
				best = 0;
			json_object_foreach(json_object_get(p, "racks"), key, r)
				if (harness_ji(r, "free_accelerators") > best)
					best = harness_ji(r, "free_accelerators");
		}
	}
	return best;
}

/* ---- GET /v1/capacity */

static void
test_summary(void **state)
{
	json_t *sim = harness_sim_get(&cs, "/_sim/state"), *it, *items;
	size_t i, h100 = 0;
	long long max_age;

	(void)state;
	assert_int_equal(harness_call("GET", admin, NULL, "/v1/capacity?environment=" ENV), 200);
	items = json_object_get(harness_r.json, "items");
	max_age = harness_ji(harness_r.json, "snapshot_max_age_s");
	assert_true(max_age > 0);
	assert_true(json_array_size(items) > 0);
	json_array_foreach(items, i, it) {
		const char *fl = harness_js(it, "flavor"), *ct = harness_js(it, "capacity_type");
		struct truth t;

		assert_string_equal(harness_js(it, "environment"), ENV);
		assert_non_null(harness_js(it, "region"));
		assert_non_null(harness_js(it, "provider"));
		assert_true(strcmp(ct, "spot") == 0 || strcmp(ct, "on_demand") == 0);
		/* freshness: every snapshot is recent and counted fresh */
		assert_true(harness_ji(it, "fresh_clusters") >= 1);
		assert_int_equal(harness_ji(it, "stale_clusters"), 0);
		assert_non_null(harness_js(it, "newest_observed_at"));
		assert_non_null(harness_js(it, "oldest_observed_at"));
		assert_true(harness_ji(it, "max_age_s") >= 0 &&
		    harness_ji(it, "max_age_s") <= max_age);
		if (strncmp(fl, "nvidia-", 7) != 0)
			continue;
		/* the aggregate is cloudsim's truth for that region, provider, flavor and type */
		t = truth_of(sim, fl, strcmp(ct, "spot") == 0, harness_js(it, "region"),
		    harness_js(it, "provider"));
		if (harness_ji(it, "free_now") != t.free || harness_ji(it, "total") != t.total ||
		    harness_ji(it, "growable") != t.growable)
			fail_msg("%s/%s/%s/%s: free %lld total %lld growable %lld, cloudsim %lld %lld %lld",
			    harness_js(it, "region"), harness_js(it, "provider"), fl, ct,
			    harness_ji(it, "free_now"),
			    harness_ji(it, "total"), harness_ji(it, "growable"), t.free, t.total,
			    t.growable);
		h100 += strcmp(fl, H100) == 0;
	}
	assert_true(h100 >= 2);		/* gke us-central1 and hyperpod us-west-2 at least */
	/* GKE reports regional quota: the H100 quota left is a number there */
	assert_int_equal(harness_call("GET", admin, NULL,
	    "/v1/capacity?environment=" ENV "&provider=gke&flavor="
	    H100), 200);
	assert_true(json_array_size(harness_jp(harness_r.json, "items")) >= 1);
	json_array_foreach(harness_jp(harness_r.json, "items"), i, it) {
		assert_string_equal(harness_js(it, "provider"), "gke");
		assert_string_equal(harness_js(it, "flavor"), H100);
		assert_true(json_is_integer(harness_jp(it, "quota_left")));
	}
	/* filters */
	assert_int_equal(harness_call("GET", admin, NULL, "/v1/capacity?region=us-west-2"), 200);
	assert_true(json_array_size(harness_jp(harness_r.json, "items")) >= 1);
	json_array_foreach(harness_jp(harness_r.json, "items"), i, it)
		assert_string_equal(harness_js(it, "region"), "us-west-2");
	json_decref(sim);
}

/* Sum of free_now over ENV's items of a fresh GET /v1/capacity. */
static long long
free_now_sum(void)
{
	json_t *it;
	long long sum = 0;
	size_t i;

	assert_int_equal(harness_call("GET", admin, NULL, "/v1/capacity?environment=" ENV), 200);
	json_array_foreach(harness_jp(harness_r.json, "items"), i, it)
		sum += harness_ji(it, "free_now");
	return sum;
}

/* The answer is kept in memory (regions/capacity.c): a committed change shows on the very
 * next read, whatever was cached. */
static void
test_summary_cache_follows_commits(void **state)
{
	long long before, cl_free;
	char *cl;

	(void)state;
	cl = harness_sql_str("SELECT k.id FROM clusters k JOIN capacity c ON c.cluster_id = k.id"
	    " WHERE k.state = 'ready' AND NOT k.cordoned GROUP BY k.id"
	    " HAVING sum(c.free_accel) > 0 ORDER BY k.id LIMIT 1");
	cl_free = harness_sql_long("SELECT sum(free_accel) FROM capacity WHERE cluster_id = '%s'",
	    cl);
	before = free_now_sum();
	/* each read right after the one before it (the same second: an answer in memory) */
	for (int i = 0; i < 8; i++) {
		bool cordon = i % 2 == 0;

		assert_int_equal(free_now_sum(), cordon ? before : before - cl_free);
		harness_sql("UPDATE clusters SET cordoned = %s WHERE id = '%s'",
		    cordon ? "true" : "false", cl);
		assert_int_equal(free_now_sum(), cordon ? before - cl_free : before);
	}
	free(cl);
}

/* ---- POST /v1/capacity/search */

static const char *const reasons[] = { "wrong_flavor", "insufficient_capacity",
	"topology_split", "over_quota", "region_not_allowed", "provider_not_allowed",
	"spot_mismatch", "over_price", "unreachable", "stale", "cordoned", NULL };

static json_t *
find_named(json_t *list, const char *name)
{
	json_t *it;
	size_t i;

	json_array_foreach(list, i, it)
		if (strcmp(harness_js(it, "cluster"), name) == 0)
			return it;
	return NULL;
}

static void
test_search_rack(void **state)
{
	json_t *sim = harness_sim_get(&cs, "/_sim/state"), *cands, *rej, *it;
	size_t i;
	bool later = false;

	(void)state;
	assert_int_equal(harness_call("POST", admin, "{\"environment\":\"" ENV
	    "\",\"flavor\":\"" H100 "\",\"count\":16,\"topology\":\"rack\"}",
	    "/v1/capacity/search"), 200);
	cands = harness_jp(harness_r.json, "candidates");
	rej = harness_jp(harness_r.json, "rejected");
	/* every registered cluster is either a candidate or rejected, once */
	assert_int_equal(json_array_size(cands) + json_array_size(rej), nreg);
	for (i = 0; i < nreg; i++)
		assert_true((find_named(cands, registered[i]) != NULL) !=
		    (find_named(rej, registered[i]) != NULL));
	json_array_foreach(cands, i, it) {
		assert_int_equal(harness_ji(it, "rank"), (long long)i + 1);
		assert_non_null(harness_js(it, "cluster_id"));
		assert_non_null(harness_js(it, "region"));
		assert_non_null(harness_js(it, "provider"));
		assert_non_null(harness_js(it, "rack"));
		assert_true(json_number_value(harness_jp(it, "price_hour")) > 0);
		assert_true(strlen(harness_js(it, "why")) > 10);
		assert_true(harness_ji(it, "free") >= 16 ||
		    strcmp(harness_js(it, "fit"), "after_scale_up") == 0);
		/* fits now rank before fits after a scale-up */
		if (strcmp(harness_js(it, "fit"), "now") != 0)
			later = true;
		else
			assert_false(later);
	}
	json_array_foreach(rej, i, it) {
		size_t k;

		for (k = 0; reasons[k] != NULL &&
		    strcmp(reasons[k], harness_js(it, "reason")); k++)
			;
		if (reasons[k] == NULL)
			fail_msg("rejected %s: unknown reason %s", harness_js(it, "cluster"),
			    harness_js(it, "reason"));
		assert_true(strlen(harness_js(it, "detail")) > 0);
	}
	/* against cloudsim: a cluster with 16 free in one rack is a candidate that fits now;
	 * free H100 enough but split over racks and no room to grow is topology_split; no
	 * H100 at all is wrong_flavor */
	for (i = 0; i < nreg; i++) {
		long long all;
		bool grow;
		long long rack = best_rack(sim, registered[i], &all, &grow);
		json_t *c = find_named(cands, registered[i]), *r = find_named(rej, registered[i]);

		if (rack >= 16) {
			if (c == NULL || strcmp(harness_js(c, "fit"), "now") != 0)
				fail_msg("%s has %lld free in one rack: %s", registered[i], rack,
				    harness_r.body);
		} else if (all >= 16 && !grow) {
			if (r == NULL || strcmp(harness_js(r, "reason"), "topology_split") != 0)
				fail_msg("%s: split over racks expected: %s", registered[i],
				    harness_r.body);
		} else if (rack < 0) {
			if (r == NULL || strcmp(harness_js(r, "reason"), "wrong_flavor") != 0)
				fail_msg("%s has no H100: %s", registered[i], harness_r.body);
		}
	}
	it = find_named(rej, "test-hp-use1");	/* A100 only */
	assert_non_null(it);
	assert_string_equal(harness_js(it, "reason"), "wrong_flavor");
	it = find_named(rej, "test-hp-usw2");	/* 8 + 8 free in two racks, at max size */
	assert_non_null(it);
	assert_string_equal(harness_js(it, "reason"), "topology_split");
	/* two free nodes in one rack */
	assert_string_equal(harness_js(harness_r.json, "candidates.0.cluster"), "test-aks-eus");
	assert_true(json_array_size(cands) >= 1);
	assert_false(json_is_true(harness_jp(harness_r.json, "exceeds_environment")));
	json_decref(sim);
}

/* topology pack (issue 26): the fewest racks of one scale unit.  test-hp-usw2 has 8 + 8
 * free H100 in two racks of one unit: topology rack rejects it (topology_split), pack takes
 * both racks and names them and the unit; test-aks-eus holds 16 in one rack. */
static void
test_search_pack(void **state)
{
	json_t *c;

	(void)state;
	assert_int_equal(harness_call("POST", admin, "{\"environment\":\"" ENV
	    "\",\"flavor\":\"" H100 "\",\"count\":16,\"topology\":\"pack\"}",
	    "/v1/capacity/search"), 200);
	c = find_named(harness_jp(harness_r.json, "candidates"), "test-hp-usw2");
	if (c == NULL)
		fail_msg("pack over two racks of one unit: %s", harness_r.body);
	assert_int_equal(json_array_size(harness_jp(c, "racks")), 2);
	assert_non_null(json_object_get(c, "scale_unit"));
	assert_string_equal(harness_js(c, "fit"), "now");
	assert_non_null(strstr(harness_js(c, "why"), "2 racks"));
	c = find_named(harness_jp(harness_r.json, "candidates"), "test-aks-eus");
	assert_non_null(c);
	assert_int_equal(json_array_size(harness_jp(c, "racks")), 1);
	/* the ceiling is one scale unit, not the environment's sum */
	assert_int_equal(harness_call("POST", admin, "{\"environment\":\"" ENV
	    "\",\"flavor\":\"" H100 "\",\"count\":100000,\"topology\":\"pack\"}",
	    "/v1/capacity/search"), 200);
	assert_true(json_is_true(harness_jp(harness_r.json, "exceeds_environment")));
	assert_non_null(strstr(harness_js(harness_r.json, "message"), "scale unit"));
}

/* More than the environment could ever hold, at every cluster's maximum size. */
static void
test_larger_than_environment(void **state)
{
	json_t *sim = harness_sim_get(&cs, "/_sim/state");
	struct truth t = truth_of(sim, H100, -1, NULL, NULL);

	(void)state;
	assert_int_equal(harness_call("POST", admin, "{\"environment\":\"" ENV
	    "\",\"flavor\":\"" H100 "\",\"count\":100000}", "/v1/capacity/search"), 200);
	assert_true(json_is_true(harness_jp(harness_r.json, "exceeds_environment")));
	assert_int_equal(harness_ji(harness_r.json, "environment_max"), t.max_all);
	assert_int_equal(json_array_size(harness_jp(harness_r.json, "candidates")), 0);
	assert_non_null(strstr(harness_js(harness_r.json, "message"), "can never hold 100000"));
	json_decref(sim);
}

struct bad {
	const char	*body;
	const char	*code;
	const char	*pointer;
	const char	*says;		/* in the detail or title */
};

static void
test_bad_input(void **state)
{
	static const struct bad cases[] = {
		{ "{\"environment\":\"test\",\"flavor\":\"nvidia-h900\",\"count\":8}",
		  "catalog.unknown_flavor", "/flavor", H100 },	/* lists the known ones */
		{ "{\"environment\":\"test\",\"flavor\":\"" H100 "\",\"count\":0}",
		  "capacity.bad_count", "/count", "count" },
		{ "{\"environment\":\"test\",\"flavor\":\"" H100 "\",\"count\":-8}",
		  "capacity.bad_count", "/count", "count" },
		{ "{\"environment\":\"test\",\"flavor\":\"tpu-v5p\",\"count\":8,\"topology\":"
		  "\"slice\"}", "capacity.bad_slice", "/slice_topology", "slice_topology" },
		{ "{\"environment\":\"test\",\"flavor\":\"tpu-v5p\",\"count\":8,\"topology\":"
		  "\"slice\",\"slice_topology\":\"3x5\"}", "catalog.bad_slice", "/slice_topology",
		  "" },
		{ "{\"environment\":\"test\",\"flavor\":\"" H100 "\",\"count\":8,\"regions\":"
		  "[\"us-west-2\",\"mars-north1\"]}", "capacity.unknown_region", "/regions/1",
		  "mars-north1" },
		{ "{\"environment\":\"test\",\"flavor\":\"" H100 "\",\"count\":8,\"topology\":"
		  "\"ring\"}", "capacity.bad_topology", "/topology", "topology" },
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const struct bad *b = &cases[i];
		const char *detail, *title;

		if (harness_call("POST", admin, b->body, "/v1/capacity/search") != 400)
			fail_msg("%s: %ld %s", b->body, harness_r.status, harness_r.body);
		detail = harness_js(harness_r.json, "detail");
		title = harness_js(harness_r.json, "title");
		if (harness_js(harness_r.json, "code") == NULL ||
		    strcmp(harness_js(harness_r.json, "code"), b->code) != 0 ||
		    harness_js(harness_r.json, "errors.0.pointer") == NULL ||
		    strcmp(harness_js(harness_r.json, "errors.0.pointer"), b->pointer) != 0)
			fail_msg("%s: want %s at %s, got %s", b->body, b->code, b->pointer,
			    harness_r.body);
		if (!(detail && strstr(detail, b->says)) && !(title && strstr(title, b->says)))
			fail_msg("%s: answer does not say %s: %s", b->body, b->says,
			    harness_r.body);
	}
	/* unknown environment, unknown field */
	assert_int_equal(harness_call("POST", admin, "{\"environment\":\"nope\","
	    "\"flavor\":\"" H100 "\",\"count\":1}", "/v1/capacity/search"), 404);
	assert_string_equal(harness_js(harness_r.json, "code"), "env.not_found");
	assert_int_equal(harness_call("POST", admin, "{\"environment\":\"test\","
	    "\"flavor\":\"" H100 "\",\"count\":1,\"colour\":\"blue\"}", "/v1/capacity/search"),
	    400);
}

/* A viewer of another environment sees nothing of this one; a viewer of it does. */
static void
test_other_environment(void **state)
{
	char *other = harness_token(dburl, "viewer", "other");
	char *mine = harness_token(dburl, "viewer", ENV);
	const char *body = "{\"environment\":\"" ENV "\",\"flavor\":\"" H100 "\",\"count\":8}";

	(void)state;
	assert_int_equal(harness_call("POST", other, body, "/v1/capacity/search"), 404);
	assert_string_equal(harness_js(harness_r.json, "code"), "env.not_found");
	assert_null(strstr(harness_r.body, "test-"));
	assert_int_equal(harness_call("GET", other, NULL, "/v1/capacity"), 200);
	assert_int_equal(json_array_size(harness_jp(harness_r.json, "items")), 0);
	assert_int_equal(harness_call("GET", other, NULL, "/v1/capacity?environment=" ENV), 200);
	assert_int_equal(json_array_size(harness_jp(harness_r.json, "items")), 0);
	/* the same calls with a viewer of the environment */
	assert_int_equal(harness_call("POST", mine, body, "/v1/capacity/search"), 200);
	assert_true(json_array_size(harness_jp(harness_r.json, "candidates")) >= 1);
	assert_int_equal(harness_call("GET", mine, NULL, "/v1/capacity"), 200);
	assert_true(json_array_size(harness_jp(harness_r.json, "items")) >= 1);
	free(other);
	free(mine);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_summary),
		cmocka_unit_test(test_summary_cache_follows_commits),
		cmocka_unit_test(test_search_rack),
		cmocka_unit_test(test_search_pack),
		cmocka_unit_test(test_larger_than_environment),
		cmocka_unit_test(test_bad_input),
		cmocka_unit_test(test_other_environment),
	};

	return cmocka_run_group_tests(tests, setup, harness_group_teardown);
}
