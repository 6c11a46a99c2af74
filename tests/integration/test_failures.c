/* test_failures: a fleet that fails (issue 24) — failures classified from the member's
 * own signals (container statuses, node taints) with pods, ranks, nodes and evidence, told
 * first by explain; a post-mortem that outlives the attempt's objects; retries by class. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/harness/harness.h"

#define ENV		"fl"
#define H100		"nvidia-h100-80gb"
#define CLUSTER		"fl-gke-usc1"
#define TIME_SCALE	"4"

static struct harness_fleet F;
static const char *oper, *viewer, *other_admin;

static int
setup(void **state)
{
	harness_fleet_ctl_start(&F, "failures", FLEETD_SOURCE_DIR
	    "/tests/fixtures/fleets/failures.json", TIME_SCALE, NULL);
	harness_fleet_roles(&F, ENV, &oper, &viewer, NULL, &other_admin);
	*state = &F;
	return 0;
}

/* The job's live RayJob path on the member, from its manifest. */
static void
object_path(const char *id, char *path, size_t n)
{
	char *ns = harness_sql_str("SELECT manifest->'metadata'->>'namespace' FROM jobs WHERE id ="
	    " '%s'", id), *name = harness_sql_str("SELECT manifest->'metadata'->>'name' FROM jobs"
	    " WHERE id = '%s'", id);

	snprintf(path, n, "/apis/ray.io/v1/namespaces/%s/rayjobs/%s", ns, name);
	free(ns);
	free(name);
}

/* Annotates the live RayJob as cloudsim reads it (its run's outcome and length). */
static void
annotate(const char *id, const char *outcome)
{
	struct http_result r = { 0 };
	char path[400], body[300];

	object_path(id, path, sizeof(path));
	snprintf(body, sizeof(body), "{\"metadata\":{\"annotations\":{\"cloudsim.fleet.io/outcome\":"
	    "\"%s\",\"cloudsim.fleet.io/run-seconds\":\"1\"}}}", outcome);
	harness_kube(&F.cs, &r, CLUSTER, "PATCH", path, "application/merge-patch+json", body);
	if (r.status != 200)
		fail_msg("PATCH %s: %ld %s", path, r.status, r.body ? r.body : "");
	free(r.body);
	free(r.headers);
	json_decref(r.json);
}

/* The newest event of type of the job, its data (new reference) or NULL. */
static json_t *
event_data(const char *id, const char *type)
{
	char *s = harness_sql_str("SELECT coalesce((SELECT data::text FROM job_events WHERE"
	    " job_id = '%s' AND type = '%s' ORDER BY id DESC LIMIT 1), 'null')", id, type);
	json_t *d = json_loads(s, JSON_DECODE_ANY, NULL);

	free(s);
	if (json_is_null(d)) {
		json_decref(d);
		return NULL;
	}
	return d;
}

/* A worker OOM-killed: the job fails as user_code with the pod, its rank, its node and
 * exit code 137; not retried; explain says so first; the post-mortem keeps every pod's
 * final status and survives the object's deletion; only the job's readers read it. */
