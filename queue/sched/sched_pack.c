/* sched_pack: exact all-or-nothing fit of a job's gang on one cluster's nodes
 * (best fit per node; host, rack and slice topology; growth from headroom). */
#include <stdlib.h>
#include <string.h>

#include "queue/sched/sched_int.h"

bool
sched_pool_matches(const struct sched_model *m, const struct sched_job *j,
		   const struct sched_pool *p, int flavor)
{
	if (p->flavor != flavor)
		return false;
	/* heads and cpu-only workers run on on-demand cpu pools (the renderer gives them no
	 * spot vocabulary); spot and max_price constrain the accelerator pools */
	if (flavor == m->cpu_flavor)
		return !p->spot;
	if ((j->spot == SCHED_SPOT_ONLY && !p->spot) || (j->spot == SCHED_SPOT_NEVER && p->spot))
		return false;
	if (j->max_price > 0.0 && sched_pool_accel_price(p) > j->max_price)
		return false;
	/* capacity preference: only the types the job ranks, and while sched_place_pref tries
	 * one rank, only that type */
	if (m->ctype_only != SCHED_CT_ANY && (int)p->ctype != m->ctype_only)
		return false;
	return j->n_pref == 0 || sched_job_rank(j, p->ctype) < j->n_pref;
}

double
sched_pool_accel_price(const struct sched_pool *p)
{
	int64_t n = p->accel_per_node > 0 ? p->accel_per_node : p->node_alloc.v[SCHED_ACCEL];

	return n > 0 ? p->price / (double)n : p->price;
}

static bool
pool_usable(const struct sched_model *m, const struct sched_job *j, const struct sched_pool *p,
	    int flavor)
{
	return sched_pool_matches(m, j, p, flavor) && sched_pool_open(m, j, p);
}

static void
push_alloc(struct sched_model *m, size_t *n, int node, int pool, int group, int pods,
	   const struct sched_vec *pod)
{
	struct sched_alloc *a;
	int r;

	m->a_scratch = sched_grow(m->a_scratch, &m->a_cap, *n + 1, sizeof(*m->a_scratch));
	a = &m->a_scratch[(*n)++];
	memset(a, 0, sizeof(*a));
	a->node = node;
	a->pool = pool;
	a->group = group;
	a->pods = pods;
	for (r = 0; r < SCHED_NRES; r++)
		a->res.v[r] = pod->v[r] * pods;
}

static void
take(struct sched_vec *free, const struct sched_vec *pod, int64_t k)
{
	int r;

	for (r = 0; r < SCHED_NRES; r++)
		free->v[r] -= pod->v[r] * k;
}

#define MAX_SLICES	64	/* slices one job may span (one per replica) */

/* One packing attempt.  Topology binds the accelerator groups only: host = every
 * accelerator pod on node `host`; rack and pack = on nodes of the chosen racks; slice =
 * one pod per host of the chosen slices (each replica of a multi-host group a whole
 * slice). */
struct try {
	enum sched_topo	topo;
	int		racks[SCHED_MAX_RACKS];
	int		n_racks;	/* 0 = any */
	int		host;		/* node index (may be virtual), -1 = any */
	int		host_grow;	/* pool to grow the host node from, -1 = existing */
	int		slices[MAX_SLICES];
	int		n_slices;
	int		part;		/* slices are dynamic-slicing partitions of this
					 * shape index too, -1 = fixed slices only */
	size_t		base;		/* real nodes; virtual (grown) nodes follow */
	size_t		n_virt;
	size_t		n_allocs;
};

static bool
rack_chosen(const struct try *t, int rack)
{
	for (int i = 0; i < t->n_racks; i++)
		if (t->racks[i] == rack)
			return true;
	return false;
}

static bool
slice_chosen(const struct try *t, int slice)
{
	for (int i = 0; slice >= 0 && i < t->n_slices; i++)
		if (t->slices[i] == slice)
			return true;
	return false;
}

