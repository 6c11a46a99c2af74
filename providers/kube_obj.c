/* kube_obj: single-object calls on a member cluster — server-side apply, get, delete,
 * events, namespaces and the reachability check the dispatcher and registry use. */
#include <ctype.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/config.h"
#include "providers/creds_int.h"
#include "providers/kube.h"

#define CALL_TIMEOUT_MS	15000L

bool
kube_object_path(const char *api_version, const char *kind, const char *ns,
    const char *name, char *out, size_t n)
{
	char plural[64];
	size_t i, k = kind ? strlen(kind) : 0;
	int w;

	if (api_version == NULL || kind == NULL || k == 0 || k + 2 >= sizeof(plural) ||
	    strchr(api_version, '?') || strstr(api_version, ".."))
		return false;
	for (i = 0; i < k; i++) {
		if (!isalnum((unsigned char)kind[i]))
			return false;
		plural[i] = (char)tolower((unsigned char)kind[i]);
	}
	plural[k] = '\0';
	if (plural[k - 1] == 's')
		strcat(plural, "es");
	else if (plural[k - 1] == 'y')
		snprintf(plural + k - 1, sizeof(plural) - k + 1, "ies");
	else
		strcat(plural, "s");
	w = snprintf(out, n, "%s%s%s%s%s/%s%s%s", strchr(api_version, '/') ? "/apis/" : "/api/",
	    api_version, ns && ns[0] ? "/namespaces/" : "", ns && ns[0] ? ns : "", "", plural,
	    name ? "/" : "", name ? name : "");
	return w > 0 && (size_t)w < n;
}

static void
url_of(const struct prov_cluster *k, const char *path, const char *query, char *out,
    size_t n)
{
	size_t l = strlen(k->api_server);

	while (l > 0 && k->api_server[l - 1] == '/')
		l--;
	snprintf(out, n, "%.*s%s%s%s", (int)l, k->api_server, path, query ? "?" : "",
	    query ? query : "");
}

/* One call; true when a response arrived (any status). */
static bool
call(const struct prov_cluster *k, const char *method, const char *url, const char *ctype,
    const char *body, struct http_resp *r, struct err *e)
{
	struct http_req rq = { 0 };
	struct http_header h[2] = { { "Content-Type", ctype }, { "Accept", "application/json" } };

	rq.method = method;
	rq.url = url;
	rq.bearer = k->token;
	rq.ca_pem = k->ca_pem;
	rq.timeout_ms = CALL_TIMEOUT_MS;
	rq.retry.max_attempts = strcmp(method, "GET") == 0 ? 3 : 1;
	rq.retry.max_delay_ms = 2000;
	if (ctype != NULL) {
		rq.headers = h;
		rq.nheaders = 2;
	} else {
		rq.headers = &h[1];
		rq.nheaders = 1;
	}
	rq.body = body;
	rq.body_len = body ? strlen(body) : 0;
	return http_do(&rq, r, e);
}

/* uid, resourceVersion and generation of an object the member answered with. */
static void
ref_from(json_t *obj, struct kube_ref *ref)
{
	json_t *md = json_object_get(obj, "metadata");
	const char *s;

	memset(ref, 0, sizeof(*ref));
	s = json_string_value(json_object_get(md, "uid"));
	snprintf(ref->uid, sizeof(ref->uid), "%s", s ? s : "");
	s = json_string_value(json_object_get(md, "resourceVersion"));
	snprintf(ref->resource_version, sizeof(ref->resource_version), "%s", s ? s : "");
	ref->generation = json_integer_value(json_object_get(md, "generation"));
}

/* ---- the reference in an apply's answer without building the object: the answer is
 * the whole object (a few KiB), of which the dispatcher keeps three fields */

