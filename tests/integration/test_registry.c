/* test_registry: two-phase cloud registration and member clusters against cloudsim and a
 * scratch database — per provider, bad input, PUT/DELETE semantics, audit rows, secrets. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>


#include <libpq-fe.h>

#include "tests/harness/harness.h"

#define TAG		"fleet.io/cloud-id"
#define FLEETD_AWS	"arn:aws:iam::111111111111:user/fleetd"
#define FLEETD_GSA	"fleetd@fleet-admin.iam.gserviceaccount.com"
#define MAX_AUDIT	64
#define MAX_SECRETS	16

static struct fleetd_proc fd;
static struct harness_cs cs;
static char dburl[512];
static char *admin, *oper, *viewer, *staging_admin;

/* What the audit log must hold for clouds and clusters, in order. */
static char exp_action[MAX_AUDIT][32], exp_id[MAX_AUDIT][40];
static int nexp;
/* Strings that must never appear in an answer or a log line (also planted in the harness,
 * which checks every answer). */
static char *secrets[MAX_SECRETS];
static int nsecrets;

/* One provider's scenario: cloudsim's identities and the body parts of each call. */
struct prov {
	const char	*name;		/* gke | aks | hyperpod */
	const char	*region, *region_b;
	const char	*cluster;	/* cloudsim member cluster attached to cloud A */
	char		 account[400];
	char		 cp_a[300], cl_a[300], cp_b[300], cl_b[300];
	char		 cloud_a[40], cloud_b[40];
};

static struct prov P[3];

/* ---- small helpers */

static void
add_secret(const char *s)
{
	assert_true(nsecrets < MAX_SECRETS);
	secrets[nsecrets++] = strdup(s);
	harness_secret(s);
}

static void
expect_audit(const char *action, const char *id)
{
	assert_true(nexp < MAX_AUDIT);
	snprintf(exp_action[nexp], sizeof(exp_action[0]), "%s", action);
	snprintf(exp_id[nexp], sizeof(exp_id[0]), "%s", id);
	nexp++;
}

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

static long
sql_count(const char *q, const char *p1)
{
	char *v = harness_sql_params(q, p1 ? 1 : 0, (const char *const[]){ p1 });
	long n = v ? atol(v) : -1;

	free(v);
	return n;
}

