/* cloudsim sched: the member clusters' control loops — KubeRay pods for Ray objects, the
 * scheduler (selectors, affinity, taints, resources) and the autoscaler with stockouts.
 * Status progression lives in status.c, spot reclaims in spot.c. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cloudsim/cs.h"
#include "core/jsonx.h"

bool
cs_upgrade_held(struct cs *cs, const struct cs_cluster *cl)
{
	for (size_t i = 0; i < cs->faults.n; i++) {
		struct cs_fault *f = cs->faults.v[i];

		if (f->upgrade_hold && (f->cluster[0] == '\0' || strcmp(f->cluster, cl->name) == 0) &&
		    (f->region[0] == '\0' || strcmp(f->region, cl->region) == 0))
			return true;
	}
	return false;
}

bool
cs_pool_stockout(struct cs *cs, const struct cs_pool *p)
{
	size_t i;

	if (p->stockout)
		return true;
	for (i = 0; i < cs->faults.n; i++) {
		struct cs_fault *f = cs->faults.v[i];

		if (!f->stockout)
			continue;
		if ((f->cluster[0] == '\0' || strcmp(f->cluster, p->cl->name) == 0) &&
		    (f->region[0] == '\0' || strcmp(f->region, p->cl->region) == 0) &&
		    (f->pool[0] == '\0' || strcmp(f->pool, p->name) == 0))
			return true;
	}
	return false;
}

const char *
cs_pod_container(const struct cs_pod *p)
{
	const char *n = json_string_value(json_object_get(json_array_get(json_object_get(
	    json_object_get(p->obj, "spec"), "containers"), 0), "name"));

	return n != NULL ? n : "ray";
}

void
cs_container_started(struct cs *cs, struct cs_cluster *cl, struct cs_pod *p)
{
	char msg[256];

	snprintf(msg, sizeof(msg), "Created container: %s", cs_pod_container(p));
	cs_event(cs, cl, p->ns, "Pod", p->name, p->uid, "Normal", "Created", msg);
	snprintf(msg, sizeof(msg), "Started container %s", cs_pod_container(p));
	cs_event(cs, cl, p->ns, "Pod", p->name, p->uid, "Normal", "Started", msg);
}

static void
pod_remove(struct cs_cluster *cl, size_t i)
{
	cs_pod_free(cl->pods.v[i]);
	cs_vec_del(&cl->pods, i);
}

static void
add_requests(json_t *res, long long *cpu, long long *mem, long long *gpu, long long *tpu)
{
	json_t *req = json_object_get(res, "requests"), *lim = json_object_get(res, "limits");
	const char *names[] = { "cpu", "memory", "nvidia.com/gpu", "google.com/tpu" };
	long long *out[] = { cpu, mem, gpu, tpu };
	size_t k;

	for (k = 0; k < 4; k++) {
		json_t *v = json_object_get(req, names[k]);
		long long q;

		if (v == NULL)
			v = json_object_get(lim, names[k]);
		q = v ? cs_json_quantity(v, k == 0) : 0;
		if (q > 0)
			*out[k] += q;
	}
}

static struct cs_pod *
pod_new(struct cs *cs, struct cs_cluster *cl, struct cs_object *o, const char *group,
    json_t *tmpl, bool head)
{
	struct cs_pod *p = calloc(1, sizeof(*p));
	json_t *md = json_object_get(tmpl, "metadata"), *labels, *c, *meta;
	char sfx[6];
	size_t i;

	if (p == NULL)
		abort();
	cs_rand_suffix(sfx, sizeof(sfx));
	if (head)
		snprintf(p->name, sizeof(p->name), "%.100s-head-%s", o->cluster_name, sfx);
	else
		snprintf(p->name, sizeof(p->name), "%.80s-%.40s-worker-%s", o->cluster_name, group,
		    sfx);
	snprintf(p->ns, sizeof(p->ns), "%s", o->ns);
	snprintf(p->owner_uid, sizeof(p->owner_uid), "%s", o->uid);
	snprintf(p->group, sizeof(p->group), "%s", group);
	p->head = head;
	cs_uuid(p->uid);
	p->created = cs_now(cs);
	labels = json_is_object(json_object_get(md, "labels")) ?
	    json_deep_copy(json_object_get(md, "labels")) : json_object();
	json_object_set_new(labels, "ray.io/cluster", json_string(o->cluster_name));
	json_object_set_new(labels, "ray.io/node-type", json_string(head ? "head" : "worker"));
	json_object_set_new(labels, "ray.io/group", json_string(head ? "headgroup" : group));
	json_object_set_new(labels, "app.kubernetes.io/created-by",
	    json_string("kuberay-operator"));
	meta = json_pack("{s:o, s:[{s:s, s:s, s:s, s:s, s:b, s:b}]}", "labels", labels,
	    "ownerReferences", "apiVersion", "ray.io/v1", "kind",
	    strcmp(o->kind, "RayCluster") == 0 ? "RayCluster" : o->kind, "name", o->name, "uid",
	    o->uid, "controller", 1, "blockOwnerDeletion", 1);
	if (json_is_object(json_object_get(md, "annotations")))
		json_object_set(meta, "annotations", json_object_get(md, "annotations"));
	p->obj = json_pack("{s:o, s:o}", "metadata", meta, "spec",
	    json_is_object(json_object_get(tmpl, "spec")) ?
	    json_deep_copy(json_object_get(tmpl, "spec")) : json_object());
	json_array_foreach(json_object_get(json_object_get(tmpl, "spec"), "containers"), i, c)
		add_requests(json_object_get(c, "resources"), &p->cpu_m, &p->mem_b, &p->gpu,
		    &p->tpu);
	snprintf(p->rv, sizeof(p->rv), "%lld", ++cl->rv);
	cs_vec_push(&cl->pods, p);
	return p;
}

static int
owned(struct cs_cluster *cl, const char *uid, const char *group, bool head)
{
	size_t i;
	int n = 0;

	for (i = 0; i < cl->pods.n; i++) {
		struct cs_pod *p = cl->pods.v[i];

		if (strcmp(p->owner_uid, uid) == 0 && p->head == head &&
		    (head || strcmp(p->group, group) == 0))
			n++;
	}
	return n;
}

static void
trim_group(struct cs_cluster *cl, const char *uid, const char *group, bool head, int keep)
{
	size_t i = cl->pods.n;

	while (i-- > 0) {
		struct cs_pod *p = cl->pods.v[i];

		if (strcmp(p->owner_uid, uid) == 0 && p->head == head &&
		    (head || strcmp(p->group, group) == 0) && owned(cl, uid, group, head) > keep)
			pod_remove(cl, i);
	}
}

/* A scale-down deletes the pods the autoscaler named in scaleStrategy.workersToDelete
 * first (KubeRay, https://github.com/ray-project/kuberay/pull/208), at most `over` of
 * them; the rest as before.  Returns the group's pods left. */
