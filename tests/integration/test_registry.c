/* test_registry: two-phase cloud registration and member clusters against cloudsim and a
 * scratch database — per provider, bad input, PUT/DELETE semantics, audit rows, secrets. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <libpq-fe.h>

#include "tests/integration/harness.h"

#define TAG		"fleet.io/cloud-id"
#define FLEETD_AWS	"arn:aws:iam::111111111111:user/fleetd"
#define FLEETD_GSA	"fleetd@fleet-admin.iam.gserviceaccount.com"
#define MAX_AUDIT	64
#define MAX_SECRETS	16

static struct fleetd_proc fd;
static char dburl[512], csdir[256], csurl[128];
static pid_t cs_pid;
static char *fd_env[64];
static json_t *csclusters;
static char *admin, *oper, *viewer, *staging_admin;
static struct http_result R;		/* the last answer */

/* What the audit log must hold for clouds and clusters, in order. */
static char exp_action[MAX_AUDIT][32], exp_id[MAX_AUDIT][40];
static int nexp;
/* Strings that must never appear in an answer or a log line. */
static char *secrets[MAX_SECRETS];
static int nsecrets;

/* One provider's scenario: cloudsim's identities and the body parts of each call. */
struct prov {
	const char	*name;		/* gke | aks | hyperpod */
	const char	*region, *region_b;
	const char	*cluster;	/* cloudsim member cluster attached to cloud A */
	char		 account[400];
	char		 cp_a[300], cl_a[300], cp_b[300], cl_b[300];
	char		 cloud_a[40], cloud_b[40];
};

static struct prov P[3];

/* ---- small helpers */

static const char *
jpath(json_t *o, const char *path)
{
	char buf[128], *save = NULL, *k;

	snprintf(buf, sizeof(buf), "%s", path);
	for (k = strtok_r(buf, ".", &save); k != NULL && o != NULL; k = strtok_r(NULL, ".", &save))
		o = json_is_array(o) ? json_array_get(o, (size_t)atoi(k)) : json_object_get(o, k);
	return json_string_value(o);
}

static void
add_secret(const char *s)
{
	assert_true(nsecrets < MAX_SECRETS);
	secrets[nsecrets++] = strdup(s);
}

static void
expect_audit(const char *action, const char *id)
{
	assert_true(nexp < MAX_AUDIT);
	snprintf(exp_action[nexp], sizeof(exp_action[0]), "%s", action);
	snprintf(exp_id[nexp], sizeof(exp_id[0]), "%s", id);
	nexp++;
}

/* One call to fleetd; the answer stays in R until the next call.  Fails the test when a
 * planted secret shows up in the answer. */
static long
call(const char *method, const char *path, const char *tok, const char *body,
     const char *const *hdrs)
{
	char url[1024];

	harness_http_free(&R);
	snprintf(url, sizeof(url), "%s%s", fd.url, path);
	harness_http(&R, method, url, tok, body, hdrs);
	for (int i = 0; i < nsecrets; i++) {
		if ((R.body != NULL && strstr(R.body, secrets[i]) != NULL) ||
		    (R.headers != NULL && strstr(R.headers, secrets[i]) != NULL))
			fail_msg("%s %s leaked a credential: %s", method, path, R.body);
	}
	return R.status;
}

/* Checks R is a problem with status, code and (when given) the first error's pointer. */
static void
expect_problem(long status, const char *code, const char *pointer)
{
	if (R.status != status || R.json == NULL ||
	    strcmp(jpath(R.json, "code") ? jpath(R.json, "code") : "", code) != 0)
		fail_msg("want %ld %s, got %ld: %s", status, code, R.status, R.body);
	if (pointer != NULL && (jpath(R.json, "errors.0.pointer") == NULL ||
	    strcmp(jpath(R.json, "errors.0.pointer"), pointer) != 0))
		fail_msg("want pointer %s: %s", pointer, R.body);
}

static void
expect_status(long status)
{
	if (R.status != status)
		fail_msg("want %ld, got %ld: %s", status, R.status, R.body);
}

/* The failed checks of a 422 verification answer, as "a,b,c" in answer order. */
static void
failed_checks(char *out, size_t n)
{
	json_t *err;
	size_t i;

	out[0] = '\0';
	expect_problem(422, "iam.verification_failed", NULL);
	json_array_foreach(json_object_get(R.json, "errors"), i, err) {
		assert_non_null(jpath(err, "detail"));
		snprintf(out + strlen(out), n - strlen(out), "%s%s", out[0] ? "," : "",
		    jpath(err, "check"));
	}
}

static char *
sql1(const char *q, int n, const char *const *params)
{
	PGconn *c = PQconnectdb(dburl);
	PGresult *r;
	char *v = NULL;

	assert_int_equal(PQstatus(c), CONNECTION_OK);
	r = PQexecParams(c, q, n, NULL, params, NULL, NULL, 0);
	if (PQresultStatus(r) != PGRES_TUPLES_OK && PQresultStatus(r) != PGRES_COMMAND_OK)
		fail_msg("sql %s: %s", q, PQerrorMessage(c));
	if (PQresultStatus(r) == PGRES_TUPLES_OK && PQntuples(r) > 0 && !PQgetisnull(r, 0, 0))
		v = strdup(PQgetvalue(r, 0, 0));
	PQclear(r);
	PQfinish(c);
	return v;
}

static long
sql_count(const char *q, const char *p1)
{
	char *v = sql1(q, p1 ? 1 : 0, (const char *const[]){ p1 });
	long n = v ? atol(v) : -1;

	free(v);
	return n;
}

static long
sim(const char *body)
{
	char url[256];
	struct http_result r;
	long st;

	snprintf(url, sizeof(url), "%s/_sim/iam", csurl);
	harness_http(&r, "POST", url, NULL, body, NULL);
	st = r.status;
	if (st != 200)
		fprintf(stderr, "_sim/iam %s: %ld %s\n", body, st, r.body);
	harness_http_free(&r);
	return st;
}

static json_t *
cs_cluster(const char *name)
{
	json_t *c;
	size_t i;

	json_array_foreach(csclusters, i, c)
		if (strcmp(jpath(c, "name"), name) == 0)
			return c;
	fail_msg("cloudsim has no cluster %s", name);
	return NULL;
}

/* ---- cloudsim: the test fleet plus the identities Terraform would have created */

static void
abs_file(json_t *o, const char *key)
{
	const char *v = json_string_value(json_object_get(o, key));
	char path[1024];

	if (v != NULL && v[0] != '/') {
		snprintf(path, sizeof(path), FLEETD_SOURCE_DIR "/cloudsim/fleets/%s", v);
		json_object_set_new(o, key, json_string(path));
	}
}

