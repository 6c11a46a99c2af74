/* creds_flow: the credential exchanges as chains of batch requests, so a refresh of many
 * clouds runs concurrently on one http_batch; prov_creds_get runs one chain synchronously. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/config.h"
#include "core/crypto.h"
#include "providers/creds_int.h"
#include "providers/provider.h"

#define GCP_SCOPE	"https://www.googleapis.com/auth/cloud-platform"
#define ARM_SCOPE	"https://management.azure.com/.default"
#define XCHG_SCOPE	"api://AzureADTokenExchange/.default"
#define API_MSI		"2023-01-31"
#define BASE_GCP	"fleetd-gcp"
#define BASE_AZURE	"fleetd-azure"		/* fleetd's ARM token, per tenant */
#define BASE_XCHG	"fleetd-azure-xchg"	/* fleetd's token-exchange assertion */
#define MI_IDS		"fleetd-azure-mi"	/* identity resource id -> client id */

struct chain {
	struct prov_cloud	 cloud;
	char			 role[384];
	struct prov_creds	*out;
	struct prov_creds	 base;
	char			 mi_client[64];	/* aks: the identity's client id */
};

static void
chain_fail(struct prov_fetch *f, struct chain *ch, const struct err *e)
{
	prov_fetch_fail(f, e);
	memset(ch, 0, sizeof(*ch));
	free(ch);
}

/* The chain's last step filled *ch->out: cached for the cloud and role; ch wiped and
 * freed. */
static void
chain_done(struct chain *ch)
{
	creds_cache_put(ch->cloud.id, ch->role, ch->out);
	memset(ch, 0, sizeof(*ch));
	free(ch);
}

void
creds_json_error(const struct http_resp *r, char *out, size_t n)
{
	json_t *j = r->body ? json_loadb(r->body, r->body_len, 0, NULL) : NULL, *er;
	const char *m = NULL;

	er = json_object_get(j, "error");
	if (json_is_object(er))
		m = json_string_value(json_object_get(er, "message"));
	if (m == NULL)
		m = json_string_value(json_object_get(j, "error_description"));
	if (m == NULL)
		m = json_string_value(er);
	snprintf(out, n, "status %ld%s%s", r->status, m ? ": " : "", m ? m : "");
	json_decref(j);
}

bool
prov_parse_token(const char *body, size_t len, struct prov_creds *out, struct err *e)
{
	json_t *j = body ? json_loadb(body, len, 0, NULL) : NULL, *v;
	const char *tok;
	double exp = 0;

	tok = json_string_value(json_object_get(j, "access_token"));
	if (tok == NULL)
		tok = json_string_value(json_object_get(j, "accessToken"));
	v = json_object_get(j, "expires_in");
	if (json_is_integer(v) && json_integer_value(v) > 0 && json_integer_value(v) < 10000000)
		exp = (double)time(NULL) + (double)json_integer_value(v);
	else if (json_is_string(v)) {
		double d = atof(json_string_value(v));

		if (isfinite(d) && d > 0 && d < 1e7)	/* at most ~4 months, as no token lives longer */
			exp = (double)time(NULL) + d;
	}
	else if (json_is_string(json_object_get(j, "expireTime")))
		exp = creds_parse_time(json_string_value(json_object_get(j, "expireTime")));
	if (tok == NULL || tok[0] == '\0' || strlen(tok) >= sizeof(out->bearer) || exp <= 0) {
		json_decref(j);
		return err_set(e, 502, "prov.bad_answer", "token answer lacks a token or expiry");
	}
	memset(out, 0, sizeof(*out));
	snprintf(out->bearer, sizeof(out->bearer), "%s", tok);
	out->expires = exp;
	json_decref(j);
	return true;
}

/* Common handling of a token answer: fills c or fails the chain (then false). */
static bool
token_step(struct prov_fetch *f, struct chain *ch, struct http_resp *r, const struct err *e,
    const char *what, struct prov_creds *c)
{
	struct err pe = { 0 };
	char why[400];

	if (e != NULL) {
		chain_fail(f, ch, e);
		return false;
	}
	if (r->status != 200) {
		creds_json_error(r, why, sizeof(why));
		if (r->status == 401 || r->status == 403 || r->status == 400)
			err_set(&pe, 401, "prov.unauthorized", "%s refused: %s", what, why);
		else
			prov_status_err(r, what, &pe);
		chain_fail(f, ch, &pe);
		return false;
	}
	if (!prov_parse_token(r->body, r->body_len, c, &pe)) {
		chain_fail(f, ch, &pe);
		return false;
	}
	return true;
}

/* ---- GKE */

