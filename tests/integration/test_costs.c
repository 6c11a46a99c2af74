/* test_costs: cost and budgets (issue 27) on a cloudsim fleet of known prices — the costs
 * of a run (GPU-hours and dollars over a window clipped inside it: exact to 1e-9; over the
 * open month: within 1 s of run), an environment's price override, soft thresholds that
 * emit budget_threshold events at submission and from the budgets worker (and
 * budget.threshold webhook deliveries), a hard budget that refuses a submission it accepted
 * before, fleetctl costs and the Prometheus counters (promtool). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/harness/harness.h"

#define ENV	"cost"
#define H100	"nvidia-h100-80gb"
#define P5_HOUR	98.32	/* the fixture's price of a p5 node (8 H100) */

static struct harness_fleet F;
static const char *admin, *viewer;
static char *run_id;		/* running on 2 H100, queue ml, team vision (kept) */

/* A RayJob of gpus H100 in queue, labelled team; returns the status of its POST (the
 * answer in harness_r). */
static long
submit(const char *queue, const char *name, const char *team, int gpus)
{
	char patch[160], *body;
	long st;

	snprintf(patch, sizeof(patch), "{\"name\":\"%s\",\"labels\":{\"team\":\"%s\"}}", name,
	    team);
	body = harness_job_body(ENV, queue, H100, gpus, patch);
	st = harness_call("POST", admin, body, "/v1/jobs");
	free(body);
	return st;
}

static char *
submit_ok(const char *queue, const char *name, const char *team, int gpus)
{
	assert_int_equal(submit(queue, name, team, gpus), 201);
	return strdup(json_string_value(json_object_get(harness_r.json, "id")));
}

/* tests/fixtures/fleets/costs.json: one HyperPod cluster with a p5 pool at 98.32 USD per
 * node-hour (8 H100: 12.29 per GPU-hour), queues ml and research; jobs run for good. */
static int
setup(void **state)
{
	harness_fleet_start(&F, "costs", FLEETD_SOURCE_DIR "/tests/fixtures/fleets/costs.json",
	    "4", NULL);
	admin = F.admin;
	viewer = harness_fleet_token(&F, "viewer", ENV);
	run_id = harness_keep(submit_ok("ml", "vision-train", "vision", 2));
	json_decref(harness_job_wait(admin, run_id, "running", 0, 60));
	*state = &F;
	return 0;
}

/* One item of a report by key (fails when absent). */
static json_t *
item(json_t *rep, const char *key)
{
	json_t *it;
	size_t i;

	json_array_foreach(json_object_get(rep, "items"), i, it)
		if (strcmp(json_string_value(json_object_get(it, "key")), key) == 0)
			return it;
	fail_msg("no item %s in %s", key, json_dumps(rep, 0));
	return NULL;
}

static double
num(json_t *o, const char *k)
{
	return json_number_value(json_object_get(o, k));
}

/* The window [start + 1 s, start + 3 s) of the run, in the past once it returns. */
static void
window(char *from, char *to, size_t n)
{
	char *f = harness_sql_str("SELECT to_char((started_at + interval '1 second') AT TIME"
	    " ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.US\"Z\"') FROM job_runs WHERE job_id = '%s'",
	    run_id);
	char *t = harness_sql_str("SELECT to_char((started_at + interval '3 second') AT TIME"
	    " ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.US\"Z\"') FROM job_runs WHERE job_id = '%s'",
	    run_id);

	snprintf(from, n, "%s", f);
	snprintf(to, n, "%s", t);
	free(f);
	free(t);
	assert_int_equal(harness_wait_long(10, 1, "SELECT (now() > (SELECT started_at +"
	    " interval '3.2 second' FROM job_runs WHERE job_id = '%s'))::int", run_id), 1);
}

