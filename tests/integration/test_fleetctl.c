/* test_fleetctl: the fleetctl binary against a live fleetd — login, tables, JSON, exit codes,
 * one-line errors.  Against a scripted server: test_fleetctl_scripted; the renderer alone:
 * test_fleetctl_render. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <microhttpd.h>

#include "cli/table.c"
#include "cli/views.c"
#include "tests/harness/harness.h"

#define FIX		"tests/fixtures/fleetctl/"
#define FLEETCTL	HARNESS_FLEETCTL

/* ---- the binary against fleetd ---- */

static struct fleetd_proc fd;

/* Whether the key: value output of `fleetctl ... get` has the line "key: <pad>value": the
 * padding follows the longest key, which grows as resources gain fields. */
static bool
kv_line(const char *out, const char *key, const char *value)
{
	char k[64];
	const char *p = out;

	snprintf(k, sizeof(k), "\n%s:", key);
	while ((p = strstr(p, k)) != NULL) {
		p += strlen(k);
		while (*p == ' ')
			p++;
		if (strncmp(p, value, strlen(value)) == 0 && p[strlen(value)] == '\n')
			return true;
	}
	return false;
}
static char dburl[512];
static char *admin;

#define CTL(r, ...) harness_ctl_run((r), NULL, NULL, (const char *const[]){ __VA_ARGS__, NULL })
#define CTL_ENV(r, env, ...) \
	harness_ctl_run((r), NULL, (env), (const char *const[]){ __VA_ARGS__, NULL })

static int
setup_server(void **state)
{
	(void)state;
	harness_ctl_home_make();
	harness_db_create("fleetctl", dburl, sizeof(dburl));
	harness_fleetd_start(&fd, dburl, NULL);
	admin = harness_token(dburl, "admin", "*");
	harness_secret(admin);
	harness_post_created(admin, "/v1/environments", "{\"name\":\"prod\",\"description\":"
	    "\"production, every region we run in\"}");
	harness_post_created(admin, "/v1/environments", "{\"name\":\"staging\",\"description\":"
	    "\"pre-production\"}");
	harness_post_created(admin, "/v1/environments", "{\"name\":\"dev\",\"description\":\"\"}");
	return 0;
}

static int
teardown_server(void **state)
{
	(void)state;
	if (fd.pid > 0)
		assert_int_equal(harness_fleetd_stop(&fd), 0);
	if (dburl[0] != '\0')
		harness_db_drop(dburl);
	harness_ctl_home_drop();
	free(admin);
	admin = NULL;
	harness_validate_responses();
	return 0;
}

static void
logout(void)
{
	harness_sh("rm -rf '%s/.config'", harness_ctl_home);
}

static void
login_admin(void)
{
	struct harness_ctl r;

	CTL(&r, "login", "--url", fd.url, "--token", admin);
	assert_int_equal(r.rc, 0);
	harness_ctl_free(&r);
}

static bool
config_exists(void)
{
	char p[128];
	struct stat st;

	snprintf(p, sizeof(p), "%s/.config/fleet/config", harness_ctl_home);
	return stat(p, &st) == 0;
}

/* "YYYY-MM-DD hh:mm" in place of every rendered time (same width, alignment kept). */
static void
mask_times(char *s)
{
	static const char pat[] = "dddd-dd-dd dd:dd", mask[] = "YYYY-MM-DD hh:mm";
	size_t n = strlen(pat);

	for (; strlen(s) >= n; s++) {
		size_t k;

		for (k = 0; k < n; k++)
			if (pat[k] == 'd' ? (s[k] < '0' || s[k] > '9') : s[k] != pat[k])
				break;
		if (k == n)
			memcpy(s, mask, n);
	}
}

static void
test_no_token(void **state)
{
	struct harness_ctl r;

	(void)state;
	logout();
	CTL(&r, "envs", "ls");
	harness_ctl_one_line(&r, 1, "fleetctl: no token: run `fleetctl login` or set FLEET_TOKEN\n",
	    NULL);
	harness_ctl_free(&r);
	CTL(&r, "jobs", "cancel", "x");
	harness_ctl_one_line(&r, 1, "fleetctl: no token: run `fleetctl login` or set FLEET_TOKEN\n",
	    NULL);
	harness_ctl_free(&r);
}

