/* test_spec_update: PUT /v1/jobs/{id}/spec on running jobs against cloudsim. A RayService's
 * new image is a KubeRay zero-downtime upgrade (events spec_update_requested, spec_applied,
 * upgrade_in_progress, upgrade_complete; the old spec's footprint is held meanwhile; the
 * pods on the member run the new image); a RayCluster is resized in place; what a kind does
 * not allow is refused naming the field, and the route refuses viewer, operator of another
 * environment, a missing token and a missing or stale If-Match. */
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

#define ENV	"test"
#define H100	"nvidia-h100-80gb"
#define CLUSTER	"test-hp-usw2"

static struct fleetd_proc fd;
static struct harness_cs cs;
static char dburl[512];
static struct harness_roles R;	/* the four attack tokens (harness_roles) */

static int
setup(void **state)
{
	const char *const env[] = {
		"FLEETD_WORKERS=poller,scheduler,dispatch,status,updater",
		"FLEETD_POLL_INTERVAL_MS=1000",
		"FLEETD_SCHEDULER_INTERVAL_MS=300",
		NULL,
	};
	const char *const names[] = { CLUSTER, NULL };

	(void)state;
	harness_cs_start(&cs, NULL, "4");
	harness_fleetd_cs(&fd, dburl, sizeof(dburl), "specupd", &cs, env);
	harness_roles(dburl, ENV, &R);
	harness_pclass(R.admin, "low", 10, false);
	harness_queue(R.admin, ENV, "ml", "low", H100, 64);
	harness_pclass(R.admin, "high", 1000, true);
	/* one GPU of quota: a high-priority job preempts what holds it */
	harness_queue(R.admin, ENV, "one", "low", H100, 1);
	harness_register(&cs, R.admin, CLUSTER, NULL, NULL);
	harness_wait_capacity(names, 60);
	return 0;
}

/* The spec body of kind with image (NULL: default) and replicas workers. */
static char *
spec_body(const char *kind, const char *name, const char *image, int replicas, int cpu)
{
	char *b = malloc(2048), img[160] = "";

	if (image != NULL)
		snprintf(img, sizeof(img), "\"image\":\"%s\",", image);
	snprintf(b, 2048, "{\"environment\":\"" ENV "\",\"kind\":\"%s\",\"queue\":\"ml\","
	    "\"name\":\"%s\",\"ray_version\":\"2.52.0\",%s%s"
	    "\"head\":{\"cpu\":\"1\",\"memory\":\"2Gi\"},\"worker_groups\":[{\"name\":\"gpu\","
	    "\"replicas\":%d,\"cpu\":\"%d\",\"memory\":\"64Gi\",\"accelerator\":{\"flavor\":\""
	    H100 "\",\"count\":1}}]}", kind, name, img, strcmp(kind, "RayService") == 0 ?
	    "\"serve_config\":{\"applications\":[{\"name\":\"app\",\"import_path\":"
	    "\"serve:app\"}]}," : "", replicas, cpu);
	return b;
}

/* PUT the spec with If-Match of version ("*" when < 0, none when 0); returns the status. */
static long
put_spec(const char *token, const char *id, long version, const char *body)
{
	char im[64];
	const char *h[2] = { im, NULL };

	if (version < 0)
		snprintf(im, sizeof(im), "If-Match: *");
	else
		snprintf(im, sizeof(im), "If-Match: \"%ld\"", version);
	return harness_call_h("PUT", token, body, version != 0 ? h : NULL, "/v1/jobs/%s/spec",
	    id);
}

/* Every pod of the job's object on the member runs image (head and workers). */
static bool
pods_run(const char *ns, const char *image, int *n)
{
	struct http_result r;
	json_t *p;
	size_t i;
	bool all = true;
	char path[256];

	snprintf(path, sizeof(path), "/api/v1/namespaces/%s/pods", ns);
	harness_kube(&cs, &r, CLUSTER, "GET", path, NULL, NULL);
	*n = 0;
	json_array_foreach(json_object_get(r.json, "items"), i, p) {
		(*n)++;
		all &= strcmp(harness_js(p, "spec.containers.0.image"), image) == 0;
	}
	harness_http_free(&r);
	return all && *n > 0;
}

