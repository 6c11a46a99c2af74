/* env: rows of environments, built as JSON by Postgres itself. */
#include <regex.h>
#include <stdlib.h>
#include <string.h>

#include <uuid/uuid.h>

#include "core/jsonx.h"
#include "providers/jobspec.h"
#include "providers/kuberay.h"
#include "regions/env.h"

#define ENV_JSON "json_build_object('id', id, 'name', name, 'description', description," \
	" 'pod_policy', pod_policy, 'history_server', history_server," \
	" 'upgrade_deadline_seconds', upgrade_deadline_seconds, 'version', version," \
	" 'created_at', created_at," \
	" 'updated_at', updated_at)::text"

bool
env_name_valid(const char *name)
{
	return jsonx_name_ok(name, 31);
}

/* The one row of sql about environment name (its 404 names it). */
static bool
one(struct db *c, const char *sql, int n, const char *const *p, const char *name, json_t **out,
    struct err *e)
{
	char what[96];

	snprintf(what, sizeof(what), "environment %.64s", name);
	return db_get_json(c, sql, n, p, "env.not_found", what, out, e);
}

/* body's name, description, pod_policy (canonical text into *policy, NULL when absent),
 * history_server (*hist_set: the body has the member; *hist: its canonical text, NULL for
 * null = none) and upgrade_deadline_seconds (into deadline, "" when absent); caller frees
 * both texts. */
static bool
unpack(json_t *body, const char **name, const char **desc, char **policy, bool *hist_set,
    char **hist, char deadline[16], struct err *e)
{
	static const char *const allowed[] = { "name", "description", "pod_policy",
		"history_server", "upgrade_deadline_seconds", NULL };
	json_t *pp = NULL, *canon = NULL, *hs;
	long long dl = 0;

	*policy = NULL;
	*hist = NULL;
	*hist_set = false;
	deadline[0] = '\0';
	if (json_is_object(body) && (hs = json_object_get(body, "history_server")) != NULL) {
		*hist_set = true;
		if (!json_is_null(hs)) {
			if (!kuberay_history_parse(hs, "/history_server", &canon, e))
				return false;
			*hist = json_dumps(canon, JSON_COMPACT);
			json_decref(canon);
			canon = NULL;
		}
	}
	if (!jsonx_only(body, allowed, "", e) || !jsonx_str(body, "name", "", true, name, e) ||
	    !jsonx_str(body, "description", "", false, desc, e) ||
	    !jsonx_int(body, "upgrade_deadline_seconds", "", false, &dl, e))
		return false;
	if (json_object_get(body, "upgrade_deadline_seconds") != NULL) {
		if (dl < 60 || dl > 604800)
			return err_field(e, 400, "env.bad_upgrade_deadline",
			    "/upgrade_deadline_seconds",
			    "upgrade_deadline_seconds must be between 60 and 604800");
		snprintf(deadline, 16, "%lld", dl);
	}
	pp = json_object_get(body, "pod_policy");
	if (pp != NULL && !json_is_null(pp)) {
		if (!jobspec_pod_policy_parse(pp, "/pod_policy", &canon, e))
			return false;
		*policy = json_dumps(canon, JSON_COMPACT);
		json_decref(canon);
	}
	if (!env_name_valid(*name))
		return err_field(e, 400, "env.bad_name", "/name",
		    "name must match ^[a-z][a-z0-9-]{1,30}$");
	if (*desc != NULL && strlen(*desc) > 1024)
		return err_field(e, 400, "env.bad_description", "/description",
		    "description must be at most 1024 bytes");
	return true;
}

