/* test_authz: the authorization matrix — every route of api/router.c's table (parsed from
 * the source, checked against api/openapi.yaml's x-fleetd-role) x {no token, viewer,
 * operator, admin, revoked} x {in-scope, out-of-scope environment} -> the expected status. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <libpq-fe.h>

#include "tests/integration/harness.h"

#define MAX_ROUTES	128
#define STALE		"If-Match: \"999999\""	/* PUT/DELETE never destroy a seeded object */

struct route_row {
	char	method[8];
	char	pattern[160];
	int	role;		/* 0 none (public), 1 viewer, 2 operator, 3 admin */
	bool	body;		/* R_BODY */
	bool	star;		/* R_GLOBAL: writes a global object, '*' tokens only */
};

static struct route_row rt[MAX_ROUTES];
static int nrt;
static struct fleetd_proc fd;
static char dburl[512];
static char *root;			/* admin of every environment, for seeding */
static char *tok[5];			/* none, revoked, viewer, operator, admin */
static const char *const tok_name[5] = { "none", "revoked", "viewer", "operator", "admin" };
static const int tok_role[5] = { -1, -1, 1, 2, 3 };

/* Seeded objects: [0] in the tokens' environment, [1] outside it, [2] nowhere. */
static const char *const ENV[3] = { "inenv", "outenv", "nosuchenv" };
static const char *const CLOUD[3] = { "a0000000-0000-4000-8000-000000000001",
	"a0000000-0000-4000-8000-000000000002", "a0000000-0000-4000-8000-0000000000ff" };
static const char *const CLUSTER[3] = { "b0000000-0000-4000-8000-000000000001",
	"b0000000-0000-4000-8000-000000000002", "b0000000-0000-4000-8000-0000000000ff" };
static const char *const QUEUE[3] = { "c0000000-0000-4000-8000-000000000001",
	"c0000000-0000-4000-8000-000000000002", "c0000000-0000-4000-8000-0000000000ff" };
static const char *const JOB[3] = { "d0000000-0000-4000-8000-000000000001",
	"d0000000-0000-4000-8000-000000000002", "d0000000-0000-4000-8000-0000000000ff" };
static const char *const OPER[3] = { "e0000000-0000-4000-8000-000000000001",
	"e0000000-0000-4000-8000-000000000002", "e0000000-0000-4000-8000-0000000000ff" };
static const char *const TOKOBJ[3] = { "f0000000-0000-4000-8000-000000000001",
	"f0000000-0000-4000-8000-000000000002", "f0000000-0000-4000-8000-0000000000ff" };
static const char *const HOOK[3] = { "80000000-0000-4000-8000-000000000001",
	"80000000-0000-4000-8000-000000000002", "80000000-0000-4000-8000-0000000000ff" };
static const char *const PC = "90000000-0000-4000-8000-000000000001";

static int cells, violations;

/* ---- the route table, from the source */

static int
role_of(const char *s)
{
	if (strncmp(s, "viewer", 6) == 0 || strncmp(s, "VIEWER", 6) == 0)
		return 1;
	if (strncmp(s, "operator", 8) == 0 || strncmp(s, "OPERATOR", 8) == 0)
		return 2;
	if (strncmp(s, "admin", 5) == 0 || strncmp(s, "ADMIN", 5) == 0)
		return 3;
	return 0;
}

static void
parse_router(void)
{
	char *src = harness_slurp(FLEETD_SOURCE_DIR "/api/router.c"), *p, *end, *line, *save;
	int entries = 0;

	assert_non_null(src);
	p = strstr(src, "const struct route routes[] = {");
	assert_non_null(p);
	end = strstr(p, "\n};");
	assert_non_null(end);
	*end = '\0';
	for (line = strtok_r(strchr(p, '\n'), "\n", &save); line != NULL;
	    line = strtok_r(NULL, "\n", &save)) {
		struct route_row *r = &rt[nrt];
		char role[32], flags[128];

		if (strstr(line, "{ \"") == NULL)
			continue;
		entries++;
		assert_true(nrt < MAX_ROUTES);
		if (sscanf(line, " { \"%7[^\"]\", \"%159[^\"]\", %*[^,], ROLE_%31[A-Z], %127[^}]",
		    r->method, r->pattern, role, flags) != 4)
			fail_msg("cannot read router.c line: %s", line);
		r->role = role_of(role);
		r->body = strstr(flags, "R_BODY") != NULL;
		r->star = strstr(flags, "R_GLOBAL") != NULL;
		if (strstr(flags, "R_PUBLIC") != NULL)
			r->role = 0;
		else if (r->role == 0)
			fail_msg("route %s %s is neither public nor has a role", r->method,
			    r->pattern);
		nrt++;
	}
	assert_int_equal(entries, nrt);
	free(src);
}

