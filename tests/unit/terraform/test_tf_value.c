/* test_tf_value: terraform-provider-fleet's value layer — msgpack DynamicValues (unknowns as
 * extension types 0 and 12), typed encoding of every attribute, cty type strings, the mapping
 * to and from fleetd's JSON, and plan-time checks naming the attribute. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include <msgpack.h>

#include "tf.h"

static const struct tf_attr *
res_attrs(const char *type)
{
	const struct tf_res *r = tf_res_find(tf_resources, type);

	assert_non_null(r);
	return r->attrs;
}

/* {"a":"x","n":3,"f":1.5,"b":true,"z":nil,"l":["p"],"u":ext0,"r":ext12} */
static void
test_decode(void **state)
{
	msgpack_sbuffer sb;
	msgpack_packer pk;
	json_t *v;

	(void)state;
	msgpack_sbuffer_init(&sb);
	msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
	msgpack_pack_map(&pk, 8);
	msgpack_pack_str_with_body(&pk, "a", 1);
	msgpack_pack_str_with_body(&pk, "x", 1);
	msgpack_pack_str_with_body(&pk, "n", 1);
	msgpack_pack_int(&pk, 3);
	msgpack_pack_str_with_body(&pk, "f", 1);
	msgpack_pack_double(&pk, 1.5);
	msgpack_pack_str_with_body(&pk, "b", 1);
	msgpack_pack_true(&pk);
	msgpack_pack_str_with_body(&pk, "z", 1);
	msgpack_pack_nil(&pk);
	msgpack_pack_str_with_body(&pk, "l", 1);
	msgpack_pack_array(&pk, 1);
	msgpack_pack_str_with_body(&pk, "p", 1);
	msgpack_pack_str_with_body(&pk, "u", 1);
	msgpack_pack_ext_with_body(&pk, "", 1, 0);
	msgpack_pack_str_with_body(&pk, "r", 1);
	msgpack_pack_ext_with_body(&pk, "\x01\x02", 2, 12);
	v = tf_decode((const uint8_t *)sb.data, sb.size, false);
	assert_non_null(v);
	assert_string_equal(json_string_value(json_object_get(v, "a")), "x");
	assert_int_equal(json_integer_value(json_object_get(v, "n")), 3);
	assert_true(json_real_value(json_object_get(v, "f")) == 1.5);
	assert_true(json_is_true(json_object_get(v, "b")));
	assert_true(json_is_null(json_object_get(v, "z")));
	assert_int_equal(json_array_size(json_object_get(v, "l")), 1);
	assert_true(tf_is_unknown(json_object_get(v, "u")));
	assert_true(tf_is_unknown(json_object_get(v, "r")));
	assert_false(tf_wholly_known(v));
	json_decref(v);
	/* malformed: a truncated map */
	assert_null(tf_decode((const uint8_t *)sb.data, 3, false));
	msgpack_sbuffer_destroy(&sb);
}

/* Every attribute is encoded (absent ones as nil), an unknown as fixext1 type 0; the bytes
 * decode back to the same value. */
static void
test_encode_roundtrip(void **state)
{
	const struct tf_attr *q = res_attrs("fleet_queue");
	json_t *v = json_pack("{s:s, s:s, s:o, s:{s:i}}", "name", "train", "environment", "prod",
	    "weight", json_incref(tf_unknown()), "nominal_quota", "nvidia-l4", 8);
	json_t *back;
	uint8_t *buf;
	size_t len, n = 0;

	(void)state;
	assert_true(tf_encode_obj(q, v, &buf, &len));
	assert_non_null(memmem(buf, len, "\xd4\x00\x00", 3));
	back = tf_decode(buf, len, false);
	for (const struct tf_attr *a = q; a->name; a++, n++)
		assert_non_null(json_object_get(back, a->name));
	assert_int_equal(json_object_size(back), n);
	assert_true(tf_is_unknown(json_object_get(back, "weight")));
	assert_true(json_is_null(json_object_get(back, "cohort")));
	assert_true(tf_equal(json_object_get(back, "nominal_quota"),
	    json_object_get(v, "nominal_quota")));
	json_decref(back);
	free(buf);
	json_decref(v);
	/* a null object is nil */
	assert_true(tf_encode_obj(q, json_null(), &buf, &len));
	assert_int_equal(len, 1);
	assert_int_equal(buf[0], 0xc0);
	free(buf);
}

