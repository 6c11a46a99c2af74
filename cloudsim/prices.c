/* prices: Azure's Retail Prices API for the fleet's AKS pools (issue 27), as
 * https://prices.azure.com/api/retail/prices answers it — public, no token — with the
 * OData $filter clauses a price reader sends (serviceName, armRegionName, armSkuName,
 * priceType, joined by "and"; another field or operator is a 400 as the real API gives)
 * and NextPageLink paging by $skip:
 * https://learn.microsoft.com/en-us/rest/api/cost-management/retail-prices/azure-retail-prices
 * Each AKS pool is one Linux meter at its fleet price_per_hour: a spot pool's skuName ends
 * in " Spot". */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <curl/curl.h>

#include "cloudsim/cs.h"

struct clause {
	char	field[32];
	char	value[128];
};

/* "a eq 'x' and b eq 'y'" -> clauses; false on anything else. */
static bool
parse_filter(const char *f, struct clause *out, int *n)
{
	*n = 0;
	while (f != NULL && *f != '\0' && *n < 8) {
		struct clause *c = &out[*n];
		const char *q;
		int used = 0;

		while (*f == ' ')
			f++;
		if (sscanf(f, "%31[A-Za-z] eq '%n", c->field, &used) != 1 || used == 0)
			return false;
		f += used;
		q = strchr(f, '\'');
		if (q == NULL || (size_t)(q - f) >= sizeof(c->value))
			return false;
		memcpy(c->value, f, (size_t)(q - f));
		c->value[q - f] = '\0';
		if (strcmp(c->field, "serviceName") != 0 && strcmp(c->field, "armRegionName") != 0 &&
		    strcmp(c->field, "armSkuName") != 0 && strcmp(c->field, "priceType") != 0)
			return false;
		(*n)++;
		f = q + 1;
		while (*f == ' ')
			f++;
		if (strncmp(f, "and ", 4) == 0)
			f += 4;
		else if (*f != '\0')
			return false;
	}
	return true;
}

static bool
matches(const struct clause *c, int n, const char *region, const char *sku)
{
	for (int i = 0; i < n; i++) {
		const char *v = strcmp(c[i].field, "serviceName") == 0 ? "Virtual Machines" :
		    strcmp(c[i].field, "armRegionName") == 0 ? region :
		    strcmp(c[i].field, "armSkuName") == 0 ? sku : "Consumption";

		if (strcmp(v, c[i].value) != 0)
			return false;
	}
	return true;
}

