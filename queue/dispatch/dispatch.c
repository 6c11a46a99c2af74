/* dispatch: claim admitted jobs (SKIP LOCKED; the claim of a replica that is gone — its
 * liveness advisory lock released — is taken over once it is DISPATCH_INFLIGHT_S (20 s)
 * old, beyond an apply's 15 s timeout, so the next claimant's GET sees an apply still in
 * flight instead of repeating it), apply each to its member cluster outside any
 * transaction, and record the result in a new transaction. */
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/select.h>
#include <time.h>

#include "core/config.h"
#include "core/jsonx.h"
#include "core/listen.h"
#include "core/log.h"
#include "core/textbuf.h"
#include "core/ticker.h"
#include "providers/kube.h"
#include "providers/kuberay.h"
#include "queue/dispatch/dispatch.h"
#include "queue/jobs/job.h"
#include "queue/jobs/rayauth.h"
#include "regions/lease.h"

#define CLAIM_PER_THREAD	4
#define IDLE_WAKE_MS		1000

/* Only jobs on the clusters whose lease this replica holds (regions/lease.h): the claim
 * itself keeps two replicas from dispatching one job, the lease spreads the work.
 * first: never claimed in this attempt (the scheduler clears claimed_at and tries; a
 * retry counts a try; a replica that restarts keeps claimed_at) */
static const char sql_claim[] =
    "UPDATE jobs j SET claimed_by = $1, claimed_at = now() FROM queues q,"
    " (SELECT x.id, x.claimed_at IS NULL AND x.tries = 0 AS first FROM jobs x"
    "  WHERE x.state = 'admitted' AND x.next_try_at <= now()"
    "  AND x.cluster_id = ANY($5::uuid[])"
    "  AND (x.claimed_by IS NULL OR x.claimed_at < now() - make_interval(secs => $3::int)"
    "   OR (x.claimed_at < now() - interval '" DISPATCH_INFLIGHT_S " seconds'"
    "   AND NOT EXISTS (SELECT 1 FROM pg_locks l WHERE l.locktype = 'advisory'"
    "    AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())"
    "    AND l.classid = $4::int::oid AND l.objid = hashtext(x.claimed_by)::oid"
    "    AND l.objsubid = 2 AND l.granted)))"
    "  ORDER BY x.priority DESC, x.enqueued_at FOR UPDATE SKIP LOCKED LIMIT $2::int) s"
    " WHERE q.id = j.queue_id AND j.id = s.id"
    " RETURNING j.id, j.attempt, j.cluster_id, j.environment, q.name, j.tries,"
    " j.spec::text, j.placement::text, s.first, j.priority,"
    " (SELECT en.history_server::text FROM environments en WHERE en.name = j.environment)";

static struct {
	atomic_ulong	claimed, dispatched, reused, retried, failed, replaced, withdrawn;
} M;

static void
count(const struct dispatch_stats *st)
{
	atomic_fetch_add(&M.claimed, st->claimed);
	atomic_fetch_add(&M.dispatched, st->dispatched);
	atomic_fetch_add(&M.reused, st->reused);
	atomic_fetch_add(&M.retried, st->retried);
	atomic_fetch_add(&M.failed, st->failed);
	atomic_fetch_add(&M.replaced, st->replaced);
	atomic_fetch_add(&M.withdrawn, st->withdrawn);
}

/* Claims up to limit jobs for who and commits. *jobs is a new array of heap jobs. */
static bool
claim(const char *who, int limit, struct dispatch_job ***jobs, size_t *n, struct err *e)
{
	char lim[16], lease[16], cls[16], *held = lease_ids();
	const char *p[5] = { who, lim, lease, cls, held };
	PGresult *r = NULL;
	bool ok;

	*jobs = NULL;
	*n = 0;
	snprintf(lim, sizeof(lim), "%d", limit);
	snprintf(lease, sizeof(lease), "%d", DISPATCH_LEASE_S);
	snprintf(cls, sizeof(cls), "%d", DISPATCH_LOCK_CLASS);
	ok = strcmp(held, "{}") == 0 || db_claim(sql_claim, 5, p, &r, e);
	free(held);
	if (!ok)
		return false;
	if (r == NULL)	/* no cluster held: nothing to claim */
		return true;
	*jobs = calloc((size_t)PQntuples(r) + 1, sizeof(**jobs));
	if (*jobs == NULL)
		abort();
	for (int i = 0; i < PQntuples(r); i++) {
		struct dispatch_job *j = calloc(1, sizeof(*j));

		if (j == NULL)
			abort();
		snprintf(j->id, sizeof(j->id), "%s", PQgetvalue(r, i, 0));
		j->attempt = atoi(PQgetvalue(r, i, 1));
		snprintf(j->cluster_id, sizeof(j->cluster_id), "%s", PQgetvalue(r, i, 2));
		snprintf(j->environment, sizeof(j->environment), "%s", PQgetvalue(r, i, 3));
		snprintf(j->queue, sizeof(j->queue), "%s", PQgetvalue(r, i, 4));
		j->tries = atoi(PQgetvalue(r, i, 5));
		j->spec = json_loads(PQgetvalue(r, i, 6), 0, NULL);
		j->placement = json_loads(PQgetvalue(r, i, 7), 0, NULL);
		j->first = PQgetvalue(r, i, 8)[0] == 't';
		j->priority = atoi(PQgetvalue(r, i, 9));
		j->history_known = true;
		if (!PQgetisnull(r, i, 10))
			j->history = json_loads(PQgetvalue(r, i, 10), 0, NULL);
		(*jobs)[(*n)++] = j;
	}
	PQclear(r);
	return true;
}

/* ---- recording */

struct outcome {
	const struct dispatch_job	*j;
	const struct member	*t;
	const char			*who;
	json_t				*manifest;
	char				*text;		/* manifest's JSON as applied, or NULL */
	struct kube_ref			 ref;
	bool				 reused;
	json_t				*warning;	/* the image warning of the render */
};

