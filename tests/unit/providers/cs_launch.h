/* cs_launch: starts the cloudsim binary with the test fleet in a scratch state dir, loads
 * its fleetd.env into fleetd's config, and talks to /_sim (header-only, for tests). */
#ifndef FLEET_TESTS_CS_LAUNCH_H
#define FLEET_TESTS_CS_LAUNCH_H

#include <ctype.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <jansson.h>

#include "core/config.h"
#include "core/http.h"

struct cs_launch {
	pid_t	 pid;
	char	 dir[128];
	char	 url[96];	/* http://127.0.0.1:PORT */
	char	*ca_pem;
	json_t	*clusters;	/* clusters.json "clusters" */
};

static inline char *
csl_slurp(const char *path)
{
	FILE *f = fopen(path, "rb");
	char *s;
	long n;

	if (f == NULL)
		return NULL;
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	fseek(f, 0, SEEK_SET);
	s = calloc(1, (size_t)n + 1);
	if (s != NULL && fread(s, 1, (size_t)n, f) != (size_t)n) {
		free(s);
		s = NULL;
	}
	fclose(f);
	return s;
}

/* FLEETD_GCP_OAUTH_URL -> gcp-oauth-url, with the few names that differ. */
static inline void
csl_config(const char *env)
{
	static const struct { const char *from, *to; } alias[] = {
		{ "FLEETD_GCP_KEY_FILE", "gcp-sa-key-file" },
		{ "FLEETD_AZURE_TENANT_ID", "azure-tenant" },
	};
	char *text = csl_slurp(env), *line, *save = NULL;

	for (line = text ? strtok_r(text, "\n", &save) : NULL; line != NULL;
	    line = strtok_r(NULL, "\n", &save)) {
		char *eq = strchr(line, '='), name[128];
		struct err e = { 0 };
		size_t i;

		if (line[0] == '#' || eq == NULL || strncmp(line, "FLEETD_", 7) != 0)
			continue;
		*eq = '\0';
		snprintf(name, sizeof(name), "%s", line + 7);
		for (i = 0; name[i]; i++)
			name[i] = name[i] == '_' ? '-' : (char)tolower((unsigned char)name[i]);
		for (i = 0; i < sizeof(alias) / sizeof(alias[0]); i++)
			if (strcmp(line, alias[i].from) == 0)
				snprintf(name, sizeof(name), "%s", alias[i].to);
		config_set(name, eq + 1, &e);	/* names fleetd has no setting for are ignored */
	}
	free(text);
}

/* Starts cloudsim; false (with a message on stderr) when it does not come up in 15 s. */
static inline bool
csl_start(struct cs_launch *l, const char *fleet)
{
	char path[256], *port = NULL, *cj;
	json_t *doc;

	memset(l, 0, sizeof(*l));
	snprintf(l->dir, sizeof(l->dir), "/tmp/fleetd-cs-XXXXXX");
	if (mkdtemp(l->dir) == NULL)
		return false;
	l->pid = fork();
	if (l->pid == 0) {
		int fd;

		snprintf(path, sizeof(path), "%s/cloudsim.log", l->dir);
		fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
		dup2(fd, 1);
		dup2(fd, 2);
		execl(FLEETD_BINARY_DIR "/cloudsim", "cloudsim", "--fleet", fleet, "--listen",
		    "127.0.0.1:0", "--state-dir", l->dir, (char *)NULL);
		_exit(127);
	}
	snprintf(path, sizeof(path), "%s/port", l->dir);
	for (int i = 0; i < 300 && (port = csl_slurp(path)) == NULL; i++)
		usleep(50000);
	if (port == NULL) {
		fprintf(stderr, "cloudsim did not start (see %s/cloudsim.log)\n", l->dir);
		return false;
	}
	snprintf(l->url, sizeof(l->url), "http://127.0.0.1:%d", atoi(port));
	free(port);
	snprintf(path, sizeof(path), "%s/fleetd.env", l->dir);
	csl_config(path);
	snprintf(path, sizeof(path), "%s/ca.pem", l->dir);
	l->ca_pem = csl_slurp(path);
	snprintf(path, sizeof(path), "%s/clusters.json", l->dir);
	cj = csl_slurp(path);
	doc = cj ? json_loads(cj, 0, NULL) : NULL;
	free(cj);
	l->clusters = json_incref(json_object_get(doc, "clusters"));
	json_decref(doc);
	return l->ca_pem != NULL && json_is_array(l->clusters);
}

static inline void
csl_stop(struct cs_launch *l)
{
	char cmd[200];
	int st;

	if (l->pid > 0) {
		kill(l->pid, SIGTERM);
		waitpid(l->pid, &st, 0);
	}
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", l->dir);
	if (system(cmd) != 0)
		fprintf(stderr, "could not remove %s\n", l->dir);
	free(l->ca_pem);
	json_decref(l->clusters);
	memset(l, 0, sizeof(*l));
}

/* One call to cloudsim's /_sim API; returns the status, *out (optional) the JSON answer. */
static inline long
csl_sim(struct cs_launch *l, const char *method, const char *path, const char *body,
    json_t **out)
{
	char url[256];
	struct http_req rq = { 0 };
	struct http_resp r;
	struct err e = { 0 };
	struct http_header h = { "Content-Type", "application/json" };
	long st;

	snprintf(url, sizeof(url), "%s%s", l->url, path);
	rq.method = method;
	rq.url = url;
	rq.body = body;
	rq.body_len = body ? strlen(body) : 0;
	rq.headers = &h;
	rq.nheaders = 1;
	http_do(&rq, &r, &e);
	st = r.status;
	if (out != NULL)
		*out = r.body ? json_loads(r.body, 0, NULL) : NULL;
	http_resp_cleanup(&r);
	return st;
}

static inline json_t *
csl_cluster(struct cs_launch *l, const char *name)
{
	json_t *c;
	size_t i;

	json_array_foreach(l->clusters, i, c)
		if (strcmp(json_string_value(json_object_get(c, "name")), name) == 0)
			return c;
	return NULL;
}

#endif
