/* test_crypto: every vector in shared/testvectors (RFC 4231 HMAC, AES-256-GCM, RFC 7515 /
 * RFC 7520 RS256 JWS, the Google JWT-bearer example) plus seal/open and base64. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <openssl/core_names.h>
#include <openssl/evp.h>
#include <openssl/param_build.h>
#include <openssl/pem.h>

#include "core/crypto.h"
#include "core/textbuf.h"

#define VEC FLEETD_SOURCE_DIR "/../shared/testvectors/"

static json_t *
load_json(const char *path)
{
	json_error_t je;
	json_t *v = json_load_file(path, 0, &je);

	if (v == NULL)
		fail_msg("%s: %s", path, je.text);
	return v;
}

/* The whole file (malloc'd); fails the test when it cannot be read. */
static char *
slurp(const char *path)
{
	char *buf = textbuf_read_file(path, NULL);

	if (buf == NULL)
		fail_msg("cannot read %s", path);
	return buf;
}

/* Hex string -> malloc'd bytes (at least 1 byte allocated). */
static uint8_t *
unhex(const char *hex, size_t *len)
{
	size_t n = strlen(hex) / 2;
	uint8_t *out = malloc(n + 1);

	assert_non_null(out);
	assert_int_equal(strlen(hex) % 2, 0);
	for (size_t i = 0; i < n; i++) {
		unsigned v;

		assert_int_equal(sscanf(hex + 2 * i, "%2x", &v), 1);
		out[i] = (uint8_t)v;
	}
	*len = n;
	return out;
}

static const char *
jstr(json_t *obj, const char *key)
{
	const char *s = json_string_value(json_object_get(obj, key));

	if (s == NULL)
		fail_msg("missing string %s", key);
	return s;
}

/* ---- digests, hex, random, compare ---- */

static void
test_sha256(void **state)
{
	static const struct { const char *in, *hex; } cases[] = {
		{ "", "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855" },
		{ "abc", "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad" },
		{ "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq",
		  "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1" },
	};
	char out[65];

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		crypto_sha256_hex(cases[i].in, strlen(cases[i].in), out);
		assert_string_equal(out, cases[i].hex);
	}
}

static void
test_random_equal(void **state)
{
	uint8_t a[32] = { 0 }, b[32] = { 0 }, zero[32] = { 0 };

	(void)state;
	assert_true(crypto_random(a, sizeof(a)));
	assert_true(crypto_random(b, sizeof(b)));
	assert_false(crypto_equal(a, zero, sizeof(a)));
	assert_false(crypto_equal(a, b, sizeof(a)));
	memcpy(b, a, sizeof(a));
	assert_true(crypto_equal(a, b, sizeof(a)));
	b[31] ^= 1;
	assert_false(crypto_equal(a, b, sizeof(a)));
	assert_true(crypto_equal(a, b, 0));
}

static void
test_hmac_rfc4231(void **state)
{
	json_t *doc = load_json(VEC "hmac-sha256/rfc4231.json"), *tc;
	size_t i, n = 0;

	(void)state;
	json_array_foreach(json_object_get(doc, "test_cases"), i, tc) {
		size_t klen, dlen, elen;
		uint8_t *key = unhex(jstr(tc, "key"), &klen);
		uint8_t *data = unhex(jstr(tc, "data"), &dlen);
		uint8_t *exp = unhex(jstr(tc, "hmac_sha256"), &elen);
		json_t *trunc = json_object_get(tc, "truncate_bits");
		uint8_t mac[32];

		assert_int_equal(klen, json_integer_value(json_object_get(tc, "key_len")));
		assert_int_equal(dlen, json_integer_value(json_object_get(tc, "data_len")));
		/* case 5 gives only the leftmost truncate_bits of the output */
		assert_int_equal(elen, trunc ? (size_t)json_integer_value(trunc) / 8 : 32);
		crypto_hmac_sha256(key, klen, data, dlen, mac);
		if (memcmp(mac, exp, elen) != 0)
			fail_msg("rfc 4231 case %lld mismatch",
			    json_integer_value(json_object_get(tc, "test_case")));
		free(key);
		free(data);
		free(exp);
		n++;
	}
	assert_int_equal(n, 7);
	json_decref(doc);
}

