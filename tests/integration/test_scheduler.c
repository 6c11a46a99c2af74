/* test_scheduler: the scheduler against a real Postgres — fair share and floors, preemption,
 * explain, bad job input, submit-time refusal (the replicas: test_scheduler_replicas.c). */
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
#include <time.h>
#include <unistd.h>

#include <libpq-fe.h>

#include "tests/harness/harness.h"

#define H100	"nvidia-h100-80gb"
#define A100	"nvidia-a100-80gb"

static const char *const api_env[] = { "FLEETD_WORKERS=none",
	"FLEETD_SNAPSHOT_MAX_AGE=100000", NULL };
static const char *const sched_env[] = { "FLEETD_WORKERS=scheduler",
	"FLEETD_SNAPSHOT_MAX_AGE=100000", "FLEETD_LOG_LEVEL=info", NULL };

static struct fleetd_proc api;		/* HTTP only: submissions never race a scheduler */
static struct fleetd_proc sched;	/* one scheduler replica for the functional tests */
static char dburl[512];
static char *admin, *scoped;

/* ---- helpers */

/* Submits over the API through p; returns the job id (malloc'd). */
static char *
submit_via(const struct fleetd_proc *p, const char *env, const char *queue, const char *flavor,
	   int count, const char *patch)
{
	char *body = harness_job_body(env, queue, flavor, count, patch), *id;
	struct http_result r;

	harness_http(&r, "POST", harness_url(p, "/v1/jobs"), admin, body, NULL);
	if (r.status != 201)
		fail_msg("submit %s: %ld %s", body, r.status, r.body);
	id = strdup(json_string_value(json_object_get(r.json, "id")));
	assert_string_equal(json_string_value(json_object_get(r.json, "state")), "pending");
	harness_http_free(&r);
	free(body);
	return id;
}

static char *
submit(const char *env, const char *queue, const char *flavor, int count, const char *patch)
{
	return submit_via(&api, env, queue, flavor, count, patch);
}

/* ---- setup: environments, clusters, priority classes, queues */

static int
setup(void **state)
{
	(void)state;
	harness_db_create("sched", dburl, sizeof(dburl));
	harness_fleetd_start(&api, dburl, api_env);
	admin = harness_token(dburl, "admin", "*");
	scoped = harness_token(dburl, "operator", "bad");
	for (size_t i = 0; i < 6; i++) {
		static const char *const envs[] = { "fair", "floor", "pre", "bad", "ha", "big" };
		char body[64];

		snprintf(body, sizeof(body), "{\"name\":\"%s\"}", envs[i]);
		harness_post_created(admin, "/v1/environments", body);
	}
	harness_seed_cluster("fair", "gke", "us-central1", "active", "fair-1", H100, 4, 8, 2, false);
	harness_seed_cluster("floor", "aks", "eastus", "active", "floor-1", A100, 1, 8, 1, false);
	harness_seed_cluster("floor", "aks", "westus", "active", "floor-cordoned", A100, 1, 8, 1, true);
	harness_seed_cluster("floor", "gke", "europe-west4", "pending_iam", "floor-noiam", A100, 1, 8, 1,
	    false);
	harness_seed_cluster("pre", "hyperpod", "us-east-1", "active", "pre-1", H100, 1, 8, 1, false);
	harness_seed_cluster("bad", "gke", "us-east1", "active", "bad-1", H100, 6, 8, 1, false);
	harness_seed_cluster("ha", "gke", "us-west1", "active", "ha-1", H100, 0, 0, 6, false);
	harness_seed_cluster("ha", "aks", "westeurope", "active", "ha-2", H100, 0, 0, 6, false);
	harness_seed_cluster("big", "gke", "asia-east1", "active", "big-1", H100, 0, 0, 16, false);
	harness_seed_cluster("big", "aks", "japaneast", "active", "big-2", H100, 0, 0, 16, false);
	harness_pclass(admin, "low", 10, false);
	harness_pclass(admin, "high", 1000, true);
	/* fair: A (weight 2) and B (weight 1) borrow everything from a lender with 24 */
	harness_post_created(admin, "/v1/queues", "{\"name\":\"qa\",\"environment\":\"fair\","
	    "\"cohort\":\"research\",\"weight\":2,\"nominal_quota\":{\"" H100 "\":0}}");
	harness_post_created(admin, "/v1/queues", "{\"name\":\"qb\",\"environment\":\"fair\","
	    "\"cohort\":\"research\",\"weight\":1,\"nominal_quota\":{\"" H100 "\":0}}");
	harness_post_created(admin, "/v1/queues", "{\"name\":\"lender\",\"environment\":"
	    "\"fair\",\"cohort\":\"research\",\"nominal_quota\":{\"" H100 "\":24}}");
	/* floor: C has a floor of 6; D weighs 10 but owns nothing; 8 accelerators exist */
	harness_post_created(admin, "/v1/queues", "{\"name\":\"qc\",\"environment\":\"floor\","
	    "\"cohort\":\"lab\",\"nominal_quota\":{\"" A100 "\":6}}");
	harness_post_created(admin, "/v1/queues", "{\"name\":\"qd\",\"environment\":\"floor\","
	    "\"cohort\":\"lab\",\"weight\":10,\"nominal_quota\":{\"" A100 "\":0}}");
	harness_post_created(admin, "/v1/queues", "{\"name\":\"lender\",\"environment\":"
	    "\"floor\",\"cohort\":\"lab\",\"nominal_quota\":{\"" A100 "\":10}}");
	harness_queue(admin, "pre", "qp", "low", H100, 8);
	harness_queue(admin, "bad", "qx", NULL, NULL, 0);
	harness_queue(admin, "ha", "qh", NULL, NULL, 0);
	harness_queue(admin, "big", "qbig", NULL, NULL, 0);
	return 0;
}

