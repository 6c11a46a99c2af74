/* h_team: /v1/teams — the teams that own queues; environment admins create and delete them,
 * a caller holding its role in a team sees that team only. */
#include <string.h>

#include "api/crud.h"
#include "api/handlers.h"
#include "iam/team.h"

/* A caller sees a team when it may see every environment of it (and, in a team, only its
 * own); others do not exist for it (404). */
static const struct crud teams = {
	.type = "team", .code = "team.not_found", .noun = "team", .collection = "/v1/teams",
	.key = "name", .envs = "environments", .team = "name", .get = team_get,
	.create = team_create, .del = team_delete,
};

HANDLER(h_team_list)
{
	const char *after;
	int limit;
	json_t *items = NULL;

	if (!rq_page(rq, &limit, &after, e) || !team_list(rq->db, limit + 1, after,
	    rq->team, rq->envs, rq->nenvs, &items, e))
		return false;
	rq_reply(rq, 200, rq_page_reply(rq, items, limit, "name"));
	return true;
}

HANDLER(h_team_create)
{
	json_t *envs = json_object_get(rq->json, "environments"), *v;
	size_t i;

	/* a team may not reach environments its creator cannot see */
	json_array_foreach(envs, i, v)
		if (json_is_string(v) && !rq_env_visible(rq, json_string_value(v)))
			return err_field(e, 422, "team.bad_environment",
			    arena_printf(rq->arena, "/environments/%zu", i),
			    "environment %.64s not found", json_string_value(v));
	return crud_create(rq, &teams, NULL, e);
}

HANDLER(h_team_get)
{
	return crud_read(rq, &teams, e);
}

HANDLER(h_team_delete)
{
	return crud_delete(rq, &teams, e);
}
