/* fleet: registers cloudsim's member clusters through fleetd's API the way Terraform and
 * scripts/demo.py do (phase 1, the identities, phase 2, the cluster), and waits for their
 * first capacity snapshots; or seeds a fake cloud, cluster and capacity straight in SQL, and
 * builds RayJob bodies, for tests of the scheduler without a member cluster. */
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

#define js	harness_js

json_t *
harness_account_of(json_t *c)
{
	const char *p = js(c, "provider");

	if (strcmp(p, "gke") == 0)
		return json_pack("{s:s}", "project", js(c, "project"));
	if (strcmp(p, "aks") == 0)
		return json_pack("{s:s, s:s, s:s}", "subscription_id", js(c, "subscription"),
		    "tenant_id", js(c, "iam.control_plane.tenant_id"), "resource_group",
		    js(c, "resource_group"));
	return json_pack("{s:s}", "account_id", js(c, "account"));
}

void
harness_identities(const struct harness_cs *cs, json_t *c, json_t *cloud, const char **cp,
		   const char **cl)
{
	const char *p = js(c, "provider"), *id = js(cloud, "id");
	json_t *tags = json_pack("{s:s, s:s}", "fleet.io/cloud-id", id, "fleet.io/environment",
	    js(cloud, "environment")), *b1, *b2;
	char desc[128], *t1, *t2;

	snprintf(desc, sizeof(desc), "fleet.io/cloud-id=%s", id);
	if (strcmp(p, "gke") == 0) {
		*cp = js(c, "iam.control_plane.service_account");
		*cl = js(c, "iam.cluster_role.service_account");
		b1 = json_pack("{s:s, s:s, s:s, s:[s]}", "provider", "gcp", "service_account", *cp,
		    "description", desc, "token_creators", cs->fleetd_sa);
		b2 = json_pack("{s:s, s:s, s:s}", "provider", "gcp", "service_account", *cl,
		    "description", desc);
	} else if (strcmp(p, "aks") == 0) {
		if (json_array_size(harness_jp(cloud, "iam.required.control_plane_identity."
		    "federated_identity_credentials")) == 0)
			fail_msg("phase 1 of %s names no federated credential", id);
		*cp = js(c, "iam.control_plane.resource_id");
		*cl = js(c, "iam.cluster_role.resource_id");
		b1 = json_pack("{s:s, s:s, s:O, s:O*}", "provider", "azure", "resource_id", *cp,
		    "tags", tags, "federated_identity_credentials", harness_jp(cloud,
		    "iam.required.control_plane_identity.federated_identity_credentials"));
		b2 = json_pack("{s:s, s:s, s:O}", "provider", "azure", "resource_id", *cl, "tags",
		    tags);
	} else {
		*cp = js(c, "iam.control_plane.role_arn");
		*cl = js(c, "iam.cluster_role.role_arn");
		b1 = json_pack("{s:s, s:s, s:s, s:O}", "provider", "aws", "role_arn", *cp,
		    "external_id", js(cloud, "external_id"), "tags", tags);
		b2 = json_pack("{s:s, s:s, s:O}", "provider", "aws", "role_arn", *cl, "tags", tags);
	}
	t1 = json_dumps(b1, JSON_COMPACT);
	t2 = json_dumps(b2, JSON_COMPACT);
	harness_sim_post(cs, "/_sim/iam", t1);
	harness_sim_post(cs, "/_sim/iam", t2);
	free(t1);
	free(t2);
	json_decref(b1);
	json_decref(b2);
	json_decref(tags);
}

long
harness_cloud_create(const char *token, const char *name, const char *env, const char *provider,
		     const char *region, const char *account)
{
	char body[1024];

	snprintf(body, sizeof(body), "{\"name\":\"%s\",\"environment\":\"%s\",\"provider\":"
	    "\"%s\",\"region\":\"%s\",\"account\":%s}", name, env, provider, region, account);
	return harness_call("POST", token, body, "/v1/clouds");
}

