/* test_authz: the authorization matrix — every route of api/router.c's table (parsed from
 * the source, checked against api/openapi.yaml's x-fleetd-role) x {no token, viewer,
 * submitter, operator, admin, revoked} x {in-scope, out-of-scope environment} -> the
 * expected status; and the team axis: roles held in team A against team B's objects. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <libpq-fe.h>

#include "tests/integration/harness.h"

#define MAX_ROUTES	128
#define STALE		"If-Match: \"999999\""	/* PUT/DELETE never destroy a seeded object */

struct route_row {
	char	method[8];
	char	pattern[160];
	int	role;		/* 0 none (public), 1 viewer, 2 submitter, 3 operator, 4 admin */
	bool	body;		/* R_BODY */
	bool	star;		/* R_GLOBAL: writes a global object, '*' tokens only */
	bool	metrics;	/* R_METRICS: names every environment, '*' tokens only */
	bool	team;		/* R_TEAM: open to a role held in a team */
};

static struct route_row rt[MAX_ROUTES];
static int nrt;
static struct fleetd_proc fd;
static char dburl[512];
static char *root;			/* admin of every environment, for seeding */
#define NTOK 6
static char *tok[NTOK];			/* none, revoked, viewer, submitter, operator, admin */
static const char *const tok_name[NTOK] = { "none", "revoked", "viewer", "submitter",
	"operator", "admin" };
static const int tok_role[NTOK] = { -1, -1, 1, 2, 3, 4 };

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
static const char *const PRICE[3] = { "70000000-0000-4000-8000-000000000001",
	"70000000-0000-4000-8000-000000000002", "70000000-0000-4000-8000-0000000000ff" };
static const char *const BUDGET[3] = { "60000000-0000-4000-8000-000000000001",
	"60000000-0000-4000-8000-000000000002", "60000000-0000-4000-8000-0000000000ff" };
static const char *const PC = "90000000-0000-4000-8000-000000000001";
static const char *const FLAVOR = "nvidia-gb200";	/* built in: always there */
static const char *const TEAM[3] = { "team-in", "team-out", "team-none" };

static int cells, violations;

static void	teams_setup(void);

/* ---- the route table, from the source */

static int
role_of(const char *s)
{
	if (strncmp(s, "viewer", 6) == 0 || strncmp(s, "VIEWER", 6) == 0)
		return 1;
	if (strncmp(s, "submitter", 9) == 0 || strncmp(s, "SUBMITTER", 9) == 0)
		return 2;
	if (strncmp(s, "operator", 8) == 0 || strncmp(s, "OPERATOR", 8) == 0)
		return 3;
	if (strncmp(s, "admin", 5) == 0 || strncmp(s, "ADMIN", 5) == 0)
		return 4;
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
		r->metrics = strstr(flags, "R_METRICS") != NULL;
		r->team = strstr(flags, "R_TEAM") != NULL;
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

/* A seed statement with its parameters (nine to twelve) typed as text (harness_sql_params leaves
 * them untyped, and $2 is both a uuid and md5's text here). */
static void
seed(PGconn *c, const char *q, const char *env, int k)
{
	const char *p[12] = { env, CLOUD[k], CLUSTER[k], QUEUE[k], JOB[k], OPER[k], TOKOBJ[k],
		PC, k == 0 ? "in" : "out", HOOK[k], PRICE[k], BUDGET[k] };
	static const Oid text[12] = { 25, 25, 25, 25, 25, 25, 25, 25, 25, 25, 25, 25 };
	int n = strstr(q, "$12") != NULL ? 12 : strstr(q, "$11") != NULL ? 11 :
	    strstr(q, "$10") != NULL ? 10 : 9;
	PGresult *r = PQexecParams(c, q, n, text, p, NULL, NULL, 0);

	if (PQresultStatus(r) != PGRES_COMMAND_OK && PQresultStatus(r) != PGRES_TUPLES_OK)
		fail_msg("seed %s: %s", q, PQerrorMessage(c));
	PQclear(r);
}

/* One of each object in env ENV[k]; $1 env, $2 cloud, $3 cluster, $4 queue, $5 job,
 * $6 operation, $7 token object, $8 priority class, $9 a name suffix, $10 webhook,
 * $11 price override, $12 budget. */
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
	"INSERT INTO price_overrides (id, environment, provider, region, machine_type,"
	" price_hour) VALUES ($11::uuid, $1, 'gke', 'us-central1', 'g2-standard-8', 0.5)",
	"INSERT INTO budgets (id, name, environment, scope, target, amount_usd, hard) VALUES"
	" ($12::uuid, 'b-' || $9, $1, 'queue', 'q-' || $9, 100, true)",
	"INSERT INTO teams (name, environments) VALUES ('team-' || $9, ARRAY[$1])",
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
	tok[3] = harness_keep(harness_token(dburl, "submitter", ENV[0]));
	tok[4] = harness_keep(harness_token(dburl, "operator", ENV[0]));
	tok[5] = harness_keep(harness_token(dburl, "admin", ENV[0]));
	teams_setup();
	return 0;
}

