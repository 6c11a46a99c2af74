/* sweep: lists each ready member's fleetd-labelled Ray objects (no transaction open),
 * asks the database in one statement which of them belong to no live attempt, deletes
 * them, and records each deletion (orphans row, job event, audit row) in a new
 * transaction.  Jobs that changed less than FLEETD_ORPHAN_MIN_AGE ago are left alone. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <uuid/uuid.h>

#include "core/audit.h"
#include "core/config.h"
#include "core/log.h"
#include "core/textbuf.h"
#include "core/worker_thread.h"
#include "providers/kube.h"
#include "queue/dispatch/dispatch.h"
#include "queue/follow/status.h"
#include "queue/follow/sweep.h"
#include "queue/jobs/job.h"
#include "regions/lease.h"

#define SEL_MANAGED	"labelSelector=app.kubernetes.io%2Fmanaged-by%3Dfleetd"

static const char *const kinds[] = { "RayJob", "RayCluster", "RayService", "RayCronJob" };
static const char *const plurals[] = { "rayjobs", "rayclusters", "rayservices",
	"raycronjobs" };

/* Which listed objects (a jsonb array of {kind, namespace, name, job_id, attempt,
 * environment}) are orphans on cluster $1, and why.  NULL reason: a live attempt, or an
 * object the sweep may not judge.  Labels are anyone's: an object is judged only when its
 * environment label is the cluster's environment and, for a known job, that job is of the
 * cluster's environment and, once it was ever placed, the cluster is one of its clusters
 * of record (now, a move's source or target, a placement, a fenced attempt); anything else
 * is left alone and nothing is written about it (another environment's job history least
 * of all). */
static const char sql_judge[] =
    "WITH ke AS (SELECT c.environment FROM clusters k JOIN clouds c ON c.id = k.cloud_id"
    "  WHERE k.id = $1::uuid)"
    " SELECT o->>'kind', o->>'namespace', o->>'name', o->>'job_id', o->>'attempt',"
    " ke.environment, r.reason FROM ke CROSS JOIN"
    " jsonb_array_elements($2::jsonb) o LEFT JOIN jobs j ON j.id = (o->>'job_id')::uuid"
    " CROSS JOIN LATERAL (SELECT CASE"
    "  WHEN o->>'environment' IS DISTINCT FROM ke.environment THEN NULL"
    "  WHEN j.id IS NULL THEN CASE WHEN o->>'job_id' IS NOT NULL THEN 'unknown_job' END"
    "  WHEN j.environment <> ke.environment THEN NULL"
    "  WHEN (j.cluster_id IS NOT NULL OR EXISTS (SELECT 1 FROM placements p"
    "   WHERE p.job_id = j.id)) AND j.cluster_id IS DISTINCT FROM $1::uuid"
    "   AND (j.move->'from'->>'cluster_id')::uuid IS DISTINCT FROM $1::uuid"
    "   AND (j.move->'to'->>'cluster')::uuid IS DISTINCT FROM $1::uuid"
    "   AND NOT EXISTS (SELECT 1 FROM placements p WHERE p.job_id = j.id"
    "   AND p.cluster_id = $1::uuid)"
    "   AND NOT EXISTS (SELECT 1 FROM orphans x WHERE x.job_id = j.id"
    "   AND x.cluster_id = $1::uuid) THEN NULL"
    "  WHEN j.updated_at > now() - make_interval(secs => $3::int) THEN NULL"
    "  WHEN (o->>'attempt') IS NULL THEN NULL"
    "  WHEN j.state IN ('admitted', 'dispatched', 'running', 'preempted')"
    "   AND j.cluster_id = $1::uuid AND j.attempt = (o->>'attempt')::int THEN NULL"
    "  WHEN j.state = 'moving' AND (j.move->'from'->>'cluster_id')::uuid = $1::uuid"
    "   AND j.attempt = (o->>'attempt')::int"
    "   AND NOT coalesce((j.move->'from'->>'fenced')::boolean, false) THEN NULL"
    "  WHEN j.state = 'moving' AND (j.move->'to'->>'cluster')::uuid = $1::uuid"
    "   AND j.attempt + 1 = (o->>'attempt')::int THEN NULL"
    "  WHEN j.state IN " JOB_STATES_FINAL_SQL " AND j.object_uid IS NOT NULL"
    "   AND j.cluster_id = $1::uuid AND j.attempt = (o->>'attempt')::int THEN NULL"
    "  WHEN EXISTS (SELECT 1 FROM orphans x WHERE x.cluster_id = $1::uuid AND x.kind ="
    "   o->>'kind' AND x.namespace = o->>'namespace' AND x.name = o->>'name' AND x.reason ="
    "   'abandoned' AND x.attempt = (o->>'attempt')::int) THEN 'abandoned'"
    "  WHEN j.state = 'cancelled' THEN 'cancelled'"
    "  WHEN j.state IN ('succeeded', 'failed') THEN 'finished'"
    "  WHEN EXISTS (SELECT 1 FROM job_events v WHERE v.job_id = j.id AND v.type = 'state'"
    "   AND v.from_state = 'moving' AND v.to_state = 'dispatched'"
    "   AND v.attempt > (o->>'attempt')::int) THEN 'moved'"
    "  ELSE 'old_attempt' END AS reason) r";

