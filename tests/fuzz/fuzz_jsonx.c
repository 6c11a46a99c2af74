/* fuzz_jsonx: jsonx_utf8_valid against a reference written from Unicode's table of
 * well-formed byte sequences, and jsonx_parse_object plus the typed getters on any body. */
#include <math.h>

#include "core/jsonx.h"
#include "tests/fuzz/fuzz.h"

/* Unicode 15, table 3-7: the well-formed UTF-8 byte sequences; NUL refused as jsonx does. */
static bool
ref_utf8(const uint8_t *s, size_t n)
{
	size_t i = 0;

	while (i < n) {
		uint8_t c = s[i];
		uint8_t lo = 0x80, hi = 0xbf;
		size_t k;

		if (c == 0)
			return false;
		if (c <= 0x7f) {
			i++;
			continue;
		}
		if (c >= 0xc2 && c <= 0xdf)
			k = 1;
		else if (c >= 0xe0 && c <= 0xef)
			k = 2;
		else if (c >= 0xf0 && c <= 0xf4)
			k = 3;
		else
			return false;
		if (c == 0xe0)
			lo = 0xa0;
		else if (c == 0xed)
			hi = 0x9f;
		else if (c == 0xf0)
			lo = 0x90;
		else if (c == 0xf4)
			hi = 0x8f;
		if (i + k >= n)
			return false;
		if (s[i + 1] < lo || s[i + 1] > hi)
			return false;
		for (size_t j = 2; j <= k; j++)
			if (s[i + j] < 0x80 || s[i + j] > 0xbf)
				return false;
		i += k + 1;
	}
	return true;
}

/* Every typed getter agrees with the member's JSON type. */
static void
check_getters(json_t *obj)
{
	static const char *const none[] = { NULL };
	const char *key;
	json_t *v;
	struct err e = { 0 };

	json_object_foreach(obj, key, v) {
		const char *s = NULL;
		long long i = 0;
		double d = 0;
		bool b = false;
		bool null = json_is_null(v);

		err_clear(&e);
		FUZZ_CHECK(jsonx_str(obj, key, "/p", false, &s, &e) == (null || json_is_string(v)),
		    "jsonx_str on %s", key);
		FUZZ_CHECK(jsonx_int(obj, key, "/p", false, &i, &e) == (null || json_is_integer(v)),
		    "jsonx_int on %s", key);
		FUZZ_CHECK(jsonx_num(obj, key, "/p", false, &d, &e) == (null ||
		    (json_is_number(v) && isfinite(json_number_value(v)))), "jsonx_num on %s", key);
		FUZZ_CHECK(jsonx_bool(obj, key, "/p", false, &b, &e) == (null || json_is_boolean(v)),
		    "jsonx_bool on %s", key);
		FUZZ_CHECK(!jsonx_str(obj, key, "", true, &s, &e) || !null, "required null passed");
		if (!jsonx_only(obj, none, "/x", &e))
			FUZZ_CHECK(strncmp(e.pointer, "/x/", 3) == 0 && e.status == 400,
			    "unknown field pointer %s", e.pointer);
	}
	if (json_object_size(obj) > 0)
		FUZZ_CHECK(!jsonx_only(obj, none, NULL, &e), "jsonx_only let a member through");
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct err e = { 0 };
	bool mine = jsonx_utf8_valid((const char *)data, size), ref = ref_utf8(data, size);
	json_t *obj, *direct;

	FUZZ_CHECK(mine == ref, "utf8 verdicts differ: jsonx %d, reference %d", mine, ref);
	obj = jsonx_parse_object((const char *)data, size, &e);
	direct = mine ? json_loadb((const char *)data, size, JSON_REJECT_DUPLICATES |
	    JSON_DECODE_ANY, NULL) : NULL;
	FUZZ_CHECK((obj != NULL) == (direct != NULL && json_is_object(direct)),
	    "parse_object disagrees with jansson");
	if (obj == NULL) {
		FUZZ_CHECK(e.status == 400 && (strcmp(e.code, "api.bad_json") == 0 ||
		    strcmp(e.code, "api.not_object") == 0), "refusal code %s", e.code);
	} else {
		char *text = json_dumps(obj, JSON_COMPACT);
		json_t *again = jsonx_parse_object(text, strlen(text), &e);

		FUZZ_CHECK(again != NULL && json_equal(obj, again), "dump does not parse back");
		check_getters(obj);
		json_decref(again);
		free(text);
	}
	json_decref(direct);
	json_decref(obj);
	return 0;
}
