/* test_capacity_prefs: capacity preferences end to end against cloudsim (issue 27) — one GKE
 * cluster with a spot, an on-demand and a reserved H100 pool (the reservation as the GKE
 * NodePool API shows it); a queue ranking reservation > on_demand > spot.  A checkpointed
 * job starts on spot, moves with its checkpoint to on-demand when that frees, then waits
 * its cooldown while the reservation is free (hysteresis); a job that takes only its first
 * choice waits although spot has room; a job with max_migrations 0 stays where it is. */
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

#define ENV		"cp"
#define H100		"nvidia-h100-80gb"
#define TIME_SCALE	"4"

static struct harness_fleet F;
static const char *oper;

static int
setup(void **state)
{
	(void)state;
	harness_fleet_start(&F, "cprefs", FLEETD_SOURCE_DIR
	    "/tests/fixtures/fleets/capacity_prefs.json", TIME_SCALE, NULL);
	oper = harness_fleet_token(&F, "operator", ENV);
	return 0;
}

static int
teardown(void **state)
{
	(void)state;
	harness_fleet_stop(&F);
	return 0;
}

/* Submits a RayJob of one 8-GPU worker with constraints (JSON text, may be NULL) and a
 * checkpoint of grace 3 s; returns its id (malloc'd). */
static char *
submit(const char *name, const char *constraints)
{
	char body[2048];

	snprintf(body, sizeof(body), "{\"environment\":\"" ENV "\",\"kind\":\"RayJob\","
	    "\"queue\":\"ml\",\"name\":\"%s\",\"ray_version\":\"2.52.0\","
	    "\"entrypoint\":\"python train.py\",\"head\":{\"cpu\":\"1\",\"memory\":\"2Gi\"},"
	    "\"worker_groups\":[{\"name\":\"gpu\",\"replicas\":1,\"cpu\":\"8\",\"memory\":\"64Gi\","
	    "\"accelerator\":{\"flavor\":\"" H100 "\",\"count\":8}}],"
	    "\"checkpoint\":{\"uri\":\"s3://ckpt/%s\",\"grace_seconds\":3}%s%s%s}", name, name,
	    constraints ? ",\"constraints\":" : "", constraints ? constraints : "",
	    "");
	if (harness_call("POST", oper, body, "/v1/jobs") != 201)
		fail_msg("submit %s: %ld %s", name, harness_r.status, harness_r.body);
	return strdup(harness_js(harness_r.json, "id"));
}

static char *
pool_of(const char *id)
{
	json_t *j = harness_job(F.admin, id);
	char *p = strdup(harness_js(j, "placement.pool"));

	json_decref(j);
	return p;
}

static json_t *
prefs_of(const char *id)
{
	json_t *ex = harness_get_ok(F.admin, "/v1/jobs/%s/placement", id);

	return json_incref(json_object_get(ex, "capacity_preference"));
}

static void
expect_verdict(const char *id, const char *want)
{
	json_t *p = prefs_of(id);

	if (p == NULL || strcmp(harness_js(p, "verdict"), want) != 0)
		fail_msg("job %s: capacity_preference %s, want verdict %s", id,
		    p ? json_dumps(p, JSON_COMPACT) : "(none)", want);
	json_decref(p);
}

/* Waits until the scheduler has run n more cycles. */
static void
cycles(int n)
{
	double c0 = harness_metric("fleetd_scheduler_cycles_total "), t0 = harness_now_s();

	while (harness_metric("fleetd_scheduler_cycles_total ") < c0 + n) {
		if (harness_now_s() - t0 > 60)
			fail_msg("the scheduler ran no %d cycles in 60 s", n);
		usleep(100 * 1000);
	}
}

