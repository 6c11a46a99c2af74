/* kuberay_signal: the per-attempt objects fleetd applies before a Ray object (see
 * docs/design/contracts.md, "Checkpoint signal"): the signal ConfigMap every Ray container
 * mounts at /etc/fleet/signal, the ServiceAccount its pods run as, and the Role and
 * RoleBinding that let that account read and patch (the acknowledgement) that one ConfigMap.
 * Pure: struct in, json_t out. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "providers/kuberay.h"

int
kuberay_spot_grace_cap(enum kuberay_provider p)
{
	switch (p) {
	case KUBERAY_GKE:	return 30;	/* Compute Engine spot: 30 s preemption notice */
	case KUBERAY_AKS:	return 30;	/* Azure spot eviction: 30 s Scheduled Event */
	default:		return 120;	/* EC2 spot: two-minute interruption notice */
	}
}

int
kuberay_signal_grace(const struct job_spec *s, enum kuberay_provider p, const char *reason)
{
	int g = s->checkpoint_uri != NULL ? s->checkpoint_grace_seconds : 30;

	if (reason != NULL && strcmp(reason, "spot") == 0 && g > kuberay_spot_grace_cap(p))
		g = kuberay_spot_grace_cap(p);
	return g;
}

bool
kuberay_signal_name(const char *job_id, int attempt, char *buf, size_t len)
{
	char hex[9];
	int n = 0;

	for (const char *s = job_id; s != NULL && *s != '\0' && n < 8; s++)
		if (isxdigit((unsigned char)*s))
			hex[n++] = (char)tolower((unsigned char)*s);
	hex[n] = '\0';
	if (n < 8 || attempt < 1)
		return false;
	return snprintf(buf, len, "fleet-signal-%s-%d", hex, attempt) < (int)len;
}

/* Namespace and name of the attempt's objects; false (e filled) on bad input. */
bool
kuberay_signal_where(const struct kuberay_input *in, char *ns, size_t nn, char *name, size_t n,
    struct err *e)
{
	const char *queue = in->queue ? in->queue : in->spec ? in->spec->queue : NULL;

	if (!kuberay_signal_name(in->job_id, in->attempt, name, n))
		return err_set(e, 422, "kuberay.bad_input", "signal objects need a uuid job id and "
		    "attempt >= 1");
	if (in->ns != NULL) {
		if (!jobspec_dns_label(in->ns, 63))
			return err_set(e, 422, "kuberay.bad_input", "namespace is not a dns label");
		snprintf(ns, nn, "%s", in->ns);
		return true;
	}
	if (in->environment == NULL || queue == NULL ||
	    !kuberay_namespace(in->environment, queue, ns, nn))
		return err_set(e, 422, "kuberay.bad_input", "cannot derive a namespace");
	return true;
}

static json_t *
meta(const struct kuberay_input *in, const char *ns, const char *name)
{
	const char *queue = in->queue ? in->queue : in->spec->queue;

	return json_pack("{s:s, s:s, s:{s:s, s:s, s:s, s:s, s:s}}", "name", name,
	    "namespace", ns, "labels", "app.kubernetes.io/managed-by", "fleetd",
	    "fleet.io/job-id", in->job_id, "fleet.io/queue", queue,
	    "fleet.io/environment", in->environment, "fleet.io/signal", "checkpoint");
}

/* meta() with the attempt label as text (json_pack has no int-to-string). */
static json_t *
labelled(const struct kuberay_input *in, const char *ns, const char *name)
{
	json_t *m = meta(in, ns, name);
	char at[16];

	snprintf(at, sizeof(at), "%d", in->attempt);
	json_object_set_new(json_object_get(m, "labels"), "fleet.io/attempt", json_string(at));
	return m;
}

/* The signal ConfigMap with metadata md (stolen), whichever way the caller knows the job.
 * Only fleetd's keys: the job's ack keys (ack_uri, ack_at, ack_requested_at) belong to
 * another field manager and survive every server-side apply of these. */
