/* test_dispatch: dispatch and status workers against cloudsim — a RayJob's whole story,
 * schema-valid manifests equal to what the cluster stored, cancel, TTL cleanup, stockout
 * then running elsewhere, exactly one apply per attempt across a SIGKILL between apply
 * and record, and a preempted victim suspended after its grace period — applied once
 * per re-apply event when a record is lost or two replicas follow it. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "providers/jobspec.h"
#include "providers/kuberay.h"
#include "regions/catalog.h"
#include "tests/harness/harness.h"

#define ENV		"test"	/* the test fleet's environment */
#define H100		"nvidia-h100-80gb"
#define TIME_SCALE	"2"	/* RayJobs run 10 s, pods start in 1 s */

static struct fleetd_proc fd;
static struct harness_cs cs;
static char dburl[512];
static char *admin;

/* ---- cloudsim */

/* The stored object (as applied) of name on cluster, or NULL. */
static json_t *
sim_object(const char *cluster, const char *name, int *applies)
{
	char path[256];
	json_t *all, *o = NULL;

	snprintf(path, sizeof(path), "/_sim/objects?cluster=%s&name=%s", cluster, name);
	all = harness_sim_get(&cs, path);
	if (json_array_size(json_object_get(all, "objects")) == 1) {
		json_t *it = json_array_get(json_object_get(all, "objects"), 0);

		o = json_incref(json_object_get(it, "object"));
		if (applies != NULL)
			*applies = (int)json_integer_value(json_object_get(it, "applies"));
	}
	json_decref(all);
	return o;
}

/* Apply count of an object ever (survives deletion). */
static int
sim_applies(const char *cluster, const char *ns, const char *plural, const char *name)
{
	char key[400];
	json_t *st = harness_sim_get(&cs, "/_sim/state");
	int n;

	snprintf(key, sizeof(key), "%s/%s/%s/%s", cluster, ns, plural, name);
	n = (int)json_integer_value(json_object_get(json_object_get(st, "applies"), key));
	json_decref(st);
	return n;
}

/* ---- registration: clouds by SQL (phase 2 needs the drivers), clusters over the API,
 * capacity as the poller would write it from cloudsim's ground truth */

/* One capacity row; free_per_node < 0: every node fully free. */
static void
seed_pool(const char *cluster_id, const char *provider, json_t *pool, int max_nodes,
    int free_accel)
{
	const char *mt = json_string_value(json_object_get(pool, "machine_type"));
	int nodes = (int)json_integer_value(json_object_get(pool, "nodes"));
	int per = (int)json_integer_value(json_object_get(pool, "accelerators_per_node"));
	struct catalog_machine m;
	struct err e = { 0 };
	json_t *topo = json_array();
	char *ts, name[128];
	int left = free_accel;

	const char *flavor = json_string_value(json_object_get(pool, "accelerator"));

	if (!catalog_machine_lookup(provider, mt, &m, &e)) {
		m.vcpus = 16;	/* system pools the catalog does not price */
		m.memory_gib = 64;
	}
	if (flavor != NULL && strncmp(flavor, "tpu", 3) == 0) {
		json_decref(topo);
		return;
	}
	for (int i = 0; i < nodes; i++) {
		/* the member's own node names and free accelerators: the renderer pins pods to
		 * the nodes the scheduler chose */
		json_t *real = json_array_get(json_object_get(pool, "node_list"), (size_t)i);
		int f = left > per ? per : left;

		if (real != NULL && free_accel == (int)harness_ji(pool, "free_accelerators"))
			f = (int)harness_ji(real, "free_accelerators");
		left -= f;
		snprintf(name, sizeof(name), "%s", harness_js(real, "name"));
		if (real == NULL)
			snprintf(name, sizeof(name), "%s-%d", json_string_value(json_object_get(pool,
			    "name")), i);
		json_array_append_new(topo, json_pack("{s:s, s:i, s:I, s:I, s:b}", "name", name,
		    "free_accel", f, "free_cpu_m", (json_int_t)(m.vcpus - 2) * 1000, "free_mem",
		    (json_int_t)(m.memory_gib - 16) << 30, "ready", 1));
	}
	topo = json_pack("{s:o}", "nodes", topo);
	ts = json_dumps(topo, JSON_COMPACT);
	json_decref(topo);
	harness_sql("INSERT INTO capacity (cluster_id, pool, flavor, machine_type, spot, price_hour,"
	    " accel_per_node, nodes, max_nodes, autoscaling, free_accel, free_cpu_m, free_mem,"
	    " topology) VALUES ('%s', '%s', '%s', '%s', %s, %f, %d, %d, %d, %s, %d, %lld, %lld,"
	    " '%s') ON CONFLICT (cluster_id, pool, flavor) DO UPDATE SET max_nodes ="
	    " excluded.max_nodes, free_accel = excluded.free_accel, topology = excluded.topology,"
	    " observed_at = now()", cluster_id, json_string_value(json_object_get(pool, "name")),
	    per > 0 && flavor ? flavor : "cpu", mt,
	    json_is_true(json_object_get(pool, "spot")) ? "true" : "false",
	    json_real_value(json_object_get(pool, "price_per_hour")), per, nodes, max_nodes,
	    json_is_true(json_object_get(pool, "autoscaling")) ? "true" : "false", free_accel,
	    (long long)(m.vcpus - 2) * 1000 * nodes, (long long)(m.memory_gib - 16) * nodes << 30,
	    ts);
	free(ts);
}

