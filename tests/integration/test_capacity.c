/* test_capacity: the poller against cloudsim and a scratch database — capacity rows equal
 * cloudsim's ground truth; a cloud's region is read once per refresh for all its clusters;
 * 429 with Retry-After; a hanging API server times out without holding up the others; a
 * wrong CA is refused; N failures make a cluster unreachable and a success makes it ready;
 * the summary and the search read the rows. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/config.h"
#include "core/crypto.h"
#include "core/db.h"
#include "core/migrate.h"
#include "providers/provider.h"
#include "regions/capacity.h"
#include "regions/poller.h"
#include "tests/harness/harness.h"

static struct harness_cs L;
static char dburl[512];
static char ids[8][40];		/* cluster ids by clusters.json order */

/* test.json and a second GKE cluster in the first one's cloud (same project and region),
 * with an H100 pool of no node: it must get the region's quota and reservations too. */
#define GKE_B	4		/* its index in clusters.json */

static void
exec_sql(const char *sql, int n, const char *const *p)
{
	struct err e = { 0 };
	struct db *c = db_acquire(5000, &e);

	assert_non_null(c);
	if (!db_exec(c, sql, n, p, NULL, &e))
		fail_msg("sql: %s %s %s", e.code, e.msg, e.detail);
	db_release(c);
}

static char *
query1(const char *sql, int n, const char *const *p)
{
	struct err e = { 0 };
	struct db *c = db_acquire(5000, &e);
	PGresult *r = NULL;
	char *v = NULL;

	assert_non_null(c);
	if (!db_exec(c, sql, n, p, &r, &e))
		fail_msg("sql: %s %s", e.code, e.msg);
	if (PQntuples(r) > 0 && db_val(r, 0, 0) != NULL)
		v = strdup(db_val(r, 0, 0));
	PQclear(r);
	db_release(c);
	return v;
}

/* Registers cloudsim's cluster i: a cloud (unless i joins cloud_i's), its locked pair and
 * the member cluster. */
static void
register_cluster(size_t i, size_t cloud_i, json_t *cj, const uint8_t key[32])
{
	const char *prov = harness_js(cj, "provider");
	char cloud[48], acct[300], ext[64], name[80], *sealed, cred[256], body[512];
	const char *cp, *cr;
	struct err e = { 0 };

	snprintf(cloud, sizeof(cloud), "c0000000-0000-4000-8000-%012d", (int)cloud_i % 1000);
	snprintf(ids[i], sizeof(ids[i]), "d0000000-0000-4000-8000-%012d", (int)i % 1000);
	snprintf(ext, sizeof(ext), "ext-%zu-0123456789abcdef", i);
	snprintf(name, sizeof(name), "cloud-%zu", i);
	if (strcmp(prov, "gke") == 0) {
		snprintf(acct, sizeof(acct), "{\"project\":\"%s\"}", harness_js(cj, "project"));
		cp = harness_js(cj, "iam.control_plane.service_account");
		cr = harness_js(cj, "iam.cluster_role.service_account");
	} else if (strcmp(prov, "aks") == 0) {
		snprintf(acct, sizeof(acct), "{\"subscription_id\":\"%s\",\"tenant_id\":\"%s\","
		    "\"resource_group\":\"%s\"}", harness_js(cj, "subscription"), cfg.azure_tenant,
		    harness_js(cj, "resource_group"));
		cp = harness_js(cj, "iam.control_plane.client_id");
		cr = harness_js(cj, "iam.cluster_role.resource_id");
	} else {
		snprintf(acct, sizeof(acct), "{\"account_id\":\"%s\"}", harness_js(cj, "account"));
		cp = harness_js(cj, "iam.control_plane.role_arn");
		cr = harness_js(cj, "iam.cluster_role.role_arn");
		snprintf(body, sizeof(body), "{\"provider\":\"aws\",\"role_arn\":\"%s\","
		    "\"external_id\":\"%s\"}", cp, ext);
		assert_int_equal(harness_sim(&L, "POST", "/_sim/iam", body, NULL), 200);
	}
	if (cloud_i != i)
		goto cluster;
	exec_sql("INSERT INTO clouds (id, name, environment, provider, region, account,"
	    " external_id, state, required) VALUES ($1, $2, 'test', $3, $4, $5::jsonb, $6,"
	    " 'active', '{}')", 6, (const char *const[]){ cloud, name, prov,
	    harness_js(cj, "region"), acct, ext });
	exec_sql("INSERT INTO iam_pairs (cloud_id, control_plane_role, cluster_role)"
	    " VALUES ($1, $2, $3)", 3, (const char *const[]){ cloud, cp, cr });
cluster:
	snprintf(cred, sizeof(cred), "{\"token\":\"%s\"}", harness_js(cj, "token"));
	sealed = crypto_seal(key, cred, ids[i], &e);
	assert_non_null(sealed);
	exec_sql("INSERT INTO clusters (id, cloud_id, name, api_server, ca_cert,"
	    " credentials_sealed, provider_cluster_id) VALUES ($1, $2, $3, $4, $5, $6, $7)", 7,
	    (const char *const[]){ ids[i], cloud, harness_js(cj, "name"), harness_js(cj,
	    "api_server"),
	    L.ca_pem, sealed, harness_js(cj, "provider_cluster_id") });
	free(sealed);
}

