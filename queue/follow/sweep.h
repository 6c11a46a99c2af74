/* sweep: the orphan sweep — on every reachable member cluster, lists the Ray objects
 * labelled as fleetd's and deletes (or reports, FLEETD_ORPHAN_SWEEP=report) each one that
 * belongs to no attempt fleetd believes lives there: finished, cancelled, moved or
 * abandoned attempts, objects of older attempts, and applies that landed after a cancel. */
#ifndef FLEET_QUEUE_SWEEP_H
#define FLEET_QUEUE_SWEEP_H

#include <stdbool.h>
#include <stddef.h>

#include "core/err.h"

struct sweep_stats {
	size_t	clusters;	/* listed */
	size_t	unreachable;	/* could not be listed */
	size_t	objects;	/* fleetd objects seen */
	size_t	orphans;	/* of which orphans */
	size_t	deleted;
	size_t	reported;
};

/* One pass over every ready cluster (tests call it directly). */
bool	sweep_round(struct sweep_stats *st, struct err *e);
bool	sweep_start(struct err *e);
void	sweep_stop(void);
void	sweep_metrics(char **buf, size_t *len, size_t *cap);

#endif