/* ---- one cell */

/* The team axis names other jobs, queues and teams than seed k's (NULL: seed k's). */
static const char *over_job, *over_queue, *over_team;

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
			if (strncmp(prev, "flavors/", 8) == 0)
				v = FLAVOR;	/* global: a built-in flavor */
			else if (strncmp(prev, "teams/", 6) == 0)
				v = over_team ? over_team : TEAM[k];
			else if (strcmp(name, "name") == 0 || strcmp(name, "environment") == 0)
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
				v = over_queue ? over_queue : QUEUE[k];
			else if (strncmp(prev, "jobs/", 5) == 0)
				v = over_job ? over_job : JOB[k];
			else if (strncmp(prev, "operations/", 11) == 0)
				v = OPER[k];
			else if (strncmp(prev, "tokens/", 7) == 0)
				v = TOKOBJ[k];
			else if (strncmp(prev, "webhooks/", 9) == 0)
				v = HOOK[k];
			else if (strncmp(prev, "prices/", 7) == 0)
				v = PRICE[k];
			else if (strncmp(prev, "budgets/", 8) == 0)
				v = BUDGET[k];
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
	return strncmp(r->pattern, "/v1/priority-classes", 20) == 0 ||
	    strncmp(r->pattern, "/v1/flavors", 11) == 0;
}

/* Does the route name an object of an environment (vs. a collection or a global one)? */
static bool
env_object(const struct route_row *r)
{
	return strchr(r->pattern, '{') != NULL && !global(r);
}

static const char *over_submit_queue;	/* the team axis: POST /v1/jobs to this queue */

