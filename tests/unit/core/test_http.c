/* test_http: http_do and the multi batch against a tiny thread-per-connection HTTP
 * server on 127.0.0.1 (tests/unit/core/http_server.h). */
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cmocka.h>

#include "core/http.h"
#include "tests/unit/core/http_server.h"

#if defined(__SANITIZE_ADDRESS__)
/* libasan's (sanitizer/allocator_interface.h, which GCC does not install) */
int	__sanitizer_install_malloc_and_free_hooks(void (*)(const volatile void *, size_t),
	    void (*)(const volatile void *));

/* Allocations of 64 KiB or more while counting (every thread's): glibc merges its fastbins
 * and may trim the heap when such a chunk is freed. */
static atomic_bool big_counting;
static atomic_int big_allocs;

static void
big_hook(const volatile void *p, size_t n)
{
	(void)p;
	if (n >= 65536 && atomic_load(&big_counting))
		atomic_fetch_add(&big_allocs, 1);
}

static void
free_hook(const volatile void *p)
{
	(void)p;
}
#endif

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

static int
tls_count(const int *field)
{
	int n;

	pthread_mutex_lock(&S.mu);
	n = *field;
	pthread_mutex_unlock(&S.mu);
	return n;
}

/* One GET with trusted CA ca; the status it got (0: no answer). */
static long
tls_get(const char *u, const char *ca)
{
	struct http_req req = { .url = u, .ca_pem = ca, .timeout_ms = 5000 };
	struct http_resp resp;
	struct err e = { 0 };
	long status = 0;

	if (http_do(&req, &resp, &e) && resp.body != NULL && strcmp(resp.body, "tls") == 0)
		status = resp.status;
	http_resp_cleanup(&resp);
	return status;
}

struct tls_thread {
	const char	*url;
	const char	*ca;
	long		 status;
};

static void *
tls_thread_main(void *arg)
{
	struct tls_thread *t = arg;

	t->status = tls_get(t->url, t->ca);
	return NULL;
}

/* n GETs of u at once on a batch of their own (as each fetch and apply round makes one). */
static void
tls_round(const char *u, const char *ca, int n)
{
	struct http_batch *b = http_batch_new(n);
	struct result r[32];
	struct err e = { 0 };

	assert_true(n <= 32);
	memset(r, 0, sizeof(r));
	for (int i = 0; i < n; i++) {
		struct http_req req = { .url = u, .ca_pem = ca, .timeout_ms = 5000,
		    .done = collect, .user = &r[i] };

		assert_true(http_batch_add(b, &req, &e));
	}
	assert_true(http_batch_run(b, &e));
	http_batch_free(b);
	for (int i = 0; i < n; i++) {
		assert_int_equal(r[i].status, 200);
		assert_string_equal(r[i].body, "tls");
	}
}

/* Calls to one server share the thread's kept connection: http_do's, and those of batches
 * made and freed per call, which each had their own connection cache and so a new TCP
 * connection, TLS handshake and CA load per call.  A round of parallel calls keeps its
 * connections (curl's default cap of 4 per handle of a multi closed them again).  A new
 * connection resumes the thread's TLS session.  A call trusting another CA never gets a
 * connection verified against a different one; another thread has its own connections. */
