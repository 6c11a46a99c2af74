/* test_catalog: regions, flavors, machine types, price overrides and TPU slice shapes. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "regions/catalog.h"

static bool
array_has(json_t *a, const char *s)
{
	size_t i;
	json_t *v;

	json_array_foreach(a, i, v)
		if (strcmp(json_string_value(v), s) == 0)
			return true;
	return false;
}

static void
test_providers(void **state)
{
	(void)state;
	assert_true(catalog_provider_valid("gke"));
	assert_true(catalog_provider_valid("aks"));
	assert_true(catalog_provider_valid("hyperpod"));
	assert_false(catalog_provider_valid("eks"));
	assert_false(catalog_provider_valid("GKE"));
	assert_false(catalog_provider_valid(""));
	assert_false(catalog_provider_valid(NULL));
}

static const struct {
	const char *provider, *region;
	bool valid;
} region_cases[] = {
	{ "gke", "us-central1", true },
	{ "gke", "europe-west4", true },
	{ "gke", "asia-southeast1", true },
	{ "aks", "eastus", true },
	{ "aks", "swedencentral", true },
	{ "hyperpod", "us-east-1", true },
	{ "hyperpod", "ap-northeast-1", true },
	{ "gke", "us-east-1", false },		/* AWS name under GCP */
	{ "aks", "us-central1", false },
	{ "hyperpod", "eastus", false },
	{ "hyperpod", "us-east-1a", false },	/* a zone is not a region */
	{ "gke", "US-CENTRAL1", false },
	{ "gke", "", false },
	{ "nope", "us-central1", false },
};

static void
test_regions(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(region_cases) / sizeof(region_cases[0]); i++) {
		bool got = catalog_region_valid(region_cases[i].provider,
		    region_cases[i].region);
		if (got != region_cases[i].valid)
			fail_msg("case %zu: %s/%s", i, region_cases[i].provider,
			    region_cases[i].region);
	}
	assert_false(catalog_region_valid("gke", NULL));
}

static void
test_regions_list(void **state)
{
	json_t *gke = catalog_regions_list("gke"), *aks = catalog_regions_list("aks");
	json_t *hp = catalog_regions_list("hyperpod");

	(void)state;
	assert_non_null(gke);
	assert_true(json_array_size(gke) >= 11);
	assert_true(array_has(gke, "us-east5"));
	assert_false(array_has(gke, "eastus"));
	assert_true(array_has(aks, "westeurope"));
	assert_true(array_has(hp, "eu-central-1"));
	assert_null(catalog_regions_list("eks"));
	json_decref(gke);
	json_decref(aks);
	json_decref(hp);
}

static void
test_region_check_names_valid(void **state)
{
	struct err e = { 0 };

	(void)state;
	assert_true(catalog_region_check("aks", "eastus2", "/region", &e));
	assert_false(catalog_region_check("aks", "us-east-1", "/region", &e));
	assert_int_equal(e.status, 400);
	assert_string_equal(e.code, "catalog.unknown_region");
	assert_string_equal(e.pointer, "/region");
	assert_non_null(strstr(e.detail, "eastus, eastus2"));
	assert_non_null(strstr(e.detail, "japaneast"));
	assert_null(strstr(e.detail, "us-central1"));
	assert_false(catalog_region_check("eks", "us-east-1", "/region", &e));
	assert_string_equal(e.code, "catalog.unknown_provider");
	assert_string_equal(e.pointer, "/provider");
	assert_non_null(strstr(e.detail, "hyperpod"));
}

static void
test_region_offers(void **state)
{
	json_t *fl;

	(void)state;
	assert_true(catalog_region_offers("gke", "us-central1", "tpu-v5p"));
	assert_true(catalog_region_offers("gke", "europe-west4", "tpu-v5p"));
	assert_false(catalog_region_offers("gke", "us-east1", "tpu-v5p"));
	assert_false(catalog_region_offers("aks", "eastus", "tpu-v5p"));
	assert_true(catalog_region_offers("hyperpod", "us-east-1", "nvidia-a10g"));
	assert_false(catalog_region_offers("aks", "eastus", "nvidia-a10g"));
	assert_false(catalog_region_offers("gke", "us-central1", "nvidia-h200"));
	fl = catalog_region_flavors("gke", "us-east1");
	assert_int_equal(json_array_size(fl), 2);
	assert_true(array_has(fl, "nvidia-l4"));
	json_decref(fl);
	assert_null(catalog_region_flavors("gke", "mars-1"));
}

