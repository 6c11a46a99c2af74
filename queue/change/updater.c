/* updater: the worker of spec updates (queue/change/job_update.c records them). Each round claims
 * open updates (SKIP LOCKED, a lease in spec_update.next_at), commits, re-renders and
 * server-side applies the job's object on its member cluster, or reads the RayService's
 * upgrade status, with no transaction open; then records the phase and the job events in a
 * new transaction. Phases: pending -> (applied) upgrading -> done, or failed; an upgrade
 * still in progress past its deadline (spec_update.deadline_at, job_update.c) is rolled back
 * to the serving Ray cluster -> rolled_back, and the job's spec is the old one again. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/jsonx.h"
#include "core/log.h"
#include "core/ticker.h"
#include "providers/kube.h"
#include "queue/change/change.h"
#include "queue/dispatch/dispatch.h"
#include "queue/jobs/job.h"

#define UPDATER_BATCH	8
#define UPDATER_LEASE_S	"60"

struct ujob {
	char	 id[40];
	char	 kind[24];
	char	 cluster_id[40];
	char	 environment[64];
	char	 queue[64];
	int	 attempt;
	int	 generation;
	json_t	*spec;
	json_t	*placement;
	json_t	*update;	/* jobs.spec_update */
	bool	 past_deadline;	/* an upgrade's deadline_at has passed */
	/* outcome of the visit */
	const char *phase;	/* next phase, NULL = unchanged */
	json_t	*manifest;	/* applied: record it */
	const char *event;	/* job event type, NULL = none */
	char	 message[256];
	int	 delay_s;
};

static const char sql_claim[] =
    "UPDATE jobs j SET spec_update = j.spec_update || jsonb_build_object('next_at',"
    " now() + make_interval(secs => " UPDATER_LEASE_S "))"
    " FROM queues q WHERE q.id = j.queue_id AND j.id IN (SELECT id FROM jobs WHERE"
    " spec_update->>'phase' IN ('pending', 'upgrading') AND state IN ('dispatched', 'running')"
    " AND cluster_id IS NOT NULL AND (spec_update->>'next_at')::timestamptz <= now()"
    " ORDER BY (spec_update->>'next_at')::timestamptz LIMIT $1 FOR UPDATE SKIP LOCKED)"
    " RETURNING j.id::text, j.kind, j.cluster_id::text, j.environment, q.name, j.attempt,"
    " j.spec::text, coalesce(j.placement::text, 'null'), j.spec_update::text,"
    " coalesce((j.spec_update->>'deadline_at')::timestamptz <= now(), false)";

static void
ujob_free(struct ujob *u)
{
	json_decref(u->spec);
	json_decref(u->placement);
	json_decref(u->update);
	json_decref(u->manifest);
}

/* The annotation that names the spec_update generation an applied object carries. */
#define SPEC_GENERATION	"fleet.io/spec-generation"

/* Level-triggered: the object on the member carries this update's generation already (an
 * earlier visit applied it, then could not record that: the database went away, the
 * lease ran out), so it is not applied a second time.  Any doubt (cannot read): apply. */
static bool
applied_already(const struct member *t, json_t *obj, int generation)
{
	struct err e = { 0 };
	json_t *live = NULL;
	const char *g;
	char want[16];
	bool same;

	if (!kube_get_object(&t->pc, "ray.io/v1", jsonx_at(obj, "kind", NULL), jsonx_at(obj,
	    "metadata", "namespace"), jsonx_at(obj, "metadata", "name"), &live, &e))
		return false;
	g = json_string_value(json_object_get(jsonx_meta(live, "annotations"),
	    SPEC_GENERATION));
	snprintf(want, sizeof(want), "%d", generation);
	same = g != NULL && strcmp(g, want) == 0;
	json_decref(live);
	return same;
}

