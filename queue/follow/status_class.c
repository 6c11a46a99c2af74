/* status_class: a job attempt's failure signals, read where providers put them, turned into
 * classified findings (infrastructure, capacity, preemption, configuration, user_code) with
 * the pods, ranks, nodes and evidence.  Pure: pods, nodes and events in, JSON out.
 *
 * Where each signal comes from (the documented place, not a simulator's shortcut):
 * - containers: pod status.containerStatuses[].state / lastState (kubelet reasons
 *   OOMKilled, Error, CrashLoopBackOff, ErrImagePull, ImagePullBackOff, InvalidImageName;
 *   https://kubernetes.io/docs/concepts/workloads/pods/pod-lifecycle/#container-states).
 *   OOMKilled is user_code: the container used more memory than the limit the job's own spec
 *   asked for; fleetd cannot tell a leak from a limit set too low, and either fix (less
 *   memory, a larger limit in the spec) is the job owner's.
 * - GKE reclamation: node taint cloud.google.com/impending-node-termination
 *   (https://cloud.google.com/kubernetes-engine/docs/concepts/spot-vms#termination).
 * - AWS: aws-node-termination-handler/... taints (spot-itn, rebalance-recommendation,
 *   scheduled-maintenance, asg-lifecycle-termination;
 *   https://github.com/aws/aws-node-termination-handler#configuration); HyperPod's node
 *   label sagemaker.amazonaws.com/node-health-status other than Schedulable
 *   (https://docs.aws.amazon.com/sagemaker/latest/dg/sagemaker-hyperpod-eks-resiliency-node-labels.html).
 * - Azure: Scheduled Events surfaced on the node by the AKS node problem detector as the
 *   VMEventScheduled condition (Preempt: spot eviction;
 *   https://learn.microsoft.com/azure/aks/node-problem-detector), and cloudsim's
 *   kubernetes.azure.com/scalesetpriority-eviction taint.
 * - nodes lost: gone from the node list, Ready False/Unknown, node.kubernetes.io/
 *   unreachable or not-ready taints; GPU faults as a node condition or taint naming the GPU
 *   (NVIDIA GPU operator / node problem detector, e.g. GpuUnhealthy, XidCriticalError).
 * - capacity: FailedScheduling (kube-scheduler), NotTriggerScaleUp and FailedScaleUp
 *   (cluster autoscaler) events on the pods. */
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "core/jsonx.h"
#include "providers/kube.h"
#include "queue/follow/status.h"

static const char *
str(const json_t *o, const char *k)
{
	const char *s = json_string_value(json_object_get(o, k));

	return s ? s : "";
}

static bool
is(const char *a, const char *b)
{
	return strcmp(a, b) == 0;
}

/* Appends v to array a unless it is there. */
static void
add_once(json_t *a, json_t *v)
{
	json_t *x;
	size_t i;

	json_array_foreach(a, i, x)
		if (json_equal(x, v)) {
			json_decref(v);
			return;
		}
	json_array_append_new(a, v);
}

/* The finding of (class, reason, node) in out, made on first use. */
static json_t *
finding(json_t *out, const char *cls, const char *reason, const char *node,
    const char *message)
{
	json_t *f;
	size_t i;
	char key[300];

	snprintf(key, sizeof(key), "%s:%s:%s", cls, reason, node ? node : "");
	json_array_foreach(out, i, f)
		if (is(str(f, "key"), key))
			return f;
	f = json_pack("{s:s, s:s, s:s, s:s, s:[], s:[], s:[], s:{}}", "key", key, "class", cls,
	    "reason", reason, "message", message, "pods", "ranks", "nodes", "evidence");
	if (node != NULL && node[0] != '\0')
		json_array_append_new(json_object_get(f, "nodes"), json_string(node));
	json_array_append_new(out, f);
	return f;
}

/* A pod's rank: "head", the multi-host replica index KubeRay labels, else the worker's
 * index among its group's pods ordered by name (KubeRay names no rank for one host). */
