/* test_status_trim: what the status watch caches keep of an object (status_watch_trim) is
 * enough for every reader — the findings, the post-mortem and the mapped status read from
 * trimmed pods, nodes, events and Ray objects are those of the whole ones as the API server
 * serves them — and the bytes nobody reads (containers, env, images, managedFields) go. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "queue/follow/status_int.h"

static const char managed[] = "[{\"manager\":\"kubelet\",\"operation\":\"Update\","
    "\"fieldsV1\":{\"f:status\":{\"f:conditions\":{},\"f:containerStatuses\":{}}}}]";

/* A pod as the API server serves it: the fields the status path reads and the ones it
 * does not. */
static json_t *
served_pod(const char *name, const char *type, const char *node, const char *cstatus)
{
	json_t *p = json_pack("{s:s, s:s, s:{s:s, s:s, s:s, s:s, s:s, s:{s:s, s:s, s:s, s:s, "
	    "s:s, s:s}, s:{s:s}, s:o, s:[{s:s, s:s, s:s}]}, s:{s:s, s:[{s:s, s:s, s:[s], "
	    "s:[{s:s, s:s}], s:{s:{s:s}}, s:[{s:s, s:s}]}], s:[{s:s, s:{}}], s:[{s:s, s:s}], "
	    "s:{s:s}, s:{s:{s:{s:[{s:[{s:s, s:s, s:[s]}]}]}}}, s:[{s:s}]}, "
	    "s:{s:s, s:s, s:s, s:[{s:s, s:s}]}}",
	    "apiVersion", "v1", "kind", "Pod",
	    "metadata", "name", name, "namespace", "team-a", "uid", "u-1",
	    "resourceVersion", "42", "creationTimestamp", "2026-01-01T00:00:00Z",
	    "labels", "ray.io/node-type", type, "ray.io/group", strcmp(type, "head") == 0 ?
	    "headgroup" : "gpu", "fleet.io/job-id", "j-1", "fleet.io/attempt", "1",
	    "fleet.io/role", type, "fleet.io/group", "gpu",
	    "annotations", "ray.io/ft-enabled", "false",
	    "managedFields", json_loads(managed, 0, NULL),
	    "ownerReferences", "kind", "RayCluster", "name", "rc", "uid", "u-rc",
	    "spec", "nodeName", node, "containers", "name", "ray-worker", "image",
	    "rayproject/ray:2.52.0-gpu", "command", "ray start --block", "env", "name",
	    "RAY_TOKEN", "value", "hunter2", "resources", "limits", "nvidia.com/gpu", "8",
	    "volumeMounts", "name", "shm", "mountPath", "/dev/shm",
	    "volumes", "name", "shm", "emptyDir",
	    "tolerations", "key", "nvidia.com/gpu", "operator", "Exists",
	    "nodeSelector", "node.kubernetes.io/instance-type", "ml.p5.48xlarge",
	    "affinity", "nodeAffinity", "requiredDuringSchedulingIgnoredDuringExecution",
	    "nodeSelectorTerms", "matchExpressions", "key", "kubernetes.io/hostname", "operator",
	    "In", "values", node,
	    "schedulingGates", "name", "fleet.io/admission",
	    "status", "phase", "Running", "hostIP", "10.0.0.1", "podIP", "10.1.0.1",
	    "conditions", "type", "Ready", "status", "True");

	if (cstatus != NULL)
		json_object_set_new(json_object_get(p, "status"), "containerStatuses",
		    json_loads(cstatus, 0, NULL));
	return p;
}

/* A node as the API server serves it (images and info included). */
static json_t *
served_node(const char *name, const char *taint, const char *ready, const char *health)
{
	json_t *n = json_pack("{s:s, s:s, s:{s:s, s:s, s:s, s:{s:s, s:s}, s:{s:s}, s:o}, "
	    "s:{s:s, s:s, s:[]}, s:{s:{s:s, s:s}, s:{s:s, s:s}, s:[{s:s, s:s, s:s, s:s, s:s, "
	    "s:s}], s:[{s:s, s:s}], s:{s:s, s:s}, s:[]}}",
	    "apiVersion", "v1", "kind", "Node",
	    "metadata", "name", name, "uid", "n-u", "resourceVersion", "7", "labels",
	    "kubernetes.io/hostname", name, "sagemaker.amazonaws.com/node-health-status",
	    health, "annotations", "node.alpha.kubernetes.io/ttl", "0", "managedFields",
	    json_loads(managed, 0, NULL),
	    "spec", "providerID", "aws:///us-west-2a/i-0", "podCIDR", "10.1.0.0/24", "taints",
	    "status", "capacity", "cpu", "192", "nvidia.com/gpu", "8", "allocatable", "cpu",
	    "191", "nvidia.com/gpu", "8", "conditions", "type", "Ready", "status", ready,
	    "reason", "KubeletReady", "message", "kubelet is posting ready status",
	    "lastHeartbeatTime", "2026-01-01T00:10:00Z", "lastTransitionTime",
	    "2026-01-01T00:00:00Z", "addresses", "type", "Hostname", "address", name,
	    "nodeInfo", "kubeletVersion", "v1.30.4", "osImage", "Amazon Linux 2023", "images");

	for (int i = 0; i < 40; i++)
		json_array_append_new(json_object_get(json_object_get(n, "status"), "images"),
		    json_pack("{s:[s], s:i}", "names", "registry.example/some/large/image:tag",
		    "sizeBytes", 1000000 + i));
	if (taint != NULL)
		json_array_append_new(json_object_get(json_object_get(n, "spec"), "taints"),
		    json_pack("{s:s, s:s, s:s}", "key", taint, "value", "true", "effect",
		    "NoSchedule"));
	return n;
}

