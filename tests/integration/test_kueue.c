/* test_kueue: issue 13's Kueue compatibility through the API against cloudsim, whose GKE
 * cluster runs Kueue without elastic jobs (ElasticJobsViaWorkloadSlices off, ClusterQueue
 * "fleetd").  The cluster's registration field and its probe (GET cluster), a direct apply
 * of what Kueue's webhooks refuse (their Status error word for word), a labelled job whose
 * LocalQueue is missing (held suspended, Inadmissible, released once the queue exists), and
 * jobs through the API: an elastic RayJob runs ungated (no queue-name label; explain says
 * so), a fixed one is gated, its LocalQueue and WorkloadPriorityClass ensured before it. */
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
#define GKE		"test-gke-usc1"
#define H100		"nvidia-h100-80gb"
#define NS		"fleet-" ENV "-ml"

static struct fleetd_proc fd;
static struct harness_cs cs;
static char dburl[512];
static struct harness_roles R;	/* the four attack tokens (harness_roles) */
static char cluster_id[40];

static int
setup(void **state)
{
	const char *const env[] = {
		"FLEETD_WORKERS=poller,scheduler,dispatch,status",
		"FLEETD_SCHEDULER_INTERVAL_MS=300",
		NULL,
	};
	json_t *f = harness_fleet_json(), *c;
	size_t i;

	(void)state;
	json_object_set_new(json_object_get(f, "sim"), "job_run_s", json_integer(1000000));
	json_array_foreach(json_object_get(f, "clusters"), i, c)
		if (strcmp(harness_js(c, "name"), GKE) == 0)
			json_object_set_new(c, "kueue", json_pack("{s:b, s:[s]}", "elastic_jobs", 0,
			    "cluster_queues", "fleetd"));
	harness_cs_start_json(&cs, f, "10");
	json_decref(f);
	harness_fleetd_cs(&fd, dburl, sizeof(dburl), "kueue", &cs, env);
	harness_roles(dburl, ENV, &R);
	harness_pclass(R.admin, "low", 10, false);
	harness_pclass(R.admin, "high", 1000, false);
	harness_queue(R.admin, ENV, "ml", "low", H100, 64);
	harness_register(&cs, R.admin, GKE, NULL, cluster_id);
	return 0;
}

/* PUT of the registered cluster with batch_scheduler and kueue (JSON text or NULL). */
static long
put_cluster(const char *token, const char *sched, const char *kueue)
{
	json_t *c = json_incref(harness_get_ok(R.admin, "/v1/clusters/%s", cluster_id)), *body;
	char etag[64], hdr[96], *text;
	const char *hd[] = { hdr, NULL };
	long st;

	body = json_pack("{s:s, s:s, s:s, s:s, s:s}", "name", harness_js(c, "name"), "api_server",
	    harness_js(c, "api_server"), "ca_cert", harness_js(c, "ca_cert"),
	    "provider_cluster_id", harness_js(c, "provider_cluster_id"), "batch_scheduler", sched);
	if (kueue != NULL)
		json_object_set_new(body, "kueue", json_loads(kueue, 0, NULL));
	snprintf(etag, sizeof(etag), "\"%lld\"", harness_ji(c, "version"));
	snprintf(hdr, sizeof(hdr), "If-Match: %s", etag);
	text = json_dumps(body, JSON_COMPACT);
	st = harness_call_h("PUT", token, text, hd, "/v1/clusters/%s", cluster_id);
	free(text);
	json_decref(body);
	json_decref(c);
	return st;
}

/* ---- the registration field, its probe and who may set it */

