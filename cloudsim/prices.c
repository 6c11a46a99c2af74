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
