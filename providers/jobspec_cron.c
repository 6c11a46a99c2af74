/* jobspec_cron: the job spec's "cron" options of a RayCronJob (the concurrency policy
 * fleetd enforces on the runs; the RayCronJob CRD has no such field).  The renderer does
 * not use them: queue/follow/cron.c does. */
#include <string.h>

#include "core/jsonx.h"
#include "providers/jobspec.h"

static const char *const policy_names[] = { "Forbid", "Allow", "Replace" };

const char *
jobspec_cron_policy_name(enum jobspec_cron_policy p)
{
	return (unsigned)p < 3 ? policy_names[p] : "Forbid";
}

bool
jobspec_cron_policy_from_name(const char *s, enum jobspec_cron_policy *out)
{
	for (int i = 0; s != NULL && i < 3; i++)
		if (strcmp(s, policy_names[i]) == 0) {
			*out = (enum jobspec_cron_policy)i;
			return true;
		}
	return false;
}

bool
jobspec_parse_cron(json_t *root, struct job_spec *s, struct err *e)
{
	static const char *const keys[] = { "concurrency_policy", NULL };
	json_t *c = json_object_get(root, "cron"), *v;

	s->cron_policy = JOBSPEC_CRON_FORBID;
	if (c == NULL || json_is_null(c))
		return true;
	if (s->kind != JOBSPEC_RAYCRONJOB)
		return err_field(e, 422, "jobspec.not_applicable", "/cron",
		    "cron applies only to RayCronJob, not %s", jobspec_kind_name(s->kind));
	if (!json_is_object(c))
		return err_field(e, 400, "api.wrong_type", "/cron", "cron must be an object");
	if (!jsonx_only(c, keys, "/cron", e))
		return false;
	v = json_object_get(c, "concurrency_policy");
	if (v != NULL && !json_is_null(v) &&
	    !jobspec_cron_policy_from_name(json_string_value(v), &s->cron_policy))
		return err_field(e, 422, "jobspec.invalid_value", "/cron/concurrency_policy",
		    "concurrency_policy must be Allow, Forbid or Replace");
	s->cron_set = true;
	return true;
}

json_t *
jobspec_cron_to_json(const struct job_spec *s)
{
	if (!s->cron_set)
		return NULL;
	return json_pack("{s:s}", "concurrency_policy", jobspec_cron_policy_name(s->cron_policy));
}