static long
sim(const char *body)
{
	long st = harness_sim(&cs, "POST", "/_sim/iam", body, NULL);

	if (st != 200)
		fprintf(stderr, "_sim/iam %s: %ld\n", body, st);
	return st;
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
	/* the prod pair of the walk-through */
	json_array_append_new(sas, json_pack("{s:s, s:s, s:[s]}", "email",
	    "fleet-cp-prod@fleet-test.iam.gserviceaccount.com", "project", "fleet-test",
	    "token_creators", FLEETD_GSA));
	json_array_append_new(sas, json_pack("{s:s, s:s}", "email",
	    "fleet-nodes-prod@fleet-test.iam.gserviceaccount.com", "project", "fleet-test"));
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

static const char *
mi(const char *cluster, const char *which)
{
	char path[64];

	snprintf(path, sizeof(path), "iam.%s.resource_id", which);
	return harness_js(harness_cs_cluster(&cs, cluster), path);
}

static void
init_providers(void)
{
	json_t *aks = harness_cs_cluster(&cs, "test-aks-eus");
	const char *tenant;

	tenant = harness_cs_env(&cs, "FLEETD_AZURE_TENANT_ID");
	assert_non_null(tenant);
	P[0] = (struct prov){ .name = "gke", .region = "us-central1", .region_b = "us-central1",
	    .cluster = "test-gke-usc1" };
	snprintf(P[0].account, sizeof(P[0].account), "{\"project\":\"fleet-test\"}");
	snprintf(P[0].cp_a, 300, "fleet-cp-a@fleet-test.iam.gserviceaccount.com");
	snprintf(P[0].cl_a, 300, "fleet-nodes-a@fleet-test.iam.gserviceaccount.com");
	snprintf(P[0].cp_b, 300, "fleet-cp-b@fleet-test.iam.gserviceaccount.com");
	snprintf(P[0].cl_b, 300, "fleet-nodes-b@fleet-test.iam.gserviceaccount.com");
	P[1] = (struct prov){ .name = "aks", .region = "eastus", .region_b = "eastus",
	    .cluster = "test-aks-eus" };
	snprintf(P[1].account, sizeof(P[1].account), "{\"subscription_id\":\"%s\",\"tenant_id\":"
	    "\"%s\",\"resource_group\":\"%s\"}", harness_js(aks, "subscription"), tenant,
	    harness_js(aks, "resource_group"));
	snprintf(P[1].cp_a, 300, "%s", mi("test-aks-eus", "control_plane"));
	snprintf(P[1].cl_a, 300, "%s", mi("test-aks-eus", "cluster_role"));
	snprintf(P[1].cp_b, 300, "%s", mi("aks-id-b", "control_plane"));
	snprintf(P[1].cl_b, 300, "%s", mi("aks-id-b", "cluster_role"));
	P[2] = (struct prov){ .name = "hyperpod", .region = "us-west-2", .region_b = "us-east-1",
	    .cluster = "test-hp-usw2" };
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
	assert_int_equal(sim(body), 200);
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
	assert_int_equal(sim(body), 200);
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
	admin = harness_token(dburl, "admin", "*");
	oper = harness_token(dburl, "operator", "*");
	viewer = harness_token(dburl, "viewer", "*");
	staging_admin = harness_token(dburl, "admin", "staging");
	for (int i = 0; i < 4; i++) {
		char body[64];

		snprintf(body, sizeof(body), "{\"name\":\"%s\"}",
		    (const char *[]){ "prod", "staging", "test", "dev" }[i]);
		if (harness_call("POST", admin, body, "/v1/environments") != 201)
			fail_msg("environment: %ld %s", harness_r.status, harness_r.body);
	}
	return 0;
}

static int
teardown(void **state)
{
	(void)state;
	harness_teardown(&fd, dburl, &cs);
	for (int i = 0; i < nsecrets; i++)
		free(secrets[i]);
	free(admin);
	free(oper);
	free(viewer);
	free(staging_admin);
	return 0;
}

/* ---- phase 1 */

static long
create_cloud(const char *tok, const char *name, const char *env, const char *provider,
	     const char *region, const char *account)
{
	char body[1024];

	snprintf(body, sizeof(body), "{\"name\":\"%s\",\"environment\":\"%s\",\"provider\":"
	    "\"%s\",\"region\":\"%s\",\"account\":%s}", name, env, provider, region, account);
	return harness_call("POST", tok, body, "/v1/clouds");
}

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
	long audits = sql_count("SELECT count(*) FROM audit_log", NULL);

	(void)state;
	for (size_t i = 0; i < sizeof(bad_clouds) / sizeof(bad_clouds[0]); i++) {
		const struct bad_cloud *b = &bad_clouds[i];

		create_cloud(admin, "bad-cloud", "prod", b->provider, b->region, b->account);
		print_message("phase 1, %s: %ld\n", b->what, harness_r.status);
		harness_expect_problem(NULL, b->status, b->code, b->pointer);
		if (b->mention != NULL && strstr(harness_js(harness_r.json, "detail"),
		    b->mention) == NULL)
			fail_msg("%s: detail does not name %s: %s", b->what, b->mention,
			    harness_r.body);
	}
	create_cloud(admin, "Bad Name", "prod", "gke", "us-central1", P[0].account);
	harness_expect_problem(NULL, 400, "cloud.bad_name", "/name");
	create_cloud(admin, "no-env", "nowhere", "gke", "us-central1", P[0].account);
	harness_expect_problem(NULL, 404, "env.not_found", "/environment");
	harness_call("POST", admin, "{\"name\":\"x1\",\"environment\":\"prod\",\"provider\":"
	    "\"gke\",\"region\":\"us-central1\",\"account\":{\"project\":\"p\"},\"colour\":1}",
	    "/v1/clouds");
	harness_expect_problem(NULL, 400, "api.unknown_field", "/colour");
	create_cloud(oper, "op-cloud", "prod", "gke", "us-central1", P[0].account);
	harness_expect_problem(NULL, 403, "auth.forbidden", NULL);
	create_cloud(staging_admin, "other-env", "prod", "gke", "us-central1", P[0].account);
	harness_expect_status(NULL, 404);
	assert_int_equal(sql_count("SELECT count(*) FROM clouds", NULL), 0);
	assert_int_equal(sql_count("SELECT count(*) FROM audit_log", NULL), audits);
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
		assert_int_equal(create_cloud(admin, loc, "test", p->name, p->region, p->account),
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
		expect_audit("cloud.create", p->cloud_a);
		/* the required documents name this cloud's id */
		assert_non_null(strstr(harness_r.body, p->cloud_a));
		/* one cloud per (environment, provider, region) */
		create_cloud(admin, "again", "test", p->name, p->region, p->account);
		harness_expect_problem(NULL, 409, "cloud.exists", NULL);
		snprintf(loc, sizeof(loc), "staging-%s", p->name);
		assert_int_equal(create_cloud(admin, loc, "staging", p->name, p->region_b,
		    p->account), 201);
		snprintf(p->cloud_b, sizeof(p->cloud_b), "%s", harness_js(harness_r.json, "id"));
		assert_string_not_equal(harness_js(harness_r.json, "external_id"), ext);
		expect_audit("cloud.create", p->cloud_b);
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
	expect_audit("cloud.create", id);
	assert_int_equal(harness_call_h("POST", admin, body, key, "/v1/clouds"), 201);
	assert_string_equal(harness_js(harness_r.json, "id"), id);
	harness_call_h("POST", admin, "{\"name\":\"dev-use2\",\"environment\":\"dev\","
	    "\"provider\":\"hyperpod\",\"region\":\"us-east-1\",\"account\":{\"account_id\":"
	    "\"222222222222\"}}", key, "/v1/clouds");
	assert_int_equal(harness_r.status, 422);
	assert_int_equal(sql_count("SELECT count(*) FROM clouds WHERE environment = 'dev'", NULL),
	    1);
	snprintf(path, sizeof(path), "/v1/clouds/%s", id);
	assert_int_equal(harness_call("DELETE", admin, NULL, "%s", path), 204);
	expect_audit("cloud.delete", id);
	assert_int_equal(harness_call("DELETE", admin, NULL, "%s", path), 404);
}

static long
phase2(const char *tok, const char *cloud, const char *cp, const char *cl, bool rotate)
{
	char path[128], body[900];

	snprintf(path, sizeof(path), "/v1/clouds/%s/iam%s", cloud, rotate ? "/rotate" : "");
	snprintf(body, sizeof(body), "{\"control_plane_role\":\"%s\",\"cluster_role\":\"%s\"}",
	    cp, cl);
	return harness_call("POST", tok, body, "%s", path);
}

/* Nothing half-written: no pair, no identity binding, still pending. */
static void
assert_unlocked(const char *cloud)
{
	char path[128];

	assert_int_equal(sql_count("SELECT count(*) FROM iam_pairs WHERE cloud_id = $1", cloud),
	    0);
	assert_int_equal(sql_count("SELECT count(*) FROM iam_identities WHERE cloud_id = $1",
	    cloud), 0);
	snprintf(path, sizeof(path), "/v1/clouds/%s", cloud);
	assert_int_equal(harness_call("GET", admin, NULL, "%s", path), 200);
	assert_string_equal(harness_js(harness_r.json, "state"), "pending_iam");
}

static void
test_phase2_grammar(void **state)
{
	char sa[200];

	(void)state;
	phase2(admin, P[2].cloud_a, "fleet-cp-a", P[2].cl_a, false);
	harness_expect_problem(NULL, 400, "iam.bad_identity", "/control_plane_role");
	phase2(admin, P[2].cloud_a, P[2].cp_a, "arn:aws:iam::22222222222:role/x", false);
	harness_expect_problem(NULL, 400, "iam.bad_identity", "/cluster_role");
	phase2(admin, P[2].cloud_a, "arn:aws:iam::333333333333:role/fleet-cp-a", P[2].cl_a,
	    false);
	harness_expect_problem(NULL, 422, "iam.identity_wrong_account", "/control_plane_role");
	snprintf(sa, sizeof(sa), "fleet-nodes-a@other-project.iam.gserviceaccount.com");
	phase2(admin, P[0].cloud_a, P[0].cp_a, sa, false);
	harness_expect_problem(NULL, 422, "iam.identity_wrong_account", "/cluster_role");
	phase2(admin, P[0].cloud_a, "not-an-email", P[0].cl_a, false);
	harness_expect_problem(NULL, 400, "iam.bad_identity", "/control_plane_role");
	phase2(admin, P[1].cloud_a, P[1].cp_a, "/subscriptions/3f1b2c4d-0000-4000-8000-"
	    "00000000a001/resourceGroups/rg-elsewhere/providers/Microsoft.ManagedIdentity/"
	    "userAssignedIdentities/x-id", false);
	harness_expect_problem(NULL, 422, "iam.identity_wrong_account", "/cluster_role");
	phase2(admin, P[0].cloud_a, P[0].cp_a, P[0].cp_a, false);
	harness_expect_problem(NULL, 422, "iam.identity_reused", "/cluster_role");
	harness_call("POST", admin, "{\"control_plane_role\":\"a\",\"cluster_role\":\"b\"}",
	    "/v1/clouds/00000000-0000-4000-8000-000000000000/iam");
	harness_expect_status(NULL, 404);
	phase2(oper, P[0].cloud_a, P[0].cp_a, P[0].cl_a, false);
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
	phase2(admin, p->cloud_a, p->cp_a, p->cl_a, false);
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
	phase2(admin, p->cloud_a, p->cp_a, p->cl_a, false);
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
		phase2(admin, p->cloud_a, p->cp_a, p->cl_a, false);
		failed_checks(checks, sizeof(checks));
		assert_string_equal(checks, "control_plane_role_cloud_tag,cluster_role_cloud_tag");
		assert_non_null(strstr(harness_js(harness_r.json, "errors.0.detail"), p->cloud_b));
		assert_unlocked(p->cloud_a);
	}

	/* 3. the secret fixed, the cluster role still untagged: exactly that check fails */
	tag(p, p->cp_a, p->cloud_a);
	trust(p, p->cp_a, ext_a, fic_a);
	phase2(admin, p->cloud_a, p->cp_a, p->cl_a, false);
	failed_checks(checks, sizeof(checks));
	print_message("%s missing tag: %s\n", p->name, checks);
	assert_string_equal(checks, strcmp(p->name, "gke") == 0 ? "cluster_role_cloud_label" :
	    "cluster_role_cloud_tag");
	assert_string_equal(harness_js(harness_r.json, "errors.0.pointer"), "/cluster_role");
	assert_unlocked(p->cloud_a);
	tag(p, p->cl_a, p->cloud_a);

	/* 4. fixed: active and locked */
	if (phase2(admin, p->cloud_a, p->cp_a, p->cl_a, false) != 200)
		fail_msg("%s retry after the fix: %ld %s", p->name, harness_r.status,
		    harness_r.body);
	assert_string_equal(harness_js(harness_r.json, "state"), "active");
	assert_true(json_is_true(json_object_get(json_object_get(harness_r.json, "iam"),
	    "locked")));
	assert_string_equal(harness_js(harness_r.json, "iam.control_plane_role"), p->cp_a);
	assert_string_equal(harness_js(harness_r.json, "iam.cluster_role"), p->cl_a);
	expect_audit("cloud.iam.lock", p->cloud_a);
	snprintf(path, sizeof(path), "/v1/clouds/%s", p->cloud_a);
	assert_int_equal(harness_call("GET", viewer, NULL, "%s", path), 200);
	assert_string_equal(harness_js(harness_r.json, "state"), "active");

	/* 5. locked means locked */
	phase2(admin, p->cloud_a, p->cp_b, p->cl_b, false);
	harness_expect_problem(NULL, 409, "iam.locked", NULL);
	phase2(admin, p->cloud_a, p->cp_a, p->cl_a, false);
	harness_expect_problem(NULL, 409, "iam.locked", NULL);

	/* 6. no identity serves two clouds */
	phase2(admin, p->cloud_b, p->cp_a, p->cl_b, false);
	harness_expect_problem(NULL, 409, "iam.identity_in_use", "/control_plane_role");
	phase2(admin, p->cloud_b, p->cp_b, p->cl_a, false);
	harness_expect_problem(NULL, 409, "iam.identity_in_use", "/cluster_role");
	assert_unlocked(p->cloud_b);

	/* 7. rotation: admin only, verified first, then swapped; the audit keeps the old */
	phase2(oper, p->cloud_a, p->cp_b, p->cl_b, true);
	harness_expect_status(NULL, 403);
	phase2(admin, p->cloud_b, p->cp_b, p->cl_b, true);
	harness_expect_problem(NULL, 409, "iam.not_locked", NULL);
	phase2(admin, p->cloud_a, p->cp_b, p->cl_b, true);
	failed_checks(checks, sizeof(checks));
	snprintf(path, sizeof(path), "/v1/clouds/%s", p->cloud_a);
	assert_int_equal(harness_call("GET", admin, NULL, "%s", path), 200);
	assert_string_equal(harness_js(harness_r.json, "iam.control_plane_role"), p->cp_a);
	tag(p, p->cp_b, p->cloud_a);
	tag(p, p->cl_b, p->cloud_a);
	trust(p, p->cp_b, ext_a, fic_a);
	if (phase2(admin, p->cloud_a, p->cp_b, p->cl_b, true) != 200)
		fail_msg("%s rotate: %ld %s", p->name, harness_r.status, harness_r.body);
	assert_string_equal(harness_js(harness_r.json, "iam.control_plane_role"), p->cp_b);
	assert_string_equal(harness_js(harness_r.json, "state"), "active");
	expect_audit("cloud.iam.rotate", p->cloud_a);
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
	phase2(admin, p->cloud_b, p->cp_a, p->cl_a, false);
	failed_checks(checks, sizeof(checks));
	tag(p, p->cp_a, p->cloud_b);
	tag(p, p->cl_a, p->cloud_b);
	trust(p, p->cp_a, ext_b, fic_b);
	if (phase2(admin, p->cloud_b, p->cp_a, p->cl_a, false) != 200)
		fail_msg("%s cloud b: %ld %s", p->name, harness_r.status, harness_r.body);
	expect_audit("cloud.iam.lock", p->cloud_b);
	assert_int_equal(sql_count("SELECT count(*) FROM iam_identities", NULL),
	    sql_count("SELECT 2 * count(*) FROM iam_pairs", NULL));
}