/* The admitted -> dispatched transition of o's job (its event says where and what). */
static bool
record_event(struct db *c, const struct outcome *o, struct err *e)
{
	json_t *md = json_object_get(o->manifest, "metadata"), *data;
	const char *name = json_string_value(json_object_get(md, "name")),
	    *ns = json_string_value(json_object_get(md, "namespace"));
	char reason[160];
	bool ok;

	snprintf(reason, sizeof(reason), "applied to %s", o->t->name);
	data = json_pack("{s:s, s:s, s:s, s:s, s:s, s:b}", "cluster", o->t->name, "namespace",
	    ns ? ns : "", "object", name ? name : "", "kind",
	    json_string_value(json_object_get(o->manifest, "kind")), "uid", o->ref.uid,
	    "reused", o->reused);
	ok = job_transition(c, o->j->id, "admitted", "dispatched", reason, data, e);
	json_decref(data);
	return ok;
}

/* admitted -> dispatched when the job is still this claim's: *mine false otherwise (and
 * nothing written).  False only on a database error. */
static bool
record_row(struct db *c, const struct outcome *o, bool *mine, struct err *e)
{
	static const char sql[] = "UPDATE jobs SET object_name = $3, object_uid = $4,"
	    " object_rv = $5, manifest = $6::jsonb, dispatched_at = now(), claimed_by = NULL,"
	    " claimed_at = NULL, tries = 0, next_try_at = now()"
	    " WHERE id = $1::uuid AND state = 'admitted' AND attempt = $2::int"
	    " AND claimed_by = $7 AND NOT cancel_requested RETURNING id";
	const char *name = jsonx_meta_str(o->manifest, "name");
	char at[16], *ms = json_dumps(o->manifest, JSON_COMPACT);
	const char *p[7] = { o->j->id, at, name, o->ref.uid, o->ref.resource_version, ms,
	    o->who };
	PGresult *r = NULL;
	bool ok = false;

	*mine = false;
	snprintf(at, sizeof(at), "%d", o->j->attempt);
	if (!db_exec(c, sql, 7, p, &r, e))
		goto cleanup;
	if (PQntuples(r) == 0) {
		ok = true;
		goto cleanup;
	}
	ok = record_event(c, o, e);
	*mine = ok;
cleanup:
	PQclear(r);
	free(ms);
	return ok;
}

/* record_row in a transaction of its own; "dispatch.changed" when not this claim's. */
static bool
record_tx(struct db *c, void *arg, struct err *e)
{
	struct outcome *o = arg;
	bool mine;

	if (!record_row(c, o, &mine, e))
		return false;
	if (!mine)
		return err_set(e, 409, "dispatch.changed", "the job changed while it was applied");
	return db_notify(c, "fleet_status", "", e);
}

/* Transient failure: release the claim and try later, or place again after too many. */
static void
retry_later(const char *who, const struct dispatch_job *j, const struct err *why,
    struct dispatch_stats *st)
{
	static const char sql[] = "UPDATE jobs SET claimed_by = NULL, claimed_at = NULL,"
	    " tries = tries + 1, next_try_at = now() + make_interval(secs =>"
	    " least(power(2, tries), 60) * (0.75 + random() / 2))"
	    " WHERE id = $1::uuid AND state = 'admitted' AND attempt = $2::int AND claimed_by = $3"
	    " RETURNING tries";
	char at[16], msg[800];
	const char *p[3] = { j->id, at, who };
	struct err e = { 0 };
	struct db *c;
	PGresult *r = NULL;
	json_t *data;

	snprintf(at, sizeof(at), "%d", j->attempt);
	snprintf(msg, sizeof(msg), "%s%s%s", why->msg, why->detail[0] ? ": " : "", why->detail);
	data = json_pack("{s:s, s:i}", "code", why->code, "status", why->status);
	if ((c = db_acquire(5000, &e)) == NULL)
		goto cleanup;
	if (!db_begin(c, &e) || !db_exec(c, sql, 3, p, &r, &e) || PQntuples(r) == 0) {
		db_rollback(c);
		goto cleanup;
	}
	if (atoi(PQgetvalue(r, 0, 0)) >= DISPATCH_MAX_TRIES) {
		char reason[1000];

		snprintf(reason, sizeof(reason), "the cluster did not take the job after %d tries "
		    "(%s); placing it again", DISPATCH_MAX_TRIES, msg);
		if (!job_transition(c, j->id, "admitted", "pending", reason, data, &e))
			goto fail;
		st->replaced++;
	} else {
		if (!job_event(c, j->id, "dispatch_retry", msg, data, &e))
			goto fail;
		st->retried++;
	}
	if (db_commit(c, &e))
		goto cleanup;
fail:
	db_rollback(c);
cleanup:
	if (e.status != 0)
		log_warn(NULL, "dispatch", "cannot record a retry", "{s:s, s:s}", "job", j->id,
		    "error", e.msg);
	json_decref(data);
	PQclear(r);
	db_release(c);
}

/* Permanent refusal (422, unrenderable): the job fails with the cluster's message. */
static void
fail_job(const char *who, const struct dispatch_job *j, const struct err *why,
    struct dispatch_stats *st)
{
	static const char sql[] = "UPDATE jobs SET claimed_by = NULL, claimed_at = NULL"
	    " WHERE id = $1::uuid AND state = 'admitted' AND attempt = $2::int AND claimed_by = $3"
	    " RETURNING id";
	char at[16], reason[800];
	const char *p[3] = { j->id, at, who };
	struct err e = { 0 };
	struct db *c;
	PGresult *r = NULL;
	json_t *data = json_pack("{s:s, s:i, s:s}", "code", why->code, "status", why->status,
	    "message", why->detail[0] ? why->detail : why->msg);