void
cs_prices_handle(struct cs *cs, struct cs_req *rq)
{
	const char *filter = cs_query(rq, "$filter"), *skip_s = cs_query(rq, "$skip");
	struct clause cl[8];
	json_t *items = json_array(), *page = json_array(), *out;
	int n = 0, skip = skip_s ? atoi(skip_s) : 0, size = cs->cfg.page_size > 0 ?
	    cs->cfg.page_size : 100;
	size_t i, total;

	if (strcmp(rq->method, "GET") != 0 || strcmp(rq->path, "/azure/prices/api/retail/prices") != 0) {
		cs_reply_error(rq, 404, "NotFound", "no such endpoint");
		goto cleanup;
	}
	if (!parse_filter(filter, cl, &n)) {
		cs_reply_error(rq, 400, "BadRequest", "Invalid OData parameters supplied");
		goto cleanup;
	}
	for (size_t c = 0; c < cs->nclusters; c++) {
		const struct cs_cluster *k = &cs->clusters[c];

		if (k->provider != CS_AKS)
			continue;
		for (size_t p = 0; p < k->npools; p++) {
			const struct cs_pool *pl = &k->pools[p];
			char sku[96];
			bool dup = false;
			json_t *it;
			size_t j;

			if (pl->price <= 0 || !matches(cl, n, k->region, pl->mt->name))
				continue;
			snprintf(sku, sizeof(sku), "%s%s", pl->mt->name + (strncmp(pl->mt->name,
			    "Standard_", 9) == 0 ? 9 : 0), pl->spot ? " Spot" : "");
			json_array_foreach(items, j, it)
				if (strcmp(json_string_value(json_object_get(it, "armSkuName")),
				    pl->mt->name) == 0 && strcmp(json_string_value(json_object_get(it,
				    "armRegionName")), k->region) == 0 && strcmp(json_string_value(
				    json_object_get(it, "skuName")), sku) == 0)
					dup = true;
			if (dup)
				continue;
			json_array_append_new(items, json_pack("{s:s, s:f, s:f, s:f, s:s, s:s, s:s,"
			    " s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:b, s:s}",
			    "currencyCode", "USD", "tierMinimumUnits", 0.0, "retailPrice", pl->price,
			    "unitPrice", pl->price, "armRegionName", k->region, "location", k->region,
			    "effectiveStartDate", "2024-01-01T00:00:00Z", "meterId",
			    "00000000-0000-4000-8000-000000000000", "meterName", sku, "productId",
			    "DZH318Z0BQ4L", "skuId", "DZH318Z0BQ4L/00CX", "productName",
			    "Virtual Machines Series", "skuName", sku, "serviceName", "Virtual Machines",
			    "serviceId", "DZH313Z7MMC8", "serviceFamily", "Compute", "unitOfMeasure",
			    "1 Hour", "isPrimaryMeterRegion", 1, "armSkuName", pl->mt->name));
			json_object_set_new(json_array_get(items, json_array_size(items) - 1), "type",
			    json_string("Consumption"));
		}
	}
	total = json_array_size(items);
	for (i = (size_t)(skip < 0 ? 0 : skip); i < total && json_array_size(page) < (size_t)size;
	    i++)
		json_array_append(page, json_array_get(items, i));
	out = json_pack("{s:s, s:s, s:s, s:O, s:n, s:I}", "BillingCurrency", "USD",
	    "CustomerEntityId", "Default", "CustomerEntityType", "Retail", "Items", page,
	    "NextPageLink", "Count", (json_int_t)json_array_size(page));
	if (i < total) {
		char *enc = curl_easy_escape(NULL, filter ? filter : "", 0);
		const char *host = cs_header(rq, "Host");

		json_object_set_new(out, "NextPageLink", json_sprintf("http://%s/azure/prices/api/"
		    "retail/prices?$filter=%s&$skip=%zu", host ? host : "127.0.0.1", enc ? enc :
		    "", i));
		curl_free(enc);
	}
	cs_reply_json(rq, 200, out);
cleanup:
	json_decref(items);
	json_decref(page);
}

/* ---- AWS: the Price List Bulk API's AmazonSageMaker offer for the fleet's HyperPod pools,
 * as https://pricing.us-east-1.amazonaws.com answers it — public, no signature: a region
 * index naming each region's current offer file, and that file (products and their
 * OnDemand terms, prices per hour as decimal strings in pricePerUnit.USD):
 * https://docs.aws.amazon.com/awsaccountbilling/latest/aboutv2/using-ppslong.html
 * https://docs.aws.amazon.com/awsaccountbilling/latest/aboutv2/reading-service-price-list-file-for-services.html
 * Each region's file also sells a notebook instance fleetd does not run on (skipped by the
 * reader) and carries a Reserved term (ignored). */

#define AWS_OFFERS	"/aws/pricing/offers/v1.0/aws/AmazonSageMaker/"
#define AWS_VERSION	"20241201000000"

