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
/* Writes one cluster's outcome in its own transaction. */
bool	 poller_record(struct poller_result *res, struct err *e);

#endif
