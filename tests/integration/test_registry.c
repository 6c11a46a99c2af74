/* test_registry: two-phase cloud registration against cloudsim and a scratch database — per
 * provider: bad input, phase 1's answer, idempotent create, phase 2's grammar, and each
 * provider's verification flow (missing tags, the wrong secret, lock, identity in use,
 * rotation), with the audit rows they leave.  Member clusters, PUT/DELETE and secrets:
 * test_registry_clusters. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/harness/harness.h"

#define TAG		"fleet.io/cloud-id"
#define FLEETD_AWS	"arn:aws:iam::111111111111:user/fleetd"
#define FLEETD_GSA	"fleetd@fleet-admin.iam.gserviceaccount.com"

static struct fleetd_proc fd;
static struct harness_cs cs;
static char dburl[512];
static char *admin, *oper, *viewer, *staging_admin;

/* One provider's scenario: cloudsim's identities and the body parts of each call. */
struct prov {
	const char	*name;		/* gke | aks | hyperpod */
	const char	*region, *region_b;
	char		 account[400];
	char		 cp_a[300], cl_a[300], cp_b[300], cl_b[300];
	char		 cloud_a[40], cloud_b[40];
};

static struct prov P[3];

/* The failed checks of a 422 verification answer, as "a,b,c" in answer order. */
static void
failed_checks(char *out, size_t n)
{
	json_t *err;
	size_t i;

	out[0] = '\0';
	harness_expect_problem(NULL, 422, "iam.verification_failed", NULL);
	json_array_foreach(json_object_get(harness_r.json, "errors"), i, err) {
		assert_string_not_equal(harness_js(err, "detail"), "");
		snprintf(out + strlen(out), n - strlen(out), "%s%s", out[0] ? "," : "",
		    harness_js(err, "check"));
	}
}

/* ---- cloudsim: the test fleet plus the identities Terraform would have created */

static json_t *
fleet(void)
{
	json_t *f = harness_fleet_json();
	json_t *sas, *roles, *clusters, *aks = NULL, *c;
	size_t i;

	sas = json_object_get(json_object_get(f, "gcp"), "service_accounts");
	/* GKE: the control-plane SA of pair A starts without fleetd as token creator */
	json_array_append_new(sas, json_pack("{s:s, s:s}", "email",
	    "fleet-cp-a@fleet-test.iam.gserviceaccount.com", "project", "fleet-test"));
	json_array_append_new(sas, json_pack("{s:s, s:s}", "email",
	    "fleet-nodes-a@fleet-test.iam.gserviceaccount.com", "project", "fleet-test"));
	json_array_append_new(sas, json_pack("{s:s, s:s, s:[s]}", "email",
	    "fleet-cp-b@fleet-test.iam.gserviceaccount.com", "project", "fleet-test",
	    "token_creators", FLEETD_GSA));
	json_array_append_new(sas, json_pack("{s:s, s:s}", "email",
	    "fleet-nodes-b@fleet-test.iam.gserviceaccount.com", "project", "fleet-test"));
	roles = json_array();
	for (i = 0; i < 4; i++)
		json_array_append_new(roles, json_pack("{s:s, s:s, s:[s]}", "account",
		    "222222222222", "name", (const char *[]){ "fleet-cp-a", "fleet-nodes-a",
		    "fleet-cp-b", "fleet-nodes-b" }[i], "trusted", FLEETD_AWS));
	json_object_set_new(f, "aws", json_pack("{s:o}", "roles", roles));
	/* Azure: cloudsim makes the two managed identities of each AKS cluster; one more
	 * cluster gives the second pair */
	clusters = json_object_get(f, "clusters");
	json_array_foreach(clusters, i, c)
		if (strcmp(json_string_value(json_object_get(c, "provider")), "aks") == 0)
			aks = c;
	assert_non_null(aks);
	for (i = 0; i < 1; i++) {
		c = json_deep_copy(aks);
		json_object_set_new(c, "name", json_string("aks-id-b"));
		json_object_set_new(c, "pools", json_pack("[O]",
		    json_array_get(json_object_get(aks, "pools"), 0)));
		json_array_append_new(clusters, c);
	}
	return f;
}