static void
write_fleet(const char *path)
{
	json_t *f = json_load_file(FLEETD_SOURCE_DIR "/cloudsim/fleets/test.json", 0, NULL);
	json_t *sas, *roles, *clusters, *aks = NULL, *c, *v;
	size_t i;

	assert_non_null(f);
	abs_file(json_object_get(json_object_get(f, "fleetd"), "gcp"), "private_key_file");
	sas = json_object_get(json_object_get(f, "gcp"), "service_accounts");
	json_array_foreach(sas, i, v)
		abs_file(v, "public_key_file");
	/* GKE: the control-plane SA of pair A starts without fleetd as token creator */
	json_array_append_new(sas, json_pack("{s:s, s:s}", "email",
	    "fleet-cp-a@fleet-test.iam.gserviceaccount.com", "project", "fleet-test"));
	json_array_append_new(sas, json_pack("{s:s, s:s}", "email",
	    "fleet-nodes-a@fleet-test.iam.gserviceaccount.com", "project", "fleet-test"));
	json_array_append_new(sas, json_pack("{s:s, s:s, s:[s]}", "email",
	    "fleet-cp-b@fleet-test.iam.gserviceaccount.com", "project", "fleet-test",
	    "token_creators", FLEETD_GSA));
	json_array_append_new(sas, json_pack("{s:s, s:s}", "email",
	    "fleet-nodes-b@fleet-test.iam.gserviceaccount.com", "project", "fleet-test"));
	/* the prod pair of the walk-through */
	json_array_append_new(sas, json_pack("{s:s, s:s, s:[s]}", "email",
	    "fleet-cp-prod@fleet-test.iam.gserviceaccount.com", "project", "fleet-test",
	    "token_creators", FLEETD_GSA));
	json_array_append_new(sas, json_pack("{s:s, s:s}", "email",
	    "fleet-nodes-prod@fleet-test.iam.gserviceaccount.com", "project", "fleet-test"));
	roles = json_array();
	for (i = 0; i < 4; i++)
		json_array_append_new(roles, json_pack("{s:s, s:s, s:[s]}", "account",
		    "222222222222", "name", (const char *[]){ "fleet-cp-a", "fleet-nodes-a",
		    "fleet-cp-b", "fleet-nodes-b" }[i], "trusted", FLEETD_AWS));
	json_object_set_new(f, "aws", json_pack("{s:o}", "roles", roles));
	/* Azure: cloudsim makes the two managed identities of each AKS cluster; one more
	 * cluster gives the second pair */
	clusters = json_object_get(f, "clusters");
	json_array_foreach(clusters, i, c)
		if (strcmp(json_string_value(json_object_get(c, "provider")), "aks") == 0)
			aks = c;
	assert_non_null(aks);
	for (i = 0; i < 1; i++) {
		c = json_deep_copy(aks);
		json_object_set_new(c, "name", json_string("aks-id-b"));
		json_object_set_new(c, "pools", json_pack("[O]",
		    json_array_get(json_object_get(aks, "pools"), 0)));
		json_array_append_new(clusters, c);
	}
	assert_int_equal(json_dump_file(f, path, JSON_INDENT(1)), 0);
	json_decref(f);
}

static void
start_cloudsim(void)
{
	char path[400], fleet[400], *text, *line, *save = NULL;
	json_t *cj;
	int n = 0;

	snprintf(csdir, sizeof(csdir), "/tmp/fleetd-reg-cs-%d", (int)getpid());
	harness_sh("rm -rf %s && mkdir -p %s", csdir, csdir);
	snprintf(fleet, sizeof(fleet), "%s/fleet.json", csdir);
	write_fleet(fleet);
	cs_pid = fork();
	assert_true(cs_pid >= 0);
	if (cs_pid == 0) {
		snprintf(path, sizeof(path), "%s/cloudsim.log", csdir);
		if (freopen(path, "w", stdout) == NULL || freopen(path, "a", stderr) == NULL)
			_exit(126);
		execl(FLEETD_BINARY_DIR "/cloudsim", "cloudsim", "--fleet", fleet, "--listen",
		    "127.0.0.1:0", "--state-dir", csdir, (char *)NULL);
		_exit(127);
	}
	snprintf(path, sizeof(path), "%s/port", csdir);
	for (int i = 0; i < 300 && access(path, R_OK) != 0; i++)
		usleep(50 * 1000);
	if (access(path, R_OK) != 0)
		fail_msg("cloudsim did not start; see %s/cloudsim.log", csdir);
	snprintf(path, sizeof(path), "%s/fleetd.env", csdir);
	text = harness_slurp(path);
	assert_non_null(text);
	for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		if (strncmp(line, "FLEETD_", 7) != 0 || strchr(line, '=') == NULL || n >= 56)
			continue;
		if (strncmp(line, "FLEETD_CLOUDSIM_URL=", 20) == 0)
			snprintf(csurl, sizeof(csurl), "%s", line + 20);
		fd_env[n++] = strdup(line);
	}
	free(text);
	assert_true(csurl[0] != '\0');
	fd_env[n++] = strdup("FLEETD_MASTER_KEY=c2VjcmV0LXJlZ2lzdHJ5LXRlc3Qta2V5LTMyYnl0ZXM=");
	fd_env[n] = NULL;
	snprintf(path, sizeof(path), "%s/clusters.json", csdir);
	text = harness_slurp(path);
	cj = json_loads(text, 0, NULL);
	free(text);
	csclusters = json_incref(json_object_get(cj, "clusters"));
	json_decref(cj);
	assert_non_null(csclusters);
}

static const char *
mi(const char *cluster, const char *which)
{
	char path[64];

	snprintf(path, sizeof(path), "iam.%s.resource_id", which);
	return jpath(cs_cluster(cluster), path);
}

static void
init_providers(void)
{
	json_t *aks = cs_cluster("test-aks-eus");
	char *tenant = NULL;

	for (int i = 0; fd_env[i] != NULL; i++)
		if (strncmp(fd_env[i], "FLEETD_AZURE_TENANT_ID=", 23) == 0)
			tenant = fd_env[i] + 23;
	assert_non_null(tenant);
	P[0] = (struct prov){ .name = "gke", .region = "us-central1", .region_b = "us-central1",
	    .cluster = "test-gke-usc1" };
	snprintf(P[0].account, sizeof(P[0].account), "{\"project\":\"fleet-test\"}");
	snprintf(P[0].cp_a, 300, "fleet-cp-a@fleet-test.iam.gserviceaccount.com");
	snprintf(P[0].cl_a, 300, "fleet-nodes-a@fleet-test.iam.gserviceaccount.com");
	snprintf(P[0].cp_b, 300, "fleet-cp-b@fleet-test.iam.gserviceaccount.com");
	snprintf(P[0].cl_b, 300, "fleet-nodes-b@fleet-test.iam.gserviceaccount.com");
	P[1] = (struct prov){ .name = "aks", .region = "eastus", .region_b = "eastus",
	    .cluster = "test-aks-eus" };
	snprintf(P[1].account, sizeof(P[1].account), "{\"subscription_id\":\"%s\",\"tenant_id\":"
	    "\"%s\",\"resource_group\":\"%s\"}", jpath(aks, "subscription"), tenant,
	    jpath(aks, "resource_group"));
	snprintf(P[1].cp_a, 300, "%s", mi("test-aks-eus", "control_plane"));
	snprintf(P[1].cl_a, 300, "%s", mi("test-aks-eus", "cluster_role"));
	snprintf(P[1].cp_b, 300, "%s", mi("aks-id-b", "control_plane"));
	snprintf(P[1].cl_b, 300, "%s", mi("aks-id-b", "cluster_role"));
	P[2] = (struct prov){ .name = "hyperpod", .region = "us-west-2", .region_b = "us-east-1",
	    .cluster = "test-hp-usw2" };
	snprintf(P[2].account, sizeof(P[2].account), "{\"account_id\":\"222222222222\"}");
	snprintf(P[2].cp_a, 300, "arn:aws:iam::222222222222:role/fleet-cp-a");
	snprintf(P[2].cl_a, 300, "arn:aws:iam::222222222222:role/fleet-nodes-a");
	snprintf(P[2].cp_b, 300, "arn:aws:iam::222222222222:role/fleet-cp-b");
	snprintf(P[2].cl_b, 300, "arn:aws:iam::222222222222:role/fleet-nodes-b");
}

