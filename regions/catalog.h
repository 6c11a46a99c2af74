/* catalog: static tables of provider regions, the built-in accelerator flavors, machine types
 * with prices (overridable from a JSON file) and TPU slice shapes, plus the overlay of flavors
 * an admin added or overrode (rows of regions/flavor.c, handed in by catalog_overlay_set).
 * No I/O except the price file. */
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
	int		 rack_size;	/* nodes per NVLink domain (NVL72: 18), 0 = none */
};

bool	 catalog_flavor_valid(const char *flavor);
/* A Kubernetes label key: [DNS subdomain prefix "/"] name (regions/flavor.c). */
bool	 catalog_label_key_ok(const char *k);
/* The shipped definition of flavor (static table, ignoring the overlay), NULL when it is
 * not built in. */
const struct catalog_flavor *catalog_builtin_flavor(const char *flavor);
/* New JSON array of every flavor name. */
json_t	*catalog_flavors_list(void);
/* Borrowed pointer into the static table or the overlay (valid until catalog_overlay_clear),
 * NULL when unknown.  An overlay flavor of a built-in's name replaces it. */
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
	const char	*label_key;	/* the node label naming the flavor on this machine, */
	const char	*label_value;	/* or NULL */
};

/* Copies the machine (with current prices) into *out. 404 "catalog.unknown_machine_type".
 * The overlay's machine types come first; a built-in flavor the overlay overrides keeps
 * none of its built-in machine types. */
bool	 catalog_machine_lookup(const char *provider, const char *machine_type,
	    struct catalog_machine *out, struct err *e);
/* Iteration over the built-in table: i in [0, catalog_machines_count()). */
size_t	 catalog_machines_count(void);
void	 catalog_machine_at(size_t i, struct catalog_machine *out);

/* Replaces prices from a JSON file {"<provider>": {"<machine_type>": {"on_demand": N,
 * "spot": N}}}; either key may be omitted. All-or-nothing: on any error (unreadable file
 * 500 "catalog.price_file", bad content 400 "catalog.bad_prices" with a pointer) no price
 * changes. Call at start-up; lookups are safe from any thread. */
bool	 catalog_load_prices(const char *path, struct err *e);
/* Restores the built-in prices (tests). */
void	 catalog_reset_prices(void);

/* The overlay: rows is a JSON object {name: spec} of flavor specs as regions/flavor.c
 * validates them (stolen).  Replaces the previous overlay, which is kept (its pointers may
 * still be borrowed) until catalog_overlay_clear.  gen is the database generation read
 * with rows; catalog_overlay_gen returns it (0 before any set). */
void	 catalog_overlay_set(json_t *rows, long long gen);
long long catalog_overlay_gen(void);
/* New reference to the overlay's {name: spec} object (an empty object when none). */
json_t	*catalog_overlay_rows(void);
/* Frees every overlay (exit, tests); no borrowed pointer may be used afterwards. */
void	 catalog_overlay_clear(void);

/* The gke-tpu-accelerator node label value of a TPU flavor on GKE (tpu-v5p-slice,
 * tpu-v5-lite-podslice, tpu-v6e-slice, tpu7x), from its GKE machine types (the overlay's
 * for an added or overridden flavor); NULL when none names one.  Borrowed like
 * catalog_flavor_get's pointers. */
const char *catalog_tpu_accelerator(const char *flavor);

/* A TPU slice shape "AxBxC" (v5p, TPU7x: 4 chips per host) or "AxB" (v5e, v6e; dims[2] =
 * 1).  The shapes of each generation: regions/catalog_tpu.c. */
struct catalog_slice {
	int	dims[3];
	int	chips;
	int	hosts;
	int	chips_per_host;
};

/* Validates topology for the TPU flavor and fills *out. 400 "catalog.bad_slice" (pointer
 * given by the caller) when the flavor is not a TPU or the shape is not one it offers. */
bool	 catalog_slice_parse(const char *flavor, const char *topology, const char *pointer,
	    struct catalog_slice *out, struct err *e);

#endif
