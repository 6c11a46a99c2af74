/* test_security: the hardening of issue 16 — no token secret stored in idempotency_keys,
 * no credential redirection on PUT, '*' admins for global objects, scoped audit, bounded
 * method metrics, injective namespaces, parsed provider cluster ids, revocation on every
 * replica within 100 ms, and a planted-secret scan of every column of every table. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <libpq-fe.h>

#include "providers/kuberay.h"
#include "tests/harness/harness.h"

static struct fleetd_proc fd, fd2;	/* two replicas of one database */
static char dburl[512];
static char *root;			/* admin of every environment */
static char *devadmin;			/* admin of "dev" only */
static PGconn *pg;

static const char *const CLOUD = "a1600000-0000-4000-8000-000000000001";
static const char *const CLUSTER = "b1600000-0000-4000-8000-000000000001";
static const char *const PC = "91600000-0000-4000-8000-000000000001";
/* a self-signed certificate body only has to parse as PEM for validation */
static const char CA[] = "-----BEGIN CERTIFICATE-----\\n"
    "lgdJ4m3saIXxI2++BxuVhVOlkxhQKNFsmoNKifba0KxrsKlEK1zbDhbGM+qFpxqWW093DlNGiwzhrk78"
    "+ZQIw4LvGp0s73psaZ+62p/e6wuvrFFWBahifh5EW4LCBRWHSsrQhWaMZVwmU3hEOByODk+9JS+6amyi"
    "\\n-----END CERTIFICATE-----\\n";

/* One call to replica p; returns the status, the answer in *out (the caller frees it) or
 * freed when out is NULL. */
static long
call(struct fleetd_proc *p, const char *method, const char *path, const char *token,
     const char *body, const char *const *hdr, struct http_result *out)
{
	struct http_result r;

	harness_http(&r, method, harness_url(p, "%s", path), token, body, hdr);
	if (out == NULL) {
		long st = r.status;

		harness_http_free(&r);
		return st;
	}
	*out = r;
	return r.status;
}

static int
setup(void **state)
{
	const char *env[] = { "FLEETD_WORKERS=janitor", "FLEETD_JANITOR_INTERVAL_MS=200",
		"FLEETD_MASTER_KEY=c2VjdXJpdHktdGVzdC1tYXN0ZXIta2V5LTMyLWJ5dGU=", NULL };
	const char *names[] = { "dev", "prod" };

	(void)state;
	harness_db_create("security", dburl, sizeof(dburl));
	harness_fleetd_start(&fd, dburl, env);
	harness_fleetd_start(&fd2, dburl, env);
	root = harness_token(dburl, "admin", "*");
	for (int i = 0; i < 2; i++) {
		char b[64];

		snprintf(b, sizeof(b), "{\"name\":\"%s\"}", names[i]);
		assert_int_equal(call(&fd, "POST", "/v1/environments", root, b, NULL, NULL), 201);
	}
	devadmin = harness_token(dburl, "admin", "dev");
	pg = PQconnectdb(dburl);
	assert_int_equal(PQstatus(pg), CONNECTION_OK);
	harness_sql("INSERT INTO clouds (id, name, environment, provider, region, account,"
	    " external_id, state, required) VALUES ('a1600000-0000-4000-8000-000000000001',"
	    " 'sec', 'dev', 'gke', 'us-central1', '{\"project\": \"p-sec\"}', md5('x'), 'active',"
	    " '{}')");
	harness_sql("INSERT INTO clusters (id, cloud_id, name, api_server, ca_cert,"
	    " credentials_sealed, provider_cluster_id) VALUES"
	    " ('b1600000-0000-4000-8000-000000000001', 'a1600000-0000-4000-8000-000000000001',"
	    " 'k-sec', 'https://127.0.0.1:1', 'x', 'x',"
	    " 'projects/p-sec/locations/us-central1/clusters/k-sec')");
	harness_sql("INSERT INTO priority_classes (id, name, value) VALUES"
	    " ('91600000-0000-4000-8000-000000000001', 'sec-default', 100)");
	return 0;
}

static int
teardown(void **state)
{
	(void)state;
	if (pg != NULL)
		PQfinish(pg);
	if (fd.pid > 0)
		harness_fleetd_stop(&fd);
	if (fd2.pid > 0)
		harness_fleetd_stop(&fd2);
	if (dburl[0] != '\0')
		harness_db_drop(dburl);
	free(root);
	free(devadmin);
	harness_validate_responses();
	return 0;
}

/* 1: a token created with an Idempotency-Key: the stored answer has no secret, a replay
 * answers without it and says so, and the janitor removes the row after 24 h. */
