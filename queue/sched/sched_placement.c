/* sched_placement: filter clusters for a job (one reason each), score the ones
 * that may fit (price, best fit, region preference, decaying stockout penalty),
 * pack the best exactly, and apply or release a placement in the model. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "queue/sched/sched_int.h"

struct row {
	int			cluster;
	enum sched_reason	why;
	bool			tried;
	double			cost, fit, region, stock, score;
};

double
sched_stockout_now(const struct sched_model *m, const struct sched_pool *p)
{
	double age, hl;

	if (p->stockout_penalty <= 0.0)
		return 0.0;
	age = (double)(m->now - p->stockout_at);
	hl = m->cfg.stockout_half_life > 0 ? (double)m->cfg.stockout_half_life : 900.0;
	if (age < 0.0)
		age = 0.0;
	return p->stockout_penalty * pow(0.5, age / hl);
}

static int
index_of(const int *arr, int n, int v)
{
	int i;

	for (i = 0; i < n; i++)
		if (arr[i] == v)
			return i;
	return -1;
}

/* An on-demand cpu pool whose node (an existing one, or one it may grow) holds pod. */
static bool
head_pool(const struct sched_cluster *c, int cpu, const struct sched_vec *pod)
{
	size_t p, i;

	for (p = 0; p < c->n_pools; p++) {
		const struct sched_pool *pp = &c->pools[p];

		if (pp->flavor != cpu || pp->spot)
			continue;
		if (pp->grow_nodes > 0 && sched_vec_fits(&pp->node_alloc, pod))
			return true;
		for (i = 0; i < c->n_nodes; i++)
			if (c->nodes[i].pool == (int)p && sched_vec_fits(&c->nodes[i].alloc, pod))
				return true;
	}
	return false;
}

/* Cluster-level checks, in a fixed order: health, flavor, constraints. */
enum sched_reason
sched_cluster_filter(const struct sched_model *m, const struct sched_job *j,
		     const struct sched_cluster *c)
{
	int g;
	size_t p;

	if (!c->ready)
		return SCHED_R_NOT_READY;
	if (!c->reachable)
		return SCHED_R_UNREACHABLE;
	if (m->now - c->observed_at > m->cfg.stale_after)
		return SCHED_R_STALE;
	if (c->cordoned)
		return SCHED_R_CORDONED;
	if ((j->flavor_mask & ~c->flavor_mask) != 0) {
		uint64_t cpu = m->cpu_flavor >= 0 ? 1ULL << m->cpu_flavor : 0;

		return (j->flavor_mask & ~c->flavor_mask) == cpu ? SCHED_R_NO_HEAD_POOL :
		    SCHED_R_WRONG_FLAVOR;
	}
	if (j->n_regions > 0 && index_of(j->regions, j->n_regions, c->region) < 0)
		return SCHED_R_REGION_NOT_ALLOWED;
	if (j->n_providers > 0 && index_of(j->providers, j->n_providers, c->provider) < 0)
		return SCHED_R_PROVIDER_NOT_ALLOWED;
	for (g = 0; g < j->n_groups; g++) {
		bool spot_ok = false, price_ok = false, type_ok = false;

		if (j->groups[g].flavor == m->cpu_flavor) {
			if (j->groups[g].head && !head_pool(c, m->cpu_flavor, &j->groups[g].pod))
				return SCHED_R_NO_HEAD_POOL;
			continue;
		}
		for (p = 0; p < c->n_pools; p++) {
			const struct sched_pool *pp = &c->pools[p];

			if (pp->flavor != j->groups[g].flavor)
				continue;
			if ((j->spot == SCHED_SPOT_ONLY && !pp->spot) ||
			    (j->spot == SCHED_SPOT_NEVER && pp->spot))
				continue;
			spot_ok = true;
			if ((m->ctype_only != SCHED_CT_ANY && (int)pp->ctype != m->ctype_only) ||
			    (j->n_pref > 0 && sched_job_rank(j, pp->ctype) >= j->n_pref))
				continue;
			type_ok = true;
			/* max_price is per accelerator-hour (constraints.max_price) */
			if (j->max_price <= 0.0 || sched_pool_accel_price(pp) <= j->max_price)
				price_ok = true;
		}
		if (!spot_ok)
			return SCHED_R_SPOT_MISMATCH;
		if (!type_ok)
			return SCHED_R_CAPACITY_TYPE;
		if (!price_ok)
			return SCHED_R_OVER_PRICE;
	}
	return SCHED_R_CHOSEN;
}

