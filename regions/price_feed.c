/* price_feed: Azure's Retail Prices API as a price source (see price_feed.h).  The API is
 * public and unauthenticated; it answers {"BillingCurrency", "CustomerEntityId",
 * "CustomerEntityType", "Items": [{currencyCode, retailPrice, unitPrice, armRegionName,
 * location, meterName, productName, skuName, serviceName, unitOfMeasure, type,
 * armSkuName, ...}], "NextPageLink", "Count"}, filtered with OData $filter:
 * https://learn.microsoft.com/en-us/rest/api/cost-management/retail-prices/azure-retail-prices
 * A VM's Linux pay-as-you-go meter is type "Consumption", unit "1 Hour", a productName
 * without "Windows"; its spot meter's skuName ends in " Spot", the low-priority one's in
 * " Low Priority" (not sold on AKS spot pools: skipped). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <curl/curl.h>

#include "core/config.h"
#include "core/http.h"
#include "core/log.h"
#include "core/ticker.h"
#include "regions/catalog.h"
#include "regions/price_feed.h"

#define SOURCE		"https://prices.azure.com/api/retail/prices"
#define MAX_PAGES	200
#define AWS_SOURCE	"https://pricing.us-east-1.amazonaws.com/offers/v1.0/aws/AmazonSageMaker"
#define AWS_OFFER	"AmazonSageMaker"

static bool
ends_with(const char *s, const char *tail)
{
	size_t n = strlen(s), k = strlen(tail);

	return n >= k && strcmp(s + n - k, tail) == 0;
}

bool
price_feed_azure_page(const char *body, size_t len, json_t *rows, char **next, struct err *e)
{
	json_error_t je;
	json_t *j = json_loadb(body ? body : "", len, 0, &je), *items, *it;
	const char *nl;
	size_t i;

	*next = NULL;
	items = json_object_get(j, "Items");
	if (!json_is_array(items)) {
		json_decref(j);
		return err_set(e, 400, "price_feed.bad_answer", "azure retail prices: no Items");
	}
	json_array_foreach(items, i, it) {
		const char *sku = json_string_value(json_object_get(it, "armSkuName")),
		    *region = json_string_value(json_object_get(it, "armRegionName")),
		    *type = json_string_value(json_object_get(it, "type")),
		    *unit = json_string_value(json_object_get(it, "unitOfMeasure")),
		    *product = json_string_value(json_object_get(it, "productName")),
		    *name = json_string_value(json_object_get(it, "skuName")),
		    *cur = json_string_value(json_object_get(it, "currencyCode"));
		json_t *price = json_object_get(it, "retailPrice");

		if (sku == NULL || region == NULL || type == NULL || unit == NULL || product == NULL ||
		    name == NULL || !json_is_number(price) || strcmp(type, "Consumption") != 0 ||
		    strcmp(unit, "1 Hour") != 0 || strstr(product, "Windows") != NULL ||
		    ends_with(name, " Low Priority") || (cur != NULL && strcmp(cur, "USD") != 0) ||
		    json_number_value(price) < 0 || json_number_value(price) > 1e6)
			continue;
		json_array_append_new(rows, json_pack("{s:s, s:s, s:s, s:b, s:f}", "provider", "aks",
		    "region", region, "machine_type", sku, "spot", ends_with(name, " Spot"),
		    "price_hour", json_number_value(price)));
	}
	nl = json_string_value(json_object_get(j, "NextPageLink"));
	if (nl != NULL && nl[0] != '\0')
		*next = strdup(nl);
	json_decref(j);
	return true;
}

bool
price_feed_azure_fetch(const char *base, const char *region, json_t *rows, struct err *e)
{
	char filter[256], *enc = NULL, *url = NULL, *next = NULL;
	CURL *cu = curl_easy_init();
	bool ok = false;
	int pages = 0;

	if (cu == NULL)
		return err_set(e, 500, "price_feed.oom", "out of memory");
	snprintf(filter, sizeof(filter), "serviceName eq 'Virtual Machines' and armRegionName eq "
	    "'%s' and priceType eq 'Consumption'", region);
	enc = curl_easy_escape(cu, filter, 0);
	if (enc == NULL || asprintf(&url, "%s/api/retail/prices?$filter=%s", base, enc) < 0) {
		url = NULL;
		err_set(e, 500, "price_feed.oom", "out of memory");
		goto cleanup;
	}
	while (url != NULL && pages++ < MAX_PAGES) {
		struct http_req rq = { .url = url, .timeout_ms = 30000 };
		struct http_resp rs;

		memset(&rs, 0, sizeof(rs));
		if (!http_do(&rq, &rs, e)) {
			http_resp_cleanup(&rs);
			goto cleanup;
		}
		if (rs.status != 200) {
			err_set(e, 502, "price_feed.http", "azure retail prices answered %ld", rs.status);
			http_resp_cleanup(&rs);
			goto cleanup;
		}
		ok = price_feed_azure_page(rs.body, rs.body_len, rows, &next, e);
		http_resp_cleanup(&rs);
		if (!ok)
			goto cleanup;
		ok = false;
		free(url);
		url = next;
		next = NULL;
	}
	ok = url == NULL;
	if (!ok)
		err_set(e, 502, "price_feed.too_many_pages", "azure retail prices: over %d pages",
		    MAX_PAGES);
cleanup:
	curl_free(enc);
	curl_easy_cleanup(cu);
	free(url);
	free(next);
	return ok;
}

/* ---- AWS: the Price List Bulk API (public, no credentials, no signature).  The region
 * index {formatVersion, disclaimer, publicationDate, regions: {<code>: {regionCode,
 * currentVersionUrl}}} names each region's offer file by a path on the same host:
 * https://docs.aws.amazon.com/awsaccountbilling/latest/aboutv2/using-ppslong.html
 * An offer file (JSON) is {formatVersion, disclaimer, offerCode, version, publicationDate,
 * products: {<sku>: {sku, productFamily, attributes: {instanceType, regionCode, ...}}},
 * terms: {OnDemand: {<sku>: {<sku.offerTermCode>: {offerTermCode, sku, effectiveDate,
 * priceDimensions: {<rateCode>: {rateCode, description, unit, pricePerUnit: {USD: "1.23"},
 * appliesTo}}, termAttributes}}}, Reserved: {...}}}:
 * https://docs.aws.amazon.com/awsaccountbilling/latest/aboutv2/reading-service-price-list-file-for-services.html
 * HyperPod's ml.* instance types are in the AmazonSageMaker offer. */

