/* move: the request side of moves (POST .../move, drains) — validation, planning on a fresh
 * model restricted to the target, the reservation (state 'moving' with jobs.move), and
 * drains as operations over many moves.  The background side is queue/change/mover.c. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <uuid/uuid.h>

#include "core/config.h"
#include "core/jsonx.h"
#include "queue/change/change.h"
#include "queue/jobs/job.h"
#include "queue/sched/loader.h"
#include "queue/sched/scheduler.h"
#include "regions/catalog.h"
#include "regions/cluster.h"

struct target {
	const char	*region;
	const char	*cloud_id;
	const char	*cluster_id;
	bool		 anywhere;	/* drains: any other cluster of the environment */
	bool		 evacuate;	/* "source": "unreachable": fence the source */
	bool		 same;		/* a lost rack: only the source cluster (another rack) */
	bool		 no_preempt;	/* free capacity only (a lost rack's same-cluster try) */
	json_t		*avoid;		/* node names of the source cluster never used */
	bool		 lost;		/* a lost rack: no checkpoint request (the gang is broken),
					 * the next attempt resumes from the last acknowledged one */
};

/* How the source cluster of a job answers its health checks. */
struct source_health {
	bool	failing;	/* refreshes fail (failing_since set) */
	bool	unreachable;	/* failed enough in a row to be marked unreachable */
	int	failing_s;	/* seconds since the first failure of the run */
	char	since[40];	/* RFC 3339 */
	char	name[64];
};

static bool
parse_body(json_t *body, struct target *t, const char **reason, bool *dry, struct err *e)
{
	static const char *const allowed[] = { "target", "reason", "dry_run", "source", NULL };
	static const char *const tallowed[] = { "region", "cloud_id", "cluster_id", NULL };
	const char *source = NULL;
	json_t *tj;
	int n = 0;

	memset(t, 0, sizeof(*t));
	*reason = "";
	*dry = false;
	if (!jsonx_only(body, allowed, "", e) || !jsonx_str(body, "reason", "", false, reason, e) ||
	    !jsonx_bool(body, "dry_run", "", false, dry, e) ||
	    !jsonx_str(body, "source", "", false, &source, e))
		return false;
	if (source != NULL && strcmp(source, "unreachable") != 0)
		return err_field(e, 400, "move.bad_source", "/source",
		    "source may only be \"unreachable\" (evacuate a source that fails its "
		    "health checks)");
	t->evacuate = source != NULL;
	tj = json_object_get(body, "target");
	if (!json_is_object(tj))
		return err_field(e, 400, "api.missing_field", "/target",
		    "target must be an object with region, cloud_id or cluster_id");
	if (!jsonx_only(tj, tallowed, "/target", e) ||
	    !jsonx_str(tj, "region", "/target", false, &t->region, e) ||
	    !jsonx_str(tj, "cloud_id", "/target", false, &t->cloud_id, e) ||
	    !jsonx_str(tj, "cluster_id", "/target", false, &t->cluster_id, e))
		return false;
	n = (t->region != NULL) + (t->cloud_id != NULL) + (t->cluster_id != NULL);
	if (n != 1)
		return err_field(e, 400, "move.bad_target", "/target",
		    "target names exactly one of region, cloud_id or cluster_id");
	if (*reason != NULL && strlen(*reason) > 512)
		return err_field(e, 400, "move.bad_reason", "/reason",
		    "reason must be at most 512 characters");
	return true;
}

/* 400 naming the regions where env has clusters (the valid targets of a move). */
static bool
unknown_region(struct db *c, const char *env, const char *region, struct err *e)
{
	static const char sql[] = "SELECT coalesce(string_agg(DISTINCT c.region, ', '"
	    " ORDER BY c.region), '') FROM clusters k JOIN clouds c ON c.id = k.cloud_id"
	    " WHERE c.environment = $1";
	const char *p[1] = { env };
	struct err qe = { 0 };
	PGresult *r = NULL;

	if (!db_exec(c, sql, 1, p, &r, &qe)) {
		*e = qe;
		return false;
	}
	err_field(e, 400, "move.unknown_region", "/target/region",
	    "%.64s is not a region of gke, aks or hyperpod", region);
	if (PQgetvalue(r, 0, 0)[0] != '\0')
		err_detail(e, "Environment %.64s has clusters in: %.300s.", env, PQgetvalue(r, 0, 0));
	else
		err_detail(e, "Environment %.64s has no clusters yet.", env);
	PQclear(r);
	return false;
}

/* Fills the set of target cluster ids, looked up in the job's environment only: a cluster
 * or cloud of another environment is not found (404), the same answer as one that does
 * not exist, so a move tells nothing about other environments. */
static bool
target_clusters(struct db *c, const char *env, const struct target *t, json_t **ids,
		struct err *e)
{
	static const char sql[] = "SELECT k.id::text, c.environment, k.cordoned, c.region"
	    " FROM clusters k JOIN clouds c ON c.id = k.cloud_id"
	    " WHERE ($1::text IS NULL OR c.region = $1) AND ($2::text IS NULL OR"
	    " c.id::text = $2) AND ($3::text IS NULL OR k.id::text = $3) AND c.environment = $4";
	const char *p[4] = { t->region, t->cloud_id, t->cluster_id, env };
	PGresult *r = NULL;
	bool ok = false;

