/* client: fleetctl's calls to fleetd through core/http — bearer token, JSON in and out,
 * problem+json turned into one line, lists followed page by page. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "core/crypto.h"
#include "core/http.h"

#define URL_MAX		4096
#define TIMEOUT_MS	30000L
#define PAGE_MAX	500	/* the server's largest limit */

int
cli_fail(int code, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	fprintf(stderr, "fleetctl: %s\n", msg);
	return code;
}

static bool
escape(char *out, size_t len, const char *s)
{
	static const char hex[] = "0123456789ABCDEF";
	size_t n = 0;

	for (; *s != '\0'; s++) {
		unsigned char ch = (unsigned char)*s;
		bool keep = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
		    (ch >= '0' && ch <= '9') || ch == '-' || ch == '_' || ch == '.' || ch == '~';

		if (n + (keep ? 1 : 3) >= len)
			return false;
		if (keep) {
			out[n++] = (char)ch;
		} else {
			out[n++] = '%';
			out[n++] = hex[ch >> 4];
			out[n++] = hex[ch & 15];
		}
	}
	out[n] = '\0';
	return len > 0;
}

bool
cli_path(char *buf, size_t len, const char *prefix, const char *id, const char *suffix)
{
	char enc[1024];
	int n;

	if (!escape(enc, sizeof(enc), id)) {
		cli_fail(CLI_USAGE, "argument is too long");
		return false;
	}
	n = snprintf(buf, len, "%s%s%s", prefix, enc, suffix ? suffix : "");
	if (n < 0 || (size_t)n >= len) {
		cli_fail(CLI_USAGE, "argument is too long");
		return false;
	}
	return true;
}

bool
cli_query(char *buf, size_t len, const char *k, const char *v)
{
	char enc[1024];
	size_t used = strlen(buf);
	int n;

	if (v == NULL)
		return true;
	if (!escape(enc, sizeof(enc), v)) {
		cli_fail(CLI_USAGE, "value of --%s is too long", k);
		return false;
	}
	n = snprintf(buf + used, len - used, "%c%s=%s", strchr(buf, '?') ? '&' : '?', k, enc);
	if (n < 0 || (size_t)n >= len - used) {
		cli_fail(CLI_USAGE, "query is too long");
		return false;
	}
	return true;
}

/* The one line for an answer that is not 2xx: the problem's title, its detail when it
 * says more, the field errors, and the code. */
static int
report_problem(long status, const char *body)
{
	json_t *p = body != NULL ? json_loads(body, 0, NULL) : NULL;
	const char *title = json_string_value(json_object_get(p, "title"));
	const char *detail = json_string_value(json_object_get(p, "detail"));
	const char *code = json_string_value(json_object_get(p, "code"));
	json_t *errs = json_object_get(p, "errors"), *fe;
	int rc = status == 404 ? CLI_NOT_FOUND : CLI_ERROR;
	struct cli_buf b = { 0 };
	char *line;
	size_t i;

	if (title == NULL && detail == NULL) {
		cli_buf_printf(&b, "server answered %ld", status);
		if (body != NULL && body[0] != '\0') {
			cli_buf_add(&b, ": ");
			cli_buf_add_clean(&b, body);
		}
	} else {
		cli_buf_add_clean(&b, title != NULL ? title : detail);
		if (title != NULL && detail != NULL && strcmp(title, detail) != 0) {
			cli_buf_add(&b, ": ");
			cli_buf_add_clean(&b, detail);
		}
	}
	json_array_foreach(errs, i, fe) {
		const char *ptr = json_string_value(json_object_get(fe, "pointer"));
		const char *d = json_string_value(json_object_get(fe, "detail"));

		bool same = d != NULL && title != NULL && strcmp(d, title) == 0;

		if (d == NULL || (same && (ptr == NULL || *ptr == '\0')))
			continue;
		if (same) {
			cli_buf_add(&b, " at ");
			cli_buf_add_clean(&b, ptr);
			continue;
		}
		cli_buf_add(&b, "; ");
		if (json_is_string(json_object_get(fe, "cluster")))	/* move refusals */
			ptr = json_string_value(json_object_get(fe, "cluster"));
		if (ptr != NULL && *ptr != '\0') {
			cli_buf_add_clean(&b, ptr);
			cli_buf_add(&b, ": ");
		}
		cli_buf_add_clean(&b, d);
	}
	if (code != NULL)
		cli_buf_printf(&b, " (%s)", code);
	line = cli_buf_take(&b);
	cli_fail(rc, "%.900s", line != NULL ? line : "out of memory");
	free(line);
	json_decref(p);
	return rc;
}

