/* sched_model: the scheduler's in-memory model and its builders (sched_model_add_*,
 * no SQL: queue/sched/loader.c feeds it from Postgres, tests and benches feed it directly), and
 * the index, usage and in-flight reservations it derives at finalize. */
#include <stdlib.h>
#include <string.h>

#include "queue/sched/sched_int.h"

static const char *const reason_codes[SCHED_NREASONS] = {
	[SCHED_R_CHOSEN] = "chosen",
	[SCHED_R_OUTSCORED] = "outscored",
	[SCHED_R_NOT_READY] = "not_ready",
	[SCHED_R_UNREACHABLE] = "unreachable",
	[SCHED_R_STALE] = "stale",
	[SCHED_R_CORDONED] = "cordoned",
	[SCHED_R_WRONG_FLAVOR] = "wrong_flavor",
	[SCHED_R_REGION_NOT_ALLOWED] = "region_not_allowed",
	[SCHED_R_PROVIDER_NOT_ALLOWED] = "provider_not_allowed",
	[SCHED_R_SPOT_MISMATCH] = "spot_mismatch",
	[SCHED_R_CAPACITY_TYPE] = "capacity_type_mismatch",
	[SCHED_R_NO_HEAD_POOL] = "no_head_pool",
	[SCHED_R_OVER_PRICE] = "over_price",
	[SCHED_R_OVER_QUOTA] = "over_quota",
	[SCHED_R_BORROWING_LIMIT] = "borrowing_limit",
	[SCHED_R_RESERVED] = "reserved",
	[SCHED_R_INSUFFICIENT_CAPACITY] = "insufficient_capacity",
	[SCHED_R_TOPOLOGY_SPLIT] = "topology_split",
	[SCHED_R_QUEUE_BLOCKED] = "queue_blocked",
	[SCHED_R_NOT_ATTEMPTED] = "not_attempted",
};

const char *
sched_reason_code(enum sched_reason r)
{
	if ((int)r < 0 || r >= SCHED_NREASONS)
		return "unknown";
	return reason_codes[r];
}

void
sched_config_default(struct sched_config *c)
{
	memset(c, 0, sizeof(*c));
	c->stale_after = 120;
	c->starve_after = 600;
	c->stockout_half_life = 900;
	c->w_price = 1.0;
	c->w_fit = 1.0;
	c->w_region = 0.5;
	c->w_stockout = 1.0;
	c->max_candidates = 32;
	c->max_holds = 8;
	c->preempt = true;
	c->migrate = true;
	c->migrate_min_run_s = 600;
	c->migrate_cooldown_s = 1800;
	c->migrate_max = 2;
	c->max_migrations_cycle = 16;
}

void *
sched_grow(void *p, size_t *cap, size_t need, size_t size)
{
	size_t n = *cap ? *cap : 8;

	if (need <= *cap)
		return p;
	while (n < need)
		n *= 2;
	p = realloc(p, n * size);
	if (p == NULL)
		abort();
	*cap = n;
	return p;
}

/* --- string map (open addressing, FNV-1a) --- */

static uint64_t
hash(const char *s)
{
	uint64_t h = 1469598103934665603ULL;

	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ULL;
	return h;
}

int
sched_map_get(const struct sched_map *mp, const char *k)
{
	size_t i;

	if (mp->cap == 0 || k == NULL)
		return -1;
	for (i = hash(k) & (mp->cap - 1); mp->keys[i] != NULL; i = (i + 1) & (mp->cap - 1))
		if (strcmp(mp->keys[i], k) == 0)
			return mp->vals[i];
	return -1;
}

static void
map_put(struct sched_map *mp, const char *k, int v)
{
	size_t i;

	if ((mp->n + 1) * 2 > mp->cap) {
		struct sched_map old = *mp;
		size_t j;

		mp->cap = old.cap ? old.cap * 2 : 64;
		mp->keys = calloc(mp->cap, sizeof(*mp->keys));
		mp->vals = calloc(mp->cap, sizeof(*mp->vals));
		if (mp->keys == NULL || mp->vals == NULL)
			abort();
		mp->n = 0;
		for (j = 0; j < old.cap; j++)
			if (old.keys[j] != NULL)
				map_put(mp, old.keys[j], old.vals[j]);
		free(old.keys);
		free(old.vals);
	}
	for (i = hash(k) & (mp->cap - 1); mp->keys[i] != NULL; i = (i + 1) & (mp->cap - 1))
		;
	mp->keys[i] = k;
	mp->vals[i] = v;
	mp->n++;
}