	if (t->region != NULL && !catalog_region_valid("gke", t->region) &&
	    !catalog_region_valid("aks", t->region) && !catalog_region_valid("hyperpod", t->region))
		return unknown_region(c, env, t->region, e);
	if (!db_exec(c, sql, 4, p, &r, e))
		return false;
	*ids = json_array();
	for (int i = 0; i < PQntuples(r); i++) {
		if (t->cluster_id != NULL && PQgetvalue(r, i, 2)[0] == 't') {
			err_field(e, 409, "cluster.cordoned", "/target/cluster_id",
			    "the target cluster is cordoned");
			goto cleanup;
		}
		json_array_append_new(*ids, json_string(PQgetvalue(r, i, 0)));
	}
	if (json_array_size(*ids) == 0 && (t->cluster_id != NULL || t->cloud_id != NULL)) {
		err_field(e, 404, t->cluster_id ? "cluster.not_found" : "cloud.not_found",
		    t->cluster_id ? "/target/cluster_id" : "/target/cloud_id", "target not found");
		err_detail(e, "Moves stay in the job's environment: no %s with this id there.",
		    t->cluster_id ? "cluster" : "cloud");
		goto cleanup;
	}
	ok = true;
cleanup:
	if (!ok) {
		json_decref(*ids);
		*ids = NULL;
	}
	PQclear(r);
	return ok;
}

static bool
in_set(json_t *ids, const char *id)
{
	size_t i;
	json_t *v;

	json_array_foreach(ids, i, v)
		if (strcmp(json_string_value(v), id) == 0)
			return true;
	return false;
}

/* When nothing at the target is free: the scheduler's preemption plan for a move
 * (sched_preempt_plan).  Fills pl with the target and *victims with their ids. */
static bool
preempt_plan(struct sched_model *m, struct sched_job *j, struct arena *a,
	     struct sched_placement *pl, json_t **victims)
{
	struct sched_preemption pp;

	sched_release(m, j);	/* what it holds at the source is not held against it */
	if (!sched_preempt_plan(m, j, SCHED_PREEMPT_MOVE, a, &pp))
		return false;
	*victims = json_array();
	for (size_t i = 0; i < pp.n_victims; i++)
		json_array_append_new(*victims, json_string(sched_model_job(m,
		    (size_t)pp.victims[i])->id));
	pl->cluster = pp.cluster;
	pl->allocs = pp.allocs;
	pl->n_allocs = pp.n_allocs;
	return true;
}

/* Whether cluster id is outside the target: anything but the source when t->same, else
 * the source and (unless anywhere) every cluster not in ids. */
static bool
outside(const struct target *t, json_t *ids, const char *src, const char *id)
{
	bool is_src = src != NULL && strcmp(id, src) == 0;

	if (t->same)
		return !is_src;
	return is_src || (!t->anywhere && !in_set(ids, id));
}

/* Places j on the model restricted to ids (all but the source when anywhere; only the
 * source, off the nodes t->avoid names, when same). */
static bool
plan(struct db *c, json_t *job, const struct target *t, json_t *ids, json_t **planj,
     json_t **reasons, struct err *e)
{
	const char *env = json_string_value(json_object_get(job, "environment"));
	const char *src = json_string_value(json_object_get(job, "cluster_id"));
	struct sched_model *m = NULL;
	struct sched_placement pl;
	struct arena *a = arena_new();
	json_t *pools = NULL, *to = NULL, *from = json_object_get(job, "placement");
	json_t *victims = NULL;
	struct sched_job *j;
	bool ok = false;

	if (!loader_model_plan(c, env, cfg.snapshot_max_age_s, &m, &pools, e))
		goto cleanup;
	j = sched_model_find_job(m, json_string_value(json_object_get(job, "id")));
	if (j == NULL) {
		err_set(e, 409, "move.not_loaded", "the job cannot be planned now; retry");
		goto cleanup;
	}
	for (size_t i = 0; i < sched_model_n_clusters(m); i++) {
		struct sched_cluster *k = sched_model_cluster(m, i);

		if (outside(t, ids, src, k->id))
			k->cordoned = true;	/* outside the target: not a candidate */
	}
	if (t->avoid != NULL && src != NULL) {
		size_t i;
		json_t *v;

		json_array_foreach(t->avoid, i, v)
			if (json_is_string(v))
				sched_job_avoid_node(m, j, src, json_string_value(v));
	}
	/* on its own cluster the job's room is its own again: the source is stopped before
	 * the target is applied (the mover; never used for a RayService, whose target is up
	 * first) */
	if (t->same)
		sched_release(m, j);
	*reasons = json_array();
	if (!sched_place(m, j, SCHED_R_CHOSEN, a, &pl) &&
	    (t->no_preempt || !preempt_plan(m, j, a, &pl, &victims))) {
		for (size_t i = 0; i < pl.n_cands; i++) {
			struct sched_cluster *k = sched_model_cluster(m, (size_t)pl.cands[i].cluster);

			if (outside(t, ids, src, k->id))
				continue;
			json_array_append_new(*reasons, json_pack("{s:s, s:s, s:s}", "cluster",
			    k->id, "region", sched_model_name(m, k->region), "reason",
			    sched_reason_code(pl.cands[i].reason)));
		}
		err_set(e, 409, "move.no_capacity", "the target cannot hold the job; nothing changed");
		err_detail(e, "%zu candidate clusters in the target, none fits (see reasons).",
		    json_array_size(*reasons));
		goto cleanup;
	}
	to = scheduler_placement_json(m, &pl, pools);
	*planj = json_pack("{s:O, s:O, s:O, s:f, s:o}", "job_id", json_object_get(job, "id"),
	    "from", from ? from : json_null(), "to", to, "price_difference_per_hour",
	    json_real_value(json_object_get(to, "price_hour")) -
	    (from ? json_number_value(json_object_get(from, "price_hour")) : 0.0), "would_preempt",
	    victims ? victims : json_array());
	victims = NULL;
	ok = true;
cleanup:
	json_decref(victims);
	json_decref(to);
	json_decref(pools);
	sched_model_free(m);
	arena_free(a);
	return ok;
}

