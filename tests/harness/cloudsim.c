/* cloudsim: one launcher for every test that needs the emulator — a private cloudsim on free
 * ports in a fresh state dir, what it wrote there (fleetd.env, clusters.json, the CA, fleetd's
 * GCP identity), and calls to its /_sim, provider and Kubernetes ports. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <ctype.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/config.h"
#include "tests/harness/harness.h"

#define FLEETS		FLEETD_SOURCE_DIR "/cloudsim/fleets"
#define MASTER_KEY	"MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY="

static const char *
cloudsim_bin(void)
{
	const char *bin = getenv("CLOUDSIM_BIN");

	return bin != NULL && *bin != '\0' ? bin : FLEETD_BINARY_DIR "/cloudsim";
}

/* Makes o[key], a file name relative to cloudsim/fleets, absolute. */
static void
abs_file(json_t *o, const char *key)
{
	const char *v = json_string_value(json_object_get(o, key));
	char path[1024];

	if (v != NULL && v[0] != '/') {
		snprintf(path, sizeof(path), FLEETS "/%s", v);
		json_object_set_new(o, key, json_string(path));
	}
}

json_t *
harness_fleet_json(void)
{
	json_error_t je;
	json_t *f = json_load_file(FLEETS "/test.json", 0, &je), *sa;
	size_t i;

	if (f == NULL)
		fail_msg("cloudsim/fleets/test.json: %s", je.text);
	abs_file(harness_jp(f, "fleetd.gcp"), "private_key_file");
	json_array_foreach(harness_jp(f, "gcp.service_accounts"), i, sa)
		abs_file(sa, "public_key_file");
	return f;
}

/* Reads dir/name as JSON; NULL when missing or bad. */
static json_t *
load(const struct harness_cs *cs, const char *name)
{
	char path[400];

	snprintf(path, sizeof(path), "%s/%s", cs->dir, name);
	return json_load_file(path, 0, NULL);
}

/* Reads what cloudsim wrote into its state dir once it is up. */
static void
read_outputs(struct harness_cs *cs)
{
	char path[400], *text, *line, *save = NULL;
	json_t *j;

	snprintf(path, sizeof(path), "%s/fleetd.env", cs->dir);
	if ((text = harness_slurp(path)) == NULL)
		fail_msg("cloudsim wrote no fleetd.env; see %s/cloudsim.log", cs->dir);
	for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save))
		if (strncmp(line, "FLEETD_", 7) == 0 && strchr(line, '=') != NULL)
			harness_cs_env_add(cs, "%s", line);
	free(text);
	harness_cs_env_add(cs, "FLEETD_MASTER_KEY=" MASTER_KEY);
	snprintf(cs->url, sizeof(cs->url), "%s", harness_cs_env(cs, "FLEETD_CLOUDSIM_URL") ?
	    harness_cs_env(cs, "FLEETD_CLOUDSIM_URL") : "");
	snprintf(path, sizeof(path), "%s/kube_port", cs->dir);
	text = harness_slurp(path);
	snprintf(cs->kube, sizeof(cs->kube), "https://127.0.0.1:%d", text ? atoi(text) : 0);
	free(text);
	snprintf(cs->ca, sizeof(cs->ca), "%s/ca.pem", cs->dir);
	cs->ca_pem = harness_slurp(cs->ca);
	j = load(cs, "clusters.json");
	cs->clusters = json_incref(json_object_get(j, "clusters"));
	json_decref(j);
	j = load(cs, "gcp-fleetd-key.json");
	snprintf(cs->fleetd_sa, sizeof(cs->fleetd_sa), "%s", harness_js(j, "client_email"));
	json_decref(j);
	if (cs->url[0] == '\0' || cs->ca_pem == NULL || !json_is_array(cs->clusters))
		fail_msg("cloudsim's state dir %s lacks its outputs", cs->dir);
}

