/* crypto: OpenSSL 3 EVP behind one small API — digests, HMAC, base64, AES-256-GCM,
 * RS256 signatures and compact JWS (JWT).  Nothing here implements a primitive itself. */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/x509.h>

#include "core/crypto.h"

#define GCM_IV_LEN	12
#define GCM_TAG_LEN	16

/* The void digest helpers cannot report failure; OpenSSL only fails them on
 * allocation failure, which we treat like arena_alloc does. */
static void
die(const char *what)
{
	fprintf(stderr, "crypto: %s failed\n", what);
	abort();
}

void
crypto_sha256(const void *data, size_t len, uint8_t out[32])
{
	unsigned int n = 0;

	if (EVP_Digest(len ? data : "", len, out, &n, EVP_sha256(), NULL) != 1 || n != 32)
		die("sha256");
}

void
crypto_sha256_hex(const void *data, size_t len, char out[65])
{
	uint8_t md[32];

	crypto_sha256(data, len, md);
	crypto_hex(md, sizeof(md), out);
}

void
crypto_hmac_sha256(const void *key, size_t klen, const void *data, size_t dlen,
    uint8_t out[32])
{
	size_t n = 0;

	if (EVP_Q_mac(NULL, "HMAC", NULL, "SHA256", NULL, klen ? key : "", klen,
	    dlen ? data : "", dlen, out, 32, &n) == NULL || n != 32)
		die("hmac-sha256");
}

void
crypto_hex(const uint8_t *in, size_t len, char *out)
{
	static const char digits[] = "0123456789abcdef";

	for (size_t i = 0; i < len; i++) {
		out[2 * i] = digits[in[i] >> 4];
		out[2 * i + 1] = digits[in[i] & 0x0f];
	}
	out[2 * len] = '\0';
}

bool
crypto_random(void *buf, size_t len)
{
	unsigned char *p = buf;

	while (len > 0) {
		int n = len > INT_MAX ? INT_MAX : (int)len;

		if (RAND_bytes(p, n) != 1)
			return false;
		p += n;
		len -= (size_t)n;
	}
	return true;
}

bool
crypto_equal(const void *a, const void *b, size_t len)
{
	return CRYPTO_memcmp(a, b, len) == 0;
}

/* ---- base64 ---- */

char *
crypto_b64_encode(const void *in, size_t len)
{
	size_t outlen;
	char *out;

	if (len > (size_t)INT_MAX / 4 * 3)
		return NULL;
	outlen = 4 * ((len + 2) / 3);
	out = malloc(outlen + 1);
	if (out == NULL)
		return NULL;
	if (EVP_EncodeBlock((unsigned char *)out, in, (int)len) != (int)outlen) {
		free(out);
		return NULL;
	}
	out[outlen] = '\0';
	return out;
}

char *
crypto_b64url_encode(const void *in, size_t len)
{
	char *s = crypto_b64_encode(in, len);
	size_t n;

	if (s == NULL)
		return NULL;
	n = strlen(s);
	while (n > 0 && s[n - 1] == '=')
		s[--n] = '\0';
	for (size_t i = 0; i < n; i++) {
		if (s[i] == '+')
			s[i] = '-';
		else if (s[i] == '/')
			s[i] = '_';
	}
	return s;
}

/* Copies in into a standard-alphabet, padded buffer; NULL when in is not base64. */
static char *
b64_normalize(const char *in, size_t *padded, size_t *npad)
{
	size_t len = strlen(in), data = len, pad, i;
	char *s;

	while (data > 0 && in[data - 1] == '=')
		data--;
	if (len - data > 2 || data % 4 == 1)
		return NULL;
	if (len != data && len % 4 != 0)	/* padding present but wrong */
		return NULL;
	pad = (4 - data % 4) % 4;
	s = malloc(data + pad + 1);
	if (s == NULL)
		return NULL;
	for (i = 0; i < data; i++) {
		char c = in[i];

		if (c == '-')
			c = '+';
		else if (c == '_')
			c = '/';
		else if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
		    (c >= '0' && c <= '9') || c == '+' || c == '/')) {
			free(s);
			return NULL;
		}
		s[i] = c;
	}
	memset(s + data, '=', pad);
	s[data + pad] = '\0';
	*padded = data + pad;
	*npad = pad;
	return s;
}