/* ---- base64 ---- */

static void
test_base64(void **state)
{
	static const struct { const char *in, *std, *url; } cases[] = {	/* RFC 4648 §10 */
		{ "", "", "" }, { "f", "Zg==", "Zg" }, { "fo", "Zm8=", "Zm8" },
		{ "foo", "Zm9v", "Zm9v" }, { "foob", "Zm9vYg==", "Zm9vYg" },
		{ "fooba", "Zm9vYmE=", "Zm9vYmE" }, { "foobar", "Zm9vYmFy", "Zm9vYmFy" },
		{ "\xfb\xff\xbf", "+/+/", "-_-_" },
	};
	static const char *bad[] = { "Zm9v!", "Z", "Zg===", "Zm9=v", "Zg=", "Z m9v" };

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		size_t len = strlen(cases[i].in), n = 99;
		char *s = crypto_b64_encode(cases[i].in, len);
		char *u = crypto_b64url_encode(cases[i].in, len);
		uint8_t *d1 = crypto_b64_decode(cases[i].std, &n), *d2;

		assert_string_equal(s, cases[i].std);
		assert_string_equal(u, cases[i].url);
		assert_non_null(d1);
		assert_int_equal(n, len);
		assert_memory_equal(d1, cases[i].in, len);
		d2 = crypto_b64_decode(cases[i].url, &n);
		assert_non_null(d2);
		assert_int_equal(n, len);
		assert_memory_equal(d2, cases[i].in, len);
		free(s);
		free(u);
		free(d1);
		free(d2);
	}
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		size_t n;
		uint8_t *d = crypto_b64_decode(bad[i], &n);

		if (d != NULL)
			fail_msg("accepted bad base64 \"%s\"", bad[i]);
	}
}

/* ---- AES-256-GCM ---- */

static void
test_aes_gcm_vectors(void **state)
{
	json_t *doc = load_json(VEC "aes-gcm/vectors.json"), *v;
	size_t i, nvalid = 0, ninvalid = 0;

	(void)state;
	json_array_foreach(json_object_get(doc, "vectors"), i, v) {
		size_t klen, ivlen, ptlen, aadlen, ctlen, taglen;
		uint8_t *key = unhex(jstr(v, "key"), &klen);
		uint8_t *iv = unhex(jstr(v, "iv"), &ivlen);
		uint8_t *pt = unhex(jstr(v, "plaintext"), &ptlen);
		uint8_t *aad = unhex(jstr(v, "aad"), &aadlen);
		uint8_t *ct = unhex(jstr(v, "ciphertext"), &ctlen);
		uint8_t *tag = unhex(jstr(v, "tag"), &taglen);
		uint8_t *out = malloc(ctlen + 1), gtag[16];
		const char *name = jstr(v, "name");

		assert_int_equal(klen, 32);
		assert_int_equal(taglen, 16);
		assert_int_equal(ivlen * 8, json_integer_value(json_object_get(v, "iv_bits")));
		if (strcmp(jstr(v, "result"), "valid") == 0) {
			assert_int_equal(ptlen, ctlen);
			if (!crypto_aes_gcm_encrypt(key, iv, ivlen, aad, aadlen, pt, ptlen,
			    out, gtag) || memcmp(out, ct, ctlen) != 0 ||
			    memcmp(gtag, tag, 16) != 0)
				fail_msg("%s: encrypt mismatch", name);
			memset(out, 0xAA, ctlen);
			if (!crypto_aes_gcm_decrypt(key, iv, ivlen, aad, aadlen, ct, ctlen,
			    tag, out) || memcmp(out, pt, ptlen) != 0)
				fail_msg("%s: decrypt mismatch", name);
			tag[0] ^= 0x80;		/* any tag change must be rejected */
			if (crypto_aes_gcm_decrypt(key, iv, ivlen, aad, aadlen, ct, ctlen,
			    tag, out))
				fail_msg("%s: flipped tag accepted", name);
			nvalid++;
		} else {
			if (crypto_aes_gcm_decrypt(key, iv, ivlen, aad, aadlen, ct, ctlen,
			    tag, out))
				fail_msg("%s: bad tag accepted", name);
			for (size_t j = 0; j < ctlen; j++)
				assert_int_equal(out[j], 0);	/* no unauthenticated output */
			ninvalid++;
		}
		free(key);
		free(iv);
		free(pt);
		free(aad);
		free(ct);
		free(tag);
		free(out);
	}
	assert_int_equal(nvalid, 10);
	assert_int_equal(ninvalid, 1);
	json_decref(doc);
}

