/* policy: validates a cloud's phase-1 input and builds its IAM documents; this file holds
 * the shared checks and the AWS (HyperPod) documents, GCP and Azure live next to it. */
#include <ctype.h>
#include <stdio.h>
#include <string.h>

#include "iam/policy_int.h"
#include "regions/catalog.h"

/* AWS managed policy that HyperPod documents for a cluster's instance role. */
#define AWS_HYPERPOD_INSTANCE_POLICY \
	"arn:aws:iam::aws:policy/AmazonSageMakerClusterInstanceRolePolicy"

bool
policy_chars(const char *s, size_t min, size_t max, bool upper, const char *extra)
{
	size_t n;

	if (s == NULL)
		return false;
	n = strlen(s);
	if (n < min || n > max)
		return false;
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];

		if ((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
		    (upper && c >= 'A' && c <= 'Z') || (extra && c && strchr(extra, c)))
			continue;
		return false;
	}
	return true;
}

bool
policy_uuid_valid(const char *s)
{
	if (s == NULL || strlen(s) != 36)
		return false;
	for (int i = 0; i < 36; i++) {
		bool dash = i == 8 || i == 13 || i == 18 || i == 23;

		if (dash ? s[i] != '-' : !isxdigit((unsigned char)s[i]) ||
		    isupper((unsigned char)s[i]))
			return false;
	}
	return true;
}

bool
policy_aws_account_valid(const char *s)
{
	return policy_chars(s, 12, 12, false, NULL) && strspn(s, "0123456789") == 12;
}

/* GCP project id: 6-30 of [a-z0-9-], starts with a letter, does not end with '-'. */
bool
policy_gcp_project_valid(const char *s)
{
	return policy_chars(s, 6, 30, false, "-") && islower((unsigned char)s[0]) &&
	    s[strlen(s) - 1] != '-';
}

/* Azure resource group: 1-90 of letters, digits, '_', '-', '.', '(', ')'; no final '.'. */
bool
policy_azure_rg_valid(const char *s)
{
	return policy_chars(s, 1, 90, true, "_-.()") && s[strlen(s) - 1] != '.';
}

void
iam_gcp_label(const char *in, bool key, char out[64])
{
	size_t o = 0;

	if (key && !(in[0] >= 'a' && in[0] <= 'z') && !(in[0] >= 'A' && in[0] <= 'Z'))
		out[o++] = 'x';
	for (size_t i = 0; in[i] != '\0' && o < 63; i++) {
		unsigned char c = (unsigned char)tolower((unsigned char)in[i]);

		out[o++] = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' ||
		    c == '-' ? (char)c : '-';
	}
	out[o] = '\0';
}

/* sts:ExternalId grammar: 2-1224 of [\w+=,.@:/-]; we ask for at least 16. */
static bool
external_id_valid(const char *s)
{
	return policy_chars(s, 16, 1224, true, "_+=,.@:/-");
}

static bool
account_check(const struct iam_policy_input *in, struct err *e)
{
	const struct iam_account *a = &in->account;
	const char *p = in->provider;

	if (strcmp(p, "hyperpod") == 0) {
		if (!policy_aws_account_valid(a->aws_account_id))
			return err_field(e, 400, "iam.bad_account", "/account/account_id",
			    "aws account id must be 12 digits");
		if (a->gcp_project || a->azure_subscription_id || a->azure_tenant_id ||
		    a->azure_resource_group)
			return err_field(e, 400, "iam.bad_account", "/account",
			    "account fields of another provider");
		return true;
	}
	if (strcmp(p, "gke") == 0) {
		if (!policy_gcp_project_valid(a->gcp_project))
			return err_field(e, 400, "iam.bad_account", "/account/project",
			    "gcp project id must be 6-30 lowercase letters, digits or hyphens");
		if (a->aws_account_id || a->azure_subscription_id || a->azure_tenant_id ||
		    a->azure_resource_group)
			return err_field(e, 400, "iam.bad_account", "/account",
			    "account fields of another provider");
		return true;
	}
	if (!policy_uuid_valid(a->azure_subscription_id))
		return err_field(e, 400, "iam.bad_account", "/account/subscription_id",
		    "azure subscription id must be a lowercase uuid");
	if (!policy_uuid_valid(a->azure_tenant_id))
		return err_field(e, 400, "iam.bad_account", "/account/tenant_id",
		    "azure tenant id must be a lowercase uuid");
	if (!policy_azure_rg_valid(a->azure_resource_group))
		return err_field(e, 400, "iam.bad_account", "/account/resource_group",
		    "not an azure resource group name");
	if (a->aws_account_id || a->gcp_project)
		return err_field(e, 400, "iam.bad_account", "/account",
		    "account fields of another provider");
	return true;
}

