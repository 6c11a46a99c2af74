/* grow: the status worker's side of elastic growth (issue 26).  The KubeRay autoscaler asks
 * for more workers by raising spec.workerGroupSpecs[].replicas of the RayCluster (for a
 * RayJob, of the RayCluster it runs on: status.rayClusterName), up to maxReplicas:
 * https://docs.ray.io/en/latest/cluster/kubernetes/user-guides/configuring-autoscaling.html
 * Every pod of such a group is created with fleetd's scheduling gate (providers/kuberay.c,
 * KUBERAY_GROW_GATE).  Each pass over a dispatched or running job with such a group:
 *
 *  - replicas above what fleetd admitted (the minimum plus the admitted grows) become one
 *    pending grow request per group (job_grows, migration 0026), resized as the autoscaler
 *    asks for more or fewer; the scheduler admits it like a job (queue/sched/sched_grow.c);
 *  - replicas lowered by the autoscaler release the newest admitted grows they no longer
 *    cover (their charge goes back to the queue);
 *  - a grow the scheduler took back for a higher-priority job (state shrinking) is carried
 *    out: the group's replicas are lowered to what stays admitted, naming the pods to
 *    delete in scaleStrategy.workersToDelete (KubeRay deletes exactly those first:
 *    https://github.com/ray-project/kuberay/pull/208, and with the autoscaler on it deletes
 *    no others: https://github.com/ray-project/kuberay/pull/1253), then released;
 *  - the group's hostname pin is set to the nodes admitted to it (the job's placement plus
 *    its admitted grows), so new pods land only there;
 *  - the gate is lifted from as many pods as are admitted (oldest first, pods pinned as the
 *    group is now); a pod above that stays SchedulingGated, Pending, until its growth is
 *    admitted: https://kubernetes.io/docs/concepts/scheduling-eviction/pod-scheduling-readiness/
 *
 * No transaction is held across a call to the member: rows are read, the connection given
 * back, the member patched, and each record written in its own fenced transaction. */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/jsonx.h"
#include "core/log.h"
#include "core/mono.h"
#include "providers/kube.h"
#include "providers/kuberay.h"
#include "queue/follow/status_int.h"
#include "queue/jobs/job.h"
#include "regions/lease.h"

#define MAX_GROUPS	16

static const char *
str(const json_t *o, const char *k)
{
	const char *s = json_string_value(json_object_get(o, k));

	return s ? s : "";
}

static int
num(const json_t *o, const char *k, int dflt)
{
	json_t *v = json_object_get(o, k);

	return json_is_integer(v) ? (int)json_integer_value(v) : dflt;
}

/* The Ray cluster spec inside a manifest or live object of kind (borrowed), NULL none. */
static json_t *
ray_cluster_spec(json_t *o, const char *kind)
{
	json_t *spec = json_object_get(o, "spec");

	if (strcmp(kind, "RayCluster") == 0)
		return spec;
	if (strcmp(kind, "RayJob") == 0)
		return json_object_get(spec, "rayClusterSpec");
	return NULL;
}

static bool
gated(json_t *podspec)
{
	json_t *g;
	size_t i;

	json_array_foreach(json_object_get(podspec, "schedulingGates"), i, g)
		if (strcmp(str(g, "name"), KUBERAY_GROW_GATE) == 0)
			return true;
	return false;
}

static bool
has(json_t *arr, const char *s)
{
	json_t *v;
	size_t i;

	json_array_foreach(arr, i, v)
		if (json_is_string(v) && strcmp(json_string_value(v), s) == 0)
			return true;
	return false;
}

static void
add_node(json_t *arr, const char *s)
{
	if (s != NULL && s[0] != '\0' && !has(arr, s))
		json_array_append_new(arr, json_string(s));
}

static bool
same_set(json_t *a, json_t *b)
{
	json_t *v;
	size_t i;

	if (json_array_size(a) != json_array_size(b))
		return false;
	json_array_foreach(a, i, v)
		if (!json_is_string(v) || !has(b, json_string_value(v)))
			return false;
	return true;
}

