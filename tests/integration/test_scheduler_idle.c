/* test_scheduler_idle: the scheduler skips cycles while nothing was committed since its last
 * one read the model, and a change committed without any notification (plain SQL) is still
 * acted on at the next round. */
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

#define H100	"nvidia-h100-80gb"

static const char *const env[] = { "FLEETD_WORKERS=scheduler",
	"FLEETD_SCHEDULER_INTERVAL_MS=100", "FLEETD_SNAPSHOT_MAX_AGE=100000", NULL };

static struct fleetd_proc fd;
static char dburl[512];
static char *admin, *a, *b;	/* a, b: the two jobs (kept: freed by the group teardown) */

static int
setup(void **state)
{
	(void)state;
	/* "nothing committed" is read from pg_current_snapshot(), which any commit on the
	 * server moves: the tests running beside this one commit on theirs all the time */
	harness_pg_private();
	harness_db_create("sched_idle", dburl, sizeof(dburl));
	harness_fleetd_start(&fd, dburl, env);
	admin = harness_keep(harness_token(dburl, "admin", "*"));
	harness_post_created(admin, "/v1/environments", "{\"name\":\"idle\"}");
	harness_seed_cluster("idle", "gke", "us-central1", "active", "idle-1", H100, 1, 8, 1, false);
	harness_post_created(admin, "/v1/queues", "{\"name\":\"qi\",\"environment\":\"idle\",\"nominal_quota\":{\"" H100 "\":8}}");
	return 0;
}

static long
metric(const char *name)
{
	const char *p;
	char key[128];

	harness_call("GET", admin, NULL, "/metrics");
	harness_expect_status(NULL, 200);
	snprintf(key, sizeof(key), "\n%s ", name);
	if ((p = strstr(harness_r.body, key)) == NULL)
		fail_msg("no %s in /metrics", name);
	return strtol(p + strlen(key), NULL, 10);
}

static char *
submit(const char *name)
{
	char patch[128], *body, *id;
	json_t *r;

	snprintf(patch, sizeof(patch), "{\"name\":\"%s\"}", name);
	body = harness_job_body("idle", "qi", H100, 8, patch);
	r = harness_post_created(admin, "/v1/jobs", body);
	id = strdup(json_string_value(json_object_get(r, "id")));
	free(body);
	return id;
}

static long
state_is(const char *id, const char *state)
{
	return harness_sql_long("SELECT count(*) FROM jobs WHERE id = '%s' AND state = '%s'", id,
	    state);
}

static void
test_idle_skips_and_sql_change_seen(void **state)
{
	long cycles, skipped;
	double end;

	(void)state;
	a = harness_keep(submit("first"));
	b = harness_keep(submit("second"));	/* the cluster has 8: it waits for the first */
	end = harness_now_s() + 30;
	while (state_is(a, "admitted") != 1 && harness_now_s() < end)
		usleep(100 * 1000);
	assert_int_equal(state_is(a, "admitted"), 1);
	/* settled: the second waits; nothing is committed any more */
	end = harness_now_s() + 30;
	while (harness_sql_long("SELECT count(*) FROM jobs WHERE id = '%s' AND reason IS NOT NULL",
	    b) != 1 && harness_now_s() < end)
		usleep(100 * 1000);
	usleep(500 * 1000);
	cycles = metric("fleetd_scheduler_cycles_total");
	skipped = metric("fleetd_scheduler_cycles_skipped_total");
	usleep(1500 * 1000);	/* 15 rounds of 100 ms */
	assert_true(metric("fleetd_scheduler_cycles_skipped_total") >= skipped + 3);
	assert_true(metric("fleetd_scheduler_cycles_total") <= cycles + 2);
	assert_int_equal(state_is(b, "pending"), 1);
	/* the first ends in SQL (no NOTIFY): its accelerators are free at the next round */
	harness_sql("UPDATE jobs SET state = 'succeeded', finished_at = now() WHERE id = '%s'", a);
	end = harness_now_s() + 20;
	while (state_is(b, "admitted") != 1 && harness_now_s() < end)
		usleep(50 * 1000);
	assert_int_equal(state_is(b, "admitted"), 1);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_idle_skips_and_sql_change_seen),
	};

	return cmocka_run_group_tests_name("scheduler_idle", tests, setup, harness_group_teardown);
}
