/* http_server: the tiny thread-per-connection HTTP (and TLS) server on 127.0.0.1 that
 * test_http drives http_do and the multi batch against (plain POSIX sockets: fleet_core does
 * not link libmicrohttpd).  Its routes answer what each case needs: echoes, delays, 5xx and
 * 429 with Retry-After, large bodies, pages, broken connections.  One includer: test_http. */
#ifndef FLEET_TESTS_HTTP_SERVER_H
#define FLEET_TESTS_HTTP_SERVER_H

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdbool.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include "core/http.h"

/* ---- server ---- */

struct srv {
	int		 fd;
	int		 port;
	pthread_t	 thr;
	atomic_bool	 stop;
	pthread_mutex_t	 mu;
	pthread_t	 conns[512];
	size_t		 nconns;
	int		 hits_flaky;
	int		 hits_limited;
	int64_t		 t_limited[8];
	int		 max_inflight;
	int		 inflight;
	SSL_CTX		*_Atomic tls;	/* when set, connections speak TLS */
	int		 tls_conns;	/* TLS connections accepted (handshake done) */
	int		 tls_resumed;	/* of which resumed a TLS session */
};

static struct srv S;

static int64_t
now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void
sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	nanosleep(&ts, NULL);
}

static void
send_all(int fd, const char *p, size_t n)
{
	while (n > 0) {
		ssize_t w = send(fd, p, n, MSG_NOSIGNAL);

		if (w <= 0)
			return;
		p += w;
		n -= (size_t)w;
	}
}

static void
reply(int fd, int status, const char *extra, const char *body)
{
	char head[512];

	snprintf(head, sizeof(head), "HTTP/1.1 %d X\r\nContent-Length: %zu\r\n"
	    "Connection: close\r\n%s\r\n", status, strlen(body), extra ? extra : "");
	send_all(fd, head, strlen(head));
	send_all(fd, body, strlen(body));
}

/* Value of header name in the raw request head, copied into out. */
static void
req_header(const char *head, const char *name, char *out, size_t outlen)
{
	const char *p = head;
	size_t nl = strlen(name);

	out[0] = '\0';
	while ((p = strstr(p, "\r\n")) != NULL) {
		p += 2;
		if (strncasecmp(p, name, nl) == 0 && p[nl] == ':') {
			const char *v = p + nl + 1, *end = strstr(v, "\r\n");

			while (*v == ' ')
				v++;
			snprintf(out, outlen, "%.*s", (int)(end - v), v);
			return;
		}
	}
}

static void
route(int fd, const char *method, const char *path, const char *head, const char *body)
{
	char buf[2048], v1[256], v2[256];
	long n;

	if (sscanf(path, "/delay/%ld", &n) == 1) {
		/* Counted while the request is being served, not while its reply drains:
		 * the client may open its next connection before this thread returns. */
		pthread_mutex_lock(&S.mu);
		if (++S.inflight > S.max_inflight)
			S.max_inflight = S.inflight;
		pthread_mutex_unlock(&S.mu);
		sleep_ms(n);
		pthread_mutex_lock(&S.mu);
		S.inflight--;
		pthread_mutex_unlock(&S.mu);
		reply(fd, 200, NULL, "slept");
	} else if (strcmp(path, "/hang") == 0) {
		for (int i = 0; i < 500 && !atomic_load(&S.stop); i++)
			sleep_ms(10);
	} else if (strcmp(path, "/flaky") == 0) {
		pthread_mutex_lock(&S.mu);
		n = ++S.hits_flaky;
		pthread_mutex_unlock(&S.mu);
		reply(fd, n == 1 ? 503 : 200, NULL, n == 1 ? "busy" : "ok");
	} else if (strcmp(path, "/always503") == 0) {
		reply(fd, 503, NULL, "busy");
	} else if (strncmp(path, "/limited?ra=", 12) == 0) {
		pthread_mutex_lock(&S.mu);
		n = ++S.hits_limited;
		if (n <= 8)
			S.t_limited[n - 1] = now_ms();
		pthread_mutex_unlock(&S.mu);
		snprintf(buf, sizeof(buf), "Retry-After: %s\r\n", path + 12);
		reply(fd, n == 1 ? 429 : 200, n == 1 ? buf : NULL, n == 1 ? "slow down" : "ok");
	} else if (sscanf(path, "/big/%ld", &n) == 1) {
		char *big = malloc((size_t)n + 1);

		memset(big, 'x', (size_t)n);
		big[n] = '\0';
		reply(fd, 200, NULL, big);
		free(big);
	} else if (sscanf(path, "/stream/%ld", &n) == 1) {
		static const char head_only[] = "HTTP/1.1 200 X\r\nConnection: close\r\n\r\n";
		char chunk[4096];

		memset(chunk, 'y', sizeof(chunk));
		send_all(fd, head_only, strlen(head_only));
		for (long sent = 0; sent < n; sent += (long)sizeof(chunk))
			send_all(fd, chunk, (size_t)(n - sent) < sizeof(chunk) ?
			    (size_t)(n - sent) : sizeof(chunk));
	} else if (sscanf(path, "/page/%ld", &n) == 1) {
		snprintf(v1, sizeof(v1), "X-Next: /page/%ld\r\n", n + 1);
		snprintf(buf, sizeof(buf), "page %ld", n);
		reply(fd, 200, n < 3 ? v1 : NULL, buf);
	} else if (strcmp(path, "/echo") == 0) {
		req_header(head, "Authorization", v1, sizeof(v1));
		req_header(head, "X-Test", v2, sizeof(v2));
		snprintf(buf, sizeof(buf), "%s|%s|%s|%s", method, v1, v2, body);
		reply(fd, 200, "X-Reply: Yes\r\nX-Reply: again\r\n", buf);
	} else {
		reply(fd, 404, NULL, "no");
	}
}