/* Records one deletion; no row when another replica recorded it first.  A RayService
 * keeps its name across attempts, so one row may be a later attempt's orphan: a row of
 * another attempt (or job) is taken over whole, and keeps 'abandoned' only for its own. */
static const char sql_deleted[] =
    "INSERT INTO orphans (cluster_id, job_id, attempt, kind, namespace, name, reason, state,"
    " resolved_at) VALUES ($1::uuid, $2::uuid, $3::int, $4, $5, $6, $7, $8,"
    " CASE WHEN $8 = 'deleted' THEN now() END)"
    " ON CONFLICT (cluster_id, kind, namespace, name) DO UPDATE SET state = EXCLUDED.state,"
    " resolved_at = EXCLUDED.resolved_at, reason = CASE WHEN orphans.reason = 'abandoned'"
    " AND orphans.attempt IS NOT DISTINCT FROM EXCLUDED.attempt"
    " AND orphans.job_id IS NOT DISTINCT FROM EXCLUDED.job_id"
    " THEN orphans.reason ELSE EXCLUDED.reason END, job_id = EXCLUDED.job_id,"
    " attempt = EXCLUDED.attempt, found_at = CASE WHEN orphans.attempt IS NOT DISTINCT FROM"
    " EXCLUDED.attempt AND orphans.job_id IS NOT DISTINCT FROM EXCLUDED.job_id"
    " THEN orphans.found_at ELSE now() END"
    " WHERE orphans.state <> EXCLUDED.state OR orphans.attempt IS DISTINCT FROM"
    " EXCLUDED.attempt OR orphans.job_id IS DISTINCT FROM EXCLUDED.job_id RETURNING reason";

/* Recorded orphans no longer on the cluster: gone by other means. */
static const char sql_gone[] =
    "UPDATE orphans SET state = 'gone', resolved_at = now() WHERE cluster_id = $1::uuid"
    " AND state IN ('pending', 'reported') AND NOT EXISTS (SELECT 1 FROM"
    " jsonb_array_elements_text($2::jsonb) k WHERE k = kind || '/' || namespace || '/' || name)";

static struct {
	atomic_ulong	rounds, clusters, unreachable, objects, deleted, reported, failed;
	atomic_ulong	by_reason[7];
	atomic_ulong	open;		/* orphans seen in the last round and not deleted */
} M;

static const char *const reasons[7] = { "abandoned", "cancelled", "finished", "moved",
	"old_attempt", "unknown_job", "other" };

static void
count_reason(const char *r)
{
	size_t i;

	for (i = 0; i < 6 && strcmp(reasons[i], r) != 0; i++)
		;
	atomic_fetch_add(&M.by_reason[i], 1);
}

/* An object of the list as the judge statement wants it; NULL when not fleetd's. */
static json_t *
object_row(const char *kind, json_t *it)
{
	json_t *md = json_object_get(it, "metadata"), *lb = json_object_get(md, "labels");
	const char *name = json_string_value(json_object_get(md, "name"));
	const char *ns = json_string_value(json_object_get(md, "namespace"));
	const char *job = json_string_value(json_object_get(lb, "fleet.io/job-id"));
	const char *att = json_string_value(json_object_get(lb, "fleet.io/attempt"));
	const char *env = json_string_value(json_object_get(lb, "fleet.io/environment"));
	json_t *row;
	uuid_t u;

	if (name == NULL)
		return NULL;
	row = json_pack("{s:s, s:s, s:s}", "kind", kind, "namespace", ns ? ns : "", "name", name);
	if (job != NULL && uuid_parse(job, u) == 0)	/* labels are anyone's: check them */
		json_object_set_new(row, "job_id", json_string(job));
	if (att != NULL && *att != '\0' && strlen(att) < 9 && strspn(att, "0123456789") ==
	    strlen(att))
		json_object_set_new(row, "attempt", json_string(att));
	if (env != NULL)
		json_object_set_new(row, "environment", json_string(env));
	return row;
}

