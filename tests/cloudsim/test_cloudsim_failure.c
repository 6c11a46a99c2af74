/* cloudsim member clusters failing as the providers' do: node deletion and KubeRay's
 * replacement pods, taints and NoExecute eviction, NotReady through nodes/status, pod
 * status as patched, spot reclaims as each provider signals them, SelfSubjectAccessReview. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include "cs_pods.h"

#define SMP	"application/strategic-merge-patch+json"
#define GPU_TOL	"{\"key\":\"nvidia.com/gpu\",\"operator\":\"Exists\"}," \
		"{\"key\":\"sku\",\"operator\":\"Exists\"}"

static struct csh H;

static int
setup(void **state)
{
	(void)state;
	return csh_setup(&H, "40");
}

/* What a Ray cluster's pods should look like: n Running, none on node avoid, and (when
 * gone is set) no pod of that name any more. */
struct want {
	const char	*cluster, *rc;
	int		 n;
	const char	*avoid, *gone;
};

static bool
settled(struct csh *h, void *arg)
{
	struct want *w = arg;
	json_t *p = csh_pods(h, w->cluster, w->rc), *pod;
	size_t i;
	bool ok = csh_count_phase(p, "Running") == w->n;

	json_array_foreach(p, i, pod) {
		const char *node = json_string_value(json_object_get(json_object_get(pod, "spec"),
		    "nodeName")), *name = json_string_value(json_object_get(json_object_get(pod,
		    "metadata"), "name"));

		if (w->avoid != NULL && node != NULL && strcmp(node, w->avoid) == 0)
			ok = false;
		if (w->gone != NULL && strcmp(name, w->gone) == 0)
			ok = false;
	}
	json_decref(p);
	return ok;
}

/* The name and node of rc's first worker pod. */
static void
worker_of(const char *cluster, const char *rc, char name[160], char node[160])
{
	json_t *p = csh_pods(&H, cluster, rc), *pod;
	size_t i;

	name[0] = node[0] = '\0';
	json_array_foreach(p, i, pod) {
		const char *n = json_string_value(json_object_get(json_object_get(pod, "metadata"),
		    "name")), *nn = json_string_value(json_object_get(json_object_get(pod, "spec"),
		    "nodeName"));

		if (strstr(n, "-worker-") != NULL && name[0] == '\0') {
			snprintf(name, 160, "%s", n);
			snprintf(node, 160, "%s", nn ? nn : "");
		}
	}
	json_decref(p);
}

/* The string at dotted path a.b.c of o, or "" (never NULL, for assert_string_equal). */
static const char *
jstr_at(json_t *o, const char *dotted)
{
	char buf[256], *p = buf, *k;

	snprintf(buf, sizeof(buf), "%s", dotted);
	while ((k = strsep(&p, ".")) != NULL)
		o = json_object_get(o, k);
	return json_string_value(o) ? json_string_value(o) : "";
}

static json_t *
node_get(const char *cluster, const char *node, long *status)
{
	char path[300];
	struct csh_resp r;
	json_t *j;

	snprintf(path, sizeof(path), "/api/v1/nodes/%s", node);
	r = csh_kube(&H, cluster, "GET", path, NULL, NULL);
	*status = r.status;
	j = json_incref(r.json);
	csh_resp_free(&r);
	return j;
}

static bool
has_taint(json_t *node, const char *key, const char *effect)
{
	size_t i;
	json_t *t;

	json_array_foreach(json_object_get(json_object_get(node, "spec"), "taints"), i, t)
		if (strcmp(json_string_value(json_object_get(t, "key")), key) == 0 &&
		    strcmp(json_string_value(json_object_get(t, "effect")), effect) == 0)
			return true;
	return false;
}

static long
kube_status(const char *cluster, const char *method, const char *path, const char *ctype,
    const char *body)
{
	struct csh_resp r = csh_kube(&H, cluster, method, path, ctype, body);
	long st = r.status;

	csh_resp_free(&r);
	return st;
}

