/* status_watch: the status worker's view of its member clusters, kept by watches — one
 * list then one watch per cluster and kind (the four ray.io kinds, pods, Warning events;
 * only fleetd's objects), resumed from the last resourceVersion, relisted after 410
 * Expired, in bounded memory. A cluster that refuses watches is polled instead (the
 * status cycle lists it, as before). One thread drives every stream (libcurl multi). */
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

#define NKINDS		6
#define WATCH_TIMEOUT_S	300	/* the server ends a watch after this; we resume */
#define IDLE_DROP_S	30	/* no job on the cluster for this long: its watches close */
#define REFUSED_RETRY_S	60	/* a cluster that refused a watch is polled this long */
#define MAX_LINE	(8u << 20)
#define MAX_EVENTS	2000	/* Warning events kept per cluster */
#define MAX_OBJECTS	20000	/* objects kept per cluster and kind */

static const struct {
	const char *kind, *path, *query;
} kinds[NKINDS] = {
	{ "RayJob", "/apis/ray.io/v1/rayjobs", STATUS_SEL_MANAGED },
	{ "RayCluster", "/apis/ray.io/v1/rayclusters", STATUS_SEL_MANAGED },
	{ "RayService", "/apis/ray.io/v1/rayservices", STATUS_SEL_MANAGED },
	{ "RayCronJob", "/apis/ray.io/v1/raycronjobs", STATUS_SEL_MANAGED },
	{ "Pod", "/api/v1/pods", STATUS_SEL_MANAGED },
	{ "Event", "/api/v1/events", "fieldSelector=type%3DWarning" },
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
	int		 fails;
};

struct wcluster {
	char			 id[40];
	struct member	*t;
	struct wstream		 s[NKINDS];
	double			 wanted_at;
	double			 refused_until;
	bool			 dirty;
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
	c->wanted_at = mono_s();
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

bool
status_watch_take_dirty(const char *cluster_id, bool *following)
{
	struct wcluster *c;
	bool d = false;

	*following = false;
	if (!W.th.started)
		return false;
	pthread_mutex_lock(&W.mu);
	if ((c = cluster(cluster_id, false)) != NULL) {
		d = c->dirty;
		c->dirty = false;
		*following = c->refused_until <= mono_s();
		for (int k = 0; k < NKINDS; k++)
			if (c->s[k].want && (!c->s[k].synced || c->s[k].fails > 0))
				*following = false;
	}
	pthread_mutex_unlock(&W.mu);
	return d;
}

bool
status_watch_any_dirty(void)
{
	struct wcluster *c;
	bool d = false;

	pthread_mutex_lock(&W.mu);
	for (c = W.all; c != NULL && !d; c = c->next)
		d = c->dirty;
	pthread_mutex_unlock(&W.mu);
	return d;
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

/* Applies one watch event line (locked). */
static void
apply_line(struct wstream *s, const char *line, size_t len)
{
	json_t *ev = json_loadb(line, len, 0, NULL), *o;
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
	if (strcmp(type, "DELETED") == 0)
		json_object_del(s->items, key);
	else
		json_object_set(s->items, key, o);
	if (json_object_size(s->items) > (strcmp(kinds[s->k].kind, "Event") == 0 ? MAX_EVENTS :
	    MAX_OBJECTS)) {	/* bounded: the oldest entry goes */
		void *it = json_object_iter(s->items);

		if (it != NULL)
			json_object_del(s->items, json_object_iter_key(it));
	}
	s->c->dirty = true;
	atomic_fetch_add(&W.events, 1);
out:
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

/* Lists kind on cluster c and starts its watch from the list's version (W.mu not held;
 * c and its target stay: only this thread frees them). */
static void
start_stream(struct wstream *s)
{
	const struct member *t = s->c->t;
	struct http_header h[1] = { { "Accept", "application/json" } };
	struct http_req rq = { 0 };
	struct err e = { 0 };
	char url[4096], rv[32] = "";
	size_t n = strlen(t->api_server);
	json_t *items = NULL, *it;
	bool synced;
	size_t i;

	pthread_mutex_lock(&W.mu);
	synced = s->synced;
	snprintf(rv, sizeof(rv), "%s", s->rv);
	pthread_mutex_unlock(&W.mu);
	if (!synced) {
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
			json_object_set(s->items, key, it);
		}
		snprintf(s->rv, sizeof(s->rv), "%s", rv);
		s->synced = true;
		s->c->dirty = true;
		pthread_mutex_unlock(&W.mu);
		json_decref(items);
	}
	while (n > 0 && t->api_server[n - 1] == '/')
		n--;
	snprintf(url, sizeof(url), "%.*s%s?watch=1&allowWatchBookmarks=true&timeoutSeconds=%d"
	    "&resourceVersion=%s&%s", (int)n, t->api_server, kinds[s->k].path, WATCH_TIMEOUT_S,
	    rv, kinds[s->k].query);
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

static void *
loop(void *arg)
{
	(void)arg;
	while (worker_thread_running(&W.th)) {
		struct wstream *todo[64];
		int n = 0;
		double now = mono_s();

		pthread_mutex_lock(&W.mu);
		for (struct wcluster *c = W.all; c != NULL && n < 64; c = c->next) {
			bool idle = now - c->wanted_at > IDLE_DROP_S;

			for (int k = 0; k < NKINDS && n < 64; k++) {
				struct wstream *s = &c->s[k];

				if (idle && s->want) {	/* no job there any more */
					s->want = false;
					s->stop = true;	/* the open stream aborts on its next piece */
					s->synced = false;
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
			start_stream(s);
		}
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
		free(c);
	}
}

void
status_watch_count_list(void)
{
	atomic_fetch_add(&W.lists, 1);
}

void
status_watch_metrics(char **buf, size_t *len, size_t *cap)
{
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
