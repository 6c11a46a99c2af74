/* harness: scratch databases, fleetd processes, tokens and the group teardown for
 * integration tests.  libcurl calls and the record of fleetd's answers are in http.c; the
 * calls with a remembered answer, SQL and time in call.c; cloudsim in cloudsim.c;
 * registration in fleet.c. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <libpq-fe.h>

#include "core/textbuf.h"
#include "tests/harness/harness.h"
#include "tests/harness/internal.h"

static void group_track(void **list, int *n, void *p);
#define GROUP_MAX	32
/* fleetd processes and databases for harness_group_teardown, by value: a test may keep its
 * struct fleetd_proc on the stack, so the group never looks at it again */
static struct fleetd_proc g_procs[GROUP_MAX];
static char g_dbs[GROUP_MAX][512];
static int g_nprocs, g_ndbs;

/* harness_pg_private's server: its folder (for scripts/pg.sh) and URL, "" when none */
static char g_priv_dir[256], g_priv_url[512];

static const char *
base_url(void)
{
	const char *u = getenv("FLEETD_TEST_DATABASE_URL");

	if (g_priv_url[0] != '\0')
		return g_priv_url;

	if (u == NULL || *u == '\0') {
		fprintf(stderr, "FLEETD_TEST_DATABASE_URL is not set: run through `make test` "
		    "(tests/run.sh starts Postgres); a missing database is a failure\n");
		fail();
	}
	return u;
}

static void
admin_sql(const char *sql)
{
	PGconn *c = PQconnectdb(base_url());
	PGresult *r;

	if (PQstatus(c) != CONNECTION_OK) {
		fprintf(stderr, "cannot reach the test database: %s\n", PQerrorMessage(c));
		PQfinish(c);
		fail();
	}
	r = PQexec(c, sql);
	if (PQresultStatus(r) != PGRES_COMMAND_OK) {
		fprintf(stderr, "%s: %s\n", sql, PQresultErrorMessage(r));
		PQclear(r);
		PQfinish(c);
		fail();
	}
	PQclear(r);
	PQfinish(c);
}

void
harness_db_create(const char *tag, char *url, size_t urllen)
{
	char name[96], sql[256];
	const char *base = base_url(), *slash = strrchr(base, '/');

	snprintf(name, sizeof(name), "t_%s_%d", tag, (int)getpid());
	snprintf(sql, sizeof(sql), "DROP DATABASE IF EXISTS %s WITH (FORCE)", name);
	admin_sql(sql);
	snprintf(sql, sizeof(sql), "CREATE DATABASE %s", name);
	admin_sql(sql);
	snprintf(url, urllen, "%.*s/%s", (int)(slash - base), base, name);
	harness_sql_use(url);
	if (g_ndbs < GROUP_MAX)
		snprintf(g_dbs[g_ndbs++], sizeof(g_dbs[0]), "%s", url);
}

static void
pg_private_destroy(void)
{
	if (g_priv_dir[0] == '\0')
		return;
	harness_sh("bash '" FLEETD_SOURCE_DIR "/scripts/pg.sh' destroy '%s' >/dev/null 2>&1;"
	    " rm -rf '%s'", g_priv_dir, g_priv_dir);
	g_priv_dir[0] = g_priv_url[0] = '\0';
}

const char *
harness_pg_dir(void)
{
	return g_priv_dir[0] != '\0' ? g_priv_dir : getenv("FLEETD_TEST_PGDIR");
}

