/* status_act: what the status worker does about one job — every change of the member
 * cluster happens first (delete, apply), then the job row changes in one transaction
 * with its events. */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/config.h"
#include "core/jsonx.h"
#include "core/log.h"
#include "providers/kube.h"
#include "queue/follow/status_int.h"
#include "queue/jobs/job.h"
#include "queue/sched/scheduler.h"
#include "regions/lease.h"

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
	bool			 release;	/* clear this worker's claim (claim()) */
	const char		*event_type;	/* plain event, with reason as message */
	json_t			*failure;	/* a "failure" event's data (class, evidence) */
	json_t			*postmortem;	/* the attempt's record (job_postmortems) */
	const char		*pm_trigger;	/* why it was recorded: failed, succeeded... */
	bool			 infra_retry;	/* counts a retry; avoids failure's nodes */
};

/* The attempt's record, once (a retried transaction or another replica: first one kept);
 * the job's timings are added from its row. */
static bool
postmortem_row(struct db *c, const struct settle *s, struct err *e)
{
	static const char sql[] = "INSERT INTO job_postmortems (job_id, attempt, cluster_id,"
	    " trigger, record) SELECT j.id, $2::int, $3::uuid, $4, $5::jsonb ||"
	    " jsonb_build_object('timings', jsonb_build_object('enqueued_at', j.enqueued_at,"
	    " 'dispatched_at', j.dispatched_at, 'started_at', j.started_at, 'finished_at',"
	    " j.finished_at, 'recorded_at', now()), 'state', j.state, 'reason', j.reason,"
	    " 'checkpoint', j.checkpoint)"
	    " FROM jobs j WHERE j.id = $1::uuid ON CONFLICT (job_id, attempt) DO NOTHING";
	char at[16], *rec = json_dumps(s->postmortem, JSON_COMPACT);
	const char *p[5] = { s->j->id, at, s->cluster_id, s->pm_trigger ? s->pm_trigger : "ended",
	    rec };
	bool ok;

	snprintf(at, sizeof(at), "%d", s->j->attempt);
	ok = rec != NULL && db_exec(c, sql, 5, p, NULL, e);
	free(rec);
	return ok;
}

/* One more infrastructure/preemption retry; the failure's nodes (with their rack) are
 * never used by the job again. */
static bool
retry_row(struct db *c, const struct settle *s, struct err *e)
{
	static const char sql[] = "UPDATE jobs SET infra_retries = infra_retries + 1,"
	    " avoid_nodes = coalesce(avoid_nodes, '[]'::jsonb) || $2::jsonb"
	    " WHERE id = $1::uuid";
	json_t *avoid = json_array(), *n;
	char *txt;
	size_t i;
	bool ok;

	json_array_foreach(json_object_get(s->failure, "nodes"), i, n)
		json_array_append_new(avoid, json_pack("{s:s, s:O}", "cluster_id", s->cluster_id,
		    "node", n));
	txt = json_dumps(avoid, JSON_COMPACT);
	{
		const char *p[2] = { s->j->id, txt };

		ok = txt != NULL && db_exec(c, sql, 2, p, NULL, e);
	}
	free(txt);
	json_decref(avoid);
	return ok;
}

