/* cloudsim spot: a spot reclaim as each provider signals it on the Node — taints, cordon,
 * Node events and conditions, drain — and the node's end when the notice runs out.  Pods
 * get no event of their own: whoever watches reads the node, as on the real platforms.
 * The node writes an outside test makes (kubectl taint, delete node) are in knode.c. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cloudsim/cs.h"

static void
taint(struct cs_node *n, const char *key, const char *value, const char *effect)
{
	json_t *t = json_pack("{s:s, s:s}", "key", key, "effect", effect);

	if (value != NULL)
		json_object_set_new(t, "value", json_string(value));
	json_array_append_new(n->taints, t);
}

/* Cordon and drain: the node is unschedulable and its pods are evicted (KubeRay replaces
 * them where they fit). */
static void
drain(struct cs_cluster *cl, struct cs_node *n)
{
	size_t j = cl->pods.n;

	n->cordoned = true;
	while (j-- > 0) {
		struct cs_pod *p = cl->pods.v[j];

		if (strcmp(p->node, n->name) != 0)
			continue;
		cs_pod_free(p);
		cs_vec_del(&cl->pods, j);
	}
}

/* GKE: "When Compute Engine needs to reclaim the resources used by Spot VMs, a termination
 * notice is sent to GKE. Spot VMs terminate 30 seconds after receiving a termination
 * notice", the kubelet's graceful node shutdown then terminates the node's pods
 * (https://cloud.google.com/kubernetes-engine/docs/concepts/spot-vms, "Termination and
 * graceful shutdown of Spot VMs"); GKE marks the node with the taint
 * cloud.google.com/impending-node-termination:NoSchedule for the notice. */
static void
gke(struct cs_node *n)
{
	taint(n, "cloud.google.com/impending-node-termination", NULL, "NoSchedule");
}

/* EKS / HyperPod with the AWS Node Termination Handler
 * (https://github.com/aws/aws-node-termination-handler, README "Kubernetes events" and
 * pkg/observability/k8s-events.go): on a spot interruption notice (2 minutes) it taints the
 * node aws-node-termination-handler/spot-itn=<event id>:NoSchedule, cordons and drains
 * it and posts Node events SpotInterruption then CordonAndDrain; on a rebalance
 * recommendation the taint is aws-node-termination-handler/rebalance-recommendation and
 * the node is only cordoned (event RebalanceRecommendation then Cordon). */
static void
aws(struct cs *cs, struct cs_cluster *cl, struct cs_node *n, bool rebalance, const char *when)
{
	char id[24], ev[64], msg[256];

	cs_hex_token(id, 8);
	if (rebalance) {
		snprintf(ev, sizeof(ev), "rebalance-recommendation-%s", id);
		taint(n, "aws-node-termination-handler/rebalance-recommendation", ev, "NoSchedule");
		snprintf(msg, sizeof(msg), "Rebalance recommendation received. Instance will be "
		    "cordoned at %s", when);
		cs_event(cs, cl, "default", "Node", n->name, n->uid, "Normal",
		    "RebalanceRecommendation", msg);
		n->cordoned = true;
		cs_event(cs, cl, "default", "Node", n->name, n->uid, "Normal", "Cordon",
		    "Node successfully cordoned");
		return;
	}
	snprintf(ev, sizeof(ev), "spot-itn-%s", id);
	taint(n, "aws-node-termination-handler/spot-itn", ev, "NoSchedule");
	snprintf(msg, sizeof(msg), "Spot ITN received. Instance will be interrupted at %s", when);
	cs_event(cs, cl, "default", "Node", n->name, n->uid, "Normal", "SpotInterruption", msg);
	drain(cl, n);
	cs_event(cs, cl, "default", "Node", n->name, n->uid, "Normal", "CordonAndDrain",
	    "Node successfully cordoned and drained");
}