long
harness_cloud_iam(const char *token, const char *cloud, const char *cp, const char *cl,
		  bool rotate)
{
	char body[900];

	snprintf(body, sizeof(body), "{\"control_plane_role\":\"%s\",\"cluster_role\":\"%s\"}",
	    cp, cl);
	return harness_call("POST", token, body, "/v1/clouds/%s/iam%s", cloud,
	    rotate ? "/rotate" : "");
}

json_t *
harness_cloud(const struct harness_cs *cs, const char *admin, const char *name, const char *env,
	      char *cloud_id)
{
	json_t *c = harness_cs_cluster(cs, name), *account = harness_account_of(c), *cloud;
	const char *cp = NULL, *cl = NULL;
	char cname[160], *acct = json_dumps(account, JSON_COMPACT);

	if (env == NULL)
		env = js(c, "environment");
	snprintf(cname, sizeof(cname), "%s-%s-%s", env, js(c, "provider"), js(c, "region"));
	if (harness_cloud_create(admin, cname, env, js(c, "provider"), js(c, "region"),
	    acct) != 201)
		fail_msg("phase 1 %s: %ld %s", cname, harness_r.status, harness_r.body);
	free(acct);
	json_decref(account);
	cloud = json_incref(harness_r.json);
	if (strcmp(js(cloud, "state"), "pending_iam") != 0)
		fail_msg("phase 1 %s: state %s", cname, js(cloud, "state"));
	harness_identities(cs, c, cloud, &cp, &cl);
	if (harness_cloud_iam(admin, js(cloud, "id"), cp, cl, false) != 200 ||
	    strcmp(js(harness_r.json, "state"), "active") != 0)
		fail_msg("phase 2 %s: %ld %s", cname, harness_r.status, harness_r.body);
	if (cloud_id != NULL)
		snprintf(cloud_id, 40, "%s", js(cloud, "id"));
	json_decref(cloud);
	return harness_r.json;
}

void
harness_register(const struct harness_cs *cs, const char *admin, const char *name,
		 char *cloud_id, char *cluster_id)
{
	json_t *c = harness_cs_cluster(cs, name), *body;
	char cloud[40];

	harness_cloud(cs, admin, name, NULL, cloud);
	body = json_pack("{s:s, s:s, s:s, s:{s:s}, s:s}", "name", name, "api_server",
	    js(c, "api_server"), "ca_cert", cs->ca_pem, "credentials", "token", js(c, "token"),
	    "provider_cluster_id", js(c, "provider_cluster_id"));
	if (harness_call_json("POST", admin, body, "/v1/clouds/%s/clusters", cloud) != 201)
		fail_msg("cluster %s: %ld %s", name, harness_r.status, harness_r.body);
	json_decref(body);
	if (cloud_id != NULL)
		snprintf(cloud_id, 40, "%s", cloud);
	if (cluster_id != NULL)
		snprintf(cluster_id, 40, "%s", js(harness_r.json, "id"));
}

void
harness_wait_capacity(const char *const *names, double timeout_s)
{
	double end = harness_now_s() + timeout_s;
	int want = 0;

	while (names[want] != NULL)
		want++;
	while (harness_now_s() < end) {
		int seen = 0;

		if (harness_call("GET", harness_metrics_token(), NULL, "/metrics") == 200)
			for (int k = 0; k < want; k++) {
				char needle[160];

				snprintf(needle, sizeof(needle), "cluster=\"%s\"}", names[k]);
				seen += strstr(harness_r.body, needle) != NULL;
			}
		if (seen == want)
			return;
		usleep(200 * 1000);
	}
	fail_msg("no capacity snapshot of every cluster within %.0f s", timeout_s);
}

/* An active cloud (or pending_iam) with one cluster: an accelerator pool of gpu_nodes
 * nodes x per accelerators (racks of 4) and a cpu pool of cpu_nodes nodes for heads. */
