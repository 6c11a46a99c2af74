/* schema: the provider's, resources' and data sources' attribute tables, typed from
 * api/openapi.yaml, their plan-time checks, and the protocol Schema built from them. */
#include <ctype.h>
#include <stdio.h>
#include <string.h>

#include "tf.h"

/* ------------------------------------------------------------------ checks */

static bool
pattern_name(const char *s, size_t max)
{
	size_t n = strlen(s);

	if (n < 2 || n > max || !(s[0] >= 'a' && s[0] <= 'z'))
		return false;
	for (size_t i = 1; i < n; i++)
		if (!(islower((unsigned char)s[i]) || isdigit((unsigned char)s[i]) || s[i] == '-'))
			return false;
	return true;
}

static bool
chk_name(json_t *v, char *msg, size_t n)
{
	if (pattern_name(json_string_value(v), 63))
		return true;
	snprintf(msg, n, "must match ^[a-z][a-z0-9-]{1,62}$ (lowercase letters, digits and "
	    "hyphens, 2 to 63 characters, starting with a letter)");
	return false;
}

static bool
chk_env(json_t *v, char *msg, size_t n)
{
	if (pattern_name(json_string_value(v), 31))
		return true;
	snprintf(msg, n, "must match ^[a-z][a-z0-9-]{1,30}$ (2 to 31 characters)");
	return false;
}

static bool
chk_enum(json_t *v, const char *const *vals, char *msg, size_t n)
{
	size_t off;

	for (size_t i = 0; vals[i]; i++)
		if (strcmp(json_string_value(v), vals[i]) == 0)
			return true;
	off = (size_t)snprintf(msg, n, "must be one of");
	for (size_t i = 0; vals[i] && off < n; i++)
		off += (size_t)snprintf(msg + off, n - off, "%s %s", i ? "," : "", vals[i]);
	return false;
}

static bool
chk_provider(json_t *v, char *msg, size_t n)
{
	static const char *const vals[] = {"gke", "aks", "hyperpod", NULL};
	return chk_enum(v, vals, msg, n);
}

static bool
chk_role(json_t *v, char *msg, size_t n)
{
	static const char *const vals[] = {"viewer", "submitter", "operator", "admin", NULL};
	return chk_enum(v, vals, msg, n);
}

static bool
chk_batch(json_t *v, char *msg, size_t n)
{
	static const char *const vals[] = {"none", "volcano", "yunikorn", "kai", "kueue", NULL};
	return chk_enum(v, vals, msg, n);
}

static bool
chk_strategy(json_t *v, char *msg, size_t n)
{
	static const char *const vals[] = {"best_effort_fifo", "strict_fifo", NULL};
	return chk_enum(v, vals, msg, n);
}

static bool
chk_desc(json_t *v, char *msg, size_t n)
{
	if (strlen(json_string_value(v)) <= 1024)
		return true;
	snprintf(msg, n, "must be at most 1024 characters");
	return false;
}

static bool
chk_https(json_t *v, char *msg, size_t n)
{
	const char *s = json_string_value(v);

	if (strncmp(s, "https://", 8) == 0 && strlen(s) <= 512)
		return true;
	snprintf(msg, n, "must be an https:// URL of at most 512 characters");
	return false;
}

static bool
chk_len512(json_t *v, char *msg, size_t n)
{
	size_t l = strlen(json_string_value(v));

	if (l >= 1 && l <= 512)
		return true;
	snprintf(msg, n, "must be 1 to 512 characters");
	return false;
}

static bool
chk_token_name(json_t *v, char *msg, size_t n)
{
	size_t l = strlen(json_string_value(v));

	if (l >= 1 && l <= 100)
		return true;
	snprintf(msg, n, "must be 1 to 100 characters");
	return false;
}

static bool
chk_weight(json_t *v, char *msg, size_t n)
{
	double d = json_number_value(v);

	if (d > 0 && d <= 1000)
		return true;
	snprintf(msg, n, "must be greater than 0 and at most 1000, got %g", d);
	return false;
}

static bool
chk_prio(json_t *v, char *msg, size_t n)
{
	double d = json_number_value(v);

	if (d == (double)(long long)d && d >= -1e9 && d <= 1e9)
		return true;
	snprintf(msg, n, "must be a whole number from -1000000000 to 1000000000, got %g", d);
	return false;
}

static bool
chk_quota(json_t *v, char *msg, size_t n)
{
	const char *k;
	json_t *x;

	json_object_foreach(v, k, x) {
		double d;

		if (tf_is_unknown(x))
			continue;
		if (!(k[0] >= 'a' && k[0] <= 'z') || strspn(k, "abcdefghijklmnopqrstuvwxyz0123456789-")
		    != strlen(k)) {
			snprintf(msg, n, "flavor \"%s\" must match ^[a-z][a-z0-9-]*$", k);
			return false;
		}
		d = json_number_value(x);
		if (!json_is_number(x) || d != (double)(long long)d || d < 0 || d > 1e7) {
			snprintf(msg, n, "quantity of \"%s\" must be a whole number from 0 to 10000000", k);
			return false;
		}
	}
	return true;
}

static bool
chk_token_envs(json_t *v, char *msg, size_t n)
{
	size_t i;
	json_t *x;

	if (json_array_size(v) < 1 || json_array_size(v) > 64) {
		snprintf(msg, n, "must list 1 to 64 environments");
		return false;
	}
	json_array_foreach(v, i, x) {
		const char *s = json_string_value(x);
		if (tf_is_unknown(x) || !s)
			continue;
		if (strcmp(s, "*") != 0 && (strlen(s) < 2 || strlen(s) > 31 ||
		    strspn(s, "abcdefghijklmnopqrstuvwxyz0123456789-") != strlen(s))) {
			snprintf(msg, n, "element %zu (\"%s\") must be an environment name or \"*\"", i, s);
			return false;
		}
	}
	return true;
}

static bool
chk_labels(json_t *v, char *msg, size_t n)
{
	const char *k;
	json_t *x;

	if (json_object_size(v) > 64) {
		snprintf(msg, n, "must have at most 64 labels");
		return false;
	}
	json_object_foreach(v, k, x) {
		if (json_is_string(x) && strlen(json_string_value(x)) > 63) {
			snprintf(msg, n, "value of label \"%s\" must be at most 63 characters", k);
			return false;
		}
	}
	return true;
}

