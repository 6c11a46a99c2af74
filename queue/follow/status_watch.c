/* status_watch: the status worker's view of its member clusters, kept by watches — one
 * list then one watch per cluster and kind (the four ray.io kinds, pods, Warning events,
 * nodes; only fleetd's objects but nodes), resumed from the last resourceVersion, relisted
 * after 410 Expired, in bounded memory.  A kind is watched on a cluster only while the
 * status cycle asks for it (a followed job of that kind is there), and its cache keeps
 * only the fields the status path reads (trim).  Each event marks the job it concerns (its
 * fleet.io/job-id label, or the pod's an Event involves) so that the status loop looks at
 * that job only; a node's change (taints, conditions, labels, deletion) has every job of
 * its cluster looked at (a job pinned to a drained node holds no pod there).
 * A cluster that refuses watches is polled instead (the status cycle lists it each turn).
 * One thread drives every stream (libcurl multi); the lists that start them run up to
 * LIST_THREADS at once, so that a start or a takeover lists every cluster in parallel. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/config.h"
#include "core/db.h"
#include "core/http.h"
#include "core/jsonx.h"
#include "core/log.h"
#include "core/mono.h"
#include "core/textbuf.h"
#include "core/worker_thread.h"
#include "queue/follow/status_int.h"

#define NKINDS		7
#define WATCH_TIMEOUT_S	300	/* the server ends a watch after this; we resume */
#define IDLE_DROP_S	30	/* a kind not asked for this long: its watch closes */
#define REFUSED_RETRY_S	60	/* a cluster that refused a watch is polled this long */
#define MAX_LINE	(8u << 20)
#define MAX_EVENTS	2000	/* Warning events kept per cluster */
#define MAX_OBJECTS	20000	/* objects kept per cluster and kind */
#define MAX_TURN	1024	/* streams started per turn of the watcher */
#define LIST_THREADS	16	/* their lists in flight at once */

static const struct {
	const char *kind, *path, *query;
} kinds[NKINDS] = {
	{ "RayJob", "/apis/ray.io/v1/rayjobs", STATUS_SEL_MANAGED },
	{ "RayCluster", "/apis/ray.io/v1/rayclusters", STATUS_SEL_MANAGED },
	{ "RayService", "/apis/ray.io/v1/rayservices", STATUS_SEL_MANAGED },
	{ "RayCronJob", "/apis/ray.io/v1/raycronjobs", STATUS_SEL_MANAGED },
	{ "Pod", "/api/v1/pods", STATUS_SEL_MANAGED },
	{ "Event", "/api/v1/events", "fieldSelector=type%3DWarning" },
	{ "Node", "/api/v1/nodes", NULL },
};

struct wcluster;

struct wstream {
	struct wcluster	*c;
	int		 k;
	bool		 want, open, synced, stop, expired;
	char		 rv[32];
	json_t		*items;		/* "ns/name" -> object */
	char		*buf;		/* a partial line */
	size_t		 len, cap;
	long		 status;
	double		 retry_at;
	double		 wanted_at;	/* the status cycle last asked for this kind */
	int		 fails;
};

struct wcluster {
	char			 id[40];
	struct member	*t;
	struct wstream		 s[NKINDS];
	double			 refused_until;
	bool			 dirty;		/* relisted: every job there is looked at */
	json_t			*dirty_jobs;	/* job id -> true: what watch events concerned */
	struct wcluster		*next;
};

static struct {
	pthread_mutex_t		 mu;
	struct worker_thread	 th;
	struct wcluster		*all;
	struct http_streams	*streams;
	atomic_ulong		 lists, watches, relists, refusals, events;
} W = { .mu = PTHREAD_MUTEX_INITIALIZER };

static int
kind_index(const char *kind)
{
	for (int i = 0; i < NKINDS; i++)
		if (strcmp(kinds[i].kind, kind) == 0)
			return i;
	return -1;
}