static int
teardown(void **state)
{
	(void)state;
	if (sched.pid > 0)
		harness_fleetd_stop(&sched);
	if (api.pid > 0)
		assert_int_equal(harness_fleetd_stop(&api), 0);
	harness_done();
	if (dburl[0] != '\0')
		harness_db_drop(dburl);
	free(admin);
	free(scoped);
	return 0;
}

/* ---- bad input and submit-time refusal */

struct bad_job {
	const char	*what;
	const char	*env;
	const char	*token;		/* "scoped" or admin */
	const char	*patch;
	long		 status;
	const char	*code;
	const char	*pointer;
	const char	*msg_has;	/* substring of detail/title, or NULL */
};

static const struct bad_job bad_jobs[] = {
	{ "unknown queue", "bad", NULL, "{\"queue\":\"nosuch\"}", 404, "queue.not_found",
	  "/queue", "nosuch" },
	{ "unknown priority class", "bad", NULL, "{\"priority_class\":\"urgent\"}", 404,
	  "pc.not_found", "/priority_class", "urgent" },
	{ "worker count 0", "bad", NULL, "{\"worker_groups\":[{\"name\":\"w\",\"replicas\":0,"
	  "\"cpu\":\"1\",\"memory\":\"1Gi\"}]}", 400, "jobspec.invalid_value",
	  "/worker_groups/0/replicas", NULL },
	{ "min > max", "bad", NULL, "{\"worker_groups\":[{\"name\":\"w\",\"min_replicas\":4,"
	  "\"max_replicas\":2,\"cpu\":\"1\",\"memory\":\"1Gi\"}]}", 400, "jobspec.invalid_value",
	  "/worker_groups/0/min_replicas", NULL },
	{ "cpu 4x", "bad", NULL, "{\"head\":{\"cpu\":\"4x\"}}", 400, "jobspec.invalid_quantity",
	  "/head/cpu", NULL },
	{ "negative memory", "bad", NULL, "{\"worker_groups\":[{\"name\":\"w\",\"replicas\":1,"
	  "\"cpu\":\"1\",\"memory\":\"-5Mi\"}]}", 400, "jobspec.invalid_quantity",
	  "/worker_groups/0/memory", NULL },
	{ "schedule not cron", "bad", NULL,
	    "{\"kind\":\"RayCronJob\",\"schedule\":\"every hour\"}",
	  400, "jobspec.invalid_schedule", "/schedule", NULL },
	{ "RayJob without entrypoint", "bad", NULL, "{\"entrypoint\":null}", 400,
	  "api.missing_field", "/entrypoint", NULL },
	{ "environment not visible", "fair", "scoped", "{\"queue\":\"qa\"}", 404, "env.not_found",
	  "/environment", NULL },
	{ "flavor absent from the environment", "bad", NULL, "{\"worker_groups\":[{\"name\":\"w\","
	  "\"replicas\":1,\"cpu\":\"1\",\"memory\":\"1Gi\",\"accelerator\":{\"flavor\":\"tpu-v5p\","
	  "\"count\":4}}]}", 422, "queue.unplaceable", "/worker_groups/0/accelerator/flavor",
	  "tpu-v5p" },
	{ "gang larger than any cluster", "bad", NULL, "{\"worker_groups\":[{\"name\":\"w\","
	  "\"replicas\":7,\"cpu\":\"1\",\"memory\":\"1Gi\",\"accelerator\":{\"flavor\":\"" H100 "\","
	  "\"count\":8}}]}", 422, "queue.unplaceable", "/worker_groups/0/accelerator/flavor",
	  "largest cluster" },
	{ "rack gang larger than any rack", "bad", NULL,
	    "{\"topology\":\"rack\",\"worker_groups\":"
	  "[{\"name\":\"w\",\"replicas\":5,\"cpu\":\"1\",\"memory\":\"1Gi\",\"accelerator\":"
	  "{\"flavor\":\"" H100 "\",\"count\":8}}]}", 422, "queue.unplaceable", "/topology",
	  "largest rack" },
};

