/* test_leases: replicas share the member clusters by leases (regions/lease.c) — one
 * replica takes all 12 seeded clusters, three share them 4/4/4, a replica killed with
 * SIGKILL has its clusters taken over once its leases expire, one stopped cleanly hands
 * them back at once, no cluster is ever held by two replicas at one moment, and a replica
 * whose lease was taken over has its writes refused (the fence).  The replicas run the
 * capacity poller only: the seeded clusters cannot be reached, so every refresh writes a
 * failure about its cluster, through the fence. */
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

#define NCLUSTERS	12
#define TTL_S		3

static struct fleetd_proc rep[3];
static const char *const names[3] = { "lease-a", "lease-b", "lease-c" };
static char dburl[512];

static void
start_ttl(int i, int ttl)
{
	char iid[64], lease[40];
	const char *env[] = { "FLEETD_WORKERS=poller", lease, "FLEETD_POLL_INTERVAL_MS=300",
	    "FLEETD_MASTER_KEY=AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=", iid, NULL };

	snprintf(iid, sizeof(iid), "FLEETD_INSTANCE_ID=%s", names[i]);
	snprintf(lease, sizeof(lease), "FLEETD_LEASE_TTL=%d", ttl);
	harness_fleetd_start(&rep[i], dburl, env);
}

static void
start(int i)
{
	start_ttl(i, TTL_S);
}

/* Clusters whose lease holder is replica i now. */
static long
held(int i)
{
	return harness_sql_long("SELECT count(*) FROM cluster_leases WHERE holder = '%s'"
	    " AND expires_at > now()", names[i]);
}

/* fleetd_leases_held (or another metric) of replica i; -1 when it does not answer. */
static long
metric(int i, const char *name)
{
	struct http_result r;
	char key[96];
	const char *s;
	long n = -1;

	if (rep[i].pid <= 0)
		return -1;
	snprintf(key, sizeof(key), "\n%s ", name);
	harness_http(&r, "GET", harness_url(&rep[i], "/metrics"), harness_metrics_token(),
	    NULL, NULL);
	if (r.status == 200 && (s = strstr(r.body, key)) != NULL)
		n = atol(s + strlen(key));
	harness_http_free(&r);
	return n;
}

/* Waits until replica i holds want clusters (by the table); returns the seconds taken,
 * or -1 past timeout_s. */
static double
until_held(int i, long want, double timeout_s)
{
	double t0 = harness_now_s();

	while (harness_now_s() - t0 < timeout_s) {
		if (held(i) == want)
			return harness_now_s() - t0;
		usleep(100 * 1000);
	}
	return -1;
}

/* No moment at which two live replicas both count a cluster as theirs: the sum of what
 * each replica says it holds never exceeds the clusters (sampled for seconds). */
static void
never_two_holders(double seconds)
{
	double t0 = harness_now_s();

	while (harness_now_s() - t0 < seconds) {
		long sum = 0;

		for (int i = 0; i < 3; i++) {
			long n = metric(i, "fleetd_leases_held");

			assert_true(n >= 0 || rep[i].pid <= 0);	/* every live replica answers */
			sum += n > 0 ? n : 0;
		}
		assert_true(sum <= NCLUSTERS);
		usleep(100 * 1000);
	}
}

/* One cloud per environment, provider and region: twelve of them. */
static const char *const where[NCLUSTERS][2] = {
	{ "gke", "us-west1" }, { "gke", "us-central1" }, { "gke", "us-east1" },
	{ "gke", "europe-west4" }, { "aks", "eastus" }, { "aks", "westeurope" },
	{ "aks", "westus2" }, { "aks", "northeurope" }, { "hyperpod", "us-west-2" },
	{ "hyperpod", "us-east-1" }, { "hyperpod", "eu-west-1" }, { "hyperpod", "us-east-2" },
};

