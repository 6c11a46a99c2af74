/* http: libcurl multi-interface batch (no thread per request) with per-request
 * timeouts, retries with backoff, Retry-After, body caps; http_do is a batch of one.
 * Every batch of a thread draws on that thread's connection, TLS session and DNS caches. */
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/resource.h>
#include <time.h>

#include <curl/curl.h>

#include "core/crypto.h"
#include "core/http.h"

#define RETRY_BASE_DEFAULT_MS	100
#define RETRY_MAX_DEFAULT_MS	10000
#define POLL_MAX_MS		1000
/* Idle connections one thread keeps open: more than the fleet's members and clouds, or
 * a refresh that visits them in turn evicts each one just before it is needed again (300
 * clusters under a cap of 256 opened 195 connections per warm refresh).  KEEP_CONNS_MAX
 * until http_size_caches shares the process's open-file limit among the threads. */
#define KEEP_CONNS_MAX		2000
#define KEEP_CONNS_MIN		16
/* The upload buffer a transfer allocates and frees (libcurl 7.88 copies every HTTPS
 * request into it, body included): curl's least, 16 KiB, instead of its default 64 KiB,
 * whose free (at glibc's 64 KiB consolidation threshold) merged the heap's fastbins once
 * per apply (malloc_consolidate in bench/profiles/dispatch.txt).  A larger body goes out
 * in pieces of this size. */
#define UPLOAD_BUFFER		16384L

/* One request and its current attempt; owns deep copies of everything in req. */
struct call {
	struct http_req		 req;
	struct http_header	*hdrs;		/* owned copies behind req.headers */
	struct curl_slist	*slist;
	CURL			*easy;
	struct http_resp	 resp;
	size_t			 body_cap;
	size_t			 hdr_cap;
	bool			 too_large;
	int64_t			 not_before;	/* monotonic ms; 0 = now */
	struct call		*next;
};

struct http_batch {
	CURLM		*multi;
	int		 max;
	int		 running;
	struct call	*queue;		/* waiting to start, in order */
	struct call	**qtail;	/* the last queued call's next (&queue when
					 * empty): a refresh queues thousands of calls */
	struct call	*active;	/* attached to multi */
};

static pthread_once_t global_once = PTHREAD_ONCE_INIT;
static CURLcode global_rc = CURLE_FAILED_INIT;
static atomic_long connects;	/* connections opened, process-wide */
static atomic_long keep_conns = KEEP_CONNS_MAX;

static void
global_init(void)
{
	global_rc = curl_global_init(CURL_GLOBAL_DEFAULT);
}

/* ---- the thread's caches ----
 * Without them every batch (a fetch, an apply round) had its own multi handle and so its
 * own connection cache: each call to a member or cloud opened a new TCP connection, made a
 * full TLS handshake and loaded its CA again.  Now all batches and http_do calls of a
 * thread share one curl share object holding the connection cache, the TLS sessions and
 * DNS.  One per thread because libcurl does not support one connection cache used by
 * concurrent threads; the dispatcher keeps a cluster's work on one thread, so its calls
 * find the connection.  libcurl reuses a connection (or a TLS session) only for a request
 * whose TLS settings match, CA blob included: a cluster with another CA never gets a
 * connection verified against a different one.  Freed when the thread ends. */
/* Reset easy handles a thread keeps for its next calls: a dispatch round runs
 * FLEETD_MEMBER_ROUND (4) at once on a thread (kube_obj.c's batch); each kept one holds
 * about 24 KiB (its struct and receive buffer), so 64 dispatch threads keep at most about
 * 12 MiB. */
#define IDLE_EASY_MAX		8

struct thread_cache {
	CURLSH	*sh;
	/* Easy handles of finished calls, reset (curl_easy_reset keeps the share): a new
	 * handle per call was a few KiB of struct plus a 16 KiB receive buffer allocated,
	 * zeroed and freed per request, which with 64 dispatch threads showed as malloc,
	 * free and malloc_consolidate in bench/profiles/dispatch.txt. */
	CURL	*idle[IDLE_EASY_MAX];
	int	 nidle;
};

static pthread_key_t share_key;
static pthread_once_t share_once = PTHREAD_ONCE_INIT;