static void
test_idempotent_token_secret(void **state)
{
	static const char body[] = "{\"name\":\"idem\",\"role\":\"viewer\",\"environments\":[\"dev\"]}";
	const char *hdr[] = { "Idempotency-Key: sec-token-1", NULL };
	struct http_result r, r2;
	const char *secret;
	char *stored, *flag, *n;

	(void)state;
	assert_int_equal(call(&fd, "POST", "/v1/tokens", root, body, hdr, &r), 201);
	secret = json_string_value(json_object_get(r.json, "secret"));
	assert_non_null(secret);
	stored = harness_sql_str("SELECT coalesce(response::text, '') FROM idempotency_keys"
	    " WHERE key = 'sec-token-1'");
	assert_true(stored[0] != '\0');
	if (strstr(stored, secret) != NULL || strstr(stored, "fleet_") != NULL)
		fail_msg("idempotency_keys.response holds the token secret");
	free(stored);
	/* the replay: same object, no secret, and it says so */
	assert_int_equal(call(&fd, "POST", "/v1/tokens", root, body, hdr, &r2), 201);
	assert_string_equal(json_string_value(json_object_get(r2.json, "id")),
	    json_string_value(json_object_get(r.json, "id")));
	assert_null(json_object_get(r2.json, "secret"));
	assert_true(json_is_true(json_object_get(r2.json, "secret_omitted")));
	flag = harness_header(&r2, "Idempotent-Replayed");
	assert_non_null(flag);
	assert_string_equal(flag, "true");
	free(flag);
	harness_http_free(&r);
	harness_http_free(&r2);
	/* the janitor: a row older than its 24 h window goes away */
	harness_sql("UPDATE idempotency_keys SET created_at = now() - interval '25 hours'"
	    " WHERE key = 'sec-token-1'");
	for (int i = 0; i < 50; i++) {
		n = harness_sql_str("SELECT count(*) FROM idempotency_keys WHERE key = 'sec-token-1'");
		if (strcmp(n, "0") == 0) {
			free(n);
			return;
		}
		free(n);
		usleep(100 * 1000);
	}
	fail_msg("the expired idempotency row is still there after 5 s");
}

/* 2: a new api_server or CA needs the credentials again and passes the probe. */
static void
test_cluster_endpoint_change(void **state)
{
	char b[2048], path[128];
	struct http_result r;
	long st;

	(void)state;
	snprintf(path, sizeof(path), "/v1/clusters/%s", CLUSTER);
	snprintf(b, sizeof(b), "{\"name\":\"k-sec\",\"api_server\":\"https://attacker.example:6443\","
	    "\"ca_cert\":\"%s\",\"provider_cluster_id\":"
	    "\"projects/p-sec/locations/us-central1/clusters/k-sec\"}", CA);
	st = call(&fd, "PUT", path, root, b, NULL, &r);
	if (st != 400)
		fail_msg("a new api_server without credentials: %ld %s", st, r.body);
	assert_string_equal(json_string_value(json_object_get(r.json, "code")),
	    "cluster.credentials_required");
	harness_http_free(&r);
	/* with credentials: the same probe as create (nothing listens on port 1) */
	snprintf(b, sizeof(b), "{\"name\":\"k-sec\",\"api_server\":\"https://127.0.0.1:1/other\","
	    "\"ca_cert\":\"%s\",\"credentials\":{\"token\":\"sec-cluster-token\"},"
	    "\"provider_cluster_id\":\"projects/p-sec/locations/us-central1/clusters/k-sec\"}",
	    CA);
	st = call(&fd, "PUT", path, root, b, NULL, &r);
	if (st != 422)
		fail_msg("a new api_server that does not answer: %ld %s", st, r.body);
	assert_string_equal(json_string_value(json_object_get(r.json, "code")),
	    "cluster.unreachable");
	harness_http_free(&r);
	{
		char *api = harness_sql_str("SELECT api_server FROM clusters WHERE name = 'k-sec'");

		assert_string_equal(api, "https://127.0.0.1:1");
		free(api);
	}
}

/* 3: priority classes are global: an environment-scoped admin may read, not write. */
static void
test_global_writes(void **state)
{
	char path[128];
	const char *hdr[] = { "If-Match: *", NULL };
	struct http_result r;

	(void)state;
	snprintf(path, sizeof(path), "/v1/priority-classes/%s", PC);
	assert_int_equal(call(&fd, "GET", path, devadmin, NULL, NULL, NULL), 200);
	assert_int_equal(call(&fd, "PUT", path, devadmin,
	    "{\"name\":\"sec-default\",\"value\":100,\"preempt\":true}", hdr, &r), 403);
	assert_string_equal(json_string_value(json_object_get(r.json, "code")),
	    "auth.global_object");
	harness_http_free(&r);
	assert_int_equal(call(&fd, "POST", "/v1/priority-classes", devadmin,
	    "{\"name\":\"sec-new\",\"value\":5}", NULL, NULL), 403);
	assert_int_equal(call(&fd, "DELETE", path, devadmin, NULL, hdr, NULL), 403);
	assert_int_equal(call(&fd, "POST", "/v1/priority-classes", root,
	    "{\"name\":\"sec-new\",\"value\":5}", NULL, NULL), 201);
}