/* Tags (labels, descriptions) one identity with a cloud id, as Terraform would. */
static void
tag(const struct prov *p, const char *identity, const char *cloud_id)
{
	char body[800];

	if (strcmp(p->name, "gke") == 0)
		snprintf(body, sizeof(body), "{\"provider\":\"gcp\",\"service_account\":\"%s\","
		    "\"description\":\"managed by terraform; " TAG "=%s\"}", identity, cloud_id);
	else if (strcmp(p->name, "aks") == 0)
		snprintf(body, sizeof(body), "{\"provider\":\"azure\",\"resource_id\":\"%s\","
		    "\"tags\":{\"" TAG "\":\"%s\"}}", identity, cloud_id);
	else
		snprintf(body, sizeof(body), "{\"provider\":\"aws\",\"role_arn\":\"%s\","
		    "\"tags\":{\"" TAG "\":\"%s\"}}", identity, cloud_id);
	assert_int_equal(sim(body), 200);
}

/* Lets fleetd in as the control plane: GCP token creator; AWS trust with the cloud's
 * external id; Azure the federated credentials of iam.required (fic: a JSON list). */
static void
trust(const struct prov *p, const char *cp, const char *external_id, const char *fic)
{
	char body[2048];

	if (strcmp(p->name, "gke") == 0)
		snprintf(body, sizeof(body), "{\"provider\":\"gcp\",\"service_account\":\"%s\","
		    "\"token_creators\":[\"" FLEETD_GSA "\"]}", cp);
	else if (strcmp(p->name, "hyperpod") == 0)
		snprintf(body, sizeof(body), "{\"provider\":\"aws\",\"role_arn\":\"%s\","
		    "\"external_id\":\"%s\"}", cp, external_id);
	else
		snprintf(body, sizeof(body), "{\"provider\":\"azure\",\"resource_id\":\"%s\","
		    "\"federated_identity_credentials\":%s}", cp, fic);
	assert_int_equal(sim(body), 200);
}

/* iam.required's federated credentials of the control-plane identity (Azure), or "[]". */
static void
required_fic(char *out, size_t n)
{
	json_t *f = json_object_get(json_object_get(json_object_get(json_object_get(R.json,
	    "iam"), "required"), "control_plane_identity"), "federated_identity_credentials");
	char *s = f ? json_dumps(f, JSON_COMPACT) : NULL;

	snprintf(out, n, "%s", s ? s : "[]");
	free(s);
}

/* ---- setup */

static int
setup(void **state)
{
	(void)state;
	harness_db_create("registry", dburl, sizeof(dburl));
	start_cloudsim();
	init_providers();
	harness_fleetd_start(&fd, dburl, (const char *const *)fd_env);
	admin = harness_token(dburl, "admin", "*");
	oper = harness_token(dburl, "operator", "*");
	viewer = harness_token(dburl, "viewer", "*");
	staging_admin = harness_token(dburl, "admin", "staging");
	for (int i = 0; i < 4; i++) {
		char body[64];

		snprintf(body, sizeof(body), "{\"name\":\"%s\"}",
		    (const char *[]){ "prod", "staging", "test", "dev" }[i]);
		if (call("POST", "/v1/environments", admin, body, NULL) != 201)
			fail_msg("environment: %ld %s", R.status, R.body);
	}
	return 0;
}

static int
teardown(void **state)
{
	int st;

	(void)state;
	harness_http_free(&R);
	if (fd.pid > 0)
		harness_fleetd_stop(&fd);
	if (cs_pid > 0) {
		kill(cs_pid, SIGTERM);
		waitpid(cs_pid, &st, 0);
	}
	if (csdir[0] != '\0')
		harness_sh("rm -rf %s", csdir);
	if (dburl[0] != '\0')
		harness_db_drop(dburl);
	for (int i = 0; fd_env[i] != NULL; i++)
		free(fd_env[i]);
	for (int i = 0; i < nsecrets; i++)
		free(secrets[i]);
	json_decref(csclusters);
	free(admin);
	free(oper);
	free(viewer);
	free(staging_admin);
	harness_validate_responses();
	return 0;
}

/* ---- phase 1 */

static long
create_cloud(const char *tok, const char *name, const char *env, const char *provider,
	     const char *region, const char *account)
{
	char body[1024];

	snprintf(body, sizeof(body), "{\"name\":\"%s\",\"environment\":\"%s\",\"provider\":"
	    "\"%s\",\"region\":\"%s\",\"account\":%s}", name, env, provider, region, account);
	return call("POST", "/v1/clouds", tok, body, NULL);
}

struct bad_cloud {
	const char	*what, *provider, *region, *account;
	long		 status;
	const char	*code, *pointer, *mention;	/* mention: must be in the detail */
};

static const struct bad_cloud bad_clouds[] = {
	{ "unknown provider", "gce", "us-central1", "{\"project\":\"fleet-test\"}", 400,
	  "catalog.unknown_provider", "/provider", "hyperpod" },
	{ "unknown region", "gke", "us-central9", "{\"project\":\"fleet-test\"}", 400,
	  "catalog.unknown_region", "/region", "us-central1" },
	{ "aws region for gke", "gke", "us-east-1", "{\"project\":\"fleet-test\"}", 400,
	  "catalog.unknown_region", "/region", "europe-west4" },
	{ "azure region for hyperpod", "hyperpod", "eastus", "{\"account_id\":\"222222222222\"}",
	  400, "catalog.unknown_region", "/region", "us-west-2" },
	{ "aws account for gke", "gke", "us-central1", "{\"account_id\":\"222222222222\"}", 400,
	  "cloud.account_field", "/account/account_id", NULL },
	{ "gcp project for aks", "aks", "eastus", "{\"project\":\"fleet-test\"}", 400,
	  "cloud.account_field", "/account/project", NULL },
	{ "aks without tenant", "aks", "eastus", "{\"subscription_id\":\"3f1b2c4d-0000-4000-"
	  "8000-00000000a001\",\"resource_group\":\"rg\"}", 400, "api.missing_field",
	  "/account/tenant_id", NULL },
	{ "account not an object", "hyperpod", "us-west-2", "\"222222222222\"", 400,
	  "api.wrong_type", "/account", NULL },
};

static void
test_phase1_bad_input(void **state)
{
	long audits = sql_count("SELECT count(*) FROM audit_log", NULL);

	(void)state;
	for (size_t i = 0; i < sizeof(bad_clouds) / sizeof(bad_clouds[0]); i++) {
		const struct bad_cloud *b = &bad_clouds[i];

		create_cloud(admin, "bad-cloud", "prod", b->provider, b->region, b->account);
		print_message("phase 1, %s: %ld\n", b->what, R.status);
		expect_problem(b->status, b->code, b->pointer);
		if (b->mention != NULL && strstr(jpath(R.json, "detail"), b->mention) == NULL)
			fail_msg("%s: detail does not name %s: %s", b->what, b->mention, R.body);
	}
	create_cloud(admin, "Bad Name", "prod", "gke", "us-central1", P[0].account);
	expect_problem(400, "cloud.bad_name", "/name");
	create_cloud(admin, "no-env", "nowhere", "gke", "us-central1", P[0].account);
	expect_problem(404, "env.not_found", "/environment");
	call("POST", "/v1/clouds", admin, "{\"name\":\"x1\",\"environment\":\"prod\",\"provider\":"
	    "\"gke\",\"region\":\"us-central1\",\"account\":{\"project\":\"p\"},\"colour\":1}",
	    NULL);
	expect_problem(400, "api.unknown_field", "/colour");
	create_cloud(oper, "op-cloud", "prod", "gke", "us-central1", P[0].account);
	expect_problem(403, "auth.forbidden", NULL);
	create_cloud(staging_admin, "other-env", "prod", "gke", "us-central1", P[0].account);
	expect_status(404);
	assert_int_equal(sql_count("SELECT count(*) FROM clouds", NULL), 0);
	assert_int_equal(sql_count("SELECT count(*) FROM audit_log", NULL), audits);
}

