/* cost: the showback report over cost_runs() (migration 0019: what ran, where, how long,
 * at what price) and the rows of price overrides.  Nothing here decides admission:
 * budget.c does, with cost_spent(). */
#include <pthread.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <uuid/uuid.h>

#include "core/jsonx.h"
#include "core/log.h"
#include "core/textbuf.h"
#include "queue/cost/cost.h"

#define PRICE_JSON "json_build_object('id', id, 'environment', environment, 'provider'," \
	" provider, 'region', region, 'machine_type', machine_type, 'spot', spot," \
	" 'price_hour', price_hour, 'note', note, 'version', version, 'created_at'," \
	" created_at, 'updated_at', updated_at)::text"

/* The window of a report: from and to as given, or the current UTC month so far. */
#define WINDOW "coalesce($1::timestamptz, date_trunc('month', now() AT TIME ZONE 'UTC')" \
	" AT TIME ZONE 'UTC') AS t0, coalesce($2::timestamptz, now()) AS t1"

bool
cost_time_ok(const char *s)
{
	static const char re_s[] = "^[0-9]{4}-[0-9]{2}-[0-9]{2}"
	    "(T[0-9]{2}:[0-9]{2}(:[0-9]{2}(\\.[0-9]{1,9})?)?(Z|[+-][0-9]{2}:?[0-9]{2})?)?$";
	regex_t re;
	bool ok;

	if (s == NULL || strlen(s) > 40 || regcomp(&re, re_s, REG_EXTENDED | REG_NOSUB) != 0)
		return false;
	ok = regexec(&re, s, 0, NULL, 0) == 0;
	regfree(&re);
	return ok;
}

/* from and to checked (400 at /query/<name>); from must be before to. */
static bool
window_ok(const char *from, const char *to, struct err *e)
{
	if (from != NULL && !cost_time_ok(from))
		return err_field(e, 400, "cost.bad_time", "/query/from",
		    "from must be an RFC 3339 time or a date");
	if (to != NULL && !cost_time_ok(to))
		return err_field(e, 400, "cost.bad_time", "/query/to",
		    "to must be an RFC 3339 time or a date");
	return true;
}

bool
cost_report(struct db *c, const char *group_by, const char *from, const char *to,
	    const char *environment, const char *const *envs, int nenvs, json_t **out,
	    struct err *e)
{
	/* group_by is one of the names below (checked), so the CASE picks a column; the
	 * environment goes with every key that is not global (queues of two environments
	 * may share a name) */
	static const char sql[] = "WITH w AS (SELECT " WINDOW "),"
	    " r AS (SELECT x.*, CASE $3 WHEN 'queue' THEN x.queue WHEN 'environment' THEN"
	    "  x.environment WHEN 'provider' THEN x.provider WHEN 'region' THEN x.region"
	    "  WHEN 'cluster' THEN x.cluster_name ELSE coalesce(x.team, '') END AS key,"
	    "  CASE WHEN $3 IN ('queue', 'team', 'cluster') THEN x.environment END AS env"
	    "  FROM w, LATERAL cost_runs(w.t0, w.t1) x"
	    "  WHERE ($4::text IS NULL OR x.environment = $4)"
	    "  AND ($5::text[] IS NULL OR x.environment = ANY($5::text[])))"
	    " SELECT json_build_object('group_by', $3::text, 'from', w.t0, 'to', w.t1,"
	    "  'items', coalesce((SELECT json_agg(json_build_object('key', g.key,"
	    "   'environment', g.env, 'gpu_hours', g.gh, 'dollars', g.d, 'runs', g.n,"
	    "   'jobs', g.j) ORDER BY g.d DESC, g.env, g.key) FROM (SELECT key, env,"
	    "   sum(gpu_hours) AS gh, sum(dollars) AS d, count(*) AS n,"
	    "   count(DISTINCT job_id) AS j FROM r GROUP BY key, env) g), '[]'::json),"
	    "  'total', (SELECT json_build_object('gpu_hours', coalesce(sum(gpu_hours), 0),"
	    "   'dollars', coalesce(sum(dollars), 0)) FROM r))::text FROM w";
	static const char *const groups[] = { "queue", "environment", "provider", "region",
		"team", "cluster", NULL };
	char *scope = db_scope_array(envs, nenvs);
	bool ok, known = false;

