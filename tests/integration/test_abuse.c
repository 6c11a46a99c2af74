/* test_abuse: hostile connections on loopback — slowloris, hundreds of idle sockets,
 * oversized headers — while ordinary clients keep getting quick answers and fleetd's
 * memory stays bounded. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
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

#define SLOW_CLIENTS	100	/* slowloris connections */
#define SLOW_SECONDS	8	/* one header byte per second for this long */
#define IDLE_CLIENTS	500
#define CONN_TIMEOUT	3	/* FLEETD_CONN_TIMEOUT for this fleetd, seconds */
#define QUICK_MS	2000	/* an ordinary request must answer within this (ASan build) */
#define STR_(x)		#x
#define STR(x)		STR_(x)
#define RSS_GROWTH_KB	(256 * 1024)	/* generous: ASan quarantine counts as RSS */

static struct fleetd_proc fd;
static char dburl[512];
static char *admin;
static long rss_start_kb;

/* A blocking loopback connection to fleetd, or -1 when refused. */
static int
dial(void)
{
	struct sockaddr_in sa = { .sin_family = AF_INET };
	int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	assert_true(s >= 0);
	sa.sin_port = htons((uint16_t)fd.port);
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (connect(s, (struct sockaddr *)&sa, sizeof(sa)) != 0) {
		close(s);
		return -1;
	}
	return s;
}

/* Ordinary traffic: health, readiness and a database-backed list, each answered with the
 * right status within QUICK_MS.  Returns the slowest answer in ms. */
static double
ordinary_requests(void)
{
	static const char *const paths[] = { "/healthz", "/readyz", "/v1/environments" };
	double worst = 0;

	for (size_t i = 0; i < sizeof(paths) / sizeof(paths[0]); i++) {
		struct http_result r;
		char u[256];
		double t0 = harness_now_s() * 1000, dt;

		snprintf(u, sizeof(u), "%s%s", fd.url, paths[i]);
		harness_http(&r, "GET", u, i == 2 ? admin : NULL, NULL, NULL);
		dt = harness_now_s() * 1000 - t0;
		if (r.status != 200 || dt > QUICK_MS) {
			harness_sh("tail -n 20 %s >&2", fd.log);
			fail_msg("GET %s: status %ld after %.0f ms", paths[i], r.status, dt);
		}
		worst = dt > worst ? dt : worst;
		harness_http_free(&r);
	}
	return worst;
}

/* Reads until EOF, an error or timeout_ms; returns bytes read into buf (NUL-terminated),
 * or -1 on timeout (the server neither answered nor closed). */
static ssize_t
read_answer(int s, char *buf, size_t len, int timeout_ms)
{
	size_t got = 0;
	double deadline = harness_now_s() * 1000 + timeout_ms;

	for (;;) {
		struct pollfd p = { .fd = s, .events = POLLIN };
		int left = (int)(deadline - harness_now_s() * 1000);
		ssize_t n;

		if (left <= 0 || poll(&p, 1, left) <= 0)
			return -1;
		n = recv(s, buf + got, len - 1 - got, 0);
		if (n <= 0 || (got += (size_t)n) >= len - 1)
			break;
	}
	buf[got] = '\0';
	return (ssize_t)got;
}

static int
setup(void **state)
{
	static const char *const env[] = { "FLEETD_CONN_LIMIT=1024", "FLEETD_CONN_PER_IP=1024",
	    "FLEETD_CONN_TIMEOUT=" STR(CONN_TIMEOUT), "FLEETD_LOG_LEVEL=warn", NULL };
	(void)state;
	/* 600+ sockets on each side: lift the soft limit (fleetd inherits it) */
	harness_raise_nofile(4096);
	harness_db_create("abuse", dburl, sizeof(dburl));
	harness_fleetd_start(&fd, dburl, env);
	admin = harness_keep(harness_token(dburl, "admin", "*"));
	for (int i = 0; i < 20; i++)	/* warm up pools and caches before the baseline */
		ordinary_requests();
	rss_start_kb = harness_rss_kb(fd.pid);
	return 0;
}

/* Slowloris: SLOW_CLIENTS connections dribble a never-ending header one byte a second
 * (never idle long enough for the idle timeout); other clients are served meanwhile. */