static void
test_login(void **state)
{
	char bad[64], slash[80], in[256], path[128], line[320];
	const char *env_bad[] = { "FLEET_TOKEN=fleet_nope", NULL };
	struct harness_ctl r;
	struct stat st;
	json_t *cfg;

	(void)state;
	logout();
	snprintf(bad, sizeof(bad), "http://127.0.0.1:%d", harness_free_port());
	CTL(&r, "login", "--url", bad, "--token", admin);
	snprintf(line, sizeof(line), "fleetctl: cannot reach %s: ", bad);
	harness_ctl_one_line(&r, 1, line, NULL);
	harness_ctl_free(&r);
	CTL(&r, "login", "--url", "ftp://example.com", "--token", admin);
	harness_ctl_one_line(&r, 2, "fleetctl: URL must start with http:// or https://", NULL);
	harness_ctl_free(&r);
	CTL(&r, "login", "--url", fd.url, "--token", "fleet_not_a_real_token");
	harness_ctl_one_line(&r, 1, "fleetctl: ", ")\n");
	assert_non_null(strstr(r.err, "(auth."));
	harness_ctl_free(&r);
	assert_false(config_exists());

	snprintf(slash, sizeof(slash), "%s/", fd.url);
	CTL(&r, "login", "--url", slash, "--token", admin);
	assert_int_equal(r.rc, 0);
	snprintf(path, sizeof(path), "%s/.config/fleet/config", harness_ctl_home);
	snprintf(line, sizeof(line), "logged in to %s (saved in %s)\n", fd.url, path);
	assert_string_equal(r.out, line);
	harness_ctl_free(&r);
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0600);
	cfg = harness_json_file(path);
	assert_string_equal(json_string_value(json_object_get(cfg, "url")), fd.url);
	assert_string_equal(json_string_value(json_object_get(cfg, "token")), admin);
	json_decref(cfg);

	/* FLEET_TOKEN wins over the file. */
	CTL_ENV(&r, env_bad, "envs", "ls");
	harness_ctl_one_line(&r, 1, "fleetctl: ", ")\n");
	harness_ctl_free(&r);
	/* A config others can read still works, with a warning. */
	assert_int_equal(chmod(path, 0644), 0);
	CTL(&r, "envs", "ls");
	assert_int_equal(r.rc, 0);
	assert_non_null(strstr(r.err, "readable by others"));
	harness_ctl_free(&r);

	/* Asked on stdin when not given. */
	logout();
	snprintf(in, sizeof(in), "%s\n%s\n", fd.url, admin);
	harness_ctl_run(&r, in, NULL, (const char *const[]){ "login", NULL });
	assert_int_equal(r.rc, 0);
	assert_non_null(strstr(r.err, "Token: "));
	harness_ctl_free(&r);
	CTL(&r, "envs", "ls");
	assert_int_equal(r.rc, 0);
	assert_string_equal(r.err, "");
	harness_ctl_free(&r);
}

static void
test_envs_table(void **state)
{
	const char *wide[] = { "COLUMNS=200", NULL }, *narrow[] = { "COLUMNS=50", NULL };
	struct harness_ctl r;

	(void)state;
	login_admin();
	CTL_ENV(&r, wide, "envs", "ls");
	assert_int_equal(r.rc, 0);
	assert_string_equal(r.err, "");
	assert_null(strchr(r.out, '\033'));
	mask_times(r.out);
	harness_golden(FIX "envs_ls.txt", r.out);
	harness_ctl_free(&r);
	CTL_ENV(&r, narrow, "envs", "ls");
	assert_int_equal(r.rc, 0);
	/* fits in 50 columns: test_fleetctl_render checks the golden compared below */
	assert_non_null(strstr(r.out, ELLIPSIS));
	mask_times(r.out);
	harness_golden(FIX "envs_ls_50.txt", r.out);
	harness_ctl_free(&r);
	CTL(&r, "envs", "get", "prod");
	assert_int_equal(r.rc, 0);
	assert_true(kv_line(r.out, "name", "prod"));
	assert_true(kv_line(r.out, "description", "production, every region we run in"));
	harness_ctl_free(&r);
}

