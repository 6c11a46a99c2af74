/* test_oidc: JWKs from the RFC 7515 / 7520 vectors, every refusal of oidc_verify (one row
 * per forged or wrong token), key rotation and retirement in the key set, the group map. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "core/crypto.h"
#include "core/jwk.h"
#include "core/textbuf.h"
#include "iam/oidc.h"

#define VEC FLEETD_SOURCE_DIR "/../shared/testvectors/jws/"
#define NOW 1700000000

static json_t *a2;		/* rfc7515-a2.json */
static char *priv;		/* its private key, PEM */

static json_t *
public_jwk(json_t *jwk, const char *kid)
{
	json_t *k = json_pack("{s:s, s:O, s:O}", "kty", "RSA", "n", json_object_get(jwk, "n"),
	    "e", json_object_get(jwk, "e"));

	if (kid != NULL)
		json_object_set_new(k, "kid", json_string(kid));
	return k;
}

static json_t *
jwks_of(json_t *k1, json_t *k2)
{
	json_t *keys = json_array();

	json_array_append(keys, k1);
	if (k2 != NULL)
		json_array_append(keys, k2);
	return json_pack("{s:o}", "keys", keys);
}

static int
setup(void **state)
{
	(void)state;
	a2 = json_load_file(VEC "rfc7515-a2.json", 0, NULL);
	priv = textbuf_read_file(VEC "rfc7515-a2.key.pem", NULL);
	return a2 == NULL || priv == NULL;
}

static int
teardown(void **state)
{
	(void)state;
	json_decref(a2);
	free(priv);
	return 0;
}

/* The RFC's own signatures verify through the JWK; one changed byte does not. */
static void
test_rfc_vectors(void **state)
{
	json_t *c = json_load_file(VEC "rfc7520-4.1-rs256.json", 0, NULL);
	struct err e = { 0 };
	struct jwk *k = jwk_from_json(json_object_get(a2, "jwk_private"), &e);
	const char *si = json_string_value(json_object_get(a2, "signing_input"));
	size_t n = 0;
	uint8_t *sig = crypto_b64_decode(json_string_value(json_object_get(a2,
	    "signature_b64url")), &n);
	json_t *pub = public_jwk(json_object_get(a2, "jwk_private"), NULL);

	(void)state;
	assert_null(k);				/* private members refused */
	assert_string_equal(e.code, "jwk.private_key");
	k = jwk_from_json(pub, &e);
	assert_non_null(k);
	assert_int_equal(jwk_kind(k), JWK_RSA);
	assert_true(jwk_verify(k, "RS256", si, strlen(si), sig, n));
	assert_false(jwk_verify(k, "PS256", si, strlen(si), sig, n));
	assert_false(jwk_verify(k, "ES256", si, strlen(si), sig, n));
	assert_false(jwk_verify(k, "HS256", si, strlen(si), sig, n));
	assert_false(jwk_verify(k, "none", si, strlen(si), sig, n));
	sig[10] ^= 1;
	assert_false(jwk_verify(k, "RS256", si, strlen(si), sig, n));
	jwk_free(k);
	free(sig);
	json_decref(pub);
	/* RFC 7520 4.1: the cookbook key (its public members), kid and use "sig" */
	assert_null(jwk_from_json(json_object_get(json_object_get(c, "input"), "key"), &e));
	pub = public_jwk(json_object_get(json_object_get(c, "input"), "key"),
	    "bilbo.baggins@hobbiton.example");
	json_object_set_new(pub, "use", json_string("sig"));
	k = jwk_from_json(pub, &e);
	json_decref(pub);
	assert_non_null(k);
	assert_string_equal(jwk_kid(k), "bilbo.baggins@hobbiton.example");
	{
		json_t *o = json_object_get(c, "signing");
		const char *in = json_string_value(json_object_get(o, "sig-input"));

		sig = crypto_b64_decode(json_string_value(json_object_get(o, "sig")), &n);
		assert_true(jwk_verify(k, "RS256", in, strlen(in), sig, n));
		free(sig);
	}
	jwk_free(k);
	json_decref(c);
}

