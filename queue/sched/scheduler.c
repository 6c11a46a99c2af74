/* scheduler: the leader loop and the batched commit of a cycle's decisions.  The model
 * is read in one REPEATABLE READ snapshot; every decision is re-checked by its UPDATE
 * (state = 'pending'), so a job that changed meanwhile is simply left for the next cycle. */
#include <malloc.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/select.h>
#include <time.h>

#include "core/arena.h"
#include "core/config.h"
#include "core/listen.h"
#include "core/log.h"
#include "core/mono.h"
#include "core/textbuf.h"
#include "queue/job_state.h"
#include "queue/sched/loader.h"
#include "queue/sched/scheduler.h"

#define BATCH		500
/* A batch is sent once its JSON text reaches this many bytes, whatever its rows: 500
 * admissions with their candidates and placements are about 1.2 MB, which the batch's
 * buffer and then libpq's output buffer of the connection (kept by the pool) each held
 * twice over (both grow by doubling) in each of the two lanes: 8 MiB of the scheduler's
 * peak at 100,000 pending jobs (issue 29). */
#define BATCH_BYTES	(256 * 1024)
#define CANDIDATES	8	/* kept per admission: the winner and 7 runners-up; the
				 * decision's "rejections" still counts every other cluster */
#define MAX_ENVS	64
/* Pending jobs a cycle loads, shared among the environment's queues (each its head,
 * loader.c): at 100,000 pending every one took 30 MB of the peak (issue 29's 64 MiB); a
 * cycle that reaches the end of a cut queue stops there and the next one goes on
 * (sched_cycle.c:next_queue). */
#define PENDING_WINDOW	30000
/* A cycle over at least this many jobs gives its freed pages back at its end (malloc_trim):
 * glibc keeps a thread's freed small blocks in its heap, where the next cycle's model and
 * the other workers' allocations (other heaps) add to it rather than reuse it. */
#define TRIM_AFTER_JOBS	10000
/* The snapshot a cycle's model was read in (pg_current_snapshot()): while the server's
 * current snapshot is the same, nothing was committed since, and the next cycle would
 * decide the same but for time (a starving job's hold, a snapshot going stale): the loop
 * skips it, for at most SAME_SNAP_MAX_S.  At 100,000 jobs a cycle reads and parses every
 * live job (bench/api.sh's workers mode: a core kept busy by cycles that changed nothing). */
#define SNAP_LEN	2048
#define SAME_SNAP_MAX_S	10.0

static const char sql_admit[] =
    "WITH d AS (SELECT (x->>'id')::uuid AS id, (x->>'cluster')::uuid AS cluster,"
    "  x->'placement' AS placement, x->'decision' AS decision, x->'candidates' AS candidates"
    "  FROM jsonb_array_elements($1::jsonb) x),"
    " u AS (UPDATE jobs j SET state = 'admitted', attempt = j.attempt + 1,"
    "  cluster_id = d.cluster, placement = d.placement, reason = NULL, version = j.version + 1,"
    "  updated_at = now(), next_try_at = now(), tries = 0, claimed_by = NULL,"
    "  claimed_at = NULL, object_uid = NULL, object_rv = NULL, manifest = NULL"
    "  FROM d WHERE j.id = d.id AND j.state = 'pending' RETURNING j.id, j.attempt, j.cluster_id),"
    " p AS (INSERT INTO placements (job_id, attempt, decided_by, cluster_id, decision, candidates)"
    "  SELECT u.id, u.attempt, $2, u.cluster_id, d.decision, d.candidates FROM u JOIN d ON d.id = u.id),"
    " ev AS (INSERT INTO job_events (job_id, type, from_state, to_state, attempt, message, data)"
    "  SELECT u.id, 'state', 'pending', 'admitted', u.attempt, 'admitted by the scheduler',"
    "  jsonb_build_object('cluster', d.placement->>'cluster_name', 'region',"
    "  d.placement->>'region') FROM u JOIN d ON d.id = u.id)"
    " SELECT count(*) FROM u";
static const char sql_pending[] =
    "UPDATE jobs j SET reason = x->>'reason' FROM jsonb_array_elements($1::jsonb) x"
    " WHERE j.id = (x->>'id')::uuid AND j.state = 'pending'"
    " AND j.reason IS DISTINCT FROM x->>'reason'";
/* Victims still placed (and, when $4, whose preemptor is still pending: a job, or the grow
 * request "grow" of the job "by", issue 26), locked first so that the event names the state
 * each one really left. */