/* Every routed operation must be in api/openapi.yaml with the same x-fleetd-role. */
static void
check_openapi(void)
{
	char *y = harness_slurp(FLEETD_SOURCE_DIR "/api/openapi.yaml"), *line, *save = NULL;
	char path[160] = "", method[16] = "";
	int role[MAX_ROUTES], bad = 0;
	bool seen[MAX_ROUTES] = { false };

	assert_non_null(y);
	for (line = strtok_r(y, "\n", &save); line != NULL; line = strtok_r(NULL, "\n", &save)) {
		if (strcmp(line, "components:") == 0)
			break;
		if (strncmp(line, "  /", 3) == 0 && line[strlen(line) - 1] == ':') {
			snprintf(path, sizeof(path), "%.*s", (int)strlen(line) - 3, line + 2);
			method[0] = '\0';
		} else if (strncmp(line, "    ", 4) == 0 && line[4] != ' ' &&
		    line[strlen(line) - 1] == ':') {
			snprintf(method, sizeof(method), "%.*s", (int)strlen(line) - 5, line + 4);
			for (char *c = method; *c; c++)
				*c = (char)(*c >= 'a' && *c <= 'z' ? *c - 32 : *c);
		} else if (strncmp(line, "      x-fleetd-role: ", 21) == 0 ||
		    strncmp(line, "      security: []", 18) == 0) {
			for (int i = 0; i < nrt; i++)
				if (strcmp(rt[i].pattern, path) == 0 &&
				    strcmp(rt[i].method, method) == 0) {
					seen[i] = true;
					role[i] = line[6] == 's' ? 0 : role_of(line + 21);
				}
		}
	}
	free(y);
	for (int i = 0; i < nrt; i++) {
		if (!seen[i] && rt[i].role != 0) {
			print_error("openapi: %s %s is routed but has no x-fleetd-role\n",
			    rt[i].method, rt[i].pattern);
			bad++;
		} else if (seen[i] && role[i] != rt[i].role) {
			print_error("openapi: %s %s: router says role %d, openapi %d\n",
			    rt[i].method, rt[i].pattern, rt[i].role, role[i]);
			bad++;
		}
	}
	assert_int_equal(bad, 0);
}

/* ---- seeding */

/* A seed statement with its nine parameters typed as text (harness_sql_params leaves
 * them untyped, and $2 is both a uuid and md5's text here). */
static void
seed(PGconn *c, const char *q, const char *env, int k)
{
	const char *p[10] = { env, CLOUD[k], CLUSTER[k], QUEUE[k], JOB[k], OPER[k], TOKOBJ[k],
		PC, k == 0 ? "in" : "out", HOOK[k] };
	static const Oid text[10] = { 25, 25, 25, 25, 25, 25, 25, 25, 25, 25 };
	int n = strstr(q, "$10") != NULL ? 10 : 9;
	PGresult *r = PQexecParams(c, q, n, text, p, NULL, NULL, 0);

	if (PQresultStatus(r) != PGRES_COMMAND_OK && PQresultStatus(r) != PGRES_TUPLES_OK)
		fail_msg("seed %s: %s", q, PQerrorMessage(c));
	PQclear(r);
}

/* One of each object in env ENV[k]; $1 env, $2 cloud, $3 cluster, $4 queue, $5 job,
 * $6 operation, $7 token object, $8 priority class, $9 a name suffix, $10 webhook. */