/* One gated worker group as this pass sees it. */
struct ggroup {
	int		 grp;		/* placement group: spec group + 1 */
	const char	*name;
	int		 min, max, hosts;
	int		 desired;	/* the live replicas (the autoscaler's) */
	int		 admitted;	/* replicas: min + admitted grows */
	int		 keep;		/* replicas after the shrinks of this pass */
	long long	 pending_id;	/* 0 none */
	int		 pending;	/* its replicas */
	json_t		*pins;		/* the nodes admitted to it (new) */
	json_t		*drop;		/* pods to delete for a shrink (names, new) */
	long long	 shrinking[8];
	int		 n_shrinking;
};

/* ---- rows */

static bool
read_rows(const struct status_job *j, json_t **grows, json_t **placement, struct err *e)
{
	static const char sql_job[] = "SELECT coalesce(placement, '{}')::text FROM jobs"
	    " WHERE id = $1::uuid AND attempt = $2::int AND state IN ('dispatched', 'running')";
	/* the attempt's newest 200 (released ones too: the newest row keeps the desired
	 * replicas explain shows), oldest first */
	static const char sql_grows[] = "SELECT json_build_object('id', id, 'grp', grp, 'state',"
	    " state, 'replicas', replicas, 'pods', pods, 'desired', desired, 'placement',"
	    " placement)::text FROM (SELECT * FROM job_grows WHERE job_id = $1::uuid AND"
	    " attempt = $2::int ORDER BY id DESC LIMIT 200) g ORDER BY id";
	char at[16];
	const char *p[2] = { j->id, at };
	PGresult *r = NULL;
	struct db *c;
	bool ok = false;

	snprintf(at, sizeof(at), "%d", j->attempt);
	*grows = *placement = NULL;
	if ((c = db_acquire(5000, e)) == NULL)
		return false;
	if (!db_exec(c, sql_job, 2, p, &r, e))
		goto cleanup;
	if (PQntuples(r) != 1) {
		err_set(e, 409, "status.changed", "the job changed meanwhile");
		goto cleanup;
	}
	*placement = json_loads(PQgetvalue(r, 0, 0), 0, NULL);
	PQclear(r);
	r = NULL;
	if (!db_exec(c, sql_grows, 2, p, &r, e))
		goto cleanup;
	*grows = json_array();
	for (int i = 0; i < PQntuples(r); i++)
		json_array_append_new(*grows, json_loads(PQgetvalue(r, i, 0), 0, NULL));
	ok = *placement != NULL;
cleanup:
	PQclear(r);
	db_release(c);
	if (!ok) {
		json_decref(*grows);
		json_decref(*placement);
		*grows = *placement = NULL;
	}
	return ok;
}

struct write {
	const struct status_job	*j;
	const char		*cluster_id;
	const char		*sql;
	const char		*p[8];
	int			 n;
	const char		*event;		/* NULL: none */
	char			 msg[512];
	json_t			*data;
	bool			 changed;
};

static bool
write_tx(struct db *c, void *arg, struct err *e)
{
	struct write *w = arg;
	PGresult *r = NULL;
	bool ok;

	if (!lease_fence(c, w->cluster_id, e) || !db_exec(c, w->sql, w->n, w->p, &r, e))
		return false;
	w->changed = PQntuples(r) > 0;
	PQclear(r);
	ok = !w->changed || w->event == NULL || job_event(c, w->j->id, w->event, w->msg,
	    w->data, e);
	return ok;
}

static void
record(struct write *w, struct status_stats *st)
{
	struct err e = { 0 };

	if (!db_tx(write_tx, w, &e))
		log_warn(NULL, "status", "cannot record growth", "{s:s, s:s}", "job", w->j->id,
		    "error", e.msg);
	else if (w->changed && w->event != NULL)
		st->events++;
	json_decref(w->data);
	w->data = NULL;
}

