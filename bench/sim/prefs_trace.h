/* prefs_trace: capacity preferences on a synthetic trace (issue 27) — jobs that rank
 * reservation > on_demand > spot, reservations freeing over time (a previous tenant's nodes
 * come back one by one), spot nodes reclaimed at random and returned later — replayed
 * through the scheduler's own model and cycle (queue/sched/sched_*.c, sched_prefs.c) in
 * simulated time, under three policies: wait for the preferred type, start anywhere and
 * never migrate, and the scheduler's migrations.  No database, no clock. */
#ifndef FLEET_BENCH_PREFS_TRACE_H
#define FLEET_BENCH_PREFS_TRACE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/err.h"

enum prefs_policy {
	PREFS_WAIT,		/* first_choice_only: wait for a reservation */
	PREFS_ANYWHERE,		/* best type free now, never migrate */
	PREFS_MIGRATE,		/* best type free now, migrate when a better one frees */
	PREFS_NPOLICIES
};

const char	*prefs_policy_name(enum prefs_policy p);

struct prefs_trace_config {
	int		 n_jobs;
	int		 clusters;
	int		 res_nodes, od_nodes, spot_nodes;	/* per cluster, 8 GPUs each */
	int64_t		 cycle_s;		/* simulated seconds between cycles */
	double		 load;			/* offered GPU-hours / reservation GPU-hours */
	int64_t		 median_run_s;
	int64_t		 ckpt_every_s;		/* a job's periodic checkpoint */
	int64_t		 restart_s;		/* a migrated job's restart from its checkpoint */
	int64_t		 res_free_over_s;	/* the previous tenant's reservation nodes free
						 * one by one over this span */
	double		 res_held_frac;		/* part of the reservation held at the start */
	double		 reclaim_per_node_h;	/* spot reclaims per spot node-hour */
	int64_t		 spot_back_s;		/* a reclaimed spot node returns after */
	int64_t		 min_run_s, cooldown_s;
	int		 max_migrations;
	uint64_t	 seed;
};

void	prefs_trace_default(struct prefs_trace_config *c);

struct prefs_trace_result {
	enum prefs_policy policy;
	size_t		 jobs, finished;
	double		 gpu_h;			/* GPU-hours run (occupied) */
	double		 preferred_share;	/* % of gpu_h on the first choice */
	double		 wait_mean_s;		/* arrival to first start */
	double		 wait_p95_s;
	double		 migrations_per_job;
	size_t		 migrations;
	size_t		 reclaims;		/* jobs hit by a spot reclaim */
	double		 lost_reclaim_gpu_h;	/* work since the last checkpoint, reclaimed */
	double		 lost_migrate_gpu_h;	/* restart time of migrations */
	size_t		 max_migrations_job;
	int64_t		 sim_s;
};

bool	prefs_trace_run(const struct prefs_trace_config *cfg, enum prefs_policy p,
	    struct prefs_trace_result *out, struct err *e);

#endif