uint8_t *
crypto_b64_decode(const char *in, size_t *outlen)
{
	size_t padded = 0, npad = 0;
	uint8_t *out = NULL;
	char *s = NULL;
	int n;

	if (in == NULL || strlen(in) > (size_t)INT_MAX - 4)
		return NULL;
	s = b64_normalize(in, &padded, &npad);
	if (s == NULL)
		return NULL;
	out = malloc(padded / 4 * 3 + 1);
	if (out == NULL)
		goto fail;
	n = padded ? EVP_DecodeBlock(out, (unsigned char *)s, (int)padded) : 0;
	if (n < 0 || (size_t)n < npad)
		goto fail;
	*outlen = (size_t)n - npad;
	free(s);
	return out;
fail:
	free(s);
	free(out);
	return NULL;
}

/* ---- AES-256-GCM ---- */

/* Creates a context keyed for GCM with an IV of any length (>= 1 byte). */
static EVP_CIPHER_CTX *
gcm_ctx(bool enc, const uint8_t key[32], const uint8_t *iv, size_t ivlen)
{
	EVP_CIPHER_CTX *ctx;

	if (ivlen == 0 || ivlen > INT_MAX)
		return NULL;
	ctx = EVP_CIPHER_CTX_new();
	if (ctx == NULL)
		return NULL;
	if (EVP_CipherInit_ex(ctx, EVP_aes_256_gcm(), NULL, NULL, NULL, enc) != 1 ||
	    EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_AEAD_SET_IVLEN, (int)ivlen, NULL) != 1 ||
	    EVP_CipherInit_ex(ctx, NULL, NULL, key, iv, enc) != 1) {
		EVP_CIPHER_CTX_free(ctx);
		return NULL;
	}
	return ctx;
}

static bool
gcm_update(EVP_CIPHER_CTX *ctx, uint8_t *out, const uint8_t *in, size_t len)
{
	int n = 0;

	if (len == 0)
		return true;
	if (len > INT_MAX)
		return false;
	return EVP_CipherUpdate(ctx, out, &n, in, (int)len) == 1 &&
	    (out == NULL || (size_t)n == len);
}

/* One AES-256-GCM pass: encrypt (tag out) or decrypt (tag in, checked; on a mismatch the
 * output is wiped: unauthenticated text is never handed back). */
static bool
gcm(bool enc, const uint8_t key[32], const uint8_t *iv, size_t ivlen, const uint8_t *aad,
    size_t aadlen, const uint8_t *in, size_t len, uint8_t *out, uint8_t tag[16])
{
	EVP_CIPHER_CTX *ctx = gcm_ctx(enc, key, iv, ivlen);
	uint8_t dummy[16];
	bool ok;
	int n = 0;

	ok = ctx != NULL && gcm_update(ctx, NULL, aad, aadlen) && gcm_update(ctx, out, in, len);
	if (enc)
		ok = ok && EVP_EncryptFinal_ex(ctx, dummy, &n) == 1 && n == 0 &&
		    EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_AEAD_GET_TAG, GCM_TAG_LEN, tag) == 1;
	else
		ok = ok && EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_AEAD_SET_TAG, GCM_TAG_LEN, tag) == 1 &&
		    EVP_DecryptFinal_ex(ctx, dummy, &n) == 1;	/* tag mismatch */
	if (!enc && !ok && out != NULL && len > 0)
		OPENSSL_cleanse(out, len);
	EVP_CIPHER_CTX_free(ctx);
	ERR_clear_error();
	return ok;
}

