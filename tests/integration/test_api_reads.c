/* test_api_reads: GET /v1/jobs/{id} and GET /v1/jobs, written as text from the columns and
 * kept in memory between lists (issue 17), answer exactly what JOB_JSON builds in SQL —
 * every member, timestamp form and escaped string — page through every job once, filter,
 * scope by token, and never show a job, queue, cluster or cloud as it was before a change;
 * the submit-time checks kept in memory follow capacity changes (NOTIFY fleet_capacity). */
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

#include "queue/jobs/job.h"
#include "tests/integration/harness.h"

static const char *const env_api[] = { "FLEETD_WORKERS=none", NULL };

static struct fleetd_proc api;
static char dburl[512];
static char *admin, *viewer_b;

#define NJOBS 45

/* What JOB_JSON says of the job, parsed. */
static json_t *
reference(const char *id)
{
	static const char q[] = "SELECT " JOB_JSON JOB_FROM " WHERE j.id = $1::uuid";
	char *text = harness_sql_params(q, 1, &id);
	json_t *j;

	assert_non_null(text);
	j = json_loads(text, 0, NULL);
	assert_non_null(j);
	free(text);
	return j;
}

static void
same_as_reference(json_t *got)
{
	const char *id = json_string_value(json_object_get(got, "id"));
	json_t *want;

	assert_non_null(id);
	want = reference(id);
	got = json_deep_copy(got);
	{	/* a checkpoint's age is read at each answer: one second apart at most */
		json_t *wc = json_object_get(want, "checkpoint"), *gc = json_object_get(got,
		    "checkpoint");

		if (json_is_object(wc) && json_is_object(gc)) {
			json_int_t d = json_integer_value(json_object_get(wc, "age_seconds")) -
			    json_integer_value(json_object_get(gc, "age_seconds"));

			assert_true(d >= -1 && d <= 1);
			json_object_del(wc, "age_seconds");
			json_object_del(gc, "age_seconds");
		}
	}
	if (!json_equal(want, got)) {
		char *a = json_dumps(want, JSON_SORT_KEYS), *b = json_dumps(got, JSON_SORT_KEYS);

		fail_msg("job %s\nwant %s\ngot  %s", id, a, b);
	}
	json_decref(want);
	json_decref(got);
}

/* Every page of path (a query without limit) with limit n; returns all items (new ref). */
static json_t *
all_pages(const char *token, const char *query, int n)
{
	json_t *all = json_array();
	char next[1024];

	snprintf(next, sizeof(next), "/v1/jobs?limit=%d%s%s", n, *query ? "&" : "", query);
	for (int guard = 0; guard < 100; guard++) {
		struct http_result r;
		json_t *items, *nx;
		size_t i;
		json_t *it;

		harness_http(&r, "GET", harness_url(&api, "%s", next), token, NULL, NULL);
		if (r.status != 200)
			fail_msg("GET %s: %ld %s", next, r.status, r.body);
		items = json_object_get(r.json, "items");
		assert_true(json_array_size(items) <= (size_t)n);
		json_array_foreach(items, i, it)
			json_array_append(all, it);
		nx = json_object_get(r.json, "next");
		if (!json_is_string(nx)) {
			harness_http_free(&r);
			return all;
		}
		/* the cursor keeps the filters out: put them back */
		snprintf(next, sizeof(next), "%s%s%s", json_string_value(nx), *query ? "&" : "", query);
		harness_http_free(&r);
	}
	fail_msg("more than 100 pages");
	return NULL;
}

