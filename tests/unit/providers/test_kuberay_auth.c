/* test_kuberay_auth: Ray clusters closed to other tenants (issue 25) — spec.authOptions in
 * all four kinds, the token's Secret (never in the manifest), the attempt's NetworkPolicy
 * and the dashboard ingress; goldens tests/fixtures/kuberay/<kind>-auth-ingress.json (checked
 * by validate_manifests.sh) and tests/fixtures/netpol/rayjob-networkpolicy.json. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "core/crypto.h"
#include "providers/kuberay.h"
#include "tests/unit/providers/kuberay_cases.h"
#include "tests/harness/harness.h"

#define TOKEN	"tok-5eCr3t-do-not-leak-0123456789abcdefghijkl"

static void
test_versions(void **state)
{
	(void)state;
	assert_true(kuberay_auth_supported("2.52.0"));
	assert_true(kuberay_auth_supported("2.53.1"));
	assert_true(kuberay_auth_supported("3.0.0"));
	assert_false(kuberay_auth_supported("2.51.9"));
	assert_false(kuberay_auth_supported("2.9.3"));
	assert_false(kuberay_auth_supported(NULL));
	assert_false(kuberay_auth_supported("latest"));
}

/* Every kind names the attempt's Secret in authOptions; the token itself is nowhere in the
 * manifest (the manifest is stored and shown through the API to every viewer). */
static void
test_auth_options(void **state)
{
	(void)state;
	for (int kind = 0; kind < 4; kind++) {
		struct corpus_case c;
		struct err e = { 0 };
		json_t *m, *ao;
		char sig[64], *text;

		case_init(&c, kind, 0, 0, 0, 0, 4);
		c.in.auth_token = TOKEN;
		m = kuberay_render(&c.in, &e);
		if (m == NULL)
			fail_msg("%s: %s %s", kinds[kind], e.code, e.msg);
		ao = json_object_get(case_cluster(m, kind), "authOptions");
		assert_non_null(ao);
		assert_string_equal(str_at(ao, "mode"), "token");
		assert_true(kuberay_signal_name(c.job_id, c.in.attempt, sig, sizeof(sig)));
		assert_string_equal(str_at(ao, "secretName"), sig);
		text = json_dumps(m, 0);
		assert_null(strstr(text, TOKEN));
		free(text);
		json_decref(m);
		/* a Ray without token auth: no authOptions (KubeRay refuses it below 2.52.0) */
		free(c.spec.ray_version);
		c.spec.ray_version = strdup("2.49.0");
		m = kuberay_render(&c.in, &e);
		assert_non_null(m);
		assert_null(json_object_get(case_cluster(m, kind), "authOptions"));
		json_decref(m);
		jobspec_cleanup(&c.spec);
	}
}

/* The Secret holds the token under auth_token (base64), labelled with the job. */
static void
test_secret(void **state)
{
	struct corpus_case c;
	struct err e = { 0 };
	json_t *objs, *sec = NULL, *o;
	size_t i, n = 0;
	uint8_t *raw;
	char sig[64];

	(void)state;
	case_init(&c, 0, 1, 0, 0, 0, 4);
	c.in.auth_token = TOKEN;
	objs = kuberay_signal_objects(&c.in, NULL, &e);
	assert_non_null(objs);
	assert_int_equal(json_array_size(objs), 6);
	json_array_foreach(objs, i, o)
		if (strcmp(str_at(o, "kind"), "Secret") == 0)
			sec = o;
	assert_non_null(sec);
	assert_true(kuberay_signal_name(c.job_id, c.in.attempt, sig, sizeof(sig)));
	assert_string_equal(str_at(json_object_get(sec, "metadata"), "name"), sig);
	assert_string_equal(str_at(sec, "type"), "Opaque");
	raw = crypto_b64_decode(str_at(json_object_get(sec, "data"), "auth_token"), &n);
	assert_non_null(raw);
	assert_int_equal(n, strlen(TOKEN));
	assert_memory_equal(raw, TOKEN, n);
	free(raw);
	assert_string_equal(str_at(json_object_get(json_object_get(sec, "metadata"), "labels"),
	    "fleet.io/job-id"), c.job_id);
	json_decref(objs);
	c.in.auth_token = NULL;	/* no token, no Secret */
	assert_null(kuberay_auth_secret(&c.in, &e));
	assert_int_equal(e.status, 422);
	jobspec_cleanup(&c.spec);
}

