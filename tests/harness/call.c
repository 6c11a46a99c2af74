/* call: calls to the fleetd under test with the answer kept in harness_r, problem+json
 * checks, planted secrets, SQL on the scratch database, time and JSON paths. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <libpq-fe.h>

#include "tests/harness/harness.h"

#define MAX_SECRETS	32

struct http_result harness_r;

static char target[64];			/* base URL of the fleetd harness_call talks to */
static char target_ca[256];		/* its certificate when it serves HTTPS */
static char target_log[256];		/* its log, for failure messages */
static char *secrets[MAX_SECRETS];
static int nsecrets;
static char dbu[512];			/* database of harness_sql* */
static PGconn *pg;

void
harness_call_to(const struct fleetd_proc *p)
{
	snprintf(target, sizeof(target), "%s", p->url);
	snprintf(target_ca, sizeof(target_ca), "%s", p->ca);
	snprintf(target_log, sizeof(target_log), "%s", p->log);
}

const char *
harness_log(void)
{
	return target_log;
}

const char *
harness_url(const struct fleetd_proc *p, const char *fmt, ...)
{
	static __thread char buf[4][2048];
	static __thread int i;
	va_list ap;
	int n;

	i = (i + 1) % 4;
	n = snprintf(buf[i], sizeof(buf[i]), "%s", p != NULL ? p->url : target);
	va_start(ap, fmt);
	vsnprintf(buf[i] + n, sizeof(buf[i]) - (size_t)n, fmt, ap);
	va_end(ap);
	return buf[i];
}

double
harness_metric(const char *sample)
{
	char key[256];
	const char *p;

	snprintf(key, sizeof(key), "\n%s", sample);	/* a sample line, not its # HELP */
	harness_call("GET", harness_metrics_token(), NULL, "/metrics");
	p = harness_r.body != NULL ? strstr(harness_r.body, key) : NULL;
	return p != NULL ? atof(p + strlen(key)) : -1;
}

static long
vcall(const char *method, const char *token, const char *body, const char *const *headers,
      const char *fmt, va_list ap)
{
	char url[2048];
	int n;

	if (target[0] == '\0')
		fail_msg("harness_call before harness_fleetd_start");
	harness_http_free(&harness_r);
	n = snprintf(url, sizeof(url), "%s", target);
	vsnprintf(url + n, sizeof(url) - (size_t)n, fmt, ap);
	harness_https(&harness_r, method, url, token, target_ca[0] ? target_ca : NULL, body,
	    headers);
	for (int i = 0; i < nsecrets; i++)
		if (strstr(harness_r.body, secrets[i]) != NULL ||
		    strstr(harness_r.headers, secrets[i]) != NULL)
			fail_msg("%s %s leaked a planted secret: %s", method, url, harness_r.body);
	return harness_r.status;
}

void
harness_secret_check(const char *what, const char *text)
{
	for (int i = 0; text != NULL && i < nsecrets; i++)
		if (strstr(text, secrets[i]) != NULL)
			fail_msg("%s printed a planted secret: %s", what, text);
}

long
harness_call(const char *method, const char *token, const char *body, const char *fmt, ...)
{
	va_list ap;
	long st;

	va_start(ap, fmt);
	st = vcall(method, token, body, NULL, fmt, ap);
	va_end(ap);
	return st;
}

long
harness_call_h(const char *method, const char *token, const char *body,
	       const char *const *headers, const char *fmt, ...)
{
	va_list ap;
	long st;

	va_start(ap, fmt);
	st = vcall(method, token, body, headers, fmt, ap);
	va_end(ap);
	return st;
}

long
harness_call_json(const char *method, const char *token, json_t *body, const char *fmt, ...)
{
	char *text = body != NULL ? json_dumps(body, JSON_COMPACT | JSON_ENCODE_ANY) : NULL;
	va_list ap;
	long st;

	va_start(ap, fmt);
	st = vcall(method, token, text, NULL, fmt, ap);
	va_end(ap);
	free(text);
	return st;
}

json_t *
harness_post_created(const char *token, const char *path, const char *body)
{
	if (harness_call("POST", token, body, "%s", path) != 201)
		fail_msg("POST %s %s: want 201, got %ld %s", path, body ? body : "",
		    harness_r.status, harness_r.body);
	return harness_r.json;
}

