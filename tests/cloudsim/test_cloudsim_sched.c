/* cloudsim member-cluster scheduling: rack affinity, stockout (fleet file and fault),
 * autoscaling, and pods left Pending like under kube-scheduler (selector, pod affinity, TPU
 * slices).  The lifecycle of Ray objects is test_cloudsim_lifecycle.c. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include "cs_pods.h"

static struct csh H;

static int
setup(void **state)
{
	(void)state;
	return csh_setup(&H, "40");
}

static const char *
node_label(const char *cluster, const char *node, const char *label, char *out, size_t n)
{
	char path[300];
	struct csh_resp r;

	snprintf(path, sizeof(path), "/api/v1/nodes/%s", node);
	r = csh_kube(&H, cluster, "GET", path, NULL, NULL);
	{
	const char *v = json_string_value(json_object_get(json_object_get(json_object_get(
	    r.json, "metadata"), "labels"), label));

	snprintf(out, n, "%s", v ? v : "");
	}
	csh_resp_free(&r);
	return out;
}

static int
pool_nodes(const char *cluster, const char *pool)
{
	struct csh_resp r = csh_sim(&H, "GET", "/_sim/state", NULL);
	size_t i, j;
	json_t *c, *p;
	int n = -1;

	json_array_foreach(json_object_get(r.json, "clusters"), i, c)
		if (strcmp(json_string_value(json_object_get(c, "name")), cluster) == 0)
			json_array_foreach(json_object_get(c, "pools"), j, p)
				if (strcmp(json_string_value(json_object_get(p, "name")), pool) == 0)
					n = (int)json_integer_value(json_object_get(p, "nodes"));
	csh_resp_free(&r);
	return n;
}

static const char *GKE_H100 = "\"nodeSelector\":{\"cloud.google.com/gke-accelerator\":"
    "\"nvidia-h100-80gb\"},\"tolerations\":[{\"key\":\"nvidia.com/gpu\",\"operator\":\"Exists\","
    "\"effect\":\"NoSchedule\"}]";

static void
test_rack_affinity(void **state)
{
	char extra[1024], rack[128];
	struct csh_want w = { GKE, "rack-b", "Running", 2 };
	json_t *p;
	size_t i;
	json_t *pod;

	(void)state;
	/* rack 00 holds two nodes, one full and one half full: 8 GPUs never fit there */
	snprintf(extra, sizeof(extra), "%s,\"affinity\":{\"nodeAffinity\":{"
	    "\"requiredDuringSchedulingIgnoredDuringExecution\":{\"nodeSelectorTerms\":[{"
	    "\"matchExpressions\":[{\"key\":\"cloud.google.com/gce-topology-subblock\","
	    "\"operator\":\"In\",\"values\":[\"%s-h100-00\"]}]}]}}}", GKE_H100, GKE);
	assert_int_equal(csh_apply(&H, GKE, "rayclusters", "rack-a", csh_ray_body("RayCluster",
	    "rack-a", 1, 8, extra, "")), 201);
	/* rack 01 has a free node */
	snprintf(extra, sizeof(extra), "%s,\"affinity\":{\"nodeAffinity\":{"
	    "\"requiredDuringSchedulingIgnoredDuringExecution\":{\"nodeSelectorTerms\":[{"
	    "\"matchExpressions\":[{\"key\":\"cloud.google.com/gce-topology-subblock\","
	    "\"operator\":\"In\",\"values\":[\"%s-h100-01\"]}]}]}}}", GKE_H100, GKE);
	assert_int_equal(csh_apply(&H, GKE, "rayclusters", "rack-b", csh_ray_body("RayCluster",
	    "rack-b", 1, 8, extra, "")), 201);
	assert_true(csh_wait(&H, csh_pods_in_phase, &w, 10));
	p = csh_pods(&H, GKE, "rack-b");
	json_array_foreach(p, i, pod) {
		const char *node = json_string_value(json_object_get(json_object_get(pod, "spec"),
		    "nodeName"));

		if (strstr(json_string_value(json_object_get(json_object_get(pod, "metadata"),
		    "name")), "worker") == NULL)
			continue;
		assert_non_null(node);
		node_label(GKE, node, "cloud.google.com/gce-topology-subblock", rack, sizeof(rack));
		assert_string_equal(rack, GKE "-h100-01");
	}
	json_decref(p);
	/* after the autoscale delay rack-a's worker is still pending: a new node would not be
	 * in rack 00 */
	usleep(800000);
	p = csh_pods(&H, GKE, "rack-a");
	assert_int_equal(csh_count_phase(p, "Pending"), 1);
	json_decref(p);
	assert_true(csh_has_event(&H, GKE, "rack-a-gpu-worker", "FailedScheduling"));
	assert_false(csh_has_event(&H, GKE, "rack-a-gpu-worker", "TriggeredScaleUp"));
	{
		struct csh_resp d = csh_kube(&H, GKE, "DELETE", "/apis/ray.io/v1/namespaces/"
		    "default/rayclusters/rack-a", NULL, NULL);

		assert_int_equal(d.status, 200);
		csh_resp_free(&d);
	}
}

