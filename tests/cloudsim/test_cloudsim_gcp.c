/* cloudsim Google: RS256 JWT-bearer token endpoint (RFC 7515 A.2 key, audience, expiry,
 * lifetime, signature), impersonation bindings, GKE node pools, Compute quotas and paged
 * reservations, service account introspection. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include "cs_harness.h"
#include "core/crypto.h"

#define GKE "test-gke-usc1"
#define AUD "https://oauth2.googleapis.com/token"
#define CP_SCOPE "https://www.googleapis.com/auth/cloud-platform"

static struct csh H;
static char *KEY, *EMAIL;

static int
setup(void **state)
{
	char path[400];
	json_t *k;

	(void)state;
	if (csh_setup(&H, "20") != 0)
		return -1;
	snprintf(path, sizeof(path), "%s/gcp-fleetd-key.json", H.dir);
	k = json_load_file(path, 0, NULL);
	KEY = harness_keep(strdup(json_string_value(json_object_get(k, "private_key"))));
	EMAIL = harness_keep(strdup(json_string_value(json_object_get(k, "client_email"))));
	json_decref(k);
	return 0;
}

static struct csh_resp
token_req(const char *jwt)
{
	char url[200], *body = NULL;
	const char *hd[] = { "Content-Type: application/x-www-form-urlencoded", NULL };
	struct csh_resp r;

	snprintf(url, sizeof(url), "%s/gcp/oauth2/token", H.base);
	if (asprintf(&body, "grant_type=urn%%3Aietf%%3Aparams%%3Aoauth%%3Agrant-type%%3Ajwt-bearer"
	    "&assertion=%s", jwt) < 0)
		fail();
	r = csh_req("POST", url, hd, body, NULL);
	free(body);
	return r;
}

static char *
jwt(const char *aud, long iat_off, long life, const char *scope)
{
	long now = (long)time(NULL);
	json_t *c = json_pack("{s:s, s:s, s:s, s:I, s:I}", "iss", EMAIL, "scope", scope, "aud",
	    aud, "iat", (json_int_t)(now + iat_off), "exp", (json_int_t)(now + iat_off + life));
	char *t = crypto_jwt_sign(KEY, "kid-1", c, NULL);

	json_decref(c);
	assert_non_null(t);
	return t;
}

static const char *
err_of(struct csh_resp *r)
{
	const char *d = json_string_value(json_object_get(r->json, "error_description"));

	return d ? d : "";
}

/* An access token for fleetd's own service account. */
static char *
fleetd_token(void)
{
	char *j = jwt(AUD, 0, 3600, CP_SCOPE), *t;
	struct csh_resp r = token_req(j);

	assert_int_equal(r.status, 200);
	assert_string_equal(json_string_value(json_object_get(r.json, "token_type")), "Bearer");
	t = strdup(json_string_value(json_object_get(r.json, "access_token")));
	csh_resp_free(&r);
	free(j);
	return t;
}

