/* test_dispatch: dispatch and status workers against cloudsim — a RayJob's whole story,
 * schema-valid manifests equal to what the cluster stored, cancel, TTL cleanup, stockout
 * then running elsewhere, exactly one apply per attempt across a SIGKILL between apply
 * and record, and a preempted victim suspended after its grace period. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <libpq-fe.h>

#include "providers/jobspec.h"
#include "providers/kuberay.h"
#include "regions/catalog.h"
#include "tests/integration/harness.h"

#define ENV		"disp"
#define H100		"nvidia-h100-80gb"
#define TIME_SCALE	"2"	/* RayJobs run 10 s, pods start in 1 s */
#define MASTER_KEY	"MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY="

static struct fleetd_proc fd;
static char dburl[512], csdir[256], envfile[320], cloudsim_url[128];
static char *admin;
static json_t *csclusters;	/* clusters.json "clusters" */
static pid_t cs_pid;
static PGconn *pg;
static char *fd_env[64];

static double
now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void
sql(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static void
sql(const char *fmt, ...)
{
	char q[8192];
	va_list ap;
	PGresult *r;

	va_start(ap, fmt);
	vsnprintf(q, sizeof(q), fmt, ap);
	va_end(ap);
	r = PQexec(pg, q);
	if (PQresultStatus(r) != PGRES_COMMAND_OK && PQresultStatus(r) != PGRES_TUPLES_OK)
		fail_msg("%s: %s", q, PQresultErrorMessage(r));
	PQclear(r);
}

/* First column of the one row of q, malloc'd ("" for NULL). */
static char *
sql_str(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static char *
sql_str(const char *fmt, ...)
{
	char q[4096], *v;
	va_list ap;
	PGresult *r;

	va_start(ap, fmt);
	vsnprintf(q, sizeof(q), fmt, ap);
	va_end(ap);
	r = PQexec(pg, q);
	if (PQresultStatus(r) != PGRES_TUPLES_OK || PQntuples(r) != 1)
		fail_msg("%s: %s", q, PQresultErrorMessage(r));
	v = strdup(PQgetvalue(r, 0, 0));
	PQclear(r);
	return v;
}

static long
sql_long(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static long
sql_long(const char *fmt, ...)
{
	char q[4096];
	va_list ap;
	char *s;
	long v;

	va_start(ap, fmt);
	vsnprintf(q, sizeof(q), fmt, ap);
	va_end(ap);
	s = sql_str("%s", q);
	v = atol(s);
	free(s);
	return v;
}

static char *
job_events_text(const char *id)
{
	PGresult *r;
	char q[256], *out = calloc(1, 16384);
	size_t n = 0;

	snprintf(q, sizeof(q), "SELECT type, coalesce(from_state, ''), coalesce(to_state, ''),"
	    " attempt, message FROM job_events WHERE job_id = '%s' ORDER BY id", id);
	r = PQexec(pg, q);
	for (int i = 0; i < PQntuples(r) && n < 16000; i++)
		n += (size_t)snprintf(out + n, 16384 - n, "  %s %s->%s a%s %s\n",
		    PQgetvalue(r, i, 0), PQgetvalue(r, i, 1), PQgetvalue(r, i, 2),
		    PQgetvalue(r, i, 3), PQgetvalue(r, i, 4));
	PQclear(r);
	return out;
}

/* Waits until job id is in state (and attempt when > 0); fails with its events. */
static void
wait_state(const char *id, const char *state, int attempt, double timeout)
{
	double end = now_s() + timeout;

	while (now_s() < end) {
		if (sql_long("SELECT count(*) FROM jobs WHERE id = '%s' AND state = '%s' AND"
		    " (%d = 0 OR attempt = %d)", id, state, attempt, attempt) == 1)
			return;
		usleep(100 * 1000);
	}
	{
		char *ev = job_events_text(id), *cur = sql_str("SELECT state || ' a' || attempt ||"
		    " ' ' || coalesce(reason, '') FROM jobs WHERE id = '%s'", id);

		fail_msg("job %s: want %s (attempt %d), have %s; events:\n%s\nfleetd log %s", id,
		    state, attempt, cur, ev, fd.log);
	}
}

/* ---- cloudsim */

static json_t *
sim_get(const char *path)
{
	struct http_result r;
	char u[512];
	json_t *j;

	snprintf(u, sizeof(u), "%s%s", cloudsim_url, path);
	harness_http(&r, "GET", u, NULL, NULL, NULL);
	assert_int_equal(r.status, 200);
	j = json_incref(r.json);
	harness_http_free(&r);
	return j;
}

static void
sim_post(const char *path, const char *body)
{
	struct http_result r;
	char u[512];

	snprintf(u, sizeof(u), "%s%s", cloudsim_url, path);
	harness_http(&r, "POST", u, NULL, body, NULL);
	if (r.status != 200 && r.status != 201)
		fail_msg("cloudsim %s: %ld %s", path, r.status, r.body);
	harness_http_free(&r);
}

/* The stored object (as applied) of name on cluster, or NULL. */
static json_t *
sim_object(const char *cluster, const char *name, int *applies)
{
	char path[256];
	json_t *all, *o = NULL;

	snprintf(path, sizeof(path), "/_sim/objects?cluster=%s&name=%s", cluster, name);
	all = sim_get(path);
	if (json_array_size(json_object_get(all, "objects")) == 1) {
		json_t *it = json_array_get(json_object_get(all, "objects"), 0);

		o = json_incref(json_object_get(it, "object"));
		if (applies != NULL)
			*applies = (int)json_integer_value(json_object_get(it, "applies"));
	}
	json_decref(all);
	return o;
}

/* Apply count of an object ever (survives deletion). */
static int
sim_applies(const char *cluster, const char *ns, const char *plural, const char *name)
{
	char key[400];
	json_t *st = sim_get("/_sim/state");
	int n;

	snprintf(key, sizeof(key), "%s/%s/%s/%s", cluster, ns, plural, name);
	n = (int)json_integer_value(json_object_get(json_object_get(st, "applies"), key));
	json_decref(st);
	return n;
}

static json_t *
cs_cluster(const char *name)
{
	json_t *c;
	size_t i;

	json_array_foreach(csclusters, i, c)
		if (strcmp(json_string_value(json_object_get(c, "name")), name) == 0)
			return c;
	fail_msg("cloudsim has no cluster %s", name);
	return NULL;
}

static void
start_cloudsim(void)
{
	char port[320], *text, *line, *save = NULL;
	json_t *cl;

	snprintf(csdir, sizeof(csdir), "/tmp/fleetd-disp-cs-%d", (int)getpid());
	harness_sh("rm -rf %s && mkdir -p %s", csdir, csdir);
	cs_pid = fork();
	assert_true(cs_pid >= 0);
	if (cs_pid == 0) {
		char log[300];

		snprintf(log, sizeof(log), "%s/cloudsim.log", csdir);
		freopen(log, "w", stdout);
		freopen(log, "a", stderr);
		execl(FLEETD_BINARY_DIR "/cloudsim", "cloudsim", "--fleet",
		    FLEETD_SOURCE_DIR "/cloudsim/fleets/test.json", "--listen", "127.0.0.1:0",
		    "--state-dir", csdir, "--time-scale", TIME_SCALE, (char *)NULL);
		_exit(127);
	}
	snprintf(envfile, sizeof(envfile), "%s/fleetd.env", csdir);
	for (int i = 0; i < 200 && access(envfile, R_OK) != 0; i++)
		usleep(50 * 1000);
	usleep(100 * 1000);
	text = harness_slurp(envfile);
	assert_non_null(text);
	int n = 0;
	for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		if (line[0] == '#' || strchr(line, '=') == NULL || n >= 50)
			continue;
		if (strncmp(line, "FLEETD_CLOUDSIM_URL=", 20) == 0)
			snprintf(cloudsim_url, sizeof(cloudsim_url), "%s", line + 20);
		fd_env[n++] = strdup(line);
	}
	free(text);
	snprintf(port, sizeof(port), "%s/clusters.json", csdir);
	text = harness_slurp(port);
	cl = json_loads(text, 0, NULL);
	free(text);
	csclusters = json_incref(json_object_get(cl, "clusters"));
	json_decref(cl);
	fd_env[n++] = strdup("FLEETD_MASTER_KEY=" MASTER_KEY);
	fd_env[n++] = strdup("FLEETD_SNAPSHOT_MAX_AGE=1000000");
	fd_env[n++] = strdup("FLEETD_WORKERS=scheduler,dispatch,status");
	fd_env[n++] = strdup("FLEETD_SCHEDULER_INTERVAL_MS=300");
	fd_env[n] = NULL;
	assert_true(cloudsim_url[0] != '\0');
}

/* ---- registration: clouds by SQL (phase 2 needs the drivers), clusters over the API,
 * capacity as the poller would write it from cloudsim's ground truth */

static char *
api(const char *path)
{
	static char buf[4][1024];
	static int i;

	i = (i + 1) % 4;
	snprintf(buf[i], sizeof(buf[i]), "%s%s", fd.url, path);
	return buf[i];
}

static void
post_ok(const char *path, const char *body, json_t **out)
{
	struct http_result r;

	harness_http(&r, "POST", api(path), admin, body, NULL);
	if (r.status != 201)
		fail_msg("POST %s %s: %ld %s", path, body, r.status, r.body);
	if (out != NULL)
		*out = json_incref(r.json);
	harness_http_free(&r);
}

/* One capacity row; free_per_node < 0: every node fully free. */
static void
seed_pool(const char *cluster_id, const char *provider, json_t *pool, int max_nodes,
    int free_accel)
{
	const char *mt = json_string_value(json_object_get(pool, "machine_type"));
	int nodes = (int)json_integer_value(json_object_get(pool, "nodes"));
	int per = (int)json_integer_value(json_object_get(pool, "accelerators_per_node"));
	struct catalog_machine m;
	struct err e = { 0 };
	json_t *topo = json_array();
	char *ts, name[128];
	int left = free_accel;

	const char *flavor = json_string_value(json_object_get(pool, "accelerator"));

	if (!catalog_machine_lookup(provider, mt, &m, &e)) {
		m.vcpus = 16;	/* system pools the catalog does not price */
		m.memory_gib = 64;
	}
	if (flavor != NULL && strncmp(flavor, "tpu", 3) == 0) {
		json_decref(topo);
		return;
	}
	for (int i = 0; i < nodes; i++) {
		int f = left > per ? per : left;

		left -= f;
		snprintf(name, sizeof(name), "%s-%d", json_string_value(json_object_get(pool,
		    "name")), i);
		json_array_append_new(topo, json_pack("{s:s, s:i, s:I, s:I, s:b}", "name", name,
		    "free_accel", f, "free_cpu_m", (json_int_t)(m.vcpus - 2) * 1000, "free_mem",
		    (json_int_t)(m.memory_gib - 16) << 30, "ready", 1));
	}
	topo = json_pack("{s:o}", "nodes", topo);
	ts = json_dumps(topo, JSON_COMPACT);
	json_decref(topo);
	sql("INSERT INTO capacity (cluster_id, pool, flavor, machine_type, spot, price_hour,"
	    " accel_per_node, nodes, max_nodes, autoscaling, free_accel, free_cpu_m, free_mem,"
	    " topology) VALUES ('%s', '%s', '%s', '%s', %s, %f, %d, %d, %d, %s, %d, %lld, %lld,"
	    " '%s') ON CONFLICT (cluster_id, pool, flavor) DO UPDATE SET max_nodes ="
	    " excluded.max_nodes, free_accel = excluded.free_accel, topology = excluded.topology,"
	    " observed_at = now()", cluster_id, json_string_value(json_object_get(pool, "name")),
	    per > 0 && flavor ? flavor : "cpu", mt,
	    json_is_true(json_object_get(pool, "spot")) ? "true" : "false",
	    json_real_value(json_object_get(pool, "price_per_hour")), per, nodes, max_nodes,
	    json_is_true(json_object_get(pool, "autoscaling")) ? "true" : "false", free_accel,
	    (long long)(m.vcpus - 2) * 1000 * nodes, (long long)(m.memory_gib - 16) * nodes << 30,
	    ts);
	free(ts);
}

static json_t *
sim_pool(const char *cluster, const char *pool)
{
	json_t *st = sim_get("/_sim/state"), *c, *p, *out = NULL;
	size_t i, k;

	json_array_foreach(json_object_get(st, "clusters"), i, c)
		if (strcmp(json_string_value(json_object_get(c, "name")), cluster) == 0)
			json_array_foreach(json_object_get(c, "pools"), k, p)
				if (strcmp(json_string_value(json_object_get(p, "name")), pool) == 0)
					out = json_incref(p);
	json_decref(st);
	assert_non_null(out);
	json_object_set_new(out, "accelerators_per_node",
	    json_integer(json_integer_value(json_object_get(out, "accelerators_per_node"))));
	return out;
}

/* Registers cloudsim cluster name; returns its fleetd id (malloc'd). */
static char *
register_cluster(const char *name)
{
	json_t *c = cs_cluster(name), *body, *out = NULL, *st, *cl, *p;
	const char *prov = json_string_value(json_object_get(c, "provider"));
	char *ca, *text, *cloud, *id, path[128];
	size_t i, k;

	cloud = sql_str("INSERT INTO clouds (id, name, environment, provider, region, account,"
	    " external_id, state, required) VALUES (gen_random_uuid(), '%s', '" ENV "', '%s',"
	    " '%s', '{}', 'ext-%s', 'active', '{}') RETURNING id", name, prov,
	    json_string_value(json_object_get(c, "region")), name);
	ca = harness_slurp(json_string_value(json_object_get(c, "ca_file")));
	body = json_pack("{s:s, s:s, s:s, s:{s:s}, s:s, s:s}", "name", name, "api_server",
	    json_string_value(json_object_get(c, "api_server")), "ca_cert", ca, "credentials",
	    "token", json_string_value(json_object_get(c, "token")), "provider_cluster_id",
	    json_string_value(json_object_get(c, "provider_cluster_id")), "batch_scheduler",
	    json_string_value(json_object_get(c, "batch_scheduler")));
	text = json_dumps(body, JSON_COMPACT);
	snprintf(path, sizeof(path), "/v1/clouds/%s/clusters", cloud);
	post_ok(path, text, &out);
	id = strdup(json_string_value(json_object_get(out, "id")));
	st = sim_get("/_sim/state");
	json_array_foreach(json_object_get(st, "clusters"), i, cl) {
		if (strcmp(json_string_value(json_object_get(cl, "name")), name) != 0)
			continue;
		json_array_foreach(json_object_get(cl, "pools"), k, p) {
			json_object_set_new(p, "accelerators_per_node", json_integer(
			    json_integer_value(json_object_get(p, "accelerators_per_node"))));
			seed_pool(id, prov, p, (int)json_integer_value(json_object_get(p, "max")),
			    (int)json_integer_value(json_object_get(p, "free_accelerators")));
		}
	}
	json_decref(st);
	json_decref(out);
	json_decref(body);
	free(text);
	free(ca);
	free(cloud);
	return id;
}

static char *hp_id, *aks_id, *gke_id;

static int
setup(void **state)
{
	(void)state;
	start_cloudsim();
	harness_db_create("disp", dburl, sizeof(dburl));
	harness_fleetd_start(&fd, dburl, (const char *const *)fd_env);
	pg = PQconnectdb(dburl);
	assert_int_equal(PQstatus(pg), CONNECTION_OK);
	admin = harness_token(dburl, "admin", "*");
	post_ok("/v1/environments", "{\"name\":\"" ENV "\"}", NULL);
	post_ok("/v1/priority-classes", "{\"name\":\"low\",\"value\":10}", NULL);
	post_ok("/v1/priority-classes", "{\"name\":\"high\",\"value\":1000,\"preempt\":true}",
	    NULL);
	post_ok("/v1/queues", "{\"name\":\"ml\",\"environment\":\"" ENV "\","
	    "\"default_priority_class\":\"low\",\"nominal_quota\":{\"" H100 "\":200}}", NULL);
	hp_id = register_cluster("test-hp-usw2");
	aks_id = register_cluster("test-aks-eus");
	gke_id = register_cluster("test-gke-usc1");
	/* GKE's h100 looks full until the stockout test frees it (as a poller would see) */
	sql("UPDATE capacity SET max_nodes = nodes, free_accel = 0, topology = jsonb_build_object("
	    "'nodes', (SELECT jsonb_agg(n || '{\"free_accel\": 0}') FROM jsonb_array_elements("
	    "topology->'nodes') n)) WHERE cluster_id = '%s' AND pool = 'h100'", gke_id);
	sql("UPDATE clusters SET stockout_timeout_s = 2");
	return 0;
}

static int
teardown(void **state)
{
	(void)state;
	if (fd.pid > 0)
		harness_fleetd_stop(&fd);
	PQfinish(pg);
	harness_db_drop(dburl);
	if (cs_pid > 0) {
		kill(cs_pid, SIGTERM);
		waitpid(cs_pid, NULL, 0);
	}
	harness_sh("rm -rf %s", csdir);
	for (int i = 0; fd_env[i] != NULL; i++)
		free(fd_env[i]);
	json_decref(csclusters);
	free(admin);
	free(hp_id);
	free(aks_id);
	free(gke_id);
	harness_validate_responses();
	return 0;
}

/* ---- jobs */

static char *
submit(const char *kind, const char *name, int replicas, const char *extra)
{
	char body[2048];
	struct http_result r;
	char *id;

	snprintf(body, sizeof(body), "{\"environment\":\"" ENV "\",\"kind\":\"%s\",\"queue\":"
	    "\"ml\",\"name\":\"%s\",\"ray_version\":\"2.52.0\",%s"
	    "\"head\":{\"cpu\":\"2\",\"memory\":\"8Gi\"},\"worker_groups\":[{\"name\":\"gpu\","
	    "\"replicas\":%d,\"cpu\":\"8\",\"memory\":\"64Gi\",\"accelerator\":{\"flavor\":\""
	    H100 "\",\"count\":8}}]%s%s}", kind, name, strcmp(kind, "RayJob") == 0 ?
	    "\"entrypoint\":\"python train.py\"," : "", replicas, extra ? "," : "",
	    extra ? extra : "");
	harness_http(&r, "POST", api("/v1/jobs"), admin, body, NULL);
	if (r.status != 201)
		fail_msg("submit %s: %ld %s", body, r.status, r.body);
	id = strdup(json_string_value(json_object_get(r.json, "id")));
	harness_http_free(&r);
	return id;
}

static bool
has_event(const char *id, const char *type, const char *from, const char *to)
{
	return sql_long("SELECT count(*) FROM job_events WHERE job_id = '%s' AND type = '%s'"
	    " AND coalesce(from_state, '') = '%s' AND coalesce(to_state, '') = '%s'", id, type,
	    from, to) > 0;
}

/* name of attempt's object of job id (spec name sname, kind k) */
static void
object_name(enum jobspec_kind k, const char *sname, const char *id, int attempt, char *out,
    size_t n)
{
	assert_true(kuberay_object_name(k, sname, id, attempt, out, n));
}

static char *
get_manifest(const char *id)
{
	struct http_result r;
	char path[128], *text;

	snprintf(path, sizeof(path), "/v1/jobs/%s/manifest", id);
	harness_http(&r, "GET", api(path), admin, NULL, NULL);
	if (r.status != 200)
		fail_msg("GET %s: %ld %s", path, r.status, r.body);
	text = strdup(r.body);
	harness_http_free(&r);
	return text;
}

static void
cancel(const char *id)
{
	struct http_result r;
	char path[128];

	snprintf(path, sizeof(path), "/v1/jobs/%s/cancel", id);
	harness_http(&r, "POST", api(path), admin, "{}", NULL);
	if (r.status != 200 && r.status != 202)
		fail_msg("POST %s: %ld %s", path, r.status, r.body);
	harness_http_free(&r);
}

/* pending -> admitted -> dispatched -> running -> succeeded, every event, the manifest
 * schema-valid and equal to what the cluster stored, then TTL cleanup. */
static void
test_lifecycle(void **state)
{
	char *id = submit("RayJob", "lifecycle", 1, "\"constraints\":{\"providers\":"
	    "[\"hyperpod\"]},\"ttl_seconds_after_finished\":2");
	char name[64], file[300], *m;
	json_t *applied, *mj;

	(void)state;
	wait_state(id, "running", 1, 30);
	object_name(JOBSPEC_RAYJOB, "lifecycle", id, 1, name, sizeof(name));
	applied = sim_object("test-hp-usw2", name, NULL);
	assert_non_null(applied);
	m = get_manifest(id);
	mj = json_loads(m, 0, NULL);
	if (!json_equal(mj, applied))
		fail_msg("GET manifest differs from what cloudsim stored:\n%s", m);
	snprintf(file, sizeof(file), "%s/lifecycle.json", csdir);
	assert_int_equal(json_dump_file(applied, file, JSON_INDENT(2)), 0);
	assert_int_equal(harness_sh(FLEETD_SOURCE_DIR "/../shared/tools/validate-manifest "
	    "--quiet %s", file), 0);
	wait_state(id, "succeeded", 1, 40);
	assert_true(has_event(id, "submitted", "", "pending"));
	assert_true(has_event(id, "state", "pending", "admitted"));
	assert_true(has_event(id, "state", "admitted", "dispatched"));
	assert_true(has_event(id, "state", "dispatched", "running"));
	assert_true(has_event(id, "state", "running", "succeeded"));
	assert_true(sql_long("SELECT count(*) FROM job_events WHERE job_id = '%s' AND type ="
	    " 'cluster_status' AND message LIKE 'RayJob Complete/SUCCEEDED%%'", id) == 1);
	/* TTL: the object goes 2 s after the end */
	for (int i = 0; i < 100; i++) {
		json_t *o = sim_object("test-hp-usw2", name, NULL);

		json_decref(o);
		if (o == NULL)
			break;
		usleep(100 * 1000);
	}
	json_t *gone = sim_object("test-hp-usw2", name, NULL);
	assert_null(gone);
	assert_true(sql_long("SELECT count(*) FROM job_events WHERE job_id = '%s' AND type ="
	    " 'cleaned_up'", id) == 1);
	assert_int_equal(sim_applies("test-hp-usw2", json_string_value(json_object_get(
	    json_object_get(mj, "metadata"), "namespace")), "rayjobs", name), 1);
	json_decref(mj);
	json_decref(applied);
	free(m);
	free(id);
}

/* A running RayCluster is deleted from its cluster on cancel. */
static void
test_cancel(void **state)
{
	char *id = submit("RayCluster", "cancelme", 1, "\"constraints\":{\"providers\":"
	    "[\"hyperpod\"]}");
	char name[64];
	json_t *o;

	(void)state;
	wait_state(id, "running", 1, 30);
	object_name(JOBSPEC_RAYCLUSTER, "cancelme", id, 1, name, sizeof(name));
	o = sim_object("test-hp-usw2", name, NULL);
	assert_non_null(o);
	json_decref(o);
	cancel(id);
	wait_state(id, "cancelled", 1, 20);
	o = sim_object("test-hp-usw2", name, NULL);
	assert_null(o);
	assert_true(has_event(id, "cancel_requested", "", ""));
	assert_true(has_event(id, "state", "running", "cancelled"));
	free(id);
}

/* SIGKILL between apply and record (the record waits on a row lock the test holds):
 * the next fleetd finds the object of this attempt and records it without applying. */
static void
test_exactly_once(void **state)
{
	char *id, name[64], ns[64], q[256];
	struct http_result r;
	PGresult *res;
	int st;

	(void)state;
	sim_post("/_sim/faults", "{\"service\":\"k8s\",\"cluster\":\"test-hp-usw2\","
	    "\"latency_ms\":700}");
	id = submit("RayCluster", "once", 1, "\"constraints\":{\"providers\":[\"hyperpod\"]}");
	object_name(JOBSPEC_RAYCLUSTER, "once", id, 1, name, sizeof(name));
	assert_true(kuberay_namespace(ENV, "ml", ns, sizeof(ns)));
	for (int i = 0; i < 400 && sql_long("SELECT count(*) FROM jobs WHERE id = '%s' AND"
	    " claimed_by IS NOT NULL", id) == 0; i++)
		usleep(10 * 1000);
	sql("BEGIN");
	snprintf(q, sizeof(q), "SELECT state FROM jobs WHERE id = '%s' FOR UPDATE", id);
	res = PQexec(pg, q);
	assert_int_equal(PQresultStatus(res), PGRES_TUPLES_OK);
	assert_string_equal(PQgetvalue(res, 0, 0), "admitted");
	PQclear(res);
	for (int i = 0; i < 100 && sim_applies("test-hp-usw2", ns, "rayclusters", name) == 0; i++)
		usleep(100 * 1000);
	assert_int_equal(sim_applies("test-hp-usw2", ns, "rayclusters", name), 1);
	usleep(300 * 1000);	/* the record is now waiting on our lock */
	kill(fd.pid, SIGKILL);
	waitpid(fd.pid, &st, 0);
	fd.pid = 0;
	sql("ROLLBACK");
	assert_true(sql_long("SELECT count(*) FROM jobs WHERE id = '%s' AND state = 'admitted'"
	    " AND claimed_by IS NOT NULL", id) == 1);
	{
		char u[256];

		snprintf(u, sizeof(u), "%s/_sim/faults", cloudsim_url);
		harness_http(&r, "DELETE", u, NULL, NULL, NULL);
		harness_http_free(&r);
	}
	harness_fleetd_start(&fd, dburl, (const char *const *)fd_env);
	wait_state(id, "running", 1, 60);	/* takeover waits out a dead apply (DISPATCH_INFLIGHT_S) */
	assert_int_equal(sim_applies("test-hp-usw2", ns, "rayclusters", name), 1);
	assert_true(sql_long("SELECT count(*) FROM job_events WHERE job_id = '%s' AND"
	    " to_state = 'dispatched' AND data->>'reused' = 'true'", id) == 1);
	cancel(id);
	wait_state(id, "cancelled", 1, 20);
	free(id);
}

/* Kubernetes call to a cloudsim member with curl (the test's own workload). */
static void
kube_call(const char *cluster, const char *method, const char *path, const char *body)
{
	json_t *c = cs_cluster(cluster);
	char file[300];
	FILE *f;

	snprintf(file, sizeof(file), "%s/body.json", csdir);
	f = fopen(file, "w");
	assert_non_null(f);
	fputs(body, f);
	fclose(f);
	assert_int_equal(harness_sh("curl -sf -o /dev/null --cacert %s -H 'Authorization: Bearer"
	    " %s' -H 'Content-Type: application/json' -X %s --data-binary @%s '%s%s'",
	    json_string_value(json_object_get(c, "ca_file")),
	    json_string_value(json_object_get(c, "token")), method, file,
	    json_string_value(json_object_get(c, "api_server")), path), 0);
}

/* The chosen pool cannot grow (stockout) and its nodes are taken: the job is withdrawn
 * after the cluster's timeout and runs on another cluster, keeping its queue position. */
static void
test_stockout(void **state)
{
	char *id, *enq, name[64];
	json_t *pool, *o;

	(void)state;
	kube_call("test-aks-eus", "POST", "/api/v1/namespaces", "{\"apiVersion\":\"v1\",\"kind\":"
	    "\"Namespace\",\"metadata\":{\"name\":\"other\"}}");
	kube_call("test-aks-eus", "POST", "/apis/ray.io/v1/namespaces/other/rayclusters",
	    "{\"apiVersion\":\"ray.io/v1\",\"kind\":\"RayCluster\",\"metadata\":{\"name\":\"hog\","
	    "\"namespace\":\"other\"},\"spec\":{\"headGroupSpec\":{\"template\":{\"spec\":{"
	    "\"nodeSelector\":{\"kubernetes.azure.com/agentpool\":\"system\"},\"containers\":[{"
	    "\"name\":\"h\",\"image\":\"ray\",\"resources\":{\"requests\":{\"cpu\":\"1\"}}}]}}},"
	    "\"workerGroupSpecs\":[{\"groupName\":\"g\",\"replicas\":2,\"minReplicas\":2,"
	    "\"maxReplicas\":2,\"template\":{\"spec\":{\"nodeSelector\":{"
	    "\"kubernetes.azure.com/agentpool\":\"h100\"},\"tolerations\":[{\"operator\":"
	    "\"Exists\"}],\"containers\":[{\"name\":\"w\",\"image\":\"ray\",\"resources\":{"
	    "\"requests\":{\"cpu\":\"1\",\"nvidia.com/gpu\":\"8\"},\"limits\":{"
	    "\"nvidia.com/gpu\":\"8\"}}}]}}}]}}");
	for (int i = 0; i < 100; i++) {
		pool = sim_pool("test-aks-eus", "h100");
		if (json_integer_value(json_object_get(pool, "free_accelerators")) == 0) {
			json_decref(pool);
			break;
		}
		json_decref(pool);
		usleep(100 * 1000);
	}
	pool = sim_pool("test-aks-eus", "h100");
	assert_int_equal(json_integer_value(json_object_get(pool, "free_accelerators")), 0);
	seed_pool(aks_id, "aks", pool, 3, 0);	/* full, but may grow one node */
	json_decref(pool);
	id = submit("RayJob", "stock", 1, "\"constraints\":{\"regions\":[\"eastus\","
	    "\"us-central1\"],\"spot\":false}");
	enq = sql_str("SELECT enqueued_at::text FROM jobs WHERE id = '%s'", id);
	wait_state(id, "dispatched", 1, 20);
	assert_true(sql_long("SELECT count(*) FROM jobs WHERE id = '%s' AND cluster_id = '%s'",
	    id, aks_id) == 1);
	/* the poller now sees GKE's h100 as it is */
	pool = sim_pool("test-gke-usc1", "h100");
	seed_pool(gke_id, "gke", pool, (int)json_integer_value(json_object_get(pool, "max")),
	    (int)json_integer_value(json_object_get(pool, "free_accelerators")));
	json_decref(pool);
	wait_state(id, "running", 2, 60);
	assert_true(sql_long("SELECT count(*) FROM jobs WHERE id = '%s' AND cluster_id = '%s'"
	    " AND enqueued_at::text = '%s'", id, gke_id, enq) == 1);
	assert_true(sql_long("SELECT count(*) FROM stockouts WHERE cluster_id = '%s' AND"
	    " flavor = '" H100 "'", aks_id) == 1);
	assert_true(sql_long("SELECT count(*) FROM job_events WHERE job_id = '%s' AND"
	    " from_state = 'dispatched' AND to_state = 'pending' AND message LIKE 'stockout%%'",
	    id) == 1);
	assert_true(sql_long("SELECT count(*) FROM job_events WHERE job_id = '%s' AND type ="
	    " 'cluster_event' AND data->>'reason' = 'FailedScheduling' AND attempt = 1", id) >= 1);
	object_name(JOBSPEC_RAYJOB, "stock", id, 1, name, sizeof(name));
	o = sim_object("test-aks-eus", name, NULL);
	assert_null(o);
	cancel(id);
	wait_state(id, "cancelled", 2, 20);
	free(enq);
	free(id);
}

/* A high-priority job preempts a running one: checkpoint annotation at once, then
 * suspend: true after the grace period, and the victim waits again in its queue. */
static void
test_preemption(void **state)
{
	char *victim, *hi, name[64];
	json_t *o, *ann;
	double gap;

	(void)state;
	victim = submit("RayJob", "victim", 2, "\"constraints\":{\"providers\":[\"hyperpod\"]},"
	    "\"checkpoint\":{\"uri\":\"s3://ckpt/victim\",\"grace_seconds\":2}");
	wait_state(victim, "running", 1, 30);
	/* the poller sees the victim's pods: the pool is full */
	for (int i = 0; i < 50; i++) {
		o = sim_pool("test-hp-usw2", "p5");
		if (json_integer_value(json_object_get(o, "free_accelerators")) == 0)
			break;
		json_decref(o);
		o = NULL;
		usleep(100 * 1000);
	}
	assert_non_null(o);
	seed_pool(hp_id, "hyperpod", o, 3, 0);
	json_decref(o);
	hi = submit("RayJob", "urgent", 1, "\"constraints\":{\"providers\":[\"hyperpod\"]},"
	    "\"priority_class\":\"high\"");
	wait_state(victim, "pending", 1, 30);
	object_name(JOBSPEC_RAYJOB, "victim", victim, 1, name, sizeof(name));
	o = sim_object("test-hp-usw2", name, NULL);
	assert_non_null(o);
	ann = json_object_get(json_object_get(o, "metadata"), "annotations");
	assert_non_null(json_object_get(ann, "fleet.io/checkpoint-requested"));
	assert_true(json_is_true(json_object_get(json_object_get(o, "spec"), "suspend")));
	json_decref(o);
	assert_true(has_event(victim, "checkpoint_requested", "", ""));
	gap = (double)sql_long("SELECT (extract(epoch from max(at) FILTER (WHERE to_state ="
	    " 'pending' AND from_state = 'preempted') - min(at) FILTER (WHERE to_state ="
	    " 'preempted')) * 1000)::bigint FROM job_events WHERE job_id = '%s'", victim);
	if (gap < 1900)
		fail_msg("suspended %.0f ms after preemption, before the 2 s grace", gap);
	wait_state(hi, "running", 1, 40);
	cancel(hi);
	cancel(victim);
	wait_state(hi, "cancelled", 1, 20);
	free(victim);
	free(hi);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_lifecycle),
		cmocka_unit_test(test_cancel),
		cmocka_unit_test(test_exactly_once),
		cmocka_unit_test(test_stockout),
		cmocka_unit_test(test_preemption),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
