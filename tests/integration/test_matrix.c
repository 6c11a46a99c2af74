/* test_matrix: issue 13's end-to-end matrix through the API against cloudsim — kind (4) x
 * provider (3) x spot/on-demand x topology (none, rack, host, slice) x fixed/elastic, all
 * submitted at once to one fleetd (poller, scheduler, dispatch, status) and one cloudsim
 * whose fleet is built for it.  Each cell is refused at submit with a precise reason, or
 * reaches Running with every pod Running and Ready (no crash loop: the image fits the
 * accelerator) and its checkpoint-signal ConfigMap in place, within the simulated time.
 * Explain must name the one host node of a host job, the one rack of a rack job and the
 * whole slices of a slice job, and tell the truth: every pod (head included) runs on a node
 * explain's allocations name, and explain's nodes/racks/slices are those of the nodes the
 * worker pods run on.  All 192 cells, every run; the matrix is printed as a table. */
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

#define ENV		"test"
#define TIME_SCALE	"20"
#define DEADLINE_S	300.0	/* wall seconds for every cell to settle: a deadline, not a
				 * figure (about 20 s alone on a quiet machine; tests run beside
				 * each other, and a loaded machine took over 120 s) */

static struct harness_fleet F;

static const char *const kinds[] = { "RayJob", "RayCluster", "RayService", "RayCronJob" };
static const char *const provs[] = { "gke", "aks", "hyperpod" };
static const char *const clusters[] = { "test-gke-usc1", "test-aks-eus", "test-hp-usw2" };
static const char *const topos[] = { "none", "rack", "host", "slice" };

struct cell {
	int	 kind, prov, spot, topo, elastic;
	char	 id[40];
	long	 submit_status;
	char	 refused[160];		/* code and message of a refusal */
	int	 want_pods;		/* head + workers at min */
	int	 pods, ready;		/* last seen */
	double	 running_at;		/* wall seconds after submit, 0 = not yet */
	char	 note[96];
};

#define NCELLS	(4 * 3 * 2 * 4 * 2)
static struct cell cells[NCELLS];

/* ---- the fleet (tests/fixtures/fleets/matrix.json): on-demand and spot H100 pools (racks
 * of 2 nodes), TPU v5p slices (2x2x1, one GKE node pool each; multi-host slices are covered
 * by test_placement and test_cloudsim_sched), cpu pools for the heads (plus a spot cpu pool
 * heads must avoid); HyperPod sells no spot capacity: spot cells are refused at submit.
 * RayJobs run for good; queue mx of priority class std. */

static int
setup(void **state)
{
	harness_fleet_start(&F, "matrix", FLEETD_SOURCE_DIR "/tests/fixtures/fleets/matrix.json",
	    TIME_SCALE, NULL);
	*state = &F;
	return 0;
}

/* ---- cells */

static json_t *
spec_of(const struct cell *c, int idx)
{
	bool slice = c->topo == 3;
	json_t *g = json_pack("{s:s, s:s, s:s, s:{s:s, s:i}}", "name", "w", "cpu", "4",
	    "memory", "16Gi", "accelerator", "flavor", slice ? "tpu-v5p" : "nvidia-h100-80gb",
	    "count", slice ? 4 : 1);
	json_t *j;
	char name[32];

	if (c->elastic) {
		json_object_set_new(g, "min_replicas", json_integer(1));
		json_object_set_new(g, "max_replicas", json_integer(2));
	} else {
		/* fixed: 1 GPU worker; 2 replicas of a slice: two whole slices (multi-slice) */
		json_object_set_new(g, "replicas", json_integer(slice ? 2 : 1));
	}
	snprintf(name, sizeof(name), "m%03d", idx);
	j = json_pack("{s:s, s:s, s:s, s:s, s:s, s:{s:s, s:s}, s:[o], s:{s:[s], s:b}}",
	    "environment", ENV, "kind", kinds[c->kind], "queue", "mx", "name", name,
	    "ray_version", "2.52.0", "head", "cpu", "1", "memory", "2Gi", "worker_groups", g,
	    "constraints", "providers", provs[c->prov], "spot", c->spot);
	if (slice)
		json_object_set_new(j, "topology", json_pack("{s:s, s:s}", "type", "slice",
		    "shape", "2x2x1"));
	else
		json_object_set_new(j, "topology", json_string(topos[c->topo]));
	if (c->kind == 0 || c->kind == 3)
		json_object_set_new(j, "entrypoint", json_string("python train.py"));
	if (c->kind == 3)
		json_object_set_new(j, "schedule", json_string("@hourly"));
	if (c->kind == 2)
		json_object_set_new(j, "serve_config", json_pack("{s:[{s:s, s:s, s:s}]}",
		    "applications", "name", "app", "import_path", "serve:app", "route_prefix", "/"));
	if (idx % 5 == 0)
		json_object_set_new(j, "checkpoint", json_pack("{s:s, s:i}", "uri",
		    "s3://ckpt/matrix", "grace_seconds", 300));
	return j;
}

