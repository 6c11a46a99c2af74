/* h_env: /v1/environments. */
#include "api/crud.h"
#include "api/handlers.h"
#include "regions/env.h"

HANDLER(h_env_list)
{
	const char *after;
	int limit;
	json_t *items = NULL;
	bool all = rq_env_visible(rq, "*");

	if (!rq_page(rq, &limit, &after, e))
		return false;
	if (!env_list(rq->db, limit + 1, after, all ? NULL : rq->envs, all ? 0 : rq->nenvs,
	    &items, e))
		return false;
	rq_reply(rq, 200, rq_page_reply(rq, items, limit, "name"));
	return true;
}

static const struct crud envs = {
	.type = "environment", .code = "env.not_found", .noun = "environment",
	.collection = "/v1/environments", .key = "name", .scoped = true, .env = "name",
	.get = env_get, .create = env_create, .replace = env_replace, .del = env_delete,
};

HANDLER(h_env_create)
{
	/* A new environment is outside every scoped token: only "*" admins create them
	 * (and a scoped admin cannot probe which names exist). */
	if (!rq_env_visible(rq, "*"))
		return err_set(e, 403, "auth.forbidden",
		    "only a token for every environment may create environments");
	return crud_create(rq, &envs, NULL, e);
}

HANDLER(h_env_get)
{
	return crud_read(rq, &envs, e);
}

HANDLER(h_env_replace)
{
	return crud_replace(rq, &envs, e);
}

HANDLER(h_env_delete)
{
	return crud_delete(rq, &envs, e);
}
