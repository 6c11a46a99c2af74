/* cloudsim kwatch: the watch cache of each member cluster's API server — every change of a
 * namespace, node, pod, event or Ray object becomes an event with its resourceVersion in a
 * bounded history — and the ?watch=1 streams that follow it: chunked JSON lines, resume
 * from a resourceVersion, BOOKMARK events, timeoutSeconds, and 410 Expired for a version
 * older than the history. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cloudsim/cs.h"
#include "core/jsonx.h"
#include "core/mono.h"

#define HIST_MAX	512	/* events kept per cluster (the real cache keeps ~100/kind) */
#define FULL_SYNC_S	1.0	/* resync even when the cluster's rv did not move */
#define BOOKMARK_S	5.0
#define MAX_TIMEOUT_S	1800

struct wev {
	long long	 rv;
	char		 res[24];
	char		 ns[64];
	const char	*type;		/* ADDED MODIFIED DELETED */
	json_t		*obj;		/* owned */
};

struct cs_wcache {
	long long	 synced_rv;	/* cl->rv after the last sync */
	long long	 oldest;	/* a watch from below this is 410 Expired */
	double		 synced_at;	/* wall */
	json_t		*items;		/* "res\x1fns\x1fname" -> object (not events) */
	json_t		*log;		/* "plural/ns/name" -> [[state, wall ms], ...] */
	unsigned	 gen;		/* bumped by /_sim/watch-compact */
	struct wev	*hist;
	size_t		 n;
};

struct cs_stream {
	struct cs	*cs;
	char		 cluster[64];
	char		 res[24];
	char		 ns[64];
	char		*ls, *fs;
	long long	 last;		/* every event up to this rv was considered */
	char		*buf;		/* serialized lines not yet handed to MHD */
	size_t		 len, off, cap;
	double		 deadline, next_bookmark;
	bool		 bookmarks, done;
	unsigned	 gen;
};

static pthread_cond_t changed = PTHREAD_COND_INITIALIZER;

static long long
rv_of(json_t *o)
{
	const char *s = cs_jpath(o, "metadata.resourceVersion");

	return s ? atoll(s) : 0;
}

static void
set_rv(json_t *o, long long rv)
{
	json_t *md = json_object_get(o, "metadata");

	if (json_is_object(md))
		json_object_set_new(md, "resourceVersion", json_sprintf("%lld", rv));
}

static void
key_of(char *k, size_t n, const char *res, json_t *o)
{
	const char *ns = cs_jpath(o, "metadata.namespace"), *name = cs_jpath(o, "metadata.name");

	snprintf(k, n, "%s\x1f%s\x1f%s", res, ns ? ns : "", name ? name : "");
}

struct changes {
	struct wev	*v;
	size_t		 n, cap;
};

static void
change(struct changes *c, const char *res, const char *type, json_t *obj, long long rv)
{
	const char *ns = cs_jpath(obj, "metadata.namespace");

	if (c->n == c->cap) {
		c->cap = c->cap ? c->cap * 2 : 16;
		if ((c->v = realloc(c->v, c->cap * sizeof(*c->v))) == NULL)
			abort();
	}
	memset(&c->v[c->n], 0, sizeof(c->v[0]));
	c->v[c->n].rv = rv;
	snprintf(c->v[c->n].res, sizeof(c->v[0].res), "%s", res);
	snprintf(c->v[c->n].ns, sizeof(c->v[0].ns), "%s", ns ? ns : "");
	c->v[c->n].type = type;
	c->v[c->n].obj = obj;
	c->n++;
}

static const char *
ray_state(json_t *o)
{
	json_t *st = json_object_get(o, "status");
	const char *v = json_string_value(json_object_get(st, "jobDeploymentStatus"));

	if (v == NULL)
		v = json_string_value(json_object_get(st, "serviceStatus"));
	if (v == NULL)
		v = json_string_value(json_object_get(st, "state"));
	return v ? v : "";
}

