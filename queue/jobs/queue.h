/* queue: queues and priority classes — the objects teams declare before they submit. */
#ifndef FLEET_QUEUE_QUEUE_H
#define FLEET_QUEUE_QUEUE_H

#include <stdbool.h>

#include <jansson.h>

#include "core/db.h"
#include "core/err.h"

bool	queue_pc_create(struct db *c, json_t *body, json_t **out, struct err *e);
/* By id or name; FOR UPDATE when for_update. */
bool	queue_pc_get(struct db *c, const char *id_or_name, bool for_update, json_t **out,
	    struct err *e);
bool	queue_pc_list(struct db *c, int limit, const char *after, json_t **out, struct err *e);
bool	queue_pc_replace(struct db *c, const char *id, json_t *body, json_t **out, struct err *e);
/* 409 "pc.in_use" while jobs or queues use it. */
bool	queue_pc_delete(struct db *c, const char *id, struct err *e);

/* body team (optional): a team whose environments hold the queue's (422 at /team). */
bool	queue_create(struct db *c, json_t *body, json_t **out, struct err *e);
/* By id; FOR UPDATE when for_update. */
bool	queue_get(struct db *c, const char *id, bool for_update, json_t **out, struct err *e);
bool	queue_get_by_name(struct db *c, const char *env, const char *name, json_t **out,
	    struct err *e);
/* What a submission reads before its checks, in one round trip. */
struct queue_submit {
	json_t		*queue;		/* as queue_get_by_name */
	json_t		*pc;		/* the class pc names, else the queue's default; NULL
					 * when neither names one or the named one is gone */
	long long	 catalog_gen;	/* for flavor_sync_at */
	bool		 budgets;	/* the environment has a budget (queue/cost/budget.c):
					 * without one, submission skips budget_admit and
					 * budget_announce, whose plans (spend over cost_runs)
					 * cost more to start than the rest of the submission */
};

/* Queue name of env (404 "queue.not_found" at /queue), the priority class pc (NULL: the
 * queue's default), the catalog generation and whether env has budgets;
 * queue_submit_cleanup frees what it holds. */
bool	queue_for_submit(struct db *c, const char *env, const char *name, const char *pc,
	    struct queue_submit *out, struct err *e);
void	queue_submit_cleanup(struct queue_submit *q);
/* team: only that team's queues (NULL: every queue). */
bool	queue_list(struct db *c, int limit, const char *after, const char *environment,
	    const char *team, const char *const *envs, int nenvs, json_t **out, struct err *e);
/* name and environment immutable (409 naming the field). */
bool	queue_replace(struct db *c, const char *id, json_t *body, json_t **out, struct err *e);
/* 409 "queue.in_use" while it holds unfinished jobs. */
bool	queue_delete(struct db *c, const char *id, struct err *e);

#endif