static void
map_cleanup(struct sched_map *mp)
{
	free(mp->keys);
	free(mp->vals);
}

/* --- model --- */

struct sched_model *
sched_model_new(const struct sched_config *cfg, int64_t now)
{
	struct sched_model *m = calloc(1, sizeof(*m));

	if (m == NULL)
		abort();
	if (cfg != NULL)
		m->cfg = *cfg;
	else
		sched_config_default(&m->cfg);
	m->now = now;
	m->arena = arena_new();
	m->cpu_flavor = -1;
	m->ctype_only = SCHED_CT_ANY;
	return m;
}

void
sched_model_free(struct sched_model *m)
{
	size_t i;
	int f = -1;

	if (m == NULL)
		return;
	for (i = 0; i < m->n_clusters; i++) {
		free(m->clusters[i]->pools);
		free(m->clusters[i]->nodes);
	}
	for (i = 0; i < m->n_queues; i++)
		free(m->queues[i]->pending);
	for (i = 0; i < m->n_jobs; i++)
		free(m->jobs[i]->allocs);
	for (f = 0; f < SCHED_MAX_FLAVORS; f++)
		free(m->by_flavor[f]);
	arena_free(m->place_tmp);
	free(m->g_shared);
	free(m->clusters);
	free(m->queues);
	free(m->jobs);
	free(m->cohorts);
	free(m->name_of);
	free(m->s_free);
	free(m->s_used);
	free(m->s_order);
	free(m->s_pool);
	free(m->a_scratch);
	free(m->c_scratch);
	free(m->env_clusters);
	map_cleanup(&m->names);
	map_cleanup(&m->cluster_ids);
	map_cleanup(&m->queue_ids);
	free(m->job_slots);
	while (m->strs != NULL) {
		struct sched_strblock *next = m->strs->next;

		free(m->strs);
		m->strs = next;
	}
	arena_free(m->arena);
	free(m);
}

/* --- job ids: a packed string pool and a table of job indices --- */

#define STRBLOCK	(64 * 1024)

/* A copy of s in the model's string pool (no alignment: a 36-character uuid takes 37
 * bytes, not the arena's 48). */
static const char *
pool_strdup(struct sched_model *m, const char *s)
{
	size_t n = strlen(s) + 1;
	struct sched_strblock *b = m->strs;
	char *p;

	if (b == NULL || b->size - b->used < n) {
		size_t size = n > STRBLOCK ? n : STRBLOCK;

		b = malloc(sizeof(*b) + size);
		if (b == NULL)
			abort();
		b->size = size;
		b->used = 0;
		b->next = m->strs;
		m->strs = b;
	}
	p = b->data + b->used;
	memcpy(p, s, n);
	b->used += n;
	return p;
}

int
sched_job_index(const struct sched_model *m, const char *k)
{
	size_t i;

	if (m->job_cap == 0 || k == NULL)
		return -1;
	for (i = hash(k) & (m->job_cap - 1); m->job_slots[i] >= 0; i = (i + 1) & (m->job_cap - 1))
		if (strcmp(m->jobs[m->job_slots[i]]->id, k) == 0)
			return m->job_slots[i];
	return -1;
}

static void
slot_insert(struct sched_model *m, int idx)
{
	size_t i;

	for (i = hash(m->jobs[idx]->id) & (m->job_cap - 1); m->job_slots[i] >= 0;
	    i = (i + 1) & (m->job_cap - 1))
		;
	m->job_slots[i] = idx;
}

