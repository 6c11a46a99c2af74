/* test_repair_rack: a rack-topology job whose whole rack is lost (issue 24, item 1).  Every
 * node of the job's rack is deleted (as `kubectl delete node` does it); the repair finds no
 * spare in the rack and moves the job through the move machinery: to another rack of the
 * same cluster when one has room, else to another cluster.  Its events say rack_lost with
 * the rack and the target, it runs again there (attempt 2), never on a node of the lost
 * rack. */
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
#define TIME_SCALE	"4"

/* tests/fixtures/fleets/moves.json: two HyperPod regions of p5 nodes, two to a rack (us-west-2
 * has 3: racks of 2 and 1) */
enum { USW2, USE1 };

static struct harness_fleet F;
static const char *oper;

static int
setup(void **state)
{
	harness_fleet_start(&F, "repair_rack", FLEETD_SOURCE_DIR
	    "/tests/fixtures/fleets/moves.json", TIME_SCALE, NULL);
	oper = harness_fleet_token(&F, "operator", ENV);
	*state = &F;
	return 0;
}

/* The member's nodes that carry a label whose value is rack (a new array of names). */
static json_t *
rack_nodes(const char *cluster, const char *rack)
{
	struct http_result r = { 0 };
	json_t *n, *out = json_array(), *v;
	const char *k;
	size_t i;

	harness_kube(&F.cs, &r, cluster, "GET", "/api/v1/nodes", NULL, NULL);
	if (r.status != 200)
		fail_msg("GET nodes: %ld", r.status);
	json_array_foreach(json_object_get(r.json, "items"), i, n) {
		json_t *md = json_object_get(n, "metadata");
		bool in = false;

		json_object_foreach(json_object_get(md, "labels"), k, v)
			in = in || (json_is_string(v) && strcmp(json_string_value(v), rack) == 0);
		if (in)
			json_array_append_new(out, json_string(json_string_value(json_object_get(md,
			    "name"))));
	}
	free(r.body);
	free(r.headers);
	json_decref(r.json);
	return out;
}

static void
delete_node(const char *cluster, const char *node)
{
	struct http_result r = { 0 };
	char path[200];

	snprintf(path, sizeof(path), "/api/v1/nodes/%s", node);
	harness_kube(&F.cs, &r, cluster, "DELETE", path, NULL, NULL);
	if (r.status != 200)
		fail_msg("DELETE %s: %ld %s", path, r.status, r.body ? r.body : "");
	free(r.body);
	free(r.headers);
	json_decref(r.json);
}

/* Deletes every node of lost, those the job's placement names last (so the repair never
 * finds a spare in the rack meanwhile). */
static void
delete_rack(const char *cluster, const char *id, json_t *lost)
{
	json_t *v;
	size_t i;

	for (int pass = 0; pass < 2; pass++)
		json_array_foreach(lost, i, v) {
			bool placed = harness_sql_long("SELECT count(*) FROM jobs, jsonb_array_elements("
			    "placement->'allocs') a WHERE id = '%s' AND a->>'node' = '%s'", id,
			    json_string_value(v)) > 0;

			if (placed == (pass == 1))
				delete_node(cluster, json_string_value(v));
		}
}

/* A rack job running on us-west-2; its rack's name (malloc'd) in *rack. */
static char *
start_rack_job(const char *name, char **rack)
{
	char patch[400], *b, *id, *cl;

	snprintf(patch, sizeof(patch), "{\"name\":\"%s\",\"topology\":\"rack\","
	    "\"worker_groups\":[{\"name\":\"w\",\"replicas\":1,\"cpu\":\"1\",\"memory\":"
	    "\"1Gi\",\"accelerator\":{\"flavor\":\"" H100 "\",\"count\":8}}]}", name);
	b = harness_job_body(ENV, "ml", H100, 8, patch);
	harness_cordon(oper, F.cluster_id[USE1], true);	/* start it in us-west-2 */
	id = strdup(harness_js(harness_post_created(oper, "/v1/jobs", b), "id"));
	free(b);
	json_decref(harness_job_wait(oper, id, "running", 1, 90));
	harness_cordon(oper, F.cluster_id[USE1], false);
	cl = harness_sql_str("SELECT cluster_id::text FROM jobs WHERE id = '%s'", id);
	assert_string_equal(cl, F.cluster_id[USW2]);
	free(cl);
	*rack = harness_sql_str("SELECT a->>'rack' FROM jobs, jsonb_array_elements(placement->"
	    "'allocs') a WHERE id = '%s' AND (a->>'group')::int > 0 LIMIT 1", id);
	assert_true(*rack != NULL && (*rack)[0] != '\0');
	return id;
}

/* The newest rack_lost event's data (new reference). */
static json_t *
rack_lost_data(const char *id)
{
	char *s;
	json_t *d;

	harness_job_wait_event(id, "rack_lost", NULL, 90);
	s = harness_sql_str("SELECT data::text FROM job_events WHERE job_id = '%s' AND type ="
	    " 'rack_lost' ORDER BY id DESC LIMIT 1", id);
	d = json_loads(s, 0, NULL);
	free(s);
	assert_non_null(d);
	return d;
}