static void
init_providers(void)
{
	json_t *aks = harness_cs_cluster(&cs, "test-aks-eus");
	const char *tenant;

	tenant = harness_cs_env(&cs, "FLEETD_AZURE_TENANT_ID");
	assert_non_null(tenant);
	P[0] = (struct prov){ .name = "gke", .region = "us-central1", .region_b = "us-central1" };
	snprintf(P[0].account, sizeof(P[0].account), "{\"project\":\"fleet-test\"}");
	snprintf(P[0].cp_a, 300, "fleet-cp-a@fleet-test.iam.gserviceaccount.com");
	snprintf(P[0].cl_a, 300, "fleet-nodes-a@fleet-test.iam.gserviceaccount.com");
	snprintf(P[0].cp_b, 300, "fleet-cp-b@fleet-test.iam.gserviceaccount.com");
	snprintf(P[0].cl_b, 300, "fleet-nodes-b@fleet-test.iam.gserviceaccount.com");
	P[1] = (struct prov){ .name = "aks", .region = "eastus", .region_b = "eastus" };
	snprintf(P[1].account, sizeof(P[1].account), "{\"subscription_id\":\"%s\",\"tenant_id\":"
	    "\"%s\",\"resource_group\":\"%s\"}", harness_js(aks, "subscription"), tenant,
	    harness_js(aks, "resource_group"));
	snprintf(P[1].cp_a, 300, "%s", harness_js(aks, "iam.control_plane.resource_id"));
	snprintf(P[1].cl_a, 300, "%s", harness_js(aks, "iam.cluster_role.resource_id"));
	aks = harness_cs_cluster(&cs, "aks-id-b");
	snprintf(P[1].cp_b, 300, "%s", harness_js(aks, "iam.control_plane.resource_id"));
	snprintf(P[1].cl_b, 300, "%s", harness_js(aks, "iam.cluster_role.resource_id"));
	P[2] = (struct prov){ .name = "hyperpod", .region = "us-west-2", .region_b = "us-east-1" };
	snprintf(P[2].account, sizeof(P[2].account), "{\"account_id\":\"222222222222\"}");
	snprintf(P[2].cp_a, 300, "arn:aws:iam::222222222222:role/fleet-cp-a");
	snprintf(P[2].cl_a, 300, "arn:aws:iam::222222222222:role/fleet-nodes-a");
	snprintf(P[2].cp_b, 300, "arn:aws:iam::222222222222:role/fleet-cp-b");
	snprintf(P[2].cl_b, 300, "arn:aws:iam::222222222222:role/fleet-nodes-b");
}

/* Tags (labels, descriptions) one identity with a cloud id, as Terraform would. */
static void
tag(const struct prov *p, const char *identity, const char *cloud_id)
{
	char body[800];

	if (strcmp(p->name, "gke") == 0)
		snprintf(body, sizeof(body), "{\"provider\":\"gcp\",\"service_account\":\"%s\","
		    "\"description\":\"managed by terraform; " TAG "=%s\"}", identity, cloud_id);
	else if (strcmp(p->name, "aks") == 0)
		snprintf(body, sizeof(body), "{\"provider\":\"azure\",\"resource_id\":\"%s\","
		    "\"tags\":{\"" TAG "\":\"%s\"}}", identity, cloud_id);
	else
		snprintf(body, sizeof(body), "{\"provider\":\"aws\",\"role_arn\":\"%s\","
		    "\"tags\":{\"" TAG "\":\"%s\"}}", identity, cloud_id);
	harness_sim_post(&cs, "/_sim/iam", body);
}

/* Lets fleetd in as the control plane: GCP token creator; AWS trust with the cloud's
 * external id; Azure the federated credentials of iam.required (fic: a JSON list). */