static void
request(const struct member *t, const struct status_job *j, struct ggroup *g,
	struct status_stats *st)
{
	static const char sql_new[] = "INSERT INTO job_grows (job_id, attempt, grp, group_name,"
	    " replicas, pods, desired) SELECT $1::uuid, $2::int, $3::int, $4, $5::int, $6::int,"
	    " $7::int WHERE EXISTS (SELECT 1 FROM jobs WHERE id = $1::uuid AND attempt = $2::int"
	    " AND state IN ('dispatched', 'running')) ON CONFLICT DO NOTHING RETURNING id";
	static const char sql_resize[] = "UPDATE job_grows SET replicas = $2::int, pods = $3::int,"
	    " desired = $4::int, reason = NULL, version = version + 1, updated_at = now()"
	    " WHERE id = $1::bigint AND state = 'pending' RETURNING id";
	struct write w = { .j = j, .cluster_id = t->id };
	char at[16], grp[16], rep[16], pods[16], des[16], id[32];
	int want = g->desired - g->admitted;

	if (g->desired > g->max)
		want = g->max - g->admitted;
	if (want <= 0 || want == g->pending)
		return;
	snprintf(at, sizeof(at), "%d", j->attempt);
	snprintf(grp, sizeof(grp), "%d", g->grp);
	snprintf(rep, sizeof(rep), "%d", want);
	snprintf(pods, sizeof(pods), "%d", want * g->hosts);
	snprintf(des, sizeof(des), "%d", g->desired);
	if (g->pending_id > 0) {
		snprintf(id, sizeof(id), "%lld", g->pending_id);
		w.sql = sql_resize;
		w.n = 4;
		w.p[0] = id; w.p[1] = rep; w.p[2] = pods; w.p[3] = des;
	} else {
		w.sql = sql_new;
		w.n = 7;
		w.p[0] = j->id; w.p[1] = at; w.p[2] = grp; w.p[3] = g->name; w.p[4] = rep;
		w.p[5] = pods; w.p[6] = des;
		w.event = "grow_requested";
		snprintf(w.msg, sizeof(w.msg), "the autoscaler asked for %d more replicas of "
		    "group %s (%d admitted, %d desired): waiting for the scheduler", want, g->name,
		    g->admitted, g->desired);
		w.data = json_pack("{s:s, s:i, s:i, s:i, s:i}", "group", g->name, "replicas", want,
		    "pods", want * g->hosts, "admitted_replicas", g->admitted, "desired_replicas",
		    g->desired);
	}
	record(&w, st);
}

/* Releases grow id from state `from`; event type and message when it changed. */
static void
release(const struct member *t, const struct status_job *j, long long gid, const char *from,
	const char *event, const char *msg, json_t *data, struct status_stats *st)
{
	static const char sql[] = "UPDATE job_grows SET state = 'released', released_at = now(),"
	    " version = version + 1, updated_at = now() WHERE id = $1::bigint AND state = $2"
	    " RETURNING id";
	struct write w = { .j = j, .cluster_id = t->id, .sql = sql, .n = 2, .event = event,
	    .data = data };
	char id[32];

	snprintf(id, sizeof(id), "%lld", gid);
	w.p[0] = id;
	w.p[1] = from;
	snprintf(w.msg, sizeof(w.msg), "%s", msg);
	record(&w, st);
}

/* The autoscaler's replicas as last seen, kept on the group's newest row (explain). */
static void
note_desired(const struct member *t, const struct status_job *j, long long gid, int desired,
	     struct status_stats *st)
{
	static const char sql[] = "UPDATE job_grows SET desired = $2::int, updated_at = now()"
	    " WHERE id = $1::bigint AND desired <> $2::int RETURNING id";
	struct write w = { .j = j, .cluster_id = t->id, .sql = sql, .n = 2 };
	char id[32], des[16];

	snprintf(id, sizeof(id), "%lld", gid);
	snprintf(des, sizeof(des), "%d", desired);
	w.p[0] = id;
	w.p[1] = des;
	record(&w, st);
}

/* ---- the member */

/* The pods of group g of the attempt (borrowed from seen). */
static bool
of_group(json_t *pod, const char *name)
{
	json_t *lb = json_object_get(json_object_get(pod, "metadata"), "labels");

	return strcmp(str(lb, "fleet.io/role"), "worker") == 0 &&
	    strcmp(str(lb, "fleet.io/group"), name) == 0 &&
	    json_object_get(json_object_get(pod, "metadata"), "deletionTimestamp") == NULL;
}

