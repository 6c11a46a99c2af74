/* test_examples: every job spec in examples/ (the ones README.md lists) is accepted as it is
 * written, reaches running on a cloudsim copy of the demo fleet's dev environment
 * (tests/fixtures/fleets/examples.json: the seven dev clusters of cloudsim/fleets/demo.json,
 * pool for pool, and the research queue of scripts/demo.py, on the test fleet's accounts;
 * keep it in step with the demo, or an example that runs here may not run in `make run`),
 * and every manifest fleetd applied for it passes ../shared/tools/validate-manifest (the
 * real KubeRay CRD schemas); the rack gang's manifest pins the rack it was placed in.
 * The GB200 NVL72 gang of 144 GPUs (topology pack) lands on exactly two whole racks of one
 * scale unit of dev-gke-usc1's gb200 pool (4 racks of 18 trays, 2 racks a unit, 4 trays of
 * the first rack busy): the placement, explain (racks used 2, a scattered placement 3),
 * the manifest's required affinity and cloudsim's own scheduler (the nodes its pods run
 * on) all say the same two racks. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <dirent.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/harness/harness.h"

static struct harness_fleet F;

/* Each example, and the state it must reach (running for all four kinds: a RayCronJob is
 * running once the member accepted it; its runs are placed later, at their schedule). */
static const struct {
	const char	*file;
	const char	*kind;
	bool		 rack;	/* topology rack: placed in one rack, pinned to it */
	bool		 pack;	/* topology pack: two racks of one scale unit */
} examples[] = {
	{ "first-job.json", "RayJob", false, false },
	{ "raycluster.json", "RayCluster", false, false },
	{ "rayservice.json", "RayService", false, false },
	{ "raycronjob.json", "RayCronJob", false, false },
	{ "tpu-slice.json", "RayJob", false, false },
	{ "h100-rack-gang.json", "RayJob", true, false },
	{ "spot-checkpoint.json", "RayJob", false, false },
	{ "gb200-nvl72-pack.json", "RayJob", false, true },
};
#define NEXAMPLES (sizeof(examples) / sizeof(examples[0]))

static int
setup(void **state)
{
	harness_fleet_start(&F, "examples", FLEETD_SOURCE_DIR "/tests/fixtures/fleets/examples.json",
	    "4", NULL);
	*state = &F;
	return 0;
}

/* The table above names every file of examples/ and README.md lists each of them. */
static void
test_every_example_listed(void **state)
{
	DIR *d = opendir(FLEETD_SOURCE_DIR "/examples");
	struct dirent *de;
	size_t n = 0;

	(void)state;
	assert_non_null(d);
	while ((de = readdir(d)) != NULL) {
		bool known = false;

		if (strstr(de->d_name, ".json") == NULL)
			continue;
		for (size_t i = 0; i < NEXAMPLES; i++)
			known |= strcmp(examples[i].file, de->d_name) == 0;
		if (!known)
			fail_msg("examples/%s is not submitted by this test", de->d_name);
		n++;
	}
	closedir(d);
	assert_int_equal(n, NEXAMPLES);
	for (size_t i = 0; i < NEXAMPLES; i++)
		if (harness_sh("grep -q 'examples/%s' " FLEETD_SOURCE_DIR "/README.md",
		    examples[i].file) != 0)
			fail_msg("README.md does not list examples/%s", examples[i].file);
}

/* The ids of the submitted examples: file-level so that the teardown frees them when a
 * failure (a longjmp out of the test) leaves some behind. */
static char *ids[NEXAMPLES];

static void
free_ids(void)
{
	for (size_t i = 0; i < NEXAMPLES; i++) {
		free(ids[i]);
		ids[i] = NULL;
	}
}

/* Waits up to timeout_s for example i to run; on timeout prints its events and, while it
 * is pending, every candidate cluster with the reason it lost (GET placement), then fails. */
