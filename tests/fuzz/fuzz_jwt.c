/* fuzz_jwt: RS256 JWT verification against a fixed key: arbitrary tokens never verify
 * unless signed, signed claims come back intact, and any one-character change fails.
 * Also the OIDC path (iam/oidc.c): arbitrary bearers through oidc_is_jwt and oidc_verify
 * against a key set of the RFC 7515 A.2 key never verify and always say why (401). */
#include "core/crypto.h"
#include "iam/oidc.h"
#include "tests/fuzz/fuzz.h"

/* A throwaway 1024-bit key made for this test only (speed matters more than strength). */
static const char PRIV[] =
	"-----BEGIN RSA PRIVATE KEY-----\n"
	"MIICXAIBAAKBgQC0UYJrxZCkLdwYQZHl4aMyJ6d3Wx9HX2i0smn0ntgL+xmhTqls\n"
	"WkyL8V23epS8hOTXvXTnGMkLksteyvTcyJ7prqIkTb9/7f5qDM2CkfIk7c1R5JfJ\n"
	"e3k/bLOfOyBqQjPFDja/LswQMFQZFV3P6BgNrj5FJkTQJz/wPodvsDwR3QIDAQAB\n"
	"AoGAGLt5VQjjHvG/V4Be35YESVPRD3jrIGIAvZAfIlNLNNF7IXnlmRwFlchEX28r\n"
	"yXO8465zw2LN6I144Yaa8VF/IjlGEDoHREZI28t2/7RoczU31sOVJJOZX70dTHEA\n"
	"rogOb1ujoxNF0/D6YO/LRUCKZnYkm4j+0REfc43RM6k3PA0CQQDYRHcR3JFDHv1E\n"
	"I9yLHRQK7BEMTs89XfpH2RNHbF8DSlPEsAkKeOSx1knkoPslKhC3E6Js1V8yORyu\n"
	"Txq/ajRTAkEA1XJIC2aVT/aTiO6XjDI7h3XNNQQjfOeZXyZQa/e5UYKBt7ZsIHui\n"
	"AHYt6E8ZZt2594Ge1YF+zL4DoPG/IMDbDwJAPVh+ZgSo998sfE2n25Yt/0MjOtiI\n"
	"FKI5wnOi8lmdQfOte1dr2Rqd1IwyfbXkR5B9GVFqe3CzBi4JIrCxp6ZanQJBAMEW\n"
	"buIRXMVHlFNtMx8aWgvCn250Xf4iLPaMXHgvUy/PVbVxiwMflH/CaOkclSgfMJoc\n"
	"YilWyfRBeFriFjp0/DUCQFQSDrEXjYltlWcvrYtRrrkYsDELPJADM/6lfqIyN/DP\n"
	"0atGaujlI2poWgnHihV4UaGp2GhlWIUAV9+zDLBBosY=\n"
	"-----END RSA PRIVATE KEY-----\n"
;
static const char PUB[] =
	"-----BEGIN PUBLIC KEY-----\n"
	"MIGfMA0GCSqGSIb3DQEBAQUAA4GNADCBiQKBgQC0UYJrxZCkLdwYQZHl4aMyJ6d3\n"
	"Wx9HX2i0smn0ntgL+xmhTqlsWkyL8V23epS8hOTXvXTnGMkLksteyvTcyJ7prqIk\n"
	"Tb9/7f5qDM2CkfIk7c1R5JfJe3k/bLOfOyBqQjPFDja/LswQMFQZFV3P6BgNrj5F\n"
	"JkTQJz/wPodvsDwR3QIDAQAB\n"
	"-----END PUBLIC KEY-----\n"
;

/* Whatever verifies must carry an RS256 header and object claims. */
static json_t *
verify(const char *token, json_t **hdr)
{
	json_t *claims = crypto_jwt_verify(PUB, token, hdr);

	if (claims != NULL) {
		FUZZ_CHECK(json_is_object(claims), "claims not an object");
		FUZZ_CHECK(*hdr != NULL && json_is_string(json_object_get(*hdr, "alg")) &&
		    strcmp(json_string_value(json_object_get(*hdr, "alg")), "RS256") == 0,
		    "verified a token without alg RS256");
	} else {
		FUZZ_CHECK(*hdr == NULL, "header set on failure");
	}
	return claims;
}

