/* status_act: what the status worker does about one job — every change of the member
 * cluster happens first (delete, apply), then the job row changes in one transaction
 * with its events. */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/jsonx.h"
#include "core/log.h"
#include "providers/kube.h"
#include "queue/follow/status_int.h"
#include "queue/jobs/job.h"
#include "queue/sched/scheduler.h"

/* One transaction: optional row updates, then an optional transition. */
struct settle {
	const struct status_job	*j;
	const char		*cluster_id;
	const char		*to;		/* NULL: no transition */
	const char		*reason;
	json_t			*data;
	json_t			*manifest;	/* store as applied */
	const char		*rv;
	bool			 clear_object;	/* the object is gone or no longer ours */
	bool			 stockout;	/* upsert stockouts (cluster, flavor) */
	bool			 spot_deadline;	/* checkpoint_deadline = now() + grace */
	const char		*event_type;	/* plain event, with reason as message */
};

static bool
settle_tx(struct db *c, void *arg, struct err *e)
{
	static const char sql_row[] = "UPDATE jobs SET"
	    " manifest = coalesce($4::jsonb, manifest), object_rv = coalesce($5, object_rv),"
	    " object_uid = CASE WHEN $6::boolean THEN NULL ELSE object_uid END,"
	    " checkpoint_deadline = CASE WHEN $7::boolean THEN now() + make_interval(secs =>"
	    "  least(coalesce((spec->'checkpoint'->>'grace_seconds')::int, $8::int), (SELECT CASE"
	    "  c.provider WHEN 'hyperpod' THEN 120 ELSE 30 END FROM clusters k JOIN clouds c"
	    "  ON c.id = k.cloud_id WHERE k.id = jobs.cluster_id))) ELSE"
	    "  checkpoint_deadline END, updated_at = now()"
	    " WHERE id = $1::uuid AND attempt = $2::int AND state = $3 RETURNING id";
	static const char sql_stock[] = "INSERT INTO stockouts (cluster_id, flavor, at)"
	    " VALUES ($1::uuid, $2, now()) ON CONFLICT (cluster_id, flavor) DO UPDATE SET at = now()";
	struct settle *s = arg;
	char at[16], grace[16], *ms = s->manifest ? json_dumps(s->manifest, JSON_COMPACT) : NULL;
	const char *p[8] = { s->j->id, at, job_state_name(s->j->state), ms, s->rv,
	    s->clear_object ? "true" : "false", s->spot_deadline ? "true" : "false", grace };
	PGresult *r = NULL;
	bool ok = false;

	snprintf(at, sizeof(at), "%d", s->j->attempt);
	snprintf(grace, sizeof(grace), "%d", SCHED_GRACE_S);
	if (!db_exec(c, sql_row, 8, p, &r, e))
		goto cleanup;
	if (PQntuples(r) == 0) {
		err_set(e, 409, "status.changed", "the job changed meanwhile");
		goto cleanup;
	}
	if (s->stockout) {
		const char *q[2] = { s->cluster_id, s->j->flavor };

		if (!db_exec(c, sql_stock, 2, q, NULL, e))
			goto cleanup;
	}
	if (s->event_type != NULL && !job_event(c, s->j->id, s->event_type, s->reason, s->data,
	    e))
		goto cleanup;
	if (s->to != NULL && !job_transition(c, s->j->id, job_state_name(s->j->state), s->to,
	    s->reason, s->data, e))
		goto cleanup;
	ok = true;
cleanup:
	free(ms);
	PQclear(r);
	return ok;
}

static bool
settle(struct settle *s, struct status_stats *st)
{
	struct err e = { 0 };

	if (!db_tx(settle_tx, s, &e)) {
		if (e.status != 409)
			log_warn(NULL, "status", "cannot record", "{s:s, s:s}", "job", s->j->id,
			    "error", e.msg);
		return false;
	}
	st->transitions += s->to != NULL;
	return true;
}

/* The notes this process has recorded (or found recorded), by a 64-bit hash of job id,
 * attempt, type and key: a note already there is not asked for again.  A member cluster
 * that cannot be read gave every one of its jobs a database round trip per status cycle
 * (10,000 a second with bench/api.sh's 10,000 running jobs).  Cleared when half full;
 * the database's NOT EXISTS stays the rule (another replica, a restart). */
#define NOTED_SLOTS	(1 << 16)

static struct {
	pthread_mutex_t	 mu;
	uint64_t	*slot;		/* 0 = empty */
	size_t		 n;
} noted = { .mu = PTHREAD_MUTEX_INITIALIZER };

