/* oidc: the checks of an access token (RFC 7519, RFC 8725's advice: the key decides the
 * algorithm, never the token) and the group map.  No I/O here; iam/oidc_keys.c fetches. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "core/crypto.h"
#include "core/jwk.h"
#include "iam/oidc.h"
#include "iam/oidc_int.h"

#define MAX_TOKEN	8192
#define B64URL		"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"

static const char *const allowed_algs[] = { "RS256", "PS256", "ES256", NULL };

/* ---- the group map ---- */

static bool
group_from_json(struct oidc_group *g, const char *name, json_t *row, struct err *e)
{
	json_error_t je;
	json_t *envs = NULL;
	const char *role = NULL, *team = NULL;
	size_t i;
	json_t *v;

	if (json_unpack_ex(row, &je, JSON_STRICT, "{s:s, s:o, s?s}", "role", &role,
	    "environments", &envs, "team", &team) != 0)
		return err_set(e, 400, "config.bad_oidc_groups", "group %s: %s", name, je.text);
	g->role = token_role_parse(role);
	if (g->role == TOKEN_NONE)
		return err_set(e, 400, "config.bad_oidc_groups", "group %s: unknown role %s", name,
		    role);
	if (!json_is_array(envs) || json_array_size(envs) == 0)
		return err_set(e, 400, "config.bad_oidc_groups",
		    "group %s: environments must be a non-empty array", name);
	g->name = strdup(name);
	g->team = team && team[0] ? strdup(team) : NULL;
	g->envs = calloc(json_array_size(envs), sizeof(char *));
	json_array_foreach(envs, i, v) {
		if (!json_is_string(v) || json_string_length(v) == 0)
			return err_set(e, 400, "config.bad_oidc_groups",
			    "group %s: environments must be names or \"*\"", name);
		g->envs[g->nenvs++] = strdup(json_string_value(v));
	}
	return true;
}

bool
oidc_policy_groups(struct oidc_policy *p, const char *map_json, struct err *e)
{
	json_error_t je;
	json_t *map = json_loads(map_json ? map_json : "{}", JSON_REJECT_DUPLICATES, &je);
	const char *name;
	json_t *row;
	bool ok = false;

	if (!json_is_object(map)) {
		err_set(e, 400, "config.bad_oidc_groups", "oidc group map is not a json object%s%s",
		    map ? "" : ": ", map ? "" : je.text);
		goto cleanup;
	}
	p->groups = calloc(json_object_size(map) + 1, sizeof(*p->groups));
	json_object_foreach(map, name, row) {
		if (!group_from_json(&p->groups[p->ngroups++], name, row, e))
			goto cleanup;
	}
	ok = true;
cleanup:
	json_decref(map);
	if (!ok) {
		struct oidc_policy keep = *p;

		keep.issuer = keep.audience = keep.groups_claim = NULL;
		oidc_policy_cleanup(&keep);
		p->groups = NULL;
		p->ngroups = 0;
	}
	return ok;
}

void
oidc_policy_cleanup(struct oidc_policy *p)
{
	for (int i = 0; i < p->ngroups; i++) {
		for (int j = 0; j < p->groups[i].nenvs; j++)
			free(p->groups[i].envs[j]);
		free(p->groups[i].envs);
		free(p->groups[i].name);
		free(p->groups[i].team);
	}
	free(p->groups);
	free(p->issuer);
	free(p->audience);
	free(p->groups_claim);
	memset(p, 0, sizeof(*p));
}

/* ---- the token ---- */

/* One base64url segment [s, s+len), decoded only when it is the canonical spelling. */
static uint8_t *
segment(const char *s, size_t len, size_t *out)
{
	char *copy = strndup(s, len), *again = NULL;
	uint8_t *raw = copy && len ? crypto_b64_decode(copy, out) : NULL;

	if (raw != NULL && ((again = crypto_b64url_encode(raw, *out)) == NULL ||
	    strcmp(again, copy) != 0)) {
		free(raw);
		raw = NULL;
	}
	free(again);
	free(copy);
	return raw;
}

static json_t *
segment_object(const char *s, size_t len)
{
	size_t n = 0;
	uint8_t *raw = segment(s, len, &n);
	json_t *v = raw ? json_loadb((const char *)raw, n, JSON_REJECT_DUPLICATES, NULL) : NULL;

	free(raw);
	if (v != NULL && !json_is_object(v)) {
		json_decref(v);
		v = NULL;
	}
	return v;
}

/* Splits a compact JWS: the two dots, or false when it is not three base64url segments. */
static bool
split(const char *token, const char **d1, const char **d2)
{
	size_t len = token ? strlen(token) : 0;

	if (len == 0 || len > MAX_TOKEN || strspn(token, B64URL ".") != len)
		return false;
	*d1 = strchr(token, '.');
	*d2 = *d1 ? strchr(*d1 + 1, '.') : NULL;
	return *d2 != NULL && strchr(*d2 + 1, '.') == NULL && *d1 > token && *d2 > *d1 + 1;
}