static void
test_json(void **state)
{
	const char *names[] = { "dev", "prod", "staging" };
	const char *page1[] = { "FLEETCTL_PAGE_SIZE=1", NULL };
	struct harness_ctl r;
	json_t *j, *items;

	(void)state;
	login_admin();
	for (int pass = 0; pass < 2; pass++) {
		/* The second pass follows "next" one item at a time. */
		harness_ctl_run(&r, NULL, pass ? page1 : NULL,
		    (const char *const[]){ "envs", "ls", "-o", "json", "--all", NULL });
		assert_int_equal(r.rc, 0);
		j = json_loads(r.out, 0, NULL);
		assert_non_null(j);
		items = json_object_get(j, "items");
		assert_int_equal(json_array_size(items), 3);
		for (int i = 0; i < 3; i++)
			assert_string_equal(json_string_value(json_object_get(
			    json_array_get(items, i), "name")), names[i]);
		assert_true(json_is_null(json_object_get(j, "next")));
		json_decref(j);
		harness_ctl_free(&r);
	}
	harness_ctl_run(&r, NULL, page1, (const char *const[]){ "envs", "ls", "--limit", "2", "-o",
	    "json", NULL });
	assert_int_equal(r.rc, 0);
	j = json_loads(r.out, 0, NULL);
	assert_int_equal(json_array_size(json_object_get(j, "items")), 2);
	assert_true(json_is_string(json_object_get(j, "next")));
	json_decref(j);
	harness_ctl_free(&r);
	CTL(&r, "envs", "ls", "--limit", "2");
	assert_int_equal(r.rc, 0);
	assert_non_null(strstr(r.out, "\nprod "));
	assert_null(strstr(r.out, "staging"));
	assert_string_equal(r.err, "fleetctl: more than 2 shown; use --all or --limit\n");
	harness_ctl_free(&r);
	CTL(&r, "-o", "json", "envs", "get", "staging");
	assert_int_equal(r.rc, 0);
	j = json_loads(r.out, 0, NULL);
	assert_string_equal(json_string_value(json_object_get(j, "name")), "staging");
	assert_string_equal(json_string_value(json_object_get(j, "description")), "pre-production");
	json_decref(j);
	harness_ctl_free(&r);
}

#define ZID "00000000-0000-4000-8000-000000000000"

enum expect { E_404, E_LIST, E_FAIL };

struct route_case {
	const char	*argv[10];
	enum expect	 want;
	const char	*header;	/* E_LIST: first line starts so */
};

/* Routes that land later: missing ids stay 404; lists answer 404 now, a table later. */
static void
test_not_found(void **state)
{
	static const struct route_case cases[] = {
		{ { "envs", "get", "nope" }, E_404, NULL },
		{ { "jobs", "get", ZID }, E_404, NULL },
		{ { "jobs", "events", ZID }, E_404, NULL },
		{ { "jobs", "explain", ZID }, E_404, NULL },
		{ { "jobs", "manifest", ZID }, E_404, NULL },
		{ { "jobs", "cancel", ZID }, E_404, NULL },
		{ { "jobs", "move", ZID, "--region", "us-east1", "--reason", "test" }, E_404, NULL },
		{ { "jobs", "move", ZID, "--region", "us-east1", "--dry-run" }, E_404, NULL },
		{ { "clusters", "get", ZID }, E_404, NULL },
		{ { "clusters", "cordon", ZID }, E_404, NULL },
		{ { "clusters", "uncordon", ZID }, E_404, NULL },
		{ { "clusters", "drain", ZID, "--wait" }, E_404, NULL },
		{ { "clouds", "get", ZID }, E_404, NULL },
		{ { "operations", "get", ZID }, E_404, NULL },
		{ { "regions", "drain", "nope", "nowhere" }, E_FAIL, NULL },
		{ { "jobs", "ls", "--state", "running" }, E_LIST, "ID " },
		{ { "clusters", "ls", "--env", "prod" }, E_LIST, "ID " },
		{ { "clouds", "ls" }, E_LIST, "ID " },
		{ { "queues", "ls" }, E_LIST, "NAME " },
		{ { "capacity", "--env", "prod" }, E_LIST, "ENV " },
	};
	struct harness_ctl r;

	(void)state;
	login_admin();
	CTL(&r, "envs", "get", "nope");
	harness_ctl_one_line(&r, 3, "fleetctl: environment nope not found (env.not_found)\n", NULL);
	harness_ctl_free(&r);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const struct route_case *c = &cases[i];

		print_message("not found: %s %s\n", c->argv[0], c->argv[1]);
		harness_ctl_run(&r, NULL, NULL, c->argv);
		if (c->want == E_404 || (c->want == E_LIST && r.rc == 3)) {
			harness_ctl_one_line(&r, 3, "fleetctl: ", ")\n");
		} else if (c->want == E_LIST) {
			assert_int_equal(r.rc, 0);
			assert_true(strncmp(r.out, c->header, strlen(c->header)) == 0);
		} else {
			harness_ctl_one_line(&r, r.rc == 3 ? 3 : 1, "fleetctl: ", ")\n");
		}
		harness_ctl_free(&r);
	}
}

