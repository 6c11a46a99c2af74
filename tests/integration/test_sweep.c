/* test_sweep: the orphan sweep, evacuation refusals and preempting moves against cloudsim
 * (issue 18) — an apply that lands after its job was cancelled (the cancel/in-flight-apply
 * race) is deleted with its audit row, event and metric while live and foreign objects stay;
 * report mode only records; labels naming another environment's job are not trusted;
 * moves with "source": "unreachable" are refused on a healthy source, explained on an
 * unreachable one, and held back until the configured time has passed; a move into a full cluster preempts exactly the lower-priority job its dry run
 * named, never one of equal priority. */
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
#define H100		"nvidia-h100-80gb"
#define CLUSTER		"test-hp-usw2"
#define TARGET		"test-hp-use1"	/* one p5 node: 8 GPUs */

static struct harness_fleet F;
static const char *cluster_id, *target_id;
static const char *oper;
static char *live_id, *gone_id;	/* a running job; a cancelled one */
static json_t *live_manifest;	/* the running job's object */

/* fleetd of the fleet again, with the orphan sweep in mode */
static void
restart_fleetd(const char *mode)
{
	harness_fleetd_stop(&F.fd);
	harness_cs_env_add(&F.cs, "FLEETD_ORPHAN_SWEEP=%s", mode);
	harness_fleetd_start(&F.fd, F.dburl, (const char *const *)F.cs.env);
}

/* tests/fixtures/fleets/sweep.json: CLUSTER with room, TARGET of one p5 node (8 GPUs);
 * RayJobs run for good (the live one stays live); priority classes default (preempting)
 * and low, queue ml; the sweep deletes orphans older than 1 s every 500 ms. */
static int
setup(void **state)
{
	(void)state;
	harness_fleet_start(&F, "sweep", FLEETD_SOURCE_DIR "/tests/fixtures/fleets/sweep.json",
	    "4", NULL);
	cluster_id = F.cluster_id[harness_fleet_index(&F, CLUSTER)];
	target_id = F.cluster_id[harness_fleet_index(&F, TARGET)];
	oper = harness_fleet_token(&F, "operator", ENV);
	/* the sweep cases run on CLUSTER alone; test_move_preempts opens TARGET */
	harness_cordon(oper, target_id, true);
	return 0;
}

static int
teardown(void **state)
{
	(void)state;
	harness_fleet_stop(&F);
	free(live_id);
	free(gone_id);
	json_decref(live_manifest);
	return 0;
}

/* A RayJob of gpus H100s in priority class pclass, checkpointing with grace seconds. */
static char *
submit_job(const char *name, const char *pclass, int gpus, int grace)
{
	return harness_submit(oper, ENV, "ml", "RayJob", name, pclass, H100, gpus, grace);
}

static char *
submit(const char *name)
{
	return submit_job(name, "default", 1, 1);
}

/* Waits until job id is in state; fails the test after timeout_s. */
static void
wait_state(const char *id, const char *state, double timeout_s)
{
	json_decref(harness_job_wait(F.admin, id, state, 0, timeout_s));
}

static bool
in_state(const char *id, const char *state)
{
	return strcmp(harness_js(harness_get_ok(F.admin, "/v1/jobs/%s", id), "state"), state) == 0;
}

/* Objects named name on the cluster (cloudsim's own view). */
static size_t
objects_named(const char *name)
{
	json_t *o = harness_sim_objects(&F.cs, CLUSTER, name);
	size_t n = json_array_size(o);

	json_decref(o);
	return n;
}

static bool
object_gone(void *arg)
{
	return objects_named(arg) == 0;
}

/* A copy of the running job's object as name, labelled as job's attempt in env, created
 * on the cluster behind fleetd's back (what a dead replica's late apply leaves). */
