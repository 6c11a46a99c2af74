/* test_tpu_render: the dispatcher renders TPU slice jobs of every built-in generation with
 * the gke-tpu-accelerator value GKE gives their nodes (from the catalog, not guessed from
 * the flavor's name), one slice per replica (multi-slice), and the TPU7x multi-slice
 * manifest is a golden (tests/fixtures/kuberay, checked by validate-manifest); a sub-slice
 * carved out of a GKE dynamic-slicing sub-block selects its Slice (golden too). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "providers/jobspec.h"
#include "providers/kuberay.h"
#include "queue/dispatch/dispatch.h"
#include "queue/member.h"
#include "regions/catalog.h"
#include "tests/harness/harness.h"

static json_t *render_parts(const char *flavor, const char *shape, int per_host, int slices,
    json_t *parts);

static json_t *
render(const char *flavor, const char *shape, int per_host, int slices)
{
	return render_parts(flavor, shape, per_host, slices, NULL);
}

static char *
spec_text(const char *flavor, const char *shape, int per_host, int slices)
{
	char text[1024];

	snprintf(text, sizeof(text), "{\"kind\":\"RayJob\",\"queue\":\"research\","
	    "\"name\":\"tpu-train\",\"ray_version\":\"2.52.0\",\"entrypoint\":\"python train.py\","
	    "\"head\":{\"cpu\":\"8\",\"memory\":\"32Gi\"},\"worker_groups\":[{\"name\":\"tpu\","
	    "\"replicas\":%d,\"cpu\":\"100\",\"memory\":\"400Gi\",\"accelerator\":"
	    "{\"flavor\":\"%s\",\"count\":%d}}],\"topology\":{\"type\":\"slice\","
	    "\"shape\":\"%s\"},\"constraints\":{\"providers\":[\"gke\"]}}", slices, flavor,
	    per_host, shape);
	return strdup(text);
}

/* parts: the placement's tpu_partitions (stolen), NULL for fixed slices */
static json_t *
render_parts(const char *flavor, const char *shape, int per_host, int slices, json_t *parts)
{
	struct member t;
	struct err e = { 0 };
	char *text = spec_text(flavor, shape, per_host, slices);
	json_t *spec, *pl, *m;

	memset(&t, 0, sizeof(t));
	snprintf(t.id, sizeof(t.id), "00000000-0000-4000-8000-0000000000c1");
	snprintf(t.name, sizeof(t.name), "gke-tpu");
	snprintf(t.provider, sizeof(t.provider), "gke");
	spec = json_loads(text, 0, NULL);
	free(text);
	assert_non_null(spec);
	pl = json_pack("{s:s, s:s, s:s, s:b}", "flavor", flavor, "pool", "tpu-pool-0",
	    "machine_type", "x", "spot", 0);
	if (parts != NULL) {
		json_object_set_new(pl, "tpu_partitions", parts);
		json_object_set_new(pl, "tpu_partition_shape", json_string(shape));
	}
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

/* GKE dynamic slicing (issue 26): a 2x2x2 slice carved out of a reserved TPU7x sub-block.
 * The pods select the Slice formed on its partition (cloud.google.com/gke-tpu-slice), the
 * accelerator and the shape, and carry cloud.google.com/gke-tpu-slice-topology, as GKE's
 * "Run workloads on dynamic slicing" workload does
 * (https://docs.cloud.google.com/kubernetes-engine/docs/how-to/create-dynamic-slices); the
 * Slice names the partition.  Two replicas: each its own Slice, required by name. */
#define SUB_JOB	"00000000-0000-4000-8000-00000000a7b1"
#define SUB_SLICE0	"fleet-slice-0000000000004000-1-0"
#define SUB_SLICE1	"fleet-slice-0000000000004000-1-1"

static void
test_golden_tpu7x_subslice(void **state)
{
	json_t *m = render_parts("tpu-v7x", "2x2x2", 4, 1, json_pack("[s]", "5c0e5a1d7a9b3f21"));
	json_t *wg = worker(m), *ann, *spec, *objs, *o, *ex;
	char *text = spec_text("tpu-v7x", "2x2x2", 4, 1);
	struct kuberay_input in;
	struct job_spec js;
	struct err e = { 0 };
	size_t i;

	(void)state;
	assert_string_equal(sel(wg, "cloud.google.com/gke-tpu-slice"), SUB_SLICE0);
	assert_string_equal(sel(wg, "cloud.google.com/gke-tpu-topology"), "2x2x2");
	assert_string_equal(sel(wg, "cloud.google.com/gke-tpu-accelerator"), "tpu7x");
	ann = json_object_get(json_object_get(json_object_get(wg, "template"), "metadata"),
	    "annotations");
	assert_string_equal(json_string_value(json_object_get(ann,
	    "cloud.google.com/gke-tpu-slice-topology")), "2x2x2");
	assert_int_equal(json_integer_value(json_object_get(wg, "numOfHosts")), 2);
	harness_golden_json("tests/fixtures/kuberay/rayjob-gke-tpu7x-subslice.json", m);
	json_decref(m);

	/* the Slice the attempt applies with its signal objects */
	spec = json_loads(text, 0, NULL);
	free(text);
	assert_true(jobspec_from_json(spec, &js, &e));
	memset(&in, 0, sizeof(in));
	in.spec = &js;
	in.job_id = SUB_JOB;
	in.attempt = 1;
	in.environment = "prod";
	in.queue = "research";
	in.placement.provider = KUBERAY_GKE;
	in.placement.tpu_partitions[0] = "5c0e5a1d7a9b3f21";
	in.placement.ntpu_partitions = 1;
	objs = kuberay_tpu_slice_objects(&in, &e);
	assert_non_null(objs);
	assert_int_equal(json_array_size(objs), 1);
	o = json_array_get(objs, 0);
	assert_string_equal(harness_js(o, "apiVersion"), "accelerator.gke.io/v1beta1");
	assert_string_equal(harness_js(o, "kind"), "Slice");
	assert_string_equal(harness_js(o, "metadata.name"), SUB_SLICE0);
	assert_null(json_object_get(json_object_get(o, "metadata"), "namespace"));
	assert_true(strlen(SUB_SLICE0) <= 49);	/* the Slice reference's limit */
	assert_string_equal(harness_js(o, "spec.type"), "tpu7x");
	assert_string_equal(harness_js(o, "spec.topology"), "2x2x2");
	assert_string_equal(harness_js(o, "spec.partitionIds.0"), "5c0e5a1d7a9b3f21");
	assert_int_equal(json_array_size(harness_jp(o, "spec.partitionIds")), 1);
	json_decref(objs);
	/* fixed slices: no Slice */
	in.placement.ntpu_partitions = 0;
	objs = kuberay_tpu_slice_objects(&in, &e);
	assert_int_equal(json_array_size(objs), 0);
	json_decref(objs);
	jobspec_cleanup(&js);
	json_decref(spec);

	/* two replicas: two Slices, the pods require one of them */
	m = render_parts("tpu-v7x", "2x2x2", 4, 2, json_pack("[s, s]", "p0", "p1"));
	wg = worker(m);
	assert_null(sel(wg, "cloud.google.com/gke-tpu-slice"));
	ex = harness_jp(wg, "template.spec.affinity.nodeAffinity."
	    "requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms.0.matchExpressions");
	assert_non_null(ex);
	for (i = 0; i < json_array_size(ex); i++)
		if (strcmp(harness_js(json_array_get(ex, i), "key"),
		    "cloud.google.com/gke-tpu-slice") == 0)
			break;
	assert_true(i < json_array_size(ex));
	assert_string_equal(harness_js(json_array_get(ex, i), "values.0"), SUB_SLICE0);
	assert_string_equal(harness_js(json_array_get(ex, i), "values.1"), SUB_SLICE1);
	json_decref(m);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_generations),
		cmocka_unit_test(test_golden_tpu7x),
		cmocka_unit_test(test_golden_tpu7x_subslice),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