static json_t *
rank_of(json_t *pods, json_t *pod)
{
	json_t *lb = jsonx_meta(pod, "labels"), *p;
	const char *name = str(json_object_get(pod, "metadata"), "name"),
	    *group = str(lb, "ray.io/group"), *ri = str(lb, "ray.io/worker-group-replica-index");
	size_t i;
	int before = 0;

	if (is(str(lb, "ray.io/node-type"), "head"))
		return json_string("head");
	json_array_foreach(pods, i, p) {
		json_t *pl = jsonx_meta(p, "labels");

		if (is(str(pl, "ray.io/node-type"), "worker") && is(str(pl, "ray.io/group"), group) &&
		    strcmp(str(json_object_get(p, "metadata"), "name"), name) < 0)
			before++;
	}
	return json_sprintf("%s%s%d%s%s", group[0] ? group : "worker", "-", before,
	    ri[0] ? "/replica-" : "", ri);
}

static void
add_pod(json_t *f, json_t *pods, json_t *pod)
{
	add_once(json_object_get(f, "pods"), json_string(str(json_object_get(pod, "metadata"),
	    "name")));
	add_once(json_object_get(f, "ranks"), rank_of(pods, pod));
}

static void
evidence(json_t *f, const char *k, json_t *v)
{
	if (v == NULL)
		return;
	json_object_set_new(json_object_get(f, "evidence"), k, v);
}

/* The container statuses of one pod. */
static void
containers(json_t *out, json_t *pods, json_t *pod)
{
	json_t *st = json_object_get(pod, "status"), *c;
	const char *node = str(json_object_get(pod, "spec"), "nodeName");
	size_t i;

	json_array_foreach(json_object_get(st, "containerStatuses"), i, c) {
		json_t *w = json_object_get(json_object_get(c, "state"), "waiting"),
		    *t = json_object_get(json_object_get(c, "state"), "terminated"),
		    *lt = json_object_get(json_object_get(c, "lastState"), "terminated"), *f;
		const char *wr = str(w, "reason");
		json_t *term = t != NULL ? t : lt;
		char msg[400];

		if (is(wr, "ErrImagePull") || is(wr, "ImagePullBackOff") ||
		    is(wr, "InvalidImageName") || is(wr, "ErrImageNeverPull") ||
		    is(wr, "CreateContainerConfigError") || is(wr, "CreateContainerError")) {
			snprintf(msg, sizeof(msg), "%s", str(w, "message"));
			f = finding(out, "configuration", wr, node, msg[0] ? msg :
			    "the container's image cannot be pulled or its config is invalid");
			add_pod(f, pods, pod);
			evidence(f, "reason", json_string(wr));
			evidence(f, "container", json_string(str(c, "name")));
			evidence(f, "image", json_string(str(c, "image")));
			continue;
		}
		if (term != NULL && is(str(term, "reason"), "OOMKilled")) {
			f = finding(out, "user_code", "OOMKilled", node, "a container was killed for "
			    "exceeding its memory limit (exit code 137)");
			add_pod(f, pods, pod);
			evidence(f, "reason", json_string("OOMKilled"));
			evidence(f, "exit_code", json_integer(json_is_integer(json_object_get(term,
			    "exitCode")) ? json_integer_value(json_object_get(term, "exitCode")) :
			    137));
			evidence(f, "container", json_string(str(c, "name")));
			evidence(f, "restarts", json_incref(json_object_get(c, "restartCount")));
			continue;
		}
		if (is(wr, "CrashLoopBackOff") || (t != NULL &&
		    json_integer_value(json_object_get(t, "exitCode")) != 0)) {
			const char *why = is(wr, "CrashLoopBackOff") ? "CrashLoopBackOff" : "Error";

			snprintf(msg, sizeof(msg), "%s", str(term, "message"));
			f = finding(out, "user_code", why, node, msg[0] ? msg :
			    "a container exited with a non-zero code");
			add_pod(f, pods, pod);
			evidence(f, "reason", json_string(why));
			if (term != NULL) {
				evidence(f, "exit_code", json_incref(json_object_get(term, "exitCode")));
				evidence(f, "terminated_reason", json_string(str(term, "reason")));
			}
			evidence(f, "container", json_string(str(c, "name")));
			evidence(f, "restarts", json_incref(json_object_get(c, "restartCount")));
		}
	}
}

static bool
reclaim_taint(const char *k)
{
	return k != NULL && kube_taint_reclaims(k);
}

/* A taint key or condition type that says a GPU is faulty (not merely present, as the
 * nvidia.com/gpu taint of every GPU node does). */
static bool
gpu_word(const char *s)
{
	return strcasestr(s, "xid") != NULL || (strcasestr(s, "gpu") != NULL &&
	    (strcasestr(s, "health") != NULL || strcasestr(s, "fault") != NULL ||
	    strcasestr(s, "error") != NULL || strcasestr(s, "fail") != NULL));
}