/* GET of a namespaced object on the member; its JSON (new reference) or NULL on 404. */
static json_t *
member_get(const char *ns, const char *plural, const char *name)
{
	struct http_result r;
	char path[384];
	json_t *o = NULL;

	snprintf(path, sizeof(path), "%s/namespaces/%s/%s/%s", strcmp(plural, "rayservices") ==
	    0 ? "/apis/ray.io/v1" : strncmp(plural, "role", 4) == 0 ?
	    "/apis/rbac.authorization.k8s.io/v1" : "/api/v1", ns, plural, name);
	harness_kube(&cs, &r, CLUSTER, "GET", path, NULL, NULL);
	if (r.status == 200)
		o = json_incref(r.json);
	else if (r.status != 404)
		fail_msg("GET %s: %ld %s", path, r.status, r.body);
	harness_http_free(&r);
	return o;
}

/* How many of attempt's checkpoint-signal objects (ConfigMap, ServiceAccount, Role,
 * RoleBinding fleet-signal-<8hex>-<attempt>) of job id are on the member. */
static int
signal_objects(const char *ns, const char *id, int attempt)
{
	static const char *const plurals[] = { "configmaps", "serviceaccounts", "roles",
		"rolebindings" };
	char name[64];
	int n = 0;

	snprintf(name, sizeof(name), "fleet-signal-%.8s-%d", id, attempt);
	for (size_t i = 0; i < 4; i++) {
		json_t *o = member_get(ns, plurals[i], name);

		n += o != NULL;
		json_decref(o);
	}
	return n;
}

/* Waits (10 s at most) until attempt's signal objects number want; their number. */
static int
signal_objects_wait(const char *ns, const char *id, int attempt, int want)
{
	double end = harness_now_s() + 10;
	int n;

	while ((n = signal_objects(ns, id, attempt)) != want && harness_now_s() < end)
		usleep(200 * 1000);
	return n;
}

/* The serve endpoint of job j (GET answer) names the Service <object>-serve-svc on the
 * cluster, port 8000, and that Service exists on the member. */
static void
check_endpoint(json_t *j, const char *object, const char *ns)
{
	char svc[128], url[384];
	double end = harness_now_s() + 20;
	json_t *o;

	snprintf(svc, sizeof(svc), "%s-serve-svc", object);
	snprintf(url, sizeof(url), "http://%s.%s.svc.cluster.local:8000", svc, ns);
	assert_string_equal(harness_js(j, "serve_endpoint.service"), svc);
	assert_string_equal(harness_js(j, "serve_endpoint.cluster"), CLUSTER);
	assert_string_equal(harness_js(j, "serve_endpoint.namespace"), ns);
	assert_int_equal(harness_ji(j, "serve_endpoint.port"), 8000);
	assert_string_equal(harness_js(j, "serve_endpoint.url"), url);
	while ((o = member_get(ns, "services", svc)) == NULL && harness_now_s() < end)
		usleep(200 * 1000);
	if (o == NULL)
		fail_msg("no Service %s in %s on %s", svc, ns, CLUSTER);
	assert_int_equal(harness_ji(o, "spec.ports.0.port"), 8000);
	json_decref(o);
}

/* A RayService preempted and placed again on the same cluster keeps its object name, so
 * KubeRay's serve Service keeps its name too: the endpoint in GET /v1/jobs/{id} does not
 * move (before, the name carried the attempt: -a1, then -a2). */
