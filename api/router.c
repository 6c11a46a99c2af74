/* router: the route table and path matching with {parameters}; 404 for unknown paths,
 * 405 with Allow for a known path and a wrong method. */
#include <string.h>

#include "api/handlers.h"
#include "api/server.h"
#include "core/jsonx.h"

const struct route routes[] = {
	{ "GET", "/healthz", h_healthz, ROLE_NONE, R_PUBLIC | R_NOTX },
	{ "GET", "/readyz", h_readyz, ROLE_NONE, R_PUBLIC | R_NOTX },
	{ "GET", "/metrics", h_metrics, ROLE_VIEWER, R_METRICS | R_NOTX | R_RAW },
	{ "GET", "/openapi.yaml", h_openapi, ROLE_NONE, R_PUBLIC | R_NOTX | R_RAW },
	{ "GET", "/", h_console_index, ROLE_NONE, R_PUBLIC | R_NOTX | R_RAW },
	{ "GET", "/console/app.js", h_console_js, ROLE_NONE, R_PUBLIC | R_NOTX | R_RAW },
	{ "GET", "/console/app.css", h_console_css, ROLE_NONE, R_PUBLIC | R_NOTX | R_RAW },
	{ "GET", "/v1/console/config", h_console_config, ROLE_NONE, R_PUBLIC | R_NOTX },
	{ "GET", "/v1/whoami", h_whoami, ROLE_VIEWER, R_NOTX | R_TEAM },

	{ "GET", "/v1/environments", h_env_list, ROLE_VIEWER, R_TEAM },
	{ "POST", "/v1/environments", h_env_create, ROLE_ADMIN, R_BODY },
	{ "GET", "/v1/environments/{name}", h_env_get, ROLE_VIEWER, R_TEAM },
	{ "PUT", "/v1/environments/{name}", h_env_replace, ROLE_ADMIN, R_BODY },
	{ "DELETE", "/v1/environments/{name}", h_env_delete, ROLE_ADMIN, 0 },

	{ "GET", "/v1/tokens", h_token_list, ROLE_ADMIN, 0 },
	{ "POST", "/v1/tokens", h_token_create, ROLE_ADMIN, R_BODY },
	{ "GET", "/v1/tokens/{id}", h_token_get, ROLE_ADMIN, 0 },
	{ "DELETE", "/v1/tokens/{id}", h_token_delete, ROLE_ADMIN, 0 },

	{ "GET", "/v1/teams", h_team_list, ROLE_VIEWER, R_TEAM },
	{ "POST", "/v1/teams", h_team_create, ROLE_ADMIN, R_BODY },
	{ "GET", "/v1/teams/{name}", h_team_get, ROLE_VIEWER, R_TEAM },
	{ "DELETE", "/v1/teams/{name}", h_team_delete, ROLE_ADMIN, 0 },

	{ "GET", "/v1/audit", h_audit_list, ROLE_ADMIN, 0 },

	{ "GET", "/v1/capacity", h_capacity_summary, ROLE_VIEWER, R_TEAM },
	{ "POST", "/v1/capacity/search", h_capacity_search, ROLE_VIEWER, R_BODY | R_TEAM },

	{ "GET", "/v1/clouds", h_cloud_list, ROLE_VIEWER, R_TEAM },
	{ "POST", "/v1/clouds", h_cloud_create, ROLE_ADMIN, R_BODY },
	{ "GET", "/v1/clouds/{id}", h_cloud_get, ROLE_VIEWER, R_TEAM },
	{ "PUT", "/v1/clouds/{id}", h_cloud_replace, ROLE_ADMIN, R_BODY },
	{ "DELETE", "/v1/clouds/{id}", h_cloud_delete, ROLE_ADMIN, 0 },
	{ "POST", "/v1/clouds/{id}/iam", h_cloud_iam, ROLE_ADMIN, R_BODY | R_NOTX },
	{ "POST", "/v1/clouds/{id}/iam/rotate", h_cloud_iam_rotate, ROLE_ADMIN, R_BODY | R_NOTX },
	{ "POST", "/v1/clouds/{id}/iam/verify", h_cloud_iam_verify, ROLE_ADMIN, R_NOTX },
	{ "GET", "/v1/clouds/{id}/clusters", h_cluster_list, ROLE_VIEWER, R_TEAM },
	{ "POST", "/v1/clouds/{id}/clusters", h_cluster_create, ROLE_ADMIN, R_BODY | R_NOTX },
	{ "GET", "/v1/clouds/{cloud_id}/clusters/{id}", h_cluster_get, ROLE_VIEWER, R_TEAM },
	{ "PUT", "/v1/clouds/{cloud_id}/clusters/{id}", h_cluster_replace, ROLE_ADMIN, R_BODY | R_NOTX },
	{ "DELETE", "/v1/clouds/{cloud_id}/clusters/{id}", h_cluster_delete, ROLE_ADMIN, 0 },

	{ "GET", "/v1/clusters", h_cluster_list, ROLE_VIEWER, R_TEAM },
	{ "GET", "/v1/clusters/{id}", h_cluster_get, ROLE_VIEWER, R_TEAM },
	{ "PUT", "/v1/clusters/{id}", h_cluster_replace, ROLE_ADMIN, R_BODY | R_NOTX },
	{ "DELETE", "/v1/clusters/{id}", h_cluster_delete, ROLE_ADMIN, 0 },
	{ "POST", "/v1/clusters/{id}/cordon", h_cluster_cordon, ROLE_OPERATOR, 0 },
	{ "POST", "/v1/clusters/{id}/uncordon", h_cluster_uncordon, ROLE_OPERATOR, 0 },

	{ "GET", "/v1/queues", h_queue_list, ROLE_VIEWER, R_TEAM },
	{ "POST", "/v1/queues", h_queue_create, ROLE_ADMIN, R_BODY },
	{ "GET", "/v1/queues/{id}", h_queue_get, ROLE_VIEWER, R_TEAM },
	{ "GET", "/v1/queues/{id}/status", h_queue_status, ROLE_VIEWER, R_TEAM },
	{ "PUT", "/v1/queues/{id}", h_queue_replace, ROLE_ADMIN, R_BODY },
	{ "DELETE", "/v1/queues/{id}", h_queue_delete, ROLE_ADMIN, 0 },
	{ "GET", "/v1/priority-classes", h_pc_list, ROLE_VIEWER, R_TEAM },
	{ "POST", "/v1/priority-classes", h_pc_create, ROLE_ADMIN, R_BODY | R_GLOBAL },
	{ "GET", "/v1/priority-classes/{id}", h_pc_get, ROLE_VIEWER, R_TEAM },
	{ "PUT", "/v1/priority-classes/{id}", h_pc_replace, ROLE_ADMIN, R_BODY | R_GLOBAL },
	{ "DELETE", "/v1/priority-classes/{id}", h_pc_delete, ROLE_ADMIN, R_GLOBAL },
	{ "GET", "/v1/flavors", h_flavor_list, ROLE_VIEWER, 0 },
	{ "GET", "/v1/flavors/{name}", h_flavor_get, ROLE_VIEWER, 0 },
	{ "PUT", "/v1/flavors/{name}", h_flavor_put, ROLE_ADMIN, R_BODY | R_GLOBAL },
	{ "DELETE", "/v1/flavors/{name}", h_flavor_delete, ROLE_ADMIN, R_GLOBAL },

	{ "GET", "/v1/jobs", h_job_list, ROLE_VIEWER, R_TEAM },
	{ "POST", "/v1/jobs", h_job_submit, ROLE_SUBMITTER, R_BODY | R_TEAM },
	{ "GET", "/v1/jobs/{id}", h_job_get, ROLE_VIEWER, R_TEAM },
	{ "POST", "/v1/jobs/{id}/cancel", h_job_cancel, ROLE_SUBMITTER, R_TEAM },
	{ "PUT", "/v1/jobs/{id}/spec", h_job_update_spec, ROLE_OPERATOR, R_BODY | R_TEAM },
	{ "GET", "/v1/jobs/{id}/events", h_job_events, ROLE_VIEWER, R_TEAM },
	{ "GET", "/v1/jobs/{id}/manifest", h_job_manifest, ROLE_VIEWER, R_TEAM },
	{ "GET", "/v1/jobs/{id}/dashboard", h_job_dashboard, ROLE_SUBMITTER, R_TEAM },
	{ "GET", "/v1/jobs/{id}/placement", h_job_placement, ROLE_VIEWER, R_TEAM },
	{ "GET", "/v1/jobs/{id}/postmortem", h_job_postmortem, ROLE_VIEWER, 0 },
	{ "POST", "/v1/jobs/{id}/move", h_job_move, ROLE_OPERATOR, R_BODY | R_TEAM },
	{ "POST", "/v1/clusters/{id}/drain", h_cluster_drain, ROLE_OPERATOR, R_BODY_OPT | R_TEAM },
	{ "POST", "/v1/regions/{environment}/{region}/drain", h_region_drain, ROLE_OPERATOR, R_BODY_OPT },
	{ "GET", "/v1/operations", h_operation_list, ROLE_VIEWER, R_TEAM },
	{ "GET", "/v1/operations/{id}", h_operation_get, ROLE_VIEWER, R_TEAM },
	{ "GET", "/v1/events", h_events, ROLE_VIEWER, R_TEAM },
	{ "POST", "/v1/operations/{id}/cancel", h_operation_cancel, ROLE_OPERATOR, R_TEAM },

	{ "GET", "/v1/costs", h_cost_report, ROLE_VIEWER, 0 },
	{ "GET", "/v1/costs/runs", h_cost_runs, ROLE_VIEWER, 0 },
	{ "GET", "/v1/prices", h_price_list, ROLE_VIEWER, 0 },
	{ "POST", "/v1/prices", h_price_create, ROLE_ADMIN, R_BODY },
	{ "GET", "/v1/prices/{id}", h_price_get, ROLE_VIEWER, 0 },
	{ "PUT", "/v1/prices/{id}", h_price_replace, ROLE_ADMIN, R_BODY },
	{ "DELETE", "/v1/prices/{id}", h_price_delete, ROLE_ADMIN, 0 },
	{ "GET", "/v1/budgets", h_budget_list, ROLE_VIEWER, 0 },
	{ "POST", "/v1/budgets", h_budget_create, ROLE_ADMIN, R_BODY },
	{ "GET", "/v1/budgets/{id}", h_budget_get, ROLE_VIEWER, 0 },
	{ "DELETE", "/v1/budgets/{id}", h_budget_delete, ROLE_ADMIN, 0 },

	{ "GET", "/v1/webhooks", h_webhook_list, ROLE_VIEWER, 0 },
	{ "POST", "/v1/webhooks", h_webhook_create, ROLE_ADMIN, R_BODY },
	{ "GET", "/v1/webhooks/{id}", h_webhook_get, ROLE_VIEWER, 0 },
	{ "DELETE", "/v1/webhooks/{id}", h_webhook_delete, ROLE_ADMIN, 0 },
	{ "POST", "/v1/webhooks/{id}/rotate-secret", h_webhook_rotate, ROLE_ADMIN, R_BODY_OPT },
	{ "POST", "/v1/webhooks/{id}/replay", h_webhook_replay, ROLE_ADMIN, R_BODY },
	{ "GET", "/v1/webhooks/{id}/deliveries", h_webhook_deliveries, ROLE_VIEWER, 0 },
};
const size_t nroutes = sizeof(routes) / sizeof(routes[0]);

