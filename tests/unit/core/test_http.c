/* test_http: http_do and the multi batch against a tiny thread-per-connection HTTP
 * server on 127.0.0.1 (plain POSIX sockets: fleet_core does not link libmicrohttpd). */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
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

/* TLS connections get one fixed answer once the handshake succeeded. */
static void
conn_tls(int fd, SSL_CTX *ctx)
{
	static const char answer[] = "HTTP/1.1 200 X\r\nContent-Length: 3\r\n"
	    "Connection: close\r\n\r\ntls";
	SSL *ssl = SSL_new(ctx);
	char req[8192];
	int len = 0;

	SSL_set_fd(ssl, fd);
	if (SSL_accept(ssl) == 1) {
		while (len < (int)sizeof(req) - 1) {
			int r = SSL_read(ssl, req + len, (int)sizeof(req) - 1 - len);

			if (r <= 0)
				break;
			len += r;
			req[len] = '\0';
			if (strstr(req, "\r\n\r\n") != NULL) {
				SSL_write(ssl, answer, (int)strlen(answer));
				SSL_shutdown(ssl);
				break;
			}
		}
	}
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

/* ---- results collected by done callbacks ---- */

struct result {
	long	status;
	int	attempts;
	char	code[48];	/* err code, "" when a response arrived */
	char	body[64];
	int64_t	at;		/* completion time */
};

static void
collect(struct http_batch *b, const struct http_req *req, struct http_resp *resp,
    const struct err *e)
{
	struct result *r = req->user;

	(void)b;
	r->status = resp->status;
	r->attempts = resp->attempts;
	snprintf(r->code, sizeof(r->code), "%s", e ? e->code : "");
	snprintf(r->body, sizeof(r->body), "%s", resp->body ? resp->body : "");
	r->at = now_ms();
}

static void
test_do_echo(void **state)
{
	struct http_header h[] = { { "X-Test", "hello" } };
	struct http_req req = { .method = "PUT", .url = url("/echo"), .headers = h,
	    .nheaders = 1, .body = "payload", .body_len = 7, .bearer = "tok" };
	struct http_resp resp;
	struct err e = { 0 };

	(void)state;
	assert_true(http_do(&req, &resp, &e));
	assert_int_equal(resp.status, 200);
	assert_int_equal(resp.attempts, 1);
	assert_string_equal(resp.body, "PUT|Bearer tok|hello|payload");
	assert_int_equal(resp.body_len, strlen(resp.body));
	assert_string_equal(http_resp_header(&resp, "X-REPLY"), "Yes");
	assert_null(http_resp_header(&resp, "x-missing"));
	assert_int_equal(resp.retry_after, -1);
	assert_string_equal(resp.error, "");
	http_resp_cleanup(&resp);

	req = (struct http_req){ .url = url("/nothing-here") };
	assert_true(http_do(&req, &resp, &e));		/* a 404 is still a response */
	assert_int_equal(resp.status, 404);
	assert_string_equal(resp.body, "no");
	http_resp_cleanup(&resp);
}

static void
test_concurrency(void **state)
{
	struct http_batch *b = http_batch_new(10);
	struct result res[10] = { 0 };
	struct err e = { 0 };
	int64_t t0 = now_ms(), elapsed;

	(void)state;
	assert_non_null(b);
	for (int i = 0; i < 10; i++) {
		struct http_req req = { .url = url("/delay/200"), .done = collect,
		    .user = &res[i] };

		assert_true(http_batch_add(b, &req, &e));
	}
	assert_true(http_batch_run(b, &e));
	elapsed = now_ms() - t0;
	for (int i = 0; i < 10; i++) {
		assert_int_equal(res[i].status, 200);
		assert_string_equal(res[i].body, "slept");
	}
	assert_true(elapsed < 1000);	/* serial would be >= 2000 */
	assert_true(S.max_inflight > 1);
	http_batch_free(b);
}

static void
test_concurrency_bound(void **state)
{
	struct http_batch *b = http_batch_new(2);
	struct result res[4] = { 0 };
	struct err e = { 0 };
	int64_t t0 = now_ms();

	(void)state;
	for (int i = 0; i < 4; i++) {
		struct http_req req = { .url = url("/delay/150"), .done = collect,
		    .user = &res[i] };

		assert_true(http_batch_add(b, &req, &e));
	}
	assert_true(http_batch_run(b, &e));
	for (int i = 0; i < 4; i++)
		assert_int_equal(res[i].status, 200);
	assert_true(now_ms() - t0 >= 290);	/* two rounds of two */
	assert_true(S.max_inflight <= 2);
	http_batch_free(b);
}

static void
test_timeout_others_complete(void **state)
{
	struct http_batch *b = http_batch_new(0);
	struct result hang = { 0 }, ok[3] = { { 0 } };
	struct http_req req = { .url = url("/hang"), .timeout_ms = 300, .done = collect,
	    .user = &hang };
	struct err e = { 0 };
	int64_t t0 = now_ms();

	(void)state;
	assert_true(http_batch_add(b, &req, &e));
	for (int i = 0; i < 3; i++) {
		req = (struct http_req){ .url = url("/delay/50"), .done = collect,
		    .user = &ok[i] };
		assert_true(http_batch_add(b, &req, &e));
	}
	assert_true(http_batch_run(b, &e));
	assert_string_equal(hang.code, "http.timeout");
	assert_int_equal(hang.status, 0);
	assert_true(hang.at - t0 >= 250);
	for (int i = 0; i < 3; i++) {
		assert_int_equal(ok[i].status, 200);
		assert_string_equal(ok[i].code, "");
		assert_true(ok[i].at < hang.at);	/* not held up by the hang */
	}
	assert_true(now_ms() - t0 < 2000);
	http_batch_free(b);

	req = (struct http_req){ .url = url("/hang"), .timeout_ms = 200 };
	{
		struct http_resp resp;

		assert_false(http_do(&req, &resp, &e));
		assert_int_equal(e.status, 504);
		assert_string_equal(e.code, "http.timeout");
		assert_true(resp.error[0] != '\0');
		http_resp_cleanup(&resp);
	}
}

static void
test_retry_5xx(void **state)
{
	struct http_req req = { .url = url("/flaky"),
	    .retry = { .max_attempts = 3, .base_delay_ms = 50 } };
	struct http_resp resp;
	struct err e = { 0 };

	(void)state;
	assert_true(http_do(&req, &resp, &e));
	assert_int_equal(resp.status, 200);
	assert_int_equal(resp.attempts, 2);
	assert_string_equal(resp.body, "ok");
	assert_int_equal(S.hits_flaky, 2);
	http_resp_cleanup(&resp);

	req.url = url("/always503");		/* gives up after max_attempts */
	assert_true(http_do(&req, &resp, &e));
	assert_int_equal(resp.status, 503);
	assert_int_equal(resp.attempts, 3);
	http_resp_cleanup(&resp);

	req = (struct http_req){ .url = url("/always503") };	/* no policy: one try */
	assert_true(http_do(&req, &resp, &e));
	assert_int_equal(resp.status, 503);
	assert_int_equal(resp.attempts, 1);
	http_resp_cleanup(&resp);
}

static void
test_retry_after_429(void **state)
{
	struct http_req req = { .url = url("/limited?ra=1"),
	    .retry = { .max_attempts = 3, .base_delay_ms = 10, .max_delay_ms = 5000 } };
	struct http_resp resp;
	struct err e = { 0 };

	(void)state;
	assert_true(http_do(&req, &resp, &e));
	assert_int_equal(resp.status, 200);
	assert_int_equal(resp.attempts, 2);
	assert_int_equal(S.hits_limited, 2);
	assert_true(S.t_limited[1] - S.t_limited[0] >= 950);	/* waited ~1 s, not 10 ms */
	assert_true(S.t_limited[1] - S.t_limited[0] < 3000);
	http_resp_cleanup(&resp);
}

static void
test_retry_after_capped(void **state)
{
	struct http_req req = { .url = url("/limited?ra=60"),
	    .retry = { .max_attempts = 2, .base_delay_ms = 10, .max_delay_ms = 200 } };
	struct http_resp resp;
	struct err e = { 0 };

	(void)state;
	assert_true(http_do(&req, &resp, &e));
	assert_int_equal(resp.status, 200);
	assert_int_equal(resp.attempts, 2);
	assert_true(S.t_limited[1] - S.t_limited[0] >= 180);
	assert_true(S.t_limited[1] - S.t_limited[0] < 2000);	/* not 60 s */
	http_resp_cleanup(&resp);

	req = (struct http_req){ .url = url("/limited?ra=7") };	/* no retry: visible */
	assert_true(http_do(&req, &resp, &e));
	assert_int_equal(resp.status, 200);	/* hits_limited was already 2 */
	http_resp_cleanup(&resp);
}

struct cap_case {
	const char	*path;
	size_t		 max_body;
	bool		 ok;
};

static const struct cap_case cap_cases[] = {
	{ "/big/1000", 1000, true },		/* exactly at the cap */
	{ "/big/1001", 1000, false },		/* Content-Length over the cap */
	{ "/stream/300000", 100000, false },	/* no length: cut while reading */
	{ "/stream/300000", 0, true },		/* default cap is 16 MiB */
	{ "/stream/17825792", 0, false },	/* 17 MiB > default */
};

static void
test_body_cap(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(cap_cases) / sizeof(cap_cases[0]); i++) {
		const struct cap_case *c = &cap_cases[i];
		struct http_req req = { .url = url(c->path), .max_body = c->max_body,
		    .retry = { .max_attempts = 3 } };	/* never retried */
		struct http_resp resp;
		struct err e = { 0 };
		bool ok = http_do(&req, &resp, &e);

		if (ok != c->ok)
			fail_msg("%s cap %zu: got %d (%s)", c->path, c->max_body, ok, e.code);
		if (!ok) {
			assert_string_equal(e.code, "http.body_too_large");
			assert_int_equal(e.status, 502);
			assert_int_equal(resp.attempts, 1);
			assert_true(resp.body_len <= (c->max_body ? c->max_body :
			    HTTP_MAX_BODY_DEFAULT));
		} else {
			assert_int_equal(resp.status, 200);
			assert_int_equal(resp.body_len, strtoul(strrchr(c->path, '/') + 1,
			    NULL, 10));
		}
		http_resp_cleanup(&resp);
	}
}