static void
test_flow_gke(void **state)
{
	(void)state;
	flow(&P[0]);
}

static void
test_flow_aks(void **state)
{
	(void)state;
	flow(&P[1]);
}

static void
test_flow_hyperpod(void **state)
{
	(void)state;
	flow(&P[2]);
}

/* ---- member clusters */

static char wrong_ca[8192];
static char prod_cloud[40], prod_cluster[40], clusters[3][40];	/* gke, aks, hyperpod A */
static char hp_b_cluster[40];

/* A cluster body for cloudsim's member cluster cs; NULL overrides keep its own values. */
static char *
cluster_body(const char *member, const char *name, const char *api, const char *ca,
	     const char *token, json_t *labels)
{
	json_t *c = harness_cs_cluster(&cs, member), *b;
	char *text, *pem = harness_slurp(harness_js(c, "ca_file"));

	assert_non_null(pem);
	b = json_pack("{s:s, s:s, s:s, s:{s:s}, s:s, s:s}", "name", name ? name : member,
	    "api_server", api ? api : harness_js(c, "api_server"), "ca_cert", ca ? ca : pem,
	    "credentials", "token", token ? token : harness_js(c, "token"), "provider_cluster_id",
	    harness_js(c, "provider_cluster_id"), "batch_scheduler", "kueue");
	if (labels != NULL)
		json_object_set(b, "labels", labels);
	text = json_dumps(b, JSON_COMPACT);
	json_decref(b);
	free(pem);
	return text;
}

