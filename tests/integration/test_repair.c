/* test_repair: a node lost under a running job is repaired (issue 24, item 1) — deleted, or
 * NotReady past the grace (set with kubectl, as the outside world does) — a spare of the
 * same pool is pinned in the lost node's place, the replacement pod runs there and the
 * placement says so; a node back within the grace is left alone; two jobs losing their
 * nodes at once with one spare: one is repaired, the other waits (the spare is charged);
 * with no spare left the job's explain says waiting_for_spare. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "tests/harness/harness.h"

#define ENV		"fl"
#define H100		"nvidia-h100-80gb"
#define CLUSTER		"fl-gke-usc1"
#define POOL		"h100"
#define TIME_SCALE	"4"
#define GRACE_S		8	/* fleetd's NotReady grace in this test: 2 s of NotReady and two
				 * kubectl calls stay well within it */
#define STR_(x)		#x
#define STR(x)		STR_(x)

static struct harness_fleet F;
static const char *oper, *viewer;

static int
setup(void **state)
{
	harness_fleet_ctl_start(&F, "repair", FLEETD_SOURCE_DIR
	    "/tests/fixtures/fleets/failures.json", TIME_SCALE, (const char *const[]){ "FLEETD_REPAIR_NOTREADY_GRACE=" STR(GRACE_S),
	    NULL });
	harness_fleet_roles(&F, ENV, &oper, &viewer, NULL, NULL);
	*state = &F;
	return 0;
}

static char kubeconfig[300];

static int
teardown(void **state)
{
	if (kubeconfig[0] != '\0')
		unlink(kubeconfig);
	return harness_fleet_ctl_teardown(state);
}

/* GET of a member's path; the answer's JSON (new reference). */
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

/* As `kubectl delete node NAME` does it. */
static void
delete_node(const char *node)
{
	struct http_result r = { 0 };
	char path[200];

	snprintf(path, sizeof(path), "/api/v1/nodes/%s", node);
	harness_kube(&F.cs, &r, CLUSTER, "DELETE", path, NULL, NULL);
	if (r.status != 200)
		fail_msg("DELETE %s: %ld %s", path, r.status, r.body ? r.body : "");
	free(r.body);
	free(r.headers);
	json_decref(r.json);
}

/* Runs `kubectl --kubeconfig K ARGS` (the real client) against the member; fails the test
 * on a non-zero exit.  K names the member's API server, its CA and its token. */
