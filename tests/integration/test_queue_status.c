/* test_queue_status: GET /v1/queues/{id}/status reports what the scheduler's model counts —
 * usage against nominal quota per flavor, borrowed and lent, the weighted dominant share and
 * its rank in the cohort, pending jobs by the reason the scheduler recorded — and stays
 * inside the token's environments. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <libpq-fe.h>

#include "tests/harness/harness.h"

#define H100	"nvidia-h100-80gb"

static struct fleetd_proc fd;
static char dburl[512];
static char *root, *viewer, *other;
static char qa[64], qb[64], qd[64];

static void
make_queue(char *id, size_t n, const char *body)
{
	json_t *q = harness_post_created(root, "/v1/queues", body);

	snprintf(id, n, "%s", json_string_value(json_object_get(q, "id")));
}

static void
submit(const char *queue, int count)
{
	char *body = harness_job_body("qs", queue, H100, count, NULL);

	harness_post_created(root, "/v1/jobs", body);
	free(body);
}

static int
setup(void **state)
{
	const char *const env[] = { "FLEETD_WORKERS=scheduler", "FLEETD_SNAPSHOT_MAX_AGE=100000",
		NULL };

	(void)state;
	harness_db_create("qstatus", dburl, sizeof(dburl));
	harness_fleetd_start(&fd, dburl, env);
	root = harness_keep(harness_token(dburl, "admin", "*"));
	viewer = harness_keep(harness_token(dburl, "viewer", "qs"));
	other = harness_keep(harness_token(dburl, "admin", "elsewhere"));
	harness_post_created(root, "/v1/environments", "{\"name\":\"qs\"}");
	harness_post_created(root, "/v1/environments", "{\"name\":\"elsewhere\"}");
	harness_seed_cluster("qs", "gke", "us-central1", "active", "qs-1", H100, 2, 8, 2, false);
	/* cohort team: qa and qb own 4 each; qd is alone with 2 */
	make_queue(qa, sizeof(qa), "{\"name\":\"qa\",\"environment\":\"qs\",\"cohort\":\"team\","
	    "\"nominal_quota\":{\"" H100 "\":4}}");
	make_queue(qb, sizeof(qb), "{\"name\":\"qb\",\"environment\":\"qs\",\"cohort\":\"team\","
	    "\"nominal_quota\":{\"" H100 "\":4},\"borrowing_limit\":{\"" H100 "\":0}}");
	make_queue(qd, sizeof(qd), "{\"name\":\"qd\",\"environment\":\"qs\","
	    "\"nominal_quota\":{\"" H100 "\":2}}");
	return 0;
}

static json_t *
flavor_of(json_t *st)
{
	return json_array_get(json_object_get(st, "flavors"), 0);
}