static void
test_registration(void **state)
{
	json_t *c;

	(void)state;
	/* the new field, attacked: viewer and operator are not admins, another environment's
	 * admin does not see the cluster, no token is no caller */
	assert_int_equal(put_cluster(R.viewer, "kueue", "{\"elastic_jobs\":true}"), 403);
	assert_int_equal(put_cluster(R.oper, "kueue", "{\"elastic_jobs\":true}"), 403);
	assert_int_equal(put_cluster(R.other, "kueue", "{\"elastic_jobs\":true}"), 404);
	assert_int_equal(put_cluster(NULL, "kueue", "{\"elastic_jobs\":true}"), 401);
	/* settings only with kueue, and Kubernetes names */
	assert_int_equal(put_cluster(R.admin, "none", "{\"elastic_jobs\":true}"), 400);
	harness_expect_problem(NULL, 400, "cluster.bad_kueue", "/kueue");
	assert_int_equal(put_cluster(R.admin, "kueue", "{\"cluster_queue\":\"Bad_Q\"}"), 400);
	harness_expect_problem(NULL, 400, "cluster.bad_kueue", "/kueue/cluster_queue");
	assert_int_equal(put_cluster(R.admin, "kueue", "{\"elastic\":true}"), 400);
	harness_expect_problem(NULL, 400, "api.unknown_field", "/kueue/elastic");
	c = json_incref(harness_get_ok(R.viewer, "/v1/clusters/%s", cluster_id));
	assert_string_equal(harness_js(c, "batch_scheduler"), "none");	/* nothing changed */
	assert_true(json_is_null(harness_jp(c, "kueue")));
	json_decref(c);

	/* registered as elastic: the probe reads Kueue's ConfigMap and says it is not */
	assert_int_equal(put_cluster(R.admin, "kueue", "{\"elastic_jobs\":true}"), 200);
	c = json_incref(harness_r.json);
	assert_true(json_is_true(harness_jp(c, "kueue.elastic_jobs")));
	assert_string_equal(harness_js(c, "kueue.cluster_queue"), "fleetd");
	assert_string_equal(harness_js(c, "batch_scheduler_probe.condition"), "mismatch");
	assert_true(json_is_false(harness_jp(c, "batch_scheduler_probe.elastic_jobs")));
	assert_true(json_is_true(harness_jp(c, "batch_scheduler_probe.kueue_api")));
	assert_non_null(strstr(harness_js(c, "batch_scheduler_probe.message"),
	    "ElasticJobsViaWorkloadSlices"));
	json_decref(c);

	/* as it is: verified; LocalQueues get a prefix */
	assert_int_equal(put_cluster(R.admin, "kueue", "{\"elastic_jobs\":false,"
	    "\"local_queue_prefix\":\"fq-\"}"), 200);
	c = json_incref(harness_get_ok(R.viewer, "/v1/clusters/%s", cluster_id));
	assert_string_equal(harness_js(c, "batch_scheduler_probe.condition"), "verified");
	assert_true(json_is_true(harness_jp(c, "batch_scheduler_probe.ray_integration")));
	assert_true(json_is_true(harness_jp(c, "batch_scheduler_probe.cluster_queue_exists")));
	assert_string_equal(harness_js(c, "kueue.local_queue_prefix"), "fq-");
	json_decref(c);
}

/* ---- cloudsim refuses like Kueue's webhooks */

static const char rayjob[] =
    "{\"apiVersion\":\"ray.io/v1\",\"kind\":\"RayJob\",\"metadata\":{\"name\":\"direct\","
    "\"namespace\":\"default\",\"labels\":{\"kueue.x-k8s.io/queue-name\":\"user-queue\"}%s},"
    "\"spec\":{\"entrypoint\":\"python x.py\",\"shutdownAfterJobFinishes\":true,"
    "\"rayClusterSpec\":{\"enableInTreeAutoscaling\":%s,\"headGroupSpec\":{\"rayStartParams\":{},"
    "\"template\":{\"spec\":{\"containers\":[{\"name\":\"ray-head\",\"image\":"
    "\"rayproject/ray:2.52.0\",\"resources\":{\"requests\":{\"cpu\":\"1\",\"memory\":\"1Gi\"},"
    "\"limits\":{\"cpu\":\"1\",\"memory\":\"1Gi\"}}}]}}},\"workerGroupSpecs\":[{\"groupName\":"
    "\"w\",\"replicas\":1,\"minReplicas\":1,\"maxReplicas\":3,\"rayStartParams\":{},"
    "\"template\":{\"spec\":{\"containers\":[{\"name\":\"ray-worker\",\"image\":"
    "\"rayproject/ray:2.52.0\",\"resources\":{\"requests\":{\"cpu\":\"1\",\"memory\":\"1Gi\"},"
    "\"limits\":{\"cpu\":\"1\",\"memory\":\"1Gi\"}}}]}}}]}}}";

static void
apply(struct http_result *r, const char *plural, const char *name, const char *body)
{
	char path[256];

	snprintf(path, sizeof(path), "/apis/ray.io/v1/namespaces/default/%s/%s?fieldManager=t",
	    plural, name);
	harness_kube(&cs, r, GKE, "PATCH", path, "application/apply-patch+yaml", body);
}

