/* harness: what integration and cloudsim tests share (library fleet_harness) — scratch
 * databases, fleetd and cloudsim processes, a fleet registered through the API, HTTP calls
 * with problem+json checks, SQL and time.  Every function fails the running cmocka test
 * itself on anything unexpected, so a test reads as its cases only.  See CONTRIBUTING.md
 * ("Adding a test") for an example; tests/integration/test_moves.c is a model. */
#ifndef FLEET_TESTS_HARNESS_H
#define FLEET_TESTS_HARNESS_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include <jansson.h>
#include <libpq-fe.h>

#define HARNESS_FMT(a, b)	__attribute__((format(printf, a, b)))

struct fleetd_proc {
	pid_t	pid;
	int	port;
	char	url[64];	/* http://127.0.0.1:PORT */
	char	log[256];	/* its stdout+stderr */
	char	dburl[512];
	char	ca[256];	/* HTTPS: the certificate it serves (a self-signed CA); else "" */
};

struct http_result {
	long	 status;
	char	*body;		/* malloc'd, NUL-terminated */
	size_t	 len;
	char	*headers;	/* malloc'd raw header block */
	json_t	*json;		/* parsed body or NULL */
	int	 curl_rc;	/* CURLcode of the transfer (0: an answer came) */
};

/* Seconds one harness_http/https call may take (30 unless a test changes it). */
extern long harness_http_timeout_s;

/* A cloudsim started by harness_cs_start, and what fleetd needs to talk to it. */
struct harness_cs {
	pid_t	 pid;
	char	 dir[256];	/* state dir: port, fleetd.env, clusters.json, cloudsim.log */
	char	 url[128];	/* http://127.0.0.1:P — /_sim and the provider APIs */
	char	 kube[128];	/* https://127.0.0.1:K — the member clusters, /k8s/<name> */
	char	 ca[300];	/* path of ca.pem (the kube port's CA) */
	char	*ca_pem;	/* its text */
	char	 fleetd_sa[256];	/* fleetd's own GCP service account */
	json_t	*clusters;	/* clusters.json "clusters" */
	char	*env[80];	/* fleetd.env's FLEETD_* lines then harness_cs_env_add's, NULL-ended:
				 * pass (const char *const *)cs.env to harness_fleetd_start */
	int	 nenv;
};

/* ---- databases (the test Postgres of tests/run.sh) */

/* Creates database t_<tag>_<pid>; aborts the test when FLEETD_TEST_DATABASE_URL is unset: a
 * missing database is a failure.  It becomes the database of harness_sql*. */
void	harness_db_create(const char *tag, char *url, size_t urllen);
void	harness_db_drop(const char *url);
/* Starts a Postgres of this test process alone (scripts/pg.sh, in a fresh folder, with the
 * password of tests/run.sh's server so PGPASSFILE serves both); harness_db_create makes its
 * databases there from then on.  For a test that reads the server's clusterwide state
 * (pg_current_snapshot: a commit of another test's database changes it too), since tests run
 * beside each other.  Destroyed when the process exits. */
void	harness_pg_private(void);
/* The folder of the Postgres this test's databases are on (the private one once started,
 * else tests/run.sh's shared server): what `scripts/pg.sh stop|start` takes. */
const char *harness_pg_dir(void);

/* ---- processes */

int	harness_free_port(void);
/* Starts `fleetd serve --migrate` with extra "NAME=value" env entries (NULL-terminated,
 * later ones win); it becomes the fleetd of harness_call.  With FLEETD_TLS_CERT and
 * FLEETD_TLS_KEY among them it serves HTTPS: p->url is https://, and p->ca names the
 * certificate to trust. */
void	harness_fleetd_start(struct fleetd_proc *p, const char *dburl, const char *const *env);
/* The usual start of a test against cloudsim: creates database t_<tag>_* (its URL into
 * dburl) and starts fleetd on it with cs's env, then env's "NAME=value" lines
 * (NULL-terminated, may be NULL; later ones win). */
