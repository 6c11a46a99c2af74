/* loader: Postgres rows -> a sched model (queue/sched/sched_model.c builds the model itself and
 * knows no SQL; this file is the only reader of the tables for it).  Memory is counted in
 * MiB, cpu in millicores. */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/log.h"
#include "providers/jobspec.h"
#include "queue/job_state.h"
#include "queue/sched/loader.h"
#include "regions/flavor.h"

static const char sql_clusters[] =
    "SELECT k.id::text, c.environment, c.region, c.provider, k.state = 'ready',"
    " k.cordoned, c.state = 'active', cap.pool, cap.flavor, cap.spot, cap.price_hour,"
    " cap.accel_per_node, greatest(cap.max_nodes - cap.nodes, 0), cap.topology::text,"
    " extract(epoch from cap.observed_at)::bigint,"
    " coalesce(extract(epoch from s.at)::bigint, 0), cap.machine_type, k.name, cap.capacity_type"
    " FROM clusters k JOIN clouds c ON c.id = k.cloud_id"
    " JOIN capacity cap ON cap.cluster_id = k.id"
    " LEFT JOIN stockouts s ON s.cluster_id = k.id AND s.flavor = cap.flavor"
    " WHERE ($1::text IS NULL OR c.environment = $1) ORDER BY k.id, cap.pool, cap.flavor";
static const char sql_queues[] =
    "SELECT id::text, environment, cohort, weight, queueing_strategy, nominal_quota::text,"
    " borrowing_limit::text, lending_limit::text, capacity_preference::text FROM queues"
    " WHERE ($1::text IS NULL OR environment = $1)";
/* Read through a cursor 2,000 rows at a time, so that the specs of every job are never
 * held at once (WITH HOLD: also outside a transaction, where the server keeps the rows).
 * The last column is a pending job's rank in its queue's order when the model keeps a
 * window of each queue (sql_jobs_window), else NULL. */
#define SQL_JOBS \
    "SELECT j.id::text, j.queue_id::text, j.priority, coalesce(p.preempt, false)," \
    " extract(epoch from j.enqueued_at)::bigint, j.state, j.spec::text," \
    " k.id::text, extract(epoch from coalesce(j.started_at, j.dispatched_at, j.updated_at))::bigint," \
    " j.placement::text, j.move->'to'::text," \
    " CASE WHEN j.spec_update->>'phase' IN ('pending','upgrading') AND" \
    " j.spec_update->>'upgrade' = 'true' THEN j.spec_update->'old_spec' END::text," \
    " CASE WHEN j.state = 'pending' AND j.attempt > 0 THEN (SELECT string_agg(DISTINCT" \
    " e.data->>'by', ',') FROM job_events e WHERE e.job_id = j.id AND" \
    " e.to_state = 'preempted' AND e.data ? 'by') END," \
    " CASE WHEN j.kind = 'RayCronJob' AND j.state = 'running' THEN" \
    " coalesce(j.cron_runs, '[]'::jsonb) END::text," \
    " CASE WHEN j.state = 'pending' THEN j.avoid_nodes END::text," \
    " j.capacity_migrations, coalesce(extract(epoch from j.migrated_at)::bigint, 0)"
#define SQL_JOBS_FROM \
    " FROM jobs j LEFT JOIN priority_classes p ON p.name = j.priority_class" \
    " LEFT JOIN clusters k ON k.id = j.cluster_id"
#define SQL_JOBS_WHERE \
    " WHERE j.state IN " JOB_STATES_LIVE_SQL \
    " AND ($1::text IS NULL OR j.environment = $1)"
static const char sql_jobs[] = "DECLARE loader_jobs NO SCROLL CURSOR WITH HOLD FOR "
    SQL_JOBS ", NULL::bigint" SQL_JOBS_FROM SQL_JOBS_WHERE;
/* Pending jobs: the first $2 of each queue in the model's order (priority, then age in
 * seconds: sched_cycle.c:pending_cmp), one more than the window so that the loader knows
 * the queue was cut (issue 29: at 100,000 pending, 30 MB of the scheduler's peak). */
static const char sql_jobs_window[] = "DECLARE loader_jobs NO SCROLL CURSOR WITH HOLD FOR "
    SQL_JOBS ", w.rn" SQL_JOBS_FROM
    " LEFT JOIN (SELECT id, row_number() OVER (PARTITION BY queue_id ORDER BY priority DESC,"
    " extract(epoch from enqueued_at)::bigint, id) AS rn FROM jobs WHERE state = 'pending'"
    " AND ($1::text IS NULL OR environment = $1)) w ON w.id = j.id"
    SQL_JOBS_WHERE " AND (w.rn IS NULL OR w.rn <= $2::bigint)";
