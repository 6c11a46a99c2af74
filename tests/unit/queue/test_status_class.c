/* test_status_class: each provider's documented failure signal maps to its class, with the
 * pod, rank, node and evidence (queue/follow/status_class.c); the post-mortem keeps its
 * bounds (queue/follow/status_postmortem.c). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "queue/follow/status.h"

static json_t *
pod(const char *name, const char *type, const char *node, const char *cstatus)
{
	json_t *p = json_pack("{s:{s:s, s:{s:s, s:s}}, s:{s:s}, s:{s:s}}", "metadata", "name",
	    name, "labels", "ray.io/node-type", type, "ray.io/group", strcmp(type, "head") == 0 ?
	    "headgroup" : "gpu", "spec", "nodeName", node, "status", "phase", "Running");

	if (cstatus != NULL)
		json_object_set_new(json_object_get(p, "status"), "containerStatuses",
		    json_loads(cstatus, 0, NULL));
	return p;
}

static json_t *
node(const char *name, const char *taint, const char *ready)
{
	json_t *n = json_pack("{s:{s:s, s:{}}, s:{s:[]}, s:{s:[{s:s, s:s}]}}", "metadata", "name",
	    name, "labels", "spec", "taints", "status", "conditions", "type", "Ready", "status",
	    ready);

	if (taint != NULL)
		json_array_append_new(json_object_get(json_object_get(n, "spec"), "taints"),
		    json_pack("{s:s, s:s, s:s}", "key", taint, "value", "true", "effect",
		    "NoSchedule"));
	return n;
}

struct klass_case {
	const char	*what;
	const char	*cstatus;	/* the worker's containerStatuses, or NULL */
	const char	*taint;		/* on the worker's node */
	const char	*ready;		/* the worker's node Ready status */
	bool		 node_gone;
	const char	*event_reason;	/* a Warning event on the worker */
	const char	*want_class, *want_reason, *ev_key, *ev_value;
};

static const struct klass_case cases[] = {
	{ "oom", "[{\"name\":\"ray-worker\",\"restartCount\":1,\"state\":{\"running\":{}},"
	    "\"lastState\":{\"terminated\":{\"exitCode\":137,\"reason\":\"OOMKilled\"}}}]", NULL,
	    "True", false, NULL, "user_code", "OOMKilled", "exit_code", NULL },
	{ "image", "[{\"name\":\"ray-worker\",\"image\":\"x:nope\",\"state\":{\"waiting\":"
	    "{\"reason\":\"ErrImagePull\",\"message\":\"not found\"}}}]", NULL, "True", false, NULL,
	    "configuration", "ErrImagePull", "reason", "ErrImagePull" },
	{ "invalid image", "[{\"name\":\"ray-worker\",\"state\":{\"waiting\":{\"reason\":"
	    "\"InvalidImageName\"}}}]", NULL, "True", false, NULL, "configuration",
	    "InvalidImageName", "reason", "InvalidImageName" },
	{ "crash loop", "[{\"name\":\"ray-worker\",\"restartCount\":4,\"state\":{\"waiting\":"
	    "{\"reason\":\"CrashLoopBackOff\"}},\"lastState\":{\"terminated\":{\"exitCode\":1,"
	    "\"reason\":\"Error\"}}}]", NULL, "True", false, NULL, "user_code", "CrashLoopBackOff",
	    "exit_code", NULL },
	{ "exit 2", "[{\"name\":\"ray-worker\",\"state\":{\"terminated\":{\"exitCode\":2,"
	    "\"reason\":\"Error\"}}}]", NULL, "True", false, NULL, "user_code", "Error",
	    "exit_code", NULL },
	{ "gke reclaim", NULL, "cloud.google.com/impending-node-termination", "True", false, NULL,
	    "preemption", "ReclaimTaint", "taint",
	    "cloud.google.com/impending-node-termination=true:NoSchedule" },
	{ "aws nth", NULL, "aws-node-termination-handler/spot-itn", "True", false, NULL,
	    "preemption", "ReclaimTaint", "taint",
	    "aws-node-termination-handler/spot-itn=true:NoSchedule" },
	{ "node not ready", NULL, NULL, "Unknown", false, NULL, "infrastructure", "NodeNotReady",
	    "condition", NULL },
	{ "unreachable", NULL, "node.kubernetes.io/unreachable", "True", false, NULL,
	    "infrastructure", "NodeNotReady", "taint", NULL },
	{ "gpu fault", NULL, "nvidia.com/gpu-unhealthy", "True", false, NULL, "infrastructure",
	    "GPUFault", "taint", NULL },
	{ "node deleted", NULL, NULL, "True", true, NULL, "infrastructure", "NodeDeleted", "node",
	    NULL },
	{ "stockout", NULL, NULL, "True", false, "NotTriggerScaleUp", "capacity",
	    "NotTriggerScaleUp", "reason", "NotTriggerScaleUp" },
};