	if (group_by == NULL)
		group_by = "queue";
	for (int i = 0; groups[i] != NULL; i++)
		known = known || strcmp(groups[i], group_by) == 0;
	if (!known) {
		free(scope);
		return err_field(e, 400, "cost.bad_group_by", "/query/group_by",
		    "group_by must be queue, environment, provider, region, team or cluster");
	}
	if (!window_ok(from, to, e)) {
		free(scope);
		return false;
	}
	{
		const char *p[5] = { from, to, group_by, environment, scope };

		ok = db_get_json(c, sql, 5, p, "cost.none", "costs", out, e);
	}
	free(scope);
	return ok;
}

bool
cost_runs_list(struct db *c, const char *from, const char *to, const char *environment,
	       const char *const *envs, int nenvs, int limit, json_t **out, struct err *e)
{
	static const char sql[] = "WITH w AS (SELECT " WINDOW ")"
	    " SELECT json_build_object('job_id', x.job_id, 'attempt', x.attempt,"
	    " 'environment', x.environment, 'queue', x.queue, 'team', x.team, 'provider',"
	    " x.provider, 'region', x.region, 'cluster', x.cluster_name, 'pool', x.pool,"
	    " 'machine_type', x.machine_type, 'spot', x.spot, 'accel', x.accel, 'started_at',"
	    " x.started_at, 'ended_at', x.ended_at, 'gpu_hours', x.gpu_hours, 'price_hour',"
	    " x.price_hour, 'price_source', x.price_source, 'dollars', x.dollars)::text"
	    " FROM w, LATERAL cost_runs(w.t0, w.t1) x"
	    " WHERE ($3::text IS NULL OR x.environment = $3)"
	    " AND ($4::text[] IS NULL OR x.environment = ANY($4::text[]))"
	    " ORDER BY x.started_at DESC, x.job_id LIMIT $5::int";
	char *scope = db_scope_array(envs, nenvs), lim[16];
	bool ok;

	if (!window_ok(from, to, e)) {
		free(scope);
		return false;
	}
	snprintf(lim, sizeof(lim), "%d", limit);
	{
		const char *p[5] = { from, to, environment, scope, lim };

		ok = db_list_json(c, sql, 5, p, out, e);
	}
	free(scope);
	return ok;
}

/* The members of a price override's body. */
struct price_in {
	const char	*env, *provider, *region, *machine, *note;
	bool		 spot;
	double		 price;
};

static bool
price_unpack(json_t *body, struct price_in *in, struct err *e)
{
	static const char *const allowed[] = { "environment", "provider", "region",
		"machine_type", "spot", "price_hour", "note", NULL };

	memset(in, 0, sizeof(*in));
	in->note = "";
	if (!jsonx_only(body, allowed, "", e) ||
	    !jsonx_str(body, "environment", "", true, &in->env, e) ||
	    !jsonx_str(body, "provider", "", true, &in->provider, e) ||
	    !jsonx_str(body, "region", "", true, &in->region, e) ||
	    !jsonx_str(body, "machine_type", "", true, &in->machine, e) ||
	    !jsonx_bool(body, "spot", "", false, &in->spot, e) ||
	    !jsonx_num(body, "price_hour", "", true, &in->price, e) ||
	    !jsonx_str(body, "note", "", false, &in->note, e))
		return false;
	if (in->note == NULL)
		in->note = "";
	if (strcmp(in->provider, "gke") != 0 && strcmp(in->provider, "aks") != 0 &&
	    strcmp(in->provider, "hyperpod") != 0)
		return err_field(e, 422, "price.bad_provider", "/provider",
		    "provider must be gke, aks or hyperpod");
	if (in->region[0] == '\0' || strlen(in->region) > 64)
		return err_field(e, 422, "price.bad_region", "/region",
		    "region must be 1 to 64 bytes");
	if (in->machine[0] == '\0' || strlen(in->machine) > 128)
		return err_field(e, 422, "price.bad_machine_type", "/machine_type",
		    "machine_type must be 1 to 128 bytes");
	if (!(in->price >= 0) || in->price > 1e6)
		return err_field(e, 422, "price.bad_price", "/price_hour",
		    "price_hour must be between 0 and 1000000 (USD per node-hour)");
	if (strlen(in->note) > 1024)
		return err_field(e, 422, "price.bad_note", "/note", "note must be at most 1024 bytes");
	return true;
}

