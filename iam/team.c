/* team: rows of the teams table; who may see which is api/h_team.c's business. */
#include <stdio.h>
#include <string.h>

#include "core/jsonx.h"
#include "iam/team.h"
#include "regions/env.h"

#define TEAM_JSON "json_build_object('name', name, 'environments', to_json(environments)," \
	" 'description', description, 'version', version, 'created_at', created_at," \
	" 'updated_at', updated_at)::text"

/* environments as a text[] literal of existing environment names (validated, unquoted). */
static bool
envs_literal(struct db *c, json_t *envs, char *out, size_t outlen, struct err *e)
{
	size_t i, n = 0;
	json_t *v;

	if (!json_is_array(envs) || json_array_size(envs) == 0 || json_array_size(envs) > 32)
		return err_field(e, 422, "team.bad_environments", "/environments",
		    "environments must be a list of 1 to 32 environment names");
	n += (size_t)snprintf(out + n, outlen - n, "{");
	json_array_foreach(envs, i, v) {
		const char *s = json_string_value(v);
		json_t *env = NULL;
		char ptr[48];

		snprintf(ptr, sizeof(ptr), "/environments/%zu", i);
		if (s == NULL || !env_name_valid(s))
			return err_field(e, 422, "team.bad_environment", ptr,
			    "environment names are lowercase letters, digits and dashes");
		if (!env_get(c, s, false, &env, e)) {
			if (e->status == 404)
				err_field(e, 422, "team.bad_environment", ptr,
				    "environment %.64s not found", s);
			return false;
		}
		json_decref(env);
		if (n + strlen(s) + 4 >= outlen)
			return err_field(e, 422, "team.bad_environments", "/environments",
			    "too many environments");
		n += (size_t)snprintf(out + n, outlen - n, "%s%s", i ? "," : "", s);
	}
	snprintf(out + n, outlen - n, "}");
	return true;
}

bool
team_create(struct db *c, json_t *body, json_t **out, struct err *e)
{
	static const char *const allowed[] = { "name", "environments", "description", NULL };
	static const char sql[] = "INSERT INTO teams (name, environments, description)"
	    " VALUES ($1, $2::text[], $3) ON CONFLICT (name) DO NOTHING RETURNING " TEAM_JSON;
	const char *name = NULL, *desc = "";
	char lit[1100];

	if (!jsonx_only(body, allowed, "", e) || !jsonx_str(body, "name", "", true, &name, e) ||
	    !jsonx_str(body, "description", "", false, &desc, e))
		return false;
	if (!jsonx_name_ok(name, 63))
		return err_field(e, 422, "team.bad_name", "/name",
		    "name must match ^[a-z][a-z0-9-]{1,62}$");
	if (desc == NULL)
		desc = "";
	if (strlen(desc) > 1000)
		return err_field(e, 422, "team.bad_description", "/description",
		    "description must be at most 1000 bytes");
	if (!envs_literal(c, json_object_get(body, "environments"), lit, sizeof(lit), e))
		return false;
	{
		const char *p[3] = { name, lit, desc };

		if (!db_get_json(c, sql, 3, p, "team.not_found", "team", out, e)) {
			if (e->status == 404)
				err_field(e, 409, "team.exists", "/name",
				    "a team named %s exists", name);
			return false;
		}
	}
	return true;
}

bool
team_get(struct db *c, const char *name, bool lock, json_t **out, struct err *e)
{
	static const char sql[] = "SELECT " TEAM_JSON " FROM teams WHERE name = $1";
	static const char sql_lock[] = "SELECT " TEAM_JSON " FROM teams WHERE name = $1"
	    " FOR UPDATE";
	const char *p[1] = { name };

	return db_get_json(c, lock ? sql_lock : sql, 1, p, "team.not_found", "team", out, e);
}

bool
team_list(struct db *c, int limit, const char *after, const char *only,
	  const char *const *envs, int nenvs, json_t **out, struct err *e)
{
	static const char sql[] = "SELECT " TEAM_JSON " FROM teams"
	    " WHERE name > $1 AND ($3::text IS NULL OR name = $3)"
	    " AND ($4::text[] IS NULL OR environments <@ $4::text[]) ORDER BY name LIMIT $2";
	const char *f[1] = { only };

	return db_list_page(c, sql, limit, after, DB_CURSOR_TEXT, f, 1, envs, nenvs, out, e);
}

bool
team_delete(struct db *c, const char *name, struct err *e)
{
	static const char sql_used[] = "SELECT (SELECT count(*) FROM queues WHERE team = $1) +"
	    " (SELECT count(*) FROM api_tokens WHERE team = $1 AND revoked_at IS NULL)";
	static const char *const sql_del[] = {
	    "UPDATE api_tokens SET team = NULL WHERE team = $1 AND revoked_at IS NOT NULL",
	    "DELETE FROM teams WHERE name = $1" };

	return db_delete_unused(c, name, sql_used, "team.in_use",
	    "%lld queues and tokens name the team", sql_del, 2, e);
}

bool
team_check_queue(struct db *c, const char *team, const char *env, struct err *e)
{
	static const char sql[] = "SELECT count(*) FROM teams WHERE name = $1"
	    " AND $2 = ANY(environments)";
	const char *p[2] = { team, env };
	long long n = 0;

	if (!jsonx_name_ok(team, 63))
		return err_field(e, 422, "queue.bad_team", "/team",
		    "team must match ^[a-z][a-z0-9-]{1,62}$");
	if (!db_count(c, sql, 2, p, &n, e))
		return false;
	if (n == 0)
		return err_field(e, 422, "queue.bad_team", "/team",
		    "team %.64s not found in environment %.64s", team, env);
	return true;
}