static const char *const seeds[] = {
	"INSERT INTO clouds (id, name, environment, provider, region, account, external_id,"
	" state, required) VALUES ($2::uuid, 'cloud-' || $9, $1, 'gke', 'us-central1',"
	" jsonb_build_object('project', 'p-' || $9), md5($2), 'active', '{}')",
	"INSERT INTO iam_pairs (cloud_id, control_plane_role, cluster_role) VALUES ($2::uuid,"
	" 'cp-' || $9 || '@p.iam.gserviceaccount.com', 'cl-' || $9 || '@p.iam.gserviceaccount.com')",
	"INSERT INTO clusters (id, cloud_id, name, api_server, ca_cert, credentials_sealed,"
	" provider_cluster_id) VALUES ($3::uuid, $2::uuid, 'k-' || $9, 'https://127.0.0.1:1',"
	" 'x', 'x', 'projects/p/locations/us-central1/clusters/k-' || $9)",
	"INSERT INTO queues (id, name, environment) VALUES ($4::uuid, 'q-' || $9, $1)",
	"INSERT INTO priority_classes (id, name, value) VALUES ($8::uuid, 'normal', 100)"
	" ON CONFLICT DO NOTHING",
	"INSERT INTO jobs (id, name, environment, queue_id, kind, priority_class, priority,"
	" spec) VALUES ($5::uuid, 'j-' || $9, $1, $4::uuid, 'RayJob', 'normal', 100, '{}')",
	"INSERT INTO operations (id, kind, environment, target) VALUES ($6::uuid, 'drain', $1,"
	" jsonb_build_object('cluster_id', $3, 'environment', $1))",
	"INSERT INTO api_tokens (id, name, role, environments, secret_sha256) VALUES ($7::uuid,"
	" 'obj-' || $9, 'viewer', ARRAY[$1], md5($7) || md5($1))",
	"INSERT INTO webhooks (id, environment, url, types, secret_sealed, cursor) VALUES"
	" ($10::uuid, $1, 'https://hooks.example.com/' || $9, '{*}', 'x', 0)",
};

static int
setup(void **state)
{
	const char *env[] = { "FLEETD_WORKERS=none",
		"FLEETD_MASTER_KEY=YXV0aHotdGVzdC1tYXN0ZXIta2V5LTMyLWJ5dGVzISE=", NULL };
	PGconn *c;

	(void)state;
	parse_router();
	harness_db_create("authz", dburl, sizeof(dburl));
	harness_fleetd_start(&fd, dburl, env);
	root = harness_keep(harness_token(dburl, "admin", "*"));
	for (int k = 0; k < 2; k++) {
		char body[64];

		snprintf(body, sizeof(body), "{\"name\":\"%s\"}", ENV[k]);
		harness_post_created(root, "/v1/environments", body);
	}
	c = PQconnectdb(dburl);
	assert_int_equal(PQstatus(c), CONNECTION_OK);
	for (int k = 0; k < 2; k++)
		for (size_t i = 0; i < sizeof(seeds) / sizeof(seeds[0]); i++)
			seed(c, seeds[i], ENV[k], k);
	/* the revoked token is a revoked admin of every environment */
	tok[1] = harness_keep(harness_token(dburl, "admin", "*"));
	PQfinish(c);
	harness_sql("UPDATE api_tokens SET revoked_at = now() WHERE id = (SELECT id FROM"
	    " api_tokens WHERE name = 'test-admin' ORDER BY created_at DESC LIMIT 1)");
	assert_int_equal(harness_sql_long("SELECT count(*) FROM api_tokens WHERE revoked_at IS NOT"
	    " NULL AND name = 'test-admin'"), 1);
	tok[2] = harness_keep(harness_token(dburl, "viewer", ENV[0]));
	tok[3] = harness_keep(harness_token(dburl, "operator", ENV[0]));
	tok[4] = harness_keep(harness_token(dburl, "admin", ENV[0]));
	return 0;
}

/* ---- one cell */

/* The route's path for objects of seed k; false when a parameter has no seed. */
static bool
fill(const struct route_row *r, int k, char *out, size_t n)
{
	const char *p = r->pattern, *prev = "", *cur = "";
	size_t o = 0;

	while (*p != '\0' && o + 1 < n) {
		if (*p == '{') {
			const char *end = strchr(p, '}'), *v = NULL;
			char name[32];

			snprintf(name, sizeof(name), "%.*s", (int)(end - p - 1), p + 1);
			if (strcmp(name, "name") == 0 || strcmp(name, "environment") == 0)
				v = ENV[k];
			else if (strcmp(name, "region") == 0)
				v = "us-central1";
			else if (strcmp(name, "cloud_id") == 0)
				v = CLOUD[k];
			else if (strncmp(prev, "clouds/", 7) == 0)
				v = CLOUD[k];
			else if (strncmp(prev, "clusters/", 9) == 0)
				v = CLUSTER[k];
			else if (strncmp(prev, "queues/", 7) == 0)
				v = QUEUE[k];
			else if (strncmp(prev, "jobs/", 5) == 0)
				v = JOB[k];
			else if (strncmp(prev, "operations/", 11) == 0)
				v = OPER[k];
			else if (strncmp(prev, "tokens/", 7) == 0)
				v = TOKOBJ[k];
			else if (strncmp(prev, "webhooks/", 9) == 0)
				v = HOOK[k];
			else if (strncmp(prev, "priority-classes/", 17) == 0)
				v = PC;		/* global: no environment */
			if (v == NULL)
				return false;
			o += (size_t)snprintf(out + o, n - o, "%s", v);
			p = end + 1;
			continue;
		}
		if (*p == '/') {	/* prev: the segment before the current one */
			prev = cur;
			cur = p + 1;
		}
		out[o++] = *p++;
	}
	out[o] = '\0';
	return true;
}