static void
plant(const char *name, const char *job, const char *attempt, const char *env)
{
	json_t *o = json_deep_copy(live_manifest), *md = json_object_get(o, "metadata");
	json_t *lb = json_object_get(md, "labels");
	struct http_result r;
	char path[256], *body;

	json_object_set_new(md, "name", json_string(name));
	json_object_set_new(lb, "fleet.io/job-id", json_string(job));
	json_object_set_new(lb, "fleet.io/attempt", json_string(attempt));
	json_object_set_new(lb, "fleet.io/environment", json_string(env));
	json_object_del(md, "resourceVersion");
	json_object_del(md, "uid");
	json_object_del(md, "creationTimestamp");
	json_object_del(o, "status");
	snprintf(path, sizeof(path), "/apis/ray.io/v1/namespaces/%s/rayjobs",
	    harness_js(md, "namespace"));
	body = json_dumps(o, JSON_COMPACT);
	harness_kube(&F.cs, &r, CLUSTER, "POST", path, "application/json", body);
	if (r.status != 201)
		fail_msg("planting %s: %ld %s", name, r.status, r.body);
	harness_http_free(&r);
	free(body);
	json_decref(o);
}

/* The race: a cancelled job's object that lands afterwards is deleted, audited and told
 * in the job's events; the running job's object and a foreign one stay. */
static void
test_late_apply_deleted(void **state)
{
	char *attempt, *foreign = "3f6b1c9e-0000-4000-8000-000000000001";

	(void)state;
	live_id = submit("live");
	wait_state(live_id, "running", 60);
	live_manifest = json_incref(harness_get_ok(F.admin, "/v1/jobs/%s/manifest", live_id));
	gone_id = submit("gone");
	harness_call("POST", oper, "{}", "/v1/jobs/%s/cancel", gone_id);
	wait_state(gone_id, "cancelled", 30);
	attempt = harness_sql_str("SELECT greatest(attempt, 1)::text FROM jobs WHERE id = '%s'",
	    gone_id);
	plant("late-apply", gone_id, attempt, ENV);
	plant("not-ours", foreign, "1", "someone-else");
	assert_true(harness_wait(object_gone, "late-apply", 20));
	sleep(2);	/* more rounds: nothing else goes */
	assert_int_equal(objects_named("not-ours"), 1);
	assert_int_equal(objects_named(harness_js(live_manifest, "metadata.name")), 1);
	assert_true(in_state(live_id, "running"));
	assert_int_equal(harness_sql_long("SELECT count(*) FROM orphans WHERE name = 'late-apply'"
	    " AND state = 'deleted' AND reason = 'cancelled' AND job_id = '%s'", gone_id), 1);
	assert_int_equal(harness_sql_long("SELECT count(*) FROM job_events WHERE job_id = '%s'"
	    " AND type = 'orphan_deleted'", gone_id), 1);
	harness_get_ok(F.admin, "/v1/audit?resource_type=job&resource_id=%s", gone_id);
	assert_non_null(strstr(harness_r.body, "orphan.delete"));
	assert_non_null(strstr(harness_r.body, "late-apply"));
	assert_true(harness_metric("fleetd_orphans_deleted_total ") >= 1);
	assert_true(harness_metric("fleetd_orphans_found_total{reason=\"cancelled\"} ") >= 1);
	free(attempt);
}

/* A name deleted once comes back as a later attempt's orphan (a RayService keeps its name
 * across attempts): the second deletion is recorded for that attempt (row, event, audit),
 * and an earlier attempt's 'abandoned' does not stick to it. */
static void
test_same_name_again(void **state)
{
	char *attempt = harness_sql_str("SELECT (greatest(attempt, 1) + 1)::text FROM jobs"
	    " WHERE id = '%s'", gone_id);

	(void)state;
	/* as if the first attempt had been fenced (move.c fence_source) before it went */
	harness_sql("UPDATE orphans SET reason = 'abandoned' WHERE name = 'late-apply'");
	plant("late-apply", gone_id, attempt, ENV);
	assert_true(harness_wait(object_gone, "late-apply", 20));
	assert_int_equal(harness_wait_long(10, 2, "SELECT count(*) FROM job_events WHERE"
	    " job_id = '%s' AND type = 'orphan_deleted'", gone_id), 2);
	assert_int_equal(harness_sql_long("SELECT count(*) FROM orphans WHERE name = 'late-apply'"
	    " AND state = 'deleted' AND reason = 'cancelled' AND attempt = %s", attempt), 1);
	assert_int_equal(harness_sql_long("SELECT count(*) FROM audit_log WHERE action ="
	    " 'orphan.delete' AND resource_id = '%s'", gone_id), 2);
	free(attempt);
}

