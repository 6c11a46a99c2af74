/* test_terraform_contract: replays, for every resource terraform/modules/ manages, the HTTP
 * sequence of the Mastercard/restapi provider against fleetd (clouds and clusters on cloudsim). */
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

#include "tests/integration/harness.h"

/*
 * What the provider sends (restapi/api_object.go, write_returns_object = true):
 *   create   create_method (POST) create_path, body = data; the answer is the object and
 *            its id_attribute names it;
 *   read     read_method (GET) read_path with {id} replaced; the body is the JSON of the
 *            (empty) read_data, "{}", with Content-Type application/json; 404 = gone;
 *   update   update_method (PUT) update_path, body = the whole data;
 *   destroy  destroy_method (DELETE) destroy_path, no body; a 404 counts as destroyed;
 *   import   "terraform import x /v1/<collection>/<id>": GET of that path.
 * Defaults: read/update/destroy paths are path + "/{id}".
 */

static struct fleetd_proc fd;
static char dburl[512], csdir[256], csurl[128];
static pid_t cs_pid;
static char *fd_env[64];
static json_t *csclusters;
static char *admin, *ca_pem, *fleetd_gsa;
static struct http_result R;		/* the last answer */

/* One restapi_object: its paths, its data and what the contract expects of it. */
struct tf_res {
	const char		*what;
	char			 path[256];	/* "path" (also create_path) */
	char			 item[384];	/* read/update/destroy path with {id} replaced */
	const char		*id_attr;	/* id_attribute */
	json_t			*data;		/* create body */
	json_t			*update;	/* the whole data, a mutable field changed */
	const char		*imm_field;	/* a force_new field ... */
	json_t			*imm_value;	/* ... changed to this by PUT: 409 */
	const char		*imm_code;
	const char *const	*ignore;	/* ignore_changes_to: write-only fields */
	const char *const	*vol;		/* server fields that change on their own */
	char			 id[80];
	json_t			*last;		/* the last whole object the server answered */
};

/* ---- helpers */

static const char *
jstr(json_t *o, const char *key)
{
	return json_string_value(json_object_get(o, key));
}

static long
call(const char *method, const char *path, const char *body)
{
	char url[1024];

	harness_http_free(&R);
	snprintf(url, sizeof(url), "%s%s", fd.url, path);
	harness_http(&R, method, url, admin, body, NULL);
	return R.status;
}

/* A read as the provider sends it: GET with the empty read_data as its body. */
static long
tf_get(const char *path)
{
	return call("GET", path, "{}");
}

static long
call_json(const char *method, const char *path, json_t *body)
{
	char *s = json_dumps(body, JSON_COMPACT);
	long st = call(method, path, s);

	free(s);
	return st;
}

static void
expect_status(const char *what, long status)
{
	if (R.status != status)
		fail_msg("%s: want %ld, got %ld: %s", what, status, R.status, R.body);
	if (status != 204 && !json_is_object(R.json))
		fail_msg("%s: the answer is not a JSON object: %s", what, R.body);
}

static void
expect_problem(const char *what, long status, const char *code, const char *pointer)
{
	const char *ptr;

	expect_status(what, status);
	if (jstr(R.json, "code") == NULL || strcmp(jstr(R.json, "code"), code) != 0)
		fail_msg("%s: want code %s: %s", what, code, R.body);
	ptr = json_string_value(json_object_get(json_array_get(json_object_get(R.json,
	    "errors"), 0), "pointer"));
	if (pointer != NULL && (ptr == NULL || strcmp(ptr, pointer) != 0))
		fail_msg("%s: want pointer %s: %s", what, pointer, R.body);
}

static bool
listed(const char *const *list, const char *key)
{
	for (int i = 0; list != NULL && list[i] != NULL; i++)
		if (strcmp(list[i], key) == 0)
			return true;
	return false;
}