/* The window gives each queue at least this many pending jobs. */
#define WINDOW_MIN	64

static int64_t
mib(int64_t bytes)
{
	return bytes / (1024 * 1024);
}

static int64_t
num(json_t *o, const char *k, int64_t dflt)
{
	json_t *v = json_object_get(o, k);

	return json_is_integer(v) ? json_integer_value(v) : dflt;
}

/* One capacity row: a pool and its nodes. */
static bool
add_pool(struct sched_model *m, struct sched_cluster *k, PGresult *r, int i, struct err *e)
{
	const char *flavor = PQgetvalue(r, i, 8);
	bool spot = PQgetvalue(r, i, 9)[0] == 't';
	int accel = atoi(PQgetvalue(r, i, 11));
	json_t *topo = json_loads(PQgetvalue(r, i, 13), 0, NULL), *n;
	struct sched_pool *p = sched_cluster_add_pool(m, k, flavor, spot,
	    atof(PQgetvalue(r, i, 10)), e);
	size_t idx;
	bool ok = false;

	if (p == NULL)
		goto cleanup;
	if (!spot && sched_ctype_parse(PQgetvalue(r, i, 18)) >= 0)
		p->ctype = (enum sched_ctype)sched_ctype_parse(PQgetvalue(r, i, 18));
	p->accel_per_node = accel;
	p->grow_nodes = atoi(PQgetvalue(r, i, 12));
	p->stockout_at = atoll(PQgetvalue(r, i, 15));
	p->stockout_penalty = p->stockout_at > 0 ? 1.0 : 0.0;	/* decays from stockout_at */
	json_array_foreach(json_object_get(topo, "nodes"), idx, n) {
		struct sched_vec fr = { { num(n, "free_accel", 0), num(n, "free_cpu_m", 0),
		    mib(num(n, "free_mem", 0)) } };
		struct sched_vec al = { { num(n, "alloc_accel", accel),
		    num(n, "alloc_cpu_m", fr.v[SCHED_CPU]),
		    mib(num(n, "alloc_mem", num(n, "free_mem", 0))) } };

		if (json_is_false(json_object_get(n, "ready")))
			continue;
		if (!sched_pool_add_node(m, k, p, json_string_value(json_object_get(n, "name")),
		    json_string_value(json_object_get(n, "rack")),
		    json_string_value(json_object_get(n, "slice")),
		    json_string_value(json_object_get(n, "shape")), al, fr, e))
			goto cleanup;
		sched_node_set_block(m, k, json_string_value(json_object_get(n, "block")));
		/* GKE dynamic slicing: the node's partition of each sub-slice shape */
		for (int s = 0; s < SCHED_TPU_PARTS; s++)
			sched_node_set_partition(m, k, s, json_string_value(json_object_get(
			    json_object_get(n, "partitions"), sched_tpu_part_shapes[s])));
		if (p->node_alloc.v[SCHED_ACCEL] == 0 && p->node_alloc.v[SCHED_CPU] == 0)
			p->node_alloc = al;
	}
	/* a pool with no node yet (a GKE flex-start pool before its first ProvisioningRequest
	 * is provisioned): the shape the poller took from its machine type (issue 27;
	 * regions/poller_rows.c, poller_node_template) */
	if (p->node_alloc.v[SCHED_ACCEL] == 0 && p->node_alloc.v[SCHED_CPU] == 0 &&
	    json_is_object(n = json_object_get(topo, "node_template"))) {
		p->node_alloc.v[SCHED_ACCEL] = num(n, "alloc_accel", accel);
		p->node_alloc.v[SCHED_CPU] = num(n, "alloc_cpu_m", 0);
		p->node_alloc.v[SCHED_MEM] = mib(num(n, "alloc_mem", 0));
	}
	ok = true;
cleanup:
	json_decref(topo);
	return ok;
}

static void
note_pool(json_t *pools, PGresult *r, int i)
{
	json_t *arr, *names;

	if (pools == NULL)
		return;
	arr = json_object_get(pools, PQgetvalue(r, i, 0));
	if (arr == NULL) {
		arr = json_array();
		json_object_set_new(pools, PQgetvalue(r, i, 0), arr);
	}
	names = json_object_get(pools, "_names");
	if (names == NULL) {
		names = json_object();
		json_object_set_new(pools, "_names", names);
	}
	json_object_set_new(names, PQgetvalue(r, i, 0), json_string(PQgetvalue(r, i, 17)));
	json_array_append_new(arr, json_pack("{s:s, s:s, s:s, s:b, s:s, s:f, s:i}",
	    "pool", PQgetvalue(r, i, 7), "machine_type", PQgetvalue(r, i, 16),
	    "flavor", PQgetvalue(r, i, 8), "spot", PQgetvalue(r, i, 9)[0] == 't',
	    "capacity_type", PQgetvalue(r, i, 9)[0] == 't' ? "spot" : PQgetvalue(r, i, 18),
	    "price_hour", atof(PQgetvalue(r, i, 10)), "accel_per_node",
	    atoi(PQgetvalue(r, i, 11))));
}