/* Whether the /metrics sample (name, labels and the space) is at least 1. */
static bool
counted(void *sample)
{
	return harness_metric(sample) >= 1;
}

/* FLEETD_ORPHAN_SWEEP=report: the orphan is recorded and counted, not deleted. */
static void
test_report_mode(void **state)
{
	(void)state;
	restart_fleetd("report");
	plant("late-apply-2", gone_id, "1", ENV);
	assert_int_equal(harness_wait_long(10, 1, "SELECT count(*) FROM orphans WHERE name ="
	    " 'late-apply-2' AND state = 'reported'"), 1);
	assert_int_equal(objects_named("late-apply-2"), 1);
	/* counted just after the row commits (queue/follow/sweep.c: sweep_cluster) */
	assert_true(harness_wait(counted, "fleetd_orphans_reported_total ", 10));
	assert_true(in_state(live_id, "running"));
	restart_fleetd("delete");
	assert_true(harness_wait(object_gone, "late-apply-2", 20));
}

/* Labels are anyone's: on a member of ENV, objects labelled with a prod job's id (labelled
 * prod, or ENV) are left alone, and nothing is written about them (no orphan row, no event
 * in the prod job's history, no audit row). */
static void
test_other_environment_labels(void **state)
{
	static const char *const prod_job = "d2000000-0000-4000-8000-00000000000a";

	(void)state;
	harness_post_created(F.admin, "/v1/environments", "{\"name\":\"prod\"}");
	harness_sql("INSERT INTO queues (id, name, environment) VALUES"
	    " ('c2000000-0000-4000-8000-00000000000a', 'prod-q', 'prod')");
	harness_sql("INSERT INTO jobs (id, name, environment, queue_id, kind, priority_class,"
	    " priority, spec, state, attempt, updated_at) VALUES ('%s', 'prod-job', 'prod',"
	    " 'c2000000-0000-4000-8000-00000000000a', 'RayJob', 'default', 100, '{}', 'running',"
	    " 2, now() - interval '1 hour')", prod_job);
	plant("prod-label", prod_job, "1", "prod");
	plant("prod-job-here", prod_job, "1", ENV);
	sleep(4);	/* eight sweep rounds */
	assert_int_equal(objects_named("prod-label"), 1);
	assert_int_equal(objects_named("prod-job-here"), 1);
	assert_int_equal(harness_sql_long("SELECT count(*) FROM job_events WHERE job_id = '%s'",
	    prod_job), 0);
	assert_int_equal(harness_sql_long("SELECT count(*) FROM orphans WHERE job_id = '%s'",
	    prod_job), 0);
	assert_int_equal(harness_sql_long("SELECT count(*) FROM audit_log WHERE environment ="
	    " 'prod' AND action = 'orphan.delete'"), 0);
}

static bool
unreachable(void *arg)
{
	(void)arg;
	return harness_sql_long("SELECT count(*) FROM clusters WHERE state = 'unreachable'") == 1;
}

/* Evacuation is refused on a healthy source, explained (since when, the flag) on an
 * unreachable one, and held back before FLEETD_EVACUATE_AFTER (120 s by default). */