static void
trust(const struct prov *p, const char *cp, const char *external_id, const char *fic)
{
	char body[2048];

	if (strcmp(p->name, "gke") == 0)
		snprintf(body, sizeof(body), "{\"provider\":\"gcp\",\"service_account\":\"%s\","
		    "\"token_creators\":[\"" FLEETD_GSA "\"]}", cp);
	else if (strcmp(p->name, "hyperpod") == 0)
		snprintf(body, sizeof(body), "{\"provider\":\"aws\",\"role_arn\":\"%s\","
		    "\"external_id\":\"%s\"}", cp, external_id);
	else
		snprintf(body, sizeof(body), "{\"provider\":\"azure\",\"resource_id\":\"%s\","
		    "\"federated_identity_credentials\":%s}", cp, fic);
	harness_sim_post(&cs, "/_sim/iam", body);
}

/* iam.required's federated credentials of the control-plane identity (Azure), or "[]". */
static void
required_fic(char *out, size_t n)
{
	json_t *f = json_object_get(json_object_get(json_object_get(json_object_get(harness_r.json,
	    "iam"), "required"), "control_plane_identity"), "federated_identity_credentials");
	char *s = f ? json_dumps(f, JSON_COMPACT) : NULL;

	snprintf(out, n, "%s", s ? s : "[]");
	free(s);
}

/* ---- setup */

static int
setup(void **state)
{
	(void)state;
	json_t *f = fleet();

	harness_db_create("registry", dburl, sizeof(dburl));
	harness_cs_start_json(&cs, f, NULL);
	json_decref(f);
	init_providers();
	harness_fleetd_start(&fd, dburl, (const char *const *)cs.env);
	admin = harness_keep(harness_token(dburl, "admin", "*"));
	oper = harness_keep(harness_token(dburl, "operator", "*"));
	viewer = harness_keep(harness_token(dburl, "viewer", "*"));
	staging_admin = harness_keep(harness_token(dburl, "admin", "staging"));
	for (int i = 0; i < 4; i++) {
		char body[64];

		snprintf(body, sizeof(body), "{\"name\":\"%s\"}",
		    (const char *[]){ "prod", "staging", "test", "dev" }[i]);
		if (harness_call("POST", admin, body, "/v1/environments") != 201)
			fail_msg("environment: %ld %s", harness_r.status, harness_r.body);
	}
	return 0;
}

/* ---- phase 1 */

struct bad_cloud {
	const char	*what, *provider, *region, *account;
	long		 status;
	const char	*code, *pointer, *mention;	/* mention: must be in the detail */
};

static const struct bad_cloud bad_clouds[] = {
	{ "unknown provider", "gce", "us-central1", "{\"project\":\"fleet-test\"}", 400,
	  "catalog.unknown_provider", "/provider", "hyperpod" },
	{ "unknown region", "gke", "us-central9", "{\"project\":\"fleet-test\"}", 400,
	  "catalog.unknown_region", "/region", "us-central1" },
	{ "aws region for gke", "gke", "us-east-1", "{\"project\":\"fleet-test\"}", 400,
	  "catalog.unknown_region", "/region", "europe-west4" },
	{ "azure region for hyperpod", "hyperpod", "eastus", "{\"account_id\":\"222222222222\"}",
	  400, "catalog.unknown_region", "/region", "us-west-2" },
	{ "aws account for gke", "gke", "us-central1", "{\"account_id\":\"222222222222\"}", 400,
	  "cloud.account_field", "/account/account_id", NULL },
	{ "gcp project for aks", "aks", "eastus", "{\"project\":\"fleet-test\"}", 400,
	  "cloud.account_field", "/account/project", NULL },
	{ "aks without tenant", "aks", "eastus", "{\"subscription_id\":\"3f1b2c4d-0000-4000-"
	  "8000-00000000a001\",\"resource_group\":\"rg\"}", 400, "api.missing_field",
	  "/account/tenant_id", NULL },
	{ "account not an object", "hyperpod", "us-west-2", "\"222222222222\"", 400,
	  "api.wrong_type", "/account", NULL },
};

