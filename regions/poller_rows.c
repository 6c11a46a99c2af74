/* poller_rows: merges a cluster's provider pools and Kubernetes nodes into capacity rows
 * (flavor and price from the catalog) and writes them, or the failure, in one transaction. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/db.h"
#include "regions/catalog.h"
#include "regions/poller.h"
#include "regions/lease.h"
#include "regions/poller_int.h"

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

/* The node a pool would add, for a pool with no node yet (issue 27: a GKE flex-start pool
 * with queued provisioning has none until a ProvisioningRequest is provisioned, and the
 * scheduler needs a node's shape to place on its growth).  From the machine type the
 * provider's API names and the catalog's vCPUs and memory, less what GKE reserves for
 * the system and the eviction threshold
 * (https://cloud.google.com/kubernetes-engine/docs/concepts/plan-node-sizes#memory_and_cpu_reservations):
 * memory 25 % of the first 4 GiB, 20 % of the next 4, 10 % of the next 8, 6 % of the next
 * 112, 2 % above 128 GiB, plus 100 MiB; CPU 6 % of the first core, 1 % of the next, 0.5 %
 * of the next 2, 0.25 % of every core above 4.  NULL when the catalog does not know the
 * machine type.  Only an estimate: once a node registers, its allocatable is used. */
json_t *
poller_node_template(const char *provider, const char *machine_type, int accel_per_node)
{
	static const struct { double upto_gib, share; } mem[] = {
		{ 4, 0.25 }, { 8, 0.20 }, { 16, 0.10 }, { 128, 0.06 }, { 1e12, 0.02 },
	};
	static const struct { double upto, share; } cpu[] = {
		{ 1, 0.06 }, { 2, 0.01 }, { 4, 0.005 }, { 1e12, 0.0025 },
	};
	struct catalog_machine m;
	struct err e = { 0 };
	double gib, reserved_gib = 0, cores, reserved_cores = 0, below = 0;
	long long mem_b, cpu_m;

	if (!catalog_machine_lookup(provider, machine_type, &m, &e) || m.vcpus <= 0 ||
	    m.memory_gib <= 0)
		return NULL;
	gib = m.memory_gib;
	for (size_t i = 0; i < sizeof(mem) / sizeof(mem[0]) && gib > below; i++) {
		reserved_gib += ((gib < mem[i].upto_gib ? gib : mem[i].upto_gib) - below) *
		    mem[i].share;
		below = mem[i].upto_gib;
	}
	cores = m.vcpus;
	below = 0;
	for (size_t i = 0; i < sizeof(cpu) / sizeof(cpu[0]) && cores > below; i++) {
		reserved_cores += ((cores < cpu[i].upto ? cores : cpu[i].upto) - below) *
		    cpu[i].share;
		below = cpu[i].upto;
	}
	mem_b = (long long)((gib - reserved_gib) * 1024.0 * 1024.0 * 1024.0) -
	    100LL * 1024 * 1024;
	cpu_m = (long long)(cores * 1000.0) - (long long)(reserved_cores * 1000.0 + 0.999);
	if (mem_b <= 0 || cpu_m <= 0)
		return NULL;
	return json_pack("{s:I, s:I, s:I, s:s}", "alloc_accel", (json_int_t)(accel_per_node > 0 ?
	    accel_per_node : m.accel_per_node), "alloc_cpu_m", (json_int_t)cpu_m, "alloc_mem",
	    (json_int_t)mem_b, "source", "catalog");
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
		json_array_append_new(nodes, json_pack("{s:s, s:s, s:s, s:I, s:I, s:I, s:b, s:I,"
		    " s:I, s:I}",
		    "name", k->name, "rack", k->rack, "slice", k->slice, "free_accel",
		    (json_int_t)(k->ready ? kube_free_accel(k) : 0), "free_cpu_m",
		    (json_int_t)(k->ready ? kube_free_cpu(k) : 0), "free_mem",
		    (json_int_t)(k->ready ? kube_free_mem(k) : 0), "ready", k->ready,
		    "alloc_accel", (json_int_t)k->alloc_accel, "alloc_cpu_m",
		    (json_int_t)k->alloc_cpu_m, "alloc_mem", (json_int_t)k->alloc_mem));
		/* the TPU slice shape of the node (the scheduler matches a slice job's shape) */
		if (k->tpu_topology[0] != '\0')
			json_object_set_new(json_array_get(nodes, json_array_size(nodes) - 1), "shape",
			    json_string(k->tpu_topology));
		/* GKE dynamic slicing: the node's partition of each sub-slice shape (the
		 * scheduler carves a slice job's shape out of a reserved sub-block) */
		for (int ps = 0; ps < KUBE_TPU_PARTS; ps++) {
			json_t *nd = json_array_get(nodes, json_array_size(nodes) - 1), *pt;

			if (k->parts[ps][0] == '\0')
				continue;
			if ((pt = json_object_get(nd, "partitions")) == NULL) {
				pt = json_object();
				json_object_set_new(nd, "partitions", pt);
			}
			json_object_set_new(pt, kube_tpu_part_shapes[ps], json_string(k->parts[ps]));
		}
		/* the scale unit (InfiniBand block) holding the rack: topology pack */
		if (k->block[0] != '\0')
			json_object_set_new(json_array_get(nodes, json_array_size(nodes) - 1), "block",
			    json_string(k->block));
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
		json_t *rw = row(p->name, flavor, p->machine_type, p->spot, price,
		    apn, nodes, p->max_nodes > nodes ? p->max_nodes : nodes, p->autoscaling,
		    p->quota_left, p->reserved, free, topo, list);

		json_object_set_new(rw, "capacity_type", json_string(p->spot ? "spot" :
		    p->capacity_type[0] ? p->capacity_type : "on_demand"));
		/* a flex-start pool with no node: its shape from the machine type */
		if (count == 0 && strcmp(p->capacity_type, "flex_start") == 0) {
			json_t *t = poller_node_template(provider, p->machine_type, apn);

			if (t != NULL)
				json_object_set_new(json_object_get(rw, "topology"),
				    "node_template", t);
		}
		json_array_append_new(rows, rw);
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

/* One statement per cluster (one round trip): upsert the rows, delete the cluster's rows
 * that are gone, mark the cluster ready.  observed_at is when the fetch began, not now: a
 * job whose pods came up while the fetch ran is not in these rows, and the loader must go
 * on counting it (queue/sched/loader.c compares observed_at with the job's started_at).  The first row of a (pool, flavor) wins, as
 * before.  Its own transaction, atomic like the multi-statement one it replaces. */
static bool
write_ok(struct db *c, void *varg, struct err *e)
{
	static const char sql[] =
	    "WITH r AS (SELECT DISTINCT ON (x->>'pool', x->>'flavor') x"
	    "  FROM jsonb_array_elements($2::jsonb) WITH ORDINALITY AS t(x, o)"
	    "  ORDER BY x->>'pool', x->>'flavor', o),"
	    " ins AS (INSERT INTO capacity (cluster_id, pool, flavor, machine_type, spot,"
	    "  price_hour, accel_per_node, nodes, max_nodes, autoscaling, quota_left, reserved,"
	    "  free_accel, free_cpu_m, free_mem, topology, observed_at, capacity_type)"
	    "  SELECT $1::uuid, x->>'pool', x->>'flavor', x->>'machine_type', (x->>'spot')::boolean,"
	    "  round((x->>'price_hour')::numeric, 4)::float8, (x->>'accel_per_node')::int,"
	    "  (x->>'nodes')::int, (x->>'max_nodes')::int, (x->>'autoscaling')::boolean,"
	    "  (x->>'quota_left')::int, (x->>'reserved')::int, (x->>'free_accel')::int,"
	    "  (x->>'free_cpu_m')::bigint, (x->>'free_mem')::bigint, x->'topology', now() - make_interval(secs => $3::float8),"
	    "  coalesce(x->>'capacity_type', CASE WHEN (x->>'spot')::boolean THEN 'spot'"
	    "  ELSE 'on_demand' END) FROM r"
	    "  ON CONFLICT (cluster_id, pool, flavor) DO UPDATE SET machine_type ="
	    "  excluded.machine_type, spot = excluded.spot, price_hour = excluded.price_hour,"
	    "  accel_per_node = excluded.accel_per_node, nodes = excluded.nodes, max_nodes ="
	    "  excluded.max_nodes, autoscaling = excluded.autoscaling, quota_left ="
	    "  excluded.quota_left, reserved = excluded.reserved, free_accel = excluded.free_accel,"
	    "  free_cpu_m = excluded.free_cpu_m, free_mem = excluded.free_mem, topology ="
	    "  excluded.topology, observed_at = excluded.observed_at,"
	    "  capacity_type = excluded.capacity_type RETURNING 1),"
	    " del AS (DELETE FROM capacity k WHERE k.cluster_id = $1::uuid AND NOT EXISTS"
	    "  (SELECT 1 FROM r WHERE r.x->>'pool' = k.pool AND r.x->>'flavor' = k.flavor))"
	    " UPDATE clusters SET failures = 0, state = 'ready', last_refresh_at = now(),"
	    " failing_since = NULL,"
	    " last_error = NULL WHERE id = $1::uuid RETURNING (SELECT count(*) FROM ins)";
	struct write_arg *a = varg;
	char *rows = json_dumps(a->rows, JSON_COMPACT), age[32];
	PGresult *r = NULL;
	bool ok;

	if (rows == NULL)
		return err_set(e, 500, "poller.oom", "out of memory");
	if (a->res->fenced && !lease_fence(c, a->res->cluster_id, e)) {
		free(rows);
		return false;
	}
	snprintf(age, sizeof(age), "%.3f", a->res->age_s > 0 ? a->res->age_s : 0);
	ok = db_exec(c, sql, 3, (const char *const[]){ a->res->cluster_id, rows, age }, &r, e);
	a->res->rows = ok && PQntuples(r) == 1 ? atoi(db_val(r, 0, 0)) : 0;
	PQclear(r);
	free(rows);
	return ok;
}

static bool
write_fail(struct db *c, void *varg, struct err *e)
{
	static const char sql[] = "UPDATE clusters SET failures = failures + 1, last_error = $2,"
	    " failing_since = coalesce(failing_since, now()),"
	    " state = CASE WHEN failures + 1 >= $3::int THEN 'unreachable' ELSE state END"
	    " WHERE id = $1::uuid RETURNING state";
	struct write_arg *a = varg;
	char lim[16];
	PGresult *r = NULL;
	bool ok;

	if (a->res->fenced && !lease_fence(c, a->res->cluster_id, e))
		return false;
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
