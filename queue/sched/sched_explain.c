/* sched_explain: the model side of GET /v1/jobs/{id}/placement (queue/jobs/explain.c loads the
 * model and calls it): a decision with every candidate and why it lost, or, for a pending
 * job, its queue position and the one blocking reason per cluster. */
#include <math.h>
#include <string.h>

#include "queue/sched/sched_int.h"

static json_t *
num_or_null(double x)
{
	return isfinite(x) ? json_real(x) : json_null();
}

static json_t *
str_or_null(const char *s)
{
	return s != NULL ? json_string(s) : json_null();
}

json_t *
sched_explain_allocs(const struct sched_model *m, const struct sched_job *j, int cluster,
		     const struct sched_alloc *al, size_t n, const int *map, int gen)
{
	const struct sched_cluster *c = cluster >= 0 ? m->clusters[cluster] : NULL;
	json_t *arr = json_array();
	size_t i;

	for (i = 0; c != NULL && i < n; i++) {
		const char *node = al[i].node >= 0 && (size_t)al[i].node < c->n_nodes ?
		    c->nodes[al[i].node].id : NULL;
		int f = j->groups[al[i].group].flavor;

		const struct sched_node *nd = node != NULL ? &c->nodes[al[i].node] : NULL;
		json_t *o = json_pack("{s:o, s:b, s:i, s:i, s:s, s:I, s:I, s:I, s:s, s:b}",
		    "node", str_or_null(node), "grown", al[i].grown || node == NULL,
		    "group", map != NULL ? map[al[i].group] : al[i].group, "pods", al[i].pods,
		    "flavor", sched_model_name(m, m->flavor_name[f]),
		    "accelerators", (json_int_t)al[i].res.v[SCHED_ACCEL],
		    "cpu_millis", (json_int_t)al[i].res.v[SCHED_CPU],
		    "memory_mib", (json_int_t)al[i].res.v[SCHED_MEM],
		    "role", j->groups[al[i].group].head ? "head" : "worker",
		    "spot", al[i].pool >= 0 && (size_t)al[i].pool < c->n_pools &&
		    c->pools[al[i].pool].spot);

		if (nd != NULL && nd->rack >= 0)
			json_object_set_new(o, "rack", json_string(sched_model_name(m, nd->rack)));
		if (nd != NULL && nd->slice >= 0)
			json_object_set_new(o, "slice", json_string(sched_model_name(m, nd->slice)));
		if (gen >= 0)
			json_object_set_new(o, "spec_update", json_integer(gen));
		json_array_append_new(arr, o);
	}
	return arr;
}

/* What the job's topology means, and where the scheduler put the accelerator gang: the
 * one node (host), the rack, or the slices (one per replica).  The renderer pins the same. */
static json_t *
topology_json(const struct sched_model *m, const struct sched_job *j, int cluster,
	      const struct sched_alloc *al, size_t n)
{
	static const char *const names[] = { "none", "host", "rack", "slice", "pack" };
	static const char *const defs[] = {
		"no constraint: pods go wherever they fit",
		"every accelerator pod of the job on one node, elastic growth included: the "
		    "node's allocatable holds the accelerator groups at max_replicas",
		"every accelerator pod in one rack (NVLink domain)",
		"each replica of the accelerator group is one whole TPU slice of the shape: "
		    "one pod per host of the slice",
		"the accelerator gang on the fewest racks (NVLink domains) of one scale unit "
		    "(InfiniBand block), on racks no other gang uses when there are enough",
	};
	const struct sched_cluster *c = cluster >= 0 ? m->clusters[cluster] : NULL;
	json_t *o = json_pack("{s:s, s:s}", "type", names[j->topo], "definition", defs[j->topo]);
	json_t *where = json_array();
	size_t i, k;

	for (i = 0; c != NULL && i < n; i++) {
		const struct sched_node *nd;
		const char *name = NULL;
		json_t *v;
		bool dup = false;

		if (j->groups[al[i].group].pod.v[SCHED_ACCEL] <= 0 || al[i].node < 0 ||
		    (size_t)al[i].node >= c->n_nodes)
			continue;
		nd = &c->nodes[al[i].node];
		name = j->topo == SCHED_TOPO_HOST ? nd->id :
		    j->topo == SCHED_TOPO_RACK || j->topo == SCHED_TOPO_PACK ?
		    sched_model_name(m, nd->rack) :
		    j->topo == SCHED_TOPO_SLICE ? sched_model_name(m, sched_tpu_part_of(m,
		    j->shape) >= 0 && nd->part[sched_tpu_part_of(m, j->shape)] >= 0 ?
		    nd->part[sched_tpu_part_of(m, j->shape)] : nd->slice) : NULL;
		if (name == NULL)
			continue;
		json_array_foreach(where, k, v)
			dup |= strcmp(json_string_value(v), name) == 0;
		if (!dup)
			json_array_append_new(where, json_string(name));
	}
	if (j->topo == SCHED_TOPO_NONE || c == NULL) {
		json_decref(where);
		return o;
	}
	json_object_set_new(o, j->topo == SCHED_TOPO_HOST ? "nodes" : j->topo == SCHED_TOPO_RACK ||
	    j->topo == SCHED_TOPO_PACK ? "racks" : "slices", where);
	if (j->topo == SCHED_TOPO_PACK) {
		const struct sched_node *nd = NULL;

		for (i = 0; i < n && nd == NULL; i++)
			if (j->groups[al[i].group].pod.v[SCHED_ACCEL] > 0 && al[i].node >= 0 &&
			    (size_t)al[i].node < c->n_nodes)
				nd = &c->nodes[al[i].node];
		json_object_set_new(o, "scale_unit", nd != NULL && nd->block >= 0 ?
		    json_string(sched_model_name(m, nd->block)) : json_null());
	}
	return o;
}