/* The node is in one of the chosen slices: a fixed slice, or the partition of the job's
 * shape it belongs to (GKE dynamic slicing). */
static bool
node_sliced(const struct try *t, const struct sched_node *nd)
{
	return slice_chosen(t, nd->slice) || (t->part >= 0 && slice_chosen(t, nd->part[t->part]));
}

/* Puts group g on existing and already grown nodes, best fit first. */
static int64_t
place_existing(struct sched_model *m, const struct sched_job *j, const struct sched_cluster *c,
	       struct try *t, int g, int64_t left)
{
	const struct sched_group *gr = &j->groups[g];
	bool bound = gr->pod.v[SCHED_ACCEL] > 0 && t->topo != SCHED_TOPO_NONE;
	int prim = gr->pod.v[SCHED_ACCEL] > 0 ? SCHED_ACCEL : SCHED_CPU;
	size_t i, k = 0;

	for (i = 0; i < t->base + t->n_virt; i++) {
		int pool = i < t->base ? c->nodes[i].pool : m->s_pool[i];

		if (!pool_usable(m, j, &c->pools[pool], gr->flavor))
			continue;
		if (bound && t->topo == SCHED_TOPO_HOST && (int)i != t->host)
			continue;
		if (bound && (t->topo == SCHED_TOPO_RACK || t->topo == SCHED_TOPO_PACK) &&
		    (i >= t->base || (t->n_racks > 0 && !rack_chosen(t, c->nodes[i].rack))))
			continue;
		if (bound && t->topo == SCHED_TOPO_SLICE &&
		    (i >= t->base || !node_sliced(t, &c->nodes[i]) || m->s_used[i]))
			continue;
		if (sched_vec_count(&m->s_free[i], &gr->pod) < 1)
			continue;
		m->s_order[k].key = m->s_free[i].v[prim];
		m->s_order[k++].idx = (int)i;
	}
	qsort(m->s_order, k, sizeof(*m->s_order), sched_pair_cmp);
	for (i = 0; i < k && left > 0; i++) {
		int n = m->s_order[i].idx;
		int64_t fit = sched_vec_count(&m->s_free[n], &gr->pod);

		if (bound && t->topo == SCHED_TOPO_SLICE)
			fit = 1;	/* one pod per TPU host */
		if (fit > left)
			fit = left;
		take(&m->s_free[n], &gr->pod, fit);
		m->s_used[n] = 1;
		push_alloc(m, &t->n_allocs, n, n < (int)t->base ? c->nodes[n].pool : m->s_pool[n], g,
		    (int)fit, &gr->pod);
		left -= fit;
	}
	return left;
}

/* Grows nodes from pool headroom for what group g still needs. */
static int64_t
place_grown(struct sched_model *m, const struct sched_job *j, const struct sched_cluster *c,
	    struct try *t, int g, int64_t left)
{
	const struct sched_group *gr = &j->groups[g];
	size_t p, v;

	for (p = 0; p < c->n_pools && left > 0; p++) {
		const struct sched_pool *pp = &c->pools[p];
		int64_t per = sched_vec_count(&pp->node_alloc, &gr->pod), used = 0;

		if (!pool_usable(m, j, pp, gr->flavor) || per < 1)
			continue;
		for (v = t->base; v < t->base + t->n_virt; v++)
			used += m->s_pool[v] == (int)p;
		while (left > 0 && used < pp->grow_nodes) {
			size_t n = t->base + t->n_virt++;
			int64_t fit = per < left ? per : left;

			sched_scratch_ensure(m, n + 1);
			m->s_free[n] = pp->node_alloc;
			m->s_pool[n] = (int)p;
			m->s_used[n] = 1;
			take(&m->s_free[n], &gr->pod, fit);
			push_alloc(m, &t->n_allocs, (int)n, (int)p, g, (int)fit, &gr->pod);
			left -= fit;
			used++;
		}
	}
	return left;
}

