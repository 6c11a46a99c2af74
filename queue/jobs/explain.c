/* explain: GET /v1/jobs/{id}/placement's entry point — loads a fresh model for a pending
 * job (rendered by queue/sched/sched_explain.c, the model side) or returns the recorded
 * placement of the others. */
#include <stdlib.h>
#include <string.h>

#include "core/config.h"
#include "providers/jobspec.h"
#include "providers/kuberay.h"
#include "queue/jobs/explain.h"
#include "queue/job_state.h"
#include "queue/sched/loader.h"
#include "queue/sched/sched_int.h"
#include "regions/cluster.h"

/* Whether the member's batch scheduler gates the job, as dispatch renders it: for Kueue,
 * its LocalQueue, the elastic-jobs setting (registered, read by the probe, used) and why
 * an elastic job goes ungated.  NULL when the job has no cluster. */
static json_t *
batch_of(struct db *c, const char *id, json_t *job, struct err *e)
{
	static const char sql[] = "SELECT k.name, k.batch_scheduler, coalesce(k.kueue::text,"
	    " 'null'), coalesce(k.batch_probe::text, 'null'), q.name FROM jobs j"
	    " JOIN clusters k ON k.id = j.cluster_id JOIN queues q ON q.id = j.queue_id"
	    " WHERE j.id = $1::uuid";
	const char *p[1] = { id }, *why = NULL;
	PGresult *r = NULL;
	json_t *out = NULL, *kq = NULL, *probe = NULL;
	struct kuberay_input in;
	struct job_spec s;
	struct err se = { 0 };
	char lq[128];
	bool gated = false;

	memset(&s, 0, sizeof(s));
	memset(&in, 0, sizeof(in));
	if (!db_exec(c, sql, 1, p, &r, e) || PQntuples(r) == 0)
		goto cleanup;
	kq = json_loads(PQgetvalue(r, 0, 2), JSON_DECODE_ANY, NULL);
	probe = json_loads(PQgetvalue(r, 0, 3), JSON_DECODE_ANY, NULL);
	if (!kuberay_scheduler_from_name(PQgetvalue(r, 0, 1), &in.batch.kind))
		in.batch.kind = KUBERAY_SCHED_NONE;
	in.batch.kueue_elastic = cluster_kueue_elastic(kq, probe);
	if (jobspec_from_json(json_object_get(job, "spec"), &s, &se)) {
		in.spec = &s;
		gated = kuberay_kueue_gated(&in, &why);
	}
	snprintf(lq, sizeof(lq), "%s%s", json_string_value(json_object_get(kq,
	    "local_queue_prefix")) ? json_string_value(json_object_get(kq,
	    "local_queue_prefix")) : "", PQgetvalue(r, 0, 4));
	out = json_pack("{s:s, s:s, s:b}", "cluster", PQgetvalue(r, 0, 0), "kind",
	    PQgetvalue(r, 0, 1), "gated", gated);
	if (why != NULL)
		json_object_set_new(out, "detail", json_string(why));
	if (in.batch.kind == KUBERAY_SCHED_KUEUE) {
		json_object_set_new(out, "local_queue", gated ? json_string(lq) : json_null());
		json_object_set_new(out, "elastic_jobs", json_pack("{s:b, s:O, s:b}",
		    "registered", json_is_true(json_object_get(kq, "elastic_jobs")), "observed",
		    json_object_get(probe, "elastic_jobs") ? json_object_get(probe,
		    "elastic_jobs") : json_null(), "used", in.batch.kueue_elastic));
		if (json_is_object(probe))
			json_object_set_new(out, "probe", json_pack("{s:O?, s:O?, s:O?}", "condition",
			    json_object_get(probe, "condition"), "message", json_object_get(probe,
			    "message"), "checked_at", json_object_get(probe, "checked_at")));
	}
cleanup:
	jobspec_cleanup(&s);
	json_decref(kq);
	json_decref(probe);
	PQclear(r);
	return out;
}

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
	{
		json_t *b = batch_of(c, id, job, e);

		if (err_is_set(e)) {
			json_decref(*out);
			*out = NULL;
			return false;
		}
		if (b != NULL)
			json_object_set_new(*out, "batch_scheduler", b);
	}
	return true;
}

