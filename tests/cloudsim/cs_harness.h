/* cs_harness: starts a private cloudsim (CLOUDSIM_BIN) on free ports in a mkdtemp state
 * dir, stops it by pid, and talks HTTP(S) to it with libcurl. Header-only for the tests. */
#ifndef CS_HARNESS_H
#define CS_HARNESS_H

#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <curl/curl.h>
#include <jansson.h>

struct csh {
	pid_t	 pid;
	char	 dir[256];
	char	 base[96];		/* http://127.0.0.1:P */
	char	 kube[96];		/* https://127.0.0.1:K */
	char	 ca[300];
	json_t	*clusters;		/* clusters.json "clusters" */
};

static long csh_timeout_s = 20;	/* per request */

struct csh_resp {
	long	 status;
	char	*body;
	size_t	 len;
	json_t	*json;			/* parsed body or NULL */
	char	 hdr[2048];		/* response headers, lowercase names */
	int	 curl_rc;
};

static inline char *
csh_slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	char *b;
	long n;

	if (f == NULL)
		return NULL;
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	fseek(f, 0, SEEK_SET);
	b = malloc((size_t)n + 1);
	if (b == NULL || fread(b, 1, (size_t)n, f) != (size_t)n) {
		free(b);
		fclose(f);
		return NULL;
	}
	b[n] = '\0';
	fclose(f);
	if (len != NULL)
		*len = (size_t)n;
	return b;
}

/* Starts cloudsim with the fleet file; false when it does not come up in 15 s. */
static inline bool
csh_start(struct csh *h, const char *fleet, const char *scale)
{
	const char *bin = getenv("CLOUDSIM_BIN");
	char path[400], *port, *kport;
	json_error_t je;
	json_t *doc;
	int i;

	memset(h, 0, sizeof(*h));
	if (bin == NULL)
		return false;
	snprintf(h->dir, sizeof(h->dir), "/tmp/cloudsim-test-XXXXXX");
	if (mkdtemp(h->dir) == NULL)
		return false;
	h->pid = fork();
	if (h->pid == 0) {
		execl(bin, bin, "--fleet", fleet, "--listen", "127.0.0.1:0", "--state-dir", h->dir,
		    "--time-scale", scale, (char *)NULL);
		_exit(127);
	}
	snprintf(path, sizeof(path), "%s/port", h->dir);
	for (i = 0; i < 300 && access(path, R_OK) != 0; i++)
		usleep(50000);
	port = csh_slurp(path, NULL);
	snprintf(path, sizeof(path), "%s/kube_port", h->dir);
	kport = csh_slurp(path, NULL);
	if (port == NULL || kport == NULL) {
		free(port);
		free(kport);
		return false;
	}
	snprintf(h->base, sizeof(h->base), "http://127.0.0.1:%d", atoi(port));
	snprintf(h->kube, sizeof(h->kube), "https://127.0.0.1:%d", atoi(kport));
	snprintf(h->ca, sizeof(h->ca), "%s/ca.pem", h->dir);
	free(port);
	free(kport);
	snprintf(path, sizeof(path), "%s/clusters.json", h->dir);
	doc = json_load_file(path, 0, &je);
	h->clusters = json_incref(json_object_get(doc, "clusters"));
	json_decref(doc);
	return h->clusters != NULL;
}

static inline void
csh_stop(struct csh *h)
{
	char cmd[300];
	int st;

	if (h->pid > 0) {
		kill(h->pid, SIGTERM);
		waitpid(h->pid, &st, 0);
	}
	json_decref(h->clusters);
	if (strncmp(h->dir, "/tmp/cloudsim-test-", 19) == 0) {
		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", h->dir);
		if (system(cmd) != 0)
			fprintf(stderr, "cannot remove %s\n", h->dir);
	}
}

/* The cluster entry of clusters.json named name. */
static inline json_t *
csh_cluster(struct csh *h, const char *name)
{
	size_t i;
	json_t *c;

	json_array_foreach(h->clusters, i, c)
		if (strcmp(json_string_value(json_object_get(c, "name")), name) == 0)
			return c;
	return NULL;
}