static bool
load_clusters(struct db *c, struct sched_model *m, const char *env, json_t *pools,
	      struct err *e)
{
	const char *p[1] = { env };
	PGresult *r = NULL;
	struct sched_cluster *k = NULL;
	const char *last = "";
	bool ok = false;

	if (!db_exec(c, sql_clusters, 1, p, &r, e))
		return false;
	for (int i = 0; i < PQntuples(r); i++) {
		if (strcmp(last, PQgetvalue(r, i, 0)) != 0) {
			last = PQgetvalue(r, i, 0);
			k = sched_model_add_cluster(m, last, PQgetvalue(r, i, 1),
			    PQgetvalue(r, i, 2), PQgetvalue(r, i, 3), e);
			if (k == NULL)
				goto cleanup;
			k->ready = PQgetvalue(r, i, 4)[0] == 't';
			k->cordoned = PQgetvalue(r, i, 5)[0] == 't';
			k->reachable = PQgetvalue(r, i, 6)[0] == 't' && k->ready;
			k->observed_at = atoll(PQgetvalue(r, i, 14));
		}
		if (atoll(PQgetvalue(r, i, 14)) < k->observed_at)
			k->observed_at = atoll(PQgetvalue(r, i, 14));
		if (!add_pool(m, k, r, i, e))
			goto cleanup;
		note_pool(pools, r, i);
	}
	/* each cluster's pools and nodes grew by doubling: keep what they hold (at 1,000
	 * clusters of 24 nodes and 2 pools, 1.4 MB less; a node grown in a cycle grows the
	 * array again) */
	for (size_t n = 0; n < sched_model_n_clusters(m); n++) {
		struct sched_cluster *kk = sched_model_cluster(m, n);
		void *p;

		if (kk->n_pools > 0 && kk->n_pools < kk->cap_pools &&
		    (p = realloc(kk->pools, kk->n_pools * sizeof(*kk->pools))) != NULL) {
			kk->pools = p;
			kk->cap_pools = kk->n_pools;
		}
		if (kk->n_nodes > 0 && kk->n_nodes < kk->cap_nodes &&
		    (p = realloc(kk->nodes, kk->n_nodes * sizeof(*kk->nodes))) != NULL) {
			kk->nodes = p;
			kk->cap_nodes = kk->n_nodes;
		}
	}
	ok = true;
cleanup:
	PQclear(r);
	return ok;
}

static int64_t
limit_of(json_t *o, const char *flavor, int64_t dflt)
{
	json_t *v = json_object_get(o, flavor);

	return json_is_integer(v) ? json_integer_value(v) : dflt;
}

/* queues.capacity_preference (validated when written, queue/jobs/queue.c). */
static bool
queue_prefs(struct sched_queue *q, const char *text, struct err *e)
{
	json_t *o = json_loads(text, 0, NULL);
	struct jobspec_capacity c;
	bool ok = jobspec_capacity_from_json(o, "/capacity_preference", &c, e);

	json_decref(o);
	if (!ok)
		return false;
	for (int k = 0; k < c.n; k++)
		q->pref[q->n_pref++] = (unsigned char)sched_ctype_parse(c.order[k]);
	q->first_only = c.first_only;
	q->max_migrations = c.max_migrations;
	q->min_run_s = c.min_run_s;
	q->cooldown_s = c.cooldown_s;
	return true;
}

/* The job's capacity preference: its own constraints, else its queue's. */
static void
job_prefs(struct sched_model *m, struct sched_job *j, const struct jobspec_capacity *c)
{
	const struct sched_queue *q = sched_model_queue(m, (size_t)j->queue);

	if (c->n > 0) {
		for (int k = 0; k < c->n; k++)
			j->pref[j->n_pref++] = (unsigned char)sched_ctype_parse(c->order[k]);
		j->first_only = c->first_only;
	} else if (q->n_pref > 0) {
		memcpy(j->pref, q->pref, sizeof(j->pref));
		j->n_pref = q->n_pref;
		j->first_only = q->first_only;
	}
	j->max_migrations = c->max_migrations >= 0 ? c->max_migrations :
	    q->max_migrations >= 0 ? q->max_migrations : j->max_migrations;
	j->min_run_s = c->min_run_s >= 0 ? c->min_run_s : q->min_run_s >= 0 ? q->min_run_s :
	    j->min_run_s;
	j->cooldown_s = c->cooldown_s >= 0 ? c->cooldown_s : q->cooldown_s >= 0 ?
	    q->cooldown_s : j->cooldown_s;
}