static void
test_phase1_bad_input(void **state)
{
	long audits = harness_sql_long("SELECT count(*) FROM audit_log");

	(void)state;
	for (size_t i = 0; i < sizeof(bad_clouds) / sizeof(bad_clouds[0]); i++) {
		const struct bad_cloud *b = &bad_clouds[i];

		harness_cloud_create(admin, "bad-cloud", "prod", b->provider, b->region, b->account);
		print_message("phase 1, %s: %ld\n", b->what, harness_r.status);
		harness_expect_problem(NULL, b->status, b->code, b->pointer);
		if (b->mention != NULL && strstr(harness_js(harness_r.json, "detail"),
		    b->mention) == NULL)
			fail_msg("%s: detail does not name %s: %s", b->what, b->mention,
			    harness_r.body);
	}
	harness_cloud_create(admin, "Bad Name", "prod", "gke", "us-central1", P[0].account);
	harness_expect_problem(NULL, 400, "cloud.bad_name", "/name");
	harness_cloud_create(admin, "no-env", "nowhere", "gke", "us-central1", P[0].account);
	harness_expect_problem(NULL, 404, "env.not_found", "/environment");
	harness_call("POST", admin, "{\"name\":\"x1\",\"environment\":\"prod\",\"provider\":"
	    "\"gke\",\"region\":\"us-central1\",\"account\":{\"project\":\"p\"},\"colour\":1}",
	    "/v1/clouds");
	harness_expect_problem(NULL, 400, "api.unknown_field", "/colour");
	harness_cloud_create(oper, "op-cloud", "prod", "gke", "us-central1", P[0].account);
	harness_expect_problem(NULL, 403, "auth.forbidden", NULL);
	harness_cloud_create(staging_admin, "other-env", "prod", "gke", "us-central1", P[0].account);
	harness_expect_status(NULL, 404);
	assert_int_equal(harness_sql_long("SELECT count(*) FROM clouds"), 0);
	assert_int_equal(harness_sql_long("SELECT count(*) FROM audit_log"), audits);
}

/* Cloud A in test and cloud B in staging for each provider; checks the phase-1 answer. */
static void
test_phase1(void **state)
{
	(void)state;
	for (int i = 0; i < 3; i++) {
		struct prov *p = &P[i];
		char loc[128], ext[80], *h;

		snprintf(loc, sizeof(loc), "test-%s", p->name);
		assert_int_equal(harness_cloud_create(admin, loc, "test", p->name, p->region, p->account),
		    201);
		assert_string_equal(harness_js(harness_r.json, "state"), "pending_iam");
		assert_string_not_equal(harness_js(harness_r.json, "external_id"), "");
		snprintf(ext, sizeof(ext), "%s", harness_js(harness_r.json, "external_id"));
		assert_true(strlen(ext) >= 32);		/* >= 128 bits in hex */
		assert_non_null(json_object_get(json_object_get(harness_r.json, "iam"),
		    "required"));
		assert_false(json_is_true(json_object_get(json_object_get(harness_r.json, "iam"),
		    "locked")));
		snprintf(p->cloud_a, sizeof(p->cloud_a), "%s", harness_js(harness_r.json, "id"));
		snprintf(loc, sizeof(loc), "/v1/clouds/%s", p->cloud_a);
		h = harness_header(&harness_r, "Location");
		assert_non_null(h);
		assert_string_equal(h, loc);
		free(h);
		h = harness_header(&harness_r, "ETag");
		assert_non_null(h);
		free(h);
		harness_audit_expect("cloud.create", p->cloud_a);
		/* the required documents name this cloud's id */
		assert_non_null(strstr(harness_r.body, p->cloud_a));
		/* one cloud per (environment, provider, region) */
		harness_cloud_create(admin, "again", "test", p->name, p->region, p->account);
		harness_expect_problem(NULL, 409, "cloud.exists", NULL);
		snprintf(loc, sizeof(loc), "staging-%s", p->name);
		assert_int_equal(harness_cloud_create(admin, loc, "staging", p->name, p->region_b,
		    p->account), 201);
		snprintf(p->cloud_b, sizeof(p->cloud_b), "%s", harness_js(harness_r.json, "id"));
		assert_string_not_equal(harness_js(harness_r.json, "external_id"), ext);
		harness_audit_expect("cloud.create", p->cloud_b);
		/* GET after the write reflects it */
		snprintf(loc, sizeof(loc), "/v1/clouds/%s", p->cloud_b);
		assert_int_equal(harness_call("GET", viewer, NULL, "%s", loc), 200);
		assert_string_equal(harness_js(harness_r.json, "state"), "pending_iam");
	}
}

