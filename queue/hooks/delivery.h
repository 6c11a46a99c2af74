/* delivery: the webhooks worker — fans job events out into each matching endpoint's
 * outbox (webhook_deliveries) and sends what is due, signed, at least once and in per-job
 * order, with capped exponential backoff and jitter, dead-lettering after the last try. */
#ifndef FLEET_QUEUE_DELIVERY_H
#define FLEET_QUEUE_DELIVERY_H

#include <stdbool.h>
#include <stddef.h>

#include "core/err.h"

/* Copies the sequenced events after each endpoint's cursor (at most 5,000 per endpoint)
 * that match it into its outbox and moves its cursor, in one transaction; endpoints
 * another replica holds are skipped.  *copied = deliveries created. */
bool	delivery_fanout(long long *copied, struct err *e);
/* Claims due deliveries (the earliest pending one of each job per endpoint), sends them
 * with no transaction open and records each outcome.  *sent = claimed. */
bool	delivery_send_due(int *sent, struct err *e);
/* The retry delay after attempt n (1-based): base * 2^(n-1) capped at max, then jittered
 * into [d/2, d].  r is a random value. */
long	delivery_backoff_ms(int n, long base, long max, unsigned r);

bool	delivery_start(struct err *e);
void	delivery_stop(void);
void	delivery_metrics(char **buf, size_t *len, size_t *cap);

#endif
