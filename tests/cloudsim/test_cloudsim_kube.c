/* cloudsim Kubernetes API: TLS with its own CA, bearer auth, nodes as the platforms label
 * them, paging, and ray.io objects: apply, conflicts, counts, validation, delete. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include "cs_harness.h"

#define GKE "test-gke-usc1"

static struct csh H;

static int
setup(void **state)
{
	(void)state;
	return csh_setup(&H, "20");
}

static void
test_bearer_and_tls(void **state)
{
	char url[300];
	const char *bad[] = { "Authorization: Bearer not-the-token", NULL };
	struct csh_resp r;

	(void)state;
	snprintf(url, sizeof(url), "%s/k8s/%s/api/v1/nodes", H.kube, GKE);
	r = csh_req("GET", url, bad, NULL, H.ca);
	assert_int_equal(r.status, 401);
	assert_string_equal(json_string_value(json_object_get(r.json, "kind")), "Status");
	assert_string_equal(json_string_value(json_object_get(r.json, "reason")), "Unauthorized");
	csh_resp_free(&r);
	r = csh_req("GET", url, NULL, NULL, H.ca);
	assert_int_equal(r.status, 401);
	csh_resp_free(&r);
	/* another cloudsim's CA (a real CA, just not this one): the handshake must fail */
	{
		struct csh other;

		assert_true(csh_start(&other, "cloudsim/fleets/test.json", "1"));
		r = csh_req("GET", url, bad, NULL, other.ca);
		assert_int_equal(r.curl_rc, CURLE_PEER_FAILED_VERIFICATION);
		assert_int_equal(r.status, 0);
		csh_resp_free(&r);
		csh_stop(&other);
	}
	/* a CA that is not a CA at all */
	r = csh_req("GET", url, bad, NULL, FLEETD_SOURCE_DIR
	    "/../shared/testvectors/jws/rfc7515-a2.pub.pem");
	assert_int_not_equal(r.curl_rc, CURLE_OK);
	csh_resp_free(&r);
	/* the cluster's own token on another cluster is refused */
	snprintf(url, sizeof(url), "%s/k8s/test-aks-eus/api/v1/nodes", H.kube);
	{
		char auth[200];
		const char *hd[] = { auth, NULL };

		snprintf(auth, sizeof(auth), "Authorization: Bearer %s", json_string_value(
		    json_object_get(csh_cluster(&H, GKE), "token")));
		r = csh_req("GET", url, hd, NULL, H.ca);
		assert_int_equal(r.status, 401);
		csh_resp_free(&r);
	}
}

