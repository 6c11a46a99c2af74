/* status: the status worker — loads the followed jobs that changed (watch events,
 * fleet_status notifications) plus a spread slice of the rest each second, reads what
 * their clusters show (from the watch caches, or lists: Ray objects, pods and Warning
 * events per namespace, in parallel, one thread per cluster at most) and acts on each job
 * (status_act.c). */
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/select.h>
#include <time.h>

#include "core/config.h"
#include "core/jsonx.h"
#include "core/listen.h"
#include "core/log.h"
#include "core/mono.h"
#include "core/textbuf.h"
#include "core/worker_thread.h"
#include "queue/follow/cron.h"
#include "queue/follow/status_int.h"
#include "queue/sched/scheduler.h"
#include "regions/lease.h"

#define CYCLE_MS	1000
#define SEL_MANAGED	STATUS_SEL_MANAGED
#define WATCH_CYCLE_MS	50	/* with watches: how soon a change is acted on */
/* A full check also renews the cluster's watches (status_watch_want): the period stays
 * below status_watch.c's IDLE_DROP_S (30 s), after which unwanted watches close. */
#define FULL_PERIOD_MAX_S	20

/* The jobs the worker follows (the predicate of migration 0021's index jobs_followed). */
#define FOLLOWED(t) \
    "(" t "state IN ('dispatched', 'running', 'preempted') OR (" t "state IN " \
    JOB_STATES_FINAL_SQL " AND " t "object_uid IS NOT NULL))"

/* The jobs to look at this turn, among those of the held clusters ($1): the ones that
 * changed ($2: job ids from watch events and fleet_status notifications), every followed
 * job of the clusters looked at in full ($3), and with $4 the preempted ones (their
 * checkpoint deadline is a timer). */
static const char sql_jobs[] =
    "WITH pick AS (SELECT id FROM jobs WHERE id = ANY($2::uuid[])"
    " UNION SELECT id FROM jobs WHERE cluster_id = ANY($3::uuid[]) AND " FOLLOWED("")
    " UNION SELECT id FROM jobs WHERE $4::boolean AND cluster_id = ANY($1::uuid[])"
    "  AND state = 'preempted')"
    " SELECT j.id, j.state, j.kind, j.attempt, j.cluster_id, j.manifest::text,"
    " j.cancel_requested, coalesce(j.checkpoint_deadline <= now(), false),"
    " coalesce(to_char(j.checkpoint_deadline AT TIME ZONE 'UTC',"
    "  'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"'), ''),"
    " coalesce(j.finished_at + make_interval(secs => coalesce((j.manifest->'spec'->>"
    "  'ttlSecondsAfterFinished')::int, 0)) <= now(), false),"
    " coalesce(extract(epoch from now() - (SELECT min(v.at) FROM job_events v WHERE"
    "  v.job_id = j.id AND v.attempt = j.attempt AND v.type = 'cluster_event' AND"
    "  v.data->>'reason' = 'FailedScheduling')), -1),"
    " EXISTS (SELECT 1 FROM job_events v WHERE v.job_id = j.id AND v.attempt = j.attempt"
    "  AND v.type = 'cluster_event' AND v.data->>'reason' IN ('FailedScaleUp',"
    "  'NotTriggerScaleUp')),"
    " k.stockout_timeout_s, coalesce(j.placement->>'flavor', 'cpu'),"
    " coalesce(j.reason LIKE 'spot%', false), j.spec->'checkpoint'->>'grace_seconds',"
    " coalesce(jsonb_array_length(j.cron_runs), 0), j.infra_retries,"
    " coalesce((j.spec->>'max_infra_retries')::int, q.max_infra_retries),"
    " j.manifest->'metadata'->>'name', j.manifest->'metadata'->>'namespace'"
    " FROM pick JOIN jobs j ON j.id = pick.id"
    " JOIN clusters k ON k.id = j.cluster_id JOIN queues q ON q.id = j.queue_id"
    " WHERE j.cluster_id = ANY($1::uuid[]) AND " FOLLOWED("j.")
    " ORDER BY j.cluster_id, j.id";

/* Set by status_stop: a sync in hand finishes the job it is acting on and leaves the rest
 * of its batch (the next holder of the cluster's lease looks at those jobs; nothing is
 * acted on half), so that a stop is not held by a queue of member calls timing out. */
