/* test_grow: elastic growth inside quota (issue 26, "Elastic growth escapes the quota").  The
 * KubeRay autoscaler's signal is played with the real client: `kubectl patch` of the
 * RayCluster's spec.workerGroupSpecs[].replicas, as the autoscaler raises them.  fleetd
 * records a grow request, the scheduler admits and charges it (the queue's usage grows, the
 * extra worker runs on the node it was given); a queue without room holds it (the extra pod
 * stays SchedulingGated, explain says why); a higher-priority job takes the grown workers
 * back (replicas lowered, workersToDelete naming the pod) before it preempts any whole job. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/harness/harness.h"

#define ENV		"gr"
#define H100		"nvidia-h100-80gb"
#define CLUSTER		"gr-gke-usc1"
#define TIME_SCALE	"4"
#define GATE		"fleet.io/admission"

static struct harness_fleet F;
static const char *oper, *viewer;
static char kubeconfig[300];

static int
setup(void **state)
{
	harness_ctl_home_make();
	harness_fleet_start(&F, "grow", FLEETD_SOURCE_DIR "/tests/fixtures/fleets/grow.json",
	    TIME_SCALE, NULL);
	oper = harness_fleet_token(&F, "operator", ENV);
	viewer = harness_fleet_token(&F, "viewer", ENV);
	*state = &F;
	return 0;
}

static int
teardown(void **state)
{
	if (kubeconfig[0] != '\0')
		unlink(kubeconfig);
	harness_ctl_home_drop();
	return harness_fleet_teardown(state);
}

static json_t *
kube_get(const char *path)
{
	struct http_result r = { 0 };
	json_t *out;

	harness_kube(&F.cs, &r, CLUSTER, "GET", path, NULL, NULL);
	if (r.status != 200)
		fail_msg("GET %s: %ld %s", path, r.status, r.body ? r.body : "");
	out = json_incref(r.json);
	free(r.body);
	free(r.headers);
	json_decref(r.json);
	return out;
}

/* `kubectl --kubeconfig K ARGS` against the member (the real client); fails on an error. */
static void
kubectl(const char *fmt, ...)
{
	char args[1500], cmd[2000];
	va_list ap;
	int rc;

	if (kubeconfig[0] == '\0') {
		FILE *f;
		int fd;

		snprintf(kubeconfig, sizeof(kubeconfig), "/tmp/fleetd-grow-kc.XXXXXX");
		if ((fd = mkstemp(kubeconfig)) < 0 || (f = fdopen(fd, "w")) == NULL)
			fail_msg("cannot write a kubeconfig");
		fprintf(f, "apiVersion: v1\nkind: Config\nclusters: [{name: c, cluster: {server: "
		    "\"%s/k8s/%s\", certificate-authority: \"%s\"}}]\nusers: [{name: u, user: "
		    "{token: \"%s\"}}]\ncontexts: [{name: x, context: {cluster: c, user: u}}]\n"
		    "current-context: x\n", F.cs.kube, CLUSTER, F.cs.ca,
		    harness_js(harness_cs_cluster(&F.cs, CLUSTER), "token"));
		fclose(f);
	}
	va_start(ap, fmt);
	vsnprintf(args, sizeof(args), fmt, ap);
	va_end(ap);
	snprintf(cmd, sizeof(cmd), "kubectl --kubeconfig %s --request-timeout=30s %s",
	    kubeconfig, args);
	if ((rc = system(cmd)) != 0)
		fail_msg("%s: exit %d", cmd, rc);
}

static char *
job_ns(const char *id)
{
	return harness_sql_str("SELECT manifest->'metadata'->>'namespace' FROM jobs WHERE id ="
	    " '%s'", id);
}

static char *
job_object(const char *id)
{
	return harness_sql_str("SELECT manifest->'metadata'->>'name' FROM jobs WHERE id = '%s'",
	    id);
}

/* The live RayCluster of job id (new reference). */
static json_t *
ray_cluster(const char *id)
{
	char *ns = job_ns(id), *name = job_object(id), path[400];
	json_t *o;

	snprintf(path, sizeof(path), "/apis/ray.io/v1/namespaces/%s/rayclusters/%s", ns, name);
	o = kube_get(path);
	free(ns);
	free(name);
	return o;
}

/* What the Ray autoscaler does to ask for workers: raises the group's replicas on the
 * RayCluster (kubectl patch, merge: the group list as it is, replicas changed). */