static json_t *
configmap(json_t *md, const struct kuberay_signal *sig, int grace_seconds, const char *uri)
{
	char grace[16];

	snprintf(grace, sizeof(grace), "%d", grace_seconds);
	return json_pack("{s:s, s:s, s:o, s:{s:s, s:s, s:s, s:s, s:s}}", "apiVersion", "v1",
	    "kind", "ConfigMap", "metadata", md, "data",
	    "checkpoint_requested_at", sig && sig->requested_at ? sig->requested_at : "",
	    "checkpoint_deadline", sig && sig->deadline ? sig->deadline : "",
	    "grace_seconds", grace, "reason", sig && sig->reason ? sig->reason : "",
	    "checkpoint_uri", uri ? uri : "");
}

json_t *
kuberay_signal_configmap(const struct kuberay_input *in, const struct kuberay_signal *sig,
    struct err *e)
{
	char ns[64], name[64];

	if (in->spec == NULL || in->environment == NULL)
		return err_set(e, 422, "kuberay.bad_input", "signal objects need a spec"), NULL;
	if (!kuberay_signal_where(in, ns, sizeof(ns), name, sizeof(name), e))
		return NULL;
	return configmap(labelled(in, ns, name), sig, kuberay_signal_grace(in->spec,
	    in->placement.provider, sig && sig->reason ? sig->reason : ""),
	    in->spec->checkpoint_uri);
}

json_t *
kuberay_signal_objects(const struct kuberay_input *in, const struct kuberay_signal *sig,
    struct err *e)
{
	json_t *cm = kuberay_signal_configmap(in, sig, e), *out, *o = NULL;
	char ns[64], name[64];

	if (cm == NULL || !kuberay_signal_where(in, ns, sizeof(ns), name, sizeof(name), e)) {
		json_decref(cm);
		return NULL;
	}
	out = json_pack("[{s:s, s:s, s:o, s:b}, o]", "apiVersion", "v1", "kind",
	    "ServiceAccount", "metadata", labelled(in, ns, name),
	    "automountServiceAccountToken", 1, cm);
	json_array_append_new(out, json_pack("{s:s, s:s, s:o, s:[{s:[s], s:[s], s:[s], s:[s, s]}]}",
	    "apiVersion", "rbac.authorization.k8s.io/v1", "kind", "Role",
	    "metadata", labelled(in, ns, name), "rules", "apiGroups", "", "resources",
	    "configmaps", "resourceNames", name, "verbs", "get", "patch"));
	json_array_append_new(out, json_pack("{s:s, s:s, s:o, s:{s:s, s:s, s:s},"
	    " s:[{s:s, s:s, s:s}]}", "apiVersion", "rbac.authorization.k8s.io/v1",
	    "kind", "RoleBinding", "metadata", labelled(in, ns, name),
	    "roleRef", "apiGroup", "rbac.authorization.k8s.io", "kind", "Role", "name", name,
	    "subjects", "kind", "ServiceAccount", "name", name, "namespace", ns));
	/* pods that run as their own account (pod.service_account) acknowledge too */
	kuberay_pod_accounts(in->spec, ns, json_object_get(json_array_get(out,
	    json_array_size(out) - 1), "subjects"));
	/* issue 25 (kuberay_auth.c): the Secret the manifest's authOptions names, and the
	 * NetworkPolicy closing the job's pods to other tenants */
	if (in->auth_token != NULL && (o = kuberay_auth_secret(in, e)) == NULL) {
		json_decref(out);
		return NULL;
	}
	if (o != NULL)
		json_array_append_new(out, o);
	if ((o = kuberay_network_policy(in, e)) == NULL) {
		json_decref(out);
		return NULL;
	}
	json_array_append_new(out, o);
	/* issue 27: flex-start's PodTemplates and ProvisioningRequest, applied and deleted with
	 * the rest */
	if ((o = kuberay_provisioning_objects(in, e)) == NULL) {
		json_decref(out);
		return NULL;
	}
	json_array_extend(out, o);
	json_decref(o);
	/* issue 26: the Slices of the partitions a TPU7x slice job was carved out of */
	if ((o = kuberay_tpu_slice_objects(in, e)) == NULL) {
		json_decref(out);
		return NULL;
	}
	json_array_extend(out, o);
	json_decref(o);
	return out;
}