static void
test_node_delete_replaces_workers(void **state)
{
	char extra[256], name[160], node[160], path[300];
	struct want w = { GKE, "nd", 3, NULL, NULL };
	long st;
	json_t *n;

	(void)state;
	snprintf(extra, sizeof(extra), "\"tolerations\":[%s]", GPU_TOL);
	assert_int_equal(csh_apply(&H, GKE, "rayclusters", "nd", csh_ray_body("RayCluster", "nd",
	    2, 8, extra, "")), 201);
	assert_true(csh_wait(&H, settled, &w, 10));
	worker_of(GKE, "nd", name, node);
	assert_true(node[0] != '\0');
	snprintf(path, sizeof(path), "/api/v1/nodes/%s", node);
	assert_int_equal(kube_status(GKE, "DELETE", path, NULL, NULL), 200);
	n = node_get(GKE, node, &st);
	assert_int_equal(st, 404);
	json_decref(n);
	/* the pod GC removes the worker, KubeRay creates another, it runs on the spare node */
	w.avoid = node;
	w.gone = name;
	assert_true(csh_wait(&H, settled, &w, 10));
	assert_int_equal(kube_status(GKE, "DELETE", path, NULL, NULL), 404);
}

struct pending {
	const char	*gone;
};

static bool
replacement_unschedulable(struct csh *h, void *arg)
{
	struct pending *p = arg;
	json_t *pods = csh_pods(h, HP, "pin");
	char *m = csh_event_message(h, HP, "pin-gpu-worker-", "FailedScheduling");
	bool ok = json_array_size(pods) == 2 && csh_count_phase(pods, "Pending") == 1 &&
	    m != NULL && strstr(m, "didn't match Pod's node affinity/selector") != NULL;
	size_t i;
	json_t *pod;

	json_array_foreach(pods, i, pod)
		if (strcmp(json_string_value(json_object_get(json_object_get(pod, "metadata"),
		    "name")), p->gone) == 0)
			ok = false;
	free(m);
	json_decref(pods);
	return ok;
}

static void
test_pinned_replacement_stays_pending(void **state)
{
	char extra[512], name[160], node[160], path[300];
	struct want w = { HP, "pin", 2, NULL, NULL };
	struct pending pw = { name };
	struct csh_resp r;
	long st;
	json_t *n;

	(void)state;
	/* the first p5 node, as fleetd pins a worker to the nodes it accounted */
	r = csh_kube(&H, HP, "GET", "/api/v1/nodes?labelSelector=sagemaker.amazonaws.com%2F"
	    "instance-group-name%3Dp5", NULL, NULL);
	snprintf(node, sizeof(node), "%s", jstr_at(json_array_get(json_object_get(r.json,
	    "items"), 0), "metadata.name"));
	csh_resp_free(&r);
	snprintf(extra, sizeof(extra), "\"tolerations\":[%s],\"affinity\":{\"nodeAffinity\":{"
	    "\"requiredDuringSchedulingIgnoredDuringExecution\":{\"nodeSelectorTerms\":[{"
	    "\"matchExpressions\":[{\"key\":\"kubernetes.io/hostname\",\"operator\":\"In\","
	    "\"values\":[\"%s\"]}]}]}}}", GPU_TOL, node);
	assert_int_equal(csh_apply(&H, HP, "rayclusters", "pin", csh_ray_body("RayCluster", "pin",
	    1, 1, extra, "")), 201);
	assert_true(csh_wait(&H, settled, &w, 10));
	worker_of(HP, "pin", name, path);
	assert_string_equal(path, node);
	snprintf(path, sizeof(path), "/api/v1/nodes/%s", node);
	assert_int_equal(kube_status(HP, "DELETE", path, NULL, NULL), 200);
	n = node_get(HP, node, &st);
	json_decref(n);
	assert_int_equal(st, 404);
	/* KubeRay's replacement can only go where its affinity allows: nowhere */
	assert_true(csh_wait(&H, replacement_unschedulable, &pw, 10));
}

