/* client: calls to fleetd's API through core/http (retries with backoff on transport
 * errors, 429 and 5xx, honouring Retry-After), problem+json answers as diagnostics. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <arpa/inet.h>
#include <curl/curl.h>

#include "core/http.h"
#include "tf.h"

/* Whether host names this machine's loopback interface. */
static bool
loopback(const char *host)
{
	struct in_addr a4;
	struct in6_addr a6;

	if (strcmp(host, "localhost") == 0)
		return true;
	if (inet_pton(AF_INET, host, &a4) == 1)
		return (ntohl(a4.s_addr) >> 24) == 127;
	if (host[0] == '[') {
		char b[64];
		size_t n = strlen(host);

		if (n < 3 || n - 2 >= sizeof(b) || host[n - 1] != ']')
			return false;
		memcpy(b, host + 1, n - 2);
		b[n - 2] = '\0';
		return inet_pton(AF_INET6, b, &a6) == 1 && IN6_IS_ADDR_LOOPBACK(&a6);
	}
	return false;
}

bool
tf_url_ok(const char *url)
{
	CURLU *u;
	char *scheme = NULL, *host = NULL;
	bool ok = false;

	if (url == NULL || (u = curl_url()) == NULL)
		return false;
	if (curl_url_set(u, CURLUPART_URL, url, 0) == CURLUE_OK &&
	    curl_url_get(u, CURLUPART_SCHEME, &scheme, 0) == CURLUE_OK &&
	    curl_url_get(u, CURLUPART_HOST, &host, 0) == CURLUE_OK)
		ok = strcmp(scheme, "https") == 0 || (strcmp(scheme, "http") == 0 && loopback(host));
	curl_free(scheme);
	curl_free(host);
	curl_url_cleanup(u);
	return ok;
}

struct tf_conf tf_conf = {.timeout_ms = 30000, .retries = 5, .iam_timeout_s = 120};
_Atomic int tf_stopping;

const char *
tf_str(json_t *obj, const char *name)
{
	return json_string_value(json_object_get(obj, name));
}

void
tf_api_problem(json_t *problem, int status, const char *what, struct tf_diags *d)
{
	const char *code = tf_str(problem, "code"), *title = tf_str(problem, "title");
	const char *detail = tf_str(problem, "detail");
	json_t *errs = json_object_get(problem, "errors"), *x;
	size_t i;

	if (json_array_size(errs) > 0) {
		json_array_foreach(errs, i, x) {
			const char *check = tf_str(x, "check"), *ptr = tf_str(x, "pointer");
			const char *xd = tf_str(x, "detail") ? tf_str(x, "detail") : tf_str(x, "message");

			tf_diag(d, true, NULL, what, "fleetd answered %d %s%s%s%s%s%s%s", status,
			    code ? code : "", check ? ": check " : "", check ? check : "",
			    ptr ? " at " : "", ptr ? ptr : "", xd ? ": " : "", xd ? xd : "");
		}
		return;
	}
	tf_diag(d, true, NULL, what, "fleetd answered %d %s: %s%s%s", status, code ? code : "",
	    title ? title : "", detail ? ". " : "", detail ? detail : "");
}

static bool
idem_key(char *out, size_t n)
{
	unsigned char b[16];
	FILE *f = fopen("/dev/urandom", "rb");
	bool ok = f && fread(b, 1, sizeof b, f) == sizeof b;

	if (f)
		fclose(f);
	for (size_t i = 0; ok && i < sizeof b && 2 * i + 2 < n; i++)
		snprintf(out + 2 * i, 3, "%02x", b[i]);
	return ok;
}

bool
tf_api(const char *method, const char *path, json_t *body, int ok1, int ok2, bool accept_404,
    json_t **out, int *status, struct tf_diags *d)
{
	return tf_api_ex(method, path, body, NULL, ok1, ok2, accept_404, out, status, d);
}

bool
tf_api_ex(const char *method, const char *path, json_t *body, json_t *version, int ok1, int ok2,
    bool accept_404, json_t **out, int *status, struct tf_diags *d)
{
	struct http_req rq = {0};
	struct http_resp rs = {0};
	char idem[40], etag[40];
	struct http_header hdr[3] = {{"Accept", "application/json"},
	    {"Content-Type", "application/json"}, {"Idempotency-Key", idem}};
	struct err e = {0};
	char *url = NULL, *text = NULL, what[200];
	bool ok = false;

	*out = NULL;
	*status = 0;
	snprintf(what, sizeof what, "fleetd %s %s failed", method, path);
	if (!tf_conf.configured || !tf_conf.url) {
		tf_diag(d, true, NULL, "Provider not configured",
		    "Set url (or FLEET_URL) and token (or FLEET_TOKEN) in the fleet provider.");
		return false;
	}
	if (!tf_url_ok(tf_conf.url)) {	/* the token never goes over plain http elsewhere */
		tf_diag(d, true, "url", "Insecure fleetd URL",
		    "The token is sent over https://, or over http:// to a loopback host only.");
		return false;
	}
	if (asprintf(&url, "%s%s", tf_conf.url, path) < 0)
		return false;
	if (body)
		text = json_dumps(body, JSON_COMPACT);
	rq.method = method;
	rq.url = url;
	rq.headers = hdr;
	rq.nheaders = text ? 2 : 1;
	/* One key per logical call, the same on every retry: a create that fleetd
	 * committed before the connection broke is answered again, not made twice. */
	if (strcmp(method, "POST") == 0 && idem_key(idem, sizeof idem))
		rq.nheaders = 3;
	/* The version the plan was made from: a write over a change made since answers 412. */
	if (json_is_number(version) && strcmp(method, "POST") != 0) {
		snprintf(etag, sizeof etag, "\"%lld\"", (long long)json_number_value(version));
		hdr[2].name = "If-Match";
		hdr[2].value = etag;
		rq.nheaders = 3;
		if (!text) {	/* DELETE: no Content-Type */
			hdr[1] = hdr[2];
			rq.nheaders = 2;
		}
	}
	rq.body = text;
	rq.body_len = text ? strlen(text) : 0;
	rq.timeout_ms = tf_conf.timeout_ms;
	rq.ca_pem = tf_conf.ca_pem;
	rq.bearer = tf_conf.token;
	rq.retry.max_attempts = 1 + tf_conf.retries;
	rq.retry.base_delay_ms = 200;
	rq.retry.max_delay_ms = 10000;
	if (!http_do(&rq, &rs, &e)) {
		tf_diag(d, true, NULL, what, "%s (%s)", e.msg, rs.error);
		goto cleanup;
	}
	*status = (int)rs.status;
	if (rs.body && rs.body_len)
		*out = json_loadb(rs.body, rs.body_len, 0, NULL);
	if (rs.status == ok1 || (ok2 && rs.status == ok2) || (accept_404 && rs.status == 404)) {
		ok = true;
		goto cleanup;
	}
	tf_api_problem(*out, (int)rs.status, what, d);
	json_decref(*out);
	*out = NULL;
cleanup:
	http_resp_cleanup(&rs);
	free(url);
	free(text);
	return ok;
}
