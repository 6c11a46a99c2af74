/* regions: the provider and region names terraform-provider-fleet checks at plan time and
 * lists in the fleet_regions data source.  Built from regions/catalog_regions.def, the data
 * file fleetd's own catalog (regions/catalog.c) is built from; the provider links no server
 * module, so it speaks to fleetd only through the public API. */
#include <stdbool.h>
#include <string.h>

#include "tf.h"

struct region {
	const char	*provider;
	const char	*name;
};

static const struct region regions[] = {
#define CATALOG_REGION(provider, name, offers) { provider, name },
#include "regions/catalog_regions.def"
};
#define NREGIONS (sizeof(regions) / sizeof(regions[0]))

static const char *const providers[] = {
#define CATALOG_PROVIDER(name) name,
#include "regions/catalog_regions.def"
};
#define NPROVIDERS (sizeof(providers) / sizeof(providers[0]))

bool
tf_provider_valid(const char *provider)
{
	for (size_t i = 0; provider != NULL && i < NPROVIDERS; i++)
		if (strcmp(providers[i], provider) == 0)
			return true;
	return false;
}

json_t *
tf_providers_list(void)
{
	json_t *a = json_array();

	for (size_t i = 0; i < NPROVIDERS; i++)
		json_array_append_new(a, json_string(providers[i]));
	return a;
}

bool
tf_region_valid(const char *provider, const char *region)
{
	for (size_t i = 0; provider != NULL && region != NULL && i < NREGIONS; i++)
		if (strcmp(regions[i].provider, provider) == 0 &&
		    strcmp(regions[i].name, region) == 0)
			return true;
	return false;
}

json_t *
tf_regions_list(const char *provider)
{
	json_t *a;

	if (!tf_provider_valid(provider))
		return NULL;
	a = json_array();
	for (size_t i = 0; i < NREGIONS; i++)
		if (strcmp(regions[i].provider, provider) == 0)
			json_array_append_new(a, json_string(regions[i].name));
	return a;
}
