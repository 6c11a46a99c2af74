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

struct later;

struct db {
	PGconn	*conn;
	bool	 busy;
	bool	 in_tx;
	bool	 begin_pending;	/* BEGIN not sent yet: it goes with the next statement */
	struct later *later;	/* db_exec_later: sent with the next statement or COMMIT */
	int	 nlater;
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

/* The cache key of a statement text: its length and its first and last 64 bytes (a
 * byte-wise hash of the whole 2 KB job statements was 3 % of fleetd's CPU on GET
 * /v1/jobs/{id}, bench/profiles/get.txt); equal keys are then compared in full. */
static uint64_t
stmt_hash(const char *s, size_t n)
{
	uint64_t h = 14695981039346656037ULL ^ n;
	size_t head = n < 64 ? n : 64, tail = n < 128 ? n - head : 64;

	for (size_t i = 0; i < head; i++)
		h = (h ^ (unsigned char)s[i]) * 1099511628211ULL;
	for (size_t i = n - tail; i < n; i++)
		h = (h ^ (unsigned char)s[i]) * 1099511628211ULL;
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
	size_t n;
	struct stmt *s;

	if (!preparable(sql))
		return NULL;
	n = strlen(sql);
	h = stmt_hash(sql, n);
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

/* The results of one pipeline step: the first result kept, the rest (and the NULL that
 * ends the step) read and dropped. */
static PGresult *
pipe_result(PGconn *conn)
{
	PGresult *r = PQgetResult(conn), *more;

	if (r == NULL)
		return NULL;
	while ((more = PQgetResult(conn)) != NULL)
		PQclear(more);
	return r;
}

static bool
is_ok(const PGresult *r)
{
	return r != NULL && (PQresultStatus(r) == PGRES_COMMAND_OK ||
	    PQresultStatus(r) == PGRES_TUPLES_OK);
}

/* One statement of a pipeline (several statements sent at once, one round trip). */
struct step {
	const char		*sql;
	int			 n;
	const char *const	*params;
	bool			 sync_after;	/* a sync point follows: a failure above it does
						 * not abort what comes after */
	struct stmt		*s;		/* its cache entry; NULL or unprepared: unnamed */
	bool			 prepare;	/* its PREPARE goes just before it */
	PGresult		*r;		/* its result, or its PREPARE's error */
};

/* Sends the steps (the last has sync_after) as one pipeline and reads every result into
 * the steps; statements are prepared as exec_cached would.  False when the connection
 * failed: then no step has a result. */
static bool
pipeline_run(struct db *c, struct step *st, int n)
{
	PGconn *conn = c->conn;
	bool sent = true;

	if (!PQenterPipelineMode(conn))
		return false;
	for (int i = 0; i < n && sent; i++) {
		struct step *t = &st[i];
		bool named;

		t->s = stmt_find(c, t->sql);
		t->prepare = t->s != NULL && t->s->seen && !t->s->prepared;
		if (t->s != NULL)
			t->s->seen = true;
		named = t->s != NULL && (t->s->prepared || t->prepare);
		if (t->prepare) {
			sent = PQsendPrepare(conn, t->s->name, t->sql, t->n, NULL);
			t->s->prepared = true;	/* undone below if the PREPARE fails */
		}
		sent = sent && (named ?
		    PQsendQueryPrepared(conn, t->s->name, t->n, t->params, NULL, NULL, 0) :
		    PQsendQueryParams(conn, t->sql, t->n, NULL, t->params, NULL, NULL, 0)) &&
		    (!t->sync_after || PQpipelineSync(conn));
		if (!named)
			t->s = NULL;
	}
	for (int i = 0; i < n && sent; i++) {
		struct step *t = &st[i];
		PGresult *rp = t->prepare ? pipe_result(conn) : NULL, *x;

		t->r = pipe_result(conn);
		if (t->prepare && !is_ok(rp)) {
			t->s->prepared = false;
			PQclear(t->r);
			t->r = rp;
		} else {
			PQclear(rp);
		}
		if (t->sync_after && (x = PQgetResult(conn)) != NULL)
			PQclear(x);
	}
	if (!PQexitPipelineMode(conn)) {
		/* results left unread (a connection lost mid-way): never reuse it */
		PQfinish(conn);
		c->conn = NULL;
		sent = false;
	}
	if (!sent) {
		for (int i = 0; i < n; i++) {
			PQclear(st[i].r);
			st[i].r = NULL;
			if (st[i].prepare && st[i].s != NULL)
				st[i].s->prepared = false;
		}
	}
	return sent;
}

/* Statements queued by db_exec_later, in order. */
struct later {
	char		*sql;
	int		 n;
	const char	**params;	/* the start of the one allocation */
};

static void
later_drop(struct db *c)
{
	for (int i = 0; i < c->nlater; i++)
		free((void *)c->later[i].params);
	free(c->later);
	c->later = NULL;
	c->nlater = 0;
}

/* The steps that must run before the next statement of the transaction: the deferred
 * BEGIN and the statements db_exec_later queued.  Fills st (room for 1 + c->nlater),
 * returns how many. */
static int
steps_before(struct db *c, struct step *st)
{
	int k = 0;

	if (c->begin_pending)
		st[k++] = (struct step){ .sql = "BEGIN" };
	for (int i = 0; i < c->nlater; i++)
		st[k++] = (struct step){ .sql = c->later[i].sql, .n = c->later[i].n,
		    .params = c->later[i].params };
	return k;
}

/* A statement that goes after the deferred BEGIN and queued statements, in one pipeline
 * with them.  The result is the first failed step's or the statement's. */
static PGresult *
exec_pipelined(struct db *c, const char *sql, int n, const char *const *params,
	       struct stmt **used)
{
	struct step *st = calloc((size_t)c->nlater + 2, sizeof(*st));
	PGresult *r = NULL;
	int k;

	if (st == NULL)
		return NULL;
	k = steps_before(c, st);
	st[k++] = (struct step){ .sql = sql, .n = n, .params = params, .sync_after = true };
	c->begin_pending = false;
	if (pipeline_run(c, st, k)) {
		for (int i = 0; i < k; i++) {
			if (r == NULL && (!is_ok(st[i].r) || i == k - 1)) {
				r = st[i].r;
				*used = i == k - 1 ? st[i].s : NULL;
			} else {
				PQclear(st[i].r);
			}
		}
	}
	later_drop(c);
	free(st);
	return r;
}

/* Sends the BEGIN and queued statements now, alone (a caller about to use the connection
 * directly). */
static bool
before_flush(struct db *c)
{
	struct stmt *used = NULL;
	PGresult *r;
	bool ok;

	if (!c->begin_pending && c->nlater == 0)
		return true;
	r = exec_pipelined(c, "SELECT 1", 0, NULL, &used);
	ok = is_ok(r);
	PQclear(r);
	return ok;
}

/* Runs sql: a statement seen before on this connection is prepared once (parsed and
 * planned by the server once) and executed by name from then on; one seen for the first
 * time runs unnamed, so a statement run only once costs no extra round trip.  *stmt is
 * the prepared entry used, NULL when the statement ran unnamed.  The first statement of
 * a transaction carries its BEGIN, and a statement after db_exec_later the queued ones, in
 * one pipeline (exec_pipelined). */
static PGresult *
exec_cached(struct db *c, const char *sql, int n, const char *const *params,
	    struct stmt **used)
{
	struct stmt *s;

	*used = NULL;
	if (c->begin_pending || c->nlater > 0)
		return exec_pipelined(c, sql, n, params, used);
	s = stmt_find(c, sql);
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

/* A notification in a transaction of its own whose commit does not wait for the disk.
 * Postgres gives a notifying transaction an xid, and holds the lock that serializes every
 * notifying commit of the database from pre-commit through the WAL flush: with
 * synchronous_commit on, each wake-up waited for the flushes of all the others, one at a
 * time (at a few thousand submissions a second the POSTs queued behind it).  The
 * transaction writes nothing but the notification, so a crash loses nothing durable
 * (listeners count a reconnect as a change).  set_config(..., true) lasts until that
 * transaction ends: the connection's next commits are durable again. */
static const char sql_notify[] = "SELECT pg_notify($1, $2),"
    " set_config('synchronous_commit', 'off', true)";

static bool
notify_now(struct db *c, const char *channel, const char *payload, struct err *e)
{
	const char *p[2] = { channel, payload ? payload : "" };

	return db_exec(c, sql_notify, 2, p, NULL, e);
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

/* BEGIN is not sent here: it goes in one pipeline with the transaction's first statement
 * (exec_cached), which saves every write transaction a round trip. */
bool
db_begin(struct db *c, struct err *e)
{
	if (c->conn == NULL || PQstatus(c->conn) != CONNECTION_OK) {
		err_set(e, 503, "db.unavailable", "the database is unavailable");
		if (e)
			e->retry_after = 2;
		return false;
	}
	c->in_tx = true;
	c->begin_pending = true;
	return true;
}

/* Queued statements, COMMIT and the notifications for after it go in one pipeline: one
 * round trip.  A sync point follows COMMIT, so each pg_notify runs in a transaction of its
 * own, outside the commit (see db_notify).  A COMMIT that fails still sends them: a
 * wake-up for nothing, never a lost one.  A queued statement that fails leaves COMMIT
 * unrun and the transaction aborted: it is rolled back here. */
bool
db_commit(struct db *c, struct err *e)
{
	struct step *st;
	const char **np;
	PGresult *fail = NULL;
	bool ok = false, sent, before_commit = false;
	int k, at;

	if (c->begin_pending && c->nlater == 0) {	/* nothing ran: nothing to commit */
		c->begin_pending = false;
		c->in_tx = false;
		for (int i = 0; i < c->nnotes; i++) {
			struct err ignored = { 0 };

			notify_now(c, c->notes[i], c->notes[i] + strlen(c->notes[i]) + 1,
			    &ignored);
		}
		notes_drop(c);
		return true;
	}
	st = calloc((size_t)(c->nlater + 2 + c->nnotes), sizeof(*st));
	np = calloc((size_t)(2 * c->nnotes + 1), sizeof(*np));
	if (st == NULL || np == NULL) {
		free(st);
		free(np);
		later_drop(c);
		db_rollback(c);
		return err_set(e, 500, "db.oom", "out of memory");
	}
	k = steps_before(c, st);
	at = k;
	st[k++] = (struct step){ .sql = "COMMIT", .sync_after = true };
	for (int i = 0; i < c->nnotes; i++) {
		np[2 * i] = c->notes[i];
		np[2 * i + 1] = c->notes[i] + strlen(c->notes[i]) + 1;
		st[k++] = (struct step){ .sql = sql_notify, .n = 2,
		    .params = &np[2 * i], .sync_after = i == c->nnotes - 1 };
	}
	c->begin_pending = false;
	sent = pipeline_run(c, st, k);
	for (int i = 0; sent && i <= at && fail == NULL; i++)
		if (!is_ok(st[i].r)) {
			fail = st[i].r;
			st[i].r = NULL;
			before_commit = i < at;
		}
	ok = sent && fail == NULL;
	if (!ok)
		fail_from_result(c, fail, e);
	for (int i = 0; i < k; i++)
		PQclear(st[i].r);
	PQclear(fail);
	free(st);
	free(np);
	later_drop(c);
	c->in_tx = false;
	if (before_commit)
		PQclear(PQexec(c->conn, "ROLLBACK"));
	notes_drop(c);
	return ok;
}

/* sql in a pipeline with the transaction's next statement or its COMMIT, after those
 * queued before it (at once outside a transaction).  A failure then fails that
 * statement or the COMMIT, with sql's own error. */
bool
db_exec_later(struct db *c, const char *sql, int n, const char *const *params,
	      struct err *e)
{
	size_t len = strlen(sql) + 1, size = sizeof(char *) * (size_t)n + len;
	struct later *grown, *l;
	char *mem, *w;

	if (!c->in_tx)
		return db_exec(c, sql, n, params, NULL, e);
	for (int i = 0; i < n; i++)
		size += params[i] ? strlen(params[i]) + 1 : 0;
	if ((mem = malloc(size)) == NULL ||
	    (grown = realloc(c->later, sizeof(*grown) * (size_t)(c->nlater + 1))) == NULL) {
		free(mem);
		return err_set(e, 500, "db.oom", "out of memory");
	}
	c->later = grown;
	l = &c->later[c->nlater++];
	/* one block (freed as params): the parameter pointers, the text, their values */
	l->params = (const char **)(void *)mem;
	l->sql = mem + sizeof(char *) * (size_t)n;
	memcpy(l->sql, sql, len);
	l->n = n;
	w = l->sql + len;
	for (int i = 0; i < n; i++) {
		if (params[i] == NULL) {
			l->params[i] = NULL;
			continue;
		}
		memcpy(w, params[i], strlen(params[i]) + 1);
		l->params[i] = w;
		w += strlen(params[i]) + 1;
	}
	return true;
}

void
db_rollback(struct db *c)
{
	PGresult *r;

	if (c == NULL || c->conn == NULL)
		return;
	later_drop(c);
	if (c->begin_pending) {		/* nothing was sent */
		c->begin_pending = false;
	} else {
		r = PQexec(c->conn, "ROLLBACK");
		PQclear(r);
	}
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
	before_flush(c);	/* the caller's statements run inside the transaction */
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
