/* cloudsim AWS: SigV4 verification against the AWS test suite (accepted, and refused with
 * one byte changed), STS AssumeRole with external id, session tokens, clock skew,
 * SageMaker HyperPod DescribeCluster / ListClusterNodes paging, IAM GetRole tags. */
#include <dirent.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include "cs_harness.h"
#include "core/sigv4.h"

#define HP "test-hp-usw2"
#define SUITE FLEETD_SOURCE_DIR "/../shared/testvectors/sigv4"
#define SUITE_SECRET "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY"

static struct csh H;
static char *AK, *SK;

static int
setup(void **state)
{
	(void)state;
	if (csh_setup(&H, "20") != 0)
		return -1;
	AK = harness_keep(csh_env(&H, "FLEETD_AWS_ACCESS_KEY_ID"));
	SK = harness_keep(csh_env(&H, "FLEETD_AWS_SECRET_ACCESS_KEY"));
	return AK && SK ? 0 : -1;
}

/* Asks cloudsim's verifier about one raw request at the suite's time. */
static bool
verify_raw(const char *text)
{
	json_t *b = json_pack("{s:s, s:s, s:s}", "request", text, "secret_key", SUITE_SECRET,
	    "now", "20150830T123600Z");
	char *s = json_dumps(b, 0);
	struct csh_resp r = csh_sim(&H, "POST", "/_sim/sigv4", s);
	bool ok;

	assert_int_equal(r.status, 200);
	ok = json_is_true(json_object_get(r.json, "valid"));
	csh_resp_free(&r);
	free(s);
	json_decref(b);
	return ok;
}

static int
run_case(const char *dir, const char *name)
{
	char path[2048], *req, *authz, *text = NULL, *body, *mut;
	const char *tok = strcmp(name, "get-vanilla-with-session-token") == 0 ?
	    "\nX-Amz-Security-Token:6e86291e8372ff2a2260956d9b8aae1d763fbf315fa00fa31553b73ebf194267" :
	    "";
	size_t n;

	snprintf(path, sizeof(path), "%s/%s.req", dir, name);
	req = csh_slurp(path, NULL);
	snprintf(path, sizeof(path), "%s/%s.authz", dir, name);
	authz = csh_slurp(path, NULL);
	if (req == NULL || authz == NULL) {
		free(req);
		free(authz);
		return 0;
	}
	body = strstr(req, "\n\n");
	if (body != NULL) {
		*body = '\0';
		body += 2;
	}
	while (strlen(req) > 0 && req[strlen(req) - 1] == '\n')
		req[strlen(req) - 1] = '\0';
	if (asprintf(&text, "%s%s\nAuthorization: %s%s%s", req, tok, authz, body ? "\n\n" : "",
	    body ? body : "") < 0)
		fail();
	if (!verify_raw(text))
		fail_msg("case %s not accepted", name);
	/* one byte changed in the signature */
	mut = strdup(text);
	n = (size_t)(strstr(mut, "Signature=") - mut) + 10 + 5;
	mut[n] = mut[n] == 'a' ? 'b' : 'a';
	if (verify_raw(mut))
		fail_msg("case %s accepted with a changed signature", name);
	free(mut);
	/* one byte changed in the signed request (the host) */
	mut = strdup(text);
	n = (size_t)(strstr(mut, "example.amazonaws.com") - mut) + 2;
	mut[n] = 'b';
	if (verify_raw(mut))
		fail_msg("case %s accepted with a changed host", name);
	free(mut);
	free(text);
	free(req);
	free(authz);
	return 1;
}

static int
walk(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	char sub[1024], probe[2400];
	int n = 0;

	if (d == NULL)
		return 0;
	while ((e = readdir(d)) != NULL) {
		if (e->d_name[0] == '.')
			continue;
		snprintf(sub, sizeof(sub), "%s/%s", dir, e->d_name);
		snprintf(probe, sizeof(probe), "%s/%s.req", sub, e->d_name);
		if (access(probe, R_OK) == 0)
			n += run_case(sub, e->d_name);
		else
			n += walk(sub);
	}
	closedir(d);
	return n;
}

