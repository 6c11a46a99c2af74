/* poller_int: what poller.c shares with poller_rows.c (not public API). */
#ifndef FLEET_REGIONS_POLLER_INT_H
#define FLEET_REGIONS_POLLER_INT_H

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

#include "core/err.h"
#include "core/textbuf.h"
#include "providers/kube.h"
#include "providers/provider.h"

struct poller_result {
	const char		*cluster_id;
	const char		*provider;	/* NULL on failure */
	struct prov_pools	*pools;		/* NULL on failure */
	struct kube_capacity	*kube;
	double			 age_s;		/* seconds since the fetch began: the rows
						 * show the cluster as it was then */
	char			 error[320];	/* "" on success */
	bool			 written;	/* out: rows replaced */
	int			 rows;		/* out */
	bool			 unreachable;	/* out: cluster now unreachable */
	bool			 fenced;	/* written only while this replica holds the
						 * cluster's lease (lease_fence) */
};

/* Merges provider pools with Kubernetes nodes into capacity rows (pure): a new array of
 * {pool, flavor, machine_type, spot, price_hour, accel_per_node, nodes, max_nodes,
 * autoscaling, quota_left (null = unknown), reserved, free_accel, free_cpu_m, free_mem,
 * topology {tpu_topology?, nodes: [{name, rack, slice, free_accel, free_cpu_m, free_mem,
 * ready}]}}.  Nodes whose pool the provider did not list get a row of their own. */
json_t	*poller_rows(const char *provider, const struct prov_pools *pools,
	    const struct kube_capacity *kube);
/* The allocatable {alloc_accel, alloc_cpu_m, alloc_mem (bytes), source} of a node of
 * machine_type that a pool with no node would add (GKE's documented reservations off the
 * catalog's shape); a new object, NULL when the catalog does not know the machine type.
 * poller_rows puts it in topology.node_template of a flex_start pool with no node. */
json_t	*poller_node_template(const char *provider, const char *machine_type,
	    int accel_per_node);
/* Writes one cluster's outcome in its own transaction. */
bool	 poller_record(struct poller_result *res, struct err *e);

#endif
