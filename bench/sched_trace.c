/* sched_trace: replays the synthetic multi-team trace of bench/sim/sched_trace.c through the
 * scheduler's model and cycle in simulated time and prints the per-team quality table
 * (markdown) and the targets' verdicts.  usage: sched_trace [JOBS [SEED]] */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "core/mono.h"
#include "bench/sim/sched_trace.h"

static void
table(const struct sched_trace_config *c, const struct sched_trace_result *r)
{
	int i;

	printf("| team | weight | floor | jobs | share / ideal %% | deviation mean / p95 %% | bias %% |"
	    " below floor s (longest, cycles); fragmented s | longest wait | p95 wait | preempted / preempting |"
	    " cycles | idle waits (held) |\n");
	printf("|---|---|---|---|---|---|---|---|---|---|---|---|---|\n");
	for (i = 0; i < r->n_teams; i++) {
		const struct sched_trace_team_result *t = &r->teams[i];

		printf("| %s | %g | %lld | %zu | %.1f / %.1f | %.2f / %.2f | %+.2f | %lld (%d); %lld |"
		    " %.1f min | %.1f min | %zu / %zu | %zu | %zu (%zu) |\n", t->name, t->weight,
		    (long long)t->floor, t->jobs, t->share_mean, t->ideal_mean, t->dev_mean,
		    t->dev_p95, t->bias, (long long)t->below_floor_s, t->below_floor_cycles_max,
		    (long long)t->floor_blocked_s,
		    (double)t->wait_max_s / 60.0, (double)t->wait_p95_s / 60.0, t->preempted,
		    t->preempting, t->cycles, t->idle_waits, t->held_waits);
	}
	(void)c;
}

int
main(int argc, char **argv)
{
	struct sched_trace_config c;
	struct sched_trace_result r;
	struct err e = { 0 };
	double t0, dev = 0;
	int i, floor_cycles = 0;

	sched_trace_default(&c);
	if (argc > 1)
		c.n_jobs = atoi(argv[1]);
	if (argc > 2)
		c.seed = strtoull(argv[2], NULL, 0);
	if (getenv("TRACE_MAX_HOLDS") != NULL)
		c.max_holds = atoi(getenv("TRACE_MAX_HOLDS"));
	t0 = mono_s();
	if (!sched_trace_run(&c, &r, &e)) {
		fprintf(stderr, "sched_trace: %s: %s\n", e.code, e.msg);
		return 1;
	}
	printf("%d teams in one cohort, %d jobs (seed 0x%llx), %d clusters x %d nodes x 8 = %lld"
	    " accelerators, racks of %d nodes; a cycle every %lld simulated s\n", c.n_teams,
	    c.n_jobs, (unsigned long long)c.seed, c.clusters, c.nodes, (long long)r.capacity,
	    c.rack_nodes, (long long)c.cycle_s);
	printf("simulated %.1f h in %zu cycles (%zu with demand above capacity), utilization"
	    " %.1f %%, %zu preemptions, wall %.1f s\n\n", (double)r.sim_s / 3600.0, r.cycles,
	    r.contended_cycles, r.utilization, r.preemptions, mono_s() - t0);
	table(&c, &r);
	for (i = 0; i < r.n_teams; i++) {
		if (r.teams[i].dev_mean > dev)
			dev = r.teams[i].dev_mean;
		if (r.teams[i].below_floor_cycles_max > floor_cycles)
			floor_cycles = r.teams[i].below_floor_cycles_max;
	}
	printf("\n- share deviation from the weighted-DRF ideal, worst team mean: %.2f %% (target"
	    " <= 5 %%): %s\n", dev, dev <= 5.0 ? "met" : "MISSED");
	printf("- below its floor while a job that fits in the floor waits: longest run %d cycle"
	    " ends (target <= 1: the next cycle always clears it): %s\n", floor_cycles,
	    floor_cycles <= 1 ? "met" : "MISSED");
	if (r.first_floor[0])
		printf("  first: %s\n", r.first_floor);
	printf("- preempt-requeue cycles: %zu, %zu of them by the next cycle (target 0; most"
	    " evictions of one job: %zu): %s\n", r.ping_pongs, r.ping_pongs_at_once,
	    r.max_preempted_per_job, r.ping_pongs == 0 ? "met" : "MISSED");
	if (r.first_cycle[0])
		printf("  first: %s\n", r.first_cycle);
	printf("- job-cycles waiting while capacity and quota it fits in stayed idle: %zu"
	    " (target 0; %zu more only in capacity held for a starving job): %s\n",
	    r.idle_waits, r.held_waits, r.idle_waits == 0 ? "met" : "MISSED");
	if (r.first_idle[0])
		printf("  first: %s\n", r.first_idle);
	return 0;
}