void
harness_seed_cluster(const char *env, const char *provider, const char *region, const char *state,
		     const char *name, const char *flavor, int gpu_nodes, int per, int cpu_nodes,
		     bool cordoned)
{
	harness_sql("WITH c AS (INSERT INTO clouds (id, name, environment, provider, region, account,"
	    " external_id, state, required) VALUES (gen_random_uuid(), '%s-cloud', '%s', '%s', '%s',"
	    " '{}', 'ext', '%s', '{}') RETURNING id),"
	    " k AS (INSERT INTO clusters (id, cloud_id, name, api_server, ca_cert,"
	    " credentials_sealed, provider_cluster_id, cordoned) SELECT gen_random_uuid(), c.id,"
	    " '%s', 'https://127.0.0.1:1', 'ca', 'sealed', 'pc-' || gen_random_uuid(), %s FROM c"
	    " RETURNING id)"
	    " INSERT INTO capacity (cluster_id, pool, flavor, machine_type, accel_per_node, nodes,"
	    " max_nodes, free_accel, free_cpu_m, free_mem, topology)"
	    " SELECT k.id, 'gpu', '%s', 'a3-highgpu-8g', %d, %d, %d, %d, 0, 0,"
	    "  (SELECT jsonb_build_object('nodes', jsonb_agg(jsonb_build_object('name',"
	    "  '%s-g' || i, 'rack', 'r' || (i / 4), 'free_accel', %d, 'free_cpu_m', 200000,"
	    "  'free_mem', 2199023255552, 'ready', true))) FROM generate_series(0, %d - 1) i)"
	    " FROM k WHERE %d > 0"
	    " UNION ALL SELECT k.id, 'cpu', 'cpu', 'n2-standard-64', 0, %d, %d, 0, %d * 64000,"
	    "  %d * 274877906944,"
	    "  (SELECT jsonb_build_object('nodes', jsonb_agg(jsonb_build_object('name',"
	    "  '%s-c' || i, 'free_cpu_m', 64000, 'free_mem', 274877906944, 'ready', true)))"
	    "  FROM generate_series(0, %d - 1) i) FROM k",
	    name, env, provider, region, state, name, cordoned ? "true" : "false",
	    flavor, per, gpu_nodes, gpu_nodes, gpu_nodes * per, name, per, gpu_nodes, gpu_nodes,
	    cpu_nodes, cpu_nodes, cpu_nodes, cpu_nodes, name, cpu_nodes);
}

/* RFC 7386 merge patch of b onto a (a is modified). */
void
harness_merge_patch(json_t *a, json_t *b)
{
	const char *k;
	json_t *v;

	json_object_foreach(b, k, v) {
		json_t *cur = json_object_get(a, k);

		if (json_is_null(v))
			json_object_del(a, k);
		else if (json_is_object(v) && json_is_object(cur))
			harness_merge_patch(cur, v);
		else
			json_object_set(a, k, v);
	}
}

/* A RayJob body: one worker group of one replica (count accelerators of flavor, or none),
 * patched by patch (merge patch text, may be NULL).  Returns malloc'd JSON text. */
char *
harness_job_body(const char *env, const char *queue, const char *flavor, int count, const char *patch)
{
	json_t *j = json_pack("{s:s, s:s, s:s, s:s, s:s, s:s, s:{s:s, s:s},"
	    " s:[{s:s, s:i, s:s, s:s}]}", "environment", env, "kind", "RayJob", "queue", queue,
	    "name", "train", "ray_version", "2.52.0", "entrypoint", "python train.py",
	    "head", "cpu", "1", "memory", "1Gi",
	    "worker_groups", "name", "w", "replicas", 1, "cpu", "1", "memory", "1Gi");
	char *out;

	if (flavor != NULL)
		json_object_set_new(json_array_get(json_object_get(j, "worker_groups"), 0),
		    "accelerator", json_pack("{s:s, s:i}", "flavor", flavor, "count", count));
	if (patch != NULL) {
		json_t *p = json_loads(patch, 0, NULL);

		assert_non_null(p);
		harness_merge_patch(j, p);
		json_decref(p);
	}
	out = json_dumps(j, JSON_COMPACT);
	json_decref(j);
	return out;
}

