/* test_kuberay_history: KubeRay's History Server collector for an environment that names
 * log storage (issue 24): the setting's refusals, the sidecar and the Ray container's event
 * export as KubeRay v1.7.0's samples write them, one golden per backend and kind
 * (tests/fixtures/kuberay/<kind>-<provider>-history.json, checked by validate-manifest with
 * the rest), and explain's History Server link. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "providers/jobspec.h"
#include "providers/kuberay.h"
#include "tests/harness/harness.h"

#define FIXTURES "tests/fixtures/kuberay"

static json_t *
parse_ok(const char *text)
{
	struct err e = { 0 };
	json_t *in = json_loads(text, 0, NULL), *canon = NULL;

	assert_non_null(in);
	if (!kuberay_history_parse(in, "/history_server", &canon, &e))
		fail_msg("refused %s: %s %s at %s", text, e.code, e.msg, e.pointer);
	json_decref(in);
	return canon;
}

static void
test_refusals(void **state)
{
	static const struct {
		const char *in, *code, *pointer;
		int status;
	} cases[] = {
		{ "{\"storage\":\"gs://b\",\"collector_image\":\"c:1\"}", "env.bad_history_storage",
		  "/history_server/storage", 422 },
		{ "{\"storage\":\"ftp://bucket/x\",\"collector_image\":\"c:1\"}",
		  "env.bad_history_storage", "/history_server/storage", 422 },
		{ "{\"storage\":\"gs://Bad_Bucket\",\"collector_image\":\"c:1\"}",
		  "env.bad_history_storage", "/history_server/storage", 422 },
		{ "{\"storage\":\"gs://ok-bucket/../x\",\"collector_image\":\"c:1\"}",
		  "env.bad_history_storage", "/history_server/storage", 422 },
		{ "{\"storage\":\"https://evil.example.com/c\",\"collector_image\":\"c:1\"}",
		  "env.bad_history_storage", "/history_server/storage", 422 },
		{ "{\"storage\":\"s3://ray-logs\",\"collector_image\":\"c:1\"}",
		  "env.missing_s3_region", "/history_server/s3_region", 422 },
		{ "{\"storage\":\"gs://ray-logs\",\"collector_image\":\"c:1\",\"s3_region\":"
		  "\"us-west-2\"}", "env.bad_s3_region", "/history_server/s3_region", 422 },
		{ "{\"storage\":\"gs://ray-logs\",\"collector_image\":\"x y\"}",
		  "env.bad_collector_image", "/history_server/collector_image", 422 },
		{ "{\"storage\":\"gs://ray-logs\",\"collector_image\":\"c:1\",\"url\":"
		  "\"javascript:alert(1)\"}", "env.bad_history_url", "/history_server/url", 422 },
		{ "{\"storage\":\"gs://ray-logs\"}", "api.missing_field",
		  "/history_server/collector_image", 400 },
		{ "{\"storage\":\"gs://ray-logs\",\"collector_image\":\"c:1\",\"token\":\"x\"}",
		  "api.unknown_field", "/history_server/token", 400 },
		{ "\"gs://ray-logs\"", "api.wrong_type", "/history_server", 400 },
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct err e = { 0 };
		json_t *in = json_loads(cases[i].in, JSON_DECODE_ANY, NULL), *canon = NULL;

		assert_non_null(in);
		if (kuberay_history_parse(in, "/history_server", &canon, &e))
			fail_msg("accepted %s", cases[i].in);
		if (e.status != cases[i].status || strcmp(e.code, cases[i].code) != 0 ||
		    strcmp(e.pointer, cases[i].pointer) != 0)
			fail_msg("%s: got %d %s at %s, want %d %s at %s", cases[i].in, e.status,
			    e.code, e.pointer, cases[i].status, cases[i].code, cases[i].pointer);
		assert_null(canon);
		json_decref(in);
	}
}

static json_t *
named(json_t *arr, const char *name)
{
	json_t *v;
	size_t i;

	json_array_foreach(arr, i, v)
		if (strcmp(json_string_value(json_object_get(v, "name")), name) == 0)
			return v;
	return NULL;
}

static const char *
env_of(json_t *ctr, const char *name)
{
	json_t *v = named(json_object_get(ctr, "env"), name);

	return v ? json_string_value(json_object_get(v, "value")) : NULL;
}

/* Every pod template of m (head first). */
static size_t
templates(json_t *m, const char *kind, json_t **out, size_t max)
{
	json_t *cs = json_object_get(m, "spec"), *g;
	size_t n = 0, i;

	if (strcmp(kind, "RayJob") == 0)
		cs = json_object_get(cs, "rayClusterSpec");
	else if (strcmp(kind, "RayService") == 0)
		cs = json_object_get(cs, "rayClusterConfig");
	out[n++] = json_object_get(json_object_get(json_object_get(cs, "headGroupSpec"),
	    "template"), "spec");
	json_array_foreach(json_object_get(cs, "workerGroupSpecs"), i, g)
		if (n < max)
			out[n++] = json_object_get(json_object_get(g, "template"), "spec");
	return n;
}

