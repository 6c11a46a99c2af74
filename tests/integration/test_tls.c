/* test_tls: `fleetd serve` with --tls-cert/--tls-key (FLEETD_TLS_CERT/KEY) serves HTTPS;
 * a subset of the API runs over it with libcurl verifying a fresh self-signed certificate. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <curl/curl.h>

#include "tests/harness/harness.h"

static struct fleetd_proc fd;
static char dburl[512];
static char dir[64];		/* scratch folder with the certificates */
static char cert[128], key[128], other_cert[128];
static char env_cert[160], env_key[160];
static char *admin;

/* One HTTPS call verified against ca (NULL: no CA given, libcurl's default store).
 * Returns the status (0 when no answer) and the parsed body in *json (may be NULL). */
static long
https(const char *method, const char *path, const char *ca, const char *token,
      const char *body, json_t **json, CURLcode *rc_out)
{
	struct http_result r;
	char u[256];
	long status;

	snprintf(u, sizeof(u), "%s%s", fd.url, path);
	harness_https(&r, method, u, token, ca, body, NULL);
	status = r.status;
	if (rc_out != NULL)
		*rc_out = (CURLcode)r.curl_rc;
	if (json != NULL)
		*json = json_incref(r.json);
	harness_http_free(&r);
	return status;
}

static int
setup(void **state)
{
	static const char req[] = "openssl req -x509 -newkey rsa:2048 -nodes -days 1 "
	    "-subj /CN=fleetd-test -addext subjectAltName=IP:127.0.0.1,DNS:localhost";

	(void)state;
	snprintf(dir, sizeof(dir), "/tmp/fleetd-tls-XXXXXX");
	assert_non_null(mkdtemp(dir));
	snprintf(cert, sizeof(cert), "%s/cert.pem", dir);
	snprintf(key, sizeof(key), "%s/key.pem", dir);
	snprintf(other_cert, sizeof(other_cert), "%s/other.pem", dir);
	assert_int_equal(harness_sh("%s -keyout %s -out %s 2>/dev/null", req, key, cert), 0);
	assert_int_equal(harness_sh("%s -keyout %s/other.key -out %s 2>/dev/null", req, dir,
	    other_cert), 0);
	harness_db_create("tls", dburl, sizeof(dburl));
	snprintf(env_cert, sizeof(env_cert), "FLEETD_TLS_CERT=%s", cert);
	snprintf(env_key, sizeof(env_key), "FLEETD_TLS_KEY=%s", key);
	harness_fleetd_start(&fd, dburl, (const char *const[]){ env_cert, env_key,
	    "FLEETD_LOG_LEVEL=info", NULL });
	admin = harness_token(dburl, "admin", "*");
	return 0;
}

static int
teardown(void **state)
{
	(void)state;
	free(admin);
	assert_int_equal(harness_teardown(&fd, dburl, NULL), 0);
	if (dir[0] != '\0')
		harness_sh("rm -rf '%s'", dir);
	return 0;
}

static void
test_health_over_https(void **state)
{
	json_t *j = NULL;

	(void)state;
	assert_int_equal(https("GET", "/healthz", cert, NULL, NULL, &j, NULL), 200);
	json_decref(j);
	assert_int_equal(https("GET", "/readyz", cert, NULL, NULL, &j, NULL), 200);
	json_decref(j);
}

/* Verification is real: another CA, or none, is refused; plain HTTP gets no answer. */
static void
test_certificate_checked(void **state)
{
	struct http_result r;
	char plain[80];
	CURLcode rc;

	(void)state;
	assert_int_equal(https("GET", "/healthz", other_cert, NULL, NULL, NULL, &rc), 0);
	assert_true(rc == CURLE_PEER_FAILED_VERIFICATION || rc == CURLE_SSL_CACERT);
	assert_int_equal(https("GET", "/healthz", NULL, NULL, NULL, NULL, &rc), 0);
	assert_int_not_equal(rc, CURLE_OK);
	snprintf(plain, sizeof(plain), "http://127.0.0.1:%d/healthz", fd.port);
	harness_http(&r, "GET", plain, NULL, NULL, NULL);	/* http:// to the tls port */
	assert_int_not_equal(r.status, 200);
	harness_http_free(&r);
}

static void
test_environments_over_https(void **state)
{
	json_t *j = NULL, *items;
	bool found = false;
	size_t i;
	json_t *it;

	(void)state;
	assert_int_equal(https("POST", "/v1/environments", cert, admin,
	    "{\"name\":\"tls-env\",\"description\":\"over https\"}", &j, NULL), 201);
	assert_string_equal(json_string_value(json_object_get(j, "name")), "tls-env");
	json_decref(j);
	assert_int_equal(https("GET", "/v1/environments", cert, admin, NULL, &j, NULL), 200);
	items = json_object_get(j, "items");
	json_array_foreach(items, i, it)
		found = found || strcmp(json_string_value(json_object_get(it, "name")),
		    "tls-env") == 0;
	assert_true(found);
	json_decref(j);
	assert_int_equal(https("GET", "/v1/environments/tls-env", cert, admin, NULL, &j, NULL),
	    200);
	json_decref(j);
}

static void
test_bad_input_over_https(void **state)
{
	static const struct {
		const char *method, *path, *body, *code;
		bool token;
		long status;
	} cases[] = {
		{ "POST", "/v1/environments", "{\"name\": ", "api.bad_json", true, 400 },
		{ "POST", "/v1/environments", "{\"name\":\"ab\",\"colour\":1}", "api.unknown_field",
		  true, 400 },
		{ "GET", "/v1/environments", NULL, NULL, false, 401 },
		{ "GET", "/v1/environments/%2e%2e/x", NULL, "api.bad_path", true, 400 },
		{ "GET", "/v1/nothing-here", NULL, "api.not_found", true, 404 },
		{ "PATCH", "/v1/environments", NULL, "api.method_not_allowed", true, 405 },
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		json_t *j = NULL;
		long st = https(cases[i].method, cases[i].path, cert, cases[i].token ? admin : NULL,
		    cases[i].body, &j, NULL);

		if (st != cases[i].status)
			fail_msg("%s %s: %ld, want %ld", cases[i].method, cases[i].path, st,
			    cases[i].status);
		if (cases[i].code != NULL)
			assert_string_equal(json_string_value(json_object_get(j, "code")),
			    cases[i].code);
		json_decref(j);
	}
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_health_over_https),
		cmocka_unit_test(test_certificate_checked),
		cmocka_unit_test(test_environments_over_https),
		cmocka_unit_test(test_bad_input_over_https),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
