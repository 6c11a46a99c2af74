/* test_foundation: fleetd serve against a real Postgres — bad input, the environment
 * lifecycle, auth, idempotency, readiness across a database restart, migrations, shutdown. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <libpq-fe.h>

#include "tests/harness/harness.h"

static struct fleetd_proc fd;
static char dburl[512];
static char *admin, *viewer, *scoped;

static int
setup(void **state)
{
	(void)state;
	/* test_readyz_db_restart stops and starts its server: its own, not the one the tests
	 * running beside this one use (they answered 503 db.unavailable meanwhile) */
	harness_pg_private();
	harness_db_create("foundation", dburl, sizeof(dburl));
	harness_fleetd_start(&fd, dburl, NULL);
	admin = harness_keep(harness_token(dburl, "admin", "*"));
	viewer = harness_keep(harness_token(dburl, "viewer", "*"));
	scoped = harness_keep(harness_token(dburl, "operator", "dev"));
	return 0;
}

struct bad_case {
	const char	*what;
	const char	*method;
	const char	*path;
	const char	*body;		/* NULL: none; "@2MiB": generated */
	const char	*ctype;		/* NULL: application/json; "": none */
	long		 status;
	const char	*code;
	const char	*pointer;
};

static const struct bad_case bad_cases[] = {
	{ "malformed json", "POST", "/v1/environments", "{\"name\": ", NULL, 400, "api.bad_json", NULL },
	{ "array body", "POST", "/v1/environments", "[{\"name\":\"ab\"}]", NULL, 400, "api.not_object", "" },
	{ "scalar body", "POST", "/v1/environments", "42", NULL, 400, "api.not_object", "" },
	{ "unknown field", "POST", "/v1/environments", "{\"name\":\"ab\",\"colour\":1}", NULL, 400, "api.unknown_field", "/colour" },
	{ "wrong type", "POST", "/v1/environments", "{\"name\":5}", NULL, 400, "api.wrong_type", "/name" },
	{ "missing name", "POST", "/v1/environments", "{}", NULL, 400, "api.missing_field", "/name" },
	{ "bad name", "POST", "/v1/environments", "{\"name\":\"Prod!\"}", NULL, 400, "env.bad_name", "/name" },
	{ "2 MiB body", "POST", "/v1/environments", "@2MiB", NULL, 413, "api.body_too_large", NULL },
	{ "missing content type", "POST", "/v1/environments", "{\"name\":\"ab\"}", "", 415, "api.unsupported_media_type", NULL },
	{ "wrong content type", "POST", "/v1/environments", "{\"name\":\"ab\"}", "text/plain", 415, "api.unsupported_media_type", NULL },
	{ "invalid utf-8", "POST", "/v1/environments", "{\"name\":\"a\xff\xfe\"}", NULL, 400, "api.bad_json", NULL },
	{ "dot-dot path", "GET", "/v1/environments/../tokens", NULL, NULL, 400, "api.bad_path", NULL },
	{ "encoded dot-dot", "GET", "/v1/environments/%2e%2e/x", NULL, NULL, 400, "api.bad_path", NULL },
	{ "nul in path", "GET", "/v1/environments/a%00b", NULL, NULL, 400, "api.bad_path", NULL },
	{ "limit -1", "GET", "/v1/environments?limit=-1", NULL, NULL, 400, "api.bad_limit", "/query/limit" },
	{ "limit abc", "GET", "/v1/environments?limit=abc", NULL, NULL, 400, "api.bad_limit", "/query/limit" },
	{ "bad cursor", "GET", "/v1/environments?after=%%%%", NULL, NULL, 400, "api.bad_cursor", "/query/after" },
	{ "unknown route", "GET", "/v1/nothing", NULL, NULL, 404, "api.not_found", NULL },
	{ "wrong method", "PATCH", "/v1/environments", NULL, NULL, 405, "api.method_not_allowed", NULL },
};

static void
test_bad_input(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(bad_cases) / sizeof(bad_cases[0]); i++) {
		const struct bad_case *c = &bad_cases[i];
		struct http_result r;
		char *body = NULL, cth[128];
		const char *hdr[2] = { NULL, NULL };

		print_message("bad input: %s\n", c->what);
		if (c->body != NULL && strcmp(c->body, "@2MiB") == 0) {
			body = malloc(2 * 1024 * 1024 + 1);
			memset(body, ' ', 2 * 1024 * 1024);
			body[0] = '{';
			body[2 * 1024 * 1024 - 1] = '}';
			body[2 * 1024 * 1024] = '\0';
		} else if (c->body != NULL) {
			body = strdup(c->body);
		}
		if (c->ctype != NULL) {
			snprintf(cth, sizeof(cth), "Content-Type: %s", c->ctype);
			hdr[0] = cth;
		}
		harness_http(&r, c->method, harness_url(&fd, "%s", c->path), admin, body, hdr);
		harness_expect_problem(&r, c->status, c->code, c->pointer);
		if (c->status == 405) {
			char *allow = harness_header(&r, "Allow");

			assert_non_null(allow);
			assert_non_null(strstr(allow, "GET"));
			assert_non_null(strstr(allow, "POST"));
			free(allow);
		}
		harness_http_free(&r);
		free(body);
	}
}

