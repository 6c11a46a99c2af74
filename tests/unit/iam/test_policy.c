/* test_policy: golden IAM documents per provider, their scoping to the cloud, bad input,
 * and the identity grammar table. FLEETD_UPDATE_GOLDEN=1 rewrites the golden files. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "iam/policy.h"

#define CLOUD	"3f2b8c1e-5a6d-4e7f-9a0b-1c2d3e4f5a6b"
#define EXT	"fx-7d1e0c9a4b2f48d6a3e5b7c9d1f3a5b7"
#define AWS_ACCT "123456789012"
#define PROJECT	"acme-ml-prod"
#define SUB	"0b1c2d3e-4f50-4a6b-8c7d-9e0f1a2b3c4d"
#define TENANT	"5e6f7a8b-9c0d-4e1f-a2b3-c4d5e6f7a8b9"
#define RG	"rg-fleet-prod-eastus"

static const struct iam_policy_input aws_in = {
	.cloud_id = CLOUD, .external_id = EXT, .provider = "hyperpod", .region = "us-east-1",
	.environment = "prod", .account = { .aws_account_id = AWS_ACCT },
	.fleetd_principal = "arn:aws:iam::999988887777:role/fleetd",
};
static const struct iam_policy_input gcp_in = {
	.cloud_id = CLOUD, .external_id = EXT, .provider = "gke", .region = "us-central1",
	.environment = "prod", .account = { .gcp_project = PROJECT },
	.fleetd_principal = "fleetd@fleet-ops.iam.gserviceaccount.com",
};
static const struct iam_policy_input azure_in = {
	.cloud_id = CLOUD, .external_id = EXT, .provider = "aks", .region = "eastus",
	.environment = "prod", .account = { .azure_subscription_id = SUB,
	.azure_tenant_id = TENANT, .azure_resource_group = RG },
	.fleetd_principal = "7a8b9c0d-1e2f-4a3b-8c4d-5e6f7a8b9c0d",
	.fleetd_tenant = "11111111-2222-4333-8444-555555555555",
};

static json_t *
required(const struct iam_policy_input *in)
{
	struct err e = { 0 };
	json_t *doc = iam_policy_required(in, &e);

	if (doc == NULL)
		fail_msg("%s: %s (%s)", in->provider, e.msg, e.pointer);
	return doc;
}

static void
golden(const char *name, json_t *doc)
{
	char path[256], *text = json_dumps(doc, JSON_INDENT(2) | JSON_SORT_KEYS);
	FILE *f;

	snprintf(path, sizeof(path), "tests/fixtures/policy/%s.json", name);
	if (getenv("FLEETD_UPDATE_GOLDEN") != NULL) {
		f = fopen(path, "w");
		assert_non_null(f);
		fprintf(f, "%s\n", text);
		fclose(f);
	} else {
		char buf[32768];
		size_t n;

		f = fopen(path, "r");
		if (f == NULL)
			fail_msg("missing %s (FLEETD_UPDATE_GOLDEN=1 writes it)", path);
		n = fread(buf, 1, sizeof(buf) - 1, f);
		fclose(f);
		buf[n] = '\0';
		assert_true(n > 0 && buf[n - 1] == '\n');
		buf[n - 1] = '\0';
		if (strcmp(buf, text) != 0)
			fail_msg("%s differs from the generated document", path);
	}
	free(text);
}

static const char *
str_at(json_t *root, const char *path)
{
	char buf[256], *tok, *save = NULL;
	json_t *v = root;

	snprintf(buf, sizeof(buf), "%s", path);
	for (tok = strtok_r(buf, "/", &save); tok && v; tok = strtok_r(NULL, "/", &save))
		v = json_is_array(v) ? json_array_get(v, strtoul(tok, NULL, 10)) :
		    json_object_get(v, tok);
	return json_string_value(v);
}

static void
no_wildcard_actions(json_t *actions)
{
	size_t i;
	json_t *a;

	assert_true(json_array_size(actions) > 0);
	json_array_foreach(actions, i, a) {
		assert_non_null(json_string_value(a));
		if (strchr(json_string_value(a), '*') != NULL)
			fail_msg("wildcard action %s", json_string_value(a));
	}
}

static void
test_aws_golden(void **state)
{
	json_t *doc = required(&aws_in), *again = required(&aws_in);

	(void)state;
	assert_true(json_equal(doc, again));
	golden("aws", doc);
	json_decref(doc);
	json_decref(again);
}

/* Every permission statement: no wildcard action, resources in this account, and either
 * the cloud-id tag condition or (service quotas, which cannot be tagged) this region. */