static int
delete_named(struct cs_cluster *cl, const char *uid, const char *group, json_t *names,
	     int over, int have)
{
	json_t *v;
	size_t k, i;

	json_array_foreach(names, k, v) {
		if (over <= 0 || !json_is_string(v))
			break;
		for (i = 0; i < cl->pods.n; i++) {
			struct cs_pod *p = cl->pods.v[i];

			if (strcmp(p->owner_uid, uid) == 0 && !p->head &&
			    strcmp(p->group, group) == 0 && strcmp(p->name, json_string_value(v)) == 0) {
				pod_remove(cl, i);
				over--;
				have--;
				break;
			}
		}
	}
	return have;
}

/* Desired worker pods of group g (replicas clamped, times numOfHosts). */
int
cs_group_want(json_t *g)
{
	json_t *r = json_object_get(g, "replicas"), *mn = json_object_get(g, "minReplicas"),
	    *mx = json_object_get(g, "maxReplicas"), *h = json_object_get(g, "numOfHosts");
	long long want = json_is_integer(r) ? json_integer_value(r) :
	    json_is_integer(mn) ? json_integer_value(mn) : 1;
	long long hosts = json_is_integer(h) && json_integer_value(h) > 0 ?
	    json_integer_value(h) : 1;

	if (json_is_integer(mn) && want < json_integer_value(mn))
		want = json_integer_value(mn);
	if (json_is_integer(mx) && want > json_integer_value(mx))
		want = json_integer_value(mx);
	if (json_is_true(json_object_get(g, "suspend")))
		want = 0;
	want *= hosts;
	return want < 0 ? 0 : want > 512 ? 512 : (int)want;
}

static void
reconcile(struct cs *cs, struct cs_cluster *cl, struct cs_object *o)
{
	json_t *spec = cs_object_cluster_spec(o), *g;
	size_t i;

	if (spec == NULL || !cs_object_active(cs, o)) {
		i = cl->pods.n;
		while (i-- > 0)
			if (strcmp(((struct cs_pod *)cl->pods.v[i])->owner_uid, o->uid) == 0)
				pod_remove(cl, i);
		return;
	}
	if (owned(cl, o->uid, "", true) == 0)
		pod_new(cs, cl, o, "headgroup", json_object_get(json_object_get(spec,
		    "headGroupSpec"), "template"), true);
	json_array_foreach(json_object_get(spec, "workerGroupSpecs"), i, g) {
		const char *name = json_string_value(json_object_get(g, "groupName"));
		int want = cs_group_want(g), have;

		if (name == NULL)
			continue;
		have = owned(cl, o->uid, name, false);
		if (have > want)
			have = delete_named(cl, o->uid, name, json_object_get(json_object_get(g,
			    "scaleStrategy"), "workersToDelete"), have - want, have);
		for (; have < want; have++) {
			json_t *h = json_object_get(g, "numOfHosts");
			int hosts = json_is_integer(h) && json_integer_value(h) > 1 ?
			    (int)json_integer_value(h) : 1;
			struct cs_pod *p = pod_new(cs, cl, o, name, json_object_get(g, "template"),
			    false);

			/* KubeRay creates a multi-host replica's pods together, labelled with it */
			p->hosts = hosts;
			p->replica = have / hosts;
			if (hosts > 1)
				json_object_set_new(jsonx_meta(p->obj, "labels"),
				    "ray.io/worker-group-replica-index",
				    json_sprintf("%d", p->replica));
		}
		trim_group(cl, o->uid, name, false, want);
	}
}

/* After a RayService upgrade: the pods carry the new cluster's label and images (the
 * simulator keeps them running instead of starting a second set). */