static bool
chk_positive(json_t *v, char *msg, size_t n)
{
	if (json_number_value(v) > 0)
		return true;
	snprintf(msg, n, "must be greater than 0");
	return false;
}

static bool
chk_nonneg(json_t *v, char *msg, size_t n)
{
	if (json_number_value(v) >= 0)
		return true;
	snprintf(msg, n, "must be 0 or more");
	return false;
}

static bool
chk_upgrade_deadline(json_t *v, char *msg, size_t n)
{
	double d = json_number_value(v);

	if (d >= 60 && d <= 604800 && d == (double)(long long)d)
		return true;
	snprintf(msg, n, "must be a whole number of seconds from 60 to 604800");
	return false;
}

static bool
chk_ingress_path(json_t *v, char *msg, size_t n)
{
	const char *s = json_string_value(v);

	if (s[0] == '/' && strlen(s) <= 256 && strpbrk(s, " \t\n") == NULL)
		return true;
	snprintf(msg, n, "must start with / (at most 256 characters, no spaces)");
	return false;
}

static bool
chk_path_type(json_t *v, char *msg, size_t n)
{
	static const char *const vals[] = {"Prefix", "Exact", "ImplementationSpecific", NULL};
	return chk_enum(v, vals, msg, n);
}

/* ------------------------------------------------------------------ tables */

#define END {0}
#define C_STR(n)	{n, NULL, TY_STR, 0, NULL, F_COMP, NULL, NULL}
#define C_NUM(n)	{n, NULL, TY_NUM, 0, NULL, F_COMP, NULL, NULL}
#define C_STRMAP(n)	{n, NULL, TY_MAP, TY_STR, NULL, F_COMP, NULL, NULL}
#define C_STRLIST(n)	{n, NULL, TY_LIST, TY_STR, NULL, F_COMP, NULL, NULL}
#define META \
	{"version", NULL, TY_NUM, 0, NULL, F_COMP | F_VOL, NULL, "Object version (ETag)."}, \
	{"created_at", NULL, TY_STR, 0, NULL, F_COMP, NULL, "RFC 3339 creation time."}, \
	{"updated_at", NULL, TY_STR, 0, NULL, F_COMP | F_VOL, NULL, "RFC 3339 time of the last change."}

const struct tf_attr tf_provider_attrs[] = {
	{"url", NULL, TY_STR, 0, NULL, F_OPT, NULL, "fleetd base URL, e.g. https://fleetd.internal:8443 (or FLEET_URL)."},
	{"token", NULL, TY_STR, 0, NULL, F_OPT | F_SENS, NULL, "API token (or FLEET_TOKEN)."},
	{"ca_cert", NULL, TY_STR, 0, NULL, F_OPT, NULL, "PEM of the CA that signed fleetd's certificate (default: the system's)."},
	{"request_timeout", NULL, TY_NUM, 0, NULL, F_OPT, chk_positive, "Seconds per HTTP attempt (default 30)."},
	{"max_retries", NULL, TY_NUM, 0, NULL, F_OPT, chk_nonneg, "Retries on transport errors, 429 and 5xx, honouring Retry-After (default 5)."},
	{"iam_verification_timeout", NULL, TY_NUM, 0, NULL, F_OPT, chk_positive, "Seconds fleet_cloud_iam keeps retrying a failed verification (default 120)."},
	END
};

#define POD_FLAG(n, d)	{n, NULL, TY_BOOL, 0, NULL, F_OPT | F_COMP, NULL, d}
static const struct tf_attr pod_policy_attrs[] = {
	POD_FLAG("env", "Jobs may set env (pods and sidecars); default true."),
	POD_FLAG("env_from", "Jobs may import env from secrets and config maps; default true."),
	POD_FLAG("annotations", "Jobs may annotate their pods; default true."),
	POD_FLAG("labels", "Jobs may label their pods; default true."),
	POD_FLAG("tolerations", "Jobs may add tolerations; default true."),
	POD_FLAG("service_account", "Jobs may name a service account (workload identity); default true."),
	POD_FLAG("containers", "Jobs may add sidecar containers (never privileged); default true."),
	{"volume_kinds", NULL, TY_LIST, TY_STR, NULL, F_OPT | F_COMP, NULL, "Volume kinds allowed: persistent_volume_claim, csi, secret, config_map, empty_dir (default all; host_path never)."},
	{"csi_drivers", NULL, TY_LIST, TY_STR, NULL, F_OPT | F_COMP, NULL, "CSI drivers allowed (default gcsfuse.csi.storage.gke.io, fsx.csi.aws.com, file.csi.azure.com, blob.csi.azure.com)."},
	END
};

static const struct tf_attr history_server_attrs[] = {
	{"storage", NULL, TY_STR, 0, NULL, F_REQ, NULL, "Log storage the collector writes to: gs://BUCKET[/PATH], s3://BUCKET[/PATH] or https://ACCOUNT.blob.core.windows.net/CONTAINER[/PATH]."},
	{"collector_image", NULL, TY_STR, 0, NULL, F_REQ, NULL, "KubeRay History Server collector image, e.g. quay.io/kuberay/collector:v1.7.0."},
	{"url", NULL, TY_STR, 0, NULL, F_OPT, NULL, "The History Server's address; explain links the job's session there."},
	{"s3_region", NULL, TY_STR, 0, NULL, F_OPT, NULL, "AWS region of an s3:// bucket (required with s3://)."},
	END
};

static const struct tf_attr dashboard_ingress_attrs[] = {
	{"host", NULL, TY_STR, 0, NULL, F_REQ, NULL, "DNS name the dashboards are served under."},
	{"path", NULL, TY_STR, 0, NULL, F_OPT | F_COMP, chk_ingress_path, "Path of the ingress rule (default /)."},
	{"path_type", NULL, TY_STR, 0, NULL, F_OPT | F_COMP, chk_path_type, "Prefix, Exact or ImplementationSpecific (default Prefix)."},
	{"tls_secret", NULL, TY_STR, 0, NULL, F_OPT, NULL, "TLS Secret in each job's namespace (unset: no TLS)."},
	{"controller_namespace", NULL, TY_STR, 0, NULL, F_OPT | F_COMP, NULL, "Namespace of the ingress controller, which each job's NetworkPolicy admits to the dashboard port (default ingress-nginx)."},
	END
};

