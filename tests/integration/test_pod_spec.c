/* test_pod_spec: a job's pod section end to end against cloudsim (issue 26) — a RayJob
 * mounting a PVC and setting env runs, and the object the member stored carries both
 * (schema-valid); the environment's pod policy refuses what it does not allow with a
 * pointer; only an admin of the environment may change the policy. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "providers/jobspec.h"
#include "providers/kuberay.h"
#include "regions/catalog.h"
#include "tests/harness/harness.h"

#define ENV		"test"
#define OTHER		"other"
#define H100		"nvidia-h100-80gb"

static struct fleetd_proc fd;
static struct harness_cs cs;
static char dburl[512];
static char *admin;

static json_t *
sim_object(const char *cluster, const char *name)
{
	char path[256];
	json_t *all, *o = NULL;

	snprintf(path, sizeof(path), "/_sim/objects?cluster=%s&name=%s", cluster, name);
	all = harness_sim_get(&cs, path);
	if (json_array_size(json_object_get(all, "objects")) == 1)
		o = json_incref(json_object_get(json_array_get(json_object_get(all, "objects"), 0),
		    "object"));
	json_decref(all);
	return o;
}

/* Capacity as the poller would write it from cloudsim's ground truth (test_dispatch). */
static void
seed_pool(const char *cluster_id, const char *provider, json_t *pool)
{
	const char *mt = harness_js(pool, "machine_type");
	const char *flavor = json_string_value(json_object_get(pool, "accelerator"));
	int nodes = (int)harness_ji(pool, "nodes");
	int per = (int)harness_ji(pool, "accelerators_per_node");
	int free_accel = (int)harness_ji(pool, "free_accelerators");
	struct catalog_machine m;
	struct err e = { 0 };
	json_t *topo = json_array(), *real;
	char *ts;
	size_t i;

	if (!catalog_machine_lookup(provider, mt, &m, &e)) {
		m.vcpus = 16;
		m.memory_gib = 64;
	}
	if (flavor != NULL && strncmp(flavor, "tpu", 3) == 0) {
		json_decref(topo);
		return;
	}
	json_array_foreach(json_object_get(pool, "node_list"), i, real)
		json_array_append_new(topo, json_pack("{s:s, s:I, s:I, s:I, s:b}", "name",
		    harness_js(real, "name"), "free_accel", harness_ji(real, "free_accelerators"),
		    "free_cpu_m", (json_int_t)(m.vcpus - 2) * 1000, "free_mem",
		    (json_int_t)(m.memory_gib - 16) << 30, "ready", 1));
	topo = json_pack("{s:o}", "nodes", topo);
	ts = json_dumps(topo, JSON_COMPACT);
	json_decref(topo);
	harness_sql("INSERT INTO capacity (cluster_id, pool, flavor, machine_type, spot, price_hour,"
	    " accel_per_node, nodes, max_nodes, autoscaling, free_accel, free_cpu_m, free_mem,"
	    " topology) VALUES ('%s', '%s', '%s', '%s', %s, %f, %d, %d, %d, %s, %d, %lld, %lld,"
	    " '%s') ON CONFLICT (cluster_id, pool, flavor) DO NOTHING", cluster_id,
	    harness_js(pool, "name"), per > 0 && flavor ? flavor : "cpu", mt,
	    json_is_true(json_object_get(pool, "spot")) ? "true" : "false",
	    json_real_value(json_object_get(pool, "price_per_hour")), per, nodes,
	    (int)harness_ji(pool, "max"), json_is_true(json_object_get(pool, "autoscaling")) ?
	    "true" : "false", free_accel, (long long)(m.vcpus - 2) * 1000 * nodes,
	    (long long)(m.memory_gib - 16) * nodes << 30, ts);
	free(ts);
}