void
cs_object_retemplate(struct cs_cluster *cl, struct cs_object *o)
{
	json_t *spec = cs_object_cluster_spec(o), *g, *tmpl;
	size_t i, k;

	for (i = 0; i < cl->pods.n; i++) {
		struct cs_pod *p = cl->pods.v[i];
		json_t *cs_, *c;

		if (strcmp(p->owner_uid, o->uid) != 0)
			continue;
		tmpl = NULL;
		if (p->head) {
			tmpl = json_object_get(json_object_get(spec, "headGroupSpec"), "template");
		} else {
			json_array_foreach(json_object_get(spec, "workerGroupSpecs"), k, g)
				if (json_is_string(json_object_get(g, "groupName")) && strcmp(p->group,
				    json_string_value(json_object_get(g, "groupName"))) == 0)
					tmpl = json_object_get(g, "template");
		}
		cs_ = json_object_get(json_object_get(tmpl, "spec"), "containers");
		json_array_foreach(json_object_get(json_object_get(p->obj, "spec"), "containers"), k,
		    c)
			if (json_object_get(json_array_get(cs_, k), "image") != NULL)
				json_object_set(c, "image", json_object_get(json_array_get(cs_, k),
				    "image"));
		json_object_set_new(jsonx_meta(p->obj, "labels"), "ray.io/cluster",
		    json_string(o->cluster_name));
	}
}

void
cs_object_changed(struct cs *cs, struct cs_cluster *cl, struct cs_object *o)
{
	cs_kueue_gate(cs, cl, o);	/* Kueue suspends what it cannot admit */
	reconcile(cs, cl, o);
	cs_status_update(cs, cl, o);
}

/* o has an owner reference to uid (the garbage collector deletes it with its owner). */
static bool
owned_by(struct cs_object *o, const char *uid)
{
	json_t *refs = jsonx_meta(o->live, "ownerReferences"), *r;
	size_t i;

	json_array_foreach(refs, i, r) {
		const char *u = json_string_value(json_object_get(r, "uid"));

		if (u != NULL && strcmp(u, uid) == 0)
			return true;
	}
	return false;
}

void
cs_object_deleted(struct cs *cs, struct cs_cluster *cl, struct cs_object *o)
{
	size_t i;

	/* dependents first (a RayCronJob's RayJobs), as the garbage collector does */
	for (i = 0; i < cl->objects.n;) {
		struct cs_object *d = cl->objects.v[i];

		if (d != o && !d->deleted && owned_by(d, o->uid)) {
			cs_object_deleted(cs, cl, d);
			i = 0;
			continue;
		}
		i++;
	}
	o->deleted = true;
	reconcile(cs, cl, o);
	if (strcmp(o->kind, "RayService") == 0) {	/* its serve Service (status.c) goes too */
		char svc[192];

		snprintf(svc, sizeof(svc), "%s-serve-svc", o->name);
		cs_plain_del(cl, "services", o->ns, svc);
	}
	for (i = 0; i < cl->objects.n; i++)
		if (cl->objects.v[i] == o) {
			cs_vec_del(&cl->objects, i);
			break;
		}
	cl->rv++;
	cs_object_free(o);
	(void)cs;
}

/* ---- scheduling */

static bool
tolerated(json_t *tols, json_t *taint)
{
	const char *te = json_string_value(json_object_get(taint, "effect"));

	return (te != NULL && strcmp(te, "PreferNoSchedule") == 0) ||
	    cs_toleration(tols, taint) != NULL;
}

static bool
expr_match(json_t *ex, json_t *labels)
{
	const char *k = json_string_value(json_object_get(ex, "key")),
	    *op = json_string_value(json_object_get(ex, "operator"));
	const char *v = k ? json_string_value(json_object_get(labels, k)) : NULL;
	json_t *vals = json_object_get(ex, "values"), *x;
	bool in = false;
	size_t i;

	if (k == NULL || op == NULL)
		return false;
	json_array_foreach(vals, i, x)
		if (v != NULL && json_is_string(x) && strcmp(v, json_string_value(x)) == 0)
			in = true;
	if (strcmp(op, "In") == 0)
		return in;
	if (strcmp(op, "NotIn") == 0)
		return !in;
	if (strcmp(op, "Exists") == 0)
		return v != NULL;
	if (strcmp(op, "DoesNotExist") == 0)
		return v == NULL;
	if ((strcmp(op, "Gt") == 0 || strcmp(op, "Lt") == 0) && v != NULL &&
	    json_is_string(json_array_get(vals, 0))) {
		long long a = atoll(v), b = atoll(json_string_value(json_array_get(vals, 0)));

		return op[0] == 'G' ? a > b : a < b;
	}
	return false;
}

/* nodeSelector and required node affinity. */
static bool
selects(json_t *spec, json_t *labels)
{
	json_t *ns = json_object_get(spec, "nodeSelector"), *terms, *term, *ex;
	const char *k;
	json_t *v;
	size_t i, j;

	json_object_foreach(ns, k, v) {
		const char *have = json_string_value(json_object_get(labels, k));

		if (have == NULL || !json_is_string(v) || strcmp(have, json_string_value(v)) != 0)
			return false;
	}
	terms = json_object_get(json_object_get(json_object_get(json_object_get(spec,
	    "affinity"), "nodeAffinity"), "requiredDuringSchedulingIgnoredDuringExecution"),
	    "nodeSelectorTerms");
	if (!json_is_array(terms) || json_array_size(terms) == 0)
		return true;
	json_array_foreach(terms, i, term) {
		bool all = true;

		json_array_foreach(json_object_get(term, "matchExpressions"), j, ex)
			if (!expr_match(ex, labels))
				all = false;
		if (all)
			return true;
	}
	return false;
}