static void
autoscale(const char *id, int replicas)
{
	json_t *rc = ray_cluster(id), *groups = json_deep_copy(json_object_get(json_object_get(rc,
	    "spec"), "workerGroupSpecs")), *patch;
	char *ns = job_ns(id), *name = job_object(id), file[64] = "/tmp/fleetd-grow-patch.XXXXXX";
	int fd;

	json_object_set_new(json_array_get(groups, 0), "replicas", json_integer(replicas));
	patch = json_pack("{s:{s:o}}", "spec", "workerGroupSpecs", groups);
	if ((fd = mkstemp(file)) < 0 || json_dumpfd(patch, fd, JSON_COMPACT) != 0)
		fail_msg("cannot write the patch");
	close(fd);
	kubectl("patch raycluster %s -n %s --type merge --patch-file %s >/dev/null", name, ns,
	    file);
	unlink(file);
	json_decref(patch);
	json_decref(rc);
	free(ns);
	free(name);
}

/* The job's worker pods (new array): {name, node, phase, gated}. */
static json_t *
workers(const char *id)
{
	char *ns = job_ns(id), path[400];
	json_t *l, *p, *out = json_array();
	size_t i;

	snprintf(path, sizeof(path), "/api/v1/namespaces/%s/pods?labelSelector=fleet.io%%2Fjob-id"
	    "%%3D%s", ns, id);
	l = kube_get(path);
	json_array_foreach(json_object_get(l, "items"), i, p) {
		json_t *lb = json_object_get(json_object_get(p, "metadata"), "labels");
		json_t *sp = json_object_get(p, "spec"), *g;
		const char *role = json_string_value(json_object_get(lb, "fleet.io/role"));
		bool gated = false;
		size_t k;

		if (role == NULL || strcmp(role, "worker") != 0)
			continue;
		json_array_foreach(json_object_get(sp, "schedulingGates"), k, g)
			gated |= json_is_string(json_object_get(g, "name")) &&
			    strcmp(json_string_value(json_object_get(g, "name")), GATE) == 0;
		json_array_append_new(out, json_pack("{s:s?, s:s*, s:s?, s:b}", "name",
		    json_string_value(json_object_get(json_object_get(p, "metadata"), "name")),
		    "node", json_string_value(json_object_get(sp, "nodeName")), "phase",
		    json_string_value(json_object_get(json_object_get(p, "status"), "phase")),
		    "gated", gated));
	}
	json_decref(l);
	free(ns);
	return out;
}

static int
running_workers(const char *id)
{
	json_t *w = workers(id), *p;
	size_t i;
	int n = 0;

	json_array_foreach(w, i, p)
		n += harness_js(p, "phase") != NULL && strcmp(harness_js(p, "phase"), "Running") == 0;
	json_decref(w);
	return n;
}

/* Polls until the job has n running workers; fails after timeout_s. */
static void
wait_running_workers(const char *id, int n, double timeout_s)
{
	double end = harness_now_s() + timeout_s;
	int have, last = -1;

	while ((have = running_workers(id)) != n && harness_now_s() < end) {
		if (have != last) {
			json_t *w = workers(id);
			char *s = json_dumps(w, JSON_COMPACT);

			printf("# %.1f: job %s has %d running workers: %s\n", harness_now_s(), id, have,
			    s);
			free(s);
			json_decref(w);
			last = have;
		}
		usleep(200 * 1000);
	}
	if (have != n) {
		json_t *w = workers(id);
		char *s = json_dumps(w, JSON_COMPACT), *ev = harness_sql_str("SELECT coalesce("
		    "string_agg(type || ': ' || message, E'\\n' ORDER BY id), '') FROM job_events"
		    " WHERE job_id = '%s'", id);

		fail_msg("job %s: want %d running workers, have %s\nevents:\n%s", id, n, s, ev);
	}
}

static long
queue_usage(const char *queue)
{
	char *qid = harness_sql_str("SELECT id FROM queues WHERE name = '%s'", queue);
	json_t *st = harness_get_ok(viewer, "/v1/queues/%s/status", qid), *f;
	size_t i;
	long out = -1;

	json_array_foreach(json_object_get(st, "flavors"), i, f)
		if (strcmp(harness_js(f, "flavor"), H100) == 0)
			out = (long)harness_ji(f, "usage");
	free(qid);
	return out;
}

/* An elastic RayCluster in queue: one group of 1..max workers of 8 H100 (a node each). */
static char *
elastic(const char *name, const char *queue, int max, const char *pclass)
{
	char patch[600], *b, *id;

	snprintf(patch, sizeof(patch), "{\"kind\":\"RayCluster\",\"name\":\"%s\",\"entrypoint\":"
	    "null,%s%s%s\"worker_groups\":[{\"name\":\"w\",\"min_replicas\":1,\"max_replicas\":%d,"
	    "\"cpu\":\"1\",\"memory\":\"1Gi\",\"accelerator\":{\"flavor\":\"" H100 "\","
	    "\"count\":8}}]}", name, pclass ? "\"priority_class\":\"" : "", pclass ? pclass : "",
	    pclass ? "\"," : "", max);
	b = harness_job_body(ENV, queue, H100, 8, patch);
	id = strdup(harness_js(harness_post_created(oper, "/v1/jobs", b), "id"));
	free(b);
	json_decref(harness_job_wait(oper, id, "running", 1, 90));
	wait_running_workers(id, 1, 60);
	return id;
}