static json_t *
sim_pool(const char *cluster, const char *pool)
{
	json_t *st = harness_sim_get(&cs, "/_sim/state"), *c, *p, *out = NULL;
	size_t i, k;

	json_array_foreach(json_object_get(st, "clusters"), i, c)
		if (strcmp(json_string_value(json_object_get(c, "name")), cluster) == 0)
			json_array_foreach(json_object_get(c, "pools"), k, p)
				if (strcmp(json_string_value(json_object_get(p, "name")),
				    pool) == 0)
					out = json_incref(p);
	json_decref(st);
	assert_non_null(out);
	json_object_set_new(out, "accelerators_per_node",
	    json_integer(json_integer_value(json_object_get(out, "accelerators_per_node"))));
	return out;
}

/* Registers cloudsim cluster name through the API and seeds its capacity as the poller
 * would from cloudsim's ground truth; returns its fleetd id (malloc'd). */
static char *
register_cluster(const char *name)
{
	const char *prov = harness_js(harness_cs_cluster(&cs, name), "provider");
	json_t *st, *cl, *p;
	char id[40];
	size_t i, k;

	harness_register(&cs, admin, name, NULL, id);
	st = harness_sim_get(&cs, "/_sim/state");
	json_array_foreach(json_object_get(st, "clusters"), i, cl) {
		if (strcmp(harness_js(cl, "name"), name) != 0)
			continue;
		json_array_foreach(json_object_get(cl, "pools"), k, p)
			seed_pool(id, prov, p, (int)harness_ji(p, "max"),
			    (int)harness_ji(p, "free_accelerators"));
	}
	json_decref(st);
	return strdup(id);
}

static char *hp_id, *aks_id, *gke_id;

static int
setup(void **state)
{
	(void)state;
	harness_cs_start(&cs, NULL, TIME_SCALE);
	harness_cs_env_add(&cs, "FLEETD_SNAPSHOT_MAX_AGE=1000000");
	harness_cs_env_add(&cs, "FLEETD_WORKERS=scheduler,dispatch,status");
	harness_cs_env_add(&cs, "FLEETD_SCHEDULER_INTERVAL_MS=300");
	harness_fleetd_cs(&fd, dburl, sizeof(dburl), "disp", &cs, NULL);
	admin = harness_keep(harness_token(dburl, "admin", "*"));
	harness_post_created(admin, "/v1/environments", "{\"name\":\"" ENV "\"}");
	harness_pclass(admin, "low", 10, false);
	harness_pclass(admin, "high", 1000, true);
	harness_queue(admin, ENV, "ml", "low", H100, 200);
	hp_id = harness_keep(register_cluster("test-hp-usw2"));
	aks_id = harness_keep(register_cluster("test-aks-eus"));
	gke_id = harness_keep(register_cluster("test-gke-usc1"));
	/* GKE's h100 looks full until the stockout test frees it (as a poller would see) */
	harness_sql("UPDATE capacity SET max_nodes = nodes, free_accel = 0, topology = jsonb_build_object("
	    "'nodes', (SELECT jsonb_agg(n || '{\"free_accel\": 0}') FROM jsonb_array_elements("
	    "topology->'nodes') n)) WHERE cluster_id = '%s' AND pool = 'h100'", gke_id);
	harness_sql("UPDATE clusters SET stockout_timeout_s = 2");
	return 0;
}

/* ---- jobs */