/* One attempt; allocs land in m->a_scratch.  *leftover: free accelerators left on
 * the rack or slice (best fit among racks). */
static bool
try_pack(struct sched_model *m, const struct sched_job *j, const struct sched_cluster *c,
	 struct try *t, size_t *n_allocs, int64_t *leftover)
{
	int order[SCHED_MAX_GROUPS], g, a, b;
	size_t i, pods = 0;

	for (g = 0; g < j->n_groups; g++) {
		order[g] = g;
		pods += (size_t)sched_group_pods(j, g);
	}
	/* Largest pods first. */
	for (a = 1; a < j->n_groups; a++)
		for (b = a; b > 0 && j->groups[order[b]].pod.v[SCHED_ACCEL] >
		    j->groups[order[b - 1]].pod.v[SCHED_ACCEL]; b--) {
			int x = order[b];

			order[b] = order[b - 1];
			order[b - 1] = x;
		}
	t->base = c->n_nodes;
	t->n_virt = 0;
	t->n_allocs = 0;
	sched_scratch_ensure(m, c->n_nodes + pods + 1);
	for (i = 0; i < c->n_nodes; i++) {
		m->s_free[i] = c->nodes[i].free;
		m->s_used[i] = 0;
		/* a node an earlier attempt failed on holds nothing of this job */
		if (j->n_avoid > 0 && sched_job_avoids(j, c->id, c->nodes[i].id))
			memset(&m->s_free[i], 0, sizeof(m->s_free[i]));
		/* a grow request: only its job's domain (sched_grow.c) */
		if (j->grow_of >= 0 && !sched_grow_node_ok(j, c, i))
			memset(&m->s_free[i], 0, sizeof(m->s_free[i]));
	}
	if (t->topo == SCHED_TOPO_HOST && t->host_grow >= 0) {
		/* the host is a node still to grow from pool host_grow */
		size_t n = t->base + t->n_virt++;

		m->s_free[n] = c->pools[t->host_grow].node_alloc;
		m->s_pool[n] = t->host_grow;
		m->s_used[n] = 1;
		t->host = (int)n;
	}
	for (g = 0; g < j->n_groups; g++) {
		int gi = order[g];
		bool bound = j->groups[gi].pod.v[SCHED_ACCEL] > 0 && t->topo != SCHED_TOPO_NONE;
		int64_t left = place_existing(m, j, c, t, gi, sched_group_pods(j, gi));

		/* a grow takes nodes that exist: the group's pin must name them */
		if (left > 0 && !bound && j->grow_of < 0)
			left = place_grown(m, j, c, t, gi, left);
		if (left > 0)
			return false;
	}
	*n_allocs = t->n_allocs;
	if (leftover != NULL) {
		*leftover = 0;
		for (i = 0; i < t->base + t->n_virt; i++)
			if ((t->n_racks > 0 && i < t->base && rack_chosen(t, c->nodes[i].rack)) ||
			    (t->host >= 0 && (int)i == t->host))
				*leftover += m->s_free[i].v[SCHED_ACCEL];
	}
	return true;
}

static bool
uses_pool_of(const struct sched_model *m, const struct sched_job *j, const struct sched_pool *p)
{
	int g;

	for (g = 0; g < j->n_groups; g++)
		if (j->groups[g].pod.v[SCHED_ACCEL] > 0 && pool_usable(m, j, p, j->groups[g].flavor))
			return true;
	return false;
}

static bool
slice_free(const struct sched_cluster *c, int slice)
{
	size_t i;

	for (i = 0; i < c->n_nodes; i++)
		if (c->nodes[i].slice == slice &&
		    c->nodes[i].free.v[SCHED_ACCEL] < c->nodes[i].alloc.v[SCHED_ACCEL])
			return false;
	return true;
}

