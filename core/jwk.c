/* jwk: JSON Web Keys to OpenSSL public keys (OSSL_PARAM, no deprecated RSA/EC_KEY calls)
 * and the JWS checks RS256, PS256 and ES256.  Nothing here implements a primitive itself. */
#include <stdlib.h>
#include <string.h>

#include <openssl/bn.h>
#include <openssl/core_names.h>
#include <openssl/ecdsa.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/param_build.h>
#include <openssl/rsa.h>

#include "core/crypto.h"
#include "core/jwk.h"

struct jwk {
	EVP_PKEY	*pk;
	enum jwk_kind	 kind;
	char		 kid[128];
	char		 alg[16];
	char		*thumb_input;	/* RFC 7638 members, canonical order */
};

/* A base64url member of the JWK decoded; NULL when absent, bad or longer than max. */
static uint8_t *
member(json_t *jwk, const char *name, size_t max, size_t *len)
{
	const char *s = json_string_value(json_object_get(jwk, name));
	uint8_t *raw;

	if (s == NULL || s[0] == '\0' || strpbrk(s, "+/=") != NULL)
		return NULL;
	raw = crypto_b64_decode(s, len);
	if (raw != NULL && (*len == 0 || *len > max)) {
		free(raw);
		raw = NULL;
	}
	return raw;
}

static EVP_PKEY *
from_params(const char *type, OSSL_PARAM_BLD *bld)
{
	OSSL_PARAM *params = bld ? OSSL_PARAM_BLD_to_param(bld) : NULL;
	EVP_PKEY_CTX *ctx = params ? EVP_PKEY_CTX_new_from_name(NULL, type, NULL) : NULL;
	EVP_PKEY_CTX *chk = NULL;
	EVP_PKEY *pk = NULL;

	if (ctx == NULL || EVP_PKEY_fromdata_init(ctx) != 1 ||
	    EVP_PKEY_fromdata(ctx, &pk, EVP_PKEY_PUBLIC_KEY, params) != 1)
		goto cleanup;
	chk = EVP_PKEY_CTX_new_from_pkey(NULL, pk, NULL);
	if (chk == NULL || EVP_PKEY_public_check(chk) != 1) {	/* EC: the point is on the curve */
		EVP_PKEY_free(pk);
		pk = NULL;
	}
cleanup:
	EVP_PKEY_CTX_free(chk);
	EVP_PKEY_CTX_free(ctx);
	OSSL_PARAM_free(params);
	return pk;
}

static EVP_PKEY *
rsa_key(json_t *jwk)
{
	size_t nlen = 0, elen = 0;
	uint8_t *n = member(jwk, "n", 1024, &nlen), *ev = member(jwk, "e", 8, &elen);
	BIGNUM *bn = n ? BN_bin2bn(n, (int)nlen, NULL) : NULL;
	BIGNUM *be = ev ? BN_bin2bn(ev, (int)elen, NULL) : NULL;
	OSSL_PARAM_BLD *bld = OSSL_PARAM_BLD_new();
	EVP_PKEY *pk = NULL;

	if (bn == NULL || be == NULL || bld == NULL || BN_num_bits(bn) < 2048 ||
	    OSSL_PARAM_BLD_push_BN(bld, OSSL_PKEY_PARAM_RSA_N, bn) != 1 ||
	    OSSL_PARAM_BLD_push_BN(bld, OSSL_PKEY_PARAM_RSA_E, be) != 1)
		goto cleanup;
	pk = from_params("RSA", bld);
cleanup:
	OSSL_PARAM_BLD_free(bld);
	BN_free(bn);
	BN_free(be);
	free(n);
	free(ev);
	return pk;
}

