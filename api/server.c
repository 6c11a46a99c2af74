/* server: libmicrohttpd with an internal thread pool.  Each request owns an arena created
 * in the access callback and freed in the completed callback (req_cls, as in MHD's examples). */
#include <ctype.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>
#include <sys/random.h>
#include <arpa/inet.h>
#include <netinet/in.h>

#include <microhttpd.h>
#include <uuid/uuid.h>

#include "api/handlers.h"
#include "api/metrics.h"
#include "api/server.h"
#include "api/sse.h"
#include "core/config.h"
#include "core/crypto.h"
#include "core/textbuf.h"
#include "core/jsonx.h"
#include "core/log.h"
#include "iam/oidc.h"
#include "iam/token.h"

static struct MHD_Daemon *daemon_;
static atomic_int inflight;
static int bound_port;

static bool sane_request_id(const char *s);
static void answer(struct request *rq, struct MHD_Connection *conn);

const char *
rq_param(struct request *rq, const char *name)
{
	for (int i = 0; i < rq->nparams; i++)
		if (strcmp(rq->param_names[i], name) == 0)
			return rq->param_values[i];
	return NULL;
}

const char *
rq_query(struct request *rq, const char *name)
{
	return MHD_lookup_connection_value(rq->conn, MHD_GET_ARGUMENT_KIND, name);
}

const char *
rq_header(struct request *rq, const char *name)
{
	return MHD_lookup_connection_value(rq->conn, MHD_HEADER_KIND, name);
}

bool
rq_env_visible(struct request *rq, const char *env)
{
	if (env == NULL)
		return false;
	for (int i = 0; i < rq->nenvs; i++)
		if (strcmp(rq->envs[i], "*") == 0 || strcmp(rq->envs[i], env) == 0)
			return true;
	return false;
}

bool
rq_in_team(struct request *rq)
{
	return rq->team != NULL;
}

bool
rq_team_visible(struct request *rq, const char *team)
{
	if (!rq_in_team(rq))
		return true;
	return team != NULL && strcmp(team, rq->team) == 0;
}

void
rq_reply(struct request *rq, int status, json_t *reply)
{
	json_decref(rq->reply);
	rq->status = status;
	rq->reply = reply;
}

void
rq_reply_text(struct request *rq, int status, const char *json, size_t len)
{
	rq_reply(rq, status, NULL);
	rq->raw = json;
	rq->raw_len = len;
	rq->content_type = "application/json";
}

void
rq_reply_object(struct request *rq, int status, json_t *obj, const char *collection)
{
	rq->etag = rq_etag(rq, json_integer_value(json_object_get(obj, "version")));
	if (status == 201 && collection != NULL)
		rq->location = arena_printf(rq->arena, "%s/%s", collection,
		    json_string_value(json_object_get(obj, "id")));
	rq_reply(rq, status, obj);
}

json_t *
rq_page_reply(struct request *rq, json_t *items, int limit, const char *key_of)
{
	json_t *next = json_null();
	size_t n = json_array_size(items);

	if ((int)n > limit) {
		json_array_remove(items, n - 1);
		n--;
	}
	if ((int)n == limit && n > 0) {
		const char *key = json_string_value(json_object_get(json_array_get(items, n - 1),
		    key_of));
		char *cur = key ? crypto_b64url_encode(key, strlen(key)) : NULL;

		if (cur != NULL) {
			json_decref(next);
			next = json_string(arena_printf(rq->arena, "%s?limit=%d&after=%s",
			    rq->route->pattern, limit, cur));
			free(cur);
		}
	}
	return json_pack("{s:o, s:o}", "items", items, "next", next);
}

bool
rq_page(struct request *rq, int *limit, const char **after, struct err *e)
{
	const char *l = rq_query(rq, "limit");
	const char *a = rq_query(rq, "after");

	*limit = 100;
	*after = NULL;
	if (l != NULL) {
		char *end;
		long v = strtol(l, &end, 10);

		if (*l == '\0' || *end != '\0' || v < 1 || v > 500)
			return err_field(e, 400, "api.bad_limit", "/query/limit",
			    "limit must be an integer from 1 to 500");
		*limit = (int)v;
	}
	if (a != NULL) {
		size_t n;
		uint8_t *raw = crypto_b64_decode(a, &n);

		if (raw == NULL || n == 0 || n > 512 || !jsonx_utf8_valid((char *)raw, n)) {
			free(raw);
			return err_field(e, 400, "api.bad_cursor", "/query/after",
			    "after is not a cursor returned by this list");
		}
		*after = arena_strndup(rq->arena, (char *)raw, n);
		free(raw);
	}
	return true;
}