/* Wall-clock time of each status change of a Ray object (for /_sim/watch-log). */
static void
log_state(struct cs_wcache *w, const char *res, json_t *old, json_t *obj)
{
	const char *now = ray_state(obj), *ns = cs_jpath(obj, "metadata.namespace"),
	    *name = cs_jpath(obj, "metadata.name");
	struct timespec ts;
	char key[400];
	json_t *a;

	if (old != NULL && strcmp(ray_state(old), now) == 0)
		return;
	clock_gettime(CLOCK_REALTIME, &ts);
	snprintf(key, sizeof(key), "%s/%s/%s", res, ns ? ns : "", name ? name : "");
	if ((a = json_object_get(w->log, key)) == NULL) {
		if (json_object_size(w->log) >= 20000) {	/* bounded: the oldest goes */
			void *it = json_object_iter(w->log);

			json_object_del(w->log, json_object_iter_key(it));
		}
		a = json_array();
		json_object_set_new(w->log, key, a);
	}
	if (json_array_size(a) < 32)
		json_array_append_new(a, json_pack("[s, I]", now, (json_int_t)ts.tv_sec * 1000 +
		    ts.tv_nsec / 1000000));
}

/* Compares a current object with the cache; obj is consumed. has_rv: the object's own
 * resourceVersion moves with every change (else a change gets a fresh one). */
static void
observe(struct cs_cluster *cl, struct changes *c, json_t *seen, const char *res, json_t *obj,
    bool has_rv)
{
	struct cs_wcache *w = cl->wc;
	char key[400];
	json_t *old;

	key_of(key, sizeof(key), res, obj);
	json_object_set_new(seen, key, json_true());
	old = json_object_get(w->items, key);
	if (old != NULL && has_rv && rv_of(old) == rv_of(obj) &&
	    json_equal(jsonx_meta(old, "uid"), jsonx_meta(obj, "uid"))) {
		json_decref(obj);
		return;
	}
	if (old != NULL && !has_rv) {
		set_rv(obj, rv_of(old));
		if (json_equal(old, obj)) {
			json_decref(obj);
			return;
		}
	}
	if (!has_rv)
		set_rv(obj, ++cl->rv);
	if (old != NULL && !json_equal(jsonx_meta(old, "uid"), jsonx_meta(obj, "uid")) &&
	    has_rv) {
		json_t *gone = json_deep_copy(old);

		set_rv(gone, rv_of(obj));	/* sorts before the ADDED of the same rv */
		change(c, res, "DELETED", gone, rv_of(gone));
		old = NULL;
	}
	json_object_set(w->items, key, obj);
	change(c, res, old ? "MODIFIED" : "ADDED", obj, rv_of(obj));
	if (cs_kind_of(res) != NULL)
		log_state(w, res, old, obj);
}

static int
by_rv(const void *a, const void *b)
{
	const struct wev *p = a, *q = b;

	if (p->rv != q->rv)
		return p->rv < q->rv ? -1 : 1;
	return (strcmp(q->type, "DELETED") == 0) - (strcmp(p->type, "DELETED") == 0);
}

static void
append(struct cs_wcache *w, struct changes *c)
{
	size_t i, drop;

	if (c->n == 0)
		return;
	qsort(c->v, c->n, sizeof(*c->v), by_rv);
	for (i = 0; i < c->n; i++) {
		if (w->n == HIST_MAX) {	/* forget the oldest quarter */
			drop = HIST_MAX / 4;
			w->oldest = w->hist[drop - 1].rv;
			for (size_t j = 0; j < drop; j++)
				json_decref(w->hist[j].obj);
			memmove(w->hist, w->hist + drop, (w->n - drop) * sizeof(*w->hist));
			w->n -= drop;
		}
		w->hist[w->n++] = c->v[i];
	}
}