static json_t *
job(const char *kind)
{
	char text[2048];

	snprintf(text, sizeof(text), "{\"kind\":\"%s\",\"queue\":\"team-a\",\"name\":\"hist\","
	    "\"ray_version\":\"2.52.0\",%s\"head\":{\"cpu\":\"4\",\"memory\":\"16Gi\"},"
	    "\"worker_groups\":[{\"name\":\"gpu\",\"replicas\":2,\"cpu\":\"32\",\"memory\":"
	    "\"256Gi\",\"accelerator\":{\"flavor\":\"nvidia-h100-80gb\",\"count\":8}}]}", kind,
	    strcmp(kind, "RayJob") == 0 ? "\"entrypoint\":\"python train.py\"," :
	    strcmp(kind, "RayService") == 0 ? "\"serve_config\":{\"applications\":[{\"name\":"
	    "\"app\",\"import_path\":\"serve:app\"}]}," : "");
	return json_loads(text, 0, NULL);
}

/* The collector on every pod, with the storage's variables; the Ray container exports its
 * events to it and shares /tmp/ray; goldens per backend. */
static void
test_render(void **state)
{
	static const struct {
		const char *kind, *hist, *golden, *backend, *bucket_var, *bucket, *owner, *root;
		int provider;
	} cases[] = {
		{ "RayJob", "{\"storage\":\"gs://fleet-ray-logs/prod\",\"collector_image\":"
		  "\"quay.io/kuberay/collector:v1.7.0\",\"url\":\"https://ray-history.example.com\"}",
		  "rayjob-gke-history", "gcs", "GCS_BUCKET", "fleet-ray-logs", "rayjob", "prod", 0 },
		{ "RayService", "{\"storage\":\"https://fleetlogs.blob.core.windows.net/ray-history\","
		  "\"collector_image\":\"quay.io/kuberay/collector:v1.7.0\"}",
		  "rayservice-aks-history", "azureblob", "AZURE_STORAGE_CONTAINER", "ray-history",
		  "rayservice", NULL, 1 },
		{ "RayCluster", "{\"storage\":\"s3://fleet-ray-logs/hp/us-west-2\",\"collector_image\":"
		  "\"quay.io/kuberay/collector:v1.7.0\",\"s3_region\":\"us-west-2\"}",
		  "raycluster-hyperpod-history", "s3", "S3_BUCKET", "fleet-ray-logs", NULL,
		  "hp/us-west-2", 2 },
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct kuberay_history h;
		struct kuberay_input in;
		struct job_spec s;
		struct err e = { 0 };
		json_t *hs = parse_ok(cases[i].hist), *j = job(cases[i].kind), *m, *t[4], *col, *ray;
		size_t n;
		char path[256];

		if (!jobspec_from_json(j, &s, &e))
			fail_msg("spec refused: %s %s", e.code, e.msg);
		assert_true(kuberay_history_from_json(hs, &h));
		memset(&in, 0, sizeof(in));
		in.spec = &s;
		in.job_id = "5f0c2600-1d2e-4f3a-9b7c-000000002424";
		in.attempt = 1;
		in.environment = "prod";
		in.placement.provider = (enum kuberay_provider)cases[i].provider;
		in.placement.pool = "gpu";
		in.placement.cluster = "member-1";
		in.placement.machine_type = cases[i].provider == 0 ? "a3-highgpu-8g" :
		    cases[i].provider == 1 ? "Standard_ND96isr_H100_v5" : "ml.p5.48xlarge";
		in.history = &h;
		m = kuberay_render(&in, &e);
		if (m == NULL)
			fail_msg("render: %s %s", e.code, e.msg);
		n = templates(m, cases[i].kind, t, 4);
		assert_int_equal(n, 2);
		for (size_t k = 0; k < n; k++) {
			ray = json_array_get(json_object_get(t[k], "containers"), 0);
			col = named(json_object_get(t[k], "containers"), "collector");
			assert_non_null(col);
			assert_string_equal(json_string_value(json_object_get(col, "image")),
			    "quay.io/kuberay/collector:v1.7.0");
			assert_string_equal(env_of(col, "STORAGE_BACKEND"), cases[i].backend);
			assert_string_equal(env_of(col, cases[i].bucket_var), cases[i].bucket);
			assert_string_equal(env_of(col, "RAY_ROLE"), k == 0 ? "Head" : "Worker");
			assert_string_equal(env_of(col, "EVENTS_PORT"), "8084");
			assert_string_equal(env_of(col, "RAY_TMP_ROOT"), "/tmp/ray");
			if (cases[i].owner != NULL) {
				assert_string_equal(env_of(col, "OWNER_KIND"), cases[i].owner);
				assert_string_equal(env_of(col, "OWNER_NAME"), json_string_value(
				    json_object_get(json_object_get(m, "metadata"), "name")));
			} else {
				assert_null(env_of(col, "OWNER_KIND"));
			}
			if (cases[i].root != NULL)
				assert_string_equal(env_of(col, "STORAGE_ROOT_DIR"), cases[i].root);
			else
				assert_null(env_of(col, "STORAGE_ROOT_DIR"));
			assert_non_null(named(json_object_get(col, "env"), "RAY_CLUSTER_NAME"));
			assert_string_equal(env_of(ray, "RAY_enable_ray_event"), "true");
			assert_string_equal(env_of(ray, "RAY_DASHBOARD_AGGREGATOR_AGENT_EVENTS_EXPORT_ADDR"),
			    "http://localhost:8084/v1/events");
			assert_non_null(named(json_object_get(ray, "volumeMounts"), "historyserver"));
			assert_non_null(named(json_object_get(t[k], "volumes"), "historyserver"));
			/* fleetd's own stay */
			assert_non_null(named(json_object_get(ray, "env"), "FLEET_JOB_ID"));
			assert_non_null(named(json_object_get(t[k], "volumes"), "dshm"));
			/* no credential in the manifest */
			assert_null(env_of(col, "AWS_SECRET_ACCESS_KEY"));
			assert_null(env_of(col, "AZURE_STORAGE_CONNECTION_STRING"));
		}
		if (cases[i].provider == 1)
			assert_string_equal(env_of(named(json_object_get(t[0], "containers"),
			    "collector"), "AZURE_STORAGE_ACCOUNT_URL"),
			    "https://fleetlogs.blob.core.windows.net");
		snprintf(path, sizeof(path), FIXTURES "/%s.json", cases[i].golden);
		harness_golden_json(path, m);
		json_decref(m);
		jobspec_cleanup(&s);
		json_decref(j);
		json_decref(hs);
	}
}

