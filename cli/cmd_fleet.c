/* cmd_fleet: fleetctl's fleet commands — clusters (cordon, drain), regions drain,
 * operations, capacity, queues, clouds, environments and costs. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"

#define PATH_MAX_LEN	2048

/* GET prefix{pos[0]} and print it as an object. */
static int
get_one(struct cli_ctx *c, const struct cli_args *a, const char *prefix)
{
	char path[PATH_MAX_LEN];
	json_t *obj = NULL;
	int rc;

	if ((rc = cli_need_token(c)) != CLI_OK)
		return rc;
	if (!cli_path(path, sizeof(path), prefix, a->pos[0], NULL))
		return CLI_USAGE;
	if ((rc = cli_call(c, "GET", path, NULL, NULL, &obj)) == CLI_OK)
		rc = cli_print_object(c, obj);
	json_decref(obj);
	return rc;
}

static int
clusters_ls(struct cli_ctx *c, const struct cli_args *a)
{
	char path[PATH_MAX_LEN] = "/v1/clusters";

	if (!cli_query(path, sizeof(path), "environment", cli_arg(a, "env")) ||
	    !cli_query(path, sizeof(path), "region", cli_arg(a, "region")) ||
	    !cli_query(path, sizeof(path), "provider", cli_arg(a, "provider")))
		return CLI_USAGE;
	return cli_run_list(c, a, path, &cli_view_clusters);
}

static int
clusters_get(struct cli_ctx *c, const struct cli_args *a)
{
	return get_one(c, a, "/v1/clusters/");
}

/* POST /v1/clusters/{id}/{verb}; the answer is the cluster. */
static int
cluster_action(struct cli_ctx *c, const struct cli_args *a, const char *verb,
	       const char *done)
{
	char path[PATH_MAX_LEN], suffix[32];
	json_t *cl = NULL;
	int rc;

	if ((rc = cli_need_token(c)) != CLI_OK)
		return rc;
	snprintf(suffix, sizeof(suffix), "/%s", verb);
	if (!cli_path(path, sizeof(path), "/v1/clusters/", a->pos[0], suffix))
		return CLI_USAGE;
	rc = cli_call(c, "POST", path, NULL, NULL, &cl);
	if (rc == CLI_OK && c->json) {
		cli_print_json(cl);
	} else if (rc == CLI_OK) {
		const char *name = json_string_value(json_object_get(cl, "name"));

		printf("cluster %s %s\n", name != NULL ? name : a->pos[0], done);
	}
	json_decref(cl);
	return rc;
}

static int
clusters_cordon(struct cli_ctx *c, const struct cli_args *a)
{
	return cluster_action(c, a, "cordon", "cordoned: no new placements");
}

static int
clusters_uncordon(struct cli_ctx *c, const struct cli_args *a)
{
	return cluster_action(c, a, "uncordon", "uncordoned: open for placements");
}

/* POST path; the answer is an operation (202), printed or followed with --wait. */
static int
start_drain(struct cli_ctx *c, const struct cli_args *a, const char *path)
{
	json_t *op = NULL, *body = NULL;
	int rc;

	if ((rc = cli_need_token(c)) != CLI_OK)
		return rc;
	if (cli_switch(a, "source-unreachable"))	/* evacuate jobs of unreachable clusters */
		body = json_pack("{s:s}", "source", "unreachable");
	if ((rc = cli_call(c, "POST", path, body, NULL, &op)) == CLI_OK)
		rc = cli_report_operation(c, op, cli_switch(a, "wait"));
	json_decref(op);
	json_decref(body);
	return rc;
}

static int
clusters_drain(struct cli_ctx *c, const struct cli_args *a)
{
	char path[PATH_MAX_LEN];

	if (!cli_path(path, sizeof(path), "/v1/clusters/", a->pos[0], "/drain"))
		return CLI_USAGE;
	return start_drain(c, a, path);
}

static int
regions_drain(struct cli_ctx *c, const struct cli_args *a)
{
	char path[PATH_MAX_LEN], envp[PATH_MAX_LEN];

	if (!cli_path(envp, sizeof(envp), "/v1/regions/", a->pos[0], "/") ||
	    !cli_path(path, sizeof(path), envp, a->pos[1], "/drain"))
		return CLI_USAGE;
	return start_drain(c, a, path);
}

static int
operations_ls(struct cli_ctx *c, const struct cli_args *a)
{
	char path[PATH_MAX_LEN] = "/v1/operations";

	if (!cli_query(path, sizeof(path), "environment", cli_arg(a, "env")) ||
	    !cli_query(path, sizeof(path), "state", cli_arg(a, "state")))
		return CLI_USAGE;
	return cli_run_list(c, a, path, &cli_view_operations);
}

