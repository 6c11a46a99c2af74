/* jobspec_pod_policy: the pod policy of an environment — which members of a job's pod
 * sections (jobspec_pod.c) its jobs may use — parsed and completed with the defaults, and
 * checked against a job spec with the pointer of the first member it refuses. */
#include <stdio.h>
#include <string.h>

#include "core/jsonx.h"
#include "providers/jobspec.h"

#define PTR	256

static const char *const policy_flags[] = { "env", "env_from", "annotations", "labels",
	"tolerations", "service_account", "containers", NULL };
#define kinds		jobspec_volume_kinds
#define csi_drivers	jobspec_csi_drivers
#define in_list		jobspec_in_list

json_t *
jobspec_pod_policy_default(void)
{
	json_t *p = json_object(), *k = json_array(), *d = json_array();

	for (size_t i = 0; policy_flags[i] != NULL; i++)
		json_object_set_new(p, policy_flags[i], json_true());
	for (size_t i = 0; kinds[i] != NULL; i++)
		json_array_append_new(k, json_string(kinds[i]));
	for (size_t i = 0; csi_drivers[i] != NULL; i++)
		json_array_append_new(d, json_string(csi_drivers[i]));
	json_object_set_new(p, "volume_kinds", k);
	json_object_set_new(p, "csi_drivers", d);
	return p;
}

static bool
policy_list(json_t *in, const char *key, const char *const *known, const char *prefix,
	    json_t *out, struct err *e)
{
	json_t *a = json_object_get(in, key), *res, *v;
	char ptr[PTR];
	size_t i;

	if (a == NULL || json_is_null(a))
		return true;
	snprintf(ptr, sizeof(ptr), "%.200s/%s", prefix, key);
	if (!json_is_array(a))
		return err_field(e, 400, "api.wrong_type", ptr, "%s must be an array of strings", key);
	res = json_array();
	json_array_foreach(a, i, v) {
		const char *s = json_string_value(v);

		snprintf(ptr, sizeof(ptr), "%s/%s/%zu", prefix, key, i);
		if (s != NULL && (strcmp(s, "host_path") == 0 || strcmp(s, "hostPath") == 0)) {
			json_decref(res);
			return err_field(e, 422, "env.pod_policy_invalid", ptr,
			    "host_path volumes are never allowed");
		}
		if (!in_list(known, s)) {
			json_decref(res);
			return err_field(e, 422, "env.pod_policy_invalid", ptr, "%s",
			    known == kinds ? "volume kind must be persistent_volume_claim, csi, "
			    "secret, config_map or empty_dir" : "csi driver must be "
			    "gcsfuse.csi.storage.gke.io, fsx.csi.aws.com, file.csi.azure.com or "
			    "blob.csi.azure.com");
		}
		{
			bool dup = false;

			for (size_t k = 0; k < json_array_size(res); k++)
				dup |= strcmp(json_string_value(json_array_get(res, k)), s) == 0;
			if (!dup)
				json_array_append_new(res, json_string(s));
		}
	}
	json_object_set_new(out, key, res);
	return true;
}

bool
jobspec_pod_policy_parse(json_t *in, const char *prefix, json_t **out, struct err *e)
{
	static const char *const keys[] = { "env", "env_from", "annotations", "labels",
		"tolerations", "service_account", "containers", "volume_kinds", "csi_drivers",
		NULL };
	json_t *p;

	*out = NULL;
	if (!json_is_object(in))
		return err_field(e, 400, "api.wrong_type", prefix, "pod_policy must be an object");
	if (!jsonx_only(in, keys, prefix, e))
		return false;
	p = jobspec_pod_policy_default();
	for (size_t i = 0; policy_flags[i] != NULL; i++) {
		bool b = true;

		if (!jsonx_bool(in, policy_flags[i], prefix, false, &b, e)) {
			json_decref(p);
			return false;
		}
		json_object_set_new(p, policy_flags[i], json_boolean(b));
	}
	if (!policy_list(in, "volume_kinds", kinds, prefix, p, e) ||
	    !policy_list(in, "csi_drivers", csi_drivers, prefix, p, e)) {
		json_decref(p);
		return false;
	}
	*out = p;
	return true;
}

static bool
flag(json_t *policy, const char *k)
{
	json_t *v = json_object_get(policy, k);

	return v == NULL || json_is_true(v);	/* absent: the default allows it */
}

static bool
listed(json_t *policy, const char *key, const char *s)
{
	json_t *a = json_object_get(policy, key), *v;
	size_t i;

	if (a == NULL)
		return true;
	json_array_foreach(a, i, v)
		if (json_is_string(v) && strcmp(json_string_value(v), s) == 0)
			return true;
	return false;
}

static bool
refuse(struct err *e, const char *ptr, const char *what)
{
	return err_field(e, 422, "jobspec.pod_not_allowed", ptr,
	    "the environment's pod policy does not allow %s", what);
}

/* One pod (canonical) at prefix against policy. */
static bool
pod_allowed(json_t *pod, const char *prefix, json_t *policy, struct err *e)
{
	char ptr[PTR];
	json_t *v, *c;
	size_t i;

	if (pod == NULL)
		return true;
	for (size_t k = 0; policy_flags[k] != NULL; k++) {
		if (json_object_get(pod, policy_flags[k]) == NULL || flag(policy, policy_flags[k]))
			continue;
		snprintf(ptr, sizeof(ptr), "%s/pod/%s", prefix, policy_flags[k]);
		return refuse(e, ptr, policy_flags[k]);
	}
	json_array_foreach(json_object_get(pod, "volumes"), i, v) {
		const char *kind = NULL, *k;
		json_t *src;

		json_object_foreach(v, k, src)
			if (strcmp(k, "name") != 0)
				kind = k;
		snprintf(ptr, sizeof(ptr), "%s/pod/volumes/%zu", prefix, i);
		if (kind == NULL || !listed(policy, "volume_kinds", kind))
			return refuse(e, ptr, kind ? kind : "this volume");
		if (strcmp(kind, "csi") == 0 && !listed(policy, "csi_drivers",
		    jsonx_at(src, "driver", NULL))) {
			snprintf(ptr, sizeof(ptr), "%s/pod/volumes/%zu/csi/driver", prefix, i);
			return refuse(e, ptr, "this csi driver");
		}
	}
	json_array_foreach(json_object_get(pod, "containers"), i, c) {
		if (json_object_get(c, "env") != NULL && !flag(policy, "env")) {
			snprintf(ptr, sizeof(ptr), "%s/pod/containers/%zu/env", prefix, i);
			return refuse(e, ptr, "env");
		}
	}
	return true;
}

bool
jobspec_pod_allowed(const struct job_spec *s, json_t *policy, struct err *e)
{
	char prefix[64];

	if (!pod_allowed(s->head_pod, "/head", policy, e))
		return false;
	for (size_t i = 0; i < s->ngroups; i++) {
		snprintf(prefix, sizeof(prefix), "/worker_groups/%zu", i);
		if (!pod_allowed(s->groups[i].pod, prefix, policy, e))
			return false;
	}
	return true;
}
