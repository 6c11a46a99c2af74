/* jobs: a job's state, history and waits over fleetd's API (and over SQL for short-lived
 * states and events), queues and priority classes, and cluster cordons — what the tests
 * of scheduling, dispatch, moves and sweeps all need. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "tests/harness/harness.h"

#define js	harness_js

json_t *
harness_job(const char *token, const char *id)
{
	return json_incref(harness_get_ok(token, "/v1/jobs/%s", id));
}

json_t *
harness_job_events(const char *token, const char *id)
{
	return json_incref(json_object_get(harness_get_ok(token, "/v1/jobs/%s/events?limit=500",
	    id), "items"));
}

void
harness_job_print_events(const char *token, const char *id)
{
	json_t *ev = harness_job_events(token, id), *x;
	size_t i;

	json_array_foreach(ev, i, x)
		print_message("  %s %s->%s a%lld %s\n", js(x, "type"), js(x, "from_state"),
		    js(x, "to_state"), harness_ji(x, "attempt"), js(x, "message"));
	json_decref(ev);
}

json_t *
harness_job_wait(const char *token, const char *id, const char *state, int attempt,
		 double timeout_s)
{
	double end = harness_now_s() + timeout_s;
	json_t *j = NULL;

	while (harness_now_s() < end) {
		json_decref(j);
		j = harness_job(token, id);
		if (strcmp(js(j, "state"), state) == 0 && (attempt == 0 ||
		    harness_ji(j, "attempt") == attempt))
			return j;
		usleep(250 * 1000);
	}
	harness_job_print_events(token, id);
	fail_msg("job %s: want %s (attempt %d), have %s attempt %lld (%s); fleetd log %s", id,
	    state, attempt, js(j, "state"), harness_ji(j, "attempt"), js(j, "reason"),
	    harness_log());
	return NULL;
}

/* The job's row and events as SQL sees them, for failure messages. */
static void
print_job_rows(const char *id)
{
	char *cur = harness_sql_str("SELECT coalesce((SELECT state || ' a' || attempt || ' ' ||"
	    " coalesce(reason, '') FROM jobs WHERE id = '%s'), 'no such job')", id);
	char *ev = harness_sql_str("SELECT coalesce(string_agg(format('  %%s %%s->%%s a%%s %%s',"
	    " type, coalesce(from_state, ''), coalesce(to_state, ''), attempt, message), E'\\n'"
	    " ORDER BY id), '') FROM job_events WHERE job_id = '%s'", id);

	print_message("job %s is %s; events:\n%s\n", id, cur, ev);
	free(cur);
	free(ev);
}

void
harness_job_wait_row(const char *id, const char *state, int attempt, double timeout_s)
{
	double end = harness_now_s() + timeout_s;

	while (harness_now_s() < end) {
		if (harness_sql_long("SELECT count(*) FROM jobs WHERE id = '%s' AND state = '%s' AND"
		    " (%d = 0 OR attempt = %d)", id, state, attempt, attempt) == 1)
			return;
		usleep(50 * 1000);
	}
	print_job_rows(id);
	fail_msg("job %s: want %s (attempt %d) within %.0f s; fleetd log %s", id, state, attempt,
	    timeout_s, harness_log());
}

long
harness_job_event_count(const char *id, const char *type, const char *reason)
{
	return harness_sql_long("SELECT count(*) FROM job_events WHERE job_id = '%s' AND type ="
	    " '%s' AND ('%s' = '' OR data->>'reason' = '%s')", id, type, reason ? reason : "",
	    reason ? reason : "");
}

void
harness_job_wait_event(const char *id, const char *type, const char *reason,
		       double timeout_s)
{
	double end = harness_now_s() + timeout_s;

	while (harness_now_s() < end) {
		if (harness_job_event_count(id, type, reason) > 0)
			return;
		usleep(100 * 1000);
	}
	print_job_rows(id);
	fail_msg("job %s: no %s event (reason %s) within %.0f s; fleetd log %s", id, type,
	    reason ? reason : "any", timeout_s, harness_log());
}

void
harness_pclass(const char *token, const char *name, int value, bool preempt)
{
	json_t *b = json_pack("{s:s, s:i}", "name", name, "value", value);
	char *text;

	if (preempt)
		json_object_set_new(b, "preempt", json_true());
	text = json_dumps(b, JSON_COMPACT);
	json_decref(b);
	harness_post_created(token, "/v1/priority-classes", text);
	free(text);
}

json_t *
harness_queue(const char *token, const char *env, const char *name, const char *pclass,
	      const char *flavor, int quota)
{
	json_t *b = json_pack("{s:s, s:s}", "name", name, "environment", env), *q;
	char *text;

	if (pclass != NULL)
		json_object_set_new(b, "default_priority_class", json_string(pclass));
	if (flavor != NULL)
		json_object_set_new(b, "nominal_quota", json_pack("{s:i}", flavor, quota));
	text = json_dumps(b, JSON_COMPACT);
	json_decref(b);
	q = harness_post_created(token, "/v1/queues", text);
	free(text);
	return q;
}