static bool
load_queues(struct db *c, struct sched_model *m, const char *env, struct err *e)
{
	const char *p[1] = { env };
	PGresult *r = NULL;
	bool ok = false;

	if (!db_exec(c, sql_queues, 1, p, &r, e))
		return false;
	for (int i = 0; i < PQntuples(r); i++) {
		json_t *nom = json_loads(PQgetvalue(r, i, 5), 0, NULL);
		json_t *bl = json_loads(PQgetvalue(r, i, 6), 0, NULL);
		json_t *ll = json_loads(PQgetvalue(r, i, 7), 0, NULL);
		struct sched_queue *q = sched_model_add_queue(m, PQgetvalue(r, i, 0),
		    PQgetvalue(r, i, 1), PQgetisnull(r, i, 2) ? NULL : PQgetvalue(r, i, 2),
		    atof(PQgetvalue(r, i, 3)), strcmp(PQgetvalue(r, i, 4), "strict_fifo") == 0 ?
		    SCHED_STRICT_FIFO : SCHED_BEST_EFFORT_FIFO, e);
		const char *flavor;
		json_t *v;
		bool qok = q != NULL;

		if (qok) {
			/* Heads and cpu-only workers are bounded by capacity, not by quota. */
			struct sched_quota free_cpu;

			for (int rr = 0; rr < SCHED_NRES; rr++) {
				free_cpu.nominal.v[rr] = SCHED_UNSET;
				free_cpu.borrow_limit.v[rr] = SCHED_UNSET;
				free_cpu.lend_limit.v[rr] = SCHED_UNSET;
			}
			qok = sched_queue_set_quota(m, q, "cpu", &free_cpu, e);
		}

		json_object_foreach(nom, flavor, v) {
			struct sched_quota quota;

			if (!qok)
				break;
			for (int rr = 0; rr < SCHED_NRES; rr++) {
				quota.nominal.v[rr] = SCHED_UNSET;
				quota.borrow_limit.v[rr] = SCHED_UNSET;
				quota.lend_limit.v[rr] = SCHED_UNSET;
			}
			quota.nominal.v[SCHED_ACCEL] = json_integer_value(v);
			quota.borrow_limit.v[SCHED_ACCEL] = limit_of(bl, flavor, SCHED_UNSET);
			quota.lend_limit.v[SCHED_ACCEL] = limit_of(ll, flavor, SCHED_UNSET);
			qok = sched_queue_set_quota(m, q, flavor, &quota, e);
		}
		json_decref(nom);
		json_decref(bl);
		json_decref(ll);
		if (qok && !PQgetisnull(r, i, 8))
			qok = queue_prefs(q, PQgetvalue(r, i, 8), e);
		if (!qok)
			goto cleanup;
	}
	ok = true;
cleanup:
	PQclear(r);
	return ok;
}

struct sched_job *
loader_add_job(struct sched_model *m, const char *id, const char *queue_id, int priority,
	       bool can_preempt, int64_t enqueued_at, enum sched_state st, json_t *spec,
	       struct err *e)
{
	struct job_spec s;
	struct sched_job *j = NULL;

	memset(&s, 0, sizeof(s));
	if (!jobspec_from_json(spec, &s, e))
		return NULL;
	j = sched_model_add_job(m, id, queue_id, priority, enqueued_at, st, e);
	if (j == NULL)
		goto cleanup;
	sched_job_build_groups(m, j);	/* kept (shared when equal) below */
	j->can_preempt = can_preempt;
	j->topo = s.topology == JOBSPEC_TOPO_HOST ? SCHED_TOPO_HOST :
	    s.topology == JOBSPEC_TOPO_RACK ? SCHED_TOPO_RACK :
	    s.topology == JOBSPEC_TOPO_SLICE ? SCHED_TOPO_SLICE :
	    s.topology == JOBSPEC_TOPO_PACK ? SCHED_TOPO_PACK : SCHED_TOPO_NONE;
	if (s.slice_shape != NULL)
		j->shape = sched_model_intern(m, s.slice_shape);
	j->spot = s.spot == JOBSPEC_SPOT_ONLY ? SCHED_SPOT_ONLY :
	    s.spot == JOBSPEC_SPOT_NEVER ? SCHED_SPOT_NEVER : SCHED_SPOT_ANY;
	j->max_price = s.has_max_price ? s.max_price : 0;
	job_prefs(m, j, &s.capacity);
	{
		struct sched_vec head = { { 0, s.head_cpu_milli, mib(s.head_memory_bytes) } };

		if (!sched_job_add_group(m, j, "cpu", 1, 1, head, e))
			goto fail;
		j->groups[0].head = true;
	}
	for (size_t i = 0; i < s.ngroups; i++) {
		const struct jobspec_group *g = &s.groups[i];
		int hosts = jobspec_group_hosts(&s, g);
		struct sched_vec pod = { { g->accel_flavor ? g->accel_count : 0, g->cpu_milli,
		    mib(g->memory_bytes) } };

		int min = g->min_replicas * hosts, max = g->max_replicas * hosts;

		if (max <= 0)
			continue;	/* a group that may have no workers takes no room */
		if (min <= 0)
			min = hosts;	/* an elastic group starts with one replica */
		if (!sched_job_add_group(m, j, g->accel_flavor ? g->accel_flavor : "cpu", min, max,
		    pod, e))
			goto fail;
		j->groups[j->n_groups - 1].hosts = hosts;
	}
	for (size_t i = 0; i < s.nregions; i++)
		if (!sched_job_allow_region(m, j, s.regions[i], e))
			goto fail;
	for (size_t i = 0; i < s.nproviders; i++)
		if (!sched_job_allow_provider(m, j, s.providers[i], e))
			goto fail;
	sched_job_keep_groups(m, j);
	goto cleanup;
fail:
	j->state = SCHED_FINISHED;	/* in the model but never decided on */
	sched_job_keep_groups(m, j);
	j = NULL;
cleanup:
	jobspec_cleanup(&s);
	return j;
}