	snprintf(at, sizeof(at), "%d", j->attempt);
	snprintf(reason, sizeof(reason), "%s%s%s", why->msg, why->detail[0] ? ": " : "",
	    why->detail);
	if ((c = db_acquire(5000, &e)) != NULL) {
		if (db_begin(c, &e) && db_exec(c, sql, 3, p, &r, &e) && PQntuples(r) == 1 &&
		    job_transition(c, j->id, "admitted", "failed", reason, data, &e) &&
		    db_commit(c, &e))
			st->failed++;
		else
			db_rollback(c);
	}
	if (e.status != 0)
		log_warn(NULL, "dispatch", "cannot record a failure", "{s:s, s:s}", "job", j->id,
		    "error", e.msg);
	json_decref(data);
	PQclear(r);
	db_release(c);
}

/* After a failed record: what is the job now?  Deletes the object unless the job is
 * this attempt on its way (claimable again, or recorded by another replica). */
static void
after_changed(const struct outcome *o, struct dispatch_stats *st)
{
	static const char sql[] = "SELECT state, attempt, coalesce(cluster_id::text, ''),"
	    " coalesce(object_name, '') FROM jobs WHERE id = $1::uuid";
	const char *p[1] = { o->j->id };
	const char *mine = jsonx_meta_str(o->manifest, "name");
	json_t *md = json_object_get(o->manifest, "metadata");
	struct err e = { 0 };
	struct db *c;
	PGresult *r = NULL;
	bool keep = true, existed = false;

	if ((c = db_acquire(5000, &e)) == NULL || !db_exec(c, sql, 1, p, &r, &e))
		goto cleanup;	/* cannot tell: the next claim finds the object */
	if (PQntuples(r) == 1) {
		enum job_state state = job_state_parse(PQgetvalue(r, 0, 0));
		bool placed = job_state_is_placed(state);

		keep = (atoi(PQgetvalue(r, 0, 1)) == o->j->attempt && (placed ||
		    state == JOB_SUCCEEDED)) ||
		    /* a RayService's later attempt on this cluster owns the same object */
		    (placed && strcmp(PQgetvalue(r, 0, 2), o->t->id) == 0 && mine != NULL &&
		    (state == JOB_ADMITTED || strcmp(PQgetvalue(r, 0, 3), mine) == 0) &&
		    strcmp(json_string_value(json_object_get(o->manifest, "kind")),
		    "RayService") == 0);
	} else {
		keep = false;
	}
	if (keep || !kube_delete_object(&o->t->pc, "ray.io/v1",
	    json_string_value(json_object_get(o->manifest, "kind")),
	    json_string_value(json_object_get(md, "namespace")),
	    json_string_value(json_object_get(md, "name")), &existed, &e))
		goto cleanup;
	dispatch_signal_delete_for(&o->t->pc, o->manifest, "dispatch");
	st->withdrawn++;
	if (PQntuples(r) == 1) {
		json_t *d = json_pack("{s:s, s:s, s:b}", "cluster", o->t->name, "object",
		    json_string_value(json_object_get(md, "name")), "existed", existed);

		job_event(c, o->j->id, "withdrawn", "the job changed while it was applied; the "
		    "object was deleted", d, &e);
		json_decref(d);
	}
cleanup:
	if (e.status != 0)
		log_warn(NULL, "dispatch", "cannot settle a changed job", "{s:s, s:s}", "job",
		    o->j->id, "error", e.msg);
	PQclear(r);
	db_release(c);
}

/* ---- applying */

static pthread_mutex_t ns_mu = PTHREAD_MUTEX_INITIALIZER;
static json_t *ns_known;	/* "cluster/ns" -> true */

static bool
ns_ensure(const struct member *t, const char *ns, struct err *e)
{
	char key[200];
	bool known;

	snprintf(key, sizeof(key), "%s/%s", t->id, ns);
	pthread_mutex_lock(&ns_mu);
	if (ns_known == NULL)
		ns_known = json_object();
	known = json_object_get(ns_known, key) != NULL;
	pthread_mutex_unlock(&ns_mu);
	if (known)
		return true;
	if (!kube_ensure_namespace(&t->pc, ns, e))
		return false;
	pthread_mutex_lock(&ns_mu);
	json_object_set_new(ns_known, key, json_true());
	pthread_mutex_unlock(&ns_mu);
	return true;
}

static void
ns_forget(const struct member *t, const char *ns)
{
	char key[200];

	snprintf(key, sizeof(key), "%s/%s", t->id, ns);
	pthread_mutex_lock(&ns_mu);
	json_object_del(ns_known, key);
	pthread_mutex_unlock(&ns_mu);
}


/* The LocalQueue (and WorkloadPriorityClass) the manifest's Kueue labels name, server-side
 * applied (field manager fleetd, idempotent) before each Ray object that names them:
 * Kueue leaves a job whose LocalQueue is missing inadmissible, and a LocalQueue deleted
 * on the member meanwhile must come back with the next job (no per-process "already
 * applied" cache).  seen (may be NULL): the objects applied by this batch already, so
 * a batch of one queue's jobs applies them once. */
static bool
kueue_ensure(const struct dispatch_job *j, const struct member *t,
    const json_t *manifest, json_t *seen, struct err *e)
{
	json_t *objs, *o, *todo = NULL;
	size_t i;
	bool ok = true;

	if (strcmp(t->batch_scheduler, "kueue") != 0)
		return true;
	if ((objs = kuberay_kueue_objects(manifest, t->kueue_cluster_queue, j->priority, e)) ==
	    NULL)
		return false;
	todo = json_array();
	json_array_foreach(objs, i, o) {
		char *spec = json_dumps(o, JSON_COMPACT | JSON_SORT_KEYS);

		if (seen == NULL || spec == NULL || json_object_get(seen, spec) == NULL)
			json_array_append(todo, o);
		free(spec);
	}
	if (json_array_size(todo) > 0 && (ok = kube_apply_all(&t->pc, todo, e)) && seen != NULL)
		json_array_foreach(todo, i, o) {
			char *spec = json_dumps(o, JSON_COMPACT | JSON_SORT_KEYS);

			if (spec != NULL)
				json_object_set_new(seen, spec, json_true());
			free(spec);
		}
	json_decref(todo);
	json_decref(objs);
	return ok;
}