/* Waits until fd is readable; false when the server stops first. */
static bool
wait_readable(int fd)
{
	while (!atomic_load(&S.stop)) {
		struct pollfd p = { .fd = fd, .events = POLLIN };

		if (poll(&p, 1, 20) > 0)
			return true;
	}
	return false;
}

/* Reads and drops the rest of a request body (n bytes) from ssl; false when it ends
 * first. */
static bool
tls_skip(SSL *ssl, long n)
{
	char scratch[4096];

	while (n > 0) {
		int r = SSL_read(ssl, scratch, n < (long)sizeof(scratch) ? (int)n :
		    (int)sizeof(scratch));

		if (r <= 0)
			return false;
		n -= r;
	}
	return true;
}

/* TLS connections are kept alive and answer every request with "tls" once the handshake
 * succeeded ("/slow" after 100 ms; "/close" then closes; "/len" with the length of the
 * body it received); the server counts them and how many resumed a TLS session. */
static void
conn_tls(int fd, SSL_CTX *ctx)
{
	static const char answer[] = "HTTP/1.1 200 X\r\nContent-Length: 3\r\n\r\ntls",
	    last[] = "HTTP/1.1 200 X\r\nContent-Length: 3\r\nConnection: close\r\n\r\ntls";
	SSL *ssl = SSL_new(ctx);
	char req[8192], *end, cl[32], sized[128];
	int len = 0;

	SSL_set_fd(ssl, fd);
	if (SSL_accept(ssl) != 1)
		goto out;
	pthread_mutex_lock(&S.mu);
	S.tls_conns++;
	S.tls_resumed += SSL_session_reused(ssl) ? 1 : 0;
	pthread_mutex_unlock(&S.mu);
	while (len < (int)sizeof(req) - 1) {
		int r;

		if (SSL_pending(ssl) == 0 && !wait_readable(fd))
			break;
		if ((r = SSL_read(ssl, req + len, (int)sizeof(req) - 1 - len)) <= 0)
			break;
		len += r;
		req[len] = '\0';
		while ((end = strstr(req, "\r\n\r\n")) != NULL) {
			int used = (int)(end + 4 - req);
			long body, here;

			if (strncmp(req, "GET /close", 10) == 0) {
				SSL_write(ssl, last, (int)strlen(last));
				goto done;
			}
			if (strncmp(req, "GET /slow", 9) == 0)
				sleep_ms(100);
			end[2] = '\0';		/* the head only */
			req_header(req, "Content-Length", cl, sizeof(cl));
			body = atol(cl);
			here = body < len - used ? body : len - used;
			used += (int)here;
			if (!tls_skip(ssl, body - here))
				goto done;
			if (strstr(req, " /len ") != NULL) {
				snprintf(cl, sizeof(cl), "%ld", body);
				snprintf(sized, sizeof(sized), "HTTP/1.1 200 X\r\nContent-Length:"
				    " %zu\r\n\r\n%s", strlen(cl), cl);
				SSL_write(ssl, sized, (int)strlen(sized));
			} else {
				SSL_write(ssl, answer, (int)strlen(answer));
			}
			memmove(req, req + used, (size_t)(len - used) + 1);
			len -= used;
		}
	}
done:
	SSL_shutdown(ssl);
out:
	SSL_free(ssl);
	close(fd);
}