static char *
body_for(const struct route_row *r, int k)
{
	char b[512];

	if (!r->body)
		return NULL;
	if (over_submit_queue != NULL && strcmp(r->pattern, "/v1/jobs") == 0) {
		snprintf(b, sizeof(b), "{\"environment\":\"%s\",\"kind\":\"RayJob\",\"queue\":"
		    "\"%s\",\"name\":\"t\",\"ray_version\":\"2.52.0\",\"entrypoint\":\"python x.py\","
		    "\"head\":{\"cpu\":\"1\",\"memory\":\"1Gi\"},\"worker_groups\":[{\"name\":\"w\","
		    "\"replicas\":1,\"cpu\":\"1\",\"memory\":\"1Gi\"}]}", ENV[0], over_submit_queue);
		return strdup(b);
	}
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
request_as(const struct route_row *r, const char *token, int k, struct http_result *h)
{
	char path[400], url[600], *body = body_for(r, k);
	const char *hdr[2] = { NULL, NULL };

	if (!fill(r, k, path, sizeof(path)))
		fail_msg("no seeded object for a parameter of %s %s: add one to test_authz",
		    r->method, r->pattern);
	/* a collection read is asked for the scope's environment */
	if (strcmp(r->method, "GET") == 0 && strchr(r->pattern, '{') == NULL &&
	    strncmp(r->pattern, "/v1/", 4) == 0 && strcmp(r->pattern, "/v1/tokens") != 0 &&
	    strcmp(r->pattern, "/v1/priority-classes") != 0 &&
	    strcmp(r->pattern, "/v1/flavors") != 0)
		snprintf(path + strlen(path), sizeof(path) - strlen(path), "?environment=%s",
		    ENV[k]);
	if (strcmp(r->method, "PUT") == 0 || strcmp(r->method, "DELETE") == 0)
		hdr[0] = STALE;
	snprintf(url, sizeof(url), "%s%s", fd.url, path);
	harness_http(h, r->method, url, token, body, hdr);
	free(body);
}

static void
request(const struct route_row *r, int t, int k, struct http_result *h)
{
	request_as(r, t >= 0 ? tok[t] : NULL, k, h);
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
		PRICE[1], BUDGET[1], "\"outenv\"" };

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
		{ "/v1/operations", NULL }, { "/v1/webhooks", NULL }, { "/v1/prices", NULL },
		{ "/v1/budgets", NULL }, { "/v1/teams", NULL },
	};
	const char *ids[] = { NULL, CLOUD[0], CLUSTER[0], CLUSTER[0], QUEUE[0], JOB[0],
		TOKOBJ[0], OPER[0], HOOK[0], PRICE[0], BUDGET[0], "\"team-in\"" };

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
	} else if (r->metrics) {
		/* /metrics names every environment's queues and clusters: the matrix's tokens
		 * are scoped to one environment (a '*' token or the metrics token reads it) */
		if (h.status != 403 || strcmp(code_of(&h), "auth.metrics_forbidden") != 0)
			violation(r, t, k, &h, "403 auth.metrics_forbidden: only a '*' token reads it");
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
		} else if (h.status == 403 && tok_role[t] == 2 &&
		    strcmp(code_of(&h), "auth.not_submitter") == 0) {
			;	/* a submitter's cancel of a job it did not submit */
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
			for (int t = 0; t < NTOK; t++)
				for (int k = 1; k >= 0; k--)
					cell(&rt[i], t, k);
		}
	print_message("authz: %d routes x %d tokens x 2 scopes = %d cells checked, %d "
	    "violations\n", nrt, NTOK, cells, violations);
	assert_int_equal(violations, 0);
}

/* ---- the team axis: in environment inenv, team ta owns queue q-ta with job JA, team tb
 * queue q-tb with job JB; tokens hold viewer, submitter and operator in team ta. */

static const char *const JA = "d0000000-0000-4000-8000-0000000000a1";
static const char *const JB = "d0000000-0000-4000-8000-0000000000b1";
static const char *const QA = "c0000000-0000-4000-8000-0000000000a1";
static const char *const QB = "c0000000-0000-4000-8000-0000000000b1";
static char *ttok[3];			/* team ta: viewer, submitter, operator */
static const char *const ttok_name[3] = { "ta viewer", "ta submitter", "ta operator" };
static const int ttok_role[3] = { 1, 2, 3 };
static int tcells, tviolations;

