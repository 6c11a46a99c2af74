/* test_registry_clusters: member clusters of registered clouds against cloudsim and a
 * scratch database — the prod walk-through (two calls, a cluster, every attempt to
 * break its isolation refused), bad cluster input and reachability, list filters, PUT and
 * DELETE of clouds and clusters (If-Match, versions, immutable fields), the audit rows, and
 * no credential in any answer, log line or column.  Registration itself: test_registry. */
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

static struct fleetd_proc fd;
static struct harness_cs cs;
static char dburl[512];
static char *admin, *oper, *viewer, *staging_admin;
/* active clouds: aks in test (eastus), hyperpod in test (us-west-2) and staging (us-east-1) */
static char aks_cloud[40], hp_cloud[40], hp_b_cloud[40];
static char aks_account[400], gke_account[400];
static char wrong_ca[8192];
static char prod_cloud[40], prod_cluster[40], clusters[3][40];	/* gke, aks, hyperpod A */
static char hp_b_cluster[40];
static void
account(const char *cluster, char *out, size_t n)
{
	json_t *a = harness_account_of(harness_cs_cluster(&cs, cluster));
	char *s = json_dumps(a, JSON_COMPACT);

	snprintf(out, n, "%s", s);
	free(s);
	json_decref(a);
}

static int
setup(void **state)
{
	(void)state;
	harness_db_create("registry_clusters", dburl, sizeof(dburl));
	harness_cs_start(&cs, NULL, NULL);
	harness_fleetd_start(&fd, dburl, (const char *const *)cs.env);
	admin = harness_keep(harness_token(dburl, "admin", "*"));
	oper = harness_keep(harness_token(dburl, "operator", "*"));
	viewer = harness_keep(harness_token(dburl, "viewer", "*"));
	staging_admin = harness_keep(harness_token(dburl, "admin", "staging"));
	for (int i = 0; i < 4; i++)
		harness_post_created(admin, "/v1/environments", (const char *[]){
		    "{\"name\":\"prod\"}", "{\"name\":\"staging\"}", "{\"name\":\"test\"}",
		    "{\"name\":\"dev\"}" }[i]);
	harness_cloud(&cs, admin, "test-aks-eus", NULL, aks_cloud);
	harness_cloud(&cs, admin, "test-hp-usw2", NULL, hp_cloud);
	harness_cloud(&cs, admin, "test-hp-use1", "staging", hp_b_cloud);
	for (int i = 0; i < 3; i++) {
		const char *id = (const char *[]){ aks_cloud, hp_cloud, hp_b_cloud }[i];

		harness_audit_expect("cloud.create", id);
		harness_audit_expect("cloud.iam.lock", id);
	}
	account("test-aks-eus", aks_account, sizeof(aks_account));
	account("test-gke-usc1", gke_account, sizeof(gke_account));
	return 0;
}

/* A cluster body for cloudsim's member cluster cs; NULL overrides keep its own values. */
static char *
cluster_body(const char *member, const char *name, const char *api, const char *ca,
	     const char *token, json_t *labels)
{
	json_t *c = harness_cs_cluster(&cs, member), *b;
	char *text, *pem = harness_slurp(harness_js(c, "ca_file"));

	assert_non_null(pem);
	b = json_pack("{s:s, s:s, s:s, s:{s:s}, s:s, s:s}", "name", name ? name : member,
	    "api_server", api ? api : harness_js(c, "api_server"), "ca_cert", ca ? ca : pem,
	    "credentials", "token", token ? token : harness_js(c, "token"), "provider_cluster_id",
	    harness_js(c, "provider_cluster_id"), "batch_scheduler", "kueue");
	if (labels != NULL)
		json_object_set(b, "labels", labels);
	text = json_dumps(b, JSON_COMPACT);
	json_decref(b);
	free(pem);
	return text;
}

static long
attach(const char *tok, const char *cloud, char *body)
{
	char path[128];

	snprintf(path, sizeof(path), "/v1/clouds/%s/clusters", cloud);
	harness_call("POST", tok, body, "%s", path);
	free(body);
	return harness_r.status;
}