static void
test_types(void **state)
{
	const struct tf_attr *q = res_attrs("fleet_queue"), *c = res_attrs("fleet_cloud");
	char *t;

	(void)state;
	t = tf_type_json(tf_attr_find(q, "nominal_quota"));
	assert_string_equal(t, "[\"map\",\"number\"]");
	free(t);
	t = tf_type_json(tf_attr_find(c, "account"));
	assert_non_null(strstr(t, "[\"object\",{"));
	assert_non_null(strstr(t, "\"project\":\"string\""));
	free(t);
}

/* fleetd's cloud JSON -> state: renamed members (provider -> provider_type, roleId -> role_id),
 * dotted paths (iam.required), other providers' members null, JSON documents as strings. */
static void
test_from_api(void **state)
{
	const struct tf_attr *c = res_attrs("fleet_cloud");
	json_t *api = json_loads("{\"id\":\"c1\",\"name\":\"n\",\"environment\":\"prod\","
	    "\"provider\":\"gke\",\"region\":\"us-central1\",\"account\":{\"project\":\"p\"},"
	    "\"state\":\"pending_iam\",\"external_id\":\"e\",\"version\":1,"
	    "\"iam\":{\"required\":{\"provider\":\"gke\",\"custom_role\":{\"roleId\":\"r\","
	    "\"role\":{\"includedPermissions\":[\"a\",\"b\"]}},\"control_plane_role\":null}}}", 0, NULL);
	json_t *st = tf_state_from_api(c, api), *body;
	json_t *req = json_object_get(st, "iam_required");

	(void)state;
	assert_string_equal(json_string_value(json_object_get(st, "provider_type")), "gke");
	assert_true(json_is_null(json_object_get(json_object_get(st, "account"), "account_id")));
	assert_string_equal(json_string_value(json_object_get(json_object_get(req, "custom_role"),
	    "role_id")), "r");
	assert_int_equal(json_array_size(json_object_get(json_object_get(json_object_get(req,
	    "custom_role"), "role"), "included_permissions")), 2);
	assert_true(json_is_null(json_object_get(req, "tenant_id")));
	/* the body sent back: inputs only, fleetd's names, nulls left out */
	body = tf_body(c, st);
	assert_string_equal(json_string_value(json_object_get(body, "provider")), "gke");
	assert_null(json_object_get(body, "provider_type"));
	assert_null(json_object_get(body, "state"));
	assert_null(json_object_get(body, "iam"));
	assert_int_equal(json_object_size(json_object_get(body, "account")), 1);
	json_decref(body);
	json_decref(st);
	json_decref(api);
}

static void
test_json_documents(void **state)
{
	const struct tf_attr *c = res_attrs("fleet_cloud");
	const struct tf_attr *req = tf_attr_find(c, "iam_required")->nested;
	const struct tf_attr *role = tf_attr_find(req, "control_plane_role")->nested;
	json_t *api = json_loads("{\"assume_role_policy\":{\"Version\":\"2012-10-17\",\"Statement\":[]}}",
	    0, NULL);
	json_t *v = tf_from_api(tf_attr_find(role, "assume_role_policy"), api);

	(void)state;
	assert_string_equal(json_string_value(v), "{\"Statement\":[],\"Version\":\"2012-10-17\"}");
	json_decref(v);
	json_decref(api);
}

