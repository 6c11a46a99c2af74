/* test_iam_drift: continuous IAM verification against cloudsim — a HyperPod cloud whose
 * trust policy loses its sts:ExternalId condition (/_sim/iam) is found drifted by
 * POST /v1/clouds/{id}/iam/verify and by the iam-verify worker: degraded, with the failed
 * check, an audit row and metrics; it returns to active once the policy is fixed.  An AKS
 * cloud whose control-plane identity trusts a federated subject other than fleetd's, and a
 * GKE cloud whose control-plane service account another identity may impersonate,
 * likewise. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/harness/harness.h"

#define js	harness_js

static struct harness_cs cs;
static struct fleetd_proc fd;
static char dburl[512], cloud[40], azcloud[40], gcloud[40];
static char *admin;
static char cp[400], ext[200];

static int
setup(void **state)
{
	(void)state;
	harness_db_create("iamdrift", dburl, sizeof(dburl));
	harness_cs_start(&cs, NULL, NULL);
	harness_cs_env_add(&cs, "FLEETD_WORKERS=iam-verify,poller,scheduler");
	harness_cs_env_add(&cs, "FLEETD_IAM_VERIFY_INTERVAL=1");
	harness_fleetd_start(&fd, dburl, (const char *const *)cs.env);
	admin = harness_keep(harness_token(dburl, "admin", "*"));
	harness_post_created(admin, "/v1/environments", "{\"name\":\"test\"}");
	harness_register(&cs, admin, "test-hp-usw2", cloud, NULL);
	harness_get_ok(admin, "/v1/clouds/%s", cloud);
	snprintf(cp, sizeof(cp), "%s", js(harness_r.json, "iam.control_plane_role"));
	snprintf(ext, sizeof(ext), "%s", js(harness_r.json, "external_id"));
	harness_register(&cs, admin, "test-aks-eus", azcloud, NULL);
	harness_register(&cs, admin, "test-gke-usc1", gcloud, NULL);
	return 0;
}

/* The trust policy's external-id condition: removed (drift) or restored. */
static void
set_external_id(bool on)
{
	char body[800];

	if (on)
		snprintf(body, sizeof(body), "{\"provider\":\"aws\",\"role_arn\":\"%s\","
		    "\"external_id\":\"%s\"}", cp, ext);
	else
		snprintf(body, sizeof(body), "{\"provider\":\"aws\",\"role_arn\":\"%s\","
		    "\"external_id\":null}", cp);
	harness_sim_post(&cs, "/_sim/iam", body);
}

static bool
check_in(json_t *checks, const char *name, bool ok)
{
	size_t i;
	json_t *c;

	json_array_foreach(checks, i, c)
		if (strcmp(js(c, "check"), name) == 0 && json_is_true(json_object_get(c, "ok")) == ok)
			return true;
	return false;
}

static long
audit_rows(const char *action)
{
	return harness_sql_long("SELECT count(*) FROM audit_log WHERE action = '%s' AND"
	    " resource_id = '%s'", action, cloud);
}

/* On demand: passes, then the drift is found, then the fix is found. */
static void
test_verify_route(void **state)
{
	(void)state;
	harness_call("POST", admin, NULL, "/v1/clouds/%s/iam/verify", cloud);
	harness_expect_status(NULL, 200);
	assert_string_equal(js(harness_r.json, "result"), "passed");
	assert_string_equal(js(harness_r.json, "cloud.state"), "active");
	assert_true(check_in(harness_jp(harness_r.json, "checks"),
	    "control_plane_external_id_required", true));

	set_external_id(false);
	harness_call("POST", admin, NULL, "/v1/clouds/%s/iam/verify", cloud);
	harness_expect_status(NULL, 200);
	assert_string_equal(js(harness_r.json, "result"), "failed");
	assert_string_equal(js(harness_r.json, "cloud.state"), "degraded");
	assert_true(check_in(harness_jp(harness_r.json, "cloud.iam.failed_checks"),
	    "control_plane_external_id_required", false));
	assert_int_equal(audit_rows("cloud.iam.degraded"), 1);
	assert_true((long)harness_metric("fleetd_iam_drift_total ") >= 1);
	assert_int_equal((long)harness_metric("fleetd_clouds_degraded "), 1);
	/* no new member clusters while degraded; reading it still works */
	harness_get_ok(admin, "/v1/clouds/%s", cloud);
	assert_string_equal(js(harness_r.json, "state"), "degraded");

	set_external_id(true);
	harness_call("POST", admin, NULL, "/v1/clouds/%s/iam/verify", cloud);
	harness_expect_status(NULL, 200);
	assert_string_equal(js(harness_r.json, "result"), "passed");
	assert_string_equal(js(harness_r.json, "cloud.state"), "active");
	assert_int_equal(json_array_size(harness_jp(harness_r.json, "cloud.iam.failed_checks")), 0);
	assert_int_equal(audit_rows("cloud.iam.restored"), 1);
	assert_int_equal((long)harness_metric("fleetd_clouds_degraded "), 0);
}