static int
setup(void **state)
{
	struct err e = { 0 };
	struct db *c;
	uint8_t key[32];
	char *b64;
	json_t *cj, *fleet, *gke_b;
	size_t i;
	int applied = 0;

	(void)state;
	harness_db_create("capacity", dburl, sizeof(dburl));
	crypto_random(key, sizeof(key));
	b64 = crypto_b64_encode(key, sizeof(key));
	config_set("master-key", b64, &e);
	config_set("snapshot-max-age", "120", &e);
	free(b64);
	if (!db_pool_init(dburl, 4, &e) || (c = db_acquire(5000, &e)) == NULL) {
		fprintf(stderr, "db: %s\n", e.msg);
		return -1;
	}
	if (!migrate_apply(c, FLEETD_SOURCE_DIR "/migrations", &applied, &e)) {
		fprintf(stderr, "migrate: %s\n", e.msg);
		db_release(c);
		return -1;
	}
	db_release(c);
	fleet = harness_fleet_json();
	gke_b = json_deep_copy(harness_jp(fleet, "clusters.0"));
	json_object_set_new(gke_b, "name", json_string("test-gke-usc1-b"));
	json_object_set_new(gke_b, "pools", json_pack("[{s:s, s:s, s:i}, {s:s, s:s, s:f}]",
	    "name", "system", "machine_type", "e2-standard-8", "nodes", 1,
	    "name", "h100", "machine_type", "a3-highgpu-8g", "price_per_hour", 88.49));
	json_array_append_new(json_object_get(fleet, "clusters"), gke_b);
	harness_cs_start_json(&L, fleet, NULL);
	json_decref(fleet);
	harness_cs_config(&L);
	exec_sql("INSERT INTO environments (id, name) VALUES (gen_random_uuid(), 'test')", 0,
	    NULL);
	json_array_foreach(L.clusters, i, cj)
		register_cluster(i, strcmp(harness_js(cj, "name"), "test-gke-usc1-b") == 0 ? 0 : i,
		    cj, key);
	assert_string_equal(harness_js(json_array_get(L.clusters, GKE_B), "name"),
	    "test-gke-usc1-b");
	memset(key, 0, sizeof(key));
	return 0;
}

static int
teardown(void **state)
{
	(void)state;
	harness_cs_stop(&L);
	db_pool_close();
	harness_db_drop(dburl);
	prov_creds_cache_clear();
	return 0;
}

/* Each test starts from a clean slate even when an earlier one failed midway. */
static int
clean(void **state)
{
	(void)state;
	harness_sim(&L, "DELETE", "/_sim/faults", NULL, NULL);
	poller_set_limits(0, 0);
	return 0;
}

static struct poller_stats
refresh(void)
{
	struct poller_stats st;
	struct err e = { 0 };

	if (!poller_refresh_all(16, NULL, &st, &e))
		fail_msg("refresh: %s %s", e.code, e.msg);
	return st;
}

