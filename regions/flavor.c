/* flavor: rows of table flavors (an admin's additions to and overrides of the built-in
 * catalog), their validation, and the sync of the catalog's overlay with them. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/jsonx.h"
#include "regions/catalog.h"
#include "regions/flavor.h"

#define BAD	"catalog.bad_flavor"

bool
flavor_sync(struct db *c, struct err *e)
{
	static const char gen_sql[] = "SELECT gen FROM catalog_generation";
	PGresult *r = NULL;
	long long gen;

	if (!db_exec(c, gen_sql, 0, NULL, &r, e))
		return false;
	gen = atoll(PQgetvalue(r, 0, 0));
	PQclear(r);
	return flavor_sync_at(c, gen, e);
}

bool
flavor_sync_at(struct db *c, long long gen, struct err *e)
{
	static const char rows_sql[] = "SELECT coalesce(jsonb_object_agg(name, spec), '{}')::text,"
	    " (SELECT gen FROM catalog_generation) FROM flavors";
	PGresult *r = NULL;
	json_t *rows;

	if (gen == catalog_overlay_gen())
		return true;
	if (!db_exec(c, rows_sql, 0, NULL, &r, e))
		return false;
	rows = json_loads(PQgetvalue(r, 0, 0), 0, NULL);
	gen = atoll(PQgetvalue(r, 0, 1));
	PQclear(r);
	if (rows == NULL)
		return err_set(e, 500, "catalog.bad_row", "cannot read the flavors table");
	catalog_overlay_set(rows, gen);
	return true;
}

/* Any jsonx failure is bad input of the flavor: 422 with the jsonx pointer. */
static bool
bad(struct err *e)
{
	e->status = 422;
	return false;
}

/* A Kubernetes label name part: 1..63 of [A-Za-z0-9-_.], alphanumeric at both ends. */
static bool
label_name_ok(const char *s, size_t len)
{
	if (len == 0 || len > 63 || !isalnum((unsigned char)s[0]) ||
	    !isalnum((unsigned char)s[len - 1]))
		return false;
	for (size_t i = 0; i < len; i++)
		if (!isalnum((unsigned char)s[i]) && s[i] != '-' && s[i] != '_' && s[i] != '.')
			return false;
	return true;
}

/* A label key: [DNS subdomain prefix "/"] name. */
bool
catalog_label_key_ok(const char *k)
{
	const char *slash = strchr(k, '/');

	if (slash == NULL)
		return label_name_ok(k, strlen(k));
	if (slash == k || slash - k > 253 || strchr(slash + 1, '/') != NULL)
		return false;
	for (const char *p = k; p < slash; p++)
		if (!islower((unsigned char)*p) && !isdigit((unsigned char)*p) && *p != '-' &&
		    *p != '.')
			return false;
	return label_name_ok(slash + 1, strlen(slash + 1));
}

static bool
int_in(json_t *o, const char *key, const char *prefix, bool required, long long lo,
    long long hi, long long *out, struct err *e)
{
	char ptr[160];

	*out = 0;
	if (!jsonx_int(o, key, prefix, required, out, e))
		return bad(e);
	snprintf(ptr, sizeof(ptr), "%s/%s", prefix, key);
	if (json_object_get(o, key) != NULL && (*out < lo || *out > hi))
		return err_field(e, 422, BAD, ptr, "%s must be between %lld and %lld", key, lo,
		    hi);
	return true;
}

static bool
price_in(json_t *o, const char *key, const char *prefix, double *out, struct err *e)
{
	char ptr[160];

	*out = 0;
	if (!jsonx_num(o, key, prefix, false, out, e))
		return bad(e);
	snprintf(ptr, sizeof(ptr), "%s/%s", prefix, key);
	if (*out < 0 || *out > 1e6)
		return err_field(e, 422, BAD, ptr, "%s must be between 0 and 1000000", key);
	return true;
}

