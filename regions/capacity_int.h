/* capacity_int: what capacity.c shares with capacity_fit.c (and the unit tests). */
#ifndef FLEET_REGIONS_CAPACITY_INT_H
#define FLEET_REGIONS_CAPACITY_INT_H

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

#include "core/err.h"
#include "regions/catalog.h"

/* pack (issue 26): the fewest racks of one scale unit, as the scheduler places topology pack
 * (queue/sched/sched_blocks.c) */
enum cap_topology { CAP_TOPO_NONE, CAP_TOPO_HOST, CAP_TOPO_RACK, CAP_TOPO_SLICE, CAP_TOPO_PACK };

/* A validated search request; strings and arrays are borrowed from the body. */
struct capacity_req {
	const char		*environment;
	const char		*flavor;
	int			 count;
	int			 per_node;	/* 0 = any split */
	enum cap_topology	 topology;
	struct catalog_slice	 slice;
	const char		*slice_topology;
	json_t			*regions;	/* NULL = any */
	json_t			*providers;	/* NULL = any */
	int			 spot;		/* -1 any, 0 on-demand only, 1 spot only */
	double			 max_price;	/* per accelerator-hour, 0 = no limit */
	int			 max_age_s;	/* snapshots older are stale */
};

struct cap_row {
	char	 pool[96];
	char	 flavor[48];
	char	 machine_type[96];
	bool	 spot;
	double	 price_hour;
	int	 accel_per_node;
	int	 nodes, max_nodes;
	bool	 autoscaling;
	int	 quota_left;		/* -1 unknown */
	int	 free_accel;
	json_t	*topology;		/* owned */
	double	 age_s;
};

struct cap_cluster {
	char		 id[40];
	char		 name[128];
	char		 region[48];
	char		 provider[16];
	bool		 unreachable;
	bool		 cordoned;
	struct cap_row	*rows;
	size_t		 nrows;
};

bool	 capacity_request_parse(const json_t *request, struct capacity_req *q, struct err *e);
/* Pure: the answer object (without "request") for clusters v. */
json_t	*capacity_rank(const struct capacity_req *q, const struct cap_cluster *v, size_t n);

#endif