static void
test_rayservice_stable_endpoint(void **state)
{
	char body[1536], hib[1024], *id, *hi, ns[128], name[128];
	json_t *j, *o;
	double end;

	(void)state;
	snprintf(body, sizeof(body), "{\"environment\":\"" ENV "\",\"kind\":\"RayService\","
	    "\"queue\":\"one\",\"name\":\"endpoint\",\"ray_version\":\"2.52.0\",\"serve_config\":"
	    "{\"applications\":[{\"name\":\"app\",\"import_path\":\"serve:app\"}]},\"checkpoint\":"
	    "{\"uri\":\"s3://ckpt/endpoint\",\"grace_seconds\":1},\"head\":{\"cpu\":\"1\","
	    "\"memory\":\"2Gi\"},\"worker_groups\":[{\"name\":\"gpu\",\"replicas\":1,\"cpu\":"
	    "\"4\",\"memory\":\"64Gi\",\"accelerator\":{\"flavor\":\"" H100 "\",\"count\":1}}]}");
	id = strdup(harness_js(harness_post_created(R.oper, "/v1/jobs", body), "id"));
	j = harness_job_wait(R.admin, id, "running", 1, 40);
	snprintf(name, sizeof(name), "%s", harness_js(j, "object_name"));
	snprintf(ns, sizeof(ns), "%s", harness_js(harness_get_ok(R.admin, "/v1/jobs/%s/manifest",
	    id), "metadata.namespace"));
	check_endpoint(j, name, ns);
	json_decref(j);
	/* a viewer reads the endpoint too; no token and another environment's admin do not */
	j = harness_get_ok(R.viewer, "/v1/jobs/%s", id);
	assert_string_equal(harness_js(j, "serve_endpoint.namespace"), ns);
	assert_int_equal(harness_call("GET", NULL, NULL, "/v1/jobs/%s", id), 401);
	assert_int_equal(harness_call("GET", R.other, NULL, "/v1/jobs/%s", id), 404);
	assert_null(strstr(harness_r.body, "serve-svc"));

	/* a high-priority job takes the queue's one GPU: the service is preempted (deleted
	 * after its grace) and waits; once that job is cancelled it is placed again */
	snprintf(hib, sizeof(hib), "{\"environment\":\"" ENV "\",\"kind\":\"RayJob\","
	    "\"queue\":\"one\",\"name\":\"urgent\",\"priority_class\":\"high\",\"ray_version\":"
	    "\"2.52.0\",\"entrypoint\":\"python t.py\",\"head\":{\"cpu\":\"1\",\"memory\":"
	    "\"2Gi\"},\"worker_groups\":[{\"name\":\"gpu\",\"replicas\":1,\"cpu\":\"4\","
	    "\"memory\":\"64Gi\",\"accelerator\":{\"flavor\":\"" H100 "\",\"count\":1}}]}");
	hi = strdup(harness_js(harness_post_created(R.oper, "/v1/jobs", hib), "id"));
	end = harness_now_s() + 40;
	while (harness_sql_long("SELECT count(*) FROM jobs WHERE id = '%s' AND state IN"
	    " ('dispatched', 'running')", hi) == 0 && harness_now_s() < end)
		usleep(200 * 1000);
	if (harness_sql_long("SELECT count(*) FROM job_events WHERE job_id = '%s' AND"
	    " to_state = 'preempted'", id) != 1)
		fail_msg("not preempted:\n%s", harness_sql_rows("SELECT job_id, type, attempt,"
		    " message FROM job_events WHERE job_id IN ('%s', '%s') ORDER BY id", id, hi));
	end = harness_now_s() + 20;
	do {	/* deleted after the grace: pending, no endpoint */
		j = harness_get_ok(R.admin, "/v1/jobs/%s", id);
		if (strcmp(harness_js(j, "state"), "pending") == 0)
			break;
		usleep(200 * 1000);
	} while (harness_now_s() < end);
	assert_string_equal(harness_js(j, "state"), "pending");
	assert_true(json_is_null(json_object_get(j, "serve_endpoint")));
	{
		long st = harness_call("POST", R.admin, "{}", "/v1/jobs/%s/cancel", hi);

		assert_true(st == 200 || st == 202);
	}
	j = harness_job_wait(R.admin, id, "running", 2, 60);
	assert_string_equal(harness_js(j, "object_name"), name);
	check_endpoint(j, name, ns);
	json_decref(j);
	/* the object on the member is this attempt's, and stays (not deleted as the previous
	 * attempt's object, which it is) */
	for (int i = 0; i < 10; i++) {
		o = member_get(ns, "rayservices", name);
		if (o == NULL)
			fail_msg("RayService %s vanished; events:\n%s", name, harness_sql_rows(
			    "SELECT type, attempt, message FROM job_events WHERE job_id = '%s'"
			    " ORDER BY id", id));
		assert_string_equal(json_string_value(json_object_get(harness_jp(o,
		    "metadata.labels"), "fleet.io/attempt")), "2");
		json_decref(o);
		usleep(200 * 1000);
	}
	assert_int_equal(harness_sql_long("SELECT count(*) FROM jobs WHERE id = '%s' AND state ="
	    " 'running'", id), 1);
	/* only the current attempt's checkpoint-signal objects stay on the member */
	assert_int_equal(signal_objects_wait(ns, id, 1, 0), 0);
	assert_int_equal(signal_objects(ns, id, 2), 4);
	/* an upgrade runs a second Ray cluster until the switch: the queue's one GPU is taken,
	 * so it is refused, naming the quota and what is missing; nothing is recorded */
	{
		char *upd = malloc(strlen(body) + 64);
		json_t *pr;

		snprintf(upd, strlen(body) + 64, "%.*s\"image\":\"rayproject/ray:2.52.0-gpu-new\",%s",
		    (int)(strstr(body, "\"ray_version\"") - body), body, strstr(body,
		    "\"ray_version\""));
		j = harness_get_ok(R.admin, "/v1/jobs/%s", id);
		assert_int_equal(put_spec(R.oper, id, harness_ji(j, "version"), upd), 409);
		harness_expect_problem(NULL, 409, "job.update_no_room", NULL);
		pr = harness_r.json;
		if (strstr(harness_js(pr, "detail"), "Queue one has room for 0 more " H100
		    " accelerators, the update needs 1 (1 missing)") == NULL)
			fail_msg("detail does not name the quota: %s", harness_r.body);
		assert_int_equal(harness_job_event_count(id, "spec_update_requested", NULL), 0);
		j = harness_get_ok(R.admin, "/v1/jobs/%s", id);
		assert_true(json_is_null(json_object_get(j, "spec_update")));
		free(upd);
	}
	{
		long st = harness_call("POST", R.admin, "{}", "/v1/jobs/%s/cancel", id);

		assert_true(st == 200 || st == 202);
	}
	json_decref(harness_job_wait(R.admin, id, "cancelled", 0, 30));
	/* cancelled: the object and its attempt's signal objects are gone */
	assert_int_equal(signal_objects_wait(ns, id, 2, 0), 0);
	free(hi);
	free(id);
}

