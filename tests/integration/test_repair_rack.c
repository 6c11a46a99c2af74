/* test_repair_rack: a rack-topology job whose whole rack is lost (issue 24, item 2).  Every
 * node of the job's rack is deleted (as `kubectl delete node` does it); the repair finds no
 * spare in the rack and moves the job through the move machinery to another cluster: its
 * events say rack_lost with the rack and the target, it runs again there (attempt 2), never
 * on a node of the lost rack.  (A same-cluster re-placement on another rack is not done:
 * the move planner keeps the source cluster off-limits.) */
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

/* tests/fixtures/fleets/moves.json: two HyperPod regions of p5 nodes, two to a rack */
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

static void
test_rack_lost_moves(void **state)
{
	char *b = harness_job_body(ENV, "ml", H100, 8, "{\"name\":\"racked\",\"topology\":"
	    "\"rack\",\"worker_groups\":[{\"name\":\"w\",\"replicas\":1,\"cpu\":\"1\","
	    "\"memory\":\"1Gi\",\"accelerator\":{\"flavor\":\"" H100 "\",\"count\":8}}]}");
	char *id, *rack, *cl, *s;
	json_t *lost, *v, *d;
	size_t i;

	(void)state;
	harness_cordon(oper, F.cluster_id[USE1], true);	/* start it in us-west-2 */
	id = strdup(harness_js(harness_post_created(oper, "/v1/jobs", b), "id"));
	free(b);
	json_decref(harness_job_wait(oper, id, "running", 1, 90));
	cl = harness_sql_str("SELECT cluster_id::text FROM jobs WHERE id = '%s'", id);
	assert_string_equal(cl, F.cluster_id[USW2]);
	free(cl);
	rack = harness_sql_str("SELECT a->>'rack' FROM jobs, jsonb_array_elements(placement->"
	    "'allocs') a WHERE id = '%s' AND (a->>'group')::int > 0 LIMIT 1", id);
	assert_true(rack != NULL && rack[0] != '\0');
	lost = rack_nodes(F.name[USW2], rack);
	assert_true(json_array_size(lost) >= 1);
	harness_cordon(oper, F.cluster_id[USE1], false);
	json_array_foreach(lost, i, v)
		delete_node(F.name[USW2], json_string_value(v));
	harness_job_wait_event(id, "rack_lost", NULL, 90);
	s = harness_sql_str("SELECT data::text FROM job_events WHERE job_id = '%s' AND type ="
	    " 'rack_lost' ORDER BY id DESC LIMIT 1", id);
	d = json_loads(s, 0, NULL);
	free(s);
	assert_non_null(d);
	assert_string_equal(harness_js(d, "rack"), rack);
	assert_string_equal(harness_js(d, "target_cluster_id"), F.cluster_id[USE1]);
	assert_true(strlen(harness_js(d, "target_cluster")) > 0);
	json_decref(d);
	printf("rack %s of %s lost (%zu node(s) deleted): rack_lost, moving to %s\n", rack,
	    F.name[USW2], json_array_size(lost), F.name[USE1]);
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
		cmocka_unit_test(test_rack_lost_moves),
	};

	return cmocka_run_group_tests(tests, setup, harness_fleet_teardown);
}
