/* cs_harness: cloudsim's own tests' names for tests/harness (the one launcher and HTTP
 * client): a cloudsim started by harness_cs_start, answers with lowercased headers and the
 * curl result code.  Header-only; every function is a thin wrapper. */
#ifndef CS_HARNESS_H
#define CS_HARNESS_H

#include <ctype.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include <curl/curl.h>
#include <jansson.h>

#include "tests/harness/harness.h"

struct csh {
	struct harness_cs cs;
	const char	*base;		/* http://127.0.0.1:P (cs.url) */
	const char	*kube;		/* https://127.0.0.1:K */
	const char	*ca;		/* ca.pem path */
	const char	*dir;
	json_t		*clusters;	/* clusters.json "clusters" (borrowed from cs) */
};

#define csh_timeout_s	harness_http_timeout_s	/* per request */

struct csh_resp {
	long	 status;
	char	*body;
	size_t	 len;
	json_t	*json;			/* parsed body or NULL */
	char	 hdr[2048];		/* response headers, lowercase names */
	int	 curl_rc;
};

static inline char *
csh_slurp(const char *path, size_t *len)
{
	char *b = harness_slurp(path);

	if (b != NULL && len != NULL)
		*len = strlen(b);
	return b;
}

/* Starts cloudsim with the fleet file; fails the test when it does not come up. */
static inline bool
csh_start(struct csh *h, const char *fleet, const char *scale)
{
	harness_cs_start(&h->cs, fleet, scale);
	h->base = h->cs.url;
	h->kube = h->cs.kube;
	h->ca = h->cs.ca;
	h->dir = h->cs.dir;
	h->clusters = h->cs.clusters;
	return true;
}

/* The group setup of a cloudsim test: libcurl, then cloudsim with the test fleet at scale
 * (0, or -1 when it does not come up); harness_group_teardown stops it. */
static inline int
csh_setup(struct csh *h, const char *scale)
{
	curl_global_init(CURL_GLOBAL_DEFAULT);
	return csh_start(h, "cloudsim/fleets/test.json", scale) ? 0 : -1;
}

static inline void
csh_stop(struct csh *h)
{
	harness_cs_stop(&h->cs);
}

static inline json_t *
csh_cluster(struct csh *h, const char *name)
{
	return harness_cs_cluster(&h->cs, name);
}

/* A value of fleetd.env (malloc'd), or NULL. */
static inline char *
csh_env(struct csh *h, const char *key)
{
	const char *v = harness_cs_env(&h->cs, key);

	return v != NULL ? strdup(v) : NULL;
}

/* h as a csh_resp (takes its body and JSON). */
static inline struct csh_resp
csh_from(struct http_result *h)
{
	struct csh_resp r;
	size_t i;

	memset(&r, 0, sizeof(r));
	r.status = h->status;
	r.curl_rc = h->curl_rc;
	r.len = h->len;
	r.body = h->body;
	r.json = h->json;
	for (i = 0; h->headers[i] != '\0' && i + 1 < sizeof(r.hdr); i++)
		r.hdr[i] = (char)tolower((unsigned char)h->headers[i]);
	free(h->headers);
	return r;
}

/* One request. headers: NULL-terminated "Name: value" list. cafile NULL = system CAs.  A
 * body without a Content-Type goes as curl sends it by default (form-encoded). */
static inline struct csh_resp
csh_req(const char *method, const char *url, const char *const *headers, const char *body,
    const char *cafile)
{
	const char *hd[32];
	struct http_result h;
	size_t n = 0;
	bool ct = false;

	for (; headers != NULL && headers[n] != NULL && n < 30; n++) {
		hd[n] = headers[n];
		ct |= strncasecmp(headers[n], "Content-Type:", 13) == 0;
	}
	if (body != NULL && !ct)
		hd[n++] = "Content-Type: application/x-www-form-urlencoded";
	hd[n] = NULL;
	harness_https(&h, method, url, NULL, cafile, body, hd);
	return csh_from(&h);
}

static inline void
csh_resp_free(struct csh_resp *r)
{
	free(r->body);
	json_decref(r->json);
	memset(r, 0, sizeof(*r));
}

/* Plain JSON call to cloudsim's own HTTP port (path starts with /). */
static inline struct csh_resp
csh_sim(struct csh *h, const char *method, const char *path, const char *body)
{
	char url[600];
	const char *hd[] = { "Content-Type: application/json", NULL };

	snprintf(url, sizeof(url), "%s%s", h->base, path);
	return csh_req(method, url, hd, body, NULL);
}

/* A Kubernetes call to cluster with its bearer token. */
static inline struct csh_resp
csh_kube(struct csh *h, const char *cluster, const char *method, const char *path,
    const char *ctype, const char *body)
{
	struct http_result r;

	harness_kube(&h->cs, &r, cluster, method, path, ctype, body);
	return csh_from(&r);
}

/* Polls until pred(h, arg) or timeout_s; returns pred's last answer. */
static inline bool
csh_wait(struct csh *h, bool (*pred)(struct csh *, void *), void *arg, double timeout_s)
{
	double end = harness_now_s() + timeout_s;

	for (;;) {
		if (pred(h, arg))
			return true;
		if (harness_now_s() > end)
			return false;
		usleep(100000);
	}
}

#endif