static int
setup(void **state)
{
	(void)state;
	harness_db_create("apireads", dburl, sizeof(dburl));
	harness_fleetd_start(&api, dburl, env_api);
	admin = harness_keep(harness_token(dburl, "admin", "*"));
	viewer_b = harness_keep(harness_token(dburl, "viewer", "rb"));
	harness_sql("INSERT INTO environments (id, name) VALUES (gen_random_uuid(), 'ra'),"
	    " (gen_random_uuid(), 'rb')");
	harness_sql(
	    "INSERT INTO clouds (id, name, environment, provider, region, account, external_id,"
	    " state, required) VALUES (gen_random_uuid(), 'ca', 'ra', 'gke', 'us-central1', '{}',"
	    " 'x', 'active', '{}')");
	harness_sql(
	    "INSERT INTO clusters (id, cloud_id, name, api_server, ca_cert, credentials_sealed,"
	    " provider_cluster_id) SELECT gen_random_uuid(), id, 'ka', 'https://127.0.0.1:1',"
	    " 'ca', 'sealed', 'pc-reads-ka' FROM clouds WHERE name = 'ca'");
	harness_sql(
	    "INSERT INTO queues (id, name, environment, cohort, weight, nominal_quota) VALUES"
	    " (gen_random_uuid(), 'qa', 'ra', 'c', 1, '{}'), (gen_random_uuid(), 'qb', 'rb', 'c', 1,"
	    " '{}')");
	harness_sql(
	    "INSERT INTO priority_classes (id, name, value) VALUES (gen_random_uuid(), 'default',"
	    " 0) ON CONFLICT DO NOTHING");
	/* Jobs in both environments; a third running on ka with a placement; one name with
	 * quotes, a backslash, control characters and non-ASCII text. */
	harness_sql(
	    "INSERT INTO jobs (id, name, environment, queue_id, kind, priority_class, priority,"
	    " spec, state, reason, attempt, cluster_id, placement, started_at, enqueued_at)"
	    " SELECT gen_random_uuid(), CASE WHEN i = 7 THEN E'we\"ird\\\\ \\n\\t\\x01 n\u00e4me'"
	    " ELSE 'job-' || i END, q.environment, q.id, 'RayJob', 'default', i %% 3,"
	    " jsonb_build_object('kind', 'RayJob', 'queue', q.name, 'name', 'job-' || i,"
	    " 'ray_version', '2.52.0', 'entrypoint', E'python -c \"print(\\t1.5)\"',"
	    " 'head', jsonb_build_object('cpu', '1', 'memory', '2Gi'), 'worker_groups',"
	    " jsonb_build_array(jsonb_build_object('name', 'w', 'replicas', 1, 'cpu', '8',"
	    " 'memory', '64Gi'))),"
	    " CASE WHEN i %% 3 = 0 THEN 'running' ELSE 'pending' END,"
	    " CASE WHEN i %% 5 = 0 THEN 'no_capacity' END, i %% 3,"
	    " CASE WHEN i %% 3 = 0 AND q.name = 'qa' THEN k.id END,"
	    " CASE WHEN i %% 3 = 0 THEN jsonb_build_object('cluster', k.id, 'region', 'us-central1',"
	    " 'provider', 'gke', 'pool', 'gpu', 'spot', false, 'price_hour', 9.6, 'accel', 8,"
	    " 'allocs', '[]'::jsonb) END,"
	    " CASE WHEN i %% 3 = 0 THEN now() - interval '1 hour' END,"
	    " timestamptz '2026-01-02 03:04:05' + i * interval '1.25 seconds'"
	    " FROM generate_series(1, 45) i"
	    " JOIN queues q ON q.name = CASE WHEN i %% 2 = 0 THEN 'qa' ELSE 'qb' END,"
	    " (SELECT id FROM clusters WHERE name = 'ka') k");
	return 0;
}

/* Every job's GET and every listed item is what JOB_JSON says; pages cover all jobs once. */
static void
test_same_as_sql(void **state)
{
	json_t *all, *it;
	size_t i;

	(void)state;
	all = all_pages(admin, "", 7);
	assert_int_equal(json_array_size(all), NJOBS);
	json_array_foreach(all, i, it) {
		struct http_result r;
		char *etag, want[32];

		same_as_reference(it);
		if (i > 0)
			assert_true(strcmp(json_string_value(json_object_get(json_array_get(all,
			    i - 1), "id")), json_string_value(json_object_get(it, "id"))) < 0);
		harness_http(&r, "GET", harness_url(&api, "/v1/jobs/%s", json_string_value(json_object_get(it,
		    "id"))), admin, NULL, NULL);
		assert_int_equal(r.status, 200);
		assert_true(json_equal(r.json, it));
		etag = harness_header(&r, "ETag");
		snprintf(want, sizeof(want), "\"%lld\"",
		    json_integer_value(json_object_get(it, "version")));
		assert_non_null(etag);
		assert_string_equal(etag, want);
		free(etag);
		harness_http_free(&r);
	}
	json_decref(all);
	/* a second round is served from memory: still the same */
	all = all_pages(admin, "", 500);
	assert_int_equal(json_array_size(all), NJOBS);
	json_array_foreach(all, i, it)
		same_as_reference(it);
	json_decref(all);
}

