/* provider: what the drivers share — pool lists, the batch fetch with its per-call
 * trampoline, provider error mapping, phase-2 check entries and the ops lookup. */
#include <stdarg.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "providers/provider.h"

void
prov_pools_init(struct prov_pools *p)
{
	memset(p, 0, sizeof(*p));
}

void
prov_pools_cleanup(struct prov_pools *p)
{
	if (p == NULL)
		return;
	free(p->v);
	free(p->q);
	json_decref(p->extra);
	memset(p, 0, sizeof(*p));
}

struct prov_pool *
prov_pools_add(struct prov_pools *p)
{
	struct prov_pool *pool;

	if (p->n == p->cap) {
		p->cap = p->cap ? p->cap * 2 : 8;
		p->v = realloc(p->v, p->cap * sizeof(*p->v));
		if (p->v == NULL)
			abort();
	}
	pool = &p->v[p->n++];
	memset(pool, 0, sizeof(*pool));
	pool->quota_left = -1;
	return pool;
}

struct prov_pool *
prov_pools_find(struct prov_pools *p, const char *name)
{
	for (size_t i = 0; name != NULL && i < p->n; i++)
		if (strcmp(p->v[i].name, name) == 0)
			return &p->v[i];
	return NULL;
}

void
prov_pools_add_quota(struct prov_pools *p, const char *metric, double limit, double usage)
{
	if (p->nq == p->capq) {
		p->capq = p->capq ? p->capq * 2 : 16;
		p->q = realloc(p->q, p->capq * sizeof(*p->q));
		if (p->q == NULL)
			abort();
	}
	snprintf(p->q[p->nq].metric, sizeof(p->q[p->nq].metric), "%s", metric);
	p->q[p->nq].limit = limit;
	p->q[p->nq].usage = usage;
	p->nq++;
}

void
prov_pools_add_region(struct prov_pools *p, const struct prov_pools *region)
{
	const char *k;
	json_t *v;

	for (size_t i = 0; i < region->nq; i++)
		prov_pools_add_quota(p, region->q[i].metric, region->q[i].limit,
		    region->q[i].usage);
	if (region->extra == NULL)
		return;
	if (p->extra == NULL)
		p->extra = json_object();
	json_object_foreach(region->extra, k, v)
		json_object_set_new(p->extra, k, json_deep_copy(v));
}

/* The index of metric's quota in p, p->nq when none. */
static size_t
quota_index(const struct prov_pools *p, const char *metric)
{
	size_t i;

	if (metric == NULL)
		return p->nq;
	for (i = 0; i < p->nq; i++)
		if (strcmp(p->q[i].metric, metric) == 0)
			break;
	return i;
}

const struct prov_quota *
prov_pools_quota(const struct prov_pools *p, const char *metric)
{
	size_t i = quota_index(p, metric);

	return i < p->nq ? &p->q[i] : NULL;
}

struct prov_quota *
prov_pools_quota_mut(struct prov_pools *p, const char *metric)
{
	size_t i = quota_index(p, metric);

	return i < p->nq ? &p->q[i] : NULL;
}

/* ---- fetch */

struct step {
	struct prov_fetch	*f;
	prov_step_fn		 fn;
	void			*ctx;
	struct timespec		 t0;
};

static double
ms_since(const struct timespec *t0)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)(t.tv_sec - t0->tv_sec) * 1e3 + (double)(t.tv_nsec - t0->tv_nsec) / 1e6;
}

void
prov_fetch_init(struct prov_fetch *f, struct http_batch *b)
{
	memset(f, 0, sizeof(*f));
	f->b = b;
}

static void
trampoline(struct http_batch *b, const struct http_req *req, struct http_resp *resp,
    const struct err *e)
{
	struct step *s = req->user;
	struct prov_fetch *f = s->f;

	(void)b;
	f->calls++;
	f->latency_ms += ms_since(&s->t0);
	if (e != NULL || resp->status >= 400)
		f->errors++;
	s->fn(f, s->ctx, resp, e);
	free(s);
	if (--f->pending == 0 && f->done != NULL)
		f->done(f);
}

bool
prov_fetch_add(struct prov_fetch *f, struct http_req *req, prov_step_fn fn, void *ctx)
{
	struct step *s = calloc(1, sizeof(*s));
	struct err e = { 0 };

	if (s == NULL)
		abort();
	s->f = f;
	s->fn = fn;
	s->ctx = ctx;
	clock_gettime(CLOCK_MONOTONIC, &s->t0);
	if (req->timeout_ms == 0)
		req->timeout_ms = f->timeout_ms > 0 ? f->timeout_ms : PROV_TIMEOUT_MS;
	if (req->retry.max_attempts == 0)
		req->retry = f->retry;
	req->done = trampoline;
	req->user = s;
	f->pending++;
	if (!http_batch_add(f->b, req, &e)) {
		f->pending--;
		free(s);
		prov_fetch_fail(f, &e);
		return false;
	}
	return true;
}