static bool
state_is(void *arg)
{
	char *s = harness_sql_str("SELECT state FROM clouds WHERE id = '%s'", cloud);
	bool eq = strcmp(s, (const char *)arg) == 0;

	free(s);
	return eq;
}

/* On schedule: the worker (every second here) finds the drift and the fix by itself. */
static void
test_worker_schedule(void **state)
{
	double t0;

	(void)state;
	set_external_id(false);
	t0 = harness_now_s();
	if (!harness_wait(state_is, "degraded", 10))
		fail_msg("the worker did not find the drift within 10 s");
	print_message("iam-verify worker: drift found after %.1f s\n", harness_now_s() - t0);
	assert_int_equal(audit_rows("cloud.iam.degraded"), 2);
	set_external_id(true);
	if (!harness_wait(state_is, "active", 10))
		fail_msg("the worker did not find the fix within 10 s");
	assert_int_equal(audit_rows("cloud.iam.restored"), 2);
}

/* Azure: a federated credential for another subject on the control-plane identity. */
static void
test_azure_federation(void **state)
{
	json_t *cl, *fics, *drift, *b;
	const char *mi;
	char *text;

	(void)state;
	cl = json_incref(harness_get_ok(admin, "/v1/clouds/%s", azcloud));
	mi = js(cl, "iam.control_plane_role");
	fics = harness_jp(cl, "iam.required.control_plane_identity.federated_identity_credentials");
	assert_non_null(fics);
	harness_call("POST", admin, NULL, "/v1/clouds/%s/iam/verify", azcloud);
	harness_expect_status(NULL, 200);
	assert_string_equal(js(harness_r.json, "result"), "passed");
	assert_true(check_in(harness_jp(harness_r.json, "checks"),
	    "control_plane_federation_subject", true));
	drift = json_deep_copy(fics);
	json_array_append_new(drift, json_pack("{s:s, s:s, s:s, s:[s]}", "name", "intruder",
	    "issuer", "https://token.actions.githubusercontent.com", "subject",
	    "repo:someone/else:ref:refs/heads/main", "audiences", "api://AzureADTokenExchange"));
	b = json_pack("{s:s, s:s, s:o}", "provider", "azure", "resource_id", mi,
	    "federated_identity_credentials", drift);
	text = json_dumps(b, JSON_COMPACT);
	harness_sim_post(&cs, "/_sim/iam", text);
	free(text);
	json_decref(b);
	harness_call("POST", admin, NULL, "/v1/clouds/%s/iam/verify", azcloud);
	harness_expect_status(NULL, 200);
	assert_string_equal(js(harness_r.json, "result"), "failed");
	assert_string_equal(js(harness_r.json, "cloud.state"), "degraded");
	assert_true(check_in(harness_jp(harness_r.json, "cloud.iam.failed_checks"),
	    "control_plane_federation_subject", false));
	b = json_pack("{s:s, s:s, s:O}", "provider", "azure", "resource_id", mi,
	    "federated_identity_credentials", fics);
	text = json_dumps(b, JSON_COMPACT);
	harness_sim_post(&cs, "/_sim/iam", text);
	free(text);
	json_decref(b);
	harness_call("POST", admin, NULL, "/v1/clouds/%s/iam/verify", azcloud);
	harness_expect_status(NULL, 200);
	assert_string_equal(js(harness_r.json, "result"), "passed");
	assert_string_equal(js(harness_r.json, "cloud.state"), "active");
	json_decref(cl);
}

static void
gcp_creators(const char *sa, const char *key, const char *who)
{
	char body[800];

	snprintf(body, sizeof(body), "{\"provider\":\"gcp\",\"service_account\":\"%s\","
	    "\"%s\":[\"%s\"]}", sa, key, who);
	harness_sim_post(&cs, "/_sim/iam", body);
}