static void
test_filters_and_scope(void **state)
{
	json_t *all, *it;
	struct http_result r;
	size_t i;
	char *ra_job;

	(void)state;
	all = all_pages(admin, "state=running", 4);
	assert_int_equal(json_array_size(all),
	    harness_sql_long("SELECT count(*) FROM jobs WHERE state ="
	    " 'running'"));
	json_array_foreach(all, i, it)
		assert_string_equal(json_string_value(json_object_get(it, "state")), "running");
	json_decref(all);
	all = all_pages(admin, "queue=qa", 5);
	assert_int_equal(json_array_size(all),
	    harness_sql_long("SELECT count(*) FROM jobs j JOIN queues q"
	    " ON q.id = j.queue_id WHERE q.name = 'qa'"));
	json_decref(all);
	all = all_pages(admin, "region=us-central1&state=running", 3);
	assert_int_equal(json_array_size(all),
	    harness_sql_long("SELECT count(*) FROM jobs WHERE cluster_id"
	    " IS NOT NULL AND state = 'running'"));
	json_decref(all);
	/* a queue name of two environments: the jobs of both queues, in id order, each page
	 * read from each queue's own (queue_id, id) order (migrations/0027) */
	harness_sql("INSERT INTO queues (id, name, environment, cohort, weight, nominal_quota)"
	    " VALUES (gen_random_uuid(), 'qs', 'ra', 'c', 1, '{}'), (gen_random_uuid(), 'qs', 'rb',"
	    " 'c', 1, '{}')");
	harness_sql("CREATE TABLE moved AS SELECT id, queue_id FROM jobs WHERE name IN ('job-1',"
	    " 'job-2', 'job-3', 'job-4', 'job-5', 'job-8', 'job-9', 'job-10', 'job-11')");
	harness_sql("UPDATE jobs j SET queue_id = q.id FROM queues q WHERE q.name = 'qs'"
	    " AND q.environment = j.environment AND j.id IN (SELECT id FROM moved)");
	all = all_pages(admin, "queue=qs", 2);
	assert_int_equal(json_array_size(all), 9);
	json_array_foreach(all, i, it) {
		assert_string_equal(json_string_value(json_object_get(it, "queue")), "qs");
		if (i > 0)
			assert_true(strcmp(json_string_value(json_object_get(json_array_get(all,
			    i - 1), "id")), json_string_value(json_object_get(it, "id"))) < 0);
		same_as_reference(it);
	}
	json_decref(all);
	all = all_pages(viewer_b, "queue=qs", 2);
	assert_int_equal(json_array_size(all), harness_sql_long("SELECT count(*) FROM moved m"
	    " JOIN jobs j ON j.id = m.id WHERE j.environment = 'rb'"));
	json_decref(all);
	harness_sql("UPDATE jobs j SET queue_id = m.queue_id FROM moved m WHERE m.id = j.id");
	harness_sql("DROP TABLE moved");
	harness_sql("DELETE FROM queues WHERE name = 'qs'");
	/* a viewer of rb sees rb's jobs only; a job of ra is not found */
	all = all_pages(viewer_b, "", 6);
	assert_int_equal(json_array_size(all),
	    harness_sql_long("SELECT count(*) FROM jobs WHERE"
	    " environment = 'rb'"));
	json_array_foreach(all, i, it)
		assert_string_equal(json_string_value(json_object_get(it, "environment")), "rb");
	json_decref(all);
	ra_job = harness_sql_str("SELECT id FROM jobs WHERE environment = 'ra' LIMIT 1");
	harness_http(&r, "GET", harness_url(&api, "/v1/jobs/%s", ra_job), viewer_b, NULL, NULL);
	assert_int_equal(r.status, 404);
	harness_http_free(&r);
	harness_http(&r, "GET", harness_url(&api, "/v1/jobs/%s", "not-a-uuid"), admin, NULL, NULL);
	assert_int_equal(r.status, 404);
	harness_http_free(&r);
	harness_http(&r, "GET", harness_url(&api, "/v1/jobs?after=%s", "bm90LWEtdXVpZA"), admin,
	    NULL, NULL);
	assert_int_equal(r.status, 400);
	harness_http_free(&r);
	free(ra_job);
}

