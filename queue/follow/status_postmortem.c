/* status_postmortem: the bounded record of an attempt that fleetd keeps before the attempt's
 * objects go (GET /v1/jobs/{id}/postmortem reads it; queue/jobs/postmortem.c).  Pure: the
 * attempt's pods, events and the operator's status in, one JSON object out.
 *
 * Bounds (STATUS_PM_*): at most 64 pods, 4 containers each, the last 30 events, every text
 * cut at 512 bytes; the whole record stays under 64 KiB (the table checks it too).  No
 * secrets: nothing of the pod spec is copied but node and image (no env, args, commands,
 * annotations or volumes); messages are the kubelet's and the operator's. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "queue/follow/status.h"

#define PM_TEXT		512

static json_t *
text(const char *s)
{
	char buf[PM_TEXT];

	snprintf(buf, sizeof(buf), "%s", s ? s : "");
	return json_string(buf);
}

static const char *
str(const json_t *o, const char *k)
{
	const char *s = json_string_value(json_object_get(o, k));

	return s ? s : "";
}

/* One container state ({running|waiting|terminated: {...}}) as kept. */
static json_t *
state_of(json_t *st)
{
	json_t *w = json_object_get(st, "waiting"), *t = json_object_get(st, "terminated");

	if (t != NULL)
		return json_pack("{s:s, s:O?, s:o, s:o, s:s?, s:s?}", "state", "terminated",
		    "exit_code", json_object_get(t, "exitCode"), "reason", text(str(t, "reason")),
		    "message", text(str(t, "message")), "started_at",
		    json_string_value(json_object_get(t, "startedAt")), "finished_at",
		    json_string_value(json_object_get(t, "finishedAt")));
	if (w != NULL)
		return json_pack("{s:s, s:o, s:o}", "state", "waiting", "reason",
		    text(str(w, "reason")), "message", text(str(w, "message")));
	if (json_object_get(st, "running") != NULL)
		return json_pack("{s:s, s:s?}", "state", "running", "started_at",
		    json_string_value(json_object_get(json_object_get(st, "running"),
		    "startedAt")));
	return NULL;
}

static json_t *
pod_of(json_t *p)
{
	json_t *md = json_object_get(p, "metadata"), *st = json_object_get(p, "status"),
	    *lb = json_object_get(md, "labels"), *cs = json_array(), *c;
	size_t i;
	long restarts = 0;

	json_array_foreach(json_object_get(st, "containerStatuses"), i, c) {
		if (i >= STATUS_PM_CONTAINERS)
			break;
		restarts += (long)json_integer_value(json_object_get(c, "restartCount"));
		/* as the kubelet reports it: the current state, and what the last run ended
		 * with (an OOM kill the container was restarted after is only in lastState) */
		json_array_append_new(cs, json_pack("{s:o, s:o, s:I, s:O*, s:o*, s:o*}", "name",
		    text(str(c, "name")), "image", text(str(c, "image")), "restarts",
		    json_integer_value(json_object_get(c, "restartCount")), "ready",
		    json_is_boolean(json_object_get(c, "ready")) ? json_object_get(c, "ready") :
		    NULL, "state", state_of(json_object_get(c, "state")), "last_state",
		    state_of(json_object_get(c, "lastState"))));
	}
	return json_pack("{s:o, s:o, s:o, s:o, s:o, s:o, s:I, s:o}", "name", text(str(md, "name")),
	    "type", text(str(lb, "ray.io/node-type")), "group", text(str(lb, "ray.io/group")),
	    "node", text(str(json_object_get(p, "spec"), "nodeName")), "phase",
	    text(str(st, "phase")), "reason", text(str(st, "reason")), "restarts",
	    (json_int_t)restarts, "containers", cs);
}

