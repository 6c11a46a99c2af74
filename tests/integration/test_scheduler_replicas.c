/* test_scheduler_replicas: 2, then 4 scheduler replicas over one database, the leader
 * SIGKILLed in the middle of each phase — leadership moves within 5 s and each of 300 jobs
 * is admitted exactly once, never over a node's cpu.  (The rest: test_scheduler.c.) */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/harness/harness.h"

#define H100	"nvidia-h100-80gb"

static const char *const api_env[] = { "FLEETD_WORKERS=none",
	"FLEETD_SNAPSHOT_MAX_AGE=100000", NULL };
static const char *const sched_env[] = { "FLEETD_WORKERS=scheduler",
	"FLEETD_SNAPSHOT_MAX_AGE=100000", "FLEETD_LOG_LEVEL=info", NULL };

static struct fleetd_proc api;		/* HTTP only: submissions never race a scheduler */
static char dburl[512];
static char *admin;

/* Submits a cpu-only job to ha/qh over the API (no scheduler in the api process). */
static void
submit_ha(void)
{
	char *body = harness_job_body("ha", "qh", NULL, 0, NULL);

	harness_call_to(&api);	/* not a replica: those are killed */
	harness_post_created(admin, "/v1/jobs", body);
	assert_string_equal(harness_js(harness_r.json, "state"), "pending");
	free(body);
}

static void
kill_hard(struct fleetd_proc *p)
{
	int st;

	kill(p->pid, SIGKILL);
	waitpid(p->pid, &st, 0);
	p->pid = 0;
}

/* fleetd_scheduler_leading of p, -1 when p does not answer. */
static int
leading(const struct fleetd_proc *p)
{
	struct http_result r;
	const char *s;
	int n = -1;

	if (p->pid <= 0)
		return -1;
	harness_http(&r, "GET", harness_url(p, "/metrics"), harness_metrics_token(), NULL, NULL);
	if (r.status == 200 && (s = strstr(r.body, "\nfleetd_scheduler_leading ")) != NULL)
		n = atoi(s + strlen("\nfleetd_scheduler_leading "));
	harness_http_free(&r);
	return n;
}

static int
setup(void **state)
{
	(void)state;
	harness_db_create("schedha", dburl, sizeof(dburl));
	harness_fleetd_start(&api, dburl, api_env);
	admin = harness_keep(harness_token(dburl, "admin", "*"));
	harness_post_created(admin, "/v1/environments", "{\"name\":\"ha\"}");
	harness_seed_cluster("ha", "gke", "us-west1", "active", "ha-1", H100, 0, 0, 6, false);
	harness_seed_cluster("ha", "aks", "westeurope", "active", "ha-2", H100, 0, 0, 6, false);
	harness_post_created(admin, "/v1/queues", "{\"name\":\"qh\",\"environment\":\"ha\"}");
	return 0;
}

/* ---- replicas: each job admitted exactly once across leader deaths */

static int
total_leading(struct fleetd_proc *ps, int n)
{
	int sum = 0;

	for (int i = 0; i < n; i++) {
		int l = leading(&ps[i]);

		sum += l > 0 ? l : 0;
	}
	return sum;
}

/* Waits until the live replicas lead every environment; returns seconds waited. */
static double
wait_leaders(struct fleetd_proc *ps, int n, int envs, double timeout)
{
	double t0 = harness_now_s();

	while (total_leading(ps, n) != envs) {
		if (harness_now_s() - t0 > timeout)
			fail_msg("the replicas do not lead all %d environments after %.0f s", envs,
			    timeout);
		usleep(100 * 1000);
	}
	return harness_now_s() - t0;
}

/* Submits n jobs, SIGKILLs the leader after half of them, and checks the takeover. */
static void
phase(struct fleetd_proc *ps, int nps, int n, int envs)
{
	for (int i = 0; i < n; i++) {
		if (i == n / 2) {
			int victim = -1, best = 0;
			double took;

			for (int k = 0; k < nps; k++) {
				int l = leading(&ps[k]);

				if (l > best) {
					best = l;
					victim = k;
				}
			}
			assert_true(victim >= 0);
			kill_hard(&ps[victim]);
			took = wait_leaders(ps, nps, envs, 10);
			print_message("replicas: leader %d killed, leadership moved in %.2f s\n",
			    victim, took);
			assert_true(took < 5.0);
		}
		submit_ha();
	}
}

static void
test_replicas(void **state)
{
	struct fleetd_proc ps[4];
	int envs = (int)harness_sql_long("SELECT count(*) FROM environments");
	double t0;

	(void)state;
	memset(ps, 0, sizeof(ps));
	/* two replicas: the first leads everything, the second waits */
	harness_fleetd_start(&ps[0], dburl, sched_env);
	wait_leaders(ps, 1, envs, 10);
	harness_fleetd_start(&ps[1], dburl, sched_env);
	assert_int_equal(leading(&ps[1]), 0);
	phase(ps, 2, 150, envs);
	/* three replicas: the survivor and two new ones */
	harness_fleetd_start(&ps[2], dburl, sched_env);
	harness_fleetd_start(&ps[3], dburl, sched_env);
	phase(ps, 4, 150, envs);
	t0 = harness_now_s();
	assert_int_equal(harness_wait_long(20, 300, "SELECT count(*) FROM jobs WHERE environment = 'ha'"
	    " AND state = 'admitted'"), 300);
	print_message("replicas: last admissions %.2f s after the last submit\n",
	    harness_now_s() - t0);
	usleep(1500 * 1000);
	/* nothing lost, nothing repeated */
	assert_int_equal(harness_sql_long("SELECT count(*) FROM jobs WHERE environment = 'ha'"),
	    300);
	assert_int_equal(harness_sql_long("SELECT count(*) FROM jobs WHERE environment = 'ha' AND"
	    " (state <> 'admitted' OR attempt <> 1)"), 0);
	assert_int_equal(harness_sql_long("SELECT count(*) FROM placements p JOIN jobs j ON j.id ="
	    " p.job_id WHERE j.environment = 'ha'"), 300);
	assert_int_equal(harness_sql_long("SELECT count(*) FROM (SELECT p.job_id FROM placements p JOIN"
	    " jobs j ON j.id = p.job_id WHERE j.environment = 'ha' AND p.attempt = 1"
	    " GROUP BY 1 HAVING count(*) = 1) x"), 300);
	assert_int_equal(harness_sql_long("SELECT count(*) FROM (SELECT e.job_id FROM job_events e JOIN"
	    " jobs j ON j.id = e.job_id WHERE j.environment = 'ha' AND e.to_state = 'admitted'"
	    " GROUP BY 1 HAVING count(*) = 1) x"), 300);
	assert_int_equal(harness_sql_long("SELECT count(*) FROM job_events e JOIN jobs j ON j.id ="
	    " e.job_id WHERE j.environment = 'ha' AND e.to_state = 'admitted'"), 300);
	/* never over a node's cpu (64 cores, 1 core per pod) */
	assert_int_equal(harness_sql_long("SELECT count(*) FROM (SELECT a->>'node' FROM jobs j,"
	    " jsonb_array_elements(j.placement->'allocs') a WHERE j.environment = 'ha'"
	    " GROUP BY 1 HAVING sum((a->>'pods')::int) > 64) x"), 0);
	for (int i = 0; i < 4; i++)
		if (ps[i].pid > 0)
			assert_int_equal(harness_fleetd_stop(&ps[i]), 0);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_replicas),
	};

	return cmocka_run_group_tests(tests, setup, harness_group_teardown);
}
