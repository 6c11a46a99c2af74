/* cloudsim kueue: Kueue on a member cluster whose batch scheduler is kueue — the objects
 * an installation has (namespace kueue-system, the manager's ConfigMap
 * kueue-manager-config, the ClusterQueues the fleet names), the validating webhooks
 * vrayjob.kb.io and vraycluster.kb.io (their refusals, word for word), and admission: a
 * Ray object with kueue.x-k8s.io/queue-name is held suspended (Kueue's mutating webhook
 * suspends it, the Workload stays "Inadmissible") while its LocalQueue or that queue's
 * ClusterQueue is missing, and released when they exist.  Quotas are fleetd's business:
 * an admissible object is admitted at once.  Simplified: the Workload's condition is
 * reported as an event on the Ray object itself; scheduling gates are not modelled. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cloudsim/cs.h"
#include "core/jsonx.h"

#define QUEUE_LABEL	"kueue.x-k8s.io/queue-name"
#define ELASTIC_ANN	"kueue.x-k8s.io/elastic-job"

bool
cs_kueue_on(const struct cs_cluster *cl)
{
	return strcmp(cl->batch_scheduler, "kueue") == 0;
}

static void
plain_put(struct cs_cluster *cl, const char *key, json_t *o)
{
	char rv[24];

	if (cl->plain == NULL)
		cl->plain = json_object();
	snprintf(rv, sizeof(rv), "%lld", ++cl->rv);
	json_object_set_new(json_object_get(o, "metadata"), "resourceVersion", json_string(rv));
	json_object_set_new(cl->plain, key, o);
}

void
cs_kueue_install(struct cs *cs, struct cs_cluster *cl, bool elastic_jobs, json_t *cqs)
{
	char yaml[1024], key[256], uid[40];
	json_t *v;
	size_t i;

	if (!cs_kueue_on(cl))
		return;
	if (!cs_ns_exists(cl, "kueue-system"))
		cs_ns_create(cs, cl, "kueue-system");
	/* the manager's configuration as the release manifests ship it, featureGates as the
	 * Configuration API's map (an alpha gate is off unless listed) */
	snprintf(yaml, sizeof(yaml), "apiVersion: config.kueue.x-k8s.io/v1beta1\n"
	    "kind: Configuration\nmanageJobsWithoutQueueName: false\n"
	    "integrations:\n  frameworks:\n  - \"batch/job\"\n  - \"ray.io/rayjob\"\n"
	    "  - \"ray.io/raycluster\"\n  - \"jobset.x-k8s.io/jobset\"\n"
	    "featureGates:\n  ElasticJobsViaWorkloadSlices: %s\n",
	    elastic_jobs ? "true" : "false");
	cs_uuid(uid);
	plain_put(cl, "configmaps/kueue-system/kueue-manager-config", json_pack("{s:s, s:s, "
	    "s:{s:s, s:s, s:s, s:{s:s}}, s:{s:s}}", "apiVersion", "v1", "kind", "ConfigMap",
	    "metadata", "name", "kueue-manager-config", "namespace", "kueue-system", "uid", uid,
	    "labels", "app.kubernetes.io/name", "kueue", "data",
	    "controller_manager_config.yaml", yaml));
	json_array_foreach(cqs, i, v) {
		if (!json_is_string(v))
			continue;
		cs_uuid(uid);
		snprintf(key, sizeof(key), "clusterqueues//%s", json_string_value(v));
		plain_put(cl, key, json_pack("{s:s, s:s, s:{s:s, s:s}, s:{s:{}, s:s, s:[]}}",
		    "apiVersion", "kueue.x-k8s.io/v1beta1", "kind", "ClusterQueue", "metadata",
		    "name", json_string_value(v), "uid", uid, "spec", "namespaceSelector",
		    "queueingStrategy", "BestEffortFIFO", "resourceGroups"));
	}
}