static void
teams_setup(void)
{
	static const char *const roles[3] = { "viewer", "submitter", "operator" };

	harness_post_created(root, "/v1/teams", "{\"name\":\"ta\",\"environments\":[\"inenv\"]}");
	harness_post_created(root, "/v1/teams", "{\"name\":\"tb\",\"environments\":[\"inenv\"]}");
	harness_sql("INSERT INTO queues (id, name, environment, team) VALUES ('%s', 'q-ta',"
	    " 'inenv', 'ta'), ('%s', 'q-tb', 'inenv', 'tb')", QA, QB);
	harness_sql("INSERT INTO jobs (id, name, environment, queue_id, kind, priority_class,"
	    " priority, spec) VALUES ('%s', 'j-ta', 'inenv', '%s', 'RayJob', 'normal', 100, '{}'),"
	    " ('%s', 'j-tb', 'inenv', '%s', 'RayJob', 'normal', 100, '{}')", JA, QA, JB, QB);
	for (int i = 0; i < 3; i++) {
		char body[160];
		json_t *o;

		snprintf(body, sizeof(body), "{\"name\":\"ta-%s\",\"role\":\"%s\",\"environments\":"
		    "[\"inenv\"],\"team\":\"ta\"}", roles[i], roles[i]);
		o = harness_post_created(root, "/v1/tokens", body);
		ttok[i] = harness_keep(strdup(json_string_value(json_object_get(o, "secret"))));
	}
}

/* Team tb's objects, and environment-wide ones: none may be in an answer to team ta. */
static bool
leaks_team(const struct http_result *h)
{
	const char *ids[] = { JB, QB, "\"tb\"", "q-tb", "j-tb", JOB[0], QUEUE[0], JOB[1],
		QUEUE[1], "\"outenv\"" };

	for (size_t i = 0; h->body != NULL && i < sizeof(ids) / sizeof(ids[0]); i++)
		if (strstr(h->body, ids[i]) != NULL)
			return true;
	return false;
}

/* A route naming one job, queue or team: its answer must not tell tb's from none. */
static bool
team_object(const struct route_row *r)
{
	return strstr(r->pattern, "/jobs/{") != NULL || strstr(r->pattern, "/queues/{") != NULL ||
	    strstr(r->pattern, "/teams/{") != NULL;
}

static void
team_request(const struct route_row *r, int t, int side, struct http_result *h)
{
	static const char *const job[3] = { NULL, NULL, NULL }, *queue[3], *team[3], *subq[3];

	(void)job;
	queue[0] = QA; queue[1] = QB; queue[2] = QUEUE[2];
	team[0] = "ta"; team[1] = "tb"; team[2] = "tnone";
	subq[0] = "q-ta"; subq[1] = "q-tb"; subq[2] = "q-none";
	over_job = side == 0 ? JA : side == 1 ? JB : JOB[2];
	over_queue = queue[side];
	over_team = team[side];
	over_submit_queue = subq[side];
	request_as(r, ttok[t], 0, h);
	over_job = over_queue = over_team = over_submit_queue = NULL;
}

static void
tviolation(const struct route_row *r, int t, int side, const struct http_result *h,
	   const char *want)
{
	tviolations++;
	print_error("authz team: %s %s as %s on team %s's object: got %ld %s, want %s\n",
	    r->method, r->pattern, ttok_name[t], side == 0 ? "ta" : "tb", h->status, code_of(h),
	    want);
}

static void
team_cell(const struct route_row *r, int t, int side)
{
	struct http_result h, nx;

	tcells++;
	team_request(r, t, side, &h);
	if (ttok_role[t] < r->role) {
		if (h.status != 403)
			tviolation(r, t, side, &h, "403: the role is too low");
	} else if (!r->team) {
		if (h.status != 403 || strcmp(code_of(&h), "auth.team_forbidden") != 0)
			tviolation(r, t, side, &h, "403 auth.team_forbidden, whatever the object");
	} else if (team_object(r) || (strcmp(r->method, "POST") == 0 &&
	    strcmp(r->pattern, "/v1/jobs") == 0)) {
		team_request(r, t, 2, &nx);
		if (side == 1 && (h.status != 404 || nx.status != 404 ||
		    strcmp(code_of(&h), code_of(&nx)) != 0))
			tviolation(r, t, side, &h, "404 as for an object that does not exist");
		else if (side == 0 && h.status == 404 && strcmp(code_of(&h), code_of(&nx)) == 0)
			tviolation(r, t, side, &h, "the object: it is the team's own");
		harness_http_free(&nx);
	} else if (h.status >= 500 || (h.status < 300 && leaks_team(&h))) {
		tviolation(r, t, side, &h, "no object of team tb, of no team or of outenv");
	}
	if (side == 0 && h.status == 200 && strcmp(r->method, "GET") == 0 &&
	    (strcmp(r->pattern, "/v1/jobs") == 0 || strcmp(r->pattern, "/v1/queues") == 0 ||
	    strcmp(r->pattern, "/v1/teams") == 0) && strstr(h.body, strcmp(r->pattern,
	    "/v1/jobs") == 0 ? JA : strcmp(r->pattern, "/v1/queues") == 0 ? QA : "\"ta\"") == NULL)
		tviolation(r, t, side, &h, "a list with the team's own object");
	harness_http_free(&h);
}

