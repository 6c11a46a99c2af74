/* capacity: the aggregate of GET /v1/capacity and the request side of the capacity search
 * (validation, loading one environment's snapshots); the fit itself is capacity_fit.c. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/arena.h"
#include "core/config.h"
#include "core/jsonx.h"
#include "regions/capacity.h"
#include "regions/capacity_int.h"
#include "regions/catalog.h"

static int
max_age(void)
{
	return cfg.snapshot_max_age_s > 0 ? cfg.snapshot_max_age_s : 120;
}

/* Answers of GET /v1/capacity, by filter: valid while the server's snapshot is the one
 * they were read after (nothing committed since: pg_current_snapshot() is the same) and
 * within the same second of now() (the answer's freshness and ages are in seconds).
 * Aggregating every capacity row took 3-14 ms a call (bench/api.sh: p99 194 ms at 32
 * connections); a hit is one trivial statement. */
#define SUMMARY_SLOTS	16

static struct {
	pthread_mutex_t	 mu;
	struct {
		char	*key, *snap, *text;
		long long sec;
		size_t	 len;
	} e[SUMMARY_SLOTS];
	unsigned	 next;
} summaries = { .mu = PTHREAD_MUTEX_INITIALIZER };

static char *
summary_key(const struct capacity_filter *f, const char *envs, const char *age)
{
	const char *parts[6] = { f->environment, f->region, f->provider, f->flavor, envs, age };
	size_t len = 1;
	char *k;

	for (int i = 0; i < 6; i++)
		len += (parts[i] ? strlen(parts[i]) : 0) + 2;
	if ((k = malloc(len)) == NULL)
		abort();
	k[0] = '\0';
	for (int i = 0; i < 6; i++) {
		strcat(k, parts[i] ? "=" : "-");	/* NULL and "" differ */
		if (parts[i] != NULL)
			strcat(k, parts[i]);
		strcat(k, "\x1f");
	}
	return k;
}

/* A copy of the cached answer in a (NULL: none). */
static char *
summary_hit(const char *key, const char *snap, long long sec, struct arena *a, size_t *len)
{
	char *out = NULL;

	pthread_mutex_lock(&summaries.mu);
	for (int i = 0; i < SUMMARY_SLOTS && out == NULL; i++)
		if (summaries.e[i].key != NULL && summaries.e[i].sec == sec &&
		    strcmp(summaries.e[i].key, key) == 0 && strcmp(summaries.e[i].snap, snap) == 0) {
			*len = summaries.e[i].len;
			out = arena_alloc(a, *len + 1);
			memcpy(out, summaries.e[i].text, *len + 1);
		}
	pthread_mutex_unlock(&summaries.mu);
	return out;
}

static void
summary_keep(const char *key, const char *snap, long long sec, const char *text, size_t len)
{
	int i;

	pthread_mutex_lock(&summaries.mu);
	for (i = 0; i < SUMMARY_SLOTS; i++)
		if (summaries.e[i].key != NULL && strcmp(summaries.e[i].key, key) == 0)
			break;
	if (i == SUMMARY_SLOTS)
		i = (int)(summaries.next++ % SUMMARY_SLOTS);
	free(summaries.e[i].key);
	free(summaries.e[i].snap);
	free(summaries.e[i].text);
	summaries.e[i].key = strdup(key);
	summaries.e[i].snap = strdup(snap);
	summaries.e[i].text = strdup(text);
	summaries.e[i].sec = sec;
	summaries.e[i].len = len;
	if (summaries.e[i].key == NULL || summaries.e[i].snap == NULL || summaries.e[i].text == NULL)
		abort();
	pthread_mutex_unlock(&summaries.mu);
}

