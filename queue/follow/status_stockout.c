/* status_stockout: a dispatched job whose pods wait for a node is withdrawn to be placed
 * elsewhere as soon as the member says it has no room — the cluster autoscaler's
 * FailedScaleUp or NotTriggerScaleUp about a pod of the attempt — and after the cluster's
 * stockout timeout otherwise (the backstop for a member that says nothing).  A job waiting
 * for the victims it preempted is not withdrawn on a signal: their room is coming.  A
 * flex-start job waits for its ProvisioningRequest instead, and is withdrawn when that
 * request fails. */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "core/log.h"
#include "core/mono.h"
#include "providers/kube.h"
#include "queue/follow/status_int.h"

#define VICTIM_SETTLE_S	20.0	/* after its victims left, signals wait this long */
#define VICTIM_SLOTS	256

/* Whether an event reason says the cluster cannot find room for a pod: the cluster
 * autoscaler's FailedScaleUp (the provider refused to grow the node group: GKE's
 * GCE_STOCKOUT / ZONE_RESOURCE_POOL_EXHAUSTED, "GCE out of resources", AWS
 * InsufficientInstanceCapacity, Azure AllocationFailed / SkuNotAvailable) or
 * NotTriggerScaleUp (no node group can take the pod: at its maximum, or it would not fit a
 * new node).  The autoscaler FAQ lists both events:
 * https://github.com/kubernetes/autoscaler/blob/master/cluster-autoscaler/FAQ.md
 * ("What events are emitted by CA?"); GKE's messages:
 * https://cloud.google.com/kubernetes-engine/docs/how-to/cluster-autoscaler-visibility */
bool
status_no_room(const char *reason)
{
	return reason != NULL && (strcmp(reason, "FailedScaleUp") == 0 ||
	    strcmp(reason, "NotTriggerScaleUp") == 0);
}

/* When each job (by a hash of its id) was last seen waiting for its victims. */
static struct {
	pthread_mutex_t	 mu;
	uint64_t	 h[VICTIM_SLOTS];
	double		 at[VICTIM_SLOTS];
} V = { .mu = PTHREAD_MUTEX_INITIALIZER };

static uint64_t
hash(const char *s)
{
	uint64_t h = 0xcbf29ce484222325ULL;

	for (; *s != '\0'; s++)
		h = (h ^ (unsigned char)*s) * 0x100000001b3ULL;
	return h ? h : 1;
}

/* Seconds since j was last seen waiting for victims (-1 never); with now, records it. */
static double
victims_seen(const char *id, bool now)
{
	uint64_t h = hash(id);
	size_t i = h % VICTIM_SLOTS;
	double out = -1;

	pthread_mutex_lock(&V.mu);
	if (now) {
		V.h[i] = h;
		V.at[i] = mono_s();
		out = 0;
	} else if (V.h[i] == h) {
		out = mono_s() - V.at[i];
	}
	pthread_mutex_unlock(&V.mu);
	return out;
}

/* Whether jobs the scheduler or a move preempted for j still hold their room on j's
 * cluster (state preempted, the reason naming j: queue/sched/scheduler.c), or grown workers
 * it took back are being shrunk or were just now (job_grows by_job j, issue 26). */
static bool
victims_leaving(const struct member *t, const struct status_job *j)
{
	static const char sql[] = "SELECT EXISTS (SELECT 1 FROM jobs WHERE cluster_id ="
	    " $1::uuid AND state = 'preempted' AND reason LIKE 'preempted by %' AND"
	    " right(reason, 36) = $2) OR EXISTS (SELECT 1 FROM job_grows g JOIN jobs k"
	    " ON k.id = g.job_id WHERE k.cluster_id = $1::uuid AND g.by_job = $2 AND"
	    " (g.state = 'shrinking' OR g.released_at > now() - make_interval(secs =>"
	    " $3::int)))";
	char settle[16];
	const char *p[3] = { t->id, j->id, settle };
	struct err e = { 0 };
	struct db *c = db_acquire(5000, &e);
	PGresult *r = NULL;
	bool out = true;	/* unknown: not withdrawn on a signal now */

	snprintf(settle, sizeof(settle), "%d", (int)VICTIM_SETTLE_S);
	if (c != NULL && db_exec(c, sql, 3, p, &r, &e) && PQntuples(r) == 1)
		out = PQgetvalue(r, 0, 0)[0] == 't';
	if (e.status != 0)
		log_warn(NULL, "status", "cannot read a job's victims", "{s:s, s:s}", "job", j->id,
		    "error", e.msg);
	PQclear(r);
	db_release(c);
	return out;
}

/* The autoscaler's NotTriggerScaleUp is a Normal event, outside the Warning events the
 * status cycle reads: asked for here, only for a job whose pods already failed scheduling,
 * one list for its first pod still waiting for a node (the autoscaler says it of each).
 * "NotTriggerScaleUp" or NULL. */