/* Every cell of the cross product (192): the 56 that make no sense are refused at submit
 * with their precise reason, the 136 others must run. */
static int ncells;

static void
submit_all(void)
{
	int n = 0;

	for (int k = 0; k < 4; k++)
	for (int p = 0; p < 3; p++)
	for (int s = 0; s < 2; s++)
	for (int t = 0; t < 4; t++)
	for (int el = 0; el < 2; el++) {
		struct cell *c = &cells[n];
		json_t *spec;

		c->kind = k;
		c->prov = p;
		c->spot = s;
		c->topo = t;
		c->elastic = el;
		/* a RayCronJob runs once accepted: its RayJobs come on its schedule */
		c->want_pods = k == 3 ? 0 : t == 3 ? 1 + (el ? 1 : 2) : 2;
		spec = spec_of(c, n);
		c->submit_status = harness_call_json("POST", F.admin, spec, "/v1/jobs");
		json_decref(spec);
		if (c->submit_status == 201) {
			snprintf(c->id, sizeof(c->id), "%s", harness_js(harness_r.json, "id"));
		} else {
			snprintf(c->refused, sizeof(c->refused), "%s at %s: %s",
			    harness_js(harness_r.json, "code"),
			    harness_js(harness_r.json, "errors.0.pointer"),
			    harness_js(harness_r.json, "detail"));
		}
		n++;
	}
	ncells = n;
}

/* Where cloudsim put every fleetd pod: job id -> [{"role", "node", "cluster"}]. */
static json_t *where;
/* Every member node: name -> {"rack", "slice"} (the labels the poller reads). */
static json_t *node_topo;

static void
load_nodes(int ci)
{
	static const char *const rack_label[] = { "cloud.google.com/gce-topology-subblock",
	    "fleet.io/rack", "topology.k8s.aws/network-node-layer-3" };
	struct http_result r = { 0 };
	json_t *n;
	size_t i;

	harness_kube(&F.cs, &r, clusters[ci], "GET", "/api/v1/nodes", NULL, NULL);
	if (r.status != 200)
		fail_msg("nodes of %s: %ld %s", clusters[ci], r.status, r.body);
	json_array_foreach(json_object_get(r.json, "items"), i, n) {
		json_t *labels = harness_jp(n, "metadata.labels");
		json_t *t = json_pack("{s:O?, s:O?}", "rack", json_object_get(labels,
		    rack_label[ci]), "slice", json_object_get(labels, "cloud.google.com/gke-tpu-topology") ?
		    json_object_get(labels, "cloud.google.com/gke-nodepool") : NULL);

		json_object_set_new(node_topo, harness_js(n, "metadata.name"), t);
	}
	harness_http_free(&r);
}