/* Enters m->jobs[idx], the last job added; at most half the slots are taken. */
static void
job_slot_put(struct sched_model *m, int idx)
{
	if (m->n_jobs * 2 > m->job_cap) {	/* rehash jobs 0..idx-1 into twice the slots */
		size_t cap = m->job_cap ? m->job_cap * 2 : 256;

		free(m->job_slots);
		m->job_slots = malloc(cap * sizeof(*m->job_slots));
		if (m->job_slots == NULL)
			abort();
		memset(m->job_slots, 0xff, cap * sizeof(*m->job_slots));	/* all -1 */
		m->job_cap = cap;
		for (int k = 0; k < idx; k++)
			slot_insert(m, k);
	}
	slot_insert(m, idx);
}

static size_t
map_bytes(const struct sched_map *mp)
{
	return mp->cap * (sizeof(*mp->keys) + sizeof(*mp->vals));
}

size_t
sched_model_bytes(const struct sched_model *m)
{
	size_t n = sizeof(*m) + arena_used(m->arena), i;

	for (const struct sched_strblock *b = m->strs; b != NULL; b = b->next)
		n += sizeof(*b) + b->size;
	n += m->job_cap * sizeof(*m->job_slots) + m->cap_jobs * sizeof(*m->jobs);
	n += map_bytes(&m->names) + map_bytes(&m->cluster_ids) + map_bytes(&m->queue_ids);
	n += m->cap_names * sizeof(*m->name_of) + m->cap_clusters * sizeof(*m->clusters) +
	    m->cap_queues * sizeof(*m->queues) + m->n_cohorts * sizeof(*m->cohorts) +
	    m->g_cap * sizeof(*m->g_shared) + m->n_env * sizeof(*m->env_clusters);
	for (i = 0; i < m->n_clusters; i++)
		n += m->clusters[i]->cap_pools * sizeof(struct sched_pool) +
		    m->clusters[i]->cap_nodes * sizeof(struct sched_node);
	for (i = 0; i < m->n_queues; i++)
		n += m->queues[i]->pending != NULL ? (m->queues[i]->n_pending + 1) * sizeof(int) : 0;
	for (i = 0; i < m->n_jobs; i++)
		n += m->jobs[i]->allocs != NULL ? (m->jobs[i]->n_allocs > 0 ?
		    m->jobs[i]->n_allocs : 1) * sizeof(struct sched_alloc) : 0;
	for (i = 0; i < SCHED_MAX_FLAVORS; i++)
		n += m->n_by_flavor[i] * sizeof(int);
	n += m->s_cap * (sizeof(*m->s_free) + sizeof(*m->s_used) + sizeof(*m->s_order) +
	    sizeof(*m->s_pool)) + m->a_cap * sizeof(*m->a_scratch);
	return n;
}

void
sched_model_set_now(struct sched_model *m, int64_t now)
{
	m->now = now;
}

int
sched_model_intern(struct sched_model *m, const char *s)
{
	int id;
	char *copy;

	if (s == NULL)
		return -1;
	if ((id = sched_map_get(&m->names, s)) >= 0)
		return id;
	copy = arena_strdup(m->arena, s);
	m->name_of = sched_grow(m->name_of, &m->cap_names, m->n_names + 1, sizeof(*m->name_of));
	id = (int)m->n_names;
	m->name_of[m->n_names++] = copy;
	map_put(&m->names, copy, id);
	return id;
}

const char *
sched_model_name(const struct sched_model *m, int id)
{
	if (id < 0 || (size_t)id >= m->n_names)
		return NULL;
	return m->name_of[id];
}

bool
sched_model_flavor(struct sched_model *m, const char *flavor, int *out, struct err *e)
{
	int id, f = -1;

	if (flavor == NULL || flavor[0] == '\0')
		return err_set(e, 400, "queue.bad_flavor", "flavor is empty");
	id = sched_model_intern(m, flavor);
	for (f = 0; f < m->n_flavors; f++)
		if (m->flavor_name[f] == id) {
			*out = f;
			return true;
		}
	if (m->n_flavors == SCHED_MAX_FLAVORS)
		return err_set(e, 500, "queue.too_many_flavors", "more than %d flavors",
		    SCHED_MAX_FLAVORS);
	m->flavor_name[m->n_flavors] = id;
	if (strcmp(flavor, "cpu") == 0)
		m->cpu_flavor = m->n_flavors;
	*out = m->n_flavors++;
	return true;
}

