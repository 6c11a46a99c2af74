/* test_topology: a cluster declares its own topology keys (issue 26).  An AKS member whose
 * GB200 trays carry NVIDIA's nvidia.com/gpu.clique (AKS documents no rack label of its
 * own) is registered with the labels fleet.io/rack-key and fleet.io/block-key naming the
 * node labels to read: the poller takes the racks from them, a topology pack job is placed
 * on the clique and the manifest requires it under that key, and cloudsim's scheduler runs
 * the workers there.  A key that is not a node label key is 400 cluster.bad_label. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/harness/harness.h"

#define ENV	"test"
#define CLUSTER	"test-aks-eus"
#define CLIQUE	"7f3a9c1e-5b2d-4c11-9e0a-2d4f6b8a1c3e.1"

static struct fleetd_proc fd;
static struct harness_cs cs;
static char dburl[512];
static struct harness_roles R;

static int
setup(void **state)
{
	const char *const env[] = {
		"FLEETD_WORKERS=poller,scheduler,dispatch,status",
		"FLEETD_POLL_INTERVAL_MS=500",
		"FLEETD_SCHEDULER_INTERVAL_MS=300",
		NULL,
	};
	json_t *fleet = harness_fleet_json(), *c;
	size_t i;

	(void)state;
	/* one NVL72 rack of ND GB200 v6 trays, labelled the way NVIDIA's GPU feature discovery
	 * names the multi-node NVLink clique, and a site's own InfiniBand block label */
	json_array_foreach(json_object_get(fleet, "clusters"), i, c)
		if (strcmp(harness_js(c, "name"), CLUSTER) == 0)
			json_array_append_new(json_object_get(c, "pools"), json_pack("{s:s, s:s,"
			    " s:i, s:i, s:f, s:i, s:{s:s, s:s}}", "name", "gb200",
			    "machine_type", "Standard_ND128isr_NDR_GB200_v6", "nodes", 18, "max", 36,
			    "price_per_hour", 62.0, "nodes_per_rack", 18, "labels",
			    "nvidia.com/gpu.clique", CLIQUE, "site.example/ib-block", "ib-7"));
	harness_cs_start_json(&cs, fleet, "10");
	json_decref(fleet);
	harness_fleetd_cs(&fd, dburl, sizeof(dburl), "topology", &cs, env);
	harness_roles(dburl, ENV, &R);
	harness_pclass(R.admin, "low", 10, false);
	harness_queue(R.admin, ENV, "gb", "low", "nvidia-gb200", 72);
	return 0;
}

static int
teardown(void **state)
{
	(void)state;
	return harness_teardown(&fd, dburl, &cs);
}

