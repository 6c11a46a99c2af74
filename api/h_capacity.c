/* h_capacity: GET /v1/capacity and POST /v1/capacity/search. */
#include <string.h>

#include "api/handlers.h"
#include "regions/capacity.h"

HANDLER(h_capacity_summary)
{
	struct capacity_filter f = {
		.environment = rq_query(rq, "environment"), .region = rq_query(rq, "region"),
		.provider = rq_query(rq, "provider"), .flavor = rq_query(rq, "flavor"),
		.envs = rq->envs, .nenvs = rq->nenvs,
	};
	size_t len = 0;
	char *out = NULL;

	if (!capacity_summary_text(rq->db, &f, rq->arena, &out, &len, e))
		return false;
	rq_reply_text(rq, 200, out, len);
	return true;
}

HANDLER(h_capacity_search)
{
	const char *env = json_string_value(json_object_get(rq->json, "environment"));
	json_t *out = NULL;

	if (env != NULL && !rq_env_visible(rq, env))
		return err_field(e, 404, "env.not_found", "/environment",
		    "environment %.64s not found", env);
	if (!capacity_search(rq->db, rq->json, &out, e))
		return false;
	rq_reply(rq, 200, out);
	return true;
}