static void
test_spot_to_on_demand_with_checkpoint(void **state)
{
	char *res_hold, *od_hold, *train, *picky, *pinned, *p, *qid;
	json_t *j, *ev, *x, *pr;
	bool moved = false, ckpt = false;
	size_t i;

	(void)state;
	/* the reservation and the on-demand node are taken (each by a job that takes only it) */
	res_hold = submit("res-hold", "{\"capacity_preference\":{\"order\":[\"reservation\"],"
	    "\"first_choice_only\":true}}");
	od_hold = submit("od-hold", "{\"capacity_preference\":{\"order\":[\"on_demand\"],"
	    "\"first_choice_only\":true}}");
	json_decref(harness_job_wait(F.admin, res_hold, "running", 1, 120));
	json_decref(harness_job_wait(F.admin, od_hold, "running", 1, 120));
	assert_string_equal(p = pool_of(res_hold), "h100-res");
	free(p);
	assert_string_equal(p = pool_of(od_hold), "h100-od");
	free(p);

	/* the queue's preference: the best type free now is spot */
	train = submit("train", NULL);
	j = harness_job_wait(F.admin, train, "running", 1, 120);
	assert_string_equal(harness_js(j, "placement.pool"), "h100-spot");
	assert_string_equal(harness_js(j, "placement.capacity_type"), "spot");
	json_decref(j);

	/* first choice only: waits, though the other spot node is free */
	picky = submit("picky", "{\"capacity_preference\":{\"order\":[\"on_demand\",\"spot\"],"
	    "\"first_choice_only\":true}}");
	pinned = submit("pinned", "{\"capacity_preference\":{\"order\":[\"on_demand\",\"spot\"],"
	    "\"max_migrations\":0}}");
	j = harness_job_wait(F.admin, pinned, "running", 1, 120);	/* admitted after picky */
	assert_string_equal(harness_js(j, "placement.pool"), "h100-spot");
	json_decref(j);
	j = harness_job(F.admin, picky);
	assert_string_equal(harness_js(j, "state"), "pending");
	json_decref(j);
	pr = prefs_of(picky);
	assert_non_null(pr);
	assert_true(json_is_true(json_object_get(pr, "first_choice_only")));
	json_decref(pr);
	expect_verdict(train, "no_room");
	assert_int_equal(harness_call("POST", oper, NULL, "/v1/jobs/%s/cancel", picky), 200);
	json_decref(harness_job_wait(F.admin, picky, "cancelled", 0, 60));

	/* the on-demand node frees: train (not pinned, max_migrations 0) moves there with its
	 * checkpoint — a move planned by the scheduler, carried out by the mover */
	assert_int_equal(harness_call("POST", oper, NULL, "/v1/jobs/%s/cancel", od_hold), 200);
	j = harness_job_wait(F.admin, train, "running", 2, 180);
	assert_string_equal(harness_js(j, "placement.pool"), "h100-od");
	assert_int_equal(harness_ji(j, "capacity_migrations"), 1);
	json_decref(j);
	ev = harness_job_events(F.admin, train);
	json_array_foreach(ev, i, x) {
		if (strcmp(harness_js(x, "from_state"), "running") == 0 &&
		    strcmp(harness_js(x, "to_state"), "moving") == 0 &&
		    strstr(harness_js(x, "message"), "capacity preference: spot -> on_demand"))
			moved = true;
		if (moved && strstr(harness_js(x, "message"), "checkpoint requested at the source"))
			ckpt = true;
	}
	if (!moved || !ckpt) {
		harness_job_print_events(F.admin, train);
		fail_msg("train: migration event %d, checkpoint signal %d", moved, ckpt);
	}
	json_decref(ev);
	assert_string_equal(p = pool_of(pinned), "h100-spot");
	free(p);
	expect_verdict(pinned, "max_migrations");
	assert_true(harness_metric("fleetd_scheduler_migrations_total ") >= 1);

	/* hysteresis: the reservation frees right after; train just moved, so it waits its
	 * cooldown (3600 s) although the scheduler sees the reservation free */
	assert_int_equal(harness_call("POST", oper, NULL, "/v1/jobs/%s/cancel", res_hold), 200);
	json_decref(harness_job_wait(F.admin, res_hold, "cancelled", 0, 60));
	harness_wait_long(60, 1, "SELECT count(*) FROM capacity WHERE pool = 'h100-res'"
	    " AND free_accel = 8 AND observed_at > (SELECT finished_at FROM jobs WHERE id = '%s')",
	    res_hold);
	cycles(3);
	j = harness_job(F.admin, train);
	assert_string_equal(harness_js(j, "state"), "running");
	assert_int_equal(harness_ji(j, "attempt"), 2);
	json_decref(j);
	expect_verdict(train, "cooldown");
	{
		/* fleetctl explain says it in one line */
		char url[128], tok[256];
		const char *env[3] = { url, tok, NULL };
		struct harness_ctl r;

		snprintf(url, sizeof(url), "FLEET_URL=%s", F.fd.url);
		snprintf(tok, sizeof(tok), "FLEET_TOKEN=%s", oper);
		harness_ctl_home_make();
		harness_ctl_run(&r, NULL, env, (const char *const[]){ "jobs", "explain", train,
		    NULL });
		assert_int_equal(r.rc, 0);
		if (strstr(r.out, "capacity preference: reservation > on_demand > spot; on "
		    "on_demand; migrations 1 of 2; cooldown:") == NULL)
			fail_msg("fleetctl jobs explain: %s", r.out);
		harness_ctl_free(&r);
		harness_ctl_home_drop();
	}

	/* without the cooldown it moves on to its first choice, and then has used both of its
	 * migrations */
	qid = harness_sql_str("SELECT id FROM queues WHERE name = 'ml'");
	if (harness_call("PUT", F.admin, "{\"name\":\"ml\",\"environment\":\"" ENV "\","
	    "\"nominal_quota\":{\"" H100 "\":64},\"default_priority_class\":\"default\","
	    "\"capacity_preference\":{\"order\":[\"reservation\",\"on_demand\",\"spot\"],"
	    "\"min_run_seconds\":1,\"cooldown_seconds\":0,\"max_migrations\":2}}",
	    "/v1/queues/%s", qid) != 200)
		fail_msg("queue update: %ld %s", harness_r.status, harness_r.body);
	j = harness_job_wait(F.admin, train, "running", 3, 180);
	assert_string_equal(harness_js(j, "placement.pool"), "h100-res");
	assert_int_equal(harness_ji(j, "capacity_migrations"), 2);
	json_decref(j);
	expect_verdict(train, "on_first_choice");
	free(res_hold);
	free(od_hold);
	free(train);
	free(picky);
	free(pinned);
	free(qid);
}

