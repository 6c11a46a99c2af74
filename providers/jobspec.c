/* jobspec: strict parser, canonical emitter and resource totals for the fleetd job spec
 * (the quantity, cron and name checks are in jobspec_units.c). */
#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "core/jsonx.h"
#include "providers/jobspec.h"

#define MAX_REPLICAS	10000
#define MAX_ACCEL	64

static const char *const kind_names[] = { "RayJob", "RayCluster", "RayService", "RayCronJob" };
static const char *const topo_names[] = { "none", "host", "rack", "slice", "pack" };
#define NTOPOS	(sizeof(topo_names) / sizeof(topo_names[0]))
static const char *const delete_names[] = { "", "DeleteCluster", "DeleteWorkers", "DeleteSelf" };

#define NKINDS	(sizeof(kind_names) / sizeof(kind_names[0]))

const char *
jobspec_kind_name(enum jobspec_kind k)
{
	return (unsigned)k < NKINDS ? kind_names[k] : "?";
}

bool
jobspec_kind_parse(const char *name, enum jobspec_kind *out)
{
	for (size_t i = 0; name != NULL && i < NKINDS; i++)
		if (strcmp(name, kind_names[i]) == 0) {
			*out = (enum jobspec_kind)i;
			return true;
		}
	return false;
}

const char *
jobspec_topology_name(enum jobspec_topology t)
{
	return (unsigned)t < NTOPOS ? topo_names[t] : "?";
}

const char *
jobspec_delete_name(enum jobspec_delete d)
{
	return (unsigned)d < 4 ? delete_names[d] : "";
}

/* ------------------------------------------------------------------ parsing helpers */

static bool
dup_str(char **dst, const char *src)
{
	if (src == NULL)
		return true;
	*dst = strdup(src);
	if (*dst == NULL)
		abort();
	return true;
}

static bool
invalid(struct err *e, const char *ptr, const char *msg)
{
	return err_field(e, 400, "jobspec.invalid_value", ptr, "%s", msg);
}

/* Optional string member that must pass a DNS-1123 label check of at most max. */
static bool
label_member(json_t *o, const char *key, const char *prefix, bool required, size_t max,
	     char **out, struct err *e)
{
	const char *v = NULL;
	char ptr[128];

	if (!jsonx_str(o, key, prefix, required, &v, e))
		return false;
	if (v == NULL)
		return true;
	snprintf(ptr, sizeof(ptr), "%s/%s", prefix, key);
	if (!jobspec_dns_label(v, max))
		return err_field(e, 400, "jobspec.invalid_name", ptr,
		    "%s must be a lowercase dns label of at most %zu characters", key, max);
	return dup_str(out, v);
}

static bool
int_member(json_t *o, const char *key, const char *prefix, long long lo, long long hi,
	   bool *present, int *out, struct err *e)
{
	long long v = lo - 1;
	char ptr[128];

	if (!jsonx_int(o, key, prefix, false, &v, e))
		return false;
	if (present != NULL)
		*present = json_object_get(o, key) != NULL && !json_is_null(json_object_get(o, key));
	if (json_object_get(o, key) == NULL || json_is_null(json_object_get(o, key)))
		return true;
	snprintf(ptr, sizeof(ptr), "%s/%s", prefix, key);
	if (v < lo || v > hi)
		return err_field(e, 400, "jobspec.invalid_value", ptr,
		    "%s must be between %lld and %lld", key, lo, hi);
	*out = (int)v;
	return true;
}

static bool
cpu_member(json_t *o, const char *prefix, int64_t *out, struct err *e)
{
	char ptr[128];
	json_t *v;

	if (!jsonx_member(o, "cpu", prefix, true, &v, ptr, sizeof(ptr), e))
		return false;
	if (!jobspec_parse_cpu(v, out))
		return err_field(e, 400, "jobspec.invalid_quantity", ptr,
		    "cpu must be a positive quantity such as \"4\", \"500m\" or 2.5");
	return true;
}

static bool
memory_member(json_t *o, const char *key, const char *prefix, bool required, int64_t *out,
	      struct err *e)
{
	char ptr[128];
	json_t *v;

	if (!jsonx_member(o, key, prefix, required, &v, ptr, sizeof(ptr), e))
		return false;
	if (v == NULL)
		return true;
	if (!jobspec_parse_memory(v, out))
		return err_field(e, 400, "jobspec.invalid_quantity", ptr,
		    "%s must be a positive quantity of bytes such as \"16Gi\" or \"1G\"", key);
	return true;
}

/* ------------------------------------------------------------------ sections */

static bool
parse_head(json_t *root, struct job_spec *s, struct err *e)
{
	static const char *const keys[] = { "cpu", "memory", "ray_start_params", "pod", NULL };
	json_t *h;

	if (!jsonx_obj(root, "head", "", true, &h, e) || !jsonx_only(h, keys, "/head", e))
		return false;
	return cpu_member(h, "/head", &s->head_cpu_milli, e) &&
	    memory_member(h, "memory", "/head", true, &s->head_memory_bytes, e) &&
	    jobspec_parse_ray_params(h, "/head", true, &s->head_ray_start_params, e) &&
	    jobspec_parse_pod(h, "/head", &s->head_pod, e);
}

static bool
parse_accel(json_t *g, const char *prefix, struct jobspec_group *out, struct err *e)
{
	static const char *const keys[] = { "flavor", "count", NULL };
	char ptr[128];
	json_t *a;
	bool has_count = false;

	if (!jsonx_obj(g, "accelerator", prefix, false, &a, e))
		return false;
	if (a == NULL)
		return true;
	snprintf(ptr, sizeof(ptr), "%s/accelerator", prefix);
	out->accel_count = 1;
	if (!jsonx_only(a, keys, ptr, e) ||
	    !label_member(a, "flavor", ptr, true, 63, &out->accel_flavor, e) ||
	    !int_member(a, "count", ptr, 1, MAX_ACCEL, &has_count, &out->accel_count, e))
		return false;
	if (!isalpha((unsigned char)out->accel_flavor[0]))
		return err_field(e, 400, "jobspec.invalid_name", strcat(ptr, "/flavor"),
		    "flavor must start with a letter");
	return true;
}