static bool
principal_check(const struct iam_policy_input *in, struct err *e)
{
	const char *p = in->fleetd_principal;
	bool ok;

	if (p == NULL)
		return err_set(e, 500, "iam.no_principal", "fleetd principal not configured");
	if (strcmp(in->provider, "hyperpod") == 0) {
		ok = strncmp(p, "arn:aws:iam::", 13) == 0 && strlen(p) > 26 &&
		    strspn(p + 13, "0123456789") == 12 &&
		    (strncmp(p + 25, ":role/", 6) == 0 || strncmp(p + 25, ":user/", 6) == 0 ||
		    strcmp(p + 25, ":root") == 0) &&
		    policy_chars(p + 25, 5, 600, true, ":/+=,.@_-");
	} else if (strcmp(in->provider, "gke") == 0) {
		const char *at = strchr(p, '@');

		ok = at != NULL && at > p && policy_chars(p, 8, 254, false, "@.-") &&
		    strchr(at + 1, '@') == NULL && strchr(at + 1, '.') != NULL;
	} else {
		ok = policy_uuid_valid(p) && policy_uuid_valid(in->fleetd_tenant);
	}
	if (!ok)
		return err_set(e, 500, "iam.bad_principal",
		    "configured fleetd principal is not valid for this provider");
	return true;
}

static bool
input_check(const struct iam_policy_input *in, struct err *e)
{
	if (!policy_uuid_valid(in->cloud_id))
		return err_field(e, 400, "iam.bad_input", "/id", "cloud id must be a uuid");
	if (!external_id_valid(in->external_id))
		return err_field(e, 400, "iam.bad_input", "/external_id",
		    "external id must be 16-1224 characters of [A-Za-z0-9_+=,.@:/-]");
	if (!policy_chars(in->environment, 1, 63, true, "_-."))
		return err_field(e, 400, "iam.bad_input", "/environment",
		    "environment must be 1-63 letters, digits, '.', '_' or '-'");
	if (!catalog_region_check(in->provider, in->region, "/region", e))
		return false;
	return account_check(in, e) && principal_check(in, e);
}

static void
names_init(const struct iam_policy_input *in, struct policy_names *n)
{
	size_t o = 0;

	memcpy(n->id8, in->cloud_id, 8);
	n->id8[8] = '\0';
	for (size_t i = 0; in->environment[i] != '\0' && o < 16; i++) {
		unsigned char c = (unsigned char)tolower((unsigned char)in->environment[i]);

		n->env[o++] = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ? (char)c : '-';
	}
	n->env[o] = '\0';
}

json_t *
iam_policy_required(const struct iam_policy_input *in, struct err *e)
{
	struct policy_names n;

	if (!input_check(in, e))
		return NULL;
	names_init(in, &n);
	if (strcmp(in->provider, "hyperpod") == 0)
		return policy_aws(in, &n);
	if (strcmp(in->provider, "gke") == 0)
		return policy_gcp(in, &n);
	return policy_azure(in, &n);
}

/* ---- AWS ---------------------------------------------------------------------------- */

static json_t *
aws_tags(const struct iam_policy_input *in)
{
	return json_pack("{s:s, s:s}", POLICY_TAG_CLOUD, in->cloud_id, POLICY_TAG_ENV,
	    in->environment);
}

static json_t *
aws_doc(json_t *statements)
{
	return json_pack("{s:s, s:o}", "Version", "2012-10-17", "Statement", statements);
}

/* {"StringEquals": {"aws:ResourceTag/fleet.io/cloud-id": id}} */
static json_t *
aws_tag_condition(const struct iam_policy_input *in)
{
	return json_pack("{s:{s:s}}", "StringEquals",
	    "aws:ResourceTag/" POLICY_TAG_CLOUD, in->cloud_id);
}