static void
test_nodes_paged_and_labelled(void **state)
{
	char path[600];
	const char *cont = NULL;
	int total = 0, pages = 0, gpu_nodes = 0;
	struct csh_resp r, st;
	size_t i;
	json_t *n, *c = NULL;

	(void)state;
	st = csh_sim(&H, "GET", "/_sim/state", NULL);
	assert_int_equal(st.status, 200);
	json_array_foreach(json_object_get(st.json, "clusters"), i, c)
		if (strcmp(json_string_value(json_object_get(c, "name")), GKE) == 0)
			break;
	do {
		snprintf(path, sizeof(path), "/api/v1/nodes?limit=100%s%s", cont ? "&continue=" :
		    "", cont ? cont : "");
		r = csh_kube(&H, GKE, "GET", path, NULL, NULL);
		assert_int_equal(r.status, 200);
		assert_true(json_array_size(json_object_get(r.json, "items")) <= 2);
		json_array_foreach(json_object_get(r.json, "items"), i, n) {
			json_t *l = json_object_get(json_object_get(n, "metadata"), "labels");

			total++;
			assert_non_null(json_object_get(l, "cloud.google.com/gke-nodepool"));
			assert_non_null(json_object_get(l, "topology.kubernetes.io/zone"));
			assert_non_null(json_object_get(l, "cloud.google.com/gce-topology-subblock"));
			if (json_object_get(l, "cloud.google.com/gke-accelerator") != NULL) {
				gpu_nodes++;
				assert_non_null(json_object_get(json_object_get(json_object_get(n,
				    "status"), "allocatable"), "nvidia.com/gpu"));
				assert_string_equal(json_string_value(json_object_get(json_array_get(
				    json_object_get(json_object_get(n, "spec"), "taints"), 0), "key")),
				    "nvidia.com/gpu");
			}
		}
		free((char *)cont);
		cont = json_string_value(json_object_get(json_object_get(r.json, "metadata"),
		    "continue"));
		cont = cont ? strdup(cont) : NULL;
		pages++;
		csh_resp_free(&r);
	} while (cont != NULL && pages < 50);
	assert_int_equal(total, json_integer_value(json_object_get(c, "node_count")));
	assert_true(pages >= 3);
	assert_int_equal(gpu_nodes, 5);	/* 3 h100 + 2 l4 */
	csh_resp_free(&st);
	r = csh_kube(&H, GKE, "GET", "/api/v1/nodes?labelSelector=cloud.google.com%2Fgke-spot%3D"
	    "true", NULL, NULL);
	assert_int_equal(json_array_size(json_object_get(r.json, "items")), 2);
	csh_resp_free(&r);
	r = csh_kube(&H, GKE, "GET", "/api/v1/nodes?labelSelector=cloud.google.com%2F"
	    "gke-nodepool+in+(h100,v5p)", NULL, NULL);
	assert_int_equal(json_array_size(json_object_get(r.json, "items")), 5);
	csh_resp_free(&r);
	r = csh_kube(&H, GKE, "GET", "/api/v1/nodes?labelSelector=a+in+(b", NULL, NULL);
	assert_int_equal(r.status, 400);
	csh_resp_free(&r);
	r = csh_kube(&H, GKE, "GET", "/api/v1/nodes?continue=%%%garbage", NULL, NULL);
	assert_int_equal(r.status, 400);
	csh_resp_free(&r);
}

static const char *RC =
    "{\"apiVersion\":\"ray.io/v1\",\"kind\":\"RayCluster\",\"metadata\":{\"name\":\"rc-a\","
    "\"namespace\":\"team-a\",\"labels\":{\"fleet.io/job-id\":\"j1\"}},\"spec\":{"
    "\"headGroupSpec\":{\"rayStartParams\":{},\"template\":{\"spec\":{\"containers\":[{"
    "\"name\":\"ray-head\",\"image\":\"rayproject/ray:2.9.0\",\"resources\":{\"requests\":{"
    "\"cpu\":\"1\",\"memory\":\"2Gi\"}}}]}}},\"workerGroupSpecs\":[{\"groupName\":\"cpu\","
    "\"replicas\":%d,\"minReplicas\":0,\"maxReplicas\":4,\"rayStartParams\":{},\"template\":{"
    "\"spec\":{\"containers\":[{\"name\":\"w\",\"image\":\"rayproject/ray:2.9.0\","
    "\"resources\":{\"requests\":{\"cpu\":\"1\",\"memory\":\"1Gi\"}}}]}}}]}}";

static long
applies(const char *key)
{
	struct csh_resp r = csh_sim(&H, "GET", "/_sim/state", NULL);
	long n = (long)json_integer_value(json_object_get(json_object_get(r.json, "applies"),
	    key));

	csh_resp_free(&r);
	return n;
}