static const char sql_preempt[] =
    "WITH v AS (SELECT (x->>'id')::uuid AS id, x->>'by' AS by, (x->>'grow')::bigint AS grow"
    "  FROM jsonb_array_elements($1::jsonb) x),"
    " o AS (SELECT j.id, j.state, v.by FROM jobs j JOIN v ON v.id = j.id"
    "  WHERE j.state IN " JOB_STATES_PLACED_SQL " AND (NOT $4::boolean OR EXISTS (SELECT 1"
    "  FROM jobs p WHERE p.id = v.by::uuid AND p.state = 'pending') OR EXISTS (SELECT 1"
    "  FROM job_grows g WHERE g.id = v.grow AND g.state = 'pending')) FOR UPDATE OF j),"
    " u AS (UPDATE jobs j SET state = 'preempted', version = j.version + 1, updated_at = now(),"
    "  reason = $2 || o.by, next_try_at = now(), checkpoint_deadline = now() +"
    "  make_interval(secs => coalesce((j.spec->'checkpoint'->>'grace_seconds')::int, $5::int))"
    "  FROM o WHERE j.id = o.id RETURNING j.id, j.attempt, o.state AS old, o.by),"
    " ev AS (INSERT INTO job_events (job_id, type, from_state, to_state, attempt, message, data)"
    "  SELECT u.id, 'state', u.old, 'preempted', u.attempt, $3, jsonb_build_object('by', u.by)"
    "  FROM u)"
    " SELECT count(*) FROM u";

/* Grow requests (migration 0026, queue/sched/sched_grow.c): an admission charges the grow
 * with the nodes it was given (while its job still runs the attempt it grows); a grow a
 * preemptor takes is set shrinking, and the status worker lowers the replicas on the
 * member (queue/follow/grow.c); a waiting one keeps the reason. */
static const char sql_grow_admit[] =
    "WITH d AS (SELECT (x->>'id')::bigint AS id, x->'placement' AS placement, x->'nodes' AS nodes"
    "  FROM jsonb_array_elements($1::jsonb) x),"
    " u AS (UPDATE job_grows g SET state = 'admitted', placement = d.placement,"
    "  admitted_at = now(), reason = NULL, version = g.version + 1, updated_at = now()"
    "  FROM d, jobs j WHERE g.id = d.id AND g.state = 'pending' AND j.id = g.job_id"
    "  AND j.attempt = g.attempt AND j.state IN ('dispatched', 'running')"
    "  RETURNING g.id, g.job_id, g.attempt, g.group_name, g.replicas, g.pods, d.nodes),"
    " ev AS (INSERT INTO job_events (job_id, type, attempt, message, data)"
    "  SELECT u.job_id, 'grow_admitted', u.attempt, 'growth admitted by the scheduler',"
    "  jsonb_build_object('grow', u.id, 'group', u.group_name, 'replicas', u.replicas,"
    "  'pods', u.pods, 'nodes', u.nodes, 'by', $2::text) FROM u)"
    " SELECT count(*) FROM u";
static const char sql_grow_shrink[] =
    "WITH v AS (SELECT (x->>'id')::bigint AS id, x->>'by' AS by"
    "  FROM jsonb_array_elements($1::jsonb) x),"
    " u AS (UPDATE job_grows g SET state = 'shrinking', by_job = v.by, version = g.version + 1,"
    "  updated_at = now() FROM v WHERE g.id = v.id AND g.state = 'admitted'"
    "  RETURNING g.id, g.job_id, g.attempt, g.group_name, g.replicas, g.pods, v.by),"
    " ev AS (INSERT INTO job_events (job_id, type, attempt, message, data)"
    "  SELECT u.job_id, 'grow_shrunk', u.attempt,"
    "  'grown workers shrunk back for a higher priority job', jsonb_build_object('grow', u.id,"
    "  'group', u.group_name, 'replicas', u.replicas, 'pods', u.pods, 'by', u.by) FROM u)"
    " SELECT count(*) FROM u";
static const char sql_grow_pending[] =
    "UPDATE job_grows g SET reason = x->>'reason' FROM jsonb_array_elements($1::jsonb) x"
    " WHERE g.id = (x->>'id')::bigint AND g.state = 'pending'"
    " AND g.reason IS DISTINCT FROM x->>'reason'";

/* The grow number of "<job id>#grow:<n>", NULL when id is not a grow's. */
static const char *
grow_no(const char *id)
{
	const char *h = strstr(id, "#grow:");

	return h != NULL ? h + 6 : NULL;
}

/* A grow's admission row: its allocations as the job's group (the renderer's pins), and
 * the nodes for the event. */
static json_t *
grow_row(struct sched_model *m, const struct sched_job *g, const struct sched_placement *pl,
	 json_t *pools)
{
	json_t *full = scheduler_placement_json(m, pl, pools), *allocs, *a, *nodes = json_array();
	size_t i;

	allocs = json_incref(json_object_get(full, "allocs"));
	json_decref(full);
	json_array_foreach(allocs, i, a) {
		json_object_set_new(a, "group", json_integer(g->grow_group));
		if (json_is_string(json_object_get(a, "node")))
			json_array_append(nodes, json_object_get(a, "node"));
	}
	return json_pack("{s:s, s:{s:o}, s:o}", "id", grow_no(g->id), "placement", "allocs",
	    allocs, "nodes", nodes);
}

/* What each preemptor writes: the victim's reason (followed by the preemptor's id), the
 * message of its state event, and whether the preemptor must still be pending. */