void
prov_fetch_fail(struct prov_fetch *f, const struct err *e)
{
	if (f->failed)
		return;
	f->failed = true;
	if (e != NULL)
		f->err = *e;
	else
		err_set(&f->err, 500, "prov.failed", "provider call failed");
}

bool
prov_fetch_run_sync(struct prov_fetch *f, struct err *e)
{
	if (!http_batch_run(f->b, e))
		return false;
	if (f->failed) {
		*e = f->err;
		return false;
	}
	return true;
}

bool
prov_status_err(const struct http_resp *r, const char *what, struct err *e)
{
	long st = r ? r->status : 0;

	if (st == 401 || st == 403)
		return err_set(e, 401, "prov.unauthorized", "%s: credentials refused (%ld)", what,
		    st);
	if (st == 404)
		return err_set(e, 404, "prov.not_found", "%s: not found", what);
	if (st == 429) {
		err_set(e, 429, "prov.throttled", "%s: throttled", what);
		e->retry_after = r->retry_after > 0 ? r->retry_after : 0;
		return false;
	}
	return err_set(e, 502, "prov.bad_status", "%s: unexpected status %ld", what, st);
}

json_t *
prov_json_object(const char *body, size_t len, const char *what, struct err *e)
{
	json_t *j = body ? json_loadb(body, len, 0, NULL) : NULL;

	if (!json_is_object(j)) {
		json_decref(j);
		err_set(e, 502, "prov.bad_json", "%s: answer is not a json object", what);
		return NULL;
	}
	return j;
}

void
prov_json_next(json_t *v, char **next)
{
	const char *t = json_string_value(v);

	*next = t != NULL && t[0] != '\0' ? strdup(t) : NULL;
}

bool
prov_page_ok(struct prov_fetch *f, const struct http_resp *r, const struct err *e,
    const char *what, prov_status_fn status)
{
	struct err pe = { 0 };

	if (e != NULL) {
		prov_fetch_fail(f, e);
		return false;
	}
	if (r->status != 200) {
		status(r, what, &pe);
		prov_fetch_fail(f, &pe);
		return false;
	}
	return true;
}

bool
prov_page_more(struct prov_fetch *f, int pages, const char *code, const char *what)
{
	struct err pe = { 0 };

	if (pages < (f->max_pages > 0 ? f->max_pages : 100))
		return true;
	err_set(&pe, 502, code, "%s: too many pages", what);
	prov_fetch_fail(f, &pe);
	return false;
}

bool
prov_page_get(struct prov_fetch *f, const char *url, const char *bearer, prov_step_fn fn,
    void *ctx)
{
	struct http_req rq = { 0 };

	rq.url = url;
	rq.bearer = bearer;
	if (prov_fetch_add(f, &rq, fn, ctx))
		return true;
	free(ctx);
	return false;
}

bool
prov_cluster_id_ok(const struct prov_pool_job *job, const char *prefix, const char *msg,
    struct err *e)
{
	const char *id = job->cluster->provider_cluster_id;

	if (id != NULL && strncmp(id, prefix, strlen(prefix)) == 0)
		return true;
	return err_set(e, 400, "prov.bad_cluster_id", "%s", msg);
}

bool
prov_call(struct http_req *rq, struct http_resp *r, struct err *e)
{
	rq->timeout_ms = PROV_TIMEOUT_MS;
	rq->retry.max_attempts = 2;
	if (http_do(rq, r, e))
		return true;
	http_resp_cleanup(r);
	return false;
}

bool
prov_get(const char *url, const char *bearer, struct http_resp *r, struct err *e)
{
	struct http_req rq = { 0 };

	rq.url = url;
	rq.bearer = bearer;
	return prov_call(&rq, r, e);
}

bool
prov_verified(bool all, struct err *e)
{
	if (err_is_set(e))
		return false;
	if (!all)
		return err_set(e, 422, "iam.verification_failed", "the iam pair failed "
		    "verification");
	return true;
}

void
prov_check_add(json_t *checks, const char *check, bool ok, const char *pointer,
    const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	json_array_append_new(checks, json_pack("{s:s, s:b, s:s, s:s}", "check", check,
	    "ok", ok, "message", msg, "pointer", pointer ? pointer : ""));
}

