/* cloudsim kube: one Kubernetes API server per member cluster (bearer auth, nodes, pods,
 * namespaces, events, label/field selectors, limit/continue paging, Status errors). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cloudsim/cs.h"
#include "core/crypto.h"
#include "core/jsonx.h"

json_t *
cs_node_json(const struct cs_node *n)
{
	char ts[32], cpu[32], mem[32], acc[16];
	json_t *cap, *j, *taints = json_deep_copy(n->taints);
	const char *res = n->tpu ? "google.com/tpu" : "nvidia.com/gpu";

	cs_rfc3339(n->created, ts);
	snprintf(cpu, sizeof(cpu), "%lldm", n->cpu_m);
	snprintf(mem, sizeof(mem), "%lldKi", n->mem_b / 1024);
	snprintf(acc, sizeof(acc), "%lld", n->gpu + n->tpu);
	cap = json_pack("{s:s, s:s, s:s}", "cpu", cpu, "memory", mem, "pods", "110");
	if (n->gpu + n->tpu > 0)
		json_object_set_new(cap, res, json_string(acc));
	j = json_pack("{s:s, s:s, s:{s:s, s:s, s:s, s:s, s:O, s:{s:s}}, s:{s:o}, s:{s:O, s:O, "
	    "s:[{s:s, s:s, s:s, s:s, s:s}], s:{s:s, s:s, s:s}, s:[{s:s, s:s}]}}",
	    "kind", "Node", "apiVersion", "v1",
	    "metadata", "name", n->name, "uid", n->uid, "resourceVersion", "1",
	    "creationTimestamp", ts, "labels", n->labels, "annotations",
	    "node.alpha.kubernetes.io/ttl", "0",
	    "spec", "taints", taints,
	    "status", "capacity", cap, "allocatable", cap, "conditions", "type", "Ready",
	    "status", "True", "reason", "KubeletReady",
	    "message", "kubelet is posting ready status", "lastTransitionTime", ts,
	    "nodeInfo", "kubeletVersion", "v1.30.4", "containerRuntimeVersion",
	    "containerd://1.7.20", "operatingSystem", "linux",
	    "addresses", "type", "Hostname", "address", n->name);
	json_decref(cap);
	if (n->conditions != NULL)	/* as patched through nodes/{n}/status */
		json_object_set(json_object_get(j, "status"), "conditions", n->conditions);
	if (n->cordoned)
		json_object_set_new(json_object_get(j, "spec"), "unschedulable", json_true());
	if (n->pool->cl->provider == CS_GKE)
		json_object_set_new(json_object_get(j, "spec"), "providerID",
		    json_sprintf("gce://%s/%s/%s", n->pool->cl->account, n->zone, n->name));
	else if (n->pool->cl->provider == CS_HYPERPOD)
		json_object_set_new(json_object_get(j, "spec"), "providerID",
		    json_sprintf("aws:///%s/%s", n->zone, n->name + 9));
	return j;
}