static const struct {
	const char	*reason;
	const char	*message;
	const char	*while_pending;
} preemptors[] = {
	[SCHED_PREEMPT_ADMIT] = { "preempted by ", "preempted for a higher priority job",
	    "true" },
	[SCHED_PREEMPT_MOVE] = { "preempted by the move of ",
	    "preempted to make room for a moved job", "false" },
};

int
scheduler_grace_s(const json_t *spec)
{
	json_t *g = json_object_get(json_object_get(spec, "checkpoint"), "grace_seconds");

	return json_is_integer(g) ? (int)json_integer_value(g) : SCHED_GRACE_S;
}

bool
scheduler_preempt(struct db *c, const char *victims, enum sched_preemptor by, size_t *n,
		  struct err *e)
{
	char grace[16];
	const char *p[5] = { victims, preemptors[by].reason, preemptors[by].message,
	    preemptors[by].while_pending, grace };
	PGresult *r = NULL;

	snprintf(grace, sizeof(grace), "%d", SCHED_GRACE_S);
	if (!db_exec(c, sql_preempt, 5, p, &r, e))
		return false;
	*n = (size_t)atol(PQgetvalue(r, 0, 0));
	PQclear(r);
	return true;
}

static void
note_rack(json_t *racks, const char *rack)
{
	size_t i;
	json_t *v;

	json_array_foreach(racks, i, v)
		if (strcmp(json_string_value(v), rack) == 0)
			return;
	json_array_append_new(racks, json_string(rack));
}

json_t *
scheduler_placement_json(struct sched_model *m, const struct sched_placement *place,
			 json_t *pools)
{
	const struct sched_cluster *k = sched_model_cluster(m, (size_t)place->cluster);
	json_t *kp = json_object_get(pools, k->id), *allocs = json_array(), *out;
	json_t *racks = json_array();
	const char *worker_pool = NULL, *head_pool = NULL, *machine = NULL, *flavor = NULL;
	const char *rack = NULL, *host = NULL, *block = NULL, *ctype = NULL;
	bool spot = false;
	double price = 0;
	long accel = 0;

	for (size_t i = 0; i < place->n_allocs; i++) {
		const struct sched_alloc *a = &place->allocs[i];
		json_t *pi = json_array_get(kp, (size_t)a->pool);
		/* A node still to grow (plans are not applied) has no index yet. */
		const struct sched_node *n = a->node >= 0 && !a->grown &&
		    (size_t)a->node < k->n_nodes ? &k->nodes[a->node] : NULL;
		const char *pname = json_string_value(json_object_get(pi, "pool"));

		json_array_append_new(allocs, json_pack("{s:i, s:s?, s:s?, s:i, s:b, s:s?}",
		    "group", a->group, "node", n ? n->id : NULL, "pool", pname, "pods", a->pods,
		    "grown", a->grown, "rack", n && n->rack >= 0 ? sched_model_name(m, n->rack) :
		    NULL));
		if (a->res.v[SCHED_ACCEL] > 0 && n != NULL && n->rack >= 0)
			note_rack(racks, sched_model_name(m, n->rack));
		if (a->res.v[SCHED_ACCEL] > 0 && n != NULL && n->block >= 0 && block == NULL)
			block = sched_model_name(m, n->block);
		if (a->group == 0) {
			head_pool = pname;
			continue;
		}
		if (a->res.v[SCHED_ACCEL] > 0 || worker_pool == NULL) {
			worker_pool = pname;
			machine = json_string_value(json_object_get(pi, "machine_type"));
			flavor = json_string_value(json_object_get(pi, "flavor"));
			spot = json_is_true(json_object_get(pi, "spot"));
			ctype = json_string_value(json_object_get(pi, "capacity_type"));
			price = json_real_value(json_object_get(pi, "price_hour"));
			if (n != NULL && n->rack >= 0)
				rack = sched_model_name(m, n->rack);
			if (n != NULL)
				host = n->id;
		}
		accel += (long)a->res.v[SCHED_ACCEL];
	}
	if (worker_pool == NULL)
		worker_pool = head_pool;
	out = json_pack("{s:s, s:s?, s:s, s:s, s:s?, s:s?, s:s?, s:s?, s:b, s:s?, s:s?, s:f, s:i, s:o}",
	    "cluster", k->id, "cluster_name",
	    json_string_value(json_object_get(json_object_get(pools, "_names"), k->id)),
	    "region", sched_model_name(m, k->region), "provider", sched_model_name(m, k->provider),
	    "pool", worker_pool, "head_pool", head_pool, "machine_type", machine, "flavor", flavor,
	    "spot", spot, "rack", rack, "host", host, "price_hour", price, "accel", accel,
	    "allocs", allocs);
	/* the racks (NVLink domains) and scale unit of the accelerator gang: the renderer
	 * pins topology pack to them, explain shows them beside the scattered count */
	json_object_set_new(out, "racks", racks);
	if (block != NULL)
		json_object_set_new(out, "block", json_string(block));
	if (place->racks_used > 0)	/* 0: a caller's own placement (not sched_place) */
		json_object_set_new(out, "racks_used", json_integer(place->racks_used));
	if (place->racks_scattered > 0)
		json_object_set_new(out, "racks_if_scattered", json_integer(place->racks_scattered));
	if (ctype != NULL)	/* issue 27: what the capacity preference ranks */
		json_object_set_new(out, "capacity_type", json_string(ctype));
	/* issue 26: slices carved out of GKE dynamic-slicing sub-blocks: the partition of each
	 * (the renderer forms one Slice per partition and pins the pods to it) */
	if (place->part_shape > 0 && place->part_shape <= SCHED_TPU_PARTS) {
		int sk = place->part_shape - 1;
		json_t *parts = json_array();

		for (size_t i = 0; i < place->n_allocs; i++) {
			const struct sched_alloc *a = &place->allocs[i];
			const struct sched_node *n = a->node >= 0 && !a->grown &&
			    (size_t)a->node < k->n_nodes ? &k->nodes[a->node] : NULL;

			if (a->res.v[SCHED_ACCEL] > 0 && n != NULL && n->part[sk] >= 0)
				note_rack(parts, sched_model_name(m, n->part[sk]));
		}
		json_object_set_new(out, "tpu_partition_shape",
		    json_string(sched_tpu_part_shapes[sk]));
		json_object_set_new(out, "tpu_partitions", parts);
	}
	return out;
}

