/* poller: one refresh of every member cluster — read clusters and clouds, close the
 * transaction, run credentials, provider and Kubernetes calls of all clusters on one
 * http_batch, the reads of a cloud's region (quotas, reservations, SKUs) once for all its
 * clusters; as each cluster finishes, a writer thread replaces its capacity rows in its
 * own short transaction while the other clusters' calls go on. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/config.h"
#include "core/crypto.h"
#include "core/db.h"
#include "core/log.h"
#include "providers/kube.h"
#include "providers/provider.h"
#include "regions/catalog.h"
#include "regions/cluster.h"
#include "regions/flavor.h"
#include "core/textbuf.h"
#include "regions/poller.h"
#include "regions/poller_int.h"

#define WRITERS	4	/* threads writing finished clusters (database connections) */
#define PROBE_S	300	/* how often a refreshed cluster's batch scheduler is probed again */

struct job;

/* The reads of one cloud's region (quotas, reservations, SKUs): made once per refresh for
 * all the cloud's clusters, each of which gets a copy before it is written. */
struct region {
	const struct prov_cloud	*cloud;		/* the lead's */
	const struct prov_ops	*ops;
	struct prov_creds	 creds;
	struct prov_pools	 pools;
	struct prov_pool_job	 pj;
	struct prov_fetch	 fc, fr;
	bool			 retried;	/* credentials refreshed once after a 401 */
	bool			 done;
	struct err		 err;
	struct job		*lead;		/* the member whose cloud it reads and whose
						 * metrics count its calls */
	struct job		*first;		/* members: first .. first + n - 1 */
	size_t			 n;
};

/* Finished clusters waiting for a writer. */
struct wq {
	pthread_mutex_t	 mu;
	pthread_cond_t	 cv;
	struct job	**v;
	size_t		 head, tail;	/* v[head..tail) wait */
	bool		 closed;
};

struct job {
	struct wq		*q;
	bool			 queued;	/* handed to a writer */
	struct poller_result	 res;		/* the writer's outcome */
	struct prov_cloud	 cloud;
	char			*id, *name, *api, *ca, *token, *pcid;
	struct prov_cluster	 k;
	const struct prov_ops	*ops;
	struct prov_creds	 creds;
	struct prov_pools	 pools;
	struct kube_capacity	 kube;
	struct region		*region;	/* its cloud's shared reads, or NULL */
	struct prov_pool_job	 pj;
	struct prov_fetch	 fc, fp, fk;
	bool			 retried;	/* credentials refreshed once after a 401 */
	bool			 prov_done, kube_done;
	struct err		 perr, kerr;	/* provider / kubernetes failure */
	double			 began_ms;	/* monotonic, when the fetch began */
	int			 calls[2], errors[2];	/* [0] provider, [1] kubernetes */
	double			 lat_ms[2];
	double			 last_ok;	/* epoch of the last good refresh, 0 = never */
	char			*sched;		/* batch_scheduler */
	char			*rack_key, *block_key;	/* the cluster's declared topology
						 * keys (labels fleet.io/rack-key, -block-key) */
	json_t			*kueue;		/* its registration (kueue), or NULL */
	double			 probe_age;	/* seconds since the last batch probe, -1 never */
};

static long call_timeout_ms = PROV_TIMEOUT_MS;
static int max_attempts = 3;

void
poller_set_limits(long timeout_ms, int attempts)
{
	call_timeout_ms = timeout_ms > 0 ? timeout_ms : PROV_TIMEOUT_MS;
	max_attempts = attempts > 0 ? attempts : 3;
}

static void
fetch_init(struct prov_fetch *f, struct http_batch *b, void (*done)(struct prov_fetch *),
    void *user)
{
	prov_fetch_init(f, b);
	f->timeout_ms = call_timeout_ms;
	f->retry = (struct http_retry){ max_attempts, 200, 5000 };
	f->done = done;
	f->user = user;
}

static void
account(struct job *j, int side, const struct prov_fetch *f)
{
	j->calls[side] += f->calls;
	j->errors[side] += f->errors;
	j->lat_ms[side] += f->latency_ms;
}

static void creds_start(struct job *j, struct http_batch *b);

/* Hands the cluster to a writer once its provider and Kubernetes sides and its cloud's
 * region reads are done, with a copy of the latter (made here, on the batch's thread); the
 * batch no longer touches the job's pools or nodes after that. */