static void
test_rayservice_upgrade(void **state)
{
	char *body = spec_body("RayService", "serve", NULL, 1, 4), *id, *upd, ns[128];
	json_t *j;
	long v;
	int n = 0;
	double end;

	(void)state;
	id = strdup(harness_js(harness_post_created(R.oper, "/v1/jobs", body), "id"));
	j = harness_job_wait(R.admin, id, "running", 0, 40);
	v = harness_ji(j, "version");
	json_decref(j);
	snprintf(ns, sizeof(ns), "%s", harness_js(harness_get_ok(R.admin, "/v1/jobs/%s/manifest",
	    id), "metadata.namespace"));

	/* refusals first: nothing changes */
	upd = spec_body("RayService", "serve", "rayproject/ray:2.52.0-gpu-new", 1, 4);
	assert_int_equal(put_spec(R.oper, id, 0, upd), 428);
	harness_expect_problem(NULL, 428, "api.precondition_required", NULL);
	assert_int_equal(put_spec(R.oper, id, v + 7, upd), 412);
	assert_int_equal(put_spec(NULL, id, v, upd), 401);
	assert_int_equal(put_spec(R.viewer, id, v, upd), 403);
	assert_int_equal(put_spec(R.other, id, v, upd), 404);
	{
		char *bad = spec_body("RayService", "serve-renamed", NULL, 1, 4);

		assert_int_equal(put_spec(R.oper, id, v, bad), 422);
		harness_expect_problem(NULL, 422, "job.field_immutable", "/name");
		free(bad);
	}
	assert_int_equal(harness_job_event_count(id, "spec_update_requested", NULL), 0);

	/* the upgrade */
	assert_int_equal(put_spec(R.oper, id, v, upd), 202);
	assert_string_equal(harness_js(harness_r.json, "spec.image"),
	    "rayproject/ray:2.52.0-gpu-new");
	assert_int_equal(harness_sql_long("SELECT count(*) FROM audit_log WHERE action ="
	    " 'job.update_spec' AND resource_id = '%s'", id), 1);
	assert_true(json_is_true(harness_jp(harness_r.json, "spec_update.upgrade")));
	assert_int_equal(json_integer_value(json_object_get(harness_jp(harness_r.json,
	    "spec_update.extra.accelerators"), H100)), 1);
	assert_string_equal(harness_js(harness_r.json, "spec_update.state"), "pending");
	/* a second update while this one runs */
	v = harness_ji(harness_r.json, "version");
	assert_int_equal(put_spec(R.oper, id, v, upd), 409);
	harness_job_wait_event(id, "spec_applied", NULL, 20);
	harness_job_wait_event(id, "upgrade_in_progress", NULL, 20);
	/* the old cluster's footprint is held while both run */
	assert_int_equal(harness_sql_long("SELECT count(*) FROM jobs WHERE id = '%s' AND"
	    " spec_update->>'upgrade' = 'true' AND spec_update->'old_spec'->>'image' IS NULL", id),
	    1);
	harness_job_wait_event(id, "upgrade_complete", NULL, 30);
	j = harness_job_wait(R.admin, id, "running", 0, 10);
	json_decref(j);
	end = harness_now_s() + 20;
	while (!pods_run(ns, "rayproject/ray:2.52.0-gpu-new", &n) && harness_now_s() < end)
		usleep(200 * 1000);
	if (!pods_run(ns, "rayproject/ray:2.52.0-gpu-new", &n))
		fail_msg("pods in %s do not all run the new image (%d pods)", ns, n);
	assert_int_equal(harness_sql_long("SELECT count(*) FROM jobs WHERE id = '%s' AND"
	    " spec_update->>'phase' = 'done'", id), 1);
	/* the job's events, as a user reads them, tell the upgrade in order */
	{
		static const char *const want[] = { "spec_update_requested", "spec_applied",
			"upgrade_in_progress", "upgrade_complete" };
		json_t *items = json_object_get(harness_get_ok(R.viewer, "/v1/jobs/%s/events"
		    "?limit=500", id), "items"), *x;
		size_t i, w = 0;

		json_array_foreach(items, i, x)
			if (w < 4 && strcmp(harness_js(x, "type"), want[w]) == 0)
				w++;
		if (w != 4)
			fail_msg("events lack %s in order: %s", want[w], harness_r.body);
	}
	free(body);
	free(upd);
	free(id);
}