static void
test_evacuation_refusals(void **state)
{
	json_t *fault = NULL;

	(void)state;
	harness_call("POST", oper, "{\"target\":{\"region\":\"us-east-1\"},\"source\":\"elsewhere\"}",
	    "/v1/jobs/%s/move", live_id);
	harness_expect_problem(NULL, 400, "move.bad_source", "/source");
	harness_call("POST", oper, "{\"target\":{\"region\":\"us-east-1\"},\"source\":"
	    "\"unreachable\"}", "/v1/jobs/%s/move", live_id);
	harness_expect_problem(NULL, 409, "move.source_reachable", "/source");
	harness_call("POST", oper, "{\"source\":\"maybe\"}", "/v1/clusters/%s/drain", cluster_id);
	harness_expect_problem(NULL, 400, "move.bad_source", "/source");
	harness_call("POST", oper, "{\"sauce\":\"unreachable\"}", "/v1/clusters/%s/drain",
	    cluster_id);
	harness_expect_problem(NULL, 400, "api.unknown_field", NULL);
	assert_int_equal(harness_sql_long("SELECT count(*) FROM clusters WHERE cordoned AND id ="
	    " '%s'", cluster_id), 0);	/* a refused drain cordons nothing */

	harness_sim(&F.cs, "POST", "/_sim/faults", "{\"cluster\":\"" CLUSTER "\",\"unreachable\":"
	    "true}", &fault);
	assert_non_null(fault);
	assert_true(harness_wait(unreachable, NULL, 30));
	harness_call("POST", oper, "{\"target\":{\"region\":\"us-east-1\"}}", "/v1/jobs/%s/move",
	    live_id);
	harness_expect_problem(NULL, 409, "move.source_unreachable", NULL);
	assert_non_null(strstr(harness_js(harness_r.json, "detail"), "since"));
	assert_non_null(strstr(harness_js(harness_r.json, "detail"), "--source-unreachable"));
	harness_call("POST", oper, "{\"target\":{\"region\":\"us-east-1\"},\"source\":"
	    "\"unreachable\",\"dry_run\":true}", "/v1/jobs/%s/move", live_id);
	harness_expect_problem(NULL, 409, "move.evacuate_too_soon", "/source");
	assert_true(in_state(live_id, "running"));
	harness_sim(&F.cs, "DELETE", "/_sim/faults", NULL, NULL);
	json_decref(fault);
}

/* Whether every capacity row of the job's cluster was observed after the job was seen
 * running, compared as queue/sched/loader.c compares them (whole seconds): until then the
 * scheduler charges the job on top of a snapshot that may already show its pods. */
static bool
counted_by_snapshot(void *arg)
{
	return harness_sql_long("SELECT count(*) FROM jobs j WHERE j.id = '%s' AND"
	    " (SELECT min(extract(epoch FROM c.observed_at)::bigint) FROM capacity c WHERE"
	    " c.cluster_id = j.cluster_id) > extract(epoch FROM j.started_at)::bigint",
	    (const char *)arg) == 1;
}

/* A running job of gpus in pclass, placed on cluster and counted once by the scheduler.
 * Charged twice (the snapshot holding its pods, and in flight), a filler of 4 GPUs on the
 * 8 of TARGET leaves no room for the next one, which then preempts it (priority "low")
 * instead of running beside it. */
static char *
running_job(const char *name, const char *pclass, int gpus, const char *cluster)
{
	char *id = submit_job(name, pclass, gpus, 1);

	wait_state(id, "running", 60);
	assert_string_equal(harness_js(harness_get_ok(F.admin, "/v1/jobs/%s", id), "cluster_id"),
	    cluster);
	assert_true(harness_wait(counted_by_snapshot, id, 30));
	return id;
}

static bool
all_ready(void *arg)
{
	(void)arg;
	return harness_sql_long("SELECT count(*) FROM clusters WHERE state <> 'ready'") == 0;
}

/* TARGET's 8 GPUs are free again in a fresh snapshot (pods of a cancelled job gone). */
static bool
target_empty(void *arg)
{
	(void)arg;
	return harness_sql_long("SELECT coalesce(sum(free_accel), 0) FROM capacity WHERE"
	    " cluster_id = '%s' AND pool = 'p5' AND observed_at > now() - interval '3 seconds'",
	    target_id) == 8;
}

static bool
placed_at_target(void *arg)
{
	json_t *j = harness_get_ok(F.admin, "/v1/jobs/%s", (const char *)arg);

	return strcmp(harness_js(j, "state"), "running") == 0 &&
	    strcmp(harness_js(j, "cluster_id"), target_id) == 0;
}

static bool
checkpointing(void *arg)
{
	return harness_sql_long("SELECT count(*) FROM jobs WHERE id = '%s' AND move->>'phase' ="
	    " 'checkpointing'", (const char *)arg) == 1;
}

/* Merges data into the job's signal ConfigMap as the job would (its own patch). */
static void
ack(const char *ns, const char *cm, const char *data)
{
	struct http_result r;
	char path[256], body[512];

	snprintf(path, sizeof(path), "/api/v1/namespaces/%s/configmaps/%s", ns, cm);
	snprintf(body, sizeof(body), "{\"data\":%s}", data);
	harness_kube(&F.cs, &r, CLUSTER, "PATCH", path, "application/merge-patch+json", body);
	if (r.status != 200)
		fail_msg("ack %s: %ld %s", cm, r.status, r.body);
	harness_http_free(&r);
}