json_t *
cs_pod_json(const struct cs_pod *p)
{
	json_t *j = json_deep_copy(p->obj), *md, *spec, *st;
	const char *image = json_string_value(json_object_get(json_array_get(json_object_get(
	    json_object_get(p->obj, "spec"), "containers"), 0), "image"));
	double backoff = 10.0;
	char ts[32], ts2[32];

	for (int i = 1; i < p->restarts && backoff < 300.0; i++)
		backoff *= 2;	/* the kubelet's restart back-off: 10 s doubling, 300 s cap */
	if (backoff > 300.0)
		backoff = 300.0;
	if (!json_is_object(j))
		j = json_object();
	json_object_set_new(j, "apiVersion", json_string("v1"));
	json_object_set_new(j, "kind", json_string("Pod"));
	md = json_object_get(j, "metadata");
	if (!json_is_object(md)) {
		md = json_object();
		json_object_set_new(j, "metadata", md);
	}
	cs_rfc3339(p->created, ts);
	json_object_set_new(md, "name", json_string(p->name));
	json_object_set_new(md, "namespace", json_string(p->ns));
	json_object_set_new(md, "uid", json_string(p->uid));
	json_object_set_new(md, "resourceVersion", json_string(p->rv));
	json_object_set_new(md, "creationTimestamp", json_string(ts));
	spec = json_object_get(j, "spec");
	if (json_is_object(spec) && p->node[0])
		json_object_set_new(spec, "nodeName", json_string(p->node));
	if (p->oom_at > 0) {
		/* OOM-killed (cloudsim/status.c oom_kill): exit 137, reason OOMKilled, as the
		 * kubelet reports it — the container restarted with the kill in lastState, or
		 * (restartPolicy Never) terminated with the pod Failed */
		char killed[32], first[32];
		json_t *term;

		cs_rfc3339(p->oom_at, killed);
		cs_rfc3339(p->oom_started, first);
		term = json_pack("{s:{s:i, s:s, s:s, s:s}}", "terminated", "exitCode", 137,
		    "reason", "OOMKilled", "startedAt", first, "finishedAt", killed);
		if (p->oom_final) {
			st = json_pack("{s:s, s:s, s:s, s:[{s:s, s:s}, {s:s, s:s, s:s}], s:[{s:s, s:b,"
			    " s:b, s:i, s:s, s:o}]}", "phase", "Failed", "startTime", first, "podIP",
			    "10.8.0.10", "conditions", "type", "PodScheduled", "status", "True", "type",
			    "Ready", "status", "False", "reason", "ContainersNotReady",
			    "containerStatuses",
			    "name", cs_pod_container(p), "ready", 0, "started", 0, "restartCount",
			    p->restarts, "image", image ? image : "", "state", term);
		} else {
			cs_rfc3339(p->running_at, ts2);
			st = json_pack("{s:s, s:s, s:s, s:[{s:s, s:s}, {s:s, s:s}], s:[{s:s, s:b,"
			    " s:b, s:i, s:s, s:{s:{s:s}}, s:o}]}", "phase", "Running", "startTime",
			    first, "podIP", "10.8.0.10", "conditions", "type", "PodScheduled",
			    "status", "True", "type", "Ready", "status", "True", "containerStatuses",
			    "name", cs_pod_container(p), "ready", 1, "started", 1, "restartCount",
			    p->restarts, "image", image ? image : "", "state", "running", "startedAt",
			    ts2, "lastState", term);
		}
	} else if (p->running_at > 0) {
		cs_rfc3339(p->running_at, ts2);
		st = json_pack("{s:s, s:s, s:s, s:[{s:s, s:s}, {s:s, s:s}], s:[{s:s, s:b, s:b,"
		    " s:i, s:s, s:{s:{s:s}}}]}", "phase", "Running",
		    "startTime", ts2, "podIP", "10.8.0.10", "conditions", "type", "PodScheduled",
		    "status", "True", "type", "Ready", "status", "True",
		    "containerStatuses", "name", cs_pod_container(p), "ready", 1, "started", 1,
		    "restartCount", p->restarts, "image", image ? image : "", "state", "running",
		    "startedAt", ts2);
	} else if (p->node[0] && p->restarts > 0) {
		char why[320];

		snprintf(why, sizeof(why), "back-off %.0fs restarting failed container=%s pod=%s_%s(%s)",
		    backoff, cs_pod_container(p), p->name, p->ns, p->uid);
		/* the kubelet's view of a crash-looping container */
		st = json_pack("{s:s, s:[{s:s, s:s}, {s:s, s:s, s:s}], s:[{s:s, s:b, s:i, s:s,"
		    " s:{s:{s:s, s:s}}, s:{s:{s:i, s:s, s:s}}}]}",
		    "phase", "Running", "conditions", "type", "PodScheduled", "status", "True",
		    "type", "Ready", "status", "False", "reason", "ContainersNotReady",
		    "containerStatuses", "name", cs_pod_container(p), "ready", 0, "restartCount",
		    p->restarts, "image", image ? image : "",
		    "state", "waiting", "reason", "CrashLoopBackOff", "message", why,
		    "lastState", "terminated", "exitCode", 1, "reason", "Error", "message",
		    "RuntimeError: Found no NVIDIA driver on your system (CUDA libraries are "
		    "missing from this image)");
	} else if (p->node[0]) {
		st = json_pack("{s:s, s:[{s:s, s:s}, {s:s, s:s}], s:[{s:s, s:b, s:{s:{s:s}}}]}",
		    "phase", "Pending", "conditions", "type", "PodScheduled", "status", "True",
		    "type", "Ready", "status", "False", "containerStatuses", "name",
		    cs_pod_container(p), "ready", 0, "state", "waiting", "reason",
		    p->waiting[0] ? p->waiting : "ContainerCreating");
	} else if (cs_pod_gated(p)) {
		/* https://kubernetes.io/docs/concepts/scheduling-eviction/pod-scheduling-readiness/:
		 * not considered for scheduling while it has a gate (kubectl: SchedulingGated) */
		st = json_pack("{s:s, s:[{s:s, s:s, s:s, s:s}]}", "phase", "Pending",
		    "conditions", "type", "PodScheduled", "status", "False", "reason",
		    "SchedulingGated", "message", "Scheduling is blocked due to non-empty scheduling "
		    "gates");
	} else {
		/* the scheduler's last verdict, as on a real Pending pod */
		st = json_pack("{s:s, s:[{s:s, s:s, s:s, s:s}]}", "phase", "Pending",
		    "conditions", "type", "PodScheduled", "status", "False", "reason",
		    "Unschedulable", "message", p->unschedulable[0] ? p->unschedulable :
		    "0 nodes are available for this pod");
	}
	json_object_set_new(j, "status", p->status != NULL ? json_deep_copy(p->status) : st);
	if (p->status != NULL)	/* patched through pods/{p}/status: served as given */
		json_decref(st);
	return j;
}