/* issue 26: an upgrade whose new Ray cluster never becomes ready (cloudsim's upgrade_hold
 * fault) is rolled back past its deadline — the environment's default here — to the
 * serving cluster: the member's RayService runs the old spec with no pending cluster, the
 * job's spec is the old one, the second footprint's quota is released (the queue of two
 * GPUs then admits a job of one) and the events say so. */
static void
test_rayservice_upgrade_deadline(void **state)
{
	char *body = spec_body("RayService", "stuck", NULL, 1, 4), *id, *upd, ns[128], name[128];
	char qb[256], *fill;
	json_t *j, *o;
	long v;
	double end;

	(void)state;
	harness_queue(R.admin, ENV, "two", "low", H100, 2);
	/* the environment's default deadline (migration 0022), read back through the API */
	j = harness_get_ok(R.admin, "/v1/environments/" ENV);
	assert_int_equal(harness_ji(j, "upgrade_deadline_seconds"), 3600);
	snprintf(qb, sizeof(qb), "{\"name\":\"" ENV "\",\"upgrade_deadline_seconds\":90}");
	assert_int_equal(harness_call("PUT", R.admin, qb, "/v1/environments/" ENV), 200);
	assert_int_equal(harness_ji(harness_r.json, "upgrade_deadline_seconds"), 90);
	assert_int_equal(harness_call("PUT", R.admin, "{\"name\":\"" ENV "\","
	    "\"upgrade_deadline_seconds\":5}", "/v1/environments/" ENV), 400);
	harness_expect_problem(NULL, 400, "env.bad_upgrade_deadline", "/upgrade_deadline_seconds");
	assert_int_equal(harness_call("PUT", R.viewer, qb, "/v1/environments/" ENV), 403);

	{	/* the same service in queue "two" */
		char *b0 = body, *q = strstr(b0, "\"queue\":\"ml\"");

		body = malloc(strlen(b0) + 8);
		snprintf(body, strlen(b0) + 8, "%.*s\"queue\":\"two\"%s", (int)(q - b0), b0, q + 12);
		free(b0);
	}
	upd = malloc(strlen(body) + 64);
	snprintf(upd, strlen(body) + 64, "%.*s\"image\":\"rayproject/ray:2.52.0-gpu-stuck\",%s",
	    (int)(strstr(body, "\"ray_version\"") - body), body, strstr(body, "\"ray_version\""));
	id = strdup(harness_js(harness_post_created(R.oper, "/v1/jobs", body), "id"));
	j = harness_job_wait(R.admin, id, "running", 0, 40);
	v = harness_ji(j, "version");
	snprintf(name, sizeof(name), "%s", harness_js(j, "object_name"));
	json_decref(j);
	snprintf(ns, sizeof(ns), "%s", harness_js(harness_get_ok(R.admin, "/v1/jobs/%s/manifest",
	    id), "metadata.namespace"));

	/* the new cluster will never be ready */
	assert_int_equal(harness_sim(&cs, "POST", "/_sim/faults", "{\"cluster\":\"" CLUSTER "\","
	    "\"upgrade_hold\":true}", NULL), 201);
	assert_int_equal(put_spec(R.oper, id, v, upd), 202);
	harness_job_wait_event(id, "upgrade_in_progress", NULL, 20);
	assert_int_equal(harness_sql_long("SELECT (spec_update->>'deadline_s')::int FROM jobs"
	    " WHERE id = '%s'", id), 90);
	/* both footprints are held: the queue's second GPU is taken, a job of one waits */
	fill = strdup(harness_js(harness_post_created(R.oper, "/v1/jobs", "{\"environment\":\""
	    ENV "\",\"kind\":\"RayJob\",\"queue\":\"two\",\"name\":\"fill\","
	    "\"ray_version\":\"2.52.0\",\"entrypoint\":\"python t.py\",\"head\":{\"cpu\":"
	    "\"1\",\"memory\":\"2Gi\"},\"worker_groups\":[{\"name\":\"gpu\",\"replicas\":1,"
	    "\"cpu\":\"4\",\"memory\":\"64Gi\",\"accelerator\":{\"flavor\":\"" H100 "\","
	    "\"count\":1}}]}"), "id"));
	end = harness_now_s() + 3;
	while (harness_now_s() < end)
		usleep(200 * 1000);
	assert_int_equal(harness_sql_long("SELECT count(*) FROM jobs WHERE id = '%s' AND state ="
	    " 'pending'", fill), 1);
	assert_int_equal(harness_sql_long("SELECT count(*) FROM jobs WHERE id = '%s' AND"
	    " spec_update->>'phase' = 'upgrading'", id), 1);
	/* the deadline passes (moved, rather than waited for) */
	harness_sql("UPDATE jobs SET spec_update = jsonb_set(spec_update, '{deadline_at}',"
	    " to_jsonb(now() - interval '1 second')) WHERE id = '%s'", id);
	harness_job_wait_event(id, "upgrade_rolled_back", NULL, 30);
	j = harness_get_ok(R.viewer, "/v1/jobs/%s", id);
	assert_string_equal(harness_js(j, "spec_update.state"), "rolled_back");
	assert_null(json_object_get(json_object_get(j, "spec"), "image"));
	assert_string_equal(harness_js(j, "state"), "running");
	/* the member: the old spec, no pending cluster, the same serving cluster */
	o = member_get(ns, "rayservices", name);
	assert_non_null(o);
	{
		char *sp = json_dumps(json_object_get(o, "spec"), JSON_COMPACT);

		assert_non_null(sp);
		assert_null(strstr(sp, "gpu-stuck"));
		free(sp);
	}
	end = harness_now_s() + 20;
	while (json_object_get(harness_jp(o, "status"), "pendingServiceStatus") != NULL &&
	    harness_now_s() < end) {
		json_decref(o);
		usleep(200 * 1000);
		o = member_get(ns, "rayservices", name);
	}
	assert_null(json_object_get(harness_jp(o, "status"), "pendingServiceStatus"));
	json_decref(o);
	/* the released quota admits the waiting job */
	json_decref(harness_job_wait(R.admin, fill, "running", 0, 40));
	{
		json_t *items = json_object_get(harness_get_ok(R.viewer, "/v1/jobs/%s/events"
		    "?limit=500", id), "items"), *x;
		size_t i;
		bool said = false;

		json_array_foreach(items, i, x)
			said |= strcmp(harness_js(x, "type"), "upgrade_rolled_back") == 0 &&
			    strstr(harness_js(x, "message"), "deadline of 90s passed") != NULL &&
			    strstr(harness_js(x, "message"), "quota released") != NULL;
		if (!said)
			fail_msg("no rollback event saying why: %s", harness_r.body);
	}
	/* the job's own deadline wins over the environment's */
	{
		char *own = malloc(strlen(upd) + 64);

		snprintf(own, strlen(upd) + 64, "%.*s\"upgrade_deadline_seconds\":120,%s",
		    (int)(strstr(upd, "\"ray_version\"") - upd), upd, strstr(upd, "\"ray_version\""));
		long st = harness_call("POST", R.admin, "{}", "/v1/jobs/%s/cancel", fill);

		assert_true(st == 200 || st == 202);
		json_decref(harness_job_wait(R.admin, fill, "cancelled", 0, 30));
		j = harness_get_ok(R.admin, "/v1/jobs/%s", id);
		assert_int_equal(put_spec(R.oper, id, harness_ji(j, "version"), own), 202);
		assert_int_equal(harness_sql_long("SELECT (spec_update->>'deadline_s')::int FROM"
		    " jobs WHERE id = '%s'", id), 120);
		free(own);
	}
	harness_sim(&cs, "DELETE", "/_sim/faults", NULL, NULL);
	harness_call("PUT", R.admin, "{\"name\":\"" ENV "\",\"upgrade_deadline_seconds\":3600}",
	    "/v1/environments/" ENV);
	harness_call("POST", R.admin, "{}", "/v1/jobs/%s/cancel", fill);
	harness_call("POST", R.admin, "{}", "/v1/jobs/%s/cancel", id);
	free(fill);
	free(body);
	free(upd);
	free(id);
}

