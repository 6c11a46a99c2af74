/* sched_cycle: one scheduling pass.  Queue heads are served in fair-share order
 * (lowest share after admission; then not borrowing, priority, age); within a
 * queue priority then age; strict_fifo blocks behind its head; a head that has
 * waited starve_after holds a cluster so smaller jobs cannot starve it.  When the
 * loader held back the tail of a queue (sched_queue.more), the pass stops where that
 * tail would be served (next_queue). */
#include <stdlib.h>
#include <string.h>

#include "queue/sched/sched_int.h"

static int
pending_cmp(const void *a, const void *b, void *arg)
{
	const struct sched_model *m = arg;
	const struct sched_job *x = m->jobs[*(const int *)a], *y = m->jobs[*(const int *)b];

	if (x->priority != y->priority)
		return x->priority > y->priority ? -1 : 1;
	if (x->enqueued_at != y->enqueued_at)
		return x->enqueued_at < y->enqueued_at ? -1 : 1;
	return x->idx - y->idx;
}

static size_t
build_queues(struct sched_model *m)
{
	size_t i, total = 0;

	for (i = 0; i < m->n_queues; i++) {
		m->queues[i]->n_pending = m->queues[i]->cursor = 0;
		m->queues[i]->blocked = m->queues[i]->open = false;
		m->queues[i]->memo_job = -1;
	}
	for (i = 0; i < m->n_jobs; i++)
		if (m->jobs[i]->state == SCHED_PENDING)
			m->queues[m->jobs[i]->queue]->n_pending++;
	for (i = 0; i < m->n_queues; i++) {
		struct sched_queue *q = m->queues[i];

		free(q->pending);
		q->pending = calloc(q->n_pending + 1, sizeof(int));
		if (q->pending == NULL)
			abort();
		q->n_pending = 0;
	}
	for (i = 0; i < m->n_jobs; i++) {
		struct sched_queue *q = m->queues[m->jobs[i]->queue];

		if (m->jobs[i]->state != SCHED_PENDING)
			continue;
		q->pending[q->n_pending++] = (int)i;
		total++;
	}
	for (i = 0; i < m->n_queues; i++) {
		struct sched_queue *q = m->queues[i];
		size_t k;

		qsort_r(q->pending, q->n_pending, sizeof(int), pending_cmp, m);
		for (k = 0; k < q->n_pending; k++)
			m->jobs[q->pending[k]]->rank = (int)k;
	}
	return total;
}

/* The flavors a hold covers: the job's accelerator flavors only.  Holding the cpu pool
 * for its head would stop every other job's head on that cluster (the trace of
 * bench/trace.sh: whole clusters idle behind one waiting gang). */
static bool
held_flavor(const struct sched_model *m, const struct sched_job *j, int f)
{
	return f != m->cpu_flavor || j->flavor_mask == (1ULL << f);
}

static void
hold_pools(struct sched_model *m, struct sched_job *j, struct sched_cluster *c)
{
	size_t p;
	int g;

	for (p = 0; p < c->n_pools; p++)
		for (g = 0; g < j->n_groups; g++)
			if (c->pools[p].held_by < 0 && held_flavor(m, j, j->groups[g].flavor) &&
			    sched_pool_matches(m, j, &c->pools[p], j->groups[g].flavor))
				c->pools[p].held_by = j->idx;
	j->hold_cluster = c->idx;
}

/* Releases j's hold; true when a pool it held is open again. */
static bool
unhold(struct sched_model *m, struct sched_job *j)
{
	bool freed = false;
	size_t p;

	if (j->hold_cluster >= 0 && (size_t)j->hold_cluster < m->n_clusters) {
		struct sched_cluster *c = m->clusters[j->hold_cluster];

		for (p = 0; p < c->n_pools; p++)
			if (c->pools[p].held_by == j->idx) {
				c->pools[p].held_by = -1;
				freed = true;
			}
	}
	j->hold_cluster = -1;
	return freed;
}

