/* job_update: changing a running job's spec (PUT /v1/jobs/{id}/spec). The request side
 * checks what the kind allows and records the update; the updater worker re-renders and
 * server-side applies it with no transaction open, then follows KubeRay's upgrade status. */
#ifndef FLEET_QUEUE_JOB_UPDATE_H
#define FLEET_QUEUE_JOB_UPDATE_H

#include <stdbool.h>

#include <jansson.h>

#include "core/db.h"
#include "core/err.h"

/* job is the job as job_get(for_update) gives it; body the new spec (the submit form,
 * "environment" optional and unchanged). RayService: image, serve_config, worker_groups,
 * autoscaler; RayCluster: worker group sizes; anything else 422 job.field_immutable with
 * the pointer; RayJob/RayCronJob 409 job.update_not_allowed; a job not dispatched or
 * running, or with an update in flight, 409. *changed false: nothing differed (no write). */
bool	job_update_spec(struct db *c, json_t *job, json_t *body, bool *changed, struct err *e);

struct updater_stats {
	size_t	claimed, applied, upgraded, failed, retried;
};

/* One round of the updater (claim, apply or follow, record). */
bool	updater_round(struct updater_stats *st, struct err *e);
bool	updater_start(struct err *e);
void	updater_stop(void);

#endif
