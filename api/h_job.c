/* h_job: /v1/jobs — submit, list, get, cancel, events, manifest, placement, postmortem. */
#include <stdlib.h>
#include <string.h>

#include "api/crud.h"
#include "api/handlers.h"
#include "core/crypto.h"
#include "queue/change/change.h"
#include "queue/jobs/explain.h"
#include "queue/jobs/job.h"
#include "queue/jobs/job_text.h"
#include "queue/jobs/postmortem.h"
#include "queue/jobs/rayauth.h"

static const struct crud jobs = {
	.type = "job", .code = "queue.job_not_found", .noun = "job", .collection = "/v1/jobs",
	.scoped = true, .team = "team", .get = job_get, .create = job_submit,
};

/* As crud_create, with the caller's team (its queues only) and the caller as submitter. */
HANDLER(h_job_submit)
{
	const char *env = json_string_value(json_object_get(rq->json, "environment"));
	json_t *obj = NULL;

	if (env != NULL && !rq_env_visible(rq, env))
		return err_field(e, 404, "env.not_found", "/environment",
		    "environment %.64s not found", env);
	if (!job_submit_by(rq->db, rq->json, rq->team,
	    rq->actor.id, &obj, e))
		return false;
	if (!audit_write(rq->db, &rq->actor, "job.submit", "job",
	    json_string_value(json_object_get(obj, "id")), env, NULL, obj, e)) {
		json_decref(obj);
		return false;
	}
	rq->location = arena_printf(rq->arena, "/v1/jobs/%s",
	    json_string_value(json_object_get(obj, "id")));
	rq_reply_object(rq, 201, obj, NULL);
	return true;
}

HANDLER(h_job_list)
{
	struct job_filter f = {
		.state = rq_query(rq, "state"), .queue = rq_query(rq, "queue"),
		.environment = rq_query(rq, "environment"), .region = rq_query(rq, "region"),
		.cluster = rq_query(rq, "cluster"), .envs = rq->envs, .nenvs = rq->nenvs,
		.team = rq->team,
	};
	const char *after, *next = "null";
	struct job_page pg;
	int limit;

	if (!rq_page(rq, &limit, &after, e) || !job_list_text(rq->db, limit, after, &f, rq->arena,
	    &pg, e))
		return false;
	/* as rq_page_reply: a full page carries the cursor of its last item */
	if (pg.count == limit && pg.last_id != NULL) {
		char *cur = crypto_b64url_encode(pg.last_id, strlen(pg.last_id));

		if (cur != NULL)
			next = arena_printf(rq->arena, "\"%s?limit=%d&after=%s\"",
			    rq->route->pattern, limit, cur);
		free(cur);
	}
	{
		/* memcpy, not a printf: vsnprintf's measuring pass over a page of 20 jobs was a
		 * third of fleetd's CPU on this route (bench/profiles/list.txt) */
		size_t nn = strlen(next), len = 10 + pg.len + 8 + nn + 1;
		char *text = arena_alloc(rq->arena, len + 1), *w = text;

		memcpy(w, "{\"items\":", 9);
		w += 9;
		memcpy(w, pg.items, pg.len);
		w += pg.len;
		memcpy(w, ",\"next\":", 8);
		w += 8;
		memcpy(w, next, nn);
		w += nn;
		*w++ = '}';
		rq_reply_text(rq, 200, text, (size_t)(w - text));
	}
	return true;
}

HANDLER(h_job_get)
{
	struct job_text t;

	if (!job_get_text(rq->db, rq_param(rq, "id"), rq->arena, &t, e))
		return false;
	if (!rq_env_visible(rq, t.environment) || !rq_team_visible(rq, t.team))
		return err_set(e, 404, "queue.job_not_found", "job not found");
	rq->etag = rq_etag(rq, t.version);
	rq_reply_text(rq, 200, t.json, t.len);
	return true;
}

static bool
cancel(struct db *c, const char *id, void *arg, json_t **out, struct err *e)
{
	(void)arg;
	return job_cancel(c, id, NULL, out, e);
}

/* A submitter cancels only the jobs it submitted (it sees the others: 403). */
HANDLER(h_job_cancel)
{
	const char *id = rq_param(rq, "id");
	json_t *job = NULL;
	bool mine = true;

	if (rq->role == ROLE_SUBMITTER) {
		if (!crud_get(rq, &jobs, rq->db, id, false, &job, e))
			return false;
		json_decref(job);
		if (!job_submitted_by(rq->db, id, rq->actor.id, &mine, e))
			return false;
		if (!mine)
			return err_set(e, 403, "auth.not_submitter",
			    "a submitter may cancel only the jobs it submitted");
	}
	return crud_action(rq, &jobs, id, "cancel", cancel, NULL, e);
}

