/* test_cron_runs: RayCronJob runs against cloudsim in simulated time (x20, a run every minute,
 * each run lasting longer than that, so runs would overlap).  Each running run (child
 * RayJob) counts against the queue's quota, a cron between runs counts nothing, and the
 * job spec's cron.concurrency_policy is enforced by fleetd: Forbid keeps one run
 * (cron.run_skipped), Replace stops the running one for the new one (cron.run_replaced),
 * Allow runs two at once, both counted in GET /v1/queues/{id}/status and explain, and
 * skips the third that does not fit the quota.  The new field is refused when bad (422 +
 * pointer) and the submit route refuses viewer, another environment's admin, no token. */
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

#define ENV	"test"
#define H100	"nvidia-h100-80gb"
#define CLUSTER	"test-hp-usw2"
#define L4	"nvidia-l4"	/* the g6 pool: two nodes of 8, for test_run_placed */
#define GPUS	2		/* one run: one worker of 2 GPUs */
#define QUOTA	4		/* each queue: two runs */

static struct fleetd_proc fd;
static struct harness_cs cs;
static char dburl[512];
static struct harness_roles R;	/* the four attack tokens (harness_roles) */

static int
setup(void **state)
{
	const char *const env[] = {
		"FLEETD_WORKERS=poller,scheduler,dispatch,status",
		"FLEETD_POLL_INTERVAL_MS=1000",
		"FLEETD_SCHEDULER_INTERVAL_MS=300",
		NULL,
	};
	const char *const names[] = { CLUSTER, NULL };
	const char *const queues[] = { "qf", "qr", "qa", "qi", "qp", NULL };
	json_t *fleet = harness_fleet_json();

	(void)state;
	/* runs last 400 simulated seconds: a run every 60 s overlaps the previous ones */
	json_object_set_new(json_object_get(fleet, "sim"), "job_run_s", json_integer(400));
	harness_cs_start_json(&cs, fleet, "20");
	json_decref(fleet);
	harness_fleetd_cs(&fd, dburl, sizeof(dburl), "cron", &cs, env);
	harness_roles(dburl, ENV, &R);
	harness_pclass(R.admin, "low", 10, false);
	for (int i = 0; queues[i] != NULL; i++)
		harness_queue(R.admin, ENV, queues[i], "low", strcmp(queues[i], "qp") == 0 ? L4 :
		    H100, strcmp(queues[i], "qp") == 0 ? 16 : QUOTA);
	harness_register(&cs, R.admin, CLUSTER, NULL, NULL);
	harness_wait_capacity(names, 60);
	return 0;
}

/* A cron job spec; cron is the "cron" member's JSON or NULL. */
static char *
cron_body(const char *kind, const char *queue, const char *name, const char *schedule,
    const char *cron)
{
	char *b = malloc(2048), c[160] = "";

	if (cron != NULL)
		snprintf(c, sizeof(c), "\"cron\":%s,", cron);
	snprintf(b, 2048, "{\"environment\":\"" ENV "\",\"kind\":\"%s\",\"queue\":\"%s\","
	    "\"name\":\"%s\",\"ray_version\":\"2.52.0\",\"entrypoint\":\"python train.py\","
	    "%s%s%s%s\"head\":{\"cpu\":\"1\",\"memory\":\"2Gi\"},\"worker_groups\":[{\"name\":"
	    "\"gpu\",\"replicas\":1,\"cpu\":\"8\",\"memory\":\"64Gi\",\"accelerator\":{"
	    "\"flavor\":\"" H100 "\",\"count\":%d}}]}", kind, queue, name,
	    schedule ? "\"schedule\":\"" : "", schedule ? schedule : "", schedule ? "\"," : "",
	    c, GPUS);
	return b;
}

/* Submits as operator; id gets the job's id (static buffers: nothing leaks when an
 * assertion fails). */