static const struct tf_attr environment_attrs[] = {
	{"id", NULL, TY_STR, 0, NULL, F_COMP, NULL, "Environment id (uuid)."},
	{"name", NULL, TY_STR, 0, NULL, F_REQ | F_RNEW, chk_env, "Name, immutable; also the import id."},
	{"description", NULL, TY_STR, 0, NULL, F_OPT | F_COMP, chk_desc, "Free text."},
	{"pod_policy", NULL, TY_OBJ, 0, pod_policy_attrs, F_OPT | F_COMP, NULL, "What the pod sections of the environment's jobs may use; fleetd refuses the rest with 422."},
	{"upgrade_deadline_seconds", NULL, TY_NUM, 0, NULL, F_OPT | F_COMP, chk_upgrade_deadline, "How long a RayService upgrade may run its second Ray cluster when the job names no deadline; past it fleetd rolls back to the serving cluster (default 3600)."},
	{"history_server", NULL, TY_OBJ, 0, history_server_attrs, F_OPT | F_COMP, NULL, "KubeRay History Server (beta in KubeRay 1.7): jobs dispatched from now on carry its collector, writing Ray logs and events to storage. Removing the block keeps the server's setting (PUT history_server null through the API removes it)."},
	{"dashboard_ingress", NULL, TY_OBJ, 0, dashboard_ingress_attrs, F_OPT | F_CLEAR, NULL, "An ingress in front of the Ray dashboard of every job dispatched from now on (KubeRay's headGroupSpec.enableIngress and ingressOptions), always behind the job's token. Removing the block removes it for the next attempts."},
	META, END
};

static const struct tf_attr capacity_pref_attrs[] = {
	{"order", NULL, TY_LIST, TY_STR, NULL, F_REQ, NULL, "Capacity types, best first: reservation, on_demand, spot, flex_start (types not listed are not used)."},
	{"first_choice_only", NULL, TY_BOOL, 0, NULL, F_OPT | F_COMP, NULL, "Wait for the first type and never migrate; default false."},
	{"max_migrations", NULL, TY_NUM, 0, NULL, F_OPT, NULL, "Migrations to a more preferred type per job (default 2)."},
	{"min_run_seconds", NULL, TY_NUM, 0, NULL, F_OPT, NULL, "Run time before a migration (default 600)."},
	{"cooldown_seconds", NULL, TY_NUM, 0, NULL, F_OPT, NULL, "Time between two migrations of one job, the hysteresis (default 1800)."},
	END
};

static const struct tf_attr queue_attrs[] = {
	{"id", NULL, TY_STR, 0, NULL, F_COMP, NULL, "Queue id (uuid); the import id."},
	{"name", NULL, TY_STR, 0, NULL, F_REQ | F_RNEW, chk_name, "Name, unique in the environment; immutable."},
	{"environment", NULL, TY_STR, 0, NULL, F_REQ | F_RNEW, chk_env, "Environment, immutable."},
	{"cohort", NULL, TY_STR, 0, NULL, F_OPT | F_COMP, chk_name, "Cohort that lends and borrows quota."},
	{"weight", NULL, TY_NUM, 0, NULL, F_OPT | F_COMP, chk_weight, "Fair-share weight (0, 1000], default 1."},
	{"nominal_quota", NULL, TY_MAP, TY_NUM, NULL, F_OPT | F_COMP, chk_quota, "Accelerators guaranteed per flavor."},
	{"borrowing_limit", NULL, TY_MAP, TY_NUM, NULL, F_OPT | F_COMP, chk_quota, "Accelerators it may borrow per flavor."},
	{"lending_limit", NULL, TY_MAP, TY_NUM, NULL, F_OPT | F_COMP, chk_quota, "Accelerators it may lend per flavor."},
	{"default_priority_class", NULL, TY_STR, 0, NULL, F_OPT | F_COMP, NULL, "Priority class name or id for jobs that name none."},
	{"queueing_strategy", NULL, TY_STR, 0, NULL, F_OPT | F_COMP, chk_strategy, "best_effort_fifo (default) or strict_fifo."},
	{"team", NULL, TY_STR, 0, NULL, F_OPT | F_COMP, chk_name, "Team owning the queue (its members see and submit to it); unset: environment-wide."},
	{"capacity_preference", NULL, TY_OBJ, 0, capacity_pref_attrs, F_OPT | F_COMP, NULL, "Ranked capacity types for the queue's jobs (a job's constraints.capacity_preference overrides it): a job starts on the best type with room and the scheduler moves it, with its checkpoint, to a more preferred type when one frees."},
	META, END
};

static const struct tf_attr team_attrs[] = {
	{"name", NULL, TY_STR, 0, NULL, F_REQ | F_RNEW, chk_name, "Name, immutable; also the import id."},
	{"environments", NULL, TY_LIST, TY_STR, NULL, F_REQ | F_RNEW, NULL, "Environments its queues may live in."},
	{"description", NULL, TY_STR, 0, NULL, F_OPT | F_COMP | F_RNEW, chk_desc, "Free text."},
	META, END
};

static const struct tf_attr priority_class_attrs[] = {
	{"id", NULL, TY_STR, 0, NULL, F_COMP, NULL, "Priority class id (uuid); the import id."},
	{"name", NULL, TY_STR, 0, NULL, F_REQ | F_RNEW, chk_name, "Name, immutable."},
	{"value", NULL, TY_NUM, 0, NULL, F_REQ, chk_prio, "Priority; higher runs first."},
	{"preempt", NULL, TY_BOOL, 0, NULL, F_OPT | F_COMP, NULL, "May evict lower priorities (default false)."},
	{"description", NULL, TY_STR, 0, NULL, F_OPT | F_COMP, chk_desc, "Free text."},
	META, END
};

static const struct tf_attr api_token_attrs[] = {
	{"id", NULL, TY_STR, 0, NULL, F_COMP, NULL, "Token id (uuid); the import id."},
	{"name", NULL, TY_STR, 0, NULL, F_REQ | F_RNEW, chk_token_name, "Name."},
	{"role", NULL, TY_STR, 0, NULL, F_REQ | F_RNEW, chk_role, "viewer, submitter, operator or admin."},
	{"environments", NULL, TY_LIST, TY_STR, NULL, F_REQ | F_RNEW, chk_token_envs, "Environment names, or [\"*\"]."},
	{"team", NULL, TY_STR, 0, NULL, F_OPT | F_RNEW, chk_name, "Hold the role in this team (not with admin): only its queues, jobs and events."},
	{"revoked", NULL, TY_BOOL, 0, NULL, F_COMP, NULL, "Whether revoked."},
	{"secret", NULL, TY_STR, 0, NULL, F_COMP | F_SENS, NULL, "The secret, returned once at creation (sensitive; empty after import)."},
	{"version", NULL, TY_NUM, 0, NULL, F_COMP, NULL, "Object version."},
	{"created_at", NULL, TY_STR, 0, NULL, F_COMP, NULL, "RFC 3339 creation time."},
	END
};

