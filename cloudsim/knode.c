/* cloudsim knode: the writes an API server takes on nodes and pods — DELETE and PATCH of a
 * node, the status subresources of nodes and pods, DELETE of a pod, strategic merge patch —
 * and the controllers that act on them each tick: the node lifecycle controller (NotReady
 * taints), taint-based eviction (NoExecute) and the pod garbage collector (pods bound to
 * deleted nodes).  Providers' spot reclaims are in spot.c; reads stay in kube.c. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cloudsim/cs.h"
#include "core/jsonx.h"

/* The merge key of a list field under strategic merge patch (the patchMergeKey of the
 * Kubernetes types); a list not named here is replaced whole (atomic lists such as
 * spec.taints and status.containerStatuses). */
static const struct {
	const char *field, *key;
} merge_keys[] = {
	{ "conditions", "type" },
	{ "addresses", "type" },
	{ "containers", "name" },
	{ "initContainers", "name" },
	{ "volumes", "name" },
	{ "env", "name" },
};

static const char *
merge_key(const char *field)
{
	for (size_t i = 0; i < sizeof(merge_keys) / sizeof(merge_keys[0]); i++)
		if (strcmp(merge_keys[i].field, field) == 0)
			return merge_keys[i].key;
	return NULL;
}

static bool
directive(const char *k)
{
	return k[0] == '$';	/* $patch, $retainKeys, $setElementOrder/x, $deleteFromPrimitiveList/x */
}

static json_t *
strip(json_t *v)
{
	json_t *c = json_deep_copy(v);

	if (json_is_object(c))
		json_object_del(c, "$patch");
	return c;
}

static void
merge_list(json_t *dst, json_t *patch, const char *mk)
{
	size_t i, j;
	json_t *e, *d;

	json_array_foreach(patch, i, e) {
		const char *key = json_string_value(json_object_get(e, mk)),
		    *op = json_string_value(json_object_get(e, "$patch"));
		bool found = false;

		if (op != NULL && strcmp(op, "replace") == 0) {
			json_array_clear(dst);
			continue;
		}
		json_array_foreach(dst, j, d) {
			const char *dk = json_string_value(json_object_get(d, mk));

			if (key == NULL || dk == NULL || strcmp(key, dk) != 0)
				continue;
			found = true;
			if (op != NULL && strcmp(op, "delete") == 0)
				json_array_remove(dst, j);
			else
				cs_merge_patch(d, e, true);
			break;
		}
		if (!found && (op == NULL || strcmp(op, "delete") != 0))
			json_array_append_new(dst, strip(e));
	}
}

void
cs_merge_patch(json_t *dst, json_t *patch, bool strategic)
{
	const char *k;
	json_t *v, *d;

	json_object_foreach(patch, k, v) {
		const char *mk = strategic ? merge_key(k) : NULL;

		if (strategic && directive(k))
			continue;
		d = json_object_get(dst, k);
		if (json_is_null(v)) {
			json_object_del(dst, k);
		} else if (json_is_object(v) && !(strategic && json_is_string(json_object_get(v,
		    "$patch")) && strcmp(json_string_value(json_object_get(v, "$patch")),
		    "replace") == 0)) {
			if (!json_is_object(d)) {
				d = json_object();
				json_object_set_new(dst, k, d);
			}
			cs_merge_patch(d, v, strategic);
		} else if (json_is_array(v) && mk != NULL && json_is_array(d)) {
			merge_list(d, v, mk);
		} else {
			json_object_set_new(dst, k, strategic ? strip(v) : json_deep_copy(v));
		}
	}
}

