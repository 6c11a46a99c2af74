/* cmd_jobs: `fleetctl jobs ...` — list, get, events, explain, manifest, submit, cancel
 * and move. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"

#define PATH_MAX_LEN	2048

struct watch {
	struct cli_ctx		*c;
	const struct cli_args	*a;
	const char		*path;
	int			 rc;
};

/* jobs ls --watch: the list again after each job event (screen cleared on a terminal). */
static bool
relist(json_t *ev, void *arg)
{
	struct watch *w = arg;

	(void)ev;
	if (w->c->color)
		fputs("\033[H\033[2J", stdout);
	else if (!w->c->json)
		putchar('\n');
	w->rc = cli_run_list(w->c, w->a, w->path, &cli_view_jobs);
	fflush(stdout);
	return w->rc == CLI_OK;
}

static int
jobs_ls(struct cli_ctx *c, const struct cli_args *a)
{
	char path[PATH_MAX_LEN] = "/v1/jobs", spath[PATH_MAX_LEN] = "/v1/events?follow=true";
	struct watch w = { c, a, path, CLI_OK };
	int rc;

	if (!cli_query(path, sizeof(path), "state", cli_arg(a, "state")) ||
	    !cli_query(path, sizeof(path), "queue", cli_arg(a, "queue")) ||
	    !cli_query(path, sizeof(path), "environment", cli_arg(a, "env")) ||
	    !cli_query(path, sizeof(path), "region", cli_arg(a, "region")) ||
	    !cli_query(path, sizeof(path), "cluster", cli_arg(a, "cluster")) ||
	    !cli_query(spath, sizeof(spath), "environment", cli_arg(a, "env")))
		return CLI_USAGE;
	rc = cli_run_list(c, a, path, &cli_view_jobs);
	if (rc != CLI_OK || !cli_switch(a, "watch"))
		return rc;
	fflush(stdout);
	rc = cli_stream(c, spath, relist, &w);
	return rc == CLI_OK ? w.rc : rc;
}

/* GET /v1/jobs/{id}{suffix} into *out. */
static int
job_get(struct cli_ctx *c, const struct cli_args *a, const char *suffix, json_t **out)
{
	char path[PATH_MAX_LEN];
	int rc;

	*out = NULL;
	if ((rc = cli_need_token(c)) != CLI_OK)
		return rc;
	if (!cli_path(path, sizeof(path), "/v1/jobs/", a->pos[0], suffix))
		return CLI_USAGE;
	return cli_call(c, "GET", path, NULL, NULL, out);
}

static int
jobs_get(struct cli_ctx *c, const struct cli_args *a)
{
	json_t *job;
	int rc = job_get(c, a, NULL, &job);

	if (rc == CLI_OK)
		rc = cli_print_object(c, job);
	json_decref(job);
	return rc;
}

/* jobs events --follow: one line (or JSON object) per event until the job ends. */
static bool
print_event(json_t *ev, void *arg)
{
	struct cli_ctx *c = arg;
	const char *to = json_string_value(json_object_get(ev, "to_state"));
	const char *from = json_string_value(json_object_get(ev, "from_state"));

	if (c->json) {
		char *s = json_dumps(ev, JSON_COMPACT | JSON_PRESERVE_ORDER);

		puts(s ? s : "{}");
		free(s);
	} else {
		char tr[64] = "";

		if (to != NULL)
			snprintf(tr, sizeof(tr), "%s%s%s", from ? from : "", from ? " -> " : "", to);
		printf("%s  %-14s  %-24s  %s\n", json_string_value(json_object_get(ev, "at")),
		    json_string_value(json_object_get(ev, "type")), tr,
		    json_string_value(json_object_get(ev, "message")));
	}
	fflush(stdout);
	return to == NULL || (strcmp(to, "succeeded") != 0 && strcmp(to, "failed") != 0 &&
	    strcmp(to, "cancelled") != 0);
}

static int
jobs_events(struct cli_ctx *c, const struct cli_args *a)
{
	char path[PATH_MAX_LEN];

	if (!cli_path(path, sizeof(path), "/v1/jobs/", a->pos[0], "/events"))
		return CLI_USAGE;
	if (!cli_switch(a, "follow"))
		return cli_run_list(c, a, path, &cli_view_events);
	if (!cli_query(path, sizeof(path), "follow", "true"))
		return CLI_USAGE;
	return cli_stream(c, path, print_event, c);
}