/* 4: audit rows of no environment (token create, priority classes) only for '*' callers. */
static void
test_audit_scope(void **state)
{
	struct http_result r;
	size_t i;
	json_t *v;
	bool star_sees = false;

	(void)state;
	assert_int_equal(call(&fd, "POST", "/v1/tokens", root,
	    "{\"name\":\"audited\",\"role\":\"viewer\",\"environments\":[\"prod\"]}", NULL, NULL),
	    201);
	assert_int_equal(call(&fd, "GET", "/v1/audit?limit=500", devadmin, NULL, NULL, &r), 200);
	json_array_foreach(json_object_get(r.json, "items"), i, v) {
		json_t *env = json_object_get(v, "environment");

		if (env == NULL || json_is_null(env) || strcmp(json_string_value(env), "dev") != 0)
			fail_msg("a dev admin sees audit row %s of environment %s",
			    json_string_value(json_object_get(v, "action")),
			    json_is_string(env) ? json_string_value(env) : "null");
	}
	harness_http_free(&r);
	assert_int_equal(call(&fd, "GET", "/v1/audit?limit=500", root, NULL, NULL, &r), 200);
	json_array_foreach(json_object_get(r.json, "items"), i, v)
		star_sees = star_sees || strcmp(json_string_value(json_object_get(v, "action")),
		    "token.create") == 0;
	assert_true(star_sees);
	harness_http_free(&r);
}

/* The value of the metric line that starts with prefix, or -1. */
static double
metric(const char *text, const char *prefix)
{
	const char *p = strstr(text, prefix);

	return p ? atof(p + strlen(prefix)) : -1;
}

/* 6: 700 invented methods are one series (`other`); later requests are still counted. */
static void
test_method_metrics(void **state)
{
	struct http_result m;
	char meth[16];
	double before, after;
	static const char line[] =
	    "fleetd_http_requests_total{route=\"/healthz\",method=\"GET\",status=\"200\"} ";

	(void)state;
	for (int i = 0; i < 700; i++) {
		snprintf(meth, sizeof(meth), "X%dY", i);
		call(&fd2, meth, "/v1/nothing", NULL, NULL, NULL, NULL);
	}
	assert_int_equal(call(&fd2, "GET", "/metrics", harness_metrics_token(), NULL, NULL, &m), 200);
	if (strstr(m.body, "method=\"X1Y\"") != NULL)
		fail_msg("an invented method has its own series");
	assert_non_null(strstr(m.body, "method=\"other\""));
	before = metric(m.body, line);
	harness_http_free(&m);
	assert_int_equal(call(&fd2, "GET", "/healthz", NULL, NULL, NULL, NULL), 200);
	assert_int_equal(call(&fd2, "GET", "/metrics", harness_metrics_token(), NULL, NULL, &m), 200);
	after = metric(m.body, line);
	harness_http_free(&m);
	if (!(after >= 1 && after == (before < 0 ? 0 : before) + 1))
		fail_msg("GET /healthz counted %g then %g", before, after);
}

/* 7: namespaces are injective and DNS labels of at most 63 characters. */
static void
test_namespaces(void **state)
{
	static const char *const pairs[][2] = {
		{ "prod", "prod-training" }, { "prod-prod", "training" },
		{ "prod", "research" }, { "pr", "od-research" }, { "pr-od", "research" },
		{ "10", "prod-train-q" }, { "prod-train", "q" },
		{ "a-very-long-environment-name-31", "and-a-very-long-queue-name-of-sixty-three-characters-abcdefghi" },
		{ "a-very-long-environment-name-31", "and-a-very-long-queue-name-of-sixty-three-characters-abcdefghj" },
		{ "a-very-long-environment-name-3", "1-and-a-very-long-queue-name-of-sixty-three-characters-abcdefgh" },
	};
	enum { N = sizeof(pairs) / sizeof(pairs[0]) };
	char ns[N][64];

	(void)state;
	for (int i = 0; i < N; i++) {
		size_t n;

		assert_true(kuberay_namespace(pairs[i][0], pairs[i][1], ns[i], sizeof(ns[i])));
		n = strlen(ns[i]);
		assert_true(n >= 1 && n <= 63);
		assert_true(strspn(ns[i], "abcdefghijklmnopqrstuvwxyz0123456789-") == n);
		assert_true(ns[i][0] != '-' && ns[i][n - 1] != '-');
		for (int j = 0; j < i; j++)
			if (strcmp(ns[i], ns[j]) == 0)
				fail_msg("%s/%s and %s/%s share namespace %s", pairs[i][0],
				    pairs[i][1], pairs[j][0], pairs[j][1], ns[i]);
	}
	/* the common case keeps its readable name */
	assert_string_equal(ns[2], "fleet-prod-research");
}