static bool
parse_replicas(json_t *g, const char *prefix, struct jobspec_group *out, struct err *e)
{
	bool has_r = false, has_min = false, has_max = false;
	int r = 0;
	char ptr[128];

	if (!int_member(g, "replicas", prefix, 1, MAX_REPLICAS, &has_r, &r, e) ||
	    !int_member(g, "min_replicas", prefix, 0, MAX_REPLICAS, &has_min,
	    &out->min_replicas, e) ||
	    !int_member(g, "max_replicas", prefix, 1, MAX_REPLICAS, &has_max,
	    &out->max_replicas, e))
		return false;
	if (has_r && (has_min || has_max)) {
		snprintf(ptr, sizeof(ptr), "%s/%s", prefix, has_min ? "min_replicas" : "max_replicas");
		return invalid(e, ptr, "replicas excludes min_replicas and max_replicas");
	}
	if (has_r) {
		out->min_replicas = out->max_replicas = r;
		return true;
	}
	if (!has_min && !has_max) {
		snprintf(ptr, sizeof(ptr), "%s/replicas", prefix);
		return err_field(e, 400, "api.missing_field", ptr,
		    "replicas or min_replicas and max_replicas is required");
	}
	snprintf(ptr, sizeof(ptr), "%s/%s", prefix, has_min ? "max_replicas" : "min_replicas");
	if (!has_min || !has_max)
		return err_field(e, 400, "api.missing_field", ptr,
		    "min_replicas and max_replicas go together");
	if (out->min_replicas > out->max_replicas) {
		snprintf(ptr, sizeof(ptr), "%s/min_replicas", prefix);
		return invalid(e, ptr, "min_replicas must not exceed max_replicas");
	}
	out->elastic = true;
	return true;
}

static bool
parse_group(json_t *g, size_t i, struct jobspec_group *out, struct err *e)
{
	static const char *const keys[] = { "name", "replicas", "min_replicas", "max_replicas",
		"cpu", "memory", "accelerator", "ray_start_params", "pod", NULL };
	char prefix[64];

	snprintf(prefix, sizeof(prefix), "/worker_groups/%zu", i);
	if (!json_is_object(g))
		return err_field(e, 400, "api.wrong_type", prefix, "worker group must be an object");
	return jsonx_only(g, keys, prefix, e) &&
	    label_member(g, "name", prefix, true, 40, &out->name, e) &&
	    parse_replicas(g, prefix, out, e) &&
	    cpu_member(g, prefix, &out->cpu_milli, e) &&
	    memory_member(g, "memory", prefix, true, &out->memory_bytes, e) &&
	    parse_accel(g, prefix, out, e) &&
	    jobspec_parse_ray_params(g, prefix, false, &out->ray_start_params, e) &&
	    jobspec_parse_pod(g, prefix, &out->pod, e);
}

static bool
parse_groups(json_t *root, struct job_spec *s, struct err *e)
{
	json_t *arr = json_object_get(root, "worker_groups"), *g;
	size_t i;

	if (arr == NULL || json_is_null(arr))
		return err_field(e, 400, "api.missing_field", "/worker_groups",
		    "worker_groups is required");
	if (!json_is_array(arr))
		return err_field(e, 400, "api.wrong_type", "/worker_groups",
		    "worker_groups must be an array");
	if (json_array_size(arr) == 0 || json_array_size(arr) > JOBSPEC_MAX_GROUPS)
		return invalid(e, "/worker_groups", "worker_groups must hold 1 to 16 groups");
	json_array_foreach(arr, i, g) {
		if (!parse_group(g, i, &s->groups[i], e)) {
			s->ngroups = i + 1;	/* so cleanup frees the partial group */
			return false;
		}
		s->ngroups = i + 1;
		for (size_t k = 0; k < i; k++) {
			char ptr[64];

			if (strcmp(s->groups[k].name, s->groups[i].name) != 0)
				continue;
			snprintf(ptr, sizeof(ptr), "/worker_groups/%zu/name", i);
			return invalid(e, ptr, "worker group names must be unique");
		}
	}
	return true;
}

static bool
parse_shape(const char *shape, struct job_spec *s)
{
	const char *p = shape;

	s->slice_ndims = 0;
	while (s->slice_ndims < 3) {
		char *end;
		long v;

		if (*p < '1' || *p > '9')
			return false;
		v = strtol(p, &end, 10);
		if (v < 1 || v > 64)
			return false;
		s->slice_dims[s->slice_ndims++] = (int)v;
		p = end;
		if (*p == '\0')
			return s->slice_ndims >= 2;
		if (*p++ != 'x')
			return false;
	}
	return false;
}