static json_t *
event_of(json_t *ev)
{
	json_t *io = json_object_get(ev, "involvedObject");
	const char *at = str(ev, "lastTimestamp");

	if (at[0] == '\0')
		at = str(ev, "eventTime");
	if (at[0] == '\0')
		at = str(json_object_get(ev, "metadata"), "creationTimestamp");
	return json_pack("{s:o, s:o, s:o, s:o, s:o, s:O?, s:o}", "object_kind",
	    text(str(io, "kind")), "object", text(str(io, "name")), "type", text(str(ev, "type")),
	    "reason", text(str(ev, "reason")), "message", text(str(ev, "message")), "count",
	    json_object_get(ev, "count"), "at", text(at));
}

json_t *
status_postmortem(json_t *pods, json_t *events, json_t *nodes, const char *kind,
    json_t *live, const char *word, const char *message, json_t *findings)
{
	json_t *out, *pv = json_array(), *ev = json_array(), *nv = json_object(), *p, *x, *st;
	size_t i, n = json_array_size(events), from = n > STATUS_PM_EVENTS ? n - STATUS_PM_EVENTS : 0;

	json_array_foreach(pods, i, p) {
		const char *node = str(json_object_get(p, "spec"), "nodeName");

		if (i >= STATUS_PM_PODS)
			break;
		json_array_append_new(pv, pod_of(p));
		/* what each node showed at the end: taints, non-Ready conditions, or gone */
		if (node[0] && json_object_get(nv, node) == NULL && nodes != NULL) {
			json_t *nd = json_object_get(nodes, node), *t, *c, *tv = json_array(),
			    *cv = json_array();
			size_t k;

			json_array_foreach(json_object_get(json_object_get(nd, "spec"), "taints"), k, t)
				json_array_append_new(tv, json_sprintf("%s=%s:%s", str(t, "key"),
				    str(t, "value"), str(t, "effect")));
			json_array_foreach(json_object_get(json_object_get(nd, "status"),
			    "conditions"), k, c)
				if (strcmp(str(c, "type"), "Ready") == 0 ||
				    strcmp(str(c, "status"), "False") != 0)
					json_array_append_new(cv, json_pack("{s:o, s:o, s:o}", "type",
					    text(str(c, "type")), "status", text(str(c, "status")), "reason",
					    text(str(c, "reason"))));
			json_object_set_new(nv, node, json_pack("{s:b, s:o, s:o}", "present",
			    nd != NULL, "taints", tv, "conditions", cv));
		}
	}
	for (i = from; i < n; i++)
		json_array_append_new(ev, event_of(json_array_get(events, i)));
	st = json_object_get(live, "status");
	x = json_pack("{s:s, s:o, s:o}", "kind", kind ? kind : "", "status", text(word), "message",
	    text(message));
	if (json_is_object(st)) {
		json_object_set_new(x, "job_status", text(str(st, "jobStatus")));
		json_object_set_new(x, "job_deployment_status", text(str(st,
		    "jobDeploymentStatus")));
		json_object_set_new(x, "reason", text(str(st, "reason")));
		json_object_set_new(x, "operator_message", text(str(st, "message")));
		json_object_set_new(x, "start_time", text(str(st, "startTime")));
		json_object_set_new(x, "end_time", text(str(st, "endTime")));
	}
	out = json_pack("{s:o, s:I, s:o, s:o, s:o, s:o}", "pods", pv, "pods_total",
	    (json_int_t)json_array_size(pods), "nodes", nv, "events", ev, "ray", x, "findings",
	    json_array());
	json_array_foreach(findings, i, p) {
		if (i >= 16)
			break;
		x = json_deep_copy(p);
		json_object_del(x, "key");
		json_array_append_new(json_object_get(out, "findings"), x);
	}
	/* the whole bound: drop events, then pods, until it fits */
	for (;;) {
		char *s = json_dumps(out, JSON_COMPACT);
		size_t len = s ? strlen(s) : 0;

		free(s);
		if (len <= STATUS_PM_MAX_BYTES - 1024)
			break;
		if (json_array_size(ev) > 0)
			json_array_remove(ev, 0);
		else if (json_array_size(pv) > 0)
			json_array_remove(pv, json_array_size(pv) - 1);
		else
			break;
		json_object_set_new(out, "truncated", json_true());
	}
	return out;
}
