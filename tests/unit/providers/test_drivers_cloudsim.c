/* test_drivers_cloudsim: each driver and the Kubernetes client against a real cloudsim
 * with the test fleet — capacity equal to cloudsim's ground truth, paging, expired tokens,
 * 429 with Retry-After, a hanging endpoint, a wrong CA, and phase-2 checks (the AKS pair by
 * workload identity federation). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "core/config.h"
#include "providers/kube.h"
#include "providers/provider.h"
#include "tests/harness/harness.h"

static struct harness_cs L;

struct member {
	struct prov_cloud	 cloud;
	struct prov_cluster	 k;
	json_t			*cj;	/* borrowed from L.clusters */
};

/* A cloud and cluster for cloudsim's cluster name, with its identities. */
static void
member(const char *name, const char *cloud_id, struct member *m)
{
	json_t *c = harness_cs_cluster(&L, name);
	const char *prov = harness_js(c, "provider");
	char acct[256];
	struct err e = { 0 };

	assert_non_null(c);
	m->cj = c;
	if (strcmp(prov, "gke") == 0)
		snprintf(acct, sizeof(acct), "{\"project\":\"%s\"}", harness_js(c, "project"));
	else if (strcmp(prov, "aks") == 0)
		snprintf(acct, sizeof(acct), "{\"subscription_id\":\"%s\",\"tenant_id\":\"%s\","
		    "\"resource_group\":\"%s\"}", harness_js(c, "subscription"), cfg.azure_tenant,
		    harness_js(c, "resource_group"));
	else
		snprintf(acct, sizeof(acct), "{\"account_id\":\"%s\"}", harness_js(c, "account"));
	assert_true(prov_cloud_fill(&m->cloud, cloud_id, prov, harness_js(c, "region"), acct,
	    "ext-0123456789abcdef0123", strcmp(prov, "gke") == 0 ?
	    harness_js(c, "iam.control_plane.service_account") : strcmp(prov, "aks") == 0 ?
	    harness_js(c, "iam.control_plane.resource_id") : harness_js(c,
	    "iam.control_plane.role_arn"), strcmp(prov, "gke") == 0 ?
	    harness_js(c, "iam.cluster_role.service_account") : strcmp(prov, "aks") == 0 ?
	    harness_js(c, "iam.cluster_role.resource_id") : harness_js(c,
	    "iam.cluster_role.role_arn"), &e));
	m->k = (struct prov_cluster){ cloud_id, name, harness_js(c, "api_server"), L.ca_pem,
	    harness_js(c, "token"), harness_js(c, "provider_cluster_id"), NULL };
}

static const char *const NAMES[] = { "test-gke-usc1", "test-aks-eus", "test-hp-usw2",
	"test-hp-use1" };
static const char *const IDS[] = { "11111111-1111-4111-8111-111111111111",
	"22222222-2222-4222-8222-222222222222", "33333333-3333-4333-8333-333333333333",
	"44444444-4444-4444-8444-444444444444" };

static int
setup(void **state)
{
	char body[512];

	(void)state;
	harness_cs_start(&L, NULL, NULL);
	harness_cs_config(&L);
	/* identities the way phase 2 expects them: the AWS external ids and cloud-id tags */
	for (int i = 2; i < 4; i++) {
		json_t *c = harness_cs_cluster(&L, NAMES[i]);

		snprintf(body, sizeof(body), "{\"provider\":\"aws\",\"role_arn\":\"%s\","
		    "\"external_id\":\"ext-0123456789abcdef0123\",\"tags\":{\"fleet.io/cloud-id\":"
		    "\"%s\"}}", harness_js(c, "iam.control_plane.role_arn"), IDS[i]);
		if (harness_sim(&L, "POST", "/_sim/iam", body, NULL) != 200)
			return -1;
	}
	return 0;
}

static int
teardown(void **state)
{
	(void)state;
	harness_cs_stop(&L);
	prov_creds_cache_clear();
	return 0;
}

static json_t *
state_pool(json_t *st, const char *cluster, const char *pool)
{
	json_t *c, *p;
	size_t i, j;

	json_array_foreach(json_object_get(st, "clusters"), i, c) {
		if (strcmp(harness_js(c, "name"), cluster) != 0)
			continue;
		json_array_foreach(json_object_get(c, "pools"), j, p)
			if (strcmp(harness_js(p, "name"), pool) == 0)
				return p;
	}
	return NULL;
}