void
harness_pg_private(void)
{
	const char *shared = getenv("FLEETD_TEST_PGDIR");
	char cmd[1024];
	FILE *f;

	if (g_priv_url[0] != '\0')
		return;
	if (shared == NULL || *shared == '\0')
		fail_msg("FLEETD_TEST_PGDIR is not set: run through `make test` (tests/run.sh)");
	snprintf(g_priv_dir, sizeof(g_priv_dir), "/tmp/fleetd-test-pg-own.XXXXXX");
	if (mkdtemp(g_priv_dir) == NULL)
		fail_msg("mkdtemp: cannot make a folder for a private Postgres");
	atexit(pg_private_destroy);
	/* the shared server's password file: PGPASSFILE (tests/run.sh) serves both servers */
	if (harness_sh("install -m 600 '%s/pgpass' '%s/pgpass' && bash '" FLEETD_SOURCE_DIR
	    "/scripts/pg.sh' start '%s' >&2", shared, g_priv_dir, g_priv_dir) != 0)
		fail_msg("could not start a private Postgres in %s", g_priv_dir);
	snprintf(cmd, sizeof(cmd), "bash '" FLEETD_SOURCE_DIR "/scripts/pg.sh' url '%s'",
	    g_priv_dir);
	f = popen(cmd, "r");
	assert_non_null(f);
	if (fgets(g_priv_url, sizeof(g_priv_url), f) == NULL)
		g_priv_url[0] = '\0';
	assert_int_equal(pclose(f), 0);
	g_priv_url[strcspn(g_priv_url, "\n")] = '\0';
	if (strncmp(g_priv_url, "postgresql://", 13) != 0)
		fail_msg("pg.sh url %s: no URL", g_priv_dir);
}

void
harness_db_drop(const char *url)
{
	char sql[256];
	const char *name = strrchr(url, '/');

	if (name == NULL)	/* never created: a setup that failed early */
		return;
	name++;
	snprintf(sql, sizeof(sql), "DROP DATABASE IF EXISTS %s WITH (FORCE)", name);
	admin_sql(sql);
}

int
harness_free_port(void)
{
	struct sockaddr_in sa = { .sin_family = AF_INET };
	socklen_t len = sizeof(sa);
	int s = socket(AF_INET, SOCK_STREAM, 0), port;

	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	assert_int_equal(bind(s, (struct sockaddr *)&sa, sizeof(sa)), 0);
	assert_int_equal(getsockname(s, (struct sockaddr *)&sa, &len), 0);
	port = ntohs(sa.sin_port);
	close(s);
	return port;
}

/* What harness_group_teardown tears down: every fleetd, database and cloudsim the harness
 * started in this process, and what the test asked it to keep (harness_keep). */
static struct harness_cs *g_sims[GROUP_MAX];
static void *g_kept[GROUP_MAX];
static int g_nsims, g_nkept;

static void
group_track(void **list, int *n, void *p)
{
	for (int i = 0; i < *n; i++)
		if (list[i] == p)
			return;
	if (*n == GROUP_MAX)
		fail_msg("more than %d of a kind for harness_group_teardown", GROUP_MAX);
	list[(*n)++] = p;
}

void
harness_track_cs(struct harness_cs *cs, bool on)
{
	if (on) {
		group_track((void **)g_sims, &g_nsims, cs);
		return;
	}
	for (int i = 0; i < g_nsims; i++)	/* stopped: it may live on a stack that goes */
		if (g_sims[i] == cs)
			g_sims[i--] = g_sims[--g_nsims];
}

void *
harness_keep(void *p)
{
	group_track(g_kept, &g_nkept, p);
	return p;
}

int
harness_group_teardown(void **state)
{
	int bad = 0;

	(void)state;
	for (int i = 0; i < g_nprocs; i++) {
		/* only a child of ours still running: one the test stopped or killed itself was
		 * reaped already (waitpid answers -1), one that exited on its own is reaped now */
		if (waitpid(g_procs[i].pid, NULL, WNOHANG) != 0)
			continue;
		if (harness_fleetd_stop(&g_procs[i]) != 0) {
			print_error("fleetd %s did not exit 0 (log %s)\n", g_procs[i].url,
			    g_procs[i].log);
			bad = 1;
		}
	}
	for (int i = 0; i < g_ndbs; i++)
		harness_db_drop(g_dbs[i]);
	while (g_nsims > 0)
		harness_cs_stop(g_sims[0]);	/* which untracks it */
	for (int i = 0; i < g_nkept; i++)
		free(g_kept[i]);
	g_nprocs = g_ndbs = g_nsims = g_nkept = 0;
	harness_done();
	if (bad)	/* cmocka 1.1 does not count a failed group teardown */
		harness_fail_at_exit();
	harness_validate_responses();
	return bad ? -1 : 0;
}


