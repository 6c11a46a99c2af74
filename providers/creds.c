/* creds: credentials for a cloud's control-plane identity — GKE (key -> RS256 JWT ->
 * OAuth -> generateAccessToken), AKS (fleetd's Entra token as the client assertion of the
 * control-plane managed identity's federated credential -> its ARM token), HyperPod
 * (STS AssumeRole with the external id, SigV4) — cached per cloud and role until shortly
 * before expiry. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <curl/curl.h>

#include "core/config.h"
#include "core/crypto.h"
#include "core/sigv4.h"
#include "providers/creds_int.h"
#include "providers/provider.h"

#define CACHE_MAX	512
#define EARLY_S		60	/* refresh this long before expiry */



struct entry {
	char			 key[480];	/* cloud id '|' role */
	struct prov_creds	 c;
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct entry *cache;
static size_t ncache;

static double
now_s(void)
{
	return (double)time(NULL);
}

static void
mkkey(char *key, size_t n, const char *cloud, const char *role)
{
	snprintf(key, n, "%s|%s", cloud, role ? role : "");
}

bool
creds_cache_get(const char *cloud, const char *role, struct prov_creds *out)
{
	char key[480];
	bool hit = false;

	mkkey(key, sizeof(key), cloud, role);
	pthread_mutex_lock(&lock);
	for (size_t i = 0; i < ncache; i++)
		if (strcmp(cache[i].key, key) == 0 && cache[i].c.expires > now_s() + EARLY_S) {
			*out = cache[i].c;
			hit = true;
			break;
		}
	pthread_mutex_unlock(&lock);
	return hit;
}

void
creds_cache_put(const char *cloud, const char *role, const struct prov_creds *c)
{
	char key[480];
	size_t i;

	mkkey(key, sizeof(key), cloud, role);
	pthread_mutex_lock(&lock);
	for (i = 0; i < ncache; i++)
		if (strcmp(cache[i].key, key) == 0)
			break;
	if (i == ncache) {
		if (cache == NULL)
			cache = calloc(CACHE_MAX, sizeof(*cache));
		if (cache == NULL)
			abort();
		if (ncache == CACHE_MAX)	/* full: drop the soonest to expire */
			for (size_t j = i = 0; j < ncache; j++)
				if (cache[j].c.expires < cache[i].c.expires)
					i = j;
		if (i == ncache)
			ncache++;
	}
	snprintf(cache[i].key, sizeof(cache[i].key), "%s", key);
	cache[i].c = *c;
	pthread_mutex_unlock(&lock);
}

/* Drops the cloud's credentials and fleetd's own base tokens they were made from (a
 * revoked base token would otherwise keep failing every exchange until it expires). */
void
prov_creds_invalidate(const char *cloud_id)
{
	size_t n = strlen(cloud_id);

	pthread_mutex_lock(&lock);
	for (size_t i = 0; i < ncache;) {
		if ((strncmp(cache[i].key, cloud_id, n) == 0 && cache[i].key[n] == '|') ||
		    strncmp(cache[i].key, "fleetd-", 7) == 0) {
			cache[i] = cache[--ncache];
			memset(&cache[ncache], 0, sizeof(cache[ncache]));
		} else {
			i++;
		}
	}
	pthread_mutex_unlock(&lock);
}

void
prov_creds_cache_clear(void)
{
	pthread_mutex_lock(&lock);
	if (cache != NULL)
		memset(cache, 0, CACHE_MAX * sizeof(*cache));
	free(cache);
	cache = NULL;
	ncache = 0;
	pthread_mutex_unlock(&lock);
}

/* ---- helpers shared with the drivers */

double
creds_parse_time(const char *s)
{
	struct tm tm;
	const char *end;

	if (s == NULL)
		return 0;
	memset(&tm, 0, sizeof(tm));
	end = strptime(s, "%Y-%m-%dT%H:%M:%S", &tm);
	if (end == NULL)
		return 0;
	return (double)timegm(&tm);
}

char *
creds_form_escape(const char *s)
{
	return curl_easy_escape(NULL, s ? s : "", 0);
}

void
creds_form_free(char *s)
{
	curl_free(s);
}

/* Text between <tag> and </tag> in xml (first match), copied into out. */
bool
creds_xml_text(const char *xml, size_t len, const char *tag, char *out, size_t n)
{
	char open[64], close[64];
	const char *a, *b, *end = xml + len;

	snprintf(open, sizeof(open), "<%s>", tag);
	snprintf(close, sizeof(close), "</%s>", tag);
	if (xml == NULL || n == 0)
		return false;
	a = memmem(xml, len, open, strlen(open));
	if (a == NULL)
		return false;
	a += strlen(open);
	b = memmem(a, (size_t)(end - a), close, strlen(close));
	if (b == NULL || (size_t)(b - a) >= n)
		return false;
	memcpy(out, a, (size_t)(b - a));
	out[b - a] = '\0';
	return true;
}

bool
prov_aws_parse_assume_role(const char *body, size_t len, struct prov_creds *out,
    struct err *e)
{
	char exp[64];

