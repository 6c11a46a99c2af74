/* h_queue: /v1/queues and /v1/priority-classes. */
#include <string.h>

#include "api/handlers.h"
#include "queue/store.h"

static bool
visible_queue(struct request *rq, const char *id, json_t **out, struct err *e)
{
	if (!queue_get(rq->db, id, out, e))
		return false;
	if (!rq_env_visible(rq, json_string_value(json_object_get(*out, "environment")))) {
		json_decref(*out);
		*out = NULL;
		return err_set(e, 404, "queue.not_found", "queue not found");
	}
	return true;
}

HANDLER(h_queue_create)
{
	const char *env = json_string_value(json_object_get(rq->json, "environment"));
	json_t *obj = NULL;

	if (env != NULL && !rq_env_visible(rq, env))
		return err_field(e, 404, "env.not_found", "/environment",
		    "environment %.64s not found", env);
	if (!queue_create(rq->db, rq->json, &obj, e))
		return false;
	if (!audit_write(rq->db, &rq->actor, "queue.create", "queue",
	    json_string_value(json_object_get(obj, "id")), env, NULL, obj, e)) {
		json_decref(obj);
		return false;
	}
	rq_reply_object(rq, 201, obj, "/v1/queues");
	return true;
}

HANDLER(h_queue_list)
{
	const char *after;
	int limit;
	json_t *items = NULL;

	if (!rq_page(rq, &limit, &after, e) ||
	    !queue_list(rq->db, limit + 1, after, rq_query(rq, "environment"), rq->envs,
	    rq->nenvs, &items, e))
		return false;
	rq_reply(rq, 200, page_reply(rq, items, limit, "id"));
	return true;
}

HANDLER(h_queue_get)
{
	json_t *obj = NULL;

	if (!visible_queue(rq, rq_param(rq, "id"), &obj, e))
		return false;
	rq_reply_object(rq, 200, obj, NULL);
	return true;
}

HANDLER(h_queue_replace)
{
	const char *id = rq_param(rq, "id");
	json_t *before = NULL, *obj = NULL;
	bool ok = false;

	if (!visible_queue(rq, id, &before, e))
		return false;
	if (!rq_if_match(rq, json_integer_value(json_object_get(before, "version")), e) ||
	    !queue_replace(rq->db, id, rq->json, &obj, e))
		goto cleanup;
	if (!json_equal(before, obj) && !audit_write(rq->db, &rq->actor, "queue.update", "queue",
	    id, json_string_value(json_object_get(obj, "environment")), before, obj, e))
		goto cleanup;
	rq_reply_object(rq, 200, obj, NULL);
	obj = NULL;
	ok = true;
cleanup:
	json_decref(before);
	json_decref(obj);
	return ok;
}

HANDLER(h_queue_delete)
{
	const char *id = rq_param(rq, "id");
	json_t *before = NULL;
	bool ok = false;

	if (!visible_queue(rq, id, &before, e))
		return false;
	if (!rq_if_match(rq, json_integer_value(json_object_get(before, "version")), e) ||
	    !queue_delete(rq->db, id, e) ||
	    !audit_write(rq->db, &rq->actor, "queue.delete", "queue", id,
	    json_string_value(json_object_get(before, "environment")), before, NULL, e))
		goto cleanup;
	rq->status = 204;
	ok = true;
cleanup:
	json_decref(before);
	return ok;
}

HANDLER(h_pc_create)
{
	json_t *obj = NULL;

	if (!pc_create(rq->db, rq->json, &obj, e))
		return false;
	if (!audit_write(rq->db, &rq->actor, "priority_class.create", "priority_class",
	    json_string_value(json_object_get(obj, "id")), NULL, NULL, obj, e)) {
		json_decref(obj);
		return false;
	}
	rq_reply_object(rq, 201, obj, "/v1/priority-classes");
	return true;
}

HANDLER(h_pc_list)
{
	const char *after;
	int limit;
	json_t *items = NULL;

	if (!rq_page(rq, &limit, &after, e) || !pc_list(rq->db, limit + 1, after, &items, e))
		return false;
	rq_reply(rq, 200, page_reply(rq, items, limit, "name"));
	return true;
}

HANDLER(h_pc_get)
{
	json_t *obj = NULL;

	if (!pc_get(rq->db, rq_param(rq, "id"), &obj, e))
		return false;
	rq_reply_object(rq, 200, obj, NULL);
	return true;
}

HANDLER(h_pc_replace)
{
	json_t *before = NULL, *obj = NULL;
	bool ok = false;

	if (!pc_get(rq->db, rq_param(rq, "id"), &before, e))
		return false;
	if (!rq_if_match(rq, json_integer_value(json_object_get(before, "version")), e) ||
	    !pc_replace(rq->db, json_string_value(json_object_get(before, "id")), rq->json, &obj, e))
		goto cleanup;
	if (!json_equal(before, obj) && !audit_write(rq->db, &rq->actor,
	    "priority_class.update", "priority_class",
	    json_string_value(json_object_get(obj, "id")), NULL, before, obj, e))
		goto cleanup;
	rq_reply_object(rq, 200, obj, NULL);
	obj = NULL;
	ok = true;
cleanup:
	json_decref(before);
	json_decref(obj);
	return ok;
}

HANDLER(h_pc_delete)
{
	json_t *before = NULL;
	bool ok = false;
	const char *id;

	if (!pc_get(rq->db, rq_param(rq, "id"), &before, e))
		return false;
	id = json_string_value(json_object_get(before, "id"));
	if (!pc_delete(rq->db, id, e) || !audit_write(rq->db, &rq->actor, "priority_class.delete",
	    "priority_class", id, NULL, before, NULL, e))
		goto cleanup;
	rq->status = 204;
	ok = true;
cleanup:
	json_decref(before);
	return ok;
}