/* Cloud A in test and cloud B in staging for each provider; checks the phase-1 answer. */
static void
test_phase1(void **state)
{
	(void)state;
	for (int i = 0; i < 3; i++) {
		struct prov *p = &P[i];
		char loc[128], ext[80], *h;

		snprintf(loc, sizeof(loc), "test-%s", p->name);
		assert_int_equal(create_cloud(admin, loc, "test", p->name, p->region, p->account),
		    201);
		assert_string_equal(jpath(R.json, "state"), "pending_iam");
		assert_non_null(jpath(R.json, "external_id"));
		snprintf(ext, sizeof(ext), "%s", jpath(R.json, "external_id"));
		assert_true(strlen(ext) >= 32);		/* >= 128 bits in hex */
		assert_non_null(json_object_get(json_object_get(R.json, "iam"), "required"));
		assert_false(json_is_true(json_object_get(json_object_get(R.json, "iam"),
		    "locked")));
		snprintf(p->cloud_a, sizeof(p->cloud_a), "%s", jpath(R.json, "id"));
		snprintf(loc, sizeof(loc), "/v1/clouds/%s", p->cloud_a);
		h = harness_header(&R, "Location");
		assert_non_null(h);
		assert_string_equal(h, loc);
		free(h);
		h = harness_header(&R, "ETag");
		assert_non_null(h);
		free(h);
		expect_audit("cloud.create", p->cloud_a);
		/* the required documents name this cloud's id */
		assert_non_null(strstr(R.body, p->cloud_a));
		/* one cloud per (environment, provider, region) */
		create_cloud(admin, "again", "test", p->name, p->region, p->account);
		expect_problem(409, "cloud.exists", NULL);
		snprintf(loc, sizeof(loc), "staging-%s", p->name);
		assert_int_equal(create_cloud(admin, loc, "staging", p->name, p->region_b,
		    p->account), 201);
		snprintf(p->cloud_b, sizeof(p->cloud_b), "%s", jpath(R.json, "id"));
		assert_string_not_equal(jpath(R.json, "external_id"), ext);
		expect_audit("cloud.create", p->cloud_b);
		/* GET after the write reflects it */
		snprintf(loc, sizeof(loc), "/v1/clouds/%s", p->cloud_b);
		assert_int_equal(call("GET", loc, viewer, NULL, NULL), 200);
		assert_string_equal(jpath(R.json, "state"), "pending_iam");
	}
}

/* Terraform retries a create: the same key and body give the first answer, once. */
static void
test_idempotent_create(void **state)
{
	const char *key[] = { "Idempotency-Key: reg-7c1e", NULL };
	const char *body = "{\"name\":\"dev-use2\",\"environment\":\"dev\",\"provider\":"
	    "\"hyperpod\",\"region\":\"us-east-2\",\"account\":{\"account_id\":"
	    "\"222222222222\"}}";
	char id[40], path[128];

	(void)state;
	assert_int_equal(call("POST", "/v1/clouds", admin, body, key), 201);
	snprintf(id, sizeof(id), "%s", jpath(R.json, "id"));
	expect_audit("cloud.create", id);
	assert_int_equal(call("POST", "/v1/clouds", admin, body, key), 201);
	assert_string_equal(jpath(R.json, "id"), id);
	call("POST", "/v1/clouds", admin, "{\"name\":\"dev-use2\",\"environment\":\"dev\","
	    "\"provider\":\"hyperpod\",\"region\":\"us-east-1\",\"account\":{\"account_id\":"
	    "\"222222222222\"}}", key);
	assert_int_equal(R.status, 422);
	assert_int_equal(sql_count("SELECT count(*) FROM clouds WHERE environment = 'dev'", NULL),
	    1);
	snprintf(path, sizeof(path), "/v1/clouds/%s", id);
	assert_int_equal(call("DELETE", path, admin, NULL, NULL), 204);
	expect_audit("cloud.delete", id);
	assert_int_equal(call("DELETE", path, admin, NULL, NULL), 404);
}

static long
phase2(const char *tok, const char *cloud, const char *cp, const char *cl, bool rotate)
{
	char path[128], body[900];

	snprintf(path, sizeof(path), "/v1/clouds/%s/iam%s", cloud, rotate ? "/rotate" : "");
	snprintf(body, sizeof(body), "{\"control_plane_role\":\"%s\",\"cluster_role\":\"%s\"}",
	    cp, cl);
	return call("POST", path, tok, body, NULL);
}

/* Nothing half-written: no pair, no identity binding, still pending. */
static void
assert_unlocked(const char *cloud)
{
	char path[128];

	assert_int_equal(sql_count("SELECT count(*) FROM iam_pairs WHERE cloud_id = $1", cloud),
	    0);
	assert_int_equal(sql_count("SELECT count(*) FROM iam_identities WHERE cloud_id = $1",
	    cloud), 0);
	snprintf(path, sizeof(path), "/v1/clouds/%s", cloud);
	assert_int_equal(call("GET", path, admin, NULL, NULL), 200);
	assert_string_equal(jpath(R.json, "state"), "pending_iam");
}

static void
test_phase2_grammar(void **state)
{
	char sa[200];

	(void)state;
	phase2(admin, P[2].cloud_a, "fleet-cp-a", P[2].cl_a, false);
	expect_problem(400, "iam.bad_identity", "/control_plane_role");
	phase2(admin, P[2].cloud_a, P[2].cp_a, "arn:aws:iam::22222222222:role/x", false);
	expect_problem(400, "iam.bad_identity", "/cluster_role");
	phase2(admin, P[2].cloud_a, "arn:aws:iam::333333333333:role/fleet-cp-a", P[2].cl_a,
	    false);
	expect_problem(422, "iam.identity_wrong_account", "/control_plane_role");
	snprintf(sa, sizeof(sa), "fleet-nodes-a@other-project.iam.gserviceaccount.com");
	phase2(admin, P[0].cloud_a, P[0].cp_a, sa, false);
	expect_problem(422, "iam.identity_wrong_account", "/cluster_role");
	phase2(admin, P[0].cloud_a, "not-an-email", P[0].cl_a, false);
	expect_problem(400, "iam.bad_identity", "/control_plane_role");
	phase2(admin, P[1].cloud_a, P[1].cp_a, "/subscriptions/3f1b2c4d-0000-4000-8000-"
	    "00000000a001/resourceGroups/rg-elsewhere/providers/Microsoft.ManagedIdentity/"
	    "userAssignedIdentities/x-id", false);
	expect_problem(422, "iam.identity_wrong_account", "/cluster_role");
	phase2(admin, P[0].cloud_a, P[0].cp_a, P[0].cp_a, false);
	expect_problem(422, "iam.identity_reused", "/cluster_role");
	call("POST", "/v1/clouds/00000000-0000-4000-8000-000000000000/iam", admin,
	    "{\"control_plane_role\":\"a\",\"cluster_role\":\"b\"}", NULL);
	expect_status(404);
	phase2(oper, P[0].cloud_a, P[0].cp_a, P[0].cl_a, false);
	expect_status(403);
	for (int i = 0; i < 3; i++)
		assert_unlocked(P[i].cloud_a);
}

/* Phase 2 for one provider: missing tag, the provider's "wrong secret" case, retry after
 * the fix, locked, identity in use, rotation. */
