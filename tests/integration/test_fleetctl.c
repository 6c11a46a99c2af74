/* test_fleetctl: the fleetctl binary against a live fleetd — login, tables, JSON, exit codes,
 * one-line errors — and against a scripted server.  The renderer alone is
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
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#include <microhttpd.h>

#include "cli/table.c"
#include "cli/views.c"
#include "tests/harness/harness.h"

#define FIX		"tests/fixtures/fleetctl/"
#define FLEETCTL	FLEETD_BINARY_DIR "/fleetctl"

/* ---- the binary against fleetd ---- */

static struct fleetd_proc fd;
static char dburl[512];
static char *admin;
static char home[64];

struct ctl {
	int	 rc;
	char	*out;
	char	*err;
};

static void
ctl_free(struct ctl *r)
{
	free(r->out);
	free(r->err);
	memset(r, 0, sizeof(*r));
}

/* Child side of ctl_run: environment, stdin, stdout/stderr to files, exec. */
static void __attribute__((noreturn))
ctl_child(const char *in, const char *outp, const char *errp, const char *const *env,
	  const char *const *argv)
{
	int o = open(outp, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	int e = open(errp, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	int i = open(in != NULL ? in : "/dev/null", O_RDONLY);

	dup2(i, 0);
	dup2(o, 1);
	dup2(e, 2);
	unsetenv("FLEET_URL");
	unsetenv("FLEET_TOKEN");
	unsetenv("COLUMNS");
	unsetenv("NO_COLOR");
	setenv("HOME", home, 1);
	for (int k = 0; env != NULL && env[k] != NULL; k++)
		putenv((char *)env[k]);
	execv(FLEETCTL, (char *const *)argv);
	_exit(127);
}

/* Runs fleetctl with argv (NULL-terminated, without argv[0]); stdin from the text in. */
static void
ctl_run(struct ctl *r, const char *in, const char *const *env, const char *const *args)
{
	char outp[128], errp[128], inp[128];
	const char *argv[32] = { "fleetctl" };
	pid_t pid;
	int st, n = 1;

	snprintf(outp, sizeof(outp), "%s/out", home);
	snprintf(errp, sizeof(errp), "%s/err", home);
	snprintf(inp, sizeof(inp), "%s/in", home);
	if (in != NULL) {
		FILE *f = fopen(inp, "w");

		assert_non_null(f);
		fputs(in, f);
		fclose(f);
	}
	while (args[n - 1] != NULL && n < 31) {
		argv[n] = args[n - 1];
		n++;
	}
	argv[n] = NULL;
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0)
		ctl_child(in != NULL ? inp : NULL, outp, errp, env, argv);
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st));
	r->rc = WEXITSTATUS(st);
	r->out = harness_slurp(outp);
	r->err = harness_slurp(errp);
	assert_non_null(r->out);
	assert_non_null(r->err);
	/* The token never shows, whatever the command. */
	for (int k = 0; k < 2; k++) {
		const char *tok = k == 0 ? admin : "fake-token";

		if (tok != NULL && (strstr(r->out, tok) != NULL || strstr(r->err, tok) != NULL))
			fail_msg("fleetctl printed a token: %s%s", r->out, r->err);
	}
}

#define CTL(r, ...) ctl_run((r), NULL, NULL, (const char *const[]){ __VA_ARGS__, NULL })
#define CTL_ENV(r, env, ...) ctl_run((r), NULL, (env), (const char *const[]){ __VA_ARGS__, NULL })

/* Exit code and exactly one line on stderr, nothing on stdout. */
static void
assert_one_line(const struct ctl *r, int rc, const char *prefix, const char *suffix)
{
	size_t n = strlen(r->err);

	if (r->rc != rc)
		fail_msg("want exit %d, got %d: %s%s", rc, r->rc, r->out, r->err);
	assert_string_equal(r->out, "");
	assert_true(n > 0 && r->err[n - 1] == '\n');
	assert_null(memchr(r->err, '\n', n - 1));
	if (strncmp(r->err, prefix, strlen(prefix)) != 0)
		fail_msg("want a line starting [%s], got [%s]", prefix, r->err);
	if (suffix != NULL && (n < strlen(suffix) ||
	    strcmp(r->err + n - strlen(suffix), suffix) != 0))
		fail_msg("want a line ending [%s], got [%s]", suffix, r->err);
}

static void
make_env(const char *name, const char *desc)
{
	struct http_result h;
	char body[256], u[128];

	snprintf(body, sizeof(body), "{\"name\":\"%s\",\"description\":\"%s\"}", name, desc);
	snprintf(u, sizeof(u), "%s/v1/environments", fd.url);
	harness_http(&h, "POST", u, admin, body, NULL);
	assert_int_equal(h.status, 201);
	harness_http_free(&h);
}

