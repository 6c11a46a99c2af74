/* kuberay_kueue: the Kueue objects a Ray object's labels name — its LocalQueue and its
 * WorkloadPriorityClass — rendered from the manifest (pure; dispatch applies them before
 * the Ray object).  Which labels a manifest carries is kuberay.c's scheduler_labels. */
#include <string.h>

#include "providers/jobspec.h"
#include "providers/kuberay.h"

json_t *
kuberay_kueue_objects(const json_t *manifest, const char *cluster_queue, int priority_value,
    struct err *e)
{
	json_t *md = json_object_get(manifest, "metadata"), *lb = json_object_get(md, "labels"),
	    *out = json_array(), *labels;
	const char *lq = json_string_value(json_object_get(lb, "kueue.x-k8s.io/queue-name")),
	    *pc = json_string_value(json_object_get(lb, "kueue.x-k8s.io/priority-class")),
	    *ns = json_string_value(json_object_get(md, "namespace")),
	    *q = json_string_value(json_object_get(lb, "fleet.io/queue")),
	    *env = json_string_value(json_object_get(lb, "fleet.io/environment"));

	if (lq == NULL)
		return out;	/* Kueue does not gate this object: nothing to ensure */
	if (ns == NULL || q == NULL || env == NULL || cluster_queue == NULL ||
	    !jobspec_dns_label(lq, 63) || !jobspec_dns_label(cluster_queue, 63) ||
	    (pc != NULL && !jobspec_dns_label(pc, 63))) {
		json_decref(out);
		err_set(e, 422, "kuberay.bad_input", "the manifest names no valid Kueue queue");
		return NULL;
	}
	/* shared by every job of the queue: no job or attempt label (the orphan sweep must
	 * never take it for a finished job's object) */
	labels = json_pack("{s:s, s:s, s:s}", "app.kubernetes.io/managed-by", "fleetd",
	    "fleet.io/queue", q, "fleet.io/environment", env);
	json_array_append_new(out, json_pack("{s:s, s:s, s:{s:s, s:s, s:o}, s:{s:s}}",
	    "apiVersion", "kueue.x-k8s.io/v1beta1", "kind", "LocalQueue", "metadata", "name", lq,
	    "namespace", ns, "labels", labels, "spec", "clusterQueue", cluster_queue));
	if (pc != NULL)
		json_array_append_new(out, json_pack("{s:s, s:s, s:{s:s, s:{s:s}}, s:i, s:s}",
		    "apiVersion", "kueue.x-k8s.io/v1beta1", "kind", "WorkloadPriorityClass",
		    "metadata", "name", pc, "labels", "app.kubernetes.io/managed-by", "fleetd",
		    "value", priority_value, "description", "fleetd priority class"));
	return out;
}