/* The cluster's entry, made on first use (locked). */
static struct wcluster *
cluster(const char *id, bool make)
{
	struct wcluster *c;

	for (c = W.all; c != NULL; c = c->next)
		if (strcmp(c->id, id) == 0)
			return c;
	if (!make)
		return NULL;
	if ((c = calloc(1, sizeof(*c))) == NULL)
		abort();
	snprintf(c->id, sizeof(c->id), "%s", id);
	c->dirty_jobs = json_object();
	for (int k = 0; k < NKINDS; k++) {
		c->s[k].c = c;
		c->s[k].k = k;
		c->s[k].items = json_object();
	}
	c->next = W.all;
	W.all = c;
	return c;
}

bool
status_watch_on(void)
{
	return W.th.started;
}

void
status_watch_want(const char *cluster_id, const char *kind)
{
	int k = kind_index(kind);
	struct wcluster *c;

	if (!W.th.started || k < 0)
		return;
	pthread_mutex_lock(&W.mu);
	c = cluster(cluster_id, true);
	c->s[k].want = true;
	c->s[k].wanted_at = mono_s();
	pthread_mutex_unlock(&W.mu);
}

json_t *
status_watch_list(const char *cluster_id, const char *kind, const char *ns)
{
	int k = kind_index(kind);
	struct wcluster *c;
	json_t *out = NULL, *v;
	const char *key;
	size_t nl = strlen(ns);

	if (!W.th.started || k < 0)
		return NULL;
	pthread_mutex_lock(&W.mu);
	c = cluster(cluster_id, false);
	/* a stream that failed and waits to reconnect may have missed changes: its cache is
	 * not served meanwhile (the cycle lists), though it stays synced to resume from */
	if (c != NULL && c->s[k].synced && c->s[k].fails == 0 &&
	    c->refused_until <= mono_s()) {
		out = json_array();
		json_object_foreach(c->s[k].items, key, v)
			if (strncmp(key, ns, nl) == 0 && key[nl] == '/')
				json_array_append(out, v);
	}
	pthread_mutex_unlock(&W.mu);
	return out;
}

json_t *
status_watch_nodes(const char *cluster_id)
{
	json_t *items = status_watch_list(cluster_id, "Node", "");

	return items != NULL ? status_nodes_by_name(items) : NULL;
}

json_t *
status_nodes_by_name(json_t *items)
{
	json_t *out = json_object(), *it;
	size_t i;

	json_array_foreach(items, i, it) {
		const char *name = jsonx_meta_str(it, "name");

		if (name != NULL)
			json_object_set(out, name, it);
	}
	json_decref(items);
	return out;
}

/* Whether the cluster's wanted kinds are all kept by watches in sync (locked). */
static bool
following(const struct wcluster *c)
{
	if (c->refused_until > mono_s())
		return false;
	for (int k = 0; k < NKINDS; k++)
		if (c->s[k].want && (!c->s[k].synced || c->s[k].fails > 0))
			return false;
	return true;
}

bool
status_watch_take_changes(json_t *jobs, json_t *clusters)
{
	struct wcluster *c;
	bool any = false;

	if (!W.th.started)
		return false;
	pthread_mutex_lock(&W.mu);
	for (c = W.all; c != NULL; c = c->next) {
		if (c->dirty)
			json_object_set_new(clusters, c->id, json_true());
		any = any || c->dirty || json_object_size(c->dirty_jobs) > 0;
		json_object_update(jobs, c->dirty_jobs);
		json_object_clear(c->dirty_jobs);
		c->dirty = false;
	}
	pthread_mutex_unlock(&W.mu);
	return any;
}

bool
status_watch_polled(const char *cluster_id)
{
	struct wcluster *c;
	bool polled;

	if (!W.th.started)
		return true;
	pthread_mutex_lock(&W.mu);
	c = cluster(cluster_id, false);
	polled = c != NULL && !following(c);
	pthread_mutex_unlock(&W.mu);
	return polled;
}

/* ---- what the caches keep: the fields the status path reads (status.c, status_act.c,
 * status_class.c, status_postmortem.c, status_stockout.c, repair.c, grow.c), not whole
 * objects: a pod's containers, env and volumes, a node's images and info, every object's
 * managedFields are most of their bytes, and nothing there reads them. */

