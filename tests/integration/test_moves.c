/* test_moves: moves end to end against cloudsim — a fleet of two GPU regions (and a full
 * one) registered through the API, a checkpointed RayJob moved across regions, dry runs
 * and refusals that change nothing, a RayService that stays ready while it moves, cancels
 * during a move (which end the move at once).  Drains: test_drains. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/harness/harness.h"

#define ENV		"mv"
#define H100		"nvidia-h100-80gb"
#define TIME_SCALE	"4"	/* pods start in 2 s (longer than a mover step), RayJobs run 1000 s */

/* tests/fixtures/fleets/moves.json: two HyperPod regions with room, a GKE region that is
 * full (every GPU busy), a cluster of another environment; priority classes low, default,
 * high (preempting) and queue ml. */
enum { USW2, USE1, USC1, OTHER };	/* the scenario's clusters, in its order */

static struct harness_fleet F;
static const char *oper, *viewer;
static char *train_id, *svc_id;	/* the jobs the tests hand on */

static int
setup(void **state)
{
	(void)state;
	harness_fleet_start(&F, "moves", FLEETD_SOURCE_DIR "/tests/fixtures/fleets/moves.json",
	    TIME_SCALE, NULL);
	oper = harness_fleet_token(&F, "operator", ENV);
	viewer = harness_fleet_token(&F, "viewer", ENV);
	return 0;
}

static int
teardown(void **state)
{
	(void)state;
	harness_fleet_stop(&F);
	free(train_id);
	free(svc_id);
	return 0;
}

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
	harness_cordon(oper, F.cluster_id[USE1], true);	/* start it in us-west-2 */
	train_id = harness_submit(oper, ENV, "ml", "RayJob", "train", "default", H100, 8, 3);
	j = harness_job_wait(F.admin, train_id, "running", 1, 60);
	assert_string_equal(harness_js(j, "cluster_id"), F.cluster_id[USW2]);
	snprintf(src_name, sizeof(src_name), "%s", harness_js(j, "object_name"));
	snprintf(enqueued, sizeof(enqueued), "%s", harness_js(j, "enqueued_at"));
	json_decref(j);
	harness_cordon(oper, F.cluster_id[USE1], false);

	t0 = harness_now_s();
	if (harness_move(oper, train_id, "{\"region\":\"us-east-1\"}", NULL) != 202)
		fail_msg("move: %ld %s", harness_r.status, harness_r.body);
	assert_string_equal(harness_js(harness_r.json, "job.state"), "moving");
	assert_string_equal(harness_js(harness_r.json, "plan.to.cluster"), F.cluster_id[USE1]);
	assert_string_equal(harness_js(harness_r.json, "plan.from.cluster"), F.cluster_id[USW2]);
	/* a second move while this one runs (the grace period is 3 s) */
	assert_int_equal(harness_move(oper, train_id, "{\"region\":\"us-west-2\"}", NULL), 409);
	assert_string_equal(harness_js(harness_r.json, "code"), "job.moving");
	if (strstr(harness_js(harness_r.json, "detail"), "mv-hp-use1") == NULL ||
	    strstr(harness_js(harness_r.json, "detail"), "phase") == NULL)
		fail_msg("the 409 does not say where the move is: %s", harness_r.body);

	j = harness_job_wait(F.admin, train_id, "running", 2, 60);
	assert_true(harness_now_s() - t0 >= 3.0);	/* the source had its grace period */
	assert_string_equal(harness_js(j, "enqueued_at"),
	    enqueued);	/* its place in the queue */
	assert_string_equal(harness_js(j, "cluster_id"), F.cluster_id[USE1]);
	assert_string_equal(harness_js(j, "region"), "us-east-1");
	assert_string_equal(harness_js(j, "id"), train_id);

	/* cloudsim: the target object carries the checkpoint URI; the source is gone after
	 * the checkpoint signal and the suspend (three applies of the source object) */
	objs = harness_sim_objects(&F.cs, F.name[USE1], harness_js(j, "object_name"));
	assert_int_equal(json_array_size(objs), 1);
	x = json_object_get(harness_jp(objs, "0.object.metadata.annotations"),
	    "fleet.io/checkpoint-uri");
	assert_string_equal(json_string_value(x), "s3://ckpt/train");
	assert_non_null(strstr(harness_js(objs, "0.name"), "-a2"));
	json_decref(objs);
	objs = harness_sim_objects(&F.cs, F.name[USW2], NULL);
	assert_int_equal(json_array_size(objs), 0);
	json_decref(objs);
	st = harness_sim_get(&F.cs, "/_sim/state");
	{
		const char *k;
		json_t *v;
		long long src_applies = -1;

		json_object_foreach(json_object_get(st, "applies"), k, v)
			if (strncmp(k, F.name[USW2], strlen(F.name[USW2])) == 0 &&
			    strstr(k, src_name) != NULL)
				src_applies = json_integer_value(v);
		if (src_applies < 3)
			fail_msg("source %s applied %lld times, want >= 3 (run, checkpoint, suspend)",
			    src_name, src_applies);
	}
	json_decref(st);
	json_decref(j);

	/* events: running -> moving, the phases in order, moving -> dispatched, running */
	ev = harness_job_events(F.admin, train_id);
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
		harness_job_print_events(F.admin, train_id);
		fail_msg("events do not tell the move (moving %d, phases %zu/4, running %d)",
		    to_moving, next, running2);
	}
	/* the audit log has the move, by the operator, with the job before and after */
	assert_int_equal(harness_audit_count(F.admin, train_id, "job.move"), 1);
	j = json_incref(harness_get_ok(F.admin, "/v1/audit?resource_id=%s&resource_type=job", train_id));
	json_array_foreach(harness_jp(j, "items"), i, x)
		if (strcmp(harness_js(x, "action"), "job.move") == 0) {
			assert_string_equal(harness_js(x, "actor.name"), "test-operator");
			assert_string_equal(harness_js(x, "before.state"), "running");
			assert_string_equal(harness_js(x, "after.state"), "moving");
		}
	json_decref(j);
	/* the moved-away attempt keeps its post-mortem (its pods, from the source) */
	assert_int_equal(harness_sql_long("SELECT count(*) FROM job_postmortems WHERE job_id ="
	    " '%s' AND attempt = 1 AND trigger = 'moved' AND cluster_id = '%s' AND"
	    " jsonb_array_length(record->'pods') > 0", train_id, F.cluster_id[USW2]), 1);
}

