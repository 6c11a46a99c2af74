/* oidc_keys: the provider's keys — discovery document and JWKS fetched with core/http,
 * kept in a key set that rotation merges into, refetched when old or on an unknown kid
 * (rate-limited); and oidc_authenticate, the request path's entry. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/config.h"
#include "core/http.h"
#include "core/log.h"
#include "iam/oidc.h"
#include "iam/oidc_int.h"

#define FETCH_TIMEOUT_MS	5000L
#define FETCH_MAX_BODY		(1024 * 1024)
#define MAX_KEYS		64
#define RETIRED_KEEP		86400	/* a retired key is remembered (to say so) this long */

/* ---- the key set ---- */

struct oidc_keyset *
oidc_keyset_new(void)
{
	return calloc(1, sizeof(struct oidc_keyset));
}

static void
key_cleanup(struct oidc_key *k)
{
	jwk_free(k->jwk);
	free(k->thumb);
}

void
oidc_keyset_free(struct oidc_keyset *ks)
{
	if (ks == NULL)
		return;
	for (int i = 0; i < ks->n; i++)
		key_cleanup(&ks->keys[i]);
	free(ks->keys);
	free(ks);
}

int
oidc_keyset_count(const struct oidc_keyset *ks)
{
	return ks ? ks->n : 0;
}

static int
find_thumb(const struct oidc_key *keys, int n, const char *thumb)
{
	for (int i = 0; i < n; i++)
		if (strcmp(keys[i].thumb, thumb) == 0)
			return i;
	return -1;
}

bool
oidc_keyset_merge(struct oidc_keyset *ks, json_t *jwks, time_t now, long grace,
    struct err *e)
{
	json_t *arr = json_object_get(jwks, "keys"), *v;
	struct oidc_key *fresh = NULL, *out = NULL;
	int nfresh = 0, nout = 0;
	bool ok = false;
	size_t i;

	if (!json_is_array(arr))
		return err_set(e, 502, "auth.bad_jwks", "the identity provider's jwks has no keys "
		    "array");
	fresh = calloc(json_array_size(arr) + 1, sizeof(*fresh));
	json_array_foreach(arr, i, v) {
		struct err ke = { 0 };
		struct jwk *k;
		char *t;

		if (nfresh >= MAX_KEYS)
			break;
		if ((k = jwk_from_json(v, &ke)) == NULL)	/* an encryption key, an unknown kty */
			continue;
		t = jwk_thumbprint(k);
		if (t == NULL || find_thumb(fresh, nfresh, t) >= 0) {
			free(t);
			jwk_free(k);
			continue;
		}
		fresh[nfresh++] = (struct oidc_key){ .jwk = k, .thumb = t };
	}
	if (nfresh == 0) {
		err_set(e, 502, "auth.bad_jwks", "the identity provider's jwks holds no usable "
		    "signing key");
		goto cleanup;
	}
	out = calloc((size_t)(nfresh + ks->n), sizeof(*out));
	for (int j = 0; j < nfresh; j++) {	/* listed now: live, whatever they were */
		out[nout++] = fresh[j];
		fresh[j] = (struct oidc_key){ 0 };
	}
	for (int j = 0; j < ks->n; j++) {
		struct oidc_key *k = &ks->keys[j];

		if (find_thumb(out, nout, k->thumb) >= 0)
			continue;
		if (k->gone_at == 0)
			k->gone_at = now;
		if (now - k->gone_at > grace + RETIRED_KEEP || nout >= MAX_KEYS)
			continue;		/* freed with the old array below */
		out[nout++] = *k;
		*k = (struct oidc_key){ 0 };
	}
	for (int j = 0; j < ks->n; j++)
		key_cleanup(&ks->keys[j]);
	free(ks->keys);
	ks->keys = out;
	ks->n = nout;
	out = NULL;
	ok = true;
cleanup:
	for (int j = 0; j < nfresh; j++)
		key_cleanup(&fresh[j]);
	free(fresh);
	free(out);
	return ok;
}

/* ---- the service ---- */

static struct {
	bool			 on;
	struct oidc_policy	 pol;
	char			*ca_pem;	/* FLEETD_OIDC_CA's contents, NULL: system CAs */
	pthread_rwlock_t	 lock;		/* keys, jwks_uri, fetched_at */
	pthread_mutex_t		 fetch_mu;	/* one fetch at a time */
	struct oidc_keyset	*keys;
	char			*jwks_uri;
	time_t			 fetched_at;	/* last JWKS that merged */
	time_t			 tried_at;	/* last fetch attempt */
} S = { .lock = PTHREAD_RWLOCK_INITIALIZER, .fetch_mu = PTHREAD_MUTEX_INITIALIZER };