/* ---- selectors */

struct sel_req {
	char	 key[256];
	int	 op;		/* 0 =, 1 !=, 2 exists, 3 !exists, 4 in, 5 notin */
	char	 vals[8][128];
	int	 nvals;
};

static char *
trim(char *s)
{
	char *e;

	while (*s == ' ')
		s++;
	e = s + strlen(s);
	while (e > s && e[-1] == ' ')
		*--e = '\0';
	return s;
}

/* Parses a label selector; false on bad syntax. */
static bool
sel_parse(const char *text, struct sel_req *r, int *nr, int max)
{
	char *buf = strdup(text), *p = buf, *tok;
	bool ok = true;
	int depth = 0;

	*nr = 0;
	for (char *c = buf; *c; c++) {	/* split on commas outside parentheses */
		if (*c == '(')
			depth++;
		else if (*c == ')')
			depth--;
		else if (*c == ',' && depth == 0)
			*c = '\x01';
	}
	while (ok && (tok = strsep(&p, "\x01")) != NULL) {
		struct sel_req *q = &r[*nr];
		char *t = trim(tok), *op;

		if (*t == '\0')
			continue;
		if (*nr >= max) {
			ok = false;
			break;
		}
		memset(q, 0, sizeof(*q));
		if ((op = strstr(t, " notin ")) != NULL || (op = strstr(t, " in ")) != NULL) {
			bool notin = strncmp(op, " notin ", 7) == 0;
			char *lp = strchr(op, '('), *rp = strrchr(op, ')'), *v, *vs;

			*op = '\0';
			if (lp == NULL || rp == NULL || rp < lp) {
				ok = false;
				break;
			}
			*rp = '\0';
			q->op = notin ? 5 : 4;
			vs = lp + 1;
			while ((v = strsep(&vs, ",")) != NULL && q->nvals < 8)
				snprintf(q->vals[q->nvals++], 128, "%s", trim(v));
		} else if ((op = strstr(t, "!=")) != NULL) {
			*op = '\0';
			q->op = 1;
			snprintf(q->vals[0], 128, "%s", trim(op + 2));
			q->nvals = 1;
		} else if ((op = strchr(t, '=')) != NULL) {
			*op = '\0';
			q->op = 0;
			snprintf(q->vals[0], 128, "%s", trim(op + (op[1] == '=' ? 2 : 1)));
			q->nvals = 1;
		} else if (*t == '!') {
			q->op = 3;
			t++;
		} else {
			q->op = 2;
		}
		snprintf(q->key, sizeof(q->key), "%s", trim(t));
		if (q->key[0] == '\0' || strpbrk(q->key, " ()=!") != NULL)
			ok = false;
		(*nr)++;
	}
	free(buf);
	return ok;
}

