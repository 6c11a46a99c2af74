/* test_flavors: the catalog is data (issue 26).  An admin adds a flavor over PUT
 * /v1/flavors/{name} for a machine type fleetd does not ship (cloudsim's
 * ml.p6-b300.48xlarge, whose nodes say "nvidia-b300"); a job using it is refused 400
 * catalog.unknown_flavor before and accepted after, without a restart, and runs on the
 * cloudsim pool of that machine type — so submission, the poller's pool -> flavor mapping
 * and the scheduler all read the flavors table.  Built-ins are listed, can be overridden
 * and not deleted; bad input is 422 with a pointer; every change is audited; viewer,
 * operator, another environment's admin and no token cannot change the catalog. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/jsonx.h"
#include "tests/harness/harness.h"

#define ENV	"test"
#define CLUSTER	"test-hp-usw2"
#define B300	"nvidia-b300-288gb"	/* the admin's name, not the nodes' "nvidia-b300" */
#define B300_MT	"ml.p6-b300.48xlarge"

static struct fleetd_proc fd;
static struct harness_cs cs;
static char dburl[512];
static struct harness_roles R;

static const char b300_body[] = "{\"kind\":\"gpu\",\"memory_gib\":288,\"machine_types\":"
    "[{\"provider\":\"hyperpod\",\"machine_type\":\"" B300_MT "\",\"accelerators_per_node\":8,"
    "\"vcpus\":192,\"memory_gib\":4096,\"on_demand_hour\":140,\"node_label\":{\"key\":"
    "\"node.kubernetes.io/instance-type\",\"value\":\"" B300_MT "\"}}]}";

static int
setup(void **state)
{
	const char *const env[] = {
		"FLEETD_WORKERS=poller,scheduler,dispatch,status",
		"FLEETD_POLL_INTERVAL_MS=500",
		"FLEETD_SCHEDULER_INTERVAL_MS=300",
		NULL,
	};
	const char *const names[] = { CLUSTER, NULL };
	json_t *fleet = harness_fleet_json(), *c;
	size_t i;

	(void)state;
	/* the member has a pool of B300 nodes fleetd's built-in catalog does not know */
	json_array_foreach(json_object_get(fleet, "clusters"), i, c)
		if (strcmp(harness_js(c, "name"), CLUSTER) == 0)
			json_array_append_new(json_object_get(c, "pools"), json_pack("{s:s, s:s,"
			    " s:i, s:i, s:f}", "name", "b300", "machine_type", B300_MT, "nodes", 2,
			    "max", 2, "price_per_hour", 140.0));
	harness_cs_start_json(&cs, fleet, "10");
	json_decref(fleet);
	harness_fleetd_cs(&fd, dburl, sizeof(dburl), "flavors", &cs, env);
	harness_roles(dburl, ENV, &R);
	harness_pclass(R.admin, "low", 10, false);
	harness_register(&cs, R.admin, CLUSTER, NULL, NULL);
	harness_wait_capacity(names, 60);
	return 0;
}

static char *
job_body(const char *queue, const char *name, const char *flavor)
{
	char *b = malloc(1024);

	snprintf(b, 1024, "{\"environment\":\"" ENV "\",\"kind\":\"RayJob\",\"queue\":\"%s\","
	    "\"name\":\"%s\",\"ray_version\":\"2.52.0\",\"entrypoint\":\"python t.py\","
	    "\"head\":{\"cpu\":\"1\",\"memory\":\"2Gi\"},\"worker_groups\":[{\"name\":\"gpu\","
	    "\"replicas\":1,\"cpu\":\"8\",\"memory\":\"64Gi\",\"accelerator\":{\"flavor\":"
	    "\"%s\",\"count\":8}}]}", queue, name, flavor);
	return b;
}