static void
test_slowloris(void **state)
{
	static const char head[] = "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ";
	int s[SLOW_CLIENTS], open_n = 0;
	double worst = 0;

	(void)state;
	for (int i = 0; i < SLOW_CLIENTS; i++) {
		s[i] = dial();
		assert_true(s[i] >= 0);
		assert_int_equal(send(s[i], head, sizeof(head) - 1, MSG_NOSIGNAL),
		    (ssize_t)(sizeof(head) - 1));
	}
	for (int sec = 0; sec < SLOW_SECONDS; sec++) {
		double t0 = harness_now_s() * 1000, w;

		for (int i = 0; i < SLOW_CLIENTS; i++)
			if (s[i] >= 0 && send(s[i], "a", 1, MSG_NOSIGNAL | MSG_DONTWAIT) != 1) {
				close(s[i]);
				s[i] = -1;
			}
		w = ordinary_requests();
		worst = w > worst ? w : worst;
		if (harness_now_s() * 1000 - t0 < 1000)
			usleep((useconds_t)((1000 - (harness_now_s() * 1000 - t0)) * 1000));
	}
	for (int i = 0; i < SLOW_CLIENTS; i++) {
		if (s[i] >= 0) {
			open_n++;
			close(s[i]);
		}
	}
	print_message("slowloris: %d of %d slow connections still open after %d s, slowest "
	    "ordinary answer %.0f ms\n", open_n, SLOW_CLIENTS, SLOW_SECONDS, worst);
}

/* IDLE_CLIENTS connections that never send a byte: ordinary clients are still served,
 * and fleetd drops the idle ones once FLEETD_CONN_TIMEOUT has passed. */
static void
test_idle_connections(void **state)
{
	static int s[IDLE_CLIENTS];
	int dropped = 0;
	char buf[64];

	(void)state;
	for (int i = 0; i < IDLE_CLIENTS; i++) {
		s[i] = dial();
		assert_true(s[i] >= 0);
	}
	ordinary_requests();
	/* every idle socket must see EOF (or a reset) after the timeout, well within 4x */
	for (int i = 0; i < IDLE_CLIENTS; i++) {
		if (read_answer(s[i], buf, sizeof(buf), i == 0 ? CONN_TIMEOUT * 4000 : 2000) >= 0)
			dropped++;
		close(s[i]);
	}
	assert_int_equal(dropped, IDLE_CLIENTS);
	ordinary_requests();
}

/* Sends request (NUL-free) and expects an HTTP error status or a closed connection
 * within 10 s, never a hang; returns the status, 0 for a close without answer. */
static int
oversized(const char *request, size_t len)
{
	char buf[512];
	size_t off = 0;
	ssize_t n;
	int s = dial(), status = 0;

	assert_true(s >= 0);
	while (off < len) {
		n = send(s, request + off, len - off, MSG_NOSIGNAL);
		if (n <= 0)
			break;	/* the server may close before reading it all */
		off += (size_t)n;
	}
	n = read_answer(s, buf, sizeof(buf), 10000);
	close(s);
	if (n < 0)
		fail_msg("no answer and no close within 10 s after %zu bytes of headers", off);
	if (n > 0 && sscanf(buf, "HTTP/1.%*d %d", &status) != 1)
		fail_msg("not an http answer: %.60s", buf);
	if (status != 0 && status < 400)
		fail_msg("oversized headers accepted with %d", status);
	return status;
}

static void
test_oversized_headers(void **state)
{
	size_t big = 100 * 1024, n = 0;
	char *rq = malloc(big + 4096);
	int st;

	(void)state;
	assert_non_null(rq);
	/* one 100 KB header */
	n = (size_t)sprintf(rq, "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Big: ");
	memset(rq + n, 'a', big);
	n += big;
	n += (size_t)sprintf(rq + n, "\r\n\r\n");
	st = oversized(rq, n);
	print_message("100 KB header: status %d\n", st);
	/* 2,000 small headers (about 100 KB in all) */
	n = (size_t)sprintf(rq, "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n");
	for (int i = 0; i < 2000; i++)
		n += (size_t)sprintf(rq + n, "X-H%d: %040d\r\n", i, i);
	n += (size_t)sprintf(rq + n, "\r\n");
	st = oversized(rq, n);
	print_message("2000 headers: status %d\n", st);
	/* a 100 KB request line */
	n = (size_t)sprintf(rq, "GET /healthz?q=");
	memset(rq + n, 'b', big);
	n += big;
	n += (size_t)sprintf(rq + n, " HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n");
	st = oversized(rq, n);
	print_message("100 KB request line: status %d\n", st);
	free(rq);
	ordinary_requests();
}

/* After all of the above, and a second round of it, fleetd's RSS grew by less than a
 * generous bound: nothing per connection is kept. */
static void
test_memory_bounded(void **state)
{
	long after, after2;

	(void)state;
	after = harness_rss_kb(fd.pid);
	test_idle_connections(state);
	test_oversized_headers(state);
	after2 = harness_rss_kb(fd.pid);
	print_message("fleetd rss: %ld kB at start, %ld kB after one round, %ld kB after two\n",
	    rss_start_kb, after, after2);
	assert_true(after2 - rss_start_kb < RSS_GROWTH_KB);
	/* the second round may not cost what the first did: no per-connection leak */
	assert_true(after2 - after < RSS_GROWTH_KB / 4);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_slowloris),
		cmocka_unit_test(test_idle_connections),
		cmocka_unit_test(test_oversized_headers),
		cmocka_unit_test(test_memory_bounded),
	};

	return cmocka_run_group_tests(tests, setup, harness_group_teardown);
}