static void
test_oom_classified_and_kept(void **state)
{
	char *id = harness_submit(oper, ENV, "ml", "RayJob", "oom", "default", H100, 8, -1);
	json_t *j, *f, *x, *pm, *rec, *p, *ev;
	const char *first = NULL;
	struct harness_ctl r;
	char path[400], env_url[600], env_tok[200];
	size_t i;
	bool worker = false, oom_kept = false;

	(void)state;
	json_decref(harness_job_wait(oper, id, "running", 1, 60));
	annotate(id, "oomkilled");
	j = harness_job_wait(oper, id, "failed", 1, 60);
	json_decref(j);
	/* classified from the member's signals */
	f = event_data(id, "failure");
	assert_non_null(f);
	assert_string_equal(harness_js(f, "class"), "user_code");
	assert_string_equal(harness_js(f, "reason"), "OOMKilled");
	assert_int_equal(json_integer_value(json_object_get(json_object_get(f, "evidence"),
	    "exit_code")), 137);
	assert_true(json_array_size(json_object_get(f, "pods")) >= 1);
	assert_true(json_array_size(json_object_get(f, "nodes")) == 1);
	assert_true(strncmp(json_string_value(json_array_get(json_object_get(f, "ranks"), 0)),
	    "head", 4) != 0);
	assert_false(json_is_true(json_object_get(json_object_get(f, "retry"), "given")));
	assert_int_equal(harness_sql_long("SELECT infra_retries FROM jobs WHERE id = '%s'", id), 0);
	json_decref(f);
	/* explain: the failure first */
	x = harness_get_ok(viewer, "/v1/jobs/%s/placement", id);
	json_object_foreach(x, first, p)
		break;
	assert_non_null(first);
	assert_string_equal(first, "failure");
	assert_string_equal(harness_js(json_object_get(x, "failure"), "class"), "user_code");
	/* fleetctl jobs explain tells it */
	snprintf(env_url, sizeof(env_url), "FLEET_URL=%s", harness_url(&F.fd, "%s", ""));
	snprintf(env_tok, sizeof(env_tok), "FLEET_TOKEN=%s", viewer);
	harness_ctl_run(&r, NULL, (const char *const[]){ env_url, env_tok, NULL },
	    (const char *const[]){ "jobs", "explain", id, NULL });
	if (r.rc != 0 || strstr(r.out, "Failure: user_code") == NULL ||
	    strstr(r.out, "OOMKilled") == NULL)
		fail_msg("fleetctl jobs explain: rc %d\n%s\n%s", r.rc, r.out, r.err);
	harness_ctl_free(&r);
	/* the post-mortem: every pod's final status (the worker's OOM kill as the kubelet
	 * reports it), the operator's words */
	object_path(id, path, sizeof(path));
	{
		struct http_result d = { 0 };

		harness_kube(&F.cs, &d, CLUSTER, "DELETE", path, NULL, NULL);
		free(d.body);
		free(d.headers);
		json_decref(d.json);
	}
	pm = harness_get_ok(viewer, "/v1/jobs/%s/postmortem", id);
	assert_int_equal(json_array_size(json_object_get(pm, "items")), 1);
	rec = json_object_get(json_array_get(json_object_get(pm, "items"), 0), "record");
	assert_string_equal(harness_js(json_array_get(json_object_get(pm, "items"), 0), "trigger"),
	    "failed");
	assert_true(json_array_size(json_object_get(rec, "pods")) >= 2);
	json_array_foreach(json_object_get(rec, "pods"), i, p) {
		json_t *c = json_array_get(json_object_get(p, "containers"), 0), *ls, *cur;

		assert_true(strlen(harness_js(p, "node")) > 0);
		assert_true(json_array_size(json_object_get(p, "containers")) >= 1);
		if (strcmp(harness_js(p, "type"), "worker") != 0)
			continue;
		worker = true;
		/* the kubelet's shape of an OOM kill: the container restarted (restartPolicy
		 * Always, the Pod default) with the kill in its last state, exit 137 */
		ls = json_object_get(c, "last_state");
		cur = json_object_get(c, "state");
		if (ls == NULL || strcmp(harness_js(ls, "state"), "terminated") != 0 ||
		    strcmp(harness_js(ls, "reason"), "OOMKilled") != 0 ||
		    json_integer_value(json_object_get(ls, "exit_code")) != 137 ||
		    harness_ji(c, "restarts") != 1 || strcmp(harness_js(cur, "state"), "running"))
			fail_msg("the worker's container does not show the OOM kill as the kubelet"
			    " does: %s", json_dumps(c, JSON_COMPACT));
		oom_kept = true;
	}
	assert_true(worker);
	assert_true(oom_kept);
	/* the kubelet posts no OOMKilled event of its own: the kill is in the status */
	json_array_foreach(json_object_get(rec, "events"), i, ev)
		assert_true(strcmp(harness_js(ev, "reason"), "OOMKilled") != 0);
	assert_string_equal(harness_js(json_object_get(rec, "failure"), "class"), "user_code");
	assert_non_null(json_object_get(json_object_get(rec, "ray"), "message"));
	assert_non_null(json_object_get(json_object_get(rec, "timings"), "finished_at"));
	assert_true(harness_sql_long("SELECT max(octet_length(record::text)) FROM job_postmortems")
	    < 65536);
	/* readers of the job read it; nobody else */
	harness_call("GET", oper, NULL, "/v1/jobs/%s/postmortem", id);
	harness_expect_status(NULL, 200);
	harness_call("GET", F.admin, NULL, "/v1/jobs/%s/postmortem", id);
	harness_expect_status(NULL, 200);
	harness_call("GET", other_admin, NULL, "/v1/jobs/%s/postmortem", id);
	harness_expect_problem(NULL, 404, "queue.job_not_found", NULL);
	harness_call("GET", NULL, NULL, "/v1/jobs/%s/postmortem", id);
	harness_expect_status(NULL, 401);
	harness_ctl_run(&r, NULL, (const char *const[]){ env_url, env_tok, NULL },
	    (const char *const[]){ "jobs", "postmortem", id, NULL });
	/* the worker's line: running again, 1 restart, the last run OOM-killed, exit 137 (no
	 * "exit" for a container that has not ended) */
	if (r.rc != 0 || strstr(r.out, "1 restarts; last: terminated OOMKilled exit 137") == NULL ||
	    strstr(r.out, "running exit") != NULL)
		fail_msg("fleetctl jobs postmortem: rc %d\n%s\n%s", r.rc, r.out, r.err);
	harness_ctl_free(&r);
	free(id);
}

