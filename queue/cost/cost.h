/* cost: showback from what actually ran (job_runs priced by cost_runs(), migration 0019)
 * and the price overrides of an environment.  Budgets are budget.c. */
#ifndef FLEET_QUEUE_COST_H
#define FLEET_QUEUE_COST_H

#include <stdbool.h>

#include <jansson.h>

#include "core/db.h"
#include "core/err.h"

/* Whether s is a timestamp the costs query takes: YYYY-MM-DD, optionally
 * Thh:mm[:ss[.frac]] and Z or +hh:mm. */
bool	cost_time_ok(const char *s);
/* Spend per group_by ("queue", "environment", "provider", "region", "team", "cluster") over
 * runs overlapping [from, to) (NULL: the start of the current UTC month, now), within
 * environment (NULL: any) and the caller's environments envs.  *out is {group_by, from, to,
 * items: [{key, environment?, gpu_hours, dollars, runs, jobs}], total: {gpu_hours,
 * dollars}}.  400 at /query/<name> for a bad argument. */
bool	cost_report(struct db *c, const char *group_by, const char *from, const char *to,
	    const char *environment, const char *const *envs, int nenvs, json_t **out,
	    struct err *e);
/* The runs themselves, newest first (at most limit), same filters. */
bool	cost_runs_list(struct db *c, const char *from, const char *to, const char *environment,
	    const char *const *envs, int nenvs, int limit, json_t **out, struct err *e);

/* Price overrides (negotiated prices) of an environment: body {environment, provider,
 * region, machine_type, spot?, price_hour, note?}. */
bool	cost_price_create(struct db *c, json_t *body, json_t **out, struct err *e);
bool	cost_price_get(struct db *c, const char *id, bool lock, json_t **out, struct err *e);
/* Only price_hour and note change; the key members must stay (409 naming the member). */
bool	cost_price_replace(struct db *c, const char *id, json_t *body, json_t **out,
	    struct err *e);
bool	cost_price_delete(struct db *c, const char *id, struct err *e);
/* Overrides within envs, and the shipped list prices ({overrides: [...], list: [...]}). */
bool	cost_price_list(struct db *c, const char *environment, const char *const *envs,
	    int nenvs, json_t **out, struct err *e);

/* Prometheus lines: fleetd_cost_dollars_total and fleetd_cost_accelerator_seconds_total per
 * environment and queue (bounded: queues are declared objects, at most 1000 series),
 * computed from the database at scrape time, appended to buf. */
/* Prometheus counters of spend per environment and queue, as the budgets worker last
 * computed them (cost_metrics_refresh, each of its rounds): a scrape queries nothing. */
void	cost_metrics(char **buf, size_t *len, size_t *cap);
void	cost_metrics_refresh(void);

#endif
