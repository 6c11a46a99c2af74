/* test_sigv4: every case of AWS's aws-sig-v4-test-suite in shared/testvectors/sigv4
 * (canonical request, string to sign, Authorization), plus header parsing. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <ftw.h>

#include "core/sigv4.h"
#include "core/textbuf.h"

#define SUITE FLEETD_SOURCE_DIR "/../shared/testvectors/sigv4/"

static const struct sigv4_key suite_key = {
	.access_key = "AKIDEXAMPLE",
	.secret_key = "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY",
	.region = "us-east-1",
	.service = "service",
	.amz_date = "20150830T123600Z",
};

struct suite_case {
	const char	*dir;		/* relative to SUITE, ends in the case name */
	const char	*extra_name;	/* header the suite adds before signing */
	const char	*extra_value;
};

static const struct suite_case cases[] = {
	{ "get-header-value-multiline", NULL, NULL },
	{ "get-header-value-trim", NULL, NULL },
	{ "get-unreserved", NULL, NULL },
	{ "get-vanilla", NULL, NULL },
	{ "get-vanilla-query", NULL, NULL },
	{ "get-vanilla-query-order-encoded", NULL, NULL },
	{ "get-vanilla-query-order-key", NULL, NULL },
	{ "get-vanilla-query-order-key-case", NULL, NULL },
	{ "get-vanilla-utf8-query", NULL, NULL },
	{ "get-vanilla-with-session-token", "X-Amz-Security-Token",
	  "6e86291e8372ff2a2260956d9b8aae1d763fbf315fa00fa31553b73ebf194267" },
	{ "normalize-path/get-relative", NULL, NULL },
	{ "normalize-path/get-slash", NULL, NULL },
	{ "normalize-path/get-slash-dot-slash", NULL, NULL },
	{ "normalize-path/get-slash-pointless-dot", NULL, NULL },
	{ "normalize-path/get-space", NULL, NULL },
	{ "normalize-path/get-special-character", NULL, NULL },
	{ "post-header-key-case", NULL, NULL },
	{ "post-header-value-case", NULL, NULL },
	{ "post-sts-token/post-sts-header-before", NULL, NULL },
	{ "post-vanilla", NULL, NULL },
	{ "post-vanilla-empty-query-value", NULL, NULL },
	{ "post-vanilla-query", NULL, NULL },
	{ "post-x-www-form-urlencoded", NULL, NULL },
};

/* Reads SUITE/<dir>/<name>.<ext> exactly (no trailing newline is added). */
static char *
slurp_case(const char *dir, const char *ext)
{
	const char *name = strrchr(dir, '/') ? strrchr(dir, '/') + 1 : dir;
	char path[512], *buf;

	snprintf(path, sizeof(path), SUITE "%s/%s.%s", dir, name, ext);
	if ((buf = textbuf_read_file(path, NULL)) == NULL)
		fail_msg("cannot read %s", path);
	return buf;
}

/* A raw request parsed in place: the strings point into text. */
struct parsed {
	char			*text;
	char			*method;
	char			*path;
	char			*query;
	struct sigv4_header	 headers[16];
	size_t			 nheaders;
	char			*body;
};

static char *
next_line(char **p)
{
	char *line = *p, *nl;

	if (line == NULL)
		return NULL;
	nl = strchr(line, '\n');
	if (nl != NULL) {
		*nl = '\0';
		*p = nl + 1;
	} else {
		*p = NULL;
	}
	if (nl != NULL && nl > line && nl[-1] == '\r')
		nl[-1] = '\0';
	return line;
}

/* Request line "METHOD target HTTP/1.1" (target may hold spaces), "Name:value"
 * headers, folded lines appended to the previous value with their newline kept
 * (the signer must unfold them), then an optional body after a blank line. */