static void *
conn_main(void *arg)
{
	int fd = (int)(intptr_t)arg;
	char req[65536], method[16] = "", path[1024] = "", cl[32];
	size_t len = 0;
	char *end = NULL, *body;
	long need;

	if (atomic_load(&S.tls) != NULL) {
		conn_tls(fd, atomic_load(&S.tls));
		return NULL;
	}
	while (end == NULL && len < sizeof(req) - 1) {
		ssize_t r = recv(fd, req + len, sizeof(req) - 1 - len, 0);

		if (r <= 0)
			goto out;
		len += (size_t)r;
		req[len] = '\0';
		end = strstr(req, "\r\n\r\n");
	}
	if (end == NULL)
		goto out;
	req_header(req, "Content-Length", cl, sizeof(cl));
	need = atol(cl);
	body = end + 4;
	while ((long)(len - (size_t)(body - req)) < need && len < sizeof(req) - 1) {
		ssize_t r = recv(fd, req + len, sizeof(req) - 1 - len, 0);

		if (r <= 0)
			goto out;
		len += (size_t)r;
		req[len] = '\0';
	}
	sscanf(req, "%15s %1023s", method, path);
	route(fd, method, path, req, body);
out:
	close(fd);
	return NULL;
}

static void *
accept_main(void *arg)
{
	(void)arg;
	while (!atomic_load(&S.stop)) {
		struct pollfd p = { .fd = S.fd, .events = POLLIN };
		int c;

		if (poll(&p, 1, 20) <= 0)
			continue;
		c = accept(S.fd, NULL, NULL);
		if (c < 0)
			continue;
		pthread_mutex_lock(&S.mu);
		if (S.nconns < sizeof(S.conns) / sizeof(S.conns[0]) &&
		    pthread_create(&S.conns[S.nconns], NULL, conn_main,
		    (void *)(intptr_t)c) == 0)
			S.nconns++;
		else
			close(c);
		pthread_mutex_unlock(&S.mu);
	}
	return NULL;
}

static int
srv_start(void **state)
{
	struct sockaddr_in a = { .sin_family = AF_INET };
	socklen_t alen = sizeof(a);
	int one = 1;

	(void)state;
	memset(&S, 0, sizeof(S));
	pthread_mutex_init(&S.mu, NULL);
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	S.fd = socket(AF_INET, SOCK_STREAM, 0);
	setsockopt(S.fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (S.fd < 0 || bind(S.fd, (struct sockaddr *)&a, sizeof(a)) != 0 ||
	    listen(S.fd, 64) != 0 || getsockname(S.fd, (struct sockaddr *)&a, &alen) != 0)
		return -1;
	S.port = ntohs(a.sin_port);
	return pthread_create(&S.thr, NULL, accept_main, NULL) == 0 ? 0 : -1;
}

static int
srv_stop(void **state)
{
	(void)state;
	atomic_store(&S.stop, true);
	pthread_join(S.thr, NULL);
	for (size_t i = 0; i < S.nconns; i++)
		pthread_join(S.conns[i], NULL);
	close(S.fd);
	SSL_CTX_free(atomic_load(&S.tls));
	pthread_mutex_destroy(&S.mu);
	return 0;
}

static char *
url(const char *path)
{
	static char bufs[16][128];
	static int next;
	char *b = bufs[next++ % 16];

	snprintf(b, sizeof(bufs[0]), "http://127.0.0.1:%d%s", S.port, path);
	return b;
}

#endif
