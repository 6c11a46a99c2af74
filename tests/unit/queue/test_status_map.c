/* test_status_map: KubeRay status fields to job phases, spot notices, query escaping. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "queue/dispatch/dispatch.h"
#include "queue/follow/status.h"

struct map_case {
	const char		*kind;
	const char		*live;		/* object JSON */
	enum status_phase	 phase;
	const char		*word;		/* expected word, NULL = not checked */
	const char		*msg_has;	/* substring of the message, NULL = empty */
};

static const struct map_case cases[] = {
	{ "RayJob", "{\"status\":{}}", STATUS_PENDING, "New", NULL },
	{ "RayJob", "{\"status\":{\"jobDeploymentStatus\":\"Initializing\"}}", STATUS_PENDING,
	  "Initializing", NULL },
	{ "RayJob", "{\"status\":{\"jobDeploymentStatus\":\"Running\",\"jobStatus\":\"RUNNING\"}}",
	  STATUS_RUNNING, "Running/RUNNING", NULL },
	{ "RayJob", "{\"status\":{\"jobDeploymentStatus\":\"Retrying\",\"reason\":\"AppFailed\"}}",
	  STATUS_RUNNING, "Retrying", "AppFailed" },
	{ "RayJob", "{\"status\":{\"jobDeploymentStatus\":\"Complete\",\"jobStatus\":"
	  "\"SUCCEEDED\"}}", STATUS_SUCCEEDED, "Complete/SUCCEEDED", NULL },
	{ "RayJob", "{\"status\":{\"jobDeploymentStatus\":\"Complete\",\"jobStatus\":\"FAILED\","
	  "\"message\":\"exit 1\"}}", STATUS_FAILED, "Complete/FAILED", "exit 1" },
	{ "RayJob", "{\"status\":{\"jobDeploymentStatus\":\"Failed\",\"reason\":"
	  "\"DeadlineExceeded\",\"message\":\"passed activeDeadlineSeconds\"}}", STATUS_FAILED,
	  "Failed", "DeadlineExceeded: passed activeDeadlineSeconds" },
	{ "RayJob", "{\"status\":{\"jobDeploymentStatus\":\"ValidationFailed\"}}", STATUS_FAILED,
	  NULL, "ValidationFailed" },
	{ "RayJob", "{\"status\":{\"jobDeploymentStatus\":\"Suspended\"}}", STATUS_SUSPENDED,
	  "Suspended", NULL },
	{ "RayJob", "{\"status\":\"garbage\"}", STATUS_PENDING, "New", NULL },
	{ "RayCluster", "{\"status\":{\"state\":\"ready\"}}", STATUS_RUNNING, "ready", NULL },
	{ "RayCluster", "{\"status\":{\"conditions\":[{\"type\":\"RayClusterProvisioned\","
	  "\"status\":\"True\"}]}}", STATUS_RUNNING, "provisioning", NULL },
	{ "RayCluster", "{\"status\":{\"conditions\":[{\"type\":\"RayClusterProvisioned\","
	  "\"status\":\"False\"},{\"type\":\"ReplicaFailure\",\"status\":\"True\",\"reason\":"
	  "\"FailedCreateWorkerPod\",\"message\":\"quota\"}]}}", STATUS_PENDING, NULL,
	  "FailedCreateWorkerPod: quota" },
	{ "RayCluster", "{\"status\":{\"state\":\"suspended\"}}", STATUS_SUSPENDED, NULL, NULL },
	{ "RayCluster", "{\"status\":{\"state\":\"failed\",\"reason\":\"bad\"}}", STATUS_FAILED,
	  NULL, "bad" },
	{ "RayService", "{\"status\":{\"serviceStatus\":\"Running\"}}", STATUS_RUNNING, "Running",
	  NULL },
	{ "RayService", "{\"status\":{\"conditions\":[{\"type\":\"Ready\",\"status\":\"True\"}]}}",
	  STATUS_RUNNING, "Ready", NULL },
	{ "RayService", "{\"status\":{\"conditions\":[{\"type\":\"Ready\",\"status\":\"False\"}]}}",
	  STATUS_PENDING, "Initializing", NULL },
	{ "RayCronJob", "{\"spec\":{},\"status\":{\"lastScheduleTime\":\"2026-01-01T00:00:00Z\"}}",
	  STATUS_RUNNING, "last scheduled 2026-01-01T00:00:00Z", NULL },
	{ "RayCronJob", "{\"spec\":{\"suspend\":true}}", STATUS_SUSPENDED, NULL, NULL },
	{ "Unknown", "{\"status\":{\"state\":\"ready\"}}", STATUS_PENDING, "unknown", NULL },
};

static void
test_map(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const struct map_case *c = &cases[i];
		json_t *live = json_loads(c->live, 0, NULL);
		struct status_obs o;

		assert_non_null(live);
		status_map(c->kind, live, &o);
		if (o.phase != c->phase)
			fail_msg("case %zu (%s %s): phase %s, want %s", i, c->kind, c->live,
			    status_phase_name(o.phase), status_phase_name(c->phase));
		if (c->word != NULL && strcmp(o.word, c->word) != 0)
			fail_msg("case %zu: word '%s', want '%s'", i, o.word, c->word);
		if (c->msg_has == NULL && c->phase != STATUS_FAILED && o.message[0] != '\0')
			fail_msg("case %zu: unexpected message '%s'", i, o.message);
		if (c->msg_has != NULL && strstr(o.message, c->msg_has) == NULL)
			fail_msg("case %zu: message '%s' lacks '%s'", i, o.message, c->msg_has);
		json_decref(live);
	}
}

static void
test_map_null(void **state)
{
	struct status_obs o;

	(void)state;
	status_map(NULL, NULL, &o);
	assert_int_equal(o.phase, STATUS_PENDING);
	status_map("RayJob", NULL, &o);
	assert_int_equal(o.phase, STATUS_PENDING);
}

static void
test_spot(void **state)
{
	(void)state;
	assert_true(status_event_spot("PreemptionNotice", "node will be reclaimed"));
	assert_true(status_event_spot("Preempted", NULL));
	assert_true(status_event_spot("Evicted", "spot node reclaimed"));
	assert_false(status_event_spot("Evicted", "The node was low on resource: memory"));
	assert_false(status_event_spot("FailedScheduling", "0/3 nodes are available"));
	assert_false(status_event_spot(NULL, NULL));
}

static void
test_escape(void **state)
{
	char out[32];

	(void)state;
	assert_true(member_query_escape("a-Z_0.~", out, sizeof(out)));
	assert_string_equal(out, "a-Z_0.~");
	assert_true(member_query_escape("a=b/c+d", out, sizeof(out)));
	assert_string_equal(out, "a%3Db%2Fc%2Bd");
	assert_false(member_query_escape("0123456789012345678901234567890123", out, sizeof(out)));
	assert_false(member_query_escape("==========", out, 30));
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_map),
		cmocka_unit_test(test_map_null),
		cmocka_unit_test(test_spot),
		cmocka_unit_test(test_escape),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