/* "NAME (first 8 of the id)" for the cluster ids of an explain answer; JSON output gets a
 * cluster_name member next to each id instead. */
static void
name_one(json_t *o, const char *key, const json_t *names, bool json)
{
	const char *id = json_string_value(json_object_get(o, key));
	const char *name = id ? json_string_value(json_object_get(names, id)) : NULL;
	char both[160];

	if (name == NULL)
		return;
	if (json) {
		char k[64];

		snprintf(k, sizeof(k), "%s_name", key);
		json_object_set_new(o, k, json_string(name));
		return;
	}
	snprintf(both, sizeof(both), "%s (%.8s)", name, id);
	json_object_set_new(o, key, json_string(both));
}

static void
name_clusters(struct cli_ctx *c, json_t *x)
{
	json_t *list = NULL, *names = json_object(), *cl, *v;
	json_t *dec = json_object_get(x, "decision");
	json_t *arrays[3] = { json_object_get(x, "clusters"), json_object_get(x, "candidates"),
		json_object_get(dec, "candidates") };
	size_t i;

	if (cli_list(c, "/v1/clusters?limit=500", 0, &list) != CLI_OK) {
		json_decref(names);
		return;		/* ids only, as the server sent them */
	}
	json_array_foreach(json_object_get(list, "items"), i, cl)
		json_object_set(names, json_string_value(json_object_get(cl, "id")),
		    json_object_get(cl, "name"));
	for (int k = 0; k < 3; k++)
		json_array_foreach(arrays[k], i, v)
			name_one(v, "cluster", names, c->json);
	name_one(x, "hold_cluster", names, c->json);
	if (dec != NULL) {
		name_one(dec, "cluster", names, c->json);
		name_one(dec, "hold_cluster", names, c->json);
	}
	json_decref(names);
	json_decref(list);
}

static const char *
s_of(const json_t *o, const char *k)
{
	const char *v = json_string_value(json_object_get(o, k));

	return v ? v : "-";
}

/* A JSON array or object on one line (or "-"). */
static void
print_compact(const char *label, const json_t *v)
{
	char *t = v != NULL && (json_array_size(v) > 0 || json_object_size(v) > 0) ?
	    json_dumps(v, JSON_COMPACT) : NULL;

	if (t != NULL)
		printf("  %-9s %s\n", label, t);
	free(t);
}

/* Why the job failed or stalls, first (issue 24): a lost node waiting for a spare; the
 * failure's class, where, evidence and retry; then the current attempt's classified signals;
 * then where the post-mortem of its ended attempts is kept and where the History Server shows
 * the job's Ray session. */