/* Objects of no environment: every scoped token with the role may use them alike. */
static bool
global(const struct route_row *r)
{
	return strncmp(r->pattern, "/v1/priority-classes", 20) == 0;
}

/* Does the route name an object of an environment (vs. a collection or a global one)? */
static bool
env_object(const struct route_row *r)
{
	return strchr(r->pattern, '{') != NULL && !global(r);
}

static char *
body_for(const struct route_row *r, int k)
{
	char b[256];

	if (!r->body)
		return NULL;
	if (strcmp(r->pattern, "/v1/environments") == 0)
		snprintf(b, sizeof(b), "{\"name\":\"%s\"}", ENV[k]);
	else if (strcmp(r->pattern, "/v1/tokens") == 0)
		snprintf(b, sizeof(b), "{\"name\":\"authz\",\"role\":\"viewer\",\"environments\":"
		    "[\"%s\"]}", ENV[k]);
	else if (strcmp(r->pattern, "/v1/priority-classes") == 0)
		snprintf(b, sizeof(b), "{\"name\":\"pc-%d\",\"value\":%d}", cells, cells);
	else if (strchr(r->pattern, '{') == NULL)
		snprintf(b, sizeof(b), "{\"environment\":\"%s\"}", ENV[k]);
	else if (strstr(r->pattern, "/drain") != NULL)	/* issue 18: evacuation */
		snprintf(b, sizeof(b), "{\"source\":\"unreachable\"}");
	else if (strstr(r->pattern, "/move") != NULL)
		snprintf(b, sizeof(b), "{\"target\":{\"region\":\"us-central1\"},"
		    "\"source\":\"unreachable\"}");
	else
		snprintf(b, sizeof(b), "{}");
	return strdup(b);
}

static void
request(const struct route_row *r, int t, int k, struct http_result *h)
{
	char path[400], url[600], *body = body_for(r, k);
	const char *hdr[2] = { NULL, NULL };

	if (!fill(r, k, path, sizeof(path)))
		fail_msg("no seeded object for a parameter of %s %s: add one to test_authz",
		    r->method, r->pattern);
	/* a collection read is asked for the scope's environment */
	if (strcmp(r->method, "GET") == 0 && strchr(r->pattern, '{') == NULL &&
	    strncmp(r->pattern, "/v1/", 4) == 0 && strcmp(r->pattern, "/v1/tokens") != 0 &&
	    strcmp(r->pattern, "/v1/priority-classes") != 0)
		snprintf(path + strlen(path), sizeof(path) - strlen(path), "?environment=%s",
		    ENV[k]);
	if (strcmp(r->method, "PUT") == 0 || strcmp(r->method, "DELETE") == 0)
		hdr[0] = STALE;
	snprintf(url, sizeof(url), "%s%s", fd.url, path);
	harness_http(h, r->method, url, t >= 0 ? tok[t] : NULL, body, hdr);
	free(body);
}

static const char *
code_of(const struct http_result *h)
{
	const char *c = json_string_value(json_object_get(h->json, "code"));

	return c ? c : "";
}

/* The ids of environment outenv's objects; none may be in an answer to a scoped token. */
static bool
leaks_out(const struct http_result *h)
{
	const char *ids[] = { CLOUD[1], CLUSTER[1], QUEUE[1], JOB[1], OPER[1], TOKOBJ[1], HOOK[1],
		"\"outenv\"" };

	for (size_t i = 0; h->body != NULL && i < sizeof(ids) / sizeof(ids[0]); i++)
		if (strstr(h->body, ids[i]) != NULL)
			return true;
	return false;
}

/* The in-scope object a collection read must list (NULL: nothing to look for). */
static const char *
listed(const struct route_row *r)
{
	static const struct { const char *pattern, *id; } l[] = {
		{ "/v1/environments", "\"inenv\"" }, { "/v1/clouds", NULL },
		{ "/v1/clusters", NULL }, { "/v1/clouds/{id}/clusters", NULL },
		{ "/v1/queues", NULL }, { "/v1/jobs", NULL }, { "/v1/tokens", NULL },
		{ "/v1/operations", NULL }, { "/v1/webhooks", NULL },
	};
	const char *ids[] = { NULL, CLOUD[0], CLUSTER[0], CLUSTER[0], QUEUE[0], JOB[0],
		TOKOBJ[0], OPER[0], HOOK[0] };

	for (size_t i = 0; i < sizeof(l) / sizeof(l[0]); i++)
		if (strcmp(r->method, "GET") == 0 && strcmp(r->pattern, l[i].pattern) == 0)
			return l[i].id ? l[i].id : ids[i];
	return NULL;
}

