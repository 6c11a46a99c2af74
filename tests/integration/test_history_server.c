/* test_history_server: an environment names KubeRay History Server log storage (issue 24) —
 * only its admin sets it, bad storage is a 422 naming the member; a job dispatched then
 * carries the collector on the member (what cloudsim stored) and explain links its session
 * in the History Server; PUT null removes it for the next attempts; GET shows it. */
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

#define ENV		"fl"
#define H100		"nvidia-h100-80gb"
#define CLUSTER		"fl-gke-usc1"
#define HS		"{\"storage\":\"gs://fleet-ray-logs/fl\",\"collector_image\":" \
			"\"quay.io/kuberay/collector:v1.7.0\",\"url\":\"https://ray-history.example.com\"}"

static struct harness_fleet F;
static const char *oper, *viewer, *env_admin, *other_admin;

static int
setup(void **state)
{
	harness_fleet_ctl_start(&F, "history", FLEETD_SOURCE_DIR
	    "/tests/fixtures/fleets/failures.json", "4", NULL);
	harness_fleet_roles(&F, ENV, &oper, &viewer, &env_admin, &other_admin);
	*state = &F;
	return 0;
}

static json_t *
named(json_t *arr, const char *name)
{
	json_t *v;
	size_t i;

	json_array_foreach(arr, i, v)
		if (strcmp(harness_js(v, "name"), name) == 0)
			return v;
	return NULL;
}

/* The job's object as the member stored it (new reference). */
static json_t *
stored(const char *id)
{
	char *name = harness_sql_str("SELECT manifest->'metadata'->>'name' FROM jobs WHERE id ="
	    " '%s'", id), path[300];
	json_t *all, *o;

	snprintf(path, sizeof(path), "/_sim/objects?cluster=%s&name=%s", CLUSTER, name);
	all = harness_sim_get(&F.cs, path);
	assert_int_equal(json_array_size(json_object_get(all, "objects")), 1);
	o = json_incref(json_object_get(json_array_get(json_object_get(all, "objects"), 0),
	    "object"));
	json_decref(all);
	free(name);
	return o;
}

/* The head pod spec's container named name in the stored RayJob o (borrowed). */
static json_t *
head_container(json_t *o, const char *name)
{
	json_t *cs = json_object_get(json_object_get(o, "spec"), "rayClusterSpec");
	json_t *tmpl = json_object_get(json_object_get(cs, "headGroupSpec"), "template");

	return named(json_object_get(json_object_get(tmpl, "spec"), "containers"), name);
}

static void
test_setting_and_authz(void **state)
{
	json_t *env;

	(void)state;
	harness_call("PUT", viewer, "{\"name\":\"" ENV "\",\"history_server\":" HS "}",
	    "/v1/environments/" ENV);
	harness_expect_status(NULL, 403);
	harness_call("PUT", oper, "{\"name\":\"" ENV "\",\"history_server\":" HS "}",
	    "/v1/environments/" ENV);
	harness_expect_status(NULL, 403);
	harness_call("PUT", other_admin, "{\"name\":\"" ENV "\",\"history_server\":" HS "}",
	    "/v1/environments/" ENV);
	harness_expect_status(NULL, 404);
	harness_call("PUT", env_admin, "{\"name\":\"" ENV "\",\"history_server\":{\"storage\":"
	    "\"ftp://x/y\",\"collector_image\":\"c:1\"}}", "/v1/environments/" ENV);
	harness_expect_problem(NULL, 422, "env.bad_history_storage", "/history_server/storage");
	harness_call("PUT", env_admin, "{\"name\":\"" ENV "\",\"history_server\":{\"storage\":"
	    "\"s3://ray-logs\",\"collector_image\":\"c:1\"}}", "/v1/environments/" ENV);
	harness_expect_problem(NULL, 422, "env.missing_s3_region", "/history_server/s3_region");
	harness_call("PUT", env_admin, "{\"name\":\"" ENV "\",\"history_server\":" HS "}",
	    "/v1/environments/" ENV);
	harness_expect_status(NULL, 200);
	env = harness_get_ok(viewer, "/v1/environments/" ENV);
	assert_string_equal(harness_js(json_object_get(env, "history_server"), "storage"),
	    "gs://fleet-ray-logs/fl");
	/* a PUT without the member keeps it */
	harness_call("PUT", env_admin, "{\"name\":\"" ENV "\",\"description\":\"d\"}",
	    "/v1/environments/" ENV);
	harness_expect_status(NULL, 200);
	env = harness_get_ok(viewer, "/v1/environments/" ENV);
	assert_true(json_is_object(json_object_get(env, "history_server")));
}