static int
operations_get(struct cli_ctx *c, const struct cli_args *a)
{
	char path[PATH_MAX_LEN];
	json_t *op = NULL;
	int rc;

	if ((rc = cli_need_token(c)) != CLI_OK)
		return rc;
	if (!cli_path(path, sizeof(path), "/v1/operations/", a->pos[0], NULL))
		return CLI_USAGE;
	if (!cli_switch(a, "wait")) {	/* the object, then why each job not moved waits */
		if ((rc = cli_call(c, "GET", path, NULL, NULL, &op)) == CLI_OK &&
		    (rc = cli_print_object(c, op)) == CLI_OK && !c->json)
			cli_print_waiting(c, op);
		json_decref(op);
		return rc;
	}
	if ((rc = cli_call(c, "GET", path, NULL, NULL, &op)) == CLI_OK)
		rc = cli_wait_operation(c, op);
	json_decref(op);
	return rc;
}

static int
operations_cancel(struct cli_ctx *c, const struct cli_args *a)
{
	char path[PATH_MAX_LEN];
	json_t *op = NULL;
	int rc;

	if ((rc = cli_need_token(c)) != CLI_OK)
		return rc;
	if (!cli_path(path, sizeof(path), "/v1/operations/", a->pos[0], "/cancel"))
		return CLI_USAGE;
	if ((rc = cli_call(c, "POST", path, NULL, NULL, &op)) == CLI_OK)
		rc = cli_print_object(c, op);
	json_decref(op);
	return rc;
}

static int
capacity(struct cli_ctx *c, const struct cli_args *a)
{
	char path[PATH_MAX_LEN] = "/v1/capacity";

	if (!cli_query(path, sizeof(path), "environment", cli_arg(a, "env")) ||
	    !cli_query(path, sizeof(path), "flavor", cli_arg(a, "flavor")))
		return CLI_USAGE;
	return cli_run_list(c, a, path, &cli_view_capacity);
}

/* GET /v1/costs: spend per group, most first, and the total. */
static int
costs(struct cli_ctx *c, const struct cli_args *a)
{
	char path[PATH_MAX_LEN] = "/v1/costs";
	json_t *rep = NULL, *tot;
	int rc;

	if ((rc = cli_need_token(c)) != CLI_OK)
		return rc;
	if (!cli_query(path, sizeof(path), "group_by", cli_arg(a, "group-by")) ||
	    !cli_query(path, sizeof(path), "from", cli_arg(a, "from")) ||
	    !cli_query(path, sizeof(path), "to", cli_arg(a, "to")) ||
	    !cli_query(path, sizeof(path), "environment", cli_arg(a, "env")))
		return CLI_USAGE;
	if ((rc = cli_call(c, "GET", path, NULL, NULL, &rep)) != CLI_OK)
		return rc;
	rc = cli_print_table(c, &cli_view_costs, rep);
	tot = json_object_get(rep, "total");
	if (rc == CLI_OK && !c->json)
		printf("total %.2f GPU-hours, %.2f USD (%s to %s)\n",
		    json_number_value(json_object_get(tot, "gpu_hours")),
		    json_number_value(json_object_get(tot, "dollars")),
		    json_string_value(json_object_get(rep, "from")),
		    json_string_value(json_object_get(rep, "to")));
	json_decref(rep);
	return rc;
}

static int
queues_ls(struct cli_ctx *c, const struct cli_args *a)
{
	return cli_run_list(c, a, "/v1/queues", &cli_view_queues);
}

static int
teams_ls(struct cli_ctx *c, const struct cli_args *a)
{
	return cli_run_list(c, a, "/v1/teams", &cli_view_teams);
}

/* The scheduler's view of a queue: usage per flavor, borrowed, lent, fair share, pending. */
static int
queues_status(struct cli_ctx *c, const struct cli_args *a)
{
	char path[PATH_MAX_LEN];
	json_t *st = NULL;
	int rc;

	if ((rc = cli_need_token(c)) != CLI_OK)
		return rc;
	if (!cli_path(path, sizeof(path), "/v1/queues/", a->pos[0], "/status"))
		return CLI_USAGE;
	if ((rc = cli_call(c, "GET", path, NULL, NULL, &st)) == CLI_OK)
		rc = cli_print_object(c, st);
	json_decref(st);
	return rc;
}

static int
clouds_ls(struct cli_ctx *c, const struct cli_args *a)
{
	return cli_run_list(c, a, "/v1/clouds", &cli_view_clouds);
}