/* dry_run answers the plan and changes nothing. */
static void
test_dry_run(void **state)
{
	json_t *before = harness_job_fingerprint(&F.cs, F.admin, train_id), *plan;
	double diff;

	(void)state;
	if (harness_move(oper, train_id, "{\"region\":\"us-west-2\"}", "\"dry_run\":true") != 200)
		fail_msg("dry run: %ld %s", harness_r.status, harness_r.body);
	plan = json_incref(harness_r.json);
	assert_string_equal(harness_js(plan, "job_id"), train_id);
	assert_string_equal(harness_js(plan, "from.cluster"), F.cluster_id[USE1]);
	assert_string_equal(harness_js(plan, "to.cluster"), F.cluster_id[USW2]);
	diff = json_number_value(harness_jp(plan, "to.price_hour")) -
	    json_number_value(harness_jp(plan, "from.price_hour"));
	assert_true(json_is_number(harness_jp(plan, "price_difference_per_hour")));
	assert_true(fabs(json_number_value(harness_jp(plan,
	    "price_difference_per_hour")) - diff) < 1e-6);
	assert_true(json_is_array(harness_jp(plan, "would_preempt")));
	assert_int_equal(json_array_size(harness_jp(plan, "would_preempt")), 0);
	json_decref(plan);
	harness_job_unchanged(&F.cs, F.admin, before, train_id, "a dry run");
	json_decref(before);
}

/* A move to a region whose GPUs are all busy is refused with the reasons per cluster,
 * and nothing changes. */
static void
test_move_refused_full(void **state)
{
	json_t *before = harness_job_fingerprint(&F.cs, F.admin, train_id), *x;
	char target[128];
	size_t i;

	(void)state;
	assert_int_equal(harness_move(oper, train_id, "{\"region\":\"us-central1\"}", NULL), 409);
	assert_string_equal(harness_js(harness_r.json, "code"), "move.no_capacity");
	assert_int_equal(json_array_size(harness_jp(harness_r.json, "errors")), 1);
	json_array_foreach(harness_jp(harness_r.json, "errors"), i, x) {
		assert_string_equal(harness_js(x, "cluster"), F.cluster_id[USC1]);
		assert_string_equal(harness_js(x, "region"), "us-central1");
		assert_true(strlen(harness_js(x, "detail")) > 0);
	}
	snprintf(target, sizeof(target), "{\"cluster_id\":\"%s\"}", F.cluster_id[USC1]);
	assert_int_equal(harness_move(oper, train_id, target, NULL), 409);
	assert_string_equal(harness_js(harness_r.json, "code"), "move.no_capacity");
	harness_job_unchanged(&F.cs, F.admin, before, train_id, "a refused move");
	json_decref(before);
}