static void
share_free(void *arg)
{
	struct thread_cache *tc = arg;

	while (tc->nidle > 0)
		curl_easy_cleanup(tc->idle[--tc->nidle]);
	curl_share_cleanup(tc->sh);	/* closes the kept connections */
	free(tc);
}

static void
share_key_init(void)
{
	if (pthread_key_create(&share_key, share_free) != 0)
		abort();
}

/* This thread's caches, made on first use; NULL when they cannot be made (calls then
 * simply do not share). */
static struct thread_cache *
thread_cache(void)
{
	struct thread_cache *tc;
	CURLSH *sh;

	pthread_once(&share_once, share_key_init);
	if ((tc = pthread_getspecific(share_key)) != NULL)
		return tc;
	if ((sh = curl_share_init()) == NULL)
		return NULL;
	if ((tc = calloc(1, sizeof(*tc))) == NULL ||
	    curl_share_setopt(sh, CURLSHOPT_SHARE, CURL_LOCK_DATA_CONNECT) != CURLSHE_OK ||
	    curl_share_setopt(sh, CURLSHOPT_SHARE, CURL_LOCK_DATA_SSL_SESSION) != CURLSHE_OK ||
	    curl_share_setopt(sh, CURLSHOPT_SHARE, CURL_LOCK_DATA_DNS) != CURLSHE_OK ||
	    pthread_setspecific(share_key, tc) != 0) {
		curl_share_cleanup(sh);
		free(tc);
		return NULL;
	}
	tc->sh = sh;
	return tc;
}

/* An easy handle for a call of this thread: a kept one (reset) or a new one. */
static CURL *
easy_get(void)
{
	struct thread_cache *tc = thread_cache();

	if (tc != NULL && tc->nidle > 0)
		return tc->idle[--tc->nidle];
	return curl_easy_init();
}

/* Gives back a handle no multi holds: reset and kept for the thread's next call, or
 * cleaned up when the thread keeps enough. */
static void
easy_put(CURL *h)
{
	struct thread_cache *tc = pthread_getspecific(share_key);

	if (h == NULL)
		return;
	if (tc == NULL || tc->nidle >= IDLE_EASY_MAX) {
		curl_easy_cleanup(h);
		return;
	}
	/* out of the share first (as a cleanup would): a kept handle holds no thread's share
	 * in use, whichever thread keeps it and whenever either is freed */
	curl_easy_setopt(h, CURLOPT_SHARE, NULL);
	curl_easy_reset(h);
	tc->idle[tc->nidle++] = h;
}

long
http_connects(void)
{
	return atomic_load(&connects);
}

static int64_t
now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* ---- responses ---- */

static void
resp_reset(struct http_resp *r)
{
	int attempts = r->attempts;

	http_resp_cleanup(r);
	r->attempts = attempts;
}

void
http_resp_cleanup(struct http_resp *r)
{
	if (r == NULL)
		return;
	for (size_t i = 0; i < r->nheaders; i++) {
		free((char *)r->headers[i].name);
		free((char *)r->headers[i].value);
	}
	free(r->headers);
	free(r->body);
	memset(r, 0, sizeof(*r));
	r->retry_after = -1;
}

const char *
http_resp_header(const struct http_resp *r, const char *name)
{
	for (size_t i = 0; r != NULL && i < r->nheaders; i++)
		if (strcasecmp(r->headers[i].name, name) == 0)
			return r->headers[i].value;
	return NULL;
}

static size_t
on_body(char *p, size_t size, size_t n, void *ud)
{
	struct call *c = ud;
	size_t len = size * n, max = c->req.max_body;

	if (c->req.on_data != NULL)
		return c->req.on_data(p, len, c->req.data_user) ? len : 0;
	if (len > max - c->resp.body_len) {
		c->too_large = true;
		return 0;	/* aborts the transfer with CURLE_WRITE_ERROR */
	}
	if (c->resp.body_len + len + 1 > c->body_cap) {
		size_t cap = c->body_cap ? c->body_cap : 4096;
		char *nb;

		while (cap < c->resp.body_len + len + 1)
			cap *= 2;
		nb = realloc(c->resp.body, cap);
		if (nb == NULL)
			return 0;
		c->resp.body = nb;
		c->body_cap = cap;
	}
	memcpy(c->resp.body + c->resp.body_len, p, len);
	c->resp.body_len += len;
	c->resp.body[c->resp.body_len] = '\0';
	return len;
}

