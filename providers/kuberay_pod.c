/* kuberay_pod: renders a validated "pod" section (providers/jobspec_pod.c) into a KubeRay
 * pod template: the Ray container's env, envFrom and mounts, the pod's volumes, labels,
 * annotations, tolerations, service account and sidecars.  fleetd's own members stay
 * first and win: the section only adds.  Pure: json in, json out. */
#include <string.h>

#include "providers/kuberay.h"

static json_t *
env_entry(json_t *v)
{
	json_t *ref = json_object_get(v, "secret_key_ref");

	if (ref == NULL)
		return json_pack("{s:O, s:O}", "name", json_object_get(v, "name"),
		    "value", json_object_get(v, "value"));
	return json_pack("{s:O, s:{s:{s:O, s:O}}}", "name", json_object_get(v, "name"),
	    "valueFrom", "secretKeyRef", "name", json_object_get(ref, "name"),
	    "key", json_object_get(ref, "key"));
}

static void
append_env(json_t *ctr, json_t *env)
{
	json_t *dst = json_object_get(ctr, "env"), *v;
	size_t i;

	if (json_array_size(env) == 0)
		return;
	if (dst == NULL) {
		dst = json_array();
		json_object_set_new(ctr, "env", dst);
	}
	json_array_foreach(env, i, v)
		json_array_append_new(dst, env_entry(v));
}

static void
append_mounts(json_t *ctr, json_t *mounts)
{
	json_t *dst = json_object_get(ctr, "volumeMounts"), *v, *m;
	size_t i;

	if (json_array_size(mounts) == 0)
		return;
	if (dst == NULL) {
		dst = json_array();
		json_object_set_new(ctr, "volumeMounts", dst);
	}
	json_array_foreach(mounts, i, v) {
		m = json_pack("{s:O, s:O}", "name", json_object_get(v, "name"),
		    "mountPath", json_object_get(v, "mount_path"));
		if (json_is_true(json_object_get(v, "read_only")))
			json_object_set_new(m, "readOnly", json_true());
		if (json_object_get(v, "sub_path") != NULL)
			json_object_set(m, "subPath", json_object_get(v, "sub_path"));
		json_array_append_new(dst, m);
	}
}

static json_t *
volume(json_t *v)
{
	json_t *o = json_pack("{s:O}", "name", json_object_get(v, "name")), *src;

	if ((src = json_object_get(v, "persistent_volume_claim")) != NULL) {
		json_object_set_new(o, "persistentVolumeClaim", json_pack("{s:O, s:O}",
		    "claimName", json_object_get(src, "claim_name"),
		    "readOnly", json_object_get(src, "read_only")));
	} else if ((src = json_object_get(v, "csi")) != NULL) {
		json_t *c = json_pack("{s:O, s:O}", "driver", json_object_get(src, "driver"),
		    "readOnly", json_object_get(src, "read_only"));

		if (json_object_get(src, "volume_attributes") != NULL)
			json_object_set_new(c, "volumeAttributes",
			    json_deep_copy(json_object_get(src, "volume_attributes")));
		json_object_set_new(o, "csi", c);
	} else if ((src = json_object_get(v, "secret")) != NULL) {
		json_object_set_new(o, "secret", json_pack("{s:O}", "secretName",
		    json_object_get(src, "secret_name")));
	} else if ((src = json_object_get(v, "config_map")) != NULL) {
		json_object_set_new(o, "configMap", json_pack("{s:O}", "name",
		    json_object_get(src, "name")));
	} else {
		json_t *d = json_object();

		src = json_object_get(v, "empty_dir");
		if (json_object_get(src, "medium") != NULL)
			json_object_set(d, "medium", json_object_get(src, "medium"));
		if (json_object_get(src, "size_limit") != NULL)
			json_object_set(d, "sizeLimit", json_object_get(src, "size_limit"));
		json_object_set_new(o, "emptyDir", d);
	}
	return o;
}

static json_t *
toleration(json_t *v)
{
	json_t *o = json_pack("{s:O}", "operator", json_object_get(v, "operator"));

	if (json_object_get(v, "key") != NULL)
		json_object_set(o, "key", json_object_get(v, "key"));
	if (json_object_get(v, "value") != NULL)
		json_object_set(o, "value", json_object_get(v, "value"));
	if (json_object_get(v, "effect") != NULL)
		json_object_set(o, "effect", json_object_get(v, "effect"));
	if (json_object_get(v, "toleration_seconds") != NULL)
		json_object_set(o, "tolerationSeconds", json_object_get(v, "toleration_seconds"));
	return o;
}

