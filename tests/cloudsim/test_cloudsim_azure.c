/* cloudsim Azure: AD client-credentials tokens (secret, scope, tenant), workload identity
 * federation into a control-plane managed identity (client assertion, federated
 * credentials), ARM api-version, bearer and audience checks, agent pools with nextLink
 * paging, sku restrictions, usages, managed identity tags. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include "cs_harness.h"

#define AKS "test-aks-eus"
#define SUB "3f1b2c4d-0000-4000-8000-00000000a001"
#define SCOPE "https%3A%2F%2Fmanagement.azure.com%2F.default"
#define XSCOPE "api%3A%2F%2FAzureADTokenExchange%2F.default"
#define JWT_BEARER "urn%3Aietf%3Aparams%3Aoauth%3Aclient-assertion-type%3Ajwt-bearer"
#define OTHER_TENANT "9c0d1e2f-3a4b-4c5d-8e6f-7a8b9c0d1e2f"

static struct csh H;

static int
setup(void **state)
{
	(void)state;
	return csh_setup(&H, "20");
}

static struct csh_resp
login(const char *tenant, const char *id, const char *secret, const char *scope)
{
	char url[300], body[600];
	const char *hd[] = { "Content-Type: application/x-www-form-urlencoded", NULL };

	snprintf(url, sizeof(url), "%s/azure/login/%s/oauth2/v2.0/token", H.base, tenant);
	snprintf(body, sizeof(body), "grant_type=client_credentials&client_id=%s&client_secret=%s"
	    "&scope=%s", id, secret, scope);
	return csh_req("POST", url, hd, body, NULL);
}

static const char *
cp(const char *k)
{
	return json_string_value(json_object_get(json_object_get(json_object_get(csh_cluster(&H,
	    AKS), "iam"), "control_plane"), k));
}

/* fleetd's own token (client secret) for scope; the caller frees it. */
static char *
fleetd_token(const char *tenant, const char *scope)
{
	char *t = csh_env(&H, "FLEETD_AZURE_TENANT_ID"), *id = csh_env(&H,
	    "FLEETD_AZURE_CLIENT_ID"), *sec = csh_env(&H, "FLEETD_AZURE_CLIENT_SECRET"), *tok;
	struct csh_resp r = login(tenant ? tenant : t, id, sec, scope);

	assert_int_equal(r.status, 200);
	tok = strdup(json_string_value(json_object_get(r.json, "access_token")));
	csh_resp_free(&r);
	free(t);
	free(id);
	free(sec);
	return tok;
}

/* client_credentials with a client assertion, as a managed identity's federated
 * credential is used. */
static struct csh_resp
login_assertion(const char *tenant, const char *client_id, const char *assertion,
    const char *scope)
{
	char url[300], body[1200];
	const char *hd[] = { "Content-Type: application/x-www-form-urlencoded", NULL };

	snprintf(url, sizeof(url), "%s/azure/login/%s/oauth2/v2.0/token", H.base, tenant);
	snprintf(body, sizeof(body), "grant_type=client_credentials&client_id=%s&"
	    "client_assertion_type=%s&client_assertion=%s&scope=%s", client_id, JWT_BEARER,
	    assertion, scope);
	return csh_req("POST", url, hd, body, NULL);
}

static const char *
aad_error(struct csh_resp *r)
{
	return json_string_value(json_object_get(r->json, "error_description"));
}

/* The control-plane identity's token through federation (the test fleet has fleetd's
 * federated credential in place); the caller frees it. */
static char *
mi_token(void)
{
	char *x = fleetd_token(NULL, XSCOPE), *tok;
	struct csh_resp r = login_assertion(cp("tenant_id"), cp("client_id"), x, SCOPE);

	assert_int_equal(r.status, 200);
	tok = strdup(json_string_value(json_object_get(r.json, "access_token")));
	csh_resp_free(&r);
	free(x);
	return tok;
}

static struct csh_resp
arm(const char *tok, const char *path_and_query)
{
	char url[1200], auth[400];
	const char *hd[] = { auth, NULL };

	if (strncmp(path_and_query, "http", 4) == 0)
		snprintf(url, sizeof(url), "%s", path_and_query);
	else
		snprintf(url, sizeof(url), "%s/arm%s", H.base, path_and_query);
	snprintf(auth, sizeof(auth), "Authorization: Bearer %s", tok);
	return csh_req("GET", url, tok ? hd : NULL, NULL, NULL);
}

