/* h_events: GET /v1/events (a page of job events in sequence order, or with follow=true an
 * SSE stream) and the follow=true stream of GET /v1/jobs/{id}/events. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "api/handlers.h"
#include "api/sse.h"
#include "core/crypto.h"
#include "queue/jobs/events.h"
#include "queue/jobs/job.h"

/* follow=true, or an EventSource-style Accept: text/event-stream, asks for the stream. */
static bool
wants_stream(struct request *rq, bool *follow, struct err *e)
{
	const char *f = rq_query(rq, "follow");
	const char *acc = rq_header(rq, "Accept");

	*follow = false;
	if (f != NULL && strcmp(f, "true") != 0 && strcmp(f, "false") != 0)
		return err_field(e, 400, "api.bad_query", "/query/follow",
		    "follow must be true or false");
	if (f != NULL)
		*follow = strcmp(f, "true") == 0;
	else if (acc != NULL && strncasecmp(acc, "text/event-stream", 17) == 0)
		*follow = true;
	return true;
}

/* A decimal event sequence number (Last-Event-ID, or a decoded cursor). */
static bool
parse_seq(const char *s, long long *out)
{
	size_t n = s ? strlen(s) : 0;

	if (n == 0 || n > 18 || strspn(s, "0123456789") != n)
		return false;
	*out = strtoll(s, NULL, 10);
	return true;
}

static bool
open_stream(struct request *rq, const char *job, const char *env, long long from,
	    struct err *e)
{
	const char *lei = rq_header(rq, "Last-Event-ID");
	struct sse_opts o = { .token_id = rq->actor.id, .job_id = job, .environment = env,
		.envs = rq->envs, .nenvs = rq->nenvs, .after = from,
		.team = rq->team, .role = (int)rq->role, .oidc = rq->auth_oidc,
		.expires = rq->auth_expires };
	struct sse_stream *s;

	if (lei != NULL && !parse_seq(lei, &o.after))
		return err_field(e, 400, "events.bad_last_event_id", "/header/Last-Event-ID",
		    "Last-Event-ID must be an event id of this stream");
	if ((s = sse_open(&o, rq->conn, e)) == NULL)
		return false;
	rq->sse = s;
	rq->status = 200;
	rq->content_type = "text/event-stream";
	return true;
}

HANDLER(h_events)
{
	const char *env = rq_query(rq, "environment"), *after;
	struct events_filter f = { .environment = env, .envs = rq->envs, .nenvs = rq->nenvs,
		.team = rq->team };
	json_t *items = NULL, *next = json_null();
	long long from = 0, head;
	bool follow;
	int limit;

	if (!wants_stream(rq, &follow, e))
		return false;
	if (follow) {
		if (!events_head(rq->db, &head, e))
			return false;
		return open_stream(rq, NULL, env, head, e);
	}
	if (!rq_page(rq, &limit, &after, e))
		return false;
	if (after != NULL && !parse_seq(after, &from))
		return err_field(e, 400, "api.bad_cursor", "/query/after",
		    "after is not a cursor returned by this list");
	if (!events_read(rq->db, from, 0, &f, limit + 1, &items, e))
		return false;
	if ((int)json_array_size(items) > limit) {
		char seq[24], *cur;

		json_array_remove(items, (size_t)limit);
		snprintf(seq, sizeof(seq), "%lld", (long long)json_integer_value(
		    json_object_get(json_array_get(items, (size_t)limit - 1), "seq")));
		cur = crypto_b64url_encode(seq, strlen(seq));
		json_decref(next);
		next = json_string(arena_printf(rq->arena, "/v1/events?limit=%d&after=%s", limit,
		    cur));
		free(cur);
	}
	rq_reply(rq, 200, json_pack("{s:o, s:o}", "items", items, "next", next));
	return true;
}

bool
h_job_events_follow(struct request *rq, bool *handled, struct err *e)
{
	const char *id = rq_param(rq, "id");
	json_t *job = NULL;
	bool follow;

	*handled = false;
	if (!wants_stream(rq, &follow, e))
		return false;
	if (!follow)
		return true;
	*handled = true;
	if (!job_get(rq->db, id, false, &job, e))
		return false;
	if (!rq_env_visible(rq, json_string_value(json_object_get(job, "environment"))) ||
	    !rq_team_visible(rq, json_string_value(json_object_get(job, "team")))) {
		json_decref(job);
		return err_set(e, 404, "queue.job_not_found", "job not found");
	}
	json_decref(job);
	return open_stream(rq, id, NULL, 0, e);
}