/* Every region's offer is backed by at least one machine type of that provider. */
static void
test_offers_backed_by_machines(void **state)
{
	const char *provs[] = { "gke", "aks", "hyperpod" };

	(void)state;
	for (size_t p = 0; p < 3; p++) {
		json_t *regs = catalog_regions_list(provs[p]), *r;
		size_t i;

		json_array_foreach(regs, i, r) {
			json_t *fl = catalog_region_flavors(provs[p], json_string_value(r)), *f;
			size_t j;

			assert_true(json_array_size(fl) > 0);
			json_array_foreach(fl, j, f) {
				bool found = false;

				for (size_t m = 0; m < catalog_machines_count(); m++) {
					struct catalog_machine cm;

					catalog_machine_at(m, &cm);
					if (strcmp(cm.provider, provs[p]) == 0 &&
					    strcmp(cm.flavor, json_string_value(f)) == 0)
						found = true;
				}
				if (!found)
					fail_msg("%s %s offers %s with no machine type",
					    provs[p], json_string_value(r),
					    json_string_value(f));
			}
			json_decref(fl);
		}
		json_decref(regs);
	}
}

static void
test_flavors(void **state)
{
	json_t *l = catalog_flavors_list();
	struct err e = { 0 };
	const char *want[] = { "nvidia-h100-80gb", "nvidia-a100-80gb", "nvidia-a100-40gb",
		"nvidia-l4", "nvidia-a10g", "tpu-v5p" };

	(void)state;
	for (size_t i = 0; i < 6; i++) {
		assert_true(catalog_flavor_valid(want[i]));
		assert_true(array_has(l, want[i]));
	}
	json_decref(l);
	assert_false(catalog_flavor_valid("h100"));
	assert_false(catalog_flavor_valid(NULL));
	assert_string_equal(catalog_flavor_get("tpu-v5p")->kind, "tpu");
	assert_string_equal(catalog_flavor_get("nvidia-l4")->k8s_resource, "nvidia.com/gpu");
	assert_false(catalog_flavor_check("nvidia-h200", "/flavor", &e));
	assert_int_equal(e.status, 400);
	assert_string_equal(e.code, "catalog.unknown_flavor");
	assert_non_null(strstr(e.detail, "nvidia-h100-80gb"));
	assert_non_null(strstr(e.detail, "tpu-v5p"));
}

/* issue 26: the current generations ship, with their provider machine types and labels */
static void
test_new_generations(void **state)
{
	static const struct { const char *provider, *type, *flavor, *label; int per, rack; } c[] = {
		{ "gke", "a4-highgpu-8g", "nvidia-b200", "nvidia-b200", 8, 0 },
		{ "gke", "a4x-highgpu-4g", "nvidia-gb200", "nvidia-gb200", 4, 18 },
		{ "gke", "a3-ultragpu-8g", "nvidia-h200-141gb", "nvidia-h200-141gb", 8, 0 },
		{ "gke", "ct6e-standard-4t", "tpu-v6e", "tpu-v6e-slice", 4, 0 },
		{ "hyperpod", "ml.p5en.48xlarge", "nvidia-h200-141gb", "ml.p5en.48xlarge", 8, 0 },
		{ "hyperpod", "ml.p6-b200.48xlarge", "nvidia-b200", "ml.p6-b200.48xlarge", 8, 0 },
		{ "hyperpod", "ml.p6e-gb200.36xlarge", "nvidia-gb200", "ml.p6e-gb200.36xlarge", 4,
		  18 },
		{ "aks", "Standard_ND128isr_NDR_GB200_v6", "nvidia-gb200",
		  "Standard_ND128isr_NDR_GB200_v6", 4, 18 },
		{ "aks", "Standard_ND96isr_H200_v5", "nvidia-h200-141gb", "Standard_ND96isr_H200_v5",
		  8, 0 },
	};
	struct catalog_machine m;
	struct err e = { 0 };

	(void)state;
	for (size_t i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
		assert_true(catalog_machine_lookup(c[i].provider, c[i].type, &m, &e));
		assert_string_equal(m.flavor, c[i].flavor);
		assert_int_equal(m.accel_per_node, c[i].per);
		assert_string_equal(m.label_value, c[i].label);
		assert_int_equal(catalog_flavor_get(c[i].flavor)->rack_size, c[i].rack);
	}
	assert_true(catalog_flavor_valid("nvidia-gb300"));
}

