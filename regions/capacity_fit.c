/* capacity_fit: the pure part of the capacity search — filters each cluster with a reason,
 * fits the request into free nodes, racks or TPU slices (or after a scale-up), ranks the
 * candidates by fit, price and fragmentation, and says why. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "regions/capacity_int.h"

struct cand {
	const struct cap_cluster	*cl;
	const struct cap_row		*row;
	bool				 now;		/* fits free capacity now */
	int				 free;		/* in the chosen group */
	int				 leftover;	/* free left in the group after placing */
	char				 group[160];	/* rack, slice, node or scale unit (pack);
							 * "" for the pool */
	char				 racks[2048];	/* pack: the racks chosen, comma-separated */
	int				 nracks;	/* pack: how many */
	double				 ppa;		/* price per accelerator-hour */
	char				 why[400];
};

static bool
in_list(json_t *list, const char *s)
{
	json_t *v;
	size_t i;

	if (list == NULL)
		return true;
	json_array_foreach(list, i, v)
		if (strcmp(json_string_value(v), s) == 0)
			return true;
	return false;
}

static double
ppa(const struct cap_row *r)
{
	return r->accel_per_node > 0 ? r->price_hour / r->accel_per_node : r->price_hour;
}

static int
units(int free, int per)
{
	return per > 1 ? free / per * per : free;
}

static bool fit_pack(const struct capacity_req *q, const struct cap_row *r, struct cand *c);

/* topology slice on GKE dynamic slicing (issue 26): a free partition of the shape in a
 * reserved TPU7x sub-block (the nodes' "partitions", providers/kube.h) — every host of it
 * ready and free, as the scheduler carves one (queue/sched/sched_pack.c). */
static bool
fit_partition(const struct capacity_req *q, const struct cap_row *r, struct cand *c)
{
	json_t *nodes = json_object_get(r->topology, "nodes"), *n, *parts = json_object(), *v;
	const char *id;
	size_t i;
	bool have = false;

	json_array_foreach(nodes, i, n) {
		const char *pid = json_string_value(json_object_get(json_object_get(n,
		    "partitions"), q->slice_topology));
		int f = (int)json_integer_value(json_object_get(n, "free_accel"));
		json_t *e;

		if (pid == NULL)
			continue;
		if ((e = json_object_get(parts, pid)) == NULL) {
			e = json_pack("[i, b]", 0, 1);
			json_object_set_new(parts, pid, e);
		}
		json_array_set_new(e, 0, json_integer(json_integer_value(json_array_get(e, 0)) + 1));
		if (!json_is_true(json_object_get(n, "ready")) || f < q->slice.chips_per_host)
			json_array_set_new(e, 1, json_false());
	}
	json_object_foreach(parts, id, v)
		if (!have && json_integer_value(json_array_get(v, 0)) == q->slice.hosts &&
		    json_is_true(json_array_get(v, 1))) {
			have = true;
			snprintf(c->group, sizeof(c->group), "%s", id);
			c->free = q->slice.chips;
			c->leftover = 0;
		}
	json_decref(parts);
	return have;
}