/* Pods of every fleetd job on one member: job id -> [pods, ready]. */
static void
count_pods(const char *cluster, json_t *by_job)
{
	struct http_result r = { 0 };
	json_t *pod;
	size_t i;

	harness_kube(&F.cs, &r, cluster, "GET", "/api/v1/pods?labelSelector="
	    "app.kubernetes.io%2Fmanaged-by%3Dfleetd", NULL, NULL);
	if (r.status != 200)
		fail_msg("pods of %s: %ld %s", cluster, r.status, r.body);
	json_array_foreach(json_object_get(r.json, "items"), i, pod) {
		json_t *labels = harness_jp(pod, "metadata.labels"), *cond, *v;
		const char *id = json_string_value(json_object_get(labels, "fleet.io/job-id"));
		bool ready = strcmp(harness_js(pod, "status.phase"), "Running") == 0;
		size_t k;

		if (id == NULL)
			continue;
		if (json_object_get(where, id) == NULL)
			json_object_set_new(where, id, json_array());
		json_array_append_new(json_object_get(where, id), json_pack("{s:s, s:s, s:s}",
		    "role", json_string_value(json_object_get(labels, "fleet.io/role")) ?
		    json_string_value(json_object_get(labels, "fleet.io/role")) : "", "node",
		    harness_js(pod, "spec.nodeName"), "cluster", cluster));
		json_array_foreach(harness_jp(pod, "status.conditions"), k, cond)
			if (strcmp(harness_js(cond, "type"), "Ready") == 0)
				ready &= strcmp(harness_js(cond, "status"), "True") == 0;
		if (harness_ji(pod, "status.containerStatuses.0.restartCount") > 0)
			ready = false;
		v = json_object_get(by_job, id);
		if (v == NULL) {
			v = json_pack("[i, i]", 0, 0);
			json_object_set_new(by_job, id, v);
		}
		json_array_set_new(v, 0, json_integer(json_integer_value(json_array_get(v, 0)) + 1));
		if (ready)
			json_array_set_new(v, 1, json_integer(json_integer_value(json_array_get(v, 1)) +
			    1));
	}
	harness_http_free(&r);
}

/* Signal ConfigMaps of every job on one member (their job-id labels). */
static void
count_signals(const char *cluster, json_t *seen)
{
	struct http_result r = { 0 };
	json_t *cm;
	size_t i;

	harness_kube(&F.cs, &r, cluster, "GET", "/api/v1/namespaces/fleet-" ENV "-mx/configmaps"
	    "?labelSelector=fleet.io%2Fsignal%3Dcheckpoint", NULL, NULL);
	if (r.status != 200)
		fail_msg("configmaps of %s: %ld %s", cluster, r.status, r.body);
	json_array_foreach(json_object_get(r.json, "items"), i, cm) {
		const char *id = json_string_value(json_object_get(harness_jp(cm, "metadata.labels"),
		    "fleet.io/job-id"));

		if (id != NULL && json_object_get(harness_jp(cm, "data"), "grace_seconds") != NULL)
			json_object_set_new(seen, id, json_true());
	}
	harness_http_free(&r);
}

static int
settle_round(double t0)
{
	json_t *pods = json_object(), *signals = json_object();
	PGresult *res = harness_sql_result("SELECT id::text, state FROM jobs UNION ALL"
	    " SELECT '-', '-'");
	int left = 0;

	json_decref(where);
	where = json_object();
	for (int i = 0; i < 3; i++) {
		count_pods(clusters[i], pods);
		count_signals(clusters[i], signals);
	}
	for (int n = 0; n < ncells; n++) {
		struct cell *c = &cells[n];
		const char *state = "";
		json_t *v;

		if (c->submit_status != 201 || c->running_at > 0)
			continue;
		for (int i = 0; i < PQntuples(res); i++)
			if (strcmp(PQgetvalue(res, i, 0), c->id) == 0)
				state = PQgetvalue(res, i, 1);
		v = json_object_get(pods, c->id);
		c->pods = (int)json_integer_value(json_array_get(v, 0));
		c->ready = (int)json_integer_value(json_array_get(v, 1));
		snprintf(c->note, sizeof(c->note), "%s, %d/%d pods ready%s", state, c->ready,
		    c->want_pods, json_object_get(signals, c->id) ? "" : ", no signal ConfigMap");
		if (strcmp(state, "running") == 0 && c->pods == c->want_pods &&
		    c->ready == c->want_pods && json_object_get(signals, c->id) != NULL)
			c->running_at = harness_now_s() - t0;
		else
			left++;
	}
	PQclear(res);
	json_decref(pods);
	json_decref(signals);
	return left;
}

/* Whether the string arrays a and b hold the same set. */
static bool
same_set(json_t *a, json_t *b)
{
	json_t *v, *w;
	size_t i, k;

	json_array_foreach(a, i, v) {
		bool in = false;

		json_array_foreach(b, k, w)
			in |= json_equal(v, w);
		if (!in)
			return false;
	}
	json_array_foreach(b, i, v) {
		bool in = false;

		json_array_foreach(a, k, w)
			in |= json_equal(v, w);
		if (!in)
			return false;
	}
	return true;
}

/* Explain tells the truth: one node for host, one rack, whole distinct slices for slice —
 * and they are where cloudsim actually put the pods: every pod (head included) runs on a
 * node explain names for its group, and explain's nodes/racks/slices are those of the
 * worker pods' nodes. */