/* RayService objects of the job in cloudsim right now: how many, how many ready, and
 * whether the source cluster still has one. */
static void
service_sample(int *total, int *ready, bool *on_source)
{
	json_t *st = harness_sim_get(&F.cs, "/_sim/state"), *c, *o;
	size_t i, k;

	*total = *ready = 0;
	*on_source = false;
	json_array_foreach(json_object_get(st, "clusters"), i, c)
		json_array_foreach(json_object_get(c, "objects"), k, o) {
			if (strcmp(harness_js(o, "kind"), "RayService") != 0)
				continue;
			(*total)++;
			*ready += strcmp(harness_js(o, "status.serviceStatus"), "Running") == 0;
			*on_source |= strcmp(harness_js(c, "name"), F.name[USW2]) == 0;
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
	harness_cordon(oper, F.cluster_id[USE1], true);
	svc_id = harness_submit(oper, ENV, "ml", "RayService", "serve", "high", H100, 4, -1);
	json_decref(harness_job_wait(F.admin, svc_id, "running", 1, 60));
	harness_cordon(oper, F.cluster_id[USE1], false);
	service_sample(&total, &ready, &on_source);
	assert_true(total == 1 && ready == 1 && on_source);

	if (harness_move(oper, svc_id, "{\"region\":\"us-east-1\"}", NULL) != 202)
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
			j = harness_job(F.admin, svc_id);
			done = strcmp(harness_js(j, "state"), "running") == 0 &&
			    harness_ji(j, "attempt") == 2;
			json_decref(j);
		}
		usleep(40 * 1000);
	}
	if (!done) {
		harness_job_print_events(F.admin, svc_id);
		fail_msg("the RayService did not finish its move in 60 s (%d samples)", samples);
	}
	print_message("rayservice move: %d samples, at most %d copies\n", samples, max_total);
	assert_int_equal(max_total, 2);	/* the target was up before the source went */
	j = harness_job(F.admin, svc_id);
	assert_string_equal(harness_js(j, "cluster_id"), F.cluster_id[USE1]);
	json_decref(j);
	service_sample(&total, &ready, &on_source);
	assert_true(total == 1 && ready == 1 && !on_source);
}

