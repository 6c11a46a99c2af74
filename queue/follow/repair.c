/* repair: a node lost under a dispatched or running job (gone from the node list, NotReady
 * or tainted unreachable past a grace) is replaced by a spare node of the same domain (the
 * pool; for topology rack the rack; topology host has none), chosen by the scheduler's own
 * packing over its own model of free capacity; the group's hostname pin is re-applied
 * naming the spare (once: the live object is compared first), the replacement pods still
 * pinned to the lost node are deleted so KubeRay recreates them from the new template, and
 * the placement and a `repaired` event are recorded in one transaction.  No spare: one
 * `waiting_for_spare` event with the reason and the domain (explain shows it); for a
 * rack-topology gang whose rack has no spare left, a move (rack_move): another rack of the
 * same cluster first, else another cluster, with a `rack_lost` event. */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/arena.h"
#include "core/config.h"
#include "core/log.h"
#include "core/mono.h"
#include "providers/kube.h"
#include "queue/change/change.h"
#include "queue/follow/status_int.h"
#include "queue/jobs/job.h"
#include "queue/sched/loader.h"
#include "queue/sched/sched_int.h"
#include "queue/sched/scheduler.h"
#include "regions/lease.h"

#define HOSTNAME		"kubernetes.io/hostname"

static const char *
str(const json_t *o, const char *k)
{
	const char *s = json_string_value(json_object_get(o, k));

	return s ? s : "";
}

static double
when(const char *s)
{
	struct tm tm;

	memset(&tm, 0, sizeof(tm));
	if (s == NULL || strptime(s, "%Y-%m-%dT%H:%M:%S", &tm) == NULL)
		return -1;
	return (double)timegm(&tm);
}

/* The member's clock: its newest node heartbeat (a simulated member runs its own time),
 * else ours. */
static double
member_now(json_t *nodes)
{
	const char *name;
	json_t *n, *c;
	double now = -1;
	size_t i;

	json_object_foreach(nodes, name, n)
		json_array_foreach(json_object_get(json_object_get(n, "status"), "conditions"), i, c) {
			double t = when(str(c, "lastHeartbeatTime"));

			if (t > now)
				now = t;
		}
	return now > 0 ? now : (double)time(NULL);
}

/* Whether Node n is not ready (Ready not True, or the node lifecycle controller's
 * unreachable/not-ready NoExecute taint); *since: when it became so on the member's clock,
 * -1 unknown. */
static bool
not_ready(json_t *n, double *since)
{
	json_t *c;
	size_t i;
	bool out = false;

	*since = -1;
	json_array_foreach(json_object_get(json_object_get(n, "status"), "conditions"), i, c)
		if (strcmp(str(c, "type"), "Ready") == 0 && strcmp(str(c, "status"), "True") != 0) {
			out = true;
			*since = when(str(c, "lastTransitionTime"));
		}
	json_array_foreach(json_object_get(json_object_get(n, "spec"), "taints"), i, c)
		if ((strcmp(str(c, "key"), "node.kubernetes.io/unreachable") == 0 ||
		    strcmp(str(c, "key"), "node.kubernetes.io/not-ready") == 0) &&
		    strcmp(str(c, "effect"), "NoExecute") == 0) {
			out = true;
			if (*since < 0 || when(str(c, "timeAdded")) < *since)
				*since = when(str(c, "timeAdded"));
		}
	return out;
}

/* When this process first saw each not-ready node (by a hash of its name): the grace also
 * counts on our clock, for a member whose clock (a simulation's) we cannot read. */
#define SEEN_SLOTS	1024

static struct {
	pthread_mutex_t	 mu;
	uint64_t	 h[SEEN_SLOTS];
	double		 at[SEEN_SLOTS];
} S = { .mu = PTHREAD_MUTEX_INITIALIZER };

/* Seconds since name was first seen not ready (0 now); with ready, forgets it. */
static double
seen_for(const char *name, bool ready)
{
	uint64_t h = 0xcbf29ce484222325ULL;
	size_t i;
	double out = 0, now = mono_s();

	for (const char *c = name; *c != '\0'; c++)
		h = (h ^ (unsigned char)*c) * 0x100000001b3ULL;
	h = h ? h : 1;
	i = h % SEEN_SLOTS;
	pthread_mutex_lock(&S.mu);
	if (ready) {
		if (S.h[i] == h)
			S.h[i] = 0;
	} else if (S.h[i] == h) {
		out = now - S.at[i];
	} else {
		S.h[i] = h;
		S.at[i] = now;
	}
	pthread_mutex_unlock(&S.mu);
	return out;
}