static void
test_sigv4_suite(void **state)
{
	(void)state;
	assert_int_equal(walk(SUITE), 23);
}

struct call {
	const char	*path, *svc, *region, *ak, *sk, *tok, *ctype, *target, *body;
	double		 skew;
	bool		 tamper;
};

static struct csh_resp
aws(const struct call *c)
{
	char date[20], host[512], url[700], h[6][600], *authz;
	const char *hd[8];
	struct sigv4_header sh[5];
	size_t n = 0, i;
	time_t t = time(NULL) + (time_t)c->skew;
	struct tm tm;
	struct csh_resp r;

	gmtime_r(&t, &tm);
	strftime(date, sizeof(date), "%Y%m%dT%H%M%SZ", &tm);
	snprintf(host, sizeof(host), "%s", H.base + 7);
	sh[n++] = (struct sigv4_header){ "Host", host };
	sh[n++] = (struct sigv4_header){ "X-Amz-Date", date };
	sh[n++] = (struct sigv4_header){ "Content-Type", c->ctype };
	if (c->target)
		sh[n++] = (struct sigv4_header){ "X-Amz-Target", c->target };
	if (c->tok)
		sh[n++] = (struct sigv4_header){ "X-Amz-Security-Token", c->tok };
	{
		struct sigv4_request rq = { "POST", c->path, NULL, sh, n, c->body, strlen(c->body),
		    NULL };
		struct sigv4_key k = { c->ak, c->sk, c->region, c->svc, date };

		authz = sigv4_authorization(&k, &rq, NULL);
	}
	assert_non_null(authz);
	if (c->tamper)
		authz[strlen(authz) - 1] = authz[strlen(authz) - 1] == '0' ? '1' : '0';
	for (i = 0; i < n; i++) {
		snprintf(h[i], sizeof(h[i]), "%s: %s", sh[i].name, sh[i].value);
		hd[i] = h[i];
	}
	snprintf(h[n], sizeof(h[n]), "Authorization: %s", authz);
	hd[n] = h[n];
	hd[n + 1] = NULL;
	snprintf(url, sizeof(url), "%s%s", H.base, c->path);
	r = csh_req("POST", url, hd, c->body, NULL);
	free(authz);
	return r;
}

static const char *
role_arn(const char *which)
{
	return json_string_value(json_object_get(json_object_get(json_object_get(csh_cluster(&H,
	    HP), "iam"), which), "role_arn"));
}

static char *
xml(const char *body, const char *tag)
{
	char open[64], close[64];
	const char *a, *b;

	snprintf(open, sizeof(open), "<%s>", tag);
	snprintf(close, sizeof(close), "</%s>", tag);
	a = body ? strstr(body, open) : NULL;
	b = a ? strstr(a, close) : NULL;
	return b ? strndup(a + strlen(open), (size_t)(b - a - strlen(open))) : NULL;
}

static struct csh_resp
assume(const char *xid, double skew, bool tamper, const char *ak)
{
	char body[800];
	struct call c = { "/aws/sts/", "sts", "us-east-1", ak ? ak : AK, SK, NULL,
	    "application/x-www-form-urlencoded; charset=utf-8", NULL, body, skew, tamper };

	snprintf(body, sizeof(body), "Action=AssumeRole&Version=2011-06-15&RoleArn=%s&"
	    "RoleSessionName=fleetd-test%s%s", role_arn("control_plane"), xid ? "&ExternalId=" :
	    "", xid ? xid : "");
	return aws(&c);
}