bool
capacity_summary_text(struct db *c, const struct capacity_filter *f, struct arena *a,
    char **out, size_t *len, struct err *e)
{
	static const char sql_snap[] =
	    "SELECT pg_current_snapshot()::text, floor(extract(epoch FROM now()))::bigint";
	static const char sql[] =
	    "SELECT json_build_object('items', coalesce(json_agg(row_to_json(t) ORDER BY"
	    " t.environment, t.region, t.provider, t.flavor, t.capacity_type), '[]'),"
	    " 'snapshot_max_age_s', $6::int)::text FROM ("
	    " SELECT cl.environment, cl.region, cl.provider, cap.flavor,"
	    "  cap.capacity_type,"
	    "  count(DISTINCT k.id) AS clusters, sum(cap.nodes)::int AS nodes,"
	    "  sum(cap.nodes * cap.accel_per_node)::int AS total,"
	    "  coalesce(sum(cap.free_accel) FILTER (WHERE cap.observed_at > now() -"
	    "   make_interval(secs => $6::int) AND k.state = 'ready' AND NOT k.cordoned), 0)::int"
	    "   AS free_now,"
	    "  sum(greatest(cap.max_nodes - cap.nodes, 0) * cap.accel_per_node)::int AS growable,"
	    "  max(cap.quota_left) AS quota_left,"
	    "  count(DISTINCT k.id) FILTER (WHERE cap.observed_at > now() -"
	    "   make_interval(secs => $6::int)) AS fresh_clusters,"
	    "  count(DISTINCT k.id) FILTER (WHERE cap.observed_at <= now() -"
	    "   make_interval(secs => $6::int)) AS stale_clusters,"
	    "  min(cap.observed_at) AS oldest_observed_at,"
	    "  max(cap.observed_at) AS newest_observed_at,"
	    "  round(extract(epoch FROM now() - min(cap.observed_at)))::int AS max_age_s"
	    " FROM capacity cap JOIN clusters k ON k.id = cap.cluster_id"
	    " JOIN clouds cl ON cl.id = k.cloud_id"
	    " WHERE ($1::text IS NULL OR cl.environment = $1)"
	    "  AND ($2::text IS NULL OR cl.region = $2)"
	    "  AND ($3::text IS NULL OR cl.provider = $3)"
	    "  AND ($4::text IS NULL OR cap.flavor = $4)"
	    "  AND ($5::text[] IS NULL OR cl.environment = ANY($5::text[]))"
	    " GROUP BY cl.environment, cl.region, cl.provider, cap.flavor, cap.capacity_type) t";
	char *envs = db_scope_array(f->envs, f->nenvs), age[16], *key = NULL, *snap = NULL;
	PGresult *r = NULL;
	long long sec = 0;
	bool ok = false;

	snprintf(age, sizeof(age), "%d", max_age());
	key = summary_key(f, envs, age);
	/* Read before the aggregate: a commit in between makes the stored snapshot one that
	 * no later request can have, so that entry is never hit (never stale). */
	if (!db_exec(c, sql_snap, 0, NULL, &r, e))
		goto cleanup;
	if ((snap = strdup(db_val(r, 0, 0))) == NULL)
		abort();
	sec = strtoll(db_val(r, 0, 1), NULL, 10);
	PQclear(r);
	r = NULL;
	if ((*out = summary_hit(key, snap, sec, a, len)) != NULL) {
		ok = true;
		goto cleanup;
	}
	if (!db_exec(c, sql, 6, (const char *const[]){ f->environment, f->region, f->provider,
	    f->flavor, envs, age }, &r, e))
		goto cleanup;
	*len = strlen(db_val(r, 0, 0));
	*out = arena_alloc(a, *len + 1);
	memcpy(*out, db_val(r, 0, 0), *len + 1);
	summary_keep(key, snap, sec, *out, *len);
	ok = true;
cleanup:
	free(envs);
	free(key);
	free(snap);
	PQclear(r);
	return ok;
}

bool
capacity_summary(struct db *c, const struct capacity_filter *f, json_t **out, struct err *e)
{
	struct arena *a = arena_new();
	size_t len = 0;
	char *text = NULL;
	bool ok = false;

	if (!capacity_summary_text(c, f, a, &text, &len, e))
		goto cleanup;
	if ((*out = json_loadb(text, len, 0, NULL)) == NULL) {
		err_set(e, 500, "capacity.bad_row", "capacity aggregate unreadable");
		goto cleanup;
	}
	ok = true;
cleanup:
	arena_free(a);
	return ok;
}

/* ---- search: request */

static bool
string_list(json_t *req, const char *key, bool (*valid)(const char *), const char *code,
    const char *what, json_t **out, struct err *e)
{
	json_t *v = json_object_get(req, key), *s;
	size_t i;

	*out = NULL;
	if (v == NULL || json_is_null(v))
		return true;
	if (!json_is_array(v) || json_array_size(v) == 0)
		return err_field(e, 400, "api.wrong_type", key[0] == 'r' ? "/regions" : "/providers",
		    "%s must be a non-empty array of strings", key);
	json_array_foreach(v, i, s) {
		char ptr[64];

		snprintf(ptr, sizeof(ptr), "/%s/%zu", key, i);
		if (!json_is_string(s))
			return err_field(e, 400, "api.wrong_type", ptr, "%s must be strings", key);
		if (!valid(json_string_value(s))) {
			err_field(e, 400, code, ptr, "unknown %s %.64s", what, json_string_value(s));
			return false;
		}
	}
	*out = v;
	return true;
}

