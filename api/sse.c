/* sse: the event hub.  The ring holds every event with covered < seq <= published, as
 * ready frames; a stream whose cursor is older than the ring suspends and waits for the
 * replay thread, which reads one batch of it from the database (bounded by published, so
 * the two never disagree) and resumes it: an HTTP worker never waits on the database for a
 * stream, and replays hold one pool connection between them.  A stream with nothing to send
 * suspends its connection; the hub resumes it when a matching event or a heartbeat is due,
 * or when it must end (credential revoked, expired or changed). */
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
#define REPLAY_SCAN	20000	/* seq numbers one replay read may scan (a sparse scope) */

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
	char		*scope;		/* the environments as opened, joined by "," */
	int		 role;		/* the caller's role when it opened */
	bool		 oidc;		/* token names an OIDC user, not an api_tokens row */
	long long	 expires;	/* unix s the credential ends; 0 = never */
	long long	 cursor;	/* last seq considered */
	bool		 suspended;	/* by its reader; only the hub resumes it */
	bool		 ended;		/* credential revoked, expired or changed: the reader
					 * ends it */
	bool		 replay;	/* suspended for the replay thread, which resumes it */
	bool		 failed;	/* the replay could not read: the reader ends it */
	unsigned long	 ticket;	/* replay order: lowest first */
	long long	 replayed;	/* events replayed from the database so far */
	char		*buf;		/* frames not yet handed to MHD */
	size_t		 len, off, cap;
	time_t		 last_write;
};

static struct {
	pthread_mutex_t	 mu;
	pthread_cond_t	 replay_cv;	/* a stream waits for replay, or stopping */
	pthread_cond_t	 replay_done;	/* replay_cur was let go */
	pthread_t	 thread, replayer;
	bool		 running, replaying, stopping, ready;
	struct sse_stream *replay_cur;	/* read by the replay thread outside mu */
	unsigned long	 tickets, replays, resets;
	long long	 published, covered;
	struct ring_ev	 ring[RING];
	int		 start, count;
	struct sse_stream *streams;
	int		 nstreams;
	unsigned long	 opened, refused, sent;
} hub = { .mu = PTHREAD_MUTEX_INITIALIZER, .replay_cv = PTHREAD_COND_INITIALIZER,
	.replay_done = PTHREAD_COND_INITIALIZER };

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
		if (s->off < s->len)
			return drain(s, out, max);
		pthread_mutex_lock(&hub.mu);
		if (hub.stopping || s->ended || s->failed) {
			bool failed = s->failed && !s->ended && !hub.stopping;

			pthread_mutex_unlock(&hub.mu);
			return failed ? MHD_CONTENT_READER_END_WITH_ERROR :	/* client resumes */
			    MHD_CONTENT_READER_END_OF_STREAM;
		}
		if (hub.ready && s->cursor < hub.published) {
			if (s->cursor >= hub.covered) {
				fill_from_ring(s);
				pthread_mutex_unlock(&hub.mu);
				continue;
			}
			/* older than the ring: the replay thread reads it, never this one */
			s->replay = true;
			s->ticket = ++hub.tickets;
			s->suspended = true;
			MHD_suspend_connection(s->conn);
			pthread_cond_signal(&hub.replay_cv);
			pthread_mutex_unlock(&hub.mu);
			return 0;
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
	while (hub.replay_cur == s)	/* its connection is suspended: not expected */
		pthread_cond_wait(&hub.replay_done, &hub.mu);
	unlink_stream(s);
	pthread_mutex_unlock(&hub.mu);
	for (int i = 0; i < s->nenvs; i++)
		free(s->envs[i]);
	free(s->envs);
	free(s->job);
	free(s->environment);
	free(s->team);
	free(s->scope);
	free(s->buf);
	free(s);
}

int
sse_per_principal(void)
{
	if (cfg.sse_per_token > 0)
		return cfg.sse_per_token;
	return cfg.threads > 1 ? cfg.threads - 1 : 1;
}

/* The environments as one string, to tell a change of scope ("*" when all); malloc'd. */
static char *
scope_of(const char *const *envs, int nenvs)
{
	char *buf = NULL;
	size_t len = 0, cap = 0;

	for (int i = 0; i < nenvs; i++)
		if (strcmp(envs[i], "*") == 0)
			return strdup("*");
	textbuf_append(&buf, &len, &cap, "", 0);
	for (int i = 0; i < nenvs; i++)
		textbuf_appendf(&buf, &len, &cap, "%s%s", i ? "," : "", envs[i]);
	return buf;
}