static atomic_bool quitting;

/* The jobs of one cluster for one cycle. */
struct batch {
	char			 cluster_id[40];
	struct status_job	*v;
	size_t			 n, cap;
	struct status_stats	 st;
};

static void
batch_free(void *arg)
{
	struct batch *b = arg;

	if (b == NULL)
		return;
	for (size_t i = 0; i < b->n; i++) {
		json_decref(b->v[i].manifest);
		free(b->v[i].manifest_text);
	}
	free(b->v);
	free(b);
}

static void
job_row(PGresult *r, int i, struct status_job *j)
{
	const char *name = PQgetisnull(r, i, 19) ? NULL : PQgetvalue(r, i, 19),
	    *ns = PQgetisnull(r, i, 20) ? NULL : PQgetvalue(r, i, 20);

	memset(j, 0, sizeof(*j));
	snprintf(j->id, sizeof(j->id), "%s", PQgetvalue(r, i, 0));
	j->state = job_state_parse(PQgetvalue(r, i, 1));
	snprintf(j->kind, sizeof(j->kind), "%s", PQgetvalue(r, i, 2));
	j->attempt = atoi(PQgetvalue(r, i, 3));
	/* parsed by the sync, on the pool's threads: not here, on the one thread that loads
	 * for every cluster (its parse was 40 % of the status worker at 100 clusters) */
	if (!PQgetisnull(r, i, 5) && name != NULL && ns != NULL &&
	    (j->manifest_text = strdup(PQgetvalue(r, i, 5))) == NULL)
		abort();
	snprintf(j->object, sizeof(j->object), "%s", name ? name : "");
	snprintf(j->ns, sizeof(j->ns), "%s", ns ? ns : "");
	j->cancel = PQgetvalue(r, i, 6)[0] == 't';
	j->deadline_passed = PQgetvalue(r, i, 7)[0] == 't';
	snprintf(j->deadline, sizeof(j->deadline), "%s", PQgetvalue(r, i, 8));
	j->ttl_due = PQgetvalue(r, i, 9)[0] == 't';
	j->pending_for = atof(PQgetvalue(r, i, 10));
	j->scale_failed = PQgetvalue(r, i, 11)[0] == 't';
	j->stockout_timeout_s = atoi(PQgetvalue(r, i, 12));
	snprintf(j->flavor, sizeof(j->flavor), "%s", PQgetvalue(r, i, 13));
	j->spot_loss = PQgetvalue(r, i, 14)[0] == 't';
	j->grace_s = PQgetisnull(r, i, 15) ? SCHED_GRACE_S : atoi(PQgetvalue(r, i, 15));
	j->cron_runs = atoi(PQgetvalue(r, i, 16));
	j->infra_retries = atoi(PQgetvalue(r, i, 17));
	j->max_infra_retries = atoi(PQgetvalue(r, i, 18));
}

static struct {
	atomic_ulong	cycles, transitions, events, deleted, errors, loads, loaded;
} M;

/* The chosen followed jobs (sql_jobs) grouped by cluster: *out is a new array of struct
 * batch *.  held, ids and clusters are uuid[] literals. */
static bool
load(const char *held, const char *ids, const char *clusters, bool preempted,
    struct batch ***out, size_t *n, struct err *e)
{
	const char *p[4] = { held, ids, clusters, preempted ? "true" : "false" };
	struct db *c = NULL;
	struct batch *b = NULL;
	PGresult *r = NULL;
	bool ok;

	*out = NULL;
	*n = 0;
	if (strcmp(held, "{}") == 0 || (strcmp(ids, "{}") == 0 && strcmp(clusters, "{}") == 0 &&
	    !preempted))
		return true;
	if ((c = db_acquire(5000, e)) == NULL)
		return false;
	ok = db_exec(c, sql_jobs, 4, p, &r, e);
	db_release(c);
	if (!ok)
		return false;
	atomic_fetch_add(&M.loads, 1);
	atomic_fetch_add(&M.loaded, (unsigned long)PQntuples(r));
	*out = calloc((size_t)PQntuples(r) + 1, sizeof(**out));
	if (*out == NULL)
		abort();
	for (int i = 0; i < PQntuples(r); i++) {
		if (b == NULL || strcmp(b->cluster_id, PQgetvalue(r, i, 4)) != 0) {
			if ((b = calloc(1, sizeof(*b))) == NULL)
				abort();
			snprintf(b->cluster_id, sizeof(b->cluster_id), "%s", PQgetvalue(r, i, 4));
			(*out)[(*n)++] = b;
		}
		if (b->n == b->cap) {
			b->cap = b->cap ? b->cap * 2 : 8;
			if ((b->v = realloc(b->v, b->cap * sizeof(*b->v))) == NULL)
				abort();
		}
		job_row(r, i, &b->v[b->n++]);
	}
	PQclear(r);
	return true;
}