static void
check_explain(struct cell *c)
{
	static const char *const key[] = { NULL, "racks", "nodes", "slices" };
	json_t *e = harness_get_ok(F.admin, "/v1/jobs/%s/placement", c->id);
	json_t *topo = harness_jp(e, "decision.topology"), *pod, *al, *actual = json_array();
	size_t i, k;

	assert_string_equal(harness_js(topo, "type"), topos[c->topo]);
	json_array_foreach(json_object_get(where, c->id), i, pod) {
		const char *role = harness_js(pod, "role"), *node = harness_js(pod, "node");
		json_t *t = json_object_get(node_topo, node), *v;
		bool named = false, grown = false;

		json_array_foreach(harness_jp(e, "decision.allocations"), k, al) {
			if (strcmp(harness_js(al, "role"), role) != 0)
				continue;
			grown |= json_is_true(json_object_get(al, "grown"));
			named |= strcmp(harness_js(al, "node"), node) == 0;
		}
		if (!named && !grown)
			fail_msg("%s job %s: its %s pod runs on %s, explain's allocations name other "
			    "nodes", topos[c->topo], c->id, role, node);
		if (strcmp(role, "worker") != 0 || c->topo == 0)
			continue;
		v = c->topo == 2 ? json_string(node) : json_deep_copy(json_object_get(t,
		    c->topo == 1 ? "rack" : "slice"));
		if (!json_is_string(v))
			fail_msg("%s job %s: node %s has no %s label", topos[c->topo], c->id, node,
			    topos[c->topo]);
		json_array_foreach(actual, k, t)
			if (json_equal(t, v))
				break;
		if (k == json_array_size(actual))
			json_array_append(actual, v);
		json_decref(v);
	}
	if (c->topo != 0 && json_array_size(json_object_get(topo, key[c->topo])) != (size_t)(
	    c->topo == 3 && !c->elastic ? 2 : 1))
		fail_msg("%s job %s: explain names %zu %s", topos[c->topo], c->id,
		    json_array_size(json_object_get(topo, key[c->topo])), key[c->topo]);
	if (c->want_pods == 0) {	/* a RayCronJob between runs: no pods to compare */
		json_decref(actual);
		return;
	}
	if (c->topo != 0 && !same_set(json_object_get(topo, key[c->topo]), actual))
		fail_msg("%s job %s: explain names %s %s, its pods run on %s", topos[c->topo], c->id,
		    key[c->topo], json_dumps(json_object_get(topo, key[c->topo]), JSON_COMPACT),
		    json_dumps(actual, JSON_COMPACT));
	json_decref(actual);
}

static void
print_table(void)
{
	int ok = 0, refused = 0, bad = 0;

	printf("\n%-10s %-8s %-9s %-5s %-7s  %s\n", "kind", "provider", "capacity", "topo",
	    "mode", "outcome");
	for (int n = 0; n < ncells; n++) {
		const struct cell *c = &cells[n];
		char out[400];

		if (c->submit_status != 201) {
			snprintf(out, sizeof(out), "refused %ld %s", c->submit_status, c->refused);
			refused++;
		} else if (c->running_at > 0) {
			snprintf(out, sizeof(out), "running, %d pods Running+Ready, %.1f s", c->pods,
			    c->running_at);
			ok++;
		} else {
			char *why = harness_sql_str("SELECT coalesce((SELECT reason FROM jobs WHERE id ="
			    " '%s'), '') || ' | ' || coalesce((SELECT message FROM job_events WHERE"
			    " job_id = '%s' AND type <> 'state' ORDER BY id DESC LIMIT 1), '')", c->id,
			    c->id);

			char *obj = harness_sql_str("SELECT coalesce((SELECT manifest->"
			    "'metadata'->>'namespace' || '/' || lower(kind) || 's/' ||"
			    " object_name FROM jobs WHERE id = '%s'), '')", c->id);
			struct http_result r = { 0 };
			char path[300];
			const char *slash = strchr(obj, '/');

			/* what the member says about the object (status, version): tells a status
			 * the operator never set from one fleetd never saw */
			if (slash != NULL) {
				snprintf(path, sizeof(path), "/apis/ray.io/v1/namespaces/%.*s/%s",
				    (int)(slash - obj), obj, slash + 1);
				harness_kube(&F.cs, &r, clusters[c->prov], "GET", path, NULL, NULL);
			}
			snprintf(out, sizeof(out), "NOT RUNNING (%s) %.100s | live rv %s state "
			    "'%s' jds '%s' svc '%s'", c->note, why, harness_js(r.json,
			    "metadata.resourceVersion"), harness_js(r.json, "status.state"),
			    harness_js(r.json, "status.jobDeploymentStatus"), harness_js(r.json,
			    "status.serviceStatus"));
			harness_http_free(&r);
			free(obj);
			free(why);
			bad++;
		}
		printf("%-10s %-8s %-9s %-5s %-7s  %s\n", kinds[c->kind], provs[c->prov],
		    c->spot ? "spot" : "on-demand", topos[c->topo], c->elastic ? "elastic" : "fixed",
		    out);
	}
	printf("cells: %d running, %d refused at submit, %d failed\n\n", ok, refused, bad);
	if (bad > 0 && harness_call("GET", F.admin, NULL, "/metrics") == 200) {
		const char *l = harness_r.body;

		for (const char *nl; l != NULL && *l != '\0'; l = nl ? nl + 1 : NULL) {
			nl = strchr(l, '\n');
			if (strncmp(l, "fleetd_status_", 14) == 0)
				printf("%.*s\n", nl ? (int)(nl - l) : (int)strlen(l), l);
		}
	}
	fflush(stdout);
}