static void
test_bad_input(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(bad_jobs) / sizeof(bad_jobs[0]); i++) {
		const struct bad_job *c = &bad_jobs[i];
		char *body = harness_job_body(c->env, "qx", NULL, 0, c->patch);
		struct http_result r;

		print_message("bad job: %s\n", c->what);
		harness_http(&r, "POST", harness_url(&api, "/v1/jobs"), c->token ? scoped : admin, body,
		    NULL);
		harness_expect_problem(&r, c->status, c->code, c->pointer);
		if (c->msg_has != NULL) {
			const char *d = json_string_value(json_object_get(r.json, "detail"));
			const char *t = json_string_value(json_object_get(r.json, "title"));

			if (!(d && strstr(d, c->msg_has)) && !(t && strstr(t, c->msg_has)))
				fail_msg("%s: %s does not name %s", c->what, r.body, c->msg_has);
		}
		harness_http_free(&r);
		free(body);
	}
	assert_int_equal(harness_sql_long("SELECT count(*) FROM jobs"), 0);
}

static void
test_idempotency(void **state)
{
	const char *key[] = { "Idempotency-Key: sched-key-1", NULL };
	char *b1 = harness_job_body("bad", "qx", NULL, 0, NULL);
	char *b2 = harness_job_body("bad", "qx", NULL, 0, "{\"name\":\"other\"}");
	struct http_result r1, r2, r3;

	(void)state;
	harness_http(&r1, "POST", harness_url(&api, "/v1/jobs"), admin, b1, key);
	assert_int_equal(r1.status, 201);
	harness_http(&r2, "POST", harness_url(&api, "/v1/jobs"), admin, b1, key);
	assert_int_equal(r2.status, 201);
	assert_string_equal(json_string_value(json_object_get(r1.json, "id")),
	    json_string_value(json_object_get(r2.json, "id")));
	harness_http(&r3, "POST", harness_url(&api, "/v1/jobs"), admin, b2, key);
	harness_expect_problem(&r3, 422, "api.idempotency_key_reused", NULL);
	assert_int_equal(harness_sql_long("SELECT count(*) FROM jobs WHERE environment = 'bad'"),
	    1);
	harness_http_free(&r1);
	harness_http_free(&r2);
	harness_http_free(&r3);
	free(b1);
	free(b2);
}

/* ---- fair share and floors: everything pending before the scheduler starts */

static long
admitted_in(const char *env, const char *queue)
{
	return harness_sql_long("SELECT count(*) FROM jobs j JOIN queues q ON q.id = j.queue_id"
	    " WHERE j.environment = '%s' AND q.name = '%s' AND j.state = 'admitted'", env, queue);
}

