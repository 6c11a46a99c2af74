/* policy_azure: the AKS cloud's managed identities (the control plane's with fleetd's
 * federated credential), role definitions and assignments.
 * Subscription-level reads (compute SKUs, usages) cannot be granted at a resource group,
 * so they get their own role, assignable only at the subscription and holding nothing else. */
#include <stdio.h>
#include <string.h>

#include "iam/policy_int.h"

static json_t *
tags(const struct iam_policy_input *in)
{
	return json_pack("{s:s, s:s}", POLICY_TAG_CLOUD, in->cloud_id, POLICY_TAG_ENV,
	    in->environment);
}

/* Role definition in the grammar of `az role definition create --role-definition`. */
static json_t *
role_def(const char *name, const char *desc, json_t *actions, const char *scope)
{
	return json_pack("{s:s, s:b, s:s, s:o, s:[], s:[], s:[], s:[s]}", "Name", name,
	    "IsCustom", 1, "Description", desc, "Actions", actions, "NotActions",
	    "DataActions", "NotDataActions", "AssignableScopes", scope);
}

static json_t *
identity(const struct iam_policy_input *in, const struct policy_names *n,
    const char *suffix, json_t *federated)
{
	const struct iam_account *a = &in->account;
	char name[80], id[400];

	snprintf(name, sizeof(name), "fleet-%s-%s-%s", n->env, n->id8, suffix);
	snprintf(id, sizeof(id), "/subscriptions/%s/resourceGroups/%s/providers/"
	    "Microsoft.ManagedIdentity/userAssignedIdentities/%s",
	    a->azure_subscription_id, a->azure_resource_group, name);
	if (federated == NULL)
		return json_pack("{s:s, s:s, s:s, s:s, s:o}", "name", name, "id", id,
		    "resource_group", a->azure_resource_group, "location", in->region,
		    "tags", tags(in));
	return json_pack("{s:s, s:s, s:s, s:s, s:o, s:o}", "name", name, "id", id,
	    "resource_group", a->azure_resource_group, "location", in->region,
	    "tags", tags(in), "federated_identity_credentials", federated);
}

/* fleetd signs in as the control-plane identity by workload identity federation: its own
 * Entra token for api://AzureADTokenExchange (issuer: fleetd's tenant, subject: its service
 * principal) is the client assertion of a client_credentials request for the identity's
 * client id. Terraform: azurerm_federated_identity_credential with these fields. */
static json_t *
federation(const struct iam_policy_input *in)
{
	char issuer[128];

	snprintf(issuer, sizeof(issuer), "https://login.microsoftonline.com/%s/v2.0",
	    in->fleetd_tenant);
	return json_pack("[{s:s, s:s, s:s, s:[s]}]", "name", "fleetd", "issuer", issuer,
	    "subject", in->fleetd_principal, "audiences", "api://AzureADTokenExchange");
}

json_t *
policy_azure(const struct iam_policy_input *in, const struct policy_names *n)
{
	const struct iam_account *a = &in->account;
	char rg[200], sub[80], rname[128], cname[128], rdesc[256], cdesc[256], cp_id[400];

	snprintf(sub, sizeof(sub), "/subscriptions/%s", a->azure_subscription_id);
	snprintf(rg, sizeof(rg), "%s/resourceGroups/%s", sub, a->azure_resource_group);
	snprintf(rname, sizeof(rname), "fleetd control plane %s %s %s", n->env, in->region,
	    n->id8);
	snprintf(cname, sizeof(cname), "fleetd capacity reader %s %s %s", n->env, in->region,
	    n->id8);
	snprintf(rdesc, sizeof(rdesc), "Read-only access fleetd needs for cloud %s: AKS "
	    "clusters, agent pools and the cloud's managed identities in %s.", in->cloud_id,
	    a->azure_resource_group);
	snprintf(cdesc, sizeof(cdesc), "Compute SKUs and usages (quota) fleetd reads for "
	    "cloud %s; subscription-level by Azure's design, nothing else.", in->cloud_id);
	snprintf(cp_id, sizeof(cp_id), "%s/providers/Microsoft.ManagedIdentity/"
	    "userAssignedIdentities/fleet-%s-%s-control-plane", rg, n->env, n->id8);
	return json_pack("{s:s, s:s, s:s, s:s, s:s, s:s, s:o, s:o, s:o, s:[o, o],"
	    " s:[{s:s, s:s, s:s, s:s}, {s:s, s:s, s:s, s:s}, {s:s, s:s, s:s, s:s}]}",
	    "provider", "aks", "cloud_id", in->cloud_id, "region", in->region,
	    "subscription_id", a->azure_subscription_id, "tenant_id", a->azure_tenant_id,
	    "resource_group_id", rg, "tags", tags(in),
	    "control_plane_identity", identity(in, n, "control-plane", federation(in)),
	    "cluster_identity", identity(in, n, "cluster", NULL),
	    "role_definitions",
	    role_def(rname, rdesc, json_pack("[s,s,s]",
	    "Microsoft.ContainerService/managedClusters/read",
	    "Microsoft.ContainerService/managedClusters/agentPools/read",
	    "Microsoft.ManagedIdentity/userAssignedIdentities/read"), rg),
	    role_def(cname, cdesc, json_pack("[s,s]", "Microsoft.Compute/skus/read",
	    "Microsoft.Compute/locations/usages/read"), sub),
	    "role_assignments",
	    "role_definition_name", rname, "scope", rg, "assignee", "control_plane_identity",
	    "principal_type", "ServicePrincipal",
	    "role_definition_name", cname, "scope", sub, "assignee", "control_plane_identity",
	    "principal_type", "ServicePrincipal",
	    /* fleetd's own service principal (the federated credential's subject) reads the
	     * control-plane identity's client id, the client_id of its federated sign-in,
	     * on that one identity only */
	    "role_definition_name", "Reader", "scope", cp_id, "assignee", "fleetd",
	    "principal_type", "ServicePrincipal");
}