static json_t *
aws_control_plane_permissions(const struct iam_policy_input *in)
{
	const char *r = in->region, *a = in->account.aws_account_id;
	char cluster[160], plan[160], role[96], quota[160];
	json_t *st;

	snprintf(cluster, sizeof(cluster), "arn:aws:sagemaker:%s:%s:cluster/*", r, a);
	snprintf(plan, sizeof(plan), "arn:aws:sagemaker:%s:%s:training-plan/*", r, a);
	snprintf(role, sizeof(role), "arn:aws:iam::%s:role/*", a);
	snprintf(quota, sizeof(quota), "arn:aws:servicequotas:%s:%s:sagemaker/*", r, a);
	st = json_pack("[{s:s, s:s, s:[s,s,s], s:[s], s:o},"
	    " {s:s, s:s, s:[s], s:[s], s:o},"
	    " {s:s, s:s, s:[s], s:[s], s:o},"
	    " {s:s, s:s, s:[s], s:[s], s:{s:{s:s}}}]",
	    "Sid", "ReadThisCloudsHyperPodClusters", "Effect", "Allow",
	    "Action", "sagemaker:DescribeCluster", "sagemaker:DescribeClusterNode",
	    "sagemaker:ListClusterNodes", "Resource", cluster, "Condition",
	    aws_tag_condition(in),
	    "Sid", "ReadThisCloudsTrainingPlans", "Effect", "Allow",
	    "Action", "sagemaker:DescribeTrainingPlan", "Resource", plan,
	    "Condition", aws_tag_condition(in),
	    "Sid", "VerifyThisCloudsClusterRole", "Effect", "Allow",
	    "Action", "iam:GetRole", "Resource", role, "Condition", aws_tag_condition(in),
	    "Sid", "ReadSageMakerQuotasInRegion", "Effect", "Allow",
	    "Action", "servicequotas:GetServiceQuota", "Resource", quota,
	    "Condition", "StringEquals", "aws:RequestedRegion", r);
	return aws_doc(st);
}

static json_t *
aws_control_plane(const struct iam_policy_input *in, const struct policy_names *n)
{
	char name[80], desc[200];
	json_t *trust;

	snprintf(name, sizeof(name), "fleet-%s-%s-%s-control-plane", n->env, in->region,
	    n->id8);
	snprintf(desc, sizeof(desc), "fleetd control plane for cloud %s (%s, %s)",
	    in->cloud_id, in->environment, in->region);
	trust = aws_doc(json_pack("[{s:s, s:s, s:{s:s}, s:s, s:{s:{s:s}}}]",
	    "Sid", "FleetdAssumesWithExternalId", "Effect", "Allow",
	    "Principal", "AWS", in->fleetd_principal, "Action", "sts:AssumeRole",
	    "Condition", "StringEquals", "sts:ExternalId", in->external_id));
	return json_pack("{s:s, s:s, s:s, s:i, s:o, s:[{s:s, s:o}], s:[], s:o}",
	    "suggested_name", name, "path", "/fleet/", "description", desc,
	    "max_session_duration", 3600, "assume_role_policy", trust,
	    "inline_policies", "name", "fleet-control-plane", "policy",
	    aws_control_plane_permissions(in), "managed_policy_arns", "tags", aws_tags(in));
}

static json_t *
aws_cluster(const struct iam_policy_input *in, const struct policy_names *n)
{
	const char *r = in->region, *a = in->account.aws_account_id;
	char name[80], desc[200], source[160];
	json_t *trust;

	snprintf(name, sizeof(name), "fleet-%s-%s-%s-cluster", n->env, r, n->id8);
	snprintf(desc, sizeof(desc), "HyperPod cluster nodes of fleetd cloud %s (%s, %s)",
	    in->cloud_id, in->environment, r);
	snprintf(source, sizeof(source), "arn:aws:sagemaker:%s:%s:cluster/*", r, a);
	trust = aws_doc(json_pack("[{s:s, s:s, s:{s:s}, s:s, s:{s:{s:s}, s:{s:s}}}]",
	    "Sid", "HyperPodNodesOfThisAccount", "Effect", "Allow",
	    "Principal", "Service", "sagemaker.amazonaws.com", "Action", "sts:AssumeRole",
	    "Condition", "StringEquals", "aws:SourceAccount", a,
	    "ArnLike", "aws:SourceArn", source));
	return json_pack("{s:s, s:s, s:s, s:i, s:o, s:[], s:[s], s:o}",
	    "suggested_name", name, "path", "/fleet/", "description", desc,
	    "max_session_duration", 3600, "assume_role_policy", trust,
	    "inline_policies", "managed_policy_arns", AWS_HYPERPOD_INSTANCE_POLICY,
	    "tags", aws_tags(in));
}

json_t *
policy_aws(const struct iam_policy_input *in, const struct policy_names *n)
{
	return json_pack("{s:s, s:s, s:s, s:s, s:s, s:o, s:o, s:o}",
	    "provider", "hyperpod", "cloud_id", in->cloud_id, "region", in->region,
	    "account_id", in->account.aws_account_id, "external_id", in->external_id,
	    "tags", aws_tags(in), "control_plane_role", aws_control_plane(in, n),
	    "cluster_role", aws_cluster(in, n));
}