/* A done callback that follows X-Next, adding the next page to the same batch. */
struct pages {
	char	seen[8][16];
	int	n;
};

static void
next_page(struct http_batch *b, const struct http_req *req, struct http_resp *resp,
    const struct err *e)
{
	struct pages *p = req->user;
	const char *next = http_resp_header(resp, "x-next");

	assert_null(e);
	assert_true(p->n < 8);
	snprintf(p->seen[p->n++], sizeof(p->seen[0]), "%s", resp->body);
	if (next != NULL) {
		struct http_req nr = *req;
		struct err e2 = { 0 };

		nr.url = url(next);
		assert_true(http_batch_add(b, &nr, &e2));
	}
}

static void
test_pagination(void **state)
{
	struct http_batch *b = http_batch_new(4);
	struct pages p = { 0 };
	struct http_req req = { .url = url("/page/1"), .done = next_page, .user = &p };
	struct err e = { 0 };

	(void)state;
	assert_true(http_batch_add(b, &req, &e));
	assert_true(http_batch_run(b, &e));
	assert_int_equal(p.n, 3);
	assert_string_equal(p.seen[0], "page 1");
	assert_string_equal(p.seen[1], "page 2");
	assert_string_equal(p.seen[2], "page 3");
	http_batch_free(b);
}

