/* policy_int: helpers shared by the per-provider policy builders (iam/policy*.c only). */
#ifndef FLEET_IAM_POLICY_INT_H
#define FLEET_IAM_POLICY_INT_H

#include "iam/policy.h"

#define POLICY_TAG_CLOUD	"fleet.io/cloud-id"
#define POLICY_TAG_ENV		"fleet.io/environment"

/* Names derived once from a validated input. */
struct policy_names {
	char	id8[9];		/* first 8 hex digits of the cloud id */
	char	env[17];	/* environment slug: [a-z0-9-], at most 16 */
};

/* Builders run after validation and cannot fail. */
json_t	*policy_aws(const struct iam_policy_input *in, const struct policy_names *n);
json_t	*policy_gcp(const struct iam_policy_input *in, const struct policy_names *n);
json_t	*policy_azure(const struct iam_policy_input *in, const struct policy_names *n);

bool	 policy_uuid_valid(const char *s);
bool	 policy_aws_account_valid(const char *s);
bool	 policy_gcp_project_valid(const char *s);
bool	 policy_azure_rg_valid(const char *s);
/* Checks s against a character class: every byte in [0-9a-z] (and A-Z when upper) or in
 * extra; length in [min, max]. */
bool	 policy_chars(const char *s, size_t min, size_t max, bool upper, const char *extra);

#endif