static void
test_aws_scoped(void **state)
{
	json_t *doc = required(&aws_in), *st, *s;
	const char *name;
	char arn[200];
	size_t i, tagged = 0;
	struct err e = { 0 };

	(void)state;
	assert_string_equal(str_at(doc, "control_plane_role/assume_role_policy/Statement/0/"
	    "Condition/StringEquals/sts:ExternalId"), EXT);
	assert_string_equal(str_at(doc, "control_plane_role/assume_role_policy/Statement/0/"
	    "Principal/AWS"), aws_in.fleetd_principal);
	st = json_object_get(json_object_get(json_array_get(json_object_get(json_object_get(
	    doc, "control_plane_role"), "inline_policies"), 0), "policy"), "Statement");
	assert_true(json_array_size(st) >= 3);
	json_array_foreach(st, i, s) {
		json_t *res = json_object_get(s, "Resource"), *r;
		const char *tag;
		size_t j;

		no_wildcard_actions(json_object_get(s, "Action"));
		assert_string_equal(str_at(s, "Effect"), "Allow");
		json_array_foreach(res, j, r)
			assert_non_null(strstr(json_string_value(r), ":" AWS_ACCT ":"));
		if (json_object_get(json_object_get(s, "Condition"), "StringEquals") == NULL)
			fail_msg("statement %zu has no condition", i);
		tag = json_string_value(json_object_get(json_object_get(json_object_get(s,
		    "Condition"), "StringEquals"), "aws:ResourceTag/fleet.io/cloud-id"));
		if (tag != NULL) {
			assert_string_equal(tag, CLOUD);
			tagged++;
		} else {
			assert_string_equal(str_at(s, "Sid"), "ReadSageMakerQuotasInRegion");
			assert_string_equal(str_at(s, "Condition/StringEquals/"
			    "aws:RequestedRegion"), "us-east-1");
		}
	}
	assert_int_equal(tagged, json_array_size(st) - 1);
	assert_string_equal(str_at(doc, "cluster_role/assume_role_policy/Statement/0/"
	    "Principal/Service"), "sagemaker.amazonaws.com");
	assert_string_equal(str_at(doc, "cluster_role/assume_role_policy/Statement/0/"
	    "Condition/StringEquals/aws:SourceAccount"), AWS_ACCT);
	for (i = 0; i < 2; i++) {
		const char *role = i ? "cluster_role" : "control_plane_role";
		json_t *r = json_object_get(doc, role);

		assert_string_equal(json_string_value(json_object_get(json_object_get(r,
		    "tags"), "fleet.io/cloud-id")), CLOUD);
		assert_string_equal(json_string_value(json_object_get(json_object_get(r,
		    "tags"), "fleet.io/environment")), "prod");
		name = str_at(r, "suggested_name");
		assert_true(strlen(name) <= 64);
		snprintf(arn, sizeof(arn), "arn:aws:iam::%s:role/fleet/%s", AWS_ACCT, name);
		if (!iam_identity_valid("hyperpod", role, arn, &aws_in.account, &e))
			fail_msg("suggested %s rejected: %s", arn, e.msg);
	}
	json_decref(doc);
}

static void
test_gcp_golden(void **state)
{
	json_t *doc = required(&gcp_in);

	(void)state;
	golden("gcp", doc);
	json_decref(doc);
}

