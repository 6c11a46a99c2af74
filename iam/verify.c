/* verify: phase-2 verification through the provider driver of the cloud. */
#include <stdio.h>
#include <string.h>

#include "iam/registry.h"
#include "providers/provider.h"

static void
copy(char *dst, size_t n, const char *src)
{
	snprintf(dst, n, "%s", src ? src : "");
}

bool
registry_pair_verify(json_t *cloud, const char *cp, const char *cl, json_t *checks,
		     struct err *e)
{
	const char *provider = json_string_value(json_object_get(cloud, "provider"));
	const struct prov_ops *ops = prov_ops_get(provider);
	json_t *acct = json_object_get(cloud, "account");
	struct prov_cloud pc;

	if (ops == NULL)
		return err_set(e, 500, "iam.no_driver", "no driver for provider %s", provider);
	memset(&pc, 0, sizeof(pc));
	copy(pc.id, sizeof(pc.id), json_string_value(json_object_get(cloud, "id")));
	copy(pc.provider, sizeof(pc.provider), provider);
	copy(pc.region, sizeof(pc.region), json_string_value(json_object_get(cloud, "region")));
	copy(pc.project, sizeof(pc.project), json_string_value(json_object_get(acct, "project")));
	copy(pc.subscription, sizeof(pc.subscription),
	    json_string_value(json_object_get(acct, "subscription_id")));
	copy(pc.tenant, sizeof(pc.tenant), json_string_value(json_object_get(acct, "tenant_id")));
	copy(pc.resource_group, sizeof(pc.resource_group),
	    json_string_value(json_object_get(acct, "resource_group")));
	copy(pc.account_id, sizeof(pc.account_id),
	    json_string_value(json_object_get(acct, "account_id")));
	copy(pc.external_id, sizeof(pc.external_id),
	    json_string_value(json_object_get(cloud, "external_id")));
	copy(pc.control_plane_role, sizeof(pc.control_plane_role), cp);
	copy(pc.cluster_role, sizeof(pc.cluster_role), cl);
	/* Never trust a cached token of an earlier pair. */
	prov_creds_invalidate(pc.id);
	return ops->verify_pair(&pc, cp, cl, checks, e);
}
