/* queue: rows of queues (queue_*) and of the priority classes they use (queue_pc_*),
 * validated field by field. */
#include <stdlib.h>
#include <string.h>

#include <uuid/uuid.h>

#include "core/jsonx.h"
#include "iam/team.h"
#include "queue/job_state.h"
#include "providers/jobspec.h"
#include "queue/jobs/queue.h"
#include "regions/catalog.h"
#include "regions/flavor.h"
#include "regions/env.h"

#define PC_JSON "json_build_object('id', id, 'name', name, 'value', value, 'preempt', preempt," \
	" 'description', description, 'version', version, 'created_at', created_at," \
	" 'updated_at', updated_at)::text"
#define QUEUE_JSON "json_build_object('id', id, 'name', name, 'environment', environment," \
	" 'cohort', cohort, 'weight', weight, 'nominal_quota', nominal_quota," \
	" 'borrowing_limit', borrowing_limit, 'lending_limit', lending_limit," \
	" 'default_priority_class', default_priority_class, 'queueing_strategy'," \
	" queueing_strategy, 'max_infra_retries', max_infra_retries, 'team', team," \
	" 'capacity_preference', capacity_preference," \
	" 'version', version, 'created_at', created_at, 'updated_at', updated_at)::text"

/* ---- priority classes */

static bool
pc_unpack(json_t *body, const char **name, long long *value, bool *preempt,
	  const char **desc, struct err *e)
{
	static const char *const allowed[] = { "name", "value", "preempt", "description", NULL };

	*preempt = false;
	*desc = "";
	if (!jsonx_only(body, allowed, "", e) || !jsonx_str(body, "name", "", true, name, e) ||
	    !jsonx_int(body, "value", "", true, value, e) ||
	    !jsonx_bool(body, "preempt", "", false, preempt, e) ||
	    !jsonx_str(body, "description", "", false, desc, e))
		return false;
	if (!jsonx_name_ok(*name, 63))
		return err_field(e, 400, "pc.bad_name", "/name",
		    "name must match ^[a-z][a-z0-9-]{1,62}$");
	if (*value < -1000000000LL || *value > 1000000000LL)
		return err_field(e, 400, "pc.bad_value", "/value",
		    "value must be between -1000000000 and 1000000000");
	if (*desc != NULL && strlen(*desc) > 1024)
		return err_field(e, 400, "pc.bad_description", "/description",
		    "description must be at most 1024 bytes");
	return true;
}

bool
queue_pc_create(struct db *c, json_t *body, json_t **out, struct err *e)
{
	static const char sql[] = "INSERT INTO priority_classes (id, name, value, preempt,"
	    " description) VALUES ($1, $2, $3::int, $4::boolean, $5)"
	    " ON CONFLICT (name) DO NOTHING RETURNING " PC_JSON;
	const char *name, *desc;
	long long value;
	bool preempt;
	char id[37], v[24];
	uuid_t u;

	if (!pc_unpack(body, &name, &value, &preempt, &desc, e))
		return false;
	uuid_generate_random(u);
	uuid_unparse_lower(u, id);
	snprintf(v, sizeof(v), "%lld", value);
	{
		const char *p[5] = { id, name, v, preempt ? "true" : "false", desc ? desc : "" };

		if (!db_get_json(c, sql, 5, p, "pc.not_found", "priority class", out, e))
			return e->status == 404 ? err_field(e, 409, "pc.exists", "/name",
			    "priority class %s already exists", name) : false;
	}
	return true;
}

bool
queue_pc_get(struct db *c, const char *id, bool for_update, json_t **out, struct err *e)
{
	static const char *const sql[2][2] = {
		{ "SELECT " PC_JSON " FROM priority_classes WHERE name = $1",
		  "SELECT " PC_JSON " FROM priority_classes WHERE name = $1 FOR UPDATE" },
		{ "SELECT " PC_JSON " FROM priority_classes WHERE id = $1::uuid",
		  "SELECT " PC_JSON " FROM priority_classes WHERE id = $1::uuid FOR UPDATE" },
	};
	const char *p[1] = { id };

	return db_get_json(c, sql[db_uuid_ok(id)][for_update], 1, p, "pc.not_found",
	    "priority class", out, e);
}