/* Keys fleetd must never take: symmetric, small, off-curve, for encryption. */
static void
test_bad_jwks(void **state)
{
	static const char *const bad[] = {
		"{\"kty\":\"oct\",\"k\":\"c2VjcmV0\"}",
		"{\"kty\":\"RSA\",\"n\":\"AQAB\",\"e\":\"AQAB\"}",
		"{\"kty\":\"EC\",\"crv\":\"P-256\",\"x\":\"AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA\","
		    "\"y\":\"AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAE\"}",
		"{\"kty\":\"EC\",\"crv\":\"P-384\",\"x\":\"AA\",\"y\":\"AA\"}",
		"{\"kty\":\"OKP\",\"crv\":\"Ed25519\",\"x\":\"AA\"}",
		"[1]",
		NULL,
	};
	struct err e = { 0 };
	json_t *enc = public_jwk(json_object_get(a2, "jwk_private"), "e1");

	(void)state;
	for (int i = 0; bad[i]; i++) {
		json_t *j = json_loads(bad[i], 0, NULL);

		assert_null(jwk_from_json(j, &e));
		json_decref(j);
	}
	json_object_set_new(enc, "use", json_string("enc"));
	assert_null(jwk_from_json(enc, &e));
	assert_string_equal(e.code, "jwk.not_for_signing");
	json_decref(enc);
}

struct tok_row {
	const char	*name;
	const char	*claims;	/* %s: iss placeholder not used; literal JSON */
	const char	*code;		/* NULL: accepted */
};

static char *
sign(const char *claims_json, const char *kid)
{
	json_t *c = json_loads(claims_json, 0, NULL);
	struct err e = { 0 };
	char *t;

	assert_non_null(c);
	t = crypto_jwt_sign(priv, kid, c, &e);
	json_decref(c);
	assert_non_null(t);
	return t;
}

/* A token of header h (JSON) and claims c with signature bytes sig (base64url). */
static char *
compose(const char *h, const char *c, const char *sig64)
{
	char *h64 = crypto_b64url_encode(h, strlen(h)), *c64 = crypto_b64url_encode(c, strlen(c));
	char *t = malloc(strlen(h64) + strlen(c64) + strlen(sig64) + 3);

	sprintf(t, "%s.%s.%s", h64, c64, sig64);
	free(h64);
	free(c64);
	return t;
}

static void
policy_init(struct oidc_policy *p)
{
	struct err e = { 0 };

	memset(p, 0, sizeof(*p));
	p->issuer = strdup("https://idp.example");
	p->audience = strdup("https://fleetd.example");
	p->groups_claim = strdup("groups");
	p->leeway = 30;
	p->grace = 60;
	assert_true(oidc_policy_groups(p, "{\"viewers\":{\"role\":\"viewer\",\"environments\":"
	    "[\"prod\"],\"team\":\"ml\"},\"ops\":{\"role\":\"operator\",\"environments\":[\"dev\"],"
	    "\"team\":\"infra\"},\"ops-prod\":{\"role\":\"operator\",\"environments\":[\"prod\","
	    "\"dev\"]},\"admins\":{\"role\":\"admin\",\"environments\":[\"*\"]}}", &e));
}

