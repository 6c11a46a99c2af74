/* cloudsim aws: STS (AssumeRole, GetCallerIdentity) and IAM GetRole over the query
 * protocol, SageMaker HyperPod DescribeCluster / ListClusterNodes over JSON 1.1, every
 * request verified as SigV4 the way AWS does (scope, signed headers, 5 min skew, tokens). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "cloudsim/cs.h"
#include "core/crypto.h"
#include "core/sigv4.h"

static const char *
hdr(const struct cs_kv *h, size_t n, const char *name)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (strcasecmp(h[i].k, name) == 0)
			return h[i].v;
	return NULL;
}

static bool
parse_amz_date(const char *s, double *out)
{
	struct tm tm;
	char *end;

	memset(&tm, 0, sizeof(tm));
	if (s == NULL || strlen(s) != 16)
		return false;
	end = strptime(s, "%Y%m%dT%H%M%SZ", &tm);
	if (end == NULL || *end != '\0')
		return false;
	*out = (double)timegm(&tm);
	return true;
}

static void
amz_date(double t, char out[20])
{
	time_t s = (time_t)t;
	struct tm tm;

	gmtime_r(&s, &tm);
	strftime(out, 20, "%Y%m%dT%H%M%SZ", &tm);
}

/* AWS allows 5 minutes between the request's date and its own clock (now, or the
 * auth clock when NULL); fills msg and returns false otherwise. */
static bool
check_skew(struct cs *cs, const char *now, double t_req, const char *date, char *msg,
    size_t ml)
{
	char nowbuf[20], lim[20];
	double t_now;

	if (now != NULL && !parse_amz_date(now, &t_now)) {
		snprintf(msg, ml, "bad simulated time");
		return false;
	}
	if (now == NULL)
		t_now = cs_wall(cs);
	amz_date(t_now, nowbuf);
	if (t_req < t_now - 300) {
		amz_date(t_now - 300, lim);
		snprintf(msg, ml, "Signature expired: %s is now earlier than %s (%s - 5 min.)",
		    date, lim, nowbuf);
		return false;
	}
	if (t_req > t_now + 300) {
		amz_date(t_now + 300, lim);
		snprintf(msg, ml, "Signature not yet current: %s is still later than %s (%s + 5 "
		    "min.)", date, lim, nowbuf);
		return false;
	}
	return true;
}

bool
cs_sigv4_verify(struct cs *cs, const char *method, const char *path, const char *query,
    const struct cs_kv *h, size_t nh, const char *body, size_t body_len, const char *secret,
    const char *now, const char **code, char *msg, size_t ml)
{
	const char *authz = hdr(h, nh, "Authorization"), *date = hdr(h, nh, "X-Amz-Date"),
	    *ph = hdr(h, nh, "X-Amz-Content-Sha256");
	struct sigv4_auth a = { 0 };
	struct sigv4_header *sh = NULL;
	struct err e = { 0 };
	char *creq = NULL, *sts = NULL, sig[65], d8[9], *trimmed = NULL;
	double t_req;
	bool ok = false;
	size_t i;

	*code = "SignatureDoesNotMatch";
	if (authz == NULL) {
		*code = "MissingAuthenticationToken";
		snprintf(msg, ml, "Request is missing Authentication Token");
		return false;
	}
	if (!sigv4_parse_authorization(authz, &a, &e)) {
		*code = "IncompleteSignature";
		snprintf(msg, ml, "Authorization header is invalid: %s", e.msg);
		goto cleanup;
	}
	if (date == NULL) {
		*code = "IncompleteSignature";
		snprintf(msg, ml, "Authorization header requires existence of either a "
		    "'X-Amz-Date' or a 'Date' header.");
		goto cleanup;
	}
	trimmed = strdup(date);
	for (char *p = trimmed + strlen(trimmed); p > trimmed && p[-1] == ' '; )
		*--p = '\0';
	if (!parse_amz_date(trimmed + strspn(trimmed, " "), &t_req)) {
		*code = "IncompleteSignature";
		snprintf(msg, ml, "X-Amz-Date must be in the ISO8601 Long Format");
		goto cleanup;
	}
	snprintf(d8, sizeof(d8), "%.8s", trimmed + strspn(trimmed, " "));
	if (strcmp(a.date, d8) != 0) {
		snprintf(msg, ml, "Date in Credential scope does not match YYYYMMDD from ISO-8601 "
		    "version of date from HTTP: '%s' != '%s', from '%s'.", a.date, d8, trimmed);
		goto cleanup;
	}
	if (strstr(a.signed_headers, "host") == NULL) {
		snprintf(msg, ml, "'Host' or ':authority' must be a 'SignedHeader' in the AWS "
		    "Authorization.");
		goto cleanup;
	}
	if (!check_skew(cs, now, t_req, trimmed, msg, ml))
		goto cleanup;
	sh = calloc(nh ? nh : 1, sizeof(*sh));
	if (sh == NULL)
		abort();
	for (i = 0; i < nh; i++) {
		sh[i].name = h[i].k;
		sh[i].value = h[i].v;
	}
	{
		struct sigv4_request r = { method, path, query, sh, nh, body, body_len, ph };
		struct sigv4_key k = { a.access_key, secret, a.region, a.service, trimmed };

		creq = sigv4_canonical_request(&r, a.signed_headers);
		if (creq == NULL) {
			snprintf(msg, ml, "the request could not be canonicalized");
			goto cleanup;
		}
		k.amz_date = trimmed + strspn(trimmed, " ");
		sts = sigv4_string_to_sign(&k, creq);
		sigv4_signature(&k, sts, sig);
	}
	if (strlen(a.signature) != 64 || !crypto_equal(sig, a.signature, 64)) {
		snprintf(msg, ml, "The request signature we calculated does not match the "
		    "signature you provided. Check your AWS Secret Access Key and signing method. "
		    "Consult the service documentation for details.");
		goto cleanup;
	}
	ok = true;
cleanup:
	free(trimmed);
	free(creq);
	free(sts);
	free(sh);
	sigv4_auth_cleanup(&a);
	return ok;
}

