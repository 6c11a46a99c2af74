/* sched_trace: replays a synthetic multi-team trace through the scheduler's own model
 * and cycle (sched_*.c) in simulated time, and measures scheduling quality per team:
 * share deviation from the weighted-DRF ideal, time below the quota floor while a job
 * that fits in it waits, waits, preemptions and preempt-requeue cycles, and jobs that
 * wait while capacity and quota they fit in stay idle.  No database, no clock. */
#ifndef FLEET_QUEUE_SCHED_TRACE_H
#define FLEET_QUEUE_SCHED_TRACE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/err.h"

#define SCHED_TRACE_MAX_TEAMS	8

struct sched_trace_team {
	const char	*name;
	double		 weight;
	int64_t		 floor;		/* nominal quota (accelerators) */
	double		 mix;		/* fraction of the jobs */
	int		 max_workers;	/* largest gang: workers (x accelerators each) */
	int		 max_accel;	/* accelerators per worker, up to 8 */
};

struct sched_trace_config {
	struct sched_trace_team	 teams[SCHED_TRACE_MAX_TEAMS];
	int			 n_teams;
	int			 n_jobs;
	int			 clusters;
	int			 nodes;		/* accelerator nodes per cluster (8 each) */
	int			 rack_nodes;	/* nodes per rack */
	int64_t			 cycle_s;	/* simulated seconds between cycles */
	double			 load;		/* offered accelerator-hours / capacity-hours */
	double			 burst_frac;	/* fraction of a team's jobs in bursts */
	int64_t			 median_run_s;	/* median job run time */
	uint64_t		 seed;
	int			 max_holds;	/* -1: the scheduler's default */
};

/* Six teams in one cohort, 12 clusters of 16 x 8 accelerators, 10,000 jobs. */
void	sched_trace_default(struct sched_trace_config *c);

struct sched_trace_team_result {
	char		 name[32];
	double		 weight;
	int64_t		 floor;
	size_t		 jobs, admissions, finished, never_admitted;
	double		 dev_mean;	/* |actual - ideal| share, % of capacity, mean */
	double		 dev_p95;
	double		 bias;		/* mean of actual - ideal, % of capacity */
	double		 share_mean;	/* actual share while it had demand, % */
	double		 ideal_mean;
	int64_t		 below_floor_s;	/* beyond the first cycle */
	int		 below_floor_cycles_max;	/* longest run of such cycles */
	int64_t		 floor_blocked_s;	/* same, but no eviction of borrowers
						 * could place the job (fragmentation) */
	int64_t		 wait_max_s;	/* total time pending, worst job */
	int64_t		 wait_p95_s;
	size_t		 preempted;	/* its jobs evicted */
	size_t		 preempting;	/* evictions its jobs caused */
	size_t		 cycles;	/* preempt-requeue cycles its jobs were in */
	size_t		 idle_waits;	/* job-cycles waiting while capacity + quota fit */
	size_t		 held_waits;	/* same, but only in capacity held for a starving job */
};

struct sched_trace_result {
	struct sched_trace_team_result	 teams[SCHED_TRACE_MAX_TEAMS];
	int				 n_teams;
	int64_t				 capacity;	/* accelerators */
	int64_t				 sim_s;		/* simulated seconds */
	size_t				 cycles;	/* scheduling cycles run */
	size_t				 contended_cycles;	/* demand above capacity */
	double				 utilization;	/* mean, % of capacity */
	size_t				 preemptions, ping_pongs, max_preempted_per_job;
	size_t				 ping_pongs_at_once;	/* evicted back by the next cycle */
	size_t				 idle_waits, held_waits;
	/* the first idle wait seen, for diagnosis */
	char				 first_idle[200];
	char				 first_cycle[200];
	char				 first_floor[200];	/* the first run past one cycle */
};

/* Runs the whole trace.  On failure fills e. */
bool	sched_trace_run(const struct sched_trace_config *cfg, struct sched_trace_result *out,
	    struct err *e);

#endif
