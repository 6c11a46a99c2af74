/* test_jobspec_ray: autoscaler options and per-group rayStartParams: the allow-list and
 * value checks refuse with a JSON pointer, the canonical form round-trips, and the
 * renderer writes them (golden tests/fixtures/kuberay/raycluster-options.json and
 * rayservice-options.json, checked by validate-manifest with the rest). */
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

static const char *GROUP = "{\"name\":\"gpu\",\"min_replicas\":1,\"max_replicas\":4,"
    "\"cpu\":\"32\",\"memory\":\"256Gi\",\"accelerator\":{\"flavor\":\"nvidia-h100-80gb\","
    "\"count\":8}%s%s}";

static json_t *
spec(const char *kind, const char *head_params, const char *group_params,
     const char *autoscaler)
{
	char grp[1024], text[4096];
	json_error_t je;
	json_t *j;

	snprintf(grp, sizeof(grp), GROUP, group_params ? ",\"ray_start_params\":" : "",
	    group_params ? group_params : "");
	snprintf(text, sizeof(text), "{\"kind\":\"%s\",\"queue\":\"team-a\",\"name\":\"opts\","
	    "\"ray_version\":\"2.52.0\",%s\"head\":{\"cpu\":\"4\",\"memory\":\"16Gi\"%s%s},"
	    "\"worker_groups\":[%s]%s%s}", kind,
	    strcmp(kind, "RayService") == 0 ? "\"serve_config\":{\"applications\":[]}," : "",
	    head_params ? ",\"ray_start_params\":" : "", head_params ? head_params : "", grp,
	    autoscaler ? ",\"autoscaler\":" : "", autoscaler ? autoscaler : "");
	j = json_loads(text, 0, &je);
	if (j == NULL)
		fail_msg("bad test json: %s: %s", je.text, text);
	return j;
}

static void
test_refusals(void **state)
{
	static const struct {
		const char *head, *group, *autoscaler, *code, *pointer;
	} rows[] = {
		{ NULL, "{\"address\":\"x:6379\"}", NULL, "jobspec.invalid_ray_start_param",
		  "/worker_groups/0/ray_start_params/address" },
		{ NULL, "{\"block\":\"true\"}", NULL, "jobspec.invalid_ray_start_param",
		  "/worker_groups/0/ray_start_params/block" },
		{ "{\"dashboard-host\":\"1.2.3.4\"}", NULL, NULL, "jobspec.invalid_ray_start_param",
		  "/head/ray_start_params/dashboard-host" },
		{ NULL, "{\"include-dashboard\":\"true\"}", NULL,
		  "jobspec.invalid_ray_start_param",
		  "/worker_groups/0/ray_start_params/include-dashboard" },
		{ NULL, "{\"num-cpus\":\"-1\"}", NULL, "jobspec.invalid_ray_start_param",
		  "/worker_groups/0/ray_start_params/num-cpus" },
		{ NULL, "{\"num-gpus\":\"two\"}", NULL, "jobspec.invalid_ray_start_param",
		  "/worker_groups/0/ray_start_params/num-gpus" },
		{ NULL, "{\"object-store-memory\":1000}", NULL, "jobspec.invalid_ray_start_param",
		  "/worker_groups/0/ray_start_params/object-store-memory" },
		{ NULL, "{\"metrics-export-port\":70000}", NULL, "jobspec.invalid_ray_start_param",
		  "/worker_groups/0/ray_start_params/metrics-export-port" },
		{ NULL, "{\"resources\":\"[1]\"}", NULL, "jobspec.invalid_ray_start_param",
		  "/worker_groups/0/ray_start_params/resources" },
		{ NULL, "{\"resources\":\"{\\\"a\\\":-1}\"}", NULL,
		  "jobspec.invalid_ray_start_param",
		  "/worker_groups/0/ray_start_params/resources" },
		{ NULL, "{\"min-worker-port\":20000,\"max-worker-port\":10000}", NULL,
		  "jobspec.invalid_ray_start_param",
		  "/worker_groups/0/ray_start_params/min-worker-port" },
		{ NULL, "{\"log-style\":\"loud\"}", NULL, "jobspec.invalid_ray_start_param",
		  "/worker_groups/0/ray_start_params/log-style" },
		{ NULL, "{\"num-cpus\":1.5}", NULL, "api.wrong_type",
		  "/worker_groups/0/ray_start_params/num-cpus" },
		{ NULL, "[]", NULL, "api.wrong_type", "/worker_groups/0/ray_start_params" },
		{ NULL, "{\"a/b\":\"1\"}", NULL, "jobspec.invalid_ray_start_param",
		  "/worker_groups/0/ray_start_params" },
		{ NULL, NULL, "{\"idle_timeout_seconds\":-1}", "jobspec.invalid_value",
		  "/autoscaler/idle_timeout_seconds" },
		{ NULL, NULL, "{\"idle_timeout_seconds\":90000}", "jobspec.invalid_value",
		  "/autoscaler/idle_timeout_seconds" },
		{ NULL, NULL, "{\"upscaling_mode\":\"Fast\"}", "jobspec.invalid_value",
		  "/autoscaler/upscaling_mode" },
		{ NULL, NULL, "{\"idle\":1}", "api.unknown_field", "/autoscaler/idle" },
		{ NULL, NULL, "7", "api.wrong_type", "/autoscaler" },
	};

	(void)state;
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		struct job_spec s;
		struct err e = { 0 };
		json_t *j = spec("RayCluster", rows[i].head, rows[i].group, rows[i].autoscaler);

		if (jobspec_from_json(j, &s, &e))
			fail_msg("row %zu accepted", i);
		if (e.status != 400 || strcmp(e.code, rows[i].code) != 0 ||
		    strcmp(e.pointer, rows[i].pointer) != 0)
			fail_msg("row %zu: %d %s at %s (%s), want %s at %s", i, e.status, e.code,
			    e.pointer, e.msg, rows[i].code, rows[i].pointer);
		json_decref(j);
	}
}