static bool
permanent(const struct err *e)
{
	return e->status == 422 || e->status == 400;
}

/* Deletes the object of the previous attempt (suspended at preemption, or left by a
 * withdrawal) on the cluster it was placed on — unless it is the object just applied: a
 * RayService keeps its name across attempts, so on the same cluster the previous attempt's
 * object is this one, re-applied (its serve Service stays) — and that attempt's
 * checkpoint-signal objects (always: their names carry the attempt). */
static void
delete_previous(const struct dispatch_job *j, const json_t *manifest)
{
	static const char sql[] = "SELECT cluster_id::text FROM placements WHERE job_id ="
	    " $1::uuid AND attempt = $2::int AND cluster_id IS NOT NULL ORDER BY id DESC LIMIT 1";
	const char *kind = json_string_value(json_object_get(manifest, "kind")),
	    *ns = jsonx_meta_str(manifest, "namespace"),
	    *sname = json_string_value(json_object_get(j->spec, "name"));
	struct member *t = NULL;
	char at[16], name[64];
	const char *p[2] = { j->id, at };
	struct err e = { 0 };
	struct db *c;
	PGresult *r = NULL;
	enum jobspec_kind k;
	bool same;

	snprintf(at, sizeof(at), "%d", j->attempt - 1);
	if (j->attempt < 2 || !jobspec_kind_parse(kind, &k) || sname == NULL ||
	    !kuberay_object_name(k, sname, j->id, j->attempt - 1, name, sizeof(name)))
		return;
	if ((c = db_acquire(5000, &e)) == NULL)
		return;
	if (db_exec(c, sql, 2, p, &r, &e) && PQntuples(r) == 1)
		member_load(c, PQgetvalue(r, 0, 0), &t, &e);
	db_release(c);
	if (t == NULL)
		goto cleanup;
	same = strcmp(t->id, j->cluster_id) == 0 &&
	    strcmp(name, jsonx_meta_str(manifest, "name")) == 0;
	if (!same && !kube_delete_object(&t->pc, "ray.io/v1", kind, ns, name, NULL, &e)) {
		log_warn(NULL, "dispatch", "cannot delete the previous attempt", "{s:s, s:s, s:s}",
		    "job", j->id, "object", name, "error", e.msg);
		err_clear(&e);
	}
	/* the previous attempt's signal objects go either way, even when its Ray object
	 * could not be deleted: this attempt has its own */
	if (!dispatch_signal_delete(&t->pc, ns, j->id, j->attempt - 1, &e))
		log_warn(NULL, "dispatch", "cannot delete the previous attempt's signal objects",
		    "{s:s, s:s}", "job", j->id, "error", e.msg);
cleanup:
	PQclear(r);
	member_free(t);
}

/* A user image that looks like a CPU build on NVIDIA workers (the render's warning): a
 * warning in the job's events (once per attempt); cloudsim, like a real node, crash-loops
 * such pods. */
static void
warn_image(const struct outcome *o)
{
	struct err e = { 0 };
	struct db *c;
	json_t *d;

	if (o->warning == NULL || (c = db_acquire(5000, &e)) == NULL)
		return;
	d = json_pack("{s:O?}", "image", json_object_get(o->warning, "image"));
	if (!job_event_once(c, o->j->id, o->j->attempt, "warning", "image_cpu_build",
	    json_string_value(json_object_get(o->warning, "message")), d, &e))
		log_warn(NULL, "dispatch", "cannot record the image warning", "{s:s}", "job",
		    o->j->id);
	json_decref(d);
	db_release(c);
}

/* ---- a batch: n claimed jobs of one cluster, one or many, in six phases
 *
 *   render   each job's manifest, its Kueue objects (once per batch) and its signal objects
 *   signals  one round of concurrent applies for every signal object of the batch
 *   reuse    a job claimed before in this attempt may find its object there (exactly once)
 *   apply    one round of concurrent applies for the Ray objects
 *   record   one transaction records them all; if it fails, each in one of its own
 *   settle   a job that changed meanwhile is withdrawn; the others are counted, and the
 *            previous attempt's objects deleted
 *
 * A job that fails in a phase is failed for good or retried later there (many_fail) and
 * takes no part in the next phases. */

enum many_state { M_LIVE, M_DONE, M_APPLIED, M_RECORDED, M_CHANGED };

struct many {
	struct dispatch_job	**jobs;		/* the claimed jobs (o[i].j is jobs[i]) */
	struct outcome		*o;
	unsigned char		*state;		/* enum many_state per job */
	size_t			 n;
	const struct member	*t;
	json_t			*kueue_seen;	/* Kueue objects applied by this batch */
	json_t			*sig;		/* the signal objects of every job */
	size_t			*owner;		/* the job of each signal object */
	size_t			 owner_cap;
};

static size_t *
grow_idx(size_t *p, size_t *cap, size_t need)
{
	if (need <= *cap)
		return p;
	*cap = need < 16 ? 16 : 2 * need;
	if ((p = realloc(p, *cap * sizeof(*p))) == NULL)
		abort();
	return p;
}

/* Job i of the batch failed with e: failed for good (always with permanent_only) or
 * retried later. */
static void
many_fail(struct many *mb, size_t i, const struct err *e, bool permanent_only,
    struct dispatch_stats *st)
{
	const struct outcome *o = &mb->o[i];

	if (permanent_only || permanent(e))
		fail_job(o->who, o->j, e, st);
	else
		retry_later(o->who, o->j, e, st);
	mb->state[i] = M_DONE;
}

