/* job_update: the request side of a running job's spec update. What may change depends on
 * the kind, as KubeRay applies it: a RayService takes a new image, serve config, worker
 * groups or autoscaler options (a change of its Ray cluster is a zero-downtime upgrade with
 * a new cluster, so the old spec's footprint is held until it completes); a RayCluster
 * takes new worker group sizes (in place); RayJob and RayCronJob take nothing. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/config.h"
#include "providers/jobspec.h"
#include "queue/change/change.h"
#include "queue/jobs/job.h"
#include "queue/sched/loader.h"
#include "queue/sched/sched_int.h"
#include "queue/sched/scheduler.h"

static const char *const service_fields[] = { "image", "serve_config", "worker_groups",
	"autoscaler", "upgrade_deadline_seconds", NULL };
static const char *const size_fields[] = { "replicas", "min_replicas", "max_replicas", NULL };

static bool
listed(const char *const *l, const char *k)
{
	for (; *l != NULL; l++)
		if (strcmp(*l, k) == 0)
			return true;
	return false;
}

/* First member of a or b (objects) that differs and is not in allowed; NULL: none. */
static const char *
first_other_diff(json_t *a, json_t *b, const char *const *allowed)
{
	const char *k;
	json_t *v;

	json_object_foreach(a, k, v)
		if (!json_equal(v, json_object_get(b, k)) && !listed(allowed, k))
			return k;
	json_object_foreach(b, k, v)
		if (json_object_get(a, k) == NULL && !listed(allowed, k))
			return k;
	return NULL;
}

/* RayCluster: the same groups, in the same order, only their sizes differ. */
static bool
sizes_only(json_t *old, json_t *new, struct err *e)
{
	json_t *og = json_object_get(old, "worker_groups"), *ng = json_object_get(new,
	    "worker_groups");
	char ptr[96];

	if (json_array_size(og) != json_array_size(ng))
		return err_field(e, 422, "job.field_immutable", "/worker_groups",
		    "a running RayCluster keeps its worker groups: only their sizes change");
	for (size_t i = 0; i < json_array_size(og); i++) {
		const char *k = first_other_diff(json_array_get(og, i), json_array_get(ng, i),
		    size_fields);

		if (k == NULL)
			continue;
		snprintf(ptr, sizeof(ptr), "/worker_groups/%zu/%s", i, k);
		return err_field(e, 422, "job.field_immutable", ptr,
		    "%s cannot change on a running RayCluster: only replicas, min_replicas and "
		    "max_replicas", k);
	}
	return true;
}

/* ---- room: an update's extra footprint must fit before it is recorded */

/* Pods the scheduler counts for group g of s (replicas at the minimum, times the hosts of a
 * slice; an elastic group starts with one replica), 0 for a group that takes no room:
 * what loader_add_job models. */
static int
group_pods(const struct job_spec *s, const struct jobspec_group *g)
{
	int hosts = jobspec_group_hosts(s, g), min = g->min_replicas * hosts;

	if (g->max_replicas * hosts <= 0)
		return 0;
	return min > 0 ? min : hosts;
}

/* A RayCluster grow as a pending job of the model: the added pods of each group only (no
 * head), with the job's constraints. map[i] is the job's own model group of group i. A job
 * with no group when nothing grows. */