/* Bad input: nothing changes and the answer says why. */
static void
test_bad_input(void **state)
{
	json_t *before = harness_job_fingerprint(&F.cs, F.admin, train_id), *j;
	char target[128];

	(void)state;
	assert_int_equal(harness_move(oper, "00000000-0000-4000-8000-000000000000",
	    "{\"region\":\"us-east-1\"}",
	    NULL), 404);
	assert_int_equal(harness_call("POST", viewer, "{\"target\":{\"region\":\"us-west-2\"}}",
	    "/v1/jobs/%s/move", train_id), 403);
	assert_int_equal(harness_move(oper, train_id, "{}", NULL), 400);
	assert_string_equal(harness_js(harness_r.json, "errors.0.pointer"), "/target");
	assert_int_equal(harness_move(oper, train_id, "{\"region\":\"us-west-2\","
	    "\"cloud_id\":\"x\"}", NULL),
	    400);
	assert_int_equal(harness_call("POST", oper, "{\"reason\":\"x\"}", "/v1/jobs/%s/move",
	    train_id),
	    400);
	/* an unknown region names the environment's regions */
	assert_int_equal(harness_move(oper, train_id, "{\"region\":\"mars-north-9\"}", NULL), 400);
	assert_string_equal(harness_js(harness_r.json, "code"), "move.unknown_region");
	assert_string_equal(harness_js(harness_r.json, "errors.0.pointer"), "/target/region");
	if (strstr(harness_r.body, "us-west-2") == NULL ||
	    strstr(harness_r.body, "us-east-1") == NULL ||
	    strstr(harness_r.body, "us-central1") == NULL)
		fail_msg("the 400 does not name the valid regions: %s", harness_r.body);
	/* a cordoned target cluster */
	harness_cordon(oper, F.cluster_id[USW2], true);
	snprintf(target, sizeof(target), "{\"cluster_id\":\"%s\"}", F.cluster_id[USW2]);
	assert_int_equal(harness_move(oper, train_id, target, NULL), 409);
	assert_string_equal(harness_js(harness_r.json, "code"), "cluster.cordoned");
	harness_cordon(oper, F.cluster_id[USW2], false);
	/* never across environments: by cluster, by cloud; and another environment's cluster
	 * or cloud is answered as one that does not exist (404, same detail, no name) */
	{
		static const char *const kinds[] = { "cluster", "cloud" };
		json_t *a;

		for (int k = 0; k < 2; k++) {
			char absent[512];

			snprintf(absent, sizeof(absent), "{\"%s_id\":\"%s\"}", kinds[k],
			    "00000000-0000-4000-8000-00000000abcd");
			assert_int_equal(harness_move(oper, train_id, absent, NULL), 404);
			snprintf(absent, sizeof(absent), "%s", harness_r.body);
			snprintf(target, sizeof(target), "{\"%s_id\":\"%s\"}", kinds[k],
			    k == 0 ? F.cluster_id[OTHER] : F.cloud_id[OTHER]);
			assert_int_equal(harness_move(oper, train_id, target, NULL), 404);
			assert_string_equal(harness_js(harness_r.json, "code"),
			    k == 0 ? "cluster.not_found" : "cloud.not_found");
			assert_null(strstr(harness_r.body, "other"));
			a = json_loads(absent, 0, NULL);
			assert_string_equal(harness_js(harness_r.json, "detail"),
			    harness_js(a, "detail"));
			json_decref(a);
		}
	}
	harness_job_unchanged(&F.cs, F.admin, before, train_id, "refused moves");
	json_decref(before);

	/* a region with nothing in it drains at once: 200, an empty finished operation */
	if (harness_call("POST", oper, NULL, "/v1/regions/" ENV "/eu-west-1/drain") != 200)
		fail_msg("empty drain: %ld %s", harness_r.status, harness_r.body);
	assert_int_equal(harness_ji(harness_r.json, "total"), 0);
	assert_string_equal(harness_js(harness_r.json, "state"), "succeeded");
	assert_int_equal(json_array_size(harness_jp(harness_r.json, "failures")), 0);
	j = json_incref(harness_get_ok(F.admin, "/v1/operations/%s", harness_js(harness_r.json, "id")));
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
	json_t *all = harness_sim_get(&F.cs, "/_sim/objects"), *o;
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
	if (harness_move(oper, train_id, "{\"region\":\"us-west-2\"}", NULL) != 202)
		fail_msg("move: %ld %s", harness_r.status, harness_r.body);
	assert_int_equal(harness_call("POST", oper, NULL, "/v1/jobs/%s/cancel", train_id), 200);
	json_decref(harness_job_wait(F.admin, train_id, "cancelled", 0, 60));
	end = harness_now_s() + 30;
	while (sim_count_prefix("train-") > 0 && harness_now_s() < end)
		usleep(250 * 1000);
	if (sim_count_prefix("train-") > 0) {
		harness_job_print_events(F.admin, train_id);
		fail_msg("a RayJob of the cancelled job is left in cloudsim; fleetd log %s",
		    harness_log());
	}
	assert_int_equal(harness_move(oper, train_id, "{\"region\":\"us-east-1\"}", NULL), 409);
	assert_string_equal(harness_js(harness_r.json, "code"), "job.finished");
}

/* Applies of the object named name on cluster cl (cloudsim's count; -1 when none). */
static long long
sim_applies(const char *cl, const char *name)
{
	json_t *st = harness_sim_get(&F.cs, "/_sim/state"), *v;
	long long n = -1;
	const char *k;

	json_object_foreach(json_object_get(st, "applies"), k, v)
		if (strncmp(k, cl, strlen(cl)) == 0 && k[strlen(cl)] == '/' &&
		    strcmp(strrchr(k, '/') + 1, name) == 0)
			n = json_integer_value(v);
	json_decref(st);
	return n;
}

