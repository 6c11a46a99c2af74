/* crypto: the only door to OpenSSL — digests, HMAC, AES-256-GCM, RSA (RS256), base64, randomness. */
#ifndef FLEET_CORE_CRYPTO_H
#define FLEET_CORE_CRYPTO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "core/err.h"

void	crypto_sha256(const void *data, size_t len, uint8_t out[32]);
void	crypto_sha256_hex(const void *data, size_t len, char out[65]);
void	crypto_hmac_sha256(const void *key, size_t klen, const void *data, size_t dlen,
	    uint8_t out[32]);
void	crypto_hex(const uint8_t *in, size_t len, char *out);	/* out: 2*len+1 */
bool	crypto_random(void *buf, size_t len);			/* RAND_bytes */
/* Constant-time comparison of two buffers of equal length. */
bool	crypto_equal(const void *a, const void *b, size_t len);

/* Base64 (standard, padded) and base64url (no padding).  Results are
 * malloc'd NUL-terminated strings / buffers owned by the caller; NULL on bad input. */
char	*crypto_b64_encode(const void *in, size_t len);
char	*crypto_b64url_encode(const void *in, size_t len);
uint8_t	*crypto_b64_decode(const char *in, size_t *outlen);	/* accepts either alphabet */

/* AES-256-GCM.  Sealed form for storage: base64(iv[12] || ciphertext || tag[16]).
 * seal: key is 32 bytes; returns malloc'd string or NULL (fills e). */
bool	crypto_aes_gcm_encrypt(const uint8_t key[32], const uint8_t *iv, size_t ivlen,
	    const uint8_t *aad, size_t aadlen, const uint8_t *pt, size_t ptlen,
	    uint8_t *ct, uint8_t tag[16]);
bool	crypto_aes_gcm_decrypt(const uint8_t key[32], const uint8_t *iv, size_t ivlen,
	    const uint8_t *aad, size_t aadlen, const uint8_t *ct, size_t ctlen,
	    const uint8_t tag[16], uint8_t *pt);		/* false when the tag fails */
char	*crypto_seal(const uint8_t key[32], const char *plaintext, const char *aad,
	    struct err *e);
char	*crypto_open(const uint8_t key[32], const char *sealed, const char *aad,
	    struct err *e);

/* RSA PKCS#1 v1.5 with SHA-256.  Keys are PEM text (private: PKCS#1 or PKCS#8;
 * public: SubjectPublicKeyInfo or an X.509 certificate).  sig is malloc'd. */
bool	crypto_rs256_sign(const char *pem_private, const void *msg, size_t len,
	    uint8_t **sig, size_t *siglen, struct err *e);
bool	crypto_rs256_verify(const char *pem_public, const void *msg, size_t len,
	    const uint8_t *sig, size_t siglen);

/* JWT (JWS compact, RS256).  jwt_sign: header gets {"alg":"RS256","typ":"JWT"}
 * plus kid when not NULL; returns malloc'd token.  jwt_verify: checks the
 * signature only and returns the claims (new reference) or NULL. */
char	*crypto_jwt_sign(const char *pem_private, const char *kid, json_t *claims,
	    struct err *e);
json_t	*crypto_jwt_verify(const char *pem_public, const char *token, json_t **header);

#endif