static void
test_long_name(void **state)
{
	char *body = malloc(10100), *name = malloc(10001);
	struct http_result r;

	(void)state;
	memset(name, 'a', 10000);
	name[10000] = '\0';
	snprintf(body, 10100, "{\"name\":\"%s\"}", name);
	harness_http(&r, "POST", harness_url(&fd, "/v1/environments"), admin, body, NULL);
	harness_expect_problem(&r, 400, "env.bad_name", "/name");
	harness_http_free(&r);
	harness_http(&r, "GET", harness_url(&fd, "/v1/environments/%s", "aaaaaaaaaaaaaaaaaaaaaaaaaaaa"
	    "aaaaaaaaaaaaaaaaaaaaaaaaaaa"), admin, NULL, NULL);
	harness_expect_problem(&r, 404, "env.not_found", NULL);
	harness_http_free(&r);
	free(body);
	free(name);
}

static void
test_env_lifecycle(void **state)
{
	struct http_result r;
	char *loc, *etag, *next;
	const char *names[] = { "prod", "staging", "dev", "qa" };

	(void)state;
	for (int i = 0; i < 4; i++) {
		char body[128];

		snprintf(body, sizeof(body), "{\"name\":\"%s\",\"description\":\"%s env\"}",
		    names[i], names[i]);
		harness_http(&r, "POST", harness_url(&fd, "/v1/environments"), admin, body, NULL);
		assert_int_equal(r.status, 201);
		assert_string_equal(json_string_value(json_object_get(r.json, "name")), names[i]);
		assert_int_equal(json_integer_value(json_object_get(r.json, "version")), 1);
		assert_non_null(json_string_value(json_object_get(r.json, "id")));
		assert_non_null(json_string_value(json_object_get(r.json, "created_at")));
		loc = harness_header(&r, "Location");
		assert_non_null(loc);
		assert_true(strstr(loc, names[i]) != NULL);
		free(loc);
		harness_http_free(&r);
	}
	harness_http(&r, "POST", harness_url(&fd, "/v1/environments"), admin, "{\"name\":\"prod\"}", NULL);
	harness_expect_problem(&r, 409, "env.exists", "/name");
	harness_http_free(&r);

	/* paging: 4 names in order dev, prod, qa, staging; two pages of two */
	harness_http(&r, "GET", harness_url(&fd, "/v1/environments?limit=2"), viewer, NULL, NULL);
	assert_int_equal(r.status, 200);
	assert_int_equal(json_array_size(json_object_get(r.json, "items")), 2);
	assert_string_equal(json_string_value(json_object_get(json_array_get(
	    json_object_get(r.json, "items"), 0), "name")), "dev");
	next = strdup(json_string_value(json_object_get(r.json, "next")));
	harness_http_free(&r);
	harness_http(&r, "GET", harness_url(&fd, "%s", next), viewer, NULL, NULL);
	assert_int_equal(r.status, 200);
	assert_string_equal(json_string_value(json_object_get(json_array_get(
	    json_object_get(r.json, "items"), 0), "name")), "qa");
	free(next);
	harness_http_free(&r);

	/* GET, PUT with If-Match, stale If-Match, identical PUT keeps the version */
	harness_http(&r, "GET", harness_url(&fd, "/v1/environments/qa"), viewer, NULL, NULL);
	assert_int_equal(r.status, 200);
	etag = harness_header(&r, "ETag");
	assert_string_equal(etag, "\"1\"");
	harness_http_free(&r);
	{
		const char *h[] = { "If-Match: \"1\"", NULL };
		const char *stale[] = { "If-Match: \"7\"", NULL };

		harness_http(&r, "PUT", harness_url(&fd, "/v1/environments/qa"), admin,
		    "{\"name\":\"qa\",\"description\":\"quality\"}", h);
		assert_int_equal(r.status, 200);
		assert_int_equal(json_integer_value(json_object_get(r.json, "version")), 2);
		harness_http_free(&r);
		harness_http(&r, "PUT", harness_url(&fd, "/v1/environments/qa"), admin,
		    "{\"name\":\"qa\",\"description\":\"quality\"}", NULL);
		assert_int_equal(json_integer_value(json_object_get(r.json, "version")), 2);
		harness_http_free(&r);
		harness_http(&r, "PUT", harness_url(&fd, "/v1/environments/qa"), admin,
		    "{\"name\":\"qa\",\"description\":\"x\"}", stale);
		harness_expect_problem(&r, 412, "api.precondition_failed", NULL);
		harness_http_free(&r);
		harness_http(&r, "PUT", harness_url(&fd, "/v1/environments/qa"), admin,
		    "{\"name\":\"qa2\",\"description\":\"x\"}", NULL);
		harness_expect_problem(&r, 409, "env.immutable", "/name");
		harness_http_free(&r);
	}
	free(etag);
	harness_http(&r, "GET", harness_url(&fd, "/v1/environments/qa"), viewer, NULL, NULL);
	assert_string_equal(json_string_value(json_object_get(r.json, "description")), "quality");
	harness_http_free(&r);

	/* DELETE with a stale If-Match 412, then 204, then 404, GET 404 */
	{
		const char *stale[] = { "If-Match: \"7\"", NULL };

		harness_http(&r, "DELETE", harness_url(&fd, "/v1/environments/qa"), admin, NULL,
		    stale);
		harness_expect_problem(&r, 412, "api.precondition_failed", NULL);
		harness_http_free(&r);
	}
	harness_http(&r, "DELETE", harness_url(&fd, "/v1/environments/qa"), admin, NULL, NULL);
	assert_int_equal(r.status, 204);
	harness_http_free(&r);
	harness_http(&r, "DELETE", harness_url(&fd, "/v1/environments/qa"), admin, NULL, NULL);
	harness_expect_problem(&r, 404, "env.not_found", NULL);
	harness_http_free(&r);
	harness_http(&r, "GET", harness_url(&fd, "/v1/environments/qa"), admin, NULL, NULL);
	assert_int_equal(r.status, 404);
	harness_http_free(&r);

	/* audit rows for the mutations */
	harness_http(&r, "GET", harness_url(&fd, "/v1/audit?resource_type=environment&limit=500"), admin,
	    NULL, NULL);
	assert_int_equal(r.status, 200);
	assert_int_equal(json_array_size(json_object_get(r.json, "items")), 6);
	harness_http_free(&r);
}