static void
test_collector_and_link(void **state)
{
	char *id = harness_submit(oper, ENV, "ml", "RayJob", "hist", "default", H100, 8, -1), *id2;
	json_t *o, *col, *x, *hs, *env;
	struct harness_ctl r;
	char env_url[600], env_tok[200];

	(void)state;
	json_decref(harness_job_wait(oper, id, "running", 1, 90));
	o = stored(id);
	col = head_container(o, "collector");
	if (col == NULL)
		fail_msg("no collector in the stored object");
	assert_string_equal(harness_js(col, "image"), "quay.io/kuberay/collector:v1.7.0");
	assert_string_equal(harness_js(named(json_object_get(col, "env"), "GCS_BUCKET"), "value"),
	    "fleet-ray-logs");
	assert_string_equal(harness_js(named(json_object_get(col, "env"), "STORAGE_ROOT_DIR"),
	    "value"), "fl");
	assert_non_null(named(json_object_get(head_container(o, "ray-head"), "env"),
	    "RAY_enable_ray_event"));
	json_decref(o);
	/* explain links the live session */
	x = harness_get_ok(viewer, "/v1/jobs/%s/placement", id);
	hs = json_object_get(x, "history_server");
	assert_non_null(hs);
	assert_string_equal(harness_js(hs, "kind"), "rayjob");
	assert_non_null(strstr(harness_js(hs, "live"),
	    "https://ray-history.example.com/enter_cluster/"));
	assert_non_null(strstr(harness_js(hs, "live"), "/rayjob/"));
	snprintf(env_url, sizeof(env_url), "FLEET_URL=%s", harness_url(&F.fd, "%s", ""));
	snprintf(env_tok, sizeof(env_tok), "FLEET_TOKEN=%s", viewer);
	harness_ctl_run(&r, NULL, (const char *const[]){ env_url, env_tok, NULL },
	    (const char *const[]){ "jobs", "explain", id, NULL });
	if (r.rc != 0 || strstr(r.out, "History Server: ") == NULL ||
	    strstr(r.out, "live session: https://ray-history.example.com/enter_cluster/") == NULL)
		fail_msg("fleetctl jobs explain: rc %d\n%s\n%s", r.rc, r.out, r.err);
	harness_ctl_free(&r);
	harness_call("POST", oper, "{}", "/v1/jobs/%s/cancel", id);
	json_decref(harness_job_wait(oper, id, "cancelled", 1, 90));
	/* removed: the next job has no collector and explain no link */
	harness_call("PUT", env_admin, "{\"name\":\"" ENV "\",\"history_server\":null}",
	    "/v1/environments/" ENV);
	harness_expect_status(NULL, 200);
	env = harness_get_ok(viewer, "/v1/environments/" ENV);
	assert_true(json_is_null(json_object_get(env, "history_server")));
	id2 = harness_submit(oper, ENV, "ml", "RayJob", "nohist", "default", H100, 8, -1);
	json_decref(harness_job_wait(oper, id2, "running", 1, 90));
	o = stored(id2);
	assert_null(head_container(o, "collector"));
	json_decref(o);
	x = harness_get_ok(viewer, "/v1/jobs/%s/placement", id2);
	assert_null(json_object_get(x, "history_server"));
	harness_call("POST", oper, "{}", "/v1/jobs/%s/cancel", id2);
	free(id);
	free(id2);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_setting_and_authz),
		cmocka_unit_test(test_collector_and_link),
	};

	return cmocka_run_group_tests(tests, setup, harness_fleet_ctl_teardown);
}