static void
wait_running(size_t i, double timeout_s)
{
	double end = harness_now_s() + timeout_s;
	char state[32] = "", reason[64] = "";
	json_t *c;
	size_t k;

	while (harness_now_s() < end) {
		json_t *j = harness_job(F.admin, ids[i]);

		snprintf(state, sizeof(state), "%s", harness_js(j, "state"));
		snprintf(reason, sizeof(reason), "%s", harness_js(j, "reason"));
		json_decref(j);
		if (strcmp(state, "running") == 0)
			return;
		usleep(250 * 1000);
	}
	harness_job_print_events(F.admin, ids[i]);
	if (harness_call("GET", F.admin, NULL, "/v1/jobs/%s/placement", ids[i]) == 200)
		json_array_foreach(json_object_get(harness_r.json, "clusters"), k, c)
			print_message("  candidate %s %s %s: %s\n", harness_js(c, "provider"),
			    harness_js(c, "region"), harness_js(c, "cluster"), harness_js(c, "reason"));
	fail_msg("examples/%s: job %s is %s (%s), not running; fleetd log %s", examples[i].file,
	    ids[i], state, reason, harness_log());
}

/* The rack (fleet.io/rack, which cloudsim sets beside each platform's own label) of every
 * node a pod of job id runs on, as cloudsim's scheduler bound them; how many pods. */
static int
pods_in_racks(const char *id, json_t *racks, int *outside)
{
	struct http_result r;
	json_t *pods, *nodes, *p, *n;
	size_t i, k;
	int count = 0;

	*outside = 0;
	harness_kube(&F.cs, &r, "dev-gke-usc1", "GET", "/api/v1/nodes", NULL, NULL);
	nodes = json_loads(r.body, 0, NULL);
	harness_http_free(&r);
	harness_kube(&F.cs, &r, "dev-gke-usc1", "GET", "/api/v1/pods", NULL, NULL);
	pods = json_loads(r.body, 0, NULL);
	harness_http_free(&r);
	json_array_foreach(json_object_get(pods, "items"), i, p) {
		const char *node = harness_js(p, "spec.nodeName"), *rack = NULL;
		bool in = false;
		json_t *v;

		json_t *l = json_object_get(json_object_get(p, "metadata"), "labels");

		if (node[0] == '\0' || !json_is_string(json_object_get(l, "fleet.io/job-id")) ||
		    strcmp(json_string_value(json_object_get(l, "fleet.io/job-id")), id) != 0 ||
		    !json_is_string(json_object_get(l, "ray.io/node-type")) ||
		    strcmp(json_string_value(json_object_get(l, "ray.io/node-type")), "worker") != 0)
			continue;
		json_array_foreach(json_object_get(nodes, "items"), k, n)
			if (strcmp(harness_js(n, "metadata.name"), node) == 0)
				rack = json_string_value(json_object_get(json_object_get(
				    json_object_get(n, "metadata"), "labels"), "fleet.io/rack"));
		json_array_foreach(racks, k, v)
			in |= rack != NULL && strcmp(rack, json_string_value(v)) == 0;
		*outside += !in;
		count++;
	}
	json_decref(pods);
	json_decref(nodes);
	return count;
}

/* topology pack: the placement, explain, the manifest and cloudsim's scheduler agree on
 * two racks of one scale unit. */