static long
attach(const char *tok, const char *cloud, char *body)
{
	char path[128];

	snprintf(path, sizeof(path), "/v1/clouds/%s/clusters", cloud);
	harness_call("POST", tok, body, "%s", path);
	free(body);
	return harness_r.status;
}

/* The walk-through: a prod GKE cloud in us-central1 in two calls, active, a member
 * cluster attached, and every attempt to break its isolation refused. */
static void
test_prod_walkthrough(void **state)
{
	const char *cp = "fleet-cp-prod@fleet-test.iam.gserviceaccount.com";
	const char *cl = "fleet-nodes-prod@fleet-test.iam.gserviceaccount.com";
	char path[200], dev_cloud[40], body[600];
	json_t *gke = harness_cs_cluster(&cs, "test-gke-usc1");

	(void)state;
	/* call 1 */
	assert_int_equal(create_cloud(admin, "prod-usc1", "prod", "gke", "us-central1",
	    P[0].account), 201);
	snprintf(prod_cloud, sizeof(prod_cloud), "%s", harness_js(harness_r.json, "id"));
	expect_audit("cloud.create", prod_cloud);
	/* what Terraform does from iam.required */
	tag(&P[0], cp, prod_cloud);
	tag(&P[0], cl, prod_cloud);
	/* call 2 */
	if (phase2(admin, prod_cloud, cp, cl, false) != 200)
		fail_msg("phase 2: %ld %s", harness_r.status, harness_r.body);
	expect_audit("cloud.iam.lock", prod_cloud);
	snprintf(path, sizeof(path), "/v1/clouds/%s", prod_cloud);
	assert_int_equal(harness_call("GET", viewer, NULL, "%s", path), 200);
	assert_string_equal(harness_js(harness_r.json, "state"), "active");
	assert_string_equal(harness_js(harness_r.json, "environment"), "prod");
	assert_string_equal(harness_js(harness_r.json, "region"), "us-central1");
	/* a member cluster */
	add_secret(harness_js(gke, "token"));
	assert_int_equal(attach(viewer, prod_cloud, cluster_body("test-gke-usc1", "prod-a",
	    NULL, NULL, NULL, NULL)), 403);
	if (attach(admin, prod_cloud, cluster_body("test-gke-usc1", "prod-a", NULL, NULL, NULL,
	    NULL)) != 201)
		fail_msg("attach: %ld %s", harness_r.status, harness_r.body);
	snprintf(prod_cluster, sizeof(prod_cluster), "%s", harness_js(harness_r.json, "id"));
	expect_audit("cluster.create", prod_cluster);
	assert_null(json_object_get(harness_r.json, "credentials"));
	assert_string_equal(harness_js(harness_r.json, "environment"), "prod");
	assert_string_equal(harness_js(harness_r.json, "state"), "ready");

	/* the prod identities serve no other cloud */
	assert_int_equal(create_cloud(admin, "dev-usc1", "dev", "gke", "us-central1",
	    P[0].account), 201);
	snprintf(dev_cloud, sizeof(dev_cloud), "%s", harness_js(harness_r.json, "id"));
	expect_audit("cloud.create", dev_cloud);
	phase2(admin, dev_cloud, cp, "fleet-nodes-dev@fleet-test.iam.gserviceaccount.com", false);
	harness_expect_problem(NULL, 409, "iam.identity_in_use", "/control_plane_role");
	phase2(admin, dev_cloud, "fleet-cp-dev@fleet-test.iam.gserviceaccount.com", cl, false);
	harness_expect_problem(NULL, 409, "iam.identity_in_use", "/cluster_role");
	/* its pair changes only by an admin's verified rotation */
	phase2(admin, prod_cloud, cp, cl, false);
	harness_expect_problem(NULL, 409, "iam.locked", NULL);
	phase2(oper, prod_cloud, cp, cl, true);
	harness_expect_status(NULL, 403);
	/* nothing moves it to another environment, region or account */
	snprintf(body, sizeof(body), "{\"name\":\"prod-usc1\",\"environment\":\"dev\","
	    "\"provider\":\"gke\",\"region\":\"us-central1\",\"account\":%s}", P[0].account);
	harness_call("PUT", admin, body, "%s", path);
	harness_expect_problem(NULL, 409, "cloud.immutable", "/environment");
	snprintf(body, sizeof(body), "{\"name\":\"prod-usc1\",\"environment\":\"prod\","
	    "\"provider\":\"gke\",\"region\":\"us-east4\",\"account\":%s}", P[0].account);
	harness_call("PUT", admin, body, "%s", path);
	harness_expect_problem(NULL, 409, "cloud.immutable", "/region");
	snprintf(body, sizeof(body), "{\"name\":\"prod-usc1\",\"environment\":\"prod\","
	    "\"provider\":\"gke\",\"region\":\"us-central1\",\"account\":{\"project\":"
	    "\"fleet-other\"}}");
	harness_call("PUT", admin, body, "%s", path);
	harness_expect_problem(NULL, 409, "cloud.immutable", "/account");
	/* a token of another environment does not even see it */
	assert_int_equal(harness_call("GET", staging_admin, NULL, "%s", path), 404);
	assert_int_equal(harness_call("DELETE", staging_admin, NULL, "%s", path), 404);
	assert_int_equal(phase2(staging_admin, prod_cloud, cp, cl, true), 404);
	assert_int_equal(attach(staging_admin, prod_cloud, cluster_body("test-gke-usc1",
	    "sneaky", NULL, NULL, NULL, NULL)), 404);
	snprintf(path, sizeof(path), "/v1/clusters/%s", prod_cluster);
	assert_int_equal(harness_call("GET", staging_admin, NULL, "%s", path), 404);
	assert_int_equal(harness_call("GET", staging_admin, NULL, "/v1/clusters?environment=prod"),
	    200);
	assert_int_equal(json_array_size(json_object_get(harness_r.json, "items")), 0);
	assert_int_equal(harness_call("GET", staging_admin, NULL, "/v1/clouds"), 200);
	assert_null(strstr(harness_r.body, prod_cloud));
	/* the cluster is reachable only under its own cloud */
	snprintf(path, sizeof(path), "/v1/clouds/%s/clusters/%s", dev_cloud, prod_cluster);
	assert_int_equal(harness_call("GET", admin, NULL, "%s", path), 404);
	/* and a cloud with clusters is not deleted */
	snprintf(path, sizeof(path), "/v1/clouds/%s", prod_cloud);
	harness_call("DELETE", admin, NULL, "%s", path);
	harness_expect_problem(NULL, 409, "cloud.in_use", NULL);
	/* a pending cloud takes no clusters */
	attach(admin, dev_cloud, cluster_body("test-gke-usc1", "dev-a", NULL, NULL, NULL, NULL));
	harness_expect_problem(NULL, 409, "cloud.not_active", NULL);
}