/* The patch body of rq applied to cur (changed in place); false after answering. */
static bool
apply_patch(struct cs_req *rq, json_t *cur)
{
	const char *ct = cs_header(rq, "Content-Type");
	json_t *body;
	bool strategic;

	if (ct == NULL || (strstr(ct, "merge-patch+json") == NULL &&
	    strstr(ct, "apply-patch") == NULL)) {
		cs_reply_error(rq, 415, "UnsupportedMediaType", "the body of the request was in an "
		    "unknown format - accepted media types include: "
		    "application/strategic-merge-patch+json, application/merge-patch+json");
		return false;
	}
	strategic = strstr(ct, "strategic-merge-patch") != NULL;
	body = json_loadb(rq->body ? rq->body : "", rq->body_len, 0, NULL);
	if (!json_is_object(body)) {
		json_decref(body);
		cs_reply_error(rq, 400, "BadRequest", "error decoding patch: invalid JSON");
		return false;
	}
	cs_merge_patch(cur, body, strategic);
	json_decref(body);
	return true;
}

static struct cs_node *
node_find(struct cs_cluster *cl, const char *name, size_t *at)
{
	for (size_t i = 0; i < cl->nodes.n; i++)
		if (strcmp(((struct cs_node *)cl->nodes.v[i])->name, name) == 0) {
			if (at != NULL)
				*at = i;
			return cl->nodes.v[i];
		}
	return NULL;
}

static struct cs_pod *
pod_find(struct cs_cluster *cl, const char *ns, const char *name, size_t *at)
{
	for (size_t i = 0; i < cl->pods.n; i++) {
		struct cs_pod *p = cl->pods.v[i];

		if (strcmp(p->ns, ns) == 0 && strcmp(p->name, name) == 0) {
			if (at != NULL)
				*at = i;
			return p;
		}
	}
	return NULL;
}

static double
parse_time(const char *s)
{
	struct tm tm;

	memset(&tm, 0, sizeof(tm));
	if (s == NULL || strptime(s, "%Y-%m-%dT%H:%M:%S", &tm) == NULL)
		return 0;
	return (double)timegm(&tm);
}

/* Whether taints (an array) are valid node taints; otherwise answers 422. */
static bool
taints_ok(struct cs_req *rq, const char *node, json_t *taints)
{
	size_t i;
	json_t *t;

	if (taints != NULL && !json_is_array(taints)) {
		cs_reply_error(rq, 422, "Invalid", "Node \"%s\" is invalid: spec.taints: Invalid "
		    "value: must be a list", node);
		return false;
	}
	json_array_foreach(taints, i, t) {
		const char *k = json_string_value(json_object_get(t, "key")),
		    *e = json_string_value(json_object_get(t, "effect"));

		if (k == NULL || *k == '\0') {
			cs_reply_error(rq, 422, "Invalid", "Node \"%s\" is invalid: spec.taints[%zu]."
			    "key: Required value", node, i);
			return false;
		}
		if (e == NULL || (strcmp(e, "NoSchedule") != 0 && strcmp(e, "PreferNoSchedule") != 0 &&
		    strcmp(e, "NoExecute") != 0)) {
			cs_reply_error(rq, 422, "Invalid", "Node \"%s\" is invalid: spec.taints[%zu]."
			    "effect: Unsupported value: \"%s\": supported values: \"NoSchedule\", "
			    "\"PreferNoSchedule\", \"NoExecute\"", node, i, e ? e : "");
			return false;
		}
	}
	return true;
}

static void
reply_node(struct cs *cs, struct cs_req *rq, const struct cs_node *n)
{
	json_t *j = cs_node_json(n);

	cs_reply_object(cs, rq, "Node", j);
	json_decref(j);
}