/* Claims checks, each signed by the real key: only the first row is accepted. */
static void
test_claims(void **state)
{
#define GOOD_ISS "\"iss\":\"https://idp.example\""
#define GOOD_AUD "\"aud\":\"https://fleetd.example\""
	static const struct tok_row rows[] = {
		{ "good", "{" GOOD_ISS "," GOOD_AUD ",\"sub\":\"u1\",\"exp\":1700000100,"
		    "\"iat\":1700000000}", NULL },
		{ "aud array", "{" GOOD_ISS ",\"aud\":[\"x\",\"https://fleetd.example\"],"
		    "\"sub\":\"u1\",\"exp\":1700000100}", NULL },
		{ "in leeway", "{" GOOD_ISS "," GOOD_AUD ",\"sub\":\"u1\",\"exp\":1699999980}",
		    NULL },
		{ "expired", "{" GOOD_ISS "," GOOD_AUD ",\"sub\":\"u1\",\"exp\":1699999970}",
		    "auth.token_expired" },
		{ "no exp", "{" GOOD_ISS "," GOOD_AUD ",\"sub\":\"u1\"}", "auth.bad_token" },
		{ "exp string", "{" GOOD_ISS "," GOOD_AUD ",\"sub\":\"u1\",\"exp\":\"1800000000\"}",
		    "auth.bad_token" },
		{ "nbf future", "{" GOOD_ISS "," GOOD_AUD ",\"sub\":\"u1\",\"exp\":1700000100,"
		    "\"nbf\":1700000031}", "auth.token_not_yet_valid" },
		{ "iat future", "{" GOOD_ISS "," GOOD_AUD ",\"sub\":\"u1\",\"exp\":1700000100,"
		    "\"iat\":1700000031}", "auth.token_not_yet_valid" },
		{ "wrong iss", "{\"iss\":\"https://idp.example/\"," GOOD_AUD ",\"sub\":\"u1\","
		    "\"exp\":1700000100}", "auth.wrong_issuer" },
		{ "wrong aud", "{" GOOD_ISS ",\"aud\":\"https://other.example\",\"sub\":\"u1\","
		    "\"exp\":1700000100}", "auth.wrong_audience" },
		{ "no aud", "{" GOOD_ISS ",\"sub\":\"u1\",\"exp\":1700000100}",
		    "auth.wrong_audience" },
		{ "no sub", "{" GOOD_ISS "," GOOD_AUD ",\"exp\":1700000100}", "auth.bad_token" },
	};
	struct oidc_policy p;
	struct oidc_keyset *ks = oidc_keyset_new();
	json_t *k = public_jwk(json_object_get(a2, "jwk_private"), "k1"), *jwks = jwks_of(k, NULL);
	struct err e = { 0 };

	(void)state;
	policy_init(&p);
	assert_true(oidc_keyset_merge(ks, jwks, NOW, p.grace, &e));
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		char *t = sign(rows[i].claims, "k1");
		json_t *c;

		err_clear(&e);
		c = oidc_verify(&p, ks, t, NOW, &e);
		if (rows[i].code == NULL) {
			if (c == NULL)
				fail_msg("%s: refused with %s", rows[i].name, e.code);
		} else {
			if (c != NULL || strcmp(e.code, rows[i].code) != 0)
				fail_msg("%s: got %s, want %s", rows[i].name, c ? "accepted" : e.code,
				    rows[i].code);
			assert_int_equal(e.status, 401);
		}
		json_decref(c);
		free(t);
	}
	json_decref(k);
	json_decref(jwks);
	oidc_keyset_free(ks);
	oidc_policy_cleanup(&p);
}

/* Tokens whose header or signature is forged: none, HS256 keyed with the public key,
 * an unknown kid, a changed signature, crit, a typ that is not an access token. */