/* Why node name is lost for good, NULL when it is not.  A node NotReady (Ready False or
 * Unknown, or the node lifecycle controller's not-ready/unreachable NoExecute taint) for
 * less than cfg.repair_notready_grace_s — on the member's clock or on ours from first
 * sight — is not: a node that comes back within the grace is left alone. */
static const char *
lost_why(json_t *nodes, const char *name, double now)
{
	json_t *n = json_object_get(nodes, name);
	double since;

	if (n == NULL)
		return "NodeDeleted";
	if (!not_ready(n, &since)) {
		seen_for(name, true);
		return NULL;
	}
	if ((since > 0 && now - since >= cfg.repair_notready_grace_s) ||
	    seen_for(name, false) >= cfg.repair_notready_grace_s)
		return "NodeNotReady";
	return NULL;
}

/* The Ray cluster spec inside a manifest or live object of kind (borrowed), NULL none. */
static json_t *
cluster_spec(json_t *o, const char *kind)
{
	json_t *spec = json_object_get(o, "spec");

	if (strcmp(kind, "RayCluster") == 0)
		return spec;
	if (strcmp(kind, "RayJob") == 0)
		return json_object_get(spec, "rayClusterSpec");
	if (strcmp(kind, "RayService") == 0)
		return json_object_get(spec, "rayClusterConfig");
	return NULL;
}

/* Pod template of group g (0 = head, i = worker group i - 1, as the renderer pins them). */
static json_t *
group_template(json_t *o, const char *kind, int g)
{
	json_t *cs = cluster_spec(o, kind);

	if (g == 0)
		return json_object_get(json_object_get(cs, "headGroupSpec"), "template");
	return json_object_get(json_array_get(json_object_get(cs, "workerGroupSpecs"),
	    (size_t)g - 1), "template");
}

json_t *
status_pin_values(json_t *tmpl)
{
	json_t *aff = json_object_get(json_object_get(json_object_get(tmpl, "spec"),
	    "affinity"), "nodeAffinity"), *terms = json_object_get(json_object_get(aff,
	    "requiredDuringSchedulingIgnoredDuringExecution"), "nodeSelectorTerms"), *t, *x;
	size_t i, k;

	json_array_foreach(terms, i, t)
		json_array_foreach(json_object_get(t, "matchExpressions"), k, x)
			if (strcmp(str(x, "key"), HOSTNAME) == 0 && strcmp(str(x, "operator"),
			    "In") == 0)
				return json_object_get(x, "values");
	return NULL;
}

static bool
names(json_t *arr, const char *s)
{
	json_t *v;
	size_t i;

	json_array_foreach(arr, i, v)
		if (strcmp(json_string_value(v), s) == 0)
			return true;
	return false;
}

/* The first node pinned in the manifest that is lost (*group gets its group, *why the
 * reason); a host-topology node selector counts too.  NULL when none. */
static const char *
first_lost(json_t *manifest, const char *kind, json_t *nodes, int *group, const char **why)
{
	double now = member_now(nodes);
	json_t *cs = cluster_spec(manifest, kind), *v;
	int ng = (int)json_array_size(json_object_get(cs, "workerGroupSpecs")) + 1;
	size_t i;

	for (int g = 0; g < ng; g++) {
		json_t *tmpl = group_template(manifest, kind, g);
		const char *host = json_string_value(json_object_get(json_object_get(json_object_get(
		    tmpl, "spec"), "nodeSelector"), HOSTNAME));

		if (host != NULL && (*why = lost_why(nodes, host, now)) != NULL) {
			*group = g;
			return host;
		}
		json_array_foreach(status_pin_values(tmpl), i, v)
			if ((*why = lost_why(nodes, json_string_value(v), now)) != NULL) {
				*group = g;
				return json_string_value(v);
			}
	}
	return NULL;
}

json_t *
status_pins(json_t *manifest, const char *kind)
{
	json_t *cs = cluster_spec(manifest, kind), *out = json_array(), *v;
	int ng = (int)json_array_size(json_object_get(cs, "workerGroupSpecs")) + 1;
	size_t i;

	for (int g = 0; cs != NULL && g < ng; g++) {
		json_t *tmpl = group_template(manifest, kind, g);
		const char *host = json_string_value(json_object_get(json_object_get(json_object_get(
		    tmpl, "spec"), "nodeSelector"), HOSTNAME));

		if (host != NULL && !names(out, host))
			json_array_append_new(out, json_string(host));
		json_array_foreach(status_pin_values(tmpl), i, v)
			if (json_is_string(v) && !names(out, json_string_value(v)))
				json_array_append(out, v);
	}
	return out;
}

/* ---- choosing the spare: the scheduler's model and packing */

