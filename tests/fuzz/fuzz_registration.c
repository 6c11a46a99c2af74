/* fuzz_registration: the cloud and cluster registration bodies — POST /v1/clouds (phase 1
 * through the policy documents), the phase-2 identity pair, POST .../clusters — and the
 * catalog checks they lean on, all without a database.
 * {"cloud": {...}, "pair": {...}, "cluster": {...}, "catalog": {...}}, each optional. */
#include <ctype.h>

/* registry.c's static body checks (unpack, account_parse) are what POST /v1/clouds runs
 * before touching the database: compile them in here rather than copy them. */
#include "iam/registry.c"
#include "regions/cluster.h"
#include "tests/fuzz/fuzz.h"

static const char CLOUD_ID[] = "3f2a9c4e-1b7d-4e8f-9a6b-0c5d2e1f7a8b";
static const char EXT_ID[] = "4e7c1a9b2d3f5e6a7b8c9d0e1f2a3b4c5d6e7f80";

static void
check_gcp_label(const char *s)
{
	char out[64];

	for (int key = 0; key < 2; key++) {
		size_t n;

		iam_gcp_label(s, key, out);
		n = strlen(out);
		FUZZ_CHECK(n <= 63 && strspn(out, "abcdefghijklmnopqrstuvwxyz0123456789-_") == n,
		    "gcp label %s", out);
		FUZZ_CHECK(!key || (n > 0 && islower((unsigned char)out[0])), "gcp key %s", out);
	}
}

/* Phase 1: what registry_cloud_create checks, then the policy documents. */
static void
cloud(json_t *body)
{
	const char *name, *env, *provider, *region;
	struct iam_policy_input in = { .cloud_id = CLOUD_ID, .external_id = EXT_ID };
	struct err e = { 0 };
	json_t *acct, *req, *again;
	char *text;

	if (!json_is_object(body))
		return;
	if (!unpack(body, &name, &env, &provider, &region, &acct, &e) ||
	    !account_parse(provider, acct, &in.account, &e)) {
		FUZZ_CHECK(e.status == 400 && e.code[0] != '\0', "refusal %d %s", e.status, e.code);
		return;
	}
	FUZZ_CHECK(catalog_provider_valid(provider) && catalog_region_valid(provider, region),
	    "unknown %s/%s accepted", provider, region);
	check_gcp_label(name);
	check_gcp_label(env);
	registry_account(body, &in.account);
	in.provider = provider;
	in.region = region;
	in.environment = env;
	in.fleetd_principal = strcmp(provider, "hyperpod") == 0 ?
	    "arn:aws:iam::111122223333:role/fleetd" : strcmp(provider, "gke") == 0 ?
	    "fleetd@ops-project.iam.gserviceaccount.com" : "0a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d";
	in.fleetd_tenant = "5e6f7a8b-9c0d-4e1f-8a2b-3c4d5e6f7a8b";
	req = iam_policy_required(&in, &e);
	if (req == NULL) {
		FUZZ_CHECK(e.status == 400 && e.pointer[0] == '/', "policy refusal %d %s %s",
		    e.status, e.code, e.pointer);
		return;
	}
	again = iam_policy_required(&in, &e);
	FUZZ_CHECK(again != NULL && json_equal(req, again), "policy documents not pure");
	text = json_dumps(req, JSON_COMPACT);
	FUZZ_CHECK(text != NULL && strstr(text, CLOUD_ID) != NULL, "documents not scoped");
	free(text);
	json_decref(again);
	json_decref(req);
}

/* Phase 2: the pair, against the cloud's provider and account. */
static void
pair(json_t *cloud_body, json_t *body)
{
	const char *provider = json_string_value(json_object_get(cloud_body, "provider"));
	json_t *a = json_object_get(cloud_body, "account");
	json_t *c = json_pack("{s:s, s:o}", "provider", provider ? provider : "gke", "account",
	    json_is_object(a) ? json_deep_copy(a) : json_object());
	const char *cp = NULL, *cl = NULL;
	struct iam_account acct;
	struct err e = { 0 };

	if (!json_is_object(body)) {
		json_decref(c);
		return;
	}
	if (registry_pair_parse(c, body, &cp, &cl, &e)) {
		registry_account(c, &acct);
		FUZZ_CHECK(strcmp(cp, cl) != 0, "same identity twice");
		FUZZ_CHECK(iam_identity_valid(json_string_value(json_object_get(c, "provider")),
		    "control_plane_role", cp, &acct, &e) && iam_identity_valid(
		    json_string_value(json_object_get(c, "provider")), "cluster_role", cl, &acct,
		    &e), "pair valid, identity not");
	} else {
		FUZZ_CHECK(e.status == 400 || e.status == 422, "pair refusal %d %s", e.status,
		    e.code);
	}
	json_decref(c);
}