/* Leadership fence.  Every commit transaction of the loop first takes lock 7315 of its
 * environment shared and checks that the leader connection (backend pid) still holds 7314;
 * a new leader takes 7315 exclusively once before its first load.  So a commit of a dead or
 * cut-off leader either finishes before the new leader reads, or does not happen. */
struct fence {
	const char	*env;
	char		 pid[16];	/* backend pid of the leader connection */
};

static const char sql_fence[] =
    "SELECT pg_advisory_xact_lock_shared(7315, hashtext($1)), EXISTS (SELECT 1 FROM pg_locks"
    " WHERE locktype = 'advisory' AND classid = 7314 AND objid = hashtext($1)::oid"
    " AND objsubid = 2 AND granted AND pid = $2::int)";

static bool
fenced(struct db *c, const struct fence *f, struct err *e)
{
	const char *p[2] = { f ? f->env : NULL, f ? f->pid : NULL };
	PGresult *r = NULL;
	bool ok;

	if (f == NULL)
		return true;
	if (!db_exec(c, sql_fence, 2, p, &r, e))
		return false;
	ok = PQgetvalue(r, 0, 1)[0] == 't';
	PQclear(r);
	return ok ? true : err_set(e, 409, "scheduler.not_leader",
	    "this replica no longer leads environment %s", f->env);
}

/* One statement's rows as JSON text "[row,row...", appended as decisions are made so that
 * no tree of a whole batch is ever held. */
struct batch {
	const char	*sql;
	const struct fence *fence;	/* NULL: the caller vouches for leadership */
	size_t		*count;		/* rows changed, added here; may be NULL */
	char		*buf;
	size_t		 len, cap, n;
	bool		 oom;
};

static int
put(const char *s, size_t n, void *arg)
{
	struct batch *b = arg;

	if (b->len + n + 2 > b->cap) {
		size_t cap = (b->len + n + 2) * 2;
		char *p = realloc(b->buf, cap);

		if (p == NULL) {
			b->oom = true;
			return -1;
		}
		b->buf = p;
		b->cap = cap;
	}
	memcpy(b->buf + b->len, s, n);
	b->len += n;
	return 0;
}

/* Appends row (stolen) to b. */
static void
add(struct batch *b, json_t *row)
{
	if (row == NULL || put(b->n ? "," : "[", 1, b) != 0 ||
	    json_dump_callback(row, put, b, JSON_COMPACT) != 0)
		b->oom = true;
	b->n++;
	json_decref(row);
}

/* Runs the non-empty batches in order in one transaction (victims and their preemptors
 * commit together or not at all), then empties them. */
static bool
flush(struct db *c, struct batch *b, int n, const char *who, struct err *e)
{
	bool ok = true, any = false, wake = false;

	for (int i = 0; i < n && ok; i++) {
		const char *p[2] = { NULL, who };
		PGresult *r = NULL;

		if (b[i].n == 0)
			continue;
		if (b[i].oom || put("]", 2, &b[i]) != 0) {	/* "]" and its NUL */
			ok = err_set(e, 500, "scheduler.oom", "out of memory");
			break;
		}
		p[0] = b[i].buf;	/* after the last put: it may have moved the buffer */
		if (!any && !(ok = db_begin(c, e) && fenced(c, b[i].fence, e)))
			break;
		any = true;
		wake |= b[i].sql != sql_pending && b[i].sql != sql_grow_pending;
		if (b[i].sql == sql_preempt) {
			size_t preempted = 0;

			ok = scheduler_preempt(c, b[i].buf, SCHED_PREEMPT_ADMIT, &preempted, e);
			if (ok && b[i].count != NULL)
				*b[i].count += preempted;
			continue;
		}
		ok = db_exec(c, b[i].sql, b[i].sql == sql_admit || b[i].sql == sql_grow_admit ? 2 : 1,
		    p, &r, e);
		if (ok && b[i].count != NULL && PQntuples(r) == 1)
			*b[i].count += (size_t)atol(PQgetvalue(r, 0, 0));
		else if (ok && b[i].count != NULL)
			*b[i].count += (size_t)atol(PQcmdTuples(r));
		PQclear(r);
	}
	/* dispatch has work after admissions and evictions only; a notify is a transaction of
	 * its own (after the commit): one per cycle kept every cycle from being skipped */
	ok = ok && (!any || ((!wake || db_notify(c, "fleet_dispatch", "", e)) && db_commit(c, e)));
	if (!ok)
		db_rollback(c);
	for (int i = 0; i < n; i++)
		b[i].len = b[i].n = 0;
	return ok;
}