static void
test_team_matrix(void **state)
{
	(void)state;
	for (int pass = 0; pass < 2; pass++)
		for (int i = 0; i < nrt; i++) {
			if (rt[i].role == 0 || (strcmp(rt[i].method, "DELETE") == 0) != (pass == 1))
				continue;
			for (int t = 0; t < 3; t++)
				for (int side = 1; side >= 0; side--)
					team_cell(&rt[i], t, side);
		}
	print_message("authz team: %d routes x 3 team roles x 2 teams = %d cells checked, %d "
	    "violations\n", nrt, tcells, tviolations);
	assert_int_equal(tviolations, 0);
}

/* Reads the stream of path for ms milliseconds (raw socket: the bytes as they came). */
static char *
stream_read(const char *path, const char *token, int ms, void (*during)(void))
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)fd.port) };
	size_t cap = 1 << 20, len = 0;
	char req[1024], *buf = calloc(1, cap);
	struct timeval tv = { .tv_sec = 0, .tv_usec = 100000 };
	time_t end = time(NULL) + ms / 1000;
	int s;

	inet_pton(AF_INET, "127.0.0.1", &a.sin_addr);
	s = socket(AF_INET, SOCK_STREAM, 0);
	assert_true(s >= 0);
	assert_int_equal(connect(s, (struct sockaddr *)&a, sizeof(a)), 0);
	setsockopt(s, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	snprintf(req, sizeof(req), "GET %s HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer "
	    "%s\r\n\r\n", path, token);
	assert_int_equal(write(s, req, strlen(req)), (ssize_t)strlen(req));
	usleep(300000);
	during();
	while (time(NULL) <= end && len + 1 < cap) {
		ssize_t n = read(s, buf + len, cap - len - 1);

		if (n == 0)
			break;
		if (n > 0)
			len += (size_t)n;
	}
	close(s);
	buf[len] = '\0';
	return buf;
}

static void
team_events(void)
{
	harness_sql("INSERT INTO job_events (job_id, type, message) VALUES ('%s', 'test', 'ev-a'),"
	    " ('%s', 'test', 'ev-b'), ('%s', 'test', 'ev-none')", JA, JB, JOB[0]);
}