static bool
settle_tx(struct db *c, void *arg, struct err *e)
{
	static const char sql_row[] = "UPDATE jobs SET"
	    " manifest = coalesce($4::jsonb, manifest), object_rv = coalesce($5, object_rv),"
	    " object_uid = CASE WHEN $6::boolean THEN NULL ELSE object_uid END,"
	    " checkpoint_deadline = CASE WHEN $7::boolean THEN now() + make_interval(secs =>"
	    "  least(coalesce((spec->'checkpoint'->>'grace_seconds')::int, $9::int), (SELECT CASE"
	    "  c.provider WHEN 'hyperpod' THEN 120 ELSE 30 END FROM clusters k JOIN clouds c"
	    "  ON c.id = k.cloud_id WHERE k.id = jobs.cluster_id))) ELSE"
	    "  checkpoint_deadline END, updated_at = now(),"
	    " claimed_by = CASE WHEN $8::boolean THEN NULL ELSE claimed_by END,"
	    " claimed_at = CASE WHEN $8::boolean THEN NULL ELSE claimed_at END"
	    " WHERE id = $1::uuid AND attempt = $2::int AND state = $3"
	    " AND cancel_requested = $10::boolean RETURNING id";
	static const char sql_stock[] = "INSERT INTO stockouts (cluster_id, flavor, at)"
	    " VALUES ($1::uuid, $2, now()) ON CONFLICT (cluster_id, flavor) DO UPDATE SET at = now()";
	struct settle *s = arg;
	char at[16], grace[16], *ms = s->manifest ? json_dumps(s->manifest, JSON_COMPACT) : NULL;
	/* $10: a cancel requested since the row was loaded makes this a "changed meanwhile":
	 * a stockout's withdrawal must not send a cancelled job back to pending, where nothing
	 * follows it (the next turn loads the cancel and acts on it) */
	const char *p[10] = { s->j->id, at, job_state_name(s->j->state), ms, s->rv,
	    s->clear_object ? "true" : "false", s->spot_deadline ? "true" : "false",
	    s->release ? "true" : "false", grace, s->j->cancel ? "true" : "false" };
	PGresult *r = NULL;
	bool ok = false;

	snprintf(at, sizeof(at), "%d", s->j->attempt);
	snprintf(grace, sizeof(grace), "%d", SCHED_GRACE_S);
	if (!lease_fence(c, s->cluster_id, e))	/* another replica follows it now */
		goto cleanup;
	if (!db_exec(c, sql_row, 10, p, &r, e))
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
	if (s->failure != NULL && !job_event(c, s->j->id, "failure", s->reason, s->failure, e))
		goto cleanup;
	if (s->infra_retry && !retry_row(c, s, e))
		goto cleanup;
	if (s->to != NULL && !job_transition(c, s->j->id, job_state_name(s->j->state), s->to,
	    s->reason, s->data, e))
		goto cleanup;
	if (s->postmortem != NULL && !postmortem_row(c, s, e))
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

void
status_note_once(const struct status_job *j, const char *type, const char *key, const char *msg,
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
	status_note_once(j, "sync_error", key, msg, d, &st);
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

/* The checkpoint signal the pods see (docs/design/contracts.md): the ConfigMap of the attempt with
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

/* Takes preempted job j for this replica before the member is changed (checkpoint request,
 * suspension or deletion after the grace): every replica's status worker follows every
 * job, and two that act on one loaded row both apply.  The row must still be as loaded
 * (preempted, this attempt, the same checkpoint request); a claim of another replica holds
 * until its record clears it (settle's release) or for DISPATCH_INFLIGHT_S, beyond an
 * apply's timeout, when that replica died.  *again: a claim was there (an earlier action
 * may have reached the member without its record).  False when not taken. */
static bool
claim(const struct status_job *j, bool *again)
{
	static const char sql[] = "WITH o AS (SELECT id, claimed_by FROM jobs WHERE id = $1::uuid"
	    " FOR UPDATE) UPDATE jobs j SET claimed_by = $3, claimed_at = now() FROM o"
	    " WHERE j.id = o.id AND j.attempt = $2::int AND j.state = 'preempted'"
	    " AND coalesce(j.manifest->'metadata'->'annotations'->>"
	    "'fleet.io/checkpoint-requested', '') = $4 AND (j.claimed_by IS NULL OR"
	    " j.claimed_by = $3 OR j.claimed_at < now() - interval '" DISPATCH_INFLIGHT_S
	    " seconds') RETURNING o.claimed_by IS NOT NULL";
	const char *asked = json_string_value(json_object_get(jsonx_meta(j->manifest,
	    "annotations"), "fleet.io/checkpoint-requested"));
	char at[16];
	const char *p[4] = { j->id, at, cfg.instance_id, asked ? asked : "" };
	struct err e = { 0 };
	PGresult *r = NULL;
	bool ok;

	*again = false;
	snprintf(at, sizeof(at), "%d", j->attempt);
	if (!db_claim(sql, 4, p, &r, &e)) {
		log_warn(NULL, "status", "cannot claim", "{s:s, s:s}", "job", j->id, "error",
		    e.msg);
		return false;
	}
	ok = PQntuples(r) == 1;
	*again = ok && PQgetvalue(r, 0, 0)[0] == 't';
	PQclear(r);
	return ok;
}

/* After a claim that was there before: the member's object as it is now (the list or
 * watch cache the cycle read may predate that earlier apply).  *fresh NULL when absent;
 * false when it cannot be read. */
static bool
read_fresh(const struct member *t, const struct status_job *j, json_t **fresh)
{
	struct err e = { 0 };

	*fresh = NULL;
	if (kube_get_object(&t->pc, "ray.io/v1", j->kind, mget(j->manifest, "namespace"),
	    mget(j->manifest, "name"), fresh, &e))
		return true;
	if (e.status == 404)
		return true;
	status_unreadable(j, t->name, &e);
	return false;
}

static json_t	*failure_of(const struct status_job *j, json_t *findings, const char *word,
		    const char *message);

/* A spot reclaim ends the attempt: a preemption failure, classified from the signals
 * recorded while it ran.  Within the job's max_infra_retries it waits again (pending) and
 * its next attempt avoids the reclaimed nodes; past it the job fails.  Fills s (to, reason,
 * failure, infra_retry) and *fail (the caller's, freed by it). */
static void
spot_retry(const struct status_job *j, struct settle *s, json_t **fail, char *reason,
    size_t n)
{
	json_t *f = failure_of(j, NULL, "preempted", "spot capacity reclaimed under the job");
	bool retry = j->infra_retries < j->max_infra_retries;

	if (strcmp(json_string_value(json_object_get(f, "class")), "preemption") != 0) {
		json_decref(f);
		f = json_pack("{s:s, s:s, s:s, s:[], s:[], s:[], s:{s:s}, s:i}", "class",
		    "preemption", "reason", "SpotInterruption", "message", "spot capacity reclaimed "
		    "under the job", "pods", "ranks", "nodes", "evidence", "reason",
		    "PreemptionNotice", "attempt", j->attempt);
	}
	if (retry) {
		json_object_set_new(f, "retry", json_pack("{s:b, s:i, s:i}", "given", 1,
		    "retries_used", j->infra_retries + 1, "max_infra_retries",
		    j->max_infra_retries));
		snprintf(reason, n, "preemption failure (%s), retried (%d of %d) avoiding its "
		    "nodes", json_string_value(json_object_get(f, "reason")), j->infra_retries + 1,
		    j->max_infra_retries);
		s->infra_retry = true;
	} else {
		json_object_set_new(f, "retry", json_pack("{s:b, s:s}", "given", 0, "why",
		    "max_infra_retries reached"));
		snprintf(reason, n, "preemption failure (%s): max_infra_retries (%d) reached",
		    json_string_value(json_object_get(f, "reason")), j->max_infra_retries);
		s->to = "failed";
	}
	s->reason = reason;
	s->failure = f;
	s->data = f;
	*fail = f;
}

static void
act_preempted(const struct member *t, struct status_job *j, const json_t *seen_live,
    struct status_stats *st)
{
	struct settle s = { .j = j, .cluster_id = t->id, .release = true };
	json_t *fail = NULL;
	char reason[600];
	struct kube_ref ref;
	json_t *m, *ann, *fresh = NULL;
	const json_t *live = seen_live;
	const char *asked;
	bool gone = false, rayjob = strcmp(j->kind, "RayJob") == 0, signalled, again, ask;
	bool suspended;

	if (j->manifest == NULL) {
		s.to = "pending";
		s.reason = "preempted before it reached the cluster";
		settle(&s, st);
		return;
	}
	ann = jsonx_meta(j->manifest, "annotations");
	ask = json_object_get(ann, "fleet.io/checkpoint-requested") == NULL && j->deadline[0];
	if ((!ask && !j->deadline_passed) || !claim(j, &again))
		return;
	if (again) {
		if (!read_fresh(t, j, &fresh))
			return;
		live = fresh;
	}
	asked = json_string_value(json_object_get(jsonx_meta(live, "annotations"),
	    "fleet.io/checkpoint-requested"));
	suspended = json_is_true(json_object_get(json_object_get(live, "spec"), "suspend"));
	if (ask) {
		bool recorded = false;

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
			s.release = !j->deadline_passed;	/* else kept for the suspension */
			if ((recorded = settle(&s, st))) {
				json_decref(j->manifest);
				j->manifest = json_incref(m);
			}
			json_decref(s.data);
			memset(&s, 0, sizeof(s));
			s.j = j;
			s.cluster_id = t->id;
			s.release = true;
		}
		json_decref(m);
		/* the suspension waits for the request's record: the next cycle finds the
		 * request on the object and records it (the suspend apply would drop it) */
		if (!gone && (!recorded || !j->deadline_passed))
			goto cleanup;
	}
	s.to = "pending";
	s.clear_object = true;
	if (j->spot_loss)
		spot_retry(j, &s, &fail, reason, sizeof(reason));
	if (gone) {
		if (s.failure == NULL)
			s.reason = "preempted; the object was already gone";
	} else if (rayjob) {
		m = json_deep_copy(j->manifest);
		json_object_set_new(json_object_get(m, "spec"), "suspend", json_true());
		if (!reapply(t, j, m, live, suspended, &ref, &gone) && !gone) {
			json_decref(m);
			goto cleanup;
		}
		s.manifest = gone ? NULL : m;
		s.rv = gone ? NULL : ref.resource_version;
		if (s.failure == NULL)
			s.reason = "preempted; suspended on the cluster after the grace period";
		settle(&s, st);
		json_decref(m);
		goto cleanup;
	} else {
		if (!delete_object(t, j, st))
			goto cleanup;
		if (s.failure == NULL)
			s.reason = "preempted; deleted from the cluster after the grace period";
	}
	settle(&s, st);
cleanup:
	json_decref(fail);
	json_decref(fresh);
}

/* "class: reason on pods (ranks) of nodes: message" */
static void
finding_text(json_t *f, char *msg, size_t n)
{
	char *pods = json_dumps(json_object_get(f, "pods"), JSON_COMPACT),
	    *ranks = json_dumps(json_object_get(f, "ranks"), JSON_COMPACT),
	    *nodes = json_dumps(json_object_get(f, "nodes"), JSON_COMPACT);

	snprintf(msg, n, "%s: %s; pods %s ranks %s nodes %s: %s",
	    json_string_value(json_object_get(f, "class")),
	    json_string_value(json_object_get(f, "reason")), pods ? pods : "[]",
	    ranks ? ranks : "[]", nodes ? nodes : "[]",
	    json_string_value(json_object_get(f, "message")));
	free(pods);
	free(ranks);
	free(nodes);
}

/* Surfaces the Warning events of the job's pods (once each), the operator's status and the
 * classified failure signals (once per class, reason and node); returns the findings (a new
 * array). */
static json_t *
surface(const struct status_job *j, const struct status_seen *seen,
    const struct status_obs *obs, struct status_stats *st)
{
	json_t *ev, *d, *findings, *f, *pins;
	size_t i;
	char key[160], msg[700];

	snprintf(key, sizeof(key), "status:%s", obs->word);
	snprintf(msg, sizeof(msg), "%s %s%s%s", j->kind, obs->word, obs->message[0] ? ": " : "",
	    obs->message);
	d = json_pack("{s:s, s:s}", "kind", j->kind, "phase", status_phase_name(obs->phase));
	status_note_once(j, "cluster_status", key, msg, d, st);
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
		status_note_once(j, "cluster_event", name, msg, d, st);
		json_decref(d);
	}
	pins = j->manifest != NULL ? status_pins(j->manifest, j->kind) : NULL;
	findings = status_classify(seen->pods, seen->nodes, seen->events, pins);
	json_decref(pins);
	json_array_foreach(findings, i, f) {
		finding_text(f, msg, sizeof(msg));
		d = json_deep_copy(f);
		json_object_del(d, "key");
		status_note_once(j, "failure_signal", json_string_value(json_object_get(f, "key")), msg, d,
		    st);
		json_decref(d);
	}
	return findings;
}

