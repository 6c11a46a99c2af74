/* cmd_explain: `fleetctl clusters explain ID` — why nothing lands on a cluster: its own
 * state (ready, cordoned, snapshot age, last error), its capacity rows, and what the
 * placement of the pending jobs of its environment said about it (reason counts, with the
 * jobs' names). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"

#define PATH_MAX_LEN	2048
#define MAX_JOBS	50

static const char *
s(const json_t *o, const char *k)
{
	const char *v = json_string_value(json_object_get(o, k));

	return v ? v : "-";
}

/* The verdict about cluster id in a placement answer, or NULL. */
static const json_t *
verdict(const json_t *x, const char *id)
{
	const json_t *lists[3] = { json_object_get(x, "clusters"), json_object_get(x, "candidates"),
		json_object_get(json_object_get(x, "decision"), "candidates") };
	size_t i;
	json_t *v;

	for (int l = 0; l < 3; l++)
		json_array_foreach(lists[l], i, v)
			if (strcmp(s(v, "cluster"), id) == 0)
				return v;
	return NULL;
}

static int
clusters_explain(struct cli_ctx *c, const struct cli_args *a)
{
	char path[PATH_MAX_LEN];
	json_t *cl = NULL, *cap = NULL, *jobs = NULL, *out = NULL, *reasons, *row, *job;
	const char *id, *env;
	size_t i;
	int rc;

	if ((rc = cli_need_token(c)) != CLI_OK)
		return rc;
	if (!cli_path(path, sizeof(path), "/v1/clusters/", a->pos[0], NULL))
		return CLI_USAGE;
	if ((rc = cli_call(c, "GET", path, NULL, NULL, &cl)) != CLI_OK)
		return rc;
	id = s(cl, "id");
	env = s(cl, "environment");
	snprintf(path, sizeof(path), "/v1/capacity");
	if (!cli_query(path, sizeof(path), "environment", env) ||
	    (rc = cli_call(c, "GET", path, NULL, NULL, &cap)) != CLI_OK)
		goto cleanup;
	snprintf(path, sizeof(path), "/v1/jobs?state=pending&limit=%d", MAX_JOBS);
	if (!cli_query(path, sizeof(path), "environment", env) ||
	    (rc = cli_call(c, "GET", path, NULL, NULL, &jobs)) != CLI_OK)
		goto cleanup;
	reasons = json_object();
	out = json_pack("{s:O, s:[], s:o, s:[]}", "cluster", cl, "capacity", "reasons", reasons,
	    "pending_jobs");
	json_array_foreach(json_object_get(cap, "items"), i, row)
		if (strcmp(s(row, "region"), s(cl, "region")) == 0 &&
		    strcmp(s(row, "provider"), s(cl, "provider")) == 0)
			json_array_append(json_object_get(out, "capacity"), row);
	json_array_foreach(json_object_get(jobs, "items"), i, job) {
		json_t *x = NULL;
		const json_t *v;
		const char *why;

		if (!cli_path(path, sizeof(path), "/v1/jobs/", s(job, "id"), "/placement") ||
		    cli_call(c, "GET", path, NULL, NULL, &x) != CLI_OK)
			continue;
		v = verdict(x, id);
		why = v ? s(v, "reason") : "not considered (filtered before scoring: flavor, "
		    "region or provider constraints)";
		json_object_set_new(reasons, why, json_integer(json_integer_value(
		    json_object_get(reasons, why)) + 1));
		json_array_append_new(json_object_get(out, "pending_jobs"), json_pack("{s:s, s:s, s:s}",
		    "id", s(job, "id"), "name", s(job, "name"), "reason", why));
		json_decref(x);
	}
	if (c->json) {
		cli_print_json(out);
		goto cleanup;
	}
	printf("cluster %s (%s)  %s / %s / %s\n", s(cl, "name"), id, env, s(cl, "provider"),
	    s(cl, "region"));
	printf("  state %s%s, last capacity refresh %s%s%s\n", s(cl, "state"),
	    json_is_true(json_object_get(cl, "cordoned")) ? ", CORDONED (nothing new lands)" : "",
	    s(cl, "last_refresh_at"), json_is_string(json_object_get(cl, "last_error")) ?
	    ", last error: " : "", json_is_string(json_object_get(cl, "last_error")) ?
	    s(cl, "last_error") : "");
	json_array_foreach(json_object_get(out, "capacity"), i, row)
		printf("  %s %s in %s/%s: %lld free of %lld, %lld growable%s\n", s(row, "flavor"),
		    s(row, "capacity_type"), s(row, "provider"), s(row, "region"),
		    json_integer_value(json_object_get(row, "free_now")),
		    json_integer_value(json_object_get(row, "total")),
		    json_integer_value(json_object_get(row, "growable")),
		    json_integer_value(json_object_get(row, "stale_clusters")) ? " (STALE snapshot)" :
		    "");
	printf("pending jobs in %s: %zu\n", env, json_array_size(json_object_get(out,
	    "pending_jobs")));
	{
		const char *k;
		json_t *n;

		json_object_foreach(reasons, k, n)
			printf("  %3lld  %s\n", json_integer_value(n), k);
	}
	json_array_foreach(json_object_get(out, "pending_jobs"), i, job)
		printf("  %s (%s): %s\n", s(job, "name"), s(job, "id"), s(job, "reason"));
cleanup:
	json_decref(out);
	json_decref(jobs);
	json_decref(cap);
	json_decref(cl);
	return rc;
}

const struct cli_cmd cli_explain_cmds[] = {
	{ "clusters", "explain", "ID", 1, "why nothing lands on a cluster: its state, capacity "
	    "and what placement said about it for each pending job", NULL, clusters_explain },
	{ NULL, NULL, NULL, 0, NULL, NULL, NULL },
};