/* Every fleetd object of the cluster; false when the cluster cannot be listed. */
static bool
list_objects(const struct member *t, json_t **rows, json_t **keys, struct err *e)
{
	*rows = json_array();
	*keys = json_array();
	for (size_t k = 0; k < sizeof(kinds) / sizeof(kinds[0]); k++) {
		char path[96];
		json_t *items = NULL, *it;
		size_t i;

		snprintf(path, sizeof(path), "/apis/ray.io/v1/%s", plurals[k]);
		if (!member_list(&t->pc, path, SEL_MANAGED, &items, e)) {
			if (e->status == 404) {	/* kind not served by this member */
				err_clear(e);
				continue;
			}
			return false;
		}
		json_array_foreach(items, i, it) {
			json_t *row = object_row(kinds[k], it);

			if (row == NULL)
				continue;
			json_array_append_new(*keys, json_sprintf("%s/%s/%s", kinds[k],
			    json_string_value(json_object_get(row, "namespace")),
			    json_string_value(json_object_get(row, "name"))));
			json_array_append_new(*rows, row);
		}
		json_decref(items);
	}
	return true;
}

/* One orphan as judged: what the round needs after the statement's result is gone. */
struct orphan {
	char	kind[24], ns[128], name[256], job[40], attempt[16], env[64], reason[24];
};

struct judge_arg {
	const char	*cluster_id;
	json_t		*rows, *keys;
	struct orphan	*v;
	int		 n;
};

static bool
judge_tx(struct db *c, void *varg, struct err *e)
{
	struct judge_arg *a = varg;
	char age[16], *rows = json_dumps(a->rows, JSON_COMPACT), *keys = NULL;
	PGresult *r = NULL;
	bool ok = false;

	free(a->v);	/* a retried transaction starts over */
	a->v = NULL;
	a->n = 0;
	snprintf(age, sizeof(age), "%d", cfg.orphan_min_age_s);
	if (!lease_fence(c, a->cluster_id, e))	/* another replica sweeps it now */
		goto cleanup;
	{
		const char *p[3] = { a->cluster_id, rows, age };

		if (!db_exec(c, sql_judge, 3, p, &r, e))
			goto cleanup;
	}
	a->v = calloc((size_t)PQntuples(r) + 1, sizeof(*a->v));
	for (int i = 0; i < PQntuples(r); i++) {
		struct orphan *o = &a->v[a->n];

		if (PQgetisnull(r, i, 6))
			continue;
		snprintf(o->kind, sizeof(o->kind), "%s", PQgetvalue(r, i, 0));
		snprintf(o->ns, sizeof(o->ns), "%s", PQgetvalue(r, i, 1));
		snprintf(o->name, sizeof(o->name), "%s", PQgetvalue(r, i, 2));
		snprintf(o->job, sizeof(o->job), "%s", PQgetvalue(r, i, 3));
		snprintf(o->attempt, sizeof(o->attempt), "%s", PQgetvalue(r, i, 4));
		snprintf(o->env, sizeof(o->env), "%s", PQgetvalue(r, i, 5));
		snprintf(o->reason, sizeof(o->reason), "%s", PQgetvalue(r, i, 6));
		a->n++;
	}
	keys = json_dumps(a->keys, JSON_COMPACT);
	{
		const char *p[2] = { a->cluster_id, keys };

		ok = db_exec(c, sql_gone, 2, p, NULL, e);
	}
cleanup:
	free(rows);
	free(keys);
	PQclear(r);
	return ok;
}

struct record_arg {
	const char		*cluster_id, *cluster_name;
	const struct orphan	*o;
	bool			 deleted;
};

static bool
record_tx(struct db *c, void *varg, struct err *e)
{
	struct record_arg *a = varg;
	const struct orphan *o = a->o;
	const char *state = a->deleted ? "deleted" : "reported";
	const char *p[8] = { a->cluster_id, o->job[0] ? o->job : NULL, o->attempt[0] ?
	    o->attempt : NULL, o->kind, o->ns, o->name, o->reason, state };
	struct actor who = { .name = "orphan-sweep" };
	json_t *obj = NULL;
	PGresult *r = NULL;
	char msg[384];
	bool ok = false;

	if (!db_exec(c, sql_deleted, 8, p, &r, e))
		goto cleanup;
	if (PQntuples(r) == 0 || !a->deleted) {
		ok = true;	/* recorded before (by another replica, or reported) */
		goto cleanup;
	}
	obj = json_pack("{s:s, s:s, s:s, s:s, s:s, s:s}", "cluster_id", a->cluster_id,
	    "cluster", a->cluster_name, "kind", o->kind, "namespace", o->ns, "name", o->name,
	    "reason", PQgetvalue(r, 0, 0));
	if (o->attempt[0])
		json_object_set_new(obj, "attempt", json_integer(atoi(o->attempt)));
	snprintf(msg, sizeof(msg), "orphaned %s %s of attempt %s deleted from %s (%s)", o->kind,
	    o->name, o->attempt[0] ? o->attempt : "?", a->cluster_name, PQgetvalue(r, 0, 0));
	ok = audit_write(c, &who, "orphan.delete", "job", o->job[0] ? o->job : o->name,
	    o->env[0] ? o->env : NULL, obj, NULL, e) &&
	    (o->job[0] == '\0' || strcmp(o->reason, "unknown_job") == 0 ||
	    job_event(c, o->job, "orphan_deleted", msg, obj, e));
cleanup:
	json_decref(obj);
	PQclear(r);
	return ok;
}