static void
kubectl(const char *fmt, ...)
{
	char args[1500], cmd[2000];
	va_list ap;
	int rc;

	if (kubeconfig[0] == '\0') {
		FILE *f;
		int fd;

		snprintf(kubeconfig, sizeof(kubeconfig), "/tmp/fleetd-repair-kc.XXXXXX");
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

/* `kubectl patch node N --subresource=status`: its Ready condition set to status (True,
 * False or Unknown, with the reasons the kubelet and the node lifecycle controller give). */
static void
node_ready(const char *node, const char *status)
{
	char ts[32];
	time_t now = time(NULL);
	bool yes = strcmp(status, "True") == 0;

	strftime(ts, sizeof(ts), "%Y-%m-%dT%H:%M:%SZ", gmtime(&now));
	kubectl("patch node %s --subresource=status --type=strategic -p '{\"status\":"
	    "{\"conditions\":[{\"type\":\"Ready\",\"status\":\"%s\",\"reason\":\"%s\","
	    "\"message\":\"%s\",\"lastTransitionTime\":\"%s\"}]}}' >/dev/null", node, status,
	    yes ? "KubeletReady" : strcmp(status, "False") == 0 ? "KubeletNotReady" :
	    "NodeStatusUnknown", yes ? "kubelet is posting ready status" :
	    strcmp(status, "False") == 0 ? "container runtime is down" :
	    "Kubelet stopped posting node status.", ts);
}

/* The nodes of the job's running worker pods of attempt 1 (a new array of names). */
static json_t *
worker_nodes(const char *id)
{
	char *ns = harness_sql_str("SELECT manifest->'metadata'->>'namespace' FROM jobs WHERE id ="
	    " '%s'", id), path[300];
	json_t *l, *p, *out = json_array();
	size_t i;

	snprintf(path, sizeof(path), "/api/v1/namespaces/%s/pods?labelSelector=fleet.io%%2Fjob-id"
	    "%%3D%s", ns, id);
	l = kube_get(path);
	json_array_foreach(json_object_get(l, "items"), i, p) {
		json_t *lb = json_object_get(json_object_get(p, "metadata"), "labels");
		const char *type = json_string_value(json_object_get(lb, "ray.io/node-type")),
		    *node = json_string_value(json_object_get(json_object_get(p, "spec"), "nodeName")),
		    *phase = json_string_value(json_object_get(json_object_get(p, "status"), "phase"));

		if (type != NULL && strcmp(type, "worker") == 0 && node != NULL && phase != NULL &&
		    strcmp(phase, "Running") == 0)
			json_array_append_new(out, json_string(node));
	}
	json_decref(l);
	free(ns);
	return out;
}

static bool
has(json_t *names, const char *s)
{
	json_t *v;
	size_t i;

	json_array_foreach(names, i, v)
		if (strcmp(json_string_value(v), s) == 0)
			return true;
	return false;
}

/* The h100 pool's nodes on the member not in used (malloc'd name of the first, or NULL). */
static char *
spare_of(json_t *used)
{
	json_t *l = kube_get("/api/v1/nodes"), *n;
	char *out = NULL;
	size_t i;

	json_array_foreach(json_object_get(l, "items"), i, n) {
		json_t *md = json_object_get(n, "metadata");
		const char *pool = json_string_value(json_object_get(json_object_get(md, "labels"),
		    "cloud.google.com/gke-nodepool")), *name = json_string_value(json_object_get(md,
		    "name"));

		if (out == NULL && pool != NULL && strcmp(pool, POOL) == 0 && !has(used, name))
			out = strdup(name);
	}
	json_decref(l);
	return out;
}

/* How many times fleetd applied the job's Ray object on the member (cloudsim counts). */
static int
applies(const char *id)
{
	char *ns = harness_sql_str("SELECT manifest->'metadata'->>'namespace' FROM jobs WHERE id ="
	    " '%s'", id), *name = harness_sql_str("SELECT manifest->'metadata'->>'name' FROM jobs"
	    " WHERE id = '%s'", id), key[400];
	json_t *st = harness_sim_get(&F.cs, "/_sim/state");
	int n;

	snprintf(key, sizeof(key), "%s/%s/rayjobs/%s", CLUSTER, ns, name);
	n = (int)json_integer_value(json_object_get(json_object_get(st, "applies"), key));
	json_decref(st);
	free(ns);
	free(name);
	return n;
}

/* Whether jobs.placement names node. */
static bool
placement_names(const char *id, const char *node)
{
	return harness_sql_long("SELECT count(*) FROM jobs, jsonb_array_elements(placement->"
	    "'allocs') a WHERE id = '%s' AND a->>'node' = '%s'", id, node) > 0;
}

/* One 8-GPU worker, running; its node (malloc'd) in *node. */
static char *
one_worker(const char *name, char **node)
{
	char body[400], *b, *id;
	json_t *nodes = NULL;
	int tries;

	snprintf(body, sizeof(body), "{\"name\":\"%s\",\"worker_groups\":[{\"name\":\"w\","
	    "\"replicas\":1,\"cpu\":\"1\",\"memory\":\"1Gi\",\"accelerator\":{\"flavor\":\"" H100
	    "\",\"count\":8}}]}", name);
	b = harness_job_body(ENV, "ml", H100, 8, body);
	id = strdup(harness_js(harness_post_created(oper, "/v1/jobs", b), "id"));
	free(b);
	json_decref(harness_job_wait(oper, id, "running", 1, 60));
	for (tries = 0; tries < 300; tries++) {
		json_decref(nodes);
		nodes = worker_nodes(id);
		if (json_array_size(nodes) == 1)
			break;
		usleep(100 * 1000);
	}
	assert_int_equal(json_array_size(nodes), 1);
	*node = strdup(json_string_value(json_array_get(nodes, 0)));
	json_decref(nodes);
	return id;
}

static void
cancel(const char *id)
{
	harness_call("POST", oper, NULL, "/v1/jobs/%s/cancel", id);
	json_decref(harness_job_wait(oper, id, "cancelled", 1, 60));
}

/* A node NotReady (kubectl, Ready Unknown) for less than the grace and Ready again: no
 * repair, no wait, no apply; the worker stays where it was. */
static void
test_notready_back_within_grace(void **state)
{
	char *node, *id = one_worker("blip", &node);
	json_t *nodes;
	int before = applies(id);
	double t0;

	(void)state;
	t0 = harness_now_s();
	node_ready(node, "Unknown");
	sleep(2);
	node_ready(node, "True");
	assert_true(harness_now_s() - t0 < GRACE_S);	/* else the test proves nothing */
	sleep(GRACE_S + 4);	/* past the grace, several status cycles */
	assert_int_equal(harness_job_event_count(id, "repaired", NULL), 0);
	assert_int_equal(harness_job_event_count(id, "waiting_for_spare", NULL), 0);
	assert_int_equal(applies(id), before);
	nodes = worker_nodes(id);
	assert_true(has(nodes, node));
	json_decref(nodes);
	cancel(id);
	free(node);
	free(id);
}

/* A node NotReady (kubectl, Ready False) past the grace: its worker is replaced on a spare
 * of the pool (the pod bound to the dark node is removed, not left for the 300 s taint
 * eviction), the placement and a `repaired` event (why NodeNotReady) say so. */
static void
test_notready_past_grace_repaired(void **state)
{
	char *node, *id = one_worker("dark", &node), *s;
	json_t *nodes = NULL, *d;
	double t0;

	(void)state;
	t0 = harness_now_s();
	node_ready(node, "False");
	/* within the grace and 25 s more (wall): the pod bound to the dark node is not left
	 * for the taint eviction's 300 s (75 s wall at x4) */
	while (harness_now_s() - t0 < GRACE_S + 25) {
		json_decref(nodes);
		nodes = worker_nodes(id);
		if (json_array_size(nodes) == 1 && !has(nodes, node))
			break;
		usleep(100 * 1000);
	}
	if (json_array_size(nodes) != 1 || has(nodes, node)) {
		char *ev = harness_sql_str("SELECT coalesce(string_agg(type || ': ' || message, E'\\n'"
		    " ORDER BY id), '') FROM job_events WHERE job_id = '%s'", id);

		fail_msg("the worker of NotReady %s was not replaced on a spare; events:\n%s", node,
		    ev);
	}
	assert_true(harness_now_s() - t0 >= GRACE_S - 1);	/* not before the grace */
	printf("NotReady %s -> replacement running on %s after %.1f s (wall; grace %d s)\n",
	    node, json_string_value(json_array_get(nodes, 0)), harness_now_s() - t0, GRACE_S);
	harness_job_wait_event(id, "repaired", NULL, 10);
	s = harness_sql_str("SELECT data::text FROM job_events WHERE job_id = '%s' AND type ="
	    " 'repaired' ORDER BY id DESC LIMIT 1", id);
	d = json_loads(s, 0, NULL);
	free(s);
	assert_non_null(d);
	assert_string_equal(harness_js(d, "why"), "NodeNotReady");
	assert_string_equal(harness_js(d, "lost_node"), node);
	assert_string_equal(harness_js(d, "spare_node"), json_string_value(json_array_get(nodes,
	    0)));
	json_decref(d);
	assert_true(placement_names(id, json_string_value(json_array_get(nodes, 0))));
	assert_false(placement_names(id, node));
	assert_int_equal(harness_sql_long("SELECT attempt FROM jobs WHERE id = '%s'", id), 1);
	node_ready(node, "True");	/* back for the next test */
	cancel(id);
	json_decref(nodes);
	free(node);
	free(id);
}

/* The most worker pods (8 GPUs each) that the placements of jobs a and b pin to one node. */
static long
most_on_one_node(const char *a, const char *b)
{
	return harness_sql_long("SELECT coalesce(max(n), 0) FROM (SELECT a->>'node', sum((a->>"
	    "'pods')::int) n FROM jobs, jsonb_array_elements(placement->'allocs') a WHERE id IN"
	    " ('%s', '%s') AND (a->>'group')::int > 0 GROUP BY 1) x", a, b);
}

/* Two 8-GPU workers of two jobs lose their nodes at once (both NotReady past the grace
 * together, so both are found lost in the same status pass); the pool has one spare with
 * room for one of them.  Exactly one is repaired onto the spare; the other waits for a
 * spare with a reason; at no time do the placements pin more than one 8-GPU worker to a
 * node (issue 24: the spare's free GPUs were not charged with the repair chosen before). */
static void
test_many_lost_one_spare(void **state)
{
	char *n1, *n2, *j1 = one_worker("many-a", &n1), *j2 = one_worker("many-b", &n2), *spare;
	json_t *used = json_array(), *d;
	long repaired = 0, waiting = 0, most;
	double t0;
	const char *rj, *wj;

	(void)state;
	assert_string_not_equal(n1, n2);
	json_array_append_new(used, json_string(n1));
	json_array_append_new(used, json_string(n2));
	spare = spare_of(used);
	assert_non_null(spare);
	node_ready(n1, "False");
	node_ready(n2, "False");
	t0 = harness_now_s();
	while (harness_now_s() - t0 < GRACE_S + 60) {
		most = most_on_one_node(j1, j2);
		if (most > 1)
			fail_msg("%ld 8-GPU workers pinned to one 8-GPU node", most);
		repaired = harness_job_event_count(j1, "repaired", NULL) +
		    harness_job_event_count(j2, "repaired", NULL);
		waiting = harness_job_event_count(j1, "waiting_for_spare", NULL) +
		    harness_job_event_count(j2, "waiting_for_spare", NULL);
		if (repaired >= 1 && waiting >= 1)
			break;
		usleep(100 * 1000);
	}
	if (repaired != 1 || waiting < 1) {
		char *ev = harness_sql_str("SELECT coalesce(string_agg(type || ': ' || message, E'\\n'"
		    " ORDER BY id), '') FROM job_events WHERE job_id IN ('%s', '%s')", j1, j2);

		fail_msg("%ld repaired, %ld waiting (want 1 and 1); events:\n%s", repaired, waiting,
		    ev);
	}
	/* several status cycles and a retry of the waiting job later: still so */
	t0 = harness_now_s();
	while (harness_now_s() - t0 < 12) {
		assert_true(most_on_one_node(j1, j2) <= 1);
		usleep(200 * 1000);
	}
	assert_int_equal(harness_job_event_count(j1, "repaired", NULL) +
	    harness_job_event_count(j2, "repaired", NULL), 1);
	rj = harness_job_event_count(j1, "repaired", NULL) == 1 ? j1 : j2;
	wj = rj == j1 ? j2 : j1;
	assert_true(placement_names(rj, spare));
	assert_false(placement_names(wj, spare));
	{
		char *s = harness_sql_str("SELECT data::text FROM job_events WHERE job_id = '%s' AND"
		    " type = 'waiting_for_spare' ORDER BY id DESC LIMIT 1", wj);

		d = json_loads(s, 0, NULL);
		free(s);
	}
	assert_non_null(d);
	assert_string_equal(harness_js(d, "lost_node"), wj == j1 ? n1 : n2);
	assert_true(strlen(harness_js(d, "reason")) > 0);
	assert_true(strstr(harness_js(d, "domain"), POOL) != NULL);
	json_decref(d);
	node_ready(n1, "True");	/* back for the next test */
	node_ready(n2, "True");
	cancel(j1);
	cancel(j2);
	json_decref(used);
	free(spare);
	free(n1);
	free(n2);
	free(j1);
	free(j2);
}

/* Two 8-GPU workers on two of the pool's three nodes; one node is deleted: its worker is
 * re-pinned to the third and runs there, the placement and a `repaired` event say so.
 * Then the second node goes with no spare left: explain says waiting_for_spare, once. */
static void
test_node_lost_repaired_then_waits(void **state)
{
	char *b = harness_job_body(ENV, "ml", H100, 8, "{\"name\":\"repair\",\"worker_groups\":"
	    "[{\"name\":\"w\",\"replicas\":2,\"cpu\":\"1\",\"memory\":\"1Gi\",\"accelerator\":"
	    "{\"flavor\":\"" H100 "\",\"count\":8}}]}");
	char *id, *spare, *lost, *other;
	json_t *nodes = NULL, *d, *x, *w;
	int tries, before;
	double t0;

	(void)state;
	id = strdup(harness_js(harness_post_created(oper, "/v1/jobs", b), "id"));
	free(b);
	json_decref(harness_job_wait(oper, id, "running", 1, 60));
	for (tries = 0; tries < 100; tries++) {
		json_decref(nodes);
		nodes = worker_nodes(id);
		if (json_array_size(nodes) == 2)
			break;
		usleep(100 * 1000);
	}
	assert_int_equal(json_array_size(nodes), 2);
	lost = strdup(json_string_value(json_array_get(nodes, 0)));
	other = strdup(json_string_value(json_array_get(nodes, 1)));
	spare = spare_of(nodes);
	assert_non_null(spare);
	assert_true(placement_names(id, lost));

	before = applies(id);
	assert_true(before >= 1);
	t0 = harness_now_s();
	delete_node(lost);
	/* the replacement pod runs on the spare within 60 s (wall clock; 240 s simulated) */
	for (tries = 0; tries < 600; tries++) {
		json_decref(nodes);
		nodes = worker_nodes(id);
		if (has(nodes, spare) && has(nodes, other))
			break;
		usleep(100 * 1000);
	}
	if (!has(nodes, spare)) {
		char *ev = harness_sql_str("SELECT coalesce(string_agg(type || ': ' || message, E'\\n'"
		    " ORDER BY id), '') FROM job_events WHERE job_id = '%s'", id);

		fail_msg("no worker runs on the spare %s after %s was deleted; events:\n%s", spare,
		    lost, ev);
	}
	printf("replacement pod running on the spare %.1f s (wall; x" TIME_SCALE " simulated) "
	    "after the node was deleted\n", harness_now_s() - t0);
	harness_job_wait_event(id, "repaired", NULL, 10);
	assert_true(placement_names(id, spare));
	assert_false(placement_names(id, lost));
	{
		char *s = harness_sql_str("SELECT data::text FROM job_events WHERE job_id = '%s' AND"
		    " type = 'repaired' ORDER BY id DESC LIMIT 1", id);

		d = json_loads(s, 0, NULL);
		free(s);
	}
	assert_non_null(d);
	assert_string_equal(harness_js(d, "lost_node"), lost);
	assert_string_equal(harness_js(d, "spare_node"), spare);
	assert_true(strstr(harness_js(d, "domain"), POOL) != NULL);
	assert_true(json_is_integer(json_object_get(d, "group")));
	json_decref(d);
	assert_int_equal(harness_job_event_count(id, "repaired", NULL), 1);
	assert_int_equal(applies(id), before + 1);	/* exactly one apply for the repair */
	assert_int_equal(harness_sql_long("SELECT attempt FROM jobs WHERE id = '%s'", id), 1);

	/* no spare left in the pool: the job waits and says so */
	delete_node(other);
	for (tries = 0, w = NULL; tries < 300 && w == NULL; tries++) {
		x = harness_get_ok(viewer, "/v1/jobs/%s/placement", id);	/* borrowed */
		w = json_incref(json_object_get(x, "waiting_for_spare"));
		if (w == NULL)
			usleep(100 * 1000);
	}
	if (w == NULL)
		fail_msg("explain never said waiting_for_spare after %s was deleted", other);
	assert_true(strstr(harness_js(w, "domain"), POOL) != NULL);
	assert_string_equal(harness_js(w, "lost_node"), other);
	assert_true(strlen(harness_js(w, "reason")) > 0);
	json_decref(w);
	{	/* fleetctl jobs explain says it first */
		struct harness_ctl r;
		char env_url[600], env_tok[200];

		snprintf(env_url, sizeof(env_url), "FLEET_URL=%s", harness_url(&F.fd, "%s", ""));
		snprintf(env_tok, sizeof(env_tok), "FLEET_TOKEN=%s", viewer);
		harness_ctl_run(&r, NULL, (const char *const[]){ env_url, env_tok, NULL },
		    (const char *const[]){ "jobs", "explain", id, NULL });
		if (r.rc != 0 || strstr(r.out, "Waiting for a spare in pool " POOL) == NULL)
			fail_msg("fleetctl jobs explain: rc %d\n%s\n%s", r.rc, r.out, r.err);
		harness_ctl_free(&r);
	}
	sleep(3);	/* several status cycles: still one event (for this node: the first
			 * loss may have waited for a snapshot to show the earlier test's job gone) */
	assert_int_equal(harness_sql_long("SELECT count(*) FROM job_events WHERE job_id = '%s'"
	    " AND type = 'waiting_for_spare' AND data->>'lost_node' = '%s'", id, other), 1);
	assert_int_equal(applies(id), before + 1);	/* waiting applies nothing */
	json_decref(nodes);
	free(lost);
	free(other);
	free(spare);
	free(id);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_notready_back_within_grace),
		cmocka_unit_test(test_notready_past_grace_repaired),
		cmocka_unit_test(test_many_lost_one_spare),
		cmocka_unit_test(test_node_lost_repaired_then_waits),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
