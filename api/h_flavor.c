/* h_flavor: /v1/flavors — the accelerator catalog (regions/flavor.c): the built-ins and what
 * an admin added or overrode.  PUT creates or replaces (a built-in is overridden, never
 * deleted), so it cannot be crud_replace; it audits as crud does. */
#include <string.h>

#include "api/handlers.h"
#include "core/audit.h"
#include "regions/flavor.h"

static bool
audit(struct request *rq, const char *action, const char *name, json_t *before,
    json_t *after, struct err *e)
{
	return audit_write(rq->db, &rq->actor, action, "flavor", name, NULL, before, after, e);
}

HANDLER(h_flavor_list)
{
	const char *after;
	int limit;
	json_t *items = NULL;

	if (!rq_page(rq, &limit, &after, e) || !flavor_list(rq->db, limit + 1, after, &items, e))
		return false;
	rq_reply(rq, 200, rq_page_reply(rq, items, limit, "name"));
	return true;
}

HANDLER(h_flavor_get)
{
	json_t *o = NULL;

	if (!flavor_get(rq->db, rq_param(rq, "name"), false, &o, e))
		return false;
	rq_reply_object(rq, 200, o, NULL);
	return true;
}

HANDLER(h_flavor_put)
{
	const char *name = rq_param(rq, "name");
	json_t *before = NULL, *after = NULL;
	struct err miss = { 0 };
	bool created, ok = false;	/* created: a row, which may override a built-in */
	long v0 = -1;

	if (flavor_get(rq->db, name, true, &before, &miss))
		v0 = (long)json_integer_value(json_object_get(before, "version"));
	else if (miss.status != 404) {
		*e = miss;
		return false;
	}
	if ((before != NULL && !rq_if_match(rq, v0, e)) ||
	    !flavor_put(rq->db, name, rq->json, &created, &after, e))
		goto cleanup;
	if ((before == NULL || v0 != json_integer_value(json_object_get(after, "version"))) &&
	    !audit(rq, before == NULL ? "flavor.create" : "flavor.update", name, before, after,
	    e))
		goto cleanup;
	if (before == NULL)
		rq->location = arena_printf(rq->arena, "/v1/flavors/%s", name);
	rq_reply_object(rq, before == NULL ? 201 : 200, after, NULL);
	after = NULL;
	ok = true;
cleanup:
	json_decref(before);
	json_decref(after);
	return ok;
}

HANDLER(h_flavor_delete)
{
	const char *name = rq_param(rq, "name");
	json_t *before = NULL;
	bool ok = false;

	if (!flavor_get(rq->db, name, true, &before, e))
		return false;
	if (!rq_if_match(rq, (long)json_integer_value(json_object_get(before, "version")), e) ||
	    !flavor_delete(rq->db, name, e) || !audit(rq, "flavor.delete", name, before, NULL, e))
		goto cleanup;
	rq->status = 204;
	ok = true;
cleanup:
	json_decref(before);
	return ok;
}
