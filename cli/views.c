/* views: fleetctl's column sets per resource and the pure renderers for placement
 * explanations and operation progress (jansson and libc only, like table.c). */
#include <stdlib.h>
#include <string.h>

#include "cli/views.h"

#define NCOLS(a)	(sizeof(a) / sizeof((a)[0]))
#define VIEW(name, cols) const struct cli_view name = { cols, NCOLS(cols) }

static const struct cli_col jobs_cols[] = {
	{ "ID", "id", CLI_CELL_TEXT, CLI_COL_KEEP },
	{ "NAME", "name", CLI_CELL_TEXT, 0 },
	{ "ENV", "environment", CLI_CELL_TEXT, CLI_COL_OPTIONAL },
	{ "QUEUE", "queue", CLI_CELL_TEXT, 0 },
	{ "KIND", "kind", CLI_CELL_TEXT, CLI_COL_OPTIONAL },
	{ "STATE", "state", CLI_CELL_STATE, 0 },
	{ "PRIORITY", "priority_class", CLI_CELL_TEXT, CLI_COL_OPTIONAL },
	{ "CLUSTER", "cluster", CLI_CELL_TEXT, 0 },
	{ "REGION", "region", CLI_CELL_TEXT, CLI_COL_OPTIONAL },
	{ "ATTEMPT", "attempt", CLI_CELL_TEXT, CLI_COL_RIGHT | CLI_COL_OPTIONAL },
	{ "AGE", "created_at", CLI_CELL_AGE, CLI_COL_KEEP | CLI_COL_RIGHT },
};
VIEW(cli_view_jobs, jobs_cols);

static const struct cli_col events_cols[] = {
	{ "AT", "at", CLI_CELL_TIME, CLI_COL_KEEP },
	{ "TYPE", "type", CLI_CELL_TEXT, 0 },
	{ "FROM", "from_state", CLI_CELL_STATE, 0 },
	{ "TO", "to_state", CLI_CELL_STATE, 0 },
	{ "MESSAGE", "message", CLI_CELL_TEXT, 0 },
};
VIEW(cli_view_events, events_cols);

static const struct cli_col clusters_cols[] = {
	{ "ID", "id", CLI_CELL_TEXT, CLI_COL_KEEP },
	{ "NAME", "name", CLI_CELL_TEXT, 0 },
	{ "ENV", "environment", CLI_CELL_TEXT, 0 },
	{ "PROVIDER", "provider", CLI_CELL_TEXT, 0 },
	{ "REGION", "region", CLI_CELL_TEXT, 0 },
	{ "STATE", "state", CLI_CELL_STATE, 0 },
	{ "CORDONED", "cordoned", CLI_CELL_TEXT, 0 },
	{ "API SERVER", "api_server", CLI_CELL_TEXT, CLI_COL_OPTIONAL },
};
VIEW(cli_view_clusters, clusters_cols);

static const struct cli_col clouds_cols[] = {
	{ "ID", "id", CLI_CELL_TEXT, CLI_COL_KEEP },
	{ "NAME", "name", CLI_CELL_TEXT, 0 },
	{ "ENV", "environment", CLI_CELL_TEXT, 0 },
	{ "PROVIDER", "provider", CLI_CELL_TEXT, 0 },
	{ "REGION", "region", CLI_CELL_TEXT, 0 },
	{ "STATE", "state", CLI_CELL_STATE, 0 },
	{ "EXTERNAL ID", "external_id", CLI_CELL_TEXT, CLI_COL_OPTIONAL },
};
VIEW(cli_view_clouds, clouds_cols);

static const struct cli_col envs_cols[] = {
	{ "NAME", "name", CLI_CELL_TEXT, CLI_COL_KEEP },
	{ "DESCRIPTION", "description", CLI_CELL_TEXT, 0 },
	{ "VERSION", "version", CLI_CELL_TEXT, CLI_COL_RIGHT },
	{ "CREATED", "created_at", CLI_CELL_TIME, CLI_COL_KEEP },
};
VIEW(cli_view_envs, envs_cols);

