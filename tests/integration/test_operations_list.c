/* test_operations_list: GET /v1/operations lists every operation of the token's
 * environments (newest first, paged, filtered by state), never another environment's, with
 * names beside ids (cluster_name, failures[].name); fleetctl operations ls / get show them. */
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

static struct fleetd_proc fd;
static char dburl[512];
static char *root, *viewer_a, *operator_a, *admin_b;

#define OP_A1	"e1000000-0000-4000-8000-000000000001"	/* enva, cluster drain, 1 failed */
#define OP_A2	"e1000000-0000-4000-8000-000000000002"	/* enva, region drain, cancelled */
#define OP_A3	"e1000000-0000-4000-8000-000000000003"	/* enva, cluster drain, no jobs */
#define OP_B	"e1000000-0000-4000-8000-0000000000b1"	/* envb */

static int
setup(void **state)
{
	const char *env[] = { "FLEETD_WORKERS=none",
		"FLEETD_MASTER_KEY=b3BlcmF0aW9ucy1saXN0LXRlc3Qta2V5LTMyYnl0ZXMh", NULL };

	(void)state;
	harness_db_create("oplist", dburl, sizeof(dburl));
	harness_fleetd_start(&fd, dburl, env);
	root = harness_keep(harness_token(dburl, "admin", "*"));
	viewer_a = harness_keep(harness_token(dburl, "viewer", "enva"));
	operator_a = harness_keep(harness_token(dburl, "operator", "enva"));
	admin_b = harness_keep(harness_token(dburl, "admin", "envb"));
	harness_post_created(root, "/v1/environments", "{\"name\":\"enva\"}");
	harness_post_created(root, "/v1/environments", "{\"name\":\"envb\"}");
	harness_sql("INSERT INTO clouds (id, name, environment, provider, region, account,"
	    " external_id, state, required) VALUES ('a1000000-0000-4000-8000-000000000001',"
	    " 'cloud-a', 'enva', 'gke', 'us-central1', '{\"project\":\"p\"}', 'x1', 'active', '{}'),"
	    " ('a1000000-0000-4000-8000-000000000002', 'cloud-b', 'envb', 'gke', 'us-central1',"
	    " '{\"project\":\"q\"}', 'x2', 'active', '{}')");
	harness_sql("INSERT INTO clusters (id, cloud_id, name, api_server, ca_cert,"
	    " credentials_sealed, provider_cluster_id) VALUES"
	    " ('b1000000-0000-4000-8000-000000000001', 'a1000000-0000-4000-8000-000000000001',"
	    " 'gke-a-one', 'https://127.0.0.1:1', 'x', 'x', 'projects/p/k/a'),"
	    " ('b1000000-0000-4000-8000-000000000002', 'a1000000-0000-4000-8000-000000000002',"
	    " 'gke-b-one', 'https://127.0.0.1:1', 'x', 'x', 'projects/q/k/b')");
	harness_sql("INSERT INTO queues (id, name, environment) VALUES"
	    " ('c1000000-0000-4000-8000-000000000001', 'qa', 'enva')");
	harness_sql("INSERT INTO jobs (id, name, environment, queue_id, kind, priority_class,"
	    " priority, spec) VALUES ('d1000000-0000-4000-8000-000000000001', 'train-llama',"
	    " 'enva', 'c1000000-0000-4000-8000-000000000001', 'RayJob', 'normal', 100, '{}'),"
	    " ('d1000000-0000-4000-8000-000000000002', 'eval-small', 'enva',"
	    " 'c1000000-0000-4000-8000-000000000001', 'RayJob', 'normal', 100, '{}')");
	harness_sql("INSERT INTO operations (id, kind, environment, target, state, created_at)"
	    " VALUES ('" OP_A1 "', 'drain', 'enva', '{\"cluster_id\":"
	    " \"b1000000-0000-4000-8000-000000000001\", \"environment\": \"enva\"}', 'running',"
	    " now() - interval '3 minutes'),"
	    " ('" OP_A2 "', 'drain', 'enva', '{\"region\": \"us-central1\", \"environment\":"
	    " \"enva\"}', 'cancelled', now() - interval '2 minutes'),"
	    " ('" OP_A3 "', 'drain', 'enva', '{\"cluster_id\":"
	    " \"b1000000-0000-4000-8000-000000000001\", \"environment\": \"enva\"}', 'running',"
	    " now() - interval '1 minute'),"
	    " ('" OP_B "', 'drain', 'envb', '{\"cluster_id\":"
	    " \"b1000000-0000-4000-8000-000000000002\", \"environment\": \"envb\"}', 'running',"
	    " now())");
	harness_sql("INSERT INTO operation_jobs (operation_id, job_id, state, reason) VALUES"
	    " ('" OP_A1 "', 'd1000000-0000-4000-8000-000000000001', 'failed', 'no capacity left'),"
	    " ('" OP_A1 "', 'd1000000-0000-4000-8000-000000000002', 'moved', NULL)");
	return 0;
}

