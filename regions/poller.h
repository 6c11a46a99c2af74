/* poller: refreshes every member cluster's capacity concurrently on one http_batch
 * (provider pools + Kubernetes nodes and pods; a cloud's region quotas, reservations and
 * SKUs read once for all its clusters), then writes one short transaction per cluster;
 * keeps per-provider call metrics and per-cluster snapshot ages. */
#ifndef FLEET_REGIONS_POLLER_H
#define FLEET_REGIONS_POLLER_H

#include <stdbool.h>
#include <stddef.h>

#include "core/err.h"

#define POLLER_UNREACHABLE_AFTER	3	/* consecutive failed refreshes */

struct poller_stats {
	int	clusters;	/* clusters refreshed */
	int	ok;		/* whose rows were replaced */
	int	failed;		/* whose refresh failed (rows kept, failures + 1) */
	int	unreachable;	/* now in state unreachable */
	int	rows;		/* capacity rows written */
	int	calls;		/* HTTP calls made (retries inside http not counted) */
	double	elapsed_ms;	/* network phase */
};

/* Reads every cluster (only: those of a uuid[] literal, the clusters whose lease this
 * replica holds, each write then fenced by the lease; NULL: all) and its cloud, decrypts the cluster credentials with the master key,
 * fetches provider pools and Kubernetes capacity of all of them on one batch of at most
 * concurrency connections (<= 0: 128), and records per cluster: capacity rows replaced and
 * state 'ready' on success; failures + 1, last_error, and 'unreachable' after
 * POLLER_UNREACHABLE_AFTER failures otherwise.  No transaction is open during the network
 * phase.  False only when the database or the batch itself fails. */
bool	poller_refresh_all(int concurrency, const char *only, struct poller_stats *st,
	    struct err *e);

/* Per-call timeout and attempts (retries on transport errors, 5xx and 429 with
 * Retry-After) for later refreshes; 0 keeps the default (10 s, 3 attempts). */
void	poller_set_limits(long call_timeout_ms, int max_attempts);

/* Appends Prometheus text: fleetd_provider_calls_total, _errors_total,
 * _latency_seconds_{sum,count} per provider (gke, aks, hyperpod, kubernetes) and
 * fleetd_cluster_snapshot_age_seconds per cluster. */
void	poller_metrics(char **buf, size_t *len, size_t *cap);

#endif