void	harness_fleetd_cs(struct fleetd_proc *p, char *dburl, size_t urllen, const char *tag,
	    const struct harness_cs *cs, const char *const *env);
/* SIGTERM and wait; returns the exit status. */
int	harness_fleetd_stop(struct fleetd_proc *p);
/* Lifts this process's soft limit of open files to n (as far as the hard limit allows); a
 * fleetd started afterwards inherits it. */
void	harness_raise_nofile(long n);
/* The resident set size of process pid in KiB (/proc/pid/status VmRSS); fails the test when
 * it cannot be read. */
long	harness_rss_kb(pid_t pid);
/* `fleetd token create`; returns malloc'd secret. */
char	*harness_token(const char *dburl, const char *role, const char *envs);
/* The four callers a route is attacked as: an admin of every environment, an operator and a
 * viewer of env, an admin of "other"; their tokens are kept (harness_keep). */
struct harness_roles {
	char	*admin, *oper, *viewer, *other;
};
/* Makes those tokens and creates the environments env and "other" as the admin. */
void	harness_roles(const char *dburl, const char *env, struct harness_roles *r);
/* Runs a shell command, returns its exit status. */
int	harness_sh(const char *fmt, ...) HARNESS_FMT(1, 2);
/* Whole file as a malloc'd string (NULL when missing). */
char	*harness_slurp(const char *path);

/* ---- HTTP */

/* One HTTP call; body may be NULL; extra headers "Name: value" NULL-terminated.  Every
 * answer of a fleetd started by harness_fleetd_start is also recorded, one JSON line
 * {method, path, status, content_type, body}, in the file named by FLEETD_RESPONSE_LOG
 * (appended to), else /tmp/fleetd-responses-<pid>.jsonl (fresh per test process). */
void	harness_http(struct http_result *r, const char *method, const char *url,
	    const char *token, const char *body, const char *const *headers);
/* The same trusting cafile for HTTPS (NULL: the system's CAs). */
void	harness_https(struct http_result *r, const char *method, const char *url,
	    const char *token, const char *cafile, const char *body, const char *const *headers);
void	harness_http_free(struct http_result *r);
/* Header value from r->headers (case-insensitive), malloc'd, or NULL. */
char	*harness_header(const struct http_result *r, const char *name);
/* Validates every recorded response against api/openapi.yaml (tests/openapi/validate.js:
 * route, status, content type, JSON body against the response schema), naming route and
 * field on any mismatch or on a response no operation describes.  Call it last in the group
 * teardown: a failure fails the teardown and, since cmocka 1.1 does not count teardown
 * failures, also makes the test process exit 1.  On success the default record file is
 * removed and recording starts afresh. */
void	harness_validate_responses(void);

/* ---- calls to the fleetd last started (harness_call_to picks another) */

/* The answer of the last harness_call*, kept until the next one (freed by harness_done). */
extern struct http_result harness_r;

/* method path (printf-formatted) with token (NULL: none) and body (NULL: none); returns
 * the status, the answer in harness_r.  Fails the test when an answer carries a planted
 * secret (harness_secret). */
long	harness_call(const char *method, const char *token, const char *body,
	    const char *fmt, ...) HARNESS_FMT(4, 5);
/* The same with extra headers ("Name: value", NULL-terminated). */
long	harness_call_h(const char *method, const char *token, const char *body,
	    const char *const *headers, const char *fmt, ...) HARNESS_FMT(5, 6);
/* The same with a JSON body (borrowed). */
long	harness_call_json(const char *method, const char *token, json_t *body,
	    const char *fmt, ...) HARNESS_FMT(4, 5);
/* Makes harness_call talk to p (the last started otherwise). */
void	harness_call_to(const struct fleetd_proc *p);
/* The log file of that fleetd (for failure messages). */
const char *harness_log(void);
/* p's URL (NULL: that fleetd's) followed by the printf-formatted path; one of four rotating
 * buffers of this thread, valid for the next three calls. */
