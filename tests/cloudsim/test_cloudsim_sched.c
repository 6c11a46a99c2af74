/* cloudsim member-cluster behaviour: rack affinity, stockout (fleet file and fault),
 * autoscaling, RayJob status progression, suspend, spot preemption. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include "cs_harness.h"

#define GKE "test-gke-usc1"
#define AKS "test-aks-eus"
#define HP "test-hp-usw2"
#define AP "application/apply-patch+yaml"

static struct csh H;

static char *event_message(const char *cluster, const char *who, const char *reason);

static int
setup(void **state)
{
	(void)state;
	return csh_setup(&H, "40");
}

/* A RayCluster (or RayJob when job) whose one worker group has `workers` pods with
 * `gpus` GPUs each and the given pod spec extras (JSON members, may be ""). */
static char *
ray_body(const char *kind, const char *name, int workers, int gpus, const char *extra,
    const char *spec_extra)
{
	char *s = NULL, cl[4096];

	snprintf(cl, sizeof(cl), "{\"headGroupSpec\":{\"rayStartParams\":{},\"template\":{"
	    "\"spec\":{\"containers\":[{\"name\":\"ray-head\",\"image\":\"rayproject/ray:2.9.0\","
	    "\"resources\":{\"requests\":{\"cpu\":\"1\",\"memory\":\"2Gi\"}}}]}}},"
	    "\"workerGroupSpecs\":[{\"groupName\":\"gpu\",\"replicas\":%d,\"minReplicas\":%d,"
	    "\"maxReplicas\":%d,\"rayStartParams\":{},\"template\":{\"spec\":{%s%s\"containers\":[{"
	    "\"name\":\"w\",\"image\":\"rayproject/ray:2.9.0-gpu\",\"resources\":{\"requests\":{"
	    "\"cpu\":\"8\",\"memory\":\"32Gi\",\"nvidia.com/gpu\":\"%d\"},\"limits\":{"
	    "\"nvidia.com/gpu\":\"%d\"}}}]}}}]}", workers, workers, workers, extra,
	    *extra ? "," : "", gpus, gpus);
	if (strcmp(kind, "RayJob") == 0) {
		if (asprintf(&s, "{\"apiVersion\":\"ray.io/v1\",\"kind\":\"RayJob\",\"metadata\":{"
		    "\"name\":\"%s\",\"annotations\":{\"cloudsim.fleet.io/run-seconds\":\"20\"}},"
		    "\"spec\":{\"entrypoint\":\"python train.py\",%s\"rayClusterSpec\":%s}}", name,
		    spec_extra, cl) < 0)
			return NULL;
	} else if (asprintf(&s, "{\"apiVersion\":\"ray.io/v1\",\"kind\":\"RayCluster\","
	    "\"metadata\":{\"name\":\"%s\"},\"spec\":%s}", name, cl) < 0) {
		return NULL;
	}
	return s;
}

static long
apply(const char *cluster, const char *plural, const char *name, char *body)
{
	char path[300];
	struct csh_resp r;
	long st;

	snprintf(path, sizeof(path), "/apis/ray.io/v1/namespaces/default/%s/%s?fieldManager="
	    "fleetd", plural, name);
	r = csh_kube(&H, cluster, "PATCH", path, AP, body);
	st = r.status;
	csh_resp_free(&r);
	free(body);
	return st;
}

/* Pods of Ray cluster rc (new reference). */
static json_t *
pods(const char *cluster, const char *rc)
{
	char path[300];
	struct csh_resp r;
	json_t *items;

	snprintf(path, sizeof(path), "/api/v1/namespaces/default/pods?labelSelector="
	    "ray.io%%2Fcluster%%3D%s", rc);
	r = csh_kube(&H, cluster, "GET", path, NULL, NULL);
	items = json_incref(json_object_get(r.json, "items"));
	csh_resp_free(&r);
	return items ? items : json_array();
}

static int
count_phase(json_t *items, const char *phase)
{
	size_t i;
	json_t *p;
	int n = 0;

	json_array_foreach(items, i, p)
		if (strcmp(json_string_value(json_object_get(json_object_get(p, "status"),
		    "phase")), phase) == 0)
			n++;
	return n;
}