static void
test_classes(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const struct klass_case *c = &cases[i];
		json_t *pods = json_array(), *nodes = json_object(), *events = json_array(), *out, *f,
		    *hit = NULL, *ev;
		size_t k;

		json_array_append_new(pods, pod("j-head-a", "head", "n-cpu", NULL));
		json_array_append_new(pods, pod("j-gpu-worker-b", "worker", "n-gpu-1", NULL));
		json_array_append_new(pods, pod("j-gpu-worker-a", "worker", "n-gpu-2", c->cstatus));
		json_object_set_new(nodes, "n-cpu", node("n-cpu", NULL, "True"));
		json_object_set_new(nodes, "n-gpu-1", node("n-gpu-1", "nvidia.com/gpu", "True"));
		if (!c->node_gone)
			json_object_set_new(nodes, "n-gpu-2", node("n-gpu-2", c->taint, c->ready));
		if (c->event_reason != NULL)
			json_array_append_new(events, json_pack("{s:s, s:s, s:{s:s, s:s}}", "reason",
			    c->event_reason, "message", "pod didn't trigger scale-up",
			    "involvedObject", "kind", "Pod", "name", "j-gpu-worker-a"));
		out = status_classify(pods, nodes, events, NULL);
		json_array_foreach(out, k, f)
			if (strcmp(json_string_value(json_object_get(f, "class")), c->want_class) == 0)
				hit = f;
		if (hit == NULL)
			fail_msg("%s: no %s finding in %s", c->what, c->want_class,
			    json_dumps(out, JSON_COMPACT));
		assert_string_equal(json_string_value(json_object_get(hit, "reason")), c->want_reason);
		if (strcmp(c->want_class, "capacity") != 0) {
			assert_string_equal(json_string_value(json_array_get(json_object_get(hit,
			    "pods"), 0)), "j-gpu-worker-a");
			/* ranks by name within the group: worker-a is gpu-0 */
			assert_string_equal(json_string_value(json_array_get(json_object_get(hit,
			    "ranks"), 0)), "gpu-0");
			assert_string_equal(json_string_value(json_array_get(json_object_get(hit,
			    "nodes"), 0)), "n-gpu-2");
		}
		ev = json_object_get(json_object_get(hit, "evidence"), c->ev_key);
		if (ev == NULL)
			fail_msg("%s: no evidence %s in %s", c->what, c->ev_key,
			    json_dumps(hit, JSON_COMPACT));
		if (c->ev_value != NULL)
			assert_string_equal(json_string_value(ev), c->ev_value);
		/* the healthy GPU node (nvidia.com/gpu taint) says nothing */
		json_array_foreach(out, k, f)
			assert_false(strcmp(json_string_value(json_array_get(json_object_get(f,
			    "nodes"), 0)) ? json_string_value(json_array_get(json_object_get(f,
			    "nodes"), 0)) : "", "n-gpu-1") == 0);
		json_decref(out);
		json_decref(pods);
		json_decref(nodes);
		json_decref(events);
	}
	assert_true(status_class_retried("infrastructure"));
	assert_true(status_class_retried("preemption"));
	assert_false(status_class_retried("user_code"));
	assert_false(status_class_retried("configuration"));
}