/* Tries every rack, best fit (least accelerators left over on the rack). */
static bool
pack_racks(struct sched_model *m, const struct sched_job *j, const struct sched_cluster *c,
	   size_t *n_allocs)
{
	struct try t = { .topo = j->topo, .host = -1, .host_grow = -1, .part = -1 };
	int best = -1, seen[256];
	int64_t best_left = INT64_MAX, left;
	size_t i, n_seen = 0, k;

	for (i = 0; i < c->n_nodes; i++) {
		const struct sched_node *nd = &c->nodes[i];

		if (nd->rack < 0 || !uses_pool_of(m, j, &c->pools[nd->pool]))
			continue;
		for (k = 0; k < n_seen && seen[k] != nd->rack; k++)
			;
		if (k < n_seen || n_seen == sizeof(seen) / sizeof(seen[0]))
			continue;
		seen[n_seen++] = nd->rack;
		t.racks[0] = nd->rack;
		t.n_racks = 1;
		if (try_pack(m, j, c, &t, n_allocs, &left) && left < best_left) {
			best_left = left;
			best = nd->rack;
		}
	}
	if (best < 0)
		return false;
	t.racks[0] = best;
	t.n_racks = 1;
	return try_pack(m, j, c, &t, n_allocs, NULL);
}

/* topology pack: the rack sets of sched_blocks_choose, best first, until one holds the
 * whole job (its cpu and memory too). */
static bool
pack_blocks(struct sched_model *m, const struct sched_job *j, const struct sched_cluster *c,
	    size_t *n_allocs)
{
	struct try t = { .topo = j->topo, .host = -1, .host_grow = -1, .part = -1 };
	struct sched_rackset sets[8];
	size_t n = sched_blocks_choose(m, j, c, sets, sizeof(sets) / sizeof(sets[0])), i;
	bool gang = false;

	for (int g = 0; g < j->n_groups; g++)
		gang |= j->groups[g].pod.v[SCHED_ACCEL] > 0;
	if (!gang)	/* topology binds the accelerator gang only */
		return try_pack(m, j, c, &t, n_allocs, NULL);
	for (i = 0; i < n; i++) {
		memcpy(t.racks, sets[i].racks, (size_t)sets[i].n * sizeof(t.racks[0]));
		t.n_racks = sets[i].n;
		if (try_pack(m, j, c, &t, n_allocs, NULL))
			return true;
	}
	return false;
}

/* Replicas of the (single) accelerator group of a slice job: each needs a whole free
 * slice of the job's shape, one pod on each of its hosts. */
static int
slice_replicas(const struct sched_job *j)
{
	int g, n = 0;

	for (g = 0; g < j->n_groups; g++)
		if (j->groups[g].pod.v[SCHED_ACCEL] > 0)
			n += sched_group_pods(j, g) / (j->groups[g].hosts > 0 ? j->groups[g].hosts : 1);
	return n;
}

#define MAX_SEEN_PARTS	512	/* partitions one pass looks at once each */

/* Hosts of a partition of each shape of sched_tpu_part_shapes (4 chips per TPU7x host). */
static const int part_hosts[SCHED_TPU_PARTS] = { 1, 2, 4, 8, 16 };

/* Partition id of shape k is whole (every one of its hosts present, as the partition's
 * INCOMPLETE state would say otherwise) and no pod of another job is on it. */
static bool
part_free(const struct sched_cluster *c, int k, int id)
{
	int n = 0;

	for (size_t i = 0; i < c->n_nodes; i++)
		if (c->nodes[i].part[k] == id) {
			if (c->nodes[i].free.v[SCHED_ACCEL] < c->nodes[i].alloc.v[SCHED_ACCEL])
				return false;
			n++;
		}
	return n == part_hosts[k];
}

/* topology slice: each replica a whole free slice of the job's shape.  First fixed slices
 * (a node pool of that shape); then, on GKE dynamic slicing (TPU7x sub-blocks of an All
 * Capacity mode reservation, https://docs.cloud.google.com/kubernetes-engine/docs/concepts/
 * dynamic-slicing), free partitions of that shape carved out of a larger reserved
 * sub-block, in sub-blocks another job already uses first so that whole sub-blocks stay
 * whole for whole-sub-block jobs. */