/* https, or plain http to a loopback address (tests, a local provider). */
static bool
url_ok(const char *u)
{
	static const char *const loop[] = { "http://127.0.0.1", "http://localhost",
	    "http://[::1]", NULL };

	if (u == NULL)
		return false;
	if (strncmp(u, "https://", 8) == 0)
		return true;
	for (int i = 0; loop[i]; i++) {
		size_t n = strlen(loop[i]);

		if (strncmp(u, loop[i], n) == 0 && (u[n] == ':' || u[n] == '/' || u[n] == '\0'))
			return true;
	}
	return false;
}

/* GETs url and parses a JSON object; 502 auth.idp_unavailable on any failure. */
static json_t *
get_json(const char *url, struct err *e)
{
	struct http_header accept = { "Accept", "application/json" };
	struct http_req req = { .url = url, .headers = &accept, .nheaders = 1,
	    .timeout_ms = FETCH_TIMEOUT_MS, .ca_pem = S.ca_pem, .max_body = FETCH_MAX_BODY };
	struct http_resp resp = { 0 };
	json_t *v = NULL;

	if (!http_do(&req, &resp, e))
		err_set(e, 502, "auth.idp_unavailable", "the identity provider did not answer");
	else if (resp.status != 200)
		err_set(e, 502, "auth.idp_unavailable", "the identity provider answered %ld",
		    resp.status);
	else if ((v = json_loadb(resp.body ? resp.body : "", resp.body_len, 0, NULL)) == NULL ||
	    !json_is_object(v)) {
		json_decref(v);
		v = NULL;
		err_set(e, 502, "auth.idp_unavailable", "the identity provider's answer is not a "
		    "json object");
	}
	http_resp_cleanup(&resp);
	return v;
}

/* The discovery document's jwks_uri, after checking its issuer is exactly ours (OpenID
 * Connect Discovery 1.0, section 4.3).  malloc'd. */
static char *
discover(struct err *e)
{
	size_t n = strlen(S.pol.issuer);
	char *url = malloc(n + 64), *jwks = NULL;
	const char *iss, *ju;
	json_t *doc;

	snprintf(url, n + 64, "%.*s/.well-known/openid-configuration",
	    (int)(n > 0 && S.pol.issuer[n - 1] == '/' ? n - 1 : n), S.pol.issuer);
	doc = get_json(url, e);
	iss = json_string_value(json_object_get(doc, "issuer"));
	ju = json_string_value(json_object_get(doc, "jwks_uri"));
	if (doc != NULL && (iss == NULL || strcmp(iss, S.pol.issuer) != 0))
		err_set(e, 502, "auth.idp_mismatch", "the discovery document names another issuer");
	else if (doc != NULL && !url_ok(ju))
		err_set(e, 502, "auth.idp_mismatch", "the discovery document's jwks_uri is not "
		    "https");
	else if (doc != NULL)
		jwks = strdup(ju);
	json_decref(doc);
	free(url);
	return jwks;
}

/* Fetches the JWKS (discovering first when needed) and merges it, unless another thread
 * fetched since `since`.  Called without locks held. */
static bool
refresh(time_t since, struct err *e)
{
	char *uri = NULL;
	json_t *jwks = NULL;
	time_t now;
	bool ok = false;

	pthread_mutex_lock(&S.fetch_mu);
	pthread_rwlock_wrlock(&S.lock);
	ok = S.tried_at > since;		/* someone else just did */
	uri = !ok && S.jwks_uri ? strdup(S.jwks_uri) : NULL;
	if (!ok)
		S.tried_at = time(NULL);
	pthread_rwlock_unlock(&S.lock);
	if (ok)
		goto cleanup;
	if (uri == NULL && (uri = discover(e)) == NULL)
		goto fail;
	if ((jwks = get_json(uri, e)) == NULL) {
		free(uri);			/* the next attempt discovers again */
		uri = NULL;
		goto fail;
	}
	now = time(NULL);
	pthread_rwlock_wrlock(&S.lock);
	ok = oidc_keyset_merge(S.keys, jwks, now, S.pol.grace, e);
	if (ok) {
		S.fetched_at = now;
		free(S.jwks_uri);
		S.jwks_uri = uri;
		uri = NULL;
	}
	pthread_rwlock_unlock(&S.lock);
	if (ok)
		log_info(NULL, "oidc", "keys fetched", "{s:i}", "keys", oidc_keyset_count(S.keys));
fail:
	if (!ok)
		log_warn(NULL, "oidc", "keys not fetched", "{s:s, s:s}", "code", e->code, "msg",
		    e->msg);
cleanup:
	pthread_mutex_unlock(&S.fetch_mu);
	free(uri);
	json_decref(jwks);
	return ok;
}