struct plan {
	char		 env[64], queue_id[40];
	json_t		*spec, *placement;	/* the job's, as read */
	char		 spare[256];		/* "" none */
	char		 domain[300];		/* "pool h100", "rack r1", "host n" */
	char		 reason[1024];		/* why there is no spare */
	int		 pods;			/* the group's pods on the lost node */
	char		 pool[128];
	char		 rack[128];		/* the gang's rack (topology rack, pack) */
	json_t		*rack_nodes;		/* that rack's nodes (names), the lost one too */
	json_t		*down_nodes;		/* the cluster's other nodes gone or NotReady now */
};

static bool
read_job(struct db *c, const struct status_job *j, struct plan *p, struct err *e)
{
	static const char sql[] = "SELECT environment, queue_id::text, spec::text,"
	    " coalesce(placement, '{}')::text FROM jobs WHERE id = $1::uuid AND attempt = $2::int"
	    " AND state IN ('dispatched', 'running')";
	char at[16];
	const char *prm[2] = { j->id, at };
	PGresult *r = NULL;

	snprintf(at, sizeof(at), "%d", j->attempt);
	if (!db_exec(c, sql, 2, prm, &r, e))
		return false;
	if (PQntuples(r) != 1) {
		PQclear(r);
		return err_set(e, 409, "status.changed", "the job changed meanwhile");
	}
	snprintf(p->env, sizeof(p->env), "%s", PQgetvalue(r, 0, 0));
	snprintf(p->queue_id, sizeof(p->queue_id), "%s", PQgetvalue(r, 0, 1));
	p->spec = json_loads(PQgetvalue(r, 0, 2), 0, NULL);
	p->placement = json_loads(PQgetvalue(r, 0, 3), 0, NULL);
	PQclear(r);
	return p->spec != NULL && p->placement != NULL;
}

/* Only the domain's nodes the member lists as ready keep their free room; no pool grows:
 * a spare is a node that exists. */
static void
narrow(struct sched_model *m, struct sched_cluster *k, int pool, const char *rack,
    json_t *nodes)
{
	for (size_t i = 0; i < k->n_nodes; i++) {
		struct sched_node *n = &k->nodes[i];
		bool keep = n->id != NULL && n->pool == pool && (rack == NULL || (n->rack >= 0 &&
		    strcmp(sched_model_name(m, n->rack), rack) == 0));
		double since;

		if (keep && (json_object_get(nodes, n->id) == NULL ||
		    not_ready(json_object_get(nodes, n->id), &since)))
			keep = false;
		if (!keep)
			memset(&n->free, 0, sizeof(n->free));
	}
	for (size_t q = 0; q < k->n_pools; q++)
		k->pools[q].grow_nodes = 0;
	sched_cluster_refresh(k);
}

/* Charges cluster k's nodes with every allocation the live jobs' placements name
 * (jobs.placement, which each repair rewrites in the transaction that records it): a
 * node's free room is at most its allocatable less what the placements hold there.  The
 * capacity snapshot alone is not enough: the loader charges a running job to nothing (the
 * snapshot is taken to show its pods), yet a repair moved pods to a spare that the snapshot
 * shows free until its next poll.  Without this, every job of one status pass that lost
 * its node chose the same spare (issue 24: 10 and 12 GPUs re-pinned to 8-GPU nodes).
 * Taking the smaller of the two never counts one pod twice. */
static bool
charge_placements(struct sched_model *m, struct sched_cluster *k, struct err *e)
{
	struct sched_vec *held;

	if (k->n_nodes == 0)
		return true;
	if ((held = calloc(k->n_nodes, sizeof(*held))) == NULL)
		return err_set(e, 500, "status.oom", "out of memory");
	for (size_t i = 0; i < m->n_jobs; i++) {
		const struct sched_job *j = m->jobs[i];

		if ((j->state != SCHED_ADMITTED && j->state != SCHED_RUNNING) ||
		    j->cluster != k->idx)
			continue;
		for (size_t a = 0; a < j->n_allocs; a++) {
			const struct sched_alloc *al = &j->allocs[a];

			if (al->grown || al->node < 0 || (size_t)al->node >= k->n_nodes)
				continue;
			for (int r = 0; r < SCHED_NRES; r++)
				held[al->node].v[r] += al->res.v[r];
		}
	}
	for (size_t i = 0; i < k->n_nodes; i++)
		for (int r = 0; r < SCHED_NRES; r++) {
			int64_t room = k->nodes[i].alloc.v[r] - held[i].v[r];

			if (room < 0)
				room = 0;
			if (k->nodes[i].free.v[r] > room)
				k->nodes[i].free.v[r] = room;
		}
	free(held);
	return true;
}