static void
test_jwt_bearer(void **state)
{
	struct csh_resp r;
	char *j, *t;
	json_t *v;

	(void)state;
	t = fleetd_token();
	free(t);
	j = jwt("https://example.com/token", 0, 3600, CP_SCOPE);
	r = token_req(j);
	assert_int_equal(r.status, 400);
	assert_string_equal(json_string_value(json_object_get(r.json, "error")), "invalid_grant");
	assert_non_null(strstr(err_of(&r), "audience"));
	csh_resp_free(&r);
	free(j);
	j = jwt(AUD, -7300, 3600, CP_SCOPE);	/* expired an hour ago */
	r = token_req(j);
	assert_int_equal(r.status, 400);
	assert_non_null(strstr(err_of(&r), "short-lived"));
	csh_resp_free(&r);
	free(j);
	j = jwt(AUD, 0, 7200, CP_SCOPE);	/* lives longer than an hour */
	r = token_req(j);
	assert_int_equal(r.status, 400);
	csh_resp_free(&r);
	free(j);
	j = jwt(AUD, 0, 3600, "");
	r = token_req(j);
	assert_int_equal(r.status, 400);
	assert_string_equal(json_string_value(json_object_get(r.json, "error")), "invalid_scope");
	csh_resp_free(&r);
	free(j);
	j = jwt(AUD, 0, 3600, CP_SCOPE);
	j[strlen(j) - 3] = j[strlen(j) - 3] == 'A' ? 'B' : 'A';
	r = token_req(j);
	assert_int_equal(r.status, 400);
	assert_string_equal(err_of(&r), "Invalid JWT Signature.");
	csh_resp_free(&r);
	free(j);
	/* Google's documented example claims, signed with the RFC 7515 A.2 key: the signature
	 * verifies (the answer is about the 2012 timestamps, not the signature) */
	v = json_load_file(FLEETD_SOURCE_DIR "/../shared/testvectors/jws/google-sa-jwt-bearer.json",
	    0, NULL);
	j = strdup(json_string_value(json_object_get(json_object_get(v, "derived_example"),
	    "jwt")));
	json_decref(v);
	r = token_req(j);
	assert_int_equal(r.status, 400);
	assert_non_null(strstr(err_of(&r), "short-lived"));
	csh_resp_free(&r);
	j[strlen(j) - 10] = j[strlen(j) - 10] == 'A' ? 'B' : 'A';
	r = token_req(j);
	assert_string_equal(err_of(&r), "Invalid JWT Signature.");
	csh_resp_free(&r);
	free(j);
	r = token_req("not.a.jwt");
	assert_int_equal(r.status, 400);
	csh_resp_free(&r);
}

static struct csh_resp
gget(const char *tok, const char *path, const char *method, const char *body)
{
	char url[1024], auth[300];
	const char *hd[] = { auth, "Content-Type: application/json", NULL };

	snprintf(url, sizeof(url), "%s%s", H.base, path);
	snprintf(auth, sizeof(auth), "Authorization: Bearer %s", tok);
	return csh_req(method, url, hd, body, NULL);
}

static const char *
iam(const char *which)
{
	return json_string_value(json_object_get(json_object_get(json_object_get(csh_cluster(&H,
	    GKE), "iam"), which), "service_account"));
}