static void
submit(char id[40], const char *queue, const char *name, const char *schedule,
    const char *policy)
{
	char cron[96], *b;

	snprintf(cron, sizeof(cron), "{\"concurrency_policy\":\"%s\"}", policy ? policy : "");
	b = cron_body("RayCronJob", queue, name, schedule, policy ? cron : NULL);
	harness_call("POST", R.oper, b, "/v1/jobs");
	free(b);
	harness_expect_status(NULL, 201);
	snprintf(id, 40, "%s", harness_js(harness_r.json, "id"));
}

/* Names of the cron's child RayJobs still running on the member (a new array). */
static json_t *
active_children(const char *id)
{
	char *ns = harness_sql_str("SELECT manifest->'metadata'->>'namespace' FROM jobs WHERE"
	    " id = '%s'", id);
	char *obj = harness_sql_str("SELECT manifest->'metadata'->>'name' FROM jobs WHERE"
	    " id = '%s'", id);
	struct http_result r = { 0 };
	char path[512];
	json_t *out = json_array(), *it;
	size_t i;

	snprintf(path, sizeof(path), "/apis/ray.io/v1/namespaces/%s/rayjobs?labelSelector="
	    "ray.io%%2Fcronjob-name%%3D%s", ns, obj);
	harness_kube(&cs, &r, CLUSTER, "GET", path, NULL, NULL);
	if (r.status != 200)
		fail_msg("children of %s: %ld %s", obj, r.status, r.body);
	json_array_foreach(json_object_get(r.json, "items"), i, it) {
		const char *jds = harness_js(it, "status.jobDeploymentStatus");

		if (strcmp(jds, "Complete") != 0 && strcmp(jds, "Failed") != 0)
			json_array_append_new(out, json_string(harness_js(it, "metadata.name")));
	}
	harness_http_free(&r);
	free(ns);
	free(obj);
	return out;
}

static size_t
count_children(const char *id)
{
	json_t *kids = active_children(id);
	size_t n = json_array_size(kids);

	json_decref(kids);
	return n;
}

static long runs_of(const char *id);

/* Waits (10 s at most) until want runs run on the member and want are counted: a run the
 * controller has just created may not be acted on yet. */
static bool
settle_runs(const char *id, size_t want, size_t *n)
{
	double end = harness_now_s() + 10;

	do {
		*n = count_children(id);
		if (*n == want && runs_of(id) == (long)want)
			return true;
		assert_true(runs_of(id) <= (long)want);	/* never more counted */
		usleep(200 * 1000);
	} while (harness_now_s() < end);
	return false;
}

/* The queue's H100 usage in the scheduler's view (GET /v1/queues/{id}/status). */
static long
usage_of(const char *queue)
{
	char *qid = harness_sql_str("SELECT id FROM queues WHERE name = '%s'", queue);
	json_t *st = harness_get_ok(R.viewer, "/v1/queues/%s/status", qid), *f;
	long u = -1;
	size_t i;

	json_array_foreach(json_object_get(st, "flavors"), i, f)
		if (strcmp(harness_js(f, "flavor"), H100) == 0)
			u = harness_ji(f, "usage");
	free(qid);
	return u;
}

static long
runs_of(const char *id)
{
	return harness_sql_long("SELECT jsonb_array_length(coalesce(cron_runs, '[]')) FROM jobs"
	    " WHERE id = '%s'", id);
}

static void
test_refusals(void **state)
{
	char *b;

	(void)state;
	b = cron_body("RayCronJob", "qf", "bad", "* * * * *", "{\"concurrency_policy\":\"Sometimes\"}");
	harness_call("POST", R.oper, b, "/v1/jobs");
	harness_expect_problem(NULL, 422, "jobspec.invalid_value", "/cron/concurrency_policy");
	free(b);
	b = cron_body("RayJob", "qf", "notcron", NULL, "{\"concurrency_policy\":\"Allow\"}");
	harness_call("POST", R.oper, b, "/v1/jobs");
	harness_expect_problem(NULL, 422, "jobspec.not_applicable", "/cron");
	free(b);
	/* the new field as viewer, another environment's admin, no token: nothing created */
	b = cron_body("RayCronJob", "qf", "attack", "* * * * *", "{\"concurrency_policy\":\"Allow\"}");
	harness_call("POST", R.viewer, b, "/v1/jobs");
	harness_expect_status(NULL, 403);
	if (harness_call("POST", R.other, b, "/v1/jobs") != 403 && harness_r.status != 404)
		fail_msg("another environment's admin submitted: %ld %s", harness_r.status,
		    harness_r.body);
	harness_call("POST", NULL, b, "/v1/jobs");
	harness_expect_status(NULL, 401);
	free(b);
	assert_int_equal(harness_sql_long("SELECT count(*) FROM jobs"), 0);
}