/* The instance type of a product, or NULL (SageMaker names it instanceType, some of its
 * product families instanceName). */
static const char *
aws_instance_type(json_t *product)
{
	json_t *a = json_object_get(product, "attributes");
	const char *t = json_string_value(json_object_get(a, "instanceType"));

	return t != NULL ? t : json_string_value(json_object_get(a, "instanceName"));
}

bool
price_feed_aws_index(const char *body, size_t len, const char *region, char **path,
    struct err *e)
{
	json_error_t je;
	json_t *j = json_loadb(body ? body : "", len, 0, &je), *regions;
	const char *u;

	*path = NULL;
	regions = json_object_get(j, "regions");
	if (!json_is_object(regions)) {
		json_decref(j);
		return err_set(e, 400, "price_feed.bad_answer", "aws price list: no regions");
	}
	u = json_string_value(json_object_get(json_object_get(regions, region),
	    "currentVersionUrl"));
	if (u != NULL && u[0] == '/' && strstr(u, "..") == NULL)
		*path = strdup(u);
	json_decref(j);
	return true;
}

bool
price_feed_aws_offer(const char *body, size_t len, const char *region, json_t *rows,
    struct err *e)
{
	json_error_t je;
	json_t *j = json_loadb(body ? body : "", len, 0, &je), *products, *od, *pr;
	const char *sku;