static const char *const pod_keep[] = {
	"metadata.name", "metadata.namespace", "metadata.uid", "metadata.resourceVersion",
	"metadata.labels", "metadata.creationTimestamp", "metadata.deletionTimestamp",
	"metadata.ownerReferences", "spec.nodeName", "spec.schedulingGates", "spec.affinity",
	"spec.nodeSelector", "status", NULL
};

static const char *const event_keep[] = {
	"metadata.name", "metadata.namespace", "metadata.uid", "metadata.resourceVersion",
	"metadata.creationTimestamp", "involvedObject", "type", "reason", "message", "count",
	"firstTimestamp", "lastTimestamp", "eventTime", NULL
};

static const char *const node_keep[] = {
	"metadata.name", "metadata.uid", "metadata.resourceVersion", "metadata.labels",
	"spec.taints", "spec.unschedulable", "status.conditions", NULL
};

/* A new object of the members of o that paths name ("a" or "a.b"), sharing their values. */
static json_t *
pick(json_t *o, const char *const *paths)
{
	json_t *out = json_object(), *v, *sub;
	char top[32];

	for (; *paths != NULL; paths++) {
		const char *dot = strchr(*paths, '.');

		if (dot == NULL) {
			if ((v = json_object_get(o, *paths)) != NULL)
				json_object_set(out, *paths, v);
			continue;
		}
		snprintf(top, sizeof(top), "%.*s", (int)(dot - *paths), *paths);
		if ((v = json_object_get(json_object_get(o, top), dot + 1)) == NULL)
			continue;
		if ((sub = json_object_get(out, top)) == NULL) {
			sub = json_object();
			json_object_set_new(out, top, sub);
		}
		json_object_set(sub, dot + 1, v);
	}
	return out;
}

/* A Ray object without what the API server keeps for itself (managedFields, the last
 * applied configuration): the rest is read (status, the spec repair and grow compare,
 * annotations). */
static json_t *
ray_trimmed(json_t *o)
{
	json_t *out = json_copy(o), *md = json_copy(json_object_get(o, "metadata")), *an;

	if (!json_is_object(out) || md == NULL) {
		json_decref(md);
		return out;
	}
	json_object_del(md, "managedFields");
	if ((an = json_copy(json_object_get(md, "annotations"))) != NULL) {
		json_object_del(an, "kubectl.kubernetes.io/last-applied-configuration");
		json_object_set_new(md, "annotations", an);
	}
	json_object_set_new(out, "metadata", md);
	return out;
}

json_t *
status_watch_trim(const char *kind, json_t *o)
{
	if (strcmp(kind, "Pod") == 0)
		return pick(o, pod_keep);
	if (strcmp(kind, "Event") == 0)
		return pick(o, event_keep);
	if (strcmp(kind, "Node") == 0)
		return pick(o, node_keep);
	return ray_trimmed(o);
}

/* ---- stream callbacks (watcher thread, W.mu not held on entry) */

static void
key_of(json_t *o, char *key, size_t n)
{
	json_t *md = json_object_get(o, "metadata");
	const char *ns = json_string_value(json_object_get(md, "namespace")),
	    *name = json_string_value(json_object_get(md, "name"));

	snprintf(key, n, "%s/%s", ns ? ns : "", name ? name : "");
}

/* Marks the jobs an event is about (locked): the fleet.io/job-id label of a Ray object or
 * a pod; for a Warning event, the label of the pod it involves as the pod watch keeps it,
 * or of the pods on the node it involves.  An event about anything else concerns no job
 * of ours (a pod's event that comes before the pod marks nothing; the pod's own ADDED
 * marks its job, whose sync then reads the events kept meanwhile). */
static void
mark_label(json_t *dirty, json_t *subject)
{
	const char *id = json_string_value(json_object_get(json_object_get(json_object_get(
	    subject, "metadata"), "labels"), "fleet.io/job-id"));

	if (id != NULL && strlen(id) < 40)
		json_object_set_new(dirty, id, json_true());
}

/* A node's Warning event concerns the jobs with pods on it (locked). */
static void
mark_node(struct wcluster *c, const char *name)
{
	json_t *p;
	const char *key;

	if (name == NULL)
		return;
	json_object_foreach(c->s[kind_index("Pod")].items, key, p) {
		const char *node = json_string_value(json_object_get(json_object_get(p, "spec"),
		    "nodeName"));

		if (node != NULL && strcmp(node, name) == 0)
			mark_label(c->dirty_jobs, p);
	}
}