/* Provider pools and free accelerators per pool and rack equal cloudsim's own state. */
static void
test_ground_truth(void **state)
{
	json_t *st = NULL;

	(void)state;
	assert_int_equal(harness_sim(&L, "GET", "/_sim/state", NULL, &st), 200);
	for (int x = 0; x < 4; x++) {
		int i = (x + 1) % 4;	/* gke last */
		struct member m;
		struct prov_pools p;
		struct kube_capacity kc;
		const struct prov_ops *ops;
		struct err e = { 0 };

		member(NAMES[i], IDS[i], &m);
		ops = prov_ops_get(m.cloud.provider);
		prov_pools_init(&p);
		if (!prov_list_pools(&m.cloud, &m.k, &p, &e))
			fail_msg("%s pools: %s %s", NAMES[i], e.code, e.msg);
		kube_capacity_init(&kc, ops->pool_label, ops->rack_label);
		if (!kube_capacity_get(&m.k, &kc, &e))
			fail_msg("%s kube: %s %s", NAMES[i], e.code, e.msg);
		assert_true(p.n > 0);
		for (size_t k = 0; k < p.n; k++) {
			json_t *sp = state_pool(st, NAMES[i], p.v[k].name), *rk;
			long long fa = 0, racks = 0;
			const char *rname;

			assert_non_null(sp);
			assert_int_equal(p.v[k].nodes, json_integer_value(json_object_get(sp,
			    "nodes")));
			assert_int_equal(p.v[k].max_nodes, json_integer_value(json_object_get(sp,
			    "max")));
			assert_int_equal(p.v[k].spot, json_is_true(json_object_get(sp, "spot")));
			if (strcmp(m.cloud.provider, "hyperpod") != 0)
				assert_int_equal(p.v[k].autoscaling,
				    json_is_true(json_object_get(sp, "autoscaling")));
			for (size_t n = 0; n < kc.n; n++)
				if (strcmp(kc.v[n].pool, p.v[k].name) == 0 && kc.v[n].ready)
					fa += kube_free_accel(&kc.v[n]);
			assert_int_equal(fa, json_integer_value(json_object_get(sp,
			    "free_accelerators")));
			json_object_foreach(json_object_get(sp, "racks"), rname, rk) {
				long long rf = 0;

				for (size_t n = 0; n < kc.n; n++)
					if (strcmp(kc.v[n].rack, rname) == 0 && kc.v[n].ready)
						rf += kube_free_accel(&kc.v[n]);
				assert_int_equal(rf, json_integer_value(json_object_get(rk,
				    "free_accelerators")));
				racks++;
			}
			assert_true(racks > 0);
		}
		if (i == 0) {	/* quota and reservations of the GKE project */
			struct prov_pool *h = prov_pools_find(&p, "h100");

			assert_non_null(h);
			assert_int_equal(h->quota_left, 64 - 24);
			assert_int_equal(h->reserved, (2 - 1 + 1) * 8);
		}
		if (i == 1)	/* page_size 2: three agent pools take two pages */
			assert_true(p.pages >= 2 + 1 + 1);
		assert_true(kc.pages >= 2);	/* nodes and pods, paged by 2 */
		prov_pools_cleanup(&p);
		kube_capacity_cleanup(&kc);
	}
	json_decref(st);
}

static void
test_expired_token(void **state)
{
	struct member m;
	struct prov_pools p;
	struct err e = { 0 };

	(void)state;
	member(NAMES[0], IDS[0], &m);
	prov_pools_init(&p);
	assert_true(prov_list_pools(&m.cloud, &m.k, &p, &e));	/* token cached */
	prov_pools_cleanup(&p);
	assert_int_equal(harness_sim(&L, "POST", "/_sim/expire-tokens", "{\"provider\":\"gcp\"}",
	    NULL), 200);
	prov_pools_init(&p);
	if (!prov_list_pools(&m.cloud, &m.k, &p, &e))	/* 401, fresh token, once */
		fail_msg("after expiry: %s %s", e.code, e.msg);
	assert_true(p.n == 4);
	prov_pools_cleanup(&p);
}

