/* budget: rows of budgets with their spend, the refusal of hard ones at submission and
 * the once-per-month threshold events.  Spend is cost.c's cost_runs() (migration 0019). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <uuid/uuid.h>

#include "core/config.h"
#include "core/jsonx.h"
#include "core/log.h"
#include "core/ticker.h"
#include "queue/cost/budget.h"
#include "queue/cost/cost.h"

/* The start of the current UTC month. */
#define MONTH "(date_trunc('month', now() AT TIME ZONE 'UTC') AT TIME ZONE 'UTC')"

/* What budget b has spent this month. */
#define SPENT "(SELECT coalesce(sum(x.dollars), 0) FROM cost_runs(" MONTH ", now()) x" \
	" WHERE x.environment = b.environment AND (b.scope = 'environment'" \
	" OR (b.scope = 'queue' AND x.queue = b.target) OR (b.scope = 'team'" \
	" AND x.team = b.target)))"

#define BUDGET_JSON "json_build_object('id', b.id, 'name', b.name, 'environment'," \
	" b.environment, 'scope', b.scope, 'queue', CASE WHEN b.scope = 'queue' THEN b.target" \
	" END, 'team', CASE WHEN b.scope = 'team' THEN b.target END, 'amount_usd', b.amount_usd," \
	" 'period', b.period, 'soft_percent', b.soft_percent, 'hard', b.hard, 'spent_usd', s.spent," \
	" 'percent', round((100 * s.spent / b.amount_usd)::numeric, 2), 'period_start', " MONTH "," \
	" 'version', b.version, 'created_at', b.created_at, 'updated_at', b.updated_at)::text"

#define BUDGET_FROM " FROM budgets b CROSS JOIN LATERAL (SELECT " SPENT " AS spent) s"

/* The budgets covering a job of queue $2 and team $3 (may be NULL) in environment $1. */
#define COVERING " b.environment = $1 AND (b.scope = 'environment' OR (b.scope = 'queue'" \
	" AND b.target = $2) OR (b.scope = 'team' AND b.target = $3))"

/* The rest of a threshold event's INSERT ... SELECT k.job_id, over l (the budgets and
 * levels crossed) and k (the marks just made). */
#define THRESHOLD_EVENT "'budget_threshold', 0, 'budget ' || l.name || ' reached '" \
	" || round(l.pct::numeric, 1) || ' %', jsonb_build_object('budget', l.id, 'name'," \
	" l.name, 'scope', l.scope, 'target', l.target, 'level', l.level, 'threshold_percent'," \
	" l.pct, 'spent_usd', l.spent, 'amount_usd', l.amount_usd, 'hard', l.hard," \
	" 'period_start', " MONTH ") FROM k JOIN l ON l.id = k.budget_id AND l.level = k.level" \
	" ORDER BY l.name, l.pct"