static void
aws_product(json_t *products, json_t *od, const char *region, const char *type, double price,
    int n)
{
	char sku[32], term[48], rate[64], usd[32];

	snprintf(sku, sizeof(sku), "SIM%04d%.8s", n, region);
	snprintf(term, sizeof(term), "%s.JRTCKXETXF", sku);
	snprintf(rate, sizeof(rate), "%s.6YS6EN2CT7", term);
	snprintf(usd, sizeof(usd), "%.10f", price);
	json_object_set_new(products, sku, json_pack("{s:s, s:s, s:{s:s, s:s, s:s, s:s, s:s,"
	    " s:s, s:s}}", "sku", sku, "productFamily", "ML Instance", "attributes", "servicecode",
	    "AmazonSageMaker", "location", region, "regionCode", region, "instanceType", type,
	    "instanceName", type, "component", "HyperPod", "operation", "RunInstance"));
	json_object_set_new(od, sku, json_pack("{s:{s:s, s:s, s:s, s:{s:{s:s, s:s, s:s, s:{s:s},"
	    " s:[]}}, s:{}}}", term, "offerTermCode", "JRTCKXETXF", "sku", sku, "effectiveDate",
	    "2024-12-01T00:00:00Z", "priceDimensions", rate, "rateCode", rate, "description",
	    "SageMaker HyperPod instance hour", "unit", "Hrs", "pricePerUnit", "USD", usd,
	    "appliesTo", "termAttributes"));
}

void
cs_aws_prices_handle(struct cs *cs, struct cs_req *rq)
{
	const char *rest = rq->path + strlen(AWS_OFFERS);
	char region[64] = "";
	int used = 0;

	if (strcmp(rq->method, "GET") != 0 || strncmp(rq->path, AWS_OFFERS, strlen(AWS_OFFERS))
	    != 0) {
		cs_reply_error(rq, 404, "NoSuchKey", "The specified key does not exist.");
		return;
	}
	if (strcmp(rest, "current/region_index.json") == 0) {
		json_t *regions = json_object();

		for (size_t c = 0; c < cs->nclusters; c++) {
			const struct cs_cluster *k = &cs->clusters[c];

			if (k->provider == CS_HYPERPOD && json_object_get(regions, k->region) == NULL)
				json_object_set_new(regions, k->region, json_pack("{s:s, s:s++}",
				    "regionCode", k->region, "currentVersionUrl",
				    "/offers/v1.0/aws/AmazonSageMaker/" AWS_VERSION "/", k->region,
				    "/index.json"));
		}
		cs_reply_json(rq, 200, json_pack("{s:s, s:s, s:s, s:o}", "formatVersion", "v1.0",
		    "disclaimer", "cloudsim", "publicationDate", "2024-12-01T00:00:00Z", "regions",
		    regions));
		return;
	}
	if (sscanf(rest, AWS_VERSION "/%63[a-z0-9-]/index.json%n", region, &used) == 1 &&
	    rest[used] == '\0') {
		json_t *products = json_object(), *od = json_object();
		int n = 0;

		for (size_t c = 0; c < cs->nclusters; c++) {
			const struct cs_cluster *k = &cs->clusters[c];

			if (k->provider != CS_HYPERPOD || strcmp(k->region, region) != 0)
				continue;
			for (size_t p = 0; p < k->npools; p++)
				if (k->pools[p].price > 0)
					aws_product(products, od, region, k->pools[p].mt->name,
					    k->pools[p].price, n++);
		}
		if (n == 0) {
			json_decref(products);
			json_decref(od);
			cs_reply_error(rq, 404, "NoSuchKey", "The specified key does not exist.");
			return;
		}
		aws_product(products, od, region, "ml.t3.medium", 0.05, n++);
		cs_reply_json(rq, 200, json_pack("{s:s, s:s, s:s, s:s, s:s, s:o, s:{s:o, s:{}}}",
		    "formatVersion", "v1.0", "disclaimer", "cloudsim", "offerCode",
		    "AmazonSageMaker", "version", AWS_VERSION, "publicationDate",
		    "2024-12-01T00:00:00Z", "products", products, "terms", "OnDemand", od,
		    "Reserved"));
		return;
	}
	cs_reply_error(rq, 404, "NoSuchKey", "The specified key does not exist.");
}