bool
crypto_aes_gcm_encrypt(const uint8_t key[32], const uint8_t *iv, size_t ivlen,
    const uint8_t *aad, size_t aadlen, const uint8_t *pt, size_t ptlen,
    uint8_t *ct, uint8_t tag[16])
{
	return gcm(true, key, iv, ivlen, aad, aadlen, pt, ptlen, ct, tag);
}

bool
crypto_aes_gcm_decrypt(const uint8_t key[32], const uint8_t *iv, size_t ivlen,
    const uint8_t *aad, size_t aadlen, const uint8_t *ct, size_t ctlen,
    const uint8_t tag[16], uint8_t *pt)
{
	return gcm(false, key, iv, ivlen, aad, aadlen, ct, ctlen, pt, (uint8_t *)tag);
}

char *
crypto_seal(const uint8_t key[32], const char *plaintext, const char *aad, struct err *e)
{
	size_t ptlen, aadlen = aad ? strlen(aad) : 0;
	uint8_t *buf = NULL;
	char *out = NULL;

	if (plaintext == NULL) {
		err_set(e, 500, "crypto.seal_failed", "nothing to seal");
		return NULL;
	}
	ptlen = strlen(plaintext);
	buf = malloc(GCM_IV_LEN + ptlen + GCM_TAG_LEN);
	if (buf == NULL) {
		err_set(e, 500, "crypto.seal_failed", "out of memory");
		return NULL;
	}
	if (!crypto_random(buf, GCM_IV_LEN) ||
	    !crypto_aes_gcm_encrypt(key, buf, GCM_IV_LEN, (const uint8_t *)aad, aadlen,
	    (const uint8_t *)plaintext, ptlen, buf + GCM_IV_LEN,
	    buf + GCM_IV_LEN + ptlen)) {
		err_set(e, 500, "crypto.seal_failed", "encryption failed");
		goto cleanup;
	}
	out = crypto_b64_encode(buf, GCM_IV_LEN + ptlen + GCM_TAG_LEN);
	if (out == NULL)
		err_set(e, 500, "crypto.seal_failed", "encoding failed");
cleanup:
	OPENSSL_cleanse(buf, GCM_IV_LEN + ptlen + GCM_TAG_LEN);
	free(buf);
	return out;
}

char *
crypto_open(const uint8_t key[32], const char *sealed, const char *aad, struct err *e)
{
	size_t len = 0, ctlen, aadlen = aad ? strlen(aad) : 0;
	uint8_t *raw = NULL;
	char *pt = NULL;

	raw = sealed ? crypto_b64_decode(sealed, &len) : NULL;
	if (raw == NULL || len < GCM_IV_LEN + GCM_TAG_LEN) {
		err_set(e, 500, "crypto.bad_sealed", "sealed value is malformed");
		goto cleanup;
	}
	ctlen = len - GCM_IV_LEN - GCM_TAG_LEN;
	pt = malloc(ctlen + 1);
	if (pt == NULL) {
		err_set(e, 500, "crypto.open_failed", "out of memory");
		goto cleanup;
	}
	if (!crypto_aes_gcm_decrypt(key, raw, GCM_IV_LEN, (const uint8_t *)aad, aadlen,
	    raw + GCM_IV_LEN, ctlen, raw + GCM_IV_LEN + ctlen, (uint8_t *)pt)) {
		free(pt);
		pt = NULL;
		err_set(e, 500, "crypto.open_failed",
		    "sealed value does not authenticate");
		goto cleanup;
	}
	pt[ctlen] = '\0';
cleanup:
	free(raw);
	return pt;
}

/* ---- RSA PKCS#1 v1.5 / SHA-256 ---- */

/*
 * An RSA key from PEM text: the private key, or for the public side
 * SubjectPublicKeyInfo first, then an X.509 certificate.
 */