static json_t *
sidecar(json_t *v)
{
	json_t *c = json_pack("{s:O, s:O, s:s, s:{s:b, s:b}}", "name", json_object_get(v, "name"),
	    "image", json_object_get(v, "image"), "imagePullPolicy", "IfNotPresent",
	    "securityContext", "privileged", 0, "allowPrivilegeEscalation", 0);
	json_t *r = json_object_get(v, "resources");

	if (json_object_get(v, "command") != NULL)
		json_object_set_new(c, "command", json_deep_copy(json_object_get(v, "command")));
	if (json_object_get(v, "args") != NULL)
		json_object_set_new(c, "args", json_deep_copy(json_object_get(v, "args")));
	append_env(c, json_object_get(v, "env"));
	if (r != NULL)	/* requests == limits, as for the Ray container */
		json_object_set_new(c, "resources", json_pack("{s:o, s:o}", "requests",
		    json_deep_copy(r), "limits", json_deep_copy(r)));
	append_mounts(c, json_object_get(v, "volume_mounts"));
	return c;
}

/* Adds the members of src absent from dst (fleetd's own keys win). */
static void
add_missing(json_t *dst, json_t *src)
{
	const char *k;
	json_t *v;

	json_object_foreach(src, k, v)
		if (json_object_get(dst, k) == NULL)
			json_object_set(dst, k, v);
}

static bool
uses_gcsfuse(json_t *pod)
{
	json_t *v;
	size_t i;

	json_array_foreach(json_object_get(pod, "volumes"), i, v) {
		const char *d = json_string_value(json_object_get(json_object_get(v, "csi"),
		    "driver"));

		if (d != NULL && strcmp(d, "gcsfuse.csi.storage.gke.io") == 0)
			return true;
	}
	return false;
}

void
kuberay_pod_apply(json_t *pod, json_t *meta, json_t *spec)
{
	json_t *ctr = json_array_get(json_object_get(spec, "containers"), 0), *v, *dst;
	size_t i;

	if (pod == NULL)
		return;
	append_env(ctr, json_object_get(pod, "env"));
	if (json_array_size(json_object_get(pod, "env_from")) > 0) {
		dst = json_array();
		json_array_foreach(json_object_get(pod, "env_from"), i, v) {
			const char *sec = json_string_value(json_object_get(v, "secret"));

			json_array_append_new(dst, sec != NULL ?
			    json_pack("{s:{s:s}}", "secretRef", "name", sec) :
			    json_pack("{s:{s:O}}", "configMapRef", "name",
			    json_object_get(v, "config_map")));
		}
		json_object_set_new(ctr, "envFrom", dst);
	}
	append_mounts(ctr, json_object_get(pod, "volume_mounts"));
	dst = json_object_get(spec, "volumes");
	json_array_foreach(json_object_get(pod, "volumes"), i, v)
		json_array_append_new(dst, volume(v));
	if (json_object_get(pod, "labels") != NULL)
		add_missing(json_object_get(meta, "labels"), json_object_get(pod, "labels"));
	if (json_object_get(pod, "annotations") != NULL || uses_gcsfuse(pod)) {
		dst = json_object_get(meta, "annotations");
		if (dst == NULL) {
			dst = json_object();
			json_object_set_new(meta, "annotations", dst);
		}
		add_missing(dst, json_object_get(pod, "annotations"));
		/* GKE injects the Cloud Storage FUSE sidecar only into annotated pods */
		if (uses_gcsfuse(pod) && json_object_get(dst, "gke-gcsfuse/volumes") == NULL)
			json_object_set_new(dst, "gke-gcsfuse/volumes", json_string("true"));
	}
	if (json_array_size(json_object_get(pod, "tolerations")) > 0) {
		dst = json_object_get(spec, "tolerations");
		if (dst == NULL) {
			dst = json_array();
			json_object_set_new(spec, "tolerations", dst);
		}
		json_array_foreach(json_object_get(pod, "tolerations"), i, v)
			json_array_append_new(dst, toleration(v));
	}
	if (json_object_get(pod, "service_account") != NULL)
		json_object_set(spec, "serviceAccountName", json_object_get(pod, "service_account"));
	dst = json_object_get(spec, "containers");
	json_array_foreach(json_object_get(pod, "containers"), i, v)
		json_array_append_new(dst, sidecar(v));
}

/* The service accounts the job's pods run as besides the signal account (each may patch
 * the ack): appended to subjects as {kind, name, namespace}, each once. */
void
kuberay_pod_accounts(const struct job_spec *s, const char *ns, json_t *subjects)
{
	for (size_t i = 0; i <= s->ngroups; i++) {
		json_t *pod = i == 0 ? s->head_pod : s->groups[i - 1].pod;
		const char *sa = json_string_value(json_object_get(pod, "service_account"));
		json_t *x;
		size_t k;
		bool seen = false;

		if (sa == NULL)
			continue;
		json_array_foreach(subjects, k, x)
			seen |= strcmp(json_string_value(json_object_get(x, "name")), sa) == 0;
		if (!seen)
			json_array_append_new(subjects, json_pack("{s:s, s:s, s:s}", "kind",
			    "ServiceAccount", "name", sa, "namespace", ns));
	}
}