static bool
check_state(json_t *job, struct err *e)
{
	const char *name = json_string_value(json_object_get(job, "state"));
	enum job_state state = job_state_parse(name);

	if (job_state_is_final(state))
		return err_set(e, 409, "job.finished", "the job already ended (%s)", name);
	if (state == JOB_PENDING || state == JOB_PREEMPTED)
		return err_set(e, 409, "job.not_placed", "the job is not placed; it will start "
		    "where it fits (use constraints.regions to steer it)");
	if (state == JOB_MOVING)
		return err_set(e, 409, "job.moving", "a move of this job is already in progress");
	return true;
}

/* Health of the cluster the job is placed on (all false when it has none). */
static bool
source_health_get(struct db *c, json_t *job, struct source_health *h, struct err *e)
{
	static const char sql[] = "SELECT failing_since IS NOT NULL, state = 'unreachable',"
	    " coalesce(extract(epoch from now() - failing_since)::int, 0),"
	    " coalesce(to_char(failing_since AT TIME ZONE 'UTC',"
	    "  'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"'), ''), name FROM clusters WHERE id = $1::uuid";
	const char *p[1] = { json_string_value(json_object_get(job, "cluster_id")) };
	PGresult *r = NULL;

	memset(h, 0, sizeof(*h));
	if (p[0] == NULL)
		return true;
	if (!db_exec(c, sql, 1, p, &r, e))
		return false;
	if (PQntuples(r) == 1) {
		h->failing = PQgetvalue(r, 0, 0)[0] == 't';
		h->unreachable = PQgetvalue(r, 0, 1)[0] == 't';
		h->failing_s = atoi(PQgetvalue(r, 0, 2));
		snprintf(h->since, sizeof(h->since), "%s", PQgetvalue(r, 0, 3));
		snprintf(h->name, sizeof(h->name), "%s", PQgetvalue(r, 0, 4));
	}
	PQclear(r);
	return true;
}

/* Whether this move fences its source: refuses a move from an unreachable source without
 * the flag (saying since when, and offering it), and the flag on a healthy source. */
static bool
source_check(const struct target *t, const struct source_health *h, bool *fence,
	     struct err *e)
{
	bool allowed = h->failing && h->failing_s >= cfg.evacuate_after_s;

	*fence = false;
	if (!t->evacuate) {
		if (!h->unreachable)
			return true;
		err_set(e, 409, "move.source_unreachable", "the source cluster is unreachable");
		err_detail(e, "Cluster %.64s has failed its health checks since %s (%d s). Retry "
		    "with \"source\": \"unreachable\" (fleetctl --source-unreachable) to evacuate: "
		    "the attempt there is abandoned, the job restarts at the target from its last "
		    "acknowledged checkpoint, and the object left there is deleted when the "
		    "cluster returns%s.", h->name, h->since, h->failing_s, allowed ? "" :
		    " (allowed once it has failed for FLEETD_EVACUATE_AFTER seconds)");
		return false;
	}
	if (allowed) {
		*fence = true;
		return true;
	}
	if (t->anywhere)
		return true;	/* a drain with the flag moves reachable sources normally */
	if (!h->failing)
		return err_field(e, 409, "move.source_reachable", "/source",
		    "the source cluster %.64s answers its health checks; move it normally",
		    h->name);
	err_field(e, 409, "move.evacuate_too_soon", "/source",
	    "the source cluster has failed its health checks for %d s only", h->failing_s);
	err_detail(e, "Cluster %.64s fails since %s; evacuation is allowed after %d s of failed "
	    "health checks (FLEETD_EVACUATE_AFTER).", h->name, h->since, cfg.evacuate_after_s);
	return false;
}

/* Fences the source attempt of a job about to be evacuated: its object is recorded as an
 * orphan (deleted by the sweep when the cluster returns) and the history says so. */