static uint64_t
note_hash(const struct status_job *j, const char *type, const char *key)
{
	const char *parts[3] = { j->id, type, key };
	uint64_t h = 0xcbf29ce484222325ULL;

	for (int i = 0; i < 3; i++) {
		for (const char *c = parts[i]; *c != '\0'; c++)
			h = (h ^ (unsigned char)*c) * 0x100000001b3ULL;
		h = (h ^ 0xff) * 0x100000001b3ULL;
	}
	h = (h ^ (uint64_t)(unsigned)j->attempt) * 0x100000001b3ULL;
	return h ? h : 1;
}

/* Looks h up; with add, records it.  True when it was there. */
static bool
noted_seen(uint64_t h, bool add)
{
	size_t i;
	bool seen = false;

	pthread_mutex_lock(&noted.mu);
	if (noted.slot == NULL && add)
		noted.slot = calloc(NOTED_SLOTS, sizeof(*noted.slot));
	if (noted.slot != NULL) {
		for (i = h % NOTED_SLOTS; noted.slot[i] != 0 && noted.slot[i] != h;
		    i = (i + 1) % NOTED_SLOTS)
			;
		seen = noted.slot[i] == h;
		if (!seen && add) {
			if (noted.n >= NOTED_SLOTS / 2) {
				memset(noted.slot, 0, NOTED_SLOTS * sizeof(*noted.slot));
				noted.n = 0;
				for (i = h % NOTED_SLOTS; noted.slot[i] != 0; i = (i + 1) % NOTED_SLOTS)
					;
			}
			noted.slot[i] = h;
			noted.n++;
		}
	}
	pthread_mutex_unlock(&noted.mu);
	return seen;
}

static void
note_once(const struct status_job *j, const char *type, const char *key, const char *msg,
    json_t *data, struct status_stats *st)
{
	struct err e = { 0 };
	uint64_t h = note_hash(j, type, key);
	struct db *c;

	if (noted_seen(h, false))
		return;
	if ((c = db_acquire(5000, &e)) == NULL)
		return;
	/* autocommit: once it ran, the note is in the database */
	if (job_event_once(c, j->id, j->attempt, type, key, msg, data, &e)) {
		st->events++;
		noted_seen(h, true);
	}
	db_release(c);
}

void
status_unreadable(const struct status_job *j, const char *cluster, const struct err *why)
{
	struct status_stats st = { 0 };
	char key[80], msg[1200];
	json_t *d = json_pack("{s:s, s:s, s:i}", "cluster", cluster, "code", why->code,
	    "status", why->status);

	snprintf(key, sizeof(key), "sync:%s", why->code);
	snprintf(msg, sizeof(msg), "cannot read the job's object on %s: %s%s%s", cluster,
	    why->msg, why->detail[0] ? ": " : "", why->detail);
	note_once(j, "sync_error", key, msg, d, &st);
	json_decref(d);
}

static const char *
mget(json_t *manifest, const char *k)
{
	return jsonx_meta_str(manifest, k);
}

/* Deletes the job's object, then its attempt's checkpoint-signal objects (only the mover
 * reads an acknowledgement, and never of an attempt status deletes); true when the object
 * is gone (absent already counts). */
static bool
delete_object(const struct member *t, const struct status_job *j,
    struct status_stats *st)
{
	struct err e = { 0 };
	bool existed = false;

	if (j->manifest == NULL)
		return true;
	if (!kube_delete_object(&t->pc, "ray.io/v1", j->kind, mget(j->manifest, "namespace"),
	    mget(j->manifest, "name"), &existed, &e)) {
		status_unreadable(j, t->name, &e);
		return false;
	}
	st->deleted += existed;
	dispatch_signal_delete_for(&t->pc, j->manifest, "status");
	return true;
}

/* Applies a changed copy of the manifest; ref gets the new resourceVersion.  Level, not
 * edge: when the live object already shows the change (applied in an earlier cycle whose
 * transaction then failed, say while the database restarted) it is not applied again and
 * ref gets the live object's resourceVersion. */
static bool
reapply(const struct member *t, const struct status_job *j, json_t *m,
    const json_t *live, bool already, struct kube_ref *ref, bool *gone)
{
	struct err e = { 0 };

	*gone = false;
	if (already && live != NULL) {
		const char *rv = jsonx_meta_str(live, "resourceVersion");

		memset(ref, 0, sizeof(*ref));
		snprintf(ref->resource_version, sizeof(ref->resource_version), "%s", rv ? rv : "");
		return true;
	}
	if (kube_apply(&t->pc, m, ref, NULL, &e))
		return true;
	*gone = e.status == 404;
	if (!*gone)
		status_unreadable(j, t->name, &e);
	return false;
}

/* The checkpoint signal the pods see (CONTRACTS.md): the ConfigMap of the attempt with
 * the request, its deadline, the grace (capped for spot loss) and the reason. */
