/* budget: monthly budgets of an environment, a queue or a team (spec.labels.team), what
 * they have spent (cost_runs() over the current UTC month), the hard ones' refusal at
 * submission and the threshold events (soft_percent and 100 %) of all. */
#ifndef FLEET_QUEUE_BUDGET_H
#define FLEET_QUEUE_BUDGET_H

#include <stdbool.h>

#include <jansson.h>

#include "core/db.h"
#include "core/err.h"

/* body {name, environment, scope: environment|queue|team, queue? (scope queue), team?
 * (scope team), amount_usd, period?: "month", soft_percent? [80, 100] (80), hard? (false)};
 * 422 with the member's pointer when a value is out of range, 409 budget.exists. */
bool	budget_create(struct db *c, json_t *body, json_t **out, struct err *e);
/* The row with spent_usd and percent of the current month. */
bool	budget_get(struct db *c, const char *id, bool lock, json_t **out, struct err *e);
bool	budget_list(struct db *c, int limit, const char *after, const char *environment,
	    const char *const *envs, int nenvs, json_t **out, struct err *e);
bool	budget_delete(struct db *c, const char *id, struct err *e);

/* Admission: when a hard budget covering a new job of queue (and team, may be NULL) in env
 * has spent its amount this month, 422 budget.exhausted naming it (pointer /queue,
 * /labels/team or /environment by its scope). */
bool	budget_admit(struct db *c, const char *env, const char *queue, const char *team,
	    struct err *e);
/* After job_id was submitted: each budget covering it whose spend crossed soft_percent or
 * 100 % and that did not say so yet this month appends a 'budget_threshold' event to the
 * job (webhook type budget.threshold), once per budget, month and level. */
bool	budget_announce(struct db *c, const char *job_id, const char *env, const char *queue,
	    const char *team, struct err *e);

/* The budgets worker's round: each budget whose spend crossed soft_percent or 100 % this
 * month and that did not say so yet appends a 'budget_threshold' event to the job of its
 * latest run (as budget_announce does at submission); *n is the number of events. */
bool	budget_sweep(struct db *c, long *n, struct err *e);
/* The "budgets" worker: budget_sweep every FLEETD_BUDGET_INTERVAL_MS. */
bool	budget_start(struct err *e);
void	budget_stop(void);

#endif
