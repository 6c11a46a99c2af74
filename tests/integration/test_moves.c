/* test_moves: moves and drains end to end against cloudsim — a fleet of two GPU regions (and
 * a full one) registered through the API, a checkpointed RayJob moved across regions, dry
 * runs and refusals that change nothing, a RayService that stays ready, drained clusters
 * (done, stuck then cancelled, failed with the reason), cancels and vanished sources. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "tests/harness/harness.h"

#define ENV		"mv"
#define H100		"nvidia-h100-80gb"
#define TIME_SCALE	"4"	/* pods start in 2 s (longer than a mover step), RayJobs run 1000 s */
#define NDRAIN		12

/* Two HyperPod regions with room, a GKE region that is full (every GPU busy), and a
 * cluster of another environment. */
static const char fleet_clusters[] =
    "[{\"name\":\"mv-hp-usw2\",\"provider\":\"hyperpod\",\"environment\":\"mv\","
    "  \"region\":\"us-west-2\",\"account\":\"222222222222\",\"pools\":["
    "  {\"name\":\"controller\",\"machine_type\":\"ml.m5.4xlarge\",\"nodes\":3,\"max\":3},"
    "  {\"name\":\"p5\",\"machine_type\":\"ml.p5.48xlarge\",\"nodes\":3,\"max\":3,"
    "   \"nodes_per_rack\":2,\"price_per_hour\":98.32}]},"
    " {\"name\":\"mv-hp-use1\",\"provider\":\"hyperpod\",\"environment\":\"mv\","
    "  \"region\":\"us-east-1\",\"account\":\"222222222222\",\"pools\":["
    "  {\"name\":\"controller\",\"machine_type\":\"ml.m5.4xlarge\",\"nodes\":3,\"max\":3},"
    "  {\"name\":\"p5\",\"machine_type\":\"ml.p5.48xlarge\",\"nodes\":4,\"max\":4,"
    "   \"nodes_per_rack\":2,\"price_per_hour\":113.07}]},"
    " {\"name\":\"mv-gke-usc1\",\"provider\":\"gke\",\"environment\":\"mv\","
    "  \"region\":\"us-central1\",\"project\":\"fleet-test\",\"pools\":["
    "  {\"name\":\"system\",\"machine_type\":\"e2-standard-8\",\"nodes\":1},"
    "  {\"name\":\"h100\",\"machine_type\":\"a3-highgpu-8g\",\"nodes\":2,\"max\":2,"
    "   \"price_per_hour\":88.49,\"busy\":[8,8]}]},"
    " {\"name\":\"other-hp-usw2\",\"provider\":\"hyperpod\",\"environment\":\"other\","
    "  \"region\":\"us-west-2\",\"account\":\"222222222222\",\"pools\":["
    "  {\"name\":\"controller\",\"machine_type\":\"ml.m5.4xlarge\",\"nodes\":1},"
    "  {\"name\":\"p5\",\"machine_type\":\"ml.p5.48xlarge\",\"nodes\":1,"
    "   \"price_per_hour\":98.32}]}]";

enum { USW2, USE1, USC1, OTHER, NCL };
static const char *const cl_names[NCL + 1] = { "mv-hp-usw2", "mv-hp-use1", "mv-gke-usc1",
	"other-hp-usw2" };
static char cl_id[NCL][40], cloud_id[NCL][40];

static struct fleetd_proc fd;
static struct harness_cs cs;
static char dburl[512];
static char *admin, *oper, *viewer;
static char *train_id, *svc_id, *f0_id, *d0_id;	/* the jobs the tests hand on */

/* Ray objects of cluster cl in cloudsim (/_sim/objects, as written); new reference. */
static json_t *
sim_objects(int cl, const char *name)
{
	char path[256];
	json_t *all, *out;

	snprintf(path, sizeof(path), "/_sim/objects?cluster=%s%s%s", cl_names[cl],
	    name ? "&name=" : "", name ? name : "");
	all = harness_sim_get(&cs, path);
	out = json_incref(json_object_get(all, "objects"));
	json_decref(all);
	return out;
}

/* GET path (formatted with id) as admin, which must answer 200; new reference. */
static json_t *
get_ok(const char *fmt, const char *id)
{
	char path[256];

	snprintf(path, sizeof(path), fmt, id);
	return json_incref(harness_get_ok(admin, "%s", path));
}

/* The test fleet's identities and settings with this test's clusters. */
static json_t *
fleet(void)
{
	json_error_t je;
	json_t *f = harness_fleet_json();

	json_object_set_new(f, "sim", json_pack("{s:i, s:i, s:i, s:i, s:i, s:i}", "page_size", 50,
	    "pod_start_s", 8, "job_run_s", 4000, "autoscale_delay_s", 10, "token_ttl_s", 3600,
	    "preempt_notice_s", 5));
	json_object_set_new(f, "clusters", json_loads(fleet_clusters, 0, &je));
	if (!json_is_array(json_object_get(f, "clusters")))
		fail_msg("fleet_clusters: %s", je.text);
	return f;
}