static const char *
ws(const char *p, const char *end)
{
	while (p < end && (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r'))
		p++;
	return p;
}

/* Past the string at p (at its opening quote); NULL when it does not end. */
static const char *
skip_string(const char *p, const char *end)
{
	for (p++; p < end; p++) {
		if (*p == '\\')
			p++;
		else if (*p == '"')
			return p + 1;
	}
	return NULL;
}

/* Past the value at p; NULL when it is cut short.  Only brackets and strings are followed:
 * a malformed scalar is not noticed (a server's answer has none; the caller falls back to
 * the full parser on anything else it does not expect). */
static const char *
skip_value(const char *p, const char *end)
{
	int depth = 0;

	p = ws(p, end);
	if (p >= end)
		return NULL;
	if (*p != '{' && *p != '[' && *p != '"') {	/* a number, true, false or null */
		while (p < end && *p != ',' && *p != '}' && *p != ']' && *p != ' ' &&
		    *p != '\t' && *p != '\n' && *p != '\r')
			p++;
		return p;
	}
	do {
		if (p >= end)
			return NULL;
		if (*p == '"') {
			if ((p = skip_string(p, end)) == NULL)
				return NULL;
			continue;
		}
		if (*p == '{' || *p == '[')
			depth++;
		else if (*p == '}' || *p == ']')
			depth--;
		p++;
	} while (depth > 0);
	return p;
}

/* The members of the object at p (at '{'): fn(key, keylen, value, arg) for each, value at
 * its first character; NULL when the object is malformed, else past its '}'. */
static const char *
each_member(const char *p, const char *end,
    bool (*fn)(const char *k, size_t kn, const char *v, const char *end, void *arg), void *arg)
{
	p = ws(p, end);
	if (p >= end || *p != '{')
		return NULL;
	p = ws(p + 1, end);
	if (p < end && *p == '}')
		return p + 1;
	while (p < end) {
		const char *k, *ke;

		if (*p != '"' || (ke = skip_string(p, end)) == NULL)
			return NULL;
		k = p + 1;
		if (memchr(k, '\\', (size_t)(ke - 1 - k)) != NULL)
			return NULL;	/* an escaped key: not one of ours, and not worth decoding */
		p = ws(ke, end);
		if (p >= end || *p != ':')
			return NULL;
		p = ws(p + 1, end);
		if (!fn(k, (size_t)(ke - 1 - k), p, end, arg) || (p = skip_value(p, end)) == NULL)
			return NULL;
		p = ws(p, end);
		if (p < end && *p == '}')
			return p + 1;
		if (p >= end || *p != ',')
			return NULL;
		p = ws(p + 1, end);
	}
	return NULL;
}

struct ref_scan {
	struct kube_ref	*ref;
	bool		 metadata;	/* seen */
};

/* A plain string value (no escapes) into out; false otherwise. */
static bool
plain_string(const char *v, const char *end, char *out, size_t n)
{
	const char *e = v < end && *v == '"' ? skip_string(v, end) : NULL;
	size_t len;

	if (e == NULL)
		return false;
	len = (size_t)(e - 1 - (v + 1));
	if (len >= n || memchr(v + 1, '\\', len) != NULL)
		return false;
	memcpy(out, v + 1, len);
	out[len] = '\0';
	return true;
}

static bool
metadata_member(const char *k, size_t kn, const char *v, const char *end, void *arg)
{
	struct kube_ref *ref = arg;

	if (kn == 3 && memcmp(k, "uid", 3) == 0)
		return plain_string(v, end, ref->uid, sizeof(ref->uid));
	if (kn == 15 && memcmp(k, "resourceVersion", 15) == 0)
		return plain_string(v, end, ref->resource_version, sizeof(ref->resource_version));
	if (kn == 10 && memcmp(k, "generation", 10) == 0) {
		char num[24], *ne;
		size_t len = 0;

		while (v + len < end && len < sizeof(num) - 1 && (v[len] == '-' ||
		    (v[len] >= '0' && v[len] <= '9')))
			len++;
		if (len == 0 || (v + len < end && strchr(",} \t\r\n", v[len]) == NULL))
			return false;	/* not an integer (1.0, 1e3): the full parser's */
		memcpy(num, v, len);
		num[len] = '\0';
		ref->generation = strtoll(num, &ne, 10);
		return *ne == '\0';
	}
	return true;
}

static bool
top_member(const char *k, size_t kn, const char *v, const char *end, void *arg)
{
	struct ref_scan *rs = arg;

	if (kn != 8 || memcmp(k, "metadata", 8) != 0)
		return true;
	if (rs->metadata)
		return false;	/* twice: leave it to the full parser */
	rs->metadata = true;
	return each_member(v, end, metadata_member, rs->ref) != NULL;
}

bool
kube_ref_scan(const char *body, size_t len, struct kube_ref *ref)
{
	struct ref_scan rs = { ref, false };
	const char *end, *p;

	memset(ref, 0, sizeof(*ref));
	if (body == NULL)
		return false;
	end = body + len;
	if ((p = each_member(body, end, top_member, &rs)) == NULL ||
	    ws(p, end) != end || !rs.metadata) {
		memset(ref, 0, sizeof(*ref));
		return false;
	}
	return true;
}

static json_t *
body_json(const struct http_resp *r, struct err *e)
{
	json_t *j = r->body ? json_loadb(r->body, r->body_len, 0, NULL) : NULL;

	if (!json_is_object(j)) {
		json_decref(j);
		err_set(e, 502, "kube.bad_answer", "kubernetes answer is not a json object");
		return NULL;
	}
	return j;
}

bool
kube_apply(const struct prov_cluster *k, json_t *obj, struct kube_ref *ref, json_t **live,
    struct err *e)
{
	json_t *md = json_object_get(obj, "metadata"), *j = NULL;
	const char *av = json_string_value(json_object_get(obj, "apiVersion")),
	    *kind = json_string_value(json_object_get(obj, "kind")),
	    *name = json_string_value(json_object_get(md, "name")),
	    *ns = json_string_value(json_object_get(md, "namespace"));
	char path[1024], url[2048], *body = NULL;
	struct http_resp r = { 0 };
	bool ok = false;

	if (live != NULL)
		*live = NULL;
	if (name == NULL || !kube_object_path(av, kind, ns, name, path, sizeof(path)))
		return err_set(e, 400, "kube.bad_object", "object needs apiVersion, kind and "
		    "metadata.name");
	url_of(k, path, "fieldManager=fleetd&force=true", url, sizeof(url));
	body = json_dumps(obj, JSON_COMPACT);
	if (body == NULL)
		return err_set(e, 500, "kube.oom", "cannot encode object");
	if (!call(k, "PATCH", url, "application/apply-patch+yaml", body, &r, e))
		goto cleanup;
	if (r.status != 200 && r.status != 201) {
		kube_status_err(&r, "server-side apply", e);
		goto cleanup;
	}
	if ((j = body_json(&r, e)) == NULL)
		goto cleanup;
	if (ref != NULL)
		ref_from(j, ref);
	if (live != NULL) {
		*live = j;
		j = NULL;
	}
	ok = true;
cleanup:
	json_decref(j);
	free(body);
	http_resp_cleanup(&r);
	return ok;
}

/* ---- several applies at once */

struct apply_one {
	long		 status;
	char		*body;		/* answer, for the error of a refused apply */
	size_t		 body_len;
	struct err	 e;		/* transport failure */
	bool		 done, failed;
};

static void
apply_done(struct http_batch *b, const struct http_req *req, struct http_resp *resp,
    const struct err *e)
{
	struct apply_one *a = req->user;

	(void)b;
	a->done = true;
	if (e != NULL) {
		a->failed = true;
		a->e = *e;
		return;
	}
	a->status = resp->status;
	a->body = resp->body;		/* kept: moved out of resp */
	a->body_len = resp->body_len;
	resp->body = NULL;
}

/* Each thread keeps one batch for kube_apply_all (its connections are reused). */
static pthread_key_t all_key;
static pthread_once_t all_once = PTHREAD_ONCE_INIT;

static void
all_free(void *b)
{
	http_batch_free(b);
}

static void
all_key_init(void)
{
	if (pthread_key_create(&all_key, all_free) != 0)
		abort();
}

/* Runs a server-side apply of every object of objs at once on this thread's batch; a[i]
 * gets each answer.  False (e) when the requests could not be made at all. */
static bool
apply_run(const struct prov_cluster *k, json_t *objs, struct apply_one *a, char **bodies,
    struct err *e)
{
	struct http_header h[2] = { { "Content-Type", "application/apply-patch+yaml" },
	    { "Accept", "application/json" } };
	struct http_batch *b = NULL;
	json_t *obj;
	size_t i;
	bool queued = false, ok = false;

	pthread_once(&all_once, all_key_init);
	if ((b = pthread_getspecific(all_key)) == NULL) {
		/* FLEETD_MEMBER_ROUND (4): 64 dispatch threads x 4 = 256 applies in flight, more
		 * than 500 jobs/s x 7 applies x 20 ms = 70 need; each is a TLS connection of
		 * the thread's, and 8 doubled the handshakes (bench/RESULTS.md) */
		if ((b = http_batch_new(cfg.member_round > 0 ? cfg.member_round : 4)) == NULL)
			return err_set(e, 500, "kube.oom", "http client unavailable");
		pthread_setspecific(all_key, b);
	}
	json_array_foreach(objs, i, obj) {
		json_t *md = json_object_get(obj, "metadata");
		const char *av = json_string_value(json_object_get(obj, "apiVersion")),
		    *kind = json_string_value(json_object_get(obj, "kind")),
		    *name = json_string_value(json_object_get(md, "name")),
		    *ns = json_string_value(json_object_get(md, "namespace"));
		char path[1024], url[2048];
		struct http_req rq = { 0 };

		if (name == NULL || !kube_object_path(av, kind, ns, name, path, sizeof(path))) {
			err_set(e, 400, "kube.bad_object", "object needs apiVersion, kind and "
			    "metadata.name");
			goto cleanup;
		}
		url_of(k, path, "fieldManager=fleetd&force=true", url, sizeof(url));
		if ((bodies[i] = json_dumps(obj, JSON_COMPACT)) == NULL) {
			err_set(e, 500, "kube.oom", "cannot encode object");
			goto cleanup;
		}
		rq.method = "PATCH";
		rq.url = url;
		rq.bearer = k->token;
		rq.ca_pem = k->ca_pem;
		rq.timeout_ms = CALL_TIMEOUT_MS;
		rq.retry.max_attempts = 1;
		rq.headers = h;
		rq.nheaders = 2;
		rq.body = bodies[i];
		rq.body_len = strlen(bodies[i]);
		rq.done = apply_done;
		rq.user = &a[i];
		if (!http_batch_add(b, &rq, e))
			goto cleanup;
		queued = true;
	}
	if (!http_batch_run(b, e))
		goto cleanup;
	queued = false;
	ok = true;
cleanup:
	if (queued) {	/* requests left in the batch point at a: drop the batch */
		pthread_setspecific(all_key, NULL);
		http_batch_free(b);
	}
	return ok;
}

/* The outcome of answer a as kube_apply gives it: ref filled, or e. */
static bool
apply_result(const struct apply_one *a, struct kube_ref *ref, struct err *e)
{
	struct http_resp r = { 0 };
	json_t *j;

	if (!a->done)
		return err_set(e, 502, "http.transport", "request did not complete");
	if (a->failed) {
		*e = a->e;
		return false;
	}
	r.status = a->status;
	r.body = a->body;
	r.body_len = a->body_len;
	if (a->status != 200 && a->status != 201)
		return kube_status_err(&r, "server-side apply", e);
	if (ref == NULL)
		return true;
	if (kube_ref_scan(r.body, r.body_len, ref))	/* without building the object */
		return true;
	if ((j = body_json(&r, e)) == NULL)
		return false;
	ref_from(j, ref);
	json_decref(j);
	return true;
}

bool
kube_apply_all(const struct prov_cluster *k, json_t *objs, struct err *e)
{
	size_t n = json_array_size(objs), i;
	struct err *errs = calloc(n ? n : 1, sizeof(*errs));
	bool ok = true;

	if (errs == NULL)
		return err_set(e, 500, "kube.oom", "out of memory");
	kube_apply_each(k, objs, NULL, errs, NULL);
	for (i = 0; i < n && ok; i++)	/* the first failure, in the objects' order */
		if (errs[i].status != 0) {
			if (e != NULL)
				*e = errs[i];
			ok = false;
		}
	free(errs);
	return ok;
}

void
kube_apply_each(const struct prov_cluster *k, json_t *objs, struct kube_ref *refs,
    struct err *errs, char **texts)
{
	size_t n = json_array_size(objs), i;
	struct apply_one *a = calloc(n ? n : 1, sizeof(*a));
	char **bodies = calloc(n ? n : 1, sizeof(*bodies));
	struct err e = { 0 };

	if (a == NULL || bodies == NULL)
		err_set(&e, 500, "kube.oom", "out of memory");
	else
		apply_run(k, objs, a, bodies, &e);
	for (i = 0; i < n; i++) {
		memset(&errs[i], 0, sizeof(errs[i]));
		if (e.status != 0)
			errs[i] = e;
		else
			apply_result(&a[i], refs != NULL ? &refs[i] : NULL, &errs[i]);
	}
	for (i = 0; a != NULL && i < n; i++)
		free(a[i].body);
	for (i = 0; i < n; i++) {
		if (texts != NULL)
			texts[i] = bodies != NULL ? bodies[i] : NULL;	/* moved */
		else if (bodies != NULL)
			free(bodies[i]);
	}
	free(a);
	free(bodies);
}

bool
kube_get_path(const struct prov_cluster *k, const char *path, long *status, json_t **out,
    struct err *e)
{
	char url[2048];
	struct http_resp r = { 0 };
	bool ok = false;

	*out = NULL;
	*status = 0;
	if (path == NULL || path[0] != '/' || strstr(path, "..") != NULL || strlen(path) > 1000)
		return err_set(e, 400, "kube.bad_object", "bad api path");
	url_of(k, path, NULL, url, sizeof(url));
	if (!call(k, "GET", url, NULL, NULL, &r, e))
		goto cleanup;
	*status = r.status;
	if (r.status == 200 && (*out = body_json(&r, e)) == NULL)
		goto cleanup;
	ok = true;
cleanup:
	http_resp_cleanup(&r);
	return ok;
}

bool
kube_get_object(const struct prov_cluster *k, const char *api_version, const char *kind,
    const char *ns, const char *name, json_t **out, struct err *e)
{
	char path[1024], url[2048];
	struct http_resp r = { 0 };
	bool ok = false;

	*out = NULL;
	if (name == NULL || !kube_object_path(api_version, kind, ns, name, path, sizeof(path)))
		return err_set(e, 400, "kube.bad_object", "bad object reference");
	url_of(k, path, NULL, url, sizeof(url));
	if (!call(k, "GET", url, NULL, NULL, &r, e))
		goto cleanup;
	if (r.status != 200) {
		kube_status_err(&r, "get object", e);
		goto cleanup;
	}
	*out = body_json(&r, e);
	ok = *out != NULL;
cleanup:
	http_resp_cleanup(&r);
	return ok;
}

bool
kube_delete_object(const struct prov_cluster *k, const char *api_version, const char *kind,
    const char *ns, const char *name, bool *existed, struct err *e)
{
	char path[1024], url[2048];
	struct http_resp r = { 0 };
	bool ok = false;

	if (existed != NULL)
		*existed = false;
	if (name == NULL || !kube_object_path(api_version, kind, ns, name, path, sizeof(path)))
		return err_set(e, 400, "kube.bad_object", "bad object reference");
	url_of(k, path, "propagationPolicy=Foreground", url, sizeof(url));
	if (!call(k, "DELETE", url, NULL, NULL, &r, e))
		goto cleanup;
	if (r.status == 404) {
		ok = true;
	} else if (r.status == 200 || r.status == 202) {
		if (existed != NULL)
			*existed = true;
		ok = true;
	} else {
		kube_status_err(&r, "delete object", e);
	}
cleanup:
	http_resp_cleanup(&r);
	return ok;
}

bool
kube_delete_pod_now(const struct prov_cluster *k, const char *ns, const char *name,
    struct err *e)
{
	char path[1024], url[2048];
	struct http_resp r = { 0 };
	bool ok = false;

	if (name == NULL || !kube_object_path("v1", "Pod", ns, name, path, sizeof(path)))
		return err_set(e, 400, "kube.bad_object", "bad object reference");
	/* https://kubernetes.io/docs/tasks/run-application/force-delete-stateful-set-pod/ */
	url_of(k, path, "gracePeriodSeconds=0", url, sizeof(url));
	if (!call(k, "DELETE", url, NULL, NULL, &r, e))
		goto cleanup;
	if (r.status == 404 || r.status == 200 || r.status == 202)
		ok = true;
	else
		kube_status_err(&r, "delete pod", e);
cleanup:
	http_resp_cleanup(&r);
	return ok;
}

/* Merge patch of the object, or of its status subresource when sub is "status". */
static bool
patch_at(const struct prov_cluster *k, const char *api_version, const char *kind,
    const char *ns, const char *name, const char *sub, json_t *patch, struct err *e)
{
	char path[1024], url[2048], *body = NULL;
	struct http_resp r = { 0 };
	bool ok = false;

	if (name == NULL || !kube_object_path(api_version, kind, ns, name, path, sizeof(path)))
		return err_set(e, 400, "kube.bad_object", "bad object reference");
	if (sub != NULL && strlen(path) + strlen(sub) + 2 < sizeof(path))
		strcat(strcat(path, "/"), sub);
	url_of(k, path, "fieldManager=fleetd", url, sizeof(url));
	if ((body = json_dumps(patch, JSON_COMPACT)) == NULL)
		return err_set(e, 500, "kube.oom", "cannot encode the patch");
	if (!call(k, "PATCH", url, "application/merge-patch+json", body, &r, e))
		goto cleanup;
	if (r.status == 200)
		ok = true;
	else
		kube_status_err(&r, "patch object", e);
cleanup:
	free(body);
	http_resp_cleanup(&r);
	return ok;
}

bool
kube_patch_object(const struct prov_cluster *k, const char *api_version, const char *kind,
    const char *ns, const char *name, json_t *patch, struct err *e)
{
	return patch_at(k, api_version, kind, ns, name, NULL, patch, e);
}

bool
kube_patch_status(const struct prov_cluster *k, const char *api_version, const char *kind,
    const char *ns, const char *name, json_t *patch, struct err *e)
{
	return patch_at(k, api_version, kind, ns, name, "status", patch, e);
}

bool
kube_list_events(const struct prov_cluster *k, const char *ns, const char *kind,
    const char *name, json_t **items, struct err *e)
{
	char path[512], url[2048], *sel = NULL, *esc;
	struct http_resp r = { 0 };
	json_t *j = NULL;
	bool ok = false;

	*items = NULL;
	if (ns == NULL || name == NULL || kind == NULL)
		return err_set(e, 400, "kube.bad_object", "events need namespace, kind and name");
	snprintf(path, sizeof(path), "/api/v1/namespaces/%s/events", ns);
	if (asprintf(&sel, "involvedObject.kind=%s,involvedObject.name=%s", kind, name) < 0)
		abort();
	esc = creds_form_escape(sel);
	free(sel);
	if (asprintf(&sel, "fieldSelector=%s&limit=500", esc) < 0)
		abort();
	creds_form_free(esc);
	url_of(k, path, sel, url, sizeof(url));
	free(sel);
	if (!call(k, "GET", url, NULL, NULL, &r, e))
		goto cleanup;
	if ((j = kube_list_answer(&r, "list events", e)) == NULL)
		goto cleanup;
	*items = json_incref(json_object_get(j, "items"));
	ok = true;
cleanup:
	json_decref(j);
	http_resp_cleanup(&r);
	return ok;
}

bool
kube_ensure_namespace(const struct prov_cluster *k, const char *ns, struct err *e)
{
	char url[2048], path[512];
	struct http_resp r = { 0 };
	json_t *b;
	char *body;
	bool ok = false;

	snprintf(path, sizeof(path), "/api/v1/namespaces/%s", ns);
	url_of(k, path, NULL, url, sizeof(url));
	if (!call(k, "GET", url, NULL, NULL, &r, e))
		goto cleanup;
	if (r.status == 200) {
		ok = true;
		goto cleanup;
	}
	if (r.status != 404) {
		kube_status_err(&r, "get namespace", e);
		goto cleanup;
	}
	http_resp_cleanup(&r);
	memset(&r, 0, sizeof(r));
	url_of(k, "/api/v1/namespaces", NULL, url, sizeof(url));
	b = json_pack("{s:s, s:s, s:{s:s, s:{s:s}}}", "apiVersion", "v1", "kind", "Namespace",
	    "metadata", "name", ns, "labels", "app.kubernetes.io/managed-by", "fleetd");
	body = json_dumps(b, JSON_COMPACT);
	json_decref(b);
	ok = call(k, "POST", url, "application/json", body, &r, e);
	free(body);
	if (ok && r.status != 201 && r.status != 200 && r.status != 409)
		ok = kube_status_err(&r, "create namespace", e);
cleanup:
	http_resp_cleanup(&r);
	return ok;
}

bool
kube_check(const struct prov_cluster *k, struct err *e)
{
	char url[2048];
	struct http_resp r = { 0 };
	bool ok = false;

	if (k->api_server == NULL || strncmp(k->api_server, "https://", 8) != 0)
		return err_set(e, 400, "kube.bad_api_server", "api server must be an https url");
	url_of(k, "/version", NULL, url, sizeof(url));
	if (!call(k, "GET", url, NULL, NULL, &r, e))
		goto cleanup;
	if (r.status != 200) {
		kube_status_err(&r, "version", e);
		goto cleanup;
	}
	ok = true;
cleanup:
	http_resp_cleanup(&r);
	return ok;
}
