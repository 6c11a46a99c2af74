/* idem: Idempotency-Key on POST — the first successful answer is stored for 24 hours and
 * replayed to a retry with the same body; the same key with another body is a 422.  What
 * is stored never holds a secret: secret fields are dropped and the replay says so
 * (`secret_omitted`, header Idempotent-Replayed).  The rows are core/idem_store.c's; the
 * janitor deletes expired ones. */
#include <stdlib.h>
#include <string.h>

#include "api/server.h"
#include "core/crypto.h"
#include "core/idem_store.h"

bool
idem_before(struct request *rq, struct err *e)
{
	const char *key = rq_header(rq, "Idempotency-Key");
	struct idem_row row = { 0 };
	bool found = false;

	if (key == NULL || strcmp(rq->method, "POST") != 0 || rq->actor.id[0] == '\0')
		return true;
	if (strlen(key) == 0 || strlen(key) > 255)
		return err_set(e, 400, "api.bad_idempotency_key",
		    "Idempotency-Key must be 1 to 255 characters");
	crypto_sha256_hex(rq->body ? rq->body : "", rq->body_len, rq->body_sha);
	if (!idem_store_get(rq->db, rq->actor.id, key, rq->arena, &row, &found, e))
		return false;
	if (!found) {
		rq->idem_key = arena_strdup(rq->arena, key);
		return true;
	}
	if (strcmp(row.body_sha256, rq->body_sha) != 0 || strcmp(row.path, rq->path) != 0)
		return err_set(e, 422, "api.idempotency_key_reused",
		    "this Idempotency-Key was used with another request");
	rq_reply(rq, row.status, json_loads(row.response, 0, NULL));
	rq->replayed = true;
	if (row.location != NULL)
		rq->location = row.location;
	return true;
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
idem_after(struct request *rq, struct err *e)
{
	struct idem_row row = { 0 };
	char *text;
	bool ok, stored = false;

	if (rq->idem_key == NULL || rq->status < 200 || rq->status >= 300)
		return true;
	text = stored_text(rq->reply);
	row.body_sha256 = rq->body_sha;
	row.path = rq->path;
	row.status = rq->status;
	row.response = text;
	row.location = rq->location;
	ok = idem_store_put(rq->db, rq->actor.id, rq->idem_key, rq->method, &row, &stored, e);
	if (ok && !stored)
		ok = err_set(e, 409, "api.idempotency_in_progress",
		    "a request with this Idempotency-Key is already being processed");
	free(text);
	return ok;
}
