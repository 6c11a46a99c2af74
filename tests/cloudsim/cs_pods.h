/* cs_pods: what cloudsim's tests of member clusters share — a RayCluster/RayJob body,
 * server-side apply, the pods of a Ray cluster and their phases, and the cluster's events.
 * Header-only, like cs_harness.h. */
#ifndef CS_PODS_H
#define CS_PODS_H

#include "cs_harness.h"

#define AP "application/apply-patch+yaml"

/* member clusters of cloudsim/fleets/test.json */
#define GKE "test-gke-usc1"
#define AKS "test-aks-eus"
#define HP "test-hp-usw2"

/* A RayCluster (or RayJob when job) whose one worker group has `workers` pods with
 * `gpus` GPUs each and the given pod spec extras (JSON members, may be ""). */
static inline char *
csh_ray_body(const char *kind, const char *name, int workers, int gpus, const char *extra,
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

static inline long
csh_apply(struct csh *h, const char *cluster, const char *plural, const char *name, char *body)
{
	char path[300];
	struct csh_resp r;
	long st;

	snprintf(path, sizeof(path), "/apis/ray.io/v1/namespaces/default/%s/%s?fieldManager="
	    "fleetd", plural, name);
	r = csh_kube(h, cluster, "PATCH", path, AP, body);
	st = r.status;
	csh_resp_free(&r);
	free(body);
	return st;
}

/* Pods of Ray cluster rc (new reference). */
static inline json_t *
csh_pods(struct csh *h, const char *cluster, const char *rc)
{
	char path[300];
	struct csh_resp r;
	json_t *items;

	snprintf(path, sizeof(path), "/api/v1/namespaces/default/pods?labelSelector="
	    "ray.io%%2Fcluster%%3D%s", rc);
	r = csh_kube(h, cluster, "GET", path, NULL, NULL);
	items = json_incref(json_object_get(r.json, "items"));
	csh_resp_free(&r);
	return items ? items : json_array();
}

static inline int
csh_count_phase(json_t *items, const char *phase)
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

/* The message of the latest event with reason about an object named who* (malloc'd, "" for
 * an event without one), or NULL when there is none. */
static inline char *
csh_event_message(struct csh *h, const char *cluster, const char *who, const char *reason)
{
	struct csh_resp r = csh_kube(h, cluster, "GET", "/api/v1/namespaces/default/events",
	    NULL, NULL);
	char *out = NULL;
	size_t i;
	json_t *e;

	json_array_foreach(json_object_get(r.json, "items"), i, e) {
		const char *n = json_string_value(json_object_get(json_object_get(e,
		    "involvedObject"), "name"));
		const char *m = json_string_value(json_object_get(e, "message"));

		if (n && strncmp(n, who, strlen(who)) == 0 &&
		    strcmp(json_string_value(json_object_get(e, "reason")), reason) == 0) {
			free(out);
			out = strdup(m ? m : "");
		}
	}
	csh_resp_free(&r);
	return out;
}

/* Whether cluster has an event with reason whose involved object name starts with who. */
static inline bool
csh_has_event(struct csh *h, const char *cluster, const char *who, const char *reason)
{
	char *m = csh_event_message(h, cluster, who, reason);
	bool found = m != NULL;

	free(m);
	return found;
}

struct csh_want {
	const char	*cluster, *rc, *phase;
	int		 n;
};

static inline bool
csh_pods_in_phase(struct csh *h, void *arg)
{
	struct csh_want *w = arg;
	json_t *p = csh_pods(h, w->cluster, w->rc);
	bool ok = csh_count_phase(p, w->phase) == w->n;

	json_decref(p);
	return ok;
}

#endif