/* The node signals of one node the job's pods ran on.  nodes: name -> Node object, NULL
 * when the node list was not read (then a missing node says nothing). */
static void
node_signals(json_t *out, json_t *pods, json_t *nodes, const char *name)
{
	json_t *n, *t, *c, *f = NULL, *p;
	const char *hp;
	char taint[300], msg[400];
	size_t i;
	bool reclaimed = false;

	if (nodes == NULL)
		return;
	n = json_object_get(nodes, name);
	if (n == NULL) {
		f = finding(out, "infrastructure", "NodeDeleted", name, "the node the pods ran on "
		    "is gone from the cluster");
		evidence(f, "node", json_string(name));
	} else {
		json_array_foreach(json_object_get(json_object_get(n, "spec"), "taints"), i, t) {
			const char *k = str(t, "key");

			snprintf(taint, sizeof(taint), "%s%s%s:%s", k, str(t, "value")[0] ? "=" : "",
			    str(t, "value"), str(t, "effect"));
			if (reclaim_taint(k)) {
				reclaimed = true;
				f = finding(out, "preemption", "ReclaimTaint", name, "the provider is "
				    "reclaiming the node (spot or maintenance notice)");
				evidence(f, "taint", json_string(taint));
			} else if (is(k, "node.kubernetes.io/unreachable") ||
			    is(k, "node.kubernetes.io/not-ready") || gpu_word(k)) {
				f = finding(out, "infrastructure", gpu_word(k) ? "GPUFault" :
				    "NodeNotReady", name, gpu_word(k) ? "the node's GPU health tooling "
				    "tainted it" : "the node is not ready");
				evidence(f, "taint", json_string(taint));
			}
		}
		hp = str(jsonx_meta(n, "labels"), "sagemaker.amazonaws.com/node-health-status");
		if (hp[0] && !is(hp, "Schedulable")) {
			f = finding(out, "infrastructure", "NodeUnhealthy", name, "HyperPod's health "
			    "agent marked the node unhealthy");
			evidence(f, "label", json_sprintf("sagemaker.amazonaws.com/node-health-status=%s",
			    hp));
		}
		json_array_foreach(json_object_get(json_object_get(n, "status"), "conditions"), i,
		    c) {
			const char *ty = str(c, "type"), *s = str(c, "status");

			snprintf(msg, sizeof(msg), "%s", str(c, "message"));
			if (is(ty, "VMEventScheduled") && is(s, "True")) {
				bool pre = strcasestr(msg, "preempt") != NULL;

				reclaimed = reclaimed || pre;
				f = finding(out, pre ? "preemption" : "infrastructure", pre ?
				    "PreemptScheduled" : "MaintenanceScheduled", name, msg[0] ? msg :
				    "the provider scheduled an event on the node's VM");
			} else if (is(ty, "Ready") && !is(s, "True") && !reclaimed) {
				f = finding(out, "infrastructure", "NodeNotReady", name, msg[0] ? msg :
				    "the node is not ready");
			} else if (!is(ty, "Ready") && gpu_word(ty) && is(s, "True")) {
				f = finding(out, "infrastructure", "GPUFault", name, msg[0] ? msg :
				    "the node reports a GPU fault");
			} else {
				continue;
			}
			evidence(f, "condition", json_pack("{s:s, s:s, s:s, s:s}", "type", ty,
			    "status", s, "reason", str(c, "reason"), "message", msg));
		}
	}
	if (f == NULL)
		return;
	/* every finding about this node names the pods that ran there */
	json_array_foreach(out, i, f) {
		size_t k;

		if (json_array_size(json_object_get(f, "nodes")) != 1 ||
		    !is(json_string_value(json_array_get(json_object_get(f, "nodes"), 0)), name) ||
		    (!is(str(f, "class"), "infrastructure") && !is(str(f, "class"), "preemption")))
			continue;
		json_array_foreach(pods, k, p)
			if (is(str(json_object_get(p, "spec"), "nodeName"), name))
				add_pod(f, pods, p);
	}
}

/* The pod of an event, from pods by name, or NULL. */
static json_t *
pod_named(json_t *pods, const char *name)
{
	json_t *p;
	size_t i;

	json_array_foreach(pods, i, p)
		if (is(str(json_object_get(p, "metadata"), "name"), name))
			return p;
	return NULL;
}