/* Names of the group's pods to delete so that `keep` replicas remain: first those on the
 * nodes the shrunk grows held (their room goes to another job), then gated ones, then the
 * newest. */
static void
choose_drop(const struct status_seen *seen, struct ggroup *g, json_t *shrunk_nodes)
{
	json_t *p;
	size_t i;
	int have = 0, need;

	json_array_foreach(seen->pods, i, p)
		have += of_group(p, g->name);
	need = have - g->keep * g->hosts;
	for (int pass = 0; pass < 3 && need > 0; pass++) {
		size_t n = json_array_size(seen->pods);

		for (size_t k = 0; k < n && need > 0; k++) {
			json_t *q = json_array_get(seen->pods, pass == 2 ? n - 1 - k : k);
			json_t *sp = json_object_get(q, "spec");
			const char *name = jsonx_meta_str(q, "name");

			if (!of_group(q, g->name) || name == NULL || has(g->drop, name))
				continue;
			if (pass == 0 && !has(shrunk_nodes, str(sp, "nodeName")))
				continue;
			if (pass == 1 && !gated(sp))
				continue;
			json_array_append_new(g->drop, json_string(name));
			need--;
		}
	}
}

/* The live group spec of name in groups (borrowed), NULL. */
static json_t *
live_group(json_t *groups, const char *name)
{
	json_t *wg;
	size_t i;

	json_array_foreach(groups, i, wg)
		if (strcmp(str(wg, "groupName"), name) == 0)
			return wg;
	return NULL;
}

/* The object's worker groups with the pins and shrinks gs ask for (new), NULL when nothing
 * needs changing; *shrunk: a group's replicas are lowered. */
static json_t *
changed_groups(json_t *obj, const char *tkind, struct ggroup *gs, int ng, bool *shrunk)
{
	json_t *groups = json_deep_copy(json_object_get(ray_cluster_spec(obj, tkind),
	    "workerGroupSpecs")), *wg, *vals;
	bool change = false;

	*shrunk = false;
	for (int i = 0; i < ng; i++) {
		if ((wg = live_group(groups, gs[i].name)) == NULL)
			continue;
		vals = status_pin_values(json_object_get(wg, "template"));
		if (vals != NULL && json_array_size(gs[i].pins) > 0 && !same_set(vals, gs[i].pins)) {
			json_array_clear(vals);
			json_array_extend(vals, gs[i].pins);
			change = true;
		}
		if (gs[i].n_shrinking > 0 && num(wg, "replicas", gs[i].min) > gs[i].keep) {
			json_object_set_new(wg, "replicas", json_integer(gs[i].keep));
			json_object_set_new(wg, "scaleStrategy", json_pack("{s:O}",
			    "workersToDelete", gs[i].drop));
			change = true;
			*shrunk = true;
		}
	}
	if (!change) {
		json_decref(groups);
		return NULL;
	}
	return groups;
}

/* Patches the object the autoscaler scales: the groups' pins, and for a shrink their
 * replicas and workersToDelete.  What the view shows decides whether to; the patch is made
 * on the object as read just before, naming its resourceVersion (a merge patch replaces the
 * whole group list: a write of the autoscaler's in between is not overwritten, the patch
 * is refused with 409 and made again next pass).  true when nothing needed changing or the
 * patch landed. */
