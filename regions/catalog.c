/* catalog: static region / flavor / machine-type tables. Honest, hand-kept, not live: the
 * offers and prices below are approximate public list values (USD, US regions) to be
 * overridden by an operator's price file; live quota and stock come from the providers. */
#include <ctype.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/jsonx.h"
#include "regions/catalog.h"

/* Flavor bits, in the order of the flavors table. */
enum {
	H100 = 1 << 0,	/* nvidia-h100-80gb */
	A100_80 = 1 << 1,
	A100_40 = 1 << 2,
	L4 = 1 << 3,
	A10G = 1 << 4,	/* AWS g5: the A10G variant */
	A10 = 1 << 5,	/* Azure NVadsA10 v5: the data-centre A10, not an A10G */
	V5P = 1 << 6,
};

static const struct catalog_flavor flavors[] = {
	{ "nvidia-h100-80gb", "gpu", 80, "nvidia.com/gpu" },
	{ "nvidia-a100-80gb", "gpu", 80, "nvidia.com/gpu" },
	{ "nvidia-a100-40gb", "gpu", 40, "nvidia.com/gpu" },
	{ "nvidia-l4", "gpu", 24, "nvidia.com/gpu" },
	{ "nvidia-a10g", "gpu", 24, "nvidia.com/gpu" },
	{ "nvidia-a10", "gpu", 24, "nvidia.com/gpu" },
	{ "tpu-v5p", "tpu", 95, "google.com/tpu" },
};
#define NFLAVORS (sizeof(flavors) / sizeof(flavors[0]))

struct region {
	const char	*provider;
	const char	*name;
	unsigned	 offers;	/* flavor bits */
};

/* The regions and providers: regions/catalog_regions.def, shared with the Terraform provider. */
static const struct region regions[] = {
#define CATALOG_REGION(provider, name, offers) { provider, name, offers },
#include "regions/catalog_regions.def"
};
#define NREGIONS (sizeof(regions) / sizeof(regions[0]))

static const char *const providers[] = {
#define CATALOG_PROVIDER(name) name,
#include "regions/catalog_regions.def"
};
#define NPROVIDERS (sizeof(providers) / sizeof(providers[0]))

/* Built-in prices: approximate on-demand list prices per node-hour in a US region, spot
 * about 30% of on-demand where the provider sells spot. HyperPod has no spot here (0):
 * an operator who buys it sets a spot price in the price file. */
static const struct catalog_machine machines[] = {
	{ "gke", "a3-highgpu-8g", "nvidia-h100-80gb", 8, 208, 1872, 88.25, 26.48 },
	{ "gke", "a3-megagpu-8g", "nvidia-h100-80gb", 8, 208, 1872, 92.00, 27.60 },
	{ "gke", "a2-ultragpu-8g", "nvidia-a100-80gb", 8, 96, 1360, 40.22, 12.07 },
	{ "gke", "a2-highgpu-8g", "nvidia-a100-40gb", 8, 96, 680, 29.39, 8.82 },
	{ "gke", "a2-highgpu-1g", "nvidia-a100-40gb", 1, 12, 85, 3.67, 1.10 },
	{ "gke", "g2-standard-48", "nvidia-l4", 4, 48, 192, 4.00, 1.20 },
	{ "gke", "g2-standard-8", "nvidia-l4", 1, 8, 32, 0.85, 0.26 },
	{ "gke", "ct5p-hightpu-4t", "tpu-v5p", 4, 208, 448, 16.80, 8.40 },
	{ "aks", "Standard_ND96isr_H100_v5", "nvidia-h100-80gb", 8, 96, 1900, 98.32, 29.50 },
	{ "aks", "Standard_ND96amsr_A100_v4", "nvidia-a100-80gb", 8, 96, 1900, 32.77, 9.83 },
	{ "aks", "Standard_ND96asr_v4", "nvidia-a100-40gb", 8, 96, 900, 27.20, 8.16 },
	{ "aks", "Standard_NC96ads_A100_v4", "nvidia-a100-80gb", 4, 96, 880, 14.69, 4.41 },
	{ "aks", "Standard_NC24ads_A100_v4", "nvidia-a100-80gb", 1, 24, 220, 3.67, 1.10 },
	{ "aks", "Standard_NV36ads_A10_v5", "nvidia-a10", 1, 36, 440, 3.20, 0.96 },
	{ "hyperpod", "ml.p5.48xlarge", "nvidia-h100-80gb", 8, 192, 2048, 98.32, 0 },
	{ "hyperpod", "ml.p4de.24xlarge", "nvidia-a100-80gb", 8, 96, 1152, 47.36, 0 },
	{ "hyperpod", "ml.p4d.24xlarge", "nvidia-a100-40gb", 8, 96, 1152, 37.69, 0 },
	{ "hyperpod", "ml.g6.48xlarge", "nvidia-l4", 8, 192, 768, 16.24, 0 },
	{ "hyperpod", "ml.g5.48xlarge", "nvidia-a10g", 8, 192, 768, 20.36, 0 },
};
#define NMACHINES (sizeof(machines) / sizeof(machines[0]))