struct sched_cluster *
sched_model_add_cluster(struct sched_model *m, const char *id, const char *env,
			const char *region, const char *provider, struct err *e)
{
	struct sched_cluster *c;

	if (id == NULL || sched_map_get(&m->cluster_ids, id) >= 0) {
		err_set(e, 409, "queue.duplicate_cluster", "cluster %s listed twice",
		    id ? id : "(null)");
		return NULL;
	}
	c = arena_alloc(m->arena, sizeof(*c));
	c->id = arena_strdup(m->arena, id);
	c->idx = (int)m->n_clusters;
	c->env = sched_model_intern(m, env);
	c->region = sched_model_intern(m, region);
	c->provider = sched_model_intern(m, provider);
	c->ready = true;
	c->reachable = true;
	c->observed_at = m->now;
	m->clusters = sched_grow(m->clusters, &m->cap_clusters, m->n_clusters + 1,
	    sizeof(*m->clusters));
	m->clusters[m->n_clusters++] = c;
	map_put(&m->cluster_ids, c->id, c->idx);
	return c;
}

struct sched_pool *
sched_cluster_add_pool(struct sched_model *m, struct sched_cluster *c, const char *flavor,
		       bool spot, double price, struct err *e)
{
	struct sched_pool *p;
	int f = -1;

	if (!sched_model_flavor(m, flavor, &f, e))
		return NULL;
	c->pools = sched_grow(c->pools, &c->cap_pools, c->n_pools + 1, sizeof(*c->pools));
	p = &c->pools[c->n_pools++];
	memset(p, 0, sizeof(*p));
	p->flavor = f;
	p->spot = spot;
	p->ctype = spot ? SCHED_CT_SPOT : SCHED_CT_ON_DEMAND;
	p->price = price;
	p->held_by = -1;
	return p;
}

bool
sched_pool_add_node(struct sched_model *m, struct sched_cluster *c, struct sched_pool *p,
		    const char *id, const char *rack, const char *slice, const char *shape,
		    struct sched_vec alloc, struct sched_vec free, struct err *e)
{
	struct sched_node *n;
	int r;

	for (r = 0; r < SCHED_NRES; r++)
		if (alloc.v[r] < 0 || free.v[r] < 0)
			return err_set(e, 400, "queue.bad_node", "node %s has negative capacity",
			    id ? id : "(null)");
	c->nodes = sched_grow(c->nodes, &c->cap_nodes, c->n_nodes + 1, sizeof(*c->nodes));
	n = &c->nodes[c->n_nodes++];
	n->id = arena_strdup(m->arena, id);
	n->pool = (int)(p - c->pools);
	n->rack = sched_model_intern(m, rack);
	n->block = -1;
	n->slice = sched_model_intern(m, slice);
	n->shape = sched_model_intern(m, shape);
	for (int k = 0; k < SCHED_TPU_PARTS; k++)
		n->part[k] = -1;
	n->alloc = alloc;
	n->free = free;
	if (p->node_alloc.v[SCHED_ACCEL] == 0 && p->node_alloc.v[SCHED_CPU] == 0)
		p->node_alloc = alloc;
	return true;
}

const char *const sched_tpu_part_shapes[SCHED_TPU_PARTS] = { "2x2x1", "2x2x2", "2x2x4",
    "2x4x4", "4x4x4" };

void
sched_node_set_partition(struct sched_model *m, struct sched_cluster *c, int k,
			 const char *id)
{
	if (c->n_nodes > 0 && k >= 0 && k < SCHED_TPU_PARTS)
		c->nodes[c->n_nodes - 1].part[k] = sched_model_intern(m, id);
}

int
sched_tpu_part_of(const struct sched_model *m, int shape)
{
	const char *s = shape >= 0 ? sched_model_name(m, shape) : NULL;

	for (int k = 0; s != NULL && k < SCHED_TPU_PARTS; k++)
		if (strcmp(s, sched_tpu_part_shapes[k]) == 0)
			return k;
	return -1;
}

void
sched_node_set_block(struct sched_model *m, struct sched_cluster *c, const char *block)
{
	if (c->n_nodes > 0)
		c->nodes[c->n_nodes - 1].block = sched_model_intern(m, block);
}