static bool
chk_hook_url(json_t *v, char *msg, size_t n)
{
	const char *s = json_string_value(v);

	if (strncmp(s, "https://", 8) == 0 || strncmp(s, "http://127.0.0.1", 16) == 0 ||
	    strncmp(s, "http://localhost", 16) == 0 || strncmp(s, "http://[::1]", 12) == 0)
		return true;
	snprintf(msg, n, "must be an https:// url (http:// only for loopback hosts)");
	return false;
}

static const struct tf_attr webhook_attrs[] = {
	{"id", NULL, TY_STR, 0, NULL, F_COMP, NULL, "Webhook id (uuid); the import id."},
	{"environment", NULL, TY_STR, 0, NULL, F_REQ | F_RNEW, chk_env, "Environment whose job events it receives; immutable."},
	{"url", NULL, TY_STR, 0, NULL, F_REQ | F_RNEW, chk_hook_url, "Endpoint, https:// (http:// for loopback hosts only)."},
	{"types", NULL, TY_LIST, TY_STR, NULL, F_REQ | F_RNEW, NULL, "Event types: job.submitted, job.state_changed, job.failed, job.operation, job.event, or \"*\"."},
	{"team", NULL, TY_STR, 0, NULL, F_OPT | F_RNEW, chk_name, "Only jobs whose spec.labels.team is this."},
	{"description", NULL, TY_STR, 0, NULL, F_OPT | F_COMP | F_RNEW, chk_desc, "Free text."},
	{"secret", NULL, TY_STR, 0, NULL, F_COMP | F_SENS, NULL, "The signing secret, returned once at creation (sensitive; empty after import)."},
	META, END
};

static bool
chk_scope(json_t *v, char *msg, size_t n)
{
	static const char *const vals[] = {"environment", "queue", "team", NULL};
	return chk_enum(v, vals, msg, n);
}

static bool
chk_period(json_t *v, char *msg, size_t n)
{
	static const char *const vals[] = {"month", NULL};
	return chk_enum(v, vals, msg, n);
}

static bool
chk_amount(json_t *v, char *msg, size_t n)
{
	double d = json_number_value(v);

	if (d > 0 && d <= 1e12)
		return true;
	snprintf(msg, n, "must be above 0 and at most 1e12 (USD)");
	return false;
}

static bool
chk_soft(json_t *v, char *msg, size_t n)
{
	double d = json_number_value(v);

	if (d >= 80 && d <= 100)
		return true;
	snprintf(msg, n, "must be between 80 and 100");
	return false;
}

static const struct tf_attr budget_attrs[] = {
	{"id", NULL, TY_STR, 0, NULL, F_COMP, NULL, "Budget id (uuid); the import id."},
	{"name", NULL, TY_STR, 0, NULL, F_REQ | F_RNEW, chk_name, "Name, unique in the environment; immutable."},
	{"environment", NULL, TY_STR, 0, NULL, F_REQ | F_RNEW, chk_env, "Environment whose spend it counts; immutable."},
	{"scope", NULL, TY_STR, 0, NULL, F_REQ | F_RNEW, chk_scope, "environment, queue or team."},
	{"queue", NULL, TY_STR, 0, NULL, F_OPT | F_RNEW, chk_name, "The queue's name (scope queue only)."},
	{"team", NULL, TY_STR, 0, NULL, F_OPT | F_RNEW, NULL, "The jobs' labels.team (scope team only)."},
	{"amount_usd", NULL, TY_NUM, 0, NULL, F_REQ | F_RNEW, chk_amount, "Monthly amount in USD."},
	{"period", NULL, TY_STR, 0, NULL, F_OPT | F_COMP | F_RNEW, chk_period, "month (the only period)."},
	{"soft_percent", NULL, TY_NUM, 0, NULL, F_OPT | F_COMP | F_RNEW, chk_soft, "Percent of the amount at which a budget_threshold event is emitted, [80, 100], default 80 (and at 100)."},
	{"hard", NULL, TY_BOOL, 0, NULL, F_OPT | F_COMP | F_RNEW, NULL, "Refuse new submissions it covers once spent (422 budget.exhausted); running jobs are not stopped. Default false."},
	META, END
};

static const struct tf_attr account_attrs[] = {
	{"project", NULL, TY_STR, 0, NULL, F_OPT, NULL, "gke: GCP project id."},
	{"subscription_id", NULL, TY_STR, 0, NULL, F_OPT, NULL, "aks: subscription (uuid)."},
	{"tenant_id", NULL, TY_STR, 0, NULL, F_OPT, NULL, "aks: Entra tenant (uuid)."},
	{"resource_group", NULL, TY_STR, 0, NULL, F_OPT, NULL, "aks: resource group."},
	{"account_id", NULL, TY_STR, 0, NULL, F_OPT, NULL, "hyperpod: 12-digit AWS account id."},
	END
};

static const struct tf_attr aws_inline_attrs[] = {
	C_STR("name"),
	{"policy", NULL, TY_STR, 0, NULL, F_COMP | F_JSON, NULL, "Policy document (JSON)."},
	END
};

static const struct tf_attr aws_role_attrs[] = {
	C_STR("suggested_name"), C_STR("path"), C_STR("description"),
	C_NUM("max_session_duration"),
	{"assume_role_policy", NULL, TY_STR, 0, NULL, F_COMP | F_JSON, NULL, "Trust policy (JSON)."},
	{"inline_policies", NULL, TY_LIST, TY_OBJ, aws_inline_attrs, F_COMP, NULL, "Inline policies."},
	C_STRLIST("managed_policy_arns"), C_STRMAP("tags"),
	END
};

static const struct tf_attr gcp_sa_attrs[] = {
	C_STR("account_id"), C_STR("email"), C_STR("display_name"), C_STR("description"),
	C_STRMAP("labels"), END
};