static void
test_costs_of_a_run(void **state)
{
	char from[64], to[64];
	json_t *rep, *it;
	double gh, want_gh = 2.0 * 2.0 / 3600.0, h;

	(void)state;
	window(from, to, sizeof(from));
	/* 2 s of 2 H100 at 98.32 / 8 per GPU-hour: the driver's price */
	rep = harness_get_ok(viewer, "/v1/costs?group_by=queue&from=%s&to=%s", from, to);
	it = item(rep, "ml");
	assert_true(fabs(num(it, "gpu_hours") - want_gh) < 1e-9);
	assert_true(fabs(num(it, "dollars") - want_gh * P5_HOUR / 8) < 1e-9);
	assert_int_equal((int)num(it, "jobs"), 1);
	assert_string_equal(json_string_value(json_object_get(it, "environment")), ENV);
	it = item(harness_get_ok(viewer, "/v1/costs?group_by=team&from=%s&to=%s", from, to),
	    "vision");
	assert_true(fabs(num(it, "gpu_hours") - want_gh) < 1e-9);
	item(harness_get_ok(viewer, "/v1/costs?group_by=provider&from=%s&to=%s", from, to),
	    "hyperpod");
	item(harness_get_ok(viewer, "/v1/costs?group_by=region&from=%s&to=%s", from, to),
	    "us-west-2");
	/* the open month: the run so far, within a second of run either way */
	h = (double)harness_sql_long("SELECT (extract(epoch FROM now() - started_at) * 1000)::bigint"
	    " FROM job_runs WHERE job_id = '%s'", run_id) / 3600000.0;
	gh = num(json_object_get(harness_get_ok(viewer, "/v1/costs?group_by=environment"),
	    "total"), "gpu_hours");
	assert_true(fabs(gh - 2 * h) < 2.0 / 3600.0);
	/* runs: priced by the provider */
	rep = harness_get_ok(viewer, "/v1/costs/runs?from=%s&to=%s", from, to);
	it = json_array_get(json_object_get(rep, "items"), 0);
	assert_string_equal(json_string_value(json_object_get(it, "price_source")), "provider");
	assert_int_equal((int)num(it, "accel"), 2);
	/* bad arguments: 400 with the parameter's pointer */
	harness_call("GET", viewer, NULL, "/v1/costs?group_by=colour");
	harness_expect_problem(NULL, 400, "cost.bad_group_by", "/query/group_by");
	harness_call("GET", viewer, NULL, "/v1/costs?from=yesterday");
	harness_expect_problem(NULL, 400, "cost.bad_time", "/query/from");
}

static void
test_price_override(void **state)
{
	char from[64], to[64];
	json_t *p, *it;
	char *id;
	double want_gh = 2.0 * 2.0 / 3600.0;

	(void)state;
	window(from, to, sizeof(from));
	harness_call("POST", viewer, "{}", "/v1/prices");
	harness_expect_status(NULL, 403);
	harness_call("POST", admin, "{\"environment\":\"" ENV "\",\"provider\":\"hyperpod\","
	    "\"region\":\"us-west-2\",\"machine_type\":\"ml.p5.48xlarge\",\"price_hour\":-1}",
	    "/v1/prices");
	harness_expect_problem(NULL, 422, "price.bad_price", "/price_hour");
	p = harness_post_created(admin, "/v1/prices", "{\"environment\":\"" ENV "\","
	    "\"provider\":\"hyperpod\",\"region\":\"us-west-2\",\"machine_type\":"
	    "\"ml.p5.48xlarge\",\"price_hour\":80,\"note\":\"negotiated\"}");
	id = strdup(json_string_value(json_object_get(p, "id")));
	assert_int_equal(harness_sql_long("SELECT count(*) FROM audit_log WHERE action ="
	    " 'price.create' AND resource_id = '%s'", id), 1);
	it = item(harness_get_ok(viewer, "/v1/costs?from=%s&to=%s", from, to), "ml");
	assert_true(fabs(num(it, "dollars") - want_gh * 80.0 / 8) < 1e-9);
	/* the list prices stay listed, with their sources */
	p = harness_get_ok(viewer, "/v1/prices?environment=" ENV);
	assert_int_equal(json_array_size(json_object_get(p, "overrides")), 1);
	assert_true(json_array_size(json_object_get(p, "list")) > 5);
	harness_call("DELETE", admin, NULL, "/v1/prices/%s", id);
	harness_expect_status(NULL, 204);
	it = item(harness_get_ok(viewer, "/v1/costs?from=%s&to=%s", from, to), "ml");
	assert_true(fabs(num(it, "dollars") - want_gh * P5_HOUR / 8) < 1e-9);
	free(id);
}

