/* job_update: the request side of a running job's spec update. What may change depends on
 * the kind, as KubeRay applies it: a RayService takes a new image, serve config, worker
 * groups or autoscaler options (a change of its Ray cluster is a zero-downtime upgrade with
 * a new cluster, so the old spec's footprint is held until it completes); a RayCluster
 * takes new worker group sizes (in place); RayJob and RayCronJob take nothing. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "providers/jobspec.h"
#include "queue/job.h"
#include "queue/job_update.h"

static const char *const service_fields[] = { "image", "serve_config", "worker_groups",
	"autoscaler", NULL };
static const char *const size_fields[] = { "replicas", "min_replicas", "max_replicas", NULL };

static bool
listed(const char *const *l, const char *k)
{
	for (; *l != NULL; l++)
		if (strcmp(*l, k) == 0)
			return true;
	return false;
}

/* First member of a or b (objects) that differs and is not in allowed; NULL: none. */
static const char *
first_other_diff(json_t *a, json_t *b, const char *const *allowed)
{
	const char *k;
	json_t *v;

	json_object_foreach(a, k, v)
		if (!json_equal(v, json_object_get(b, k)) && !listed(allowed, k))
			return k;
	json_object_foreach(b, k, v)
		if (json_object_get(a, k) == NULL && !listed(allowed, k))
			return k;
	return NULL;
}

/* RayCluster: the same groups, in the same order, only their sizes differ. */
static bool
sizes_only(json_t *old, json_t *new, struct err *e)
{
	json_t *og = json_object_get(old, "worker_groups"), *ng = json_object_get(new,
	    "worker_groups");
	char ptr[96];

	if (json_array_size(og) != json_array_size(ng))
		return err_field(e, 422, "job.field_immutable", "/worker_groups",
		    "a running RayCluster keeps its worker groups: only their sizes change");
	for (size_t i = 0; i < json_array_size(og); i++) {
		const char *k = first_other_diff(json_array_get(og, i), json_array_get(ng, i),
		    size_fields);

		if (k == NULL)
			continue;
		snprintf(ptr, sizeof(ptr), "/worker_groups/%zu/%s", i, k);
		return err_field(e, 422, "job.field_immutable", ptr,
		    "%s cannot change on a running RayCluster: only replicas, min_replicas and "
		    "max_replicas", k);
	}
	return true;
}

static const char sql_open[] =
    "SELECT coalesce(spec_update->>'phase', ''), coalesce((spec_update->>'generation')::int, 0)"
    " FROM jobs WHERE id = $1::uuid";
static const char sql_write[] =
    "UPDATE jobs SET spec = $2::jsonb, spec_update = jsonb_build_object('generation', $3::int,"
    " 'phase', 'pending', 'fields', $4::jsonb, 'upgrade', $5::boolean, 'old_spec', spec,"
    " 'requested_at', now(), 'next_at', now()), version = version + 1, updated_at = now()"
    " WHERE id = $1::uuid";

