/* lease: member clusters shared among the live replicas by leases in Postgres (no other
 * coordination service).  Each replica that runs per-cluster work (status, capacity
 * refresh, dispatch, sweep) heartbeats its row in `replicas`, renews the leases it holds,
 * takes expired or unheld ones up to its fair share (ceil(clusters / live replicas)) and
 * hands back what it holds beyond it: a replica that joins gets a share within two turns,
 * a dead one's clusters are taken over once its leases expire (FLEETD_LEASE_TTL), and a
 * replica that stops hands its clusters back at once.  Each take bumps the lease's epoch;
 * writes about a cluster are fenced by lease_fence in their transaction, so a replica
 * that lost a lease (stalled past its expiry, cut off from the database) cannot land a
 * write after the new holder started.  The scheduler's decisions stay one leader's. */
#ifndef FLEET_REGIONS_LEASE_H
#define FLEET_REGIONS_LEASE_H

#include <stdbool.h>
#include <stddef.h>

#include "core/db.h"
#include "core/err.h"

/* Starts the lease thread on the first call (every worker that needs leases calls it);
 * lease_stop on the last call hands every lease back and ends the thread. */
bool	lease_start(struct err *e);
void	lease_stop(void);

/* Whether this replica holds cluster_id now (and its epoch).  Leases are held until a
 * moment one second short of their expiry as the database last granted it. */
bool	lease_held(const char *cluster_id, long long *epoch);
/* Grows whenever the held set changes (a lease taken, handed back or lost). */
unsigned long lease_generation(void);
/* The held clusters as a Postgres uuid[] literal ("{id,id}"; "{}" for none), malloc'd:
 * the filter of a worker's query ("cluster_id = ANY($n::uuid[])"). */
char	*lease_ids(void);
/* Inside a write transaction about cluster_id: true when this replica still holds its
 * lease at the epoch it holds it by, locking the lease row (FOR SHARE) so that no one
 * takes it over until the transaction ends; else 409 "lease.lost". */
bool	lease_fence(struct db *c, const char *cluster_id, struct err *e);
/* Leases held, taken over and handed back (Prometheus text). */
void	lease_metrics(char **buf, size_t *len, size_t *cap);

#endif