struct why {
	int	 selector, taint, cpu, mem, gpu, tpu, notready, affinity, slice;
	char	 taint_text[160];
};

static void
used_on(struct cs_cluster *cl, const char *node, long long u[4])
{
	size_t i;

	u[0] = u[1] = u[2] = u[3] = 0;
	for (i = 0; i < cl->pods.n; i++) {
		struct cs_pod *p = cl->pods.v[i];

		if (strcmp(p->node, node) == 0) {
			u[0] += p->cpu_m;
			u[1] += p->mem_b;
			u[2] += p->gpu;
			u[3] += p->tpu;
		}
	}
}

/* Whether pod p fits node n given used u; records the reason when not. */
/* Labels of pod q match a podAffinity term's labelSelector (same namespace). */
static bool
term_selects(json_t *term, const struct cs_pod *p, const struct cs_pod *q)
{
	json_t *sel = json_object_get(term, "labelSelector"), *ex, *v;
	json_t *labels = jsonx_meta(q->obj, "labels");
	const char *k;
	size_t i;

	if (strcmp(p->ns, q->ns) != 0 || !json_is_object(sel))
		return false;
	json_object_foreach(json_object_get(sel, "matchLabels"), k, v)
		if (!json_is_string(v) || json_string_value(json_object_get(labels, k)) == NULL ||
		    strcmp(json_string_value(json_object_get(labels, k)), json_string_value(v)) != 0)
			return false;
	json_array_foreach(json_object_get(sel, "matchExpressions"), i, ex)
		if (!expr_match(ex, labels))
			return false;
	return true;
}

static struct cs_node *
node_named(struct cs_cluster *cl, const char *name)
{
	for (size_t i = 0; i < cl->nodes.n; i++)
		if (strcmp(((struct cs_node *)cl->nodes.v[i])->name, name) == 0)
			return cl->nodes.v[i];
	return NULL;
}

/* Required podAffinity: n shares the term's topology key value with a node running a
 * matching pod; when no matching pod runs yet, a pod matching its own term may go first
 * (the scheduler's rule for the first pod of a co-located group). */
static bool
pod_affinity_ok(struct cs_cluster *cl, const struct cs_pod *p, const struct cs_node *n)
{
	json_t *terms = json_object_get(json_object_get(json_object_get(json_object_get(p->obj,
	    "spec"), "affinity"), "podAffinity"), "requiredDuringSchedulingIgnoredDuringExecution");
	json_t *term;
	size_t i, k;

	json_array_foreach(terms, i, term) {
		const char *key = json_string_value(json_object_get(term, "topologyKey"));
		const char *mine = key ? json_string_value(json_object_get(n->labels, key)) : NULL;
		bool any = false, ok = false;

		for (k = 0; k < cl->pods.n; k++) {
			const struct cs_pod *q = cl->pods.v[k];
			const struct cs_node *qn;
			const char *theirs;

			if (q == p || q->node[0] == '\0' || !term_selects(term, p, q))
				continue;
			any = true;
			qn = node_named(cl, q->node);
			theirs = qn && key ? json_string_value(json_object_get(qn->labels, key)) : NULL;
			if (mine != NULL && theirs != NULL && strcmp(mine, theirs) == 0)
				ok = true;
		}
		if (!ok && (any || !term_selects(term, p, p) || mine == NULL))
			return false;
	}
	return true;
}

/* The slice node n is in: its node pool, or on a dynamic-slicing pool (tpuslice.c) the
 * Slice formed on it (cloud.google.com/gke-tpu-slice), NULL when none is. */
static bool
same_slice(const struct cs_node *a, const struct cs_node *b)
{
	const char *x, *y;

	if (!a->pool->dynamic_slicing && !b->pool->dynamic_slicing)
		return a->pool == b->pool;
	x = json_string_value(json_object_get(a->labels, "cloud.google.com/gke-tpu-slice"));
	y = json_string_value(json_object_get(b->labels, "cloud.google.com/gke-tpu-slice"));
	return x != NULL && y != NULL && strcmp(x, y) == 0;
}

/* GKE multi-host TPU: each replica is one whole slice (one node pool, or one Slice of a
 * dynamic-slicing pool): a node whose slice runs TPU pods of another replica, or not the
 * slice of this replica's placed pods, is out. */
static bool
slice_ok(struct cs_cluster *cl, const struct cs_pod *p, const struct cs_node *n)
{
	size_t k;

	if (p->tpu <= 0 || p->hosts <= 1)
		return true;
	for (k = 0; k < cl->pods.n; k++) {
		const struct cs_pod *q = cl->pods.v[k];
		const struct cs_node *qn;
		bool same;

		if (q == p || q->node[0] == '\0' || q->tpu <= 0)
			continue;
		qn = node_named(cl, q->node);
		if (qn == NULL)
			continue;
		same = strcmp(q->owner_uid, p->owner_uid) == 0 && strcmp(q->group, p->group) == 0 &&
		    q->replica == p->replica;
		if (same && !same_slice(qn, n))
			return false;	/* the replica's other hosts are on another slice */
		if (!same && same_slice(qn, n))
			return false;	/* the slice belongs to another replica */
	}
	return true;
}