static bool
sel_match(const struct sel_req *r, int nr, json_t *labels)
{
	int i, k;

	for (i = 0; i < nr; i++) {
		const char *v = json_string_value(json_object_get(labels, r[i].key));
		bool in = false;

		for (k = 0; v != NULL && k < r[i].nvals; k++)
			if (strcmp(v, r[i].vals[k]) == 0)
				in = true;
		switch (r[i].op) {
		case 0: case 4: if (!in) return false; break;
		case 1: case 5: if (in) return false; break;
		case 2: if (v == NULL) return false; break;
		case 3: if (v != NULL) return false; break;
		}
	}
	return true;
}

const char *
cs_jpath(json_t *o, const char *dotted)
{
	char buf[256], *p = buf, *k;

	snprintf(buf, sizeof(buf), "%s", dotted);
	while ((k = strsep(&p, ".")) != NULL)
		o = json_object_get(o, k);
	return json_string_value(o);
}

static bool
field_match(const char *sel, json_t *item)
{
	char *buf = strdup(sel), *p = buf, *t;
	bool ok = true;

	while (ok && (t = strsep(&p, ",")) != NULL) {
		char *op = strstr(t, "!="), *key = t, *val;
		const char *have;
		bool neg = op != NULL;

		if (op == NULL)
			op = strchr(t, '=');
		if (op == NULL)
			continue;
		*op = '\0';
		val = op + (neg ? 2 : (op[1] == '=' ? 2 : 1));
		have = cs_jpath(item, trim(key));
		ok = neg ? (have == NULL || strcmp(have, val) != 0) :
		    (have != NULL && strcmp(have, val) == 0);
	}
	free(buf);
	return ok;
}

bool
cs_kube_filter(const char *ls, const char *fs, json_t *item)
{
	struct sel_req sr[16];
	int nsr = 0;

	if (ls != NULL && (!sel_parse(ls, sr, &nsr, 16) || !sel_match(sr, nsr,
	    jsonx_meta(item, "labels"))))
		return false;
	return fs == NULL || field_match(fs, item);
}