/* For a lost rack's move (rack_move): the rack's nodes (lost among them, even when the
 * snapshot no longer shows it) and the cluster's other nodes that the member lists as gone
 * or not ready now, so that a re-placement on the same cluster uses neither. */
static void
rack_and_down(struct sched_model *m, const struct sched_cluster *k, const char *rack,
    const char *lost, json_t *nodes, struct plan *p)
{
	bool has_lost = false;

	p->rack_nodes = json_array();
	p->down_nodes = json_array();
	for (size_t i = 0; i < k->n_nodes; i++) {
		const struct sched_node *n = &k->nodes[i];
		double since;

		if (n->id == NULL)
			continue;
		if (n->rack >= 0 && strcmp(sched_model_name(m, n->rack), rack) == 0) {
			json_array_append_new(p->rack_nodes, json_string(n->id));
			has_lost = has_lost || strcmp(n->id, lost) == 0;
		} else if (json_object_get(nodes, n->id) == NULL ||
		    not_ready(json_object_get(nodes, n->id), &since)) {
			json_array_append_new(p->down_nodes, json_string(n->id));
		}
	}
	if (!has_lost)
		json_array_append_new(p->rack_nodes, json_string(lost));
}

/* Picks p->spare for group g's pods on lost (or says why none in p->reason). */
static bool
choose(struct db *c, const struct status_job *j, const char *cluster_id, const char *lost,
    int g, json_t *nodes, struct plan *p, struct err *e)
{
	struct sched_model *m = NULL;
	struct sched_cluster *k;
	struct sched_job *cur, *jd, copy;
	struct sched_alloc *al = NULL;
	struct arena *a = arena_new();
	json_t *pools = NULL, *x, *kp;
	const char *rack = json_string_value(json_object_get(p->placement, "rack"));
	char id[64];
	size_t i, n = 0;
	int pool = -1;
	bool ok = false, head, gang;

	p->pods = 0;
	json_array_foreach(json_object_get(p->placement, "allocs"), i, x)
		if (json_integer_value(json_object_get(x, "group")) == g &&
		    strcmp(str(x, "node"), lost) == 0) {
			p->pods += (int)json_integer_value(json_object_get(x, "pods"));
			snprintf(p->pool, sizeof(p->pool), "%s", str(x, "pool"));
			if (json_is_string(json_object_get(x, "rack")))	/* the lost node's own */
				rack = str(x, "rack");
		}
	if (p->pods == 0) {
		err_set(e, 409, "status.changed", "the placement does not name the node");
		goto cleanup;
	}
	snprintf(p->domain, sizeof(p->domain), "pool %s", p->pool);
	if (!loader_model_plan(c, p->env, cfg.snapshot_max_age_s, &m, &pools, e))
		goto cleanup;
	k = sched_model_find_cluster(m, cluster_id);
	cur = sched_model_find_job(m, j->id);
	kp = k ? json_object_get(pools, k->id) : NULL;
	json_array_foreach(kp, i, x)
		if (strcmp(str(x, "pool"), p->pool) == 0)
			pool = (int)i;
	if (k == NULL || cur == NULL || g >= cur->n_groups || pool < 0) {
		snprintf(p->reason, sizeof(p->reason), "the cluster's capacity snapshot does not "
		    "show %s now", p->domain);
		ok = true;
		goto cleanup;
	}
	/* topology binds the accelerator gang only (as the renderer pins it) */
	gang = g > 0 && cur->groups[g].pod.v[SCHED_ACCEL] > 0;
	if (gang && cur->topo == SCHED_TOPO_HOST) {
		snprintf(p->domain, sizeof(p->domain), "host %s", lost);
		snprintf(p->reason, sizeof(p->reason), "the job asked for one host (topology "
		    "host) and %s was lost: no other node can stand in for it", lost);
		ok = true;
		goto cleanup;
	}
	if (gang && cur->topo == SCHED_TOPO_SLICE) {
		snprintf(p->domain, sizeof(p->domain), "slice of %s (pool %s)", lost, p->pool);
		snprintf(p->reason, sizeof(p->reason), "a TPU slice is one unit: a node of "
		    "another slice cannot stand in for %s", lost);
		ok = true;
		goto cleanup;
	}
	if (gang && (cur->topo == SCHED_TOPO_RACK || cur->topo == SCHED_TOPO_PACK) && rack != NULL) {
		snprintf(p->domain, sizeof(p->domain), "rack %s (pool %s)", rack, p->pool);
		snprintf(p->rack, sizeof(p->rack), "%s", rack);
	} else
		rack = NULL;
	/* the group's pods on the lost node, as a job of its own (the running job keeps its
	 * quota: the pods are replaced, not added) */
	snprintf(id, sizeof(id), "%s#repair", j->id);
	if ((jd = loader_add_job(m, id, p->queue_id, 0, false, m->now, SCHED_PENDING, p->spec,
	    e)) == NULL)
		goto cleanup;
	sched_job_own_groups(m, jd);
	copy = *jd;
	jd->n_groups = 0;
	jd->n_req = 0;
	jd->flavor_mask = 0;
	jd->topo = SCHED_TOPO_NONE;	/* the domain is narrowed below */
	head = copy.groups[g].head;	/* read before groups[0] is written over */
	if (!sched_job_add_group(m, jd, sched_model_name(m, m->flavor_name[copy.groups[g].flavor]),
	    p->pods, p->pods, copy.groups[g].pod, e))
		goto cleanup;
	jd->groups[0].head = head;
	sched_job_avoid_node(m, jd, cluster_id, lost);
	if (rack != NULL)
		rack_and_down(m, k, rack, lost, nodes, p);
	if (!charge_placements(m, k, e))
		goto cleanup;
	narrow(m, k, pool, rack, nodes);
	if (sched_pack(m, jd, k, a, &al, &n) == SCHED_R_CHOSEN && n > 0 && al[0].node >= 0 &&
	    !al[0].grown && (size_t)al[0].node < k->n_nodes && k->nodes[al[0].node].id != NULL) {
		bool one = true;

		for (i = 1; i < n; i++)
			one = one && al[i].node == al[0].node;
		if (one)
			snprintf(p->spare, sizeof(p->spare), "%s", k->nodes[al[0].node].id);
	}
	if (p->spare[0] == '\0')
		snprintf(p->reason, sizeof(p->reason), "no node of %s has room for the %d pod(s) "
		    "that ran on %s (%s)", p->domain, p->pods, lost, p->pool);
	ok = true;
cleanup:
	json_decref(pools);
	sched_model_free(m);
	arena_free(a);
	return ok;
}