static EVP_PKEY *
load_rsa(const char *pem, bool private_key)
{
	EVP_PKEY *pk = NULL;
	X509 *cert = NULL;
	BIO *bio;

	if (pem == NULL)
		return NULL;
	bio = BIO_new_mem_buf(pem, -1);
	if (bio == NULL)
		return NULL;
	if (private_key)
		pk = PEM_read_bio_PrivateKey(bio, NULL, NULL, NULL);
	else
		pk = PEM_read_bio_PUBKEY(bio, NULL, NULL, NULL);
	if (pk == NULL && !private_key && BIO_reset(bio) == 1) {
		cert = PEM_read_bio_X509(bio, NULL, NULL, NULL);
		if (cert != NULL)
			pk = X509_get_pubkey(cert);
	}
	X509_free(cert);
	BIO_free(bio);
	if (pk != NULL && !EVP_PKEY_is_a(pk, "RSA")) {
		EVP_PKEY_free(pk);
		pk = NULL;
	}
	return pk;
}

bool
crypto_rs256_sign(const char *pem_private, const void *msg, size_t len,
    uint8_t **sig, size_t *siglen, struct err *e)
{
	EVP_PKEY *pk = load_rsa(pem_private, true);
	EVP_MD_CTX *md = NULL;
	uint8_t *buf = NULL;
	size_t n = 0;
	bool ok = false;

	if (pk == NULL) {
		err_set(e, 500, "crypto.bad_key", "private key is not an rsa pem");
		goto cleanup;
	}
	md = EVP_MD_CTX_new();
	if (md == NULL || EVP_DigestSignInit(md, NULL, EVP_sha256(), NULL, pk) != 1 ||
	    EVP_DigestSign(md, NULL, &n, msg, len) != 1 || (buf = malloc(n)) == NULL ||
	    EVP_DigestSign(md, buf, &n, msg, len) != 1) {
		err_set(e, 500, "crypto.sign_failed", "rs256 signing failed");
		goto cleanup;
	}
	*sig = buf;
	*siglen = n;
	buf = NULL;
	ok = true;
cleanup:
	free(buf);
	EVP_MD_CTX_free(md);
	EVP_PKEY_free(pk);
	ERR_clear_error();
	return ok;
}

bool
crypto_rs256_verify(const char *pem_public, const void *msg, size_t len,
    const uint8_t *sig, size_t siglen)
{
	EVP_PKEY *pk = load_rsa(pem_public, false);
	EVP_MD_CTX *md = NULL;
	bool ok = false;

	if (pk == NULL || sig == NULL)
		goto cleanup;
	md = EVP_MD_CTX_new();
	if (md == NULL || EVP_DigestVerifyInit(md, NULL, EVP_sha256(), NULL, pk) != 1)
		goto cleanup;
	ok = EVP_DigestVerify(md, sig, siglen, msg, len) == 1;
cleanup:
	EVP_MD_CTX_free(md);
	EVP_PKEY_free(pk);
	ERR_clear_error();
	return ok;
}

/* ---- JWT (compact JWS, RS256) ---- */

static char *
b64url_json(json_t *v)
{
	char *text = json_dumps(v, JSON_COMPACT);
	char *out;

	if (text == NULL)
		return NULL;
	out = crypto_b64url_encode(text, strlen(text));
	free(text);
	return out;
}