bool
queue_pc_list(struct db *c, int limit, const char *after, json_t **out, struct err *e)
{
	static const char sql[] = "SELECT " PC_JSON " FROM priority_classes WHERE name > $1"
	    " ORDER BY name LIMIT $2";
	char lim[16];
	const char *p[2] = { after ? after : "", lim };

	snprintf(lim, sizeof(lim), "%d", limit);
	return db_list_json(c, sql, 2, p, out, e);
}

bool
queue_pc_replace(struct db *c, const char *id, json_t *body, json_t **out, struct err *e)
{
	static const char sql[] = "UPDATE priority_classes SET value = $2::int,"
	    " preempt = $3::boolean, description = $4, version = version + 1, updated_at = now()"
	    " WHERE id = $1::uuid AND (value, preempt, description) IS DISTINCT FROM"
	    " ($2::int, $3::boolean, $4)";
	json_t *cur = NULL;
	const char *name, *desc;
	long long value;
	bool preempt, ok = false;
	char v[24];

	if (!queue_pc_get(c, id, false, &cur, e))
		return false;
	if (!pc_unpack(body, &name, &value, &preempt, &desc, e))
		goto cleanup;
	if (strcmp(name, json_string_value(json_object_get(cur, "name"))) != 0) {
		err_field(e, 409, "pc.immutable", "/name", "name is immutable");
		goto cleanup;
	}
	snprintf(v, sizeof(v), "%lld", value);
	{
		const char *p[4] = { json_string_value(json_object_get(cur, "id")), v,
		    preempt ? "true" : "false", desc ? desc : "" };

		ok = db_exec(c, sql, 4, p, NULL, e) && queue_pc_get(c, p[0], false, out, e);
	}
cleanup:
	json_decref(cur);
	return ok;
}

bool
queue_pc_delete(struct db *c, const char *id, struct err *e)
{
	static const char sql[] = "DELETE FROM priority_classes p WHERE p.id = $1::uuid"
	    " AND NOT EXISTS (SELECT 1 FROM jobs j WHERE j.priority_class = p.name AND j.state"
	    " NOT IN " JOB_STATES_FINAL_SQL ")"
	    " AND NOT EXISTS (SELECT 1 FROM queues q WHERE q.default_priority_class = p.name)"
	    " RETURNING 1";
	const char *p[1] = { id };
	PGresult *r = NULL;
	bool ok;

	if (!db_uuid_ok(id))
		return err_set(e, 404, "pc.not_found", "priority class not found");
	ok = db_exec(c, sql, 1, p, &r, e);
	if (ok && PQntuples(r) == 0)
		ok = err_set(e, 409, "pc.in_use",
		    "queues or unfinished jobs use this priority class");
	PQclear(r);
	return ok;
}

/* ---- queues */

/* {flavor: non-negative integer} with known flavors. */
static bool
quota_valid(json_t *q, const char *ptr, struct err *e)
{
	const char *k;
	json_t *v;

	if (q == NULL)
		return true;
	if (!json_is_object(q))
		return err_field(e, 400, "api.wrong_type", ptr, "%s must be an object of "
		    "flavor: accelerators", ptr + 1);
	json_object_foreach(q, k, v) {
		char fp[160];

		snprintf(fp, sizeof(fp), "%s/%.100s", ptr, k);
		if (!catalog_flavor_check(k, fp, e))
			return false;
		if (!json_is_integer(v) || json_integer_value(v) < 0 ||
		    json_integer_value(v) > 10000000)
			return err_field(e, 400, "queue.bad_quota", fp,
			    "quota values are non-negative integers of accelerators");
	}
	return true;
}

struct queue_fields {
	const char	*name, *env, *cohort, *pc, *strategy, *team;
	double		 weight;
	char		*nominal, *borrow, *lend;	/* malloc'd json text */
	char		*prefs;		/* capacity_preference, canonical json text; NULL none */
	char		 retries[16];		/* max_infra_retries, default 3 */
};

static void
fields_cleanup(struct queue_fields *f)
{
	free(f->nominal);
	free(f->borrow);
	free(f->lend);
	free(f->prefs);
}

