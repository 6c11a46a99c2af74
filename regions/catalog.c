/* catalog: static region / flavor / machine-type tables. Honest, hand-kept, not live: the
 * offers and prices below are approximate public list values (USD, US regions) to be
 * overridden by an operator's price file; live quota and stock come from the providers. */
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

/* The first seven keep the bit order of catalog_regions.def (their offers per region); the
 * generations after them have no region table (any region the operator registers a
 * cluster in may carry them: capacity, not this table, says where they are).
 * rack_size: nodes per NVLink domain (GB200/GB300 NVL72: 18 trays of 4 GPUs). */
static const struct catalog_flavor flavors[] = {
	{ "nvidia-h100-80gb", "gpu", 80, "nvidia.com/gpu", 0 },
	{ "nvidia-a100-80gb", "gpu", 80, "nvidia.com/gpu", 0 },
	{ "nvidia-a100-40gb", "gpu", 40, "nvidia.com/gpu", 0 },
	{ "nvidia-l4", "gpu", 24, "nvidia.com/gpu", 0 },
	{ "nvidia-a10g", "gpu", 24, "nvidia.com/gpu", 0 },
	{ "nvidia-a10", "gpu", 24, "nvidia.com/gpu", 0 },
	{ "tpu-v5p", "tpu", 95, "google.com/tpu", 0 },
	{ "nvidia-h200-141gb", "gpu", 141, "nvidia.com/gpu", 0 },
	{ "nvidia-b200", "gpu", 180, "nvidia.com/gpu", 0 },
	{ "nvidia-gb200", "gpu", 186, "nvidia.com/gpu", 18 },
	{ "nvidia-gb300", "gpu", 288, "nvidia.com/gpu", 18 },
	{ "tpu-v6e", "tpu", 32, "google.com/tpu", 0 },
	{ "tpu-v5e", "tpu", 16, "google.com/tpu", 0 },
	{ "tpu-v7x", "tpu", 192, "google.com/tpu", 0 },
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
	{ "gke", "a3-highgpu-8g", "nvidia-h100-80gb", 8, 208, 1872, 88.25, 26.48, NULL, NULL },
	{ "gke", "a3-megagpu-8g", "nvidia-h100-80gb", 8, 208, 1872, 92.00, 27.60, NULL, NULL },
	{ "gke", "a2-ultragpu-8g", "nvidia-a100-80gb", 8, 96, 1360, 40.22, 12.07, NULL, NULL },
	{ "gke", "a2-highgpu-8g", "nvidia-a100-40gb", 8, 96, 680, 29.39, 8.82, NULL, NULL },
	{ "gke", "a2-highgpu-1g", "nvidia-a100-40gb", 1, 12, 85, 3.67, 1.10, NULL, NULL },
	{ "gke", "g2-standard-48", "nvidia-l4", 4, 48, 192, 4.00, 1.20, NULL, NULL },
	{ "gke", "g2-standard-8", "nvidia-l4", 1, 8, 32, 0.85, 0.26, NULL, NULL },
	{ "gke", "ct5p-hightpu-4t", "tpu-v5p", 4, 208, 448, 16.80, 8.40,
	  "cloud.google.com/gke-tpu-accelerator", "tpu-v5p-slice" },
	{ "aks", "Standard_ND96isr_H100_v5", "nvidia-h100-80gb", 8, 96, 1900, 98.32, 29.50, NULL, NULL },
	{ "aks", "Standard_ND96amsr_A100_v4", "nvidia-a100-80gb", 8, 96, 1900, 32.77, 9.83, NULL, NULL },
	{ "aks", "Standard_ND96asr_v4", "nvidia-a100-40gb", 8, 96, 900, 27.20, 8.16, NULL, NULL },
	{ "aks", "Standard_NC96ads_A100_v4", "nvidia-a100-80gb", 4, 96, 880, 14.69, 4.41, NULL, NULL },
	{ "aks", "Standard_NC24ads_A100_v4", "nvidia-a100-80gb", 1, 24, 220, 3.67, 1.10, NULL, NULL },
	{ "aks", "Standard_NV36ads_A10_v5", "nvidia-a10", 1, 36, 440, 3.20, 0.96, NULL, NULL },
	{ "hyperpod", "ml.p5.48xlarge", "nvidia-h100-80gb", 8, 192, 2048, 98.32, 0, NULL, NULL },
	{ "hyperpod", "ml.p4de.24xlarge", "nvidia-a100-80gb", 8, 96, 1152, 47.36, 0, NULL, NULL },
	{ "hyperpod", "ml.p4d.24xlarge", "nvidia-a100-40gb", 8, 96, 1152, 37.69, 0, NULL, NULL },
	{ "hyperpod", "ml.g6.48xlarge", "nvidia-l4", 8, 192, 768, 16.24, 0, NULL, NULL },
	{ "hyperpod", "ml.g5.48xlarge", "nvidia-a10g", 8, 192, 768, 20.36, 0, NULL, NULL },
	/*
	 * The current generations (issue 26).  Shapes from the provider pages below; the
	 * prices are rough estimates (not checked against a price list): set real ones in
	 * the price file.
	 * GKE: https://cloud.google.com/compute/docs/accelerator-optimized-machines (A4
	 * B200, A4X GB200 NVL72, A3 Ultra H200); A4X Max (GB300, bare metal) as named in
	 * https://docs.nvidia.com/aicr/integrator-guide/gke-a-4-x-max-networking.md;
	 * TPU v6e https://cloud.google.com/tpu/docs/v6e (8 chips per host, 256-chip pod,
	 * 32 GB HBM per chip) and https://cloud.google.com/kubernetes-engine/docs/concepts/plan-tpus.
	 * Node labels: cloud.google.com/gke-accelerator / gke-tpu-accelerator as GKE sets them
	 * (https://cloud.google.com/kubernetes-engine/docs/how-to/gpus).
	 */
	{ "gke", "a3-ultragpu-8g", "nvidia-h200-141gb", 8, 224, 2952, 84.81, 25.44,
	  "cloud.google.com/gke-accelerator", "nvidia-h200-141gb" },
	{ "gke", "a4-highgpu-8g", "nvidia-b200", 8, 224, 3968, 108.00, 32.40,
	  "cloud.google.com/gke-accelerator", "nvidia-b200" },
	{ "gke", "a4x-highgpu-4g", "nvidia-gb200", 4, 140, 884, 60.00, 18.00,
	  "cloud.google.com/gke-accelerator", "nvidia-gb200" },
	{ "gke", "a4x-maxgpu-4g-metal", "nvidia-gb300", 4, 144, 960, 75.00, 0,
	  "cloud.google.com/gke-accelerator", "nvidia-gb300" },
	{ "gke", "ct6e-standard-4t", "tpu-v6e", 4, 180, 720, 10.80, 4.32,
	  "cloud.google.com/gke-tpu-accelerator", "tpu-v6e-slice" },
	{ "gke", "ct6e-standard-8t", "tpu-v6e", 8, 180, 1440, 21.60, 8.64,
	  "cloud.google.com/gke-tpu-accelerator", "tpu-v6e-slice" },
	{ "gke", "ct6e-standard-1t", "tpu-v6e", 1, 44, 176, 2.70, 1.08,
	  "cloud.google.com/gke-tpu-accelerator", "tpu-v6e-slice" },
	/*
	 * TPU v5e (https://cloud.google.com/tpu/docs/v5e: 16 GB HBM per chip, 256-chip pod;
	 * ct5lp-hightpu-1t/-4t/-8t with 24/112/224 vCPUs and 48/192/384 GB) and Ironwood
	 * TPU7x (https://docs.cloud.google.com/tpu/docs/tpu7x: 192 GiB HBM per chip, 9,216
	 * chips per pod, one 4-chip VM of 224 vCPUs and 960 GB).  gke-tpu-accelerator values
	 * tpu-v5-lite-podslice and tpu7x as the GKE pages list them
	 * (https://cloud.google.com/kubernetes-engine/docs/concepts/plan-tpus,
	 * https://docs.cloud.google.com/kubernetes-engine/docs/concepts/tpu-ironwood).
	 */
	{ "gke", "ct5lp-hightpu-1t", "tpu-v5e", 1, 24, 48, 1.20, 0.48,
	  "cloud.google.com/gke-tpu-accelerator", "tpu-v5-lite-podslice" },
	{ "gke", "ct5lp-hightpu-4t", "tpu-v5e", 4, 112, 192, 4.80, 1.92,
	  "cloud.google.com/gke-tpu-accelerator", "tpu-v5-lite-podslice" },
	{ "gke", "ct5lp-hightpu-8t", "tpu-v5e", 8, 224, 384, 9.60, 3.84,
	  "cloud.google.com/gke-tpu-accelerator", "tpu-v5-lite-podslice" },
	{ "gke", "tpu7x-standard-4t", "tpu-v7x", 4, 224, 960, 24.00, 0,
	  "cloud.google.com/gke-tpu-accelerator", "tpu7x" },
	/*
	 * Azure: ND H200 v5 (https://learn.microsoft.com/azure/virtual-machines/sizes/
	 * gpu-accelerated/nd-h200-v5-series), ND GB200 v6 and ND GB300 v6 (https://learn.
	 * microsoft.com/azure/virtual-machines/sizes/gpu-accelerated/nd-gb200-v6-series);
	 * vCPU and memory as AKS lists the sizes (128 vCPU, 864 GB for GB200/GB300 v6).
	 * Label: node.kubernetes.io/instance-type (well-known, set by the kubelet).
	 */
	{ "aks", "Standard_ND96isr_H200_v5", "nvidia-h200-141gb", 8, 96, 1850, 110.00, 33.00,
	  "node.kubernetes.io/instance-type", "Standard_ND96isr_H200_v5" },
	{ "aks", "Standard_ND128isr_NDR_GB200_v6", "nvidia-gb200", 4, 128, 864, 62.00, 0,
	  "node.kubernetes.io/instance-type", "Standard_ND128isr_NDR_GB200_v6" },
	{ "aks", "Standard_ND128isr_GB300_v6", "nvidia-gb300", 4, 128, 864, 78.00, 0,
	  "node.kubernetes.io/instance-type", "Standard_ND128isr_GB300_v6" },
	/*
	 * SageMaker HyperPod: instance types of https://docs.aws.amazon.com/sagemaker/latest/
	 * APIReference/API_UltraServerSummary.html; p6e-gb200.36xlarge only comes in
	 * UltraServers (u-p6e-gb200x72 = 18 instances, x36 = 9): https://docs.aws.amazon.com/
	 * eks/latest/userguide/ml-eks-nvidia-ultraserver.html; P6-B200 192 vCPU, 2 TiB
	 * (https://aws.amazon.com/ec2/instance-types/p6/); P5en https://aws.amazon.com/ec2/
	 * instance-types/p5/.
	 */
	{ "hyperpod", "ml.p5en.48xlarge", "nvidia-h200-141gb", 8, 192, 2048, 84.80, 0,
	  "node.kubernetes.io/instance-type", "ml.p5en.48xlarge" },
	{ "hyperpod", "ml.p6-b200.48xlarge", "nvidia-b200", 8, 192, 2048, 113.93, 0,
	  "node.kubernetes.io/instance-type", "ml.p6-b200.48xlarge" },
	{ "hyperpod", "ml.p6e-gb200.36xlarge", "nvidia-gb200", 4, 144, 960, 64.00, 0,
	  "node.kubernetes.io/instance-type", "ml.p6e-gb200.36xlarge" },
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

/* The overlay: flavors and machine types read from the database.  Retired sets stay on
 * the prev list (pointers into them may be borrowed) until catalog_overlay_clear. */
struct overlay {
	struct overlay		*prev;
	json_t			*rows;	/* owns every string below */
	long long		 gen;
	size_t			 nf, nm;
	struct catalog_flavor	*f;
	struct catalog_machine	*m;
};
static pthread_rwlock_t ov_mu = PTHREAD_RWLOCK_INITIALIZER;
static struct overlay *ov;

static const struct catalog_flavor *
ov_flavor(const char *name)
{
	const struct catalog_flavor *r = NULL;

	pthread_rwlock_rdlock(&ov_mu);
	for (size_t i = 0; ov != NULL && i < ov->nf; i++)
		if (strcmp(ov->f[i].name, name) == 0)
			r = &ov->f[i];
	pthread_rwlock_unlock(&ov_mu);
	return r;
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

const struct catalog_flavor *
catalog_flavor_get(const char *flavor)
{
	const struct catalog_flavor *o;
	int i;

	if (flavor == NULL)
		return NULL;
	if ((o = ov_flavor(flavor)) != NULL)
		return o;
	i = flavor_index(flavor);
	return i < 0 ? NULL : &flavors[i];
}

const struct catalog_flavor *
catalog_builtin_flavor(const char *flavor)
{
	int i = flavor_index(flavor);

	return i < 0 ? NULL : &flavors[i];
}

bool
catalog_flavor_valid(const char *flavor)
{
	return catalog_flavor_get(flavor) != NULL;
}

json_t *
catalog_flavors_list(void)
{
	json_t *a = json_array();

	for (size_t i = 0; i < NFLAVORS; i++)
		json_array_append_new(a, json_string(flavors[i].name));
	pthread_rwlock_rdlock(&ov_mu);
	for (size_t i = 0; ov != NULL && i < ov->nf; i++)
		if (flavor_index(ov->f[i].name) < 0)
			json_array_append_new(a, json_string(ov->f[i].name));
	pthread_rwlock_unlock(&ov_mu);
	return a;
}

static const char *
js(json_t *o, const char *k)
{
	return json_string_value(json_object_get(o, k));
}

static int
ji(json_t *o, const char *k)
{
	return (int)json_integer_value(json_object_get(o, k));
}

void
catalog_overlay_set(json_t *rows, long long gen)
{
	struct overlay *n = calloc(1, sizeof(*n));
	const char *name;
	json_t *spec, *mt;
	size_t nm = 0, i;

	if (n == NULL) {
		json_decref(rows);
		return;
	}
	n->rows = json_is_object(rows) ? rows : json_object();
	if (n->rows != rows)
		json_decref(rows);
	n->gen = gen;
	json_object_foreach(n->rows, name, spec)
		nm += json_array_size(json_object_get(spec, "machine_types"));
	n->f = calloc(json_object_size(n->rows) + 1, sizeof(*n->f));
	n->m = calloc(nm + 1, sizeof(*n->m));
	if (n->f == NULL || n->m == NULL) {
		free(n->f);
		free(n->m);
		json_decref(n->rows);
		free(n);
		return;
	}
	json_object_foreach(n->rows, name, spec) {
		struct catalog_flavor *f = &n->f[n->nf++];

		f->name = name;
		f->kind = js(spec, "kind");
		f->memory_gib = ji(spec, "memory_gib");
		f->k8s_resource = js(spec, "k8s_resource");
		f->rack_size = ji(spec, "rack_size");
		json_array_foreach(json_object_get(spec, "machine_types"), i, mt) {
			struct catalog_machine *m = &n->m[n->nm++];
			json_t *lab = json_object_get(mt, "node_label");

			m->provider = js(mt, "provider");
			m->machine_type = js(mt, "machine_type");
			m->flavor = name;
			m->accel_per_node = ji(mt, "accelerators_per_node");
			m->vcpus = ji(mt, "vcpus");
			m->memory_gib = ji(mt, "memory_gib");
			m->on_demand_hour = json_number_value(json_object_get(mt, "on_demand_hour"));
			m->spot_hour = json_number_value(json_object_get(mt, "spot_hour"));
			m->label_key = js(lab, "key");
			m->label_value = js(lab, "value");
		}
	}
	pthread_rwlock_wrlock(&ov_mu);
	n->prev = ov;
	ov = n;
	pthread_rwlock_unlock(&ov_mu);
}

long long
catalog_overlay_gen(void)
{
	long long g;

	pthread_rwlock_rdlock(&ov_mu);
	g = ov != NULL ? ov->gen : 0;
	pthread_rwlock_unlock(&ov_mu);
	return g;
}

json_t *
catalog_overlay_rows(void)
{
	json_t *r;

	pthread_rwlock_rdlock(&ov_mu);
	r = ov != NULL ? json_deep_copy(ov->rows) : json_object();
	pthread_rwlock_unlock(&ov_mu);
	return r;
}

void
catalog_overlay_clear(void)
{
	struct overlay *o, *prev;

	pthread_rwlock_wrlock(&ov_mu);
	o = ov;
	ov = NULL;
	pthread_rwlock_unlock(&ov_mu);
	for (; o != NULL; o = prev) {
		prev = o->prev;
		free(o->f);
		free(o->m);
		json_decref(o->rows);
		free(o);
	}
}

bool
catalog_flavor_check(const char *flavor, const char *pointer, struct err *e)
{
	char buf[400];
	json_t *list;

	if (catalog_flavor_valid(flavor))
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

/* The overlay's machine of that type into *out; false when it has none. */
static bool
ov_machine(const char *provider, const char *type, struct catalog_machine *out)
{
	bool found = false;

	pthread_rwlock_rdlock(&ov_mu);
	for (size_t i = 0; ov != NULL && i < ov->nm && !found; i++)
		if (strcmp(ov->m[i].provider, provider) == 0 &&
		    strcmp(ov->m[i].machine_type, type) == 0) {
			*out = ov->m[i];
			found = true;
		}
	pthread_rwlock_unlock(&ov_mu);
	return found;
}

bool
catalog_machine_lookup(const char *provider, const char *machine_type,
    struct catalog_machine *out, struct err *e)
{
	int i;

	if (provider != NULL && machine_type != NULL && ov_machine(provider, machine_type, out))
		return true;
	i = machine_index(provider, machine_type);
	if (i >= 0 && ov_flavor(machines[i].flavor) != NULL)
		i = -1;	/* overridden: the override's machine types replace the built-in ones */
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

const char *
catalog_tpu_accelerator(const char *flavor)
{
	static const char key[] = "cloud.google.com/gke-tpu-accelerator";
	const char *r = NULL;

	if (flavor == NULL)
		return NULL;
	pthread_rwlock_rdlock(&ov_mu);
	for (size_t i = 0; ov != NULL && i < ov->nm && r == NULL; i++)
		if (strcmp(ov->m[i].provider, "gke") == 0 && strcmp(ov->m[i].flavor, flavor) == 0 &&
		    ov->m[i].label_key != NULL && strcmp(ov->m[i].label_key, key) == 0)
			r = ov->m[i].label_value;
	pthread_rwlock_unlock(&ov_mu);
	if (r != NULL || ov_flavor(flavor) != NULL)
		return r;
	for (size_t i = 0; i < NMACHINES; i++)
		if (strcmp(machines[i].provider, "gke") == 0 &&
		    strcmp(machines[i].flavor, flavor) == 0 && machines[i].label_key != NULL &&
		    strcmp(machines[i].label_key, key) == 0)
			return machines[i].label_value;
	return NULL;
}