/* A value of fleetd.env. */
static inline char *
csh_env(struct csh *h, const char *key)
{
	char path[300], *text, *p, *out = NULL;
	size_t kl = strlen(key);

	snprintf(path, sizeof(path), "%s/fleetd.env", h->dir);
	text = csh_slurp(path, NULL);
	for (p = text; p != NULL && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL)
		if (strncmp(p, key, kl) == 0 && p[kl] == '=') {
			out = strndup(p + kl + 1, strcspn(p + kl + 1, "\n"));
			break;
		}
	free(text);
	return out;
}

static inline size_t
csh_write_cb(char *p, size_t sz, size_t n, void *u)
{
	struct csh_resp *r = u;
	size_t add = sz * n;
	char *nb = realloc(r->body, r->len + add + 1);

	if (nb == NULL)
		return 0;
	r->body = nb;
	memcpy(r->body + r->len, p, add);
	r->len += add;
	r->body[r->len] = '\0';
	return add;
}

static inline size_t
csh_hdr_cb(char *p, size_t sz, size_t n, void *u)
{
	struct csh_resp *r = u;
	size_t add = sz * n, have = strlen(r->hdr), i;

	for (i = 0; i < add && have + 1 < sizeof(r->hdr); i++)
		r->hdr[have++] = (char)(p[i] >= 'A' && p[i] <= 'Z' ? p[i] + 32 : p[i]);
	r->hdr[have] = '\0';
	return add;
}

/* One request. headers: NULL-terminated "Name: value" list. cafile NULL = system CAs. */
static inline struct csh_resp
csh_req(const char *method, const char *url, const char *const *headers, const char *body,
    const char *cafile)
{
	struct csh_resp r;
	struct curl_slist *sl = NULL;
	CURL *c = curl_easy_init();

	memset(&r, 0, sizeof(r));
	for (; headers != NULL && *headers != NULL; headers++)
		sl = curl_slist_append(sl, *headers);
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
	curl_easy_setopt(c, CURLOPT_HTTPHEADER, sl);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, csh_write_cb);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, &r);
	curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, csh_hdr_cb);
	curl_easy_setopt(c, CURLOPT_HEADERDATA, &r);
	curl_easy_setopt(c, CURLOPT_TIMEOUT, csh_timeout_s);
	curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	if (cafile != NULL)
		curl_easy_setopt(c, CURLOPT_CAINFO, cafile);
	if (body != NULL) {
		curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
		curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE, (long)strlen(body));
	}
	r.curl_rc = (int)curl_easy_perform(c);
	curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &r.status);
	if (r.body != NULL)
		r.json = json_loadb(r.body, r.len, 0, NULL);
	curl_slist_free_all(sl);
	curl_easy_cleanup(c);
	return r;
}

static inline void
csh_resp_free(struct csh_resp *r)
{
	free(r->body);
	json_decref(r->json);
	memset(r, 0, sizeof(*r));
}

/* Plain JSON call to cloudsim's own HTTP port (path starts with /). */
static inline struct csh_resp
csh_sim(struct csh *h, const char *method, const char *path, const char *body)
{
	char url[600];
	const char *hd[] = { "Content-Type: application/json", NULL };

	snprintf(url, sizeof(url), "%s%s", h->base, path);
	return csh_req(method, url, hd, body, NULL);
}

/* A Kubernetes call to cluster with its bearer token. */
static inline struct csh_resp
csh_kube(struct csh *h, const char *cluster, const char *method, const char *path,
    const char *ctype, const char *body)
{
	char url[1400], auth[200], ct[120];
	json_t *c = csh_cluster(h, cluster);
	const char *hd[] = { auth, ct, NULL };

	snprintf(url, sizeof(url), "%s/k8s/%s%s", h->kube, cluster, path);
	snprintf(auth, sizeof(auth), "Authorization: Bearer %s",
	    json_string_value(json_object_get(c, "token")));
	snprintf(ct, sizeof(ct), "Content-Type: %s", ctype ? ctype : "application/json");
	return csh_req(method, url, hd, body, h->ca);
}

/* Polls until pred(h, arg) or timeout_s; returns pred's last answer. */
static inline bool
csh_wait(struct csh *h, bool (*pred)(struct csh *, void *), void *arg, double timeout_s)
{
	struct timespec t0, t;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		if (pred(h, arg))
			return true;
		clock_gettime(CLOCK_MONOTONIC, &t);
		if (t.tv_sec - t0.tv_sec + (t.tv_nsec - t0.tv_nsec) / 1e9 > timeout_s)
			return false;
		usleep(100000);
	}
}

#endif