static bool
fence_source(struct db *c, json_t *job, const struct source_health *h, struct err *e)
{
	static const char sql[] = "INSERT INTO orphans (cluster_id, job_id, attempt, kind,"
	    " namespace, name, reason) SELECT cluster_id, id, attempt, kind,"
	    " coalesce(manifest->'metadata'->>'namespace', ''), object_name, 'abandoned'"
	    " FROM jobs WHERE id = $1::uuid AND object_name IS NOT NULL AND cluster_id IS NOT NULL"
	    " ON CONFLICT (cluster_id, kind, namespace, name) DO UPDATE SET state = 'pending',"
	    " reason = 'abandoned', resolved_at = NULL, job_id = EXCLUDED.job_id,"
	    " attempt = EXCLUDED.attempt, found_at = now()";
	const char *id = json_string_value(json_object_get(job, "id"));
	const char *p[1] = { id };
	json_t *data = json_pack("{s:O, s:O, s:s, s:s}", "cluster_id",
	    json_object_get(job, "cluster_id"), "attempt", json_object_get(job, "attempt"),
	    "cluster", h->name, "unreachable_since", h->since);
	char msg[256];
	bool ok;

	snprintf(msg, sizeof(msg), "attempt %lld at %s abandoned: the cluster is unreachable "
	    "since %s", (long long)json_integer_value(json_object_get(job, "attempt")), h->name,
	    h->since);
	ok = db_exec(c, sql, 1, p, NULL, e) && job_event(c, id, "fenced", msg, data, e);
	json_decref(data);
	return ok;
}

/* Preempts exactly the plan's victims (ids), as the scheduler does (scheduler_preempt);
 * 409 when one of them is no longer placed (the plan is stale: nothing changes). */
static bool
preempt_victims(struct db *c, const char *by, json_t *victims, struct err *e)
{
	json_t *rows = json_array(), *v;
	char *text = NULL;
	size_t i, n = 0;
	bool ok = false;

	if (json_array_size(victims) == 0) {
		json_decref(rows);
		return true;
	}
	json_array_foreach(victims, i, v)
		json_array_append_new(rows, json_pack("{s:O, s:s}", "id", v, "by", by));
	text = json_dumps(rows, JSON_COMPACT);
	if (!scheduler_preempt(c, text, SCHED_PREEMPT_MOVE, &n, e))
		goto cleanup;
	if (n != json_array_size(victims)) {
		err_set(e, 409, "move.plan_changed", "a job the move would preempt changed state;"
		    " retry");
		goto cleanup;
	}
	ok = true;	/* the status worker signals, waits the grace, deletes and requeues */
cleanup:
	free(text);
	json_decref(rows);
	return ok;
}

/* Commits the reservation: the mover carries out the rest. */
static bool
reserve(struct db *c, json_t *job, json_t *planj, const char *reason, const char *operation,
	const struct actor *who, const struct source_health *fence, bool lost, struct err *e)
{
	static const char sql_admitted[] = "UPDATE jobs SET cluster_id = ($2::jsonb->>'cluster')::uuid,"
	    " placement = $2::jsonb, version = version + 1, updated_at = now(), next_try_at = now()"
	    " WHERE id = $1::uuid AND state = 'admitted' AND claimed_by IS NULL RETURNING 1";
	static const char sql_move[] = "UPDATE jobs SET move = jsonb_build_object('operation', $3::text,"
	    " 'reason', $4::text, 'requested_by', $5::text, 'started_at', now(), 'phase', 'reserved',"
	    " 'from', jsonb_build_object('cluster_id', cluster_id, 'object_name', object_name,"
	    " 'attempt', attempt, 'placement', placement, 'fenced', $6::boolean), 'to', $2::jsonb,"
	    " 'resume_from', CASE WHEN $6::boolean OR $7::boolean THEN coalesce(checkpoint->>'uri',"
	    " spec->'checkpoint'->>'uri') END, 'no_checkpoint_request', $7::boolean),"
	    " next_try_at = now() WHERE id = $1::uuid";
	const char *id = json_string_value(json_object_get(job, "id"));
	enum job_state state = job_state_parse(json_string_value(json_object_get(job, "state")));
	char *to = json_dumps(json_object_get(planj, "to"), JSON_COMPACT);
	const char *p[7] = { id, to, operation, reason, who->name, fence ? "true" : "false",
	    lost ? "true" : "false" };
	PGresult *r = NULL;
	bool ok = false;

	if (!preempt_victims(c, id, json_object_get(planj, "would_preempt"), e))
		goto cleanup;
	if (state == JOB_ADMITTED && fence == NULL) {
		if (!db_exec(c, sql_admitted, 2, p, &r, e))
			goto cleanup;
		if (PQntuples(r) == 1) {
			ok = job_event(c, id, "moved", "re-placed before dispatch", planj, e);
			goto cleanup;
		}
		/* a dispatcher holds it: move it like a dispatched one */
	}
	if (fence != NULL && !fence_source(c, job, fence, e))
		goto cleanup;
	ok = db_exec(c, sql_move, 7, p, NULL, e) &&
	    job_transition(c, id, "admitted,dispatched,running", "moving",
	    reason && *reason ? reason : "move requested", planj, e);
cleanup:
	PQclear(r);
	free(to);
	return ok;
}