static bool
fits(struct cs_cluster *cl, const struct cs_pod *p, const struct cs_node *n,
     const long long u[4], struct why *w)
{
	json_t *spec = json_object_get(p->obj, "spec"), *t;
	size_t i;

	if (n->cordoned) {
		w->notready++;
		return false;
	}
	if (!selects(spec, n->labels)) {
		w->selector++;
		return false;
	}
	json_array_foreach(n->taints, i, t)
		if (!tolerated(json_object_get(spec, "tolerations"), t)) {
			w->taint++;
			snprintf(w->taint_text, sizeof(w->taint_text), "{%s: %s}",
			    json_string_value(json_object_get(t, "key")),
			    json_string_value(json_object_get(t, "value")) ?
			    json_string_value(json_object_get(t, "value")) : "");
			return false;
		}
	if (p->cpu_m > n->cpu_m - u[0]) {
		w->cpu++;
		return false;
	}
	if (p->mem_b > n->mem_b - u[1]) {
		w->mem++;
		return false;
	}
	if (p->gpu > n->gpu - u[2]) {
		w->gpu++;
		return false;
	}
	if (p->tpu > n->tpu - u[3]) {
		w->tpu++;
		return false;
	}
	if (cl != NULL && !pod_affinity_ok(cl, p, n)) {
		w->affinity++;
		return false;
	}
	if (cl != NULL && !slice_ok(cl, p, n)) {
		w->slice++;
		return false;
	}
	return true;
}

static void
why_text(const struct why *w, size_t total, char *out, size_t n)
{
	int off = snprintf(out, n, "0/%zu nodes are available:", total);
	const char *sep = "";

#define WHY(cnt, fmt, ...) do {							\
	if ((cnt) > 0 && off < (int)n) {					\
		off += snprintf(out + off, n - (size_t)off, "%s %d " fmt, sep, cnt,	\
		    ##__VA_ARGS__);						\
		sep = ",";							\
	}									\
} while (0)
	WHY(w->cpu, "Insufficient cpu");
	WHY(w->mem, "Insufficient memory");
	WHY(w->tpu, "Insufficient google.com/tpu");
	WHY(w->gpu, "Insufficient nvidia.com/gpu");
	WHY(w->selector, "node(s) didn't match Pod's node affinity/selector");
	WHY(w->affinity, "node(s) didn't match pod affinity rules");
	WHY(w->slice, "node(s) belong to a TPU slice of another replica, or not to this "
	    "replica's slice");
	WHY(w->taint, "node(s) had untolerated taint %s", w->taint_text);
	WHY(w->notready, "node(s) were unschedulable");
#undef WHY
	if (off < (int)n)
		snprintf(out + off, n - (size_t)off, ". preemption: 0/%zu nodes are available: %zu "
		    "Preemption is not helpful for scheduling.", total, total);
}

/* The pod names a ProvisioningRequest it consumes (annotation
 * autoscaling.x-k8s.io/consume-provisioning-request). */
static bool
consumes_request(const struct cs_pod *p)
{
	return json_string_value(json_object_get(jsonx_meta(p->obj, "annotations"),
	    "autoscaling.x-k8s.io/consume-provisioning-request")) != NULL;
}

/* Asks the autoscaler for a node that would take p; emits its events. */
static void
autoscale(struct cs *cs, struct cs_cluster *cl, struct cs_pod *p, double now)
{
	size_t i;
	char msg[512];
	bool any = false;

	if (p->scale_req)
		return;
	for (i = 0; i < cl->npools; i++) {
		struct cs_pool *pool = &cl->pools[i];
		struct cs_node *probe;
		struct why w = { 0 };
		long long zero[4] = { 0, 0, 0, 0 };
		bool ok;

		if (!pool->autoscale && pool->target >= pool->max)
			continue;
		if (strcmp(pool->capacity, "flex_start") == 0) {
			/* queued provisioning: the pool grows only through a ProvisioningRequest,
			 * all of its nodes at once (provisioning_tick); a pod consuming one waits
			 * for it */
			any = any || consumes_request(p);
			continue;
		}
		probe = cs_node_build(pool, pool->next_index, now);
		ok = fits(NULL, p, probe, zero, &w);
		cs_node_free(probe);
		if (!ok)
			continue;
		any = true;
		if (cs_pool_stockout(cs, pool)) {
			/* the autoscaler's Warning FailedScaleUp on the pod, in GKE's words
			 * ("GCE out of resources": the MIG's GCE_STOCKOUT /
			 * ZONE_RESOURCE_POOL_EXHAUSTED, scale.up.error.out.of.resources in
			 * https://cloud.google.com/kubernetes-engine/docs/how-to/cluster-autoscaler-visibility);
			 * on AWS the Auto Scaling group's InsufficientInstanceCapacity
			 * (https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/troubleshooting-launch.html),
			 * on Azure the scale set's AllocationFailed / SkuNotAvailable
			 * (https://learn.microsoft.com/en-us/troubleshoot/azure/virtual-machines/windows/allocation-failure) */
			if (now - p->last_scale_event >= 30) {
				snprintf(msg, sizeof(msg), "Node scale up in zones %s associated with "
				    "this pod failed: %s. Pod is at risk of not being scheduled.",
				    cl->zone, cl->provider == CS_GKE ? "GCE out of resources" :
				    cl->provider == CS_AKS ? "Azure allocation failed "
				    "(SkuNotAvailable)" : "InsufficientInstanceCapacity");
				cs_event(cs, cl, p->ns, "Pod", p->name, p->uid, "Warning",
				    "FailedScaleUp", msg);
				p->last_scale_event = now;
			}
			continue;
		}
		if (pool->target >= pool->max)
			continue;
		pool->target++;
		if (pool->scale_at == 0)
			pool->scale_at = now + cs->cfg.autoscale_delay_s;
		snprintf(msg, sizeof(msg), "pod triggered scale-up: [{%s %d->%d (max: %d)}]",
		    pool->name, pool->target - 1, pool->target, pool->max);
		cs_event(cs, cl, p->ns, "Pod", p->name, p->uid, "Normal", "TriggeredScaleUp", msg);
		p->scale_req = true;
		return;
	}
	/* Normal NotTriggerScaleUp: no node group can take the pod (cluster-autoscaler FAQ,
	 * "What events are emitted by CA?":
	 * https://github.com/kubernetes/autoscaler/blob/master/cluster-autoscaler/FAQ.md) */
	if (!any && now - p->last_scale_event >= 60) {
		cs_event(cs, cl, p->ns, "Pod", p->name, p->uid, "Normal", "NotTriggerScaleUp",
		    "pod didn't trigger scale-up: no node group can take this pod (max node "
		    "group size reached or it wouldn't fit if a new node is added)");
		p->last_scale_event = now;
	}
}