static void
test_fair_share_and_floors(void **state)
{
	(void)state;
	for (int i = 0; i < 40; i++) {
		free(submit("fair", i % 2 ? "qa" : "qb", H100, 1, NULL));
		if (i < 16)
			free(submit("floor", i % 2 ? "qc" : "qd", A100, 1, NULL));
	}
	harness_fleetd_start(&sched, dburl, sched_env);
	/* the first cycle has committed once every pending job carries its reason */
	assert_int_equal(harness_wait_long(30, 0, "SELECT count(*) FROM jobs WHERE environment IN"
	    " ('fair', 'floor') AND state = 'pending' AND reason IS NULL"), 0);
	usleep(1500 * 1000);	/* a later cycle must not change the outcome */
	/* 24 borrowed accelerators split 2:1 by weight */
	assert_int_equal(admitted_in("fair", "qa"), 16);
	assert_int_equal(admitted_in("fair", "qb"), 8);
	/* qc's floor of 6 comes before qd's heavier weight; qd borrows what is left (2) */
	assert_int_equal(admitted_in("floor", "qc"), 6);
	assert_int_equal(admitted_in("floor", "qd"), 2);
	if (harness_sql_long("SELECT count(*) FROM jobs WHERE environment = 'fair' AND state = 'pending'"
	    " AND reason = 'over_quota'") != 16 ||
	    harness_sql_long("SELECT count(*) FROM jobs WHERE"
	    " environment = 'floor' AND state = 'pending' AND reason = 'insufficient_capacity'") != 8)
		fail_msg("pending reasons: %s",
		    harness_sql_rows("SELECT environment, reason, count(*) FROM"
		    " jobs WHERE state = 'pending' GROUP BY 1, 2 ORDER BY 1, 2"));
	/* never over capacity: accelerators per node */
	assert_int_equal(harness_sql_long("SELECT count(*) FROM (SELECT a->>'node', sum((a->>'pods')::int)"
	    " FROM jobs j, jsonb_array_elements(j.placement->'allocs') a WHERE j.state = 'admitted'"
	    " AND (a->>'group')::int = 1 GROUP BY 1 HAVING sum((a->>'pods')::int) > 8) x"), 0);
	/* each admission: one placements row and one admitted event */
	assert_int_equal(harness_sql_long("SELECT count(*) FROM jobs j WHERE j.state = 'admitted' AND"
	    " (SELECT count(*) FROM placements p WHERE p.job_id = j.id) <> 1"), 0);
}

/* ---- explain */

static void
test_explain_pending(void **state)
{
	PGresult *r;
	int seen = 0;

	(void)state;
	r = harness_sql_result("SELECT j.id FROM jobs j JOIN queues q ON q.id = j.queue_id WHERE"
	    " q.name = 'qd' AND j.state = 'pending'");
	assert_int_equal(PQntuples(r), 6);
	for (int i = 0; i < PQntuples(r); i++) {
		char path[128];
		struct http_result h;
		json_t *c;
		size_t k;
		int pos, found = 0;

		snprintf(path, sizeof(path), "/v1/jobs/%s/placement", PQgetvalue(r, i, 0));
		harness_http(&h, "GET", harness_url(&api, "%s", path), admin, NULL, NULL);
		if (h.status != 200)
			fail_msg("placement: %ld %s", h.status, h.body);
		assert_string_equal(json_string_value(json_object_get(h.json, "state")),
		    "pending");
		pos = (int)json_integer_value(json_object_get(h.json, "position"));
		assert_true(pos >= 1 && pos <= 6);
		assert_true((seen & (1 << pos)) == 0);
		seen |= 1 << pos;
		assert_int_equal(json_array_size(json_object_get(h.json, "clusters")), 3);
		json_array_foreach(json_object_get(h.json, "clusters"), k, c) {
			const char *reason = json_string_value(json_object_get(c, "reason"));
			const char *region = json_string_value(json_object_get(c, "region"));

			assert_non_null(reason);
			if (strcmp(region, "eastus") == 0)
				found += strcmp(reason, "insufficient_capacity") == 0;
			else if (strcmp(region, "westus") == 0)
				found += strcmp(reason, "cordoned") == 0;
			else if (strcmp(region, "europe-west4") == 0)
				found += strcmp(reason, "unreachable") == 0;
		}
		if (found != 3)
			fail_msg("per-cluster reasons: %s", h.body);
		harness_http_free(&h);
	}
	assert_int_equal(seen, 0x7e);	/* positions 1..6, each once */
	PQclear(r);
}