static void
test_cluster_bad_input(void **state)
{
	char planted[64];
	const char *aks = P[1].cloud_a;

	(void)state;
	attach(admin, aks, cluster_body("test-aks-eus", NULL, "http://127.0.0.1:1/k8s/x", NULL,
	    NULL, NULL));
	harness_expect_problem(NULL, 400, "cluster.bad_api_server", "/api_server");
	attach(admin, aks, cluster_body("test-aks-eus", NULL, NULL, "not a certificate", NULL,
	    NULL));
	harness_expect_problem(NULL, 400, "cluster.bad_ca", "/ca_cert");
	attach(admin, aks, cluster_body("test-aks-eus", NULL, NULL, "-----BEGIN CERTIFICATE-----"
	    "\n!!!!\n-----END CERTIFICATE-----\n", NULL, NULL));
	harness_expect_problem(NULL, 400, "cluster.bad_ca", "/ca_cert");
	attach(admin, aks, cluster_body("test-aks-eus", "Bad_Name", NULL, NULL, NULL, NULL));
	harness_expect_problem(NULL, 400, "cluster.bad_name", "/name");
	harness_call("POST", admin, "{}",
	    "/v1/clouds/00000000-0000-4000-8000-000000000000/clusters");
	harness_expect_status(NULL, 404);
	/* a gke cluster id under an aks cloud */
	{
		char path[128], *b = cluster_body("test-gke-usc1", "wrong-kind", NULL, NULL, NULL,
		    NULL);

		snprintf(path, sizeof(path), "/v1/clouds/%s/clusters", aks);
		harness_call("POST", admin, b, "%s", path);
		free(b);
		harness_expect_problem(NULL, 400, "cluster.bad_provider_id",
		    "/provider_cluster_id");
	}
	/* reachability: wrong token, wrong CA */
	snprintf(planted, sizeof(planted), "planted-wrong-token-%d-7f3a", (int)getpid());
	add_secret(planted);
	attach(admin, aks, cluster_body("test-aks-eus", NULL, NULL, NULL, planted, NULL));
	harness_expect_problem(NULL, 422, "cluster.unauthorized", "/credentials/token");
	attach(admin, aks, cluster_body("test-aks-eus", NULL, NULL, wrong_ca, NULL, NULL));
	harness_expect_problem(NULL, 422, "cluster.unreachable", "/api_server");
	assert_int_equal(sql_count("SELECT count(*) FROM clusters WHERE cloud_id = $1", aks), 0);
}