static void
schedule(struct cs *cs, struct cs_cluster *cl, struct cs_pod *p, double now)
{
	struct cs_node *best = NULL;
	long long best_left = 0, *u;
	struct why w = { 0 };
	size_t i;
	char msg[768];

	for (i = 0; i < cl->nodes.n; i++) {
		struct cs_node *n = cl->nodes.v[i];
		long long left;

		u = n->used;
		if (!fits(cl, p, n, u, &w))
			continue;
		left = (n->gpu + n->tpu - u[2] - u[3]) * 1000000 + (n->cpu_m - u[0]);
		if (best == NULL || left < best_left) {
			best = n;
			best_left = left;
		}
	}
	if (best != NULL) {
		best->used[0] += p->cpu_m;
		best->used[1] += p->mem_b;
		best->used[2] += p->gpu;
		best->used[3] += p->tpu;
		snprintf(p->node, sizeof(p->node), "%s", best->name);
		p->scheduled_at = now;
		snprintf(p->rv, sizeof(p->rv), "%lld", ++cl->rv);
		snprintf(msg, sizeof(msg), "Successfully assigned %s/%s to %s", p->ns, p->name,
		    best->name);
		cs_event(cs, cl, p->ns, "Pod", p->name, p->uid, "Normal", "Scheduled", msg);
		p->unschedulable[0] = '\0';
		return;
	}
	why_text(&w, cl->nodes.n, msg, sizeof(msg));
	if (strcmp(msg, p->unschedulable) != 0) {	/* the PodScheduled condition says it */
		snprintf(p->unschedulable, sizeof(p->unschedulable), "%s", msg);
		snprintf(p->rv, sizeof(p->rv), "%lld", ++cl->rv);
	}
	if (now - p->last_fail_event >= 30 || p->last_fail_event == 0) {
		cs_event(cs, cl, p->ns, "Pod", p->name, p->uid, "Warning", "FailedScheduling", msg);
		p->last_fail_event = now;
	}
	autoscale(cs, cl, p, now);
}

/* GKE flex-start with queued provisioning
 * (https://cloud.google.com/kubernetes-engine/docs/how-to/provisioningrequest), with the
 * conditions of the ProvisioningRequest API (autoscaling.x-k8s.io/v1,
 * https://github.com/kubernetes/autoscaler/blob/master/cluster-autoscaler/apis/provisioningrequest/autoscaling.x-k8s.io/v1/types.go):
 * Accepted when the autoscaler takes the request; Provisioned when "all of the requested
 * resources were created and registered in the cluster".  A queued-provisioning.gke.io
 * request is Accepted when first seen; autoscale_delay_s later, when the flex_start pool
 * its PodTemplates select has room for every pod of every podSet (all or nothing: the
 * pool's max, a stockout), the nodes are added at once and the request becomes
 * Provisioned; until then it waits in the queue.  Its pods then schedule on those nodes. */

/* A pod as a PodTemplate describes it (selectors, tolerations, requests), never added to
 * the cluster; NULL when pt has no template. */
static struct cs_pod *
template_pod(json_t *pt)
{
	json_t *t = json_object_get(pt, "template"), *c;
	struct cs_pod *p;
	size_t i;

	if (!json_is_object(t) || !json_is_object(json_object_get(t, "spec")))
		return NULL;
	if ((p = calloc(1, sizeof(*p))) == NULL)
		abort();
	p->obj = json_pack("{s:o, s:O}", "metadata", json_is_object(json_object_get(t,
	    "metadata")) ? json_incref(json_object_get(t, "metadata")) : json_object(), "spec",
	    json_object_get(t, "spec"));
	json_array_foreach(json_object_get(json_object_get(t, "spec"), "containers"), i, c)
		add_requests(json_object_get(c, "resources"), &p->cpu_m, &p->mem_b, &p->gpu,
		    &p->tpu);
	return p;
}

/* The flex_start pool of cl whose new node takes pod q, and how many of q a node holds
 * (*per); NULL when none. */