static void
apply(struct ujob *u, const struct member *t)
{
	struct kube_ref ref;
	struct err e = { 0 };
	json_t *obj;
	bool upgrade = json_is_true(json_object_get(u->update, "upgrade"));

	obj = dispatch_render_for(t, u->id, u->environment, u->queue, u->attempt, u->spec,
	    u->placement, &e);
	if (obj != NULL) {
		json_t *md = json_object_get(obj, "metadata");

		if (json_object_get(md, "annotations") == NULL)
			json_object_set_new(md, "annotations", json_object());
		json_object_set_new(json_object_get(md, "annotations"), SPEC_GENERATION,
		    json_sprintf("%d", u->generation));
	}
	if (obj == NULL || (!applied_already(t, obj, u->generation) &&
	    !kube_apply(&t->pc, obj, &ref, NULL, &e))) {
		json_decref(obj);
		if (e.status == 422 || e.status == 400 || e.status == 409) {
			u->phase = "failed";
			u->event = "spec_update_failed";
			snprintf(u->message, sizeof(u->message), "the member cluster refused the "
			    "updated object: %.160s", e.msg);
		} else {
			u->delay_s = 5;	/* transient: try again */
			log_warn(NULL, "updater", "apply failed", "{s:s, s:s}", "job", u->id,
			    "error", e.msg);
		}
		return;
	}
	u->manifest = obj;
	u->phase = upgrade ? "upgrading" : "done";
	u->event = "spec_applied";
	snprintf(u->message, sizeof(u->message), upgrade ? "updated spec applied: KubeRay "
	    "prepares a new Ray cluster and switches when it is ready" :
	    "updated spec applied in place");
}

/* Past the deadline with the pending cluster still not serving: back to the serving one.
 * KubeRay's NewCluster strategy has no cancel: a reverted goal that differs from the
 * pending cluster's hash makes it prepare yet another pending cluster
 * (shouldPrepareNewCluster in ray-operator/controllers/ray/rayservice_controller.go), and it
 * only rolls back by itself for NewClusterWithIncrementalUpgrade (reconcileRollbackState).
 * So, in this order: (1) apply the old spec, whose hash is the active cluster's, so no
 * pending cluster is wanted any more; (2) clear status.pendingServiceStatus, as KubeRay
 * itself does when it drops a pending cluster (a status Update of KubeRay's racing with it
 * conflicts on resourceVersion and is recomputed from the cleared status); (3) delete the
 * pending RayCluster now rather than after KubeRay's rayClusterDeletionDelaySeconds
 * (cleanUpRayClusterInstance removes clusters that are neither active nor pending).  Any
 * step failing transiently is retried next visit; every step is idempotent. */
static void
roll_back(struct ujob *u, const struct member *t, const char *pending, const char *active)
{
	struct kube_ref ref;
	struct err e = { 0 };
	json_t *old = json_object_get(u->update, "old_spec"), *obj, *patch;
	const char *ns = jsonx_at(u->update, "object", "namespace");
	bool ok;

	u->delay_s = 5;
	if (!json_is_object(old))
		return;
	obj = dispatch_render_for(t, u->id, u->environment, u->queue, u->attempt, old,
	    u->placement, &e);
	if (obj == NULL) {
		log_warn(NULL, "updater", "rollback render failed", "{s:s, s:s}", "job", u->id,
		    "error", e.msg);
		return;
	}
	patch = json_pack("{s:{s:n}}", "status", "pendingServiceStatus");
	ok = kube_apply(&t->pc, obj, &ref, NULL, &e) && kube_patch_status(&t->pc, "ray.io/v1",
	    u->kind, ns, jsonx_at(obj, "metadata", "name"), patch, &e) && (pending == NULL ||
	    kube_delete_object(&t->pc, "ray.io/v1", "RayCluster", ns, pending, NULL, &e));
	json_decref(patch);
	if (!ok) {
		json_decref(obj);
		log_warn(NULL, "updater", "rollback failed", "{s:s, s:s}", "job", u->id, "error",
		    e.msg);
		return;
	}
	u->manifest = obj;
	u->phase = "rolled_back";
	u->event = "upgrade_rolled_back";
	u->delay_s = 1;
	snprintf(u->message, sizeof(u->message), "upgrade deadline of %llds passed with the new "
	    "Ray cluster %.60s not ready: rolled back to the serving cluster %.60s; the new "
	    "cluster is deleted and its quota released",
	    (long long)json_integer_value(json_object_get(u->update, "deadline_s")),
	    pending ? pending : "(not named yet)", active ? active : "");
}

/* RayService: UpgradeInProgress True while the pending cluster comes up; done when it is
 * False (or absent) with Ready True on a status of this generation; rolled back when it is
 * still True past the deadline. */