static bool
pack_slices(struct sched_model *m, const struct sched_job *j, const struct sched_cluster *c,
	    size_t *n_allocs)
{
	struct try t = { .topo = j->topo, .host = -1, .host_grow = -1, .part = -1 };
	int want = slice_replicas(j), k = sched_tpu_part_of(m, j->shape), top = SCHED_TPU_PARTS - 1;
	size_t i;

	if (want < 1 || want > MAX_SLICES)
		return false;
	for (i = 0; i < c->n_nodes && t.n_slices < want; i++) {
		const struct sched_node *nd = &c->nodes[i];

		if (nd->slice < 0 || nd->shape != j->shape || slice_chosen(&t, nd->slice) ||
		    !uses_pool_of(m, j, &c->pools[nd->pool]) || !slice_free(c, nd->slice))
			continue;
		t.slices[t.n_slices++] = nd->slice;
	}
	/* the replicas are all fixed slices or all partitions (each partition gets a Slice) */
	if (t.n_slices < want && k >= 0)
		t.n_slices = 0;
	for (int pass = 0; k >= 0 && pass < 2 && t.n_slices < want; pass++) {
		int seen[MAX_SEEN_PARTS], ns = 0;

		for (i = 0; i < c->n_nodes && t.n_slices < want; i++) {
			const struct sched_node *nd = &c->nodes[i];
			bool whole, dup = false;

			if (nd->part[k] < 0 || slice_chosen(&t, nd->part[k]) ||
			    !uses_pool_of(m, j, &c->pools[nd->pool]))
				continue;
			for (int x = 0; x < ns && !dup; x++)	/* each partition looked at once */
				dup = seen[x] == nd->part[k];
			if (dup)
				continue;
			if (ns < MAX_SEEN_PARTS)
				seen[ns++] = nd->part[k];
			whole = k == top || (nd->part[top] >= 0 && part_free(c, top, nd->part[top]));
			if ((pass == 0) == whole || !part_free(c, k, nd->part[k]))
				continue;
			t.slices[t.n_slices++] = nd->part[k];
			t.part = k;
		}
	}
	if (t.n_slices < want)
		return false;
	return try_pack(m, j, c, &t, n_allocs, NULL);
}

int
sched_slice_part_of(const struct sched_model *m, const struct sched_job *j,
		    const struct sched_cluster *c, const struct sched_alloc *al, size_t n)
{
	int k = j->topo == SCHED_TOPO_SLICE ? sched_tpu_part_of(m, j->shape) : -1;

	for (size_t i = 0; k >= 0 && i < n; i++)
		if (j->groups[al[i].group].pod.v[SCHED_ACCEL] > 0 && al[i].node >= 0 &&
		    (size_t)al[i].node < c->n_nodes && c->nodes[al[i].node].part[k] >= 0)
			return k + 1;
	return 0;
}

/* Accelerator pods of j at their minimum (now) or maximum (elastic growth) count. */
static void
host_need(const struct sched_job *j, bool at_max, struct sched_vec *need)
{
	int g, r;

	memset(need, 0, sizeof(*need));
	for (g = 0; g < j->n_groups; g++) {
		const struct sched_group *gr = &j->groups[g];
		int pods = at_max ? gr->max : sched_group_pods(j, g);

		if (gr->pod.v[SCHED_ACCEL] <= 0)
			continue;
		for (r = 0; r < SCHED_NRES; r++)
			need->v[r] += gr->pod.v[r] * pods;
	}
}

static bool
host_pool_ok(const struct sched_model *m, const struct sched_job *j, const struct sched_pool *p)
{
	int g;

	for (g = 0; g < j->n_groups; g++)
		if (j->groups[g].pod.v[SCHED_ACCEL] > 0 &&
		    !pool_usable(m, j, p, j->groups[g].flavor))
			return false;
	return true;
}