static int setup_home(void **state);

static int
setup_server(void **state)
{
	setup_home(state);
	harness_db_create("fleetctl", dburl, sizeof(dburl));
	harness_fleetd_start(&fd, dburl, NULL);
	admin = harness_token(dburl, "admin", "*");
	make_env("prod", "production, every region we run in");
	make_env("staging", "pre-production");
	make_env("dev", "");
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
	if (home[0] != '\0')
		harness_sh("rm -rf '%s'", home);
	home[0] = '\0';
	free(admin);
	admin = NULL;
	harness_validate_responses();
	return 0;
}

static int
setup_home(void **state)
{
	(void)state;
	if (access(FLEETCTL, X_OK) != 0)
		fail_msg("%s is missing: build the fleetctl target first", FLEETCTL);
	snprintf(home, sizeof(home), "/tmp/fleetctl-home.XXXXXX");
	assert_non_null(mkdtemp(home));
	return 0;
}

static int
teardown_home(void **state)
{
	(void)state;
	harness_sh("rm -rf '%s'", home);
	home[0] = '\0';
	return 0;
}

static void
logout(void)
{
	harness_sh("rm -rf '%s/.config'", home);
}

static void
login_admin(void)
{
	struct ctl r;

	CTL(&r, "login", "--url", fd.url, "--token", admin);
	assert_int_equal(r.rc, 0);
	ctl_free(&r);
}

static bool
config_exists(void)
{
	char p[128];
	struct stat st;

	snprintf(p, sizeof(p), "%s/.config/fleet/config", home);
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
	struct ctl r;

	(void)state;
	logout();
	CTL(&r, "envs", "ls");
	assert_one_line(&r, 1, "fleetctl: no token: run `fleetctl login` or set FLEET_TOKEN\n",
	    NULL);
	ctl_free(&r);
	CTL(&r, "jobs", "cancel", "x");
	assert_one_line(&r, 1, "fleetctl: no token: run `fleetctl login` or set FLEET_TOKEN\n",
	    NULL);
	ctl_free(&r);
}

static void
test_login(void **state)
{
	char bad[64], slash[80], in[256], path[128], line[320];
	const char *env_bad[] = { "FLEET_TOKEN=fleet_nope", NULL };
	struct ctl r;
	struct stat st;
	json_t *cfg;

	(void)state;
	logout();
	snprintf(bad, sizeof(bad), "http://127.0.0.1:%d", harness_free_port());
	CTL(&r, "login", "--url", bad, "--token", admin);
	snprintf(line, sizeof(line), "fleetctl: cannot reach %s: ", bad);
	assert_one_line(&r, 1, line, NULL);
	ctl_free(&r);
	CTL(&r, "login", "--url", "ftp://example.com", "--token", admin);
	assert_one_line(&r, 2, "fleetctl: URL must start with http:// or https://", NULL);
	ctl_free(&r);
	CTL(&r, "login", "--url", fd.url, "--token", "fleet_not_a_real_token");
	assert_one_line(&r, 1, "fleetctl: ", ")\n");
	assert_non_null(strstr(r.err, "(auth."));
	ctl_free(&r);
	assert_false(config_exists());

	snprintf(slash, sizeof(slash), "%s/", fd.url);
	CTL(&r, "login", "--url", slash, "--token", admin);
	assert_int_equal(r.rc, 0);
	snprintf(path, sizeof(path), "%s/.config/fleet/config", home);
	snprintf(line, sizeof(line), "logged in to %s (saved in %s)\n", fd.url, path);
	assert_string_equal(r.out, line);
	ctl_free(&r);
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0600);
	cfg = harness_json_file(path);
	assert_string_equal(json_string_value(json_object_get(cfg, "url")), fd.url);
	assert_string_equal(json_string_value(json_object_get(cfg, "token")), admin);
	json_decref(cfg);

	/* FLEET_TOKEN wins over the file. */
	CTL_ENV(&r, env_bad, "envs", "ls");
	assert_one_line(&r, 1, "fleetctl: ", ")\n");
	ctl_free(&r);
	/* A config others can read still works, with a warning. */
	assert_int_equal(chmod(path, 0644), 0);
	CTL(&r, "envs", "ls");
	assert_int_equal(r.rc, 0);
	assert_non_null(strstr(r.err, "readable by others"));
	ctl_free(&r);

	/* Asked on stdin when not given. */
	logout();
	snprintf(in, sizeof(in), "%s\n%s\n", fd.url, admin);
	ctl_run(&r, in, NULL, (const char *const[]){ "login", NULL });
	assert_int_equal(r.rc, 0);
	assert_non_null(strstr(r.err, "Token: "));
	ctl_free(&r);
	CTL(&r, "envs", "ls");
	assert_int_equal(r.rc, 0);
	assert_string_equal(r.err, "");
	ctl_free(&r);
}

