/* events: seq is given to committed job_events rows only, by one sequencer at a time, so
 * the order of seq is the order in which readers can see rows: "seq > N" never skips a row
 * that commits later (job_events.id, taken at insert, can). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "queue/jobs/events.h"

static bool
sequence_tx(struct db *c, void *arg, struct err *e)
{
	static const char sql_lock[] = "SELECT last FROM job_event_seq FOR UPDATE";
	/* a fresh statement, so its snapshot sees the previous sequencer's commit */
	static const char sql_number[] =
	    "WITH s AS (SELECT id, $1::bigint + row_number() OVER (ORDER BY id) AS n"
	    "  FROM job_events WHERE seq IS NULL ORDER BY id LIMIT 10000),"
	    " u AS (UPDATE job_events e SET seq = s.n FROM s WHERE e.id = s.id RETURNING e.seq)"
	    " SELECT coalesce(max(seq), $1::bigint), count(*) FROM u";
	static const char sql_last[] = "UPDATE job_event_seq SET last = $1::bigint";
	long long *res = arg;	/* [0] head, [1] numbered */
	PGresult *r = NULL;
	char base[24], head[24];
	const char *p[1];
	bool ok = false;

	if (!db_exec(c, sql_lock, 0, NULL, &r, e))
		goto cleanup;
	snprintf(base, sizeof(base), "%s", PQntuples(r) ? PQgetvalue(r, 0, 0) : "0");
	PQclear(r);
	r = NULL;
	p[0] = base;
	if (!db_exec(c, sql_number, 1, p, &r, e))
		goto cleanup;
	res[0] = strtoll(PQgetvalue(r, 0, 0), NULL, 10);
	res[1] = strtoll(PQgetvalue(r, 0, 1), NULL, 10);
	if (res[1] > 0) {
		snprintf(head, sizeof(head), "%lld", res[0]);
		p[0] = head;
		if (!db_exec(c, sql_last, 1, p, NULL, e))
			goto cleanup;
	}
	ok = true;
cleanup:
	PQclear(r);
	return ok;
}

bool
events_sequence(long long *head, int *numbered, struct err *e)
{
	static const char sql_any[] = "SELECT EXISTS (SELECT 1 FROM job_events WHERE seq IS NULL)";
	long long res[2] = { 0, 0 };
	struct db *c = db_acquire(5000, e);
	PGresult *r = NULL;
	char h[24];
	bool ok = false, any;

	*numbered = 0;
	if (c == NULL)
		return false;
	/* the usual case, nothing new: one read, no transaction, no WAL */
	if (!db_exec(c, sql_any, 0, NULL, &r, e))
		goto cleanup;
	any = strcmp(PQgetvalue(r, 0, 0), "t") == 0;
	if (any) {
		if (!db_begin(c, e))
			goto cleanup;
		if (!sequence_tx(c, res, e) || !db_commit(c, e)) {
			db_rollback(c);
			goto cleanup;
		}
		*head = res[0];
		*numbered = (int)res[1];
		snprintf(h, sizeof(h), "%lld", res[0]);
		/* after the commit: wakes the other replicas' hubs */
		if (res[1] > 0 && !db_notify(c, "fleet_events", h, e))
			goto cleanup;
	}
	ok = true;
cleanup:
	PQclear(r);
	db_release(c);
	return ok;
}

bool
events_head(struct db *c, long long *head, struct err *e)
{
	PGresult *r = NULL;

	if (!db_exec(c, "SELECT last FROM job_event_seq", 0, NULL, &r, e))
		return false;
	*head = PQntuples(r) ? strtoll(PQgetvalue(r, 0, 0), NULL, 10) : 0;
	PQclear(r);
	return true;
}

bool
events_read(struct db *c, long long after, long long upto, const struct events_filter *f,
	    int limit, json_t **out, struct err *e)
{
	static const char sql[] =
	    "SELECT json_build_object('seq', v.seq, 'id', v.id::text, 'job_id', v.job_id,"
	    " 'job_name', j.name, 'environment', j.environment, 'queue', q.name, 'at', v.at,"
	    " 'type', v.type, 'from_state', v.from_state, 'to_state', v.to_state,"
	    " 'attempt', v.attempt, 'message', v.message, 'data', v.data, 'team', q.team)::text"
	    " FROM job_events v JOIN jobs j ON j.id = v.job_id JOIN queues q ON q.id = j.queue_id"
	    " WHERE v.seq > $1::bigint AND ($3::bigint IS NULL OR v.seq <= $3::bigint)"
	    "  AND ($4::uuid IS NULL OR v.job_id = $4::uuid)"
	    "  AND ($5::text IS NULL OR j.environment = $5::text)"
	    "  AND ($6::text IS NULL OR q.team = $6::text)"
	    "  AND ($7::text[] IS NULL OR j.environment = ANY($7::text[]))"
	    " ORDER BY v.seq LIMIT $2::int";
	char a[24], u[24];
	const char *p[4] = { upto > 0 ? u : NULL, f->job_id, f->environment, f->team };

	snprintf(a, sizeof(a), "%lld", after);
	snprintf(u, sizeof(u), "%lld", upto);
	return db_list_page(c, sql, limit, a, DB_CURSOR_TEXT, p, 4, f->envs, f->nenvs, out, e);
}