static struct sched_job *
grow_job(struct sched_model *m, const char *id, const char *queue_id, json_t *old,
    json_t *new, int *map, struct err *e)
{
	struct job_spec so, sn;
	struct sched_job *jd = NULL, copy;
	char gid[64];
	int mg = 0;

	memset(&so, 0, sizeof(so));
	memset(&sn, 0, sizeof(sn));
	if (!jobspec_from_json(old, &so, e) || !jobspec_from_json(new, &sn, e))
		goto cleanup;
	snprintf(gid, sizeof(gid), "%s#grow", id);
	if ((jd = loader_add_job(m, gid, queue_id, 0, false, m->now, SCHED_PENDING, new, e)) ==
	    NULL)
		goto cleanup;
	sched_job_own_groups(m, jd);	/* its groups are rewritten below */
	copy = *jd;
	jd->n_groups = 0;
	jd->n_req = 0;
	jd->flavor_mask = 0;
	if (jd->topo != SCHED_TOPO_SLICE)
		jd->topo = SCHED_TOPO_NONE;	/* host, rack, pack: the caller narrows the nodes */
	for (size_t i = 0; i < sn.ngroups && i < so.ngroups; i++) {
		int before = group_pods(&so, &so.groups[i]), after = group_pods(&sn, &sn.groups[i]);
		const struct sched_group *g;

		if (after <= 0)
			continue;
		g = &copy.groups[++mg];
		if (after <= before)
			continue;
		map[jd->n_groups] = mg;
		if (!sched_job_add_group(m, jd, sched_model_name(m, m->flavor_name[g->flavor]),
		    after - before, after - before, g->pod, e)) {
			jd = NULL;
			goto cleanup;
		}
		jd->groups[jd->n_groups - 1].hosts = g->hosts;
	}
cleanup:
	jobspec_cleanup(&so);
	jobspec_cleanup(&sn);
	return jd;
}

/* Host and rack topology: the added pods go where the job's accelerator pods are (the
 * renderer pins the same): other nodes of the cluster are taken out, no node grows. */
static void
narrow(struct sched_model *m, struct sched_cluster *k, json_t *placement)
{
	const char *host = json_string_value(json_object_get(placement, "host"));
	const char *rack = json_string_value(json_object_get(placement, "rack"));
	json_t *racks = json_object_get(placement, "racks"), *r;	/* topology pack */
	size_t x;

	if (host == NULL && rack == NULL)
		return;
	for (size_t i = 0; i < k->n_nodes; i++) {
		struct sched_node *n = &k->nodes[i];
		bool keep = host != NULL ? n->id != NULL && strcmp(n->id, host) == 0 :
		    n->rack >= 0 && strcmp(sched_model_name(m, n->rack), rack) == 0;

		json_array_foreach(racks, x, r)	/* the gang's racks, each allowed */
			keep |= host == NULL && n->rack >= 0 && json_is_string(r) &&
			    strcmp(sched_model_name(m, n->rack), json_string_value(r)) == 0;

		if (!keep)
			memset(&n->free, 0, sizeof(n->free));
	}
	for (size_t p = 0; p < k->n_pools; p++)
		k->pools[p].grow_nodes = 0;
	sched_cluster_refresh(k);
}

/* {accelerators: {flavor: n}, cpu_millicores, memory_mib} of j's request. */
static json_t *
footprint(const struct sched_model *m, const struct sched_job *j)
{
	json_t *acc = json_object();
	int64_t cpu = 0, mem = 0;

	for (int k = 0; k < j->n_req; k++) {
		const struct sched_flavor_req *q = &j->req[k];

		if (q->v.v[SCHED_ACCEL] > 0)
			json_object_set_new(acc, sched_model_name(m, m->flavor_name[q->flavor]),
			    json_integer(q->v.v[SCHED_ACCEL]));
		cpu += q->v.v[SCHED_CPU];
		mem += q->v.v[SCHED_MEM];
	}
	return json_pack("{s:o, s:I, s:I}", "accelerators", acc, "cpu_millicores",
	    (json_int_t)cpu, "memory_mib", (json_int_t)mem);
}

static const char *const res_unit[SCHED_NRES] = { "accelerators", "millicores of CPU",
	"MiB of memory" };