static const struct tf_attr gcp_role_body_attrs[] = {
	C_STR("title"), C_STR("description"),
	{"included_permissions", "includedPermissions", TY_LIST, TY_STR, NULL, F_COMP, NULL, NULL},
	C_STR("stage"), END
};

static const struct tf_attr gcp_custom_role_attrs[] = {
	{"role_id", "roleId", TY_STR, 0, NULL, F_COMP, NULL, NULL},
	{"role", NULL, TY_OBJ, 0, gcp_role_body_attrs, F_COMP, NULL, NULL},
	END
};

static const struct tf_attr gcp_condition_attrs[] = {
	C_STR("title"), C_STR("description"), C_STR("expression"), END
};

static const struct tf_attr gcp_project_binding_attrs[] = {
	C_STR("role"), C_STRLIST("members"),
	{"condition", NULL, TY_OBJ, 0, gcp_condition_attrs, F_COMP, NULL, NULL},
	END
};

static const struct tf_attr gcp_sa_binding_attrs[] = {
	C_STR("resource"), C_STR("role"), C_STRLIST("members"), END
};

static const struct tf_attr az_fic_attrs[] = {
	C_STR("name"), C_STR("issuer"), C_STR("subject"), C_STRLIST("audiences"), END
};

static const struct tf_attr az_identity_attrs[] = {
	C_STR("name"), C_STR("id"), C_STR("resource_group"), C_STR("location"), C_STRMAP("tags"),
	{"federated_identity_credentials", NULL, TY_LIST, TY_OBJ, az_fic_attrs, F_COMP, NULL, NULL},
	END
};

static const struct tf_attr az_role_def_attrs[] = {
	{"name", "Name", TY_STR, 0, NULL, F_COMP, NULL, NULL},
	{"is_custom", "IsCustom", TY_BOOL, 0, NULL, F_COMP, NULL, NULL},
	{"description", "Description", TY_STR, 0, NULL, F_COMP, NULL, NULL},
	{"actions", "Actions", TY_LIST, TY_STR, NULL, F_COMP, NULL, NULL},
	{"not_actions", "NotActions", TY_LIST, TY_STR, NULL, F_COMP, NULL, NULL},
	{"data_actions", "DataActions", TY_LIST, TY_STR, NULL, F_COMP, NULL, NULL},
	{"not_data_actions", "NotDataActions", TY_LIST, TY_STR, NULL, F_COMP, NULL, NULL},
	{"assignable_scopes", "AssignableScopes", TY_LIST, TY_STR, NULL, F_COMP, NULL, NULL},
	END
};

static const struct tf_attr az_role_assign_attrs[] = {
	C_STR("role_definition_name"), C_STR("scope"), C_STR("assignee"), C_STR("principal_type"),
	END
};

/* The union of the three providers' documents; members of other providers are null. */
static const struct tf_attr iam_required_attrs[] = {
	C_STR("provider"), C_STR("cloud_id"), C_STR("region"),
	C_STRMAP("tags"),
	/* hyperpod */
	C_STR("account_id"), C_STR("external_id"),
	{"control_plane_role", NULL, TY_OBJ, 0, aws_role_attrs, F_COMP, NULL, "hyperpod: the control-plane IAM role to create."},
	{"cluster_role", NULL, TY_OBJ, 0, aws_role_attrs, F_COMP, NULL, "hyperpod: the cluster IAM role to create."},
	/* gke */
	C_STR("project"), C_STRMAP("labels"), C_STRMAP("label_mapping"), C_STR("cluster_name_prefix"),
	{"control_plane_service_account", NULL, TY_OBJ, 0, gcp_sa_attrs, F_COMP, NULL, "gke: the control-plane service account."},
	{"cluster_service_account", NULL, TY_OBJ, 0, gcp_sa_attrs, F_COMP, NULL, "gke: the node service account."},
	{"custom_role", NULL, TY_OBJ, 0, gcp_custom_role_attrs, F_COMP, NULL, "gke: the custom role."},
	{"project_bindings", NULL, TY_LIST, TY_OBJ, gcp_project_binding_attrs, F_COMP, NULL, "gke: project IAM bindings (with conditions)."},
	{"service_account_bindings", NULL, TY_LIST, TY_OBJ, gcp_sa_binding_attrs, F_COMP, NULL, "gke: service-account IAM bindings."},
	/* aks */
	C_STR("subscription_id"), C_STR("tenant_id"), C_STR("resource_group_id"),
	{"control_plane_identity", NULL, TY_OBJ, 0, az_identity_attrs, F_COMP, NULL, "aks: the control-plane managed identity."},
	{"cluster_identity", NULL, TY_OBJ, 0, az_identity_attrs, F_COMP, NULL, "aks: the cluster managed identity."},
	{"role_definitions", NULL, TY_LIST, TY_OBJ, az_role_def_attrs, F_COMP, NULL, "aks: role definitions."},
	{"role_assignments", NULL, TY_LIST, TY_OBJ, az_role_assign_attrs, F_COMP, NULL, "aks: role assignments."},
	END
};

static const struct tf_attr cloud_attrs[] = {
	{"id", NULL, TY_STR, 0, NULL, F_COMP, NULL, "Cloud id (uuid); the import id."},
	{"name", NULL, TY_STR, 0, NULL, F_REQ, chk_name, "Name (the only mutable field)."},
	{"environment", NULL, TY_STR, 0, NULL, F_REQ | F_RNEW, chk_env, "Environment, immutable."},
	{"provider_type", "provider", TY_STR, 0, NULL, F_REQ | F_RNEW, chk_provider, "gke, aks or hyperpod (fleetd's `provider`; `provider` is a Terraform meta-argument); immutable."},
	{"region", NULL, TY_STR, 0, NULL, F_REQ | F_RNEW, NULL, "A region of the provider; immutable."},
	{"account", NULL, TY_OBJ, 0, account_attrs, F_REQ | F_RNEW, NULL, "The provider account, with that provider's fields only; immutable."},
	{"state", NULL, TY_STR, 0, NULL, F_COMP, NULL, "pending_iam until fleet_cloud_iam locks the pair, then active."},
	{"external_id", NULL, TY_STR, 0, NULL, F_COMP, NULL, "Random external id (sts:ExternalId)."},
	{"iam_required", "iam.required", TY_OBJ, 0, iam_required_attrs, F_COMP, NULL, "The IAM documents of phase 1, scoped to this cloud."},
	META, END
};