/* ---- reading one namespace */

struct nsview {
	json_t	*objects;	/* "Kind/name" -> live object */
	json_t	*children;	/* RayJobs of RayCronJobs (queue/follow/cron.c), NULL when unread */
	json_t	*pods;		/* pod name -> {job, attempt, node} */
	json_t	*pod_objs;	/* pod name -> the Pod as listed */
	json_t	*events;	/* Warning events about pods */
	json_t	*nodes;		/* node name -> Node (borrowed from the cluster's), NULL unread */
};

static const char *
plural(const char *kind)
{
	return strcmp(kind, "RayJob") == 0 ? "rayjobs" : strcmp(kind, "RayCluster") == 0 ?
	    "rayclusters" : strcmp(kind, "RayService") == 0 ? "rayservices" : "raycronjobs";
}

static bool
read_objects(const struct member *t, const char *ns, const char *kind,
    struct nsview *v, struct err *e)
{
	char path[256], key[160];
	json_t *items, *it;
	size_t i;

	snprintf(path, sizeof(path), "/apis/ray.io/v1/namespaces/%s/%s", ns, plural(kind));
	status_watch_want(t->id, kind);
	if ((items = status_watch_list(t->id, kind, ns)) == NULL) {
		status_watch_count_list();
		if (!member_list(&t->pc, path, SEL_MANAGED, &items, e))
			return false;
	}
	json_array_foreach(items, i, it) {
		const char *name = jsonx_meta_str(it, "name");

		if (name == NULL)
			continue;
		snprintf(key, sizeof(key), "%s/%s", kind, name);
		json_object_set(v->objects, key, it);
	}
	json_decref(items);
	return true;
}

static bool
read_pods(const struct member *t, const char *ns, struct nsview *v, struct err *e)
{
	char path[256];
	json_t *items, *it;
	size_t i;

	snprintf(path, sizeof(path), "/api/v1/namespaces/%s/pods", ns);
	status_watch_want(t->id, "Pod");
	status_watch_want(t->id, "Event");
	if ((items = status_watch_list(t->id, "Pod", ns)) == NULL) {
		status_watch_count_list();
		if (!member_list(&t->pc, path, SEL_MANAGED, &items, e))
			return false;
	}
	json_array_foreach(items, i, it) {
		json_t *md = json_object_get(it, "metadata"), *lb = json_object_get(md, "labels");
		const char *name = json_string_value(json_object_get(md, "name")),
		    *job = json_string_value(json_object_get(lb, "fleet.io/job-id")),
		    *at = json_string_value(json_object_get(lb, "fleet.io/attempt")),
		    *node = json_string_value(json_object_get(json_object_get(it, "spec"),
		    "nodeName"));

		if (name != NULL && job != NULL && at != NULL) {
			json_object_set_new(v->pods, name, json_pack("{s:s, s:i, s:b}", "job", job,
			    "attempt", atoi(at), "scheduled", node != NULL && node[0] != '\0'));
			json_object_set(v->pod_objs, name, it);
		}
	}
	json_decref(items);
	snprintf(path, sizeof(path), "/api/v1/namespaces/%s/events", ns);
	if ((v->events = status_watch_list(t->id, "Event", ns)) != NULL)
		return true;
	status_watch_count_list();
	return member_list(&t->pc, path, "fieldSelector=type%3DWarning", &v->events, e);
}

/* The cluster's nodes (name -> Node) without their watch (watches off, refused, not in
 * sync yet): listed at most once per NODES_TTL_S per cluster and shared by the cycles
 * meanwhile.  A new reference, NULL when the cluster's nodes cannot be read (then nothing
 * is said about them). */
#define NODES_TTL_S	2.0