static char *
submit(const char *kind, const char *name, int replicas, const char *extra)
{
	char body[2048];

	snprintf(body, sizeof(body), "{\"environment\":\"" ENV "\",\"kind\":\"%s\",\"queue\":"
	    "\"ml\",\"name\":\"%s\",\"ray_version\":\"2.52.0\",%s"
	    "\"head\":{\"cpu\":\"2\",\"memory\":\"8Gi\"},\"worker_groups\":[{\"name\":\"gpu\","
	    "\"replicas\":%d,\"cpu\":\"8\",\"memory\":\"64Gi\",\"accelerator\":{\"flavor\":\""
	    H100 "\",\"count\":8}}]%s%s}", kind, name, strcmp(kind, "RayJob") == 0 ?
	    "\"entrypoint\":\"python train.py\"," : "", replicas, extra ? "," : "",
	    extra ? extra : "");
	return strdup(harness_js(harness_post_created(admin, "/v1/jobs", body), "id"));
}

static bool
has_event(const char *id, const char *type, const char *from, const char *to)
{
	return harness_sql_long("SELECT count(*) FROM job_events WHERE job_id = '%s' AND type = '%s'"
	    " AND coalesce(from_state, '') = '%s' AND coalesce(to_state, '') = '%s'", id, type,
	    from, to) > 0;
}

/* name of attempt's object of job id (spec name sname, kind k) */
static void
object_name(enum jobspec_kind k, const char *sname, const char *id, int attempt, char *out,
    size_t n)
{
	assert_true(kuberay_object_name(k, sname, id, attempt, out, n));
}

static char *
get_manifest(const char *id)
{
	harness_get_ok(admin, "/v1/jobs/%s/manifest", id);
	return strdup(harness_r.body);
}

static void
cancel(const char *id)
{
	long st = harness_call("POST", admin, "{}", "/v1/jobs/%s/cancel", id);

	if (st != 200 && st != 202)
		fail_msg("cancel %s: %ld %s", id, st, harness_r.body);
}

/* pending -> admitted -> dispatched -> running -> succeeded, every event, the manifest
 * schema-valid and equal to what the cluster stored, then TTL cleanup. */
static void
test_lifecycle(void **state)
{
	char *id = submit("RayJob", "lifecycle", 1, "\"constraints\":{\"providers\":"
	    "[\"hyperpod\"]},\"ttl_seconds_after_finished\":2");
	char name[64], file[300], *m;
	json_t *applied, *mj;

	(void)state;
	harness_job_wait_row(id, "running", 1, 30);
	object_name(JOBSPEC_RAYJOB, "lifecycle", id, 1, name, sizeof(name));
	applied = sim_object("test-hp-usw2", name, NULL);
	assert_non_null(applied);
	m = get_manifest(id);
	mj = json_loads(m, 0, NULL);
	if (!json_equal(mj, applied))
		fail_msg("GET manifest differs from what cloudsim stored:\n%s", m);
	snprintf(file, sizeof(file), "%s/lifecycle.json", cs.dir);
	assert_int_equal(json_dump_file(applied, file, JSON_INDENT(2)), 0);
	assert_int_equal(harness_sh(FLEETD_SOURCE_DIR "/../shared/tools/validate-manifest "
	    "--quiet %s", file), 0);
	harness_job_wait_row(id, "succeeded", 1, 40);
	assert_true(has_event(id, "submitted", "", "pending"));
	assert_true(has_event(id, "state", "pending", "admitted"));
	assert_true(has_event(id, "state", "admitted", "dispatched"));
	assert_true(has_event(id, "state", "dispatched", "running"));
	assert_true(has_event(id, "state", "running", "succeeded"));
	assert_true(harness_sql_long("SELECT count(*) FROM job_events WHERE job_id = '%s' AND type ="
	    " 'cluster_status' AND message LIKE 'RayJob Complete/SUCCEEDED%%'", id) == 1);
	/* TTL: the object goes 2 s after the end */
	for (int i = 0; i < 100; i++) {
		json_t *o = sim_object("test-hp-usw2", name, NULL);

		json_decref(o);
		if (o == NULL)
			break;
		usleep(100 * 1000);
	}
	json_t *gone = sim_object("test-hp-usw2", name, NULL);
	assert_null(gone);
	/* the status worker records the cleanup once it sees the object gone */
	for (int i = 0; i < 100 && harness_sql_long("SELECT count(*) FROM job_events WHERE"
	    " job_id = '%s' AND type = 'cleaned_up'", id) == 0; i++)
		usleep(100 * 1000);
	assert_true(harness_sql_long("SELECT count(*) FROM job_events WHERE job_id = '%s' AND type ="
	    " 'cleaned_up'", id) == 1);
	assert_int_equal(sim_applies("test-hp-usw2", json_string_value(json_object_get(
	    json_object_get(mj, "metadata"), "namespace")), "rayjobs", name), 1);
	json_decref(mj);
	json_decref(applied);
	free(m);
	free(id);
}