/* GET /v1/events (stream and page) and a job's stream as a member of team ta. */
static void
test_team_streams(void **state)
{
	struct http_result h;
	char *got;

	(void)state;
	got = stream_read("/v1/events?follow=true", ttok[0], 3000, team_events);
	if (strstr(got, "ev-a") == NULL)
		fail_msg("team ta's stream misses its own event: %.300s", got);
	if (strstr(got, "ev-b") != NULL || strstr(got, "ev-none") != NULL || strstr(got, JB))
		fail_msg("team ta's stream shows another team's event: %.300s", got);
	free(got);
	harness_http(&h, "GET", harness_url(&fd, "/v1/events?limit=500"), ttok[0], NULL, NULL);
	assert_int_equal(h.status, 200);
	assert_non_null(strstr(h.body, "ev-a"));
	assert_null(strstr(h.body, "ev-b"));
	assert_null(strstr(h.body, "ev-none"));
	harness_http_free(&h);
	harness_http(&h, "GET", harness_url(&fd, "/v1/jobs/%s/events?follow=true", JB), ttok[0],
	    NULL, NULL);
	assert_int_equal(h.status, 404);
	assert_string_equal(code_of(&h), "queue.job_not_found");
	harness_http_free(&h);
	/* an environment viewer sees every team */
	harness_http(&h, "GET", harness_url(&fd, "/v1/events?limit=500"), tok[2], NULL, NULL);
	assert_int_equal(h.status, 200);
	assert_non_null(strstr(h.body, "ev-a"));
	assert_non_null(strstr(h.body, "ev-b"));
	harness_http_free(&h);
}

/* A submitter cancels its own jobs only; an operator of the team cancels any of them. */
static void
test_team_submitter(void **state)
{
	static const char *const JS = "d0000000-0000-4000-8000-0000000000a2";
	struct http_result h;

	(void)state;
	harness_sql("INSERT INTO jobs (id, name, environment, queue_id, kind, priority_class,"
	    " priority, spec) VALUES ('%s', 'j-ta2', 'inenv', '%s', 'RayJob', 'normal', 100,"
	    " '{}')", JS, QA);
	harness_http(&h, "POST", harness_url(&fd, "/v1/jobs/%s/cancel", JS), ttok[1], NULL, NULL);
	assert_int_equal(h.status, 403);
	assert_string_equal(code_of(&h), "auth.not_submitter");
	harness_http_free(&h);
	harness_sql("UPDATE jobs SET submitted_by = (SELECT id::text FROM api_tokens WHERE name ="
	    " 'ta-submitter') WHERE id = '%s'", JS);
	harness_http(&h, "POST", harness_url(&fd, "/v1/jobs/%s/cancel", JS), ttok[1], NULL, NULL);
	assert_int_equal(h.status, 200);
	harness_http_free(&h);
	harness_http(&h, "POST", harness_url(&fd, "/v1/jobs/%s/cancel", JB), ttok[2], NULL, NULL);
	assert_int_equal(h.status, 404);
	harness_http_free(&h);
}

/* A cluster drain by an operator held in team ta moves ta's jobs only and cordons nothing
 * (the cluster is every team's); the drain is ta's operation: ta reads it, tb and the
 * other roles held in ta below operator cannot drain (403), and tb's operator gets 404 for
 * ta's drain as for none; an environment drain stays invisible to the team. */