/* AKS: spot nodes always carry kubernetes.azure.com/scalesetpriority=spot:NoSchedule
 * (fleet.c).  A Preempt scheduled event (Azure Scheduled Events, 30 s) is surfaced by the
 * Node Problem Detector as the node condition VMEventScheduled
 * (https://learn.microsoft.com/azure/aks/node-problem-detector) and acted on by node
 * auto-drain, which cordons and drains the node and taints it
 * remediator.kubernetes.azure.com/unschedulable
 * (https://learn.microsoft.com/azure/aks/node-auto-drain, "Preempt: the spot VM is being
 * deleted ... Cordon and drain"); the node then goes. */
static void
aks(struct cs *cs, struct cs_cluster *cl, struct cs_node *n, const char *when)
{
	char msg[256], ts[32];
	json_t *conds;

	cs_rfc3339(cs_now(cs), ts);
	snprintf(msg, sizeof(msg), "VM is scheduled for Preempt, NotBefore: %s", when);
	conds = json_pack("[{s:s, s:s, s:s, s:s, s:s, s:s}, {s:s, s:s, s:s, s:s, s:s, s:s}]",
	    "type", "Ready", "status", "True", "reason", "KubeletReady", "message",
	    "kubelet is posting ready status", "lastHeartbeatTime", ts, "lastTransitionTime", ts,
	    "type", "VMEventScheduled", "status", "True", "reason", "VMEventScheduled", "message",
	    msg, "lastHeartbeatTime", ts, "lastTransitionTime", ts);
	if (n->conditions != NULL) {	/* keep what was patched, add NPD's condition */
		json_array_append(n->conditions, json_array_get(conds, 1));
		json_decref(conds);
	} else {
		n->conditions = conds;
	}
	cs_event(cs, cl, "default", "Node", n->name, n->uid, "Warning", "PreemptScheduled", msg);
	taint(n, "remediator.kubernetes.azure.com/unschedulable", NULL, "NoSchedule");
	drain(cl, n);
}

bool
cs_preempt(struct cs *cs, struct cs_cluster *cl, struct cs_node *n, double notice_s,
    const char *signal, struct err *e)
{
	bool rebalance = signal != NULL && strcmp(signal, "rebalance") == 0;
	char when[32];

	if (signal != NULL && strcmp(signal, "interruption") != 0 && !rebalance)
		return err_set(e, 400, "sim.bad_signal", "signal is interruption or rebalance");
	if (rebalance && cl->provider != CS_HYPERPOD)
		return err_set(e, 400, "sim.bad_signal", "a rebalance recommendation is AWS's");
	if (n->preempt_at > 0)
		return err_set(e, 409, "sim.reclaiming", "node %s is already being reclaimed",
		    n->name);
	cs_rfc3339(cs_now(cs) + notice_s, when);
	if (!rebalance)
		n->preempt_at = cs_now(cs) + (notice_s > 0 ? notice_s : 0.001);
	if (cl->provider == CS_GKE)
		gke(n);
	else if (cl->provider == CS_HYPERPOD)
		aws(cs, cl, n, rebalance, when);
	else
		aks(cs, cl, n, when);
	cl->rv++;
	return true;
}

void
cs_spot_tick(struct cs *cs, struct cs_cluster *cl, double now)
{
	size_t i = cl->nodes.n;

	while (i-- > 0) {
		struct cs_node *n = cl->nodes.v[i];

		if (n->preempt_at == 0 || n->preempt_at > now)
			continue;
		if (cl->provider == CS_AKS)
			cs_event(cs, cl, "default", "Node", n->name, n->uid, "Warning", "Preempt",
			    "The spot VM is being deleted");
		/* the VM is gone: so is the Node (the pod GC removes its pods, knode.c); the
		 * pool's target is unchanged, so the group brings a new VM up after the
		 * autoscaler delay, as a managed instance group or scale set does */
		cs_vec_del(&cl->nodes, i);
		cs_node_free(n);
		cl->rv++;
	}
}
