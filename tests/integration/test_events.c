/* test_events: the SSE streams of job events — resume with Last-Event-ID across dropped
 * connections loses and repeats nothing over 10,000 events committed out of id order;
 * 500 idle streams stay within 32 MiB of fleetd's memory and all get the next event;
 * a scoped token never sees another environment's event; roles, bounds, heartbeats. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <libpq-fe.h>

#include "tests/integration/harness.h"

#define NEVENTS	10000
#define NIDLE	500

static struct fleetd_proc fd;
static char dburl[512];
static char *root, *viewer_a, *operator_a, *admin_b;

static const char *const JOB_A = "d1000000-0000-4000-8000-00000000000a";

/* ---- a small SSE client over a raw socket (chunked transfer decoded by hand) */

struct sse {
	int	 fd;
	char	 raw[65536];
	size_t	 rlen;
	char	*body;		/* decoded body not yet parsed into events */
	size_t	 blen, bcap;
	long	 chunk_left;	/* -1: expecting a chunk size line */
	int	 status;
	char	 ctype[64];
	int	 heartbeats;
	bool	 closed;
	char	 event[32];	/* the event name of the last event read ("" = message) */
};

static int sse_port;	/* the fleetd sse_open connects to; 0 = fd */

static void
body_add(struct sse *s, const char *p, size_t n)
{
	if (s->blen + n + 1 > s->bcap) {
		s->bcap = (s->blen + n + 1) * 2;
		s->body = realloc(s->body, s->bcap);
		assert_non_null(s->body);
	}
	memcpy(s->body + s->blen, p, n);
	s->blen += n;
	s->body[s->blen] = '\0';
}

/* Moves whole chunks from raw to body. */
static void
dechunk(struct sse *s)
{
	for (;;) {
		if (s->chunk_left < 0) {
			char *eol = memmem(s->raw, s->rlen, "\r\n", 2);
			size_t used;

			if (eol == NULL)
				return;
			s->chunk_left = strtol(s->raw, NULL, 16);
			used = (size_t)(eol - s->raw) + 2;
			memmove(s->raw, s->raw + used, s->rlen - used);
			s->rlen -= used;
			if (s->chunk_left == 0) {
				s->closed = true;
				return;
			}
		}
		if (s->rlen < (size_t)s->chunk_left + 2) {
			/* hand over what is there, keep the rest of the chunk pending */
			size_t n = s->rlen < (size_t)s->chunk_left ? s->rlen : (size_t)s->chunk_left;

			body_add(s, s->raw, n);
			memmove(s->raw, s->raw + n, s->rlen - n);
			s->rlen -= n;
			s->chunk_left -= (long)n;
			if (s->chunk_left > 0 || s->rlen < 2)
				return;
		} else {
			body_add(s, s->raw, (size_t)s->chunk_left);
			memmove(s->raw, s->raw + s->chunk_left, s->rlen - (size_t)s->chunk_left);
			s->rlen -= (size_t)s->chunk_left;
			s->chunk_left = 0;
		}
		/* the CRLF after the chunk */
		memmove(s->raw, s->raw + 2, s->rlen - 2);
		s->rlen -= 2;
		s->chunk_left = -1;
	}
}

static bool
fill(struct sse *s, int ms)
{
	struct pollfd p = { .fd = s->fd, .events = POLLIN };
	ssize_t n;

	if (s->closed || poll(&p, 1, ms) <= 0)
		return false;
	n = read(s->fd, s->raw + s->rlen, sizeof(s->raw) - s->rlen);
	if (n <= 0) {
		s->closed = true;
		return false;
	}
	s->rlen += (size_t)n;
	return true;
}