static int
setup(void **state)
{
	json_t *f = fleet();

	(void)state;
	harness_cs_start_json(&cs, f, TIME_SCALE);
	json_decref(f);
	assert_int_equal(json_array_size(cs.clusters), NCL);
	harness_cs_env_add(&cs, "FLEETD_POLL_INTERVAL_MS=1000");
	harness_cs_env_add(&cs, "FLEETD_SCHEDULER_INTERVAL_MS=300");
	harness_db_create("moves", dburl, sizeof(dburl));
	harness_fleetd_start(&fd, dburl, (const char *const *)cs.env);
	admin = harness_token(dburl, "admin", "*");
	oper = harness_token(dburl, "operator", ENV);
	viewer = harness_token(dburl, "viewer", ENV);
	harness_post_created(admin, "/v1/environments", "{\"name\":\"" ENV "\"}");
	harness_post_created(admin, "/v1/environments", "{\"name\":\"other\"}");
	for (int k = 0; k < NCL; k++)
		harness_register(&cs, admin, cl_names[k], cloud_id[k], cl_id[k]);
	harness_post_created(admin, "/v1/priority-classes", "{\"name\":\"low\",\"value\":10}");
	harness_post_created(admin, "/v1/priority-classes", "{\"name\":\"default\","
	    "\"value\":100}");
	harness_post_created(admin, "/v1/priority-classes", "{\"name\":\"high\","
	    "\"value\":1000,\"preempt\":true}");
	harness_post_created(admin, "/v1/queues", "{\"name\":\"ml\",\"environment\":\"" ENV
	    "\",\"cohort\":\"ml\",\"nominal_quota\":{\"" H100 "\":64},"
	    "\"default_priority_class\":\"default\"}");
	harness_wait_capacity(cl_names, 60);
	return 0;
}

static int
teardown(void **state)
{
	(void)state;
	harness_teardown(&fd, dburl, &cs);
	free(admin);
	free(oper);
	free(viewer);
	free(train_id);
	free(svc_id);
	free(f0_id);
	free(d0_id);
	return 0;
}

/* ---- jobs */

static void
cordon(int k, bool on)
{
	if (harness_call("POST", oper, NULL, "/v1/clusters/%s/%s", cl_id[k], on ? "cordon" :
	    "uncordon") != 200)
		fail_msg("%s %s: %ld %s", on ? "cordon" : "uncordon", cl_names[k],
		    harness_r.status, harness_r.body);
	assert_true(json_is_true(json_object_get(harness_r.json, "cordoned")) == on);
}

/* Submits a job of kind with one worker of gpus H100s; grace >= 0 adds a checkpoint. */
static char *
submit(const char *kind, const char *name, int gpus, const char *pclass, int grace)
{
	char body[2048], ckpt[160] = "";

	if (grace >= 0)
		snprintf(ckpt, sizeof(ckpt), ",\"checkpoint\":{\"uri\":\"s3://ckpt/%s\","
		    "\"grace_seconds\":%d}", name, grace);
	snprintf(body, sizeof(body), "{\"environment\":\"" ENV "\",\"kind\":\"%s\",\"queue\":"
	    "\"ml\",\"name\":\"%s\",\"priority_class\":\"%s\",\"ray_version\":\"2.52.0\",%s"
	    "\"head\":{\"cpu\":\"1\",\"memory\":\"2Gi\"},\"worker_groups\":[{\"name\":\"gpu\","
	    "\"replicas\":1,\"cpu\":\"8\",\"memory\":\"64Gi\",\"accelerator\":{\"flavor\":\""
	    H100 "\",\"count\":%d}}]%s}", kind, name, pclass, strcmp(kind, "RayJob") == 0 ?
	    "\"entrypoint\":\"python train.py\"," : strcmp(kind, "RayService") == 0 ?
	    "\"serve_config\":{\"applications\":[{\"name\":\"app\",\"import_path\":"
	    "\"serve:app\"}]}," : "", gpus, ckpt);
	if (harness_call("POST", oper, body, "/v1/jobs") != 201)
		fail_msg("submit %s: %ld %s", body, harness_r.status, harness_r.body);
	return strdup(harness_js(harness_r.json, "id"));
}

static json_t *
job(const char *id)
{
	return get_ok("/v1/jobs/%s", id);
}

/* The job's events, oldest first; new reference. */
static json_t *
events(const char *id)
{
	json_t *page = get_ok("/v1/jobs/%s/events?limit=500", id);
	json_t *items = json_incref(json_object_get(page, "items"));

	json_decref(page);
	return items;
}

static void
print_events(const char *id)
{
	json_t *ev = events(id), *x;
	size_t i;

	json_array_foreach(ev, i, x)
		print_message("  %s %s->%s a%lld %s\n", harness_js(x, "type"), harness_js(x,
		    "from_state"),
		    harness_js(x, "to_state"), harness_ji(x, "attempt"), harness_js(x, "message"));
	json_decref(ev);
}

/* Waits until the job is in state (at attempt when > 0); returns it. */
static json_t *
wait_job(const char *id, const char *state, int attempt, double timeout)
{
	double end = harness_now_s() + timeout;
	json_t *j = NULL;

	while (harness_now_s() < end) {
		json_decref(j);
		j = job(id);
		if (strcmp(harness_js(j, "state"), state) == 0 && (attempt == 0 ||
		    harness_ji(j, "attempt") == attempt))
			return j;
		usleep(250 * 1000);
	}
	print_events(id);
	fail_msg("job %s: want %s (attempt %d), have %s attempt %lld (%s); fleetd log %s", id,
	    state, attempt, harness_js(j, "state"), harness_ji(j, "attempt"), harness_js(j,
	    "reason"), fd.log);
	return NULL;
}

static long
audit_count(const char *id, const char *action)
{
	json_t *page = get_ok("/v1/audit?resource_id=%s&limit=200", id), *x;
	long n = 0;
	size_t i;

	json_array_foreach(json_object_get(page, "items"), i, x)
		n += strcmp(harness_js(x, "action"), action) == 0;
	json_decref(page);
	return n;
}

/* What a refused or dry move must leave alone: the job's row, its history, the audit log
 * and every object cloudsim stores (apply counts survive deletes). */