/* Best group of row for q (smallest that fits); true when one fits. */
static bool
fit_now(const struct capacity_req *q, const struct cap_row *r, struct cand *c)
{
	json_t *nodes = json_object_get(r->topology, "nodes"), *n, *groups = json_object();
	const char *key, *tt = json_string_value(json_object_get(r->topology, "tpu_topology"));
	json_t *g;
	size_t i;
	int best = -1, total = 0;

	c->group[0] = '\0';
	if (q->topology == CAP_TOPO_PACK) {
		json_decref(groups);
		return fit_pack(q, r, c);
	}
	if (q->topology == CAP_TOPO_SLICE && (tt == NULL || strcmp(tt, q->slice_topology) != 0)) {
		json_decref(groups);
		return fit_partition(q, r, c);
	}
	json_array_foreach(nodes, i, n) {
		int f = (int)json_integer_value(json_object_get(n, "free_accel")), u;
		const char *k = NULL;

		if (!json_is_true(json_object_get(n, "ready")))
			continue;
		u = q->topology == CAP_TOPO_SLICE ? (f >= q->slice.chips_per_host ? 1 : 0) :
		    units(f, q->per_node);
		total += u;
		if (q->topology == CAP_TOPO_HOST)
			k = json_string_value(json_object_get(n, "name"));
		else if (q->topology == CAP_TOPO_RACK)
			k = json_string_value(json_object_get(n, "rack"));
		else if (q->topology == CAP_TOPO_SLICE)
			k = json_string_value(json_object_get(n, "slice"));
		if (k == NULL)
			continue;
		g = json_object_get(groups, k);
		json_object_set_new(groups, k, json_integer(json_integer_value(g) + u));
	}
	if (q->topology == CAP_TOPO_NONE) {
		json_decref(groups);
		c->free = total;
		c->leftover = total - q->count;
		return total >= q->count;
	}
	json_object_foreach(groups, key, g) {
		int have = (int)json_integer_value(g),
		    need = q->topology == CAP_TOPO_SLICE ? q->slice.hosts : q->count;

		if (key[0] == '\0' || have < need || (best >= 0 && have >= best))
			continue;
		best = have;
		snprintf(c->group, sizeof(c->group), "%s", key);
	}
	json_decref(groups);
	if (best < 0)
		return false;
	c->free = q->topology == CAP_TOPO_SLICE ? best * q->slice.chips_per_host : best;
	c->leftover = c->free - q->count;
	return true;
}

#define PACK_MAX_RACKS	256	/* racks of one scale unit looked at */

struct prack {
	const char	*name;
	int		 cap;		/* free units */
	bool		 shared;	/* another gang uses part of it */
};

static int
prack_desc(const void *a, const void *b)
{
	const struct prack *x = *(const struct prack *const *)a,
	    *y = *(const struct prack *const *)b;

	if (x->cap != y->cap)
		return x->cap > y->cap ? -1 : 1;
	return strcmp(x->name, y->name);
}

/* The first k of v (cap descending) with the last swapped for the smallest rack that still
 * completes need (best fit); false when k of them cannot hold it. */
static bool
pack_take(struct prack **v, int nv, int k, int need, struct prack **out, int *sum)
{
	int total = 0, best;

	if (k > nv)
		return false;
	for (int i = 0; i < k; i++)
		total += v[i]->cap;
	if (total < need)
		return false;
	best = k - 1;
	for (int i = k; i < nv; i++)
		if (total - v[k - 1]->cap + v[i]->cap >= need && v[i]->cap < v[best]->cap)
			best = i;
	for (int i = 0; i < k; i++)
		out[i] = i == k - 1 ? v[best] : v[i];
	*sum = total - v[k - 1]->cap + v[best]->cap;
	return true;
}

/* topology pack, as queue/sched/sched_blocks.c chooses: in each scale unit (block; a row's
 * racks without one are one unit) the fewest racks whose free room holds the request, racks
 * no other gang uses when they suffice, then the least room left; the best unit wins by the
 * same order. */