const char *harness_url(const struct fleetd_proc *p, const char *fmt, ...) HARNESS_FMT(2, 3);
/* The value of the first /metrics sample line starting with sample (the metric name with
 * its labels and the space, e.g. "fleetd_x_total{k=\"v\"} "), -1 when there is none. */
double	harness_metric(const char *sample);
/* The FLEETD_METRICS_TOKEN every fleetd of this test process is started with (random,
 * static storage); /metrics answers 401 without it or a token for every environment. */
const char *harness_metrics_token(void);
/* POST that must answer 201 (a create); returns the answer, borrowed from harness_r (valid
 * until the next call: json_incref it to keep it). */
json_t	*harness_post_created(const char *token, const char *path, const char *body);
/* GET that must answer 200; returns the answer, borrowed from harness_r likewise. */
json_t	*harness_get_ok(const char *token, const char *fmt, ...) HARNESS_FMT(2, 3);
/* Fails unless r (NULL: harness_r) has this status. */
void	harness_expect_status(const struct http_result *r, long status);
/* Fails unless r (NULL: harness_r) is application/problem+json with this status and code,
 * a request_id, and (pointer not NULL) errors[0].pointer equal to pointer. */
void	harness_expect_problem(const struct http_result *r, long status, const char *code,
	    const char *pointer);
/* Plants a secret: any later answer (body or headers) holding it fails the test. */
void	harness_secret(const char *s);
/* Fails the test when text holds a planted secret (what: who printed it). */
void	harness_secret_check(const char *what, const char *text);
/* The secrets planted so far (borrowed, *n of them), to look for them elsewhere (logs,
 * database columns). */
const char *const *harness_secrets(int *n);
/* Frees harness_r, the planted secrets and the SQL connection (call it in teardown). */
void	harness_done(void);
/* A cmocka group teardown for any test file: stops every fleetd the harness started that still
 * runs (failing when one does not exit 0), drops every database it created, stops every
 * cloudsim, frees what the test kept (harness_keep), harness_done, then
 * harness_validate_responses.  cmocka_run_group_tests(tests, setup, harness_group_teardown)
 * and the file needs no teardown of its own. */
int	harness_group_teardown(void **state);
/* Hands p (malloc'd, e.g. a harness_token) to harness_group_teardown to free; returns p. */
void	*harness_keep(void *p);
/* (called by harness_cs_start* and harness_cs_stop: the cloudsims harness_group_teardown
 * stops — one the test stops itself is forgotten, so it may live on the stack) */
void	harness_track_cs(struct harness_cs *cs, bool on);
/* The usual group teardown: stops fd when running, drops dburl (when created), stops cs
 * (NULL: none), harness_done, then harness_validate_responses (last, as it must be).
 * Returns fleetd's exit status (0 when it was not running); the test frees its tokens. */
int	harness_teardown(struct fleetd_proc *fd, const char *dburl, struct harness_cs *cs);

/* ---- SQL on the database last created (harness_sql_use picks another) */

void	harness_sql_use(const char *dburl);
/* Runs q (printf-formatted; tests only), failing the test on error. */
void	harness_sql(const char *fmt, ...) HARNESS_FMT(1, 2);
/* First column of the one row q returns, malloc'd ("" for NULL); fails on != 1 row. */
char	*harness_sql_str(const char *fmt, ...) HARNESS_FMT(1, 2);
long	harness_sql_long(const char *fmt, ...) HARNESS_FMT(1, 2);
/* Parameterized: first column of the first row, malloc'd, or NULL (no row, NULL value). */
char	*harness_sql_params(const char *q, int n, const char *const *params);
/* The whole result of a query that must return rows (the caller PQclears it). */
PGresult *harness_sql_result(const char *fmt, ...) HARNESS_FMT(1, 2);
/* Rows of q as "a|b, c|d" (malloc'd), for failure messages. */
char	*harness_sql_rows(const char *fmt, ...) HARNESS_FMT(1, 2);
/* Polls the number q returns every 50 ms until it equals want or timeout_s passes; returns
 * the last value. */