/* Current prices, parallel to machines[]; [0] on-demand, [1] spot. */
static pthread_mutex_t price_mu = PTHREAD_MUTEX_INITIALIZER;
static double prices[NMACHINES][2];
static bool prices_set;

static const struct region *
region_find(const char *provider, const char *name)
{
	if (provider == NULL || name == NULL)
		return NULL;
	for (size_t i = 0; i < NREGIONS; i++)
		if (strcmp(regions[i].provider, provider) == 0 &&
		    strcmp(regions[i].name, name) == 0)
			return &regions[i];
	return NULL;
}

static int
flavor_index(const char *flavor)
{
	if (flavor == NULL)
		return -1;
	for (size_t i = 0; i < NFLAVORS; i++)
		if (strcmp(flavors[i].name, flavor) == 0)
			return (int)i;
	return -1;
}

static int
machine_index(const char *provider, const char *type)
{
	if (provider == NULL || type == NULL)
		return -1;
	for (size_t i = 0; i < NMACHINES; i++)
		if (strcmp(machines[i].provider, provider) == 0 &&
		    strcmp(machines[i].machine_type, type) == 0)
			return (int)i;
	return -1;
}

/* Joins a JSON array of strings into buf as "a, b, c". */
static void
join(json_t *arr, char *buf, size_t len)
{
	size_t i, off = 0;
	json_t *v;

	buf[0] = '\0';
	json_array_foreach(arr, i, v) {
		int n = snprintf(buf + off, len - off, "%s%s", i ? ", " : "",
		    json_string_value(v));
		if (n < 0 || (size_t)n >= len - off)
			break;
		off += (size_t)n;
	}
}

bool
catalog_provider_valid(const char *provider)
{
	if (provider == NULL)
		return false;
	for (size_t i = 0; i < NPROVIDERS; i++)
		if (strcmp(providers[i], provider) == 0)
			return true;
	return false;
}

json_t *
catalog_providers_list(void)
{
	json_t *a = json_array();

	for (size_t i = 0; i < NPROVIDERS; i++)
		json_array_append_new(a, json_string(providers[i]));
	return a;
}

bool
catalog_region_valid(const char *provider, const char *region)
{
	return region_find(provider, region) != NULL;
}

json_t *
catalog_regions_list(const char *provider)
{
	json_t *a;

	if (!catalog_provider_valid(provider))
		return NULL;
	a = json_array();
	for (size_t i = 0; i < NREGIONS; i++)
		if (strcmp(regions[i].provider, provider) == 0)
			json_array_append_new(a, json_string(regions[i].name));
	return a;
}

bool
catalog_region_check(const char *provider, const char *region, const char *pointer,
    struct err *e)
{
	char buf[400];
	json_t *list;

	if (!catalog_provider_valid(provider)) {
		list = catalog_providers_list();
		join(list, buf, sizeof(buf));
		json_decref(list);
		err_field(e, 400, "catalog.unknown_provider", "/provider",
		    "unknown provider");
		return err_detail(e, "Valid providers: %s.", buf);
	}
	if (region_find(provider, region) != NULL)
		return true;
	list = catalog_regions_list(provider);
	join(list, buf, sizeof(buf));
	json_decref(list);
	err_field(e, 400, "catalog.unknown_region", pointer ? pointer : "/region",
	    "unknown %s region", provider);
	return err_detail(e, "Valid %s regions: %s.", provider, buf);
}

bool
catalog_region_offers(const char *provider, const char *region, const char *flavor)
{
	const struct region *r = region_find(provider, region);
	int f = flavor_index(flavor);

	return r != NULL && f >= 0 && (r->offers & (1u << f)) != 0;
}

