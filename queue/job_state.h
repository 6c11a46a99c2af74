/* job_state: the states of a job (jobs.state) as a type, their names, and the questions
 * the code asks about them.  The transitions themselves are written in SQL by their
 * owners (queue/README.md lists them); this file only names and classifies. */
#ifndef FLEET_QUEUE_JOB_STATE_H
#define FLEET_QUEUE_JOB_STATE_H

#include <stdbool.h>

enum job_state {
	JOB_PENDING,		/* waiting for the scheduler */
	JOB_ADMITTED,		/* placed on a cluster, not applied yet */
	JOB_DISPATCHED,		/* applied to its cluster */
	JOB_RUNNING,		/* its pods run */
	JOB_PREEMPTED,		/* evicted: checkpoint grace, then deleted and requeued */
	JOB_MOVING,		/* on its way to another cluster (queue/change/mover.c) */
	JOB_SUCCEEDED,
	JOB_FAILED,
	JOB_CANCELLED,
	JOB_STATE_UNKNOWN	/* a name that is none of the above */
};

/* The states as SQL lists, for "state IN " JOB_STATES_FINAL_SQL and the like. */
#define JOB_STATES_FINAL_SQL	"('succeeded', 'failed', 'cancelled')"
#define JOB_STATES_LIVE_SQL \
	"('pending', 'admitted', 'dispatched', 'running', 'preempted', 'moving')"
#define JOB_STATES_PLACED_SQL	"('admitted', 'dispatched', 'running')"

/* "pending", ...; "unknown" for JOB_STATE_UNKNOWN. */
const char	*job_state_name(enum job_state s);
/* The state named name; JOB_STATE_UNKNOWN for NULL or any other text. */
enum job_state	 job_state_parse(const char *name);

/* Succeeded, failed or cancelled: the job has ended and never changes state again. */
bool	job_state_is_final(enum job_state s);
/* Any known state that is not final: the scheduler's model loads it. */
bool	job_state_is_live(enum job_state s);
/* Admitted, dispatched or running: placed on a cluster by the scheduler; what
 * preemption evicts and what a move takes from its cluster. */
bool	job_state_is_placed(enum job_state s);

#endif