static void
test_seal_open(void **state)
{
	static const char *texts[] = { "", "s3cr3t", "a longer secret with {json} \"quotes\" "
	    "and more than one aes block of text in it" };
	uint8_t key[32], other[32];

	(void)state;
	assert_true(crypto_random(key, sizeof(key)));
	memcpy(other, key, sizeof(key));
	other[0] ^= 1;
	for (size_t i = 0; i < sizeof(texts) / sizeof(texts[0]); i++) {
		struct err e = { 0 };
		char *s1 = crypto_seal(key, texts[i], "cluster/42", &e);
		char *s2 = crypto_seal(key, texts[i], "cluster/42", &e);
		char *pt;
		size_t rawlen = 0;
		uint8_t *raw = crypto_b64_decode(s1, &rawlen);

		assert_non_null(s1);
		assert_non_null(s2);
		assert_string_not_equal(s1, s2);	/* fresh random iv each time */
		assert_int_equal(rawlen, 12 + strlen(texts[i]) + 16);
		pt = crypto_open(key, s1, "cluster/42", &e);
		assert_non_null(pt);
		assert_string_equal(pt, texts[i]);
		free(pt);

		assert_null(crypto_open(key, s1, "cluster/43", &e));	/* wrong aad */
		assert_string_equal(e.code, "crypto.open_failed");
		assert_null(crypto_open(key, s1, NULL, &e));		/* aad dropped */
		assert_null(crypto_open(other, s1, "cluster/42", &e));	/* wrong key */
		assert_string_equal(e.code, "crypto.open_failed");
		s1[20] = s1[20] == 'A' ? 'B' : 'A';			/* tampered */
		assert_null(crypto_open(key, s1, "cluster/42", &e));
		free(raw);
		free(s1);
		free(s2);
	}
}

static void
test_open_malformed(void **state)
{
	static const char *bad[] = { "", "not base64!", "AAAA", "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA" };
	uint8_t key[32] = { 0 };

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct err e = { 0 };

		assert_null(crypto_open(key, bad[i], "x", &e));
		assert_true(strcmp(e.code, "crypto.bad_sealed") == 0 ||
		    strcmp(e.code, "crypto.open_failed") == 0);
		assert_int_equal(e.status, 500);
	}
}

/* ---- RS256 / JWS ---- */

