/* sched_index: what the model derives once filled (cohorts, usage, per-flavor
 * cluster lists, in-flight reservations), capacity bookkeeping and accessors. */
#include <stdlib.h>
#include <string.h>

#include "queue/sched/sched_int.h"

int
sched_pair_cmp(const void *a, const void *b)
{
	const struct sched_pair *x = a, *y = b;

	if (x->key != y->key)
		return x->key < y->key ? -1 : 1;
	return x->idx - y->idx;
}

bool
sched_vec_fits(const struct sched_vec *free, const struct sched_vec *need)
{
	int r;

	for (r = 0; r < SCHED_NRES; r++)
		if (free->v[r] < need->v[r])
			return false;
	return true;
}

/* How many pods of this shape fit in free (a large number for an empty pod). */
int64_t
sched_vec_count(const struct sched_vec *free, const struct sched_vec *pod)
{
	int64_t n = INT32_MAX, k;
	int r;

	for (r = 0; r < SCHED_NRES; r++) {
		if (pod->v[r] <= 0)
			continue;
		k = free->v[r] > 0 ? free->v[r] / pod->v[r] : 0;
		if (k < n)
			n = k;
	}
	return n;
}

int
sched_group_pods(const struct sched_job *j, int g)
{
	const struct sched_group *gr = &j->groups[g];

	if (j->state != SCHED_PENDING && gr->count > 0)
		return gr->count;
	return gr->min;
}

void
sched_pool_refresh(struct sched_pool *p, const struct sched_cluster *c, int pool)
{
	size_t i;
	int r;

	memset(&p->sum_free, 0, sizeof(p->sum_free));
	memset(&p->max_free, 0, sizeof(p->max_free));
	for (i = 0; i < c->n_nodes; i++) {
		const struct sched_node *n = &c->nodes[i];

		if (n->pool != pool)
			continue;
		for (r = 0; r < SCHED_NRES; r++) {
			p->sum_free.v[r] += n->free.v[r];
			if (n->free.v[r] > p->max_free.v[r])
				p->max_free.v[r] = n->free.v[r];
		}
	}
}

void
sched_cluster_refresh(struct sched_cluster *c)
{
	size_t p;

	for (p = 0; p < c->n_pools; p++)
		sched_pool_refresh(&c->pools[p], c, (int)p);
}

static int
grow_node(struct sched_cluster *c, int pool)
{
	struct sched_pool *p = &c->pools[pool];
	struct sched_node *n;

	c->nodes = sched_grow(c->nodes, &c->cap_nodes, c->n_nodes + 1, sizeof(*c->nodes));
	n = &c->nodes[c->n_nodes];
	memset(n, 0, sizeof(*n));
	n->pool = pool;
	n->rack = n->block = n->slice = n->shape = -1;
	for (int k = 0; k < SCHED_TPU_PARTS; k++)
		n->part[k] = -1;
	n->alloc = p->node_alloc;
	n->free = p->node_alloc;
	if (p->grow_nodes > 0)
		p->grow_nodes--;
	return (int)c->n_nodes++;
}

/* Takes allocs out of c's free capacity.  An alloc naming a node past the end
 * (a node the pack grew) or a negative node adds the node first. */
void
sched_capacity_take(struct sched_model *m, struct sched_cluster *c,
		    struct sched_alloc *allocs, size_t n)
{
	uint64_t touched = 0;
	size_t i, k, nv = 0, base = c->n_nodes;
	int r, vfrom[64], vto[64];

	(void)m;
	for (i = 0; i < n; i++) {
		struct sched_alloc *a = &allocs[i];
		struct sched_node *nd;

		if (a->node < 0 || (size_t)a->node >= c->n_nodes) {
			/* allocs naming the same virtual node of a pack share one grown node */
			for (k = 0; a->node >= (int)base && k < nv && vfrom[k] != a->node; k++)
				;
			if (a->node >= (int)base && k < nv) {
				a->node = vto[k];
			} else {
				int v = a->node;

				a->node = grow_node(c, a->pool);
				if (v >= (int)base && nv < 64) {
					vfrom[nv] = v;
					vto[nv++] = a->node;
				}
			}
			a->grown = true;
		}
		nd = &c->nodes[a->node];
		for (r = 0; r < SCHED_NRES; r++) {
			nd->free.v[r] -= a->res.v[r];
			if (nd->free.v[r] < 0)
				nd->free.v[r] = 0;
		}
		touched |= 1ULL << (nd->pool & 63);
	}
	for (i = 0; i < c->n_pools; i++)
		if (touched & (1ULL << (i & 63)))
			sched_pool_refresh(&c->pools[i], c, (int)i);
}