static const struct tf_attr cloud_iam_attrs[] = {
	{"id", NULL, TY_STR, 0, NULL, F_COMP, NULL, "The cloud id."},
	{"cloud_id", NULL, TY_STR, 0, NULL, F_REQ | F_RNEW, NULL, "The cloud (fleet_cloud.id); the import id."},
	{"control_plane_role", "iam.control_plane_role", TY_STR, 0, NULL, F_REQ, chk_len512, "hyperpod: role ARN; gke: service-account email; aks: identity resource id."},
	{"cluster_role", "iam.cluster_role", TY_STR, 0, NULL, F_REQ, chk_len512, "Same grammar; must differ from control_plane_role."},
	{"locked", "iam.locked", TY_BOOL, 0, NULL, F_COMP | F_VOL, NULL, "True once verified and locked."},
	{"verified_at", "iam.verified_at", TY_STR, 0, NULL, F_COMP | F_VOL, NULL, "When fleetd verified the pair."},
	{"state", NULL, TY_STR, 0, NULL, F_COMP | F_VOL, NULL, "The cloud's state (active)."},
	END
};

static const struct tf_attr kueue_attrs[] = {
	{"elastic_jobs", NULL, TY_BOOL, 0, NULL, F_OPT | F_COMP, NULL, "Kueue runs elastic jobs (ElasticJobsViaWorkloadSlices); default false."},
	{"cluster_queue", NULL, TY_STR, 0, NULL, F_OPT | F_COMP, NULL, "ClusterQueue of the LocalQueues fleetd ensures; default fleetd."},
	{"local_queue_prefix", NULL, TY_STR, 0, NULL, F_OPT | F_COMP, NULL, "LocalQueue name = prefix + fleetd queue name; default empty."},
	END
};

static const struct tf_attr cluster_attrs[] = {
	{"id", NULL, TY_STR, 0, NULL, F_COMP, NULL, "Cluster id (uuid); the import id."},
	{"cloud_id", NULL, TY_STR, 0, NULL, F_REQ | F_RNEW, NULL, "The active cloud it belongs to."},
	{"name", NULL, TY_STR, 0, NULL, F_REQ | F_RNEW, chk_name, "Name, immutable."},
	{"api_server", NULL, TY_STR, 0, NULL, F_REQ, chk_https, "Kubernetes API URL (https://)."},
	{"ca_cert", NULL, TY_STR, 0, NULL, F_REQ, NULL, "PEM of the API server's CA."},
	{"token_wo", NULL, TY_STR, 0, NULL, F_REQ | F_WO | F_SENS, NULL, "Bearer token; write-only: sent to fleetd, never stored in plan or state."},
	{"token_wo_version", NULL, TY_NUM, 0, NULL, F_OPT | F_LOCAL, NULL, "Change it to send token_wo again (rotation)."},
	{"provider_cluster_id", NULL, TY_STR, 0, NULL, F_REQ | F_RNEW, chk_len512, "GKE cluster path, AKS resource id or HyperPod ARN; immutable."},
	{"labels", NULL, TY_MAP, TY_STR, NULL, F_OPT | F_COMP, chk_labels, "Labels (at most 64, values at most 63 characters)."},
	{"batch_scheduler", NULL, TY_STR, 0, NULL, F_OPT | F_COMP, chk_batch, "none (default), volcano, yunikorn, kai or kueue."},
	{"kueue", NULL, TY_OBJ, 0, kueue_attrs, F_OPT | F_COMP, NULL, "Kueue settings (batch_scheduler kueue only)."},
	{"batch_scheduler_condition", "batch_scheduler_probe.condition", TY_STR, 0, NULL, F_COMP | F_VOL, NULL, "What fleetd read on the member: verified, mismatch or unverified (kueue only)."},
	{"environment", NULL, TY_STR, 0, NULL, F_COMP, NULL, "The cloud's environment."},
	{"provider_type", "provider", TY_STR, 0, NULL, F_COMP, NULL, "The cloud's provider."},
	{"region", NULL, TY_STR, 0, NULL, F_COMP, NULL, "The cloud's region."},
	META, END
};

static const struct tf_attr flavor_label_attrs[] = {
	{"key", NULL, TY_STR, 0, NULL, F_REQ, NULL, "Label key (cloud.google.com/gke-accelerator)."},
	{"value", NULL, TY_STR, 0, NULL, F_REQ, NULL, "Label value."},
	END
};

static const struct tf_attr flavor_machine_attrs[] = {
	{"provider", NULL, TY_STR, 0, NULL, F_REQ, chk_provider, "gke, aks or hyperpod."},
	{"machine_type", NULL, TY_STR, 0, NULL, F_REQ, NULL, "As the provider names it (a4x-highgpu-4g, ml.p6-b200.48xlarge)."},
	{"accelerators_per_node", NULL, TY_NUM, 0, NULL, F_REQ, NULL, "GPUs, or TPU chips per host (1 to 64)."},
	{"vcpus", NULL, TY_NUM, 0, NULL, F_OPT, NULL, "vCPUs per node."},
	{"memory_gib", NULL, TY_NUM, 0, NULL, F_OPT, NULL, "Host memory per node, GiB."},
	{"on_demand_hour", NULL, TY_NUM, 0, NULL, F_OPT, NULL, "USD per node-hour."},
	{"spot_hour", NULL, TY_NUM, 0, NULL, F_OPT, NULL, "USD per spot node-hour; 0 or absent: no spot."},
	{"node_label", NULL, TY_OBJ, 0, flavor_label_attrs, F_OPT, NULL, "The node label naming the accelerator on this machine type."},
	END
};

static const struct tf_attr flavor_attrs[] = {
	{"name", NULL, TY_STR, 0, NULL, F_REQ | F_RNEW, chk_name, "Flavor name (what jobs and quotas name); the import id. The name of a built-in flavor overrides it."},
	{"kind", NULL, TY_STR, 0, NULL, F_REQ, NULL, "gpu or tpu."},
	{"memory_gib", NULL, TY_NUM, 0, NULL, F_REQ, NULL, "Accelerator memory per device (per chip for a TPU), GiB."},
	{"k8s_resource", NULL, TY_STR, 0, NULL, F_OPT | F_COMP, NULL, "Extended resource; default nvidia.com/gpu or google.com/tpu."},
	{"rack_size", NULL, TY_NUM, 0, NULL, F_OPT | F_COMP, NULL, "Nodes per NVLink domain (GB200 NVL72: 18); 0 = none."},
	{"machine_types", NULL, TY_LIST, TY_OBJ, flavor_machine_attrs, F_REQ, NULL, "The provider machine types that carry it (1 to 32)."},
	{"builtin", NULL, TY_BOOL, 0, NULL, F_COMP, NULL, "A flavor fleetd ships (this resource overrides it)."},
	{"version", NULL, TY_NUM, 0, NULL, F_COMP | F_VOL, NULL, "Object version (ETag)."},
	END
};