/* Placement jsonb: {"cluster", "allocs": [{"group", "node", "pods"}]}. */
static bool
load_placement(struct sched_model *m, struct sched_job *j, const char *cluster,
	       bool in_flight, int64_t at, const char *placement, struct err *e)
{
	json_t *pl = placement ? json_loads(placement, 0, NULL) : NULL, *a;
	size_t i;
	bool ok;

	ok = sched_job_set_cluster(m, j, cluster, in_flight, at, e);
	json_array_foreach(json_object_get(pl, "allocs"), i, a) {
		if (!ok)
			break;
		ok = sched_job_add_alloc(m, j, (int)json_integer_value(json_object_get(a, "group")),
		    json_string_value(json_object_get(a, "node")),
		    (int)json_integer_value(json_object_get(a, "pods")), e);
		if (!ok && strcmp(e->code, "queue.node_not_found") == 0) {
			/* a node lost under the job since (deleted, NotReady): it holds nothing
			 * there; the status worker repairs the placement (queue/follow/repair.c) */
			err_clear(e);
			ok = true;
		}
	}
	json_decref(pl);
	return ok;
}

/* A moving job holds its source (above) and its reserved target: a second job in the
 * model, admitted and in flight, so no other decision can take that capacity.  Its quota
 * counts twice for the length of the move, which errs on the safe side. */
static bool
load_move_target(struct sched_model *m, PGresult *r, int i, struct err *e)
{
	json_t *to = json_loads(PQgetvalue(r, i, 10), 0, NULL);
	json_t *spec = json_loads(PQgetvalue(r, i, 6), 0, NULL);
	const char *cluster = json_string_value(json_object_get(to, "cluster"));
	char id[64];
	struct sched_job *j;
	bool ok = true;

	snprintf(id, sizeof(id), "%s#move", PQgetvalue(r, i, 0));
	if (cluster != NULL && sched_model_find_cluster(m, cluster) != NULL) {
		j = loader_add_job(m, id, PQgetvalue(r, i, 1), atoi(PQgetvalue(r, i, 2)), false,
		    atoll(PQgetvalue(r, i, 4)), SCHED_ADMITTED, spec, e);
		if (j == NULL) {
			ok = false;
		} else {
			char *text = json_dumps(to, JSON_COMPACT);

			ok = load_placement(m, j, cluster, true, (int64_t)time(NULL), text, e);
			free(text);
		}
	}
	json_decref(to);
	json_decref(spec);
	return ok;
}

/* A RayService upgrading with a new Ray cluster (queue/change/job_update.c) runs both clusters
 * until KubeRay switches: the old spec is a second job in the model, admitted and in flight
 * on the same cluster, so its footprint counts against quota and capacity meanwhile. */
static bool
load_upgrade_old(struct sched_model *m, PGresult *r, int i, struct err *e)
{
	json_t *spec = json_loads(PQgetvalue(r, i, 11), 0, NULL);
	struct sched_job *j;
	char id[64];
	bool ok;

	snprintf(id, sizeof(id), "%s#upgrade", PQgetvalue(r, i, 0));
	j = spec == NULL ? NULL : loader_add_job(m, id, PQgetvalue(r, i, 1),
	    atoi(PQgetvalue(r, i, 2)), false, atoll(PQgetvalue(r, i, 4)), SCHED_ADMITTED, spec, e);
	json_decref(spec);
	if (j == NULL) {
		log_warn(NULL, "scheduler", "upgrade footprint skipped", "{s:s}", "job",
		    PQgetvalue(r, i, 0));
		err_clear(e);
		return true;
	}
	ok = load_placement(m, j, PQgetvalue(r, i, 7), true, (int64_t)time(NULL),
	    PQgetisnull(r, i, 9) ? NULL : PQgetvalue(r, i, 9), e);
	return ok;
}