static bool
flavor_bound(const struct sched_job *j, int f)
{
	int g;

	if (j->topo != SCHED_TOPO_RACK && j->topo != SCHED_TOPO_SLICE && j->topo != SCHED_TOPO_PACK)
		return false;
	for (g = 0; g < j->n_groups; g++)
		if (j->groups[g].flavor == f && j->groups[g].pod.v[SCHED_ACCEL] > 0)
			return true;
	return false;
}

/* Necessary conditions from pool aggregates: CHOSEN when an exact pack may
 * succeed, RESERVED when only held pools would make room. */
enum sched_reason
sched_quick_fit(const struct sched_model *m, const struct sched_job *j,
		const struct sched_cluster *c)
{
	bool open_ok = true, all_ok = true;
	int g, k, r;
	size_t p;

	for (g = 0; g < j->n_groups; g++) {
		const struct sched_group *gr = &j->groups[g];
		bool grow = !flavor_bound(j, gr->flavor) && j->grow_of < 0, mine = false, any = false;

		for (p = 0; p < c->n_pools; p++) {
			const struct sched_pool *pp = &c->pools[p];
			bool ok;

			if (!sched_pool_matches(m, j, pp, gr->flavor))
				continue;
			ok = sched_vec_fits(&pp->max_free, &gr->pod) ||
			    (grow && pp->grow_nodes > 0 && sched_vec_fits(&pp->node_alloc, &gr->pod));
			any |= ok;
			if (sched_pool_open(m, j, pp))
				mine |= ok;
		}
		open_ok &= mine;
		all_ok &= any;
	}
	for (k = 0; k < j->n_req; k++) {
		struct sched_vec open = { { 0 } }, all = { { 0 } };
		bool grow = !flavor_bound(j, j->req[k].flavor) && j->grow_of < 0;

		for (p = 0; p < c->n_pools; p++) {
			const struct sched_pool *pp = &c->pools[p];
			bool held = !sched_pool_open(m, j, pp);

			if (!sched_pool_matches(m, j, pp, j->req[k].flavor))
				continue;
			for (r = 0; r < SCHED_NRES; r++) {
				int64_t x = pp->sum_free.v[r] +
				    (grow ? pp->grow_nodes * pp->node_alloc.v[r] : 0);

				all.v[r] += x;
				if (!held)
					open.v[r] += x;
			}
		}
		open_ok &= sched_vec_fits(&open, &j->req[k].v);
		all_ok &= sched_vec_fits(&all, &j->req[k].v);
	}
	if (open_ok)
		return SCHED_R_CHOSEN;
	return all_ok ? SCHED_R_RESERVED : SCHED_R_INSUFFICIENT_CAPACITY;
}

static bool
pool_for_job(const struct sched_model *m, const struct sched_job *j, const struct sched_pool *p)
{
	int g;

	for (g = 0; g < j->n_groups; g++)
		if (sched_pool_matches(m, j, p, j->groups[g].flavor))
			return true;
	return false;
}

/* Raw score parts: hourly cost, best fit (0 = fills free capacity exactly), stockout. */
static void
components(const struct sched_model *m, const struct sched_job *j, const struct sched_cluster *c,
	   struct row *rw)
{
	int64_t need = 0, have = 0;
	int prim = SCHED_CPU, g;
	size_t p;