void
harness_cordon(const char *token, const char *cluster_id, bool on)
{
	if (harness_call("POST", token, NULL, "/v1/clusters/%s/%s", cluster_id, on ? "cordon" :
	    "uncordon") != 200)
		fail_msg("%s %s: %ld %s", on ? "cordon" : "uncordon", cluster_id,
		    harness_r.status, harness_r.body);
	if (json_is_true(json_object_get(harness_r.json, "cordoned")) != on)
		fail_msg("%s %s: %s", on ? "cordon" : "uncordon", cluster_id, harness_r.body);
}

double
harness_epoch(const char *ts)
{
	struct tm tm = { 0 };
	double sec = 0;

	if (sscanf(ts, "%d-%d-%dT%d:%d:%lf", &tm.tm_year, &tm.tm_mon, &tm.tm_mday, &tm.tm_hour,
	    &tm.tm_min, &sec) != 6)
		fail_msg("not a timestamp: %s", ts);
	tm.tm_year -= 1900;
	tm.tm_mon -= 1;
	return (double)timegm(&tm) + sec;
}

char *
harness_submit(const char *token, const char *env, const char *queue, const char *kind,
	       const char *name, const char *pclass, const char *flavor, int gpus, int grace)
{
	char body[2048], ckpt[160] = "";

	if (grace >= 0)
		snprintf(ckpt, sizeof(ckpt), ",\"checkpoint\":{\"uri\":\"s3://ckpt/%s\","
		    "\"grace_seconds\":%d}", name, grace);
	snprintf(body, sizeof(body), "{\"environment\":\"%s\",\"kind\":\"%s\",\"queue\":\"%s\","
	    "\"name\":\"%s\",\"priority_class\":\"%s\",\"ray_version\":\"2.52.0\",%s"
	    "\"head\":{\"cpu\":\"1\",\"memory\":\"2Gi\"},\"worker_groups\":[{\"name\":\"gpu\","
	    "\"replicas\":1,\"cpu\":\"8\",\"memory\":\"64Gi\",\"accelerator\":{\"flavor\":"
	    "\"%s\",\"count\":%d}}]%s}", env, kind, queue, name, pclass,
	    strcmp(kind, "RayJob") == 0 ? "\"entrypoint\":\"python train.py\"," :
	    strcmp(kind, "RayService") == 0 ? "\"serve_config\":{\"applications\":[{\"name\":"
	    "\"app\",\"import_path\":\"serve:app\"}]}," : "", flavor, gpus, ckpt);
	if (harness_call("POST", token, body, "/v1/jobs") != 201)
		fail_msg("submit %s: %ld %s", body, harness_r.status, harness_r.body);
	return strdup(js(harness_r.json, "id"));
}

long
harness_move(const char *token, const char *id, const char *target, const char *extra)
{
	char body[512];

	snprintf(body, sizeof(body), "{\"target\":%s,\"reason\":\"on-call test\"%s%s}", target,
	    extra ? "," : "", extra ? extra : "");
	return harness_call("POST", token, body, "/v1/jobs/%s/move", id);
}

json_t *
harness_job_fingerprint(const struct harness_cs *cs, const char *token, const char *id)
{
	json_t *j = harness_job(token, id), *ev = harness_job_events(token, id);
	json_t *st = harness_sim_get(cs, "/_sim/state"), *objs = json_array(), *c, *o, *out;
	size_t i, k;

	json_array_foreach(json_object_get(st, "clusters"), i, c)
		json_array_foreach(json_object_get(c, "objects"), k, o)
			json_array_append_new(objs, json_pack("[s, s, I]", js(c, "name"),
			    js(o, "name"), (json_int_t)harness_ji(o, "resourceVersion")));
	out = json_pack("{s:O, s:O, s:O, s:O, s:O, s:O, s:I, s:I, s:O, s:o}", "state",
	    harness_jp(j, "state"), "version", harness_jp(j, "version"), "cluster_id",
	    harness_jp(j, "cluster_id"), "attempt", harness_jp(j, "attempt"), "placement",
	    harness_jp(j, "placement"), "object_name", harness_jp(j, "object_name"), "events",
	    (json_int_t)json_array_size(ev), "audit",
	    (json_int_t)harness_audit_count(token, id, "job.move"), "applies",
	    harness_jp(st, "applies"), "objects", objs);
	json_decref(j);
	json_decref(ev);
	json_decref(st);
	return out;
}

void
harness_job_unchanged(const struct harness_cs *cs, const char *token, json_t *before,
		      const char *id, const char *what)
{
	json_t *after = harness_job_fingerprint(cs, token, id);

	if (!json_equal(before, after)) {
		char *a = json_dumps(before, JSON_COMPACT), *b = json_dumps(after, JSON_COMPACT);

		fail_msg("%s changed something:\nbefore %s\nafter  %s", what, a, b);
	}
	json_decref(after);
}