/* Whether a finding says the provider reclaims a node of the job (a reclamation taint or
 * scheduled preemption on the node, as providers signal it). */
static bool
reclaimed(json_t *findings)
{
	json_t *f;
	size_t i;

	json_array_foreach(findings, i, f)
		if (strcmp(json_string_value(json_object_get(f, "class")), "preemption") == 0 &&
		    json_array_size(json_object_get(f, "nodes")) > 0)
			return true;
	return false;
}

/* The signals recorded for the attempt in earlier cycles (a new array of their data). */
static json_t *
recorded_signals(const struct status_job *j)
{
	static const char sql[] = "SELECT coalesce(json_agg(data ORDER BY id), '[]')::text"
	    " FROM job_events WHERE job_id = $1::uuid AND attempt = $2::int"
	    " AND type = 'failure_signal'";
	struct err e = { 0 };
	struct db *c = db_acquire(5000, &e);
	PGresult *r = NULL;
	char at[16];
	const char *p[2] = { j->id, at };
	json_t *out = NULL;

	snprintf(at, sizeof(at), "%d", j->attempt);
	if (c != NULL && db_exec(c, sql, 2, p, &r, &e) && PQntuples(r) == 1)
		out = json_loads(PQgetvalue(r, 0, 0), 0, NULL);
	PQclear(r);
	db_release(c);
	return json_is_array(out) ? out : (json_decref(out), json_array());
}

