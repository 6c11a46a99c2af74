/* test_kube_ref: kube_ref_scan (the uid, resourceVersion and generation of an apply's
 * answer, read without building the object) agrees with the full parse (jansson, as
 * kube_apply reads it) on every answer it accepts, and refuses what it cannot read for
 * certain (the caller then parses in full). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "providers/kube.h"

/* The reference as the full parser reads it (kube_obj.c:ref_from). */
static void
full(const char *body, struct kube_ref *ref)
{
	json_t *j = json_loads(body, 0, NULL), *md = json_object_get(j, "metadata");
	const char *s;

	memset(ref, 0, sizeof(*ref));
	assert_non_null(j);
	s = json_string_value(json_object_get(md, "uid"));
	snprintf(ref->uid, sizeof(ref->uid), "%s", s ? s : "");
	s = json_string_value(json_object_get(md, "resourceVersion"));
	snprintf(ref->resource_version, sizeof(ref->resource_version), "%s", s ? s : "");
	ref->generation = json_integer_value(json_object_get(md, "generation"));
	json_decref(j);
}

static void
agrees(const char *body)
{
	struct kube_ref a, b;

	if (!kube_ref_scan(body, strlen(body), &a))
		fail_msg("scan refused: %s", body);
	full(body, &b);
	assert_string_equal(a.uid, b.uid);
	assert_string_equal(a.resource_version, b.resource_version);
	assert_int_equal(a.generation, b.generation);
}

static void
test_answers(void **state)
{
	static const char *const ok[] = {
		/* a RayJob as a member answers: metadata after apiVersion and kind, nested
		 * objects, arrays, escapes and brackets inside strings before and after */
		"{\"apiVersion\":\"ray.io/v1\",\"kind\":\"RayJob\",\"metadata\":{\"name\":\"j\","
		"\"namespace\":\"fleet-test-ml\",\"labels\":{\"fleet.io/job-id\":\"x\"},"
		"\"annotations\":{\"a\":\"{not [an] object}\",\"b\":\"q\\\"uote\\\\\"},"
		"\"managedFields\":[{\"manager\":\"fleetd\",\"fieldsV1\":{\"f:spec\":{}}}],"
		"\"uid\":\"3f1c2d4e-aaaa-bbbb-cccc-0123456789ab\",\"resourceVersion\":\"12345\","
		"\"generation\":3,\"creationTimestamp\":null},\"spec\":{\"entrypoint\":"
		"\"python -c \\\"print('}')\\\"\",\"x\":[1,2.5,-3e2,true,false,null,[],{}]},"
		"\"status\":{}}",
		/* whitespace everywhere, metadata last, no generation */
		" {\n \"spec\" : { \"a\" : [ 1 , 2 ] } ,\n \"metadata\" : {\n  \"uid\" : \"u1\" ,"
		" \"resourceVersion\" : \"7\" } \n} \n",
		/* no uid nor resourceVersion: empty, as the full parse leaves them */
		"{\"metadata\":{\"name\":\"n\"}}",
		"{\"metadata\":{}}",
		"{\"metadata\":{\"generation\":-1,\"uid\":\"\"}}",
	};

	(void)state;
	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++)
		agrees(ok[i]);
}

static void
test_refused(void **state)
{
	static const char *const bad[] = {
		"",
		"[]",
		"{\"kind\":\"Status\"}",				/* no metadata */
		"{\"metadata\":null}",
		"{\"metadata\":{\"uid\":\"u\"}",			/* cut short */
		"{\"metadata\":{\"uid\":\"u\"}} trailing",
		"{\"metadata\":{\"uid\":\"u\\u0041\"}}",		/* escaped: parse in full */
		"{\"metadata\":{\"uid\":42}}",
		"{\"metadata\":{\"generation\":1.5}}",
		"{\"metadata\":{\"generation\":\"2\"}}",
		"{\"metadata\":{\"uid\":\"a\"},\"metadata\":{\"uid\":\"b\"}}",	/* twice */
		"{\"metadata\":{\"uid\":\"u\",\"labels\":{\"a\":\"b\"}}",
		"{\"a\":\"unterminated}",
	};
	struct kube_ref r;

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		memset(&r, 0x5a, sizeof(r));
		if (kube_ref_scan(bad[i], strlen(bad[i]), &r))
			fail_msg("scan accepted: %s", bad[i]);
		assert_string_equal(r.uid, "");
		assert_string_equal(r.resource_version, "");
		assert_int_equal(r.generation, 0);
	}
	assert_false(kube_ref_scan(NULL, 0, &r));
}

/* Every prefix of a good answer is refused or read exactly as the full parse reads the
 * whole: a cut answer never yields a wrong reference. */
static void
test_prefixes(void **state)
{
	const char *body = "{\"apiVersion\":\"v1\",\"metadata\":{\"labels\":{\"k\":\"v}\"},"
	    "\"uid\":\"u-1\",\"resourceVersion\":\"99\",\"generation\":12},\"spec\":{\"a\":[\"]\"]}}";
	struct kube_ref r;
	size_t n = strlen(body);

	(void)state;
	for (size_t i = 0; i < n; i++)
		assert_false(kube_ref_scan(body, i, &r));
	agrees(body);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_answers),
		cmocka_unit_test(test_refused),
		cmocka_unit_test(test_prefixes),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