/* A RayCronJob's runs as the scheduler counts them (queue/follow/cron.c, queue/sched/loader.c). */
static bool
explain_cron(struct db *c, const char *id, json_t *job, json_t *out, struct err *e)
{
	static const char sql[] = "SELECT coalesce(cron_runs, '[]'::jsonb)::text FROM jobs"
	    " WHERE id = $1::uuid";
	const char *p[1] = { id }, *pol = json_string_value(json_object_get(json_object_get(
	    json_object_get(job, "spec"), "cron"), "concurrency_policy"));
	enum job_state state = job_state_parse(json_string_value(json_object_get(job, "state")));
	const char *holds;
	PGresult *r = NULL;
	json_t *runs, *run;
	size_t i;

	if (!db_exec(c, sql, 1, p, &r, e))
		return false;
	runs = json_loads(PQntuples(r) ? PQgetvalue(r, 0, 0) : "[]", 0, NULL);
	PQclear(r);
	if (!json_is_array(runs)) {
		json_decref(runs);
		runs = json_array();
	}
	json_array_foreach(runs, i, run) {
		json_t *nodes = json_array(), *a;
		size_t k;

		/* the nodes the run was placed on (queue/follow/cron.c), each once */
		json_array_foreach(json_object_get(json_object_get(run, "placement"), "allocs"),
		    k, a) {
			json_t *nd = json_object_get(a, "node"), *x;
			size_t q;
			bool seen = false;

			json_array_foreach(nodes, q, x)
				seen = seen || json_equal(x, nd);
			if (json_is_string(nd) && !seen)
				json_array_append(nodes, nd);
		}
		json_object_set_new(run, "nodes", nodes);
		json_object_del(run, "placement");
		json_object_del(run, "started_epoch");
	}
	if (state == JOB_RUNNING)
		holds = "each run in runs holds one gang of the spec against the queue's quota "
		    "and the cluster's capacity while it runs; between runs the job holds nothing";
	else if (job_state_is_live(state))
		holds = "one gang of the spec until the cluster accepts the RayCronJob";
	else
		holds = "nothing: the job has ended";
	if (state != JOB_RUNNING)
		json_array_clear(runs);		/* counted only while the cron runs */
	json_object_set_new(out, "cron", json_pack("{s:s, s:o, s:s}", "concurrency_policy",
	    pol ? pol : "Forbid", "runs", runs, "holds", holds));
	return true;
}

static bool	explain_job_plain(struct db *c, json_t *job, json_t **out, struct err *e);

/* Why the job failed, or stalls, in one place (issue 24): on a failed job "failure" comes
 * first (the class, the pods, ranks and nodes, the evidence, whether it was retried); on any
 * other job that failed before "last_failure"; and "signals" holds the classified signals
 * of the current attempt (newest 20: why it stalls now); "waiting_for_spare" (first) when
 * a node under the job was lost and its domain has no spare (queue/follow/repair.c);
 * "postmortem" points at the records kept of its ended attempts (attempts, href, the
 * fleetctl command) when there is one.  Replaces *out. */