/* What ended the attempt: the most telling signal seen now or recorded before (by
 * status_class_rank), else what the operator said (a RayJob's entrypoint failing is
 * user_code; a deadline or a spec KubeRay refused is configuration).  A new object
 * {class, reason, message, pods, ranks, nodes, evidence, attempt}. */
static json_t *
failure_of(const struct status_job *j, json_t *findings, const char *word,
    const char *message)
{
	json_t *all = recorded_signals(j), *f, *best = NULL, *out;
	size_t i;

	json_array_extend(all, findings);
	json_array_foreach(all, i, f)
		if (best == NULL || status_class_rank(json_string_value(json_object_get(f,
		    "class"))) < status_class_rank(json_string_value(json_object_get(best,
		    "class"))))
			best = f;
	if (best != NULL) {
		out = json_deep_copy(best);
		json_object_del(out, "key");
	} else {
		bool config = strstr(message, "DeadlineExceeded") != NULL ||
		    strstr(word, "ValidationFailed") != NULL;

		out = json_pack("{s:s, s:s, s:s, s:[], s:[], s:[], s:{s:s, s:s}}", "class",
		    config ? "configuration" : "user_code", "reason", config ? (strstr(message,
		    "DeadlineExceeded") ? "DeadlineExceeded" : "ValidationFailed") : "AppFailed",
		    "message", message, "pods", "ranks", "nodes", "evidence", "status", word,
		    "message", message);
	}
	json_object_set_new(out, "attempt", json_integer(j->attempt));
	json_decref(all);
	return out;
}