/* Filters, pages and answers a list (items is consumed). */
void
cs_kube_list(struct cs *cs, struct cs_cluster *cl, struct cs_req *rq, const char *kind,
    const char *api, json_t *items)
{
	const char *ls = cs_query(rq, "labelSelector"), *fs = cs_query(rq, "fieldSelector"),
	    *lim = cs_query(rq, "limit"), *cont = cs_query(rq, "continue");
	struct sel_req sr[16];
	int nsr = 0;
	long limit = lim ? atol(lim) : 0, off = 0, i, n;
	json_t *out = json_array(), *md;
	char rv[24];

	if (ls != NULL && !sel_parse(ls, sr, &nsr, 16)) {
		json_decref(items);
		json_decref(out);
		cs_reply_error(rq, 400, "BadRequest", "unable to parse requirement: invalid label "
		    "selector \"%s\"", ls);
		return;
	}
	if (cont != NULL && *cont != '\0') {
		size_t dl = 0;
		uint8_t *d = crypto_b64_decode(cont, &dl);

		char tok[24] = "";

		if (d != NULL && dl > 0 && dl < sizeof(tok))
			memcpy(tok, d, dl);
		if (tok[0] == '\0' || sscanf(tok, "o%ld", &off) != 1 || off < 0) {
			free(d);
			json_decref(items);
			json_decref(out);
			cs_reply_error(rq, 400, "BadRequest", "continue key is not valid");
			return;
		}
		free(d);
	}
	if (limit > cs->cfg.page_size)
		limit = cs->cfg.page_size;
	for (i = 0, n = 0; i < (long)json_array_size(items); i++) {
		json_t *it = json_array_get(items, (size_t)i);

		if (nsr > 0 && !sel_match(sr, nsr, jsonx_meta(it, "labels")))
			continue;
		if (fs != NULL && !field_match(fs, it))
			continue;
		if (n++ < off)
			continue;
		if (limit > 0 && (long)json_array_size(out) >= limit)
			break;
		json_array_append(out, it);
	}
	snprintf(rv, sizeof(rv), "%lld", cl->rv);
	md = json_pack("{s:s}", "resourceVersion", rv);
	if (i < (long)json_array_size(items)) {
		char tok[32];
		char *enc;

		snprintf(tok, sizeof(tok), "o%ld", off + (long)json_array_size(out));
		enc = crypto_b64url_encode(tok, strlen(tok));
		json_object_set_new(md, "continue", json_string(enc));
		free(enc);
	}
	json_decref(items);
	if (cs_wants_table(rq)) {
		char k[32];

		snprintf(k, sizeof(k), "%.*s", (int)strlen(kind) - 4, kind);	/* "PodList" */
		cs_reply_json(rq, 200, cs_table(cs, k, out, md));
		json_decref(out);
		json_decref(md);
		return;
	}
	cs_reply_json(rq, 200, json_pack("{s:s, s:s, s:o, s:o}", "kind", kind, "apiVersion", api,
	    "metadata", md, "items", out));
}

void
cs_kube_status(struct cs_req *rq, int code, const char *reason, const char *msg,
    const char *name, const char *group, const char *kind, json_t *causes)
{
	json_t *details = json_pack("{s:s, s:s, s:s}", "name", name, "group", group, "kind",
	    kind);

	if (causes != NULL)
		json_object_set_new(details, "causes", causes);
	cs_reply_json(rq, code, json_pack("{s:s, s:s, s:{}, s:s, s:s, s:s, s:o, s:i}", "kind",
	    "Status", "apiVersion", "v1", "metadata", "status", "Failure", "message", msg,
	    "reason", reason, "details", details, "code", code));
}

bool
cs_ns_exists(struct cs_cluster *cl, const char *ns)
{
	size_t i;
	json_t *v;

	json_array_foreach(cl->namespaces, i, v)
		if (strcmp(cs_jpath(v, "metadata.name"), ns) == 0)
			return true;
	return false;
}

/* The component that posts an event with this reason. */
static const char *
component(const char *reason)
{
	static const struct {
		const char *reason, *component;
	} by[] = {
		{ "FailedScheduling", "default-scheduler" },
		{ "Scheduled", "default-scheduler" },
		{ "TriggeredScaleUp", "cluster-autoscaler" },
		{ "NotTriggerScaleUp", "cluster-autoscaler" },
		{ "FailedScaleUp", "cluster-autoscaler" },
		{ "TaintManagerEviction", "taint-eviction-controller" },
		{ "SpotInterruption", "aws-node-termination-handler" },
		{ "RebalanceRecommendation", "aws-node-termination-handler" },
		{ "Cordon", "aws-node-termination-handler" },
		{ "CordonAndDrain", "aws-node-termination-handler" },
		{ "PreemptScheduled", "custom-plugin-monitor" },	/* AKS node problem detector */
		{ "Preempt", "custom-plugin-monitor" },
	};

	for (size_t i = 0; i < sizeof(by) / sizeof(by[0]); i++)
		if (strcmp(by[i].reason, reason) == 0)
			return by[i].component;
	return "kubelet";
}