/* Built-ins: the new generations are listed; a built-in is overridden, never deleted. */
static void
test_builtins(void **state)
{
	json_t *f;
	char *all;

	(void)state;
	f = harness_get_ok(R.viewer, "/v1/flavors/nvidia-gb200");
	assert_true(json_is_true(json_object_get(f, "builtin")));
	assert_int_equal(harness_ji(f, "rack_size"), 18);
	assert_non_null(jsonx_find(json_object_get(f, "machine_types"), "machine_type",
	    "ml.p6e-gb200.36xlarge"));
	f = harness_get_ok(R.viewer, "/v1/flavors?limit=100");
	all = json_dumps(f, 0);
	assert_non_null(strstr(all, "\"tpu-v6e\""));
	assert_non_null(strstr(all, "\"nvidia-h200-141gb\""));
	free(all);
	/* TPU7x ships with its machine type, node label and shapes: a slice job of a shape
	 * Ironwood offers is queued, one it does not offer refused at submit (issue 26) */
	f = harness_get_ok(R.viewer, "/v1/flavors/tpu-v7x");
	assert_string_equal(harness_js(f, "kind"), "tpu");
	assert_non_null(jsonx_find(json_object_get(f, "machine_types"), "machine_type",
	    "tpu7x-standard-4t"));
	for (int k = 0; k < 2; k++) {
		char b[1024];

		snprintf(b, sizeof(b), "{\"environment\":\"" ENV "\",\"kind\":\"RayJob\","
		    "\"queue\":\"tpu7x\",\"name\":\"ironwood\",\"ray_version\":\"2.52.0\","
		    "\"entrypoint\":\"python t.py\",\"head\":{\"cpu\":\"1\",\"memory\":\"2Gi\"},"
		    "\"worker_groups\":[{\"name\":\"tpu\",\"replicas\":1,\"cpu\":\"100\","
		    "\"memory\":\"400Gi\",\"accelerator\":{\"flavor\":\"tpu-v7x\",\"count\":4}}],"
		    "\"topology\":{\"type\":\"slice\",\"shape\":\"%s\"},\"constraints\":"
		    "{\"providers\":[\"gke\"]}}", k == 0 ? "4x4x6" : "4x4x4");
		if (k == 0) {
			harness_queue(R.admin, ENV, "tpu7x", "low", "tpu-v7x", 256);
			harness_call("POST", R.oper, b, "/v1/jobs");
			harness_expect_problem(NULL, 400, "catalog.bad_slice", "/topology/shape");
		} else {
			long st = harness_call("POST", R.oper, b, "/v1/jobs");

			/* queued (201), or refused as larger than the fleet holds: never a
			 * shape error */
			if (st != 201 && strstr(harness_r.body, "bad_slice") != NULL)
				fail_msg("4x4x4 refused: %s", harness_r.body);
		}
	}
	harness_call("DELETE", R.admin, NULL, "/v1/flavors/nvidia-b200");
	harness_expect_problem(NULL, 409, "catalog.builtin_flavor", NULL);
	harness_call("GET", R.viewer, NULL, "/v1/flavors/nvidia-b999");
	harness_expect_problem(NULL, 404, "catalog.flavor_not_found", NULL);
	/* an override replaces the shipped definition; deleting it restores the built-in */
	harness_call("PUT", R.admin, "{\"kind\":\"gpu\",\"memory_gib\":180,\"machine_types\":"
	    "[{\"provider\":\"gke\",\"machine_type\":\"a4-highgpu-8g\","
	    "\"accelerators_per_node\":8}]}", "/v1/flavors/nvidia-b200");
	harness_expect_status(NULL, 200);
	assert_true(json_is_true(json_object_get(harness_r.json, "overridden")));
	assert_int_equal(json_array_size(json_object_get(harness_r.json, "machine_types")), 1);
	harness_call("DELETE", R.admin, NULL, "/v1/flavors/nvidia-b200");
	harness_expect_status(NULL, 204);
	f = harness_get_ok(R.viewer, "/v1/flavors/nvidia-b200");
	assert_false(json_is_true(json_object_get(f, "overridden")));
	assert_true(json_array_size(json_object_get(f, "machine_types")) > 1);
	assert_int_equal(harness_audit_count(R.admin, "nvidia-b200", "flavor.update"), 1);
	assert_int_equal(harness_audit_count(R.admin, "nvidia-b200", "flavor.delete"), 1);
}

/* Bad input: 422 catalog.bad_flavor with the member's pointer; a machine type of another
 * flavor 409. */
