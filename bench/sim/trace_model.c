/* trace_model: the model pieces the trace simulators share (see trace_model.h). */
#include "bench/sim/trace_model.h"

void
trace_quota_open(struct sched_quota *q)
{
	for (int r = 0; r < SCHED_NRES; r++)
		q->nominal.v[r] = q->borrow_limit.v[r] = q->lend_limit.v[r] = SCHED_UNSET;
}

bool
trace_queue(struct sched_model *m, const char *env, const char *flavor, struct err *e)
{
	struct sched_queue *q = sched_model_add_queue(m, "q", env, NULL, 1.0,
	    SCHED_BEST_EFFORT_FIFO, e);
	struct sched_quota open;

	trace_quota_open(&open);
	return q != NULL && sched_queue_set_quota(m, q, "cpu", &open, e) &&
	    sched_queue_set_quota(m, q, flavor, &open, e);
}