/* The mover reads the job's acknowledgement from the signal ConfigMap: a stale one (of an
 * earlier request) changes nothing; the answer to this request ends the 600 s grace at
 * once, and the job reports its checkpoint and its age. */
static void
test_checkpoint_ack(void **state)
{
	char *id, *req, *ns, cm[64], body[300], data[300];
	struct http_result r;
	json_t *j;

	(void)state;
	assert_true(harness_wait(all_ready, NULL, 30));	/* the partition above healed */
	id = submit_job("acker", "default", 1, 600);
	wait_state(id, "running", 60);
	ns = strdup(harness_js(harness_get_ok(F.admin, "/v1/jobs/%s/manifest", id),
	    "metadata.namespace"));
	snprintf(cm, sizeof(cm), "fleet-signal-%.8s-%lld", id, harness_ji(harness_get_ok(F.admin,
	    "/v1/jobs/%s", id), "attempt"));
	harness_cordon(oper, target_id, false);
	snprintf(body, sizeof(body), "{\"target\":{\"cluster_id\":\"%s\"}}", target_id);
	harness_call("POST", oper, body, "/v1/jobs/%s/move", id);
	harness_expect_status(NULL, 202);
	assert_true(harness_wait(checkpointing, id, 20));
	req = harness_sql_str("SELECT move->>'requested_at' FROM jobs WHERE id = '%s'", id);
	snprintf(body, sizeof(body), "/api/v1/namespaces/%s/configmaps/%s", ns, cm);
	harness_kube(&F.cs, &r, CLUSTER, "GET", body, NULL, NULL);
	assert_int_equal(r.status, 200);
	assert_string_equal(harness_js(r.json, "data.checkpoint_requested_at"), req);
	assert_string_equal(harness_js(r.json, "data.reason"), "move");
	harness_http_free(&r);

	ack(ns, cm, "{\"ack_uri\":\"s3://b/acker/old\",\"ack_at\":\"2020-01-01T00:00:00Z\","
	    "\"ack_requested_at\":\"2020-01-01T00:00:00Z\"}");
	sleep(2);
	assert_true(checkpointing(id));		/* a stale ack is not taken for this one */
	snprintf(data, sizeof(data), "{\"ack_uri\":\"s3://b/acker/step-7\",\"ack_at\":\"%s\","
	    "\"ack_requested_at\":\"%s\"}", req, req);
	ack(ns, cm, data);
	assert_true(harness_wait(placed_at_target, id, 30));	/* not after 600 s */
	j = harness_get_ok(F.admin, "/v1/jobs/%s", id);
	assert_string_equal(harness_js(j, "checkpoint.uri"), "s3://b/acker/step-7");
	assert_string_equal(harness_js(j, "checkpoint.at"), req);
	assert_true(json_is_integer(harness_jp(j, "checkpoint.age_seconds")));
	assert_true(harness_ji(j, "checkpoint.age_seconds") >= 0);
	assert_int_equal(harness_sql_long("SELECT count(*) FROM job_events WHERE job_id = '%s'"
	    " AND message LIKE 'checkpoint acknowledged%%' AND data->>'uri' = 's3://b/acker/step-7'",
	    id), 1);
	harness_call("POST", oper, "{}", "/v1/jobs/%s/cancel", id);
	wait_state(id, "cancelled", 30);
	harness_cordon(oper, target_id, true);
	free(id);
	free(req);
	free(ns);
}

/* A move into a full cluster: the dry run names exactly the lower-priority job; the move
 * preempts it and no other; a move that would need an equal-priority victim is refused. */
