/* catalog: static tables of provider regions, accelerator flavors, machine types with
 * prices (overridable from a JSON file) and TPU v5p slice shapes. No I/O except the price file. */
#ifndef FLEET_REGIONS_CATALOG_H
#define FLEET_REGIONS_CATALOG_H

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

#include "core/err.h"

/* Provider names as they appear in the API: "gke", "aks", "hyperpod". */
bool	 catalog_provider_valid(const char *provider);
/* New JSON array of the provider names. */
json_t	*catalog_providers_list(void);

bool	 catalog_region_valid(const char *provider, const char *region);
/* New JSON array of the provider's region names, in table order; NULL for an unknown provider. */
json_t	*catalog_regions_list(const char *provider);
/* 400 "catalog.unknown_provider" or "catalog.unknown_region" with pointer and a detail
 * sentence naming every valid value. */
bool	 catalog_region_check(const char *provider, const char *region, const char *pointer,
	    struct err *e);
/* Whether the region offers the flavor (static table, not a live quota). */
bool	 catalog_region_offers(const char *provider, const char *region, const char *flavor);
/* New JSON array of the flavors the region offers; NULL when the region is unknown. */
json_t	*catalog_region_flavors(const char *provider, const char *region);

struct catalog_flavor {
	const char	*name;		/* "nvidia-h100-80gb" */
	const char	*kind;		/* "gpu" or "tpu" */
	int		 memory_gib;	/* accelerator memory per device (per chip for TPU) */
	const char	*k8s_resource;	/* "nvidia.com/gpu" or "google.com/tpu" */
};

bool	 catalog_flavor_valid(const char *flavor);
/* New JSON array of every flavor name. */
json_t	*catalog_flavors_list(void);
/* Borrowed pointer into the static table, NULL when unknown. */
const struct catalog_flavor *catalog_flavor_get(const char *flavor);
/* 400 "catalog.unknown_flavor" naming the known flavors in detail. */
bool	 catalog_flavor_check(const char *flavor, const char *pointer, struct err *e);

struct catalog_machine {
	const char	*provider;	/* static strings, valid for the program's life */
	const char	*machine_type;
	const char	*flavor;
	int		 accel_per_node;	/* GPUs, or TPU chips per host */
	int		 vcpus;
	int		 memory_gib;
	double		 on_demand_hour;	/* USD per node-hour */
	double		 spot_hour;		/* USD per node-hour; 0 = spot not offered */
};

/* Copies the machine (with current prices) into *out. 404 "catalog.unknown_machine_type". */
bool	 catalog_machine_lookup(const char *provider, const char *machine_type,
	    struct catalog_machine *out, struct err *e);
/* Iteration over the whole table: i in [0, catalog_machines_count()). */
size_t	 catalog_machines_count(void);
void	 catalog_machine_at(size_t i, struct catalog_machine *out);

/* Replaces prices from a JSON file {"<provider>": {"<machine_type>": {"on_demand": N,
 * "spot": N}}}; either key may be omitted. All-or-nothing: on any error (unreadable file
 * 500 "catalog.price_file", bad content 400 "catalog.bad_prices" with a pointer) no price
 * changes. Call at start-up; lookups are safe from any thread. */
bool	 catalog_load_prices(const char *path, struct err *e);
/* Restores the built-in prices (tests). */
void	 catalog_reset_prices(void);

/* A TPU slice shape "AxBxC" (v5p: 4 chips per host). */
struct catalog_slice {
	int	dims[3];
	int	chips;
	int	hosts;
	int	chips_per_host;
};

/* Validates topology for the TPU flavor and fills *out. 400 "catalog.bad_slice" (pointer
 * given by the caller) when the flavor is not a TPU or the shape is not one v5p offers. */
bool	 catalog_slice_parse(const char *flavor, const char *topology, const char *pointer,
	    struct catalog_slice *out, struct err *e);

#endif