static void
print_failure(const json_t *x)
{
	const json_t *f = json_object_get(x, "failure"), *sig = json_object_get(x, "signals"), *g;
	const json_t *w = json_object_get(x, "waiting_for_spare"),
	    *pm = json_object_get(x, "postmortem"), *hs = json_object_get(x, "history_server");
	const char *title = "Failure:";
	size_t i;

	if (w != NULL)	/* a lost node with no spare in its domain (queue/follow/repair.c) */
		printf("Waiting for a spare in %s: node %s lost (%s)\n  %s\n\n", s_of(w, "domain"),
		    s_of(w, "lost_node"), s_of(w, "why"), s_of(w, "reason"));
	/* autoscaled groups: what fleetd admitted, what the autoscaler asks, why growth waits
	 * (issue 26, queue/follow/grow.c) */
	json_array_foreach(json_object_get(x, "elastic"), i, g) {
		const json_t *wt = json_object_get(g, "waiting");

		printf("Elastic group %s: %lld admitted, %lld desired (min %lld, max %lld)\n",
		    s_of(g, "group"), json_integer_value(json_object_get(g, "admitted_replicas")),
		    json_integer_value(json_object_get(g, "desired_replicas")),
		    json_integer_value(json_object_get(g, "min_replicas")),
		    json_integer_value(json_object_get(g, "max_replicas")));
		if (json_is_object(wt))
			printf("  growth of %lld waits (%s): %s\n",
			    json_integer_value(json_object_get(wt, "replicas")), s_of(wt, "reason"),
			    s_of(wt, "detail"));
		if (i + 1 == json_array_size(json_object_get(x, "elastic")))
			printf("\n");
	}
	if (f == NULL) {
		f = json_object_get(x, "last_failure");
		title = "Last failure (retried or moved on):";
	}
	if (f != NULL) {
		const json_t *r = json_object_get(f, "retry");

		printf("%s %s — %s (attempt %lld)\n", title, s_of(f, "class"), s_of(f, "reason"),
		    json_integer_value(json_object_get(f, "attempt")));
		printf("  %s\n", s_of(f, "message"));
		print_compact("pods:", json_object_get(f, "pods"));
		print_compact("ranks:", json_object_get(f, "ranks"));
		print_compact("nodes:", json_object_get(f, "nodes"));
		print_compact("evidence:", json_object_get(f, "evidence"));
		if (r != NULL)
			printf("  retry:    %s%s%s\n", json_is_true(json_object_get(r, "given")) ?
			    "a new attempt was given" : "not retried", json_object_get(r, "why") ?
			    ": " : "", json_object_get(r, "why") ? s_of(r, "why") : "");
	}
	if (json_array_size(sig) > 0)
		printf("Signals of this attempt (why it stalls or failed):\n");
	json_array_foreach(sig, i, g)
		printf("  %-14s %-18s %s\n", s_of(g, "class"), s_of(g, "reason"),
		    s_of(g, "message"));
	if (pm != NULL) {	/* kept after the cluster is gone (GET /v1/jobs/{id}/postmortem) */
		const json_t *a0 = json_array_get(json_object_get(pm, "attempts"), 0);

		printf("Post-mortem: %zu attempt(s) kept, latest attempt %lld (%s at %s)\n"
		    "  read it: %s\n", json_array_size(json_object_get(pm, "attempts")),
		    json_integer_value(json_object_get(a0, "attempt")), s_of(a0, "trigger"),
		    s_of(a0, "recorded_at"), s_of(pm, "command"));
	}
	if (hs != NULL) {	/* the environment names History Server log storage */
		printf("History Server: %s/%s/%s (logs in %s)\n", s_of(hs, "namespace"),
		    s_of(hs, "kind"), s_of(hs, "name"), s_of(hs, "storage"));
		if (json_object_get(hs, "live") != NULL)
			printf("  live session: %s\n", s_of(hs, "live"));
		if (json_object_get(hs, "session") != NULL)
			printf("  sessions: %s\n  a session: %s\n", s_of(hs, "sessions"),
			    s_of(hs, "session"));
	}
	if (f != NULL || json_array_size(sig) > 0 || pm != NULL || hs != NULL)
		printf("\n");
}

/* A container state as the kubelet gave it: "running since T", "terminated OOMKilled exit
 * 137 at T", "waiting ImagePullBackOff" (an exit code only where the container ended). */
static void
print_cstate(const json_t *st)
{
	const char *r = json_string_value(json_object_get(st, "reason"));
	const json_t *x = json_object_get(st, "exit_code");

	if (st == NULL) {
		printf("-");
		return;
	}
	printf("%s", s_of(st, "state"));
	if (r != NULL && r[0] != '\0')
		printf(" %s", r);
	if (json_is_integer(x))
		printf(" exit %lld", json_integer_value(x));
	if (json_is_string(json_object_get(st, "finished_at")))
		printf(" at %s", s_of(st, "finished_at"));
	else if (json_is_string(json_object_get(st, "started_at")))
		printf(" since %s", s_of(st, "started_at"));
}