static void
idempotency_key(char out[33])
{
	unsigned char raw[16];
	static const char hex[] = "0123456789abcdef";

	if (!crypto_random(raw, sizeof(raw)))
		memset(raw, 0, sizeof(raw));
	for (int i = 0; i < 16; i++) {
		out[2 * i] = hex[raw[i] >> 4];
		out[2 * i + 1] = hex[raw[i] & 15];
	}
	out[32] = '\0';
}

int
cli_call(struct cli_ctx *c, const char *method, const char *path, const json_t *body,
	 long *status, json_t **out)
{
	struct http_header hdr[3] = { { "Accept", "application/json" } };
	struct http_req req = { .method = method, .headers = hdr, .nheaders = 1,
	    .timeout_ms = TIMEOUT_MS, .bearer = c->token,
	    .retry = { .max_attempts = 2, .base_delay_ms = 250, .max_delay_ms = 2000 } };
	struct http_resp resp = { 0 };
	struct err e = { 0 };
	char url[URL_MAX], key[33];
	char *text = NULL;
	int rc = CLI_ERROR;

	*out = NULL;
	if (status != NULL)
		*status = 0;
	if ((size_t)snprintf(url, sizeof(url), "%s%s", c->url, path) >= sizeof(url))
		return cli_fail(CLI_USAGE, "request URL is too long");
	req.url = url;
	if (strcmp(method, "POST") == 0) {
		idempotency_key(key);
		hdr[req.nheaders++] = (struct http_header){ "Idempotency-Key", key };
		hdr[req.nheaders++] = (struct http_header){ "Content-Type", "application/json" };
	}
	if (body != NULL) {
		if ((text = json_dumps(body, JSON_COMPACT)) == NULL)
			return cli_fail(CLI_ERROR, "out of memory");
		req.body = text;
		req.body_len = strlen(text);
	}
	if (!http_do(&req, &resp, &e)) {
		rc = cli_fail(CLI_ERROR, "cannot reach %s: %s", c->url,
		    resp.error[0] != '\0' ? resp.error : e.msg);
		goto cleanup;
	}
	if (status != NULL)
		*status = resp.status;
	if (resp.status < 200 || resp.status > 299) {
		rc = report_problem(resp.status, resp.body);
		goto cleanup;
	}
	if (resp.body != NULL && resp.body_len > 0) {
		json_error_t je;

		if ((*out = json_loadb(resp.body, resp.body_len, 0, &je)) == NULL) {
			rc = cli_fail(CLI_ERROR, "server sent invalid JSON: %s", je.text);
			goto cleanup;
		}
	}
	rc = CLI_OK;
cleanup:
	free(text);
	http_resp_cleanup(&resp);
	return rc;
}

/* "after" from a "next" link ("/v1/jobs?limit=50&after=XYZ"), still encoded. */
static bool
next_cursor(const json_t *next, char *out, size_t len)
{
	const char *s = json_string_value(next), *a, *end;

	if (s == NULL || (a = strstr(s, "after=")) == NULL)
		return false;
	if (a != s && a[-1] != '?' && a[-1] != '&')
		return false;
	a += 6;
	end = a + strcspn(a, "&#");
	if (end == a || (size_t)(end - a) >= len)
		return false;
	memcpy(out, a, (size_t)(end - a));
	out[end - a] = '\0';
	return true;
}

/* Pages keep the caller's filters: the cursor is taken from "next" and added to path.
 * Pages hold up to 500 items, or FLEETCTL_PAGE_SIZE when set lower. */
int
cli_list(struct cli_ctx *c, const char *path, size_t limit, json_t **out)
{
	json_t *all = json_array(), *page = NULL, *next = json_null();
	const char *ps = getenv("FLEETCTL_PAGE_SIZE");
	size_t page_max = ps != NULL && atoi(ps) > 0 && atoi(ps) < PAGE_MAX ? (size_t)atoi(ps) :
	    PAGE_MAX;
	char url[URL_MAX], cursor[1024] = "", lim[16];
	int rc = CLI_OK;

	*out = NULL;
	for (;;) {
		size_t want = limit == 0 ? page_max : limit - json_array_size(all);
		int n;

		snprintf(lim, sizeof(lim), "%zu", want < page_max ? want : page_max);
		n = snprintf(url, sizeof(url), "%s%climit=%s%s%s", path,
		    strchr(path, '?') ? '&' : '?', lim, cursor[0] ? "&after=" : "", cursor);
		if (n < 0 || (size_t)n >= sizeof(url)) {
			rc = cli_fail(CLI_USAGE, "request URL is too long");
			break;
		}
		if ((rc = cli_call(c, "GET", url, NULL, NULL, &page)) != CLI_OK)
			break;
		if (!json_is_array(json_object_get(page, "items"))) {
			rc = cli_fail(CLI_ERROR, "server answered a list without items");
			break;
		}
		json_array_extend(all, json_object_get(page, "items"));
		json_decref(next);
		next = json_incref(json_object_get(page, "next"));
		if (next == NULL)
			next = json_null();
		json_decref(page);
		page = NULL;
		if ((limit != 0 && json_array_size(all) >= limit) ||
		    !next_cursor(next, cursor, sizeof(cursor)))
			break;
	}
	json_decref(page);
	if (rc == CLI_OK)
		*out = json_pack("{s:O, s:O}", "items", all, "next", next);
	json_decref(all);
	json_decref(next);
	if (rc == CLI_OK && *out == NULL)
		rc = cli_fail(CLI_ERROR, "out of memory");
	return rc;
}