	rw->cost = 0.0;
	rw->stock = 0.0;
	for (g = 0; g < j->n_groups; g++)
		if (j->groups[g].pod.v[SCHED_ACCEL] > 0)
			prim = SCHED_ACCEL;
	for (g = 0; g < j->n_groups; g++) {
		const struct sched_group *gr = &j->groups[g];
		double price = -1.0, frac = 1.0;
		int gp = gr->pod.v[SCHED_ACCEL] > 0 ? SCHED_ACCEL : SCHED_CPU;

		for (p = 0; p < c->n_pools; p++) {
			const struct sched_pool *pp = &c->pools[p];

			if (!sched_pool_matches(m, j, pp, gr->flavor))
				continue;
			if (price < 0.0 || pp->price < price) {
				price = pp->price;
				frac = pp->node_alloc.v[gp] > 0 ?
				    (double)gr->pod.v[gp] / (double)pp->node_alloc.v[gp] : 1.0;
			}
		}
		rw->cost += sched_group_pods(j, g) * (price > 0.0 ? price : 0.0) * frac;
		need += sched_group_pods(j, g) * gr->pod.v[prim];
	}
	for (p = 0; p < c->n_pools; p++) {
		const struct sched_pool *pp = &c->pools[p];
		double s;

		if (!pool_for_job(m, j, pp) || (pp->held_by >= 0 && pp->held_by != j->idx))
			continue;
		have += pp->sum_free.v[prim];
		if ((s = sched_stockout_now(m, pp)) > rw->stock)
			rw->stock = s;
	}
	rw->fit = have > 0 && need <= have ? 1.0 - (double)need / (double)have : 1.0;
	g = index_of(j->regions, j->n_regions, c->region);
	rw->region = j->n_regions > 0 && g > 0 ? (double)g / (double)j->n_regions : 0.0;
}

static int
smallest_list(const struct sched_model *m, const struct sched_job *j)
{
	int f, best = -1;

	/* the cpu flavor last: a cluster without a cpu pool is then seen (no_head_pool) */
	for (f = 0; f < m->n_flavors; f++)
		if ((j->flavor_mask & (1ULL << f)) && f != m->cpu_flavor &&
		    (best < 0 || m->n_by_flavor[f] < m->n_by_flavor[best]))
			best = f;
	return best >= 0 || m->cpu_flavor < 0 || !(j->flavor_mask & (1ULL << m->cpu_flavor)) ?
	    best : m->cpu_flavor;
}

/* Filters and scores every cluster that has the job's rarest flavor. */
static size_t
evaluate(struct sched_model *m, const struct sched_job *j, enum sched_reason quota,
	 size_t *visited)
{
	int env = m->queues[j->queue]->env, f = smallest_list(m, j);
	double min_cost = INFINITY;
	struct row *rows;
	size_t i, n = 0;

	*visited = 0;
	if (f < 0)
		return 0;
	m->c_scratch = sched_grow(m->c_scratch, &m->c_cap, m->n_by_flavor[f] + 1, sizeof(*rows));
	rows = m->c_scratch;
	for (i = 0; i < m->n_by_flavor[f]; i++) {
		const struct sched_cluster *c = m->clusters[m->by_flavor[f][i]];
		struct row *rw = &rows[n];

		if (c->env != env)
			continue;
		if (j->grow_of >= 0 && c->idx != j->grow_cluster)
			continue;	/* a grow request: its job's cluster only */
		(*visited)++;
		memset(rw, 0, sizeof(*rw));
		rw->cluster = c->idx;
		rw->score = NAN;
		rw->why = sched_cluster_filter(m, j, c);
		if (rw->why == SCHED_R_CHOSEN && quota != SCHED_R_CHOSEN)
			rw->why = quota;
		if (rw->why == SCHED_R_CHOSEN)
			rw->why = sched_quick_fit(m, j, c);
		if (rw->why == SCHED_R_CHOSEN) {
			components(m, j, c, rw);
			if (rw->cost < min_cost)
				min_cost = rw->cost;
		}
		n++;
	}
	for (i = 0; i < n; i++) {
		struct row *rw = &rows[i];
		double rel = min_cost > 0.0 && isfinite(min_cost) ? rw->cost / min_cost - 1.0 : 0.0;

		if (rw->why == SCHED_R_CHOSEN)
			rw->score = m->cfg.w_price * rel + m->cfg.w_fit * rw->fit +
			    m->cfg.w_region * rw->region + m->cfg.w_stockout * rw->stock;
	}
	return n;
}