/* The attempt failed: classified, kept, and retried when its class is and the bound
 * allows (the failed object is deleted first; the next attempt avoids its nodes). */
static void
act_failed(const struct member *t, struct status_job *j, const struct status_seen *seen,
    const struct status_obs *obs, json_t *findings, struct status_stats *st)
{
	struct settle s = { .j = j, .cluster_id = t->id };
	json_t *fail = failure_of(j, findings, obs->word, obs->message);
	const char *cls = json_string_value(json_object_get(fail, "class"));
	bool retry = status_class_retried(cls) && j->infra_retries < j->max_infra_retries;
	char reason[700];

	s.postmortem = status_postmortem(seen->pods, seen->events, seen->nodes, j->kind,
	    seen->live, obs->word, obs->message, findings);
	json_object_set(s.postmortem, "failure", fail);
	if (retry) {
		if (!delete_object(t, j, st))
			goto cleanup;
		json_object_set_new(fail, "retry", json_pack("{s:b, s:i, s:i}", "given", 1,
		    "retries_used", j->infra_retries + 1, "max_infra_retries",
		    j->max_infra_retries));
		snprintf(reason, sizeof(reason), "%s failure (%s), retried (%d of %d) avoiding its "
		    "nodes: %s", cls, json_string_value(json_object_get(fail, "reason")),
		    j->infra_retries + 1, j->max_infra_retries, obs->message);
		s.to = "pending";
		s.clear_object = true;
		s.infra_retry = true;
		s.pm_trigger = "retried";
	} else {
		json_object_set_new(fail, "retry", json_pack("{s:b, s:s}", "given", 0, "why",
		    status_class_retried(cls) ? "max_infra_retries reached" :
		    "user_code and configuration failures are not retried"));
		snprintf(reason, sizeof(reason), "%s failure (%s): %s", cls,
		    json_string_value(json_object_get(fail, "reason")), obs->message);
		s.to = "failed";
		s.pm_trigger = "failed";
	}
	s.reason = reason;
	s.failure = fail;
	s.data = fail;
	settle(&s, st);
cleanup:
	json_decref(s.postmortem);
	json_decref(fail);
}