static void
test_auth(void **state)
{
	struct http_result r;
	char *www;

	(void)state;
	harness_http(&r, "GET", harness_url(&fd, "/v1/environments"), NULL, NULL, NULL);
	harness_expect_problem(&r, 401, "auth.missing_token", NULL);
	www = harness_header(&r, "WWW-Authenticate");
	assert_non_null(www);
	assert_true(strncmp(www, "Bearer", 6) == 0);
	free(www);
	harness_http_free(&r);
	harness_http(&r, "GET", harness_url(&fd, "/v1/environments"), "fleet_nope", NULL, NULL);
	harness_expect_problem(&r, 401, "auth.bad_token", NULL);
	harness_http_free(&r);
	harness_http(&r, "POST", harness_url(&fd, "/v1/environments"), viewer, "{\"name\":\"zz\"}", NULL);
	harness_expect_problem(&r, 403, "auth.forbidden", NULL);
	harness_http_free(&r);
	/* a token scoped to dev sees dev and nothing else: prod is 404, not 403 */
	harness_http(&r, "GET", harness_url(&fd, "/v1/environments/prod"), scoped, NULL, NULL);
	harness_expect_problem(&r, 404, "env.not_found", NULL);
	harness_http_free(&r);
	harness_http(&r, "GET", harness_url(&fd, "/v1/environments/dev"), scoped, NULL, NULL);
	assert_int_equal(r.status, 200);
	harness_http_free(&r);
	harness_http(&r, "GET", harness_url(&fd, "/v1/environments"), scoped, NULL, NULL);
	assert_int_equal(json_array_size(json_object_get(r.json, "items")), 1);
	harness_http_free(&r);
	/* revocation takes effect */
	{
		const char *stale[] = { "If-Match: \"7\"", NULL };
		char body[128], *secret, *id;

		snprintf(body, sizeof(body), "{\"name\":\"tmp\",\"role\":\"viewer\","
		    "\"environments\":[\"dev\"]}");
		harness_http(&r, "POST", harness_url(&fd, "/v1/tokens"), admin, body, NULL);
		assert_int_equal(r.status, 201);
		secret = strdup(json_string_value(json_object_get(r.json, "secret")));
		id = strdup(json_string_value(json_object_get(r.json, "id")));
		harness_http_free(&r);
		harness_http(&r, "GET", harness_url(&fd, "/v1/environments/dev"), secret, NULL, NULL);
		assert_int_equal(r.status, 200);
		harness_http_free(&r);
		snprintf(body, sizeof(body), "/v1/tokens/%s", id);
		harness_http(&r, "DELETE", harness_url(&fd, "%s", body), admin, NULL,
		    stale);	/* If-Match */
		harness_expect_problem(&r, 412, "api.precondition_failed", NULL);
		harness_http_free(&r);
		harness_http(&r, "DELETE", harness_url(&fd, "%s", body), admin, NULL, NULL);
		assert_int_equal(r.status, 204);
		harness_http_free(&r);
		harness_http(&r, "GET", harness_url(&fd, "/v1/environments/dev"), secret, NULL, NULL);
		assert_int_equal(r.status, 401);
		harness_http_free(&r);
		free(secret);
		free(id);
	}
}