bool
cost_price_create(struct db *c, json_t *body, json_t **out, struct err *e)
{
	static const char sql[] = "INSERT INTO price_overrides (id, environment, provider,"
	    " region, machine_type, spot, price_hour, note) SELECT $1::uuid, $2, $3, $4, $5,"
	    " $6::boolean, $7::float8, $8 WHERE EXISTS (SELECT 1 FROM environments WHERE name = $2)"
	    " ON CONFLICT (environment, provider, region, machine_type, spot) DO NOTHING"
	    " RETURNING " PRICE_JSON;
	static const char sql_env[] = "SELECT count(*) FROM environments WHERE name = $1";
	struct price_in in;
	char id[37], price[32];
	uuid_t u;
	long long n = 0;

	if (!price_unpack(body, &in, e))
		return false;
	uuid_generate_random(u);
	uuid_unparse_lower(u, id);
	snprintf(price, sizeof(price), "%.17g", in.price);
	{
		const char *p[8] = { id, in.env, in.provider, in.region, in.machine,
			in.spot ? "true" : "false", price, in.note };
		const char *pe[1] = { in.env };

		if (db_get_json(c, sql, 8, p, "price.exists", "price", out, e))
			return true;
		if (e->status != 404 || !db_count(c, sql_env, 1, pe, &n, e))
			return false;
		if (n == 0)
			return err_field(e, 404, "env.not_found", "/environment",
			    "environment %.64s not found", in.env);
		return err_field(e, 409, "price.exists", "/machine_type", "environment %.64s"
		    " already has a price for %.64s %.64s %.128s%s", in.env, in.provider,
		    in.region, in.machine, in.spot ? " (spot)" : "");
	}
}

bool
cost_price_get(struct db *c, const char *id, bool lock, json_t **out, struct err *e)
{
	static const char sql[] = "SELECT " PRICE_JSON " FROM price_overrides WHERE id = $1::uuid";
	static const char sql_lock[] = "SELECT " PRICE_JSON " FROM price_overrides"
	    " WHERE id = $1::uuid FOR UPDATE";

	return db_get_id_json(c, lock ? sql_lock : sql, id, "price.not_found", "price", out, e);
}

bool
cost_price_replace(struct db *c, const char *id, json_t *body, json_t **out, struct err *e)
{
	static const char sql[] = "UPDATE price_overrides SET price_hour = $2::float8, note = $3,"
	    " version = version + CASE WHEN price_hour = $2::float8 AND note = $3 THEN 0 ELSE 1 END,"
	    " updated_at = CASE WHEN price_hour = $2::float8 AND note = $3 THEN updated_at"
	    " ELSE now() END WHERE id = $1::uuid RETURNING " PRICE_JSON;
	struct price_in in;
	json_t *cur = NULL;
	char price[32];
	static const char *const keys[] = { "environment", "provider", "region", "machine_type",
		NULL };
	bool ok = false;

	if (!price_unpack(body, &in, e) || !cost_price_get(c, id, true, &cur, e))
		return false;
	{
		const char *vals[4] = { in.env, in.provider, in.region, in.machine };

		for (int i = 0; keys[i] != NULL; i++) {
			if (strcmp(vals[i], jsonx_at(cur, keys[i], NULL)) != 0) {
				char ptr[32];

				snprintf(ptr, sizeof(ptr), "/%s", keys[i]);
				err_field(e, 409, "price.immutable", ptr, "%s is immutable; create"
				    " a new price instead", keys[i]);
				goto cleanup;
			}
		}
	}
	if (in.spot != json_is_true(json_object_get(cur, "spot"))) {
		err_field(e, 409, "price.immutable", "/spot", "spot is immutable; create a new"
		    " price instead");
		goto cleanup;
	}
	snprintf(price, sizeof(price), "%.17g", in.price);
	{
		const char *p[3] = { id, price, in.note };

		ok = db_get_json(c, sql, 3, p, "price.not_found", "price", out, e);
	}
cleanup:
	json_decref(cur);
	return ok;
}

bool
cost_price_delete(struct db *c, const char *id, struct err *e)
{
	static const char sql[] = "DELETE FROM price_overrides WHERE id = $1::uuid";
	PGresult *r = NULL;
	const char *p[1] = { id };
	bool ok;

	if (!db_uuid_ok(id))
		return err_set(e, 404, "price.not_found", "price not found");
	if (!db_exec(c, sql, 1, p, &r, e))
		return false;
	ok = strcmp(PQcmdTuples(r), "0") != 0;
	PQclear(r);
	return ok ? true : err_set(e, 404, "price.not_found", "price not found");
}

