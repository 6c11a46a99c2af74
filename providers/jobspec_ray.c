/* jobspec_ray: the autoscaler options and the per-group Ray start parameters of a job
 * spec. rayStartParams is an allow-list: keys KubeRay itself manages (address, port,
 * block, dashboard-host ...) and keys that could break the pod (temp-dir, node-ip-address)
 * are refused with a JSON pointer, every allowed key has a value check. */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/jsonx.h"
#include "providers/jobspec.h"

enum val {
	V_COUNT,	/* non-negative integer */
	V_BYTES,	/* positive integer of bytes */
	V_PORT,		/* 1..65535 */
	V_BOOL,		/* "true" | "false" */
	V_RESOURCES,	/* JSON object of custom resource name -> non-negative number */
	V_LOG_STYLE,	/* auto | record | pretty */
	V_LOG_COLOR,	/* auto | false | true */
	V_CPUS,		/* non-negative decimal number of cores: "0.5", "2" */
	V_NODE_LABELS,	/* Ray node labels: "k=v,k2=v2" (labels under ray.io/ are Ray's) */
};

struct param {
	const char	*key;
	enum val	 val;
	bool		 head_only;
	long long	 min;	/* V_BYTES: smallest accepted */
};

static const struct param params[] = {
	{ "num-cpus", V_COUNT, false, 0 },
	{ "num-gpus", V_COUNT, false, 0 },
	{ "memory", V_BYTES, false, 1 },
	{ "object-store-memory", V_BYTES, false, 78643200 },	/* Ray's floor: 75 MiB */
	{ "resources", V_RESOURCES, false, 0 },
	{ "metrics-export-port", V_PORT, false, 0 },
	{ "min-worker-port", V_PORT, false, 0 },
	{ "max-worker-port", V_PORT, false, 0 },
	{ "log-style", V_LOG_STYLE, false, 0 },
	{ "log-color", V_LOG_COLOR, false, 0 },
	{ "include-dashboard", V_BOOL, true, 0 },
	{ "disable-usage-stats", V_BOOL, false, 0 },
	/* Ray's resource isolation (cgroup v2): reserve cores and memory for Ray's system
	 * processes so that user tasks cannot starve the raylet */
	{ "enable-resource-isolation", V_BOOL, false, 0 },
	{ "system-reserved-cpu", V_CPUS, false, 0 },
	{ "system-reserved-memory", V_BYTES, false, 1 },
	{ "labels", V_NODE_LABELS, false, 0 },
	{ "dashboard-agent-listen-port", V_PORT, false, 0 },
	{ "dashboard-agent-grpc-port", V_PORT, false, 0 },
};

static const char *const upscaling_modes[] = { "Default", "Aggressive", "Conservative", NULL };

#define PTR_LEN 192

static bool
bad(struct err *e, const char *ptr, const char *msg)
{
	return err_field(e, 400, "jobspec.invalid_ray_start_param", ptr, "%s", msg);
}

static bool
parse_ll(const char *v, long long *out)
{
	char *end = NULL;

	if (*v == '\0' || !isdigit((unsigned char)*v))
		return false;
	errno = 0;
	*out = strtoll(v, &end, 10);
	return errno == 0 && *end == '\0';
}

static bool
resources_ok(const char *v)
{
	json_error_t je;
	json_t *o = json_loads(v, 0, &je), *n;
	const char *k;
	bool ok = json_is_object(o) && json_object_size(o) > 0;

	json_object_foreach(o, k, n) {
		if (!ok)
			break;
		ok = *k != '\0' && strlen(k) <= 63 && json_is_number(n) &&
		    json_number_value(n) >= 0;
	}
	json_decref(o);
	return ok;
}

static bool
cpus_ok(const char *v)
{
	char *end = NULL;
	double d;

	if (!isdigit((unsigned char)*v))
		return false;
	errno = 0;
	d = strtod(v, &end);
	return errno == 0 && *end == '\0' && d >= 0 && d <= 100000;
}

