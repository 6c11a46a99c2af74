/* h_queue: /v1/queues and /v1/priority-classes. */
#include <string.h>

#include "api/crud.h"
#include "api/handlers.h"
#include "queue/jobs/explain.h"
#include "queue/jobs/queue.h"

static const struct crud queues = {
	.type = "queue", .code = "queue.not_found", .noun = "queue",
	.collection = "/v1/queues", .scoped = true, .team = "team", .get = queue_get, .create = queue_create,
	.replace = queue_replace, .del = queue_delete,
};

static const struct crud pcs = {
	.type = "priority_class", .code = "pc.not_found", .noun = "priority class",
	.collection = "/v1/priority-classes", .get = queue_pc_get, .create = queue_pc_create,
	.replace = queue_pc_replace, .del = queue_pc_delete,
};

HANDLER(h_queue_create)
{
	return crud_create(rq, &queues, NULL, e);
}

HANDLER(h_queue_list)
{
	const char *after;
	int limit;
	json_t *items = NULL;

	if (!rq_page(rq, &limit, &after, e) ||
	    !queue_list(rq->db, limit + 1, after, rq_query(rq, "environment"),
	    rq->team, rq->envs, rq->nenvs, &items, e))
		return false;
	rq_reply(rq, 200, rq_page_reply(rq, items, limit, "id"));
	return true;
}

HANDLER(h_queue_get)
{
	return crud_read(rq, &queues, e);
}

/* A caller holding its role in a team sees its cohort's other queues' shares, not their
 * ids, unless they are its team's too. */
static bool
mask_peers(struct request *rq, json_t *st, struct err *e)
{
	json_t *peers = json_object_get(json_object_get(st, "fair_share"), "cohort"), *p, *q;
	size_t i;

	if (!rq_in_team(rq))
		return true;
	json_array_foreach(peers, i, p) {
		const char *id = json_string_value(json_object_get(p, "queue_id"));

		if (id == NULL)
			continue;
		q = NULL;
		if (!queue_get(rq->db, id, false, &q, e))
			return false;
		if (!rq_team_visible(rq, json_string_value(json_object_get(q, "team"))))
			json_object_set_new(p, "queue_id", json_null());
		json_decref(q);
	}
	return true;
}

/* The queue is checked visible (404 otherwise, another team's too) before its
 * environment's scheduler model is built: another environment's model is never read for a
 * caller who cannot see it. */
HANDLER(h_queue_status)
{
	json_t *q = NULL, *st = NULL;

	if (!crud_get(rq, &queues, rq->db, rq_param(rq, "id"), false, &q, e))
		return false;
	json_decref(q);
	if (!explain_queue(rq->db, rq_param(rq, "id"), &st, e))
		return false;
	if (!mask_peers(rq, st, e)) {
		json_decref(st);
		return false;
	}
	rq_reply(rq, 200, st);
	return true;
}

HANDLER(h_queue_replace)
{
	return crud_replace(rq, &queues, e);
}

HANDLER(h_queue_delete)
{
	return crud_delete(rq, &queues, e);
}

HANDLER(h_pc_create)
{
	return crud_create(rq, &pcs, NULL, e);
}

HANDLER(h_pc_list)
{
	const char *after;
	int limit;
	json_t *items = NULL;

	if (!rq_page(rq, &limit, &after, e) || !queue_pc_list(rq->db, limit + 1, after, &items, e))
		return false;
	rq_reply(rq, 200, rq_page_reply(rq, items, limit, "name"));
	return true;
}

HANDLER(h_pc_get)
{
	return crud_read(rq, &pcs, e);
}

HANDLER(h_pc_replace)
{
	return crud_replace(rq, &pcs, e);
}

HANDLER(h_pc_delete)
{
	return crud_delete(rq, &pcs, e);
}