static const char *
item_id(json_t *page, size_t i)
{
	return json_string_value(json_object_get(json_array_get(json_object_get(page, "items"),
	    i), "id"));
}

/* A scoped viewer lists its three operations newest first, pages through them, filters by
 * state; another environment's operation is never in an answer. */
static void
test_list_scope_pages(void **state)
{
	json_t *p;
	const char *next;
	char *cur;

	(void)state;
	p = harness_get_ok(viewer_a, "/v1/operations");
	assert_int_equal(json_array_size(json_object_get(p, "items")), 3);
	assert_string_equal(item_id(p, 0), OP_A3);
	assert_string_equal(item_id(p, 1), OP_A2);
	assert_string_equal(item_id(p, 2), OP_A1);
	assert_null(json_object_get(json_array_get(json_object_get(p, "items"), 0), "jobs"));
	assert_string_equal(harness_js(p, "items.0.cluster_name"), "gke-a-one");
	assert_string_equal(harness_js(p, "items.1.state"), "cancelled");
	assert_string_equal(harness_js(p, "items.2.state"), "failed");
	assert_string_equal(harness_js(p, "items.0.state"), "succeeded");	/* no job waits */
	assert_true(json_is_null(json_object_get(p, "next")));

	/* pages of one: three pages, no repeats, then next is null */
	p = harness_get_ok(viewer_a, "/v1/operations?limit=1");
	assert_string_equal(item_id(p, 0), OP_A3);
	next = harness_js(p, "next");
	assert_true(strlen(next) > 0);
	cur = strdup(next);
	p = harness_get_ok(viewer_a, "%s", cur);
	free(cur);
	assert_string_equal(item_id(p, 0), OP_A2);
	cur = strdup(harness_js(p, "next"));
	p = harness_get_ok(viewer_a, "%s", cur);
	free(cur);
	assert_string_equal(item_id(p, 0), OP_A1);
	cur = strdup(harness_js(p, "next"));
	p = harness_get_ok(viewer_a, "%s", cur);
	free(cur);
	assert_int_equal(json_array_size(json_object_get(p, "items")), 0);

	/* state filter works on the reported state */
	p = harness_get_ok(operator_a, "/v1/operations?state=failed");
	assert_int_equal(json_array_size(json_object_get(p, "items")), 1);
	assert_string_equal(item_id(p, 0), OP_A1);
	p = harness_get_ok(operator_a, "/v1/operations?state=running");
	assert_int_equal(json_array_size(json_object_get(p, "items")), 0);

	/* another environment, asked for by name: empty, exactly as an unknown one */
	p = harness_get_ok(viewer_a, "/v1/operations?environment=envb");
	assert_int_equal(json_array_size(json_object_get(p, "items")), 0);
	p = harness_get_ok(viewer_a, "/v1/operations?environment=nosuch");
	assert_int_equal(json_array_size(json_object_get(p, "items")), 0);

	/* bad input */
	harness_call("GET", viewer_a, NULL, "/v1/operations?state=done");
	harness_expect_problem(NULL, 400, "api.bad_query", "/query/state");
	harness_call("GET", viewer_a, NULL, "/v1/operations?after=bm90LWEtdXVpZA");
	harness_expect_problem(NULL, 400, "api.bad_cursor", "/query/after");
	harness_call("GET", viewer_a, NULL, "/v1/operations?limit=0");
	harness_expect_problem(NULL, 400, "api.bad_limit", "/query/limit");
	harness_call("GET", NULL, NULL, "/v1/operations");
	harness_expect_status(NULL, 401);
}