struct sched_queue *
sched_model_add_queue(struct sched_model *m, const char *id, const char *env,
		      const char *cohort, double weight, enum sched_strategy strategy,
		      struct err *e)
{
	struct sched_queue *q;

	if (id == NULL || sched_map_get(&m->queue_ids, id) >= 0) {
		err_set(e, 409, "queue.duplicate_queue", "queue %s listed twice",
		    id ? id : "(null)");
		return NULL;
	}
	q = arena_alloc(m->arena, sizeof(*q));
	q->id = arena_strdup(m->arena, id);
	q->idx = (int)m->n_queues;
	q->env = sched_model_intern(m, env);
	q->cohort = cohort != NULL && cohort[0] != '\0' ? sched_model_intern(m, cohort) : -1;
	q->weight = weight;
	q->strategy = strategy;
	q->max_migrations = q->min_run_s = q->cooldown_s = -1;
	m->queues = sched_grow(m->queues, &m->cap_queues, m->n_queues + 1, sizeof(*m->queues));
	m->queues[m->n_queues++] = q;
	map_put(&m->queue_ids, q->id, q->idx);
	return q;
}

bool
sched_queue_set_quota(struct sched_model *m, struct sched_queue *q, const char *flavor,
		      const struct sched_quota *quota, struct err *e)
{
	int f = -1;

	if (!sched_model_flavor(m, flavor, &f, e))
		return false;
	q->has_quota[f] = true;
	q->quota[f] = *quota;
	return true;
}

struct sched_job *
sched_model_add_job(struct sched_model *m, const char *id, const char *queue, int priority,
		    int64_t enqueued_at, enum sched_state state, struct err *e)
{
	struct sched_job *j;
	int qi;

	if (id == NULL || sched_job_index(m, id) >= 0) {
		err_set(e, 409, "queue.duplicate_job", "job %s listed twice", id ? id : "(null)");
		return NULL;
	}
	if (queue == NULL || (qi = sched_map_get(&m->queue_ids, queue)) < 0) {
		err_set(e, 404, "queue.queue_not_found", "queue %s not found",
		    queue ? queue : "(null)");
		return NULL;
	}
	j = arena_alloc(m->arena, sizeof(*j));
	j->id = pool_strdup(m, id);
	j->idx = (int)m->n_jobs;
	j->queue = qi;
	j->priority = priority;
	j->enqueued_at = enqueued_at;
	j->state = state;
	j->shape = -1;
	j->cluster = -1;
	j->hold_cluster = -1;
	j->grow_of = j->grow_cluster = j->grow_pool = j->grow_node = -1;
	j->max_migrations = m->cfg.migrate_max;
	j->min_run_s = m->cfg.migrate_min_run_s;
	j->cooldown_s = m->cfg.migrate_cooldown_s;
	m->jobs = sched_grow(m->jobs, &m->cap_jobs, m->n_jobs + 1, sizeof(*m->jobs));
	m->jobs[m->n_jobs++] = j;
	job_slot_put(m, j->idx);
	return j;
}

void
sched_job_build_groups(struct sched_model *m, struct sched_job *j)
{
	memset(m->g_scratch, 0, sizeof(m->g_scratch));
	memset(m->r_scratch, 0, sizeof(m->r_scratch));
	j->groups = m->g_scratch;
	j->req = m->r_scratch;
	j->n_groups = j->n_req = 0;
	j->cap_groups = SCHED_MAX_GROUPS;
	j->shared_groups = false;
}

static uint64_t
groups_hash(const struct sched_job *j)
{
	uint64_t h = 14695981039346656037ULL;
	int64_t v[] = { j->n_groups, j->n_req };

#define MIX(x) (h = (h ^ (uint64_t)(x)) * 1099511628211ULL)
	for (size_t i = 0; i < 2; i++)
		MIX(v[i]);
	for (int g = 0; g < j->n_groups; g++) {
		const struct sched_group *gr = &j->groups[g];

		MIX(gr->flavor);
		MIX(gr->min);
		MIX(gr->max);
		MIX(gr->count);
		MIX(gr->head);
		MIX(gr->hosts);
		for (int r = 0; r < SCHED_NRES; r++)
			MIX(gr->pod.v[r]);
	}
	for (int q = 0; q < j->n_req; q++) {
		MIX(j->req[q].flavor);
		for (int r = 0; r < SCHED_NRES; r++)
			MIX(j->req[q].v.v[r]);
	}
#undef MIX
	return h;
}

