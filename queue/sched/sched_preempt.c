/* sched_preempt: the smallest set of victims on one cluster that lets a pending
 * job in: lower priority jobs of its own queue, and jobs of cohort queues that
 * borrow what it needs, under the no-loop fair-share rule.  A job whose priority class
 * may not preempt still reclaims its queue's lent quota (sched_reclaims). */
#include <stdlib.h>
#include <string.h>

#include "queue/sched/sched_int.h"

struct cand {
	int	job;
	bool	cross;		/* from another queue of the cohort */
};

int
sched_victim_cmp(const struct sched_job *x, const struct sched_job *y)
{
	if (x->priority != y->priority)
		return x->priority < y->priority ? -1 : 1;
	if (x->admitted_at != y->admitted_at)
		return x->admitted_at > y->admitted_at ? -1 : 1;
	return x->idx - y->idx;
}

/* Grown workers first (issue 26: a job shrinks back to what it was admitted with before
 * any whole job is preempted), then cohort borrowers, then the victim order. */
static int
cand_cmp(const void *a, const void *b, void *arg)
{
	const struct sched_model *m = arg;
	const struct cand *x = a, *y = b;
	bool gx = m->jobs[x->job]->grow_of >= 0, gy = m->jobs[y->job]->grow_of >= 0;

	if (gx != gy)
		return gx ? -1 : 1;
	if (x->cross != y->cross)
		return x->cross ? -1 : 1;
	return sched_victim_cmp(m->jobs[x->job], m->jobs[y->job]);
}

/* vq uses more than its nominal quota of a resource that both v and j use. */
static bool
borrows_what_j_needs(const struct sched_queue *vq, const struct sched_job *v,
		     const struct sched_job *j)
{
	int a, b, r;

	for (a = 0; a < v->n_req; a++)
		for (b = 0; b < j->n_req; b++) {
			int f = v->req[a].flavor;

			if (j->req[b].flavor != f)
				continue;
			for (r = 0; r < SCHED_NRES; r++) {
				int64_t nom = vq->has_quota[f] ? vq->quota[f].nominal.v[r] : 0;

				if (nom == SCHED_UNSET || v->req[a].v.v[r] <= 0 || j->req[b].v.v[r] <= 0)
					continue;
				if (vq->usage[f].v[r] > nom)
					return true;
			}
		}
	return false;
}

/* j fits within its queue's nominal quota: it reclaims what its queue lent, which the
 * floor guarantees whatever j's priority class (which governs evictions in its own queue). */
bool
sched_reclaims(const struct sched_model *m, const struct sched_job *j)
{
	const struct sched_queue *q = m->queues[j->queue];
	int k, r;

	for (k = 0; k < j->n_req; k++) {
		int f = j->req[k].flavor;

		for (r = 0; r < SCHED_NRES; r++) {
			int64_t nom = q->has_quota[f] ? q->quota[f].nominal.v[r] : 0;

			if (nom == SCHED_UNSET || j->req[k].v.v[r] <= 0)
				continue;
			if (q->usage[f].v[r] + j->req[k].v.v[r] > nom)
				return false;
		}
	}
	return true;
}

/* p is not held for another job; a job within its floor also passes the hold of a job
 * that would borrow (the floor is a guarantee, a hold only keeps backfill from starving
 * an older gang). */
bool
sched_pool_open(const struct sched_model *m, const struct sched_job *j, const struct sched_pool *p)
{
	return p->held_by < 0 || p->held_by == j->idx ||
	    (sched_reclaims(m, j) && !sched_reclaims(m, m->jobs[p->held_by]));
}

/* v once evicted j: evicting it back would be a preempt-requeue cycle (the no-loop rule
 * below holds only while nothing else changes; arrivals and completions in between can
 * make either side look the poorer).  j waits for other capacity or other victims. */
static bool
evicted_me(const struct sched_job *j, const struct sched_job *v)
{
	int i;

	for (i = 0; i < j->n_evicted_by; i++)
		if (strcmp(j->evicted_by[i], v->id) == 0)
			return true;
	return false;
}

