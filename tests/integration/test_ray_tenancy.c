/* test_ray_tenancy: Ray clusters closed to other tenants (issue 25) end to end on cloudsim —
 * a running job's Ray object carries token auth on a Secret of its namespace and a
 * NetworkPolicy that cloudsim enforces (a pod of another namespace is refused, the job's own
 * pods and the KubeRay operator reach the dashboard, which wants the token); GET
 * /v1/jobs/{id}/dashboard as every role; the token in no other answer, row or log. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/crypto.h"
#include "tests/harness/harness.h"

#define ENV	"ten"
#define H100	"nvidia-h100-80gb"

static struct harness_fleet F;
static const char *admin, *e_view, *e_sub, *e_oper, *other_admin;
static char *t_view, *t_sub, *t_oper, *tb_oper;	/* team ta's roles, team tb's operator */
static char *job_id, *token;
static char ns[64], name[128], secret[64];

static char *
team_token(const char *team, const char *role)
{
	char body[200];
	json_t *o;

	snprintf(body, sizeof(body), "{\"name\":\"%s-%s\",\"role\":\"%s\",\"environments\":"
	    "[\"" ENV "\"],\"team\":\"%s\"}", team, role, role, team);
	o = harness_post_created(admin, "/v1/tokens", body);
	return harness_keep(strdup(json_string_value(json_object_get(o, "secret"))));
}

/* tests/fixtures/fleets/tenancy.json: one HyperPod cluster; teams ta (queue qa) and tb
 * (queue qb) in environment ten; jobs run for good.  Team ta's submitter submits a
 * RayCluster in qa. */
static int
setup(void **state)
{
	json_t *m;

	*state = &F;	/* the teardown stops whatever was started */
	harness_fleet_start(&F, "tenancy", FLEETD_SOURCE_DIR "/tests/fixtures/fleets/tenancy.json",
	    "4", NULL);
	admin = F.admin;
	e_view = harness_fleet_token(&F, "viewer", ENV);
	e_sub = harness_fleet_token(&F, "submitter", ENV);
	e_oper = harness_fleet_token(&F, "operator", ENV);
	harness_post_created(admin, "/v1/environments", "{\"name\":\"elsewhere\"}");
	other_admin = harness_fleet_token(&F, "admin", "elsewhere");
	t_view = team_token("ta", "viewer");
	t_sub = team_token("ta", "submitter");
	t_oper = team_token("ta", "operator");
	tb_oper = team_token("tb", "operator");
	job_id = harness_keep(harness_submit(t_sub, ENV, "qa", "RayCluster", "notebook", "default",
	    H100, 1, -1));
	json_decref(harness_job_wait(admin, job_id, "running", 0, 90));
	m = harness_get_ok(admin, "/v1/jobs/%s/manifest", job_id);
	snprintf(ns, sizeof(ns), "%s", harness_js(m, "metadata.namespace"));
	snprintf(name, sizeof(name), "%s", harness_js(m, "metadata.name"));
	snprintf(secret, sizeof(secret), "%s", harness_js(m, "spec.authOptions.secretName"));
	assert_string_equal(harness_js(m, "spec.authOptions.mode"), "token");
	*state = &F;
	return 0;
}

/* The dashboard as every role: operators and admins of the job's environment or team and
 * the job's own submitter get the same token; viewers and other submitters 403; another
 * team, another environment and nobody at all find no job. */