json_t *
catalog_region_flavors(const char *provider, const char *region)
{
	const struct region *r = region_find(provider, region);
	json_t *a;

	if (r == NULL)
		return NULL;
	a = json_array();
	for (size_t i = 0; i < NFLAVORS; i++)
		if (r->offers & (1u << i))
			json_array_append_new(a, json_string(flavors[i].name));
	return a;
}

bool
catalog_flavor_valid(const char *flavor)
{
	return flavor_index(flavor) >= 0;
}

const struct catalog_flavor *
catalog_flavor_get(const char *flavor)
{
	int i = flavor_index(flavor);

	return i < 0 ? NULL : &flavors[i];
}

json_t *
catalog_flavors_list(void)
{
	json_t *a = json_array();

	for (size_t i = 0; i < NFLAVORS; i++)
		json_array_append_new(a, json_string(flavors[i].name));
	return a;
}

bool
catalog_flavor_check(const char *flavor, const char *pointer, struct err *e)
{
	char buf[300];
	json_t *list;

	if (flavor_index(flavor) >= 0)
		return true;
	list = catalog_flavors_list();
	join(list, buf, sizeof(buf));
	json_decref(list);
	err_field(e, 400, "catalog.unknown_flavor", pointer ? pointer : "/flavor",
	    "unknown flavor");
	return err_detail(e, "Known flavors: %s.", buf);
}

static void
machine_copy(size_t i, struct catalog_machine *out)
{
	*out = machines[i];
	pthread_mutex_lock(&price_mu);
	if (prices_set) {
		out->on_demand_hour = prices[i][0];
		out->spot_hour = prices[i][1];
	}
	pthread_mutex_unlock(&price_mu);
}

bool
catalog_machine_lookup(const char *provider, const char *machine_type,
    struct catalog_machine *out, struct err *e)
{
	int i = machine_index(provider, machine_type);

	if (i < 0)
		return err_set(e, 404, "catalog.unknown_machine_type",
		    "unknown machine type for provider");
	machine_copy((size_t)i, out);
	return true;
}

size_t
catalog_machines_count(void)
{
	return NMACHINES;
}

void
catalog_machine_at(size_t i, struct catalog_machine *out)
{
	if (i < NMACHINES)
		machine_copy(i, out);
	else
		memset(out, 0, sizeof(*out));
}

void
catalog_reset_prices(void)
{
	pthread_mutex_lock(&price_mu);
	prices_set = false;
	pthread_mutex_unlock(&price_mu);
}

/* Reads one {"on_demand"?, "spot"?} object into next[i]. */
static bool
price_entry(json_t *v, const char *prov, const char *type, double next[2], struct err *e)
{
	static const char *const keys[] = { "on_demand", "spot" };
	char ptr[128];

	snprintf(ptr, sizeof(ptr), "/%s/%s", prov, type);
	if (!json_is_object(v))
		return err_field(e, 400, "catalog.bad_prices", ptr,
		    "machine entry must be an object");
	if (!jsonx_only(v, (const char *const[]){ "on_demand", "spot", NULL }, ptr, e)) {
		e->status = 400;
		snprintf(e->code, sizeof(e->code), "catalog.bad_prices");
		return false;
	}
	for (int k = 0; k < 2; k++) {
		json_t *p = json_object_get(v, keys[k]);

		if (p == NULL)
			continue;
		if (!json_is_number(p) || json_number_value(p) < 0 ||
		    json_number_value(p) > 1e6) {
			snprintf(ptr, sizeof(ptr), "/%s/%s/%s", prov, type, keys[k]);
			return err_field(e, 400, "catalog.bad_prices", ptr,
			    "price must be a number between 0 and 1000000");
		}
		next[k] = json_number_value(p);
	}
	return true;
}

/* Validates every entry of root against the table and writes the result into next. */
static bool
prices_apply(json_t *root, double next[][2], struct err *e)
{
	const char *prov, *type;
	json_t *byprov, *v;
	char ptr[128];

	json_object_foreach(root, prov, byprov) {
		snprintf(ptr, sizeof(ptr), "/%s", prov);
		if (!catalog_provider_valid(prov))
			return err_field(e, 400, "catalog.bad_prices", ptr,
			    "unknown provider");
		if (!json_is_object(byprov))
			return err_field(e, 400, "catalog.bad_prices", ptr,
			    "provider entry must be an object");
		json_object_foreach(byprov, type, v) {
			int i = machine_index(prov, type);

			if (i < 0) {
				snprintf(ptr, sizeof(ptr), "/%s/%s", prov, type);
				return err_field(e, 400, "catalog.bad_prices", ptr,
				    "unknown machine type");
			}
			if (!price_entry(v, prov, type, next[i], e))
				return false;
		}
	}
	return true;
}