/* data sources */
static const struct tf_attr regions_attrs[] = {
	{"provider_type", "provider", TY_STR, 0, NULL, F_OPT, chk_provider, "Only this provider's regions."},
	{"providers", NULL, TY_LIST, TY_STR, NULL, F_COMP, NULL, "Every provider."},
	{"regions", NULL, TY_LIST, TY_STR, NULL, F_COMP, NULL, "Regions of provider, or provider/region of all."},
	END
};

static const struct tf_attr cloud_ds_attrs[] = {
	{"id", NULL, TY_STR, 0, NULL, F_REQ, NULL, "Cloud id."},
	C_STR("name"), C_STR("environment"),
	{"provider_type", "provider", TY_STR, 0, NULL, F_COMP, NULL, "gke, aks or hyperpod."},
	C_STR("region"),
	{"account", NULL, TY_OBJ, 0, account_attrs, F_COMP, NULL, "The provider account."},
	C_STR("state"), C_STR("external_id"),
	{"iam_required", "iam.required", TY_OBJ, 0, iam_required_attrs, F_COMP, NULL, "The IAM documents of phase 1."},
	{"control_plane_role", "iam.control_plane_role", TY_STR, 0, NULL, F_COMP, NULL, "Locked control-plane identity."},
	{"cluster_role", "iam.cluster_role", TY_STR, 0, NULL, F_COMP, NULL, "Locked cluster identity."},
	END
};

static const struct tf_attr capacity_row_attrs[] = {
	C_STR("environment"), C_STR("region"), C_STR("provider"), C_STR("flavor"),
	C_STR("capacity_type"), C_NUM("clusters"), C_NUM("nodes"), C_NUM("total"),
	C_NUM("free_now"), C_NUM("growable"), C_NUM("quota_left"), C_NUM("max_age_s"),
	END
};

static const struct tf_attr capacity_attrs[] = {
	{"environment", NULL, TY_STR, 0, NULL, F_OPT, chk_env, "Filter."},
	{"region", NULL, TY_STR, 0, NULL, F_OPT, NULL, "Filter."},
	{"provider_type", "provider", TY_STR, 0, NULL, F_OPT, chk_provider, "Filter."},
	{"flavor", NULL, TY_STR, 0, NULL, F_OPT, NULL, "Filter."},
	{"items", NULL, TY_LIST, TY_OBJ, capacity_row_attrs, F_COMP, NULL, "One row per environment x region x provider x flavor x capacity type."},
	C_NUM("snapshot_max_age_s"),
	END
};

extern const struct tf_ops tf_ops_cloud, tf_ops_cloud_iam, tf_ops_cluster, tf_ops_flavor;

const struct tf_res tf_resources[] = {
	{"fleet_environment", environment_attrs, "/v1/environments", "name", NULL, "An environment (dev, staging, prod, ...)."},
	{"fleet_queue", queue_attrs, "/v1/queues", "id", NULL, "A queue of one environment with its quota."},
	{"fleet_team", team_attrs, "/v1/teams", "name", NULL, "A team, which owns queues and in which a token may hold its role."},
	{"fleet_priority_class", priority_class_attrs, "/v1/priority-classes", "id", NULL, "A priority class."},
	{"fleet_api_token", api_token_attrs, "/v1/tokens", "id", NULL, "An API token; the secret is returned once."},
	{"fleet_flavor", flavor_attrs, "/v1/flavors", "name", &tf_ops_flavor, "An accelerator flavor of the catalog, added or overriding a built-in one (admin of every environment)."},
	{"fleet_webhook", webhook_attrs, "/v1/webhooks", "id", NULL, "A webhook endpoint for an environment's job events; the secret is returned once."},
	{"fleet_budget", budget_attrs, "/v1/budgets", "id", NULL, "A monthly budget of an environment, a queue or a team: threshold events, and refusal of new submissions when hard."},
	{"fleet_cloud", cloud_attrs, "/v1/clouds", "id", &tf_ops_cloud, "A cloud, phase 1 of registration."},
	{"fleet_cloud_iam", cloud_iam_attrs, "/v1/clouds", "cloud_id", &tf_ops_cloud_iam, "Phase 2: verifies and locks a cloud's IAM pair."},
	{"fleet_cluster", cluster_attrs, "/v1/clusters", "id", &tf_ops_cluster, "A member cluster of an active cloud."},
	{0}
};

const struct tf_res tf_data_sources[] = {
	{"fleet_regions", regions_attrs, NULL, NULL, NULL, "The provider and region catalog."},
	{"fleet_cloud", cloud_ds_attrs, "/v1/clouds", "id", NULL, "A cloud by id."},
	{"fleet_capacity", capacity_attrs, "/v1/capacity", NULL, NULL, "Capacity aggregated by environment, region, provider and flavor."},
	{0}
};

const struct tf_res *
tf_res_find(const struct tf_res *tab, const char *type)
{
	for (const struct tf_res *r = tab; r->type; r++)
		if (strcmp(r->type, type) == 0)
			return r;
	return NULL;
}

/* ------------------------------------------------------------------ protocol schema */

static Tfplugin6__Schema__Attribute *attr_build(struct arena *a, const struct tf_attr *t,
	    bool computed_only, bool data_source);

static Tfplugin6__Schema__Object *
object_build(struct arena *a, const struct tf_attr *attrs, bool computed_only, bool ds,
    Tfplugin6__Schema__Object__NestingMode mode)
{
	Tfplugin6__Schema__Object *o = arena_alloc(a, sizeof *o);
	size_t n = 0;

	tfplugin6__schema__object__init(o);
	for (const struct tf_attr *t = attrs; t->name; t++)
		n++;
	o->attributes = arena_alloc(a, n * sizeof *o->attributes);
	o->n_attributes = n;
	for (size_t i = 0; i < n; i++)
		o->attributes[i] = attr_build(a, &attrs[i], computed_only, ds);
	o->nesting = mode;
	return o;
}