static struct cs_pool *
flex_pool_for(struct cs_cluster *cl, const struct cs_pod *q, double now, long long *per)
{
	for (size_t i = 0; i < cl->npools; i++) {
		struct cs_pool *pool = &cl->pools[i];
		struct cs_node *probe;
		long long u[4] = { 0, 0, 0, 0 };
		struct why w = { 0 };

		if (strcmp(pool->capacity, "flex_start") != 0)
			continue;
		probe = cs_node_build(pool, pool->next_index, now);
		*per = 0;
		while (*per < 1000 && fits(NULL, q, probe, u, &w)) {
			u[0] += q->cpu_m;
			u[1] += q->mem_b;
			u[2] += q->gpu;
			u[3] += q->tpu;
			(*per)++;
		}
		cs_node_free(probe);
		if (*per > 0)
			return pool;
	}
	return NULL;
}

/* Adds, all at once, the nodes every podSet of request o needs; false (nothing added) when
 * a PodTemplate is missing or selects no flex_start pool, or a pool lacks the room. */
static bool
provision(struct cs *cs, struct cs_cluster *cl, json_t *o, double now)
{
	const char *ns = json_string_value(json_object_get(json_object_get(o, "metadata"),
	    "namespace"));
	int *need = calloc(cl->npools + 1, sizeof(*need));
	json_t *set;
	size_t i, k;
	bool ok = false;

	if (need == NULL)
		abort();
	json_array_foreach(json_object_get(json_object_get(o, "spec"), "podSets"), i, set) {
		const char *tn = json_string_value(json_object_get(json_object_get(set,
		    "podTemplateRef"), "name"));
		json_t *pt = tn ? cs_plain_get(cl, "podtemplates", ns, tn) : NULL;
		long long count = json_integer_value(json_object_get(set, "count")), per = 0;
		struct cs_pod *q = pt ? template_pod(pt) : NULL;
		struct cs_pool *pool = q ? flex_pool_for(cl, q, now, &per) : NULL;

		cs_pod_free(q);
		if (pool == NULL || count <= 0)
			goto cleanup;
		need[pool - cl->pools] += (int)((count + per - 1) / per);
		ok = true;
	}
	for (k = 0; ok && k < cl->npools; k++)
		if (need[k] > 0 && (cl->pools[k].target + need[k] > cl->pools[k].max ||
		    cs_pool_stockout(cs, &cl->pools[k])))
			ok = false;
	for (k = 0; ok && k < cl->npools; k++)
		for (int n = 0; n < need[k]; n++) {
			cs_node_add(&cl->pools[k], now);
			cl->pools[k].target++;
		}
cleanup:
	free(need);
	return ok;
}

static void
provisioning_tick(struct cs *cs, struct cs_cluster *cl, double now)
{
	const char *key;
	json_t *o;
	char t[32], due[32];

	cs_rfc3339(now, t);
	cs_rfc3339(now - cs->cfg.autoscale_delay_s, due);
	json_object_foreach(cl->plain, key, o) {
		json_t *st, *conds, *c0;
		const char *cls = json_string_value(json_object_get(json_object_get(o, "spec"),
		    "provisioningClassName")), *since;

		if (strncmp(key, "provisioningrequests/", 21) != 0 || cls == NULL ||
		    strcmp(cls, "queued-provisioning.gke.io") != 0)
			continue;
		st = json_object_get(o, "status");
		if (!json_is_object(st)) {
			json_object_set_new(o, "status", json_pack("{s:[{s:s, s:s, s:s, s:s, s:s}]}",
			    "conditions", "type", "Accepted", "status", "True", "reason",
			    "Accepted", "message", "ProvisioningRequest is accepted",
			    "lastTransitionTime", t));
			cl->rv++;
			continue;
		}
		conds = json_object_get(st, "conditions");
		c0 = json_array_get(conds, 0);
		since = json_string_value(json_object_get(c0, "lastTransitionTime"));
		if (json_array_size(conds) != 1 || since == NULL || strcmp(since, due) > 0 ||
		    !provision(cs, cl, o, now))
			continue;
		json_array_append_new(conds, json_pack("{s:s, s:s, s:s, s:s, s:s}", "type",
		    "Provisioned", "status", "True", "reason", "Provisioned", "message",
		    "Provisioning Request was successfully provisioned.", "lastTransitionTime", t));
		cl->rv++;
	}
}

static void
scale(struct cs *cs, struct cs_cluster *cl, double now)
{
	size_t i;

	for (i = 0; i < cl->npools; i++) {
		struct cs_pool *p = &cl->pools[i];
		int have = cs_pool_nodes(cl, p);

		if (have >= p->target) {
			p->scale_at = 0;
			continue;
		}
		if (p->scale_at == 0) {
			p->scale_at = now + cs->cfg.autoscale_delay_s;
			continue;
		}
		if (now < p->scale_at)
			continue;
		if (cs_pool_stockout(cs, p)) {
			p->scale_at = now + cs->cfg.autoscale_delay_s;
			continue;
		}
		while (have++ < p->target)
			cs_node_add(p, now);
		p->scale_at = 0;
		cl->rv++;
	}
}

/* An object annotated cloudsim.fleet.io/outcome: image-pull-backoff never pulls its
 * image: the pod waits in ImagePullBackOff with the kubelet's events. */
