/* kuberay_history: KubeRay's History Server (beta in KubeRay 1.7) for an environment that
 * names log storage — the environment's setting (parse), the collector sidecar added to each
 * Ray pod (apply) and the History Server link of a job (link).  Pure.
 *
 * Rendered as KubeRay v1.7.0's History Server samples write it by hand,
 * historyserver/config/rayjob-gcs.yaml, rayjob.yaml (S3) and rayjob-azureblob.yaml at commit
 * 59d663aeec13760646da3db9c1cf8cfe883e30b7 (tag v1.7.0) of
 * https://github.com/ray-project/kuberay, and historyserver/docs/set_up_collector.md there:
 * - the Ray container writes its session under RAY_TMP_ROOT=/tmp/ray, an emptyDir shared
 *   with the collector, and exports Ray events to the collector
 *   (RAY_enable_ray_event, RAY_enable_core_worker_ray_event_to_aggregator,
 *   RAY_DASHBOARD_AGGREGATOR_AGENT_EVENTS_EXPORT_ADDR=http://localhost:8084/v1/events,
 *   RAY_DASHBOARD_AGGREGATOR_AGENT_EXPOSABLE_EVENT_TYPES=ALL);
 * - a container "collector" with RAY_CLUSTER_NAME (label ray.io/cluster),
 *   RAY_CLUSTER_NAMESPACE, POD_IP, FQ_RAY_IP, RAY_TMP_ROOT, RAY_ROLE (Head / Worker),
 *   OWNER_KIND / OWNER_NAME (the RayJob or RayService), EVENTS_PORT 8084 and the storage:
 *   STORAGE_BACKEND gcs + GCS_BUCKET, s3 + S3_BUCKET + S3_REGION, azureblob +
 *   AZURE_STORAGE_CONTAINER + AZURE_STORAGE_ACCOUNT_URL with AZURE_STORAGE_AUTH_MODE
 *   workload_identity (historyserver/pkg/storage/azureblob/config.go); a path after the
 *   bucket is STORAGE_ROOT_DIR (historyserver/cmd/collector/main.go).
 * No credential is rendered: the pods reach the bucket with the cloud's workload identity
 * (GKE Workload Identity, EKS Pod Identity / IRSA, Azure Workload Identity) bound to their
 * service account, as the samples' service account "historyserver" is.  The collector's
 * resources are the operator's defaults for the collector it injects itself
 * (ray-operator/controllers/ray/common/pod.go, BuildCollectorContainer, same commit); that
 * injection (RayClusterSpec.historyServerOptions) sits behind the alpha feature gate
 * RayClusterHistoryServer, off by default, and an operator without the gate refuses the
 * object, so the sidecar is written out as the samples do.
 * The History Server's own routes (historyserver/docs/set_up_historyserver.md): GET /clusters
 * lists clusters and sessions; /enter_cluster/{namespace}/{kind}/{name}/{session} opens one
 * ("live" while the cluster runs). */
#include <regex.h>
#include <stdio.h>
#include <string.h>

#include "core/jsonx.h"
#include "providers/kuberay.h"

#define TMP_ROOT	"/tmp/ray"
#define EVENTS_PORT	"8084"

static bool
match(const char *re, const char *s)
{
	regex_t r;
	bool ok;

	if (regcomp(&r, re, REG_EXTENDED | REG_NOSUB) != 0)
		return false;
	ok = regexec(&r, s, 0, NULL, 0) == 0;
	regfree(&r);
	return ok;
}

/* Splits storage into backend, bucket (or container), root dir and (Azure) account URL. */
static bool
split(const char *storage, char *backend, char *bucket, char *root, char *account)
{
	const char *rest, *slash;
	size_t n;

	backend[0] = bucket[0] = root[0] = account[0] = '\0';
	if (strncmp(storage, "gs://", 5) == 0) {
		strcpy(backend, "gcs");
		rest = storage + 5;
	} else if (strncmp(storage, "s3://", 5) == 0) {
		strcpy(backend, "s3");
		rest = storage + 5;
	} else if (match("^https://[a-z0-9]{3,24}\\.blob\\.core\\.windows\\.net/", storage)) {
		strcpy(backend, "azureblob");
		rest = strchr(storage + 8, '/') + 1;
		snprintf(account, 128, "%.*s", (int)(rest - 1 - storage), storage);
	} else {
		return false;
	}
	slash = strchr(rest, '/');
	n = slash ? (size_t)(slash - rest) : strlen(rest);
	if (n == 0 || n > 63)
		return false;
	snprintf(bucket, 64, "%.*s", (int)n, rest);
	if (slash != NULL && slash[1] != '\0')
		snprintf(root, 256, "%s", slash + 1);
	if (strcmp(backend, "azureblob") == 0)	/* Azure container names */
		return match("^[a-z0-9](-?[a-z0-9])+$", bucket) && n >= 3;
	return match("^[a-z0-9][a-z0-9._-]*[a-z0-9]$", bucket) && n >= 3;
}