/* A change to a job, its queue, its cluster or its cloud shows in the next list. */
static void
test_changes_show(void **state)
{
	static const char *const changes[] = {
		"UPDATE jobs SET state = 'cancelled', reason = 'changed', version = version + 1"
		" WHERE name = 'job-6'",
		"UPDATE jobs SET spec = jsonb_set(spec, '{entrypoint}', '\"python changed.py\"') WHERE name = 'job-12'",
		/* a checkpoint's age is computed at each read: such a job is never kept */
		"UPDATE jobs SET checkpoint = jsonb_build_object('uri', 's3://b/ck', 'at',"
		" now() - interval '5 seconds', 'requested_at', now() - interval '9 seconds',"
		" 'attempt', 1) WHERE name IN ('job-3', 'job-4', 'job-5')",
		"UPDATE queues SET name = 'qa-renamed' WHERE name = 'qa'",
		"UPDATE clusters SET name = 'ka-renamed' WHERE name = 'ka'",
		"UPDATE clouds SET region = 'europe-west4' WHERE name = 'ca'",
	};
	json_t *all, *it;
	size_t i;

	(void)state;
	all = all_pages(admin, "", 500);	/* everything in memory first */
	json_decref(all);
	for (size_t c = 0; c < sizeof(changes) / sizeof(changes[0]); c++) {
		harness_sql("%s", changes[c]);
		all = all_pages(admin, "", 500);
		assert_int_equal(json_array_size(all), NJOBS);
		json_array_foreach(all, i, it)
			same_as_reference(it);
		json_decref(all);
	}
	all = all_pages(admin, "queue=qa-renamed", 500);
	assert_true(json_array_size(all) > 0);
	json_array_foreach(all, i, it)
		assert_string_equal(json_string_value(json_object_get(it, "queue")), "qa-renamed");
	json_decref(all);
}

/* POSTs a job needing n L4 accelerators in ra until it answers want (the notification
 * that forgets kept checks arrives within milliseconds); fails after 5 s. */
static void
submit_until(int n, long want)
{
	char body[1024];
	static int seq;

	for (int i = 0; i < 100; i++) {
		struct http_result r;
		long got;

		snprintf(body, sizeof(body), "{\"environment\": \"ra\", \"kind\": \"RayJob\","
		    " \"queue\": \"qa-renamed\", \"name\": \"sub-%d\", \"ray_version\": \"2.52.0\","
		    " \"entrypoint\": \"python x.py\", \"head\": {\"cpu\": \"1\", \"memory\": \"1Gi\"},"
		    " \"worker_groups\": [{\"name\": \"w\", \"replicas\": 1, \"cpu\": \"1\","
		    " \"memory\": \"1Gi\", \"accelerator\": {\"flavor\": \"nvidia-l4\", \"count\": %d}}]}",
		    seq++, n);
		harness_http(&r, "POST", harness_url(&api, "/v1/jobs"), admin, body, NULL);
		got = r.status;
		if (got == 201) {
			/* the answer is JOB_JSON of the inserted row (one statement) and the
			 * audit row went with the COMMIT (db_exec_later) */
			const char *id = json_string_value(json_object_get(r.json, "id"));

			same_as_reference(r.json);
			assert_int_equal(harness_sql_long("SELECT count(*) FROM audit_log WHERE"
			    " action = 'job.submit' AND resource_id = '%s' AND after->>'id' = '%s'",
			    id, id), 1);
		}
		harness_http_free(&r);
		if (got == want)
			return;
		if (got != 201 && got != 422)
			fail_msg("submit: %ld", got);
		usleep(50 * 1000);
	}
	fail_msg("submit of %d L4 never answered %ld", n, want);
}

/* The largest gang per flavor is kept between submits and forgotten when capacity,
 * clusters or clouds change. */
static void
test_submit_checks_follow_capacity(void **state)
{
	(void)state;
	/* ka has never been observed: nothing is refused yet */
	submit_until(16, 201);
	harness_sql(
	    "INSERT INTO capacity (cluster_id, pool, flavor, machine_type, spot, price_hour,"
	    " accel_per_node, nodes, max_nodes, free_accel, free_cpu_m, free_mem, topology)"
	    " SELECT id, 'l4', 'nvidia-l4', 'g2-standard-96', false, 8, 8, 1, 1, 8, 90000,"
	    " 300000000000, '{\"nodes\": [{\"name\": \"n1\", \"rack\": \"r1\"}]}'"
	    " FROM clusters WHERE name = 'ka-renamed'");
	submit_until(16, 422);	/* 8 at most now */
	submit_until(8, 201);
	harness_sql("UPDATE capacity SET max_nodes = 2 WHERE pool = 'l4'");
	submit_until(16, 201);
	harness_sql(
	    "UPDATE capacity SET free_accel = 0 WHERE pool = 'l4'");	/* no notification */
	submit_until(16, 201);
	harness_sql("DELETE FROM capacity WHERE pool = 'l4'");
	submit_until(16, 201);	/* unobserved again */
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_same_as_sql),
		cmocka_unit_test(test_filters_and_scope),
		cmocka_unit_test(test_changes_show),
		cmocka_unit_test(test_submit_checks_follow_capacity),
	};

	return cmocka_run_group_tests(tests, setup, harness_group_teardown);
}
