/* test_preauth: memory before authentication — 300 slow 1 MiB uploads without a token leave
 * fleetd's RSS within 20 MiB of idle while /healthz answers; the per-address connection
 * limit, the upload deadline and the memory budget of all in-flight bodies. */
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
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "tests/harness/harness.h"

#define UPLOADS		300
#define BODY		(1024 * 1024)
#define ADDRS		6		/* 127.0.0.2 .. 127.0.0.7: 50 per address */
#define CHUNK		(16 * 1024)	/* per connection per round */
#define ROUND_MS	50
#define RSS_SLACK_KB	(20 * 1024)
#define DEADLINE_S	3		/* FLEETD_UPLOAD_TIMEOUT */

static struct fleetd_proc fd;
static char dburl[512];
static char *admin;

/* A connection to fleetd from 127.0.0.<host>; -1 when refused. */
static int
dial_from(int host, bool nonblock)
{
	struct sockaddr_in sa = { .sin_family = AF_INET }, me = { .sin_family = AF_INET };
	int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	assert_true(s >= 0);
	me.sin_addr.s_addr = htonl(0x7f000000u | (unsigned)host);
	assert_int_equal(bind(s, (struct sockaddr *)&me, sizeof(me)), 0);
	sa.sin_port = htons((uint16_t)fd.port);
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (connect(s, (struct sockaddr *)&sa, sizeof(sa)) != 0) {
		close(s);
		return -1;
	}
	if (nonblock) {
		struct timeval tv = { 0, 1000 };

		setsockopt(s, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	}
	return s;
}

static bool
healthz(void)
{
	struct http_result r;
	char u[128];
	bool ok;

	snprintf(u, sizeof(u), "%s/healthz", fd.url);
	harness_http(&r, "GET", u, NULL, NULL, NULL);
	ok = r.status == 200;
	harness_http_free(&r);
	return ok;
}

/* The status of the answer on s within ms, 0 when closed without one, -1 on timeout. */
static int
status_of(int s, int ms)
{
	char buf[512];
	size_t got = 0;
	double until = harness_now_s() * 1000 + ms;
	int st = 0;

	for (;;) {
		struct pollfd p = { .fd = s, .events = POLLIN };
		int left = (int)(until - harness_now_s() * 1000);
		ssize_t n;

		if (left <= 0 || poll(&p, 1, left) <= 0)
			return -1;
		n = recv(s, buf + got, sizeof(buf) - 1 - got, 0);
		if (n <= 0)
			break;
		got += (size_t)n;
		if (got >= 16)
			break;
	}
	buf[got] = '\0';
	if (got > 0 && sscanf(buf, "HTTP/1.%*d %d", &st) != 1)
		return 0;
	return st;
}

/* Whether the peer closes s within ms (what it still sends is read and dropped). */
static bool
closed_within(int s, int ms)
{
	char buf[512];
	double until = harness_now_s() * 1000 + ms;

	for (;;) {
		struct pollfd p = { .fd = s, .events = POLLIN };
		int left = (int)(until - harness_now_s() * 1000);

		if (left <= 0 || poll(&p, 1, left) <= 0)
			return false;
		if (recv(s, buf, sizeof(buf), 0) <= 0)
			return true;
	}
}

static void
send_head(int s, const char *token, long length)
{
	char head[512];
	int n = snprintf(head, sizeof(head), "POST /v1/jobs HTTP/1.1\r\nHost: 127.0.0.1\r\n"
	    "Content-Type: application/json\r\nContent-Length: %ld\r\n%s%s%s\r\n", length,
	    token ? "Authorization: Bearer " : "", token ? token : "", token ? "\r\n" : "");

	assert_int_equal(send(s, head, (size_t)n, MSG_NOSIGNAL), n);
}

static int
setup(void **state)
{
	static const char *const env[] = { "FLEETD_CONN_LIMIT=1024", "FLEETD_WORKERS=none",
	    "FLEETD_UPLOAD_TIMEOUT=3", "FLEETD_BODY_MEMORY_LIMIT=3145728",
	    "FLEETD_LOG_LEVEL=warn", NULL };
	(void)state;
	harness_raise_nofile(4096);
	harness_db_create("preauth", dburl, sizeof(dburl));
	harness_fleetd_start(&fd, dburl, env);
	admin = harness_keep(harness_token(dburl, "admin", "*"));
	return 0;
}

/* 300 connections each send a 1 MiB body in 16 KiB pieces every 50 ms, without a token.
 * fleetd must answer 401 on the headers and never hold the bodies. */
static void
test_slow_uploads_without_token(void **state)
{
	static int s[UPLOADS];
	static size_t sent[UPLOADS];
	static char chunk[CHUNK];
	long idle, peak = 0, kb;
	int open_n, refused = 0, answered401 = 0, health_fail = 0, rounds = 0;
	double t0 = harness_now_s() * 1000;

	(void)state;
	memset(chunk, 'x', sizeof(chunk));
	for (int i = 0; i < 10; i++)
		healthz();
	idle = harness_rss_kb(fd.pid);
	for (int i = 0; i < UPLOADS; i++) {
		s[i] = dial_from(2 + i % ADDRS, true);
		if (s[i] < 0) {
			refused++;
			continue;
		}
		send_head(s[i], NULL, BODY);
		sent[i] = 0;
	}
	do {
		open_n = 0;
		for (int i = 0; i < UPLOADS; i++) {
			ssize_t n;

			if (s[i] < 0)
				continue;
			n = send(s[i], chunk, sizeof(chunk), MSG_NOSIGNAL | MSG_DONTWAIT);
			if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK) {
				close(s[i]);	/* fleetd answered and closed */
				s[i] = -1;
				continue;
			}
			if (n > 0 && (sent[i] += (size_t)n) >= BODY) {
				int st = status_of(s[i], 2000);

				answered401 += st == 401;
				close(s[i]);
				s[i] = -1;
				continue;
			}
			open_n++;
		}
		kb = harness_rss_kb(fd.pid);
		peak = kb > peak ? kb : peak;
		if (rounds++ % 10 == 0 && !healthz())
			health_fail++;
		usleep(ROUND_MS * 1000);
	} while (open_n > 0 && harness_now_s() * 1000 - t0 < 20000);
	for (int i = 0; i < UPLOADS; i++)
		if (s[i] >= 0)
			close(s[i]);
	print_message("300 slow 1 MiB uploads without a token: idle RSS %ld kB, peak %ld kB "
	    "(+%ld kB), %d refused at connect, %d still open at the end, %d answered 401 after "
	    "the whole body, /healthz failed %d times, %.1f s\n", idle, peak, peak - idle,
	    refused, open_n, answered401, health_fail, (harness_now_s() * 1000 - t0) / 1000);
	assert_int_equal(health_fail, 0);
	assert_true(healthz());
	/* and the answer to such a request is a 401, sent on the headers alone */
	s[0] = dial_from(8, false);
	send_head(s[0], NULL, BODY);
	assert_int_equal(status_of(s[0], 2000), 401);
	close(s[0]);
	if (peak - idle > RSS_SLACK_KB)
		fail_msg("fleetd's RSS grew %ld kB (limit %d kB)", peak - idle, RSS_SLACK_KB);
}