/* GCP: another identity may impersonate the control-plane service account. */
static void
test_gcp_impersonation(void **state)
{
	char sa[320];

	(void)state;
	harness_get_ok(admin, "/v1/clouds/%s", gcloud);
	snprintf(sa, sizeof(sa), "%s", js(harness_r.json, "iam.control_plane_role"));
	harness_call("POST", admin, NULL, "/v1/clouds/%s/iam/verify", gcloud);
	harness_expect_status(NULL, 200);
	assert_string_equal(js(harness_r.json, "result"), "passed");
	assert_true(check_in(harness_jp(harness_r.json, "checks"),
	    "control_plane_impersonators", true));
	gcp_creators(sa, "token_creators", "ci-runner@other-project.iam.gserviceaccount.com");
	harness_call("POST", admin, NULL, "/v1/clouds/%s/iam/verify", gcloud);
	harness_expect_status(NULL, 200);
	assert_string_equal(js(harness_r.json, "result"), "failed");
	assert_string_equal(js(harness_r.json, "cloud.state"), "degraded");
	assert_true(check_in(harness_jp(harness_r.json, "cloud.iam.failed_checks"),
	    "control_plane_impersonators", false));
	gcp_creators(sa, "token_creators_set", cs.fleetd_sa);
	harness_call("POST", admin, NULL, "/v1/clouds/%s/iam/verify", gcloud);
	harness_expect_status(NULL, 200);
	assert_string_equal(js(harness_r.json, "result"), "passed");
	assert_string_equal(js(harness_r.json, "cloud.state"), "active");
}

static bool
job_left_pending(void *id)
{
	harness_get_ok(admin, "/v1/jobs/%s", (const char *)id);
	return strcmp(js(harness_r.json, "state"), "pending") != 0;
}

/* No new placement on a degraded cloud: a job that only fits there (us-west-2) waits;
 * once the pair verifies again it is admitted there. */
static void
test_degraded_no_placement(void **state)
{
	static const char *const names[] = { "test-hp-usw2", NULL };
	char id[40];

	(void)state;
	harness_post_created(admin, "/v1/priority-classes", "{\"name\":\"default\","
	    "\"value\":100}");
	harness_post_created(admin, "/v1/queues", "{\"name\":\"ml\",\"environment\":"
	    "\"test\",\"nominal_quota\":{\"nvidia-h100-80gb\":64},"
	    "\"default_priority_class\":\"default\"}");
	harness_wait_capacity(names, 60);
	set_external_id(false);
	harness_call("POST", admin, NULL, "/v1/clouds/%s/iam/verify", cloud);
	assert_string_equal(js(harness_r.json, "cloud.state"), "degraded");
	harness_post_created(admin, "/v1/jobs", "{\"environment\":\"test\",\"kind\":"
	    "\"RayJob\",\"queue\":\"ml\",\"name\":\"drifted\",\"ray_version\":"
	    "\"2.52.0\",\"entrypoint\":\"python train.py\",\"head\":{\"cpu\":\"1\","
	    "\"memory\":\"2Gi\"},\"worker_groups\":[{\"name\":\"gpu\",\"replicas\":1,"
	    "\"cpu\":\"8\",\"memory\":\"64Gi\",\"accelerator\":{\"flavor\":"
	    "\"nvidia-h100-80gb\",\"count\":1}}],\"constraints\":{\"regions\":"
	    "[\"us-west-2\"]}}");
	snprintf(id, sizeof(id), "%s", js(harness_r.json, "id"));
	if (harness_wait(job_left_pending, id, 4))
		fail_msg("a job was placed on a degraded cloud: %s", harness_r.body);
	set_external_id(true);
	harness_call("POST", admin, NULL, "/v1/clouds/%s/iam/verify", cloud);
	assert_string_equal(js(harness_r.json, "cloud.state"), "active");
	if (!harness_wait(job_left_pending, id, 20))
		fail_msg("the job was not placed once the cloud was active again: %s",
		    harness_r.body);
	print_message("degraded cloud: job pending 4 s, admitted as %s after the fix\n",
	    js(harness_r.json, "state"));
}

/* The route before phase 2 and for a cloud of no one. */
static void
test_verify_refusals(void **state)
{
	(void)state;
	harness_call("POST", admin, NULL,
	    "/v1/clouds/00000000-0000-4000-8000-000000000000/iam/verify");
	harness_expect_problem(NULL, 404, "cloud.not_found", NULL);
	harness_call("POST", admin, "{\"name\":\"pending\",\"environment\":\"test\","
	    "\"provider\":\"hyperpod\",\"region\":\"eu-west-1\",\"account\":{\"account_id\":"
	    "\"123456789012\"}}", "/v1/clouds");
	harness_expect_status(NULL, 201);
	{
		char id[40];

		snprintf(id, sizeof(id), "%s", js(harness_r.json, "id"));
		harness_call("POST", admin, NULL, "/v1/clouds/%s/iam/verify", id);
		harness_expect_problem(NULL, 409, "iam.not_locked", NULL);
	}
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_verify_route),
		cmocka_unit_test(test_worker_schedule),
		cmocka_unit_test(test_azure_federation),
		cmocka_unit_test(test_gcp_impersonation),
		cmocka_unit_test(test_degraded_no_placement),
		cmocka_unit_test(test_verify_refusals),
	};

	return cmocka_run_group_tests(tests, setup, harness_group_teardown);
}