static json_t *
fingerprint(const char *id)
{
	json_t *j = job(id), *ev = events(id), *st = harness_sim_get(&cs, "/_sim/state"),
	    *objs = json_array();
	json_t *c, *o, *out;
	size_t i, k;

	json_array_foreach(json_object_get(st, "clusters"), i, c)
		json_array_foreach(json_object_get(c, "objects"), k, o)
			json_array_append_new(objs, json_pack("[s, s, I]", harness_js(c, "name"),
			    harness_js(o, "name"), (json_int_t)harness_ji(o, "resourceVersion")));
	out = json_pack("{s:O, s:O, s:O, s:O, s:O, s:O, s:I, s:I, s:O, s:o}", "state",
	    harness_jp(j, "state"), "version", harness_jp(j, "version"), "cluster_id",
	    harness_jp(j, "cluster_id"),
	    "attempt", harness_jp(j, "attempt"), "placement", harness_jp(j, "placement"),
	    "object_name",
	    harness_jp(j, "object_name"), "events", (json_int_t)json_array_size(ev), "audit",
	    (json_int_t)audit_count(id, "job.move"), "applies", harness_jp(st, "applies"),
	    "objects",
	    objs);
	json_decref(j);
	json_decref(ev);
	json_decref(st);
	return out;
}

static void
assert_unchanged(json_t *before, const char *id, const char *what)
{
	json_t *after = fingerprint(id);

	if (!json_equal(before, after)) {
		char *a = json_dumps(before, JSON_COMPACT), *b = json_dumps(after, JSON_COMPACT);

		fail_msg("%s changed something:\nbefore %s\nafter  %s", what, a, b);
	}
	json_decref(after);
}

/* Moves id to target (JSON object text) as the operator; returns the status. */
static long
move(const char *id, const char *target, const char *extra)
{
	char body[512];

	snprintf(body, sizeof(body), "{\"target\":%s,\"reason\":\"on-call test\"%s%s}", target,
	    extra ? "," : "", extra ? extra : "");
	return harness_call("POST", oper, body, "/v1/jobs/%s/move", id);
}

/* ---- the tests */

/* A running RayJob with a checkpoint moves from us-west-2 to us-east-1: the source gets
 * the checkpoint signal, is suspended and deleted, the target runs attempt 2 with the
 * checkpoint URI; events and the audit log tell the story. */
static void
test_move_rayjob(void **state)
{
	json_t *j, *ev, *x, *objs, *st;
	char src_name[128], enqueued[64];
	const char *order[] = { "checkpoint requested at the source", "stopped at the source",
		"applied at the target", "moved to the target" };
	size_t i, next = 0;
	bool to_moving = false, running2 = false;
	double t0;

	(void)state;
	cordon(USE1, true);	/* start it in us-west-2 */
	train_id = submit("RayJob", "train", 8, "default", 3);
	j = wait_job(train_id, "running", 1, 60);
	assert_string_equal(harness_js(j, "cluster_id"), cl_id[USW2]);
	snprintf(src_name, sizeof(src_name), "%s", harness_js(j, "object_name"));
	snprintf(enqueued, sizeof(enqueued), "%s", harness_js(j, "enqueued_at"));
	json_decref(j);
	cordon(USE1, false);

	t0 = harness_now_s();
	if (move(train_id, "{\"region\":\"us-east-1\"}", NULL) != 202)
		fail_msg("move: %ld %s", harness_r.status, harness_r.body);
	assert_string_equal(harness_js(harness_r.json, "job.state"), "moving");
	assert_string_equal(harness_js(harness_r.json, "plan.to.cluster"), cl_id[USE1]);
	assert_string_equal(harness_js(harness_r.json, "plan.from.cluster"), cl_id[USW2]);
	/* a second move while this one runs (the grace period is 3 s) */
	assert_int_equal(move(train_id, "{\"region\":\"us-west-2\"}", NULL), 409);
	assert_string_equal(harness_js(harness_r.json, "code"), "job.moving");
	if (strstr(harness_js(harness_r.json, "detail"), "mv-hp-use1") == NULL ||
	    strstr(harness_js(harness_r.json, "detail"), "phase") == NULL)
		fail_msg("the 409 does not say where the move is: %s", harness_r.body);

	j = wait_job(train_id, "running", 2, 60);
	assert_true(harness_now_s() - t0 >= 3.0);	/* the source had its grace period */
	assert_string_equal(harness_js(j, "enqueued_at"),
	    enqueued);	/* its place in the queue */
	assert_string_equal(harness_js(j, "cluster_id"), cl_id[USE1]);
	assert_string_equal(harness_js(j, "region"), "us-east-1");
	assert_string_equal(harness_js(j, "id"), train_id);

	/* cloudsim: the target object carries the checkpoint URI; the source is gone after
	 * the checkpoint signal and the suspend (three applies of the source object) */
	objs = sim_objects(USE1, harness_js(j, "object_name"));
	assert_int_equal(json_array_size(objs), 1);
	x = json_object_get(harness_jp(objs, "0.object.metadata.annotations"),
	    "fleet.io/checkpoint-uri");
	assert_string_equal(json_string_value(x), "s3://ckpt/train");
	assert_non_null(strstr(harness_js(objs, "0.name"), "-a2"));
	json_decref(objs);
	objs = sim_objects(USW2, NULL);
	assert_int_equal(json_array_size(objs), 0);
	json_decref(objs);
	st = harness_sim_get(&cs, "/_sim/state");
	{
		const char *k;
		json_t *v;
		long long src_applies = -1;

		json_object_foreach(json_object_get(st, "applies"), k, v)
			if (strncmp(k, cl_names[USW2], strlen(cl_names[USW2])) == 0 &&
			    strstr(k, src_name) != NULL)
				src_applies = json_integer_value(v);
		if (src_applies < 3)
			fail_msg("source %s applied %lld times, want >= 3 (run, checkpoint, suspend)",
			    src_name, src_applies);
	}
	json_decref(st);
	json_decref(j);

	/* events: running -> moving, the phases in order, moving -> dispatched, running */
	ev = events(train_id);
	json_array_foreach(ev, i, x) {
		if (strcmp(harness_js(x, "from_state"), "running") == 0 &&
		    strcmp(harness_js(x, "to_state"), "moving") == 0)
			to_moving = true;
		if (next < 4 && strstr(harness_js(x, "message"), order[next]) != NULL && to_moving)
			next++;
		if (next == 4 && strcmp(harness_js(x, "to_state"), "running") == 0 &&
		    harness_ji(x, "attempt") == 2)
			running2 = true;
	}
	json_decref(ev);
	if (!to_moving || next != 4 || !running2) {
		print_events(train_id);
		fail_msg("events do not tell the move (moving %d, phases %zu/4, running %d)",
		    to_moving, next, running2);
	}
	/* the audit log has the move, by the operator, with the job before and after */
	assert_int_equal(audit_count(train_id, "job.move"), 1);
	j = get_ok("/v1/audit?resource_id=%s&resource_type=job", train_id);
	json_array_foreach(harness_jp(j, "items"), i, x)
		if (strcmp(harness_js(x, "action"), "job.move") == 0) {
			assert_string_equal(harness_js(x, "actor.name"), "test-operator");
			assert_string_equal(harness_js(x, "before.state"), "running");
			assert_string_equal(harness_js(x, "after.state"), "moving");
		}
	json_decref(j);
}