/* ---- carrying it out */

/* The manifest with group g's pin naming spare instead of lost (new reference). */
static json_t *
repinned(json_t *manifest, const char *kind, int g, const char *lost, const char *spare)
{
	json_t *m = json_deep_copy(manifest), *v,
	    *vals = status_pin_values(group_template(m, kind, g));
	size_t i;

	json_array_foreach(vals, i, v)
		if (strcmp(json_string_value(v), lost) == 0)
			json_array_set_new(vals, i, json_string(spare));
	return m;
}

/* The node the live object's group g is pinned to that the stored manifest's is not (an
 * earlier repair applied whose record failed), NULL none; *still: the live pin still
 * names lost. */
static const char *
live_spare(json_t *live, json_t *manifest, const char *kind, int g, const char *lost,
    bool *still)
{
	json_t *lv = status_pin_values(group_template(live, kind, g)),
	    *mv = status_pin_values(group_template(manifest, kind, g)), *v;
	size_t i;

	*still = names(lv, lost);
	if (*still)
		return NULL;
	json_array_foreach(lv, i, v)
		if (!names(mv, json_string_value(v)))
			return json_string_value(v);
	return NULL;
}

/* Deletes the group's pods of the attempt on node: with node "", the ones still waiting
 * for a node (pinned to lost: KubeRay creates them again from the re-pinned template);
 * with node lost, the ones still bound to it, at once (gracePeriodSeconds 0: a NotReady
 * node's kubelet cannot confirm their end, and the taint eviction would wait its 300 s),
 * so KubeRay creates them again on the spare. */
static void
drop_group_pods(const struct member *t, const struct status_job *j, json_t *pods, int g,
    json_t *manifest, const char *node)
{
	json_t *p;
	const char *group = g == 0 ? NULL : str(json_array_get(json_object_get(cluster_spec(
	    manifest, j->kind), "workerGroupSpecs"), (size_t)g - 1), "groupName");
	bool waiting = node[0] == '\0';
	size_t i;

	json_array_foreach(pods, i, p) {
		json_t *md = json_object_get(p, "metadata"), *lb = json_object_get(md, "labels");
		struct err e = { 0 };
		bool head = strcmp(str(lb, "ray.io/node-type"), "head") == 0;

		if (strcmp(str(json_object_get(p, "spec"), "nodeName"), node) != 0)
			continue;
		if (g == 0 ? !head : head || strcmp(str(lb, "ray.io/group"), group) != 0)
			continue;
		if (waiting ? kube_delete_object(&t->pc, "v1", "Pod", j->ns, str(md, "name"), NULL,
		    &e) : kube_delete_pod_now(&t->pc, j->ns, str(md, "name"), &e))
			continue;
		log_warn(NULL, "status", waiting ? "cannot delete a stranded pod" :
		    "cannot delete a pod of a lost node", "{s:s, s:s, s:s}", "job", j->id, "pod",
		    str(md, "name"), "error", e.msg);
	}
}