/* Forks cloudsim on fleet (a path) and waits for its port file, written last. */
static void
launch(struct harness_cs *cs, const char *fleet, const char *time_scale)
{
	char path[400];

	cs->pid = fork();
	if (cs->pid < 0)
		fail_msg("fork failed");
	if (cs->pid == 0) {
		/* ends with the test, however the test ends (a failed setup or teardown
		 * jumps past harness_cs_stop; one such cloudsim went on simulating) */
		prctl(PR_SET_PDEATHSIG, SIGTERM);
		snprintf(path, sizeof(path), "%s/cloudsim.log", cs->dir);
		if (freopen(path, "w", stdout) == NULL || freopen(path, "a", stderr) == NULL)
			_exit(126);
		execl(cloudsim_bin(), "cloudsim", "--fleet", fleet, "--listen", "127.0.0.1:0",
		    "--state-dir", cs->dir, "--time-scale", time_scale ? time_scale : "1",
		    (char *)NULL);
		_exit(127);
	}
	snprintf(path, sizeof(path), "%s/port", cs->dir);
	for (int i = 0; i < 600 && access(path, R_OK) != 0; i++) {
		if (waitpid(cs->pid, NULL, WNOHANG) == cs->pid) {
			cs->pid = 0;
			fail_msg("cloudsim exited at start; see %s/cloudsim.log", cs->dir);
		}
		usleep(50 * 1000);
	}
	if (access(path, R_OK) != 0)
		fail_msg("cloudsim did not start in 30 s; see %s/cloudsim.log", cs->dir);
	read_outputs(cs);
}

static void
make_dir(struct harness_cs *cs)
{
	memset(cs, 0, sizeof(*cs));
	snprintf(cs->dir, sizeof(cs->dir), "/tmp/fleetd-cs-XXXXXX");
	if (mkdtemp(cs->dir) == NULL)
		fail_msg("mkdtemp failed");
}

void
harness_cs_start(struct harness_cs *cs, const char *fleet, const char *time_scale)
{
	harness_track_cs(cs, true);
	make_dir(cs);
	launch(cs, fleet != NULL ? fleet : FLEETS "/test.json", time_scale);
}

void
harness_cs_start_json(struct harness_cs *cs, json_t *fleet, const char *time_scale)
{
	char path[400];

	harness_track_cs(cs, true);
	make_dir(cs);
	snprintf(path, sizeof(path), "%s/fleet.json", cs->dir);
	if (json_dump_file(fleet, path, JSON_INDENT(1)) != 0)
		fail_msg("cannot write %s", path);
	launch(cs, path, time_scale);
}

void
harness_cs_env_add(struct harness_cs *cs, const char *fmt, ...)
{
	char line[2048];
	size_t n;
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	n = strcspn(line, "=");
	for (int i = 0; i < cs->nenv; i++)
		if (strncmp(cs->env[i], line, n + 1) == 0) {
			free(cs->env[i]);
			cs->env[i] = strdup(line);
			return;
		}
	if (cs->nenv + 1 >= (int)(sizeof(cs->env) / sizeof(cs->env[0])))
		fail_msg("too many fleetd env entries");
	cs->env[cs->nenv++] = strdup(line);
	cs->env[cs->nenv] = NULL;
}

const char *
harness_cs_env(const struct harness_cs *cs, const char *name)
{
	size_t n = strlen(name);

	for (int i = 0; i < cs->nenv; i++)
		if (strncmp(cs->env[i], name, n) == 0 && cs->env[i][n] == '=')
			return cs->env[i] + n + 1;
	return NULL;
}

void
harness_cs_stop(struct harness_cs *cs)
{
	harness_track_cs(cs, false);
	if (cs->pid > 0) {
		kill(cs->pid, SIGTERM);
		waitpid(cs->pid, NULL, 0);
	}
	if (strncmp(cs->dir, "/tmp/fleetd-cs-", 15) == 0)
		harness_sh("rm -rf '%s'", cs->dir);
	for (int i = 0; i < cs->nenv; i++)
		free(cs->env[i]);
	free(cs->ca_pem);
	json_decref(cs->clusters);
	memset(cs, 0, sizeof(*cs));
}