/* 409 job.update_no_room naming what is short: the queue's quota, per flavor and resource. */
static bool
no_quota(const struct sched_model *m, const struct sched_job *j, const char *queue,
    const char *what, struct err *e)
{
	const struct sched_queue *q = m->queues[j->queue];
	char d[600] = "";
	size_t n = 0;

	for (int k = 0; k < j->n_req; k++)
		for (int r = 0; r < SCHED_NRES; r++) {
			int64_t need = j->req[k].v.v[r], room = sched_quota_room(m, q,
			    j->req[k].flavor, r);

			if (need <= 0 || room == SCHED_UNSET || need <= room || n >= sizeof(d) - 1)
				continue;
			n += (size_t)snprintf(d + n, sizeof(d) - n, "%sQueue %s has room for %lld more"
			    " %s %s, the update needs %lld (%lld missing).", n ? " " : "", queue,
			    (long long)room, sched_model_name(m, m->flavor_name[j->req[k].flavor]),
			    res_unit[r], (long long)need, (long long)(need - room));
		}
	err_set(e, 409, "job.update_no_room", "not enough quota for %s", what);
	err_detail(e, "%s", d[0] ? d : "The queue's cohort has nothing left to lend.");
	return false;
}

/* 409 job.update_no_room naming what is short on the job's cluster. */
static bool
no_capacity(const struct sched_model *m, const struct sched_job *j,
    const struct sched_cluster *k, const char *cluster, const char *what,
    enum sched_reason why, struct err *e)
{
	char d[600] = "";
	size_t n = 0;

	for (int q = 0; q < j->n_req && n < sizeof(d) - 1; q++) {
		int f = j->req[q].flavor, r = j->req[q].v.v[SCHED_ACCEL] > 0 ? SCHED_ACCEL :
		    SCHED_CPU;
		int64_t free = 0, need = j->req[q].v.v[r];

		for (size_t p = 0; p < k->n_pools; p++)
			if (sched_pool_matches(m, j, &k->pools[p], f))
				free += k->pools[p].sum_free.v[r] + (int64_t)k->pools[p].grow_nodes *
				    k->pools[p].node_alloc.v[r];
		if (need > free)
			n += (size_t)snprintf(d + n, sizeof(d) - n, "%sCluster %s has %lld free %s %s"
			    " (nodes and growth), the update needs %lld (%lld missing).", n ? " " :
			    "", cluster, (long long)free, sched_model_name(m, m->flavor_name[f]),
			    res_unit[r], (long long)need, (long long)(need - free));
	}
	if (d[0] == '\0')
		snprintf(d, sizeof(d), "Cluster %s has the resources in total but the pods do not "
		    "fit its nodes (%s).", cluster, sched_reason_code(why));
	err_set(e, 409, "job.update_no_room", "not enough capacity for %s", what);
	err_detail(e, "%s", d);
	return false;
}

/* Checks that the update's extra footprint fits the job's queue quota and its cluster's
 * free capacity now: a RayService upgrade runs the new Ray cluster next to the old one, a
 * RayCluster grow adds workers. *extra gets the footprint (NULL when nothing is added);
 * *allocs (grow) the added pods' allocations in the placement's form. */