static void
test_transport_errors(void **state)
{
	struct sockaddr_in a = { .sin_family = AF_INET };
	socklen_t alen = sizeof(a);
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	char dead[64];
	struct http_req req = { 0 };
	struct http_resp resp;
	struct err e = { 0 };

	(void)state;
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
	assert_int_equal(getsockname(fd, (struct sockaddr *)&a, &alen), 0);
	close(fd);	/* nothing listens there now */
	snprintf(dead, sizeof(dead), "http://127.0.0.1:%d/", ntohs(a.sin_port));
	req.url = dead;
	req.retry = (struct http_retry){ .max_attempts = 2, .base_delay_ms = 10 };
	assert_false(http_do(&req, &resp, &e));
	assert_int_equal(e.status, 502);
	assert_string_equal(e.code, "http.transport");
	assert_int_equal(resp.attempts, 2);
	assert_int_equal(resp.status, 0);
	http_resp_cleanup(&resp);

	req = (struct http_req){ .url = "ftp://127.0.0.1/" };
	assert_false(http_do(&req, &resp, &e));
	assert_string_equal(e.code, "http.bad_request");
	http_resp_cleanup(&resp);
	http_batch_free(NULL);
	http_resp_cleanup(NULL);
}

/* Self-signed P-256 certificate for IP 127.0.0.1; returns its PEM. */
static char *
make_cert(EVP_PKEY **key, X509 **cert)
{
	EVP_PKEY *k = EVP_EC_gen("P-256");
	X509 *x = X509_new();
	X509_NAME *name = X509_get_subject_name(x);
	X509V3_CTX v3;
	X509_EXTENSION *ext;
	BIO *bio = BIO_new(BIO_s_mem());
	char *data, *pem;
	long n;

	X509_set_version(x, 2);
	ASN1_INTEGER_set(X509_get_serialNumber(x), 1);
	X509_gmtime_adj(X509_getm_notBefore(x), -60);
	X509_gmtime_adj(X509_getm_notAfter(x), 3600);
	X509_set_pubkey(x, k);
	X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC,
	    (const unsigned char *)"fleetd test", -1, -1, 0);
	X509_set_issuer_name(x, name);
	X509V3_set_ctx_nodb(&v3);
	X509V3_set_ctx(&v3, x, x, NULL, NULL, 0);
	ext = X509V3_EXT_conf_nid(NULL, &v3, NID_subject_alt_name, "IP:127.0.0.1");
	X509_add_ext(x, ext, -1);
	X509_EXTENSION_free(ext);
	ext = X509V3_EXT_conf_nid(NULL, &v3, NID_basic_constraints, "critical,CA:TRUE");
	X509_add_ext(x, ext, -1);
	X509_EXTENSION_free(ext);
	assert_true(X509_sign(x, k, EVP_sha256()) > 0);
	assert_int_equal(PEM_write_bio_X509(bio, x), 1);
	n = BIO_get_mem_data(bio, &data);
	pem = strndup(data, (size_t)n);
	BIO_free(bio);
	*key = k;
	*cert = x;
	return pem;
}