/* One machine_types[i] entry, normalized into *out. */
static bool
machine_valid(json_t *mt, size_t i, json_t **out, struct err *e)
{
	static const char *const keys[] = { "provider", "machine_type", "accelerators_per_node",
	    "vcpus", "memory_gib", "on_demand_hour", "spot_hour", "node_label", NULL };
	const char *prov = NULL, *type = NULL, *k = NULL, *v = NULL;
	long long per, vcpus, mem;
	double od, spot;
	json_t *lab = NULL;
	char pre[64], ptr[128];

	snprintf(pre, sizeof(pre), "/machine_types/%zu", i);
	if (!json_is_object(mt))
		return err_field(e, 422, BAD, pre, "a machine type is an object");
	if (!jsonx_only(mt, keys, pre, e) || !jsonx_str(mt, "provider", pre, true, &prov, e) ||
	    !jsonx_str(mt, "machine_type", pre, true, &type, e))
		return bad(e);
	snprintf(ptr, sizeof(ptr), "%s/provider", pre);
	if (!catalog_provider_valid(prov))
		return err_field(e, 422, BAD, ptr, "unknown provider");
	snprintf(ptr, sizeof(ptr), "%s/machine_type", pre);
	if (!label_name_ok(type, strlen(type)))
		return err_field(e, 422, BAD, ptr, "machine_type must be 1 to 63 letters, digits,"
		    " '-', '_' or '.'");
	if (!int_in(mt, "accelerators_per_node", pre, true, 1, 64, &per, e) ||
	    !int_in(mt, "vcpus", pre, false, 0, 4096, &vcpus, e) ||
	    !int_in(mt, "memory_gib", pre, false, 0, 65536, &mem, e) ||
	    !price_in(mt, "on_demand_hour", pre, &od, e) || !price_in(mt, "spot_hour", pre, &spot, e))
		return false;
	if (!jsonx_obj(mt, "node_label", pre, false, &lab, e))
		return bad(e);
	if (lab != NULL) {
		snprintf(ptr, sizeof(ptr), "%s/node_label", pre);
		if (!jsonx_only(lab, (const char *const[]){ "key", "value", NULL }, ptr, e) ||
		    !jsonx_str(lab, "key", ptr, true, &k, e) ||
		    !jsonx_str(lab, "value", ptr, true, &v, e))
			return bad(e);
		snprintf(ptr, sizeof(ptr), "%s/node_label/key", pre);
		if (!catalog_label_key_ok(k))
			return err_field(e, 422, BAD, ptr, "not a kubernetes label key");
		snprintf(ptr, sizeof(ptr), "%s/node_label/value", pre);
		if (!label_name_ok(v, strlen(v)))
			return err_field(e, 422, BAD, ptr, "not a kubernetes label value");
	}
	/* what was given, and only that (an absent member reads as 0) */
	*out = json_pack("{s:s, s:s, s:I}", "provider", prov, "machine_type", type,
	    "accelerators_per_node", (json_int_t)per);
	if (json_object_get(mt, "vcpus") != NULL)
		json_object_set_new(*out, "vcpus", json_integer(vcpus));
	if (json_object_get(mt, "memory_gib") != NULL)
		json_object_set_new(*out, "memory_gib", json_integer(mem));
	if (json_object_get(mt, "on_demand_hour") != NULL)
		json_object_set_new(*out, "on_demand_hour", json_real(od));
	if (json_object_get(mt, "spot_hour") != NULL)
		json_object_set_new(*out, "spot_hour", json_real(spot));
	if (lab != NULL)
		json_object_set_new(*out, "node_label", json_pack("{s:s, s:s}", "key", k, "value",
		    v));
	return true;
}

bool
flavor_spec_valid(const char *name, json_t *body, json_t **spec, struct err *e)
{
	static const char *const keys[] = { "name", "kind", "memory_gib", "k8s_resource",
	    "rack_size", "machine_types", NULL };
	const char *bname = NULL, *kind = NULL, *res = NULL;
	long long mem, rack;
	json_t *mts = NULL, *mt, *norm = NULL, *out = NULL;
	size_t i, j;

	if (name == NULL || !jsonx_name_ok(name, 63))
		return err_field(e, 422, BAD, "/name", "a flavor name is 2 to 63 lowercase letters,"
		    " digits and '-', starting with a letter");
	if (!jsonx_only(body, keys, "", e) || !jsonx_str(body, "name", "", false, &bname, e) ||
	    !jsonx_str(body, "kind", "", true, &kind, e) ||
	    !jsonx_str(body, "k8s_resource", "", false, &res, e))
		return bad(e);
	if (bname != NULL && strcmp(bname, name) != 0)
		return err_field(e, 422, BAD, "/name", "name must equal the name in the path");
	if (strcmp(kind, "gpu") != 0 && strcmp(kind, "tpu") != 0)
		return err_field(e, 422, BAD, "/kind", "kind must be gpu or tpu");
	if (res == NULL)
		res = kind[0] == 'g' ? "nvidia.com/gpu" : "google.com/tpu";
	else if (!catalog_label_key_ok(res) || strchr(res, '/') == NULL)
		return err_field(e, 422, BAD, "/k8s_resource", "k8s_resource must be an extended "
		    "resource name such as nvidia.com/gpu");
	if (!int_in(body, "memory_gib", "", true, 1, 4096, &mem, e) ||
	    !int_in(body, "rack_size", "", false, 0, 1024, &rack, e))
		return false;
	if (rack > 0 && kind[0] == 't')
		return err_field(e, 422, BAD, "/rack_size", "rack_size (nodes per NVLink domain) "
		    "is for gpu flavors");
	if (!jsonx_member(body, "machine_types", "", true, &mts, NULL, 0, e))
		return bad(e);
	if (!json_is_array(mts) || json_array_size(mts) == 0 || json_array_size(mts) > 32)
		return err_field(e, 422, BAD, "/machine_types", "machine_types must be an array of"
		    " 1 to 32 machine types");
	norm = json_array();
	json_array_foreach(mts, i, mt) {
		if (!machine_valid(mt, i, &out, e)) {
			json_decref(norm);
			return false;
		}
		json_array_append_new(norm, out);
		for (j = 0; j < i; j++) {
			json_t *o = json_array_get(norm, j);
			char ptr[64];

			if (strcmp(jsonx_at(o, "provider", NULL), jsonx_at(out, "provider", NULL)) ==
			    0 && strcmp(jsonx_at(o, "machine_type", NULL), jsonx_at(out,
			    "machine_type", NULL)) == 0) {
				json_decref(norm);
				snprintf(ptr, sizeof(ptr), "/machine_types/%zu", i);
				return err_field(e, 422, BAD, ptr, "machine type listed twice");
			}
		}
	}
	*spec = json_pack("{s:s, s:I, s:s, s:I, s:o}", "kind", kind, "memory_gib",
	    (json_int_t)mem, "k8s_resource", res, "rack_size", (json_int_t)rack,
	    "machine_types", norm);
	return true;
}