json_t *
harness_get_ok(const char *token, const char *fmt, ...)
{
	char path[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(path, sizeof(path), fmt, ap);
	va_end(ap);
	if (harness_call("GET", token, NULL, "%s", path) != 200)
		fail_msg("GET %s: want 200, got %ld %s", path, harness_r.status, harness_r.body);
	return harness_r.json;
}

void
harness_expect_status(const struct http_result *r, long status)
{
	if (r == NULL)
		r = &harness_r;
	if (r->status != status)
		fail_msg("want %ld, got %ld: %s", status, r->status, r->body);
}

void
harness_expect_problem(const struct http_result *r, long status, const char *code,
		       const char *pointer)
{
	char *ct;
	const char *got, *ptr;

	if (r == NULL)
		r = &harness_r;
	harness_expect_status(r, status);
	ct = harness_header(r, "Content-Type");
	if (ct == NULL || strcmp(ct, "application/problem+json") != 0) {
		fail_msg("want application/problem+json, got %s: %s", ct ? ct : "(none)",
		    r->body);
	}
	free(ct);
	got = harness_js(r->json, "code");
	if (strcmp(got, code) != 0)
		fail_msg("want code %s, got %s: %s", code, got, r->body);
	if (harness_ji(r->json, "status") != status || harness_js(r->json, "request_id")[0] == 0)
		fail_msg("a problem needs its status and request_id: %s", r->body);
	ptr = harness_js(r->json, "errors.0.pointer");
	if (pointer != NULL && strcmp(ptr, pointer) != 0)
		fail_msg("want pointer %s: %s", pointer, r->body);
}

void
harness_secret(const char *s)
{
	if (nsecrets == MAX_SECRETS)
		fail_msg("more than %d planted secrets", MAX_SECRETS);
	secrets[nsecrets++] = strdup(s);
}

const char *const *
harness_secrets(int *n)
{
	*n = nsecrets;
	return (const char *const *)secrets;
}

void
harness_done(void)
{
	harness_http_free(&harness_r);
	for (int i = 0; i < nsecrets; i++)
		free(secrets[i]);
	nsecrets = 0;
	PQfinish(pg);
	pg = NULL;
}

int
harness_teardown(struct fleetd_proc *fd, const char *dburl, struct harness_cs *cs)
{
	int st = fd != NULL && fd->pid > 0 ? harness_fleetd_stop(fd) : 0;

	if (dburl != NULL && dburl[0] != '\0')
		harness_db_drop(dburl);
	if (cs != NULL)
		harness_cs_stop(cs);
	harness_done();
	harness_validate_responses();
	return st;
}

/* ---- SQL */

void
harness_sql_use(const char *dburl)
{
	PQfinish(pg);
	pg = NULL;
	snprintf(dbu, sizeof(dbu), "%s", dburl);
}

static PGconn *
conn(void)
{
	if (pg != NULL && PQstatus(pg) == CONNECTION_OK)
		return pg;
	PQfinish(pg);
	if (dbu[0] == '\0')
		fail_msg("harness_sql before harness_db_create");
	pg = PQconnectdb(dbu);
	if (PQstatus(pg) != CONNECTION_OK)
		fail_msg("cannot reach %s: %s", dbu, PQerrorMessage(pg));
	return pg;
}

/* Runs q; fails the test unless it succeeds (with rows when rows). */
static PGresult *
run(const char *q, bool rows)
{
	PGresult *r = PQexec(conn(), q);
	ExecStatusType st = PQresultStatus(r);

	if (st != PGRES_TUPLES_OK && (rows || st != PGRES_COMMAND_OK)) {
		char msg[1024];

		snprintf(msg, sizeof(msg), "%s", PQresultErrorMessage(r));
		PQclear(r);
		fail_msg("%s: %s", q, msg);
	}
	return r;
}

void
harness_sql(const char *fmt, ...)
{
	char q[16384];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(q, sizeof(q), fmt, ap);
	va_end(ap);
	PQclear(run(q, false));
}

static char *
vsql_str(const char *fmt, va_list ap)
{
	char q[8192], *v;
	PGresult *r;

	vsnprintf(q, sizeof(q), fmt, ap);
	r = run(q, true);
	if (PQntuples(r) != 1) {
		int n = PQntuples(r);

		PQclear(r);
		fail_msg("%s: want one row, got %d", q, n);
	}
	v = strdup(PQgetvalue(r, 0, 0));
	PQclear(r);
	return v;
}

char *
harness_sql_str(const char *fmt, ...)
{
	va_list ap;
	char *v;

	va_start(ap, fmt);
	v = vsql_str(fmt, ap);
	va_end(ap);
	return v;
}

long
harness_sql_long(const char *fmt, ...)
{
	va_list ap;
	char *v;
	long n;

	va_start(ap, fmt);
	v = vsql_str(fmt, ap);
	va_end(ap);
	n = atol(v);
	free(v);
	return n;
}

char *
harness_sql_params(const char *q, int n, const char *const *params)
{
	PGresult *r = PQexecParams(conn(), q, n, NULL, params, NULL, NULL, 0);
	ExecStatusType st = PQresultStatus(r);
	char *v = NULL;

	if (st != PGRES_TUPLES_OK && st != PGRES_COMMAND_OK) {
		char msg[1024];

		snprintf(msg, sizeof(msg), "%s", PQresultErrorMessage(r));
		PQclear(r);
		fail_msg("%s: %s", q, msg);
	}
	if (st == PGRES_TUPLES_OK && PQntuples(r) > 0 && !PQgetisnull(r, 0, 0))
		v = strdup(PQgetvalue(r, 0, 0));
	PQclear(r);
	return v;
}

PGresult *
harness_sql_result(const char *fmt, ...)
{
	char q[8192];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(q, sizeof(q), fmt, ap);
	va_end(ap);
	return run(q, true);
}

char *
harness_sql_rows(const char *fmt, ...)
{
	char q[8192], *out;
	size_t cap = 4096, n = 0;
	va_list ap;
	PGresult *r;

	va_start(ap, fmt);
	vsnprintf(q, sizeof(q), fmt, ap);
	va_end(ap);
	r = run(q, true);
	out = calloc(1, cap);
	for (int i = 0; out != NULL && i < PQntuples(r); i++)
		for (int k = 0; k < PQnfields(r); k++)
			n += (size_t)snprintf(out + n, n < cap ? cap - n : 0, "%s%s",
			    PQgetvalue(r, i, k), k + 1 < PQnfields(r) ? "|" : ", ");
	PQclear(r);
	return out;
}

long
harness_wait_long(double timeout_s, long want, const char *fmt, ...)
{
	double end = harness_now_s() + timeout_s;
	char q[8192];
	va_list ap;
	long v;

	va_start(ap, fmt);
	vsnprintf(q, sizeof(q), fmt, ap);
	va_end(ap);
	while ((v = harness_sql_long("%s", q)) != want && harness_now_s() < end)
		usleep(50 * 1000);
	return v;
}

/* ---- time */

double
harness_now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

bool
harness_wait(bool (*pred)(void *arg), void *arg, double timeout_s)
{
	double end = harness_now_s() + timeout_s;

	for (;;) {
		if (pred(arg))
			return true;
		if (harness_now_s() > end)
			return false;
		usleep(100 * 1000);
	}
}

/* ---- JSON */

json_t *
harness_jp(json_t *o, const char *path)
{
	char buf[256], *save = NULL, *k;

	snprintf(buf, sizeof(buf), "%s", path);
	for (k = strtok_r(buf, ".", &save); k != NULL && o != NULL; k = strtok_r(NULL, ".", &save))
		o = json_is_array(o) ? json_array_get(o, (size_t)atoi(k)) : json_object_get(o, k);
	return o;
}

const char *
harness_js(json_t *o, const char *path)
{
	const char *s = json_string_value(harness_jp(o, path));

	return s != NULL ? s : "";
}

long long
harness_ji(json_t *o, const char *path)
{
	return json_integer_value(harness_jp(o, path));
}

bool
harness_json_eq(json_t *a, json_t *b)
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
			if (!harness_json_eq(v, json_object_get(b, k)))
				return false;
		return true;
	}
	if (json_is_array(a) && json_is_array(b)) {
		if (json_array_size(a) != json_array_size(b))
			return false;
		json_array_foreach(a, i, v)
			if (!harness_json_eq(v, json_array_get(b, i)))
				return false;
		return true;
	}
	return json_equal(a, b);
}

