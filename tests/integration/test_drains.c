/* test_drains: drains end to end against cloudsim (the fleet of test_moves) — a drained
 * cluster's jobs of mixed priorities all move to the other region with the operation
 * counting up; a drain with nowhere to go waits until cancelled; a move the target refuses
 * fails the drain with the reason and the job runs again later; a source deleted by hand
 * during the grace period is not re-created; a drain catches a job on its way in. */
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

#define ENV		"mv"
#define H100		"nvidia-h100-80gb"
#define TIME_SCALE	"4"	/* pods start in 2 s (longer than a mover step), RayJobs run 1000 s */
#define NDRAIN		12

/* tests/fixtures/fleets/moves.json: two HyperPod regions with room, a GKE region that is
 * full (every GPU busy), a cluster of another environment; priority classes low, default,
 * high (preempting) and queue ml. */
enum { USW2, USE1, USC1, OTHER };	/* the scenario's clusters, in its order */

static struct harness_fleet F;
static const char *oper;
static char *f0_id, *d0_id;	/* the jobs the tests hand on */

static int
setup(void **state)
{
	(void)state;
	harness_fleet_start(&F, "drains", FLEETD_SOURCE_DIR "/tests/fixtures/fleets/moves.json",
	    TIME_SCALE, NULL);
	oper = harness_fleet_token(&F, "operator", ENV);
	return 0;
}

static int
teardown(void **state)
{
	(void)state;
	harness_fleet_stop(&F);
	free(f0_id);
	free(d0_id);
	return 0;
}