/* The walk-through: a prod GKE cloud in us-central1 in two calls, active, a member
 * cluster attached, and every attempt to break its isolation refused. */
static void
test_prod_walkthrough(void **state)
{
	const char *cp, *cl;
	char path[200], dev_cloud[40], body[600];
	json_t *gke = harness_cs_cluster(&cs, "test-gke-usc1"), *cloud;

	(void)state;
	/* call 1 */
	assert_int_equal(harness_cloud_create(admin, "prod-usc1", "prod", "gke", "us-central1",
	    gke_account), 201);
	snprintf(prod_cloud, sizeof(prod_cloud), "%s", harness_js(harness_r.json, "id"));
	harness_audit_expect("cloud.create", prod_cloud);
	/* what Terraform does from iam.required: tags both identities, lets fleetd in */
	cloud = json_incref(harness_r.json);
	harness_identities(&cs, gke, cloud, &cp, &cl);
	json_decref(cloud);
	/* call 2 */
	if (harness_cloud_iam(admin, prod_cloud, cp, cl, false) != 200)
		fail_msg("phase 2: %ld %s", harness_r.status, harness_r.body);
	harness_audit_expect("cloud.iam.lock", prod_cloud);
	snprintf(path, sizeof(path), "/v1/clouds/%s", prod_cloud);
	assert_int_equal(harness_call("GET", viewer, NULL, "%s", path), 200);
	assert_string_equal(harness_js(harness_r.json, "state"), "active");
	assert_string_equal(harness_js(harness_r.json, "environment"), "prod");
	assert_string_equal(harness_js(harness_r.json, "region"), "us-central1");
	/* a member cluster */
	harness_secret(harness_js(gke, "token"));
	assert_int_equal(attach(viewer, prod_cloud, cluster_body("test-gke-usc1", "prod-a",
	    NULL, NULL, NULL, NULL)), 403);
	if (attach(admin, prod_cloud, cluster_body("test-gke-usc1", "prod-a", NULL, NULL, NULL,
	    NULL)) != 201)
		fail_msg("attach: %ld %s", harness_r.status, harness_r.body);
	snprintf(prod_cluster, sizeof(prod_cluster), "%s", harness_js(harness_r.json, "id"));
	harness_audit_expect("cluster.create", prod_cluster);
	assert_null(json_object_get(harness_r.json, "credentials"));
	assert_string_equal(harness_js(harness_r.json, "environment"), "prod");
	assert_string_equal(harness_js(harness_r.json, "state"), "ready");

	/* the prod identities serve no other cloud */
	assert_int_equal(harness_cloud_create(admin, "dev-usc1", "dev", "gke", "us-central1",
	    gke_account), 201);
	snprintf(dev_cloud, sizeof(dev_cloud), "%s", harness_js(harness_r.json, "id"));
	harness_audit_expect("cloud.create", dev_cloud);
	harness_cloud_iam(admin, dev_cloud, cp, "fleet-nodes-dev@fleet-test.iam.gserviceaccount.com", false);
	harness_expect_problem(NULL, 409, "iam.identity_in_use", "/control_plane_role");
	harness_cloud_iam(admin, dev_cloud, "fleet-cp-dev@fleet-test.iam.gserviceaccount.com", cl, false);
	harness_expect_problem(NULL, 409, "iam.identity_in_use", "/cluster_role");
	/* its pair changes only by an admin's verified rotation */
	harness_cloud_iam(admin, prod_cloud, cp, cl, false);
	harness_expect_problem(NULL, 409, "iam.locked", NULL);
	harness_cloud_iam(oper, prod_cloud, cp, cl, true);
	harness_expect_status(NULL, 403);
	/* nothing moves it to another environment, region or account */
	snprintf(body, sizeof(body), "{\"name\":\"prod-usc1\",\"environment\":\"dev\","
	    "\"provider\":\"gke\",\"region\":\"us-central1\",\"account\":%s}", gke_account);
	harness_call("PUT", admin, body, "%s", path);
	harness_expect_problem(NULL, 409, "cloud.immutable", "/environment");
	snprintf(body, sizeof(body), "{\"name\":\"prod-usc1\",\"environment\":\"prod\","
	    "\"provider\":\"gke\",\"region\":\"us-east4\",\"account\":%s}", gke_account);
	harness_call("PUT", admin, body, "%s", path);
	harness_expect_problem(NULL, 409, "cloud.immutable", "/region");
	snprintf(body, sizeof(body), "{\"name\":\"prod-usc1\",\"environment\":\"prod\","
	    "\"provider\":\"gke\",\"region\":\"us-central1\",\"account\":{\"project\":"
	    "\"fleet-other\"}}");
	harness_call("PUT", admin, body, "%s", path);
	harness_expect_problem(NULL, 409, "cloud.immutable", "/account");
	/* a token of another environment does not even see it */
	assert_int_equal(harness_call("GET", staging_admin, NULL, "%s", path), 404);
	assert_int_equal(harness_call("DELETE", staging_admin, NULL, "%s", path), 404);
	assert_int_equal(harness_cloud_iam(staging_admin, prod_cloud, cp, cl, true), 404);
	assert_int_equal(attach(staging_admin, prod_cloud, cluster_body("test-gke-usc1",
	    "sneaky", NULL, NULL, NULL, NULL)), 404);
	snprintf(path, sizeof(path), "/v1/clusters/%s", prod_cluster);
	assert_int_equal(harness_call("GET", staging_admin, NULL, "%s", path), 404);
	assert_int_equal(harness_call("GET", staging_admin, NULL, "/v1/clusters?environment=prod"),
	    200);
	assert_int_equal(json_array_size(json_object_get(harness_r.json, "items")), 0);
	assert_int_equal(harness_call("GET", staging_admin, NULL, "/v1/clouds"), 200);
	assert_null(strstr(harness_r.body, prod_cloud));
	/* the cluster is reachable only under its own cloud */
	snprintf(path, sizeof(path), "/v1/clouds/%s/clusters/%s", dev_cloud, prod_cluster);
	assert_int_equal(harness_call("GET", admin, NULL, "%s", path), 404);
	/* and a cloud with clusters is not deleted */
	snprintf(path, sizeof(path), "/v1/clouds/%s", prod_cloud);
	harness_call("DELETE", admin, NULL, "%s", path);
	harness_expect_problem(NULL, 409, "cloud.in_use", NULL);
	/* a pending cloud takes no clusters */
	attach(admin, dev_cloud, cluster_body("test-gke-usc1", "dev-a", NULL, NULL, NULL, NULL));
	harness_expect_problem(NULL, 409, "cloud.not_active", NULL);
}