/* 200 pods with long messages and 500 events: the record stays under its bound. */
static void
test_postmortem_bounded(void **state)
{
	json_t *pods = json_array(), *events = json_array(), *pm;
	char big[4000], name[64], *s;

	(void)state;
	memset(big, 'x', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	for (int i = 0; i < 200; i++) {
		json_t *p;

		snprintf(name, sizeof(name), "p-%d", i);
		p = pod(name, "worker", "n", NULL);
		json_object_set_new(json_object_get(p, "status"), "containerStatuses", json_pack(
		    "[{s:s, s:{s:{s:i, s:s, s:s}}}]", "name", "c", "state", "terminated", "exitCode",
		    1, "reason", "Error", "message", big));
		json_array_append_new(pods, p);
	}
	for (int i = 0; i < 500; i++)
		json_array_append_new(events, json_pack("{s:s, s:s, s:{s:s, s:s}}", "reason", "BackOff",
		    "message", big, "involvedObject", "kind", "Pod", "name", "p-1"));
	pm = status_postmortem(pods, events, NULL, "RayJob", NULL, "Failed", big, NULL);
	s = json_dumps(pm, JSON_COMPACT);
	assert_true(strlen(s) < STATUS_PM_MAX_BYTES);
	assert_true(json_array_size(json_object_get(pm, "pods")) <= STATUS_PM_PODS);
	assert_true(json_array_size(json_object_get(pm, "events")) <= STATUS_PM_EVENTS);
	assert_int_equal(json_integer_value(json_object_get(pm, "pods_total")), 200);
	free(s);
	json_decref(pm);
	json_decref(pods);
	json_decref(events);
}

/* The kubelet's two shapes of an OOM kill are kept as they are: restarted (restartPolicy
 * Always) — running again, the kill in last_state, 1 restart, ready; not restarted (Never)
 * — terminated OOMKilled with exit 137, not ready, the pod Failed. */
static void
test_postmortem_kubelet_oom(void **state)
{
	json_t *pods = json_array(), *events = json_array(), *pm, *c;

	(void)state;
	json_array_append_new(pods, pod("w-restarted", "worker", "n1", "[{\"name\":\"ray-worker\","
	    "\"ready\":true,\"restartCount\":1,\"image\":\"rayproject/ray:2.52.0-gpu\","
	    "\"state\":{\"running\":{\"startedAt\":\"2026-01-01T00:05:00Z\"}},\"lastState\":"
	    "{\"terminated\":{\"exitCode\":137,\"reason\":\"OOMKilled\",\"startedAt\":"
	    "\"2026-01-01T00:00:00Z\",\"finishedAt\":\"2026-01-01T00:04:59Z\"}}}]"));
	json_array_append_new(pods, pod("w-final", "worker", "n2", "[{\"name\":\"ray-worker\","
	    "\"ready\":false,\"restartCount\":0,\"image\":\"rayproject/ray:2.52.0-gpu\","
	    "\"state\":{\"terminated\":{\"exitCode\":137,\"reason\":\"OOMKilled\"}}}]"));
	json_object_set_new(json_object_get(json_array_get(pods, 1), "status"), "phase",
	    json_string("Failed"));
	pm = status_postmortem(pods, events, NULL, "RayJob", NULL, "Failed", "", NULL);
	c = json_array_get(json_object_get(json_array_get(json_object_get(pm, "pods"), 0),
	    "containers"), 0);
	assert_string_equal(json_string_value(json_object_get(json_object_get(c, "state"),
	    "state")), "running");
	assert_string_equal(json_string_value(json_object_get(json_object_get(c, "last_state"),
	    "reason")), "OOMKilled");
	assert_int_equal(json_integer_value(json_object_get(json_object_get(c, "last_state"),
	    "exit_code")), 137);
	assert_int_equal(json_integer_value(json_object_get(c, "restarts")), 1);
	assert_true(json_is_true(json_object_get(c, "ready")));
	c = json_array_get(json_object_get(json_array_get(json_object_get(pm, "pods"), 1),
	    "containers"), 0);
	assert_string_equal(json_string_value(json_object_get(json_object_get(c, "state"),
	    "state")), "terminated");
	assert_string_equal(json_string_value(json_object_get(json_object_get(c, "state"),
	    "reason")), "OOMKilled");
	assert_int_equal(json_integer_value(json_object_get(json_object_get(c, "state"),
	    "exit_code")), 137);
	assert_true(json_is_false(json_object_get(c, "ready")));
	assert_null(json_object_get(c, "last_state"));
	assert_string_equal(json_string_value(json_object_get(json_array_get(json_object_get(pm,
	    "pods"), 1), "phase")), "Failed");
	json_decref(pm);
	json_decref(pods);
	json_decref(events);
}

/* AWS's termination handler and AKS's node auto-drain drain a reclaimed node at the notice:
 * no pod of the job sits there any more, yet the job is pinned to it.  The reclaim taint is
 * the job's preemption through its pins; a pinned node that is merely gone is not a finding
 * here (repair's); without the pins nothing is found (the drill's six jobs before). */
static void
test_pinned_drained_node(void **state)
{
	json_t *pods = json_array(), *nodes = json_object(), *events = json_array(),
	    *pins = json_pack("[s, s, s]", "n-gpu-1", "n-gpu-2", "n-gone"), *out, *f;

	(void)state;
	json_array_append_new(pods, pod("j-head-a", "head", "n-cpu", NULL));
	json_array_append_new(pods, pod("j-gpu-worker-b", "worker", "n-gpu-1", NULL));
	json_object_set_new(nodes, "n-cpu", node("n-cpu", NULL, "True"));
	json_object_set_new(nodes, "n-gpu-1", node("n-gpu-1", "nvidia.com/gpu", "True"));
	json_object_set_new(nodes, "n-gpu-2", node("n-gpu-2",
	    "aws-node-termination-handler/spot-itn", "True"));
	out = status_classify(pods, nodes, events, NULL);
	assert_int_equal(json_array_size(out), 0);
	json_decref(out);
	out = status_classify(pods, nodes, events, pins);
	assert_int_equal(json_array_size(out), 1);
	f = json_array_get(out, 0);
	assert_string_equal(json_string_value(json_object_get(f, "class")), "preemption");
	assert_string_equal(json_string_value(json_object_get(f, "reason")), "ReclaimTaint");
	assert_string_equal(json_string_value(json_array_get(json_object_get(f, "nodes"), 0)),
	    "n-gpu-2");
	assert_string_equal(json_string_value(json_object_get(json_object_get(f, "evidence"),
	    "taint")), "aws-node-termination-handler/spot-itn=true:NoSchedule");
	json_decref(out);
	json_decref(pins);
	json_decref(pods);
	json_decref(nodes);
	json_decref(events);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_classes),
		cmocka_unit_test(test_pinned_drained_node),
		cmocka_unit_test(test_postmortem_bounded),
		cmocka_unit_test(test_postmortem_kubelet_oom),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