static bool
patch_groups(const struct member *t, const struct status_job *j, json_t *view,
	     const char *tkind, struct ggroup *gs, int ng, bool *shrunk)
{
	json_t *groups = changed_groups(view, tkind, gs, ng, shrunk), *fresh = NULL,
	    *patch = NULL;
	const char *name = jsonx_meta_str(view, "name"), *rv;
	struct err e = { 0 };
	bool ok = true;

	if (groups == NULL)
		return true;
	json_decref(groups);
	if (!(ok = kube_get_object(&t->pc, "ray.io/v1", tkind, j->ns, name, &fresh, &e)))
		goto cleanup;
	if ((groups = changed_groups(fresh, tkind, gs, ng, shrunk)) == NULL)
		goto cleanup;	/* changed meanwhile: nothing left to do */
	rv = jsonx_meta_str(fresh, "resourceVersion");
	patch = strcmp(tkind, "RayJob") == 0 ?
	    json_pack("{s:{s:{s:o}}}", "spec", "rayClusterSpec", "workerGroupSpecs", groups) :
	    json_pack("{s:{s:o}}", "spec", "workerGroupSpecs", groups);
	if (rv != NULL)
		json_object_set_new(patch, "metadata", json_pack("{s:s}", "resourceVersion", rv));
	ok = kube_patch_object(&t->pc, "ray.io/v1", tkind, j->ns, name, patch, &e);
cleanup:
	if (!ok && e.status != 409)
		log_warn(NULL, "status", "cannot patch an elastic group", "{s:s, s:s}", "job", j->id,
		    "error", e.msg);
	json_decref(patch);
	json_decref(fresh);
	return ok;
}

/* Oldest pod first (creationTimestamp, then name). */
static int
pod_cmp(const void *a, const void *b)
{
	json_t *x = *(json_t *const *)a, *y = *(json_t *const *)b;
	const char *tx = jsonx_meta_str(x, "creationTimestamp"),
	    *ty = jsonx_meta_str(y, "creationTimestamp"),
	    *nx = jsonx_meta_str(x, "name"), *ny = jsonx_meta_str(y, "name");
	int c = strcmp(tx ? tx : "", ty ? ty : "");

	return c != 0 ? c : strcmp(nx ? nx : "", ny ? ny : "");
}

/* Lifts the gate from the group's gated pods pinned as the group is now, oldest first,
 * until `keep` replicas may be scheduled. */
static void
ungate(const struct member *t, const struct status_job *j, const struct status_seen *seen,
       const struct ggroup *g)
{
	json_t *p, *gates, *x, **order;
	size_t i, k, n = json_array_size(seen->pods);
	int open = 0, room;

	json_array_foreach(seen->pods, i, p)
		if (of_group(p, g->name) && !gated(json_object_get(p, "spec")) &&
		    !has(g->drop, jsonx_meta_str(p, "name") ? jsonx_meta_str(p, "name") : ""))
			open++;
	room = g->keep * g->hosts - open;
	if (room <= 0 || n == 0 || (order = calloc(n, sizeof(*order))) == NULL)
		return;
	for (i = 0; i < n; i++)
		order[i] = json_array_get(seen->pods, i);
	qsort(order, n, sizeof(*order), pod_cmp);
	for (i = 0; i < n; i++) {
		json_t *sp = json_object_get(order[i], "spec"), *patch,
		    *mine = status_pin_values(order[i]);
		struct err e = { 0 };

		p = order[i];

		if (room <= 0)
			break;
		if (!of_group(p, g->name) || !gated(sp) ||
		    has(g->drop, jsonx_meta_str(p, "name") ? jsonx_meta_str(p, "name") : ""))
			continue;
		if (mine != NULL && json_array_size(g->pins) > 0 && !same_set(mine, g->pins))
			continue;	/* made before the pin changed: replaced first */
		gates = json_array();
		json_array_foreach(json_object_get(sp, "schedulingGates"), k, x)
			if (strcmp(str(x, "name"), KUBERAY_GROW_GATE) != 0)
				json_array_append(gates, x);
		patch = json_pack("{s:{s:o}}", "spec", "schedulingGates",
		    json_array_size(gates) ? gates : (json_decref(gates), json_null()));
		if (kube_patch_object(&t->pc, "v1", "Pod", j->ns, jsonx_meta_str(p, "name"), patch,
		    &e))
			room--;
		else
			log_warn(NULL, "status", "cannot lift a pod's scheduling gate", "{s:s, s:s, "
			    "s:s}", "job", j->id, "pod", jsonx_meta_str(p, "name"), "error", e.msg);
		json_decref(patch);
	}
	free(order);
}

/* RayJobs whose RayCluster the member did not have (by a hash of job and attempt -> when):
 * asked again after MISSING_RETRY_S, not on every pass. */
