/* jwk: public keys from JSON Web Keys (RFC 7517: RSA, EC P-256) and the JWS signature
 * algorithms an identity provider signs access tokens with (RS256, PS256, ES256). */
#ifndef FLEET_CORE_JWK_H
#define FLEET_CORE_JWK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "core/err.h"

enum jwk_kind { JWK_RSA = 1, JWK_EC_P256 = 2 };

struct jwk;	/* opaque: one public key */

/* A public key from one member of a JWKS.  Refuses private members (d, p, q...), symmetric
 * keys ("oct"), curves other than P-256, RSA moduli under 2048 bits, and "use" other than
 * "sig".  On failure fills e (400 jwk.*) and returns NULL. */
struct jwk	*jwk_from_json(json_t *jwk, struct err *e);
void		 jwk_free(struct jwk *k);		/* accepts NULL */
enum jwk_kind	 jwk_kind(const struct jwk *k);
const char	*jwk_kid(const struct jwk *k);		/* "" when the JWK had none */
const char	*jwk_alg(const struct jwk *k);		/* the JWK's "alg", "" when absent */
/* Whether alg may be verified with k at all: RS256/PS256 need RSA, ES256 needs P-256, and
 * a key that names its "alg" allows only that one.  Every other alg (none, HS*) is false. */
bool		 jwk_allows(const struct jwk *k, const char *alg);
/* Checks a JWS signature over msg (the "header.payload" text).  ES256 takes the 64-byte
 * R||S form of RFC 7518 section 3.4.  False on any mismatch or bad input. */
bool		 jwk_verify(const struct jwk *k, const char *alg, const void *msg, size_t len,
		    const uint8_t *sig, size_t siglen);
/* A JWK's SHA-256 thumbprint (RFC 7638), base64url; malloc'd, NULL on failure. */
char		*jwk_thumbprint(const struct jwk *k);

#endif