static void
test_forged(void **state)
{
	static const char claims[] = "{" GOOD_ISS "," GOOD_AUD ",\"sub\":\"u1\","
	    "\"exp\":1700000100}";
	struct oidc_policy p;
	struct oidc_keyset *ks = oidc_keyset_new();
	json_t *k = public_jwk(json_object_get(a2, "jwk_private"), "k1"), *jwks = jwks_of(k, NULL);
	char *pub = textbuf_read_file(VEC "rfc7515-a2.pub.pem", NULL), *t, *s64, *dot;
	struct err e = { 0 };
	uint8_t mac[32];

	(void)state;
	policy_init(&p);
	assert_true(oidc_keyset_merge(ks, jwks, NOW, p.grace, &e));
	t = compose("{\"alg\":\"none\",\"kid\":\"k1\"}", claims, "");
	assert_true(oidc_is_jwt(t));		/* an empty signature: still a JWT's shape */
	assert_null(oidc_verify(&p, ks, t, NOW, &e));
	assert_string_equal(e.code, "auth.bad_alg");
	free(t);
	/* HS256 with the public key's PEM as the secret (the classic key confusion) */
	t = compose("{\"alg\":\"HS256\",\"kid\":\"k1\"}", claims, "x");
	dot = strrchr(t, '.');
	crypto_hmac_sha256(pub, strlen(pub), t, (size_t)(dot - t), mac);
	s64 = crypto_b64url_encode(mac, sizeof(mac));
	strcpy(dot + 1, "");
	t = realloc(t, strlen(t) + strlen(s64) + 1);
	strcat(t, s64);
	assert_true(oidc_is_jwt(t));
	assert_null(oidc_verify(&p, ks, t, NOW, &e));
	assert_string_equal(e.code, "auth.bad_alg");
	free(t);
	free(s64);
	t = compose("{\"alg\":\"none\"}", claims, "AA");
	assert_null(oidc_verify(&p, ks, t, NOW, &e));
	assert_string_equal(e.code, "auth.bad_alg");
	free(t);
	t = sign(claims, "k2");
	assert_null(oidc_verify(&p, ks, t, NOW, &e));
	assert_string_equal(e.code, "auth.unknown_key");
	free(t);
	t = sign(claims, NULL);			/* no kid: the one RSA key is tried */
	err_clear(&e);
	json_decref(oidc_verify(&p, ks, t, NOW, &e));
	assert_string_equal(e.code, "");
	t[strlen(t) - 2] = t[strlen(t) - 2] == 'A' ? 'B' : 'A';
	assert_null(oidc_verify(&p, ks, t, NOW, &e));
	assert_string_equal(e.code, "auth.bad_signature");
	free(t);
	t = compose("{\"alg\":\"RS256\",\"kid\":\"k1\",\"crit\":[\"exp\"]}", claims, "AA");
	assert_null(oidc_verify(&p, ks, t, NOW, &e));
	assert_string_equal(e.code, "auth.bad_token");
	free(t);
	assert_false(oidc_is_jwt("fleet_0123456789abcdef"));
	assert_false(oidc_is_jwt("a.b.c"));
	assert_null(oidc_verify(&p, ks, "a.b.c", NOW, &e));
	assert_string_equal(e.code, "auth.bad_token");
	free(pub);
	json_decref(k);
	json_decref(jwks);
	oidc_keyset_free(ks);
	oidc_policy_cleanup(&p);
}

/* Rotation: a key that leaves the JWKS verifies for grace seconds after fleetd saw it
 * gone, then auth.key_retired; a key that comes back is live again. */
static void
test_rotation(void **state)
{
	static const char claims[] = "{" GOOD_ISS "," GOOD_AUD ",\"sub\":\"u1\","
	    "\"exp\":1700009999}";
	json_t *cook = json_load_file(VEC "rfc7520-4.1-rs256.json", 0, NULL);
	json_t *k1 = public_jwk(json_object_get(a2, "jwk_private"), "k1");
	json_t *k2 = public_jwk(json_object_get(json_object_get(cook, "input"), "key"), "k2");
	json_t *both = jwks_of(k2, k1), *only2 = jwks_of(k2, NULL);
	struct oidc_keyset *ks = oidc_keyset_new();
	struct oidc_policy p;
	struct err e = { 0 };
	char *t = sign(claims, "k1");
	json_t *c;

	(void)state;
	policy_init(&p);
	assert_true(oidc_keyset_merge(ks, both, NOW, p.grace, &e));
	assert_int_equal(oidc_keyset_count(ks), 2);
	assert_true(oidc_keyset_merge(ks, only2, NOW + 10, p.grace, &e));	/* k1 retired */
	assert_int_equal(oidc_keyset_count(ks), 2);
	c = oidc_verify(&p, ks, t, NOW + 10 + p.grace, &e);		/* within the grace */
	assert_non_null(c);
	json_decref(c);
	assert_null(oidc_verify(&p, ks, t, NOW + 11 + p.grace, &e));
	assert_string_equal(e.code, "auth.key_retired");
	assert_true(oidc_keyset_merge(ks, both, NOW + 12 + p.grace, p.grace, &e));	/* back */
	c = oidc_verify(&p, ks, t, NOW + 13 + p.grace, &e);
	assert_non_null(c);
	json_decref(c);
	assert_true(oidc_keyset_merge(ks, only2, NOW + 100, p.grace, &e));
	assert_true(oidc_keyset_merge(ks, only2, NOW + 101 + p.grace, p.grace, &e));
	assert_int_equal(oidc_keyset_count(ks), 2);			/* remembered */
	assert_null(oidc_verify(&p, ks, t, NOW + 101 + p.grace, &e));
	assert_string_equal(e.code, "auth.key_retired");
	assert_true(oidc_keyset_merge(ks, only2, NOW + 101 + p.grace + 86400, p.grace, &e));
	assert_int_equal(oidc_keyset_count(ks), 1);			/* forgotten */
	assert_null(oidc_verify(&p, ks, t, NOW + 101 + p.grace + 86400, &e));
	assert_string_equal(e.code, "auth.unknown_key");
	assert_false(oidc_keyset_merge(ks, json_object_get(cook, "input"), NOW, 1, &e));
	free(t);
	oidc_keyset_free(ks);
	oidc_policy_cleanup(&p);
	json_decref(both);
	json_decref(only2);
	json_decref(k1);
	json_decref(k2);
	json_decref(cook);
}