bool
env_create(struct db *c, json_t *body, json_t **out, struct err *e)
{
	static const char sql[] = "INSERT INTO environments (id, name, description, pod_policy,"
	    " history_server, upgrade_deadline_seconds)"
	    " VALUES ($1, $2, $3, $4::jsonb, $5::jsonb, coalesce($6::int, 3600))"
	    " ON CONFLICT (name) DO NOTHING RETURNING " ENV_JSON;
	const char *name = NULL, *desc = "";
	char id[37], *policy = NULL, *hist = NULL, dl[16];
	uuid_t u;
	bool ok = false, hist_set;

	if (!unpack(body, &name, &desc, &policy, &hist_set, &hist, dl, e)) {
		free(policy);
		free(hist);
		return false;
	}
	if (policy == NULL) {
		json_t *d = jobspec_pod_policy_default();

		policy = json_dumps(d, JSON_COMPACT);
		json_decref(d);
	}
	uuid_generate_random(u);
	uuid_unparse_lower(u, id);
	{
		const char *p[6] = { id, name, desc ? desc : "", policy, hist,
			dl[0] ? dl : NULL };

		ok = one(c, sql, 6, p, name, out, e);
		if (!ok && e->status == 404)
			err_field(e, 409, "env.exists", "/name", "environment %s already exists",
			    name);
	}
	free(policy);
	free(hist);
	return ok;
}

bool
env_get(struct db *c, const char *name, bool lock, json_t **out, struct err *e)
{
	static const char sql[] = "SELECT " ENV_JSON " FROM environments WHERE name = $1";
	static const char sql_lock[] = "SELECT " ENV_JSON " FROM environments WHERE name = $1"
	    " FOR UPDATE";
	const char *p[1] = { name };

	return one(c, lock ? sql_lock : sql, 1, p, name, out, e);
}

bool
env_list(struct db *c, int limit, const char *after, const char *const *only, int nonly,
	 json_t **out, struct err *e)
{
	static const char sql[] = "SELECT " ENV_JSON " FROM environments"
	    " WHERE name > $1 AND ($3::text[] IS NULL OR name = ANY($3::text[]))"
	    " ORDER BY name LIMIT $2";

	return db_list_page(c, sql, limit, after, DB_CURSOR_TEXT, NULL, 0, only, nonly, out, e);
}

bool
env_replace(struct db *c, const char *name, json_t *body, json_t **out, struct err *e)
{
	/* pod_policy absent ($3 NULL): unchanged; history_server absent ($4 false): unchanged,
	 * null: removed; upgrade_deadline_seconds absent ($6 NULL): unchanged */
	static const char sql[] = "WITH n AS (SELECT COALESCE($3::jsonb, pod_policy) AS pp,"
	    " CASE WHEN $4::boolean THEN $5::jsonb ELSE history_server END AS hs,"
	    " COALESCE($6::int, upgrade_deadline_seconds) AS dl"
	    " FROM environments WHERE name = $1)"
	    " UPDATE environments SET description = $2, pod_policy = n.pp, history_server = n.hs,"
	    " upgrade_deadline_seconds = n.dl,"
	    " version = version + CASE WHEN description = $2 AND pod_policy = n.pp AND"
	    " history_server IS NOT DISTINCT FROM n.hs AND upgrade_deadline_seconds = n.dl"
	    " THEN 0 ELSE 1 END,"
	    " updated_at = CASE WHEN description = $2 AND pod_policy = n.pp AND"
	    " history_server IS NOT DISTINCT FROM n.hs AND upgrade_deadline_seconds = n.dl"
	    " THEN updated_at ELSE now() END"
	    " FROM n WHERE name = $1 RETURNING " ENV_JSON;
	const char *newname = NULL, *desc = "";
	char *policy = NULL, *hist = NULL, dl[16];
	bool ok = false, hist_set;

	if (!unpack(body, &newname, &desc, &policy, &hist_set, &hist, dl, e))
		goto cleanup;
	if (strcmp(newname, name) != 0) {
		err_field(e, 409, "env.immutable", "/name",
		    "name is immutable; create a new environment instead");
		goto cleanup;
	}
	{
		const char *p[6] = { name, desc ? desc : "", policy, hist_set ? "true" : "false",
			hist, dl[0] ? dl : NULL };

		ok = one(c, sql, 6, p, name, out, e);
	}
cleanup:
	free(policy);
	free(hist);
	return ok;
}

bool
env_pod_policy(struct db *c, const char *name, json_t **out, struct err *e)
{
	static const char sql[] = "SELECT pod_policy::text FROM environments WHERE name = $1";
	const char *p[1] = { name };

	return one(c, sql, 1, p, name, out, e);
}

bool
env_delete(struct db *c, const char *name, struct err *e)
{
	static const char sql[] = "DELETE FROM environments WHERE name = $1";
	const char *p[1] = { name };

	return db_exec(c, sql, 1, p, NULL, e);
}