/* The database goes away between the mover's apply on a member and its record, once in
 * each phase (a trigger fails the phase's first record; the claim's lease is then cut
 * short, as a restarted replica's would run out): the retries compare with the live object
 * instead of applying again — the source gets its run, one checkpoint request and one
 * suspend, the target one apply.  Before: 4 and 2. */
static void
test_move_record_lost(void **state)
{
	char *id, src[128], *ev = NULL, *st = NULL;
	json_t *j;
	double end;

	(void)state;
	harness_cordon(oper, F.cluster_id[USE1], true);
	id = harness_keep(harness_submit(oper, ENV, "ml", "RayJob", "lost", "default", H100, 8,
	    3));
	j = harness_job_wait(F.admin, id, "running", 1, 60);
	assert_string_equal(harness_js(j, "cluster_id"), F.cluster_id[USW2]);
	snprintf(src, sizeof(src), "%s", harness_js(j, "object_name"));
	json_decref(j);
	harness_cordon(oper, F.cluster_id[USE1], false);
	harness_sql("CREATE SEQUENCE lost_ck; CREATE SEQUENCE lost_su; CREATE SEQUENCE lost_dn;"
	    " CREATE FUNCTION lost_once() RETURNS trigger LANGUAGE plpgsql AS $f$ BEGIN"
	    " IF NEW.id = '%s' AND OLD.state = 'moving' AND (OLD.move->>'phase' IS DISTINCT FROM"
	    " coalesce(NEW.move->>'phase', 'done')) AND nextval(CASE OLD.move->>'phase' WHEN"
	    " 'reserved' THEN 'lost_ck' WHEN 'checkpointing' THEN 'lost_su' ELSE 'lost_dn' END)"
	    " = 1 THEN RAISE EXCEPTION 'injected: the database went away'; END IF; RETURN NEW;"
	    " END $f$; CREATE TRIGGER lost_once BEFORE UPDATE ON jobs FOR EACH ROW EXECUTE"
	    " FUNCTION lost_once()", id);
	if (harness_move(oper, id, "{\"region\":\"us-east-1\"}", NULL) != 202)
		fail_msg("move: %ld %s", harness_r.status, harness_r.body);
	end = harness_now_s() + 90;
	for (;;) {
		free(st);
		st = harness_sql_str("SELECT state || ' ' || attempt FROM jobs WHERE id = '%s'",
		    id);
		if (strcmp(st, "running 2") == 0 || harness_now_s() > end)
			break;
		/* a record that failed left the claim: its lease runs out at once */
		harness_sql("UPDATE jobs SET claimed_at = now() - interval '1 hour' WHERE id = '%s'"
		    " AND claimed_by IS NOT NULL", id);
		usleep(200 * 1000);
	}
	if (strcmp(st, "running 2") != 0) {
		harness_job_print_events(F.admin, id);
		fail_msg("the move did not finish: %s (fleetd log %s)", st, harness_log());
	}
	/* every phase lost its first record */
	assert_int_equal(harness_sql_long("SELECT (SELECT count(*) FROM lost_ck WHERE is_called)"
	    " + (SELECT count(*) FROM lost_su WHERE is_called) + (SELECT count(*) FROM lost_dn"
	    " WHERE is_called)"), 3);
	harness_sql("DROP TRIGGER lost_once ON jobs; DROP FUNCTION lost_once()");
	j = harness_job_wait(F.admin, id, "running", 2, 10);
	if (sim_applies(F.name[USW2], src) != 3 || sim_applies(F.name[USE1],
	    harness_js(j, "object_name")) != 1)
		fail_msg("applied again on retry: source %s %lld times (want 3: run, checkpoint,"
		    " suspend), target %lld (want 1)", src, sim_applies(F.name[USW2], src),
		    sim_applies(F.name[USE1], harness_js(j, "object_name")));
	ev = harness_sql_str("SELECT count(*) FROM job_events WHERE job_id = '%s' AND type ="
	    " 'move' AND message = 'checkpoint requested at the source'", id);
	assert_string_equal(ev, "1");
	free(ev);
	json_decref(j);
	assert_int_equal(harness_call("POST", oper, NULL, "/v1/jobs/%s/cancel", id), 200);
	json_decref(harness_job_wait(F.admin, id, "cancelled", 0, 60));
	free(st);
}