static EVP_PKEY *
ec_key(json_t *jwk)
{
	const char *crv = json_string_value(json_object_get(jwk, "crv"));
	size_t xlen = 0, ylen = 0;
	uint8_t *x = member(jwk, "x", 32, &xlen), *y = member(jwk, "y", 32, &ylen);
	uint8_t point[65];
	OSSL_PARAM_BLD *bld = NULL;
	EVP_PKEY *pk = NULL;

	if (crv == NULL || strcmp(crv, "P-256") != 0 || x == NULL || y == NULL ||
	    xlen != 32 || ylen != 32)
		goto cleanup;
	point[0] = 0x04;	/* uncompressed: 04 || x || y */
	memcpy(point + 1, x, 32);
	memcpy(point + 33, y, 32);
	bld = OSSL_PARAM_BLD_new();
	if (bld == NULL || OSSL_PARAM_BLD_push_utf8_string(bld, OSSL_PKEY_PARAM_GROUP_NAME,
	    "prime256v1", 0) != 1 ||
	    OSSL_PARAM_BLD_push_octet_string(bld, OSSL_PKEY_PARAM_PUB_KEY, point, 65) != 1)
		goto cleanup;
	pk = from_params("EC", bld);
cleanup:
	OSSL_PARAM_BLD_free(bld);
	free(x);
	free(y);
	return pk;
}

struct jwk *
jwk_from_json(json_t *j, struct err *e)
{
	static const char *const private_members[] = { "d", "p", "q", "dp", "dq", "qi", "k",
	    NULL };
	const char *kty = json_string_value(json_object_get(j, "kty"));
	const char *use = json_string_value(json_object_get(j, "use"));
	const char *kid = json_string_value(json_object_get(j, "kid"));
	const char *alg = json_string_value(json_object_get(j, "alg"));
	struct jwk *k = NULL;
	json_t *t = NULL;

	if (!json_is_object(j) || kty == NULL) {
		err_set(e, 400, "jwk.bad_key", "a jwk must be an object with kty");
		return NULL;
	}
	for (int i = 0; private_members[i] != NULL; i++)
		if (json_object_get(j, private_members[i]) != NULL) {
			err_set(e, 400, "jwk.private_key", "a jwks must publish public keys only");
			return NULL;
		}
	if (use != NULL && strcmp(use, "sig") != 0) {
		err_set(e, 400, "jwk.not_for_signing", "the key's use is %.16s", use);
		return NULL;
	}
	if ((kid != NULL && strlen(kid) >= sizeof(k->kid)) ||
	    (alg != NULL && strlen(alg) >= sizeof(k->alg))) {
		err_set(e, 400, "jwk.bad_key", "kid or alg too long");
		return NULL;
	}
	if ((k = calloc(1, sizeof(*k))) == NULL) {
		err_set(e, 500, "jwk.no_memory", "out of memory");
		return NULL;
	}
	if (strcmp(kty, "RSA") == 0) {
		k->kind = JWK_RSA;
		k->pk = rsa_key(j);
		t = json_pack("{s:O, s:s, s:O}", "e", json_object_get(j, "e"), "kty", "RSA",
		    "n", json_object_get(j, "n"));
	} else if (strcmp(kty, "EC") == 0) {
		k->kind = JWK_EC_P256;
		k->pk = ec_key(j);
		t = json_pack("{s:s, s:s, s:O, s:O}", "crv", "P-256", "kty", "EC", "x",
		    json_object_get(j, "x"), "y", json_object_get(j, "y"));
	} else {
		err_set(e, 400, "jwk.unsupported", "key type %.16s is not accepted", kty);
		goto fail;
	}
	ERR_clear_error();
	if (k->pk == NULL || t == NULL) {
		err_set(e, 400, "jwk.bad_key", "the %s key is malformed, too small or off the curve",
		    kty);
		goto fail;
	}
	/* json_dumps with JSON_SORT_KEYS and compact separators is RFC 7638's form */
	k->thumb_input = json_dumps(t, JSON_COMPACT | JSON_SORT_KEYS);
	json_decref(t);
	t = NULL;
	if (k->thumb_input == NULL) {
		err_set(e, 500, "jwk.no_memory", "out of memory");
		goto fail;
	}
	snprintf(k->kid, sizeof(k->kid), "%s", kid ? kid : "");
	snprintf(k->alg, sizeof(k->alg), "%s", alg ? alg : "");
	return k;
fail:
	json_decref(t);
	jwk_free(k);
	return NULL;
}