/* Equality as Terraform sees it after jsondecode: numbers compare by value (1 == 1.0). */
static bool
jeq(json_t *a, json_t *b)
{
	const char *k;
	json_t *v;
	size_t i;

	if (json_is_number(a) && json_is_number(b))
		return json_number_value(a) == json_number_value(b);
	if (json_is_object(a) && json_is_object(b)) {
		if (json_object_size(a) != json_object_size(b))
			return false;
		json_object_foreach(a, k, v)
			if (!jeq(v, json_object_get(b, k)))
				return false;
		return true;
	}
	if (json_is_array(a) && json_is_array(b)) {
		if (json_array_size(a) != json_array_size(b))
			return false;
		json_array_foreach(a, i, v)
			if (!jeq(v, json_array_get(b, i)))
				return false;
		return true;
	}
	return json_equal(a, b);
}

/* Drift: every field the user set comes back exactly as sent. */
static void
expect_fields(const char *what, json_t *sent, json_t *got, const char *const *ignore)
{
	const char *k;
	json_t *v;

	json_object_foreach(sent, k, v) {
		char *w, *g;

		if (listed(ignore, k) || jeq(v, json_object_get(got, k)))
			continue;
		w = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
		g = json_object_get(got, k) ? json_dumps(json_object_get(got, k),
		    JSON_COMPACT | JSON_ENCODE_ANY) : strdup("(absent)");
		fail_msg("%s: field %s drifted: sent %s, read %s", what, k, w, g);
	}
	if (ignore != NULL)
		for (int i = 0; ignore[i] != NULL; i++)
			if (json_object_get(got, ignore[i]) != NULL)
				fail_msg("%s: write-only field %s is read back", what, ignore[i]);
}

/* The whole object is the same in both answers, but for fields that change on their own. */
static void
expect_same(const char *what, json_t *a, json_t *b, const char *const *vol)
{
	const char *k;
	json_t *v;

	json_object_foreach(a, k, v) {
		char *x, *y;

		if (listed(vol, k) || jeq(v, json_object_get(b, k)))
			continue;
		x = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
		y = json_object_get(b, k) ? json_dumps(json_object_get(b, k),
		    JSON_COMPACT | JSON_ENCODE_ANY) : strdup("(absent)");
		fail_msg("%s: %s changed between two answers: %.600s, then %.600s", what, k, x, y);
	}
	json_object_foreach(b, k, v)
		if (!listed(vol, k) && json_object_get(a, k) == NULL)
			fail_msg("%s: %s appeared: %s", what, k, R.body);
}

static long
version_of(json_t *o)
{
	return (long)json_integer_value(json_object_get(o, "version"));
}

static void
keep(struct tf_res *r)
{
	json_decref(r->last);
	r->last = json_deep_copy(R.json);
}

/* ---- the replay, one step per function */

static void
tf_create(struct tf_res *r)
{
	static const char *const computed[] = { "id", "version", "created_at", NULL };
	char *loc;
	const char *id;

	call_json("POST", r->path, r->data);
	expect_status(r->what, 201);
	if ((id = jstr(R.json, r->id_attr)) == NULL)
		fail_msg("%s: the create answer has no %s: %s", r->what, r->id_attr, R.body);
	snprintf(r->id, sizeof(r->id), "%s", id);
	if (r->item[0] == '\0')
		snprintf(r->item, sizeof(r->item), "%s/%s", r->path, r->id);
	expect_fields(r->what, r->data, R.json, r->ignore);
	for (int i = 0; computed[i] != NULL; i++)
		if (json_object_get(R.json, computed[i]) == NULL)
			fail_msg("%s: the create answer lacks %s: %s", r->what, computed[i], R.body);
	loc = harness_header(&R, "Location");
	if (loc == NULL || strlen(loc) < strlen(r->id) ||
	    strcmp(loc + strlen(loc) - strlen(r->id), r->id) != 0)
		fail_msg("%s: Location %s does not name %s", r->what, loc ? loc : "(none)", r->id);
	free(loc);
	keep(r);
}