static void
test_declared_keys(void **state)
{
	const char *const names[] = { CLUSTER, NULL };
	json_t *c = harness_cs_cluster(&cs, CLUSTER), *body, *job, *pl;
	char cloud[40], *id, file[600], *text;
	long st;

	(void)state;
	harness_cloud(&cs, R.admin, CLUSTER, NULL, cloud);
	body = json_pack("{s:s, s:s, s:s, s:{s:s}, s:s, s:{s:s, s:s}}", "name", CLUSTER,
	    "api_server", harness_js(c, "api_server"), "ca_cert", cs.ca_pem, "credentials",
	    "token", harness_js(c, "token"), "provider_cluster_id",
	    harness_js(c, "provider_cluster_id"), "labels", "fleet.io/rack-key",
	    "not a label key!", "fleet.io/block-key", "site.example/ib-block");
	harness_call_json("POST", R.admin, body, "/v1/clouds/%s/clusters", cloud);
	harness_expect_problem(NULL, 400, "cluster.bad_label", "/labels/fleet.io~1rack-key");
	json_object_set_new(json_object_get(body, "labels"), "fleet.io/rack-key",
	    json_string("nvidia.com/gpu.clique"));
	st = harness_call_json("POST", R.admin, body, "/v1/clouds/%s/clusters", cloud);
	if (st != 201)
		fail_msg("cluster: %ld %s", st, harness_r.body);
	json_decref(body);
	harness_wait_capacity(names, 60);

	id = harness_submit(R.admin, ENV, "gb", "RayJob", "clique", "low", "nvidia-gb200", 4, -1);
	json_decref(harness_job_wait(R.admin, id, "running", 1, 90));
	job = json_incref(harness_get_ok(R.admin, "/v1/jobs/%s", id));
	pl = json_object_get(job, "placement");
	/* harness_submit's job has topology none: the rack is still read from the clique */
	assert_string_equal(harness_js(pl, "pool"), "gb200");
	assert_string_equal(harness_js(pl, "racks.0"), CLIQUE);
	assert_string_equal(harness_js(pl, "block"), "ib-7");
	json_decref(job);
	free(id);

	/* topology pack: required under the declared keys, and the pods run there */
	text = harness_job_body(ENV, "gb", "nvidia-gb200", 4,
	    "{\"name\":\"packed\",\"topology\":\"pack\",\"worker_groups\":[{\"name\":\"w\","
	    "\"replicas\":4,\"cpu\":\"8\",\"memory\":\"64Gi\",\"accelerator\":{\"flavor\":"
	    "\"nvidia-gb200\",\"count\":4}}]}");
	body = json_loads(text, 0, NULL);
	free(text);
	assert_non_null(body);
	if (harness_call_json("POST", R.admin, body, "/v1/jobs") != 201)
		fail_msg("submit: %ld %s", harness_r.status, harness_r.body);
	json_decref(body);
	id = strdup(harness_js(harness_r.json, "id"));
	json_decref(harness_job_wait(R.admin, id, "running", 1, 90));
	job = json_incref(harness_get_ok(R.admin, "/v1/jobs/%s", id));
	assert_string_equal(harness_js(json_object_get(job, "placement"), "racks.0"), CLIQUE);
	assert_int_equal(json_array_size(harness_jp(job, "placement.racks")), 1);
	json_decref(job);
	harness_get_ok(R.admin, "/v1/jobs/%s/manifest", id);
	snprintf(file, sizeof(file), "%s/packed.json", cs.dir);
	assert_int_equal(json_dump_file(harness_r.json, file, JSON_INDENT(2)), 0);
	if (harness_sh("grep -q '\"nvidia.com/gpu.clique\"' %s && grep -q "
	    "'\"site.example/ib-block\"' %s && grep -q '\"%s\"' %s", file, file, CLIQUE, file) != 0)
		fail_msg("the manifest does not require the clique under the declared keys: %s",
		    file);
	if (harness_sh(FLEETD_SOURCE_DIR "/../shared/tools/validate-manifest --quiet %s",
	    file) != 0)
		fail_msg("the manifest fails validation");
	free(id);
}

/* A topology pack gang larger than every scale unit of its flavor would wait forever: it is
 * refused at submit (400 topology.too_large at /topology) naming the largest scale unit
 * known (block ib-7: 72 GPUs on one rack), although the cluster could grow to hold it
 * scattered (max 36 nodes: 144); a gang of exactly that size is taken.  Runs after
 * test_declared_keys, which registered the cluster and waited for its capacity. */
static void
test_pack_too_large(void **state)
{
	char *text;
	json_t *body;

	(void)state;
	text = harness_job_body(ENV, "gb", "nvidia-gb200", 4,
	    "{\"name\":\"huge\",\"topology\":\"pack\",\"worker_groups\":[{\"name\":\"w\","
	    "\"replicas\":36,\"cpu\":\"8\",\"memory\":\"64Gi\",\"accelerator\":{\"flavor\":"
	    "\"nvidia-gb200\",\"count\":4}}]}");
	body = json_loads(text, 0, NULL);
	free(text);
	assert_non_null(body);
	harness_call_json("POST", R.admin, body, "/v1/jobs");
	harness_expect_problem(NULL, 400, "topology.too_large", "/topology");
	if (strstr(harness_r.body, "ib-7") == NULL || strstr(harness_r.body, "72") == NULL ||
	    strstr(harness_r.body, "144") == NULL)
		fail_msg("the refusal does not name the largest scale unit: %s", harness_r.body);
	/* 72 GPUs: exactly the scale unit */
	json_object_set_new(body, "topology", json_string("pack"));
	json_object_set_new(json_array_get(json_object_get(body, "worker_groups"), 0),
	    "replicas", json_integer(18));
	json_object_set_new(body, "name", json_string("whole-unit"));
	if (harness_call_json("POST", R.admin, body, "/v1/jobs") != 201)
		fail_msg("a gang of the scale unit's size: %ld %s", harness_r.status,
		    harness_r.body);
	json_decref(body);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_declared_keys),
		cmocka_unit_test(test_pack_too_large),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