static bool
parse_topology(json_t *root, struct job_spec *s, struct err *e)
{
	static const char *const keys[] = { "type", "shape", NULL };
	json_t *t = json_object_get(root, "topology");
	const char *type = NULL, *shape = NULL, *tptr = "/topology";

	if (t == NULL || json_is_null(t))
		return true;
	if (json_is_string(t)) {
		type = json_string_value(t);
	} else if (json_is_object(t)) {
		tptr = "/topology/type";
		if (!jsonx_only(t, keys, "/topology", e) ||
		    !jsonx_str(t, "type", "/topology", true, &type, e) ||
		    !jsonx_str(t, "shape", "/topology", false, &shape, e))
			return false;
	} else {
		return err_field(e, 400, "api.wrong_type", "/topology",
		    "topology must be a string or an object");
	}
	for (size_t i = 0; i < NTOPOS; i++) {
		if (strcmp(type, topo_names[i]) == 0)
			s->topology = (enum jobspec_topology)i;
	}
	if (strcmp(type, topo_names[s->topology]) != 0)
		return invalid(e, tptr, "topology must be one of none, host, rack, pack, slice");
	if (s->topology != JOBSPEC_TOPO_SLICE && shape != NULL)
		return invalid(e, "/topology/shape", "shape applies only to topology slice");
	if (s->topology != JOBSPEC_TOPO_SLICE)
		return true;
	if (shape == NULL)
		return err_field(e, 400, "api.missing_field", "/topology/shape",
		    "topology slice needs a shape such as \"2x2x4\"");
	if (!parse_shape(shape, s))
		return err_field(e, 400, "jobspec.invalid_shape", "/topology/shape",
		    "shape must be 2 or 3 dimensions such as \"2x4\" or \"2x2x4\"");
	return dup_str(&s->slice_shape, shape);
}

static bool
parse_string_list(json_t *o, const char *key, const char *const *allowed, char **out,
		  size_t *n, struct err *e)
{
	json_t *arr = json_object_get(o, key), *v;
	char ptr[96];
	size_t i;

	snprintf(ptr, sizeof(ptr), "/constraints/%s", key);
	if (arr == NULL || json_is_null(arr))
		return true;
	if (!json_is_array(arr) || json_array_size(arr) > JOBSPEC_MAX_LIST)
		return err_field(e, 400, "api.wrong_type", ptr,
		    "%s must be an array of at most 32 strings", key);
	json_array_foreach(arr, i, v) {
		const char *sv = json_string_value(v);
		bool ok = sv != NULL && jobspec_dns_label(sv, 63);

		snprintf(ptr, sizeof(ptr), "/constraints/%s/%zu", key, i);
		for (size_t k = 0; ok && allowed != NULL; k++) {
			if (allowed[k] == NULL)
				ok = false;
			else if (strcmp(allowed[k], sv) == 0)
				break;
		}
		if (!ok)
			return invalid(e, ptr, allowed != NULL ?
			    "provider must be one of gke, aks, hyperpod" :
			    "region must be a lowercase name such as us-central1");
		for (size_t k = 0; k < *n; k++) {
			if (strcmp(out[k], sv) == 0)
				return invalid(e, ptr, "duplicate entry");
		}
		dup_str(&out[(*n)++], sv);
	}
	return true;
}

static const char *const capacity_types[] = { "reservation", "on_demand", "spot", "flex_start",
    NULL };

static bool
capacity_int(json_t *o, const char *key, const char *ptr, int max, int *out, struct err *e)
{
	long long v = -1;
	char p[128];

	*out = -1;
	if (!jsonx_int(o, key, ptr, false, &v, e))
		return false;
	if (json_object_get(o, key) == NULL || json_is_null(json_object_get(o, key)))
		return true;
	snprintf(p, sizeof(p), "%s/%s", ptr, key);
	if (v < 0 || v > max)
		return err_field(e, 400, "jobspec.invalid_value", p, "%s must be between 0 and %d",
		    key, max);
	*out = (int)v;
	return true;
}

bool
jobspec_capacity_from_json(json_t *o, const char *ptr, struct jobspec_capacity *out,
			   struct err *e)
{
	static const char *const keys[] = { "order", "first_choice_only", "max_migrations",
	    "min_run_seconds", "cooldown_seconds", NULL };
	json_t *order, *v;
	char p[128];
	size_t i;

	memset(out, 0, sizeof(*out));
	out->max_migrations = out->min_run_s = out->cooldown_s = -1;
	if (o == NULL || json_is_null(o))
		return true;
	if (!json_is_object(o))
		return err_field(e, 400, "jobspec.invalid_value", ptr,
		    "capacity_preference must be an object");
	if (!jsonx_only(o, keys, ptr, e) ||
	    !jsonx_bool(o, "first_choice_only", ptr, false, &out->first_only, e) ||
	    !capacity_int(o, "max_migrations", ptr, 100, &out->max_migrations, e) ||
	    !capacity_int(o, "min_run_seconds", ptr, 604800, &out->min_run_s, e) ||
	    !capacity_int(o, "cooldown_seconds", ptr, 604800, &out->cooldown_s, e))
		return false;
	order = json_object_get(o, "order");
	snprintf(p, sizeof(p), "%s/order", ptr);
	if (!json_is_array(order) || json_array_size(order) == 0 ||
	    json_array_size(order) > JOBSPEC_NCTYPES)
		return err_field(e, 400, "jobspec.invalid_value", p, "order must list 1 to 4 of "
		    "reservation, on_demand, spot, flex_start, best first");
	json_array_foreach(order, i, v) {
		const char *name = json_string_value(v);
		size_t k;

		snprintf(p, sizeof(p), "%s/order/%zu", ptr, i);
		for (k = 0; name != NULL && capacity_types[k] != NULL &&
		    strcmp(capacity_types[k], name) != 0; k++)
			;
		if (name == NULL || capacity_types[k] == NULL)
			return err_field(e, 400, "jobspec.invalid_value", p, "not a capacity type "
			    "(reservation, on_demand, spot, flex_start)");
		for (int d = 0; d < out->n; d++)
			if (out->order[d] == capacity_types[k])
				return err_field(e, 400, "jobspec.invalid_value", p, "duplicate entry");
		out->order[out->n++] = capacity_types[k];
	}
	return true;
}