/* The group map: highest role wins, environments of that role's rows only, the team. */
static void
test_principal(void **state)
{
	static const struct {
		const char	*groups;
		int		 role;
		const char	*envs;
		const char	*team;
	} rows[] = {
		{ "[\"viewers\"]", TOKEN_VIEWER, "prod", "ml" },
		{ "\"viewers\"", TOKEN_VIEWER, "prod", "ml" },
		{ "[\"viewers\",\"ops\"]", TOKEN_OPERATOR, "dev", "infra" },
		{ "[\"ops\",\"ops-prod\",\"x\"]", TOKEN_OPERATOR, "dev,prod", "infra" },
		{ "[\"viewers\",\"admins\"]", TOKEN_ADMIN, "*", "" },
		{ "[\"strangers\"]", TOKEN_NONE, NULL, NULL },
		{ "null", TOKEN_NONE, NULL, NULL },
	};
	struct oidc_policy p;
	struct err e = { 0 };

	(void)state;
	policy_init(&p);
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		struct arena *a = arena_new();
		struct token_principal pr;
		json_t *c = json_pack("{s:s, s:s, s:s, s:o}", "iss", "https://idp.example", "sub",
		    "u1", "email", "u1@example.com", "groups", json_loads(rows[i].groups,
		    JSON_DECODE_ANY, NULL));
		char envs[128] = "";

		if (rows[i].role == TOKEN_NONE) {
			assert_false(oidc_principal(&p, c, a, &pr, &e));
			assert_int_equal(e.status, 403);
			assert_string_equal(e.code, "auth.no_role");
		} else {
			assert_true(oidc_principal(&p, c, a, &pr, &e));
			assert_int_equal(pr.role, rows[i].role);
			for (int j = 0; j < pr.nenvs; j++)
				snprintf(envs + strlen(envs), sizeof(envs) - strlen(envs), "%s%s",
				    j ? "," : "", pr.envs[j]);
			assert_string_equal(envs, rows[i].envs);
			assert_string_equal(pr.team, rows[i].team);
			assert_string_equal(pr.name, "u1@example.com");
			assert_int_equal(strlen(pr.id), 36);
			assert_int_equal(pr.id[14], '8');	/* UUID version 8 */
		}
		json_decref(c);
		arena_free(a);
	}
	oidc_policy_cleanup(&p);
	/* bad maps fail with the member named */
	policy_init(&p);
	oidc_policy_cleanup(&p);
	memset(&p, 0, sizeof(p));
	assert_false(oidc_policy_groups(&p, "{\"g\":{\"role\":\"root\",\"environments\":[\"*\"]}}",
	    &e));
	assert_non_null(strstr(e.msg, "group g"));
	assert_false(oidc_policy_groups(&p, "{\"g\":{\"role\":\"viewer\"}}", &e));
	assert_false(oidc_policy_groups(&p, "[]", &e));
	assert_int_equal(p.ngroups, 0);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_rfc_vectors),
		cmocka_unit_test(test_bad_jwks),
		cmocka_unit_test(test_claims),
		cmocka_unit_test(test_forged),
		cmocka_unit_test(test_rotation),
		cmocka_unit_test(test_principal),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