bool
cost_price_list(struct db *c, const char *environment, const char *const *envs, int nenvs,
		json_t **out, struct err *e)
{
	static const char sql[] = "SELECT json_build_object('overrides', coalesce((SELECT"
	    " json_agg(" PRICE_JSON "::json ORDER BY environment, provider, region, machine_type,"
	    " spot) FROM price_overrides WHERE ($1::text IS NULL OR environment = $1)"
	    " AND ($2::text[] IS NULL OR environment = ANY($2::text[]))), '[]'::json),"
	    " 'list', (SELECT json_agg(json_build_object('provider', provider, 'region', region,"
	    " 'machine_type', machine_type, 'spot', spot, 'price_hour', price_hour, 'source',"
	    " source) ORDER BY provider, region, machine_type, spot) FROM prices))::text";
	char *scope = db_scope_array(envs, nenvs);
	const char *p[2] = { environment, scope };
	bool ok = db_get_json(c, sql, 2, p, "price.none", "prices", out, e);

	free(scope);
	return ok;
}

static bool
metrics_tx(struct db *c, void *arg, struct err *e)
{
	static const char sql[] = "SELECT environment, queue, sum(dollars), sum(gpu_hours) * 3600"
	    " FROM cost_runs('-infinity', now()) GROUP BY environment, queue"
	    " ORDER BY environment, queue LIMIT 1000";
	PGresult **r = arg;

	PQclear(*r);	/* a retried transaction's first answer */
	*r = NULL;
	return db_exec(c, sql, 0, NULL, r, e);
}

/* The samples of the last refresh (malloc'd text, NULL before the first): a scrape reads
 * only this, never the database (/metrics answers while jobs are locked). */
static pthread_mutex_t kept_mu = PTHREAD_MUTEX_INITIALIZER;
static char *kept_dollars, *kept_seconds;

void
cost_metrics_refresh(void)
{
	char *d = NULL, *a = NULL;
	size_t dl = 0, dc = 0, al = 0, ac = 0;
	PGresult *r = NULL;
	struct err e;

	memset(&e, 0, sizeof(e));
	if (!db_tx(metrics_tx, &r, &e)) {
		log_warn(NULL, "cost", "cannot refresh the cost metrics", "{s:s}", "code", e.code);
		return;
	}
	textbuf_append(&d, &dl, &dc, "", 0);
	textbuf_append(&a, &al, &ac, "", 0);
	for (int i = 0; i < PQntuples(r); i++) {
		textbuf_appendf(&d, &dl, &dc, "fleetd_cost_dollars_total{environment=\"%s\","
		    "queue=\"%s\"} %s\n", PQgetvalue(r, i, 0), PQgetvalue(r, i, 1),
		    PQgetvalue(r, i, 2));
		textbuf_appendf(&a, &al, &ac, "fleetd_cost_accelerator_seconds_total"
		    "{environment=\"%s\",queue=\"%s\"} %s\n", PQgetvalue(r, i, 0),
		    PQgetvalue(r, i, 1), PQgetvalue(r, i, 3));
	}
	PQclear(r);
	pthread_mutex_lock(&kept_mu);
	free(kept_dollars);
	free(kept_seconds);
	kept_dollars = d;
	kept_seconds = a;
	pthread_mutex_unlock(&kept_mu);
}

void
cost_metrics(char **buf, size_t *len, size_t *cap)
{
	pthread_mutex_lock(&kept_mu);
	textbuf_appendf(buf, len, cap,
	    "# HELP fleetd_cost_dollars_total Dollars spent by runs, by environment and queue"
	    " (running runs up to the budgets worker's last round).\n"
	    "# TYPE fleetd_cost_dollars_total counter\n%s"
	    "# HELP fleetd_cost_accelerator_seconds_total Accelerator-seconds of runs, by"
	    " environment and queue.\n# TYPE fleetd_cost_accelerator_seconds_total counter\n%s",
	    kept_dollars ? kept_dollars : "", kept_seconds ? kept_seconds : "");
	pthread_mutex_unlock(&kept_mu);
}