static bool
image_pull_fails(struct cs *cs, struct cs_cluster *cl, struct cs_pod *p)
{
	const char *img, *out = NULL;
	char msg[512];
	size_t i;

	for (i = 0; i < cl->objects.n; i++) {
		struct cs_object *o = cl->objects.v[i];

		if (strcmp(o->uid, p->owner_uid) == 0)
			out = json_string_value(json_object_get(jsonx_meta(o->live,
			    "annotations"), "cloudsim.fleet.io/outcome"));
	}
	if (out == NULL || strcmp(out, "image-pull-backoff") != 0)
		return false;
	if (p->waiting[0] != '\0')
		return true;
	img = json_string_value(json_object_get(json_array_get(json_object_get(json_object_get(
	    p->obj, "spec"), "containers"), 0), "image"));
	snprintf(p->waiting, sizeof(p->waiting), "ImagePullBackOff");
	snprintf(msg, sizeof(msg), "Failed to pull image \"%s\": rpc error: code = NotFound "
	    "desc = failed to pull and unpack image \"%s\": not found", img ? img : "",
	    img ? img : "");
	cs_event(cs, cl, p->ns, "Pod", p->name, p->uid, "Warning", "Failed", msg);
	snprintf(msg, sizeof(msg), "Back-off pulling image \"%s\"", img ? img : "");
	cs_event(cs, cl, p->ns, "Pod", p->name, p->uid, "Normal", "BackOff", msg);
	snprintf(p->rv, sizeof(p->rv), "%lld", ++cl->rv);
	return true;
}

/* A pod asking for NVIDIA GPUs whose image is a CPU build (rayproject/ray:<v> without a
 * -gpu / -cuXX tag, no "cuda" or "gpu" in the name) starts, finds no CUDA and exits 1:
 * CrashLoopBackOff with the kubelet's restart back-off (10 s doubling, 300 s cap). */
static bool
image_is_cpu_build(const char *img)
{
	const char *tag = img ? strrchr(img, ':') : NULL, *slash = img ? strrchr(img, '/') : NULL;

	if (img == NULL)
		return false;
	if (tag == NULL || (slash != NULL && slash > tag))
		tag = img;
	return strstr(tag, "-gpu") == NULL && strstr(tag, "-cu") == NULL &&
	    strstr(img, "cuda") == NULL && strstr(img, "gpu") == NULL;
}

static bool
crash_loops(struct cs *cs, struct cs_cluster *cl, struct cs_pod *p, double now)
{
	const char *img = json_string_value(json_object_get(json_array_get(json_object_get(
	    json_object_get(p->obj, "spec"), "containers"), 0), "image"));
	char msg[512];
	double backoff;

	if (p->gpu <= 0 || !image_is_cpu_build(img))
		return false;
	if (p->restarts > 0 && now < p->next_restart)
		return true;
	if (p->restarts == 0) {
		snprintf(msg, sizeof(msg), "Container image \"%s\" already present on machine", img);
		cs_event(cs, cl, p->ns, "Pod", p->name, p->uid, "Normal", "Pulled", msg);
	}
	cs_container_started(cs, cl, p);
	p->restarts++;
	backoff = 10.0;
	for (int i = 1; i < p->restarts && backoff < 300.0; i++)
		backoff *= 2;
	if (backoff > 300.0)
		backoff = 300.0;
	p->next_restart = now + backoff;
	snprintf(p->waiting, sizeof(p->waiting), "CrashLoopBackOff");
	snprintf(msg, sizeof(msg), "Back-off restarting failed container %s in pod %s_%s(%s)",
	    cs_pod_container(p), p->name, p->ns, p->uid);
	cs_event(cs, cl, p->ns, "Pod", p->name, p->uid, "Warning", "BackOff", msg);
	snprintf(p->rv, sizeof(p->rv), "%lld", ++cl->rv);
	return true;
}

void
cs_tick(struct cs *cs)
{
	double now = cs_now(cs);
	size_t c, i;

	for (c = 0; c < cs->nclusters; c++) {
		struct cs_cluster *cl = &cs->clusters[c];

		cs_spot_tick(cs, cl, now);	/* spot.c: reclaims whose notice ran out */
		cs_node_controllers(cs, cl);	/* NotReady, NoExecute evictions, pod GC */
		provisioning_tick(cs, cl, now);
		cs_slice_tick(cs, cl, now);	/* tpuslice.c: GKE dynamic slicing */
		scale(cs, cl, now);
		for (i = 0; i < cl->objects.n; i++)
			reconcile(cs, cl, cl->objects.v[i]);
		for (i = 0; i < cl->nodes.n; i++) {
			struct cs_node *n = cl->nodes.v[i];

			used_on(cl, n->name, n->used);
		}
		for (i = 0; i < cl->pods.n; i++) {
			struct cs_pod *p = cl->pods.v[i];

			if (p->node[0] == '\0') {
				if (!cs_pod_gated(p))	/* a gated pod waits, on no node */
					schedule(cs, cl, p, now);
			} else if (p->running_at == 0 && now >= p->scheduled_at + cs->cfg.pod_start_s &&
			    !image_pull_fails(cs, cl, p) && !crash_loops(cs, cl, p, now)) {
				p->running_at = now;
				snprintf(p->rv, sizeof(p->rv), "%lld", ++cl->rv);
				cs_container_started(cs, cl, p);
			}
		}
		for (i = 0; i < cl->objects.n; i++)
			cs_kueue_tick(cs, cl, cl->objects.v[i]);
		for (i = 0; i < cl->objects.n; i++)
			cs_status_update(cs, cl, cl->objects.v[i]);
	}
}
