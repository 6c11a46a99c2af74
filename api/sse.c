/* sse: the event hub.  The ring holds every event with covered < seq <= published, as
 * ready frames; a stream whose cursor is older than the ring reads from the database
 * (bounded by published, so the two never disagree).  A stream with nothing to send
 * suspends its connection; the hub resumes it when a matching event or a heartbeat is due. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <microhttpd.h>

#include "api/metrics.h"
#include "api/sse.h"
#include "core/config.h"
#include "core/listen.h"
#include "core/log.h"
#include "core/textbuf.h"
#include "queue/jobs/events.h"

#define RING		8192
#define FILL_BYTES	(32 * 1024)	/* frames prepared per refill */
#define DB_BATCH	256

struct ring_ev {
	long long	 seq;
	char		*env;
	char		*job;
	char		*team;		/* the job's queue's team, NULL when none */
	char		*frame;
	size_t		 len;
};

struct sse_stream {
	struct sse_stream *next, *prev;
	struct MHD_Connection *conn;
	char		 token[64];
	char		*job;		/* filter: one job, or NULL */
	char		*environment;	/* filter: one environment, or NULL */
	char		**envs;		/* scope; NULL = every environment */
	int		 nenvs;
	char		*team;		/* scope: one team's queues, or NULL */
	long long	 cursor;	/* last seq considered */
	bool		 suspended;	/* by its reader; only the hub resumes it */
	bool		 ended;		/* its token was revoked: the reader ends it */
	char		*buf;		/* frames not yet handed to MHD */
	size_t		 len, off, cap;
	time_t		 last_write;
};

static struct {
	pthread_mutex_t	 mu;
	pthread_t	 thread;
	bool		 running, stopping, ready;
	long long	 published, covered;
	struct ring_ev	 ring[RING];
	int		 start, count;
	struct sse_stream *streams;
	int		 nstreams;
	unsigned long	 opened, refused, sent;
} hub = { .mu = PTHREAD_MUTEX_INITIALIZER };

static time_t
now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec;
}

static void
append(struct sse_stream *s, const char *p, size_t n)
{
	if (s->len + n > s->cap) {
		size_t cap = s->cap ? s->cap : 512;
		char *b;

		while (cap < s->len + n)
			cap *= 2;
		if ((b = realloc(s->buf, cap)) == NULL)
			abort();
		s->buf = b;
		s->cap = cap;
	}
	memcpy(s->buf + s->len, p, n);
	s->len += n;
}

static bool
matches(const struct sse_stream *s, const char *env, const char *job, const char *team)
{
	if (s->job != NULL && strcmp(s->job, job) != 0)
		return false;
	if (s->team != NULL && (team == NULL || strcmp(s->team, team) != 0))
		return false;
	if (s->environment != NULL && strcmp(s->environment, env) != 0)
		return false;
	if (s->envs == NULL)
		return true;
	for (int i = 0; i < s->nenvs; i++)
		if (strcmp(s->envs[i], env) == 0)
			return true;
	return false;
}

/* One frame: id, event name, the event as one line of JSON.  malloc'd. */
static char *
frame_of(json_t *ev, long long seq, size_t *len)
{
	char *data = json_dumps(ev, JSON_COMPACT | JSON_PRESERVE_ORDER), *f = NULL;
	int n;

	if (data == NULL)
		return NULL;
	n = asprintf(&f, "id: %lld\nevent: job\ndata: %s\n\n", seq, data);
	free(data);
	if (n < 0)
		return NULL;
	*len = (size_t)n;
	return f;
}