static void
test_status(void **state)
{
	double end;
	json_t *st;

	(void)state;
	/* qa takes 6 of 8: 4 of its own and 2 borrowed from qb; qd asks for more than it owns */
	submit("qa", 2);
	submit("qa", 2);
	submit("qa", 2);
	submit("qd", 4);
	end = harness_now_s() + 15;
	while ((harness_sql_long("SELECT count(*) FROM jobs WHERE state = 'admitted'") != 3 ||
	    harness_sql_long("SELECT count(*) FROM jobs WHERE state = 'pending' AND reason IS"
	    " NOT NULL") != 1) && harness_now_s() < end)
		usleep(100 * 1000);
	assert_int_equal(harness_sql_long("SELECT count(*) FROM jobs WHERE state = 'admitted'"), 3);

	st = harness_get_ok(viewer, "/v1/queues/%s/status", qa);
	assert_string_equal(harness_js(st, "cohort"), "team");
	assert_string_equal(json_string_value(json_object_get(flavor_of(st), "flavor")), H100);
	assert_int_equal(json_integer_value(json_object_get(flavor_of(st), "nominal")), 4);
	assert_int_equal(json_integer_value(json_object_get(flavor_of(st), "usage")), 6);
	assert_int_equal(json_integer_value(json_object_get(flavor_of(st), "borrowed")), 2);
	assert_int_equal(json_integer_value(json_object_get(flavor_of(st), "lent")), 0);
	assert_int_equal(json_integer_value(json_object_get(flavor_of(st), "cohort_lendable")), 8);
	assert_true(fabs(json_number_value(harness_jp(st, "fair_share.share")) - 0.25) < 1e-9);
	assert_int_equal(harness_ji(st, "fair_share.rank"), 2);
	assert_int_equal(harness_ji(st, "fair_share.cohort_queues"), 2);
	assert_int_equal(harness_ji(st, "pending.total"), 0);

	st = harness_get_ok(viewer, "/v1/queues/%s/status", qb);
	assert_int_equal(json_integer_value(json_object_get(flavor_of(st), "usage")), 0);
	assert_int_equal(json_integer_value(json_object_get(flavor_of(st), "lent")), 2);
	assert_int_equal(json_integer_value(json_object_get(flavor_of(st), "borrowing_limit")), 0);
	assert_true(json_is_null(json_object_get(flavor_of(st), "lending_limit")));
	assert_int_equal(harness_ji(st, "fair_share.rank"), 1);

	st = harness_get_ok(viewer, "/v1/queues/%s/status", qd);
	assert_true(json_is_null(json_object_get(st, "cohort")));
	assert_int_equal(harness_ji(st, "fair_share.cohort_queues"), 1);
	assert_int_equal(harness_ji(st, "pending.total"), 1);
	{
		const char *why = harness_sql_str("SELECT reason FROM jobs WHERE state = 'pending'");

		assert_int_equal(json_integer_value(json_object_get(harness_jp(st,
		    "pending.by_reason"), why)), 1);
		free((void *)why);
	}

	/* fleetctl queues status */
	{
		const char *bin = getenv("FLEETD_BUILD_DIR");
		char out[] = "/tmp/fleetctl-qs-XXXXXX", *text;
		int fdo = mkstemp(out);

		assert_non_null(bin);
		assert_true(fdo >= 0);
		close(fdo);
		assert_int_equal(harness_sh("FLEET_URL=%s FLEET_TOKEN=%s %s/fleetctl queues status %s"
		    " -o json >%s", fd.url, viewer, bin, qa, out), 0);
		text = harness_slurp(out);
		assert_non_null(text);
		assert_non_null(strstr(text, "\"borrowed\": 2"));
		free(text);
		assert_int_equal(harness_sh("FLEET_URL=%s FLEET_TOKEN=%s %s/fleetctl queues status %s"
		    " >%s", fd.url, viewer, bin, qa, out), 0);
		text = harness_slurp(out);
		assert_non_null(text);
		assert_non_null(strstr(text, "team"));
		free(text);
		unlink(out);
	}

	/* in use: a queue with unfinished jobs and a cluster jobs are placed on stay (409);
	 * a queue without jobs goes */
	harness_call("DELETE", root, NULL, "/v1/queues/%s", qa);
	harness_expect_problem(NULL, 409, "queue.in_use", NULL);
	{
		char *cl = harness_sql_str("SELECT id FROM clusters WHERE name = 'qs-1'");

		harness_call("DELETE", root, NULL, "/v1/clusters/%s", cl);
		harness_expect_problem(NULL, 409, "cluster.in_use", NULL);
		assert_int_equal(harness_sql_long("SELECT count(*) FROM clusters WHERE name ="
		    " 'qs-1'"), 1);
		free(cl);
	}
	assert_int_equal(harness_call("DELETE", root, NULL, "/v1/queues/%s", qb), 204);
	assert_int_equal(harness_sql_long("SELECT count(*) FROM queues WHERE name = 'qa'"), 1);

	/* scope and input */
	harness_call("GET", other, NULL, "/v1/queues/%s/status", qa);
	harness_expect_problem(NULL, 404, "queue.not_found", NULL);
	harness_call("GET", viewer, NULL, "/v1/queues/%s/status", "not-a-uuid");
	harness_expect_problem(NULL, 404, "queue.not_found", NULL);
	harness_call("GET", viewer, NULL, "/v1/queues/%s/status",
	    "00000000-0000-4000-8000-000000000000");
	harness_expect_problem(NULL, 404, "queue.not_found", NULL);
	harness_call("GET", NULL, NULL, "/v1/queues/%s/status", qa);
	harness_expect_status(NULL, 401);
}

/* Another environment's token gets its 404 before the queue's scheduler model is built:
 * with jobs locked by another session (the model reads them), the answer is immediate. */