static double
now_s(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static void
test_throttled(void **state)
{
	struct member m;
	struct prov_pools p;
	struct err e = { 0 };
	double t0;

	(void)state;
	member(NAMES[2], IDS[2], &m);
	assert_int_equal(harness_sim(&L, "POST", "/_sim/faults", "{\"service\":\"sagemaker\","
	    "\"error_rate\":1,\"error_status\":429,\"retry_after\":1,\"count\":1}", NULL), 201);
	prov_pools_init(&p);
	t0 = now_s();
	if (!prov_list_pools(&m.cloud, &m.k, &p, &e))
		fail_msg("throttled: %s %s", e.code, e.msg);
	assert_true(now_s() - t0 >= 0.9);	/* waited for Retry-After */
	assert_int_equal(p.n, 3);
	prov_pools_cleanup(&p);
	harness_sim(&L, "DELETE", "/_sim/faults", NULL, NULL);
}

struct side {
	struct prov_fetch	 f;
	struct kube_capacity	 kc;
	double			 t_done;
};

static void
side_done(struct prov_fetch *f)
{
	((struct side *)f->user)->t_done = now_s();
}

/* One cluster's API server hangs: it times out, the other three answer on the same batch. */
static void
test_hang(void **state)
{
	struct http_batch *b = http_batch_new(8);
	struct member m[4];
	struct side s[4];
	struct err e = { 0 };
	double t0;

	(void)state;
	assert_int_equal(harness_sim(&L, "POST", "/_sim/faults",
	    "{\"service\":\"k8s\",\"cluster\":"
	    "\"test-aks-eus\",\"hang\":true,\"hang_s\":20}", NULL), 201);
	t0 = now_s();
	for (int i = 0; i < 4; i++) {
		member(NAMES[i], IDS[i], &m[i]);
		prov_fetch_init(&s[i].f, b);
		s[i].f.timeout_ms = 1200;
		s[i].f.done = side_done;
		s[i].f.user = &s[i];
		kube_capacity_init(&s[i].kc, "fleet.io/pool", "fleet.io/rack");
		assert_true(kube_capacity_begin(&s[i].f, &m[i].k, &s[i].kc, &e));
	}
	assert_true(http_batch_run(b, &e));
	for (int i = 0; i < 4; i++) {
		if (i == 1) {
			if (!s[i].f.failed)
				fail_msg("hung cluster answered: %zu nodes after %.2fs", s[i].kc.n,
				    s[i].t_done - t0);
			assert_string_equal(s[i].f.err.code, "http.timeout");
		} else {
			if (s[i].f.failed)
				fail_msg("%s failed: %s %s", NAMES[i], s[i].f.err.code,
				    s[i].f.err.msg);
			assert_true(s[i].t_done - t0 < 1.0);	/* not held up by the hang */
			assert_true(s[i].kc.n > 0);
		}
		kube_capacity_cleanup(&s[i].kc);
	}
	assert_true(now_s() - t0 < 5);
	http_batch_free(b);
	harness_sim(&L, "DELETE", "/_sim/faults", NULL, NULL);
}

static void
test_wrong_ca(void **state)
{
	struct member m;
	struct err e = { 0 };
	char *other = harness_slurp("/etc/ssl/certs/ca-certificates.crt");

	(void)state;
	member(NAMES[0], IDS[0], &m);
	assert_true(kube_check(&m.k, &e));
	m.k.ca_pem = other;	/* real CAs, none of which signed cloudsim's */
	assert_false(kube_check(&m.k, &e));
	assert_string_equal(e.code, "http.transport");
	free(other);
	member(NAMES[0], IDS[0], &m);
	m.k.token = "wrong-token";
	assert_false(kube_check(&m.k, &e));
	assert_string_equal(e.code, "kube.unauthorized");
}

static bool
check_ok(json_t *checks, const char *name)
{
	json_t *c;
	size_t i;

	json_array_foreach(checks, i, c)
		if (strcmp(harness_js(c, "check"), name) == 0)
			return json_is_true(json_object_get(c, "ok"));
	fail_msg("check %s missing", name);
	return false;
}

static void
test_verify_hyperpod(void **state)
{
	struct member m;
	json_t *checks = json_array();
	struct err e = { 0 };
	char body[512];

	(void)state;
	member(NAMES[2], IDS[2], &m);
	/* the cluster role lacks the tag: one failed check, the rest pass */
	if (prov_hyperpod_ops.verify_pair(&m.cloud, m.cloud.control_plane_role,
	    m.cloud.cluster_role, checks, &e))
		fail_msg("verified without the cluster role tag");
	assert_int_equal(e.status, 422);
	assert_true(check_ok(checks, "control_plane_assume"));
	assert_true(check_ok(checks, "control_plane_role_cloud_tag"));
	assert_false(check_ok(checks, "cluster_role_cloud_tag"));
	json_decref(checks);
	snprintf(body, sizeof(body), "{\"provider\":\"aws\",\"role_arn\":\"%s\",\"tags\":"
	    "{\"fleet.io/cloud-id\":\"%s\"}}", m.cloud.cluster_role, IDS[2]);
	assert_int_equal(harness_sim(&L, "POST", "/_sim/iam", body, NULL), 200);
	checks = json_array();
	memset(&e, 0, sizeof(e));
	if (!prov_hyperpod_ops.verify_pair(&m.cloud, m.cloud.control_plane_role,
	    m.cloud.cluster_role, checks, &e))
		fail_msg("happy path: %s %s", e.code, json_dumps(checks, 0));
	json_decref(checks);
	/* wrong external id */
	snprintf(m.cloud.external_id, sizeof(m.cloud.external_id), "ext-wrong-0000000000000");
	checks = json_array();
	memset(&e, 0, sizeof(e));
	assert_false(prov_hyperpod_ops.verify_pair(&m.cloud, m.cloud.control_plane_role,
	    m.cloud.cluster_role, checks, &e));
	assert_int_equal(e.status, 422);
	assert_false(check_ok(checks, "control_plane_assume"));
	json_decref(checks);
	prov_creds_invalidate(IDS[2]);
}

static void
test_verify_gke(void **state)
{
	struct member m;
	json_t *checks = json_array();
	struct err e = { 0 };
	char body[512];

	(void)state;
	member(NAMES[0], IDS[0], &m);
	assert_false(prov_gke_ops.verify_pair(&m.cloud, m.cloud.control_plane_role,
	    m.cloud.cluster_role, checks, &e));
	assert_int_equal(e.status, 422);
	assert_true(check_ok(checks, "control_plane_token"));
	assert_false(check_ok(checks, "control_plane_role_cloud_label"));
	json_decref(checks);
	for (int k = 0; k < 2; k++) {
		snprintf(body, sizeof(body), "{\"provider\":\"gcp\",\"service_account\":\"%s\","
		    "\"description\":\"fleetd; labels: fleet-io-cloud-id=%s\"}", k ?
		    m.cloud.cluster_role : m.cloud.control_plane_role, IDS[0]);
		assert_int_equal(harness_sim(&L, "POST", "/_sim/iam", body, NULL), 200);
	}
	checks = json_array();
	memset(&e, 0, sizeof(e));
	if (!prov_gke_ops.verify_pair(&m.cloud, m.cloud.control_plane_role,
	    m.cloud.cluster_role, checks, &e))
		fail_msg("happy path: %s %s", e.code, e.msg);
	json_decref(checks);
	/* an identity fleetd may not impersonate */
	checks = json_array();
	memset(&e, 0, sizeof(e));
	assert_false(prov_gke_ops.verify_pair(&m.cloud, m.cloud.cluster_role,
	    m.cloud.control_plane_role, checks, &e));
	assert_false(check_ok(checks, "control_plane_token"));
	json_decref(checks);
}

static long
sim_azure(const char *rid, const char *fields)
{
	char body[1200];

	snprintf(body, sizeof(body), "{\"provider\":\"azure\",\"resource_id\":\"%s\",%s}", rid,
	    fields);
	return harness_sim(&L, "POST", "/_sim/iam", body, NULL);
}

static bool
verify_aks(struct member *m, const char *cp, const char *cl, json_t **checks, struct err *e)
{
	json_decref(*checks);
	*checks = json_array();
	memset(e, 0, sizeof(*e));
	return prov_aks_ops.verify_pair(&m->cloud, cp, cl, *checks, e);
}

/* The AKS pair: the control-plane managed identity's token by workload identity
 * federation, both identities tagged with the cloud id. */
static void
test_verify_aks(void **state)
{
	struct member m;
	json_t *checks = NULL, *c;
	struct err e = { 0 };
	char fields[400], gone[400];
	const char *cp, *cl;
	size_t i;

	(void)state;
	member(NAMES[1], IDS[1], &m);
	cp = m.cloud.control_plane_role;
	cl = m.cloud.cluster_role;
	/* untagged: the token is obtained, both tag checks fail */
	assert_false(verify_aks(&m, cp, cl, &checks, &e));
	assert_int_equal(e.status, 422);
	assert_true(check_ok(checks, "control_plane_token"));
	assert_true(check_ok(checks, "control_plane_role_exists"));
	assert_false(check_ok(checks, "control_plane_role_cloud_tag"));
	assert_false(check_ok(checks, "cluster_role_cloud_tag"));
	/* missing tag on the control plane only */
	snprintf(fields, sizeof(fields), "\"tags\":{\"fleet.io/cloud-id\":\"%s\"}", IDS[1]);
	assert_int_equal(sim_azure(cl, fields), 200);
	assert_false(verify_aks(&m, cp, cl, &checks, &e));
	assert_true(check_ok(checks, "cluster_role_cloud_tag"));
	assert_false(check_ok(checks, "control_plane_role_cloud_tag"));
	/* happy path */
	assert_int_equal(sim_azure(cp, fields), 200);
	if (!verify_aks(&m, cp, cl, &checks, &e))
		fail_msg("happy path: %s %s", e.code, json_dumps(checks, 0));
	json_array_foreach(checks, i, c)
		assert_true(json_is_true(json_object_get(c, "ok")));
	/* no federated credential: 422 naming control_plane_token and what to create */
	assert_int_equal(sim_azure(cp, "\"federated_identity_credentials\":[]"), 200);
	assert_false(verify_aks(&m, cp, cl, &checks, &e));
	assert_int_equal(e.status, 422);
	assert_string_equal(e.code, "iam.verification_failed");
	assert_false(check_ok(checks, "control_plane_token"));
	assert_true(check_ok(checks, "control_plane_role_cloud_tag"));	/* read by fleetd */
	assert_true(check_ok(checks, "cluster_role_cloud_tag"));
	json_array_foreach(checks, i, c)
		if (strcmp(harness_js(c, "check"), "control_plane_token") == 0) {
			assert_non_null(strstr(harness_js(c, "message"), "AADSTS70021"));
			assert_non_null(strstr(harness_js(c, "message"),
			    "api://AzureADTokenExchange"));
			assert_string_equal(harness_js(c, "pointer"), "/control_plane_role");
		}
	/* the poller's credentials fail the same way, then work once the credential is back */
	{
		struct prov_creds cr;

		prov_creds_invalidate(IDS[1]);
		assert_false(prov_creds_get(&m.cloud, NULL, &cr, &e));
		assert_int_equal(e.status, 401);
	}
	snprintf(fields, sizeof(fields), "\"federated_subject\":\"%s\"", cfg.azure_client_id);
	assert_int_equal(sim_azure(cp, fields), 200);
	if (!verify_aks(&m, cp, cl, &checks, &e))
		fail_msg("retry after the fix: %s %s", e.code, json_dumps(checks, 0));
	/* the same identity twice */
	assert_false(verify_aks(&m, cp, cp, &checks, &e));
	assert_false(check_ok(checks, "identities_distinct"));
	/* an identity that does not exist */
	snprintf(gone, sizeof(gone), "/subscriptions/%s/resourceGroups/%s/providers/"
	    "Microsoft.ManagedIdentity/userAssignedIdentities/fleet-cp-missing",
	    m.cloud.subscription, m.cloud.resource_group);
	assert_false(verify_aks(&m, gone, cl, &checks, &e));
	assert_false(check_ok(checks, "control_plane_token"));
	assert_false(check_ok(checks, "control_plane_role_exists"));
	assert_true(check_ok(checks, "cluster_role_exists"));
	/* wrong tenant: another tenant cloudsim knows, then one it does not */
	snprintf(m.cloud.tenant, sizeof(m.cloud.tenant), "9c0d1e2f-3a4b-4c5d-8e6f-7a8b9c0d1e2f");
	assert_false(verify_aks(&m, cp, cl, &checks, &e));
	assert_int_equal(e.status, 422);
	assert_false(check_ok(checks, "control_plane_token"));
	assert_false(check_ok(checks, "control_plane_role_exists"));
	json_array_foreach(checks, i, c)
		if (strcmp(harness_js(c, "check"), "control_plane_role_exists") == 0)
			assert_non_null(strstr(harness_js(c, "message"), "wrong issuer"));
	snprintf(m.cloud.tenant, sizeof(m.cloud.tenant), "00000000-1111-4222-8333-444444444444");
	assert_false(verify_aks(&m, cp, cl, &checks, &e));
	assert_int_equal(e.status, 422);
	assert_false(check_ok(checks, "control_plane_token"));
	assert_false(check_ok(checks, "cluster_role_exists"));
	json_decref(checks);
	prov_creds_invalidate(IDS[1]);
}

static void
test_apply(struct member *m)
{
	const char *rc = "{\"apiVersion\":\"ray.io/v1\",\"kind\":\"RayCluster\",\"metadata\":"
	    "{\"name\":\"rc1\",\"namespace\":\"fleet-jobs\",\"labels\":{\"fleet.io/job-id\":"
	    "\"j1\"}},\"spec\":{\"rayVersion\":\"2.52.0\",\"headGroupSpec\":{\"rayStartParams\":{},"
	    "\"template\":{\"spec\":{\"containers\":[{\"name\":\"ray-head\",\"image\":"
	    "\"rayproject/ray:2.52.0\",\"resources\":{\"requests\":{\"cpu\":\"1\",\"memory\":"
	    "\"2Gi\"},\"limits\":{\"cpu\":\"1\",\"memory\":\"2Gi\"}}}]}}}}}";
	json_t *obj = json_loads(rc, 0, NULL), *live = NULL, *got = NULL;
	struct kube_ref r1, r2;
	struct err e = { 0 };
	bool existed = false;

	assert_non_null(obj);
	if (!kube_apply(&m->k, obj, &r1, &live, &e))
		fail_msg("apply: %s %s %s", e.code, e.msg, e.detail);
	assert_true(r1.uid[0] != '\0' && r1.resource_version[0] != '\0');
	assert_string_equal(json_string_value(json_object_get(json_object_get(live, "metadata"),
	    "name")), "rc1");
	json_decref(live);
	assert_true(kube_apply(&m->k, obj, &r2, NULL, &e));	/* idempotent: same object */
	assert_string_equal(r1.uid, r2.uid);
	assert_true(kube_get_object(&m->k, "ray.io/v1", "RayCluster", "fleet-jobs", "rc1", &got,
	    &e));
	json_decref(got);
	assert_true(kube_delete_object(&m->k, "ray.io/v1", "RayCluster", "fleet-jobs", "rc1",
	    &existed, &e));
	assert_true(existed);
	json_object_set_new(obj, "kind", json_string("Ray Cluster"));
	assert_false(kube_apply(&m->k, obj, &r2, NULL, &e));
	assert_string_equal(e.code, "kube.bad_object");
	json_decref(obj);
}

static void
test_kube_objects(void **state)
{
	struct member m;
	struct err e = { 0 };
	json_t *o = NULL, *ev = NULL;
	bool existed = true;

	(void)state;
	member(NAMES[0], IDS[0], &m);
	assert_true(kube_ensure_namespace(&m.k, "fleet-jobs", &e));
	assert_true(kube_ensure_namespace(&m.k, "fleet-jobs", &e));
	assert_true(kube_get_object(&m.k, "v1", "Namespace", NULL, "fleet-jobs", &o, &e));
	assert_string_equal(harness_js(o, "metadata.name"), "fleet-jobs");
	json_decref(o);
	assert_false(kube_get_object(&m.k, "ray.io/v1", "RayJob", "fleet-jobs", "nope", &o, &e));
	assert_string_equal(e.code, "kube.not_found");
	assert_true(kube_delete_object(&m.k, "ray.io/v1", "RayJob", "fleet-jobs", "nope",
	    &existed, &e));
	assert_false(existed);
	assert_true(kube_list_events(&m.k, "fleet-jobs", "RayJob", "nope", &ev, &e));
	assert_int_equal(json_array_size(ev), 0);
	json_decref(ev);
	test_apply(&m);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_ground_truth),
		cmocka_unit_test(test_expired_token),
		cmocka_unit_test(test_throttled),
		cmocka_unit_test(test_hang),
		cmocka_unit_test(test_wrong_ca),
		cmocka_unit_test(test_verify_hyperpod),
		cmocka_unit_test(test_verify_gke),
		cmocka_unit_test(test_verify_aks),
		cmocka_unit_test(test_kube_objects),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