bool
kuberay_tpu_slice_name(const char *job_id, int attempt, int i, char *buf, size_t len)
{
	char hex[17];
	int n = 0;

	for (const char *s = job_id; s != NULL && *s != '\0' && n < 16; s++)
		if (isxdigit((unsigned char)*s))
			hex[n++] = (char)tolower((unsigned char)*s);
	hex[n] = '\0';
	if (n < 16 || attempt < 1 || i < 0)
		return false;
	return snprintf(buf, len, "fleet-slice-%s-%d-%d", hex, attempt, i) < (int)len;
}

/* GKE dynamic slicing with a custom scheduler
 * (https://docs.cloud.google.com/kubernetes-engine/docs/how-to/create-dynamic-slices): a
 * Slice {type: tpu7x, topology: <shape>, partitionIds: [<the partition's id>]} activates the
 * interconnect of one partition (a sub-slice smaller than 4x4x4 is one partition of its
 * shape, the cloud.google.com/gke-tpu-partition-<shape>-id label of its nodes); the slice
 * controller then labels those nodes cloud.google.com/gke-tpu-slice: <name> and
 * gke-tpu-topology: <shape>, which the pods select.  Cluster-scoped: no namespace;
 * slice.gke.io/retry-on-failure asks the controller to retry a failed formation. */
json_t *
kuberay_tpu_slice_objects(const struct kuberay_input *in, struct err *e)
{
	const struct kuberay_placement *p = &in->placement;
	json_t *out = json_array();
	char ns[64], sig[64], at[16];

	if (p->ntpu_partitions == 0 || p->provider != KUBERAY_GKE)
		return out;
	if (!kuberay_signal_where(in, ns, sizeof(ns), sig, sizeof(sig), e)) {
		json_decref(out);
		return NULL;
	}
	snprintf(at, sizeof(at), "%d", in->attempt);
	for (size_t i = 0; i < p->ntpu_partitions; i++) {
		const char *shape = p->tpu_topology ? p->tpu_topology : in->spec->slice_shape;
		char name[64];

		if (!kuberay_tpu_slice_name(in->job_id, in->attempt, (int)i, name, sizeof(name))) {
			json_decref(out);
			err_set(e, 422, "kuberay.bad_input", "slices need a uuid job id and attempt "
			    ">= 1");
			return NULL;
		}
		json_array_append_new(out, json_pack("{s:s, s:s, s:{s:s, s:{s:s},"
		    " s:{s:s, s:s, s:s, s:s, s:s}}, s:{s:s, s:s, s:[s]}}",
		    "apiVersion", "accelerator.gke.io/v1beta1", "kind", "Slice", "metadata",
		    "name", name, "annotations", "slice.gke.io/retry-on-failure", "true",
		    "labels", "app.kubernetes.io/managed-by", "fleetd", "fleet.io/job-id",
		    in->job_id, "fleet.io/attempt", at, "fleet.io/environment", in->environment,
		    "fleet.io/namespace", ns,
		    "spec", "type", "tpu7x", "topology", shape, "partitionIds",
		    p->tpu_partitions[i]));
	}
	return out;
}

/* The worker groups of a rendered Ray object, wherever its kind keeps them. */
static json_t *
worker_groups(json_t *m)
{
	json_t *sp = json_object_get(m, "spec"), *g;

	if ((g = json_object_get(sp, "workerGroupSpecs")) != NULL)
		return g;
	if ((g = json_object_get(json_object_get(sp, "rayClusterSpec"), "workerGroupSpecs")))
		return g;
	return json_object_get(json_object_get(sp, "rayClusterConfig"), "workerGroupSpecs");
}

