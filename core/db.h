/* db: the only door to libpq — a connection pool, transactions, parameterized queries,
 * and SQLSTATE to HTTP status mapping. */
#ifndef FLEET_CORE_DB_H
#define FLEET_CORE_DB_H

#include <stdbool.h>

#include <jansson.h>
#include <libpq-fe.h>

#include "core/err.h"

struct db;	/* one pooled connection, opaque */

bool	 db_pool_init(const char *url, int size, struct err *e);
void	 db_pool_close(void);
/* Waits up to wait_ms for a free connection; 503 "db.unavailable" when none or when the
 * server cannot be reached (a broken connection is reset before use). */
struct db *db_acquire(int wait_ms, struct err *e);
/* Returns the connection; rolls back a transaction left open. */
void	 db_release(struct db *c);
void	 db_pool_stats(int *in_use, int *idle, int *size);

bool	 db_begin(struct db *c, struct err *e);
bool	 db_commit(struct db *c, struct err *e);
void	 db_rollback(struct db *c);

/* PQexecParams with text params (NULL = SQL NULL).  On success *out (when not NULL)
 * owns the result (PQclear it).  On failure fills e by SQLSTATE:
 * 23505/23503/23P01 -> 409, 22xxx/23514 -> 400, 40001/40P01 -> 503 "db.retry",
 * connection loss -> 503 "db.unavailable", else 500. */
bool	 db_exec(struct db *c, const char *sql, int n, const char *const *params,
	    PGresult **out, struct err *e);
/* Inside a transaction: queues sql (text and params copied) to be sent in one pipeline with
 * the transaction's next statement or with its COMMIT, saving its round trip; for writes
 * whose result nobody reads (the audit row).  A failure fails that statement or the
 * COMMIT with sql's own error (as db_exec's).  Outside a transaction: db_exec at once. */
bool	 db_exec_later(struct db *c, const char *sql, int n, const char *const *params,
	    struct err *e);
/* Runs fn inside one transaction on a pooled connection; retries once on
 * serialization failure or deadlock. */
typedef bool (*db_tx_fn)(struct db *c, void *arg, struct err *e);
bool	 db_tx(db_tx_fn fn, void *arg, struct err *e);

/* A claim: sql on a pooled connection in its own transaction, committed (and the
 * connection returned) before the caller reads *out, which it then owns. */
bool	 db_claim(const char *sql, int n, const char *const *params, PGresult **out,
	    struct err *e);
/* The delete of a row that others may still need: sql_used counts them (any -> 409 code,
 * in_use its message with %lld the count), else each of the n statements of sqls runs with
 * $1 = id, in order. */
bool	 db_delete_unused(struct db *c, const char *id, const char *sql_used, const char *code,
	    const char *in_use, const char *const *sqls, int n, struct err *e);

/* NOTIFY channel, payload: at once outside a transaction, after a successful COMMIT inside
 * one (dropped on rollback).  A NOTIFY inside a transaction makes the commits of all
 * notifying transactions wait for each other, WAL flush included (Postgres holds one lock
 * from pre-commit to the end): with fsync on that caps them at one flush each.  Sent in a
 * transaction of their own that commits without waiting for the flush. */
bool	 db_notify(struct db *c, const char *channel, const char *payload, struct err *e);

PGconn	*db_conn(struct db *c);	/* for LISTEN/NOTIFY and COPY only */

/* A text[] literal "{a,b}" of names for ANY($n::text[]) — names must already be validated
 * (no quoting).  NULL when names is NULL or holds "*" (every name): callers pass NULL as
 * "no filter".  malloc'd. */
char	*db_scope_array(const char *const *names, int n);

/* The get-by-id of every module: runs sql (its first column one JSON text) and parses the
 * first row into *out.  No row answers 404 with code and "<what> not found" (what names
 * the object: "cloud", "environment prod"); unparsable JSON 500. */
bool	 db_get_json(struct db *c, const char *sql, int n, const char *const *params,
	    const char *code, const char *what, json_t **out, struct err *e);
/* db_get_json of the row whose uuid id is sql's only parameter $1; an id that is no uuid
 * is the same 404 (code, "<what> not found") without asking the database. */
bool	 db_get_id_json(struct db *c, const char *sql, const char *id, const char *code,
	    const char *what, json_t **out, struct err *e);
/* The one number sql answers (first row, first column: a count). */
bool	 db_count(struct db *c, const char *sql, int n, const char *const *params,
	    long long *out, struct err *e);
/* Every row's first column (JSON text) as a new array in *out. */
bool	 db_list_json(struct db *c, const char *sql, int n, const char *const *params,
	    json_t **out, struct err *e);
/* What a list's after cursor is, for db_list_page's check. */
enum db_cursor {
	DB_CURSOR_UUID,		/* a uuid id (db_cursor_ok) */
	DB_CURSOR_SERIAL,	/* decimal digits, a bigint id (db_cursor_ok serial) */
	DB_CURSOR_TEXT,		/* not checked: the SQL compares it as text */
};
/* One page of a list, the one paging of every list function: checks the after cursor as
 * kind says, then db_list_json of sql with $1 = after ('' when NULL), $2 = limit, $3.. =
 * the nf filters (NULL: no filter), and last the db_scope_array of envs (NULL: every
 * environment; no environment at all takes envs non-NULL with nenvs 0).  nf <= 8. */
bool	 db_list_page(struct db *c, const char *sql, int limit, const char *after,
	    enum db_cursor kind, const char *const *filters, int nf, const char *const *envs,
	    int nenvs, json_t **out, struct err *e);
/* Whether s is a UUID (ids in paths are checked before they reach SQL's ::uuid). */
bool	 db_uuid_ok(const char *s);
/* A list's after cursor (decoded): NULL, or a uuid (serial: decimal digits, a bigint id);
 * else 400 api.bad_cursor at /query/after. */
bool	 db_cursor_ok(const char *after, bool serial, struct err *e);

/* Rows helpers: value or NULL for SQL NULL. */
const char *db_val(const PGresult *r, int row, int col);

#endif