static void
test_matrix(void **state)
{
	double t0 = harness_now_s();
	int left = -1;

	(void)state;
	submit_all();
	printf("submitted %d cells in %.1f s\n", ncells, harness_now_s() - t0);
	while (harness_now_s() - t0 < DEADLINE_S && (left = settle_round(t0)) > 0) {
		char *st = harness_sql_str("SELECT string_agg(state || ' ' || n, ', ') FROM (SELECT"
		    " state, count(*) AS n FROM jobs GROUP BY state) x");

		printf("%.1f s: %d cells to go (%s)\n", harness_now_s() - t0, left, st);
		free(st);
		usleep(1000000);
	}
	print_table();
	node_topo = json_object();
	for (int i = 0; i < 3; i++)
		load_nodes(i);
	for (int n = 0; n < ncells; n++) {
		struct cell *c = &cells[n];

		if (c->submit_status != 201) {
			/* only TPU slices off GKE and spot on HyperPod are refused, precisely */
			if (c->topo == 3) {
				assert_int_not_equal(c->prov, 0);
				assert_non_null(strstr(c->refused, "/constraints/providers"));
			} else {
				assert_int_equal(c->prov, 2);
				assert_true(c->spot);
				assert_non_null(strstr(c->refused, "queue.unplaceable at /worker_groups/0"));
			}
			continue;
		}
		if (c->running_at <= 0)
			fail_msg("cell %d (%s %s %s %s %s) did not reach Running: %s", n,
			    kinds[c->kind], provs[c->prov], c->spot ? "spot" : "on-demand",
			    topos[c->topo], c->elastic ? "elastic" : "fixed", c->note);
		check_explain(c);
	}
	assert_int_equal(left, 0);
	json_decref(where);
	json_decref(node_topo);
	where = node_topo = NULL;
}

/* topology host: the gang at max_replicas must fit one node; refused at submit naming the
 * pointer and the largest node. */
static void
test_host_too_big(void **state)
{
	(void)state;
	harness_call("POST", F.admin, "{\"environment\":\"" ENV "\",\"kind\":\"RayCluster\","
	    "\"queue\":\"mx\",\"name\":\"big-host\",\"ray_version\":\"2.52.0\",\"head\":{\"cpu\":"
	    "\"1\",\"memory\":\"2Gi\"},\"worker_groups\":[{\"name\":\"w\",\"min_replicas\":1,"
	    "\"max_replicas\":4,\"cpu\":\"8\",\"memory\":\"64Gi\",\"accelerator\":{\"flavor\":"
	    "\"nvidia-h100-80gb\",\"count\":4}}],\"topology\":\"host\"}", "/v1/jobs");
	harness_expect_problem(NULL, 422, "queue.unplaceable", "/worker_groups/0/max_replicas");
	assert_non_null(strstr(harness_r.body, "largest node"));
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_host_too_big),
		cmocka_unit_test(test_matrix),
	};

	return cmocka_run_group_tests(tests, setup, harness_fleet_teardown);
}
