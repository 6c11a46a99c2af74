/* catalog_tpu: the TPU slice shapes each built-in TPU generation offers on GKE, one table
 * row per generation (2-D: v5e, v6e; 3-D tori: v5p, TPU7x). */
#include <ctype.h>
#include <stdio.h>
#include <string.h>

#include "regions/catalog.h"

/* One generation: the shapes below `cube` chips are listed; from `cube` chips on (3-D only:
 * whole 4x4x4 cubes) every dimension is a multiple of 4, ascending, up to max_chips. */
struct tpu_gen {
	const char	*flavor;
	int		 ndims;
	int		 max_chips;
	int		 cube;		/* 0: only the listed shapes */
	const int	(*shapes)[4];	/* a, b, c (1 for 2-D), chips per host; ends with 0 */
	const char	*detail;
};

/* Cloud TPU v5e (https://cloud.google.com/tpu/docs/v5e) and v6e Trillium
 * (https://cloud.google.com/tpu/docs/v6e): 2-D slices up to the 256-chip pod; 1x1, 2x2 and
 * 2x4 fit one host (-1t/-4t/-8t machine types), larger ones are made of 4-chip hosts
 * (https://cloud.google.com/kubernetes-engine/docs/concepts/plan-tpus). */
static const int shapes_2d[][4] = {
	{ 1, 1, 1, 1 }, { 2, 2, 1, 4 }, { 2, 4, 1, 8 }, { 4, 4, 1, 4 }, { 4, 8, 1, 4 },
	{ 8, 8, 1, 4 }, { 8, 16, 1, 4 }, { 16, 16, 1, 4 }, { 0, 0, 0, 0 },
};
/* Cloud TPU v5p (https://cloud.google.com/tpu/docs/v5p) and Ironwood TPU7x
 * (https://docs.cloud.google.com/tpu/docs/tpu7x): 4-chip hosts in a 3-D torus; below 64
 * chips the published shapes (2x2x1 is one host), then whole cubes. */
static const int shapes_3d[][4] = {
	{ 2, 2, 1, 4 }, { 2, 2, 2, 4 }, { 2, 2, 4, 4 }, { 2, 4, 4, 4 }, { 0, 0, 0, 0 },
};

static const struct tpu_gen gens[] = {
	{ "tpu-v5e", 2, 256, 0, shapes_2d,
	  "Use 1x1, 2x2, 2x4, 4x4, 4x8, 8x8, 8x16 or 16x16." },
	{ "tpu-v6e", 2, 256, 0, shapes_2d,
	  "Use 1x1, 2x2, 2x4, 4x4, 4x8, 8x8, 8x16 or 16x16." },
	{ "tpu-v5p", 3, 8960, 64, shapes_3d,
	  "Below 64 chips use 2x2x1, 2x2x2, 2x2x4 or 2x4x4; larger slices use ascending "
	  "multiples of 4 up to 8960 chips." },
	{ "tpu-v7x", 3, 9216, 64, shapes_3d,
	  "Below 64 chips use 2x2x1, 2x2x2, 2x2x4 or 2x4x4; larger slices use ascending "
	  "multiples of 4 up to 9216 chips." },
};

/* Parses n ("AxB" or "AxBxC") positive decimal dimensions and nothing else. */
static bool
dims_parse(const char *s, int n, int dims[3])
{
	dims[2] = 1;
	for (int k = 0; k < n; k++) {
		long v = 0;
		int len = 0;

		while (isdigit((unsigned char)*s) && len < 4) {
			v = v * 10 + (*s++ - '0');
			len++;
		}
		if (len == 0 || v <= 0 || isdigit((unsigned char)*s))
			return false;
		dims[k] = (int)v;
		if (k < n - 1 && *s++ != 'x')
			return false;
	}
	return *s == '\0';
}

/* Chips per host of shape d in generation g; 0 when g does not offer it. */
static int
shape_hosts_of(const struct tpu_gen *g, const int d[3])
{
	long chips = (long)d[0] * d[1] * d[2];

	for (size_t i = 0; g->shapes[i][0] != 0; i++)
		if (g->shapes[i][0] == d[0] && g->shapes[i][1] == d[1] && g->shapes[i][2] == d[2])
			return g->shapes[i][3];
	if (g->cube > 0 && chips >= g->cube && chips <= g->max_chips && d[0] % 4 == 0 &&
	    d[1] % 4 == 0 && d[2] % 4 == 0 && d[0] <= d[1] && d[1] <= d[2])
		return 4;
	return 0;
}

bool
catalog_slice_parse(const char *flavor, const char *topology, const char *pointer,
    struct catalog_slice *out, struct err *e)
{
	const struct catalog_flavor *f = catalog_flavor_get(flavor);
	const char *ptr = pointer ? pointer : "/slice_topology";
	const struct tpu_gen *g = NULL;
	int d[3], per = 0;

	if (f == NULL || strcmp(f->kind, "tpu") != 0)
		return err_field(e, 400, "catalog.bad_slice", ptr,
		    "slice topology needs a tpu flavor");
	for (size_t i = 0; i < sizeof(gens) / sizeof(gens[0]) && g == NULL; i++)
		if (strcmp(gens[i].flavor, f->name) == 0)
			g = &gens[i];
	if (g == NULL)
		return err_field(e, 400, "catalog.bad_slice", ptr,
		    "no slice shapes are known for this tpu flavor");
	if (g->ndims == 3 && (topology == NULL || !dims_parse(topology, 3, d)))
		return err_field(e, 400, "catalog.bad_slice", ptr,
		    "slice topology must look like AxBxC");
	if ((topology == NULL || !dims_parse(topology, g->ndims, d)) ||
	    (per = shape_hosts_of(g, d)) == 0) {
		err_field(e, 400, "catalog.bad_slice", ptr, "not a %s slice shape", f->name);
		return err_detail(e, "%s", g->detail);
	}
	memcpy(out->dims, d, sizeof(out->dims));
	out->chips = d[0] * d[1] * d[2];
	out->chips_per_host = per;
	out->hosts = out->chips / per;
	return true;
}
