/* registry: phase 1 (create pending_iam), phase 2 (verify and lock), rotation. */
#include <stdlib.h>
#include <string.h>

#include <uuid/uuid.h>

#include "core/config.h"
#include "core/crypto.h"
#include "core/jsonx.h"
#include "iam/registry.h"
#include "regions/catalog.h"
#include "regions/cloud.h"
#include "regions/env.h"

static const char *const account_keys_gke[] = { "project", NULL };
static const char *const account_keys_aks[] = { "subscription_id", "tenant_id",
	"resource_group", NULL };
static const char *const account_keys_hyperpod[] = { "account_id", NULL };

void
registry_account(json_t *cloud, struct iam_account *a)
{
	json_t *acct = json_object_get(cloud, "account");

	memset(a, 0, sizeof(*a));
	a->gcp_project = json_string_value(json_object_get(acct, "project"));
	a->azure_subscription_id = json_string_value(json_object_get(acct, "subscription_id"));
	a->azure_tenant_id = json_string_value(json_object_get(acct, "tenant_id"));
	a->azure_resource_group = json_string_value(json_object_get(acct, "resource_group"));
	a->aws_account_id = json_string_value(json_object_get(acct, "account_id"));
}

/* Checks the account object against the provider's own fields. */
static bool
account_parse(const char *provider, json_t *acct, struct iam_account *a, struct err *e)
{
	const char *const *keys = strcmp(provider, "gke") == 0 ? account_keys_gke :
	    strcmp(provider, "aks") == 0 ? account_keys_aks : account_keys_hyperpod;
	const char *k;
	json_t *v;

	if (!json_is_object(acct))
		return err_field(e, 400, "api.wrong_type", "/account", "account must be an object");
	json_object_foreach(acct, k, v) {
		bool known = false;
		char ptr[128];

		for (int i = 0; keys[i] != NULL; i++)
			known = known || strcmp(k, keys[i]) == 0;
		snprintf(ptr, sizeof(ptr), "/account/%.100s", k);
		if (!known)
			return err_field(e, 400, "cloud.account_field", ptr,
			    "%.60s is not an account field of provider %s", k, provider);
	}
	for (int i = 0; keys[i] != NULL; i++) {
		const char *s = NULL;

		if (!jsonx_str(acct, keys[i], "/account", true, &s, e))
			return false;
	}
	(void)a;
	return true;
}

static bool
unpack(json_t *body, const char **name, const char **env, const char **provider,
       const char **region, json_t **acct, struct err *e)
{
	static const char *const allowed[] = { "name", "environment", "provider", "region",
		"account", NULL };

	if (!jsonx_only(body, allowed, "", e) ||
	    !jsonx_str(body, "name", "", true, name, e) ||
	    !jsonx_str(body, "environment", "", true, env, e) ||
	    !jsonx_str(body, "provider", "", true, provider, e) ||
	    !jsonx_str(body, "region", "", true, region, e))
		return false;
	if (!jsonx_name_ok(*name, 63))
		return err_field(e, 400, "cloud.bad_name", "/name",
		    "name must match ^[a-z][a-z0-9-]{1,62}$");
	if (!catalog_region_check(*provider, *region, "/region", e)) {
		if (strcmp(e->code, "catalog.unknown_provider") == 0)
			snprintf(e->pointer, sizeof(e->pointer), "/provider");
		return false;
	}
	*acct = json_object_get(body, "account");
	if (*acct == NULL)
		return err_field(e, 400, "api.missing_field", "/account", "account is required");
	return true;
}