static bool
region_known(const char *r)
{
	return catalog_region_valid("gke", r) || catalog_region_valid("aks", r) ||
	    catalog_region_valid("hyperpod", r);
}

bool
capacity_request_parse(const json_t *request, struct capacity_req *q, struct err *e)
{
	static const char *const allowed[] = { "environment", "flavor", "count", "per_node",
	    "topology", "slice_topology", "regions", "providers", "spot", "max_price", NULL };
	json_t *req = (json_t *)request;
	long long count = 0, per = 0;
	const char *topo = "none", *slice = NULL;
	double price = 0;
	bool spot = false;

	memset(q, 0, sizeof(*q));
	if (!json_is_object(req))
		return err_set(e, 400, "api.not_object", "body must be a json object");
	if (!jsonx_only(req, allowed, "", e) ||
	    !jsonx_str(req, "environment", "", true, &q->environment, e) ||
	    !jsonx_str(req, "flavor", "", true, &q->flavor, e) ||
	    !jsonx_int(req, "count", "", true, &count, e) ||
	    !jsonx_int(req, "per_node", "", false, &per, e) ||
	    !jsonx_str(req, "topology", "", false, &topo, e) ||
	    !jsonx_str(req, "slice_topology", "", false, &slice, e) ||
	    !jsonx_num(req, "max_price", "", false, &price, e))
		return false;
	if (json_object_get(req, "spot") != NULL && !json_is_null(json_object_get(req, "spot"))) {
		if (!jsonx_bool(req, "spot", "", false, &spot, e))
			return false;
		q->spot = spot ? 1 : 0;
	} else {
		q->spot = -1;
	}
	if (!catalog_flavor_check(q->flavor, "/flavor", e))
		return false;
	if (count <= 0 || count > 1000000)
		return err_field(e, 400, "capacity.bad_count", "/count",
		    "count must be between 1 and 1000000");
	if (json_object_get(req, "per_node") != NULL && (per <= 0 || per > count))
		return err_field(e, 400, "capacity.bad_per_node", "/per_node",
		    "per_node must be between 1 and count");
	if (json_object_get(req, "max_price") != NULL && !(price > 0))
		return err_field(e, 400, "capacity.bad_max_price", "/max_price",
		    "max_price must be a positive number (USD per accelerator-hour)");
	q->count = (int)count;
	q->per_node = (int)per;
	q->max_price = price;
	if (strcmp(topo, "none") == 0) {
		q->topology = CAP_TOPO_NONE;
	} else if (strcmp(topo, "host") == 0) {
		q->topology = CAP_TOPO_HOST;
	} else if (strcmp(topo, "rack") == 0) {
		q->topology = CAP_TOPO_RACK;
	} else if (strcmp(topo, "slice") == 0) {
		q->topology = CAP_TOPO_SLICE;
	} else if (strcmp(topo, "pack") == 0) {
		q->topology = CAP_TOPO_PACK;
	} else {
		return err_field(e, 400, "capacity.bad_topology", "/topology",
		    "topology must be none, host, rack, pack or slice");
	}
	if (q->topology == CAP_TOPO_SLICE) {
		if (slice == NULL)
			return err_field(e, 400, "capacity.bad_slice", "/slice_topology",
			    "slice topology needs slice_topology, for example 2x2x4");
		if (!catalog_slice_parse(q->flavor, slice, "/slice_topology", &q->slice, e))
			return false;
		if (q->count != q->slice.chips)
			return err_field(e, 400, "capacity.bad_count", "/count",
			    "count must equal the chips of the slice (%d)", q->slice.chips);
		q->slice_topology = slice;
	} else if (slice != NULL) {
		return err_field(e, 400, "capacity.bad_slice", "/slice_topology",
		    "slice_topology is only valid with topology slice");
	}
	if (!string_list(req, "regions", region_known, "capacity.unknown_region", "region",
	    &q->regions, e) ||
	    !string_list(req, "providers", catalog_provider_valid, "capacity.unknown_provider",
	    "provider", &q->providers, e))
		return false;
	return true;
}

/* ---- search: load and answer */

static bool
env_exists(struct db *c, const char *env, struct err *e)
{
	static const char sql[] = "SELECT 1 FROM environments WHERE name = $1";
	PGresult *r = NULL;
	bool ok;

	if (!db_exec(c, sql, 1, (const char *const[]){ env }, &r, e))
		return false;
	ok = PQntuples(r) == 1;
	PQclear(r);
	if (!ok)
		return err_set(e, 404, "env.not_found", "environment %.64s not found", env);
	return true;
}