/* topology host: the node (existing, else one grown) whose allocatable holds the
 * accelerator gang at its maximum (elastic growth stays on that node) and whose free
 * capacity holds it now, best fit first. */
static bool
pack_hosts(struct sched_model *m, const struct sched_job *j, const struct sched_cluster *c,
	   size_t *n_allocs)
{
	struct try t = { .topo = j->topo, .host = -1, .host_grow = -1, .part = -1 };
	struct sched_vec lo, hi;
	int64_t best_left = INT64_MAX, left;
	int best = -1, best_grow = -1;
	size_t i;

	host_need(j, false, &lo);
	host_need(j, true, &hi);
	for (i = 0; i < c->n_nodes; i++) {
		const struct sched_node *nd = &c->nodes[i];

		if (!host_pool_ok(m, j, &c->pools[nd->pool]) || !sched_vec_fits(&nd->alloc, &hi) ||
		    !sched_vec_fits(&nd->free, &lo))
			continue;
		t.host = (int)i;
		if (try_pack(m, j, c, &t, n_allocs, &left) && left < best_left) {
			best_left = left;
			best = (int)i;
		}
	}
	for (i = 0; best < 0 && i < c->n_pools; i++) {
		const struct sched_pool *pp = &c->pools[i];

		if (!host_pool_ok(m, j, pp) || pp->grow_nodes < 1 ||
		    !sched_vec_fits(&pp->node_alloc, &hi))
			continue;
		t.host_grow = (int)i;
		if (try_pack(m, j, c, &t, n_allocs, NULL)) {
			best_grow = (int)i;
			break;
		}
		t.host_grow = -1;
	}
	if (best < 0 && best_grow < 0)
		return false;
	t.host = best;
	t.host_grow = best_grow;
	return try_pack(m, j, c, &t, n_allocs, NULL);
}

/* Exact fit into m->a_scratch: SCHED_R_CHOSEN, or why it does not fit. */
enum sched_reason
sched_pack_scratch(struct sched_model *m, const struct sched_job *j, const struct sched_cluster *c,
	     size_t *n_allocs)
{
	struct try t = { .topo = j->topo, .host = -1, .host_grow = -1, .part = -1 };
	bool ok;

	if (j->topo == SCHED_TOPO_RACK)
		ok = pack_racks(m, j, c, n_allocs);
	else if (j->topo == SCHED_TOPO_PACK)
		ok = pack_blocks(m, j, c, n_allocs);
	else if (j->topo == SCHED_TOPO_SLICE)
		ok = pack_slices(m, j, c, n_allocs);
	else if (j->topo == SCHED_TOPO_HOST)
		ok = pack_hosts(m, j, c, n_allocs);
	else
		ok = try_pack(m, j, c, &t, n_allocs, NULL);
	if (ok)
		return SCHED_R_CHOSEN;
	if (j->topo == SCHED_TOPO_NONE)
		return SCHED_R_INSUFFICIENT_CAPACITY;
	t.topo = SCHED_TOPO_NONE;
	return try_pack(m, j, c, &t, n_allocs, NULL) ? SCHED_R_TOPOLOGY_SPLIT :
	    SCHED_R_INSUFFICIENT_CAPACITY;
}

enum sched_reason
sched_pack(struct sched_model *m, const struct sched_job *j, const struct sched_cluster *c,
	   struct arena *a, struct sched_alloc **allocs, size_t *n_allocs)
{
	enum sched_reason why;
	size_t n = 0;

	*allocs = NULL;
	*n_allocs = 0;
	why = sched_pack_scratch(m, j, c, &n);
	if (why != SCHED_R_CHOSEN)
		return why;
	*allocs = arena_alloc(a, n * sizeof(**allocs) + 1);
	memcpy(*allocs, m->a_scratch, n * sizeof(**allocs));
	*n_allocs = n;
	return why;
}
