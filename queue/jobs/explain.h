/* explain: "why is my job pending / why did it land there" for GET /v1/jobs/{id}/placement. */
#ifndef FLEET_QUEUE_EXPLAIN_H
#define FLEET_QUEUE_EXPLAIN_H

#include <stdbool.h>

#include <jansson.h>

#include "core/db.h"
#include "core/err.h"

/* job is the job's JSON (JOB_JSON).  Pending: position in its queue and one blocking
 * reason per cluster, computed now on a fresh model.  Placed: the stored decision with
 * every candidate and why it lost. */
bool	explain_job(struct db *c, json_t *job, json_t **out, struct err *e);
/* GET /v1/queues/{id}/status: per flavor nominal quota, usage, borrowed and lent (as the
 * scheduler's model of the environment counts them now), the weighted dominant share and
 * its rank within the cohort, pending jobs by the reason the scheduler last recorded. */
bool	explain_queue(struct db *c, const char *id, json_t **out, struct err *e);

#endif