static bool
hdr_push(struct call *c, const char *name, size_t nlen, const char *val, size_t vlen)
{
	struct http_resp *r = &c->resp;
	char *n, *v;

	if (r->nheaders == c->hdr_cap) {
		size_t cap = c->hdr_cap ? c->hdr_cap * 2 : 16;
		struct http_header *nh = realloc(r->headers, cap * sizeof(*nh));

		if (nh == NULL)
			return false;
		r->headers = nh;
		c->hdr_cap = cap;
	}
	n = strndup(name, nlen);
	v = strndup(val, vlen);
	if (n == NULL || v == NULL) {
		free(n);
		free(v);
		return false;
	}
	for (char *q = n; *q != '\0'; q++)
		if (*q >= 'A' && *q <= 'Z')
			*q = (char)(*q - 'A' + 'a');
	r->headers[r->nheaders].name = n;
	r->headers[r->nheaders++].value = v;
	return true;
}

/* One header line per call; a status line starts a new header set (1xx, redirects). */
static size_t
on_header(char *p, size_t size, size_t n, void *ud)
{
	struct call *c = ud;
	size_t len = size * n, nlen, vs;
	const char *colon;

	if (len >= 5 && strncmp(p, "HTTP/", 5) == 0) {
		for (size_t i = 0; i < c->resp.nheaders; i++) {
			free((char *)c->resp.headers[i].name);
			free((char *)c->resp.headers[i].value);
		}
		c->resp.nheaders = 0;
		return len;
	}
	while (len > 0 && (p[len - 1] == '\r' || p[len - 1] == '\n'))
		len--;
	colon = memchr(p, ':', len);
	if (colon == NULL)
		return size * n;
	nlen = (size_t)(colon - p);
	vs = nlen + 1;
	while (vs < len && (p[vs] == ' ' || p[vs] == '\t'))
		vs++;
	while (len > vs && (p[len - 1] == ' ' || p[len - 1] == '\t'))
		len--;
	return hdr_push(c, p, nlen, p + vs, len - vs) ? size * n : 0;
}

/* Retry-After: delta seconds or an HTTP date; -1 when absent or unreadable. */
static int
retry_after(const struct http_resp *r)
{
	const char *v = http_resp_header(r, "retry-after");
	time_t t;

	if (v == NULL || *v == '\0')
		return -1;
	if (strspn(v, "0123456789") == strlen(v))
		return strlen(v) > 6 ? 999999 : atoi(v);
	t = curl_getdate(v, NULL);
	if (t < 0)
		return -1;
	return t <= time(NULL) ? 0 : (int)(t - time(NULL) > 999999 ? 999999 : t - time(NULL));
}

/* ---- calls ---- */

static void
call_free(struct call *c)
{
	if (c == NULL)
		return;
	easy_put(c->easy);	/* before the strings it points at (the CA blob) */
	curl_slist_free_all(c->slist);
	for (size_t i = 0; i < c->req.nheaders; i++) {
		free((char *)c->hdrs[i].name);
		free((char *)c->hdrs[i].value);
	}
	free(c->hdrs);
	free((char *)c->req.method);
	free((char *)c->req.url);
	free((void *)c->req.body);
	free((char *)c->req.ca_pem);
	free((char *)c->req.bearer);
	http_resp_cleanup(&c->resp);
	free(c);
}

static bool
dup_str(const char **dst, const char *src)
{
	if (src == NULL)
		return true;
	*dst = strdup(src);
	return *dst != NULL;
}

static bool
slist_add(struct curl_slist **l, const char *name, const char *value)
{
	size_t n = strlen(name) + strlen(value) + 3;
	struct curl_slist *nl;
	char *line = malloc(n);

	if (line == NULL)
		return false;
	if (*value == '\0')	/* "Name;" sends an empty header in curl */
		snprintf(line, n, "%s;", name);
	else
		snprintf(line, n, "%s: %s", name, value);
	nl = curl_slist_append(*l, line);
	free(line);
	if (nl == NULL)
		return false;
	*l = nl;
	return true;
}