static bool
groups_equal(const struct sched_job *a, const struct sched_job *b)
{
	if (a->n_groups != b->n_groups || a->n_req != b->n_req)
		return false;
	for (int g = 0; g < a->n_groups; g++) {
		const struct sched_group *x = &a->groups[g], *y = &b->groups[g];

		if (x->flavor != y->flavor || x->min != y->min || x->max != y->max ||
		    x->count != y->count || x->head != y->head || x->hosts != y->hosts)
			return false;
		for (int r = 0; r < SCHED_NRES; r++)
			if (x->pod.v[r] != y->pod.v[r])
				return false;
	}
	for (int q = 0; q < a->n_req; q++) {
		if (a->req[q].flavor != b->req[q].flavor)
			return false;
		for (int r = 0; r < SCHED_NRES; r++)
			if (a->req[q].v.v[r] != b->req[q].v.v[r])
				return false;
	}
	return true;
}

/* j's groups and req into arrays of its own, exactly as long (at least one entry). */
static void
groups_copy(struct sched_model *m, struct sched_job *j)
{
	int n = j->n_groups > 0 ? j->n_groups : 1;
	struct sched_group *ng = arena_alloc(m->arena, (size_t)n * sizeof(*ng));
	struct sched_flavor_req *nr = arena_alloc(m->arena, (size_t)n * sizeof(*nr));

	memcpy(ng, j->groups, (size_t)j->n_groups * sizeof(*ng));
	memcpy(nr, j->req, (size_t)j->n_req * sizeof(*nr));
	j->groups = ng;
	j->req = nr;
	j->cap_groups = n;
	j->shared_groups = false;
}

void
sched_job_own_groups(struct sched_model *m, struct sched_job *j)
{
	if (j->shared_groups)
		groups_copy(m, j);
}

void
sched_job_scratch_groups(struct sched_model *m, struct sched_job *j)
{
	if (j->groups == m->g_scratch)
		return;
	if (j->n_groups > 0)
		memcpy(m->g_scratch, j->groups, (size_t)j->n_groups * sizeof(*j->groups));
	if (j->n_req > 0)
		memcpy(m->r_scratch, j->req, (size_t)j->n_req * sizeof(*j->req));
	j->groups = m->g_scratch;
	j->req = m->r_scratch;
	j->cap_groups = SCHED_MAX_GROUPS;
	j->shared_groups = false;
}

void
sched_job_keep_groups(struct sched_model *m, struct sched_job *j)
{
	uint64_t h;
	size_t i;

	if (j->groups != m->g_scratch)
		return;		/* not built in the scratch (or kept already) */
	if (m->g_n * 2 >= m->g_cap) {	/* grow: rehash the shared jobs */
		size_t cap = m->g_cap ? m->g_cap * 2 : 256;
		struct sched_job **t = calloc(cap, sizeof(*t));

		if (t == NULL) {
			groups_copy(m, j);
			return;
		}
		for (i = 0; i < m->g_cap; i++)
			if (m->g_shared[i] != NULL) {
				size_t k = groups_hash(m->g_shared[i]) & (cap - 1);

				while (t[k] != NULL)
					k = (k + 1) & (cap - 1);
				t[k] = m->g_shared[i];
			}
		free(m->g_shared);
		m->g_shared = t;
		m->g_cap = cap;
	}
	h = groups_hash(j);
	for (i = h & (m->g_cap - 1); m->g_shared[i] != NULL; i = (i + 1) & (m->g_cap - 1)) {
		struct sched_job *o = m->g_shared[i];

		/* a job that took its own copy since still holds the shape's first arrays
		 * only if it is still shared; else this slot's shape is gone: skip it */
		if (o->shared_groups && groups_equal(o, j)) {
			j->groups = o->groups;
			j->req = o->req;
			j->cap_groups = o->cap_groups;
			j->shared_groups = true;
			return;
		}
	}
	groups_copy(m, j);
	j->shared_groups = true;
	m->g_shared[i] = j;
	m->g_n++;
}