void
sched_capacity_give(struct sched_model *m, struct sched_cluster *c,
		    const struct sched_alloc *allocs, size_t n)
{
	uint64_t touched = 0;
	size_t i;
	int r;

	(void)m;
	for (i = 0; i < n; i++) {
		struct sched_node *nd;

		if (allocs[i].node < 0 || (size_t)allocs[i].node >= c->n_nodes)
			continue;
		nd = &c->nodes[allocs[i].node];
		for (r = 0; r < SCHED_NRES; r++) {
			nd->free.v[r] += allocs[i].res.v[r];
			if (nd->free.v[r] > nd->alloc.v[r])
				nd->free.v[r] = nd->alloc.v[r];
		}
		touched |= 1ULL << (nd->pool & 63);
	}
	for (i = 0; i < c->n_pools; i++)
		if (touched & (1ULL << (i & 63)))
			sched_pool_refresh(&c->pools[i], c, (int)i);
}

static bool
build_cohorts(struct sched_model *m, struct err *e)
{
	size_t i, k;

	free(m->cohorts);
	m->cohorts = calloc(m->n_queues ? m->n_queues : 1, sizeof(*m->cohorts));
	if (m->cohorts == NULL)
		return err_set(e, 500, "queue.oom", "out of memory");
	m->n_cohorts = 0;
	for (i = 0; i < m->n_queues; i++) {
		struct sched_queue *q = m->queues[i];

		for (k = 0; k < m->n_cohorts; k++)
			if (q->cohort >= 0 && m->cohorts[k].name == q->cohort &&
			    m->cohorts[k].env == q->env)
				break;
		if (k == m->n_cohorts) {
			m->cohorts[k].name = q->cohort;
			m->cohorts[k].env = q->env;
			m->n_cohorts++;
		}
		q->group = (int)k;
	}
	return true;
}

/* Lendable per cohort: the sum over its queues of min(lending limit, nominal). */
static void
build_lendable(struct sched_model *m)
{
	size_t i;
	int f, r;

	for (i = 0; i < m->n_queues; i++) {
		struct sched_queue *q = m->queues[i];
		struct sched_cohort *co = &m->cohorts[q->group];

		for (f = 0; f < m->n_flavors; f++) {
			if (!q->has_quota[f])
				continue;
			co->flavor_mask |= 1ULL << f;
			for (r = 0; r < SCHED_NRES; r++) {
				int64_t nom = q->quota[f].nominal.v[r];
				int64_t lend = q->quota[f].lend_limit.v[r];

				if (nom == SCHED_UNSET)
					continue;
				co->lendable[f].v[r] += lend == SCHED_UNSET || lend > nom ? nom : lend;
			}
		}
	}
}

static void
build_flavor_lists(struct sched_model *m)
{
	size_t i, p;
	int f;

	for (f = 0; f < SCHED_MAX_FLAVORS; f++) {
		free(m->by_flavor[f]);
		m->by_flavor[f] = NULL;
		m->n_by_flavor[f] = 0;
	}
	free(m->env_clusters);
	m->n_env = m->n_names + 1;
	m->env_clusters = calloc(m->n_env, sizeof(*m->env_clusters));
	if (m->env_clusters == NULL)
		abort();
	for (i = 0; i < m->n_clusters; i++) {
		struct sched_cluster *c = m->clusters[i];

		c->flavor_mask = 0;
		for (p = 0; p < c->n_pools; p++)
			c->flavor_mask |= 1ULL << c->pools[p].flavor;
		for (f = 0; f < m->n_flavors; f++) {
			size_t cap = m->n_by_flavor[f];

			if (!(c->flavor_mask & (1ULL << f)))
				continue;
			m->by_flavor[f] = sched_grow(m->by_flavor[f], &cap, m->n_by_flavor[f] + 1,
			    sizeof(int));
			m->by_flavor[f][m->n_by_flavor[f]++] = (int)i;
		}
		if (c->env >= 0)
			m->env_clusters[c->env]++;
	}
}