/* Deep copy of req plus its curl header list; NULL on allocation failure. */
static struct call *
call_new(const struct http_req *req)
{
	struct call *c = calloc(1, sizeof(*c));
	bool ok;

	if (c == NULL)
		return NULL;
	c->req = *req;
	c->req.method = c->req.url = c->req.ca_pem = c->req.bearer = NULL;
	c->req.body = NULL;
	c->req.headers = NULL;
	c->req.nheaders = 0;
	c->resp.retry_after = -1;
	if (c->req.timeout_ms <= 0)
		c->req.timeout_ms = HTTP_TIMEOUT_DEFAULT_MS;
	if (c->req.max_body == 0)
		c->req.max_body = HTTP_MAX_BODY_DEFAULT;
	ok = dup_str(&c->req.method, req->method) && dup_str(&c->req.url, req->url) &&
	    dup_str(&c->req.ca_pem, req->ca_pem) && dup_str(&c->req.bearer, req->bearer);
	if (ok && req->body != NULL) {
		void *b = malloc(req->body_len ? req->body_len : 1);

		ok = b != NULL;
		if (ok)
			memcpy(b, req->body, req->body_len);
		c->req.body = b;
	}
	if (ok && req->nheaders > 0) {
		c->hdrs = calloc(req->nheaders, sizeof(*c->hdrs));
		ok = c->hdrs != NULL;
		c->req.headers = c->hdrs;
		for (size_t i = 0; ok && i < req->nheaders; i++) {
			c->req.nheaders++;
			ok = dup_str(&c->hdrs[i].name, req->headers[i].name) &&
			    dup_str(&c->hdrs[i].value, req->headers[i].value ?
			    req->headers[i].value : "") &&
			    slist_add(&c->slist, c->hdrs[i].name, c->hdrs[i].value);
		}
	}
	if (ok && req->bearer != NULL) {
		size_t n = strlen(req->bearer) + 8;
		char *v = malloc(n);

		ok = v != NULL;
		if (ok) {
			snprintf(v, n, "Bearer %s", req->bearer);
			ok = slist_add(&c->slist, "Authorization", v);
			free(v);
		}
	}
	if (ok && req->body != NULL)	/* no 1 s wait for "100 Continue" */
		ok = slist_add(&c->slist, "Expect", "");
	if (!ok) {
		call_free(c);
		return NULL;
	}
	return c;
}

static bool
set_method(CURL *h, const struct http_req *r)
{
	const char *m = r->method ? r->method : (r->body ? "POST" : "GET");
	bool ok = true;

	if (r->body != NULL) {
		ok = curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE,
		    (curl_off_t)r->body_len) == CURLE_OK &&
		    curl_easy_setopt(h, CURLOPT_POSTFIELDS, r->body) == CURLE_OK;
	} else if (strcmp(m, "POST") == 0 || strcmp(m, "PUT") == 0 ||
	    strcmp(m, "PATCH") == 0) {
		ok = curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)0) ==
		    CURLE_OK && curl_easy_setopt(h, CURLOPT_POSTFIELDS, "") == CURLE_OK;
	}
	if (strcmp(m, "HEAD") == 0)
		return ok && curl_easy_setopt(h, CURLOPT_NOBODY, 1L) == CURLE_OK;
	if (strcmp(m, "GET") == 0 && r->body == NULL)
		return ok && curl_easy_setopt(h, CURLOPT_HTTPGET, 1L) == CURLE_OK;
	if (strcmp(m, "POST") == 0)
		return ok;
	return ok && curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, m) == CURLE_OK;
}

