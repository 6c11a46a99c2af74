/* provider: the ops table of each provider driver (gke, aks, hyperpod), the credentials
 * cache, and the batch "fetch" that lets many clusters' calls share one http_batch. */
#ifndef FLEET_PROVIDERS_PROVIDER_H
#define FLEET_PROVIDERS_PROVIDER_H

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

#include "core/err.h"
#include "core/http.h"

#define PROV_TIMEOUT_MS		10000L	/* default per-call timeout */

/* A cloud as the drivers see it (copied from the clouds / iam_pairs rows). */
struct prov_cloud {
	char	id[40];
	char	provider[16];		/* "gke" | "aks" | "hyperpod" */
	char	region[48];
	char	project[64];		/* gke */
	char	subscription[64];	/* aks */
	char	tenant[64];		/* aks */
	char	resource_group[96];	/* aks */
	char	account_id[16];		/* hyperpod */
	char	external_id[160];
	char	control_plane_role[384];	/* locked pair; "" before phase 2 */
	char	cluster_role[384];
};

/* Fills c from a clouds row: account is the row's account JSON text ({"project"} |
 * {"subscription_id","tenant_id","resource_group"} | {"account_id"}); roles may be NULL.
 * 400 "prov.bad_account" when the JSON is unreadable or a field is too long. */
bool	 prov_cloud_fill(struct prov_cloud *c, const char *id, const char *provider,
	    const char *region, const char *account, const char *external_id,
	    const char *control_plane_role, const char *cluster_role, struct err *e);

/* A member cluster; every pointer is borrowed from the caller. */
struct prov_cluster {
	const char	*id;
	const char	*name;
	const char	*api_server;		/* https://host:port[/prefix] */
	const char	*ca_pem;
	const char	*token;			/* decrypted bearer token */
	const char	*provider_cluster_id;	/* GKE path, AKS resource id, HyperPod ARN */
	const char	*provider;		/* "gke", "aks", "hyperpod"; NULL = not said */
};

/* Credentials for one cloud's control-plane identity. */
struct prov_creds {
	char	bearer[4096];		/* gke / aks access token */
	char	access_key[128];	/* hyperpod temporary credentials */
	char	secret_key[128];
	char	session_token[2048];
	double	expires;		/* epoch seconds */
};

/* One pool / agent pool / instance group as the provider API describes it. */
struct prov_pool {
	char	name[96];
	char	machine_type[96];
	char	accel_type[64];		/* provider's accelerator name, "" for none */
	char	flavor[48];		/* catalog flavor, "cpu" without accelerators */
	char	tpu_topology[24];	/* "2x2x4" for TPU slices, else "" */
	int	accel_per_node;
	int	vcpus;			/* per node, 0 = unknown */
	int	nodes;			/* current */
	int	min_nodes;
	int	max_nodes;
	bool	autoscaling;
	bool	spot;
	double	price_hour;		/* per node, from the catalog */
	int	quota_left;		/* accelerators the regional quota still allows, -1 = unknown */
	int	reserved;		/* accelerators held by provider reservations */
	char	capacity_type[16];	/* "" (on_demand, or spot when spot), "reservation",
					 * "flex_start" (issue 27) */
};

/* A regional quota line (GCE quotas[], Azure usages). */
struct prov_quota {
	char	metric[96];
	double	limit;
	double	usage;
};

struct prov_pools {
	struct prov_pool	*v;
	size_t			 n, cap;
	struct prov_quota	*q;
	size_t			 nq, capq;
	int			 pages;	/* pages read (all calls), for tests and loop bounds */
	json_t			*extra;	/* driver scratch until finish (object or NULL) */
};

void	 prov_pools_init(struct prov_pools *p);
void	 prov_pools_cleanup(struct prov_pools *p);
/* Appends a zeroed pool (quota_left -1) and returns it; never NULL (aborts on OOM). */
struct prov_pool *prov_pools_add(struct prov_pools *p);
struct prov_pool *prov_pools_find(struct prov_pools *p, const char *name);
void	 prov_pools_add_quota(struct prov_pools *p, const char *metric, double limit,
	    double usage);
/* The quota of metric in p, NULL when p has none; _mut for a driver that sums or spends
 * it (gke.c). */
const struct prov_quota *prov_pools_quota(const struct prov_pools *p, const char *metric);
struct prov_quota *prov_pools_quota_mut(struct prov_pools *p, const char *metric);
/* Adds copies of region's quotas and extra members (what region_begin read) to p, before
 * pools_finish; region is only read. */
void	 prov_pools_add_region(struct prov_pools *p, const struct prov_pools *region);

/* ---- fetch: a set of requests sharing one batch, finishing with one callback */

struct prov_fetch;
/* Handler of one response.  e is set when no response arrived.  It may add follow-up
 * requests (paging) with prov_fetch_add, and report failure with prov_fetch_fail. */
typedef void (*prov_step_fn)(struct prov_fetch *f, void *ctx, struct http_resp *r,
	    const struct err *e);