/* The node a worker of the cron's run is Running on (cloudsim's pods) into node, "" none. */
static void
run_worker_node(const char *id, char *node, size_t n)
{
	char *ns = harness_sql_str("SELECT manifest->'metadata'->>'namespace' FROM jobs WHERE"
	    " id = '%s'", id);
	struct http_result r = { 0 };
	char path[512];
	json_t *it;
	size_t i;

	node[0] = '\0';
	snprintf(path, sizeof(path), "/api/v1/namespaces/%s/pods?labelSelector=fleet.io%%2F"
	    "job-id%%3D%s", ns, id);
	harness_kube(&cs, &r, CLUSTER, "GET", path, NULL, NULL);
	json_array_foreach(json_object_get(r.json, "items"), i, it) {
		const char *role = json_string_value(json_object_get(harness_jp(it,
		    "metadata.labels"), "fleet.io/role"));

		if (role != NULL && strcmp(role, "worker") == 0 &&
		    strcmp(harness_js(it, "status.phase"), "Running") == 0)
			snprintf(node, n, "%s", harness_js(it, "spec.nodeName"));
	}
	harness_http_free(&r);
	free(ns);
}

/* The node of job id's first worker allocation (malloc'd, "" when none). */
static char *
worker_node(const char *id)
{
	return harness_sql_str("SELECT coalesce((SELECT a->>'node' FROM jsonb_array_elements("
	    "placement->'allocs') a WHERE (a->>'group')::int = 1 LIMIT 1), '') FROM jobs WHERE"
	    " id = '%s'", id);
}

/* A run is placed when it starts, against the capacity of that moment: the nodes the cron
 * was admitted on are taken by another job between runs, and the next run still runs, on
 * the other node (before: every run was pinned to the cron's admission nodes and stayed
 * Pending behind the other job, counted all the same). */
