/* sched_blocks: topology pack — which racks (NVLink domains) of which scale unit
 * (InfiniBand block) a gang larger than one rack goes to, and how many racks a
 * placement uses. */
#include <stdlib.h>
#include <string.h>

#include "queue/sched/sched_int.h"

#define MAX_SEEN	256	/* racks looked at on one cluster */
#define MAX_BLOCKS	64	/* scale units compared on one cluster */

struct rk {
	int	rack, block;
	int64_t	cap;		/* pods of the gang's largest pod shape that fit now */
	bool	shared;		/* another gang already uses part of it */
};

struct choice {
	struct sched_rackset	set;
	int			shared;
	int64_t			left;
};

static int
cap_desc(const void *a, const void *b)
{
	const struct rk *x = *(const struct rk *const *)a, *y = *(const struct rk *const *)b;

	if (x->cap != y->cap)
		return x->cap > y->cap ? -1 : 1;
	return x->rack - y->rack;
}

static int
choice_cmp(const void *a, const void *b)
{
	const struct choice *x = a, *y = b;

	if (x->set.n != y->set.n)
		return x->set.n - y->set.n;
	if (x->shared != y->shared)
		return x->shared - y->shared;
	if (x->left != y->left)
		return x->left < y->left ? -1 : 1;
	return x->set.block - y->set.block;
}

/* The accelerator pod shape that sizes racks (the largest), and the gang's pods. */
static bool
gang_of(const struct sched_job *j, struct sched_vec *pod, int64_t *need)
{
	int g, best = -1;

	*need = 0;
	for (g = 0; g < j->n_groups; g++) {
		if (j->groups[g].pod.v[SCHED_ACCEL] <= 0)
			continue;
		*need += sched_group_pods(j, g);
		if (best < 0 || j->groups[g].pod.v[SCHED_ACCEL] > j->groups[best].pod.v[SCHED_ACCEL])
			best = g;
	}
	if (best < 0)
		return false;
	*pod = j->groups[best].pod;
	return true;
}

static bool
gang_pool(const struct sched_model *m, const struct sched_job *j, const struct sched_pool *p)
{
	for (int g = 0; g < j->n_groups; g++)
		if (j->groups[g].pod.v[SCHED_ACCEL] > 0 &&
		    sched_pool_matches(m, j, p, j->groups[g].flavor) && sched_pool_open(m, j, p))
			return true;
	return false;
}

/* The racks of c the gang may use, with their room now; returns how many. */
static size_t
collect(const struct sched_model *m, const struct sched_job *j, const struct sched_cluster *c,
	const struct sched_vec *pod, struct rk *rk)
{
	size_t i, k, n = 0;

	for (i = 0; i < c->n_nodes; i++) {
		const struct sched_node *nd = &c->nodes[i];
		int64_t fit;

		if (nd->rack < 0 || !gang_pool(m, j, &c->pools[nd->pool]))
			continue;
		for (k = 0; k < n && rk[k].rack != nd->rack; k++)
			;
		if (k == n) {
			if (n == MAX_SEEN)
				continue;
			rk[n++] = (struct rk){ .rack = nd->rack, .block = nd->block };
		}
		if (nd->free.v[SCHED_ACCEL] < nd->alloc.v[SCHED_ACCEL])
			rk[k].shared = true;
		fit = j->n_avoid > 0 && sched_job_avoids(j, c->id, nd->id) ? 0 :
		    sched_vec_count(&nd->free, pod);
		rk[k].cap += fit;
	}
	return n;
}

/* The first k of v (cap descending) whose room holds need, with the last one swapped for
 * the smallest rack of v that still completes it; false when k racks of v cannot. */
static bool
take_k(struct rk **v, size_t nv, int k, int64_t need, struct choice *ch)
{
	int64_t sum = 0, rest;
	size_t i, last, best;

	if ((size_t)k > nv)
		return false;
	for (i = 0; i < (size_t)k; i++)
		sum += v[i]->cap;
	if (sum < need)
		return false;
	last = (size_t)k - 1;
	rest = sum - v[last]->cap;
	best = last;
	for (i = (size_t)k; i < nv; i++)
		if (rest + v[i]->cap >= need && v[i]->cap < v[best]->cap)
			best = i;
	ch->set.n = k;
	ch->shared = 0;
	for (i = 0; i < (size_t)k; i++) {
		const struct rk *r = i == last ? v[best] : v[i];

		ch->set.racks[i] = r->rack;
		ch->shared += r->shared;
	}
	ch->left = rest + v[best]->cap - need;
	return true;
}

