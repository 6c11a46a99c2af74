/* scheduler_migrate: commits the capacity-preference migrations a cycle planned
 * (queue/sched/sched_prefs.c) as moves: the job becomes 'moving' with jobs.move reserving the
 * target, exactly as a requested move does (queue/change/move.c:reserve), and the mover
 * carries it out: checkpoint signal and grace at the source, suspend, apply at the target
 * (queue/change/mover.c).  The caller's transaction, after its leadership fence. */
#include <stdlib.h>
#include <string.h>

#include "queue/jobs/job.h"
#include "queue/sched/scheduler.h"

static const char sql_move[] =
    "UPDATE jobs SET move = jsonb_build_object('reason', $3::text, 'requested_by',"
    " 'scheduler', 'started_at', now(), 'phase', 'reserved', 'capacity_migration', true,"
    " 'from', jsonb_build_object('cluster_id', cluster_id, 'object_name', object_name,"
    " 'attempt', attempt, 'placement', placement, 'fenced', false), 'to', $2::jsonb),"
    " next_try_at = now(), capacity_migrations = capacity_migrations + 1, migrated_at = now()"
    " WHERE id = $1::uuid AND state = 'running' AND move IS NULL"
    " AND capacity_migrations = $4::int RETURNING placement::text";

static bool
one(struct db *c, struct sched_model *m, const struct sched_migration *mg, json_t *pools,
    size_t *n, struct err *e)
{
	const struct sched_job *j = sched_model_job(m, (size_t)mg->job);
	json_t *to = scheduler_placement_json(m, &mg->place, pools), *from = NULL, *data = NULL;
	char *text = json_dumps(to, JSON_COMPACT), reason[160], count[16];
	const char *p[4] = { j->id, text, reason, count };
	PGresult *r = NULL;
	bool ok = false;

	snprintf(reason, sizeof(reason), "capacity preference: %s -> %s",
	    sched_ctype_name(j->pref[mg->from_rank < j->n_pref ? mg->from_rank : 0]),
	    sched_ctype_name(j->pref[mg->to_rank]));
	snprintf(count, sizeof(count), "%d", j->migrations);
	if (text == NULL || !db_exec(c, sql_move, 4, p, &r, e))
		goto cleanup;
	if (PQntuples(r) == 0) {
		ok = true;	/* it changed since the model was loaded: the next cycle decides */
		goto cleanup;
	}
	from = json_loads(PQgetvalue(r, 0, 0), 0, NULL);
	data = json_pack("{s:s, s:O, s:O, s:f, s:[], s:{s:s, s:s, s:i, s:i}}", "job_id", j->id,
	    "from", from ? from : json_null(), "to", to, "price_difference_per_hour",
	    json_real_value(json_object_get(to, "price_hour")) -
	    (from ? json_number_value(json_object_get(from, "price_hour")) : 0.0),
	    "would_preempt", "capacity_migration", "from",
	    sched_ctype_name(j->pref[mg->from_rank < j->n_pref ? mg->from_rank : 0]), "to",
	    sched_ctype_name(j->pref[mg->to_rank]), "migration", j->migrations + 1, "max",
	    j->max_migrations);
	if (!job_transition(c, j->id, "running", "moving", reason, data, e))
		goto cleanup;
	(*n)++;
	ok = true;
cleanup:
	json_decref(data);
	json_decref(from);
	json_decref(to);
	free(text);
	PQclear(r);
	return ok;
}

bool
scheduler_migrate_commit(struct db *c, struct sched_model *m, const struct sched_cycle *cy,
			 json_t *pools, size_t *n, struct err *e)
{
	*n = 0;
	for (size_t i = 0; i < cy->n_mig; i++)
		if (!one(c, m, &cy->mig[i], pools, n, e))
			return false;
	return true;
}