static size_t
collect(const struct sched_model *m, const struct sched_job *j, enum sched_preemptor by,
	struct cand **out)
{
	const struct sched_queue *q = m->queues[j->queue];
	struct cand *c = NULL;
	size_t i, n = 0, cap = 0;

	for (i = 0; i < m->n_jobs; i++) {
		const struct sched_job *v = m->jobs[i];
		const struct sched_queue *vq = m->queues[v->queue];
		bool cross;

		if ((v->state != SCHED_ADMITTED && v->state != SCHED_RUNNING) || v->cluster < 0 ||
		    v == j || vq->env != q->env || (v->flavor_mask & j->flavor_mask) == 0 ||
		    evicted_me(j, v))
			continue;
		/* "<id>#move", "#upgrade", "#run:<name>" (queue/sched/loader.c): footprints held for a
		 * job, not jobs; the commit cannot evict them, so a plan must not count on it.
		 * "#grow:<n>" is evicted by shrinking it (queue/sched/scheduler.c) */
		if (strchr(v->id, '#') != NULL && (v->grow_of < 0 || by == SCHED_PREEMPT_MOVE))
			continue;	/* a move preempts whole jobs only (queue/change/move.c) */
		/* a grow never takes its own job's room, nor a sibling grow's */
		if (j->grow_of >= 0 && (v->idx == j->grow_of || v->grow_of == j->grow_of))
			continue;
		if (vq == q) {
			if (!j->can_preempt || v->priority >= j->priority)
				continue;
			cross = false;
		} else {
			if (vq->group != q->group || !borrows_what_j_needs(vq, v, j))
				continue;
			cross = true;
		}
		c = sched_grow(c, &cap, n + 1, sizeof(*c));
		c[n].job = (int)i;
		c[n++].cross = cross;
	}
	if (n > 1)
		qsort_r(c, n, sizeof(*c), cand_cmp, (void *)m);
	*out = c;
	return n;
}

static bool
fits(struct sched_model *m, const struct sched_job *j, const struct sched_cluster *c)
{
	size_t n;

	return sched_quota_check(m, j) == SCHED_R_CHOSEN &&
	    sched_quick_fit(m, j, c) == SCHED_R_CHOSEN &&
	    sched_pack_scratch(m, j, c, &n) == SCHED_R_CHOSEN;
}

static void
restore(struct sched_model *m, struct sched_job *v)
{
	sched_capacity_take(m, m->clusters[v->cluster], v->allocs, v->n_allocs);
	sched_usage_add(m, v, +1);
}

/* Evicting v keeps fair share from looping: the preemptor's queue share after
 * admission must stay <= the victim queue's share after eviction, and strictly
 * below its share before eviction when the preemptor would borrow. */
static bool
evict(struct sched_model *m, const struct sched_job *j, struct sched_job *v, bool cross)
{
	const struct sched_queue *q = m->queues[j->queue], *vq = m->queues[v->queue];
	double before, after, mine;
	bool borrowing;

	if (cross && !borrows_what_j_needs(vq, v, j))
		return false;
	before = sched_share(m, vq, NULL, NULL);
	sched_release(m, v);
	if (!cross)
		return true;
	after = sched_share(m, vq, NULL, NULL);
	mine = sched_share(m, q, j, &borrowing);
	if (mine <= after && (!borrowing || mine < before))
		return true;
	restore(m, v);
	return false;
}

/* Greedy on cluster c, then drops victims found unnecessary.  On success the
 * victims stay released in the model; the caller restores them. */
static size_t
try_cluster(struct sched_model *m, const struct sched_job *j, struct sched_cluster *c,
	    const struct cand *cs, size_t n, int *vic)
{
	size_t i, k = 0;
	bool ok = false;

	for (i = 0; i < n && !ok; i++) {
		struct sched_job *v = m->jobs[cs[i].job];

		if (v->cluster != c->idx || !evict(m, j, v, cs[i].cross))
			continue;
		vic[k++] = v->idx;
		ok = fits(m, j, c);
	}
	if (!ok) {
		while (k > 0)
			restore(m, m->jobs[vic[--k]]);
		return 0;
	}
	for (i = k; i-- > 0;) {
		struct sched_job *v = m->jobs[vic[i]];

		restore(m, v);
		if (fits(m, j, c)) {
			memmove(&vic[i], &vic[i + 1], (k - i - 1) * sizeof(*vic));
			k--;
		} else {
			sched_release(m, v);
		}
	}
	return k;
}