/* dry_run answers the plan and changes nothing. */
static void
test_dry_run(void **state)
{
	json_t *before = fingerprint(train_id), *plan;
	double diff;

	(void)state;
	if (move(train_id, "{\"region\":\"us-west-2\"}", "\"dry_run\":true") != 200)
		fail_msg("dry run: %ld %s", harness_r.status, harness_r.body);
	plan = json_incref(harness_r.json);
	assert_string_equal(harness_js(plan, "job_id"), train_id);
	assert_string_equal(harness_js(plan, "from.cluster"), cl_id[USE1]);
	assert_string_equal(harness_js(plan, "to.cluster"), cl_id[USW2]);
	diff = json_number_value(harness_jp(plan, "to.price_hour")) -
	    json_number_value(harness_jp(plan, "from.price_hour"));
	assert_true(json_is_number(harness_jp(plan, "price_difference_per_hour")));
	assert_true(fabs(json_number_value(harness_jp(plan,
	    "price_difference_per_hour")) - diff) < 1e-6);
	assert_true(json_is_array(harness_jp(plan, "would_preempt")));
	assert_int_equal(json_array_size(harness_jp(plan, "would_preempt")), 0);
	json_decref(plan);
	assert_unchanged(before, train_id, "a dry run");
	json_decref(before);
}

/* A move to a region whose GPUs are all busy is refused with the reasons per cluster,
 * and nothing changes. */
static void
test_move_refused_full(void **state)
{
	json_t *before = fingerprint(train_id), *x;
	char target[128];
	size_t i;

	(void)state;
	assert_int_equal(move(train_id, "{\"region\":\"us-central1\"}", NULL), 409);
	assert_string_equal(harness_js(harness_r.json, "code"), "move.no_capacity");
	assert_int_equal(json_array_size(harness_jp(harness_r.json, "errors")), 1);
	json_array_foreach(harness_jp(harness_r.json, "errors"), i, x) {
		assert_string_equal(harness_js(x, "cluster"), cl_id[USC1]);
		assert_string_equal(harness_js(x, "region"), "us-central1");
		assert_true(strlen(harness_js(x, "detail")) > 0);
	}
	snprintf(target, sizeof(target), "{\"cluster_id\":\"%s\"}", cl_id[USC1]);
	assert_int_equal(move(train_id, target, NULL), 409);
	assert_string_equal(harness_js(harness_r.json, "code"), "move.no_capacity");
	assert_unchanged(before, train_id, "a refused move");
	json_decref(before);
}

/* RayService objects of the job in cloudsim right now: how many, how many ready, and
 * whether the source cluster still has one. */
static void
service_sample(int *total, int *ready, bool *on_source)
{
	json_t *st = harness_sim_get(&cs, "/_sim/state"), *c, *o;
	size_t i, k;

	*total = *ready = 0;
	*on_source = false;
	json_array_foreach(json_object_get(st, "clusters"), i, c)
		json_array_foreach(json_object_get(c, "objects"), k, o) {
			if (strcmp(harness_js(o, "kind"), "RayService") != 0)
				continue;
			(*total)++;
			*ready += strcmp(harness_js(o, "status.serviceStatus"), "Running") == 0;
			*on_source |= strcmp(harness_js(c, "name"), cl_names[USW2]) == 0;
		}
	json_decref(st);
}

/* A RayService moves without downtime: at every sample of cloudsim during the move at
 * least one copy is ready; both exist for a while; the source goes only at the end. */
