/* fleetd: the control plane binary — `serve`, `migrate` and `token create`. */
#include <limits.h>
#include <malloc.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include <curl/curl.h>

#include "api/server.h"
#include "api/workers.h"
#include "core/config.h"
#include "core/db.h"
#include "core/http.h"
#include "core/log.h"
#include "core/migrate.h"
#include "iam/oidc.h"
#include "iam/token.h"
#include "queue/jobs/submit_cache.h"
#include "regions/catalog.h"

static void
usage(FILE *f)
{
	fprintf(f,
	    "usage: fleetd COMMAND [settings]\n\n"
	    "commands:\n"
	    "  serve [--migrate]      serve the API (refuses pending migrations unless --migrate)\n"
	    "  migrate                apply pending migrations and exit\n"
	    "  token create --name NAME --role viewer|submitter|operator|admin --env ENV[,ENV...]|'*'\n"
	    "               [--team TEAM]\n"
	    "                         create an API token (talks to the database directly)\n"
	    "  help                   this text\n\n");
	config_usage(f);
}

/* An rlimit value as the log shows it: -1 for unlimited. */
static long long
rlim_json(rlim_t v)
{
	return v == RLIM_INFINITY || v > (rlim_t)LLONG_MAX ? -1 : (long long)v;
}

static bool
has_flag(char **rest, int n, const char *flag)
{
	for (int i = 0; i < n; i++)
		if (strcmp(rest[i], flag) == 0)
			return true;
	return false;
}

static const char *
flag_value(char **rest, int n, const char *flag)
{
	size_t len = strlen(flag);

	for (int i = 0; i < n; i++) {
		if (strcmp(rest[i], flag) == 0 && i + 1 < n)
			return rest[i + 1];
		if (strncmp(rest[i], flag, len) == 0 && rest[i][len] == '=')
			return rest[i] + len + 1;
	}
	return NULL;
}

static int
cmd_migrate(bool quiet, struct err *e)
{
	struct db *c = db_acquire(10000, e);
	int applied = 0;
	bool ok;

	if (c == NULL)
		return 1;
	ok = migrate_apply(c, cfg.migrations_dir, &applied, e);
	db_release(c);
	if (ok && !quiet)
		log_info(NULL, "migrate", "migrations current", "{s:i}", "applied", applied);
	return ok ? 0 : 1;
}

static int
cmd_token(char **rest, int n, struct err *e)
{
	const char *name = flag_value(rest, n, "--name");
	const char *role = flag_value(rest, n, "--role");
	const char *envs = flag_value(rest, n, "--env");
	const char *team = flag_value(rest, n, "--team");
	json_t *arr = json_array(), *obj = NULL;
	char *copy, *save = NULL, *tok, *secret = NULL;
	struct actor boot = { .name = "fleetd token create" };
	struct db *c = NULL;
	int rc = 1;

	if (n < 2 || strcmp(rest[1], "create") != 0 || !name || !role || !envs) {
		usage(stderr);
		json_decref(arr);
		return 2;
	}
	copy = strdup(envs);
	for (tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save))
		json_array_append_new(arr, json_string(tok));
	free(copy);
	if ((c = db_acquire(10000, e)) == NULL)
		goto cleanup;
	if (!db_begin(c, e) || !token_create(c, name, role, arr, team, &secret, &obj, e) ||
	    !audit_write(c, &boot, "token.create", "token",
	    json_string_value(json_object_get(obj, "id")), NULL, NULL, obj, e) ||
	    !db_commit(c, e))
		goto cleanup;
	printf("%s\n", secret);
	rc = 0;
cleanup:
	free(secret);
	json_decref(obj);
	json_decref(arr);
	db_release(c);
	return rc;
}