static json_t *
served_event(const char *kind, const char *name, const char *reason, const char *message)
{
	return json_pack("{s:s, s:s, s:{s:s, s:s, s:s, s:s, s:s, s:o}, s:{s:s, s:s, s:s}, "
	    "s:s, s:s, s:s, s:i, s:s, s:s, s:{s:s, s:s}, s:s, s:s}",
	    "apiVersion", "v1", "kind", "Event",
	    "metadata", "name", "ev.1", "namespace", "team-a", "uid", "e-u", "resourceVersion",
	    "9", "creationTimestamp", "2026-01-01T00:01:00Z", "managedFields",
	    json_loads(managed, 0, NULL),
	    "involvedObject", "kind", kind, "name", name, "namespace", "team-a",
	    "type", "Warning", "reason", reason, "message", message, "count", 3,
	    "firstTimestamp", "2026-01-01T00:01:00Z", "lastTimestamp", "2026-01-01T00:02:00Z",
	    "source", "component", "kubelet", "host", "n-gpu-2",
	    "reportingComponent", "kubelet", "reportingInstance", "n-gpu-2");
}

struct scene {
	const char	*what;
	const char	*cstatus;	/* the worker's containerStatuses, or NULL */
	const char	*taint;		/* on the worker's node */
	const char	*ready;
	const char	*health;	/* HyperPod's node health label */
	const char	*event_kind, *event_reason, *event_message;
};

static const struct scene scenes[] = {
	{ "oom", "[{\"name\":\"ray-worker\",\"image\":\"r\",\"ready\":true,\"restartCount\":1,"
	    "\"state\":{\"running\":{\"startedAt\":\"2026-01-01T00:05:00Z\"}},\"lastState\":"
	    "{\"terminated\":{\"exitCode\":137,\"reason\":\"OOMKilled\"}}}]", NULL, "True",
	    "Schedulable", NULL, NULL, NULL },
	{ "image", "[{\"name\":\"ray-worker\",\"image\":\"x:nope\",\"state\":{\"waiting\":"
	    "{\"reason\":\"ErrImagePull\",\"message\":\"not found\"}}}]", NULL, "True",
	    "Schedulable", "Pod", "Failed", "failed to pull image x:nope" },
	{ "reclaim", NULL, "aws-node-termination-handler/spot-itn", "True", "Schedulable",
	    "Node", "SpotInterruption", "spot interruption notice" },
	{ "not ready", NULL, "node.kubernetes.io/unreachable", "Unknown", "Schedulable", NULL,
	    NULL, NULL },
	{ "unhealthy", NULL, NULL, "True", "UnschedulablePendingReplacement", NULL, NULL, NULL },
	{ "stockout", NULL, NULL, "True", "Schedulable", "Pod", "FailedScheduling",
	    "0/6 nodes are available" },
};

/* Each of a's members (an array or an object of objects) trimmed as kind (a new one). */
static json_t *
trimmed(const char *kind, json_t *a)
{
	json_t *out, *v;
	const char *k;
	size_t i;

	if (json_is_array(a)) {
		out = json_array();
		json_array_foreach(a, i, v)
			json_array_append_new(out, status_watch_trim(kind, v));
		return out;
	}
	out = json_object();
	json_object_foreach(a, k, v)
		json_object_set_new(out, k, status_watch_trim(kind, v));
	return out;
}

static size_t
bytes(json_t *o)
{
	char *s = json_dumps(o, JSON_COMPACT);
	size_t n = strlen(s);

	free(s);
	return n;
}

static void
assert_same(const char *what, const char *part, json_t *whole, json_t *trim)
{
	if (!json_equal(whole, trim))
		fail_msg("%s: %s differs:\n%s\n%s", what, part, json_dumps(whole, JSON_COMPACT),
		    json_dumps(trim, JSON_COMPACT));
}