static json_t *
cluster_ref(const struct sched_model *m, int ci, enum sched_reason why, double score)
{
	const struct sched_cluster *c = m->clusters[ci];

	return json_pack("{s:s, s:o, s:o, s:s, s:o}", "cluster", c->id,
	    "region", str_or_null(sched_model_name(m, c->region)),
	    "provider", str_or_null(sched_model_name(m, c->provider)),
	    "reason", sched_reason_code(why), "score", num_or_null(score));
}

json_t *
sched_decision_to_json(const struct sched_model *m, const struct sched_decision *d)
{
	const struct sched_job *j = m->jobs[d->job];
	json_t *o, *cands = json_array(), *rej = json_object(), *vic = json_array();
	size_t i;
	int r;

	for (i = 0; i < d->place->n_cands; i++)
		json_array_append_new(cands, cluster_ref(m, d->place->cands[i].cluster,
		    d->place->cands[i].reason, d->place->cands[i].score));
	for (r = SCHED_R_OUTSCORED; r < SCHED_NREASONS && d->place->counts != NULL; r++)
		if (d->place->counts[r] > 0)
			json_object_set_new(rej, sched_reason_code(r),
			    json_integer(d->place->counts[r]));
	for (i = 0; i < d->n_victims; i++)
		json_array_append_new(vic, json_string(m->jobs[d->victims[i]]->id));
	o = json_pack("{s:s, s:s, s:s, s:o, s:b, s:o, s:o}", "job", j->id,
	    "queue", m->queues[j->queue]->id,
	    "outcome", d->outcome == SCHED_OUT_ADMIT ? "admitted" : "pending",
	    "share", num_or_null(d->share), "borrowing", d->borrowing,
	    "candidates", cands, "rejections", rej);
	if (o == NULL) {
		json_decref(vic);
		return NULL;
	}
	if (d->outcome == SCHED_OUT_ADMIT) {
		json_object_set_new(o, "cluster", json_string(m->clusters[d->place->cluster]->id));
		json_object_set_new(o, "score", num_or_null(d->place->score));
		json_object_set_new(o, "allocations", sched_explain_allocs(m, j, d->place->cluster,
		    d->place->allocs, d->place->n_allocs, NULL, -1));
		json_object_set_new(o, "topology", topology_json(m, j, d->place->cluster,
		    d->place->allocs, d->place->n_allocs));
		if (d->place->racks_used >= 0)
			json_object_set_new(json_object_get(o, "topology"), "racks_used",
			    json_integer(d->place->racks_used));
		if (d->place->racks_scattered >= 0)
			json_object_set_new(json_object_get(o, "topology"), "racks_if_scattered",
			    json_integer(d->place->racks_scattered));
		json_object_set_new(o, "victims", vic);
	} else {
		json_decref(vic);
		json_object_set_new(o, "reason", json_string(sched_reason_code(d->reason)));
		json_object_set_new(o, "position", json_integer(d->position));
		json_object_set_new(o, "hold_cluster", d->hold_cluster >= 0 ?
		    json_string(m->clusters[d->hold_cluster]->id) : json_null());
	}
	return o;
}

static int
position(const struct sched_model *m, const struct sched_job *j)
{
	size_t i;
	int pos = 1;

	for (i = 0; i < m->n_jobs; i++) {
		const struct sched_job *o = m->jobs[i];

		if (o == j || o->queue != j->queue || o->state != SCHED_PENDING)
			continue;
		if (o->priority > j->priority || (o->priority == j->priority &&
		    (o->enqueued_at < j->enqueued_at ||
		     (o->enqueued_at == j->enqueued_at && o->idx < j->idx))))
			pos++;
	}
	return pos;
}

/* The one reason c cannot take j now ("chosen" = it could, next cycle). */
static enum sched_reason
blocking(struct sched_model *m, const struct sched_job *j, const struct sched_cluster *c,
	 enum sched_reason quota)
{
	enum sched_reason why = sched_cluster_filter(m, j, c);
	size_t n;