static void
node_patch(struct cs *cs, struct cs_cluster *cl, struct cs_req *rq, struct cs_node *n,
    bool status)
{
	json_t *cur = cs_node_json(n), *taints, *t, *labels, *conds;
	char ts[32];
	size_t i;

	if (!apply_patch(rq, cur))
		goto cleanup;
	if (status) {	/* the status subresource: only status is taken */
		conds = json_object_get(json_object_get(cur, "status"), "conditions");
		if (!json_is_array(conds)) {
			cs_reply_error(rq, 422, "Invalid", "Node \"%s\" is invalid: status.conditions: "
			    "Invalid value: must be a list", n->name);
			goto cleanup;
		}
		json_decref(n->conditions);
		n->conditions = json_deep_copy(conds);
	} else {	/* the main resource: spec and metadata.labels are taken, status is not */
		taints = json_object_get(json_object_get(cur, "spec"), "taints");
		if (!taints_ok(rq, n->name, taints))
			goto cleanup;
		cs_rfc3339(cs_now(cs), ts);
		json_array_foreach(taints, i, t)	/* as kubectl taint and the API server do */
			if (strcmp(json_string_value(json_object_get(t, "effect")), "NoExecute") == 0 &&
			    json_object_get(t, "timeAdded") == NULL)
				json_object_set_new(t, "timeAdded", json_string(ts));
		json_decref(n->taints);
		n->taints = taints ? json_deep_copy(taints) : json_array();
		n->cordoned = json_is_true(json_object_get(json_object_get(cur, "spec"),
		    "unschedulable"));
		labels = jsonx_meta(cur, "labels");
		if (json_is_object(labels)) {
			json_decref(n->labels);
			n->labels = json_deep_copy(labels);
		}
	}
	cl->rv++;
	cs_reply_json(rq, 200, cs_node_json(n));
cleanup:
	json_decref(cur);
}

/* DELETE of a node: the Node object goes; the pod garbage collector removes its pods at the
 * next tick and KubeRay replaces them.  The pool no longer counts the node (the VM is
 * gone, as after a scale-in), so the autoscaler does not bring it back by itself. */
static void
node_delete(struct cs_cluster *cl, struct cs_req *rq, struct cs_node *n, size_t at)
{
	json_t *st = json_pack("{s:s, s:s, s:{}, s:s, s:{s:s, s:s, s:s}}", "kind", "Status",
	    "apiVersion", "v1", "metadata", "status", "Success", "details", "name", n->name,
	    "kind", "nodes", "uid", n->uid);

	if (n->pool->target > 0)
		n->pool->target--;
	cs_vec_del(&cl->nodes, at);
	cs_node_free(n);
	cl->rv++;
	cs_reply_json(rq, 200, st);
}

static void
pod_patch_status(struct cs_cluster *cl, struct cs_req *rq, struct cs_pod *p)
{
	json_t *cur = cs_pod_json(p), *st;

	if (!apply_patch(rq, cur))
		goto cleanup;
	st = json_object_get(cur, "status");
	if (!json_is_object(st)) {
		cs_reply_error(rq, 422, "Invalid", "Pod \"%s\" is invalid: status: Required value",
		    p->name);
		goto cleanup;
	}
	/* stored and served as given from now on: there is no kubelet to overwrite it */
	json_decref(p->status);
	p->status = json_deep_copy(st);
	snprintf(p->rv, sizeof(p->rv), "%lld", ++cl->rv);
	cs_reply_json(rq, 200, cs_pod_json(p));
cleanup:
	json_decref(cur);
}

bool
cs_pod_gated(const struct cs_pod *p)
{
	return json_array_size(json_object_get(json_object_get(p->obj, "spec"),
	    "schedulingGates")) > 0;
}

static bool
gate_named(json_t *gates, json_t *g)
{
	json_t *x;
	size_t i;

	json_array_foreach(gates, i, x)
		if (json_equal(json_object_get(x, "name"), json_object_get(g, "name")))
			return true;
	return false;
}

/* PATCH of a pod (merge patch, as `kubectl patch pod --type merge`): the API server lets a
 * client change a pod's labels and annotations, and remove scheduling gates but never add
 * one (https://kubernetes.io/docs/concepts/scheduling-eviction/pod-scheduling-readiness/);
 * every other spec field here is immutable. */