/* Commits decisions first, first + step, ... of cy on c. */
static bool
commit_cycle(struct db *c, struct sched_model *m, const struct sched_cycle *cy, size_t first,
	     size_t step, json_t *pools, const char *who, const struct fence *f,
	     struct sched_stats *st, struct err *e)
{
	/* in one transaction, in this order: victims, shrunk grows, admissions, grows */
	struct batch both[4] = { { .sql = sql_preempt, .fence = f, .count = &st->preempted },
		{ .sql = sql_grow_shrink, .fence = f },
		{ .sql = sql_admit, .fence = f, .count = &st->admitted },
		{ .sql = sql_grow_admit, .fence = f } };
	struct batch reasons[2] = { { .sql = sql_pending, .fence = f },
		{ .sql = sql_grow_pending, .fence = f } };
	bool ok = true;

	for (size_t i = first; i < cy->n && ok; i += step) {
		const struct sched_decision *d = &cy->d[i];
		const struct sched_job *j = sched_model_job(m, (size_t)d->job);
		bool grow = sched_job_is_grow(j);

		if (d->outcome == SCHED_OUT_PENDING) {
			add(&reasons[grow], json_pack("{s:s, s:s}", "id", grow ? grow_no(j->id) :
			    j->id, "reason", sched_reason_code(d->reason)));
			if (reasons[grow].n >= BATCH || reasons[grow].len >= BATCH_BYTES)
				ok = flush(c, &reasons[grow], 1, who, e);
			continue;
		}
		for (size_t v = 0; v < d->n_victims; v++) {
			const struct sched_job *vj = sched_model_job(m, (size_t)d->victims[v]);
			const char *by = grow ? sched_model_job(m, (size_t)j->grow_of)->id : j->id;

			if (sched_job_is_grow(vj))	/* shrunk back, not preempted */
				add(&both[1], json_pack("{s:s, s:s}", "id", grow_no(vj->id), "by", by));
			else if (strchr(vj->id, '#') == NULL)	/* a move's reservation: not a job */
				add(&both[0], json_pack("{s:s, s:s, s:s?}", "id", vj->id, "by", by,
				    "grow", grow ? grow_no(j->id) : NULL));
		}
		if (grow) {
			add(&both[3], grow_row(m, j, d->place, pools));
			if (both[3].n >= BATCH)
				ok = flush(c, both, 4, who, e);
			continue;
		}
		{
			json_t *dec = sched_decision_to_json(m, d);
			json_t *cands = json_object_get(dec, "candidates");

			/* The candidates are stored once, beside the decision (explain shows both). */
			cands = cands ? json_incref(cands) : json_array();
			json_object_del(dec, "candidates");
			add(&both[2], json_pack("{s:s, s:s, s:o, s:O, s:o}", "id", j->id,
			    "cluster", sched_model_cluster(m, (size_t)d->place->cluster)->id,
			    "placement", scheduler_placement_json(m, d->place, pools), "decision", dec,
			    "candidates", cands));
			json_decref(dec);
		}
		if (both[2].n >= BATCH || both[0].len + both[1].len + both[2].len + both[3].len >=
		    BATCH_BYTES)
			ok = flush(c, both, 4, who, e);
	}
	ok = ok && flush(c, both, 4, who, e) && flush(c, reasons, 2, who, e);
	for (int k = 0; k < 4; k++)
		free(both[k].buf);
	free(reasons[0].buf);
	free(reasons[1].buf);
	return ok;
}

/* The second half of a two-lane commit, on its own connection and thread. */
struct lane {
	struct db		*db;
	struct sched_model	*m;
	const struct sched_cycle *cy;
	json_t			*pools;
	const char		*who;
	const struct fence	*fence;
	struct sched_stats	 st;
	struct err		 e;
	bool			 ok;
};

static void *
lane_run(void *arg)
{
	struct lane *l = arg;

	l->ok = commit_cycle(l->db, l->m, l->cy, 1, 2, l->pools, l->who, l->fence, &l->st, &l->e);
	return NULL;
}

/* Decisions are independent rows (a preemptor and its victims share one decision), so a
 * large cycle commits on two connections at once when the pool has one to spare: the
 * database works on one batch while this thread builds the next. */