static void
mark_job(struct wstream *s, json_t *o)
{
	json_t *io = json_object_get(o, "involvedObject");
	const char *kind, *ns, *name;
	char pk[400];

	if (strcmp(kinds[s->k].kind, "Event") != 0) {
		mark_label(s->c->dirty_jobs, o);
		return;
	}
	kind = json_string_value(json_object_get(io, "kind"));
	ns = json_string_value(json_object_get(io, "namespace"));
	name = json_string_value(json_object_get(io, "name"));
	if (name == NULL)
		return;
	if (kind != NULL && strcmp(kind, "Node") == 0) {
		mark_node(s->c, name);
		return;
	}
	snprintf(pk, sizeof(pk), "%s/%s", ns ? ns : "", name);
	mark_label(s->c->dirty_jobs, json_object_get(s->c->s[kind_index("Pod")].items, pk));
}

/* Whether a Node's change (old and now as cached, NULL when absent) can concern a job: it
 * came or went, its taints, unschedulable or labels changed, or a condition's status — not
 * the kubelet's heartbeat times alone, which move every few minutes on every node. */
static bool
node_changed(json_t *old, json_t *now)
{
	json_t *a, *b, *c;
	size_t i;

	if (old == NULL || now == NULL ||
	    !json_equal(json_object_get(old, "spec"), json_object_get(now, "spec")) ||
	    !json_equal(jsonx_meta(old, "labels"), jsonx_meta(now, "labels")))
		return true;
	a = json_object_get(json_object_get(old, "status"), "conditions");
	b = json_object_get(json_object_get(now, "status"), "conditions");
	if (json_array_size(a) != json_array_size(b))
		return true;
	json_array_foreach(a, i, c)
		if (!json_equal(json_object_get(c, "type"), json_object_get(json_array_get(b, i),
		    "type")) || !json_equal(json_object_get(c, "status"), json_object_get(
		    json_array_get(b, i), "status")))
			return true;
	return false;
}

/* Applies one watch event line (locked). */
static void
apply_line(struct wstream *s, const char *line, size_t len)
{
	json_t *ev = json_loadb(line, len, 0, NULL), *o, *old = NULL;
	const char *type, *rv;
	char key[400];

	if (!json_is_object(ev))
		goto out;
	type = json_string_value(json_object_get(ev, "type"));
	o = json_object_get(ev, "object");
	if (type == NULL || !json_is_object(o))
		goto out;
	if (strcmp(type, "ERROR") == 0) {
		if (json_integer_value(json_object_get(o, "code")) == 410)
			s->expired = true;
		goto out;
	}
	rv = jsonx_meta_str(o, "resourceVersion");
	if (rv != NULL)
		snprintf(s->rv, sizeof(s->rv), "%s", rv);
	if (strcmp(type, "BOOKMARK") == 0)
		goto out;
	key_of(o, key, sizeof(key));
	old = json_incref(json_object_get(s->items, key));
	if (strcmp(type, "DELETED") == 0)
		json_object_del(s->items, key);
	else
		json_object_set_new(s->items, key, status_watch_trim(kinds[s->k].kind, o));
	if (json_object_size(s->items) > (strcmp(kinds[s->k].kind, "Event") == 0 ? MAX_EVENTS :
	    MAX_OBJECTS)) {	/* bounded: the oldest entry goes */
		void *it = json_object_iter(s->items);

		if (it != NULL)
			json_object_del(s->items, json_object_iter_key(it));
	}
	if (strcmp(kinds[s->k].kind, "Node") != 0)
		mark_job(s, o);
	else if (node_changed(old, json_object_get(s->items, key)))
		s->c->dirty = true;
	atomic_fetch_add(&W.events, 1);
out:
	json_decref(old);
	json_decref(ev);
}