static void
flow(struct prov *p)
{
	char checks[512], path[128], ext_a[80], ext_b[80], fic_a[1024], fic_b[1024];
	bool aks = strcmp(p->name, "aks") == 0;

	snprintf(path, sizeof(path), "/v1/clouds/%s", p->cloud_a);
	assert_int_equal(call("GET", path, admin, NULL, NULL), 200);
	snprintf(ext_a, sizeof(ext_a), "%s", jpath(R.json, "external_id"));
	required_fic(fic_a, sizeof(fic_a));
	snprintf(path, sizeof(path), "/v1/clouds/%s", p->cloud_b);
	assert_int_equal(call("GET", path, admin, NULL, NULL), 200);
	snprintf(ext_b, sizeof(ext_b), "%s", jpath(R.json, "external_id"));
	required_fic(fic_b, sizeof(fic_b));
	if (aks)
		assert_string_not_equal(fic_a, "[]");

	/* 1. nothing tagged yet: both tag checks fail */
	phase2(admin, p->cloud_a, p->cp_a, p->cl_a, false);
	failed_checks(checks, sizeof(checks));
	print_message("%s untagged: %s\n", p->name, checks);
	assert_non_null(strstr(checks, "control_plane_role_cloud_"));
	assert_non_null(strstr(checks, "cluster_role_cloud_"));
	assert_unlocked(p->cloud_a);

	/* 2. the control plane tagged, but fleetd may not act as it (AWS: another external
	 * id; GCP: fleetd is no token creator; Azure: no federated credential) */
	tag(p, p->cp_a, p->cloud_a);
	if (strcmp(p->name, "gke") != 0)
		trust(p, p->cp_a, ext_b, "[]");
	phase2(admin, p->cloud_a, p->cp_a, p->cl_a, false);
	failed_checks(checks, sizeof(checks));
	print_message("%s wrong secret: %s (%s)\n", p->name, checks,
	    jpath(R.json, "errors.0.detail"));
	assert_string_equal(jpath(R.json, "errors.0.check"), strcmp(p->name, "hyperpod") == 0 ?
	    "control_plane_assume" : "control_plane_token");
	assert_string_equal(jpath(R.json, "errors.0.pointer"), "/control_plane_role");
	assert_non_null(strstr(jpath(R.json, "errors.0.detail"), aks ? "federated" :
	    strcmp(p->name, "gke") == 0 ? "TokenCreator" : ext_a));
	assert_unlocked(p->cloud_a);
	if (aks) {	/* and a tag naming another cloud is refused as such */
		trust(p, p->cp_a, NULL, fic_a);
		tag(p, p->cp_a, p->cloud_b);
		phase2(admin, p->cloud_a, p->cp_a, p->cl_a, false);
		failed_checks(checks, sizeof(checks));
		assert_string_equal(checks, "control_plane_role_cloud_tag,cluster_role_cloud_tag");
		assert_non_null(strstr(jpath(R.json, "errors.0.detail"), p->cloud_b));
		assert_unlocked(p->cloud_a);
	}

	/* 3. the secret fixed, the cluster role still untagged: exactly that check fails */
	tag(p, p->cp_a, p->cloud_a);
	trust(p, p->cp_a, ext_a, fic_a);
	phase2(admin, p->cloud_a, p->cp_a, p->cl_a, false);
	failed_checks(checks, sizeof(checks));
	print_message("%s missing tag: %s\n", p->name, checks);
	assert_string_equal(checks, strcmp(p->name, "gke") == 0 ? "cluster_role_cloud_label" :
	    "cluster_role_cloud_tag");
	assert_string_equal(jpath(R.json, "errors.0.pointer"), "/cluster_role");
	assert_unlocked(p->cloud_a);
	tag(p, p->cl_a, p->cloud_a);

	/* 4. fixed: active and locked */
	if (phase2(admin, p->cloud_a, p->cp_a, p->cl_a, false) != 200)
		fail_msg("%s retry after the fix: %ld %s", p->name, R.status, R.body);
	assert_string_equal(jpath(R.json, "state"), "active");
	assert_true(json_is_true(json_object_get(json_object_get(R.json, "iam"), "locked")));
	assert_string_equal(jpath(R.json, "iam.control_plane_role"), p->cp_a);
	assert_string_equal(jpath(R.json, "iam.cluster_role"), p->cl_a);
	expect_audit("cloud.iam.lock", p->cloud_a);
	snprintf(path, sizeof(path), "/v1/clouds/%s", p->cloud_a);
	assert_int_equal(call("GET", path, viewer, NULL, NULL), 200);
	assert_string_equal(jpath(R.json, "state"), "active");

	/* 5. locked means locked */
	phase2(admin, p->cloud_a, p->cp_b, p->cl_b, false);
	expect_problem(409, "iam.locked", NULL);
	phase2(admin, p->cloud_a, p->cp_a, p->cl_a, false);
	expect_problem(409, "iam.locked", NULL);

	/* 6. no identity serves two clouds */
	phase2(admin, p->cloud_b, p->cp_a, p->cl_b, false);
	expect_problem(409, "iam.identity_in_use", "/control_plane_role");
	phase2(admin, p->cloud_b, p->cp_b, p->cl_a, false);
	expect_problem(409, "iam.identity_in_use", "/cluster_role");
	assert_unlocked(p->cloud_b);

	/* 7. rotation: admin only, verified first, then swapped; the audit keeps the old */
	phase2(oper, p->cloud_a, p->cp_b, p->cl_b, true);
	expect_status(403);
	phase2(admin, p->cloud_b, p->cp_b, p->cl_b, true);
	expect_problem(409, "iam.not_locked", NULL);
	phase2(admin, p->cloud_a, p->cp_b, p->cl_b, true);
	failed_checks(checks, sizeof(checks));
	snprintf(path, sizeof(path), "/v1/clouds/%s", p->cloud_a);
	assert_int_equal(call("GET", path, admin, NULL, NULL), 200);
	assert_string_equal(jpath(R.json, "iam.control_plane_role"), p->cp_a);
	tag(p, p->cp_b, p->cloud_a);
	tag(p, p->cl_b, p->cloud_a);
	trust(p, p->cp_b, ext_a, fic_a);
	if (phase2(admin, p->cloud_a, p->cp_b, p->cl_b, true) != 200)
		fail_msg("%s rotate: %ld %s", p->name, R.status, R.body);
	assert_string_equal(jpath(R.json, "iam.control_plane_role"), p->cp_b);
	assert_string_equal(jpath(R.json, "state"), "active");
	expect_audit("cloud.iam.rotate", p->cloud_a);
	{
		char *old = sql1("SELECT before->>'control_plane_role' || ' ' ||"
		    " (after->>'control_plane_role') FROM audit_log WHERE action ="
		    " 'cloud.iam.rotate' AND resource_id = $1", 1,
		    (const char *const[]){ p->cloud_a });
		char want[700];

		snprintf(want, sizeof(want), "%s %s", p->cp_a, p->cp_b);
		assert_non_null(old);
		assert_string_equal(old, want);
		free(old);
	}

	/* 8. the rotated-out pair is free again and serves cloud B once tagged for it */
	phase2(admin, p->cloud_b, p->cp_a, p->cl_a, false);
	failed_checks(checks, sizeof(checks));
	tag(p, p->cp_a, p->cloud_b);
	tag(p, p->cl_a, p->cloud_b);
	trust(p, p->cp_a, ext_b, fic_b);
	if (phase2(admin, p->cloud_b, p->cp_a, p->cl_a, false) != 200)
		fail_msg("%s cloud b: %ld %s", p->name, R.status, R.body);
	expect_audit("cloud.iam.lock", p->cloud_b);
	assert_int_equal(sql_count("SELECT count(*) FROM iam_identities", NULL),
	    sql_count("SELECT 2 * count(*) FROM iam_pairs", NULL));
}

static void
test_flow_gke(void **state)
{
	(void)state;
	flow(&P[0]);
}