/* The node of the job's first worker pod (as the member says), malloc'd. */
static char *
worker_node(const char *id, int attempt)
{
	struct http_result r = { 0 };
	json_t *p;
	char *ns = harness_sql_str("SELECT manifest->'metadata'->>'namespace' FROM jobs WHERE id ="
	    " '%s'", id), path[300], *out = NULL;
	size_t i;

	snprintf(path, sizeof(path), "/api/v1/namespaces/%s/pods?labelSelector=fleet.io%%2Fjob-id"
	    "%%3D%s", ns, id);
	harness_kube(&F.cs, &r, CLUSTER, "GET", path, NULL, NULL);
	json_array_foreach(json_object_get(r.json, "items"), i, p) {
		json_t *lb = json_object_get(json_object_get(p, "metadata"), "labels");

		const char *type = json_string_value(json_object_get(lb, "ray.io/node-type")),
		    *at = json_string_value(json_object_get(lb, "fleet.io/attempt"));

		if (type != NULL && strcmp(type, "worker") == 0 && at != NULL &&
		    atoi(at) == attempt &&
		    json_is_string(json_object_get(json_object_get(p, "spec"), "nodeName")))
			out = strdup(harness_js(json_object_get(p, "spec"), "nodeName"));
	}
	free(r.body);
	free(r.headers);
	json_decref(r.json);
	free(ns);
	return out;
}

/* Spot reclaim (GKE's impending-node-termination taint): a preemption failure with the
 * taint as evidence; a new attempt that avoids the reclaimed node while it still exists;
 * a second reclaim past max_infra_retries (1) fails the job as preemption. */