json_t *
jobspec_capacity_to_json(const struct jobspec_capacity *c)
{
	json_t *o, *order;

	if (c->n == 0)
		return NULL;
	order = json_array();
	for (int i = 0; i < c->n; i++)
		json_array_append_new(order, json_string(c->order[i]));
	o = json_pack("{s:o, s:b}", "order", order, "first_choice_only", c->first_only);
	if (c->max_migrations >= 0)
		json_object_set_new(o, "max_migrations", json_integer(c->max_migrations));
	if (c->min_run_s >= 0)
		json_object_set_new(o, "min_run_seconds", json_integer(c->min_run_s));
	if (c->cooldown_s >= 0)
		json_object_set_new(o, "cooldown_seconds", json_integer(c->cooldown_s));
	return o;
}

static bool
parse_constraints(json_t *root, struct job_spec *s, struct err *e)
{
	static const char *const keys[] = { "regions", "providers", "spot", "max_price",
	    "capacity_preference", NULL };
	static const char *const providers[] = { "gke", "aks", "hyperpod", NULL };
	json_t *c;
	bool spot = false;

	if (!jsonx_obj(root, "constraints", "", false, &c, e))
		return false;
	s->capacity.max_migrations = s->capacity.min_run_s = s->capacity.cooldown_s = -1;
	if (c == NULL)
		return true;
	if (!jsonx_only(c, keys, "/constraints", e) ||
	    !jobspec_capacity_from_json(json_object_get(c, "capacity_preference"),
	    "/constraints/capacity_preference", &s->capacity, e) ||
	    !parse_string_list(c, "regions", NULL, s->regions, &s->nregions, e) ||
	    !parse_string_list(c, "providers", providers, s->providers, &s->nproviders, e) ||
	    !jsonx_bool(c, "spot", "/constraints", false, &spot, e) ||
	    !jsonx_num(c, "max_price", "/constraints", false, &s->max_price, e))
		return false;
	if (json_is_boolean(json_object_get(c, "spot")))
		s->spot = spot ? JOBSPEC_SPOT_ONLY : JOBSPEC_SPOT_NEVER;
	if (json_is_number(json_object_get(c, "max_price"))) {
		s->has_max_price = true;
		if (!(s->max_price > 0) || s->max_price > 1e6)
			return invalid(e, "/constraints/max_price", "max_price must be positive");
	}
	return true;
}

static bool
parse_checkpoint(json_t *root, struct job_spec *s, struct err *e)
{
	static const char *const keys[] = { "uri", "grace_seconds", NULL };
	const char *uri = NULL, *p;
	json_t *c;

	if (!jsonx_obj(root, "checkpoint", "", false, &c, e))
		return false;
	if (c == NULL)
		return true;
	s->checkpoint_grace_seconds = 60;
	if (!jsonx_only(c, keys, "/checkpoint", e) ||
	    !jsonx_str(c, "uri", "/checkpoint", true, &uri, e) ||
	    !int_member(c, "grace_seconds", "/checkpoint", 0, 86400, NULL,
	    &s->checkpoint_grace_seconds, e))
		return false;
	p = uri;
	if (!isalpha((unsigned char)*p))
		return invalid(e, "/checkpoint/uri", "uri must look like scheme://bucket/path");
	while (isalnum((unsigned char)*p) || *p == '+' || *p == '.' || *p == '-')
		p++;
	if (strncmp(p, "://", 3) != 0 || p[3] == '\0' || strlen(uri) > 1024 ||
	    strpbrk(uri, " \t\r\n\"") != NULL)
		return invalid(e, "/checkpoint/uri", "uri must look like scheme://bucket/path");
	return dup_str(&s->checkpoint_uri, uri);
}

static bool
parse_redis(json_t *g, struct jobspec_gcs *out, struct err *e)
{
	static const char *const skeys[] = { "name", "key", NULL };
	const char *addr = NULL;
	json_t *sec;

	if (!jsonx_str(g, "redis_address", "/gcs_fault_tolerance", true, &addr, e) ||
	    !jsonx_obj(g, "redis_password_secret", "/gcs_fault_tolerance", false, &sec, e))
		return false;
	if (addr[0] == '\0' || strlen(addr) > 253 || strpbrk(addr, " \t\r\n\"") != NULL)
		return invalid(e, "/gcs_fault_tolerance/redis_address",
		    "redis_address must be host:port or redis://host:port");
	dup_str(&out->redis_address, addr);
	if (sec == NULL)
		return true;
	return jsonx_only(sec, skeys, "/gcs_fault_tolerance/redis_password_secret", e) &&
	    label_member(sec, "name", "/gcs_fault_tolerance/redis_password_secret", true, 253,
	    &out->redis_secret, e) &&
	    jsonx_str(sec, "key", "/gcs_fault_tolerance/redis_password_secret", true,
	    &addr, e) &&
	    dup_str(&out->redis_secret_key, addr);
}

