/* webhook: endpoint rows built as JSON by Postgres, their checks, and their secrets —
 * sealed with the master key before they reach SQL, opened only to sign a delivery. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <uuid/uuid.h>

#include "core/crypto.h"
#include "core/jsonx.h"
#include "queue/hooks/webhook.h"
#include "regions/cluster.h"

#define HOOK_JSON "json_build_object('id', w.id, 'environment', w.environment," \
	" 'team', w.team, 'url', w.url, 'types', to_json(w.types), 'description', w.description," \
	" 'cursor', w.cursor, 'previous_secret_valid_until', CASE WHEN w.prev_secret_until >" \
	" now() THEN w.prev_secret_until END, 'version', w.version, 'created_at', w.created_at," \
	" 'updated_at', w.updated_at)::text"

static const char *const types[] = { "*", "job.submitted", "job.state_changed", "job.failed",
	"job.operation", "job.event", "budget.threshold", NULL };

bool
webhook_type_known(const char *t)
{
	for (size_t i = 0; types[i] != NULL; i++)
		if (strcmp(t, types[i]) == 0)
			return true;
	return false;
}

static bool
loopback(const char *host, size_t n)
{
	return (n == 9 && strncmp(host, "127.0.0.1", n) == 0) ||
	    (n == 5 && strncmp(host, "[::1]", n) == 0) ||
	    (n == 9 && strncasecmp(host, "localhost", n) == 0);
}

bool
webhook_url_ok(const char *url, struct err *e)
{
	const char *h, *end, *port;
	bool tls;
	size_t n;

	if (strlen(url) > 2048 || !jsonx_utf8_valid(url, strlen(url)))
		return err_field(e, 422, "webhook.bad_url", "/url", "url must be at most 2048 bytes");
	for (const char *p = url; *p != '\0'; p++)
		if ((unsigned char)*p <= 0x20 || *p == 0x7f)
			return err_field(e, 422, "webhook.bad_url", "/url",
			    "url must not contain spaces or control characters");
	tls = strncmp(url, "https://", 8) == 0;
	if (!tls && strncmp(url, "http://", 7) != 0)
		return err_field(e, 422, "webhook.bad_url", "/url",
		    "url must be an absolute https:// url");
	h = url + (tls ? 8 : 7);
	end = h + strcspn(h, "/?#");
	if (memchr(h, '@', (size_t)(end - h)) != NULL)
		return err_field(e, 422, "webhook.bad_url", "/url",
		    "url must not carry credentials");
	if (*h == '[') {
		const char *rb = memchr(h, ']', (size_t)(end - h));

		if (rb == NULL)
			return err_field(e, 422, "webhook.bad_url", "/url", "url has a bad host");
		port = rb + 1 < end && rb[1] == ':' ? rb + 1 : NULL;
		n = (size_t)(rb + 1 - h);
	} else {
		port = memchr(h, ':', (size_t)(end - h));
		n = (size_t)((port ? port : end) - h);
	}
	if (n == 0 || n > 253)
		return err_field(e, 422, "webhook.bad_url", "/url", "url has no host");
	if (port != NULL) {
		size_t digits = strspn(port + 1, "0123456789");

		if (port + 1 + digits != end || digits == 0 || digits > 5 ||
		    atoi(port + 1) < 1 || atoi(port + 1) > 65535)
			return err_field(e, 422, "webhook.bad_url", "/url", "url has a bad port");
	}
	if (!tls && !loopback(h, n))
		return err_field(e, 422, "webhook.insecure_url", "/url",
		    "url must use https (http is allowed for loopback hosts only)");
	return true;
}

void
webhook_sign(const char *secret, const char *prev, long long ts, const char *body,
	     size_t len, char out[WEBHOOK_SIG_MAX])
{
	const char *keys[2] = { secret, prev };
	char t[24], hex[65];
	size_t tl, o;
	uint8_t mac[32];
	char *msg;

	tl = (size_t)snprintf(t, sizeof(t), "%lld.", ts);
	msg = malloc(tl + len + 1);
	memcpy(msg, t, tl);
	memcpy(msg + tl, body, len);
	o = (size_t)snprintf(out, WEBHOOK_SIG_MAX, "t=%lld", ts);
	for (int i = 0; i < 2; i++) {
		if (keys[i] == NULL)
			continue;
		crypto_hmac_sha256(keys[i], strlen(keys[i]), msg, tl + len, mac);
		crypto_hex(mac, sizeof(mac), hex);
		o += (size_t)snprintf(out + o, WEBHOOK_SIG_MAX - o, ",v1=%s", hex);
	}
	free(msg);
}

/* A new secret "whsec_<base64url of 32 random bytes>", sealed for id. */
static bool
new_secret(const char *id, char **secret, char **sealed, struct err *e)
{
	uint8_t raw[32];
	char *b;

	*secret = *sealed = NULL;
	if (!crypto_random(raw, sizeof(raw)))
		return err_set(e, 500, "webhook.random", "no randomness for a secret");
	b = crypto_b64url_encode(raw, sizeof(raw));
	memset(raw, 0, sizeof(raw));
	if (b == NULL)
		return err_set(e, 500, "webhook.random", "no memory for a secret");
	*secret = malloc(strlen(b) + 7);
	snprintf(*secret, strlen(b) + 7, "whsec_%s", b);
	free(b);
	*sealed = cluster_seal(id, *secret, e);
	if (*sealed == NULL) {
		free(*secret);
		*secret = NULL;
		return false;
	}
	return true;
}

