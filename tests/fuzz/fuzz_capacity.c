/* fuzz_capacity: the capacity search (POST /v1/capacity/search) without a database — the
 * request validator on any body, then the ranking over a fuzzed fleet whose figures are
 * clamped to what a sane snapshot holds.  {"request": {...}, "fleet": [cluster...]}. */
#include "core/jsonx.h"
#include "regions/capacity_int.h"
#include "tests/fuzz/fuzz.h"

#define MAX_CLUSTERS	8
#define MAX_ROWS	8

static long long
clamp(json_t *v, long long lo, long long hi)
{
	long long x = json_integer_value(v);

	return x < lo ? lo : x > hi ? hi : x;
}

static void
copy(char *dst, size_t n, json_t *v, const char *dflt)
{
	snprintf(dst, n, "%s", json_is_string(v) ? json_string_value(v) : dflt);
}

/* Fills v from the fuzzed fleet; topology objects are borrowed references made owned. */
static size_t
fleet(json_t *arr, struct cap_cluster *v, struct cap_row rows[][MAX_ROWS])
{
	size_t n = 0, i, k;
	json_t *c, *r;

	json_array_foreach(arr, i, c) {
		struct cap_cluster *cl = &v[n];

		if (n == MAX_CLUSTERS || !json_is_object(c))
			break;
		memset(cl, 0, sizeof(*cl));
		copy(cl->id, sizeof(cl->id), json_object_get(c, "id"), "00000000-0000-0000-0000-0");
		copy(cl->name, sizeof(cl->name), json_object_get(c, "name"), "c");
		copy(cl->region, sizeof(cl->region), json_object_get(c, "region"), "us-east1");
		copy(cl->provider, sizeof(cl->provider), json_object_get(c, "provider"), "gke");
		cl->unreachable = json_is_true(json_object_get(c, "unreachable"));
		cl->cordoned = json_is_true(json_object_get(c, "cordoned"));
		cl->rows = rows[n];
		json_array_foreach(json_object_get(c, "rows"), k, r) {
			struct cap_row *w = &rows[n][cl->nrows];

			if (cl->nrows == MAX_ROWS)
				break;
			memset(w, 0, sizeof(*w));
			copy(w->pool, sizeof(w->pool), json_object_get(r, "pool"), "p");
			copy(w->flavor, sizeof(w->flavor), json_object_get(r, "flavor"),
			    "nvidia-h100-80gb");
			copy(w->machine_type, sizeof(w->machine_type),
			    json_object_get(r, "machine_type"), "m");
			w->spot = json_is_true(json_object_get(r, "spot"));
			w->price_hour = (double)clamp(json_object_get(r, "price_hour"), 0, 10000);
			w->accel_per_node = (int)clamp(json_object_get(r, "accel_per_node"), 0, 64);
			w->nodes = (int)clamp(json_object_get(r, "nodes"), 0, 100000);
			w->max_nodes = (int)clamp(json_object_get(r, "max_nodes"), 0, 100000);
			w->autoscaling = json_is_true(json_object_get(r, "autoscaling"));
			w->quota_left = (int)clamp(json_object_get(r, "quota_left"), -1, 10000000);
			w->free_accel = (int)clamp(json_object_get(r, "free_accel"), 0, 6400000);
			w->topology = json_incref(json_object_get(r, "topology"));
			w->age_s = (double)clamp(json_object_get(r, "age_s"), 0, 100000);
			cl->nrows++;
		}
		n++;
	}
	return n;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct cap_row rows[MAX_CLUSTERS][MAX_ROWS];
	struct cap_cluster v[MAX_CLUSTERS];
	struct capacity_req q;
	struct err e = { 0 };
	json_t *j = jsonx_parse_object((const char *)data, size, &e), *out, *c;
	size_t n, i;
	int rank = 0;

	if (j == NULL)
		return 0;
	if (!capacity_request_parse(json_object_get(j, "request"), &q, &e)) {
		FUZZ_CHECK(e.status == 400 && e.code[0] != '\0', "refusal %d %s", e.status, e.code);
		json_decref(j);
		return 0;
	}
	FUZZ_CHECK(q.count >= 1 && q.count <= 1000000 && q.per_node >= 0 &&
	    q.per_node <= q.count && catalog_flavor_valid(q.flavor), "accepted request");
	n = fleet(json_object_get(j, "fleet"), v, rows);
	out = capacity_rank(&q, v, n);
	FUZZ_CHECK(json_is_object(out) && json_is_array(json_object_get(out, "candidates")),
	    "rank answer");
	json_array_foreach(json_object_get(out, "candidates"), i, c) {
		FUZZ_CHECK(json_integer_value(json_object_get(c, "rank")) == ++rank, "rank order");
		FUZZ_CHECK(json_integer_value(json_object_get(c, "free")) >= 0, "negative free");
	}
	json_decref(out);
	for (size_t a = 0; a < n; a++)
		for (size_t b = 0; b < v[a].nrows; b++)
			json_decref(v[a].rows[b].topology);
	json_decref(j);
	return 0;
}