const struct prov_ops *
prov_ops_get(const char *provider)
{
	if (provider == NULL)
		return NULL;
	if (strcmp(provider, "gke") == 0)
		return &prov_gke_ops;
	if (strcmp(provider, "aks") == 0)
		return &prov_aks_ops;
	if (strcmp(provider, "hyperpod") == 0)
		return &prov_hyperpod_ops;
	return NULL;
}

static bool
list_once(const struct prov_ops *ops, const struct prov_cloud *c,
    const struct prov_cluster *k, struct prov_pools *out, struct err *e)
{
	struct prov_creds cr;
	struct prov_pool_job job = { c, k, &cr, out };
	struct prov_fetch f;
	bool ok = false;

	if (!prov_creds_get(c, NULL, &cr, e))
		return false;
	prov_fetch_init(&f, http_batch_new(4));
	if (f.b == NULL)
		return err_set(e, 500, "prov.oom", "out of memory");
	f.retry = (struct http_retry){ 3, 200, 5000 };
	if (!ops->pools_begin(&f, &job, e) ||
	    (ops->region_begin != NULL && !ops->region_begin(&f, &job, e)))
		goto cleanup;
	if (!prov_fetch_run_sync(&f, e))
		goto cleanup;
	ops->pools_finish(&job);
	ok = true;
cleanup:
	http_batch_free(f.b);
	memset(&cr, 0, sizeof(cr));
	return ok;
}

bool
prov_list_pools(const struct prov_cloud *c, const struct prov_cluster *k,
    struct prov_pools *out, struct err *e)
{
	const struct prov_ops *ops = prov_ops_get(c->provider);

	if (ops == NULL)
		return err_set(e, 400, "prov.unknown_provider", "unknown provider");
	if (list_once(ops, c, k, out, e))
		return true;
	if (e->status != 401)
		return false;
	/* expired or revoked credentials: fetch fresh ones, once */
	prov_creds_invalidate(c->id);
	prov_pools_cleanup(out);
	prov_pools_init(out);
	err_clear(e);
	return list_once(ops, c, k, out, e);
}

static bool
put(char *dst, size_t n, const char *v)
{
	if (v == NULL)
		v = "";
	if (strlen(v) >= n)
		return false;
	memcpy(dst, v, strlen(v) + 1);
	return true;
}

bool
prov_cloud_fill(struct prov_cloud *c, const char *id, const char *provider,
    const char *region, const char *account, const char *external_id,
    const char *control_plane_role, const char *cluster_role, struct err *e)
{
	json_t *a = account ? json_loads(account, 0, NULL) : json_object();
	bool ok;

	memset(c, 0, sizeof(*c));
	ok = json_is_object(a) && put(c->id, sizeof(c->id), id) &&
	    put(c->provider, sizeof(c->provider), provider) &&
	    put(c->region, sizeof(c->region), region) &&
	    put(c->project, sizeof(c->project), json_string_value(json_object_get(a, "project"))) &&
	    put(c->subscription, sizeof(c->subscription),
	    json_string_value(json_object_get(a, "subscription_id"))) &&
	    put(c->tenant, sizeof(c->tenant), json_string_value(json_object_get(a, "tenant_id"))) &&
	    put(c->resource_group, sizeof(c->resource_group),
	    json_string_value(json_object_get(a, "resource_group"))) &&
	    put(c->account_id, sizeof(c->account_id),
	    json_string_value(json_object_get(a, "account_id"))) &&
	    put(c->external_id, sizeof(c->external_id), external_id) &&
	    put(c->control_plane_role, sizeof(c->control_plane_role), control_plane_role) &&
	    put(c->cluster_role, sizeof(c->cluster_role), cluster_role);
	json_decref(a);
	if (!ok)
		return err_set(e, 400, "prov.bad_account", "cloud account or identities unreadable");
	return true;
}

long long
prov_json_count(json_t *v, long long dflt)
{
	double d;
	char *end;

	if (v == NULL || json_is_null(v))
		return dflt;
	if (json_is_integer(v)) {
		json_int_t i = json_integer_value(v);

		return i >= 0 && i <= PROV_COUNT_MAX ? (long long)i : -1;
	}
	if (json_is_real(v))
		d = json_real_value(v);
	else if (json_is_string(v)) {
		d = strtod(json_string_value(v), &end);	/* Google sends int64 as strings */
		if (end == json_string_value(v) || *end != '\0')
			return -1;
	} else
		return -1;
	if (!isfinite(d) || d < 0 || d > (double)PROV_COUNT_MAX || d != floor(d))
		return -1;
	return (long long)d;
}