#define MISSING_SLOTS	256
#define MISSING_RETRY_S	30.0

static struct {
	pthread_mutex_t	 mu;
	uint64_t	 h[MISSING_SLOTS];
	double		 at[MISSING_SLOTS];
} M = { .mu = PTHREAD_MUTEX_INITIALIZER };

static uint64_t
job_hash(const struct status_job *j)
{
	uint64_t h = 0xcbf29ce484222325ULL;

	for (const char *c = j->id; *c != '\0'; c++)
		h = (h ^ (unsigned char)*c) * 0x100000001b3ULL;
	h = (h ^ (uint64_t)(unsigned)j->attempt) * 0x100000001b3ULL;
	return h ? h : 1;
}

/* Whether j's RayCluster was missing less than MISSING_RETRY_S ago; with mark, it is now. */
static bool
missing(const struct status_job *j, bool mark)
{
	uint64_t h = job_hash(j);
	size_t i = h % MISSING_SLOTS;
	bool recent;

	pthread_mutex_lock(&M.mu);
	recent = M.h[i] == h && mono_s() - M.at[i] < MISSING_RETRY_S;
	if (mark) {
		M.h[i] = h;
		M.at[i] = mono_s();
	}
	pthread_mutex_unlock(&M.mu);
	return recent;
}

/* The object whose workerGroupSpecs the autoscaler changes: a RayCluster is its own; a
 * RayJob's is the RayCluster it created (status.rayClusterName), else (not created yet, or
 * not there: an emulator that runs the RayJob's pods itself) the RayJob's rayClusterSpec.
 * *tkind gets the kind; a new reference. */
static json_t *
scaled_object(const struct member *t, const struct status_job *j,
	      const struct status_seen *seen, const char **tkind)
{
	const char *name = jsonx_at(json_object_get(seen->live, "status"), "rayClusterName",
	    NULL);
	json_t *rc = NULL;
	struct err e = { 0 };

	*tkind = j->kind;
	if (strcmp(j->kind, "RayJob") == 0 && name != NULL && name[0] != '\0' &&
	    !missing(j, false)) {
		if (kube_get_object(&t->pc, "ray.io/v1", "RayCluster", j->ns, name, &rc, &e)) {
			*tkind = "RayCluster";
			return rc;
		}
		if (e.status == 404)
			missing(j, true);
	}
	return json_incref(seen->live);
}

/* Fills the gated groups of the manifest; their count. */
static int
gated_groups(const struct status_job *j, struct ggroup *gs)
{
	json_t *wg;
	size_t i;
	int n = 0;

	json_array_foreach(json_object_get(ray_cluster_spec(j->manifest, j->kind),
	    "workerGroupSpecs"), i, wg) {
		if (n == MAX_GROUPS || !gated(json_object_get(json_object_get(wg, "template"),
		    "spec")))
			continue;
		memset(&gs[n], 0, sizeof(gs[n]));
		gs[n].grp = (int)i + 1;
		gs[n].name = str(wg, "groupName");
		gs[n].min = num(wg, "minReplicas", num(wg, "replicas", 0));
		gs[n].max = num(wg, "maxReplicas", gs[n].min);
		gs[n].hosts = num(wg, "numOfHosts", 1) > 0 ? num(wg, "numOfHosts", 1) : 1;
		n++;
	}
	return n;
}

/* Jobs whose last read found no grow of their attempt still held (by job_hash -> when): a
 * pass over such a RayCluster whose groups run at their minimum with no pod gated has
 * nothing to do, and reads no row.  Rows are made by the status worker of the replica that
 * leases the job's cluster, so the slot is right until that worker itself makes one (after
 * which the replicas are above the minimum); a replica that takes the lease over has no
 * slot and reads. */
#define IDLE_SLOTS	4096
#define IDLE_TTL_S	300.0

static struct {
	pthread_mutex_t	 mu;
	uint64_t	 h[IDLE_SLOTS];
	double		 at[IDLE_SLOTS];
} I = { .mu = PTHREAD_MUTEX_INITIALIZER };