static bool
room_check(struct db *c, json_t *job, json_t *new, bool grow, int gen, json_t **extra,
    json_t **allocs, json_t **xallocs, struct err *e)
{
	const char *id = json_string_value(json_object_get(job, "id"));
	const char *env = json_string_value(json_object_get(job, "environment"));
	const char *cluster = json_string_value(json_object_get(job, "cluster_id"));
	const char *what = grow ? "the added workers" : "the upgrade's second Ray cluster";
	struct sched_model *m = NULL;
	struct sched_cluster *k;
	struct sched_job *cur, *jd = NULL;
	struct sched_alloc *al = NULL;
	struct arena *a = arena_new();
	json_t *pools = NULL;
	enum sched_reason why;
	size_t n = 0;
	int map[SCHED_MAX_GROUPS] = { 0 };
	bool ok = false;

	*extra = NULL;
	*allocs = NULL;
	*xallocs = NULL;
	if (!loader_model_plan(c, env, cfg.snapshot_max_age_s, &m, &pools, e))
		goto cleanup;
	k = cluster ? sched_model_find_cluster(m, cluster) : NULL;
	cur = sched_model_find_job(m, id);
	if (k == NULL || cur == NULL || cur->cluster != k->idx) {
		err_set(e, 409, "job.update_no_room", "the job's cluster has no capacity snapshot "
		    "now; retry");
		goto cleanup;
	}
	if (grow) {
		jd = grow_job(m, id, json_string_value(json_object_get(job, "queue_id")),
		    json_object_get(job, "spec"), new, map, e);
		if (jd != NULL && (cur->topo == SCHED_TOPO_HOST || cur->topo == SCHED_TOPO_RACK ||
		    cur->topo == SCHED_TOPO_PACK))
			narrow(m, k, json_object_get(job, "placement"));
	} else {
		char nid[64];

		snprintf(nid, sizeof(nid), "%s#new", id);
		jd = loader_add_job(m, nid, json_string_value(json_object_get(job, "queue_id")),
		    0, false, m->now, SCHED_PENDING, new, e);
	}
	if (jd == NULL)
		goto cleanup;
	if (jd->n_groups == 0) {	/* nothing added: a shrink, or an elastic maximum */
		ok = true;
		goto cleanup;
	}
	if (sched_quota_check(m, jd) != SCHED_R_CHOSEN) {
		no_quota(m, jd, json_string_value(json_object_get(job, "queue")), what, e);
		goto cleanup;
	}
	why = sched_pack(m, jd, k, a, &al, &n);
	if (why != SCHED_R_CHOSEN) {
		no_capacity(m, jd, k, json_string_value(json_object_get(job, "cluster")), what,
		    why, e);
		goto cleanup;
	}
	*extra = footprint(m, jd);
	if (grow) {
		struct sched_placement pl;
		json_t *pj;

		*xallocs = sched_explain_allocs(m, jd, k->idx, al, n, map, gen);
		for (size_t i = 0; i < n; i++)
			al[i].group = map[al[i].group];
		memset(&pl, 0, sizeof(pl));
		pl.cluster = k->idx;
		pl.allocs = al;
		pl.n_allocs = n;
		pj = scheduler_placement_json(m, &pl, pools);
		*allocs = json_incref(json_object_get(pj, "allocs"));
		json_decref(pj);
	}
	ok = true;
cleanup:
	json_decref(pools);
	sched_model_free(m);
	arena_free(a);
	return ok;
}

/* The job's placement with the added pods' allocations merged in (same group and node:
 * more pods), so that explain and the scheduler's model show them. New reference. */
static json_t *
placement_grown(json_t *placement, json_t *added)
{
	json_t *pl = json_deep_copy(placement), *list = json_object_get(pl, "allocs"), *x, *y;
	size_t i, j;

	if (!json_is_array(list)) {
		list = json_array();
		json_object_set_new(pl, "allocs", list);
	}
	json_array_foreach(added, i, x) {
		bool merged = false;

		json_array_foreach(list, j, y)
			if (json_equal(json_object_get(x, "group"), json_object_get(y, "group")) &&
			    json_is_string(json_object_get(x, "node")) &&
			    json_equal(json_object_get(x, "node"), json_object_get(y, "node"))) {
				json_object_set_new(y, "pods", json_integer(json_integer_value(
				    json_object_get(y, "pods")) + json_integer_value(json_object_get(x,
				    "pods"))));
				merged = true;
				break;
			}
		if (!merged)
			json_array_append(list, x);
	}
	return pl;
}

static const char sql_open[] =
    "SELECT coalesce(spec_update->>'phase', ''), coalesce((spec_update->>'generation')::int, 0)"
    " FROM jobs WHERE id = $1::uuid";