/* GET right after a write: the same object, every field the user set as sent. */
static void
tf_read(struct tf_res *r, json_t *sent, const char *const *skip)
{
	tf_get(r->item);
	expect_status(r->what, 200);
	expect_fields(r->what, sent, R.json, r->ignore);
	expect_same(r->what, r->last, R.json, skip != NULL ? skip : r->vol);
	keep(r);
}

static void
tf_update(struct tf_res *r)
{
	long v = version_of(r->last);
	json_t *before = json_deep_copy(r->last);

	call_json("PUT", r->item, r->update);
	expect_status(r->what, 200);
	if (version_of(R.json) != v + 1)
		fail_msg("%s: a change makes version %ld, not %ld", r->what, version_of(R.json), v + 1);
	expect_fields(r->what, r->update, R.json, r->ignore);
	assert_string_equal(jstr(R.json, "id"), jstr(before, "id"));
	assert_string_equal(jstr(R.json, "created_at"), jstr(before, "created_at"));
	json_decref(before);
	keep(r);
	/* read for drift: nothing differs from what was sent */
	tf_read(r, r->update, NULL);
	/* the same PUT again changes nothing, not even updated_at */
	call_json("PUT", r->item, r->update);
	expect_status(r->what, 200);
	if (version_of(R.json) != v + 1)
		fail_msg("%s: an identical PUT moved version to %ld", r->what, version_of(R.json));
	expect_same(r->what, r->last, R.json, r->vol);
}

/* A force_new field changed in place: 409 naming it, and nothing written. */
static void
tf_immutable(struct tf_res *r, const char *field, json_t *value, const char *code)
{
	json_t *body = json_deep_copy(r->update ? r->update : r->data);
	char ptr[64];

	json_object_set(body, field, value);
	snprintf(ptr, sizeof(ptr), "/%s", field);
	call_json("PUT", r->item, body);
	json_decref(body);
	expect_problem(r->what, 409, code, ptr);
	if (strstr(jstr(R.json, "detail") ? jstr(R.json, "detail") : "", field) == NULL &&
	    strstr(jstr(R.json, "title") ? jstr(R.json, "title") : "", field) == NULL)
		fail_msg("%s: the 409 does not name %s: %s", r->what, field, R.body);
	tf_get(r->item);
	expect_status(r->what, 200);
	expect_same(r->what, r->last, R.json, r->vol);
}

/* terraform import x <collection>/<id>: path and id split at the last '/', then a read. */
static void
tf_import(struct tf_res *r)
{
	char imp[384], path[512];
	const char *slash;

	snprintf(imp, sizeof(imp), "%s", r->item);
	slash = strrchr(imp, '/');
	assert_non_null(slash);
	assert_string_equal(slash + 1, r->id);
	snprintf(path, sizeof(path), "%.*s/%s", (int)(slash - imp), imp, slash + 1);
	tf_get(path);
	expect_status(r->what, 200);
	expect_fields(r->what, r->update ? r->update : r->data, R.json, r->ignore);
	expect_same(r->what, r->last, R.json, r->vol);
}

static void
tf_destroy(struct tf_res *r, const char *code)
{
	call("DELETE", r->item, NULL);
	expect_status(r->what, 204);
	assert_int_equal(R.len, 0);
	call("DELETE", r->item, NULL);
	expect_problem(r->what, 404, code, NULL);
	tf_get(r->item);
	expect_problem(r->what, 404, code, NULL);
}

static void
tf_res_cleanup(struct tf_res *r)
{
	json_decref(r->data);
	json_decref(r->update);
	json_decref(r->imm_value);
	json_decref(r->last);
}

/* The full sequence of an updatable resource. */
static void
tf_replay(struct tf_res *r)
{
	long v0;

	tf_create(r);
	v0 = version_of(r->last);
	tf_read(r, r->data, NULL);
	tf_update(r);
	tf_immutable(r, r->imm_field, r->imm_value, r->imm_code);
	tf_import(r);
	print_message("%-16s create 201 -> read -> update v%ld->v%ld -> drift none -> same PUT "
	    "v%ld -> 409 /%s -> import", r->what, v0, v0 + 1, version_of(r->last), r->imm_field);
}

