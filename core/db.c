/* db: a fixed pool of libpq connections guarded by one mutex; broken connections are
 * reset on acquire so fleetd survives a database restart without restarting itself.
 * Each connection prepares a statement the second time it runs it (parse and plan once
 * per connection, not per call); see db_exec. */
#include <ctype.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <uuid/uuid.h>

#include "core/db.h"
#include "core/log.h"

/* One statement text seen on a connection: prepared as "s<n>" from its second run on. */
struct stmt {
	uint64_t	 hash;
	char		*sql;		/* copy of the text */
	bool		 seen;		/* ran once, unnamed */
	bool		 prepared;	/* prepared as name on this connection */
	char		 name[12];
};

#define STMT_MAX 512	/* per connection; beyond that, statements run unprepared */

struct db {
	PGconn	*conn;
	bool	 busy;
	bool	 in_tx;
	char	 sqlstate[6];
	char	**notes;	/* "channel\0payload" to NOTIFY after this transaction commits */
	int	 nnotes;
	struct stmt *stmts;	/* statement cache of this connection */
	int	 nstmts;
	int	 renamed;	/* statements prepared again under a new name */
};

static void notes_drop(struct db *c);

static struct {
	pthread_mutex_t	 mu;
	pthread_cond_t	 cv;
	struct db	*conns;
	int		 size;
	int		 in_use;
	char		*url;
} pool = { .mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER };

static PGconn *
connect_one(void)
{
	PGconn *c = PQconnectdb(pool.url);

	if (PQstatus(c) != CONNECTION_OK) {
		PQfinish(c);
		return NULL;
	}
	PQclear(PQexec(c, "SET application_name = 'fleetd'; SET TimeZone = 'UTC'"));
	return c;
}

bool
db_pool_init(const char *url, int size, struct err *e)
{
	if (url == NULL || *url == '\0')
		return err_set(e, 500, "db.no_url", "database url is not set");
	pool.url = strdup(url);
	pool.size = size;
	pool.conns = calloc((size_t)size, sizeof(*pool.conns));
	/* Connections open lazily: fleetd starts (and /readyz answers 503) while the
	 * database is still away. */
	return true;
}

/* Forgets the statements prepared on c's connection (a new connection has none). */
static void
stmts_forget(struct db *c)
{
	for (int i = 0; i < c->nstmts; i++)
		free(c->stmts[i].sql);
	free(c->stmts);
	c->stmts = NULL;
	c->nstmts = 0;
	c->renamed = 0;
}

void
db_pool_close(void)
{
	pthread_mutex_lock(&pool.mu);
	for (int i = 0; i < pool.size; i++) {
		if (pool.conns[i].conn != NULL)
			PQfinish(pool.conns[i].conn);
		stmts_forget(&pool.conns[i]);
	}
	free(pool.conns);
	free(pool.url);
	pool.conns = NULL;
	pool.url = NULL;
	pool.size = 0;
	pthread_mutex_unlock(&pool.mu);
}

static void
deadline_after(struct timespec *ts, int ms)
{
	clock_gettime(CLOCK_REALTIME, ts);
	ts->tv_sec += ms / 1000;
	ts->tv_nsec += (long)(ms % 1000) * 1000000L;
	if (ts->tv_nsec >= 1000000000L) {
		ts->tv_sec++;
		ts->tv_nsec -= 1000000000L;
	}
}