static struct {
	pthread_mutex_t	 mu;
	json_t		*by_cluster;	/* id -> {at, nodes} */
} N = { .mu = PTHREAD_MUTEX_INITIALIZER };

static json_t *
nodes_of(const struct member *t, bool fresh)
{
	json_t *c, *items = NULL, *out = NULL;
	struct err e = { 0 };
	double now = mono_s();

	pthread_mutex_lock(&N.mu);
	if (N.by_cluster == NULL)
		N.by_cluster = json_object();
	c = json_object_get(N.by_cluster, t->id);
	if (c != NULL && !fresh && now - json_real_value(json_object_get(c, "at")) < NODES_TTL_S)
		out = json_incref(json_object_get(c, "nodes"));
	pthread_mutex_unlock(&N.mu);
	if (out != NULL)
		return out;
	status_watch_count_list();
	if (!member_list(&t->pc, "/api/v1/nodes", NULL, &items, &e))
		return NULL;
	out = status_nodes_by_name(items);
	pthread_mutex_lock(&N.mu);
	json_object_set_new(N.by_cluster, t->id, json_pack("{s:f, s:O}", "at", now, "nodes",
	    out));
	pthread_mutex_unlock(&N.mu);
	return out;
}

/* The cluster's nodes for a namespace sync (a new reference, NULL unread): taints,
 * conditions and labels are where providers say a node is lost or reclaimed
 * (queue/follow/status_class.c, repair.c).  From the node watch when it is in sync (a
 * taint, a condition or a deletion arrives by it and has the cluster's jobs looked at:
 * no list per sync), else listed; then a reclaim notice among events has the node's
 * taint read now, not from the last list. */
static json_t *
read_nodes(const struct member *t, json_t *events)
{
	json_t *out, *ev;
	size_t i;
	bool notice = false;

	status_watch_want(t->id, "Node");
	if ((out = status_watch_nodes(t->id)) != NULL)
		return out;
	json_array_foreach(events, i, ev)
		notice = notice || status_event_spot(json_string_value(json_object_get(ev,
		    "reason")), json_string_value(json_object_get(ev, "message")));
	return nodes_of(t, notice);
}

/* What the namespace view says about job j. */
static void
seen_of(const struct nsview *v, const struct status_job *j, struct status_seen *s)
{
	const char *name;
	json_t *p, *ev;
	char key[160];
	size_t i;

	memset(s, 0, sizeof(*s));
	snprintf(key, sizeof(key), "%s/%s", j->kind, j->object);
	s->live = json_object_get(v->objects, key);
	s->events = json_array();
	s->pods = json_array();
	s->nodes = v->nodes;
	json_object_foreach(v->pods, name, p) {
		if (strcmp(json_string_value(json_object_get(p, "job")), j->id) != 0 ||
		    json_integer_value(json_object_get(p, "attempt")) != j->attempt)
			continue;
		json_array_append(s->pods, json_object_get(v->pod_objs, name));
		if (!json_is_true(json_object_get(p, "scheduled")))
			s->unscheduled++;
	}
	json_array_foreach(v->events, i, ev) {
		json_t *io = json_object_get(ev, "involvedObject");
		const char *pod = json_string_value(json_object_get(io, "name"));

		p = pod ? json_object_get(v->pods, pod) : NULL;
		if (p == NULL || strcmp(json_string_value(json_object_get(p, "job")), j->id) != 0 ||
		    json_integer_value(json_object_get(p, "attempt")) != j->attempt)
			continue;
		json_array_append(s->events, ev);
		if (status_no_room(json_string_value(json_object_get(ev, "reason"))))
			s->no_room = json_string_value(json_object_get(ev, "reason"));
		s->spot = s->spot || status_event_spot(json_string_value(json_object_get(ev,
		    "reason")), json_string_value(json_object_get(ev, "message")));
	}
}

static bool
active(const struct status_job *j)
{
	return j->state == JOB_DISPATCHED || j->state == JOB_RUNNING;
}