/* A running RayCronJob holds nothing itself: each of its runs (the child RayJobs the
 * status worker counted, queue/follow/cron.c) is a job "<id>#run:<name>" of the model, admitted
 * on the cron's cluster with the placement the run got when it started (the cron's own
 * for a run fleetd did not place), in flight until a snapshot newer than
 * the run's start shows its pods.  So every running run counts against the queue's quota
 * and the cluster's capacity, and between runs the cron counts nothing. */
static bool
load_cron_runs(struct sched_model *m, PGresult *r, int i, struct err *e)
{
	json_t *runs = json_loads(PQgetvalue(r, i, 13), 0, NULL), *run;
	json_t *spec = json_loads(PQgetvalue(r, i, 6), 0, NULL);
	struct sched_cluster *on = PQgetisnull(r, i, 7) ? NULL :
	    sched_model_find_cluster(m, PQgetvalue(r, i, 7));
	size_t k;
	bool ok = true;

	json_array_foreach(runs, k, run) {
		int64_t at = json_integer_value(json_object_get(run, "started_epoch"));
		const char *name = json_string_value(json_object_get(run, "name"));
		bool in_flight = on == NULL || on->observed_at <= at;
		struct sched_job *j;
		char id[160];

		if (name == NULL || on == NULL || !ok)
			continue;
		snprintf(id, sizeof(id), "%s#run:%s", PQgetvalue(r, i, 0), name);
		j = loader_add_job(m, id, PQgetvalue(r, i, 1), atoi(PQgetvalue(r, i, 2)), false,
		    atoll(PQgetvalue(r, i, 4)), in_flight ? SCHED_ADMITTED : SCHED_RUNNING, spec, e);
		if (j == NULL) {
			log_warn(NULL, "scheduler", "cron run skipped", "{s:s, s:s}", "job", id,
			    "error", e->msg);
			err_clear(e);
			continue;
		}
		if (json_is_object(json_object_get(run, "placement"))) {
			/* placed for this run when it started (queue/follow/cron.c) */
			char *pl = json_dumps(json_object_get(run, "placement"), JSON_COMPACT);

			ok = load_placement(m, j, PQgetvalue(r, i, 7), in_flight, at, pl, e);
			free(pl);
		} else {
			ok = load_placement(m, j, PQgetvalue(r, i, 7), in_flight, at,
			    PQgetisnull(r, i, 9) ? NULL : PQgetvalue(r, i, 9), e);
		}
	}
	json_decref(runs);
	json_decref(spec);
	return ok;
}

/* One row of sql_jobs into m; false only on a failure that stops the load.  A pending
 * job ranked past window in its queue is not loaded: its queue is marked cut. */
