/* views: what fleetctl shows for each resource — the table columns per list, and pure
 * renderers for a placement explanation and an operation's progress line. */
#ifndef FLEET_CLI_VIEWS_H
#define FLEET_CLI_VIEWS_H

#include "cli/table.h"

struct cli_view {
	const struct cli_col	*cols;
	size_t			 ncols;
};

extern const struct cli_view cli_view_jobs;
extern const struct cli_view cli_view_events;
extern const struct cli_view cli_view_clusters;
extern const struct cli_view cli_view_clouds;
extern const struct cli_view cli_view_envs;
extern const struct cli_view cli_view_queues;
extern const struct cli_view cli_view_teams;
extern const struct cli_view cli_view_capacity;
extern const struct cli_view cli_view_costs;
extern const struct cli_view cli_view_candidates;
extern const struct cli_view cli_view_blocking;
extern const struct cli_view cli_view_allocations;
extern const struct cli_view cli_view_failures;
extern const struct cli_view cli_view_operations;
extern const struct cli_view cli_view_op_jobs;	/* operation jobs still waiting or moving */

/* cli_table_render with a view's columns. */
char	*cli_view_render(const struct cli_view *v, const json_t *items,
	    const struct cli_table_opts *o);

/* GET /v1/jobs/{id}/placement made readable: the decision or the state, then the
 * candidates (score, reason) or, for a pending job, each cluster's blocking reason,
 * then allocations and victims.  A stored decision under "decision" is shown with the
 * top-level fields (state, attempt, decided_at) merged in.
 * Malloc'd; NULL only when memory runs out. */
char	*cli_explain_render(const json_t *x, const struct cli_table_opts *o);

/* A move's plan {job_id, from, to, price_difference_per_hour, would_preempt}: where
 * from and to, the price difference per hour and who would be preempted.
 * Malloc'd; NULL only when memory runs out. */
char	*cli_plan_render(const json_t *plan, const struct cli_table_opts *o);

/* One line for an operation {state, total, moved, waiting, failed}: a bar, the
 * percentage done (moved + failed over total), the counts and the state, at most
 * width columns when width > 0.  No newline.  Malloc'd; NULL when memory runs out. */
char	*cli_progress_render(const json_t *op, int width, bool color);

/* True when an operation's state means it will not change any more. */
bool	cli_operation_done(const json_t *op);

#endif
