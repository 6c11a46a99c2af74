/* test_router: route matching, path parameters, 404 / 405 with Allow, refused paths. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "api/server.h"

struct route_case {
	const char	*method;
	const char	*path;
	int		 status;	/* 0: matched */
	const char	*pattern;	/* matched pattern, or Allow for 405 */
	const char	*param;		/* "name=value" expected, or NULL */
};

static const struct route_case cases[] = {
	{ "GET", "/healthz", 0, "/healthz", NULL },
	{ "HEAD", "/healthz", 0, "/healthz", NULL },
	{ "GET", "/v1/environments", 0, "/v1/environments", NULL },
	{ "GET", "/v1/environments/", 0, "/v1/environments", NULL },
	{ "POST", "/v1/environments", 0, "/v1/environments", NULL },
	{ "GET", "/v1/environments/prod", 0, "/v1/environments/{name}", "name=prod" },
	{ "PUT", "/v1/environments/prod", 0, "/v1/environments/{name}", "name=prod" },
	{ "POST", "/v1/clouds/abc/iam/rotate", 0, "/v1/clouds/{id}/iam/rotate", "id=abc" },
	{ "GET", "/v1/clouds/c1/clusters/k1", 0, "/v1/clouds/{cloud_id}/clusters/{id}", "id=k1" },
	{ "POST", "/v1/regions/prod/us-east1/drain", 0, "/v1/regions/{environment}/{region}/drain",
	  "region=us-east1" },
	{ "PATCH", "/v1/environments", 405, "GET, POST", NULL },
	{ "POST", "/v1/environments/prod", 405, "GET, PUT, DELETE", NULL },
	{ "GET", "/v1/nothing", 404, NULL, NULL },
	{ "GET", "/v1/environments/prod/extra", 404, NULL, NULL },
	{ "GET", "/", 0, "/", NULL },	/* the web console */
	{ "GET", "/console/app.js", 0, "/console/app.js", NULL },
	{ "GET", "/console/other.js", 404, NULL, NULL },
	{ "GET", "/v1/environments/../tokens", 400, NULL, NULL },
	{ "GET", "/v1/./environments", 400, NULL, NULL },
	{ "GET", "/v1//environments", 400, NULL, NULL },
	{ "GET", "/v1/environments/a%00b", 400, NULL, NULL },
	{ "GET", "/v1/environments/a\x01z", 400, NULL, NULL },
	{ "GET", "/v1/environments/\xff", 400, NULL, NULL },
	{ "GET", "relative", 400, NULL, NULL },
};

static void
test_routes(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const struct route_case *c = &cases[i];
		struct request rq;
		struct err e = { 0 };
		char allow[128];
		const struct route *r;

		memset(&rq, 0, sizeof(rq));
		rq.arena = arena_new();
		rq.method = c->method;
		rq.path = c->path;
		r = router_match(&rq, allow, sizeof(allow), &e);
		print_message("%s %s\n", c->method, c->path);
		if (c->status == 0) {
			assert_non_null(r);
			assert_string_equal(r->pattern, c->pattern);
			if (c->param != NULL) {
				const char *eq = strchr(c->param, '=');
				char name[32];

				snprintf(name, sizeof(name), "%.*s", (int)(eq - c->param), c->param);
				assert_string_equal(rq_param(&rq, name), eq + 1);
			}
		} else {
			assert_null(r);
			assert_int_equal(e.status, c->status);
			if (c->status == 405)
				assert_string_equal(allow, c->pattern);
		}
		arena_free(rq.arena);
	}
}

/* Every route is reachable: its own pattern (parameters filled) matches it. */
static void
test_table(void **state)
{
	(void)state;
	for (size_t i = 0; i < nroutes; i++) {
		struct request rq;
		struct err e = { 0 };
		char path[256], allow[128], *w = path;
		const struct route *r;

		for (const char *p = routes[i].pattern; *p; p++) {
			if (*p == '{') {
				w += snprintf(w, 8, "x%zu", i);
				p = strchr(p, '}');
				continue;
			}
			*w++ = *p;
		}
		*w = '\0';
		memset(&rq, 0, sizeof(rq));
		rq.arena = arena_new();
		rq.method = routes[i].method;
		rq.path = path;
		r = router_match(&rq, allow, sizeof(allow), &e);
		assert_non_null(r);
		assert_string_equal(r->pattern, routes[i].pattern);
		assert_string_equal(r->method, routes[i].method);
		assert_true(routes[i].min_role != ROLE_NONE || (routes[i].flags & R_PUBLIC));
		arena_free(rq.arena);
	}
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_routes),
		cmocka_unit_test(test_table),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