static bool
commit_lanes(struct db *c, struct sched_model *m, const struct sched_cycle *cy,
	     json_t *pools, const char *who, const struct fence *f, struct sched_stats *st,
	     struct err *e)
{
	struct lane l = { .m = m, .cy = cy, .pools = pools, .who = who, .fence = f };
	struct err busy = { 0 };
	pthread_t t;
	bool ok;

	if (cy->n < 2 * BATCH || (l.db = db_acquire(0, &busy)) == NULL)
		return commit_cycle(c, m, cy, 0, 1, pools, who, f, st, e);
	if (pthread_create(&t, NULL, lane_run, &l) != 0) {
		db_release(l.db);
		return commit_cycle(c, m, cy, 0, 1, pools, who, f, st, e);
	}
	ok = commit_cycle(c, m, cy, 0, 2, pools, who, f, st, e);
	pthread_join(t, NULL);
	db_release(l.db);
	st->admitted += l.st.admitted;
	st->preempted += l.st.preempted;
	if (ok && !l.ok)
		*e = l.e;
	return ok && l.ok;
}

/* The cycle's capacity-preference migrations, in one fenced transaction after its
 * admissions (they took what the admissions left). */
static bool
commit_migrations(struct db *c, struct sched_model *m, const struct sched_cycle *cy,
		  json_t *pools, const struct fence *f, struct sched_stats *st, struct err *e)
{
	bool ok = db_begin(c, e) && fenced(c, f, e) &&
	    scheduler_migrate_commit(c, m, cy, pools, &st->migrated, e) && db_commit(c, e);

	if (!ok)
		db_rollback(c);
	return ok;
}

/* out: the current snapshot as text, "" when longer than SNAP_LEN (never taken as equal). */
static bool
current_snapshot(struct db *c, char *out, struct err *e)
{
	PGresult *r = NULL;
	const char *v;

	out[0] = '\0';
	if (!db_exec(c, "SELECT pg_current_snapshot()::text", 0, NULL, &r, e))
		return false;
	v = PQntuples(r) == 1 ? PQgetvalue(r, 0, 0) : "";
	if (strlen(v) < SNAP_LEN)
		memcpy(out, v, strlen(v) + 1);
	PQclear(r);
	return true;
}

static bool
cycle(const char *env, const char *who, const struct fence *f, struct sched_stats *st,
      char *snap, struct err *e)
{
	struct sched_model *m = NULL;
	struct sched_config conf;
	struct sched_cycle cy;
	struct arena *a = NULL;
	json_t *pools = NULL;
	struct db *c;
	double t0 = mono_s(), t1, t2;
	bool ok = false, big;

	memset(st, 0, sizeof(*st));
	sched_config_default(&conf);
	if (cfg.snapshot_max_age_s > 0)
		conf.stale_after = cfg.snapshot_max_age_s;
	conf.max_candidates = CANDIDATES;
	conf.lean_pending = true;	/* a pending job's row keeps its reason only */
	conf.pending_window = PENDING_WINDOW;
	if ((c = db_acquire(5000, e)) == NULL)
		return false;
	if (snap != NULL)
		snap[0] = '\0';
	if (!db_exec(c, "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY", 0, NULL, NULL, e) ||
	    (snap != NULL && !current_snapshot(c, snap, e)) ||
	    !loader_model_cfg(c, env, &conf, &m, &pools, e) ||
	    !db_commit(c, e)) {
		db_rollback(c);
		goto cleanup;
	}
	t1 = mono_s();
	a = arena_new();
	sched_cycle_run(m, a, &cy);
	t2 = mono_s();
	st->pending = cy.n;
	if (!commit_lanes(c, m, &cy, pools, who, f, st, e))
		goto cleanup;
	if (cy.n_mig > 0 && !commit_migrations(c, m, &cy, pools, f, st, e))
		goto cleanup;
	st->load_s = t1 - t0;
	st->decide_s = t2 - t1;
	st->commit_s = mono_s() - t2;
	ok = true;
cleanup:
	big = m != NULL && sched_model_n_jobs(m) >= TRIM_AFTER_JOBS;
	arena_free(a);
	sched_model_free(m);
	json_decref(pools);
	db_release(c);
	if (big)
		malloc_trim(0);	/* the model's pages back before the next cycle or worker */
	return ok;
}

bool
scheduler_cycle(const char *env, const char *who, struct sched_stats *st, struct err *e)
{
	return cycle(env, who, NULL, st, NULL, e);
}

/* ---- the leader loop */

static struct {
	pthread_t	 thread;
	atomic_bool	 running;
	bool		 started;
	char		 envs[MAX_ENVS][40];
	bool		 leader[MAX_ENVS];
	int		 nenvs;
	atomic_int	 leading;
	char		 snap[MAX_ENVS][SNAP_LEN];	/* of the last cycle, "" = none */
	double		 snap_at[MAX_ENVS];
	atomic_ulong	 cycles, admitted, preempted, errors, skipped, migrated;
	_Atomic double	 last_cycle_s;
	pthread_mutex_t	 mu;
} S = { .mu = PTHREAD_MUTEX_INITIALIZER };