/* Reads namespace ns of the batch (only what its jobs need) and acts on its jobs. */
static void
sync_ns(const struct member *t, struct batch *b, const char *ns)
{
	struct nsview v = { json_object(), NULL, json_object(), json_object(), NULL, NULL };
	const char *kinds[4] = { NULL };
	struct err e = { 0 };
	bool need = false, ok = true, crons = false;
	int nk = 0;

	for (size_t i = 0; i < b->n; i++) {
		struct status_job *j = &b->v[i];
		int k;

		if (strcmp(j->ns, ns) != 0 || !active(j) || j->cancel)
			continue;
		need = true;
		crons = crons || strcmp(j->kind, "RayCronJob") == 0;
		for (k = 0; k < nk && strcmp(kinds[k], j->kind) != 0; k++)
			;
		if (k == nk && nk < 4)
			kinds[nk++] = j->kind;
	}
	for (int k = 0; k < nk && ok; k++)
		ok = read_objects(t, ns, kinds[k], &v, &e);
	if (ok && need)
		ok = read_pods(t, ns, &v, &e);
	if (ok && need)
		v.nodes = read_nodes(t, v.events);
	if (ok && crons) {
		char path[256];

		/* a cron's runs carry KubeRay's label only (the CRD's jobTemplate has no
		 * metadata), so the managed-by watches do not see them: listed here */
		snprintf(path, sizeof(path), "/apis/ray.io/v1/namespaces/%s/rayjobs", ns);
		status_watch_count_list();
		ok = member_list(&t->pc, path, "labelSelector=ray.io%2Fcronjob-name",
		    &v.children, &e);
	}
	if (v.events == NULL)
		v.events = json_array();
	for (size_t i = 0; i < b->n; i++) {
		struct status_job *j = &b->v[i];
		struct status_seen s;

		if (strcmp(j->ns, ns) != 0)
			continue;
		if (atomic_load(&quitting))
			break;
		if (!ok && active(j) && !j->cancel) {
			status_unreadable(j, t->name, &e);
			continue;
		}
		seen_of(&v, j, &s);
		status_act(t, j, &s, &b->st);
		if (strcmp(j->kind, "RayCronJob") == 0 && j->state == JOB_RUNNING &&
		    !j->cancel && s.live != NULL && v.children != NULL)
			cron_sync(t, j, s.live, v.children, &b->st);
		json_decref(s.events);
		json_decref(s.pods);
	}
	b->st.errors += !ok;
	json_decref(v.pod_objs);
	json_decref(v.nodes);
	json_decref(v.objects);
	json_decref(v.children);
	json_decref(v.pods);
	json_decref(v.events);
}

/* Members reused by the syncs of their cluster for MEMBER_TTL_S: loading one is two
 * statements and a decryption, and a sync comes with every change.  A sync takes its
 * cluster's member out (no two syncs share one) and puts it back unless the sync failed:
 * a rotated token or a moved API server is read again at the next. */
#define MEMBER_TTL_S	60.0
#define MEMBER_CACHE	4096

struct cached {
	struct member	*t;
	double		 at;	/* loaded */
};

static struct {
	pthread_mutex_t	 mu;
	struct cached	*v;
	size_t		 n, cap;
} MC = { .mu = PTHREAD_MUTEX_INITIALIZER };

static bool
member_take(const char *id, struct cached *out, struct err *e)
{
	double now = mono_s();
	struct db *c;
	bool ok;

	out->t = NULL;
	pthread_mutex_lock(&MC.mu);
	for (size_t i = 0; i < MC.n; i++)
		if (strcmp(MC.v[i].t->id, id) == 0) {
			if (now - MC.v[i].at < MEMBER_TTL_S)
				*out = MC.v[i];
			else
				member_free(MC.v[i].t);
			MC.v[i] = MC.v[--MC.n];
			break;
		}
	pthread_mutex_unlock(&MC.mu);
	if (out->t != NULL)
		return true;
	if ((c = db_acquire(5000, e)) == NULL)
		return false;
	ok = member_load(c, id, &out->t, e);
	db_release(c);
	out->at = now;
	return ok;
}

static void
member_put(struct cached *m, bool keep)
{
	pthread_mutex_lock(&MC.mu);
	if (keep && MC.n < MEMBER_CACHE) {
		if (MC.n == MC.cap) {
			MC.cap = MC.cap ? MC.cap * 2 : 64;
			if ((MC.v = realloc(MC.v, MC.cap * sizeof(*MC.v))) == NULL)
				abort();
		}
		MC.v[MC.n++] = *m;
		m->t = NULL;
	}
	pthread_mutex_unlock(&MC.mu);
	member_free(m->t);
}