void
cs_watch_sync(struct cs *cs, struct cs_cluster *cl)
{
	struct cs_wcache *w = cl->wc;
	struct changes c = { 0 };
	json_t *seen, *v;
	const char *k;
	void *tmp;
	size_t i;
	bool first = w == NULL;

	(void)cs;

	if (first) {
		if ((w = cl->wc = calloc(1, sizeof(*w))) == NULL ||
		    (w->hist = calloc(HIST_MAX, sizeof(*w->hist))) == NULL)
			abort();
		w->items = json_object();
		w->log = json_object();
		w->synced_rv = -1;
	}
	if (cl->rv == w->synced_rv && mono_s() - w->synced_at < FULL_SYNC_S)
		return;
	seen = json_object();
	json_array_foreach(cl->namespaces, i, v)
		observe(cl, &c, seen, "namespaces", json_deep_copy(v), false);
	for (i = 0; i < cl->nodes.n; i++)
		observe(cl, &c, seen, "nodes", cs_node_json(cl->nodes.v[i]), false);
	for (i = 0; i < cl->pods.n; i++) {
		struct cs_pod *p = cl->pods.v[i];
		char key[400];
		json_t *old;

		snprintf(key, sizeof(key), "pods\x1f%s\x1f%s", p->ns, p->name);
		old = json_object_get(w->items, key);
		if (old != NULL && rv_of(old) == atoll(p->rv) && cs_jpath(old, "metadata.uid") &&
		    strcmp(cs_jpath(old, "metadata.uid"), p->uid) == 0) {
			json_object_set_new(seen, key, json_true());
			continue;
		}
		observe(cl, &c, seen, "pods", cs_pod_json(p), true);
	}
	for (i = 0; i < cl->objects.n; i++) {
		struct cs_object *o = cl->objects.v[i];

		char key[400];
		json_t *old;

		if (o->deleted)
			continue;
		snprintf(key, sizeof(key), "%s\x1f%s\x1f%s", o->plural, o->ns, o->name);
		old = json_object_get(w->items, key);
		if (old != NULL && rv_of(old) == o->rv &&
		    strcmp(cs_jpath(old, "metadata.uid") ? cs_jpath(old, "metadata.uid") : "",
		    o->uid) == 0) {	/* unchanged: no copy */
			json_object_set_new(seen, key, json_true());
			continue;
		}
		observe(cl, &c, seen, o->plural, json_deep_copy(o->live), true);
	}
	json_object_foreach_safe(w->items, tmp, k, v)
		if (json_object_get(seen, k) == NULL) {
			json_t *gone = json_deep_copy(v);

			set_rv(gone, ++cl->rv);
			change(&c, k, "DELETED", gone, rv_of(gone));
			*strchr(c.v[c.n - 1].res, '\x1f') = '\0';
			json_object_del(w->items, k);
		}
	json_decref(seen);
	/* events are only appended or counted again, each time with a new rv */
	json_array_foreach(cl->events, i, v)
		if (!first && rv_of(v) > w->synced_rv)
			change(&c, "events", json_integer_value(json_object_get(v, "count")) > 1 ?
			    "MODIFIED" : "ADDED", json_deep_copy(v), rv_of(v));
	if (first) {
		for (i = 0; i < c.n; i++)
			json_decref(c.v[i].obj);
		c.n = 0;
		w->oldest = cl->rv;
	}
	append(w, &c);
	free(c.v);
	w->synced_rv = cl->rv;
	w->synced_at = mono_s();
	if (!first)
		pthread_cond_broadcast(&changed);
}

void
cs_watch_sync_all(struct cs *cs)
{
	size_t i;

	for (i = 0; i < cs->nclusters; i++)
		cs_watch_sync(cs, &cs->clusters[i]);
}

void
cs_watch_free(struct cs_cluster *cl)
{
	struct cs_wcache *w = cl->wc;
	size_t i;

	if (w == NULL)
		return;
	for (i = 0; i < w->n; i++)
		json_decref(w->hist[i].obj);
	free(w->hist);
	json_decref(w->items);
	json_decref(w->log);
	free(w);
	cl->wc = NULL;
}

/* ---- streams */

bool
cs_is_watch(struct cs_req *rq)
{
	const char *w = cs_query(rq, "watch");

	return w != NULL && (strcmp(w, "1") == 0 || strcmp(w, "true") == 0);
}

static void
emit(struct cs_stream *s, const char *type, json_t *obj)
{
	json_t *ev = json_pack("{s:s, s:O}", "type", type, "object", obj);
	char *line = json_dumps(ev, JSON_COMPACT);
	size_t n = strlen(line);

	if (s->len + n + 2 > s->cap) {
		s->cap = (s->len + n + 2) * 2;
		if ((s->buf = realloc(s->buf, s->cap)) == NULL)
			abort();
	}
	memcpy(s->buf + s->len, line, n);
	s->len += n;
	s->buf[s->len++] = '\n';
	free(line);
	json_decref(ev);
}