static bool
released(void *arg)
{
	struct http_result r = { 0 };
	bool done;

	(void)arg;
	harness_kube(&cs, &r, GKE, "GET", "/apis/ray.io/v1/namespaces/default/rayjobs/direct",
	    NULL, NULL);
	done = r.status == 200 && !json_is_true(harness_jp(r.json, "spec.suspend"));
	harness_http_free(&r);
	return done;
}

static void
test_webhook(void **state)
{
	struct http_result r = { 0 };
	char body[4096];

	(void)state;
	/* the combination a Kueue cluster without elastic jobs refuses */
	snprintf(body, sizeof(body), rayjob, "", "true");
	apply(&r, "rayjobs", "direct", body);
	assert_int_equal(r.status, 403);
	assert_string_equal(harness_js(r.json, "kind"), "Status");
	assert_string_equal(harness_js(r.json, "reason"), "Forbidden");
	assert_string_equal(harness_js(r.json, "message"), "admission webhook \"vrayjob.kb.io\" "
	    "denied the request: spec.rayClusterSpec.enableInTreeAutoscaling: Invalid value: "
	    "true: a kueue managed job should only use autoscaling when workload slicing is "
	    "enabled");
	harness_http_free(&r);
	/* a RayCluster opting into workload slices is still refused: the gate is off */
	snprintf(body, sizeof(body), "{\"apiVersion\":\"ray.io/v1\",\"kind\":\"RayCluster\","
	    "\"metadata\":{\"name\":\"direct-rc\",\"namespace\":\"default\",\"labels\":"
	    "{\"kueue.x-k8s.io/queue-name\":\"user-queue\"},\"annotations\":"
	    "{\"kueue.x-k8s.io/elastic-job\":\"true\"}},\"spec\":{\"enableInTreeAutoscaling\":true,"
	    "\"headGroupSpec\":{\"rayStartParams\":{},\"template\":{\"spec\":{\"containers\":"
	    "[{\"name\":\"ray-head\",\"image\":\"rayproject/ray:2.52.0\"}]}}}}}");
	apply(&r, "rayclusters", "direct-rc", body);
	assert_int_equal(r.status, 403);
	assert_string_equal(harness_js(r.json, "message"), "admission webhook "
	    "\"vraycluster.kb.io\" denied the request: spec.enableInTreeAutoscaling: Invalid "
	    "value: true: a kueue managed job can use autoscaling only when the "
	    "ElasticJobsViaWorkloadSlices feature gate is on and the job is an elastic job");
	harness_http_free(&r);

	/* fixed, labelled, LocalQueue missing: accepted, held suspended, Inadmissible */
	snprintf(body, sizeof(body), rayjob, "", "false");
	apply(&r, "rayjobs", "direct", body);
	assert_int_equal(r.status, 201);
	harness_http_free(&r);
	harness_kube(&cs, &r, GKE, "GET", "/apis/ray.io/v1/namespaces/default/rayjobs/direct",
	    NULL, NULL);
	assert_true(json_is_true(harness_jp(r.json, "spec.suspend")));
	harness_http_free(&r);
	harness_kube(&cs, &r, GKE, "GET", "/api/v1/namespaces/default/events?fieldSelector="
	    "involvedObject.name%3Ddirect", NULL, NULL);
	assert_non_null(strstr(r.body, "LocalQueue user-queue doesn't exist"));
	harness_http_free(&r);
	/* the queue appears: Kueue admits the job */
	harness_kube(&cs, &r, GKE, "PATCH", "/apis/kueue.x-k8s.io/v1beta1/namespaces/default/"
	    "localqueues/user-queue?fieldManager=t", "application/apply-patch+yaml",
	    "{\"apiVersion\":\"kueue.x-k8s.io/v1beta1\",\"kind\":\"LocalQueue\",\"metadata\":"
	    "{\"name\":\"user-queue\",\"namespace\":\"default\"},\"spec\":{\"clusterQueue\":"
	    "\"fleetd\"}}");
	assert_int_equal(r.status, 201);
	harness_http_free(&r);
	assert_true(harness_wait(released, NULL, 20));
	harness_kube(&cs, &r, GKE, "DELETE", "/apis/ray.io/v1/namespaces/default/rayjobs/direct",
	    NULL, NULL);
	harness_http_free(&r);
}

/* ---- jobs through the API */

