/* crud: visibility, If-Match, audit and reply for the resource handlers, in one place. */
#include <stdio.h>
#include <string.h>

#include "api/crud.h"
#include "core/audit.h"

static const char *
str(json_t *o, const char *key)
{
	return json_string_value(json_object_get(o, key));
}

static long
version(json_t *o)
{
	return (long)json_integer_value(json_object_get(o, "version"));
}

bool
crud_get(struct request *rq, const struct crud *k, struct db *c, const char *id, bool lock,
	 json_t **out, struct err *e)
{
	const char *parent = k->parent ? rq_param(rq, k->parent) : NULL;

	*out = NULL;
	if (!k->get(c, id, lock, out, e))
		return false;
	if ((k->scoped && !rq_env_visible(rq, str(*out, "environment"))) ||
	    (parent != NULL && (str(*out, k->parent) == NULL ||
	    strcmp(parent, str(*out, k->parent)) != 0))) {
		json_decref(*out);
		*out = NULL;
		return err_set(e, 404, k->code, "%s not found", k->noun);
	}
	return true;
}

bool
crud_read(struct request *rq, const struct crud *k, struct err *e)
{
	json_t *obj;

	if (!crud_get(rq, k, rq->db, rq_param(rq, "id"), false, &obj, e))
		return false;
	rq_reply_object(rq, 200, obj, k->collection);
	return true;
}

bool
crud_create(struct request *rq, const struct crud *k, const char *verb, struct err *e)
{
	const char *env = k->scoped ? str(rq->json, "environment") : NULL;
	json_t *obj = NULL;
	char action[64];

	if (env != NULL && !rq_env_visible(rq, env))
		return err_field(e, 404, "env.not_found", "/environment",
		    "environment %.64s not found", env);
	if (!k->create(rq->db, rq->json, &obj, e))
		return false;
	snprintf(action, sizeof(action), "%s.%s", k->type, verb ? verb : "create");
	if (!audit_write(rq->db, &rq->actor, action, k->type, str(obj, "id"),
	    k->scoped ? str(obj, "environment") : NULL, NULL, obj, e)) {
		json_decref(obj);
		return false;
	}
	rq_reply_object(rq, 201, obj, k->collection);
	return true;
}

bool
crud_replace(struct request *rq, const struct crud *k, struct err *e)
{
	json_t *before = NULL, *obj = NULL;
	char action[64];
	bool ok = false;

	if (!crud_get(rq, k, rq->db, rq_param(rq, "id"), true, &before, e))
		return false;
	snprintf(action, sizeof(action), "%s.update", k->type);
	if (!rq_if_match(rq, version(before), e) ||
	    !k->replace(rq->db, str(before, "id"), rq->json, &obj, e))
		goto cleanup;
	if (version(obj) != version(before) && !audit_write(rq->db, &rq->actor, action, k->type,
	    str(obj, "id"), k->scoped ? str(obj, "environment") : NULL, before, obj, e))
		goto cleanup;
	rq_reply_object(rq, 200, obj, k->collection);
	obj = NULL;
	ok = true;
cleanup:
	json_decref(before);
	json_decref(obj);
	return ok;
}

bool
crud_delete(struct request *rq, const struct crud *k, struct err *e)
{
	json_t *before = NULL;
	char action[64];
	bool ok = false;

	if (!crud_get(rq, k, rq->db, rq_param(rq, "id"), true, &before, e))
		return false;
	snprintf(action, sizeof(action), "%s.delete", k->type);
	if (!rq_if_match(rq, version(before), e) || !k->del(rq->db, str(before, "id"), e) ||
	    !audit_write(rq->db, &rq->actor, action, k->type, str(before, "id"),
	    k->scoped ? str(before, "environment") : NULL, before, NULL, e))
		goto cleanup;
	rq->status = 204;
	ok = true;
cleanup:
	json_decref(before);
	return ok;
}