	if (why == SCHED_R_CHOSEN && quota != SCHED_R_CHOSEN)
		why = quota;
	if (why == SCHED_R_CHOSEN)
		why = sched_quick_fit(m, j, c);
	if (why == SCHED_R_CHOSEN)
		why = sched_pack_scratch(m, j, c, &n);
	return why;
}

/* Why topology pack waits on c (issue 26): no racks known, a largest scale unit smaller
 * than the gang (submission refuses that when the fleet reported it; a cluster that shrank
 * or a job submitted before its racks were known waits here), or no room now. */
static json_t *
pack_detail(const struct sched_model *m, const struct sched_job *j,
	    const struct sched_cluster *c, enum sched_reason why)
{
	int block, racks;
	int64_t need, most = sched_blocks_largest(m, j, c, &block, &racks, &need);

	if (most == 0)
		return json_string("no node of the gang's pools here carries a rack (NVLink "
		    "domain) label: topology pack waits until the cluster reports its racks");
	if (need > most)
		return json_sprintf("the largest scale unit here (%s%s, %d racks) holds %lld "
		    "accelerators, fewer than the gang's %lld: topology pack never spans two "
		    "scale units, so it waits until a larger one joins", block >= 0 ? "block " :
		    "racks without a block label", block >= 0 ? sched_model_name(m, block) : "",
		    racks, (long long)most, (long long)need);
	return json_string(why == SCHED_R_TOPOLOGY_SPLIT ? "the capacity exists but no "
	    "scale unit (InfiniBand block) has racks with room for the whole accelerator gang "
	    "now; topology pack never spans two" : "not enough free accelerators on the racks "
	    "of any scale unit now");
}

json_t *
sched_explain_job(struct sched_model *m, const struct sched_job *j)
{
	const struct sched_queue *q = m->queues[j->queue];
	enum sched_reason quota;
	json_t *o, *arr;
	size_t i;

	if (j->state != SCHED_PENDING) {
		static const char *const names[] = { "pending", "admitted", "running", "preempted",
		    "finished" };

		return json_pack("{s:s, s:s, s:s, s:o, s:o, s:o, s:o}", "job", j->id, "queue", q->id,
		    "state", names[j->state],
		    "cluster", j->cluster >= 0 ? json_string(m->clusters[j->cluster]->id) : json_null(),
		    "allocations", sched_explain_allocs(m, j, j->cluster, j->allocs, j->n_allocs,
		    NULL, -1),
		    "topology", topology_json(m, j, j->cluster, j->allocs, j->n_allocs),
		    "capacity_preference", sched_explain_prefs(m, j));
	}
	quota = sched_quota_check(m, j);
	arr = json_array();
	/* a job that takes only its first choice: every cluster as that type alone sees it */
	if (j->first_only && j->n_pref > 0)
		m->ctype_only = j->pref[0];
	for (i = 0; i < m->n_clusters; i++) {
		const struct sched_cluster *c = m->clusters[i];

		if (c->env != q->env)
			continue;
		enum sched_reason why = blocking(m, j, c, quota);
		json_t *ref = cluster_ref(m, (int)i, why, NAN);

		if (why == SCHED_R_NO_HEAD_POOL)
			json_object_set_new(ref, "detail", json_sprintf("no on-demand cpu node pool "
			    "whose node holds the head (%lld millicores, %lld MiB): the head never "
			    "runs on spot or accelerator nodes", (long long)j->groups[0].pod.v[SCHED_CPU],
			    (long long)j->groups[0].pod.v[SCHED_MEM]));
		else if (why == SCHED_R_TOPOLOGY_SPLIT && j->topo == SCHED_TOPO_HOST)
			json_object_set_new(ref, "detail", json_string("the capacity exists but no "
			    "single node holds the accelerator gang (at max_replicas) now"));
		else if ((why == SCHED_R_TOPOLOGY_SPLIT || why == SCHED_R_INSUFFICIENT_CAPACITY) &&
		    j->topo == SCHED_TOPO_PACK)
			json_object_set_new(ref, "detail", pack_detail(m, j, c, why));
		else if (why == SCHED_R_TOPOLOGY_SPLIT && j->topo == SCHED_TOPO_SLICE)
			json_object_set_new(ref, "detail", json_string("fewer whole free slices of "
			    "the shape than replicas"));
		json_array_append_new(arr, ref);
	}
	m->ctype_only = SCHED_CT_ANY;
	o = json_pack("{s:s, s:s, s:s, s:i, s:s, s:o, s:o, s:o, s:o}", "job", j->id, "queue", q->id,
	    "state", "pending", "position", position(m, j), "quota", sched_reason_code(quota),
	    "hold_cluster", j->hold_cluster >= 0 ? json_string(m->clusters[j->hold_cluster]->id) :
	    json_null(), "clusters", arr, "topology", topology_json(m, j, -1, NULL, 0),
	    "capacity_preference", sched_explain_prefs(m, j));
	return o;
}