static void
test_cluster_bad_input(void **state)
{
	char planted[64];
	const char *aks = aks_cloud;

	(void)state;
	attach(admin, aks, cluster_body("test-aks-eus", NULL, "http://127.0.0.1:1/k8s/x", NULL,
	    NULL, NULL));
	harness_expect_problem(NULL, 400, "cluster.bad_api_server", "/api_server");
	attach(admin, aks, cluster_body("test-aks-eus", NULL, NULL, "not a certificate", NULL,
	    NULL));
	harness_expect_problem(NULL, 400, "cluster.bad_ca", "/ca_cert");
	attach(admin, aks, cluster_body("test-aks-eus", NULL, NULL, "-----BEGIN CERTIFICATE-----"
	    "\n!!!!\n-----END CERTIFICATE-----\n", NULL, NULL));
	harness_expect_problem(NULL, 400, "cluster.bad_ca", "/ca_cert");
	attach(admin, aks, cluster_body("test-aks-eus", "Bad_Name", NULL, NULL, NULL, NULL));
	harness_expect_problem(NULL, 400, "cluster.bad_name", "/name");
	harness_call("POST", admin, "{}",
	    "/v1/clouds/00000000-0000-4000-8000-000000000000/clusters");
	harness_expect_status(NULL, 404);
	/* a gke cluster id under an aks cloud */
	{
		char path[128], *b = cluster_body("test-gke-usc1", "wrong-kind", NULL, NULL, NULL,
		    NULL);

		snprintf(path, sizeof(path), "/v1/clouds/%s/clusters", aks);
		harness_call("POST", admin, b, "%s", path);
		free(b);
		harness_expect_problem(NULL, 400, "cluster.bad_provider_id",
		    "/provider_cluster_id");
	}
	/* reachability: wrong token, wrong CA */
	snprintf(planted, sizeof(planted), "planted-wrong-token-%d-7f3a", (int)getpid());
	harness_secret(planted);
	attach(admin, aks, cluster_body("test-aks-eus", NULL, NULL, NULL, planted, NULL));
	harness_expect_problem(NULL, 422, "cluster.unauthorized", "/credentials/token");
	attach(admin, aks, cluster_body("test-aks-eus", NULL, NULL, wrong_ca, NULL, NULL));
	harness_expect_problem(NULL, 422, "cluster.unreachable", "/api_server");
	assert_int_equal(harness_sql_long("SELECT count(*) FROM clusters WHERE cloud_id = '%s'",
	    aks), 0);
}