/* The job's rack is lost while another rack of its cluster is free (and another cluster
 * has room too): it moves to that rack of the same cluster first — rack_lost says
 * same_cluster, attempt 2 runs on us-west-2, on no node of the lost rack, which joins
 * the job's avoid_nodes.  Before: the move planner kept the source cluster off-limits and
 * the job went to us-east-1. */
static void
test_rack_lost_same_cluster_first(void **state)
{
	char *rack, *id = start_rack_job("racked", &rack), *cl, *r2;
	json_t *lost = rack_nodes(F.name[USW2], rack), *d, *v;
	size_t i;

	(void)state;
	assert_true(json_array_size(lost) >= 1);
	delete_rack(F.name[USW2], id, lost);
	d = rack_lost_data(id);
	assert_string_equal(harness_js(d, "rack"), rack);
	assert_true(json_is_true(json_object_get(d, "same_cluster")));
	assert_string_equal(harness_js(d, "target_cluster_id"), F.cluster_id[USW2]);
	json_decref(d);
	json_decref(harness_job_wait(oper, id, "running", 2, 180));
	cl = harness_sql_str("SELECT cluster_id::text FROM jobs WHERE id = '%s'", id);
	assert_string_equal(cl, F.cluster_id[USW2]);
	free(cl);
	r2 = harness_sql_str("SELECT a->>'rack' FROM jobs, jsonb_array_elements(placement->"
	    "'allocs') a WHERE id = '%s' AND (a->>'group')::int > 0 LIMIT 1", id);
	assert_true(strcmp(r2, rack) != 0);
	printf("rack %s of %s lost (%zu node(s) deleted): rack_lost, moved to rack %s of the"
	    " same cluster\n", rack, F.name[USW2], json_array_size(lost), r2);
	json_array_foreach(lost, i, v) {
		assert_int_equal(harness_sql_long("SELECT count(*) FROM jobs, jsonb_array_elements("
		    "placement->'allocs') a WHERE id = '%s' AND a->>'node' = '%s'", id,
		    json_string_value(v)), 0);
		assert_true(harness_sql_long("SELECT count(*) FROM jobs, jsonb_array_elements("
		    "avoid_nodes) a WHERE id = '%s' AND a->>'node' = '%s'", id,
		    json_string_value(v)) >= 1);
	}
	assert_true(harness_sql_long("SELECT count(*) FROM job_events WHERE job_id = '%s' AND"
	    " to_state = 'moving' AND message LIKE 'rack_lost:%%'", id) == 1);
	/* its room goes back for the next case */
	assert_int_equal(harness_call("POST", oper, NULL, "/v1/jobs/%s/cancel", id), 200);
	json_decref(harness_job_wait(oper, id, "cancelled", 0, 60));
	json_decref(lost);
	free(r2);
	free(rack);
	free(id);
}

/* No rack of its cluster can take it (its rack was the last one left there): the job
 * moves to another cluster — rack_lost without same_cluster, attempt 2 on us-east-1,
 * never on a node of the lost rack. */
static void
test_rack_lost_other_cluster(void **state)
{
	char *rack, *id = start_rack_job("racked2", &rack), *cl;
	json_t *lost = rack_nodes(F.name[USW2], rack), *d, *v;
	size_t i;

	(void)state;
	assert_true(json_array_size(lost) >= 1);
	delete_rack(F.name[USW2], id, lost);
	d = rack_lost_data(id);
	assert_string_equal(harness_js(d, "rack"), rack);
	assert_false(json_is_true(json_object_get(d, "same_cluster")));
	assert_string_equal(harness_js(d, "target_cluster_id"), F.cluster_id[USE1]);
	assert_true(strlen(harness_js(d, "target_cluster")) > 0);
	json_decref(d);
	printf("rack %s of %s lost (%zu node(s) deleted), no other rack there: moving to %s\n",
	    rack, F.name[USW2], json_array_size(lost), F.name[USE1]);
	json_decref(harness_job_wait(oper, id, "running", 2, 180));
	cl = harness_sql_str("SELECT cluster_id::text FROM jobs WHERE id = '%s'", id);
	assert_string_equal(cl, F.cluster_id[USE1]);
	free(cl);
	json_array_foreach(lost, i, v)
		assert_int_equal(harness_sql_long("SELECT count(*) FROM jobs, jsonb_array_elements("
		    "placement->'allocs') a WHERE id = '%s' AND a->>'node' = '%s'", id,
		    json_string_value(v)), 0);
	assert_true(harness_sql_long("SELECT count(*) FROM job_events WHERE job_id = '%s' AND"
	    " to_state = 'moving' AND message LIKE 'rack_lost:%%'", id) == 1);
	json_decref(lost);
	free(rack);
	free(id);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_rack_lost_same_cluster_first),
		cmocka_unit_test(test_rack_lost_other_cluster),
	};

	return cmocka_run_group_tests(tests, setup, harness_fleet_teardown);
}