static const char *
state_of(size_t i, char *err, size_t n)
{
	static char st[32];
	char *s = query1("SELECT state || ':' || failures || ':' || coalesce(last_error, '')"
	    " FROM clusters WHERE id = $1", 1, (const char *const[]){ ids[i] });
	char *c1 = s ? strchr(s, ':') : NULL;

	if (s == NULL || c1 == NULL)
		fail_msg("no state for cluster %zu", i);
	snprintf(st, sizeof(st), "%.*s", (int)(c1 - s), s ? s : "");
	snprintf(err, n, "%s", c1 + 1);
	free(s);
	return st;
}

/* Rows equal cloudsim's /_sim/state pool by pool. */
static void
test_ground_truth(void **state)
{
	struct poller_stats st = refresh();
	json_t *sim = NULL, *c, *p;
	size_t i, k;
	char err[400];

	(void)state;
	for (i = 0; i < json_array_size(L.clusters); i++)
		if (strcmp(state_of(i, err, sizeof(err)), "ready") != 0 || strchr(err, ':')[1])
			fail_msg("cluster %zu: %s", i, err);
	assert_int_equal(st.ok, (int)json_array_size(L.clusters));
	assert_int_equal(st.failed, 0);
	assert_int_equal(harness_sim(&L, "GET", "/_sim/state", NULL, &sim), 200);
	json_array_foreach(json_object_get(sim, "clusters"), i, c) {
		size_t idx;
		json_t *cj;

		json_array_foreach(L.clusters, idx, cj)
			if (strcmp(harness_js(cj, "name"), harness_js(c, "name")) == 0)
				break;
		json_array_foreach(json_object_get(c, "pools"), k, p) {
			char want[160], *got;

			snprintf(want, sizeof(want), "%lld:%lld:%lld:%s:%lld",
			    json_integer_value(json_object_get(p, "nodes")),
			    json_integer_value(json_object_get(p, "max")),
			    json_integer_value(json_object_get(p, "free_accelerators")),
			    json_is_true(json_object_get(p, "spot")) ? "t" : "f",
			    json_integer_value(json_object_get(p, "accelerators_per_node")));
			got = query1("SELECT nodes || ':' || max_nodes || ':' || free_accel || ':' ||"
			    " CASE WHEN spot THEN 't' ELSE 'f' END || ':' || accel_per_node FROM capacity WHERE cluster_id = $1 AND"
			    " pool = $2", 2, (const char *const[]){ ids[idx], harness_js(p,
			    "name") });
			if (got == NULL || strcmp(got, want) != 0)
				fail_msg("%s/%s: rows %s, cloudsim %s", harness_js(c, "name"),
				    harness_js(p, "name"),
				    got ? got : "(none)", want);
			free(got);
		}
	}
	json_decref(sim);
	{	/* GKE quota (64 - 24 in use) and reservations ((2-1) + 1 nodes x 8) */
		char *q = query1("SELECT quota_left || ':' || reserved || ':' || flavor FROM capacity"
		    " WHERE cluster_id = $1 AND pool = 'h100'", 1,
		    (const char *const[]){ ids[0] });

		assert_string_equal(q, "40:16:nvidia-h100-80gb");
		free(q);
	}
}

/* fleetd_provider_calls_total of provider so far. */
static long
calls_of(const char *provider)
{
	char *m = NULL, want[96], *at;
	size_t len = 0, cap = 0;
	long n;

	poller_metrics(&m, &len, &cap);
	snprintf(want, sizeof(want), "fleetd_provider_calls_total{provider=\"%s\"} ", provider);
	at = strstr(m, want);
	assert_non_null(at);
	n = atol(at + strlen(want));
	free(m);
	return n;
}

/* The two GKE clusters of one cloud read its region once per refresh: their node pools
 * (one call each), the region (one) and the reservations of its zone (two pages of two),
 * 5 calls, where each cluster read the region and its zone again (listed once per
 * cluster): 12.  Both clusters' H100 pools get the quota and the reservations. */
static void
test_region_read_once(void **state)
{
	long before;
	char *q;

	(void)state;
	refresh();	/* credentials cached */
	before = calls_of("gke");
	refresh();
	assert_int_equal(calls_of("gke") - before, 2 + 1 + 2);
	for (size_t i = 0; i <= GKE_B; i += GKE_B) {
		q = query1("SELECT quota_left || ':' || reserved || ':' || flavor FROM capacity"
		    " WHERE cluster_id = $1 AND pool = 'h100'", 1, (const char *const[]){ ids[i] });
		assert_string_equal(q, "40:16:nvidia-h100-80gb");
		free(q);
	}
}