/* Loads the batch's cluster into mb->t; false (every job failed or retried) when it
 * cannot be loaded. */
static bool
many_member(struct many *mb, struct member **t, struct dispatch_stats *st)
{
	struct err e = { 0 };
	struct db *c;
	bool ok;

	if ((c = db_acquire(5000, &e)) == NULL) {
		for (size_t i = 0; i < mb->n; i++)
			many_fail(mb, i, &e, false, st);
		return false;
	}
	ok = member_load(c, mb->o[0].j->cluster_id, t, &e);
	db_release(c);
	for (size_t i = 0; i < mb->n && !ok; i++) {
		if (e.status == 404)	/* the cluster is gone */
			fail_job(mb->o[i].who, mb->o[i].j, &e, st);
		else
			retry_later(mb->o[i].who, mb->o[i].j, &e, st);
	}
	mb->t = *t;
	return ok;
}

/* The Ray auth tokens of the batch's jobs whose Ray has token auth, in one transaction
 * (one commit per batch instead of one per job).  When that fails the jobs keep no token
 * and each signal render reads its own (and fails or retries the job as before). */
static void
many_tokens(struct many *mb)
{
	const char **ids = calloc(mb->n, sizeof(*ids));
	char **tokens = calloc(mb->n, sizeof(*tokens));
	size_t *at = calloc(mb->n, sizeof(*at)), k = 0;
	struct err e = { 0 };

	if (ids == NULL || tokens == NULL || at == NULL)
		abort();
	for (size_t i = 0; i < mb->n; i++) {
		struct dispatch_job *j = mb->jobs[i];

		if (mb->state[i] == M_LIVE && j->ray_token == NULL && j->spec != NULL &&
		    kuberay_auth_supported(json_string_value(json_object_get(j->spec,
		    "ray_version")))) {
			ids[k] = j->id;
			at[k++] = i;
		}
	}
	if (k > 0 && rayauth_ensure_many(ids, k, tokens, &e))
		for (size_t x = 0; x < k; x++)
			mb->jobs[at[x]]->ray_token = tokens[x];
	free(ids);
	free(tokens);
	free(at);
}

/* render: each job's manifest, then its LocalQueue (once per batch) and namespace on the
 * cluster, and its signal objects into mb->sig (docs/design/contracts.md: ServiceAccount,
 * ConfigMap, Role, RoleBinding before the Ray object of the attempt). */
static void
many_render(struct many *mb, struct dispatch_stats *st)
{
	const struct member *t = mb->t;

	many_tokens(mb);
	for (size_t i = 0; i < mb->n; i++) {
		struct outcome *o = &mb->o[i];
		struct err e = { 0 };
		const char *ns;
		json_t *objs, *obj;
		size_t x;

		o->t = t;
		if (o->j->spec == NULL || o->j->placement == NULL) {
			err_set(&e, 422, "dispatch.bad_row", "the job has no readable spec or placement");
			many_fail(mb, i, &e, true, st);
			continue;
		}
		/* an unrenderable Ray object fails the job; signal objects that cannot be made
		 * (their token not readable) retry it */
		if (!dispatch_render_job(o->j, t, &o->manifest, &objs, &o->warning, &e)) {
			many_fail(mb, i, &e, o->manifest == NULL, st);
			continue;
		}
		ns = jsonx_meta_str(o->manifest, "namespace");
		if (!ns_ensure(t, ns, &e) ||
		    !kueue_ensure(o->j, t, o->manifest, mb->kueue_seen, &e)) {
			if (e.status == 404)
				ns_forget(t, ns);
			json_decref(objs);
			many_fail(mb, i, &e, false, st);
			continue;
		}
		if (json_is_object(objs))
			objs = json_pack("[o]", objs);
		json_array_foreach(objs, x, obj) {
			size_t at = json_array_size(mb->sig);

			mb->owner = grow_idx(mb->owner, &mb->owner_cap, at + 1);
			mb->owner[at] = i;
			json_array_append(mb->sig, obj);
		}
		json_decref(objs);
	}
}

/* signals: one round of concurrent applies; only their errors count (their answers are
 * not parsed). */
static void
many_signals(struct many *mb, struct dispatch_stats *st)
{
	size_t k = json_array_size(mb->sig);
	struct err *errs;

	if (k == 0)
		return;
	if ((errs = calloc(k, sizeof(*errs))) == NULL)
		abort();
	kube_apply_each(&mb->t->pc, mb->sig, NULL, errs, NULL);
	for (size_t i = 0; i < k; i++)
		if (errs[i].status != 0 && mb->state[mb->owner[i]] == M_LIVE)
			many_fail(mb, mb->owner[i], &errs[i], false, st);
	free(errs);
}

/* The GET of a job claimed before in this attempt: its object may be there already (a
 * replica died between apply and record).  False on a failed GET. */
static bool
reuse_one(struct outcome *o, struct err *e)
{
	json_t *live = NULL;
	const char *la, *uid, *rv;
	char at[16];

	snprintf(at, sizeof(at), "%d", o->j->attempt);
	if (!kube_get_object(&o->t->pc, "ray.io/v1",
	    json_string_value(json_object_get(o->manifest, "kind")),
	    jsonx_meta_str(o->manifest, "namespace"), jsonx_meta_str(o->manifest, "name"),
	    &live, e)) {
		if (e->status != 404)
			return false;
		err_clear(e);
		return true;
	}
	la = json_string_value(json_object_get(jsonx_meta(live, "annotations"),
	    "fleet.io/attempt"));
	uid = jsonx_meta_str(live, "uid");
	rv = jsonx_meta_str(live, "resourceVersion");
	if (la != NULL && strcmp(la, at) == 0 && uid != NULL) {
		snprintf(o->ref.uid, sizeof(o->ref.uid), "%s", uid);
		snprintf(o->ref.resource_version, sizeof(o->ref.resource_version), "%s",
		    rv ? rv : "");
		o->reused = true;
	}
	json_decref(live);
	return true;
}