/* The overlay: an added flavor and its machine type; an override hides the built-in's
 * machine types; clearing restores the shipped catalog. */
static void
test_overlay(void **state)
{
	json_t *rows = json_pack("{s:{s:s, s:i, s:s, s:i, s:[{s:s, s:s, s:i}]},"
	    " s:{s:s, s:i, s:s, s:i, s:[{s:s, s:s, s:i}]}}",
	    "nvidia-b300", "kind", "gpu", "memory_gib", 288, "k8s_resource", "nvidia.com/gpu",
	    "rack_size", 0, "machine_types", "provider", "hyperpod", "machine_type",
	    "ml.p6-b300.48xlarge", "accelerators_per_node", 8,
	    "nvidia-b200", "kind", "gpu", "memory_gib", 180, "k8s_resource", "nvidia.com/gpu",
	    "rack_size", 0, "machine_types", "provider", "gke", "machine_type", "a4-highgpu-8g",
	    "accelerators_per_node", 8);
	struct catalog_machine m;
	struct err e = { 0 };
	const struct catalog_flavor *f;
	json_t *l;

	(void)state;
	assert_false(catalog_flavor_valid("nvidia-b300"));
	assert_false(catalog_machine_lookup("hyperpod", "ml.p6-b300.48xlarge", &m, &e));
	catalog_overlay_set(rows, 7);
	assert_int_equal(catalog_overlay_gen(), 7);
	f = catalog_flavor_get("nvidia-b300");
	assert_non_null(f);
	assert_int_equal(f->memory_gib, 288);
	assert_true(catalog_flavor_check("nvidia-b300", "/f", &e));
	l = catalog_flavors_list();
	assert_true(array_has(l, "nvidia-b300"));
	json_decref(l);
	assert_true(catalog_machine_lookup("hyperpod", "ml.p6-b300.48xlarge", &m, &e));
	assert_string_equal(m.flavor, "nvidia-b300");
	/* the override keeps a4-highgpu-8g only: the HyperPod B200 is no machine of it now */
	assert_true(catalog_machine_lookup("gke", "a4-highgpu-8g", &m, &e));
	assert_false(catalog_machine_lookup("hyperpod", "ml.p6-b200.48xlarge", &m, &e));
	/* a newer set replaces it; the old pointer f stays readable until the clear */
	catalog_overlay_set(json_object(), 8);
	assert_int_equal(f->memory_gib, 288);
	assert_false(catalog_flavor_valid("nvidia-b300"));
	assert_true(catalog_machine_lookup("hyperpod", "ml.p6-b200.48xlarge", &m, &e));
	catalog_overlay_clear();
	assert_int_equal(catalog_overlay_gen(), 0);
}

/* TPU v6e: the published 2-D shapes, host counts of 4-chip hosts above one host. */
static void
test_v6e_slices(void **state)
{
	struct catalog_slice sl;
	struct err e = { 0 };

	(void)state;
	assert_true(catalog_slice_parse("tpu-v6e", "2x4", "/t", &sl, &e));
	assert_int_equal(sl.chips, 8);
	assert_int_equal(sl.hosts, 1);
	assert_true(catalog_slice_parse("tpu-v6e", "16x16", "/t", &sl, &e));
	assert_int_equal(sl.chips, 256);
	assert_int_equal(sl.hosts, 64);
	assert_int_equal(sl.dims[2], 1);
	assert_false(catalog_slice_parse("tpu-v6e", "2x2x1", "/t", &sl, &e));
	assert_string_equal(e.code, "catalog.bad_slice");
	assert_false(catalog_slice_parse("tpu-v6e", "32x32", "/t", &sl, &e));
	assert_false(catalog_slice_parse("tpu-v6e", "4x2", "/t", &sl, &e));
}