static int
jobs_postmortem(struct cli_ctx *c, const struct cli_args *a)
{
	json_t *x, *it, *p, *ct;
	size_t i, k, q;
	int rc = job_get(c, a, "/postmortem", &x);

	if (rc != CLI_OK || c->json) {
		if (rc == CLI_OK)
			cli_print_json(x);
		json_decref(x);
		return rc;
	}
	if (json_array_size(json_object_get(x, "items")) == 0)
		printf("no post-mortem yet: none of the job's attempts has ended\n");
	json_array_foreach(json_object_get(x, "items"), i, it) {
		const json_t *r = json_object_get(it, "record"), *f = json_object_get(r, "failure"),
		    *ray = json_object_get(r, "ray");

		printf("attempt %lld on %s: %s at %s\n", json_integer_value(json_object_get(it,
		    "attempt")), s_of(it, "cluster"), s_of(it, "trigger"), s_of(it, "recorded_at"));
		printf("  ray: %s %s\n", s_of(ray, "status"), s_of(ray, "message"));
		if (f != NULL)
			printf("  failure: %s — %s: %s\n", s_of(f, "class"), s_of(f, "reason"),
			    s_of(f, "message"));
		json_array_foreach(json_object_get(r, "pods"), k, p) {
			printf("  pod %s (%s) on %s: %s, %lld restarts\n", s_of(p, "name"),
			    s_of(p, "type"), s_of(p, "node"), s_of(p, "phase"),
			    json_integer_value(json_object_get(p, "restarts")));
			json_array_foreach(json_object_get(p, "containers"), q, ct) {
				const json_t *ls = json_object_get(ct, "last_state");

				printf("    %s: ", s_of(ct, "name"));
				print_cstate(json_object_get(ct, "state"));
				printf(", %lld restarts", json_integer_value(json_object_get(ct,
				    "restarts")));
				if (ls != NULL) {
					printf("; last: ");
					print_cstate(ls);
				}
				printf("\n");
			}
		}
		json_array_foreach(json_object_get(r, "events"), k, p)
			printf("  event %s %s: %s\n", s_of(p, "object"), s_of(p, "reason"),
			    s_of(p, "message"));
	}
	json_decref(x);
	return rc;
}

/* The scheduler's capacity-preference verdict (issue 27), one line, when the job has one. */
static void
print_prefs(json_t *x)
{
	json_t *p = json_object_get(x, "capacity_preference"), *v;
	size_t i;

	if (!json_is_object(p))
		return;
	printf("capacity preference:");
	json_array_foreach(json_object_get(p, "order"), i, v)
		printf("%s%s", i ? " > " : " ", json_string_value(v));
	if (json_is_true(json_object_get(p, "first_choice_only")))
		printf(" (first choice only)");
	if (json_is_string(json_object_get(p, "current")))
		printf("; on %s", json_string_value(json_object_get(p, "current")));
	printf("; migrations %lld of %lld; %s: %s\n",
	    (long long)json_integer_value(json_object_get(p, "migrations")),
	    (long long)json_integer_value(json_object_get(p, "max_migrations")),
	    s_of(p, "verdict"), s_of(p, "detail"));
}

static int
jobs_explain(struct cli_ctx *c, const struct cli_args *a)
{
	struct cli_table_opts o = { .width = c->width, .color = c->color, .now = c->now };
	json_t *x;
	char *t;
	int rc = job_get(c, a, "/placement", &x);

	if (rc == CLI_OK)
		name_clusters(c, x);

	if (rc == CLI_OK && c->json) {
		cli_print_json(x);
	} else if (rc == CLI_OK) {
		print_failure(x);
		print_prefs(x);
		if ((t = cli_explain_render(x, &o)) == NULL)
			rc = cli_fail(CLI_ERROR, "out of memory");
		else
			fputs(t, stdout);
		free(t);
	}
	json_decref(x);
	return rc;
}

static int
jobs_manifest(struct cli_ctx *c, const struct cli_args *a)
{
	json_t *m;
	int rc = job_get(c, a, "/manifest", &m);

	if (rc == CLI_OK)
		cli_print_json(m);
	json_decref(m);
	return rc;
}

/* GET /v1/jobs/{id}/dashboard: the Ray dashboard's URL and token (issue 25), as JSON; the
 * token is printed only on stdout, for the caller who may have it. */
static int
jobs_dashboard(struct cli_ctx *c, const struct cli_args *a)
{
	json_t *d;
	int rc = job_get(c, a, "/dashboard", &d);

	if (rc == CLI_OK)
		cli_print_json(d);
	json_decref(d);
	return rc;
}

/* The spec from a file or "-" (stdin), as a JSON object. */
static int
read_spec(const char *file, json_t **out)
{
	json_error_t je;
	bool in = strcmp(file, "-") == 0;
	FILE *f = in ? stdin : fopen(file, "r");

	if (f == NULL)
		return cli_fail(CLI_USAGE, "cannot open %s", file);
	*out = json_loadf(f, JSON_REJECT_DUPLICATES, &je);
	if (!in)
		fclose(f);
	if (*out == NULL)
		return cli_fail(CLI_USAGE, "%s:%d:%d: %s", in ? "stdin" : file, je.line,
		    je.column, je.text);
	if (!json_is_object(*out)) {
		json_decref(*out);
		*out = NULL;
		return cli_fail(CLI_USAGE, "%s: a job spec is a JSON object", in ? "stdin" : file);
	}
	return CLI_OK;
}