/* Connects and reads the answer's head; the status and content type are in s. */
static void
sse_open(struct sse *s, const char *path, const char *token, const char *last_id)
{
	struct sockaddr_in a = { .sin_family = AF_INET,
		.sin_port = htons((uint16_t)(sse_port ? sse_port : fd.port)) };
	char req[1024], *end;

	memset(s, 0, sizeof(*s));
	s->chunk_left = -1;
	inet_pton(AF_INET, "127.0.0.1", &a.sin_addr);
	s->fd = socket(AF_INET, SOCK_STREAM, 0);
	assert_true(s->fd >= 0);
	assert_int_equal(connect(s->fd, (struct sockaddr *)&a, sizeof(a)), 0);
	snprintf(req, sizeof(req), "GET %s HTTP/1.1\r\nHost: 127.0.0.1\r\n%s%s%s%s%s%s\r\n",
	    path, token ? "Authorization: Bearer " : "", token ? token : "", token ? "\r\n" : "",
	    last_id ? "Last-Event-ID: " : "", last_id ? last_id : "", last_id ? "\r\n" : "");
	assert_int_equal(write(s->fd, req, strlen(req)), (ssize_t)strlen(req));
	while ((end = memmem(s->raw, s->rlen, "\r\n\r\n", 4)) == NULL)
		if (!fill(s, 10000))
			fail_msg("no answer head for %s", path);
	*end = '\0';
	s->status = atoi(s->raw + 9);
	{
		char *ct = strcasestr(s->raw, "\r\nContent-Type: ");

		if (ct != NULL)
			sscanf(ct + 16, "%63[^\r]", s->ctype);
	}
	if (strcasestr(s->raw, "Transfer-Encoding: chunked") == NULL)
		s->chunk_left = 1L << 40;	/* not chunked: everything is body */
	{
		size_t used = (size_t)(end - s->raw) + 4;

		memmove(s->raw, s->raw + used, s->rlen - used);
		s->rlen -= used;
	}
	dechunk(s);
}

static void
sse_close(struct sse *s)
{
	if (s->fd >= 0)
		close(s->fd);
	s->fd = -1;
	free(s->body);
	s->body = NULL;
}

/* The next event: its id and data (malloc'd); false on timeout or end of stream. */
static long
ms_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000L + ts.tv_nsec / 1000000L;
}

static bool
sse_next(struct sse *s, int ms, long long *id, char **data)
{
	long deadline = ms_now() + ms;

	for (;;) {
		char *end = s->body ? strstr(s->body, "\n\n") : NULL;

		if (end != NULL) {
			size_t used = (size_t)(end - s->body) + 2;
			char *block = strndup(s->body, (size_t)(end - s->body)), *line, *save;
			bool ev = false;

			memmove(s->body, s->body + used, s->blen - used + 1);
			s->blen -= used;
			*id = -1;
			s->event[0] = '\0';
			for (line = strtok_r(block, "\n", &save); line; line = strtok_r(NULL, "\n",
			    &save)) {
				if (strncmp(line, "id: ", 4) == 0)
					*id = atoll(line + 4);
				else if (strncmp(line, "event: ", 7) == 0)
					snprintf(s->event, sizeof(s->event), "%s", line + 7);
				else if (strncmp(line, "data: ", 6) == 0) {
					*data = strdup(line + 6);
					ev = true;
				} else if (line[0] == ':')
					s->heartbeats++;
			}
			free(block);
			if (ev)
				return true;
			continue;
		}
		if (ms_now() >= deadline || !fill(s, (int)(deadline - ms_now())))
			return false;
		dechunk(s);
	}
}

/* ---- seeding */

static long
rss_kib(pid_t pid)
{
	char path[64], line[256];
	long kib = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	if ((f = fopen(path, "r")) == NULL)
		return -1;
	while (fgets(line, sizeof(line), f) != NULL)
		if (strncmp(line, "VmRSS:", 6) == 0)
			kib = atol(line + 6);
	fclose(f);
	return kib;
}