static void
test_team_drain(void **state)
{
	struct http_result h;
	json_t *o;
	char op[64], *tb_op;
	const char *k = CLUSTER[0];

	(void)state;
	o = harness_post_created(root, "/v1/tokens", "{\"name\":\"tb-operator\",\"role\":"
	    "\"operator\",\"environments\":[\"inenv\"],\"team\":\"tb\"}");
	tb_op = harness_keep(strdup(json_string_value(json_object_get(o, "secret"))));
	harness_sql("UPDATE clusters SET cordoned = false WHERE id = '%s'", k);
	harness_sql("UPDATE jobs SET state = 'running', cluster_id = '%s', attempt = 1"
	    " WHERE id IN ('%s', '%s')", k, JA, JB);
	for (int t = 0; t < 2; t++) {	/* viewer and submitter of ta: the role is too low */
		harness_http(&h, "POST", harness_url(&fd, "/v1/clusters/%s/drain", k), ttok[t],
		    NULL, NULL);
		assert_int_equal(h.status, 403);
		assert_string_equal(code_of(&h), "auth.forbidden");
		harness_http_free(&h);
	}
	harness_http(&h, "POST", harness_url(&fd, "/v1/clusters/%s/drain", k), ttok[2], NULL,
	    NULL);
	if (h.status != 202)
		fail_msg("team drain: %ld %s", h.status, h.body);
	snprintf(op, sizeof(op), "%s", json_string_value(json_object_get(h.json, "id")));
	assert_int_equal(json_integer_value(json_object_get(h.json, "total")), 1);
	assert_string_equal(json_string_value(json_object_get(json_object_get(h.json, "target"),
	    "team")), "ta");
	assert_non_null(strstr(h.body, JA));
	assert_null(strstr(h.body, JB));
	harness_http_free(&h);
	assert_int_equal(harness_sql_long("SELECT count(*) FROM clusters WHERE id = '%s'"
	    " AND cordoned", k), 0);
	assert_int_equal(harness_sql_long("SELECT count(*) FROM operation_jobs WHERE"
	    " operation_id = '%s' AND job_id = '%s'", op, JB), 0);
	assert_int_equal(harness_sql_long("SELECT count(*) FROM jobs WHERE id = '%s' AND"
	    " state = 'running'", JB), 1);
	/* ta's drain: ta reads it (viewer too) and lists it; tb's operator gets 404 */
	for (int t = 0; t < 3; t++) {
		harness_http(&h, "GET", harness_url(&fd, "/v1/operations/%s", op), ttok[t], NULL,
		    NULL);
		assert_int_equal(h.status, 200);
		harness_http_free(&h);
	}
	harness_http(&h, "GET", harness_url(&fd, "/v1/operations?limit=100"), ttok[0], NULL, NULL);
	assert_int_equal(h.status, 200);
	assert_non_null(strstr(h.body, op));
	assert_null(strstr(h.body, OPER[0]));	/* the seeded environment drain */
	harness_http_free(&h);
	harness_http(&h, "GET", harness_url(&fd, "/v1/operations/%s", op), tb_op, NULL, NULL);
	assert_int_equal(h.status, 404);
	assert_string_equal(code_of(&h), "operation.not_found");
	harness_http_free(&h);
	harness_http(&h, "POST", harness_url(&fd, "/v1/operations/%s/cancel", op), tb_op, NULL,
	    NULL);
	assert_int_equal(h.status, 404);
	harness_http_free(&h);
	harness_http(&h, "GET", harness_url(&fd, "/v1/operations?limit=100"), tb_op, NULL, NULL);
	assert_int_equal(h.status, 200);
	assert_null(strstr(h.body, op));
	harness_http_free(&h);
	/* tb's operator drains the same cluster: JB only */
	harness_http(&h, "POST", harness_url(&fd, "/v1/clusters/%s/drain", k), tb_op, NULL, NULL);
	assert_int_equal(h.status, 202);
	assert_non_null(strstr(h.body, JB));
	assert_null(strstr(h.body, JA));
	harness_http_free(&h);
	/* an environment's drain is no team's */
	harness_http(&h, "GET", harness_url(&fd, "/v1/operations/%s", OPER[0]), ttok[2], NULL,
	    NULL);
	assert_int_equal(h.status, 404);
	harness_http_free(&h);
	/* another environment's cluster: 404 as for none */
	harness_http(&h, "POST", harness_url(&fd, "/v1/clusters/%s/drain", CLUSTER[1]), ttok[2],
	    NULL, NULL);
	assert_int_equal(h.status, 404);
	assert_string_equal(code_of(&h), "cluster.not_found");
	harness_http_free(&h);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_matrix),
		cmocka_unit_test(test_team_matrix),
		cmocka_unit_test(test_team_streams),
		cmocka_unit_test(test_team_submitter),
		cmocka_unit_test(test_team_drain),
	};

	/* the seeded rows are minimal (no real job spec or policy documents), so these
	 * answers are no samples of the contract: test_registry and the others check it */
	setenv("FLEETD_RESPONSE_LOG", "/dev/null", 1);

	return cmocka_run_group_tests(tests, setup, harness_group_teardown);
}