/* Holds carried over from earlier cycles, oldest job first. */
static size_t
restore_holds(struct sched_model *m)
{
	size_t i, p, n = 0;
	int *idx = calloc(m->n_jobs + 1, sizeof(int));

	if (idx == NULL)
		abort();
	for (i = 0; i < m->n_clusters; i++)
		for (p = 0; p < m->clusters[i]->n_pools; p++)
			m->clusters[i]->pools[p].held_by = -1;
	for (i = 0; i < m->n_jobs; i++)
		if (m->jobs[i]->state == SCHED_PENDING && m->jobs[i]->hold_cluster >= 0)
			idx[n++] = (int)i;
	qsort_r(idx, n, sizeof(int), pending_cmp, m);
	for (i = 0; i < n; i++) {
		struct sched_job *j = m->jobs[idx[i]];
		struct sched_cluster *c = (size_t)j->hold_cluster < m->n_clusters ?
		    m->clusters[j->hold_cluster] : NULL;

		j->hold_cluster = -1;
		if (c != NULL && sched_cluster_filter(m, j, c) == SCHED_R_CHOSEN)
			hold_pools(m, j, c);
	}
	free(idx);
	return n;
}

/* The cluster where j could fit once emptied and that is closest to fitting now. */
static void
choose_hold(struct sched_model *m, struct sched_job *j)
{
	int env = m->queues[j->queue]->env, best = -1, k, r;
	double best_ratio = -1.0;
	size_t i, p;

	for (i = 0; i < m->n_clusters; i++) {
		struct sched_cluster *c = m->clusters[i];
		double ratio = 1e300;
		bool ok = true;

		if (c->env != env || sched_cluster_filter(m, j, c) != SCHED_R_CHOSEN)
			continue;
		for (k = 0; k < j->n_req && ok; k++) {
			struct sched_vec tot = { { 0 } }, fr = { { 0 } };

			for (p = 0; p < c->n_pools; p++) {
				const struct sched_pool *pp = &c->pools[p];
				size_t n;

				if (!sched_pool_matches(m, j, pp, j->req[k].flavor))
					continue;
				if (pp->held_by >= 0 && pp->held_by != j->idx &&
				    held_flavor(m, j, j->req[k].flavor))
					ok = false;
				for (n = 0; n < c->n_nodes; n++)
					if (c->nodes[n].pool == (int)p)
						for (r = 0; r < SCHED_NRES; r++)
							tot.v[r] += c->nodes[n].alloc.v[r];
				for (r = 0; r < SCHED_NRES; r++)
					fr.v[r] += pp->sum_free.v[r];
			}
			ok = ok && sched_vec_fits(&tot, &j->req[k].v);
			for (r = 0; r < SCHED_NRES && ok; r++)
				if (j->req[k].v.v[r] > 0 &&
				    (double)fr.v[r] / (double)j->req[k].v.v[r] < ratio)
					ratio = (double)fr.v[r] / (double)j->req[k].v.v[r];
		}
		if (ok && ratio > best_ratio) {
			best_ratio = ratio;
			best = (int)i;
		}
	}
	if (best >= 0)
		hold_pools(m, j, m->clusters[best]);
}

/* Whether the next pending job of q that the loader left out might be served before bj
 * (NULL: none left), whose share after admission is bs: next_queue's order with each
 * unknown taken at its most favourable.  That job's share and borrowing are at least q's
 * now; its priority at most, its age at most, those of q's last loaded job. */
static bool
cut_first(const struct sched_model *m, const struct sched_queue *q, const struct sched_job *bj,
	  double bs, bool bb)
{
	const struct sched_job *last = NULL;
	double s;
	bool b;
	size_t k;

	for (k = q->n_pending; k > 0 && last == NULL; k--)
		if (m->jobs[q->pending[k - 1]]->grow_of < 0)	/* grows are all loaded */
			last = m->jobs[q->pending[k - 1]];
	s = sched_share(m, q, NULL, &b);
	if (bj == NULL || last == NULL || s < bs)
		return true;
	if (s > bs || b > bb)
		return false;
	if (b < bb)
		return true;
	if (last->priority != bj->priority)
		return last->priority > bj->priority;
	return last->enqueued_at <= bj->enqueued_at;
}

/* The last job of q the loader loaded was just tried (grow requests aside). */
static bool
last_loaded(const struct sched_model *m, const struct sched_queue *q)
{
	size_t k;

	for (k = q->cursor; k < q->n_pending; k++)
		if (m->jobs[q->pending[k]]->grow_of < 0)
			return false;
	return true;
}