/* ---- files */

json_t *
harness_json_file(const char *path)
{
	json_error_t je;
	json_t *j = json_load_file(path, 0, &je);

	if (j == NULL)
		fail_msg("%s: %s", path, je.text);
	return j;
}

/* FLEETD_UPDATE_GOLDEN=1 (README; FLEET_UPDATE_GOLDEN, set to anything, is the older name):
 * golden files are rewritten instead of compared. */
static bool
update_golden(void)
{
	const char *v = getenv("FLEETD_UPDATE_GOLDEN");

	return (v != NULL && strcmp(v, "1") == 0) || getenv("FLEET_UPDATE_GOLDEN") != NULL;
}

void
harness_golden(const char *path, const char *got)
{
	char *want;

	assert_non_null(got);
	if (update_golden()) {
		FILE *f = fopen(path, "w");

		assert_non_null(f);
		fputs(got, f);
		fclose(f);
	}
	want = harness_slurp(path);
	if (want == NULL)
		fail_msg("missing golden %s (FLEETD_UPDATE_GOLDEN=1 writes it)", path);
	if (strcmp(want, got) != 0) {
		fprintf(stderr, "--- want %s\n%s--- got\n%s---\n", path, want, got);
		free(want);
		fail_msg("%s differs", path);
	}
	free(want);
}

void
harness_golden_json(const char *path, json_t *got)
{
	char *text = json_dumps(got, JSON_INDENT(2));
	json_error_t je;
	json_t *want;

	assert_non_null(text);
	if (update_golden()) {
		FILE *f = fopen(path, "w");

		if (f == NULL)
			fail_msg("cannot write %s", path);
		fprintf(f, "%s\n", text);
		fclose(f);
	}
	want = json_load_file(path, 0, &je);
	if (want == NULL)
		fail_msg("%s: missing golden file (%s); run with FLEETD_UPDATE_GOLDEN=1", path,
		    je.text);
	if (!json_equal(want, got))
		fail_msg("%s differs from what the test made:\n%s", path, text);
	json_decref(want);
	free(text);
}