static void
test_flow_aks(void **state)
{
	(void)state;
	flow(&P[1]);
}

static void
test_flow_hyperpod(void **state)
{
	(void)state;
	flow(&P[2]);
}

/* ---- member clusters */

static char wrong_ca[8192];
static char prod_cloud[40], prod_cluster[40], clusters[3][40];	/* gke, aks, hyperpod A */
static char hp_b_cluster[40];

/* A cluster body for cloudsim's member cluster cs; NULL overrides keep its own values. */
static char *
cluster_body(const char *cs, const char *name, const char *api, const char *ca,
	     const char *token, json_t *labels)
{
	json_t *c = cs_cluster(cs), *b;
	char *text, *pem = harness_slurp(jpath(c, "ca_file"));

	assert_non_null(pem);
	b = json_pack("{s:s, s:s, s:s, s:{s:s}, s:s, s:s}", "name", name ? name : cs,
	    "api_server", api ? api : jpath(c, "api_server"), "ca_cert", ca ? ca : pem,
	    "credentials", "token", token ? token : jpath(c, "token"), "provider_cluster_id",
	    jpath(c, "provider_cluster_id"), "batch_scheduler", "kueue");
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
	call("POST", path, tok, body, NULL);
	free(body);
	return R.status;
}

/* The walk-through: a prod GKE cloud in us-central1 in two calls, active, a member
 * cluster attached, and every attempt to break its isolation refused. */
static void
test_prod_walkthrough(void **state)
{
	const char *cp = "fleet-cp-prod@fleet-test.iam.gserviceaccount.com";
	const char *cl = "fleet-nodes-prod@fleet-test.iam.gserviceaccount.com";
	char path[200], dev_cloud[40], body[600];
	json_t *gke = cs_cluster("test-gke-usc1");

	(void)state;
	/* call 1 */
	assert_int_equal(create_cloud(admin, "prod-usc1", "prod", "gke", "us-central1",
	    P[0].account), 201);
	snprintf(prod_cloud, sizeof(prod_cloud), "%s", jpath(R.json, "id"));
	expect_audit("cloud.create", prod_cloud);
	/* what Terraform does from iam.required */
	tag(&P[0], cp, prod_cloud);
	tag(&P[0], cl, prod_cloud);
	/* call 2 */
	if (phase2(admin, prod_cloud, cp, cl, false) != 200)
		fail_msg("phase 2: %ld %s", R.status, R.body);
	expect_audit("cloud.iam.lock", prod_cloud);
	snprintf(path, sizeof(path), "/v1/clouds/%s", prod_cloud);
	assert_int_equal(call("GET", path, viewer, NULL, NULL), 200);
	assert_string_equal(jpath(R.json, "state"), "active");
	assert_string_equal(jpath(R.json, "environment"), "prod");
	assert_string_equal(jpath(R.json, "region"), "us-central1");
	/* a member cluster */
	add_secret(jpath(gke, "token"));
	assert_int_equal(attach(viewer, prod_cloud, cluster_body("test-gke-usc1", "prod-a",
	    NULL, NULL, NULL, NULL)), 403);
	if (attach(admin, prod_cloud, cluster_body("test-gke-usc1", "prod-a", NULL, NULL, NULL,
	    NULL)) != 201)
		fail_msg("attach: %ld %s", R.status, R.body);
	snprintf(prod_cluster, sizeof(prod_cluster), "%s", jpath(R.json, "id"));
	expect_audit("cluster.create", prod_cluster);
	assert_null(json_object_get(R.json, "credentials"));
	assert_string_equal(jpath(R.json, "environment"), "prod");
	assert_string_equal(jpath(R.json, "state"), "ready");

	/* the prod identities serve no other cloud */
	assert_int_equal(create_cloud(admin, "dev-usc1", "dev", "gke", "us-central1",
	    P[0].account), 201);
	snprintf(dev_cloud, sizeof(dev_cloud), "%s", jpath(R.json, "id"));
	expect_audit("cloud.create", dev_cloud);
	phase2(admin, dev_cloud, cp, "fleet-nodes-dev@fleet-test.iam.gserviceaccount.com", false);
	expect_problem(409, "iam.identity_in_use", "/control_plane_role");
	phase2(admin, dev_cloud, "fleet-cp-dev@fleet-test.iam.gserviceaccount.com", cl, false);
	expect_problem(409, "iam.identity_in_use", "/cluster_role");
	/* its pair changes only by an admin's verified rotation */
	phase2(admin, prod_cloud, cp, cl, false);
	expect_problem(409, "iam.locked", NULL);
	phase2(oper, prod_cloud, cp, cl, true);
	expect_status(403);
	/* nothing moves it to another environment, region or account */
	snprintf(body, sizeof(body), "{\"name\":\"prod-usc1\",\"environment\":\"dev\","
	    "\"provider\":\"gke\",\"region\":\"us-central1\",\"account\":%s}", P[0].account);
	call("PUT", path, admin, body, NULL);
	expect_problem(409, "cloud.immutable", "/environment");
	snprintf(body, sizeof(body), "{\"name\":\"prod-usc1\",\"environment\":\"prod\","
	    "\"provider\":\"gke\",\"region\":\"us-east4\",\"account\":%s}", P[0].account);
	call("PUT", path, admin, body, NULL);
	expect_problem(409, "cloud.immutable", "/region");
	snprintf(body, sizeof(body), "{\"name\":\"prod-usc1\",\"environment\":\"prod\","
	    "\"provider\":\"gke\",\"region\":\"us-central1\",\"account\":{\"project\":"
	    "\"fleet-other\"}}");
	call("PUT", path, admin, body, NULL);
	expect_problem(409, "cloud.immutable", "/account");
	/* a token of another environment does not even see it */
	assert_int_equal(call("GET", path, staging_admin, NULL, NULL), 404);
	assert_int_equal(call("DELETE", path, staging_admin, NULL, NULL), 404);
	assert_int_equal(phase2(staging_admin, prod_cloud, cp, cl, true), 404);
	assert_int_equal(attach(staging_admin, prod_cloud, cluster_body("test-gke-usc1",
	    "sneaky", NULL, NULL, NULL, NULL)), 404);
	snprintf(path, sizeof(path), "/v1/clusters/%s", prod_cluster);
	assert_int_equal(call("GET", path, staging_admin, NULL, NULL), 404);
	assert_int_equal(call("GET", "/v1/clusters?environment=prod", staging_admin, NULL, NULL),
	    200);
	assert_int_equal(json_array_size(json_object_get(R.json, "items")), 0);
	assert_int_equal(call("GET", "/v1/clouds", staging_admin, NULL, NULL), 200);
	assert_null(strstr(R.body, prod_cloud));
	/* the cluster is reachable only under its own cloud */
	snprintf(path, sizeof(path), "/v1/clouds/%s/clusters/%s", dev_cloud, prod_cluster);
	assert_int_equal(call("GET", path, admin, NULL, NULL), 404);
	/* and a cloud with clusters is not deleted */
	snprintf(path, sizeof(path), "/v1/clouds/%s", prod_cloud);
	call("DELETE", path, admin, NULL, NULL);
	expect_problem(409, "cloud.in_use", NULL);
	/* a pending cloud takes no clusters */
	attach(admin, dev_cloud, cluster_body("test-gke-usc1", "dev-a", NULL, NULL, NULL, NULL));
	expect_problem(409, "cloud.not_active", NULL);
}