const char *
rq_etag(struct request *rq, long version)
{
	return arena_printf(rq->arena, "\"%ld\"", version);
}

bool
rq_if_match(struct request *rq, long version, struct err *e)
{
	const char *im = rq_header(rq, "If-Match");
	char want[32];

	if (im == NULL || strcmp(im, "*") == 0)
		return true;
	snprintf(want, sizeof(want), "\"%ld\"", version);
	if (strcmp(im, want) != 0 && !(strncmp(im, "W/", 2) == 0 && strcmp(im + 2, want) == 0))
		return err_set(e, 412, "api.precondition_failed",
		    "the object changed since it was read (version %ld)", version);
	return true;
}

static bool
sane_request_id(const char *s)
{
	size_t n = s ? strlen(s) : 0;

	if (n == 0 || n > 63)
		return false;
	for (size_t i = 0; i < n; i++) {
		char c = s[i];

		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		    c == '-' || c == '_' || c == '.'))
			return false;
	}
	return true;
}

static void
problem(struct request *rq, const struct err *e)
{
	json_t *p = json_pack("{s:s, s:s, s:i, s:s, s:s}",
	    "type", "about:blank", "title", e->msg, "status", e->status,
	    "code", e->code, "request_id", rq->id);

	if (e->detail[0] != '\0' && strncmp(e->code, "db.", 3) != 0)
		json_object_set_new(p, "detail", json_string(e->detail));
	else
		json_object_set_new(p, "detail", json_string(e->msg));
	if (e->pointer[0] != '\0' || strcmp(e->code, "api.not_object") == 0)
		json_object_set_new(p, "errors", json_pack("[{s:s, s:s}]",
		    "pointer", e->pointer, "detail", e->msg));
	rq_reply(rq, e->status, p);
	rq->content_type = "application/problem+json";
	if (e->status >= 500)
		log_error(rq->id, "api", "request failed", "{s:s, s:s, s:i}", "code", e->code,
		    "error", e->msg, "status", e->status);
	else
		log_info(rq->id, "api", "request refused", "{s:s, s:s, s:i}", "code", e->code,
		    "error", e->msg, "status", e->status);
}

void
rq_problem(struct request *rq, int status, const char *code, const char *title,
	   const char *detail, json_t *errors)
{
	json_t *p = json_pack("{s:s, s:s, s:i, s:s, s:s, s:s, s:o}", "type", "about:blank",
	    "title", title, "status", status, "code", code, "request_id", rq->id,
	    "detail", detail ? detail : title, "errors", errors ? errors : json_array());

	rq_reply(rq, status, p);
	rq->content_type = "application/problem+json";
	log_info(rq->id, "api", "request refused", "{s:s, s:i}", "code", code, "status", status);
}

/* Authenticates the bearer token; fills rq->actor, role and envs. */
static bool
authenticate(struct request *rq, struct err *e)
{
	const char *h = rq_header(rq, "Authorization");
	struct token_principal p = { 0 };

	if (h == NULL || strncasecmp(h, "Bearer ", 7) != 0 || h[7] == '\0')
		return err_set(e, 401, "auth.missing_token", "a bearer token is required");
	/* a JWT is the OpenID provider's access token; anything else a static token */
	if (oidc_enabled() && oidc_is_jwt(h + 7) ? !oidc_authenticate(h + 7, rq->arena, &p, e) :
	    !token_authenticate(h + 7, rq->arena, &p, e))
		return false;
	snprintf(rq->actor.id, sizeof(rq->actor.id), "%s", p.id);
	snprintf(rq->actor.name, sizeof(rq->actor.name), "%s", p.name);
	snprintf(rq->actor.team, sizeof(rq->actor.team), "%s", p.team);
	rq->role = (enum role)p.role;
	/* viewer, submitter and operator may be held in a team; admin is an environment role
	 * (an OIDC group map's team on an admin row only names the user's team) */
	rq->team = p.team[0] != '\0' && rq->role < ROLE_ADMIN ? rq->actor.team : NULL;
	rq->envs = (const char *const *)p.envs;
	rq->nenvs = p.nenvs;
	rq->auth_expires = p.expires;
	rq->auth_oidc = p.oidc;
	/* a user whose groups changed: the streams opened with the old claims end */
	if (p.oidc)
		sse_principal_seen(p.id, p.role, rq->team, rq->envs, rq->nenvs);
	return true;
}

