/* test_status_proportional: the status worker's work follows change (issue 29, item 2).
 * With N RayClusters running and nothing changing, the followed jobs it loads over a
 * quiet window are about N per full-check period, not N per second, and its queries per
 * second do not grow with N; a change (a cancel) is still acted on at once, by loading
 * that one job. */
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

#define ENV		"test"
#define H100		"nvidia-h100-80gb"
#define NJOBS		8
#define PERIOD_S	5	/* FLEETD_STATUS_FULL_PERIOD */
#define WINDOW_S	15	/* the quiet window: three periods */

static struct fleetd_proc fd;
static struct harness_cs cs;
static char dburl[512];
static char *admin;
static char *ids[NJOBS];

static int
setup(void **state)
{
	const char *const names[] = { "test-hp-usw2", NULL };

	(void)state;
	harness_cs_start(&cs, NULL, NULL);
	harness_cs_env_add(&cs, "FLEETD_WORKERS=poller,scheduler,dispatch,status");
	harness_cs_env_add(&cs, "FLEETD_SCHEDULER_INTERVAL_MS=300");
	harness_cs_env_add(&cs, "FLEETD_STATUS_FULL_PERIOD=5");
	harness_db_create("sprop", dburl, sizeof(dburl));
	harness_fleetd_start(&fd, dburl, (const char *const *)cs.env);
	admin = harness_keep(harness_token(dburl, "admin", "*"));
	harness_post_created(admin, "/v1/environments", "{\"name\":\"" ENV "\"}");
	harness_pclass(admin, "low", 10, false);
	harness_queue(admin, ENV, "ml", "low", H100, 200);
	harness_register(&cs, admin, "test-hp-usw2", NULL, NULL);
	harness_wait_capacity(names, 60);
	return 0;
}

static char *
submit(int i)
{
	char body[1024];

	snprintf(body, sizeof(body), "{\"environment\":\"" ENV "\",\"kind\":\"RayCluster\","
	    "\"queue\":\"ml\",\"name\":\"quiet%d\",\"ray_version\":\"2.52.0\",\"head\":{\"cpu\":"
	    "\"1\",\"memory\":\"2Gi\"},\"worker_groups\":[{\"name\":\"gpu\",\"replicas\":1,"
	    "\"cpu\":\"4\",\"memory\":\"32Gi\",\"accelerator\":{\"flavor\":\"" H100 "\","
	    "\"count\":1}}],\"constraints\":{\"providers\":[\"hyperpod\"]}}", i);
	return strdup(harness_js(harness_post_created(admin, "/v1/jobs", body), "id"));
}

static double
now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static void
test_quiet_fleet_costs_per_period(void **state)
{
	double loaded0, loads0, loaded, loads, t0, secs;

	(void)state;
	for (int i = 0; i < NJOBS; i++)
		ids[i] = harness_keep(submit(i));
	for (int i = 0; i < NJOBS; i++)
		harness_job_wait_row(ids[i], "running", 1, 120);
	sleep(2);	/* the last transitions' notifications are acted on */
	loaded0 = harness_metric("fleetd_status_jobs_loaded_total ");
	loads0 = harness_metric("fleetd_status_job_loads_total ");
	t0 = now_s();
	sleep(WINDOW_S);
	loaded = harness_metric("fleetd_status_jobs_loaded_total ") - loaded0;
	loads = harness_metric("fleetd_status_job_loads_total ") - loads0;
	secs = now_s() - t0;
	print_message("quiet %.1f s, %d running jobs: %.0f jobs loaded by %.0f queries "
	    "(loading every job each second: %.0f)\n", secs, NJOBS, loaded, loads,
	    secs * NJOBS);
	assert_true(loaded0 >= NJOBS && loads0 >= 1);
	/* each job is still checked in full, once a period ... */
	assert_true(loaded >= NJOBS);
	/* ... and only about once: at most one more period's worth, far below a load of
	 * every job each second (secs * NJOBS) */
	assert_true(loaded <= NJOBS * (secs / PERIOD_S + 2));
	assert_true(loaded < secs * NJOBS / 2);
	/* one query per turn (a second), whatever the number of jobs */
	assert_true(loads <= 2 * secs + 2);
}

static void
test_change_loads_that_job(void **state)
{
	double loaded0 = harness_metric("fleetd_status_jobs_loaded_total "), t0 = now_s();
	long st;

	(void)state;
	st = harness_call("POST", admin, "{}", "/v1/jobs/%s/cancel", ids[0]);
	assert_true(st == 200 || st == 202);
	harness_job_wait_row(ids[0], "cancelled", 1, 60);
	print_message("cancel acted on in %.1f s; %.0f jobs loaded meanwhile\n", now_s() - t0,
	    harness_metric("fleetd_status_jobs_loaded_total ") - loaded0);
	assert_true(harness_sql_long("SELECT count(*) FROM jobs WHERE state = 'running'") ==
	    NJOBS - 1);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_quiet_fleet_costs_per_period),
		cmocka_unit_test(test_change_loads_that_job),
	};

	return cmocka_run_group_tests(tests, setup, harness_group_teardown);
}