/* ---- event streams (text/event-stream) */

struct stream {
	char		*buf;
	size_t		 len, cap;
	char		 last_id[32];
	cli_event_fn	 fn;
	void		*arg;
	bool		 stop;		/* fn asked to end */
	bool		 got_events;
};

/* Splits complete frames ("\n\n") off the buffer; a non-SSE body stays for the error. */
static bool
on_stream_data(const char *p, size_t n, void *ud)
{
	struct stream *s = ud;
	char *end;

	if (s->len + n + 1 > s->cap) {
		size_t cap = s->cap ? s->cap * 2 : 8192;
		char *b;

		while (cap < s->len + n + 1)
			cap *= 2;
		if ((b = realloc(s->buf, cap)) == NULL)
			return false;
		s->buf = b;
		s->cap = cap;
	}
	memcpy(s->buf + s->len, p, n);
	s->len += n;
	s->buf[s->len] = '\0';
	while (!s->stop && (end = strstr(s->buf, "\n\n")) != NULL) {
		char *line, *save = NULL, *data = NULL;
		size_t used = (size_t)(end - s->buf) + 2;

		*end = '\0';
		for (line = strtok_r(s->buf, "\n", &save); line != NULL;
		    line = strtok_r(NULL, "\n", &save)) {
			if (strncmp(line, "id: ", 4) == 0)
				snprintf(s->last_id, sizeof(s->last_id), "%s", line + 4);
			else if (strncmp(line, "data: ", 6) == 0)
				data = line + 6;
		}
		if (data != NULL) {
			json_t *ev = json_loads(data, 0, NULL);

			s->got_events = true;
			if (ev != NULL && !s->fn(ev, s->arg))
				s->stop = true;
			json_decref(ev);
		}
		memmove(s->buf, s->buf + used, s->len - used + 1);
		s->len -= used;
	}
	return !s->stop;
}

int
cli_stream(struct cli_ctx *c, const char *path, cli_event_fn fn, void *arg)
{
	struct stream s = { .fn = fn, .arg = arg };
	char url[URL_MAX], lei[64];
	int rc = CLI_ERROR, drops = 0;

	if ((rc = cli_need_token(c)) != CLI_OK)
		return rc;
	if ((size_t)snprintf(url, sizeof(url), "%s%s", c->url, path) >= sizeof(url))
		return cli_fail(CLI_USAGE, "request URL is too long");
	for (;;) {
		struct http_header hdr[2] = { { "Accept", "text/event-stream" } };
		struct http_req req = { .method = "GET", .url = url, .headers = hdr, .nheaders = 1,
		    .timeout_ms = 7L * 24 * 3600 * 1000, .bearer = c->token,
		    .retry = { .max_attempts = 1 }, .on_data = on_stream_data, .data_user = &s };
		struct http_resp resp = { 0 };
		struct err e = { 0 };
		bool ok;

		if (s.last_id[0] != '\0') {
			snprintf(lei, sizeof(lei), "%s", s.last_id);
			hdr[req.nheaders++] = (struct http_header){ "Last-Event-ID", lei };
		}
		s.len = 0;
		ok = http_do(&req, &resp, &e);
		if (s.stop) {
			rc = CLI_OK;
		} else if (ok && (resp.status < 200 || resp.status > 299)) {
			rc = report_problem(resp.status, s.buf);
		} else if (++drops <= 10) {	/* dropped: resume after the last event seen */
			http_resp_cleanup(&resp);
			sleep(2);
			continue;
		} else {
			rc = cli_fail(CLI_ERROR, "the event stream of %s keeps dropping", c->url);
		}
		http_resp_cleanup(&resp);
		break;
	}
	free(s.buf);
	return rc;
}