struct db *
db_acquire(int wait_ms, struct err *e)
{
	struct timespec until;
	struct db *c = NULL;

	deadline_after(&until, wait_ms);
	pthread_mutex_lock(&pool.mu);
	while (c == NULL) {
		for (int i = 0; i < pool.size; i++) {
			if (!pool.conns[i].busy) {
				c = &pool.conns[i];
				c->busy = true;
				pool.in_use++;
				break;
			}
		}
		if (c == NULL &&
		    pthread_cond_timedwait(&pool.cv, &pool.mu, &until) != 0)
			break;
	}
	pthread_mutex_unlock(&pool.mu);
	if (c == NULL) {
		err_set(e, 503, "db.busy", "all database connections are busy");
		e->retry_after = 1;
		return NULL;
	}
	if (c->conn != NULL && PQstatus(c->conn) != CONNECTION_OK) {
		PQfinish(c->conn);
		c->conn = NULL;
	}
	if (c->conn == NULL) {
		stmts_forget(c);
		c->conn = connect_one();
	}
	if (c->conn == NULL) {
		db_release(c);
		err_set(e, 503, "db.unavailable", "the database is unavailable");
		e->retry_after = 2;
		return NULL;
	}
	return c;
}

void
db_release(struct db *c)
{
	if (c == NULL)
		return;
	if (c->in_tx && c->conn != NULL)
		db_rollback(c);
	c->in_tx = false;
	notes_drop(c);
	pthread_mutex_lock(&pool.mu);
	c->busy = false;
	pool.in_use--;
	pthread_cond_signal(&pool.cv);
	pthread_mutex_unlock(&pool.mu);
}

void
db_pool_stats(int *in_use, int *idle, int *size)
{
	pthread_mutex_lock(&pool.mu);
	*in_use = pool.in_use;
	*size = pool.size;
	*idle = pool.size - pool.in_use;
	pthread_mutex_unlock(&pool.mu);
}

static bool
fail_from_result(struct db *c, PGresult *r, struct err *e)
{
	const char *state = r ? PQresultErrorField(r, PG_DIAG_SQLSTATE) : NULL;
	const char *constraint = r ? PQresultErrorField(r, PG_DIAG_CONSTRAINT_NAME) : NULL;

	snprintf(c->sqlstate, sizeof(c->sqlstate), "%s", state ? state : "");
	if (PQstatus(c->conn) != CONNECTION_OK || state == NULL || strncmp(state, "08", 2) == 0 ||
	    strncmp(state, "57P", 3) == 0) {
		err_set(e, 503, "db.unavailable", "the database is unavailable");
		if (e)
			e->retry_after = 2;
	} else if (strcmp(state, "40001") == 0 || strcmp(state, "40P01") == 0) {
		err_set(e, 503, "db.retry", "the database asked to retry the transaction");
		if (e)
			e->retry_after = 1;
	} else if (strcmp(state, "23505") == 0 || strcmp(state, "23P01") == 0) {
		err_set(e, 409, "db.conflict", "the object already exists");
	} else if (strcmp(state, "23503") == 0) {
		err_set(e, 409, "db.in_use", "the object is referenced by others");
	} else if (strncmp(state, "22", 2) == 0 || strcmp(state, "23514") == 0 ||
	    strcmp(state, "23502") == 0) {
		err_set(e, 400, "db.bad_value", "a value is out of range or malformed");
	} else {
		err_set(e, 500, "db.error", "database error");
		log_error(NULL, "db", "query failed", "{s:s, s:s}", "sqlstate", state,
		    "error", r ? PQresultErrorMessage(r) : PQerrorMessage(c->conn));
	}
	if (e != NULL)
		snprintf(e->detail, sizeof(e->detail), "%s%s%s", state ? state : "",
		    constraint ? " " : "", constraint ? constraint : "");
	return false;
}