static void
test_preemption_retried_elsewhere(void **state)
{
	char *id, *n1, *n2, body[300];
	json_t *f, *x;

	(void)state;
	{
		char *b = harness_job_body(ENV, "ml", H100, 8, "{\"name\":\"spot\","
		    "\"max_infra_retries\":1,\"checkpoint\":{\"uri\":\"s3://ckpt/spot\","
		    "\"grace_seconds\":1}}");

		id = strdup(harness_js(harness_post_created(oper, "/v1/jobs", b), "id"));
		free(b);
	}
	json_decref(harness_job_wait(oper, id, "running", 1, 60));
	n1 = worker_node(id, 1);
	assert_non_null(n1);
	snprintf(body, sizeof(body), "{\"cluster\":\"" CLUSTER "\",\"node\":\"%s\",\"notice_s\":"
	    "120}", n1);
	harness_sim_post(&F.cs, "/_sim/preempt", body);
	json_decref(harness_job_wait(oper, id, "running", 2, 90));
	f = event_data(id, "failure");
	assert_non_null(f);
	assert_string_equal(harness_js(f, "class"), "preemption");
	assert_true(json_is_true(json_object_get(json_object_get(f, "retry"), "given")));
	json_decref(f);
	assert_true(harness_sql_long("SELECT count(*) FROM job_events WHERE job_id = '%s' AND type"
	    " = 'failure_signal' AND data->>'class' = 'preemption' AND data->'evidence'->>'taint'"
	    " LIKE 'cloud.google.com/impending-node-termination%%'", id) >= 1);
	n2 = worker_node(id, 2);
	assert_non_null(n2);
	if (strcmp(n1, n2) == 0)
		fail_msg("attempt 2 runs on %s, the node reclaimed under attempt 1", n1);
	assert_int_equal(harness_sql_long("SELECT infra_retries FROM jobs WHERE id = '%s'", id), 1);
	x = harness_get_ok(viewer, "/v1/jobs/%s/placement", id);
	assert_string_equal(harness_js(json_object_get(x, "last_failure"), "class"), "preemption");
	/* the bound: a second reclaim fails the job */
	snprintf(body, sizeof(body), "{\"cluster\":\"" CLUSTER "\",\"node\":\"%s\",\"notice_s\":"
	    "120}", n2);
	harness_sim_post(&F.cs, "/_sim/preempt", body);
	json_decref(harness_job_wait(oper, id, "failed", 2, 90));
	f = event_data(id, "failure");
	assert_string_equal(harness_js(f, "class"), "preemption");
	assert_false(json_is_true(json_object_get(json_object_get(f, "retry"), "given")));
	json_decref(f);
	free(n1);
	free(n2);
	free(id);
}

/* The queue's bound (max_infra_retries 0, the spec naming none): the first reclaim fails
 * the job as preemption, saying why it was not retried. */
static void
test_queue_bound(void **state)
{
	char *id, *n1, body[300];
	json_t *f;

	(void)state;
	id = harness_submit(oper, ENV, "strict", "RayJob", "strict", "default", H100, 8, 1);
	json_decref(harness_job_wait(oper, id, "running", 1, 60));
	n1 = worker_node(id, 1);
	assert_non_null(n1);
	snprintf(body, sizeof(body), "{\"cluster\":\"" CLUSTER "\",\"node\":\"%s\",\"notice_s\":"
	    "120}", n1);
	harness_sim_post(&F.cs, "/_sim/preempt", body);
	json_decref(harness_job_wait(oper, id, "failed", 1, 90));
	f = event_data(id, "failure");
	assert_non_null(f);
	assert_string_equal(harness_js(f, "class"), "preemption");
	assert_string_equal(harness_js(json_object_get(f, "retry"), "why"),
	    "max_infra_retries reached");
	assert_int_equal(harness_sql_long("SELECT infra_retries FROM jobs WHERE id = '%s'", id), 0);
	json_decref(f);
	free(n1);
	free(id);
}

/* A cancelled attempt: its post-mortem is kept before fleetd deletes its object. */
static void
test_cancel_kept(void **state)
{
	char *id = harness_submit(oper, ENV, "ml", "RayJob", "cancelled", "default", H100, 8, -1);
	json_t *pm, *it;

	(void)state;
	json_decref(harness_job_wait(oper, id, "running", 1, 60));
	harness_call("POST", oper, NULL, "/v1/jobs/%s/cancel", id);
	json_decref(harness_job_wait(oper, id, "cancelled", 1, 60));
	pm = harness_get_ok(viewer, "/v1/jobs/%s/postmortem", id);
	it = json_array_get(json_object_get(pm, "items"), 0);
	assert_non_null(it);
	assert_string_equal(harness_js(it, "trigger"), "cancelled");
	assert_true(json_array_size(json_object_get(json_object_get(it, "record"), "pods")) >= 2);
	free(id);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_oom_classified_and_kept),
		cmocka_unit_test(test_preemption_retried_elsewhere),
		cmocka_unit_test(test_queue_bound),
		cmocka_unit_test(test_cancel_kept),
	};

	return cmocka_run_group_tests(tests, setup, harness_fleet_ctl_teardown);
}