bool
sched_job_add_group(struct sched_model *m, struct sched_job *j, const char *flavor, int min,
		    int max, struct sched_vec pod, struct err *e)
{
	struct sched_group *g;
	int f = -1, r;

	if (j->n_groups == SCHED_MAX_GROUPS)
		return err_set(e, 400, "queue.too_many_groups", "more than %d worker groups",
		    SCHED_MAX_GROUPS);
	if (max == 0)
		max = min;
	if (min < 1 || max < min)
		return err_set(e, 400, "queue.bad_replicas", "replicas must satisfy 1 <= min <= max");
	for (r = 0; r < SCHED_NRES; r++)
		if (pod.v[r] < 0)
			return err_set(e, 400, "queue.bad_resources", "negative pod resources");
	if (!sched_model_flavor(m, flavor, &f, e))
		return false;
	if (j->n_groups == j->cap_groups) {
		int cap = j->cap_groups ? 2 * j->cap_groups : 2;
		struct sched_group *ng;
		struct sched_flavor_req *nr;

		if (cap > SCHED_MAX_GROUPS)
			cap = SCHED_MAX_GROUPS;
		ng = arena_alloc(m->arena, (size_t)cap * sizeof(*ng));
		nr = arena_alloc(m->arena, (size_t)cap * sizeof(*nr));
		if (j->n_groups > 0) {
			memcpy(ng, j->groups, (size_t)j->n_groups * sizeof(*ng));
			memcpy(nr, j->req, (size_t)j->n_req * sizeof(*nr));
		}
		j->groups = ng;
		j->req = nr;
		j->shared_groups = false;	/* a copy now: its own */
		j->cap_groups = cap;
	}
	g = &j->groups[j->n_groups++];
	memset(g, 0, sizeof(*g));
	g->flavor = f;
	g->min = min;
	g->max = max;
	g->count = 0;
	g->hosts = 1;
	g->pod = pod;
	j->flavor_mask |= 1ULL << f;
	sched_job_request(j, j->state != SCHED_PENDING, j->req, &j->n_req);
	return true;
}

static bool
add_choice(struct sched_model *m, int **arr, short *n, short *cap, const char *s,
	   struct err *e)
{
	if (*n == SCHED_MAX_CHOICES)
		return err_set(e, 400, "queue.too_many_choices", "more than %d allowed values",
		    SCHED_MAX_CHOICES);
	if (*n == *cap) {
		short ncap = *cap ? 2 * *cap : 2;
		int *na = arena_alloc(m->arena, (size_t)ncap * sizeof(*na));

		if (*n > 0)
			memcpy(na, *arr, (size_t)*n * sizeof(*na));
		*arr = na;
		*cap = ncap;
	}
	(*arr)[(*n)++] = sched_model_intern(m, s);
	return true;
}

bool
sched_job_evicted_by(struct sched_model *m, struct sched_job *j, const char *by)
{
	const char **na;
	int i;

	if (by == NULL || by[0] == '\0')
		return true;
	for (i = 0; i < j->n_evicted_by; i++)
		if (strcmp(j->evicted_by[i], by) == 0)
			return true;
	/* grows one by one: a job is rarely evicted more than a couple of times */
	na = arena_alloc(m->arena, (size_t)(j->n_evicted_by + 1) * sizeof(*na));
	if (j->n_evicted_by > 0)
		memcpy(na, j->evicted_by, (size_t)j->n_evicted_by * sizeof(*na));
	na[j->n_evicted_by++] = arena_strdup(m->arena, by);
	j->evicted_by = na;
	return true;
}

bool
sched_job_avoid_node(struct sched_model *m, struct sched_job *j, const char *cluster_id,
		     const char *node)
{
	const char **na;

	if (cluster_id == NULL || node == NULL || sched_job_avoids(j, cluster_id, node))
		return true;
	na = arena_alloc(m->arena, (size_t)(j->n_avoid + 1) * 2 * sizeof(*na));
	if (j->n_avoid > 0)
		memcpy(na, j->avoid, (size_t)j->n_avoid * 2 * sizeof(*na));
	na[2 * j->n_avoid] = arena_strdup(m->arena, cluster_id);
	na[2 * j->n_avoid + 1] = arena_strdup(m->arena, node);
	j->n_avoid++;
	j->avoid = na;
	return true;
}