/* ---- cloudsim */

static void
start_cloudsim(void)
{
	char path[400], *text, *line, *save = NULL;
	json_t *cj, *key;
	int n = 0;

	snprintf(csdir, sizeof(csdir), "/tmp/fleetd-tfc-cs-%d", (int)getpid());
	harness_sh("rm -rf %s && mkdir -p %s", csdir, csdir);
	cs_pid = fork();
	assert_true(cs_pid >= 0);
	if (cs_pid == 0) {
		snprintf(path, sizeof(path), "%s/cloudsim.log", csdir);
		if (freopen(path, "w", stdout) == NULL || freopen(path, "a", stderr) == NULL)
			_exit(126);
		execl(FLEETD_BINARY_DIR "/cloudsim", "cloudsim", "--fleet",
		    "cloudsim/fleets/test.json", "--listen", "127.0.0.1:0", "--state-dir", csdir,
		    (char *)NULL);
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
		if (strncmp(line, "FLEETD_", 7) != 0 || strchr(line, '=') == NULL || n >= 60)
			continue;
		if (strncmp(line, "FLEETD_CLOUDSIM_URL=", 20) == 0)
			snprintf(csurl, sizeof(csurl), "%s", line + 20);
		fd_env[n++] = strdup(line);
	}
	free(text);
	assert_true(csurl[0] != '\0');
	fd_env[n++] = strdup("FLEETD_MASTER_KEY=dGVycmFmb3JtLWNvbnRyYWN0LXRlc3Qta2V5LTMyYnk=");
	fd_env[n] = NULL;
	snprintf(path, sizeof(path), "%s/clusters.json", csdir);
	text = harness_slurp(path);
	cj = json_loads(text ? text : "", 0, NULL);
	free(text);
	csclusters = json_incref(json_object_get(cj, "clusters"));
	json_decref(cj);
	assert_non_null(csclusters);
	snprintf(path, sizeof(path), "%s/ca.pem", csdir);
	ca_pem = harness_slurp(path);
	assert_non_null(ca_pem);
	snprintf(path, sizeof(path), "%s/gcp-fleetd-key.json", csdir);
	key = json_load_file(path, 0, NULL);
	assert_non_null(jstr(key, "client_email"));
	fleetd_gsa = strdup(jstr(key, "client_email"));
	json_decref(key);
}

static json_t *
cs_cluster(const char *name)
{
	json_t *c;
	size_t i;

	json_array_foreach(csclusters, i, c)
		if (strcmp(jstr(c, "name"), name) == 0)
			return c;
	fail_msg("cloudsim has no cluster %s", name);
	return NULL;
}

static void
sim_iam(json_t *body)
{
	char url[256], *s = json_dumps(body, JSON_COMPACT);
	struct http_result r;

	snprintf(url, sizeof(url), "%s/_sim/iam", csurl);
	harness_http(&r, "POST", url, NULL, s, NULL);
	if (r.status != 200)
		fail_msg("_sim/iam %s: %ld %s", s, r.status, r.body);
	harness_http_free(&r);
	free(s);
	json_decref(body);
}

/* ---- setup */

static int
setup(void **state)
{
	(void)state;
	harness_db_create("tfcontract", dburl, sizeof(dburl));
	start_cloudsim();
	harness_fleetd_start(&fd, dburl, (const char *const *)fd_env);
	admin = harness_token(dburl, "admin", "*");
	for (int i = 0; i < 2; i++) {
		char body[64];

		snprintf(body, sizeof(body), "{\"name\":\"%s\"}", i == 0 ? "tfprod" : "tfdev");
		if (call("POST", "/v1/environments", body) != 201)
			fail_msg("environment: %ld %s", R.status, R.body);
	}
	if (call("POST", "/v1/priority-classes", "{\"name\":\"tf-default\",\"value\":100}") != 201)
		fail_msg("priority class: %ld %s", R.status, R.body);
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
	json_decref(csclusters);
	free(admin);
	free(ca_pem);
	free(fleetd_gsa);
	harness_validate_responses();
	return 0;
}