static void
test_raycluster_resize(void **state)
{
	char *body = spec_body("RayCluster", "rc", NULL, 1, 4), *id, *upd;
	json_t *j, *m;
	long v;
	double end;

	(void)state;
	id = strdup(harness_js(harness_post_created(R.oper, "/v1/jobs", body), "id"));
	j = harness_job_wait(R.admin, id, "running", 0, 40);
	v = harness_ji(j, "version");
	json_decref(j);
	/* a RayCluster takes sizes only */
	upd = spec_body("RayCluster", "rc", NULL, 2, 6);
	assert_int_equal(put_spec(R.oper, id, v, upd), 422);
	harness_expect_problem(NULL, 422, "job.field_immutable", "/worker_groups/0/cpu");
	free(upd);
	upd = spec_body("RayCluster", "rc", "rayproject/ray:2.52.0-gpu", 1, 4);
	assert_int_equal(put_spec(R.oper, id, v, upd), 422);
	harness_expect_problem(NULL, 422, "job.field_immutable", "/image");
	free(upd);
	/* unchanged: 200, nothing recorded */
	assert_int_equal(put_spec(R.oper, id, v, body), 200);
	assert_int_equal(harness_job_event_count(id, "spec_update_requested", NULL), 0);
	/* a grow beyond the cluster's free GPUs: refused, naming the capacity missing (to its
	 * operator only: a viewer, no token and another environment's admin learn nothing) */
	upd = spec_body("RayCluster", "rc", NULL, 30, 4);
	assert_int_equal(put_spec(R.viewer, id, v, upd), 403);
	assert_int_equal(put_spec(NULL, id, v, upd), 401);
	assert_int_equal(put_spec(R.other, id, v, upd), 404);
	assert_null(strstr(harness_r.body, "free"));
	assert_int_equal(put_spec(R.oper, id, v, upd), 409);
	harness_expect_problem(NULL, 409, "job.update_no_room", NULL);
	if (strstr(harness_js(harness_r.json, "detail"), "Cluster " CLUSTER " has ") == NULL ||
	    strstr(harness_js(harness_r.json, "detail"), " free " H100 " accelerators (nodes and "
	    "growth), the update needs 29 (") == NULL)
		fail_msg("detail does not name the capacity: %s", harness_r.body);
	assert_int_equal(harness_job_event_count(id, "spec_update_requested", NULL), 0);
	free(upd);
	upd = spec_body("RayCluster", "rc", NULL, 2, 4);
	assert_int_equal(put_spec(R.oper, id, v, upd), 202);
	/* the added worker is in the placement and in explain, and the update in the job */
	j = harness_get_ok(R.viewer, "/v1/jobs/%s", id);
	assert_int_equal(harness_ji(j, "spec_update.generation"), 1);
	assert_false(json_is_true(harness_jp(j, "spec_update.upgrade")));
	assert_int_equal(json_integer_value(json_object_get(harness_jp(j,
	    "spec_update.extra.accelerators"), H100)), 1);
	{
		json_t *x;
		size_t i;
		long pods = 0, added = 0;

		json_array_foreach(harness_jp(j, "placement.allocs"), i, x)
			if (harness_ji(x, "group") == 1)
				pods += harness_ji(x, "pods");
		assert_int_equal(pods, 2);
		json_array_foreach(harness_jp(harness_get_ok(R.viewer, "/v1/jobs/%s/placement", id),
		    "decision.allocations"), i, x)
			if (harness_ji(x, "spec_update") == 1 && harness_ji(x, "group") == 1)
				added += harness_ji(x, "pods");
		if (added != 1)
			fail_msg("explain does not show the added worker: %s", harness_r.body);
	}
	harness_job_wait_event(id, "spec_applied", NULL, 20);
	end = harness_now_s() + 10;
	for (;;) {
		m = harness_get_ok(R.admin, "/v1/jobs/%s/manifest", id);
		if (harness_ji(m, "spec.workerGroupSpecs.0.replicas") == 2)
			break;
		if (harness_now_s() > end)
			fail_msg("manifest not resized: %s", harness_r.body);
		usleep(200 * 1000);
	}
	assert_int_equal(harness_sql_long("SELECT count(*) FROM jobs WHERE id = '%s' AND"
	    " spec_update->>'phase' = 'done' AND spec_update->>'upgrade' = 'false'", id), 1);
	j = harness_get_ok(R.admin, "/v1/jobs/%s", id);
	assert_string_equal(harness_js(j, "spec_update.state"), "done");
	assert_true(harness_js(j, "spec_update.finished_at")[0] != '\0');
	free(upd);
	free(body);
	free(id);
}