static void
test_cluster_attach_and_filters(void **state)
{
	static const char *const names[3] = { "test-gke-usc1", "test-aks-eus", "test-hp-usw2" };
	const char *clouds[3] = { NULL, aks_cloud, hp_cloud };
	json_t *labels = json_pack("{s:s}", "team", "ml");

	(void)state;
	for (int i = 1; i < 3; i++) {
		harness_secret(harness_js(harness_cs_cluster(&cs, names[i]), "token"));
		if (attach(admin, clouds[i], cluster_body(names[i], NULL, NULL, NULL, NULL,
		    labels)) != 201)
			fail_msg("attach %s: %ld %s", names[i], harness_r.status, harness_r.body);
		snprintf(clusters[i], sizeof(clusters[i]), "%s", harness_js(harness_r.json, "id"));
		harness_audit_expect("cluster.create", clusters[i]);
		/* the same name twice under one cloud */
		attach(admin, clouds[i], cluster_body(names[i], NULL, NULL, NULL, NULL, NULL));
		harness_expect_problem(NULL, 409, "cluster.exists", "/name");
		/* another name, the same cloud cluster: what conflicts is its provider id */
		attach(admin, clouds[i], cluster_body(names[i], "renamed", NULL, NULL, NULL, NULL));
		harness_expect_problem(NULL, 409, "cluster.exists", "/provider_cluster_id");
		assert_non_null(strstr(harness_js(harness_r.json, "title"), "provider cluster id"));
		assert_null(strstr(harness_r.body, "named"));
	}
	snprintf(clusters[0], sizeof(clusters[0]), "%s", prod_cluster);
	harness_secret(harness_js(harness_cs_cluster(&cs, "test-hp-use1"), "token"));
	if (attach(admin, hp_b_cloud, cluster_body("test-hp-use1", NULL, NULL, NULL, NULL,
	    NULL)) != 201)
		fail_msg("attach test-hp-use1: %ld %s", harness_r.status, harness_r.body);
	snprintf(hp_b_cluster, sizeof(hp_b_cluster), "%s", harness_js(harness_r.json, "id"));
	harness_audit_expect("cluster.create", hp_b_cluster);
	json_decref(labels);

	{
		static const struct {
			const char *query;
			int want[4];	/* gke prod, aks test, hp test, hp staging */
		} f[] = {
			{ "", { 1, 1, 1, 1 } },
			{ "?environment=prod", { 1, 0, 0, 0 } },
			{ "?environment=test", { 0, 1, 1, 0 } },
			{ "?environment=staging", { 0, 0, 0, 1 } },
			{ "?region=eastus", { 0, 1, 0, 0 } },
			{ "?region=us-central1", { 1, 0, 0, 0 } },
			{ "?provider=hyperpod", { 0, 0, 1, 1 } },
			{ "?provider=hyperpod&environment=staging", { 0, 0, 0, 1 } },
			{ "?provider=gke&environment=test", { 0, 0, 0, 0 } },
			{ "?environment=nowhere", { 0, 0, 0, 0 } },
		};
		const char *ids[4] = { clusters[0], clusters[1], clusters[2], hp_b_cluster };

		for (size_t i = 0; i < sizeof(f) / sizeof(f[0]); i++) {
			char path[128];
			int n = 0;

			snprintf(path, sizeof(path), "/v1/clusters%s", f[i].query);
			assert_int_equal(harness_call("GET", viewer, NULL, "%s", path), 200);
			for (int k = 0; k < 4; k++) {
				n += f[i].want[k];
				if ((strstr(harness_r.body, ids[k]) != NULL) != f[i].want[k])
					fail_msg("%s: cluster %d: %s", path, k, harness_r.body);
			}
			assert_int_equal(json_array_size(json_object_get(harness_r.json, "items")),
			    n);
		}
		/* the staging token sees only its own */
		assert_int_equal(harness_call("GET", staging_admin, NULL, "/v1/clusters"), 200);
		assert_int_equal(json_array_size(json_object_get(harness_r.json, "items")), 1);
		assert_non_null(strstr(harness_r.body, hp_b_cluster));
		/* paging */
		assert_int_equal(harness_call("GET", viewer, NULL, "/v1/clusters?limit=3"), 200);
		assert_int_equal(json_array_size(json_object_get(harness_r.json, "items")), 3);
	}
}

