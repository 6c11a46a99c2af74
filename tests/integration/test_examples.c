/* test_examples: every job spec in examples/ (the ones README.md lists) is accepted as it is
 * written, reaches running on a cloudsim copy of the demo fleet's dev environment
 * (tests/fixtures/fleets/examples.json: the dev clusters' pools and the research queue of
 * scripts/demo.py, on the test fleet's accounts), and every manifest fleetd applied for it
 * passes ../shared/tools/validate-manifest (the real KubeRay CRD schemas). */
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

#include "tests/harness/harness.h"

static struct harness_fleet F;

/* Each example, and the state it must reach (running for all four kinds: a RayCronJob is
 * running once the member accepted it; its runs are placed later, at their schedule). */
static const struct {
	const char	*file;
	const char	*kind;
} examples[] = {
	{ "first-job.json", "RayJob" },
	{ "raycluster.json", "RayCluster" },
	{ "rayservice.json", "RayService" },
	{ "raycronjob.json", "RayCronJob" },
	{ "tpu-slice.json", "RayJob" },
	{ "h100-rack-gang.json", "RayJob" },
	{ "spot-checkpoint.json", "RayJob" },
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

/* Submitted unchanged: 201; then running; then the applied manifest validates. */
static void
test_examples_run(void **state)
{
	char *ids[NEXAMPLES];
	char path[512], file[600];

	(void)state;
	for (size_t i = 0; i < NEXAMPLES; i++) {
		json_t *body;
		char *text;

		snprintf(path, sizeof(path), FLEETD_SOURCE_DIR "/examples/%s", examples[i].file);
		body = harness_json_file(path);
		assert_string_equal(harness_js(body, "kind"), examples[i].kind);
		text = json_dumps(body, JSON_COMPACT);
		if (harness_call("POST", F.admin, text, "/v1/jobs") != 201)
			fail_msg("examples/%s: %ld %s", examples[i].file, harness_r.status,
			    harness_r.body);
		ids[i] = strdup(harness_js(harness_r.json, "id"));
		free(text);
		json_decref(body);
	}
	for (size_t i = 0; i < NEXAMPLES; i++) {
		json_t *j = harness_job_wait(F.admin, ids[i], "running", 0, 60);

		json_decref(j);
		harness_get_ok(F.admin, "/v1/jobs/%s/manifest", ids[i]);
		assert_string_equal(harness_js(harness_r.json, "kind"), examples[i].kind);
		snprintf(file, sizeof(file), "%s/example-%zu.json", F.cs.dir, i);
		assert_int_equal(json_dump_file(harness_r.json, file, JSON_INDENT(2)), 0);
		if (harness_sh(FLEETD_SOURCE_DIR "/../shared/tools/validate-manifest --quiet %s",
		    file) != 0)
			fail_msg("examples/%s: the applied manifest fails validation", examples[i].file);
		free(ids[i]);
	}
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_every_example_listed),
		cmocka_unit_test(test_examples_run),
	};

	return cmocka_run_group_tests(tests, setup, harness_fleet_teardown);
}
