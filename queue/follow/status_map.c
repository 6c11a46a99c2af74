/* status_map: KubeRay status fields to job phases — RayJob jobDeploymentStatus with
 * jobStatus and reason, RayCluster state and conditions, RayService serviceStatus and its
 * Ready condition, RayCronJob lastScheduleTime.  Pure. */
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "queue/follow/status.h"

static const char *
str(json_t *o, const char *k)
{
	const char *s = json_string_value(json_object_get(o, k));

	return s ? s : "";
}

static bool
is(const char *a, const char *b)
{
	return strcmp(a, b) == 0;
}

/* Status of condition type in st.conditions: "True", "False" or "". */
static const char *
condition(json_t *st, const char *type, json_t **which)
{
	json_t *c;
	size_t i;

	json_array_foreach(json_object_get(st, "conditions"), i, c)
		if (is(str(c, "type"), type)) {
			if (which != NULL)
				*which = c;
			return str(c, "status");
		}
	return "";
}

static void
failure(struct status_obs *o, const char *reason, const char *msg)
{
	o->phase = STATUS_FAILED;
	snprintf(o->message, sizeof(o->message), "%s%s%s", reason, reason[0] && msg[0] ? ": " :
	    "", msg);
	if (o->message[0] == '\0')
		snprintf(o->message, sizeof(o->message), "the operator reported a failure");
}

static void
rayjob(json_t *st, struct status_obs *o)
{
	const char *jds = str(st, "jobDeploymentStatus"), *js = str(st, "jobStatus"),
	    *reason = str(st, "reason"), *msg = str(st, "message");

	snprintf(o->word, sizeof(o->word), "%s%s%s", jds[0] ? jds : "New", js[0] ? "/" : "", js);
	if (is(jds, "Complete")) {
		if (js[0] == '\0' || is(js, "SUCCEEDED"))
			o->phase = STATUS_SUCCEEDED;
		else
			failure(o, reason[0] ? reason : js, msg);
	} else if (is(jds, "Failed") || is(jds, "ValidationFailed")) {
		failure(o, reason[0] ? reason : jds, msg);
	} else if (is(jds, "Running") || is(jds, "Retrying")) {
		o->phase = STATUS_RUNNING;
		if (is(jds, "Retrying"))
			snprintf(o->message, sizeof(o->message), "%s%s%s", reason, reason[0] ? ": " :
			    "", msg[0] ? msg : "the operator retries the job");
	} else if (is(jds, "Suspended") || is(jds, "Suspending")) {
		o->phase = STATUS_SUSPENDED;
	}
}

static void
raycluster(json_t *st, struct status_obs *o)
{
	const char *state = str(st, "state");
	json_t *c = NULL;

	snprintf(o->word, sizeof(o->word), "%s", state[0] ? state : "provisioning");
	if (strcasecmp(state, "ready") == 0 || is(condition(st, "RayClusterProvisioned", NULL),
	    "True"))
		o->phase = STATUS_RUNNING;
	if (strcasecmp(state, "suspended") == 0)
		o->phase = STATUS_SUSPENDED;
	if (strcasecmp(state, "failed") == 0)
		failure(o, str(st, "reason"), str(st, "message"));
	if (is(condition(st, "ReplicaFailure", &c), "True") && o->phase != STATUS_FAILED)
		snprintf(o->message, sizeof(o->message), "%s: %s", str(c, "reason"),
		    str(c, "message"));
}

static void
rayservice(json_t *st, struct status_obs *o)
{
	const char *ss = str(st, "serviceStatus"), *ready = condition(st, "Ready", NULL);

	snprintf(o->word, sizeof(o->word), "%s", ss[0] ? ss : is(ready, "True") ? "Ready" :
	    "Initializing");
	if (is(ss, "Running") || is(ready, "True"))
		o->phase = STATUS_RUNNING;
}

void
status_map(const char *kind, json_t *live, struct status_obs *out)
{
	json_t *st = json_object_get(live, "status"),
	    *spec = json_object_get(live, "spec");

	memset(out, 0, sizeof(*out));
	out->phase = STATUS_PENDING;
	if (kind == NULL || !json_is_object(live))
		return;
	if (!json_is_object(st))
		st = NULL;
	if (is(kind, "RayJob")) {
		rayjob(st, out);
	} else if (is(kind, "RayCluster")) {
		raycluster(st, out);
	} else if (is(kind, "RayService")) {
		rayservice(st, out);
	} else if (is(kind, "RayCronJob")) {
		const char *last = str(st, "lastScheduleTime");

		/* a cron job runs once accepted: it schedules RayJobs from now on */
		out->phase = json_is_true(json_object_get(spec, "suspend")) ? STATUS_SUSPENDED :
		    STATUS_RUNNING;
		snprintf(out->word, sizeof(out->word), "%s%s", last[0] ? "last scheduled " :
		    "scheduled", last);
	}
	if (out->word[0] == '\0')
		snprintf(out->word, sizeof(out->word), "unknown");
}

bool
status_event_spot(const char *reason, const char *message)
{
	if (reason == NULL)
		return false;
	if (is(reason, "PreemptionNotice") || is(reason, "PreemptScheduled") ||
	    is(reason, "Preempted") || is(reason, "SpotInterruption"))
		return true;
	return message != NULL && is(reason, "Evicted") && strstr(message, "spot") != NULL;
}

const char *
status_phase_name(enum status_phase p)
{
	switch (p) {
	case STATUS_PENDING:	return "pending";
	case STATUS_RUNNING:	return "running";
	case STATUS_SUCCEEDED:	return "succeeded";
	case STATUS_FAILED:	return "failed";
	case STATUS_SUSPENDED:	return "suspended";
	}
	return "unknown";
}