/* Lists, judges and cleans one cluster. */
static bool
sweep_cluster(const char *cluster_id, struct sweep_stats *st, struct err *e)
{
	struct member *t = NULL;
	struct judge_arg ja = { .cluster_id = cluster_id };
	struct db *c = db_acquire(5000, e);
	bool del = cfg.orphan_sweep == NULL || strcmp(cfg.orphan_sweep, "report") != 0;
	bool ok = false;

	if (c == NULL)
		return false;
	ok = member_load(c, cluster_id, &t, e);
	db_release(c);
	if (!ok || !list_objects(t, &ja.rows, &ja.keys, e)) {
		ok = false;
		goto cleanup;
	}
	st->clusters++;
	st->objects += json_array_size(ja.rows);
	if (!db_tx(judge_tx, &ja, e))
		goto cleanup;
	for (int i = 0; i < ja.n; i++) {
		struct orphan *o = &ja.v[i];
		struct record_arg ra = { cluster_id, t->name, o, false };
		struct err de = { 0 };

		st->orphans++;
		count_reason(o->reason);
		/* what the attempt looked like, unless kept as it ended */
		if (del && o->job[0] && o->attempt[0] && strcmp(o->reason, "unknown_job") != 0)
			status_postmortem_keep(t, o->job, atoi(o->attempt), o->ns, o->kind,
			    "swept");
		if (del && !kube_delete_object(&t->pc, "ray.io/v1", o->kind, o->ns, o->name, NULL,
		    &de)) {
			atomic_fetch_add(&M.failed, 1);
			atomic_fetch_add(&M.open, 1);
			log_warn(NULL, "sweep", "orphan not deleted", "{s:s, s:s, s:s}", "cluster",
			    t->name, "object", o->name, "error", de.msg);
			continue;
		}
		/* the orphan's attempt's signal objects go with it (a live attempt has its own) */
		if (del && o->job[0] && o->attempt[0] && !dispatch_signal_delete(&t->pc, o->ns,
		    o->job, atoi(o->attempt), &de))
			log_warn(NULL, "sweep", "orphan's signal objects not deleted", "{s:s, s:s,"
			    " s:s}", "cluster", t->name, "object", o->name, "error", de.msg);
		err_clear(&de);
		ra.deleted = del;
		if (!db_tx(record_tx, &ra, &de))
			log_warn(NULL, "sweep", "orphan not recorded", "{s:s, s:s}", "object",
			    o->name, "error", de.msg);
		if (del) {
			st->deleted++;
			atomic_fetch_add(&M.deleted, 1);
		} else {
			st->reported++;
			atomic_fetch_add(&M.reported, 1);
			atomic_fetch_add(&M.open, 1);
		}
		log_info(NULL, "sweep", del ? "orphan deleted" : "orphan found", "{s:s, s:s, s:s,"
		    " s:s, s:s}", "cluster", t->name, "kind", o->kind, "object", o->name, "job",
		    o->job, "reason", o->reason);
	}
	ok = true;
cleanup:
	free(ja.v);
	json_decref(ja.rows);
	json_decref(ja.keys);
	member_free(t);
	return ok;
}