static void gcp_impersonate_done(struct prov_fetch *, void *, struct http_resp *,
    const struct err *);

static bool
gcp_impersonate(struct prov_fetch *f, struct chain *ch)
{
	char url[1024];
	char *body = NULL;
	struct http_req rq = { 0 };
	bool ok;
	json_t *j;

	snprintf(url, sizeof(url), "%s/v1/projects/-/serviceAccounts/%s:generateAccessToken",
	    cfg.gcp_iamcredentials_url, ch->role);
	j = json_pack("{s:[s], s:s}", "scope", GCP_SCOPE, "lifetime", "3600s");

	body = json_dumps(j, JSON_COMPACT);
	json_decref(j);
	rq.method = "POST";
	rq.url = url;
	rq.body = body;
	rq.body_len = strlen(body);
	rq.bearer = ch->base.bearer;
	rq.headers = (struct http_header[]){ { "Content-Type", "application/json" } };
	rq.nheaders = 1;
	ok = prov_fetch_add(f, &rq, gcp_impersonate_done, ch);
	free(body);
	return ok;
}

static void
gcp_impersonate_done(struct prov_fetch *f, void *ctx, struct http_resp *r,
    const struct err *e)
{
	struct chain *ch = ctx;

	if (token_step(f, ch, r, e, "gcp generateAccessToken", ch->out))
		chain_done(ch);
}

/* POSTs body (form-encoded, holding a secret) to url as a step of f; wipes and frees body
 * whatever happens. */
static bool
form_post(struct prov_fetch *f, const char *url, char *body, prov_step_fn fn, void *ctx)
{
	struct http_req rq = { 0 };
	bool ok;

	rq.method = "POST";
	rq.url = url;
	rq.body = body;
	rq.body_len = strlen(body);
	rq.headers = (struct http_header[]){ { "Content-Type",
	    "application/x-www-form-urlencoded" } };
	rq.nheaders = 1;
	ok = prov_fetch_add(f, &rq, fn, ctx);
	memset(body, 0, strlen(body));
	free(body);
	return ok;
}

static void
gcp_oauth_done(struct prov_fetch *f, void *ctx, struct http_resp *r, const struct err *e)
{
	struct chain *ch = ctx;

	if (!token_step(f, ch, r, e, "gcp oauth token", &ch->base))
		return;
	creds_cache_put(BASE_GCP, "", &ch->base);
	if (ch->out == NULL) {	/* base token only */
		free(ch);
		return;
	}
	if (!gcp_impersonate(f, ch))
		free(ch);
}

static bool
gcp_oauth(struct prov_fetch *f, struct chain *ch, struct err *e)
{
	json_t *key = NULL, *claims;
	const char *email, *pem, *aud, *kid;
	char *jwt = NULL, *body = NULL, *esc, url[1024];
	json_error_t je;
	time_t now = time(NULL);
	bool ok = false;

	key = cfg.gcp_sa_key_file ? json_load_file(cfg.gcp_sa_key_file, 0, &je) : NULL;
	email = json_string_value(json_object_get(key, "client_email"));
	pem = json_string_value(json_object_get(key, "private_key"));
	kid = json_string_value(json_object_get(key, "private_key_id"));
	aud = json_string_value(json_object_get(key, "token_uri"));
	snprintf(url, sizeof(url), "%s/token", cfg.gcp_oauth_url ? cfg.gcp_oauth_url : "");
	if (email == NULL || pem == NULL) {
		err_set(e, 500, "prov.gcp_key", "gcp service-account key file missing or invalid");
		goto cleanup;
	}
	claims = json_pack("{s:s, s:s, s:s, s:I, s:I}", "iss", email, "scope", GCP_SCOPE,
	    "aud", aud ? aud : url, "iat", (json_int_t)now, "exp", (json_int_t)now + 3600);
	jwt = crypto_jwt_sign(pem, kid, claims, e);
	json_decref(claims);
	if (jwt == NULL)
		goto cleanup;
	esc = creds_form_escape(jwt);
	if (asprintf(&body, "grant_type=urn%%3Aietf%%3Aparams%%3Aoauth%%3Agrant-type%%3Ajwt-"
	    "bearer&assertion=%s", esc) < 0)
		abort();
	creds_form_free(esc);
	ok = form_post(f, url, body, gcp_oauth_done, ch);
	body = NULL;
	if (!ok)
		*e = f->err;
cleanup:
	free(jwt);
	free(body);
	json_decref(key);
	return ok;
}