static bool
idle_known(const struct status_job *j)
{
	uint64_t h = job_hash(j);
	bool out;

	pthread_mutex_lock(&I.mu);
	out = I.h[h % IDLE_SLOTS] == h && mono_s() - I.at[h % IDLE_SLOTS] < IDLE_TTL_S;
	pthread_mutex_unlock(&I.mu);
	return out;
}

static void
idle_set(const struct status_job *j, bool idle)
{
	uint64_t h = job_hash(j);

	pthread_mutex_lock(&I.mu);
	if (idle) {
		I.h[h % IDLE_SLOTS] = h;
		I.at[h % IDLE_SLOTS] = mono_s();
	} else if (I.h[h % IDLE_SLOTS] == h) {
		I.h[h % IDLE_SLOTS] = 0;
	}
	pthread_mutex_unlock(&I.mu);
}

/* Every gated group of the live RayCluster asks for its minimum and no pod of it waits
 * gated: with no grow held, nothing to do. */
static bool
at_minimum(const struct status_job *j, const struct status_seen *seen, struct ggroup *gs,
	   int ng)
{
	json_t *p;
	size_t i;

	if (strcmp(j->kind, "RayCluster") != 0)
		return false;	/* a RayJob's autoscaler scales its RayCluster: read below */
	for (int n = 0; n < ng; n++) {
		json_t *wg = live_group(json_object_get(ray_cluster_spec(seen->live, j->kind),
		    "workerGroupSpecs"), gs[n].name);

		if (wg == NULL || num(wg, "replicas", gs[n].min) > gs[n].min)
			return false;
		json_array_foreach(seen->pods, i, p)
			if (of_group(p, gs[n].name) && gated(json_object_get(p, "spec")))
				return false;
	}
	return true;
}

/* Whether a grow of the attempt is still held (pending, admitted or shrinking). */
static bool
any_held(json_t *grows)
{
	json_t *r;
	size_t i;

	json_array_foreach(grows, i, r)
		if (strcmp(str(r, "state"), "released") != 0)
			return true;
	return false;
}

/* What this pass does for group g: its admitted replicas and pins from the rows, grows the
 * autoscaler no longer uses released, the request made or resized (or withdrawn), the pods a
 * shrink deletes chosen. */
static void
plan_group(const struct member *t, const struct status_job *j, const struct status_seen *seen,
	   struct ggroup *g, json_t *grows, json_t *placement, json_t *wg, json_t *shrunk_nodes,
	   struct status_stats *st)
{
	json_t *r, *a;
	size_t i, k;
	long long newest = 0;
	int newest_desired = -1;