static struct sched_queue *
next_queue(struct sched_model *m, double *share, bool *borrowing)
{
	struct sched_queue *best = NULL;
	const struct sched_job *bj = NULL;
	double bs = 0.0, s;
	bool bb = false, b;
	size_t i;

	for (i = 0; i < m->n_queues; i++) {
		struct sched_queue *q = m->queues[i];
		const struct sched_job *j;

		if (q->blocked || q->cursor >= q->n_pending)
			continue;
		j = m->jobs[q->pending[q->cursor]];
		if (q->memo_job != j->idx || q->memo_gen != q->gen) {
			q->memo_share = sched_share(m, q, j, &q->memo_borrowing);
			q->memo_job = j->idx;
			q->memo_gen = q->gen;
		}
		s = q->memo_share;
		b = q->memo_borrowing;
		if (best != NULL && (s > bs || (s == bs && (b > bb || (b == bb &&
		    (j->priority < bj->priority || (j->priority == bj->priority &&
		    (j->enqueued_at > bj->enqueued_at || (j->enqueued_at == bj->enqueued_at &&
		    j->idx > bj->idx)))))))))
			continue;
		best = q;
		bj = j;
		bs = s;
		bb = b;
	}
	/* A queue the loader's window cut and that still admitted its last loaded job would be
	 * served here if its next job came first: that job is not in the model, so the cycle
	 * stops.  Up to here every decision is the one a model of every pending job gives; the
	 * next cycle goes on from there.  A cut queue whose last loaded job stayed pending is
	 * done for the cycle: a later job of it fits where that one did not only when smaller
	 * or of another flavor, and stopping for it could stop every cycle. */
	for (i = 0; i < m->n_queues; i++)
		if (m->queues[i]->open && cut_first(m, m->queues[i], bj, bs, bb))
			return NULL;
	*share = bs;
	*borrowing = bb;
	return best;
}

static bool
may_preempt(const struct sched_model *m, const struct sched_job *j, enum sched_reason why)
{
	if (!m->cfg.preempt || (!j->can_preempt && !sched_reclaims(m, j)))
		return false;
	return why == SCHED_R_OVER_QUOTA || why == SCHED_R_BORROWING_LIMIT ||
	    why == SCHED_R_INSUFFICIENT_CAPACITY || why == SCHED_R_TOPOLOGY_SPLIT ||
	    why == SCHED_R_RESERVED;
}

/* The arena a placement is tried in: the cycle's, or with cfg.lean_pending a scratch one
 * (renewed once it passes 1 MiB: the decisions that pointed into it were settled by then;
 * an attempt leaves a few hundred bytes there, so a larger bound only raised the peak). */
static struct arena *
place_arena(struct sched_model *m, struct arena *a)
{
	if (!m->cfg.lean_pending)
		return a;
	if (m->place_tmp != NULL && arena_used(m->place_tmp) > ((size_t)1 << 20)) {
		arena_free(m->place_tmp);
		m->place_tmp = NULL;
	}
	if (m->place_tmp == NULL)
		m->place_tmp = arena_new();
	return m->place_tmp;
}

/* A pending decision of a lean_pending cycle (and one never attempted): nothing placed,
 * no detail.  Shared by all of them: at 100,000 pending jobs a placement of its own each
 * took 7 MiB. */
static const struct sched_placement no_place = { .cluster = -1, .racks_used = -1,
    .racks_scattered = -1 };

/* The placement d keeps of an attempt p: an admission copies into the cycle's arena what
 * still lives in the scratch arena, but for its allocations, which are those sched_apply
 * gave the admitted job (own: p->allocs are in the scratch and equal to own->allocs; NULL:
 * they are in the cycle's arena already); a pending decision of a lean_pending cycle keeps
 * none (its reason is the decision's). */
static const struct sched_placement *
keep_place(struct sched_model *m, struct arena *a, const struct sched_placement *p,
	   enum sched_outcome outcome, const struct sched_job *own)
{
	struct sched_placement *k;

	if (m->cfg.lean_pending && outcome != SCHED_OUT_ADMIT)
		return &no_place;
	k = arena_alloc(a, sizeof(*k));
	*k = *p;
	if (!m->cfg.lean_pending)
		return k;	/* the attempt's memory is the cycle's already */
	if (k->counts != NULL) {
		uint16_t *c = arena_alloc(a, sizeof(*c) * SCHED_NREASONS);

		memcpy(c, k->counts, sizeof(*c) * SCHED_NREASONS);
		k->counts = c;
	}
	if (k->cands != NULL) {
		struct sched_candidate *c = arena_alloc(a, (k->n_cands > 0 ? k->n_cands : 1) *
		    sizeof(*c));

		memcpy(c, k->cands, k->n_cands * sizeof(*c));
		k->cands = c;
	}
	if (own != NULL && k->allocs != NULL)
		k->allocs = own->allocs;	/* valid while the job keeps its placement */
	return k;
}

