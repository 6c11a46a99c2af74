/* test_metrics_access: /metrics names every environment, queue and cluster, so it takes the
 * metrics token or a token for every environment (each role attacks it once), and a
 * scrape runs no SQL: it answers while jobs and clouds are locked by another session. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <libpq-fe.h>

#include "tests/harness/harness.h"

static struct fleetd_proc fd;
static char dburl[512];
static char *root;

static int
setup(void **state)
{
	static const char *const env[] = { "FLEETD_WORKERS=scheduler,iam-verify", NULL };

	(void)state;
	harness_db_create("metrics_access", dburl, sizeof(dburl));
	harness_fleetd_start(&fd, dburl, env);
	root = harness_keep(harness_token(dburl, "admin", "*"));
	harness_post_created(root, "/v1/environments", "{\"name\":\"dev\"}");
	harness_post_created(root, "/v1/environments", "{\"name\":\"prod\"}");
	return 0;
}

/* No token 401; viewer, operator and admin of dev, admin of prod: 403; a wrong metrics
 * token is an unknown token (401); the metrics token and an admin of every environment
 * read it. */
static void
test_metrics_roles(void **state)
{
	static const struct { const char *role, *envs; } limited[] = {
		{ "viewer", "dev" }, { "operator", "dev" }, { "admin", "dev" }, { "admin", "prod" },
	};

	(void)state;
	harness_call("GET", NULL, NULL, "/metrics");
	harness_expect_problem(NULL, 401, "auth.missing_token", NULL);
	for (size_t i = 0; i < sizeof(limited) / sizeof(limited[0]); i++) {
		char *tok = harness_token(dburl, limited[i].role, limited[i].envs);

		harness_call("GET", tok, NULL, "/metrics");
		harness_expect_problem(NULL, 403, "auth.metrics_forbidden", NULL);
		free(tok);
	}
	harness_call("GET", "fleet_notthemetricstoken", NULL, "/metrics");
	harness_expect_status(NULL, 401);
	harness_call("GET", root, NULL, "/metrics");
	harness_expect_status(NULL, 200);
	assert_non_null(strstr(harness_r.body, "fleetd_http_requests_total"));
	harness_call("GET", harness_metrics_token(), NULL, "/metrics");
	harness_expect_status(NULL, 200);
	assert_non_null(strstr(harness_r.body, "fleetd_http_requests_total"));
}

static bool
counts_kept(void *arg)
{
	(void)arg;
	return harness_call("GET", harness_metrics_token(), NULL, "/metrics") == 200 &&
	    strstr(harness_r.body, "# TYPE fleetd_queue_jobs gauge") != NULL &&
	    strstr(harness_r.body, "\nfleetd_clouds_degraded 0") != NULL;
}

/* With jobs and clouds locked by another session, a scrape answers at once, and the job
 * counts the scheduler keeps are still there. */
static void
test_scrape_runs_no_sql(void **state)
{
	PGconn *c = PQconnectdb(dburl);	/* a second session holding the locks */
	PGresult *r;
	double t0;

	(void)state;
	assert_int_equal(PQstatus(c), CONNECTION_OK);
	assert_true(harness_wait(counts_kept, NULL, 20));
	/* NOWAIT, tried again: waiting for both locks while a worker's snapshot holds one and
	 * asks for the other is a deadlock Postgres breaks by failing one side (seen once) */
	for (int k = 0; k < 200; k++) {
		r = PQexec(c, "BEGIN; LOCK TABLE jobs, clouds IN ACCESS EXCLUSIVE MODE NOWAIT");
		if (PQresultStatus(r) == PGRES_COMMAND_OK)
			break;
		PQclear(r);
		PQclear(PQexec(c, "ROLLBACK"));
		r = NULL;
		usleep(50 * 1000);
	}
	assert_non_null(r);
	assert_int_equal(PQresultStatus(r), PGRES_COMMAND_OK);
	PQclear(r);
	t0 = harness_now_s();
	harness_http_timeout_s = 5;
	for (int i = 0; i < 20; i++) {
		harness_call("GET", harness_metrics_token(), NULL, "/metrics");
		harness_expect_status(NULL, 200);
	}
	harness_http_timeout_s = 30;
	print_message("20 scrapes with jobs and clouds locked: %.2f s\n", harness_now_s() - t0);
	assert_true(harness_now_s() - t0 < 5);
	PQclear(PQexec(c, "ROLLBACK"));
	PQfinish(c);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_metrics_roles),
		cmocka_unit_test(test_scrape_runs_no_sql),
	};

	return cmocka_run_group_tests(tests, setup, harness_group_teardown);
}