static void
test_cluster_attach_and_filters(void **state)
{
	static const char *const names[3] = { "test-gke-usc1", "test-aks-eus", "test-hp-usw2" };
	json_t *labels = json_pack("{s:s}", "team", "ml");

	(void)state;
	for (int i = 1; i < 3; i++) {
		add_secret(harness_js(harness_cs_cluster(&cs, names[i]), "token"));
		if (attach(admin, P[i].cloud_a, cluster_body(names[i], NULL, NULL, NULL, NULL,
		    labels)) != 201)
			fail_msg("attach %s: %ld %s", names[i], harness_r.status, harness_r.body);
		snprintf(clusters[i], sizeof(clusters[i]), "%s", harness_js(harness_r.json, "id"));
		expect_audit("cluster.create", clusters[i]);
		/* the same name twice under one cloud */
		attach(admin, P[i].cloud_a, cluster_body(names[i], NULL, NULL, NULL, NULL, NULL));
		harness_expect_problem(NULL, 409, "cluster.exists", "/name");
	}
	snprintf(clusters[0], sizeof(clusters[0]), "%s", prod_cluster);
	add_secret(harness_js(harness_cs_cluster(&cs, "test-hp-use1"), "token"));
	if (attach(admin, P[2].cloud_b, cluster_body("test-hp-use1", NULL, NULL, NULL, NULL,
	    NULL)) != 201)
		fail_msg("attach test-hp-use1: %ld %s", harness_r.status, harness_r.body);
	snprintf(hp_b_cluster, sizeof(hp_b_cluster), "%s", harness_js(harness_r.json, "id"));
	expect_audit("cluster.create", hp_b_cluster);
	json_decref(labels);

	{
		static const struct {
			const char *query;
			int want[4];	/* gke prod, aks test, hp test, hp staging */
		} f[] = {
			{ "", { 1, 1, 1, 1 } },
			{ "?environment=prod", { 1, 0, 0, 0 } },
			{ "?environment=test", { 0, 1, 1, 0 } },
			{ "?environment=staging", { 0, 0, 0, 1 } },
			{ "?region=eastus", { 0, 1, 0, 0 } },
			{ "?region=us-central1", { 1, 0, 0, 0 } },
			{ "?provider=hyperpod", { 0, 0, 1, 1 } },
			{ "?provider=hyperpod&environment=staging", { 0, 0, 0, 1 } },
			{ "?provider=gke&environment=test", { 0, 0, 0, 0 } },
			{ "?environment=nowhere", { 0, 0, 0, 0 } },
		};
		const char *ids[4] = { clusters[0], clusters[1], clusters[2], hp_b_cluster };

		for (size_t i = 0; i < sizeof(f) / sizeof(f[0]); i++) {
			char path[128];
			int n = 0;

			snprintf(path, sizeof(path), "/v1/clusters%s", f[i].query);
			assert_int_equal(harness_call("GET", viewer, NULL, "%s", path), 200);
			for (int k = 0; k < 4; k++) {
				n += f[i].want[k];
				if ((strstr(harness_r.body, ids[k]) != NULL) != f[i].want[k])
					fail_msg("%s: cluster %d: %s", path, k, harness_r.body);
			}
			assert_int_equal(json_array_size(json_object_get(harness_r.json, "items")),
			    n);
		}
		/* the staging token sees only its own */
		assert_int_equal(harness_call("GET", staging_admin, NULL, "/v1/clusters"), 200);
		assert_int_equal(json_array_size(json_object_get(harness_r.json, "items")), 1);
		assert_non_null(strstr(harness_r.body, hp_b_cluster));
		/* paging */
		assert_int_equal(harness_call("GET", viewer, NULL, "/v1/clusters?limit=3"), 200);
		assert_int_equal(json_array_size(json_object_get(harness_r.json, "items")), 3);
	}
}

static char *
etag_of(const char *path)
{
	assert_int_equal(harness_call("GET", admin, NULL, "%s", path), 200);
	return harness_header(&harness_r, "ETag");
}