static char *
etag_of(const char *path)
{
	assert_int_equal(harness_call("GET", admin, NULL, "%s", path), 200);
	return harness_header(&harness_r, "ETag");
}

static void
test_cloud_put_delete(void **state)
{
	char path[128], body[800], stale[64], im[96], *etag, *etag2;
	long version;

	(void)state;
	snprintf(path, sizeof(path), "/v1/clouds/%s", aks_cloud);
	etag = etag_of(path);
	assert_non_null(etag);
	version = (long)json_integer_value(json_object_get(harness_r.json, "version"));
	/* identical PUT: same version, no audit */
	snprintf(body, sizeof(body), "{\"name\":\"test-aks-eastus\",\"environment\":\"test\","
	    "\"provider\":\"aks\",\"region\":\"eastus\",\"account\":%s}", aks_account);
	snprintf(im, sizeof(im), "If-Match: %s", etag);
	assert_int_equal(harness_call_h("PUT", admin, body, (const char *const[]){ im, NULL },
	    "%s", path), 200);
	assert_int_equal(json_integer_value(json_object_get(harness_r.json, "version")), version);
	etag2 = harness_header(&harness_r, "ETag");
	assert_string_equal(etag, etag2);
	free(etag2);
	/* stale If-Match */
	snprintf(stale, sizeof(stale), "If-Match: \"%ld\"", version + 7);
	snprintf(body, sizeof(body), "{\"name\":\"aks-renamed\",\"environment\":\"test\","
	    "\"provider\":\"aks\",\"region\":\"eastus\",\"account\":%s}", aks_account);
	harness_call_h("PUT", admin, body, (const char *const[]){ stale, NULL }, "%s", path);
	harness_expect_problem(NULL, 412, "api.precondition_failed", NULL);
	/* a real change */
	assert_int_equal(harness_call_h("PUT", admin, body, (const char *const[]){ im, NULL },
	    "%s", path), 200);
	assert_int_equal(json_integer_value(json_object_get(harness_r.json, "version")),
	    version + 1);
	assert_string_equal(harness_js(harness_r.json, "name"), "aks-renamed");
	assert_string_equal(harness_js(harness_r.json, "state"), "active");
	harness_audit_expect("cloud.update", aks_cloud);
	assert_int_equal(harness_call("GET", viewer, NULL, "%s", path), 200);
	assert_string_equal(harness_js(harness_r.json, "name"), "aks-renamed");
	/* immutable fields */
	snprintf(body, sizeof(body), "{\"name\":\"aks-renamed\",\"environment\":\"test\","
	    "\"provider\":\"aks\",\"region\":\"westeurope\",\"account\":%s}", aks_account);
	harness_call("PUT", admin, body, "%s", path);
	harness_expect_problem(NULL, 409, "cloud.immutable", "/region");
	snprintf(body, sizeof(body), "{\"name\":\"aks-renamed\",\"environment\":\"test\","
	    "\"provider\":\"hyperpod\",\"region\":\"us-west-2\",\"account\":%s}", aks_account);
	harness_call("PUT", admin, body, "%s", path);
	assert_true(harness_r.status == 409 || harness_r.status == 400);
	assert_string_not_equal(harness_js(harness_r.json, "errors.0.pointer"), "");
	assert_true(strcmp(harness_js(harness_r.json, "errors.0.pointer"), "/provider") == 0 ||
	    strncmp(harness_js(harness_r.json, "errors.0.pointer"), "/account", 8) == 0);
	/* a cloud with a member cluster stays */
	harness_call("DELETE", admin, NULL, "%s", path);
	harness_expect_problem(NULL, 409, "cloud.in_use", NULL);
	free(etag);

	/* cluster PUT */
	{
		char cpath[128], *b;
		json_t *lab = json_pack("{s:s}", "team", "ml");

		snprintf(cpath, sizeof(cpath), "/v1/clusters/%s", clusters[1]);
		etag = etag_of(cpath);
		version = (long)json_integer_value(json_object_get(harness_r.json, "version"));
		b = cluster_body("test-aks-eus", NULL, NULL, NULL, NULL, lab);
		{	/* identical without credentials (write-only) keeps the version */
			json_t *o = json_loads(b, 0, NULL);

			json_object_del(o, "credentials");
			free(b);
			b = json_dumps(o, JSON_COMPACT);
			json_decref(o);
		}
		snprintf(im, sizeof(im), "If-Match: %s", etag);
		assert_int_equal(harness_call_h("PUT", admin, b, (const char *const[]){ im, NULL },
		    "%s", cpath),
		    200);
		assert_int_equal(json_integer_value(json_object_get(harness_r.json, "version")),
		    version);
		free(b);
		json_object_set_new(lab, "team", json_string("infra"));
		b = cluster_body("test-aks-eus", NULL, NULL, NULL, NULL, lab);
		harness_call_h("PUT", admin, b, (const char *const[]){ stale, NULL }, "%s", cpath);
		harness_expect_problem(NULL, 412, "api.precondition_failed", NULL);
		assert_int_equal(harness_call_h("PUT", admin, b, (const char *const[]){ im, NULL },
		    "%s", cpath),
		    200);
		assert_int_equal(json_integer_value(json_object_get(harness_r.json, "version")),
		    version + 1);
		assert_string_equal(harness_js(harness_r.json, "labels.team"), "infra");
		harness_audit_expect("cluster.update", clusters[1]);
		/* the same body again, the same token included: nothing changes */
		assert_int_equal(harness_call("PUT", admin, b, "%s", cpath), 200);
		assert_int_equal(json_integer_value(json_object_get(harness_r.json, "version")),
		    version + 1);
		free(b);
		b = cluster_body("test-aks-eus", "renamed", NULL, NULL, NULL, lab);
		harness_call("PUT", admin, b, "%s", cpath);
		harness_expect_problem(NULL, 409, "cluster.immutable", "/name");
		free(b);
		json_decref(lab);
		free(etag);
		/* DELETE: stale If-Match, 204, then 404 */
		harness_call_h("DELETE", admin, NULL, (const char *const[]){ stale, NULL }, "%s",
		    cpath);
		harness_expect_problem(NULL, 412, "api.precondition_failed", NULL);
		assert_int_equal(harness_call("DELETE", oper, NULL, "%s", cpath), 403);
		assert_int_equal(harness_call("DELETE", admin, NULL, "%s", cpath), 204);
		harness_audit_expect("cluster.delete", clusters[1]);
		assert_int_equal(harness_call("DELETE", admin, NULL, "%s", cpath), 404);
		assert_int_equal(harness_call("GET", admin, NULL, "%s", cpath), 404);
	}
	/* now the cloud goes, and with it its identities */
	assert_int_equal(harness_call("DELETE", admin, NULL, "%s", path), 204);
	harness_audit_expect("cloud.delete", aks_cloud);
	assert_int_equal(harness_call("GET", admin, NULL, "%s", path), 404);
	assert_int_equal(harness_call("DELETE", admin, NULL, "%s", path), 404);
	assert_int_equal(harness_sql_long("SELECT count(*) FROM iam_identities WHERE cloud_id ="
	    " '%s'", aks_cloud), 0);
}