/* Whether cluster has an event with reason whose involved object name starts with who. */
static bool
has_event(const char *cluster, const char *who, const char *reason)
{
	struct csh_resp r = csh_kube(&H, cluster, "GET", "/api/v1/namespaces/default/events",
	    NULL, NULL);
	bool found = false;
	size_t i;
	json_t *e;

	json_array_foreach(json_object_get(r.json, "items"), i, e) {
		const char *n = json_string_value(json_object_get(json_object_get(e,
		    "involvedObject"), "name"));

		if (n && strncmp(n, who, strlen(who)) == 0 &&
		    strcmp(json_string_value(json_object_get(e, "reason")), reason) == 0)
			found = true;
	}
	csh_resp_free(&r);
	return found;
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

struct want {
	const char	*cluster, *rc, *phase;
	int		 n;
};

static bool
pods_in_phase(struct csh *h, void *arg)
{
	struct want *w = arg;
	json_t *p = pods(w->cluster, w->rc);
	bool ok = count_phase(p, w->phase) == w->n;

	(void)h;
	json_decref(p);
	return ok;
}

static const char *GKE_H100 = "\"nodeSelector\":{\"cloud.google.com/gke-accelerator\":"
    "\"nvidia-h100-80gb\"},\"tolerations\":[{\"key\":\"nvidia.com/gpu\",\"operator\":\"Exists\","
    "\"effect\":\"NoSchedule\"}]";

static void
test_rack_affinity(void **state)
{
	char extra[1024], rack[128];
	struct want w = { GKE, "rack-b", "Running", 2 };
	json_t *p;
	size_t i;
	json_t *pod;

	(void)state;
	/* rack 00 holds two nodes, one full and one half full: 8 GPUs never fit there */
	snprintf(extra, sizeof(extra), "%s,\"affinity\":{\"nodeAffinity\":{"
	    "\"requiredDuringSchedulingIgnoredDuringExecution\":{\"nodeSelectorTerms\":[{"
	    "\"matchExpressions\":[{\"key\":\"cloud.google.com/gce-topology-subblock\","
	    "\"operator\":\"In\",\"values\":[\"%s-h100-00\"]}]}]}}}", GKE_H100, GKE);
	assert_int_equal(apply(GKE, "rayclusters", "rack-a", ray_body("RayCluster", "rack-a", 1, 8,
	    extra, "")), 201);
	/* rack 01 has a free node */
	snprintf(extra, sizeof(extra), "%s,\"affinity\":{\"nodeAffinity\":{"
	    "\"requiredDuringSchedulingIgnoredDuringExecution\":{\"nodeSelectorTerms\":[{"
	    "\"matchExpressions\":[{\"key\":\"cloud.google.com/gce-topology-subblock\","
	    "\"operator\":\"In\",\"values\":[\"%s-h100-01\"]}]}]}}}", GKE_H100, GKE);
	assert_int_equal(apply(GKE, "rayclusters", "rack-b", ray_body("RayCluster", "rack-b", 1, 8,
	    extra, "")), 201);
	assert_true(csh_wait(&H, pods_in_phase, &w, 10));
	p = pods(GKE, "rack-b");
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
	p = pods(GKE, "rack-a");
	assert_int_equal(count_phase(p, "Pending"), 1);
	json_decref(p);
	assert_true(has_event(GKE, "rack-a-gpu-worker", "FailedScheduling"));
	assert_false(has_event(GKE, "rack-a-gpu-worker", "TriggeredScaleUp"));
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
	struct want w = { AKS, "so", "Running", 3 };
	struct csh_resp r;
	json_t *p;

	(void)state;
	/* the AKS h100 pool is in stockout in the fleet file: 2 of 3 workers run */
	assert_int_equal(apply(AKS, "rayclusters", "so", ray_body("RayCluster", "so", 3, 8, aks,
	    "")), 201);
	usleep(1000000);
	p = pods(AKS, "so");
	assert_int_equal(count_phase(p, "Running"), 3);	/* head + 2 workers */
	assert_int_equal(count_phase(p, "Pending"), 1);
	json_decref(p);
	assert_true(has_event(AKS, "so-gpu-worker", "FailedScheduling"));
	assert_true(has_event(AKS, "so-gpu-worker", "FailedScaleUp"));
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
		assert_int_equal(apply(GKE, "rayclusters", "grow", ray_body("RayCluster", "grow", 1,
		    8, GKE_H100, "")), 201);
		usleep(800000);
		assert_int_equal(pool_nodes(GKE, "h100"), 3);
		assert_true(has_event(GKE, "grow-gpu-worker", "FailedScaleUp"));
		d = csh_sim(&H, "DELETE", del, NULL);
		assert_int_equal(d.status, 200);
		csh_resp_free(&d);
	}
	csh_resp_free(&r);
	assert_true(csh_wait(&H, gke_h100_grew, NULL, 10));
	w.cluster = GKE;
	w.rc = "grow";
	w.n = 2;
	assert_true(csh_wait(&H, pods_in_phase, &w, 10));
}