/* ---- environments, tokens, priority classes, queues */

static void
test_environment(void **state)
{
	struct tf_res r = { .what = "environment", .path = "/v1/environments",
	    .id_attr = "name", .imm_field = "name", .imm_code = "env.immutable" };

	(void)state;
	r.data = json_pack("{s:s, s:s}", "name", "tf-env", "description", "managed by terraform");
	r.update = json_pack("{s:s, s:s}", "name", "tf-env", "description", "renamed team");
	r.imm_value = json_string("tf-env-2");
	tf_replay(&r);
	/* the id is the name: the read path is /v1/environments/{name} */
	assert_string_equal(r.item, "/v1/environments/tf-env");
	tf_destroy(&r, "env.not_found");
	print_message(" -> destroy 204, again 404, read 404\n");
	tf_res_cleanup(&r);
}

static void
test_token(void **state)
{
	static const char *const secret[] = { "secret", NULL };
	struct tf_res r = { .what = "token", .path = "/v1/tokens", .id_attr = "id" };
	char *allow;

	(void)state;
	r.data = json_pack("{s:s, s:s, s:[s]}", "name", "tf-ci", "role", "operator",
	    "environments", "tfprod");
	tf_create(&r);
	if (jstr(R.json, "secret") == NULL || strncmp(jstr(R.json, "secret"), "fleet_", 6) != 0)
		fail_msg("token: the create answer carries no secret: %s", R.body);
	tf_read(&r, r.data, secret);
	if (json_object_get(R.json, "secret") != NULL)
		fail_msg("token: the secret is read back: %s", R.body);
	/* no update: every field is force_new, and a PUT is refused with the methods there are */
	call_json("PUT", r.item, r.data);
	expect_problem("token", 405, "api.method_not_allowed", NULL);
	allow = harness_header(&R, "Allow");
	if (allow == NULL || strstr(allow, "GET") == NULL || strstr(allow, "DELETE") == NULL ||
	    strstr(allow, "PUT") != NULL)
		fail_msg("token: Allow is %s", allow ? allow : "(none)");
	free(allow);
	r.update = json_deep_copy(r.data);
	tf_import(&r);
	tf_destroy(&r, "token.not_found");
	print_message("%-16s create 201 (secret once) -> read -> PUT 405 Allow: GET, DELETE -> "
	    "import -> destroy 204, again 404, read 404\n", r.what);
	tf_res_cleanup(&r);
}

static void
test_priority_class(void **state)
{
	struct tf_res r = { .what = "priority class", .path = "/v1/priority-classes",
	    .id_attr = "id", .imm_field = "name", .imm_code = "pc.immutable" };

	(void)state;
	/* fleet-queue sends exactly name, value, preempt */
	r.data = json_pack("{s:s, s:i, s:b}", "name", "tf-high", "value", 1000, "preempt", 1);
	r.update = json_pack("{s:s, s:i, s:b}", "name", "tf-high", "value", 2000, "preempt", 1);
	r.imm_value = json_string("tf-higher");
	tf_replay(&r);
	tf_destroy(&r, "pc.not_found");
	print_message(" -> destroy 204, again 404, read 404\n");
	tf_res_cleanup(&r);
}

