/* h_move: moves, drains and operations — the on-call levers. */
#include <string.h>

#include "api/handlers.h"
#include "core/jsonx.h"
#include "queue/change/change.h"
#include "queue/jobs/job.h"
#include "regions/cluster.h"
#include "regions/env.h"

HANDLER(h_job_move)
{
	const char *id = rq_param(rq, "id");
	json_t *job = NULL, *out = NULL, *reasons = NULL, *after = NULL;
	bool ok = false, dry = json_is_true(json_object_get(rq->json, "dry_run"));

	if (!job_get(rq->db, id, false, &job, e))
		return false;
	if (!rq_env_visible(rq, json_string_value(json_object_get(job, "environment"))) ||
	    !rq_team_visible(rq, json_string_value(json_object_get(job, "team")))) {
		err_set(e, 404, "queue.job_not_found", "job not found");
		goto cleanup;
	}
	if (!move_request(rq->db, &rq->actor, id, rq->json, NULL, &out, &reasons, e)) {
		if (e->status == 409 && reasons != NULL && strcmp(e->code, "move.no_capacity") == 0) {
			json_t *errors = json_array(), *r;
			size_t i;

			json_array_foreach(reasons, i, r)
				json_array_append_new(errors, json_pack("{s:s, s:O, s:O, s:O}",
				    "pointer", "/target", "cluster", json_object_get(r, "cluster"),
				    "region", json_object_get(r, "region"),
				    "detail", json_object_get(r, "reason")));
			rq_problem(rq, 409, e->code, e->msg, e->detail, errors);
			ok = true;
		}
		goto cleanup;
	}
	if (dry) {
		rq_reply(rq, 200, out);
		out = NULL;
		ok = true;
		goto cleanup;
	}
	if (!job_get(rq->db, id, false, &after, e) ||
	    !audit_write(rq->db, &rq->actor, "job.move", "job", id,
	    json_string_value(json_object_get(job, "environment")), job, after, e))
		goto cleanup;
	json_object_set(out, "job", after);
	rq_reply(rq, 202, out);
	out = NULL;
	ok = true;
cleanup:
	json_decref(job);
	json_decref(after);
	json_decref(out);
	json_decref(reasons);
	return ok;
}

/* The optional body of a drain: {"source": "unreachable"}; adds it to scope. */
static bool
drain_body(struct request *rq, json_t *scope, struct err *e)
{
	static const char *const allowed[] = { "source", NULL };
	const char *source = NULL;

	if (rq->json == NULL)	/* no body (R_BODY_OPT) */
		return true;
	if (!jsonx_only(rq->json, allowed, "", e) ||
	    !jsonx_str(rq->json, "source", "", false, &source, e))
		return false;
	if (source != NULL && strcmp(source, "unreachable") != 0)
		return err_field(e, 400, "move.bad_source", "/source",
		    "source may only be \"unreachable\"");
	if (source != NULL)
		json_object_set_new(scope, "source", json_string(source));
	return true;
}

static bool
drain(struct request *rq, json_t *scope, const char *env, const char *rid, struct err *e)
{
	json_t *op = NULL;

	if (!drain_body(rq, scope, e) || !move_drain(rq->db, &rq->actor, scope, &op, e))
		return false;
	if (!audit_write(rq->db, &rq->actor, "drain", "operation",
	    json_string_value(json_object_get(op, "id")), env, scope, op, e)) {
		json_decref(op);
		return false;
	}
	(void)rid;
	rq->location = arena_printf(rq->arena, "/v1/operations/%s",
	    json_string_value(json_object_get(op, "id")));
	rq_reply(rq, json_integer_value(json_object_get(op, "total")) ? 202 : 200, op);
	return true;
}

/* A role held in a team may drain a cluster of its environments of its team's jobs only:
 * the cluster, shared with other teams, is not cordoned. */
HANDLER(h_cluster_drain)
{
	const char *id = rq_param(rq, "id");
	json_t *k = NULL, *scope;
	bool ok;

	if (!cluster_get(rq->db, id, true, &k, e))
		return false;
	if (!rq_env_visible(rq, json_string_value(json_object_get(k, "environment")))) {
		json_decref(k);
		return err_set(e, 404, "cluster.not_found", "cluster not found");
	}
	scope = json_pack("{s:s, s:O}", "cluster_id", id, "environment",
	    json_object_get(k, "environment"));
	/* an operator held in a team drains its team's jobs off the cluster, no other's */
	if (rq_in_team(rq))
		json_object_set_new(scope, "team", json_string(rq->team));
	ok = drain(rq, scope, json_string_value(json_object_get(k, "environment")), id, e);
	json_decref(scope);
	json_decref(k);
	return ok;
}

HANDLER(h_region_drain)
{
	const char *env = rq_param(rq, "environment"), *region = rq_param(rq, "region");
	json_t *scope;
	bool ok;

	if (!rq_env_visible(rq, env))
		return err_set(e, 404, "env.not_found", "environment %.64s not found", env);
	if (!env_get(rq->db, env, false, &scope, e))	/* 404 env.not_found */
		return false;
	json_decref(scope);
	scope = json_pack("{s:s, s:s}", "environment", env, "region", region);
	ok = drain(rq, scope, env, region, e);
	json_decref(scope);
	return ok;
}

HANDLER(h_operation_list)
{
	const char *after;
	json_t *items;
	int limit;

	/* a role held in a team sees its team's drains only */
	if (!rq_page(rq, &limit, &after, e) || !move_operation_list(rq->db, limit + 1, after,
	    rq_query(rq, "state"), rq_query(rq, "environment"), rq->team, rq->envs, rq->nenvs,
	    &items, e))
		return false;
	rq_reply(rq, 200, rq_page_reply(rq, items, limit, "id"));
	return true;
}

/* Operation id when the caller may see its environment (and, for a role held in a team,
 * it is that team's drain); else 404 operation.not_found. */
static bool
operation_get(struct request *rq, json_t **op, struct err *e)
{
	const char *team;

	if (!move_operation_get(rq->db, rq_param(rq, "id"), op, e))
		return false;
	team = json_string_value(json_object_get(json_object_get(*op, "target"), "team"));
	if (!rq_env_visible(rq, json_string_value(json_object_get(*op, "environment"))) ||
	    (rq_in_team(rq) && (team == NULL || strcmp(team, rq->team) != 0))) {
		json_decref(*op);
		*op = NULL;
		return err_set(e, 404, "operation.not_found", "operation not found");
	}
	return true;
}

HANDLER(h_operation_get)
{
	json_t *op = NULL;

	if (!operation_get(rq, &op, e))
		return false;
	rq_reply(rq, 200, op);
	return true;
}

HANDLER(h_operation_cancel)
{
	json_t *op = NULL;

	if (!operation_get(rq, &op, e))
		return false;
	json_decref(op);
	op = NULL;
	if (!move_operation_cancel(rq->db, rq_param(rq, "id"), &op, e))
		return false;
	if (!audit_write(rq->db, &rq->actor, "operation.cancel", "operation",
	    rq_param(rq, "id"), json_string_value(json_object_get(op, "environment")), NULL, op, e)) {
		json_decref(op);
		return false;
	}
	rq_reply(rq, 200, op);
	return true;
}