static void
test_envs_table(void **state)
{
	const char *wide[] = { "COLUMNS=200", NULL }, *narrow[] = { "COLUMNS=50", NULL };
	struct ctl r;

	(void)state;
	login_admin();
	CTL_ENV(&r, wide, "envs", "ls");
	assert_int_equal(r.rc, 0);
	assert_string_equal(r.err, "");
	assert_null(strchr(r.out, '\033'));
	mask_times(r.out);
	harness_golden(FIX "envs_ls.txt", r.out);
	ctl_free(&r);
	CTL_ENV(&r, narrow, "envs", "ls");
	assert_int_equal(r.rc, 0);
	/* fits in 50 columns: test_fleetctl_render checks the golden compared below */
	assert_non_null(strstr(r.out, ELLIPSIS));
	mask_times(r.out);
	harness_golden(FIX "envs_ls_50.txt", r.out);
	ctl_free(&r);
	CTL(&r, "envs", "get", "prod");
	assert_int_equal(r.rc, 0);
	assert_non_null(strstr(r.out, "\nname:        prod\n"));
	assert_non_null(strstr(r.out, "\ndescription: production, every region we run in\n"));
	ctl_free(&r);
}

static void
test_json(void **state)
{
	const char *names[] = { "dev", "prod", "staging" };
	const char *page1[] = { "FLEETCTL_PAGE_SIZE=1", NULL };
	struct ctl r;
	json_t *j, *items;

	(void)state;
	login_admin();
	for (int pass = 0; pass < 2; pass++) {
		/* The second pass follows "next" one item at a time. */
		ctl_run(&r, NULL, pass ? page1 : NULL,
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
		ctl_free(&r);
	}
	ctl_run(&r, NULL, page1, (const char *const[]){ "envs", "ls", "--limit", "2", "-o",
	    "json", NULL });
	assert_int_equal(r.rc, 0);
	j = json_loads(r.out, 0, NULL);
	assert_int_equal(json_array_size(json_object_get(j, "items")), 2);
	assert_true(json_is_string(json_object_get(j, "next")));
	json_decref(j);
	ctl_free(&r);
	CTL(&r, "envs", "ls", "--limit", "2");
	assert_int_equal(r.rc, 0);
	assert_non_null(strstr(r.out, "\nprod "));
	assert_null(strstr(r.out, "staging"));
	assert_string_equal(r.err, "fleetctl: more than 2 shown; use --all or --limit\n");
	ctl_free(&r);
	CTL(&r, "-o", "json", "envs", "get", "staging");
	assert_int_equal(r.rc, 0);
	j = json_loads(r.out, 0, NULL);
	assert_string_equal(json_string_value(json_object_get(j, "name")), "staging");
	assert_string_equal(json_string_value(json_object_get(j, "description")), "pre-production");
	json_decref(j);
	ctl_free(&r);
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
	struct ctl r;

	(void)state;
	login_admin();
	CTL(&r, "envs", "get", "nope");
	assert_one_line(&r, 3, "fleetctl: environment nope not found (env.not_found)\n", NULL);
	ctl_free(&r);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const struct route_case *c = &cases[i];

		print_message("not found: %s %s\n", c->argv[0], c->argv[1]);
		ctl_run(&r, NULL, NULL, c->argv);
		if (c->want == E_404 || (c->want == E_LIST && r.rc == 3)) {
			assert_one_line(&r, 3, "fleetctl: ", ")\n");
		} else if (c->want == E_LIST) {
			assert_int_equal(r.rc, 0);
			assert_true(strncmp(r.out, c->header, strlen(c->header)) == 0);
		} else {
			assert_one_line(&r, r.rc == 3 ? 3 : 1, "fleetctl: ", ")\n");
		}
		ctl_free(&r);
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
	struct ctl r;

	(void)state;
	login_admin();
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		print_message("usage: %s %s %s\n", cases[i][0], cases[i][1] ? cases[i][1] : "",
		    cases[i][2] ? cases[i][2] : "");
		ctl_run(&r, NULL, NULL, cases[i]);
		assert_one_line(&r, 2, "fleetctl: ", NULL);
		ctl_free(&r);
	}
	CTL(&r, "jobs");
	assert_int_equal(r.rc, 2);
	assert_true(strncmp(r.err, "usage: fleetctl jobs COMMAND", 28) == 0);
	ctl_free(&r);
	ctl_run(&r, NULL, NULL, (const char *const[]){ NULL });
	assert_int_equal(r.rc, 2);
	assert_true(strncmp(r.err, "usage: fleetctl COMMAND", 23) == 0);
	ctl_free(&r);
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
	struct ctl r;

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
		ctl_run(&r, NULL, NULL, argv);
		if (r.rc != 0 || strncmp(r.out, want, strlen(want)) != 0)
			fail_msg("%s: exit %d, [%s]", want, r.rc, r.out);
		assert_string_equal(r.err, "");
		ctl_free(&r);
	}
	CTL(&r, "jobs", "move", "--help");
	assert_non_null(strstr(r.out, "--dry-run"));
	assert_non_null(strstr(r.out, "--reason TEXT"));
	assert_non_null(strstr(r.out, "-o, --output FORMAT"));
	ctl_free(&r);
}