static void
test_budgets(void **state)
{
	char *soft_job, *before, *body;
	json_t *b;
	const char *hard_id;

	(void)state;
	/* validation: 422 with the member's pointer */
	harness_call("POST", admin, "{\"name\":\"x1\",\"environment\":\"" ENV "\",\"scope\":"
	    "\"queue\",\"queue\":\"ml\",\"amount_usd\":10,\"soft_percent\":50}", "/v1/budgets");
	harness_expect_problem(NULL, 422, "budget.bad_soft_percent", "/soft_percent");
	harness_call("POST", admin, "{\"name\":\"x2\",\"environment\":\"" ENV "\",\"scope\":"
	    "\"queue\",\"amount_usd\":10}", "/v1/budgets");
	harness_expect_problem(NULL, 422, "budget.bad_scope", "/queue");
	/* a soft budget of ml, already past 80 % and 100 %: the next submission says so */
	harness_post_created(admin, "/v1/webhooks", "{\"environment\":\"" ENV "\",\"url\":"
	    "\"http://127.0.0.1:9/hook\",\"types\":[\"budget.threshold\"]}");
	harness_post_created(admin, "/v1/budgets", "{\"name\":\"ml-soft\",\"environment\":\""
	    ENV "\",\"scope\":\"queue\",\"queue\":\"ml\",\"amount_usd\":0.0001}");
	/* (the submission or the budgets worker, whichever comes first, on a job of ml) */
	soft_job = submit_ok("ml", "after-soft", "vision", 1);
	assert_int_equal(harness_wait_long(10, 2, "SELECT count(*) FROM job_events v JOIN jobs j"
	    " ON j.id = v.job_id JOIN queues q ON q.id = j.queue_id WHERE q.name = 'ml' AND"
	    " v.type = 'budget_threshold' AND v.data->>'name' = 'ml-soft' AND v.data->>'level'"
	    " IN ('soft', 'exhausted')"), 2);
	free(submit_ok("ml", "again", "vision", 1));	/* once per month and level */
	usleep(700 * 1000);	/* two rounds of the budgets worker */
	assert_int_equal(harness_sql_long("SELECT count(*) FROM job_events WHERE type ="
	    " 'budget_threshold'"), 2);
	assert_int_equal(harness_wait_long(20, 2, "SELECT count(*) FROM webhook_deliveries"
	    " WHERE type = 'budget.threshold'"), 2);
	/* research: accepted before its hard budget, refused once the budget is spent */
	before = submit_ok("research", "before-hard", "nlp", 1);
	json_decref(harness_job_wait(admin, before, "running", 0, 60));
	assert_int_equal(harness_wait_long(10, 1, "SELECT (now() > (SELECT started_at +"
	    " interval '1 second' FROM job_runs WHERE job_id = '%s'))::int", before), 1);
	b = harness_post_created(admin, "/v1/budgets", "{\"name\":\"research-cap\","
	    "\"environment\":\"" ENV "\",\"scope\":\"queue\",\"queue\":\"research\","
	    "\"amount_usd\":0.001,\"hard\":true}");
	hard_id = json_string_value(json_object_get(b, "id"));
	assert_true(harness_sql_long("SELECT count(*) FROM audit_log WHERE action ="
	    " 'budget.create' AND resource_id = '%s'", hard_id) == 1);
	b = harness_get_ok(viewer, "/v1/budgets/%s", hard_id);
	assert_true(num(b, "spent_usd") >= 0.001);
	assert_true(num(b, "percent") >= 100);
	assert_int_equal(submit("research", "after-hard", "nlp", 1), 422);
	harness_expect_problem(NULL, 422, "budget.exhausted", "/queue");
	assert_non_null(strstr(json_string_value(json_object_get(harness_r.json, "detail")),
	    "research-cap"));
	/* other queues are not covered; the running job is not stopped */
	free(submit_ok("ml", "not-covered", "vision", 1));
	assert_string_equal(json_string_value(json_object_get(harness_get_ok(admin,
	    "/v1/jobs/%s", before), "state")), "running");
	/* between submissions the budgets worker announces: a soft budget of team nlp, already
	 * spent, names the job of its latest run */
	harness_post_created(admin, "/v1/budgets", "{\"name\":\"nlp-soft\",\"environment\":\""
	    ENV "\",\"scope\":\"team\",\"team\":\"nlp\",\"amount_usd\":0.0005,"
	    "\"soft_percent\":90}");
	assert_int_equal(harness_wait_long(10, 2, "SELECT count(*) FROM job_events WHERE"
	    " job_id = '%s' AND type = 'budget_threshold' AND data->>'name' = 'nlp-soft'",
	    before), 2);
	/* a team budget covers jobs by their labels.team */
	harness_post_created(admin, "/v1/budgets", "{\"name\":\"vision-cap\",\"environment\":\""
	    ENV "\",\"scope\":\"team\",\"team\":\"vision\",\"amount_usd\":0.001,\"hard\":true}");
	assert_int_equal(submit("ml", "vision-more", "vision", 1), 422);
	harness_expect_problem(NULL, 422, "budget.exhausted", "/labels/team");
	body = harness_job_body(ENV, "ml", H100, 1, "{\"name\":\"unlabelled\"}");
	assert_int_equal(harness_call("POST", admin, body, "/v1/jobs"), 201);
	free(body);
	free(soft_job);
	free(before);
}