static char *
read_file(const char *path, struct err *e)
{
	FILE *f = fopen(path, "r");
	char *buf = NULL;
	long n;

	if (f == NULL || fseek(f, 0, SEEK_END) != 0 || (n = ftell(f)) < 0 || n > 1 << 20 ||
	    fseek(f, 0, SEEK_SET) != 0 || (buf = calloc(1, (size_t)n + 1)) == NULL ||
	    fread(buf, 1, (size_t)n, f) != (size_t)n) {
		free(buf);
		buf = NULL;
		err_set(e, 400, "config.bad_oidc", "cannot read the oidc ca file");
	}
	if (f != NULL)
		fclose(f);
	return buf;
}

bool
oidc_start(struct err *e)
{
	struct err fe = { 0 };

	if (cfg.oidc_issuer == NULL || cfg.oidc_issuer[0] == '\0')
		return true;
	if (!url_ok(cfg.oidc_issuer))
		return err_set(e, 400, "config.bad_oidc", "the oidc issuer must be an https url "
		    "(plain http only on loopback)");
	if (cfg.oidc_audience == NULL || cfg.oidc_audience[0] == '\0')
		return err_set(e, 400, "config.bad_oidc", "an oidc issuer needs an audience "
		    "(FLEETD_OIDC_AUDIENCE)");
	if (cfg.oidc_leeway < 0 || cfg.oidc_leeway > 300 || cfg.oidc_key_grace < 0 ||
	    cfg.oidc_refresh_min < 0 || cfg.oidc_jwks_max_age < 1)
		return err_set(e, 400, "config.bad_oidc", "oidc leeway (0..300), key grace, "
		    "refresh interval and jwks max age must be sensible");
	if (!oidc_policy_groups(&S.pol, cfg.oidc_groups, e))
		return false;
	if (cfg.oidc_ca != NULL && (S.ca_pem = read_file(cfg.oidc_ca, e)) == NULL) {
		oidc_policy_cleanup(&S.pol);
		return false;
	}
	S.pol.issuer = strdup(cfg.oidc_issuer);
	S.pol.audience = strdup(cfg.oidc_audience);
	S.pol.groups_claim = strdup(cfg.oidc_groups_claim ? cfg.oidc_groups_claim : "groups");
	S.pol.leeway = cfg.oidc_leeway;
	S.pol.grace = cfg.oidc_key_grace;
	S.keys = oidc_keyset_new();
	S.on = true;
	refresh(0, &fe);	/* best effort: a provider that is down is retried per token */
	log_info(NULL, "oidc", "accepting access tokens", "{s:s, s:s, s:i}", "issuer",
	    S.pol.issuer, "audience", S.pol.audience, "groups", S.pol.ngroups);
	return true;
}

void
oidc_stop(void)
{
	if (!S.on)
		return;
	S.on = false;
	oidc_policy_cleanup(&S.pol);
	oidc_keyset_free(S.keys);
	S.keys = NULL;
	free(S.jwks_uri);
	free(S.ca_pem);
	S.jwks_uri = S.ca_pem = NULL;
	S.fetched_at = S.tried_at = 0;
}

bool
oidc_enabled(void)
{
	return S.on;
}

static json_t *
verify_now(const char *token, struct err *e)
{
	json_t *claims;

	err_clear(e);
	pthread_rwlock_rdlock(&S.lock);
	claims = oidc_verify(&S.pol, S.keys, token, time(NULL), e);
	pthread_rwlock_unlock(&S.lock);
	return claims;
}

bool
oidc_authenticate(const char *token, struct arena *a, struct token_principal *out,
    struct err *e)
{
	time_t now = time(NULL), fetched, tried;
	json_t *claims;
	bool ok;

	pthread_rwlock_rdlock(&S.lock);
	fetched = S.fetched_at;
	tried = S.tried_at;
	pthread_rwlock_unlock(&S.lock);
	/* keys too old: refetch (at most every refresh-min); a failed fetch keeps the old ones */
	if (now - fetched >= cfg.oidc_jwks_max_age && now - tried >= cfg.oidc_refresh_min) {
		struct err fe = { 0 };

		refresh(tried, &fe);
	}
	claims = verify_now(token, e);
	if (claims == NULL && strcmp(e->code, "auth.unknown_key") == 0) {
		pthread_rwlock_rdlock(&S.lock);
		tried = S.tried_at;
		pthread_rwlock_unlock(&S.lock);
		if (time(NULL) - tried >= cfg.oidc_refresh_min) {	/* rotation: look again */
			struct err fe = { 0 };

			if (refresh(tried, &fe))
				claims = verify_now(token, e);
		}
	}
	ok = claims != NULL && oidc_principal(&S.pol, claims, a, out, e);
	json_decref(claims);
	return ok;
}