static void
test_sts_sagemaker_iam(void **state)
{
	struct csh_resp r;
	char body[600], *kid, *sec, *tok, *code;
	struct call c = { "/aws/sagemaker/", "sagemaker", "us-west-2", NULL, NULL, NULL,
	    "application/x-amz-json-1.1", "SageMaker.DescribeCluster", body, 0, false };
	int total = 0, pages = 0;

	(void)state;
	snprintf(body, sizeof(body), "{\"provider\":\"aws\",\"role_arn\":\"%s\",\"external_id\":"
	    "\"ext-123\"}", role_arn("control_plane"));
	r = csh_sim(&H, "POST", "/_sim/iam", body);
	assert_int_equal(r.status, 200);
	csh_resp_free(&r);
	snprintf(body, sizeof(body), "{\"provider\":\"aws\",\"role_arn\":\"%s\",\"tags\":"
	    "{\"fleet.io/cloud-id\":\"cloud-42\"}}", role_arn("cluster_role"));
	r = csh_sim(&H, "POST", "/_sim/iam", body);
	assert_int_equal(r.status, 200);
	csh_resp_free(&r);
	/* wrong or missing external id */
	r = assume("ext-999", 0, false, NULL);
	assert_int_equal(r.status, 403);
	code = xml(r.body, "Code");
	assert_string_equal(code, "AccessDenied");
	free(code);
	csh_resp_free(&r);
	r = assume(NULL, 0, false, NULL);
	assert_int_equal(r.status, 403);
	csh_resp_free(&r);
	/* one byte of signature, a stale date, an unknown key */
	r = assume("ext-123", 0, true, NULL);
	assert_int_equal(r.status, 403);
	code = xml(r.body, "Code");
	assert_string_equal(code, "SignatureDoesNotMatch");
	free(code);
	csh_resp_free(&r);
	r = assume("ext-123", -600, false, NULL);
	assert_int_equal(r.status, 403);
	assert_non_null(strstr(r.body, "Signature expired"));
	csh_resp_free(&r);
	r = assume("ext-123", 0, false, "AKIANOTAREALKEY00000");
	assert_int_equal(r.status, 403);
	code = xml(r.body, "Code");
	assert_string_equal(code, "InvalidClientTokenId");
	free(code);
	csh_resp_free(&r);
	/* the right external id */
	r = assume("ext-123", 0, false, NULL);
	assert_int_equal(r.status, 200);
	kid = xml(r.body, "AccessKeyId");
	sec = xml(r.body, "SecretAccessKey");
	tok = xml(r.body, "SessionToken");
	assert_non_null(kid);
	assert_non_null(tok);
	csh_resp_free(&r);
	/* temporary credentials sign SageMaker calls, only with their session token */
	c.ak = kid;
	c.sk = sec;
	snprintf(body, sizeof(body), "{\"ClusterName\":\"%s\"}", HP);
	r = aws(&c);
	assert_int_equal(r.status, 400);
	assert_string_equal(json_string_value(json_object_get(r.json, "__type")),
	    "UnrecognizedClientException");
	csh_resp_free(&r);
	c.tok = tok;
	r = aws(&c);
	assert_int_equal(r.status, 200);
	assert_string_equal(json_string_value(json_object_get(r.json, "ClusterStatus")),
	    "InService");
	assert_int_equal(json_array_size(json_object_get(r.json, "InstanceGroups")), 3);
	csh_resp_free(&r);
	c.region = "us-east-1";
	r = aws(&c);
	assert_int_equal(r.status, 400);
	assert_string_equal(json_string_value(json_object_get(r.json, "__type")),
	    "ResourceNotFound");
	csh_resp_free(&r);
	c.region = "us-west-2";
	c.target = "SageMaker.ListClusterNodes";
	snprintf(body, sizeof(body), "{\"ClusterName\":\"%s\",\"MaxResults\":100}", HP);
	for (;;) {
		const char *next;

		r = aws(&c);
		assert_int_equal(r.status, 200);
		total += (int)json_array_size(json_object_get(r.json, "ClusterNodeSummaries"));
		pages++;
		next = json_string_value(json_object_get(r.json, "NextToken"));
		if (next == NULL || pages > 20) {
			csh_resp_free(&r);
			break;
		}
		snprintf(body, sizeof(body), "{\"ClusterName\":\"%s\",\"MaxResults\":100,"
		    "\"NextToken\":\"%s\"}", HP, next);
		csh_resp_free(&r);
	}
	assert_int_equal(total, 6);
	assert_int_equal(pages, 3);
	/* IAM GetRole with the assumed role shows the cloud-id tag */
	{
		char name[200], rb[300];
		struct call g = { "/aws/iam/", "iam", "us-east-1", kid, sec, tok,
		    "application/x-www-form-urlencoded; charset=utf-8", NULL, rb, 0, false };

		snprintf(name, sizeof(name), "%s", strrchr(role_arn("cluster_role"), '/') + 1);
		snprintf(rb, sizeof(rb), "Action=GetRole&Version=2010-05-08&RoleName=%s", name);
		r = aws(&g);
		assert_int_equal(r.status, 200);
		assert_non_null(strstr(r.body, "<Key>fleet.io/cloud-id</Key>"));
		assert_non_null(strstr(r.body, "<Value>cloud-42</Value>"));
		csh_resp_free(&r);
		snprintf(rb, sizeof(rb), "Action=GetRole&Version=2010-05-08&RoleName=nope");
		r = aws(&g);
		assert_int_equal(r.status, 404);
		csh_resp_free(&r);
	}
	/* expired session */
	r = csh_sim(&H, "POST", "/_sim/expire-tokens", "{\"provider\":\"aws\"}");
	csh_resp_free(&r);
	c.target = "SageMaker.DescribeCluster";
	snprintf(body, sizeof(body), "{\"ClusterName\":\"%s\"}", HP);
	r = aws(&c);
	assert_int_equal(r.status, 400);
	assert_string_equal(json_string_value(json_object_get(r.json, "__type")),
	    "ExpiredTokenException");
	csh_resp_free(&r);
	free(kid);
	free(sec);
	free(tok);
}