bool
oidc_is_jwt(const char *token)
{
	const char *d1, *d2;
	json_t *hdr;
	bool yes;

	if (!split(token, &d1, &d2))
		return false;
	hdr = segment_object(token, (size_t)(d1 - token));
	yes = json_is_string(json_object_get(hdr, "alg"));
	json_decref(hdr);
	return yes;
}

static bool
alg_allowed(const char *alg)
{
	for (int i = 0; alg && allowed_algs[i]; i++)
		if (strcmp(alg, allowed_algs[i]) == 0)
			return true;
	return false;
}

/* typ, when present, names a JWT or an RFC 9068 access token (not a logout or DPoP proof). */
static bool
typ_ok(json_t *hdr)
{
	json_t *t = json_object_get(hdr, "typ");
	const char *s = json_string_value(t);

	if (t == NULL)
		return true;
	if (s == NULL)
		return false;
	if (strncasecmp(s, "application/", 12) == 0)
		s += 12;
	return strcasecmp(s, "JWT") == 0 || strcasecmp(s, "at+jwt") == 0;
}

/* Checks the signature with the key the header names (or, without kid, each key fitting
 * alg).  Sets e to unknown_key, key_retired or bad_signature. */
static bool
signature_ok(const struct oidc_keyset *ks, json_t *hdr, const char *alg, const char *token,
    const char *d2, time_t now, long grace, struct err *e)
{
	const char *kid = json_string_value(json_object_get(hdr, "kid"));
	size_t siglen = 0;
	uint8_t *sig = segment(d2 + 1, strlen(d2 + 1), &siglen);
	int tried = 0, retired = 0;
	bool ok = false;

	if (json_object_get(hdr, "kid") != NULL && kid == NULL) {
		free(sig);
		return err_set(e, 401, "auth.bad_token", "the token's kid is not a string");
	}
	for (int i = 0; i < ks->n && !ok; i++) {
		const struct oidc_key *k = &ks->keys[i];

		if (kid != NULL && strcmp(jwk_kid(k->jwk), kid) != 0)
			continue;
		if (!jwk_allows(k->jwk, alg))
			continue;
		if (k->gone_at != 0 && now - k->gone_at > grace) {
			retired++;
			continue;
		}
		tried++;
		ok = sig != NULL && jwk_verify(k->jwk, alg, token, (size_t)(d2 - token), sig,
		    siglen);
	}
	free(sig);
	if (ok)
		return true;
	if (tried == 0 && retired > 0)
		return err_set(e, 401, "auth.key_retired",
		    "the token is signed by a key the identity provider retired");
	if (tried == 0)
		return err_set(e, 401, "auth.unknown_key",
		    "the token is signed by a key the identity provider does not publish");
	return err_set(e, 401, "auth.bad_signature", "the token's signature does not verify");
}

static bool
audience_ok(json_t *aud, const char *want)
{
	size_t i;
	json_t *v;

	if (json_is_string(aud))
		return strcmp(json_string_value(aud), want) == 0;
	json_array_foreach(aud, i, v)
		if (json_is_string(v) && strcmp(json_string_value(v), want) == 0)
			return true;
	return false;
}

/* exp (required), nbf and iat (when present) against now with leeway. */
static bool
times_ok(json_t *claims, time_t now, long leeway, struct err *e)
{
	json_t *exp = json_object_get(claims, "exp"), *nbf = json_object_get(claims, "nbf");
	json_t *iat = json_object_get(claims, "iat");

	if (!json_is_number(exp) || (nbf && !json_is_number(nbf)) || (iat && !json_is_number(iat)))
		return err_set(e, 401, "auth.bad_token", "the token's exp, nbf or iat is not a "
		    "number");
	if ((double)now >= json_number_value(exp) + (double)leeway)
		return err_set(e, 401, "auth.token_expired", "the token has expired");
	if (nbf && (double)now + (double)leeway < json_number_value(nbf))
		return err_set(e, 401, "auth.token_not_yet_valid", "the token is not valid yet");
	if (iat && json_number_value(iat) > (double)now + (double)leeway)
		return err_set(e, 401, "auth.token_not_yet_valid", "the token was issued in the "
		    "future");
	return true;
}