bool
budget_create(struct db *c, json_t *body, json_t **out, struct err *e)
{
	static const char sql[] = "WITH b AS (INSERT INTO budgets (id, name, environment, scope,"
	    " target, amount_usd, soft_percent, hard) VALUES ($1::uuid, $2, $3, $4, $5,"
	    " $6::float8, $7::float8, $8::boolean) ON CONFLICT (environment, name) DO NOTHING"
	    " RETURNING *) SELECT " BUDGET_JSON " FROM b CROSS JOIN LATERAL (SELECT 0::float8"
	    " AS spent) s";
	static const char *const allowed[] = { "name", "environment", "scope", "queue", "team",
		"amount_usd", "period", "soft_percent", "hard", NULL };
	const char *name = NULL, *env = NULL, *scope = NULL, *queue = NULL, *team = NULL;
	const char *period = NULL, *target = NULL;
	double amount = 0, soft = 80;
	bool hard = false;
	char id[37], a[32], sp[32];
	uuid_t u;

	if (!jsonx_only(body, allowed, "", e) ||
	    !jsonx_str(body, "name", "", true, &name, e) ||
	    !jsonx_str(body, "environment", "", true, &env, e) ||
	    !jsonx_str(body, "scope", "", true, &scope, e) ||
	    !jsonx_str(body, "queue", "", false, &queue, e) ||
	    !jsonx_str(body, "team", "", false, &team, e) ||
	    !jsonx_num(body, "amount_usd", "", true, &amount, e) ||
	    !jsonx_str(body, "period", "", false, &period, e) ||
	    !jsonx_num(body, "soft_percent", "", false, &soft, e) ||
	    !jsonx_bool(body, "hard", "", false, &hard, e))
		return false;
	if (!jsonx_name_ok(name, 63))
		return err_field(e, 422, "budget.bad_name", "/name",
		    "name must match ^[a-z][a-z0-9-]{1,62}$");
	if (strcmp(scope, "environment") == 0) {
		if (queue != NULL || team != NULL)
			return err_field(e, 422, "budget.bad_scope", queue ? "/queue" : "/team",
			    "a budget of scope environment names no queue or team");
	} else if (strcmp(scope, "queue") == 0) {
		if (queue == NULL || team != NULL)
			return err_field(e, 422, "budget.bad_scope", queue ? "/team" : "/queue",
			    "a budget of scope queue names its queue and no team");
		target = queue;
	} else if (strcmp(scope, "team") == 0) {
		if (team == NULL || queue != NULL)
			return err_field(e, 422, "budget.bad_scope", team ? "/queue" : "/team",
			    "a budget of scope team names its team and no queue");
		target = team;
	} else {
		return err_field(e, 422, "budget.bad_scope", "/scope",
		    "scope must be environment, queue or team");
	}
	if (target != NULL && (target[0] == '\0' || strlen(target) > 63))
		return err_field(e, 422, "budget.bad_scope", queue ? "/queue" : "/team",
		    "the queue or team must be 1 to 63 bytes");
	if (!(amount > 0) || amount > 1e12)
		return err_field(e, 422, "budget.bad_amount", "/amount_usd",
		    "amount_usd must be above 0 and at most 1e12");
	if (period != NULL && strcmp(period, "month") != 0)
		return err_field(e, 422, "budget.bad_period", "/period", "period must be month");
	if (!(soft >= 80 && soft <= 100))
		return err_field(e, 422, "budget.bad_soft_percent", "/soft_percent",
		    "soft_percent must be between 80 and 100");
	uuid_generate_random(u);
	uuid_unparse_lower(u, id);
	snprintf(a, sizeof(a), "%.17g", amount);
	snprintf(sp, sizeof(sp), "%.17g", soft);
	{
		const char *p[8] = { id, name, env, scope, target, a, sp, hard ? "true" : "false" };

		if (db_get_json(c, sql, 8, p, "budget.exists", "budget", out, e))
			return true;
		if (e->status == 404)
			err_field(e, 409, "budget.exists", "/name",
			    "environment %.64s already has a budget %s", env, name);
		return false;
	}
}

bool
budget_get(struct db *c, const char *id, bool lock, json_t **out, struct err *e)
{
	static const char sql[] = "SELECT " BUDGET_JSON BUDGET_FROM " WHERE b.id = $1::uuid";
	static const char sql_lock[] = "SELECT " BUDGET_JSON BUDGET_FROM " WHERE b.id = $1::uuid"
	    " FOR UPDATE OF b";

	return db_get_id_json(c, lock ? sql_lock : sql, id, "budget.not_found", "budget", out, e);
}

bool
budget_list(struct db *c, int limit, const char *after, const char *environment,
	    const char *const *envs, int nenvs, json_t **out, struct err *e)
{
	static const char sql[] = "SELECT " BUDGET_JSON BUDGET_FROM
	    " WHERE ($1 = '' OR b.id > $1::uuid) AND ($3::text IS NULL OR b.environment = $3)"
	    " AND ($4::text[] IS NULL OR b.environment = ANY($4::text[])) ORDER BY b.id LIMIT $2";
	const char *f[1] = { environment };

	return db_list_page(c, sql, limit, after, DB_CURSOR_UUID, f, 1, envs, nenvs, out, e);
}

bool
budget_delete(struct db *c, const char *id, struct err *e)
{
	static const char sql[] = "DELETE FROM budgets WHERE id = $1::uuid";
	PGresult *r = NULL;
	const char *p[1] = { id };
	bool ok;

	if (!db_uuid_ok(id))
		return err_set(e, 404, "budget.not_found", "budget not found");
	if (!db_exec(c, sql, 1, p, &r, e))
		return false;
	ok = strcmp(PQcmdTuples(r), "0") != 0;
	PQclear(r);
	return ok ? true : err_set(e, 404, "budget.not_found", "budget not found");
}

bool
budget_admit(struct db *c, const char *env, const char *queue, const char *team,
	     struct err *e)
{
	static const char sql[] = "SELECT b.name, b.scope, coalesce(b.target, ''), s.spent,"
	    " b.amount_usd" BUDGET_FROM " WHERE" COVERING " AND b.hard AND s.spent >= b.amount_usd"
	    " ORDER BY b.name LIMIT 1";
	const char *p[3] = { env, queue, team };
	PGresult *r = NULL;