static const char *
json_code(const char *code, int *status)
{
	*status = 400;
	if (strcmp(code, "InvalidClientTokenId") == 0)
		return "UnrecognizedClientException";
	if (strcmp(code, "ExpiredToken") == 0)
		return "ExpiredTokenException";
	if (strcmp(code, "IncompleteSignature") == 0)
		return "IncompleteSignatureException";
	*status = 403;
	if (strcmp(code, "MissingAuthenticationToken") == 0)
		return "MissingAuthenticationTokenException";
	return "InvalidSignatureException";
}

static void
auth_fail(struct cs_req *rq, const char *code, const char *msg)
{
	int st;

	if (rq->fam == FAM_AWS_JSON) {
		const char *jc = json_code(code, &st);

		cs_reply_error(rq, st, jc, "%s", msg);
	} else {
		cs_reply_error(rq, strcmp(code, "IncompleteSignature") == 0 ? 400 : 403, code, "%s",
		    msg);
	}
}

static bool
region_ok(struct cs *cs, const char *r)
{
	size_t i;

	if (strcmp(r, "us-east-1") == 0)
		return true;
	for (i = 0; i < cs->nclusters; i++)
		if (strcmp(cs->clusters[i].region, r) == 0)
			return true;
	return false;
}

/* Authenticates rq as AWS would for service; answers and returns false otherwise. */
bool
cs_sigv4_check(struct cs *cs, struct cs_req *rq, const char *service, struct cs_token **tok,
    struct cs_aws_user **user)
{
	const char *authz = cs_header(rq, "Authorization"), *code = NULL;
	struct sigv4_auth a = { 0 };
	struct err e = { 0 };
	const char *secret = NULL;
	char msg[512];
	bool ok = false;
	size_t i;

	*tok = NULL;
	*user = NULL;
	if (authz == NULL) {
		auth_fail(rq, "MissingAuthenticationToken", "Request is missing Authentication "
		    "Token");
		return false;
	}
	if (!sigv4_parse_authorization(authz, &a, &e)) {
		auth_fail(rq, "IncompleteSignature", e.msg);
		return false;
	}
	for (i = 0; i < cs->users.n; i++)
		if (strcmp(((struct cs_aws_user *)cs->users.v[i])->access_key, a.access_key) == 0)
			*user = cs->users.v[i];
	if (*user != NULL) {
		secret = (*user)->secret_key;
	} else if ((*tok = cs_token_find(cs, CS_TOK_AWS, a.access_key)) != NULL) {
		const char *st = cs_header(rq, "X-Amz-Security-Token");

		if (st == NULL || strcmp(st, (*tok)->session) != 0) {
			auth_fail(rq, "InvalidClientTokenId", "The security token included in the "
			    "request is invalid.");
			goto cleanup;
		}
		if ((*tok)->revoked || (*tok)->expires < cs_wall(cs)) {
			auth_fail(rq, "ExpiredToken", "The security token included in the request "
			    "is expired");
			goto cleanup;
		}
		secret = (*tok)->secret;
	} else {
		auth_fail(rq, "InvalidClientTokenId", "The security token included in the request "
		    "is invalid.");
		goto cleanup;
	}
	if (strcmp(a.service, service) != 0) {
		snprintf(msg, sizeof(msg), "Credential should be scoped to correct service: '%s'. ",
		    service);
		auth_fail(rq, "SignatureDoesNotMatch", msg);
		goto cleanup;
	}
	if ((strcmp(service, "iam") == 0 && strcmp(a.region, "us-east-1") != 0) ||
	    !region_ok(cs, a.region)) {
		auth_fail(rq, "SignatureDoesNotMatch", "Credential should be scoped to a valid "
		    "region. ");
		goto cleanup;
	}
	if (!cs_sigv4_verify(cs, rq->method, rq->path, rq->query, rq->hdr, rq->nhdr,
	    rq->body ? rq->body : "", rq->body_len, secret, NULL, &code, msg, sizeof(msg))) {
		auth_fail(rq, code, msg);
		goto cleanup;
	}
	ok = true;
cleanup:
	sigv4_auth_cleanup(&a);
	if (!ok) {
		*tok = NULL;
		*user = NULL;
	}
	return ok;
}

void
cs_aws_handle(struct cs *cs, struct cs_req *rq)
{
	const char *svc = strcmp(rq->service, "sts") == 0 ? "sts" :
	    strcmp(rq->service, "aws_iam") == 0 ? "iam" : "sagemaker";
	struct cs_token *tok;
	struct cs_aws_user *user;

	if (!cs_sigv4_check(cs, rq, svc, &tok, &user))
		return;
	if (strcmp(svc, "sagemaker") == 0)
		cs_sagemaker(cs, rq, tok, user);
	else
		cs_aws_query(cs, rq, tok, user);
}
