/* value: Terraform's DynamicValue (msgpack, unknown = extension type 0; or JSON in raw
 * state) to jansson trees and back, typed by the attribute tables; and the mapping
 * between attribute values and fleetd's JSON. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <msgpack.h>

#include "tf.h"

static json_t *unknown_sentinel;

json_t *
tf_unknown(void)
{
	if (!unknown_sentinel)
		unknown_sentinel = json_pack("{s:b}", "__tf_unknown__", 1);
	return unknown_sentinel;
}

bool
tf_is_unknown(const json_t *v)
{
	return v && v == unknown_sentinel;
}

bool
tf_wholly_known(const json_t *v)
{
	const char *k;
	json_t *x;
	size_t i;

	if (tf_is_unknown(v))
		return false;
	if (json_is_object(v)) {
		json_object_foreach((json_t *)v, k, x)
			if (!tf_wholly_known(x))
				return false;
	} else if (json_is_array(v)) {
		json_array_foreach(v, i, x)
			if (!tf_wholly_known(x))
				return false;
	}
	return true;
}

static json_t *
from_msgpack(const msgpack_object *o)
{
	json_t *v = NULL;

	switch (o->type) {
	case MSGPACK_OBJECT_NIL:
		return json_null();
	case MSGPACK_OBJECT_BOOLEAN:
		return json_boolean(o->via.boolean);
	case MSGPACK_OBJECT_POSITIVE_INTEGER:
		return json_integer((json_int_t)o->via.u64);
	case MSGPACK_OBJECT_NEGATIVE_INTEGER:
		return json_integer((json_int_t)o->via.i64);
	case MSGPACK_OBJECT_FLOAT32:
	case MSGPACK_OBJECT_FLOAT64:
		return json_real(o->via.f64);
	case MSGPACK_OBJECT_STR:
		return json_stringn(o->via.str.ptr, o->via.str.size);
	case MSGPACK_OBJECT_BIN:
		return json_stringn(o->via.bin.ptr, o->via.bin.size);
	case MSGPACK_OBJECT_EXT:
		return json_incref(tf_unknown());	/* 0 plain, 12 refined: both unknown */
	case MSGPACK_OBJECT_ARRAY:
		v = json_array();
		for (uint32_t i = 0; i < o->via.array.size; i++) {
			json_t *x = from_msgpack(&o->via.array.ptr[i]);
			if (!x) {
				json_decref(v);
				return NULL;
			}
			json_array_append_new(v, x);
		}
		return v;
	case MSGPACK_OBJECT_MAP:
		v = json_object();
		for (uint32_t i = 0; i < o->via.map.size; i++) {
			const msgpack_object *k = &o->via.map.ptr[i].key;
			json_t *x;
			char key[256];

			if (k->type != MSGPACK_OBJECT_STR || k->via.str.size >= sizeof key) {
				json_decref(v);
				return NULL;
			}
			memcpy(key, k->via.str.ptr, k->via.str.size);
			key[k->via.str.size] = 0;
			x = from_msgpack(&o->via.map.ptr[i].val);
			if (!x) {
				json_decref(v);
				return NULL;
			}
			json_object_set_new(v, key, x);
		}
		return v;
	default:
		return NULL;
	}
}

json_t *
tf_decode(const uint8_t *buf, size_t len, bool is_json)
{
	msgpack_unpacked u;
	json_t *v = NULL;
	size_t off = 0;

	if (len == 0)
		return json_null();
	if (is_json)
		return json_loadb((const char *)buf, len, JSON_DECODE_ANY, NULL);
	msgpack_unpacked_init(&u);
	if (msgpack_unpack_next(&u, (const char *)buf, len, &off) == MSGPACK_UNPACK_SUCCESS)
		v = from_msgpack(&u.data);
	msgpack_unpacked_destroy(&u);
	return v;
}

static void pack_value(msgpack_packer *pk, enum tf_ty ty, enum tf_ty elem,
	    const struct tf_attr *nested, json_t *v);

static void
pack_str(msgpack_packer *pk, const char *s)
{
	size_t n = strlen(s);

	msgpack_pack_str(pk, n);
	msgpack_pack_str_body(pk, s, n);
}

static void
pack_obj(msgpack_packer *pk, const struct tf_attr *attrs, json_t *v)
{
	size_t n = 0;

	for (const struct tf_attr *a = attrs; a->name; a++)
		n++;
	msgpack_pack_map(pk, n);
	for (const struct tf_attr *a = attrs; a->name; a++) {
		pack_str(pk, a->name);
		pack_value(pk, a->ty, a->elem, a->nested, tf_get(v, a->name));
	}
}