static bool
content_type_json(struct request *rq)
{
	const char *ct = rq_header(rq, "Content-Type");
	size_t n = strlen("application/json");

	return ct != NULL && strncasecmp(ct, "application/json", n) == 0 &&
	    (ct[n] == '\0' || ct[n] == ';' || ct[n] == ' ');
}

/* Runs the handler inside one transaction (unless R_NOTX). */
static bool
run_handler(struct request *rq, struct err *e)
{
	bool ok;

	if (rq->route->flags & R_NOTX)
		return rq->route->fn(rq, e);
	for (int attempt = 0; attempt < 2; attempt++) {
		err_clear(e);
		bool read = strcmp(rq->method, "GET") == 0 || strcmp(rq->method, "HEAD") == 0;

		rq->db = db_acquire(5000, e);
		if (rq->db == NULL)
			return false;
		/* Reads run in autocommit: one round trip each, no BEGIN/COMMIT. */
		ok = read || (db_begin(rq->db, e) && idem_before(rq, e));
		if (ok && rq->status == 0)
			ok = rq->route->fn(rq, e) && (read || idem_after(rq, e));
		ok = ok && (read || db_commit(rq->db, e));
		if (!ok && !read)
			db_rollback(rq->db);
		db_release(rq->db);
		rq->db = NULL;
		if (ok || strcmp(e->code, "db.retry") != 0)
			return ok;
		rq_reply(rq, 0, NULL);
	}
	return false;
}

/* Whether the request carries FLEETD_METRICS_TOKEN (compared in constant time). */
static bool
metrics_token_ok(struct request *rq)
{
	const char *h = rq_header(rq, "Authorization");
	size_t n;

	if (cfg.metrics_token == NULL || cfg.metrics_token[0] == '\0' || h == NULL ||
	    strncasecmp(h, "Bearer ", 7) != 0)
		return false;
	n = strlen(cfg.metrics_token);
	return strlen(h + 7) == n && crypto_equal(h + 7, cfg.metrics_token, n);
}

static bool
takes_body(const struct route *r)
{
	return r != NULL && (r->flags & (R_BODY | R_BODY_OPT)) != 0;
}

/* Whether the headers say a body follows (a length above zero, or chunks). */
static bool
announces_body(struct request *rq)
{
	const char *cl = rq_header(rq, "Content-Length");
	const char *te = rq_header(rq, "Transfer-Encoding");

	return (cl != NULL && strtoll(cl, NULL, 10) != 0) || (te != NULL && te[0] != '\0');
}

/* What the headers alone decide: the route, the token, the role, the scope of a global
 * write and a declared body size.  Runs before any byte of the body is read, so that a
 * request without a valid token never makes fleetd buffer its body: a public route takes
 * none and refuses one on the headers (MHD then closes), so the whole body budget is
 * left to authenticated requests. */