static void
test_move_rayservice(void **state)
{
	json_t *j;
	int total, ready, samples = 0, max_total = 0;
	bool on_source, done = false;
	double end;

	(void)state;
	cordon(USE1, true);
	svc_id = submit("RayService", "serve", 4, "high", -1);
	json_decref(wait_job(svc_id, "running", 1, 60));
	cordon(USE1, false);
	service_sample(&total, &ready, &on_source);
	assert_true(total == 1 && ready == 1 && on_source);

	if (move(svc_id, "{\"region\":\"us-east-1\"}", NULL) != 202)
		fail_msg("move: %ld %s", harness_r.status, harness_r.body);
	end = harness_now_s() + 60;
	while (!done && harness_now_s() < end) {
		service_sample(&total, &ready, &on_source);
		samples++;
		if (ready < 1)
			fail_msg("sample %d: %d RayService objects, none ready", samples, total);
		if (total > max_total)
			max_total = total;
		if (!on_source && samples % 4 == 0) {
			j = job(svc_id);
			done = strcmp(harness_js(j, "state"), "running") == 0 &&
			    harness_ji(j, "attempt") == 2;
			json_decref(j);
		}
		usleep(40 * 1000);
	}
	if (!done) {
		print_events(svc_id);
		fail_msg("the RayService did not finish its move in 60 s (%d samples)", samples);
	}
	print_message("rayservice move: %d samples, at most %d copies\n", samples, max_total);
	assert_int_equal(max_total, 2);	/* the target was up before the source went */
	j = job(svc_id);
	assert_string_equal(harness_js(j, "cluster_id"), cl_id[USE1]);
	json_decref(j);
	service_sample(&total, &ready, &on_source);
	assert_true(total == 1 && ready == 1 && !on_source);
}

static double
epoch_of(const char *ts)
{
	struct tm tm = { 0 };
	double sec = 0;

	if (sscanf(ts, "%d-%d-%dT%d:%d:%lf", &tm.tm_year, &tm.tm_mon, &tm.tm_mday, &tm.tm_hour,
	    &tm.tm_min, &sec) != 6)
		fail_msg("not a timestamp: %s", ts);
	tm.tm_year -= 1900;
	tm.tm_mon -= 1;
	return (double)timegm(&tm) + sec;
}

/* Seconds between the checkpoint signal at the source and the stop there (the events). */
static double
grace_taken(const char *id)
{
	json_t *ev = events(id), *x;
	double sig = -1, stop = -1;
	size_t i;

	json_array_foreach(ev, i, x) {
		if (strstr(harness_js(x, "message"), "checkpoint requested at the source") != NULL)
			sig = epoch_of(harness_js(x, "at"));
		if (strstr(harness_js(x, "message"), "stopped at the source") != NULL)
			stop = epoch_of(harness_js(x, "at"));
	}
	json_decref(ev);
	if (sig < 0 || stop < 0) {
		print_events(id);
		fail_msg("job %s: no checkpoint signal or no stop in its events", id);
	}
	return stop - sig;
}

/* Draining a cluster with NDRAIN running jobs of mixed priorities moves them all to the
 * other region; the operation counts up to 100 %; the drained cluster is empty and
 * cordoned; a job the drain is moving refuses a second move naming the operation. */
static void
test_drain_cluster(void **state)
{
	static const char *const pcs[] = { "low", "default", "high" };
	char *ids[NDRAIN], name[32], loc[160], *hdr;
	json_t *op = NULL, *j, *objs;
	long long moved = 0;
	double end;

	(void)state;
	cordon(USE1, true);
	for (int i = 0; i < NDRAIN; i++) {
		snprintf(name, sizeof(name), "d%d", i);
		/* one RayCluster: deleted at the source rather than suspended */
		ids[i] = submit(i == 5 ? "RayCluster" : "RayJob", name, 1, pcs[i % 3],
		    i % 4 == 3 ? 0 : 2);
	}
	for (int i = 0; i < NDRAIN; i++) {
		j = wait_job(ids[i], "running", 1, 60);
		assert_string_equal(harness_js(j, "cluster_id"), cl_id[USW2]);
		json_decref(j);
	}
	cordon(USE1, false);

	if (harness_call("POST", oper, NULL, "/v1/clusters/%s/drain", cl_id[USW2]) != 202)
		fail_msg("drain: %ld %s", harness_r.status, harness_r.body);
	op = json_incref(harness_r.json);
	assert_int_equal(harness_ji(op, "total"), NDRAIN);
	assert_int_equal(harness_ji(op, "moved") + harness_ji(op, "waiting") + harness_ji(op,
	    "failed"), NDRAIN);
	assert_string_equal(harness_js(op, "kind"), "drain");
	assert_string_equal(harness_js(op, "target.cluster_id"), cl_id[USW2]);
	snprintf(loc, sizeof(loc), "/v1/operations/%s", harness_js(op, "id"));
	hdr = harness_header(&harness_r, "Location");
	assert_non_null(hdr);
	assert_string_equal(hdr, loc);
	free(hdr);
	/* every job is being moved (2 s of checkpoint grace): a second move names the drain */
	assert_int_equal(move(ids[0], "{\"region\":\"us-east-1\"}", NULL), 409);
	assert_string_equal(harness_js(harness_r.json, "code"), "job.moving");
	if (strstr(harness_js(harness_r.json, "detail"), harness_js(op, "id")) == NULL)
		fail_msg("the 409 does not name the operation %s: %s", harness_js(op, "id"),
		    harness_r.body);

	end = harness_now_s() + 60;
	while (strcmp(harness_js(op, "state"), "running") == 0 && harness_now_s() < end) {
		usleep(250 * 1000);
		json_decref(op);
		op = get_ok("%s", loc);
		assert_true(harness_ji(op, "moved") >= moved);	/* progress never goes back */
		moved = harness_ji(op, "moved");
		assert_int_equal(harness_ji(op, "total"), NDRAIN);
		assert_int_equal(harness_ji(op, "moved") + harness_ji(op,
		    "waiting") + harness_ji(op, "failed"), NDRAIN);
	}
	if (strcmp(harness_js(op, "state"), "succeeded") != 0 ||
	    harness_ji(op, "moved") != NDRAIN) {
		char *t = json_dumps(op, JSON_COMPACT);

		fail_msg("drain did not move every job: %s; fleetd log %s", t, fd.log);
	}
	assert_int_equal(harness_ji(op, "failed"), 0);
	assert_int_equal(json_array_size(harness_jp(op, "failures")), 0);
	for (int i = 0; i < NDRAIN; i++) {
		double gap = grace_taken(ids[i]);

		j = wait_job(ids[i], "running", 2, 60);
		assert_string_equal(harness_js(j, "cluster_id"), cl_id[USE1]);
		assert_string_equal(harness_js(j, "priority_class"), pcs[i % 3]);
		json_decref(j);
		assert_int_equal(audit_count(ids[i], "job.move"), 1);
		/* the source had its grace period, and no more than it asked for */
		if (i % 4 == 3 ? gap > 10 : gap < 1.5)
			fail_msg("job d%d (grace %d s): stopped %.2f s after the checkpoint signal", i,
			    i % 4 == 3 ? 0 : 2, gap);
	}
	d0_id = ids[0];
	for (int i = 1; i < NDRAIN; i++)
		free(ids[i]);
	objs = sim_objects(USW2, NULL);
	assert_int_equal(json_array_size(objs), 0);
	json_decref(objs);
	j = get_ok("/v1/clusters/%s", cl_id[USW2]);
	assert_true(json_is_true(harness_jp(j, "cordoned")));
	json_decref(j);
	assert_int_equal(audit_count(harness_js(op, "id"), "drain"), 1);
	json_decref(op);
}

