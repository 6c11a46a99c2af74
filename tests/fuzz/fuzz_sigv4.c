/* fuzz_sigv4: SigV4 canonicalization of arbitrary requests (grammar of each canonical
 * part, idempotent query), sign-then-parse round trips, and the Authorization parser. */
#include <ctype.h>

#include "core/sigv4.h"
#include "tests/fuzz/fuzz.h"

#define MAX_HEADERS 16

static const struct sigv4_key KEY = {
	.access_key = "AKIDEXAMPLE", .secret_key = "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY",
	.region = "us-east-1", .service = "iam", .amz_date = "20150830T123600Z",
};

static bool
unreserved(unsigned char c)
{
	return isalnum(c) || c == '-' || c == '.' || c == '_' || c == '~';
}

/* [s, s+n) holds only unreserved bytes, the extra set, and %XX with uppercase hex. */
static bool
encoded(const char *s, size_t n, const char *extra)
{
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];

		if (c == '%') {
			if (i + 2 >= n)
				return false;
			for (int k = 1; k <= 2; k++)
				if (!isdigit((unsigned char)s[i + k]) &&
				    !(s[i + k] >= 'A' && s[i + k] <= 'F'))
					return false;
			i += 2;
		} else if (!unreserved(c) && strchr(extra, c) == NULL) {
			return false;
		}
	}
	return true;
}

static void
check_uri(const char *u, size_t n)
{
	FUZZ_CHECK(n >= 1 && u[0] == '/', "uri must start with /");
	FUZZ_CHECK(encoded(u, n, "/"), "uri not encoded: %.*s", (int)n, u);
	for (size_t i = 1; i < n;) {
		size_t l = 0;

		while (i + l < n && u[i + l] != '/')
			l++;
		FUZZ_CHECK(l > 0 || i + l == n, "empty segment in %.*s", (int)n, u);
		FUZZ_CHECK(!(l == 1 && u[i] == '.') && !(l == 2 && u[i] == '.' && u[i + 1] == '.'),
		    "dot segment in %.*s", (int)n, u);
		i += l + 1;
	}
}

static void
check_query(const char *q, size_t n, const struct sigv4_request *rq, const char *sh)
{
	struct sigv4_request again = *rq;
	char *copy = strndup(q, n), *creq, *nl1, *nl2;

	FUZZ_CHECK(encoded(q, n, "=&"), "query not encoded: %.*s", (int)n, q);
	/* re-canonicalizing the canonical query gives it back */
	again.query = copy;
	creq = sigv4_canonical_request(&again, sh);
	FUZZ_CHECK(creq != NULL, "second canonical request");
	nl1 = strchr(strchr(creq, '\n') + 1, '\n') + 1;
	nl2 = strchr(nl1, '\n');
	FUZZ_CHECK((size_t)(nl2 - nl1) == n && memcmp(nl1, q, n) == 0,
	    "query not idempotent: %.*s -> %.*s", (int)n, q, (int)(nl2 - nl1), nl1);
	free(creq);
	free(copy);
}

/* Signs, then the parser must read back exactly what was signed. */
static void
check_round_trip(const struct sigv4_request *rq, const char *sh)
{
	char *auth = sigv4_authorization(&KEY, rq, sh), *creq, *sts, *line;
	struct sigv4_auth a;
	struct err e = { 0 };
	char sig[65];
	size_t l;

	FUZZ_CHECK(auth != NULL, "no authorization");
	creq = sigv4_canonical_request(rq, sh);
	sts = sigv4_string_to_sign(&KEY, creq);
	FUZZ_CHECK(sts != NULL, "no string to sign");
	sigv4_signature(&KEY, sts, sig);
	/* the signed-headers line is the one before the payload hash */
	line = strrchr(creq, '\n');
	*line = '\0';
	line = strrchr(creq, '\n') + 1;
	l = strlen(line);
	if (l > 0 && strspn(line, "abcdefghijklmnopqrstuvwxyz0123456789-_.;") == l) {
		FUZZ_CHECK(sigv4_parse_authorization(auth, &a, &e), "own header refused: %s (%s)",
		    e.msg, auth);
		FUZZ_CHECK(strcmp(a.access_key, KEY.access_key) == 0 &&
		    strcmp(a.date, "20150830") == 0 && strcmp(a.region, KEY.region) == 0 &&
		    strcmp(a.service, KEY.service) == 0 && strcmp(a.signed_headers, line) == 0 &&
		    strcmp(a.signature, sig) == 0, "round trip mismatch: %s", auth);
		sigv4_auth_cleanup(&a);
	}
	free(sts);
	free(creq);
	free(auth);
}