	products = json_object_get(j, "products");
	od = json_object_get(json_object_get(j, "terms"), "OnDemand");
	if (!json_is_object(products) || !json_is_object(od)) {
		json_decref(j);
		return err_set(e, 400, "price_feed.bad_answer",
		    "aws price list: no products or OnDemand terms");
	}
	json_object_foreach(products, sku, pr) {
		const char *type = aws_instance_type(pr), *rc = json_string_value(json_object_get(
		    json_object_get(pr, "attributes"), "regionCode")), *code;
		struct catalog_machine m;
		struct err ig = { 0 };
		json_t *term, *dim;

		/* only the instance types fleetd knows: the rest of the file is skipped */
		if (type == NULL || (rc != NULL && strcmp(rc, region) != 0) ||
		    !catalog_machine_lookup("hyperpod", type, &m, &ig)) {
			err_clear(&ig);
			continue;
		}
		json_object_foreach(json_object_get(od, sku), code, term) {
			const char *dc;

			json_object_foreach(json_object_get(term, "priceDimensions"), dc, dim) {
				const char *unit = json_string_value(json_object_get(dim, "unit")),
				    *usd = json_string_value(json_object_get(json_object_get(dim,
				    "pricePerUnit"), "USD"));
				char *end = NULL;
				double v;

				if (unit == NULL || usd == NULL || (strcmp(unit, "Hrs") != 0 &&
				    strcmp(unit, "Hours") != 0))
					continue;
				v = strtod(usd, &end);
				if (end == usd || *end != '\0' || !(v > 0) || v > 1e6)
					continue;	/* a free tier or a malformed price */
				json_array_append_new(rows, json_pack("{s:s, s:s, s:s, s:b, s:f, s:s}",
				    "provider", "hyperpod", "region", region, "machine_type", type,
				    "spot", 0, "price_hour", v, "source", AWS_SOURCE));
			}
		}
	}
	json_decref(j);
	return true;
}

static bool
get_body(const char *url, struct http_resp *rs, struct err *e)
{
	struct http_req rq = { .url = url, .timeout_ms = 120000 };

	memset(rs, 0, sizeof(*rs));
	if (!http_do(&rq, rs, e))
		return false;
	if (rs->status != 200)
		return err_set(e, 502, "price_feed.http", "aws price list answered %ld", rs->status);
	return true;
}

bool
price_feed_aws_fetch(const char *base, const char *region, json_t *rows, struct err *e)
{
	struct http_resp rs;
	char *url = NULL, *path = NULL;
	bool ok = false;

	if (asprintf(&url, "%s/offers/v1.0/aws/%s/current/region_index.json", base,
	    AWS_OFFER) < 0)
		return err_set(e, 500, "price_feed.oom", "out of memory");
	ok = get_body(url, &rs, e) && price_feed_aws_index(rs.body, rs.body_len, region, &path,
	    e);
	http_resp_cleanup(&rs);
	free(url);
	url = NULL;
	if (!ok || path == NULL)	/* a region the offer does not sell in: nothing to read */
		goto cleanup;
	if (asprintf(&url, "%s%s", base, path) < 0) {
		url = NULL;
		ok = err_set(e, 500, "price_feed.oom", "out of memory");
		goto cleanup;
	}
	ok = get_body(url, &rs, e) && price_feed_aws_offer(rs.body, rs.body_len, region, rows, e);
	http_resp_cleanup(&rs);
cleanup:
	free(url);
	free(path);
	return ok;
}