static bool
explain_failure(struct db *c, const char *id, enum job_state state, json_t **out,
    struct err *e)
{
	static const char sql[] = "SELECT (SELECT (v.data || jsonb_build_object('at', v.at,"
	    "  'summary', v.message))::text FROM job_events v WHERE v.job_id = $1::uuid"
	    "  AND v.type = 'failure' ORDER BY v.id DESC LIMIT 1),"
	    " (SELECT coalesce(jsonb_agg(x.d ORDER BY x.id), '[]'::jsonb)::text FROM (SELECT"
	    "  v.id, v.data - 'key' || jsonb_build_object('at', v.at) AS d FROM job_events v"
	    "  JOIN jobs j ON j.id = v.job_id AND j.attempt = v.attempt WHERE v.job_id = $1::uuid"
	    "  AND v.type = 'failure_signal' ORDER BY v.id DESC LIMIT 20) x),"
	    /* a lost node with no spare in its domain, while the placement still names it */
	    " (SELECT (v.data - 'key' || jsonb_build_object('at', v.at, 'summary', v.message))"
	    "  ::text FROM job_events v JOIN jobs j ON j.id = v.job_id AND j.attempt = v.attempt"
	    "  WHERE v.job_id = $1::uuid AND v.type = 'waiting_for_spare' AND j.state IN"
	    "  ('dispatched', 'running') AND EXISTS (SELECT 1 FROM jsonb_array_elements("
	    "  j.placement->'allocs') a WHERE a->>'node' = v.data->>'lost_node')"
	    "  ORDER BY v.id DESC LIMIT 1),"
	    /* the post-mortems kept of ended attempts: where to read them */
	    " (SELECT jsonb_build_object('attempts', jsonb_agg(jsonb_build_object('attempt',"
	    "  p.attempt, 'trigger', p.trigger, 'recorded_at', p.recorded_at) ORDER BY"
	    "  p.attempt DESC), 'href', '/v1/jobs/' || $1 || '/postmortem', 'command',"
	    "  'fleetctl jobs postmortem ' || $1)::text FROM job_postmortems p"
	    "  WHERE p.job_id = $1::uuid HAVING count(*) > 0)";
	const char *p[1] = { id };
	PGresult *r = NULL;
	json_t *f = NULL, *sig = NULL, *wait = NULL, *pm = NULL, *o;

	if (!db_exec(c, sql, 1, p, &r, e))
		return false;
	if (!PQgetisnull(r, 0, 0))
		f = json_loads(PQgetvalue(r, 0, 0), 0, NULL);
	sig = json_loads(PQgetvalue(r, 0, 1), 0, NULL);
	if (!PQgetisnull(r, 0, 2))
		wait = json_loads(PQgetvalue(r, 0, 2), 0, NULL);
	if (!PQgetisnull(r, 0, 3))
		pm = json_loads(PQgetvalue(r, 0, 3), 0, NULL);
	PQclear(r);
	o = json_object();
	if (f != NULL && state == JOB_FAILED)
		json_object_set(o, "failure", f);
	if (wait != NULL)	/* why it stalls: first */
		json_object_set(o, "waiting_for_spare", wait);
	json_object_update(o, *out);
	if (f != NULL && state != JOB_FAILED)
		json_object_set(o, "last_failure", f);
	if (json_array_size(sig) > 0)
		json_object_set(o, "signals", sig);
	if (pm != NULL)
		json_object_set(o, "postmortem", pm);
	json_decref(*out);
	*out = o;
	json_decref(f);
	json_decref(sig);
	json_decref(wait);
	json_decref(pm);
	return true;
}

/* Where the History Server shows the job's Ray cluster (its environment names log storage:
 * migration 0023; providers/kuberay_history.c): the session "live" while the attempt runs,
 * else the sessions list and the session path to fill in. */
static bool
explain_history(struct db *c, const char *id, enum job_state state, json_t *out,
    struct err *e)
{
	static const char sql[] = "SELECT e.history_server::text, j.manifest->'metadata'->>"
	    "'namespace', j.manifest->'metadata'->>'name', j.kind FROM jobs j JOIN environments e"
	    " ON e.name = j.environment WHERE j.id = $1::uuid AND e.history_server IS NOT NULL"
	    " AND j.manifest->'metadata'->>'name' IS NOT NULL";
	const char *p[1] = { id };
	PGresult *r = NULL;
	json_t *hs, *link;

