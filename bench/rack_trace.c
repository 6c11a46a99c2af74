/* rack_trace: the NVL72 rack trace of bench/sim/rack_trace.c with topology pack and with
 * topology none on the same jobs, printed as a markdown table with the target's verdict
 * (pack: racks used <= 1.1 x the fewest possible, on average).
 * usage: rack_trace [JOBS [SEED]] */
#include <stdio.h>
#include <stdlib.h>

#include "bench/sim/rack_trace.h"

int
main(int argc, char **argv)
{
	static const char *const topos[] = { "pack", "none" };
	struct rack_trace_config c;
	struct rack_trace_result r[2];
	struct err e = { 0 };

	rack_trace_default(&c);
	if (argc > 1)
		c.n_jobs = atoi(argv[1]);
	if (argc > 2)
		c.seed = strtoull(argv[2], NULL, 0);
	for (int i = 0; i < 2; i++) {
		c.topology = topos[i];
		if (!rack_trace_run(&c, &r[i], &e)) {
			fprintf(stderr, "rack_trace: %s: %s\n", e.code, e.msg);
			return 1;
		}
	}
	printf("%d jobs of 8 to 512 GPUs (seed 0x%llx), %d scale units x %d racks x %d trays x 4"
	    " = %lld GPUs, load %.2f, a cycle every %lld simulated s\n\n", c.n_jobs,
	    (unsigned long long)c.seed, c.units, c.racks, c.trays, (long long)r[0].capacity,
	    c.load, (long long)c.cycle_s);
	printf("| topology | admitted | racks / fewest, mean | multi-rack gangs: mean | "
	    "sum racks / sum fewest | on the fewest | free GPUs in partly used racks "
	    "(%% of free) | utilization %% | mean wait |\n");
	printf("|---|---|---|---|---|---|---|---|---|\n");
	for (int i = 0; i < 2; i++)
		printf("| %s | %zu | %.3f | %.3f (%zu) | %.3f | %.1f %% | %.0f (%.1f %%) | %.1f |"
		    " %.1f min |\n", topos[i], r[i].admitted, r[i].ratio_mean, r[i].ratio_multi,
		    r[i].multi_rack, r[i].ratio_total,
		    r[i].admitted ? 100.0 * (double)r[i].at_min / (double)r[i].admitted : 0,
		    r[i].frag_mean, r[i].frag_share, r[i].utilization,
		    (double)r[i].wait_mean_s / 60.0);
	printf("\ntarget racks used <= 1.1 x the fewest on average (pack): %s (%.3f)\n",
	    r[0].ratio_mean <= 1.1 ? "met" : "MISSED", r[0].ratio_mean);
	return 0;
}