long	harness_wait_long(double timeout_s, long want, const char *fmt, ...) HARNESS_FMT(3, 4);

/* ---- the audit log (audit.c) */

/* Notes the next audit row the test expects: action on resource id. */
void	harness_audit_expect(const char *action, const char *id);
/* Fails unless audit_log's rows of the resource types types (an SQL list: "'cloud',
 * 'cluster'"), in id order, are exactly the expected ones, each with an environment, an actor
 * name, an actor id and a request id.  Returns the number of rows. */
int	harness_audit_check(const char *types);
/* Rows of /v1/audit (read with token) on resource id with this action. */
long	harness_audit_count(const char *token, const char *id, const char *action);

/* ---- jobs (jobs.c) */

/* GET /v1/jobs/{id}, which must answer 200; new reference. */
json_t	*harness_job(const char *token, const char *id);
/* The job's events, oldest first; new reference. */
json_t	*harness_job_events(const char *token, const char *id);
/* Prints them (type, transition, attempt, message), for failure messages. */
void	harness_job_print_events(const char *token, const char *id);
/* Polls the job every 250 ms until it is in state (at attempt when > 0) and returns it (new
 * reference); fails the test after timeout_s, printing its events and naming fleetd's log. */
json_t	*harness_job_wait(const char *token, const char *id, const char *state, int attempt,
	    double timeout_s);
/* The same over SQL, polled every 50 ms, for a state that may last only a moment; fails the
 * test after timeout_s, printing the job's row and events (the SQL helpers' database). */
void	harness_job_wait_row(const char *id, const char *state, int attempt, double timeout_s);
/* job_events rows (SQL) of job id of type whose data->>'reason' is reason (NULL: any). */
long	harness_job_event_count(const char *id, const char *type, const char *reason);
/* Polls that count every 100 ms until there is one; fails the test after timeout_s. */
void	harness_job_wait_event(const char *id, const char *type, const char *reason,
	    double timeout_s);
/* POST /v1/priority-classes {name, value, preempt (only when true)}, which must answer 201. */
void	harness_pclass(const char *token, const char *name, int value, bool preempt);
/* POST /v1/queues {name, environment env, default_priority_class pclass (NULL: none),
 * nominal_quota {flavor: quota} (flavor NULL: none)}, which must answer 201; returns the
 * answer, borrowed from harness_r. */
json_t	*harness_queue(const char *token, const char *env, const char *name, const char *pclass,
	    const char *flavor, int quota);
/* POST /v1/clusters/{id}/cordon (on) or /uncordon, which must answer 200 and say so. */
void	harness_cordon(const char *token, const char *cluster_id, bool on);
/* Submits (as token; must answer 201) a job of kind (RayJob: an entrypoint; RayService: one
 * serve application; RayCluster) named name in env and queue, priority class pclass, a head
 * of 1 CPU and 2 GiB and one worker of 8 CPUs, 64 GiB and gpus accelerators of flavor;
 * grace >= 0 adds a checkpoint (s3://ckpt/<name>, grace_seconds grace).  Returns its id
 * (malloc'd). */
char	*harness_submit(const char *token, const char *env, const char *queue, const char *kind,
	    const char *name, const char *pclass, const char *flavor, int gpus, int grace);
/* POST /v1/jobs/{id}/move {"target": target (JSON text), "reason", extra members (text, may
 * be NULL)}; returns the status, the answer in harness_r. */
long	harness_move(const char *token, const char *id, const char *target, const char *extra);
/* What a refused or dry move must leave alone: the job's row, the number of its events and
 * job.move audit rows, and every object cloudsim stores (resource versions, apply counts,
 * which survive deletes); new reference.  harness_job_unchanged fails the test (saying what
 * did it) when a new fingerprint differs from before. */