/* Failed preemption searches of this cycle.  A search's outcome depends on the model and on
 * what the job asks (queue, priority, groups, placement constraints), not on which job asks:
 * while no admission, eviction or hold changes the model, a job equal in all of that to one
 * whose search just failed fails too.  At 50,000 pending jobs that cannot preempt, searching
 * again for each (every candidate victim scanned and sorted) kept the scheduler busy for
 * half a minute per cycle (bench/api.sh's workers mode, 100,000 jobs). */
#define NOFIT_SLOTS	4096

struct nofit {
	uint64_t	hash;
	int		job;	/* the job whose search failed */
	unsigned	gen;	/* the model's generation then; 0 = empty */
};

static uint64_t
mix(uint64_t h, int64_t v)
{
	h ^= (uint64_t)v;
	return h * 0x100000001b3ULL;
}

static uint64_t
class_hash(const struct sched_job *j)
{
	uint64_t h = 0xcbf29ce484222325ULL;
	int g, r;

	h = mix(h, j->queue);
	h = mix(h, j->priority);
	h = mix(h, j->can_preempt);
	h = mix(h, j->topo);
	h = mix(h, j->shape);
	h = mix(h, j->spot);
	h = mix(h, (int64_t)(j->max_price * 1000.0));
	h = mix(h, (int64_t)j->flavor_mask);
	h = mix(h, j->first_only);
	for (g = 0; g < j->n_pref; g++)
		h = mix(h, j->pref[g] + 31);
	for (g = 0; g < j->n_groups; g++) {
		const struct sched_group *gr = &j->groups[g];

		h = mix(h, gr->flavor);
		h = mix(h, gr->min);
		h = mix(h, gr->max);
		h = mix(h, gr->head);
		h = mix(h, gr->hosts);
		for (r = 0; r < SCHED_NRES; r++)
			h = mix(h, gr->pod.v[r]);
	}
	for (g = 0; g < j->n_regions; g++)
		h = mix(h, j->regions[g]);
	for (g = 0; g < j->n_providers; g++)
		h = mix(h, j->providers[g] + 7919);
	return h;
}

/* a and b ask for the same thing (every input of sched_preempt_plan but the model). */
static bool
same_class(const struct sched_job *a, const struct sched_job *b)
{
	int g, r;

	if (a->queue != b->queue || a->priority != b->priority ||
	    a->can_preempt != b->can_preempt || a->topo != b->topo || a->shape != b->shape ||
	    a->spot != b->spot || a->max_price != b->max_price ||
	    a->flavor_mask != b->flavor_mask || a->n_groups != b->n_groups ||
	    a->n_regions != b->n_regions || a->n_providers != b->n_providers ||
	    a->n_req != b->n_req || a->n_pref != b->n_pref || a->first_only != b->first_only ||
	    memcmp(a->pref, b->pref, sizeof(a->pref)) != 0)
		return false;
	for (g = 0; g < a->n_groups; g++) {
		const struct sched_group *x = &a->groups[g], *y = &b->groups[g];

		if (x->flavor != y->flavor || x->min != y->min || x->max != y->max ||
		    x->head != y->head || x->hosts != y->hosts)
			return false;
		for (r = 0; r < SCHED_NRES; r++)
			if (x->pod.v[r] != y->pod.v[r])
				return false;
	}
	for (g = 0; g < a->n_regions; g++)
		if (a->regions[g] != b->regions[g])
			return false;
	for (g = 0; g < a->n_providers; g++)
		if (a->providers[g] != b->providers[g])
			return false;
	return true;
}

/* A job that holds pools (they are open to it alone), that was evicted (it never evicts
 * its evictors back: its own candidate list) or a grow request is never memoized. */
static bool
memoizable(const struct sched_job *j)
{
	/* a grow's search is bound to its job's cluster and domain, which the class omits */
	return j->hold_cluster < 0 && j->n_evicted_by == 0 && j->grow_of < 0;
}

static bool
nofit_known(const struct sched_model *m, const struct nofit *t, unsigned gen,
	    const struct sched_job *j, uint64_t h)
{
	const struct nofit *s = &t[h % NOFIT_SLOTS];

	return s->gen == gen && s->hash == h && s->job >= 0 && (size_t)s->job < m->n_jobs &&
	    same_class(m->jobs[s->job], j);
}