static bool
check_headers(struct request *rq, char *allow, size_t allowlen, struct err *e)
{
	const char *cl = rq_header(rq, "Content-Length");

	rq->route = router_match(rq, allow, allowlen, e);
	if (rq->route == NULL)
		return false;
	if ((rq->route->flags & R_METRICS) && metrics_token_ok(rq)) {
		rq->role = ROLE_VIEWER;
	} else if (!(rq->route->flags & R_PUBLIC)) {
		if (!authenticate(rq, e))
			return false;
		if (rq->role < rq->route->min_role)
			return err_set(e, 403, "auth.forbidden", "this token's role may not do this");
		/* decided from the route alone, so it tells nothing about any object */
		if (rq_in_team(rq) && !(rq->route->flags & R_TEAM))
			return err_set(e, 403, "auth.team_forbidden", "a role held in a team may "
			    "not do this");
		if ((rq->route->flags & R_GLOBAL) && !rq_env_visible(rq, "*"))
			return err_set(e, 403, "auth.global_object", "only a token for every "
			    "environment may change objects shared by all environments");
		if ((rq->route->flags & R_METRICS) && !rq_env_visible(rq, "*"))
			return err_set(e, 403, "auth.metrics_forbidden", "metrics name every "
			    "environment: only the metrics token or a token for every environment "
			    "may read them");
	}
	if (cl != NULL && strtoll(cl, NULL, 10) > cfg.body_limit)
		return err_set(e, 413, "api.body_too_large", "request body is larger than %ld bytes",
		    cfg.body_limit);
	if ((rq->route->flags & R_PUBLIC) && announces_body(rq))
		return err_set(e, 413, "api.body_not_allowed", "this route takes no request body");
	return true;
}

static void
fail_answer(struct request *rq, struct err *e, const char *allow)
{
	if (e->status == 0)
		err_set(e, 500, "api.internal", "internal error");
	problem(rq, e);
	if (e->status == 405 && allow[0] != '\0')
		rq->allow = arena_strdup(rq->arena, allow);
	rq->retry_after = e->retry_after;
}

/* What the whole request decides (its body read): the body's size and type, then the
 * handler.  Fills rq's answer either way. */
static void
handle_request(struct request *rq)
{
	struct err e = { 0 };
	char allow[128] = "";

	if (rq->body_too_large) {
		err_set(&e, 413, "api.body_too_large", "request body is larger than %ld bytes",
		    cfg.body_limit);
		goto fail;
	}
	if (rq->body_over_budget) {
		err_set(&e, 503, "api.busy", "too many request bodies in flight; retry");
		e.retry_after = 1;
		goto fail;
	}
	if ((rq->route->flags & R_BODY) || ((rq->route->flags & R_BODY_OPT) && rq->body_len > 0)) {
		if (!content_type_json(rq)) {
			err_set(&e, 415, "api.unsupported_media_type",
			    "content-type must be application/json");
			goto fail;
		}
		rq->json = jsonx_parse_object(rq->body ? rq->body : "", rq->body_len, &e);
		if (rq->json == NULL)
			goto fail;
	}
	if (!run_handler(rq, &e))
		goto fail;
	return;
fail:
	fail_answer(rq, &e, allow);
}

static void
add_common_headers(struct request *rq, struct MHD_Response *resp)
{
	MHD_add_response_header(resp, "X-Request-Id", rq->id);
	MHD_add_response_header(resp, "Cache-Control", "no-store");
	MHD_add_response_header(resp, "X-Content-Type-Options", "nosniff");
	if (rq->content_type != NULL && strncmp(rq->content_type, "text/html", 9) == 0) {
		MHD_add_response_header(resp, "Content-Security-Policy", console_csp());
		MHD_add_response_header(resp, "Referrer-Policy", "no-referrer");
		MHD_add_response_header(resp, "X-Frame-Options", "DENY");
	}
}

