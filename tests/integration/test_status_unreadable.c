/* test_status_unreadable: jobs running on a member the status worker cannot read get their
 * sync_error note once, and the worker's later cycles do not ask the database again for each
 * of them (it did: a round trip per job per cycle). */
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
#define NJOBS	60

static const char *const env[] = { "FLEETD_WORKERS=status", "FLEETD_STATUS_WATCH=0",
	"FLEETD_SNAPSHOT_MAX_AGE=100000", NULL };

static struct fleetd_proc fd;
static char dburl[512];
static char *admin;

static int
setup(void **state)
{
	(void)state;
	harness_db_create("status_unreadable", dburl, sizeof(dburl));
	harness_fleetd_start(&fd, dburl, env);
	admin = harness_keep(harness_token(dburl, "admin", "*"));
	harness_post_created(admin, "/v1/environments", "{\"name\":\"dark\"}");
	/* its credentials are not a sealed value: every read of the member fails */
	harness_seed_cluster("dark", "gke", "us-central1", "active", "dark-1", H100, 1, 8, 1, false);
	harness_post_created(admin, "/v1/queues", "{\"name\":\"qd\",\"environment\":\"dark\"}");
	harness_sql("INSERT INTO jobs (id, name, environment, queue_id, kind, priority_class,"
	    " priority, spec, state, attempt, cluster_id, enqueued_at, started_at)"
	    " SELECT gen_random_uuid(), 'run-' || i, 'dark', q.id, 'RayJob', 'default', 0,"
	    " '{\"kind\":\"RayJob\"}', 'running', 1, k.id, now(), now()"
	    " FROM generate_series(1, %d) i, queues q, clusters k"
	    " WHERE q.name = 'qd' AND k.name = 'dark-1'", NJOBS);
	return 0;
}

static long
commits(void)
{
	return harness_sql_long("SELECT xact_commit FROM pg_stat_database"
	    " WHERE datname = current_database()");
}

static void
test_noted_once_then_quiet(void **state)
{
	double end = harness_now_s() + 30;
	long before, after;

	(void)state;
	while (harness_sql_long("SELECT count(DISTINCT job_id) FROM job_events"
	    " WHERE type = 'sync_error'") < NJOBS && harness_now_s() < end)
		usleep(100 * 1000);
	assert_int_equal(harness_sql_long("SELECT count(DISTINCT job_id) FROM job_events"
	    " WHERE type = 'sync_error'"), NJOBS);
	sleep(1);
	harness_sql("SELECT pg_stat_clear_snapshot()");
	before = commits();
	sleep(4);	/* about four status cycles */
	harness_sql("SELECT pg_stat_clear_snapshot()");
	after = commits();
	/* a cycle: the followed jobs, the member's target, a few reads of ours; asking again
	 * for every job's note was NJOBS more a cycle */
	if (after - before >= 2L * NJOBS)
		fail_msg("%ld transactions in 4 s (%d jobs)", after - before, NJOBS);
	/* still once each */
	assert_int_equal(harness_sql_long("SELECT count(*) FROM job_events WHERE type = 'sync_error'"),
	    NJOBS);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_noted_once_then_quiet),
	};

	return cmocka_run_group_tests_name("status_unreadable", tests, setup, harness_group_teardown);
}