static void
test_refusals(void **state)
{
	static const struct { const char *body, *code, *pointer; int status; } cases[] = {
		{ "{\"kind\":\"fpga\",\"memory_gib\":8,\"machine_types\":[{\"provider\":\"gke\","
		  "\"machine_type\":\"x\",\"accelerators_per_node\":1}]}", "catalog.bad_flavor",
		  "/kind", 422 },
		{ "{\"kind\":\"gpu\",\"memory_gib\":0,\"machine_types\":[{\"provider\":\"gke\","
		  "\"machine_type\":\"x\",\"accelerators_per_node\":1}]}", "catalog.bad_flavor",
		  "/memory_gib", 422 },
		{ "{\"kind\":\"gpu\",\"memory_gib\":8,\"machine_types\":[]}", "catalog.bad_flavor",
		  "/machine_types", 422 },
		{ "{\"kind\":\"gpu\",\"memory_gib\":8,\"machine_types\":[{\"provider\":\"eks\","
		  "\"machine_type\":\"x\",\"accelerators_per_node\":1}]}", "catalog.bad_flavor",
		  "/machine_types/0/provider", 422 },
		{ "{\"kind\":\"gpu\",\"memory_gib\":8,\"machine_types\":[{\"provider\":\"gke\","
		  "\"machine_type\":\"x\",\"accelerators_per_node\":0}]}", "catalog.bad_flavor",
		  "/machine_types/0/accelerators_per_node", 422 },
		{ "{\"kind\":\"gpu\",\"memory_gib\":8,\"machine_types\":[{\"provider\":\"gke\","
		  "\"machine_type\":\"x\",\"accelerators_per_node\":1,\"node_label\":{\"key\":"
		  "\"bad key!\",\"value\":\"v\"}}]}", "catalog.bad_flavor",
		  "/machine_types/0/node_label/key", 422 },
		{ "{\"kind\":\"gpu\",\"memory_gib\":8,\"machine_types\":[{\"provider\":\"gke\","
		  "\"machine_type\":\"x\",\"accelerators_per_node\":1,\"node_label\":{\"key\":"
		  "\"a/b\",\"value\":\"-v\"}}]}", "catalog.bad_flavor",
		  "/machine_types/0/node_label/value", 422 },
		{ "{\"kind\":\"tpu\",\"memory_gib\":8,\"rack_size\":18,\"machine_types\":[{"
		  "\"provider\":\"gke\",\"machine_type\":\"x\",\"accelerators_per_node\":4}]}",
		  "catalog.bad_flavor", "/rack_size", 422 },
		{ "{\"kind\":\"gpu\",\"memory_gib\":8,\"rack_size\":2000,\"machine_types\":[{"
		  "\"provider\":\"gke\",\"machine_type\":\"x\",\"accelerators_per_node\":4}]}",
		  "catalog.bad_flavor", "/rack_size", 422 },
		{ "{\"kind\":\"gpu\",\"memory_gib\":8,\"machine_types\":[{\"provider\":\"gke\","
		  "\"machine_type\":\"a4x-highgpu-4g\",\"accelerators_per_node\":4}]}",
		  "catalog.machine_taken", "/machine_types/0/machine_type", 409 },
		{ "{\"kind\":\"gpu\",\"memory_gib\":8,\"colour\":1,\"machine_types\":[]}",
		  "api.unknown_field", "/colour", 422 },
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		harness_call("PUT", R.admin, cases[i].body, "/v1/flavors/bad-one");
		harness_expect_problem(NULL, cases[i].status, cases[i].code, cases[i].pointer);
	}
	harness_call("PUT", R.admin, b300_body, "/v1/flavors/Bad_Name");
	harness_expect_problem(NULL, 422, "catalog.bad_flavor", "/name");
}

