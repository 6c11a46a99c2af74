/* poller_rows: merges a cluster's provider pools and Kubernetes nodes into capacity rows
 * (flavor and price from the catalog) and writes them, or the failure, in one transaction. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/db.h"
#include "regions/catalog.h"
#include "regions/poller.h"
#include "regions/poller_int.h"

void
poller_appendf(char **buf, size_t *len, size_t *cap, const char *fmt, ...)
{
	va_list ap;
	int n;

	for (;;) {
		size_t room = *cap - *len;

		va_start(ap, fmt);
		n = vsnprintf(*buf ? *buf + *len : NULL, *buf ? room : 0, fmt, ap);
		va_end(ap);
		if (n < 0)
			return;
		if (*buf != NULL && (size_t)n < room) {
			*len += (size_t)n;
			return;
		}
		*cap = (*cap + (size_t)n + 1) * 2;
		*buf = realloc(*buf, *cap);
		if (*buf == NULL)
			abort();
	}
}

/* Flavor, price and per-node shape of a machine type from the catalog. */
static void
classify(const char *provider, const char *machine_type, const char *accel_type, bool spot,
    int *accel_per_node, char *flavor, size_t n, double *price)
{
	struct catalog_machine m;
	struct err e = { 0 };

	*price = 0;
	if (catalog_machine_lookup(provider, machine_type, &m, &e)) {
		snprintf(flavor, n, "%s", m.flavor);
		if (*accel_per_node <= 0)
			*accel_per_node = m.accel_per_node;
		*price = spot && m.spot_hour > 0 ? m.spot_hour : m.on_demand_hour;
		return;
	}
	if (accel_type != NULL && accel_type[0] != '\0' && *accel_per_node > 0) {
		if (snprintf(flavor, n, "%s", accel_type) >= (int)n)
			snprintf(flavor, n, "unknown");	/* no flavor name is that long */
	} else
		snprintf(flavor, n, "cpu");
}

static json_t *
pool_nodes(const struct kube_capacity *kube, const char *pool, int *count, long long free[3],
    char *tpu_topology, size_t tn, char *itype, size_t in)
{
	json_t *nodes = json_array();

	*count = 0;
	free[0] = free[1] = free[2] = 0;
	for (size_t i = 0; kube != NULL && i < kube->n; i++) {
		const struct kube_node *k = &kube->v[i];

		if (strcmp(k->pool, pool) != 0)
			continue;
		(*count)++;
		if (k->ready) {
			free[0] += kube_free_accel(k);
			free[1] += kube_free_cpu(k);
			free[2] += kube_free_mem(k);
		}
		if (k->tpu_topology[0] != '\0' && tpu_topology != NULL)
			snprintf(tpu_topology, tn, "%s", k->tpu_topology);
		if (itype != NULL && itype[0] == '\0')
			snprintf(itype, in, "%s", k->instance_type);
		json_array_append_new(nodes, json_pack("{s:s, s:s, s:s, s:I, s:I, s:I, s:b}",
		    "name", k->name, "rack", k->rack, "slice", k->slice, "free_accel",
		    (json_int_t)(k->ready ? kube_free_accel(k) : 0), "free_cpu_m",
		    (json_int_t)(k->ready ? kube_free_cpu(k) : 0), "free_mem",
		    (json_int_t)(k->ready ? kube_free_mem(k) : 0), "ready", k->ready));
	}
	return nodes;
}

static json_t *
row(const char *pool, const char *flavor, const char *machine_type, bool spot, double price,
    int accel_per_node, int nodes, int max_nodes, bool autoscaling, int quota_left,
    int reserved, const long long free[3], const char *tpu_topology, json_t *node_list)
{
	json_t *topo = json_pack("{s:o}", "nodes", node_list);

	if (tpu_topology != NULL && tpu_topology[0] != '\0')
		json_object_set_new(topo, "tpu_topology", json_string(tpu_topology));
	return json_pack("{s:s, s:s, s:s, s:b, s:f, s:i, s:i, s:i, s:b, s:o, s:i, s:I, s:I, s:I,"
	    " s:o}", "pool", pool, "flavor", flavor, "machine_type", machine_type, "spot", spot,
	    "price_hour", price, "accel_per_node", accel_per_node, "nodes", nodes, "max_nodes",
	    max_nodes, "autoscaling", autoscaling, "quota_left", quota_left < 0 ? json_null() :
	    json_integer(quota_left), "reserved", reserved, "free_accel", (json_int_t)free[0],
	    "free_cpu_m", (json_int_t)free[1], "free_mem", (json_int_t)free[2], "topology", topo);
}

json_t *
poller_rows(const char *provider, const struct prov_pools *pools,
    const struct kube_capacity *kube)
{
	json_t *rows = json_array(), *seen = json_object();
	long long free[3];
	char flavor[48], topo[24], itype[96];
	double price;
	int count;

	for (size_t i = 0; pools != NULL && i < pools->n; i++) {
		const struct prov_pool *p = &pools->v[i];
		int apn = p->accel_per_node, nodes;
		json_t *list;

		snprintf(topo, sizeof(topo), "%s", p->tpu_topology);
		list = pool_nodes(kube, p->name, &count, free, topo, sizeof(topo), NULL, 0);
		classify(provider, p->machine_type, p->accel_type, p->spot, &apn, flavor,
		    sizeof(flavor), &price);
		nodes = count > 0 ? count : p->nodes;
		json_array_append_new(rows, row(p->name, flavor, p->machine_type, p->spot, price,
		    apn, nodes, p->max_nodes > nodes ? p->max_nodes : nodes, p->autoscaling,
		    p->quota_left, p->reserved, free, topo, list));
		json_object_set_new(seen, p->name, json_true());
	}
	/* nodes of pools the provider did not describe (self-managed, or a lagging API) */
	for (size_t i = 0; kube != NULL && i < kube->n; i++) {
		const char *pool = kube->v[i].pool;
		int apn = 0;
		json_t *list;

		if (pool[0] == '\0' || json_object_get(seen, pool) != NULL)
			continue;
		itype[0] = topo[0] = '\0';
		list = pool_nodes(kube, pool, &count, free, topo, sizeof(topo), itype, sizeof(itype));
		classify(provider, itype, NULL, false, &apn, flavor, sizeof(flavor), &price);
		if (apn == 0 && kube->v[i].alloc_accel > 0)
			apn = (int)kube->v[i].alloc_accel;
		json_array_append_new(rows, row(pool, flavor, itype, false, price, apn, count, count,
		    false, -1, 0, free, topo, list));
		json_object_set_new(seen, pool, json_true());
	}
	json_decref(seen);
	return rows;
}