static void
cancel(const char *id)
{
	harness_call("POST", oper, NULL, "/v1/jobs/%s/cancel", id);
	json_decref(harness_job_wait(oper, id, "cancelled", 1, 60));
}

/* The nodes of the grow's placement, as a new array. */
static json_t *
grow_nodes(const char *id)
{
	char *s = harness_sql_str("SELECT coalesce(jsonb_agg(a->'node'), '[]'::jsonb)::text FROM"
	    " job_grows g, jsonb_array_elements(g.placement->'allocs') a WHERE g.job_id = '%s' AND"
	    " g.state = 'admitted'", id);
	json_t *out = json_loads(s, 0, NULL);

	free(s);
	return out;
}

static bool
has(json_t *arr, const char *s)
{
	json_t *v;
	size_t i;

	json_array_foreach(arr, i, v)
		if (json_is_string(v) && strcmp(json_string_value(v), s) == 0)
			return true;
	return false;
}

/* The autoscaler asks for a second worker; the queue has room: the grow is admitted,
 * charged (the queue's usage grows by 8), the pin names the node it was given, and the
 * second worker runs there. */
static void
test_growth_admitted_and_charged(void **state)
{
	char *id = elastic("grows", "ml", 3, NULL);
	json_t *nodes, *w, *p, *pins;
	size_t i;
	int on_grow = 0;

	(void)state;
	assert_int_equal(queue_usage("ml"), 8);
	autoscale(id, 2);
	harness_job_wait_event(id, "grow_requested", NULL, 30);
	harness_job_wait_event(id, "grow_admitted", NULL, 30);
	assert_int_equal(queue_usage("ml"), 16);
	nodes = grow_nodes(id);
	assert_int_equal(json_array_size(nodes), 1);
	wait_running_workers(id, 2, 90);
	w = workers(id);
	json_array_foreach(w, i, p)
		on_grow += harness_js(p, "node") != NULL && has(nodes, harness_js(p, "node"));
	assert_int_equal(on_grow, 1);	/* the extra worker runs where fleetd admitted it */
	{	/* the group's pin names it */
		json_t *rc = ray_cluster(id);

		pins = harness_jp(rc, "spec.workerGroupSpecs.0.template.spec.affinity.nodeAffinity."
		    "requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms.0."
		    "matchExpressions");
		{
			json_t *x, *vals = NULL;

			json_array_foreach(pins, i, x)
				if (strcmp(harness_js(x, "key"), "kubernetes.io/hostname") == 0)
					vals = json_object_get(x, "values");
			assert_non_null(vals);
			assert_true(has(vals, json_string_value(json_array_get(nodes, 0))));
			assert_int_equal(json_array_size(vals), 2);
		}
		json_decref(rc);
	}
	{	/* explain: admitted 2 of desired 2, nothing waits */
		json_t *x = harness_get_ok(viewer, "/v1/jobs/%s/placement", id);

		assert_int_equal(harness_ji(x, "elastic.0.admitted_replicas"), 2);
		assert_int_equal(harness_ji(x, "elastic.0.desired_replicas"), 2);
		assert_true(json_is_null(harness_jp(x, "elastic.0.waiting")));
	}
	/* the autoscaler scales down: the charge goes back */
	autoscale(id, 1);
	harness_job_wait_event(id, "grow_released", NULL, 30);
	assert_int_equal(queue_usage("ml"), 8);
	json_decref(nodes);
	json_decref(w);
	cancel(id);
	free(id);
}

/* The queue has no room: the grow waits (over_quota), nothing is charged, the extra pod is
 * created but stays SchedulingGated on no node, and explain says why. */