json_t	*harness_job_fingerprint(const struct harness_cs *cs, const char *token, const char *id);
void	harness_job_unchanged(const struct harness_cs *cs, const char *token, json_t *before,
	    const char *id, const char *what);
/* Seconds since the epoch of an RFC 3339 UTC timestamp (fractions kept). */
double	harness_epoch(const char *ts);

/* ---- time */

/* Monotonic seconds. */
double	harness_now_s(void);
/* Polls pred(arg) every 100 ms until it holds (true) or timeout_s passes (false). */
bool	harness_wait(bool (*pred)(void *arg), void *arg, double timeout_s);

/* ---- JSON */

/* o at a dotted path ("iam.required.0.name": numbers index arrays), or NULL. */
json_t	*harness_jp(json_t *o, const char *path);
/* The string at path, "" when absent. */
const char *harness_js(json_t *o, const char *path);
long long harness_ji(json_t *o, const char *path);
/* Equality as a JSON consumer that decodes numbers sees it (Terraform's jsondecode): numbers
 * compare by value (1 == 1.0), objects and arrays member by member. */
bool	harness_json_eq(json_t *a, json_t *b);

/* ---- files */

/* The JSON file at path (new reference); fails the test when it cannot be read. */
json_t	*harness_json_file(const char *path);
/* got must equal the golden file at path; FLEETD_UPDATE_GOLDEN=1 rewrites the file instead. */
void	harness_golden(const char *path, const char *got);
/* The same for JSON: got must equal (json_equal) the JSON file at path; the update writes it
 * indented by 2. */
void	harness_golden_json(const char *path, json_t *got);

/* ---- cloudsim */

/* cloudsim/fleets/test.json with its key files made absolute: edit it and pass it to
 * harness_cs_start_json.  New reference. */
json_t	*harness_fleet_json(void);
/* Starts cloudsim on free ports in a fresh state dir with the fleet file (NULL: the test
 * fleet) at time_scale (NULL: 1), and reads what it wrote; fails the test when it does
 * not come up.  FLEETD_MASTER_KEY is among cs->env. */
void	harness_cs_start(struct harness_cs *cs, const char *fleet, const char *time_scale);
/* The same with a fleet given as JSON (borrowed; written into the state dir). */
void	harness_cs_start_json(struct harness_cs *cs, json_t *fleet, const char *time_scale);
/* Adds (or replaces) one "NAME=value" entry of cs->env. */
void	harness_cs_env_add(struct harness_cs *cs, const char *fmt, ...) HARNESS_FMT(2, 3);
/* The value of NAME in cs->env, or NULL. */
const char *harness_cs_env(const struct harness_cs *cs, const char *name);
/* Sets cs->env but FLEETD_MASTER_KEY into this process's fleetd config (config_set), for
 * tests that call the drivers or the poller in-process instead of running fleetd. */
void	harness_cs_config(const struct harness_cs *cs);
/* SIGTERM, wait, remove the state dir, free; safe on a cloudsim never started. */
void	harness_cs_stop(struct harness_cs *cs);
/* clusters.json's entry name (borrowed); fails the test when there is none. */
json_t	*harness_cs_cluster(const struct harness_cs *cs, const char *name);
/* One call to cloudsim's HTTP port; returns the status, *out (optional) the JSON answer. */
long	harness_sim(const struct harness_cs *cs, const char *method, const char *path,
	    const char *body, json_t **out);
/* GET that must answer 200; new reference. */
json_t	*harness_sim_get(const struct harness_cs *cs, const char *path);
/* POST that must answer 200 or 201. */
void	harness_sim_post(const struct harness_cs *cs, const char *path, const char *body);
/* cloudsim's Ray objects (/_sim/objects, as written) of cluster and name (each NULL: any);
 * new reference. */