static const char *
not_triggered(const struct member *t, const struct status_job *j, json_t *pods)
{
	json_t *p, *items = NULL, *ev;
	size_t i, k;
	const char *out = NULL;

	json_array_foreach(pods, i, p) {
		const char *name = json_string_value(json_object_get(json_object_get(p,
		    "metadata"), "name")), *node = json_string_value(json_object_get(
		    json_object_get(p, "spec"), "nodeName"));
		struct err e = { 0 };

		if (name == NULL || (node != NULL && node[0] != '\0'))
			continue;
		if (!kube_list_events(&t->pc, j->ns, "Pod", name, &items, &e))
			break;
		json_array_foreach(items, k, ev)
			if (strcmp(json_string_value(json_object_get(ev, "reason")) ?
			    json_string_value(json_object_get(ev, "reason")) : "",
			    "NotTriggerScaleUp") == 0)
				out = "NotTriggerScaleUp";
		json_decref(items);
		break;
	}
	return out;
}

/* GKE flex-start (issue 27): the ProvisioningRequest the attempt's worker pods consume, as
 * their pod templates name it (providers/kuberay.c); NULL when they consume none. */
static const char *
request_consumed(const json_t *manifest)
{
	json_t *sp = json_object_get(manifest, "spec"), *groups, *g;
	size_t i;

	if ((groups = json_object_get(sp, "workerGroupSpecs")) == NULL &&
	    (groups = json_object_get(json_object_get(sp, "rayClusterSpec"),
	    "workerGroupSpecs")) == NULL)
		groups = json_object_get(json_object_get(sp, "rayClusterConfig"),
		    "workerGroupSpecs");
	json_array_foreach(groups, i, g) {
		const char *name = json_string_value(json_object_get(json_object_get(
		    json_object_get(json_object_get(g, "template"), "metadata"), "annotations"),
		    "autoscaling.x-k8s.io/consume-provisioning-request"));

		if (name != NULL)
			return name;
	}
	return NULL;
}

/* Whether the request will not bring its nodes, by the conditions of the ProvisioningRequest
 * API (autoscaling.x-k8s.io/v1,
 * https://github.com/kubernetes/autoscaler/blob/master/cluster-autoscaler/apis/provisioningrequest/autoscaling.x-k8s.io/v1/types.go):
 * Failed ("impossible to obtain resources"), BookingExpired (provisioned, but its pods did
 * not come in time), CapacityRevoked.  1 with *why the condition, 0 when it is queued or
 * provisioned, -1 when it cannot be read (then the pods are judged like any others). */
static int
request_lost(const struct member *t, const char *ns, const char *name, const char **why)
{
	static const char *const lost[] = { "Failed", "BookingExpired", "CapacityRevoked" };
	struct err e = { 0 };
	json_t *pr = NULL, *c;
	size_t i;
	int out = 0;

	if (!kube_get_object(&t->pc, "autoscaling.x-k8s.io/v1", "ProvisioningRequest", ns, name,
	    &pr, &e))
		return -1;
	json_array_foreach(json_object_get(json_object_get(pr, "status"), "conditions"), i, c) {
		const char *type = json_string_value(json_object_get(c, "type")),
		    *st = json_string_value(json_object_get(c, "status"));

		for (size_t k = 0; type != NULL && st != NULL && k < 3; k++)
			if (strcmp(type, lost[k]) == 0 && strcmp(st, "True") == 0) {
				*why = lost[k];
				out = 1;
			}
	}
	json_decref(pr);
	return out;
}

bool
status_stocked_out(const struct member *t, const struct status_job *j,
    const struct status_seen *seen, const char **why)
{
	double limit = j->stockout_timeout_s > 0 ? j->stockout_timeout_s : 120, since;
	const char *signal, *request;

	*why = NULL;
	if (j->state != JOB_DISPATCHED || seen->unscheduled == 0)
		return false;
	/* flex-start: the pods wait for their ProvisioningRequest, queued for as long as the
	 * provider takes to find the capacity (GKE's Dynamic Workload Scheduler); withdrawn only
	 * when the request says it will not bring the nodes */
	if ((request = request_consumed(j->manifest)) != NULL) {
		switch (request_lost(t, j->ns, request, why)) {
		case 1:
			return true;
		case 0:
			*why = NULL;
			return false;
		default:
			break;
		}
	}
	signal = seen->no_room ? seen->no_room : j->scale_failed ? "FailedScaleUp" : NULL;
	if (signal == NULL && j->pending_for >= 0)
		signal = not_triggered(t, j, seen->pods);
	if (signal != NULL) {
		if (victims_leaving(t, j))
			victims_seen(j->id, true);
		else if ((since = victims_seen(j->id, false)) < 0 || since >= VICTIM_SETTLE_S) {
			*why = signal;
			return true;
		}
	}
	*why = "timeout";	/* twice the timeout: the member said nothing (or victims) */
	return j->pending_for >= 0 && j->pending_for >= 2 * limit;
}