bool
price_feed_store(struct db *c, json_t *rows, long *n, struct err *e)
{
	static const char sql[] = "WITH r AS (SELECT DISTINCT ON (x->>'provider', x->>'region',"
	    " x->>'machine_type', (x->>'spot')::boolean) x FROM jsonb_array_elements($1::jsonb) x"
	    " ORDER BY x->>'provider', x->>'region', x->>'machine_type', (x->>'spot')::boolean,"
	    " (x->>'price_hour')::float8)"
	    " INSERT INTO prices (provider, region, machine_type, spot, price_hour, source)"
	    " SELECT x->>'provider', x->>'region', x->>'machine_type', (x->>'spot')::boolean,"
	    " (x->>'price_hour')::float8, coalesce(x->>'source', $2) FROM r ON CONFLICT (provider, region, machine_type,"
	    " spot) DO UPDATE SET price_hour = excluded.price_hour, source = excluded.source";
	char *text = json_dumps(rows, JSON_COMPACT);
	const char *p[2] = { text, SOURCE };
	PGresult *r = NULL;
	bool ok;

	if (text == NULL)
		return err_set(e, 500, "price_feed.oom", "out of memory");
	ok = db_exec(c, sql, 2, p, &r, e);
	*n = ok ? strtol(PQcmdTuples(r), NULL, 10) : 0;
	PQclear(r);
	free(text);
	return ok;
}

/* ---- the worker */

struct round_arg {
	json_t	*regions;
	json_t	*rows;
	long	 n;
};

static bool
regions_tx(struct db *c, void *varg, struct err *e)
{
	struct round_arg *a = varg;
	PGresult *r = NULL;

	if (!db_exec(c, "SELECT DISTINCT provider, region FROM clouds WHERE provider IN ('aks',"
	    " 'hyperpod') ORDER BY 1, 2", 0, NULL, &r, e))
		return false;
	for (int i = 0; i < PQntuples(r); i++)
		json_array_append_new(a->regions, json_pack("{s:s, s:s}", "provider",
		    PQgetvalue(r, i, 0), "region", PQgetvalue(r, i, 1)));
	PQclear(r);
	return true;
}

static bool
store_tx(struct db *c, void *varg, struct err *e)
{
	struct round_arg *a = varg;

	return price_feed_store(c, a->rows, &a->n, e);
}

static void
round_once(void)
{
	struct round_arg a = { json_array(), json_array(), 0 };
	struct err e = { 0 };
	size_t i;
	json_t *rg;

	if (!db_tx(regions_tx, &a, &e)) {
		log_warn(NULL, "prices", "price refresh failed", "{s:s}", "code", e.code);
		goto cleanup;
	}
	json_array_foreach(a.regions, i, rg) {	/* no transaction open while fetching */
		const char *pv = json_string_value(json_object_get(rg, "provider")),
		    *region = json_string_value(json_object_get(rg, "region"));
		bool aws = strcmp(pv, "hyperpod") == 0;

		if (!(aws ? price_feed_aws_fetch(cfg.aws_prices_url, region, a.rows, &e) :
		    price_feed_azure_fetch(cfg.azure_prices_url, region, a.rows, &e))) {
			log_warn(NULL, "prices", "price list unavailable: the stored prices stay",
			    "{s:s, s:s, s:s}", "provider", pv, "region", region, "code", e.code);
			err_clear(&e);
		}
	}
	if (json_array_size(a.rows) > 0 && !db_tx(store_tx, &a, &e))
		log_warn(NULL, "prices", "price refresh failed", "{s:s}", "code", e.code);
	else if (a.n > 0)
		log_info(NULL, "prices", "prices refreshed", "{s:i}", "rows", (int)a.n);
cleanup:
	json_decref(a.regions);
	json_decref(a.rows);
}

static long
period_ms(void)
{
	return cfg.price_refresh_ms > 0 ? cfg.price_refresh_ms : 3600000;
}

static struct ticker ticker = TICKER_INIT(round_once, period_ms);

bool
price_feed_start(struct err *e)
{
	if (cfg.price_refresh_ms <= 0)
		return true;	/* off: the shipped and overridden prices only */
	return ticker_start(&ticker, "prices.start", "cannot start the prices thread", e);
}

void
price_feed_stop(void)
{
	ticker_stop(&ticker);
}