static const char sql_write[] =
    "UPDATE jobs SET spec = $2::jsonb, spec_update = jsonb_strip_nulls(jsonb_build_object("
    " 'generation', $3::int, 'phase', 'pending', 'fields', $4::jsonb, 'upgrade', $5::boolean,"
    " 'old_spec', spec, 'requested_at', now(), 'next_at', now(), 'extra', $6::jsonb,"
    /* an upgrade's deadline: the new spec's, else its environment's (migration 0022) */
    " 'deadline_s', CASE WHEN $5::boolean THEN coalesce(($2::jsonb->>"
    "'upgrade_deadline_seconds')::int, (SELECT v.upgrade_deadline_seconds FROM environments v"
    " WHERE v.name = jobs.environment), 3600) END,"
    " 'deadline_at', CASE WHEN $5::boolean THEN now() + make_interval(secs => coalesce(($2::jsonb"
    "->>'upgrade_deadline_seconds')::int, (SELECT v.upgrade_deadline_seconds FROM environments v"
    " WHERE v.name = jobs.environment), 3600)) END)),"
    " placement = coalesce($7::jsonb, placement), version = version + 1, updated_at = now()"
    " WHERE id = $1::uuid";

/* explain (the job's last placement decision) shows the pods a grow added */
static const char sql_explain[] =
    "UPDATE placements SET decision = jsonb_set(decision, '{allocations}',"
    " coalesce(decision->'allocations', '[]') || $2::jsonb) WHERE id = (SELECT max(id)"
    " FROM placements WHERE job_id = $1::uuid) AND decision IS NOT NULL";

