/* cron: which runs of a RayCronJob may run (the concurrency policy, cron_decide) and
 * which are counted (jobs.cron_runs, cron_sync); the scheduler's model reads the runs in
 * queue/sched/loader.c.  The policy is enforced by deleting the child RayJob that must not run:
 * it works with every KubeRay version (older RayCronJob controllers ignore spec.suspend,
 * and un-suspending makes the controller start the missed run at once, late instead of
 * skipped). */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/arena.h"
#include "core/config.h"
#include "core/jsonx.h"
#include "core/log.h"
#include "providers/kube.h"
#include "queue/follow/cron.h"
#include "queue/jobs/job.h"
#include "queue/sched/loader.h"
#include "queue/sched/scheduler.h"

#define MAX_CHILDREN	64

const char *
cron_why_name(enum cron_why w)
{
	switch (w) {
	case CRON_WHY_FORBID:	return "forbid";
	case CRON_WHY_QUOTA:	return "quota";
	case CRON_WHY_REPLACED:	return "replaced";
	case CRON_WHY_CAPACITY:	return "capacity";
	case CRON_WHY_NONE:	break;
	}
	return "";
}

static void
verdict(struct cron_verdict *o, enum cron_action a, enum cron_why w)
{
	o->action = a;
	o->why = w;
}

void
cron_decide(enum jobspec_cron_policy p, const struct cron_child *v, size_t n, int room,
	    struct cron_verdict *out)
{
	int kept = 0;
	size_t newest = n;

	for (size_t i = 0; i < n; i++) {
		verdict(&out[i], v[i].active ? CRON_RUN : v[i].known ? CRON_DONE : CRON_IGNORE,
		    CRON_WHY_NONE);
		if (v[i].active)
			newest = i;
	}
	if (p == JOBSPEC_CRON_REPLACE && newest < n && (v[newest].known || room >= 1)) {
		/* the newest runs (counted already, or it fits alone); every older one goes */
		for (size_t i = 0; i < newest; i++)
			if (v[i].active)
				verdict(&out[i], v[i].known ? CRON_STOP : CRON_SKIP,
				    CRON_WHY_REPLACED);
		return;
	}
	/* Forbid, Allow, and Replace when the newest does not fit: counted runs go on */
	for (size_t i = 0; i < n; i++)
		kept += v[i].active && v[i].known;
	for (size_t i = 0; i < n; i++) {
		if (!v[i].active || v[i].known)
			continue;
		if (p == JOBSPEC_CRON_FORBID && kept > 0)
			verdict(&out[i], CRON_SKIP, CRON_WHY_FORBID);
		else if (kept >= room || (p == JOBSPEC_CRON_REPLACE && kept > 0))
			verdict(&out[i], CRON_SKIP, CRON_WHY_QUOTA);
		else
			kept++;
	}
}

static long long
epoch_of(const char *ts)
{
	struct tm tm;
	char *end;

	memset(&tm, 0, sizeof(tm));
	if (ts == NULL || (end = strptime(ts, "%Y-%m-%dT%H:%M:%S", &tm)) == NULL)
		return -1;
	return (long long)timegm(&tm);
}

bool
cron_expired(json_t *child, long long now)
{
	json_t *st = json_object_get(child, "status");
	json_t *ttl = json_object_get(json_object_get(child, "spec"), "ttlSecondsAfterFinished");
	const char *jds = json_string_value(json_object_get(st, "jobDeploymentStatus"));
	long long end = epoch_of(json_string_value(json_object_get(st, "endTime")));

	if (jds == NULL || (strcmp(jds, "Complete") != 0 && strcmp(jds, "Failed") != 0) ||
	    end < 0)
		return false;
	return now >= end + (json_is_integer(ttl) && json_integer_value(ttl) > 0 ?
	    json_integer_value(ttl) : 0);
}

/* ---- the member's children and the job's runs */

