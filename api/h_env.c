/* h_env: /v1/environments. */
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

HANDLER(h_env_create)
{
	json_t *obj = NULL;

	/* A new environment is outside every scoped token: only "*" admins create them
	 * (and a scoped admin cannot probe which names exist). */
	if (!rq_env_visible(rq, "*"))
		return err_set(e, 403, "auth.forbidden",
		    "only a token for every environment may create environments");
	if (!env_create(rq->db, rq->json, &obj, e))
		return false;
	if (!audit_write(rq->db, &rq->actor, "environment.create", "environment",
	    json_string_value(json_object_get(obj, "id")),
	    json_string_value(json_object_get(obj, "name")), NULL, obj, e)) {
		json_decref(obj);
		return false;
	}
	rq->location = arena_printf(rq->arena, "/v1/environments/%s",
	    json_string_value(json_object_get(obj, "name")));
	rq->etag = rq_etag(rq, json_integer_value(json_object_get(obj, "version")));
	rq_reply(rq, 201, obj);
	return true;
}

HANDLER(h_env_get)
{
	const char *name = rq_param(rq, "name");
	json_t *obj = NULL;

	if (!rq_env_visible(rq, name))
		return err_set(e, 404, "env.not_found", "environment %.64s not found", name);
	if (!env_get(rq->db, name, &obj, e))
		return false;
	rq->etag = rq_etag(rq, json_integer_value(json_object_get(obj, "version")));
	rq_reply(rq, 200, obj);
	return true;
}

HANDLER(h_env_replace)
{
	const char *name = rq_param(rq, "name");
	json_t *before = NULL, *obj = NULL;
	bool ok = false;

	if (!rq_env_visible(rq, name))
		return err_set(e, 404, "env.not_found", "environment %.64s not found", name);
	if (!env_get(rq->db, name, &before, e))
		return false;
	if (!rq_if_match(rq, json_integer_value(json_object_get(before, "version")), e))
		goto cleanup;
	json_decref(before);
	before = NULL;
	if (!env_replace(rq->db, name, rq->json, &before, &obj, e))
		goto cleanup;
	if (json_integer_value(json_object_get(before, "version")) !=
	    json_integer_value(json_object_get(obj, "version")) &&
	    !audit_write(rq->db, &rq->actor, "environment.update", "environment",
	    json_string_value(json_object_get(obj, "id")), name, before, obj, e))
		goto cleanup;
	rq->etag = rq_etag(rq, json_integer_value(json_object_get(obj, "version")));
	rq_reply(rq, 200, obj);
	obj = NULL;
	ok = true;
cleanup:
	json_decref(before);
	json_decref(obj);
	return ok;
}

HANDLER(h_env_delete)
{
	const char *name = rq_param(rq, "name");
	json_t *before = NULL;
	bool ok = false;

	if (!rq_env_visible(rq, name))
		return err_set(e, 404, "env.not_found", "environment %.64s not found", name);
	if (!env_delete(rq->db, name, &before, e))
		goto cleanup;
	if (!audit_write(rq->db, &rq->actor, "environment.delete", "environment",
	    json_string_value(json_object_get(before, "id")), name, before, NULL, e))
		goto cleanup;
	rq->status = 204;
	ok = true;
cleanup:
	json_decref(before);
	return ok;
}