static void
test_taint_noexecute_evicts(void **state)
{
	char extra[640], name[160], node[160], kept[160], knode[160], path[300];
	struct want w = { HP, "tn", 2, NULL, NULL }, wk = { HP, "tk", 2, NULL, NULL };
	long st;
	json_t *n;

	(void)state;
	snprintf(extra, sizeof(extra), "\"nodeSelector\":{\"sagemaker.amazonaws.com/"
	    "instance-group-name\":\"g6\"},\"tolerations\":[%s]", GPU_TOL);
	assert_int_equal(csh_apply(&H, HP, "rayclusters", "tn", csh_ray_body("RayCluster", "tn",
	    1, 1, extra, "")), 201);
	assert_true(csh_wait(&H, settled, &w, 10));
	worker_of(HP, "tn", name, node);
	/* a second cluster on the same node that tolerates the taint */
	snprintf(extra, sizeof(extra), "\"nodeSelector\":{\"kubernetes.io/hostname\":\"%s\"},"
	    "\"tolerations\":[%s,{\"key\":\"fleet.io/drill\",\"operator\":\"Exists\","
	    "\"effect\":\"NoExecute\"}]", node, GPU_TOL);
	assert_int_equal(csh_apply(&H, HP, "rayclusters", "tk", csh_ray_body("RayCluster", "tk",
	    1, 1, extra, "")), 201);
	assert_true(csh_wait(&H, settled, &wk, 10));
	worker_of(HP, "tk", kept, knode);
	assert_string_equal(knode, node);
	/* what kubectl taint node N fleet.io/drill=x:NoExecute sends */
	snprintf(path, sizeof(path), "/api/v1/nodes/%s", node);
	assert_int_equal(kube_status(HP, "PATCH", path, SMP, "{\"spec\":{\"taints\":[{\"key\":"
	    "\"fleet.io/drill\",\"value\":\"x\",\"effect\":\"NoExecute\"}]}}"), 200);
	n = node_get(HP, node, &st);
	assert_true(has_taint(n, "fleet.io/drill", "NoExecute"));
	assert_non_null(json_object_get(json_array_get(json_object_get(json_object_get(n, "spec"),
	    "taints"), 0), "timeAdded"));
	json_decref(n);
	w.avoid = node;
	w.gone = name;
	assert_true(csh_wait(&H, settled, &w, 10));	/* evicted, replaced elsewhere */
	assert_true(csh_has_event(&H, HP, name, "TaintManagerEviction"));
	worker_of(HP, "tk", name, path);
	assert_string_equal(name, kept);		/* the tolerating pod stays */
	assert_int_equal(kube_status(HP, "PATCH", "/api/v1/nodes/nope", SMP, "{}"), 404);
	snprintf(path, sizeof(path), "/api/v1/nodes/%s", node);
	assert_int_equal(kube_status(HP, "PATCH", path, SMP, "{\"spec\":{\"taints\":[{\"key\":"
	    "\"a\",\"effect\":\"Sometimes\"}]}}"), 422);
	assert_int_equal(kube_status(HP, "PATCH", path, SMP, "{\"spec\":{\"taints\":null,"
	    "\"unschedulable\":true}}"), 200);
	n = node_get(HP, node, &st);
	assert_int_equal(json_array_size(json_object_get(json_object_get(n, "spec"), "taints")),
	    0);
	assert_true(json_is_true(json_object_get(json_object_get(n, "spec"), "unschedulable")));
	json_decref(n);
}