static void
test_usage(void **state)
{
	static const char *const cases[][8] = {
		{ "bogus" },
		{ "jobs", "bogus" },
		{ "jobs", "get" },
		{ "jobs", "get", "a", "b" },
		{ "jobs", "ls", "--bogus" },
		{ "jobs", "ls", "-x" },
		{ "jobs", "move", ZID },
		{ "jobs", "move", ZID, "--region", "a", "--cluster", "b" },
		{ "jobs", "submit" },
		{ "jobs", "submit", "-f", "/nonexistent/spec.json" },
		{ "envs", "ls", "-o", "yaml" },
		{ "envs", "ls", "--limit", "0" },
		{ "envs", "ls", "--limit", "ten" },
		{ "envs", "ls", "--limit" },
		{ "envs", "ls", "--all=yes" },
		{ "envs", "ls", "extra" },
		{ "regions", "drain", "prod" },
	};
	struct harness_ctl r;

	(void)state;
	login_admin();
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		print_message("usage: %s %s %s\n", cases[i][0], cases[i][1] ? cases[i][1] : "",
		    cases[i][2] ? cases[i][2] : "");
		harness_ctl_run(&r, NULL, NULL, cases[i]);
		harness_ctl_one_line(&r, 2, "fleetctl: ", NULL);
		harness_ctl_free(&r);
	}
	CTL(&r, "jobs");
	assert_int_equal(r.rc, 2);
	assert_true(strncmp(r.err, "usage: fleetctl jobs COMMAND", 28) == 0);
	harness_ctl_free(&r);
	harness_ctl_run(&r, NULL, NULL, (const char *const[]){ NULL });
	assert_int_equal(r.rc, 2);
	assert_true(strncmp(r.err, "usage: fleetctl COMMAND", 23) == 0);
	harness_ctl_free(&r);
}

static void
test_help(void **state)
{
	static const char *const cmds[][2] = {
		{ "login" }, { "capacity" },
		{ "jobs", "ls" }, { "jobs", "get" }, { "jobs", "events" }, { "jobs", "explain" },
		{ "jobs", "manifest" }, { "jobs", "submit" }, { "jobs", "cancel" },
		{ "jobs", "move" }, { "clusters", "ls" }, { "clusters", "get" },
		{ "clusters", "cordon" }, { "clusters", "uncordon" }, { "clusters", "drain" },
		{ "regions", "drain" }, { "operations", "get" }, { "queues", "ls" },
		{ "clouds", "ls" }, { "clouds", "get" }, { "envs", "ls" }, { "envs", "get" },
		{ NULL }, { "jobs" }, { "clusters" }, { "regions" }, { "envs" },
	};
	struct harness_ctl r;

	(void)state;
	logout();	/* help needs no server and no token */
	for (size_t i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++) {
		const char *argv[4] = { NULL };
		char want[64];
		int n = 0;

		if (cmds[i][0] != NULL)
			argv[n++] = cmds[i][0];
		if (cmds[i][1] != NULL)
			argv[n++] = cmds[i][1];
		argv[n] = i % 2 ? "-h" : "--help";
		snprintf(want, sizeof(want), "usage: fleetctl %s%s%s", cmds[i][0] ? cmds[i][0] : "",
		    cmds[i][1] ? " " : "", cmds[i][1] ? cmds[i][1] : "");
		harness_ctl_run(&r, NULL, NULL, argv);
		if (r.rc != 0 || strncmp(r.out, want, strlen(want)) != 0)
			fail_msg("%s: exit %d, [%s]", want, r.rc, r.out);
		assert_string_equal(r.err, "");
		harness_ctl_free(&r);
	}
	CTL(&r, "jobs", "move", "--help");
	assert_non_null(strstr(r.out, "--dry-run"));
	assert_non_null(strstr(r.out, "--reason TEXT"));
	assert_non_null(strstr(r.out, "-o, --output FORMAT"));
	harness_ctl_free(&r);
}

static void
test_wrong_url(void **state)
{
	char url[64], line[128], envu[96], envt[128];
	const char *env[3] = { envu, envt, NULL };
	struct harness_ctl r;

	(void)state;
	logout();
	snprintf(url, sizeof(url), "http://127.0.0.1:%d", harness_free_port());
	snprintf(envu, sizeof(envu), "FLEET_URL=%s", url);
	snprintf(envt, sizeof(envt), "FLEET_TOKEN=%s", admin);
	snprintf(line, sizeof(line), "fleetctl: cannot reach %s: ", url);
	CTL_ENV(&r, env, "envs", "ls");
	harness_ctl_one_line(&r, 1, line, NULL);
	harness_ctl_free(&r);
	CTL_ENV(&r, env, "clusters", "drain", ZID, "--wait");
	harness_ctl_one_line(&r, 1, line, NULL);
	harness_ctl_free(&r);
	snprintf(envu, sizeof(envu), "FLEET_URL=localhost:8080");
	CTL_ENV(&r, env, "envs", "ls");
	harness_ctl_one_line(&r, 2, "fleetctl: server URL localhost:8080 must start with http://", NULL);
	harness_ctl_free(&r);
}