/* Revoked credentials mid-life: the poller refreshes them once and carries on. */
static void
test_expired_tokens(void **state)
{
	struct poller_stats st;

	(void)state;
	refresh();	/* credentials cached */
	assert_int_equal(harness_sim(&L, "POST", "/_sim/expire-tokens", "{}", NULL), 200);
	st = refresh();
	assert_int_equal(st.failed, 0);
	assert_int_equal(st.ok, (int)json_array_size(L.clusters));
}

static void
test_throttled(void **state)
{
	struct poller_stats st;
	double t0;

	(void)state;
	assert_int_equal(harness_sim(&L, "POST", "/_sim/faults", "{\"service\":\"sagemaker\","
	    "\"error_rate\":1,\"error_status\":429,\"retry_after\":1,\"count\":2}", NULL), 201);
	t0 = harness_now_s();
	st = refresh();
	assert_true(harness_now_s() - t0 >= 0.9);
	assert_int_equal(st.failed, 0);
	harness_sim(&L, "DELETE", "/_sim/faults", NULL, NULL);
}

/* The rows are stamped with the moment the fetch began: pods that came up while it ran
 * are not in them, and a later stamp made the loader take such a job as already counted
 * (its node looked free: two jobs on one node's GPUs). */
static void
test_observed_when_fetched(void **state)
{
	char *before, *late;

	(void)state;
	assert_int_equal(harness_sim(&L, "POST", "/_sim/faults", "{\"service\":\"k8s\","
	    "\"latency_ms\":1500}", NULL), 201);
	before = query1("SELECT now()::text", 0, NULL);
	refresh();
	late = query1("SELECT count(*) FROM capacity WHERE observed_at > $1::timestamptz +"
	    " interval '1 second' OR observed_at < $1::timestamptz", 1,
	    (const char *const[]){ before });
	assert_string_equal(late, "0");
	free(late);
	late = query1("SELECT count(*) > 0 FROM capacity WHERE observed_at >= $1::timestamptz",
	    1, (const char *const[]){ before });
	assert_string_equal(late, "t");
	free(before);
	free(late);
}

static void
test_hang_and_unreachable(void **state)
{
	struct poller_stats st;
	char err[400], *age;
	double t0;

	(void)state;
	poller_set_limits(1500, 1);
	assert_int_equal(harness_sim(&L, "POST", "/_sim/faults",
	    "{\"service\":\"k8s\",\"cluster\":"
	    "\"test-aks-eus\",\"hang\":true,\"hang_s\":30}", NULL), 201);
	for (int round = 1; round <= POLLER_UNREACHABLE_AFTER; round++) {
		t0 = harness_now_s();
		st = refresh();
		assert_true(harness_now_s() - t0 < 5);		/* the hang costs one timeout,
		    no more */
		assert_int_equal(st.failed, 1);
		assert_int_equal(st.ok, (int)json_array_size(L.clusters) - 1);
		assert_string_equal(state_of(1, err, sizeof(err)),
		    round < POLLER_UNREACHABLE_AFTER ? "ready" : "unreachable");
		assert_non_null(strstr(err, "timed out"));
	}
	/* the stale rows stay, and the search says why it skips the cluster */
	age = query1("SELECT count(*) FROM capacity WHERE cluster_id = $1", 1,
	    (const char *const[]){ ids[1] });
	assert_true(atoi(age) > 0);
	free(age);
	harness_sim(&L, "DELETE", "/_sim/faults", NULL, NULL);
	poller_set_limits(0, 0);
	st = refresh();
	assert_int_equal(st.failed, 0);
	assert_string_equal(state_of(1, err, sizeof(err)), "ready");
	assert_string_equal(err, "0:");
}