/* A ProvisioningRequest's podSets reference PodTemplates in its namespace; GKE's queued
 * provisioning class takes spec.parameters as strings:
 * https://cloud.google.com/kubernetes-engine/docs/how-to/provisioningrequest
 * https://github.com/kubernetes/autoscaler/blob/master/cluster-autoscaler/provisioningrequest/apis/autoscaling.x-k8s.io/v1/types.go */
json_t *
kuberay_provisioning_objects(const struct kuberay_input *in, struct err *e)
{
	json_t *out = json_array(), *m, *sets, *g;
	char ns[64], name[64];
	size_t i;

	if (!in->placement.flex_start || in->placement.provider != KUBERAY_GKE)
		return out;
	if (!kuberay_signal_where(in, ns, sizeof(ns), name, sizeof(name), e) ||
	    (m = kuberay_render(in, e)) == NULL) {
		json_decref(out);
		return NULL;
	}
	sets = json_array();
	json_array_foreach(worker_groups(m), i, g) {
		const char *gn = json_string_value(json_object_get(g, "groupName"));
		json_int_t n = json_integer_value(json_object_get(g, "replicas")), hosts =
		    json_integer_value(json_object_get(g, "numOfHosts"));
		char tn[128];
		json_t *md;

		if (gn == NULL || n <= 0)
			continue;
		/* named by position: dispatch_signal_delete finds them without the spec */
		snprintf(tn, sizeof(tn), "%s-w%zu", name, json_array_size(sets));
		md = labelled(in, ns, tn);
		json_array_append_new(out, json_pack("{s:s, s:s, s:o, s:O}", "apiVersion", "v1",
		    "kind", "PodTemplate", "metadata", md, "template", json_object_get(g,
		    "template")));
		json_array_append_new(sets, json_pack("{s:I, s:{s:s}}", "count",
		    n * (hosts > 1 ? hosts : 1), "podTemplateRef", "name", tn));
	}
	json_decref(m);
	if (json_array_size(sets) == 0) {
		json_decref(sets);
		return out;
	}
	json_array_append_new(out, json_pack("{s:s, s:s, s:o, s:{s:s, s:o}}", "apiVersion",
	    "autoscaling.x-k8s.io/v1", "kind", "ProvisioningRequest", "metadata",
	    labelled(in, ns, name), "spec", "provisioningClassName", KUBERAY_PROVREQ_CLASS,
	    "podSets", sets));
	return out;
}

/* The labels of the Ray object that its signal objects carry too. */
static const char *const kept_labels[] = { "app.kubernetes.io/managed-by", "fleet.io/job-id",
    "fleet.io/attempt", "fleet.io/queue", "fleet.io/environment" };

json_t *
kuberay_signal_for_manifest(const json_t *manifest, const struct kuberay_signal *sig,
    int grace_seconds)
{
	json_t *md = json_object_get(manifest, "metadata");
	json_t *l = json_object_get(md, "labels"), *a = json_object_get(md, "annotations");
	const char *id = json_string_value(json_object_get(l, "fleet.io/job-id"));
	const char *at = json_string_value(json_object_get(l, "fleet.io/attempt"));
	const char *ns = json_string_value(json_object_get(md, "namespace"));
	const char *uri = json_string_value(json_object_get(a, "fleet.io/checkpoint-uri"));
	char name[64];
	json_t *labels;

	if (id == NULL || at == NULL || ns == NULL ||
	    !kuberay_signal_name(id, atoi(at), name, sizeof(name)))
		return NULL;
	labels = json_object();
	for (size_t i = 0; i < sizeof(kept_labels) / sizeof(kept_labels[0]); i++)
		if (json_is_string(json_object_get(l, kept_labels[i])))
			json_object_set(labels, kept_labels[i], json_object_get(l, kept_labels[i]));
	json_object_set_new(labels, "fleet.io/signal", json_string("checkpoint"));
	return configmap(json_pack("{s:s, s:s, s:o}", "name", name, "namespace", ns, "labels",
	    labels), sig, grace_seconds, uri);
}