static void
test_gcp_scoped(void **state)
{
	json_t *doc = required(&gcp_in), *perms, *b;
	const char *expr, *sa[2] = { "control_plane_service_account",
		"cluster_service_account" };
	struct err e = { 0 };
	size_t i;
	json_t *p;

	(void)state;
	perms = json_object_get(json_object_get(json_object_get(doc, "custom_role"), "role"),
	    "includedPermissions");
	no_wildcard_actions(perms);
	json_array_foreach(perms, i, p)
		assert_true(strncmp(json_string_value(p), "container.", 10) == 0 ||
		    strncmp(json_string_value(p), "compute.", 8) == 0);
	assert_string_equal(str_at(doc, "custom_role/role/stage"), "GA");
	b = json_array_get(json_object_get(doc, "project_bindings"), 0);
	assert_string_equal(str_at(b, "role"), "projects/" PROJECT "/roles/fleet_3f2b8c1e_"
	    "control_plane");
	expr = str_at(b, "condition/expression");
	assert_non_null(strstr(expr, "\"projects/" PROJECT "/locations/us-central1/clusters/"
	    "fleet-3f2b8c1e-\""));
	assert_non_null(strstr(expr, "projects/" PROJECT "/regions/us-central1\""));
	assert_null(strstr(expr, "*"));
	assert_string_equal(str_at(b, "members/0"),
	    "serviceAccount:fleet-3f2b8c1e-cp@" PROJECT ".iam.gserviceaccount.com");
	b = json_array_get(json_object_get(doc, "service_account_bindings"), 0);
	assert_string_equal(str_at(b, "role"), "roles/iam.serviceAccountTokenCreator");
	assert_string_equal(str_at(b, "members/0"), "serviceAccount:fleetd@fleet-ops.iam."
	    "gserviceaccount.com");
	assert_string_equal(str_at(b, "resource"), "projects/" PROJECT "/serviceAccounts/"
	    "fleet-3f2b8c1e-cp@" PROJECT ".iam.gserviceaccount.com");
	for (i = 0; i < 2; i++) {
		json_t *s = json_object_get(doc, sa[i]);

		assert_string_equal(str_at(s, "labels/fleet-io-cloud-id"), CLOUD);
		assert_string_equal(str_at(s, "labels/fleet-io-environment"), "prod");
		assert_non_null(strstr(str_at(s, "description"), "fleet-io-cloud-id=" CLOUD));
		if (!iam_identity_valid("gke", sa[i], str_at(s, "email"), &gcp_in.account, &e))
			fail_msg("suggested %s rejected: %s", str_at(s, "email"), e.msg);
	}
	json_decref(doc);
}

static void
test_gcp_labels(void **state)
{
	char out[64];
	const char *long_in = "Aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa";

	(void)state;
	iam_gcp_label("fleet.io/cloud-id", true, out);
	assert_string_equal(out, "fleet-io-cloud-id");
	iam_gcp_label("Prod.EU/West_2", false, out);
	assert_string_equal(out, "prod-eu-west_2");
	iam_gcp_label("9lives", true, out);
	assert_string_equal(out, "x9lives");	/* keys start with a letter */
	iam_gcp_label(long_in, false, out);
	assert_int_equal(strlen(out), 63);
	assert_int_equal(out[0], 'a');
}

static void
test_azure_golden(void **state)
{
	json_t *doc = required(&azure_in);

	(void)state;
	golden("azure", doc);
	json_decref(doc);
}

