/* events: the job event feed behind GET /v1/events and the SSE streams — the sequencer
 * that numbers committed job_events rows (seq), and reads in seq order with a scope. */
#ifndef FLEET_QUEUE_EVENTS_H
#define FLEET_QUEUE_EVENTS_H

#include <stdbool.h>

#include <jansson.h>

#include "core/db.h"
#include "core/err.h"

struct events_filter {
	const char	*job_id;	/* NULL = every job */
	const char	*environment;	/* NULL = every environment in scope */
	const char	*const *envs;	/* caller's environments; NULL or "*" = all */
	int		 nenvs;
	const char	*team;		/* only events of this team's queues; NULL = all */
};

/* Numbers the committed rows that have no seq yet (oldest first, at most 10,000) in one
 * transaction of its own, serialized with every other replica's sequencer by the row lock
 * of job_event_seq; NOTIFYs fleet_events after the commit when it numbered any.  Costs one
 * read when there is nothing to number.  *head = last number given (when any). */
bool	events_sequence(long long *head, int *numbered, struct err *e);
/* The last number given so far. */
bool	events_head(struct db *c, long long *head, struct err *e);
/* Events with after < seq (<= upto when upto > 0) that match f, in seq order, at most
 * limit.  *out is an array of objects {seq, id, job_id, job_name, environment, queue, at,
 * type, from_state, to_state, attempt, message, data, team}. */
bool	events_read(struct db *c, long long after, long long upto,
	    const struct events_filter *f, int limit, json_t **out, struct err *e);

#endif