static void
test_dashboard_roles(void **state)
{
	static const char *none = "00000000-0000-4000-8000-000000000000";
	const char *yes[] = { admin, e_oper, t_oper, t_sub };
	json_t *d;
	char nx_code[64];

	(void)state;
	d = harness_get_ok(admin, "/v1/jobs/%s/dashboard", job_id);
	assert_string_equal(harness_js(d, "auth"), "token");
	token = harness_keep(strdup(harness_js(d, "token")));
	assert_true(strlen(token) >= 40);
	assert_string_equal(harness_js(d, "secret_name"), secret);
	assert_string_equal(harness_js(d, "secret_key"), "auth_token");
	assert_string_equal(harness_js(d, "namespace"), ns);
	assert_non_null(strstr(harness_js(d, "url"), "-head-svc."));
	assert_non_null(strstr(harness_js(d, "url"), ":8265"));
	for (size_t i = 0; i < sizeof(yes) / sizeof(yes[0]); i++) {
		d = harness_get_ok(yes[i], "/v1/jobs/%s/dashboard", job_id);
		assert_string_equal(harness_js(d, "token"), token);
	}
	/* viewers (of the environment or the team): the role is too low */
	assert_int_equal(harness_call("GET", e_view, NULL, "/v1/jobs/%s/dashboard", job_id), 403);
	assert_int_equal(harness_call("GET", t_view, NULL, "/v1/jobs/%s/dashboard", job_id), 403);
	/* a submitter of the environment that did not submit it */
	assert_int_equal(harness_call("GET", e_sub, NULL, "/v1/jobs/%s/dashboard", job_id), 403);
	harness_expect_problem(NULL, 403, "auth.not_submitter", NULL);
	/* another team, another environment: exactly as a job that does not exist */
	assert_int_equal(harness_call("GET", tb_oper, NULL, "/v1/jobs/%s/dashboard", none), 404);
	snprintf(nx_code, sizeof(nx_code), "%s", harness_js(harness_r.json, "code"));
	assert_int_equal(harness_call("GET", tb_oper, NULL, "/v1/jobs/%s/dashboard", job_id), 404);
	assert_string_equal(harness_js(harness_r.json, "code"), nx_code);
	assert_int_equal(harness_call("GET", other_admin, NULL, "/v1/jobs/%s/dashboard", job_id),
	    404);
	assert_string_equal(harness_js(harness_r.json, "code"), nx_code);
	assert_int_equal(harness_call("GET", NULL, NULL, "/v1/jobs/%s/dashboard", job_id), 401);
	/* handed out 5 times, each audited */
	assert_int_equal(harness_audit_count(admin, job_id, "job.dashboard"), 5);
}

/* From here on any answer carrying the token fails the test: the job, its manifest, its
 * events and the audit log never hold it; nor does a row outside job_ray_auth, which holds
 * it sealed, nor fleetd's log. */
static void
test_token_nowhere_else(void **state)
{
	char *log;

	(void)state;
	assert_non_null(token);
	harness_secret(token);
	harness_get_ok(t_view, "/v1/jobs/%s", job_id);
	harness_get_ok(t_view, "/v1/jobs/%s/manifest", job_id);
	harness_get_ok(t_view, "/v1/jobs/%s/events", job_id);
	harness_get_ok(admin, "/v1/audit?limit=200");
	harness_get_ok(admin, "/v1/jobs?limit=50");
	assert_int_equal(harness_sql_long("SELECT count(*) FROM jobs WHERE jobs::text LIKE"
	    " '%%%s%%'", token), 0);
	assert_int_equal(harness_sql_long("SELECT count(*) FROM audit_log WHERE audit_log::text"
	    " LIKE '%%%s%%'", token), 0);
	assert_int_equal(harness_sql_long("SELECT count(*) FROM job_events WHERE"
	    " job_events::text LIKE '%%%s%%'", token), 0);
	assert_int_equal(harness_sql_long("SELECT count(*) FROM job_ray_auth WHERE job_id = '%s'"
	    " AND sealed NOT LIKE '%%%s%%'", job_id, token), 1);
	log = harness_slurp(harness_log());
	assert_non_null(log);
	assert_null(strstr(log, token));
	free(log);
}

/* The member holds the Secret (the token the dashboard answer gave) and the NetworkPolicy,
 * read through its Kubernetes API as a client would. */
static void
test_member_objects(void **state)
{
	struct http_result r;
	char path[256];
	json_t *o;
	uint8_t *raw;
	size_t n = 0;

	(void)state;
	snprintf(path, sizeof(path), "/api/v1/namespaces/%s/secrets/%s", ns, secret);
	harness_kube(&F.cs, &r, F.name[0], "GET", path, NULL, NULL);
	assert_int_equal(r.status, 200);
	o = json_loads(r.body, 0, NULL);
	raw = crypto_b64_decode(harness_js(o, "data.auth_token"), &n);
	assert_non_null(raw);
	assert_int_equal(n, strlen(token));
	assert_memory_equal(raw, token, n);
	free(raw);
	json_decref(o);
	harness_http_free(&r);
	snprintf(path, sizeof(path), "/apis/networking.k8s.io/v1/namespaces/%s/networkpolicies/%s",
	    ns, secret);
	harness_kube(&F.cs, &r, F.name[0], "GET", path, NULL, NULL);
	assert_int_equal(r.status, 200);
	o = json_loads(r.body, 0, NULL);
	assert_string_equal(json_string_value(json_object_get(json_object_get(json_object_get(
	    json_object_get(o, "spec"), "podSelector"), "matchLabels"), "fleet.io/job-id")),
	    job_id);
	assert_string_equal(json_string_value(json_array_get(json_object_get(json_object_get(o,
	    "spec"), "policyTypes"), 0)), "Ingress");
	json_decref(o);
	harness_http_free(&r);
}