/* TPU v5e and Ironwood TPU7x ship with their GKE machine types, node labels and shapes */
static void
test_tpu_generations(void **state)
{
	static const struct { const char *type, *flavor, *label; int per; } m[] = {
		{ "ct5lp-hightpu-1t", "tpu-v5e", "tpu-v5-lite-podslice", 1 },
		{ "ct5lp-hightpu-4t", "tpu-v5e", "tpu-v5-lite-podslice", 4 },
		{ "ct5lp-hightpu-8t", "tpu-v5e", "tpu-v5-lite-podslice", 8 },
		{ "ct6e-standard-1t", "tpu-v6e", "tpu-v6e-slice", 1 },
		{ "ct5p-hightpu-4t", "tpu-v5p", "tpu-v5p-slice", 4 },
		{ "tpu7x-standard-4t", "tpu-v7x", "tpu7x", 4 },
	};
	static const struct { const char *flavor, *topo; int chips, hosts; } ok[] = {
		{ "tpu-v5e", "1x1", 1, 1 }, { "tpu-v5e", "2x4", 8, 1 },
		{ "tpu-v5e", "16x16", 256, 64 }, { "tpu-v7x", "2x2x1", 4, 1 },
		{ "tpu-v7x", "2x4x4", 32, 8 }, { "tpu-v7x", "4x4x4", 64, 16 },
		{ "tpu-v7x", "8x16x16", 2048, 512 }, { "tpu-v7x", "16x24x24", 9216, 2304 },
		{ "tpu-v5p", "16x20x28", 8960, 2240 },
	};
	static const struct { const char *flavor, *topo; } bad[] = {
		{ "tpu-v5e", "2x2x1" }, { "tpu-v5e", "32x16" }, { "tpu-v5e", "4x2" },
		{ "tpu-v7x", "4x4" }, { "tpu-v7x", "4x4x6" }, { "tpu-v7x", "24x24x24" },
		{ "tpu-v7x", "8x4x4" }, { "tpu-v7x", "1x1x1" }, { "tpu-v5p", "16x24x24" },
	};
	struct catalog_machine cm;
	struct catalog_slice sl;
	struct err e = { 0 };

	(void)state;
	for (size_t i = 0; i < sizeof(m) / sizeof(m[0]); i++) {
		assert_true(catalog_machine_lookup("gke", m[i].type, &cm, &e));
		assert_string_equal(cm.flavor, m[i].flavor);
		assert_int_equal(cm.accel_per_node, m[i].per);
		assert_string_equal(cm.label_key, "cloud.google.com/gke-tpu-accelerator");
		assert_string_equal(cm.label_value, m[i].label);
		assert_string_equal(catalog_tpu_accelerator(m[i].flavor), m[i].label);
		assert_string_equal(catalog_flavor_get(m[i].flavor)->kind, "tpu");
	}
	assert_int_equal(catalog_flavor_get("tpu-v7x")->memory_gib, 192);
	assert_null(catalog_tpu_accelerator("nvidia-h100-80gb"));
	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		if (!catalog_slice_parse(ok[i].flavor, ok[i].topo, "/t", &sl, &e))
			fail_msg("%s %s refused: %s", ok[i].flavor, ok[i].topo, e.msg);
		assert_int_equal(sl.chips, ok[i].chips);
		assert_int_equal(sl.hosts, ok[i].hosts);
	}
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		memset(&e, 0, sizeof(e));
		if (catalog_slice_parse(bad[i].flavor, bad[i].topo, "/t", &sl, &e))
			fail_msg("%s %s accepted", bad[i].flavor, bad[i].topo);
		assert_string_equal(e.code, "catalog.bad_slice");
		assert_string_equal(e.pointer, "/t");
	}
}

static const struct {
	const char *provider, *type, *flavor;
	int per_node;
} machine_cases[] = {
	{ "gke", "a3-highgpu-8g", "nvidia-h100-80gb", 8 },
	{ "gke", "a3-megagpu-8g", "nvidia-h100-80gb", 8 },
	{ "gke", "a2-ultragpu-8g", "nvidia-a100-80gb", 8 },
	{ "gke", "a2-highgpu-8g", "nvidia-a100-40gb", 8 },
	{ "gke", "g2-standard-48", "nvidia-l4", 4 },
	{ "gke", "ct5p-hightpu-4t", "tpu-v5p", 4 },
	{ "aks", "Standard_ND96isr_H100_v5", "nvidia-h100-80gb", 8 },
	{ "aks", "Standard_ND96amsr_A100_v4", "nvidia-a100-80gb", 8 },
	{ "aks", "Standard_NC96ads_A100_v4", "nvidia-a100-80gb", 4 },
	{ "hyperpod", "ml.p5.48xlarge", "nvidia-h100-80gb", 8 },
	{ "hyperpod", "ml.p4de.24xlarge", "nvidia-a100-80gb", 8 },
	{ "hyperpod", "ml.p4d.24xlarge", "nvidia-a100-40gb", 8 },
	{ "hyperpod", "ml.g6.48xlarge", "nvidia-l4", 8 },
	{ "hyperpod", "ml.g5.48xlarge", "nvidia-a10g", 8 },
};