static void
parse_req(char *text, struct parsed *r)
{
	char *p = text, *line, *sp, *proto, *q;

	memset(r, 0, sizeof(*r));
	r->text = text;
	line = next_line(&p);
	sp = strchr(line, ' ');
	proto = strrchr(line, ' ');
	assert_non_null(sp);
	assert_true(proto > sp);
	*sp = '\0';
	*proto = '\0';
	r->method = line;
	r->path = sp + 1;
	q = strchr(r->path, '?');
	if (q != NULL) {
		*q = '\0';
		r->query = q + 1;
	}
	while ((line = next_line(&p)) != NULL && *line != '\0') {
		char *colon;

		if ((*line == ' ' || *line == '\t') && r->nheaders > 0) {
			/* continuation: the previous value runs on across the newline */
			char *prev = (char *)r->headers[r->nheaders - 1].value;

			assert_ptr_equal(prev + strlen(prev) + 1, line);
			prev[strlen(prev)] = '\n';
			continue;
		}
		colon = strchr(line, ':');
		assert_non_null(colon);
		assert_true(r->nheaders < 15);
		*colon = '\0';
		r->headers[r->nheaders].name = line;
		r->headers[r->nheaders].value = colon + 1;
		r->nheaders++;
	}
	r->body = p;
}

static void
build_request(const struct suite_case *c, struct parsed *r, struct sigv4_request *rq)
{
	parse_req(slurp_case(c->dir, "req"), r);
	if (c->extra_name != NULL) {
		r->headers[r->nheaders].name = c->extra_name;
		r->headers[r->nheaders].value = c->extra_value;
		r->nheaders++;
	}
	*rq = (struct sigv4_request){
		.method = r->method, .path = r->path, .query = r->query,
		.headers = r->headers, .nheaders = r->nheaders,
		.payload = r->body, .payload_len = r->body ? strlen(r->body) : 0,
	};
}

static void
test_suite_case(void **state)
{
	const struct suite_case *c = *state;
	char *creq_exp = slurp_case(c->dir, "creq");
	char *sts_exp = slurp_case(c->dir, "sts");
	char *authz_exp = slurp_case(c->dir, "authz");
	char *creq, *sts, *authz, *authz2;
	struct sigv4_auth a;
	struct sigv4_request rq;
	struct parsed r;
	struct err e = { 0 };
	char sig[65];

	build_request(c, &r, &rq);
	creq = sigv4_canonical_request(&rq, NULL);
	assert_non_null(creq);
	assert_string_equal(creq, creq_exp);
	sts = sigv4_string_to_sign(&suite_key, creq);
	assert_non_null(sts);
	assert_string_equal(sts, sts_exp);
	authz = sigv4_authorization(&suite_key, &rq, NULL);
	assert_non_null(authz);
	assert_string_equal(authz, authz_exp);

	/* The verifier's path: parse the header, re-sign with its SignedHeaders. */
	assert_true(sigv4_parse_authorization(authz_exp, &a, &e));
	assert_string_equal(a.access_key, "AKIDEXAMPLE");
	assert_string_equal(a.date, "20150830");
	assert_string_equal(a.region, "us-east-1");
	assert_string_equal(a.service, "service");
	sigv4_signature(&suite_key, sts_exp, sig);
	assert_string_equal(a.signature, sig);
	authz2 = sigv4_authorization(&suite_key, &rq, a.signed_headers);
	assert_string_equal(authz2, authz_exp);

	sigv4_auth_cleanup(&a);
	free(authz2);
	free(authz);
	free(sts);
	free(creq);
	free(r.text);
	free(creq_exp);
	free(sts_exp);
	free(authz_exp);
}

/* post-sts-header-after: the token header is present but not signed, so the
 * result is exactly post-vanilla's. */
static void
test_signed_subset(void **state)
{
	static const struct suite_case before = { "post-sts-token/post-sts-header-before",
	    NULL, NULL };
	char *exp = slurp_case("post-vanilla", "authz");
	struct sigv4_request rq;
	struct parsed r;
	char *authz;

	(void)state;
	build_request(&before, &r, &rq);
	authz = sigv4_authorization(&suite_key, &rq, "Host;X-Amz-Date");
	assert_string_equal(authz, exp);
	free(authz);
	free(r.text);
	free(exp);
}

static size_t seen_reqs;

static int
check_listed(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
	size_t plen = strlen(path), base = strlen(SUITE);
	bool listed = false;

	(void)st;
	(void)ftw;
	if (type != FTW_F || plen < 4 || strcmp(path + plen - 4, ".req") != 0)
		return 0;
	seen_reqs++;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		size_t dl = strlen(cases[i].dir);

		if (strncmp(path + base, cases[i].dir, dl) == 0 && path[base + dl] == '/')
			listed = true;
	}
	if (!listed)
		fail_msg("suite case %s is not in the table", path);
	return 0;
}

