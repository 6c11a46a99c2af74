/* test_flex_start: GKE flex-start with queued provisioning end to end against cloudsim
 * (issue 27) — a flex_start pool (NodePool.queuedProvisioning) with no node at all: fleetd
 * learns the node's shape from the pool's machine type, places a job on the pool's growth
 * and applies a ProvisioningRequest (autoscaling.x-k8s.io/v1, class
 * queued-provisioning.gke.io) with a PodTemplate per worker group, its worker pods naming
 * it; cloudsim accepts it, provisions every node at once after its delay and only then
 * marks it Provisioned, and the job runs on the new node.  Meanwhile the job waits for its
 * request, not withdrawn as a stockout although its pods wait longer than the cluster's
 * stockout timeout.  Cancelling the job deletes the request and its PodTemplate. */
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

#define ENV		"fs"
#define CLUSTER		"fs-gke-usc1"
#define POOL		"h100-flex"
#define NS		"fleet-" ENV "-ml"
#define TIME_SCALE	"8"	/* autoscale_delay_s 120 of the fixture: 15 s here, past the
				 * stockout backstop of 6 s below */

static struct harness_fleet F;
static const char *oper;

static int
setup(void **state)
{
	(void)state;
	harness_fleet_start(&F, "flexstart", FLEETD_SOURCE_DIR
	    "/tests/fixtures/fleets/flexstart.json", TIME_SCALE, NULL);
	oper = harness_fleet_token(&F, "operator", ENV);
	return 0;
}

static int
teardown(void **state)
{
	(void)state;
	harness_fleet_stop(&F);
	return 0;
}

/* GET of path on the member cluster; the status, *out (optional) the answer. */
static long
kget(const char *path, json_t **out)
{
	struct http_result r = { 0 };
	long st;

	harness_kube(&F.cs, &r, CLUSTER, "GET", path, NULL, NULL);
	st = r.status;
	if (out != NULL)
		*out = json_incref(r.json);
	harness_http_free(&r);
	return st;
}

/* The ProvisioningRequest's conditions as "Type=Status,..." ("" when it has none). */
static void
conditions(const char *path, char *out, size_t n)
{
	json_t *pr = NULL, *c;
	size_t i;

	out[0] = '\0';
	if (kget(path, &pr) == 200)
		json_array_foreach(json_object_get(json_object_get(pr, "status"), "conditions"),
		    i, c)
			snprintf(out + strlen(out), n - strlen(out), "%s%s=%s", i ? "," : "",
			    json_string_value(json_object_get(c, "type")),
			    json_string_value(json_object_get(c, "status")));
	json_decref(pr);
}

/* The nodes of the flex-start pool now, by GKE's node pool label. */
static size_t
pool_nodes(char *first, size_t n)
{
	json_t *l = NULL;
	size_t cnt;

	if (kget("/api/v1/nodes?labelSelector=cloud.google.com%2Fgke-nodepool%3D" POOL,
	    &l) != 200)
		fail_msg("nodes of " POOL);
	cnt = json_array_size(json_object_get(l, "items"));
	if (first != NULL)
		snprintf(first, n, "%s", cnt ? json_string_value(json_object_get(json_object_get(
		    json_array_get(json_object_get(l, "items"), 0), "metadata"), "name")) : "");
	json_decref(l);
	return cnt;
}

/* The node of the job's worker pod ("" while it has none). */
static void
worker_node(const char *id, char *out, size_t n)
{
	json_t *pods = NULL, *pod;
	char path[256];
	size_t i;

	out[0] = '\0';
	snprintf(path, sizeof(path), "/api/v1/namespaces/" NS "/pods?labelSelector="
	    "fleet.io%%2Fjob-id%%3D%s", id);
	if (kget(path, &pods) != 200)
		fail_msg("pods of %s", id);
	json_array_foreach(json_object_get(pods, "items"), i, pod) {
		const char *role = json_string_value(json_object_get(json_object_get(
		    json_object_get(pod, "metadata"), "labels"), "ray.io/node-type"));
		const char *node = json_string_value(json_object_get(json_object_get(pod, "spec"),
		    "nodeName"));

		if (role != NULL && strcmp(role, "worker") == 0 && node != NULL)
			snprintf(out, n, "%s", node);
	}
	json_decref(pods);
}