static void
test_azure_scoped(void **state)
{
	json_t *doc = required(&azure_in), *defs = json_object_get(doc, "role_definitions");
	json_t *d, *a;
	const char *ids[2] = { "control_plane_identity", "cluster_identity" };
	struct err e = { 0 };
	size_t i, j;

	(void)state;
	assert_int_equal(json_array_size(defs), 2);
	json_array_foreach(defs, i, d) {
		const char *scope = str_at(d, "AssignableScopes/0");

		assert_true(json_is_true(json_object_get(d, "IsCustom")));
		assert_int_equal(json_array_size(json_object_get(d, "NotActions")), 0);
		assert_int_equal(json_array_size(json_object_get(d, "AssignableScopes")), 1);
		assert_non_null(strstr(str_at(d, "Description"), CLOUD));
		no_wildcard_actions(json_object_get(d, "Actions"));
		json_array_foreach(json_object_get(d, "Actions"), j, a) {
			const char *act = json_string_value(a);
			bool subwide = strcmp(act, "Microsoft.Compute/skus/read") == 0 ||
			    strcmp(act, "Microsoft.Compute/locations/usages/read") == 0;

			assert_true(strcmp(act + strlen(act) - 5, "/read") == 0);
			/* only the two subscription-level reads may leave the resource group */
			if (subwide)
				assert_string_equal(scope, "/subscriptions/" SUB);
			else
				assert_string_equal(scope, "/subscriptions/" SUB
				    "/resourceGroups/" RG);
		}
		assert_string_equal(str_at(doc, i ? "role_assignments/1/scope" :
		    "role_assignments/0/scope"), scope);
	}
	for (i = 0; i < 2; i++) {
		json_t *id = json_object_get(doc, ids[i]);

		assert_string_equal(json_string_value(json_object_get(json_object_get(id,
		    "tags"), "fleet.io/cloud-id")), CLOUD);
		if (!iam_identity_valid("aks", ids[i], str_at(id, "id"), &azure_in.account, &e))
			fail_msg("suggested %s rejected: %s", str_at(id, "id"), e.msg);
	}
	/* the federated credential fleetd signs in with: its tenant, its principal, the
	 * token-exchange audience; the node identity trusts nobody */
	assert_string_equal(str_at(doc, "control_plane_identity/federated_identity_credentials"
	    "/0/issuer"), "https://login.microsoftonline.com/11111111-2222-4333-8444-"
	    "555555555555/v2.0");
	assert_string_equal(str_at(doc, "control_plane_identity/federated_identity_credentials"
	    "/0/subject"), azure_in.fleetd_principal);
	assert_int_equal(json_array_size(json_object_get(json_object_get(doc,
	    "control_plane_identity"), "federated_identity_credentials")), 1);
	assert_string_equal(str_at(doc, "control_plane_identity/federated_identity_credentials"
	    "/0/audiences/0"), "api://AzureADTokenExchange");
	assert_null(json_object_get(json_object_get(doc, "cluster_identity"),
	    "federated_identity_credentials"));
	/* fleetd itself reads only the control-plane identity (its client id) */
	assert_int_equal(json_array_size(json_object_get(doc, "role_assignments")), 3);
	assert_string_equal(str_at(doc, "role_assignments/2/scope"),
	    str_at(doc, "control_plane_identity/id"));
	assert_string_equal(str_at(doc, "role_assignments/2/role_definition_name"), "Reader");
	assert_string_equal(str_at(doc, "role_assignments/2/assignee"), "fleetd");
	json_decref(doc);
}

/* Each case mutates a copy of a good input; the field named must be the one at fault. */
static void
test_bad_input(void **state)
{
	struct {
		struct iam_policy_input in;
		int status;
		const char *code, *pointer;
	} cases[16];
	size_t n = 0;
	struct err e;

	(void)state;
#define CASE(base, field, value, st, c, p) do { cases[n].in = base; \
		cases[n].in.field = value; cases[n].status = st; cases[n].code = c; \
		cases[n].pointer = p; n++; } while (0)
	CASE(aws_in, cloud_id, "not-a-uuid", 400, "iam.bad_input", "/id");
	CASE(aws_in, cloud_id, "3F2B8C1E-5A6D-4E7F-9A0B-1C2D3E4F5A6B", 400, "iam.bad_input",
	    "/id");
	CASE(aws_in, external_id, "short", 400, "iam.bad_input", "/external_id");
	CASE(aws_in, external_id, "has spaces in it, 1234567", 400, "iam.bad_input",
	    "/external_id");
	CASE(aws_in, environment, "", 400, "iam.bad_input", "/environment");
	CASE(aws_in, environment, "pr\"od", 400, "iam.bad_input", "/environment");
	CASE(aws_in, provider, "eks", 400, "catalog.unknown_provider", "/provider");
	CASE(aws_in, region, "us-central1", 400, "catalog.unknown_region", "/region");
	CASE(aws_in, account.aws_account_id, "12345678901", 400, "iam.bad_account",
	    "/account/account_id");
	CASE(aws_in, account.gcp_project, PROJECT, 400, "iam.bad_account", "/account");
	CASE(gcp_in, account.gcp_project, "Acme", 400, "iam.bad_account", "/account/project");
	CASE(gcp_in, account.aws_account_id, AWS_ACCT, 400, "iam.bad_account", "/account");
	CASE(azure_in, account.azure_subscription_id, "sub-1", 400, "iam.bad_account",
	    "/account/subscription_id");
	CASE(azure_in, account.azure_resource_group, "rg.", 400, "iam.bad_account",
	    "/account/resource_group");
	CASE(azure_in, fleetd_tenant, NULL, 500, "iam.bad_principal", "");
	CASE(gcp_in, fleetd_principal, "arn:aws:iam::999988887777:role/fleetd", 500,
	    "iam.bad_principal", "");