/* The built-in spec of name (new reference), or NULL when name is not built in. */
static json_t *
builtin_spec(const char *name)
{
	const struct catalog_flavor *f = catalog_builtin_flavor(name);
	struct catalog_machine m;
	json_t *spec, *mts;

	if (f == NULL)
		return NULL;
	mts = json_array();
	for (size_t i = 0; i < catalog_machines_count(); i++) {
		json_t *mt;

		catalog_machine_at(i, &m);
		if (strcmp(m.flavor, name) != 0)
			continue;
		mt = json_pack("{s:s, s:s, s:i, s:i, s:i, s:f, s:f}", "provider", m.provider,
		    "machine_type", m.machine_type, "accelerators_per_node", m.accel_per_node,
		    "vcpus", m.vcpus, "memory_gib", m.memory_gib, "on_demand_hour",
		    m.on_demand_hour, "spot_hour", m.spot_hour);
		if (m.label_key != NULL)
			json_object_set_new(mt, "node_label", json_pack("{s:s, s:s}", "key",
			    m.label_key, "value", m.label_value));
		json_array_append_new(mts, mt);
	}
	spec = json_pack("{s:s, s:i, s:s, s:i, s:o}", "kind", f->kind, "memory_gib",
	    f->memory_gib, "k8s_resource", f->k8s_resource, "rack_size", f->rack_size,
	    "machine_types", mts);
	return spec;
}

/* The API object: spec + name, builtin, overridden, version (0 for an unchanged built-in). */
static json_t *
row_json(const char *name, json_t *spec, bool builtin, bool overridden, long version)
{
	json_t *o = json_deep_copy(spec);

	json_object_set_new(o, "name", json_string(name));
	json_object_set_new(o, "builtin", json_boolean(builtin));
	json_object_set_new(o, "overridden", json_boolean(overridden));
	json_object_set_new(o, "version", json_integer(version));
	return o;
}

static const char row_sql[] = "SELECT json_build_object('spec', spec, 'version', version)::text"
    " FROM flavors WHERE name = $1";
static const char row_lock_sql[] = "SELECT json_build_object('spec', spec, 'version',"
    " version)::text FROM flavors WHERE name = $1 FOR UPDATE";

bool
flavor_get(struct db *c, const char *name, bool lock, json_t **out, struct err *e)
{
	const char *p[1] = { name };
	json_t *row = NULL, *bspec = NULL;
	struct err ignore = { 0 };
	bool ok = false;

	*out = NULL;
	bspec = name != NULL ? builtin_spec(name) : NULL;
	if (name != NULL && db_get_json(c, lock ? row_lock_sql : row_sql, 1, p,
	    "catalog.flavor_not_found", "flavor", &row, &ignore)) {
		*out = row_json(name, json_object_get(row, "spec"), bspec != NULL, bspec != NULL,
		    (long)json_integer_value(json_object_get(row, "version")));
		ok = true;
	} else if (ignore.status != 404 && ignore.status != 0) {
		*e = ignore;
	} else if (bspec != NULL) {
		*out = row_json(name, bspec, true, false, 0);
		ok = true;
	} else
		err_set(e, 404, "catalog.flavor_not_found", "flavor not found");
	json_decref(row);
	json_decref(bspec);
	return ok;
}