/* Builds a PKCS#8 PEM from an RSA private JWK (test-side only). */
static char *
jwk_to_pem(json_t *jwk)
{
	static const struct { const char *jwk, *param; } map[] = {
		{ "n", OSSL_PKEY_PARAM_RSA_N }, { "e", OSSL_PKEY_PARAM_RSA_E },
		{ "d", OSSL_PKEY_PARAM_RSA_D }, { "p", OSSL_PKEY_PARAM_RSA_FACTOR1 },
		{ "q", OSSL_PKEY_PARAM_RSA_FACTOR2 }, { "dp", OSSL_PKEY_PARAM_RSA_EXPONENT1 },
		{ "dq", OSSL_PKEY_PARAM_RSA_EXPONENT2 },
		{ "qi", OSSL_PKEY_PARAM_RSA_COEFFICIENT1 },
	};
	OSSL_PARAM_BLD *bld = OSSL_PARAM_BLD_new();
	BIGNUM *bn[8] = { 0 };
	OSSL_PARAM *params;
	EVP_PKEY_CTX *ctx;
	EVP_PKEY *pk = NULL;
	BIO *bio = BIO_new(BIO_s_mem());
	char *data, *pem;
	long n;

	for (size_t i = 0; i < 8; i++) {
		size_t len;
		uint8_t *raw = crypto_b64_decode(jstr(jwk, map[i].jwk), &len);

		assert_non_null(raw);
		bn[i] = BN_bin2bn(raw, (int)len, NULL);
		assert_int_equal(OSSL_PARAM_BLD_push_BN(bld, map[i].param, bn[i]), 1);
		free(raw);
	}
	params = OSSL_PARAM_BLD_to_param(bld);
	ctx = EVP_PKEY_CTX_new_from_name(NULL, "RSA", NULL);
	assert_int_equal(EVP_PKEY_fromdata_init(ctx), 1);
	assert_int_equal(EVP_PKEY_fromdata(ctx, &pk, EVP_PKEY_KEYPAIR, params), 1);
	assert_int_equal(PEM_write_bio_PrivateKey(bio, pk, NULL, NULL, 0, NULL, NULL), 1);
	n = BIO_get_mem_data(bio, &data);
	pem = strndup(data, (size_t)n);
	BIO_free(bio);
	EVP_PKEY_free(pk);
	EVP_PKEY_CTX_free(ctx);
	OSSL_PARAM_free(params);
	OSSL_PARAM_BLD_free(bld);
	for (size_t i = 0; i < 8; i++)
		BN_free(bn[i]);
	return pem;
}

/* Signs input with pem and checks the base64url signature equals exp. */
static void
check_sign(const char *pem, const char *input, const char *exp)
{
	struct err e = { 0 };
	uint8_t *sig = NULL;
	size_t siglen = 0;
	char *got;

	assert_true(crypto_rs256_sign(pem, input, strlen(input), &sig, &siglen, &e));
	assert_int_equal(siglen, 256);
	got = crypto_b64url_encode(sig, siglen);
	assert_string_equal(got, exp);
	free(got);
	free(sig);
}