void
harness_fleet_start(struct harness_fleet *f, const char *tag, const char *scenario,
		    const char *scale, const char *const *env)
{
	json_t *fleet = harness_fleet_json(), *sc = harness_json_file(scenario), *api, *fenv, *c, *x;
	const char *names[HARNESS_FLEET_MAX + 1] = { NULL };
	size_t i;

	memset(f, 0, sizeof(*f));
	api = json_incref(json_object_get(sc, "api"));
	fenv = json_incref(json_object_get(sc, "fleetd_env"));
	json_object_del(sc, "api");
	json_object_del(sc, "fleetd_env");
	harness_merge_patch(fleet, sc);
	harness_cs_start_json(&f->cs, fleet, scale);
	json_decref(fleet);
	json_decref(sc);
	json_array_foreach(fenv, i, x)
		harness_cs_env_add(&f->cs, "%s", json_string_value(x));
	json_decref(fenv);
	for (int k = 0; env != NULL && env[k] != NULL; k++)
		harness_cs_env_add(&f->cs, "%s", env[k]);
	harness_db_create(tag, f->dburl, sizeof(f->dburl));
	harness_fleetd_start(&f->fd, f->dburl, (const char *const *)f->cs.env);
	f->admin = harness_token(f->dburl, "admin", "*");
	json_array_foreach(f->cs.clusters, i, c) {
		const char *e = js(c, "environment");

		if (i == HARNESS_FLEET_MAX)
			fail_msg("%s: more than %d clusters", scenario, HARNESS_FLEET_MAX);
		if (harness_sql_long("SELECT count(*) FROM environments WHERE name = '%s'", e) == 0) {
			char body[128];

			snprintf(body, sizeof(body), "{\"name\":\"%s\"}", e);
			harness_post_created(f->admin, "/v1/environments", body);
		}
		snprintf(f->name[i], sizeof(f->name[i]), "%s", js(c, "name"));
		harness_register(&f->cs, f->admin, f->name[i], f->cloud_id[i], f->cluster_id[i]);
		names[i] = f->name[i];
		f->n++;
	}
	json_array_foreach(api, i, x) {
		char *body = json_dumps(json_object_get(x, "body"), JSON_COMPACT);

		harness_post_created(f->admin, js(x, "path"), body);
		free(body);
	}
	json_decref(api);
	harness_wait_capacity(names, 60);
}

int
harness_fleet_index(const struct harness_fleet *f, const char *name)
{
	for (int i = 0; i < f->n; i++)
		if (strcmp(f->name[i], name) == 0)
			return i;
	fail_msg("no cluster %s in the fleet", name);
	return -1;
}

const char *
harness_fleet_token(struct harness_fleet *f, const char *role, const char *envs)
{
	if (f->ntokens == HARNESS_FLEET_MAX)
		fail_msg("more than %d tokens", HARNESS_FLEET_MAX);
	f->tokens[f->ntokens] = harness_token(f->dburl, role, envs);
	return f->tokens[f->ntokens++];
}

int
harness_fleet_stop(struct harness_fleet *f)
{
	int st;

	if (f == NULL)	/* the group setup failed before it made one */
		return 0;
	st = harness_teardown(&f->fd, f->dburl, &f->cs);

	free(f->admin);
	f->admin = NULL;
	for (int i = 0; i < f->ntokens; i++)
		free(f->tokens[i]);
	f->ntokens = 0;
	return st;
}

int
harness_fleet_teardown(void **state)
{
	return harness_fleet_stop(*state) == 0 ? 0 : -1;
}

void
harness_fleet_ctl_start(struct harness_fleet *f, const char *tag, const char *scenario,
			const char *scale, const char *const *env)
{
	harness_ctl_home_make();
	harness_fleet_start(f, tag, scenario, scale, env);
}

int
harness_fleet_ctl_teardown(void **state)
{
	harness_ctl_home_drop();
	return harness_fleet_teardown(state);
}

void
harness_fleet_roles(struct harness_fleet *f, const char *env, const char **oper,
		    const char **viewer, const char **admin, const char **other_admin)
{
	if (oper != NULL)
		*oper = harness_fleet_token(f, "operator", env);
	if (viewer != NULL)
		*viewer = harness_fleet_token(f, "viewer", env);
	if (admin != NULL)
		*admin = harness_fleet_token(f, "admin", env);
	if (other_admin != NULL)
		*other_admin = harness_fleet_token(f, "admin", "other");
}