static void
test_fleetctl_and_metrics(void **state)
{
	char url[128], tok[256];
	const char *env[3] = { url, tok, NULL };
	struct harness_ctl r;
	struct http_result h;
	char path[128];
	FILE *f;
	double d;

	(void)state;
	snprintf(url, sizeof(url), "FLEET_URL=%s", F.fd.url);
	snprintf(tok, sizeof(tok), "FLEET_TOKEN=%s", viewer);
	harness_ctl_home_make();
	harness_ctl_run(&r, NULL, env, (const char *const[]){ "costs", "--group-by", "team",
	    NULL });
	assert_int_equal(r.rc, 0);
	assert_non_null(strstr(r.out, "vision"));
	assert_non_null(strstr(r.out, "total "));
	harness_ctl_free(&r);
	harness_ctl_home_drop();
	/* the budgets worker keeps the counters (a scrape queries nothing): its next round */
	for (int k = 0; k < 100 && (d = harness_metric("fleetd_cost_dollars_total{environment=\""
	    ENV "\",queue=\"ml\"} ")) <= 0; k++)
		usleep(100 * 1000);
	assert_true(d > 0);
	assert_true(harness_metric("fleetd_cost_accelerator_seconds_total{environment=\"" ENV
	    "\",queue=\"ml\"} ") > 0);
	/* with samples of both families, the exposition still passes promtool */
	harness_http(&h, "GET", harness_url(&F.fd, "/metrics"), harness_metrics_token(), NULL,
	    NULL);
	assert_int_equal(h.status, 200);
	snprintf(path, sizeof(path), "/tmp/fleetd-cost-metrics-%d.txt", (int)getpid());
	f = fopen(path, "w");
	assert_non_null(f);
	fwrite(h.body, 1, h.len, f);
	fclose(f);
	assert_int_equal(harness_sh("promtool check metrics < %s", path), 0);
	unlink(path);
	harness_http_free(&h);
}

/* The run of run_id in /v1/costs/runs (borrowed from harness_r). */
static json_t *
run_of(void)
{
	json_t *it;
	size_t i;

	json_array_foreach(json_object_get(harness_get_ok(viewer, "/v1/costs/runs?limit=500"),
	    "items"), i, it)
		if (strcmp(json_string_value(json_object_get(it, "job_id")), run_id) == 0)
			return it;
	fail_msg("no run of %s", run_id);
	return NULL;
}

static void
test_finished_run(void **state)
{
	double gh;

	(void)state;
	harness_call("POST", admin, "{}", "/v1/jobs/%s/cancel", run_id);
	json_decref(harness_job_wait(admin, run_id, "cancelled", 0, 60));
	/* the run ended when the job left running: its cost no longer grows */
	assert_true(json_is_string(json_object_get(run_of(), "ended_at")));
	gh = num(run_of(), "gpu_hours");
	usleep(1100 * 1000);
	assert_true(num(run_of(), "gpu_hours") == gh);
	assert_true(gh > 2.0 * 3.0 / 3600.0);	/* it ran more than the 3 s of the window */
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_costs_of_a_run),
		cmocka_unit_test(test_price_override),
		cmocka_unit_test(test_budgets),
		cmocka_unit_test(test_fleetctl_and_metrics),
		cmocka_unit_test(test_finished_run),
	};

	return cmocka_run_group_tests(tests, setup, harness_fleet_teardown);
}