	if (!db_exec(c, sql, 1, p, &r, e))
		return false;
	if (PQntuples(r) == 1 && (hs = json_loads(PQgetvalue(r, 0, 0), 0, NULL)) != NULL) {
		link = kuberay_history_link(hs, PQgetvalue(r, 0, 1), PQgetvalue(r, 0, 3),
		    PQgetvalue(r, 0, 2), state == JOB_RUNNING || state == JOB_DISPATCHED);
		if (link != NULL)
			json_object_set_new(out, "history_server", link);
		json_decref(hs);
	}
	PQclear(r);
	return true;
}

bool
explain_job(struct db *c, json_t *job, json_t **out, struct err *e)
{
	if (!explain_job_plain(c, job, out, e))
		return false;
	if (!explain_failure(c, json_string_value(json_object_get(job, "id")),
	    job_state_parse(json_string_value(json_object_get(job, "state"))), out, e) ||
	    !explain_history(c, json_string_value(json_object_get(job, "id")),
	    job_state_parse(json_string_value(json_object_get(job, "state"))), *out, e)) {
		json_decref(*out);
		*out = NULL;
		return false;
	}
	return true;
}

/* A placed job with a capacity preference (its own or its queue's): the scheduler's
 * verdict on migrating it now (queue/sched/sched_prefs.c), as out's "capacity_preference". */
static bool
explain_prefs(struct db *c, json_t *job, json_t *out, struct err *e)
{
	static const char sql[] = "SELECT capacity_preference IS NOT NULL FROM queues"
	    " WHERE id = $1::uuid";
	const char *p[1] = { json_string_value(json_object_get(job, "queue_id")) };
	json_t *cp = json_object_get(json_object_get(json_object_get(job, "spec"), "constraints"),
	    "capacity_preference");
	struct sched_model *m = NULL;
	struct sched_job *j;
	PGresult *r = NULL;
	bool want = cp != NULL;

	if (!want && p[0] != NULL) {
		if (!db_exec(c, sql, 1, p, &r, e))
			return false;
		want = PQntuples(r) == 1 && PQgetvalue(r, 0, 0)[0] == 't';
		PQclear(r);
	}
	if (!want)
		return true;
	if (!loader_model(c, json_string_value(json_object_get(job, "environment")),
	    cfg.snapshot_max_age_s, &m, e))
		return false;
	j = sched_model_find_job(m, json_string_value(json_object_get(job, "id")));
	if (j != NULL)
		json_object_set_new(out, "capacity_preference", sched_explain_prefs(m, j));
	sched_model_free(m);
	return true;
}

/* Why a grow request waits, from the scheduler's reason code (sched_reason_code). */
static const char *
grow_wait_detail(const char *code)
{
	static const struct { const char *code, *text; } t[] = {
		{ "over_quota", "the queue has no quota left for the growth: its nominal quota is "
		    "used and the cohort has nothing to lend" },
		{ "borrowing_limit", "the growth would take the queue past its borrowing limit" },
		{ "insufficient_capacity", "no node of the group's domain (its pool; its node or "
		    "racks under topology host, rack or pack) has room for the extra workers: the "
		    "growth waits for existing nodes there" },
		{ "topology_split", "the extra workers fit only outside the group's domain" },
		{ "reserved", "the room is held for an older job that waits" },
		{ "queue_blocked", "the queue is strict FIFO and an older job waits at its head" },
		{ "not_attempted", "the scheduler has not reached it yet" },
		{ "cordoned", "the job's cluster is cordoned: it takes no new work" },
		{ "stale", "the job's cluster's capacity snapshot is stale" },
		{ "not_ready", "the job's cluster is not ready" },
		{ "unreachable", "the job's cluster is unreachable" },
	};

	for (size_t i = 0; code != NULL && i < sizeof(t) / sizeof(t[0]); i++)
		if (strcmp(code, t[i].code) == 0)
			return t[i].text;
	return code == NULL ? "the scheduler has not decided on it yet" : "see the reason code";
}

/* Elastic growth of a placed job (issue 26, migration 0026): each autoscaled group's
 * admitted and desired replicas, its grow requests, and why a waiting one waits. */