static void
expired(struct cs_stream *s, long long asked, long long oldest)
{
	json_t *st = json_pack("{s:s, s:s, s:{}, s:s, s:o, s:s, s:i}", "kind", "Status",
	    "apiVersion", "v1", "metadata", "status", "Failure", "message",
	    json_sprintf("too old resource version: %lld (%lld)", asked, oldest + 1), "reason",
	    "Expired", "code", 410);

	emit(s, "ERROR", st);
	json_decref(st);
	s->done = true;
}

static bool
wanted(const struct cs_stream *s, const char *res, const char *ns, json_t *obj)
{
	return strcmp(res, s->res) == 0 && (s->ns[0] == '\0' || strcmp(ns, s->ns) == 0) &&
	    cs_kube_filter(s->ls, s->fs, obj);
}

static const char *
kind_of_res(const char *res)
{
	return strcmp(res, "pods") == 0 ? "Pod" : strcmp(res, "events") == 0 ? "Event" :
	    strcmp(res, "nodes") == 0 ? "Node" : strcmp(res, "namespaces") == 0 ? "Namespace" :
	    cs_kind_of(res) ? cs_kind_of(res) : "Unknown";
}

/* Appends what happened since s->last (locked). */
static void
pull(struct cs_stream *s, struct cs_cluster *cl)
{
	struct cs_wcache *w = cl->wc;
	size_t i;

	if (s->last < w->oldest || s->gen != w->gen) {
		expired(s, s->last, w->oldest);
		return;
	}
	for (i = 0; i < w->n; i++) {
		struct wev *e = &w->hist[i];

		if (e->rv <= s->last)
			continue;
		if (wanted(s, e->res, e->ns, e->obj))
			emit(s, e->type, e->obj);
		s->last = e->rv;
	}
	if (w->synced_rv > s->last)
		s->last = w->synced_rv;
}

void
cs_watch_start(struct cs *cs, struct cs_cluster *cl, struct cs_req *rq, const char *res,
    const char *ns)
{
	struct cs_stream *s = calloc(1, sizeof(*s));
	const char *rv = cs_query(rq, "resourceVersion"), *to = cs_query(rq, "timeoutSeconds"),
	    *bm = cs_query(rq, "allowWatchBookmarks"), *k;
	long timeout = to ? atol(to) : MAX_TIMEOUT_S;
	json_t *v;
	size_t i;

	if (s == NULL)
		abort();
	s->cs = cs;
	snprintf(s->cluster, sizeof(s->cluster), "%s", cl->name);
	snprintf(s->res, sizeof(s->res), "%s", res);
	snprintf(s->ns, sizeof(s->ns), "%s", ns ? ns : "");
	s->ls = cs_query(rq, "labelSelector") ? strdup(cs_query(rq, "labelSelector")) : NULL;
	s->fs = cs_query(rq, "fieldSelector") ? strdup(cs_query(rq, "fieldSelector")) : NULL;
	s->bookmarks = bm != NULL && (strcmp(bm, "true") == 0 || strcmp(bm, "1") == 0);
	if (timeout <= 0 || timeout > MAX_TIMEOUT_S)
		timeout = MAX_TIMEOUT_S;
	s->deadline = mono_s() + (double)timeout;
	s->next_bookmark = mono_s() + BOOKMARK_S;
	cs_watch_sync(cs, cl);
	s->gen = cl->wc->gen;
	if (rv != NULL && *rv != '\0' && strcmp(rv, "0") != 0) {
		char *end;

		s->last = strtoll(rv, &end, 10);
		if (*end != '\0' || s->last < 0) {
			free(s->ls);
			free(s->fs);
			free(s);
			cs_reply_error(rq, 400, "BadRequest", "invalid resource version: %s", rv);
			return;
		}
		pull(s, cl);
	} else {	/* the current state as ADDED events, then what follows */
		if (strcmp(res, "events") == 0) {
			json_array_foreach(cl->events, i, v)
				if (wanted(s, "events", cs_jpath(v, "metadata.namespace"), v))
					emit(s, "ADDED", v);
		} else {
			json_object_foreach(cl->wc->items, k, v) {
				const char *vns = cs_jpath(v, "metadata.namespace");
				size_t rl = strlen(res);

				if (strncmp(k, res, rl) == 0 && k[rl] == '\x1f' &&
				    wanted(s, res, vns ? vns : "", v))
					emit(s, "ADDED", v);
			}
		}
		s->last = cl->wc->synced_rv;
	}
	rq->stream = s;
	rq->status = 200;
	rq->ctype = "application/json";
}

