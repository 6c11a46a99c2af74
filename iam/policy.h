/* policy: the IAM documents a platform team creates for one cloud (phase 1), in each
 * provider's own grammar and scoped to that cloud, and the grammar of role identifiers. */
#ifndef FLEET_IAM_POLICY_H
#define FLEET_IAM_POLICY_H

#include <stdbool.h>

#include <jansson.h>

#include "core/err.h"

/* The provider account a cloud lives in; only the provider's own fields are set. */
struct iam_account {
	const char	*aws_account_id;	/* hyperpod: 12 digits */
	const char	*gcp_project;		/* gke: project id */
	const char	*azure_subscription_id;	/* aks: uuid */
	const char	*azure_tenant_id;	/* aks: uuid */
	const char	*azure_resource_group;	/* aks: the cloud's resource group */
};

struct iam_policy_input {
	const char		*cloud_id;	/* uuid, lowercase */
	const char		*external_id;	/* sts:ExternalId grammar, >= 16 chars */
	const char		*provider;	/* "gke" | "aks" | "hyperpod" */
	const char		*region;	/* a catalog region of the provider */
	const char		*environment;	/* "prod", "dev", ... */
	struct iam_account	 account;
	/* fleetd's own configured principal:
	 *   hyperpod: IAM role or user ARN fleetd signs AssumeRole with;
	 *   gke: fleetd's service-account email;
	 *   aks: object id of fleetd's service principal (the `sub` of its Entra tokens). */
	const char		*fleetd_principal;
	const char		*fleetd_tenant;	/* aks only: fleetd's Entra tenant id */
};

/* Returns a new object, the cloud's `iam.required`: for hyperpod the two roles (trust and
 * permission policies, tags, suggested names), for gke two service accounts, a custom role,
 * conditional bindings and labels, for aks two managed identities, role definitions and
 * assignments. Pure: same input, same output. On bad input returns NULL with e filled
 * (400, pointer to the field at fault). */
json_t	*iam_policy_required(const struct iam_policy_input *in, struct err *e);

/* Checks that value names an identity of the right grammar in the cloud's account:
 *   hyperpod: arn:aws:iam::<account>:role[/path]/<name>;
 *   gke: <name>@<project>.iam.gserviceaccount.com;
 *   aks: /subscriptions/<s>/resourceGroups/<rg>/providers/Microsoft.ManagedIdentity/
 *        userAssignedIdentities/<name>.
 * kind is the request field ("control_plane_role" or "cluster_role") used as the pointer.
 * 400 "iam.bad_identity" when the grammar is wrong, 422 "iam.identity_wrong_account" when
 * it names another account, project, subscription or resource group. */
bool	 iam_identity_valid(const char *provider, const char *kind, const char *value,
	    const struct iam_account *account, struct err *e);

/* Both identities valid and distinct (422 "iam.identity_reused" otherwise). */
bool	 iam_pair_valid(const char *provider, const char *control_plane_role,
	    const char *cluster_role, const struct iam_account *account, struct err *e);

/* Maps a string into GCP label grammar (lowercase letters, digits, '-' and '_', at most 63
 * bytes, starting with a letter for keys): uppercase is lowered, any other byte becomes '-'.
 * "fleet.io/cloud-id" -> "fleet-io-cloud-id". out must hold 64 bytes. */
void	 iam_gcp_label(const char *in, bool key, char out[64]);

#endif