static void
test_not_ready_evicts_after_toleration(void **state)
{
	char extra[640], name[160], node[160], path[300];
	struct want w = { AKS, "nr", 2, NULL, NULL };
	struct csh_resp r;
	json_t *n, *c;
	long st;

	(void)state;
	snprintf(extra, sizeof(extra), "\"nodeSelector\":{\"kubernetes.azure.com/agentpool\":"
	    "\"h100\"},\"tolerations\":[%s,{\"key\":\"node.kubernetes.io/not-ready\","
	    "\"operator\":\"Exists\",\"effect\":\"NoExecute\",\"tolerationSeconds\":20}]", GPU_TOL);
	assert_int_equal(csh_apply(&H, AKS, "rayclusters", "nr", csh_ray_body("RayCluster", "nr",
	    1, 8, extra, "")), 201);
	assert_true(csh_wait(&H, settled, &w, 10));
	worker_of(AKS, "nr", name, node);
	snprintf(path, sizeof(path), "/api/v1/nodes/%s/status", node);
	r = csh_kube(&H, AKS, "PATCH", path, SMP, "{\"status\":{\"conditions\":[{\"type\":"
	    "\"Ready\",\"status\":\"False\",\"reason\":\"KubeletNotReady\",\"message\":\"PLEG is "
	    "not healthy\"}]}}");
	assert_int_equal(r.status, 200);
	c = json_array_get(json_object_get(json_object_get(r.json, "status"), "conditions"), 0);
	assert_string_equal(json_string_value(json_object_get(c, "status")), "False");
	assert_string_equal(json_string_value(json_object_get(c, "reason")), "KubeletNotReady");
	assert_string_equal(json_string_value(json_object_get(c, "lastTransitionTime")) ?
	    "kept" : "", "kept");	/* merged by type: the other fields stay */
	csh_resp_free(&r);
	usleep(300000);
	n = node_get(AKS, node, &st);
	assert_true(has_taint(n, "node.kubernetes.io/not-ready", "NoSchedule"));
	assert_true(has_taint(n, "node.kubernetes.io/not-ready", "NoExecute"));
	json_decref(n);
	/* tolerated for 20 simulated seconds (0.5 s here), then evicted and replaced */
	w.avoid = node;
	w.gone = name;
	assert_true(csh_wait(&H, settled, &w, 10));
	r = csh_kube(&H, AKS, "PATCH", path, SMP, "{\"status\":{\"conditions\":[{\"type\":"
	    "\"Ready\",\"status\":\"True\"}]}}");
	assert_int_equal(r.status, 200);
	csh_resp_free(&r);
	usleep(300000);
	n = node_get(AKS, node, &st);
	assert_false(has_taint(n, "node.kubernetes.io/not-ready", "NoSchedule"));
	json_decref(n);
}

static void
test_pod_status_as_patched(void **state)
{
	char name[160], node[160], path[300];
	struct csh_resp r;
	json_t *c;

	(void)state;
	worker_of(GKE, "nd", name, node);
	snprintf(path, sizeof(path), "/api/v1/namespaces/default/pods/%s/status", name);
	r = csh_kube(&H, GKE, "PATCH", path, SMP, "{\"status\":{\"containerStatuses\":[{\"name\":"
	    "\"w\",\"ready\":false,\"restartCount\":3,\"image\":\"rayproject/ray:2.9.0-gpu\","
	    "\"imageID\":\"\",\"state\":{\"waiting\":{\"reason\":\"CrashLoopBackOff\"}},"
	    "\"lastState\":{\"terminated\":{\"reason\":\"OOMKilled\",\"exitCode\":137}}}]}}");
	assert_int_equal(r.status, 200);
	csh_resp_free(&r);
	usleep(300000);	/* some ticks: nothing overwrites it */
	snprintf(path, sizeof(path), "/api/v1/namespaces/default/pods/%s", name);
	r = csh_kube(&H, GKE, "GET", path, NULL, NULL);
	c = json_array_get(json_object_get(json_object_get(r.json, "status"),
	    "containerStatuses"), 0);
	assert_int_equal(json_array_size(json_object_get(json_object_get(r.json, "status"),
	    "containerStatuses")), 1);	/* an atomic list: replaced, not merged */
	assert_string_equal(jstr_at(c, "lastState.terminated.reason"), "OOMKilled");
	assert_int_equal(json_integer_value(json_object_get(json_object_get(json_object_get(c,
	    "lastState"), "terminated"), "exitCode")), 137);
	assert_string_equal(jstr_at(c, "state.waiting.reason"), "CrashLoopBackOff");
	assert_int_equal(json_integer_value(json_object_get(c, "restartCount")), 3);
	assert_string_equal(json_string_value(json_object_get(json_object_get(r.json, "status"),
	    "phase")), "Running");	/* the rest of status as it was */
	csh_resp_free(&r);
	snprintf(path, sizeof(path), "/api/v1/namespaces/default/pods/%s/status", name);
	assert_int_equal(kube_status(GKE, "PATCH", path, "application/json-patch+json", "[]"),
	    415);
	assert_int_equal(kube_status(GKE, "PATCH", "/api/v1/namespaces/default/pods/nope/status",
	    SMP, "{}"), 404);
}