static int
by_name(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

bool
flavor_list(struct db *c, int limit, const char *after, json_t **out, struct err *e)
{
	json_t *names = NULL, *v;
	const char **sorted = NULL;
	size_t i, n;
	bool ok = false;

	if (!flavor_sync(c, e))
		return false;
	names = catalog_flavors_list();
	n = json_array_size(names);
	sorted = calloc(n + 1, sizeof(*sorted));
	if (sorted == NULL)
		goto cleanup;
	json_array_foreach(names, i, v)
		sorted[i] = json_string_value(v);
	qsort(sorted, n, sizeof(*sorted), by_name);
	*out = json_array();
	for (i = 0; i < n && (int)json_array_size(*out) < limit; i++) {
		json_t *o;

		if (after != NULL && strcmp(sorted[i], after) <= 0)
			continue;
		if (!flavor_get(c, sorted[i], false, &o, e)) {
			json_decref(*out);
			*out = NULL;
			goto cleanup;
		}
		json_array_append_new(*out, o);
	}
	ok = true;
cleanup:
	free(sorted);
	json_decref(names);
	return ok;
}

/* 409 when a machine type of spec already belongs to a flavor other than name. */
static bool
machines_free(const char *name, json_t *spec, struct err *e)
{
	struct catalog_machine m;
	struct err miss = { 0 };
	json_t *mt;
	size_t i;

	json_array_foreach(json_object_get(spec, "machine_types"), i, mt) {
		char ptr[64];

		if (!catalog_machine_lookup(jsonx_at(mt, "provider", NULL), jsonx_at(mt,
		    "machine_type", NULL), &m, &miss) || strcmp(m.flavor, name) == 0)
			continue;
		snprintf(ptr, sizeof(ptr), "/machine_types/%zu/machine_type", i);
		err_field(e, 409, "catalog.machine_taken", ptr, "machine type belongs to "
		    "another flavor");
		return err_detail(e, "%s %s is a machine type of flavor %s; change that flavor "
		    "first.", m.provider, m.machine_type, m.flavor);
	}
	return true;
}

bool
flavor_put(struct db *c, const char *name, json_t *body, bool *created, json_t **out,
    struct err *e)
{
	static const char sql[] = "INSERT INTO flavors (name, spec) VALUES ($1, $2::jsonb)"
	    " ON CONFLICT (name) DO UPDATE SET spec = excluded.spec, version = flavors.version"
	    " + 1, updated_at = now() WHERE flavors.spec IS DISTINCT FROM excluded.spec"
	    " RETURNING (xmax = 0)::text";
	json_t *spec = NULL;
	PGresult *r = NULL;
	char *text = NULL;
	bool ok = false;

	*created = false;
	if (!flavor_spec_valid(name, body, &spec, e) || !flavor_sync(c, e) ||
	    !machines_free(name, spec, e))
		goto cleanup;
	text = json_dumps(spec, JSON_COMPACT | JSON_SORT_KEYS);
	{
		const char *p[2] = { name, text };

		if (!db_exec(c, sql, 2, p, &r, e))
			goto cleanup;
	}
	*created = PQntuples(r) == 1 && strcmp(PQgetvalue(r, 0, 0), "true") == 0;
	ok = flavor_get(c, name, false, out, e);
cleanup:
	PQclear(r);
	free(text);
	json_decref(spec);
	return ok;
}

bool
flavor_delete(struct db *c, const char *name, struct err *e)
{
	static const char sql[] = "DELETE FROM flavors WHERE name = $1";
	/* an added flavor that queues or unfinished jobs still name stays (an override may
	 * go: the built-in of the same name takes its place) */
	static const char sql_used[] = "SELECT (SELECT count(*) FROM queues WHERE"
	    " nominal_quota ? $1 OR borrowing_limit ? $1 OR lending_limit ? $1) + (SELECT"
	    " count(*) FROM jobs WHERE state NOT IN ('succeeded', 'failed', 'cancelled') AND"
	    " EXISTS (SELECT 1 FROM jsonb_array_elements(spec->'worker_groups') g WHERE"
	    " g->'accelerator'->>'flavor' = $1))";
	const char *p[1] = { name };
	PGresult *r = NULL;
	long long used = 0;
	bool gone;

	if (catalog_builtin_flavor(name) == NULL) {
		if (!db_count(c, sql_used, 1, p, &used, e))
			return false;
		if (used > 0)
			return err_set(e, 409, "catalog.flavor_in_use", "flavor is named by %lld "
			    "queues or unfinished jobs", used);
	}
	if (!db_exec(c, sql, 1, p, &r, e))
		return false;
	gone = atoi(PQcmdTuples(r)) > 0;
	PQclear(r);
	if (gone)
		return true;
	if (catalog_builtin_flavor(name) != NULL)
		return err_set(e, 409, "catalog.builtin_flavor", "built-in flavors can be "
		    "overridden, not deleted");
	return err_set(e, 404, "catalog.flavor_not_found", "flavor not found");
}