/* A drain with nowhere to go waits (nothing changes) until cancelled; once cancelled it
 * retries nothing, even when room appears. */
static void
test_drain_nowhere_cancel(void **state)
{
	json_t *before = fingerprint(train_id), *op;
	char id[40];

	(void)state;
	/* us-west-2 is cordoned by the drain above, us-central1 is full */
	if (harness_call("POST", oper, NULL, "/v1/clusters/%s/drain", cl_id[USE1]) != 202)
		fail_msg("drain: %ld %s", harness_r.status, harness_r.body);
	assert_int_equal(harness_ji(harness_r.json, "total"), NDRAIN + 2);
	assert_int_equal(harness_ji(harness_r.json, "waiting"), NDRAIN + 2);
	assert_int_equal(harness_ji(harness_r.json, "moved"), 0);
	assert_string_equal(harness_js(harness_r.json, "state"), "running");
	snprintf(id, sizeof(id), "%s", harness_js(harness_r.json, "id"));
	assert_unchanged(before, train_id, "a drain that cannot move anything");
	if (harness_call("POST", oper, NULL, "/v1/operations/%s/cancel", id) != 200)
		fail_msg("cancel: %ld %s", harness_r.status, harness_r.body);
	assert_string_equal(harness_js(harness_r.json, "state"), "cancelled");
	assert_int_equal(harness_ji(harness_r.json, "waiting"), 0);	/* nothing left to retry */
	cordon(USW2, false);	/* room again: a live drain would take it within 5 s */
	sleep(6);
	op = get_ok("/v1/operations/%s", id);
	assert_string_equal(harness_js(op, "state"), "cancelled");
	assert_int_equal(harness_ji(op, "moved"), 0);
	json_decref(op);
	assert_unchanged(before, train_id, "a cancelled drain");
	json_decref(before);
	cordon(USE1, false);
}

/* Bad input: nothing changes and the answer says why. */
static void
test_bad_input(void **state)
{
	json_t *before = fingerprint(train_id), *j;
	char target[128];

	(void)state;
	assert_int_equal(move("00000000-0000-4000-8000-000000000000", "{\"region\":\"us-east-1\"}",
	    NULL), 404);
	assert_int_equal(harness_call("POST", viewer, "{\"target\":{\"region\":\"us-west-2\"}}",
	    "/v1/jobs/%s/move", train_id), 403);
	assert_int_equal(move(train_id, "{}", NULL), 400);
	assert_string_equal(harness_js(harness_r.json, "errors.0.pointer"), "/target");
	assert_int_equal(move(train_id, "{\"region\":\"us-west-2\",\"cloud_id\":\"x\"}", NULL),
	    400);
	assert_int_equal(harness_call("POST", oper, "{\"reason\":\"x\"}", "/v1/jobs/%s/move",
	    train_id),
	    400);
	/* an unknown region names the environment's regions */
	assert_int_equal(move(train_id, "{\"region\":\"mars-north-9\"}", NULL), 400);
	assert_string_equal(harness_js(harness_r.json, "code"), "move.unknown_region");
	assert_string_equal(harness_js(harness_r.json, "errors.0.pointer"), "/target/region");
	if (strstr(harness_r.body, "us-west-2") == NULL ||
	    strstr(harness_r.body, "us-east-1") == NULL ||
	    strstr(harness_r.body, "us-central1") == NULL)
		fail_msg("the 400 does not name the valid regions: %s", harness_r.body);
	/* a cordoned target cluster */
	cordon(USW2, true);
	snprintf(target, sizeof(target), "{\"cluster_id\":\"%s\"}", cl_id[USW2]);
	assert_int_equal(move(train_id, target, NULL), 409);
	assert_string_equal(harness_js(harness_r.json, "code"), "cluster.cordoned");
	cordon(USW2, false);
	/* never across environments: by cluster, by cloud */
	snprintf(target, sizeof(target), "{\"cluster_id\":\"%s\"}", cl_id[OTHER]);
	assert_int_equal(move(train_id, target, NULL), 409);
	assert_string_equal(harness_js(harness_r.json, "code"), "move.cross_environment");
	snprintf(target, sizeof(target), "{\"cloud_id\":\"%s\"}", cloud_id[OTHER]);
	assert_int_equal(move(train_id, target, NULL), 409);
	assert_string_equal(harness_js(harness_r.json, "code"), "move.cross_environment");
	assert_unchanged(before, train_id, "refused moves");
	json_decref(before);

	/* a region with nothing in it drains at once: 200, an empty finished operation */
	if (harness_call("POST", oper, NULL, "/v1/regions/" ENV "/eu-west-1/drain") != 200)
		fail_msg("empty drain: %ld %s", harness_r.status, harness_r.body);
	assert_int_equal(harness_ji(harness_r.json, "total"), 0);
	assert_string_equal(harness_js(harness_r.json, "state"), "succeeded");
	assert_int_equal(json_array_size(harness_jp(harness_r.json, "failures")), 0);
	j = get_ok("/v1/operations/%s", harness_js(harness_r.json, "id"));
	assert_string_equal(harness_js(j, "state"), "succeeded");
	assert_int_equal(harness_ji(j, "total"), 0);
	json_decref(j);
	assert_int_equal(harness_call("POST", oper, NULL, "/v1/regions/nope/us-east-1/drain"),
	    404);
	assert_int_equal(harness_call("GET", oper, NULL, "/v1/operations/%s",
	    "00000000-0000-4000-8000-000000000000"), 404);

}