static void
act_live(const struct member *t, struct status_job *j, const struct status_seen *seen,
    struct status_stats *st)
{
	struct settle s = { .j = j, .cluster_id = t->id };
	struct status_obs obs;
	char reason[600];
	const char *why = NULL;
	json_t *findings;

	status_map(j->kind, seen->live, &obs);
	findings = surface(j, seen, &obs, st);
	if (obs.phase == STATUS_RUNNING || obs.phase == STATUS_SUCCEEDED ||
	    obs.phase == STATUS_FAILED) {
		if (j->state == JOB_DISPATCHED) {
			s.to = "running";
			s.reason = "running on the cluster";
			if (!settle(&s, st))
				goto cleanup;
			j->state = JOB_RUNNING;
		}
		if (obs.phase == STATUS_RUNNING) {
			if (seen->spot || reclaimed(findings)) {
				s.to = "preempted";
				s.reason = "spot capacity reclaimed under the job";
				s.spot_deadline = true;
				s.postmortem = status_postmortem(seen->pods, seen->events, seen->nodes,
				    j->kind, seen->live, obs.word, obs.message, findings);
				s.pm_trigger = "preempted";
				settle(&s, st);
			}
			goto cleanup;
		}
		if (obs.phase == STATUS_FAILED) {
			act_failed(t, j, seen, &obs, findings, st);
			goto cleanup;
		}
		s.to = "succeeded";
		s.reason = "completed on the cluster";
		s.postmortem = status_postmortem(seen->pods, seen->events, seen->nodes, j->kind,
		    seen->live, obs.word, obs.message, findings);
		s.pm_trigger = "succeeded";
		settle(&s, st);
		goto cleanup;
	}
	if (obs.phase == STATUS_PENDING && status_stocked_out(t, j, seen, &why)) {
		if (!delete_object(t, j, st))
			goto cleanup;
		if (strcmp(why, "timeout") == 0)
			snprintf(reason, sizeof(reason), "stockout: pods unschedulable on %s for "
			    "%.0f s; withdrawn to be placed elsewhere", t->name, j->pending_for);
		else
			snprintf(reason, sizeof(reason), "stockout: %s on %s (the cluster cannot find "
			    "room for the pods); withdrawn to be placed elsewhere", why, t->name);
		s.to = "pending";
		s.reason = reason;
		s.clear_object = true;
		s.stockout = true;
		s.data = json_pack("{s:s, s:s, s:i, s:s, s:s}", "cluster", t->name, "flavor",
		    j->flavor, "unscheduled_pods", seen->unscheduled, "class", "capacity", "signal",
		    why);
		settle(&s, st);
		json_decref(s.data);
	} else if (seen->spot && obs.phase == STATUS_PENDING) {
		s.to = "preempted";
		s.reason = "spot capacity reclaimed under the job";
		s.spot_deadline = true;
		settle(&s, st);
	}
cleanup:
	json_decref(findings);
	json_decref(s.postmortem);
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
	s.data = json_pack("{s:s, s:s, s:s, s:s, s:s, s:[], s:[], s:[], s:{s:s, s:s}, s:i}",
	    "cluster", t->name, "object", mget(j->manifest, "name"), "class", "infrastructure",
	    "reason", "ObjectDeleted", "message", s.reason, "pods", "ranks", "nodes", "evidence",
	    "reason", "NotFound", "object", mget(j->manifest, "name"), "attempt", j->attempt);
	s.failure = s.data;
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
		if (j->manifest != NULL)
			status_postmortem_keep(t, j->id, j->attempt, j->ns, j->kind, "cancelled");
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
		status_repair(t, j, seen, st);
		status_grow(t, j, seen, st);
		act_live(t, j, seen, st);
	}
}
