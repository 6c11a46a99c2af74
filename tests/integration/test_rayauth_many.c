/* test_rayauth_many: the Ray auth tokens of a dispatch batch in one transaction
 * (queue/jobs/rayauth.c:rayauth_ensure_many) are the tokens rayauth_ensure and rayauth_get
 * give one job at a time: a job that has one keeps it, the others get a new distinct one,
 * stored sealed (never the plaintext); a second call changes nothing; a batch that cannot
 * be stored (a job row that does not exist) stores none of its tokens and returns none. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/config.h"
#include "core/crypto.h"
#include "core/db.h"
#include "core/migrate.h"
#include "queue/jobs/rayauth.h"
#include "tests/harness/harness.h"

#define NJOBS	5

static char dburl[512];
static const char *const ids[NJOBS] = {
	"0b5e7e7a-0000-4000-8000-000000000001", "0b5e7e7a-0000-4000-8000-000000000002",
	"0b5e7e7a-0000-4000-8000-000000000003", "0b5e7e7a-0000-4000-8000-000000000004",
	"0b5e7e7a-0000-4000-8000-000000000005",
};

static int
setup(void **state)
{
	struct err e = { 0 };
	struct db *c;
	uint8_t key[32];
	char *b64;
	int applied = 0;

	(void)state;
	harness_db_create("rayauth_many", dburl, sizeof(dburl));
	crypto_random(key, sizeof(key));
	b64 = crypto_b64_encode(key, sizeof(key));
	config_set("master-key", b64, &e);
	free(b64);
	if (!db_pool_init(dburl, 2, &e) || (c = db_acquire(5000, &e)) == NULL) {
		fprintf(stderr, "db: %s\n", e.msg);
		return -1;
	}
	if (!migrate_apply(c, FLEETD_SOURCE_DIR "/migrations", &applied, &e)) {
		fprintf(stderr, "migrate: %s\n", e.msg);
		db_release(c);
		return -1;
	}
	db_release(c);
	harness_sql("INSERT INTO environments (id, name) VALUES (gen_random_uuid(), 'test')");
	harness_sql("INSERT INTO priority_classes (id, name, value) VALUES (gen_random_uuid(),"
	    " 'normal', 100) ON CONFLICT DO NOTHING");
	harness_sql("INSERT INTO queues (id, name, environment) VALUES (gen_random_uuid(), 'q',"
	    " 'test')");
	for (int i = 0; i < NJOBS; i++)
		harness_sql("INSERT INTO jobs (id, name, environment, queue_id, kind, priority_class,"
		    " priority, spec) SELECT '%s', 'j%d', 'test', id, 'RayJob', 'normal', 100, '{}'"
		    " FROM queues WHERE name = 'q'", ids[i], i);
	return 0;
}

static int
teardown(void **state)
{
	db_pool_close();
	return harness_group_teardown(state);
}

/* The token rayauth_get reads for id on a connection of its own. */
static char *
stored(const char *id)
{
	struct err e = { 0 };
	struct db *c = db_acquire(5000, &e);
	char *tok = NULL;

	if (c == NULL || !rayauth_get(c, id, &tok, &e))
		fail_msg("rayauth_get %s: %s", id, e.msg);
	db_release(c);
	return tok;
}

static void
test_many_as_one_by_one(void **state)
{
	char *first = NULL, *tokens[NJOBS], *again[NJOBS];
	struct err e = { 0 };

	(void)state;
	/* job 0 was dispatched before, alone */
	assert_true(rayauth_ensure(ids[0], &first, &e));
	assert_non_null(first);
	assert_true(rayauth_ensure_many(ids, NJOBS, tokens, &e));
	assert_string_equal(tokens[0], first);
	for (int i = 0; i < NJOBS; i++) {
		char *s = stored(ids[i]);

		assert_non_null(tokens[i]);
		assert_true(strlen(tokens[i]) >= 40);	/* 32 random bytes, base64url */
		assert_string_equal(tokens[i], s);
		for (int k = 0; k < i; k++)
			assert_string_not_equal(tokens[i], tokens[k]);
		/* sealed at rest: the plaintext is in no row */
		assert_int_equal(harness_sql_long("SELECT count(*) FROM job_ray_auth WHERE"
		    " sealed LIKE '%%%s%%'", tokens[i]), 0);
		rayauth_free(s);
	}
	assert_int_equal(harness_sql_long("SELECT count(*) FROM job_ray_auth"), NJOBS);
	/* a second call (a retried batch) reads the same tokens and stores nothing new */
	assert_true(rayauth_ensure_many(ids, NJOBS, again, &e));
	for (int i = 0; i < NJOBS; i++) {
		assert_string_equal(again[i], tokens[i]);
		rayauth_free(again[i]);
		rayauth_free(tokens[i]);
	}
	assert_int_equal(harness_sql_long("SELECT count(*) FROM job_ray_auth"), NJOBS);
	rayauth_free(first);
}

static void
test_many_all_or_nothing(void **state)
{
	const char *some[2] = { "0b5e7e7a-0000-4000-8000-0000000000aa",	/* no such job */
	    "0b5e7e7a-0000-4000-8000-0000000000bb" };
	const char *bad[1] = { "not-a-uuid" };
	char *tokens[2] = { NULL, NULL };
	struct err e = { 0 };
	long before = harness_sql_long("SELECT count(*) FROM job_ray_auth");

	(void)state;
	harness_sql("INSERT INTO jobs (id, name, environment, queue_id, kind, priority_class,"
	    " priority, spec) SELECT '%s', 'jb', 'test', id, 'RayJob', 'normal', 100, '{}'"
	    " FROM queues WHERE name = 'q'", some[1]);
	assert_false(rayauth_ensure_many(some, 2, tokens, &e));
	assert_int_not_equal(e.status, 0);
	assert_null(tokens[0]);
	assert_null(tokens[1]);
	assert_int_equal(harness_sql_long("SELECT count(*) FROM job_ray_auth"), before);
	err_clear(&e);
	assert_false(rayauth_ensure_many(bad, 1, tokens, &e));
	assert_int_equal(e.status, 404);
	assert_null(tokens[0]);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_many_as_one_by_one),
		cmocka_unit_test(test_many_all_or_nothing),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