static void
settle(struct job *j)
{
	if (!j->prov_done || !j->kube_done || j->queued || j->q == NULL ||
	    (j->region != NULL && !j->region->done))
		return;
	if (j->region != NULL && !err_is_set(&j->perr)) {
		if (err_is_set(&j->region->err))
			j->perr = j->region->err;
		else
			prov_pools_add_region(&j->pools, &j->region->pools);
	}
	j->queued = true;
	pthread_mutex_lock(&j->q->mu);
	j->q->v[j->q->tail++] = j;
	pthread_cond_signal(&j->q->cv);
	pthread_mutex_unlock(&j->q->mu);
}

static void
prov_finished(struct prov_fetch *f)
{
	struct job *j = f->user;

	account(j, 0, f);
	if (f->failed && f->err.status == 401 && !j->retried) {
		j->retried = true;	/* expired or revoked: fresh credentials, once */
		prov_creds_invalidate(j->cloud.id);
		prov_pools_cleanup(&j->pools);
		prov_pools_init(&j->pools);
		creds_start(j, f->b);
		return;
	}
	if (f->failed)
		j->perr = f->err;
	j->prov_done = true;
	settle(j);
}

static void
creds_finished(struct prov_fetch *f)
{
	struct job *j = f->user;
	struct err e = { 0 };

	account(j, 0, f);
	if (f->failed) {
		j->perr = f->err;
		j->prov_done = true;
		settle(j);
		return;
	}
	fetch_init(&j->fp, f->b, prov_finished, j);
	if (!j->ops->pools_begin(&j->fp, &j->pj, &e)) {
		prov_fetch_fail(&j->fp, &e);
		if (j->fp.pending == 0)
			prov_finished(&j->fp);
	}
}

static void
creds_start(struct job *j, struct http_batch *b)
{
	struct err e = { 0 };

	fetch_init(&j->fc, b, creds_finished, j);
	if (!prov_creds_begin(&j->fc, &j->cloud, NULL, &j->creds, &e))
		prov_fetch_fail(&j->fc, &e);
	if (j->fc.pending == 0)		/* cached, or failed before any call */
		creds_finished(&j->fc);
}

static void region_start(struct region *r, struct http_batch *b);

/* The region's reads ended: each member that is otherwise done goes to a writer. */
static void
region_finished(struct prov_fetch *f)
{
	struct region *r = f->user;

	account(r->lead, 0, f);
	if (f->failed && f->err.status == 401 && !r->retried) {
		r->retried = true;	/* expired or revoked: fresh credentials, once */
		prov_creds_invalidate(r->cloud->id);
		prov_pools_cleanup(&r->pools);
		prov_pools_init(&r->pools);
		region_start(r, f->b);
		return;
	}
	if (f->failed)
		r->err = f->err;
	r->done = true;
	for (size_t i = 0; i < r->n; i++)
		settle(&r->first[i]);
}

static void
region_creds_finished(struct prov_fetch *f)
{
	struct region *r = f->user;
	struct err e = { 0 };

	account(r->lead, 0, f);
	fetch_init(&r->fr, f->b, region_finished, r);
	if (f->failed)
		prov_fetch_fail(&r->fr, &f->err);
	else if (!r->ops->region_begin(&r->fr, &r->pj, &e))
		prov_fetch_fail(&r->fr, &e);
	if (r->fr.pending == 0)		/* failed before any call */
		region_finished(&r->fr);
}

static void
region_start(struct region *r, struct http_batch *b)
{
	struct err e = { 0 };

	fetch_init(&r->fc, b, region_creds_finished, r);
	if (!prov_creds_begin(&r->fc, r->cloud, NULL, &r->creds, &e))
		prov_fetch_fail(&r->fc, &e);
	if (r->fc.pending == 0)		/* cached, or failed before any call */
		region_creds_finished(&r->fc);
}

static void
kube_finished(struct prov_fetch *f)
{
	struct job *j = f->user;

	account(j, 1, f);
	if (f->failed)
		j->kerr = f->err;
	else
		kube_capacity_finish(&j->kube);
	j->kube_done = true;
	settle(j);
}

