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

static const char *
key(const struct crud *k)
{
	return k->key ? k->key : "id";
}

/* The row's environment (for visibility and the audit row), or NULL. */
static const char *
env_of(const struct crud *k, json_t *o)
{
	return k->scoped ? str(o, k->env ? k->env : "environment") : NULL;
}

/* The caller may see every environment of the row's list member k->envs. */
static bool
envs_visible(struct request *rq, const struct crud *k, json_t *o)
{
	json_t *list = json_object_get(o, k->envs), *v;
	size_t i;

	json_array_foreach(list, i, v)
		if (!rq_env_visible(rq, json_string_value(v)))
			return false;
	return json_is_array(list);
}

/* Reply with the row, its ETag and (201) its Location collection/<key>. */
static void
reply(struct request *rq, const struct crud *k, int status, json_t *obj)
{
	if (status == 201 && k->collection != NULL)
		rq->location = arena_printf(rq->arena, "%s/%s", k->collection, str(obj, key(k)));
	rq_reply_object(rq, status, obj, NULL);
}

static bool
audit(struct request *rq, const struct crud *k, const char *verb, json_t *before,
    json_t *after, struct err *e)
{
	json_t *row = after ? after : before;
	char action[64];

	snprintf(action, sizeof(action), "%s.%s", k->type, verb);
	/* rows without an id (teams) are named by their key */
	return audit_write(rq->db, &rq->actor, action, k->type,
	    str(row, "id") ? str(row, "id") : str(row, key(k)), env_of(k, row),
	    before, after, e);
}

bool
crud_get(struct request *rq, const struct crud *k, struct db *c, const char *id, bool lock,
	 json_t **out, struct err *e)
{
	const char *parent = k->parent ? rq_param(rq, k->parent) : NULL;

	*out = NULL;
	if (!k->get(c, id, lock, out, e))
		return false;
	if ((k->scoped && !rq_env_visible(rq, env_of(k, *out))) ||
	    (k->team != NULL && !rq_team_visible(rq, str(*out, k->team))) ||
	    (k->envs != NULL && !envs_visible(rq, k, *out)) || (parent != NULL && (str(*out, k->parent) == NULL ||
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

	if (!crud_get(rq, k, rq->db, rq_param(rq, key(k)), false, &obj, e))
		return false;
	reply(rq, k, 200, obj);
	return true;
}

bool
crud_create(struct request *rq, const struct crud *k, const char *verb, struct err *e)
{
	const char *env = env_of(k, rq->json);
	json_t *obj = NULL;

	if (env != NULL && !rq_env_visible(rq, env))
		return err_field(e, 404, "env.not_found", "/environment",
		    "environment %.64s not found", env);
	if (!k->create(rq->db, rq->json, &obj, e))
		return false;
	if (!audit(rq, k, verb ? verb : "create", NULL, obj, e)) {
		json_decref(obj);
		return false;
	}
	reply(rq, k, 201, obj);
	return true;
}

/* crud_replace and crud_action: get locked, (If-Match), act, audit when the version
 * moved, 200. */
static bool
change(struct request *rq, const struct crud *k, const char *id, const char *verb,
    bool if_match, crud_act_fn act, void *arg, struct err *e)
{
	json_t *before = NULL, *obj = NULL;
	bool ok = false;

	if (!crud_get(rq, k, rq->db, id, true, &before, e))
		return false;
	if ((if_match && !rq_if_match(rq, version(before), e)) ||
	    !act(rq->db, str(before, key(k)), arg, &obj, e))
		goto cleanup;
	if (version(obj) != version(before) && !audit(rq, k, verb, before, obj, e))
		goto cleanup;
	reply(rq, k, 200, obj);
	obj = NULL;
	ok = true;
cleanup:
	json_decref(before);
	json_decref(obj);
	return ok;
}

struct replace_arg {
	const struct crud	*k;
	json_t			*body;
};

static bool
replace(struct db *c, const char *id, void *arg, json_t **out, struct err *e)
{
	struct replace_arg *a = arg;

	return a->k->replace(c, id, a->body, out, e);
}

bool
crud_replace(struct request *rq, const struct crud *k, struct err *e)
{
	struct replace_arg a = { k, rq->json };

	return change(rq, k, rq_param(rq, key(k)), "update", true, replace, &a, e);
}

bool
crud_action(struct request *rq, const struct crud *k, const char *id, const char *verb,
    crud_act_fn act, void *arg, struct err *e)
{
	return change(rq, k, id, verb, false, act, arg, e);
}

bool
crud_delete(struct request *rq, const struct crud *k, struct err *e)
{
	json_t *before = NULL;
	bool ok = false;

	if (!crud_get(rq, k, rq->db, rq_param(rq, key(k)), true, &before, e))
		return false;
	if (!rq_if_match(rq, version(before), e) || !k->del(rq->db, str(before, key(k)), e) ||
	    !audit(rq, k, k->del_verb ? k->del_verb : "delete", before, NULL, e))
		goto cleanup;
	rq->status = 204;
	ok = true;
cleanup:
	json_decref(before);
	return ok;
}