/* ---- AKS
 *
 * fleetd signs in as the cloud's control-plane user-assigned managed identity by workload
 * identity federation, Entra ID being the external issuer (Microsoft's documented
 * "federated identity credential" flow with a Microsoft Entra token as the assertion):
 *   1. fleetd's own app (client secret, its home tenant) gets a token for
 *      api://AzureADTokenExchange: issuer login.microsoftonline.com/{fleetd tenant}/v2.0,
 *      subject fleetd's service principal — what the identity's federated credential
 *      (iam.required) trusts;
 *   2. that token is the client_assertion of a client_credentials request in the cloud's
 *      tenant, client_id = the identity's client id, scope ARM: an ARM token of the
 *      identity, holding only the cloud's role assignments.
 * The pair names the identity by resource id; its client id is read once from ARM with
 * fleetd's own token in the cloud's tenant (fleetd's multi-tenant app, Reader on that one
 * identity) and cached. */

static bool aks_exchange(struct prov_fetch *f, struct chain *ch);
static bool mi_lookup(struct prov_fetch *f, struct chain *ch);

static bool
azure_app_token(struct prov_fetch *f, struct chain *ch, const char *tenant, const char *scope,
    prov_step_fn done)
{
	char url[1024], *body = NULL, *id, *sec, *sc;

	snprintf(url, sizeof(url), "%s/%s/oauth2/v2.0/token", cfg.azure_login_url, tenant);
	id = creds_form_escape(cfg.azure_client_id);
	sec = creds_form_escape(cfg.azure_client_secret);
	sc = creds_form_escape(scope);
	if (asprintf(&body, "grant_type=client_credentials&client_id=%s&client_secret=%s&"
	    "scope=%s", id, sec, sc) < 0)
		abort();
	creds_form_free(id);
	creds_form_free(sec);
	creds_form_free(sc);
	return form_post(f, url, body, done, ch);
}

static void
aks_assert_done(struct prov_fetch *f, void *ctx, struct http_resp *r, const struct err *e)
{
	struct chain *ch = ctx;

	if (token_step(f, ch, r, e, "azure federated sign-in", ch->out))
		chain_done(ch);
}

/* Step 2: fleetd's exchange token (in ch->base) as the identity's client assertion. */
static bool
aks_assert(struct prov_fetch *f, struct chain *ch)
{
	char url[1024], *body = NULL, *id, *as, *sc;

	snprintf(url, sizeof(url), "%s/%s/oauth2/v2.0/token", cfg.azure_login_url,
	    ch->cloud.tenant);
	id = creds_form_escape(ch->mi_client);
	as = creds_form_escape(ch->base.bearer);
	sc = creds_form_escape(ARM_SCOPE);
	if (asprintf(&body, "grant_type=client_credentials&client_id=%s&client_assertion_type="
	    "urn%%3Aietf%%3Aparams%%3Aoauth%%3Aclient-assertion-type%%3Ajwt-bearer&"
	    "client_assertion=%s&scope=%s", id, as, sc) < 0)
		abort();
	creds_form_free(id);
	creds_form_free(as);
	creds_form_free(sc);
	return form_post(f, url, body, aks_assert_done, ch);
}

static void
xchg_done(struct prov_fetch *f, void *ctx, struct http_resp *r, const struct err *e)
{
	struct chain *ch = ctx;

	if (!token_step(f, ch, r, e, "azure token exchange assertion", &ch->base))
		return;
	creds_cache_put(BASE_XCHG, "", &ch->base);
	if (!aks_assert(f, ch))
		free(ch);
}

/* Step 1: fleetd's own token for the exchange audience (cached). */
static bool
aks_exchange(struct prov_fetch *f, struct chain *ch)
{
	if (creds_cache_get(BASE_XCHG, "", &ch->base))
		return aks_assert(f, ch);
	return azure_app_token(f, ch, cfg.azure_tenant ? cfg.azure_tenant : "common",
	    XCHG_SCOPE, xchg_done);
}