bool
registry_cloud_create(struct db *c, json_t *body, json_t **out, struct err *e)
{
	static const char sql[] = "INSERT INTO clouds (id, name, environment, provider, region,"
	    " account, external_id, required) VALUES ($1, $2, $3, $4, $5, $6::jsonb, $7, $8::jsonb)";
	const char *name, *env, *provider, *region;
	json_t *acct, *required = NULL, *envobj = NULL;
	struct iam_policy_input in = { 0 };
	char id[37], ext[41], *acct_s = NULL, *req_s = NULL;
	uint8_t raw[20];
	uuid_t u;
	bool ok = false;

	if (!unpack(body, &name, &env, &provider, &region, &acct, e))
		return false;
	if (!account_parse(provider, acct, &in.account, e))
		return false;
	registry_account(body, &in.account);
	if (!env_get(c, env, false, &envobj, e)) {
		if (e->status == 404)
			snprintf(e->pointer, sizeof(e->pointer), "/environment");
		return false;
	}
	json_decref(envobj);
	uuid_generate_random(u);
	uuid_unparse_lower(u, id);
	if (!crypto_random(raw, sizeof(raw)))
		return err_set(e, 500, "cloud.random", "no randomness available");
	crypto_hex(raw, sizeof(raw), ext);
	in.cloud_id = id;
	in.external_id = ext;
	in.provider = provider;
	in.region = region;
	in.environment = env;
	in.fleetd_principal = strcmp(provider, "hyperpod") == 0 ? cfg.aws_principal_arn :
	    strcmp(provider, "gke") == 0 ? cfg.gcp_principal :
	    cfg.azure_principal_id ? cfg.azure_principal_id :
	    (cfg.azure_client_id ? cfg.azure_client_id : "00000000-0000-0000-0000-000000000000");
	in.fleetd_tenant = cfg.azure_tenant ? cfg.azure_tenant :
	    "00000000-0000-0000-0000-000000000000";
	if ((required = iam_policy_required(&in, e)) == NULL)
		return false;
	acct_s = json_dumps(acct, JSON_COMPACT | JSON_SORT_KEYS);
	req_s = json_dumps(required, JSON_COMPACT | JSON_PRESERVE_ORDER);
	{
		const char *p[8] = { id, name, env, provider, region, acct_s, ext, req_s };

		if (!db_exec(c, sql, 8, p, NULL, e)) {
			if (e->status == 409) {
				err_field(e, 409, "cloud.exists", "/region", "environment %s already "
				    "has a %s cloud in %s, or a cloud named %s", env, provider,
				    region, name);
			}
			goto cleanup;
		}
	}
	ok = cloud_get(c, id, false, out, e);
cleanup:
	free(acct_s);
	free(req_s);
	json_decref(required);
	return ok;
}

bool
registry_cloud_replace(struct db *c, const char *id, json_t *body, json_t **before,
		       json_t **out, struct err *e)
{
	static const char sql[] = "UPDATE clouds SET name = $2, version = version + 1,"
	    " updated_at = now() WHERE id = $1::uuid AND name <> $2";
	static const char *const immutable[] = { "environment", "provider", "region", NULL };
	const char *name, *env, *provider, *region;
	json_t *acct;

	if (!cloud_get(c, id, true, before, e))
		return false;
	/* immutables before validation: a changed provider is named as such, not as a
	 * region the new provider lacks */
	for (int i = 0; immutable[i] != NULL; i++) {
		const char *have = json_string_value(json_object_get(*before, immutable[i]));
		const char *want = json_string_value(json_object_get(body, immutable[i]));
		char ptr[32];

		snprintf(ptr, sizeof(ptr), "/%s", immutable[i]);
		if (have && want && strcmp(have, want) != 0)
			return err_field(e, 409, "cloud.immutable", ptr,
			    "%s is immutable; create a new cloud instead", immutable[i]);
	}
	if (!unpack(body, &name, &env, &provider, &region, &acct, e))
		return false;
	if (!json_equal(acct, json_object_get(*before, "account")))
		return err_field(e, 409, "cloud.immutable", "/account",
		    "account is immutable; create a new cloud instead");
	{
		const char *p[2] = { id, name };

		if (!db_exec(c, sql, 2, p, NULL, e)) {
			if (e->status == 409)
				err_field(e, 409, "cloud.exists", "/name",
				    "another cloud in %s is named %s", env, name);
			return false;
		}
	}
	return cloud_get(c, id, false, out, e);
}

bool
registry_pair_parse(json_t *cloud, json_t *body, const char **cp, const char **cl,
		    struct err *e)
{
	static const char *const allowed[] = { "control_plane_role", "cluster_role", NULL };
	struct iam_account acct;
	const char *provider = json_string_value(json_object_get(cloud, "provider"));

	if (!jsonx_only(body, allowed, "", e) ||
	    !jsonx_str(body, "control_plane_role", "", true, cp, e) ||
	    !jsonx_str(body, "cluster_role", "", true, cl, e))
		return false;
	registry_account(cloud, &acct);
	return iam_pair_valid(provider, *cp, *cl, &acct, e);
}

bool
registry_pair_unused(struct db *c, const char *cloud_id, const char *cp, const char *cl,
		     struct err *e)
{
	/* the control-plane role first when both are taken: the answer names one field */
	static const char sql[] = "SELECT identity FROM iam_identities"
	    " WHERE identity IN ($2, $3) AND cloud_id <> $1::uuid ORDER BY identity = $2 DESC";
	const char *p[3] = { cloud_id, cp, cl };
	PGresult *r = NULL;
	bool ok = false;