/* One /_sim/connect to the head of the job's Ray object on port from a source (JSON text). */
static json_t *
connect_head(const char *from, int port, const char *authz)
{
	char body[1024];
	json_t *out = NULL;
	long st;

	snprintf(body, sizeof(body), "{\"cluster\":\"%s\",\"from\":%s,\"to\":{\"namespace\":"
	    "\"%s\",\"object\":\"%s\"},\"port\":%d%s%s%s}", F.name[0], from, ns, name, port,
	    authz ? ",\"authorization\":\"" : "", authz ? authz : "", authz ? "\"" : "");
	st = harness_sim(&F.cs, "POST", "/_sim/connect", body, &out);
	if (st != 200)
		fail_msg("/_sim/connect: %ld", st);
	return out;
}

/* cloudsim enforces the NetworkPolicy: a pod of another namespace (team tb's) is refused
 * on every Ray port; the job's own pods pass on any, and the head's dashboard still wants
 * the token (401 without, 403 with another, 200 with it); the KubeRay operator's namespace
 * passes on the dashboard port only. */
static void
test_network_enforced(void **state)
{
	char own[256], other[256], bearer[160];
	json_t *c;

	(void)state;
	snprintf(other, sizeof(other), "{\"namespace\":\"fleet-ten-qb\",\"labels\":{"
	    "\"fleet.io/job-id\":\"%s\"}}", "11111111-2222-4333-8444-555555555555");
	snprintf(own, sizeof(own), "{\"namespace\":\"%s\",\"labels\":{\"fleet.io/job-id\":"
	    "\"%s\",\"fleet.io/role\":\"worker\"}}", ns, job_id);
	snprintf(bearer, sizeof(bearer), "Bearer %s", token);
	for (int i = 0; i < 3; i++) {
		static const int ports[] = { 8265, 6379, 10001 };

		c = connect_head(other, ports[i], bearer);
		assert_false(json_is_true(json_object_get(c, "connected")));
		assert_true(json_array_size(json_object_get(c, "policies")) >= 1);
		json_decref(c);
		c = connect_head(own, ports[i], NULL);
		assert_true(json_is_true(json_object_get(c, "connected")));
		json_decref(c);
	}
	/* a pod of the same namespace that is not the job's (another job of the queue) */
	c = connect_head("{\"namespace\":\"fleet-ten-qa\",\"labels\":{\"app\":\"x\"}}", 6379,
	    NULL);
	assert_false(json_is_true(json_object_get(c, "connected")));
	json_decref(c);
	c = connect_head(own, 8265, NULL);
	assert_int_equal(harness_ji(c, "status"), 401);
	json_decref(c);
	c = connect_head(own, 8265, "Bearer not-the-token");
	assert_int_equal(harness_ji(c, "status"), 403);
	json_decref(c);
	c = connect_head(own, 8265, bearer);
	assert_int_equal(harness_ji(c, "status"), 200);
	json_decref(c);
	c = connect_head("{\"namespace\":\"default\",\"labels\":{\"app.kubernetes.io/name\":"
	    "\"kuberay-operator\"}}", 8265, bearer);
	assert_true(json_is_true(json_object_get(c, "connected")));
	assert_int_equal(harness_ji(c, "status"), 200);
	json_decref(c);
	c = connect_head("{\"namespace\":\"default\",\"labels\":{}}", 6379, NULL);
	assert_false(json_is_true(json_object_get(c, "connected")));
	json_decref(c);
}

/* An environment's dashboard ingress: refused when malformed (a pointer), then rendered
 * into the next job's head group (behind its token) and handed out as ingress_url; its
 * NetworkPolicy admits the ingress controller's namespace to the dashboard port only. */