bool
kuberay_history_parse(json_t *in, const char *ptr, json_t **canon, struct err *e)
{
	static const char *const keys[] = { "storage", "collector_image", "url", "s3_region",
		NULL };
	const char *storage = NULL, *image = NULL, *url = NULL, *region = NULL;
	char backend[16], bucket[64], root[256], account[128], p[96];

	*canon = NULL;
	if (!json_is_object(in))
		return err_field(e, 400, "api.wrong_type", ptr, "history_server must be an object");
	if (!jsonx_only(in, keys, ptr, e) || !jsonx_str(in, "storage", ptr, true, &storage, e) ||
	    !jsonx_str(in, "collector_image", ptr, true, &image, e) ||
	    !jsonx_str(in, "url", ptr, false, &url, e) ||
	    !jsonx_str(in, "s3_region", ptr, false, &region, e))
		return false;
	snprintf(p, sizeof(p), "%s/storage", ptr);
	if (strlen(storage) > 300 || !match("^[A-Za-z0-9:/._-]+$", storage) ||
	    strstr(storage, "..") != NULL || !split(storage, backend, bucket, root, account))
		return err_field(e, 422, "env.bad_history_storage", p, "storage must be "
		    "gs://BUCKET[/PATH], s3://BUCKET[/PATH] or "
		    "https://ACCOUNT.blob.core.windows.net/CONTAINER[/PATH]");
	snprintf(p, sizeof(p), "%s/collector_image", ptr);
	if (strlen(image) > 255 || !match("^[a-z0-9][A-Za-z0-9._/:@-]*$", image))
		return err_field(e, 422, "env.bad_collector_image", p,
		    "collector_image must be an image reference such as "
		    "quay.io/kuberay/collector:v1.7.0");
	snprintf(p, sizeof(p), "%s/s3_region", ptr);
	if (strcmp(backend, "s3") == 0 && region == NULL)
		return err_field(e, 422, "env.missing_s3_region", p,
		    "s3_region is required with s3:// storage (the collector's S3_REGION)");
	if (region != NULL && (strcmp(backend, "s3") != 0 || !match("^[a-z]{2}(-[a-z]+)+-[0-9]$",
	    region)))
		return err_field(e, 422, "env.bad_s3_region", p,
		    "s3_region is an AWS region such as us-west-2, only with s3:// storage");
	snprintf(p, sizeof(p), "%s/url", ptr);
	if (url != NULL && (strlen(url) > 300 ||
	    !match("^https?://[A-Za-z0-9.-]+(:[0-9]+)?(/[A-Za-z0-9._~/-]*)?$", url)))
		return err_field(e, 422, "env.bad_history_url", p,
		    "url must be the History Server's http(s) address, without query");
	*canon = json_pack("{s:s, s:s, s:s*, s:s*}", "storage", storage, "collector_image", image,
	    "url", url, "s3_region", region);
	return true;
}

bool
kuberay_history_from_json(const json_t *canon, struct kuberay_history *h)
{
	memset(h, 0, sizeof(*h));
	if (!json_is_object(canon))
		return false;
	h->storage = json_string_value(json_object_get(canon, "storage"));
	h->collector_image = json_string_value(json_object_get(canon, "collector_image"));
	h->s3_region = json_string_value(json_object_get(canon, "s3_region"));
	return h->storage != NULL && h->collector_image != NULL;
}

static void
env_add(json_t *env, const char *name, const char *value)
{
	json_array_append_new(env, json_pack("{s:s, s:s}", "name", name, "value", value));
}

static void
env_field(json_t *env, const char *name, const char *path)
{
	json_array_append_new(env, json_pack("{s:s, s:{s:{s:s}}}", "name", name, "valueFrom",
	    "fieldRef", "fieldPath", path));
}