/* "k=v[,k=v]": keys and values of letters, digits, '-', '_', '.', keys may carry a
 * prefix/, never ray.io/ (Ray's own labels). */
static bool
node_labels_ok(const char *v)
{
	const char *p = v;

	if (*v == '\0' || strlen(v) > 1024)
		return false;
	while (*p != '\0') {
		size_t k = strcspn(p, "=,"), val;

		if (k == 0 || p[k] != '=' || strncmp(p, "ray.io/", 7) == 0)
			return false;
		for (size_t i = 0; i < k; i++)
			if (!isalnum((unsigned char)p[i]) && strchr("-_./", p[i]) == NULL)
				return false;
		p += k + 1;
		val = strcspn(p, ",");
		for (size_t i = 0; i < val; i++)
			if (!isalnum((unsigned char)p[i]) && strchr("-_.", p[i]) == NULL)
				return false;
		p += val;
		if (*p == ',' && *++p == '\0')
			return false;
	}
	return true;
}

static bool
value_ok(const struct param *p, const char *v, const char *ptr, struct err *e)
{
	long long n;

	switch (p->val) {
	case V_COUNT:
		if (!parse_ll(v, &n) || n > 100000)
			return bad(e, ptr, "value must be a non-negative integer");
		return true;
	case V_BYTES:
		if (!parse_ll(v, &n) || n < p->min)
			return err_field(e, 400, "jobspec.invalid_ray_start_param", ptr,
			    "value must be an integer number of bytes of at least %lld", p->min);
		return true;
	case V_PORT:
		if (!parse_ll(v, &n) || n < 1 || n > 65535)
			return bad(e, ptr, "value must be a port between 1 and 65535");
		return true;
	case V_BOOL:
		if (strcmp(v, "true") != 0 && strcmp(v, "false") != 0)
			return bad(e, ptr, "value must be true or false");
		return true;
	case V_RESOURCES:
		if (!resources_ok(v))
			return bad(e, ptr, "value must be a json object of resource names to "
			    "non-negative numbers, such as {\"accel\": 1}");
		return true;
	case V_LOG_STYLE:
		if (strcmp(v, "auto") != 0 && strcmp(v, "record") != 0 && strcmp(v, "pretty") != 0)
			return bad(e, ptr, "value must be auto, record or pretty");
		return true;
	case V_LOG_COLOR:
		if (strcmp(v, "auto") != 0 && strcmp(v, "true") != 0 && strcmp(v, "false") != 0)
			return bad(e, ptr, "value must be auto, true or false");
		return true;
	case V_CPUS:
		if (!cpus_ok(v))
			return bad(e, ptr, "value must be a non-negative number of cores such as 0.5");
		return true;
	case V_NODE_LABELS:
		if (!node_labels_ok(v))
			return bad(e, ptr, "value must be key=value pairs separated by commas, keys "
			    "not under ray.io/");
		return true;
	}
	return bad(e, ptr, "value not accepted");
}

/* The value as the CRD wants it: a string (numbers and booleans are spelled out). */
static bool
value_text(json_t *v, char *buf, size_t len)
{
	if (json_is_string(v))
		return snprintf(buf, len, "%s", json_string_value(v)) < (int)len;
	if (json_is_integer(v))
		return snprintf(buf, len, "%lld", (long long)json_integer_value(v)) < (int)len;
	if (json_is_boolean(v))
		return snprintf(buf, len, "%s", json_is_true(v) ? "true" : "false") < (int)len;
	return false;
}

bool
jobspec_parse_ray_params(json_t *o, const char *prefix, bool head, json_t **out,
			 struct err *e)
{
	json_t *v = json_object_get(o, "ray_start_params"), *res = NULL, *val;
	const char *k;
	char ptr[PTR_LEN], text[1024];
	bool ok = false;

