/* h_webhook: /v1/webhooks — endpoints for portals (rows and outbox: queue/hooks/).  A
 * secret is in an answer twice only: at creation and at rotation. */
#include <string.h>

#include "api/crud.h"
#include "api/handlers.h"
#include "core/jsonx.h"
#include "queue/hooks/webhook.h"

static const struct crud hooks = {
	.type = "webhook", .code = "webhook.not_found", .noun = "webhook",
	.collection = "/v1/webhooks", .scoped = true, .get = webhook_get, .del = webhook_delete,
};

/* Adds the secret to the answer already set (rq->reply), then wipes it. */
static void
reply_secret(struct request *rq, char *secret)
{
	json_object_set_new(rq->reply, "secret", json_string(secret));
	memset(secret, 0, strlen(secret));
	free(secret);
}

HANDLER(h_webhook_create)
{
	const char *env = jsonx_at(rq->json, "environment", NULL);
	json_t *obj = NULL;
	char *secret = NULL;

	if (env != NULL && !rq_env_visible(rq, env))
		return err_field(e, 404, "env.not_found", "/environment",
		    "environment %.64s not found", env);
	if (!webhook_create(rq->db, rq->json, &obj, &secret, e))
		return false;
	if (!audit_write(rq->db, &rq->actor, "webhook.create", "webhook",
	    jsonx_at(obj, "id", NULL), env, NULL, obj, e)) {
		json_decref(obj);
		memset(secret, 0, strlen(secret));
		free(secret);
		return false;
	}
	rq->location = arena_printf(rq->arena, "/v1/webhooks/%s", jsonx_at(obj, "id", NULL));
	rq_reply_object(rq, 201, obj, NULL);
	reply_secret(rq, secret);
	return true;
}

HANDLER(h_webhook_list)
{
	const char *after;
	int limit;
	json_t *items = NULL;

	if (!rq_page(rq, &limit, &after, e) ||
	    !webhook_list(rq->db, limit + 1, after, rq_query(rq, "environment"), rq->envs,
	    rq->nenvs, &items, e))
		return false;
	rq_reply(rq, 200, rq_page_reply(rq, items, limit, "id"));
	return true;
}

HANDLER(h_webhook_get)
{
	return crud_read(rq, &hooks, e);
}

HANDLER(h_webhook_delete)
{
	return crud_delete(rq, &hooks, e);
}

/* The bodies are read after the endpoint is found: another environment's is 404 first. */
struct rotate_arg {
	json_t	*body;		/* may be NULL */
	char	*secret;
};

static bool
rotate(struct db *c, const char *id, void *arg, json_t **out, struct err *e)
{
	static const char *const allowed[] = { "grace_seconds", NULL };
	struct rotate_arg *a = arg;
	long long grace = WEBHOOK_GRACE_DEFAULT_S;

	if (a->body != NULL && (!jsonx_only(a->body, allowed, "", e) ||
	    !jsonx_int(a->body, "grace_seconds", "", false, &grace, e)))
		return false;
	if (grace < 0 || grace > WEBHOOK_GRACE_MAX_S)
		return err_field(e, 422, "webhook.bad_grace", "/grace_seconds",
		    "grace_seconds must be 0 to %d", WEBHOOK_GRACE_MAX_S);
	return webhook_rotate(c, id, (long)grace, out, &a->secret, e);
}

HANDLER(h_webhook_rotate)
{
	struct rotate_arg a = { rq->json, NULL };

	if (!crud_action(rq, &hooks, rq_param(rq, "id"), "rotate_secret", rotate, &a, e)) {
		free(a.secret);
		return false;
	}
	reply_secret(rq, a.secret);
	return true;
}

static bool
replay(struct db *c, const char *id, void *arg, json_t **out, struct err *e)
{
	static const char *const allowed[] = { "from_event", NULL };
	long long from = 0;

	if (!jsonx_only(arg, allowed, "", e) || !jsonx_int(arg, "from_event", "", true, &from, e))
		return false;
	return webhook_replay(c, id, from, out, e);
}

HANDLER(h_webhook_replay)
{
	return crud_action(rq, &hooks, rq_param(rq, "id"), "replay", replay, rq->json, e);
}

HANDLER(h_webhook_deliveries)
{
	const char *after;
	int limit;
	json_t *hook = NULL, *items = NULL;

	if (!rq_page(rq, &limit, &after, e) ||
	    !crud_get(rq, &hooks, rq->db, rq_param(rq, "id"), false, &hook, e))
		return false;
	json_decref(hook);
	if (!webhook_deliveries(rq->db, rq_param(rq, "id"), rq_query(rq, "state"), limit + 1,
	    after, rq->envs, rq->nenvs, &items, e))
		return false;
	rq_reply(rq, 200, rq_page_reply(rq, items, limit, "id"));
	return true;
}