static const char *
str(const json_t *o, const char *key)
{
	const char *s = json_string_value(json_object_get(o, key));

	return s != NULL ? s : "-";
}

static int
jobs_submit(struct cli_ctx *c, const struct cli_args *a)
{
	json_t *spec = NULL, *job = NULL;
	int rc;

	if (cli_arg(a, "file") == NULL)
		return cli_fail(CLI_USAGE, "jobs submit needs -f FILE (or -f - for stdin)");
	if ((rc = read_spec(cli_arg(a, "file"), &spec)) != CLI_OK)
		return rc;
	if ((rc = cli_need_token(c)) == CLI_OK)
		rc = cli_call(c, "POST", "/v1/jobs", spec, NULL, &job);
	if (rc == CLI_OK && c->json)
		cli_print_json(job);
	else if (rc == CLI_OK)
		printf("job %s submitted: %s in queue %s, %s\n", str(job, "id"), str(job, "name"),
		    str(job, "queue"), str(job, "state"));
	json_decref(spec);
	json_decref(job);
	return rc;
}

static int
jobs_cancel(struct cli_ctx *c, const struct cli_args *a)
{
	char path[PATH_MAX_LEN];
	json_t *job = NULL;
	int rc;

	if ((rc = cli_need_token(c)) != CLI_OK)
		return rc;
	if (!cli_path(path, sizeof(path), "/v1/jobs/", a->pos[0], "/cancel"))
		return CLI_USAGE;
	rc = cli_call(c, "POST", path, NULL, NULL, &job);
	if (rc == CLI_OK && c->json)
		cli_print_json(job);
	else if (rc == CLI_OK)
		printf("job %s: %s\n", a->pos[0], job != NULL ? str(job, "state") : "cancelled");
	json_decref(job);
	return rc;
}

/* {"target": {...}, "reason"?, "dry_run"} from exactly one of --region/--cloud/--cluster. */
static int
move_body(const struct cli_args *a, json_t **out)
{
	static const char *const targets[][2] = { { "region", "region" },
	    { "cloud", "cloud_id" }, { "cluster", "cluster_id" } };
	json_t *target = json_object();
	int n = 0;

	for (int i = 0; i < 3; i++)
		if (cli_arg(a, targets[i][0]) != NULL && ++n == 1)
			json_object_set_new(target, targets[i][1],
			    json_string(cli_arg(a, targets[i][0])));
	if (n != 1) {
		json_decref(target);
		return cli_fail(CLI_USAGE, "jobs move needs exactly one of --region, --cloud, "
		    "--cluster");
	}
	*out = json_pack("{s:o, s:b}", "target", target, "dry_run", cli_switch(a, "dry-run"));
	if (*out != NULL && cli_arg(a, "reason") != NULL)
		json_object_set_new(*out, "reason", json_string(cli_arg(a, "reason")));
	if (*out != NULL && cli_switch(a, "source-unreachable"))
		json_object_set_new(*out, "source", json_string("unreachable"));
	return *out != NULL ? CLI_OK : cli_fail(CLI_ERROR, "out of memory");
}

static int
print_plan(struct cli_ctx *c, const json_t *plan)
{
	struct cli_table_opts o = { .width = c->width, .color = c->color, .now = c->now };
	char *t = cli_plan_render(plan, &o);

	if (t == NULL)
		return cli_fail(CLI_ERROR, "out of memory");
	fputs(t, stdout);
	free(t);
	return CLI_OK;
}

/* 200: the dry run's plan; 202: {plan, job} of a started move (or an operation). */
static int
move_report(struct cli_ctx *c, const struct cli_args *a, long status, const json_t *res)
{
	int rc = CLI_OK;

	if (status == 202 && json_object_get(res, "total") != NULL)
		return cli_report_operation(c, res, cli_switch(a, "wait"));
	if (c->json)
		cli_print_json(res);
	if (status != 202 || !json_is_object(json_object_get(res, "plan")))
		return c->json ? CLI_OK : print_plan(c, res);
	if (!c->json) {
		printf("job %s is moving (%s)\n", a->pos[0], str(json_object_get(res, "job"),
		    "state"));
		rc = print_plan(c, json_object_get(res, "plan"));
	}
	if (rc == CLI_OK && cli_switch(a, "wait"))
		rc = cli_wait_job(c, a->pos[0]);
	return rc;
}