static bool
on_chunk(void *user, long status, const char *data, size_t len)
{
	struct wstream *s = user;
	size_t start = 0;
	bool ok = true;

	pthread_mutex_lock(&W.mu);
	s->status = status;
	if (status != 200 || s->stop) {
		ok = !s->stop;
		goto out;
	}
	/* resumed from its version after a failure: nothing was missed, the cache is served
	 * again (not only after the stream's end, WATCH_TIMEOUT_S later: the cluster would be
	 * listed on every sync meanwhile) */
	s->fails = 0;
	if (s->len + len + 1 > MAX_LINE) {	/* a runaway line: drop the stream, relist */
		s->synced = false;
		s->len = 0;
		ok = false;
		goto out;
	}
	if (s->len + len + 1 > s->cap) {
		s->cap = (s->len + len + 1) * 2;
		if ((s->buf = realloc(s->buf, s->cap)) == NULL)
			abort();
	}
	memcpy(s->buf + s->len, data, len);
	s->len += len;
	for (size_t i = 0; i < s->len; i++)
		if (s->buf[i] == '\n') {
			if (i > start)
				apply_line(s, s->buf + start, i - start);
			start = i + 1;
		}
	memmove(s->buf, s->buf + start, s->len - start);
	s->len -= start;
out:
	pthread_mutex_unlock(&W.mu);
	return ok;
}

static void
on_end(void *user, long status, const struct err *e)
{
	struct wstream *s = user;
	double now = mono_s();

	pthread_mutex_lock(&W.mu);
	s->open = false;
	s->len = 0;
	if (s->expired || status == 410) {	/* too old: list again */
		s->synced = false;
		s->expired = false;
		atomic_fetch_add(&W.relists, 1);
	} else if (status == 200 && e == NULL) {
		s->fails = 0;			/* timeoutSeconds: resume at once */
	} else if (status == 400 || status == 403 || status == 404 || status == 405 ||
	    status == 406 || status == 415 || status == 501) {
		s->c->refused_until = now + REFUSED_RETRY_S;
		s->synced = false;
		atomic_fetch_add(&W.refusals, 1);
		log_warn(NULL, "status", "cluster refuses watches; polling it", "{s:s, s:s, s:i}",
		    "cluster", s->c->id, "kind", kinds[s->k].kind, "status", (int)status);
	} else {
		if (status == 401) {		/* the token may have been rotated */
			member_free(s->c->t);
			s->c->t = NULL;
		}
		s->fails++;
		s->retry_at = now + (s->fails < 6 ? 0.2 * (1 << s->fails) : 10.0);
		if (s->fails > 3)
			s->synced = false;	/* the cycle lists (and reports) meanwhile */
	}
	pthread_mutex_unlock(&W.mu);
}

/* ---- the watcher thread */

/* Lists kind on cluster c when its cache is not in sync (W.mu not held; c and its target
 * stay: only the watcher frees them).  Runs on the list threads, many at once. */
static void
list_stream(struct wstream *s)
{
	const struct member *t = s->c->t;
	struct err e = { 0 };
	char rv[32] = "";
	json_t *items = NULL, *it;
	bool synced;
	size_t i;

	pthread_mutex_lock(&W.mu);
	synced = s->synced;
	pthread_mutex_unlock(&W.mu);
	if (synced)
		return;
	atomic_fetch_add(&W.lists, 1);
	if (!member_list_rv(&t->pc, kinds[s->k].path, kinds[s->k].query, &items, rv,
	    sizeof(rv), &e)) {
		pthread_mutex_lock(&W.mu);
		s->fails++;
		s->retry_at = mono_s() + (s->fails < 6 ? 0.2 * (1 << s->fails) : 10.0);
		pthread_mutex_unlock(&W.mu);
		return;
	}
	pthread_mutex_lock(&W.mu);
	json_object_clear(s->items);
	json_array_foreach(items, i, it) {
		char key[400];

		key_of(it, key, sizeof(key));
		json_object_set_new(s->items, key, status_watch_trim(kinds[s->k].kind, it));
	}
	snprintf(s->rv, sizeof(s->rv), "%s", rv);
	s->synced = true;
	s->fails = 0;
	s->c->dirty = true;
	pthread_mutex_unlock(&W.mu);
	json_decref(items);
}