static void
pack_value(msgpack_packer *pk, enum tf_ty ty, enum tf_ty elem, const struct tf_attr *nested,
    json_t *v)
{
	const char *k;
	json_t *x;
	size_t i;

	if (tf_is_unknown(v)) {
		msgpack_pack_ext(pk, 1, 0);
		msgpack_pack_ext_body(pk, "", 1);
		return;
	}
	if (!v || json_is_null(v)) {
		msgpack_pack_nil(pk);
		return;
	}
	switch (ty) {
	case TY_STR:
		if (json_is_string(v))
			pack_str(pk, json_string_value(v));
		else {
			char *s = json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT);
			pack_str(pk, s ? s : "");
			free(s);
		}
		break;
	case TY_NUM: {
		double d = json_number_value(v);
		if (json_is_integer(v))
			msgpack_pack_int64(pk, json_integer_value(v));
		else if (d == floor(d) && fabs(d) < 9e15)
			msgpack_pack_int64(pk, (int64_t)d);
		else
			msgpack_pack_double(pk, d);
		break;
	}
	case TY_BOOL:
		if (json_is_true(v))
			msgpack_pack_true(pk);
		else
			msgpack_pack_false(pk);
		break;
	case TY_LIST:
		if (!json_is_array(v)) {
			msgpack_pack_nil(pk);
			break;
		}
		msgpack_pack_array(pk, json_array_size(v));
		json_array_foreach(v, i, x)
			pack_value(pk, elem, 0, nested, x);
		break;
	case TY_MAP:
		if (!json_is_object(v)) {
			msgpack_pack_nil(pk);
			break;
		}
		msgpack_pack_map(pk, json_object_size(v));
		json_object_foreach(v, k, x) {
			pack_str(pk, k);
			pack_value(pk, elem, 0, nested, x);
		}
		break;
	case TY_OBJ:
		pack_obj(pk, nested, v);
		break;
	}
}

bool
tf_encode_obj(const struct tf_attr *attrs, json_t *obj, uint8_t **out, size_t *len)
{
	msgpack_sbuffer sb;
	msgpack_packer pk;

	msgpack_sbuffer_init(&sb);
	msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
	if (!obj || json_is_null(obj))
		msgpack_pack_nil(&pk);
	else
		pack_obj(&pk, attrs, obj);
	*out = (uint8_t *)sb.data;	/* malloc'd by the sbuffer */
	*len = sb.size;
	return true;
}

static json_t *
type_of(enum tf_ty ty, enum tf_ty elem, const struct tf_attr *nested)
{
	json_t *o;

	switch (ty) {
	case TY_STR:
		return json_string("string");
	case TY_NUM:
		return json_string("number");
	case TY_BOOL:
		return json_string("bool");
	case TY_LIST:
		return json_pack("[s,o]", "list", type_of(elem, 0, nested));
	case TY_MAP:
		return json_pack("[s,o]", "map", type_of(elem, 0, nested));
	case TY_OBJ:
		o = json_object();
		for (const struct tf_attr *a = nested; a->name; a++)
			json_object_set_new(o, a->name, type_of(a->ty, a->elem, a->nested));
		return json_pack("[s,o]", "object", o);
	}
	return json_string("dynamic");
}

char *
tf_type_json(const struct tf_attr *a)
{
	json_t *t = type_of(a->ty, a->elem, a->nested);
	char *s = json_dumps(t, JSON_ENCODE_ANY | JSON_COMPACT);

	json_decref(t);
	return s;
}

json_t *
tf_copy(json_t *v)
{
	const char *k;
	json_t *x, *out;
	size_t i;

	if (!v || tf_is_unknown(v))
		return v ? json_incref(v) : json_null();
	if (json_is_object(v)) {
		out = json_object();
		json_object_foreach(v, k, x)
			json_object_set_new(out, k, tf_copy(x));
		return out;
	}
	if (json_is_array(v)) {
		out = json_array();
		json_array_foreach(v, i, x)
			json_array_append_new(out, tf_copy(x));
		return out;
	}
	return json_incref(v);
}

bool
tf_equal(const json_t *a, const json_t *b)
{
	if (tf_is_unknown(a) || tf_is_unknown(b))
		return a == b;
	if (!a)
		a = json_null();
	if (!b)
		b = json_null();
	if (json_is_number(a) && json_is_number(b))
		return json_number_value(a) == json_number_value(b);
	if (json_is_object(a) && json_is_object(b)) {
		const char *k;
		json_t *x;

		/* absent and null members are the same */
		json_object_foreach((json_t *)a, k, x)
			if (!tf_equal(x, json_object_get(b, k)))
				return false;
		json_object_foreach((json_t *)b, k, x)
			if (!json_object_get(a, k) && !json_is_null(x))
				return false;
		return true;
	}
	if (json_is_array(a) && json_is_array(b)) {
		if (json_array_size(a) != json_array_size(b))
			return false;
		for (size_t i = 0; i < json_array_size(a); i++)
			if (!tf_equal(json_array_get(a, i), json_array_get(b, i)))
				return false;
		return true;
	}
	return json_equal((json_t *)a, (json_t *)b);
}

json_t *
tf_get(json_t *obj, const char *name)
{
	json_t *v = json_is_object(obj) && !tf_is_unknown(obj) ? json_object_get(obj, name) : NULL;

	return v ? v : json_null();
}