/* The ElasticJobsViaWorkloadSlices gate as the manager's ConfigMap sets it now. */
static bool
elastic_gate(struct cs_cluster *cl)
{
	json_t *cm = cs_plain_get(cl, "configmaps", "kueue-system", "kueue-manager-config");
	const char *y = cs_jpath(cm, "data.controller_manager_config.yaml");
	const char *p = y ? strstr(y, "ElasticJobsViaWorkloadSlices:") : NULL;

	if (p == NULL)
		return false;
	p += strlen("ElasticJobsViaWorkloadSlices:");
	while (*p == ' ')
		p++;
	return strncmp(p, "true", 4) == 0;
}

static const char *
label(json_t *body, const char *key)
{
	return json_string_value(json_object_get(jsonx_meta(body, "labels"), key));
}

static const char *
annotation(json_t *body, const char *key)
{
	return json_string_value(json_object_get(jsonx_meta(body, "annotations"), key));
}

/* Appends one field error as apimachinery's field.Error prints it. */
static void
add(char *buf, size_t n, int *count, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static void
add(char *buf, size_t n, int *count, const char *fmt, ...)
{
	size_t l = strlen(buf);
	va_list ap;

	if (*count > 0 && l + 2 < n) {
		memcpy(buf + l, ", ", 3);
		l += 2;
	}
	va_start(ap, fmt);
	vsnprintf(buf + l, n - l, fmt, ap);
	va_end(ap);
	(*count)++;
}

/* raycluster.ValidateCreate's checks of a cluster spec at path (RayJob's rayClusterSpec,
 * or a RayCluster's spec with the RayCluster webhook's own autoscaling rule). */
static void
check_spec(json_t *spec, const char *path, bool rayjob, bool elastic, char *buf, size_t n,
    int *count)
{
	json_t *groups = json_object_get(spec, "workerGroupSpecs"), *g;
	size_t i;

	if (json_is_true(json_object_get(spec, "enableInTreeAutoscaling")) && !elastic)
		add(buf, n, count, "%s.enableInTreeAutoscaling: Invalid value: true: %s", path,
		    rayjob ? "a kueue managed job should only use autoscaling when workload "
		    "slicing is enabled" : "a kueue managed job can use autoscaling only when "
		    "the ElasticJobsViaWorkloadSlices feature gate is on and the job is an "
		    "elastic job");
	if (json_array_size(groups) + 1 > 8)
		add(buf, n, count, "%s.workerGroupSpecs: Too many: %zu: must have at most %d "
		    "items", path, rayjob ? json_array_size(groups) + 1 : json_array_size(groups),
		    rayjob ? 8 : 7);
	json_array_foreach(groups, i, g)
		if (strcmp(json_string_value(json_object_get(g, "groupName")) ?
		    json_string_value(json_object_get(g, "groupName")) : "", "head") == 0)
			add(buf, n, count, "%s.workerGroupSpecs[%zu].groupName: Forbidden: "
			    "\"head\" is reserved for the head group", path, i);
}

bool
cs_kueue_admit(struct cs_cluster *cl, struct cs_req *rq, const char *kind, json_t *body)
{
	json_t *spec = json_object_get(body, "spec");
	char msg[2048] = "";
	int count = 0;
	bool slices = annotation(body, ELASTIC_ANN) != NULL &&
	    strcmp(annotation(body, ELASTIC_ANN), "true") == 0;
	const char *hook;

	/* manageJobsWithoutQueueName is false: only labelled objects are Kueue's */
	if (!cs_kueue_on(cl) || label(body, QUEUE_LABEL) == NULL)
		return true;
	if (strcmp(kind, "RayJob") == 0) {
		json_t *sel = json_object_get(spec, "clusterSelector"),
		    *rcs = json_object_get(spec, "rayClusterSpec");

		hook = "vrayjob.kb.io";
		if (json_object_size(sel) > 0 && rcs != NULL)
			add(msg, sizeof(msg), &count, "spec.clusterSelector: Invalid value: "
			    "map[...]: a kueue managed job should not use an existing cluster");
		else if (json_object_size(sel) == 0 && rcs == NULL)
			add(msg, sizeof(msg), &count, "spec.rayClusterSpec: Required value: "
			    "rayClusterSpec is required for Kueue-managed jobs that don't use "
			    "clusterSelector");
		else if (rcs != NULL) {
			if (!json_is_true(json_object_get(spec, "shutdownAfterJobFinishes")))
				add(msg, sizeof(msg), &count, "spec.shutdownAfterJobFinishes: "
				    "Invalid value: false: a kueue managed job should delete the "
				    "cluster after finishing");
			check_spec(rcs, "spec.rayClusterSpec", true, slices, msg, sizeof(msg),
			    &count);
		}
	} else if (strcmp(kind, "RayCluster") == 0) {
		hook = "vraycluster.kb.io";
		check_spec(spec, "spec", false, slices && elastic_gate(cl), msg, sizeof(msg),
		    &count);
	} else {
		return true;	/* RayService, RayCronJob: no Kueue webhook */
	}
	if (count == 0)
		return true;
	/* controller-runtime's Denied (403 Forbidden), prefixed by the API server */
	if (count > 1)
		cs_reply_error(rq, 403, "Forbidden", "admission webhook \"%s\" denied the request: "
		    "[%s]", hook, msg);
	else
		cs_reply_error(rq, 403, "Forbidden", "admission webhook \"%s\" denied the request: "
		    "%s", hook, msg);
	return false;
}

/* Why Kueue cannot admit o now; NULL when it can (or o is not Kueue's). */
static const char *
inadmissible(struct cs_cluster *cl, struct cs_object *o, char *buf, size_t n)
{
	const char *lq = label(o->live, QUEUE_LABEL), *cq;
	json_t *q;

	if (!cs_kueue_on(cl) || lq == NULL || (strcmp(o->kind, "RayJob") != 0 &&
	    strcmp(o->kind, "RayCluster") != 0))
		return NULL;
	if ((q = cs_plain_get(cl, "localqueues", o->ns, lq)) == NULL) {
		snprintf(buf, n, "LocalQueue %s doesn't exist", lq);
		return buf;
	}
	cq = cs_jpath(q, "spec.clusterQueue");
	if (cq == NULL || cs_plain_get(cl, "clusterqueues", NULL, cq) == NULL) {
		snprintf(buf, n, "ClusterQueue %s doesn't exist", cq ? cq : "");
		return buf;
	}
	return NULL;
}

void
cs_kueue_gate(struct cs *cs, struct cs_cluster *cl, struct cs_object *o)
{
	json_t *spec = json_object_get(o->live, "spec");
	char why[256];

	/* a suspend the writer asked for is the writer's: Kueue never lifts it */
	if (json_is_true(json_object_get(json_object_get(o->applied, "spec"), "suspend")))
		o->kueue_held = false;
	if (o->deleted || !json_is_object(spec) || inadmissible(cl, o, why, sizeof(why)) == NULL)
		return;
	if (!json_is_true(json_object_get(spec, "suspend"))) {
		json_object_set_new(spec, "suspend", json_true());
		o->kueue_held = true;
	}
	if (strcmp(o->kueue_why, why) != 0) {
		snprintf(o->kueue_why, sizeof(o->kueue_why), "%s", why);
		cs_event(cs, cl, o->ns, o->kind, o->name, o->uid, "Warning", "Inadmissible", why);
	}
}

void
cs_kueue_tick(struct cs *cs, struct cs_cluster *cl, struct cs_object *o)
{
	char why[256];

	if (!o->kueue_held || o->deleted || inadmissible(cl, o, why, sizeof(why)) != NULL)
		return;
	/* admitted: Kueue unsuspends the job */
	json_object_del(json_object_get(o->live, "spec"), "suspend");
	o->kueue_held = false;
	o->kueue_why[0] = '\0';
	o->generation++;
	o->rv = ++cl->rv;
	json_object_set_new(json_object_get(o->live, "metadata"), "resourceVersion",
	    json_sprintf("%lld", o->rv));
	json_object_set_new(json_object_get(o->live, "metadata"), "generation",
	    json_integer(o->generation));
	cs_event(cs, cl, o->ns, o->kind, o->name, o->uid, "Normal", "Admitted",
	    "Admitted by Kueue");
	cs_object_changed(cs, cl, o);
}
