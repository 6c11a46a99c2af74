/* http: libcurl calls (harness_http, harness_https) and the record of every answer of a
 * fleetd started here, validated against api/openapi.yaml (harness_validate_responses). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include <curl/curl.h>

#include "tests/harness/harness.h"
#include "tests/harness/internal.h"

/* ---- the record of fleetd's answers (read by tests/openapi/validate.js) */

#define REC_MAX_PORTS	32

static pthread_mutex_t rec_mu = PTHREAD_MUTEX_INITIALIZER;
static int rec_ports[REC_MAX_PORTS];	/* fleetd processes started here */
static int rec_nports;
static FILE *rec_file;
static char rec_path[512];		/* "" until the first answer is recorded */
static bool rec_default;		/* rec_path is the per-process default */
static bool rec_failed;			/* a validation failed: the process exits 1 */

void
harness_rec_port(int port, bool add)
{
	pthread_mutex_lock(&rec_mu);
	for (int i = 0; i < rec_nports; i++) {
		if (rec_ports[i] == port) {
			rec_ports[i] = rec_ports[--rec_nports];
			break;
		}
	}
	if (add && rec_nports < REC_MAX_PORTS)
		rec_ports[rec_nports++] = port;
	pthread_mutex_unlock(&rec_mu);
}

/* The path (with query) of url when it names a fleetd started here, else NULL.  Caller
 * holds rec_mu. */
static const char *
rec_path_of(const char *url)
{
	const char *host = strstr(url, "://"), *colon, *path;
	int port;

	if (host == NULL)
		return NULL;
	host += 3;
	path = strchr(host, '/');
	colon = strchr(host, ':');
	if (colon == NULL || (path != NULL && colon > path))
		return NULL;
	port = atoi(colon + 1);
	for (int i = 0; i < rec_nports; i++)
		if (rec_ports[i] == port)
			return path != NULL ? path : "/";
	return NULL;
}

/* Opens the record file on first use.  Caller holds rec_mu. */
static bool
rec_open(void)
{
	const char *env = getenv("FLEETD_RESPONSE_LOG");

	if (rec_file != NULL)
		return true;
	rec_default = env == NULL || *env == '\0';
	if (rec_default)
		snprintf(rec_path, sizeof(rec_path), "/tmp/fleetd-responses-%d.jsonl", (int)getpid());
	else
		snprintf(rec_path, sizeof(rec_path), "%s", env);
	rec_file = fopen(rec_path, rec_default ? "w" : "a");
	if (rec_file == NULL)
		fprintf(stderr, "harness: cannot write %s\n", rec_path);
	return rec_file != NULL;
}

/* Appends {method, path, status, content_type, body} when url names a fleetd of ours. */
static void
rec_answer(const char *method, const char *url, long status, const char *ctype,
	   const char *body, size_t len)
{
	json_t *line, *b = json_stringn(body, len);
	const char *path;
	char *text = NULL;

	pthread_mutex_lock(&rec_mu);
	if ((path = rec_path_of(url)) == NULL || !rec_open())
		goto cleanup;
	line = json_pack("{s:s, s:s, s:I, s:s?, s:o}", "method", method, "path", path,
	    "status", (json_int_t)status, "content_type", ctype, "body",
	    b != NULL ? json_incref(b) : json_null());
	if (b == NULL)
		json_object_set_new(line, "body_invalid_utf8", json_true());
	text = json_dumps(line, JSON_COMPACT);
	json_decref(line);
	if (text != NULL) {
		fputs(text, rec_file);
		fputc('\n', rec_file);
		fflush(rec_file);
	}
cleanup:
	pthread_mutex_unlock(&rec_mu);
	free(text);
	json_decref(b);
}

/* cmocka 1.1 reports a failed group teardown but does not count it in the exit status. */
static void
rec_exit(void)
{
	if (rec_failed) {
		fflush(NULL);
		_exit(1);
	}
}

void
harness_fail_at_exit(void)
{
	if (!rec_failed) {
		rec_failed = true;
		atexit(rec_exit);
	}
}

