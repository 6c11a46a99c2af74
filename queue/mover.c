/* mover: each visit claims due moving jobs (SKIP LOCKED), commits, talks to the member
 * clusters with no transaction open, then records the next phase in a new transaction.
 * The source lets go only after the target is reserved (move.c); for RayService the
 * target must report ready before the source is deleted, so a ready copy always exists. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/config.h"
#include "core/log.h"
#include "providers/kube.h"
#include "queue/dispatch.h"
#include "queue/job.h"
#include "queue/move.h"
#include "queue/mover.h"

#define MOVER_BATCH	8
#define MOVER_LEASE_S	120

struct mjob {
	char	 id[40];
	char	 kind[24];
	int	 attempt;
	int	 tries;
	json_t	*spec;
	json_t	*move;		/* jobs.move */
	json_t	*manifest;	/* what is applied at the source */
	char	 environment[64];
	char	 queue[64];
	char	*next_phase;	/* what this visit decided */
	json_t	*patch;		/* members to merge into jobs.move */
	bool	 finish;	/* record the job dispatched at the target */
	bool	 abandon;	/* requeue */
	bool	 transient;	/* this visit failed (tries counts such visits in a row) */
	const char *why;
	char	 why_buf[256];	/* why, when it comes from an error of step() */
	int	 delay_s;	/* next visit */
};

static const char sql_claim[] =
    "UPDATE jobs j SET claimed_by = $1, claimed_at = now(), tries = j.tries + 1"
    " FROM queues q WHERE q.id = j.queue_id AND j.id IN (SELECT id FROM jobs WHERE"
    " state = 'moving' AND next_try_at <= now() AND (claimed_by IS NULL OR claimed_at <"
    " now() - make_interval(secs => $2::int)) ORDER BY next_try_at LIMIT $3"
    " FOR UPDATE SKIP LOCKED)"
    " RETURNING j.id::text, j.kind, j.attempt, j.tries, j.spec::text, j.move::text,"
    " coalesce(j.manifest::text, 'null'), j.environment, q.name";

static void
mjob_free(struct mjob *m)
{
	json_decref(m->spec);
	json_decref(m->move);
	json_decref(m->manifest);
	json_decref(m->patch);
	free(m->next_phase);
}

static const char *
mstr(json_t *o, const char *path1, const char *path2)
{
	json_t *v = json_object_get(o, path1);

	if (path2 != NULL)
		v = json_object_get(v, path2);
	return json_string_value(v);
}

/* The cluster of one end of the move. */
static bool
end_target(const char *cluster_id, struct dispatch_target **t, struct err *e)
{
	struct db *c = db_acquire(5000, e);
	bool ok;

	if (c == NULL)
		return false;
	ok = dispatch_target_load(c, cluster_id, t, e);
	db_release(c);
	return ok;
}

/* Applies a copy of the source manifest changed by fn (annotation, suspend). */
static bool
source_reapply(struct mjob *m, const struct dispatch_target *src, const char *annotation,
	       bool suspend, struct err *e)
{
	json_t *copy, *meta, *ann, *live = NULL;
	struct kube_ref ref;
	bool ok;

	/* A server-side apply creates what is absent: a source that vanished (finished and
	 * collected, deleted by hand) has nothing left to signal or stop, never re-create it */
	if (!kube_get_object(&src->pc, "ray.io/v1", m->kind, mstr(m->manifest, "metadata",
	    "namespace"), mstr(m->manifest, "metadata", "name"), &live, e)) {
		if (e->status != 404)
			return false;
		err_clear(e);
		return true;
	}
	json_decref(live);
	copy = json_deep_copy(m->manifest);
	meta = json_object_get(copy, "metadata");
	ann = json_object_get(meta, "annotations");
	if (ann == NULL) {
		ann = json_object();
		json_object_set_new(meta, "annotations", ann);
	}
	if (annotation != NULL)
		json_object_set_new(ann, "fleet.io/checkpoint-requested", json_string(annotation));
	json_object_del(meta, "resourceVersion");
	json_object_del(meta, "uid");
	if (suspend)
		json_object_set_new(json_object_get(copy, "spec"), "suspend", json_true());
	ok = kube_apply(&src->pc, copy, &ref, NULL, e);
	json_decref(copy);
	return ok || e->status == 404;	/* a vanished source has nothing left to stop */
}

