/* trace_model: what the trace simulators (sched_trace, rack_trace, prefs_trace) put into
 * the scheduler's model the same way: open quotas and the one FIFO queue of a single-team
 * trace.  Clusters come from sched_model_add_cluster as they are (ready, reachable,
 * observed at the model's now). */
#ifndef FLEET_BENCH_TRACE_MODEL_H
#define FLEET_BENCH_TRACE_MODEL_H

#include <stdbool.h>

#include "core/err.h"
#include "queue/sched/sched.h"

/* q with every resource unmanaged and no borrowing or lending limit. */
void	trace_quota_open(struct sched_quota *q);
/* The queue "q" of env: weight 1, best-effort FIFO, no cohort, open quota on the flavors
 * "cpu" and flavor.  False with e filled on failure. */
bool	trace_queue(struct sched_model *m, const char *env, const char *flavor, struct err *e);

#endif