/* Level-triggered: every pod of the attempt still waiting for a node whose hostname pin
 * is not its group's in the live object (created from the template before a repair
 * re-pinned it) is deleted, so KubeRay creates it again from the live template. */
static void
drop_stale(const struct member *t, const struct status_job *j, const struct status_seen *seen)
{
	json_t *cs = cluster_spec(seen->live, j->kind), *p, *wg;
	size_t i, k;

	json_array_foreach(seen->pods, i, p) {
		json_t *md = json_object_get(p, "metadata"), *lb = json_object_get(md, "labels");
		json_t *mine = status_pin_values(p), *want = NULL;
		struct err e = { 0 };

		if (mine == NULL || str(json_object_get(p, "spec"), "nodeName")[0] != '\0')
			continue;
		if (strcmp(str(lb, "ray.io/node-type"), "head") == 0)
			want = status_pin_values(group_template(seen->live, j->kind, 0));
		else
			json_array_foreach(json_object_get(cs, "workerGroupSpecs"), k, wg)
				if (strcmp(str(wg, "groupName"), str(lb, "ray.io/group")) == 0)
					want = status_pin_values(json_object_get(wg, "template"));
		if (want == NULL || json_equal(mine, want))
			continue;
		if (!kube_delete_object(&t->pc, "v1", "Pod", j->ns, str(md, "name"), NULL, &e))
			log_warn(NULL, "status", "cannot delete a stale pod", "{s:s, s:s, s:s}",
			    "job", j->id, "pod", str(md, "name"), "error", e.msg);
	}
}

struct record {
	const struct status_job	*j;
	const char		*cluster_id;
	json_t			*old, *placement, *manifest, *data;
	const char		*rv;
	char			 msg[2048];
};

static bool
record_tx(struct db *c, void *arg, struct err *e)
{
	static const char sql[] = "UPDATE jobs SET placement = $4::jsonb, manifest = $5::jsonb,"
	    " object_rv = coalesce($6, object_rv), updated_at = now()"
	    " WHERE id = $1::uuid AND attempt = $2::int AND state IN ('dispatched', 'running')"
	    " AND placement = $3::jsonb RETURNING id";
	struct record *r = arg;
	char at[16], *old = json_dumps(r->old, JSON_COMPACT),
	    *pl = json_dumps(r->placement, JSON_COMPACT),
	    *man = json_dumps(r->manifest, JSON_COMPACT);
	const char *p[6] = { r->j->id, at, old, pl, man, r->rv && r->rv[0] ? r->rv : NULL };
	PGresult *res = NULL;
	bool ok = false;

	snprintf(at, sizeof(at), "%d", r->j->attempt);
	if (!lease_fence(c, r->cluster_id, e) || !db_exec(c, sql, 6, p, &res, e))
		goto cleanup;
	if (PQntuples(res) == 0) {
		err_set(e, 409, "status.changed", "the job changed meanwhile");
		goto cleanup;
	}
	ok = job_event(c, r->j->id, "repaired", r->msg, r->data, e);
cleanup:
	PQclear(res);
	free(old);
	free(pl);
	free(man);
	return ok;
}

/* The placement with group g's allocations on lost moved to spare (new reference). */
static json_t *
moved(json_t *placement, int g, const char *lost, const char *spare)
{
	json_t *pl = json_deep_copy(placement), *a;
	size_t i;

	json_array_foreach(json_object_get(pl, "allocs"), i, a)
		if (json_integer_value(json_object_get(a, "group")) == g &&
		    strcmp(str(a, "node"), lost) == 0)
			json_object_set_new(a, "node", json_string(spare));
	if (g > 0 && strcmp(str(pl, "host"), lost) == 0)
		json_object_set_new(pl, "host", json_string(spare));
	return pl;
}

/* ---- a rack lost: the job moves */

struct rack_lost {
	const struct status_job	*j;
	const char		*cluster_id, *lost, *why;
	const struct plan	*p;
	int			 g;
	bool			 same;		/* re-placed on another rack of its cluster */
	char			 target[128];
	char			 target_rack[128];
};

/* Reserves another rack of the job's cluster, else another cluster, for the job (the move
 * machinery: queue/change/move.c; the mover checkpoints, stops the source and applies the
 * next attempt there) and records a `rack_lost` event. */
