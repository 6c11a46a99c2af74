/* test_terraform_contract: replays, for every resource terraform/modules/restapi/ manages, the HTTP
 * sequence of the Mastercard/restapi provider against fleetd (clouds and clusters on cloudsim). */
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
static struct harness_cs cs;
static char dburl[512];
static char *admin;

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

/* A read as the provider sends it: GET with the empty read_data as its body. */
static long
tf_get(const char *path)
{
	return harness_call("GET", admin, "{}", "%s", path);
}

/* status, and a JSON object in every answer with a body */
static void
expect_status(const char *what, long status)
{
	if (harness_r.status != status)
		fail_msg("%s: want %ld, got %ld: %s", what, status, harness_r.status,
		    harness_r.body);
	if (status != 204 && !json_is_object(harness_r.json))
		fail_msg("%s: the answer is not a JSON object: %s", what, harness_r.body);
}

static bool
listed(const char *const *list, const char *key)
{
	for (int i = 0; list != NULL && list[i] != NULL; i++)
		if (strcmp(list[i], key) == 0)
			return true;
	return false;
}

/* Drift: every field the user set comes back exactly as sent. */
static void
expect_fields(const char *what, json_t *sent, json_t *got, const char *const *ignore)
{
	const char *k;
	json_t *v;

	json_object_foreach(sent, k, v) {
		char *w, *g;

		if (listed(ignore, k) || harness_json_eq(v, json_object_get(got, k)))
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

		if (listed(vol, k) || harness_json_eq(v, json_object_get(b, k)))
			continue;
		x = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
		y = json_object_get(b, k) ? json_dumps(json_object_get(b, k),
		    JSON_COMPACT | JSON_ENCODE_ANY) : strdup("(absent)");
		fail_msg("%s: %s changed between two answers: %.600s, then %.600s", what, k, x, y);
	}
	json_object_foreach(b, k, v)
		if (!listed(vol, k) && json_object_get(a, k) == NULL)
			fail_msg("%s: %s appeared: %s", what, k, harness_r.body);
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
	r->last = json_deep_copy(harness_r.json);
}

/* ---- the replay, one step per function */

static void
tf_create(struct tf_res *r)
{
	static const char *const computed[] = { "id", "version", "created_at", NULL };
	char *loc;
	const char *id;

	harness_call_json("POST", admin, r->data, "%s", r->path);
	expect_status(r->what, 201);
	if ((id = jstr(harness_r.json, r->id_attr)) == NULL)
		fail_msg("%s: the create answer has no %s: %s", r->what, r->id_attr,
		    harness_r.body);
	snprintf(r->id, sizeof(r->id), "%s", id);
	if (r->item[0] == '\0')
		snprintf(r->item, sizeof(r->item), "%s/%s", r->path, r->id);
	expect_fields(r->what, r->data, harness_r.json, r->ignore);
	for (int i = 0; computed[i] != NULL; i++)
		if (json_object_get(harness_r.json, computed[i]) == NULL)
			fail_msg("%s: the create answer lacks %s: %s", r->what, computed[i],
			    harness_r.body);
	loc = harness_header(&harness_r, "Location");
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
	expect_fields(r->what, sent, harness_r.json, r->ignore);
	expect_same(r->what, r->last, harness_r.json, skip != NULL ? skip : r->vol);
	keep(r);
}

static void
tf_update(struct tf_res *r)
{
	long v = version_of(r->last);
	json_t *before = json_deep_copy(r->last);

	harness_call_json("PUT", admin, r->update, "%s", r->item);
	expect_status(r->what, 200);
	if (version_of(harness_r.json) != v + 1)
		fail_msg("%s: a change makes version %ld, not %ld", r->what,
		    version_of(harness_r.json), v + 1);
	expect_fields(r->what, r->update, harness_r.json, r->ignore);
	assert_string_equal(jstr(harness_r.json, "id"), jstr(before, "id"));
	assert_string_equal(jstr(harness_r.json, "created_at"), jstr(before, "created_at"));
	json_decref(before);
	keep(r);
	/* read for drift: nothing differs from what was sent */
	tf_read(r, r->update, NULL);
	/* the same PUT again changes nothing, not even updated_at */
	harness_call_json("PUT", admin, r->update, "%s", r->item);
	expect_status(r->what, 200);
	if (version_of(harness_r.json) != v + 1)
		fail_msg("%s: an identical PUT moved version to %ld", r->what,
		    version_of(harness_r.json));
	expect_same(r->what, r->last, harness_r.json, r->vol);
}