	memset(out, 0, sizeof(*out));
	if (!creds_xml_text(body, len, "AccessKeyId", out->access_key, sizeof(out->access_key)) ||
	    !creds_xml_text(body, len, "SecretAccessKey", out->secret_key,
	    sizeof(out->secret_key)) ||
	    !creds_xml_text(body, len, "SessionToken", out->session_token,
	    sizeof(out->session_token)) ||
	    !creds_xml_text(body, len, "Expiration", exp, sizeof(exp)) ||
	    out->access_key[0] == '\0' || out->secret_key[0] == '\0' ||
	    (out->expires = creds_parse_time(exp)) <= 0) {
		memset(out, 0, sizeof(*out));
		return err_set(e, 502, "prov.bad_answer", "sts: assume role answer lacks "
		    "credentials");
	}
	return true;
}

/* AWS error text "Code: Message" from an XML or JSON error body. */
void
creds_aws_error(const struct http_resp *r, char *out, size_t n)
{
	char code[128] = "", msg[384] = "";
	json_t *j;

	if (r->body == NULL) {
		snprintf(out, n, "status %ld", r->status);
		return;
	}
	creds_xml_text(r->body, r->body_len, "Code", code, sizeof(code));
	creds_xml_text(r->body, r->body_len, "Message", msg, sizeof(msg));
	if (code[0] == '\0' && (j = json_loadb(r->body, r->body_len, 0, NULL)) != NULL) {
		const char *c = json_string_value(json_object_get(j, "__type")),
		    *m = json_string_value(json_object_get(j, "message"));

		snprintf(code, sizeof(code), "%s", c ? c : "");
		snprintf(msg, sizeof(msg), "%s", m ? m : "");
		json_decref(j);
	}
	snprintf(out, n, "%s%s%s (status %ld)", code, code[0] ? ": " : "", msg, r->status);
}

/* ---- SigV4 */

static bool
split_url(const char *url, char *host, size_t hn, const char **path, const char **query)
{
	const char *p = strstr(url, "://"), *slash;

	if (p == NULL)
		return false;
	p += 3;
	slash = strchr(p, '/');
	if (slash == NULL)
		slash = p + strlen(p);
	if ((size_t)(slash - p) >= hn || slash == p)
		return false;
	memcpy(host, p, (size_t)(slash - p));
	host[slash - p] = '\0';
	*path = *slash ? slash : "/";
	*query = strchr(*path, '?');
	return true;
}

static const char *
stash(struct prov_aws_sig *s, size_t *off, const char *v)
{
	size_t n = strlen(v) + 1;
	char *dst;

	if (*off + n > sizeof(s->store))
		return NULL;
	dst = s->store + *off;
	memcpy(dst, v, n);
	*off += n;
	return dst;
}

bool
prov_aws_sign(const char *method, const char *url, const char *region, const char *service,
    const char *access_key, const char *secret_key, const char *session_token,
    const char *content_type, const char *target, const char *body, struct prov_aws_sig *out,
    struct err *e)
{
	char host[256], date[20], path[1024];
	const char *p, *q;
	struct sigv4_header sh[6];
	struct sigv4_request rq;
	struct sigv4_key k;
	char *auth;
	size_t n = 0, off = 0;
	time_t t = time(NULL);
	struct tm tm;

	memset(out, 0, sizeof(*out));
	if (!split_url(url, host, sizeof(host), &p, &q) ||
	    (size_t)(q ? q - p : (long)strlen(p)) >= sizeof(path))
		return err_set(e, 500, "prov.bad_url", "bad aws endpoint url");
	snprintf(path, sizeof(path), "%.*s", (int)(q ? q - p : (long)strlen(p)), p);
	gmtime_r(&t, &tm);
	strftime(date, sizeof(date), "%Y%m%dT%H%M%SZ", &tm);
	sh[n++] = (struct sigv4_header){ "host", host };
	if (content_type != NULL)
		sh[n++] = (struct sigv4_header){ "content-type", content_type };
	sh[n++] = (struct sigv4_header){ "x-amz-date", date };
	if (session_token != NULL && session_token[0] != '\0')
		sh[n++] = (struct sigv4_header){ "x-amz-security-token", session_token };
	if (target != NULL)
		sh[n++] = (struct sigv4_header){ "x-amz-target", target };
	rq = (struct sigv4_request){ method, path, q ? q + 1 : NULL, sh, n, body,
	    body ? strlen(body) : 0, NULL };
	k = (struct sigv4_key){ access_key, secret_key, region, service, date };
	auth = sigv4_authorization(&k, &rq, NULL);
	if (auth == NULL)
		return err_set(e, 500, "prov.sign", "cannot sign aws request");
	for (size_t i = 0; i < n; i++) {
		out->h[out->n].name = stash(out, &off, sh[i].name);
		out->h[out->n].value = stash(out, &off, sh[i].value);
		out->n++;
	}
	out->h[out->n].name = stash(out, &off, "authorization");
	out->h[out->n].value = stash(out, &off, auth);
	out->n++;
	free(auth);
	for (size_t i = 0; i < out->n; i++)
		if (out->h[i].name == NULL || out->h[i].value == NULL)
			return err_set(e, 500, "prov.sign", "aws headers too long");
	return true;
}