static void
test_flex_start_from_zero_nodes(void **state)
{
	char path[512], tpath[512], name[64], conds[256], node[160], first[160];
	json_t *j, *pr = NULL, *pt = NULL, *set;
	const char *st;
	char *id;
	double t0;
	bool waited = false;

	(void)state;
	/* the pool has no node: the capacity row carries the shape of the one it would add */
	assert_int_equal(pool_nodes(NULL, 0), 0);
	harness_wait_long(60, 1, "SELECT count(*) FROM capacity WHERE pool = '" POOL "'"
	    " AND nodes = 0 AND max_nodes = 2 AND capacity_type = 'flex_start'"
	    " AND (topology->'node_template'->>'alloc_accel')::int = 8");

	/* the stockout backstop (twice the cluster's timeout) is far shorter than the wait for
	 * the capacity: a flex-start job waits for its request all the same */
	harness_sql("UPDATE clusters SET stockout_timeout_s = 3");
	if (harness_call("POST", oper, "{\"environment\":\"" ENV "\",\"kind\":\"RayJob\","
	    "\"queue\":\"ml\",\"name\":\"flex\",\"ray_version\":\"2.52.0\","
	    "\"entrypoint\":\"python train.py\",\"head\":{\"cpu\":\"1\",\"memory\":\"2Gi\"},"
	    "\"worker_groups\":[{\"name\":\"gpu\",\"replicas\":1,\"cpu\":\"8\","
	    "\"memory\":\"64Gi\",\"accelerator\":{\"flavor\":\"nvidia-h100-80gb\","
	    "\"count\":8}}]}", "/v1/jobs") != 201)
		fail_msg("submit: %ld %s", harness_r.status, harness_r.body);
	id = strdup(harness_js(harness_r.json, "id"));

	/* placed on the pool's growth and applied (dispatched: its pods wait for the node) */
	t0 = harness_now_s();
	for (;;) {
		j = harness_job(F.admin, id);
		st = harness_js(j, "state");
		if (strcmp(st, "dispatched") == 0 || strcmp(st, "running") == 0)
			break;
		json_decref(j);
		if (harness_now_s() - t0 > 120) {
			harness_job_print_events(F.admin, id);
			fail_msg("job %s not placed on the empty flex-start pool in 120 s", id);
		}
		usleep(200 * 1000);
	}
	assert_string_equal(harness_js(j, "placement.pool"), POOL);
	assert_string_equal(harness_js(j, "placement.capacity_type"), "flex_start");
	json_decref(j);

	/* the request, with the attempt's signal objects; its podSet over the group's
	 * PodTemplate, whose pods consume it */
	assert_true(strlen(id) > 8);
	snprintf(name, sizeof(name), "fleet-signal-%.8s-1", id);
	snprintf(path, sizeof(path), "/apis/autoscaling.x-k8s.io/v1/namespaces/" NS
	    "/provisioningrequests/%s", name);
	t0 = harness_now_s();
	while (kget(path, &pr) != 200) {
		json_decref(pr);
		pr = NULL;
		if (harness_now_s() - t0 > 60)
			fail_msg("no ProvisioningRequest %s", path);
		usleep(200 * 1000);
	}
	assert_string_equal(harness_js(pr, "spec.provisioningClassName"),
	    "queued-provisioning.gke.io");
	assert_int_equal(json_array_size(json_object_get(json_object_get(pr, "spec"),
	    "podSets")), 1);
	set = json_array_get(json_object_get(json_object_get(pr, "spec"), "podSets"), 0);
	assert_int_equal(json_integer_value(json_object_get(set, "count")), 1);
	snprintf(tpath, sizeof(tpath), "%s-w0", name);
	assert_string_equal(json_string_value(json_object_get(json_object_get(set,
	    "podTemplateRef"), "name")), tpath);
	json_decref(pr);
	snprintf(tpath, sizeof(tpath), "/api/v1/namespaces/" NS "/podtemplates/%s-w0", name);
	assert_int_equal(kget(tpath, &pt), 200);
	assert_string_equal(json_string_value(json_object_get(json_object_get(json_object_get(
	    json_object_get(pt, "template"), "metadata"), "annotations"),
	    "autoscaling.x-k8s.io/consume-provisioning-request")), name);
	json_decref(pt);

	/* queued: Accepted, no node yet; then the node comes and the request is Provisioned
	 * at once (it is Provisioned only with its nodes registered); the worker pod gets a
	 * node only then */
	t0 = harness_now_s();
	for (;;) {
		size_t have;

		j = harness_job(F.admin, id);
		if (harness_ji(j, "attempt") != 1 || (strcmp(harness_js(j, "state"),
		    "dispatched") != 0 && strcmp(harness_js(j, "state"), "running") != 0)) {
			harness_job_print_events(F.admin, id);
			fail_msg("job %s is %s at attempt %lld while its request is queued", id,
			    harness_js(j, "state"), harness_ji(j, "attempt"));
		}
		json_decref(j);
		/* read in this order, so that a node or a scheduled worker seen before the
		 * conditions proves they came first (cloudsim only ever adds them) */
		worker_node(id, node, sizeof(node));
		have = pool_nodes(NULL, 0);
		conditions(path, conds, sizeof(conds));
		if (strstr(conds, "Provisioned=True") == NULL) {
			if (have != 0 || node[0] != '\0')
				fail_msg("%zu node(s), worker on '%s' before the request is "
				    "provisioned (%s)", have, node, conds);
			waited = true;
		} else if ((have = pool_nodes(NULL, 0)) != 1) {
			/* Provisioned: "all of the requested resources were created and
			 * registered" — read after the condition, the node must be there */
			fail_msg("the request is provisioned (%s) with %zu node(s) in the pool",
			    conds, have);
		} else if (node[0] != '\0') {
			break;
		}
		if (harness_now_s() - t0 > 300)
			fail_msg("worker not scheduled in 300 s (conditions %s, %zu nodes)", conds,
			    have);
		usleep(200 * 1000);
	}
	if (!waited)
		fail_msg("the request was provisioned at the first look (%s)", conds);
	assert_non_null(strstr(conds, "Accepted=True"));
	/* the request brought one node (the one 8-GPU worker's), at once; the job runs there */
	assert_int_equal(pool_nodes(first, sizeof(first)), 1);
	assert_string_equal(node, first);
	json_decref(harness_job_wait(F.admin, id, "running", 1, 300));

	/* cancelling the job deletes the request and its PodTemplate */
	assert_int_equal(harness_call("POST", oper, NULL, "/v1/jobs/%s/cancel", id), 200);
	json_decref(harness_job_wait(F.admin, id, "cancelled", 0, 120));
	t0 = harness_now_s();
	while (kget(path, NULL) != 404) {
		if (harness_now_s() - t0 > 120)
			fail_msg("the ProvisioningRequest outlived its job");
		usleep(200 * 1000);
	}
	assert_int_equal(kget(tpath, NULL), 404);
	free(id);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_flex_start_from_zero_nodes),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
