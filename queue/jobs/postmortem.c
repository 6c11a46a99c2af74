/* postmortem: reads the kept records of a job's ended attempts (see postmortem.h). */
#include "queue/jobs/postmortem.h"

bool
postmortem_list(struct db *c, const char *job_id, json_t **out, struct err *e)
{
	static const char sql[] = "SELECT json_build_object('job_id', $1::uuid, 'items',"
	    " coalesce(json_agg(json_build_object('attempt', p.attempt, 'trigger', p.trigger,"
	    " 'recorded_at', p.recorded_at, 'cluster', k.name, 'record', p.record)"
	    " ORDER BY p.attempt DESC), '[]'::json))::text FROM job_postmortems p"
	    " LEFT JOIN clusters k ON k.id = p.cluster_id WHERE p.job_id = $1::uuid";
	const char *p[1] = { job_id };
	PGresult *r = NULL;

	if (!db_exec(c, sql, 1, p, &r, e))
		return false;
	*out = json_loads(PQgetvalue(r, 0, 0), 0, NULL);
	PQclear(r);
	if (*out == NULL)
		return err_set(e, 500, "queue.postmortem", "cannot read the post-mortem");
	return true;
}
