/* idem: Idempotency-Key on POST — the first successful answer is stored for 24 hours and
 * replayed to a retry with the same body; the same key with another body is a 422.  What
 * is stored never holds a secret: secret fields are dropped and the replay says so
 * (`secret_omitted`, header Idempotent-Replayed).  The janitor deletes expired rows. */
#include <stdlib.h>
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
	rq->replayed = true;
	if (!PQgetisnull(r, 0, 4))
		rq->location = arena_strdup(rq->arena, PQgetvalue(r, 0, 4));
	ok = true;
cleanup:
	PQclear(r);
	return ok;
}

/* The answer as stored: a copy without its secret fields (a token's secret, credentials),
 * marked secret_omitted when one was dropped.  malloc'd text or NULL. */
static char *
stored_text(json_t *reply)
{
	static const char *const secret_keys[] = { "secret", "credentials", NULL };
	json_t *copy;
	char *text;
	bool dropped = false;

	if (reply == NULL)
		return NULL;
	copy = json_deep_copy(reply);
	for (int i = 0; json_is_object(copy) && secret_keys[i] != NULL; i++)
		dropped = json_object_del(copy, secret_keys[i]) == 0 || dropped;
	if (dropped)
		json_object_set_new(copy, "secret_omitted", json_true());
	text = json_dumps(copy, JSON_COMPACT | JSON_PRESERVE_ORDER);
	json_decref(copy);
	return text;
}

bool
idem_expire(struct db *c, long *deleted, struct err *e)
{
	static const char sql[] = "DELETE FROM idempotency_keys"
	    " WHERE created_at <= now() - interval '24 hours'";
	PGresult *r = NULL;

	if (!db_exec(c, sql, 0, NULL, &r, e))
		return false;
	*deleted = atol(PQcmdTuples(r));
	PQclear(r);
	return true;
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
	text = stored_text(rq->reply);
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