bool
catalog_load_prices(const char *path, struct err *e)
{
	double next[NMACHINES][2];
	json_error_t je;
	json_t *root = NULL;
	bool ok = false;

	root = json_load_file(path, 0, &je);
	if (root == NULL) {
		if (je.line < 0 || strstr(je.text, "unable to open") != NULL) {
			err_set(e, 500, "catalog.price_file", "cannot read price file");
			goto cleanup;
		}
		err_set(e, 400, "catalog.bad_prices", "price file is not valid json");
		err_detail(e, "Line %d: %s.", je.line, je.text);
		goto cleanup;
	}
	if (!json_is_object(root)) {
		err_set(e, 400, "catalog.bad_prices", "price file must hold a json object");
		goto cleanup;
	}
	for (size_t i = 0; i < NMACHINES; i++) {
		next[i][0] = machines[i].on_demand_hour;
		next[i][1] = machines[i].spot_hour;
	}
	pthread_mutex_lock(&price_mu);
	if (prices_set)
		memcpy(next, prices, sizeof(next));
	pthread_mutex_unlock(&price_mu);
	if (!prices_apply(root, next, e))
		goto cleanup;
	pthread_mutex_lock(&price_mu);
	memcpy(prices, next, sizeof(prices));
	prices_set = true;
	pthread_mutex_unlock(&price_mu);
	ok = true;
cleanup:
	json_decref(root);
	return ok;
}

/* Parses "AxBxC" with positive decimal dimensions and nothing else. */
static bool
dims_parse(const char *s, int dims[3])
{
	for (int k = 0; k < 3; k++) {
		long v = 0;
		int n = 0;

		while (isdigit((unsigned char)*s) && n < 4) {
			v = v * 10 + (*s++ - '0');
			n++;
		}
		if (n == 0 || v <= 0 || isdigit((unsigned char)*s))
			return false;
		dims[k] = (int)v;
		if (k < 2 && *s++ != 'x')
			return false;
	}
	return *s == '\0';
}

/* Cloud TPU v5p: below 64 chips only the published shapes; from 64 chips (whole 4x4x4
 * cubes) every dimension is a multiple of 4, ascending, up to the 8960-chip pod. */
static bool
v5p_shape_valid(const int d[3])
{
	static const int small[][3] = { { 2, 2, 1 }, { 2, 2, 2 }, { 2, 2, 4 }, { 2, 4, 4 } };
	long chips = (long)d[0] * d[1] * d[2];

	if (chips < 64) {
		for (size_t i = 0; i < sizeof(small) / sizeof(small[0]); i++)
			if (memcmp(small[i], d, sizeof(small[i])) == 0)
				return true;
		return false;
	}
	return d[0] % 4 == 0 && d[1] % 4 == 0 && d[2] % 4 == 0 && d[0] <= d[1] &&
	    d[1] <= d[2] && chips <= 8960;
}

bool
catalog_slice_parse(const char *flavor, const char *topology, const char *pointer,
    struct catalog_slice *out, struct err *e)
{
	const struct catalog_flavor *f = catalog_flavor_get(flavor);
	const char *ptr = pointer ? pointer : "/slice_topology";
	int d[3];

	if (f == NULL || strcmp(f->kind, "tpu") != 0)
		return err_field(e, 400, "catalog.bad_slice", ptr,
		    "slice topology needs a tpu flavor");
	if (topology == NULL || !dims_parse(topology, d))
		return err_field(e, 400, "catalog.bad_slice", ptr,
		    "slice topology must look like AxBxC");
	if (!v5p_shape_valid(d)) {
		err_field(e, 400, "catalog.bad_slice", ptr, "not a tpu-v5p slice shape");
		return err_detail(e, "Below 64 chips use 2x2x1, 2x2x2, 2x2x4 or 2x4x4; "
		    "larger slices use ascending multiples of 4 up to 8960 chips.");
	}
	out->dims[0] = d[0];
	out->dims[1] = d[1];
	out->dims[2] = d[2];
	out->chips = d[0] * d[1] * d[2];
	out->chips_per_host = 4;
	out->hosts = out->chips / 4;
	return true;
}