static void
answer(struct request *rq, struct MHD_Connection *conn)
{
	struct MHD_Response *resp;
	char *text = NULL;
	bool problem_json = rq->content_type &&
	    strcmp(rq->content_type, "application/problem+json") == 0;

	if (rq->sse != NULL && rq->status == 200 && !problem_json) {
		resp = sse_response(rq->sse);	/* owns the stream from here */
		rq->sse = NULL;
	} else if ((rq->route != NULL && (rq->route->flags & R_RAW) && !problem_json) ||
	    (rq->raw != NULL && rq->reply == NULL && !problem_json)) {
		resp = MHD_create_response_from_buffer(rq->raw_len, (void *)rq->raw,
		    MHD_RESPMEM_MUST_COPY);
	} else if (rq->reply != NULL) {
		text = json_dumps(rq->reply, JSON_COMPACT | JSON_PRESERVE_ORDER);
		resp = MHD_create_response_from_buffer(text ? strlen(text) : 0, text,
		    MHD_RESPMEM_MUST_FREE);
	} else {
		resp = MHD_create_response_from_buffer(0, (void *)"", MHD_RESPMEM_PERSISTENT);
	}
	if (rq->sse != NULL) {		/* a stream that was opened but is not the answer */
		sse_discard(rq->sse);
		rq->sse = NULL;
	}
	if (resp == NULL)
		return;
	add_common_headers(rq, resp);
	if (rq->reply != NULL || rq->content_type != NULL)
		MHD_add_response_header(resp, "Content-Type",
		    rq->content_type ? rq->content_type : "application/json");
	if (rq->allow != NULL)
		MHD_add_response_header(resp, "Allow", rq->allow);
	if (rq->etag != NULL && !problem_json)
		MHD_add_response_header(resp, "ETag", rq->etag);
	if (rq->retry_after > 0) {
		char ra[16];

		snprintf(ra, sizeof(ra), "%d", rq->retry_after);
		MHD_add_response_header(resp, "Retry-After", ra);
	}
	if (rq->status == 401)
		MHD_add_response_header(resp, "WWW-Authenticate", "Bearer realm=\"fleetd\"");
	if (rq->location != NULL && !problem_json)
		MHD_add_response_header(resp, "Location", rq->location);
	if (rq->replayed && !problem_json)
		MHD_add_response_header(resp, "Idempotent-Replayed", "true");
	MHD_queue_response(conn, (unsigned)rq->status, resp);
	MHD_destroy_response(resp);
}

/* Bytes all in-flight request bodies hold (capacity), bounded by FLEETD_BODY_MEMORY_LIMIT. */
static atomic_long body_bytes;

/* Appends one chunk of the body.  A chunk that cannot be held sets body_too_large (over
 * FLEETD_BODY_LIMIT) or body_over_budget (over the memory budget, or out of memory); the
 * caller then releases the body, the rest is discarded and the answer says why. */
static void
body_append(struct request *rq, const char *upload, size_t n)
{
	if (!rq->body_too_large && rq->body_len + n > (size_t)cfg.body_limit)
		rq->body_too_large = true;
	if (rq->body_too_large || rq->body_over_budget)
		return;
	if (rq->body_len + n + 1 > rq->body_cap) {
		size_t cap = rq->body_cap ? rq->body_cap * 2 : 4096;
		char *p;

		while (cap < rq->body_len + n + 1)
			cap *= 2;
		if (atomic_fetch_add(&body_bytes, (long)(cap - rq->body_cap)) +
		    (long)(cap - rq->body_cap) > cfg.body_memory_limit) {
			atomic_fetch_sub(&body_bytes, (long)(cap - rq->body_cap));
			rq->body_over_budget = true;
			return;
		}
		p = realloc(rq->body, cap);
		if (p == NULL) {
			atomic_fetch_sub(&body_bytes, (long)(cap - rq->body_cap));
			rq->body_over_budget = true;
			return;
		}
		rq->body = p;
		rq->body_cap = cap;
	}
	memcpy(rq->body + rq->body_len, upload, n);
	rq->body_len += n;
	rq->body[rq->body_len] = '\0';
}

static void
body_release(struct request *rq)
{
	atomic_fetch_sub(&body_bytes, (long)rq->body_cap);
	free(rq->body);
	rq->body = NULL;
	rq->body_cap = rq->body_len = 0;
}

/* A request id: a version-4 UUID from a per-thread generator seeded once from the
 * kernel (libuuid's uuid_generate_random reseeded random() and read getrandom on every
 * call, a few % of a GET).  Ids correlate logs; they are not secrets. */
static void
request_id_new(char out[37])
{
	static _Thread_local uint64_t state;
	static _Thread_local bool seeded;
	uint64_t w[2];
	uuid_t u;

	if (!seeded) {
		if (getrandom(&state, sizeof(state), 0) != (ssize_t)sizeof(state))
			state = (uint64_t)time(NULL) ^ (uint64_t)(uintptr_t)&state;
		seeded = true;
	}
	for (int i = 0; i < 2; i++) {	/* splitmix64 */
		uint64_t z = (state += 0x9e3779b97f4a7c15ULL);

		z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
		z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
		w[i] = z ^ (z >> 31);
	}
	memcpy(u, w, sizeof(u));
	u[6] = (unsigned char)((u[6] & 0x0f) | 0x40);
	u[8] = (unsigned char)((u[8] & 0x3f) | 0x80);
	uuid_unparse_lower(u, out);
}

