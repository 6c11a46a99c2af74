/* test_db_pipeline: core/db.c's round-trip savings (issue 17) keep a transaction's meaning.
 * db_begin sends nothing (BEGIN goes in one pipeline with the first statement), statements
 * queued by db_exec_later go with the next statement or with COMMIT, and COMMIT carries the
 * notifications queued for after it.  Checked against a scratch database: what commits,
 * what a failure rolls back (a queued statement's failure fails the COMMIT with its own
 * error and leaves the connection usable), what a rollback drops, which notifications
 * arrive, and every path of the statement cache inside a pipeline (unnamed, prepare,
 * prepared). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/select.h>

#include <libpq-fe.h>

#include "core/db.h"
#include "tests/harness/harness.h"

static char dburl[512];
static PGconn *listener;

static const char sql_ins[] = "INSERT INTO t (id, v) VALUES ($1::int, $2)";

static int
setup(void **state)
{
	struct err e = { 0 };

	(void)state;
	harness_db_create("dbpipe", dburl, sizeof(dburl));
	harness_sql("CREATE TABLE t (id int PRIMARY KEY, v text)");
	if (!db_pool_init(dburl, 1, &e))	/* one connection: every test reuses it */
		return -1;
	listener = PQconnectdb(dburl);
	if (PQstatus(listener) != CONNECTION_OK)
		return -1;
	PQclear(PQexec(listener, "LISTEN pipe_test"));
	return 0;
}

static int
teardown(void **state)
{
	PQfinish(listener);
	db_pool_close();
	return harness_group_teardown(state);
}

static struct db *
acquire(void)
{
	struct err e = { 0 };
	struct db *c = db_acquire(5000, &e);

	if (c == NULL)
		fail_msg("db_acquire: %s", e.msg);
	return c;
}

static void
ins(struct db *c, bool later, int id, const char *v)
{
	struct err e = { 0 };
	char n[16];
	const char *p[2] = { n, v };

	snprintf(n, sizeof(n), "%d", id);
	if (!(later ? db_exec_later(c, sql_ins, 2, p, &e) : db_exec(c, sql_ins, 2, p, NULL, &e)))
		fail_msg("insert %d: %s", id, e.msg);
}

/* The payloads of the notifications that arrived on the listener within ms, "a,b,". */
static void
notes(int ms, char *out, size_t n)
{
	PGnotify *nt;
	fd_set fds;
	struct timeval tv = { ms / 1000, (ms % 1000) * 1000 };

	out[0] = '\0';
	FD_ZERO(&fds);
	FD_SET(PQsocket(listener), &fds);
	select(PQsocket(listener) + 1, &fds, NULL, NULL, &tv);
	PQconsumeInput(listener);
	while ((nt = PQnotifies(listener)) != NULL) {
		snprintf(out + strlen(out), n - strlen(out), "%s,", nt->extra);
		PQfreemem(nt);
	}
}

/* The connection is out of any transaction: a statement sees committed data only. */
static void
usable(struct db *c)
{
	struct err e = { 0 };
	PGresult *r = NULL;

	assert_true(db_exec(c, "SELECT 1", 0, NULL, &r, &e));
	PQclear(r);
	assert_int_equal(PQtransactionStatus(db_conn(c)), PQTRANS_IDLE);
}

/* Statements, queued ones and notifications of one transaction all commit; the queued
 * one runs before the statement that follows it (it sees its row). */
static void
test_commit_with_queued(void **state)
{
	struct err e = { 0 };
	struct db *c = acquire();
	char got[256];
	long long n = 0;
	const char *p[1] = { "2" };

	(void)state;
	/* three transactions of the same statements: unnamed, then prepare, then prepared —
	 * each path once as a transaction's first (pipelined) statement */
	for (int round = 0; round < 3; round++) {
		int base = 100 * (round + 1);

		assert_true(db_begin(c, &e));
		ins(c, false, base + 1, "first");
		ins(c, true, base + 2, "queued");
		p[0] = (const char *[]){ "102", "202", "302" }[round];
		assert_true(db_count(c, "SELECT count(*) FROM t WHERE id = $1::int", 1, p, &n, &e));
		assert_int_equal(n, 1);	/* the queued insert went first */
		ins(c, true, base + 3, "queued at commit");
		assert_true(db_notify(c, "pipe_test", "committed", &e));
		assert_true(db_commit(c, &e));
	}
	assert_int_equal(harness_sql_long("SELECT count(*) FROM t WHERE id IN (101, 102, 103,"
	    " 201, 202, 203, 301, 302, 303)"), 9);
	notes(2000, got, sizeof(got));
	assert_non_null(strstr(got, "committed,"));
	usable(c);
	/* a transaction whose first statement is a queued one */
	assert_true(db_begin(c, &e));
	ins(c, true, 401, "only queued");
	assert_true(db_commit(c, &e));
	assert_int_equal(harness_sql_long("SELECT count(*) FROM t WHERE id = 401"), 1);
	/* nothing ran: nothing to commit, the notification still goes */
	assert_true(db_begin(c, &e));
	assert_true(db_notify(c, "pipe_test", "empty", &e));
	assert_true(db_commit(c, &e));
	notes(2000, got, sizeof(got));
	assert_non_null(strstr(got, "empty,"));
	usable(c);
	db_release(c);
}