static bool
preempt_plan(struct sched_model *m, struct sched_job *j, struct arena *a,
	     struct sched_preemption *pp, struct nofit *t, unsigned gen, struct sched_cycle *out)
{
	uint64_t h = 0;
	bool memo = t != NULL && memoizable(j);

	if (memo) {
		h = class_hash(j);
		if (nofit_known(m, t, gen, j, h)) {
			out->preempt_memo_hits++;
			return false;
		}
	}
	out->preempt_searches++;
	if (sched_preempt_plan(m, j, SCHED_PREEMPT_ADMIT, a, pp))
		return true;
	if (memo) {
		struct nofit *s = &t[h % NOFIT_SLOTS];

		s->hash = h;
		s->job = j->idx;
		s->gen = gen;
	}
	return false;
}

/* A whole job preempted takes its admitted grow requests with it (the database releases
 * them with the job's state change, migration 0026): their room comes back too. */
static void
release_grows(struct sched_model *m, const struct sched_job *v)
{
	if (v->grow_of >= 0)
		return;
	for (size_t i = 0; i < m->n_jobs; i++) {
		struct sched_job *g = m->jobs[i];

		if (g->grow_of != v->idx ||
		    (g->state != SCHED_ADMITTED && g->state != SCHED_RUNNING))
			continue;	/* a pending one's admission fails at commit */
		sched_release(m, g);
		g->state = SCHED_PREEMPTED;
	}
}

/* *reopened: capacity or quota came back during the cycle (evictions, a released hold).
 * *gen moves on whenever the model changes (an admission, eviction or hold). */
static void
attempt(struct sched_model *m, struct sched_job *j, struct arena *a, struct sched_decision *d,
	size_t *holds, bool *reopened, struct nofit *nofit, unsigned *gen,
	struct sched_cycle *out)
{
	struct sched_preemption pp;
	struct sched_placement pl;
	enum sched_reason quota = sched_quota_check(m, j);
	size_t i;
	int rank;
	bool planned;

	if (sched_place_pref(m, j, quota, place_arena(m, a), &pl, &rank)) {
		*reopened |= unhold(m, j);
		sched_apply(m, j, pl.cluster, pl.allocs, pl.n_allocs);
		d->outcome = SCHED_OUT_ADMIT;
		out->admitted++;
		++*gen;
		d->place = keep_place(m, a, &pl, d->outcome, j);
		return;
	}
	d->reason = pl.reason;
	/* a job that takes only its first choice preempts only there (sched_prefs.c) */
	m->ctype_only = j->first_only && j->n_pref > 0 ? j->pref[0] : SCHED_CT_ANY;
	planned = may_preempt(m, j, d->reason) && preempt_plan(m, j, a, &pp, nofit, *gen, out);
	m->ctype_only = SCHED_CT_ANY;
	if (planned) {
		++*gen;
		for (i = 0; i < pp.n_victims; i++) {
			struct sched_job *v = m->jobs[pp.victims[i]];

			sched_release(m, v);
			v->state = SCHED_PREEMPTED;
			sched_job_evicted_by(m, v, j->id);
			release_grows(m, v);
		}
		unhold(m, j);
		*reopened = true;
		sched_apply(m, j, pp.cluster, pp.allocs, pp.n_allocs);
		d->outcome = SCHED_OUT_ADMIT;
		pl.cluster = pp.cluster;
		pl.allocs = pp.allocs;
		pl.n_allocs = pp.n_allocs;
		pl.part_shape = sched_slice_part_of(m, j, m->clusters[pp.cluster], pp.allocs,
		    pp.n_allocs);
		d->victims = pp.victims;
		d->n_victims = pp.n_victims;
		d->reason = SCHED_R_CHOSEN;
		out->admitted++;
		out->preempted += pp.n_victims;
		d->place = keep_place(m, a, &pl, d->outcome, NULL);
		return;
	}
	if (j->hold_cluster < 0 && j->grow_of < 0 && *holds < m->cfg.max_holds &&
	    m->now - j->enqueued_at >= m->cfg.starve_after &&
	    (d->reason == SCHED_R_INSUFFICIENT_CAPACITY || d->reason == SCHED_R_RESERVED ||
	     d->reason == SCHED_R_TOPOLOGY_SPLIT)) {
		choose_hold(m, j);
		if (j->hold_cluster >= 0) {
			(*holds)++;
			++*gen;
		}
	}
	d->hold_cluster = j->hold_cluster;
	d->place = keep_place(m, a, &pl, d->outcome, NULL);
}