/* Refuses paths that no route could mean: NUL, dot segments, empty segments, control
 * characters, invalid UTF-8. */
static bool
path_sane(const char *p)
{
	const char *s = p;

	if (p[0] != '/' || !jsonx_utf8_valid(p, strlen(p)) || strstr(p, "%00") != NULL)
		return false;
	for (; *s != '\0'; s++)
		if ((unsigned char)*s < 0x20 || *s == 0x7f || *s == '\\')
			return false;
	for (s = p; (s = strchr(s, '/')) != NULL; s++) {
		if (s[1] == '/' || (s[1] == '.' && (s[2] == '/' || s[2] == '\0')) ||
		    (s[1] == '.' && s[2] == '.' && (s[3] == '/' || s[3] == '\0')))
			return false;
	}
	return true;
}

/* Matches pattern against path; fills params into rq on success. */
static bool
match(struct request *rq, const char *pattern, const char *path)
{
	const char *pp = pattern, *sp = path;
	int n = 0;

	while (*pp != '\0' && *sp != '\0') {
		if (*pp == '{') {
			const char *pend = strchr(pp, '}'), *send = strchr(sp, '/');
			size_t slen = send ? (size_t)(send - sp) : strlen(sp);

			if (pend == NULL || slen == 0 || n >= MAX_PARAMS)
				return false;
			rq->param_names[n] = arena_strndup(rq->arena, pp + 1,
			    (size_t)(pend - pp - 1));
			rq->param_values[n] = arena_strndup(rq->arena, sp, slen);
			n++;
			pp = pend + 1;
			sp += slen;
			continue;
		}
		if (*pp != *sp)
			return false;
		pp++;
		sp++;
	}
	if (*pp != '\0' || *sp != '\0')
		return false;
	rq->nparams = n;
	return true;
}