static bool
queue_unpack(struct db *c, json_t *body, struct queue_fields *f, struct err *e)
{
	static const char *const allowed[] = { "name", "environment", "cohort", "weight",
		"nominal_quota", "borrowing_limit", "lending_limit", "default_priority_class",
		"queueing_strategy", "max_infra_retries", "team", "capacity_preference", NULL };
	long long retries = 3;
	struct jobspec_capacity cap;
	json_t *nq = json_object_get(body, "nominal_quota");
	json_t *bl = json_object_get(body, "borrowing_limit");
	json_t *ll = json_object_get(body, "lending_limit");

	memset(f, 0, sizeof(*f));
	f->weight = 1;
	f->strategy = "best_effort_fifo";
	if (!jsonx_only(body, allowed, "", e) || !jsonx_str(body, "name", "", true, &f->name, e) ||
	    !jsonx_str(body, "environment", "", true, &f->env, e) ||
	    !jsonx_str(body, "cohort", "", false, &f->cohort, e) ||
	    !jsonx_num(body, "weight", "", false, &f->weight, e) ||
	    !jsonx_str(body, "default_priority_class", "", false, &f->pc, e) ||
	    !jsonx_str(body, "queueing_strategy", "", false, &f->strategy, e) ||
	    !jsonx_int(body, "max_infra_retries", "", false, &retries, e) ||
	    !jsonx_str(body, "team", "", false, &f->team, e))
		return false;
	if (retries < 0 || retries > 100)
		return err_field(e, 400, "queue.bad_retries", "/max_infra_retries",
		    "max_infra_retries must be between 0 and 100");
	snprintf(f->retries, sizeof(f->retries), "%lld", retries);
	if (!jsonx_name_ok(f->name, 63))
		return err_field(e, 400, "queue.bad_name", "/name",
		    "name must match ^[a-z][a-z0-9-]{1,62}$");
	if (f->cohort != NULL && !jsonx_name_ok(f->cohort, 63))
		return err_field(e, 400, "queue.bad_cohort", "/cohort",
		    "cohort must match ^[a-z][a-z0-9-]{1,62}$");
	if (!(f->weight > 0 && f->weight <= 1000))
		return err_field(e, 400, "queue.bad_weight", "/weight",
		    "weight must be greater than 0 and at most 1000");
	if (strcmp(f->strategy, "best_effort_fifo") != 0 &&
	    strcmp(f->strategy, "strict_fifo") != 0)
		return err_field(e, 400, "queue.bad_strategy", "/queueing_strategy",
		    "queueing_strategy must be best_effort_fifo or strict_fifo");
	if (f->team != NULL && !team_check_queue(c, f->team, f->env, e))
		return false;
	/* ranked capacity types for the queue's jobs (issue 27; queue/sched/sched_prefs.c) */
	if (!jobspec_capacity_from_json(json_object_get(body, "capacity_preference"),
	    "/capacity_preference", &cap, e))
		return false;
	if (cap.n > 0) {
		json_t *pj = jobspec_capacity_to_json(&cap);

		f->prefs = json_dumps(pj, JSON_COMPACT | JSON_SORT_KEYS);
		json_decref(pj);
	}
	if (!flavor_sync(c, e) || !quota_valid(nq, "/nominal_quota", e) ||
	    !quota_valid(bl, "/borrowing_limit", e) ||
	    !quota_valid(ll, "/lending_limit", e))
		return false;
	if (f->pc != NULL) {
		json_t *pc = NULL;

		if (!queue_pc_get(c, f->pc, false, &pc, e)) {
			if (e->status == 404)
				err_field(e, 404, "pc.not_found", "/default_priority_class",
				    "priority class %.64s not found", f->pc);
			return false;
		}
		json_decref(pc);
	}
	f->nominal = (nq ? json_dumps(nq, JSON_COMPACT | JSON_SORT_KEYS) : strdup("{}"));
	f->borrow = (bl ? json_dumps(bl, JSON_COMPACT | JSON_SORT_KEYS) : strdup("{}"));
	f->lend = (ll ? json_dumps(ll, JSON_COMPACT | JSON_SORT_KEYS) : strdup("{}"));
	return true;
}