/* A running RayCluster is deleted from its cluster on cancel. */
static void
test_cancel(void **state)
{
	char *id = submit("RayCluster", "cancelme", 1, "\"constraints\":{\"providers\":"
	    "[\"hyperpod\"]}");
	char name[64];
	json_t *o;

	(void)state;
	harness_job_wait_row(id, "running", 1, 30);
	object_name(JOBSPEC_RAYCLUSTER, "cancelme", id, 1, name, sizeof(name));
	o = sim_object("test-hp-usw2", name, NULL);
	assert_non_null(o);
	json_decref(o);
	cancel(id);
	harness_job_wait_row(id, "cancelled", 1, 20);
	o = sim_object("test-hp-usw2", name, NULL);
	assert_null(o);
	assert_true(has_event(id, "cancel_requested", "", ""));
	assert_true(has_event(id, "state", "running", "cancelled"));
	free(id);
}

/* SIGKILL between apply and record (the record waits on a row lock the test holds):
 * the next fleetd finds the object of this attempt and records it without applying. */
static void
test_exactly_once(void **state)
{
	char *id, *was, name[64], ns[64];
	int st;

	(void)state;
	harness_sim_post(&cs, "/_sim/faults", "{\"service\":\"k8s\",\"cluster\":\"test-hp-usw2\","
	    "\"latency_ms\":700}");
	id = submit("RayCluster", "once", 1, "\"constraints\":{\"providers\":[\"hyperpod\"]}");
	object_name(JOBSPEC_RAYCLUSTER, "once", id, 1, name, sizeof(name));
	assert_true(kuberay_namespace(ENV, "ml", ns, sizeof(ns)));
	for (int i = 0; i < 400 && harness_sql_long("SELECT count(*) FROM jobs WHERE id = '%s' AND"
	    " claimed_by IS NOT NULL", id) == 0; i++)
		usleep(10 * 1000);
	harness_sql("BEGIN");
	/* FOR NO KEY UPDATE: the record's UPDATE waits on it, while the insert of the job's Ray
	 * auth token (a foreign key to the row: KEY SHARE), made before the apply, does not */
	was = harness_sql_str("SELECT state FROM jobs WHERE id = '%s' FOR NO KEY UPDATE", id);
	assert_string_equal(was, "admitted");
	free(was);
	for (int i = 0; i < 100 && sim_applies("test-hp-usw2", ns, "rayclusters", name) == 0; i++)
		usleep(100 * 1000);
	assert_int_equal(sim_applies("test-hp-usw2", ns, "rayclusters", name), 1);
	usleep(300 * 1000);	/* the record is now waiting on our lock */
	kill(fd.pid, SIGKILL);
	waitpid(fd.pid, &st, 0);
	fd.pid = 0;
	harness_sql("ROLLBACK");
	assert_true(harness_sql_long("SELECT count(*) FROM jobs WHERE id = '%s' AND state = 'admitted'"
	    " AND claimed_by IS NOT NULL", id) == 1);
	harness_sim(&cs, "DELETE", "/_sim/faults", NULL, NULL);
	harness_fleetd_start(&fd, dburl, (const char *const *)cs.env);
	harness_job_wait_row(id, "running", 1,
	    60);	/* takeover waits out a dead apply (DISPATCH_INFLIGHT_S) */
	assert_int_equal(sim_applies("test-hp-usw2", ns, "rayclusters", name), 1);
	assert_true(harness_sql_long("SELECT count(*) FROM job_events WHERE job_id = '%s' AND"
	    " to_state = 'dispatched' AND data->>'reused' = 'true'", id) == 1);
	cancel(id);
	harness_job_wait_row(id, "cancelled", 1, 20);
	free(id);
}

/* A CPU build of Ray on NVIDIA workers: the render's warning (dispatch_render_job, from
 * the one reading of the spec a dispatch makes) becomes one event of the attempt, with the
 * image; the job is still applied once. */