/* Adds to a job.moving refusal where that move is: phase, target, operation. */
static void
moving_detail(struct db *c, const char *id, struct err *e)
{
	static const char sql[] = "SELECT coalesce(move->>'phase', ''), coalesce(move->'to'->>"
	    "'cluster_name', move->'to'->>'cluster', ''), coalesce(move->>'operation', '')"
	    " FROM jobs WHERE id = $1::uuid";
	const char *p[1] = { id };
	struct err qe = { 0 };
	PGresult *r = NULL;

	if (db_exec(c, sql, 1, p, &r, &qe) && PQntuples(r) == 1)
		err_detail(e, "The move to %.64s is in phase %.32s%s%.40s.", PQgetvalue(r, 0, 1),
		    PQgetvalue(r, 0, 0), PQgetvalue(r, 0, 2)[0] ? ", part of operation " : "",
		    PQgetvalue(r, 0, 2));
	PQclear(r);
}

static bool
request_target(struct db *c, const struct actor *who, json_t *job, const struct target *t,
	       const char *reason, bool dry, const char *operation, json_t **out, json_t **reasons,
	       struct err *e)
{
	const char *env = json_string_value(json_object_get(job, "environment"));
	json_t *ids = NULL, *planj = NULL;
	struct source_health h;
	bool fence, ok = false;

	if (!check_state(job, e)) {
		if (strcmp(e->code, "job.moving") == 0)
			moving_detail(c, json_string_value(json_object_get(job, "id")), e);
		return false;
	}
	/* an admitted job not yet applied is simply placed again (reserve) */
	fence = false;
	memset(&h, 0, sizeof(h));
	if (job_state_parse(json_string_value(json_object_get(job, "state"))) != JOB_ADMITTED &&
	    (!source_health_get(c, job, &h, e) || !source_check(t, &h, &fence, e)))
		return false;
	if (!t->anywhere && !t->same && !target_clusters(c, env, t, &ids, e))
		return false;
	if (!t->anywhere && !t->same && json_array_size(ids) == 0) {
		*reasons = json_array();
		err_field(e, 409, "move.no_capacity", "/target/region",
		    "environment %s has no cluster in %s", env, t->region);
		goto cleanup;
	}
	if (!plan(c, job, t, ids, &planj, reasons, e))
		goto cleanup;
	if (fence)
		json_object_set_new(planj, "source", json_pack("{s:s, s:s, s:s, s:i}", "state",
		    "unreachable", "cluster", h.name, "unreachable_since", h.since,
		    "abandoned_attempt", (int)json_integer_value(json_object_get(job, "attempt"))));
	if (dry) {
		*out = json_incref(planj);
		ok = true;
		goto cleanup;
	}
	if (!reserve(c, job, planj, reason, operation, who, fence ? &h : NULL, t->lost, e))
		goto cleanup;
	*out = json_pack("{s:O}", "plan", planj);
	ok = true;
cleanup:
	json_decref(ids);
	json_decref(planj);
	return ok;
}

bool
move_request(struct db *c, const struct actor *who, const char *job_id, json_t *body,
	     const char *operation, json_t **out, json_t **reasons, struct err *e)
{
	struct target t;
	const char *reason;
	json_t *job = NULL;
	bool dry, ok;

	*reasons = NULL;
	if (!parse_body(body, &t, &reason, &dry, e) || !job_get(c, job_id, true, &job, e))
		return false;
	ok = request_target(c, who, job, &t, reason, dry, operation, out, reasons, e);
	json_decref(job);
	return ok;
}

/* Adds the lost rack's nodes to the job's avoid_nodes (never used by a later attempt,
 * as a failure's nodes: queue/follow/status_act.c). */
static bool
avoid_rack(struct db *c, json_t *job, json_t *rack_nodes, struct err *e)
{
	static const char sql[] = "UPDATE jobs SET avoid_nodes = coalesce(avoid_nodes,"
	    " '[]'::jsonb) || $2::jsonb WHERE id = $1::uuid";
	json_t *rows = json_array(), *v;
	const char *src = json_string_value(json_object_get(job, "cluster_id"));
	char *txt;
	size_t i;
	bool ok;

	json_array_foreach(rack_nodes, i, v)
		if (src != NULL && json_is_string(v))
			json_array_append_new(rows, json_pack("{s:s, s:O}", "cluster_id", src,
			    "node", v));
	txt = json_dumps(rows, JSON_COMPACT);
	{
		const char *p[2] = { json_string_value(json_object_get(job, "id")), txt };

		ok = json_array_size(rows) == 0 || (txt != NULL && db_exec(c, sql, 2, p, NULL, e));
	}
	free(txt);
	json_decref(rows);
	return ok;
}

/* A rack-topology job whose rack is lost (no spare left in it, queue/follow/repair.c):
 * moved by fleetd itself, first to another rack of its own cluster (free capacity only, off
 * the lost rack and the nodes down now), else as a drain moves a job, anywhere but its
 * source cluster.  A RayService (one object name across attempts, the target up before the
 * source goes) is not re-placed on its own cluster. */
