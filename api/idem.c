/* idem: Idempotency-Key on POST — the first successful answer is stored for 24 hours and
 * replayed to a retry with the same body; the same key with another body is a 422. */
#include <string.h>

#include "api/server.h"
#include "core/crypto.h"

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

bool
idem_before(struct request *rq, struct err *e)
{
	const char *key = rq_header(rq, "Idempotency-Key");
	const char *p[2];
	PGresult *r = NULL;
	bool ok = false;

	if (key == NULL || strcmp(rq->method, "POST") != 0 || rq->actor.id[0] == '\0')
		return true;
	if (strlen(key) == 0 || strlen(key) > 255)
		return err_set(e, 400, "api.bad_idempotency_key",
		    "Idempotency-Key must be 1 to 255 characters");
	crypto_sha256_hex(rq->body ? rq->body : "", rq->body_len, rq->body_sha);
	p[0] = rq->actor.id;
	p[1] = key;
	if (!db_exec(rq->db, sql_get, 2, p, &r, e))
		goto cleanup;
	if (PQntuples(r) == 0) {
		rq->idem_key = arena_strdup(rq->arena, key);
		ok = true;
		goto cleanup;
	}
	if (strcmp(PQgetvalue(r, 0, 0), rq->body_sha) != 0 ||
	    strcmp(PQgetvalue(r, 0, 1), rq->path) != 0) {
		err_set(e, 422, "api.idempotency_key_reused",
		    "this Idempotency-Key was used with another request");
		goto cleanup;
	}
	rq_reply(rq, atoi(PQgetvalue(r, 0, 2)), json_loads(PQgetvalue(r, 0, 3), 0, NULL));
	if (!PQgetisnull(r, 0, 4))
		rq->location = arena_strdup(rq->arena, PQgetvalue(r, 0, 4));
	ok = true;
cleanup:
	PQclear(r);
	return ok;
}

bool
idem_after(struct request *rq, struct err *e)
{
	char status[8], *text;
	const char *p[8];
	PGresult *r = NULL;
	bool ok;

	if (rq->idem_key == NULL || rq->status < 200 || rq->status >= 300)
		return true;
	text = rq->reply ? json_dumps(rq->reply, JSON_COMPACT | JSON_PRESERVE_ORDER) : NULL;
	snprintf(status, sizeof(status), "%d", rq->status);
	p[0] = rq->actor.id;
	p[1] = rq->idem_key;
	p[2] = rq->method;
	p[3] = rq->path;
	p[4] = rq->body_sha;
	p[5] = status;
	p[6] = text ? text : "null";
	p[7] = rq->location;
	ok = db_exec(rq->db, sql_put, 8, p, &r, e);
	if (ok && PQntuples(r) == 0)
		ok = err_set(e, 409, "api.idempotency_in_progress",
		    "a request with this Idempotency-Key is already being processed");
	PQclear(r);
	free(text);
	return ok;
}