static void
test_queue(void **state)
{
	struct tf_res r = { .what = "queue", .path = "/v1/queues", .id_attr = "id",
	    .imm_field = "environment", .imm_code = "queue.immutable" };
	json_t *name = json_string("tf-research-2");

	(void)state;
	/* fleet-queue: optional fields left null are not sent; weight defaults to 1 */
	r.data = json_pack("{s:s, s:s, s:s, s:i, s:{s:i}, s:{}, s:{}, s:s, s:s}",
	    "name", "tf-research", "environment", "tfprod", "cohort", "ml", "weight", 1,
	    "nominal_quota", "nvidia-h100-80gb", 8, "borrowing_limit", "lending_limit",
	    "default_priority_class", "tf-default", "queueing_strategy", "best_effort_fifo");
	r.update = json_deep_copy(r.data);
	json_object_set_new(r.update, "weight", json_real(2.5));
	json_object_set_new(r.update, "nominal_quota", json_pack("{s:i, s:i}",
	    "nvidia-h100-80gb", 16, "nvidia-l4", 4));
	r.imm_value = json_string("tfdev");
	tf_replay(&r);
	tf_immutable(&r, "name", name, "queue.immutable");
	tf_destroy(&r, "queue.not_found");
	print_message(" -> 409 /name -> destroy 204, again 404, read 404\n");
	json_decref(name);
	tf_res_cleanup(&r);
}

/* ---- clouds, their phase-2 object and member clusters */

struct prov {
	const char	*provider, *cluster, *other_region;
};

static json_t *
account_of(json_t *c, const char *provider)
{
	if (strcmp(provider, "gke") == 0)
		return json_pack("{s:s}", "project", jstr(c, "project"));
	if (strcmp(provider, "aks") == 0)
		return json_pack("{s:s, s:s, s:s}", "subscription_id", jstr(c, "subscription"),
		    "tenant_id", jstr(json_object_get(json_object_get(c, "iam"), "control_plane"),
		    "tenant_id"), "resource_group", jstr(c, "resource_group"));
	return json_pack("{s:s}", "account_id", jstr(c, "account"));
}

/* The identities of cloudsim's cluster c, as the module's provider resources name them. */
static void
identities(json_t *c, const char *provider, const char **cp, const char **cl)
{
	const char *key = strcmp(provider, "gke") == 0 ? "service_account" :
	    strcmp(provider, "aks") == 0 ? "resource_id" : "role_arn";
	json_t *iam = json_object_get(c, "iam");

	*cp = jstr(json_object_get(iam, "control_plane"), key);
	*cl = jstr(json_object_get(iam, "cluster_role"), key);
	assert_non_null(*cp);
	assert_non_null(*cl);
}

/* What the module's google_/azurerm_/aws_ resources do with iam.required, through cloudsim. */
static void
make_identities(json_t *cloud, const char *provider, const char *cp, const char *cl)
{
	const char *id = jstr(cloud, "id"), *env = jstr(cloud, "environment");
	json_t *required = json_object_get(json_object_get(cloud, "iam"), "required");
	char desc[128];

	snprintf(desc, sizeof(desc), "managed by terraform; fleet.io/cloud-id=%s", id);
	if (strcmp(provider, "gke") == 0) {
		sim_iam(json_pack("{s:s, s:s, s:s, s:[s]}", "provider", "gcp", "service_account", cp,
		    "description", desc, "token_creators", fleetd_gsa));
		sim_iam(json_pack("{s:s, s:s, s:s}", "provider", "gcp", "service_account", cl,
		    "description", desc));
	} else if (strcmp(provider, "aks") == 0) {
		json_t *fic = json_object_get(json_object_get(required, "control_plane_identity"),
		    "federated_identity_credentials");

		assert_true(json_array_size(fic) > 0);
		sim_iam(json_pack("{s:s, s:s, s:{s:s, s:s}, s:O}", "provider", "azure",
		    "resource_id", cp, "tags", "fleet.io/cloud-id", id, "fleet.io/environment", env,
		    "federated_identity_credentials", fic));
		sim_iam(json_pack("{s:s, s:s, s:{s:s, s:s}}", "provider", "azure", "resource_id", cl,
		    "tags", "fleet.io/cloud-id", id, "fleet.io/environment", env));
	} else {
		sim_iam(json_pack("{s:s, s:s, s:s, s:{s:s, s:s}}", "provider", "aws", "role_arn", cp,
		    "external_id", jstr(cloud, "external_id"), "tags", "fleet.io/cloud-id", id,
		    "fleet.io/environment", env));
		sim_iam(json_pack("{s:s, s:s, s:{s:s, s:s}}", "provider", "aws", "role_arn", cl,
		    "tags", "fleet.io/cloud-id", id, "fleet.io/environment", env));
	}
}

