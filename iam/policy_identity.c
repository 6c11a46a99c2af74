/* policy_identity: grammar of the role identifiers named in phase 2, and that they belong
 * to the cloud's own account, project or resource group. */
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "iam/policy_int.h"

#define AZ_PROVIDER "/providers/Microsoft.ManagedIdentity/userAssignedIdentities/"

static bool
bad(struct err *e, const char *kind, const char *msg)
{
	char ptr[64];

	snprintf(ptr, sizeof(ptr), "/%s", kind);
	return err_field(e, 400, "iam.bad_identity", ptr, "%s", msg);
}

static bool
elsewhere(struct err *e, const char *kind, const char *msg)
{
	char ptr[64];

	snprintf(ptr, sizeof(ptr), "/%s", kind);
	return err_field(e, 422, "iam.identity_wrong_account", ptr, "%s", msg);
}

/* arn:aws:iam::<12 digits>:role/[path/]name; name 1-64 of [A-Za-z0-9+=,.@_-]. */
static bool
aws_role(const char *kind, const char *v, const struct iam_account *a, struct err *e)
{
	const char *rest, *name;

	if (strncmp(v, "arn:aws:iam::", 13) != 0 || strlen(v) < 26 ||
	    strspn(v + 13, "0123456789") != 12 || strncmp(v + 25, ":role/", 6) != 0)
		return bad(e, kind, "not an iam role arn (arn:aws:iam::<account>:role/<name>)");
	rest = v + 31;
	name = strrchr(rest, '/');
	name = name ? name + 1 : rest;
	if (!policy_chars(name, 1, 64, true, "+=,.@_-"))
		return bad(e, kind, "role name must be 1-64 of letters, digits and +=,.@_-");
	if (name != rest && (!policy_chars(rest, 1, 512, true, "+=,.@_-/") ||
	    strstr(rest, "//") != NULL))
		return bad(e, kind, "role path must be /-separated names");
	if (strncmp(v + 13, a->aws_account_id ? a->aws_account_id : "", 12) != 0)
		return elsewhere(e, kind, "role belongs to another aws account");
	return true;
}

/* NAME@PROJECT.iam.gserviceaccount.com; NAME 6-30 of [a-z0-9-], starting with a letter. */
static bool
gcp_sa(const char *kind, const char *v, const struct iam_account *a, struct err *e)
{
	static const char domain[] = ".iam.gserviceaccount.com";
	const char *at = strchr(v, '@');
	char name[64], project[64];
	size_t nl, pl;

	if (at == NULL || strlen(at + 1) <= sizeof(domain) - 1 ||
	    strcmp(v + strlen(v) - (sizeof(domain) - 1), domain) != 0)
		return bad(e, kind, "not a service account email "
		    "(name@project.iam.gserviceaccount.com)");
	nl = (size_t)(at - v);
	pl = strlen(at + 1) - (sizeof(domain) - 1);
	if (nl >= sizeof(name) || pl >= sizeof(project))
		return bad(e, kind, "service account email too long");
	memcpy(name, v, nl);
	name[nl] = '\0';
	memcpy(project, at + 1, pl);
	project[pl] = '\0';
	if (!policy_chars(name, 6, 30, false, "-") || name[0] < 'a' || name[0] > 'z' ||
	    name[nl - 1] == '-')
		return bad(e, kind, "service account name must be 6-30 lowercase letters, "
		    "digits or hyphens");
	if (!policy_gcp_project_valid(project))
		return bad(e, kind, "service account project is not a project id");
	if (a->gcp_project == NULL || strcmp(project, a->gcp_project) != 0)
		return elsewhere(e, kind, "service account belongs to another project");
	return true;
}

/* Takes the next "/segment" of *p into out (NUL-terminated); false when absent or long. */
static bool
segment(const char **p, char *out, size_t len)
{
	const char *s = *p, *end;

	if (*s != '/')
		return false;
	s++;
	end = strchr(s, '/');
	if (end == NULL)
		end = s + strlen(s);
	if (end == s || (size_t)(end - s) >= len)
		return false;
	memcpy(out, s, (size_t)(end - s));
	out[end - s] = '\0';
	*p = end;
	return true;
}

/* /subscriptions/S/resourceGroups/RG/providers/Microsoft.ManagedIdentity/
 * userAssignedIdentities/NAME; Azure compares these ids without regard to case. */
static bool
azure_identity(const char *kind, const char *v, const struct iam_account *a, struct err *e)
{
	char word[32], sub[64], rg[100], name[160];
	const char *p = v;

	if (!segment(&p, word, sizeof(word)) || strcasecmp(word, "subscriptions") != 0 ||
	    !segment(&p, sub, sizeof(sub)) || !segment(&p, word, sizeof(word)) ||
	    strcasecmp(word, "resourceGroups") != 0 || !segment(&p, rg, sizeof(rg)) ||
	    strncasecmp(p, AZ_PROVIDER, sizeof(AZ_PROVIDER) - 1) != 0)
		return bad(e, kind, "not a user-assigned managed identity resource id");
	p += sizeof(AZ_PROVIDER) - 2;
	if (!segment(&p, name, sizeof(name)) || *p != '\0')
		return bad(e, kind, "not a user-assigned managed identity resource id");
	for (char *c = sub; *c; c++)
		if (*c >= 'A' && *c <= 'F')
			*c = (char)(*c - 'A' + 'a');
	if (!policy_uuid_valid(sub) || !policy_azure_rg_valid(rg))
		return bad(e, kind, "subscription or resource group malformed");
	if (!policy_chars(name, 3, 128, true, "_-") || name[0] == '-' || name[0] == '_')
		return bad(e, kind, "identity name must be 3-128 letters, digits, - or _");
	if (a->azure_subscription_id == NULL || a->azure_resource_group == NULL ||
	    strcasecmp(sub, a->azure_subscription_id) != 0 ||
	    strcasecmp(rg, a->azure_resource_group) != 0)
		return elsewhere(e, kind, "identity belongs to another subscription or "
		    "resource group");
	return true;
}

bool
iam_identity_valid(const char *provider, const char *kind, const char *value,
    const struct iam_account *account, struct err *e)
{
	if (kind == NULL)
		kind = "identity";
	if (value == NULL || value[0] == '\0')
		return bad(e, kind, "identity is required");
	if (provider != NULL && strcmp(provider, "hyperpod") == 0)
		return aws_role(kind, value, account, e);
	if (provider != NULL && strcmp(provider, "gke") == 0)
		return gcp_sa(kind, value, account, e);
	if (provider != NULL && strcmp(provider, "aks") == 0)
		return azure_identity(kind, value, account, e);
	return err_field(e, 400, "iam.bad_identity", "/provider", "unknown provider");
}

bool
iam_pair_valid(const char *provider, const char *control_plane_role,
    const char *cluster_role, const struct iam_account *account, struct err *e)
{
	if (!iam_identity_valid(provider, "control_plane_role", control_plane_role, account,
	    e) || !iam_identity_valid(provider, "cluster_role", cluster_role, account, e))
		return false;
	if (strcasecmp(control_plane_role, cluster_role) == 0)
		return err_field(e, 422, "iam.identity_reused", "/cluster_role",
		    "cluster role must differ from the control-plane role");
	return true;
}