/* Evictions free more than their preemptor takes (whole gangs), and an admitted job's
 * hold opens its pools: jobs tried before that now fit are admitted in this cycle, in
 * the order they were tried, without preempting (bench/trace.sh counted them as idle
 * waits). */
static bool
second_chance(struct sched_model *m, struct arena *a, struct sched_cycle *out)
{
	bool reopened = false;
	size_t i;

	for (i = 0; i < out->n; i++) {
		struct sched_decision *d = &out->d[i];
		struct sched_job *j = m->jobs[d->job];
		struct sched_placement pl;
		enum sched_reason quota;
		int rank;

		if (d->outcome != SCHED_OUT_PENDING || j->state != SCHED_PENDING ||
		    (d->reason != SCHED_R_INSUFFICIENT_CAPACITY && d->reason != SCHED_R_OVER_QUOTA &&
		    d->reason != SCHED_R_TOPOLOGY_SPLIT && d->reason != SCHED_R_RESERVED))
			continue;
		if ((quota = sched_quota_check(m, j)) != SCHED_R_CHOSEN)
			continue;
		if (!sched_place_pref(m, j, quota, place_arena(m, a), &pl, &rank)) {
			d->place = keep_place(m, a, &pl, d->outcome, NULL);
			continue;
		}
		reopened |= unhold(m, j);
		sched_apply(m, j, pl.cluster, pl.allocs, pl.n_allocs);
		d->outcome = SCHED_OUT_ADMIT;
		d->reason = SCHED_R_CHOSEN;
		d->hold_cluster = -1;
		out->admitted++;
		d->place = keep_place(m, a, &pl, d->outcome, j);
	}
	return reopened;	/* a hold it released may let an earlier job in */
}

static void
finish(struct sched_model *m, struct sched_cycle *out, struct sched_decision **by_job)
{
	size_t i, k;

	for (i = 0; i < m->n_queues; i++) {
		struct sched_queue *q = m->queues[i];
		int pos = 0;

		for (k = 0; k < q->n_pending; k++) {
			struct sched_job *j = m->jobs[q->pending[k]];
			struct sched_decision *d = by_job[j->idx];

			if (j->state != SCHED_PENDING)
				continue;
			if (d == NULL) {
				d = by_job[j->idx] = &out->d[out->n++];
				d->job = j->idx;
				d->outcome = SCHED_OUT_PENDING;
				d->place = &no_place;
				d->reason = q->blocked ? SCHED_R_QUEUE_BLOCKED : SCHED_R_NOT_ATTEMPTED;
				d->hold_cluster = j->hold_cluster;
			}
			d->position = ++pos;
			out->pending++;
		}
	}
}

void
sched_cycle_run(struct sched_model *m, struct arena *a, struct sched_cycle *out)
{
	struct sched_decision **by_job;
	struct nofit *nofit;
	unsigned gen = 1;
	size_t total, holds;
	bool reopened = false;
	struct sched_queue *q;
	double share;
	bool borrowing;

	memset(out, 0, sizeof(*out));
	total = build_queues(m);
	holds = restore_holds(m);
	out->d = arena_alloc(a, (total + 1) * sizeof(*out->d));
	by_job = calloc(m->n_jobs + 1, sizeof(*by_job));
	nofit = calloc(NOFIT_SLOTS, sizeof(*nofit));
	if (by_job == NULL || nofit == NULL)
		abort();
	while ((q = next_queue(m, &share, &borrowing)) != NULL) {
		struct sched_job *j = m->jobs[q->pending[q->cursor++]];
		struct sched_decision *d = &out->d[out->n++];

		by_job[j->idx] = d;
		d->job = j->idx;
		d->outcome = SCHED_OUT_PENDING;
		d->share = share;
		d->borrowing = borrowing;
		d->hold_cluster = -1;
		attempt(m, j, a, d, &holds, &reopened, nofit, &gen, out);
		if (d->outcome == SCHED_OUT_PENDING && q->strategy == SCHED_STRICT_FIFO)
			q->blocked = true;
		if (q->more && d->outcome == SCHED_OUT_ADMIT && j->grow_of < 0 && last_loaded(m, q))
			q->open = true;
	}
	while (reopened)
		reopened = second_chance(m, a, out);
	finish(m, out, by_job);
	/* capacity-preference migrations take what the admissions left (sched_prefs.c) */
	sched_migrate_plan(m, a, out);
	free(by_job);
	free(nofit);
}