void
harness_validate_responses(void)
{
	char path[512];
	bool dflt;
	int st;

	pthread_mutex_lock(&rec_mu);
	if (rec_file != NULL)
		fclose(rec_file);
	rec_file = NULL;
	snprintf(path, sizeof(path), "%s", rec_path);
	dflt = rec_default;
	rec_path[0] = '\0';
	pthread_mutex_unlock(&rec_mu);
	if (path[0] == '\0') {
		print_message("openapi: no fleetd answers were recorded\n");
		return;
	}
	st = harness_sh("bash '" FLEETD_SOURCE_DIR "/tests/lib/ensure_npm.sh' '" FLEETD_SOURCE_DIR
	    "/tests/openapi' && "
	    "node '" FLEETD_SOURCE_DIR "/tests/openapi/validate.js' '" FLEETD_SOURCE_DIR
	    "/api/openapi.yaml' '%s'", path);
	if (st != 0) {
		harness_fail_at_exit();
		fail_msg("fleetd answers recorded in %s do not match api/openapi.yaml (FAIL lines "
		    "above name the route and field)", path);
	}
	if (dflt)
		unlink(path);
}

struct buf {
	char	*p;
	size_t	 n;
};

static size_t
on_data(char *ptr, size_t size, size_t nmemb, void *ud)
{
	struct buf *b = ud;
	size_t n = size * nmemb;
	char *q = realloc(b->p, b->n + n + 1);

	if (q == NULL)
		return 0;
	b->p = q;
	memcpy(b->p + b->n, ptr, n);
	b->n += n;
	b->p[b->n] = '\0';
	return n;
}

long harness_http_timeout_s = 30;

/* One call; token or cafile may be NULL. */
static void
http_do(struct http_result *r, const char *method, const char *url, const char *token,
	const char *cafile, const char *body, const char *const *headers)
{
	CURL *c = curl_easy_init();
	struct curl_slist *h = NULL;
	struct buf bb = { 0 }, hb = { 0 };
	char auth[512];

	memset(r, 0, sizeof(*r));
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
	curl_easy_setopt(c, CURLOPT_TIMEOUT, harness_http_timeout_s);
	curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(c, CURLOPT_PATH_AS_IS, 1L);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_data);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, &bb);
	curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_data);
	curl_easy_setopt(c, CURLOPT_HEADERDATA, &hb);
	if (strcmp(method, "HEAD") == 0)
		curl_easy_setopt(c, CURLOPT_NOBODY, 1L);
	if (cafile != NULL)
		curl_easy_setopt(c, CURLOPT_CAINFO, cafile);
	if (token != NULL) {
		snprintf(auth, sizeof(auth), "Authorization: Bearer %s", token);
		h = curl_slist_append(h, auth);
	}
	if (body != NULL) {
		bool has_ct = false;

		for (int i = 0; headers != NULL && headers[i] != NULL; i++)
			if (strncasecmp(headers[i], "Content-Type:", 13) == 0)
				has_ct = true;
		if (!has_ct)
			h = curl_slist_append(h, "Content-Type: application/json");
		curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
		curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE, (long)strlen(body));
	}
	for (int i = 0; headers != NULL && headers[i] != NULL; i++)
		h = curl_slist_append(h, headers[i]);
	h = curl_slist_append(h, "Expect:");
	curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
	r->curl_rc = (int)curl_easy_perform(c);
	if (r->curl_rc == CURLE_OK)
		curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &r->status);
	r->body = bb.p ? bb.p : strdup("");
	r->len = bb.n;
	if (r->status > 0) {
		char *ctype = NULL;

		curl_easy_getinfo(c, CURLINFO_CONTENT_TYPE, &ctype);
		rec_answer(method, url, r->status, ctype, r->body, r->len);
	}
	r->headers = hb.p ? hb.p : strdup("");
	r->json = json_loads(r->body, JSON_DECODE_ANY, NULL);
	curl_slist_free_all(h);
	curl_easy_cleanup(c);
}

void
harness_http(struct http_result *r, const char *method, const char *url, const char *token,
	     const char *body, const char *const *headers)
{
	http_do(r, method, url, token, NULL, body, headers);
}

void
harness_https(struct http_result *r, const char *method, const char *url, const char *token,
	      const char *cafile, const char *body, const char *const *headers)
{
	http_do(r, method, url, token, cafile, body, headers);
}

void
harness_http_free(struct http_result *r)
{
	free(r->body);
	free(r->headers);
	json_decref(r->json);
	memset(r, 0, sizeof(*r));
}

char *
harness_header(const struct http_result *r, const char *name)
{
	size_t n = strlen(name);
	const char *line = r->headers;

	while (line != NULL && *line != '\0') {
		const char *end = strstr(line, "\r\n");

		if (strncasecmp(line, name, n) == 0 && line[n] == ':') {
			const char *v = line + n + 1;

			while (*v == ' ')
				v++;
			return strndup(v, end ? (size_t)(end - v) : strlen(v));
		}
		line = end ? end + 2 : NULL;
	}
	return NULL;
}