static void
test_wrong_url(void **state)
{
	char url[64], line[128], envu[96], envt[128];
	const char *env[3] = { envu, envt, NULL };
	struct ctl r;

	(void)state;
	logout();
	snprintf(url, sizeof(url), "http://127.0.0.1:%d", harness_free_port());
	snprintf(envu, sizeof(envu), "FLEET_URL=%s", url);
	snprintf(envt, sizeof(envt), "FLEET_TOKEN=%s", admin);
	snprintf(line, sizeof(line), "fleetctl: cannot reach %s: ", url);
	CTL_ENV(&r, env, "envs", "ls");
	assert_one_line(&r, 1, line, NULL);
	ctl_free(&r);
	CTL_ENV(&r, env, "clusters", "drain", ZID, "--wait");
	assert_one_line(&r, 1, line, NULL);
	ctl_free(&r);
	snprintf(envu, sizeof(envu), "FLEET_URL=localhost:8080");
	CTL_ENV(&r, env, "envs", "ls");
	assert_one_line(&r, 2, "fleetctl: server URL localhost:8080 must start with http://", NULL);
	ctl_free(&r);
}

static void
test_submit(void **state)
{
	struct ctl r;

	(void)state;
	login_admin();
	ctl_run(&r, "{\"name\": ", NULL, (const char *const[]){ "jobs", "submit", "-f", "-", NULL });
	assert_one_line(&r, 2, "fleetctl: stdin:1:", NULL);
	ctl_free(&r);
	ctl_run(&r, "[1]", NULL, (const char *const[]){ "jobs", "submit", "-f", "-", NULL });
	assert_one_line(&r, 2, "fleetctl: stdin: a job spec is a JSON object\n", NULL);
	ctl_free(&r);
	/* The route may not exist yet (404) or refuse this spec (400): one problem line. */
	ctl_run(&r, "{\"name\": \"x\", \"bogus_field\": true}", NULL,
	    (const char *const[]){ "jobs", "submit", "-f", "-", NULL });
	assert_one_line(&r, r.rc == 3 ? 3 : 1, "fleetctl: ", ")\n");
	ctl_free(&r);
}

/* Runs envs ls with stdout on a pseudo-terminal of the given width; returns what it wrote. */
static char *
ctl_tty(int cols, const char *const *env)
{
	int m = posix_openpt(O_RDWR | O_NOCTTY), s, st;
	struct winsize ws = { .ws_row = 24, .ws_col = (unsigned short)cols };
	struct termios t;
	char errp[128], *buf = calloc(1, 65536);
	size_t n = 0;
	ssize_t k;
	pid_t pid;

	assert_true(m >= 0 && grantpt(m) == 0 && unlockpt(m) == 0);
	s = open(ptsname(m), O_RDWR | O_NOCTTY);
	assert_true(s >= 0);
	assert_int_equal(tcgetattr(s, &t), 0);
	cfmakeraw(&t);
	assert_int_equal(tcsetattr(s, TCSANOW, &t), 0);
	assert_int_equal(ioctl(s, TIOCSWINSZ, &ws), 0);
	snprintf(errp, sizeof(errp), "%s/err", home);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		int e = open(errp, O_WRONLY | O_CREAT | O_TRUNC, 0600);

		dup2(s, 1);
		dup2(e, 2);
		close(m);
		setenv("HOME", home, 1);
		unsetenv("COLUMNS");
		unsetenv("NO_COLOR");
		for (int i = 0; env != NULL && env[i] != NULL; i++)
			putenv((char *)env[i]);
		execl(FLEETCTL, "fleetctl", "envs", "ls", (char *)NULL);
		_exit(127);
	}
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	fcntl(m, F_SETFL, O_NONBLOCK);
	while (n < 65535 && (k = read(m, buf + n, 65535 - n)) > 0)
		n += (size_t)k;
	close(s);
	close(m);
	return buf;
}

