/* http: the only door to libcurl — one synchronous call and a batch that runs many
 * requests concurrently on the curl multi interface, with timeouts, retries and caps. */
#ifndef FLEET_CORE_HTTP_H
#define FLEET_CORE_HTTP_H

#include <stdbool.h>
#include <stddef.h>

#include "core/err.h"

#define HTTP_MAX_BODY_DEFAULT	(16u * 1024 * 1024)	/* response body cap */
#define HTTP_TIMEOUT_DEFAULT_MS	30000L
#define HTTP_CONCURRENCY_DEFAULT 8

struct http_batch;
struct http_resp;
struct http_req;

struct http_header {
	const char	*name;
	const char	*value;
};

/* Retry policy of one request.  A zero struct means one attempt, no retry.
 * Retried: transport errors (timeouts included) and 5xx, with exponential backoff
 * and jitter; 429 and 503 wait for Retry-After when given, capped at max_delay_ms. */
struct http_retry {
	int	max_attempts;	/* total tries; 0 or 1 = no retry */
	int	base_delay_ms;	/* first backoff; 0 = 100 */
	int	max_delay_ms;	/* cap on any one wait (Retry-After too); 0 = 10000 */
};

/* Called once per request when it is finished (after its last attempt).  e is NULL
 * when an HTTP response arrived (any status), else says why not (timeout, transport,
 * body too large).  resp is freed when this returns; move resp->body out (set it to
 * NULL) to keep it.  The callback may http_batch_add() follow-up requests to b. */
typedef void (*http_done_fn)(struct http_batch *b, const struct http_req *req,
	    struct http_resp *resp, const struct err *e);

/* Everything is borrowed and only needs to live until http_do / http_batch_add
 * returns: the batch keeps its own copy. */
struct http_req {
	const char		 *method;	/* NULL: GET, or POST when body is set */
	const char		 *url;
	const struct http_header *headers;
	size_t			  nheaders;
	const void		 *body;
	size_t			  body_len;
	long			  timeout_ms;	/* per attempt; 0 = HTTP_TIMEOUT_DEFAULT_MS */
	const char		 *ca_pem;	/* trusted CA(s), PEM in memory; NULL = system */
	const char		 *bearer;	/* adds "Authorization: Bearer <bearer>" */
	size_t			  max_body;	/* 0 = HTTP_MAX_BODY_DEFAULT */
	struct http_retry	  retry;
	http_done_fn		  done;		/* batch only; may be NULL */
	void			 *user;		/* for done */
	/* streaming (an SSE answer): each piece of the body goes to on_data instead of
	 * resp->body; false from it ends the transfer */
	bool			(*on_data)(const char *p, size_t n, void *user);
	void			 *data_user;
};

struct http_resp {
	long			 status;	/* 0 when no response arrived */
	struct http_header	*headers;	/* malloc'd; names lowercased */
	size_t			 nheaders;
	char			*body;		/* malloc'd, NUL-terminated, may be NULL */
	size_t			 body_len;
	int			 retry_after;	/* seconds from Retry-After, -1 when absent */
	int			 attempts;	/* tries made */
	char			 error[256];	/* curl's error text, "" on success */
};

/* One request, retries included.  True when an HTTP response arrived (check
 * resp->status); false with e set (504 http.timeout, 502 http.transport,
 * 502 http.body_too_large, 500 http.bad_request).  resp is always filled and
 * must be released with http_resp_cleanup. */
bool	http_do(const struct http_req *req, struct http_resp *resp, struct err *e);

/* Connections this process has opened so far (new TCP connections; a call that reused
 * a kept connection adds none).  Every batch and http_do call of a thread shares that
 * thread's kept connections, TLS sessions and DNS answers. */
long	http_connects(void);

/* First value of header name (case-insensitive), or NULL. */
const char *http_resp_header(const struct http_resp *resp, const char *name);
void	http_resp_cleanup(struct http_resp *resp);

/* Sizes the idle-connection cache of every thread from the open-file limit, once at
 * start: raises the soft limit to the hard one, keeps reserve descriptors for everything
 * else (database pool, clients, listeners) and shares the rest among threads (each keeps
 * at most 2000, at least 16).  Returns the per-thread cap; *nofile the soft limit. */
long	http_size_caches(long reserve, int threads, long *nofile);
/* The cap for a limit of nofile descriptors (the arithmetic of http_size_caches). */
long	http_keep_for(long nofile, long reserve, int threads);

/* max_concurrency <= 0: HTTP_CONCURRENCY_DEFAULT.  NULL on allocation failure. */
struct http_batch *http_batch_new(int max_concurrency);
/* Queues a copy of req (also from inside a done callback).  False on bad input. */
bool	http_batch_add(struct http_batch *b, const struct http_req *req, struct err *e);
/* Runs until every queued request, and every one added by callbacks, is done.
 * False only when curl's multi interface itself fails. */
bool	http_batch_run(struct http_batch *b, struct err *e);
void	http_batch_free(struct http_batch *b);	/* accepts NULL; drops unrun requests */

/* ---- streams: long-lived GETs whose body arrives in pieces (Kubernetes watches), all
 * driven by one thread through http_streams_poll. */
struct http_streams;

/* A piece of the body of stream user; status is the HTTP status (known from the first
 * piece on).  Return false to abort the stream (its end callback then gets e). */
typedef bool (*http_chunk_fn)(void *user, long status, const char *data, size_t len);
/* The stream ended: status 0 when no answer came; e NULL when the server ended it. */
typedef void (*http_end_fn)(void *user, long status, const struct err *e);

struct http_streams *http_streams_new(void);
/* Starts a stream (req: url, headers, ca_pem, bearer, timeout_ms; no retries). */
bool	http_streams_add(struct http_streams *s, const struct http_req *req,
	    http_chunk_fn on_chunk, http_end_fn on_end, void *user, struct err *e);
/* Moves every stream along for up to ms (the whole ms when none is open or
 * nothing arrives); returns the streams still open. */
int	http_streams_poll(struct http_streams *s, int ms);
/* Aborts every stream (their end callbacks are not called). */
void	http_streams_free(struct http_streams *s);

#endif
