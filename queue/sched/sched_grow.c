/* sched_grow: grow requests of elastic worker groups (issue 26) as gangs of their own.  The
 * KubeRay autoscaler raises a group's replicas above what its job was admitted with; the
 * status worker records the difference (queue/follow/grow.c) and the loader adds it to the
 * model as "<job id>#grow:<n>": the same queue, priority and preemption class as its job,
 * so fair share, quota floors and borrowing judge it as they judge a job.  It is placed on
 * its job's cluster only, in the group's domain, on nodes that exist. */
#include <stdlib.h>
#include <string.h>

#include "queue/sched/sched_int.h"

bool
sched_job_is_grow(const struct sched_job *j)
{
	return j->grow_of >= 0;
}

static void
add_rack(struct sched_model *m, struct sched_job *g, int rack)
{
	for (int i = 0; i < g->n_grow_racks; i++)
		if (g->grow_racks[i] == rack)
			return;
	if (g->n_grow_racks >= SCHED_MAX_RACKS)
		return;
	if (g->grow_racks == NULL)
		g->grow_racks = arena_alloc(m->arena, SCHED_MAX_RACKS * sizeof(*g->grow_racks));
	g->grow_racks[g->n_grow_racks++] = rack;
}

/* The domain the renderer pins the group to: the pool of its allocations (a multi-slice
 * TPU group spans pools: its whole free slices of the job's shape), and for the
 * accelerator gang the job's node (topology host) or racks (rack, pack). */
static void
domain(struct sched_model *m, struct sched_job *g, const struct sched_job *p, int group)
{
	const struct sched_cluster *c = m->clusters[p->cluster];
	bool gang = p->groups[group].pod.v[SCHED_ACCEL] > 0;

	for (size_t i = 0; i < p->n_allocs; i++) {
		const struct sched_alloc *a = &p->allocs[i];

		if (a->group != group || a->grown || a->node < 0 || (size_t)a->node >= c->n_nodes)
			continue;
		if (!(gang && p->topo == SCHED_TOPO_SLICE))
			g->grow_pool = a->pool;
		if (!gang)
			continue;
		if (p->topo == SCHED_TOPO_HOST)
			g->grow_node = a->node;
		if ((p->topo == SCHED_TOPO_RACK || p->topo == SCHED_TOPO_PACK) &&
		    c->nodes[a->node].rack >= 0)
			add_rack(m, g, c->nodes[a->node].rack);
	}
}

struct sched_job *
sched_model_add_grow(struct sched_model *m, const char *id, struct sched_job *p, int group,
		     int pods, enum sched_state st, int64_t at, struct err *e)
{
	const struct sched_group *pg;
	struct sched_job *g;

	if (group < 0 || group >= p->n_groups || p->groups[group].head || pods < 1) {
		err_set(e, 400, "queue.bad_grow", "grow %s names no worker group of its job", id);
		return NULL;
	}
	if (p->cluster < 0) {
		err_set(e, 409, "queue.no_cluster", "the job of grow %s has no cluster", id);
		return NULL;
	}
	pg = &p->groups[group];
	g = sched_model_add_job(m, id, m->queues[p->queue]->id, p->priority, at, st, e);
	if (g == NULL)
		return NULL;
	g->can_preempt = p->can_preempt;
	g->spot = p->spot;
	g->max_price = p->max_price;
	memcpy(g->pref, p->pref, sizeof(g->pref));
	g->n_pref = p->n_pref;
	g->first_only = p->first_only;
	g->max_migrations = 0;
	g->topo = p->topo == SCHED_TOPO_SLICE && pg->pod.v[SCHED_ACCEL] > 0 ? SCHED_TOPO_SLICE :
	    SCHED_TOPO_NONE;	/* host, rack and pack: the domain below narrows the nodes */
	g->shape = p->shape;
	g->grow_of = p->idx;
	g->grow_group = group;
	g->grow_cluster = p->cluster;
	sched_job_build_groups(m, g);
	if (!sched_job_add_group(m, g, sched_model_name(m, m->flavor_name[pg->flavor]), pods, pods,
	    pg->pod, e)) {
		g->state = SCHED_FINISHED;	/* in the model, never decided on */
		sched_job_keep_groups(m, g);
		return NULL;
	}
	g->groups[0].hosts = pg->hosts;
	sched_job_keep_groups(m, g);
	domain(m, g, p, group);
	return g;
}

bool
sched_grow_node_ok(const struct sched_job *j, const struct sched_cluster *c, size_t i)
{
	const struct sched_node *n = &c->nodes[i];
	int k;

	if (j->grow_of < 0)
		return true;
	if (c->idx != j->grow_cluster || n->id == NULL)
		return false;
	if (j->grow_pool >= 0 && n->pool != j->grow_pool)
		return false;
	if (j->grow_node >= 0 && (int)i != j->grow_node)
		return false;
	if (j->n_grow_racks == 0)
		return true;
	for (k = 0; k < j->n_grow_racks; k++)
		if (j->grow_racks[k] == n->rack)
			return true;
	return false;
}