const struct route *
router_match(struct request *rq, char *allow, size_t allowlen, struct err *e)
{
	const struct route *found = NULL;
	size_t alen = 0;
	char path[2048];
	size_t n = strlen(rq->path);

	if (n >= sizeof(path) || !path_sane(rq->path)) {
		err_set(e, 400, "api.bad_path", "the request path is not valid");
		return NULL;
	}
	memcpy(path, rq->path, n + 1);
	if (n > 1 && path[n - 1] == '/')
		path[n - 1] = '\0';
	allow[0] = '\0';
	for (size_t i = 0; i < nroutes; i++) {
		if (!match(rq, routes[i].pattern, path))
			continue;
		if (strcmp(routes[i].method, rq->method) == 0 ||
		    (strcmp(rq->method, "HEAD") == 0 && strcmp(routes[i].method, "GET") == 0)) {
			found = &routes[i];
			break;
		}
		if (alen + strlen(routes[i].method) + 3 < allowlen)
			alen += (size_t)snprintf(allow + alen, allowlen - alen, "%s%s",
			    alen ? ", " : "", routes[i].method);
	}
	if (found != NULL) {
		match(rq, found->pattern, path);
		return found;
	}
	if (alen > 0)
		err_set(e, 405, "api.method_not_allowed", "method %s is not allowed here",
		    strcmp(rq->method, "GET") == 0 || strcmp(rq->method, "POST") == 0 ||
		    strcmp(rq->method, "PUT") == 0 || strcmp(rq->method, "DELETE") == 0 ||
		    strcmp(rq->method, "PATCH") == 0 ? rq->method : "used");
	else
		err_set(e, 404, "api.not_found", "no such resource");
	return NULL;
}