static bool
load_job_row(struct sched_model *m, PGresult *r, int i, long long window, struct err *e)
{
	enum job_state state = job_state_parse(PQgetvalue(r, i, 5));
	bool pending = state == JOB_PENDING;
	bool in_flight = state == JOB_ADMITTED || state == JOB_DISPATCHED;
	struct sched_cluster *on = PQgetisnull(r, i, 7) ? NULL :
	    sched_model_find_cluster(m, PQgetvalue(r, i, 7));
	json_t *spec;
	struct sched_job *j;

	if (!PQgetisnull(r, i, 17) && atoll(PQgetvalue(r, i, 17)) > window) {
		struct sched_queue *q = sched_model_find_queue(m, PQgetvalue(r, i, 1));

		if (q != NULL)
			q->more = true;
		return true;
	}
	if (!PQgetisnull(r, i, 13))
		return load_cron_runs(m, r, i, e);
	/* A running job is in the snapshot once the snapshot is newer than the moment its
	 * pods were seen running; an older snapshot does not show it yet (in flight). */
	if (!in_flight && on != NULL && on->observed_at <= atoll(PQgetvalue(r, i, 8)))
		in_flight = true;
	spec = json_loads(PQgetvalue(r, i, 6), 0, NULL);
	j = loader_add_job(m, PQgetvalue(r, i, 0), PQgetvalue(r, i, 1),
	    atoi(PQgetvalue(r, i, 2)), PQgetvalue(r, i, 3)[0] == 't',
	    atoll(PQgetvalue(r, i, 4)), pending ? SCHED_PENDING :
	    in_flight ? SCHED_ADMITTED : SCHED_RUNNING, spec, e);
	json_decref(spec);
	if (j == NULL) {
		/* One unreadable job must not stop the environment's scheduling. */
		log_warn(NULL, "scheduler", "job skipped", "{s:s, s:s}", "job",
		    PQgetvalue(r, i, 0), "error", e->msg);
		err_clear(e);
		return true;
	}
	if (pending && !PQgetisnull(r, i, 12)) {
		/* the jobs that evicted it (comma-separated ids): never evicted back */
		char *list = strdup(PQgetvalue(r, i, 12)), *save = NULL, *id;

		if (list == NULL)
			return err_set(e, 500, "sched.oom", "out of memory");
		for (id = strtok_r(list, ",", &save); id != NULL; id = strtok_r(NULL, ",", &save))
			sched_job_evicted_by(m, j, id);
		free(list);
	}
	if (pending && !PQgetisnull(r, i, 14)) {
		/* the nodes earlier attempts failed on (queue/follow/status_act.c) */
		json_t *av = json_loads(PQgetvalue(r, i, 14), 0, NULL), *a;
		size_t k;

		json_array_foreach(av, k, a)
			sched_job_avoid_node(m, j, json_string_value(json_object_get(a,
			    "cluster_id")), json_string_value(json_object_get(a, "node")));
		json_decref(av);
	}
	if (!pending && on != NULL && !load_placement(m, j, PQgetvalue(r, i, 7), in_flight,
	    atoll(PQgetvalue(r, i, 8)), PQgetisnull(r, i, 9) ? NULL : PQgetvalue(r, i, 9), e))
		return false;
	j->migrations = atoi(PQgetvalue(r, i, 15));
	j->migrated_at = atoll(PQgetvalue(r, i, 16));
	j->started_at = pending ? 0 : atoll(PQgetvalue(r, i, 8));
	j->moving = !PQgetisnull(r, i, 10) || state == JOB_MOVING;
	if (!pending && on != NULL && !PQgetisnull(r, i, 11) && !load_upgrade_old(m, r, i, e))
		return false;
	return PQgetisnull(r, i, 10) || load_move_target(m, r, i, e);
}

/* Every live job; of the pending ones, with window > 0, the head of each queue: window
 * shared among the model's queues, at least WINDOW_MIN each. */
static bool
load_jobs(struct db *c, struct sched_model *m, const char *env, size_t window,
	  struct err *e)
{
	size_t nq = sched_model_n_queues(m);
	long long per = window == 0 ? LLONG_MAX : (long long)(window / (nq > 0 ? nq : 1));
	char cut[24];
	const char *p[2] = { env, cut };
	PGresult *r = NULL;
	struct err ignored = { 0 };
	bool ok = false;

	if (per < WINDOW_MIN)
		per = WINDOW_MIN;
	snprintf(cut, sizeof(cut), "%lld", per == LLONG_MAX ? 0 : per + 1);
	if (!db_exec(c, window == 0 ? sql_jobs : sql_jobs_window, window == 0 ? 1 : 2, p, NULL,
	    e))
		return false;
	do {
		PQclear(r);
		if (!db_exec(c, "FETCH 2000 FROM loader_jobs", 0, NULL, &r, e))
			goto cleanup;
		for (int i = 0; i < PQntuples(r); i++)
			if (!load_job_row(m, r, i, per, e))
				goto cleanup;
	} while (PQntuples(r) > 0);
	ok = true;
cleanup:
	PQclear(r);
	ok = db_exec(c, "CLOSE loader_jobs", 0, NULL, NULL, ok ? e : &ignored) && ok;
	return ok;
}

/* Grow requests of elastic groups (migration 0026, queue/follow/grow.c) of the jobs placed
 * on a cluster: "<job id>#grow:<n>" beside their job (queue/sched/sched_grow.c), pending or
 * admitted with the nodes they were given.  An admitted grow's pods start once the status
 * worker has widened the pin and lifted their gates: the snapshot shows them about a minute
 * after the admission at the latest; until then its room is in flight. */
#define GROW_IN_FLIGHT_S	60
static const char sql_grows[] =
    "SELECT g.id, g.job_id::text, g.grp, g.pods, g.state, coalesce(g.placement, '{}')::text,"
    " extract(epoch from g.requested_at)::bigint,"
    " coalesce(extract(epoch from g.admitted_at)::bigint, 0), j.cluster_id::text"
    " FROM job_grows g JOIN jobs j ON j.id = g.job_id AND j.attempt = g.attempt"
    " WHERE g.state IN ('pending', 'admitted') AND j.state IN ('dispatched', 'running')"
    " AND j.cluster_id IS NOT NULL AND ($1::text IS NULL OR j.environment = $1) ORDER BY g.id";

