/* test_core: err, arena, jsonx and config — tables of cases. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "core/arena.h"
#include "core/config.h"
#include "core/err.h"
#include "core/jsonx.h"

static void
test_err(void **state)
{
	struct err e = { 0 };

	(void)state;
	assert_false(err_is_set(&e));
	assert_false(err_set(&e, 404, "x.not_found", "job %s not found", "abc"));
	assert_int_equal(e.status, 404);
	assert_string_equal(e.code, "x.not_found");
	assert_string_equal(e.msg, "job abc not found");
	assert_string_equal(e.pointer, "");
	assert_false(err_field(&e, 400, "api.bad", "/a/b", "bad %d", 1));
	assert_string_equal(e.pointer, "/a/b");
	assert_false(err_detail(&e, "more %s", "words"));
	assert_string_equal(e.detail, "more words");
	assert_false(err_set(NULL, 500, "x", "no crash on NULL"));
	err_clear(&e);
	assert_false(err_is_set(&e));
}

static void
test_arena(void **state)
{
	struct arena *a = arena_new();
	char *big;

	(void)state;
	for (int i = 0; i < 10000; i++) {
		uint64_t *p = arena_alloc(a, 24);

		assert_int_equal((uintptr_t)p % 16, 0);
		assert_int_equal(p[0] | p[1] | p[2], 0);
		p[0] = (uint64_t)i;
	}
	big = arena_alloc(a, 1 << 20);	/* larger than a chunk */
	memset(big, 'x', 1 << 20);
	assert_string_equal(arena_strdup(a, "hello"), "hello");
	assert_null(arena_strdup(a, NULL));
	assert_string_equal(arena_strndup(a, "hello", 3), "hel");
	assert_string_equal(arena_printf(a, "%d-%s", 42, "x"), "42-x");
	assert_true(arena_used(a) >= 10000 * 32 + (1 << 20));
	arena_free(a);
	arena_free(NULL);
}

struct utf8_case {
	const char	*in;
	size_t		 len;
	bool		 valid;
};

static const struct utf8_case utf8_cases[] = {
	{ "plain ascii", 11, true },
	{ "caf\xc3\xa9", 5, true },
	{ "\xe2\x82\xac", 3, true },			/* euro sign */
	{ "\xf0\x9f\x9a\x80", 4, true },		/* rocket */
	{ "\xff", 1, false },
	{ "\xc3", 1, false },				/* truncated */
	{ "\xc0\xaf", 2, false },			/* overlong '/' */
	{ "\xe0\x80\xaf", 3, false },			/* overlong */
	{ "\xed\xa0\x80", 3, false },			/* surrogate */
	{ "\xf4\x90\x80\x80", 4, false },		/* above U+10FFFF */
	{ "a\0b", 3, false },				/* NUL */
	{ "\xe2\x82", 2, false },			/* truncated at the end */
};

static void
test_utf8(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(utf8_cases) / sizeof(utf8_cases[0]); i++)
		assert_int_equal(jsonx_utf8_valid(utf8_cases[i].in, utf8_cases[i].len),
		    utf8_cases[i].valid);
}

struct parse_case {
	const char	*body;
	const char	*code;		/* NULL: parses */
};

static const struct parse_case parse_cases[] = {
	{ "{\"a\":1}", NULL },
	{ "{}", NULL },
	{ "[1]", "api.not_object" },
	{ "\"s\"", "api.not_object" },
	{ "null", "api.not_object" },
	{ "{\"a\":", "api.bad_json" },
	{ "{\"a\":1,\"a\":2}", "api.bad_json" },	/* duplicate keys */
	{ "", "api.bad_json" },
	{ "{\"a\":\"\xff\"}", "api.bad_json" },
};

static void
test_parse(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(parse_cases) / sizeof(parse_cases[0]); i++) {
		struct err e = { 0 };
		json_t *v = jsonx_parse_object(parse_cases[i].body, strlen(parse_cases[i].body), &e);

		if (parse_cases[i].code == NULL) {
			assert_non_null(v);
		} else {
			assert_null(v);
			assert_int_equal(e.status, 400);
			assert_string_equal(e.code, parse_cases[i].code);
		}
		json_decref(v);
	}
}

static void
test_fields(void **state)
{
	static const char *const allowed[] = { "name", "n", "x", "b", NULL };
	json_t *o = json_pack("{s:s, s:i, s:f, s:b}", "name", "a", "n", 3, "x", 1.5, "b", 1);
	struct err e = { 0 };
	const char *s = NULL;
	long long n = 0;
	double x = 0;
	bool b = false;

	(void)state;
	assert_true(jsonx_only(o, allowed, "", &e));
	assert_true(jsonx_str(o, "name", "", true, &s, &e));
	assert_string_equal(s, "a");
	assert_true(jsonx_int(o, "n", "", true, &n, &e));
	assert_int_equal(n, 3);
	assert_true(jsonx_num(o, "x", "", true, &x, &e));
	assert_true(x == 1.5);
	assert_true(jsonx_bool(o, "b", "", true, &b, &e));
	assert_true(b);
	assert_false(jsonx_int(o, "name", "/spec", true, &n, &e));
	assert_string_equal(e.code, "api.wrong_type");
	assert_string_equal(e.pointer, "/spec/name");
	assert_false(jsonx_str(o, "missing", "", true, &s, &e));
	assert_string_equal(e.code, "api.missing_field");
	assert_string_equal(e.pointer, "/missing");
	s = "kept";
	assert_true(jsonx_str(o, "missing", "", false, &s, &e));
	assert_string_equal(s, "kept");
	json_object_set_new(o, "extra", json_true());
	assert_false(jsonx_only(o, allowed, "/top", &e));
	assert_string_equal(e.code, "api.unknown_field");
	assert_string_equal(e.pointer, "/top/extra");
	json_decref(o);
}

static void
test_config(void **state)
{
	char *argv[] = { "fleetd", "serve", "--threads", "7", "--db-pool=3", "--migrate", NULL };
	char *bad[] = { "fleetd", "serve", "--threads", "x", NULL };
	char *missing[] = { "fleetd", "serve", "--threads", NULL };
	char **rest;
	int nrest;
	struct err e = { 0 };

	(void)state;
	setenv("FLEETD_LISTEN", "127.0.0.1:9999", 1);
	setenv("FLEETD_DB_POOL", "5", 1);
	assert_true(config_load(6, argv, 1, &rest, &nrest, &e));
	assert_string_equal(cfg.listen, "127.0.0.1:9999");	/* environment */
	assert_int_equal(cfg.threads, 7);			/* flag */
	assert_int_equal(cfg.db_pool, 3);			/* flag beats environment */
	assert_int_equal(cfg.body_limit, 1048576);		/* default */
	assert_int_equal(nrest, 2);
	assert_string_equal(rest[0], "serve");
	assert_string_equal(rest[1], "--migrate");
	assert_false(config_load(4, bad, 1, &rest, &nrest, &e));
	assert_string_equal(e.code, "config.bad_value");
	assert_false(config_load(3, missing, 1, &rest, &nrest, &e));
	assert_string_equal(e.code, "config.missing_value");
	unsetenv("FLEETD_LISTEN");
	unsetenv("FLEETD_DB_POOL");
	config_cleanup();
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_err),
		cmocka_unit_test(test_arena),
		cmocka_unit_test(test_utf8),
		cmocka_unit_test(test_parse),
		cmocka_unit_test(test_fields),
		cmocka_unit_test(test_config),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