bool
queue_create(struct db *c, json_t *body, json_t **out, struct err *e)
{
	static const char sql[] = "INSERT INTO queues (id, name, environment, cohort, weight,"
	    " nominal_quota, borrowing_limit, lending_limit, default_priority_class,"
	    " queueing_strategy, max_infra_retries, team, capacity_preference) VALUES ($1, $2,"
	    " $3, $4, $5::float8, $6::jsonb, $7::jsonb, $8::jsonb, $9, $10, $11::int, $12,"
	    " $13::jsonb)"
	    " ON CONFLICT (environment, name) DO NOTHING RETURNING " QUEUE_JSON;
	struct queue_fields f;
	json_t *env = NULL;
	char id[37], w[32];
	uuid_t u;
	bool ok = false;

	if (!queue_unpack(c, body, &f, e))
		goto cleanup;
	if (!env_get(c, f.env, false, &env, e)) {
		if (e->status == 404)
			snprintf(e->pointer, sizeof(e->pointer), "/environment");
		goto cleanup;
	}
	uuid_generate_random(u);
	uuid_unparse_lower(u, id);
	snprintf(w, sizeof(w), "%.17g", f.weight);
	{
		const char *p[13] = { id, f.name, f.env, f.cohort, w, f.nominal, f.borrow, f.lend,
		    f.pc, f.strategy, f.retries, f.team, f.prefs };

		if (!db_get_json(c, sql, 13, p, "queue.not_found", "queue", out, e)) {
			if (e->status == 404)
				err_field(e, 409, "queue.exists", "/name",
				    "environment %s already has a queue named %s", f.env, f.name);
			goto cleanup;
		}
	}
	ok = true;
cleanup:
	json_decref(env);
	fields_cleanup(&f);
	return ok;
}

bool
queue_get(struct db *c, const char *id, bool for_update, json_t **out, struct err *e)
{
	static const char sql[] = "SELECT " QUEUE_JSON " FROM queues WHERE id = $1::uuid";
	static const char sql_lock[] = "SELECT " QUEUE_JSON " FROM queues WHERE id = $1::uuid"
	    " FOR UPDATE";
	return db_get_id_json(c, for_update ? sql_lock : sql, id, "queue.not_found", "queue",
	    out, e);
}

bool
queue_get_by_name(struct db *c, const char *env, const char *name, json_t **out,
		  struct err *e)
{
	static const char sql[] = "SELECT " QUEUE_JSON " FROM queues WHERE environment = $1"
	    " AND name = $2";
	const char *p[2] = { env, name };

	if (!db_get_json(c, sql, 2, p, "queue.not_found", "queue", out, e)) {
		if (e->status == 404)
			err_field(e, 404, "queue.not_found", "/queue", "queue %.64s not found in "
			    "environment %.64s", name, env);
		return false;
	}
	return true;
}

bool
queue_for_submit(struct db *c, const char *env, const char *name, const char *pc,
		 struct queue_submit *out, struct err *e)
{
	/* the priority class's columns are unqualified inside its subquery: priority_classes
	 * is the nearest scope there */
	static const char sql[] = "SELECT " QUEUE_JSON ", (SELECT " PC_JSON " FROM"
	    " priority_classes WHERE name = coalesce($3, q.default_priority_class)),"
	    " (SELECT gen FROM catalog_generation),"
	    " EXISTS (SELECT 1 FROM budgets b WHERE b.environment = $1)"
	    " FROM queues q WHERE q.environment = $1 AND q.name = $2";
	const char *p[3] = { env, name, pc };
	PGresult *r = NULL;
	bool ok = false;

	memset(out, 0, sizeof(*out));
	if (!db_exec(c, sql, 3, p, &r, e))
		return false;
	if (PQntuples(r) == 0) {
		err_field(e, 404, "queue.not_found", "/queue", "queue %.64s not found in "
		    "environment %.64s", name, env);
		goto cleanup;
	}
	out->queue = json_loads(PQgetvalue(r, 0, 0), 0, NULL);
	out->pc = PQgetisnull(r, 0, 1) ? NULL : json_loads(PQgetvalue(r, 0, 1), 0, NULL);
	out->catalog_gen = atoll(PQgetvalue(r, 0, 2));
	out->budgets = strcmp(PQgetvalue(r, 0, 3), "t") == 0;
	if (out->queue == NULL || (!PQgetisnull(r, 0, 1) && out->pc == NULL)) {
		err_set(e, 500, "db.bad_row", "cannot read the queue");
		goto cleanup;
	}
	ok = true;
cleanup:
	if (!ok)
		queue_submit_cleanup(out);
	PQclear(r);
	return ok;
}