long
cs_stream_read(struct cs_stream *s, char *buf, size_t max)
{
	struct cs *cs = s->cs;

	for (;;) {
		struct cs_cluster *cl;

		if (s->off < s->len) {
			size_t n = s->len - s->off < max ? s->len - s->off : max;

			memcpy(buf, s->buf + s->off, n);
			s->off += n;
			if (s->off == s->len)
				s->off = s->len = 0;
			return (long)n;
		}
		if (s->done || cs_http_stopping() || mono_s() >= s->deadline)
			return 0;
		pthread_mutex_lock(&cs->lock);
		cl = cs_cluster_find(cs, s->cluster);
		if (cl == NULL) {
			pthread_mutex_unlock(&cs->lock);
			return 0;
		}
		cs_watch_sync(cs, cl);
		pull(s, cl);
		if (s->len == 0 && s->bookmarks && mono_s() >= s->next_bookmark) {
			json_t *b = json_pack("{s:s, s:s, s:{s:o}}", "kind", kind_of_res(s->res),
			    "apiVersion", cs_kind_of(s->res) ? "ray.io/v1" : "v1", "metadata",
			    "resourceVersion", json_sprintf("%lld", s->last));

			emit(s, "BOOKMARK", b);
			json_decref(b);
			s->next_bookmark = mono_s() + BOOKMARK_S;
		}
		if (s->len == 0) {
			struct timespec ts;

			clock_gettime(CLOCK_REALTIME, &ts);
			ts.tv_nsec += 500 * 1000000L;
			if (ts.tv_nsec >= 1000000000L) {
				ts.tv_sec++;
				ts.tv_nsec -= 1000000000L;
			}
			pthread_cond_timedwait(&changed, &cs->lock, &ts);
		}
		pthread_mutex_unlock(&cs->lock);
	}
}

void
cs_stream_free(struct cs_stream *s)
{
	if (s == NULL)
		return;
	free(s->ls);
	free(s->fs);
	free(s->buf);
	free(s);
}

/* ---- /_sim/watch-* */

void
cs_watch_sim(struct cs *cs, struct cs_req *rq, const char *what, json_t *body)
{
	const char *name = json_string_value(json_object_get(body, "cluster"));
	struct cs_cluster *cl;
	size_t i;

	if (strcmp(what, "compact") == 0 && strcmp(rq->method, "POST") == 0) {
		if ((cl = cs_cluster_find(cs, name ? name : "")) == NULL) {
			cs_reply_error(rq, 404, "sim.no_cluster", "cluster not found");
			return;
		}
		cs_watch_sync(cs, cl);
		for (i = 0; i < cl->wc->n; i++)
			json_decref(cl->wc->hist[i].obj);
		cl->wc->n = 0;
		cl->wc->oldest = cl->rv;
		cl->wc->gen++;
		pthread_cond_broadcast(&changed);
		cs_reply_json(rq, 200, json_pack("{s:I}", "oldest", (json_int_t)cl->rv));
	} else if (strcmp(what, "log") == 0 && strcmp(rq->method, "GET") == 0) {
		json_t *out = json_object(), *v;
		const char *k, *want = cs_query(rq, "cluster");

		for (i = 0; i < cs->nclusters; i++) {
			cl = &cs->clusters[i];
			if ((want != NULL && strcmp(want, cl->name) != 0) || cl->wc == NULL)
				continue;
			json_object_foreach(cl->wc->log, k, v) {
				char key[512];

				snprintf(key, sizeof(key), "%s/%s", cl->name, k);
				json_object_set(out, key, v);
			}
		}
		cs_reply_json(rq, 200, json_pack("{s:o}", "transitions", out));
	} else {
		cs_reply_error(rq, 404, "not_found", "no such endpoint");
	}
}