static size_t
whole_jobs(const struct sched_model *m, const int *v, size_t n)
{
	size_t k = 0;

	for (size_t i = 0; i < n; i++)
		k += m->jobs[v[i]]->grow_of < 0;
	return k;
}

/* Fewer whole jobs preempted first (shrinking grown workers costs no job its run), then
 * fewer victims, then lower priorities. */
static bool
better(const struct sched_model *m, const int *a, size_t na, const int *b, size_t nb)
{
	int pa = -2147483647, pb = -2147483647;
	size_t i, wa, wb;

	if (nb == 0)
		return true;
	wa = whole_jobs(m, a, na);
	wb = whole_jobs(m, b, nb);
	if (wa != wb)
		return wa < wb;
	if (na != nb)
		return na < nb;
	for (i = 0; i < na; i++) {
		if (m->jobs[a[i]]->priority > pa)
			pa = m->jobs[a[i]]->priority;
		if (m->jobs[b[i]]->priority > pb)
			pb = m->jobs[b[i]]->priority;
	}
	return pa < pb;
}

/* A move preempts only jobs of strictly lower priority, whatever their queue. */
static bool
move_may_take(const struct sched_model *m, const struct sched_job *j,
	      const struct sched_preemption *pp)
{
	for (size_t i = 0; i < pp->n_victims; i++)
		if (m->jobs[pp->victims[i]]->priority >= j->priority)
			return false;
	return true;
}

bool
sched_preempt_plan(struct sched_model *m, const struct sched_job *j, enum sched_preemptor by,
		   struct arena *a, struct sched_preemption *out)
{
	struct cand *cs = NULL;
	int *vic = NULL, *best = NULL;
	size_t n, i, k, nbest = 0, n_allocs = 0;
	unsigned char *seen = NULL;

	memset(out, 0, sizeof(*out));
	out->cluster = -1;
	if (by == SCHED_PREEMPT_MOVE && !j->can_preempt)
		return false;
	if ((n = collect(m, j, by, &cs)) == 0)
		goto cleanup;
	vic = calloc(n, sizeof(*vic));
	best = calloc(n, sizeof(*best));
	seen = calloc(m->n_clusters, 1);
	if (vic == NULL || best == NULL || seen == NULL)
		abort();
	for (i = 0; i < n; i++) {
		struct sched_cluster *c = m->clusters[m->jobs[cs[i].job]->cluster];

		if (seen[c->idx]++ || sched_cluster_filter(m, j, c) != SCHED_R_CHOSEN)
			continue;
		if (j->grow_of >= 0 && c->idx != j->grow_cluster)
			continue;
		if ((k = try_cluster(m, j, c, cs, n, vic)) == 0)
			continue;
		if (better(m, vic, k, best, nbest)) {
			sched_pack_scratch(m, j, c, &n_allocs);
			out->allocs = arena_alloc(a, n_allocs * sizeof(*out->allocs) + 1);
			memcpy(out->allocs, m->a_scratch, n_allocs * sizeof(*out->allocs));
			out->n_allocs = n_allocs;
			out->cluster = c->idx;
			memcpy(best, vic, k * sizeof(*vic));
			nbest = k;
		}
		while (k > 0)
			restore(m, m->jobs[vic[--k]]);
	}
	if (nbest > 0) {
		out->victims = arena_alloc(a, nbest * sizeof(*out->victims));
		memcpy(out->victims, best, nbest * sizeof(*best));
		out->n_victims = nbest;
	}
cleanup:
	free(cs);
	free(vic);
	free(best);
	free(seen);
	if (by == SCHED_PREEMPT_MOVE && !move_may_take(m, j, out))
		return false;
	return out->n_victims > 0;
}