struct job_want {
	const char	*status;
};

static bool
job_is(struct csh *h, void *arg)
{
	struct job_want *w = arg;
	struct csh_resp r = csh_kube(h, HP, "GET", "/apis/ray.io/v1/namespaces/default/rayjobs/"
	    "job-a", NULL, NULL);
	const char *s = json_string_value(json_object_get(json_object_get(r.json, "status"),
	    "jobDeploymentStatus"));
	bool ok = s != NULL && strcmp(s, w->status) == 0;

	csh_resp_free(&r);
	return ok;
}

static void
test_rayjob_progression_and_suspend(void **state)
{
	const char *g6 = "\"nodeSelector\":{\"sagemaker.amazonaws.com/instance-group-name\":"
	    "\"g6\"}";
	struct job_want jw = { "Initializing" };
	struct csh_resp r;
	json_t *p;
	char rc[160];
	struct want w = { HP, "susp", "Running", 3 };

	(void)state;
	assert_int_equal(apply(HP, "rayjobs", "job-a", ray_body("RayJob", "job-a", 1, 8, g6,
	    "\"shutdownAfterJobFinishes\":true,\"ttlSecondsAfterFinished\":0,")), 201);
	r = csh_kube(&H, HP, "GET", "/apis/ray.io/v1/namespaces/default/rayjobs/job-a", NULL,
	    NULL);
	assert_string_equal(json_string_value(json_object_get(json_object_get(r.json, "status"),
	    "jobDeploymentStatus")), "Initializing");
	snprintf(rc, sizeof(rc), "%s", json_string_value(json_object_get(json_object_get(r.json,
	    "status"), "rayClusterName")));
	csh_resp_free(&r);
	jw.status = "Running";
	assert_true(csh_wait(&H, job_is, &jw, 10));
	jw.status = "Complete";
	assert_true(csh_wait(&H, job_is, &jw, 10));
	r = csh_kube(&H, HP, "GET", "/apis/ray.io/v1/namespaces/default/rayjobs/job-a", NULL,
	    NULL);
	assert_string_equal(json_string_value(json_object_get(json_object_get(r.json, "status"),
	    "jobStatus")), "SUCCEEDED");
	assert_non_null(json_object_get(json_object_get(r.json, "status"), "endTime"));
	csh_resp_free(&r);
	usleep(500000);
	p = pods(HP, rc);
	assert_int_equal(json_array_size(p), 0);	/* shut down after finishing */
	json_decref(p);
	/* suspend tears the pods down, resume brings them back */
	assert_int_equal(apply(HP, "rayclusters", "susp", ray_body("RayCluster", "susp", 2, 8, g6,
	    "")), 201);
	assert_true(csh_wait(&H, pods_in_phase, &w, 10));
	r = csh_kube(&H, HP, "PATCH", "/apis/ray.io/v1/namespaces/default/rayclusters/susp",
	    "application/merge-patch+json", "{\"spec\":{\"suspend\":true}}");
	assert_int_equal(r.status, 200);
	csh_resp_free(&r);
	p = pods(HP, "susp");
	assert_int_equal(json_array_size(p), 0);
	json_decref(p);
	r = csh_kube(&H, HP, "GET", "/apis/ray.io/v1/namespaces/default/rayclusters/susp", NULL,
	    NULL);
	assert_string_equal(json_string_value(json_object_get(json_object_get(r.json, "status"),
	    "state")), "suspended");
	csh_resp_free(&r);
	/* the operator refuses a suspended RayJob that would not shut down, and long names */
	assert_int_equal(apply(HP, "rayjobs", "bad-suspend", ray_body("RayJob", "bad-suspend", 1,
	    8, g6, "\"suspend\":true,")), 201);
	usleep(300000);
	r = csh_kube(&H, HP, "GET", "/apis/ray.io/v1/namespaces/default/rayjobs/bad-suspend",
	    NULL, NULL);
	assert_string_equal(json_string_value(json_object_get(json_object_get(r.json, "status"),
	    "jobDeploymentStatus")), "ValidationFailed");
	csh_resp_free(&r);
	{
		const char *longname = "a-rayjob-name-that-is-much-too-long-for-kuberay-x";

		assert_int_equal(apply(HP, "rayjobs", longname, ray_body("RayJob", longname, 1, 8,
		    g6, "")), 201);
		usleep(300000);
		assert_true(has_event(HP, longname, "InvalidRayJobSpec"));
	}
	/* an image that cannot be pulled: pods wait in ImagePullBackOff with kubelet events */
	{
		char *s = ray_body("RayCluster", "nopull", 1, 0, "", "");
		json_t *b = json_loads(s, 0, NULL);

		free(s);
		json_object_set_new(json_object_get(b, "metadata"), "annotations", json_pack(
		    "{s:s}", "cloudsim.fleet.io/outcome", "image-pull-backoff"));
		s = json_dumps(b, JSON_COMPACT);
		json_decref(b);
		assert_int_equal(apply(HP, "rayclusters", "nopull", s), 201);
		usleep(500000);
		p = pods(HP, "nopull");
		assert_int_equal(count_phase(p, "Pending"), 2);
		assert_string_equal(json_string_value(json_object_get(json_object_get(
		    json_object_get(json_array_get(json_object_get(json_object_get(json_array_get(
		    p, 0), "status"), "containerStatuses"), 0), "state"), "waiting"), "reason")),
		    "ImagePullBackOff");
		json_decref(p);
		assert_true(has_event(HP, "nopull-head", "BackOff"));
	}
	/* issue 13: GPU workers on the CPU image find no CUDA and crash-loop like under the
	 * kubelet: CrashLoopBackOff, a restart count, BackOff events; the head runs */
	{
		char *s = ray_body("RayCluster", "cpuimg", 1, 8, g6, "");
		json_t *pod, *cst, *b = json_loads(s, 0, NULL);
		size_t i;
		int loops = 0;

		free(s);
		json_string_set(json_object_get(json_array_get(json_object_get(json_object_get(
		    json_object_get(json_array_get(json_object_get(json_object_get(b, "spec"),
		    "workerGroupSpecs"), 0), "template"), "spec"), "containers"), 0), "image"),
		    "rayproject/ray:2.9.0");
		s = json_dumps(b, JSON_COMPACT);
		json_decref(b);
		assert_int_equal(apply(HP, "rayclusters", "cpuimg", s), 201);
		usleep(1500000);
		p = pods(HP, "cpuimg");
		json_array_foreach(p, i, pod) {
			cst = json_array_get(json_object_get(json_object_get(pod, "status"),
			    "containerStatuses"), 0);
			if (strstr(json_string_value(json_object_get(json_object_get(pod, "metadata"),
			    "name")), "worker") == NULL)
				continue;
			assert_string_equal(json_string_value(json_object_get(json_object_get(
			    json_object_get(cst, "state"), "waiting"), "reason")), "CrashLoopBackOff");
			assert_true(json_integer_value(json_object_get(cst, "restartCount")) >= 1);
			assert_int_equal(json_integer_value(json_object_get(json_object_get(
			    json_object_get(cst, "lastState"), "terminated"), "exitCode")), 1);
			/* the kubelet names the pod's own container */
			assert_string_equal(json_string_value(json_object_get(cst, "name")), "w");
			assert_non_null(strstr(json_string_value(json_object_get(json_object_get(
			    json_object_get(cst, "state"), "waiting"), "message")),
			    "restarting failed container=w pod=cpuimg-gpu-worker-"));
			loops++;
		}
		json_decref(p);
		assert_int_equal(loops, 1);
		assert_true(has_event(HP, "cpuimg-gpu-worker", "BackOff"));
		assert_true(has_event(HP, "cpuimg-gpu-worker", "Created"));
		{
			char *m = event_message(HP, "cpuimg-gpu-worker", "BackOff");

			assert_non_null(m);
			assert_non_null(strstr(m, "Back-off restarting failed container w in pod "
			    "cpuimg-gpu-worker-"));
			free(m);
		}
		r = csh_kube(&H, HP, "DELETE", "/apis/ray.io/v1/namespaces/default/rayclusters/"
		    "cpuimg", NULL, NULL);
		csh_resp_free(&r);
	}
	/* deletion frees the GPUs the workers held */
	r = csh_kube(&H, HP, "DELETE", "/apis/ray.io/v1/namespaces/default/rayclusters/susp",
	    NULL, NULL);
	assert_int_equal(r.status, 200);
	csh_resp_free(&r);
}