static const struct cli_col queues_cols[] = {
	{ "NAME", "name", CLI_CELL_TEXT, CLI_COL_KEEP },
	{ "ENV", "environment", CLI_CELL_TEXT, 0 },
	{ "COHORT", "cohort", CLI_CELL_TEXT, 0 },
	{ "WEIGHT", "weight", CLI_CELL_NUM, CLI_COL_RIGHT },
	{ "NOMINAL QUOTA", "nominal_quota", CLI_CELL_KV, 0 },
	{ "TEAM", "team", CLI_CELL_TEXT, 0 },
	{ "ID", "id", CLI_CELL_TEXT, CLI_COL_KEEP | CLI_COL_OPTIONAL },
};
VIEW(cli_view_queues, queues_cols);

static const struct cli_col teams_cols[] = {
	{ "NAME", "name", CLI_CELL_TEXT, CLI_COL_KEEP },
	{ "ENVIRONMENTS", "environments", CLI_CELL_TEXT, 0 },
	{ "DESCRIPTION", "description", CLI_CELL_TEXT, 0 },
	{ "CREATED", "created_at", CLI_CELL_TIME, CLI_COL_KEEP },
};
VIEW(cli_view_teams, teams_cols);

static const struct cli_col capacity_cols[] = {
	{ "ENV", "environment", CLI_CELL_TEXT, 0 },
	{ "REGION", "region", CLI_CELL_TEXT, 0 },
	{ "PROVIDER", "provider", CLI_CELL_TEXT, 0 },
	{ "FLAVOR", "flavor", CLI_CELL_TEXT, 0 },
	{ "TYPE", "capacity_type", CLI_CELL_TEXT, 0 },
	{ "FREE", "free_now", CLI_CELL_NUM, CLI_COL_RIGHT },
	{ "TOTAL", "total", CLI_CELL_NUM, CLI_COL_RIGHT | CLI_COL_OPTIONAL },
	{ "GROWABLE", "growable", CLI_CELL_NUM, CLI_COL_RIGHT },
	{ "QUOTA LEFT", "quota_left", CLI_CELL_NUM, CLI_COL_RIGHT },
	{ "OBSERVED", "oldest_observed_at", CLI_CELL_AGE, CLI_COL_KEEP | CLI_COL_RIGHT },
	{ "STALE", "stale_clusters", CLI_CELL_NUM, CLI_COL_RIGHT | CLI_COL_OPTIONAL },
};
VIEW(cli_view_capacity, capacity_cols);

static const struct cli_col costs_cols[] = {
	{ "KEY", "key", CLI_CELL_TEXT, CLI_COL_KEEP },
	{ "ENV", "environment", CLI_CELL_TEXT, CLI_COL_OPTIONAL },
	{ "GPU-HOURS", "gpu_hours", CLI_CELL_NUM, CLI_COL_RIGHT },
	{ "USD", "dollars", CLI_CELL_NUM, CLI_COL_RIGHT | CLI_COL_KEEP },
	{ "RUNS", "runs", CLI_CELL_NUM, CLI_COL_RIGHT | CLI_COL_OPTIONAL },
	{ "JOBS", "jobs", CLI_CELL_NUM, CLI_COL_RIGHT },
};
VIEW(cli_view_costs, costs_cols);

static const struct cli_col candidates_cols[] = {
	{ "CLUSTER", "cluster", CLI_CELL_TEXT, CLI_COL_KEEP },
	{ "REGION", "region", CLI_CELL_TEXT, 0 },
	{ "PROVIDER", "provider", CLI_CELL_TEXT, 0 },
	{ "SCORE", "score", CLI_CELL_NUM, CLI_COL_RIGHT },
	{ "REASON", "reason", CLI_CELL_TEXT, 0 },
};
VIEW(cli_view_candidates, candidates_cols);

static const struct cli_col blocking_cols[] = {
	{ "CLUSTER", "cluster", CLI_CELL_TEXT, CLI_COL_KEEP },
	{ "REGION", "region", CLI_CELL_TEXT, 0 },
	{ "PROVIDER", "provider", CLI_CELL_TEXT, 0 },
	{ "BLOCKED BY", "reason", CLI_CELL_TEXT, 0 },
};
VIEW(cli_view_blocking, blocking_cols);