static void
test_image_warning(void **state)
{
	char *id = submit("RayCluster", "cpuimage", 1, "\"constraints\":{\"providers\":"
	    "[\"hyperpod\"]},\"image\":\"rayproject/ray:2.52.0\"");
	char name[64], ns[64];

	(void)state;
#define WARNED "SELECT count(*) FROM job_events WHERE job_id = '%s' AND type = 'warning'" \
	    " AND data->>'key' = 'image_cpu_build' AND data->>'image' = 'rayproject/ray:2.52.0'" \
	    " AND attempt = 1"
	for (int i = 0; i < 300 && harness_sql_long(WARNED, id) == 0; i++)
		usleep(100 * 1000);
	assert_int_equal(harness_sql_long(WARNED, id), 1);
#undef WARNED
	object_name(JOBSPEC_RAYCLUSTER, "cpuimage", id, 1, name, sizeof(name));
	assert_true(kuberay_namespace(ENV, "ml", ns, sizeof(ns)));
	assert_int_equal(sim_applies("test-hp-usw2", ns, "rayclusters", name), 1);
	/* its pods crash-loop (as on a real node): the job may have failed already (409) */
	harness_call("POST", admin, "{}", "/v1/jobs/%s/cancel", id);
	for (int i = 0; i < 300 && harness_sql_long("SELECT count(*) FROM jobs WHERE id = '%s'"
	    " AND state IN ('cancelled', 'failed')", id) == 0; i++)
		usleep(100 * 1000);
	assert_int_equal(harness_sql_long("SELECT count(*) FROM jobs WHERE id = '%s' AND state IN"
	    " ('cancelled', 'failed')", id), 1);
	free(id);
}

/* Kubernetes call to a cloudsim member (the test's own workload), which must succeed. */
static void
kube_call(const char *cluster, const char *method, const char *path, const char *body)
{
	struct http_result r;

	harness_kube(&cs, &r, cluster, method, path, NULL, body);
	if (r.status < 200 || r.status > 299)
		fail_msg("%s %s on %s: %ld %s", method, path, cluster, r.status, r.body);
	harness_http_free(&r);
}

/* The chosen pool cannot grow (stockout) and its nodes are taken: the job is withdrawn on
 * the member's own signal (the autoscaler's FailedScaleUp), long before the cluster's
 * timeout (600 s here), and runs on another cluster, keeping its queue position. */
static void
test_stockout(void **state)
{
	char *id, *enq, name[64];
	json_t *pool, *o;

	(void)state;
	kube_call("test-aks-eus", "POST", "/api/v1/namespaces", "{\"apiVersion\":\"v1\",\"kind\":"
	    "\"Namespace\",\"metadata\":{\"name\":\"other\"}}");
	kube_call("test-aks-eus", "POST", "/apis/ray.io/v1/namespaces/other/rayclusters",
	    "{\"apiVersion\":\"ray.io/v1\",\"kind\":\"RayCluster\",\"metadata\":{\"name\":\"hog\","
	    "\"namespace\":\"other\"},\"spec\":{\"headGroupSpec\":{\"template\":{\"spec\":{"
	    "\"nodeSelector\":{\"kubernetes.azure.com/agentpool\":\"system\"},\"containers\":[{"
	    "\"name\":\"h\",\"image\":\"ray\",\"resources\":{\"requests\":{\"cpu\":\"1\"}}}]}}},"
	    "\"workerGroupSpecs\":[{\"groupName\":\"g\",\"replicas\":2,\"minReplicas\":2,"
	    "\"maxReplicas\":2,\"template\":{\"spec\":{\"nodeSelector\":{"
	    "\"kubernetes.azure.com/agentpool\":\"h100\"},\"tolerations\":[{\"operator\":"
	    "\"Exists\"}],\"containers\":[{\"name\":\"w\",\"image\":\"ray\",\"resources\":{"
	    "\"requests\":{\"cpu\":\"1\",\"nvidia.com/gpu\":\"8\"},\"limits\":{"
	    "\"nvidia.com/gpu\":\"8\"}}}]}}}]}}");
	for (int i = 0; i < 100; i++) {
		pool = sim_pool("test-aks-eus", "h100");
		if (json_integer_value(json_object_get(pool, "free_accelerators")) == 0) {
			json_decref(pool);
			break;
		}
		json_decref(pool);
		usleep(100 * 1000);
	}
	pool = sim_pool("test-aks-eus", "h100");
	assert_int_equal(json_integer_value(json_object_get(pool, "free_accelerators")), 0);
	seed_pool(aks_id, "aks", pool, 3, 0);	/* full, but may grow one node */
	json_decref(pool);
	harness_sql("UPDATE clusters SET stockout_timeout_s = 600 WHERE id = '%s'", aks_id);
	id = submit("RayJob", "stock", 1, "\"constraints\":{\"regions\":[\"eastus\","
	    "\"us-central1\"],\"spot\":false}");
	enq = harness_sql_str("SELECT enqueued_at::text FROM jobs WHERE id = '%s'", id);
	harness_job_wait_row(id, "dispatched", 1, 20);
	assert_true(harness_sql_long("SELECT count(*) FROM jobs WHERE id = '%s' AND cluster_id = '%s'",
	    id, aks_id) == 1);
	/* the poller now sees GKE's h100 as it is */
	pool = sim_pool("test-gke-usc1", "h100");
	seed_pool(gke_id, "gke", pool, (int)json_integer_value(json_object_get(pool, "max")),
	    (int)json_integer_value(json_object_get(pool, "free_accelerators")));
	json_decref(pool);
	harness_job_wait_row(id, "running", 2, 60);
	assert_true(harness_sql_long("SELECT count(*) FROM jobs WHERE id = '%s' AND cluster_id = '%s'"
	    " AND enqueued_at::text = '%s'", id, gke_id, enq) == 1);
	assert_true(harness_sql_long("SELECT count(*) FROM stockouts WHERE cluster_id = '%s' AND"
	    " flavor = '" H100 "'", aks_id) == 1);
	assert_true(harness_sql_long("SELECT count(*) FROM job_events WHERE job_id = '%s' AND"
	    " from_state = 'dispatched' AND to_state = 'pending' AND message LIKE 'stockout%%'",
	    id) == 1);
	assert_true(harness_sql_long("SELECT count(*) FROM job_events WHERE job_id = '%s' AND"
	    " to_state = 'pending' AND data->>'signal' = 'FailedScaleUp'", id) == 1);
	harness_sql("UPDATE clusters SET stockout_timeout_s = 2 WHERE id = '%s'", aks_id);
	assert_true(harness_sql_long("SELECT count(*) FROM job_events WHERE job_id = '%s' AND type ="
	    " 'cluster_event' AND data->>'reason' = 'FailedScheduling' AND attempt = 1", id) >= 1);
	object_name(JOBSPEC_RAYJOB, "stock", id, 1, name, sizeof(name));
	o = sim_object("test-aks-eus", name, NULL);
	assert_null(o);
	cancel(id);
	harness_job_wait_row(id, "cancelled", 2, 20);
	free(enq);
	free(id);
}

