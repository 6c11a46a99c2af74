/* sched_fairshare: quota (nominal floors, lending and borrowing limits within a
 * cohort) and the Kueue-like weighted dominant resource share. */
#include <math.h>
#include <string.h>

#include "queue/sched/sched_int.h"

#define SHARE_INF	1e18

static int64_t
nominal(const struct sched_queue *q, int f, int r)
{
	return q->has_quota[f] ? q->quota[f].nominal.v[r] : 0;
}

/* The part of the nominal quota q keeps for itself (never lent). */
static int64_t
guaranteed(const struct sched_queue *q, int f, int r)
{
	int64_t nom = nominal(q, f, r), lend;

	if (nom == SCHED_UNSET || !q->has_quota[f])
		return 0;
	lend = q->quota[f].lend_limit.v[r];
	if (lend == SCHED_UNSET || lend > nom)
		return 0;
	return nom - lend;
}

static int64_t
over(int64_t usage, int64_t floor)
{
	return usage > floor ? usage - floor : 0;
}

/* The flavor request of j: pending jobs at min replicas, admitted at their count. */
void
sched_job_request(const struct sched_job *j, bool admitted, struct sched_flavor_req *out,
		  short *n)
{
	int g, k, r;

	*n = 0;
	for (g = 0; g < j->n_groups; g++) {
		const struct sched_group *gr = &j->groups[g];
		int64_t pods = admitted && gr->count > 0 ? gr->count : gr->min;

		for (k = 0; k < *n; k++)
			if (out[k].flavor == gr->flavor)
				break;
		if (k == *n) {
			memset(&out[k], 0, sizeof(out[k]));
			out[k].flavor = gr->flavor;
			(*n)++;
		}
		for (r = 0; r < SCHED_NRES; r++)
			out[k].v.v[r] += pods * gr->pod.v[r];
	}
}

static double
ratio_of(const struct sched_cohort *co, int f, int r, int64_t borrowed)
{
	if (borrowed <= 0)
		return 0.0;
	if (co->lendable[f].v[r] <= 0)
		return SHARE_INF;
	return (double)borrowed / (double)co->lendable[f].v[r];
}

/* Recomputes q's current dominant borrowed ratio (unweighted). */
void
sched_queue_refresh(struct sched_model *m, struct sched_queue *q)
{
	const struct sched_cohort *co = &m->cohorts[q->group];
	double best = 0.0, x;
	int f, r;

	for (f = 0; f < m->n_flavors; f++)
		for (r = 0; r < SCHED_NRES; r++) {
			int64_t nom = nominal(q, f, r);

			if (nom == SCHED_UNSET || q->usage[f].v[r] <= nom)
				continue;
			x = ratio_of(co, f, r, q->usage[f].v[r] - nom);
			if (x > best)
				best = x;
		}
	q->ratio = best;
	q->gen++;
}

/* Adds (sign +1) or removes (-1) j's request to its queue's usage and the
 * cohort's borrowed pool. */
void
sched_usage_add(struct sched_model *m, const struct sched_job *j, int sign)
{
	struct sched_queue *q = m->queues[j->queue];
	struct sched_cohort *co = &m->cohorts[q->group];
	int k, r;

	for (k = 0; k < j->n_req; k++) {
		int f = j->req[k].flavor;

		for (r = 0; r < SCHED_NRES; r++) {
			int64_t nom = nominal(q, f, r), g = guaranteed(q, f, r);
			int64_t before = q->usage[f].v[r];

			q->usage[f].v[r] += sign * j->req[k].v.v[r];
			if (q->usage[f].v[r] < 0)
				q->usage[f].v[r] = 0;
			if (nom == SCHED_UNSET)
				continue;
			co->used[f].v[r] += over(q->usage[f].v[r], g) - over(before, g);
		}
	}
	sched_queue_refresh(m, q);
}

/* SCHED_R_CHOSEN when j's queue can take j now; otherwise borrowing_limit when
 * the queue's own limit stops it, over_quota when the cohort has nothing left. */
enum sched_reason
sched_quota_check(const struct sched_model *m, const struct sched_job *j)
{
	const struct sched_queue *q = m->queues[j->queue];
	const struct sched_cohort *co = &m->cohorts[q->group];
	enum sched_reason why = SCHED_R_CHOSEN;
	int k, r;

	for (k = 0; k < j->n_req; k++) {
		int f = j->req[k].flavor;

		for (r = 0; r < SCHED_NRES; r++) {
			int64_t need = j->req[k].v.v[r], nom = nominal(q, f, r);
			int64_t use = q->usage[f].v[r], g, bl;

			if (need <= 0 || nom == SCHED_UNSET)
				continue;
			bl = q->has_quota[f] ? q->quota[f].borrow_limit.v[r] : SCHED_UNSET;
			if (bl != SCHED_UNSET && use + need > nom + bl)
				return SCHED_R_BORROWING_LIMIT;
			g = guaranteed(q, f, r);
			if (co->used[f].v[r] + over(use + need, g) - over(use, g) > co->lendable[f].v[r])
				why = SCHED_R_OVER_QUOTA;
		}
	}
	return why;
}

/* share = max_r(borrowed_r / lendable_r) / weight, with j admitted when j is given. */
double
sched_share(const struct sched_model *m, const struct sched_queue *q, const struct sched_job *j,
	    bool *borrowing)
{
	const struct sched_cohort *co = &m->cohorts[q->group];
	double best = q->ratio, x;
	int k, r;

	for (k = 0; j != NULL && k < j->n_req; k++) {
		int f = j->req[k].flavor;

		for (r = 0; r < SCHED_NRES; r++) {
			int64_t nom = nominal(q, f, r);

			if (nom == SCHED_UNSET || j->req[k].v.v[r] <= 0)
				continue;
			x = ratio_of(co, f, r, q->usage[f].v[r] + j->req[k].v.v[r] - nom);
			if (x > best)
				best = x;
		}
	}
	if (borrowing != NULL)
		*borrowing = best > 0.0;
	if (best <= 0.0)
		return 0.0;
	if (!(q->weight > 0.0) || !isfinite(q->weight))
		return SHARE_INF;
	return best / q->weight;
}

/* How much more of resource r of flavor f queue q may take now: the least of its borrowing
 * limit's room and what its cohort can still lend beyond the part q keeps for itself.
 * SCHED_UNSET when q does not manage it. */
int64_t
sched_quota_room(const struct sched_model *m, const struct sched_queue *q, int f, int r)
{
	const struct sched_cohort *co = &m->cohorts[q->group];
	int64_t nom = nominal(q, f, r), use = q->usage[f].v[r], g = guaranteed(q, f, r);
	int64_t bl = q->has_quota[f] ? q->quota[f].borrow_limit.v[r] : SCHED_UNSET;
	int64_t room = g + co->lendable[f].v[r] - co->used[f].v[r] + over(use, g) - use;

	if (nom == SCHED_UNSET)
		return SCHED_UNSET;
	if (bl != SCHED_UNSET && nom + bl - use < room)
		room = nom + bl - use;
	return room > 0 ? room : 0;
}