static void
test_spot_preemption(void **state)
{
	const char *l4 = "\"nodeSelector\":{\"cloud.google.com/gke-spot\":\"true\"},"
	    "\"tolerations\":[{\"key\":\"nvidia.com/gpu\",\"operator\":\"Exists\"}]";
	struct want w = { GKE, "spot", 2, NULL, NULL };
	char body[256], name[160], node[160];
	struct csh_resp r;
	json_t *n;
	long st;

	(void)state;
	assert_int_equal(csh_apply(&H, GKE, "rayclusters", "spot", csh_ray_body("RayCluster",
	    "spot", 1, 4, l4, "")), 201);
	assert_true(csh_wait(&H, settled, &w, 10));
	worker_of(GKE, "spot", name, node);
	snprintf(body, sizeof(body), "{\"cluster\":\"%s\",\"node\":\"%s\",\"notice_s\":10}", GKE,
	    node);
	r = csh_sim(&H, "POST", "/_sim/spot-reclaim", body);
	assert_int_equal(r.status, 200);
	csh_resp_free(&r);
	/* GKE: the node is tainted for the notice; nothing is said on the pods */
	n = node_get(GKE, node, &st);
	assert_true(has_taint(n, "cloud.google.com/impending-node-termination", "NoSchedule"));
	json_decref(n);
	assert_false(csh_has_event(&H, GKE, "spot-gpu-worker", "PreemptionNotice"));
	/* after the notice the node is gone and the worker runs on the other spot node */
	w.avoid = node;
	w.gone = name;
	assert_true(csh_wait(&H, settled, &w, 10));
	n = node_get(GKE, node, &st);
	assert_int_equal(st, 404);
	json_decref(n);
	assert_false(csh_has_event(&H, GKE, "spot-gpu-worker", "Preempted"));
	r = csh_sim(&H, "POST", "/_sim/spot-reclaim", "{\"cluster\":\"nope\",\"node\":\"x\"}");
	assert_int_equal(r.status, 400);
	csh_resp_free(&r);
}