static void
test_run_placed(void **state)
{
	static char cid[40], bid[40], b[2048], node[128], other_node[128], ran_on[128];
	char *s;
	json_t *ex;
	double end;

	(void)state;
	/* one worker of 8 L4: a whole node of the g6 pool (two nodes); a run every 5
	 * simulated minutes (15 s here), the first one 5 minutes after the cron lands */
	snprintf(b, sizeof(b), "{\"environment\":\"" ENV "\",\"kind\":\"RayCronJob\","
	    "\"queue\":\"qp\",\"name\":\"placed\",\"ray_version\":\"2.52.0\",\"entrypoint\":"
	    "\"python t.py\",\"schedule\":\"@every 5m\",\"head\":{\"cpu\":\"1\",\"memory\":"
	    "\"2Gi\"},\"worker_groups\":[{\"name\":\"gpu\",\"replicas\":1,\"cpu\":\"8\","
	    "\"memory\":\"64Gi\",\"accelerator\":{\"flavor\":\"" L4 "\",\"count\":8}}]}");
	snprintf(cid, sizeof(cid), "%s", harness_js(harness_post_created(R.oper, "/v1/jobs", b),
	    "id"));
	json_decref(harness_job_wait(R.admin, cid, "running", 0, 60));
	s = worker_node(cid);
	snprintf(node, sizeof(node), "%s", s);
	free(s);
	assert_true(node[0] != '\0');

	/* between runs the cron holds nothing: a RayJob of the same shape takes its node */
	snprintf(b, sizeof(b), "{\"environment\":\"" ENV "\",\"kind\":\"RayJob\","
	    "\"queue\":\"qp\",\"name\":\"taker\",\"ray_version\":\"2.52.0\",\"entrypoint\":"
	    "\"python t.py\",\"head\":{\"cpu\":\"1\",\"memory\":\"2Gi\"},\"worker_groups\":"
	    "[{\"name\":\"gpu\",\"replicas\":1,\"cpu\":\"8\",\"memory\":\"64Gi\","
	    "\"accelerator\":{\"flavor\":\"" L4 "\",\"count\":8}}]}");
	snprintf(bid, sizeof(bid), "%s", harness_js(harness_post_created(R.oper, "/v1/jobs", b),
	    "id"));
	json_decref(harness_job_wait(R.admin, bid, "running", 0, 60));
	s = worker_node(bid);
	if (strcmp(s, node) != 0 || harness_job_event_count(cid, "cron.run_started", NULL) != 0)
		fail_msg("premise: the other job should take the cron's node %s before the "
		    "first run (it took %s; runs started %ld)", node, s,
		    harness_job_event_count(cid, "cron.run_started", NULL));
	free(s);

	/* the run: placed on the other node, and it runs there */
	harness_job_wait_event(cid, "cron.run_started", NULL, 60);
	s = harness_sql_str("SELECT coalesce((SELECT a->>'node' FROM jsonb_array_elements("
	    "cron_runs->0->'placement'->'allocs') a WHERE (a->>'group')::int = 1 LIMIT 1), '')"
	    " FROM jobs WHERE id = '%s'", cid);
	snprintf(other_node, sizeof(other_node), "%s", s);
	free(s);
	end = harness_now_s() + 30;
	do {
		run_worker_node(cid, ran_on, sizeof(ran_on));
		if (ran_on[0] == '\0')
			usleep(300 * 1000);
	} while (ran_on[0] == '\0' && harness_now_s() < end);
	if (ran_on[0] == '\0')
		fail_msg("the run does not run (placed on '%s'; the cron's node %s is taken); "
		    "fleetd log %s", other_node, node, fd.log);
	assert_string_equal(ran_on, other_node);	/* where the scheduler placed it */
	assert_string_not_equal(ran_on, node);
	ex = harness_get_ok(R.viewer, "/v1/jobs/%s/placement", cid);
	assert_string_equal(json_string_value(harness_jp(ex, "cron.runs.0.nodes.0")),
	    other_node);
	print_message("run placed: cron admitted on %s, taken; the run runs on %s\n", node,
	    other_node);
	harness_call("POST", R.oper, "{}", "/v1/jobs/%s/cancel", cid);
	harness_call("POST", R.oper, "{}", "/v1/jobs/%s/cancel", bid);
	json_decref(harness_job_wait(R.admin, cid, "cancelled", 0, 60));
	json_decref(harness_job_wait(R.admin, bid, "cancelled", 0, 60));
}