bool
move_rack_lost(struct db *c, const char *job_id, const char *reason, json_t *rack_nodes,
	       json_t *down_nodes, json_t **plan, bool *same, struct err *e)
{
	struct target t = { .same = true, .no_preempt = true, .lost = true };
	struct actor who;
	json_t *job = NULL, *reasons = NULL, *out = NULL, *avoid = json_array();
	const char *kind;
	bool ok = false;

	memset(&who, 0, sizeof(who));
	snprintf(who.name, sizeof(who.name), "fleetd (rack lost)");
	*plan = NULL;
	*same = false;
	if (rack_nodes != NULL)
		json_array_extend(avoid, rack_nodes);
	if (down_nodes != NULL)
		json_array_extend(avoid, down_nodes);
	t.avoid = avoid;
	if (!job_get(c, job_id, true, &job, e))
		goto cleanup;
	kind = json_string_value(json_object_get(job, "kind"));
	if (!avoid_rack(c, job, rack_nodes, e))
		goto cleanup;
	if (kind == NULL || strcmp(kind, "RayService") != 0) {
		ok = request_target(c, &who, job, &t, reason, false, NULL, &out, &reasons, e);
		*same = ok;
		if (!ok && strcmp(e->code, "move.no_capacity") != 0)
			goto cleanup;
	}
	if (!ok) {
		struct target other = { .anywhere = true, .lost = true };

		err_clear(e);
		json_decref(reasons);
		reasons = NULL;
		ok = request_target(c, &who, job, &other, reason, false, NULL, &out, &reasons, e);
	}
	if (ok)
		*plan = json_incref(json_object_get(out, "plan"));
cleanup:
	json_decref(out);
	json_decref(job);
	json_decref(reasons);
	json_decref(avoid);
	return ok;
}

/* ---- drains */

/* An operation's state: a running one is succeeded or failed once no job waits or moves. */
#define OP_STATE "CASE WHEN o.state = 'running' AND NOT EXISTS (SELECT 1" \
    "  FROM operation_jobs x WHERE x.operation_id = o.id AND x.state IN ('waiting', 'moving'))" \
    "  THEN CASE WHEN EXISTS (SELECT 1 FROM operation_jobs x WHERE x.operation_id = o.id AND" \
    "  x.state = 'failed') THEN 'failed' ELSE 'succeeded' END ELSE o.state END"

/* Every member of an operation but its jobs (names beside ids: the drained cluster's and
 * each failed job's). */
#define OP_HEAD "'id', o.id, 'kind', o.kind, 'environment', o.environment," \
    " 'target', o.target, 'cluster_name', (SELECT k.name FROM clusters k WHERE" \
    "  k.id::text = o.target->>'cluster_id'), 'state', " OP_STATE "," \
    " 'total', (SELECT count(*) FROM operation_jobs x WHERE x.operation_id = o.id)," \
    " 'moved', (SELECT count(*) FROM operation_jobs x WHERE x.operation_id = o.id AND x.state = 'moved')," \
    " 'waiting', (SELECT count(*) FROM operation_jobs x WHERE x.operation_id = o.id AND x.state IN ('waiting', 'moving'))," \
    " 'failed', (SELECT count(*) FROM operation_jobs x WHERE x.operation_id = o.id AND x.state = 'failed')," \
    " 'failures', coalesce((SELECT json_agg(json_build_object('job_id', x.job_id, 'name', j.name," \
    "  'reason', x.reason)) FROM operation_jobs x JOIN jobs j ON j.id = x.job_id" \
    "  WHERE x.operation_id = o.id AND x.state = 'failed'), '[]'::json)," \
    " 'created_by', o.created_by, 'created_at', o.created_at, 'updated_at', o.updated_at"

static const char sql_op_json[] =
    "SELECT json_build_object(" OP_HEAD ","
    " 'jobs', coalesce((SELECT json_agg(json_build_object('job_id', x.job_id, 'name', j.name,"
    "  'state', x.state, 'job_state', j.state, 'phase', j.move->>'phase', 'to_cluster',"
    "  j.move->'to'->>'cluster_name', 'waiting_for', CASE WHEN x.state = 'waiting' THEN"
    "  coalesce(x.reason_code, 'unknown') WHEN x.state = 'moving' THEN CASE j.move->>'phase'"
    "  WHEN 'reserved' THEN 'checkpoint_pending' WHEN 'checkpointing' THEN 'checkpoint_pending'"
    "  WHEN 'applied' THEN 'target_ready' ELSE 'target_apply' END END, 'reason', x.reason,"
    "  'updated_at', x.updated_at) ORDER BY j.priority DESC, j.enqueued_at)"
    "  FROM operation_jobs x JOIN jobs j ON j.id = x.job_id WHERE x.operation_id = o.id),"
    "  '[]'::json))::text"
    " FROM operations o WHERE o.id = $1::uuid";