static void
test_rfc7515_a2(void **state)
{
	json_t *doc = load_json(VEC "jws/rfc7515-a2.json"), *claims, *hdr = NULL;
	char *priv = slurp(VEC "jws/rfc7515-a2.key.pem");
	char *pub = slurp(VEC "jws/rfc7515-a2.pub.pem");
	char *from_jwk = jwk_to_pem(json_object_get(doc, "jwk_private"));
	const char *si = jstr(doc, "signing_input"), *sig64 = jstr(doc, "signature_b64url");
	char *tok = strdup(jstr(doc, "jws_compact"));
	size_t siglen, plen;
	uint8_t *sig = crypto_b64_decode(sig64, &siglen);
	uint8_t *payload = crypto_b64_decode(jstr(doc, "payload_b64url"), &plen);
	char *hb64 = crypto_b64url_encode(jstr(doc, "protected_header_json"),
	    strlen(jstr(doc, "protected_header_json")));

	(void)state;
	assert_string_equal(hb64, jstr(doc, "protected_header_b64url"));
	assert_int_equal(plen, strlen(jstr(doc, "payload_json")));
	assert_memory_equal(payload, jstr(doc, "payload_json"), plen);
	check_sign(priv, si, sig64);		/* PKCS#1 v1.5 is deterministic */
	check_sign(from_jwk, si, sig64);	/* same key straight from the JWK */
	assert_true(crypto_rs256_verify(pub, si, strlen(si), sig, siglen));

	claims = crypto_jwt_verify(pub, tok, &hdr);
	assert_non_null(claims);
	assert_string_equal(json_string_value(json_object_get(claims, "iss")), "joe");
	assert_int_equal(json_integer_value(json_object_get(claims, "exp")), 1300819380);
	assert_true(json_is_true(json_object_get(claims, "http://example.com/is_root")));
	assert_string_equal(json_string_value(json_object_get(hdr, "alg")), "RS256");
	json_decref(claims);
	json_decref(hdr);

	/* one byte changed anywhere: message, signature, token */
	{
		char *m = strdup(si);

		m[strlen(m) - 1] ^= 0x01;
		assert_false(crypto_rs256_verify(pub, m, strlen(m), sig, siglen));
		free(m);
		sig[100] ^= 0x01;
		assert_false(crypto_rs256_verify(pub, si, strlen(si), sig, siglen));
		sig[100] ^= 0x01;
		assert_false(crypto_rs256_verify(priv, si, strlen(si), sig, siglen - 1));
	}
	for (size_t i = 0; i < strlen(tok); i += 37) {
		char keep = tok[i];

		if (keep == '.')
			continue;
		tok[i] = keep == 'A' ? 'B' : 'A';
		if (crypto_jwt_verify(pub, tok, NULL) != NULL)
			fail_msg("token altered at %zu still verifies", i);
		tok[i] = keep;
	}
	{
		/* the signature's last char carries 2 unused bits: another spelling of
		 * the same bytes is still not the token that was signed */
		size_t last = strlen(tok) - 1;
		char keep = tok[last];

		tok[last] = (char)(keep + 1);
		assert_null(crypto_jwt_verify(pub, tok, NULL));
		tok[last] = keep;
	}
	claims = crypto_jwt_verify(pub, tok, NULL);
	assert_non_null(claims);	/* restored token is fine again */
	json_decref(claims);

	free(hb64);
	free(payload);
	free(sig);
	free(tok);
	free(from_jwk);
	free(priv);
	free(pub);
	json_decref(doc);
}

static void
test_rfc7520_4_1(void **state)
{
	json_t *doc = load_json(VEC "jws/rfc7520-4.1-rs256.json");
	json_t *signing = json_object_get(doc, "signing");
	char *pem = jwk_to_pem(json_object_get(json_object_get(doc, "input"), "key"));
	const char *si = jstr(signing, "sig-input"), *sig64 = jstr(signing, "sig");
	const char *compact = jstr(json_object_get(doc, "output"), "compact");
	char expect[2048];
	size_t siglen;
	uint8_t *sig = crypto_b64_decode(sig64, &siglen);

	(void)state;
	check_sign(pem, si, sig64);
	snprintf(expect, sizeof(expect), "%s.%s", si, sig64);
	assert_string_equal(compact, expect);
	/* a private PEM is not accepted where a public one is required */
	assert_false(crypto_rs256_verify(pem, si, strlen(si), sig, siglen));
	free(sig);
	free(pem);
	json_decref(doc);
}

static void
test_google_jwt_bearer(void **state)
{
	json_t *doc = load_json(VEC "jws/google-sa-jwt-bearer.json");
	json_t *ex = json_object_get(doc, "derived_example"), *claims, *back, *hdr = NULL;
	char *priv = slurp(VEC "jws/rfc7515-a2.key.pem");
	char *pub = slurp(VEC "jws/rfc7515-a2.pub.pem");
	struct err e = { 0 };
	char *tok;

	(void)state;
	claims = json_loads(jstr(ex, "claims_json"), 0, NULL);	/* keeps key order */
	assert_non_null(claims);
	tok = crypto_jwt_sign(priv, NULL, claims, &e);
	assert_non_null(tok);
	assert_string_equal(tok, jstr(ex, "jwt"));
	back = crypto_jwt_verify(pub, tok, &hdr);
	assert_non_null(back);
	assert_true(json_equal(back, claims));
	assert_string_equal(json_string_value(json_object_get(hdr, "typ")), "JWT");
	assert_null(json_object_get(hdr, "kid"));
	json_decref(back);
	json_decref(hdr);
	free(tok);

	tok = crypto_jwt_sign(priv, "key-1", claims, &e);	/* kid lands in the header */
	assert_non_null(tok);
	back = crypto_jwt_verify(pub, tok, &hdr);
	assert_non_null(back);
	assert_string_equal(json_string_value(json_object_get(hdr, "kid")), "key-1");
	json_decref(back);
	json_decref(hdr);
	free(tok);

	json_decref(claims);
	free(priv);
	free(pub);
	json_decref(doc);
}