struct prov_fetch {
	struct http_batch	*b;
	int			 pending;	/* requests in flight */
	bool			 failed;
	struct err		 err;		/* first failure */
	long			 timeout_ms;	/* per call; 0 = PROV_TIMEOUT_MS */
	struct http_retry	 retry;		/* applied to every request added */
	int			 max_pages;	/* paging bound; 0 = 100 */
	void			(*done)(struct prov_fetch *f);	/* when pending reaches 0 */
	void			*user;
	/* metrics: counted on every response */
	int			 calls;
	int			 errors;
	double			 latency_ms;	/* sum of per-call wall time */
};

void	 prov_fetch_init(struct prov_fetch *f, struct http_batch *b);
/* Queues req with handler fn(ctx); timeout and retry are filled from f when unset.
 * On failure marks f failed and returns false (done still fires when nothing is left). */
bool	 prov_fetch_add(struct prov_fetch *f, struct http_req *req, prov_step_fn fn, void *ctx);
/* Records the first failure (later ones are ignored). */
void	 prov_fetch_fail(struct prov_fetch *f, const struct err *e);
/* Maps a non-2xx provider answer to e: 401/403 -> 401 "prov.unauthorized", 404 ->
 * 404 "prov.not_found", 429 -> 429 "prov.throttled", other -> 502 "prov.bad_status";
 * what names the call ("gke node pools").  Always returns false. */
bool	 prov_status_err(const struct http_resp *r, const char *what, struct err *e);
/* Runs a fetch that owns its batch, synchronously (used by the *_sync helpers). */
bool	 prov_fetch_run_sync(struct prov_fetch *f, struct err *e);

/* ---- credentials (creds.c) */

/* Credentials for role (NULL = c->control_plane_role) of cloud c: from the cache when
 * valid for at least 60 more seconds, else fetched (GKE JWT -> OAuth -> impersonation,
 * AKS client credentials, AWS AssumeRole with the external id).  Thread-safe. */
bool	 prov_creds_get(const struct prov_cloud *c, const char *role, struct prov_creds *out,
	    struct err *e);
/* Queues the fetch of role's credentials into f; on success *out is filled and cached
 * when f finishes without failure.  Uses the cache first (then adds nothing). */
bool	 prov_creds_begin(struct prov_fetch *f, const struct prov_cloud *c, const char *role,
	    struct prov_creds *out, struct err *e);
/* Drops cached credentials of a cloud (all roles), e.g. after a 401. */
void	 prov_creds_invalidate(const char *cloud_id);
void	 prov_creds_cache_clear(void);
/* fleetd's own GCP access token (service-account key -> JWT -> OAuth), cached. */
bool	 prov_gcp_base_token(struct prov_creds *out, struct err *e);

/* Signs an AWS request with SigV4 and fills headers (at most 8) whose strings live in
 * store (caller-provided, >= 8192 bytes).  service: "sagemaker", "iam", "sts". */
struct prov_aws_sig {
	struct http_header	h[8];
	size_t			n;
	char			store[8192];
};
bool	 prov_aws_sign(const char *method, const char *url, const char *region,
	    const char *service, const char *access_key, const char *secret_key,
	    const char *session_token, const char *content_type, const char *target,
	    const char *body, struct prov_aws_sig *out, struct err *e);

/* ---- the ops table */

/* The context one cluster's capacity fetch runs with; owned by the caller and alive
 * until the fetch's done callback. */
struct prov_pool_job {
	const struct prov_cloud		*cloud;
	const struct prov_cluster	*cluster;
	const struct prov_creds		*creds;
	struct prov_pools		*out;
};

struct prov_ops {
	const char	*name;		/* "gke" */
	const char	*pool_label;	/* node label naming the pool */
	const char	*rack_label;	/* node label naming the rack / NVLink domain */
	const char	*block_label;	/* node label naming the scale unit / IB block */
	/* Phase 2: appends one {check, ok, message, pointer} object per check to checks.
	 * True when every check passed; else false with e = 422 "iam.verification_failed"
	 * (checks say what to fix), or 502/504 when the provider could not be asked. */
	bool	(*verify_pair)(const struct prov_cloud *c, const char *control_plane_role,
		    const char *cluster_role, json_t *checks, struct err *e);
	/* Queues the provider calls of one cluster's own pools into f (paging included). */
	bool	(*pools_begin)(struct prov_fetch *f, struct prov_pool_job *job, struct err *e);
	/* Queues the reads of the cloud's region, the same for every cluster of the cloud
	 * (GKE quotas and reservations, AKS SKUs and usages), into f, filling job->out's
	 * quotas and extra; job->cluster is not read.  NULL when the provider has none.  The
	 * poller reads them once per cloud and refresh (prov_pools_add_region). */
	bool	(*region_begin)(struct prov_fetch *f, struct prov_pool_job *job, struct err *e);
	/* After the fetch: quota_left and reservations per pool from the raw lines. */
	void	(*pools_finish)(struct prov_pool_job *job);
};

