/* scheduler: one leader per environment (Postgres advisory lock), woken by LISTEN/NOTIFY
 * and a timer; each cycle decides on an in-memory model and commits in batches. */
#ifndef FLEET_QUEUE_SCHEDULER_H
#define FLEET_QUEUE_SCHEDULER_H

#include <stdbool.h>
#include <stddef.h>

#include "core/db.h"
#include "core/err.h"
#include "queue/sched/sched.h"

struct sched_stats {
	size_t	pending;	/* jobs considered */
	size_t	admitted;	/* admissions committed */
	size_t	preempted;	/* victims committed */
	size_t	migrated;	/* capacity-preference migrations committed (moves) */
	double	load_s, decide_s, commit_s;
};

/* One cycle for env on pooled connections: load, decide, commit.  Safe to call only
 * from the environment's leader (tests and the benchmark call it directly). */
bool	scheduler_cycle(const char *env, const char *who, struct sched_stats *st, struct err *e);
/* The jobs.placement document of a placement: what the dispatcher renders from.
 * pools as loader_model_pools gives them. */
json_t	*scheduler_placement_json(struct sched_model *m, const struct sched_placement *place,
	    json_t *pools);

/* The grace a preempted or moved job gets to checkpoint when its spec names none. */
#define SCHED_GRACE_S	30
/* The spec's checkpoint.grace_seconds, SCHED_GRACE_S without one. */
int	scheduler_grace_s(const json_t *spec);

/* Preempts the victims in victims (JSON text [{"id", "by"}], by the preemptor's id) that
 * are still admitted, dispatched or running and, for an admission, whose preemptor is
 * still pending: state preempted, a checkpoint deadline of the spec's grace, a state
 * event naming by.  The status worker signals, waits the grace, deletes and requeues.
 * *n is how many were preempted; the caller's transaction. */
bool	scheduler_preempt(struct db *c, const char *victims, enum sched_preemptor by,
	    size_t *n, struct err *e);

/* Commits cy's capacity-preference migrations as moves (queue/sched/scheduler_migrate.c);
 * *n counts the jobs that became moving.  The caller's transaction. */
bool	scheduler_migrate_commit(struct db *c, struct sched_model *m, const struct sched_cycle *cy,
	    json_t *pools, size_t *n, struct err *e);

bool	scheduler_start(struct err *e);
void	scheduler_stop(void);
/* Environments this replica leads right now (for tests and /metrics). */
int	scheduler_leading(void);
void	scheduler_metrics(char **buf, size_t *len, size_t *cap);

#endif
