/* test_fleetctl_scripted: the fleetctl binary against a scripted fake fleetd (libmicrohttpd
 * in this process) for what needs exact answers in turn — drain's progress and its
 * failures, the jobs commands' requests (method, path, token, Idempotency-Key, body).
 * The binary against a live fleetd: test_fleetctl. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <microhttpd.h>

#include "tests/harness/harness.h"

#define FIX	"tests/fixtures/fleetctl/"

struct fake_route {
	const char	*method;
	const char	*uri;		/* path and query, exact */
	int		 status;
	const char	*bodies[4];	/* answered in turn, the last one repeating */
	int		 hits;
};

struct fake_seen {
	char	 method[8];
	char	 uri[512];
	char	 auth[160];
	char	 idem[80];
	char	 ctype[64];
	char	*body;
};

static struct {
	struct MHD_Daemon	*d;
	char			 url[64];
	struct fake_route	*routes;
	struct fake_seen	 seen[32];
	int			 nseen;
	pthread_mutex_t		 mu;
} fake = { .mu = PTHREAD_MUTEX_INITIALIZER };

struct fake_req {
	char	 uri[512];
	char	*body;
	size_t	 n;
	bool	 started;
};

static void *
fake_uri(void *cls, const char *uri, struct MHD_Connection *con)
{
	struct fake_req *r = calloc(1, sizeof(*r));

	(void)cls;
	(void)con;
	snprintf(r->uri, sizeof(r->uri), "%s", uri);
	return r;
}

static void
fake_done(void *cls, struct MHD_Connection *con, void **req_cls,
	  enum MHD_RequestTerminationCode toe)
{
	struct fake_req *r = *req_cls;

	(void)cls;
	(void)con;
	(void)toe;
	if (r != NULL)
		free(r->body);
	free(r);
}

static void
fake_record(struct MHD_Connection *con, const char *method, struct fake_req *r)
{
	const char *h;
	struct fake_seen *s;

	if (fake.nseen >= 32)
		return;
	s = &fake.seen[fake.nseen++];
	snprintf(s->method, sizeof(s->method), "%s", method);
	snprintf(s->uri, sizeof(s->uri), "%s", r->uri);
	h = MHD_lookup_connection_value(con, MHD_HEADER_KIND, "Authorization");
	snprintf(s->auth, sizeof(s->auth), "%s", h ? h : "");
	h = MHD_lookup_connection_value(con, MHD_HEADER_KIND, "Idempotency-Key");
	snprintf(s->idem, sizeof(s->idem), "%s", h ? h : "");
	h = MHD_lookup_connection_value(con, MHD_HEADER_KIND, "Content-Type");
	snprintf(s->ctype, sizeof(s->ctype), "%s", h ? h : "");
	s->body = r->body != NULL ? strndup(r->body, r->n) : NULL;
}

static enum MHD_Result
fake_handler(void *cls, struct MHD_Connection *con, const char *url, const char *method,
	     const char *version, const char *data, size_t *size, void **req_cls)
{
	struct fake_req *r = *req_cls;
	const char *body = "{\"title\":\"no such route\",\"status\":404,\"code\":\"fake.no_route\"}";
	struct MHD_Response *resp;
	enum MHD_Result ok;
	int status = 404;

	(void)cls;
	(void)url;
	(void)version;
	if (!r->started) {
		r->started = true;
		return MHD_YES;
	}
	if (*size > 0) {
		r->body = realloc(r->body, r->n + *size + 1);
		memcpy(r->body + r->n, data, *size);
		r->n += *size;
		*size = 0;
		return MHD_YES;
	}
	pthread_mutex_lock(&fake.mu);
	fake_record(con, method, r);
	for (struct fake_route *f = fake.routes; f != NULL && f->method != NULL; f++) {
		if (strcmp(f->method, method) != 0 || strcmp(f->uri, r->uri) != 0)
			continue;
		status = f->status;
		body = f->bodies[0];
		for (int k = 1; k <= f->hits && k < 4 && f->bodies[k] != NULL; k++)
			body = f->bodies[k];
		f->hits++;
		break;
	}
	pthread_mutex_unlock(&fake.mu);
	resp = MHD_create_response_from_buffer(strlen(body), (void *)body, MHD_RESPMEM_MUST_COPY);
	MHD_add_response_header(resp, "Content-Type", body[0] != '{' ? "text/plain" :
	    status >= 400 ? "application/problem+json" : "application/json");
	ok = MHD_queue_response(con, (unsigned)status, resp);
	MHD_destroy_response(resp);
	return ok;
}