static void
register_cluster(const char *name)
{
	const char *prov = harness_js(harness_cs_cluster(&cs, name), "provider");
	json_t *st, *cl, *p;
	char id[40];
	size_t i, k;

	harness_register(&cs, admin, name, NULL, id);
	st = harness_sim_get(&cs, "/_sim/state");
	json_array_foreach(json_object_get(st, "clusters"), i, cl) {
		if (strcmp(harness_js(cl, "name"), name) != 0)
			continue;
		json_array_foreach(json_object_get(cl, "pools"), k, p)
			seed_pool(id, prov, p);
	}
	json_decref(st);
}

static int
setup(void **state)
{
	(void)state;
	harness_cs_start(&cs, NULL, "2");
	harness_cs_env_add(&cs, "FLEETD_SNAPSHOT_MAX_AGE=1000000");
	harness_cs_env_add(&cs, "FLEETD_WORKERS=scheduler,dispatch,status");
	harness_cs_env_add(&cs, "FLEETD_SCHEDULER_INTERVAL_MS=300");
	harness_fleetd_cs(&fd, dburl, sizeof(dburl), "podspec", &cs, NULL);
	admin = harness_keep(harness_token(dburl, "admin", "*"));
	harness_post_created(admin, "/v1/environments", "{\"name\":\"" ENV "\"}");
	harness_post_created(admin, "/v1/environments", "{\"name\":\"" OTHER "\"}");
	harness_pclass(admin, "low", 10, false);
	harness_queue(admin, ENV, "ml", "low", H100, 200);
	register_cluster("test-hp-usw2");
	return 0;
}

static const char *const POD = "\"pod\":{\"env\":[{\"name\":\"HF_HOME\",\"value\":\"/data/hf\"}],"
    "\"volumes\":[{\"name\":\"data\",\"persistent_volume_claim\":{\"claim_name\":\"datasets\"}}],"
    "\"volume_mounts\":[{\"name\":\"data\",\"mount_path\":\"/data\"}]}";