struct sse_stream *
sse_open(const struct sse_opts *o, void *conn, struct err *e)
{
	struct sse_stream *s, *x;
	int mine = 0, cap = sse_per_principal();
	bool all = false;

	pthread_mutex_lock(&hub.mu);
	for (x = hub.streams; x != NULL; x = x->next)
		mine += strcmp(x->token, o->token_id) == 0 && !x->ended;
	if (mine >= cap || hub.nstreams >= cfg.sse_max_streams || hub.stopping) {
		hub.refused++;
		pthread_mutex_unlock(&hub.mu);
		err_set(e, 429, "events.too_many_streams", "too many event streams are open%s",
		    mine >= cap ? " for this token" : "");
		if (mine >= cap)
			snprintf(e->detail, sizeof(e->detail), "a token (or an OIDC user) may hold "
			    "%d event streams open at once; close one and retry", cap);
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
	s->scope = scope_of(o->envs, o->nenvs);
	s->role = o->role;
	s->oidc = o->oidc;
	s->expires = o->expires;
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
	time_t now = now_s(), wall = time(NULL);

	pthread_mutex_lock(&hub.mu);
	for (struct sse_stream *s = hub.streams; s != NULL; s = s->next) {
		bool want;

		if (!s->ended && s->expires > 0 && wall >= s->expires) {
			s->ended = true;	/* the credential it was opened with expired */
			log_info(NULL, "sse", "stream of an expired token ended", "{s:s}",
			    "principal", s->token);
		}
		want = hub.stopping || s->ended || now - s->last_write >= cfg.sse_heartbeat_s;
		/* the replay thread resumes the streams it holds (sse_stop joins it first) */
		if (!s->suspended || (s->replay && !hub.stopping))
			continue;
		s->replay = false;
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

static const char *const role_names[] = { "", "viewer", "submitter", "operator", "admin" };

/* Ends the streams of static tokens that are no longer what they were when the stream
 * opened (revoked, deleted, or another role or team): the open streams' {id, role, team}
 * go to the database as one JSON array, those without a matching live row come back;
 * their streams are marked and resumed, and their readers end them.  OIDC users' streams
 * end with their token's expiry or a change of claims (sse_principal_seen). */
static void
end_revoked(void)
{
	static const char sql[] = "SELECT x->>'id' FROM jsonb_array_elements($1::jsonb) x"
	    " WHERE NOT EXISTS (SELECT 1 FROM api_tokens t WHERE t.id::text = x->>'id'"
	    " AND t.revoked_at IS NULL AND t.role = x->>'role'"
	    " AND (x->>'role' = 'admin' OR t.team IS NOT DISTINCT FROM x->>'team'))";
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
		if (!s->ended && !s->oidc)
			json_array_append_new(ids, json_pack("{s:s, s:s, s:s?}", "id", s->token,
			    "role", role_names[s->role >= 0 && s->role <= 4 ? s->role : 0],
			    "team", s->team));
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
			if (!s->ended && !s->oidc && strcmp(s->token, PQgetvalue(r, i, 0)) == 0) {
				s->ended = true;
				log_info(NULL, "sse", "stream of a revoked or changed token ended",
				    "{s:s}", "token", s->token);
			}
	pthread_mutex_unlock(&hub.mu);
cleanup:
	PQclear(r);
	db_release(c);
	free(text);
	json_decref(ids);
}

void
sse_principal_seen(const char *id, int role, const char *team, const char *const *envs,
    int nenvs)
{
	char *scope = NULL;

	pthread_mutex_lock(&hub.mu);
	for (struct sse_stream *s = hub.streams; s != NULL; s = s->next) {
		if (s->ended || !s->oidc || strcmp(s->token, id) != 0)
			continue;
		if (scope == NULL)
			scope = scope_of(envs, nenvs);
		if (s->role != role || strcmp(s->team ? s->team : "", team ? team : "") != 0 ||
		    strcmp(s->scope, scope) != 0) {
			s->ended = true;	/* the hub resumes it; its reader ends it */
			log_info(NULL, "sse", "stream of a user whose groups changed ended",
			    "{s:s}", "principal", s->token);
		}
	}
	pthread_mutex_unlock(&hub.mu);
	free(scope);
}

/* ---- the replay thread */

/* One read of s's events after cursor (<= upto, at most REPLAY_SCAN numbers on), as
 * frames in *out (malloc'd); *next the new cursor, *n the events.  Outside mu: s's filter
 * does not change while it is open, and s is not freed while it is hub.replay_cur. */
static bool
replay_read(struct sse_stream *s, long long cursor, long long upto, char **out,
    size_t *olen, long long *next, int *n)
{
	struct events_filter f = { .job_id = s->job, .environment = s->environment,
		.envs = (const char *const *)s->envs, .nenvs = s->nenvs, .team = s->team };
	struct err e = { 0 };
	struct db *c = db_acquire(5000, &e);
	json_t *items = NULL, *ev;
	size_t i, cap = 0;
	bool ok;

	if (c == NULL)
		goto fail;
	if (upto - cursor > REPLAY_SCAN)
		upto = cursor + REPLAY_SCAN;
	ok = events_read(c, cursor, upto, &f, DB_BATCH, &items, &e);
	db_release(c);
	if (!ok)
		goto fail;
	*next = upto;
	*n = 0;
	json_array_foreach(items, i, ev) {
		long long seq = json_integer_value(json_object_get(ev, "seq"));
		size_t len;
		char *fr = frame_of(ev, seq, &len);

		if (fr != NULL)
			textbuf_append(out, olen, &cap, fr, len);
		free(fr);
		(*n)++;
		if (json_array_size(items) == DB_BATCH)
			*next = seq;	/* a full batch: the next read starts after it */
	}
	json_decref(items);
	return true;
fail:
	log_warn(NULL, "sse", "event replay failed", "{s:s}", "error", e.msg);
	return false;
}

/* Past the replay bound: the stream skips to what the ring holds, and is told so by a
 * `reset` event (id: where it goes on from) naming the events it did not get; under mu. */
static void
replay_reset(struct sse_stream *s)
{
	char *f = NULL;
	int n;

	n = asprintf(&f, "id: %lld\nevent: reset\ndata: {\"code\":\"events.replay_limit\","
	    "\"detail\":\"more than %d events to replay: the events after %lld up to %lld are "
	    "not sent; list them with GET /v1/events (or the job's events) and go on from "
	    "this stream\",\"after\":%lld,\"upto\":%lld}\n\n", hub.published,
	    cfg.sse_replay_max, s->cursor, hub.published, s->cursor, hub.published);
	if (n > 0)
		append(s, f, (size_t)n);
	free(f);
	s->cursor = hub.published;
	hub.resets++;
}

static void *
replay_main(void *arg)
{
	(void)arg;
	pthread_mutex_lock(&hub.mu);
	while (!hub.stopping) {
		struct sse_stream *s = NULL;
		long long cursor, upto, next = 0;
		char *out = NULL;
		size_t olen = 0;
		int n = 0;
		bool ok = true, skip;

		for (struct sse_stream *x = hub.streams; x != NULL; x = x->next)
			if (x->replay && (s == NULL || x->ticket < s->ticket))
				s = x;
		if (s == NULL) {
			pthread_cond_wait(&hub.replay_cv, &hub.mu);
			continue;
		}
		hub.replay_cur = s;
		cursor = s->cursor;
		upto = hub.published;
		skip = s->ended || cursor >= hub.covered;	/* ended, or the ring has it now */
		pthread_mutex_unlock(&hub.mu);
		if (!skip)
			ok = replay_read(s, cursor, upto, &out, &olen, &next, &n);
		pthread_mutex_lock(&hub.mu);
		if (!skip && ok) {
			if (olen > 0)
				append(s, out, olen);
			s->cursor = next;
			s->replayed += n;
			hub.replays += (unsigned long)n;
			/* a job's stream replays its one job's history whole */
			if (s->job == NULL && s->replayed >= cfg.sse_replay_max &&
			    s->cursor < hub.covered)
				replay_reset(s);
		}
		s->failed = s->failed || !ok;
		s->replay = false;
		s->suspended = false;
		hub.replay_cur = NULL;
		pthread_cond_broadcast(&hub.replay_done);
		MHD_resume_connection(s->conn);
		free(out);
	}
	pthread_mutex_unlock(&hub.mu);
	return NULL;
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
	unsigned long opened, refused, sent, replays, resets;
	long long published;

	pthread_mutex_lock(&hub.mu);
	n = hub.nstreams;
	replays = hub.replays;
	resets = hub.resets;
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
	    "# TYPE fleetd_events_head gauge\nfleetd_events_head %lld\n"
	    "# HELP fleetd_sse_replayed_total Events replayed from the database to resumed streams.\n"
	    "# TYPE fleetd_sse_replayed_total counter\nfleetd_sse_replayed_total %lu\n"
	    "# HELP fleetd_sse_resets_total Resumed streams told to re-list (replay bound).\n"
	    "# TYPE fleetd_sse_resets_total counter\nfleetd_sse_resets_total %lu\n",
	    n, opened, refused, sent, published, replays, resets);
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
	if (pthread_create(&hub.replayer, NULL, replay_main, NULL) != 0)
		return err_set(e, 500, "sse.start", "cannot start the event replay thread");
	hub.replaying = true;
	return true;
}

void
sse_stop(void)
{
	pthread_mutex_lock(&hub.mu);
	hub.stopping = true;
	pthread_cond_broadcast(&hub.replay_cv);
	pthread_mutex_unlock(&hub.mu);
	if (hub.replaying)	/* lets its stream go before wake resumes the others */
		pthread_join(hub.replayer, NULL);
	hub.replaying = false;
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