/* Terraform retries a create: the same key and body give the first answer, once. */
static void
test_idempotent_create(void **state)
{
	const char *key[] = { "Idempotency-Key: reg-7c1e", NULL };
	const char *body = "{\"name\":\"dev-use2\",\"environment\":\"dev\",\"provider\":"
	    "\"hyperpod\",\"region\":\"us-east-2\",\"account\":{\"account_id\":"
	    "\"222222222222\"}}";
	char id[40], path[128];

	(void)state;
	assert_int_equal(harness_call_h("POST", admin, body, key, "/v1/clouds"), 201);
	snprintf(id, sizeof(id), "%s", harness_js(harness_r.json, "id"));
	harness_audit_expect("cloud.create", id);
	assert_int_equal(harness_call_h("POST", admin, body, key, "/v1/clouds"), 201);
	assert_string_equal(harness_js(harness_r.json, "id"), id);
	harness_call_h("POST", admin, "{\"name\":\"dev-use2\",\"environment\":\"dev\","
	    "\"provider\":\"hyperpod\",\"region\":\"us-east-1\",\"account\":{\"account_id\":"
	    "\"222222222222\"}}", key, "/v1/clouds");
	assert_int_equal(harness_r.status, 422);
	assert_int_equal(harness_sql_long("SELECT count(*) FROM clouds WHERE environment = 'dev'"), 1);
	snprintf(path, sizeof(path), "/v1/clouds/%s", id);
	assert_int_equal(harness_call("DELETE", admin, NULL, "%s", path), 204);
	harness_audit_expect("cloud.delete", id);
	assert_int_equal(harness_call("DELETE", admin, NULL, "%s", path), 404);
}

/* Nothing half-written: no pair, no identity binding, still pending. */
static void
assert_unlocked(const char *cloud)
{
	char path[128];

	assert_int_equal(harness_sql_long("SELECT count(*) FROM iam_pairs WHERE cloud_id = '%s'",
	    cloud), 0);
	assert_int_equal(harness_sql_long("SELECT count(*) FROM iam_identities WHERE cloud_id ="
	    " '%s'", cloud), 0);
	snprintf(path, sizeof(path), "/v1/clouds/%s", cloud);
	assert_int_equal(harness_call("GET", admin, NULL, "%s", path), 200);
	assert_string_equal(harness_js(harness_r.json, "state"), "pending_iam");
}