static void
test_cluster_bad_input(void **state)
{
	char planted[64];
	const char *aks = P[1].cloud_a;

	(void)state;
	attach(admin, aks, cluster_body("test-aks-eus", NULL, "http://127.0.0.1:1/k8s/x", NULL,
	    NULL, NULL));
	expect_problem(400, "cluster.bad_api_server", "/api_server");
	attach(admin, aks, cluster_body("test-aks-eus", NULL, NULL, "not a certificate", NULL,
	    NULL));
	expect_problem(400, "cluster.bad_ca", "/ca_cert");
	attach(admin, aks, cluster_body("test-aks-eus", NULL, NULL, "-----BEGIN CERTIFICATE-----"
	    "\n!!!!\n-----END CERTIFICATE-----\n", NULL, NULL));
	expect_problem(400, "cluster.bad_ca", "/ca_cert");
	attach(admin, aks, cluster_body("test-aks-eus", "Bad_Name", NULL, NULL, NULL, NULL));
	expect_problem(400, "cluster.bad_name", "/name");
	call("POST", "/v1/clouds/00000000-0000-4000-8000-000000000000/clusters", admin,
	    "{}", NULL);
	expect_status(404);
	/* a gke cluster id under an aks cloud */
	{
		char path[128], *b = cluster_body("test-gke-usc1", "wrong-kind", NULL, NULL, NULL,
		    NULL);

		snprintf(path, sizeof(path), "/v1/clouds/%s/clusters", aks);
		call("POST", path, admin, b, NULL);
		free(b);
		expect_problem(400, "cluster.bad_provider_id", "/provider_cluster_id");
	}
	/* reachability: wrong token, wrong CA */
	snprintf(planted, sizeof(planted), "planted-wrong-token-%d-7f3a", (int)getpid());
	add_secret(planted);
	attach(admin, aks, cluster_body("test-aks-eus", NULL, NULL, NULL, planted, NULL));
	expect_problem(422, "cluster.unauthorized", "/credentials/token");
	attach(admin, aks, cluster_body("test-aks-eus", NULL, NULL, wrong_ca, NULL, NULL));
	expect_problem(422, "cluster.unreachable", "/api_server");
	assert_int_equal(sql_count("SELECT count(*) FROM clusters WHERE cloud_id = $1", aks), 0);
}

static void
test_cluster_attach_and_filters(void **state)
{
	static const char *const names[3] = { "test-gke-usc1", "test-aks-eus", "test-hp-usw2" };
	json_t *labels = json_pack("{s:s}", "team", "ml");

	(void)state;
	for (int i = 1; i < 3; i++) {
		add_secret(jpath(cs_cluster(names[i]), "token"));
		if (attach(admin, P[i].cloud_a, cluster_body(names[i], NULL, NULL, NULL, NULL,
		    labels)) != 201)
			fail_msg("attach %s: %ld %s", names[i], R.status, R.body);
		snprintf(clusters[i], sizeof(clusters[i]), "%s", jpath(R.json, "id"));
		expect_audit("cluster.create", clusters[i]);
		/* the same name twice under one cloud */
		attach(admin, P[i].cloud_a, cluster_body(names[i], NULL, NULL, NULL, NULL, NULL));
		expect_problem(409, "cluster.exists", "/name");
	}
	snprintf(clusters[0], sizeof(clusters[0]), "%s", prod_cluster);
	add_secret(jpath(cs_cluster("test-hp-use1"), "token"));
	if (attach(admin, P[2].cloud_b, cluster_body("test-hp-use1", NULL, NULL, NULL, NULL,
	    NULL)) != 201)
		fail_msg("attach test-hp-use1: %ld %s", R.status, R.body);
	snprintf(hp_b_cluster, sizeof(hp_b_cluster), "%s", jpath(R.json, "id"));
	expect_audit("cluster.create", hp_b_cluster);
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
			assert_int_equal(call("GET", path, viewer, NULL, NULL), 200);
			for (int k = 0; k < 4; k++) {
				n += f[i].want[k];
				if ((strstr(R.body, ids[k]) != NULL) != f[i].want[k])
					fail_msg("%s: cluster %d: %s", path, k, R.body);
			}
			assert_int_equal(json_array_size(json_object_get(R.json, "items")), n);
		}
		/* the staging token sees only its own */
		assert_int_equal(call("GET", "/v1/clusters", staging_admin, NULL, NULL), 200);
		assert_int_equal(json_array_size(json_object_get(R.json, "items")), 1);
		assert_non_null(strstr(R.body, hp_b_cluster));
		/* paging */
		assert_int_equal(call("GET", "/v1/clusters?limit=3", viewer, NULL, NULL), 200);
		assert_int_equal(json_array_size(json_object_get(R.json, "items")), 3);
	}
}

static char *
etag_of(const char *path)
{
	assert_int_equal(call("GET", path, admin, NULL, NULL), 200);
	return harness_header(&R, "ETag");
}