/* Removes ANSI escapes in place. */
static void
strip_ansi(char *s)
{
	char *w = s;

	while (*s != '\0') {
		if (*s == '\033') {
			for (s++; *s != '\0' && *s != 'm'; s++)
				;
			if (*s == 'm')
				s++;
			continue;
		}
		*w++ = *s++;
	}
	*w = '\0';
}

static void
test_tty(void **state)
{
	const char *nocolor[] = { "NO_COLOR=1", NULL }, *narrow[] = { "COLUMNS=50", NULL };
	char *colored, *plain;
	struct ctl r;

	(void)state;
	login_admin();
	colored = ctl_tty(50, NULL);
	assert_non_null(strstr(colored, CLI_C_BOLD "NAME" CLI_C_RESET));
	plain = ctl_tty(50, nocolor);
	assert_null(strchr(plain, '\033'));
	strip_ansi(colored);
	assert_string_equal(colored, plain);
	/* The terminal's width applies as COLUMNS does when stdout is a file. */
	CTL_ENV(&r, narrow, "envs", "ls");
	assert_string_equal(plain, r.out);
	ctl_free(&r);
	free(colored);
	free(plain);
}

/* A region with nothing in it drains at once: 200 and an empty, finished operation. */
static void
test_live_empty_drain(void **state)
{
	const char *poll[] = { "FLEETCTL_POLL_MS=10", NULL };
	char id[64], line[160];
	struct ctl r;
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
	ctl_free(&r);
	CTL(&r, "regions", "drain", "prod", "us-east1");
	assert_int_equal(r.rc, 0);
	assert_non_null(strstr(r.out, " succeeded: 0 jobs to move\n"));
	assert_null(strstr(r.out, "follow it with"));
	ctl_free(&r);
	CTL_ENV(&r, poll, "operations", "get", id, "--wait");
	assert_int_equal(r.rc, 0);
	/* Not a terminal and no COLUMNS: the line fits 80 columns. */
	assert_string_equal(r.err, "[###########################] 100%  0/0 moved, 0 waiting, "
	    "0 failed  (succeeded)\n");
	ctl_free(&r);
	CTL(&r, "operations", "get", id);
	assert_int_equal(r.rc, 0);
	snprintf(line, sizeof(line), "id:          %s\n", id);
	assert_true(strncmp(r.out, line, strlen(line)) == 0);
	ctl_free(&r);
}

/* ---- the binary against a scripted fake fleetd, for routes the server lacks yet ---- */

struct fake_route {
	const char	*method;
	const char	*uri;		/* path and query, exact */
	int		 status;
	const char	*bodies[4];	/* answered in turn, the last one repeating */
	int		 hits;
};

struct fake_seen {
	char	 method[8];
	char	 uri[512];
	char	 auth[160];
	char	 idem[80];
	char	 ctype[64];
	char	*body;
};

static struct {
	struct MHD_Daemon	*d;
	char			 url[64];
	struct fake_route	*routes;
	struct fake_seen	 seen[32];
	int			 nseen;
	pthread_mutex_t		 mu;
} fake = { .mu = PTHREAD_MUTEX_INITIALIZER };

struct fake_req {
	char	 uri[512];
	char	*body;
	size_t	 n;
	bool	 started;
};

static void *
fake_uri(void *cls, const char *uri, struct MHD_Connection *con)
{
	struct fake_req *r = calloc(1, sizeof(*r));

	(void)cls;
	(void)con;
	snprintf(r->uri, sizeof(r->uri), "%s", uri);
	return r;
}

static void
fake_done(void *cls, struct MHD_Connection *con, void **req_cls,
	  enum MHD_RequestTerminationCode toe)
{
	struct fake_req *r = *req_cls;

	(void)cls;
	(void)con;
	(void)toe;
	if (r != NULL)
		free(r->body);
	free(r);
}

static void
fake_record(struct MHD_Connection *con, const char *method, struct fake_req *r)
{
	const char *h;
	struct fake_seen *s;

	if (fake.nseen >= 32)
		return;
	s = &fake.seen[fake.nseen++];
	snprintf(s->method, sizeof(s->method), "%s", method);
	snprintf(s->uri, sizeof(s->uri), "%s", r->uri);
	h = MHD_lookup_connection_value(con, MHD_HEADER_KIND, "Authorization");
	snprintf(s->auth, sizeof(s->auth), "%s", h ? h : "");
	h = MHD_lookup_connection_value(con, MHD_HEADER_KIND, "Idempotency-Key");
	snprintf(s->idem, sizeof(s->idem), "%s", h ? h : "");
	h = MHD_lookup_connection_value(con, MHD_HEADER_KIND, "Content-Type");
	snprintf(s->ctype, sizeof(s->ctype), "%s", h ? h : "");
	s->body = r->body != NULL ? strndup(r->body, r->n) : NULL;
}