/* 8: provider_cluster_id is parsed and bound to the cloud's project and region. */
static void
test_provider_cluster_id(void **state)
{
	static const char *const bad[] = {
		"projects/p-sec/locations/us-central1/clusters/../../other",
		"projects/other-project/locations/us-central1/clusters/k2",
		"projects/p-sec/locations/europe-west4/clusters/k2",
		"projects/p-sec/locations/us-central1/clusters/k2/nodePools/x",
		"projects/p-sec/locations/us-central1/clusters/k%2F2",
		"projects/p-sec/locations/us-central1/clusters/",
	};
	char b[2048], path[128];
	struct http_result r;
	PGresult *res;

	(void)state;
	snprintf(path, sizeof(path), "/v1/clouds/%s/clusters", CLOUD);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		snprintf(b, sizeof(b), "{\"name\":\"k2\",\"api_server\":\"https://127.0.0.1:1\","
		    "\"ca_cert\":\"%s\",\"credentials\":{\"token\":\"t\"},"
		    "\"provider_cluster_id\":\"%s\"}", CA, bad[i]);
		call(&fd, "POST", path, root, b, NULL, &r);
		if (r.status != 400 || strcmp(json_string_value(json_object_get(r.json, "code")),
		    "cluster.bad_provider_id") != 0)
			fail_msg("provider_cluster_id %s: %ld %s", bad[i], r.status, r.body);
		harness_http_free(&r);
	}
	/* one provider cluster, one fleet cluster: the database refuses a second row */
	res = PQexec(pg, "INSERT INTO clusters (id, cloud_id, name, api_server, ca_cert,"
	    " credentials_sealed, provider_cluster_id) VALUES (gen_random_uuid(),"
	    " 'a1600000-0000-4000-8000-000000000001', 'k-dup', 'https://127.0.0.1:2', 'x', 'x',"
	    " 'PROJECTS/p-sec/locations/us-central1/clusters/k-sec')");
	if (PQresultStatus(res) == PGRES_COMMAND_OK)
		fail_msg("a provider cluster was attached twice");
	assert_string_equal(PQresultErrorField(res, PG_DIAG_SQLSTATE), "23505");
	PQclear(res);
}

/* 9: a revoked token fails on every replica within 100 ms, even when both had it cached. */
static void
test_revocation_replicas(void **state)
{
	char *t = harness_token(dburl, "viewer", "dev"), *id, path[128];
	struct fleetd_proc *rep[2] = { &fd, &fd2 };
	double t0, worst = 0;

	(void)state;
	for (int k = 0; k < 2; k++)	/* cached on both */
		assert_int_equal(call(rep[k], "GET", "/v1/environments", t, NULL, NULL, NULL), 200);
	id = harness_sql_str("SELECT id FROM api_tokens ORDER BY created_at DESC LIMIT 1");
	snprintf(path, sizeof(path), "/v1/tokens/%s", id);
	assert_int_equal(call(&fd, "DELETE", path, root, NULL, NULL, NULL), 204);
	t0 = harness_now_s() * 1000;
	for (int k = 0; k < 2; k++) {
		long st;

		while ((st = call(rep[k], "GET", "/v1/environments", t, NULL, NULL, NULL)) == 200 &&
		    harness_now_s() * 1000 - t0 < 3000)
			usleep(2000);
		assert_int_equal(st, 401);
		worst = harness_now_s() * 1000 - t0 > worst ? harness_now_s() * 1000 - t0 : worst;
	}
	print_message("revocation: 401 on both replicas %.1f ms after the DELETE answered\n",
	    worst);
	if (worst > 100)
		fail_msg("the revoked token was still accepted %.0f ms after revocation", worst);
	free(id);
	free(t);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_idempotent_token_secret),
		cmocka_unit_test(test_cluster_endpoint_change),
		cmocka_unit_test(test_global_writes),
		cmocka_unit_test(test_audit_scope),
		cmocka_unit_test(test_method_metrics),
		cmocka_unit_test(test_namespaces),
		cmocka_unit_test(test_provider_cluster_id),
		cmocka_unit_test(test_revocation_replicas),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