static void
test_spot_preemption(void **state)
{
	const char *l4 = "\"nodeSelector\":{\"cloud.google.com/gke-spot\":\"true\"},"
	    "\"tolerations\":[{\"key\":\"nvidia.com/gpu\",\"operator\":\"Exists\"}]";
	struct want w = { GKE, "spot", "Running", 2 };
	char body[256], first[160];
	struct csh_resp r;
	json_t *p, *pod;
	size_t i;

	(void)state;
	assert_int_equal(apply(GKE, "rayclusters", "spot", ray_body("RayCluster", "spot", 1, 4, l4,
	    "")), 201);
	assert_true(csh_wait(&H, pods_in_phase, &w, 10));
	p = pods(GKE, "spot");
	first[0] = '\0';
	json_array_foreach(p, i, pod)
		if (strstr(json_string_value(json_object_get(json_object_get(pod, "metadata"),
		    "name")), "worker"))
			snprintf(first, sizeof(first), "%s", json_string_value(json_object_get(
			    json_object_get(pod, "spec"), "nodeName")));
	json_decref(p);
	assert_true(first[0] != '\0');
	snprintf(body, sizeof(body), "{\"cluster\":\"%s\",\"node\":\"%s\",\"notice_s\":10}", GKE,
	    first);
	r = csh_sim(&H, "POST", "/_sim/preempt", body);
	assert_int_equal(r.status, 200);
	csh_resp_free(&r);
	assert_true(has_event(GKE, "spot-gpu-worker", "PreemptionNotice"));
	usleep(800000);
	assert_true(has_event(GKE, "spot-gpu-worker", "Preempted"));
	assert_true(csh_wait(&H, pods_in_phase, &w, 10));
	p = pods(GKE, "spot");
	json_array_foreach(p, i, pod)
		assert_string_not_equal(json_string_value(json_object_get(json_object_get(pod,
		    "spec"), "nodeName")), first);
	json_decref(p);
	r = csh_sim(&H, "POST", "/_sim/preempt", "{\"cluster\":\"nope\",\"node\":\"x\"}");
	assert_int_equal(r.status, 400);
	csh_resp_free(&r);
}