static enum MHD_Result
fake_handler(void *cls, struct MHD_Connection *con, const char *url, const char *method,
	     const char *version, const char *data, size_t *size, void **req_cls)
{
	struct fake_req *r = *req_cls;
	const char *body = "{\"title\":\"no such route\",\"status\":404,\"code\":\"fake.no_route\"}";
	struct MHD_Response *resp;
	enum MHD_Result ok;
	int status = 404;

	(void)cls;
	(void)url;
	(void)version;
	if (!r->started) {
		r->started = true;
		return MHD_YES;
	}
	if (*size > 0) {
		r->body = realloc(r->body, r->n + *size + 1);
		memcpy(r->body + r->n, data, *size);
		r->n += *size;
		*size = 0;
		return MHD_YES;
	}
	pthread_mutex_lock(&fake.mu);
	fake_record(con, method, r);
	for (struct fake_route *f = fake.routes; f != NULL && f->method != NULL; f++) {
		if (strcmp(f->method, method) != 0 || strcmp(f->uri, r->uri) != 0)
			continue;
		status = f->status;
		body = f->bodies[0];
		for (int k = 1; k <= f->hits && k < 4 && f->bodies[k] != NULL; k++)
			body = f->bodies[k];
		f->hits++;
		break;
	}
	pthread_mutex_unlock(&fake.mu);
	resp = MHD_create_response_from_buffer(strlen(body), (void *)body, MHD_RESPMEM_MUST_COPY);
	MHD_add_response_header(resp, "Content-Type", body[0] != '{' ? "text/plain" :
	    status >= 400 ? "application/problem+json" : "application/json");
	ok = MHD_queue_response(con, (unsigned)status, resp);
	MHD_destroy_response(resp);
	return ok;
}

static void
fake_start(struct fake_route *routes)
{
	int port = harness_free_port();

	fake.routes = routes;
	fake.nseen = 0;
	fake.d = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_ERROR_LOG,
	    (uint16_t)port, NULL, NULL, fake_handler, NULL,
	    MHD_OPTION_URI_LOG_CALLBACK, fake_uri, NULL,
	    MHD_OPTION_NOTIFY_COMPLETED, fake_done, NULL, MHD_OPTION_END);
	assert_non_null(fake.d);
	snprintf(fake.url, sizeof(fake.url), "http://127.0.0.1:%d", port);
}

static void
fake_stop(void)
{
	MHD_stop_daemon(fake.d);
	fake.d = NULL;
	for (int i = 0; i < fake.nseen; i++)
		free(fake.seen[i].body);
	fake.nseen = 0;
}

/* fleetctl against the fake, token "fake-token", polling every 10 ms. */
static void
fake_ctl(struct ctl *r, const char *in, const char *const *args)
{
	char envu[96];
	const char *env[] = { envu, "FLEET_TOKEN=fake-token", "FLEETCTL_POLL_MS=10",
	    "COLUMNS=100", NULL };

	snprintf(envu, sizeof(envu), "FLEET_URL=%s", fake.url);
	ctl_run(r, in, env, args);
}

#define FAKE(r, ...) fake_ctl((r), NULL, (const char *const[]){ __VA_ARGS__, NULL })

static int
fake_count(const char *method, const char *uri)
{
	int n = 0;

	for (int i = 0; i < fake.nseen; i++)
		n += strcmp(fake.seen[i].method, method) == 0 && strcmp(fake.seen[i].uri, uri) == 0;
	return n;
}

#define R(method, uri, status, ...) { method, uri, status, { __VA_ARGS__ }, 0 }
#define OP(id, st, total, moved, waiting, failed, failures) \
	"{\"id\":\"" id "\",\"state\":\"" st "\",\"total\":" #total ",\"moved\":" #moved \
	",\"waiting\":" #waiting ",\"failed\":" #failed ",\"failures\":" failures "}"