static json_t *
collector(const struct kuberay_history *h, const char *owner_kind, const char *owner_name,
    bool head)
{
	char backend[16], bucket[64], root[256], account[128];
	json_t *env = json_array();

	split(h->storage, backend, bucket, root, account);
	env_field(env, "RAY_CLUSTER_NAME", "metadata.labels['ray.io/cluster']");
	env_field(env, "RAY_CLUSTER_NAMESPACE", "metadata.namespace");
	env_field(env, "POD_IP", "status.podIP");
	env_add(env, "FQ_RAY_IP",
	    "$(RAY_CLUSTER_NAME)-head-svc.$(RAY_CLUSTER_NAMESPACE).svc.cluster.local");
	env_add(env, "RAY_TMP_ROOT", TMP_ROOT);
	env_add(env, "RAY_ROLE", head ? "Head" : "Worker");
	if (owner_kind != NULL && owner_name != NULL) {
		env_add(env, "OWNER_KIND", owner_kind);
		env_add(env, "OWNER_NAME", owner_name);
	}
	env_add(env, "STORAGE_BACKEND", backend);
	if (strcmp(backend, "gcs") == 0) {
		env_add(env, "GCS_BUCKET", bucket);
	} else if (strcmp(backend, "s3") == 0) {
		env_add(env, "S3_BUCKET", bucket);
		env_add(env, "S3_REGION", h->s3_region ? h->s3_region : "");
	} else {
		env_add(env, "AZURE_STORAGE_AUTH_MODE", "workload_identity");
		env_add(env, "AZURE_STORAGE_ACCOUNT_URL", account);
		env_add(env, "AZURE_STORAGE_CONTAINER", bucket);
	}
	if (root[0] != '\0')
		env_add(env, "STORAGE_ROOT_DIR", root);
	env_add(env, "EVENTS_PORT", EVENTS_PORT);
	return json_pack("{s:s, s:s, s:s, s:o, s:{s:{s:s, s:s}, s:{s:s, s:s}},"
	    " s:[{s:s, s:s}]}", "name", "collector", "image", h->collector_image,
	    "imagePullPolicy", "IfNotPresent", "env", env, "resources", "requests", "cpu", "50m",
	    "memory", "64Mi", "limits", "cpu", "200m", "memory", "256Mi", "volumeMounts", "name",
	    "historyserver", "mountPath", TMP_ROOT);
}

void
kuberay_history_apply(const struct kuberay_history *h, const char *owner_kind,
    const char *owner_name, bool head, json_t *spec)
{
	json_t *ctrs = json_object_get(spec, "containers"), *ray = json_array_get(ctrs, 0), *env,
	    *mounts, *vols;

	if (h == NULL || h->storage == NULL || ray == NULL)
		return;
	if (!json_is_array(env = json_object_get(ray, "env"))) {
		env = json_array();
		json_object_set_new(ray, "env", env);
	}
	env_add(env, "RAY_TMP_ROOT", TMP_ROOT);
	env_add(env, "RAY_enable_ray_event", "true");
	env_add(env, "RAY_enable_core_worker_ray_event_to_aggregator", "true");
	env_add(env, "RAY_DASHBOARD_AGGREGATOR_AGENT_EVENTS_EXPORT_ADDR",
	    "http://localhost:" EVENTS_PORT "/v1/events");
	env_add(env, "RAY_DASHBOARD_AGGREGATOR_AGENT_EXPOSABLE_EVENT_TYPES", "ALL");
	if (!json_is_array(mounts = json_object_get(ray, "volumeMounts"))) {
		mounts = json_array();
		json_object_set_new(ray, "volumeMounts", mounts);
	}
	json_array_append_new(mounts, json_pack("{s:s, s:s}", "name", "historyserver",
	    "mountPath", TMP_ROOT));
	json_array_append_new(ctrs, collector(h, owner_kind, owner_name, head));
	if (!json_is_array(vols = json_object_get(spec, "volumes"))) {
		vols = json_array();
		json_object_set_new(spec, "volumes", vols);
	}
	json_array_append_new(vols, json_pack("{s:s, s:{}}", "name", "historyserver",
	    "emptyDir"));
}

json_t *
kuberay_history_link(const json_t *canon, const char *ns, const char *kind, const char *name,
    bool live)
{
	const char *url = json_string_value(json_object_get(canon, "url")),
	    *storage = json_string_value(json_object_get(canon, "storage"));
	char lower[32], base[320], enter[800];
	size_t i, n;
	json_t *out;

	if (storage == NULL || ns == NULL || kind == NULL || name == NULL)
		return NULL;
	for (i = 0; kind[i] != '\0' && i + 1 < sizeof(lower); i++)
		lower[i] = (char)(kind[i] >= 'A' && kind[i] <= 'Z' ? kind[i] + 32 : kind[i]);
	lower[i] = '\0';
	out = json_pack("{s:s, s:s, s:s, s:s}", "storage", storage, "namespace", ns, "kind", lower,
	    "name", name);
	if (url == NULL)
		return out;
	n = strlen(url);
	snprintf(base, sizeof(base), "%.*s", (int)(n > 0 && url[n - 1] == '/' ? n - 1 : n), url);
	snprintf(enter, sizeof(enter), "%s/enter_cluster/%s/%s/%s/%s", base, ns, lower, name,
	    live ? "live" : "{session}");
	json_object_set_new(out, "sessions", json_sprintf("%s/clusters", base));
	json_object_set_new(out, live ? "live" : "session", json_string(enter));
	return out;
}