static void
test_tls_ca_pem(void **state)
{
	SSL_CTX *ctx = SSL_CTX_new(TLS_server_method());
	EVP_PKEY *key, *key2;
	X509 *cert, *cert2;
	char *pem = make_cert(&key, &cert), *other = make_cert(&key2, &cert2);
	char u[64];
	struct http_req req = { .url = u, .timeout_ms = 5000 };
	struct http_resp resp;
	struct err e = { 0 };

	(void)state;
	assert_int_equal(SSL_CTX_use_certificate(ctx, cert), 1);
	assert_int_equal(SSL_CTX_use_PrivateKey(ctx, key), 1);
	atomic_store(&S.tls, ctx);
	snprintf(u, sizeof(u), "https://127.0.0.1:%d/", S.port);

	req.ca_pem = pem;			/* trusted through the in-memory CA */
	assert_true(http_do(&req, &resp, &e));
	assert_int_equal(resp.status, 200);
	assert_string_equal(resp.body, "tls");
	http_resp_cleanup(&resp);

	req.ca_pem = other;			/* some other CA: refused */
	assert_false(http_do(&req, &resp, &e));
	assert_string_equal(e.code, "http.transport");
	assert_non_null(strstr(resp.error, "certificate"));
	http_resp_cleanup(&resp);

	req.ca_pem = NULL;			/* system store does not know it */
	assert_false(http_do(&req, &resp, &e));
	assert_string_equal(e.code, "http.transport");
	http_resp_cleanup(&resp);

	free(pem);
	free(other);
	X509_free(cert);
	X509_free(cert2);
	EVP_PKEY_free(key);
	EVP_PKEY_free(key2);
}

#define T(f) cmocka_unit_test_setup_teardown(f, srv_start, srv_stop)

int
main(void)
{
	const struct CMUnitTest tests[] = {
		T(test_do_echo),
		T(test_concurrency),
		T(test_concurrency_bound),
		T(test_timeout_others_complete),
		T(test_retry_5xx),
		T(test_retry_after_429),
		T(test_retry_after_capped),
		T(test_body_cap),
		T(test_pagination),
		T(test_transport_errors),
		T(test_tls_ca_pem),
	};

	return cmocka_run_group_tests_name("http", tests, NULL, NULL);
}