static void
test_fake_drain(void **state)
{
	struct fake_route routes[] = {
		R("POST", "/v1/clusters/c%201/drain", 202, OP("op1", "running", 4, 0, 4, 0, "[]")),
		R("GET", "/v1/operations/op1", 200, OP("op1", "running", 4, 2, 2, 0, "[]"),
		    OP("op1", "running", 4, 3, 1, 0, "[]"), OP("op1", "succeeded", 4, 4, 0, 0, "[]")),
		R("POST", "/v1/regions/prod/us-east1/drain", 202, OP("op2", "running", 2, 0, 2, 0,
		    "[]")),
		R("GET", "/v1/operations/op2", 200, OP("op2", "succeeded", 2, 1, 0, 1,
		    "[{\"job_id\":\"j-7\",\"reason\":\"no capacity in us-west1\"}]")),
		{ NULL, NULL, 0, { NULL }, 0 },
	};
	struct ctl r;

	(void)state;
	fake_start(routes);
	FAKE(&r, "clusters", "drain", "c 1", "--wait");
	assert_int_equal(r.rc, 0);
	assert_string_equal(r.out, "");
	assert_string_equal(r.err,
	    "[..............................]   0%  0/4 moved, 4 waiting, 0 failed  (running)\n"
	    "[###############...............]  50%  2/4 moved, 2 waiting, 0 failed  (running)\n"
	    "[######################........]  75%  3/4 moved, 1 waiting, 0 failed  (running)\n"
	    "[##############################] 100%  4/4 moved, 0 waiting, 0 failed  (succeeded)\n");
	assert_int_equal(fake_count("GET", "/v1/operations/op1"), 3);
	assert_string_equal(fake.seen[0].auth, "Bearer fake-token");
	assert_int_equal(strlen(fake.seen[0].idem), 32);
	assert_string_equal(fake.seen[0].ctype, "application/json");
	ctl_free(&r);

	FAKE(&r, "regions", "drain", "prod", "us-east1", "--wait", "-o", "json");
	assert_int_equal(r.rc, 1);
	assert_non_null(strstr(r.err, "failures:\nJOB  REASON\nj-7  no capacity in us-west1\n"));
	assert_non_null(strstr(r.err, "fleetctl: operation op2 ended succeeded with 1 failed\n"));
	{
		json_t *j = json_loads(r.out, 0, NULL);

		assert_non_null(j);
		assert_int_equal(json_integer_value(json_object_get(j, "failed")), 1);
		json_decref(j);
	}
	ctl_free(&r);

	FAKE(&r, "regions", "drain", "prod", "us-east1");
	assert_int_equal(r.rc, 0);
	assert_string_equal(r.out, "operation op2 running: 2 jobs to move\n"
	    "follow it with: fleetctl operations get op2 --wait\n");
	ctl_free(&r);
	fake_stop();
}