/* Objects named name* on any cluster of cloudsim. */
static int
sim_count_prefix(const char *name)
{
	json_t *all = harness_sim_get(&cs, "/_sim/objects"), *o;
	int n = 0;
	size_t i;

	json_array_foreach(json_object_get(all, "objects"), i, o)
		n += strncmp(harness_js(o, "name"), name, strlen(name)) == 0;
	json_decref(all);
	return n;
}

/* A job cancelled in the middle of its move ends cancelled with no object left at either
 * end; a finished job cannot move. */
static void
test_cancel_during_move(void **state)
{
	double end;

	(void)state;
	assert_int_equal(sim_count_prefix("train-"), 1);
	if (move(train_id, "{\"region\":\"us-west-2\"}", NULL) != 202)
		fail_msg("move: %ld %s", harness_r.status, harness_r.body);
	assert_int_equal(harness_call("POST", oper, NULL, "/v1/jobs/%s/cancel", train_id), 200);
	json_decref(wait_job(train_id, "cancelled", 0, 60));
	end = harness_now_s() + 30;
	while (sim_count_prefix("train-") > 0 && harness_now_s() < end)
		usleep(250 * 1000);
	if (sim_count_prefix("train-") > 0) {
		print_events(train_id);
		fail_msg("a RayJob of the cancelled job is left in cloudsim; fleetd log %s",
		    fd.log);
	}
	assert_int_equal(move(train_id, "{\"region\":\"us-east-1\"}", NULL), 409);
	assert_string_equal(harness_js(harness_r.json, "code"), "job.finished");
}

/* A move the target refuses (every Kubernetes call there answers 422) fails the drain
 * with the reason; the job is not lost: it is queued again and runs once the target heals. */
static void
test_drain_failure_reported(void **state)
{
	char *id, loc[160];
	json_t *op = NULL, *j, *objs;
	double end;

	(void)state;
	cordon(USE1, true);
	id = submit("RayJob", "f0", 1, "low", 0);
	j = wait_job(id, "running", 1, 60);
	assert_string_equal(harness_js(j, "cluster_id"), cl_id[USW2]);
	json_decref(j);
	cordon(USE1, false);
	harness_sim_post(&cs, "/_sim/faults", "{\"service\":\"k8s\",\"cluster\":\"mv-hp-use1\","
	    "\"error_rate\":1,\"error_status\":422}");
	if (harness_call("POST", oper, NULL, "/v1/clusters/%s/drain", cl_id[USW2]) != 202)
		fail_msg("drain: %ld %s", harness_r.status, harness_r.body);
	assert_int_equal(harness_ji(harness_r.json, "total"), 1);
	snprintf(loc, sizeof(loc), "/v1/operations/%s", harness_js(harness_r.json, "id"));
	cordon(USE1, true);	/* reserved already; keeps the requeued job off the faulty cluster */
	end = harness_now_s() + 30;
	do {
		usleep(250 * 1000);
		json_decref(op);
		op = get_ok("%s", loc);
	} while (strcmp(harness_js(op, "state"), "running") == 0 && harness_now_s() < end);
	harness_sim(&cs, "DELETE", "/_sim/faults", NULL, NULL);
	if (strcmp(harness_js(op, "state"), "failed") != 0 || harness_ji(op, "failed") != 1 ||
	    harness_ji(op, "moved") != 0) {
		char *t = json_dumps(op, JSON_COMPACT);

		fail_msg("want a failed drain naming the job: %s; fleetd log %s", t, fd.log);
	}
	assert_int_equal(json_array_size(harness_jp(op, "failures")), 1);
	assert_string_equal(harness_js(op, "failures.0.job_id"), id);
	assert_true(strlen(harness_js(op, "failures.0.reason")) > 0);
	json_decref(op);
	/* queued again, it runs where there is room (us-west-2 is cordoned by the drain) */
	j = job(id);
	assert_string_equal(harness_js(j, "state"), "pending");
	json_decref(j);
	cordon(USE1, false);
	j = wait_job(id, "running", 0, 60);
	assert_string_equal(harness_js(j, "cluster_id"), cl_id[USE1]);
	json_decref(j);
	objs = sim_objects(USW2, NULL);
	assert_int_equal(json_array_size(objs), 0);
	json_decref(objs);
	f0_id = id;
}