static bool
fit_pack(const struct capacity_req *q, const struct cap_row *r, struct cand *c)
{
	json_t *nodes = json_object_get(r->topology, "nodes"), *n, *byunit = json_object();
	json_t *u;
	const char *bname;
	size_t i;
	int best_k = 0, best_shared = 0, best_left = 0;
	bool have = false;

	json_array_foreach(nodes, i, n) {
		const char *rack = json_string_value(json_object_get(n, "rack")),
		    *blk = json_string_value(json_object_get(n, "block"));
		int f = (int)json_integer_value(json_object_get(n, "free_accel"));
		json_t *al = json_object_get(n, "alloc_accel"), *rk, *unit;

		if (!json_is_true(json_object_get(n, "ready")) || rack == NULL || rack[0] == '\0')
			continue;
		if ((unit = json_object_get(byunit, blk ? blk : "")) == NULL) {
			unit = json_object();
			json_object_set_new(byunit, blk ? blk : "", unit);
		}
		if ((rk = json_object_get(unit, rack)) == NULL) {
			rk = json_pack("[i, b]", 0, 0);
			json_object_set_new(unit, rack, rk);
		}
		json_array_set_new(rk, 0, json_integer(json_integer_value(json_array_get(rk, 0)) +
		    units(f, q->per_node)));
		if (json_is_integer(al) && f < json_integer_value(al))
			json_array_set_new(rk, 1, json_true());
	}
	json_object_foreach(byunit, bname, u) {
		struct prack rk[PACK_MAX_RACKS], *all[PACK_MAX_RACKS], *unused[PACK_MAX_RACKS];
		struct prack *pick[PACK_MAX_RACKS];
		const char *rname;
		json_t *v;
		int nr = 0, nu = 0, k = 0, sum = 0, shared = 0;

		json_object_foreach(u, rname, v) {
			if (nr == PACK_MAX_RACKS || json_integer_value(json_array_get(v, 0)) <= 0)
				continue;
			rk[nr] = (struct prack){ rname, (int)json_integer_value(json_array_get(v, 0)),
			    json_is_true(json_array_get(v, 1)) };
			all[nr] = &rk[nr];
			nr++;
		}
		qsort(all, (size_t)nr, sizeof(all[0]), prack_desc);
		for (int t = 0; t < nr && sum < q->count; t++, k++)
			sum += all[t]->cap;
		if (sum < q->count)
			continue;
		for (int t = 0; t < nr; t++)
			if (!all[t]->shared)
				unused[nu++] = all[t];
		if (!pack_take(unused, nu, k, q->count, pick, &sum) &&
		    !pack_take(all, nr, k, q->count, pick, &sum))
			continue;
		for (int t = 0; t < k; t++)
			shared += pick[t]->shared;
		if (have && (k > best_k || (k == best_k && (shared > best_shared ||
		    (shared == best_shared && sum - q->count >= best_left)))))
			continue;
		have = true;
		best_k = k;
		best_shared = shared;
		best_left = sum - q->count;
		c->free = sum;
		c->leftover = sum - q->count;
		c->nracks = k;
		snprintf(c->group, sizeof(c->group), "%s", bname[0] ? bname : "");
		c->racks[0] = '\0';
		for (int t = 0; t < k; t++) {
			size_t l = strlen(c->racks);

			snprintf(c->racks + l, sizeof(c->racks) - l, "%s%s", t ? "," : "",
			    pick[t]->name);
		}
	}
	json_decref(byunit);
	return have;
}

/* Accelerators the row can still add by scaling up, within its quota. */
static int
growable(const struct cap_row *r, bool capped)
{
	int g = r->max_nodes > r->nodes ? (r->max_nodes - r->nodes) * r->accel_per_node : 0;

	if (capped && r->quota_left >= 0 && r->quota_left < g)
		g = r->quota_left / (r->accel_per_node > 0 ? r->accel_per_node : 1) *
		    (r->accel_per_node > 0 ? r->accel_per_node : 1);
	return g;
}

static bool
fit_after_scale_up(const struct capacity_req *q, const struct cap_row *r, struct cand *c)
{
	int g = growable(r, true);

	if (q->topology == CAP_TOPO_NONE && r->free_accel + g >= q->count) {
		c->free = r->free_accel + g;
		c->leftover = c->free - q->count;
		return true;
	}
	if (q->topology == CAP_TOPO_HOST && r->accel_per_node >= q->count && g > 0) {
		c->free = r->accel_per_node;
		c->leftover = c->free - q->count;
		snprintf(c->group, sizeof(c->group), "a new node");
		return true;
	}
	return false;
}