void
cs_event(struct cs *cs, struct cs_cluster *cl, const char *ns, const char *kind,
    const char *name, const char *uid, const char *type, const char *reason, const char *msg)
{
	char ts[32], evname[256], hex[20];
	size_t i;
	json_t *v;

	cs_rfc3339(cs_now(cs), ts);
	json_array_foreach(cl->events, i, v) {	/* same event again: count it */
		if (strcmp(cs_jpath(v, "involvedObject.uid"), uid) == 0 &&
		    strcmp(json_string_value(json_object_get(v, "reason")), reason) == 0 &&
		    strcmp(json_string_value(json_object_get(v, "message")), msg) == 0) {
			json_object_set_new(v, "count", json_integer(json_integer_value(
			    json_object_get(v, "count")) + 1));
			json_object_set_new(v, "lastTimestamp", json_string(ts));
			json_object_set_new(json_object_get(v, "metadata"), "resourceVersion",
			    json_sprintf("%lld", ++cl->rv));
			return;
		}
	}
	if (json_array_size(cl->events) >= 5000)
		json_array_remove(cl->events, 0);
	cs_hex_token(hex, 8);
	snprintf(evname, sizeof(evname), "%.200s.%s", name, hex);
	json_array_append_new(cl->events, json_pack("{s:s, s:s, s:{s:s, s:s, s:s, s:s}, "
	    "s:{s:s, s:s, s:s, s:s, s:s}, s:s, s:s, s:s, s:{s:s}, s:s, s:s, s:i, s:s}",
	    "kind", "Event", "apiVersion", "v1",
	    "metadata", "name", evname, "namespace", ns, "resourceVersion", "0",
	    "creationTimestamp", ts,
	    "involvedObject", "kind", kind, "namespace", ns, "name", name, "uid", uid,
	    "apiVersion", strcmp(kind, "Pod") == 0 || strcmp(kind, "Node") == 0 ? "v1" :
	    "ray.io/v1",
	    "reason", reason, "message", msg, "type", type, "source", "component",
	    component(reason),
	    "firstTimestamp", ts, "lastTimestamp", ts, "count", 1, "reportingComponent", ""));
	json_object_set_new(json_object_get(json_array_get(cl->events,
	    json_array_size(cl->events) - 1), "metadata"), "resourceVersion",
	    json_sprintf("%lld", ++cl->rv));
}

/* A GET of nodes or pods (items, taken): the one named (404 when items is empty), or with
 * name NULL the list. */
static void
reply_items(struct cs *cs, struct cs_cluster *cl, struct cs_req *rq, const char *plural,
    const char *kind, const char *name, json_t *items)
{
	char list[32];

	if (name != NULL) {
		if (json_array_size(items) == 0)
			cs_reply_error(rq, 404, "NotFound", "%s \"%s\" not found", plural, name);
		else
			cs_reply_object(cs, rq, kind, json_array_get(items, 0));
		json_decref(items);
		return;
	}
	snprintf(list, sizeof(list), "%sList", kind);
	cs_kube_list(cs, cl, rq, list, "v1", items);
}

static void
nodes(struct cs *cs, struct cs_cluster *cl, struct cs_req *rq)
{
	json_t *items = json_array();
	size_t i;

	if (strcmp(rq->method, "GET") != 0) {
		json_decref(items);
		cs_reply_error(rq, 405, "MethodNotAllowed", "the server does not allow this "
		    "method on the requested resource");
		return;
	}
	for (i = 0; i < cl->nodes.n; i++) {
		struct cs_node *n = cl->nodes.v[i];

		if (rq->nseg == 6 && strcmp(rq->seg[5], n->name) != 0)
			continue;
		json_array_append_new(items, cs_node_json(n));
	}
	if (rq->nseg == 5 && cs_is_watch(rq)) {
		json_decref(items);
		cs_watch_start(cs, cl, rq, "nodes", NULL);
		return;
	}
	reply_items(cs, cl, rq, "nodes", "Node", rq->nseg == 6 ? rq->seg[5] : NULL, items);
}