/* Without a setting the manifest has no collector (the renderer's other goldens hold it). */
static void
test_none(void **state)
{
	struct kuberay_input in;
	struct job_spec s;
	struct err e = { 0 };
	json_t *j = job("RayJob"), *m, *t[4];

	(void)state;
	assert_true(jobspec_from_json(j, &s, &e));
	memset(&in, 0, sizeof(in));
	in.spec = &s;
	in.job_id = "5f0c2600-1d2e-4f3a-9b7c-000000002424";
	in.attempt = 1;
	in.environment = "prod";
	in.placement.pool = "gpu";
	m = kuberay_render(&in, &e);
	assert_non_null(m);
	templates(m, "RayJob", t, 4);
	assert_null(named(json_object_get(t[0], "containers"), "collector"));
	assert_null(named(json_object_get(t[1], "volumes"), "historyserver"));
	json_decref(m);
	jobspec_cleanup(&s);
	json_decref(j);
}

static void
test_link(void **state)
{
	json_t *hs = parse_ok("{\"storage\":\"gs://fleet-ray-logs\",\"collector_image\":\"c:1\","
	    "\"url\":\"https://ray-history.example.com/\"}"), *l;

	(void)state;
	l = kuberay_history_link(hs, "fleet-prod-team-a", "RayJob", "hist-1a2b-a1", true);
	assert_string_equal(json_string_value(json_object_get(l, "live")),
	    "https://ray-history.example.com/enter_cluster/fleet-prod-team-a/rayjob/hist-1a2b-a1/live");
	assert_string_equal(json_string_value(json_object_get(l, "sessions")),
	    "https://ray-history.example.com/clusters");
	json_decref(l);
	l = kuberay_history_link(hs, "ns", "RayService", "svc", false);
	assert_string_equal(json_string_value(json_object_get(l, "session")),
	    "https://ray-history.example.com/enter_cluster/ns/rayservice/svc/{session}");
	assert_null(json_object_get(l, "live"));
	json_decref(l);
	json_decref(hs);
	/* no url: where the logs are, no links */
	hs = parse_ok("{\"storage\":\"gs://fleet-ray-logs\",\"collector_image\":\"c:1\"}");
	l = kuberay_history_link(hs, "ns", "RayJob", "j", true);
	assert_string_equal(json_string_value(json_object_get(l, "storage")), "gs://fleet-ray-logs");
	assert_null(json_object_get(l, "live"));
	json_decref(l);
	json_decref(hs);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_refusals),
		cmocka_unit_test(test_render),
		cmocka_unit_test(test_none),
		cmocka_unit_test(test_link),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