/* One address may hold 64 connections (FLEETD_CONN_PER_IP default); others still get in. */
static void
test_per_ip_limit(void **state)
{
	int s[100], dropped = 0;
	char c;

	(void)state;
	for (int i = 0; i < 100; i++)
		s[i] = dial_from(9, false);
	usleep(300 * 1000);
	assert_true(healthz());
	for (int i = 0; i < 100; i++) {
		struct pollfd p = { .fd = s[i], .events = POLLIN };

		if (s[i] < 0 || (poll(&p, 1, 0) > 0 && recv(s[i], &c, 1, MSG_DONTWAIT) <= 0))
			dropped++;
		if (s[i] >= 0)
			close(s[i]);
	}
	print_message("per-address limit: %d of 100 connections from 127.0.0.9 dropped\n",
	    dropped);
	assert_true(dropped >= 30);
}

/* An authenticated upload that trickles (never idle for the idle timeout) is cut at the
 * upload deadline. */
static void
test_upload_deadline(void **state)
{
	int s = dial_from(10, false), st = -1;
	double t0 = harness_now_s() * 1000;

	(void)state;
	assert_true(s >= 0);
	send_head(s, admin, BODY);
	while (harness_now_s() * 1000 - t0 < (DEADLINE_S + 5) * 1000.0) {
		struct pollfd p = { .fd = s, .events = POLLIN };

		if (send(s, "xxxxxxxx", 8, MSG_NOSIGNAL) != 8 || poll(&p, 1, 500) > 0) {
			st = 0;
			break;
		}
	}
	close(s);
	print_message("upload deadline: connection ended after %.1f s\n",
	    (harness_now_s() * 1000 - t0) / 1000);
	assert_int_equal(st, 0);
	assert_true(harness_now_s() * 1000 - t0 < (DEADLINE_S + 3) * 1000.0);
}