/* types as a text[] literal "{a,b}" after checking each (422 at its pointer). */
static bool
unpack_types(json_t *arr, char **lit, struct err *e)
{
	size_t i, len = 3;
	json_t *v;

	*lit = NULL;
	if (!json_is_array(arr) || json_array_size(arr) == 0 || json_array_size(arr) > 16)
		return err_field(e, 422, "webhook.bad_types", "/types",
		    "types must be a list of 1 to 16 event types");
	json_array_foreach(arr, i, v) {
		if (!json_is_string(v) || !webhook_type_known(json_string_value(v))) {
			char ptr[32];

			snprintf(ptr, sizeof(ptr), "/types/%zu", i);
			return err_field(e, 422, "webhook.unknown_type", ptr, "unknown event type");
		}
		len += strlen(json_string_value(v)) + 1;
	}
	*lit = malloc(len);
	(*lit)[0] = '{';
	(*lit)[1] = '\0';
	json_array_foreach(arr, i, v) {
		strcat(*lit, json_string_value(v));
		strcat(*lit, i + 1 < json_array_size(arr) ? "," : "}");
	}
	return true;
}

static bool
unpack(json_t *body, const char **env, const char **url, const char **team,
    const char **desc, char **types_lit, struct err *e)
{
	static const char *const allowed[] = { "environment", "url", "types", "team",
		"description", NULL };

	if (!jsonx_only(body, allowed, "", e) ||
	    !jsonx_str(body, "environment", "", true, env, e) ||
	    !jsonx_str(body, "url", "", true, url, e) ||
	    !jsonx_str(body, "team", "", false, team, e) ||
	    !jsonx_str(body, "description", "", false, desc, e))
		return false;
	if (!webhook_url_ok(*url, e))
		return false;
	if (*team != NULL && !jsonx_name_ok(*team, 63))
		return err_field(e, 422, "webhook.bad_team", "/team",
		    "team must match ^[a-z][a-z0-9-]{1,62}$");
	if (*desc != NULL && strlen(*desc) > 1024)
		return err_field(e, 422, "webhook.bad_description", "/description",
		    "description must be at most 1024 bytes");
	return unpack_types(json_object_get(body, "types"), types_lit, e);
}

bool
webhook_create(struct db *c, json_t *body, json_t **out, char **secret, struct err *e)
{
	/* a new endpoint receives the events sequenced after its creation */
	static const char sql[] = "WITH ins AS (INSERT INTO webhooks (id, environment, team, url,"
	    " types, description, secret_sealed, cursor)"
	    " SELECT $1::uuid, v.name, $3, $4, $5::text[], $6, $7, (SELECT last FROM job_event_seq)"
	    " FROM environments v WHERE v.name = $2 RETURNING *)"
	    " SELECT " HOOK_JSON " FROM ins w";
	const char *env = NULL, *url = NULL, *team = NULL, *desc = NULL;
	char *types_lit = NULL, *sec = NULL, *sealed = NULL;
	char id[37];
	uuid_t u;
	bool ok = false;

	if (!unpack(body, &env, &url, &team, &desc, &types_lit, e))
		goto cleanup;
	uuid_generate_random(u);
	uuid_unparse_lower(u, id);
	if (!new_secret(id, &sec, &sealed, e))
		goto cleanup;
	{
		const char *p[7] = { id, env, team, url, types_lit, desc ? desc : "", sealed };
		char what[96];

		snprintf(what, sizeof(what), "environment %.64s", env);
		if (!db_get_json(c, sql, 7, p, "env.not_found", what, out, e)) {
			if (e->status == 404)
				snprintf(e->pointer, sizeof(e->pointer), "/environment");
			goto cleanup;
		}
	}
	*secret = sec;
	sec = NULL;
	ok = true;
cleanup:
	if (sec != NULL)
		memset(sec, 0, strlen(sec));
	free(sec);
	free(sealed);
	free(types_lit);
	return ok;
}

bool
webhook_get(struct db *c, const char *id, bool lock, json_t **out, struct err *e)
{
	static const char sql[] = "SELECT " HOOK_JSON " FROM webhooks w WHERE w.id = $1::uuid";
	static const char sql_lock[] = "SELECT " HOOK_JSON " FROM webhooks w"
	    " WHERE w.id = $1::uuid FOR UPDATE";

	return db_get_id_json(c, lock ? sql_lock : sql, id, "webhook.not_found", "webhook",
	    out, e);
}