/* Waits until no commit of an earlier leader of env is in flight (see struct fence). */
static bool
barrier(PGconn *c, const char *env)
{
	const char *p[1] = { env };
	PGresult *r = PQexecParams(c, "SELECT pg_advisory_lock(7315, hashtext($1))", 1, NULL, p,
	    NULL, NULL, 0);
	bool ok = PQresultStatus(r) == PGRES_TUPLES_OK;

	PQclear(r);
	r = PQexecParams(c, "SELECT pg_advisory_unlock(7315, hashtext($1))", 1, NULL, p, NULL,
	    NULL, 0);
	ok = ok && PQresultStatus(r) == PGRES_TUPLES_OK;
	PQclear(r);
	return ok;
}

/* Refreshes the environment list and tries to lead each one. */
static bool
elect(PGconn *c)
{
	static const char sql_try[] = "SELECT pg_try_advisory_lock(7314, hashtext($1))";
	PGresult *r = PQexec(c, "SELECT name FROM environments ORDER BY name");
	int lead = 0;

	if (PQresultStatus(r) != PGRES_TUPLES_OK) {
		PQclear(r);
		return false;
	}
	for (int i = 0; i < PQntuples(r) && i < MAX_ENVS; i++) {
		const char *name = PQgetvalue(r, i, 0);
		int k;

		for (k = 0; k < S.nenvs; k++)
			if (strcmp(S.envs[k], name) == 0)
				break;
		if (k == S.nenvs && S.nenvs < MAX_ENVS) {
			snprintf(S.envs[S.nenvs], sizeof(S.envs[0]), "%s", name);
			S.leader[S.nenvs++] = false;
		}
		if (!S.leader[k]) {
			const char *p[1] = { name };
			PGresult *t = PQexecParams(c, sql_try, 1, NULL, p, NULL, NULL, 0);

			if (PQresultStatus(t) == PGRES_TUPLES_OK && PQgetvalue(t, 0, 0)[0] == 't') {
				if (!barrier(c, name)) {	/* the caller reconnects: all locks go */
					PQclear(t);
					PQclear(r);
					return false;
				}
				S.leader[k] = true;
				log_info(NULL, "scheduler", "leading environment", "{s:s, s:s}",
				    "environment", name, "instance", cfg.instance_id);
			}
			PQclear(t);
		}
		lead += S.leader[k];
	}
	PQclear(r);
	atomic_store(&S.leading, lead);
	return true;
}

/* Jobs per environment, queue and state, counted by the loop on its own connection at most
 * every COUNTS_EVERY_S and kept as exposition text: a scrape of /metrics runs no SQL. */
#define COUNTS_EVERY_S	15.0

static pthread_mutex_t counts_mu = PTHREAD_MUTEX_INITIALIZER;
static char *counts_text;	/* malloc'd "fleetd_queue_jobs{...} n" lines, or NULL */
static double counts_at = -COUNTS_EVERY_S;

static void
counts_refresh(PGconn *c, double now)
{
	size_t cap = 1024, n = 0;
	char *b, *old;
	PGresult *r;

	if (now - counts_at < COUNTS_EVERY_S)
		return;
	counts_at = now;
	r = PQexec(c, "SELECT q.environment, q.name, j.state, count(*) FROM jobs j JOIN queues q"
	    " ON q.id = j.queue_id GROUP BY 1, 2, 3 ORDER BY 1, 2, 3");
	if (PQresultStatus(r) != PGRES_TUPLES_OK || (b = malloc(cap)) == NULL) {
		PQclear(r);
		return;
	}
	b[0] = '\0';
	for (int i = 0; i < PQntuples(r); i++)
		textbuf_appendf(&b, &n, &cap, "fleetd_queue_jobs{environment=\"%s\",queue=\"%s\","
		    "state=\"%s\"} %s\n", PQgetvalue(r, i, 0), PQgetvalue(r, i, 1),
		    PQgetvalue(r, i, 2), PQgetvalue(r, i, 3));
	PQclear(r);
	pthread_mutex_lock(&counts_mu);
	old = counts_text;
	counts_text = b;
	pthread_mutex_unlock(&counts_mu);
	free(old);
}

/* Nothing committed since env k's last cycle read its model, and that is recent. */
static bool
unchanged(PGconn *c, int k, double now)
{
	PGresult *r;
	bool same;

	if (S.snap[k][0] == '\0' || now - S.snap_at[k] >= SAME_SNAP_MAX_S)
		return false;
	r = PQexec(c, "SELECT pg_current_snapshot()::text");
	same = PQresultStatus(r) == PGRES_TUPLES_OK && PQntuples(r) == 1 &&
	    strcmp(PQgetvalue(r, 0, 0), S.snap[k]) == 0;
	PQclear(r);
	return same;
}