static int
row_cmp(const void *a, const void *b)
{
	const struct row *x = a, *y = b;
	int cx = x->why == SCHED_R_CHOSEN ? 0 : x->why == SCHED_R_OUTSCORED ? 1 : 2;
	int cy = y->why == SCHED_R_CHOSEN ? 0 : y->why == SCHED_R_OUTSCORED ? 1 : 2;

	if (cx != cy)
		return cx - cy;
	if (cx < 2 && x->score != y->score)
		return x->score < y->score ? -1 : 1;
	if (cx < 2 && x->cost != y->cost)	/* price breaks a tie (issue 27) */
		return x->cost < y->cost ? -1 : 1;
	if (x->why != y->why)
		return (int)y->why - (int)x->why;
	return x->cluster - y->cluster;
}

/* Keeps the best `keep` rows (winner, then by score, then closest reason) at the
 * front of rows: a bounded insertion, O(n) when keep is small. */
static void
top_rows(struct row *rows, size_t n, size_t keep)
{
	size_t i, k = 0;

	for (i = 0; i < n; i++) {
		struct row r = rows[i];
		size_t at;

		if (k == keep && row_cmp(&r, &rows[k - 1]) >= 0)
			continue;
		at = k < keep ? k++ : keep - 1;
		while (at > 0 && row_cmp(&r, &rows[at - 1]) < 0) {
			rows[at] = rows[at - 1];
			at--;
		}
		rows[at] = r;
	}
}

static void
record(struct sched_model *m, struct row *rows, size_t n, struct arena *a,
       struct sched_placement *out)
{
	size_t i, keep = n;

	if (a == NULL)
		return;
	if (m->cfg.max_candidates > 0 && keep > m->cfg.max_candidates)
		keep = m->cfg.max_candidates;
	if (keep < n)
		top_rows(rows, n, keep);
	else
		qsort(rows, n, sizeof(*rows), row_cmp);
	out->cands = arena_alloc(a, keep * sizeof(*out->cands) + 1);
	for (i = 0; i < keep; i++) {
		out->cands[i].cluster = rows[i].cluster;
		out->cands[i].reason = rows[i].why;
		out->cands[i].score = rows[i].score;
	}
	out->n_cands = keep;
}

/* Racks the placed gang uses and, for topology rack and pack, how many the same gang
 * would use placed with topology none now (what explain compares). */
static void
racks_compared(struct sched_model *m, const struct sched_job *j, struct sched_placement *out)
{
	const struct sched_cluster *c = m->clusters[out->cluster];
	struct sched_job loose;
	size_t n = 0;

	out->racks_used = sched_racks_of(j, c, out->allocs, out->n_allocs);
	out->racks_scattered = out->racks_used;
	out->part_shape = sched_slice_part_of(m, j, c, out->allocs, out->n_allocs);
	if (j->topo != SCHED_TOPO_RACK && j->topo != SCHED_TOPO_PACK)
		return;
	loose = *j;
	loose.topo = SCHED_TOPO_NONE;
	out->racks_scattered = sched_pack_scratch(m, &loose, c, &n) == SCHED_R_CHOSEN ?
	    sched_racks_of(&loose, c, m->a_scratch, n) : -1;
}

bool
sched_place(struct sched_model *m, const struct sched_job *j, enum sched_reason quota,
	    struct arena *a, struct sched_placement *out)
{
	struct row *rows;
	size_t n, i, visited, n_allocs = 0;
	int win = -1, env = m->queues[j->queue]->env;