/* A force_new field changed in place: 409 naming it, and nothing written. */
static void
tf_immutable(struct tf_res *r, const char *field, json_t *value, const char *code)
{
	json_t *body = json_deep_copy(r->update ? r->update : r->data);
	char ptr[64];

	json_object_set(body, field, value);
	snprintf(ptr, sizeof(ptr), "/%s", field);
	harness_call_json("PUT", admin, body, "%s", r->item);
	json_decref(body);
	harness_expect_problem(NULL, 409, code, ptr);
	if (strstr(jstr(harness_r.json, "detail") ? jstr(harness_r.json, "detail") : "",
	    field) == NULL &&
	    strstr(jstr(harness_r.json, "title") ? jstr(harness_r.json, "title") : "",
	    field) == NULL)
		fail_msg("%s: the 409 does not name %s: %s", r->what, field, harness_r.body);
	tf_get(r->item);
	expect_status(r->what, 200);
	expect_same(r->what, r->last, harness_r.json, r->vol);
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
	expect_fields(r->what, r->update ? r->update : r->data, harness_r.json, r->ignore);
	expect_same(r->what, r->last, harness_r.json, r->vol);
}

static void
tf_destroy(struct tf_res *r, const char *code)
{
	harness_call("DELETE", admin, NULL, "%s", r->item);
	expect_status(r->what, 204);
	assert_int_equal(harness_r.len, 0);
	harness_call("DELETE", admin, NULL, "%s", r->item);
	harness_expect_problem(NULL, 404, code, NULL);
	tf_get(r->item);
	harness_expect_problem(NULL, 404, code, NULL);
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

/* ---- setup */

static int
setup(void **state)
{
	(void)state;
	harness_db_create("tfcontract", dburl, sizeof(dburl));
	harness_cs_start(&cs, NULL, NULL);
	harness_fleetd_start(&fd, dburl, (const char *const *)cs.env);
	admin = harness_keep(harness_token(dburl, "admin", "*"));
	harness_post_created(admin, "/v1/environments", "{\"name\":\"tfprod\"}");
	harness_post_created(admin, "/v1/environments", "{\"name\":\"tfdev\"}");
	harness_post_created(admin, "/v1/priority-classes",
	    "{\"name\":\"tf-default\",\"value\":100}");
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
	if (jstr(harness_r.json, "secret") == NULL ||
	    strncmp(jstr(harness_r.json, "secret"), "fleet_", 6) != 0)
		fail_msg("token: the create answer carries no secret: %s", harness_r.body);
	tf_read(&r, r.data, secret);
	if (json_object_get(harness_r.json, "secret") != NULL)
		fail_msg("token: the secret is read back: %s", harness_r.body);
	/* no update: every field is force_new, and a PUT is refused with the methods there are */
	harness_call_json("PUT", admin, r.data, "%s", r.item);
	harness_expect_problem(NULL, 405, "api.method_not_allowed", NULL);
	allow = harness_header(&harness_r, "Allow");
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
	harness_call_json("POST", admin, data, "%s", path);
	expect_status("cloud iam", 200);
	/* id_attribute "id": the answer is the cloud, so the object's id is the cloud's */
	assert_string_equal(jstr(harness_r.json, "id"), cloud->id);
	assert_string_equal(jstr(harness_r.json, "state"), "active");
	iam = json_object_get(harness_r.json, "iam");
	assert_string_equal(jstr(iam, "control_plane_role"), cp);
	assert_string_equal(jstr(iam, "cluster_role"), cl);
	assert_true(json_is_true(json_object_get(iam, "locked")));
	assert_int_equal(version_of(harness_r.json), v + 1);
	keep(cloud);
	tf_get(cloud->item);	/* read_path */
	expect_status("cloud iam", 200);
	expect_same("cloud iam", cloud->last, harness_r.json, NULL);
	/* update with unchanged data (rotation to the same pair): nothing changes */
	harness_call_json("POST", admin, data, "%s", rotate);
	expect_status("cloud iam rotate", 200);
	expect_same("cloud iam rotate", cloud->last, harness_r.json, NULL);
	tf_get(cloud->item);	/* destroy_method GET: the pair ends with the cloud */
	expect_status("cloud iam", 200);
	expect_same("cloud iam", cloud->last, harness_r.json, NULL);
	/* created again (lost state): refused, the pair is locked — import it instead */
	harness_call_json("POST", admin, data, "%s", path);
	harness_expect_problem(NULL, 409, "iam.locked", NULL);
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
	snprintf(other, sizeof(other), "%.*sb0c0ffee0000", (int)(strrchr(own, '/') + 1 - own),
	    own);
	pcid = json_string(other);

	snprintf(r.path, sizeof(r.path), "/v1/clouds/%s/clusters", cloud->id);
	/* fleet-cluster sends exactly these */
	r.data = json_pack("{s:s, s:s, s:s, s:{s:s}, s:s, s:{s:s}}", "name", jstr(c, "name"),
	    "api_server", jstr(c, "api_server"), "ca_cert", cs.ca_pem, "credentials", "token",
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
	json_t *c = harness_cs_cluster(&cs, p->cluster), *v;
	struct tf_res r = { .what = "cloud", .path = "/v1/clouds", .id_attr = "id",
	    .imm_field = "region", .imm_code = "cloud.immutable" };
	const char *cp, *cl;
	char name[64];

	r.what = p->provider;
	snprintf(name, sizeof(name), "tf-%s", p->provider);
	r.data = json_pack("{s:s, s:s, s:s, s:s, s:o}", "name", name, "environment", "tfprod",
	    "provider", p->provider, "region", jstr(c, "region"), "account",
	    harness_account_of(c));
	r.update = json_deep_copy(r.data);
	strcat(name, "-renamed");
	json_object_set_new(r.update, "name", json_string(name));
	r.imm_value = json_string(p->other_region);
	/* phase 1 */
	tf_create(&r);
	assert_string_equal(jstr(harness_r.json, "state"), "pending_iam");
	if (!json_is_object(json_object_get(json_object_get(harness_r.json, "iam"), "required")) ||
	    jstr(harness_r.json, "external_id") == NULL)
		fail_msg("%s: phase 1 lacks iam.required or external_id: %s", r.what,
		    harness_r.body);
	tf_read(&r, r.data, NULL);
	/* the provider's own resources, then phase 2 */
	harness_identities(&cs, c, r.last, &cp, &cl);
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
	assert_string_equal(jstr(harness_r.json, "state"), "active");
	print_message("%-16s update -> drift none -> same PUT v%ld -> 409 /region /environment "
	    "/provider /account -> import\n", r.what, version_of(r.last));
	cluster_replay(&r, c);
	tf_destroy(&r, "cloud.not_found");
	print_message("%-16s destroy 204, again 404, read 404\n", r.what);
	tf_res_cleanup(&r);
}

/* One case per provider: state is its struct prov. */
static void
test_cloud(void **state)
{
	cloud_replay(*state);
}

static const struct prov gke = { "gke", "test-gke-usc1", "europe-west4" };
static const struct prov aks = { "aks", "test-aks-eus", "westeurope" };
static const struct prov hyperpod = { "hyperpod", "test-hp-usw2", "us-east-1" };

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_environment),
		cmocka_unit_test(test_token),
		cmocka_unit_test(test_priority_class),
		cmocka_unit_test(test_queue),
		{ "test_cloud_gke", test_cloud, NULL, NULL, (void *)&gke },
		{ "test_cloud_aks", test_cloud, NULL, NULL, (void *)&aks },
		{ "test_cloud_hyperpod", test_cloud, NULL, NULL, (void *)&hyperpod },
	};

	return cmocka_run_group_tests(tests, setup, harness_group_teardown);
}