static bool
cron_spawned(struct csh *h, void *arg)
{
	struct csh_resp r = csh_kube(h, HP, "GET", "/apis/ray.io/v1/namespaces/default/rayjobs?"
	    "labelSelector=ray.io%2Fcronjob-name%3Dnightly", NULL, NULL);
	bool ok = json_array_size(json_object_get(r.json, "items")) >= 1;

	(void)arg;
	csh_resp_free(&r);
	return ok;
}

static void
test_raycronjob(void **state)
{
	char *job = ray_body("RayJob", "x", 1, 0, "", ""), *body = NULL;
	json_t *j = json_loads(job, 0, NULL);
	char *spec = json_dumps(json_object_get(j, "spec"), JSON_COMPACT);
	struct csh_resp r;

	(void)state;
	if (asprintf(&body, "{\"apiVersion\":\"ray.io/v1\",\"kind\":\"RayCronJob\",\"metadata\":"
	    "{\"name\":\"nightly\"},\"spec\":{\"schedule\":\"@every 10s\",\"jobTemplate\":%s}}",
	    spec) < 0)
		fail();
	assert_int_equal(apply(HP, "raycronjobs", "nightly", body), 201);
	assert_true(csh_wait(&H, cron_spawned, NULL, 10));
	r = csh_kube(&H, HP, "GET", "/apis/ray.io/v1/namespaces/default/raycronjobs/nightly",
	    NULL, NULL);
	assert_non_null(json_object_get(json_object_get(r.json, "status"), "lastScheduleTime"));
	csh_resp_free(&r);
	r = csh_kube(&H, HP, "PATCH", "/apis/ray.io/v1/namespaces/default/raycronjobs/nightly?"
	    "fieldManager=fleetd", AP, "{\"apiVersion\":\"ray.io/v1\",\"kind\":\"RayCronJob\","
	    "\"metadata\":{\"name\":\"nightly\"},\"spec\":{}}");
	assert_int_equal(r.status, 422);	/* schedule and jobTemplate are required */
	csh_resp_free(&r);
	free(spec);
	free(job);
	json_decref(j);
}