bool
sweep_round(struct sweep_stats *st, struct err *e)
{
	static const char sql[] = "SELECT id::text FROM clusters WHERE state = 'ready'"
	    " AND id = ANY($1::uuid[]) ORDER BY id";	/* the clusters this replica holds */
	char *held = lease_ids();
	struct db *c = db_acquire(5000, e);
	PGresult *r = NULL;
	char (*ids)[40] = NULL;
	int n = 0;
	bool ok;

	if (c == NULL) {
		free(held);
		return false;
	}
	ok = db_exec(c, sql, 1, (const char *const[]){ held }, &r, e);
	db_release(c);
	free(held);
	if (!ok)
		return false;
	n = PQntuples(r);
	ids = calloc((size_t)n + 1, sizeof(*ids));
	for (int i = 0; i < n; i++)
		snprintf(ids[i], sizeof(ids[i]), "%s", PQgetvalue(r, i, 0));
	PQclear(r);
	atomic_store(&M.open, 0);
	for (int i = 0; i < n; i++) {
		struct err ce = { 0 };

		if (!sweep_cluster(ids[i], st, &ce)) {
			st->unreachable++;
			log_debug(NULL, "sweep", "cluster not swept", "{s:s, s:s}", "cluster",
			    ids[i], "error", ce.msg);
		}
	}
	free(ids);
	atomic_fetch_add(&M.rounds, 1);
	atomic_fetch_add(&M.clusters, st->clusters);
	atomic_fetch_add(&M.unreachable, st->unreachable);
	atomic_fetch_add(&M.objects, st->objects);
	return true;
}

void
sweep_metrics(char **buf, size_t *len, size_t *cap)
{
	textbuf_appendf(buf, len, cap,
	    "# HELP fleetd_orphan_sweeps_total Orphan sweep rounds on this replica.\n"
	    "# TYPE fleetd_orphan_sweeps_total counter\nfleetd_orphan_sweeps_total %lu\n"
	    "# HELP fleetd_orphan_sweep_clusters_total Member clusters listed, by outcome.\n"
	    "# TYPE fleetd_orphan_sweep_clusters_total counter\n"
	    "fleetd_orphan_sweep_clusters_total{outcome=\"listed\"} %lu\n"
	    "fleetd_orphan_sweep_clusters_total{outcome=\"unreachable\"} %lu\n"
	    "# HELP fleetd_orphan_sweep_objects_total fleetd-labelled Ray objects seen.\n"
	    "# TYPE fleetd_orphan_sweep_objects_total counter\n"
	    "fleetd_orphan_sweep_objects_total %lu\n"
	    "# HELP fleetd_orphans_deleted_total Orphaned objects deleted.\n"
	    "# TYPE fleetd_orphans_deleted_total counter\nfleetd_orphans_deleted_total %lu\n"
	    "# HELP fleetd_orphans_reported_total Orphaned objects reported (sweep in report mode).\n"
	    "# TYPE fleetd_orphans_reported_total counter\nfleetd_orphans_reported_total %lu\n"
	    "# HELP fleetd_orphan_delete_failures_total Orphan deletions the member refused.\n"
	    "# TYPE fleetd_orphan_delete_failures_total counter\n"
	    "fleetd_orphan_delete_failures_total %lu\n"
	    "# HELP fleetd_orphans_open Orphans the last round left on the clusters.\n"
	    "# TYPE fleetd_orphans_open gauge\nfleetd_orphans_open %lu\n",
	    atomic_load(&M.rounds), atomic_load(&M.clusters), atomic_load(&M.unreachable),
	    atomic_load(&M.objects), atomic_load(&M.deleted), atomic_load(&M.reported),
	    atomic_load(&M.failed), atomic_load(&M.open));
	textbuf_appendf(buf, len, cap,
	    "# HELP fleetd_orphans_found_total Orphaned objects found, by why they are orphans.\n"
	    "# TYPE fleetd_orphans_found_total counter\n");
	for (size_t i = 0; i < 7; i++)
		textbuf_appendf(buf, len, cap, "fleetd_orphans_found_total{reason=\"%s\"} %lu\n",
		    reasons[i], atomic_load(&M.by_reason[i]));
}

static struct worker_thread T;

static void *
loop(void *arg)
{
	struct timespec tick = { 0, 100 * 1000 * 1000 };
	long waited = cfg.sweep_interval_ms;	/* the first round runs at once */

	(void)arg;
	while (worker_thread_running(&T)) {
		if (waited >= cfg.sweep_interval_ms) {
			struct sweep_stats st = { 0 };
			struct err e = { 0 };

			if (!sweep_round(&st, &e))
				log_warn(NULL, "sweep", "round failed", "{s:s}", "error", e.msg);
			waited = 0;
		}
		nanosleep(&tick, NULL);
		waited += 100;
	}
	return NULL;
}

bool
sweep_start(struct err *e)
{
	if (!lease_start(e))
		return false;
	if (!worker_thread_start(&T, loop, "sweep.start", "cannot start the orphan sweep "
	    "thread", e)) {
		lease_stop();
		return false;
	}
	return true;
}

void
sweep_stop(void)
{
	if (!T.started)
		return;
	worker_thread_stop(&T);
	lease_stop();
}
