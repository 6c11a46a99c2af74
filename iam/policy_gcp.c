/* policy_gcp: the GKE cloud's service accounts, custom role, conditional bindings and
 * labels. IAM service accounts have no label field: the labels travel in the description. */
#include <stdio.h>
#include <string.h>

#include "iam/policy_int.h"

/* Only what the GKE driver calls: clusters.get (also covers nodePools.get/list), the
 * region (quotas) and reservations. */
static json_t *
custom_role(const struct iam_policy_input *in, const struct policy_names *n)
{
	char id[64], title[100], desc[256];

	snprintf(id, sizeof(id), "fleet_%s_control_plane", n->id8);
	snprintf(title, sizeof(title), "fleetd control plane %s %s %s", n->env, in->region,
	    n->id8);
	snprintf(desc, sizeof(desc), "Read-only access fleetd needs for cloud %s: GKE "
	    "clusters and node pools, regional quotas and reservations.", in->cloud_id);
	return json_pack("{s:s, s:{s:s, s:s, s:[s,s,s], s:s}}", "roleId", id,
	    "role", "title", title, "description", desc,
	    "includedPermissions", "compute.regions.get", "compute.reservations.list",
	    "container.clusters.get", "stage", "GA");
}

static json_t *
labels(const struct iam_policy_input *in)
{
	char key_cloud[64], key_env[64], env[64];

	iam_gcp_label(POLICY_TAG_CLOUD, true, key_cloud);
	iam_gcp_label(POLICY_TAG_ENV, true, key_env);
	iam_gcp_label(in->environment, false, env);
	return json_pack("{s:s, s:s}", key_cloud, in->cloud_id, key_env, env);
}

static json_t *
service_account(const struct iam_policy_input *in, const struct policy_names *n,
    const char *suffix, const char *what)
{
	char id[32], email[160], display[100], desc[256], env[64];

	iam_gcp_label(in->environment, false, env);
	snprintf(id, sizeof(id), "fleet-%s-%s", n->id8, suffix);
	snprintf(email, sizeof(email), "%s@%s.iam.gserviceaccount.com", id,
	    in->account.gcp_project);
	snprintf(display, sizeof(display), "fleetd %s %s %s", what, n->env, in->region);
	snprintf(desc, sizeof(desc), "fleetd %s; labels: fleet-io-cloud-id=%s,"
	    "fleet-io-environment=%s", what, in->cloud_id, env);
	return json_pack("{s:s, s:s, s:s, s:s, s:o}", "account_id", id, "email", email,
	    "display_name", display, "description", desc, "labels", labels(in));
}

/* CEL: this cloud's clusters (by name prefix) and this region's compute resources. */
static json_t *
condition(const struct iam_policy_input *in, const char *prefix)
{
	const char *p = in->account.gcp_project, *r = in->region;
	char expr[1024], title[100], desc[256];

	snprintf(expr, sizeof(expr),
	    "(resource.service == \"container.googleapis.com\" && "
	    "resource.name.startsWith(\"projects/%s/locations/%s/clusters/%s\")) || "
	    "(resource.service == \"compute.googleapis.com\" && "
	    "(resource.name == \"projects/%s/regions/%s\" || "
	    "resource.name.startsWith(\"projects/%s/zones/%s-\")))",
	    p, r, prefix, p, r, p, r);
	snprintf(title, sizeof(title), "fleet cloud %s only", in->cloud_id);
	snprintf(desc, sizeof(desc), "Clusters named %s* in %s and the %s region's "
	    "quotas and reservations.", prefix, r, r);
	return json_pack("{s:s, s:s, s:s}", "title", title, "description", desc,
	    "expression", expr);
}

json_t *
policy_gcp(const struct iam_policy_input *in, const struct policy_names *n)
{
	const char *p = in->account.gcp_project;
	json_t *cp = service_account(in, n, "cp", "control plane");
	json_t *cl = service_account(in, n, "cluster", "cluster nodes");
	json_t *role = custom_role(in, n);
	char prefix[32], role_name[128], cp_member[200], cl_member[200], fleetd[300];
	char cp_res[200], cl_res[200], key_cloud[64], key_env[64];

	snprintf(prefix, sizeof(prefix), "fleet-%s-", n->id8);
	snprintf(role_name, sizeof(role_name), "projects/%s/roles/%s", p,
	    json_string_value(json_object_get(role, "roleId")));
	snprintf(cp_member, sizeof(cp_member), "serviceAccount:%s",
	    json_string_value(json_object_get(cp, "email")));
	snprintf(cl_member, sizeof(cl_member), "serviceAccount:%s",
	    json_string_value(json_object_get(cl, "email")));
	snprintf(cp_res, sizeof(cp_res), "projects/%s/serviceAccounts/%s", p,
	    json_string_value(json_object_get(cp, "email")));
	snprintf(cl_res, sizeof(cl_res), "projects/%s/serviceAccounts/%s", p,
	    json_string_value(json_object_get(cl, "email")));
	snprintf(fleetd, sizeof(fleetd), "serviceAccount:%s", in->fleetd_principal);
	iam_gcp_label(POLICY_TAG_CLOUD, true, key_cloud);
	iam_gcp_label(POLICY_TAG_ENV, true, key_env);
	return json_pack("{s:s, s:s, s:s, s:s, s:o, s:{s:s, s:s}, s:s,"
	    " s:o, s:o, s:o,"
	    " s:[{s:s, s:[s], s:o}, {s:s, s:[s]}],"
	    " s:[{s:s, s:s, s:[s]}, {s:s, s:s, s:[s]}]}",
	    "provider", "gke", "cloud_id", in->cloud_id, "region", in->region,
	    "project", p, "labels", labels(in),
	    "label_mapping", POLICY_TAG_CLOUD, key_cloud, POLICY_TAG_ENV, key_env,
	    "cluster_name_prefix", prefix,
	    "control_plane_service_account", cp, "cluster_service_account", cl,
	    "custom_role", role,
	    "project_bindings",
	    "role", role_name, "members", cp_member, "condition", condition(in, prefix),
	    "role", "roles/container.defaultNodeServiceAccount", "members", cl_member,
	    "service_account_bindings",
	    "resource", cp_res, "role", "roles/iam.serviceAccountTokenCreator",
	    "members", fleetd,
	    "resource", cl_res, "role", "roles/iam.serviceAccountViewer",
	    "members", cp_member);
}