static bool
source_delete(struct mjob *m, const struct dispatch_target *src, struct err *e)
{
	return kube_delete_object(&src->pc, "ray.io/v1", m->kind,
	    mstr(m->manifest, "metadata", "namespace"), mstr(m->manifest, "metadata", "name"),
	    NULL, e);
}

static void
rfc3339_in(int secs, char *buf, size_t n)
{
	time_t t = time(NULL) + secs;
	struct tm tm;

	gmtime_r(&t, &tm);
	strftime(buf, n, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

/* Renders and applies the next attempt at the target; fills the patch with the object. */
static bool
target_apply(struct mjob *m, const struct dispatch_target *dst, struct err *e)
{
	struct dispatch_job dj;
	struct kube_ref ref;
	json_t *obj;
	bool ok;

	memset(&dj, 0, sizeof(dj));
	snprintf(dj.id, sizeof(dj.id), "%s", m->id);
	snprintf(dj.cluster_id, sizeof(dj.cluster_id), "%s", dst->id);
	snprintf(dj.environment, sizeof(dj.environment), "%s", m->environment);
	snprintf(dj.queue, sizeof(dj.queue), "%s", m->queue);
	dj.attempt = m->attempt + 1;
	dj.spec = m->spec;
	dj.placement = json_object_get(m->move, "to");
	obj = dispatch_render(&dj, dst, e);
	if (obj == NULL)
		return false;
	ok = kube_ensure_namespace(&dst->pc, mstr(obj, "metadata", "namespace"), e) &&
	    kube_apply(&dst->pc, obj, &ref, NULL, e);
	if (ok)
		json_object_set_new(m->patch, "target_object", json_pack("{s:O, s:s, s:s}",
		    "manifest", obj, "uid", ref.uid, "resource_version", ref.resource_version));
	json_decref(obj);
	return ok;
}

static bool
target_ready(struct mjob *m, const struct dispatch_target *dst, struct err *e)
{
	json_t *tobj = json_object_get(json_object_get(m->move, "target_object"), "manifest");
	json_t *live = NULL, *conds;
	const char *st;
	bool ready = false;
	size_t i;
	json_t *c;

	if (!kube_get_object(&dst->pc, "ray.io/v1", m->kind, mstr(tobj, "metadata", "namespace"),
	    mstr(tobj, "metadata", "name"), &live, e))
		return false;
	st = mstr(live, "status", "serviceStatus");
	ready = st != NULL && strcmp(st, "Running") == 0;
	conds = json_object_get(json_object_get(live, "status"), "conditions");
	json_array_foreach(conds, i, c)
	{
		const char *type = json_string_value(json_object_get(c, "type"));
		const char *status = json_string_value(json_object_get(c, "status"));

		if (type && status && strcmp(type, "Ready") == 0 && strcmp(status, "True") == 0)
			ready = true;
	}
	json_decref(live);
	return ready;
}

/* One step of the state machine; network only, no database. */
static void
step(struct mjob *m)
{
	const char *phase = mstr(m->move, "phase", NULL);
	const char *src_id = mstr(m->move, "from", "cluster_id");
	const char *dst_id = mstr(m->move, "to", "cluster");
	struct dispatch_target *src = NULL, *dst = NULL;
	struct err e = { 0 };
	bool has_src = m->manifest != NULL && !json_is_null(m->manifest) && src_id != NULL;
	bool service = strcmp(m->kind, "RayService") == 0;
	json_t *gj = json_object_get(json_object_get(m->spec, "checkpoint"), "grace_seconds");
	int grace = json_is_integer(gj) ? (int)json_integer_value(gj) : 30;	/* 0: none */

	m->patch = json_object();
	m->delay_s = 1;
	if ((has_src && !end_target(src_id, &src, &e)) || !end_target(dst_id, &dst, &e))
		goto transient;
	if (strcmp(phase, "reserved") == 0) {
		if (!has_src || service) {
			m->next_phase = strdup("suspended");	/* nothing to stop first */
		} else if (json_object_get(json_object_get(m->spec, "checkpoint"), "uri") != NULL) {
			char deadline[32];

			rfc3339_in(grace, deadline, sizeof(deadline));
			if (!source_reapply(m, src, deadline, false, &e))
				goto transient;
			json_object_set_new(m->patch, "deadline", json_string(deadline));
			json_object_set_new(m->patch, "deadline_epoch",
			    json_integer((json_int_t)time(NULL) + grace));
			m->next_phase = strdup("checkpointing");
			m->why = "checkpoint requested at the source";
		} else {
			m->next_phase = strdup("checkpointing");
			json_object_set_new(m->patch, "deadline_epoch", json_integer(0));
		}
	} else if (strcmp(phase, "checkpointing") == 0) {
		/* <=: the deadline is in whole seconds; the source gets at least its grace */
		if (time(NULL) <= json_integer_value(json_object_get(m->move, "deadline_epoch"))) {
			m->delay_s = 1;
			goto out;	/* grace period still running */
		}
		if (strcmp(m->kind, "RayJob") == 0 && !source_reapply(m, src, NULL, true, &e))
			goto transient;
		if (!source_delete(m, src, &e))
			goto transient;
		m->next_phase = strdup("suspended");
		m->why = "stopped at the source";
	} else if (strcmp(phase, "suspended") == 0) {
		if (!target_apply(m, dst, &e)) {
			if (e.status == 422 || strncmp(e.code, "kuberay.", 8) == 0) {
				m->abandon = true;
				snprintf(m->why_buf, sizeof(m->why_buf), "%s", e.msg);
				m->why = m->why_buf;
				goto out;
			}
			goto transient;
		}
		m->next_phase = strdup(service && has_src ? "applied" : "done");
		m->finish = !(service && has_src);
		m->why = "applied at the target";
	} else if (strcmp(phase, "applied") == 0) {
		if (!target_ready(m, dst, &e)) {
			if (e.status != 0)
				goto transient;
			m->delay_s = 2;
			goto out;	/* the source keeps serving until the target is ready */
		}
		if (!source_delete(m, src, &e))
			goto transient;
		m->next_phase = strdup("done");
		m->finish = true;
		m->why = "target ready, source deleted";
	}
	goto out;
transient:
	m->transient = true;
	m->delay_s = m->tries < 6 ? 1 << m->tries : 60;
	snprintf(m->why_buf, sizeof(m->why_buf), "%s", e.msg[0] ? e.msg :
	    "member cluster unavailable");
	m->why = m->why_buf;	/* e dies with this call: record_tx reads why later */
	if (m->tries > 30) {
		m->abandon = true;
	}
out:
	dispatch_target_free(src);
	dispatch_target_free(dst);
}

static bool
record_tx(struct db *c, void *arg, struct err *e)
{
	static const char sql_step[] = "UPDATE jobs SET move = move || $2::jsonb ||"
	    " jsonb_build_object('phase', coalesce($3, move->>'phase')), claimed_by = NULL,"
	    " next_try_at = now() + make_interval(secs => $4::int), updated_at = now(),"
	    " tries = CASE WHEN $5::boolean THEN tries ELSE 0 END"	/* failures in a row */
	    " WHERE id = $1::uuid AND state = 'moving' RETURNING 1";
	static const char sql_done[] = "UPDATE jobs SET state = 'dispatched', attempt = attempt + 1,"
	    " cluster_id = (move->'to'->>'cluster')::uuid, placement = move->'to',"
	    " manifest = move->'target_object'->'manifest', object_name ="
	    " move->'target_object'->'manifest'->'metadata'->>'name', object_uid ="
	    " move->'target_object'->>'uid', object_rv = move->'target_object'->>'resource_version',"
	    " dispatched_at = now(), claimed_by = NULL, tries = 0, next_try_at = now(),"
	    " version = version + 1, updated_at = now(), move = NULL, reason = 'moved'"
	    " WHERE id = $1::uuid AND state = 'moving' RETURNING (SELECT move->>'operation' FROM"
	    " jobs WHERE id = $1::uuid)";
	static const char sql_abandon[] = "UPDATE jobs SET state = 'pending', cluster_id = NULL,"
	    " placement = NULL, manifest = NULL, object_name = NULL, object_uid = NULL,"
	    " claimed_by = NULL, move = NULL, version = version + 1, updated_at = now()"
	    " WHERE id = $1::uuid AND state = 'moving' RETURNING 1";
	static const char sql_op[] = "UPDATE operation_jobs SET state = $3, reason = $4,"
	    " updated_at = now() WHERE operation_id = $1::uuid AND job_id = $2::uuid";
	static const char sql_event[] = "INSERT INTO job_events (job_id, type, from_state, to_state,"
	    " attempt, message) SELECT id, $2, $3, $4, attempt, $5 FROM jobs WHERE id = $1::uuid";
	struct mjob *m = arg;
	const char *op = mstr(m->move, "operation", NULL);
	char delay[16], *patch = json_dumps(m->patch ? m->patch : json_object(), JSON_COMPACT);
	PGresult *r = NULL;
	bool ok = false;

	snprintf(delay, sizeof(delay), "%d", m->delay_s);
	if (m->abandon) {
		const char *p[1] = { m->id };
		const char *ev[5] = { m->id, "state", "moving", "pending", m->why ? m->why :
		    "move abandoned" };

		ok = db_exec(c, sql_abandon, 1, p, NULL, e) && db_exec(c, sql_event, 5, ev, NULL, e);
		if (ok && op != NULL) {
			const char *q[4] = { op, m->id, "failed", m->why };

			ok = db_exec(c, sql_op, 4, q, NULL, e);
		}
		goto cleanup;
	}
	{
		const char *p[5] = { m->id, patch, m->next_phase, delay,
		    m->transient ? "true" : "false" };

		if (!db_exec(c, sql_step, 5, p, &r, e))
			goto cleanup;
		if (PQntuples(r) == 0) {
			ok = true;	/* cancelled meanwhile: the status worker cleans up */
			goto cleanup;
		}
	}
	if (m->why != NULL && m->next_phase != NULL) {
		const char *ev[5] = { m->id, "move", NULL, NULL, m->why };

		if (!db_exec(c, sql_event, 5, ev, NULL, e))
			goto cleanup;
	}
	if (m->finish) {
		const char *p[1] = { m->id };
		const char *ev[5] = { m->id, "state", "moving", "dispatched", "moved to the target" };

		if (!db_exec(c, sql_done, 1, p, NULL, e) || !db_exec(c, sql_event, 5, ev, NULL, e))
			goto cleanup;
		if (op != NULL) {
			const char *q[4] = { op, m->id, "moved", NULL };

			if (!db_exec(c, sql_op, 4, q, NULL, e))
				goto cleanup;
		}
	}
	ok = true;
cleanup:
	PQclear(r);
	free(patch);
	return ok;
}

bool
mover_round(const char *who, struct mover_stats *st, struct err *e)
{
	char lease[16], lim[16];
	const char *p[3] = { who, lease, lim };
	struct mjob *jobs = NULL;
	struct db *c;
	PGresult *r = NULL;
	int n = 0;
	bool ok = false;

	snprintf(lease, sizeof(lease), "%d", MOVER_LEASE_S);
	snprintf(lim, sizeof(lim), "%d", MOVER_BATCH);
	if ((c = db_acquire(5000, e)) == NULL)
		return false;
	if (!db_begin(c, e) || !db_exec(c, sql_claim, 3, p, &r, e) || !db_commit(c, e)) {
		db_rollback(c);
		db_release(c);
		PQclear(r);
		return false;
	}
	db_release(c);
	n = PQntuples(r);
	jobs = calloc((size_t)n + 1, sizeof(*jobs));
	for (int i = 0; i < n; i++) {
		struct mjob *m = &jobs[i];

		snprintf(m->id, sizeof(m->id), "%s", PQgetvalue(r, i, 0));
		snprintf(m->kind, sizeof(m->kind), "%s", PQgetvalue(r, i, 1));
		m->attempt = atoi(PQgetvalue(r, i, 2));
		m->tries = atoi(PQgetvalue(r, i, 3));
		m->spec = json_loads(PQgetvalue(r, i, 4), 0, NULL);
		m->move = json_loads(PQgetvalue(r, i, 5), 0, NULL);
		m->manifest = json_loads(PQgetvalue(r, i, 6), JSON_DECODE_ANY, NULL);
		snprintf(m->environment, sizeof(m->environment), "%s", PQgetvalue(r, i, 7));
		snprintf(m->queue, sizeof(m->queue), "%s", PQgetvalue(r, i, 8));
	}
	PQclear(r);
	st->claimed += (size_t)n;
	for (int i = 0; i < n; i++) {
		struct mjob *m = &jobs[i];
		struct err re = { 0 };

		step(m);
		if (!db_tx(record_tx, m, &re)) {
			log_warn(NULL, "mover", "record failed", "{s:s, s:s}", "job", m->id, "error",
			    re.msg);
			continue;
		}
		st->stepped += m->next_phase != NULL;
		st->moved += m->finish;
		st->failed += m->abandon;
		st->retried += m->next_phase == NULL && !m->abandon;
		if (m->finish || m->abandon)
			log_info(NULL, "mover", m->finish ? "job moved" : "move abandoned",
			    "{s:s, s:s}", "job", m->id, "why", m->why ? m->why : "");
	}
	ok = true;
	for (int i = 0; i < n; i++)
		mjob_free(&jobs[i]);
	free(jobs);
	return ok;
}

static struct {
	pthread_t	thread;
	atomic_bool	running;
	bool		started;
} M;

struct retry_arg {
	int	tried;
};

static bool
retry_tx(struct db *c, void *arg, struct err *e)
{
	struct actor who = { .name = "drain" };
	struct retry_arg *a = arg;

	return move_retry_waiting(c, &who, &a->tried, e);
}

static void *
loop(void *arg)
{
	time_t last_retry = 0;

	(void)arg;
	while (atomic_load(&M.running)) {
		struct mover_stats st = { 0 };
		struct err e = { 0 };
		struct timespec ts = { 0, 250 * 1000 * 1000 };

		if (!mover_round(cfg.instance_id, &st, &e))
			log_warn(NULL, "mover", "round failed", "{s:s}", "error", e.msg);
		if (time(NULL) - last_retry >= 5) {
			struct retry_arg ra = { 0 };

			last_retry = time(NULL);
			if (!db_tx(retry_tx, &ra, &e))
				log_warn(NULL, "mover", "drain retry failed", "{s:s}", "error", e.msg);
		}
		if (st.claimed == 0)
			nanosleep(&ts, NULL);
	}
	return NULL;
}

bool
mover_start(struct err *e)
{
	atomic_store(&M.running, true);
	if (pthread_create(&M.thread, NULL, loop, NULL) != 0)
		return err_set(e, 500, "mover.start", "cannot start the mover thread");
	M.started = true;
	return true;
}

void
mover_stop(void)
{
	if (!M.started)
		return;
	atomic_store(&M.running, false);
	pthread_join(M.thread, NULL);
	M.started = false;
}
