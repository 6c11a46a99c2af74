/* test_tpu_subslice: GKE dynamic slicing (issue 26).  A GKE member holds a reserved TPU7x
 * pool of two 4x4x4 sub-blocks provisioned without a slice (cloudsim "dynamic_slicing":
 * 32 tpu7x-standard-4t nodes labelled with their partition of every sub-slice shape).  A
 * 2x2x2 slice job, which no fixed slice could hold, is carved out of a free 2x2x2 partition:
 * the placement names it, fleetd applies a Slice on it, cloudsim forms it and labels its two
 * nodes, and the job's pods run there (their selectors are the Slice's).  A whole-sub-block
 * 4x4x4 job then takes the other sub-block, whole.  Cancelling the first job deletes its
 * Slice and the nodes lose the slice labels. */
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

#define ENV	"test"
#define CLUSTER	"test-gke-usc1"

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
	const char *const names[] = { CLUSTER, NULL };
	json_t *fleet = harness_fleet_json(), *c;
	size_t i;

	(void)state;
	json_array_foreach(json_object_get(fleet, "clusters"), i, c)
		if (strcmp(harness_js(c, "name"), CLUSTER) == 0) {
			/* the slice controller's path, not Kueue's: no batch scheduler */
			json_object_del(c, "batch_scheduler");
			json_array_append_new(json_object_get(c, "pools"), json_pack("{s:s, s:s,"
			    " s:i, s:i, s:f, s:s, s:b}", "name", "ironwood", "machine_type",
			    "tpu7x-standard-4t", "nodes", 32, "max", 32, "price_per_hour", 48.0,
			    "capacity_type", "reservation", "dynamic_slicing", 1));
		}
	harness_cs_start_json(&cs, fleet, "10");
	json_decref(fleet);
	harness_fleetd_cs(&fd, dburl, sizeof(dburl), "tpusub", &cs, env);
	harness_roles(dburl, ENV, &R);
	harness_pclass(R.admin, "low", 10, false);
	harness_queue(R.admin, ENV, "tpu", "low", "tpu-v7x", 512);
	harness_register(&cs, R.admin, CLUSTER, NULL, NULL);
	harness_wait_capacity(names, 60);
	return 0;
}

static int
teardown(void **state)
{
	(void)state;
	return harness_teardown(&fd, dburl, &cs);
}

static char *
submit(const char *name, const char *shape, int replicas)
{
	char b[1024];

	/* RayClusters: they run until cancelled */
	snprintf(b, sizeof(b), "{\"environment\":\"" ENV "\",\"kind\":\"RayCluster\","
	    "\"queue\":\"tpu\",\"name\":\"%s\",\"ray_version\":\"2.52.0\","
	    "\"head\":{\"cpu\":\"1\",\"memory\":\"2Gi\"},"
	    "\"worker_groups\":[{\"name\":\"tpu\",\"replicas\":%d,\"cpu\":\"100\","
	    "\"memory\":\"400Gi\",\"accelerator\":{\"flavor\":\"tpu-v7x\",\"count\":4}}],"
	    "\"topology\":{\"type\":\"slice\",\"shape\":\"%s\"},\"constraints\":"
	    "{\"providers\":[\"gke\"]}}", name, replicas, shape);
	if (harness_call("POST", R.oper, b, "/v1/jobs") != 201)
		fail_msg("submit %s: %ld %s", name, harness_r.status, harness_r.body);
	return strdup(harness_js(harness_r.json, "id"));
}

/* The node's label, or NULL (new string). */
static char *
node_label(const char *node, const char *key)
{
	struct http_result r;
	char path[300], *v = NULL;
	const char *s;

	snprintf(path, sizeof(path), "/api/v1/nodes/%s", node);
	harness_kube(&cs, &r, CLUSTER, "GET", path, NULL, NULL);
	if (r.status != 200)
		fail_msg("GET %s: %ld %s", path, r.status, r.body);
	s = json_string_value(json_object_get(harness_jp(r.json, "metadata.labels"), key));
	if (s != NULL)
		v = strdup(s);
	harness_http_free(&r);
	return v;
}

/* The accelerator nodes of the job's placement, each once (borrowed from job). */
static size_t
tpu_nodes(json_t *job, const char **out, size_t max)
{
	json_t *a;
	size_t i, n = 0;

	json_array_foreach(harness_jp(job, "placement.allocs"), i, a) {
		const char *node = harness_js(a, "node");
		bool dup = false;

		if (node == NULL || strcmp(harness_js(a, "pool"), "ironwood") != 0)
			continue;
		for (size_t k = 0; k < n; k++)
			dup |= strcmp(out[k], node) == 0;
		if (!dup && n < max)
			out[n++] = node;
	}
	return n;
}