static void
test_secrets(void **state)
{
	char planted[64], path[128], *log, *b;
	const char *const *secrets;
	int n;

	(void)state;
	/* a credential replaced by PUT is sealed like the first */
	snprintf(planted, sizeof(planted), "planted-put-token-%d-c0ffee", (int)getpid());
	harness_secret(planted);
	snprintf(path, sizeof(path), "/v1/clusters/%s", hp_b_cluster);
	b = cluster_body("test-hp-use1", NULL, NULL, NULL, planted, NULL);
	assert_int_equal(harness_call("PUT", admin, b, "%s", path), 200);
	free(b);
	harness_audit_expect("cluster.update", hp_b_cluster);
	assert_int_equal(harness_call("GET", admin, NULL, "%s", path), 200);
	assert_int_equal(harness_call("GET", admin, NULL, "/v1/clusters"), 200);
	assert_int_equal(harness_call("GET", admin, NULL, "/v1/audit?limit=200"), 200);
	usleep(300 * 1000);	/* let the poller try the planted token once */
	log = harness_slurp(fd.log);
	assert_non_null(log);
	assert_non_null(strstr(log, "\"level\""));
	secrets = harness_secrets(&n);
	for (int i = 0; i < n; i++) {
		char *audit = harness_sql_params("SELECT count(*) FROM audit_log WHERE position($1"
		    " in coalesce(before::text, '') || coalesce(after::text, '')) > 0", 1,
		    &secrets[i]);
		char *cols = harness_sql_params("SELECT count(*) FROM clusters WHERE position($1 in"
		    " credentials_sealed || api_server || ca_cert || labels::text) > 0", 1,
		    &secrets[i]);

		if (strstr(log, secrets[i]) != NULL)
			fail_msg("credential %d is in fleetd's log %s", i, fd.log);
		assert_string_equal(audit, "0");
		assert_string_equal(cols, "0");
		free(audit);
		free(cols);
	}
	print_message("%d credentials checked against every answer, the log and the audit\n", n);
	free(log);
}

