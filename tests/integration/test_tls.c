/* test_tls: `fleetd serve` with --tls-cert/--tls-key (FLEETD_TLS_CERT/KEY) serves HTTPS;
 * a subset of the API runs over it with libcurl verifying a fresh self-signed certificate. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <curl/curl.h>

#include "tests/integration/harness.h"

static struct fleetd_proc fd;
static char dburl[512];
static char dir[64];		/* scratch folder with the certificates */
static char cert[128], key[128], other_cert[128];
static char base[64];		/* https://127.0.0.1:PORT */
static char *admin;

struct buf {
	char	*p;
	size_t	 n;
};

static size_t
on_data(char *ptr, size_t size, size_t nmemb, void *ud)
{
	struct buf *b = ud;
	size_t n = size * nmemb;
	char *q = realloc(b->p, b->n + n + 1);

	if (q == NULL)
		return 0;
	b->p = q;
	memcpy(b->p + b->n, ptr, n);
	b->n += n;
	b->p[b->n] = '\0';
	return n;
}

/* One HTTPS call verified against ca (NULL: no CA given, libcurl's default store).
 * Returns the status (0 when no answer) and the parsed body in *json (may be NULL). */
static long
https(const char *method, const char *path, const char *ca, const char *token,
      const char *body, json_t **json, CURLcode *rc_out)
{
	CURL *c = curl_easy_init();
	struct curl_slist *h = NULL;
	struct buf b = { 0 };
	char u[256], auth[512];
	long status = 0;
	CURLcode rc;

	snprintf(u, sizeof(u), "%s%s", base, path);
	curl_easy_setopt(c, CURLOPT_URL, u);
	curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
	curl_easy_setopt(c, CURLOPT_TIMEOUT, 20L);
	curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(c, CURLOPT_SSL_VERIFYPEER, 1L);
	curl_easy_setopt(c, CURLOPT_SSL_VERIFYHOST, 2L);
	if (ca != NULL)
		curl_easy_setopt(c, CURLOPT_CAINFO, ca);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_data);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, &b);
	if (token != NULL) {
		snprintf(auth, sizeof(auth), "Authorization: Bearer %s", token);
		h = curl_slist_append(h, auth);
	}
	if (body != NULL) {
		h = curl_slist_append(h, "Content-Type: application/json");
		curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
		curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE, (long)strlen(body));
	}
	h = curl_slist_append(h, "Expect:");
	curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
	rc = curl_easy_perform(c);
	if (rc == CURLE_OK)
		curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
	if (rc_out != NULL)
		*rc_out = rc;
	if (json != NULL)
		*json = b.p ? json_loads(b.p, 0, NULL) : NULL;
	free(b.p);
	curl_slist_free_all(h);
	curl_easy_cleanup(c);
	return status;
}

/* The harness polls plain HTTP, so TLS fleetd is started here the same way. */
static void
start_tls_fleetd(void)
{
	char listen[64];

	memset(&fd, 0, sizeof(fd));
	fd.port = harness_free_port();
	snprintf(fd.url, sizeof(fd.url), "http://127.0.0.1:%d", fd.port);
	snprintf(base, sizeof(base), "https://127.0.0.1:%d", fd.port);
	snprintf(fd.log, sizeof(fd.log), "%s/fleetd.log", dir);
	snprintf(fd.dburl, sizeof(fd.dburl), "%s", dburl);
	snprintf(listen, sizeof(listen), "127.0.0.1:%d", fd.port);
	fd.pid = fork();
	assert_true(fd.pid >= 0);
	if (fd.pid == 0) {
		int lfd = open(fd.log, O_WRONLY | O_CREAT | O_TRUNC, 0600);

		dup2(lfd, 1);
		dup2(lfd, 2);
		setenv("DATABASE_URL", dburl, 1);
		setenv("FLEETD_LISTEN", listen, 1);
		setenv("FLEETD_LOG_LEVEL", "info", 1);
		setenv("FLEETD_MIGRATIONS_DIR", FLEETD_SOURCE_DIR "/migrations", 1);
		setenv("FLEETD_OPENAPI", FLEETD_SOURCE_DIR "/api/openapi.yaml", 1);
		execl(FLEETD_BINARY_DIR "/fleetd", "fleetd", "serve", "--migrate", "--tls-cert",
		    cert, "--tls-key", key, (char *)NULL);
		_exit(127);
	}
	for (int i = 0; i < 300; i++) {
		int st;

		if (waitpid(fd.pid, &st, WNOHANG) == fd.pid) {
			char *log = harness_slurp(fd.log);

			fd.pid = 0;
			fail_msg("fleetd with tls exited at start:\n%s", log ? log : "");
		}
		if (https("GET", "/healthz", cert, NULL, NULL, NULL, NULL) == 200)
			return;
		usleep(50 * 1000);
	}
	fail_msg("fleetd did not answer https://127.0.0.1:%d/healthz", fd.port);
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
	start_tls_fleetd();
	admin = harness_token(dburl, "admin", "*");
	return 0;
}

static int
teardown(void **state)
{
	(void)state;
	if (fd.pid > 0)
		assert_int_equal(harness_fleetd_stop(&fd), 0);
	if (dburl[0] != '\0')
		harness_db_drop(dburl);
	free(admin);
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
	CURLcode rc;

	(void)state;
	assert_int_equal(https("GET", "/healthz", other_cert, NULL, NULL, NULL, &rc), 0);
	assert_true(rc == CURLE_PEER_FAILED_VERIFICATION || rc == CURLE_SSL_CACERT);
	assert_int_equal(https("GET", "/healthz", NULL, NULL, NULL, NULL, &rc), 0);
	assert_int_not_equal(rc, CURLE_OK);
	harness_http(&r, "GET", fd.url, NULL, NULL, NULL);	/* http:// to the tls port */
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
