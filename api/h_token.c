/* h_token: /v1/tokens (admin) — the secret is in the 201 answer and nowhere else. */
#include <stdlib.h>
#include <string.h>

#include "api/handlers.h"
#include "core/jsonx.h"
#include "iam/token.h"

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
	static const char *const allowed[] = { "name", "role", "environments", NULL };
	const char *name = NULL, *role = NULL;
	json_t *obj = NULL, *envs;
	char *secret = NULL;
	bool ok = false;

	if (!jsonx_only(rq->json, allowed, "", e) ||
	    !jsonx_str(rq->json, "name", "", true, &name, e) ||
	    !jsonx_str(rq->json, "role", "", true, &role, e))
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
	if (!token_create(rq->db, name, role, envs, &secret, &obj, e))
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
	json_t *obj = NULL;

	if (!token_get(rq->db, rq_param(rq, "id"), rq->envs, rq->nenvs, &obj, e))
		return false;
	rq->etag = rq_etag(rq, json_integer_value(json_object_get(obj, "version")));
	rq_reply(rq, 200, obj);
	return true;
}

HANDLER(h_token_delete)
{
	const char *id = rq_param(rq, "id");
	json_t *before = NULL;
	bool ok;

	ok = token_revoke(rq->db, id, rq->envs, rq->nenvs, &before, e) &&
	    audit_write(rq->db, &rq->actor, "token.revoke", "token", id, NULL, before, NULL, e);
	json_decref(before);
	if (ok)
		rq->status = 204;
	return ok;
}