/* An admin of the other environment sees only its own; a '*' admin sees all four. */
static void
test_other_env_admin(void **state)
{
	json_t *p;

	(void)state;
	p = harness_get_ok(admin_b, "/v1/operations");
	assert_int_equal(json_array_size(json_object_get(p, "items")), 1);
	assert_string_equal(harness_js(p, "items.0.cluster_name"), "gke-b-one");
	p = harness_get_ok(admin_b, "/v1/operations?environment=enva&state=failed");
	assert_int_equal(json_array_size(json_object_get(p, "items")), 0);
	harness_call("GET", admin_b, NULL, "/v1/operations/" OP_A1);
	harness_expect_problem(NULL, 404, "operation.not_found", NULL);
	p = harness_get_ok(root, "/v1/operations");
	assert_int_equal(json_array_size(json_object_get(p, "items")), 4);
}

/* Names beside ids: the drained cluster's and each failed job's, in the API and fleetctl. */
static void
test_names_fleetctl(void **state)
{
	const char *bin = getenv("FLEETD_BUILD_DIR");
	char out[] = "/tmp/fleetctl-ops-XXXXXX", *text;
	json_t *o;
	int fdo;

	(void)state;
	o = harness_get_ok(viewer_a, "/v1/operations/" OP_A1);
	assert_string_equal(harness_js(o, "cluster_name"), "gke-a-one");
	assert_string_equal(harness_js(o, "failures.0.name"), "train-llama");
	o = harness_get_ok(viewer_a, "/v1/operations/" OP_A2);
	assert_true(json_is_null(json_object_get(o, "cluster_name")));

	assert_non_null(bin);
	fdo = mkstemp(out);
	assert_true(fdo >= 0);
	close(fdo);
	assert_int_equal(harness_sh("FLEET_URL=%s FLEET_TOKEN=%s COLUMNS=200 %s/fleetctl"
	    " operations ls >%s", fd.url, viewer_a, bin, out), 0);
	text = harness_slurp(out);
	assert_non_null(text);
	assert_non_null(strstr(text, OP_A1));
	assert_non_null(strstr(text, "gke-a-one"));
	assert_non_null(strstr(text, "cancelled"));
	assert_null(strstr(text, OP_B));
	free(text);
	assert_int_equal(harness_sh("FLEET_URL=%s FLEET_TOKEN=%s COLUMNS=200 %s/fleetctl"
	    " operations ls --state failed -o json >%s", fd.url, viewer_a, bin, out), 0);
	text = harness_slurp(out);
	assert_non_null(text);
	assert_non_null(strstr(text, OP_A1));
	assert_null(strstr(text, OP_A2));
	free(text);
	assert_int_equal(harness_sh("FLEET_URL=%s FLEET_TOKEN=%s COLUMNS=200 %s/fleetctl"
	    " operations get %s >%s 2>&1", fd.url, viewer_a, bin, OP_A1, out), 0);
	text = harness_slurp(out);
	assert_non_null(text);
	assert_non_null(strstr(text, "gke-a-one"));
	free(text);
	unlink(out);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_list_scope_pages),
		cmocka_unit_test(test_other_env_admin),
		cmocka_unit_test(test_names_fleetctl),
	};

	return cmocka_run_group_tests(tests, setup, harness_group_teardown);
}