static const char *
fleetd_bin(void)
{
	return FLEETD_BINARY_DIR "/fleetd";
}

const char *
harness_metrics_token(void)
{
	static char tok[49];

	if (tok[0] == '\0') {
		unsigned char raw[24];
		int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);

		assert_true(fd >= 0 && read(fd, raw, sizeof(raw)) == (ssize_t)sizeof(raw));
		close(fd);
		for (size_t i = 0; i < sizeof(raw); i++)
			snprintf(tok + 2 * i, 3, "%02x", raw[i]);
	}
	return tok;
}

void
harness_fleetd_start(struct fleetd_proc *p, const char *dburl, const char *const *env)
{

	char listen[64];
	struct http_result r = { 0 };
	char health[128];

	memset(p, 0, sizeof(*p));
	p->port = harness_free_port();
	for (int i = 0; env != NULL && env[i] != NULL; i++)
		if (strncmp(env[i], "FLEETD_TLS_CERT=", 16) == 0)
			snprintf(p->ca, sizeof(p->ca), "%s", env[i] + 16);
	snprintf(p->url, sizeof(p->url), "%s://127.0.0.1:%d", p->ca[0] ? "https" : "http",
	    p->port);
	snprintf(p->log, sizeof(p->log), "/tmp/fleetd-test-%d-%d.log", (int)getpid(), p->port);
	snprintf(p->dburl, sizeof(p->dburl), "%s", dburl);
	snprintf(listen, sizeof(listen), "127.0.0.1:%d", p->port);
	harness_rec_port(p->port, true);
	(void)harness_metrics_token();	/* drawn here: the child must not draw its own */
	p->pid = fork();
	assert_true(p->pid >= 0);
	if (p->pid == 0) {
		int fd = open(p->log, O_WRONLY | O_CREAT | O_TRUNC, 0600);

		prctl(PR_SET_PDEATHSIG, SIGTERM);	/* ends with the test, however it ends */
		dup2(fd, 1);
		dup2(fd, 2);
		setenv("DATABASE_URL", dburl, 1);
		setenv("FLEETD_LISTEN", listen, 1);
		setenv("FLEETD_LOG_LEVEL", "debug", 1);
		setenv("FLEETD_MIGRATIONS_DIR", FLEETD_SOURCE_DIR "/migrations", 1);
		setenv("FLEETD_OPENAPI", FLEETD_SOURCE_DIR "/api/openapi.yaml", 1);
		setenv("FLEETD_METRICS_TOKEN", harness_metrics_token(), 1);
		for (int i = 0; env != NULL && env[i] != NULL; i++)
			putenv(strdup(env[i]));
		execl(fleetd_bin(), "fleetd", "serve", "--migrate", (char *)NULL);
		_exit(127);
	}
	snprintf(health, sizeof(health), "%s/healthz", p->url);
	for (double end = harness_now_s() + 60; harness_now_s() < end;) {
		/* 60 s: the machine may be loaded (tests run beside each other) */
		int st;

		if (waitpid(p->pid, &st, WNOHANG) == p->pid) {
			char *log = harness_slurp(p->log);

			fprintf(stderr, "fleetd exited at start:\n%s\n", log ? log : "");
			free(log);
			fail();
		}
		harness_https(&r, "GET", health, NULL, p->ca[0] ? p->ca : NULL, NULL, NULL);
		if (r.status == 200) {
			harness_http_free(&r);
			harness_call_to(p);
			if (g_nprocs < GROUP_MAX)
				g_procs[g_nprocs++] = *p;
			return;
		}
		harness_http_free(&r);
		usleep(50 * 1000);
	}
	fail_msg("fleetd did not become healthy");
}