static const struct cli_col allocations_cols[] = {
	{ "GROUP", "group", CLI_CELL_TEXT, CLI_COL_RIGHT },
	{ "PODS", "pods", CLI_CELL_TEXT, CLI_COL_RIGHT },
	{ "FLAVOR", "flavor", CLI_CELL_TEXT, 0 },
	{ "NODE", "node", CLI_CELL_TEXT, 0 },
	{ "GROWN", "grown", CLI_CELL_TEXT, 0 },
	{ "ACCEL", "accelerators", CLI_CELL_TEXT, CLI_COL_RIGHT },
	{ "CPU(m)", "cpu_millis", CLI_CELL_TEXT, CLI_COL_RIGHT },
	{ "MEM(MiB)", "memory_mib", CLI_CELL_TEXT, CLI_COL_RIGHT },
};
VIEW(cli_view_allocations, allocations_cols);

static const struct cli_col failures_cols[] = {
	{ "JOB", "job_id", CLI_CELL_TEXT, CLI_COL_KEEP },
	{ "REASON", "reason", CLI_CELL_TEXT, 0 },
};
VIEW(cli_view_failures, failures_cols);

/* Operations (drains), newest first: what each drains, by name, and how far it got. */
static const struct cli_col operations_cols[] = {
	{ "ID", "id", CLI_CELL_TEXT, CLI_COL_KEEP },
	{ "ENV", "environment", CLI_CELL_TEXT, 0 },
	{ "KIND", "kind", CLI_CELL_TEXT, 0 },
	{ "CLUSTER", "cluster_name", CLI_CELL_TEXT, 0 },
	{ "TARGET", "target", CLI_CELL_KV, CLI_COL_OPTIONAL },
	{ "STATE", "state", CLI_CELL_STATE, CLI_COL_KEEP },
	{ "MOVED", "moved", CLI_CELL_NUM, CLI_COL_RIGHT },
	{ "WAITING", "waiting", CLI_CELL_NUM, CLI_COL_RIGHT },
	{ "FAILED", "failed", CLI_CELL_NUM, CLI_COL_RIGHT },
	{ "TOTAL", "total", CLI_CELL_NUM, CLI_COL_RIGHT },
	{ "AGE", "created_at", CLI_CELL_AGE, CLI_COL_RIGHT },
};
VIEW(cli_view_operations, operations_cols);

/* An operation's jobs that are not moved yet, and why each waits. */
static const struct cli_col op_jobs_cols[] = {
	{ "JOB", "name", CLI_CELL_TEXT, CLI_COL_KEEP },
	{ "STATE", "state", CLI_CELL_STATE, CLI_COL_KEEP },
	{ "PHASE", "phase", CLI_CELL_TEXT, 0 },
	{ "WAITING FOR", "waiting_for", CLI_CELL_TEXT, CLI_COL_KEEP },
	{ "REASON", "reason", CLI_CELL_TEXT, 0 },
};
VIEW(cli_view_op_jobs, op_jobs_cols);

char *
cli_view_render(const struct cli_view *v, const json_t *items, const struct cli_table_opts *o)
{
	return cli_table_render(v->cols, v->ncols, items, o);
}

/* Scalar lines of an explanation, in this order, when present. */
static const struct {
	const char	*key;
	const char	*label;
	enum cli_cell_kind kind;
} explain_fields[] = {
	{ "job", "Job", CLI_CELL_TEXT },
	{ "job_id", "Job", CLI_CELL_TEXT },
	{ "queue", "Queue", CLI_CELL_TEXT },
	{ "outcome", "Outcome", CLI_CELL_STATE },
	{ "state", "State", CLI_CELL_STATE },
	{ "cluster", "Cluster", CLI_CELL_TEXT },
	{ "score", "Score", CLI_CELL_NUM },
	{ "position", "Position", CLI_CELL_TEXT },
	{ "reason", "Reason", CLI_CELL_TEXT },
	{ "quota", "Quota", CLI_CELL_TEXT },
	{ "hold_cluster", "Holding", CLI_CELL_TEXT },
	{ "share", "Share", CLI_CELL_NUM },
	{ "borrowing", "Borrowing", CLI_CELL_TEXT },
	{ "attempt", "Attempt", CLI_CELL_TEXT },
	{ "decided_at", "Decided", CLI_CELL_TIME },
	{ "decided_by", "Decided by", CLI_CELL_TEXT },
};