static void
reject(json_t *rej, const struct cap_cluster *cl, const char *reason, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static void
reject(json_t *rej, const struct cap_cluster *cl, const char *reason, const char *fmt, ...)
{
	char msg[400];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	json_array_append_new(rej, json_pack("{s:s, s:s, s:s, s:s, s:s, s:s}", "cluster_id",
	    cl->id, "cluster", cl->name, "region", cl->region, "provider", cl->provider,
	    "reason", reason, "detail", msg));
}

static const char *
topo_word(const struct capacity_req *q)
{
	static const char *const w[] = { "pool", "node", "rack", "slice", "scale unit" };

	return w[q->topology];
}

/* Reason a cluster whose flavor rows passed the filters cannot take the request. */
static void
no_fit(const struct capacity_req *q, const struct cap_cluster *cl, const struct cap_row **rows,
    int nr, json_t *rej)
{
	int free = 0, grow = 0, grow_uncapped = 0;

	for (int i = 0; i < nr; i++) {
		free += rows[i]->free_accel;
		grow += growable(rows[i], true);
		grow_uncapped += growable(rows[i], false);
	}
	if (free >= q->count)
		reject(rej, cl, "topology_split", "%d %s free, but no single %s holds %d", free,
		    q->flavor, topo_word(q), q->count);
	else if (free + grow_uncapped >= q->count && free + grow < q->count)
		reject(rej, cl, "over_quota", "%d free and %d more after scale-up, but the regional "
		    "quota allows only %d more", free, grow_uncapped, grow);
	else
		reject(rej, cl, "insufficient_capacity", "%d %s free now and %d more after "
		    "scale-up; %d requested", free, q->flavor, grow, q->count);
}

static void
describe(const struct capacity_req *q, struct cand *c)
{
	if (q->topology == CAP_TOPO_PACK) {
		snprintf(c->why, sizeof(c->why), "fits now: %d rack%s of %s%.64s of pool %.64s "
		    "have %d free %.48s for %d; $%.2f per accelerator-hour; leaves %d free there",
		    c->nracks,
		    c->nracks == 1 ? "" : "s", c->group[0] ? "scale unit " : "the racks without a "
		    "scale unit", c->group, c->row->pool, c->free, q->flavor, q->count, c->ppa,
		    c->leftover);
		return;
	}
	snprintf(c->why, sizeof(c->why), "%s: %s%s%s of pool %s has %d free %s for %d; $%.2f per "
	    "accelerator-hour; leaves %d free there", c->now ? "fits now" :
	    "fits after scale-up", c->group[0] ? topo_word(q) : "", c->group[0] ? " " : "",
	    c->group[0] ? c->group : "the pool", c->row->pool, c->free, q->flavor, q->count,
	    c->ppa, c->leftover);
}

/* Evaluates one cluster: appends a candidate to cands or a reason to rej. */
static void
eval(const struct capacity_req *q, const struct cap_cluster *cl, struct cand *cands,
    size_t *nc, json_t *rej)
{
	const struct cap_row *rows[64];
	const struct cap_row *cheapest;
	struct cand best = { 0 }, c;
	int nr = 0, k, fresh = 0, oldest = 0;
	bool have = false;

	if (!in_list(q->regions, cl->region))
		return reject(rej, cl, "region_not_allowed", "region %s is not in the request's "
		    "regions", cl->region);
	if (!in_list(q->providers, cl->provider))
		return reject(rej, cl, "provider_not_allowed", "provider %s is not in the "
		    "request's providers", cl->provider);
	if (cl->unreachable)
		return reject(rej, cl, "unreachable", "the cluster failed its recent capacity "
		    "refreshes");
	if (cl->cordoned)
		return reject(rej, cl, "cordoned", "the cluster is cordoned");
	for (size_t i = 0; i < cl->nrows && nr < 64; i++) {
		const struct cap_row *r = &cl->rows[i];

		if (strcmp(r->flavor, q->flavor) != 0)
			continue;
		if (r->age_s > q->max_age_s) {
			oldest = (int)r->age_s;
			continue;
		}
		fresh++;
		rows[nr++] = r;
	}
	if (fresh == 0 && oldest > 0)
		return reject(rej, cl, "stale", "its %s snapshot is %d s old (limit %d s)",
		    q->flavor, oldest, q->max_age_s);
	if (nr == 0)
		return reject(rej, cl, "wrong_flavor", cl->nrows ? "no pool offers %s" :
		    "no capacity snapshot yet (%s)", q->flavor);
	k = 0;
	for (int i = 0; i < nr; i++)		/* spot filter */
		if (q->spot < 0 || rows[i]->spot == (q->spot == 1))
			rows[k++] = rows[i];
	if (k == 0)
		return reject(rej, cl, "spot_mismatch", "only %s pools offer %s",
		    q->spot ? "on-demand" : "spot", q->flavor);
	nr = k;
	cheapest = rows[0];
	k = 0;
	for (int i = 0; i < nr; i++) {		/* price filter */
		if (ppa(rows[i]) < ppa(cheapest))
			cheapest = rows[i];
		if (q->max_price <= 0 || ppa(rows[i]) <= q->max_price + 1e-9)
			rows[k++] = rows[i];
	}
	if (k == 0)
		return reject(rej, cl, "over_price", "%s costs $%.2f per accelerator-hour here, "
		    "above max_price %.2f", q->flavor, ppa(cheapest), q->max_price);
	nr = k;
	for (int pass = 0; pass < 2 && !have; pass++)
		for (int i = 0; i < nr; i++) {
			memset(&c, 0, sizeof(c));
			c.cl = cl;
			c.row = rows[i];
			c.now = pass == 0;
			c.ppa = ppa(rows[i]);
			if (!(pass == 0 ? fit_now(q, rows[i], &c) : fit_after_scale_up(q, rows[i], &c)))
				continue;
			if (!have || c.ppa < best.ppa - 1e-9 || (c.ppa <= best.ppa + 1e-9 &&
			    c.leftover < best.leftover)) {
				best = c;
				have = true;
			}
		}
	if (!have)
		return no_fit(q, cl, rows, nr, rej);
	describe(q, &best);
	cands[(*nc)++] = best;
}

static int
cmp(const void *a, const void *b)
{
	const struct cand *x = a, *y = b;

	if (x->now != y->now)
		return x->now ? -1 : 1;
	if (x->ppa < y->ppa - 1e-9 || x->ppa > y->ppa + 1e-9)
		return x->ppa < y->ppa ? -1 : 1;
	if (x->leftover != y->leftover)
		return x->leftover < y->leftover ? -1 : 1;
	return strcmp(x->cl->name, y->cl->name);
}

/* Some node of r is in a dynamic-slicing partition of shape (a TPU7x sub-block). */
static bool
has_partition(const struct cap_row *r, const char *shape)
{
	json_t *n;
	size_t i;

	json_array_foreach(json_object_get(r->topology, "nodes"), i, n)
		if (json_object_get(json_object_get(n, "partitions"), shape) != NULL)
			return true;
	return false;
}

/* The largest scale unit of r at allocatable: the racked nodes of one block (pack never
 * grows nodes). */
static int
unit_max(const struct cap_row *r)
{
	json_t *nodes = json_object_get(r->topology, "nodes"), *n, *sums = json_object(), *v;
	const char *k;
	size_t i;
	int best = 0;

	json_array_foreach(nodes, i, n) {
		const char *rack = json_string_value(json_object_get(n, "rack")),
		    *blk = json_string_value(json_object_get(n, "block"));
		json_t *al = json_object_get(n, "alloc_accel");
		long long a = json_is_integer(al) ? json_integer_value(al) : r->accel_per_node;

		if (rack == NULL || rack[0] == '\0')
			continue;
		json_object_set_new(sums, blk ? blk : "", json_integer(json_integer_value(
		    json_object_get(sums, blk ? blk : "")) + a));
	}
	json_object_foreach(sums, k, v)
		if (json_integer_value(v) > best)
			best = (int)json_integer_value(v);
	json_decref(sums);
	return best;
}

/* Most the environment could ever hold for this request, every cluster at max size. */
static int
environment_max(const struct capacity_req *q, const struct cap_cluster *v, size_t n)
{
	int sum = 0, best = 0;

	for (size_t i = 0; i < n; i++)
		for (size_t k = 0; k < v[i].nrows; k++) {
			const struct cap_row *r = &v[i].rows[k];
			int all = (r->max_nodes > r->nodes ? r->max_nodes : r->nodes) * r->accel_per_node;
			const char *tt = json_string_value(json_object_get(r->topology,
			    "tpu_topology"));

			if (strcmp(r->flavor, q->flavor) != 0)
				continue;
			sum += all;
			if (q->topology == CAP_TOPO_HOST && r->accel_per_node > best)
				best = r->accel_per_node;
			if (q->topology == CAP_TOPO_RACK && all > best)
				best = all;
			if (q->topology == CAP_TOPO_SLICE && ((tt != NULL &&
			    strcmp(tt, q->slice_topology) == 0) || has_partition(r, q->slice_topology)))
				best = q->slice.chips;
			if (q->topology == CAP_TOPO_PACK && unit_max(r) > best)
				best = unit_max(r);
		}
	return q->topology == CAP_TOPO_NONE ? sum : best;
}

json_t *
capacity_rank(const struct capacity_req *q, const struct cap_cluster *v, size_t n)
{
	struct cand *cands = calloc(n ? n : 1, sizeof(*cands));
	json_t *out, *list = json_array(), *rej = json_array();
	size_t nc = 0;
	int emax = environment_max(q, v, n);

	if (cands == NULL)
		abort();
	for (size_t i = 0; i < n; i++)
		eval(q, &v[i], cands, &nc, rej);
	qsort(cands, nc, sizeof(*cands), cmp);
	for (size_t i = 0; i < nc; i++) {
		struct cand *c = &cands[i];
		char why[600];
		json_t *o;

		if (i == 0)
			snprintf(why, sizeof(why), "%s; ranks first", c->why);
		else
			snprintf(why, sizeof(why), "%s; ranks after #1: %s", c->why,
			    c->now != cands[0].now ? "needs a scale-up" :
			    c->ppa > cands[0].ppa + 1e-9 ? "higher price" :
			    c->leftover > cands[0].leftover ? "same price, leaves more fragmentation" :
			    "same price and fit, by name");
		o = json_pack("{s:i, s:s, s:s, s:s, s:s, s:s, s:s, s:b, s:s, s:i, s:f, s:f, s:s}",
		    "rank", (int)i + 1, "cluster_id", c->cl->id, "cluster", c->cl->name, "region",
		    c->cl->region, "provider", c->cl->provider, "pool", c->row->pool,
		    "machine_type", c->row->machine_type, "spot", c->row->spot, "fit",
		    c->now ? "now" : "after_scale_up", "free", c->free, "price_hour",
		    c->row->price_hour, "price_per_accel_hour", c->ppa, "why", why);
		if (c->group[0] != '\0' && q->topology == CAP_TOPO_RACK)
			json_object_set_new(o, "rack", json_string(c->group));
		if (c->group[0] != '\0' && q->topology == CAP_TOPO_SLICE)
			json_object_set_new(o, "slice", json_string(c->group));
		if (c->group[0] != '\0' && q->topology == CAP_TOPO_HOST)
			json_object_set_new(o, "node", json_string(c->group));
		if (q->topology == CAP_TOPO_PACK) {
			json_t *rl = json_array();
			char buf[sizeof(c->racks)], *save = NULL, *tok;

			snprintf(buf, sizeof(buf), "%s", c->racks);
			for (tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save))
				json_array_append_new(rl, json_string(tok));
			json_object_set_new(o, "racks", rl);
			json_object_set_new(o, "scale_unit", c->group[0] ? json_string(c->group) :
			    json_null());
		}
		json_array_append_new(list, o);
	}
	out = json_pack("{s:o, s:o, s:i, s:b}", "candidates", list, "rejected", rej,
	    "environment_max", emax, "exceeds_environment", q->count > emax);
	if (q->count > emax)
		json_object_set_new(out, "message", json_sprintf("environment %s can never hold %d "
		    "%s in one %s: at most %d with every cluster at its maximum size", q->environment,
		    q->count, q->flavor, q->topology == CAP_TOPO_NONE ? "request" : topo_word(q),
		    emax));
	else if (nc == 0)
		json_object_set_new(out, "message", json_sprintf("no cluster of environment %s can "
		    "take %d %s now; see rejected for each reason", q->environment, q->count,
		    q->flavor));
	free(cands);
	return out;
}
