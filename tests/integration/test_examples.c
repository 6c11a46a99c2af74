/* test_examples: every job spec in examples/ (the ones README.md lists) is accepted as it is
 * written, reaches running on a cloudsim copy of the demo fleet's dev environment
 * (tests/fixtures/fleets/examples.json: the seven dev clusters of cloudsim/fleets/demo.json,
 * pool for pool, and the research queue of scripts/demo.py, on the test fleet's accounts;
 * keep it in step with the demo, or an example that runs here may not run in `make run`),
 * and every manifest fleetd applied for it passes ../shared/tools/validate-manifest (the
 * real KubeRay CRD schemas); the rack gang's manifest pins the rack it was placed in. */
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
} examples[] = {
	{ "first-job.json", "RayJob", false },
	{ "raycluster.json", "RayCluster", false },
	{ "rayservice.json", "RayService", false },
	{ "raycronjob.json", "RayCronJob", false },
	{ "tpu-slice.json", "RayJob", false },
	{ "h100-rack-gang.json", "RayJob", true },
	{ "spot-checkpoint.json", "RayJob", false },
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

/* Submitted unchanged: 201; then running; then the applied manifest validates. */
static void
test_examples_run(void **state)
{
	char path[512], file[600];

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
		if (harness_sh(FLEETD_SOURCE_DIR "/../shared/tools/validate-manifest --quiet %s",
		    file) != 0)
			fail_msg("examples/%s: the applied manifest fails validation", examples[i].file);
		if (rack[0] != '\0' && harness_sh("grep -q '\"%s\"' %s", rack, file) != 0)
			fail_msg("examples/%s: the applied manifest does not pin rack %s",
			    examples[i].file, rack);
	}
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