static void
test_cloud_put_delete(void **state)
{
	const struct prov *p = &P[1];
	char path[128], body[800], stale[64], im[96], *etag, *etag2;
	long version;

	(void)state;
	snprintf(path, sizeof(path), "/v1/clouds/%s", p->cloud_a);
	etag = etag_of(path);
	assert_non_null(etag);
	version = (long)json_integer_value(json_object_get(harness_r.json, "version"));
	/* identical PUT: same version, no audit */
	snprintf(body, sizeof(body), "{\"name\":\"test-aks\",\"environment\":\"test\","
	    "\"provider\":\"aks\",\"region\":\"eastus\",\"account\":%s}", p->account);
	snprintf(im, sizeof(im), "If-Match: %s", etag);
	assert_int_equal(harness_call_h("PUT", admin, body, (const char *const[]){ im, NULL },
	    "%s", path), 200);
	assert_int_equal(json_integer_value(json_object_get(harness_r.json, "version")), version);
	etag2 = harness_header(&harness_r, "ETag");
	assert_string_equal(etag, etag2);
	free(etag2);
	/* stale If-Match */
	snprintf(stale, sizeof(stale), "If-Match: \"%ld\"", version + 7);
	snprintf(body, sizeof(body), "{\"name\":\"aks-renamed\",\"environment\":\"test\","
	    "\"provider\":\"aks\",\"region\":\"eastus\",\"account\":%s}", p->account);
	harness_call_h("PUT", admin, body, (const char *const[]){ stale, NULL }, "%s", path);
	harness_expect_problem(NULL, 412, "api.precondition_failed", NULL);
	/* a real change */
	assert_int_equal(harness_call_h("PUT", admin, body, (const char *const[]){ im, NULL },
	    "%s", path), 200);
	assert_int_equal(json_integer_value(json_object_get(harness_r.json, "version")),
	    version + 1);
	assert_string_equal(harness_js(harness_r.json, "name"), "aks-renamed");
	assert_string_equal(harness_js(harness_r.json, "state"), "active");
	expect_audit("cloud.update", p->cloud_a);
	assert_int_equal(harness_call("GET", viewer, NULL, "%s", path), 200);
	assert_string_equal(harness_js(harness_r.json, "name"), "aks-renamed");
	/* immutable fields */
	snprintf(body, sizeof(body), "{\"name\":\"aks-renamed\",\"environment\":\"test\","
	    "\"provider\":\"aks\",\"region\":\"westeurope\",\"account\":%s}", p->account);
	harness_call("PUT", admin, body, "%s", path);
	harness_expect_problem(NULL, 409, "cloud.immutable", "/region");
	snprintf(body, sizeof(body), "{\"name\":\"aks-renamed\",\"environment\":\"test\","
	    "\"provider\":\"hyperpod\",\"region\":\"us-west-2\",\"account\":%s}", p->account);
	harness_call("PUT", admin, body, "%s", path);
	assert_true(harness_r.status == 409 || harness_r.status == 400);
	assert_string_not_equal(harness_js(harness_r.json, "errors.0.pointer"), "");
	assert_true(strcmp(harness_js(harness_r.json, "errors.0.pointer"), "/provider") == 0 ||
	    strncmp(harness_js(harness_r.json, "errors.0.pointer"), "/account", 8) == 0);
	/* a cloud with a member cluster stays */
	harness_call("DELETE", admin, NULL, "%s", path);
	harness_expect_problem(NULL, 409, "cloud.in_use", NULL);
	free(etag);

	/* cluster PUT */
	{
		char cpath[128], *b;
		json_t *lab = json_pack("{s:s}", "team", "ml");

		snprintf(cpath, sizeof(cpath), "/v1/clusters/%s", clusters[1]);
		etag = etag_of(cpath);
		version = (long)json_integer_value(json_object_get(harness_r.json, "version"));
		b = cluster_body("test-aks-eus", NULL, NULL, NULL, NULL, lab);
		{	/* identical without credentials (write-only) keeps the version */
			json_t *o = json_loads(b, 0, NULL);

			json_object_del(o, "credentials");
			free(b);
			b = json_dumps(o, JSON_COMPACT);
			json_decref(o);
		}
		snprintf(im, sizeof(im), "If-Match: %s", etag);
		assert_int_equal(harness_call_h("PUT", admin, b, (const char *const[]){ im, NULL },
		    "%s", cpath),
		    200);
		assert_int_equal(json_integer_value(json_object_get(harness_r.json, "version")),
		    version);
		free(b);
		json_object_set_new(lab, "team", json_string("infra"));
		b = cluster_body("test-aks-eus", NULL, NULL, NULL, NULL, lab);
		harness_call_h("PUT", admin, b, (const char *const[]){ stale, NULL }, "%s", cpath);
		harness_expect_problem(NULL, 412, "api.precondition_failed", NULL);
		assert_int_equal(harness_call_h("PUT", admin, b, (const char *const[]){ im, NULL },
		    "%s", cpath),
		    200);
		assert_int_equal(json_integer_value(json_object_get(harness_r.json, "version")),
		    version + 1);
		assert_string_equal(harness_js(harness_r.json, "labels.team"), "infra");
		expect_audit("cluster.update", clusters[1]);
		/* the same body again, the same token included: nothing changes */
		assert_int_equal(harness_call("PUT", admin, b, "%s", cpath), 200);
		assert_int_equal(json_integer_value(json_object_get(harness_r.json, "version")),
		    version + 1);
		free(b);
		b = cluster_body("test-aks-eus", "renamed", NULL, NULL, NULL, lab);
		harness_call("PUT", admin, b, "%s", cpath);
		harness_expect_problem(NULL, 409, "cluster.immutable", "/name");
		free(b);
		json_decref(lab);
		free(etag);
		/* DELETE: stale If-Match, 204, then 404 */
		harness_call_h("DELETE", admin, NULL, (const char *const[]){ stale, NULL }, "%s",
		    cpath);
		harness_expect_problem(NULL, 412, "api.precondition_failed", NULL);
		assert_int_equal(harness_call("DELETE", oper, NULL, "%s", cpath), 403);
		assert_int_equal(harness_call("DELETE", admin, NULL, "%s", cpath), 204);
		expect_audit("cluster.delete", clusters[1]);
		assert_int_equal(harness_call("DELETE", admin, NULL, "%s", cpath), 404);
		assert_int_equal(harness_call("GET", admin, NULL, "%s", cpath), 404);
	}
	/* now the cloud goes, and with it its identities */
	assert_int_equal(harness_call("DELETE", admin, NULL, "%s", path), 204);
	expect_audit("cloud.delete", p->cloud_a);
	assert_int_equal(harness_call("GET", admin, NULL, "%s", path), 404);
	assert_int_equal(harness_call("DELETE", admin, NULL, "%s", path), 404);
	assert_int_equal(sql_count("SELECT count(*) FROM iam_identities WHERE cloud_id = $1",
	    p->cloud_a), 0);
}