static enum MHD_Result
on_access(void *cls, struct MHD_Connection *conn, const char *url, const char *method,
	  const char *version, const char *upload, size_t *upload_size, void **req_cls)
{
	struct request *rq = *req_cls;

	(void)cls;
	(void)version;
	if (rq == NULL) {
		struct arena *a = arena_new();
		const char *rid;
		struct err e = { 0 };
		char allow[128] = "";

		rq = arena_alloc(a, sizeof(*rq));
		rq->arena = a;
		rq->conn = conn;
		rq->method = arena_strdup(a, method);
		rq->path = arena_strdup(a, url);
		clock_gettime(CLOCK_MONOTONIC, &rq->start);
		rid = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "X-Request-Id");
		if (sane_request_id(rid)) {
			snprintf(rq->id, sizeof(rq->id), "%s", rid);
		} else {
			request_id_new(rq->id);
		}
		snprintf(rq->actor.request_id, sizeof(rq->actor.request_id), "%s", rq->id);
		*req_cls = rq;
		atomic_fetch_add(&inflight, 1);
		/* headers only: refuse now, before the body is read (MHD then closes) */
		if (!check_headers(rq, allow, sizeof(allow), &e)) {
			fail_answer(rq, &e, allow);
			answer(rq, conn);
			rq->answered = true;
		}
		return MHD_YES;
	}
	if (*upload_size > 0) {
		struct timespec now;

		clock_gettime(CLOCK_MONOTONIC, &now);
		if (!rq->answered && cfg.upload_timeout > 0 &&
		    now.tv_sec - rq->start.tv_sec > cfg.upload_timeout) {
			log_info(rq->id, "api", "upload deadline passed", "{s:i}", "seconds",
			    cfg.upload_timeout);
			rq->status = 408;
			return MHD_NO;	/* closes the connection */
		}
		if (!rq->answered && takes_body(rq->route))	/* others: read, never held */
			body_append(rq, upload, *upload_size);
		if (rq->body_too_large || rq->body_over_budget)
			body_release(rq);
		*upload_size = 0;
		return MHD_YES;
	}
	if (rq->answered)
		return MHD_YES;
	handle_request(rq);
	answer(rq, conn);
	rq->answered = true;
	return MHD_YES;
}

static void
on_completed(void *cls, struct MHD_Connection *conn, void **req_cls,
	     enum MHD_RequestTerminationCode toe)
{
	struct request *rq = *req_cls;
	struct timespec end;
	double secs;

	(void)cls;
	(void)conn;
	(void)toe;
	if (rq == NULL)
		return;
	clock_gettime(CLOCK_MONOTONIC, &end);
	secs = (double)(end.tv_sec - rq->start.tv_sec) +
	    (double)(end.tv_nsec - rq->start.tv_nsec) / 1e9;
	metrics_observe_request(rq->route ? rq->route->pattern : "unmatched", rq->method,
	    rq->status, secs);
	log_debug(rq->id, "api", "request done", "{s:s, s:s, s:i, s:f}", "method", rq->method,
	    "route", rq->route ? rq->route->pattern : "unmatched", "status", rq->status,
	    "seconds", secs);
	json_decref(rq->json);
	json_decref(rq->reply);
	body_release(rq);
	arena_free(rq->arena);
	*req_cls = NULL;
	atomic_fetch_sub(&inflight, 1);
}

/* Percent-decoding that never produces NUL: "%00" stays literal so the router can refuse it. */
static size_t
unescape(void *cls, struct MHD_Connection *c, char *s)
{
	char *r = s, *w = s;

	(void)cls;
	(void)c;
	while (*r != '\0') {
		if (r[0] == '%' && isxdigit((unsigned char)r[1]) && isxdigit((unsigned char)r[2])) {
			char hex[3] = { r[1], r[2], 0 }, *end;
			unsigned long v = strtoul(hex, &end, 16);

			if (*end == '\0' && v != 0) {
				*w++ = (char)v;
				r += 3;
				continue;
			}
		}
		*w++ = *r++;
	}
	*w = '\0';
	return (size_t)(w - s);
}