static bool
gke_h100_grew(struct csh *h, void *arg)
{
	(void)h;
	(void)arg;
	return pool_nodes(GKE, "h100") == 4;
}

static void
test_stockout_and_autoscale(void **state)
{
	const char *aks = "\"nodeSelector\":{\"kubernetes.azure.com/agentpool\":\"h100\"},"
	    "\"tolerations\":[{\"key\":\"sku\",\"operator\":\"Equal\",\"value\":\"gpu\","
	    "\"effect\":\"NoSchedule\"}]";
	struct csh_want w = { AKS, "so", "Running", 3 };
	struct csh_resp r;
	json_t *p;

	(void)state;
	/* the AKS h100 pool is in stockout in the fleet file: 2 of 3 workers run */
	assert_int_equal(csh_apply(&H, AKS, "rayclusters", "so", csh_ray_body("RayCluster", "so", 3,
	    8, aks, "")), 201);
	usleep(1000000);
	p = csh_pods(&H, AKS, "so");
	assert_int_equal(csh_count_phase(p, "Running"), 3);	/* head + 2 workers */
	assert_int_equal(csh_count_phase(p, "Pending"), 1);
	json_decref(p);
	assert_true(csh_has_event(&H, AKS, "so-gpu-worker", "FailedScheduling"));
	assert_true(csh_has_event(&H, AKS, "so-gpu-worker", "FailedScaleUp"));
	assert_int_equal(pool_nodes(AKS, "h100"), 2);
	(void)w;
	/* a stockout fault on GKE h100 blocks the scale-up until it is removed */
	r = csh_sim(&H, "POST", "/_sim/faults", "{\"cluster\":\"" GKE "\",\"pool\":\"h100\","
	    "\"stockout\":true}");
	assert_int_equal(r.status, 201);
	{
		char del[64];
		struct csh_resp d;

		snprintf(del, sizeof(del), "/_sim/faults/%lld", json_integer_value(
		    json_object_get(r.json, "id")));
		assert_int_equal(csh_apply(&H, GKE, "rayclusters", "grow",
		    csh_ray_body("RayCluster", "grow", 1, 8, GKE_H100, "")), 201);
		usleep(800000);
		assert_int_equal(pool_nodes(GKE, "h100"), 3);
		assert_true(csh_has_event(&H, GKE, "grow-gpu-worker", "FailedScaleUp"));
		d = csh_sim(&H, "DELETE", del, NULL);
		assert_int_equal(d.status, 200);
		csh_resp_free(&d);
	}
	csh_resp_free(&r);
	assert_true(csh_wait(&H, gke_h100_grew, NULL, 10));
	w.cluster = GKE;
	w.rc = "grow";
	w.n = 2;
	assert_true(csh_wait(&H, csh_pods_in_phase, &w, 10));
}

/* The PodScheduled condition's message of the first pending worker of rc (malloc'd). */
static char *
pending_message(const char *cluster, const char *rc)
{
	json_t *p = csh_pods(&H, cluster, rc), *pod;
	char *out = NULL;
	size_t i;

	json_array_foreach(p, i, pod)
		if (out == NULL && strcmp(json_string_value(json_object_get(json_object_get(pod,
		    "status"), "phase")), "Pending") == 0)
			out = strdup(json_string_value(json_object_get(json_array_get(json_object_get(
			    json_object_get(pod, "status"), "conditions"), 0), "message")));
	json_decref(p);
	return out;
}

static bool
has_failed_scheduling(struct csh *h, void *arg)
{
	char *m = csh_event_message(&H, GKE, arg, "FailedScheduling");
	bool ok = m != NULL;

	(void)h;
	free(m);
	return ok;
}

/* Pending like under kube-scheduler: a pod whose selector or affinity no node satisfies
 * stays Pending with a FailedScheduling event (and PodScheduled condition) naming the
 * predicate; each replica of a multi-host TPU group takes a whole slice of its own. */