static void
test_faults_aws_shape(void **state)
{
	struct csh_resp r, f;
	char body[200];

	(void)state;
	f = csh_sim(&H, "POST", "/_sim/faults", "{\"service\":\"sts\",\"error_rate\":1,"
	    "\"error_status\":429,\"retry_after\":7,\"count\":1}");
	assert_int_equal(f.status, 201);
	csh_resp_free(&f);
	r = assume("ext-123", 0, false, NULL);
	assert_int_equal(r.status, 429);
	assert_non_null(strstr(r.body, "<Code>Throttling</Code>"));
	assert_non_null(strstr(r.hdr, "retry-after: 7"));
	csh_resp_free(&r);
	r = assume("ext-123", 0, false, NULL);	/* count exhausted: back to normal */
	assert_int_equal(r.status, 200);
	csh_resp_free(&r);
	snprintf(body, sizeof(body), "{\"service\":\"sts\",\"unreachable\":true}");
	f = csh_sim(&H, "POST", "/_sim/faults", body);
	csh_resp_free(&f);
	r = assume("ext-123", 0, false, NULL);
	assert_int_not_equal(r.curl_rc, CURLE_OK);
	csh_resp_free(&r);
	f = csh_sim(&H, "DELETE", "/_sim/faults", NULL);
	assert_int_equal(f.status, 200);
	csh_resp_free(&f);
	r = assume("ext-123", 0, false, NULL);
	assert_int_equal(r.status, 200);
	csh_resp_free(&r);
	/* the service's clock an hour ahead: a fresh signature is already expired */
	f = csh_sim(&H, "POST", "/_sim/clock", "{\"skew_s\":3600}");
	assert_int_equal(f.status, 200);
	csh_resp_free(&f);
	r = assume("ext-123", 0, false, NULL);
	assert_int_equal(r.status, 403);
	assert_non_null(strstr(r.body, "Signature expired"));
	csh_resp_free(&r);
	r = assume("ext-123", 3600, false, NULL);	/* a client that follows the skew */
	assert_int_equal(r.status, 200);
	csh_resp_free(&r);
	f = csh_sim(&H, "POST", "/_sim/clock", "{\"skew_s\":0}");
	csh_resp_free(&f);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_sigv4_suite),
		cmocka_unit_test(test_sts_sagemaker_iam),
		cmocka_unit_test(test_faults_aws_shape),
	};

	return cmocka_run_group_tests(tests, setup, harness_group_teardown);
}
