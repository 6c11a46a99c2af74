/* idem_store: the idempotency_keys table — the lookup, the record and the expiry behind
 * api/idem.c (which decides replay, 422 and what is stored). */
#include <stdio.h>
#include <stdlib.h>

#include <libpq-fe.h>

#include "core/idem_store.h"

static const char sql_get[] =
    "SELECT body_sha256, path, status, response, location FROM idempotency_keys"
    " WHERE token_id = $1 AND key = $2 AND created_at > now() - interval '24 hours'";
static const char sql_put[] =
    "INSERT INTO idempotency_keys (token_id, key, method, path, body_sha256, status,"
    " response, location) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)"
    " ON CONFLICT (token_id, key) DO UPDATE SET body_sha256 = EXCLUDED.body_sha256,"
    " path = EXCLUDED.path, status = EXCLUDED.status, response = EXCLUDED.response,"
    " location = EXCLUDED.location, created_at = now()"
    " WHERE idempotency_keys.created_at <= now() - interval '24 hours'"
    " RETURNING 1";
static const char sql_expire[] =
    "DELETE FROM idempotency_keys WHERE created_at <= now() - interval '24 hours'";

bool
idem_store_get(struct db *c, const char *token_id, const char *key, struct arena *a,
    struct idem_row *row, bool *found, struct err *e)
{
	const char *p[2] = { token_id, key };
	PGresult *r = NULL;

	*found = false;
	if (!db_exec(c, sql_get, 2, p, &r, e))
		return false;
	if (PQntuples(r) > 0) {
		*found = true;
		row->body_sha256 = arena_strdup(a, PQgetvalue(r, 0, 0));
		row->path = arena_strdup(a, PQgetvalue(r, 0, 1));
		row->status = atoi(PQgetvalue(r, 0, 2));
		row->response = arena_strdup(a, PQgetvalue(r, 0, 3));
		row->location = PQgetisnull(r, 0, 4) ? NULL :
		    arena_strdup(a, PQgetvalue(r, 0, 4));
	}
	PQclear(r);
	return true;
}

bool
idem_store_put(struct db *c, const char *token_id, const char *key, const char *method,
    const struct idem_row *row, bool *stored, struct err *e)
{
	char status[12];
	const char *p[8];
	PGresult *r = NULL;

	snprintf(status, sizeof(status), "%d", row->status);
	p[0] = token_id;
	p[1] = key;
	p[2] = method;
	p[3] = row->path;
	p[4] = row->body_sha256;
	p[5] = status;
	p[6] = row->response ? row->response : "null";
	p[7] = row->location;
	if (!db_exec(c, sql_put, 8, p, &r, e))
		return false;
	*stored = PQntuples(r) > 0;
	PQclear(r);
	return true;
}

bool
idem_store_expire(struct db *c, long *deleted, struct err *e)
{
	PGresult *r = NULL;

	if (!db_exec(c, sql_expire, 0, NULL, &r, e))
		return false;
	*deleted = atol(PQcmdTuples(r));
	PQclear(r);
	return true;
}