/* Every .req under the suite folder has a row in cases[]. */
static void
test_table_covers_suite(void **state)
{
	(void)state;
	seen_reqs = 0;
	assert_int_equal(nftw(SUITE, check_listed, 8, FTW_PHYS), 0);
	assert_int_equal(seen_reqs, sizeof(cases) / sizeof(cases[0]));
}

struct creq_case {
	const char	*path;
	const char	*query;
	const char	*uri_line;	/* expected canonical URI */
	const char	*query_line;	/* expected canonical query */
};

static const struct creq_case creq_cases[] = {
	/* already-encoded path is encoded again (non-S3 double encoding) */
	{ "/a%20b", NULL, "/a%2520b", "" },
	{ "//example//", NULL, "/example/", "" },
	{ "/example1/example2/../..", NULL, "/", "" },
	{ "/a/./b/../c", NULL, "/a/c", "" },
	{ "", NULL, "/", "" },
	{ "/", "b=2&a=1&a=0", "/", "a=0&a=1&b=2" },
	{ "/", "k=%7e%2fx&sp=a b&plus=a+b", "/", "k=~%2Fx&plus=a%2Bb&sp=a%20b" },
	{ "/", "novalue&&x=", "/", "novalue=&x=" },
	{ "/", "-._~=-._~", "/", "-._~=-._~" },
};

static void
test_canonical_parts(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(creq_cases) / sizeof(creq_cases[0]); i++) {
		const struct creq_case *c = &creq_cases[i];
		struct sigv4_header h[] = { { "Host", "h" } };
		struct sigv4_request rq = { .method = "get", .path = c->path,
		    .query = c->query, .headers = h, .nheaders = 1,
		    .payload_hash = "UNSIGNED-PAYLOAD" };
		char exp[512];
		char *got = sigv4_canonical_request(&rq, NULL);

		snprintf(exp, sizeof(exp), "GET\n%s\n%s\nhost:h\n\nhost\nUNSIGNED-PAYLOAD",
		    c->uri_line, c->query_line);
		assert_non_null(got);
		assert_string_equal(got, exp);
		free(got);
	}
}