static int
setup(void **state)
{
	const char *env[] = { "FLEETD_WORKERS=none", "FLEETD_SSE_PER_TOKEN=500",
		"FLEETD_SSE_MAX_STREAMS=600", "FLEETD_CONN_LIMIT=1024", "FLEETD_CONN_PER_IP=1024",
		"FLEETD_SSE_HEARTBEAT=2", "FLEETD_LOG_LEVEL=info",
		"FLEETD_MASTER_KEY=ZXZlbnRzLXRlc3QtbWFzdGVyLWtleS0zMi1ieXRlcyE=", NULL };

	(void)state;
	harness_db_create("events", dburl, sizeof(dburl));
	harness_fleetd_start(&fd, dburl, env);
	root = harness_keep(harness_token(dburl, "admin", "*"));
	harness_post_created(root, "/v1/environments", "{\"name\":\"enva\"}");
	harness_post_created(root, "/v1/environments", "{\"name\":\"envb\"}");
	viewer_a = harness_keep(harness_token(dburl, "viewer", "enva"));
	operator_a = harness_keep(harness_token(dburl, "operator", "enva"));
	admin_b = harness_keep(harness_token(dburl, "admin", "envb"));
	harness_sql("INSERT INTO queues (id, name, environment) VALUES"
	    " ('c1000000-0000-4000-8000-00000000000a', 'qa', 'enva'),"
	    " ('c1000000-0000-4000-8000-00000000000b', 'qb', 'envb')");
	harness_sql("INSERT INTO jobs (id, name, environment, queue_id, kind, priority_class,"
	    " priority, spec)"
	    " VALUES ('d1000000-0000-4000-8000-00000000000a', 'job-a', 'enva',"
	    " 'c1000000-0000-4000-8000-00000000000a', 'RayJob', 'normal', 100, '{}'),"
	    " ('d1000000-0000-4000-8000-00000000000b', 'job-b', 'envb',"
	    " 'c1000000-0000-4000-8000-00000000000b', 'RayJob', 'normal', 100, '{}')");
	return 0;
}

/* ---- tests */

/* Writers on two connections commit batches in the reverse of their id order, while a
 * reader follows /v1/events and drops its connection every few hundred events, resuming
 * with Last-Event-ID: every row arrives exactly once, ids strictly increase. */
static void
test_resume_10000(void **state)
{
	PGconn *w[2];
	struct sse s;
	unsigned char *seen = calloc(NEVENTS * 4 + 16, 1);
	long long last = -1, id, first_row = -1;
	int got = 0, drops = 0, inserted = 0, dup = 0;
	char *data, path[] = "/v1/events?follow=true", lid[32];
	time_t deadline = time(NULL) + 60;

	(void)state;
	for (int i = 0; i < 2; i++) {
		w[i] = PQconnectdb(dburl);
		assert_int_equal(PQstatus(w[i]), CONNECTION_OK);
	}
	sse_open(&s, path, viewer_a, NULL);
	assert_int_equal(s.status, 200);
	assert_string_equal(s.ctype, "text/event-stream");
	first_row = harness_sql_long("SELECT coalesce(max(id), 0) FROM job_events");
	while (got < NEVENTS && time(NULL) < deadline) {
		/* two open transactions; the later id commits first */
		if (inserted < NEVENTS) {
			char sql[256];

			for (int i = 0; i < 2; i++) {
				PQclear(PQexec(w[i], "BEGIN"));
				snprintf(sql, sizeof(sql), "INSERT INTO job_events (job_id, type, message)"
				    " SELECT '%s', 'test', 'n' || g FROM generate_series(1, 250) g",
				    JOB_A);
				PGresult *r = PQexec(w[i], sql);

				assert_int_equal(PQresultStatus(r), PGRES_COMMAND_OK);
				PQclear(r);
			}
			PQclear(PQexec(w[1], "COMMIT"));
			PQclear(PQexec(w[0], "COMMIT"));
			inserted += 500;
		}
		while (sse_next(&s, inserted < NEVENTS ? 50 : 3000, &id, &data)) {
			json_t *ev = json_loads(data, 0, NULL);
			long long row = atoll(json_string_value(json_object_get(ev, "id")));

			assert_true(id > last);
			assert_int_equal(json_integer_value(json_object_get(ev, "seq")), id);
			last = id;
			assert_true(row > first_row && row - first_row <= NEVENTS * 4);
			if (seen[row - first_row]++)
				dup++;
			got++;
			json_decref(ev);
			free(data);
			if (got % 997 == 0) {	/* drop it, resume where it was */
				sse_close(&s);
				snprintf(lid, sizeof(lid), "%lld", last);
				sse_open(&s, path, viewer_a, lid);
				assert_int_equal(s.status, 200);
				drops++;
			}
			if (got == NEVENTS)
				break;
		}
	}
	sse_close(&s);
	print_message("events: %d of %d received over %d reconnections, %d repeated\n", got,
	    NEVENTS, drops, dup);
	assert_int_equal(dup, 0);
	assert_int_equal(got, NEVENTS);
	for (int i = 1; i <= NEVENTS; i++)
		assert_int_equal(seen[i], 1);
	for (int i = 0; i < 2; i++)
		PQfinish(w[i]);
	free(seen);
}