static Tfplugin6__Schema__Attribute *
attr_build(struct arena *a, const struct tf_attr *t, bool computed_only, bool ds)
{
	Tfplugin6__Schema__Attribute *p = arena_alloc(a, sizeof *p);
	bool comp_only = computed_only || !(t->flags & (F_REQ | F_OPT));

	tfplugin6__schema__attribute__init(p);
	p->name = (char *)t->name;
	p->description = (char *)(t->desc ? t->desc : "");
	if (comp_only) {
		p->computed = true;
	} else {
		p->required = (t->flags & F_REQ) != 0;
		p->optional = (t->flags & F_OPT) != 0;
		p->computed = (t->flags & F_OPT) && (t->flags & F_COMP);
	}
	p->sensitive = (t->flags & F_SENS) != 0;
	p->write_only = !ds && (t->flags & F_WO);
	if (t->ty == TY_OBJ || ((t->ty == TY_LIST || t->ty == TY_MAP) && t->elem == TY_OBJ)) {
		p->nested_type = object_build(a, t->nested, comp_only, ds,
		    t->ty == TY_OBJ ? TFPLUGIN6__SCHEMA__OBJECT__NESTING_MODE__SINGLE :
		    t->ty == TY_LIST ? TFPLUGIN6__SCHEMA__OBJECT__NESTING_MODE__LIST :
		    TFPLUGIN6__SCHEMA__OBJECT__NESTING_MODE__MAP);
	} else {
		char *ty = tf_type_json(t);
		p->type.data = (uint8_t *)arena_strdup(a, ty);
		p->type.len = strlen(ty);
		free(ty);
	}
	return p;
}

Tfplugin6__Schema *
tf_schema_build(struct arena *a, const struct tf_attr *attrs, const char *desc, bool ds)
{
	Tfplugin6__Schema *s = arena_alloc(a, sizeof *s);
	Tfplugin6__Schema__Block *b = arena_alloc(a, sizeof *b);
	Tfplugin6__Schema__Object *o = object_build(a, attrs, false, ds,
	    TFPLUGIN6__SCHEMA__OBJECT__NESTING_MODE__SINGLE);

	tfplugin6__schema__init(s);
	tfplugin6__schema__block__init(b);
	b->attributes = o->attributes;
	b->n_attributes = o->n_attributes;
	b->description = (char *)(desc ? desc : "");
	s->block = b;
	return s;
}

/* ------------------------------------------------------------------ validation */

void
tf_validate_attrs(const struct tf_attr *attrs, json_t *config, const char *prefix,
    struct tf_diags *d)
{
	for (const struct tf_attr *a = attrs; a->name; a++) {
		json_t *v = tf_get(config, a->name);
		char msg[300], path[200];

		snprintf(path, sizeof path, "%s%s", prefix, a->name);
		if (tf_is_unknown(v))
			continue;
		if (json_is_null(v)) {
			if ((a->flags & F_REQ) && !(a->flags & F_WO))
				tf_diag(d, true, path, "Missing required argument",
				    "The argument \"%s\" is required.", path);
			continue;
		}
		if (!(a->flags & (F_REQ | F_OPT))) {
			tf_diag(d, true, path, "Value for unconfigurable attribute",
			    "Can't configure a value for \"%s\": its value is decided by fleetd.", path);
			continue;
		}
		if (a->ty == TY_OBJ && a->nested != NULL && json_is_object(v)) {
			char sub[256];

			snprintf(sub, sizeof sub, "%s.", path);
			tf_validate_attrs(a->nested, v, sub, d);
		}
		if (a->check && (a->ty != TY_STR || json_is_string(v)) && a->check(v, msg, sizeof msg))
			continue;
		if (a->check && (a->ty != TY_STR || json_is_string(v)))
			tf_diag(d, true, path, "Invalid attribute value",
			    "Attribute \"%s\" %s.", path, msg);
	}
}

/* Region per provider, and the account fields each provider takes (cloud resources). */
void tf_validate_cloud(const struct tf_res *r, json_t *config, struct tf_diags *d);
void
tf_validate_cloud(const struct tf_res *r, json_t *config, struct tf_diags *d)
{
	const char *prov = json_string_value(tf_get(config, "provider_type"));
	const char *region = json_string_value(tf_get(config, "region"));
	json_t *acct = tf_get(config, "account");
	static const struct {
		const char *prov, *need[4];
	} fields[] = {
		{"gke", {"project"}},
		{"aks", {"subscription_id", "tenant_id", "resource_group"}},
		{"hyperpod", {"account_id"}},
	};

	(void)r;
	if (!prov || !tf_provider_valid(prov))
		return;
	if (region && !tf_region_valid(prov, region)) {
		json_t *all = tf_regions_list(prov);
		char *list = json_dumps(all, JSON_COMPACT);
		tf_diag(d, true, "region", "Invalid attribute value",
		    "Attribute \"region\": %s is not a %s region; valid: %s.", region, prov,
		    list ? list : "");
		free(list);
		json_decref(all);
	}
	if (!json_is_object(acct) || tf_is_unknown(acct))
		return;
	for (size_t i = 0; i < sizeof fields / sizeof fields[0]; i++) {
		bool mine = strcmp(fields[i].prov, prov) == 0;
		for (const struct tf_attr *a = account_attrs; a->name; a++) {
			bool needed = false;
			json_t *v = tf_get(acct, a->name);
			char path[64];

			for (int k = 0; k < 4 && fields[i].need[k]; k++)
				needed |= strcmp(fields[i].need[k], a->name) == 0;
			if (!needed)
				continue;
			snprintf(path, sizeof path, "account.%s", a->name);
			if (mine && json_is_null(v))
				tf_diag(d, true, path, "Missing required argument",
				    "Attribute \"%s\" is required for provider %s.", path, prov);
			if (!mine && !json_is_null(v) && !tf_is_unknown(v))
				tf_diag(d, true, path, "Invalid attribute combination",
				    "Attribute \"%s\" belongs to provider %s, not %s.", path,
				    fields[i].prov, prov);
		}
	}
	if (strcmp(prov, "hyperpod") == 0) {
		const char *id = json_string_value(tf_get(acct, "account_id"));
		if (id && (strlen(id) != 12 || strspn(id, "0123456789") != 12))
			tf_diag(d, true, "account.account_id", "Invalid attribute value",
			    "Attribute \"account.account_id\" must be 12 digits.");
	}
}