static int
setup(void **state)
{
	char name[32];

	(void)state;
	harness_db_create("leases", dburl, sizeof(dburl));
	start(0);
	harness_post_created(harness_keep(harness_token(dburl, "admin", "*")),
	    "/v1/environments", "{\"name\":\"ls\"}");
	for (int i = 0; i < NCLUSTERS; i++) {
		snprintf(name, sizeof(name), "ls-%02d", i);
		harness_seed_cluster("ls", where[i][0], where[i][1], "active", name,
		    "nvidia-h100-80gb", 1, 8, 1, false);
	}
	return 0;
}

static int
teardown(void **state)
{
	(void)state;
	for (int i = 0; i < 3; i++)
		if (rep[i].pid > 0)
			harness_fleetd_stop(&rep[i]);
	harness_db_drop(dburl);
	return 0;
}

static void
test_share_and_takeover(void **state)
{
	double t;
	int st;

	(void)state;
	/* alone: every cluster, taken as soon as it is registered */
	assert_true(until_held(0, NCLUSTERS, 10) >= 0);
	assert_int_equal(harness_sql_long("SELECT count(*) FROM replicas"), 1);

	/* three: a fair share each, within a few turns */
	start(1);
	start(2);
	for (int i = 0; i < 3; i++)
		assert_true(until_held(i, NCLUSTERS / 3, 15) >= 0);
	never_two_holders(3);
	assert_int_equal(harness_sql_long("SELECT count(*) FROM cluster_leases WHERE holder IS"
	    " NOT NULL AND expires_at > now()"), NCLUSTERS);

	/* b dies: a and c take its clusters once its leases expire (ttl 3 s) */
	kill(rep[1].pid, SIGKILL);
	waitpid(rep[1].pid, &st, 0);
	rep[1].pid = 0;
	t = until_held(0, NCLUSTERS / 2, 15);
	assert_true(t >= 0 && until_held(2, NCLUSTERS / 2, 5) >= 0);
	print_message("takeover after SIGKILL: %.1f s (lease ttl %d s)\n", t, TTL_S);
	assert_true(t <= TTL_S + 5);
	never_two_holders(2);

	/* c stops cleanly: it hands its clusters back at once, a takes them */
	assert_int_equal(harness_fleetd_stop(&rep[2]), 0);
	rep[2].pid = 0;
	t = until_held(0, NCLUSTERS, 10);
	print_message("takeover after a clean stop: %.1f s\n", t);
	assert_true(t >= 0 && t < TTL_S);
	assert_int_equal(harness_sql_long("SELECT count(*) FROM replicas WHERE instance_id ="
	    " 'lease-c'"), 0);
}

/* Another replica took a's clusters while a still counts them as its own (a paused
 * replica's view, good until its local deadline): a's writes about them are refused by
 * the fence; once that holder's leases run out a takes them back and writes land again.
 * a runs with a 10 s ttl here, so that its stale view lasts past a few refreshes. */
static void
test_fence_refuses_a_stale_holder(void **state)
{
	long before;

	(void)state;
	assert_int_equal(harness_fleetd_stop(&rep[0]), 0);
	start_ttl(0, 10);
	assert_true(until_held(0, NCLUSTERS, 15) >= 0);
	before = metric(0, "fleetd_lease_fence_refusals_total");
	assert_true(before >= 0);
	harness_sql("UPDATE cluster_leases SET holder = 'intruder', epoch = epoch + 1,"
	    " expires_at = now() + interval '1 minute' WHERE holder = 'lease-a'");
	for (int k = 0; k < 160 && metric(0, "fleetd_lease_fence_refusals_total") == before; k++)
		usleep(50 * 1000);
	assert_true(metric(0, "fleetd_lease_fence_refusals_total") > before);
	/* the intruder's leases run out: a takes them back (new epochs) and writes land */
	harness_sql("UPDATE cluster_leases SET expires_at = now() WHERE holder = 'intruder'");
	assert_true(until_held(0, NCLUSTERS, 15) >= 0);
	before = harness_sql_long("SELECT sum(failures) FROM clusters");
	assert_true(harness_wait_long(10, 1, "SELECT (sum(failures) > %ld)::int FROM clusters",
	    before) == 1);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_share_and_takeover),
		cmocka_unit_test(test_fence_refuses_a_stale_holder),
	};

	return cmocka_run_group_tests_name("leases", tests, setup, teardown);
}