	if (!db_exec(c, sql, 3, p, &r, e))
		return false;
	if (PQntuples(r) == 1) {
		const char *scope = PQgetvalue(r, 0, 1);

		err_field(e, 422, "budget.exhausted", strcmp(scope, "queue") == 0 ? "/queue" :
		    strcmp(scope, "team") == 0 ? "/labels/team" : "/environment",
		    "budget %.63s (%s%s%.63s) is exhausted: %.2f of %.2f USD spent this month",
		    PQgetvalue(r, 0, 0), scope, scope[0] == 'e' ? "" : " ",
		    PQgetvalue(r, 0, 2), atof(PQgetvalue(r, 0, 3)), atof(PQgetvalue(r, 0, 4)));
		PQclear(r);
		return false;
	}
	PQclear(r);
	return true;
}

bool
budget_announce(struct db *c, const char *job_id, const char *env, const char *queue,
		const char *team, struct err *e)
{
	static const char sql[] = "WITH l AS (SELECT b.id, b.name, b.scope, b.target,"
	    " b.amount_usd, b.hard, s.spent, v.level, v.pct" BUDGET_FROM
	    " CROSS JOIN LATERAL (VALUES ('soft', b.soft_percent), ('exhausted', 100::float8))"
	    " v(level, pct) WHERE" COVERING " AND s.spent >= b.amount_usd * v.pct / 100),"
	    " k AS (INSERT INTO budget_marks (budget_id, period_start, level, job_id)"
	    " SELECT l.id, " MONTH ", l.level, $4::uuid FROM l ON CONFLICT DO NOTHING"
	    " RETURNING budget_id, level, job_id)"
	    " INSERT INTO job_events (job_id, type, attempt, message, data)"
	    " SELECT k.job_id, " THRESHOLD_EVENT;
	const char *p[4] = { env, queue, team, job_id };

	/* nothing reads its answer: it goes with the transaction's next round trip */
	return db_exec_later(c, sql, 4, p, e);
}

static bool
sweep_tx(struct db *c, void *arg, struct err *e)
{
	return budget_sweep(c, arg, e);
}

bool
budget_sweep(struct db *c, long *n, struct err *e)
{
	/* a budget is charged by its runs: the event goes to the job of its latest run */
	static const char sql[] = "WITH l AS (SELECT b.id, b.name, b.scope, b.target,"
	    " b.amount_usd, b.hard, s.spent, v.level, v.pct, (SELECT x.job_id FROM cost_runs("
	    MONTH ", now()) x WHERE x.environment = b.environment AND (b.scope = 'environment'"
	    " OR (b.scope = 'queue' AND x.queue = b.target) OR (b.scope = 'team'"
	    " AND x.team = b.target)) ORDER BY x.started_at DESC LIMIT 1) AS job" BUDGET_FROM
	    " CROSS JOIN LATERAL (VALUES ('soft', b.soft_percent), ('exhausted', 100::float8))"
	    " v(level, pct) WHERE s.spent >= b.amount_usd * v.pct / 100 AND NOT EXISTS (SELECT 1"
	    " FROM budget_marks m WHERE m.budget_id = b.id AND m.period_start = " MONTH
	    " AND m.level = v.level)),"
	    " k AS (INSERT INTO budget_marks (budget_id, period_start, level, job_id)"
	    " SELECT l.id, " MONTH ", l.level, l.job FROM l WHERE l.job IS NOT NULL"
	    " ON CONFLICT DO NOTHING RETURNING budget_id, level, job_id),"
	    " ev AS (INSERT INTO job_events (job_id, type, attempt, message, data)"
	    " SELECT k.job_id, " THRESHOLD_EVENT " RETURNING 1)"
	    " SELECT count(*) FROM ev";
	PGresult *r = NULL;

	if (!db_exec(c, sql, 0, NULL, &r, e))
		return false;
	*n = strtol(PQgetvalue(r, 0, 0), NULL, 10);
	PQclear(r);
	return true;
}

static void
round_once(void)
{
	struct err e = { 0 };
	long n = 0;

	if (!db_tx(sweep_tx, &n, &e))
		log_warn(NULL, "budget", "threshold sweep failed", "{s:s}", "code", e.code);
	else if (n > 0)
		log_info(NULL, "budget", "budget thresholds announced", "{s:i}", "events", (int)n);
	cost_metrics_refresh();
}

static long
period_ms(void)
{
	return cfg.budget_interval_ms > 0 ? cfg.budget_interval_ms : 60000;
}

static struct ticker ticker = TICKER_INIT(round_once, period_ms);

bool
budget_start(struct err *e)
{
	return ticker_start(&ticker, "budget.start", "cannot start the budgets thread", e);
}

void
budget_stop(void)
{
	ticker_stop(&ticker);
}