static void
test_apply_get_delete(void **state)
{
	const char *obj = "/apis/ray.io/v1/namespaces/team-a/rayclusters/rc-a";
	const char *ap = "application/apply-patch+yaml";
	char body[2048], path[300], rv[32];
	struct csh_resp r;
	json_t *sent;

	(void)state;
	snprintf(body, sizeof(body), RC, 1);
	snprintf(path, sizeof(path), "%s?fieldManager=fleetd", obj);
	r = csh_kube(&H, GKE, "PATCH", path, ap, body);
	assert_int_equal(r.status, 404);	/* namespace team-a does not exist yet */
	csh_resp_free(&r);
	r = csh_kube(&H, GKE, "POST", "/api/v1/namespaces", NULL,
	    "{\"apiVersion\":\"v1\",\"kind\":\"Namespace\",\"metadata\":{\"name\":\"team-a\"}}");
	assert_int_equal(r.status, 201);
	csh_resp_free(&r);
	r = csh_kube(&H, GKE, "PATCH", path, ap, body);
	assert_int_equal(r.status, 201);
	snprintf(rv, sizeof(rv), "%s", json_string_value(json_object_get(json_object_get(r.json,
	    "metadata"), "resourceVersion")));
	csh_resp_free(&r);
	/* identical re-apply: 200, counted, and nothing changes */
	r = csh_kube(&H, GKE, "PATCH", path, ap, body);
	assert_int_equal(r.status, 200);
	assert_int_equal(json_integer_value(json_object_get(json_object_get(r.json, "metadata"),
	    "generation")), 1);
	assert_string_equal(json_string_value(json_object_get(json_object_get(r.json, "metadata"),
	    "resourceVersion")), rv);
	csh_resp_free(&r);
	assert_int_equal(applies(GKE "/team-a/rayclusters/rc-a"), 2);
	/* another manager changing a field: conflict, unless forced */
	snprintf(body, sizeof(body), RC, 3);
	r = csh_kube(&H, GKE, "PATCH", "/apis/ray.io/v1/namespaces/team-a/rayclusters/rc-a?"
	    "fieldManager=someone-else", ap, body);
	assert_int_equal(r.status, 409);
	assert_string_equal(json_string_value(json_object_get(r.json, "reason")), "Conflict");
	assert_non_null(strstr(json_string_value(json_object_get(r.json, "message")),
	    ".spec.workerGroupSpecs"));
	csh_resp_free(&r);
	r = csh_kube(&H, GKE, "PATCH", "/apis/ray.io/v1/namespaces/team-a/rayclusters/rc-a?"
	    "fieldManager=someone-else&force=true", ap, body);
	assert_int_equal(r.status, 200);
	assert_int_equal(json_integer_value(json_object_get(json_object_get(r.json, "metadata"),
	    "generation")), 2);
	assert_string_not_equal(json_string_value(json_object_get(json_object_get(r.json,
	    "metadata"), "resourceVersion")), rv);
	csh_resp_free(&r);
	/* stale resourceVersion in the body */
	snprintf(body, sizeof(body), RC, 2);
	sent = json_loads(body, 0, NULL);
	json_object_set_new(json_object_get(sent, "metadata"), "resourceVersion",
	    json_string("1"));
	{
		char *s = json_dumps(sent, JSON_COMPACT);

		r = csh_kube(&H, GKE, "PATCH", "/apis/ray.io/v1/namespaces/team-a/rayclusters/"
		    "rc-a?fieldManager=someone-else", ap, s);
		free(s);
	}
	json_decref(sent);
	assert_int_equal(r.status, 409);
	assert_non_null(strstr(json_string_value(json_object_get(r.json, "message")),
	    "has been modified"));
	csh_resp_free(&r);
	/* fieldManager required, media type checked, schema checked */
	snprintf(body, sizeof(body), RC, 1);
	r = csh_kube(&H, GKE, "PATCH", obj, ap, body);
	assert_int_equal(r.status, 400);
	csh_resp_free(&r);
	r = csh_kube(&H, GKE, "PATCH", path, "application/strategic-merge-patch+json", body);
	assert_int_equal(r.status, 415);
	csh_resp_free(&r);
	r = csh_kube(&H, GKE, "PATCH", "/apis/ray.io/v1/namespaces/team-a/rayclusters/bad?"
	    "fieldManager=fleetd", ap, "{\"apiVersion\":\"ray.io/v1\",\"kind\":\"RayCluster\","
	    "\"metadata\":{\"name\":\"bad\"},\"spec\":{\"workerGroupSpecs\":[]}}");
	assert_int_equal(r.status, 422);
	assert_string_equal(json_string_value(json_object_get(r.json, "reason")), "Invalid");
	csh_resp_free(&r);
	r = csh_kube(&H, GKE, "PATCH", path, ap, "{not json");
	assert_int_equal(r.status, 400);
	csh_resp_free(&r);
	/* stored object is the applied body, unmodified */
	r = csh_sim(&H, "GET", "/_sim/objects?cluster=" GKE "&name=rc-a", NULL);
	snprintf(body, sizeof(body), RC, 3);
	sent = json_loads(body, 0, NULL);
	assert_true(json_equal(json_object_get(json_array_get(json_object_get(r.json, "objects"),
	    0), "object"), sent));
	json_decref(sent);
	csh_resp_free(&r);
	r = csh_kube(&H, GKE, "DELETE", obj, NULL, NULL);
	assert_int_equal(r.status, 200);
	csh_resp_free(&r);
	r = csh_kube(&H, GKE, "GET", obj, NULL, NULL);
	assert_int_equal(r.status, 404);
	assert_string_equal(json_string_value(json_object_get(r.json, "reason")), "NotFound");
	csh_resp_free(&r);
	r = csh_kube(&H, GKE, "DELETE", obj, NULL, NULL);
	assert_int_equal(r.status, 404);
	csh_resp_free(&r);
	r = csh_kube(&H, GKE, "POST", "/apis/ray.io/v1/namespaces/team-a/rayclusters", NULL, body);
	assert_int_equal(r.status, 201);
	csh_resp_free(&r);
	r = csh_kube(&H, GKE, "POST", "/apis/ray.io/v1/namespaces/team-a/rayclusters", NULL, body);
	assert_int_equal(r.status, 409);
	assert_string_equal(json_string_value(json_object_get(r.json, "reason")), "AlreadyExists");
	csh_resp_free(&r);
	assert_int_equal(applies(GKE "/team-a/rayclusters/rc-a"), 4);
	/* PUT needs the current resourceVersion; a status update between GET and PUT
	 * bumps it (as on a real API server), so a conflict there is retried. */
	for (int attempt = 0;; attempt++) {
		char *s;

		r = csh_kube(&H, GKE, "GET", obj, NULL, NULL);
		sent = json_deep_copy(r.json);
		csh_resp_free(&r);
		json_object_del(sent, "status");
		json_object_set_new(json_array_get(json_object_get(json_object_get(sent, "spec"),
		    "workerGroupSpecs"), 0), "replicas", json_integer(2));
		s = json_dumps(sent, JSON_COMPACT);
		r = csh_kube(&H, GKE, "PUT", obj, NULL, s);
		free(s);
		if (r.status != 409 || attempt == 4)
			break;
		csh_resp_free(&r);
		json_decref(sent);
	}
	{
		char *s = json_dumps(sent, JSON_COMPACT);

		assert_int_equal(r.status, 200);
		assert_int_equal(json_integer_value(json_object_get(json_object_get(r.json,
		    "metadata"), "generation")), 2);
		csh_resp_free(&r);
		r = csh_kube(&H, GKE, "PUT", obj, NULL, s);	/* now stale */
		assert_int_equal(r.status, 409);
		csh_resp_free(&r);
		free(s);
		json_object_del(json_object_get(sent, "metadata"), "resourceVersion");
		s = json_dumps(sent, JSON_COMPACT);
		r = csh_kube(&H, GKE, "PUT", obj, NULL, s);
		assert_int_equal(r.status, 422);
		csh_resp_free(&r);
		free(s);
	}
	json_decref(sent);
}