struct child {
	struct cron_child	 c;
	char			 created[40];
	char			 scheduled[40];
	char			 uid[64];
	char			 word[64];
	bool			 suspended;	/* as created from the template: not placed yet */
	json_t			*place;		/* the run's placement when fleetd places it now */
	const char		*nofit;		/* capacity: the scheduler's reason code */
};

static const char *
meta(json_t *o, const char *k)
{
	const char *s = jsonx_meta_str(o, k);

	return s ? s : "";
}

static const char *
meta_map(json_t *o, const char *map, const char *k)
{
	const char *s = json_string_value(json_object_get(jsonx_meta(o, map), k));

	return s ? s : "";
}

/* item is a run of the cron whose uid is cron_uid (by its owner reference when it has one). */
static bool
owned(json_t *item, const char *cron, const char *cron_uid)
{
	json_t *refs = jsonx_meta(item, "ownerReferences");

	if (strcmp(meta_map(item, "labels", CRON_LABEL), cron) != 0)
		return false;
	if (json_array_size(refs) == 0 || cron_uid[0] == '\0')
		return true;
	return jsonx_find(refs, "uid", cron_uid) != NULL;
}

static int
child_cmp(const void *a, const void *b)
{
	const struct child *x = a, *y = b;
	int c = strcmp(x->created, y->created);

	return c ? c : strcmp(x->c.name, y->c.name);
}

/* What the job row says: its spec, environment, queue and counted runs. */
struct row {
	json_t	*spec;
	json_t	*runs;
	char	 env[64];
	char	 queue_id[40];
	char	 queue[64];
	int	 priority;
	char	*runs_text;		/* as read: the update's precondition */
	enum jobspec_cron_policy policy;
};

static bool
row_load(struct db *c, const struct status_job *j, struct row *w, struct err *e)
{
	static const char sql[] = "SELECT j.spec::text, j.environment, j.queue_id::text,"
	    " coalesce(j.cron_runs, '[]'::jsonb)::text, q.name, j.priority FROM jobs j"
	    " JOIN queues q ON q.id = j.queue_id"
	    " WHERE j.id = $1::uuid AND j.attempt = $2::int AND j.state = 'running'";
	char at[16];
	const char *p[2] = { j->id, at };
	PGresult *r = NULL;
	bool ok = false;

	snprintf(at, sizeof(at), "%d", j->attempt);
	if (!db_exec(c, sql, 2, p, &r, e))
		return false;
	if (PQntuples(r) == 0)
		goto cleanup;
	w->spec = json_loads(PQgetvalue(r, 0, 0), 0, NULL);
	w->runs = json_loads(PQgetvalue(r, 0, 3), 0, NULL);
	snprintf(w->env, sizeof(w->env), "%s", PQgetvalue(r, 0, 1));
	snprintf(w->queue_id, sizeof(w->queue_id), "%s", PQgetvalue(r, 0, 2));
	snprintf(w->queue, sizeof(w->queue), "%s", PQgetvalue(r, 0, 4));
	w->priority = atoi(PQgetvalue(r, 0, 5));
	if ((w->runs_text = strdup(PQgetvalue(r, 0, 3))) == NULL)
		abort();
	w->policy = JOBSPEC_CRON_FORBID;
	jobspec_cron_policy_from_name(json_string_value(json_object_get(json_object_get(w->spec,
	    "cron"), "concurrency_policy")), &w->policy);
	ok = json_is_array(w->runs) && w->spec != NULL;
cleanup:
	PQclear(r);
	return ok;
}

/* How many runs of the cron the queue's quota holds at once besides everything else (the
 * cron's own counted runs left out); -1 when the model cannot be loaded. */