json_t	*harness_sim_objects(const struct harness_cs *cs, const char *cluster, const char *name);
/* A Kubernetes call to member cluster name with its bearer token, over TLS with cs->ca. */
void	harness_kube(const struct harness_cs *cs, struct http_result *r, const char *cluster,
	    const char *method, const char *path, const char *ctype, const char *body);

/* ---- a fleet registered through the API, as Terraform drives it */

/* Registers cloudsim cluster name: phase 1 (POST /v1/clouds, named
 * <environment>-<provider>-<region>), the identities cloudsim must hold (/_sim/iam, as
 * iam.required asks), phase 2 (active), then the member cluster.  Its environment must
 * exist.  Fills cloud_id and cluster_id (40 bytes each, may be NULL). */
void	harness_register(const struct harness_cs *cs, const char *admin, const char *name,
	    char *cloud_id, char *cluster_id);
/* Phase 1: POST /v1/clouds {name, environment, provider, region, account (JSON text)};
 * returns the status, the answer in harness_r. */
long	harness_cloud_create(const char *token, const char *name, const char *env,
	    const char *provider, const char *region, const char *account);
/* Phase 2: POST /v1/clouds/{cloud}/iam (rotate: /iam/rotate) {control_plane_role,
 * cluster_role}; returns the status, the answer in harness_r. */
long	harness_cloud_iam(const char *token, const char *cloud, const char *cp, const char *cl,
	    bool rotate);
/* harness_register's cloud alone: an active cloud <env>-<provider>-<region> in env (NULL:
 * cloudsim cluster name's own) with name's account, region and identities, no member
 * cluster.  Returns phase 2's answer (borrowed from harness_r); fills cloud_id (may be
 * NULL). */
json_t	*harness_cloud(const struct harness_cs *cs, const char *admin, const char *name,
	    const char *env, char *cloud_id);
/* The steps of harness_register, for tests of registration itself: phase 1's "account" of
 * cloudsim cluster c (new reference); what Terraform does between the phases from the
 * phase-1 answer cloud (tags both identities with the cloud id, lets fleetd in as the
 * control plane), setting the pair's names (borrowed from c) in *cp and *cl. */
json_t	*harness_account_of(json_t *c);
void	harness_identities(const struct harness_cs *cs, json_t *c, json_t *cloud,
	    const char **cp, const char **cl);
/* Waits until /metrics shows a capacity snapshot of each named cluster (NULL-terminated). */
void	harness_wait_capacity(const char *const *names, double timeout_s);

/* ---- a registered fleet from a scenario file (fleet.c) */

#define HARNESS_FLEET_MAX	16

struct harness_fleet {
	struct harness_cs	cs;
	struct fleetd_proc	fd;
	char			dburl[512];
	char			*admin;		/* an admin token of every environment */
	int			n;		/* clusters, in the scenario's order */
	char			name[HARNESS_FLEET_MAX][64];
	char			cloud_id[HARNESS_FLEET_MAX][40], cluster_id[HARNESS_FLEET_MAX][40];
	char			*tokens[HARNESS_FLEET_MAX];	/* harness_fleet_token's */
	int			ntokens;
};

/* Starts cloudsim with the test fleet patched by the scenario file (JSON, an RFC 7386 merge
 * patch: its "sim" and "clusters" replace the test fleet's) at scale, fleetd (with cloudsim's
 * env, the scenario's "fleetd_env" list of "NAME=value" lines, then env's, NULL-ended, may be
 * NULL) on a scratch database t_<tag>_*,
 * an admin token; creates each cluster's environment, registers every cluster
 * (harness_register), POSTs the scenario's "api" list ([{path, body}], each must answer 201)
 * and waits for every cluster's first capacity snapshot. */
void	harness_fleet_start(struct harness_fleet *f, const char *tag, const char *scenario,
	    const char *scale, const char *const *env);