static bool
parse_gcs(json_t *root, struct job_spec *s, struct err *e)
{
	static const char *const keys[] = { "backend", "storage_size", "storage_class",
		"redis_address", "redis_password_secret", NULL };
	json_t *g = json_object_get(root, "gcs_fault_tolerance");
	const char *backend = "rocksdb";

	if (g == NULL || json_is_null(g))
		return true;
	if (json_is_boolean(g)) {
		s->gcs.mode = json_is_true(g) ? JOBSPEC_GCS_FT_ROCKSDB : JOBSPEC_GCS_FT_OFF;
		return true;
	}
	if (!json_is_object(g))
		return err_field(e, 400, "api.wrong_type", "/gcs_fault_tolerance",
		    "gcs_fault_tolerance must be a boolean or an object");
	if (!jsonx_only(g, keys, "/gcs_fault_tolerance", e) ||
	    !jsonx_str(g, "backend", "/gcs_fault_tolerance", false, &backend, e))
		return false;
	if (strcmp(backend, "redis") == 0) {
		s->gcs.mode = JOBSPEC_GCS_FT_REDIS;
		if (json_object_get(g, "storage_size") || json_object_get(g, "storage_class"))
			return invalid(e, json_object_get(g, "storage_size") ?
			    "/gcs_fault_tolerance/storage_size" : "/gcs_fault_tolerance/storage_class",
			    "storage applies only to the rocksdb backend");
		return parse_redis(g, &s->gcs, e);
	}
	if (strcmp(backend, "rocksdb") != 0)
		return invalid(e, "/gcs_fault_tolerance/backend", "backend must be rocksdb or redis");
	s->gcs.mode = JOBSPEC_GCS_FT_ROCKSDB;
	if (json_object_get(g, "redis_address") || json_object_get(g, "redis_password_secret"))
		return invalid(e, json_object_get(g, "redis_address") ?
		    "/gcs_fault_tolerance/redis_address" :
		    "/gcs_fault_tolerance/redis_password_secret",
		    "redis settings need backend redis");
	return memory_member(g, "storage_size", "/gcs_fault_tolerance", false,
	    &s->gcs.storage_bytes, e) &&
	    label_member(g, "storage_class", "/gcs_fault_tolerance", false, 253,
	    &s->gcs.storage_class, e);
}

static bool
parse_rayjob_opts(json_t *root, struct job_spec *s, struct err *e)
{
	static const char *const modes[] = { "K8sJobMode", "HTTPMode", "SidecarMode", NULL };
	static const char *const dkeys[] = { "on_success", "on_failure", NULL };
	const char *mode = NULL;
	json_t *d;

	if (!int_member(root, "ttl_seconds_after_finished", "", 0, 7 * 86400, NULL,
	    &s->ttl_seconds_after_finished, e) ||
	    !int_member(root, "active_deadline_seconds", "", 1, 2147483647, NULL,
	    &s->active_deadline_seconds, e) ||
	    !int_member(root, "backoff_limit", "", 0, 100, NULL, &s->backoff_limit, e) ||
	    !jsonx_str(root, "submission_mode", "", false, &mode, e) ||
	    !jsonx_obj(root, "deletion_policy", "", false, &d, e))
		return false;
	if (mode != NULL) {
		size_t i;

		for (i = 0; modes[i] != NULL && strcmp(modes[i], mode) != 0; i++)
			;
		if (modes[i] == NULL)
			return invalid(e, "/submission_mode",
			    "submission_mode must be K8sJobMode, HTTPMode or SidecarMode");
	}
	dup_str(&s->submission_mode, mode != NULL ? mode : "K8sJobMode");
	if (d == NULL)
		return true;
	if (!jsonx_only(d, dkeys, "/deletion_policy", e))
		return false;
	for (int k = 0; k < 2; k++) {
		enum jobspec_delete *dst = k == 0 ? &s->delete_on_success : &s->delete_on_failure;
		const char *v = NULL;
		char ptr[64];

		snprintf(ptr, sizeof(ptr), "/deletion_policy/%s", dkeys[k]);
		if (!jsonx_str(d, dkeys[k], "/deletion_policy", true, &v, e))
			return false;
		for (int i = 1; i < 4; i++) {
			if (strcmp(v, delete_names[i]) == 0)
				*dst = (enum jobspec_delete)i;
		}
		if (*dst == JOBSPEC_DELETE_UNSET)
			return invalid(e, ptr, "policy must be DeleteCluster, DeleteWorkers or "
			    "DeleteSelf (DeleteNone conflicts with shutdownAfterJobFinishes)");
	}
	return true;
}

/* Refuses a field that does not apply to this kind. */
static bool
not_for_kind(json_t *root, const char *key, const struct job_spec *s, const char *kinds,
	     struct err *e)
{
	json_t *v = json_object_get(root, key);
	char ptr[64];

	if (v == NULL || json_is_null(v))
		return true;
	snprintf(ptr, sizeof(ptr), "/%s", key);
	return err_field(e, 400, "jobspec.not_applicable", ptr, "%s applies only to %s, not %s",
	    key, kinds, jobspec_kind_name(s->kind));
}