/* A token of enva never receives an event of envb, on /v1/events or a job's stream, even
 * when asking for envb by name; the job stream of envb's job is 404 for it. */
static void
test_scope(void **state)
{
	struct sse all, mine, other, job;
	long long id;
	char *data;
	int n_a = 0;

	(void)state;
	sse_open(&all, "/v1/events?follow=true", viewer_a, NULL);
	sse_open(&other, "/v1/events?follow=true&environment=envb", viewer_a, NULL);
	sse_open(&mine, "/v1/events?follow=true", admin_b, NULL);
	assert_int_equal(all.status, 200);
	assert_int_equal(other.status, 200);
	sse_open(&job, "/v1/jobs/d1000000-0000-4000-8000-00000000000b/events?follow=true",
	    viewer_a, NULL);
	assert_int_equal(job.status, 404);
	sse_close(&job);
	harness_sql("INSERT INTO job_events (job_id, type, message) SELECT CASE WHEN g %% 2 = 0 THEN"
	    " 'd1000000-0000-4000-8000-00000000000a'::uuid ELSE"
	    " 'd1000000-0000-4000-8000-00000000000b'::uuid END, 'scope', 'n' || g"
	    " FROM generate_series(1, 40) g");
	while (sse_next(&all, 1500, &id, &data)) {
		json_t *ev = json_loads(data, 0, NULL);

		assert_string_equal(json_string_value(json_object_get(ev, "environment")), "enva");
		assert_string_equal(json_string_value(json_object_get(ev, "job_name")), "job-a");
		n_a++;
		json_decref(ev);
		free(data);
	}
	assert_int_equal(n_a, 20);
	assert_false(sse_next(&other, 500, &id, &data));
	n_a = 0;
	while (sse_next(&mine, 500, &id, &data)) {
		assert_non_null(strstr(data, "\"environment\":\"envb\""));
		n_a++;
		free(data);
	}
	assert_int_equal(n_a, 20);
	sse_close(&all);
	sse_close(&other);
	sse_close(&mine);
	/* the job stream replays the job's history from its start, then follows */
	sse_open(&job, "/v1/jobs/d1000000-0000-4000-8000-00000000000a/events?follow=true",
	    operator_a, NULL);
	assert_int_equal(job.status, 200);
	n_a = 0;
	while (sse_next(&job, 1000, &id, &data)) {
		assert_non_null(strstr(data, "\"job_id\":\"d1000000-0000-4000-8000-00000000000a\""));
		n_a++;
		free(data);
	}
	assert_int_equal(n_a, NEVENTS + 20);
	sse_close(&job);
}

/* Roles and bad input: no token 401, bad Last-Event-ID 400, follow=maybe 400; a page of
 * the same events as JSON; heartbeats on an idle stream. */
static void
test_roles_and_input(void **state)
{
	struct sse s;
	struct http_result h;
	char url[256];
	long long id;
	char *data;

	(void)state;
	sse_open(&s, "/v1/events?follow=true", NULL, NULL);
	assert_int_equal(s.status, 401);
	sse_close(&s);
	sse_open(&s, "/v1/events?follow=true", admin_b, "12abc");
	assert_int_equal(s.status, 400);
	sse_close(&s);
	sse_open(&s, "/v1/events?follow=maybe", admin_b, NULL);
	assert_int_equal(s.status, 400);
	sse_close(&s);
	snprintf(url, sizeof(url), "%s/v1/events?limit=5", fd.url);
	harness_http(&h, "GET", url, operator_a, NULL, NULL);
	assert_int_equal(h.status, 200);
	assert_int_equal(json_array_size(json_object_get(h.json, "items")), 5);
	assert_true(json_is_string(json_object_get(h.json, "next")));
	harness_http_free(&h);
	snprintf(url, sizeof(url), "%s/v1/events?environment=envb", fd.url);
	harness_http(&h, "GET", url, operator_a, NULL, NULL);
	assert_int_equal(h.status, 200);
	assert_int_equal(json_array_size(json_object_get(h.json, "items")), 0);
	harness_http_free(&h);
	/* idle: only heartbeats (FLEETD_SSE_HEARTBEAT=2) */
	sse_open(&s, "/v1/events?follow=true", admin_b, NULL);
	assert_false(sse_next(&s, 4500, &id, &data));
	assert_true(s.heartbeats >= 2);
	sse_close(&s);
}