#undef CASE
	for (size_t i = 0; i < n; i++) {
		json_t *doc;

		memset(&e, 0, sizeof(e));
		doc = iam_policy_required(&cases[i].in, &e);
		if (doc != NULL)
			fail_msg("case %zu accepted", i);
		if (e.status != cases[i].status || strcmp(e.code, cases[i].code) != 0 ||
		    strcmp(e.pointer, cases[i].pointer) != 0)
			fail_msg("case %zu: %d %s %s", i, e.status, e.code, e.pointer);
	}
}

static const struct {
	const char *provider, *value;
	int status;	/* 0 = valid */
} id_cases[] = {
	{ "hyperpod", "arn:aws:iam::123456789012:role/fleet-cp", 0 },
	{ "hyperpod", "arn:aws:iam::123456789012:role/fleet/prod/fleet-cp", 0 },
	{ "hyperpod", "arn:aws:iam::123456789012:role/a+b=c,d.e@f_g-h", 0 },
	{ "hyperpod", "arn:aws:iam::210987654321:role/fleet-cp", 422 },
	{ "hyperpod", "arn:aws:iam::123456789012:user/fleet-cp", 400 },
	{ "hyperpod", "arn:aws:iam::12345678901:role/fleet-cp", 400 },
	{ "hyperpod", "arn:aws:sts::123456789012:role/fleet-cp", 400 },
	{ "hyperpod", "arn:aws:iam::123456789012:role/", 400 },
	{ "hyperpod", "arn:aws:iam::123456789012:role/fleet//cp", 400 },
	{ "hyperpod", "arn:aws:iam::123456789012:role/has space", 400 },
	{ "hyperpod", "arn:aws:iam::123456789012:role/"
	    "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", 400 },
	{ "hyperpod", "fleet-cp", 400 },
	{ "hyperpod", "", 400 },
	{ "gke", "fleet-cp@" PROJECT ".iam.gserviceaccount.com", 0 },
	{ "gke", "fleet-cp@other-project.iam.gserviceaccount.com", 422 },
	{ "gke", "fleet-cp@" PROJECT ".iam.gserviceaccount.com.evil.io", 400 },
	{ "gke", "fleet-cp@" PROJECT ".gserviceaccount.com", 400 },
	{ "gke", "cp@" PROJECT ".iam.gserviceaccount.com", 400 },	/* name < 6 */
	{ "gke", "Fleet-cp@" PROJECT ".iam.gserviceaccount.com", 400 },
	{ "gke", "1fleet-cp@" PROJECT ".iam.gserviceaccount.com", 400 },
	{ "gke", "fleet-cp-@" PROJECT ".iam.gserviceaccount.com", 400 },
	{ "gke", "fleet-cp@.iam.gserviceaccount.com", 400 },
	{ "gke", "fleet-cp@a@" PROJECT ".iam.gserviceaccount.com", 400 },
	{ "gke", "fleet-cp", 400 },
	{ "aks", "/subscriptions/" SUB "/resourceGroups/" RG
	    "/providers/Microsoft.ManagedIdentity/userAssignedIdentities/fleet-cp", 0 },
	{ "aks", "/subscriptions/0B1C2D3E-4F50-4A6B-8C7D-9E0F1A2B3C4D/resourcegroups/"
	    "RG-FLEET-PROD-EASTUS/providers/microsoft.managedidentity/"
	    "userassignedidentities/fleet-cp", 0 },
	{ "aks", "/subscriptions/" SUB "/resourceGroups/other-rg"
	    "/providers/Microsoft.ManagedIdentity/userAssignedIdentities/fleet-cp", 422 },
	{ "aks", "/subscriptions/9b1c2d3e-4f50-4a6b-8c7d-9e0f1a2b3c4d/resourceGroups/" RG
	    "/providers/Microsoft.ManagedIdentity/userAssignedIdentities/fleet-cp", 422 },
	{ "aks", "/subscriptions/" SUB "/resourceGroups/" RG
	    "/providers/Microsoft.Compute/virtualMachines/fleet-cp", 400 },
	{ "aks", "/subscriptions/" SUB "/resourceGroups/" RG
	    "/providers/Microsoft.ManagedIdentity/userAssignedIdentities/fleet-cp/extra", 400 },
	{ "aks", "/subscriptions/" SUB "/resourceGroups/" RG
	    "/providers/Microsoft.ManagedIdentity/userAssignedIdentities/", 400 },
	{ "aks", "/subscriptions/not-a-uuid/resourceGroups/" RG
	    "/providers/Microsoft.ManagedIdentity/userAssignedIdentities/fleet-cp", 400 },
	{ "aks", "/subscriptions/" SUB "/resourceGroups/" RG
	    "/providers/Microsoft.ManagedIdentity/userAssignedIdentities/x", 400 },
	{ "aks", "fleet-cp", 400 },
	{ "eks", "arn:aws:iam::123456789012:role/fleet-cp", 400 },
};