/* Index in the ring of the first event with seq > cursor (count when none); under mu. */
static int
ring_after(long long cursor)
{
	int lo = 0, hi = hub.count;

	while (lo < hi) {
		int mid = (lo + hi) / 2;

		if (hub.ring[(hub.start + mid) % RING].seq <= cursor)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* Copies matching frames after the cursor from the ring; under mu, cursor >= covered. */
static void
fill_from_ring(struct sse_stream *s)
{
	for (int i = ring_after(s->cursor); i < hub.count && s->len < FILL_BYTES; i++) {
		struct ring_ev *r = &hub.ring[(hub.start + i) % RING];

		if (matches(s, r->env, r->job, r->team))
			append(s, r->frame, r->len);
		s->cursor = r->seq;
	}
	if (s->len < FILL_BYTES)
		s->cursor = hub.published;
}

/* Reads events after the cursor, up to upto, from the database; outside mu. */
static bool
fill_from_db(struct sse_stream *s, long long upto)
{
	struct events_filter f = { .job_id = s->job, .environment = s->environment,
		.envs = (const char *const *)s->envs, .nenvs = s->nenvs, .team = s->team };
	struct err e = { 0 };
	struct db *c = db_acquire(5000, &e);
	json_t *items = NULL, *ev;
	size_t i;
	bool ok;

	if (c == NULL)
		return false;
	ok = events_read(c, s->cursor, upto, &f, DB_BATCH, &items, &e);
	db_release(c);
	if (!ok) {
		log_warn(NULL, "sse", "event read failed", "{s:s}", "error", e.msg);
		return false;
	}
	json_array_foreach(items, i, ev) {
		long long seq = json_integer_value(json_object_get(ev, "seq"));
		size_t n;
		char *fr = frame_of(ev, seq, &n);

		if (fr != NULL)
			append(s, fr, n);
		free(fr);
		s->cursor = seq;
	}
	if (json_array_size(items) < DB_BATCH)
		s->cursor = upto;
	json_decref(items);
	return true;
}

static ssize_t
drain(struct sse_stream *s, char *out, size_t max)
{
	size_t n = s->len - s->off;

	if (n > max)
		n = max;
	memcpy(out, s->buf + s->off, n);
	s->off += n;
	if (s->off == s->len) {		/* an idle stream keeps no buffer */
		s->off = s->len = 0;
		free(s->buf);
		s->buf = NULL;
		s->cap = 0;
	}
	s->last_write = now_s();
	return (ssize_t)n;
}

static ssize_t
reader(void *cls, uint64_t pos, char *out, size_t max)
{
	struct sse_stream *s = cls;

	(void)pos;
	for (;;) {
		long long upto;

		if (s->off < s->len)
			return drain(s, out, max);
		pthread_mutex_lock(&hub.mu);
		if (hub.stopping || s->ended) {
			pthread_mutex_unlock(&hub.mu);
			return MHD_CONTENT_READER_END_OF_STREAM;
		}
		if (hub.ready && s->cursor < hub.published) {
			if (s->cursor >= hub.covered) {
				fill_from_ring(s);
				pthread_mutex_unlock(&hub.mu);
				continue;
			}
			upto = hub.published;
			pthread_mutex_unlock(&hub.mu);
			if (!fill_from_db(s, upto))
				return MHD_CONTENT_READER_END_WITH_ERROR;	/* client resumes */
			continue;
		}
		if (now_s() - s->last_write >= cfg.sse_heartbeat_s) {
			pthread_mutex_unlock(&hub.mu);
			append(s, ": keep-alive\n\n", 14);
			continue;
		}
		s->suspended = true;
		MHD_suspend_connection(s->conn);
		pthread_mutex_unlock(&hub.mu);
		return 0;
	}
}

static void
unlink_stream(struct sse_stream *s)
{
	if (s->prev != NULL)
		s->prev->next = s->next;
	else if (hub.streams == s)
		hub.streams = s->next;
	if (s->next != NULL)
		s->next->prev = s->prev;
	s->next = s->prev = NULL;
	hub.nstreams--;
}

static void
stream_free(void *cls)
{
	struct sse_stream *s = cls;

	if (s == NULL)
		return;
	pthread_mutex_lock(&hub.mu);
	unlink_stream(s);
	pthread_mutex_unlock(&hub.mu);
	for (int i = 0; i < s->nenvs; i++)
		free(s->envs[i]);
	free(s->envs);
	free(s->job);
	free(s->environment);
	free(s->team);
	free(s->buf);
	free(s);
}

struct sse_stream *
sse_open(const struct sse_opts *o, void *conn, struct err *e)
{
	struct sse_stream *s, *x;
	int mine = 0;
	bool all = false;

	pthread_mutex_lock(&hub.mu);
	for (x = hub.streams; x != NULL; x = x->next)
		mine += strcmp(x->token, o->token_id) == 0;
	if (mine >= cfg.sse_per_token || hub.nstreams >= cfg.sse_max_streams || hub.stopping) {
		hub.refused++;
		pthread_mutex_unlock(&hub.mu);
		err_set(e, 429, "events.too_many_streams", "too many event streams are open%s",
		    mine >= cfg.sse_per_token ? " for this token" : "");
		e->retry_after = 5;
		return NULL;
	}
	if ((s = calloc(1, sizeof(*s))) == NULL)
		abort();
	s->conn = conn;
	snprintf(s->token, sizeof(s->token), "%s", o->token_id);
	s->job = o->job_id ? strdup(o->job_id) : NULL;
	s->environment = o->environment ? strdup(o->environment) : NULL;
	s->team = o->team ? strdup(o->team) : NULL;
	for (int i = 0; i < o->nenvs; i++)
		all = all || strcmp(o->envs[i], "*") == 0;
	if (!all) {
		s->envs = calloc((size_t)o->nenvs + 1, sizeof(char *));
		for (int i = 0; i < o->nenvs; i++)
			s->envs[i] = strdup(o->envs[i]);
		s->nenvs = o->nenvs;
	}
	s->cursor = o->after;
	s->last_write = now_s();
	append(s, "retry: 3000\n\n", 13);	/* sends the headers at once */
	s->next = hub.streams;
	if (hub.streams != NULL)
		hub.streams->prev = s;
	hub.streams = s;
	hub.nstreams++;
	hub.opened++;
	pthread_mutex_unlock(&hub.mu);
	return s;
}

void *
sse_response(struct sse_stream *s)
{
	struct MHD_Response *r = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 2048,
	    reader, s, stream_free);

	if (r == NULL)
		stream_free(s);
	return r;
}

void
sse_discard(struct sse_stream *s)
{
	stream_free(s);
}

/* ---- the hub thread */

static void
publish(json_t *items)
{
	size_t i;
	json_t *ev;

	pthread_mutex_lock(&hub.mu);
	json_array_foreach(items, i, ev) {
		long long seq = json_integer_value(json_object_get(ev, "seq"));
		struct ring_ev *r;
		size_t n = 0;
		char *fr;

		if (seq <= hub.published || (fr = frame_of(ev, seq, &n)) == NULL)
			continue;
		if (hub.count == RING) {
			r = &hub.ring[hub.start];
			hub.covered = r->seq;
			free(r->env);
			free(r->job);
			free(r->team);
			free(r->frame);
			hub.start = (hub.start + 1) % RING;
			hub.count--;
		}
		r = &hub.ring[(hub.start + hub.count) % RING];
		r->seq = seq;
		r->env = strdup(json_string_value(json_object_get(ev, "environment")));
		r->job = strdup(json_string_value(json_object_get(ev, "job_id")));
		r->team = json_string_value(json_object_get(ev, "team")) == NULL ? NULL :
		    strdup(json_string_value(json_object_get(ev, "team")));
		r->frame = fr;
		r->len = n;
		hub.count++;
		hub.published = seq;
		hub.sent++;
	}
	pthread_mutex_unlock(&hub.mu);
}

/* Numbers what committed, then takes every numbered event after published into the ring. */
static bool
catch_up(void)
{
	struct events_filter all = { 0 };
	struct err e = { 0 };
	long long head;
	int numbered;

	if (!events_sequence(&head, &numbered, &e))
		goto fail;
	for (;;) {
		struct db *c = db_acquire(5000, &e);
		json_t *items = NULL;
		long long after;
		bool ok;
		size_t n;

		if (c == NULL)
			goto fail;
		pthread_mutex_lock(&hub.mu);
		if (!hub.ready) {
			pthread_mutex_unlock(&hub.mu);
			ok = events_head(c, &after, &e);
			pthread_mutex_lock(&hub.mu);
			if (ok) {
				hub.published = hub.covered = after;
				hub.ready = true;
			}
		} else {
			ok = true;
		}
		after = hub.published;
		pthread_mutex_unlock(&hub.mu);
		ok = ok && events_read(c, after, 0, &all, 1000, &items, &e);
		db_release(c);
		if (!ok)
			goto fail;
		publish(items);
		n = json_array_size(items);
		json_decref(items);
		if (n < 1000)
			return true;
	}
fail:
	log_warn(NULL, "sse", "event hub cannot read events", "{s:s}", "error", e.msg);
	return false;
}

/* Resumes the suspended streams that have a matching event or a heartbeat due. */
static void
wake(void)
{
	time_t now = now_s();

	pthread_mutex_lock(&hub.mu);
	for (struct sse_stream *s = hub.streams; s != NULL; s = s->next) {
		bool want = hub.stopping || s->ended || now - s->last_write >= cfg.sse_heartbeat_s;

		if (!s->suspended)
			continue;
		if (!want && hub.ready && s->cursor < hub.published) {
			if (s->cursor < hub.covered) {
				want = true;
			} else {
				for (int i = ring_after(s->cursor); i < hub.count && !want; i++) {
					struct ring_ev *r = &hub.ring[(hub.start + i) % RING];

					want = matches(s, r->env, r->job, r->team);
				}
				if (!want)
					s->cursor = hub.published;	/* nothing for it */
			}
		}
		if (want) {
			s->suspended = false;
			MHD_resume_connection(s->conn);
		}
	}
	pthread_mutex_unlock(&hub.mu);
}

#define TOKEN_CHECK_S	2	/* a revoked token's streams end within this (and a hub turn) */

/* Ends the streams whose token is no longer valid (revoked or deleted): the token ids of
 * the open streams go to the database as one JSON array, those without a live row come
 * back; their streams are marked and resumed, and their readers end them. */
static void
end_revoked(void)
{
	static const char sql[] = "SELECT x FROM jsonb_array_elements_text($1::jsonb) x"
	    " WHERE NOT EXISTS (SELECT 1 FROM api_tokens t WHERE t.id::text = x"
	    " AND t.revoked_at IS NULL)";
	static time_t last;
	json_t *ids = json_array();
	struct err e = { 0 };
	struct db *c = NULL;
	PGresult *r = NULL;
	char *text = NULL;

	if (now_s() - last < TOKEN_CHECK_S)
		goto cleanup;
	last = now_s();
	pthread_mutex_lock(&hub.mu);
	for (struct sse_stream *s = hub.streams; s != NULL; s = s->next)
		if (!s->ended)
			json_array_append_new(ids, json_string(s->token));
	pthread_mutex_unlock(&hub.mu);
	if (json_array_size(ids) == 0 || (text = json_dumps(ids, JSON_COMPACT)) == NULL)
		goto cleanup;
	if ((c = db_acquire(1000, &e)) == NULL)
		goto cleanup;
	{
		const char *p[1] = { text };

		if (!db_exec(c, sql, 1, p, &r, &e))
			goto cleanup;
	}
	pthread_mutex_lock(&hub.mu);
	for (int i = 0; i < PQntuples(r); i++)
		for (struct sse_stream *s = hub.streams; s != NULL; s = s->next)
			if (!s->ended && strcmp(s->token, PQgetvalue(r, i, 0)) == 0) {
				s->ended = true;
				log_info(NULL, "sse", "stream of a revoked token ended", "{s:s}",
				    "token", s->token);
			}
	pthread_mutex_unlock(&hub.mu);
cleanup:
	PQclear(r);
	db_release(c);
	free(text);
	json_decref(ids);
}

static bool
stopping(void)
{
	bool s;

	pthread_mutex_lock(&hub.mu);
	s = hub.stopping;
	pthread_mutex_unlock(&hub.mu);
	return s;
}

static void *
hub_main(void *arg)
{
	PGconn *lc = NULL;

	(void)arg;
	while (!stopping()) {
		if (!listen_alive(lc)) {
			listen_close(lc);
			if ((lc = listen_open(cfg.database_url, "fleet_events")) == NULL) {
				listen_wait(NULL, 1000);
				wake();
				continue;
			}
		}
		/* writers do not NOTIFY (their commits stay unserialized): poll for rows to
		 * number; another replica's sequencer NOTIFYs fleet_events after numbering */
		listen_wait(lc, 250);
		catch_up();
		end_revoked();
		wake();
	}
	listen_close(lc);
	return NULL;
}

static void
sse_metrics(char **buf, size_t *len, size_t *cap)
{
	int n;
	unsigned long opened, refused, sent;
	long long published;

	pthread_mutex_lock(&hub.mu);
	n = hub.nstreams;
	opened = hub.opened;
	refused = hub.refused;
	sent = hub.sent;
	published = hub.published;
	pthread_mutex_unlock(&hub.mu);
	textbuf_appendf(buf, len, cap,
	    "# HELP fleetd_sse_streams Event streams open on this replica.\n"
	    "# TYPE fleetd_sse_streams gauge\nfleetd_sse_streams %d\n"
	    "# HELP fleetd_sse_streams_opened_total Event streams opened.\n"
	    "# TYPE fleetd_sse_streams_opened_total counter\nfleetd_sse_streams_opened_total %lu\n"
	    "# HELP fleetd_sse_streams_refused_total Event streams refused (per-token or total bound).\n"
	    "# TYPE fleetd_sse_streams_refused_total counter\nfleetd_sse_streams_refused_total %lu\n"
	    "# HELP fleetd_events_published_total Job events taken into the hub by this replica.\n"
	    "# TYPE fleetd_events_published_total counter\nfleetd_events_published_total %lu\n"
	    "# HELP fleetd_events_head Highest event sequence number seen by this replica.\n"
	    "# TYPE fleetd_events_head gauge\nfleetd_events_head %lld\n",
	    n, opened, refused, sent, published);
}

bool
sse_start(struct err *e)
{
	static bool registered;

	if (!registered) {
		metrics_register(sse_metrics);
		registered = true;
	}
	pthread_mutex_lock(&hub.mu);
	hub.stopping = false;
	pthread_mutex_unlock(&hub.mu);
	if (pthread_create(&hub.thread, NULL, hub_main, NULL) != 0)
		return err_set(e, 500, "sse.start", "cannot start the event hub");
	hub.running = true;
	return true;
}

void
sse_stop(void)
{
	pthread_mutex_lock(&hub.mu);
	hub.stopping = true;
	pthread_mutex_unlock(&hub.mu);
	wake();		/* resumes every suspended stream: each reader ends its stream */
	if (hub.running)
		pthread_join(hub.thread, NULL);
	hub.running = false;
	pthread_mutex_lock(&hub.mu);
	for (; hub.count > 0; hub.count--) {
		struct ring_ev *r = &hub.ring[hub.start];

		free(r->env);
		free(r->job);
		free(r->team);
		free(r->frame);
		hub.start = (hub.start + 1) % RING;
	}
	hub.start = 0;
	hub.ready = false;
	pthread_mutex_unlock(&hub.mu);
}