/* 500 idle streams: fleetd's resident memory grows by at most 32 MiB, the 501st stream of
 * the same token is refused (429), and one new event reaches all 500. */
static void
test_idle_streams(void **state)
{
	struct sse *s = calloc(NIDLE, sizeof(*s)), extra;
	long before, after;
	long long id;
	char *data;
	int reached = 0;

	(void)state;
	before = rss_kib(fd.pid);
	assert_true(before > 0);
	for (int i = 0; i < NIDLE; i++) {
		sse_open(&s[i], "/v1/events?follow=true", root, NULL);
		assert_int_equal(s[i].status, 200);
	}
	usleep(500 * 1000);
	after = rss_kib(fd.pid);
	print_message("events: %d idle streams, fleetd RSS %ld -> %ld KiB (+%ld KiB)\n", NIDLE,
	    before, after, after - before);
	assert_true(after - before <= 32 * 1024);
	sse_open(&extra, "/v1/events?follow=true", root, NULL);
	assert_int_equal(extra.status, 429);
	sse_close(&extra);
	harness_sql("INSERT INTO job_events (job_id, type, message) VALUES"
	    " ('d1000000-0000-4000-8000-00000000000a', 'fanout', 'to all')");
	for (int i = 0; i < NIDLE; i++) {
		if (sse_next(&s[i], 5000, &id, &data)) {
			reached += strstr(data, "fanout") != NULL;
			free(data);
		}
		sse_close(&s[i]);
	}
	assert_int_equal(reached, NIDLE);
	free(s);
}

/* Opens a followed stream of a fresh viewer token of enva into s and reads one event
 * through it; the token (malloc'd). */
static char *
stream_seen(struct sse *s)
{
	char *tok = harness_token(dburl, "viewer", "enva"), *data;
	long long id;

	sse_open(s, "/v1/events?follow=true", tok, NULL);
	assert_int_equal(s->status, 200);
	harness_sql("INSERT INTO job_events (job_id, type, message) VALUES"
	    " ('d1000000-0000-4000-8000-00000000000a', 'before', 'seen')");
	assert_true(sse_next(s, 5000, &id, &data));
	free(data);
	return tok;
}

/* Reads s until the server ends it or limit_ms since t0 passed; prints how it went after
 * what; whether it ended. */
static bool
stream_ends(struct sse *s, long t0, long limit_ms, const char *what)
{
	long long id;
	char *data;

	while (!s->closed && ms_now() - t0 < limit_ms)
		if (sse_next(s, 500, &id, &data))
			free(data);
	print_message("events: stream of a token %s %s after %ld ms\n", what,
	    s->closed ? "ended" : "still open", ms_now() - t0);
	return s->closed;
}

/* A revoked token's open stream ends within a few seconds, even while events flow. */
static void
test_revoked_stream(void **state)
{
	struct sse s;
	char *tok = stream_seen(&s);
	long t0;

	(void)state;
	harness_sql("UPDATE api_tokens SET revoked_at = now() WHERE secret_sha256 ="
	    " encode(sha256('%s'::bytea), 'hex')", tok);
	t0 = ms_now();
	usleep(300 * 1000);
	harness_sql("INSERT INTO job_events (job_id, type, message) VALUES"
	    " ('d1000000-0000-4000-8000-00000000000a', 'after', 'revoked')");
	assert_true(stream_ends(&s, t0, 8000, "revoked"));
	assert_true(ms_now() - t0 < 5000);
	sse_close(&s);
	free(tok);
}

/* A static token whose role or team is changed in the database loses its stream within a
 * few seconds, like a revoked one (the hub compares the row with what the stream was
 * opened with). */