/* Signs the input claims (an object), verifies them back, then flips one character. */
static void
sign_and_tamper(struct fuzz_in *in)
{
	uint8_t pos_hi = fuzz_byte(in), pos_lo = fuzz_byte(in), ch = fuzz_byte(in);
	bool with_kid = fuzz_byte(in) & 1;
	size_t len;
	char *text = fuzz_rest(in, &len), *token;
	json_t *claims = json_loadb(text, len, JSON_REJECT_DUPLICATES, NULL), *got, *hdr = NULL;
	struct err e = { 0 };
	size_t pos;

	free(text);
	if (!json_is_object(claims)) {
		json_decref(claims);
		return;
	}
	token = crypto_jwt_sign(PRIV, with_kid ? "key-1" : NULL, claims, &e);
	FUZZ_CHECK(token != NULL, "sign failed: %s", e.msg);
	got = verify(token, &hdr);
	FUZZ_CHECK(got != NULL && json_equal(got, claims), "signed claims did not verify back");
	FUZZ_CHECK(!with_kid || strcmp(json_string_value(json_object_get(hdr, "kid")), "key-1")
	    == 0, "kid lost");
	json_decref(got);
	json_decref(hdr);
	hdr = NULL;
	pos = ((size_t)pos_hi << 8 | pos_lo) % strlen(token);
	if (token[pos] != (char)ch && ch != 0) {
		token[pos] = (char)ch;
		got = verify(token, &hdr);
		FUZZ_CHECK(got == NULL, "token verified after changing offset %zu to 0x%02x", pos,
		    ch);
	}
	free(token);
	json_decref(claims);
}

/* RFC 7515 A.2's public key (n, e) as the provider's only JWK. */
static const char JWKS[] = "{\"keys\":[{\"kty\":\"RSA\",\"kid\":\"k1\",\"e\":\"AQAB\",\"n\":\""
	"ofgWCuLjybRlzo0tZWJjNiuSfb4p4fAkd_wWJcyQoTbji9k0l8W26mPddxHmfHQp-Vaw-4qPCJrcS2mJPMEz"
	"P1Pt0Bm4d4QlL-yRT-SFd2lZS-pCgNMsD1W_YpRPEwOWvG6b32690r2jZ47soMZo9wGzjb_7OMg0LOL-bSf63k"
	"paSHSXndS5z5rexMdbBYUsLA9e-KXBdQOS-UTo7WTBEMa2R2CapHg665xsmtdVMTBQY4uDZlxvb3qCo5ZwKh9k"
	"G4LT6_I5IhlJH7aGhyxXFvUK-DWNmoudF8NAco9_h9iaGNj8q2ethFkMLs91kzk2PAcDTW9gb54h4FRWyuXpoQ"
	"\"}]}";

static void
oidc_path(const char *token)
{
	static struct oidc_policy pol = { .issuer = "https://idp.example",
	    .audience = "https://fleetd.example", .groups_claim = "groups", .leeway = 60,
	    .grace = 60 };
	static struct oidc_keyset *ks;
	struct err e = { 0 };
	json_t *claims;

	if (ks == NULL) {
		json_t *j = json_loads(JWKS, 0, NULL);

		ks = oidc_keyset_new();
		FUZZ_CHECK(oidc_keyset_merge(ks, j, 1700000000, 60, &e), "jwks: %s", e.msg);
		json_decref(j);
	}
	(void)oidc_is_jwt(token);
	claims = oidc_verify(&pol, ks, token, 1700000000, &e);
	FUZZ_CHECK(claims == NULL, "an unsigned input verified");
	FUZZ_CHECK(e.status == 401 && strncmp(e.code, "auth.", 5) == 0, "refused without a "
	    "401 auth code: %d %s", e.status, e.code);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fuzz_in in = { data, size };
	json_t *hdr = NULL, *claims;
	char *token;

	if (fuzz_byte(&in) % 4 == 0) {
		sign_and_tamper(&in);
		return 0;
	}
	token = fuzz_rest(&in, NULL);
	oidc_path(token);
	claims = verify(token, &hdr);
	json_decref(claims);
	json_decref(hdr);
	free(token);
	return 0;
}