static void
test_submit(void **state)
{
	struct harness_ctl r;

	(void)state;
	login_admin();
	harness_ctl_run(&r, "{\"name\": ", NULL, (const char *const[]){ "jobs", "submit", "-f", "-", NULL });
	harness_ctl_one_line(&r, 2, "fleetctl: stdin:1:", NULL);
	harness_ctl_free(&r);
	harness_ctl_run(&r, "[1]", NULL, (const char *const[]){ "jobs", "submit", "-f", "-", NULL });
	harness_ctl_one_line(&r, 2, "fleetctl: stdin: a job spec is a JSON object\n", NULL);
	harness_ctl_free(&r);
	/* The route may not exist yet (404) or refuse this spec (400): one problem line. */
	harness_ctl_run(&r, "{\"name\": \"x\", \"bogus_field\": true}", NULL,
	    (const char *const[]){ "jobs", "submit", "-f", "-", NULL });
	harness_ctl_one_line(&r, r.rc == 3 ? 3 : 1, "fleetctl: ", ")\n");
	harness_ctl_free(&r);
}

static void
test_tty(void **state)
{
	const char *nocolor[] = { "NO_COLOR=1", NULL }, *narrow[] = { "COLUMNS=50", NULL };
	const char *envs_ls[] = { "envs", "ls", NULL };
	char *colored, *plain;
	struct harness_ctl r;

	(void)state;
	login_admin();
	colored = harness_ctl_tty(50, NULL, envs_ls);
	assert_non_null(strstr(colored, CLI_C_BOLD "NAME" CLI_C_RESET));
	plain = harness_ctl_tty(50, nocolor, envs_ls);
	assert_null(strchr(plain, '\033'));
	harness_strip_ansi(colored);
	assert_string_equal(colored, plain);
	/* The terminal's width applies as COLUMNS does when stdout is a file. */
	CTL_ENV(&r, narrow, "envs", "ls");
	assert_string_equal(plain, r.out);
	harness_ctl_free(&r);
	free(colored);
	free(plain);
}

/* A region with nothing in it drains at once: 200 and an empty, finished operation. */
static void
test_live_empty_drain(void **state)
{
	const char *poll[] = { "FLEETCTL_POLL_MS=10", NULL };
	char id[64], line[160];
	struct harness_ctl r;
	json_t *op;

	(void)state;
	login_admin();
	CTL(&r, "regions", "drain", "prod", "us-east1", "-o", "json");
	assert_int_equal(r.rc, 0);
	op = json_loads(r.out, 0, NULL);
	assert_non_null(op);
	assert_string_equal(json_string_value(json_object_get(op, "state")), "succeeded");
	assert_int_equal(json_integer_value(json_object_get(op, "total")), 0);
	snprintf(id, sizeof(id), "%s", json_string_value(json_object_get(op, "id")));
	json_decref(op);
	harness_ctl_free(&r);
	CTL(&r, "regions", "drain", "prod", "us-east1");
	assert_int_equal(r.rc, 0);
	assert_non_null(strstr(r.out, " succeeded: 0 jobs to move\n"));
	assert_null(strstr(r.out, "follow it with"));
	harness_ctl_free(&r);
	CTL_ENV(&r, poll, "operations", "get", id, "--wait");
	assert_int_equal(r.rc, 0);
	/* Not a terminal and no COLUMNS: the line fits 80 columns. */
	assert_string_equal(r.err, "[###########################] 100%  0/0 moved, 0 waiting, "
	    "0 failed  (succeeded)\n");
	harness_ctl_free(&r);
	CTL(&r, "operations", "get", id);
	assert_int_equal(r.rc, 0);
	snprintf(line, sizeof(line), "id:           %s\n", id);
	assert_true(strncmp(r.out, line, strlen(line)) == 0);
	harness_ctl_free(&r);
}

int
main(void)
{
	const struct CMUnitTest live[] = {
		cmocka_unit_test(test_help),
		cmocka_unit_test(test_no_token),
		cmocka_unit_test(test_login),
		cmocka_unit_test(test_envs_table),
		cmocka_unit_test(test_json),
		cmocka_unit_test(test_not_found),
		cmocka_unit_test(test_usage),
		cmocka_unit_test(test_wrong_url),
		cmocka_unit_test(test_submit),
		cmocka_unit_test(test_tty),
		cmocka_unit_test(test_live_empty_drain),
	};

	return cmocka_run_group_tests_name("fleetctl live", live, setup_server, teardown_server);
}