/* reuse: the attempt's first claim skips the GET: nothing of it can be there yet. */
static void
many_reuse(struct many *mb, struct dispatch_stats *st)
{
	for (size_t i = 0; i < mb->n; i++) {
		struct err e = { 0 };

		if (mb->state[i] != M_LIVE || mb->o[i].j->first)
			continue;
		if (!reuse_one(&mb->o[i], &e))
			many_fail(mb, i, &e, false, st);
		else if (mb->o[i].reused)
			mb->state[i] = M_APPLIED;
	}
}

/* apply: one round of concurrent server-side applies of the Ray objects still to apply. */
static void
many_apply(struct many *mb, struct dispatch_stats *st)
{
	json_t *ray = json_array();
	struct kube_ref *refs = calloc(mb->n, sizeof(*refs));
	struct err *errs = calloc(mb->n, sizeof(*errs));
	size_t *job = calloc(mb->n, sizeof(*job)), i, k = 0;
	char **texts = calloc(mb->n, sizeof(*texts));

	if (ray == NULL || refs == NULL || errs == NULL || job == NULL || texts == NULL)
		abort();
	for (i = 0; i < mb->n; i++)
		if (mb->state[i] == M_LIVE) {
			job[k++] = i;
			json_array_append(ray, mb->o[i].manifest);
		}
	if (k > 0)
		kube_apply_each(&mb->t->pc, ray, refs, errs, texts);
	for (i = 0; i < k; i++) {
		struct outcome *o = &mb->o[job[i]];

		o->text = texts[i];	/* the record stores the text the member took */
		if (errs[i].status != 0) {
			if (errs[i].status == 404)	/* the namespace went away */
				ns_forget(mb->t, jsonx_meta_str(o->manifest, "namespace"));
			many_fail(mb, job[i], &errs[i], false, st);
			continue;
		}
		o->ref = refs[i];
		mb->state[job[i]] = M_APPLIED;
	}
	json_decref(ray);
	free(refs);
	free(errs);
	free(job);
	free(texts);
}

/* The rows record_many_tx's UPDATE reads, as JSON text: each applied job's fields and its
 * manifest, spliced in as the text its apply sent (dumped here only for an object found
 * already there) instead of dumping every manifest a second time.  *out NULL when no job
 * of the batch is applied; false (e) when one cannot be encoded. */
static bool
rows_text(const struct many *mb, char **out, struct err *e)
{
	char *buf = NULL;
	size_t len = 0, cap = 0;

	*out = NULL;
	for (size_t i = 0; i < mb->n; i++) {
		const struct outcome *o = &mb->o[i];
		json_t *f;
		char *row, *own = NULL;
		const char *m;

		if (mb->state[i] != M_APPLIED)
			continue;
		f = json_pack("{s:s, s:i, s:s?, s:s, s:s}", "id", o->j->id, "attempt",
		    o->j->attempt, "name", jsonx_meta_str(o->manifest, "name"), "uid", o->ref.uid,
		    "rv", o->ref.resource_version);
		row = f != NULL ? json_dumps(f, JSON_COMPACT) : NULL;
		json_decref(f);
		m = o->text != NULL ? o->text : (own = json_dumps(o->manifest, JSON_COMPACT));
		if (row == NULL || m == NULL) {
			free(row);
			free(own);
			free(buf);
			return err_set(e, 500, "dispatch.oom", "cannot encode the batch");
		}
		/* {"id":…,"rv":"…"} becomes {"id":…,"rv":"…","manifest":{…}} */
		textbuf_append(&buf, &len, &cap, len == 0 ? "[" : ",", 1);
		textbuf_append(&buf, &len, &cap, row, strlen(row) - 1);
		textbuf_append(&buf, &len, &cap, ",\"manifest\":", 12);
		textbuf_append(&buf, &len, &cap, m, strlen(m));
		textbuf_append(&buf, &len, &cap, "}", 1);
		free(row);
		free(own);
	}
	if (buf != NULL)
		textbuf_append(&buf, &len, &cap, "]", 1);
	*out = buf;
	return true;
}

/* Records every applied job of the batch in one transaction: one UPDATE of all their rows
 * (each still this claim's: the conditions of record_row), then each one's transition. */
static bool
record_many_tx(struct db *c, void *arg, struct err *e)
{
	static const char sql[] = "UPDATE jobs j SET object_name = x.name, object_uid = x.uid,"
	    " object_rv = x.rv, manifest = x.manifest, dispatched_at = now(), claimed_by = NULL,"
	    " claimed_at = NULL, tries = 0, next_try_at = now()"
	    " FROM jsonb_to_recordset($1::jsonb) AS x(id uuid, attempt int, name text, uid text,"
	    " rv text, manifest jsonb)"
	    " WHERE j.id = x.id AND j.state = 'admitted' AND j.attempt = x.attempt"
	    " AND j.claimed_by = $2 AND NOT j.cancel_requested RETURNING j.id::text";
	struct many *mb = arg;
	char *text = NULL;
	const char *p[2];
	PGresult *r = NULL;
	bool any = false, ok = false;

	for (size_t i = 0; i < mb->n; i++)
		if (mb->state[i] == M_RECORDED || mb->state[i] == M_CHANGED)
			mb->state[i] = M_APPLIED;	/* a retried transaction starts over */
	if (!rows_text(mb, &text, e))
		goto cleanup;
	if (text == NULL) {
		ok = true;
		goto cleanup;
	}
	p[0] = text;
	p[1] = mb->o[0].who;
	if (!db_exec(c, sql, 2, p, &r, e))
		goto cleanup;
	for (size_t i = 0; i < mb->n; i++) {
		bool mine = false;

		if (mb->state[i] != M_APPLIED)
			continue;
		for (int row = 0; row < PQntuples(r) && !mine; row++)
			mine = strcasecmp(PQgetvalue(r, row, 0), mb->o[i].j->id) == 0;
		if (mine && !record_event(c, &mb->o[i], e))
			goto cleanup;
		mb->state[i] = mine ? M_RECORDED : M_CHANGED;
		any |= mine;
	}
	ok = !any || db_notify(c, "fleet_status", "", e);
cleanup:
	PQclear(r);
	free(text);
	return ok;
}