static void
add_section(struct cli_buf *b, const char *title, const struct cli_view *v,
	    const json_t *items, const struct cli_table_opts *o)
{
	char *t;

	if (!json_is_array(items) || json_array_size(items) == 0)
		return;
	cli_buf_printf(b, "\n%s:\n", title);
	if ((t = cli_view_render(v, items, o)) == NULL) {
		b->oom = true;
		return;
	}
	cli_buf_add(b, t);
	free(t);
}

static void
add_line(struct cli_buf *b, const char *label, const json_t *v, enum cli_cell_kind kind,
	 const struct cli_table_opts *o)
{
	char *t = cli_cell_format(v, kind, o->now);
	const char *c = kind == CLI_CELL_STATE && o->color && t != NULL ?
	    cli_state_color(t) : NULL;

	if (t == NULL) {
		b->oom = true;
		return;
	}
	cli_buf_printf(b, "%-12s%s%s%s\n", label, c ? c : "", t, c ? CLI_C_RESET : "");
	free(t);
}

char *
cli_explain_render(const json_t *x, const struct cli_table_opts *o)
{
	struct cli_buf b = { 0 };
	const json_t *rej, *vic, *topo;
	json_t *m = NULL;
	char label[32];

	/* A stored decision nests under "decision"; its own fields come first. */
	if (json_is_object(json_object_get(x, "decision"))) {
		m = json_deep_copy(json_object_get(x, "decision"));
		if (m == NULL || json_object_update_missing(m, (json_t *)x) != 0) {
			json_decref(m);
			return NULL;
		}
		json_object_del(m, "decision");
		x = m;
	}
	for (size_t i = 0; i < sizeof(explain_fields) / sizeof(explain_fields[0]); i++) {
		const char *k = explain_fields[i].key;
		const json_t *v = json_object_get(x, k);

		if (v == NULL || (json_is_null(v) && strcmp(k, "cluster") != 0) ||
		    (strcmp(k, "job_id") == 0 && json_object_get(x, "job") != NULL))
			continue;
		snprintf(label, sizeof(label), "%s:", explain_fields[i].label);
		add_line(&b, label, v, explain_fields[i].kind, o);
	}
	rej = json_object_get(x, "rejections");
	if (json_is_object(rej) && json_object_size(rej) > 0)
		add_line(&b, "Rejected:", rej, CLI_CELL_KV, o);
	vic = json_object_get(x, "victims");
	if (json_is_array(vic) && json_array_size(vic) > 0)
		add_line(&b, "Preempts:", vic, CLI_CELL_TEXT, o);
	/* racks (NVLink domains) the gang uses, against a scattered placement (issue 26) */
	topo = json_object_get(x, "topology");
	if (json_is_integer(json_object_get(topo, "racks_used"))) {
		const char *unit = json_string_value(json_object_get(topo, "scale_unit"));

		cli_buf_printf(&b, "%-12s%lld", "Racks:", (long long)json_integer_value(
		    json_object_get(topo, "racks_used")));
		if (unit != NULL) {
			cli_buf_add(&b, " of scale unit ");
			cli_buf_add_clean(&b, unit);
		}
		if (json_is_integer(json_object_get(topo, "racks_if_scattered")))
			cli_buf_printf(&b, " (scattered: %lld)", (long long)json_integer_value(
			    json_object_get(topo, "racks_if_scattered")));
		cli_buf_add(&b, "\n");
	}
	add_section(&b, "Candidates", &cli_view_candidates, json_object_get(x, "candidates"), o);
	add_section(&b, "Blocking per cluster", &cli_view_blocking,
	    json_object_get(x, "clusters"), o);
	add_section(&b, "Allocations", &cli_view_allocations,
	    json_object_get(x, "allocations"), o);
	json_decref(m);
	return cli_buf_take(&b);
}