bool
move_operation_list(struct db *c, int limit, const char *after, const char *state,
		    const char *environment, const char *team, const char *const *envs, int nenvs,
		    json_t **out, struct err *e)
{
	static const char sql[] =
	    "SELECT json_build_object(" OP_HEAD ")::text FROM operations o"
	    " WHERE ($1 = '' OR (o.created_at, o.id) < (SELECT p.created_at, p.id"
	    "  FROM operations p WHERE p.id = $1::uuid))"
	    " AND ($3::text IS NULL OR (" OP_STATE ") = $3)"
	    " AND ($4::text IS NULL OR o.environment = $4)"
	    " AND ($5::text IS NULL OR o.target->>'team' = $5)"
	    " AND ($6::text[] IS NULL OR o.environment = ANY($6::text[]))"
	    " ORDER BY o.created_at DESC, o.id DESC LIMIT $2";
	static const char *const states[] = { "running", "succeeded", "failed", "cancelled", NULL };
	static const char *const none[1] = { NULL };	/* no environment: no row */
	const char *p[3] = { state, environment, team };
	bool known = state == NULL;

	for (int i = 0; !known && states[i] != NULL; i++)
		known = strcmp(state, states[i]) == 0;
	if (!known)
		return err_field(e, 400, "api.bad_query", "/query/state",
		    "state must be running, succeeded, failed or cancelled");
	return db_list_page(c, sql, limit, after, DB_CURSOR_UUID, p, 3,
	    envs != NULL ? envs : none, envs != NULL ? nenvs : 0, out, e);
}

bool
move_operation_get(struct db *c, const char *id, json_t **out, struct err *e)
{
	return db_get_id_json(c, sql_op_json, id, "operation.not_found", "operation", out, e);
}

bool
move_operation_cancel(struct db *c, const char *id, json_t **out, struct err *e)
{
	static const char sql[] = "UPDATE operations SET state = 'cancelled', cancel_requested = true,"
	    " version = version + 1, updated_at = now() WHERE id = $1::uuid AND state = 'running'";
	static const char sql_jobs[] = "UPDATE operation_jobs SET state = 'cancelled',"
	    " updated_at = now() WHERE operation_id = $1::uuid AND state = 'waiting'";
	const char *p[1] = { id };

	if (!move_operation_get(c, id, out, e))
		return false;
	json_decref(*out);
	*out = NULL;
	return db_exec(c, sql, 1, p, NULL, e) && db_exec(c, sql_jobs, 1, p, NULL, e) &&
	    move_operation_get(c, id, out, e);
}

/* Why a job of a drain waits, in a word: no_capacity, quota, cordoned_target,
 * source_unreachable, or the error code. */
static const char *
wait_code(const struct err *me, json_t *reasons)
{
	size_t i, quota = 0, cordoned = 0, n = json_array_size(reasons);
	json_t *r;

	if (strcmp(me->code, "move.no_capacity") == 0) {
		json_array_foreach(reasons, i, r) {
			const char *why = json_string_value(json_object_get(r, "reason"));

			why = why ? why : "";
			quota += strcmp(why, "over_quota") == 0 || strcmp(why, "borrowing_limit") == 0;
			cordoned += strcmp(why, "cordoned") == 0;
		}
		if (n > 0 && quota == n)
			return "quota";
		return n > 0 && cordoned == n ? "cordoned_target" : "no_capacity";
	}
	if (strcmp(me->code, "cluster.cordoned") == 0)
		return "cordoned_target";
	if (strncmp(me->code, "move.source_", 12) == 0 || strcmp(me->code,
	    "move.evacuate_too_soon") == 0)
		return "source_unreachable";
	return me->code[0] ? me->code : "unknown";
}

/* Tries to move one job of a drain anywhere else; records how it went in operation_jobs
 * (insert the first time, update on retries).  A job that cannot be planned leaves no
 * trace but its reason (savepoint). */
static bool
drain_one(struct db *c, const struct actor *who, const char *op, const char *jid, bool first,
	  bool evacuate, struct err *e)
{
	static const char sql_ins[] = "INSERT INTO operation_jobs (operation_id, job_id, state,"
	    " reason, reason_code) VALUES ($1::uuid, $2::uuid, $3, $4, $5)";
	static const char sql_upd[] = "UPDATE operation_jobs SET state = $3, reason = $4,"
	    " reason_code = $5, updated_at = now() WHERE operation_id = $1::uuid"
	    " AND job_id = $2::uuid";
	struct target t = { .anywhere = true, .evacuate = evacuate };
	json_t *job = NULL, *res = NULL, *reasons = NULL, *now = NULL;
	struct err me = { 0 };
	bool moved, done = false, ok = false;

	if (!job_get(c, jid, true, &job, e))
		return false;
	if (!db_exec(c, "SAVEPOINT drain_one", 0, NULL, NULL, e))
		goto cleanup;
	moved = request_target(c, who, job, &t, "drain", false, op, &res, &reasons, &me);
	if (!moved && !db_exec(c, "ROLLBACK TO SAVEPOINT drain_one", 0, NULL, NULL, e))
		goto cleanup;
	/* An admitted job is re-placed at once; a running one moves in steps.  Each move of
	 * a drain is in the audit log like a move of its own. */
	if (moved) {
		if (!job_get(c, jid, false, &now, e) || !audit_write(c, who, "job.move", "job", jid,
		    json_string_value(json_object_get(job, "environment")), job, now, e))
			goto cleanup;
		done = job_state_parse(json_string_value(json_object_get(now, "state"))) ==
		    JOB_ADMITTED;
	}
	{
		const char *p[5] = { op, jid, done ? "moved" : moved ? "moving" : "waiting",
		    moved ? NULL : me.detail[0] ? me.detail : me.msg,
		    moved ? NULL : wait_code(&me, reasons) };

		if (!db_exec(c, first ? sql_ins : sql_upd, 5, p, NULL, e))
			goto cleanup;
	}
	ok = true;
cleanup:
	json_decref(job);
	json_decref(res);
	json_decref(reasons);
	json_decref(now);
	return ok;
}