static void
fake_start(struct fake_route *routes)
{
	int port = harness_free_port();

	fake.routes = routes;
	fake.nseen = 0;
	fake.d = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_ERROR_LOG,
	    (uint16_t)port, NULL, NULL, fake_handler, NULL,
	    MHD_OPTION_URI_LOG_CALLBACK, fake_uri, NULL,
	    MHD_OPTION_NOTIFY_COMPLETED, fake_done, NULL, MHD_OPTION_END);
	assert_non_null(fake.d);
	snprintf(fake.url, sizeof(fake.url), "http://127.0.0.1:%d", port);
}

static void
fake_stop(void)
{
	MHD_stop_daemon(fake.d);
	fake.d = NULL;
	for (int i = 0; i < fake.nseen; i++)
		free(fake.seen[i].body);
	fake.nseen = 0;
}

/* fleetctl against the fake, token "fake-token", polling every 10 ms. */
static void
fake_ctl(struct harness_ctl *r, const char *in, const char *const *args)
{
	char envu[96];
	const char *env[] = { envu, "FLEET_TOKEN=fake-token", "FLEETCTL_POLL_MS=10",
	    "COLUMNS=100", NULL };

	snprintf(envu, sizeof(envu), "FLEET_URL=%s", fake.url);
	harness_ctl_run(r, in, env, args);
}

#define FAKE(r, ...) fake_ctl((r), NULL, (const char *const[]){ __VA_ARGS__, NULL })

static int
fake_count(const char *method, const char *uri)
{
	int n = 0;

	for (int i = 0; i < fake.nseen; i++)
		n += strcmp(fake.seen[i].method, method) == 0 && strcmp(fake.seen[i].uri, uri) == 0;
	return n;
}

#define R(method, uri, status, ...) { method, uri, status, { __VA_ARGS__ }, 0 }
#define OP(id, st, total, moved, waiting, failed, failures) \
	"{\"id\":\"" id "\",\"state\":\"" st "\",\"total\":" #total ",\"moved\":" #moved \
	",\"waiting\":" #waiting ",\"failed\":" #failed ",\"failures\":" failures "}"

static void
test_fake_drain(void **state)
{
	struct fake_route routes[] = {
		R("POST", "/v1/clusters/c%201/drain", 202, OP("op1", "running", 4, 0, 4, 0, "[]")),
		R("GET", "/v1/operations/op1", 200, OP("op1", "running", 4, 2, 2, 0, "[]"),
		    OP("op1", "running", 4, 3, 1, 0, "[]"), OP("op1", "succeeded", 4, 4, 0, 0, "[]")),
		R("POST", "/v1/regions/prod/us-east1/drain", 202, OP("op2", "running", 2, 0, 2, 0,
		    "[]")),
		R("GET", "/v1/operations/op2", 200, OP("op2", "succeeded", 2, 1, 0, 1,
		    "[{\"job_id\":\"j-7\",\"reason\":\"no capacity in us-west1\"}]")),
		{ NULL, NULL, 0, { NULL }, 0 },
	};
	struct harness_ctl r;

	(void)state;
	fake_start(routes);
	FAKE(&r, "clusters", "drain", "c 1", "--wait");
	assert_int_equal(r.rc, 0);
	assert_string_equal(r.out, "");
	assert_string_equal(r.err,
	    "[..............................]   0%  0/4 moved, 4 waiting, 0 failed  (running)\n"
	    "[###############...............]  50%  2/4 moved, 2 waiting, 0 failed  (running)\n"
	    "[######################........]  75%  3/4 moved, 1 waiting, 0 failed  (running)\n"
	    "[##############################] 100%  4/4 moved, 0 waiting, 0 failed  (succeeded)\n");
	assert_int_equal(fake_count("GET", "/v1/operations/op1"), 3);
	assert_string_equal(fake.seen[0].auth, "Bearer fake-token");
	assert_int_equal(strlen(fake.seen[0].idem), 32);
	assert_string_equal(fake.seen[0].ctype, "application/json");
	harness_ctl_free(&r);

	FAKE(&r, "regions", "drain", "prod", "us-east1", "--wait", "-o", "json");
	assert_int_equal(r.rc, 1);
	assert_non_null(strstr(r.err, "failures:\nJOB  REASON\nj-7  no capacity in us-west1\n"));
	assert_non_null(strstr(r.err, "fleetctl: operation op2 ended succeeded with 1 failed\n"));
	{
		json_t *j = json_loads(r.out, 0, NULL);

		assert_non_null(j);
		assert_int_equal(json_integer_value(json_object_get(j, "failed")), 1);
		json_decref(j);
	}
	harness_ctl_free(&r);

	FAKE(&r, "regions", "drain", "prod", "us-east1");
	assert_int_equal(r.rc, 0);
	assert_string_equal(r.out, "operation op2 running: 2 jobs to move\n"
	    "follow it with: fleetctl operations get op2 --wait\n");
	harness_ctl_free(&r);
	fake_stop();
}