/* Checks name the attribute; unknown values are not judged. */
static void
test_validate(void **state)
{
	struct tf_diags d = {.arena = arena_new()};
	json_t *cfg = json_pack("{s:s, s:s, s:i, s:o}", "name", "Bad_Name", "environment", "prod",
	    "weight", 0, "cohort", json_incref(tf_unknown()));

	(void)state;
	tf_validate_attrs(res_attrs("fleet_queue"), cfg, "", &d);
	assert_int_equal(d.n, 2);
	assert_true(d.error);
	assert_string_equal(d.v[0]->attribute->steps[0]->attribute_name, "name");
	assert_non_null(strstr(d.v[0]->detail, "must match"));
	assert_string_equal(d.v[1]->attribute->steps[0]->attribute_name, "weight");
	json_decref(cfg);
	arena_free(d.arena);
}

/* fleet_environment.dashboard_ingress: fleetd's object read into the state (tls_secret
 * absent: null), sent back as it is; without it the body says null, which removes it
 * (F_CLEAR), while history_server, unset, is left out (kept). */
static void
test_dashboard_ingress_body(void **state)
{
	const struct tf_attr *env = res_attrs("fleet_environment");
	json_t *api = json_loads("{\"id\":\"e1\",\"name\":\"prod\",\"description\":\"\","
	    "\"dashboard_ingress\":{\"host\":\"ray.example.com\",\"path\":\"/\","
	    "\"path_type\":\"Prefix\",\"controller_namespace\":\"ingress-nginx\"},"
	    "\"history_server\":null,\"version\":1}", 0, NULL);
	json_t *st = tf_state_from_api(env, api), *di = json_object_get(st, "dashboard_ingress");
	json_t *body;

	(void)state;
	assert_string_equal(json_string_value(json_object_get(di, "host")), "ray.example.com");
	assert_true(json_is_null(json_object_get(di, "tls_secret")));
	body = tf_body(env, st);
	di = json_object_get(body, "dashboard_ingress");
	assert_string_equal(json_string_value(json_object_get(di, "path_type")), "Prefix");
	assert_null(json_object_get(di, "tls_secret"));
	json_decref(body);
	json_object_set_new(st, "dashboard_ingress", json_null());
	body = tf_body(env, st);
	assert_non_null(json_object_get(body, "dashboard_ingress"));
	assert_true(json_is_null(json_object_get(body, "dashboard_ingress")));
	assert_null(json_object_get(body, "history_server"));
	json_decref(body);
	json_decref(st);
	json_decref(api);
}

/* Nested attributes are checked too, named by their dotted path. */
static void
test_validate_nested(void **state)
{
	struct tf_diags d = {.arena = arena_new()};
	json_t *cfg = json_pack("{s:s, s:{s:s, s:s, s:s}}", "name", "prod", "dashboard_ingress",
	    "host", "ray.example.com", "path", "dash", "path_type", "Regex");

	(void)state;
	tf_validate_attrs(res_attrs("fleet_environment"), cfg, "", &d);
	assert_int_equal(d.n, 2);
	assert_string_equal(d.v[0]->attribute->steps[0]->attribute_name, "dashboard_ingress");
	assert_string_equal(d.v[0]->attribute->steps[1]->attribute_name, "path");
	assert_non_null(strstr(d.v[0]->detail, "must start with /"));
	assert_string_equal(d.v[1]->attribute->steps[1]->attribute_name, "path_type");
	assert_non_null(strstr(d.v[1]->detail, "must be one of"));
	json_decref(cfg);
	arena_free(d.arena);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_decode),
		cmocka_unit_test(test_encode_roundtrip),
		cmocka_unit_test(test_types),
		cmocka_unit_test(test_from_api),
		cmocka_unit_test(test_json_documents),
		cmocka_unit_test(test_validate),
		cmocka_unit_test(test_dashboard_ingress_body),
		cmocka_unit_test(test_validate_nested),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