static void
test_idempotency(void **state)
{
	struct http_result r1, r2, r3;
	const char *h[] = { "Idempotency-Key: k-123", NULL };

	(void)state;
	harness_http(&r1, "POST", harness_url(&fd, "/v1/environments"), admin, "{\"name\":\"idem\"}", h);
	assert_int_equal(r1.status, 201);
	harness_http(&r2, "POST", harness_url(&fd, "/v1/environments"), admin, "{\"name\":\"idem\"}", h);
	assert_int_equal(r2.status, 201);
	assert_string_equal(r1.body, r2.body);
	harness_http(&r3, "POST", harness_url(&fd, "/v1/environments"), admin, "{\"name\":\"other\"}", h);
	harness_expect_problem(&r3, 422, "api.idempotency_key_reused", NULL);
	harness_http_free(&r1);
	harness_http_free(&r2);
	harness_http_free(&r3);
}

static void
test_metrics_openapi(void **state)
{
	struct http_result r;
	char path[128];
	FILE *f;

	(void)state;
	harness_http(&r, "GET", harness_url(&fd, "/metrics"), harness_metrics_token(), NULL, NULL);
	assert_int_equal(r.status, 200);
	assert_non_null(strstr(r.body, "fleetd_http_requests_total{route=\"/v1/environments\""));
	assert_non_null(strstr(r.body, "fleetd_db_pool_connections"));
	snprintf(path, sizeof(path), "/tmp/fleetd-metrics-%d.txt", (int)getpid());
	f = fopen(path, "w");
	fwrite(r.body, 1, r.len, f);
	fclose(f);
	assert_int_equal(harness_sh("promtool check metrics < %s", path), 0);
	unlink(path);
	harness_http_free(&r);
	harness_http(&r, "GET", harness_url(&fd, "/openapi.yaml"), NULL, NULL, NULL);
	assert_int_equal(r.status, 200);
	assert_non_null(strstr(r.body, "openapi: 3.1"));
	harness_http_free(&r);
}

static void
test_secrets_not_logged(void **state)
{
	char *log = harness_slurp(fd.log);

	(void)state;
	assert_non_null(log);
	assert_null(strstr(log, admin));
	assert_null(strstr(log, viewer));
	assert_null(strstr(log, admin + 6));
	free(log);
}

/* readyz follows the database: 503 while it is away, 200 once it is back, same process. */
static void
test_readyz_db_restart(void **state)
{
	const char *pgdir = harness_pg_dir();
	struct http_result r;
	int ok = 0;

	(void)state;
	assert_non_null(pgdir);
	harness_http(&r, "GET", harness_url(&fd, "/readyz"), NULL, NULL, NULL);
	assert_int_equal(r.status, 200);
	harness_http_free(&r);
	assert_int_equal(harness_sh("bash scripts/pg.sh stop %s", pgdir), 0);
	harness_http(&r, "GET", harness_url(&fd, "/readyz"), NULL, NULL, NULL);
	assert_int_equal(r.status, 503);
	harness_http_free(&r);
	harness_http(&r, "GET", harness_url(&fd, "/v1/environments"), admin, NULL, NULL);
	assert_int_equal(r.status, 503);
	{
		char *ra = harness_header(&r, "Retry-After");

		assert_non_null(ra);
		free(ra);
	}
	harness_http_free(&r);
	assert_int_equal(harness_sh("bash scripts/pg.sh start %s", pgdir), 0);
	for (int i = 0; i < 100 && !ok; i++) {
		harness_http(&r, "GET", harness_url(&fd, "/readyz"), NULL, NULL, NULL);
		ok = r.status == 200;
		harness_http_free(&r);
		if (!ok)
			usleep(100 * 1000);
	}
	assert_true(ok);
	harness_http(&r, "GET", harness_url(&fd, "/v1/environments"), admin, NULL, NULL);
	assert_int_equal(r.status, 200);
	harness_http_free(&r);
}