/* Creates the easy handle for the next attempt and attaches it to the multi. */
static bool
call_start(struct http_batch *b, struct call *c)
{
	const struct http_req *r = &c->req;
	CURL *h = easy_get();
	struct thread_cache *tc;
	bool ok;

	resp_reset(&c->resp);
	c->body_cap = c->hdr_cap = 0;
	c->too_large = false;
	if (h == NULL)
		return false;
	c->easy = h;
	ok = curl_easy_setopt(h, CURLOPT_URL, r->url) == CURLE_OK &&
	    curl_easy_setopt(h, CURLOPT_PRIVATE, c) == CURLE_OK &&
	    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L) == CURLE_OK &&
	    curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https") == CURLE_OK &&
	    curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, r->timeout_ms) == CURLE_OK &&
	    curl_easy_setopt(h, CURLOPT_ERRORBUFFER, c->resp.error) == CURLE_OK &&
	    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body) == CURLE_OK &&
	    curl_easy_setopt(h, CURLOPT_WRITEDATA, c) == CURLE_OK &&
	    curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, on_header) == CURLE_OK &&
	    curl_easy_setopt(h, CURLOPT_HEADERDATA, c) == CURLE_OK &&
	    curl_easy_setopt(h, CURLOPT_MAXFILESIZE_LARGE,
	    (curl_off_t)r->max_body) == CURLE_OK &&
	    curl_easy_setopt(h, CURLOPT_UPLOAD_BUFFERSIZE, UPLOAD_BUFFER) == CURLE_OK &&
	    curl_easy_setopt(h, CURLOPT_HTTPHEADER, c->slist) == CURLE_OK &&
	    set_method(h, r);
	if (ok && r->ca_pem != NULL) {
		/* not copied: c->req.ca_pem outlives the handle's use (call_free gives the
		 * handle back first); a connection keeps its own copy for matching */
		struct curl_blob blob = { (void *)r->ca_pem, strlen(r->ca_pem),
		    CURL_BLOB_NOCOPY };

		ok = curl_easy_setopt(h, CURLOPT_CAINFO_BLOB, &blob) == CURLE_OK;
	}
	if (ok && (tc = thread_cache()) != NULL)
		ok = curl_easy_setopt(h, CURLOPT_SHARE, tc->sh) == CURLE_OK;
	if (!ok || curl_multi_add_handle(b->multi, h) != CURLM_OK) {
		curl_easy_cleanup(h);
		c->easy = NULL;
		return false;
	}
	c->next = b->active;
	b->active = c;
	b->running++;
	return true;
}

static void
unlink_active(struct http_batch *b, struct call *c)
{
	for (struct call **pp = &b->active; *pp != NULL; pp = &(*pp)->next) {
		if (*pp == c) {
			*pp = c->next;
			break;
		}
	}
	c->next = NULL;
	b->running--;
}

static void
enqueue(struct http_batch *b, struct call *c)
{
	c->next = NULL;
	*b->qtail = c;
	b->qtail = &c->next;
}

/* Wait before the next attempt: Retry-After for 429/503 when given, otherwise
 * base * 2^(attempts-1) with jitter in [d/2, d]; both capped at max_delay_ms. */
static int64_t
backoff_ms(const struct call *c)
{
	int64_t base = c->req.retry.base_delay_ms > 0 ? c->req.retry.base_delay_ms :
	    RETRY_BASE_DEFAULT_MS;
	int64_t cap = c->req.retry.max_delay_ms > 0 ? c->req.retry.max_delay_ms :
	    RETRY_MAX_DEFAULT_MS;
	int64_t d = base;
	uint32_t rnd = 0;

	if ((c->resp.status == 429 || c->resp.status == 503) && c->resp.retry_after >= 0) {
		d = (int64_t)c->resp.retry_after * 1000;
		return d < cap ? d : cap;
	}
	for (int i = 1; i < c->resp.attempts && d < cap; i++)
		d *= 2;
	if (d > cap)
		d = cap;
	if (!crypto_random(&rnd, sizeof(rnd)))
		rnd = (uint32_t)now_ms();
	return d / 2 + (int64_t)(rnd % (uint32_t)(d / 2 + 1));
}

static void
attempt_error(const struct call *c, CURLcode rc, struct err *e)
{
	if (c->too_large || rc == CURLE_FILESIZE_EXCEEDED)
		err_set(e, 502, "http.body_too_large", "response body exceeds %zu bytes",
		    c->req.max_body);
	else if (rc == CURLE_OPERATION_TIMEDOUT)
		err_set(e, 504, "http.timeout", "request timed out after %ld ms",
		    c->req.timeout_ms);
	else
		err_set(e, 502, "http.transport", "request failed: %s",
		    curl_easy_strerror(rc));
}