static void
test_garbage_never_crashes(void **state)
{
	static const char *junk[] = { "", "[]", "{\"apiVersion\":5}", "{\"kind\":{}}",
	    "\x01\x02\x03", "{\"apiVersion\":\"ray.io/v1\",\"kind\":\"RayJob\",\"metadata\":"
	    "{\"name\":\"x\"},\"spec\":{\"rayClusterSpec\":{\"headGroupSpec\":{\"template\":"
	    "{\"spec\":{\"containers\":\"no\"}}}}}}", NULL };
	struct csh_resp r;
	int i;

	(void)state;
	for (i = 0; junk[i] != NULL; i++) {
		r = csh_kube(&H, GKE, "PATCH", "/apis/ray.io/v1/namespaces/default/rayjobs/x?"
		    "fieldManager=f", "application/apply-patch+yaml", junk[i]);
		assert_true(r.status >= 400 && r.status < 500);
		csh_resp_free(&r);
		r = csh_sim(&H, "POST", "/_sim/faults", junk[i]);
		assert_true(r.status >= 400 && r.status < 500);
		csh_resp_free(&r);
	}
	r = csh_kube(&H, GKE, "GET", "/apis/ray.io/v1/namespaces/default/nothings", NULL, NULL);
	assert_int_equal(r.status, 404);
	csh_resp_free(&r);
	r = csh_kube(&H, GKE, "GET", "/version", NULL, NULL);
	assert_int_equal(r.status, 200);
	csh_resp_free(&r);
}