/* Nobody but an admin of every environment changes the catalog. */
static void
test_authz(void **state)
{
	const char *const who[] = { R.viewer, R.oper, R.other, NULL };

	(void)state;
	for (int i = 0; i < 4; i++) {
		long want = who[i] == NULL ? 401 : 403;

		harness_call("PUT", who[i], b300_body, "/v1/flavors/" B300);
		harness_expect_status(NULL, want);
		harness_call("DELETE", who[i], NULL, "/v1/flavors/nvidia-h100-80gb");
		harness_expect_status(NULL, want);
	}
	harness_call("GET", R.viewer, NULL, "/v1/flavors/" B300);
	harness_expect_problem(NULL, 404, "catalog.flavor_not_found", NULL);
}

/* The whole story: refused, added by the admin, accepted, placed on the B300 pool. */
static void
test_added_flavor_runs(void **state)
{
	char *b, id[40];
	json_t *j;

	(void)state;
	harness_queue(R.admin, ENV, "qb", "low", "nvidia-h100-80gb", 16);
	b = job_body("qb", "before", B300);
	harness_call("POST", R.oper, b, "/v1/jobs");
	free(b);
	harness_expect_problem(NULL, 400, "catalog.unknown_flavor",
	    "/worker_groups/0/accelerator/flavor");
	harness_call("PUT", R.admin, b300_body, "/v1/flavors/" B300);
	harness_expect_status(NULL, 201);
	assert_string_equal(harness_js(harness_r.json, "name"), B300);
	assert_false(json_is_true(json_object_get(harness_r.json, "builtin")));
	assert_int_equal(harness_audit_count(R.admin, B300, "flavor.create"), 1);
	/* the same PUT again changes nothing and audits nothing */
	harness_call("PUT", R.admin, b300_body, "/v1/flavors/" B300);
	harness_expect_status(NULL, 200);
	assert_int_equal(harness_ji(harness_r.json, "version"), 1);
	assert_int_equal(harness_audit_count(R.admin, B300, "flavor.update"), 0);

	/* the poller maps the pool to the admin's flavor (the nodes say nvidia-b300) */
	assert_int_equal(harness_wait_long(30, 1, "SELECT count(*) FROM capacity WHERE"
	    " machine_type = '" B300_MT "' AND flavor = '" B300 "'"), 1);
	j = harness_queue(R.admin, ENV, "qb300", "low", B300, 16);
	assert_non_null(j);
	b = job_body("qb300", "after", B300);
	snprintf(id, sizeof(id), "%s", harness_js(harness_post_created(R.oper, "/v1/jobs", b),
	    "id"));
	free(b);
	json_decref(harness_job_wait(R.admin, id, "running", 0, 90));
	{
		char *pool = harness_sql_str("SELECT placement->>'pool' FROM jobs WHERE id = '%s'",
		    id);
		char *mt = harness_sql_str("SELECT min(machine_type) FROM capacity WHERE pool ="
		    " (SELECT placement->>'pool' FROM jobs WHERE id = '%s')", id);

		char *man = harness_sql_str("SELECT manifest::text FROM jobs WHERE id = '%s'", id);
		char file[600];
		FILE *f;

		print_message("job %s placed on pool %s (%s)\n", id, pool, mt);
		assert_string_equal(pool, "b300");
		assert_string_equal(mt, B300_MT);
		/* the rendered RayJob pins the workers to the machine type and passes the real
		 * KubeRay schemas */
		assert_non_null(strstr(man, "\"node.kubernetes.io/instance-type\": \"" B300_MT "\""));
		snprintf(file, sizeof(file), "%s/b300.json", cs.dir);
		f = fopen(file, "w");
		assert_non_null(f);
		fputs(man, f);
		fclose(f);
		assert_int_equal(harness_sh(FLEETD_SOURCE_DIR "/../shared/tools/validate-manifest "
		    "--quiet %s", file), 0);
		free(pool);
		free(mt);
		free(man);
	}
	/* in use by queue qb300 and the job: it stays */
	harness_call("DELETE", R.admin, NULL, "/v1/flavors/" B300);
	harness_expect_problem(NULL, 409, "catalog.flavor_in_use", NULL);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_builtins),
		cmocka_unit_test(test_refusals),
		cmocka_unit_test(test_authz),
		cmocka_unit_test(test_added_flavor_runs),
	};

	return cmocka_run_group_tests(tests, setup, harness_group_teardown);
}