const struct tf_attr *
tf_attr_find(const struct tf_attr *attrs, const char *name)
{
	for (const struct tf_attr *a = attrs; a->name; a++)
		if (strcmp(a->name, name) == 0)
			return a;
	return NULL;
}

/* The API member named by a->api (a dotted path) or a->name. */
static json_t *
api_member(const struct tf_attr *a, json_t *api)
{
	const char *path = a->api ? a->api : a->name;
	char key[64];
	json_t *v = api;

	while (v && *path) {
		size_t n = strcspn(path, ".");
		if (n >= sizeof key)
			return NULL;
		memcpy(key, path, n);
		key[n] = 0;
		v = json_is_object(v) ? json_object_get(v, key) : NULL;
		path += n + (path[n] == '.');
	}
	return v;
}

static json_t *
from_api_typed(enum tf_ty ty, enum tf_ty elem, const struct tf_attr *nested, unsigned flags,
    json_t *v)
{
	json_t *out;
	const char *k;
	json_t *x;
	size_t i;

	if (!v || json_is_null(v))
		return json_null();
	if (flags & F_JSON) {
		char *s = json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT | JSON_SORT_KEYS);
		out = json_string(s ? s : "null");
		free(s);
		return out;
	}
	switch (ty) {
	case TY_STR:
		if (json_is_string(v))
			return json_incref(v);
		if (json_is_integer(v))
			return json_sprintf("%lld", (long long)json_integer_value(v));
		return json_null();
	case TY_NUM:
		return json_is_number(v) ? json_incref(v) : json_null();
	case TY_BOOL:
		return json_is_boolean(v) ? json_incref(v) : json_null();
	case TY_LIST:
		if (!json_is_array(v))
			return json_null();
		out = json_array();
		json_array_foreach(v, i, x)
			json_array_append_new(out, from_api_typed(elem, 0, nested, 0, x));
		return out;
	case TY_MAP:
		if (!json_is_object(v))
			return json_null();
		out = json_object();
		json_object_foreach(v, k, x)
			json_object_set_new(out, k, from_api_typed(elem, 0, nested, 0, x));
		return out;
	case TY_OBJ:
		if (!json_is_object(v))
			return json_null();
		return tf_state_from_api(nested, v);
	}
	return json_null();
}

bool
tf_api_has(const struct tf_attr *a, json_t *api)
{
	return api_member(a, api) != NULL;
}

json_t *
tf_from_api(const struct tf_attr *a, json_t *api)
{
	return from_api_typed(a->ty, a->elem, a->nested, a->flags, api_member(a, api));
}

json_t *
tf_state_from_api(const struct tf_attr *attrs, json_t *api)
{
	json_t *o = json_object();

	for (const struct tf_attr *a = attrs; a->name; a++)
		json_object_set_new(o, a->name, (a->flags & (F_LOCAL | F_WO)) ? json_null() :
		    tf_from_api(a, api));
	return o;
}

static json_t *
to_api_typed(enum tf_ty ty, enum tf_ty elem, const struct tf_attr *nested, unsigned flags,
    json_t *v)
{
	json_t *out;
	const char *k;
	json_t *x;
	size_t i;

	if (!v || json_is_null(v) || tf_is_unknown(v))
		return NULL;
	if (flags & F_JSON)
		return json_is_string(v) ? json_loads(json_string_value(v), JSON_DECODE_ANY, NULL) :
		    NULL;
	switch (ty) {
	case TY_LIST:
		out = json_array();
		json_array_foreach(v, i, x) {
			json_t *y = to_api_typed(elem, 0, nested, 0, x);
			json_array_append_new(out, y ? y : json_null());
		}
		return out;
	case TY_MAP:
		out = json_object();
		json_object_foreach(v, k, x) {
			json_t *y = to_api_typed(elem, 0, nested, 0, x);
			if (y)
				json_object_set_new(out, k, y);
		}
		return out;
	case TY_OBJ:
		return tf_body(nested, v);
	default:
		return json_incref(v);
	}
}

json_t *
tf_to_api(const struct tf_attr *a, json_t *v)
{
	return to_api_typed(a->ty, a->elem, a->nested, a->flags, v);
}

json_t *
tf_body(const struct tf_attr *attrs, json_t *state)
{
	json_t *o = json_object();

	for (const struct tf_attr *a = attrs; a->name; a++) {
		json_t *v;

		if ((a->flags & (F_LOCAL | F_WO)) || !(a->flags & (F_REQ | F_OPT)))
			continue;
		if (a->api && strchr(a->api, '.'))
			continue;
		v = tf_to_api(a, tf_get(state, a->name));
		if (!v && (a->flags & F_CLEAR) && json_is_null(tf_get(state, a->name)))
			v = json_null();
		if (v)
			json_object_set_new(o, a->api ? a->api : a->name, v);
	}
	return o;
}