static void
test_fake_jobs(void **state)
{
	char *explain = harness_slurp(FIX "explain_admitted.json");
	char *want = harness_slurp(FIX "explain_admitted.txt");
	char *plan = harness_slurp(FIX "plan.json"), *plan_txt = harness_slurp(FIX "plan.txt");
	char moved[4096];
	struct fake_route routes[] = {
		R("GET", "/v1/jobs?state=running&queue=q%201&limit=2", 200, "{\"items\":["
		    "{\"id\":\"j1\",\"state\":\"running\"},{\"id\":\"j2\",\"state\":\"running\"}],"
		    "\"next\":\"/v1/jobs?limit=2&after=Y3Vy\"}"),
		R("GET", "/v1/jobs?state=running&queue=q%201&limit=2&after=Y3Vy", 200,
		    "{\"items\":[{\"id\":\"j3\",\"state\":\"running\"}],\"next\":null}"),
		R("GET", "/v1/jobs/j1/placement", 200, explain),
		R("GET", "/v1/jobs/j1/manifest", 200, "{\"apiVersion\":\"ray.io/v1\","
		    "\"kind\":\"RayJob\"}"),
		R("POST", "/v1/jobs/j1/move", 200, plan),
		R("POST", "/v1/jobs/j2/move", 202, moved),
		R("GET", "/v1/jobs/j2", 200, "{\"id\":\"j2\",\"state\":\"moving\"}",
		    "{\"id\":\"j2\",\"state\":\"pending\"}", "{\"id\":\"j2\",\"state\":\"pending\"}",
		    "{\"id\":\"j2\",\"state\":\"running\"}"),
		R("POST", "/v1/jobs/j3/move", 409, "{\"title\":\"the target cannot hold the job; "
		    "nothing changed\",\"status\":409,\"code\":\"move.no_capacity\",\"detail\":"
		    "\"2 candidate clusters in the target, none fits (see reasons).\",\"errors\":["
		    "{\"pointer\":\"/target\",\"cluster\":\"k1\",\"region\":\"r\",\"detail\":"
		    "\"insufficient_accelerators\"},{\"pointer\":\"/target\",\"cluster\":\"k2\","
		    "\"region\":\"r\",\"detail\":\"cordoned\"}]}"),
		R("POST", "/v1/jobs/j1/cancel", 200, "{\"id\":\"j1\",\"state\":\"cancelled\"}"),
		R("POST", "/v1/jobs", 400, "{\"title\":\"invalid job spec\",\"status\":400,"
		    "\"detail\":\"the spec has 1 error\",\"code\":\"job.bad_spec\",\"errors\":"
		    "[{\"pointer\":\"/workers/0/gpus\",\"detail\":\"must be positive\"}]}"),
		R("POST", "/v1/clusters/c1/cordon", 200, "{\"id\":\"c1\",\"name\":\"gke-1\"}"),
		R("GET", "/v1/queues?limit=100", 502, "bad gateway"),
		{ NULL, NULL, 0, { NULL }, 0 },
	};
	struct ctl r;
	json_t *j;

	(void)state;
	snprintf(moved, sizeof(moved), "{\"plan\":%s,\"job\":{\"id\":\"j2\",\"state\":"
	    "\"moving\"}}", plan);
	fake_start(routes);
	{
		char envu[96];
		const char *env[] = { envu, "FLEET_TOKEN=fake-token", "FLEETCTL_PAGE_SIZE=2", NULL };

		snprintf(envu, sizeof(envu), "FLEET_URL=%s", fake.url);
		ctl_run(&r, NULL, env, (const char *const[]){ "jobs", "ls", "--state", "running",
		    "--queue", "q 1", "--all", NULL });
	}
	assert_int_equal(r.rc, 0);
	assert_true(strncmp(r.out, "ID  NAME", 8) == 0);
	assert_non_null(strstr(r.out, "\nj3 "));
	ctl_free(&r);

	FAKE(&r, "jobs", "explain", "j1");
	assert_int_equal(r.rc, 0);
	assert_string_equal(r.out, want);
	ctl_free(&r);
	FAKE(&r, "jobs", "manifest", "j1");
	j = json_loads(r.out, 0, NULL);
	assert_string_equal(json_string_value(json_object_get(j, "kind")), "RayJob");
	json_decref(j);
	ctl_free(&r);

	FAKE(&r, "jobs", "move", "j1", "--region", "westeurope", "--dry-run", "--reason", "az down");
	assert_int_equal(r.rc, 0);
	assert_string_equal(r.out, plan_txt);
	j = json_loads(fake.seen[fake.nseen - 1].body, 0, NULL);
	assert_string_equal(json_string_value(cli_json_path(j, "target.region")), "westeurope");
	assert_true(json_is_true(json_object_get(j, "dry_run")));
	assert_string_equal(json_string_value(json_object_get(j, "reason")), "az down");
	json_decref(j);
	ctl_free(&r);
	FAKE(&r, "jobs", "move", "j2", "--cluster", "c9", "--wait");
	assert_int_equal(r.rc, 0);
	assert_true(strncmp(r.out, "job j2 is moving (moving)\nJob:", 30) == 0);
	assert_string_equal(r.err, "job j2: moving\njob j2: pending\njob j2: running\n");
	ctl_free(&r);
	FAKE(&r, "jobs", "move", "j3", "--region", "r");
	assert_one_line(&r, 1, "fleetctl: the target cannot hold the job; nothing changed: "
	    "2 candidate clusters in the target, none fits (see reasons).; "
	    "k1: insufficient_accelerators; k2: cordoned (move.no_capacity)\n", NULL);
	ctl_free(&r);

	FAKE(&r, "jobs", "cancel", "j1");
	assert_string_equal(r.out, "job j1: cancelled\n");
	ctl_free(&r);
	FAKE(&r, "clusters", "cordon", "c1");
	assert_string_equal(r.out, "cluster gke-1 cordoned: no new placements\n");
	ctl_free(&r);
	fake_ctl(&r, "{\"name\":\"x\"}", (const char *const[]){ "jobs", "submit", "-f", "-",
	    NULL });
	assert_one_line(&r, 1, "fleetctl: invalid job spec: the spec has 1 error; "
	    "/workers/0/gpus: must be positive (job.bad_spec)\n", NULL);
	assert_string_equal(fake.seen[fake.nseen - 1].body, "{\"name\":\"x\"}");
	ctl_free(&r);
	FAKE(&r, "queues", "ls");
	assert_one_line(&r, 1, "fleetctl: server answered 502: bad gateway\n", NULL);
	assert_int_equal(fake_count("GET", "/v1/queues?limit=100"), 2);	/* retried once */
	ctl_free(&r);
	fake_stop();
	free(explain);
	free(want);
	free(plan);
	free(plan_txt);
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
	const struct CMUnitTest scripted[] = {
		cmocka_unit_test(test_fake_drain),
		cmocka_unit_test(test_fake_jobs),
	};
	int failed = cmocka_run_group_tests_name("fleetctl live", live, setup_server,
	    teardown_server);
	failed += cmocka_run_group_tests_name("fleetctl scripted", scripted, setup_home,
	    teardown_home);
	return failed;
}