static void
test_audit(void **state)
{
	(void)state;
	print_message("audit: %d rows for clouds and clusters, as expected\n",
	    harness_audit_check("'cloud', 'cluster'"));
	/* admins read it over the API, filtered by resource */
	assert_int_equal(harness_call("GET", admin, NULL, "/v1/audit?resource_type=cluster&"
	    "resource_id=%s", clusters[1]), 200);
	assert_non_null(strstr(harness_r.body, "cluster.delete"));
	assert_null(strstr(harness_r.body, "cloud.create"));
	assert_int_equal(harness_call("GET", oper, NULL, "/v1/audit"), 403);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_prod_walkthrough),
		cmocka_unit_test(test_cluster_bad_input),
		cmocka_unit_test(test_cluster_attach_and_filters),
		cmocka_unit_test(test_cloud_put_delete),
		cmocka_unit_test(test_secrets),
		cmocka_unit_test(test_audit),
	};

	if (harness_sh("openssl req -x509 -newkey rsa:2048 -nodes -subj /CN=not-cloudsim "
	    "-days 1 -keyout /dev/null -out /tmp/fleetd-reg-ca-%d.pem 2>/dev/null",
	    (int)getpid()) == 0) {
		char p[64], *pem;

		snprintf(p, sizeof(p), "/tmp/fleetd-reg-ca-%d.pem", (int)getpid());
		pem = harness_slurp(p);
		snprintf(wrong_ca, sizeof(wrong_ca), "%s", pem ? pem : "");
		free(pem);
		unlink(p);
	}
	return cmocka_run_group_tests(tests, setup, harness_group_teardown);
}