static void
test_readers_see_the_same(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(scenes) / sizeof(scenes[0]); i++) {
		const struct scene *c = &scenes[i];
		json_t *pods = json_array(), *nodes = json_object(), *events = json_array(),
		    *pins = json_pack("[s]", "n-gpu-2"), *tp, *tn, *te, *a, *b;
		char *s;

		json_array_append_new(pods, served_pod("j-head-a", "head", "n-cpu", NULL));
		json_array_append_new(pods, served_pod("j-gpu-worker-a", "worker", "n-gpu-2",
		    c->cstatus));
		json_object_set_new(nodes, "n-cpu", served_node("n-cpu", NULL, "True",
		    "Schedulable"));
		json_object_set_new(nodes, "n-gpu-2", served_node("n-gpu-2", c->taint, c->ready,
		    c->health));
		if (c->event_reason != NULL)
			json_array_append_new(events, served_event(c->event_kind, strcmp(c->event_kind,
			    "Node") == 0 ? "n-gpu-2" : "j-gpu-worker-a", c->event_reason,
			    c->event_message));
		tp = trimmed("Pod", pods);
		tn = trimmed("Node", nodes);
		te = trimmed("Event", events);
		a = status_classify(pods, nodes, events, pins);
		b = status_classify(tp, tn, te, pins);
		assert_true(json_array_size(a) > 0);
		assert_same(c->what, "findings", a, b);
		json_decref(a);
		json_decref(b);
		a = status_postmortem(pods, events, nodes, "RayJob", NULL, "Failed", "", NULL);
		b = status_postmortem(tp, te, tn, "RayJob", NULL, "Failed", "", NULL);
		assert_same(c->what, "post-mortem", a, b);
		json_decref(a);
		json_decref(b);
		/* what grow.c and repair.c read of a pod stays */
		a = json_object_get(json_array_get(pods, 1), "spec");
		b = json_object_get(json_array_get(tp, 1), "spec");
		assert_same(c->what, "pins", json_object_get(a, "affinity"),
		    json_object_get(b, "affinity"));
		assert_same(c->what, "gates", json_object_get(a, "schedulingGates"),
		    json_object_get(b, "schedulingGates"));
		assert_same(c->what, "labels", json_object_get(json_object_get(json_array_get(pods,
		    1), "metadata"), "labels"), json_object_get(json_object_get(json_array_get(tp,
		    1), "metadata"), "labels"));
		/* ... and what nobody reads goes */
		s = json_dumps(tp, JSON_COMPACT);
		assert_null(strstr(s, "hunter2"));
		assert_null(strstr(s, "managedFields"));
		free(s);
		assert_true(bytes(tp) < bytes(pods));
		assert_true(bytes(tn) * 4 < bytes(nodes));
		assert_true(json_array_size(events) == 0 || bytes(te) < bytes(events));
		json_decref(tp);
		json_decref(tn);
		json_decref(te);
		json_decref(pins);
		json_decref(pods);
		json_decref(nodes);
		json_decref(events);
	}
}

/* A Ray object loses only the server's bookkeeping: its status maps the same. */
static void
test_ray_object(void **state)
{
	json_t *rj = json_pack("{s:s, s:s, s:{s:s, s:s, s:s, s:{s:s, s:s}, s:o}, s:{s:s, s:o}, "
	    "s:{s:s, s:s, s:s, s:s}}", "apiVersion", "ray.io/v1", "kind", "RayJob", "metadata",
	    "name", "w", "namespace", "team-a", "uid", "u", "annotations",
	    "kubectl.kubernetes.io/last-applied-configuration", "{\"a huge\":\"copy\"}",
	    "fleet.io/checkpoint-requested", "2026-01-01T00:00:00Z", "managedFields",
	    json_loads(managed, 0, NULL), "spec", "entrypoint", "python t.py", "rayClusterSpec",
	    json_pack("{s:[]}", "workerGroupSpecs"), "status", "jobDeploymentStatus",
	    "Failed", "jobStatus", "FAILED", "reason", "AppFailed", "message", "exit 1");
	json_t *t = status_watch_trim("RayJob", rj);
	struct status_obs a, b;

	(void)state;
	status_map("RayJob", rj, &a);
	status_map("RayJob", t, &b);
	assert_int_equal(a.phase, b.phase);
	assert_string_equal(a.word, b.word);
	assert_string_equal(a.message, b.message);
	assert_null(json_object_get(json_object_get(t, "metadata"), "managedFields"));
	assert_null(json_object_get(json_object_get(json_object_get(t, "metadata"),
	    "annotations"), "kubectl.kubernetes.io/last-applied-configuration"));
	assert_non_null(json_object_get(json_object_get(json_object_get(t, "metadata"),
	    "annotations"), "fleet.io/checkpoint-requested"));
	assert_true(json_equal(json_object_get(rj, "spec"), json_object_get(t, "spec")));
	/* the served object is not changed */
	assert_non_null(json_object_get(json_object_get(rj, "metadata"), "managedFields"));
	json_decref(t);
	json_decref(rj);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_readers_see_the_same),
		cmocka_unit_test(test_ray_object),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