static char *tls_cert_pem, *tls_key_pem;

bool
server_start(struct err *e)
{
	char host[64] = "127.0.0.1";
	const char *colon = strrchr(cfg.listen, ':');
	struct sockaddr_in sa = { 0 };
	unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL | MHD_USE_ITC |
	    MHD_ALLOW_SUSPEND_RESUME;	/* event streams wait suspended (api/sse.c) */
	/* TLS's two options, or none: the list handed to MHD_OPTION_ARRAY */
	struct MHD_OptionItem tls[3] = { { MHD_OPTION_END, 0, NULL } };
	const union MHD_DaemonInfo *info;
	int port;

	if (colon == NULL || (size_t)(colon - cfg.listen) >= sizeof(host))
		return err_set(e, 400, "config.bad_listen", "listen must be address:port");
	memcpy(host, cfg.listen, (size_t)(colon - cfg.listen));
	host[colon - cfg.listen] = '\0';
	port = atoi(colon + 1);
	sa.sin_family = AF_INET;
	sa.sin_port = htons((uint16_t)port);
	if (inet_pton(AF_INET, host, &sa.sin_addr) != 1)
		return err_set(e, 400, "config.bad_listen", "listen address must be IPv4");
	if (cfg.tls_cert != NULL && cfg.tls_key != NULL) {
		tls_cert_pem = textbuf_read_file(cfg.tls_cert, NULL);
		tls_key_pem = textbuf_read_file(cfg.tls_key, NULL);
		if (tls_cert_pem == NULL || tls_key_pem == NULL)
			return err_set(e, 400, "config.tls", "cannot read the tls certificate or key");
		flags |= MHD_USE_TLS;
		tls[0] = (struct MHD_OptionItem){ MHD_OPTION_HTTPS_MEM_CERT, 0, tls_cert_pem };
		tls[1] = (struct MHD_OptionItem){ MHD_OPTION_HTTPS_MEM_KEY, 0, tls_key_pem };
		tls[2] = (struct MHD_OptionItem){ MHD_OPTION_END, 0, NULL };
	}
	daemon_ = MHD_start_daemon(flags, (uint16_t)port, NULL, NULL, on_access, NULL,
	    MHD_OPTION_SOCK_ADDR, &sa,
	    MHD_OPTION_LISTENING_ADDRESS_REUSE, (unsigned)1,	/* restart on the same port at once */
	    MHD_OPTION_THREAD_POOL_SIZE, (unsigned)cfg.threads,
	    MHD_OPTION_CONNECTION_LIMIT, (unsigned)cfg.conn_limit,
	    MHD_OPTION_PER_IP_CONNECTION_LIMIT, (unsigned)cfg.conn_per_ip,
	    MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)cfg.conn_timeout,
	    MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)64 * 1024,
	    MHD_OPTION_NOTIFY_COMPLETED, on_completed, NULL,
	    MHD_OPTION_UNESCAPE_CALLBACK, unescape, NULL,
	    MHD_OPTION_ARRAY, tls,
	    MHD_OPTION_END);
	if (daemon_ == NULL)
		return err_set(e, 500, "server.start", "cannot listen on %s", cfg.listen);
	info = MHD_get_daemon_info(daemon_, MHD_DAEMON_INFO_BIND_PORT);
	bound_port = info ? info->port : port;
	return sse_start(e);
}

int
server_port(void)
{
	return bound_port;
}

void
server_stop(void)
{
	if (daemon_ == NULL)
		return;
	MHD_quiesce_daemon(daemon_);
	sse_stop();	/* ends the event streams; MHD may not stop with suspended ones */
	for (int i = 0; i < 300 && atomic_load(&inflight) > 0; i++)
		usleep(100 * 1000);
	MHD_stop_daemon(daemon_);
	daemon_ = NULL;
	free(tls_cert_pem);
	free(tls_key_pem);
}