	*out = NULL;
	if (v == NULL || json_is_null(v))
		return true;
	snprintf(ptr, sizeof(ptr), "%s/ray_start_params", prefix);
	if (!json_is_object(v))
		return err_field(e, 400, "api.wrong_type", ptr, "ray_start_params must be an object");
	if (json_object_size(v) > 16)
		return bad(e, ptr, "ray_start_params holds at most 16 keys");
	res = json_object();
	json_object_foreach(v, k, val) {
		const struct param *p = NULL;

		/* keys never hold '~' or '/' that need escaping: refused before use */
		snprintf(ptr, sizeof(ptr), "%s/ray_start_params/%.40s", prefix, k);
		for (size_t i = 0; i < sizeof(params) / sizeof(params[0]); i++)
			if (strcmp(params[i].key, k) == 0)
				p = &params[i];
		if (p == NULL || (p->head_only && !head)) {
			if (strpbrk(k, "~/") != NULL)
				snprintf(ptr, sizeof(ptr), "%s/ray_start_params", prefix);
			err_field(e, 400, "jobspec.invalid_ray_start_param", ptr,
			    p == NULL ? "ray start parameter not allowed (fleetd or KubeRay "
			    "manages it, or it is unknown)" : "ray start parameter allowed "
			    "on the head only");
			goto cleanup;
		}
		if (!value_text(val, text, sizeof(text))) {
			err_field(e, 400, "api.wrong_type", ptr,
			    "value must be a string, an integer or a boolean");
			goto cleanup;
		}
		if (!value_ok(p, text, ptr, e))
			goto cleanup;
		json_object_set_new(res, k, json_string(text));
	}
	if (json_object_get(res, "min-worker-port") != NULL &&
	    json_object_get(res, "max-worker-port") != NULL &&
	    atoll(json_string_value(json_object_get(res, "min-worker-port"))) >
	    atoll(json_string_value(json_object_get(res, "max-worker-port")))) {
		snprintf(ptr, sizeof(ptr), "%s/ray_start_params/min-worker-port", prefix);
		bad(e, ptr, "min-worker-port must not exceed max-worker-port");
		goto cleanup;
	}
	*out = res;
	res = NULL;
	ok = true;
cleanup:
	json_decref(res);
	return ok;
}

bool
jobspec_parse_autoscaler(json_t *root, struct job_spec *s, struct err *e)
{
	static const char *const keys[] = { "idle_timeout_seconds", "upscaling_mode", NULL };
	json_t *a = json_object_get(root, "autoscaler"), *v;
	const char *mode = NULL;
	long long idle = 60;

	s->idle_timeout_seconds = 60;
	s->upscaling_mode = "Default";
	if (a == NULL || json_is_null(a))
		return true;
	if (!json_is_object(a))
		return err_field(e, 400, "api.wrong_type", "/autoscaler",
		    "autoscaler must be an object");
	if (!jsonx_only(a, keys, "/autoscaler", e) ||
	    !jsonx_str(a, "upscaling_mode", "/autoscaler", false, &mode, e) ||
	    !jsonx_int(a, "idle_timeout_seconds", "/autoscaler", false, &idle, e))
		return false;
	v = json_object_get(a, "idle_timeout_seconds");
	if (v != NULL && !json_is_null(v) && (idle < 0 || idle > 86400))
		return err_field(e, 400, "jobspec.invalid_value",
		    "/autoscaler/idle_timeout_seconds",
		    "idle_timeout_seconds must be between 0 and 86400");
	if (mode != NULL) {
		size_t i;

		for (i = 0; upscaling_modes[i] != NULL; i++)
			if (strcmp(upscaling_modes[i], mode) == 0)
				break;
		if (upscaling_modes[i] == NULL)
			return err_field(e, 400, "jobspec.invalid_value",
			    "/autoscaler/upscaling_mode",
			    "upscaling_mode must be Default, Aggressive or Conservative");
		s->upscaling_mode = upscaling_modes[i];
	}
	s->idle_timeout_seconds = (int)idle;
	s->autoscaler_set = true;
	return true;
}

json_t *
jobspec_autoscaler_to_json(const struct job_spec *s)
{
	if (!s->autoscaler_set)
		return NULL;
	return json_pack("{s:i, s:s}", "idle_timeout_seconds", s->idle_timeout_seconds,
	    "upscaling_mode", s->upscaling_mode);
}