/* A queued statement that fails fails the COMMIT with its own error: nothing of the
 * transaction stays, its notification is not sent, the connection is usable. */
static void
test_queued_failure_fails_commit(void **state)
{
	struct err e = { 0 };
	struct db *c = acquire();
	char got[256];

	(void)state;
	notes(100, got, sizeof(got));	/* drain */
	assert_true(db_begin(c, &e));
	ins(c, false, 501, "kept?");
	ins(c, true, 101, "duplicate");	/* primary key taken by test_commit_with_queued */
	assert_true(db_notify(c, "pipe_test", "failed", &e));
	assert_false(db_commit(c, &e));
	assert_int_equal(e.status, 409);
	assert_string_equal(e.code, "db.conflict");
	assert_int_equal(harness_sql_long("SELECT count(*) FROM t WHERE id = 501"), 0);
	usable(c);
	notes(500, got, sizeof(got));
	assert_null(strstr(got, "failed"));
	/* a queued failure seen by the next statement: that statement fails with it */
	err_clear(&e);
	assert_true(db_begin(c, &e));
	ins(c, true, 101, "duplicate");
	assert_false(db_exec(c, "SELECT 1", 0, NULL, NULL, &e));
	assert_string_equal(e.code, "db.conflict");
	db_rollback(c);
	usable(c);
	db_release(c);
}

/* A rollback drops what was queued; a first statement that fails leaves nothing open. */
static void
test_rollback_and_first_failure(void **state)
{
	struct err e = { 0 };
	struct db *c = acquire();

	(void)state;
	assert_true(db_begin(c, &e));
	ins(c, true, 601, "dropped");
	db_rollback(c);
	assert_int_equal(harness_sql_long("SELECT count(*) FROM t WHERE id = 601"), 0);
	usable(c);
	assert_true(db_begin(c, &e));
	assert_false(db_exec(c, "SELECT no_such_column FROM t", 0, NULL, NULL, &e));
	db_rollback(c);
	usable(c);
	/* released inside a transaction: rolled back (db_release), queued rows dropped */
	assert_true(db_begin(c, &e));
	ins(c, false, 602, "released");
	ins(c, true, 603, "released");
	db_release(c);
	c = acquire();
	usable(c);
	assert_int_equal(harness_sql_long("SELECT count(*) FROM t WHERE id IN (602, 603)"), 0);
	/* db_conn: the caller's own statements run inside the transaction, after the queue */
	assert_true(db_begin(c, &e));
	ins(c, true, 604, "queued");
	PQclear(PQexec(db_conn(c), "INSERT INTO t (id, v) VALUES (605, 'direct')"));
	assert_true(db_commit(c, &e));
	assert_int_equal(harness_sql_long("SELECT count(*) FROM t WHERE id IN (604, 605)"), 2);
	db_release(c);
}

/* synchronous_commit of c's connection, as its next transaction would commit. */
static void
durable(struct db *c)
{
	struct err e = { 0 };
	PGresult *r = NULL;

	assert_true(db_exec(c, "SELECT current_setting('synchronous_commit')", 0, NULL, &r, &e));
	assert_string_equal(PQgetvalue(r, 0, 0), "on");
	PQclear(r);
}

/* A notification's own transaction commits without waiting for the disk; that setting
 * ends with it, in a pipeline after COMMIT and alone outside a transaction: the
 * connection's next commits are durable, and the notifications arrive. */
static void
test_notify_leaves_commits_durable(void **state)
{
	struct err e = { 0 };
	struct db *c = acquire();
	char got[256];

	(void)state;
	notes(100, got, sizeof(got));	/* drain */
	for (int round = 0; round < 3; round++) {	/* unnamed, prepare, prepared */
		assert_true(db_begin(c, &e));
		ins(c, false, 700 + round, "notified");
		assert_true(db_notify(c, "pipe_test", "in-tx", &e));
		assert_true(db_notify(c, "pipe_test", "in-tx-2", &e));
		assert_true(db_commit(c, &e));
		durable(c);
		assert_true(db_notify(c, "pipe_test", "alone", &e));
		durable(c);
		notes(2000, got, sizeof(got));
		assert_non_null(strstr(got, "in-tx,"));
		assert_non_null(strstr(got, "in-tx-2,"));
		assert_non_null(strstr(got, "alone,"));
	}
	assert_int_equal(harness_sql_long("SELECT count(*) FROM t WHERE id IN (700, 701, 702)"),
	    3);
	usable(c);
	db_release(c);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_commit_with_queued),
		cmocka_unit_test(test_queued_failure_fails_commit),
		cmocka_unit_test(test_rollback_and_first_failure),
		cmocka_unit_test(test_notify_leaves_commits_durable),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