static void
test_fake_jobs(void **state)
{
	char *explain = harness_slurp(FIX "explain_admitted.json");
	char *want = harness_slurp(FIX "explain_admitted.txt");
	char *plan = harness_slurp(FIX "plan.json"), *plan_txt = harness_slurp(FIX "plan.txt");
	char moved[4096];
	struct fake_route routes[] = {
		R("GET", "/v1/jobs?state=running&queue=q%201&limit=2", 200, "{\"items\":["
		    "{\"id\":\"j1\",\"state\":\"running\"},{\"id\":\"j2\",\"state\":\"running\"}],"
		    "\"next\":\"/v1/jobs?limit=2&after=Y3Vy\"}"),
		R("GET", "/v1/jobs?state=running&queue=q%201&limit=2&after=Y3Vy", 200,
		    "{\"items\":[{\"id\":\"j3\",\"state\":\"running\"}],\"next\":null}"),
		R("GET", "/v1/jobs/j1/placement", 200, explain),
		R("GET", "/v1/jobs/j1/manifest", 200, "{\"apiVersion\":\"ray.io/v1\","
		    "\"kind\":\"RayJob\"}"),
		R("POST", "/v1/jobs/j1/move", 200, plan),
		R("POST", "/v1/jobs/j2/move", 202, moved),
		R("GET", "/v1/jobs/j2", 200, "{\"id\":\"j2\",\"state\":\"moving\"}",
		    "{\"id\":\"j2\",\"state\":\"pending\"}", "{\"id\":\"j2\",\"state\":\"pending\"}",
		    "{\"id\":\"j2\",\"state\":\"running\"}"),
		R("POST", "/v1/jobs/j3/move", 409, "{\"title\":\"the target cannot hold the job; "
		    "nothing changed\",\"status\":409,\"code\":\"move.no_capacity\",\"detail\":"
		    "\"2 candidate clusters in the target, none fits (see reasons).\",\"errors\":["
		    "{\"pointer\":\"/target\",\"cluster\":\"k1\",\"region\":\"r\",\"detail\":"
		    "\"insufficient_accelerators\"},{\"pointer\":\"/target\",\"cluster\":\"k2\","
		    "\"region\":\"r\",\"detail\":\"cordoned\"}]}"),
		R("POST", "/v1/jobs/j1/cancel", 200, "{\"id\":\"j1\",\"state\":\"cancelled\"}"),
		R("POST", "/v1/jobs", 400, "{\"title\":\"invalid job spec\",\"status\":400,"
		    "\"detail\":\"the spec has 1 error\",\"code\":\"job.bad_spec\",\"errors\":"
		    "[{\"pointer\":\"/workers/0/gpus\",\"detail\":\"must be positive\"}]}"),
		R("POST", "/v1/clusters/c1/cordon", 200, "{\"id\":\"c1\",\"name\":\"gke-1\"}"),
		R("GET", "/v1/queues?limit=100", 502, "bad gateway"),
		{ NULL, NULL, 0, { NULL }, 0 },
	};
	struct harness_ctl r;
	json_t *j;

	(void)state;
	snprintf(moved, sizeof(moved), "{\"plan\":%s,\"job\":{\"id\":\"j2\",\"state\":"
	    "\"moving\"}}", plan);
	fake_start(routes);
	{
		char envu[96];
		const char *env[] = { envu, "FLEET_TOKEN=fake-token", "FLEETCTL_PAGE_SIZE=2", NULL };

		snprintf(envu, sizeof(envu), "FLEET_URL=%s", fake.url);
		harness_ctl_run(&r, NULL, env, (const char *const[]){ "jobs", "ls", "--state", "running",
		    "--queue", "q 1", "--all", NULL });
	}
	assert_int_equal(r.rc, 0);
	assert_true(strncmp(r.out, "ID  NAME", 8) == 0);
	assert_non_null(strstr(r.out, "\nj3 "));
	harness_ctl_free(&r);

	FAKE(&r, "jobs", "explain", "j1");
	assert_int_equal(r.rc, 0);
	assert_string_equal(r.out, want);
	harness_ctl_free(&r);
	FAKE(&r, "jobs", "manifest", "j1");
	j = json_loads(r.out, 0, NULL);
	assert_string_equal(json_string_value(json_object_get(j, "kind")), "RayJob");
	json_decref(j);
	harness_ctl_free(&r);

	FAKE(&r, "jobs", "move", "j1", "--region", "westeurope", "--dry-run", "--reason", "az down");
	assert_int_equal(r.rc, 0);
	assert_string_equal(r.out, plan_txt);
	j = json_loads(fake.seen[fake.nseen - 1].body, 0, NULL);
	assert_string_equal(json_string_value(harness_jp(j, "target.region")), "westeurope");
	assert_true(json_is_true(json_object_get(j, "dry_run")));
	assert_string_equal(json_string_value(json_object_get(j, "reason")), "az down");
	json_decref(j);
	harness_ctl_free(&r);
	FAKE(&r, "jobs", "move", "j2", "--cluster", "c9", "--wait");
	assert_int_equal(r.rc, 0);
	assert_true(strncmp(r.out, "job j2 is moving (moving)\nJob:", 30) == 0);
	assert_string_equal(r.err, "job j2: moving\njob j2: pending\njob j2: running\n");
	harness_ctl_free(&r);
	FAKE(&r, "jobs", "move", "j3", "--region", "r");
	harness_ctl_one_line(&r, 1, "fleetctl: the target cannot hold the job; nothing changed: "
	    "2 candidate clusters in the target, none fits (see reasons).; "
	    "k1: insufficient_accelerators; k2: cordoned (move.no_capacity)\n", NULL);
	harness_ctl_free(&r);

	FAKE(&r, "jobs", "cancel", "j1");
	assert_string_equal(r.out, "job j1: cancelled\n");
	harness_ctl_free(&r);
	FAKE(&r, "clusters", "cordon", "c1");
	assert_string_equal(r.out, "cluster gke-1 cordoned: no new placements\n");
	harness_ctl_free(&r);
	fake_ctl(&r, "{\"name\":\"x\"}", (const char *const[]){ "jobs", "submit", "-f", "-",
	    NULL });
	harness_ctl_one_line(&r, 1, "fleetctl: invalid job spec: the spec has 1 error; "
	    "/workers/0/gpus: must be positive (job.bad_spec)\n", NULL);
	assert_string_equal(fake.seen[fake.nseen - 1].body, "{\"name\":\"x\"}");
	harness_ctl_free(&r);
	FAKE(&r, "queues", "ls");
	harness_ctl_one_line(&r, 1, "fleetctl: server answered 502: bad gateway\n", NULL);
	assert_int_equal(fake_count("GET", "/v1/queues?limit=100"), 2);	/* retried once */
	harness_ctl_free(&r);
	fake_stop();
	free(explain);
	free(want);
	free(plan);
	free(plan_txt);
}

static int
setup(void **state)
{
	(void)state;
	harness_ctl_home_make();
	harness_secret("fake-token");
	return 0;
}

static int
teardown(void **state)
{
	(void)state;
	harness_ctl_home_drop();
	harness_done();
	return 0;
}

int
main(void)
{
	const struct CMUnitTest scripted[] = {
		cmocka_unit_test(test_fake_drain),
		cmocka_unit_test(test_fake_jobs),
	};

	return cmocka_run_group_tests_name("fleetctl scripted", scripted, setup, teardown);
}