static void
mi_lookup_done(struct prov_fetch *f, void *ctx, struct http_resp *r, const struct err *e)
{
	struct chain *ch = ctx;
	struct prov_creds id = { 0 };
	struct err pe = { 0 };
	json_t *j = NULL;
	const char *cid;
	char why[400];

	if (e != NULL) {
		chain_fail(f, ch, e);
		return;
	}
	if (r->status != 200) {
		creds_json_error(r, why, sizeof(why));
		err_set(&pe, r->status == 404 ? 404 : 401, r->status == 404 ? "prov.not_found" :
		    "prov.unauthorized", "managed identity %s cannot be read: %s", ch->role, why);
		chain_fail(f, ch, &pe);
		return;
	}
	j = json_loadb(r->body ? r->body : "", r->body_len, 0, NULL);
	cid = json_string_value(json_object_get(json_object_get(j, "properties"), "clientId"));
	if (cid == NULL || cid[0] == '\0' || strlen(cid) >= sizeof(ch->mi_client)) {
		json_decref(j);
		err_set(&pe, 502, "prov.bad_answer", "managed identity answer lacks a client id");
		chain_fail(f, ch, &pe);
		return;
	}
	snprintf(ch->mi_client, sizeof(ch->mi_client), "%s", cid);
	json_decref(j);
	snprintf(id.bearer, sizeof(id.bearer), "%s", ch->mi_client);
	id.expires = (double)time(NULL) + 86400;
	creds_cache_put(MI_IDS, ch->role, &id);
	if (!aks_exchange(f, ch))
		free(ch);
}

static bool
mi_lookup(struct prov_fetch *f, struct chain *ch)
{
	char url[1024];
	struct http_req rq = { 0 };

	snprintf(url, sizeof(url), "%s%s?api-version=" API_MSI, cfg.arm_url, ch->role);
	rq.url = url;
	rq.bearer = ch->base.bearer;
	return prov_fetch_add(f, &rq, mi_lookup_done, ch);
}

static void
arm_base_done(struct prov_fetch *f, void *ctx, struct http_resp *r, const struct err *e)
{
	struct chain *ch = ctx;

	if (!token_step(f, ch, r, e, "azure token", &ch->base))
		return;
	creds_cache_put(BASE_AZURE, ch->cloud.tenant, &ch->base);
	if (ch->out == NULL) {	/* base token only */
		memset(ch, 0, sizeof(*ch));
		free(ch);
		return;
	}
	if (!mi_lookup(f, ch))
		free(ch);
}

static void
set_client(struct chain *ch, const char *v)
{
	size_t n = strnlen(v, sizeof(ch->mi_client) - 1);

	memcpy(ch->mi_client, v, n);
	ch->mi_client[n] = '\0';
}

static bool
aks_start(struct prov_fetch *f, struct chain *ch)
{
	struct prov_creds id;

	if (strchr(ch->role, '/') == NULL) {	/* already a client id */
		set_client(ch, ch->role);
		return aks_exchange(f, ch);
	}
	if (creds_cache_get(MI_IDS, ch->role, &id)) {
		set_client(ch, id.bearer);
		return aks_exchange(f, ch);
	}
	if (creds_cache_get(BASE_AZURE, ch->cloud.tenant, &ch->base))
		return mi_lookup(f, ch);
	return azure_app_token(f, ch, ch->cloud.tenant, ARM_SCOPE, arm_base_done);
}

/* ---- HyperPod */

static void
sts_done(struct prov_fetch *f, void *ctx, struct http_resp *r, const struct err *e)
{
	struct chain *ch = ctx;
	struct err pe = { 0 };
	char why[512];

	if (e != NULL) {
		chain_fail(f, ch, e);
		return;
	}
	if (r->status != 200) {
		creds_aws_error(r, why, sizeof(why));
		if (r->status == 403 || r->status == 401 || r->status == 400)
			err_set(&pe, 401, "prov.unauthorized", "sts assume role refused: %s", why);
		else
			prov_status_err(r, "sts assume role", &pe);
		chain_fail(f, ch, &pe);
		return;
	}
	if (!prov_aws_parse_assume_role(r->body, r->body_len, ch->out, &pe))
		chain_fail(f, ch, &pe);
	else
		chain_done(ch);
}

static bool
sts_assume(struct prov_fetch *f, struct chain *ch, struct err *e)
{
	struct prov_aws_sig *sig = calloc(1, sizeof(*sig));
	char *body = NULL, *arn = creds_form_escape(ch->role),
	    *ext = creds_form_escape(ch->cloud.external_id);
	struct http_req rq = { 0 };
	const char *ct = "application/x-www-form-urlencoded; charset=utf-8";
	bool ok = false;

	if (sig == NULL)
		abort();
	/* no external id: the negative check of verification (it must be denied) */
	if (asprintf(&body, "Action=AssumeRole&Version=2011-06-15&RoleArn=%s&"
	    "RoleSessionName=fleetd-%.8s%s%s&DurationSeconds=3600", arn,
	    ch->cloud.id[0] ? ch->cloud.id : "verify", ext[0] ? "&ExternalId=" : "", ext) < 0)
		abort();
	if (cfg.aws_sts_url == NULL) {
		err_set(e, 500, "prov.no_sts_url", "aws sts endpoint not configured");
		goto cleanup;
	}
	if (!prov_aws_sign("POST", cfg.aws_sts_url, ch->cloud.region[0] ? ch->cloud.region :
	    "us-east-1", "sts", cfg.aws_access_key_id ? cfg.aws_access_key_id : "",
	    cfg.aws_secret_access_key ? cfg.aws_secret_access_key : "", NULL, ct, NULL, body,
	    sig, e))
		goto cleanup;
	rq.method = "POST";
	rq.url = cfg.aws_sts_url;
	rq.body = body;
	rq.body_len = strlen(body);
	rq.headers = sig->h;
	rq.nheaders = sig->n;
	ok = prov_fetch_add(f, &rq, sts_done, ch);
	if (!ok)
		*e = f->err;
cleanup:
	creds_form_free(arn);
	creds_form_free(ext);
	free(body);
	free(sig);
	return ok;
}

