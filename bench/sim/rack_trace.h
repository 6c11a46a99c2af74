/* rack_trace: replays a trace of mixed 8- to 512-GPU gangs on GB200 NVL72 racks (18 trays
 * x 4 GPUs, racks grouped in scale units) through the scheduler's own model and cycle in
 * simulated time, once with topology pack and once with topology none, and measures the
 * racks each admitted gang spans against the fewest possible and the fragmentation left
 * (free GPUs in partly used racks).  No database, no clock. */
#ifndef FLEET_BENCH_RACK_TRACE_H
#define FLEET_BENCH_RACK_TRACE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/err.h"

struct rack_trace_config {
	int		 n_jobs;
	int		 units;		/* scale units */
	int		 racks;		/* racks per unit */
	int		 trays;		/* nodes (trays) per rack, 4 GPUs each */
	int64_t		 cycle_s;	/* simulated seconds between cycles */
	double		 load;		/* offered GPU-hours / capacity-hours */
	int64_t		 median_run_s;
	uint64_t	 seed;
	const char	*topology;	/* "pack" or "none" */
};

/* 4 units x 8 racks of 18 x 4 GPUs (2,304 GPUs), 2,000 jobs, load 0.8, topology pack. */
void	rack_trace_default(struct rack_trace_config *c);

struct rack_trace_result {
	int64_t		 capacity;	/* GPUs */
	int64_t		 sim_s;
	size_t		 cycles, admitted;
	size_t		 multi_rack;	/* admissions whose gang needs more than one rack */
	double		 ratio_mean;	/* racks used / fewest possible, mean over admissions */
	double		 ratio_multi;	/* same, over the multi-rack gangs */
	double		 ratio_total;	/* sum of racks used / sum of the fewest */
	size_t		 at_min;	/* admissions on the fewest racks possible */
	double		 frag_mean;	/* free GPUs in partly used racks, mean over cycles */
	double		 frag_share;	/* same, % of the free GPUs */
	double		 utilization;	/* mean, % of the GPUs */
	int64_t		 wait_mean_s;	/* pending time, mean over admissions */
};

/* Fills out; false with e on a bad configuration or a model error. */
bool	rack_trace_run(const struct rack_trace_config *c, struct rack_trace_result *out,
	    struct err *e);

#endif