static void
test_policies(void **state)
{
	static char idle[40], fid[40], rid[40], aid[40], first[128];
	json_t *kids, *ex;
	size_t n;
	bool ok;
	char *s;
	double end;
	long max_a = 0, u;

	(void)state;
	submit(idle, "qi", "idle", "@daily", NULL);
	submit(fid, "qf", "forbid", "* * * * *", "Forbid");
	submit(rid, "qr", "replace", "* * * * *", "Replace");
	submit(aid, "qa", "allow", "* * * * *", "Allow");
	json_decref(harness_job_wait(R.admin, idle, "running", 0, 60));
	json_decref(harness_job_wait(R.admin, fid, "running", 0, 60));
	json_decref(harness_job_wait(R.admin, rid, "running", 0, 60));
	json_decref(harness_job_wait(R.admin, aid, "running", 0, 60));

	/* a cron between runs holds nothing (before: one gang from admission on) */
	end = harness_now_s() + 5;
	while (harness_now_s() < end && usage_of("qi") != 0)
		usleep(200 * 1000);
	assert_int_equal(usage_of("qi"), 0);
	assert_int_equal(runs_of(idle), 0);

	/* Forbid: the second run is skipped while the first runs */
	harness_job_wait_event(fid, "cron.run_started", NULL, 60);
	harness_job_wait_event(fid, "cron.run_skipped", "forbid", 60);
	if (!settle_runs(fid, 1, &n))
		fail_msg("Forbid: %zu runs on the member, %ld counted", n, runs_of(fid));
	ex = harness_get_ok(R.viewer, "/v1/jobs/%s/events", fid);	/* as the API shows it */
	assert_non_null(strstr(harness_r.body, "\"cron.run_skipped\""));
	assert_non_null(strstr(harness_r.body, "concurrency_policy Forbid"));
	assert_true(usage_of("qf") <= GPUS);

	/* Replace: the running run is stopped for the new one */
	harness_job_wait_event(rid, "cron.run_started", NULL, 60);
	s = harness_sql_str("SELECT data->>'run' FROM job_events WHERE job_id = '%s' AND type ="
	    " 'cron.run_started' ORDER BY id LIMIT 1", rid);
	snprintf(first, sizeof(first), "%s", s);
	free(s);
	harness_job_wait_event(rid, "cron.run_replaced", NULL, 60);
	end = harness_now_s() + 20;
	do {
		kids = active_children(rid);
		ok = json_array_size(kids) == 1 && strcmp(json_string_value(json_array_get(kids,
		    0)), first) != 0;
		json_decref(kids);
		if (!ok)
			usleep(300 * 1000);
	} while (!ok && harness_now_s() < end);
	if (!ok)
		fail_msg("Replace: the first run %s still runs or more than one runs", first);
	assert_int_equal(runs_of(rid), 1);
	assert_true(harness_sql_long("SELECT count(*) FROM job_events WHERE job_id = '%s' AND"
	    " type = 'cron.run_replaced' AND data->>'stopped' = '%s'", rid, first) == 1);

	/* Allow: two runs at once, both counted; the third does not fit the quota */
	end = harness_now_s() + 60;
	while (harness_now_s() < end && (u = usage_of("qa")) != 2 * GPUS) {
		max_a = u > max_a ? u : max_a;
		usleep(200 * 1000);
	}
	assert_int_equal(usage_of("qa"), 2 * GPUS);
	ex = harness_get_ok(R.viewer, "/v1/jobs/%s/placement", aid);
	assert_string_equal(harness_js(ex, "cron.concurrency_policy"), "Allow");
	assert_int_equal(json_array_size(harness_jp(ex, "cron.runs")), 2);
	harness_job_wait_event(aid, "cron.run_skipped", "quota", 60);
	if (!settle_runs(aid, 2, &n))
		fail_msg("Allow: %zu runs on the member, %ld counted", n, runs_of(aid));
	u = usage_of("qa");
	max_a = u > max_a ? u : max_a;
	assert_true(max_a <= QUOTA);	/* never over quota */
	print_message("runs: forbid %ld, replace %ld, allow %ld counted; qa usage %ld of %d\n",
	    runs_of(fid), runs_of(rid), runs_of(aid), u, QUOTA);

	/* cancelling the cron ends its runs with it (the garbage collector) */
	harness_call("POST", R.oper, "{}", "/v1/jobs/%s/cancel", aid);
	json_decref(harness_job_wait(R.admin, aid, "cancelled", 0, 60));
	assert_int_equal(count_children(aid), 0);
	assert_int_equal(usage_of("qa"), 0);
	ex = harness_get_ok(R.viewer, "/v1/jobs/%s/placement", aid);
	assert_int_equal(json_array_size(harness_jp(ex, "cron.runs")), 0);
	assert_string_equal(harness_js(ex, "cron.holds"), "nothing: the job has ended");
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_refusals),
		cmocka_unit_test(test_run_placed),
		cmocka_unit_test(test_policies),
	};

	return cmocka_run_group_tests(tests, setup, harness_group_teardown);
}
