/* mover: the background worker of moves (queue/change/move.c takes the request and reserves);
 * each visit claims due moving jobs (SKIP LOCKED), commits, talks to the member
 * clusters with no transaction open, then records the next phase in a new transaction.
 * The source lets go only after the target is reserved (move.c); for RayService the
 * target must report ready before the source is deleted, so a ready copy always exists.
 * A cancel requested during a move ends it at the next visit, in any phase (ph_cancel):
 * the target's object goes if it was applied, the source's goes, the job is cancelled. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/config.h"
#include "core/jsonx.h"
#include "core/log.h"
#include "core/worker_thread.h"
#include "providers/kube.h"
#include "queue/change/change.h"
#include "queue/dispatch/dispatch.h"
#include "queue/follow/status.h"
#include "queue/jobs/job.h"
#include "queue/sched/scheduler.h"

#define MOVER_BATCH	8
#define MOVER_LEASE_S	120

struct mjob {
	char	 id[40];
	char	 kind[24];
	int	 attempt;
	char	 attempt_s[16];
	int	 tries;
	json_t	*spec;
	json_t	*move;		/* jobs.move */
	json_t	*manifest;	/* what is applied at the source */
	char	 environment[64];
	char	 queue[64];
	int	 next;		/* enum phase this visit moves to (advance) */
	bool	 advance;	/* the phase changes to next */
	json_t	*patch;		/* members to merge into jobs.move */
	bool	 finish;	/* record the job dispatched at the target */
	bool	 abandon;	/* requeue */
	bool	 transient;	/* this visit failed (tries counts such visits in a row) */
	bool	 cancel;	/* cancel_requested when claimed: the move ends, the job too */
	bool	 cancelled;	/* this visit ended it: record the job cancelled */
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
    " coalesce(j.manifest::text, 'null'), j.environment, q.name, j.cancel_requested";

static void
mjob_free(struct mjob *m)
{
	json_decref(m->spec);
	json_decref(m->move);
	json_decref(m->manifest);
	json_decref(m->patch);
}

/* The cluster of one end of the move. */
static bool
end_target(const char *cluster_id, struct member **t, struct err *e)
{
	struct db *c = db_acquire(5000, e);
	bool ok;

	if (c == NULL)
		return false;
	ok = member_load(c, cluster_id, t, e);
	db_release(c);
	return ok;
}

/* Applies a copy of the source manifest with the checkpoint annotation or suspended —
 * level-triggered: an object that already carries it (an earlier visit applied it, then
 * could not record that: the database went away) is not applied again; *had gets the
 * annotation's value then (the request the job already saw). */