static void
test_identity_table(void **state)
{
	struct iam_account acct = { .aws_account_id = AWS_ACCT, .gcp_project = PROJECT,
		.azure_subscription_id = SUB, .azure_resource_group = RG };
	struct err e;

	(void)state;
	for (size_t i = 0; i < sizeof(id_cases) / sizeof(id_cases[0]); i++) {
		bool ok;

		memset(&e, 0, sizeof(e));
		ok = iam_identity_valid(id_cases[i].provider, "control_plane_role",
		    id_cases[i].value, &acct, &e);
		if (ok != (id_cases[i].status == 0) || (!ok && e.status != id_cases[i].status))
			fail_msg("case %zu %s: ok=%d status=%d (%s)", i, id_cases[i].value, ok,
			    e.status, e.msg);
		if (!ok && strcmp(id_cases[i].provider, "eks") != 0)
			assert_string_equal(e.pointer, "/control_plane_role");
	}
	assert_false(iam_identity_valid("gke", "cluster_role", NULL, &acct, &e));
	assert_string_equal(e.pointer, "/cluster_role");
}

static void
test_pair(void **state)
{
	struct err e = { 0 };

	(void)state;
	assert_true(iam_pair_valid("hyperpod", "arn:aws:iam::" AWS_ACCT ":role/a",
	    "arn:aws:iam::" AWS_ACCT ":role/b", &aws_in.account, &e));
	assert_false(iam_pair_valid("hyperpod", "arn:aws:iam::" AWS_ACCT ":role/a",
	    "arn:aws:iam::" AWS_ACCT ":role/a", &aws_in.account, &e));
	assert_string_equal(e.code, "iam.identity_reused");
	assert_false(iam_pair_valid("hyperpod", "arn:aws:iam::" AWS_ACCT ":role/a",
	    "nope", &aws_in.account, &e));
	assert_string_equal(e.pointer, "/cluster_role");
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_aws_golden),
		cmocka_unit_test(test_aws_scoped),
		cmocka_unit_test(test_gcp_golden),
		cmocka_unit_test(test_gcp_scoped),
		cmocka_unit_test(test_gcp_labels),
		cmocka_unit_test(test_azure_golden),
		cmocka_unit_test(test_azure_scoped),
		cmocka_unit_test(test_bad_input),
		cmocka_unit_test(test_identity_table),
		cmocka_unit_test(test_pair),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