static void
compare_golden(const char *name, json_t *m)
{
	char path[256];

	snprintf(path, sizeof(path), FIXTURES "/%s.json", name);
	harness_golden_json(path, m);
}

static json_t *
render(const struct job_spec *s)
{
	struct kuberay_input in;
	struct err e = { 0 };
	json_t *m;

	memset(&in, 0, sizeof(in));
	in.spec = s;
	in.job_id = "5f0c0999-1d2e-4f3a-9b7c-000000001eef";
	in.attempt = 1;
	in.environment = "prod";
	in.placement.provider = KUBERAY_GKE;
	in.placement.cluster = "gke-us-central1-prod";
	in.placement.pool = "a3-ondemand";
	in.placement.head_pool = "cpu-ondemand";
	in.placement.cpu_pool = "cpu-ondemand";
	in.placement.machine_type = "a3-highgpu-8g";
	m = kuberay_render(&in, &e);
	if (m == NULL)
		fail_msg("render: %s %s", e.code, e.msg);
	return m;
}

static json_t *
cluster_of(json_t *m)
{
	json_t *spec = json_object_get(m, "spec");

	return json_object_get(spec, "rayClusterConfig") != NULL ?
	    json_object_get(spec, "rayClusterConfig") : spec;
}

static void
test_render(void **state)
{
	static const char *const kinds[] = { "RayCluster", "RayService" };
	static const char *const names[] = { "raycluster-options", "rayservice-options" };

	(void)state;
	for (int k = 0; k < 2; k++) {
		struct job_spec s, s2;
		struct err e = { 0 };
		json_t *j = spec(kinds[k], "{\"num-cpus\":1,\"include-dashboard\":true}",
		    "{\"num-gpus\":\"8\",\"object-store-memory\":\"10737418240\","
		    "\"resources\":\"{\\\"h100\\\": 8}\",\"metrics-export-port\":8080}",
		    "{\"idle_timeout_seconds\":300,\"upscaling_mode\":\"Conservative\"}");
		json_t *canon, *canon2, *m, *c, *as, *rsp;

		if (!jobspec_from_json(j, &s, &e))
			fail_msg("%s refused: %s %s at %s", kinds[k], e.code, e.msg, e.pointer);
		/* canonical form round-trips, values spelled as strings */
		canon = jobspec_to_json(&s);
		assert_true(jobspec_from_json(canon, &s2, &e));
		canon2 = jobspec_to_json(&s2);
		assert_true(json_equal(canon, canon2));
		assert_string_equal(json_string_value(json_object_get(json_object_get(
		    json_object_get(canon, "head"), "ray_start_params"), "num-cpus")), "1");
		assert_int_equal(json_integer_value(json_object_get(json_object_get(canon,
		    "autoscaler"), "idle_timeout_seconds")), 300);
		m = render(&s);
		c = cluster_of(m);
		assert_true(json_is_true(json_object_get(c, "enableInTreeAutoscaling")));
		as = json_object_get(c, "autoscalerOptions");
		assert_int_equal(json_integer_value(json_object_get(as, "idleTimeoutSeconds")), 300);
		assert_string_equal(json_string_value(json_object_get(as, "upscalingMode")),
		    "Conservative");
		rsp = json_object_get(json_object_get(c, "headGroupSpec"), "rayStartParams");
		assert_string_equal(json_string_value(json_object_get(rsp, "num-cpus")), "1");
		assert_string_equal(json_string_value(json_object_get(rsp, "dashboard-host")),
		    "0.0.0.0");
		rsp = json_object_get(json_array_get(json_object_get(c, "workerGroupSpecs"), 0),
		    "rayStartParams");
		assert_int_equal(json_object_size(rsp), 4);
		assert_string_equal(json_string_value(json_object_get(rsp, "metrics-export-port")),
		    "8080");
		compare_golden(names[k], m);
		json_decref(m);
		json_decref(canon);
		json_decref(canon2);
		jobspec_cleanup(&s2);
		jobspec_cleanup(&s);
		json_decref(j);
	}
}

/* absent: the conservative defaults, rendered exactly as before */
static void
test_defaults(void **state)
{
	struct job_spec s;
	struct err e = { 0 };
	json_t *j = spec("RayCluster", NULL, NULL, NULL), *m, *c, *canon;

	(void)state;
	assert_true(jobspec_from_json(j, &s, &e));
	assert_int_equal(s.idle_timeout_seconds, 60);
	assert_string_equal(s.upscaling_mode, "Default");
	canon = jobspec_to_json(&s);
	assert_null(json_object_get(canon, "autoscaler"));
	m = render(&s);
	c = cluster_of(m);
	assert_int_equal(json_integer_value(json_object_get(json_object_get(c,
	    "autoscalerOptions"), "idleTimeoutSeconds")), 60);
	assert_int_equal(json_object_size(json_object_get(json_array_get(json_object_get(c,
	    "workerGroupSpecs"), 0), "rayStartParams")), 0);
	assert_int_equal(json_object_size(json_object_get(json_object_get(c, "headGroupSpec"),
	    "rayStartParams")), 2);
	json_decref(canon);
	json_decref(m);
	jobspec_cleanup(&s);
	json_decref(j);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_refusals),
		cmocka_unit_test(test_render),
		cmocka_unit_test(test_defaults),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
