/* jsonx: parse and field checks that produce 400s pointing at the field. */
#include <math.h>
#include <string.h>

#include "core/jsonx.h"

json_t *
jsonx_parse_object(const char *text, size_t len, struct err *e)
{
	json_error_t je;
	json_t *v;

	if (!jsonx_utf8_valid(text, len)) {
		err_set(e, 400, "api.bad_json", "body is not valid utf-8");
		return NULL;
	}
	v = json_loadb(text, len, JSON_REJECT_DUPLICATES | JSON_DECODE_ANY, &je);
	if (v == NULL) {
		err_set(e, 400, "api.bad_json", "body is not valid json");
		err_detail(e, "line %d, column %d: %s", je.line, je.column, je.text);
		return NULL;
	}
	if (!json_is_object(v)) {
		json_decref(v);
		err_field(e, 400, "api.not_object", "", "body must be a json object");
		return NULL;
	}
	return v;
}

bool
jsonx_only(json_t *obj, const char *const *allowed, const char *prefix, struct err *e)
{
	const char *key;
	json_t *v;

	json_object_foreach(obj, key, v) {
		bool ok = false;

		(void)v;
		for (size_t i = 0; allowed[i] != NULL; i++) {
			if (strcmp(key, allowed[i]) == 0) {
				ok = true;
				break;
			}
		}
		if (!ok) {
			char ptr[128];

			snprintf(ptr, sizeof(ptr), "%s/%.100s", prefix ? prefix : "", key);
			return err_field(e, 400, "api.unknown_field", ptr,
			    "unknown field %.100s", key);
		}
	}
	return true;
}

bool
jsonx_member(json_t *obj, const char *key, const char *prefix, bool required, json_t **out,
       char *ptr, size_t ptrlen, struct err *e)
{
	snprintf(ptr, ptrlen, "%s/%s", prefix ? prefix : "", key);
	*out = json_object_get(obj, key);
	if (*out == NULL || json_is_null(*out)) {
		*out = NULL;
		if (required)
			return err_field(e, 400, "api.missing_field", ptr, "%s is required", key);
	}
	return true;
}

static bool is_string(const json_t *v) { return json_is_string(v); }
static bool is_integer(const json_t *v) { return json_is_integer(v); }
static bool is_boolean(const json_t *v) { return json_is_boolean(v); }
static bool is_object(const json_t *v) { return json_is_object(v); }

static bool
is_number(const json_t *v)
{
	return json_is_number(v) && isfinite(json_number_value(v));
}

/* The member key in *v (NULL when absent or null and not required) when is_kind accepts
 * it; else 400 api.wrong_type "<key> must be <kind>". */
static bool
typed(json_t *obj, const char *key, const char *prefix, bool required,
      bool (*is_kind)(const json_t *), const char *kind, json_t **v, struct err *e)
{
	char ptr[128];

	if (!jsonx_member(obj, key, prefix, required, v, ptr, sizeof(ptr), e))
		return false;
	if (*v != NULL && !is_kind(*v))
		return err_field(e, 400, "api.wrong_type", ptr, "%s must be %s", key, kind);
	return true;
}

bool
jsonx_str(json_t *obj, const char *key, const char *prefix, bool required,
	  const char **out, struct err *e)
{
	json_t *v;

	if (!typed(obj, key, prefix, required, is_string, "a string", &v, e))
		return false;
	if (v != NULL)
		*out = json_string_value(v);
	return true;
}

bool
jsonx_int(json_t *obj, const char *key, const char *prefix, bool required,
	  long long *out, struct err *e)
{
	json_t *v;

	if (!typed(obj, key, prefix, required, is_integer, "an integer", &v, e))
		return false;
	if (v != NULL)
		*out = json_integer_value(v);
	return true;
}

bool
jsonx_num(json_t *obj, const char *key, const char *prefix, bool required,
	  double *out, struct err *e)
{
	json_t *v;

	if (!typed(obj, key, prefix, required, is_number, "a number", &v, e))
		return false;
	if (v != NULL)
		*out = json_number_value(v);
	return true;
}

bool
jsonx_bool(json_t *obj, const char *key, const char *prefix, bool required,
	   bool *out, struct err *e)
{
	json_t *v;

	if (!typed(obj, key, prefix, required, is_boolean, "a boolean", &v, e))
		return false;
	if (v != NULL)
		*out = json_is_true(v);
	return true;
}

bool
jsonx_obj(json_t *obj, const char *key, const char *prefix, bool required, json_t **out,
	  struct err *e)
{
	json_t *v;

	*out = NULL;
	if (!typed(obj, key, prefix, required, is_object, "an object", &v, e))
		return false;
	*out = v;
	return true;
}

bool
jsonx_utf8_valid(const char *s, size_t len)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t i = 0;

	while (i < len) {
		unsigned char c = p[i];
		size_t n;
		unsigned cp;

		if (c == 0)
			return false;
		if (c < 0x80) {
			i++;
			continue;
		}
		if ((c & 0xe0) == 0xc0) { n = 1; cp = c & 0x1f; }
		else if ((c & 0xf0) == 0xe0) { n = 2; cp = c & 0x0f; }
		else if ((c & 0xf8) == 0xf0) { n = 3; cp = c & 0x07; }
		else return false;
		if (i + n >= len)
			return false;
		for (size_t k = 1; k <= n; k++) {
			if ((p[i + k] & 0xc0) != 0x80)
				return false;
			cp = (cp << 6) | (p[i + k] & 0x3f);
		}
		if ((n == 1 && cp < 0x80) || (n == 2 && cp < 0x800) || (n == 3 && cp < 0x10000) ||
		    cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
			return false;
		i += n + 1;
	}
	return true;
}

json_t *
jsonx_meta(const json_t *obj, const char *key)
{
	return json_object_get(json_object_get(obj, "metadata"), key);
}

const char *
jsonx_meta_str(const json_t *obj, const char *key)
{
	return json_string_value(jsonx_meta(obj, key));
}

const char *
jsonx_at(json_t *obj, const char *key, const char *key2)
{
	json_t *v = json_object_get(obj, key);

	if (key2 != NULL)
		v = json_object_get(v, key2);
	return json_string_value(v);
}

json_t *
jsonx_find(json_t *arr, const char *key, const char *value)
{
	json_t *v;
	size_t i;

	json_array_foreach(arr, i, v) {
		const char *s = jsonx_at(v, key, NULL);

		if (strcmp(s ? s : "", value) == 0)
			return v;
	}
	return NULL;
}

bool
jsonx_name_ok(const char *s, size_t max)
{
	size_t n = s ? strlen(s) : 0;

	return n >= 2 && n <= max && s[0] >= 'a' && s[0] <= 'z' &&
	    strspn(s, "abcdefghijklmnopqrstuvwxyz0123456789-") == n;
}