static void
fuzz_canonical(struct fuzz_in *in)
{
	struct sigv4_header h[MAX_HEADERS];
	char *method = fuzz_field(in, '\n'), *path = fuzz_field(in, '\n');
	char *query = fuzz_field(in, '\n'), *sh, *payload, *creq, *p, *q;
	struct sigv4_request rq = { 0 };
	size_t nh = 0, plen;

	while (in->n > 0 && nh < MAX_HEADERS) {
		char *line = fuzz_field(in, '\n'), *colon;

		if (line[0] == '\0') {
			free(line);
			break;
		}
		colon = strchr(line, ':');
		if (colon != NULL)
			*colon = '\0';
		h[nh].name = line;
		h[nh].value = colon ? colon + 1 : "";
		nh++;
	}
	sh = fuzz_field(in, '\n');
	payload = fuzz_rest(in, &plen);
	rq = (struct sigv4_request){ .method = method, .path = path,
	    .query = query[0] == '-' ? NULL : query, .headers = h, .nheaders = nh,
	    .payload = payload, .payload_len = plen };
	creq = sigv4_canonical_request(&rq, strcmp(sh, "*") == 0 ? NULL : sh);
	FUZZ_CHECK(creq != NULL, "canonical request refused");
	for (p = method; *p != '\0'; p++)
		FUZZ_CHECK(creq[p - method] == (char)toupper((unsigned char)*p), "method line");
	p = creq + strlen(method);
	FUZZ_CHECK(*p == '\n', "method line end");
	q = strchr(++p, '\n');
	FUZZ_CHECK(q != NULL, "uri line");
	check_uri(p, (size_t)(q - p));
	p = q + 1;
	q = strchr(p, '\n');
	FUZZ_CHECK(q != NULL, "query line");
	check_query(p, (size_t)(q - p), &rq, strcmp(sh, "*") == 0 ? NULL : sh);
	p = strrchr(creq, '\n') + 1;
	FUZZ_CHECK(strlen(p) == 64 && strspn(p, "0123456789abcdef") == 64, "payload hash %s", p);
	check_round_trip(&rq, strcmp(sh, "*") == 0 ? NULL : sh);
	free(creq);
	for (size_t i = 0; i < nh; i++)
		free((char *)h[i].name);
	free(method);
	free(path);
	free(query);
	free(sh);
	free(payload);
}

static void
fuzz_parse(struct fuzz_in *in)
{
	char *value = fuzz_rest(in, NULL), *again = NULL;
	struct sigv4_auth a, b;
	struct err e = { 0 };

	if (!sigv4_parse_authorization(value, &a, &e)) {
		FUZZ_CHECK(e.status == 400 && a.access_key == NULL && a.signature == NULL,
		    "refusal must be a 400 with nothing kept");
		free(value);
		return;
	}
	FUZZ_CHECK(a.access_key[0] && strlen(a.date) == 8 && strspn(a.date, "0123456789") == 8 &&
	    a.region[0] && a.service[0] && strchr(a.service, '/') == NULL, "credential parts");
	FUZZ_CHECK(strlen(a.signature) == 64 && strspn(a.signature, "0123456789abcdef") == 64,
	    "signature %s", a.signature);
	FUZZ_CHECK(a.signed_headers[0] != '\0', "signed headers");
	/* the parsed fields, written back in the canonical layout, parse to themselves */
	if (asprintf(&again, "AWS4-HMAC-SHA256 Credential=%s/%s/%s/%s/aws4_request, "
	    "SignedHeaders=%s, Signature=%s", a.access_key, a.date, a.region, a.service,
	    a.signed_headers, a.signature) < 0)
		abort();
	FUZZ_CHECK(sigv4_parse_authorization(again, &b, &e), "rewritten header refused: %s", again);
	FUZZ_CHECK(strcmp(a.access_key, b.access_key) == 0 && strcmp(a.region, b.region) == 0 &&
	    strcmp(a.service, b.service) == 0 && strcmp(a.signed_headers, b.signed_headers) == 0,
	    "rewritten header differs: %s", again);
	sigv4_auth_cleanup(&b);
	sigv4_auth_cleanup(&a);
	free(again);
	free(value);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fuzz_in in = { data, size };

	if (fuzz_byte(&in) & 1)
		fuzz_parse(&in);
	else
		fuzz_canonical(&in);
	return 0;
}