static int
jobs_move(struct cli_ctx *c, const struct cli_args *a)
{
	char path[PATH_MAX_LEN];
	json_t *body = NULL, *res = NULL;
	long status = 0;
	int rc;

	if ((rc = move_body(a, &body)) != CLI_OK)
		return rc;
	if ((rc = cli_need_token(c)) != CLI_OK)
		goto cleanup;
	if (!cli_path(path, sizeof(path), "/v1/jobs/", a->pos[0], "/move")) {
		rc = CLI_USAGE;
		goto cleanup;
	}
	if ((rc = cli_call(c, "POST", path, body, &status, &res)) == CLI_OK)
		rc = move_report(c, a, status, res);
cleanup:
	json_decref(body);
	json_decref(res);
	return rc;
}

#define LIST_FLAGS \
	{ "limit", 0, "N", "show at most N (default 100)" }, \
	{ "all", 0, NULL, "follow every page" }

static const struct cli_flag ls_flags[] = {
	{ "state", 0, "STATE", "pending, admitted, dispatched, running, succeeded, ..." },
	{ "queue", 0, "QUEUE", "only this queue" },
	{ "env", 0, "ENV", "only this environment" },
	{ "region", 0, "REGION", "only this region" },
	{ "cluster", 0, "CLUSTER", "only this cluster" },
	{ "watch", 'w', NULL, "list again after every job event (live, until Ctrl-C)" },
	LIST_FLAGS,
	{ NULL, 0, NULL, NULL },
};

static const struct cli_flag events_flags[] = {
	{ "follow", 'f', NULL, "stream new events as they happen, until the job ends" },
	LIST_FLAGS,
	{ NULL, 0, NULL, NULL },
};

static const struct cli_flag submit_flags[] = {
	{ "file", 'f', "FILE", "job spec JSON, - for stdin" },
	{ NULL, 0, NULL, NULL },
};

static const struct cli_flag move_flags[] = {
	{ "region", 0, "REGION", "move to this region of the job's environment" },
	{ "cloud", 0, "CLOUD_ID", "move to this cloud" },
	{ "cluster", 0, "CLUSTER_ID", "move to this cluster" },
	{ "dry-run", 0, NULL, "only show the plan: target, price difference, preemptions" },
	{ "reason", 0, "TEXT", "why (kept in the audit log and the job's events)" },
	{ "wait", 0, NULL, "follow the job until it runs again (or ends)" },
	{ "source-unreachable", 0, NULL, "evacuate: the job's cluster fails its health checks; "
	    "abandon the attempt there and restart from the last acknowledged checkpoint" },
	{ NULL, 0, NULL, NULL },
};

const struct cli_cmd cli_jobs_cmds[] = {
	{ "jobs", "ls", NULL, 0, "list jobs", ls_flags, jobs_ls },
	{ "jobs", "get", "ID", 1, "show one job", NULL, jobs_get },
	{ "jobs", "events", "ID", 1, "a job's history", events_flags, jobs_events },
	{ "jobs", "explain", "ID", 1, "why a job is placed where it is, or why it waits",
	    NULL, jobs_explain },
	{ "jobs", "manifest", "ID", 1, "the KubeRay object applied for a job", NULL,
	    jobs_manifest },
	{ "jobs", "dashboard", "ID", 1, "the Ray dashboard's URL and token of a running job "
	    "(operators, admins and the job's submitter)", NULL, jobs_dashboard },
	{ "jobs", "postmortem", "ID", 1, "what each ended attempt looked like on its cluster "
	    "(pods, exit codes, events), kept after the cluster is gone", NULL, jobs_postmortem },
	{ "jobs", "submit", NULL, 0, "submit a job spec", submit_flags, jobs_submit },
	{ "jobs", "cancel", "ID", 1, "cancel a job", NULL, jobs_cancel },
	{ "jobs", "move", "ID", 1, "move a job to another region, cloud or cluster",
	    move_flags, jobs_move },
	{ NULL, NULL, NULL, 0, NULL, NULL, NULL },
};