	if (!db_exec(c, sql, 3, p, &r, e))
		goto cleanup;
	if (PQntuples(r) > 0) {
		bool is_cp = strcmp(PQgetvalue(r, 0, 0), cp) == 0;

		err_field(e, 409, "iam.identity_in_use", is_cp ? "/control_plane_role" :
		    "/cluster_role", "this identity already serves another cloud");
		err_detail(e, "Each cloud needs its own pair of identities so that no identity "
		    "can reach two clouds; create new ones from iam.required.");
		goto cleanup;
	}
	ok = true;
cleanup:
	PQclear(r);
	return ok;
}

static bool
same_pair(json_t *iam, const char *cp, const char *cl)
{
	const char *have_cp = json_string_value(json_object_get(iam, "control_plane_role"));
	const char *have_cl = json_string_value(json_object_get(iam, "cluster_role"));

	return have_cp != NULL && have_cl != NULL && strcmp(have_cp, cp) == 0 &&
	    strcmp(have_cl, cl) == 0;
}

bool
registry_pair_lock(struct db *c, const struct actor *who, const char *cloud_id, long version,
		   const char *cp, const char *cl, bool rotate, json_t **out, struct err *e)
{
	static const char sql_pair[] = "INSERT INTO iam_pairs (cloud_id, control_plane_role,"
	    " cluster_role) VALUES ($1::uuid, $2, $3) ON CONFLICT (cloud_id) DO UPDATE SET"
	    " control_plane_role = EXCLUDED.control_plane_role, cluster_role ="
	    " EXCLUDED.cluster_role, verified_at = now(), version = iam_pairs.version + 1,"
	    " updated_at = now()";
	static const char sql_ids_del[] = "DELETE FROM iam_identities WHERE cloud_id = $1::uuid";
	static const char sql_ids[] = "INSERT INTO iam_identities (identity, cloud_id)"
	    " VALUES ($2, $1::uuid), ($3, $1::uuid)";
	static const char sql_state[] = "UPDATE clouds SET state = 'active', version = version + 1,"
	    " iam_checked_at = now(), iam_failed_checks = '[]', updated_at = now()"
	    " WHERE id = $1::uuid";
	const char *p[3] = { cloud_id, cp, cl };
	json_t *before = NULL;
	bool ok = false;

	if (!cloud_get(c, cloud_id, true, &before, e))
		return false;
	if (json_integer_value(json_object_get(before, "version")) != version) {
		err_set(e, 409, "cloud.changed", "the cloud changed during verification; retry");
		goto cleanup;
	}
	if (!rotate && strcmp(json_string_value(json_object_get(before, "state")),
	    "pending_iam") != 0) {
		err_set(e, 409, "iam.locked", "the cloud's iam pair is locked");
		err_detail(e, "Use POST /v1/clouds/{id}/iam/rotate (admin) to replace a locked pair.");
		goto cleanup;
	}
	if (rotate && strcmp(json_string_value(json_object_get(before, "state")),
	    "pending_iam") == 0) {
		err_set(e, 409, "iam.not_locked", "only a locked pair can be rotated; finish "
		    "phase 2 first");
		goto cleanup;
	}
	/* rotation to the pair already locked changes nothing, unless it had drifted */
	if (rotate && same_pair(json_object_get(before, "iam"), cp, cl) &&
	    strcmp(json_string_value(json_object_get(before, "state")), "active") == 0) {
		*out = before;	/* rotation to the pair already locked: nothing changes */
		before = NULL;
		ok = true;
		goto cleanup;
	}
	if (!db_exec(c, sql_ids_del, 1, p, NULL, e) || !db_exec(c, sql_ids, 3, p, NULL, e)) {
		if (e->status == 409)
			err_set(e, 409, "iam.identity_in_use", "an identity already serves another cloud");
		goto cleanup;
	}
	if (!db_exec(c, sql_pair, 3, p, NULL, e)) {
		if (e->status == 409)
			err_set(e, 409, "iam.identity_in_use", "an identity already serves another cloud");
		goto cleanup;
	}
	if (!db_exec(c, sql_state, 1, p, NULL, e) || !cloud_get(c, cloud_id, false, out, e))
		goto cleanup;
	ok = audit_write(c, who, rotate ? "cloud.iam.rotate" : "cloud.iam.lock", "cloud",
	    cloud_id, json_string_value(json_object_get(before, "environment")),
	    json_object_get(before, "iam"), json_object_get(*out, "iam"), e);
cleanup:
	json_decref(before);
	return ok;
}