static void
test_hang_is_per_cluster(void **state)
{
	struct csh_resp f, r;
	struct timespec t0, t1;
	char body[2048];
	long before;

	(void)state;
	f = csh_sim(&H, "POST", "/_sim/faults", "{\"service\":\"k8s\",\"cluster\":"
	    "\"test-aks-eus\",\"hang\":true,\"hang_s\":60}");
	assert_int_equal(f.status, 201);
	csh_resp_free(&f);
	csh_timeout_s = 1;
	r = csh_kube(&H, "test-aks-eus", "GET", "/api/v1/nodes", NULL, NULL);
	assert_int_equal(r.curl_rc, CURLE_OPERATION_TIMEDOUT);
	csh_resp_free(&r);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	r = csh_kube(&H, GKE, "GET", "/api/v1/nodes", NULL, NULL);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	assert_int_equal(r.status, 200);
	/* far below the 60 s hang of the other cluster (whole seconds failed at a boundary) */
	assert_true((double)(t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9 < 5.0);
	csh_resp_free(&r);
	csh_timeout_s = 20;
	/* a client that gave up during the injected latency: like the API server cancelling
	 * the request's context, the apply never reaches storage */
	f = csh_sim(&H, "POST", "/_sim/faults", "{\"service\":\"k8s\",\"cluster\":\"" GKE
	    "\",\"latency_ms\":2500}");
	assert_int_equal(f.status, 201);
	csh_resp_free(&f);
	before = applies(GKE "/team-a/rayclusters/rc-a");
	snprintf(body, sizeof(body), RC, 2);
	csh_timeout_s = 1;
	r = csh_kube(&H, GKE, "PATCH", "/apis/ray.io/v1/namespaces/team-a/rayclusters/rc-a?"
	    "fieldManager=fleetd", "application/apply-patch+yaml", body);
	assert_int_equal(r.curl_rc, CURLE_OPERATION_TIMEDOUT);
	csh_resp_free(&r);
	csh_timeout_s = 20;
	sleep(3);
	f = csh_sim(&H, "DELETE", "/_sim/faults", NULL);
	csh_resp_free(&f);
	assert_int_equal(applies(GKE "/team-a/rayclusters/rc-a"), before);
	f = csh_sim(&H, "POST", "/_sim/faults", "{\"service\":\"k8s\",\"region\":"
	    "\"us-central1\",\"error_rate\":1,\"error_status\":503,\"count\":1}");
	csh_resp_free(&f);
	r = csh_kube(&H, GKE, "GET", "/api/v1/nodes", NULL, NULL);
	assert_int_equal(r.status, 503);
	assert_string_equal(json_string_value(json_object_get(r.json, "kind")), "Status");
	assert_non_null(strstr(r.hdr, "retry-after:"));
	csh_resp_free(&r);
	f = csh_sim(&H, "DELETE", "/_sim/faults", NULL);
	csh_resp_free(&f);
	r = csh_kube(&H, "test-aks-eus", "GET", "/api/v1/nodes", NULL, NULL);
	assert_int_equal(r.status, 200);
	csh_resp_free(&r);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_bearer_and_tls),
		cmocka_unit_test(test_nodes_paged_and_labelled),
		cmocka_unit_test(test_apply_get_delete),
		cmocka_unit_test(test_garbage_never_crashes),
		cmocka_unit_test(test_hang_is_per_cluster),
	};

	return cmocka_run_group_tests(tests, setup, harness_group_teardown);
}