static void
test_migration_checksum(void **state)
{
	char dir[128], db2[512];

	(void)state;
	harness_db_create("migck", db2, sizeof(db2));
	snprintf(dir, sizeof(dir), "/tmp/fleetd-mig-%d", (int)getpid());
	assert_int_equal(harness_sh("rm -rf %s && cp -r migrations %s", dir, dir), 0);
	assert_int_equal(harness_sh("DATABASE_URL='%s' FLEETD_MIGRATIONS_DIR=%s %s/fleetd "
	    "migrate >/dev/null", db2, dir, FLEETD_BINARY_DIR), 0);
	/* concurrent migrators serialize: both succeed */
	assert_int_equal(harness_sh("(DATABASE_URL='%s' FLEETD_MIGRATIONS_DIR=%s %s/fleetd "
	    "migrate & DATABASE_URL='%s' FLEETD_MIGRATIONS_DIR=%s %s/fleetd migrate; wait $!) "
	    ">/dev/null", db2, dir, FLEETD_BINARY_DIR, db2, dir, FLEETD_BINARY_DIR), 0);
	assert_int_equal(harness_sh("echo '-- edited' >> %s/0001_init.sql", dir), 0);
	assert_int_equal(harness_sh("DATABASE_URL='%s' FLEETD_MIGRATIONS_DIR=%s %s/fleetd "
	    "migrate 2>&1 | grep -q 'has changed'", db2, dir, FLEETD_BINARY_DIR), 0);
	assert_int_not_equal(harness_sh("DATABASE_URL='%s' FLEETD_MIGRATIONS_DIR=%s %s/fleetd "
	    "migrate >/dev/null 2>&1", db2, dir, FLEETD_BINARY_DIR), 0);
	/* serve refuses pending migrations without --migrate */
	harness_sh("rm -rf %s", dir);
	harness_db_drop(db2);
	harness_db_create("migpend", db2, sizeof(db2));
	assert_int_not_equal(harness_sh("DATABASE_URL='%s' FLEETD_LISTEN=127.0.0.1:%d %s/fleetd "
	    "serve 2>&1 | grep -q 'pending'; test ${PIPESTATUS[0]} -ne 0 && exit 1; exit 0",
	    db2, harness_free_port(), FLEETD_BINARY_DIR), 0);
	harness_db_drop(db2);
}

struct slow_arg {
	struct http_result r;
};

static void *
slow_post(void *arg)
{
	struct slow_arg *a = arg;

	harness_http(&a->r, "POST", harness_url(&fd, "/v1/environments"), admin, "{\"name\":\"inflight\"}",
	    NULL);
	return NULL;
}

/* SIGTERM while a request waits on a lock: the request finishes, then fleetd exits 0. */
static void
test_graceful_shutdown(void **state)
{
	PGconn *c = PQconnectdb(dburl);
	struct slow_arg a;
	pthread_t t;
	int rc;

	(void)state;
	assert_int_equal(PQstatus(c), CONNECTION_OK);
	PQclear(PQexec(c, "BEGIN"));
	PQclear(PQexec(c, "LOCK TABLE environments IN ACCESS EXCLUSIVE MODE"));
	pthread_create(&t, NULL, slow_post, &a);
	usleep(500 * 1000);
	kill(fd.pid, SIGTERM);
	usleep(500 * 1000);
	PQclear(PQexec(c, "COMMIT"));
	pthread_join(t, NULL);
	assert_int_equal(a.r.status, 201);
	harness_http_free(&a.r);
	rc = harness_fleetd_stop(&fd);
	assert_int_equal(rc, 0);
	PQfinish(c);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_bad_input),
		cmocka_unit_test(test_long_name),
		cmocka_unit_test(test_env_lifecycle),
		cmocka_unit_test(test_auth),
		cmocka_unit_test(test_idempotency),
		cmocka_unit_test(test_metrics_openapi),
		cmocka_unit_test(test_readyz_db_restart),
		cmocka_unit_test(test_migration_checksum),
		cmocka_unit_test(test_secrets_not_logged),
		cmocka_unit_test(test_graceful_shutdown),
	};

	return cmocka_run_group_tests(tests, setup, harness_group_teardown);
}