static void
test_changed_token_stream(void **state)
{
	struct sse s;
	char *tok = stream_seen(&s);

	(void)state;
	usleep(2500 * 1000);	/* a token check passes: unchanged, the stream stays */
	assert_false(s.closed);
	harness_sql("UPDATE api_tokens SET role = 'operator' WHERE secret_sha256 ="
	    " encode(sha256('%s'::bytea), 'hex')", tok);
	assert_true(stream_ends(&s, ms_now(), 10000, "whose role changed"));
	sse_close(&s);
	free(tok);
}

/* Hole 3: resumed streams are replayed off the HTTP threads and bounded.  A second fleetd
 * (4 HTTP threads, 2 pool connections, replay bound 300) starts after 3,000 events
 * are numbered, so its ring holds none of them: a stream resumed with Last-Event-ID: 1
 * gets at most 300 (+ one batch) old events, then a `reset` event naming the gap, then
 * live events (a job's own stream replays its whole history: test_scope).  Per token,
 * threads - 1 = 3 streams; the 4th is a 429 problem.  While three streams replay with the
 * client reading, another token's GET /v1/queues answers promptly (the seeded jobs' '{}'
 * specs would not pass the recorded answers' OpenAPI check on /v1/jobs). */
static void
test_replay_bounded(void **state)
{
	const char *env[] = { "FLEETD_WORKERS=none", "FLEETD_THREADS=4", "FLEETD_DB_POOL=2",
		"FLEETD_SSE_REPLAY_MAX=300", "FLEETD_LOG_LEVEL=info",
		"FLEETD_MASTER_KEY=ZXZlbnRzLXRlc3QtbWFzdGVyLWtleS0zMi1ieXRlcyE=", NULL };
	char *t1 = harness_token(dburl, "viewer", "enva"), *t2 = harness_token(dburl,
	    "viewer", "enva"), *data, url[256];
	struct fleetd_proc f2;
	struct sse s[4];
	struct http_result h;
	long long id, last = 0, reset_id = -1, head;
	int before_reset = 0, got_live = 0;
	long worst = 0;
	json_t *ev;

	(void)state;
	harness_sql("INSERT INTO job_events (job_id, type, message) SELECT"
	    " 'd1000000-0000-4000-8000-00000000000a', 'history', 'old ' || g"
	    " FROM generate_series(1, 3000) g");
	for (int i = 0; i < 200 && harness_sql_long("SELECT count(*) FROM job_events"
	    " WHERE seq IS NULL") > 0; i++)
		usleep(100 * 1000);	/* fd's hub numbers them */
	assert_int_equal(harness_sql_long("SELECT count(*) FROM job_events WHERE seq IS NULL"), 0);
	head = harness_sql_long("SELECT max(seq) FROM job_events");
	assert_true(head > 3000);
	harness_fleetd_start(&f2, dburl, env);
	sse_port = f2.port;
	for (int i = 0; i < 3; i++) {
		sse_open(&s[i], "/v1/events?follow=true", t1, "1");
		assert_int_equal(s[i].status, 200);
	}
	sse_open(&s[3], "/v1/events?follow=true", t1, "1");
	assert_int_equal(s[3].status, 429);
	assert_string_equal(s[3].ctype, "application/problem+json");
	for (int i = 0; i < 50 && (s[3].body == NULL || strstr(s[3].body, "}") == NULL); i++)
		if (fill(&s[3], 100))
			dechunk(&s[3]);
	assert_non_null(s[3].body);
	assert_non_null(strstr(s[3].body, "\"events.too_many_streams\""));
	sse_close(&s[3]);
	/* the other token's list answers while the three replay (each read in turn) */
	snprintf(url, sizeof(url), "%s/v1/queues?limit=5", f2.url);
	for (int round = 0; round < 40; round++) {
		long t0;

		for (int i = 1; i < 3; i++)
			if (sse_next(&s[i], 200, &id, &data))
				free(data);
		t0 = ms_now();
		harness_http(&h, "GET", url, t2, NULL, NULL);
		assert_int_equal(h.status, 200);
		harness_http_free(&h);
		if (ms_now() - t0 > worst)
			worst = ms_now() - t0;
	}
	print_message("events: GET /v1/queues of another token, worst %ld ms while 3 streams"
	    " replay\n", worst);
	assert_true(worst < 3000);
	/* stream 0: old events in order, then the reset, then live */
	while (reset_id < 0 && sse_next(&s[0], 10000, &id, &data)) {
		if (strcmp(s[0].event, "reset") == 0) {
			ev = json_loads(data, 0, NULL);
			assert_non_null(ev);
			assert_string_equal(json_string_value(json_object_get(ev, "code")),
			    "events.replay_limit");
			assert_int_equal(json_integer_value(json_object_get(ev, "upto")), id);
			assert_true(json_integer_value(json_object_get(ev, "after")) >= last);
			json_decref(ev);
			reset_id = id;
		} else {
			assert_true(id > last);
			last = id;
			before_reset++;
		}
		free(data);
	}
	print_message("events: %d old events replayed before the reset at %lld (head %lld)\n",
	    before_reset, reset_id, head);
	assert_true(reset_id >= head);
	assert_true(before_reset >= 300 && before_reset <= 300 + 256);
	harness_sql("INSERT INTO job_events (job_id, type, message) VALUES"
	    " ('d1000000-0000-4000-8000-00000000000a', 'live', 'after the reset')");
	while (!got_live && sse_next(&s[0], 10000, &id, &data)) {
		got_live = strstr(data, "after the reset") != NULL && id > reset_id;
		free(data);
	}
	assert_true(got_live);
	for (int i = 0; i < 3; i++)
		sse_close(&s[i]);
	sse_port = 0;
	assert_int_equal(harness_fleetd_stop(&f2), 0);
	free(t1);
	free(t2);
}