static bool
rack_tx(struct db *c, void *arg, struct err *e)
{
	struct rack_lost *r = arg;
	json_t *plan = NULL, *to, *d;
	char reason[600], msg[1024];
	bool ok = false;

	snprintf(reason, sizeof(reason), "rack_lost: rack %s lost (%s %s) with no spare left in "
	    "it", r->p->rack, r->lost, r->why);
	if (!lease_fence(c, r->cluster_id, e) || !move_rack_lost(c, r->j->id, reason,
	    r->p->rack_nodes, r->p->down_nodes, &plan, &r->same, e))
		goto cleanup;
	to = json_object_get(plan, "to");
	snprintf(r->target, sizeof(r->target), "%s", json_is_string(json_object_get(to,
	    "cluster_name")) ? str(to, "cluster_name") : str(to, "cluster"));
	snprintf(r->target_rack, sizeof(r->target_rack), "%s", str(to, "rack"));
	d = json_pack("{s:s, s:s, s:s, s:i, s:s, s:s, s:s, s:b, s:s?}", "rack", r->p->rack,
	    "lost_node", r->lost, "why", r->why, "group", r->g, "domain", r->p->domain,
	    "target_cluster", r->target, "target_cluster_id", str(to, "cluster"), "same_cluster",
	    r->same, "target_rack", r->target_rack[0] ? r->target_rack : NULL);
	if (r->same)
		snprintf(msg, sizeof(msg), "rack %s lost (%s %s), no spare left in it: moving to "
		    "rack %s of the same cluster %s", r->p->rack, r->lost, r->why,
		    r->target_rack[0] ? r->target_rack : "(another)", r->target);
	else
		snprintf(msg, sizeof(msg), "rack %s lost (%s %s), no spare left in it and no spare "
		    "rack in its cluster: moving to %s", r->p->rack, r->lost, r->why, r->target);
	ok = job_event(c, r->j->id, "rack_lost", msg, d, e);
	json_decref(d);
cleanup:
	json_decref(plan);
	return ok;
}

/* Whether the job was set moving off its lost rack; false (no capacity elsewhere, or an
 * error, logged): it waits for a spare as any other. */
static bool
rack_move(const struct member *t, const struct status_job *j, const char *lost,
    const char *why, int g, const struct plan *p, struct status_stats *st)
{
	struct rack_lost r = { .j = j, .cluster_id = t->id, .lost = lost, .why = why, .p = p,
	    .g = g };
	struct err e = { 0 };

	if (!db_tx(rack_tx, &r, &e)) {
		if (e.status != 409)
			log_warn(NULL, "status", "cannot move a job off a lost rack", "{s:s, s:s}",
			    "job", j->id, "error", e.msg);
		return false;
	}
	st->events++;
	log_info(NULL, "status", "rack lost: job moving", "{s:s, s:s, s:s, s:b}", "job", j->id,
	    "rack", p->rack, "target", r.target, "same_cluster", r.same);
	return true;
}

/* Jobs that found no spare lately (hash of job, attempt and lost node -> when): loading the
 * scheduler's model is not repeated every status cycle while a job waits. */
#define WAIT_SLOTS	256
#define WAIT_RETRY_S	10.0

static struct {
	pthread_mutex_t	 mu;
	uint64_t	 h[WAIT_SLOTS];
	double		 at[WAIT_SLOTS];
} W = { .mu = PTHREAD_MUTEX_INITIALIZER };

static uint64_t
wait_hash(const struct status_job *j, const char *lost)
{
	uint64_t h = 0xcbf29ce484222325ULL;

	for (const char *c = j->id; *c != '\0'; c++)
		h = (h ^ (unsigned char)*c) * 0x100000001b3ULL;
	for (const char *c = lost; *c != '\0'; c++)
		h = (h ^ (unsigned char)*c) * 0x100000001b3ULL;
	return (h ^ (uint64_t)(unsigned)j->attempt) * 0x100000001b3ULL;
}

/* Whether h waited less than WAIT_RETRY_S ago; with mark, records that it waits now. */
static bool
waited(uint64_t h, bool mark)
{
	size_t i = h % WAIT_SLOTS;
	bool recent;

	pthread_mutex_lock(&W.mu);
	recent = W.h[i] == h && mono_s() - W.at[i] < WAIT_RETRY_S;
	if (mark) {
		W.h[i] = h;
		W.at[i] = mono_s();
	}
	pthread_mutex_unlock(&W.mu);
	return recent;
}