static void
pods(struct cs *cs, struct cs_cluster *cl, struct cs_req *rq, const char *ns,
    const char *name)
{
	json_t *items;
	size_t i;

	if (name == NULL && cs_is_watch(rq)) {
		cs_watch_start(cs, cl, rq, "pods", ns);
		return;
	}
	items = json_array();
	for (i = 0; i < cl->pods.n; i++) {
		struct cs_pod *p = cl->pods.v[i];

		if ((ns && strcmp(p->ns, ns) != 0) || (name && strcmp(p->name, name) != 0))
			continue;
		json_array_append_new(items, cs_pod_json(p));
	}
	reply_items(cs, cl, rq, "pods", "Pod", name, items);
}

static void
events(struct cs *cs, struct cs_cluster *cl, struct cs_req *rq, const char *ns)
{
	json_t *items, *v;
	size_t i;

	if (cs_is_watch(rq)) {
		cs_watch_start(cs, cl, rq, "events", ns);
		return;
	}
	items = json_array();
	json_array_foreach(cl->events, i, v)
		if (ns == NULL || strcmp(cs_jpath(v, "metadata.namespace"), ns) == 0)
			json_array_append(items, v);
	cs_kube_list(cs, cl, rq, "EventList", "v1", items);
}

static void
namespaces(struct cs *cs, struct cs_cluster *cl, struct cs_req *rq)
{
	const char *name = rq->nseg >= 6 ? rq->seg[5] : NULL;
	size_t i;
	json_t *v, *body;

	if (strcmp(rq->method, "POST") == 0 && name == NULL) {
		body = json_loadb(rq->body ? rq->body : "", rq->body_len, 0, NULL);
		name = cs_jpath(body, "metadata.name");
		if (name == NULL || !cs_dns1123_label(name, 63)) {
			cs_reply_error(rq, 422, "Invalid", "Namespace \"%s\" is invalid: metadata.name: "
			    "Invalid value", name ? name : "");
		} else if (cs_ns_exists(cl, name)) {
			cs_reply_error(rq, 409, "AlreadyExists", "namespaces \"%s\" already exists",
			    name);
		} else {
			cs_ns_create(cs, cl, name);
			cs_reply_json(rq, 201, json_incref(json_array_get(cl->namespaces,
			    json_array_size(cl->namespaces) - 1)));
		}
		json_decref(body);
		return;
	}
	if (strcmp(rq->method, "PATCH") == 0 && name != NULL) {
		if (!cs_dns1123_label(name, 63)) {
			cs_reply_error(rq, 422, "Invalid", "Namespace \"%s\" is invalid", name);
			return;
		}
		cs_ns_create(cs, cl, name);
	}
	if (strcmp(rq->method, "GET") != 0 && strcmp(rq->method, "PATCH") != 0) {
		cs_reply_error(rq, 405, "MethodNotAllowed", "the server does not allow this "
		    "method on the requested resource");
		return;
	}
	if (name == NULL && cs_is_watch(rq)) {
		cs_watch_start(cs, cl, rq, "namespaces", NULL);
		return;
	}
	if (name == NULL) {
		cs_kube_list(cs, cl, rq, "NamespaceList", "v1", json_deep_copy(cl->namespaces));
		return;
	}
	json_array_foreach(cl->namespaces, i, v)
		if (strcmp(cs_jpath(v, "metadata.name"), name) == 0) {
			cs_reply_object(cs, rq, "Namespace", v);
			return;
		}
	cs_reply_error(rq, 404, "NotFound", "namespaces \"%s\" not found", name);
}