/* "name (region, provider)" for one end of a move. */
static void
add_place(struct cli_buf *b, const char *label, const json_t *p)
{
	const char *name = json_string_value(json_object_get(p, "cluster_name"));
	const char *id = json_string_value(json_object_get(p, "cluster"));
	const char *flavor = json_string_value(json_object_get(p, "flavor"));

	cli_buf_printf(b, "%-12s", label);
	if (!json_is_object(p)) {
		cli_buf_add(b, "-\n");
		return;
	}
	cli_buf_add_clean(b, name != NULL ? name : id != NULL ? id : "-");
	cli_buf_add(b, " (");
	cli_buf_add_clean(b, json_string_value(json_object_get(p, "region")) ?
	    json_string_value(json_object_get(p, "region")) : "-");
	if (json_string_value(json_object_get(p, "provider")) != NULL) {
		cli_buf_add(b, ", ");
		cli_buf_add_clean(b, json_string_value(json_object_get(p, "provider")));
	}
	cli_buf_add(b, ")");
	if (flavor != NULL) {
		cli_buf_add(b, ", ");
		cli_buf_add_clean(b, flavor);
		if (json_is_true(json_object_get(p, "spot")))
			cli_buf_add(b, " spot");
	}
	if (json_is_number(json_object_get(p, "price_hour")))
		cli_buf_printf(b, ", %.2f/h", json_number_value(json_object_get(p, "price_hour")));
	cli_buf_add(b, "\n");
}

char *
cli_plan_render(const json_t *plan, const struct cli_table_opts *o)
{
	struct cli_buf b = { 0 };
	const json_t *price = json_object_get(plan, "price_difference_per_hour");
	const json_t *pre = json_object_get(plan, "would_preempt");

	add_line(&b, "Job:", json_object_get(plan, "job_id"), CLI_CELL_TEXT, o);
	add_place(&b, "From:", json_object_get(plan, "from"));
	add_place(&b, "To:", json_object_get(plan, "to"));
	if (json_is_number(price))
		cli_buf_printf(&b, "%-12s%+.2f/h\n", "Price:", json_number_value(price));
	if (json_is_array(pre) && json_array_size(pre) > 0)
		add_line(&b, "Preempts:", pre, CLI_CELL_TEXT, o);
	else
		cli_buf_printf(&b, "%-12snone\n", "Preempts:");
	return cli_buf_take(&b);
}

bool
cli_operation_done(const json_t *op)
{
	static const char *const active[] = { "pending", "queued", "running", "in_progress",
	    "cancelling", NULL };
	const char *s = json_string_value(json_object_get(op, "state"));

	if (s == NULL)
		return true;
	for (int i = 0; active[i] != NULL; i++)
		if (strcmp(s, active[i]) == 0)
			return false;
	return true;
}

static long long
count(const json_t *op, const char *key)
{
	const json_t *v = json_object_get(op, key);

	return json_is_integer(v) && json_integer_value(v) > 0 ? json_integer_value(v) : 0;
}

static void
progress_tail(struct cli_buf *b, const json_t *op, int pct, bool color)
{
	long long failed = count(op, "failed");
	const char *state = json_string_value(json_object_get(op, "state"));
	bool red = color && failed > 0;

	cli_buf_printf(b, " %3d%%  %lld/%lld moved, %lld waiting, %s%lld failed%s  (%s)", pct,
	    count(op, "moved"), count(op, "total"), count(op, "waiting"), red ? CLI_C_RED : "",
	    failed, red ? CLI_C_RESET : "", state != NULL ? state : "unknown");
}

char *
cli_progress_render(const json_t *op, int width, bool color)
{
	struct cli_buf b = { 0 }, plain = { 0 };
	long long total = count(op, "total"), done = count(op, "moved") + count(op, "failed");
	int pct, bar = 30, fill, i;
	char *t;

	done = done > total ? total : done;
	pct = total > 0 ? (int)(done * 100 / total) : 100;
	progress_tail(&plain, op, pct, false);
	if ((t = cli_buf_take(&plain)) == NULL)
		return NULL;
	if (width > 0 && width - (int)cli_text_width(t) - 2 < bar)
		bar = width - (int)cli_text_width(t) - 2;
	free(t);
	if (bar >= 5) {
		fill = bar * pct / 100;
		cli_buf_add(&b, "[");
		cli_buf_add(&b, color ? CLI_C_GREEN : "");
		for (i = 0; i < fill; i++)
			cli_buf_add(&b, "#");
		cli_buf_add(&b, color ? CLI_C_RESET : "");
		for (; i < bar; i++)
			cli_buf_add(&b, ".");
		cli_buf_add(&b, "]");
	}
	progress_tail(&b, op, pct, color);
	return cli_buf_take(&b);
}
