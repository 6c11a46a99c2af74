/* capacity: reads the capacity snapshots the poller writes — the aggregate of
 * GET /v1/capacity and the ranked search of POST /v1/capacity/search, which names every
 * rejected cluster with its reason. */
#ifndef FLEET_REGIONS_CAPACITY_H
#define FLEET_REGIONS_CAPACITY_H

#include <stdbool.h>

#include <jansson.h>

#include "core/arena.h"
#include "core/db.h"
#include "core/err.h"

/* Every field may be NULL (no filter).  envs: the caller's environments (NULL or a list
 * holding "*" = all). */
struct capacity_filter {
	const char		*environment;
	const char		*region;
	const char		*provider;
	const char		*flavor;
	const char *const	*envs;
	int			 nenvs;
};

/* {"items": [{environment, region, provider, flavor, capacity_type ("reservation" |
 * "on_demand" | "spot" | "flex_start"), clusters, nodes, total, free_now,
 * growable, quota_left, fresh_clusters, stale_clusters, oldest_observed_at,
 * newest_observed_at, max_age_s}], "snapshot_max_age_s"}.  free_now counts only fresh
 * snapshots of ready, uncordoned clusters; growable = (max_nodes - nodes) x accelerators
 * per node; quota_left = the largest regional headroom reported (null when unknown). */
bool	capacity_summary(struct db *c, const struct capacity_filter *f, json_t **out,
	    struct err *e);
/* The same answer as JSON text in a (*len bytes, NUL-terminated).  Kept in memory while
 * nothing is committed and within the same second: a committed change shows at once. */
bool	capacity_summary_text(struct db *c, const struct capacity_filter *f, struct arena *a,
	    char **out, size_t *len, struct err *e);

/* POST /v1/capacity/search.  request: {"environment", "flavor", "count", "per_node"?,
 * "topology": "none"|"host"|"rack"|"pack"|"slice", "slice_topology"?, "regions"?,
 * "providers"?, "spot"?, "max_price"? (USD per accelerator-hour)}.  pack: the fewest racks
 * of one scale unit, racks no other gang uses first (the scheduler's topology pack).
 * Answer: {"request", "candidates": [{rank, cluster_id, cluster, region, provider, pool,
 * machine_type, spot, fit ("now" | "after_scale_up"), free, rack?, slice?, racks? and
 * scale_unit? (pack), price_hour, price_per_accel_hour, why}], "rejected": [{cluster_id,
 * cluster, region, provider,
 * reason, detail}], "environment_max", "exceeds_environment", "message"?}.
 * reason is one of wrong_flavor, insufficient_capacity, topology_split, over_quota,
 * region_not_allowed, provider_not_allowed, spot_mismatch, over_price, unreachable, stale,
 * cordoned.  400 with a JSON pointer on a bad body (unknown flavor lists the known ones);
 * 404 "env.not_found" for an unknown environment. */
bool	capacity_search(struct db *c, const json_t *request, json_t **out, struct err *e);

#endif