static void
test_tls_reuse(void **state)
{
	SSL_CTX *ctx = SSL_CTX_new(TLS_server_method());
	EVP_PKEY *key, *key2;
	X509 *cert, *cert2;
	char *pem = make_cert(&key, &cert), *other = make_cert(&key2, &cert2), *both;
	char u[64], slow[64], last[64];
	struct tls_thread t;
	pthread_t thr;
	long opened = http_connects();
	int resumed;

	(void)state;
	assert_int_equal(SSL_CTX_use_certificate(ctx, cert), 1);
	assert_int_equal(SSL_CTX_use_PrivateKey(ctx, key), 1);
	atomic_store(&S.tls, ctx);
	snprintf(u, sizeof(u), "https://127.0.0.1:%d/", S.port);
	snprintf(slow, sizeof(slow), "https://127.0.0.1:%d/slow", S.port);
	snprintf(last, sizeof(last), "https://127.0.0.1:%d/close", S.port);

	for (int i = 0; i < 5; i++)
		assert_int_equal(tls_get(u, pem), 200);
	assert_int_equal(tls_count(&S.tls_conns), 1);
	assert_int_equal(tls_count(&S.tls_resumed), 0);
	assert_int_equal(http_connects() - opened, 1);
	for (int i = 0; i < 3; i++)
		tls_round(u, pem, 1);
	assert_int_equal(tls_count(&S.tls_conns), 1);

	tls_round(slow, pem, 8);		/* 7 more, all kept */
	assert_int_equal(tls_count(&S.tls_conns), 8);
	for (int i = 0; i < 3; i++)
		assert_int_equal(tls_get(u, pem), 200);
	tls_round(slow, pem, 8);
	assert_int_equal(tls_count(&S.tls_conns), 8);
	assert_int_equal(http_connects() - opened, 8);

	for (int i = 0; i < 8; i++)		/* the server closes each of them */
		assert_int_equal(tls_get(last, pem), 200);
	resumed = tls_count(&S.tls_resumed);
	assert_int_equal(tls_get(u, pem), 200);	/* a new one resumes the TLS session */
	assert_int_equal(tls_count(&S.tls_conns), 9);
	assert_int_equal(tls_count(&S.tls_resumed), resumed + 1);

	assert_int_equal(tls_get(u, other), 0);	/* not through the kept connection */
	assert_int_equal(tls_count(&S.tls_conns), 9);
	assert_non_null(both = malloc(strlen(pem) + strlen(other) + 1));
	strcpy(both, other);
	strcat(both, pem);
	assert_int_equal(tls_get(u, both), 200);	/* another CA blob: a connection of its own */
	assert_int_equal(tls_count(&S.tls_conns), 10);
	assert_int_equal(tls_get(u, pem), 200);
	assert_int_equal(tls_count(&S.tls_conns), 10);

	t = (struct tls_thread){ .url = u, .ca = pem };
	assert_int_equal(pthread_create(&thr, NULL, tls_thread_main, &t), 0);
	assert_int_equal(pthread_join(thr, NULL), 0);
	assert_int_equal(t.status, 200);
	assert_int_equal(tls_count(&S.tls_conns), 11);
	assert_int_equal(tls_count(&S.tls_resumed), resumed + 1);

	free(pem);
	free(other);
	free(both);
	X509_free(cert);
	X509_free(cert2);
	EVP_PKEY_free(key);
	EVP_PKEY_free(key2);
}

/* One PATCH of n bytes to u (a kept TLS connection); the length the server read. */
static long
tls_patch(const char *u, const char *ca, size_t n)
{
	char *body = malloc(n);
	struct http_req req = { .method = "PATCH", .url = u, .ca_pem = ca, .body = body,
	    .body_len = n, .timeout_ms = 5000 };
	struct http_resp resp;
	struct err e = { 0 };
	long got = -1;

	assert_non_null(body);
	memset(body, 'x', n);
	if (http_do(&req, &resp, &e) && resp.status == 200 && resp.body != NULL)
		got = atol(resp.body);
	http_resp_cleanup(&resp);
	free(body);
	return got;
}

/* A request over TLS on a kept connection allocates no buffer of 64 KiB: libcurl's
 * default upload buffer was one per request, and its free at glibc's consolidation
 * threshold cost the dispatcher malloc_consolidate and heap trims per apply.  A body
 * larger than the smaller buffer still arrives whole, on the same connection. */