static long
submit(const char *name)
{
	char body[2048];

	snprintf(body, sizeof(body), "{\"environment\":\"" ENV "\",\"kind\":\"RayJob\",\"queue\":"
	    "\"ml\",\"name\":\"%s\",\"ray_version\":\"2.52.0\",\"entrypoint\":\"python t.py\","
	    "\"head\":{\"cpu\":\"2\",\"memory\":\"8Gi\"},\"worker_groups\":[{\"name\":\"gpu\","
	    "\"replicas\":1,\"cpu\":\"8\",\"memory\":\"64Gi\",\"accelerator\":{\"flavor\":\""
	    H100 "\",\"count\":8},%s}],\"constraints\":{\"providers\":[\"hyperpod\"]}}", name, POD);
	return harness_call("POST", admin, body, "/v1/jobs");
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

/* The job runs and the member's stored RayJob mounts the PVC and sets the env. */
static void
test_pvc_and_env_applied(void **state)
{
	char name[64], file[300], *id;
	json_t *applied, *pod, *ctr, *vol;

	(void)state;
	assert_int_equal(submit("pod-pvc"), 201);
	{
		json_t *j = json_loads(harness_r.body, 0, NULL);

		id = strdup(harness_js(j, "id"));
		json_decref(j);
	}
	harness_job_wait_row(id, "running", 1, 30);
	assert_true(kuberay_object_name(JOBSPEC_RAYJOB, "pod-pvc", id, 1, name, sizeof(name)));
	applied = sim_object("test-hp-usw2", name);
	assert_non_null(applied);
	pod = json_object_get(json_object_get(json_array_get(json_object_get(json_object_get(
	    json_object_get(applied, "spec"), "rayClusterSpec"), "workerGroupSpecs"), 0),
	    "template"), "spec");
	ctr = json_array_get(json_object_get(pod, "containers"), 0);
	vol = named(json_object_get(pod, "volumes"), "data");
	assert_non_null(vol);
	assert_string_equal(harness_js(json_object_get(vol, "persistentVolumeClaim"), "claimName"),
	    "datasets");
	assert_string_equal(harness_js(named(json_object_get(ctr, "volumeMounts"), "data"),
	    "mountPath"), "/data");
	assert_string_equal(harness_js(named(json_object_get(ctr, "env"), "HF_HOME"), "value"),
	    "/data/hf");
	assert_non_null(named(json_object_get(ctr, "env"), "FLEET_JOB_ID"));
	snprintf(file, sizeof(file), "%s/pod-pvc.json", cs.dir);
	assert_int_equal(json_dump_file(applied, file, JSON_INDENT(2)), 0);
	assert_int_equal(harness_sh(FLEETD_SOURCE_DIR "/../shared/tools/validate-manifest "
	    "--quiet %s", file), 0);
	harness_call("POST", admin, "{}", "/v1/jobs/%s/cancel", id);
	json_decref(applied);
	free(id);
}

/* Viewer, operator and another environment's admin cannot change the policy; it stays. */
static void
test_policy_authz(void **state)
{
	const char *body = "{\"name\":\"" ENV "\",\"pod_policy\":{\"env\":false}}";
	char *viewer = harness_token(dburl, "viewer", ENV);
	char *oper = harness_token(dburl, "operator", ENV);
	char *other = harness_token(dburl, "admin", OTHER);

	(void)state;
	harness_call("PUT", viewer, body, "/v1/environments/" ENV);
	harness_expect_status(NULL, 403);
	harness_call("PUT", oper, body, "/v1/environments/" ENV);
	harness_expect_status(NULL, 403);
	harness_call("PUT", other, body, "/v1/environments/" ENV);
	harness_expect_status(NULL, 404);
	assert_int_equal(harness_sql_long("SELECT count(*) FROM environments WHERE name = '" ENV
	    "' AND pod_policy->>'env' = 'true'"), 1);
	/* the viewer reads it */
	assert_true(json_is_true(json_object_get(json_object_get(harness_get_ok(viewer,
	    "/v1/environments/" ENV), "pod_policy"), "env")));
	free(viewer);
	free(oper);
	free(other);
}

/* The admin narrows the policy: a PVC is refused with the pointer; host_path never. */
static void
test_policy_refusal(void **state)
{
	json_t *env;

	(void)state;
	harness_call("PUT", admin, "{\"name\":\"" ENV "\",\"pod_policy\":{\"volume_kinds\":"
	    "[\"host_path\"]}}", "/v1/environments/" ENV);
	harness_expect_problem(NULL, 422, "env.pod_policy_invalid", "/pod_policy/volume_kinds/0");
	harness_call("PUT", admin, "{\"name\":\"" ENV "\",\"pod_policy\":{\"volume_kinds\":"
	    "[\"csi\", \"secret\"]}}", "/v1/environments/" ENV);
	harness_expect_status(NULL, 200);
	env = harness_get_ok(admin, "/v1/environments/" ENV);
	assert_int_equal(json_array_size(json_object_get(json_object_get(env, "pod_policy"),
	    "volume_kinds")), 2);
	assert_true(json_is_true(json_object_get(json_object_get(env, "pod_policy"), "env")));
	assert_int_equal(submit("pod-refused"), 422);
	harness_expect_problem(NULL, 422, "jobspec.pod_not_allowed", "/worker_groups/0/pod/volumes/0");
	assert_int_equal(harness_sql_long("SELECT count(*) FROM jobs WHERE name = 'pod-refused'"), 0);
	/* a PUT without pod_policy leaves it as it is */
	harness_call("PUT", admin, "{\"name\":\"" ENV "\",\"description\":\"d\"}",
	    "/v1/environments/" ENV);
	harness_expect_status(NULL, 200);
	assert_int_equal(submit("pod-refused"), 422);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_pvc_and_env_applied),
		cmocka_unit_test(test_policy_authz),
		cmocka_unit_test(test_policy_refusal),
	};

	return cmocka_run_group_tests(tests, setup, harness_group_teardown);
}