HANDLER(h_job_events)
{
	const char *id = rq_param(rq, "id"), *after;
	json_t *job = NULL, *items = NULL;
	int limit;
	bool ok, streamed;

	if (!h_job_events_follow(rq, &streamed, e))
		return false;
	if (streamed)
		return true;
	if (!rq_page(rq, &limit, &after, e) || !crud_get(rq, &jobs, rq->db, id, false, &job, e))
		return false;
	json_decref(job);
	ok = job_events(rq->db, id, limit + 1, after, &items, e);
	if (ok)
		rq_reply(rq, 200, rq_page_reply(rq, items, limit, "id"));
	return ok;
}

HANDLER(h_job_manifest)
{
	const char *id = rq_param(rq, "id");
	json_t *job = NULL, *m = NULL;
	bool ok;

	if (!crud_get(rq, &jobs, rq->db, id, false, &job, e))
		return false;
	json_decref(job);
	ok = job_manifest(rq->db, id, &m, e);
	if (ok)
		rq_reply(rq, 200, m);
	return ok;
}

HANDLER(h_job_placement)
{
	const char *id = rq_param(rq, "id");
	json_t *job = NULL, *out = NULL;
	bool ok = false;

	if (!crud_get(rq, &jobs, rq->db, id, false, &job, e))
		return false;
	if (!explain_job(rq->db, job, &out, e))
		goto cleanup;
	rq_reply(rq, 200, out);
	ok = true;
cleanup:
	json_decref(job);
	return ok;
}

HANDLER(h_job_postmortem)
{
	const char *id = rq_param(rq, "id");
	json_t *job = NULL, *out = NULL;

	if (!crud_get(rq, &jobs, rq->db, id, false, &job, e))
		return false;
	json_decref(job);
	if (!postmortem_list(rq->db, id, &out, e))
		return false;
	rq_reply(rq, 200, out);
	return true;
}

/* PUT /v1/jobs/{id}/spec (If-Match): a running job's new spec, applied by the updater. */
HANDLER(h_job_update_spec)
{
	const char *id = rq_param(rq, "id");
	json_t *before = NULL, *after = NULL;
	bool ok = false, changed = false;

	if (!crud_get(rq, &jobs, rq->db, id, true, &before, e))
		return false;
	if (rq_header(rq, "If-Match") == NULL) {
		err_set(e, 428, "api.precondition_required", "a spec update needs If-Match with "
		    "the job's version (its ETag)");
		goto cleanup;
	}
	if (!rq_if_match(rq, json_integer_value(json_object_get(before, "version")), e) ||
	    !job_update_spec(rq->db, before, rq->json, &changed, e))
		goto cleanup;
	if (!job_get(rq->db, id, false, &after, e) || (changed &&
	    !audit_write(rq->db, &rq->actor, "job.update_spec", "job", id,
	    json_string_value(json_object_get(before, "environment")), before, after, e)))
		goto cleanup;
	rq->etag = rq_etag(rq, json_integer_value(json_object_get(after, "version")));
	rq_reply_object(rq, changed ? 202 : 200, after, "/v1/jobs");
	after = NULL;
	ok = true;
cleanup:
	json_decref(before);
	json_decref(after);
	return ok;
}

/* GET /v1/jobs/{id}/dashboard (issue 25): the Ray dashboard's URL and token.  The token
 * lets its holder run code in the job's Ray cluster (the Jobs API), as a spec update does:
 * admins and operators (of the job's environment, or of its team) get it; a submitter only
 * for a job it submitted (403 auth.not_submitter otherwise); viewers never (the route's
 * role); a role of another team or environment finds no job (404).  Audited, the token
 * never in the audit row. */
HANDLER(h_job_dashboard)
{
	const char *id = rq_param(rq, "id");
	json_t *job = NULL, *out = NULL;
	bool mine = true, ok = false;

	if (!crud_get(rq, &jobs, rq->db, id, false, &job, e))
		return false;
	if (rq->role == ROLE_SUBMITTER) {
		if (!job_submitted_by(rq->db, id, rq->actor.id, &mine, e))
			goto cleanup;
		if (!mine) {
			err_set(e, 403, "auth.not_submitter", "a submitter may open only the "
			    "dashboards of the jobs it submitted");
			goto cleanup;
		}
	}
	if (!rayauth_dashboard(rq->db, job, &out, e) ||
	    !audit_write(rq->db, &rq->actor, "job.dashboard", "job", id,
	    json_string_value(json_object_get(job, "environment")), NULL, NULL, e))
		goto cleanup;
	rq_reply(rq, 200, out);
	out = NULL;
	ok = true;
cleanup:
	json_decref(job);
	json_decref(out);
	return ok;
}
