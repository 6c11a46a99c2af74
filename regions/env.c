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
	" 'upgrade_deadline_seconds', upgrade_deadline_seconds," \
	" 'dashboard_ingress', dashboard_ingress, 'version', version," \
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

/* What a POST or PUT of an environment carries; texts are canonical and the caller's to
 * free (env_fields_free). */
struct env_fields {
	const char	*name, *desc;
	char		*policy;	/* pod_policy, NULL when absent */
	bool		 hist_set;	/* the body has history_server */
	char		*hist;		/* its canonical text, NULL for null = none */
	char		 deadline[16];	/* upgrade_deadline_seconds, "" when absent */
	char		*ingress;	/* dashboard_ingress, "null" to remove, NULL when absent */
};

static void
env_fields_free(struct env_fields *f)
{
	free(f->policy);
	free(f->hist);
	free(f->ingress);
}

static bool
unpack(json_t *body, struct env_fields *f, struct err *e)
{
	static const char *const allowed[] = { "name", "description", "pod_policy",
		"history_server", "upgrade_deadline_seconds", "dashboard_ingress", NULL };
	json_t *pp = NULL, *canon = NULL, *hs, *di;
	long long dl = 0;

	memset(f, 0, sizeof(*f));
	f->desc = "";
	di = json_object_get(body, "dashboard_ingress");
	if (di != NULL && json_is_null(di))
		f->ingress = strdup("null");
	else if (di != NULL && !ingress_parse(di, &f->ingress, e))
		return false;
	if (json_is_object(body) && (hs = json_object_get(body, "history_server")) != NULL) {
		f->hist_set = true;
		if (!json_is_null(hs)) {
			if (!kuberay_history_parse(hs, "/history_server", &canon, e))
				return false;
			f->hist = json_dumps(canon, JSON_COMPACT);
			json_decref(canon);
			canon = NULL;
		}
	}
	if (!jsonx_only(body, allowed, "", e) || !jsonx_str(body, "name", "", true, &f->name, e) ||
	    !jsonx_str(body, "description", "", false, &f->desc, e) ||
	    !jsonx_int(body, "upgrade_deadline_seconds", "", false, &dl, e))
		return false;
	if (json_object_get(body, "upgrade_deadline_seconds") != NULL) {
		if (dl < 60 || dl > 604800)
			return err_field(e, 400, "env.bad_upgrade_deadline",
			    "/upgrade_deadline_seconds",
			    "upgrade_deadline_seconds must be between 60 and 604800");
		snprintf(f->deadline, sizeof(f->deadline), "%lld", dl);
	}
	pp = json_object_get(body, "pod_policy");
	if (pp != NULL && !json_is_null(pp)) {
		if (!jobspec_pod_policy_parse(pp, "/pod_policy", &canon, e))
			return false;
		f->policy = json_dumps(canon, JSON_COMPACT);
		json_decref(canon);
	}
	if (!env_name_valid(f->name))
		return err_field(e, 400, "env.bad_name", "/name",
		    "name must match ^[a-z][a-z0-9-]{1,30}$");
	if (f->desc != NULL && strlen(f->desc) > 1024)
		return err_field(e, 400, "env.bad_description", "/description",
		    "description must be at most 1024 bytes");
	return true;
}

bool
env_create(struct db *c, json_t *body, json_t **out, struct err *e)
{
	static const char sql[] = "INSERT INTO environments (id, name, description, pod_policy,"
	    " history_server, upgrade_deadline_seconds, dashboard_ingress)"
	    " VALUES ($1, $2, $3, $4::jsonb, $5::jsonb, coalesce($6::int, 3600),"
	    " NULLIF($7, 'null')::jsonb)"
	    " ON CONFLICT (name) DO NOTHING RETURNING " ENV_JSON;
	struct env_fields f;
	char id[37];
	uuid_t u;
	bool ok = false;

	if (!unpack(body, &f, e))
		goto cleanup;
	if (f.policy == NULL) {
		json_t *d = jobspec_pod_policy_default();

		f.policy = json_dumps(d, JSON_COMPACT);
		json_decref(d);
	}
	uuid_generate_random(u);
	uuid_unparse_lower(u, id);
	{
		const char *p[7] = { id, f.name, f.desc ? f.desc : "", f.policy, f.hist,
			f.deadline[0] ? f.deadline : NULL, f.ingress };

		ok = one(c, sql, 7, p, f.name, out, e);
		if (!ok && e->status == 404)
			err_field(e, 409, "env.exists", "/name", "environment %s already exists",
			    f.name);
	}
cleanup:
	env_fields_free(&f);
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
	/* absent members keep their value: pod_policy ($3 NULL), history_server ($4 false;
	 * null removes it), upgrade_deadline_seconds ($6 NULL), dashboard_ingress ($7 NULL;
	 * "null" removes it) */
	static const char sql[] = "WITH n AS (SELECT COALESCE($3::jsonb, pod_policy) AS pp,"
	    " CASE WHEN $4::boolean THEN $5::jsonb ELSE history_server END AS hs,"
	    " COALESCE($6::int, upgrade_deadline_seconds) AS dl,"
	    " CASE WHEN $7::text IS NULL THEN dashboard_ingress ELSE NULLIF($7, 'null')::jsonb END"
	    " AS di FROM environments WHERE name = $1),"
	    " s AS (SELECT e.description = $2 AND e.pod_policy = n.pp"
	    " AND e.history_server IS NOT DISTINCT FROM n.hs AND e.upgrade_deadline_seconds = n.dl"
	    " AND e.dashboard_ingress IS NOT DISTINCT FROM n.di AS same"
	    " FROM environments e, n WHERE e.name = $1)"
	    " UPDATE environments SET description = $2, pod_policy = n.pp, history_server = n.hs,"
	    " upgrade_deadline_seconds = n.dl, dashboard_ingress = n.di,"
	    " version = version + CASE WHEN s.same THEN 0 ELSE 1 END,"
	    " updated_at = CASE WHEN s.same THEN updated_at ELSE now() END"
	    " FROM n, s WHERE name = $1 RETURNING " ENV_JSON;
	struct env_fields f;
	bool ok = false;

	if (!unpack(body, &f, e))
		goto cleanup;
	if (strcmp(f.name, name) != 0) {
		err_field(e, 409, "env.immutable", "/name",
		    "name is immutable; create a new environment instead");
		goto cleanup;
	}
	{
		const char *p[7] = { name, f.desc ? f.desc : "", f.policy,
			f.hist_set ? "true" : "false", f.hist, f.deadline[0] ? f.deadline : NULL,
			f.ingress };

		ok = one(c, sql, 7, p, name, out, e);
	}
cleanup:
	env_fields_free(&f);
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