/* The NetworkPolicy: Ingress only, the job's pods; from the job's pods any port, from the
 * operator's namespace the dashboard and agent ports, from the RayJob's submitter the
 * dashboard port, from the ingress controller the dashboard port when asked. */
static void
test_network_policy(void **state)
{
	struct corpus_case c;
	struct kuberay_ingress ing = { "ray.example.com", NULL, NULL, "ray-tls", "ingress-nginx" };
	struct err e = { 0 };
	json_t *np, *spec, *r;
	char obj[64];

	(void)state;
	case_init(&c, 0, 0, 0, 0, 0, 4);
	c.in.operator_ns = "kuberay-system";
	np = kuberay_network_policy(&c.in, &e);
	assert_non_null(np);
	assert_string_equal(str_at(np, "apiVersion"), "networking.k8s.io/v1");
	spec = json_object_get(np, "spec");
	assert_string_equal(json_string_value(json_array_get(json_object_get(spec,
	    "policyTypes"), 0)), "Ingress");
	assert_int_equal(json_array_size(json_object_get(spec, "policyTypes")), 1);
	assert_string_equal(str_at(json_object_get(json_object_get(spec, "podSelector"),
	    "matchLabels"), "fleet.io/job-id"), c.job_id);
	assert_int_equal(json_array_size(json_object_get(spec, "ingress")), 3);
	r = json_array_get(json_object_get(spec, "ingress"), 0);	/* own pods: any port */
	assert_null(json_object_get(r, "ports"));
	assert_string_equal(str_at(json_object_get(json_object_get(json_array_get(
	    json_object_get(r, "from"), 0), "podSelector"), "matchLabels"), "fleet.io/job-id"),
	    c.job_id);
	r = json_array_get(json_object_get(spec, "ingress"), 1);	/* the operator */
	assert_string_equal(str_at(json_object_get(json_object_get(json_array_get(
	    json_object_get(r, "from"), 0), "namespaceSelector"), "matchLabels"),
	    "kubernetes.io/metadata.name"), "kuberay-system");
	assert_int_equal(json_integer_value(json_object_get(json_array_get(json_object_get(r,
	    "ports"), 0), "port")), 8265);
	assert_int_equal(json_integer_value(json_object_get(json_array_get(json_object_get(r,
	    "ports"), 1), "port")), 52365);
	r = json_array_get(json_object_get(spec, "ingress"), 2);	/* the RayJob's submitter */
	assert_true(kuberay_object_name(c.spec.kind, c.spec.name, c.job_id, c.in.attempt, obj,
	    sizeof(obj)));
	assert_string_equal(str_at(json_object_get(json_object_get(json_array_get(
	    json_object_get(r, "from"), 0), "podSelector"), "matchLabels"),
	    "ray.io/originated-from-cr-name"), obj);
	harness_golden_json("tests/fixtures/netpol/rayjob-networkpolicy.json", np);
	json_decref(np);
	/* with an ingress: its controller's namespace on the dashboard port too */
	c.in.ingress = &ing;
	np = kuberay_network_policy(&c.in, &e);
	spec = json_object_get(np, "spec");
	assert_int_equal(json_array_size(json_object_get(spec, "ingress")), 4);
	r = json_array_get(json_object_get(spec, "ingress"), 3);
	assert_string_equal(str_at(json_object_get(json_object_get(json_array_get(
	    json_object_get(r, "from"), 0), "namespaceSelector"), "matchLabels"),
	    "kubernetes.io/metadata.name"), "ingress-nginx");
	json_decref(np);
	jobspec_cleanup(&c.spec);
	/* a RayService: its Serve port from anywhere (a rule without peers), nothing more */
	case_init(&c, 2, 0, 0, 0, 0, 4);
	np = kuberay_network_policy(&c.in, &e);
	spec = json_object_get(np, "spec");
	assert_int_equal(json_array_size(json_object_get(spec, "ingress")), 3);
	r = json_array_get(json_object_get(spec, "ingress"), 2);
	assert_null(json_object_get(r, "from"));
	assert_int_equal(json_integer_value(json_object_get(json_array_get(json_object_get(r,
	    "ports"), 0), "port")), 8000);
	json_decref(np);
	jobspec_cleanup(&c.spec);
	/* a RayCluster has no submitter: two rules */
	case_init(&c, 1, 0, 0, 0, 0, 4);
	np = kuberay_network_policy(&c.in, &e);
	assert_int_equal(json_array_size(json_object_get(json_object_get(np, "spec"),
	    "ingress")), 2);
	json_decref(np);
	jobspec_cleanup(&c.spec);
}