bool
webhook_list(struct db *c, int limit, const char *after, const char *environment,
	     const char *const *envs, int nenvs, json_t **out, struct err *e)
{
	static const char sql[] = "SELECT " HOOK_JSON " FROM webhooks w"
	    " WHERE ($1 = '' OR w.id > $1::uuid) AND ($3::text IS NULL OR w.environment = $3)"
	    "  AND ($4::text[] IS NULL OR w.environment = ANY($4::text[]))"
	    " ORDER BY w.id LIMIT $2";
	const char *p[1] = { environment };

	return db_list_page(c, sql, limit, after, DB_CURSOR_UUID, p, 1, envs, nenvs, out, e);
}

bool
webhook_delete(struct db *c, const char *id, struct err *e)
{
	static const char sql[] = "DELETE FROM webhooks WHERE id = $1::uuid";
	const char *p[1] = { id };

	return db_exec(c, sql, 1, p, NULL, e);
}

bool
webhook_rotate(struct db *c, const char *id, long grace_s, json_t **out, char **secret,
	       struct err *e)
{
	static const char sql[] = "UPDATE webhooks SET prev_secret_sealed = CASE WHEN $3::int > 0"
	    " THEN secret_sealed END, prev_secret_until = CASE WHEN $3::int > 0 THEN now() +"
	    " make_interval(secs => $3::int) END, secret_sealed = $2, version = version + 1,"
	    " updated_at = now() WHERE id = $1::uuid";
	char *sec = NULL, *sealed = NULL, grace[24];
	bool ok = false;

	if (grace_s < 0 || grace_s > WEBHOOK_GRACE_MAX_S)
		return err_field(e, 422, "webhook.bad_grace", "/grace_seconds",
		    "grace_seconds must be 0 to %d", WEBHOOK_GRACE_MAX_S);
	snprintf(grace, sizeof(grace), "%ld", grace_s);
	if (!new_secret(id, &sec, &sealed, e))
		goto cleanup;
	{
		const char *p[3] = { id, sealed, grace };

		if (!db_exec(c, sql, 3, p, NULL, e) || !webhook_get(c, id, false, out, e))
			goto cleanup;
	}
	*secret = sec;
	sec = NULL;
	ok = true;
cleanup:
	if (sec != NULL)
		memset(sec, 0, strlen(sec));
	free(sec);
	free(sealed);
	return ok;
}

bool
webhook_replay(struct db *c, const char *id, long long from_event, json_t **out,
	       struct err *e)
{
	static const char sql[] = "UPDATE webhooks SET cursor = least(cursor, $2::bigint - 1),"
	    " version = version + 1, updated_at = now() WHERE id = $1::uuid";
	char from[24];
	const char *p[2] = { id, from };

	if (from_event < 1)
		return err_field(e, 422, "webhook.bad_from_event", "/from_event",
		    "from_event must be an event id (1 or more)");
	snprintf(from, sizeof(from), "%lld", from_event);
	return db_exec(c, sql, 2, p, NULL, e) && webhook_get(c, id, false, out, e);
}

bool
webhook_deliveries(struct db *c, const char *id, const char *state, int limit,
		   const char *after, const char *const *envs, int nenvs, json_t **out,
		   struct err *e)
{
	static const char sql[] = "SELECT json_build_object('id', d.id::text, 'webhook_id',"
	    " d.webhook_id, 'event_id', d.seq, 'job_id', d.job_id, 'type', d.type, 'state', d.state,"
	    " 'attempts', d.attempts, 'next_attempt_at', CASE WHEN d.state = 'pending' THEN"
	    " d.next_at END, 'last_status', d.last_status, 'last_error', d.last_error,"
	    " 'payload', d.payload::json, 'created_at', d.created_at, 'updated_at',"
	    " d.updated_at)::text FROM webhook_deliveries d"
	    " WHERE ($1 = '' OR d.id > $1::bigint) AND d.webhook_id = $3::uuid"
	    "  AND ($4::text IS NULL OR d.state = $4) AND ($5::text[] IS NULL OR d.webhook_id IN (SELECT id FROM webhooks"
	    " WHERE environment = ANY($5::text[])))"
	    " ORDER BY d.id LIMIT $2";
	const char *p[2] = { id, state };

	if (state != NULL && strcmp(state, "pending") != 0 && strcmp(state, "delivered") != 0 &&
	    strcmp(state, "dead") != 0)
		return err_field(e, 400, "webhook.bad_state", "/query/state",
		    "state must be pending, delivered or dead");
	return db_list_page(c, sql, limit, after, DB_CURSOR_SERIAL, p, 2, envs, nenvs, out,
	    e);
}
