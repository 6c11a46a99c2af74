/* h_token: /v1/tokens (admin) — the secret is in the 201 answer and nowhere else. */
#include <stdlib.h>
#include <string.h>

#include "api/crud.h"
#include "api/handlers.h"
#include "core/jsonx.h"
#include "iam/token.h"

/* Get and revoke: a caller sees a token only when it may see every environment the token
 * names (a "*" token only by a "*" caller); others do not exist for it (404).  Create is
 * its own: the secret joins the 201 answer after the audit row, never before. */
static const struct crud tokens = {
	.type = "token", .code = "token.not_found", .noun = "token",
	.collection = "/v1/tokens", .envs = "environments", .del_verb = "revoke",
	.get = token_get, .del = token_revoke,
};

HANDLER(h_token_list)
{
	const char *after;
	int limit;
	json_t *items = NULL;

	if (!rq_page(rq, &limit, &after, e) ||
	    !token_list(rq->db, limit + 1, after, rq->envs, rq->nenvs, &items, e))
		return false;
	rq_reply(rq, 200, rq_page_reply(rq, items, limit, "id"));
	return true;
}

HANDLER(h_token_create)
{
	static const char *const allowed[] = { "name", "role", "environments", "team", NULL };
	const char *name = NULL, *role = NULL, *team = NULL;
	json_t *obj = NULL, *envs;
	char *secret = NULL;
	bool ok = false;

	if (!jsonx_only(rq->json, allowed, "", e) ||
	    !jsonx_str(rq->json, "name", "", true, &name, e) ||
	    !jsonx_str(rq->json, "role", "", true, &role, e) ||
	    !jsonx_str(rq->json, "team", "", false, &team, e))
		return false;
	envs = json_object_get(rq->json, "environments");
	if (envs == NULL)
		return err_field(e, 400, "api.missing_field", "/environments",
		    "environments is required");
	/* A token may not grant what its creator cannot see. */
	if (!rq_env_visible(rq, "*")) {
		size_t i;
		json_t *v;

		json_array_foreach(envs, i, v)
			if (!json_is_string(v) || !rq_env_visible(rq, json_string_value(v)))
				return err_field(e, 403, "token.scope",
				    "/environments", "a token may only grant environments its "
				    "creator can see");
	}
	if (!token_create(rq->db, name, role, envs, team, &secret, &obj, e))
		goto cleanup;
	if (!audit_write(rq->db, &rq->actor, "token.create", "token",
	    json_string_value(json_object_get(obj, "id")), NULL, NULL, obj, e))
		goto cleanup;
	json_object_set_new(obj, "secret", json_string(secret));
	rq->location = arena_printf(rq->arena, "/v1/tokens/%s",
	    json_string_value(json_object_get(obj, "id")));
	rq_reply(rq, 201, obj);
	obj = NULL;
	ok = true;
cleanup:
	if (secret != NULL) {
		memset(secret, 0, strlen(secret));
		free(secret);
	}
	json_decref(obj);
	return ok;
}

HANDLER(h_token_get)
{
	return crud_read(rq, &tokens, e);
}

HANDLER(h_token_delete)
{
	return crud_delete(rq, &tokens, e);
}