static void
pod_patch(struct cs_cluster *cl, struct cs_req *rq, struct cs_pod *p)
{
	json_t *cur = cs_pod_json(p), *before = cs_pod_json(p), *spec, *old, *a, *b, *g, *md;
	size_t i;

	if (!apply_patch(rq, cur))
		goto cleanup;
	spec = json_object_get(cur, "spec");
	old = json_object_get(before, "spec");	/* as served (nodeName set by the scheduler) */
	a = json_deep_copy(spec);
	b = json_deep_copy(old);
	json_object_del(a, "schedulingGates");
	json_object_del(b, "schedulingGates");
	if (!json_equal(a, b)) {
		json_decref(a);
		json_decref(b);
		cs_reply_error(rq, 422, "Invalid", "Pod \"%s\" is invalid: spec: Forbidden: pod "
		    "updates may not change fields other than `spec.containers[*].image`, "
		    "`spec.initContainers[*].image`, `spec.activeDeadlineSeconds`, "
		    "`spec.tolerations` (only additions to existing tolerations), "
		    "`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was "
		    "previously negative) and `spec.schedulingGates` (only deletion)", p->name);
		goto cleanup;
	}
	json_decref(a);
	json_decref(b);
	json_array_foreach(json_object_get(spec, "schedulingGates"), i, g)
		if (!gate_named(json_object_get(old, "schedulingGates"), g)) {
			cs_reply_error(rq, 422, "Invalid", "Pod \"%s\" is invalid: "
			    "spec.schedulingGates: Forbidden: only deletion is allowed, but found new "
			    "scheduling gate '%s'", p->name, json_string_value(json_object_get(g,
			    "name")) ? json_string_value(json_object_get(g, "name")) : "");
			goto cleanup;
		}
	old = json_object_get(p->obj, "spec");
	if (json_array_size(json_object_get(spec, "schedulingGates")) > 0)
		json_object_set(old, "schedulingGates", json_object_get(spec, "schedulingGates"));
	else
		json_object_del(old, "schedulingGates");
	md = json_object_get(cur, "metadata");
	if (json_is_object(json_object_get(p->obj, "metadata"))) {
		if (json_object_get(md, "labels") != NULL)
			json_object_set(json_object_get(p->obj, "metadata"), "labels",
			    json_object_get(md, "labels"));
		if (json_object_get(md, "annotations") != NULL)
			json_object_set(json_object_get(p->obj, "metadata"), "annotations",
			    json_object_get(md, "annotations"));
	}
	snprintf(p->rv, sizeof(p->rv), "%lld", ++cl->rv);
	cs_reply_json(rq, 200, cs_pod_json(p));
cleanup:
	json_decref(cur);
	json_decref(before);
}