static void
members_clear(void)
{
	pthread_mutex_lock(&MC.mu);
	for (size_t i = 0; i < MC.n; i++)
		member_free(MC.v[i].t);
	free(MC.v);
	MC.v = NULL;
	MC.n = MC.cap = 0;
	pthread_mutex_unlock(&MC.mu);
}

static void
sync_cluster(void *arg)
{
	struct batch *b = arg;
	struct cached m = { 0 };
	struct err e = { 0 };
	json_t *done = json_object();

	for (size_t i = 0; i < b->n; i++) {
		struct status_job *j = &b->v[i];

		if (j->manifest_text != NULL)
			j->manifest = json_loads(j->manifest_text, 0, NULL);
		free(j->manifest_text);
		j->manifest_text = NULL;
	}
	if (!member_take(b->cluster_id, &m, &e)) {
		for (size_t i = 0; i < b->n; i++)
			status_unreadable(&b->v[i], b->cluster_id, &e);
		b->st.errors++;
		goto cleanup;
	}
	for (size_t i = 0; i < b->n; i++) {
		const char *ns = b->v[i].ns;

		if (json_object_get(done, ns) != NULL)
			continue;
		if (atomic_load(&quitting))
			break;
		json_object_set_new(done, ns, json_true());
		sync_ns(m.t, b, ns);
	}
cleanup:
	atomic_fetch_add(&M.transitions, b->st.transitions);
	atomic_fetch_add(&M.events, b->st.events);
	atomic_fetch_add(&M.deleted, b->st.deleted);
	atomic_fetch_add(&M.errors, b->st.errors);
	json_decref(done);
	member_put(&m, b->st.errors == 0);
}

static void
sync_task(void *arg)
{
	sync_cluster(arg);
	batch_free(arg);
}

/* ---- what to look at: sets of ids (id -> true) and their uuid[] literals */