void
harness_fleetd_cs(struct fleetd_proc *p, char *dburl, size_t urllen, const char *tag,
		  const struct harness_cs *cs, const char *const *env)
{
	const char *all[128];
	int n = 0;

	for (int i = 0; i < cs->nenv && cs->env[i] != NULL; i++)
		all[n++] = cs->env[i];
	for (int i = 0; env != NULL && env[i] != NULL; i++) {
		if (n == (int)(sizeof(all) / sizeof(all[0])) - 1)
			fail_msg("harness_fleetd_cs: more than %d env entries", n);
		all[n++] = env[i];
	}
	all[n] = NULL;
	harness_db_create(tag, dburl, urllen);
	harness_fleetd_start(p, dburl, all);
}

int
harness_fleetd_stop(struct fleetd_proc *p)
{
	int st = 0;

	if (p->pid <= 0)
		return -1;
	harness_rec_port(p->port, false);
	kill(p->pid, SIGTERM);
	/* a deadline, not a figure: it returns as soon as fleetd exits (a loaded machine once
	 * took over 20 s) */
	for (double end = harness_now_s() + 60; harness_now_s() < end;) {
		if (waitpid(p->pid, &st, WNOHANG) == p->pid) {
			p->pid = 0;
			return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
		}
		usleep(50 * 1000);
	}
	kill(p->pid, SIGKILL);
	waitpid(p->pid, &st, 0);
	p->pid = 0;
	fail_msg("fleetd did not stop within 60 s of SIGTERM");
	return -1;
}

void
harness_raise_nofile(long n)
{
	struct rlimit rl;

	assert_int_equal(getrlimit(RLIMIT_NOFILE, &rl), 0);
	if (rl.rlim_cur < (rlim_t)n && rl.rlim_max > rl.rlim_cur) {
		rl.rlim_cur = rl.rlim_max < (rlim_t)n ? rl.rlim_max : (rlim_t)n;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
}

long
harness_rss_kb(pid_t pid)
{
	char path[64], line[256];
	long kb = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	f = fopen(path, "r");
	if (f == NULL)
		fail_msg("%s: cannot read it (process gone?)", path);
	while (fgets(line, sizeof(line), f) != NULL)
		if (sscanf(line, "VmRSS: %ld kB", &kb) == 1)
			break;
	fclose(f);
	if (kb <= 0)
		fail_msg("%s has no VmRSS", path);
	return kb;
}

char *
harness_token(const char *dburl, const char *role, const char *envs)
{
	char cmd[1024], buf[256] = "";
	FILE *f;

	snprintf(cmd, sizeof(cmd), "DATABASE_URL='%s' FLEETD_LOG_LEVEL=error %s token create "
	    "--name test-%s --role %s --env '%s'", dburl, fleetd_bin(), role, role, envs);
	f = popen(cmd, "r");
	assert_non_null(f);
	while (fgets(buf, sizeof(buf), f) != NULL && strncmp(buf, "fleet_", 6) != 0)
		;
	assert_int_equal(pclose(f), 0);
	buf[strcspn(buf, "\n")] = '\0';
	assert_true(strncmp(buf, "fleet_", 6) == 0);
	return strdup(buf);
}


char *
harness_slurp(const char *path)
{
	return textbuf_read_file(path, NULL);
}

int
harness_sh(const char *fmt, ...)
{
	char cmd[4096];
	va_list ap;
	int st;

	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	st = system(cmd);
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128;
}

void
harness_roles(const char *dburl, const char *env, struct harness_roles *r)
{
	char body[160];

	r->admin = harness_keep(harness_token(dburl, "admin", "*"));
	r->oper = harness_keep(harness_token(dburl, "operator", env));
	r->viewer = harness_keep(harness_token(dburl, "viewer", env));
	r->other = harness_keep(harness_token(dburl, "admin", "other"));
	snprintf(body, sizeof(body), "{\"name\":\"%s\"}", env);
	harness_post_created(r->admin, "/v1/environments", body);
	harness_post_created(r->admin, "/v1/environments", "{\"name\":\"other\"}");
}