static void
test_phase2_grammar(void **state)
{
	char sa[200];

	(void)state;
	harness_cloud_iam(admin, P[2].cloud_a, "fleet-cp-a", P[2].cl_a, false);
	harness_expect_problem(NULL, 400, "iam.bad_identity", "/control_plane_role");
	harness_cloud_iam(admin, P[2].cloud_a, P[2].cp_a, "arn:aws:iam::22222222222:role/x", false);
	harness_expect_problem(NULL, 400, "iam.bad_identity", "/cluster_role");
	harness_cloud_iam(admin, P[2].cloud_a, "arn:aws:iam::333333333333:role/fleet-cp-a", P[2].cl_a,
	    false);
	harness_expect_problem(NULL, 422, "iam.identity_wrong_account", "/control_plane_role");
	snprintf(sa, sizeof(sa), "fleet-nodes-a@other-project.iam.gserviceaccount.com");
	harness_cloud_iam(admin, P[0].cloud_a, P[0].cp_a, sa, false);
	harness_expect_problem(NULL, 422, "iam.identity_wrong_account", "/cluster_role");
	harness_cloud_iam(admin, P[0].cloud_a, "not-an-email", P[0].cl_a, false);
	harness_expect_problem(NULL, 400, "iam.bad_identity", "/control_plane_role");
	harness_cloud_iam(admin, P[1].cloud_a, P[1].cp_a, "/subscriptions/3f1b2c4d-0000-4000-8000-"
	    "00000000a001/resourceGroups/rg-elsewhere/providers/Microsoft.ManagedIdentity/"
	    "userAssignedIdentities/x-id", false);
	harness_expect_problem(NULL, 422, "iam.identity_wrong_account", "/cluster_role");
	harness_cloud_iam(admin, P[0].cloud_a, P[0].cp_a, P[0].cp_a, false);
	harness_expect_problem(NULL, 422, "iam.identity_reused", "/cluster_role");
	harness_call("POST", admin, "{\"control_plane_role\":\"a\",\"cluster_role\":\"b\"}",
	    "/v1/clouds/00000000-0000-4000-8000-000000000000/iam");
	harness_expect_status(NULL, 404);
	harness_cloud_iam(oper, P[0].cloud_a, P[0].cp_a, P[0].cl_a, false);
	harness_expect_status(NULL, 403);
	for (int i = 0; i < 3; i++)
		assert_unlocked(P[i].cloud_a);
}

/* Phase 2 for one provider: missing tag, the provider's "wrong secret" case, retry after
 * the fix, locked, identity in use, rotation. */