bool
job_update_spec(struct db *c, json_t *job, json_t *body, bool *changed, struct err *e)
{
	const char *id = json_string_value(json_object_get(job, "id"));
	const char *state = json_string_value(json_object_get(job, "state"));
	const char *kind = json_string_value(json_object_get(job, "kind"));
	const char *env = json_string_value(json_object_get(job, "environment"));
	json_t *old = json_object_get(job, "spec"), *in = NULL, *new = NULL, *fields = NULL;
	struct job_spec s;
	PGresult *r = NULL;
	const char *k, *bad;
	json_t *v;
	char gen[16], *fs = NULL, *ns = NULL;
	bool ok = false, upgrade = false;

	memset(&s, 0, sizeof(s));
	*changed = false;
	if (strcmp(kind, "RayJob") == 0 || strcmp(kind, "RayCronJob") == 0)
		return err_field(e, 409, "job.update_not_allowed", "/kind",
		    "a %s cannot change once submitted: cancel it and submit again", kind);
	if (strcmp(state, "running") != 0 && strcmp(state, "dispatched") != 0)
		return err_set(e, 409, "job.state", "only a dispatched or running job takes a "
		    "spec update (this one is %s)", state);
	if (!db_exec(c, sql_open, 1, &id, &r, e))
		return false;
	if (PQntuples(r) == 1 && (strcmp(PQgetvalue(r, 0, 0), "pending") == 0 ||
	    strcmp(PQgetvalue(r, 0, 0), "upgrading") == 0)) {
		err_set(e, 409, "job.update_in_progress", "an update of this job is still being "
		    "applied (%s)", PQgetvalue(r, 0, 0));
		goto cleanup;
	}
	snprintf(gen, sizeof(gen), "%d", PQntuples(r) == 1 ? atoi(PQgetvalue(r, 0, 1)) + 1 : 1);
	if (!json_is_object(body)) {
		err_field(e, 400, "api.not_object", "", "job spec must be a json object");
		goto cleanup;
	}
	in = json_deep_copy(body);
	v = json_object_get(in, "environment");
	if (v != NULL && (!json_is_string(v) || strcmp(json_string_value(v), env) != 0)) {
		err_field(e, 422, "job.field_immutable", "/environment",
		    "environment cannot change on a running job");
		goto cleanup;
	}
	json_object_del(in, "environment");
	if (!jobspec_from_json(in, &s, e))
		goto cleanup;
	new = jobspec_to_json(&s);
	/* priority_class is kept as submitted: absent means unchanged */
	if (json_object_get(new, "priority_class") == NULL &&
	    json_object_get(old, "priority_class") != NULL)
		json_object_set(new, "priority_class", json_object_get(old, "priority_class"));
	bad = first_other_diff(old, new, strcmp(kind, "RayService") == 0 ? service_fields :
	    (const char *const[]){ "worker_groups", NULL });
	if (bad != NULL) {
		char ptr[64];

		snprintf(ptr, sizeof(ptr), "/%s", bad);
		err_field(e, 422, "job.field_immutable", ptr, "%s cannot change on a running %s",
		    bad, kind);
		goto cleanup;
	}
	if (strcmp(kind, "RayCluster") == 0 && !sizes_only(old, new, e))
		goto cleanup;
	fields = json_array();
	json_object_foreach(new, k, v)
		if (!json_equal(v, json_object_get(old, k)))
			json_array_append_new(fields, json_string(k));
	json_object_foreach(old, k, v)
		if (json_object_get(new, k) == NULL)
			json_array_append_new(fields, json_string(k));
	if (json_array_size(fields) == 0) {
		ok = true;
		goto cleanup;
	}
	/* KubeRay upgrades a RayService with a new Ray cluster when anything of the cluster
	 * changes but the sizes; a serve config alone is applied in place */
	if (strcmp(kind, "RayService") == 0) {
		json_t *a = json_deep_copy(old), *b = json_deep_copy(new);

		json_object_del(a, "serve_config");
		json_object_del(b, "serve_config");
		upgrade = !json_equal(a, b);
		json_decref(a);
		json_decref(b);
	}
	fs = json_dumps(fields, JSON_COMPACT);
	ns = json_dumps(new, JSON_COMPACT | JSON_SORT_KEYS);
	{
		const char *p[5] = { id, ns, gen, fs, upgrade ? "true" : "false" };
		json_t *data = json_pack("{s:O, s:b, s:i}", "fields", fields, "upgrade", upgrade,
		    "generation", atoi(gen));
		bool w = db_exec(c, sql_write, 5, p, NULL, e) &&
		    job_event(c, id, "spec_update_requested", upgrade ? "spec update requested: "
		    "zero-downtime upgrade with a new Ray cluster" : "spec update requested",
		    data, e);

		json_decref(data);
		if (!w)
			goto cleanup;
	}
	*changed = true;
	ok = true;
cleanup:
	jobspec_cleanup(&s);
	PQclear(r);
	json_decref(in);
	json_decref(new);
	json_decref(fields);
	free(fs);
	free(ns);
	return ok;
}