void
status_repair(const struct member *t, struct status_job *j, const struct status_seen *seen,
    struct status_stats *st)
{
	struct plan p;
	struct record rec = { .j = j, .cluster_id = t->id };
	struct kube_ref ref;
	struct err e = { 0 };
	struct db *c = NULL;
	const char *lost, *why = NULL, *already;
	json_t *man = NULL, *pl = NULL, *d;
	bool still = true;
	int g = -1;
	char key[300];

	memset(&p, 0, sizeof(p));
	memset(&ref, 0, sizeof(ref));
	if (j->manifest == NULL || seen->nodes == NULL || seen->live == NULL ||
	    cluster_spec(j->manifest, j->kind) == NULL)
		return;
	drop_stale(t, j, seen);
	if ((lost = first_lost(j->manifest, j->kind, seen->nodes, &g, &why)) == NULL)
		return;
	if (waited(wait_hash(j, lost), false))
		return;
	if ((c = db_acquire(5000, &e)) == NULL)
		goto cleanup;
	if (!read_job(c, j, &p, &e))
		goto cleanup;
	/* level, not edge: a spare the live object names already (applied in an earlier
	 * cycle whose record failed) is the spare; choose() still says the domain */
	already = live_spare(seen->live, j->manifest, j->kind, g, lost, &still);
	if (!choose(c, j, t->id, lost, g, seen->nodes, &p, &e))
		goto cleanup;
	if (already != NULL)
		snprintf(p.spare, sizeof(p.spare), "%s", already);
	db_release(c);	/* no transaction or connection held across the member's calls */
	c = NULL;
	if (p.spare[0] == '\0' && p.rack[0] != '\0' && rack_move(t, j, lost, why, g, &p, st))
		goto cleanup;
	if (p.spare[0] == '\0') {
		snprintf(key, sizeof(key), "%d:%s", g, lost);
		d = json_pack("{s:s, s:s, s:i, s:s, s:s, s:i}", "lost_node", lost, "why", why,
		    "group", g, "domain", p.domain, "reason", p.reason, "pods", p.pods);
		snprintf(rec.msg, sizeof(rec.msg), "waiting for a spare in %s: %s lost (%s); %s",
		    p.domain, lost, why, p.reason);
		status_note_once(j, "waiting_for_spare", key, rec.msg, d, st);
		waited(wait_hash(j, lost), true);
		json_decref(d);
		goto cleanup;
	}
	man = repinned(j->manifest, j->kind, g, lost, p.spare);
	if (still) {	/* the live object does not show it yet: the one apply */
		if (!kube_apply(&t->pc, man, &ref, NULL, &e)) {
			status_unreadable(j, t->name, &e);
			goto cleanup;
		}
	} else {
		const char *rv = json_string_value(json_object_get(json_object_get(seen->live,
		    "metadata"), "resourceVersion"));

		snprintf(ref.resource_version, sizeof(ref.resource_version), "%s", rv ? rv : "");
	}
	drop_group_pods(t, j, seen->pods, g, man, "");
	if (strcmp(why, "NodeDeleted") != 0)
		drop_group_pods(t, j, seen->pods, g, man, lost);
	pl = moved(p.placement, g, lost, p.spare);
	rec.old = p.placement;
	rec.placement = pl;
	rec.manifest = man;
	rec.rv = ref.resource_version;
	rec.data = json_pack("{s:s, s:s, s:i, s:s, s:s, s:i}", "lost_node", lost, "spare_node",
	    p.spare, "group", g, "domain", p.domain, "why", why, "pods", p.pods);
	snprintf(rec.msg, sizeof(rec.msg), "repaired: %s lost (%s); group %d re-pinned to the "
	    "spare %s in %s", lost, why, g, p.spare, p.domain);
	if (!db_tx(record_tx, &rec, &e)) {
		if (e.status != 409)
			log_warn(NULL, "status", "cannot record a repair", "{s:s, s:s}", "job", j->id,
			    "error", e.msg);
		goto cleanup;
	}
	st->events++;
	log_info(NULL, "status", "node repaired", "{s:s, s:s, s:s, s:i}", "job", j->id, "lost",
	    lost, "spare", p.spare, "group", g);
	/* the followed copy names the spare from now on */
	json_decref(j->manifest);
	j->manifest = json_incref(man);
cleanup:
	if (e.status != 0 && e.status != 409)
		log_warn(NULL, "status", "cannot repair", "{s:s, s:s}", "job", j->id, "error",
		    e.msg);
	db_release(c);
	json_decref(rec.data);
	json_decref(pl);
	json_decref(man);
	json_decref(p.spec);
	json_decref(p.placement);
	json_decref(p.rack_nodes);
	json_decref(p.down_nodes);
}