	g->pins = json_array();
	g->drop = json_array();
	g->desired = num(wg, "replicas", g->min);
	if (g->desired < g->min)
		g->desired = g->min;
	g->admitted = g->min;
	json_array_foreach(json_object_get(placement, "allocs"), i, a)
		if (num(a, "group", -1) == g->grp && !json_is_true(json_object_get(a, "grown")))
			add_node(g->pins, str(a, "node"));
	json_array_foreach(grows, i, r) {
		if (num(r, "grp", -1) != g->grp)
			continue;
		newest = (long long)json_integer_value(json_object_get(r, "id"));
		newest_desired = num(r, "desired", -1);
		if (strcmp(str(r, "state"), "pending") == 0) {
			g->pending_id = newest;
			g->pending = num(r, "replicas", 0);
		} else if (strcmp(str(r, "state"), "admitted") == 0) {
			g->admitted += num(r, "replicas", 0);
		} else if (strcmp(str(r, "state"), "shrinking") == 0 && g->n_shrinking < 8) {
			g->shrinking[g->n_shrinking++] = newest;
			json_array_foreach(json_object_get(json_object_get(r, "placement"), "allocs"),
			    k, a)
				add_node(shrunk_nodes, str(a, "node"));
		}
	}
	g->keep = g->admitted;
	/* the autoscaler lowered the replicas: the newest grows it no longer needs */
	for (k = json_array_size(grows); k-- > 0 && g->desired < g->keep;) {
		r = json_array_get(grows, k);
		if (num(r, "grp", -1) != g->grp || strcmp(str(r, "state"), "admitted") != 0 ||
		    g->keep - num(r, "replicas", 0) < g->desired)
			continue;
		g->keep -= num(r, "replicas", 0);
		release(t, j, (long long)json_integer_value(json_object_get(r, "id")), "admitted",
		    "grow_released", "the autoscaler lowered the replicas: the growth it no longer "
		    "uses is released", json_pack("{s:s, s:O, s:i}", "group", g->name, "grow",
		    json_object_get(r, "id"), "desired_replicas", g->desired), st);
		json_object_set_new(r, "state", json_string("released"));
	}
	/* the pin: the job's own nodes of the group and those of its admitted grows */
	json_array_foreach(grows, i, r)
		if (num(r, "grp", -1) == g->grp && strcmp(str(r, "state"), "admitted") == 0)
			json_array_foreach(json_object_get(json_object_get(r, "placement"), "allocs"),
			    k, a)
				add_node(g->pins, str(a, "node"));
	if (newest > 0 && newest_desired != g->desired && g->pending_id != newest)
		note_desired(t, j, newest, g->desired, st);
	if (g->pending_id > 0 && g->desired <= g->admitted)
		release(t, j, g->pending_id, "pending", "grow_withdrawn", "the autoscaler no longer "
		    "asks for the growth that waited", json_pack("{s:s, s:i}", "group", g->name,
		    "desired_replicas", g->desired), st);
	else if (g->n_shrinking == 0)	/* a shrink lowers the replicas first */
		request(t, j, g, st);
	if (g->n_shrinking > 0)
		choose_drop(seen, g, shrunk_nodes);
}

void
status_grow(const struct member *t, struct status_job *j, const struct status_seen *seen,
	    struct status_stats *st)
{
	struct ggroup gs[MAX_GROUPS];
	json_t *grows = NULL, *placement = NULL, *target = NULL, *shrunk_nodes = NULL;
	const char *tkind = NULL;
	struct err e = { 0 };
	int ng;
	bool shrunk = false;

	if (j->manifest == NULL || seen->live == NULL ||
	    (j->state != JOB_DISPATCHED && j->state != JOB_RUNNING) ||
	    (ng = gated_groups(j, gs)) == 0)
		return;
	if (idle_known(j) && at_minimum(j, seen, gs, ng))
		return;
	if (!read_rows(j, &grows, &placement, &e)) {
		if (e.status != 409)
			log_warn(NULL, "status", "cannot read growth", "{s:s, s:s}", "job", j->id,
			    "error", e.msg);
		return;
	}
	idle_set(j, !any_held(grows));
	target = scaled_object(t, j, seen, &tkind);
	shrunk_nodes = json_array();
	for (int n = 0; n < ng; n++)
		plan_group(t, j, seen, &gs[n], grows, placement, live_group(json_object_get(
		    ray_cluster_spec(target, tkind), "workerGroupSpecs"), gs[n].name), shrunk_nodes,
		    st);
	if (!patch_groups(t, j, target, tkind, gs, ng, &shrunk))
		goto cleanup;
	for (int n = 0; n < ng; n++) {
		/* the member runs no more than what stays admitted (patched now, or already) */
		for (int s = 0; s < gs[n].n_shrinking; s++)
			release(t, j, gs[n].shrinking[s], "shrinking", "grow_released", shrunk ?
			    "grown workers shrunk on the member: the group's replicas are back to "
			    "what stays admitted" : "grown workers shrunk: the group runs no more "
			    "than what stays admitted", json_pack("{s:s, s:I, s:i, s:O}", "group",
			    gs[n].name, "grow", (json_int_t)gs[n].shrinking[s], "replicas",
			    gs[n].keep, "deleted", gs[n].drop), st);
		ungate(t, j, seen, &gs[n]);
	}
cleanup:
	for (int n = 0; n < ng; n++) {
		json_decref(gs[n].pins);
		json_decref(gs[n].drop);
	}
	json_decref(shrunk_nodes);
	json_decref(target);
	json_decref(grows);
	json_decref(placement);
}