/* Starts the watch of a listed stream from its version (watcher thread: the streams'
 * multi handle is its own). */
static void
open_stream(struct wstream *s)
{
	const struct member *t = s->c->t;
	struct http_header h[1] = { { "Accept", "application/json" } };
	struct http_req rq = { 0 };
	struct err e = { 0 };
	char url[4096], rv[32] = "";
	size_t n = strlen(t->api_server);
	bool synced;

	pthread_mutex_lock(&W.mu);
	synced = s->synced;
	snprintf(rv, sizeof(rv), "%s", s->rv);
	pthread_mutex_unlock(&W.mu);
	if (!synced)
		return;		/* its list failed: retried at retry_at */
	while (n > 0 && t->api_server[n - 1] == '/')
		n--;
	snprintf(url, sizeof(url), "%.*s%s?watch=1&allowWatchBookmarks=true&timeoutSeconds=%d"
	    "&resourceVersion=%s%s%s", (int)n, t->api_server, kinds[s->k].path, WATCH_TIMEOUT_S,
	    rv, kinds[s->k].query ? "&" : "", kinds[s->k].query ? kinds[s->k].query : "");
	rq.url = url;
	rq.bearer = t->token;
	rq.ca_pem = t->ca_pem;
	rq.headers = h;
	rq.nheaders = 1;
	rq.timeout_ms = (WATCH_TIMEOUT_S + 30) * 1000L;
	pthread_mutex_lock(&W.mu);
	s->open = http_streams_add(W.streams, &rq, on_chunk, on_end, s, &e);
	s->expired = false;
	if (s->open)
		atomic_fetch_add(&W.watches, 1);
	else
		s->retry_at = mono_s() + 5;
	pthread_mutex_unlock(&W.mu);
}

/* Loads c's target (W.mu not held). */
static bool
load_target(struct wcluster *c)
{
	struct member *t = NULL;
	struct err e = { 0 };
	struct db *d = db_acquire(5000, &e);
	bool ok;

	if (d == NULL)
		return false;
	ok = member_load(d, c->id, &t, &e);
	db_release(d);
	if (ok)
		c->t = t;
	return ok;
}

/* The lists of one turn, LIST_THREADS at a time: after a start or a takeover every
 * cluster's first lists are in flight together, not one after the other. */
struct listing {
	struct wstream	**v;
	int		  n;
	atomic_int	  next;
};

static void *
list_worker(void *arg)
{
	struct listing *l = arg;
	int i;

	while ((i = atomic_fetch_add(&l->next, 1)) < l->n)
		list_stream(l->v[i]);
	return NULL;
}

static void
list_all(struct wstream **v, int n)
{
	struct listing l = { v, n, 0 };
	pthread_t th[LIST_THREADS];
	int nt = 0;

	while (nt < LIST_THREADS && nt < n - 1 && pthread_create(&th[nt], NULL, list_worker,
	    &l) == 0)
		nt++;
	list_worker(&l);
	for (int i = 0; i < nt; i++)
		pthread_join(th[i], NULL);
}

static void *
loop(void *arg)
{
	(void)arg;
	while (worker_thread_running(&W.th)) {
		struct wstream *todo[MAX_TURN], *ready[MAX_TURN];
		int n = 0, nr = 0;
		double now = mono_s();

		pthread_mutex_lock(&W.mu);
		for (struct wcluster *c = W.all; c != NULL && n < MAX_TURN; c = c->next) {
			for (int k = 0; k < NKINDS && n < MAX_TURN; k++) {
				struct wstream *s = &c->s[k];

				if (s->want && now - s->wanted_at > IDLE_DROP_S) {
					/* no job of this kind there any more */
					s->want = false;
					s->stop = true;	/* the open stream aborts on its next piece */
					s->synced = false;
					json_object_clear(s->items);
				}
				if (s->want && !s->open && now >= s->retry_at &&
				    c->refused_until <= now) {
					s->stop = false;
					todo[n++] = s;
				}
			}
		}
		pthread_mutex_unlock(&W.mu);
		for (int i = 0; i < n && worker_thread_running(&W.th); i++) {
			struct wstream *s = todo[i];

			if (s->c->t == NULL && !load_target(s->c)) {
				s->retry_at = now + 5;
				continue;
			}
			ready[nr++] = s;
		}
		list_all(ready, nr);
		for (int i = 0; i < nr && worker_thread_running(&W.th); i++)
			open_stream(ready[i]);
		http_streams_poll(W.streams, 100);
	}
	return NULL;
}