static bool
is_uuid(const char *s)
{
	size_t i;

	for (i = 0; s[i] != '\0'; i++)
		if (i == 8 || i == 13 || i == 18 || i == 23 ? s[i] != '-' :
		    !((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f') ||
		    (s[i] >= 'A' && s[i] <= 'F')))
			return false;
	return i == 36;
}

/* "{id,id}" of the set's keys that are uuids (a stray notification payload is not). */
static char *
literal(json_t *set)
{
	size_t len = 0, cap = 64;
	char *buf = malloc(cap);
	const char *k;
	json_t *v;

	if (buf == NULL)
		abort();
	buf[0] = '\0';
	textbuf_appendf(&buf, &len, &cap, "{");
	json_object_foreach(set, k, v)
		if (is_uuid(k))
			textbuf_appendf(&buf, &len, &cap, "%s%s", len > 1 ? "," : "", k);
	textbuf_appendf(&buf, &len, &cap, "}");
	return buf;
}

/* The held clusters as a set, and as lease_ids' literal in *lit (malloc'd). */
static json_t *
held_set(char **lit)
{
	json_t *set = json_object();
	char *ids = lease_ids(), *p = ids + 1, *q;

	*lit = ids;
	while (*p != '\0' && *p != '}') {
		char id[40];

		q = p + strcspn(p, ",}");
		snprintf(id, sizeof(id), "%.*s", (int)(q - p), p);
		json_object_set_new(set, id, json_true());
		p = *q == ',' ? q + 1 : q;
	}
	return set;
}

/* The second of the full-check period in which the cluster's jobs are checked in full. */
static unsigned long
slot_of(const char *id, unsigned long period)
{
	uint32_t h = 2166136261u;

	for (; *id != '\0'; id++)
		h = (h ^ (unsigned char)*id) * 16777619u;
	return h % period;
}

static void
add_sync(struct status_stats *st, const struct batch *b)
{
	st->clusters++;
	st->jobs += b->n;
	st->transitions += b->st.transitions;
	st->events += b->st.events;
	st->deleted += b->st.deleted;
	st->errors += b->st.errors;
}

bool
status_cycle(struct status_stats *st, struct err *e)
{
	struct batch **v;
	char *held;
	json_t *all = held_set(&held);
	char *clusters = literal(all);
	size_t n;
	bool ok;

	memset(st, 0, sizeof(*st));
	ok = load(held, "{}", clusters, true, &v, &n, e);
	free(held);
	free(clusters);
	json_decref(all);
	if (!ok)
		return false;
	for (size_t i = 0; i < n; i++) {
		sync_cluster(v[i]);
		add_sync(st, v[i]);
		batch_free(v[i]);
	}
	free(v);
	atomic_fetch_add(&M.cycles, 1);
	return true;
}

/* ---- the loop: a cluster still busy from an earlier turn is skipped, never waited on;
 * what it was to look at is carried to the next turn */

static struct {
	struct worker_thread	 th;
	struct dispatch_pool	*pool;
	json_t			*known;		/* held clusters at the last turn */
	unsigned long		 tick;
} S;

/* Once a second: the clusters looked at in full this turn — all of them without watches
 * (polling); with watches, the ones just taken (a start, a takeover), the ones polled
 * because they refuse watches or a watch is out of sync, and the slice of the full-check
 * period whose second this is (each job once per status-full-period). */
static void
plan_turn(json_t *held, json_t *clusters)
{
	unsigned long period = cfg.status_full_period_s < 1 ? 1 :
	    cfg.status_full_period_s > FULL_PERIOD_MAX_S ? FULL_PERIOD_MAX_S :
	    (unsigned long)cfg.status_full_period_s;
	const char *id;
	json_t *v;

	S.tick++;
	json_object_foreach(held, id, v)
		if (!status_watch_on() || json_object_get(S.known, id) == NULL ||
		    status_watch_polled(id) || slot_of(id, period) == S.tick % period)
			json_object_set_new(clusters, id, json_true());
	json_decref(S.known);
	S.known = json_incref(held);
}

/* Loads what jobs and clusters name (and the preempted jobs on a turn), hands each
 * cluster's batch to the pool; jobs and clusters are emptied but for what a busy cluster
 * carries to the next turn. */
static void
run(const char *held, json_t *jobs, json_t *clusters, bool turn)
{
	char *ids = literal(jobs), *cl = literal(clusters);
	json_t *whole = json_copy(clusters), *changed = json_copy(jobs);
	struct batch **v = NULL;
	struct err e = { 0 };
	size_t n = 0;

	json_object_clear(jobs);
	json_object_clear(clusters);
	if (!load(held, ids, cl, turn, &v, &n, &e)) {
		log_warn(NULL, "status", "cannot load followed jobs", "{s:s}", "error", e.msg);
		json_object_update(clusters, whole);	/* tried again next turn */
		json_object_update(jobs, changed);
	}
	for (size_t i = 0; i < n; i++) {
		if (!dispatch_pool_busy(S.pool, v[i]->cluster_id)) {
			dispatch_pool_add(S.pool, v[i]->cluster_id, sync_task, batch_free, v[i]);
			continue;
		}
		if (json_object_get(whole, v[i]->cluster_id) != NULL)
			json_object_set_new(clusters, v[i]->cluster_id, json_true());
		for (size_t k = 0; k < v[i]->n; k++)
			json_object_set_new(jobs, v[i]->v[k].id, json_true());
		batch_free(v[i]);
	}
	free(v);
	free(ids);
	free(cl);
	json_decref(whole);
	json_decref(changed);
}

/* Waits ms whole, gathering the ids notified meanwhile: at most one load per wait. */
static void
gather(PGconn *c, int ms, json_t *jobs)
{
	double until = mono_s() + ms / 1000.0, left;

	while ((left = until - mono_s()) > 0 && worker_thread_running(&S.th))
		listen_wait_payloads(c, (int)(left * 1000) + 1, jobs);
}

/* Each wait of WATCH_CYCLE_MS (CYCLE_MS without watches) gathers the jobs that changed:
 * fleet_status notifications carry their ids (migration 0021), watch events name theirs
 * (status_watch.c).  Only those are loaded and synced, from the watch caches (no member
 * call).  Once a CYCLE_MS a turn adds the preempted jobs (checkpoint deadlines) and the
 * clusters plan_turn picks.  No turn loads every followed job: the work follows change,
 * plus each job once per status-full-period. */
static void *
loop(void *arg)
{
	PGconn *c = NULL;
	json_t *jobs = json_object(), *clusters = json_object();
	double last_turn = 0;

	(void)arg;
	while (worker_thread_running(&S.th)) {
		json_t *held;
		char *lit;
		bool turn;

		if (c == NULL || PQstatus(c) != CONNECTION_OK) {
			if (c != NULL)
				PQfinish(c);
			if ((c = listen_open(cfg.database_url, "fleet_status")) == NULL) {
				struct timespec ts = { 1, 0 };

				nanosleep(&ts, NULL);
				continue;
			}
		}
		gather(c, status_watch_on() ? WATCH_CYCLE_MS : CYCLE_MS, jobs);
		status_watch_take_changes(jobs, clusters);
		turn = mono_s() - last_turn >= CYCLE_MS / 1000.0;
		if (!turn && json_object_size(jobs) == 0 && json_object_size(clusters) == 0)
			continue;
		held = held_set(&lit);
		if (turn) {
			last_turn = mono_s();
			plan_turn(held, clusters);
		}
		run(lit, jobs, clusters, turn);
		free(lit);
		json_decref(held);
		atomic_fetch_add(&M.cycles, 1);
	}
	if (c != NULL)
		PQfinish(c);
	json_decref(jobs);
	json_decref(clusters);
	return NULL;
}

bool
status_start(struct err *e)
{
	atomic_store(&quitting, false);
	if (!lease_start(e))
		return false;
	S.pool = dispatch_pool_new(cfg.dispatch_concurrency > 0 ? cfg.dispatch_concurrency : 16);
	if (!status_watch_start(e)) {
		dispatch_pool_free(S.pool);
		S.pool = NULL;
		lease_stop();
		return false;
	}
	if (!worker_thread_start(&S.th, loop, "status.start", "cannot start the status thread",
	    e)) {
		status_watch_stop();
		dispatch_pool_free(S.pool);
		S.pool = NULL;
		lease_stop();
		return false;
	}
	return true;
}

void
status_stop(void)
{
	pthread_mutex_lock(&N.mu);
	json_decref(N.by_cluster);
	N.by_cluster = NULL;
	pthread_mutex_unlock(&N.mu);
	if (!S.th.started) {
		members_clear();
		return;
	}
	atomic_store(&quitting, true);
	worker_thread_stop(&S.th);
	dispatch_pool_free(S.pool);
	status_watch_stop();
	S.pool = NULL;
	json_decref(S.known);
	S.known = NULL;
	members_clear();	/* after the pool: no sync puts one back now */
	lease_stop();
}

void
status_metrics(char **buf, size_t *len, size_t *cap)
{
	textbuf_appendf(buf, len, cap,
	    "# HELP fleetd_status_cycles_total Status sync cycles on this replica.\n"
	    "# TYPE fleetd_status_cycles_total counter\nfleetd_status_cycles_total %lu\n"
	    "# HELP fleetd_status_transitions_total Job state changes from cluster status.\n"
	    "# TYPE fleetd_status_transitions_total counter\nfleetd_status_transitions_total %lu\n"
	    "# HELP fleetd_status_events_total Cluster events surfaced as job events.\n"
	    "# TYPE fleetd_status_events_total counter\nfleetd_status_events_total %lu\n"
	    "# HELP fleetd_status_deleted_total Objects deleted (cancel, TTL, withdrawal).\n"
	    "# TYPE fleetd_status_deleted_total counter\nfleetd_status_deleted_total %lu\n"
	    "# HELP fleetd_status_errors_total Cluster reads that failed.\n"
	    "# TYPE fleetd_status_errors_total counter\nfleetd_status_errors_total %lu\n"
	    "# HELP fleetd_status_job_loads_total Queries that loaded followed jobs.\n"
	    "# TYPE fleetd_status_job_loads_total counter\nfleetd_status_job_loads_total %lu\n"
	    "# HELP fleetd_status_jobs_loaded_total Followed jobs loaded (rows of those"
	    " queries).\n"
	    "# TYPE fleetd_status_jobs_loaded_total counter\nfleetd_status_jobs_loaded_total %lu\n",
	    atomic_load(&M.cycles), atomic_load(&M.transitions), atomic_load(&M.events),
	    atomic_load(&M.deleted), atomic_load(&M.errors), atomic_load(&M.loads),
	    atomic_load(&M.loaded));
	status_watch_metrics(buf, len, cap);
}