static bool
explain_growth(struct db *c, const char *id, json_t *job, json_t *out, struct err *e)
{
	static const char sql[] = "SELECT g.grp, g.state, g.replicas, g.pods, g.desired,"
	    " g.reason, coalesce(g.placement, '{}')::text, g.id, g.by_job,"
	    " to_char(g.requested_at AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"')"
	    " FROM job_grows g JOIN jobs j ON j.id = g.job_id AND j.attempt = g.attempt"
	    " WHERE g.job_id = $1::uuid ORDER BY g.id";
	const char *p[1] = { id };
	PGresult *r = NULL;
	struct job_spec s;
	struct err se = { 0 };
	json_t *arr = json_array();
	bool ok = false;

	memset(&s, 0, sizeof(s));
	if (!jobspec_from_json(json_object_get(job, "spec"), &s, &se) || !db_exec(c, sql, 1, p,
	    &r, e)) {
		ok = !err_is_set(e);
		goto cleanup;
	}
	for (size_t gi = 0; gi < s.ngroups; gi++) {
		const struct jobspec_group *g = &s.groups[gi];
		int admitted = g->min_replicas, desired = g->min_replicas;
		json_t *grows = json_array(), *pending = json_null();

		if (!g->elastic || g->min_replicas >= g->max_replicas) {
			json_decref(grows);
			continue;
		}
		for (int i = 0; i < PQntuples(r); i++) {
			const char *st = PQgetvalue(r, i, 1);
			json_t *pl = json_loads(PQgetvalue(r, i, 6), 0, NULL), *nodes = json_array(), *a;
			size_t k;

			if (atoi(PQgetvalue(r, i, 0)) != (int)gi + 1) {
				json_decref(pl);
				json_decref(nodes);
				continue;
			}
			desired = atoi(PQgetvalue(r, i, 4));
			if (strcmp(st, "admitted") == 0)
				admitted += atoi(PQgetvalue(r, i, 2));
			json_array_foreach(json_object_get(pl, "allocs"), k, a)
				if (json_is_string(json_object_get(a, "node")))
					json_array_append(nodes, json_object_get(a, "node"));
			json_array_append_new(grows, json_pack("{s:I, s:s, s:i, s:i, s:s, s:o, s:s*}",
			    "id", (json_int_t)atoll(PQgetvalue(r, i, 7)), "state", st, "replicas",
			    atoi(PQgetvalue(r, i, 2)), "pods", atoi(PQgetvalue(r, i, 3)),
			    "requested_at", PQgetvalue(r, i, 9), "nodes", nodes, "shrunk_for",
			    PQgetisnull(r, i, 8) ? NULL : PQgetvalue(r, i, 8)));
			if (strcmp(st, "pending") == 0) {
				const char *why = PQgetisnull(r, i, 5) ? NULL : PQgetvalue(r, i, 5);

				json_decref(pending);
				pending = json_pack("{s:i, s:s*, s:s}", "replicas",
				    atoi(PQgetvalue(r, i, 2)), "reason", why, "detail",
				    grow_wait_detail(why));
			}
			json_decref(pl);
		}
		json_array_append_new(arr, json_pack("{s:s, s:i, s:i, s:i, s:i, s:o, s:o}", "group",
		    g->name, "min_replicas", g->min_replicas, "max_replicas", g->max_replicas,
		    "admitted_replicas", admitted, "desired_replicas", desired, "waiting", pending,
		    "grows", grows));
	}
	if (json_array_size(arr) > 0)
		json_object_set(out, "elastic", arr);
	ok = true;
cleanup:
	json_decref(arr);
	jobspec_cleanup(&s);
	PQclear(r);
	return ok;
}