/* The message of the latest event with reason about a pod named who* (malloc'd), or NULL. */
static char *
event_message(const char *cluster, const char *who, const char *reason)
{
	struct csh_resp r = csh_kube(&H, cluster, "GET", "/api/v1/namespaces/default/events",
	    NULL, NULL);
	char *out = NULL;
	size_t i;
	json_t *e;

	json_array_foreach(json_object_get(r.json, "items"), i, e) {
		const char *n = json_string_value(json_object_get(json_object_get(e,
		    "involvedObject"), "name"));

		if (n && strncmp(n, who, strlen(who)) == 0 &&
		    strcmp(json_string_value(json_object_get(e, "reason")), reason) == 0) {
			free(out);
			out = strdup(json_string_value(json_object_get(e, "message")));
		}
	}
	csh_resp_free(&r);
	return out;
}

/* The PodScheduled condition's message of the first pending worker of rc (malloc'd). */
static char *
pending_message(const char *cluster, const char *rc)
{
	json_t *p = pods(cluster, rc), *pod;
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
	char *m = event_message(GKE, arg, "FailedScheduling");
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
	struct want w = { GKE, "tpu2", "Running", 3 };	/* head + replica 0 */
	json_t *p;
	struct csh_resp r;

	(void)state;
	/* a hostname no node has (fleetd pins pods to the scheduler's nodes) */
	snprintf(extra, sizeof(extra), "\"nodeSelector\":{\"kubernetes.io/hostname\":"
	    "\"no-such-node\"},%s", tol);
	assert_int_equal(apply(GKE, "rayclusters", "nohost", ray_body("RayCluster", "nohost", 1,
	    1, extra, "")), 201);
	/* required pod affinity to pods that do not exist (and that the pod is not) */
	snprintf(extra, sizeof(extra), "%s,\"nodeSelector\":{\"cloud.google.com/gke-accelerator\":"
	    "\"nvidia-h100-80gb\"},\"affinity\":{\"podAffinity\":{"
	    "\"requiredDuringSchedulingIgnoredDuringExecution\":[{\"labelSelector\":{"
	    "\"matchLabels\":{\"app\":\"absent\"}},\"topologyKey\":\"kubernetes.io/hostname\"}]}}",
	    tol);
	assert_int_equal(apply(GKE, "rayclusters", "nopeer", ray_body("RayCluster", "nopeer", 1, 1,
	    extra, "")), 201);
	/* two replicas of a 2-host v5p 2x2x2 slice, 2 chips a pod: the chips of the one slice
	 * would hold both, but a slice serves one replica */
	assert_int_equal(apply(GKE, "rayclusters", "tpu2", strdup("{\"apiVersion\":\"ray.io/v1\","
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
	if (!csh_wait(&H, pods_in_phase, &w, 10))
		fail_msg("replica 0 of tpu2 is not running: %s", pending_message(GKE, "tpu2"));
	assert_true(csh_wait(&H, has_failed_scheduling, "tpu2-tpu-worker", 10));

	m = event_message(GKE, "nohost-gpu-worker", "FailedScheduling");
	assert_non_null(strstr(m, "node(s) didn't match Pod's node affinity/selector"));
	assert_null(strstr(m, "Insufficient"));
	c = pending_message(GKE, "nohost");
	assert_string_equal(c, m);
	free(c);
	free(m);
	m = event_message(GKE, "nopeer-gpu-worker", "FailedScheduling");
	assert_non_null(strstr(m, "node(s) didn't match pod affinity rules"));
	free(m);
	m = event_message(GKE, "tpu2-tpu-worker", "FailedScheduling");
	assert_non_null(strstr(m, "node(s) belong to a TPU slice of another replica"));
	free(m);
	p = pods(GKE, "tpu2");
	assert_int_equal(count_phase(p, "Pending"), 2);	/* replica 1: both its hosts */
	json_decref(p);
	p = pods(GKE, "nohost");
	assert_int_equal(count_phase(p, "Pending"), 1);
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
		cmocka_unit_test(test_rayjob_progression_and_suspend),
		cmocka_unit_test(test_spot_preemption),
		cmocka_unit_test(test_raycronjob),
		cmocka_unit_test(test_unschedulable),
	};

	return cmocka_run_group_tests(tests, setup, harness_group_teardown);
}