/* The index of cluster name in f (fails the test when there is none). */
int	harness_fleet_index(const struct harness_fleet *f, const char *name);
/* A token of role in envs, kept by f (freed by harness_fleet_stop). */
const char *harness_fleet_token(struct harness_fleet *f, const char *role, const char *envs);
/* harness_teardown of all of it; frees its tokens; returns fleetd's exit status. */
int	harness_fleet_stop(struct harness_fleet *f);
/* A cmocka group teardown for a setup that set *state to its struct harness_fleet:
 * harness_fleet_stop, failing when fleetd did not exit 0. */
int	harness_fleet_teardown(void **state);
/* harness_ctl_home_make (a fresh HOME for fleetctl), then harness_fleet_start: a fleet that
 * tests also drive with fleetctl; its group teardown is harness_fleet_ctl_teardown. */
void	harness_fleet_ctl_start(struct harness_fleet *f, const char *tag, const char *scenario,
	    const char *scale, const char *const *env);
/* harness_ctl_home_drop, then harness_fleet_teardown. */
int	harness_fleet_ctl_teardown(void **state);
/* The tokens a test of environment env asks for, kept by f (harness_fleet_token); an out
 * left NULL is not made: an operator, a viewer and an admin of env, an admin of "other". */
void	harness_fleet_roles(struct harness_fleet *f, const char *env, const char **oper,
	    const char **viewer, const char **admin, const char **other_admin);

/* ---- the fleetctl binary (ctl.c) */

#define HARNESS_FLEETCTL	FLEETD_BINARY_DIR "/fleetctl"

struct harness_ctl {
	int	 rc;
	char	*out;	/* malloc'd: harness_ctl_free */
	char	*err;
};

/* HOME of every fleetctl run: harness_ctl_home_make creates a fresh temporary directory
 * (fails when the binary is missing), harness_ctl_home_drop removes it. */
extern char harness_ctl_home[64];
void	harness_ctl_home_make(void);
void	harness_ctl_home_drop(void);
/* Runs fleetctl with args (NULL-terminated, without argv[0]), stdin from the text in (or
 * /dev/null), env added (putenv lines, may be NULL) to a clean one; fails the test when
 * stdout or stderr holds a planted secret. */
void	harness_ctl_run(struct harness_ctl *r, const char *in, const char *const *env,
	    const char *const *args);
void	harness_ctl_free(struct harness_ctl *r);
/* Runs fleetctl with args (NULL-terminated) and stdout on a pseudo-terminal cols wide (stderr to
 * a file; COLUMNS and NO_COLOR unset, then env's putenv lines); it must exit 0.  Returns what it
 * wrote (malloc'd). */
char	*harness_ctl_tty(int cols, const char *const *env, const char *const *args);
/* Removes ANSI escape sequences from s in place. */
void	harness_strip_ansi(char *s);
/* Exit code rc and exactly one line on stderr starting with prefix (and ending with suffix
 * unless NULL), nothing on stdout. */
void	harness_ctl_one_line(const struct harness_ctl *r, int rc, const char *prefix,
	    const char *suffix);

/* ---- a fleet seeded in SQL (no member cluster; the scheduler's tests) */

/* A cloud <name>-cloud in state (active, pending_iam) with one cluster name: a gpu pool of
 * gpu_nodes nodes x per accelerators of flavor (racks of 4) and a cpu pool of cpu_nodes
 * nodes for heads.  On the SQL helpers' database. */
void	harness_seed_cluster(const char *env, const char *provider, const char *region,
	    const char *state, const char *name, const char *flavor, int gpu_nodes, int per,
	    int cpu_nodes, bool cordoned);
/* RFC 7386 merge patch of b onto a (a is modified). */
void	harness_merge_patch(json_t *a, json_t *b);
/* A RayJob body: one worker group of one replica (count accelerators of flavor, or none),
 * patched by patch (merge patch text, may be NULL).  Returns malloc'd JSON text. */
char	*harness_job_body(const char *env, const char *queue, const char *flavor, int count,
	    const char *patch);

#endif