bool
cs_knode_handle(struct cs *cs, struct cs_cluster *cl, struct cs_req *rq)
{
	const char *m = rq->method;
	struct cs_node *n;
	struct cs_pod *p;
	size_t at = 0;

	/* seg: k8s C api v1 nodes NAME [status] | api v1 namespaces NS pods NAME [status] */
	if (rq->nseg < 6 || strcmp(rq->seg[2], "api") != 0 || strcmp(rq->seg[3], "v1") != 0)
		return false;
	if (strcmp(rq->seg[4], "nodes") == 0 && (rq->nseg == 7 || strcmp(m, "GET") != 0)) {
		if (rq->nseg == 7 && strcmp(rq->seg[6], "status") != 0)
			return false;
		if (rq->nseg > 7)
			return false;
		if ((n = node_find(cl, rq->seg[5], &at)) == NULL)
			cs_reply_error(rq, 404, "NotFound", "nodes \"%s\" not found", rq->seg[5]);
		else if (strcmp(m, "GET") == 0)
			reply_node(cs, rq, n);
		else if (strcmp(m, "PATCH") == 0)
			node_patch(cs, cl, rq, n, rq->nseg == 7);
		else if (strcmp(m, "DELETE") == 0 && rq->nseg == 6)
			node_delete(cl, rq, n, at);
		else
			cs_reply_error(rq, 405, "MethodNotAllowed", "the server does not allow this "
			    "method on the requested resource");
		return true;
	}
	if (strcmp(rq->seg[4], "namespaces") != 0 || rq->nseg < 8 ||
	    strcmp(rq->seg[6], "pods") != 0 || (rq->nseg == 8 && strcmp(m, "GET") == 0) ||
	    rq->nseg > 9 || (rq->nseg == 9 && strcmp(rq->seg[8], "status") != 0))
		return false;
	if ((p = pod_find(cl, rq->seg[5], rq->seg[7], &at)) == NULL) {
		cs_reply_error(rq, 404, "NotFound", "pods \"%s\" not found", rq->seg[7]);
	} else if (strcmp(m, "GET") == 0) {
		json_t *j = cs_pod_json(p);

		cs_reply_object(cs, rq, "Pod", j);
		json_decref(j);
	} else if (strcmp(m, "PATCH") == 0 && rq->nseg == 9) {
		pod_patch_status(cl, rq, p);
	} else if (strcmp(m, "PATCH") == 0 && rq->nseg == 8) {
		pod_patch(cl, rq, p);
	} else if (strcmp(m, "DELETE") == 0 && rq->nseg == 8) {
		cs_reply_json(rq, 200, cs_pod_json(p));	/* the pod as it was, like the API */
		cs_vec_del(&cl->pods, at);
		cs_pod_free(p);
		cl->rv++;
	} else {
		cs_reply_error(rq, 405, "MethodNotAllowed", "the server does not allow this method "
		    "on the requested resource");
	}
	return true;
}

/* ---- controllers */

json_t *
cs_toleration(json_t *tols, json_t *taint)
{
	const char *tk = json_string_value(json_object_get(taint, "key")),
	    *tv = json_string_value(json_object_get(taint, "value")),
	    *te = json_string_value(json_object_get(taint, "effect"));
	size_t i;
	json_t *t;

	json_array_foreach(tols, i, t) {
		const char *k = json_string_value(json_object_get(t, "key")),
		    *op = json_string_value(json_object_get(t, "operator")),
		    *v = json_string_value(json_object_get(t, "value")),
		    *e = json_string_value(json_object_get(t, "effect"));
		bool exists = op != NULL && strcmp(op, "Exists") == 0;

		if (e != NULL && *e && te != NULL && strcmp(e, te) != 0)
			continue;
		if ((k == NULL || *k == '\0') && exists)
			return t;
		if (k == NULL || tk == NULL || strcmp(k, tk) != 0)
			continue;
		if (exists || strcmp(v ? v : "", tv ? tv : "") == 0)
			return t;
	}
	return NULL;
}

bool
cs_node_ready(const struct cs_node *n)
{
	size_t i;
	json_t *c;

	json_array_foreach(n->conditions, i, c)
		if (strcmp(json_string_value(json_object_get(c, "type")) ?
		    json_string_value(json_object_get(c, "type")) : "", "Ready") == 0)
			return strcmp(json_string_value(json_object_get(c, "status")) ?
			    json_string_value(json_object_get(c, "status")) : "", "True") == 0;
	return true;	/* no conditions stored: the kubelet posts Ready */
}

/* The node lifecycle controller: a node whose Ready condition is False carries
 * node.kubernetes.io/not-ready, Unknown node.kubernetes.io/unreachable, each NoSchedule and
 * NoExecute; a Ready node carries neither. */