/* Bad preferences are 400s with a pointer, on jobs and on queues. */
static void
test_bad_preferences(void **state)
{
	(void)state;
	if (harness_call("POST", oper, "{\"environment\":\"" ENV "\",\"kind\":\"RayJob\","
	    "\"queue\":\"ml\",\"name\":\"bad\",\"ray_version\":\"2.52.0\",\"entrypoint\":\"x\",\"head\":{\"cpu\":\"1\","
	    "\"memory\":\"2Gi\"},\"worker_groups\":[{\"name\":\"g\",\"replicas\":1,"
	    "\"cpu\":\"1\",\"memory\":\"1Gi\"}],\"constraints\":{\"capacity_preference\":{\"order\":"
	    "[\"spot\",\"cheap\"]}}}", "/v1/jobs") != 400)
		fail_msg("bad order: %ld %s", harness_r.status, harness_r.body);
	harness_expect_problem(NULL, 400, "jobspec.invalid_value",
	    "/constraints/capacity_preference/order/1");
	harness_call("POST", F.admin, "{\"name\":\"q2\",\"environment\":\"" ENV "\","
	    "\"capacity_preference\":{\"order\":[\"spot\",\"spot\"]}}", "/v1/queues");
	harness_expect_problem(NULL, 400, "jobspec.invalid_value", "/capacity_preference/order/1");
	harness_call("POST", F.admin, "{\"name\":\"q3\",\"environment\":\"" ENV "\","
	    "\"capacity_preference\":{\"order\":[\"spot\"],\"max_migrations\":-1}}", "/v1/queues");
	harness_expect_problem(NULL, 400, "jobspec.invalid_value",
	    "/capacity_preference/max_migrations");
	harness_call("POST", F.admin, "{\"name\":\"q4\",\"environment\":\"" ENV "\","
	    "\"capacity_preference\":{\"order\":[\"spot\"],\"extra\":1}}", "/v1/queues");
	harness_expect_problem(NULL, 400, "api.unknown_field", "/capacity_preference/extra");
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_bad_preferences),
		cmocka_unit_test(test_spot_to_on_demand_with_checkpoint),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