/* record: admitted -> dispatched for each applied job still this claim's; a job that
 * cannot be recorded is retried later (the next try finds its object). */
static void
many_record(struct many *mb, struct dispatch_stats *st)
{
	struct err e = { 0 };

	if (db_tx(record_many_tx, mb, &e))
		return;
	for (size_t i = 0; i < mb->n; i++) {
		if (mb->state[i] != M_APPLIED && mb->state[i] != M_RECORDED &&
		    mb->state[i] != M_CHANGED)
			continue;
		err_clear(&e);
		if (db_tx(record_tx, &mb->o[i], &e))
			mb->state[i] = M_RECORDED;
		else if (strcmp(e.code, "dispatch.changed") == 0)
			mb->state[i] = M_CHANGED;
		else
			many_fail(mb, i, &e, false, st);
	}
}

/* settle: withdraw what changed meanwhile; count the recorded and clean up after them. */
static void
many_settle(struct many *mb, struct dispatch_stats *st)
{
	for (size_t i = 0; i < mb->n; i++) {
		const struct outcome *o = &mb->o[i];

		if (mb->state[i] == M_CHANGED) {
			after_changed(o, st);
		} else if (mb->state[i] == M_RECORDED) {
			st->dispatched++;
			st->reused += o->reused;
			delete_previous(o->j, o->manifest);
			warn_image(o);
		}
	}
}

void
dispatch_many(const char *who, struct dispatch_job **jobs, size_t n, struct dispatch_stats *st)
{
	struct many mb = { 0 };
	struct member *t = NULL;

	if (n == 0)
		return;
	mb.n = n;
	mb.jobs = jobs;
	mb.o = calloc(n, sizeof(*mb.o));
	mb.state = calloc(n, 1);
	mb.kueue_seen = json_object();
	mb.sig = json_array();
	if (mb.o == NULL || mb.state == NULL || mb.kueue_seen == NULL || mb.sig == NULL)
		abort();
	for (size_t i = 0; i < n; i++) {
		mb.o[i].j = jobs[i];
		mb.o[i].who = who;
	}
	if (many_member(&mb, &t, st)) {
		many_render(&mb, st);
		many_signals(&mb, st);
		many_reuse(&mb, st);
		many_apply(&mb, st);
		many_record(&mb, st);
		many_settle(&mb, st);
	}
	for (size_t i = 0; i < n; i++) {
		json_decref(mb.o[i].manifest);
		json_decref(mb.o[i].warning);
		free(mb.o[i].text);
	}
	free(mb.o);
	free(mb.state);
	free(mb.owner);
	json_decref(mb.sig);
	json_decref(mb.kueue_seen);
	member_free(t);
}

void
dispatch_one(const char *who, struct dispatch_job *j, struct dispatch_stats *st)
{
	dispatch_many(who, &j, 1, st);
}

/* ---- the loop */

#define BATCH_MAX	32	/* claimed jobs of one cluster per task */

static struct {
	bool			 started;
	PGconn			*conn;		/* the loop's: LISTEN and the liveness lock */
	struct dispatch_pool	*pool;
	atomic_size_t		 inflight;	/* claimed jobs queued or being applied */
} S;

/* A task of the pool: claimed jobs of one cluster.  Until a worker starts it, it is open:
 * later claims of its cluster join it (up to BATCH_MAX) instead of queueing a task of
 * their own behind it, so a busy cluster's jobs go out in one batch — one member load,
 * one token transaction, one round of applies and one record transaction for all. */
struct batch {
	struct dispatch_job	*jobs[BATCH_MAX];
	size_t			 n;
	bool			 open;		/* on the open list, not started */
	struct batch		*next_open;
	struct batch		*next_fresh;	/* queue_jobs' list of its new batches */
};

static pthread_mutex_t open_mu = PTHREAD_MUTEX_INITIALIZER;
static struct batch *open_head;

/* Takes b off the open list (open_mu held); nothing joins it afterwards. */
static void
close_batch(struct batch *b)
{
	if (!b->open)
		return;
	for (struct batch **pp = &open_head; *pp != NULL; pp = &(*pp)->next_open)
		if (*pp == b) {
			*pp = b->next_open;
			break;
		}
	b->open = false;
	b->next_open = NULL;
}

static void
task_drop(void *arg)
{
	struct batch *b = arg;

	pthread_mutex_lock(&open_mu);
	close_batch(b);
	pthread_mutex_unlock(&open_mu);
	for (size_t i = 0; i < b->n; i++)
		dispatch_job_free(b->jobs[i]);
	atomic_fetch_sub(&S.inflight, b->n);
	free(b);
}

static void
task_run(void *arg)
{
	struct batch *b = arg;
	struct dispatch_stats st = { 0 };

	pthread_mutex_lock(&open_mu);
	close_batch(b);
	pthread_mutex_unlock(&open_mu);
	dispatch_many(cfg.instance_id, b->jobs, b->n, &st);
	count(&st);
	task_drop(b);
}

/* Hands the claimed jobs to the pool: each joins its cluster's open batch when there is
 * one with room, else starts a new one (a new task, queued once every job has found its
 * batch, so the batches of this claim are whole when a worker takes them). */