void
queue_submit_cleanup(struct queue_submit *q)
{
	json_decref(q->queue);
	json_decref(q->pc);
	memset(q, 0, sizeof(*q));
}

bool
queue_list(struct db *c, int limit, const char *after, const char *environment,
	   const char *team, const char *const *envs, int nenvs, json_t **out, struct err *e)
{
	static const char sql[] = "SELECT " QUEUE_JSON " FROM queues"
	    " WHERE ($1 = '' OR id > $1::uuid) AND ($3::text IS NULL OR environment = $3)"
	    " AND ($4::text IS NULL OR team = $4)"
	    " AND ($5::text[] IS NULL OR environment = ANY($5::text[])) ORDER BY id LIMIT $2";
	const char *f[2] = { environment, team };

	return db_list_page(c, sql, limit, after, DB_CURSOR_UUID, f, 2, envs, nenvs, out, e);
}

bool
queue_replace(struct db *c, const char *id, json_t *body, json_t **out, struct err *e)
{
	static const char sql[] = "UPDATE queues SET cohort = $2, weight = $3::float8,"
	    " nominal_quota = $4::jsonb, borrowing_limit = $5::jsonb, lending_limit = $6::jsonb,"
	    " default_priority_class = $7, queueing_strategy = $8, max_infra_retries = $9::int,"
	    " team = $10, capacity_preference = $11::jsonb, version = version + 1,"
	    " updated_at = now() WHERE id = $1::uuid AND"
	    " (cohort, weight, nominal_quota, borrowing_limit, lending_limit,"
	    " default_priority_class, queueing_strategy, max_infra_retries, team,"
	    " capacity_preference) IS DISTINCT"
	    " FROM ($2, $3::float8, $4::jsonb, $5::jsonb, $6::jsonb, $7, $8, $9::int, $10,"
	    " $11::jsonb)";
	struct queue_fields f;
	json_t *cur = NULL;
	char w[32];
	bool ok = false;

	memset(&f, 0, sizeof(f));
	if (!queue_get(c, id, false, &cur, e) || !queue_unpack(c, body, &f, e))
		goto cleanup;
	if (strcmp(f.name, json_string_value(json_object_get(cur, "name"))) != 0) {
		err_field(e, 409, "queue.immutable", "/name", "name is immutable");
		goto cleanup;
	}
	if (strcmp(f.env, json_string_value(json_object_get(cur, "environment"))) != 0) {
		err_field(e, 409, "queue.immutable", "/environment", "environment is immutable");
		goto cleanup;
	}
	snprintf(w, sizeof(w), "%.17g", f.weight);
	{
		const char *p[11] = { id, f.cohort, w, f.nominal, f.borrow, f.lend, f.pc,
		    f.strategy, f.retries, f.team, f.prefs };

		ok = db_exec(c, sql, 11, p, NULL, e) && queue_get(c, id, false, out, e);
	}
cleanup:
	json_decref(cur);
	fields_cleanup(&f);
	return ok;
}

bool
queue_delete(struct db *c, const char *id, struct err *e)
{
	static const char sql_used[] = "SELECT count(*) FROM jobs WHERE queue_id = $1::uuid"
	    " AND state NOT IN " JOB_STATES_FINAL_SQL;
	static const char *const sql_del[] = { "DELETE FROM jobs WHERE queue_id = $1::uuid;",
	    "DELETE FROM queues WHERE id = $1::uuid" };

	if (!db_uuid_ok(id))
		return err_set(e, 404, "queue.not_found", "queue not found");
	return db_delete_unused(c, id, sql_used, "queue.in_use",
	    "the queue holds %lld unfinished jobs", sql_del, 2, e);
}
