/* h_audit: GET /v1/audit — admin; filters by resource, actor and time; newest first.  Rows
 * of no environment (tokens, priority classes) are shown to '*' callers only. */
#include "api/handlers.h"

HANDLER(h_audit_list)
{
	struct audit_filter f = {
		.resource_type = rq_query(rq, "resource_type"),
		.resource_id = rq_query(rq, "resource_id"), .actor = rq_query(rq, "actor"),
		.since = rq_query(rq, "since"), .until = rq_query(rq, "until"),
		.envs = rq->envs, .nenvs = rq->nenvs,
	};
	const char *after;
	json_t *items;
	int limit;

	if (!rq_page(rq, &limit, &after, e) || !audit_list(rq->db, limit + 1, after, &f, &items, e))
		return false;
	rq_reply(rq, 200, rq_page_reply(rq, items, limit, "id"));
	return true;
}