static void
check_pack(size_t i, const char *file)
{
	json_t *job = json_incref(harness_get_ok(F.admin, "/v1/jobs/%s", ids[i])), *pl, *racks;
	json_t *topo;
	int outside = 0, pods;

	pl = json_object_get(job, "placement");
	racks = json_object_get(pl, "racks");
	if (json_array_size(racks) != 2 || harness_js(pl, "block")[0] == '\0')
		fail_msg("examples/%s: placed on %zu racks, block '%s'", examples[i].file,
		    json_array_size(racks), harness_js(pl, "block"));
	/* both racks of the second unit: the first has four busy trays */
	for (size_t k = 0; k < 2; k++)
		if (strstr(json_string_value(json_array_get(racks, k)), "-gb200-0") == NULL ||
		    (strcmp(json_string_value(json_array_get(racks, k)) +
		    strlen(json_string_value(json_array_get(racks, k))) - 2, "02") != 0 &&
		    strcmp(json_string_value(json_array_get(racks, k)) +
		    strlen(json_string_value(json_array_get(racks, k))) - 2, "03") != 0))
			fail_msg("examples/%s: rack %s is not a whole rack of the second unit",
			    examples[i].file, json_string_value(json_array_get(racks, k)));
	for (size_t k = 0; k < 2; k++)
		if (harness_sh("grep -q '\"%s\"' %s", json_string_value(json_array_get(racks, k)),
		    file) != 0)
			fail_msg("examples/%s: the manifest does not require rack %s",
			    examples[i].file, json_string_value(json_array_get(racks, k)));
	topo = json_object_get(json_object_get(harness_get_ok(F.admin, "/v1/jobs/%s/placement",
	    ids[i]), "decision"), "topology");
	assert_string_equal(harness_js(topo, "type"), "pack");
	assert_int_equal(harness_ji(topo, "racks_used"), 2);
	assert_int_equal(harness_ji(topo, "racks_if_scattered"), 3);
	assert_int_equal(json_array_size(json_object_get(topo, "racks")), 2);
	pods = pods_in_racks(ids[i], racks, &outside);
	assert_int_equal(pods, 36);
	assert_int_equal(outside, 0);
	json_decref(job);
}

/* Submitted unchanged: 201; then running; then the applied manifests validate (one run of
 * the validator over all of them: each run loads every CRD schema again). */
static void
test_examples_run(void **state)
{
	char path[512], file[600], files[NEXAMPLES * 600] = "";
	size_t flen = 0;

	(void)state;
	for (size_t i = 0; i < NEXAMPLES; i++) {
		json_t *body;
		char *text;
		long st;

		snprintf(path, sizeof(path), FLEETD_SOURCE_DIR "/examples/%s", examples[i].file);
		body = harness_json_file(path);
		assert_string_equal(harness_js(body, "kind"), examples[i].kind);
		text = json_dumps(body, JSON_COMPACT);
		json_decref(body);
		st = harness_call("POST", F.admin, text, "/v1/jobs");
		free(text);
		if (st != 201)
			fail_msg("examples/%s: %ld %s", examples[i].file, st, harness_r.body);
		ids[i] = strdup(harness_js(harness_r.json, "id"));
	}
	for (size_t i = 0; i < NEXAMPLES; i++) {
		char rack[128] = "";

		wait_running(i, 60);
		if (examples[i].rack) {	/* the gang's rack, as the placement names it */
			json_t *pl = json_object_get(harness_get_ok(F.admin, "/v1/jobs/%s", ids[i]),
			    "placement");

			snprintf(rack, sizeof(rack), "%s", harness_js(pl, "rack"));
			if (rack[0] == '\0')
				fail_msg("examples/%s: placed without a rack", examples[i].file);
		}
		harness_get_ok(F.admin, "/v1/jobs/%s/manifest", ids[i]);
		assert_string_equal(harness_js(harness_r.json, "kind"), examples[i].kind);
		snprintf(file, sizeof(file), "%s/example-%zu.json", F.cs.dir, i);
		assert_int_equal(json_dump_file(harness_r.json, file, JSON_INDENT(2)), 0);
		flen += (size_t)snprintf(files + flen, sizeof(files) - flen, " '%s'", file);
		assert_true(flen < 3500);	/* harness_sh takes 4 KiB */
		if (rack[0] != '\0' && harness_sh("grep -q '\"%s\"' %s", rack, file) != 0)
			fail_msg("examples/%s: the applied manifest does not pin rack %s",
			    examples[i].file, rack);
		if (examples[i].pack)
			check_pack(i, file);
	}
	/* it names each failing file (example-<i>.json: examples[i]) and exits non-zero */
	if (harness_sh(FLEETD_SOURCE_DIR "/../shared/tools/validate-manifest --quiet%s", files) != 0)
		fail_msg("an applied manifest fails validation (example-<i>.json above is the i-th"
		    " example of the table)");
	free_ids();
}

static int
teardown(void **state)
{
	free_ids();
	return harness_fleet_teardown(state);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_every_example_listed),
		cmocka_unit_test(test_examples_run),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