/* Authenticated bodies share FLEETD_BODY_MEMORY_LIMIT (3 MiB): of four 1 MiB bodies in
 * flight at once, some are refused with 503 and the others are answered. */
static void
test_body_budget(void **state)
{
	static char chunk[BODY - 1];
	int s[4], busy = 0, other = 0;

	(void)state;
	memset(chunk, ' ', sizeof(chunk));
	for (int i = 0; i < 4; i++) {
		s[i] = dial_from(11 + i, false);
		assert_true(s[i] >= 0);
		send_head(s[i], admin, BODY);
		assert_int_equal(send(s[i], chunk, sizeof(chunk), MSG_NOSIGNAL),
		    (ssize_t)sizeof(chunk));
	}
	usleep(300 * 1000);
	for (int i = 0; i < 4; i++) {
		int st;

		assert_int_equal(send(s[i], "{", 1, MSG_NOSIGNAL), 1);
		st = status_of(s[i], 5000);
		busy += st == 503;
		other += st > 0 && st != 503;
		close(s[i]);
	}
	print_message("body budget: %d answered 503, %d answered otherwise\n", busy, other);
	assert_true(busy >= 1);
	assert_true(other >= 1);
	assert_true(healthz());
}

/* Public routes take no body: 80 connections from two addresses, each under the
 * per-address limit, sending 1 MiB bodies to GET /healthz are refused on the headers
 * (413) and hold none of the body budget, so an authenticated 1 MiB POST from a third
 * address is still read (400 for its invalid JSON, not 503). */
static void
test_public_route_body(void **state)
{
	static const char head[] = "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n"
	    "Content-Length: 1048576\r\n\r\n";
	static char chunk[CHUNK], body[BODY - 1];
	static int s[80];
	static size_t sent[80];
	int open_n, st, probe;
	double t0 = harness_now_s() * 1000;

	(void)state;
	memset(chunk, 'x', sizeof(chunk));
	memset(body, ' ', sizeof(body));
	for (int i = 0; i < 80; i++) {
		s[i] = dial_from(20 + i % 2, true);
		assert_true(s[i] >= 0);
		assert_int_equal(send(s[i], head, strlen(head), MSG_NOSIGNAL),
		    (ssize_t)strlen(head));
		sent[i] = 0;
	}
	do {	/* all but the last byte of each body, or until fleetd closes */
		open_n = 0;
		for (int i = 0; i < 80; i++) {
			size_t want = BODY - 1 - sent[i];
			ssize_t n;

			if (s[i] < 0 || want == 0)
				continue;
			n = send(s[i], chunk, want < CHUNK ? want : CHUNK,
			    MSG_NOSIGNAL | MSG_DONTWAIT);
			if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK) {
				close(s[i]);
				s[i] = -1;
				continue;
			}
			sent[i] += n > 0 ? (size_t)n : 0;
			open_n++;
		}
		usleep(10 * 1000);
	} while (open_n > 0 && harness_now_s() * 1000 - t0 < 8000);
	probe = dial_from(22, false);
	assert_true(probe >= 0);
	send_head(probe, admin, BODY);
	assert_int_equal(send(probe, body, sizeof(body), MSG_NOSIGNAL), (ssize_t)sizeof(body));
	assert_int_equal(send(probe, "{", 1, MSG_NOSIGNAL), 1);
	st = status_of(probe, 5000);
	close(probe);
	for (int i = 0; i < 80; i++)
		if (s[i] >= 0)
			close(s[i]);
	print_message("80 public 1 MiB bodies from two addresses (%d still open after %.1f s); "
	    "then an authenticated 1 MiB POST: %d\n", open_n,
	    (harness_now_s() * 1000 - t0) / 1000, st);
	assert_int_equal(st, 400);
	/* the refusal is on the headers alone, and the connection is closed after it */
	probe = dial_from(23, false);
	assert_int_equal(send(probe, head, strlen(head), MSG_NOSIGNAL), (ssize_t)strlen(head));
	assert_int_equal(status_of(probe, 2000), 413);
	assert_true(closed_within(probe, 2000));
	close(probe);
	assert_true(healthz());
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_slow_uploads_without_token),
		cmocka_unit_test(test_per_ip_limit),
		cmocka_unit_test(test_upload_deadline),
		cmocka_unit_test(test_body_budget),
		cmocka_unit_test(test_public_route_body),
	};

	/* raw sockets: answers are not recorded for the openapi check */
	setenv("FLEETD_RESPONSE_LOG", "/dev/null", 1);
	return cmocka_run_group_tests(tests, setup, harness_group_teardown);
}