/* Applies cloudsim counted on cluster cl of objects whose name starts with prefix. */
static long long
sim_applies_prefix(const char *cl, const char *prefix)
{
	json_t *st = harness_sim_get(&F.cs, "/_sim/state"), *v;
	long long n = 0;
	const char *k;

	json_object_foreach(json_object_get(st, "applies"), k, v)
		if (strncmp(k, cl, strlen(cl)) == 0 && k[strlen(cl)] == '/' &&
		    strncmp(strrchr(k, '/') + 1, prefix, strlen(prefix)) == 0)
			n += json_integer_value(v);
	json_decref(st);
	return n;
}

/* A cancel ends a move at once, whatever its phase: a job whose checkpoint grace is 600 s
 * (cloudsim never acknowledges) is cancelled while the mover waits in `checkpointing`; the
 * move ends without waiting the grace, nothing is ever applied at the target, the source's
 * object goes, and the job is cancelled from `moving`.  Before: the mover did not read
 * cancel_requested, so the job stayed moving for the whole grace, then landed at the
 * target (applied there) and only then was cancelled by the status worker. */
static void
test_cancel_ends_move(void **state)
{
	char *id, *s;
	json_t *j;
	double end, t0;

	(void)state;
	harness_cordon(oper, F.cluster_id[USE1], true);
	id = harness_keep(harness_submit(oper, ENV, "ml", "RayJob", "held", "default", H100, 8,
	    600));
	j = harness_job_wait(F.admin, id, "running", 1, 60);
	assert_string_equal(harness_js(j, "cluster_id"), F.cluster_id[USW2]);
	json_decref(j);
	harness_cordon(oper, F.cluster_id[USE1], false);
	if (harness_move(oper, id, "{\"region\":\"us-east-1\"}", NULL) != 202)
		fail_msg("move: %ld %s", harness_r.status, harness_r.body);
	end = harness_now_s() + 30;
	for (s = NULL;; usleep(200 * 1000)) {
		free(s);
		s = harness_sql_str("SELECT coalesce(move->>'phase', state) FROM jobs WHERE id ="
		    " '%s'", id);
		if (strcmp(s, "checkpointing") == 0 || harness_now_s() > end)
			break;
	}
	if (strcmp(s, "checkpointing") != 0)
		fail_msg("the move never waited for the checkpoint: %s", s);
	free(s);
	t0 = harness_now_s();
	assert_int_equal(harness_call("POST", oper, NULL, "/v1/jobs/%s/cancel", id), 200);
	json_decref(harness_job_wait(F.admin, id, "cancelled", 0, 45));
	print_message("cancel during checkpointing: cancelled in %.1f s (grace 600 s)\n",
	    harness_now_s() - t0);
	end = harness_now_s() + 30;
	while (sim_count_prefix("held-") > 0 && harness_now_s() < end)
		usleep(250 * 1000);
	if (sim_count_prefix("held-") > 0 || sim_applies_prefix(F.name[USE1], "held-") != 0) {
		harness_job_print_events(F.admin, id);
		fail_msg("objects left (%d) or applied at the target (%lld); fleetd log %s",
		    sim_count_prefix("held-"), sim_applies_prefix(F.name[USE1], "held-"),
		    harness_log());
	}
	assert_int_equal(harness_sql_long("SELECT count(*) FROM job_events WHERE job_id = '%s'"
	    " AND from_state = 'moving' AND to_state = 'cancelled' AND message LIKE"
	    " 'cancelled during the move%%'", id), 1);
	assert_int_equal(harness_sql_long("SELECT count(*) FROM jobs WHERE id = '%s' AND move IS"
	    " NULL AND object_uid IS NULL AND attempt = 1", id), 1);
	/* the source attempt's post-mortem outlives it (before: none was kept) */
	assert_int_equal(harness_sql_long("SELECT count(*) FROM job_postmortems WHERE job_id ="
	    " '%s' AND attempt = 1 AND trigger = 'cancelled' AND jsonb_array_length(record->"
	    "'pods') > 0", id), 1);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_move_rayjob),
		cmocka_unit_test(test_dry_run),
		cmocka_unit_test(test_move_refused_full),
		cmocka_unit_test(test_move_rayservice),
		cmocka_unit_test(test_bad_input),
		cmocka_unit_test(test_cancel_during_move),
		cmocka_unit_test(test_move_record_lost),
		cmocka_unit_test(test_cancel_ends_move),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