static void
follow(struct ujob *u, const struct member *t)
{
	struct err e = { 0 };
	json_t *live = NULL, *conds, *c;
	long long gen, seen;
	bool in_progress = false, ready = false;
	size_t i;

	u->delay_s = 1;
	if (!kube_get_object(&t->pc, "ray.io/v1", u->kind, jsonx_at(u->update, "object",
	    "namespace"), jsonx_at(u->update, "object", "name"), &live, &e)) {
		u->delay_s = 5;
		if (e.status == 404) {	/* moved or gone: the next attempt has the new spec */
			u->phase = "done";
			u->event = "spec_update_superseded";
			snprintf(u->message, sizeof(u->message), "the upgraded object is gone (the "
			    "job moved or ended); any next attempt runs the updated spec");
		}
		return;
	}
	gen = json_integer_value(jsonx_meta(live, "generation"));
	seen = json_integer_value(json_object_get(json_object_get(live, "status"),
	    "observedGeneration"));
	conds = json_object_get(json_object_get(live, "status"), "conditions");
	json_array_foreach(conds, i, c) {
		const char *type = json_string_value(json_object_get(c, "type"));
		bool on = json_is_string(json_object_get(c, "status")) &&
		    strcmp(json_string_value(json_object_get(c, "status")), "True") == 0;

		if (type != NULL && strcmp(type, "UpgradeInProgress") == 0)
			in_progress = on;
		if (type != NULL && strcmp(type, "Ready") == 0)
			ready = on;
	}
	if (in_progress && u->past_deadline) {
		json_t *st = json_object_get(live, "status");

		roll_back(u, t, jsonx_at(st, "pendingServiceStatus", "rayClusterName"),
		    jsonx_at(st, "activeServiceStatus", "rayClusterName"));
	} else if (in_progress && !json_is_true(json_object_get(u->update, "seen_upgrade"))) {
		u->event = "upgrade_in_progress";
		snprintf(u->message, sizeof(u->message), "KubeRay upgrade in progress: pending "
		    "cluster %.120s", jsonx_at(json_object_get(live, "status"), "pendingServiceStatus",
		    "rayClusterName") ? jsonx_at(json_object_get(live, "status"),
		    "pendingServiceStatus", "rayClusterName") : "(not named yet)");
		json_object_set_new(u->update, "seen_upgrade", json_true());
		u->phase = "upgrading";
	} else if (!in_progress && ready && seen >= gen) {
		u->phase = "done";
		u->event = "upgrade_complete";
		snprintf(u->message, sizeof(u->message), "upgrade complete: cluster %.120s serves",
		    jsonx_at(json_object_get(live, "status"), "activeServiceStatus",
		    "rayClusterName") ? jsonx_at(json_object_get(live, "status"),
		    "activeServiceStatus", "rayClusterName") : "");
	}
	json_decref(live);
}

static void
visit(struct ujob *u)
{
	struct member *t = NULL;
	struct err e = { 0 };
	struct db *c = db_acquire(5000, &e);
	bool ok;

	if (c == NULL) {
		u->delay_s = 5;
		return;
	}
	ok = member_load(c, u->cluster_id, &t, &e);
	db_release(c);
	if (!ok) {
		u->delay_s = 5;
		return;
	}
	if (strcmp(json_string_value(json_object_get(u->update, "phase")), "pending") == 0)
		apply(u, t);
	else
		follow(u, t);
	member_free(t);
}

static const char sql_record[] =
    "UPDATE jobs SET spec_update = spec_update || $2::jsonb || jsonb_build_object('next_at',"
    " now() + make_interval(secs => $3::int)) || CASE WHEN $2::jsonb->>'phase' IN ('done',"
    " 'failed', 'rolled_back') THEN jsonb_build_object('finished_at', now()) ELSE '{}' END,"
    " manifest = coalesce($4::jsonb, manifest),"
    /* rolled back: the job runs its old spec again (the scheduler's loader then holds one
     * footprint, not the upgrade's two) */
    " spec = CASE WHEN $2::jsonb->>'phase' = 'rolled_back' THEN coalesce(spec_update->"
    "'old_spec', spec) ELSE spec END,"
    " version = version + CASE WHEN $5 THEN 1 ELSE 0 END, updated_at = now()"
    " WHERE id = $1::uuid AND (spec_update->>'generation')::int = $6::int";