static void
signal_checkpoint(const struct member *t, const struct status_job *j)
{
	enum kuberay_provider p = KUBERAY_HYPERPOD;
	struct kuberay_signal sig;
	struct kube_ref ref;
	struct err e = { 0 };
	char now[32];
	time_t tn = time(NULL);
	struct tm tm;
	json_t *cm;

	strftime(now, sizeof(now), "%Y-%m-%dT%H:%M:%SZ", gmtime_r(&tn, &tm));
	sig.requested_at = now;
	sig.deadline = j->deadline;
	sig.reason = j->spot_loss ? "spot" : "preempt";
	if (!kuberay_provider_from_name(t->provider, &p))
		p = KUBERAY_HYPERPOD;
	cm = kuberay_signal_for_manifest(j->manifest, &sig, j->spot_loss &&
	    j->grace_s > kuberay_spot_grace_cap(p) ? kuberay_spot_grace_cap(p) : j->grace_s);
	if (cm != NULL && !kube_apply(&t->pc, cm, &ref, NULL, &e))
		log_warn(NULL, "status", "cannot signal a checkpoint", "{s:s, s:s}", "job", j->id,
		    "error", e.msg);
	json_decref(cm);
}

static void
act_preempted(const struct member *t, struct status_job *j, const json_t *live,
    struct status_stats *st)
{
	struct settle s = { .j = j, .cluster_id = t->id };
	struct kube_ref ref;
	json_t *m, *ann;
	const char *asked = json_string_value(json_object_get(jsonx_meta(live,
	    "annotations"), "fleet.io/checkpoint-requested"));
	bool gone = false, rayjob = strcmp(j->kind, "RayJob") == 0, signalled;
	bool suspended = json_is_true(json_object_get(json_object_get(live, "spec"), "suspend"));

	if (j->manifest == NULL) {
		s.to = "pending";
		s.reason = "preempted before it reached the cluster";
		settle(&s, st);
		return;
	}
	ann = jsonx_meta(j->manifest, "annotations");
	if (json_object_get(ann, "fleet.io/checkpoint-requested") == NULL && j->deadline[0]) {
		m = json_deep_copy(j->manifest);
		json_object_set_new(jsonx_meta(m, "annotations"), "fleet.io/checkpoint-requested",
		    json_string(j->deadline));
		signalled = asked != NULL && strcmp(asked, j->deadline) == 0;
		if (!signalled)
			signal_checkpoint(t, j);
		if (reapply(t, j, m, live, signalled, &ref, &gone)) {
			s.manifest = m;
			s.rv = ref.resource_version;
			s.event_type = "checkpoint_requested";
			s.reason = "checkpoint requested";
			s.data = json_pack("{s:s, s:s}", "deadline", j->deadline, "cluster", t->name);
			if (settle(&s, st)) {
				json_decref(j->manifest);
				j->manifest = json_incref(m);
			}
			json_decref(s.data);
			memset(&s, 0, sizeof(s));
			s.j = j;
		}
		json_decref(m);
		if (!gone && !j->deadline_passed)
			return;
	}
	if (!j->deadline_passed && !gone)
		return;
	s.to = "pending";
	s.clear_object = true;
	if (gone) {
		s.reason = "preempted; the object was already gone";
	} else if (rayjob) {
		m = json_deep_copy(j->manifest);
		json_object_set_new(json_object_get(m, "spec"), "suspend", json_true());
		if (!reapply(t, j, m, live, suspended, &ref, &gone) && !gone) {
			json_decref(m);
			return;
		}
		s.manifest = gone ? NULL : m;
		s.rv = gone ? NULL : ref.resource_version;
		s.reason = "preempted; suspended on the cluster after the grace period";
		settle(&s, st);
		json_decref(m);
		return;
	} else {
		if (!delete_object(t, j, st))
			return;
		s.reason = "preempted; deleted from the cluster after the grace period";
	}
	settle(&s, st);
}

/* Surfaces the Warning events of the job's pods (once each) and the operator's status. */
static void
surface(const struct status_job *j, const struct status_seen *seen,
    const struct status_obs *obs, struct status_stats *st)
{
	json_t *ev, *d;
	size_t i;
	char key[160], msg[700];

	snprintf(key, sizeof(key), "status:%s", obs->word);
	snprintf(msg, sizeof(msg), "%s %s%s%s", j->kind, obs->word, obs->message[0] ? ": " : "",
	    obs->message);
	d = json_pack("{s:s, s:s}", "kind", j->kind, "phase", status_phase_name(obs->phase));
	note_once(j, "cluster_status", key, msg, d, st);
	json_decref(d);
	json_array_foreach(seen->events, i, ev) {
		const char *name = mget(ev, "name"), *reason = json_string_value(json_object_get(ev,
		    "reason")), *text = json_string_value(json_object_get(ev, "message")),
		    *pod = json_string_value(json_object_get(json_object_get(ev,
		    "involvedObject"), "name"));

		if (name == NULL || reason == NULL)
			continue;
		snprintf(msg, sizeof(msg), "%s: %s", reason, text ? text : "");
		d = json_pack("{s:s, s:s?, s:O?}", "reason", reason, "pod", pod, "count",
		    json_object_get(ev, "count"));
		note_once(j, "cluster_event", name, msg, d, st);
		json_decref(d);
	}
}

