/* postmortem: GET /v1/jobs/{id}/postmortem — the records the status worker kept of each
 * ended attempt (queue/follow/status_postmortem.c writes them; job_postmortems). */
#ifndef FLEET_QUEUE_POSTMORTEM_H
#define FLEET_QUEUE_POSTMORTEM_H

#include <stdbool.h>

#include <jansson.h>

#include "core/db.h"
#include "core/err.h"

/* {job_id, items: [{attempt, trigger, recorded_at, cluster, record}]}, newest first; the
 * caller checked that the job exists and is visible. */
bool	postmortem_list(struct db *c, const char *job_id, json_t **out, struct err *e);

#endif