/* ---- writing */

struct write_arg {
	struct poller_result	*res;
	json_t			*rows;
};

static bool
write_ok(struct db *c, void *varg, struct err *e)
{
	static const char del[] = "DELETE FROM capacity WHERE cluster_id = $1::uuid";
	static const char ins[] = "INSERT INTO capacity (cluster_id, pool, flavor, machine_type,"
	    " spot, price_hour, accel_per_node, nodes, max_nodes, autoscaling, quota_left,"
	    " reserved, free_accel, free_cpu_m, free_mem, topology, observed_at)"
	    " VALUES ($1::uuid, $2, $3, $4, $5::boolean, $6::float8, $7::int, $8::int, $9::int,"
	    " $10::boolean, $11::int, $12::int, $13::int, $14::bigint, $15::bigint, $16::jsonb,"
	    " now()) ON CONFLICT (cluster_id, pool, flavor) DO NOTHING";
	static const char upd[] = "UPDATE clusters SET failures = 0, state = 'ready',"
	    " last_refresh_at = now(), last_error = NULL WHERE id = $1::uuid";
	struct write_arg *a = varg;
	const char *id = a->res->cluster_id;
	json_t *r;
	size_t i;

	if (!db_exec(c, del, 1, (const char *const[]){ id }, NULL, e))
		return false;
	a->res->rows = 0;
	json_array_foreach(a->rows, i, r) {
		char num[10][32];
		char *topo = json_dumps(json_object_get(r, "topology"), JSON_COMPACT);
		json_t *q = json_object_get(r, "quota_left");
		const char *p[16];
		bool ok;

		snprintf(num[0], 32, "%.4f", json_real_value(json_object_get(r, "price_hour")));
		snprintf(num[1], 32, "%lld", json_integer_value(json_object_get(r, "accel_per_node")));
		snprintf(num[2], 32, "%lld", json_integer_value(json_object_get(r, "nodes")));
		snprintf(num[3], 32, "%lld", json_integer_value(json_object_get(r, "max_nodes")));
		snprintf(num[4], 32, "%lld", json_integer_value(q));
		snprintf(num[5], 32, "%lld", json_integer_value(json_object_get(r, "reserved")));
		snprintf(num[6], 32, "%lld", json_integer_value(json_object_get(r, "free_accel")));
		snprintf(num[7], 32, "%lld", json_integer_value(json_object_get(r, "free_cpu_m")));
		snprintf(num[8], 32, "%lld", json_integer_value(json_object_get(r, "free_mem")));
		p[0] = id;
		p[1] = json_string_value(json_object_get(r, "pool"));
		p[2] = json_string_value(json_object_get(r, "flavor"));
		p[3] = json_string_value(json_object_get(r, "machine_type"));
		p[4] = json_is_true(json_object_get(r, "spot")) ? "true" : "false";
		p[5] = num[0];
		p[6] = num[1];
		p[7] = num[2];
		p[8] = num[3];
		p[9] = json_is_true(json_object_get(r, "autoscaling")) ? "true" : "false";
		p[10] = json_is_integer(q) ? num[4] : NULL;
		p[11] = num[5];
		p[12] = num[6];
		p[13] = num[7];
		p[14] = num[8];
		p[15] = topo;
		ok = db_exec(c, ins, 16, p, NULL, e);
		free(topo);
		if (!ok)
			return false;
		a->res->rows++;
	}
	return db_exec(c, upd, 1, (const char *const[]){ id }, NULL, e);
}

static bool
write_fail(struct db *c, void *varg, struct err *e)
{
	static const char sql[] = "UPDATE clusters SET failures = failures + 1, last_error = $2,"
	    " state = CASE WHEN failures + 1 >= $3::int THEN 'unreachable' ELSE state END"
	    " WHERE id = $1::uuid RETURNING state";
	struct write_arg *a = varg;
	char lim[16];
	PGresult *r = NULL;
	bool ok;

	snprintf(lim, sizeof(lim), "%d", POLLER_UNREACHABLE_AFTER);
	ok = db_exec(c, sql, 3, (const char *const[]){ a->res->cluster_id, a->res->error, lim },
	    &r, e);
	if (ok && PQntuples(r) == 1)
		a->res->unreachable = strcmp(db_val(r, 0, 0), "unreachable") == 0;
	PQclear(r);
	return ok;
}

bool
poller_record(struct poller_result *res, struct err *e)
{
	struct write_arg a = { res, NULL };
	bool ok;

	res->written = false;
	if (res->error[0] != '\0')
		return db_tx(write_fail, &a, e);
	a.rows = poller_rows(res->provider, res->pools, res->kube);
	ok = db_tx(write_ok, &a, e);
	json_decref(a.rows);
	res->written = ok;
	if (!ok)
		snprintf(res->error, sizeof(res->error), "capacity write failed: %s", e->msg);
	return ok;
}