/* A high-priority job preempts a running one: checkpoint annotation at once, then
 * suspend: true after the grace period, and the victim waits again in its queue. */
static void
test_preemption(void **state)
{
	char *victim, *hi, name[64];
	json_t *o, *ann;
	double gap;

	(void)state;
	victim = submit("RayJob", "victim", 2, "\"constraints\":{\"providers\":[\"hyperpod\"]},"
	    "\"checkpoint\":{\"uri\":\"s3://ckpt/victim\",\"grace_seconds\":2}");
	harness_job_wait_row(victim, "running", 1, 30);
	/* the poller sees the victim's pods: the pool is full */
	for (int i = 0; i < 50; i++) {
		o = sim_pool("test-hp-usw2", "p5");
		if (json_integer_value(json_object_get(o, "free_accelerators")) == 0)
			break;
		json_decref(o);
		o = NULL;
		usleep(100 * 1000);
	}
	assert_non_null(o);
	seed_pool(hp_id, "hyperpod", o, 3, 0);
	json_decref(o);
	/* The database fails the transaction that records each change on the cluster once
	 * (as when it restarts between the apply and the commit): the next cycle finds the
	 * change on the live object and records it without applying it again. */
	harness_sql("CREATE SEQUENCE fail_ckpt; CREATE SEQUENCE fail_susp;"
	    " CREATE FUNCTION fail_once() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN"
	    " IF NEW.type = 'checkpoint_requested' THEN IF nextval('fail_ckpt') = 1 THEN"
	    " RAISE EXCEPTION 'fail once'; END IF; END IF; IF NEW.message LIKE"
	    " 'preempted; suspended on the cluster%%' THEN IF nextval('fail_susp') = 1 THEN"
	    " RAISE EXCEPTION 'fail once'; END IF; END IF; RETURN NEW; END $$;"
	    " CREATE TRIGGER fail_once BEFORE INSERT ON job_events FOR EACH ROW WHEN (NEW.job_id ="
	    " '%s') EXECUTE FUNCTION fail_once()", victim);
	hi = submit("RayJob", "urgent", 1, "\"constraints\":{\"providers\":[\"hyperpod\"]},"
	    "\"priority_class\":\"high\"");
	harness_job_wait_row(victim, "pending", 1, 30);
	object_name(JOBSPEC_RAYJOB, "victim", victim, 1, name, sizeof(name));
	o = sim_object("test-hp-usw2", name, NULL);
	assert_non_null(o);
	ann = json_object_get(json_object_get(o, "metadata"), "annotations");
	assert_non_null(json_object_get(ann, "fleet.io/checkpoint-requested"));
	assert_true(json_is_true(json_object_get(json_object_get(o, "spec"), "suspend")));
	assert_true(has_event(victim, "checkpoint_requested", "", ""));
	/* dispatch, checkpoint annotation, suspend: one apply each */
	assert_int_equal(harness_sql_long("SELECT nextval('fail_ckpt') + nextval('fail_susp')"), 6);
	assert_int_equal(sim_applies("test-hp-usw2", json_string_value(json_object_get(
	    json_object_get(o, "metadata"), "namespace")), "rayjobs", name), 3);
	harness_sql("DROP TRIGGER fail_once ON job_events");
	json_decref(o);
	gap = (double)harness_sql_long("SELECT (extract(epoch from max(at) FILTER (WHERE to_state ="
	    " 'pending' AND from_state = 'preempted') - min(at) FILTER (WHERE to_state ="
	    " 'preempted')) * 1000)::bigint FROM job_events WHERE job_id = '%s'", victim);
	if (gap < 1900)
		fail_msg("suspended %.0f ms after preemption, before the 2 s grace", gap);
	harness_job_wait_row(hi, "running", 1, 40);
	cancel(hi);
	cancel(victim);
	harness_job_wait_row(hi, "cancelled", 1, 20);
	free(victim);
	free(hi);
}