static void
core_api(struct cs *cs, struct cs_cluster *cl, struct cs_req *rq)
{
	const char *r = rq->nseg > 4 ? rq->seg[4] : "";

	/* seg: k8s C api v1 <resource> ... */
	if (strcmp(r, "nodes") == 0 && rq->nseg <= 6) {
		nodes(cs, cl, rq);
	} else if (strcmp(r, "pods") == 0 && rq->nseg == 5) {
		pods(cs, cl, rq, NULL, NULL);
	} else if (strcmp(r, "events") == 0 && rq->nseg == 5) {
		events(cs, cl, rq, NULL);
	} else if (strcmp(r, "namespaces") == 0 && rq->nseg <= 6) {
		namespaces(cs, cl, rq);
	} else if (strcmp(r, "namespaces") == 0 && rq->nseg >= 7 && rq->nseg <= 8 &&
	    strcmp(rq->method, "GET") == 0) {
		const char *ns = rq->seg[5], *res = rq->seg[6];

		if (!cs_ns_exists(cl, ns) && rq->nseg == 8)
			cs_reply_error(rq, 404, "NotFound", "namespaces \"%s\" not found", ns);
		else if (strcmp(res, "pods") == 0)
			pods(cs, cl, rq, ns, rq->nseg == 8 ? rq->seg[7] : NULL);
		else if (strcmp(res, "events") == 0 && rq->nseg == 7)
			events(cs, cl, rq, ns);
		else
			cs_reply_no_resource(rq);
	} else {
		cs_reply_no_resource(rq);
	}
}

static bool
authorized(struct cs_cluster *cl, struct cs_req *rq)
{
	const char *h = cs_header(rq, "Authorization");
	size_t n = strlen(cl->token);

	return h != NULL && strncmp(h, "Bearer ", 7) == 0 && strlen(h + 7) == n &&
	    crypto_equal(h + 7, cl->token, n);
}

void
cs_kube_handle(struct cs *cs, struct cs_req *rq)
{
	struct cs_cluster *cl = cs_cluster_find(cs, rq->seg[1]);

	if (cl == NULL) {
		cs_reply_no_resource(rq);
		return;
	}
	if (!authorized(cl, rq)) {
		cs_reply_error(rq, 401, "Unauthorized", "Unauthorized");
		return;
	}
	cs_watch_sync(cs, cl);	/* lists and watches see the same history */
	if (cs_kube_discovery(cs, cl, rq))
		return;
	if (cs_kplain_handle(cs, cl, rq))	/* ConfigMaps, RBAC, Kueue objects (issue 13) */
		return;
	if (cs_knode_handle(cs, cl, rq))	/* node and pod writes, status subresources */
		return;
	if (cs_kauthz_handle(cl, rq))		/* kubectl auth can-i */
		return;
	if (rq->nseg == 3 && strcmp(rq->seg[2], "version") == 0) {
		cs_reply_json(rq, 200, json_pack("{s:s, s:s, s:s, s:s}", "major", "1", "minor",
		    "30", "gitVersion", "v1.30.4", "platform", "linux/amd64"));
	} else if (rq->nseg >= 5 && strcmp(rq->seg[2], "api") == 0 &&
	    strcmp(rq->seg[3], "v1") == 0) {
		core_api(cs, cl, rq);
	} else if (rq->nseg >= 6 && strcmp(rq->seg[2], "apis") == 0 &&
	    strcmp(rq->seg[3], "ray.io") == 0 && strcmp(rq->seg[4], "v1") == 0) {
		/* apis ray.io v1 [namespaces NS] PLURAL [NAME [status]] */
		if (rq->nseg == 6)
			cs_kube_ray(cs, cl, rq, NULL, rq->seg[5], NULL, NULL);
		else if (strcmp(rq->seg[5], "namespaces") == 0 && rq->nseg >= 8 && rq->nseg <= 10)
			cs_kube_ray(cs, cl, rq, rq->seg[6], rq->seg[7],
			    rq->nseg >= 9 ? rq->seg[8] : NULL, rq->nseg == 10 ? rq->seg[9] : NULL);
		else
			cs_reply_no_resource(rq);
	} else {
		cs_reply_no_resource(rq);
	}
}