static void
test_machines(void **state)
{
	struct catalog_machine m;
	struct err e = { 0 };

	(void)state;
	for (size_t i = 0; i < sizeof(machine_cases) / sizeof(machine_cases[0]); i++) {
		if (!catalog_machine_lookup(machine_cases[i].provider, machine_cases[i].type,
		    &m, &e))
			fail_msg("lookup %s", machine_cases[i].type);
		assert_string_equal(m.flavor, machine_cases[i].flavor);
		assert_int_equal(m.accel_per_node, machine_cases[i].per_node);
		assert_true(m.vcpus > 0 && m.memory_gib > 0 && m.on_demand_hour > 0);
		assert_true(m.spot_hour < m.on_demand_hour);
	}
	/* a machine type is looked up under its own provider only */
	assert_false(catalog_machine_lookup("aks", "a3-highgpu-8g", &m, &e));
	assert_int_equal(e.status, 404);
	assert_string_equal(e.code, "catalog.unknown_machine_type");
	assert_false(catalog_machine_lookup("gke", "n2-standard-8", &m, &e));
	for (size_t i = 0; i < catalog_machines_count(); i++) {
		catalog_machine_at(i, &m);
		assert_true(catalog_flavor_valid(m.flavor));
		assert_true(catalog_provider_valid(m.provider));
	}
}

static char *
write_tmp(const char *text)
{
	char *path = strdup("/tmp/fleet-prices-XXXXXX");
	int fd = mkstemp(path);

	assert_true(fd >= 0);
	assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
	return path;
}

static void
test_price_override(void **state)
{
	struct catalog_machine m, before;
	struct err e = { 0 };
	char *path;

	(void)state;
	catalog_reset_prices();
	assert_true(catalog_machine_lookup("gke", "a3-highgpu-8g", &before, &e));
	path = write_tmp("{\"gke\": {\"a3-highgpu-8g\": {\"on_demand\": 50.5, \"spot\": 12}},"
	    " \"hyperpod\": {\"ml.p5.48xlarge\": {\"spot\": 30}}}");
	assert_true(catalog_load_prices(path, &e));
	unlink(path);
	free(path);
	assert_true(catalog_machine_lookup("gke", "a3-highgpu-8g", &m, &e));
	assert_true(m.on_demand_hour == 50.5 && m.spot_hour == 12);
	assert_true(catalog_machine_lookup("hyperpod", "ml.p5.48xlarge", &m, &e));
	assert_true(m.spot_hour == 30 && m.on_demand_hour > 30);
	assert_true(catalog_machine_lookup("gke", "a3-megagpu-8g", &m, &e));
	assert_true(m.on_demand_hour > 0);	/* untouched entry keeps its price */
	catalog_reset_prices();
	assert_true(catalog_machine_lookup("gke", "a3-highgpu-8g", &m, &e));
	assert_true(m.on_demand_hour == before.on_demand_hour);
}

static const struct {
	const char *text, *pointer;
} bad_prices[] = {
	{ "{\"gke\": {\"a3-highgpu-8g\": {\"on_demand\": -1}}}", "/gke/a3-highgpu-8g/on_demand" },
	{ "{\"gke\": {\"a3-highgpu-8g\": {\"on_demand\": \"9\"}}}", "/gke/a3-highgpu-8g/on_demand" },
	{ "{\"gke\": {\"ml.p5.48xlarge\": {\"spot\": 1}}}", "/gke/ml.p5.48xlarge" },
	{ "{\"eks\": {}}", "/eks" },
	{ "{\"gke\": []}", "/gke" },
	{ "{\"gke\": {\"a3-highgpu-8g\": {\"ondemand\": 1}}}", "/gke/a3-highgpu-8g/ondemand" },
	{ "{\"gke\": {\"a3-highgpu-8g\": 5}}", "/gke/a3-highgpu-8g" },
	{ "[1, 2]", "" },
	{ "{\"gke\": ", "" },
};