static void
test_login(void **state)
{
	char *tenant = csh_env(&H, "FLEETD_AZURE_TENANT_ID"), *id = csh_env(&H,
	    "FLEETD_AZURE_CLIENT_ID"), *sec = csh_env(&H, "FLEETD_AZURE_CLIENT_SECRET");
	struct csh_resp r;

	(void)state;
	r = login(tenant, id, sec, SCOPE);
	assert_int_equal(r.status, 200);
	assert_string_equal(json_string_value(json_object_get(r.json, "token_type")), "Bearer");
	csh_resp_free(&r);
	r = login(tenant, id, "wrong-secret", SCOPE);
	assert_int_equal(r.status, 401);
	assert_string_equal(json_string_value(json_object_get(r.json, "error")), "invalid_client");
	assert_non_null(strstr(json_string_value(json_object_get(r.json, "error_description")),
	    "AADSTS7000215"));
	csh_resp_free(&r);
	r = login(tenant, id, sec, "https%3A%2F%2Fgraph.microsoft.com%2F.default");
	assert_int_equal(r.status, 400);
	assert_string_equal(json_string_value(json_object_get(r.json, "error")), "invalid_scope");
	csh_resp_free(&r);
	r = login("00000000-0000-0000-0000-000000000000", id, sec, SCOPE);
	assert_int_equal(r.status, 400);
	csh_resp_free(&r);
	r = login(tenant, "11111111-2222-3333-4444-555555555555", sec, SCOPE);
	assert_int_equal(r.status, 400);
	assert_string_equal(json_string_value(json_object_get(r.json, "error")),
	    "unauthorized_client");
	csh_resp_free(&r);
	free(tenant);
	free(id);
	free(sec);
}

