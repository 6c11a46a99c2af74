/* test_webhooks: webhooks for portals against a receiver on 127.0.0.1 — signatures checked
 * with the secret of the creation answer, per-job order through 500s and a timeout, the
 * dead-letter list and replay, both secrets valid during a rotation's grace, delivery
 * across a fleetd restart; roles and bad input on the routes. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <openssl/evp.h>
#include <openssl/hmac.h>

#include "core/jsonx.h"
#include "tests/integration/harness.h"

#define MAXREC	512

static struct fleetd_proc fd;
static char dburl[512];
static char *root, *admin_a, *oper_a, *viewer_a, *admin_b;
static const char *env[] = { "FLEETD_WORKERS=webhooks", "FLEETD_WEBHOOK_INTERVAL_MS=100",
	"FLEETD_WEBHOOK_TIMEOUT_MS=1000", "FLEETD_WEBHOOK_BACKOFF_MS=100",
	"FLEETD_WEBHOOK_BACKOFF_MAX_MS=400", "FLEETD_WEBHOOK_MAX_ATTEMPTS=4",
	"FLEETD_MASTER_KEY=d2ViaG9va3MtdGVzdC1tYXN0ZXIta2V5LTMyLWJ5dGU=", NULL };
static const char *const JOB1 = "d2000000-0000-4000-8000-000000000001";
static const char *const JOB2 = "d2000000-0000-4000-8000-000000000002";
static const char *const JOBB = "d2000000-0000-4000-8000-00000000000b";
static char hook1[40], secret1[80], secret0[80];	/* /hook; secret0: before rotation */

/* ---- the receiver: one thread per connection, answers as the test sets */

struct rec {
	char	 path[32];
	char	 sig[300];
	char	*body;
	int	 answered;	/* HTTP status sent, 0: none (hung up) */
};

static struct {
	int		 fd, port;
	pthread_t	 thr;
	pthread_mutex_t	 mu;
	struct rec	 r[MAXREC];
	int		 n;
	int		 fail500;	/* /hook: this many 500s next */
	int		 hang;		/* /hook: then this many hangs past the client's timeout */
	int		 dead_ok;	/* /dead answers 500 until this is set */
} R = { .mu = PTHREAD_MUTEX_INITIALIZER };

static void *
conn(void *arg)
{
	int c = (int)(intptr_t)arg, status = 200;
	char buf[65536], *hdr_end, *p, *cl;
	size_t len = 0, want;
	struct rec *rec = NULL;

	while ((hdr_end = memmem(buf, len, "\r\n\r\n", 4)) == NULL && len < sizeof(buf) - 1) {
		ssize_t k = recv(c, buf + len, sizeof(buf) - 1 - len, 0);

		if (k <= 0)
			goto out;
		len += (size_t)k;
	}
	if (hdr_end == NULL)
		goto out;
	buf[len] = '\0';
	cl = strcasestr(buf, "\r\ncontent-length:");
	want = (size_t)(hdr_end + 4 - buf) + (cl ? strtoul(cl + 17, NULL, 10) : 0);
	while (len < want && len < sizeof(buf) - 1) {
		ssize_t k = recv(c, buf + len, sizeof(buf) - 1 - len, 0);

		if (k <= 0)
			goto out;
		len += (size_t)k;
	}
	buf[len] = '\0';
	pthread_mutex_lock(&R.mu);
	if (R.n < MAXREC) {
		rec = &R.r[R.n++];
		sscanf(buf, "POST %31s", rec->path);
		if ((p = strcasestr(buf, "\r\nfleet-signature: ")) != NULL)
			sscanf(p + 19, "%299[^\r]", rec->sig);
		rec->body = strdup(hdr_end + 4);
		if (strcmp(rec->path, "/dead") == 0)
			status = R.dead_ok ? 200 : 500;
		else if (R.fail500 > 0 && R.fail500--)
			status = 500;
		else if (R.hang > 0 && R.hang--)
			status = 0;
		rec->answered = status;
	}
	pthread_mutex_unlock(&R.mu);
	if (status == 0) {
		usleep(1800 * 1000);	/* past FLEETD_WEBHOOK_TIMEOUT_MS */
	} else {
		char out[160];
		int n = snprintf(out, sizeof(out), "HTTP/1.1 %d X\r\nContent-Length: 2\r\n"
		    "Connection: close\r\n\r\nok", status);

		send(c, out, (size_t)n, MSG_NOSIGNAL);
	}
out:
	close(c);
	return NULL;
}

