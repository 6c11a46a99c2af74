/* cloudsim gcp: Google's OAuth token endpoint (RS256 JWT-bearer only), IAM Credentials
 * generateAccessToken (impersonation bindings), IAM service accounts, GKE clusters and
 * node pools, Compute regions (quotas) and reservations (pageToken paging). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cloudsim/cs.h"
#include "core/crypto.h"

#define GOOGLE_AUD	"https://oauth2.googleapis.com/token"
#define NO_CRED_MSG	"Request is missing required authentication credential. Expected " \
	"OAuth 2 access token, login cookie or other valid authentication credential. See " \
	"https://developers.google.com/identity/sign-in/web/devconsole-project."
#define BAD_CRED_MSG	"Request had invalid authentication credentials. Expected OAuth 2 " \
	"access token, login cookie or other valid authentication credential. See " \
	"https://developers.google.com/identity/sign-in/web/devconsole-project."

/* Claims of a compact JWT without checking anything; NULL when malformed. */
static json_t *
jwt_peek(const char *jwt, json_t **header)
{
	const char *d1 = strchr(jwt, '.'), *d2 = d1 ? strchr(d1 + 1, '.') : NULL;
	char *part;
	uint8_t *raw;
	size_t n;
	json_t *c;

	*header = NULL;
	if (d2 == NULL || strchr(d2 + 1, '.') != NULL)
		return NULL;
	part = strndup(jwt, (size_t)(d1 - jwt));
	raw = crypto_b64_decode(part, &n);
	free(part);
	*header = raw ? json_loadb((char *)raw, n, 0, NULL) : NULL;
	free(raw);
	part = strndup(d1 + 1, (size_t)(d2 - d1 - 1));
	raw = crypto_b64_decode(part, &n);
	free(part);
	c = raw ? json_loadb((char *)raw, n, 0, NULL) : NULL;
	free(raw);
	if (!json_is_object(c) || !json_is_object(*header)) {
		json_decref(c);
		json_decref(*header);
		*header = NULL;
		return NULL;
	}
	return c;
}

/* A space-separated scope list as Google takes it: each an https:// scope URL or one of
 * the OpenID Connect scopes (openid, email, profile) gcloud and the SDKs add. */
static bool
scopes_valid(const char *scope)
{
	const char *p = scope;
	bool any = false;

	if (p == NULL)
		return false;
	while (*p) {
		size_t n = strcspn(p, " ");

		if (n > 0) {
			if (!(n > 8 && strncmp(p, "https://", 8) == 0) &&
			    !(n == 6 && strncmp(p, "openid", 6) == 0) &&
			    !(n == 5 && strncmp(p, "email", 5) == 0) &&
			    !(n == 7 && strncmp(p, "profile", 7) == 0))
				return false;
			any = true;
		}
		p += n;
		while (*p == ' ')
			p++;
	}
	return any;
}

static void
oauth_token(struct cs *cs, struct cs_req *rq)
{
	char *gt = rq->body ? cs_form_get(rq->body, "grant_type") : NULL,
	    *as = rq->body ? cs_form_get(rq->body, "assertion") : NULL, url[160];
	json_t *hdr = NULL, *claims = NULL, *ok = NULL;
	const char *iss, *aud, *scope, *alg;
	struct cs_gsa *g;
	struct cs_token *t;
	double now = cs_wall(cs), iat, exp;

	if (strcmp(rq->method, "POST") != 0 || gt == NULL) {
		cs_reply_error(rq, 400, "invalid_request", "Required parameter is missing: "
		    "grant_type");
		goto cleanup;
	}
	if (strcmp(gt, "urn:ietf:params:oauth:grant-type:jwt-bearer") != 0) {
		cs_reply_error(rq, 400, "unsupported_grant_type", "Invalid grant_type: %.100s", gt);
		goto cleanup;
	}
	if (as == NULL || (claims = jwt_peek(as, &hdr)) == NULL) {
		cs_reply_error(rq, 400, "invalid_grant", "Invalid JWT: could not decode the "
		    "assertion");
		goto cleanup;
	}
	alg = json_string_value(json_object_get(hdr, "alg"));
	iss = json_string_value(json_object_get(claims, "iss"));
	g = cs_gsa_find(cs, iss);
	if (alg == NULL || strcmp(alg, "RS256") != 0) {
		cs_reply_error(rq, 400, "invalid_grant", "Invalid JWT: unsupported algorithm");
		goto cleanup;
	}
	if (g == NULL || g->public_pem == NULL) {
		cs_reply_error(rq, 400, "invalid_grant", "Invalid grant: account not found");
		goto cleanup;
	}
	ok = crypto_jwt_verify(g->public_pem, as, NULL);
	if (ok == NULL) {
		cs_reply_error(rq, 400, "invalid_grant", "Invalid JWT Signature.");
		goto cleanup;
	}
	aud = json_string_value(json_object_get(claims, "aud"));
	snprintf(url, sizeof(url), "%s/gcp/oauth2/token", cs->base_url);
	if (aud == NULL || (strcmp(aud, GOOGLE_AUD) != 0 && strcmp(aud, url) != 0)) {
		cs_reply_error(rq, 400, "invalid_grant", "Invalid JWT: Failed audience check. The "
		    "right audience is " GOOGLE_AUD);
		goto cleanup;
	}
	if (!json_is_integer(json_object_get(claims, "iat")) ||
	    !json_is_integer(json_object_get(claims, "exp"))) {
		cs_reply_error(rq, 400, "invalid_grant", "Invalid JWT: iat and exp are required");
		goto cleanup;
	}
	iat = (double)json_integer_value(json_object_get(claims, "iat"));
	exp = (double)json_integer_value(json_object_get(claims, "exp"));
	if (exp <= iat || exp - iat > 3600 || iat > now + 300 || exp < now) {
		cs_reply_error(rq, 400, "invalid_grant", "Invalid JWT: Token must be a short-lived "
		    "token (60 minutes) and in a reasonable timeframe. Check your iat and exp "
		    "values in the JWT claim.");
		goto cleanup;
	}
	scope = json_string_value(json_object_get(claims, "scope"));
	if (!scopes_valid(scope)) {
		cs_reply_error(rq, 400, "invalid_scope", "Invalid OAuth scope or ID token audience "
		    "provided.");
		goto cleanup;
	}
	t = cs_token_issue(cs, CS_TOK_GCP, g->email, g->project, cs->cfg.token_ttl_s);
	snprintf(t->scope, sizeof(t->scope), "%s", scope);
	cs_reply_json(rq, 200, json_pack("{s:s, s:i, s:s}", "access_token", t->value,
	    "expires_in", (int)cs->cfg.token_ttl_s - 1, "token_type", "Bearer"));
cleanup:
	json_decref(ok);
	json_decref(hdr);
	json_decref(claims);
	free(gt);
	free(as);
}