static void
test_cloud_put_delete(void **state)
{
	const struct prov *p = &P[1];
	char path[128], body[800], stale[64], im[96], *etag, *etag2;
	long version;

	(void)state;
	snprintf(path, sizeof(path), "/v1/clouds/%s", p->cloud_a);
	etag = etag_of(path);
	assert_non_null(etag);
	version = (long)json_integer_value(json_object_get(R.json, "version"));
	/* identical PUT: same version, no audit */
	snprintf(body, sizeof(body), "{\"name\":\"test-aks\",\"environment\":\"test\","
	    "\"provider\":\"aks\",\"region\":\"eastus\",\"account\":%s}", p->account);
	snprintf(im, sizeof(im), "If-Match: %s", etag);
	assert_int_equal(call("PUT", path, admin, body, (const char *const[]){ im, NULL }), 200);
	assert_int_equal(json_integer_value(json_object_get(R.json, "version")), version);
	etag2 = harness_header(&R, "ETag");
	assert_string_equal(etag, etag2);
	free(etag2);
	/* stale If-Match */
	snprintf(stale, sizeof(stale), "If-Match: \"%ld\"", version + 7);
	snprintf(body, sizeof(body), "{\"name\":\"aks-renamed\",\"environment\":\"test\","
	    "\"provider\":\"aks\",\"region\":\"eastus\",\"account\":%s}", p->account);
	call("PUT", path, admin, body, (const char *const[]){ stale, NULL });
	expect_problem(412, "api.precondition_failed", NULL);
	/* a real change */
	assert_int_equal(call("PUT", path, admin, body, (const char *const[]){ im, NULL }), 200);
	assert_int_equal(json_integer_value(json_object_get(R.json, "version")), version + 1);
	assert_string_equal(jpath(R.json, "name"), "aks-renamed");
	assert_string_equal(jpath(R.json, "state"), "active");
	expect_audit("cloud.update", p->cloud_a);
	assert_int_equal(call("GET", path, viewer, NULL, NULL), 200);
	assert_string_equal(jpath(R.json, "name"), "aks-renamed");
	/* immutable fields */
	snprintf(body, sizeof(body), "{\"name\":\"aks-renamed\",\"environment\":\"test\","
	    "\"provider\":\"aks\",\"region\":\"westeurope\",\"account\":%s}", p->account);
	call("PUT", path, admin, body, NULL);
	expect_problem(409, "cloud.immutable", "/region");
	snprintf(body, sizeof(body), "{\"name\":\"aks-renamed\",\"environment\":\"test\","
	    "\"provider\":\"hyperpod\",\"region\":\"us-west-2\",\"account\":%s}", p->account);
	call("PUT", path, admin, body, NULL);
	assert_true(R.status == 409 || R.status == 400);
	assert_non_null(jpath(R.json, "errors.0.pointer"));
	assert_true(strcmp(jpath(R.json, "errors.0.pointer"), "/provider") == 0 ||
	    strncmp(jpath(R.json, "errors.0.pointer"), "/account", 8) == 0);
	/* a cloud with a member cluster stays */
	call("DELETE", path, admin, NULL, NULL);
	expect_problem(409, "cloud.in_use", NULL);
	free(etag);

	/* cluster PUT */
	{
		char cpath[128], *b;
		json_t *lab = json_pack("{s:s}", "team", "ml");

		snprintf(cpath, sizeof(cpath), "/v1/clusters/%s", clusters[1]);
		etag = etag_of(cpath);
		version = (long)json_integer_value(json_object_get(R.json, "version"));
		b = cluster_body("test-aks-eus", NULL, NULL, NULL, NULL, lab);
		{	/* identical without credentials (write-only) keeps the version */
			json_t *o = json_loads(b, 0, NULL);

			json_object_del(o, "credentials");
			free(b);
			b = json_dumps(o, JSON_COMPACT);
			json_decref(o);
		}
		snprintf(im, sizeof(im), "If-Match: %s", etag);
		assert_int_equal(call("PUT", cpath, admin, b, (const char *const[]){ im, NULL }),
		    200);
		assert_int_equal(json_integer_value(json_object_get(R.json, "version")), version);
		free(b);
		json_object_set_new(lab, "team", json_string("infra"));
		b = cluster_body("test-aks-eus", NULL, NULL, NULL, NULL, lab);
		call("PUT", cpath, admin, b, (const char *const[]){ stale, NULL });
		expect_problem(412, "api.precondition_failed", NULL);
		assert_int_equal(call("PUT", cpath, admin, b, (const char *const[]){ im, NULL }),
		    200);
		assert_int_equal(json_integer_value(json_object_get(R.json, "version")),
		    version + 1);
		assert_string_equal(jpath(R.json, "labels.team"), "infra");
		expect_audit("cluster.update", clusters[1]);
		/* the same body again, the same token included: nothing changes */
		assert_int_equal(call("PUT", cpath, admin, b, NULL), 200);
		assert_int_equal(json_integer_value(json_object_get(R.json, "version")),
		    version + 1);
		free(b);
		b = cluster_body("test-aks-eus", "renamed", NULL, NULL, NULL, lab);
		call("PUT", cpath, admin, b, NULL);
		expect_problem(409, "cluster.immutable", "/name");
		free(b);
		json_decref(lab);
		free(etag);
		/* DELETE: stale If-Match, 204, then 404 */
		call("DELETE", cpath, admin, NULL, (const char *const[]){ stale, NULL });
		expect_problem(412, "api.precondition_failed", NULL);
		assert_int_equal(call("DELETE", cpath, oper, NULL, NULL), 403);
		assert_int_equal(call("DELETE", cpath, admin, NULL, NULL), 204);
		expect_audit("cluster.delete", clusters[1]);
		assert_int_equal(call("DELETE", cpath, admin, NULL, NULL), 404);
		assert_int_equal(call("GET", cpath, admin, NULL, NULL), 404);
	}
	/* now the cloud goes, and with it its identities */
	assert_int_equal(call("DELETE", path, admin, NULL, NULL), 204);
	expect_audit("cloud.delete", p->cloud_a);
	assert_int_equal(call("GET", path, admin, NULL, NULL), 404);
	assert_int_equal(call("DELETE", path, admin, NULL, NULL), 404);
	assert_int_equal(sql_count("SELECT count(*) FROM iam_identities WHERE cloud_id = $1",
	    p->cloud_a), 0);
}

/* ---- audit and secrets */

static void
test_audit(void **state)
{
	PGconn *c = PQconnectdb(dburl);
	PGresult *r;
	int n;

	(void)state;
	assert_int_equal(PQstatus(c), CONNECTION_OK);
	r = PQexec(c, "SELECT action, resource_id, coalesce(environment, ''), actor_name,"
	    " coalesce(request_id, ''), actor_id IS NOT NULL FROM audit_log"
	    " WHERE resource_type IN ('cloud', 'cluster') ORDER BY id");
	assert_int_equal(PQresultStatus(r), PGRES_TUPLES_OK);
	n = PQntuples(r);
	for (int i = 0; i < n || i < nexp; i++) {
		const char *a = i < n ? PQgetvalue(r, i, 0) : "(none)";
		const char *id = i < n ? PQgetvalue(r, i, 1) : "";

		if (i >= nexp || strcmp(a, exp_action[i]) != 0 || strcmp(id, exp_id[i]) != 0)
			fail_msg("audit row %d: have %s %s, want %s %s", i, a, id,
			    i < nexp ? exp_action[i] : "(none)", i < nexp ? exp_id[i] : "");
		assert_true(PQgetvalue(r, i, 2)[0] != '\0');
		assert_true(PQgetvalue(r, i, 3)[0] != '\0');
		assert_true(PQgetvalue(r, i, 4)[0] != '\0');
		assert_string_equal(PQgetvalue(r, i, 5), "t");
	}
	print_message("audit: %d rows for clouds and clusters, as expected\n", n);
	PQclear(r);
	PQfinish(c);
	/* admins read it over the API, filtered by resource */
	{
		char path[160];

		snprintf(path, sizeof(path), "/v1/audit?resource_type=cloud&resource_id=%s",
		    P[0].cloud_a);
		assert_int_equal(call("GET", path, admin, NULL, NULL), 200);
		assert_non_null(strstr(R.body, "cloud.iam.rotate"));
		assert_int_equal(call("GET", "/v1/audit", oper, NULL, NULL), 403);
	}
}

static void
test_secrets(void **state)
{
	char planted[64], path[128], *log, *b;

	(void)state;
	/* a credential replaced by PUT is sealed like the first */
	snprintf(planted, sizeof(planted), "planted-put-token-%d-c0ffee", (int)getpid());
	add_secret(planted);
	snprintf(path, sizeof(path), "/v1/clusters/%s", hp_b_cluster);
	b = cluster_body("test-hp-use1", NULL, NULL, NULL, planted, NULL);
	assert_int_equal(call("PUT", path, admin, b, NULL), 200);
	free(b);
	expect_audit("cluster.update", hp_b_cluster);
	assert_int_equal(call("GET", path, admin, NULL, NULL), 200);
	assert_int_equal(call("GET", "/v1/clusters", admin, NULL, NULL), 200);
	assert_int_equal(call("GET", "/v1/audit?limit=200", admin, NULL, NULL), 200);
	usleep(300 * 1000);	/* let the poller try the planted token once */
	log = harness_slurp(fd.log);
	assert_non_null(log);
	assert_non_null(strstr(log, "\"level\""));
	for (int i = 0; i < nsecrets; i++) {
		long leaks = sql_count("SELECT count(*) FROM audit_log WHERE position($1 in"
		    " coalesce(before::text, '') || coalesce(after::text, '')) > 0", secrets[i]);

		if (strstr(log, secrets[i]) != NULL)
			fail_msg("credential %d is in fleetd's log %s", i, fd.log);
		assert_int_equal(leaks, 0);
		assert_int_equal(sql_count("SELECT count(*) FROM clusters WHERE position($1 in"
		    " credentials_sealed || api_server || ca_cert || labels::text) > 0",
		    secrets[i]), 0);
	}
	print_message("%d credentials checked against every answer, the log and the audit\n",
	    nsecrets);
	free(log);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_phase1_bad_input),
		cmocka_unit_test(test_phase1),
		cmocka_unit_test(test_idempotent_create),
		cmocka_unit_test(test_phase2_grammar),
		cmocka_unit_test(test_flow_gke),
		cmocka_unit_test(test_flow_aks),
		cmocka_unit_test(test_flow_hyperpod),
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
	return cmocka_run_group_tests(tests, setup, teardown);
}