char *
crypto_jwt_sign(const char *pem_private, const char *kid, json_t *claims, struct err *e)
{
	char *h64 = NULL, *c64 = NULL, *s64 = NULL, *input = NULL, *token = NULL;
	json_t *hdr = NULL;
	uint8_t *sig = NULL;
	size_t siglen = 0, n;

	if (!json_is_object(claims)) {
		err_set(e, 500, "crypto.bad_claims", "jwt claims must be an object");
		return NULL;
	}
	hdr = json_pack("{s:s, s:s}", "alg", "RS256", "typ", "JWT");
	if (hdr == NULL || (kid != NULL && json_object_set_new(hdr, "kid",
	    json_string(kid)) != 0)) {
		err_set(e, 500, "crypto.bad_claims", "jwt header could not be built");
		goto cleanup;
	}
	h64 = b64url_json(hdr);
	c64 = b64url_json(claims);
	if (h64 == NULL || c64 == NULL) {
		err_set(e, 500, "crypto.bad_claims", "jwt could not be encoded");
		goto cleanup;
	}
	n = strlen(h64) + 1 + strlen(c64);
	input = malloc(n + 1);
	if (input == NULL) {
		err_set(e, 500, "crypto.sign_failed", "out of memory");
		goto cleanup;
	}
	snprintf(input, n + 1, "%s.%s", h64, c64);
	if (!crypto_rs256_sign(pem_private, input, n, &sig, &siglen, e))
		goto cleanup;
	s64 = crypto_b64url_encode(sig, siglen);
	token = s64 ? malloc(n + 1 + strlen(s64) + 1) : NULL;
	if (token == NULL) {
		err_set(e, 500, "crypto.sign_failed", "out of memory");
		goto cleanup;
	}
	sprintf(token, "%s.%s", input, s64);
cleanup:
	json_decref(hdr);
	free(h64);
	free(c64);
	free(s64);
	free(input);
	free(sig);
	return token;
}

/* Decodes one base64url segment [s, s+len) and parses it as a JSON object. */
static json_t *
segment_json(const char *s, size_t len)
{
	char *copy = strndup(s, len);
	uint8_t *raw = NULL;
	json_t *v = NULL;
	size_t n = 0;

	if (copy == NULL)
		return NULL;
	raw = crypto_b64_decode(copy, &n);
	if (raw != NULL)
		v = json_loadb((const char *)raw, n, JSON_REJECT_DUPLICATES, NULL);
	if (v != NULL && !json_is_object(v)) {
		json_decref(v);
		v = NULL;
	}
	free(raw);
	free(copy);
	return v;
}

/* True when text is the one canonical base64url spelling of raw (no stray low bits). */
static bool
canonical_b64url(const char *text, const uint8_t *raw, size_t len)
{
	char *again = crypto_b64url_encode(raw, len);
	bool ok = again != NULL && strcmp(again, text) == 0;

	free(again);
	return ok;
}

json_t *
crypto_jwt_verify(const char *pem_public, const char *token, json_t **header)
{
	const char *d1, *d2;
	json_t *hdr = NULL, *claims = NULL;
	uint8_t *sig = NULL;
	size_t siglen = 0;
	const char *alg;

	if (header != NULL)
		*header = NULL;
	if (token == NULL || strspn(token, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnop"
	    "qrstuvwxyz0123456789-_.") != strlen(token))
		return NULL;
	d1 = strchr(token, '.');
	d2 = d1 ? strchr(d1 + 1, '.') : NULL;
	if (d2 == NULL || strchr(d2 + 1, '.') != NULL)
		return NULL;
	hdr = segment_json(token, (size_t)(d1 - token));
	alg = json_string_value(json_object_get(hdr, "alg"));
	if (alg == NULL || strcmp(alg, "RS256") != 0)	/* never let the token pick */
		goto fail;
	sig = crypto_b64_decode(d2 + 1, &siglen);
	if (sig == NULL || !canonical_b64url(d2 + 1, sig, siglen) ||
	    !crypto_rs256_verify(pem_public, token, (size_t)(d2 - token),
	    sig, siglen))
		goto fail;
	claims = segment_json(d1 + 1, (size_t)(d2 - d1 - 1));
	if (claims == NULL)
		goto fail;
	free(sig);
	if (header != NULL)
		*header = hdr;
	else
		json_decref(hdr);
	return claims;
fail:
	free(sig);
	json_decref(hdr);
	return NULL;
}