bool
move_retry_waiting(struct db *c, const struct actor *who, int *tried, struct err *e)
{
	static const char sql[] = "SELECT x.operation_id::text, x.job_id::text,"
	    " coalesce(o.target->>'source', '') = 'unreachable' FROM operation_jobs x"
	    " JOIN operations o ON o.id = x.operation_id JOIN jobs j ON j.id = x.job_id"
	    " WHERE x.state = 'waiting' AND o.state = 'running' AND NOT o.cancel_requested"
	    " AND x.updated_at < now() - interval '5 seconds' ORDER BY x.updated_at LIMIT 16"
	    " FOR UPDATE OF x SKIP LOCKED";
	static const char sql_gone[] = "UPDATE operation_jobs x SET state = 'moved', reason ="
	    " 'no longer on the drained cluster', updated_at = now() FROM jobs j"
	    " WHERE j.id = x.job_id AND x.state = 'waiting' AND j.state NOT IN ('admitted',"
	    " 'dispatched', 'running', 'moving')";
	PGresult *r = NULL;
	bool ok = false;

	*tried = 0;
	if (!db_exec(c, sql_gone, 0, NULL, NULL, e) || !db_exec(c, sql, 0, NULL, &r, e))
		goto cleanup;
	for (int i = 0; i < PQntuples(r); i++) {
		if (!drain_one(c, who, PQgetvalue(r, i, 0), PQgetvalue(r, i, 1), false,
		    PQgetvalue(r, i, 2)[0] == 't', e))
			goto cleanup;
		(*tried)++;
	}
	ok = true;
cleanup:
	PQclear(r);
	return ok;
}

bool
move_drain(struct db *c, const struct actor *who, json_t *scope, json_t **out, struct err *e)
{
	static const char sql_clusters[] = "UPDATE clusters k SET cordoned = true, version ="
	    " k.version + CASE WHEN k.cordoned THEN 0 ELSE 1 END, updated_at = now()"
	    " FROM clouds c WHERE c.id = k.cloud_id AND (($1::text IS NOT NULL AND k.id::text = $1)"
	    " OR ($1::text IS NULL AND c.environment = $2 AND c.region = $3))";
	/* the clusters just cordoned, chosen again by the same scope (no list of ids passes
	 * through fleetd), with the jobs on their way in (a move to the cluster): they wait
	 * until they land.  A team's drain ($4) takes only the jobs of its team's queues. */
	static const char sql_jobs[] = "WITH k AS (SELECT k.id FROM clusters k JOIN clouds c"
	    " ON c.id = k.cloud_id WHERE ($1::text IS NOT NULL AND k.id::text = $1)"
	    " OR ($1::text IS NULL AND c.environment = $2 AND c.region = $3))"
	    " SELECT j.id::text FROM jobs j WHERE ((j.cluster_id IN (SELECT id FROM k)"
	    " AND j.state IN " JOB_STATES_PLACED_SQL ") OR (j.state = 'moving'"
	    " AND (j.move->'to'->>'cluster')::uuid IN (SELECT id FROM k)))"
	    " AND ($4::text IS NULL OR j.queue_id IN (SELECT q.id FROM queues q"
	    "  WHERE q.team = $4))"
	    " ORDER BY j.priority DESC, j.enqueued_at";
	static const char sql_op[] = "INSERT INTO operations (id, kind, environment, target, state, total,"
	    " created_by) VALUES ($1, 'drain', $2, $3::jsonb, $4, $5::int, $6)";
	const char *cluster = json_string_value(json_object_get(scope, "cluster_id"));
	const char *env = json_string_value(json_object_get(scope, "environment"));
	const char *region = json_string_value(json_object_get(scope, "region"));
	const char *team = json_string_value(json_object_get(scope, "team"));
	const char *p[4] = { cluster, env, region, team };
	char id[37], total[16], *target = json_dumps(scope, JSON_COMPACT);
	PGresult *jr = NULL;
	uuid_t u;
	bool ok = false;

	uuid_generate_random(u);
	uuid_unparse_lower(u, id);
	/* a team's drain moves its jobs and leaves the cluster, which other teams share,
	 * uncordoned */
	if ((team == NULL && !db_exec(c, sql_clusters, 3, p, NULL, e)) ||
	    !db_exec(c, sql_jobs, 4, p, &jr, e))
		goto cleanup;
	snprintf(total, sizeof(total), "%d", PQntuples(jr));
	{
		const char *q[6] = { id, env, target, PQntuples(jr) ? "running" : "succeeded", total,
		    who->name };

		if (!db_exec(c, sql_op, 6, q, NULL, e))
			goto cleanup;
	}
	for (int i = 0; i < PQntuples(jr); i++)
		if (!drain_one(c, who, id, PQgetvalue(jr, i, 0), true, json_is_string(
		    json_object_get(scope, "source")), e))
			goto cleanup;
	ok = move_operation_get(c, id, out, e);
cleanup:
	free(target);
	PQclear(jr);
	return ok;
}