/* ---- one apply per attempt when a record is lost or two replicas follow the job */

/* The applies the job's events allow attempt's object beyond its dispatch (as
 * tests/chaos/checks.py REAPPLY_SQL counts them). */
static long
reapply_events(const char *id, int attempt)
{
	return harness_sql_long("SELECT count(*) FROM job_events WHERE job_id = '%s' AND attempt ="
	    " %d AND (type IN ('checkpoint_requested', 'spec_applied') OR message LIKE"
	    " 'preempted; suspended on the cluster%%')", id, attempt);
}

/* A RayJob victim (grace 2 s) running on HyperPod's full p5 pool; the caller preempts it. */
static char *
victim_running(const char *name)
{
	char *id;
	json_t *o = NULL;

	/* the pool as cloudsim has it (the earlier jobs gone), then full with the victim */
	for (int i = 0; i < 200; i++) {
		o = sim_pool("test-hp-usw2", "p5");
		if (json_integer_value(json_object_get(o, "free_accelerators")) >= 16)
			break;
		if (i == 199) {
			char *txt = json_dumps(o, JSON_COMPACT);

			fail_msg("p5 never had 16 free accelerators: %s", txt);
		}
		json_decref(o);
		usleep(100 * 1000);
	}
	seed_pool(hp_id, "hyperpod", o, 3, (int)harness_ji(o, "free_accelerators"));
	json_decref(o);
	id = submit("RayJob", name, 2, "\"constraints\":{\"providers\":[\"hyperpod\"]},"
	    "\"checkpoint\":{\"uri\":\"s3://ckpt/v\",\"grace_seconds\":2}");
	harness_job_wait_row(id, "running", 1, 30);
	for (int i = 0; i < 50; i++) {
		o = sim_pool("test-hp-usw2", "p5");
		if (json_integer_value(json_object_get(o, "free_accelerators")) == 0)
			break;
		json_decref(o);
		o = NULL;
		usleep(100 * 1000);
	}
	assert_non_null(o);
	seed_pool(hp_id, "hyperpod", o, 3, 0);
	json_decref(o);
	return id;
}

/* The victim is back in its queue: its attempt-1 object carries the checkpoint request and
 * is suspended, and was applied once plus once per re-apply event. */
static void
victim_settled(const char *victim, const char *sname)
{
	char name[64];
	json_t *o, *ann;
	int applies;
	long extra;

	harness_job_wait_row(victim, "pending", 1, 40);
	object_name(JOBSPEC_RAYJOB, sname, victim, 1, name, sizeof(name));
	o = sim_object("test-hp-usw2", name, NULL);
	assert_non_null(o);
	ann = json_object_get(json_object_get(o, "metadata"), "annotations");
	applies = sim_applies("test-hp-usw2", json_string_value(json_object_get(json_object_get(o,
	    "metadata"), "namespace")), "rayjobs", name);
	extra = reapply_events(victim, 1);
	if (applies != 1 + extra || json_object_get(ann, "fleet.io/checkpoint-requested") == NULL ||
	    !json_is_true(json_object_get(json_object_get(o, "spec"), "suspend")))
		fail_msg("%s: %d applies for 1 + %ld re-apply events; checkpoint annotation %s,"
		    " suspend %s", name, applies, extra, json_object_get(ann,
		    "fleet.io/checkpoint-requested") ? "there" : "missing",
		    json_is_true(json_object_get(json_object_get(o, "spec"), "suspend")) ? "true" :
		    "not true");
	assert_true(has_event(victim, "checkpoint_requested", "", ""));
	json_decref(o);
}

