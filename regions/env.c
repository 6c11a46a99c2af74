/* env: rows of environments, built as JSON by Postgres itself. */
#include <regex.h>
#include <stdlib.h>
#include <string.h>

#include <uuid/uuid.h>

#include "core/jsonx.h"
#include "providers/jobspec.h"
#include "regions/env.h"

#define ENV_JSON "json_build_object('id', id, 'name', name, 'description', description," \
	" 'pod_policy', pod_policy, 'dashboard_ingress', dashboard_ingress, 'version', version, 'created_at', created_at," \
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

/* A DNS-1123 subdomain of at most max characters (dot-separated labels). */
static bool
subdomain(const char *s, size_t max)
{
	size_t n = strlen(s), run = 0;

	if (n == 0 || n > max || s[0] == '.' || s[n - 1] == '.')
		return false;
	for (size_t i = 0; i < n; i++) {
		if (s[i] == '.') {
			if (run == 0 || s[i - 1] == '-')
				return false;
			run = 0;
			continue;
		}
		if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= '0' && s[i] <= '9') ||
		    (s[i] == '-' && run > 0)))
			return false;
		run++;
	}
	return s[n - 1] != '-';
}

/* dashboard_ingress (issue 25): {host, path?, path_type?, tls_secret?,
 * controller_namespace?}, the KubeRay ingressOptions of every job of the environment;
 * canonical text into *out (caller frees). */
static bool
ingress_parse(json_t *v, char **out, struct err *e)
{
	static const char *const allowed[] = { "host", "path", "path_type", "tls_secret",
		"controller_namespace", NULL };
	const char *host = NULL, *path = NULL, *pt = NULL, *tls = NULL, *cns = NULL;
	json_t *canon;

	if (!json_is_object(v))
		return err_field(e, 400, "env.bad_ingress", "/dashboard_ingress",
		    "dashboard_ingress must be an object or null");
	if (!jsonx_only(v, allowed, "/dashboard_ingress", e) ||
	    !jsonx_str(v, "host", "/dashboard_ingress", true, &host, e) ||
	    !jsonx_str(v, "path", "/dashboard_ingress", false, &path, e) ||
	    !jsonx_str(v, "path_type", "/dashboard_ingress", false, &pt, e) ||
	    !jsonx_str(v, "tls_secret", "/dashboard_ingress", false, &tls, e) ||
	    !jsonx_str(v, "controller_namespace", "/dashboard_ingress", false, &cns, e))
		return false;
	if (!subdomain(host, 253))
		return err_field(e, 400, "env.bad_ingress", "/dashboard_ingress/host",
		    "host must be a dns name");
	if (path != NULL && (path[0] != '/' || strlen(path) > 256 || strpbrk(path, " \t\n")))
		return err_field(e, 400, "env.bad_ingress", "/dashboard_ingress/path",
		    "path must start with / (at most 256 characters, no spaces)");
	if (pt != NULL && strcmp(pt, "Prefix") != 0 && strcmp(pt, "Exact") != 0 &&
	    strcmp(pt, "ImplementationSpecific") != 0)
		return err_field(e, 400, "env.bad_ingress", "/dashboard_ingress/path_type",
		    "path_type must be Prefix, Exact or ImplementationSpecific");
	if (tls != NULL && !subdomain(tls, 253))
		return err_field(e, 400, "env.bad_ingress", "/dashboard_ingress/tls_secret",
		    "tls_secret must be a secret name");
	if (cns != NULL && (!subdomain(cns, 63) || strchr(cns, '.') != NULL))
		return err_field(e, 400, "env.bad_ingress",
		    "/dashboard_ingress/controller_namespace", "controller_namespace must be a "
		    "namespace name");
	canon = json_pack("{s:s, s:s, s:s, s:s?, s:s}", "host", host, "path", path ? path : "/",
	    "path_type", pt ? pt : "Prefix", "tls_secret", tls, "controller_namespace",
	    cns ? cns : "ingress-nginx");
	*out = json_dumps(canon, JSON_COMPACT | JSON_SORT_KEYS);
	json_decref(canon);
	return true;
}

/* body's name, description, pod_policy (canonical text into *policy, NULL when absent;
 * caller frees) and dashboard_ingress (*ingress: canonical text, or "null" to remove it,
 * NULL when absent; caller frees). */
static bool
unpack(json_t *body, const char **name, const char **desc, char **policy, char **ingress,
    struct err *e)
{
	static const char *const allowed[] = { "name", "description", "pod_policy",
		"dashboard_ingress", NULL };
	json_t *pp = NULL, *canon = NULL, *di;

	*policy = NULL;
	*ingress = NULL;
	di = json_object_get(body, "dashboard_ingress");
	if (di != NULL && json_is_null(di))
		*ingress = strdup("null");
	else if (di != NULL && !ingress_parse(di, ingress, e))
		return false;
	if (!jsonx_only(body, allowed, "", e) || !jsonx_str(body, "name", "", true, name, e) ||
	    !jsonx_str(body, "description", "", false, desc, e))
		return false;
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
	    " dashboard_ingress) VALUES ($1, $2, $3, $4::jsonb, NULLIF($5, 'null')::jsonb)"
	    " ON CONFLICT (name) DO NOTHING RETURNING " ENV_JSON;
	const char *name = NULL, *desc = "";
	char id[37], *policy = NULL, *ingress = NULL;
	uuid_t u;
	bool ok = false;

	if (!unpack(body, &name, &desc, &policy, &ingress, e)) {
		free(ingress);
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
		const char *p[5] = { id, name, desc ? desc : "", policy, ingress };

		ok = one(c, sql, 5, p, name, out, e);
		if (!ok && e->status == 404)
			err_field(e, 409, "env.exists", "/name", "environment %s already exists",
			    name);
	}
	free(policy);
	free(ingress);
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
	/* pod_policy absent ($3 NULL): unchanged; dashboard_ingress absent ($4 NULL):
	 * unchanged, "null": removed */
	static const char sql[] = "WITH n AS (SELECT COALESCE($3::jsonb, pod_policy) AS pp,"
	    " CASE WHEN $4::text IS NULL THEN dashboard_ingress ELSE NULLIF($4, 'null')::jsonb END"
	    " AS di FROM environments WHERE name = $1)"
	    " UPDATE environments SET description = $2, pod_policy = n.pp,"
	    " dashboard_ingress = n.di,"
	    " version = version + CASE WHEN description = $2 AND pod_policy = n.pp AND"
	    " dashboard_ingress IS NOT DISTINCT FROM n.di THEN 0 ELSE 1 END,"
	    " updated_at = CASE WHEN description = $2 AND pod_policy = n.pp AND"
	    " dashboard_ingress IS NOT DISTINCT FROM n.di THEN updated_at ELSE now() END"
	    " FROM n WHERE name = $1 RETURNING " ENV_JSON;
	const char *newname = NULL, *desc = "";
	char *policy = NULL, *ingress = NULL;
	bool ok;

	if (!unpack(body, &newname, &desc, &policy, &ingress, e)) {
		free(ingress);
		return false;
	}
	if (strcmp(newname, name) != 0) {
		free(policy);
		free(ingress);
		return err_field(e, 409, "env.immutable", "/name",
		    "name is immutable; create a new environment instead");
	}
	{
		const char *p[4] = { name, desc ? desc : "", policy, ingress };

		ok = one(c, sql, 4, p, name, out, e);
	}
	free(policy);
	free(ingress);
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