/* An attempt ended: requeue it for a retry, or hand the result to done and free. */
static void
call_finish(struct http_batch *b, struct call *c, CURLcode rc)
{
	struct err e = { 0 };
	long status = 0, opened = 0;
	bool retry;

	curl_easy_getinfo(c->easy, CURLINFO_RESPONSE_CODE, &status);
	if (curl_easy_getinfo(c->easy, CURLINFO_NUM_CONNECTS, &opened) == CURLE_OK)
		atomic_fetch_add(&connects, opened);
	curl_multi_remove_handle(b->multi, c->easy);
	easy_put(c->easy);
	c->easy = NULL;
	unlink_active(b, c);
	c->resp.attempts++;
	c->resp.status = rc == CURLE_OK ? status : 0;
	c->resp.retry_after = retry_after(&c->resp);
	if (rc == CURLE_OK)
		c->resp.error[0] = '\0';
	retry = !c->too_large && rc != CURLE_FILESIZE_EXCEEDED &&
	    (rc != CURLE_OK || c->resp.status >= 500 || c->resp.status == 429);
	if (retry && c->resp.attempts < c->req.retry.max_attempts) {
		c->not_before = now_ms() + backoff_ms(c);
		enqueue(b, c);
		return;
	}
	if (rc != CURLE_OK)
		attempt_error(c, rc, &e);
	if (c->req.done != NULL)
		c->req.done(b, &c->req, &c->resp, rc == CURLE_OK ? NULL : &e);
	call_free(c);
}

/* Starts queued calls that are due while under the concurrency bound; returns the
 * ms until the earliest queued call is due (POLL_MAX_MS when none waits). */
static long
start_due(struct http_batch *b)
{
	int64_t now = now_ms(), wait = POLL_MAX_MS;
	struct call **pp = &b->queue;

	while (*pp != NULL && b->running < b->max) {	/* full: nothing more can start */
		struct call *c = *pp;

		if (c->not_before <= now) {
			*pp = c->next;
			if (b->qtail == &c->next)
				b->qtail = pp;
			if (!call_start(b, c)) {
				struct err e = { 0 };

				err_set(&e, 500, "http.transport", "could not start request");
				c->resp.attempts++;
				if (c->req.done != NULL)
					c->req.done(b, &c->req, &c->resp, &e);
				call_free(c);
			}
			continue;
		}
		if (c->not_before - now < wait)
			wait = c->not_before - now;
		pp = &c->next;
	}
	return (long)(wait < 0 ? 0 : wait);
}

bool
http_batch_run(struct http_batch *b, struct err *e)
{
	for (;;) {
		long wait = start_due(b);
		CURLMsg *msg;
		int still = 0, left = 0, finished = 0;

		if (b->running == 0 && b->queue == NULL)
			return true;
		if (curl_multi_perform(b->multi, &still) != CURLM_OK)
			return err_set(e, 500, "http.multi_failed", "http multi interface failed");
		while ((msg = curl_multi_info_read(b->multi, &left)) != NULL) {
			struct call *c = NULL;

			if (msg->msg != CURLMSG_DONE)
				continue;
			curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, (char **)&c);
			call_finish(b, c, msg->data.result);
			finished++;
		}
		if (finished > 0 || (b->queue != NULL && b->running < b->max && wait == 0))
			continue;	/* slots freed or callbacks queued more: start them */
		if (curl_multi_poll(b->multi, NULL, 0, (int)wait, NULL) != CURLM_OK)
			return err_set(e, 500, "http.multi_failed", "http multi interface failed");
	}
}

long
http_keep_for(long nofile, long reserve, int threads)
{
	long keep;

	if (threads < 1)
		threads = 1;
	keep = nofile > reserve ? (nofile - reserve) / threads : 0;
	if (keep > KEEP_CONNS_MAX)
		return KEEP_CONNS_MAX;
	return keep < KEEP_CONNS_MIN ? KEEP_CONNS_MIN : keep;
}

long
http_size_caches(long reserve, int threads, long *nofile)
{
	struct rlimit rl;
	long n = 1024;		/* what Linux gives a process that could not read its limit */

	if (getrlimit(RLIMIT_NOFILE, &rl) == 0) {
		if (rl.rlim_cur < rl.rlim_max) {
			rlim_t want = rl.rlim_max;

			rl.rlim_cur = want;
			if (setrlimit(RLIMIT_NOFILE, &rl) != 0)	/* keep the old soft limit */
				getrlimit(RLIMIT_NOFILE, &rl);
		}
		n = rl.rlim_cur == RLIM_INFINITY || rl.rlim_cur > (rlim_t)LONG_MAX / 2 ?
		    LONG_MAX / 2 : (long)rl.rlim_cur;
	}
	atomic_store(&keep_conns, http_keep_for(n, reserve, threads));
	if (nofile != NULL)
		*nofile = n;
	return atomic_load(&keep_conns);
}