static void
test_arm(void **state)
{
	struct csh_resp r;
	char *tok, path[800], next[1200];
	int pages = 0, total = 0, restricted = 0;
	size_t i;
	json_t *v;

	(void)state;
	tok = mi_token();
	snprintf(path, sizeof(path), "/subscriptions/%s/resourceGroups/rg-fleet-test/providers/"
	    "Microsoft.ContainerService/managedClusters/%s/agentPools", SUB, AKS);
	r = arm(tok, path);
	assert_int_equal(r.status, 400);
	assert_string_equal(json_string_value(json_object_get(json_object_get(r.json, "error"),
	    "code")), "MissingApiVersionParameter");
	csh_resp_free(&r);
	snprintf(next, sizeof(next), "%s?api-version=2024-05-01", path);
	r = arm("bad-token", next);
	assert_int_equal(r.status, 401);
	assert_string_equal(json_string_value(json_object_get(json_object_get(r.json, "error"),
	    "code")), "InvalidAuthenticationToken");
	csh_resp_free(&r);
	r = arm(NULL, next);
	assert_int_equal(r.status, 401);
	csh_resp_free(&r);
	for (;;) {
		const char *nl;

		r = arm(tok, next);
		assert_int_equal(r.status, 200);
		json_array_foreach(json_object_get(r.json, "value"), i, v) {
			json_t *pr = json_object_get(v, "properties");

			total++;
			if (strcmp(json_string_value(json_object_get(v, "name")), "h100spot") == 0)
				assert_string_equal(json_string_value(json_object_get(pr,
				    "scaleSetPriority")), "Spot");
			if (strcmp(json_string_value(json_object_get(v, "name")), "h100") == 0) {
				assert_string_equal(json_string_value(json_object_get(pr, "vmSize")),
				    "Standard_ND96isr_H100_v5");
				assert_int_equal(json_integer_value(json_object_get(pr, "count")), 2);
				assert_int_equal(json_integer_value(json_object_get(pr, "maxCount")), 3);
			}
		}
		pages++;
		nl = json_string_value(json_object_get(r.json, "nextLink"));
		if (nl == NULL || pages > 10) {
			csh_resp_free(&r);
			break;
		}
		snprintf(next, sizeof(next), "%s", nl);
		csh_resp_free(&r);
	}
	assert_int_equal(total, 3);
	assert_int_equal(pages, 2);
	/* skus with the restriction from the fleet file */
	snprintf(next, sizeof(next), "/subscriptions/%s/providers/Microsoft.Compute/skus?"
	    "api-version=2021-07-01&$filter=location%%20eq%%20'eastus'", SUB);
	total = 0;
	for (pages = 0; pages < 20; pages++) {
		const char *nl;

		r = arm(tok, next);
		assert_int_equal(r.status, 200);
		json_array_foreach(json_object_get(r.json, "value"), i, v) {
			total++;
			if (json_array_size(json_object_get(v, "restrictions")) > 0) {
				restricted++;
				assert_string_equal(json_string_value(json_object_get(v, "name")),
				    "Standard_ND96amsr_A100_v4");
			}
		}
		nl = json_string_value(json_object_get(r.json, "nextLink"));
		if (nl == NULL) {
			csh_resp_free(&r);
			break;
		}
		snprintf(next, sizeof(next), "%s", nl);
		csh_resp_free(&r);
	}
	assert_true(total >= 4);
	assert_int_equal(restricted, 1);
	/* usages: the H100 family counts the two regular nodes' vCPUs against its limit */
	snprintf(next, sizeof(next), "/subscriptions/%s/providers/Microsoft.Compute/locations/"
	    "eastus/usages?api-version=2023-07-01", SUB);
	total = 0;
	for (pages = 0; pages < 20; pages++) {
		const char *nl;

		r = arm(tok, next);
		json_array_foreach(json_object_get(r.json, "value"), i, v)
			if (strcmp(json_string_value(json_object_get(json_object_get(v, "name"),
			    "value")), "standardNDSH100v5Family") == 0) {
				assert_true(json_number_value(json_object_get(v, "currentValue")) == 192);
				assert_true(json_number_value(json_object_get(v, "limit")) == 384);
				total++;
			}
		nl = json_string_value(json_object_get(r.json, "nextLink"));
		if (nl == NULL) {
			csh_resp_free(&r);
			break;
		}
		snprintf(next, sizeof(next), "%s", nl);
		csh_resp_free(&r);
	}
	assert_int_equal(total, 1);
	/* managed identity tags */
	snprintf(path, sizeof(path), "{\"provider\":\"azure\",\"resource_id\":\"%s\",\"tags\":"
	    "{\"fleet.io/cloud-id\":\"cloud-9\"}}", json_string_value(json_object_get(
	    json_object_get(json_object_get(csh_cluster(&H, AKS), "iam"), "cluster_role"),
	    "resource_id")));
	r = csh_sim(&H, "POST", "/_sim/iam", path);
	assert_int_equal(r.status, 200);
	csh_resp_free(&r);
	snprintf(next, sizeof(next), "%s?api-version=2023-01-31", json_string_value(
	    json_object_get(json_object_get(json_object_get(csh_cluster(&H, AKS), "iam"),
	    "cluster_role"), "resource_id")));
	r = arm(tok, next);
	assert_int_equal(r.status, 200);
	assert_string_equal(json_string_value(json_object_get(json_object_get(r.json, "tags"),
	    "fleet.io/cloud-id")), "cloud-9");
	csh_resp_free(&r);
	r = arm(tok, "/subscriptions/00000000-0000-0000-0000-000000000000/providers/"
	    "Microsoft.Compute/skus?api-version=2021-07-01");
	assert_int_equal(r.status, 404);
	assert_string_equal(json_string_value(json_object_get(json_object_get(r.json, "error"),
	    "code")), "SubscriptionNotFound");
	csh_resp_free(&r);
	free(tok);
}

/* POST /_sim/iam for the control-plane identity with extra fields; returns the status. */
static long
sim_cp(const char *fields)
{
	char body[1200];
	struct csh_resp r;
	long st;

	snprintf(body, sizeof(body), "{\"provider\":\"azure\",\"resource_id\":\"%s\",%s}",
	    cp("resource_id"), fields);
	r = csh_sim(&H, "POST", "/_sim/iam", body);
	st = r.status;
	csh_resp_free(&r);
	return st;
}