bool
job_update_spec(struct db *c, json_t *job, json_t *body, bool *changed, struct err *e)
{
	const char *id = json_string_value(json_object_get(job, "id"));
	const char *state = json_string_value(json_object_get(job, "state"));
	const char *kind = json_string_value(json_object_get(job, "kind"));
	const char *env = json_string_value(json_object_get(job, "environment"));
	json_t *old = json_object_get(job, "spec"), *in = NULL, *new = NULL, *fields = NULL;
	json_t *extra = NULL, *added = NULL, *xadded = NULL;
	struct job_spec s;
	PGresult *r = NULL;
	const char *k, *bad;
	json_t *v;
	char gen[16], *fs = NULL, *ns = NULL, *xs = NULL, *ps = NULL;
	bool ok = false, upgrade = false;

	memset(&s, 0, sizeof(s));
	*changed = false;
	if (strcmp(kind, "RayJob") == 0 || strcmp(kind, "RayCronJob") == 0)
		return err_field(e, 409, "job.update_not_allowed", "/kind",
		    "a %s cannot change once submitted: cancel it and submit again", kind);
	if (job_state_parse(state) != JOB_RUNNING && job_state_parse(state) != JOB_DISPATCHED)
		return err_set(e, 409, "job.state", "only a dispatched or running job takes a "
		    "spec update (this one is %s)", state);
	if (!db_exec(c, sql_open, 1, &id, &r, e))
		return false;
	if (PQntuples(r) == 1 && (strcmp(PQgetvalue(r, 0, 0), "pending") == 0 ||
	    strcmp(PQgetvalue(r, 0, 0), "upgrading") == 0)) {
		err_set(e, 409, "job.update_in_progress", "an update of this job is still being "
		    "applied (%s)", PQgetvalue(r, 0, 0));
		goto cleanup;
	}
	snprintf(gen, sizeof(gen), "%d", PQntuples(r) == 1 ? atoi(PQgetvalue(r, 0, 1)) + 1 : 1);
	if (!json_is_object(body)) {
		err_field(e, 400, "api.not_object", "", "job spec must be a json object");
		goto cleanup;
	}
	in = json_deep_copy(body);
	v = json_object_get(in, "environment");
	if (v != NULL && (!json_is_string(v) || strcmp(json_string_value(v), env) != 0)) {
		err_field(e, 422, "job.field_immutable", "/environment",
		    "environment cannot change on a running job");
		goto cleanup;
	}
	json_object_del(in, "environment");
	if (!jobspec_from_json(in, &s, e) || !pod_policy_ok(c, env, &s, e))
		goto cleanup;
	new = jobspec_to_json(&s);
	/* priority_class is kept as submitted: absent means unchanged */
	if (json_object_get(new, "priority_class") == NULL &&
	    json_object_get(old, "priority_class") != NULL)
		json_object_set(new, "priority_class", json_object_get(old, "priority_class"));
	bad = first_other_diff(old, new, strcmp(kind, "RayService") == 0 ? service_fields :
	    (const char *const[]){ "worker_groups", NULL });
	if (bad != NULL) {
		char ptr[64];

		snprintf(ptr, sizeof(ptr), "/%s", bad);
		err_field(e, 422, "job.field_immutable", ptr, "%s cannot change on a running %s",
		    bad, kind);
		goto cleanup;
	}
	if (strcmp(kind, "RayCluster") == 0 && !sizes_only(old, new, e))
		goto cleanup;
	fields = json_array();
	json_object_foreach(new, k, v)
		if (!json_equal(v, json_object_get(old, k)))
			json_array_append_new(fields, json_string(k));
	json_object_foreach(old, k, v)
		if (json_object_get(new, k) == NULL)
			json_array_append_new(fields, json_string(k));
	if (json_array_size(fields) == 0) {
		ok = true;
		goto cleanup;
	}
	/* KubeRay upgrades a RayService with a new Ray cluster when anything of the cluster
	 * changes but the sizes; a serve config alone is applied in place */
	if (strcmp(kind, "RayService") == 0) {
		json_t *a = json_deep_copy(old), *b = json_deep_copy(new);

		json_object_del(a, "serve_config");
		json_object_del(b, "serve_config");
		json_object_del(a, "upgrade_deadline_seconds");	/* fleetd's, not KubeRay's */
		json_object_del(b, "upgrade_deadline_seconds");
		upgrade = !json_equal(a, b);
		json_decref(a);
		json_decref(b);
	}
	/* the temporary double footprint (upgrade) or the added workers (grow) must fit */
	if ((upgrade || strcmp(kind, "RayCluster") == 0) && !room_check(c, job, new,
	    strcmp(kind, "RayCluster") == 0, atoi(gen), &extra, &added, &xadded, e))
		goto cleanup;
	if (added != NULL && json_array_size(added) > 0) {
		json_t *pl = placement_grown(json_object_get(job, "placement"), added);

		ps = json_dumps(pl, JSON_COMPACT);
		json_decref(pl);
	}
	xs = extra ? json_dumps(extra, JSON_COMPACT) : NULL;
	fs = json_dumps(fields, JSON_COMPACT);
	ns = json_dumps(new, JSON_COMPACT | JSON_SORT_KEYS);
	{
		const char *p[7] = { id, ns, gen, fs, upgrade ? "true" : "false", xs, ps };
		json_t *data = json_pack("{s:O, s:b, s:i}", "fields", fields, "upgrade", upgrade,
		    "generation", atoi(gen));
		bool w = db_exec(c, sql_write, 7, p, NULL, e) &&
		    job_event(c, id, "spec_update_requested", upgrade ? "spec update requested: "
		    "zero-downtime upgrade with a new Ray cluster" : "spec update requested",
		    data, e);

		json_decref(data);
		if (w && xadded != NULL && json_array_size(xadded) > 0) {
			char *xa = json_dumps(xadded, JSON_COMPACT);
			const char *q[2] = { id, xa };

			w = db_exec(c, sql_explain, 2, q, NULL, e);
			free(xa);
		}
		if (!w)
			goto cleanup;
	}
	*changed = true;
	ok = true;
cleanup:
	jobspec_cleanup(&s);
	PQclear(r);
	json_decref(in);
	json_decref(new);
	json_decref(fields);
	json_decref(extra);
	json_decref(added);
	json_decref(xadded);
	free(fs);
	free(ns);
	free(xs);
	free(ps);
	return ok;
}