/* Deletes a Ray object on cloudsim cluster k through its Kubernetes API, as a person with
 * kubectl would. */
static void
kube_delete(int k, const char *plural, const char *ns, const char *name)
{
	json_t *c = NULL, *it;
	size_t i;

	json_array_foreach(cs.clusters, i, it)
		if (strcmp(harness_js(it, "name"), cl_names[k]) == 0)
			c = it;
	assert_non_null(c);
	assert_int_equal(harness_sh("curl -sf -o /dev/null --cacert %s/ca.pem -X DELETE -H "
	    "'Authorization: Bearer %s' '%s/apis/ray.io/v1/namespaces/%s/%s/%s'", cs.dir,
	    harness_js(c, "token"), harness_js(c, "api_server"), ns, plural, name), 0);
}

/* A source that vanished during the grace period (deleted by hand) is not re-created to
 * be suspended: the move goes on and the job runs at the target. */
static void
test_move_vanished_source(void **state)
{
	json_t *j, *st, *objs;
	char name[128], ns[64], key[320];
	long long applies = 0;
	double end;

	(void)state;
	cordon(USW2, false);	/* the drains above cordoned it */
	j = job(d0_id);		/* drained to us-east-1; 2 s of checkpoint grace */
	assert_string_equal(harness_js(j, "cluster_id"), cl_id[USE1]);
	snprintf(name, sizeof(name), "%s", harness_js(j, "object_name"));
	json_decref(j);
	j = get_ok("/v1/jobs/%s/manifest", d0_id);
	snprintf(ns, sizeof(ns), "%s", harness_js(j, "metadata.namespace"));
	json_decref(j);
	if (move(d0_id, "{\"region\":\"us-west-2\"}", NULL) != 202)
		fail_msg("move: %ld %s", harness_r.status, harness_r.body);
	/* wait for the checkpoint signal (2 applies of the source), then delete the source */
	snprintf(key, sizeof(key), "%s/%s/rayjobs/%s", cl_names[USE1], ns, name);
	end = harness_now_s() + 20;
	do {
		usleep(100 * 1000);
		st = harness_sim_get(&cs, "/_sim/state");
		applies = json_integer_value(json_object_get(json_object_get(st, "applies"),
		    key));
		json_decref(st);
	} while (applies < 2 && harness_now_s() < end);
	assert_int_equal(applies, 2);
	kube_delete(USE1, "rayjobs", ns, name);
	j = wait_job(d0_id, "running", 3, 60);
	assert_string_equal(harness_js(j, "cluster_id"), cl_id[USW2]);
	json_decref(j);
	st = harness_sim_get(&cs, "/_sim/state");
	assert_int_equal(json_integer_value(json_object_get(json_object_get(st, "applies"), key)),
	    2);	/* never re-created to be suspended */
	json_decref(st);
	objs = sim_objects(USE1, name);
	assert_int_equal(json_array_size(objs), 0);
	json_decref(objs);
}

/* A drain also catches a job on its way in: it waits until the job lands, then moves it
 * away again, and the cluster ends empty. */
static void
test_drain_catches_arrival(void **state)
{
	json_t *op = NULL, *j, *objs;
	char loc[160];
	double end;

	(void)state;
	if (move(f0_id, "{\"region\":\"us-west-2\"}", NULL) != 202)
		fail_msg("move: %ld %s", harness_r.status, harness_r.body);
	if (harness_call("POST", oper, NULL, "/v1/clusters/%s/drain", cl_id[USW2]) != 202)
		fail_msg("drain: %ld %s", harness_r.status, harness_r.body);
	assert_int_equal(harness_ji(harness_r.json, "total"), 2);	/* d0 there,
	    f0 on its way */
	snprintf(loc, sizeof(loc), "/v1/operations/%s", harness_js(harness_r.json, "id"));
	end = harness_now_s() + 40;
	do {
		usleep(250 * 1000);
		json_decref(op);
		op = get_ok("%s", loc);
	} while (strcmp(harness_js(op, "state"), "running") == 0 && harness_now_s() < end);
	if (strcmp(harness_js(op, "state"), "succeeded") != 0 || harness_ji(op, "moved") != 2) {
		char *t = json_dumps(op, JSON_COMPACT);

		print_events(f0_id);
		fail_msg("the arriving job was not moved away: %s; fleetd log %s", t, fd.log);
	}
	json_decref(op);
	j = wait_job(f0_id, "running", 0, 60);
	assert_string_equal(harness_js(j, "cluster_id"), cl_id[USE1]);
	json_decref(j);
	j = wait_job(d0_id, "running", 4, 60);
	assert_string_equal(harness_js(j, "cluster_id"), cl_id[USE1]);
	json_decref(j);
	objs = sim_objects(USW2, NULL);
	assert_int_equal(json_array_size(objs), 0);
	json_decref(objs);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_move_rayjob),
		cmocka_unit_test(test_dry_run),
		cmocka_unit_test(test_move_refused_full),
		cmocka_unit_test(test_move_rayservice),
		cmocka_unit_test(test_drain_cluster),
		cmocka_unit_test(test_drain_nowhere_cancel),
		cmocka_unit_test(test_bad_input),
		cmocka_unit_test(test_cancel_during_move),
		cmocka_unit_test(test_drain_failure_reported),
		cmocka_unit_test(test_move_vanished_source),
		cmocka_unit_test(test_drain_catches_arrival),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
