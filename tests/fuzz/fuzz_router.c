/* fuzz_router: request paths and query strings as fleetd sees them — percent-decoded by
 * server.c's unescape callback, then matched by router_match — against a reference
 * segment matcher over the same route table. */
#include "api/server.h"
#include "core/arena.h"
#include "core/jsonx.h"
#include "tests/fuzz/fuzz.h"

struct MHD_Connection;

/* api/server.c's static unescape(), extracted at build time by fuzz.mk. */
size_t	fuzz_server_unescape(void *cls, struct MHD_Connection *c, char *s);

static int
hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* Safety of the decoder: never longer, never a NUL, every well-formed %XX (X hex digits,
 * not %00) decoded exactly, every byte that is not a '%' copied through. */
static char *
unescape_checked(const char *in)
{
	char *s = strdup(in);
	size_t n = fuzz_server_unescape(NULL, NULL, s), o = 0;

	FUZZ_CHECK(n == strlen(s) && n <= strlen(in), "unescape length %zu", n);
	for (size_t i = 0; in[i] != '\0'; i++) {
		int hi = in[i] == '%' && in[i + 1] ? hexval(in[i + 1]) : -1;
		int lo = hi >= 0 && in[i + 2] ? hexval(in[i + 2]) : -1;

		FUZZ_CHECK(o < n, "unescape lost bytes of %s", in);
		if (hi >= 0 && lo >= 0 && (hi | lo) != 0) {
			FUZZ_CHECK((unsigned char)s[o] == (hi << 4 | lo), "bad decode of %s", in);
			i += 2;
		} else if (in[i] != '%') {
			FUZZ_CHECK(s[o] == in[i], "byte changed in %s", in);
		} else if (s[o] != '%') {
			/* lenient: strtoul also reads "+1", " f", "-1"; skip what it consumed */
			i += 2;
		}
		o++;
	}
	FUZZ_CHECK(o == n, "unescape produced extra bytes from %s", in);
	return s;
}

/* Reference: does pattern match path segment by segment ({x} = one non-empty segment)? */
static bool
ref_match(const char *pattern, const char *path)
{
	const char *p = pattern, *s = path;

	while (*p == '/' && *s == '/') {
		size_t pl = strcspn(++p, "/"), sl = strcspn(++s, "/");

		if (*p == '{') {
			if (sl == 0)
				return false;
		} else if (pl != sl || memcmp(p, s, pl) != 0) {
			return false;
		}
		p += pl;
		s += sl;
	}
	return *p == '\0' && *s == '\0';
}

static bool
method_fits(const char *route_method, const char *method)
{
	return strcmp(route_method, method) == 0 ||
	    (strcmp(method, "HEAD") == 0 && strcmp(route_method, "GET") == 0);
}

/* What router_match answered must be what the reference says for a sane path. */
static void
check_match(struct request *rq, const struct route *r, const struct err *e, const char *allow)
{
	char path[2048];
	size_t n = strlen(rq->path);
	const struct route *want = NULL;
	bool any = false;

	FUZZ_CHECK(n < sizeof(path), "long path accepted");
	memcpy(path, rq->path, n + 1);
	if (n > 1 && path[n - 1] == '/')
		path[n - 1] = '\0';
	FUZZ_CHECK(path[0] == '/' && strstr(path, "//") == NULL && strstr(path, "/./") == NULL &&
	    strstr(path, "/../") == NULL && strchr(path, '\\') == NULL &&
	    jsonx_utf8_valid(path, strlen(path)), "insane path accepted: %s", rq->path);
	for (size_t i = 0; i < nroutes; i++) {
		if (!ref_match(routes[i].pattern, path))
			continue;
		any = true;
		if (want == NULL && method_fits(routes[i].method, rq->method))
			want = &routes[i];
	}
	FUZZ_CHECK(r == want, "router %s, reference %s for %s %s", r ? r->pattern : "none",
	    want ? want->pattern : "none", rq->method, rq->path);
	if (r != NULL) {
		FUZZ_CHECK(rq->nparams <= MAX_PARAMS, "params");
		for (int i = 0; i < rq->nparams; i++)
			FUZZ_CHECK(rq->param_values[i][0] != '\0' &&
			    strchr(rq->param_values[i], '/') == NULL, "param %s", rq->param_values[i]);
	} else if (any) {
		FUZZ_CHECK(e->status == 405 && allow[0] != '\0', "405 expected for %s", rq->path);
	} else {
		FUZZ_CHECK(e->status == 404, "404 expected for %s, got %d", rq->path, e->status);
	}
}

static void
fuzz_query(char *q)
{
	for (char *save = NULL, *kv = strtok_r(q, "&", &save); kv != NULL;
	    kv = strtok_r(NULL, "&", &save)) {
		char *eq = strchr(kv, '=');

		for (char *c = kv; *c != '\0'; c++)	/* MHD turns '+' into ' ' first */
			if (*c == '+')
				*c = ' ';
		if (eq != NULL)
			*eq = '\0';
		free(unescape_checked(kv));
		if (eq != NULL)
			free(unescape_checked(eq + 1));
	}
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char *const methods[] = { "GET", "POST", "PUT", "DELETE", "PATCH", "HEAD",
	    "OPTIONS", "get" };
	struct fuzz_in in = { data, size };
	uint8_t m = fuzz_byte(&in);
	char *raw = fuzz_rest(&in, NULL), *qmark = strchr(raw, '?'), *path, allow[128];
	struct request rq;
	struct err e = { 0 };
	const struct route *r;

	if (qmark != NULL) {
		*qmark = '\0';
		fuzz_query(qmark + 1);
	}
	path = unescape_checked(raw);
	memset(&rq, 0, sizeof(rq));
	rq.arena = arena_new();
	rq.method = methods[m % 8];
	rq.path = path;
	r = router_match(&rq, allow, sizeof(allow), &e);
	if (r == NULL && e.status == 400)
		FUZZ_CHECK(strcmp(e.code, "api.bad_path") == 0, "400 code %s", e.code);
	else
		check_match(&rq, r, &e, allow);
	arena_free(rq.arena);
	free(path);
	free(raw);
	return 0;
}