static void
test_spot_signals_aws_and_azure(void **state)
{
	struct csh_resp r;
	char node[160];
	json_t *n, *c;
	long st;
	size_t i;
	bool vm_event = false;

	(void)state;
	/* AWS Node Termination Handler: taint, cordon, Node events, drain */
	r = csh_sim(&H, "POST", "/_sim/spot-reclaim", "{\"cluster\":\"" HP "\",\"pool\":\"p5\","
	    "\"notice_s\":120}");
	assert_int_equal(r.status, 200);
	snprintf(node, sizeof(node), "%s", json_string_value(json_array_get(json_object_get(r.json,
	    "preempted"), 0)));
	csh_resp_free(&r);
	n = node_get(HP, node, &st);
	assert_true(has_taint(n, "aws-node-termination-handler/spot-itn", "NoSchedule"));
	assert_true(json_is_true(json_object_get(json_object_get(n, "spec"), "unschedulable")));
	json_decref(n);
	assert_true(csh_has_event(&H, HP, node, "SpotInterruption"));
	assert_true(csh_has_event(&H, HP, node, "CordonAndDrain"));
	r = csh_sim(&H, "POST", "/_sim/spot-reclaim", "{\"cluster\":\"" HP "\",\"pool\":\"g6\","
	    "\"signal\":\"rebalance\"}");
	assert_int_equal(r.status, 200);
	snprintf(node, sizeof(node), "%s", json_string_value(json_array_get(json_object_get(r.json,
	    "preempted"), 0)));
	csh_resp_free(&r);
	n = node_get(HP, node, &st);
	assert_true(has_taint(n, "aws-node-termination-handler/rebalance-recommendation",
	    "NoSchedule"));
	json_decref(n);
	assert_true(csh_has_event(&H, HP, node, "RebalanceRecommendation"));
	/* AKS: Preempt scheduled event -> NPD condition, auto-drain taint and cordon, then gone */
	r = csh_sim(&H, "POST", "/_sim/spot-reclaim", "{\"cluster\":\"" AKS "\",\"pool\":"
	    "\"h100spot\",\"notice_s\":30}");
	assert_int_equal(r.status, 200);
	snprintf(node, sizeof(node), "%s", json_string_value(json_array_get(json_object_get(r.json,
	    "preempted"), 0)));
	csh_resp_free(&r);
	n = node_get(AKS, node, &st);
	assert_true(has_taint(n, "kubernetes.azure.com/scalesetpriority", "NoSchedule"));
	assert_true(has_taint(n, "remediator.kubernetes.azure.com/unschedulable", "NoSchedule"));
	assert_true(json_is_true(json_object_get(json_object_get(n, "spec"), "unschedulable")));
	json_array_foreach(json_object_get(json_object_get(n, "status"), "conditions"), i, c)
		vm_event = vm_event || strcmp(json_string_value(json_object_get(c, "type")),
		    "VMEventScheduled") == 0;
	assert_true(vm_event);
	json_decref(n);
	assert_true(csh_has_event(&H, AKS, node, "PreemptScheduled"));
	usleep(1200000);	/* 30 simulated seconds */
	n = node_get(AKS, node, &st);
	assert_int_equal(st, 404);
	json_decref(n);
	assert_true(csh_has_event(&H, AKS, node, "Preempt"));
	r = csh_sim(&H, "POST", "/_sim/spot-reclaim", "{\"cluster\":\"" GKE "\",\"pool\":"
	    "\"system\",\"signal\":\"rebalance\"}");
	assert_int_equal(r.status, 400);	/* a rebalance recommendation is AWS's */
	csh_resp_free(&r);
}

static void
test_self_subject_access_review(void **state)
{
	const char *p = "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews";
	struct csh_resp r;

	(void)state;
	r = csh_kube(&H, GKE, "POST", p, "application/json", "{\"kind\":"
	    "\"SelfSubjectAccessReview\",\"apiVersion\":\"authorization.k8s.io/v1\",\"spec\":{"
	    "\"resourceAttributes\":{\"verb\":\"delete\",\"resource\":\"nodes\"}}}");
	assert_int_equal(r.status, 201);
	assert_true(json_is_true(json_object_get(json_object_get(r.json, "status"), "allowed")));
	assert_string_equal(jstr_at(r.json, "spec.resourceAttributes.resource"), "nodes");
	csh_resp_free(&r);
	assert_int_equal(kube_status(GKE, "POST", p, "application/json", "{\"spec\":{}}"), 422);
	assert_int_equal(kube_status(GKE, "GET", p, NULL, NULL), 405);
	r = csh_kube(&H, GKE, "GET", "/apis/authorization.k8s.io/v1", NULL, NULL);
	assert_int_equal(r.status, 200);
	assert_non_null(strstr(r.body, "selfsubjectaccessreviews"));
	csh_resp_free(&r);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_node_delete_replaces_workers),
		cmocka_unit_test(test_pinned_replacement_stays_pending),
		cmocka_unit_test(test_taint_noexecute_evicts),
		cmocka_unit_test(test_not_ready_evicts_after_toleration),
		cmocka_unit_test(test_pod_status_as_patched),
		cmocka_unit_test(test_spot_preemption),
		cmocka_unit_test(test_spot_signals_aws_and_azure),
		cmocka_unit_test(test_self_subject_access_review),
	};

	return cmocka_run_group_tests(tests, setup, harness_group_teardown);
}