static void
test_growth_held_without_room(void **state)
{
	char *id = elastic("held", "tight", 2, NULL);
	json_t *w, *p, *x = NULL;
	size_t i;
	double end;
	int gated = 0;

	(void)state;
	autoscale(id, 2);
	harness_job_wait_event(id, "grow_requested", NULL, 30);
	end = harness_now_s() + 30;
	while (harness_sql_long("SELECT count(*) FROM job_grows WHERE job_id = '%s' AND state ="
	    " 'pending' AND reason IS NOT NULL", id) == 0 && harness_now_s() < end)
		usleep(200 * 1000);
	sleep(3);	/* many scheduler cycles (300 ms) and status passes */
	assert_int_equal(harness_sql_long("SELECT count(*) FROM job_grows WHERE job_id = '%s' AND"
	    " state = 'admitted'", id), 0);
	assert_int_equal(queue_usage("tight"), 8);
	w = workers(id);
	assert_int_equal(json_array_size(w), 2);	/* KubeRay made the pod */
	json_array_foreach(w, i, p) {
		if (!json_is_true(json_object_get(p, "gated")))
			continue;
		gated++;
		assert_null(json_object_get(p, "node"));	/* placed nowhere */
		assert_string_equal(harness_js(p, "phase"), "Pending");
	}
	assert_int_equal(gated, 1);
	assert_int_equal(running_workers(id), 1);
	x = harness_get_ok(viewer, "/v1/jobs/%s/placement", id);
	assert_int_equal(harness_ji(x, "elastic.0.admitted_replicas"), 1);
	assert_int_equal(harness_ji(x, "elastic.0.desired_replicas"), 2);
	assert_string_equal(harness_js(x, "elastic.0.waiting.reason"), "over_quota");
	assert_true(strstr(harness_js(x, "elastic.0.waiting.detail"), "quota") != NULL);
	{	/* fleetctl jobs explain says it */
		struct harness_ctl r;
		char env_url[600], env_tok[200];

		snprintf(env_url, sizeof(env_url), "FLEET_URL=%s", harness_url(&F.fd, "%s", ""));
		snprintf(env_tok, sizeof(env_tok), "FLEET_TOKEN=%s", viewer);
		harness_ctl_run(&r, NULL, (const char *const[]){ env_url, env_tok, NULL },
		    (const char *const[]){ "jobs", "explain", id, NULL });
		if (r.rc != 0 || strstr(r.out, "Elastic group w: 1 admitted, 2 desired") == NULL ||
		    strstr(r.out, "waits (over_quota)") == NULL)
			fail_msg("fleetctl jobs explain: rc %d\n%s\n%s", r.rc, r.out, r.err);
		harness_ctl_free(&r);
	}
	json_decref(w);
	cancel(id);
	free(id);
}

/* A higher-priority job needs the queue's quota: the grown worker of the running job is
 * taken back (its replicas lowered, the pod named in workersToDelete), the job keeps
 * running at its admitted minimum, no whole job is preempted, and the new job runs. */
static void
test_shrink_before_preemption(void **state)
{
	char *low = elastic("low", "ml", 2, NULL), *hi, *b;
	json_t *nodes, *rc;

	(void)state;
	autoscale(low, 2);
	harness_job_wait_event(low, "grow_admitted", NULL, 30);
	wait_running_workers(low, 2, 90);
	nodes = grow_nodes(low);
	assert_int_equal(queue_usage("ml"), 16);	/* the queue's quota is used up */
	b = harness_job_body(ENV, "ml", H100, 8, "{\"name\":\"urgent\",\"priority_class\":"
	    "\"high\"}");
	hi = strdup(harness_js(harness_post_created(oper, "/v1/jobs", b), "id"));
	free(b);
	harness_job_wait_event(low, "grow_shrunk", NULL, 30);
	harness_job_wait_event(low, "grow_released", NULL, 30);
	json_decref(harness_job_wait(oper, hi, "running", 1, 90));
	/* the grown worker was deleted by name, the job runs at its minimum, never preempted */
	rc = ray_cluster(low);
	assert_int_equal(harness_ji(rc, "spec.workerGroupSpecs.0.replicas"), 1);
	json_decref(rc);
	assert_int_equal(harness_sql_long("SELECT jsonb_array_length(data->'deleted') FROM"
	    " job_events WHERE job_id = '%s' AND type = 'grow_released' ORDER BY id DESC LIMIT 1",
	    low), 1);
	wait_running_workers(low, 1, 60);
	{	/* the worker deleted by name is the one on the grown node */
		json_t *w = workers(low), *p;
		size_t i;

		json_array_foreach(w, i, p)
			if (strcmp(harness_js(p, "phase"), "Running") == 0)
				assert_false(has(nodes, harness_js(p, "node")));
		json_decref(w);
	}
	assert_int_equal(harness_sql_long("SELECT count(*) FROM job_events WHERE job_id = '%s'"
	    " AND to_state = 'preempted'", low), 0);
	assert_int_equal(harness_sql_long("SELECT attempt FROM jobs WHERE id = '%s'", low), 1);
	{
		char *st = harness_sql_str("SELECT state FROM jobs WHERE id = '%s'", low);

		assert_string_equal(st, "running");
		free(st);
	}
	assert_int_equal(queue_usage("ml"), 16);	/* low's 8 + urgent's 8 */
	json_decref(nodes);
	cancel(hi);
	cancel(low);
	free(hi);
	free(low);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_growth_admitted_and_charged),
		cmocka_unit_test(test_growth_held_without_room),
		cmocka_unit_test(test_shrink_before_preemption),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