static int
clouds_get(struct cli_ctx *c, const struct cli_args *a)
{
	return get_one(c, a, "/v1/clouds/");
}

static int
envs_ls(struct cli_ctx *c, const struct cli_args *a)
{
	return cli_run_list(c, a, "/v1/environments", &cli_view_envs);
}

static int
envs_get(struct cli_ctx *c, const struct cli_args *a)
{
	return get_one(c, a, "/v1/environments/");
}

#define LIST_FLAGS \
	{ "limit", 0, "N", "show at most N (default 100)" }, \
	{ "all", 0, NULL, "follow every page" }
#define END_FLAGS { NULL, 0, NULL, NULL }

static const struct cli_flag list_flags[] = { LIST_FLAGS, END_FLAGS };

static const struct cli_flag clusters_flags[] = {
	{ "env", 0, "ENV", "only this environment" },
	{ "region", 0, "REGION", "only this region" },
	{ "provider", 0, "PROVIDER", "gke, aks or hyperpod" },
	LIST_FLAGS,
	END_FLAGS,
};

static const struct cli_flag capacity_flags[] = {
	{ "env", 0, "ENV", "only this environment" },
	{ "flavor", 0, "FLAVOR", "only this accelerator flavor" },
	LIST_FLAGS,
	END_FLAGS,
};

static const struct cli_flag costs_flags[] = {
	{ "group-by", 0, "GROUP", "queue (default), environment, provider, region, team or "
	    "cluster" },
	{ "from", 0, "TIME", "start, RFC 3339 or a date (default: the month's start, UTC)" },
	{ "to", 0, "TIME", "end, exclusive (default: now)" },
	{ "env", 0, "ENV", "only this environment" },
	END_FLAGS,
};

static const struct cli_flag operations_flags[] = {
	{ "env", 0, "ENV", "only this environment" },
	{ "state", 0, "STATE", "running, succeeded, failed or cancelled" },
	LIST_FLAGS,
	END_FLAGS,
};

static const struct cli_flag wait_flags[] = {
	{ "wait", 0, NULL, "follow the operation to its end with a progress bar" },
	END_FLAGS,
};

static const struct cli_flag drain_flags[] = {
	{ "wait", 0, NULL, "follow the operation to its end with a progress bar" },
	{ "source-unreachable", 0, NULL, "evacuate jobs whose cluster fails its health checks "
	    "(their attempt there is abandoned; the orphan sweep deletes it when it returns)" },
	END_FLAGS,
};

const struct cli_cmd cli_fleet_cmds[] = {
	{ "clusters", "ls", NULL, 0, "list member clusters", clusters_flags, clusters_ls },
	{ "clusters", "get", "ID", 1, "show one cluster", NULL, clusters_get },
	{ "clusters", "cordon", "ID", 1, "stop new placements on a cluster", NULL,
	    clusters_cordon },
	{ "clusters", "uncordon", "ID", 1, "allow placements on a cluster again", NULL,
	    clusters_uncordon },
	{ "clusters", "drain", "ID", 1, "cordon a cluster and move every job away",
	    drain_flags, clusters_drain },
	{ "regions", "drain", "ENV REGION", 2, "drain every cluster of a region",
	    drain_flags, regions_drain },
	{ "operations", "ls", NULL, 0, "list operations, newest first", operations_flags,
	    operations_ls },
	{ "operations", "get", "ID", 1, "show an operation (--wait: follow it)", wait_flags,
	    operations_get },
	{ "operations", "cancel", "ID", 1, "cancel an operation (jobs not moved yet stay)", NULL,
	    operations_cancel },
	{ NULL, "capacity", NULL, 0, "free and growable capacity per region and flavor",
	    capacity_flags, capacity },
	{ NULL, "costs", NULL, 0, "spend from what ran: GPU-hours and dollars per group",
	    costs_flags, costs },
	{ "queues", "ls", NULL, 0, "list queues", list_flags, queues_ls },
	{ "queues", "status", "ID", 1, "usage, borrowed, lent, fair share and pending by reason",
	    NULL, queues_status },
	{ "teams", "ls", NULL, 0, "list teams (a caller in a team sees its own)", list_flags,
	    teams_ls },
	{ "clouds", "ls", NULL, 0, "list clouds", list_flags, clouds_ls },
	{ "clouds", "get", "ID", 1, "show one cloud", NULL, clouds_get },
	{ "envs", "ls", NULL, 0, "list environments", list_flags, envs_ls },
	{ "envs", "get", "NAME", 1, "show one environment", NULL, envs_get },
	{ NULL, NULL, NULL, 0, NULL, NULL, NULL },
};