	memset(out, 0, sizeof(*out));
	out->cluster = -1;
	out->score = NAN;
	out->racks_used = out->racks_scattered = -1;
	if (a != NULL) {
		out->counts = arena_alloc(a, sizeof(*out->counts) * SCHED_NREASONS);
	} else {
		memset(m->counts_scratch, 0, sizeof(m->counts_scratch));
		out->counts = m->counts_scratch;
	}
	n = evaluate(m, j, quota, &visited);
	rows = m->c_scratch;
	for (;;) {
		int best = -1;

		for (i = 0; i < n; i++)
			if (rows[i].why == SCHED_R_CHOSEN && !rows[i].tried &&
			    (best < 0 || rows[i].score < rows[best].score ||
			    (rows[i].score == rows[best].score && rows[i].cost < rows[best].cost)))
				best = (int)i;	/* equal scores: the cheaper (price breaks ties) */
		if (best < 0)
			break;
		rows[best].tried = true;
		rows[best].why = sched_pack_scratch(m, j, m->clusters[rows[best].cluster], &n_allocs);
		if (rows[best].why == SCHED_R_CHOSEN) {
			win = best;
			break;
		}
	}
	for (i = 0; i < n; i++)
		if ((int)i != win && rows[i].why == SCHED_R_CHOSEN)
			rows[i].why = SCHED_R_OUTSCORED;
	if (env >= 0 && (size_t)env < m->n_env && m->env_clusters[env] > visited &&
	    j->grow_of < 0)
		out->counts[SCHED_R_WRONG_FLAVOR] += (uint16_t)(m->env_clusters[env] - visited);
	out->reason = out->counts[SCHED_R_WRONG_FLAVOR] ? SCHED_R_WRONG_FLAVOR : SCHED_R_NOT_ATTEMPTED;
	for (i = 0; i < n; i++) {
		out->counts[rows[i].why]++;
		if (rows[i].why != SCHED_R_OUTSCORED && rows[i].why != SCHED_R_CHOSEN &&
		    (out->reason == SCHED_R_NOT_ATTEMPTED || rows[i].why > out->reason))
			out->reason = rows[i].why;
	}
	if (win >= 0) {
		out->cluster = rows[win].cluster;
		out->score = rows[win].score;
		out->reason = SCHED_R_CHOSEN;
		if (a != NULL) {
			out->allocs = arena_alloc(a, n_allocs * sizeof(*out->allocs) + 1);
			memcpy(out->allocs, m->a_scratch, n_allocs * sizeof(*out->allocs));
			out->n_allocs = n_allocs;
			racks_compared(m, j, out);
		}
	}
	record(m, rows, n, a, out);
	return win >= 0;
}

void
sched_apply(struct sched_model *m, struct sched_job *j, int cluster, struct sched_alloc *allocs,
	    size_t n_allocs)
{
	bool was_pending = j->state == SCHED_PENDING || j->state == SCHED_PREEMPTED;
	int g;

	free(j->allocs);
	j->allocs = calloc(n_allocs > 0 ? n_allocs : 1, sizeof(*j->allocs));
	if (j->allocs == NULL)
		abort();
	memcpy(j->allocs, allocs, n_allocs * sizeof(*allocs));
	j->n_allocs = n_allocs;
	sched_capacity_take(m, m->clusters[cluster], j->allocs, n_allocs);
	memcpy(allocs, j->allocs, n_allocs * sizeof(*allocs));	/* grown nodes now named */
	j->cluster = cluster;
	j->state = SCHED_ADMITTED;
	j->in_flight = true;
	j->admitted_at = m->now;
	j->hold_cluster = -1;
	if (was_pending) {
		sched_job_scratch_groups(m, j);	/* counts and req change: rewritten in the */
		for (g = 0; g < j->n_groups; g++)	/* scratch, then kept (shared when equal) */
			j->groups[g].count = j->groups[g].min;
		sched_job_request(j, true, j->req, &j->n_req);
		sched_job_keep_groups(m, j);
		sched_usage_add(m, j, +1);
	}
}

/* Gives back j's capacity and quota; the caller sets the new state. */
void
sched_release(struct sched_model *m, struct sched_job *j)
{
	if (j->cluster >= 0)
		sched_capacity_give(m, m->clusters[j->cluster], j->allocs, j->n_allocs);
	sched_usage_add(m, j, -1);
}