static void
test_impersonation_and_gke(void **state)
{
	char *ft = fleetd_token(), *cp, path[700];
	struct csh_resp r;
	json_t *p, *h100 = NULL;
	size_t i;
	int pages = 0, total = 0;

	(void)state;
	snprintf(path, sizeof(path), "/gcp/iamcredentials/v1/projects/-/serviceAccounts/%s:"
	    "generateAccessToken", iam("cluster_role"));
	r = gget(ft, path, "POST", "{\"scope\":[\"" CP_SCOPE "\"]}");
	assert_int_equal(r.status, 403);
	assert_string_equal(json_string_value(json_object_get(json_object_get(r.json, "error"),
	    "status")), "PERMISSION_DENIED");
	csh_resp_free(&r);
	snprintf(path, sizeof(path), "/gcp/iamcredentials/v1/projects/-/serviceAccounts/%s:"
	    "generateAccessToken", iam("control_plane"));
	r = gget("bogus", path, "POST", "{\"scope\":[\"" CP_SCOPE "\"]}");
	assert_int_equal(r.status, 401);
	csh_resp_free(&r);
	r = gget(ft, path, "POST", "{\"scope\":[\"" CP_SCOPE "\"],\"lifetime\":\"7200s\"}");
	assert_int_equal(r.status, 400);
	csh_resp_free(&r);
	r = gget(ft, path, "POST", "{\"scope\":[\"" CP_SCOPE "\"],\"lifetime\":\"3600s\"}");
	assert_int_equal(r.status, 200);
	cp = strdup(json_string_value(json_object_get(r.json, "accessToken")));
	assert_non_null(json_object_get(r.json, "expireTime"));
	csh_resp_free(&r);
	/* node pools: only the project's own identity may read them */
	r = gget(ft, "/gke/v1/projects/fleet-test/locations/us-central1/clusters/" GKE
	    "/nodePools", "GET", NULL);
	assert_int_equal(r.status, 403);
	csh_resp_free(&r);
	r = gget(cp, "/gke/v1/projects/fleet-test/locations/us-central1/clusters/" GKE
	    "/nodePools", "GET", NULL);
	assert_int_equal(r.status, 200);
	json_array_foreach(json_object_get(r.json, "nodePools"), i, p)
		if (strcmp(json_string_value(json_object_get(p, "name")), "h100") == 0)
			h100 = p;
		else if (strcmp(json_string_value(json_object_get(p, "name")), "v5p") == 0)
			assert_string_equal(json_string_value(json_object_get(json_object_get(p,
			    "placementPolicy"), "tpuTopology")), "2x2x2");
		else if (strcmp(json_string_value(json_object_get(p, "name")), "l4-spot") == 0)
			assert_true(json_is_true(json_object_get(json_object_get(p, "config"),
			    "spot")));
	assert_non_null(h100);
	p = json_array_get(json_object_get(json_object_get(h100, "config"), "accelerators"), 0);
	assert_string_equal(json_string_value(json_object_get(p, "acceleratorType")),
	    "nvidia-h100-80gb");
	assert_string_equal(json_string_value(json_object_get(p, "acceleratorCount")), "8");
	assert_int_equal(json_integer_value(json_object_get(json_object_get(h100, "autoscaling"),
	    "maxNodeCount")), 4);
	csh_resp_free(&r);
	r = gget(cp, "/gke/v1/projects/fleet-test/locations/us-central1/clusters/nope/nodePools",
	    "GET", NULL);
	assert_int_equal(r.status, 404);
	assert_string_equal(json_string_value(json_object_get(json_object_get(r.json, "error"),
	    "status")), "NOT_FOUND");
	csh_resp_free(&r);
	/* regional quota: 3 H100 nodes of 8 GPUs in use */
	r = gget(cp, "/gce/compute/v1/projects/fleet-test/regions/us-central1", "GET", NULL);
	assert_int_equal(r.status, 200);
	json_array_foreach(json_object_get(r.json, "quotas"), i, p)
		if (strcmp(json_string_value(json_object_get(p, "metric")), "NVIDIA_H100_GPUS") == 0) {
			assert_true(json_number_value(json_object_get(p, "limit")) == 64);
			assert_true(json_number_value(json_object_get(p, "usage")) == 24);
			total = 1;
		}
	assert_int_equal(total, 1);
	total = 0;
	csh_resp_free(&r);
	/* reservations, two per page */
	snprintf(path, sizeof(path), "/gce/compute/v1/projects/fleet-test/zones/us-central1-a/"
	    "reservations");
	for (;;) {
		const char *next;
		char np[600];

		r = gget(cp, path, "GET", NULL);
		assert_int_equal(r.status, 200);
		total += (int)json_array_size(json_object_get(r.json, "items"));
		pages++;
		next = json_string_value(json_object_get(r.json, "nextPageToken"));
		if (next == NULL || pages > 10) {
			csh_resp_free(&r);
			break;
		}
		snprintf(np, sizeof(np), "/gce/compute/v1/projects/fleet-test/zones/us-central1-a/"
		    "reservations?pageToken=%s", next);
		snprintf(path, sizeof(path), "%s", np);
		csh_resp_free(&r);
	}
	assert_int_equal(total, 3);
	assert_int_equal(pages, 2);
	r = gget(cp, "/gce/compute/v1/projects/fleet-test/zones/us-central1-a/reservations?"
	    "pageToken=zzz", "GET", NULL);
	assert_int_equal(r.status, 400);
	csh_resp_free(&r);
	/* the cluster role's description carries the cloud id once set */
	snprintf(path, sizeof(path), "{\"provider\":\"gcp\",\"service_account\":\"%s\","
	    "\"description\":\"fleet.io/cloud-id=cloud-7\"}", iam("cluster_role"));
	r = csh_sim(&H, "POST", "/_sim/iam", path);
	assert_int_equal(r.status, 200);
	csh_resp_free(&r);
	snprintf(path, sizeof(path), "/gcp/iam/v1/projects/fleet-test/serviceAccounts/%s",
	    iam("cluster_role"));
	r = gget(cp, path, "GET", NULL);
	assert_int_equal(r.status, 200);
	assert_string_equal(json_string_value(json_object_get(r.json, "description")),
	    "fleet.io/cloud-id=cloud-7");
	csh_resp_free(&r);
	free(cp);
	free(ft);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_jwt_bearer),
		cmocka_unit_test(test_impersonation_and_gke),
	};

	return cmocka_run_group_tests(tests, setup, harness_group_teardown);
}