static int
room_of(struct db *c, const struct status_job *j, const struct row *w)
{
	struct sched_model *m = NULL;
	struct sched_job *probe;
	struct err e = { 0 };
	json_t *run;
	size_t i;
	char id[160];
	int k = -1;

	if (!loader_model(c, w->env, cfg.snapshot_max_age_s, &m, &e))
		goto cleanup;
	json_array_foreach(w->runs, i, run) {
		struct sched_job *rj;

		snprintf(id, sizeof(id), "%s#run:%s", j->id,
		    json_string_value(json_object_get(run, "name")) ?
		    json_string_value(json_object_get(run, "name")) : "");
		rj = sched_model_find_job(m, id);
		if (rj != NULL && (rj->state == SCHED_ADMITTED || rj->state == SCHED_RUNNING))
			sched_usage_add(m, rj, -1);
	}
	snprintf(id, sizeof(id), "%s#probe", j->id);
	probe = loader_add_job(m, id, w->queue_id, 0, false, 0, SCHED_PENDING, w->spec, &e);
	if (probe == NULL)
		goto cleanup;
	for (k = 0; k < MAX_CHILDREN && sched_quota_check(m, probe) == SCHED_R_CHOSEN; k++)
		sched_usage_add(m, probe, +1);
cleanup:
	if (k < 0)
		log_warn(NULL, "status", "cron: cannot measure the quota", "{s:s, s:s}", "job",
		    j->id, "error", e.msg);
	sched_model_free(m);
	return k;
}

/* Places the runs that go on now (verdict CRON_RUN, new, still suspended as created) on
 * the cron's cluster in a fresh model of the environment: the runs replaced now give their
 * room back first; each placed run takes its room before the next.  A run that does not
 * fit becomes CRON_SKIP (capacity, or quota when the model says so; a cordoned cluster is
 * "capacity" with its code); when Replace's newest run does not fit, the runs it would
 * have replaced go on.  False when the model or the cluster's snapshot cannot be read, or
 * the cluster is not ready: nothing is decided this cycle (the runs wait, suspended). */
static bool
place_runs(struct db *c, const struct member *t, const struct status_job *j,
    const struct row *w, struct child *v, struct cron_verdict *vd, size_t n)
{
	struct sched_model *m = NULL;
	struct sched_cluster *k;
	struct arena *a = arena_new();
	json_t *pools = NULL;
	struct err e = { 0 };
	char id[160];
	bool ok = false, replace_failed = false;

	if (!loader_model_plan(c, w->env, cfg.snapshot_max_age_s, &m, &pools, &e))
		goto cleanup;
	if ((k = sched_model_find_cluster(m, t->id)) == NULL) {
		err_set(&e, 503, "status.no_snapshot", "the cron's cluster has no fresh capacity "
		    "snapshot");
		goto cleanup;
	}
	for (size_t i = 0; i < n; i++) {
		struct sched_job *rj;

		if (vd[i].action != CRON_STOP)
			continue;
		snprintf(id, sizeof(id), "%s#run:%s", j->id, v[i].c.name);
		rj = sched_model_find_job(m, id);
		if (rj != NULL && (rj->state == SCHED_ADMITTED || rj->state == SCHED_RUNNING)) {
			sched_release(m, rj);
			rj->state = SCHED_FINISHED;
		}
	}
	for (size_t i = 0; i < n; i++) {
		struct sched_placement pl;
		struct sched_alloc *al = NULL;
		struct sched_job *probe;
		enum sched_reason why;
		size_t na = 0;

		if (vd[i].action != CRON_RUN || v[i].c.known || !v[i].suspended)
			continue;
		snprintf(id, sizeof(id), "%s#run:%s", j->id, v[i].c.name);
		probe = loader_add_job(m, id, w->queue_id, w->priority, false, (int64_t)time(NULL),
		    SCHED_PENDING, w->spec, &e);
		if (probe == NULL)
			goto cleanup;
		why = sched_cluster_filter(m, probe, k);
		if (why == SCHED_R_NOT_READY || why == SCHED_R_UNREACHABLE ||
		    why == SCHED_R_STALE) {
			err_set(&e, 503, "status.no_snapshot", "the cron's cluster cannot be placed "
			    "on now (%s)", sched_reason_code(why));
			goto cleanup;	/* the run waits, suspended */
		}
		if (why == SCHED_R_CHOSEN && (why = sched_quota_check(m, probe)) == SCHED_R_CHOSEN)
			why = sched_pack(m, probe, k, a, &al, &na);
		if (why != SCHED_R_CHOSEN) {
			verdict(&vd[i], CRON_SKIP, why == SCHED_R_OVER_QUOTA ||
			    why == SCHED_R_BORROWING_LIMIT ? CRON_WHY_QUOTA : CRON_WHY_CAPACITY);
			v[i].nofit = sched_reason_code(why);
			replace_failed = replace_failed || w->policy == JOBSPEC_CRON_REPLACE;
			continue;
		}
		sched_apply(m, probe, k->idx, al, na);
		memset(&pl, 0, sizeof(pl));
		pl.cluster = k->idx;
		pl.allocs = al;
		pl.n_allocs = na;
		pl.part_shape = sched_slice_part_of(m, probe, k, al, na);	/* issue 26 */
		v[i].place = scheduler_placement_json(m, &pl, pools);
	}
	for (size_t i = 0; i < n && replace_failed; i++)
		if (vd[i].action == CRON_STOP)
			verdict(&vd[i], CRON_RUN, CRON_WHY_NONE);
	ok = true;
cleanup:
	if (!ok)
		log_warn(NULL, "status", "cron: cannot place the runs", "{s:s, s:s}", "job", j->id,
		    "error", e.msg);
	json_decref(pools);
	sched_model_free(m);
	arena_free(a);
	return ok;
}