static bool
record_tx(struct db *c, void *arg, struct err *e)
{
	struct ujob *u = arg;
	json_t *patch = json_object(), *data;
	char delay[16], gen[16], *ps = NULL, *ms = NULL;
	bool ok;

	if (u->phase != NULL)
		json_object_set_new(patch, "phase", json_string(u->phase));
	if (json_is_true(json_object_get(u->update, "seen_upgrade")))
		json_object_set_new(patch, "seen_upgrade", json_true());
	if (u->manifest != NULL)
		json_object_set_new(patch, "object", json_pack("{s:s?, s:s?}", "namespace",
		    jsonx_at(u->manifest, "metadata", "namespace"), "name",
		    jsonx_at(u->manifest, "metadata", "name")));
	snprintf(delay, sizeof(delay), "%d", u->delay_s);
	snprintf(gen, sizeof(gen), "%d", u->generation);
	ps = json_dumps(patch, JSON_COMPACT);
	ms = u->manifest ? json_dumps(u->manifest, JSON_COMPACT) : NULL;
	{
		const char *p[6] = { u->id, ps, delay, ms, u->phase ? "true" : "false", gen };

		ok = db_exec(c, sql_record, 6, p, NULL, e);
	}
	if (ok && u->event != NULL) {
		data = json_pack("{s:i, s:s?}", "generation", u->generation, "phase", u->phase);
		ok = job_event(c, u->id, u->event, u->message, data, e);
		json_decref(data);
	}
	json_decref(patch);
	free(ps);
	free(ms);
	return ok;
}

bool
updater_round(struct updater_stats *st, struct err *e)
{
	char lim[16];
	const char *p[1] = { lim };
	struct ujob *jobs = NULL;
	PGresult *r = NULL;
	int n;

	snprintf(lim, sizeof(lim), "%d", UPDATER_BATCH);
	if (!db_claim(sql_claim, 1, p, &r, e))
		return false;
	n = PQntuples(r);
	jobs = calloc((size_t)n + 1, sizeof(*jobs));
	if (jobs == NULL)
		abort();
	for (int i = 0; i < n; i++) {
		struct ujob *u = &jobs[i];

		snprintf(u->id, sizeof(u->id), "%s", PQgetvalue(r, i, 0));
		snprintf(u->kind, sizeof(u->kind), "%s", PQgetvalue(r, i, 1));
		snprintf(u->cluster_id, sizeof(u->cluster_id), "%s", PQgetvalue(r, i, 2));
		snprintf(u->environment, sizeof(u->environment), "%s", PQgetvalue(r, i, 3));
		snprintf(u->queue, sizeof(u->queue), "%s", PQgetvalue(r, i, 4));
		u->attempt = atoi(PQgetvalue(r, i, 5));
		u->spec = json_loads(PQgetvalue(r, i, 6), 0, NULL);
		u->placement = json_loads(PQgetvalue(r, i, 7), JSON_DECODE_ANY, NULL);
		u->update = json_loads(PQgetvalue(r, i, 8), 0, NULL);
		u->generation = (int)json_integer_value(json_object_get(u->update, "generation"));
		u->past_deadline = strcmp(PQgetvalue(r, i, 9), "t") == 0;
	}
	PQclear(r);
	st->claimed += (size_t)n;
	for (int i = 0; i < n; i++) {
		struct ujob *u = &jobs[i];
		struct err re = { 0 };

		if (u->spec == NULL || u->update == NULL)
			continue;
		visit(u);
		if (!db_tx(record_tx, u, &re)) {
			log_warn(NULL, "updater", "record failed", "{s:s, s:s}", "job", u->id,
			    "error", re.msg);
			continue;
		}
		st->applied += u->manifest != NULL;
		st->upgraded += u->phase != NULL && strcmp(u->phase, "done") == 0;
		st->failed += u->phase != NULL && strcmp(u->phase, "failed") == 0;
		st->rolled_back += u->phase != NULL && strcmp(u->phase, "rolled_back") == 0;
		st->retried += u->delay_s >= 5;
	}
	for (int i = 0; i < n; i++)
		ujob_free(&jobs[i]);
	free(jobs);
	return true;
}

/* The updater thread: a round right after one that claimed work, else one every 250 ms
 * (core/ticker, like the janitor and iam-verify). */
static bool busy;	/* the last round claimed an update; only the ticker thread uses it */

static void
round_once(void)
{
	struct updater_stats st = { 0 };
	struct err e = { 0 };

	if (!updater_round(&st, &e))
		log_warn(NULL, "updater", "round failed", "{s:s}", "error", e.msg);
	busy = st.claimed != 0;
}

static long
period_ms(void)
{
	return busy ? 0 : 250;
}

static struct ticker ticker = TICKER_INIT(round_once, period_ms);

bool
updater_start(struct err *e)
{
	return ticker_start(&ticker, "updater.start", "cannot start the updater thread", e);
}

void
updater_stop(void)
{
	ticker_stop(&ticker);
}