/* The database goes away between the updater's apply and its record (a trigger fails the
 * first record of the update; the lease is then cut short, as a restarted replica's would
 * run out): the retry finds the update's generation on the live object and does not apply
 * it again — the object gets its dispatch and one update (before: three applies, one
 * spec_applied event to account for them). */
static void
test_update_record_lost(void **state)
{
	char *body = spec_body("RayCluster", "rl", NULL, 1, 4), *upd, *id, key[400];
	json_t *j, *st;
	long v;
	double end;

	(void)state;
	id = harness_keep(strdup(harness_js(harness_post_created(R.oper, "/v1/jobs", body),
	    "id")));
	j = harness_job_wait(R.admin, id, "running", 0, 40);
	v = harness_ji(j, "version");
	snprintf(key, sizeof(key), CLUSTER "/%s/rayclusters/%s", harness_js(harness_get_ok(
	    R.admin, "/v1/jobs/%s/manifest", id), "metadata.namespace"), harness_js(j,
	    "object_name"));
	json_decref(j);
	harness_sql("CREATE SEQUENCE upd_lost; CREATE FUNCTION upd_lost() RETURNS trigger"
	    " LANGUAGE plpgsql AS $f$ BEGIN IF NEW.id = '%s' AND OLD.spec_update->>'phase' ="
	    " 'pending' AND NEW.spec_update->>'phase' = 'done' AND nextval('upd_lost') = 1 THEN"
	    " RAISE EXCEPTION 'injected: the database went away'; END IF; RETURN NEW; END $f$;"
	    " CREATE TRIGGER upd_lost BEFORE UPDATE ON jobs FOR EACH ROW EXECUTE FUNCTION"
	    " upd_lost()", id);
	upd = spec_body("RayCluster", "rl", NULL, 2, 4);
	assert_int_equal(put_spec(R.oper, id, v, upd), 202);
	end = harness_now_s() + 40;
	while (harness_sql_long("SELECT count(*) FROM jobs WHERE id = '%s' AND"
	    " spec_update->>'phase' = 'done'", id) == 0) {
		if (harness_now_s() > end)
			fail_msg("the update did not finish (fleetd log %s)", harness_log());
		/* the failed record left the lease: it runs out at once */
		harness_sql("UPDATE jobs SET spec_update = spec_update || jsonb_build_object("
		    "'next_at', now()) WHERE id = '%s' AND (SELECT is_called FROM upd_lost)", id);
		usleep(200 * 1000);
	}
	assert_int_equal(harness_sql_long("SELECT count(*) FROM upd_lost WHERE is_called"), 1);
	harness_sql("DROP TRIGGER upd_lost ON jobs; DROP FUNCTION upd_lost()");
	st = harness_sim_get(&cs, "/_sim/state");
	if (json_integer_value(json_object_get(json_object_get(st, "applies"), key)) != 2)
		fail_msg("%s applied %lld times, want 2 (dispatch, the update once)", key,
		    (long long)json_integer_value(json_object_get(json_object_get(st, "applies"),
		    key)));
	json_decref(st);
	assert_int_equal(harness_sql_long("SELECT count(*) FROM job_events WHERE job_id = '%s'"
	    " AND type = 'spec_applied'", id), 1);
	assert_int_equal(harness_call("POST", R.oper, NULL, "/v1/jobs/%s/cancel", id), 200);
	json_decref(harness_job_wait(R.admin, id, "cancelled", 0, 40));
	free(upd);
	free(body);
}

