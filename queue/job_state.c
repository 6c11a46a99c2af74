/* job_state: one table of state names, and the predicates on states (job_state.h). */
#include <stddef.h>
#include <string.h>

#include "queue/job_state.h"

static const char *const names[] = {
	[JOB_PENDING] = "pending",
	[JOB_ADMITTED] = "admitted",
	[JOB_DISPATCHED] = "dispatched",
	[JOB_RUNNING] = "running",
	[JOB_PREEMPTED] = "preempted",
	[JOB_MOVING] = "moving",
	[JOB_SUCCEEDED] = "succeeded",
	[JOB_FAILED] = "failed",
	[JOB_CANCELLED] = "cancelled",
	[JOB_STATE_UNKNOWN] = "unknown",
};

const char *
job_state_name(enum job_state s)
{
	return (unsigned)s < JOB_STATE_UNKNOWN ? names[s] : names[JOB_STATE_UNKNOWN];
}

enum job_state
job_state_parse(const char *name)
{
	if (name == NULL)
		return JOB_STATE_UNKNOWN;
	for (int s = 0; s < JOB_STATE_UNKNOWN; s++)
		if (strcmp(names[s], name) == 0)
			return (enum job_state)s;
	return JOB_STATE_UNKNOWN;
}

bool
job_state_is_final(enum job_state s)
{
	return s == JOB_SUCCEEDED || s == JOB_FAILED || s == JOB_CANCELLED;
}

bool
job_state_is_live(enum job_state s)
{
	return s < JOB_STATE_UNKNOWN && !job_state_is_final(s);
}

bool
job_state_is_placed(enum job_state s)
{
	return s == JOB_ADMITTED || s == JOB_DISPATCHED || s == JOB_RUNNING;
}
