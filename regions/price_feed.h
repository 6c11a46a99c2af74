/* price_feed: list prices per pool-hour from a provider's public price source, read without
 * credentials (issue 27): Azure's Retail Prices API, the AWS Price List Bulk API (the
 * AmazonSageMaker offer, for HyperPod's ml.* instance types).  Rows go to the prices table (0019),
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
/* The path (malloc'd, on the index's host) of region's current offer file from an AWS
 * region_index.json; NULL when the offer is not sold there.  400 on another shape. */
bool	price_feed_aws_index(const char *body, size_t len, const char *region, char **path,
	    struct err *e);
/* Adds to rows the OnDemand hourly USD price of each product of an AWS offer file whose
 * instance type is in fleetd's catalog (provider hyperpod); the others are skipped. */
bool	price_feed_aws_offer(const char *body, size_t len, const char *region, json_t *rows,
	    struct err *e);
/* Reads region's current AmazonSageMaker offer from base (FLEETD_AWS_PRICES_URL). */
bool	price_feed_aws_fetch(const char *base, const char *region, json_t *rows,
	    struct err *e);
/* Upserts rows into prices (source: the row's, else Azure's API URL); *n rows written. */
bool	price_feed_store(struct db *c, json_t *rows, long *n, struct err *e);

/* The "prices" worker: every FLEETD_PRICE_REFRESH_MS (0: off), the regions of the AKS and
 * HyperPod clouds, their prices fetched, stored. */
bool	price_feed_start(struct err *e);
void	price_feed_stop(void);

#endif