static bool
source_reapply(struct mjob *m, const struct member *src, const char *annotation,
	       bool suspend, char *had, size_t hadn, struct err *e)
{
	json_t *copy, *meta, *ann, *live = NULL;
	const char *seen;
	struct kube_ref ref;
	bool ok, done;

	if (had != NULL && hadn > 0)
		had[0] = '\0';
	/* A server-side apply creates what is absent: a source that vanished (finished and
	 * collected, deleted by hand) has nothing left to signal or stop, never re-create it */
	if (!kube_get_object(&src->pc, "ray.io/v1", m->kind, jsonx_at(m->manifest, "metadata",
	    "namespace"), jsonx_at(m->manifest, "metadata", "name"), &live, e)) {
		if (e->status != 404)
			return false;
		err_clear(e);
		return true;
	}
	seen = json_string_value(json_object_get(jsonx_meta(live, "annotations"),
	    "fleet.io/checkpoint-requested"));
	done = annotation != NULL ? seen != NULL && seen[0] != '\0' :
	    json_is_true(json_object_get(json_object_get(live, "spec"), "suspend"));
	if (done && annotation != NULL && had != NULL)
		snprintf(had, hadn, "%s", seen);
	json_decref(live);
	if (done || (annotation == NULL && !suspend))
		return true;
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

/* The source attempt's post-mortem, kept before it is stopped (once per attempt): a
 * suspend or a delete makes KubeRay remove its pods, and with them what a moved or
 * cancelled attempt looked like. */
static void
source_postmortem(struct mjob *m, const struct member *src)
{
	const char *ns = jsonx_at(m->manifest, "metadata", "namespace");

	if (ns != NULL)
		status_postmortem_keep(src, m->id, m->attempt, ns, m->kind, m->cancel ?
		    "cancelled" : "moved");
}

/* The source's object, then its attempt's signal objects (the acknowledgement is read). */
static bool
source_delete(struct mjob *m, const struct member *src, struct err *e)
{
	source_postmortem(m, src);
	if (!kube_delete_object(&src->pc, "ray.io/v1", m->kind,
	    jsonx_at(m->manifest, "metadata", "namespace"),
	    jsonx_at(m->manifest, "metadata", "name"), NULL, e))
		return false;
	dispatch_signal_delete_for(&src->pc, m->manifest, "mover");
	return true;
}

static void
rfc3339_in(int secs, char *buf, size_t n)
{
	time_t t = time(NULL) + secs;
	struct tm tm;

	gmtime_r(&t, &tm);
	strftime(buf, n, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

/* Whether s is exactly YYYY-MM-DDTHH:MM:SSZ (what fleetd stores as the ack time). */
static bool
rfc3339_ok(const char *s)
{
	struct tm tm;
	const char *end;

	memset(&tm, 0, sizeof(tm));
	end = strptime(s, "%Y-%m-%dT%H:%M:%SZ", &tm);
	return end != NULL && *end == '\0' && strlen(s) == 20;
}

/* Seconds since the epoch of an RFC 3339 UTC time as fleetd writes it; -1 when not one. */
static long long
rfc3339_epoch(const char *s)
{
	struct tm tm;

	if (s == NULL || !rfc3339_ok(s))
		return -1;
	memset(&tm, 0, sizeof(tm));
	strptime(s, "%Y-%m-%dT%H:%M:%SZ", &tm);
	return (long long)timegm(&tm);
}

/* An evacuated job restarts from its last acknowledged checkpoint. */
static void
resume_annotate(json_t *obj, const char *uri)
{
	json_t *meta = json_object_get(obj, "metadata");
	json_t *ann = json_object_get(meta, "annotations");

	if (ann == NULL) {
		ann = json_object();
		json_object_set_new(meta, "annotations", ann);
	}
	json_object_set_new(ann, "fleet.io/resume-from", json_string(uri));
}

/* Name of the checkpoint-signal ConfigMap of an attempt (docs/design/contracts.md). */
static void
signal_name(const char *job_id, int attempt, char *out, size_t n)
{
	snprintf(out, n, "fleet-signal-%.8s-%d", job_id, attempt);
}

/* Writes fleetd's keys of the checkpoint signal (server-side apply, field manager fleetd:
 * the job's ack keys, owned by another manager, stay).  Best effort: the annotation on
 * the Ray object carries the same request. */
static void
signal_request(struct mjob *m, const struct member *src, const char *requested_at,
	       const char *deadline, int grace)
{
	const char *ns = jsonx_at(m->manifest, "metadata", "namespace");
	const char *uri = jsonx_at(m->spec, "checkpoint", "uri");
	char name[64], gs[16];
	struct kube_ref ref;
	struct err e = { 0 };
	json_t *cm;

	signal_name(m->id, m->attempt, name, sizeof(name));
	snprintf(gs, sizeof(gs), "%d", grace);
	cm = json_pack("{s:s, s:s, s:{s:s, s:s, s:{s:s, s:s, s:s}}, s:{s:s, s:s, s:s, s:s, s:s}}",
	    "apiVersion", "v1", "kind", "ConfigMap", "metadata", "name", name, "namespace",
	    ns ? ns : "default", "labels", "fleet.io/job-id", m->id, "fleet.io/attempt",
	    m->attempt_s, "app.kubernetes.io/managed-by", "fleetd", "data",
	    "checkpoint_requested_at", requested_at, "checkpoint_deadline", deadline,
	    "grace_seconds", gs, "reason", "move", "checkpoint_uri", uri ? uri : "");
	if (cm != NULL && !kube_apply(&src->pc, cm, &ref, NULL, &e))
		log_debug(NULL, "mover", "signal not written", "{s:s, s:s}", "job", m->id,
		    "error", e.msg);
	json_decref(cm);
}

/* The checkpoint_requested_at the source's signal already carries (a request made by an
 * earlier visit); false when there is none. */
static bool
signal_requested_at(struct mjob *m, const struct member *src, char *out, size_t n)
{
	const char *ns = jsonx_at(m->manifest, "metadata", "namespace"), *at;
	struct err e = { 0 };
	json_t *cm = NULL;
	char name[64];
	bool ok;

	signal_name(m->id, m->attempt, name, sizeof(name));
	if (!kube_get_object(&src->pc, "v1", "ConfigMap", ns, name, &cm, &e))
		return false;
	at = jsonx_at(cm, "data", "checkpoint_requested_at");
	ok = at != NULL && rfc3339_ok(at);
	if (ok)
		snprintf(out, n, "%s", at);
	json_decref(cm);
	return ok;
}

/* The job's acknowledgement of the request made at requested_at, if any: fills
 * m->patch's "ack" and returns true. */
static bool
signal_acked(struct mjob *m, const struct member *src, const char *requested_at)
{
	const char *ns = jsonx_at(m->manifest, "metadata", "namespace");
	const char *echo, *uri, *at;
	struct err e = { 0 };
	json_t *cm = NULL;
	char name[64];
	bool acked;

	signal_name(m->id, m->attempt, name, sizeof(name));
	if (!kube_get_object(&src->pc, "v1", "ConfigMap", ns, name, &cm, &e))
		return false;
	echo = jsonx_at(cm, "data", "ack_requested_at");
	uri = jsonx_at(cm, "data", "ack_uri");
	at = jsonx_at(cm, "data", "ack_at");
	acked = echo != NULL && strcmp(echo, requested_at) == 0 && uri != NULL && *uri != '\0' &&
	    strlen(uri) <= 1024;	/* as the spec's checkpoint.uri */
	if (at != NULL && !rfc3339_ok(at))
		at = NULL;	/* written by the job: never trusted to parse */
	if (acked)
		json_object_set_new(m->patch, "ack", json_pack("{s:s, s:s, s:s, s:i}", "uri", uri,
		    "at", at ? at : requested_at, "requested_at", requested_at, "attempt",
		    m->attempt));
	json_decref(cm);
	return acked;
}

/* Renders and applies the next attempt at the target; fills the patch with the object. */
static bool
target_apply(struct mjob *m, const struct member *dst, struct err *e)
{
	struct kube_ref ref;
	json_t *obj, *live = NULL;
	bool ok, reused = false;

	obj = dispatch_render_for(dst, m->id, m->environment, m->queue, m->attempt + 1, m->spec,
	    json_object_get(m->move, "to"), e);
	if (obj == NULL)
		return false;
	if (jsonx_at(m->move, "resume_from", NULL) != NULL)	/* evacuated: last acknowledged */
		resume_annotate(obj, jsonx_at(m->move, "resume_from", NULL));
	ok = kube_ensure_namespace(&dst->pc, jsonx_at(obj, "metadata", "namespace"), e);
	/* the next attempt's objects before its Ray object, as dispatch applies them: the
	 * signal ServiceAccount its pods run as, and (issue 25) the Secret its authOptions
	 * names and its NetworkPolicy */
	ok = ok && dispatch_signal_apply_for(dst, m->id, m->environment, m->queue,
	    m->attempt + 1, m->spec, json_object_get(m->move, "to"), e);
	/* Once per attempt, as dispatch's apply_once: an object of this attempt already there
	 * (an earlier visit applied it, then could not record it) is taken as applied */
	if (ok && kube_get_object(&dst->pc, "ray.io/v1", m->kind, jsonx_at(obj, "metadata",
	    "namespace"), jsonx_at(obj, "metadata", "name"), &live, e)) {
		const char *la = json_string_value(json_object_get(jsonx_meta(live,
		    "annotations"), "fleet.io/attempt"));
		char at[16];

		snprintf(at, sizeof(at), "%d", m->attempt + 1);
		reused = la != NULL && strcmp(la, at) == 0 && jsonx_at(live, "metadata", "uid");
		if (reused) {
			snprintf(ref.uid, sizeof(ref.uid), "%s", jsonx_at(live, "metadata", "uid"));
			snprintf(ref.resource_version, sizeof(ref.resource_version), "%s",
			    jsonx_at(live, "metadata", "resourceVersion") ? jsonx_at(live,
			    "metadata", "resourceVersion") : "");
		}
	} else if (ok && e->status != 404) {
		ok = false;
	}
	if (ok && !reused) {
		err_clear(e);
		ok = kube_apply(&dst->pc, obj, &ref, NULL, e);
	}
	json_decref(live);
	if (ok)
		json_object_set_new(m->patch, "target_object", json_pack("{s:O, s:s, s:s}",
		    "manifest", obj, "uid", ref.uid, "resource_version", ref.resource_version));
	json_decref(obj);
	return ok;
}

static bool
target_ready(struct mjob *m, const struct member *dst, struct err *e)
{
	json_t *tobj = json_object_get(json_object_get(m->move, "target_object"), "manifest");
	json_t *live = NULL, *conds;
	const char *st;
	bool ready = false;
	size_t i;
	json_t *c;

	if (!kube_get_object(&dst->pc, "ray.io/v1", m->kind,
	    jsonx_at(tobj, "metadata", "namespace"), jsonx_at(tobj, "metadata", "name"), &live, e))
		return false;
	st = jsonx_at(live, "status", "serviceStatus");
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

/* The phases of a move, in order; jobs.move.phase holds the name. */
enum phase { PH_RESERVED, PH_CHECKPOINTING, PH_SUSPENDED, PH_APPLIED, PH_DONE, PH_COUNT };

static const char *const phase_names[PH_COUNT] = {
	[PH_RESERVED] = "reserved", [PH_CHECKPOINTING] = "checkpointing",
	[PH_SUSPENDED] = "suspended", [PH_APPLIED] = "applied", [PH_DONE] = "done",
};

/* What one visit of a phase decided. */
enum outcome {
	OUT_WAIT,	/* stay in the phase, visit again after delay_s */
	OUT_NEXT,	/* go to m->next */
	OUT_RETRY,	/* a member cluster failed: back off (e says why) */
	OUT_ABANDON,	/* requeue the job (m->why says why) */
	OUT_CANCELLED,	/* a cancel ended the move: both ends cleaned up, the job ends */
};

/* Both ends of the move for one visit (src NULL when there is nothing at the source). */
struct ends {
	struct member	*src;
	struct member	*dst;
	bool			 service;	/* RayService: the target is ready first */
};

static enum phase
phase_parse(const char *s)
{
	for (int i = 0; s != NULL && i < PH_COUNT; i++)
		if (strcmp(s, phase_names[i]) == 0)
			return (enum phase)i;
	return PH_COUNT;
}

static enum outcome
go(struct mjob *m, enum phase next, const char *why)
{
	m->next = next;
	m->why = why;
	return OUT_NEXT;
}

/* reserved: ask the source for a checkpoint (with a grace) or go straight on. */
static enum outcome
ph_reserved(struct mjob *m, struct ends *x, struct err *e)
{
	json_t *ck = json_object_get(m->spec, "checkpoint");
	int grace = scheduler_grace_s(m->spec);	/* 0: none */
	char deadline[64], now[64], had[64];
	long long epoch;

	if (x->src == NULL || x->service)
		return go(m, PH_SUSPENDED, NULL);	/* nothing to stop first */
	/* a lost rack: the gang is broken, no checkpoint can be written now; the next attempt
	 * resumes from the last acknowledged one (move.resume_from) */
	if (json_object_get(ck, "uri") == NULL ||
	    json_is_true(json_object_get(m->move, "no_checkpoint_request"))) {
		json_object_set_new(m->patch, "deadline_epoch", json_integer(0));
		return go(m, PH_CHECKPOINTING, NULL);
	}
	rfc3339_in(grace, deadline, sizeof(deadline));
	rfc3339_in(0, now, sizeof(now));
	if (!source_reapply(m, x->src, deadline, false, had, sizeof(had), e))
		return OUT_RETRY;
	epoch = (long long)time(NULL) + grace;
	if (had[0] != '\0') {
		/* asked already (the visit that applied it could not record it): the job keeps
		 * the deadline and request it was given */
		snprintf(deadline, sizeof(deadline), "%s", had);
		if (rfc3339_epoch(had) >= 0)
			epoch = rfc3339_epoch(had);
		if (!signal_requested_at(m, x->src, now, sizeof(now)))
			signal_request(m, x->src, now, deadline, grace);
	} else {
		signal_request(m, x->src, now, deadline, grace);
	}
	json_object_set_new(m->patch, "requested_at", json_string(now));
	json_object_set_new(m->patch, "deadline", json_string(deadline));
	json_object_set_new(m->patch, "deadline_epoch", json_integer((json_int_t)epoch));
	return go(m, PH_CHECKPOINTING, "checkpoint requested at the source");
}

/* checkpointing: once the grace is over, suspend (RayJob) and delete the source. */
static enum outcome
ph_checkpointing(struct mjob *m, struct ends *x, struct err *e)
{
	const char *requested = jsonx_at(m->move, "requested_at", NULL);
	const char *why = "stopped at the source";

	/* <=: the deadline is in whole seconds; the source gets at least its grace, unless
	 * the job acknowledged that its checkpoint is written */
	if (time(NULL) <= json_integer_value(json_object_get(m->move, "deadline_epoch"))) {
		if (requested == NULL || !signal_acked(m, x->src, requested))
			return OUT_WAIT;
		why = "checkpoint acknowledged; stopped at the source";
	}
	if (strcmp(m->kind, "RayJob") == 0) {
		/* the event says so: the suspend is a re-apply of the source attempt's object */
		source_postmortem(m, x->src);
		if (!source_reapply(m, x->src, NULL, true, NULL, 0, e))
			return OUT_RETRY;
		why = strcmp(why, "stopped at the source") == 0 ? "suspended and stopped at the "
		    "source" : "checkpoint acknowledged; suspended and stopped at the source";
	}
	if (!source_delete(m, x->src, e))
		return OUT_RETRY;
	return go(m, PH_SUSPENDED, why);
}

/* suspended: apply the next attempt at the target; a refused manifest abandons. */
static enum outcome
ph_suspended(struct mjob *m, struct ends *x, struct err *e)
{
	bool wait_ready = x->service && x->src != NULL;

	if (!target_apply(m, x->dst, e)) {
		if (e->status != 422 && strncmp(e->code, "kuberay.", 8) != 0)
			return OUT_RETRY;
		snprintf(m->why_buf, sizeof(m->why_buf), "%s", e->msg);
		m->why = m->why_buf;
		return OUT_ABANDON;
	}
	m->finish = !wait_ready;
	return go(m, wait_ready ? PH_APPLIED : PH_DONE, "applied at the target");
}

/* applied (RayService): the source keeps serving until the target is ready. */
static enum outcome
ph_applied(struct mjob *m, struct ends *x, struct err *e)
{
	if (!target_ready(m, x->dst, e)) {
		if (e->status != 0)
			return OUT_RETRY;
		m->delay_s = 2;
		return OUT_WAIT;
	}
	if (!source_delete(m, x->src, e))
		return OUT_RETRY;
	m->finish = true;
	return go(m, PH_DONE, "target ready, source deleted");
}

/* A cancel requested during the move ends the move wherever it is (the status worker
 * follows no moving job, so nothing else would): the next attempt's object at the target
 * is deleted when it was applied (recorded, or applied by a visit whose record was lost:
 * rendered again to know its name), then the source's object and signal objects; a fenced
 * source is left to the orphan sweep.  Member failures retry; the job is never requeued. */
static enum outcome
ph_cancel(struct mjob *m, struct ends *x, enum phase ph, struct err *e)
{
	json_t *tobj = json_object_get(json_object_get(m->move, "target_object"), "manifest");
	json_t *rendered = NULL;
	bool ok = true;

	if (tobj == NULL && (ph == PH_SUSPENDED || ph == PH_APPLIED)) {
		rendered = dispatch_render_for(x->dst, m->id, m->environment, m->queue,
		    m->attempt + 1, m->spec, json_object_get(m->move, "to"), e);
		if (rendered == NULL)
			err_clear(e);	/* nothing was rendered, so nothing was applied */
		tobj = rendered;
	}
	if (tobj != NULL) {
		ok = kube_delete_object(&x->dst->pc, "ray.io/v1", m->kind,
		    jsonx_at(tobj, "metadata", "namespace"), jsonx_at(tobj, "metadata", "name"),
		    NULL, e);
		if (ok)
			dispatch_signal_delete_for(&x->dst->pc, tobj, "mover");
	}
	json_decref(rendered);
	if (!ok)
		return OUT_RETRY;
	if (x->src != NULL && !source_delete(m, x->src, e))
		return OUT_RETRY;
	m->why = tobj != NULL ? "cancelled during the move; the target's and the source's "
	    "objects were deleted" : "cancelled during the move; the source's object was "
	    "deleted, nothing was applied at the target";
	return OUT_CANCELLED;
}

static enum outcome (*const phase_fns[PH_COUNT])(struct mjob *, struct ends *, struct err *) = {
	[PH_RESERVED] = ph_reserved, [PH_CHECKPOINTING] = ph_checkpointing,
	[PH_SUSPENDED] = ph_suspended, [PH_APPLIED] = ph_applied,
};

/* One visit: loads both ends and runs the phase's function; network only, no database. */
static void
step(struct mjob *m)
{
	enum phase ph = phase_parse(jsonx_at(m->move, "phase", NULL));
	const char *src_id = jsonx_at(m->move, "from", "cluster_id");
	struct ends x = { .service = strcmp(m->kind, "RayService") == 0 };
	struct err e = { 0 };
	enum outcome o = OUT_RETRY;

	m->patch = json_object();
	m->delay_s = 1;
	m->next = PH_COUNT;
	if (ph == PH_COUNT || (phase_fns[ph] == NULL && !m->cancel))
		return;		/* unknown or finished phase: nothing to do */
	if (m->manifest != NULL && !json_is_null(m->manifest) && src_id != NULL &&
	    !json_is_true(json_object_get(json_object_get(m->move, "from"), "fenced")) &&
	    !end_target(src_id, &x.src, &e))
		goto out;
	if (!end_target(jsonx_at(m->move, "to", "cluster"), &x.dst, &e))
		goto out;
	o = m->cancel ? ph_cancel(m, &x, ph, &e) : phase_fns[ph](m, &x, &e);
out:
	m->advance = o == OUT_NEXT;
	m->abandon = o == OUT_ABANDON;
	m->cancelled = o == OUT_CANCELLED;
	if (o == OUT_RETRY) {
		m->transient = true;
		m->delay_s = m->tries < 6 ? 1 << m->tries : 60;
		snprintf(m->why_buf, sizeof(m->why_buf), "%s", e.msg[0] ? e.msg :
		    "member cluster unavailable");
		m->why = m->why_buf;	/* e dies with this call: record_tx reads why later */
		m->abandon = m->tries > 30 && !m->cancel;	/* a cancelled job is never requeued */
	}
	member_free(x.src);
	member_free(x.dst);
}

/* The job lands at the target: the next attempt is the target's object. */
static bool
record_finish(struct db *c, struct mjob *m, const char *op, struct err *e)
{
	static const char sql_done[] = "UPDATE jobs SET attempt = attempt + 1,"
	    " cluster_id = (move->'to'->>'cluster')::uuid, placement = move->'to',"
	    " manifest = move->'target_object'->'manifest', object_name ="
	    " move->'target_object'->'manifest'->'metadata'->>'name', object_uid ="
	    " move->'target_object'->>'uid', object_rv = move->'target_object'->>'resource_version',"
	    " dispatched_at = now(), claimed_by = NULL, tries = 0, next_try_at = now(),"
	    " move = NULL WHERE id = $1::uuid AND state = 'moving'";
	static const char sql_op[] = "UPDATE operation_jobs SET state = 'moved', reason = NULL,"
	    " updated_at = now() WHERE operation_id = $1::uuid AND job_id = $2::uuid";
	const char *p[1] = { m->id };
	const char *q[2] = { op, m->id };

	if (!db_exec(c, sql_done, 1, p, NULL, e) ||
	    !job_transition(c, m->id, "moving", "dispatched", "moved to the target", NULL, e))
		return false;
	return op == NULL || db_exec(c, sql_op, 2, q, NULL, e);
}

/* The move cannot go on: the job waits for a placement again. */
static bool
record_abandon(struct db *c, struct mjob *m, const char *op, struct err *e)
{
	static const char sql_abandon[] = "UPDATE jobs SET cluster_id = NULL,"
	    " placement = NULL, manifest = NULL, object_name = NULL, object_uid = NULL,"
	    " claimed_by = NULL, move = NULL WHERE id = $1::uuid AND state = 'moving'"
	    " RETURNING 1";
	static const char sql_op[] = "UPDATE operation_jobs SET state = 'failed', reason = $3,"
	    " updated_at = now() WHERE operation_id = $1::uuid AND job_id = $2::uuid";
	const char *why = m->why ? m->why : "move abandoned";
	const char *p[1] = { m->id };
	const char *q[3] = { op, m->id, why };
	PGresult *r = NULL;
	bool ok = false;

	if (!db_exec(c, sql_abandon, 1, p, &r, e))
		goto cleanup;
	ok = PQntuples(r) == 0 ||	/* no longer moving: nothing to record */
	    (job_transition(c, m->id, "moving", "pending", why, NULL, e) &&
	    (op == NULL || db_exec(c, sql_op, 3, q, NULL, e)));
cleanup:
	PQclear(r);
	return ok;
}

/* The move ended by a cancel: the job is cancelled where it was, nothing of it is left to
 * follow (no object uid), and a drain counts it cancelled. */
static bool
record_cancel(struct db *c, struct mjob *m, const char *op, struct err *e)
{
	static const char sql_end[] = "UPDATE jobs SET object_uid = NULL, claimed_by = NULL,"
	    " claimed_at = NULL, tries = 0, move = NULL WHERE id = $1::uuid AND state = 'moving'"
	    " AND cancel_requested RETURNING 1";
	static const char sql_op[] = "UPDATE operation_jobs SET state = 'cancelled', reason = $3,"
	    " updated_at = now() WHERE operation_id = $1::uuid AND job_id = $2::uuid";
	const char *p[1] = { m->id };
	const char *q[3] = { op, m->id, m->why };
	json_t *data = json_pack("{s:s, s:O?, s:O?}", "phase", jsonx_at(m->move, "phase", NULL) ?
	    jsonx_at(m->move, "phase", NULL) : "", "from", json_object_get(json_object_get(m->move,
	    "from"), "cluster_id"), "to", json_object_get(json_object_get(m->move, "to"),
	    "cluster"));
	PGresult *r = NULL;
	bool ok = false;

	if (!db_exec(c, sql_end, 1, p, &r, e))
		goto cleanup;
	ok = PQntuples(r) == 0 ||	/* changed meanwhile: nothing to record */
	    (job_transition(c, m->id, "moving", "cancelled", m->why, data, e) &&
	    (op == NULL || db_exec(c, sql_op, 3, q, NULL, e)));
cleanup:
	json_decref(data);
	PQclear(r);
	return ok;
}

/* Records what step() decided, in one transaction. */
static bool
record_tx(struct db *c, void *arg, struct err *e)
{
	static const char sql_step[] = "UPDATE jobs SET move = move || $2::jsonb ||"
	    " jsonb_build_object('phase', coalesce($3, move->>'phase')), claimed_by = NULL,"
	    " next_try_at = now() + make_interval(secs => $4::int), updated_at = now(),"
	    " tries = CASE WHEN $5::boolean THEN tries ELSE 0 END"	/* failures in a row */
	    " WHERE id = $1::uuid AND state = 'moving' RETURNING 1";
	static const char sql_ack[] = "UPDATE jobs SET checkpoint = move->'ack'"
	    " WHERE id = $1::uuid";
	struct mjob *m = arg;
	const char *op = jsonx_at(m->move, "operation", NULL);
	char delay[16], *patch = json_dumps(m->patch ? m->patch : json_object(), JSON_COMPACT);
	const char *p[5] = { m->id, patch, m->advance ? phase_names[m->next] : NULL, delay,
	    m->transient ? "true" : "false" };
	PGresult *r = NULL;
	bool ok = false;

	snprintf(delay, sizeof(delay), "%d", m->delay_s);
	if (m->cancelled) {
		ok = record_cancel(c, m, op, e);
		goto cleanup;
	}
	if (m->abandon) {
		ok = record_abandon(c, m, op, e);
		goto cleanup;
	}
	if (!db_exec(c, sql_step, 5, p, &r, e))
		goto cleanup;
	if (PQntuples(r) == 0) {
		ok = true;	/* no longer moving: nothing to record */
		goto cleanup;
	}
	if (m->advance && m->why != NULL && !job_event(c, m->id, "move", m->why,
	    json_object_get(m->patch, "ack"), e))
		goto cleanup;
	if (json_object_get(m->patch, "ack") != NULL && !db_exec(c, sql_ack, 1, p, NULL, e))
		goto cleanup;
	ok = !m->finish || record_finish(c, m, op, e);
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
	PGresult *r = NULL;
	int n = 0;
	bool ok = false;

	snprintf(lease, sizeof(lease), "%d", MOVER_LEASE_S);
	snprintf(lim, sizeof(lim), "%d", MOVER_BATCH);
	if (!db_claim(sql_claim, 3, p, &r, e))
		return false;
	n = PQntuples(r);
	jobs = calloc((size_t)n + 1, sizeof(*jobs));
	for (int i = 0; i < n; i++) {
		struct mjob *m = &jobs[i];

		snprintf(m->id, sizeof(m->id), "%s", PQgetvalue(r, i, 0));
		snprintf(m->kind, sizeof(m->kind), "%s", PQgetvalue(r, i, 1));
		m->attempt = atoi(PQgetvalue(r, i, 2));
		snprintf(m->attempt_s, sizeof(m->attempt_s), "%d", m->attempt);
		m->tries = atoi(PQgetvalue(r, i, 3));
		m->spec = json_loads(PQgetvalue(r, i, 4), 0, NULL);
		m->move = json_loads(PQgetvalue(r, i, 5), 0, NULL);
		m->manifest = json_loads(PQgetvalue(r, i, 6), JSON_DECODE_ANY, NULL);
		snprintf(m->environment, sizeof(m->environment), "%s", PQgetvalue(r, i, 7));
		snprintf(m->queue, sizeof(m->queue), "%s", PQgetvalue(r, i, 8));
		m->cancel = PQgetvalue(r, i, 9)[0] == 't';
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
		st->stepped += m->advance;
		st->moved += m->finish;
		st->failed += m->abandon;
		st->cancelled += m->cancelled;
		st->retried += !m->advance && !m->abandon && !m->cancelled;
		if (m->finish || m->abandon || m->cancelled)
			log_info(NULL, "mover", m->finish ? "job moved" : m->cancelled ?
			    "move ended by a cancel" : "move abandoned",
			    "{s:s, s:s}", "job", m->id, "why", m->why ? m->why : "");
	}
	ok = true;
	for (int i = 0; i < n; i++)
		mjob_free(&jobs[i]);
	free(jobs);
	return ok;
}

static struct worker_thread M;

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
	while (worker_thread_running(&M)) {
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
	return worker_thread_start(&M, loop, "mover.start", "cannot start the mover thread", e);
}

void
mover_stop(void)
{
	worker_thread_stop(&M);
}