static void
test_unschedulable(void **state)
{
	static const char *const tol = "\"tolerations\":[{\"key\":\"nvidia.com/gpu\","
	    "\"operator\":\"Exists\",\"effect\":\"NoSchedule\"}]";
	char extra[1024], *m, *c;
	struct csh_want w = { GKE, "tpu2", "Running", 3 };	/* head + replica 0 */
	json_t *p;
	struct csh_resp r;

	(void)state;
	/* a hostname no node has (fleetd pins pods to the scheduler's nodes) */
	snprintf(extra, sizeof(extra), "\"nodeSelector\":{\"kubernetes.io/hostname\":"
	    "\"no-such-node\"},%s", tol);
	assert_int_equal(csh_apply(&H, GKE, "rayclusters", "nohost", csh_ray_body("RayCluster",
	    "nohost", 1, 1, extra, "")), 201);
	/* required pod affinity to pods that do not exist (and that the pod is not) */
	snprintf(extra, sizeof(extra), "%s,\"nodeSelector\":{\"cloud.google.com/gke-accelerator\":"
	    "\"nvidia-h100-80gb\"},\"affinity\":{\"podAffinity\":{"
	    "\"requiredDuringSchedulingIgnoredDuringExecution\":[{\"labelSelector\":{"
	    "\"matchLabels\":{\"app\":\"absent\"}},\"topologyKey\":\"kubernetes.io/hostname\"}]}}",
	    tol);
	assert_int_equal(csh_apply(&H, GKE, "rayclusters", "nopeer", csh_ray_body("RayCluster",
	    "nopeer", 1, 1, extra, "")), 201);
	/* two replicas of a 2-host v5p 2x2x2 slice, 2 chips a pod: the chips of the one slice
	 * would hold both, but a slice serves one replica */
	assert_int_equal(csh_apply(&H, GKE, "rayclusters", "tpu2", strdup("{\"apiVersion\":\"ray.io/v1\","
	    "\"kind\":\"RayCluster\",\"metadata\":{\"name\":\"tpu2\"},\"spec\":{\"headGroupSpec\":"
	    "{\"rayStartParams\":{},\"template\":{\"spec\":{\"containers\":[{\"name\":\"ray-head\","
	    "\"image\":\"rayproject/ray:2.9.0\",\"resources\":{\"requests\":{\"cpu\":\"1\","
	    "\"memory\":\"2Gi\"}}}]}}},\"workerGroupSpecs\":[{\"groupName\":\"tpu\",\"replicas\":2,"
	    "\"minReplicas\":2,\"maxReplicas\":2,\"numOfHosts\":2,\"rayStartParams\":{},"
	    "\"template\":{\"spec\":{\"nodeSelector\":{\"cloud.google.com/gke-tpu-topology\":"
	    "\"2x2x2\"},\"tolerations\":[{\"key\":\"google.com/tpu\",\"operator\":\"Exists\","
	    "\"effect\":\"NoSchedule\"}],\"containers\":[{\"name\":\"ray-worker\",\"image\":"
	    "\"rayproject/ray:2.9.0\",\"resources\":{\"requests\":{\"cpu\":\"8\",\"memory\":"
	    "\"32Gi\",\"google.com/tpu\":\"2\"},\"limits\":{\"google.com/tpu\":\"2\"}}}]}}}]}}")),
	    201);
	assert_true(csh_wait(&H, has_failed_scheduling, "nohost-gpu-worker", 10));
	assert_true(csh_wait(&H, has_failed_scheduling, "nopeer-gpu-worker", 10));
	if (!csh_wait(&H, csh_pods_in_phase, &w, 10))
		fail_msg("replica 0 of tpu2 is not running: %s", pending_message(GKE, "tpu2"));
	assert_true(csh_wait(&H, has_failed_scheduling, "tpu2-tpu-worker", 10));

	m = csh_event_message(&H, GKE, "nohost-gpu-worker", "FailedScheduling");
	assert_non_null(strstr(m, "node(s) didn't match Pod's node affinity/selector"));
	assert_null(strstr(m, "Insufficient"));
	c = pending_message(GKE, "nohost");
	assert_string_equal(c, m);
	free(c);
	free(m);
	m = csh_event_message(&H, GKE, "nopeer-gpu-worker", "FailedScheduling");
	assert_non_null(strstr(m, "node(s) didn't match pod affinity rules"));
	free(m);
	m = csh_event_message(&H, GKE, "tpu2-tpu-worker", "FailedScheduling");
	assert_non_null(strstr(m, "node(s) belong to a TPU slice of another replica"));
	free(m);
	p = csh_pods(&H, GKE, "tpu2");
	assert_int_equal(csh_count_phase(p, "Pending"), 2);	/* replica 1: both its hosts */
	json_decref(p);
	p = csh_pods(&H, GKE, "nohost");
	assert_int_equal(csh_count_phase(p, "Pending"), 1);
	json_decref(p);
	r = csh_kube(&H, GKE, "DELETE", "/apis/ray.io/v1/namespaces/default/rayclusters/nohost",
	    NULL, NULL);
	csh_resp_free(&r);
	r = csh_kube(&H, GKE, "DELETE", "/apis/ray.io/v1/namespaces/default/rayclusters/nopeer",
	    NULL, NULL);
	csh_resp_free(&r);
	r = csh_kube(&H, GKE, "DELETE", "/apis/ray.io/v1/namespaces/default/rayclusters/tpu2",
	    NULL, NULL);
	csh_resp_free(&r);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_rack_affinity),
		cmocka_unit_test(test_stockout_and_autoscale),
		cmocka_unit_test(test_unschedulable),
	};

	return cmocka_run_group_tests(tests, setup, harness_group_teardown);
}