static char *
submit_n(const char *name, const char *groups, const char *extra, int gpus)
{
	char body[2048];

	snprintf(body, sizeof(body), "{\"environment\":\"" ENV "\",\"kind\":\"RayJob\",\"queue\":"
	    "\"ml\",\"name\":\"%s\",\"ray_version\":\"2.52.0\",\"entrypoint\":\"python t.py\","
	    "\"head\":{\"cpu\":\"1\",\"memory\":\"4Gi\"},\"worker_groups\":[{\"name\":\"gpu\","
	    "%s,\"cpu\":\"8\",\"memory\":\"64Gi\",\"accelerator\":{\"flavor\":\"" H100 "\","
	    "\"count\":%d}}]%s}", name, groups, gpus, extra);
	return strdup(harness_js(harness_post_created(R.admin, "/v1/jobs", body), "id"));
}

static char *
submit(const char *name, const char *groups, const char *extra)
{
	return submit_n(name, groups, extra, 2);
}

static bool
running(void *arg)
{
	return harness_sql_long("SELECT count(*) FROM jobs WHERE id = '%s' AND state = 'running'",
	    (const char *)arg) == 1;
}

static json_t *
object_of(const char *id)
{
	json_t *m = json_incref(harness_get_ok(R.admin, "/v1/jobs/%s/manifest", id)), *out;
	struct http_result r = { 0 };
	char path[300];

	snprintf(path, sizeof(path), "/apis/ray.io/v1/namespaces/%s/rayjobs/%s",
	    harness_js(m, "metadata.namespace"), harness_js(m, "metadata.name"));
	harness_kube(&cs, &r, GKE, "GET", path, NULL, NULL);
	assert_int_equal(r.status, 200);
	out = json_incref(r.json);
	harness_http_free(&r);
	json_decref(m);
	return out;
}