static void
queue_jobs(struct dispatch_job **jobs, size_t n)
{
	struct batch *fresh = NULL, *b;

	atomic_fetch_add(&S.inflight, n);
	pthread_mutex_lock(&open_mu);
	for (size_t i = 0; i < n; i++) {
		for (b = open_head; b != NULL; b = b->next_open)
			if (b->n < BATCH_MAX &&
			    strcmp(b->jobs[0]->cluster_id, jobs[i]->cluster_id) == 0)
				break;
		if (b == NULL) {
			if ((b = calloc(1, sizeof(*b))) == NULL)
				abort();
			b->open = true;
			b->next_open = open_head;
			open_head = b;
			b->next_fresh = fresh;
			fresh = b;
		}
		b->jobs[b->n++] = jobs[i];
		jobs[i] = NULL;
	}
	pthread_mutex_unlock(&open_mu);
	while ((b = fresh) != NULL) {
		fresh = b->next_fresh;
		dispatch_pool_add(S.pool, b->jobs[0]->cluster_id, task_run, task_drop, b);
	}
}

/* The loop's connection: LISTEN fleet_dispatch and hold this replica's liveness lock. */
static PGconn *
loop_connect(void)
{
	PGconn *c = listen_open(cfg.database_url, "fleet_dispatch");
	char cls[16];
	const char *p[2] = { cls, cfg.instance_id };
	bool ok;

	if (c == NULL)
		return NULL;
	snprintf(cls, sizeof(cls), "%d", DISPATCH_LOCK_CLASS);
	ok = listen_exec(c, "SELECT pg_advisory_lock($1::int, hashtext($2))", 2, p,
	    PGRES_TUPLES_OK);
	if (ok) {
		/* A replica restarted under the same name holds its old claims' lock again:
		 * release them, or they would wait for the lease. */
		const char *q[1] = { cfg.instance_id };

		ok = listen_exec(c, "UPDATE jobs SET claimed_by = NULL, next_try_at ="
		    " greatest(next_try_at, claimed_at + interval '" DISPATCH_INFLIGHT_S
		    " seconds') WHERE claimed_by = $1 AND state = 'admitted'", 1, q,
		    PGRES_COMMAND_OK);
	}
	if (!ok) {
		PQfinish(c);
		return NULL;
	}
	return c;
}

/* One round of the loop (core/ticker): claim what the pool has room for, hand it out,
 * and wait on the loop's LISTEN connection for a NOTIFY (a short wait while claims fill
 * the room, else IDLE_WAKE_MS); the ticker's own wait is 0, or 1 s without a connection. */
static void
round_once(void)
{
	int threads = cfg.dispatch_concurrency > 0 ? cfg.dispatch_concurrency : 16;
	int cap = threads * CLAIM_PER_THREAD, room;
	struct dispatch_job **jobs = NULL;
	struct err e = { 0 };
	size_t n = 0;

	if (S.conn == NULL || PQstatus(S.conn) != CONNECTION_OK) {
		if (S.conn != NULL)
			PQfinish(S.conn);
		if ((S.conn = loop_connect()) == NULL)
			return;
	}
	room = cap - (int)atomic_load(&S.inflight);
	if (room > 0 && !claim(cfg.instance_id, room, &jobs, &n, &e))
		log_warn(NULL, "dispatch", "claim failed", "{s:s}", "error", e.msg);
	queue_jobs(jobs, n);
	free(jobs);
	atomic_fetch_add(&M.claimed, n);
	listen_wait(S.conn, room <= 0 || (int)n == room ? 50 : IDLE_WAKE_MS);
}

static long
period_ms(void)
{
	return S.conn != NULL ? 0 : 1000;
}

static struct ticker ticker = TICKER_INIT(round_once, period_ms);

bool
dispatch_start(struct err *e)
{
	int threads = cfg.dispatch_concurrency > 0 ? cfg.dispatch_concurrency : 16;

	if (!lease_start(e))
		return false;
	S.pool = dispatch_pool_new(threads);
	if (!ticker_start(&ticker, "dispatch.start", "cannot start the dispatch thread", e)) {
		dispatch_pool_free(S.pool);
		S.pool = NULL;
		lease_stop();
		return false;
	}
	S.started = true;
	return true;
}

void
dispatch_stop(void)
{
	if (!S.started)
		return;
	ticker_stop(&ticker);
	dispatch_pool_wait(S.pool);
	if (S.conn != NULL)
		PQfinish(S.conn);	/* releases the liveness lock: claims left become claimable */
	S.conn = NULL;
	dispatch_pool_free(S.pool);
	S.pool = NULL;
	S.started = false;
	lease_stop();
	pthread_mutex_lock(&ns_mu);
	json_decref(ns_known);
	ns_known = NULL;
	pthread_mutex_unlock(&ns_mu);
}

void
dispatch_metrics(char **buf, size_t *len, size_t *cap)
{
	textbuf_appendf(buf, len, cap,
	    "# HELP fleetd_dispatch_jobs_total Claimed jobs by outcome on this replica.\n"
	    "# TYPE fleetd_dispatch_jobs_total counter\n"
	    "fleetd_dispatch_jobs_total{outcome=\"claimed\"} %lu\n"
	    "fleetd_dispatch_jobs_total{outcome=\"dispatched\"} %lu\n"
	    "fleetd_dispatch_jobs_total{outcome=\"reused\"} %lu\n"
	    "fleetd_dispatch_jobs_total{outcome=\"retried\"} %lu\n"
	    "fleetd_dispatch_jobs_total{outcome=\"failed\"} %lu\n"
	    "fleetd_dispatch_jobs_total{outcome=\"replaced\"} %lu\n"
	    "fleetd_dispatch_jobs_total{outcome=\"withdrawn\"} %lu\n"
	    "# HELP fleetd_dispatch_inflight Claimed jobs queued or being applied.\n"
	    "# TYPE fleetd_dispatch_inflight gauge\nfleetd_dispatch_inflight %zu\n",
	    atomic_load(&M.claimed), atomic_load(&M.dispatched), atomic_load(&M.reused),
	    atomic_load(&M.retried), atomic_load(&M.failed), atomic_load(&M.replaced),
	    atomic_load(&M.withdrawn), atomic_load(&S.inflight));
}