static bool
explain_job_plain(struct db *c, json_t *job, json_t **out, struct err *e)
{
	const char *id = json_string_value(json_object_get(job, "id"));
	enum job_state state = job_state_parse(json_string_value(json_object_get(job, "state")));
	struct sched_model *m = NULL;
	struct sched_job *j;

	if (state != JOB_PENDING) {
		if (!explain_placed(c, id, job, out, e))
			return false;
		if (!job_state_is_final(state) && (!explain_prefs(c, job, *out, e) ||
		    !explain_growth(c, id, job, *out, e))) {
			json_decref(*out);
			*out = NULL;
			return false;
		}
		if (strcmp(json_string_value(json_object_get(job, "kind")) ?
		    json_string_value(json_object_get(job, "kind")) : "", "RayCronJob") == 0 &&
		    !explain_cron(c, id, job, *out, e)) {
			json_decref(*out);
			*out = NULL;
			return false;
		}
		return true;
	}
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

/* ---- GET /v1/queues/{id}/status: the scheduler's own view of a queue */

/* The part of q's nominal quota of flavor f that the cohort may lend (sched_index.c). */
static int64_t
lendable_of(const struct sched_queue *q, int f)
{
	int64_t nom = q->quota[f].nominal.v[SCHED_ACCEL], lend = q->quota[f].lend_limit.v[SCHED_ACCEL];

	if (!q->has_quota[f] || nom == SCHED_UNSET)
		return 0;
	return lend == SCHED_UNSET || lend > nom ? nom : lend;
}

/* What q does not use of the part it may lend (what the cohort can borrow from it). */
static int64_t
spare_of(const struct sched_queue *q, int f)
{
	int64_t nom = q->quota[f].nominal.v[SCHED_ACCEL], use = q->usage[f].v[SCHED_ACCEL];
	int64_t l = lendable_of(q, f), avail = nom - use;

	return avail <= 0 ? 0 : avail < l ? avail : l;
}

static int64_t
borrowed_of(const struct sched_queue *q, int f)
{
	int64_t nom = q->has_quota[f] ? q->quota[f].nominal.v[SCHED_ACCEL] : 0;

	if (nom == SCHED_UNSET)
		return 0;
	return q->usage[f].v[SCHED_ACCEL] > nom ? q->usage[f].v[SCHED_ACCEL] - nom : 0;
}

static json_t *
limit_json(int64_t v)
{
	return v == SCHED_UNSET ? json_null() : json_integer(v);
}

static json_t *
share_json(double s)
{
	return s >= 1e17 ? json_null() : json_real(s);
}

bool
explain_queue(struct db *c, const char *id, json_t **out, struct err *e)
{
	static const char sql_q[] = "SELECT environment FROM queues WHERE id = $1::uuid";
	static const char sql_p[] = "SELECT coalesce(j.reason, 'not_attempted'), count(*)"
	    " FROM jobs j WHERE j.queue_id = $1::uuid AND j.state = 'pending' GROUP BY 1 ORDER BY 1";
	const char *p[1] = { id };
	struct sched_model *m = NULL;
	struct sched_queue *q = NULL;
	PGresult *r = NULL;
	json_t *flavors = NULL, *by_reason = NULL, *peers = NULL;
	double share;
	int rank = 1, members = 0;
	long pending = 0;
	bool ok = false;

	*out = NULL;
	if (!db_uuid_ok(id))
		return err_set(e, 404, "queue.not_found", "queue not found");
	if (!db_exec(c, sql_q, 1, p, &r, e))
		return false;
	if (PQntuples(r) == 0) {
		PQclear(r);
		return err_set(e, 404, "queue.not_found", "queue not found");
	}
	if (!loader_model(c, PQgetvalue(r, 0, 0), cfg.snapshot_max_age_s, &m, e))
		goto cleanup;
	PQclear(r);
	r = NULL;
	for (size_t i = 0; i < m->n_queues && q == NULL; i++)
		if (strcmp(m->queues[i]->id, id) == 0)
			q = m->queues[i];
	if (q == NULL) {
		err_set(e, 404, "queue.not_found", "queue not found");
		goto cleanup;
	}
	flavors = json_array();
	for (int f = 0; f < m->n_flavors; f++) {
		int64_t nom, cohort_borrowed = 0, cohort_spare = 0, lent = 0, spare = spare_of(q, f);

		if (f == m->cpu_flavor || (!q->has_quota[f] && q->usage[f].v[SCHED_ACCEL] == 0))
			continue;
		nom = q->has_quota[f] ? q->quota[f].nominal.v[SCHED_ACCEL] : 0;
		/* What the cohort borrows is lent by the queues with spare lendable quota, in
		 * proportion to their spare (the scheduler pools it; it keeps no per-lender
		 * ledger). */
		for (size_t i = 0; i < m->n_queues; i++) {
			const struct sched_queue *o = m->queues[i];

			if (o->group != q->group)
				continue;
			cohort_borrowed += borrowed_of(o, f);
			cohort_spare += spare_of(o, f);
		}
		if (cohort_spare > 0 && spare > 0) {
			int64_t b = cohort_borrowed < cohort_spare ? cohort_borrowed : cohort_spare;

			lent = (b * spare + cohort_spare / 2) / cohort_spare;
		}
		json_array_append_new(flavors, json_pack("{s:s, s:I, s:I, s:I, s:I, s:o, s:o, s:I, s:I}",
		    "flavor", sched_model_name(m, m->flavor_name[f]),
		    "nominal", (json_int_t)(nom == SCHED_UNSET ? 0 : nom),
		    "usage", (json_int_t)q->usage[f].v[SCHED_ACCEL],
		    "borrowed", (json_int_t)borrowed_of(q, f),
		    "lent", (json_int_t)lent,
		    "borrowing_limit", limit_json(q->has_quota[f] ?
			q->quota[f].borrow_limit.v[SCHED_ACCEL] : SCHED_UNSET),
		    "lending_limit", limit_json(q->has_quota[f] ?
			q->quota[f].lend_limit.v[SCHED_ACCEL] : SCHED_UNSET),
		    "cohort_lendable", (json_int_t)m->cohorts[q->group].lendable[f].v[SCHED_ACCEL],
		    "cohort_borrowed", (json_int_t)cohort_borrowed));
	}
	/* fair share: the weighted dominant share the scheduler orders queues by (lower goes
	 * first), and where q stands among its cohort */
	share = sched_share(m, q, NULL, NULL);
	peers = json_array();
	for (size_t i = 0; i < m->n_queues; i++) {
		const struct sched_queue *o = m->queues[i];
		double s;

		if (o->group != q->group)
			continue;
		s = sched_share(m, o, NULL, NULL);
		members++;
		rank += s < share;
		json_array_append_new(peers, json_pack("{s:s, s:o}", "queue_id", o->id, "share",
		    share_json(s)));
	}
	if (!db_exec(c, sql_p, 1, p, &r, e))
		goto cleanup;
	by_reason = json_object();
	for (int i = 0; i < PQntuples(r); i++) {
		long n = atol(PQgetvalue(r, i, 1));

		pending += n;
		json_object_set_new(by_reason, PQgetvalue(r, i, 0), json_integer(n));
	}
	*out = json_pack("{s:s, s:s, s:o, s:f, s:o, s:{s:o, s:f, s:i, s:i, s:o}, s:{s:I, s:o}}",
	    "queue_id", id, "environment", sched_model_name(m, q->env),
	    "cohort", q->cohort < 0 ? json_null() : json_string(sched_model_name(m, q->cohort)),
	    "weight", q->weight, "flavors", flavors,
	    "fair_share", "share", share_json(share), "borrowed_ratio", q->ratio, "rank", rank,
	    "cohort_queues", members, "cohort", peers,
	    "pending", "total", (json_int_t)pending, "by_reason", by_reason);
	flavors = peers = by_reason = NULL;
	ok = *out != NULL;
	if (!ok)
		err_set(e, 500, "sched.explain", "cannot describe the queue");
cleanup:
	PQclear(r);
	json_decref(flavors);
	json_decref(peers);
	json_decref(by_reason);
	sched_model_free(m);
	return ok;
}