static void
test_price_bad_files(void **state)
{
	struct catalog_machine m0, m;
	struct err e = { 0 };

	(void)state;
	catalog_reset_prices();
	assert_true(catalog_machine_lookup("gke", "a3-highgpu-8g", &m0, &e));
	for (size_t i = 0; i < sizeof(bad_prices) / sizeof(bad_prices[0]); i++) {
		char text[512], *path;

		snprintf(text, sizeof(text), "%s", bad_prices[i].text);
		path = write_tmp(text);
		memset(&e, 0, sizeof(e));
		if (catalog_load_prices(path, &e))
			fail_msg("case %zu accepted", i);
		assert_int_equal(e.status, 400);
		assert_string_equal(e.code, "catalog.bad_prices");
		assert_string_equal(e.pointer, bad_prices[i].pointer);
		unlink(path);
		free(path);
	}
	{
		char *path = write_tmp("{\"aks\": {\"Standard_ND96isr_H100_v5\": {\"spot\": 1}},"
		    " \"gke\": {\"a3-highgpu-8g\": {\"on_demand\": 1}, \"zz\": {}}}");

		assert_false(catalog_load_prices(path, &e));
		unlink(path);
		free(path);
		assert_true(catalog_machine_lookup("gke", "a3-highgpu-8g", &m, &e));
		assert_true(m.on_demand_hour == m0.on_demand_hour);
		assert_true(catalog_machine_lookup("aks", "Standard_ND96isr_H100_v5", &m, &e));
		assert_true(m.spot_hour > 1);
	}
	assert_false(catalog_load_prices("/nonexistent/prices.json", &e));
	assert_int_equal(e.status, 500);
	assert_string_equal(e.code, "catalog.price_file");
}

static const struct {
	const char *topo;
	int chips, hosts;	/* 0 = invalid */
} slice_cases[] = {
	{ "2x2x1", 4, 1 },
	{ "2x2x2", 8, 2 },
	{ "2x2x4", 16, 4 },
	{ "2x4x4", 32, 8 },
	{ "4x4x4", 64, 16 },
	{ "4x4x8", 128, 32 },
	{ "8x8x16", 1024, 256 },
	{ "16x16x24", 6144, 1536 },
	{ "16x20x28", 8960, 2240 },
	{ "16x24x28", 0, 0 },	/* larger than a pod */
	{ "2x2x3", 0, 0 },
	{ "1x1x1", 0, 0 },
	{ "4x2x2", 0, 0 },	/* not a published small shape */
	{ "8x4x4", 0, 0 },	/* not ascending */
	{ "4x4x6", 0, 0 },	/* not a multiple of 4 */
	{ "0x2x2", 0, 0 },
	{ "2x2", 0, 0 },
	{ "2x2x2x2", 0, 0 },
	{ "2x2x2 ", 0, 0 },
	{ "-2x2x2", 0, 0 },
	{ "2X2X2", 0, 0 },
	{ "99999x1x1", 0, 0 },
	{ "", 0, 0 },
};

static void
test_slices(void **state)
{
	struct catalog_slice s;
	struct err e = { 0 };

	(void)state;
	for (size_t i = 0; i < sizeof(slice_cases) / sizeof(slice_cases[0]); i++) {
		bool ok = catalog_slice_parse("tpu-v5p", slice_cases[i].topo, "/slice_topology",
		    &s, &e);

		if (ok != (slice_cases[i].chips > 0))
			fail_msg("case %s: got %d", slice_cases[i].topo, ok);
		if (!ok) {
			assert_string_equal(e.code, "catalog.bad_slice");
			assert_string_equal(e.pointer, "/slice_topology");
			continue;
		}
		assert_int_equal(s.chips, slice_cases[i].chips);
		assert_int_equal(s.hosts, slice_cases[i].hosts);
		assert_int_equal(s.chips_per_host, 4);
	}
	assert_false(catalog_slice_parse("nvidia-h100-80gb", "2x2x2", NULL, &s, &e));
	assert_string_equal(e.code, "catalog.bad_slice");
	assert_false(catalog_slice_parse("tpu-v5p", NULL, NULL, &s, &e));
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_providers),
		cmocka_unit_test(test_regions),
		cmocka_unit_test(test_regions_list),
		cmocka_unit_test(test_region_check_names_valid),
		cmocka_unit_test(test_region_offers),
		cmocka_unit_test(test_offers_backed_by_machines),
		cmocka_unit_test(test_flavors),
		cmocka_unit_test(test_new_generations),
		cmocka_unit_test(test_overlay),
		cmocka_unit_test(test_v6e_slices),
		cmocka_unit_test(test_tpu_generations),
		cmocka_unit_test(test_machines),
		cmocka_unit_test(test_price_override),
		cmocka_unit_test(test_price_bad_files),
		cmocka_unit_test(test_slices),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