/* restapi_object "iam": create POST .../iam, read GET /v1/clouds/{id}, update POST
 * .../iam/rotate, destroy GET /v1/clouds/{id}; ignore_all_server_changes. */
static void
iam_replay(struct tf_res *cloud, const char *cp, const char *cl)
{
	char path[256], rotate[256];
	json_t *data = json_pack("{s:s, s:s}", "control_plane_role", cp, "cluster_role", cl);
	json_t *iam;
	long v = version_of(cloud->last);

	snprintf(path, sizeof(path), "/v1/clouds/%s/iam", cloud->id);
	snprintf(rotate, sizeof(rotate), "/v1/clouds/%s/iam/rotate", cloud->id);
	call_json("POST", path, data);
	expect_status("cloud iam", 200);
	/* id_attribute "id": the answer is the cloud, so the object's id is the cloud's */
	assert_string_equal(jstr(R.json, "id"), cloud->id);
	assert_string_equal(jstr(R.json, "state"), "active");
	iam = json_object_get(R.json, "iam");
	assert_string_equal(jstr(iam, "control_plane_role"), cp);
	assert_string_equal(jstr(iam, "cluster_role"), cl);
	assert_true(json_is_true(json_object_get(iam, "locked")));
	assert_int_equal(version_of(R.json), v + 1);
	keep(cloud);
	tf_get(cloud->item);	/* read_path */
	expect_status("cloud iam", 200);
	expect_same("cloud iam", cloud->last, R.json, NULL);
	/* update with unchanged data (rotation to the same pair): nothing changes */
	call_json("POST", rotate, data);
	expect_status("cloud iam rotate", 200);
	expect_same("cloud iam rotate", cloud->last, R.json, NULL);
	tf_get(cloud->item);	/* destroy_method GET: the pair ends with the cloud */
	expect_status("cloud iam", 200);
	expect_same("cloud iam", cloud->last, R.json, NULL);
	/* created again (lost state): refused, the pair is locked — import it instead */
	call_json("POST", path, data);
	expect_problem("cloud iam", 409, "iam.locked", NULL);
	json_decref(data);
}

static void
cluster_replay(const struct tf_res *cloud, json_t *c)
{
	static const char *const ignore[] = { "credentials", NULL };
	static const char *const vol[] = { "state", "last_refresh_at", "last_error", NULL };
	struct tf_res r = { .what = "cluster", .id_attr = "id", .imm_field = "name",
	    .imm_code = "cluster.immutable", .ignore = ignore, .vol = vol };
	const char *own = jstr(c, "provider_cluster_id");
	json_t *pcid;
	char other[512];

	/* a well-formed id of another cluster: the last segment changed */
	snprintf(other, sizeof(other), "%.*sb0c0ffee0000", (int)(strrchr(own, '/') + 1 - own), own);
	pcid = json_string(other);

	snprintf(r.path, sizeof(r.path), "/v1/clouds/%s/clusters", cloud->id);
	/* fleet-cluster sends exactly these */
	r.data = json_pack("{s:s, s:s, s:s, s:{s:s}, s:s, s:{s:s}}", "name", jstr(c, "name"),
	    "api_server", jstr(c, "api_server"), "ca_cert", ca_pem, "credentials", "token",
	    jstr(c, "token"), "provider_cluster_id", jstr(c, "provider_cluster_id"), "labels",
	    "team", "ml");
	r.update = json_deep_copy(r.data);
	json_object_set_new(r.update, "labels", json_pack("{s:s, s:s}", "team", "infra",
	    "tier", "gpu"));
	r.imm_value = json_string("tf-renamed");
	tf_replay(&r);
	/* the read path is path/{id} under the cloud */
	assert_true(strncmp(r.item, r.path, strlen(r.path)) == 0);
	tf_immutable(&r, "provider_cluster_id", pcid, "cluster.immutable");
	tf_destroy(&r, "cluster.not_found");
	print_message(" -> 409 /provider_cluster_id -> destroy 204, again 404, read 404\n");
	json_decref(pcid);
	tf_res_cleanup(&r);
}

