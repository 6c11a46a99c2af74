/* price_feed: list prices per pool-hour from a provider's public price source, read without
 * credentials (issue 27): Azure's Retail Prices API.  Rows go to the prices table (0019),
 * replacing the shipped row of the same (provider, region, machine_type, spot); an
 * environment's override (price_overrides) still wins in cost_runs(). */
#ifndef FLEET_REGIONS_PRICE_FEED_H
#define FLEET_REGIONS_PRICE_FEED_H

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

#include "core/db.h"
#include "core/err.h"

/* Adds to rows ([{provider, region, machine_type, spot, price_hour}]) the Linux
 * pay-as-you-go VM meters of one Retail Prices page; *next is the NextPageLink (malloc'd) or
 * NULL.  400 price_feed.bad_answer on a body that is not the documented shape. */
bool	price_feed_azure_page(const char *body, size_t len, json_t *rows, char **next,
	    struct err *e);
/* Fetches every page for region from base (FLEETD_AZURE_PRICES_URL) into rows; no
 * transaction may be open. */
bool	price_feed_azure_fetch(const char *base, const char *region, json_t *rows,
	    struct err *e);
/* Upserts rows into prices (source: the API's URL); *n rows written. */
bool	price_feed_store(struct db *c, json_t *rows, long *n, struct err *e);

/* The "prices" worker: every FLEETD_PRICE_REFRESH_MS (0: off), the regions of the AKS
 * clouds, their prices fetched, stored. */
bool	price_feed_start(struct err *e);
void	price_feed_stop(void);

#endif