json_t *
harness_cs_cluster(const struct harness_cs *cs, const char *name)
{
	json_t *c;
	size_t i;

	json_array_foreach(cs->clusters, i, c)
		if (strcmp(harness_js(c, "name"), name) == 0)
			return c;
	fail_msg("cloudsim has no cluster %s", name);
	return NULL;
}

long
harness_sim(const struct harness_cs *cs, const char *method, const char *path,
	    const char *body, json_t **out)
{
	struct http_result r;
	char url[1024];
	long st;

	snprintf(url, sizeof(url), "%s%s", cs->url, path);
	harness_http(&r, method, url, NULL, body, NULL);
	st = r.status;
	if (out != NULL)
		*out = json_incref(r.json);
	harness_http_free(&r);
	return st;
}

json_t *
harness_sim_get(const struct harness_cs *cs, const char *path)
{
	json_t *j = NULL;
	long st = harness_sim(cs, "GET", path, NULL, &j);

	if (st != 200) {
		json_decref(j);
		fail_msg("cloudsim GET %s: %ld", path, st);
	}
	return j;
}

void
harness_sim_post(const struct harness_cs *cs, const char *path, const char *body)
{
	json_t *j = NULL;
	long st = harness_sim(cs, "POST", path, body, &j);
	char *text = j != NULL ? json_dumps(j, JSON_COMPACT) : NULL;

	json_decref(j);
	if (st != 200 && st != 201)
		fail_msg("cloudsim POST %s %s: %ld %s", path, body ? body : "", st,
		    text ? text : "");
	free(text);
}

void
harness_kube(const struct harness_cs *cs, struct http_result *r, const char *cluster,
	     const char *method, const char *path, const char *ctype, const char *body)
{
	char url[1400], auth[300], ct[120];
	const char *hd[] = { auth, ct, NULL };

	snprintf(url, sizeof(url), "%s/k8s/%s%s", cs->kube, cluster, path);
	snprintf(auth, sizeof(auth), "Authorization: Bearer %s",
	    harness_js(harness_cs_cluster(cs, cluster), "token"));
	snprintf(ct, sizeof(ct), "Content-Type: %s", ctype ? ctype : "application/json");
	harness_https(r, method, url, NULL, cs->ca, body, hd);
}

void
harness_cs_config(const struct harness_cs *cs)
{
	static const struct { const char *from, *to; } alias[] = {
		{ "FLEETD_GCP_KEY_FILE", "gcp-sa-key-file" },
		{ "FLEETD_AZURE_TENANT_ID", "azure-tenant" },
	};

	for (int k = 0; k < cs->nenv; k++) {
		const char *line = cs->env[k], *eq = strchr(line, '=');
		char name[128];
		struct err e = { 0 };
		size_t i, n;

		if (eq == NULL || strncmp(line, "FLEETD_", 7) != 0 ||
		    strncmp(line, "FLEETD_MASTER_KEY=", 18) == 0)	/* the test's own */
			continue;
		n = (size_t)(eq - line);
		snprintf(name, sizeof(name), "%.*s", (int)(n - 7), line + 7);
		for (i = 0; name[i]; i++)
			name[i] = name[i] == '_' ? '-' : (char)tolower((unsigned char)name[i]);
		for (i = 0; i < sizeof(alias) / sizeof(alias[0]); i++)
			if (strlen(alias[i].from) == n && strncmp(line, alias[i].from, n) == 0)
				snprintf(name, sizeof(name), "%s", alias[i].to);
		config_set(name, eq + 1, &e);	/* names fleetd has no setting for are ignored */
	}
}

json_t *
harness_sim_objects(const struct harness_cs *cs, const char *cluster, const char *name)
{
	char path[256];
	json_t *all, *out;

	snprintf(path, sizeof(path), "/_sim/objects%s%s%s%s", cluster ? "?cluster=" : "",
	    cluster ? cluster : "", name ? (cluster ? "&name=" : "?name=") : "", name ? name : "");
	all = harness_sim_get(cs, path);
	out = json_incref(json_object_get(all, "objects"));
	json_decref(all);
	return out;
}