static void
test_environment_ingress(void **state)
{
	char *id, other[64], path[256];
	json_t *m, *head, *d, *c;
	struct http_result r;

	(void)state;
	assert_int_equal(harness_call("PUT", admin, "{\"name\":\"" ENV "\",\"dashboard_ingress\":"
	    "{\"host\":\"Not A Host\"}}", "/v1/environments/" ENV), 400);
	harness_expect_problem(NULL, 400, "env.bad_ingress", "/dashboard_ingress/host");
	assert_int_equal(harness_call("PUT", e_oper, "{\"name\":\"" ENV "\",\"dashboard_ingress\":"
	    "{\"host\":\"ray.ten.example.com\"}}", "/v1/environments/" ENV), 403);
	assert_int_equal(harness_call("PUT", admin, "{\"name\":\"" ENV "\",\"dashboard_ingress\":"
	    "{\"host\":\"ray.ten.example.com\",\"path\":\"/dash\",\"tls_secret\":"
	    "\"ray-tls\",\"controller_namespace\":\"ingress-ctl\"}}", "/v1/environments/" ENV),
	    200);
	assert_string_equal(harness_js(harness_r.json, "dashboard_ingress.path_type"), "Prefix");
	id = harness_keep(harness_submit(t_sub, ENV, "qa", "RayCluster", "lab", "default", H100, 1,
	    -1));
	json_decref(harness_job_wait(admin, id, "running", 0, 90));
	m = json_incref(harness_get_ok(admin, "/v1/jobs/%s/manifest", id));
	head = json_object_get(json_object_get(m, "spec"), "headGroupSpec");
	assert_true(json_is_true(json_object_get(head, "enableIngress")));
	assert_string_equal(harness_js(head, "ingressOptions.host"), "ray.ten.example.com");
	assert_string_equal(json_string_value(json_object_get(json_array_get(json_object_get(
	    json_object_get(head, "ingressOptions"), "tls"), 0), "secretName")), "ray-tls");
	snprintf(other, sizeof(other), "%s", harness_js(m, "spec.authOptions.secretName"));
	d = harness_get_ok(t_oper, "/v1/jobs/%s/dashboard", id);
	assert_string_equal(harness_js(d, "ingress_url"), "https://ray.ten.example.com/dash");
	assert_string_equal(harness_js(d, "auth"), "token");
	snprintf(path, sizeof(path), "/apis/networking.k8s.io/v1/namespaces/%s/networkpolicies/%s",
	    ns, other);
	harness_kube(&F.cs, &r, F.name[0], "GET", path, NULL, NULL);
	assert_int_equal(r.status, 200);
	assert_non_null(strstr(r.body, "ingress-ctl"));
	harness_http_free(&r);
	snprintf(path, sizeof(path), "{\"cluster\":\"%s\",\"from\":{\"namespace\":\"ingress-ctl\","
	    "\"labels\":{}},\"to\":{\"namespace\":\"%s\",\"object\":\"%s\"},\"port\":8265}",
	    F.name[0], ns, harness_js(m, "metadata.name"));
	assert_int_equal(harness_sim(&F.cs, "POST", "/_sim/connect", path, &c), 200);
	assert_true(json_is_true(json_object_get(c, "connected")));
	assert_int_equal(harness_ji(c, "status"), 401);	/* behind the token */
	json_decref(c);
	json_decref(m);
	/* removed again: later jobs get none */
	assert_int_equal(harness_call("PUT", admin, "{\"name\":\"" ENV "\",\"dashboard_ingress\":"
	    "null}", "/v1/environments/" ENV), 200);
	assert_true(json_is_null(json_object_get(harness_r.json, "dashboard_ingress")));
	assert_int_equal(harness_call("POST", admin, NULL, "/v1/jobs/%s/cancel", id), 200);
}

/* Once the job ends there is no dashboard to hand out. */
static void
test_dashboard_after_cancel(void **state)
{
	(void)state;
	assert_int_equal(harness_call("POST", admin, NULL, "/v1/jobs/%s/cancel", job_id), 200);
	json_decref(harness_job_wait(admin, job_id, "cancelled", 0, 60));
	assert_int_equal(harness_call("GET", admin, NULL, "/v1/jobs/%s/dashboard", job_id), 409);
	harness_expect_problem(NULL, 409, "dashboard.no_cluster", NULL);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_dashboard_roles),
		cmocka_unit_test(test_token_nowhere_else),
		cmocka_unit_test(test_member_objects),
		cmocka_unit_test(test_network_enforced),
		cmocka_unit_test(test_environment_ingress),
		cmocka_unit_test(test_dashboard_after_cancel),
	};

	return cmocka_run_group_tests(tests, setup, harness_fleet_teardown);
}