static void
test_wrong_ca(void **state)
{
	char *other = harness_slurp("/etc/ssl/certs/ca-certificates.crt"), err[400];
	struct poller_stats st;

	(void)state;
	assert_non_null(other);
	exec_sql("UPDATE clusters SET ca_cert = $2 WHERE id = $1", 2,
	    (const char *const[]){ ids[2], other });
	st = refresh();
	assert_int_equal(st.failed, 1);
	state_of(2, err, sizeof(err));
	assert_non_null(strstr(err, "kubernetes"));
	exec_sql("UPDATE clusters SET ca_cert = $2 WHERE id = $1", 2,
	    (const char *const[]){ ids[2], L.ca_pem });
	st = refresh();
	assert_int_equal(st.failed, 0);
	free(other);
}

/* Free accelerators of one type in cloudsim's own state, over every cluster. */
static int
sim_free(const char *accel)
{
	json_t *sim = NULL, *c, *p;
	size_t i, k;
	int n = 0;

	assert_int_equal(harness_sim(&L, "GET", "/_sim/state", NULL, &sim), 200);
	json_array_foreach(json_object_get(sim, "clusters"), i, c)
		json_array_foreach(json_object_get(c, "pools"), k, p)
			if (harness_js(p, "accelerator") &&
			    strcmp(harness_js(p, "accelerator"), accel) == 0)
				n += (int)json_integer_value(json_object_get(p,
				    "free_accelerators"));
	json_decref(sim);
	return n;
}

static void
test_summary_and_search(void **state)
{
	struct capacity_filter f = { .environment = "test", .flavor = "nvidia-h100-80gb" };
	struct err e = { 0 };
	struct db *c;
	json_t *out = NULL, *req, *it;
	char *text = NULL, *metrics = NULL;
	size_t i, len = 0, cap = 0;
	int free_now = 0, spot = 0;

	(void)state;
	refresh();
	c = db_acquire(5000, &e);
	assert_non_null(c);
	assert_true(capacity_summary(c, &f, &out, &e));
	json_array_foreach(json_object_get(out, "items"), i, it) {
		assert_string_equal(harness_js(it, "flavor"), "nvidia-h100-80gb");
		spot += strcmp(harness_js(it, "capacity_type"), "spot") == 0;
		free_now += (int)json_integer_value(json_object_get(it, "free_now"));
		assert_int_equal(json_integer_value(json_object_get(it, "stale_clusters")), 0);
	}
	assert_int_equal(free_now, sim_free("nvidia-h100-80gb"));
	assert_int_equal(spot, 1);	/* aks h100spot, apart from the on-demand pools */
	json_decref(out);
	req = json_loads("{\"environment\":\"test\",\"flavor\":\"nvidia-h100-80gb\",\"count\":16,"
	    "\"topology\":\"rack\"}", 0, NULL);
	assert_true(capacity_search(c, req, &out, &e));
	text = json_dumps(out, JSON_COMPACT);
	/* aks h100 has two free nodes in one rack; every other cluster is rejected with a
	 * reason */
	assert_int_equal(json_array_size(json_object_get(out, "candidates")) +
	    json_array_size(json_object_get(out, "rejected")), json_array_size(L.clusters));
	it = json_array_get(json_object_get(out, "candidates"), 0);
	if (it == NULL || strcmp(harness_js(it, "cluster"), "test-aks-eus") != 0)
		fail_msg("search: %s", text);
	json_decref(out);
	json_decref(req);
	req = json_loads("{\"environment\":\"nope\",\"flavor\":\"nvidia-h100-80gb\",\"count\":1}",
	    0, NULL);
	assert_false(capacity_search(c, req, &out, &e));
	assert_int_equal(e.status, 404);
	json_decref(req);
	db_release(c);
	free(text);
	poller_metrics(&metrics, &len, &cap);
	assert_non_null(strstr(metrics, "fleetd_provider_calls_total{provider=\"hyperpod\"}"));
	assert_non_null(strstr(metrics, "fleetd_cluster_snapshot_age_seconds{cluster_id=\""));
	free(metrics);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(test_ground_truth, clean),
		cmocka_unit_test_setup(test_region_read_once, clean),
		cmocka_unit_test_setup(test_expired_tokens, clean),
		cmocka_unit_test_setup(test_throttled, clean),
		cmocka_unit_test_setup(test_observed_when_fetched, clean),
		cmocka_unit_test_setup(test_hang_and_unreachable, clean),
		cmocka_unit_test_setup(test_wrong_ca, clean),
		cmocka_unit_test_setup(test_summary_and_search, clean),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