static bool
parse_kind_fields(json_t *root, struct job_spec *s, struct err *e)
{
	bool job = s->kind == JOBSPEC_RAYJOB || s->kind == JOBSPEC_RAYCRONJOB;
	const char *v = NULL;
	json_t *o;

	if (!job) {
		static const char *const only_jobs[] = { "entrypoint", "runtime_env",
			"ttl_seconds_after_finished", "active_deadline_seconds", "backoff_limit",
			"submission_mode", "deletion_policy", NULL };

		for (int i = 0; only_jobs[i] != NULL; i++) {
			if (!not_for_kind(root, only_jobs[i], s, "RayJob and RayCronJob", e))
				return false;
		}
	} else {
		if (!jsonx_str(root, "entrypoint", "", true, &v, e))
			return false;
		if (v[0] == '\0' || strlen(v) > 65536)
			return invalid(e, "/entrypoint", "entrypoint must not be empty");
		dup_str(&s->entrypoint, v);
		if (!jsonx_obj(root, "runtime_env", "", false, &o, e) ||
		    !parse_rayjob_opts(root, s, e))
			return false;
		s->runtime_env = json_incref(o);
	}
	if (s->kind != JOBSPEC_RAYCRONJOB) {
		if (!not_for_kind(root, "schedule", s, "RayCronJob", e) ||
		    !not_for_kind(root, "time_zone", s, "RayCronJob", e))
			return false;
	} else {
		v = NULL;
		if (!jsonx_str(root, "schedule", "", true, &v, e))
			return false;
		if (!jobspec_cron_valid(v))
			return err_field(e, 400, "jobspec.invalid_schedule", "/schedule",
			    "schedule must be a 5-field cron expression or @hourly, @daily...");
		dup_str(&s->schedule, v);
		v = NULL;
		if (!jsonx_str(root, "time_zone", "", false, &v, e))
			return false;
		if (v != NULL && (v[0] == '\0' || strlen(v) > 64 ||
		    strspn(v, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_+-/")
		    != strlen(v)))
			return invalid(e, "/time_zone", "time_zone must be an IANA name such as Etc/UTC");
		dup_str(&s->time_zone, v);
	}
	if (s->kind != JOBSPEC_RAYSERVICE)
		return not_for_kind(root, "serve_config", s, "RayService", e) &&
		    not_for_kind(root, "upgrade_deadline_seconds", s, "RayService", e);
	/* how long a zero-downtime upgrade may hold its second Ray cluster (queue/change/
	 * updater.c rolls back past it): a minute to a week */
	if (!int_member(root, "upgrade_deadline_seconds", "", 60, 604800, NULL,
	    &s->upgrade_deadline_seconds, e))
		return false;
	if (!jsonx_obj(root, "serve_config", "", true, &o, e))
		return false;
	if (!json_is_array(json_object_get(o, "applications")))
		return invalid(e, "/serve_config/applications",
		    "serve_config needs an applications array");
	s->serve_config = json_incref(o);
	return true;
}

static bool
parse_identity(json_t *root, struct job_spec *s, struct err *e)
{
	const char *kind = NULL, *ver = NULL, *image = NULL;
	char buf[160];
	int a, b, c, n = 0;

	if (!jsonx_str(root, "kind", "", true, &kind, e))
		return false;
	if (!jobspec_kind_parse(kind, &s->kind))
		return invalid(e, "/kind", "kind must be RayJob, RayCluster, RayService or RayCronJob");
	if (!label_member(root, "queue", "", true, 63, &s->queue, e) ||
	    !label_member(root, "priority_class", "", false, 63, &s->priority_class, e) ||
	    !label_member(root, "name", "", true, 63, &s->name, e) ||
	    !jsonx_str(root, "ray_version", "", true, &ver, e) ||
	    !jsonx_str(root, "image", "", false, &image, e))
		return false;
	if (sscanf(ver, "%3d.%3d.%3d%n", &a, &b, &c, &n) != 3 || ver[n] != '\0' ||
	    !isdigit((unsigned char)ver[0]) || strchr(ver, '+') || strchr(ver, '-') ||
	    strchr(ver, ' '))
		return invalid(e, "/ray_version", "ray_version must look like 2.52.0");
	dup_str(&s->ray_version, ver);
	s->image_set = image != NULL;
	if (image == NULL) {
		snprintf(buf, sizeof(buf), "rayproject/ray:%s", ver);
		image = buf;
	}
	if (image[0] == '\0' || strlen(image) > 512 || strpbrk(image, " \t\r\n\"'") != NULL)
		return invalid(e, "/image", "image must be an image reference without spaces");
	return dup_str(&s->image, image);
}

/* Cross-field rules: a slice job has exactly one accelerator group whose per-host count
 * divides the chips of the slice. */
static bool
check_slice(struct job_spec *s, struct err *e)
{
	int64_t chips = jobspec_slice_chips(s);
	size_t idx = 0, n = 0;
	char ptr[64];

	for (size_t i = 0; i < s->ngroups; i++) {
		if (s->groups[i].accel_flavor != NULL) {
			idx = i;
			n++;
		}
	}
	if (n != 1)
		return invalid(e, "/worker_groups",
		    "topology slice needs exactly one worker group with an accelerator");
	snprintf(ptr, sizeof(ptr), "/worker_groups/%zu/accelerator/count", idx);
	if (chips % s->groups[idx].accel_count != 0)
		return invalid(e, ptr, "accelerator count per host must divide the chips of the slice");
	if (s->nproviders > 0) {
		bool gke = false;

		for (size_t i = 0; i < s->nproviders; i++)
			gke |= strcmp(s->providers[i], "gke") == 0;
		if (!gke)
			return invalid(e, "/constraints/providers", "topology slice needs gke: TPU "
			    "slices exist only on GKE");
	}
	return true;
}

/* topology host puts every accelerator pod of the job on one node: at least one
 * accelerator group, all of one flavor. */
static bool
check_host(struct job_spec *s, struct err *e)
{
	const char *flavor = NULL;
	char ptr[64];

	for (size_t i = 0; i < s->ngroups; i++) {
		const char *f = s->groups[i].accel_flavor;

		if (f == NULL)
			continue;
		snprintf(ptr, sizeof(ptr), "/worker_groups/%zu/accelerator/flavor", i);
		if (flavor != NULL && strcmp(flavor, f) != 0)
			return invalid(e, ptr, "topology host puts every accelerator pod on one node: "
			    "all accelerator groups need the same flavor");
		flavor = f;
	}
	if (flavor == NULL)
		return invalid(e, "/topology", "topology host needs a worker group with an "
		    "accelerator");
	return true;
}

/* root's "labels": at most 16 members, keys 1..63 of [a-z0-9._/-] starting alphanumeric,
 * string values of at most 63 bytes (team names the job's team for costs and budgets). */
static bool
parse_labels(json_t *root, struct job_spec *s, struct err *e)
{
	json_t *l = NULL, *v;
	const char *k;
	char ptr[96];

	if (!jsonx_obj(root, "labels", "", false, &l, e))
		return false;
	if (l == NULL)
		return true;
	if (json_object_size(l) > 16)
		return invalid(e, "/labels", "at most 16 labels");
	json_object_foreach(l, k, v) {
		size_t n = strlen(k);
		bool ok = n >= 1 && n <= 63 && isalnum((unsigned char)k[0]);

		for (size_t i = 0; ok && i < n; i++)
			ok = islower((unsigned char)k[i]) || isdigit((unsigned char)k[i]) ||
			    strchr("._/-", k[i]) != NULL;
		snprintf(ptr, sizeof(ptr), "/labels/%.63s", ok ? k : "");
		if (!ok)
			return invalid(e, "/labels", "label keys are 1 to 63 of a-z, 0-9, '.', '_',"
			    " '/', '-', starting with a letter or digit");
		if (!json_is_string(v) || json_string_length(v) > 63 ||
		    !jsonx_utf8_valid(json_string_value(v), json_string_length(v)))
			return invalid(e, ptr, "a label's value is a string of at most 63 bytes");
	}
	s->labels = json_deep_copy(l);
	return true;
}

bool
jobspec_from_json(json_t *j, struct job_spec *out, struct err *e)
{
	static const char *const keys[] = { "kind", "queue", "priority_class", "name",
		"ray_version", "image", "entrypoint", "schedule", "time_zone", "serve_config",
		"head", "worker_groups", "topology", "constraints", "runtime_env", "checkpoint",
		"gcs_fault_tolerance", "ttl_seconds_after_finished", "active_deadline_seconds",
		"backoff_limit", "submission_mode", "deletion_policy", "autoscaler", "cron",
		"max_infra_retries", "labels", "upgrade_deadline_seconds", NULL };
	struct job_spec s;

	memset(&s, 0, sizeof(s));
	memset(out, 0, sizeof(*out));
	s.ttl_seconds_after_finished = 600;
	s.max_infra_retries = -1;
	if (!json_is_object(j)) {
		err_field(e, 400, "api.not_object", "", "job spec must be a json object");
		return false;
	}
	if (!jsonx_only(j, keys, "", e) || !parse_identity(j, &s, e) ||
	    !parse_kind_fields(j, &s, e) || !parse_head(j, &s, e) || !parse_groups(j, &s, e) ||
	    !parse_topology(j, &s, e) || !parse_constraints(j, &s, e) ||
	    !parse_checkpoint(j, &s, e) || !parse_gcs(j, &s, e) || !parse_labels(j, &s, e) ||
	    !int_member(j, "max_infra_retries", "", 0, 100, NULL, &s.max_infra_retries, e) ||
	    !jobspec_parse_autoscaler(j, &s, e) || !jobspec_parse_cron(j, &s, e) ||
	    (s.topology == JOBSPEC_TOPO_SLICE && !check_slice(&s, e)) ||
	    (s.topology == JOBSPEC_TOPO_HOST && !check_host(&s, e))) {
		jobspec_cleanup(&s);
		return false;
	}
	*out = s;
	return true;
}

void
jobspec_cleanup(struct job_spec *s)
{
	if (s == NULL)
		return;
	free(s->queue);
	free(s->priority_class);
	free(s->name);
	free(s->ray_version);
	free(s->image);
	free(s->entrypoint);
	free(s->schedule);
	free(s->time_zone);
	json_decref(s->serve_config);
	for (size_t i = 0; i < s->ngroups; i++) {
		free(s->groups[i].name);
		free(s->groups[i].accel_flavor);
		json_decref(s->groups[i].ray_start_params);
		json_decref(s->groups[i].pod);
	}
	json_decref(s->head_ray_start_params);
	json_decref(s->head_pod);
	free(s->slice_shape);
	for (size_t i = 0; i < s->nregions; i++)
		free(s->regions[i]);
	for (size_t i = 0; i < s->nproviders; i++)
		free(s->providers[i]);
	json_decref(s->runtime_env);
	free(s->checkpoint_uri);
	json_decref(s->labels);
	free(s->gcs.storage_class);
	free(s->gcs.redis_address);
	free(s->gcs.redis_secret);
	free(s->gcs.redis_secret_key);
	free(s->submission_mode);
	memset(s, 0, sizeof(*s));
}

/* ------------------------------------------------------------------ canonical form */

static json_t *
group_to_json(const struct jobspec_group *g)
{
	char cpu[32], mem[32];
	json_t *o;

	jobspec_fmt_cpu(g->cpu_milli, cpu, sizeof(cpu));
	jobspec_fmt_memory(g->memory_bytes, mem, sizeof(mem));
	o = json_pack("{s:s, s:s, s:s}", "name", g->name, "cpu", cpu, "memory", mem);
	if (g->elastic) {
		json_object_set_new(o, "min_replicas", json_integer(g->min_replicas));
		json_object_set_new(o, "max_replicas", json_integer(g->max_replicas));
	} else {
		json_object_set_new(o, "replicas", json_integer(g->min_replicas));
	}
	if (g->accel_flavor != NULL)
		json_object_set_new(o, "accelerator", json_pack("{s:s, s:i}", "flavor",
		    g->accel_flavor, "count", g->accel_count));
	if (g->ray_start_params != NULL)
		json_object_set(o, "ray_start_params", g->ray_start_params);
	if (g->pod != NULL)
		json_object_set(o, "pod", g->pod);
	return o;
}

static json_t *
strings_to_json(char *const *v, size_t n)
{
	json_t *a = json_array();

	for (size_t i = 0; i < n; i++)
		json_array_append_new(a, json_string(v[i]));
	return a;
}

static json_t *
constraints_to_json(const struct job_spec *s)
{
	json_t *c = json_object();

	if (s->nregions > 0)
		json_object_set_new(c, "regions", strings_to_json(s->regions, s->nregions));
	if (s->nproviders > 0)
		json_object_set_new(c, "providers", strings_to_json(s->providers, s->nproviders));
	if (s->spot != JOBSPEC_SPOT_ANY)
		json_object_set_new(c, "spot", json_boolean(s->spot == JOBSPEC_SPOT_ONLY));
	if (s->has_max_price)
		json_object_set_new(c, "max_price", json_real(s->max_price));
	if (s->capacity.n > 0)
		json_object_set_new(c, "capacity_preference", jobspec_capacity_to_json(&s->capacity));
	return c;
}

static json_t *
gcs_to_json(const struct jobspec_gcs *g)
{
	json_t *o;
	char mem[32];

	switch (g->mode) {
	case JOBSPEC_GCS_FT_DEFAULT:
		return NULL;
	case JOBSPEC_GCS_FT_OFF:
		return json_false();
	case JOBSPEC_GCS_FT_ROCKSDB:
		o = json_pack("{s:s}", "backend", "rocksdb");
		if (g->storage_bytes > 0) {
			jobspec_fmt_memory(g->storage_bytes, mem, sizeof(mem));
			json_object_set_new(o, "storage_size", json_string(mem));
		}
		if (g->storage_class != NULL)
			json_object_set_new(o, "storage_class", json_string(g->storage_class));
		return o;
	case JOBSPEC_GCS_FT_REDIS:
		o = json_pack("{s:s, s:s}", "backend", "redis", "redis_address", g->redis_address);
		if (g->redis_secret != NULL)
			json_object_set_new(o, "redis_password_secret", json_pack("{s:s, s:s}",
			    "name", g->redis_secret, "key", g->redis_secret_key));
		return o;
	}
	return NULL;
}

static void
job_opts_to_json(const struct job_spec *s, json_t *o)
{
	json_object_set_new(o, "entrypoint", json_string(s->entrypoint));
	if (s->runtime_env != NULL)
		json_object_set(o, "runtime_env", s->runtime_env);
	json_object_set_new(o, "ttl_seconds_after_finished",
	    json_integer(s->ttl_seconds_after_finished));
	json_object_set_new(o, "backoff_limit", json_integer(s->backoff_limit));
	json_object_set_new(o, "submission_mode", json_string(s->submission_mode));
	if (s->active_deadline_seconds > 0)
		json_object_set_new(o, "active_deadline_seconds",
		    json_integer(s->active_deadline_seconds));
	if (s->delete_on_success != JOBSPEC_DELETE_UNSET)
		json_object_set_new(o, "deletion_policy", json_pack("{s:s, s:s}",
		    "on_success", jobspec_delete_name(s->delete_on_success),
		    "on_failure", jobspec_delete_name(s->delete_on_failure)));
}

json_t *
jobspec_to_json(const struct job_spec *s)
{
	char cpu[32], mem[32];
	json_t *o, *groups = json_array(), *gcs;

	jobspec_fmt_cpu(s->head_cpu_milli, cpu, sizeof(cpu));
	jobspec_fmt_memory(s->head_memory_bytes, mem, sizeof(mem));
	for (size_t i = 0; i < s->ngroups; i++)
		json_array_append_new(groups, group_to_json(&s->groups[i]));
	o = json_pack("{s:s, s:s, s:s, s:s, s:s*, s:{s:s, s:s}, s:o, s:{s:s}, s:o}",
	    "kind", jobspec_kind_name(s->kind), "queue", s->queue, "name", s->name,
	    "ray_version", s->ray_version, "image", s->image_set ? s->image : NULL,
	    "head", "cpu", cpu, "memory", mem, "worker_groups", groups,
	    "topology", "type", jobspec_topology_name(s->topology),
	    "constraints", constraints_to_json(s));
	if (o == NULL)
		return NULL;
	if (s->priority_class != NULL)
		json_object_set_new(o, "priority_class", json_string(s->priority_class));
	if (s->slice_shape != NULL)
		json_object_set_new(json_object_get(o, "topology"), "shape",
		    json_string(s->slice_shape));
	if (s->kind == JOBSPEC_RAYJOB || s->kind == JOBSPEC_RAYCRONJOB)
		job_opts_to_json(s, o);
	if (s->schedule != NULL)
		json_object_set_new(o, "schedule", json_string(s->schedule));
	if (s->time_zone != NULL)
		json_object_set_new(o, "time_zone", json_string(s->time_zone));
	if (s->serve_config != NULL)
		json_object_set(o, "serve_config", s->serve_config);
	if (s->labels != NULL)
		json_object_set(o, "labels", s->labels);
	if (s->checkpoint_uri != NULL)
		json_object_set_new(o, "checkpoint", json_pack("{s:s, s:i}", "uri",
		    s->checkpoint_uri, "grace_seconds", s->checkpoint_grace_seconds));
	if (s->max_infra_retries >= 0)
		json_object_set_new(o, "max_infra_retries", json_integer(s->max_infra_retries));
	if (s->upgrade_deadline_seconds > 0)
		json_object_set_new(o, "upgrade_deadline_seconds",
		    json_integer(s->upgrade_deadline_seconds));
	if (s->head_ray_start_params != NULL)
		json_object_set(json_object_get(o, "head"), "ray_start_params",
		    s->head_ray_start_params);
	if (s->head_pod != NULL)
		json_object_set(json_object_get(o, "head"), "pod", s->head_pod);
	if (s->autoscaler_set)
		json_object_set_new(o, "autoscaler", jobspec_autoscaler_to_json(s));
	if (s->cron_set)
		json_object_set_new(o, "cron", jobspec_cron_to_json(s));
	gcs = gcs_to_json(&s->gcs);
	if (gcs != NULL)
		json_object_set_new(o, "gcs_fault_tolerance", gcs);
	return o;
}
