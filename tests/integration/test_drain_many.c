/* test_drain_many: a region drain of 300 clusters finds the jobs of every one of them (the
 * cluster ids went through an 8 KiB buffer that dropped those past about 220: cordoned,
 * their jobs never moved). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/harness/harness.h"

#define NCLUSTERS	300

static struct fleetd_proc fd;
static char dburl[512];
static char *admin, *oper;

/* 300 clusters in big/us-west-2 (one cloud, by SQL), one running job on each. */
static int
setup(void **state)
{
	static const char *const env[] = { "FLEETD_WORKERS=none", "FLEETD_LOG_LEVEL=warn", NULL };
	char *seed;

	(void)state;
	harness_db_create("drain_many", dburl, sizeof(dburl));
	harness_fleetd_start(&fd, dburl, env);
	admin = harness_keep(harness_token(dburl, "admin", "*"));
	oper = harness_keep(harness_token(dburl, "operator", "big"));
	harness_post_created(admin, "/v1/environments", "{\"name\":\"big\"}");
	harness_pclass(admin, "low", 10, false);
	harness_seed_cluster("big", "hyperpod", "us-east-1", "active", "elsewhere",
	    "nvidia-h100-80gb", 2, 8, 2, false);	/* where the seed job could go */
	harness_queue(admin, "big", "qq", "low", "nvidia-h100-80gb", 64);
	seed = harness_submit(oper, "big", "qq", "RayJob", "seed", "low", "nvidia-h100-80gb", 1, -1);
	harness_sql("WITH c AS (INSERT INTO clouds (id, name, environment, provider, region,"
	    " account, external_id, state, required) VALUES (gen_random_uuid(), 'big-cloud', 'big',"
	    " 'hyperpod', 'us-west-2', '{}', 'ext', 'active', '{}') RETURNING id)"
	    " INSERT INTO clusters (id, cloud_id, name, api_server, ca_cert, credentials_sealed,"
	    " provider_cluster_id) SELECT gen_random_uuid(), c.id, 'big-' || i,"
	    " 'https://127.0.0.1:1', 'ca', 'sealed', 'pc-' || i FROM c,"
	    " generate_series(1, %d) i", NCLUSTERS);
	harness_sql("UPDATE clusters SET cordoned = true WHERE name = 'elsewhere'");	/* no job lands */
	harness_sql("INSERT INTO jobs (id, name, environment, queue_id, kind, priority_class,"
	    " priority, spec, state, attempt, cluster_id, placement)"
	    " SELECT gen_random_uuid(), 'on-' || k.name, 'big', s.queue_id, 'RayJob', 'low', 10,"
	    " s.spec, 'running', 1, k.id, jsonb_build_object('cluster', k.id, 'cluster_name',"
	    " k.name, 'region', 'us-west-2', 'provider', 'hyperpod', 'allocs', '[]'::jsonb)"
	    " FROM clusters k, (SELECT queue_id, spec FROM jobs WHERE id = '%s') s"
	    " WHERE k.name LIKE 'big-%%'", seed);
	harness_sql("DELETE FROM jobs WHERE id = '%s'", seed);
	free(seed);
	return 0;
}

static void
test_region_drain_300(void **state)
{
	(void)state;
	harness_http_timeout_s = 120;	/* 300 moves planned in one request, under ASan */
	if (harness_call("POST", oper, NULL, "/v1/regions/big/us-west-2/drain") != 202)
		fail_msg("drain: %ld %s", harness_r.status, harness_r.body);
	harness_http_timeout_s = 30;
	print_message("region drain of %d clusters: total %ld\n", NCLUSTERS,
	    (long)harness_ji(harness_r.json, "total"));
	assert_int_equal(harness_ji(harness_r.json, "total"), NCLUSTERS);
	assert_int_equal(harness_sql_long("SELECT count(*) FROM clusters WHERE cordoned"
	    " AND name LIKE 'big-%%'"), NCLUSTERS);
	assert_int_equal(harness_sql_long("SELECT count(DISTINCT job_id) FROM operation_jobs"),
	    NCLUSTERS);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_region_drain_300),
	};

	return cmocka_run_group_tests(tests, setup, harness_group_teardown);
}