/* Cancels the two jobs of a preemption case and waits until both ended (the urgent job may
 * have been withdrawn meanwhile: its pods waited on the victim's nodes past the stockout
 * timeout). */
static void
ended(const char *hi, const char *victim)
{
	cancel(hi);
	cancel(victim);
	for (int i = 0; i < 200 && harness_sql_long("SELECT count(*) FROM jobs WHERE id IN ('%s',"
	    " '%s') AND state NOT IN ('cancelled', 'succeeded', 'failed')", hi, victim) > 0; i++)
		usleep(100 * 1000);
	assert_int_equal(harness_sql_long("SELECT count(*) FROM jobs WHERE id IN ('%s', '%s') AND"
	    " state NOT IN ('cancelled', 'succeeded', 'failed')", hi, victim), 0);
}

/* The checkpoint request's record fails until the grace is over (the database away longer
 * than the grace): the suspension waits for that record, and every apply has its event. */
static void
test_preemption_record_lost_past_grace(void **state)
{
	char *victim, *hi;

	(void)state;
	victim = victim_running("late");
	harness_sql("CREATE FUNCTION fail_ckpt() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN"
	    " RAISE EXCEPTION 'database away'; END $$;"
	    " CREATE TRIGGER fail_ckpt BEFORE INSERT ON job_events FOR EACH ROW WHEN (NEW.job_id ="
	    " '%s' AND NEW.type = 'checkpoint_requested') EXECUTE FUNCTION fail_ckpt()", victim);
	hi = submit("RayJob", "urgent2", 1, "\"constraints\":{\"providers\":[\"hyperpod\"]},"
	    "\"priority_class\":\"high\"");
	harness_job_wait_row(victim, "preempted", 1, 30);
	/* 3 s past the deadline, or back in the queue already */
	for (int i = 0; i < 150 && harness_sql_long("SELECT count(*) FROM jobs WHERE id = '%s' AND"
	    " (state <> 'preempted' OR checkpoint_deadline + interval '3 seconds' < now())",
	    victim) == 0; i++)
		usleep(100 * 1000);
	harness_sql("DROP TRIGGER fail_ckpt ON job_events; DROP FUNCTION fail_ckpt()");
	victim_settled(victim, "late");
	ended(hi, victim);
	free(victim);
	free(hi);
}

/* Two replicas' status workers follow the same preempted job while the member answers
 * slowly (each apply takes 1.5 s, longer than a status cycle): the checkpoint request
 * and the suspension are applied by one of them, once. */
static void
test_preemption_two_replicas(void **state)
{
	struct fleetd_proc fd2;
	const char *env[90];
	char *victim, *hi;
	int n = 0;

	(void)state;
	memset(&fd2, 0, sizeof(fd2));
	for (int i = 0; cs.env[i] != NULL && n < 88; i++)
		env[n++] = cs.env[i];
	env[n++] = "FLEETD_WORKERS=status";
	env[n] = NULL;
	harness_fleetd_start(&fd2, dburl, env);
	harness_call_to(&fd);	/* the API calls stay with the first replica */
	victim = victim_running("twice");
	harness_sim_post(&cs, "/_sim/faults", "{\"service\":\"k8s\",\"cluster\":\"test-hp-usw2\","
	    "\"latency_ms\":1500}");
	hi = submit("RayJob", "urgent3", 1, "\"constraints\":{\"providers\":[\"hyperpod\"]},"
	    "\"priority_class\":\"high\"");
	harness_job_wait_row(victim, "pending", 1, 60);
	harness_sim(&cs, "DELETE", "/_sim/faults", NULL, NULL);
	usleep(3000 * 1000);	/* an apply of the other replica still under way lands */
	harness_fleetd_stop(&fd2);
	victim_settled(victim, "twice");
	ended(hi, victim);
	free(victim);
	free(hi);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_lifecycle),
		cmocka_unit_test(test_cancel),
		cmocka_unit_test(test_exactly_once),
		cmocka_unit_test(test_image_warning),
		cmocka_unit_test(test_stockout),
		cmocka_unit_test(test_preemption),
		cmocka_unit_test(test_preemption_two_replicas),
		cmocka_unit_test(test_preemption_record_lost_past_grace),
	};

	return cmocka_run_group_tests(tests, setup, harness_group_teardown);
}