static void
flow(struct prov *p)
{
	char checks[512], path[128], ext_a[80], ext_b[80], fic_a[1024], fic_b[1024];
	bool aks = strcmp(p->name, "aks") == 0;

	snprintf(path, sizeof(path), "/v1/clouds/%s", p->cloud_a);
	assert_int_equal(harness_call("GET", admin, NULL, "%s", path), 200);
	snprintf(ext_a, sizeof(ext_a), "%s", harness_js(harness_r.json, "external_id"));
	required_fic(fic_a, sizeof(fic_a));
	snprintf(path, sizeof(path), "/v1/clouds/%s", p->cloud_b);
	assert_int_equal(harness_call("GET", admin, NULL, "%s", path), 200);
	snprintf(ext_b, sizeof(ext_b), "%s", harness_js(harness_r.json, "external_id"));
	required_fic(fic_b, sizeof(fic_b));
	if (aks)
		assert_string_not_equal(fic_a, "[]");

	/* 1. nothing tagged yet: both tag checks fail */
	harness_cloud_iam(admin, p->cloud_a, p->cp_a, p->cl_a, false);
	failed_checks(checks, sizeof(checks));
	print_message("%s untagged: %s\n", p->name, checks);
	assert_non_null(strstr(checks, "control_plane_role_cloud_"));
	assert_non_null(strstr(checks, "cluster_role_cloud_"));
	assert_unlocked(p->cloud_a);

	/* 2. the control plane tagged, but fleetd may not act as it (AWS: another external
	 * id; GCP: fleetd is no token creator; Azure: no federated credential) */
	tag(p, p->cp_a, p->cloud_a);
	if (strcmp(p->name, "gke") != 0)
		trust(p, p->cp_a, ext_b, "[]");
	harness_cloud_iam(admin, p->cloud_a, p->cp_a, p->cl_a, false);
	failed_checks(checks, sizeof(checks));
	print_message("%s wrong secret: %s (%s)\n", p->name, checks,
	    harness_js(harness_r.json, "errors.0.detail"));
	assert_string_equal(harness_js(harness_r.json, "errors.0.check"), strcmp(p->name,
	    "hyperpod") == 0 ?
	    "control_plane_assume" : "control_plane_token");
	assert_string_equal(harness_js(harness_r.json, "errors.0.pointer"), "/control_plane_role");
	assert_non_null(strstr(harness_js(harness_r.json, "errors.0.detail"), aks ? "federated" :
	    strcmp(p->name, "gke") == 0 ? "TokenCreator" : ext_a));
	assert_unlocked(p->cloud_a);
	if (aks) {	/* and a tag naming another cloud is refused as such */
		trust(p, p->cp_a, NULL, fic_a);
		tag(p, p->cp_a, p->cloud_b);
		harness_cloud_iam(admin, p->cloud_a, p->cp_a, p->cl_a, false);
		failed_checks(checks, sizeof(checks));
		assert_string_equal(checks, "control_plane_role_cloud_tag,cluster_role_cloud_tag");
		assert_non_null(strstr(harness_js(harness_r.json, "errors.0.detail"), p->cloud_b));
		assert_unlocked(p->cloud_a);
	}

	/* 3. the secret fixed, the cluster role still untagged: exactly that check fails */
	tag(p, p->cp_a, p->cloud_a);
	trust(p, p->cp_a, ext_a, fic_a);
	harness_cloud_iam(admin, p->cloud_a, p->cp_a, p->cl_a, false);
	failed_checks(checks, sizeof(checks));
	print_message("%s missing tag: %s\n", p->name, checks);
	assert_string_equal(checks, strcmp(p->name, "gke") == 0 ? "cluster_role_cloud_label" :
	    "cluster_role_cloud_tag");
	assert_string_equal(harness_js(harness_r.json, "errors.0.pointer"), "/cluster_role");
	assert_unlocked(p->cloud_a);
	tag(p, p->cl_a, p->cloud_a);

	/* 4. fixed: active and locked */
	if (harness_cloud_iam(admin, p->cloud_a, p->cp_a, p->cl_a, false) != 200)
		fail_msg("%s retry after the fix: %ld %s", p->name, harness_r.status,
		    harness_r.body);
	assert_string_equal(harness_js(harness_r.json, "state"), "active");
	assert_true(json_is_true(json_object_get(json_object_get(harness_r.json, "iam"),
	    "locked")));
	assert_string_equal(harness_js(harness_r.json, "iam.control_plane_role"), p->cp_a);
	assert_string_equal(harness_js(harness_r.json, "iam.cluster_role"), p->cl_a);
	harness_audit_expect("cloud.iam.lock", p->cloud_a);
	snprintf(path, sizeof(path), "/v1/clouds/%s", p->cloud_a);
	assert_int_equal(harness_call("GET", viewer, NULL, "%s", path), 200);
	assert_string_equal(harness_js(harness_r.json, "state"), "active");

	/* 5. locked means locked */
	harness_cloud_iam(admin, p->cloud_a, p->cp_b, p->cl_b, false);
	harness_expect_problem(NULL, 409, "iam.locked", NULL);
	harness_cloud_iam(admin, p->cloud_a, p->cp_a, p->cl_a, false);
	harness_expect_problem(NULL, 409, "iam.locked", NULL);

	/* 6. no identity serves two clouds */
	harness_cloud_iam(admin, p->cloud_b, p->cp_a, p->cl_b, false);
	harness_expect_problem(NULL, 409, "iam.identity_in_use", "/control_plane_role");
	harness_cloud_iam(admin, p->cloud_b, p->cp_b, p->cl_a, false);
	harness_expect_problem(NULL, 409, "iam.identity_in_use", "/cluster_role");
	assert_unlocked(p->cloud_b);

	/* 7. rotation: admin only, verified first, then swapped; the audit keeps the old */
	harness_cloud_iam(oper, p->cloud_a, p->cp_b, p->cl_b, true);
	harness_expect_status(NULL, 403);
	harness_cloud_iam(admin, p->cloud_b, p->cp_b, p->cl_b, true);
	harness_expect_problem(NULL, 409, "iam.not_locked", NULL);
	harness_cloud_iam(admin, p->cloud_a, p->cp_b, p->cl_b, true);
	failed_checks(checks, sizeof(checks));
	snprintf(path, sizeof(path), "/v1/clouds/%s", p->cloud_a);
	assert_int_equal(harness_call("GET", admin, NULL, "%s", path), 200);
	assert_string_equal(harness_js(harness_r.json, "iam.control_plane_role"), p->cp_a);
	tag(p, p->cp_b, p->cloud_a);
	tag(p, p->cl_b, p->cloud_a);
	trust(p, p->cp_b, ext_a, fic_a);
	if (harness_cloud_iam(admin, p->cloud_a, p->cp_b, p->cl_b, true) != 200)
		fail_msg("%s rotate: %ld %s", p->name, harness_r.status, harness_r.body);
	assert_string_equal(harness_js(harness_r.json, "iam.control_plane_role"), p->cp_b);
	assert_string_equal(harness_js(harness_r.json, "state"), "active");
	harness_audit_expect("cloud.iam.rotate", p->cloud_a);
	{
		char *old = harness_sql_params("SELECT before->>'control_plane_role' || ' ' ||"
		    " (after->>'control_plane_role') FROM audit_log WHERE action ="
		    " 'cloud.iam.rotate' AND resource_id = $1", 1,
		    (const char *const[]){ p->cloud_a });
		char want[700];

		snprintf(want, sizeof(want), "%s %s", p->cp_a, p->cp_b);
		assert_non_null(old);
		assert_string_equal(old, want);
		free(old);
	}

	/* 8. the rotated-out pair is free again and serves cloud B once tagged for it */
	harness_cloud_iam(admin, p->cloud_b, p->cp_a, p->cl_a, false);
	failed_checks(checks, sizeof(checks));
	tag(p, p->cp_a, p->cloud_b);
	tag(p, p->cl_a, p->cloud_b);
	trust(p, p->cp_a, ext_b, fic_b);
	if (harness_cloud_iam(admin, p->cloud_b, p->cp_a, p->cl_a, false) != 200)
		fail_msg("%s cloud b: %ld %s", p->name, harness_r.status, harness_r.body);
	harness_audit_expect("cloud.iam.lock", p->cloud_b);
	assert_int_equal(harness_sql_long("SELECT count(*) FROM iam_identities"),
	    harness_sql_long("SELECT 2 * count(*) FROM iam_pairs"));
}

static void
test_flow(void **state)
{
	flow(*state);
}

/* ---- audit */

static void
test_audit(void **state)
{
	(void)state;
	print_message("audit: %d rows for clouds, as expected\n",
	    harness_audit_check("'cloud', 'cluster'"));
	/* admins read it over the API, filtered by resource */
	assert_int_equal(harness_call("GET", admin, NULL, "/v1/audit?resource_type=cloud&"
	    "resource_id=%s", P[0].cloud_a), 200);
	assert_non_null(strstr(harness_r.body, "cloud.iam.rotate"));
	assert_int_equal(harness_call("GET", oper, NULL, "/v1/audit"), 403);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_phase1_bad_input),
		cmocka_unit_test(test_phase1),
		cmocka_unit_test(test_idempotent_create),
		cmocka_unit_test(test_phase2_grammar),
		{ "test_flow_gke", test_flow, NULL, NULL, &P[0] },
		{ "test_flow_aks", test_flow, NULL, NULL, &P[1] },
		{ "test_flow_hyperpod", test_flow, NULL, NULL, &P[2] },
		cmocka_unit_test(test_audit),
	};

	return cmocka_run_group_tests(tests, setup, harness_group_teardown);
}