static void
test_other_env_builds_no_model(void **state)
{
	PGconn *c = PQconnectdb(dburl);
	PGresult *r;
	double t0;

	(void)state;
	assert_int_equal(PQstatus(c), CONNECTION_OK);
	r = PQexec(c, "BEGIN; LOCK TABLE jobs IN ACCESS EXCLUSIVE MODE");
	assert_int_equal(PQresultStatus(r), PGRES_COMMAND_OK);
	PQclear(r);
	t0 = harness_now_s();
	harness_http_timeout_s = 5;
	harness_call("GET", other, NULL, "/v1/queues/%s/status", qd);
	harness_http_timeout_s = 30;
	print_message("queue status for another environment's token, jobs locked: %ld in %.2f s\n",
	    harness_r.status, harness_now_s() - t0);
	PQclear(PQexec(c, "ROLLBACK"));
	PQfinish(c);
	harness_expect_problem(NULL, 404, "queue.not_found", NULL);
}

/* The team axis: a viewer (or operator) held in team tq reads its queue's status — with
 * the cohort's other queue's share but not its id — and gets 404 for an environment-wide
 * queue and for another team's queue, like a queue that does not exist. */
static void
test_team_roles(void **state)
{
	char qt[64], qm[64], qz[64], *tv, *to, *zv;
	json_t *o, *peers, *p;
	size_t i;
	int seen_self = 0, masked = 0;

	(void)state;
	harness_post_created(root, "/v1/teams", "{\"name\":\"tq\",\"environments\":[\"qs\"]}");
	harness_post_created(root, "/v1/teams", "{\"name\":\"tz\",\"environments\":[\"qs\"]}");
	make_queue(qt, sizeof(qt), "{\"name\":\"qt\",\"environment\":\"qs\",\"cohort\":"
	    "\"mixed\",\"team\":\"tq\",\"nominal_quota\":{\"" H100 "\":1}}");
	make_queue(qm, sizeof(qm), "{\"name\":\"qm\",\"environment\":\"qs\",\"cohort\":"
	    "\"mixed\",\"nominal_quota\":{\"" H100 "\":1}}");
	make_queue(qz, sizeof(qz), "{\"name\":\"qz\",\"environment\":\"qs\",\"team\":\"tz\","
	    "\"nominal_quota\":{\"" H100 "\":1}}");
	o = harness_post_created(root, "/v1/tokens", "{\"name\":\"tq-viewer\",\"role\":"
	    "\"viewer\",\"environments\":[\"qs\"],\"team\":\"tq\"}");
	tv = harness_keep(strdup(json_string_value(json_object_get(o, "secret"))));
	o = harness_post_created(root, "/v1/tokens", "{\"name\":\"tq-operator\",\"role\":"
	    "\"operator\",\"environments\":[\"qs\"],\"team\":\"tq\"}");
	to = harness_keep(strdup(json_string_value(json_object_get(o, "secret"))));
	o = harness_post_created(root, "/v1/tokens", "{\"name\":\"tz-viewer\",\"role\":"
	    "\"viewer\",\"environments\":[\"qs\"],\"team\":\"tz\"}");
	zv = harness_keep(strdup(json_string_value(json_object_get(o, "secret"))));
	for (int k = 0; k < 2; k++) {
		harness_call("GET", k ? to : tv, NULL, "/v1/queues/%s/status", qt);
		harness_expect_status(NULL, 200);
		assert_string_equal(harness_js(harness_r.json, "queue_id"), qt);
		assert_null(strstr(harness_r.body, qm));
		peers = json_object_get(json_object_get(harness_r.json, "fair_share"), "cohort");
		seen_self = masked = 0;
		json_array_foreach(peers, i, p) {
			seen_self += json_is_string(json_object_get(p, "queue_id"));
			masked += json_is_null(json_object_get(p, "queue_id"));
		}
		assert_int_equal(seen_self, 1);
		assert_int_equal(masked, 1);
		harness_call("GET", k ? to : tv, NULL, "/v1/queues/%s/status", qm);
		harness_expect_problem(NULL, 404, "queue.not_found", NULL);
		harness_call("GET", k ? to : tv, NULL, "/v1/queues/%s/status", qz);
		harness_expect_problem(NULL, 404, "queue.not_found", NULL);
	}
	harness_call("GET", zv, NULL, "/v1/queues/%s/status", qz);
	harness_expect_status(NULL, 200);
	harness_call("GET", zv, NULL, "/v1/queues/%s/status", qt);
	harness_expect_problem(NULL, 404, "queue.not_found", NULL);
	/* an environment viewer sees both ids */
	harness_call("GET", viewer, NULL, "/v1/queues/%s/status", qt);
	harness_expect_status(NULL, 200);
	assert_non_null(strstr(harness_r.body, qm));
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_status),
		cmocka_unit_test(test_other_env_builds_no_model),
		cmocka_unit_test(test_team_roles),
	};

	return cmocka_run_group_tests(tests, setup, harness_group_teardown);
}