static void
test_federation(void **state)
{
	char *x = fleetd_token(NULL, XSCOPE), *armtok = fleetd_token(NULL, SCOPE),
	    *other = fleetd_token(OTHER_TENANT, XSCOPE), *tok, path[800], fields[600];
	const char *fed_sub = json_string_value(json_object_get(json_object_get(json_object_get(
	    csh_cluster(&H, AKS), "iam"), "federation"), "subject"));
	struct csh_resp r;

	(void)state;
	assert_non_null(fed_sub);
	assert_non_null(cp("resource_id"));
	assert_string_not_equal(cp("client_id"), cp("principal_id"));
	/* the exchange token is no ARM token */
	snprintf(path, sizeof(path), "%s?api-version=2023-01-31", cp("resource_id"));
	r = arm(x, path);
	assert_int_equal(r.status, 401);
	assert_non_null(strstr(r.body, "wrong audience"));
	csh_resp_free(&r);
	/* happy path: the managed identity's token reads the identity itself */
	r = login_assertion(cp("tenant_id"), cp("client_id"), x, SCOPE);
	assert_int_equal(r.status, 200);
	tok = strdup(json_string_value(json_object_get(r.json, "access_token")));
	csh_resp_free(&r);
	r = arm(tok, path);
	assert_int_equal(r.status, 200);
	assert_string_equal(json_string_value(json_object_get(json_object_get(r.json,
	    "properties"), "clientId")), cp("client_id"));
	csh_resp_free(&r);
	snprintf(path, sizeof(path), "%s/federatedIdentityCredentials?api-version=2023-01-31",
	    cp("resource_id"));
	r = arm(tok, path);
	assert_int_equal(r.status, 200);
	assert_string_equal(json_string_value(json_object_get(json_object_get(json_array_get(
	    json_object_get(r.json, "value"), 0), "properties"), "subject")), fed_sub);
	csh_resp_free(&r);
	free(tok);
	/* fleetd's ARM token has the right issuer and subject but the wrong audience */
	r = login_assertion(cp("tenant_id"), cp("client_id"), armtok, SCOPE);
	assert_int_equal(r.status, 400);
	assert_non_null(strstr(aad_error(&r), "AADSTS700212"));
	csh_resp_free(&r);
	/* an assertion from another tenant: issuer does not match */
	r = login_assertion(cp("tenant_id"), cp("client_id"), other, SCOPE);
	assert_int_equal(r.status, 400);
	assert_non_null(strstr(aad_error(&r), "AADSTS70021"));
	assert_non_null(strstr(aad_error(&r), OTHER_TENANT));
	csh_resp_free(&r);
	/* the identity lives in its subscription's tenant only */
	r = login_assertion(OTHER_TENANT, cp("client_id"), x, SCOPE);
	assert_int_equal(r.status, 400);
	assert_string_equal(json_string_value(json_object_get(r.json, "error")),
	    "unauthorized_client");
	csh_resp_free(&r);
	r = login_assertion(cp("tenant_id"), cp("client_id"), "eyJhbGciOiJub25lIn0.e30.", SCOPE);
	assert_int_equal(r.status, 401);
	assert_non_null(strstr(aad_error(&r), "AADSTS50027"));
	csh_resp_free(&r);
	/* no federated credential: refused, naming the assertion's issuer and subject */
	assert_int_equal(sim_cp("\"federated_identity_credentials\":[]"), 200);
	r = login_assertion(cp("tenant_id"), cp("client_id"), x, SCOPE);
	assert_int_equal(r.status, 400);
	assert_non_null(strstr(aad_error(&r), "AADSTS70021"));
	assert_non_null(strstr(aad_error(&r), fed_sub));
	csh_resp_free(&r);
	/* malformed credentials are refused and change nothing */
	assert_int_equal(sim_cp("\"federated_identity_credentials\":[{\"name\":\"f\","
	    "\"issuer\":\"http://x\",\"subject\":\"s\",\"audiences\":[\"a\"]}]"), 400);
	assert_int_equal(sim_cp("\"federated_subject\":\"s\",\"federated_issuer\":\"http://x\""),
	    400);
	/* Terraform's federated credential, as iam.required names it */
	snprintf(fields, sizeof(fields), "\"federated_subject\":\"%s\"", fed_sub);
	assert_int_equal(sim_cp(fields), 200);
	r = login_assertion(cp("tenant_id"), cp("client_id"), x, SCOPE);
	assert_int_equal(r.status, 200);
	csh_resp_free(&r);
	/* an expired assertion */
	r = csh_sim(&H, "POST", "/_sim/expire-tokens", "{\"provider\":\"azure\"}");
	csh_resp_free(&r);
	r = login_assertion(cp("tenant_id"), cp("client_id"), x, SCOPE);
	assert_int_equal(r.status, 400);
	assert_non_null(strstr(aad_error(&r), "AADSTS700024"));
	csh_resp_free(&r);
	free(x);
	free(armtok);
	free(other);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_login),
		cmocka_unit_test(test_arm),
		cmocka_unit_test(test_federation),
	};

	return cmocka_run_group_tests(tests, setup, harness_group_teardown);
}