static void *
loop(void *arg)
{
	PGconn *c = NULL;

	(void)arg;
	while (atomic_load(&S.running)) {
		if (c == NULL || PQstatus(c) != CONNECTION_OK) {
			if (c != NULL)
				PQfinish(c);
			memset(S.leader, 0, sizeof(S.leader));
			memset(S.snap, 0, sizeof(S.snap));
			atomic_store(&S.leading, 0);
			if ((c = listen_open(cfg.database_url, "fleet_sched")) == NULL) {
				struct timespec ts = { 1, 0 };

				nanosleep(&ts, NULL);
				continue;
			}
		}
		if (!elect(c)) {
			PQfinish(c);
			c = NULL;
			continue;
		}
		for (int k = 0; k < S.nenvs && atomic_load(&S.running); k++) {
			struct sched_stats st;
			struct fence f = { .env = S.envs[k] };
			struct err e = { 0 };
			double t0 = mono_s();

			if (!S.leader[k])
				continue;
			if (unchanged(c, k, t0)) {
				atomic_fetch_add(&S.skipped, 1);
				continue;
			}
			snprintf(f.pid, sizeof(f.pid), "%d", PQbackendPID(c));
			if (!cycle(S.envs[k], cfg.instance_id, &f, &st, S.snap[k], &e)) {
				S.snap[k][0] = '\0';
				atomic_fetch_add(&S.errors, 1);
				log_warn(NULL, "scheduler", "cycle failed", "{s:s, s:s}", "environment",
				    S.envs[k], "error", e.msg);
				continue;
			}
			S.snap_at[k] = t0;
			atomic_fetch_add(&S.cycles, 1);
			atomic_fetch_add(&S.admitted, st.admitted);
			atomic_fetch_add(&S.preempted, st.preempted);
			atomic_fetch_add(&S.migrated, st.migrated);
			S.last_cycle_s = mono_s() - t0;
			if (st.admitted > 0 || st.preempted > 0 || st.migrated > 0)
				log_info(NULL, "scheduler", "cycle", "{s:s, s:i, s:i, s:i, s:i, s:f}",
				    "environment", S.envs[k], "pending", (int)st.pending, "admitted",
				    (int)st.admitted, "preempted", (int)st.preempted, "migrated",
				    (int)st.migrated, "seconds", S.last_cycle_s);
		}
		counts_refresh(c, mono_s());
		listen_wait(c, cfg.scheduler_interval_ms);
	}
	if (c != NULL)
		PQfinish(c);	/* releases every advisory lock: another replica takes over */
	return NULL;
}

bool
scheduler_start(struct err *e)
{
	atomic_store(&S.running, true);
	if (pthread_create(&S.thread, NULL, loop, NULL) != 0)
		return err_set(e, 500, "scheduler.start", "cannot start the scheduler thread");
	S.started = true;
	return true;
}

void
scheduler_stop(void)
{
	if (!S.started)
		return;
	atomic_store(&S.running, false);
	pthread_join(S.thread, NULL);
	S.started = false;
}

int
scheduler_leading(void)
{
	return atomic_load(&S.leading);
}

void
scheduler_metrics(char **buf, size_t *len, size_t *cap)
{
	textbuf_appendf(buf, len, cap,
	    "# HELP fleetd_scheduler_cycles_total Scheduling cycles run by this replica.\n"
	    "# TYPE fleetd_scheduler_cycles_total counter\nfleetd_scheduler_cycles_total %lu\n"
	    "# HELP fleetd_scheduler_cycles_skipped_total Cycles skipped: nothing committed since"
	    " the last one read its model.\n"
	    "# TYPE fleetd_scheduler_cycles_skipped_total counter\n"
	    "fleetd_scheduler_cycles_skipped_total %lu\n"
	    "# HELP fleetd_scheduler_admissions_total Jobs admitted by this replica.\n"
	    "# TYPE fleetd_scheduler_admissions_total counter\nfleetd_scheduler_admissions_total %lu\n"
	    "# HELP fleetd_scheduler_preemptions_total Jobs preempted by this replica.\n"
	    "# TYPE fleetd_scheduler_preemptions_total counter\nfleetd_scheduler_preemptions_total %lu\n"
	    "# HELP fleetd_scheduler_migrations_total Capacity-preference migrations (moves) this"
	    " replica started.\n"
	    "# TYPE fleetd_scheduler_migrations_total counter\nfleetd_scheduler_migrations_total %lu\n"
	    "# HELP fleetd_scheduler_cycle_seconds Duration of the last cycle.\n"
	    "# TYPE fleetd_scheduler_cycle_seconds gauge\nfleetd_scheduler_cycle_seconds %.6f\n"
	    "# HELP fleetd_scheduler_leading Environments this replica leads.\n"
	    "# TYPE fleetd_scheduler_leading gauge\nfleetd_scheduler_leading %d\n",
	    atomic_load(&S.cycles), atomic_load(&S.skipped), atomic_load(&S.admitted),
	    atomic_load(&S.preempted), atomic_load(&S.migrated),
	    (double)S.last_cycle_s, atomic_load(&S.leading));
	pthread_mutex_lock(&counts_mu);
	if (counts_text != NULL)
		textbuf_appendf(buf, len, cap, "# HELP fleetd_queue_jobs Jobs per queue and state, "
		    "counted by the scheduler at most every 15 s.\n# TYPE fleetd_queue_jobs gauge\n"
		    "%s", counts_text);
	pthread_mutex_unlock(&counts_mu);
}