static uint64_t
fnv1a(const char *s)
{
	uint64_t h = 14695981039346656037ULL;

	for (; *s != '\0'; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ULL;
	return h;
}

/* Plain DML and queries only: transaction control, cursors and SET run as they come. */
static bool
preparable(const char *sql)
{
	static const char *const kw[] = { "SELECT", "INSERT", "UPDATE", "DELETE", "WITH" };

	while (isspace((unsigned char)*sql))
		sql++;
	for (size_t i = 0; i < sizeof(kw) / sizeof(kw[0]); i++)
		if (strncasecmp(sql, kw[i], strlen(kw[i])) == 0 &&
		    !isalnum((unsigned char)sql[strlen(kw[i])]))
			return true;
	return false;
}

/* The cache entry of sql on c, added (unprepared) on first sight; NULL when the cache is
 * full or sql is not worth preparing. */
static struct stmt *
stmt_find(struct db *c, const char *sql)
{
	uint64_t h;
	struct stmt *s;

	if (!preparable(sql))
		return NULL;
	h = fnv1a(sql);
	for (int i = 0; i < c->nstmts; i++)
		if (c->stmts[i].hash == h && strcmp(c->stmts[i].sql, sql) == 0)
			return &c->stmts[i];
	if (c->nstmts >= STMT_MAX)
		return NULL;
	if (c->stmts == NULL && (c->stmts = calloc(STMT_MAX, sizeof(*c->stmts))) == NULL)
		return NULL;
	s = &c->stmts[c->nstmts];
	if ((s->sql = strdup(sql)) == NULL)
		return NULL;
	s->hash = h;
	s->seen = s->prepared = false;
	snprintf(s->name, sizeof(s->name), "s%d", c->nstmts);
	c->nstmts++;
	return s;
}

/* Runs sql: a statement seen before on this connection is prepared once (parsed and
 * planned by the server once) and executed by name from then on; one seen for the first
 * time runs unnamed, so a statement run only once costs no extra round trip.  *stmt is
 * the prepared entry used, NULL when the statement ran unnamed. */
static PGresult *
exec_cached(struct db *c, const char *sql, int n, const char *const *params,
	    struct stmt **used)
{
	struct stmt *s = stmt_find(c, sql);

	*used = NULL;
	if (s == NULL || (!s->prepared && !s->seen)) {
		if (s != NULL)
			s->seen = true;
		return PQexecParams(c->conn, sql, n, NULL, params, NULL, NULL, 0);
	}
	if (!s->prepared) {
		PGresult *p = PQprepare(c->conn, s->name, sql, n, NULL);

		if (p == NULL || PQresultStatus(p) != PGRES_COMMAND_OK)
			return p;	/* the statement's own error (syntax, missing table) */
		PQclear(p);
		s->prepared = true;
	}
	*used = s;
	return PQexecPrepared(c->conn, s->name, n, params, NULL, NULL, 0);
}

bool
db_exec(struct db *c, const char *sql, int n, const char *const *params, PGresult **out,
	struct err *e)
{
	struct stmt *used;
	PGresult *r = exec_cached(c, sql, n, params, &used);
	ExecStatusType st = r ? PQresultStatus(r) : PGRES_FATAL_ERROR;

	if (out != NULL)
		*out = NULL;
	if (used != NULL && st == PGRES_FATAL_ERROR &&
	    PQresultErrorField(r, PG_DIAG_SQLSTATE) != NULL &&
	    strcmp(PQresultErrorField(r, PG_DIAG_SQLSTATE), "0A000") == 0) {
		/* "cached plan must not change result type": a table changed under the
		 * prepared statement (a migration).  Prepare it again under a new name; run
		 * it again unless a transaction is now aborted. */
		snprintf(used->name, sizeof(used->name), "s%d", c->nstmts + ++c->renamed * STMT_MAX);
		used->prepared = false;
		if (!c->in_tx) {
			PQclear(r);
			r = exec_cached(c, sql, n, params, &used);
			st = r ? PQresultStatus(r) : PGRES_FATAL_ERROR;
		}
	}
	if (st != PGRES_COMMAND_OK && st != PGRES_TUPLES_OK) {
		fail_from_result(c, r, e);
		PQclear(r);
		return false;
	}
	if (out != NULL)
		*out = r;
	else
		PQclear(r);
	return true;
}

static void
notes_drop(struct db *c)
{
	for (int i = 0; i < c->nnotes; i++)
		free(c->notes[i]);
	free(c->notes);
	c->notes = NULL;
	c->nnotes = 0;
}

static bool
notify_now(struct db *c, const char *channel, const char *payload, struct err *e)
{
	const char *p[2] = { channel, payload ? payload : "" };

	return db_exec(c, "SELECT pg_notify($1, $2)", 2, p, NULL, e);
}

bool
db_notify(struct db *c, const char *channel, const char *payload, struct err *e)
{
	size_t lc = strlen(channel), lp = payload ? strlen(payload) : 0;
	char *note, **grown;

	if (!c->in_tx)
		return notify_now(c, channel, payload, e);
	for (int i = 0; i < c->nnotes; i++)	/* Postgres folds repeats too */
		if (strcmp(c->notes[i], channel) == 0 &&
		    strcmp(c->notes[i] + lc + 1, payload ? payload : "") == 0)
			return true;
	if ((note = malloc(lc + lp + 2)) == NULL ||
	    (grown = realloc(c->notes, sizeof(*grown) * (size_t)(c->nnotes + 1))) == NULL) {
		free(note);
		return err_set(e, 500, "db.oom", "out of memory");
	}
	memcpy(note, channel, lc + 1);
	memcpy(note + lc + 1, payload ? payload : "", lp + 1);
	c->notes = grown;
	c->notes[c->nnotes++] = note;
	return true;
}

bool
db_begin(struct db *c, struct err *e)
{
	if (!db_exec(c, "BEGIN", 0, NULL, NULL, e))
		return false;
	c->in_tx = true;
	return true;
}

bool
db_commit(struct db *c, struct err *e)
{
	bool ok = db_exec(c, "COMMIT", 0, NULL, NULL, e);

	c->in_tx = false;
	/* The transaction is durable: a NOTIFY that cannot be sent now is only a wake-up
	 * lost (listeners also wake on their timers), not a failure of the commit. */
	for (int i = 0; ok && i < c->nnotes; i++) {
		struct err ignored = { 0 };

		notify_now(c, c->notes[i], c->notes[i] + strlen(c->notes[i]) + 1, &ignored);
	}
	notes_drop(c);
	return ok;
}

void
db_rollback(struct db *c)
{
	PGresult *r;

	if (c == NULL || c->conn == NULL)
		return;
	r = PQexec(c->conn, "ROLLBACK");
	PQclear(r);
	c->in_tx = false;
	notes_drop(c);
}

bool
db_tx(db_tx_fn fn, void *arg, struct err *e)
{
	for (int attempt = 0; attempt < 2; attempt++) {
		struct db *c = db_acquire(5000, e);
		bool ok;

		if (c == NULL)
			return false;
		err_clear(e);
		ok = db_begin(c, e) && fn(c, arg, e) && db_commit(c, e);
		if (!ok)
			db_rollback(c);
		db_release(c);
		if (ok)
			return true;
		if (e == NULL || strcmp(e->code, "db.retry") != 0)
			return false;
	}
	return false;
}

PGconn *
db_conn(struct db *c)
{
	return c->conn;
}

const char *
db_val(const PGresult *r, int row, int col)
{
	if (PQgetisnull(r, row, col))
		return NULL;
	return PQgetvalue(r, row, col);
}

char *
db_scope_array(const char *const *names, int n)
{
	size_t len = 3;
	char *s;

	if (names == NULL)
		return NULL;
	for (int i = 0; i < n; i++) {
		if (strcmp(names[i], "*") == 0)
			return NULL;
		len += strlen(names[i]) + 1;
	}
	if ((s = calloc(1, len)) == NULL)
		abort();
	strcat(s, "{");
	for (int i = 0; i < n; i++) {
		if (i)
			strcat(s, ",");
		strcat(s, names[i]);
	}
	strcat(s, "}");
	return s;
}

bool
db_get_json(struct db *c, const char *sql, int n, const char *const *params, const char *code,
	    const char *what, json_t **out, struct err *e)
{
	PGresult *r = NULL;
	bool ok = false;

	if (!db_exec(c, sql, n, params, &r, e))
		goto cleanup;
	if (PQntuples(r) == 0) {
		err_set(e, 404, code, "%s not found", what);
		goto cleanup;
	}
	*out = json_loads(PQgetvalue(r, 0, 0), 0, NULL);
	ok = *out != NULL || err_set(e, 500, "db.bad_row", "cannot read the %s", what);
cleanup:
	PQclear(r);
	return ok;
}

bool
db_get_id_json(struct db *c, const char *sql, const char *id, const char *code,
    const char *what, json_t **out, struct err *e)
{
	const char *p[1] = { id };

	if (!db_uuid_ok(id))
		return err_set(e, 404, code, "%s not found", what);
	return db_get_json(c, sql, 1, p, code, what, out, e);
}

bool
db_count(struct db *c, const char *sql, int n, const char *const *params, long long *out,
    struct err *e)
{
	PGresult *r = NULL;

	*out = 0;
	if (!db_exec(c, sql, n, params, &r, e))
		return false;
	if (PQntuples(r) > 0)
		*out = atoll(PQgetvalue(r, 0, 0));
	PQclear(r);
	return true;
}

bool
db_claim(const char *sql, int n, const char *const *params, PGresult **out, struct err *e)
{
	struct db *c = db_acquire(5000, e);
	bool ok;

	*out = NULL;
	if (c == NULL)
		return false;
	ok = db_begin(c, e) && db_exec(c, sql, n, params, out, e) && db_commit(c, e);
	if (!ok) {
		db_rollback(c);
		PQclear(*out);
		*out = NULL;
	}
	db_release(c);
	return ok;
}

bool
db_delete_unused(struct db *c, const char *id, const char *sql_used, const char *code,
    const char *in_use, const char *const *sqls, int n, struct err *e)
{
	const char *p[1] = { id };
	long long used;

	if (!db_count(c, sql_used, 1, p, &used, e))
		return false;
	if (used > 0)
		return err_set(e, 409, code, in_use, used);
	for (int i = 0; i < n; i++)
		if (!db_exec(c, sqls[i], 1, p, NULL, e))
			return false;
	return true;
}

bool
db_list_json(struct db *c, const char *sql, int n, const char *const *params, json_t **out,
	     struct err *e)
{
	PGresult *r = NULL;

	if (!db_exec(c, sql, n, params, &r, e))
		return false;
	*out = json_array();
	for (int i = 0; i < PQntuples(r); i++)
		json_array_append_new(*out, json_loads(PQgetvalue(r, i, 0), 0, NULL));
	PQclear(r);
	return true;
}

bool
db_list_page(struct db *c, const char *sql, int limit, const char *after,
	     enum db_cursor kind, const char *const *filters, int nf, const char *const *envs,
	     int nenvs, json_t **out, struct err *e)
{
	const char *p[11];
	char lim[16], *lit;
	bool ok;

	if (nf < 0 || nf > 8)
		return err_set(e, 500, "db.error", "too many list filters (%d)", nf);
	if (kind != DB_CURSOR_TEXT && !db_cursor_ok(after, kind == DB_CURSOR_SERIAL, e))
		return false;
	lit = db_scope_array(envs, nenvs);
	snprintf(lim, sizeof(lim), "%d", limit);
	p[0] = after ? after : "";
	p[1] = lim;
	for (int i = 0; i < nf; i++)
		p[2 + i] = filters[i];
	p[2 + nf] = lit;
	ok = db_list_json(c, sql, 3 + nf, p, out, e);
	free(lit);
	return ok;
}

bool
db_uuid_ok(const char *s)
{
	uuid_t u;

	return s != NULL && uuid_parse(s, u) == 0;
}

bool
db_cursor_ok(const char *after, bool serial, struct err *e)
{
	if (after == NULL || (serial ? strspn(after, "0123456789") == strlen(after) :
	    db_uuid_ok(after)))
		return true;
	return err_field(e, 400, "api.bad_cursor", "/query/after",
	    "after is not a cursor returned by this list");
}