static void
event_signal(json_t *out, json_t *pods, json_t *ev)
{
	json_t *io = json_object_get(ev, "involvedObject"), *pod, *f;
	const char *reason = str(ev, "reason"), *what = str(io, "name"), *cls = NULL,
	    *node = NULL;
	char msg[400];

	snprintf(msg, sizeof(msg), "%s", str(ev, "message"));
	pod = is(str(io, "kind"), "Node") ? NULL : pod_named(pods, what);
	if (is(str(io, "kind"), "Node"))
		node = what;
	else if (pod != NULL)
		node = str(json_object_get(pod, "spec"), "nodeName");
	if (is(reason, "FailedScheduling") || is(reason, "NotTriggerScaleUp") ||
	    is(reason, "FailedScaleUp")) {
		cls = "capacity";
		node = NULL;
	} else if (status_event_spot(reason, msg)) {
		cls = "preemption";
	} else if (is(reason, "OOMKilled") || is(reason, "OOMKilling")) {
		cls = "user_code";
		reason = "OOMKilled";
	} else if ((is(reason, "Failed") || is(reason, "BackOff")) &&
	    (strstr(msg, "pull") != NULL || strstr(msg, "image") != NULL) &&
	    strstr(msg, "restarting") == NULL) {
		cls = "configuration";
		reason = "ErrImagePull";
	} else if (is(reason, "NodeNotReady") || is(reason, "NodeLost")) {
		cls = "infrastructure";
	}
	if (cls == NULL)
		return;
	f = finding(out, cls, reason, node, msg[0] ? msg : reason);
	if (pod != NULL)
		add_pod(f, pods, pod);
	else if (!is(str(io, "kind"), "Node") && what[0])
		add_once(json_object_get(f, "pods"), json_string(what));
	evidence(f, "reason", json_string(str(ev, "reason")));
	evidence(f, "message", json_string(msg));
	if (json_object_get(ev, "count") != NULL)
		evidence(f, "count", json_incref(json_object_get(ev, "count")));
	if (is(reason, "OOMKilled") && json_object_get(json_object_get(f, "evidence"),
	    "exit_code") == NULL)
		evidence(f, "exit_code", json_integer(137));
}

json_t *
status_classify(json_t *pods, json_t *nodes, json_t *events, json_t *pinned)
{
	json_t *out = json_array(), *p, *seen = json_object(), *ev, *v;
	size_t i;

	json_array_foreach(pods, i, p)
		containers(out, pods, p);
	json_array_foreach(pods, i, p) {
		const char *node = str(json_object_get(p, "spec"), "nodeName");

		if (node[0] == '\0' || json_object_get(seen, node) != NULL)
			continue;
		json_object_set_new(seen, node, json_true());
		node_signals(out, pods, nodes, node);
	}
	/* a node the job is pinned to but holds none of its pods now: AWS's termination
	 * handler and AKS's node auto-drain drain a reclaimed node at the notice, so its
	 * reclaim signal is the job's though no pod sits there (only that signal: a pinned
	 * node gone or NotReady is repair's, follow/repair.c) */
	json_array_foreach(pinned, i, v) {
		const char *node = json_string_value(v);
		json_t *mine, *f;
		size_t k;

		if (node == NULL || json_object_get(seen, node) != NULL)
			continue;
		json_object_set_new(seen, node, json_true());
		mine = json_array();
		node_signals(mine, pods, nodes, node);
		json_array_foreach(mine, k, f)
			if (is(str(f, "class"), "preemption"))
				json_array_append(out, f);
		json_decref(mine);
	}
	json_array_foreach(events, i, ev) {
		json_t *io = json_object_get(ev, "involvedObject");

		/* node events only about the job's nodes */
		if (is(str(io, "kind"), "Node") && json_object_get(seen, str(io, "name")) == NULL)
			continue;
		event_signal(out, pods, ev);
	}
	json_decref(seen);
	return out;
}

/* Lower ranks first: what most likely ended the attempt. */
int
status_class_rank(const char *cls)
{
	static const char *const order[] = { "infrastructure", "preemption", "configuration",
		"user_code", "capacity" };

	for (int i = 0; i < 5; i++)
		if (is(cls, order[i]))
			return i;
	return 5;
}

bool
status_class_retried(const char *cls)
{
	return is(cls, "infrastructure") || is(cls, "preemption");
}