static bool
prepare_job(struct sched_model *m, struct sched_job *j, struct err *e)
{
	int g;

	if (j->n_groups == 0)
		return err_set(e, 400, "queue.no_groups", "job %s has no worker groups", j->id);
	if ((j->state == SCHED_ADMITTED || j->state == SCHED_RUNNING) && j->cluster < 0)
		return err_set(e, 409, "queue.no_cluster", "admitted job %s has no cluster", j->id);
	if (j->state != SCHED_PENDING) {
		/* counts and req change: rewritten in the scratch, then kept (shared with the
		 * admitted jobs of equal groups) */
		sched_job_scratch_groups(m, j);
		for (g = 0; g < j->n_groups; g++)
			if (j->groups[g].count == 0)
				j->groups[g].count = j->groups[g].min;
		sched_job_request(j, true, j->req, &j->n_req);
		sched_job_keep_groups(m, j);
	} else {
		/* pending ones may share equal groups: the same req is written back */
		sched_job_request(j, false, j->req, &j->n_req);
	}
	j->flavor_mask = 0;
	for (g = 0; g < j->n_groups; g++)
		j->flavor_mask |= 1ULL << j->groups[g].flavor;
	(void)m;
	return true;
}

bool
sched_model_finalize(struct sched_model *m, struct err *e)
{
	size_t i, p;

	if (m->finalized)
		return err_set(e, 500, "queue.finalized", "model already finalized");
	if (!build_cohorts(m, e))
		return false;
	build_lendable(m);
	for (i = 0; i < m->n_jobs; i++)
		if (!prepare_job(m, m->jobs[i], e))
			return false;
	for (i = 0; i < m->n_jobs; i++) {
		struct sched_job *j = m->jobs[i];

		if (j->state != SCHED_ADMITTED && j->state != SCHED_RUNNING)
			continue;
		sched_usage_add(m, j, +1);
		if (j->in_flight)
			sched_capacity_take(m, m->clusters[j->cluster], j->allocs, j->n_allocs);
	}
	for (i = 0; i < m->n_clusters; i++)
		for (p = 0; p < m->clusters[i]->n_pools; p++)
			sched_pool_refresh(&m->clusters[i]->pools[p], m->clusters[i], (int)p);
	for (i = 0; i < m->n_queues; i++)
		sched_queue_refresh(m, m->queues[i]);
	build_flavor_lists(m);
	m->finalized = true;
	return true;
}

size_t sched_model_n_clusters(const struct sched_model *m) { return m->n_clusters; }
size_t sched_model_n_queues(const struct sched_model *m) { return m->n_queues; }
size_t sched_model_n_jobs(const struct sched_model *m) { return m->n_jobs; }

struct sched_cluster *
sched_model_cluster(const struct sched_model *m, size_t i)
{
	return i < m->n_clusters ? m->clusters[i] : NULL;
}

struct sched_queue *
sched_model_queue(const struct sched_model *m, size_t i)
{
	return i < m->n_queues ? m->queues[i] : NULL;
}

struct sched_job *
sched_model_job(const struct sched_model *m, size_t i)
{
	return i < m->n_jobs ? m->jobs[i] : NULL;
}

struct sched_job *
sched_model_find_job(const struct sched_model *m, const char *id)
{
	int i = sched_job_index(m, id);

	return i < 0 ? NULL : m->jobs[i];
}

struct sched_cluster *
sched_model_find_cluster(const struct sched_model *m, const char *id)
{
	int i = sched_map_get(&m->cluster_ids, id);

	return i < 0 ? NULL : m->clusters[i];
}

struct sched_queue *
sched_model_find_queue(const struct sched_model *m, const char *id)
{
	int i = sched_map_get(&m->queue_ids, id);

	return i < 0 ? NULL : m->queues[i];
}

/* The job leaves: quota and capacity come back. */
void
sched_model_finish_job(struct sched_model *m, struct sched_job *j)
{
	if (j->state == SCHED_ADMITTED || j->state == SCHED_RUNNING)
		sched_release(m, j);
	j->state = SCHED_FINISHED;
}

/* A preempted (or moved) job returns to pending, keeping its enqueue time. */
void
sched_model_requeue_job(struct sched_model *m, struct sched_job *j)
{
	int g;

	if (j->state == SCHED_ADMITTED || j->state == SCHED_RUNNING)
		sched_release(m, j);
	j->state = SCHED_PENDING;
	j->cluster = -1;
	j->in_flight = false;
	free(j->allocs);
	j->allocs = NULL;
	j->n_allocs = 0;
	sched_job_own_groups(m, j);
	for (g = 0; g < j->n_groups; g++)
		j->groups[g].count = 0;
	sched_job_request(j, false, j->req, &j->n_req);
}