static void *
acceptor(void *arg)
{
	(void)arg;
	for (;;) {
		int c = accept(R.fd, NULL, NULL);
		pthread_t t;

		if (c < 0)
			return NULL;
		pthread_create(&t, NULL, conn, (void *)(intptr_t)c);
		pthread_detach(t);
	}
}

static void
receiver_start(void)
{
	struct sockaddr_in a = { .sin_family = AF_INET };
	socklen_t al = sizeof(a);
	int one = 1;

	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	R.fd = socket(AF_INET, SOCK_STREAM, 0);
	setsockopt(R.fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	assert_int_equal(bind(R.fd, (struct sockaddr *)&a, sizeof(a)), 0);
	assert_int_equal(listen(R.fd, 64), 0);
	getsockname(R.fd, (struct sockaddr *)&a, &al);
	R.port = ntohs(a.sin_port);
	pthread_create(&R.thr, NULL, acceptor, NULL);
}

/* ---- checks */

/* Whether sig ("t=..,v1=..[,v1=..]") holds a v1 that is HMAC-SHA256(secret, t "." body). */
static bool
signed_by(const char *sig, const char *body, const char *secret)
{
	unsigned char mac[32];
	unsigned int ml = 0;
	char t[24] = "", hex[65], *msg;
	const char *v;

	if (sscanf(sig, "t=%23[0-9]", t) != 1)
		return false;
	if (asprintf(&msg, "%s.%s", t, body) < 0)
		return false;
	HMAC(EVP_sha256(), secret, (int)strlen(secret), (unsigned char *)msg, strlen(msg), mac,
	    &ml);
	free(msg);
	for (int i = 0; i < 32; i++)
		snprintf(hex + 2 * i, 3, "%02x", mac[i]);
	for (v = sig; (v = strstr(v, "v1=")) != NULL; v += 3)
		if (strncmp(v + 3, hex, 64) == 0)
			return true;
	return false;
}

static int
v1_count(const char *sig)
{
	int n = 0;

	for (const char *v = sig; (v = strstr(v, "v1=")) != NULL; v += 3)
		n++;
	return n;
}

/* Deliveries answered 200 on path whose payload message starts with prefix. */
static int
accepted(const char *path, const char *prefix)
{
	int n = 0;

	pthread_mutex_lock(&R.mu);
	for (int i = 0; i < R.n; i++) {
		json_t *j = R.r[i].answered == 200 && strcmp(R.r[i].path, path) == 0 ?
		    json_loads(R.r[i].body, 0, NULL) : NULL;
		const char *m = json_string_value(json_object_get(j, "message"));

		if (m != NULL && strncmp(m, prefix, strlen(prefix)) == 0)
			n++;
		json_decref(j);
	}
	pthread_mutex_unlock(&R.mu);
	return n;
}

static void
wait_accepted(const char *path, const char *prefix, int want, double timeout_s)
{
	for (int i = 0; i < timeout_s * 20 && accepted(path, prefix) < want; i++)
		usleep(50 * 1000);
	if (accepted(path, prefix) < want)
		fail_msg("%d of %d deliveries of %s* on %s arrived; log %s", accepted(path,
		    prefix), want, prefix, path, harness_log());
}

/* Every /hook delivery of messages prefix is signed by one of the secrets, and per job the
 * accepted messages arrive in order (numbers never go back). */
static void
check_signed_in_order(const char *prefix, const char *s1, const char *s2)
{
	int last[2] = { -1, -1 };

	pthread_mutex_lock(&R.mu);
	for (int i = 0; i < R.n; i++) {
		json_t *j = strcmp(R.r[i].path, "/hook") == 0 ? json_loads(R.r[i].body, 0, NULL) :
		    NULL;
		const char *m = json_string_value(json_object_get(j, "message"));
		const char *job = json_string_value(json_object_get(j, "job_id"));

		if (m != NULL && strncmp(m, prefix, strlen(prefix)) == 0) {
			int k = strcmp(job, JOB1) == 0 ? 0 : 1, num = atoi(m + strlen(prefix));

			assert_string_not_equal(job, JOBB);	/* another environment's job */
			if (!signed_by(R.r[i].sig, R.r[i].body, s1) &&
			    (s2 == NULL || !signed_by(R.r[i].sig, R.r[i].body, s2)))
				fail_msg("delivery %d: signature %s does not verify", i, R.r[i].sig);
			if (R.r[i].answered == 200) {
				if (num < last[k])
					fail_msg("job %d: %s%d after %s%d", k, prefix, num, prefix,
					    last[k]);
				last[k] = num;
			}
		}
		json_decref(j);
	}
	pthread_mutex_unlock(&R.mu);
}

/* n state events per job, messages prefix0..prefix(n-1), interleaved between the jobs of
 * enva and one of envb. */
static void
events(const char *prefix, int n)
{
	for (int i = 0; i < n; i++)
		harness_sql("INSERT INTO job_events (job_id, type, from_state, to_state, message)"
		    " VALUES ('%s', 'state', 'pending', 'running', '%s%d'), ('%s', 'state',"
		    " 'pending', 'running', '%s%d'), ('%s', 'state', 'pending', 'running', '%s%d')",
		    JOB1, prefix, i, JOB2, prefix, i, JOBB, prefix, i);
}

static int
setup(void **state)
{
	(void)state;
	receiver_start();
	harness_db_create("webhooks", dburl, sizeof(dburl));
	harness_fleetd_start(&fd, dburl, env);
	root = harness_keep(harness_token(dburl, "admin", "*"));
	harness_post_created(root, "/v1/environments", "{\"name\":\"enva\"}");
	harness_post_created(root, "/v1/environments", "{\"name\":\"envb\"}");
	admin_a = harness_keep(harness_token(dburl, "admin", "enva"));
	oper_a = harness_keep(harness_token(dburl, "operator", "enva"));
	viewer_a = harness_keep(harness_token(dburl, "viewer", "enva"));
	admin_b = harness_keep(harness_token(dburl, "admin", "envb"));
	harness_sql("INSERT INTO queues (id, name, environment) VALUES"
	    " ('c2000000-0000-4000-8000-00000000000a', 'qa', 'enva'),"
	    " ('c2000000-0000-4000-8000-00000000000b', 'qb', 'envb')");
	harness_sql("INSERT INTO jobs (id, name, environment, queue_id, kind, priority_class,"
	    " priority, spec) VALUES"
	    " ('%s', 'job-1', 'enva', 'c2000000-0000-4000-8000-00000000000a', 'RayJob', 'normal',"
	    "  100, '{}'),"
	    " ('%s', 'job-2', 'enva', 'c2000000-0000-4000-8000-00000000000a', 'RayJob', 'normal',"
	    "  100, '{}'),"
	    " ('%s', 'job-b', 'envb', 'c2000000-0000-4000-8000-00000000000b', 'RayJob', 'normal',"
	    "  100, '{}')", JOB1, JOB2, JOBB);
	return 0;
}

/* ---- tests */

/* Roles, scope and bad input on every route; the secret is in the creation answer only
 * and in no column. */
static void
test_routes(void **state)
{
	char body[256], *id;
	json_t *h;

	(void)state;
	snprintf(body, sizeof(body), "{\"environment\":\"enva\",\"url\":\"http://127.0.0.1:%d"
	    "/hook\",\"types\":[\"*\"]}", R.port);
	assert_int_equal(harness_call("POST", NULL, body, "/v1/webhooks"), 401);
	assert_int_equal(harness_call("POST", viewer_a, body, "/v1/webhooks"), 403);
	assert_int_equal(harness_call("POST", oper_a, body, "/v1/webhooks"), 403);
	harness_call("POST", admin_b, body, "/v1/webhooks");
	harness_expect_problem(NULL, 404, "env.not_found", "/environment");
	harness_call("POST", admin_a, "{\"environment\":\"enva\",\"url\":\"ftp://h.example/x\","
	    "\"types\":[\"*\"]}", "/v1/webhooks");
	harness_expect_problem(NULL, 422, "webhook.bad_url", "/url");
	harness_call("POST", admin_a, "{\"environment\":\"enva\",\"url\":\"http://hooks.example"
	    ".com/x\",\"types\":[\"*\"]}", "/v1/webhooks");
	harness_expect_problem(NULL, 422, "webhook.insecure_url", "/url");
	harness_call("POST", admin_a, "{\"environment\":\"enva\",\"url\":\"https://u:p@hooks."
	    "example.com/x\",\"types\":[\"*\"]}", "/v1/webhooks");
	harness_expect_problem(NULL, 422, "webhook.bad_url", "/url");
	harness_call("POST", admin_a, "{\"environment\":\"enva\",\"url\":\"https://hooks.example"
	    ".com/x\",\"types\":[\"job.failed\",\"job.nope\"]}", "/v1/webhooks");
	harness_expect_problem(NULL, 422, "webhook.unknown_type", "/types/1");

	h = harness_post_created(admin_a, "/v1/webhooks", body);
	snprintf(hook1, sizeof(hook1), "%s", json_string_value(json_object_get(h, "id")));
	snprintf(secret1, sizeof(secret1), "%s", json_string_value(json_object_get(h,
	    "secret")));
	assert_int_equal(strncmp(secret1, "whsec_", 6), 0);
	harness_secret(secret1);	/* no later answer may hold it */
	h = harness_get_ok(viewer_a, "/v1/webhooks/%s", hook1);
	assert_null(json_object_get(h, "secret"));
	h = harness_get_ok(oper_a, "/v1/webhooks?environment=enva");
	assert_int_equal(json_array_size(json_object_get(h, "items")), 1);
	h = harness_get_ok(admin_b, "/v1/webhooks");
	assert_int_equal(json_array_size(json_object_get(h, "items")), 0);
	harness_get_ok(viewer_a, "/v1/webhooks/%s/deliveries?state=dead", hook1);
	assert_int_equal(harness_call("GET", NULL, NULL, "/v1/webhooks/%s", hook1), 401);
	harness_call("GET", admin_b, NULL, "/v1/webhooks/%s", hook1);
	harness_expect_problem(NULL, 404, "webhook.not_found", NULL);
	harness_call("GET", admin_b, NULL, "/v1/webhooks/%s/deliveries", hook1);
	harness_expect_problem(NULL, 404, "webhook.not_found", NULL);
	assert_int_equal(harness_call("DELETE", oper_a, NULL, "/v1/webhooks/%s", hook1), 403);
	assert_int_equal(harness_call("DELETE", viewer_a, NULL, "/v1/webhooks/%s", hook1), 403);
	harness_call("DELETE", admin_b, NULL, "/v1/webhooks/%s", hook1);
	harness_expect_problem(NULL, 404, "webhook.not_found", NULL);
	assert_int_equal(harness_call("POST", oper_a, NULL, "/v1/webhooks/%s/rotate-secret",
	    hook1), 403);
	harness_call("POST", admin_b, NULL, "/v1/webhooks/%s/rotate-secret", hook1);
	harness_expect_problem(NULL, 404, "webhook.not_found", NULL);
	assert_int_equal(harness_call("POST", viewer_a, "{\"from_event\":1}",
	    "/v1/webhooks/%s/replay", hook1), 403);
	harness_call("POST", admin_a, "{\"from_event\":0}", "/v1/webhooks/%s/replay", hook1);
	harness_expect_problem(NULL, 422, "webhook.bad_from_event", "/from_event");
	harness_call("GET", viewer_a, NULL, "/v1/webhooks/%s/deliveries?state=lost", hook1);
	harness_expect_problem(NULL, 400, "webhook.bad_state", "/query/state");
	/* never in clear in a column, nor in the audit log */
	assert_int_equal(harness_sql_long("SELECT count(*) FROM webhooks w WHERE"
	    " strpos(w::text, '%s') > 0", secret1 + 6), 0);
	assert_int_equal(harness_sql_long("SELECT count(*) FROM audit_log a WHERE"
	    " strpos(a::text, '%s') > 0", secret1 + 6), 0);
	assert_int_equal(harness_sql_long("SELECT count(*) FROM audit_log WHERE action ="
	    " 'webhook.create'"), 1);
	/* a second endpoint, created and deleted */
	snprintf(body, sizeof(body), "{\"environment\":\"enva\",\"url\":\"https://[::1]:8443/x\","
	    "\"types\":[\"job.operation\"],\"team\":\"ml\"}");
	h = harness_post_created(admin_a, "/v1/webhooks", body);
	id = strdup(json_string_value(json_object_get(h, "id")));
	assert_string_equal(json_string_value(json_object_get(h, "team")), "ml");
	assert_int_equal(harness_call("DELETE", admin_a, NULL, "/v1/webhooks/%s", id), 204);
	assert_int_equal(harness_call("GET", admin_a, NULL, "/v1/webhooks/%s", id), 404);
	free(id);
}

/* Ten events of two jobs (and one other environment's job) arrive signed, in per-job
 * order, although the receiver answers 500 twice and then hangs past the timeout once. */
static void
test_order_and_retries(void **state)
{
	(void)state;
	pthread_mutex_lock(&R.mu);
	R.fail500 = 2;
	R.hang = 1;
	pthread_mutex_unlock(&R.mu);
	events("o", 5);
	wait_accepted("/hook", "o", 10, 40);
	check_signed_in_order("o", secret1, NULL);
	pthread_mutex_lock(&R.mu);
	assert_int_equal(R.fail500, 0);
	assert_int_equal(R.hang, 0);
	pthread_mutex_unlock(&R.mu);
	assert_int_equal(harness_wait_long(10, 10, "SELECT count(*) FROM webhook_deliveries"
	    " WHERE webhook_id = '%s' AND state = 'delivered' AND payload::jsonb->>'message' LIKE 'o%%'", hook1),
	    10);
	/* the retried ones show their attempts (500s and the timeout) */
	assert_true(harness_sql_long("SELECT max(attempts) FROM webhook_deliveries WHERE"
	    " webhook_id = '%s'", hook1) >= 2);
	assert_true(harness_metric("fleetd_webhook_attempts_total{outcome=\"failed\"} ") >= 3);
	assert_true(harness_metric("fleetd_webhook_attempts_total{outcome=\"delivered\"} ") >= 10);
}

/* A failure (with its class) to an endpoint that always answers 500 is dead after 4
 * attempts and listed; once the endpoint works, replay from its event id delivers it. */
static void
test_dead_letter_and_replay(void **state)
{
	char body[256], *hook2;
	json_t *h, *d;
	long long seq;

	(void)state;
	snprintf(body, sizeof(body), "{\"environment\":\"enva\",\"url\":\"http://localhost:%d"
	    "/dead\",\"types\":[\"job.failed\"]}", R.port);
	h = harness_post_created(admin_a, "/v1/webhooks", body);
	hook2 = strdup(json_string_value(json_object_get(h, "id")));
	harness_secret(json_string_value(json_object_get(h, "secret")));
	harness_sql("INSERT INTO job_events (job_id, type, from_state, to_state, message, data)"
	    " VALUES ('%s', 'state', 'running', 'failed', 'f-oom', '{\"failure_class\":\"oom\"}'),"
	    " ('%s', 'state', 'pending', 'running', 'f-not-subscribed', NULL)", JOB1, JOB2);
	assert_int_equal(harness_wait_long(20, 1, "SELECT count(*) FROM webhook_deliveries"
	    " WHERE webhook_id = '%s' AND state = 'dead'", hook2), 1);
	h = harness_get_ok(viewer_a, "/v1/webhooks/%s/deliveries?state=dead", hook2);
	assert_int_equal(json_array_size(json_object_get(h, "items")), 1);
	d = json_array_get(json_object_get(h, "items"), 0);
	assert_int_equal(json_integer_value(json_object_get(d, "attempts")), 4);
	assert_int_equal(json_integer_value(json_object_get(d, "last_status")), 500);
	assert_string_equal(json_string_value(json_object_get(d, "type")), "job.failed");
	assert_string_equal(jsonx_at(json_object_get(d, "payload"), "failure_class", NULL), "oom");
	seq = json_integer_value(json_object_get(d, "event_id"));
	assert_int_equal(accepted("/dead", "f-"), 0);
	pthread_mutex_lock(&R.mu);
	R.dead_ok = 1;
	pthread_mutex_unlock(&R.mu);
	snprintf(body, sizeof(body), "{\"from_event\":%lld}", seq);
	h = harness_call("POST", admin_a, body, "/v1/webhooks/%s/replay", hook2) == 200 ?
	    harness_r.json : NULL;
	assert_non_null(h);
	assert_int_equal(json_integer_value(json_object_get(h, "cursor")), seq - 1);
	wait_accepted("/dead", "f-oom", 1, 20);
	assert_int_equal(accepted("/dead", "f-not"), 0);	/* not subscribed */
	free(hook2);
}

/* After a rotation both secrets sign (two v1 values) for the grace; with grace 0 only the
 * new one does. */
static void
test_rotation(void **state)
{
	json_t *h;

	(void)state;
	snprintf(secret0, sizeof(secret0), "%s", secret1);
	h = harness_call("POST", admin_a, "{\"grace_seconds\":3600}",
	    "/v1/webhooks/%s/rotate-secret", hook1) == 200 ? harness_r.json : NULL;
	assert_non_null(h);
	snprintf(secret1, sizeof(secret1), "%s", json_string_value(json_object_get(h, "secret")));
	assert_string_not_equal(secret0, secret1);
	assert_non_null(json_string_value(json_object_get(h, "previous_secret_valid_until")));
	harness_secret(secret1);
	events("r", 1);
	wait_accepted("/hook", "r", 2, 20);
	pthread_mutex_lock(&R.mu);
	for (int i = 0; i < R.n; i++) {
		if (strstr(R.r[i].body, "\"r0\"") == NULL)
			continue;
		assert_int_equal(v1_count(R.r[i].sig), 2);
		assert_true(signed_by(R.r[i].sig, R.r[i].body, secret0));
		assert_true(signed_by(R.r[i].sig, R.r[i].body, secret1));
	}
	pthread_mutex_unlock(&R.mu);
	snprintf(secret0, sizeof(secret0), "%s", secret1);
	h = harness_call("POST", admin_a, "{\"grace_seconds\":0}",
	    "/v1/webhooks/%s/rotate-secret", hook1) == 200 ? harness_r.json : NULL;
	assert_non_null(h);
	snprintf(secret1, sizeof(secret1), "%s", json_string_value(json_object_get(h, "secret")));
	harness_secret(secret1);
	events("s", 1);
	wait_accepted("/hook", "s", 2, 20);
	pthread_mutex_lock(&R.mu);
	for (int i = 0; i < R.n; i++) {
		if (strstr(R.r[i].body, "\"s0\"") == NULL)
			continue;
		assert_int_equal(v1_count(R.r[i].sig), 1);
		assert_true(signed_by(R.r[i].sig, R.r[i].body, secret1));
		assert_false(signed_by(R.r[i].sig, R.r[i].body, secret0));
	}
	pthread_mutex_unlock(&R.mu);
}

/* Events written just before fleetd stops and while it is down all arrive after it
 * starts again, in per-job order. */
static void
test_restart(void **state)
{
	(void)state;
	events("x", 3);
	assert_int_equal(harness_fleetd_stop(&fd), 0);
	harness_sql("INSERT INTO job_events (job_id, type, from_state, to_state, message) SELECT"
	    " j, 'state', 'pending', 'running', 'x' || g FROM generate_series(3, 7) g,"
	    " unnest(ARRAY['%s', '%s']::uuid[]) j ORDER BY g", JOB1, JOB2);
	harness_fleetd_start(&fd, dburl, env);
	wait_accepted("/hook", "x", 16, 40);
	check_signed_in_order("x", secret1, NULL);
	assert_int_equal(harness_sql_long("SELECT count(DISTINCT seq) FROM webhook_deliveries"
	    " WHERE webhook_id = '%s' AND state = 'delivered' AND payload::jsonb->>'message' LIKE 'x%%'", hook1),
	    16);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_routes),
		cmocka_unit_test(test_order_and_retries),
		cmocka_unit_test(test_dead_letter_and_replay),
		cmocka_unit_test(test_rotation),
		cmocka_unit_test(test_restart),
	};

	return cmocka_run_group_tests(tests, setup, harness_group_teardown);
}