/* Writes run i's placement into its child (pinned like the cron's jobTemplate, rendered
 * for the run's nodes) and lifts suspend: KubeRay then creates the run's Ray cluster
 * there (network call: no transaction held). */
static bool
start_run(const struct member *t, const struct status_job *j, const struct row *w,
    const struct child *r, struct err *e)
{
	json_t *m, *tmpl, *patch;
	bool ok;

	if ((m = dispatch_render_for(t, j->id, w->env, w->queue, j->attempt, w->spec, r->place,
	    e)) == NULL)
		return false;
	tmpl = json_object_get(json_object_get(m, "spec"), "jobTemplate");
	if (!json_is_object(tmpl)) {
		json_decref(m);
		return err_set(e, 422, "kuberay.bad_input", "no jobTemplate rendered");
	}
	json_object_set_new(tmpl, "suspend", json_false());
	patch = json_pack("{s:O}", "spec", tmpl);
	ok = kube_patch_object(&t->pc, "ray.io/v1", "RayJob", j->ns, r->c.name, patch, e);
	json_decref(patch);
	json_decref(m);
	return ok;
}

struct record {
	const struct status_job	*j;
	const struct row	*w;
	json_t			*runs;		/* the new cron_runs */
	json_t			*events;	/* [{type, message, data}] */
};

static bool
record_tx(struct db *c, void *arg, struct err *e)
{
	static const char sql[] = "UPDATE jobs SET cron_runs = $3::jsonb, updated_at = now()"
	    " WHERE id = $1::uuid AND attempt = $2::int AND state = 'running'"
	    " AND coalesce(cron_runs, '[]'::jsonb) = $4::jsonb RETURNING id";
	struct record *rc = arg;
	char at[16], *runs = json_dumps(rc->runs, JSON_COMPACT);
	const char *p[4] = { rc->j->id, at, runs, rc->w->runs_text };
	PGresult *r = NULL;
	json_t *ev;
	size_t i;
	bool ok = false;

	snprintf(at, sizeof(at), "%d", rc->j->attempt);
	if (!db_exec(c, sql, 4, p, &r, e))
		goto cleanup;
	if (PQntuples(r) == 0) {
		err_set(e, 409, "status.changed", "the job changed meanwhile");
		goto cleanup;
	}
	json_array_foreach(rc->events, i, ev)
		if (!job_event(c, rc->j->id, json_string_value(json_object_get(ev, "type")),
		    json_string_value(json_object_get(ev, "message")), json_object_get(ev, "data"),
		    e))
			goto cleanup;
	ok = db_notify(c, "fleet_sched", rc->w->env, e);
cleanup:
	PQclear(r);
	free(runs);
	return ok;
}