static void
lifecycle(struct cs *cs, struct cs_cluster *cl, struct cs_node *n)
{
	const char *want = NULL, *keys[] = { "node.kubernetes.io/not-ready",
	    "node.kubernetes.io/unreachable" };
	size_t i;
	json_t *t, *c;
	bool have = false, changed = false;
	char ts[32];

	json_array_foreach(n->conditions, i, c)
		if (strcmp(json_string_value(json_object_get(c, "type")) ?
		    json_string_value(json_object_get(c, "type")) : "", "Ready") == 0 &&
		    !cs_node_ready(n))
			want = strcmp(json_string_value(json_object_get(c, "status")) ?
			    json_string_value(json_object_get(c, "status")) : "", "False") == 0 ?
			    keys[0] : keys[1];
	for (i = json_array_size(n->taints); i-- > 0;) {
		const char *k = json_string_value(json_object_get(json_array_get(n->taints, i),
		    "key"));

		if (k == NULL || (strcmp(k, keys[0]) != 0 && strcmp(k, keys[1]) != 0))
			continue;
		if (want != NULL && strcmp(k, want) == 0) {
			have = true;
			continue;
		}
		json_array_remove(n->taints, i);
		changed = true;
	}
	if (want != NULL && !have) {
		cs_rfc3339(cs_now(cs), ts);
		t = json_pack("{s:s, s:s}", "key", want, "effect", "NoSchedule");
		json_array_append_new(n->taints, t);
		t = json_pack("{s:s, s:s, s:s}", "key", want, "effect", "NoExecute", "timeAdded", ts);
		json_array_append_new(n->taints, t);
		changed = true;
	}
	if (changed)
		cl->rv++;
}

/* Taint-based eviction: a pod on n that does not tolerate one of its NoExecute taints is
 * deleted now, one that tolerates it for tolerationSeconds when they have passed since the
 * taint's timeAdded (not-ready and unreachable: 300 s, the DefaultTolerationSeconds
 * admission plugin's default, when the pod has no toleration of its own). */
static bool
evicts(struct cs *cs, const struct cs_node *n, const struct cs_pod *p)
{
	json_t *tols = json_object_get(json_object_get(p->obj, "spec"), "tolerations"), *t, *tol;
	size_t i;

	json_array_foreach(n->taints, i, t) {
		const char *k = json_string_value(json_object_get(t, "key")),
		    *e = json_string_value(json_object_get(t, "effect"));
		double secs = -1, added;

		if (e == NULL || strcmp(e, "NoExecute") != 0)
			continue;
		tol = cs_toleration(tols, t);
		if (tol == NULL && k != NULL && (strcmp(k, "node.kubernetes.io/not-ready") == 0 ||
		    strcmp(k, "node.kubernetes.io/unreachable") == 0))
			secs = 300;
		else if (tol == NULL)
			return true;
		else if (json_is_integer(json_object_get(tol, "tolerationSeconds")))
			secs = (double)json_integer_value(json_object_get(tol, "tolerationSeconds"));
		if (secs < 0)
			continue;	/* tolerated for ever */
		added = parse_time(json_string_value(json_object_get(t, "timeAdded")));
		if (cs_now(cs) >= added + secs)
			return true;
	}
	return false;
}

void
cs_node_controllers(struct cs *cs, struct cs_cluster *cl)
{
	size_t i, j;
	char msg[320];

	for (i = 0; i < cl->nodes.n; i++)
		lifecycle(cs, cl, cl->nodes.v[i]);
	for (j = cl->pods.n; j-- > 0;) {
		struct cs_pod *p = cl->pods.v[j];
		struct cs_node *n;

		if (p->node[0] == '\0')
			continue;
		n = node_find(cl, p->node, NULL);
		if (n != NULL && !evicts(cs, n, p))
			continue;
		if (n != NULL) {	/* the taint eviction controller's event, then the delete */
			snprintf(msg, sizeof(msg), "Marking for deletion Pod %s/%s", p->ns, p->name);
			cs_event(cs, cl, p->ns, "Pod", p->name, p->uid, "Normal",
			    "TaintManagerEviction", msg);
		}
		/* else the pod garbage collector: bound to a node that no longer exists */
		cs_vec_del(&cl->pods, j);
		cs_pod_free(p);
		cl->rv++;
	}
}