/* fleetctl on the streams: `jobs events ID --follow` prints the history and the new events
 * and exits once the job ends; another environment's job is "not found" (exit 3); the bash
 * completion script completes groups, commands and flags. */
static void
test_fleetctl(void **state)
{
	const char *bin = getenv("FLEETD_BUILD_DIR");
	char out[] = "/tmp/fleetctl-follow-XXXXXX", *text;
	int fdo, rc;

	(void)state;
	assert_non_null(bin);
	fdo = mkstemp(out);
	assert_true(fdo >= 0);
	close(fdo);
	harness_sql("INSERT INTO job_events (job_id, type, from_state, to_state, message) VALUES"
	    " ('d1000000-0000-4000-8000-00000000000b', 'state', 'pending', 'running', 'started'),"
	    " ('d1000000-0000-4000-8000-00000000000b', 'state', 'running', 'succeeded', 'done')");
	rc = harness_sh("FLEET_URL=%s FLEET_TOKEN=%s timeout 30 %s/fleetctl jobs events %s --follow"
	    " -o json >%s", fd.url, admin_b, bin, "d1000000-0000-4000-8000-00000000000b", out);
	assert_int_equal(rc, 0);
	text = harness_slurp(out);
	assert_non_null(text);
	assert_non_null(strstr(text, "\"to_state\":\"running\""));
	assert_non_null(strstr(text, "\"to_state\":\"succeeded\""));
	assert_non_null(strstr(text, "\"job_name\":\"job-b\""));
	free(text);
	rc = harness_sh("FLEET_URL=%s FLEET_TOKEN=%s timeout 30 %s/fleetctl jobs events %s --follow"
	    " >/dev/null 2>&1", fd.url, viewer_a, bin, "d1000000-0000-4000-8000-00000000000b");
	assert_int_equal(rc, 3);
	rc = harness_sh("bash -c 'eval \"$(%s/fleetctl completion bash)\"; COMP_WORDS=(fleetctl jobs"
	    " events x --fo); COMP_CWORD=4; _fleetctl; [ \"${COMPREPLY[*]}\" = --follow ] &&"
	    " COMP_WORDS=(fleetctl operations ca); COMP_CWORD=2; _fleetctl;"
	    " [ \"${COMPREPLY[*]}\" = cancel ]'", bin);
	assert_int_equal(rc, 0);
	unlink(out);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_resume_10000),
		cmocka_unit_test(test_scope),
		cmocka_unit_test(test_roles_and_input),
		cmocka_unit_test(test_fleetctl),
		cmocka_unit_test(test_revoked_stream),
		cmocka_unit_test(test_changed_token_stream),
		cmocka_unit_test(test_replay_bounded),
		cmocka_unit_test(test_idle_streams),
	};

	return cmocka_run_group_tests(tests, setup, harness_group_teardown);
}