static void
test_jobs(void **state)
{
	char *el = submit("elastic", "\"min_replicas\":1,\"max_replicas\":2", ""),
	    *fx = submit("fixed", "\"replicas\":1", ",\"priority_class\":\"high\""), *again;
	json_t *o, *lq, *ex;
	struct http_result r = { 0 };

	(void)state;
	if (!harness_wait(running, el, 60) || !harness_wait(running, fx, 60))
		fail_msg("jobs not running: %s; fleetd log %s", harness_sql_rows("SELECT name, state,"
		    " coalesce(reason, '') FROM jobs"), fd.log);

	/* the elastic job: applied without the queue-name label, autoscaling kept */
	o = object_of(el);
	assert_null(json_object_get(harness_jp(o, "metadata.labels"), "kueue.x-k8s.io/queue-name"));
	assert_true(json_is_true(harness_jp(o, "spec.rayClusterSpec.enableInTreeAutoscaling")));
	json_decref(o);
	ex = json_incref(harness_get_ok(R.viewer, "/v1/jobs/%s/placement", el));
	assert_true(json_is_false(harness_jp(ex, "batch_scheduler.gated")));
	assert_string_equal(harness_js(ex, "batch_scheduler.kind"), "kueue");
	assert_non_null(strstr(harness_js(ex, "batch_scheduler.detail"), "does not gate it"));
	assert_true(json_is_false(harness_jp(ex, "batch_scheduler.elastic_jobs.used")));
	json_decref(ex);

	/* the fixed job: gated through LocalQueue fq-ml, which existed before it */
	o = object_of(fx);
	assert_string_equal(json_string_value(json_object_get(harness_jp(o, "metadata.labels"),
	    "kueue.x-k8s.io/queue-name")), "fq-ml");
	assert_string_equal(json_string_value(json_object_get(harness_jp(o, "metadata.labels"),
	    "kueue.x-k8s.io/priority-class")), "high");
	assert_false(json_is_true(harness_jp(o, "spec.suspend")));
	harness_kube(&cs, &r, GKE, "GET", "/apis/kueue.x-k8s.io/v1beta1/namespaces/" NS
	    "/localqueues/fq-ml", NULL, NULL);
	assert_int_equal(r.status, 200);
	lq = json_incref(r.json);
	harness_http_free(&r);
	assert_string_equal(harness_js(lq, "spec.clusterQueue"), "fleetd");
	assert_string_equal(json_string_value(json_object_get(harness_jp(lq, "metadata.labels"),
	    "app.kubernetes.io/managed-by")), "fleetd");
	assert_string_equal(json_string_value(json_object_get(harness_jp(lq, "metadata.labels"),
	    "fleet.io/queue")), "ml");
	/* order: the queue was there first (Kueue never found the job inadmissible) */
	assert_true(strcmp(harness_js(lq, "metadata.creationTimestamp"),
	    harness_js(o, "metadata.creationTimestamp")) <= 0);
	harness_kube(&cs, &r, GKE, "GET", "/api/v1/namespaces/" NS "/events", NULL, NULL);
	assert_int_equal(r.status, 200);
	assert_null(strstr(r.body, "Inadmissible"));
	harness_http_free(&r);
	harness_kube(&cs, &r, GKE, "GET", "/apis/kueue.x-k8s.io/v1beta1/workloadpriorityclasses/"
	    "high", NULL, NULL);
	assert_int_equal(r.status, 200);
	assert_int_equal(harness_ji(r.json, "value"), 1000);
	harness_http_free(&r);
	ex = json_incref(harness_get_ok(R.viewer, "/v1/jobs/%s/placement", fx));
	assert_true(json_is_true(harness_jp(ex, "batch_scheduler.gated")));
	assert_string_equal(harness_js(ex, "batch_scheduler.local_queue"), "fq-ml");
	assert_string_equal(harness_js(ex, "batch_scheduler.probe.condition"), "verified");
	json_decref(ex);
	json_decref(lq);
	json_decref(o);

	/* the LocalQueue deleted on the member: the next job of the queue brings it back
	 * (before: applied once per process, the job stayed held "Inadmissible") */
	harness_kube(&cs, &r, GKE, "DELETE", "/apis/kueue.x-k8s.io/v1beta1/namespaces/" NS
	    "/localqueues/fq-ml", NULL, NULL);
	assert_int_equal(r.status, 200);
	harness_http_free(&r);
	/* a whole node: only the h100 node the other two jobs do not use fits it, whatever
	 * the age of fleetd's capacity snapshot */
	again = submit_n("again", "\"replicas\":1", "", 8);
	if (!harness_wait(running, again, 60)) {
		json_t *ao = object_of(again), *fo = object_of(fx), *it, *cond;
		long lq_status;
		char pend[4000] = "";
		size_t i, k;

		harness_kube(&cs, &r, GKE, "GET", "/api/v1/namespaces/" NS "/pods", NULL, NULL);
		json_array_foreach(json_object_get(r.json, "items"), i, it) {
			size_t len = strlen(pend);

			snprintf(pend + len, sizeof(pend) - len, "[%s %s on %s", harness_js(it,
			    "metadata.name"), harness_js(it, "status.phase"), harness_js(it,
			    "spec.nodeName"));
			json_array_foreach(harness_jp(it, "status.conditions"), k, cond) {
				len = strlen(pend);
				snprintf(pend + len, sizeof(pend) - len, " %s", harness_js(cond,
				    "message"));
			}
			len = strlen(pend);
			snprintf(pend + len, sizeof(pend) - len, "] ");
		}
		harness_http_free(&r);
		print_message("pods: %s\n", pend);

		harness_kube(&cs, &r, GKE, "GET", "/apis/kueue.x-k8s.io/v1beta1/namespaces/" NS
		    "/localqueues/fq-ml", NULL, NULL);
		lq_status = r.status;
		harness_http_free(&r);
		fail_msg("job not running after its LocalQueue was deleted: %s; LocalQueue %ld; "
		    "again: suspend %d status %s; fixed: suspend %d status %s; fleetd log %s",
		    harness_sql_rows("SELECT name, state, coalesce(reason, '') FROM jobs"),
		    lq_status, json_is_true(harness_jp(ao, "spec.suspend")),
		    harness_js(ao, "status.jobDeploymentStatus"),
		    json_is_true(harness_jp(fo, "spec.suspend")),
		    harness_js(fo, "status.jobDeploymentStatus"), fd.log);
	}
	harness_kube(&cs, &r, GKE, "GET", "/apis/kueue.x-k8s.io/v1beta1/namespaces/" NS
	    "/localqueues/fq-ml", NULL, NULL);
	assert_int_equal(r.status, 200);
	harness_http_free(&r);
	free(again);
	free(el);
	free(fx);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_registration),
		cmocka_unit_test(test_webhook),
		cmocka_unit_test(test_jobs),
	};

	return cmocka_run_group_tests(tests, setup, harness_group_teardown);
}