static void
violation(const struct route_row *r, int t, int k, const struct http_result *h,
	  const char *want)
{
	violations++;
	print_error("authz: %s %s as %s, %s scope: got %ld %s, want %s\n", r->method,
	    r->pattern, tok_name[t], k == 0 ? "in" : "out-of", h->status, code_of(h), want);
}

static void
cell(const struct route_row *r, int t, int k)
{
	struct http_result h, nx;
	char *www;

	cells++;
	request(r, t == 0 ? -1 : t, k, &h);
	if (r->role == 0) {
		if (h.status >= 400)
			violation(r, t, k, &h, "a public answer");
	} else if (tok_role[t] < 0) {
		www = harness_header(&h, "WWW-Authenticate");
		if (h.status != 401 || www == NULL || strncmp(www, "Bearer", 6) != 0)
			violation(r, t, k, &h, "401 with WWW-Authenticate: Bearer");
		free(www);
	} else if (tok_role[t] < r->role) {
		if (h.status != 403)
			violation(r, t, k, &h, "403: the role is too low");
	} else if (r->star) {
		/* an object every environment shares: a scoped admin may not change it */
		if (h.status != 403 || strcmp(code_of(&h), "auth.global_object") != 0)
			violation(r, t, k, &h, "403 auth.global_object: only a '*' token writes it");
	} else if (strcmp(r->method, "POST") == 0 && strcmp(r->pattern, "/v1/environments") == 0) {
		/* A new environment is outside every scoped token: only a token for every
		 * environment creates them, so the answer cannot tell which names exist. */
		if (h.status != 403)
			violation(r, t, k, &h, "403: only a '*' token creates environments");
	} else if (k == 0 || global(r)) {
		/* a 404 of the handler is fine (a job without a manifest yet), unless it is
		 * the very answer for an object that does not exist */
		if (h.status == 404 && env_object(r)) {
			request(r, t, 2, &nx);
			if (strcmp(code_of(&h), code_of(&nx)) == 0)
				violation(r, t, k, &h, "the object: it is in the token's environment");
			harness_http_free(&nx);
		} else if (h.status == 401 || h.status == 403 || h.status == 404 ||
		    h.status >= 500) {
			violation(r, t, k, &h, "an answer of the handler (not 401/403/404/5xx)");
		} else if (h.status == 200 && leaks_out(&h)) {
			violation(r, t, k, &h, "no object of another environment in the answer");
		} else if (h.status == 200 && listed(r) != NULL &&
		    strstr(h.body, listed(r)) == NULL) {
			violation(r, t, k, &h, "a list with the token's own object");
		}
	} else if (env_object(r) || strcmp(r->method, "GET") != 0) {
		/* outside the token's environments: exactly as if it did not exist */
		request(r, t, 2, &nx);
		if (env_object(r) && h.status != 404)
			violation(r, t, k, &h, "404: the object is in another environment");
		else if (h.status != nx.status || strcmp(code_of(&h), code_of(&nx)) != 0 ||
		    h.status < 300)
			violation(r, t, k, &h, "the answer for an environment that does not exist");
		harness_http_free(&nx);
	} else if (h.status != 200 || leaks_out(&h)) {
		violation(r, t, k, &h, "200 without objects of another environment");
	}
	harness_http_free(&h);
}

static void
test_matrix(void **state)
{
	(void)state;
	check_openapi();
	/* DELETEs last, so that a successful one removes nothing a later cell needs */
	for (int pass = 0; pass < 2; pass++)
		for (int i = 0; i < nrt; i++) {
			if ((strcmp(rt[i].method, "DELETE") == 0) != (pass == 1))
				continue;
			for (int t = 0; t < 5; t++)
				for (int k = 1; k >= 0; k--)
					cell(&rt[i], t, k);
		}
	print_message("authz: %d routes x 5 tokens x 2 scopes = %d cells checked, %d "
	    "violations\n", nrt, cells, violations);
	assert_int_equal(violations, 0);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_matrix),
	};

	/* the seeded rows are minimal (no real job spec or policy documents), so these
	 * answers are no samples of the contract: test_registry and the others check it */
	setenv("FLEETD_RESPONSE_LOG", "/dev/null", 1);

	return cmocka_run_group_tests(tests, setup, harness_group_teardown);
}