/* ---- entry points */

bool
prov_creds_begin(struct prov_fetch *f, const struct prov_cloud *c, const char *role,
    struct prov_creds *out, struct err *e)
{
	struct chain *ch;
	bool ok;

	if (role == NULL)
		role = c->control_plane_role;
	if (role[0] == '\0')
		return err_set(e, 409, "prov.no_identity", "cloud has no control-plane identity");
	if (creds_cache_get(c->id, role, out))
		return true;
	ch = calloc(1, sizeof(*ch));
	if (ch == NULL)
		abort();
	ch->cloud = *c;
	snprintf(ch->role, sizeof(ch->role), "%s", role);
	ch->out = out;
	if (strcmp(c->provider, "gke") == 0) {
		if (creds_cache_get(BASE_GCP, "", &ch->base))
			ok = gcp_impersonate(f, ch);
		else
			ok = gcp_oauth(f, ch, e);
	} else if (strcmp(c->provider, "aks") == 0) {
		if (c->tenant[0] == '\0') {
			free(ch);
			return err_set(e, 400, "prov.bad_account", "aks cloud has no tenant");
		}
		ok = aks_start(f, ch);
	} else if (strcmp(c->provider, "hyperpod") == 0) {
		ok = sts_assume(f, ch, e);
	} else {
		ok = err_set(e, 400, "prov.unknown_provider", "unknown provider");
	}
	if (!ok) {
		if (f->failed)
			*e = f->err;
		free(ch);
	}
	return ok;
}

static bool
run_one(const struct prov_cloud *c, const char *role, struct prov_creds *out,
    bool base_only, struct err *e)
{
	struct prov_fetch f;
	struct chain *ch;
	bool ok = false;

	prov_fetch_init(&f, http_batch_new(1));
	if (f.b == NULL)
		return err_set(e, 500, "prov.oom", "out of memory");
	if (base_only) {
		ch = calloc(1, sizeof(*ch));
		if (ch == NULL)
			abort();
		ch->cloud = *c;
		ok = strcmp(c->provider, "gke") == 0 ? gcp_oauth(&f, ch, e) :
		    azure_app_token(&f, ch, c->tenant, ARM_SCOPE, arm_base_done);
		if (!ok) {
			if (f.failed)
				*e = f.err;
			free(ch);
			goto cleanup;
		}
	} else if (!prov_creds_begin(&f, c, role, out, e)) {
		goto cleanup;
	}
	ok = prov_fetch_run_sync(&f, e);
cleanup:
	http_batch_free(f.b);
	return ok;
}

bool
prov_creds_get(const struct prov_cloud *c, const char *role, struct prov_creds *out,
    struct err *e)
{
	if (creds_cache_get(c->id, role ? role : c->control_plane_role, out))
		return true;
	return run_one(c, role, out, false, e);
}

bool
prov_gcp_base_token(struct prov_creds *out, struct err *e)
{
	struct prov_cloud c = { .provider = "gke" };

	if (creds_cache_get(BASE_GCP, "", out))
		return true;
	if (!run_one(&c, NULL, NULL, true, e))
		return false;
	return creds_cache_get(BASE_GCP, "", out) ||
	    err_set(e, 502, "prov.no_token", "gcp token not obtained");
}

bool
creds_azure_arm_token(const char *tenant, struct prov_creds *out, struct err *e)
{
	struct prov_cloud c = { .provider = "aks" };

	snprintf(c.tenant, sizeof(c.tenant), "%s", tenant);
	if (creds_cache_get(BASE_AZURE, c.tenant, out))
		return true;
	if (!run_one(&c, NULL, NULL, true, e))
		return false;
	return creds_cache_get(BASE_AZURE, c.tenant, out) ||
	    err_set(e, 502, "prov.no_token", "azure token not obtained");
}
