/* h_job: /v1/jobs — submit, list, get, cancel, events, manifest, placement. */
#include <stdlib.h>
#include <string.h>

#include "api/handlers.h"
#include "core/crypto.h"
#include "queue/explain.h"
#include "queue/job.h"
#include "queue/job_text.h"

static bool
visible_job(struct request *rq, const char *id, bool lock, json_t **out, struct err *e)
{
	if (!job_get(rq->db, id, lock, out, e))
		return false;
	if (!rq_env_visible(rq, json_string_value(json_object_get(*out, "environment")))) {
		json_decref(*out);
		*out = NULL;
		return err_set(e, 404, "queue.job_not_found", "job not found");
	}
	return true;
}

HANDLER(h_job_submit)
{
	const char *env = json_string_value(json_object_get(rq->json, "environment"));
	json_t *obj = NULL;

	if (env != NULL && !rq_env_visible(rq, env))
		return err_field(e, 404, "env.not_found", "/environment",
		    "environment %.64s not found", env);
	if (!job_submit(rq->db, rq->json, &obj, e))
		return false;
	if (!audit_write(rq->db, &rq->actor, "job.submit", "job",
	    json_string_value(json_object_get(obj, "id")), env, NULL, obj, e)) {
		json_decref(obj);
		return false;
	}
	rq_reply_object(rq, 201, obj, "/v1/jobs");
	return true;
}

HANDLER(h_job_list)
{
	struct job_filter f = {
		.state = rq_query(rq, "state"), .queue = rq_query(rq, "queue"),
		.environment = rq_query(rq, "environment"), .region = rq_query(rq, "region"),
		.cluster = rq_query(rq, "cluster"), .envs = rq->envs, .nenvs = rq->nenvs,
	};
	const char *after, *next = "null";
	struct job_page pg;
	int limit;

	if (!rq_page(rq, &limit, &after, e) || !job_list_text(rq->db, limit, after, &f, rq->arena,
	    &pg, e))
		return false;
	/* as page_reply: a full page carries the cursor of its last item */
	if (pg.count == limit && pg.last_id != NULL) {
		char *cur = crypto_b64url_encode(pg.last_id, strlen(pg.last_id));

		if (cur != NULL)
			next = arena_printf(rq->arena, "\"%s?limit=%d&after=%s\"",
			    rq->route->pattern, limit, cur);
		free(cur);
	}
	{
		char *text = arena_printf(rq->arena, "{\"items\":%s,\"next\":%s}", pg.items, next);

		rq_reply_text(rq, 200, text, strlen(text));
	}
	return true;
}

HANDLER(h_job_get)
{
	struct job_text t;

	if (!job_get_text(rq->db, rq_param(rq, "id"), rq->arena, &t, e))
		return false;
	if (!rq_env_visible(rq, t.environment))
		return err_set(e, 404, "queue.job_not_found", "job not found");
	rq->etag = rq_etag(rq, t.version);
	rq_reply_text(rq, 200, t.json, t.len);
	return true;
}

HANDLER(h_job_cancel)
{
	const char *id = rq_param(rq, "id");
	json_t *before = NULL, *obj = NULL;
	bool ok = false;

	if (!visible_job(rq, id, true, &before, e))
		return false;
	if (!job_cancel(rq->db, id, NULL, &obj, e) ||
	    !audit_write(rq->db, &rq->actor, "job.cancel", "job", id,
	    json_string_value(json_object_get(obj, "environment")), before, obj, e))
		goto cleanup;
	rq_reply_object(rq, 200, obj, "/v1/jobs");
	obj = NULL;
	ok = true;
cleanup:
	json_decref(before);
	json_decref(obj);
	return ok;
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
	if (!rq_page(rq, &limit, &after, e) || !visible_job(rq, id, false, &job, e))
		return false;
	json_decref(job);
	ok = job_events(rq->db, id, limit + 1, after, &items, e);
	if (ok)
		rq_reply(rq, 200, page_reply(rq, items, limit, "id"));
	return ok;
}

HANDLER(h_job_manifest)
{
	static const char sql[] = "SELECT manifest::text FROM jobs WHERE id = $1::uuid";
	const char *id = rq_param(rq, "id");
	const char *p[1] = { id };
	json_t *job = NULL;
	PGresult *r = NULL;
	bool ok = false;

	if (!visible_job(rq, id, false, &job, e))
		return false;
	if (!db_exec(rq->db, sql, 1, p, &r, e))
		goto cleanup;
	if (PQgetisnull(r, 0, 0)) {
		err_set(e, 404, "queue.no_manifest", "the job has not been applied to a cluster yet");
		goto cleanup;
	}
	rq_reply(rq, 200, json_loads(PQgetvalue(r, 0, 0), 0, NULL));
	ok = true;
cleanup:
	PQclear(r);
	json_decref(job);
	return ok;
}

HANDLER(h_job_placement)
{
	const char *id = rq_param(rq, "id");
	json_t *job = NULL, *out = NULL;
	bool ok = false;

	if (!visible_job(rq, id, false, &job, e))
		return false;
	if (!explain_job(rq->db, job, &out, e))
		goto cleanup;
	rq_reply(rq, 200, out);
	ok = true;
cleanup:
	json_decref(job);
	return ok;
}