void
jwk_free(struct jwk *k)
{
	if (k == NULL)
		return;
	EVP_PKEY_free(k->pk);
	free(k->thumb_input);
	free(k);
}

enum jwk_kind
jwk_kind(const struct jwk *k)
{
	return k->kind;
}

const char *
jwk_kid(const struct jwk *k)
{
	return k->kid;
}

const char *
jwk_alg(const struct jwk *k)
{
	return k->alg;
}

bool
jwk_allows(const struct jwk *k, const char *alg)
{
	bool fits;

	if (k == NULL || alg == NULL)
		return false;
	if (strcmp(alg, "RS256") == 0 || strcmp(alg, "PS256") == 0)
		fits = k->kind == JWK_RSA;
	else if (strcmp(alg, "ES256") == 0)
		fits = k->kind == JWK_EC_P256;
	else
		fits = false;		/* none, HS*, and anything not listed */
	return fits && (k->alg[0] == '\0' || strcmp(k->alg, alg) == 0);
}

/* R||S (32 bytes each) to the DER ECDSA-Sig-Value OpenSSL verifies; malloc'd. */
static uint8_t *
ecdsa_der(const uint8_t *sig, size_t siglen, int *derlen)
{
	ECDSA_SIG *es = ECDSA_SIG_new();
	BIGNUM *r = BN_bin2bn(sig, 32, NULL), *s = BN_bin2bn(sig + 32, 32, NULL);
	uint8_t *der = NULL;

	*derlen = 0;
	if (siglen != 64 || es == NULL || r == NULL || s == NULL ||
	    ECDSA_SIG_set0(es, r, s) != 1) {
		BN_free(r);
		BN_free(s);
		ECDSA_SIG_free(es);
		return NULL;
	}
	*derlen = i2d_ECDSA_SIG(es, &der);	/* es owns r and s now */
	ECDSA_SIG_free(es);
	if (*derlen <= 0) {
		OPENSSL_free(der);
		return NULL;
	}
	return der;
}

bool
jwk_verify(const struct jwk *k, const char *alg, const void *msg, size_t len,
    const uint8_t *sig, size_t siglen)
{
	EVP_MD_CTX *md = NULL;
	EVP_PKEY_CTX *pctx = NULL;
	uint8_t *der = NULL;
	int derlen = 0;
	bool ok = false;

	if (!jwk_allows(k, alg) || sig == NULL || msg == NULL)
		return false;
	if (strcmp(alg, "ES256") == 0) {
		if ((der = ecdsa_der(sig, siglen, &derlen)) == NULL)
			goto cleanup;
		sig = der;
		siglen = (size_t)derlen;
	}
	md = EVP_MD_CTX_new();
	if (md == NULL || EVP_DigestVerifyInit(md, &pctx, EVP_sha256(), NULL, k->pk) != 1)
		goto cleanup;
	if (strcmp(alg, "PS256") == 0 &&
	    (EVP_PKEY_CTX_set_rsa_padding(pctx, RSA_PKCS1_PSS_PADDING) != 1 ||
	    EVP_PKEY_CTX_set_rsa_pss_saltlen(pctx, RSA_PSS_SALTLEN_DIGEST) != 1 ||
	    EVP_PKEY_CTX_set_rsa_mgf1_md(pctx, EVP_sha256()) != 1))
		goto cleanup;
	ok = EVP_DigestVerify(md, sig, siglen, msg, len) == 1;
cleanup:
	EVP_MD_CTX_free(md);
	OPENSSL_free(der);
	ERR_clear_error();
	return ok;
}

char *
jwk_thumbprint(const struct jwk *k)
{
	uint8_t h[32];

	if (k == NULL || k->thumb_input == NULL)
		return NULL;
	crypto_sha256(k->thumb_input, strlen(k->thumb_input), h);
	return crypto_b64url_encode(h, sizeof(h));
}