static void
test_move_preempts(void **state)
{
	char *low, *eq, *mover, *big, body[200];
	json_t *plan;

	(void)state;
	assert_true(harness_wait(all_ready, NULL, 30));	/* the partition above healed */
	assert_true(harness_wait(target_empty, NULL, 30));	/* the ack test's job is gone */
	harness_cordon(oper, target_id, false);
	harness_cordon(oper, cluster_id, true);
	low = running_job("filler-low", "low", 4, target_id);
	eq = running_job("filler-eq", "default", 4, target_id);
	harness_cordon(oper, cluster_id, false);
	harness_cordon(oper, target_id, true);
	mover = running_job("mover", "default", 4, cluster_id);
	big = running_job("big", "default", 8, cluster_id);
	harness_cordon(oper, target_id, false);
	/* the plan reads the capacity snapshot: running_job waited for one taken after each
	 * filler ran, which shows the target's node full */
	assert_int_equal(harness_sql_long("SELECT coalesce(sum(free_accel), -1) FROM capacity"
	    " WHERE cluster_id = '%s' AND pool = 'p5'", target_id), 0);

	snprintf(body, sizeof(body), "{\"target\":{\"cluster_id\":\"%s\"},\"dry_run\":true}",
	    target_id);
	harness_call("POST", oper, body, "/v1/jobs/%s/move", big);
	harness_expect_problem(NULL, 409, "move.no_capacity", NULL);	/* eq is not a victim */
	harness_call("POST", oper, body, "/v1/jobs/%s/move", mover);
	if (harness_r.status != 200) {
		char *d = harness_sql_str("SELECT string_agg(pool || ' free ' || free_accel || ' '"
		    " || (topology->'nodes')::text, '; ') FROM capacity WHERE cluster_id = '%s'"
		    " AND pool = 'p5'", target_id);
		char *jobs = harness_sql_str("SELECT string_agg(name || ' ' || state || ' ' ||"
		    " left(coalesce(cluster_id::text, '-'), 4) || ' p' || priority || ' ' ||"
		    " coalesce(placement->>'accel', ''), '; ') FROM jobs");

		fail_msg("dry run: %ld %s\ncapacity: %s\njobs: %s", harness_r.status,
		    harness_r.body, d, jobs);
	}
	plan = harness_jp(harness_r.json, "would_preempt");
	assert_int_equal(json_array_size(plan), 1);
	assert_string_equal(json_string_value(json_array_get(plan, 0)), low);
	assert_string_equal(harness_js(harness_get_ok(F.admin, "/v1/jobs/%s", low), "state"),
	    "running");	/* a dry run changes nothing */

	snprintf(body, sizeof(body), "{\"target\":{\"cluster_id\":\"%s\"},\"reason\":\"make"
	    " room\"}", target_id);
	harness_call("POST", oper, body, "/v1/jobs/%s/move", mover);
	harness_expect_status(NULL, 202);
	plan = harness_jp(harness_r.json, "plan.would_preempt");
	assert_int_equal(json_array_size(plan), 1);
	assert_string_equal(json_string_value(json_array_get(plan, 0)), low);
	assert_int_equal(harness_sql_long("SELECT count(*) FROM job_events WHERE job_id = '%s'"
	    " AND to_state = 'preempted' AND data->>'by' = '%s'", low, mover), 1);
	if (!harness_wait(placed_at_target, mover, 60)) {
		char *ev = harness_sql_str("SELECT string_agg(j.name || ' ' || coalesce(e.from_state,"
		    " '') || '>' || coalesce(e.to_state, '') || ' ' || e.message, E'\\n' ORDER BY"
		    " e.id) FROM job_events e JOIN jobs j ON j.id = e.job_id WHERE j.name IN"
		    " ('mover', 'filler-low')");

		fail_msg("mover not running at the target:\n%s", ev);
	}
	assert_int_equal(harness_sql_long("SELECT count(*) FROM job_events WHERE to_state ="
	    " 'preempted'"), 1);	/* no other job was preempted */
	assert_true(placed_at_target(eq));
	assert_false(placed_at_target(low));	/* requeued: it runs elsewhere or waits */
	free(low);
	free(eq);
	free(mover);
	free(big);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_late_apply_deleted),
		cmocka_unit_test(test_same_name_again),
		cmocka_unit_test(test_report_mode),
		cmocka_unit_test(test_other_environment_labels),
		cmocka_unit_test(test_evacuation_refusals),
		cmocka_unit_test(test_checkpoint_ack),
		cmocka_unit_test(test_move_preempts),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