static void
cluster(json_t *cloud_body, json_t *body, bool for_replace)
{
	const char *provider = json_string_value(json_object_get(cloud_body, "provider"));
	struct cluster_input in;
	struct err e = { 0 };

	if (!json_is_object(body))
		return;
	if (provider == NULL || !catalog_provider_valid(provider))
		provider = "aks";
	if (!cluster_parse(body, provider, for_replace, &in, &e)) {
		FUZZ_CHECK(e.status == 400 && e.pointer[0] == '/', "cluster refusal %d %s",
		    e.status, e.code);
		return;
	}
	FUZZ_CHECK(in.name && strlen(in.name) >= 2 && strlen(in.name) <= 63 &&
	    islower((unsigned char)in.name[0]), "cluster name %s", in.name);
	FUZZ_CHECK(strncmp(in.api_server, "https://", 8) == 0, "api server %s", in.api_server);
	FUZZ_CHECK(for_replace || in.token != NULL, "token required on create");
	FUZZ_CHECK(in.token == NULL || (strlen(in.token) >= 1 && strlen(in.token) <= 8192),
	    "token length");
	FUZZ_CHECK(in.labels == NULL || json_object_size(in.labels) <= 64, "labels");
}

static void
catalog(json_t *body)
{
	const char *flavor = json_string_value(json_object_get(body, "flavor"));
	const char *topo = json_string_value(json_object_get(body, "topology"));
	const char *prov = json_string_value(json_object_get(body, "provider"));
	const char *mt = json_string_value(json_object_get(body, "machine_type"));
	struct catalog_slice sl;
	struct catalog_machine m;
	struct err e = { 0 };

	if (flavor != NULL) {
		bool ok = catalog_flavor_check(flavor, "/flavor", &e);

		FUZZ_CHECK(ok == (catalog_flavor_get(flavor) != NULL) && ok ==
		    catalog_flavor_valid(flavor), "flavor verdicts differ for %s", flavor);
		if (topo != NULL && catalog_slice_parse(flavor, topo, "/t", &sl, &e))
			FUZZ_CHECK(sl.chips == sl.dims[0] * sl.dims[1] * (sl.dims[2] ? sl.dims[2] :
			    1) && sl.chips_per_host > 0 && sl.hosts * sl.chips_per_host ==
			    sl.chips, "slice %s: %d chips %d hosts", topo, sl.chips, sl.hosts);
	}
	if (prov != NULL && mt != NULL && catalog_machine_lookup(prov, mt, &m, &e))
		FUZZ_CHECK(strcmp(m.provider, prov) == 0 && strcmp(m.machine_type, mt) == 0 &&
		    catalog_flavor_valid(m.flavor) && m.on_demand_hour > 0, "machine %s", mt);
	if (prov != NULL && json_is_string(json_object_get(body, "region")))
		FUZZ_CHECK(catalog_region_check(prov, json_string_value(json_object_get(body,
		    "region")), "/r", &e) == catalog_region_valid(prov, json_string_value(
		    json_object_get(body, "region"))), "region verdicts differ");
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct err e = { 0 };
	json_t *j = jsonx_parse_object((const char *)data, size, &e), *c;

	if (j == NULL)
		return 0;
	c = json_object_get(j, "cloud");
	cloud(c);
	pair(c, json_object_get(j, "pair"));
	cluster(c, json_object_get(j, "cluster"), size % 2);
	if (json_is_object(json_object_get(j, "catalog")))
		catalog(json_object_get(j, "catalog"));
	json_decref(j);
	return 0;
}