static double
now_ms(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

static void
job_start(struct job *j, struct http_batch *b)
{
	struct err e = { 0 };

	j->began_ms = now_ms();
	fetch_init(&j->fk, b, kube_finished, j);
	if (!kube_capacity_begin(&j->fk, &j->k, &j->kube, &e)) {
		prov_fetch_fail(&j->fk, &e);
		if (j->fk.pending == 0)
			kube_finished(&j->fk);
	}
	creds_start(j, b);
}

static void
job_free(struct job *j)
{
	if (j == NULL)
		return;
	free(j->id);
	free(j->name);
	free(j->api);
	free(j->ca);
	if (j->token != NULL)
		memset(j->token, 0, strlen(j->token));
	free(j->token);
	free(j->pcid);
	free(j->rack_key);
	free(j->block_key);
	free(j->sched);
	json_decref(j->kueue);
	memset(&j->creds, 0, sizeof(j->creds));
	prov_pools_cleanup(&j->pools);
	kube_capacity_cleanup(&j->kube);
}

/* ---- reading clusters */

static char *
dup(const PGresult *r, int row, int col)
{
	const char *v = db_val(r, row, col);

	return strdup(v ? v : "");
}

/* Reads every cluster (only: those listed) with its cloud, the clusters of a cloud next
 * to each other. */
static bool
load_jobs(const char *only, struct job **out, size_t *n, struct err *e)
{
	static const char sql[] =
	    "SELECT k.id, k.name, k.api_server, k.ca_cert, k.credentials_sealed,"
	    " k.provider_cluster_id, c.id, c.provider, c.region, c.account::text, c.external_id,"
	    " p.control_plane_role, p.cluster_role,"
	    " coalesce(extract(epoch FROM k.last_refresh_at), 0), k.batch_scheduler,"
	    " k.kueue::text, coalesce(extract(epoch FROM now() - k.batch_probe_at), -1),"
	    " coalesce(k.labels->>'fleet.io/rack-key', ''),"
	    " coalesce(k.labels->>'fleet.io/block-key', '')"
	    " FROM clusters k JOIN clouds c ON c.id = k.cloud_id"
	    " LEFT JOIN iam_pairs p ON p.cloud_id = c.id"
	    " WHERE $1::uuid[] IS NULL OR k.id = ANY($1::uuid[]) ORDER BY c.id, k.id";
	struct db *c = NULL;
	PGresult *r = NULL;
	uint8_t key[32];
	struct job *v = NULL;
	int rows = 0;
	bool ok = false;

	*out = NULL;
	*n = 0;
	if (!cluster_master_key(key, e))
		return false;
	if ((c = db_acquire(5000, e)) == NULL)
		goto cleanup;
	/* the pool -> flavor mapping (poller_rows) reads the catalog: the built-ins and the
	 * flavors table */
	if (!flavor_sync(c, e) || !db_exec(c, sql, 1, (const char *const[]){ only }, &r, e))
		goto cleanup;
	db_release(c);		/* nothing held across the network phase */
	c = NULL;
	rows = PQntuples(r);
	v = calloc(rows ? (size_t)rows : 1, sizeof(*v));
	if (v == NULL)
		abort();
	for (int i = 0; i < rows; i++) {
		struct job *j = &v[i];

		j->id = dup(r, i, 0);
		j->name = dup(r, i, 1);
		j->api = dup(r, i, 2);
		j->ca = dup(r, i, 3);
		j->pcid = dup(r, i, 5);
		j->last_ok = atof(db_val(r, i, 13) ? db_val(r, i, 13) : "0");
		j->sched = dup(r, i, 14);
		j->kueue = db_val(r, i, 15) ? json_loads(db_val(r, i, 15), 0, NULL) : NULL;
		j->probe_age = atof(db_val(r, i, 16) ? db_val(r, i, 16) : "-1");
		prov_pools_init(&j->pools);
		j->ops = prov_ops_get(db_val(r, i, 7));
		j->rack_key = dup(r, i, 17);
		j->block_key = dup(r, i, 18);
		kube_capacity_init(&j->kube, j->ops ? j->ops->pool_label : NULL,
		    j->rack_key[0] ? j->rack_key : j->ops ? j->ops->rack_label : NULL);
		j->kube.block_label = j->block_key[0] ? j->block_key : j->ops ?
		    j->ops->block_label : NULL;
		if (!prov_cloud_fill(&j->cloud, db_val(r, i, 6), db_val(r, i, 7), db_val(r, i, 8),
		    db_val(r, i, 9), db_val(r, i, 10), db_val(r, i, 11), db_val(r, i, 12),
		    &j->perr) || j->ops == NULL) {
			if (!err_is_set(&j->perr))
				err_set(&j->perr, 500, "poller.bad_cloud", "unknown provider");
			j->prov_done = j->kube_done = true;
			j->kerr = j->perr;
		}
		j->token = cluster_open_token(key, db_val(r, i, 4), j->id, &j->kerr);
		if (j->token == NULL) {
			j->perr = j->kerr;
			j->prov_done = j->kube_done = true;
		}
		j->k = (struct prov_cluster){ j->id, j->name, j->api, j->ca, j->token, j->pcid,
		    NULL };
		j->pj = (struct prov_pool_job){ &j->cloud, &j->k, &j->creds, &j->pools };
	}
	*out = v;
	*n = (size_t)rows;
	ok = true;
cleanup:
	memset(key, 0, sizeof(key));
	PQclear(r);
	db_release(c);
	return ok;
}

/* Groups the clusters of each cloud (adjacent, see load_jobs) under one region when the
 * provider has region reads and a member will call it; *nr regions in the new array. */
static struct region *
regions_make(struct job *v, size_t n, size_t *nr)
{
	struct region *rv = calloc(n ? n : 1, sizeof(*rv));
	size_t i = 0, k;

	if (rv == NULL)
		abort();
	*nr = 0;
	for (; i < n; i = k) {
		struct region *r = &rv[*nr];
		struct job *lead = NULL;

		for (k = i; k < n && strcmp(v[k].cloud.id, v[i].cloud.id) == 0; k++)
			if (lead == NULL && !v[k].prov_done && v[k].ops->region_begin != NULL)
				lead = &v[k];
		if (lead == NULL)
			continue;
		r->lead = lead;
		r->cloud = &lead->cloud;
		r->ops = lead->ops;
		prov_pools_init(&r->pools);
		r->pj = (struct prov_pool_job){ r->cloud, &lead->k, &r->creds, &r->pools };
		r->first = &v[i];
		r->n = k - i;
		for (size_t m = i; m < k; m++)
			v[m].region = r;
		(*nr)++;
	}
	return rv;
}

static void
regions_free(struct region *rv, size_t nr)
{
	for (size_t i = 0; rv != NULL && i < nr; i++) {
		prov_pools_cleanup(&rv[i].pools);
		memset(&rv[i].creds, 0, sizeof(rv[i].creds));
	}
	free(rv);
}

/* ---- metrics */

static pthread_mutex_t mlock = PTHREAD_MUTEX_INITIALIZER;
static const char *const sides[] = { "gke", "aks", "hyperpod", "kubernetes" };
static struct { long long calls, errors; double lat_ms; } mstat[4];
struct age { char id[40]; char name[128]; double last_ok; };
static struct age *ages;
static size_t nages;

static int
side_of(const char *provider)
{
	for (int i = 0; i < 3; i++)
		if (strcmp(sides[i], provider) == 0)
			return i;
	return -1;
}

static void
metrics_record(const struct job *v, size_t n)
{
	pthread_mutex_lock(&mlock);
	free(ages);
	ages = calloc(n ? n : 1, sizeof(*ages));
	if (ages == NULL)
		abort();
	nages = n;
	for (size_t i = 0; i < n; i++) {
		int s = side_of(v[i].cloud.provider);

		if (s >= 0) {
			mstat[s].calls += v[i].calls[0];
			mstat[s].errors += v[i].errors[0];
			mstat[s].lat_ms += v[i].lat_ms[0];
		}
		mstat[3].calls += v[i].calls[1];
		mstat[3].errors += v[i].errors[1];
		mstat[3].lat_ms += v[i].lat_ms[1];
		snprintf(ages[i].id, sizeof(ages[i].id), "%s", v[i].id);
		snprintf(ages[i].name, sizeof(ages[i].name), "%s", v[i].name);
		ages[i].last_ok = v[i].last_ok;
	}
	pthread_mutex_unlock(&mlock);
}

void
poller_metrics(char **buf, size_t *len, size_t *cap)
{
	double now = (double)time(NULL);

	pthread_mutex_lock(&mlock);
	textbuf_appendf(buf, len, cap, "# HELP fleetd_provider_calls_total Provider and "
	    "Kubernetes API calls made by the capacity poller.\n"
	    "# TYPE fleetd_provider_calls_total counter\n");
	for (int i = 0; i < 4; i++)
		textbuf_appendf(buf, len, cap, "fleetd_provider_calls_total{provider=\"%s\"} %lld\n",
		    sides[i], mstat[i].calls);
	textbuf_appendf(buf, len, cap, "# HELP fleetd_provider_errors_total Calls that failed or "
	    "answered an error status.\n# TYPE fleetd_provider_errors_total counter\n");
	for (int i = 0; i < 4; i++)
		textbuf_appendf(buf, len, cap, "fleetd_provider_errors_total{provider=\"%s\"} %lld\n",
		    sides[i], mstat[i].errors);
	textbuf_appendf(buf, len, cap, "# HELP fleetd_provider_latency_seconds Wall time of "
	    "poller calls, retries included.\n# TYPE fleetd_provider_latency_seconds summary\n");
	for (int i = 0; i < 4; i++)
		textbuf_appendf(buf, len, cap,
		    "fleetd_provider_latency_seconds_sum{provider=\"%s\"} %.6f\n"
		    "fleetd_provider_latency_seconds_count{provider=\"%s\"} %lld\n", sides[i],
		    mstat[i].lat_ms / 1000.0, sides[i], mstat[i].calls);
	textbuf_appendf(buf, len, cap, "# HELP fleetd_cluster_snapshot_age_seconds Seconds since "
	    "the cluster's last good capacity refresh.\n"
	    "# TYPE fleetd_cluster_snapshot_age_seconds gauge\n");
	for (size_t i = 0; i < nages; i++)
		if (ages[i].last_ok > 0)
			textbuf_appendf(buf, len, cap, "fleetd_cluster_snapshot_age_seconds{cluster_id="
			    "\"%s\",cluster=\"%s\"} %.0f\n", ages[i].id, ages[i].name,
			    now - ages[i].last_ok > 0 ? now - ages[i].last_ok : 0);
	pthread_mutex_unlock(&mlock);
}

/* ---- the refresh */

/* What the cluster's batch scheduler allows, read again (writer thread, a few GETs on
 * the member, no transaction open) and stored; a drift shows in GET cluster and explain. */
static void
probe(struct job *j)
{
	json_t *p = cluster_batch_probe(&j->k, j->sched,
	    json_is_true(json_object_get(j->kueue, "elastic_jobs")),
	    json_string_value(json_object_get(j->kueue, "cluster_queue")));
	struct err e = { 0 };
	struct db *c = NULL;

	if (p != NULL && (c = db_acquire(5000, &e)) != NULL)
		cluster_set_probe(c, j->id, p, &e);
	if (err_is_set(&e))
		log_warn(NULL, "poller", "batch probe not stored", "{s:s, s:s}", "cluster", j->id,
		    "code", e.code);
	if (p != NULL && strcmp(json_string_value(json_object_get(p, "condition")),
	    "mismatch") == 0)
		log_info(NULL, "poller", "batch scheduler mismatch", "{s:s, s:s}", "cluster",
		    j->name, "message", json_string_value(json_object_get(p, "message")));
	db_release(c);
	json_decref(p);
}

/* Writes one finished cluster (writer thread): its rows, or its failure. */
static void
record(struct job *j)
{
	struct poller_result *res = &j->res;
	struct err e = { 0 };

	res->cluster_id = j->id;
	res->age_s = (now_ms() - j->began_ms) / 1e3;
	if (err_is_set(&j->kerr) || err_is_set(&j->perr) || !j->prov_done || !j->kube_done ||
	    (j->region != NULL && !j->region->done)) {
		const struct err *fe = err_is_set(&j->kerr) ? &j->kerr : &j->perr;

		snprintf(res->error, sizeof(res->error), "%s: %s",
		    err_is_set(&j->kerr) ? "kubernetes" : j->cloud.provider,
		    err_is_set(fe) ? fe->msg : "refresh did not finish");
	} else {
		if (j->ops->pools_finish != NULL)
			j->ops->pools_finish(&j->pj);
		res->pools = &j->pools;
		res->kube = &j->kube;
		res->provider = j->cloud.provider;
	}
	if (!poller_record(res, &e))
		log_warn(NULL, "poller", "capacity write failed", "{s:s, s:s}", "cluster",
		    j->id, "code", e.code);
	if (res->error[0] == '\0' && res->written)
		j->last_ok = (double)time(NULL);
	if (res->error[0] == '\0' && res->written && strcmp(j->sched, "kueue") == 0 &&
	    (j->probe_age < 0 || j->probe_age >= PROBE_S))
		probe(j);
	if (res->error[0] != '\0' || !res->written)
		log_info(NULL, "poller", "cluster refresh failed", "{s:s, s:s, s:s}",
		    "cluster", j->name, "provider", j->cloud.provider, "error", res->error);
}

static void *
writer(void *arg)
{
	struct wq *q = arg;
	struct job *j;

	for (;;) {
		pthread_mutex_lock(&q->mu);
		while (q->head == q->tail && !q->closed)
			pthread_cond_wait(&q->cv, &q->mu);
		j = q->head < q->tail ? q->v[q->head++] : NULL;
		pthread_mutex_unlock(&q->mu);
		if (j == NULL)
			return NULL;
		record(j);
	}
}

/* Queues what never finished when the batch ran to its end (a failed batch is fleetd's
 * fault, not the clusters'), lets the writers drain the queue and waits for them; with no
 * writer thread, writes here. */
static void
writers_finish(struct wq *q, pthread_t *w, int nw, struct job *v, size_t n, bool batch_ok)
{
	for (size_t i = 0; batch_ok && i < n; i++)
		if (!v[i].queued) {
			v[i].queued = true;
			pthread_mutex_lock(&q->mu);
			q->v[q->tail++] = &v[i];
			pthread_mutex_unlock(&q->mu);
		}
	pthread_mutex_lock(&q->mu);
	q->closed = true;
	pthread_cond_broadcast(&q->cv);
	pthread_mutex_unlock(&q->mu);
	for (int i = 0; i < nw; i++)
		pthread_join(w[i], NULL);
	if (nw == 0)
		writer(q);
}

/* One batch kept from refresh to refresh, so that its connections (and their TLS
 * sessions) are reused instead of reopened every time; rebuilt when the concurrency
 * changes or a run fails.  Refreshes of one process take turns on it. */
static pthread_mutex_t batch_mu = PTHREAD_MUTEX_INITIALIZER;
static struct http_batch *kept;
static int kept_max;

static struct http_batch *
batch_take(int max)
{
	if (kept != NULL && kept_max != max) {
		http_batch_free(kept);
		kept = NULL;
	}
	if (kept == NULL) {
		kept = http_batch_new(max);
		kept_max = max;
	}
	return kept;
}

bool
poller_refresh_all(int concurrency, const char *only, struct poller_stats *st, struct err *e)
{
	struct wq q = { .mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER };
	struct job *v = NULL;
	struct region *rv = NULL;
	struct http_batch *b = NULL;
	pthread_t w[WRITERS];
	int nw = 0;
	size_t n = 0, nr = 0;
	double t0;
	bool ok = false;

	memset(st, 0, sizeof(*st));
	pthread_mutex_lock(&batch_mu);
	if (!load_jobs(only, &v, &n, e))
		goto cleanup;
	for (size_t i = 0; i < n; i++)
		v[i].res.fenced = only != NULL;
	st->clusters = (int)n;
	rv = regions_make(v, n, &nr);
	b = batch_take(concurrency > 0 ? concurrency : 128);
	q.v = calloc(n ? n : 1, sizeof(*q.v));
	if (b == NULL || q.v == NULL) {
		err_set(e, 500, "poller.oom", "out of memory");
		goto cleanup;
	}
	while (nw < WRITERS && (size_t)nw < n && pthread_create(&w[nw], NULL, writer, &q) == 0)
		nw++;
	t0 = now_ms();
	for (size_t i = 0; i < n; i++)
		v[i].q = &q;
	for (size_t i = 0; i < nr; i++)
		region_start(&rv[i], b);
	for (size_t i = 0; i < n; i++) {
		if (!v[i].prov_done || !v[i].kube_done)
			job_start(&v[i], b);
		else
			settle(&v[i]);
	}
	ok = http_batch_run(b, e);
	st->elapsed_ms = now_ms() - t0;
	writers_finish(&q, w, nw, v, n, ok);
	nw = 0;
	if (!ok)
		goto cleanup;
	for (size_t i = 0; i < n; i++) {
		const struct poller_result *res = &v[i].res;

		st->calls += v[i].calls[0] + v[i].calls[1];
		if (res->error[0] == '\0' && res->written) {
			st->ok++;
			st->rows += res->rows;
		} else {
			st->failed++;
		}
		if (res->unreachable)
			st->unreachable++;
	}
	metrics_record(v, n);
cleanup:
	if (!ok && b != NULL) {		/* calls may be left in it: start afresh next time */
		http_batch_free(b);
		kept = NULL;
	}
	pthread_mutex_unlock(&batch_mu);
	regions_free(rv, nr);
	for (size_t i = 0; i < n; i++)
		job_free(&v[i]);
	free(v);
	free(q.v);
	return ok;
}