static void
test_explain_admitted(void **state)
{
	PGresult *r;
	char path[128];
	struct http_result h;
	json_t *dec, *cands, *first;

	(void)state;
	r = harness_sql_result("SELECT j.id, j.cluster_id FROM jobs j JOIN queues q ON q.id = j.queue_id"
	    " WHERE q.name = 'qa' AND j.state = 'admitted' LIMIT 1");
	assert_int_equal(PQntuples(r), 1);
	snprintf(path, sizeof(path), "/v1/jobs/%s/placement", PQgetvalue(r, 0, 0));
	harness_http(&h, "GET", harness_url(&api, "%s", path), admin, NULL, NULL);
	if (h.status != 200)
		fail_msg("placement: %ld %s", h.status, h.body);
	assert_string_equal(json_string_value(json_object_get(h.json, "state")), "admitted");
	assert_int_equal(json_integer_value(json_object_get(h.json, "attempt")), 1);
	dec = json_object_get(h.json, "decision");
	assert_string_equal(json_string_value(json_object_get(dec, "outcome")), "admitted");
	assert_string_equal(json_string_value(json_object_get(dec, "cluster")), PQgetvalue(r, 0,
	    1));
	assert_true(json_is_true(json_object_get(dec, "borrowing")));
	assert_true(json_array_size(json_object_get(dec, "allocations")) >= 2);
	cands = json_object_get(h.json, "candidates");
	assert_true(json_array_size(cands) >= 1);
	first = json_array_get(cands, 0);
	assert_string_equal(json_string_value(json_object_get(first, "cluster")), PQgetvalue(r, 0,
	    1));
	assert_string_equal(json_string_value(json_object_get(first, "reason")), "chosen");
	harness_http_free(&h);
	PQclear(r);
}

/* ---- one large cycle: 1,200 jobs at once, committed on two connections */

static void
test_large_cycle(void **state)
{
	(void)state;
	/* 2 clusters x 16 nodes x 64 cores hold exactly 1,024 jobs of 1 + 1 cores */
	harness_sql("INSERT INTO jobs (id, name, environment, queue_id, kind, priority_class, priority,"
	    " spec, enqueued_at) SELECT gen_random_uuid(), 'job-' || i, 'big', q.id, 'RayJob',"
	    " 'default', i %% 2, jsonb_build_object('kind', 'RayJob', 'queue', 'qbig', 'name',"
	    " 'job-' || i, 'ray_version', '2.52.0', 'entrypoint', 'python x.py', 'head',"
	    " jsonb_build_object('cpu', '1', 'memory', '1Gi'), 'worker_groups', jsonb_build_array("
	    " jsonb_build_object('name', 'w', 'replicas', 1, 'cpu', '1', 'memory', '1Gi'))),"
	    " now() - make_interval(secs => 2000 - i) FROM generate_series(0, 1199) i, queues q"
	    " WHERE q.name = 'qbig'; SELECT pg_notify('fleet_sched', 'big')");
	assert_int_equal(harness_wait_long(30, 0, "SELECT count(*) FROM jobs WHERE environment = 'big'"
	    " AND state = 'pending' AND reason IS NULL"), 0);
	assert_int_equal(harness_sql_long("SELECT count(*) FROM jobs WHERE environment = 'big' AND"
	    " state = 'admitted' AND attempt = 1"), 1024);
	assert_int_equal(harness_sql_long("SELECT count(*) FROM jobs WHERE environment = 'big' AND"
	    " state = 'pending' AND reason = 'insufficient_capacity'"), 176);
	/* the higher priority (1) goes first: all 600 of them are in */
	assert_int_equal(harness_sql_long("SELECT count(*) FROM jobs WHERE environment = 'big' AND"
	    " state = 'admitted' AND priority = 1"), 600);
	assert_int_equal(harness_sql_long("SELECT count(*) FROM placements p JOIN jobs j ON j.id ="
	    " p.job_id WHERE j.environment = 'big'"), 1024);
	assert_int_equal(harness_sql_long("SELECT count(DISTINCT e.job_id) FROM job_events e JOIN jobs j"
	    " ON j.id = e.job_id WHERE j.environment = 'big' AND e.to_state = 'admitted'"), 1024);
	assert_int_equal(harness_sql_long("SELECT count(*) FROM job_events e JOIN jobs j ON j.id ="
	    " e.job_id WHERE j.environment = 'big' AND e.to_state = 'admitted'"), 1024);
	assert_int_equal(harness_sql_long("SELECT count(*) FROM (SELECT a->>'node' FROM jobs j,"
	    " jsonb_array_elements(j.placement->'allocs') a WHERE j.environment = 'big'"
	    " GROUP BY 1 HAVING sum((a->>'pods')::int) > 64) x"), 0);
}