static void
event(json_t *events, const char *type, json_t *data, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static void
event(json_t *events, const char *type, json_t *data, const char *fmt, ...)
{
	char msg[600];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	json_array_append_new(events, json_pack("{s:s, s:s, s:o}", "type", type, "message", msg,
	    "data", data));
}

/* The name of the first counted run other than skip (for the messages), "" when none. */
static const char *
running_name(const struct child *v, const struct cron_verdict *vd, size_t n, size_t skip)
{
	for (size_t i = 0; i < n; i++)
		if (i != skip && vd[i].action == CRON_RUN)
			return v[i].c.name;
	return "";
}

/* New events and runs from the verdicts; the runs keep what was recorded of known ones. */
static void
outcome(const struct row *w, const struct child *v, const struct cron_verdict *vd, size_t n,
    int room, struct record *rc)
{
	char now[32];
	time_t tn = time(NULL);
	struct tm tm;
	const char *pol = jobspec_cron_policy_name(w->policy);
	size_t newest = n;
	json_t *run;
	size_t i;

	strftime(now, sizeof(now), "%Y-%m-%dT%H:%M:%SZ", gmtime_r(&tn, &tm));
	for (i = 0; i < n; i++)
		if (vd[i].action == CRON_RUN)
			newest = i;
	for (i = 0; i < n; i++) {
		const char *name = v[i].c.name;

		switch (vd[i].action) {
		case CRON_RUN:
			if (v[i].c.known) {
				json_array_append(rc->runs, jsonx_find(w->runs, "name", name));
				break;
			}
			json_array_append_new(rc->runs, json_pack("{s:s, s:s, s:s, s:s, s:I, s:O?}",
			    "name", name, "uid", v[i].uid, "scheduled_at", v[i].scheduled,
			    "started_at", now, "started_epoch", (json_int_t)tn, "placement",
			    v[i].place));
			event(rc->events, "cron.run_started", json_pack("{s:s, s:s, s:s}", "run",
			    name, "scheduled_at", v[i].scheduled, "concurrency_policy", pol),
			    "run %s started (scheduled %s); it counts against the queue's quota "
			    "while it runs", name, v[i].scheduled[0] ? v[i].scheduled : "now");
			break;
		case CRON_SKIP:
			if (vd[i].why == CRON_WHY_CAPACITY)
				event(rc->events, "cron.run_skipped", json_pack("{s:s, s:s, s:s, s:s}",
				    "run", name, "reason", "capacity", "concurrency_policy", pol,
				    "why", v[i].nofit ? v[i].nofit : ""), "run %s skipped: the "
				    "cluster has no room for it now (%s); deleted from the cluster",
				    name, v[i].nofit ? v[i].nofit : "no fit");
			else if (vd[i].why == CRON_WHY_QUOTA)
				event(rc->events, "cron.run_skipped", json_pack("{s:s, s:s, s:s, s:i}",
				    "run", name, "reason", "quota", "concurrency_policy", pol, "room",
				    room), "run %s skipped: another run does not fit the queue's quota "
				    "(%d run%s of this job fit%s besides the queue's other jobs); deleted "
				    "from the cluster", name, room, room == 1 ? "" : "s",
				    room == 1 ? "s" : "");
			else if (vd[i].why == CRON_WHY_FORBID)
				event(rc->events, "cron.run_skipped", json_pack("{s:s, s:s, s:s, s:s}",
				    "run", name, "reason", "forbid", "concurrency_policy", pol, "running",
				    running_name(v, vd, n, i)), "run %s skipped: concurrency_policy "
				    "Forbid and run %s is still running; deleted from the cluster", name,
				    running_name(v, vd, n, i));
			else
				event(rc->events, "cron.run_skipped", json_pack("{s:s, s:s, s:s, s:s}",
				    "run", name, "reason", "replaced", "concurrency_policy", pol,
				    "running", newest < n ? v[newest].c.name : ""), "run %s skipped: "
				    "a newer run replaces it (concurrency_policy Replace); deleted from "
				    "the cluster", name);
			break;
		case CRON_STOP:
			event(rc->events, "cron.run_replaced", json_pack("{s:s, s:s, s:s}", "stopped",
			    name, "by", newest < n ? v[newest].c.name : "", "concurrency_policy",
			    pol), "run %s stopped and deleted from the cluster: run %s replaces it "
			    "(concurrency_policy Replace)", name, newest < n ? v[newest].c.name : "");
			break;
		case CRON_DONE:
			event(rc->events, "cron.run_finished", json_pack("{s:s, s:s}", "run", name,
			    "status", v[i].word), "run %s finished (%s); it no longer counts against "
			    "the queue's quota", name, v[i].word);
			break;
		case CRON_IGNORE:
			break;
		}
	}
	/* counted runs no longer on the member */
	json_array_foreach(w->runs, i, run) {
		const char *name = json_string_value(json_object_get(run, "name"));
		bool seen = false;

		for (size_t k = 0; k < n && name != NULL; k++)
			seen = seen || strcmp(v[k].c.name, name) == 0;
		if (name != NULL && !seen)
			event(rc->events, "cron.run_finished", json_pack("{s:s, s:s}", "run", name,
			    "status", "gone"), "run %s is gone from the cluster; it no longer counts "
			    "against the queue's quota", name);
	}
}

/* Children of j on the member (oldest first) into v; returns how many. */
static size_t
children_of(const struct status_job *j, json_t *cron, json_t *items, json_t *runs,
    struct child *v)
{
	const char *uid = meta(cron, "uid");
	json_t *it;
	size_t i, n = 0;

	json_array_foreach(items, i, it) {
		struct status_obs obs;
		struct child *c;

		if (n == MAX_CHILDREN || !owned(it, j->object, uid) || meta(it, "name")[0] == '\0')
			continue;
		c = &v[n++];
		memset(c, 0, sizeof(*c));
		snprintf(c->c.name, sizeof(c->c.name), "%s", meta(it, "name"));
		snprintf(c->uid, sizeof(c->uid), "%s", meta(it, "uid"));
		snprintf(c->created, sizeof(c->created), "%s", meta(it, "creationTimestamp"));
		snprintf(c->scheduled, sizeof(c->scheduled), "%s",
		    meta_map(it, "annotations", CRON_SCHEDULED));
		status_map("RayJob", it, &obs);
		snprintf(c->word, sizeof(c->word), "%s", obs.word);
		c->c.known = jsonx_find(runs, "name", c->c.name) != NULL;
		c->suspended = json_is_true(json_object_get(json_object_get(it, "spec"), "suspend"));
		c->c.active = obs.phase != STATUS_SUCCEEDED && obs.phase != STATUS_FAILED &&
		    meta(it, "deletionTimestamp")[0] == '\0';
	}
	qsort(v, n, sizeof(*v), child_cmp);
	return n;
}

/* Any run of the cron on the member (finished ones too: they may expire). */
static bool
any_child(const struct status_job *j, json_t *cron, json_t *items)
{
	json_t *it;
	size_t i;

	json_array_foreach(items, i, it)
		if (owned(it, j->object, meta(cron, "uid")))
			return true;
	return false;
}

/* Deletes the cron's finished runs past their TTL (no event: the run's end was one). */
static void
expire(const struct member *t, const struct status_job *j, json_t *cron,
    json_t *items, struct status_stats *st)
{
	long long now = (long long)time(NULL);
	json_t *it;
	size_t i;

	json_array_foreach(items, i, it) {
		struct err e = { 0 };
		bool existed = false;

		if (!owned(it, j->object, meta(cron, "uid")) || !cron_expired(it, now) ||
		    meta(it, "deletionTimestamp")[0] != '\0')
			continue;
		if (!kube_delete_object(&t->pc, "ray.io/v1", "RayJob", j->ns, meta(it, "name"),
		    &existed, &e)) {
			status_unreadable(j, t->name, &e);
			return;
		}
		st->deleted += existed;
	}
}

void
cron_sync(const struct member *t, const struct status_job *j, json_t *cron,
	  json_t *children, struct status_stats *st)
{
	struct child *v = calloc(MAX_CHILDREN, sizeof(*v));
	struct cron_child cc[MAX_CHILDREN];
	struct cron_verdict vd[MAX_CHILDREN];
	struct row w = { 0 };
	struct record rc = { .j = j, .w = &w };
	struct err e = { 0 };
	struct db *c = NULL;
	size_t n, known_seen = 0;
	bool fresh = false, changed = false;
	int room = 0;

	if (v == NULL)
		abort();
	if (j->cron_runs == 0 && !any_child(j, cron, children))
		goto cleanup;	/* between runs: nothing to read or write */
	if ((c = db_acquire(5000, &e)) == NULL || !row_load(c, j, &w, &e))
		goto cleanup;
	n = children_of(j, cron, children, w.runs, v);
	expire(t, j, cron, children, st);
	for (size_t i = 0; i < n; i++) {
		cc[i] = v[i].c;
		fresh = fresh || (v[i].c.active && !v[i].c.known);
		changed = changed || (v[i].c.known && !v[i].c.active);
		known_seen += v[i].c.known;
	}
	if (!fresh && !changed && known_seen == json_array_size(w.runs))
		goto cleanup;	/* nothing new: the usual cycle */
	if (fresh && (room = room_of(c, j, &w)) < 0)
		goto cleanup;
	cron_decide(w.policy, cc, n, room, vd);
	if (fresh && !place_runs(c, t, j, &w, v, vd, n))
		goto cleanup;	/* again next cycle */
	db_release(c);	/* no connection held across the member's calls */
	c = NULL;
	for (size_t i = 0; i < n; i++) {
		bool existed = false;

		if (vd[i].action != CRON_SKIP && vd[i].action != CRON_STOP)
			continue;
		if (!kube_delete_object(&t->pc, "ray.io/v1", "RayJob", j->ns, v[i].c.name,
		    &existed, &e)) {
			status_unreadable(j, t->name, &e);
			goto cleanup;	/* again next cycle */
		}
		st->deleted += existed;
	}
	for (size_t i = 0; i < n; i++) {
		if (v[i].place == NULL)
			continue;
		if (!start_run(t, j, &w, &v[i], &e)) {
			/* still suspended (or gone): not counted, placed again next cycle */
			status_unreadable(j, t->name, &e);
			err_clear(&e);
			verdict(&vd[i], CRON_IGNORE, CRON_WHY_NONE);
		}
	}
	rc.runs = json_array();
	rc.events = json_array();
	outcome(&w, v, vd, n, room, &rc);
	if (!db_tx(record_tx, &rc, &e)) {
		if (e.status != 409)
			log_warn(NULL, "status", "cron: cannot record the runs", "{s:s, s:s}", "job",
			    j->id, "error", e.msg);
	} else {
		st->events += json_array_size(rc.events);
	}
cleanup:
	db_release(c);
	json_decref(rc.runs);
	json_decref(rc.events);
	json_decref(w.spec);
	json_decref(w.runs);
	free(w.runs_text);
	for (size_t i = 0; i < MAX_CHILDREN; i++)
		json_decref(v[i].place);
	free(v);
}