/* Seconds between the checkpoint signal at the source and the stop there (the events). */
static double
grace_taken(const char *id)
{
	json_t *ev = harness_job_events(F.admin, id), *x;
	double sig = -1, stop = -1;
	size_t i;

	json_array_foreach(ev, i, x) {
		if (strstr(harness_js(x, "message"), "checkpoint requested at the source") != NULL)
			sig = harness_epoch(harness_js(x, "at"));
		if (strstr(harness_js(x, "message"), "stopped at the source") != NULL)
			stop = harness_epoch(harness_js(x, "at"));
	}
	json_decref(ev);
	if (sig < 0 || stop < 0) {
		harness_job_print_events(F.admin, id);
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
	harness_cordon(oper, F.cluster_id[USE1], true);
	for (int i = 0; i < NDRAIN; i++) {
		snprintf(name, sizeof(name), "d%d", i);
		/* one RayCluster: deleted at the source rather than suspended */
		ids[i] = harness_submit(oper, ENV, "ml", i == 5 ? "RayCluster" : "RayJob", name,
		    pcs[i % 3], H100, 1, i % 4 == 3 ? 0 : 2);
	}
	for (int i = 0; i < NDRAIN; i++) {
		j = harness_job_wait(F.admin, ids[i], "running", 1, 60);
		assert_string_equal(harness_js(j, "cluster_id"), F.cluster_id[USW2]);
		json_decref(j);
	}
	harness_cordon(oper, F.cluster_id[USE1], false);

	if (harness_call("POST", oper, NULL, "/v1/clusters/%s/drain", F.cluster_id[USW2]) != 202)
		fail_msg("drain: %ld %s", harness_r.status, harness_r.body);
	op = json_incref(harness_r.json);
	assert_int_equal(harness_ji(op, "total"), NDRAIN);
	assert_int_equal(harness_ji(op, "moved") + harness_ji(op, "waiting") + harness_ji(op,
	    "failed"), NDRAIN);
	assert_string_equal(harness_js(op, "kind"), "drain");
	assert_string_equal(harness_js(op, "target.cluster_id"), F.cluster_id[USW2]);
	snprintf(loc, sizeof(loc), "/v1/operations/%s", harness_js(op, "id"));
	hdr = harness_header(&harness_r, "Location");
	assert_non_null(hdr);
	assert_string_equal(hdr, loc);
	free(hdr);
	/* every job is being moved (2 s of checkpoint grace): a second move names the drain */
	assert_int_equal(harness_move(oper, ids[0], "{\"region\":\"us-east-1\"}", NULL), 409);
	assert_string_equal(harness_js(harness_r.json, "code"), "job.moving");
	if (strstr(harness_js(harness_r.json, "detail"), harness_js(op, "id")) == NULL)
		fail_msg("the 409 does not name the operation %s: %s", harness_js(op, "id"),
		    harness_r.body);

	end = harness_now_s() + 60;
	while (strcmp(harness_js(op, "state"), "running") == 0 && harness_now_s() < end) {
		usleep(250 * 1000);
		json_decref(op);
		op = json_incref(harness_get_ok(F.admin, "%s", loc));
		assert_true(harness_ji(op, "moved") >= moved);	/* progress never goes back */
		moved = harness_ji(op, "moved");
		assert_int_equal(harness_ji(op, "total"), NDRAIN);
		assert_int_equal(harness_ji(op, "moved") + harness_ji(op,
		    "waiting") + harness_ji(op, "failed"), NDRAIN);
	}
	if (strcmp(harness_js(op, "state"), "succeeded") != 0 ||
	    harness_ji(op, "moved") != NDRAIN) {
		char *t = json_dumps(op, JSON_COMPACT);

		fail_msg("drain did not move every job: %s; fleetd log %s", t, harness_log());
	}
	assert_int_equal(harness_ji(op, "failed"), 0);
	assert_int_equal(json_array_size(harness_jp(op, "failures")), 0);
	for (int i = 0; i < NDRAIN; i++) {
		double gap = grace_taken(ids[i]);

		j = harness_job_wait(F.admin, ids[i], "running", 2, 60);
		assert_string_equal(harness_js(j, "cluster_id"), F.cluster_id[USE1]);
		assert_string_equal(harness_js(j, "priority_class"), pcs[i % 3]);
		json_decref(j);
		assert_int_equal(harness_audit_count(F.admin, ids[i], "job.move"), 1);
		/* the source had its grace period, and no more than it asked for */
		if (i % 4 == 3 ? gap > 10 : gap < 1.5)
			fail_msg("job d%d (grace %d s): stopped %.2f s after the checkpoint signal", i,
			    i % 4 == 3 ? 0 : 2, gap);
	}
	d0_id = ids[0];
	for (int i = 1; i < NDRAIN; i++)
		free(ids[i]);
	objs = harness_sim_objects(&F.cs, F.name[USW2], NULL);
	assert_int_equal(json_array_size(objs), 0);
	json_decref(objs);
	j = json_incref(harness_get_ok(F.admin, "/v1/clusters/%s", F.cluster_id[USW2]));
	assert_true(json_is_true(harness_jp(j, "cordoned")));
	json_decref(j);
	assert_int_equal(harness_audit_count(F.admin, harness_js(op, "id"), "drain"), 1);
	json_decref(op);
}

/* A drain with nowhere to go waits (nothing changes) until cancelled; once cancelled it
 * retries nothing, even when room appears. */
static void
test_drain_nowhere_cancel(void **state)
{
	json_t *before = harness_job_fingerprint(&F.cs, F.admin, d0_id), *op;
	char id[40];

	(void)state;
	/* us-west-2 is cordoned by the drain above, us-central1 is full */
	if (harness_call("POST", oper, NULL, "/v1/clusters/%s/drain", F.cluster_id[USE1]) != 202)
		fail_msg("drain: %ld %s", harness_r.status, harness_r.body);
	assert_int_equal(harness_ji(harness_r.json, "total"), NDRAIN);
	assert_int_equal(harness_ji(harness_r.json, "waiting"), NDRAIN);
	assert_int_equal(harness_ji(harness_r.json, "moved"), 0);
	assert_string_equal(harness_js(harness_r.json, "state"), "running");
	snprintf(id, sizeof(id), "%s", harness_js(harness_r.json, "id"));
	harness_job_unchanged(&F.cs, F.admin, before, d0_id, "a drain that cannot move anything");
	if (harness_call("POST", oper, NULL, "/v1/operations/%s/cancel", id) != 200)
		fail_msg("cancel: %ld %s", harness_r.status, harness_r.body);
	assert_string_equal(harness_js(harness_r.json, "state"), "cancelled");
	assert_int_equal(harness_ji(harness_r.json, "waiting"), 0);	/* nothing left to retry */
	harness_cordon(oper, F.cluster_id[USW2], false);	/* room again: a live drain would take it within 5 s */
	sleep(6);
	op = json_incref(harness_get_ok(F.admin, "/v1/operations/%s", id));
	assert_string_equal(harness_js(op, "state"), "cancelled");
	assert_int_equal(harness_ji(op, "moved"), 0);
	json_decref(op);
	harness_job_unchanged(&F.cs, F.admin, before, d0_id, "a cancelled drain");
	json_decref(before);
	harness_cordon(oper, F.cluster_id[USE1], false);
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
	harness_cordon(oper, F.cluster_id[USE1], true);
	id = harness_submit(oper, ENV, "ml", "RayJob", "f0", "low", H100, 1, 0);
	j = harness_job_wait(F.admin, id, "running", 1, 60);
	assert_string_equal(harness_js(j, "cluster_id"), F.cluster_id[USW2]);
	json_decref(j);
	harness_cordon(oper, F.cluster_id[USE1], false);
	harness_sim_post(&F.cs, "/_sim/faults", "{\"service\":\"k8s\",\"cluster\":\"mv-hp-use1\","
	    "\"error_rate\":1,\"error_status\":422}");
	if (harness_call("POST", oper, NULL, "/v1/clusters/%s/drain", F.cluster_id[USW2]) != 202)
		fail_msg("drain: %ld %s", harness_r.status, harness_r.body);
	assert_int_equal(harness_ji(harness_r.json, "total"), 1);
	snprintf(loc, sizeof(loc), "/v1/operations/%s", harness_js(harness_r.json, "id"));
	/* reserved already; keeps the requeued job off the faulty cluster */
	harness_cordon(oper, F.cluster_id[USE1], true);
	end = harness_now_s() + 30;
	do {
		usleep(250 * 1000);
		json_decref(op);
		op = json_incref(harness_get_ok(F.admin, "%s", loc));
	} while (strcmp(harness_js(op, "state"), "running") == 0 && harness_now_s() < end);
	harness_sim(&F.cs, "DELETE", "/_sim/faults", NULL, NULL);
	if (strcmp(harness_js(op, "state"), "failed") != 0 || harness_ji(op, "failed") != 1 ||
	    harness_ji(op, "moved") != 0) {
		char *t = json_dumps(op, JSON_COMPACT);

		fail_msg("want a failed drain naming the job: %s; fleetd log %s", t, harness_log());
	}
	assert_int_equal(json_array_size(harness_jp(op, "failures")), 1);
	assert_string_equal(harness_js(op, "failures.0.job_id"), id);
	assert_true(strlen(harness_js(op, "failures.0.reason")) > 0);
	json_decref(op);
	/* queued again, it runs where there is room (us-west-2 is cordoned by the drain) */
	j = harness_job(F.admin, id);
	assert_string_equal(harness_js(j, "state"), "pending");
	json_decref(j);
	harness_cordon(oper, F.cluster_id[USE1], false);
	j = harness_job_wait(F.admin, id, "running", 0, 60);
	assert_string_equal(harness_js(j, "cluster_id"), F.cluster_id[USE1]);
	json_decref(j);
	objs = harness_sim_objects(&F.cs, F.name[USW2], NULL);
	assert_int_equal(json_array_size(objs), 0);
	json_decref(objs);
	f0_id = id;
}

/* Deletes a Ray object on cloudsim cluster k through its Kubernetes API, as a person with
 * kubectl would. */
static void
kube_delete(int k, const char *plural, const char *ns, const char *name)
{
	struct http_result r;
	char path[256];

	snprintf(path, sizeof(path), "/apis/ray.io/v1/namespaces/%s/%s/%s", ns, plural, name);
	harness_kube(&F.cs, &r, F.name[k], "DELETE", path, NULL, NULL);
	if (r.status != 200)
		fail_msg("DELETE %s on %s: %ld %s", path, F.name[k], r.status, r.body);
	harness_http_free(&r);
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
	harness_cordon(oper, F.cluster_id[USW2], false);	/* the drains above cordoned it */
	j = harness_job(F.admin, d0_id);		/* drained to us-east-1; 2 s of checkpoint grace */
	assert_string_equal(harness_js(j, "cluster_id"), F.cluster_id[USE1]);
	snprintf(name, sizeof(name), "%s", harness_js(j, "object_name"));
	json_decref(j);
	j = json_incref(harness_get_ok(F.admin, "/v1/jobs/%s/manifest", d0_id));
	snprintf(ns, sizeof(ns), "%s", harness_js(j, "metadata.namespace"));
	json_decref(j);
	if (harness_move(oper, d0_id, "{\"region\":\"us-west-2\"}", NULL) != 202)
		fail_msg("move: %ld %s", harness_r.status, harness_r.body);
	/* wait for the checkpoint signal (2 applies of the source), then delete the source */
	snprintf(key, sizeof(key), "%s/%s/rayjobs/%s", F.name[USE1], ns, name);
	end = harness_now_s() + 20;
	do {
		usleep(100 * 1000);
		st = harness_sim_get(&F.cs, "/_sim/state");
		applies = json_integer_value(json_object_get(json_object_get(st, "applies"),
		    key));
		json_decref(st);
	} while (applies < 2 && harness_now_s() < end);
	assert_int_equal(applies, 2);
	kube_delete(USE1, "rayjobs", ns, name);
	j = harness_job_wait(F.admin, d0_id, "running", 3, 60);
	assert_string_equal(harness_js(j, "cluster_id"), F.cluster_id[USW2]);
	json_decref(j);
	st = harness_sim_get(&F.cs, "/_sim/state");
	assert_int_equal(json_integer_value(json_object_get(json_object_get(st, "applies"), key)),
	    2);	/* never re-created to be suspended */
	json_decref(st);
	objs = harness_sim_objects(&F.cs, F.name[USE1], name);
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
	if (harness_move(oper, f0_id, "{\"region\":\"us-west-2\"}", NULL) != 202)
		fail_msg("move: %ld %s", harness_r.status, harness_r.body);
	if (harness_call("POST", oper, NULL, "/v1/clusters/%s/drain", F.cluster_id[USW2]) != 202)
		fail_msg("drain: %ld %s", harness_r.status, harness_r.body);
	assert_int_equal(harness_ji(harness_r.json, "total"), 2);	/* d0 there,
	    f0 on its way */
	snprintf(loc, sizeof(loc), "/v1/operations/%s", harness_js(harness_r.json, "id"));
	end = harness_now_s() + 40;
	do {
		usleep(250 * 1000);
		json_decref(op);
		op = json_incref(harness_get_ok(F.admin, "%s", loc));
	} while (strcmp(harness_js(op, "state"), "running") == 0 && harness_now_s() < end);
	if (strcmp(harness_js(op, "state"), "succeeded") != 0 || harness_ji(op, "moved") != 2) {
		char *t = json_dumps(op, JSON_COMPACT);

		harness_job_print_events(F.admin, f0_id);
		fail_msg("the arriving job was not moved away: %s; fleetd log %s", t, harness_log());
	}
	json_decref(op);
	j = harness_job_wait(F.admin, f0_id, "running", 0, 60);
	assert_string_equal(harness_js(j, "cluster_id"), F.cluster_id[USE1]);
	json_decref(j);
	j = harness_job_wait(F.admin, d0_id, "running", 4, 60);
	assert_string_equal(harness_js(j, "cluster_id"), F.cluster_id[USE1]);
	json_decref(j);
	objs = harness_sim_objects(&F.cs, F.name[USW2], NULL);
	assert_int_equal(json_array_size(objs), 0);
	json_decref(objs);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_drain_cluster),
		cmocka_unit_test(test_drain_nowhere_cancel),
		cmocka_unit_test(test_drain_failure_reported),
		cmocka_unit_test(test_move_vanished_source),
		cmocka_unit_test(test_drain_catches_arrival),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