/* NULL for an unknown provider name. */
const struct prov_ops *prov_ops_get(const char *provider);
/* Synchronous capacity of one cluster: credentials (cached) + pools_begin + finish. */
bool	 prov_list_pools(const struct prov_cloud *c, const struct prov_cluster *k,
	    struct prov_pools *out, struct err *e);

/* A count from a provider answer (integer, real or decimal string): the value when it is
 * a finite whole number in [0, PROV_COUNT_MAX], dflt when v is absent or null, -1 when it
 * is anything else (negative, huge, NaN, garbage) — callers refuse negative counts, so
 * no cast or product of a hostile number can overflow. */
#define PROV_COUNT_MAX	1000000LL
long long prov_json_count(json_t *v, long long dflt);

/* ---- what the drivers' answers and calls share */

/* The answer body as a JSON object (the caller's reference), or NULL with 502
 * "prov.bad_json" naming what ("gke node pools"). */
json_t	*prov_json_object(const char *body, size_t len, const char *what, struct err *e);
/* *next = a copy of the page token / link v when it is a non-empty string, else NULL. */
void	 prov_json_next(json_t *v, char **next);
/* Maps a non-2xx answer of one provider (prov_status_err, kube_status_err, ...). */
typedef bool (*prov_status_fn)(const struct http_resp *r, const char *what, struct err *e);
/* First step of a page handler: true when r is a 200 answer; otherwise fails f (with e, or
 * with r's status mapped by status) and returns false. */
bool	 prov_page_ok(struct prov_fetch *f, const struct http_resp *r, const struct err *e,
	    const char *what, prov_status_fn status);
/* True when a list of pages pages long may fetch one more; otherwise fails f with 502
 * code ("prov.paging") "<what>: too many pages" and returns false. */
bool	 prov_page_more(struct prov_fetch *f, int pages, const char *code, const char *what);
/* Queues a GET of url with bearer, answered by fn(ctx); on failure ctx is freed (and f
 * failed, see prov_fetch_add). */
bool	 prov_page_get(struct prov_fetch *f, const char *url, const char *bearer,
	    prov_step_fn fn, void *ctx);
/* pools_begin's first check: the cluster's provider id starts with prefix; else 400
 * "prov.bad_cluster_id" with msg. */
bool	 prov_cluster_id_ok(const struct prov_pool_job *job, const char *prefix, const char *msg,
	    struct err *e);
/* One synchronous phase-2 call: PROV_TIMEOUT_MS, two attempts.  False with e when no
 * answer arrived (r is then cleaned up); any status is an answer. */
bool	 prov_call(struct http_req *rq, struct http_resp *r, struct err *e);
/* prov_call of a GET of url with the bearer token. */
bool	 prov_get(const char *url, const char *bearer, struct http_resp *r, struct err *e);
/* The end of every verify_pair: false with 422 "iam.verification_failed" when a check
 * failed (!all), false when e is already set, else true. */
bool	 prov_verified(bool all, struct err *e);

/* Appends one {check, ok, message, pointer} entry to checks. */
void	 prov_check_add(json_t *checks, const char *check, bool ok, const char *pointer,
	    const char *fmt, ...) __attribute__((format(printf, 5, 6)));

extern const struct prov_ops prov_gke_ops;
extern const struct prov_ops prov_aks_ops;
extern const struct prov_ops prov_hyperpod_ops;

/* ---- pure parsers (no I/O, fuzzable): each appends to out and returns the next page
 * token / link as a malloc'd string in *next (NULL when none); false with e on input
 * that is not the documented shape. */
bool	 prov_gke_parse_node_pools(const char *body, size_t len, struct prov_pools *out,
	    char **next, struct err *e);
bool	 prov_gke_parse_region(const char *body, size_t len, struct prov_pools *out,
	    struct err *e);
/* Reservations: adds to each pool's reserved (by machine type). */
bool	 prov_gke_parse_reservations(const char *body, size_t len, struct prov_pools *out,
	    char **next, struct err *e);
void	 prov_gke_finish(struct prov_pools *out);
bool	 prov_aks_parse_agent_pools(const char *body, size_t len, struct prov_pools *out,
	    char **next, struct err *e);
/* Compute SKUs: fills vcpus / accelerator counts of pools by vmSize; a pool whose size
 * is restricted in the region gets quota_left 0. */
bool	 prov_aks_parse_skus(const char *body, size_t len, const char *location,
	    struct prov_pools *out, char **next, struct err *e);
bool	 prov_aks_parse_usages(const char *body, size_t len, struct prov_pools *out,
	    char **next, struct err *e);
void	 prov_aks_finish(struct prov_pools *out);
bool	 prov_hyperpod_parse_cluster(const char *body, size_t len, struct prov_pools *out,
	    struct err *e);
/* ListClusterNodes: counts running nodes per instance group into pool->nodes. */
bool	 prov_hyperpod_parse_nodes(const char *body, size_t len, struct prov_pools *out,
	    char **next, struct err *e);
/* Value of an IAM GetRole XML answer's tag key into out; false when absent. */
bool	 prov_hyperpod_role_tag(const char *xml, size_t len, const char *key, char *out,
	    size_t n);

#endif