bool
sched_job_avoids(const struct sched_job *j, const char *cluster_id, const char *node)
{
	if (node == NULL)
		return false;
	for (int i = 0; i < j->n_avoid; i++)
		if (strcmp(j->avoid[2 * i], cluster_id) == 0 &&
		    strcmp(j->avoid[2 * i + 1], node) == 0)
			return true;
	return false;
}

bool
sched_job_allow_region(struct sched_model *m, struct sched_job *j, const char *region,
		       struct err *e)
{
	return add_choice(m, &j->regions, &j->n_regions, &j->cap_regions, region, e);
}

bool
sched_job_allow_provider(struct sched_model *m, struct sched_job *j, const char *provider,
			 struct err *e)
{
	return add_choice(m, &j->providers, &j->n_providers, &j->cap_providers, provider, e);
}

bool
sched_job_set_cluster(struct sched_model *m, struct sched_job *j, const char *cluster,
		      bool in_flight, int64_t admitted_at, struct err *e)
{
	int ci = cluster ? sched_map_get(&m->cluster_ids, cluster) : -1;

	if (ci < 0)
		return err_set(e, 404, "queue.cluster_not_found", "cluster %s not found",
		    cluster ? cluster : "(null)");
	j->cluster = ci;
	j->in_flight = in_flight;
	j->admitted_at = admitted_at;
	return true;
}

static int
node_by_id(const struct sched_cluster *c, const char *id)
{
	size_t i;

	for (i = 0; i < c->n_nodes; i++)
		if (c->nodes[i].id != NULL && strcmp(c->nodes[i].id, id) == 0)
			return (int)i;
	return -1;
}

bool
sched_job_add_alloc(struct sched_model *m, struct sched_job *j, int group, const char *node,
		    int pods, struct err *e)
{
	struct sched_cluster *c;
	struct sched_alloc *a;
	size_t cap = j->n_allocs, p;
	int r;

	if (j->cluster < 0)
		return err_set(e, 409, "queue.no_cluster", "job %s has no cluster", j->id);
	if (group < 0 || group >= j->n_groups || pods < 1)
		return err_set(e, 400, "queue.bad_alloc", "bad allocation for job %s", j->id);
	c = m->clusters[j->cluster];
	j->allocs = sched_grow(j->allocs, &cap, j->n_allocs + 1, sizeof(*j->allocs));
	a = &j->allocs[j->n_allocs];
	memset(a, 0, sizeof(*a));
	a->group = group;
	a->pods = pods;
	for (r = 0; r < SCHED_NRES; r++)
		a->res.v[r] = j->groups[group].pod.v[r] * pods;
	if (node != NULL) {
		if ((a->node = node_by_id(c, node)) < 0)
			return err_set(e, 404, "queue.node_not_found", "node %s not found", node);
		a->pool = c->nodes[a->node].pool;
	} else {
		a->node = -1;
		a->grown = true;
		a->pool = -1;
		for (p = 0; p < c->n_pools; p++)
			if (c->pools[p].flavor == j->groups[group].flavor) {
				a->pool = (int)p;
				break;
			}
		if (a->pool < 0)
			return err_set(e, 409, "queue.no_pool", "cluster %s has no pool for the group",
			    c->id);
	}
	j->n_allocs++;
	return true;
}

/* Sizes the packing scratch arrays for n nodes. */
void
sched_scratch_ensure(struct sched_model *m, size_t n)
{
	size_t cap;

	if (n <= m->s_cap)
		return;
	cap = m->s_cap;
	m->s_free = sched_grow(m->s_free, &cap, n, sizeof(*m->s_free));
	cap = m->s_cap;
	m->s_used = sched_grow(m->s_used, &cap, n, sizeof(*m->s_used));
	cap = m->s_cap;
	m->s_order = sched_grow(m->s_order, &cap, n, sizeof(*m->s_order));
	cap = m->s_cap;
	m->s_pool = sched_grow(m->s_pool, &cap, n, sizeof(*m->s_pool));
	m->s_cap = cap;
}