static void
test_headers_joined(void **state)
{
	struct sigv4_header h[] = {
		{ "My-Header1", "value4" }, { "Host", "example.amazonaws.com" },
		{ "my-header1", "  value1  " }, { "MY-HEADER1", "value3\n   x" },
	};
	struct sigv4_request rq = { .method = "GET", .path = "/", .headers = h,
	    .nheaders = 4 };
	char *got = sigv4_canonical_request(&rq, NULL);

	(void)state;
	assert_string_equal(got, "GET\n/\n\nhost:example.amazonaws.com\n"
	    "my-header1:value4,value1,value3 x\n\nhost;my-header1\n"
	    "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
	free(got);
}

static void
test_tamper_changes_signature(void **state)
{
	struct sigv4_header h[] = { { "Host", "example.amazonaws.com" },
	    { "X-Amz-Date", "20150830T123600Z" } };
	struct sigv4_request rq = { .method = "GET", .path = "/", .headers = h,
	    .nheaders = 2 };
	char *a1 = sigv4_authorization(&suite_key, &rq, NULL), *a2;

	(void)state;
	h[0].value = "example.amazonaws.con";
	a2 = sigv4_authorization(&suite_key, &rq, NULL);
	assert_string_not_equal(a1, a2);
	free(a1);
	free(a2);
}

struct bad_auth {
	const char	*value;
};

static const struct bad_auth bad_auths[] = {
	{ "" },
	{ "AWS4-HMAC-SHA1 Credential=A/20150830/r/s/aws4_request, SignedHeaders=host, "
	  "Signature=" "0000000000000000000000000000000000000000000000000000000000000000" },
	{ "AWS4-HMAC-SHA256 Credential=A/20150830/r/s/aws4_request, SignedHeaders=host" },
	{ "AWS4-HMAC-SHA256 Credential=A/2015083/r/s/aws4_request, SignedHeaders=host, "
	  "Signature=0000000000000000000000000000000000000000000000000000000000000000" },
	{ "AWS4-HMAC-SHA256 Credential=A/20150830/r/s/aws5_request, SignedHeaders=host, "
	  "Signature=0000000000000000000000000000000000000000000000000000000000000000" },
	{ "AWS4-HMAC-SHA256 Credential=A/20150830/r/aws4_request, SignedHeaders=host, "
	  "Signature=0000000000000000000000000000000000000000000000000000000000000000" },
	{ "AWS4-HMAC-SHA256 Credential=A/20150830/r/s/aws4_request, SignedHeaders=host, "
	  "Signature=00000000000000000000000000000000000000000000000000000000000000" },
	{ "AWS4-HMAC-SHA256 Credential=A/20150830/r/s/aws4_request, SignedHeaders=host, "
	  "Signature=000000000000000000000000000000000000000000000000000000000000000G" },
	{ "AWS4-HMAC-SHA256 Credential=A/20150830/r/s/aws4_request, SignedHeaders=host, "
	  "Signature=0000000000000000000000000000000000000000000000000000000000000000, "
	  "Signature=0000000000000000000000000000000000000000000000000000000000000000" },
	{ "AWS4-HMAC-SHA256 Credential=A/20150830/r/s/aws4_request, SignedHeaders=Host, "
	  "Signature=0000000000000000000000000000000000000000000000000000000000000000" },
	{ "AWS4-HMAC-SHA256 Credential=A/20150830/r/s/aws4_request, Extra=1, "
	  "SignedHeaders=host, "
	  "Signature=0000000000000000000000000000000000000000000000000000000000000000" },
};

static void
test_parse_rejects(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(bad_auths) / sizeof(bad_auths[0]); i++) {
		struct sigv4_auth a;
		struct err e = { 0 };

		if (sigv4_parse_authorization(bad_auths[i].value, &a, &e))
			fail_msg("accepted bad authorization #%zu", i);
		assert_int_equal(e.status, 400);
		assert_string_equal(e.code, "sigv4.bad_authorization");
		assert_null(a.access_key);
		assert_null(a.signature);
	}
}

static void
test_parse_spacing(void **state)
{
	struct sigv4_auth a;
	struct err e = { 0 };

	(void)state;
	assert_true(sigv4_parse_authorization("  AWS4-HMAC-SHA256 Signature="
	    "1111111111111111111111111111111111111111111111111111111111111111,"
	    "SignedHeaders=host;x-amz-date ,Credential=AKID/20240101/eu-west-1/"
	    "sagemaker/aws4_request", &a, &e));
	assert_string_equal(a.access_key, "AKID");
	assert_string_equal(a.date, "20240101");
	assert_string_equal(a.region, "eu-west-1");
	assert_string_equal(a.service, "sagemaker");
	assert_string_equal(a.signed_headers, "host;x-amz-date");
	assert_string_equal(a.signature,
	    "1111111111111111111111111111111111111111111111111111111111111111");
	sigv4_auth_cleanup(&a);
	sigv4_auth_cleanup(NULL);
}

int
main(void)
{
	enum { NCASES = sizeof(cases) / sizeof(cases[0]) };
	struct CMUnitTest tests[NCASES + 8];
	size_t n = 0;

	for (size_t i = 0; i < NCASES; i++) {
		tests[n] = (struct CMUnitTest)cmocka_unit_test_prestate(test_suite_case,
		    (void *)&cases[i]);
		tests[n++].name = cases[i].dir;
	}
	tests[n++] = (struct CMUnitTest)cmocka_unit_test(test_table_covers_suite);
	tests[n++] = (struct CMUnitTest)cmocka_unit_test(test_signed_subset);
	tests[n++] = (struct CMUnitTest)cmocka_unit_test(test_canonical_parts);
	tests[n++] = (struct CMUnitTest)cmocka_unit_test(test_headers_joined);
	tests[n++] = (struct CMUnitTest)cmocka_unit_test(test_tamper_changes_signature);
	tests[n++] = (struct CMUnitTest)cmocka_unit_test(test_parse_rejects);
	tests[n++] = (struct CMUnitTest)cmocka_unit_test(test_parse_spacing);
	return _cmocka_run_group_tests("sigv4", tests, n, NULL, NULL);
}