/* ---- preemption within a queue */

static void
test_preemption(void **state)
{
	const char *ck = "{\"checkpoint\":{\"uri\":\"s3://bucket/ckpt\",\"grace_seconds\":60}}";
	char *low[4], *high, q[512], path[128];
	struct http_result h;
	json_t *victims;
	PGresult *r;

	(void)state;
	/* two older admissions, then (a second later) two newer ones */
	for (int i = 0; i < 4; i++) {
		low[i] = submit("pre", "qp", H100, 2, ck);
		if (i == 1) {
			assert_int_equal(harness_wait_long(10, 2, "SELECT count(*) FROM jobs WHERE"
			    " environment = 'pre' AND state = 'admitted'"), 2);
			usleep(1100 * 1000);
		}
	}
	assert_int_equal(harness_wait_long(10, 4, "SELECT count(*) FROM jobs WHERE environment = 'pre'"
	    " AND state = 'admitted'"), 4);
	high = submit("pre", "qp", H100, 4, "{\"priority_class\":\"high\"}");
	snprintf(q, sizeof(q), "SELECT count(*) FROM jobs WHERE id = '%s' AND state = 'admitted'",
	    high);
	assert_int_equal(harness_wait_long(10, 1, q), 1);
	/* the smallest set: the two most recently admitted 2-accelerator jobs */
	assert_int_equal(harness_sql_long("SELECT count(*) FROM jobs WHERE environment = 'pre' AND"
	    " state = 'preempted' AND priority_class = 'low' AND reason = 'preempted by %s'"
	    " AND id IN ('%s', '%s')", high, low[2], low[3]), 2);
	assert_int_equal(harness_sql_long("SELECT count(*) FROM jobs WHERE environment = 'pre' AND"
	    " state = 'admitted' AND priority_class = 'low'"), 2);
	/* the victims carry their checkpoint grace and an event from the state they left */
	assert_int_equal(harness_sql_long("SELECT count(*) FROM jobs WHERE state = 'preempted' AND"
	    " checkpoint_deadline BETWEEN now() + interval '50 s' AND now() + interval '61 s'"),
	    2);
	assert_int_equal(harness_sql_long("SELECT count(*) FROM job_events e JOIN jobs j ON j.id = e.job_id"
	    " WHERE j.state = 'preempted' AND e.to_state = 'preempted' AND e.from_state = 'admitted'"
	    " AND e.data->>'by' = '%s'", high), 2);
	/* the preemptor's decision names them */
	snprintf(path, sizeof(path), "/v1/jobs/%s/placement", high);
	harness_http(&h, "GET", harness_url(&api, "%s", path), admin, NULL, NULL);
	assert_int_equal(h.status, 200);
	victims = json_object_get(json_object_get(h.json, "decision"), "victims");
	assert_int_equal(json_array_size(victims), 2);
	r = harness_sql_result("SELECT id FROM jobs WHERE state = 'preempted'");
	for (int i = 0; i < PQntuples(r); i++) {
		const char *v = PQgetvalue(r, i, 0);

		assert_true(strcmp(v, json_string_value(json_array_get(victims, 0))) == 0 ||
		    strcmp(v, json_string_value(json_array_get(victims, 1))) == 0);
	}
	PQclear(r);
	harness_http_free(&h);
	for (int i = 0; i < 4; i++)
		free(low[i]);
	free(high);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_bad_input),
		cmocka_unit_test(test_idempotency),
		cmocka_unit_test(test_fair_share_and_floors),
		cmocka_unit_test(test_explain_pending),
		cmocka_unit_test(test_explain_admitted),
		cmocka_unit_test(test_large_cycle),
		cmocka_unit_test(test_preemption),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