static void
cloud_replay(const struct prov *p)
{
	json_t *c = cs_cluster(p->cluster), *v;
	struct tf_res r = { .what = "cloud", .path = "/v1/clouds", .id_attr = "id",
	    .imm_field = "region", .imm_code = "cloud.immutable" };
	const char *cp, *cl;
	char name[64];

	r.what = p->provider;
	snprintf(name, sizeof(name), "tf-%s", p->provider);
	r.data = json_pack("{s:s, s:s, s:s, s:s, s:o}", "name", name, "environment", "tfprod",
	    "provider", p->provider, "region", jstr(c, "region"), "account",
	    account_of(c, p->provider));
	r.update = json_deep_copy(r.data);
	strcat(name, "-renamed");
	json_object_set_new(r.update, "name", json_string(name));
	r.imm_value = json_string(p->other_region);
	/* phase 1 */
	tf_create(&r);
	assert_string_equal(jstr(R.json, "state"), "pending_iam");
	if (!json_is_object(json_object_get(json_object_get(R.json, "iam"), "required")) ||
	    jstr(R.json, "external_id") == NULL)
		fail_msg("%s: phase 1 lacks iam.required or external_id: %s", r.what, R.body);
	tf_read(&r, r.data, NULL);
	/* the provider's own resources, then phase 2 */
	identities(c, p->provider, &cp, &cl);
	make_identities(r.last, p->provider, cp, cl);
	iam_replay(&r, cp, cl);
	print_message("%-16s phase 1 201 pending_iam -> read -> iam POST 200 active -> read -> "
	    "same rotate v%ld -> destroy GET -> POST again 409\n", "cloud iam",
	    version_of(r.last));
	/* the cloud itself */
	tf_update(&r);
	tf_immutable(&r, "region", r.imm_value, "cloud.immutable");
	v = json_string("tfdev");
	tf_immutable(&r, "environment", v, "cloud.immutable");
	json_decref(v);
	v = json_string(strcmp(p->provider, "gke") == 0 ? "hyperpod" : "gke");
	tf_immutable(&r, "provider", v, "cloud.immutable");
	json_decref(v);
	v = json_pack("{s:s}", "project", "another-project");
	if (strcmp(p->provider, "gke") != 0)
		json_object_set_new(v, "account_id", json_string("333333333333"));
	tf_immutable(&r, "account", v, "cloud.immutable");
	json_decref(v);
	tf_import(&r);
	assert_string_equal(jstr(R.json, "state"), "active");
	print_message("%-16s update -> drift none -> same PUT v%ld -> 409 /region /environment "
	    "/provider /account -> import\n", r.what, version_of(r.last));
	cluster_replay(&r, c);
	tf_destroy(&r, "cloud.not_found");
	print_message("%-16s destroy 204, again 404, read 404\n", r.what);
	tf_res_cleanup(&r);
}

static void
test_cloud_gke(void **state)
{
	static const struct prov p = { "gke", "test-gke-usc1", "europe-west4" };

	(void)state;
	cloud_replay(&p);
}

static void
test_cloud_aks(void **state)
{
	static const struct prov p = { "aks", "test-aks-eus", "westeurope" };

	(void)state;
	cloud_replay(&p);
}

static void
test_cloud_hyperpod(void **state)
{
	static const struct prov p = { "hyperpod", "test-hp-usw2", "us-east-1" };

	(void)state;
	cloud_replay(&p);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_environment),
		cmocka_unit_test(test_token),
		cmocka_unit_test(test_priority_class),
		cmocka_unit_test(test_queue),
		cmocka_unit_test(test_cloud_gke),
		cmocka_unit_test(test_cloud_aks),
		cmocka_unit_test(test_cloud_hyperpod),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