/* The dashboard ingress: headGroupSpec.enableIngress and ingressOptions with TLS, only
 * behind the token; goldens for a RayCluster and a RayService (validate-manifest). */
static void
test_ingress(void **state)
{
	static const struct { int kind; const char *golden; } gold[] = {
		{ 1, "tests/fixtures/kuberay/raycluster-auth-ingress.json" },
		{ 2, "tests/fixtures/kuberay/rayservice-auth-ingress.json" },
		{ 0, "tests/fixtures/kuberay/rayjob-auth-ingress.json" },
	};
	struct kuberay_ingress ing = { "ray.prod.example.com", "/dash", "Prefix",
		"ray-dashboard-tls", NULL };
	struct kuberay_ingress bad = { "Not A Host", NULL, NULL, NULL, NULL };
	struct corpus_case c;
	struct err e = { 0 };
	json_t *m, *head, *opt;

	(void)state;
	for (size_t i = 0; i < sizeof(gold) / sizeof(gold[0]); i++) {
		case_init(&c, gold[i].kind, 0, 0, 0, 0, 4);
		c.in.ingress = &ing;
		m = kuberay_render(&c.in, &e);
		if (m == NULL)
			fail_msg("%s: %s %s", gold[i].golden, e.code, e.msg);
		head = json_object_get(case_cluster(m, gold[i].kind), "headGroupSpec");
		assert_true(json_is_true(json_object_get(head, "enableIngress")));
		opt = json_object_get(head, "ingressOptions");
		assert_string_equal(str_at(opt, "host"), "ray.prod.example.com");
		assert_string_equal(str_at(opt, "path"), "/dash");
		assert_string_equal(str_at(opt, "pathType"), "Prefix");
		assert_string_equal(str_at(json_array_get(json_object_get(opt, "tls"), 0),
		    "secretName"), "ray-dashboard-tls");
		assert_non_null(json_object_get(case_cluster(m, gold[i].kind), "authOptions"));
		harness_golden_json(gold[i].golden, m);
		json_decref(m);
		jobspec_cleanup(&c.spec);
	}
	/* never an open dashboard behind an ingress: no token auth, no ingress */
	case_init(&c, 1, 0, 0, 0, 0, 4);
	c.in.ingress = &ing;
	c.in.auth_off = true;
	assert_null(kuberay_render(&c.in, &e));
	assert_string_equal(e.code, "kuberay.ingress_needs_auth");
	c.in.auth_off = false;
	c.in.ingress = &bad;
	err_clear(&e);
	assert_null(kuberay_render(&c.in, &e));
	assert_string_equal(e.code, "kuberay.bad_ingress");
	jobspec_cleanup(&c.spec);
}

static void
test_dashboard_url(void **state)
{
	json_t *m = json_pack("{s:s, s:{s:s, s:s}}", "kind", "RayCluster", "metadata", "name",
	    "llm-abc-a1", "namespace", "fleet-prod-research");
	char url[256];

	(void)state;
	assert_true(kuberay_dashboard_url(m, url, sizeof(url)));
	assert_string_equal(url, "http://llm-abc-a1-head-svc.fleet-prod-research.svc.cluster.local:8265");
	json_object_set_new(m, "kind", json_string("RayJob"));
	assert_false(kuberay_dashboard_url(m, url, sizeof(url)));
	json_decref(m);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_versions),
		cmocka_unit_test(test_auth_options),
		cmocka_unit_test(test_secret),
		cmocka_unit_test(test_network_policy),
		cmocka_unit_test(test_ingress),
		cmocka_unit_test(test_dashboard_url),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