/* ---- audit and secrets */

static void
test_audit(void **state)
{
	PGconn *c = PQconnectdb(dburl);
	PGresult *r;
	int n;

	(void)state;
	assert_int_equal(PQstatus(c), CONNECTION_OK);
	r = PQexec(c, "SELECT action, resource_id, coalesce(environment, ''), actor_name,"
	    " coalesce(request_id, ''), actor_id IS NOT NULL FROM audit_log"
	    " WHERE resource_type IN ('cloud', 'cluster') ORDER BY id");
	assert_int_equal(PQresultStatus(r), PGRES_TUPLES_OK);
	n = PQntuples(r);
	for (int i = 0; i < n || i < nexp; i++) {
		const char *a = i < n ? PQgetvalue(r, i, 0) : "(none)";
		const char *id = i < n ? PQgetvalue(r, i, 1) : "";

		if (i >= nexp || strcmp(a, exp_action[i]) != 0 || strcmp(id, exp_id[i]) != 0)
			fail_msg("audit row %d: have %s %s, want %s %s", i, a, id,
			    i < nexp ? exp_action[i] : "(none)", i < nexp ? exp_id[i] : "");
		assert_true(PQgetvalue(r, i, 2)[0] != '\0');
		assert_true(PQgetvalue(r, i, 3)[0] != '\0');
		assert_true(PQgetvalue(r, i, 4)[0] != '\0');
		assert_string_equal(PQgetvalue(r, i, 5), "t");
	}
	print_message("audit: %d rows for clouds and clusters, as expected\n", n);
	PQclear(r);
	PQfinish(c);
	/* admins read it over the API, filtered by resource */
	{
		char path[160];

		snprintf(path, sizeof(path), "/v1/audit?resource_type=cloud&resource_id=%s",
		    P[0].cloud_a);
		assert_int_equal(harness_call("GET", admin, NULL, "%s", path), 200);
		assert_non_null(strstr(harness_r.body, "cloud.iam.rotate"));
		assert_int_equal(harness_call("GET", oper, NULL, "/v1/audit"), 403);
	}
}

static void
test_secrets(void **state)
{
	char planted[64], path[128], *log, *b;

	(void)state;
	/* a credential replaced by PUT is sealed like the first */
	snprintf(planted, sizeof(planted), "planted-put-token-%d-c0ffee", (int)getpid());
	add_secret(planted);
	snprintf(path, sizeof(path), "/v1/clusters/%s", hp_b_cluster);
	b = cluster_body("test-hp-use1", NULL, NULL, NULL, planted, NULL);
	assert_int_equal(harness_call("PUT", admin, b, "%s", path), 200);
	free(b);
	expect_audit("cluster.update", hp_b_cluster);
	assert_int_equal(harness_call("GET", admin, NULL, "%s", path), 200);
	assert_int_equal(harness_call("GET", admin, NULL, "/v1/clusters"), 200);
	assert_int_equal(harness_call("GET", admin, NULL, "/v1/audit?limit=200"), 200);
	usleep(300 * 1000);	/* let the poller try the planted token once */
	log = harness_slurp(fd.log);
	assert_non_null(log);
	assert_non_null(strstr(log, "\"level\""));
	for (int i = 0; i < nsecrets; i++) {
		long leaks = sql_count("SELECT count(*) FROM audit_log WHERE position($1 in"
		    " coalesce(before::text, '') || coalesce(after::text, '')) > 0", secrets[i]);

		if (strstr(log, secrets[i]) != NULL)
			fail_msg("credential %d is in fleetd's log %s", i, fd.log);
		assert_int_equal(leaks, 0);
		assert_int_equal(sql_count("SELECT count(*) FROM clusters WHERE position($1 in"
		    " credentials_sealed || api_server || ca_cert || labels::text) > 0",
		    secrets[i]), 0);
	}
	print_message("%d credentials checked against every answer, the log and the audit\n",
	    nsecrets);
	free(log);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_phase1_bad_input),
		cmocka_unit_test(test_phase1),
		cmocka_unit_test(test_idempotent_create),
		cmocka_unit_test(test_phase2_grammar),
		cmocka_unit_test(test_flow_gke),
		cmocka_unit_test(test_flow_aks),
		cmocka_unit_test(test_flow_hyperpod),
		cmocka_unit_test(test_prod_walkthrough),
		cmocka_unit_test(test_cluster_bad_input),
		cmocka_unit_test(test_cluster_attach_and_filters),
		cmocka_unit_test(test_cloud_put_delete),
		cmocka_unit_test(test_secrets),
		cmocka_unit_test(test_audit),
	};

	if (harness_sh("openssl req -x509 -newkey rsa:2048 -nodes -subj /CN=not-cloudsim "
	    "-days 1 -keyout /dev/null -out /tmp/fleetd-reg-ca-%d.pem 2>/dev/null",
	    (int)getpid()) == 0) {
		char p[64], *pem;

		snprintf(p, sizeof(p), "/tmp/fleetd-reg-ca-%d.pem", (int)getpid());
		pem = harness_slurp(p);
		snprintf(wrong_ca, sizeof(wrong_ca), "%s", pem ? pem : "");
		free(pem);
		unlink(p);
	}
	return cmocka_run_group_tests(tests, setup, teardown);
}