json_t *
oidc_verify(const struct oidc_policy *p, const struct oidc_keyset *ks, const char *token,
    time_t now, struct err *e)
{
	const char *d1, *d2, *alg, *iss, *sub;
	json_t *hdr = NULL, *claims = NULL;

	if (!split(token, &d1, &d2) ||
	    (hdr = segment_object(token, (size_t)(d1 - token))) == NULL) {
		err_set(e, 401, "auth.bad_token", "the bearer token is not a well-formed jwt");
		goto fail;
	}
	alg = json_string_value(json_object_get(hdr, "alg"));
	if (!alg_allowed(alg)) {
		err_set(e, 401, "auth.bad_alg", "the token's algorithm is not accepted");
		goto fail;
	}
	if (json_object_get(hdr, "crit") != NULL || !typ_ok(hdr)) {
		err_set(e, 401, "auth.bad_token", "the token's header has a crit or typ fleetd "
		    "does not accept");
		goto fail;
	}
	if (!signature_ok(ks, hdr, alg, token, d2, now, p->grace, e))
		goto fail;
	claims = segment_object(d1 + 1, (size_t)(d2 - d1 - 1));
	if (claims == NULL) {
		err_set(e, 401, "auth.bad_token", "the token's claims are not a json object");
		goto fail;
	}
	iss = json_string_value(json_object_get(claims, "iss"));
	if (iss == NULL || strcmp(iss, p->issuer) != 0) {
		err_set(e, 401, "auth.wrong_issuer", "the token is not from the configured issuer");
		goto fail;
	}
	if (!audience_ok(json_object_get(claims, "aud"), p->audience)) {
		err_set(e, 401, "auth.wrong_audience", "the token is not meant for fleetd");
		goto fail;
	}
	if (!times_ok(claims, now, p->leeway, e))
		goto fail;
	sub = json_string_value(json_object_get(claims, "sub"));
	if (sub == NULL || sub[0] == '\0' || strlen(sub) > 255) {
		err_set(e, 401, "auth.bad_token", "the token has no usable sub");
		goto fail;
	}
	json_decref(hdr);
	return claims;
fail:
	json_decref(hdr);
	json_decref(claims);
	return NULL;
}

/* ---- the principal ---- */

static bool
in_groups(json_t *groups, const char *name)
{
	size_t i;
	json_t *v;

	if (json_is_string(groups))
		return strcmp(json_string_value(groups), name) == 0;
	json_array_foreach(groups, i, v)
		if (json_is_string(v) && strcmp(json_string_value(v), name) == 0)
			return true;
	return false;
}

/* A stable UUID for the user (the audit log's actor_id and the idempotency keys' owner):
 * the first 16 bytes of sha-256("oidc\n" iss "\n" sub) with RFC 9562's version 8 bits. */
static void
user_id(const char *iss, const char *sub, char out[40])
{
	size_t n = strlen(iss) + strlen(sub) + 7;
	char *in = malloc(n);
	uint8_t h[32];

	snprintf(in, n, "oidc\n%s\n%s", iss, sub);
	crypto_sha256(in, strlen(in), h);
	free(in);
	h[6] = (uint8_t)((h[6] & 0x0f) | 0x80);
	h[8] = (uint8_t)((h[8] & 0x3f) | 0x80);
	snprintf(out, 40, "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-"
	    "%02x%02x%02x%02x%02x%02x", h[0], h[1], h[2], h[3], h[4], h[5], h[6], h[7], h[8],
	    h[9], h[10], h[11], h[12], h[13], h[14], h[15]);
}

static void
add_env(struct token_principal *out, const char *env, int max)
{
	for (int i = 0; i < out->nenvs; i++)
		if (strcmp(out->envs[i], env) == 0)
			return;
	if (out->nenvs < max)
		out->envs[out->nenvs++] = (char *)env;
}

bool
oidc_principal(const struct oidc_policy *p, json_t *claims, struct arena *a,
    struct token_principal *out, struct err *e)
{
	json_t *groups = json_object_get(claims, p->groups_claim);
	const char *sub = json_string_value(json_object_get(claims, "sub"));
	const char *iss = json_string_value(json_object_get(claims, "iss"));
	const char *email = json_string_value(json_object_get(claims, "email"));
	int best = TOKEN_NONE, max = 0;

	for (int i = 0; i < p->ngroups; i++)
		if (in_groups(groups, p->groups[i].name)) {
			if (p->groups[i].role > best)
				best = p->groups[i].role;
			max += p->groups[i].nenvs;
		}
	if (best == TOKEN_NONE || sub == NULL || iss == NULL)
		return err_set(e, 403, "auth.no_role",
		    "none of the token's groups is mapped to a role in fleetd");
	memset(out, 0, sizeof(*out));
	user_id(iss, sub, out->id);
	snprintf(out->name, sizeof(out->name), "%s", email && email[0] ? email : sub);
	out->role = best;
	out->oidc = true;
	out->expires = (long long)json_number_value(json_object_get(claims, "exp"));
	out->envs = arena_alloc(a, sizeof(char *) * (size_t)(max + 1));
	for (int i = 0; i < p->ngroups; i++) {
		const struct oidc_group *g = &p->groups[i];

		if (g->role != best || !in_groups(groups, g->name))
			continue;
		for (int j = 0; j < g->nenvs; j++)
			add_env(out, arena_strdup(a, g->envs[j]), max);
		if (out->team[0] == '\0' && g->team != NULL)
			snprintf(out->team, sizeof(out->team), "%s", g->team);
	}
	return true;
}