/* The best rack set of one scale unit (racks in v, cap descending); false: none holds it. */
static bool
in_block(struct rk **v, size_t nv, int64_t need, struct choice *ch)
{
	struct rk *free_racks[MAX_SEEN];
	size_t nf = 0, i;
	int64_t sum = 0;
	int k = 0;

	for (i = 0; i < nv && sum < need; i++, k++)
		sum += v[i]->cap;
	if (sum < need || k > SCHED_MAX_RACKS)
		return false;
	if (k == 1) {
		/* one rack: best fit, a partly used rack first (whole racks stay whole) */
		size_t b = 0;

		for (i = 1; i < nv && v[i]->cap >= need; i++)
			b = i;
		ch->set.n = 1;
		ch->set.racks[0] = v[b]->rack;
		ch->shared = 0;
		ch->left = v[b]->cap - need;
		return true;
	}
	/* more than one rack: racks no other gang uses when they suffice */
	for (i = 0; i < nv; i++)
		if (!v[i]->shared)
			free_racks[nf++] = v[i];
	return take_k(free_racks, nf, k, need, ch) || take_k(v, nv, k, need, ch);
}

size_t
sched_blocks_choose(const struct sched_model *m, const struct sched_job *j,
		    const struct sched_cluster *c, struct sched_rackset *out, size_t max)
{
	struct rk rk[MAX_SEEN], *v[MAX_SEEN];
	struct choice ch[MAX_BLOCKS];
	struct sched_vec pod;
	int64_t need;
	size_t n, nb = 0, i, k, nv;

	if (!gang_of(j, &pod, &need) || need < 1)
		return 0;
	n = collect(m, j, c, &pod, rk);
	for (i = 0; i < n && nb < MAX_BLOCKS; i++) {
		bool seen = false;

		for (k = 0; k < i; k++)
			seen |= rk[k].block == rk[i].block;
		if (seen)
			continue;
		for (nv = 0, k = i; k < n; k++)
			if (rk[k].block == rk[i].block && rk[k].cap > 0)
				v[nv++] = &rk[k];
		qsort(v, nv, sizeof(*v), cap_desc);
		memset(&ch[nb], 0, sizeof(ch[nb]));
		if (in_block(v, nv, need, &ch[nb])) {
			ch[nb].set.block = rk[i].block;
			nb++;
		}
	}
	qsort(ch, nb, sizeof(*ch), choice_cmp);
	for (i = 0; i < nb && i < max; i++)
		out[i] = ch[i].set;
	return i;
}

int
sched_racks_of(const struct sched_job *j, const struct sched_cluster *c,
	       const struct sched_alloc *al, size_t n)
{
	int seen[MAX_SEEN], ns = 0, k;
	size_t i;

	for (i = 0; i < n; i++) {
		int r;

		if (al[i].group >= j->n_groups || j->groups[al[i].group].pod.v[SCHED_ACCEL] <= 0 ||
		    al[i].node < 0 || al[i].grown || (size_t)al[i].node >= c->n_nodes)
			continue;
		r = c->nodes[al[i].node].rack;
		if (r < 0)
			continue;
		for (k = 0; k < ns && seen[k] != r; k++)
			;
		if (k == ns && ns < MAX_SEEN)
			seen[ns++] = r;
	}
	return ns;
}

int64_t
sched_blocks_largest(const struct sched_model *m, const struct sched_job *j,
		     const struct sched_cluster *c, int *block, int *racks, int64_t *need)
{
	struct unit { int block; int64_t accel; int racks; } u[MAX_BLOCKS];
	int seen[MAX_SEEN][2], ns = 0, nu = 0, best = -1;

	*block = -1;
	*racks = 0;
	*need = 0;
	for (int g = 0; g < j->n_groups; g++)
		if (j->groups[g].pod.v[SCHED_ACCEL] > 0)
			*need += sched_group_pods(j, g) * j->groups[g].pod.v[SCHED_ACCEL];
	for (size_t i = 0; i < c->n_nodes; i++) {
		const struct sched_node *nd = &c->nodes[i];
		int k, b;

		if (nd->rack < 0 || !gang_pool(m, j, &c->pools[nd->pool]))
			continue;
		for (b = 0; b < nu && u[b].block != nd->block; b++)
			;
		if (b == nu) {
			if (nu == MAX_BLOCKS)
				continue;
			u[nu++] = (struct unit){ .block = nd->block };
		}
		u[b].accel += nd->alloc.v[SCHED_ACCEL];
		for (k = 0; k < ns && (seen[k][0] != nd->rack || seen[k][1] != nd->block); k++)
			;
		if (k == ns && ns < MAX_SEEN) {
			seen[ns][0] = nd->rack;
			seen[ns++][1] = nd->block;
			u[b].racks++;
		}
	}
	for (int b = 0; b < nu; b++)
		if (best < 0 || u[b].accel > u[best].accel)
			best = b;
	if (best < 0)
		return 0;
	*block = u[best].block;
	*racks = u[best].racks;
	return u[best].accel;
}