struct http_batch *
http_batch_new(int max_concurrency)
{
	struct http_batch *b;

	pthread_once(&global_once, global_init);
	if (global_rc != CURLE_OK)
		return NULL;
	b = calloc(1, sizeof(*b));
	if (b == NULL)
		return NULL;
	b->max = max_concurrency > 0 ? max_concurrency : HTTP_CONCURRENCY_DEFAULT;
	b->qtail = &b->queue;
	b->multi = curl_multi_init();
	/* the cap applies to the thread's shared cache; curl's default (4 per handle of
	 * this multi) closed the connections of a finished round down to a few */
	if (b->multi == NULL ||
	    curl_multi_setopt(b->multi, CURLMOPT_MAXCONNECTS, atomic_load(&keep_conns)) != CURLM_OK) {
		curl_multi_cleanup(b->multi);
		free(b);
		return NULL;
	}
	return b;
}

bool
http_batch_add(struct http_batch *b, const struct http_req *req, struct err *e)
{
	struct call *c;

	if (b == NULL || req == NULL || req->url == NULL ||
	    (strncasecmp(req->url, "http://", 7) != 0 &&
	    strncasecmp(req->url, "https://", 8) != 0))
		return err_set(e, 500, "http.bad_request", "request needs an http(s) url");
	if (req->nheaders > 0 && req->headers == NULL)
		return err_set(e, 500, "http.bad_request", "request headers missing");
	c = call_new(req);
	if (c == NULL)
		return err_set(e, 500, "http.bad_request", "out of memory");
	enqueue(b, c);
	return true;
}

void
http_batch_free(struct http_batch *b)
{
	if (b == NULL)
		return;
	while (b->active != NULL) {
		struct call *c = b->active;

		b->active = c->next;
		curl_multi_remove_handle(b->multi, c->easy);
		call_free(c);
	}
	while (b->queue != NULL) {
		struct call *c = b->queue;

		b->queue = c->next;
		call_free(c);
	}
	curl_multi_cleanup(b->multi);
	free(b);
}

struct do_ctx {
	struct http_resp	*out;
	struct err		*e;
	bool			 ok;
	bool			 called;
};

static void
do_done(struct http_batch *b, const struct http_req *req, struct http_resp *resp,
    const struct err *e)
{
	struct do_ctx *ctx = req->user;

	(void)b;
	*ctx->out = *resp;		/* move: the batch frees an empty resp */
	memset(resp, 0, sizeof(*resp));
	ctx->called = true;
	ctx->ok = e == NULL;
	if (e != NULL && ctx->e != NULL)
		*ctx->e = *e;
}

/* Each thread keeps one batch for http_do: its connections (and TLS sessions) to a host
 * are reused by the thread's next calls instead of a new connection and handshake per
 * call.  Freed when the thread ends. */
static pthread_key_t do_key;
static pthread_once_t do_once = PTHREAD_ONCE_INIT;

static void
do_batch_free(void *b)
{
	http_batch_free(b);
}

static void
do_key_init(void)
{
	if (pthread_key_create(&do_key, do_batch_free) != 0)
		abort();
}

bool
http_do(const struct http_req *req, struct http_resp *resp, struct err *e)
{
	struct do_ctx ctx = { resp, e, false, false };
	struct http_batch *b = NULL;
	struct http_req r;
	bool ran;

	memset(resp, 0, sizeof(*resp));
	resp->retry_after = -1;
	if (req == NULL)
		return err_set(e, 500, "http.bad_request", "no request");
	r = *req;
	r.done = do_done;
	r.user = &ctx;
	pthread_once(&do_once, do_key_init);
	if ((b = pthread_getspecific(do_key)) == NULL) {
		if ((b = http_batch_new(1)) == NULL)
			return err_set(e, 500, "http.bad_request", "http client unavailable");
		pthread_setspecific(do_key, b);
	}
	ran = http_batch_add(b, &r, e) && http_batch_run(b, e);
	if (!ran) {	/* a batch whose multi failed is not trusted again */
		pthread_setspecific(do_key, NULL);
		http_batch_free(b);
	} else if (!ctx.called) {
		err_set(e, 500, "http.transport", "request did not complete");
	}
	return ctx.called && ctx.ok;
}