static void
test_tls_upload_buffer(void **state)
{
	SSL_CTX *ctx = SSL_CTX_new(TLS_server_method());
	EVP_PKEY *key;
	X509 *cert;
	char *pem = make_cert(&key, &cert), u[64];
	long opened;

	(void)state;
	assert_int_equal(SSL_CTX_use_certificate(ctx, cert), 1);
	assert_int_equal(SSL_CTX_use_PrivateKey(ctx, key), 1);
	atomic_store(&S.tls, ctx);
	snprintf(u, sizeof(u), "https://127.0.0.1:%d/len", S.port);
	assert_int_equal(tls_patch(u, pem, 8192), 8192);	/* the connection, kept */
	opened = http_connects();
	assert_int_equal(tls_patch(u, pem, 16385), 16385);	/* one byte over the buffer */
	assert_int_equal(tls_patch(u, pem, 300000), 300000);	/* in many pieces */
	assert_int_equal(tls_patch(u, pem, 10), 10);
	assert_int_equal(http_connects() - opened, 0);
#if defined(__SANITIZE_ADDRESS__)
	assert_int_not_equal(__sanitizer_install_malloc_and_free_hooks(big_hook,
	    free_hook), 0);
	atomic_store(&big_allocs, 0);
	atomic_store(&big_counting, true);
	for (int i = 0; i < 10; i++)		/* a Ray object's size */
		assert_int_equal(tls_patch(u, pem, 8192), 8192);
	atomic_store(&big_counting, false);
	assert_int_equal(atomic_load(&big_allocs), 0);
#endif
	free(pem);
	X509_free(cert);
	EVP_PKEY_free(key);
#if !defined(__SANITIZE_ADDRESS__)
	skip();	/* counting allocations needs the sanitizer's hooks (build/asan) */
#endif
}

/* With no stream open, a poll still waits its time: the status watcher's loop calls it
 * between rounds and spun a core while every member refused its watches. */
static void
test_streams_poll_idle_waits(void **state)
{
	struct http_streams *ss = http_streams_new();
	int64_t t0 = now_ms();

	(void)state;
	assert_non_null(ss);
	for (int i = 0; i < 5; i++)
		assert_int_equal(http_streams_poll(ss, 20), 0);
	assert_true(now_ms() - t0 >= 90);
	http_streams_free(ss);
}


/* The cap http_size_caches sets is what a thread's cache keeps: rounds of 24 concurrent
 * requests over TLS keep-alive; under the cap's floor (16: a reserve larger than the
 * limit) each round opens 8 connections again, under the limit's share none. */
static void
test_caches_sized_from_limit(void **state)
{
	SSL_CTX *ctx = SSL_CTX_new(TLS_server_method());
	EVP_PKEY *key;
	X509 *cert;
	char *pem = make_cert(&key, &cert), slow[64];
	struct rlimit rl, low;
	long nofile = 0, keep, opened;

	(void)state;
	assert_int_equal(http_keep_for(1024, 256, 8), 96);
	assert_int_equal(http_keep_for(1048576, 300, 40), 2000);
	assert_int_equal(http_keep_for(300, 400, 8), 16);
	assert_int_equal(http_keep_for(4096, 0, 0), 2000);	/* threads < 1 taken as 1 */

	/* the soft limit is raised to the hard one */
	assert_int_equal(getrlimit(RLIMIT_NOFILE, &rl), 0);
	low = rl;
	low.rlim_cur = rl.rlim_max < 512 ? rl.rlim_max : 512;
	assert_int_equal(setrlimit(RLIMIT_NOFILE, &low), 0);
	keep = http_size_caches(256, 8, &nofile);
	assert_int_equal(getrlimit(RLIMIT_NOFILE, &low), 0);
	assert_true(low.rlim_cur == rl.rlim_max);
	assert_true(nofile >= 512);
	assert_int_equal(keep, http_keep_for(nofile, 256, 8));

	assert_int_equal(SSL_CTX_use_certificate(ctx, cert), 1);
	assert_int_equal(SSL_CTX_use_PrivateKey(ctx, key), 1);
	atomic_store(&S.tls, ctx);
	snprintf(slow, sizeof(slow), "https://127.0.0.1:%d/slow", S.port);
	assert_int_equal(http_size_caches(LONG_MAX / 2, 1, NULL), 16);
	tls_round(slow, pem, 24);
	opened = http_connects();
	tls_round(slow, pem, 24);
	assert_int_equal(http_connects() - opened, 8);
	assert_int_equal(http_size_caches(0, 1, NULL), http_keep_for(nofile, 0, 1));
	tls_round(slow, pem, 24);
	opened = http_connects();
	tls_round(slow, pem, 24);
	assert_int_equal(http_connects() - opened, 0);
	free(pem);
	X509_free(cert);
	EVP_PKEY_free(key);
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
		T(test_tls_reuse),
		T(test_tls_upload_buffer),
		T(test_caches_sized_from_limit),
		cmocka_unit_test(test_streams_poll_idle_waits),
	};

	return cmocka_run_group_tests_name("http", tests, NULL, NULL);
}