static bool
load(struct db *c, const char *env, struct cap_cluster **out, size_t *n, struct err *e)
{
	static const char sql[] =
	    "SELECT k.id, k.name, cl.region, cl.provider, k.state, k.cordoned, cap.pool,"
	    " cap.flavor, cap.machine_type, cap.spot, cap.price_hour, cap.accel_per_node,"
	    " cap.nodes, cap.max_nodes, cap.autoscaling, cap.quota_left, cap.free_accel,"
	    " cap.topology::text, extract(epoch FROM now() - cap.observed_at)"
	    " FROM clusters k JOIN clouds cl ON cl.id = k.cloud_id"
	    " LEFT JOIN capacity cap ON cap.cluster_id = k.id"
	    " WHERE cl.environment = $1 ORDER BY k.name, k.id, cap.pool, cap.flavor";
	PGresult *r = NULL;
	struct cap_cluster *v = NULL, *cur = NULL;
	size_t cnt = 0;
	int rows;

	if (!db_exec(c, sql, 1, (const char *const[]){ env }, &r, e))
		return false;
	rows = PQntuples(r);
	v = calloc(rows ? (size_t)rows : 1, sizeof(*v));
	if (v == NULL)
		abort();
	for (int i = 0; i < rows; i++) {
		struct cap_row *row;

		if (cur == NULL || strcmp(cur->id, db_val(r, i, 0)) != 0) {
			cur = &v[cnt++];
			snprintf(cur->id, sizeof(cur->id), "%s", db_val(r, i, 0));
			snprintf(cur->name, sizeof(cur->name), "%s", db_val(r, i, 1));
			snprintf(cur->region, sizeof(cur->region), "%s", db_val(r, i, 2));
			snprintf(cur->provider, sizeof(cur->provider), "%s", db_val(r, i, 3));
			cur->unreachable = strcmp(db_val(r, i, 4), "unreachable") == 0;
			cur->cordoned = strcmp(db_val(r, i, 5), "t") == 0;
		}
		if (db_val(r, i, 6) == NULL)
			continue;	/* never refreshed */
		cur->rows = realloc(cur->rows, (cur->nrows + 1) * sizeof(*cur->rows));
		if (cur->rows == NULL)
			abort();
		row = &cur->rows[cur->nrows++];
		memset(row, 0, sizeof(*row));
		snprintf(row->pool, sizeof(row->pool), "%s", db_val(r, i, 6));
		snprintf(row->flavor, sizeof(row->flavor), "%s", db_val(r, i, 7));
		snprintf(row->machine_type, sizeof(row->machine_type), "%s", db_val(r, i, 8));
		row->spot = strcmp(db_val(r, i, 9), "t") == 0;
		row->price_hour = atof(db_val(r, i, 10));
		row->accel_per_node = atoi(db_val(r, i, 11));
		row->nodes = atoi(db_val(r, i, 12));
		row->max_nodes = atoi(db_val(r, i, 13));
		row->autoscaling = strcmp(db_val(r, i, 14), "t") == 0;
		row->quota_left = db_val(r, i, 15) ? atoi(db_val(r, i, 15)) : -1;
		row->free_accel = atoi(db_val(r, i, 16));
		row->topology = json_loads(db_val(r, i, 17), 0, NULL);
		row->age_s = atof(db_val(r, i, 18));
	}
	PQclear(r);
	*out = v;
	*n = cnt;
	return true;
}

static void
clusters_free(struct cap_cluster *v, size_t n)
{
	for (size_t i = 0; v != NULL && i < n; i++) {
		for (size_t k = 0; k < v[i].nrows; k++)
			json_decref(v[i].rows[k].topology);
		free(v[i].rows);
	}
	free(v);
}

bool
capacity_search(struct db *c, const json_t *request, json_t **out, struct err *e)
{
	struct capacity_req q;
	struct cap_cluster *v = NULL;
	size_t n = 0;
	bool ok = false;

	*out = NULL;
	if (!capacity_request_parse(request, &q, e) || !env_exists(c, q.environment, e) ||
	    !load(c, q.environment, &v, &n, e))
		goto cleanup;
	q.max_age_s = max_age();
	*out = capacity_rank(&q, v, n);
	json_object_set(*out, "request", (json_t *)request);
	ok = true;
cleanup:
	clusters_free(v, n);
	return ok;
}
