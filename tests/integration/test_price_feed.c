/* test_price_feed: list prices from the providers' public price sources (issue 27) — the
 * prices worker reads Azure's Retail Prices API (cloudsim serves it, paged one item a page,
 * for the fleet's AKS pools) for the regions of the registered AKS clouds and replaces the
 * shipped rows of the prices table; an environment's override still wins in the costs.  The
 * same worker reads the AWS Price List Bulk API's AmazonSageMaker offer (region index, then
 * the region's offer file; cloudsim serves both) for the regions of the HyperPod clouds. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/harness/harness.h"

static struct harness_fleet F;

static int
setup(void **state)
{
	(void)state;
	harness_fleet_start(&F, "prices", FLEETD_SOURCE_DIR "/tests/fixtures/fleets/prices.json",
	    "4", NULL);
	return 0;
}

static int
teardown(void **state)
{
	(void)state;
	harness_fleet_stop(&F);
	return 0;
}

static void
test_azure_prices_refresh(void **state)
{
	json_t *r;

	(void)state;
	/* the shipped row (0019) says 98.32; cloudsim's retail price is 101.5, its spot 33.25 */
	if (harness_wait_long(120, 1, "SELECT count(*) FROM prices WHERE provider = 'aks' AND"
	    " region = 'eastus' AND machine_type = 'Standard_ND96isr_H100_v5' AND NOT spot AND"
	    " price_hour = 101.5 AND source = 'https://prices.azure.com/api/retail/prices'") != 1)
		fail_msg("aks prices: %s", harness_sql_rows("SELECT machine_type, spot, price_hour,"
		    " region FROM prices WHERE provider = 'aks'"));
	harness_wait_long(60, 1, "SELECT count(*) FROM prices WHERE provider = 'aks' AND"
	    " region = 'eastus' AND machine_type = 'Standard_ND96isr_H100_v5' AND spot AND"
	    " price_hour = 33.25");
	if (harness_sql_long("SELECT count(*) FROM prices WHERE provider = 'aks' AND"
	    " machine_type = 'Standard_D16s_v5' AND region = 'eastus' AND price_hour = 0.81") != 1)
		fail_msg("aks prices: %s", harness_sql_rows("SELECT machine_type, spot, price_hour,"
		    " region FROM prices WHERE provider = 'aks'"));
	/* the shipped rows of other providers stay (the fallback) */
	assert_int_equal(harness_sql_long("SELECT count(*) FROM prices WHERE provider = 'gke' AND"
	    " machine_type = 'a3-highgpu-8g' AND price_hour = 88.49"), 1);
	/* GET /v1/prices lists the refreshed list price */
	r = harness_get_ok(F.admin, "/v1/prices");
	assert_non_null(strstr(harness_r.body, "101.5"));
	(void)r;
	/* cloudsim's API refuses what the real one refuses */
	assert_int_equal(harness_sim(&F.cs, "GET", "/azure/prices/api/retail/prices?$filter="
	    "meterName%20ne%20'x'", NULL, NULL), 400);
}

static void
test_aws_prices_refresh(void **state)
{
	json_t *j = NULL;

	(void)state;
	/* the shipped row (0019) says 98.32; cloudsim's SageMaker offer for us-west-2 sells the
	 * HyperPod p5 pool at 55.04 an hour, read from the Price List Bulk API's region index
	 * and that region's offer file */
	if (harness_wait_long(120, 1, "SELECT count(*) FROM prices WHERE provider = 'hyperpod'"
	    " AND region = 'us-west-2' AND machine_type = 'ml.p5.48xlarge' AND NOT spot AND"
	    " price_hour = 55.04 AND source = 'https://pricing.us-east-1.amazonaws.com/offers/"
	    "v1.0/aws/AmazonSageMaker'") != 1)
		fail_msg("hyperpod prices: %s", harness_sql_rows("SELECT machine_type, spot,"
		    " price_hour, region, source FROM prices WHERE provider = 'hyperpod'"));
	/* the offer's instance types fleetd's catalog does not know (the controller's
	 * ml.m5.4xlarge, a notebook's ml.t3.medium) are skipped: the shipped row stays */
	assert_int_equal(harness_sql_long("SELECT count(*) FROM prices WHERE provider ="
	    " 'hyperpod' AND region = 'us-west-2' AND machine_type = 'ml.m5.4xlarge' AND"
	    " price_hour = 0.92"), 1);
	assert_int_equal(harness_sql_long("SELECT count(*) FROM prices WHERE machine_type ="
	    " 'ml.t3.medium'"), 0);
	/* a region the offer is not read for keeps its shipped row */
	assert_int_equal(harness_sql_long("SELECT count(*) FROM prices WHERE provider ="
	    " 'hyperpod' AND region = 'us-east-1' AND machine_type = 'ml.p5.48xlarge' AND"
	    " price_hour = 98.32"), 1);
	/* cloudsim serves the documented shapes, and 404s a region it does not sell in */
	assert_int_equal(harness_sim(&F.cs, "GET", "/aws/pricing/offers/v1.0/aws/AmazonSageMaker/"
	    "current/region_index.json", NULL, &j), 200);
	assert_string_equal(json_string_value(json_object_get(json_object_get(json_object_get(j,
	    "regions"), "us-west-2"), "currentVersionUrl")),
	    "/offers/v1.0/aws/AmazonSageMaker/20241201000000/us-west-2/index.json");
	json_decref(j);
	assert_int_equal(harness_sim(&F.cs, "GET", "/aws/pricing/offers/v1.0/aws/AmazonSageMaker/"
	    "20241201000000/eu-west-9/index.json", NULL, NULL), 404);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_azure_prices_refresh),
		cmocka_unit_test(test_aws_prices_refresh),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