/* Bearer check for Google APIs; scope "" = any.  Answers and returns NULL on failure. */
static struct cs_token *
google_auth(struct cs *cs, struct cs_req *rq, const char *scope)
{
	bool expired;
	struct cs_token *t = cs_bearer(cs, rq, CS_TOK_GCP, &expired);

	if (t == NULL) {
		cs_reply_error(rq, 401, "UNAUTHENTICATED", "%s", cs_header(rq, "Authorization") ?
		    BAD_CRED_MSG : NO_CRED_MSG);
		cs_reply_header(rq, "WWW-Authenticate", "Bearer realm=\"https://accounts.google.com/\"");
		return NULL;
	}
	if (scope[0] && strstr(t->scope, "https://www.googleapis.com/auth/cloud-platform") ==
	    NULL && strstr(t->scope, scope) == NULL) {
		cs_reply_error(rq, 403, "PERMISSION_DENIED", "Request had insufficient "
		    "authentication scopes.");
		return NULL;
	}
	return t;
}

static void
generate_token(struct cs *cs, struct cs_req *rq)
{
	struct cs_token *caller = google_auth(cs, rq, ""), *t;
	char *email = NULL, *colon, exp[32];
	struct cs_gsa *g;
	json_t *body = NULL, *scope, *lt, *v;
	double life = 3600;
	bool allowed = false;
	size_t i;

	if (caller == NULL)
		return;
	/* seg: gcp iamcredentials v1 projects - serviceAccounts EMAIL:generateAccessToken */
	if (rq->nseg != 7 || strcmp(rq->method, "POST") != 0 ||
	    strcmp(rq->seg[5], "serviceAccounts") != 0 ||
	    (colon = strstr(rq->seg[6], ":generateAccessToken")) == NULL) {
		cs_reply_error(rq, 404, "NOT_FOUND", "Requested entity was not found.");
		return;
	}
	email = strndup(rq->seg[6], (size_t)(colon - rq->seg[6]));
	body = json_loadb(rq->body ? rq->body : "", rq->body_len, 0, NULL);
	scope = json_object_get(body, "scope");
	lt = json_object_get(body, "lifetime");
	if (!json_is_array(scope) || json_array_size(scope) == 0) {
		cs_reply_error(rq, 400, "INVALID_ARGUMENT", "Scope required.");
		goto cleanup;
	}
	if (lt != NULL && (!json_is_string(lt) || sscanf(json_string_value(lt), "%lfs",
	    &life) != 1 || life < 1 || life > 3600)) {
		cs_reply_error(rq, 400, "INVALID_ARGUMENT", "The lifetime must be between 1s and "
		    "3600s.");
		goto cleanup;
	}
	g = cs_gsa_find(cs, email);
	json_array_foreach(g ? g->token_creators : NULL, i, v)
		if (json_is_string(v) && strcmp(json_string_value(v), caller->principal) == 0)
			allowed = true;
	if (!allowed) {
		cs_reply_error(rq, 403, "PERMISSION_DENIED", "Permission "
		    "'iam.serviceAccounts.getAccessToken' denied on resource (or it may not "
		    "exist).");
		goto cleanup;
	}
	t = cs_token_issue(cs, CS_TOK_GCP, g->email, g->project, life);
	json_array_foreach(scope, i, v)
		if (json_is_string(v) && strlen(t->scope) + json_string_length(v) + 2 <
		    sizeof(t->scope))
			snprintf(t->scope + strlen(t->scope), sizeof(t->scope) - strlen(t->scope),
			    "%s%s", i ? " " : "", json_string_value(v));
	cs_rfc3339(t->expires, exp);
	cs_reply_json(rq, 200, json_pack("{s:s, s:s}", "accessToken", t->value, "expireTime",
	    exp));
cleanup:
	json_decref(body);
	free(email);
}