static void
test_carved(void **state)
{
	const char *nodes[32], *big_nodes[32];
	json_t *job, *big;
	struct http_result r;
	char *id, *bid, path[300], slice[64], file[600];
	const char *part;
	size_t n, nb;
	double deadline;

	(void)state;
	id = submit("small", "2x2x2", 1);
	json_decref(harness_job_wait(R.admin, id, "running", 1, 120));
	job = json_incref(harness_get_ok(R.admin, "/v1/jobs/%s", id));
	assert_string_equal(harness_js(job, "placement.tpu_partition_shape"), "2x2x2");
	assert_int_equal(json_array_size(harness_jp(job, "placement.tpu_partitions")), 1);
	part = harness_js(job, "placement.tpu_partitions.0");
	n = tpu_nodes(job, nodes, 32);
	assert_int_equal(n, 2);		/* one pod per host of the 2x2x2 slice */

	/* the Slice fleetd applied: formed by cloudsim's slice controller on that partition */
	snprintf(slice, sizeof(slice), "fleet-slice-");
	for (const char *s = id; *s && strlen(slice) < 12 + 16; s++)
		if (*s != '-')
			snprintf(slice + strlen(slice), sizeof(slice) - strlen(slice), "%c", *s);
	snprintf(slice + strlen(slice), sizeof(slice) - strlen(slice), "-1-0");
	snprintf(path, sizeof(path), "/apis/accelerator.gke.io/v1beta1/slices/%s", slice);
	harness_kube(&cs, &r, CLUSTER, "GET", path, NULL, NULL);
	if (r.status != 200)
		fail_msg("GET %s: %ld %s", path, r.status, r.body);
	assert_string_equal(harness_js(r.json, "spec.partitionIds.0"), part);
	assert_string_equal(harness_js(r.json, "spec.topology"), "2x2x2");
	assert_string_equal(harness_js(r.json, "status.conditions.0.status"), "True");
	harness_http_free(&r);
	for (size_t i = 0; i < n; i++) {
		char *p = node_label(nodes[i], "cloud.google.com/gke-tpu-partition-2x2x2-id");
		char *s = node_label(nodes[i], "cloud.google.com/gke-tpu-slice");

		assert_non_null(p);
		assert_string_equal(p, part);
		assert_non_null(s);
		assert_string_equal(s, slice);
		free(p);
		free(s);
	}
	/* the manifest selects the Slice and passes the real CRD schema */
	harness_get_ok(R.admin, "/v1/jobs/%s/manifest", id);
	snprintf(file, sizeof(file), "%s/subslice.json", cs.dir);
	assert_int_equal(json_dump_file(harness_r.json, file, JSON_INDENT(2)), 0);
	if (harness_sh("grep -q '\"cloud.google.com/gke-tpu-slice\": \"%s\"' %s && grep -q "
	    "'cloud.google.com/gke-tpu-slice-topology' %s", slice, file, file) != 0)
		fail_msg("the manifest does not select the Slice: %s", file);
	if (harness_sh(FLEETD_SOURCE_DIR "/../shared/tools/validate-manifest --quiet %s",
	    file) != 0)
		fail_msg("the manifest fails validation");

	/* a whole sub-block job: the other sub-block, untouched by the small job */
	bid = submit("whole", "4x4x4", 1);
	big = harness_job_wait(R.admin, bid, "running", 1, 120);
	assert_string_equal(harness_js(big, "placement.tpu_partition_shape"), "4x4x4");
	nb = tpu_nodes(big, big_nodes, 32);
	assert_int_equal(nb, 16);
	for (size_t i = 0; i < nb; i++)
		for (size_t k = 0; k < n; k++)
			assert_string_not_equal(big_nodes[i], nodes[k]);
	json_decref(big);

	/* cancel the small job: its Slice goes, and its nodes lose the controller's labels */
	if (harness_call("POST", R.admin, NULL, "/v1/jobs/%s/cancel", id) != 200 &&
	    harness_r.status != 202)
		fail_msg("cancel: %ld %s", harness_r.status, harness_r.body);
	json_decref(harness_job_wait(R.admin, id, "cancelled", 1, 120));
	deadline = harness_now_s() + 60;
	for (;;) {
		char *s;

		harness_kube(&cs, &r, CLUSTER, "GET", path, NULL, NULL);
		s = node_label(nodes[0], "cloud.google.com/gke-tpu-slice");
		if (r.status == 404 && s == NULL) {
			harness_http_free(&r);
			break;
		}
		if (harness_now_s() > deadline)
			fail_msg("the Slice %s is still there (%ld) or its node still labelled (%s)",
			    slice, r.status, s ? s : "-");
		harness_http_free(&r);
		free(s);
		usleep(200000);
	}
	json_decref(job);
	free(id);
	free(bid);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_carved),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