static bool
load_grow(struct sched_model *m, PGresult *r, int i, struct err *e)
{
	struct sched_job *p = sched_model_find_job(m, PQgetvalue(r, i, 1)), *g;
	struct sched_cluster *k = sched_model_find_cluster(m, PQgetvalue(r, i, 8));
	bool admitted = strcmp(PQgetvalue(r, i, 4), "admitted") == 0;
	int64_t at = atoll(PQgetvalue(r, i, 7));
	bool in_flight = k == NULL || k->observed_at < at + GROW_IN_FLIGHT_S;
	json_t *pl, *a;
	char id[96];
	size_t n;
	bool ok = true;

	if (p == NULL || p->cluster < 0 || k == NULL)
		return true;	/* its job was skipped, or its cluster is not in the snapshot */
	snprintf(id, sizeof(id), "%s#grow:%s", PQgetvalue(r, i, 1), PQgetvalue(r, i, 0));
	g = sched_model_add_grow(m, id, p, atoi(PQgetvalue(r, i, 2)), atoi(PQgetvalue(r, i, 3)),
	    !admitted ? SCHED_PENDING : in_flight ? SCHED_ADMITTED : SCHED_RUNNING,
	    admitted ? at : atoll(PQgetvalue(r, i, 6)), e);
	if (g == NULL) {
		log_warn(NULL, "scheduler", "grow skipped", "{s:s, s:s}", "grow", id, "error",
		    e->msg);
		err_clear(e);
		return true;
	}
	if (!admitted)
		return true;
	if (!sched_job_set_cluster(m, g, k->id, in_flight, at, e))
		return false;
	pl = json_loads(PQgetvalue(r, i, 5), 0, NULL);
	json_array_foreach(json_object_get(pl, "allocs"), n, a) {
		ok = sched_job_add_alloc(m, g, 0, json_string_value(json_object_get(a, "node")),
		    (int)json_integer_value(json_object_get(a, "pods")), e);
		if (!ok && strcmp(e->code, "queue.node_not_found") == 0) {
			err_clear(e);	/* a node lost since holds nothing */
			ok = true;
		}
		if (!ok)
			break;
	}
	json_decref(pl);
	return ok;
}

static bool
load_grows(struct db *c, struct sched_model *m, const char *env, struct err *e)
{
	const char *p[1] = { env };
	PGresult *r = NULL;
	bool ok = true;

	if (!db_exec(c, sql_grows, 1, p, &r, e))
		return false;
	for (int i = 0; i < PQntuples(r) && ok; i++)
		ok = load_grow(m, r, i, e);
	PQclear(r);
	return ok;
}

bool
loader_model(struct db *c, const char *env, int stale_after, struct sched_model **out,
	     struct err *e)
{
	return loader_model_pools(c, env, stale_after, out, NULL, e);
}

bool
loader_model_pools(struct db *c, const char *env, int stale_after, struct sched_model **out,
		   json_t **pools, struct err *e)
{
	struct sched_config cfg;

	sched_config_default(&cfg);
	if (stale_after > 0)
		cfg.stale_after = stale_after;
	return loader_model_cfg(c, env, &cfg, out, pools, e);
}

bool
loader_model_plan(struct db *c, const char *env, int stale_after, struct sched_model **out,
		  json_t **pools, struct err *e)
{
	struct sched_config cfg;

	sched_config_default(&cfg);
	cfg.stale_after = stale_after;
	cfg.max_candidates = 0;
	return loader_model_cfg(c, env, &cfg, out, pools, e);
}

bool
loader_model_cfg(struct db *c, const char *env, const struct sched_config *conf,
		 struct sched_model **out, json_t **pools, struct err *e)
{
	struct sched_config cfg;
	struct sched_model *m;

	if (conf != NULL)
		cfg = *conf;
	else
		sched_config_default(&cfg);
	m = sched_model_new(&cfg, (int64_t)time(NULL));
	if (m == NULL)
		return err_set(e, 500, "sched.oom", "out of memory");
	if (pools != NULL)
		*pools = json_object();
	/* the pools' flavors are what the poller mapped with the catalog; flavors an admin
	 * added since the last tick are loaded before the model is built */
	if (!flavor_sync(c, e) || !load_clusters(c, m, env, pools ? *pools : NULL, e) || !load_queues(c, m, env, e) ||
	    !load_jobs(c, m, env, cfg.pending_window, e) || !load_grows(c, m, env, e) || !sched_model_finalize(m, e)) {
		sched_model_free(m);
		if (pools != NULL) {
			json_decref(*pools);
			*pools = NULL;
		}
		return false;
	}
	*out = m;
	return true;
}
