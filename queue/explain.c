/* explain: GET /v1/jobs/{id}/placement's entry point — loads a fresh model for a pending
 * job (rendered by queue/sched_explain.c, the model side) or returns the recorded
 * placement of the others. */
#include <string.h>

#include "core/config.h"
#include "queue/explain.h"
#include "queue/loader.h"

static bool
explain_placed(struct db *c, const char *id, json_t *job, json_t **out, struct err *e)
{
	static const char sql[] = "SELECT json_build_object('attempt', attempt, 'decided_at',"
	    " decided_at, 'decided_by', decided_by, 'decision', decision, 'candidates',"
	    " candidates)::text FROM placements WHERE job_id = $1::uuid ORDER BY id DESC LIMIT 1";
	const char *p[1] = { id };
	PGresult *r = NULL;

	if (!db_exec(c, sql, 1, p, &r, e))
		return false;
	*out = PQntuples(r) ? json_loads(PQgetvalue(r, 0, 0), 0, NULL) : json_object();
	PQclear(r);
	json_object_set(*out, "state", json_object_get(job, "state"));
	json_object_set(*out, "job_id", json_object_get(job, "id"));
	return true;
}

bool
explain_job(struct db *c, json_t *job, json_t **out, struct err *e)
{
	const char *id = json_string_value(json_object_get(job, "id"));
	const char *state = json_string_value(json_object_get(job, "state"));
	struct sched_model *m = NULL;
	struct sched_job *j;

	if (strcmp(state, "pending") != 0)
		return explain_placed(c, id, job, out, e);
	if (!loader_model(c, json_string_value(json_object_get(job, "environment")),
	    cfg.snapshot_max_age_s, &m, e))
		return false;
	j = sched_model_find_job(m, id);
	*out = j ? sched_explain_job(m, j) : NULL;
	sched_model_free(m);
	if (*out == NULL)
		return err_set(e, 500, "sched.explain", "cannot explain the job");
	json_object_set(*out, "state", json_object_get(job, "state"));
	json_object_set(*out, "job_id", json_object_get(job, "id"));
	return true;
}