/* POST .../serviceAccounts/E:getIamPolicy — who may impersonate E: its token creators
 * (roles/iam.serviceAccountTokenCreator), as the IAM API answers.  Readable from the
 * account's own project, like GET. */
/* The service account email of project seg[4] ("-": any) that token t may act on with
 * permission perm; NULL when it answered 404 or 403 itself. */
static struct cs_gsa *
gsa_of(struct cs *cs, struct cs_req *rq, struct cs_token *t, const char *email,
    const char *perm)
{
	struct cs_gsa *g = cs_gsa_find(cs, email);

	if (g == NULL || (strcmp(rq->seg[4], "-") && strcmp(rq->seg[4], g->project))) {
		cs_reply_error(rq, 404, "NOT_FOUND", "Unknown service account");
		return NULL;
	}
	if (strcmp(t->tenant, g->project) != 0) {
		cs_reply_error(rq, 403, "PERMISSION_DENIED", "Permission '%s' denied on resource "
		    "(or it may not exist).", perm);
		return NULL;
	}
	return g;
}

static void
iam_policy(struct cs *cs, struct cs_req *rq, struct cs_token *t)
{
	char *email = strndup(rq->seg[6], (size_t)(strstr(rq->seg[6], ":getIamPolicy") -
	    rq->seg[6]));
	struct cs_gsa *g = gsa_of(cs, rq, t, email, "iam.serviceAccounts.getIamPolicy");
	json_t *members, *v, *pol;
	size_t i;

	free(email);
	if (g == NULL)
		return;
	members = json_array();
	json_array_foreach(g->token_creators, i, v)
		if (json_is_string(v))
			json_array_append_new(members, json_sprintf("%s:%s",
			    strstr(json_string_value(v), "gserviceaccount.com") ? "serviceAccount" :
			    "user", json_string_value(v)));
	pol = json_pack("{s:i, s:s}", "version", 1, "etag", "BwYQ3xYzWb0=");
	if (json_array_size(members) > 0)
		json_object_set_new(pol, "bindings", json_pack("[{s:s, s:o}]", "role",
		    "roles/iam.serviceAccountTokenCreator", "members", members));
	else
		json_decref(members);
	cs_reply_json(rq, 200, pol);
}

static void
service_account(struct cs *cs, struct cs_req *rq)
{
	struct cs_token *t = google_auth(cs, rq, "");
	struct cs_gsa *g;

	if (t == NULL)
		return;
	/* seg: gcp iam v1 projects P serviceAccounts E[:getIamPolicy] */
	if (rq->nseg == 7 && strcmp(rq->method, "POST") == 0 &&
	    strstr(rq->seg[6], ":getIamPolicy") != NULL) {
		iam_policy(cs, rq, t);
		return;
	}
	if (rq->nseg != 7 || strcmp(rq->seg[3], "projects") || strcmp(rq->seg[5],
	    "serviceAccounts") || strcmp(rq->method, "GET")) {
		cs_reply_error(rq, 404, "NOT_FOUND", "Requested entity was not found.");
		return;
	}
	if ((g = gsa_of(cs, rq, t, rq->seg[6], "iam.serviceAccounts.get")) == NULL)
		return;
	cs_reply_json(rq, 200, json_pack("{s:o, s:s, s:s, s:s, s:s, s:s, s:s, s:s}", "name",
	    json_sprintf("projects/%s/serviceAccounts/%s", g->project, g->email), "projectId",
	    g->project, "uniqueId", g->unique_id, "email", g->email, "displayName",
	    g->display_name, "etag", "MDEwMjE5MjA=", "description", g->description,
	    "oauth2ClientId", g->unique_id));
}

void
cs_gcp_handle(struct cs *cs, struct cs_req *rq)
{
	struct cs_token *t;

	if (strcmp(rq->service, "gcp_oauth") == 0) {
		if (rq->nseg == 3 && strcmp(rq->seg[2], "token") == 0)
			oauth_token(cs, rq);
		else
			cs_reply_error(rq, 404, "not_found", "no such endpoint");
	} else if (strcmp(rq->service, "iamcredentials") == 0) {
		generate_token(cs, rq);
	} else if (strcmp(rq->service, "gcp_iam") == 0) {
		service_account(cs, rq);
	} else if (strcmp(rq->service, "gke") == 0) {
		if ((t = google_auth(cs, rq, "https://www.googleapis.com/auth/cloud-platform")))
			cs_gke_handle(cs, rq, t);
	} else if ((t = google_auth(cs, rq, "https://www.googleapis.com/auth/compute"))) {
		cs_gce_handle(cs, rq, t);
	}
}
