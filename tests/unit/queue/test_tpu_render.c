/* test_tpu_render: the dispatcher renders TPU slice jobs of every built-in generation with
 * the gke-tpu-accelerator value GKE gives their nodes (from the catalog, not guessed from
 * the flavor's name), one slice per replica (multi-slice), and the TPU7x multi-slice
 * manifest is a golden (tests/fixtures/kuberay, checked by validate-manifest). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "queue/dispatch/dispatch.h"
#include "queue/member.h"
#include "regions/catalog.h"
#include "tests/harness/harness.h"

static json_t *
render(const char *flavor, const char *shape, int per_host, int slices)
{
	struct member t;
	struct err e = { 0 };
	char text[1024];
	json_t *spec, *pl, *m;

	memset(&t, 0, sizeof(t));
	snprintf(t.id, sizeof(t.id), "00000000-0000-4000-8000-0000000000c1");
	snprintf(t.name, sizeof(t.name), "gke-tpu");
	snprintf(t.provider, sizeof(t.provider), "gke");
	snprintf(text, sizeof(text), "{\"kind\":\"RayJob\",\"queue\":\"research\","
	    "\"name\":\"tpu-train\",\"ray_version\":\"2.52.0\",\"entrypoint\":\"python train.py\","
	    "\"head\":{\"cpu\":\"8\",\"memory\":\"32Gi\"},\"worker_groups\":[{\"name\":\"tpu\","
	    "\"replicas\":%d,\"cpu\":\"100\",\"memory\":\"400Gi\",\"accelerator\":"
	    "{\"flavor\":\"%s\",\"count\":%d}}],\"topology\":{\"type\":\"slice\","
	    "\"shape\":\"%s\"},\"constraints\":{\"providers\":[\"gke\"]}}", slices, flavor,
	    per_host, shape);
	spec = json_loads(text, 0, NULL);
	assert_non_null(spec);
	pl = json_pack("{s:s, s:s, s:s, s:b}", "flavor", flavor, "pool", "tpu-pool-0",
	    "machine_type", "x", "spot", 0);
	m = dispatch_render_for(&t, "00000000-0000-4000-8000-00000000a7b1", "prod", "research",
	    1, spec, pl, &e);
	if (m == NULL)
		fail_msg("%s %s refused: %s %s at %s", flavor, shape, e.code, e.msg, e.pointer);
	json_decref(spec);
	json_decref(pl);
	return m;
}

static json_t *
worker(json_t *m)
{
	return json_array_get(json_object_get(json_object_get(json_object_get(m, "spec"),
	    "rayClusterSpec"), "workerGroupSpecs"), 0);
}

static const char *
sel(json_t *wg, const char *key)
{
	return json_string_value(json_object_get(json_object_get(json_object_get(
	    json_object_get(wg, "template"), "spec"), "nodeSelector"), key));
}

/* every generation: the node label GKE sets, the topology, one pod per host of a slice */
static void
test_generations(void **state)
{
	static const struct {
		const char *flavor, *shape, *label;
		int per_host, slices, hosts;
	} c[] = {
		{ "tpu-v5p", "2x2x4", "tpu-v5p-slice", 4, 1, 4 },
		{ "tpu-v5e", "4x4", "tpu-v5-lite-podslice", 4, 2, 4 },
		{ "tpu-v5e", "2x4", "tpu-v5-lite-podslice", 8, 1, 1 },
		{ "tpu-v6e", "8x8", "tpu-v6e-slice", 4, 3, 16 },
		{ "tpu-v7x", "2x2x1", "tpu7x", 4, 1, 1 },
		{ "tpu-v7x", "4x4x4", "tpu7x", 4, 2, 16 },
	};

	(void)state;
	for (size_t i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
		json_t *m = render(c[i].flavor, c[i].shape, c[i].per_host, c[i].slices);
		json_t *wg = worker(m);

		assert_string_equal(catalog_tpu_accelerator(c[i].flavor), c[i].label);
		assert_string_equal(sel(wg, "cloud.google.com/gke-tpu-accelerator"), c[i].label);
		assert_string_equal(sel(wg, "cloud.google.com/gke-tpu-topology"), c[i].shape);
		/* absent numOfHosts is KubeRay's default, 1 */
		assert_int_equal(json_object_get(wg, "numOfHosts") == NULL ? 1 :
		    json_integer_value(json_object_get(wg, "numOfHosts")), c[i].hosts);
		assert_int_equal(json_integer_value(json_object_get(wg, "replicas")), c[i].slices);
		/* several slices: GKE gives each its own node pool, so no single pool is pinned */
		if (c[i].slices > 1)
			assert_null(sel(wg, "cloud.google.com/gke-nodepool"));
		json_decref(m);
	}
}

/* TPU7x, two whole 4x4x4 slices (multi-slice): the golden */
static void
test_golden_tpu7x(void **state)
{
	json_t *m = render("tpu-v7x", "4x4x4", 4, 2);

	(void)state;
	harness_golden_json("tests/fixtures/kuberay/rayjob-gke-tpu7x-multislice.json", m);
	json_decref(m);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_generations),
		cmocka_unit_test(test_golden_tpu7x),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