/* alg confusion, malformed tokens, bad keys. */
static void
test_jwt_rejects(void **state)
{
	char *priv = slurp(VEC "jws/rfc7515-a2.key.pem");
	char *pub = slurp(VEC "jws/rfc7515-a2.pub.pem");
	json_t *claims = json_pack("{s:s}", "sub", "x"), *arr = json_array();
	struct err e = { 0 };
	char *tok = crypto_jwt_sign(priv, NULL, claims, &e), *bad;
	const char *d2 = strrchr(tok, '.');
	size_t n = (size_t)(d2 - tok);
	EVP_PKEY *ec = EVP_EC_gen("P-256");
	BIO *bio = BIO_new(BIO_s_mem());
	char *ecpem, *data;
	uint8_t *sig = NULL;
	size_t siglen = 0;
	long len;

	(void)state;
	assert_non_null(tok);
	/* {"alg":"none"} and {"alg":"HS256"} headers with a valid-looking rest */
	bad = malloc(strlen(tok) + 64);
	sprintf(bad, "eyJhbGciOiJub25lIn0%s", strchr(tok, '.'));
	assert_null(crypto_jwt_verify(pub, bad, NULL));
	sprintf(bad, "eyJhbGciOiJIUzI1NiJ9%s", strchr(tok, '.'));
	assert_null(crypto_jwt_verify(pub, bad, NULL));
	sprintf(bad, "%s.", tok);				/* four segments */
	assert_null(crypto_jwt_verify(pub, bad, NULL));
	sprintf(bad, "%.*s", (int)n, tok);			/* two segments */
	assert_null(crypto_jwt_verify(pub, bad, NULL));
	sprintf(bad, "%s=", tok);				/* padding */
	assert_null(crypto_jwt_verify(pub, bad, NULL));
	assert_null(crypto_jwt_verify("not a pem", tok, NULL));
	assert_null(crypto_jwt_verify(pub, NULL, NULL));
	free(bad);

	assert_null(crypto_jwt_sign(priv, NULL, arr, &e));	/* claims not an object */
	assert_string_equal(e.code, "crypto.bad_claims");
	assert_null(crypto_jwt_sign("garbage", NULL, claims, &e));
	assert_string_equal(e.code, "crypto.bad_key");

	assert_non_null(ec);					/* not an RSA key */
	assert_int_equal(PEM_write_bio_PrivateKey(bio, ec, NULL, NULL, 0, NULL, NULL), 1);
	len = BIO_get_mem_data(bio, &data);
	ecpem = strndup(data, (size_t)len);
	assert_false(crypto_rs256_sign(ecpem, "x", 1, &sig, &siglen, &e));
	assert_string_equal(e.code, "crypto.bad_key");
	assert_null(sig);

	free(ecpem);
	BIO_free(bio);
	EVP_PKEY_free(ec);
	free(tok);
	json_decref(arr);
	json_decref(claims);
	free(priv);
	free(pub);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_sha256),
		cmocka_unit_test(test_random_equal),
		cmocka_unit_test(test_hmac_rfc4231),
		cmocka_unit_test(test_base64),
		cmocka_unit_test(test_aes_gcm_vectors),
		cmocka_unit_test(test_seal_open),
		cmocka_unit_test(test_open_malformed),
		cmocka_unit_test(test_rfc7515_a2),
		cmocka_unit_test(test_rfc7520_4_1),
		cmocka_unit_test(test_google_jwt_bearer),
		cmocka_unit_test(test_jwt_rejects),
	};

	return cmocka_run_group_tests_name("crypto", tests, NULL, NULL);
}