bool
status_watch_start(struct err *e)
{
	if (cfg.status_watch == 0)
		return true;
	if ((W.streams = http_streams_new()) == NULL)
		return err_set(e, 500, "status.start", "cannot start the watch streams");
	if (!worker_thread_start(&W.th, loop, "status.start", "cannot start the watch thread",
	    e)) {
		http_streams_free(W.streams);
		W.streams = NULL;
		return false;
	}
	return true;
}

void
status_watch_stop(void)
{
	struct wcluster *c;

	if (!W.th.started)
		return;
	worker_thread_stop(&W.th);
	http_streams_free(W.streams);
	W.streams = NULL;
	while ((c = W.all) != NULL) {
		W.all = c->next;
		for (int k = 0; k < NKINDS; k++) {
			json_decref(c->s[k].items);
			free(c->s[k].buf);
		}
		member_free(c->t);
		json_decref(c->dirty_jobs);
		free(c);
	}
}

void
status_watch_count_list(void)
{
	atomic_fetch_add(&W.lists, 1);
}

/* The open streams and cached objects of each kind, over the clusters. */
static void
gauges(char **buf, size_t *len, size_t *cap)
{
	size_t open[NKINDS] = { 0 }, objects[NKINDS] = { 0 };

	pthread_mutex_lock(&W.mu);
	for (struct wcluster *c = W.all; c != NULL; c = c->next)
		for (int k = 0; k < NKINDS; k++) {
			open[k] += c->s[k].open;
			objects[k] += json_object_size(c->s[k].items);
		}
	pthread_mutex_unlock(&W.mu);
	textbuf_appendf(buf, len, cap,
	    "# HELP fleetd_status_watch_streams Watch streams open, by kind.\n"
	    "# TYPE fleetd_status_watch_streams gauge\n");
	for (int k = 0; k < NKINDS; k++)
		textbuf_appendf(buf, len, cap, "fleetd_status_watch_streams{kind=\"%s\"} %zu\n",
		    kinds[k].kind, open[k]);
	textbuf_appendf(buf, len, cap,
	    "# HELP fleetd_status_watch_objects Objects the watch caches keep, by kind.\n"
	    "# TYPE fleetd_status_watch_objects gauge\n");
	for (int k = 0; k < NKINDS; k++)
		textbuf_appendf(buf, len, cap, "fleetd_status_watch_objects{kind=\"%s\"} %zu\n",
		    kinds[k].kind, objects[k]);
}

void
status_watch_metrics(char **buf, size_t *len, size_t *cap)
{
	gauges(buf, len, cap);
	textbuf_appendf(buf, len, cap,
	    "# HELP fleetd_status_member_calls_total Member-cluster API calls of the status "
	    "worker (list: a list request, watch: a watch opened).\n"
	    "# TYPE fleetd_status_member_calls_total counter\n"
	    "fleetd_status_member_calls_total{call=\"list\"} %lu\n"
	    "fleetd_status_member_calls_total{call=\"watch\"} %lu\n"
	    "# HELP fleetd_status_watch_relists_total Watches that expired (410) and listed again.\n"
	    "# TYPE fleetd_status_watch_relists_total counter\n"
	    "fleetd_status_watch_relists_total %lu\n"
	    "# HELP fleetd_status_watch_refusals_total Watches a cluster refused (then polled).\n"
	    "# TYPE fleetd_status_watch_refusals_total counter\n"
	    "fleetd_status_watch_refusals_total %lu\n"
	    "# HELP fleetd_status_watch_events_total Watch events applied.\n"
	    "# TYPE fleetd_status_watch_events_total counter\n"
	    "fleetd_status_watch_events_total %lu\n",
	    atomic_load(&W.lists), atomic_load(&W.watches), atomic_load(&W.relists),
	    atomic_load(&W.refusals), atomic_load(&W.events));
}