static void
test_rayjob_refused(void **state)
{
	char body[1024], id[40];

	(void)state;
	snprintf(body, sizeof(body), "{\"environment\":\"" ENV "\",\"kind\":\"RayJob\","
	    "\"queue\":\"ml\",\"name\":\"train\",\"ray_version\":\"2.52.0\",\"entrypoint\":"
	    "\"python t.py\",\"head\":{\"cpu\":\"1\",\"memory\":\"2Gi\"},\"worker_groups\":"
	    "[{\"name\":\"gpu\",\"replicas\":1,\"cpu\":\"4\",\"memory\":\"64Gi\","
	    "\"accelerator\":{\"flavor\":\"" H100 "\",\"count\":1}}]}");
	/* the scheduler moves it on meanwhile: If-Match * (its version does not matter) */
	snprintf(id, sizeof(id), "%s", harness_js(harness_post_created(R.oper, "/v1/jobs", body),
	    "id"));
	assert_int_equal(put_spec(R.oper, id, -1, body), 409);
	harness_expect_problem(NULL, 409, "job.update_not_allowed", "/kind");
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_rayservice_stable_endpoint),
		cmocka_unit_test(test_rayservice_upgrade),
		cmocka_unit_test(test_rayservice_upgrade_deadline),
		cmocka_unit_test(test_raycluster_resize),
		cmocka_unit_test(test_update_record_lost),
		cmocka_unit_test(test_rayjob_refused),
	};

	return cmocka_run_group_tests(tests, setup, harness_group_teardown);
}