/* Unschedulable past the cluster's timeout (twice that while the pool may still grow). */
static bool
stocked_out(const struct status_job *j, const struct status_seen *seen)
{
	double limit = j->stockout_timeout_s > 0 ? j->stockout_timeout_s : 120;

	if (!j->scale_failed)
		limit *= 2;
	return j->state == JOB_DISPATCHED && seen->unscheduled > 0 &&
	    j->pending_for >= 0 && j->pending_for >= limit;
}

static void
act_live(const struct member *t, struct status_job *j, const struct status_seen *seen,
    struct status_stats *st)
{
	struct settle s = { .j = j, .cluster_id = t->id };
	struct status_obs obs;
	char reason[600];

	status_map(j->kind, seen->live, &obs);
	surface(j, seen, &obs, st);
	if (obs.phase == STATUS_RUNNING || obs.phase == STATUS_SUCCEEDED ||
	    obs.phase == STATUS_FAILED) {
		if (j->state == JOB_DISPATCHED) {
			s.to = "running";
			s.reason = "running on the cluster";
			if (!settle(&s, st))
				return;
			j->state = JOB_RUNNING;
		}
		if (obs.phase == STATUS_RUNNING) {
			if (seen->spot) {
				s.to = "preempted";
				s.reason = "spot capacity reclaimed under the job";
				s.spot_deadline = true;
				settle(&s, st);
			}
			return;
		}
		s.to = obs.phase == STATUS_SUCCEEDED ? "succeeded" : "failed";
		snprintf(reason, sizeof(reason), "%s", obs.phase == STATUS_SUCCEEDED ?
		    "completed on the cluster" : obs.message);
		s.reason = reason;
		settle(&s, st);
		return;
	}
	if (obs.phase == STATUS_PENDING && stocked_out(j, seen)) {
		if (!delete_object(t, j, st))
			return;
		snprintf(reason, sizeof(reason), "stockout: pods unschedulable on %s for %.0f s; "
		    "withdrawn to be placed elsewhere", t->name, j->pending_for);
		s.to = "pending";
		s.reason = reason;
		s.clear_object = true;
		s.stockout = true;
		s.data = json_pack("{s:s, s:s, s:i}", "cluster", t->name, "flavor", j->flavor,
		    "unscheduled_pods", seen->unscheduled);
		settle(&s, st);
		json_decref(s.data);
	} else if (seen->spot && obs.phase == STATUS_PENDING) {
		s.to = "preempted";
		s.reason = "spot capacity reclaimed under the job";
		s.spot_deadline = true;
		settle(&s, st);
	}
}

/* The object is not in the list: confirm with a GET, then the job fails. */
static void
act_vanished(const struct member *t, struct status_job *j, struct status_stats *st)
{
	struct settle s = { .j = j, .cluster_id = t->id };
	struct err e = { 0 };
	json_t *live = NULL;

	if (j->manifest == NULL)
		return;
	if (kube_get_object(&t->pc, "ray.io/v1", j->kind, mget(j->manifest, "namespace"),
	    mget(j->manifest, "name"), &live, &e)) {
		struct status_seen again = { .live = live };

		act_live(t, j, &again, st);
		json_decref(live);
		return;
	}
	if (e.status != 404) {
		status_unreadable(j, t->name, &e);
		return;
	}
	s.to = "failed";
	s.reason = "the object vanished from the cluster (deleted outside fleetd)";
	s.clear_object = true;
	s.data = json_pack("{s:s, s:s}", "cluster", t->name, "object", mget(j->manifest, "name"));
	settle(&s, st);
	json_decref(s.data);
}

void
status_act(const struct member *t, struct status_job *j,
    const struct status_seen *seen, struct status_stats *st)
{
	struct settle s = { .j = j, .cluster_id = t->id };
	if (job_state_is_final(j->state)) {
		if (!j->ttl_due || !delete_object(t, j, st))
			return;
		s.clear_object = true;
		s.event_type = "cleaned_up";
		s.reason = "the object was deleted after ttlSecondsAfterFinished";
		settle(&s, st);
	} else if (j->cancel) {
		if (!delete_object(t, j, st))
			return;
		s.to = "cancelled";
		s.reason = "cancelled; the object was deleted from the cluster";
		s.clear_object = true;
		settle(&s, st);
	} else if (j->state == JOB_PREEMPTED) {
		act_preempted(t, j, seen->live, st);
	} else if (seen->live == NULL) {
		act_vanished(t, j, st);
	} else {
		act_live(t, j, seen, st);
	}
}