static int
cmd_serve(char **rest, int n, struct err *e)
{
	struct db *c;
	sigset_t set;
	int sig = 0, pending = 0;

	if (has_flag(rest, n, "--migrate")) {
		if (cmd_migrate(false, e) != 0)
			return 1;
	} else {
		if ((c = db_acquire(10000, e)) == NULL)
			return 1;
		if (!migrate_pending(c, cfg.migrations_dir, &pending, e)) {
			db_release(c);
			return 1;
		}
		db_release(c);
		if (pending > 0) {
			err_set(e, 409, "migrate.pending", "%d migrations are pending; run "
			    "`fleetd migrate` or pass --migrate", pending);
			return 1;
		}
	}
	/* Every member and cloud a thread calls keeps a connection: raise the open-file soft
	 * limit to the hard one and share it among the threads that call out (the dispatch
	 * and status pools, the poller and the other workers), leaving room for the database
	 * pool, clients and listeners. */
	{
		int pool = cfg.dispatch_concurrency > 0 ? cfg.dispatch_concurrency : 16;
		long reserve = (long)cfg.conn_limit + cfg.db_pool + 64, nofile = 0, keep;
		struct rlimit before = { 0, 0 };

		getrlimit(RLIMIT_NOFILE, &before);
		keep = http_size_caches(reserve, 2 * pool + 8, &nofile);
		log_info(NULL, "api", "open files", "{s:I, s:I, s:I, s:I, s:I, s:i}",
		    "soft_limit_at_start", (json_int_t)rlim_json(before.rlim_cur),
		    "hard_limit", (json_int_t)rlim_json(before.rlim_max),
		    "limit", (json_int_t)nofile, "reserved", (json_int_t)reserve,
		    "idle_connections_per_thread", (json_int_t)keep, "threads", 2 * pool + 8);
	}
	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
	signal(SIGPIPE, SIG_IGN);
	if (!oidc_start(e))
		return 1;
	if (!token_listen_start(cfg.database_url, e)) {
		oidc_stop();
		return 1;
	}
	submit_cache_start(cfg.database_url);	/* submit checks kept until capacity changes */
	if (!server_start(e)) {
		submit_cache_stop();
		token_listen_stop();
		oidc_stop();
		return 1;
	}
	if (!workers_start(e)) {
		server_stop();
		workers_stop();
		submit_cache_stop();
		token_listen_stop();
		oidc_stop();
		return 1;
	}
	log_info(NULL, "api", "serving", "{s:s, s:i, s:s}", "listen", cfg.listen, "port",
	    server_port(), "instance", cfg.instance_id);
	sigwait(&set, &sig);
	log_info(NULL, "api", "shutting down", "{s:i}", "signal", sig);
	server_stop();
	workers_stop();
	submit_cache_stop();
	token_listen_stop();
	oidc_stop();
	log_info(NULL, "api", "stopped", NULL);
	return 0;
}

int
main(int argc, char **argv)
{
	struct err e = { 0 };
	char **rest = NULL;
	int nrest = 0, rc;
	const char *cmd = argc > 1 ? argv[1] : "help";

	if (strcmp(cmd, "help") == 0 || strcmp(cmd, "--help") == 0 || strcmp(cmd, "-h") == 0) {
		usage(stdout);
		return 0;
	}
	/* Large blocks (a scheduler cycle's decisions and job table, result sets, batch
	 * buffers) are mapped and unmapped on their own, and a heap's free top is given back:
	 * glibc's default raises both thresholds after the first large free, after which such
	 * blocks stayed in the heaps between cycles (issue 29: the peak with 100,000 pending
	 * jobs).  Before any thread starts. */
	mallopt(M_MMAP_THRESHOLD, 128 * 1024);
	mallopt(M_TRIM_THRESHOLD, 256 * 1024);
	if (!config_load(argc, argv, 1, &rest, &nrest, &e)) {
		fprintf(stderr, "fleetd: %s\n", e.msg);
		return 2;
	}
	if (has_flag(rest, nrest, "--help")) {
		usage(stdout);
		config_cleanup();
		return 0;
	}
	if (!log_set_level(cfg.log_level)) {
		fprintf(stderr, "fleetd: unknown log level %s\n", cfg.log_level);
		config_cleanup();
		return 2;
	}
	curl_global_init(CURL_GLOBAL_DEFAULT);
	if (!db_pool_init(cfg.database_url, cfg.db_pool, &e)) {
		fprintf(stderr, "fleetd: %s (set DATABASE_URL)\n", e.msg);
		config_cleanup();
		return 2;
	}
	if (strcmp(cmd, "serve") == 0) {
		rc = cmd_serve(rest, nrest, &e);
	} else if (strcmp(cmd, "migrate") == 0) {
		rc = cmd_migrate(false, &e);
	} else if (strcmp(cmd, "token") == 0) {
		rc = cmd_token(rest, nrest, &e);
	} else {
		usage(stderr);
		rc = 2;
	}
	if (rc == 1)
		fprintf(stderr, "fleetd: %s%s%s\n", e.msg, e.detail[0] ? ": " : "", e.detail);
	db_pool_close();
	catalog_overlay_clear();	/* the flavors read from the database (regions/flavor.c) */
	token_cache_flush();
	config_cleanup();
	curl_global_cleanup();
	return rc;
}
