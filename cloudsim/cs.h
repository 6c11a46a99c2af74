/* cloudsim: shared types of the emulator — fleet, clusters, pools, nodes, pods, Ray
 * objects, tokens, faults — and the functions the handler files share. */
#ifndef CLOUDSIM_CS_H
#define CLOUDSIM_CS_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

#include "core/err.h"

#define CS_MAX_BODY	(8u << 20)

enum cs_provider { CS_GKE, CS_AKS, CS_HYPERPOD };

/* A machine type of the built-in catalog. */
struct cs_machine {
	const char	*name;
	enum cs_provider provider;
	int		 vcpus;
	int		 mem_gib;
	const char	*accel;		/* "nvidia-h100-80gb", "tpu-v5p-slice" or NULL */
	int		 accel_count;	/* per node (TPU: chips) */
	bool		 tpu;
};

struct cs_cluster;
struct cs_wcache;
struct cs_stream;

struct cs_pool {
	char		 name[64];
	const struct cs_machine *mt;
	struct cs_cluster *cl;
	int		 min, max, initial;
	int		 target;		/* wanted node count (autoscaler) */
	bool		 autoscale;
	bool		 spot;
	char		 capacity[16];		/* "reservation", "flex_start" or "" (issue 27) */
	bool		 stockout;		/* from the fleet file */
	double		 price;
	int		 nodes_per_rack;
	int		 racks_per_block;	/* racks per scale unit (IB block); 0 = one
						 * block for the whole pool */
	char		 tpu_topology[16];
	bool		 dynamic_slicing;	/* TPU7x sub-blocks of an All Capacity mode
						 * reservation (tpuslice.c) */
	char		 rack_prefix[48];
	int		 next_index;
	double		 scale_at;		/* sim time of the pending scale-up, 0 = none */
	json_t		*extra_labels;		/* fleet file labels (object, owned) */
	json_t		*extra_taints;		/* fleet file taints (array, owned) or NULL */
};

struct cs_node {
	char		 name[128];
	struct cs_pool	*pool;
	char		 rack[64];
	char		 block[64];		/* scale unit / InfiniBand block */
	char		 zone[48];
	long long	 cpu_m, mem_b, gpu, tpu;	/* allocatable */
	bool		 cordoned;
	double		 preempt_at;		/* sim time of a spot reclaim, 0 = none */
	double		 created;
	json_t		*labels;		/* owned */
	json_t		*taints;		/* owned array */
	json_t		*conditions;		/* status.conditions as patched (owned), NULL = Ready */
	char		 uid[40];
	long long	 used[4];		/* cpu, mem, gpu, tpu requested (tick cache) */
};

struct cs;
struct cs_pod;
/* The name of pod p's first container ("ray" when it has none). */
const char	*cs_pod_container(const struct cs_pod *p);
/* The kubelet's Created and Started events for a container it (re)starts. */
void		 cs_container_started(struct cs *cs, struct cs_cluster *cl, struct cs_pod *p);

struct cs_pod {
	char		 name[160];
	char		 ns[64];
	char		 owner_uid[40];		/* Ray object uid, "" for static pods */
	char		 group[64];		/* "head" or worker group name */
	char		 node[128];		/* "" while unscheduled */
	long long	 cpu_m, mem_b, gpu, tpu;
	double		 created, scheduled_at, running_at;
	double		 last_fail_event;
	double		 last_scale_event;
	bool		 head;
	bool		 scale_req;		/* autoscaler already asked for a node */
	char		 waiting[32];		/* container waiting reason, e.g. ImagePullBackOff */
	int		 restarts;		/* container restarts (CrashLoopBackOff) */
	int		 replica;		/* replica of a multi-host group (numOfHosts > 1) */
	int		 hosts;			/* numOfHosts of its group (1 = single host) */
	double		 next_restart;		/* sim time of the next crash-loop restart */
	double		 oom_at;		/* sim time its container was OOM-killed, 0 never */
	double		 oom_started;		/* when that killed container had started */
	bool		 oom_final;		/* restartPolicy Never: it stays terminated */
	char		 unschedulable[768];	/* the last FailedScheduling message */
	json_t		*obj;			/* owned full pod (metadata, spec) */
	json_t		*status;		/* status as patched (owned), served as given; NULL =
						 * the simulation's */
	char		 uid[40];
	char		 rv[24];
};

struct cs_object {
	char		 kind[24];		/* "RayJob" */
	char		 plural[24];		/* "rayjobs" */
	char		 ns[64];
	char		 name[128];
	char		 uid[40];
	char		 manager[128];		/* field manager owning spec */
	long long	 rv;
	long long	 generation;
	int		 applies;		/* create + apply + patch calls */
	json_t		*applied;		/* body as last written by the client (owned) */
	json_t		*live;			/* object served by the API (owned) */
	double		 created;
	/* lifecycle (sim seconds, 0 = not yet) */
	double		 ready_at, job_start, job_end, cluster_gone;
	char		 cluster_name[160];	/* RayCluster name behind a job/service */
	char		 upgrade_cluster[160];	/* RayService: pending cluster of an upgrade */
	double		 upgrade_at;		/* sim time the pending cluster takes over */
	char		 job_id[160];
	bool		 deleted;
	int		 spawned;		/* RayCronJob: jobs spawned */
	bool		 kueue_held;		/* kueue.c: suspended by Kueue, inadmissible */
	char		 kueue_why[256];	/* kueue.c: the last Inadmissible message */
	double		 next_cron;
};

struct cs_vec {
	void		**v;
	size_t		 n, cap;
};

struct cs_cluster {
	char		 name[64];
	enum cs_provider provider;
	char		 env[32];
	char		 region[48];
	char		 zone[48];
	char		 account[64];		/* GCP project, Azure subscription, AWS account */
	char		 resource_group[64];	/* Azure */
	char		 token[80];		/* Kubernetes bearer token */
	char		 batch_scheduler[24];
	char		 k8s_version[16];
	struct cs_pool	*pools;
	size_t		 npools;
	struct cs_vec	 nodes;			/* struct cs_node * */
	struct cs_vec	 pods;			/* struct cs_pod * */
	struct cs_vec	 objects;		/* struct cs_object * */
	json_t		*namespaces;		/* array of namespace objects */
	json_t		*events;		/* array of event objects */
	json_t		*plain;			/* kplain.c objects by "plural/ns/name", or NULL */
	long long	 rv;
	json_t		*iam;			/* identities for phase 2 (owned) */
	double		 created;
	struct cs_wcache *wc;			/* watch cache and event history (kwatch.c) */
};

/* Identities known to the emulated clouds. */
struct cs_gsa {
	char	 email[160];
	char	 project[64];
	char	 unique_id[24];
	char	*description;
	char	*display_name;
	char	*public_pem;
	json_t	*token_creators;	/* array of emails allowed to impersonate */
};

struct cs_aws_role {
	char	 account[16];
	char	 name[96];
	char	 id[24];
	char	*external_id;		/* NULL = no condition */
	json_t	*trusted;		/* array of principal ARNs */
	json_t	*tags;			/* object */
};

struct cs_aws_user {
	char	 account[16];
	char	 name[64];
	char	 access_key[32];
	char	 secret_key[64];
};

struct cs_az_app {
	char	 tenant[40];		/* home tenant */
	char	 client_id[40];		/* appId */
	char	 object_id[40];		/* its service principal: `sub`/`oid` of its tokens */
	char	 secret[64];
	char	 name[96];
	bool	 multi_tenant;		/* may sign in to every tenant of the fleet (consented) */
};

struct cs_az_identity {
	char	 subscription[40];
	char	 resource_group[64];
	char	 name[96];
	char	 location[48];
	char	 client_id[40];
	char	 principal_id[40];
	char	 tenant[40];
	json_t	*tags;
	json_t	*fics;		/* federated identity credentials [{name, issuer, subject,
				 * audiences}] (owned) */
};

struct cs_az_sub {
	char	 id[40];
	char	 tenant[40];
};

enum cs_tok_kind { CS_TOK_GCP, CS_TOK_AZURE, CS_TOK_AWS };

struct cs_token {
	enum cs_tok_kind kind;
	char	 value[96];		/* bearer token, or AWS access key id */
	char	 secret[64];		/* AWS session secret */
	char	 session[128];		/* AWS session token */
	char	 principal[256];	/* SA email, app client id, assumed-role ARN */
	char	 subject[40];		/* Azure: object id of the service principal (`sub`) */
	char	 tenant[40];		/* Azure tenant, AWS account, GCP project */
	char	 scope[256];		/* OAuth scope(s) granted */
	double	 expires;		/* wall clock */
	bool	 revoked;
};

struct cs_fault {
	int	 id;
	char	 service[24];		/* "" = any */
	char	 cluster[64];		/* "" = any */
	char	 region[48];		/* "" = any */
	char	 pool[64];		/* stockout only */
	int	 latency_ms;
	double	 error_rate;
	int	 error_status;
	int	 retry_after;
	bool	 hang;
	double	 hang_s;
	bool	 unreachable;
	bool	 stockout;
	bool	 upgrade_hold;		/* RayService pending clusters never become ready */
	bool	 watch_only;		/* affects only ?watch=1 requests */
	int	 remaining;		/* requests left to affect, <0 = unlimited */
};

struct cs_sim_cfg {
	int	 page_size;
	double	 pod_start_s;
	double	 job_run_s;
	double	 autoscale_delay_s;
	double	 node_boot_s;
	double	 token_ttl_s;
	double	 preempt_notice_s;
};

struct cs {
	pthread_mutex_t	 lock;
	double		 time_scale;
	double		 wall0, mono0;
	double		 clock_skew;		/* seconds added to the auth clock */
	struct cs_sim_cfg cfg;
	char		*fleet_dir;
	char		*state_dir;
	char		 base_url[96];		/* http://127.0.0.1:PORT */
	char		 kube_url[96];		/* https://127.0.0.1:PORT */
	struct cs_cluster *clusters;
	size_t		 nclusters;
	struct cs_vec	 gsas, roles, users, apps, mis, subs, tokens, faults;
	int		 next_fault;
	json_t		*fleetd;		/* fleetd's base identity block */
	char		*fleetd_gcp_key_pem;
	json_t		*fleet;			/* the parsed fleet file (quotas, reservations) */
	json_t		*apply_counts;		/* "cluster/ns/plural/name" -> applies, never reset */
	json_t		*crds;			/* plural -> openAPIV3Schema (--crd-dir), owned */
	unsigned long	 seq;
	unsigned	 rnd;
};

/* The one instance, locked around every handler and every tick. */
extern struct cs *cs_g;

/* ---- util.c */
void	 cs_vec_push(struct cs_vec *v, void *p);
void	 cs_vec_del(struct cs_vec *v, size_t i);	/* keeps order */
void	 cs_vec_free(struct cs_vec *v, void (*fn)(void *));	/* fn on each, then empty */
double	 cs_now(const struct cs *cs);			/* sim clock, epoch seconds */
double	 cs_wall(const struct cs *cs);			/* auth clock incl. skew */
void	 cs_rfc3339(double t, char out[32]);
void	 cs_uuid(char out[40]);
void	 cs_rand_suffix(char *out, size_t n);		/* lowercase alnum, n-1 chars */
void	 cs_hex_token(char *out, size_t bytes);		/* 2*bytes hex + NUL */
char	*cs_read_file(const char *path, size_t *len);	/* malloc'd, NUL-terminated */
bool	 cs_write_file(const char *dir, const char *name, const char *text, struct err *e);
char	*cs_pct_decode(const char *s, size_t n);	/* '+' kept unless form */
char	*cs_form_decode(const char *s, size_t n);	/* '+' -> ' ' */
char	*cs_form_get(const char *body, const char *key);	/* decoded value, malloc'd */
void	 cs_copy(char *dst, size_t n, const char *src);	/* truncating; NULL -> "" */
long long cs_parse_quantity(const char *s, bool cpu);	/* cpu: millicores; -1 bad */
long long cs_json_quantity(json_t *v, bool cpu);
bool	 cs_dns1123_label(const char *s, size_t max);
char	*cs_xml_escape(const char *s);

/* ---- catalog.c */
const struct cs_machine *cs_machine_find(const char *name);
const struct cs_machine *cs_machine_at(size_t i);
const char *cs_gce_accel_quota_metric(const char *accel, bool spot);
const char *cs_azure_family(const char *vm_size);

/* ---- fleet.c */
bool	 cs_fleet_load(struct cs *cs, const char *path, struct err *e);
void	 cs_fleet_free(struct cs *cs);
struct cs_cluster *cs_cluster_find(struct cs *cs, const char *name);
struct cs_node *cs_node_add(struct cs_pool *p, double now);
struct cs_node *cs_node_build(struct cs_pool *p, int idx, double now);
void	 cs_node_free(struct cs_node *n);
int	 cs_pool_nodes(const struct cs_cluster *cl, const struct cs_pool *p);	/* nodes now */
void	 cs_pod_free(struct cs_pod *p);
void	 cs_object_free(struct cs_object *o);
bool	 cs_write_outputs(struct cs *cs, struct err *e);
bool	 cs_ident_load(struct cs *cs, json_t *root, struct err *e);
void	 cs_ident_free(struct cs *cs);
char	*cs_hyperpod_arn(const struct cs_cluster *cl);	/* malloc'd */
char	*cs_provider_cluster_id(const struct cs_cluster *cl);	/* malloc'd */
const char *cs_provider_name(enum cs_provider p);
const char *cs_rack_label(enum cs_provider p);
const char *cs_block_label(enum cs_provider p);
struct cs_gsa *cs_gsa_find(struct cs *cs, const char *email);
struct cs_aws_role *cs_role_find(struct cs *cs, const char *account, const char *name);
/* Azure: the managed identity of resource id rid (case-insensitive) or client id. */
struct cs_az_identity *cs_mi_find(struct cs *cs, const char *rid, const char *client_id);
/* "https://login.microsoftonline.com/{tenant}/v2.0", the `iss` of a v2 token. */
void	 cs_aad_issuer(const char *tenant, char *out, size_t n);

/* ---- pki.c */
bool	 cs_pki_init(const char *state_dir, char **key_pem, char **cert_pem, struct err *e);
char	*cs_rsa_generate_pem(char **pub_pem);
char	*cs_public_from_private(const char *pem);

/* ---- request / http.c */
struct cs_kv {
	char	*k;
	char	*v;
};

enum cs_family { FAM_SIM, FAM_GOOGLE, FAM_OAUTH, FAM_AAD, FAM_ARM, FAM_AWS_QUERY, FAM_AWS_JSON,
	FAM_K8S };

struct cs_req {
	void		*con;		/* struct MHD_Connection * */
	char		*raw_uri;
	char		*path;		/* raw, before '?' */
	char		*query;		/* raw, after '?', or NULL */
	const char	*method;
	char		*body;
	size_t		 body_len, body_cap;
	bool		 too_big;
	bool		 tls;
	char		**seg;		/* decoded path segments */
	size_t		 nseg;
	struct cs_kv	*qs;		/* decoded query parameters */
	size_t		 nqs;
	struct cs_kv	*hdr;		/* request headers as received */
	size_t		 nhdr;
	enum cs_family	 fam;
	const char	*service;
	/* answer */
	int		 status;
	char		*resp;
	size_t		 resp_len;
	const char	*ctype;
	struct cs_kv	 rhdr[4];
	size_t		 nrhdr;
	bool		 drop;		/* close without answering */
	bool		 started;
	char		 scope_cluster[64];	/* for fault matching */
	char		 scope_region[48];
	char		 req_id[40];
	struct cs_stream *stream;	/* set by a watch: answered as a chunked stream */
};

const char *cs_query(const struct cs_req *rq, const char *name);
const char *cs_header(const struct cs_req *rq, const char *name);
void	 cs_reply_json(struct cs_req *rq, int status, json_t *body);	/* steals body */
void	 cs_reply_text(struct cs_req *rq, int status, const char *ctype, const char *text);
void	 cs_reply_header(struct cs_req *rq, const char *name, const char *value);
/* Error in the family's own shape; code is the family's code/reason. */
void	 cs_reply_error(struct cs_req *rq, int status, const char *code, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
/* Kubernetes' 404 for a path it does not serve ("the server could not find the requested
 * resource"). */
void	 cs_reply_no_resource(struct cs_req *rq);
bool	 cs_http_start(struct cs *cs, const char *host, int port, int kube_port,
	    const char *key_pem, const char *cert_pem, struct err *e);
void	 cs_http_stop(void);

/* ---- handlers (called with cs->lock held) */
void	 cs_gke_handle(struct cs *cs, struct cs_req *rq, struct cs_token *t);
void	 cs_gce_handle(struct cs *cs, struct cs_req *rq, struct cs_token *t);
void	 cs_kube_handle(struct cs *cs, struct cs_req *rq);
void	 cs_gcp_handle(struct cs *cs, struct cs_req *rq);
void	 cs_azure_handle(struct cs *cs, struct cs_req *rq);
/* prices.c: the Azure Retail Prices API over the fleet's AKS pools (no token). */
void	 cs_prices_handle(struct cs *cs, struct cs_req *rq);
void	 cs_aws_prices_handle(struct cs *cs, struct cs_req *rq);
void	 cs_aws_handle(struct cs *cs, struct cs_req *rq);
void	 cs_sim_handle(struct cs *cs, struct cs_req *rq);
/* netpol.c: POST /_sim/connect, pod-to-pod traffic through the NetworkPolicies and a Ray
 * head's token auth (issue 25). */
void	 cs_connect_sim(struct cs *cs, struct cs_req *rq, json_t *body);
bool	 cs_sim_iam(struct cs *cs, json_t *body, struct err *e);
bool	 cs_fault_add(struct cs *cs, json_t *f, int *id, struct err *e);
/* SigV4 check of one request's parts against secret at time now ("YYYYMMDDTHHMMSSZ" or
 * NULL for the auth clock); on failure *code / msg say why in AWS's words. */
bool	 cs_sigv4_verify(struct cs *cs, const char *method, const char *path, const char *query,
	    const struct cs_kv *hdr, size_t nhdr, const char *body, size_t body_len,
	    const char *secret, const char *now, const char **code, char *msg, size_t msglen);
void	 cs_aws_query(struct cs *cs, struct cs_req *rq, struct cs_token *tok,
	    struct cs_aws_user *user);
void	 cs_sagemaker(struct cs *cs, struct cs_req *rq, struct cs_token *tok,
	    struct cs_aws_user *user);
bool	 cs_sigv4_check(struct cs *cs, struct cs_req *rq, const char *service,
	    struct cs_token **tok, struct cs_aws_user **user);

/* ---- kobj.c: Ray objects and Kubernetes bookkeeping */
struct cs_object *cs_object_find(struct cs_cluster *cl, const char *plural, const char *ns,
	    const char *name);
const char *cs_kind_of(const char *plural);
struct cs_object *cs_object_spawn(struct cs *cs, struct cs_cluster *cl, struct cs_object *cron);
void	 cs_event(struct cs *cs, struct cs_cluster *cl, const char *ns, const char *kind,
	    const char *name, const char *uid, const char *type, const char *reason,
	    const char *msg);
bool	 cs_ns_exists(struct cs_cluster *cl, const char *ns);
/* kplain.c: ConfigMaps, ServiceAccounts, Roles, RoleBindings, Kueue objects; true when rq
 * named one of them (answered). */
bool	 cs_kplain_handle(struct cs *cs, struct cs_cluster *cl, struct cs_req *rq);
/* The stored object (borrowed) or NULL; ns ignored for cluster-scoped kinds. */
json_t	*cs_plain_get(struct cs_cluster *cl, const char *plural, const char *ns,
	    const char *name);
/* Stores obj (reference stolen) unless plural/ns/name exists; removes one (no-op if absent). */
void	 cs_plain_put(struct cs *cs, struct cs_cluster *cl, const char *plural, const char *ns,
	    const char *name, json_t *obj);
void	 cs_plain_del(struct cs_cluster *cl, const char *plural, const char *ns,
	    const char *name);
void	 cs_ns_create(struct cs *cs, struct cs_cluster *cl, const char *ns);
/* tpuslice.c: GKE dynamic slicing (issue 26).  The Slice kind is served where a pool has
 * dynamic_slicing; its nodes carry the partition labels; the tick forms and dissolves
 * Slices. */
bool	 cs_slices_on(const struct cs_cluster *cl);
void	 cs_tpu_partition_labels(json_t *labels, const struct cs_pool *p, int idx);
void	 cs_slice_tick(struct cs *cs, struct cs_cluster *cl, double now);
/* kueue.c: Kueue on clusters whose batch_scheduler is "kueue" (issue 13). */
bool	 cs_kueue_on(const struct cs_cluster *cl);
/* Namespace kueue-system, ConfigMap kueue-manager-config (featureGates
 * ElasticJobsViaWorkloadSlices: elastic_jobs) and the ClusterQueues named in cqs. */
void	 cs_kueue_install(struct cs *cs, struct cs_cluster *cl, bool elastic_jobs, json_t *cqs);
/* The validating webhooks vrayjob.kb.io / vraycluster.kb.io on a write of body: false
 * after answering the API server's 403 Status "admission webhook ... denied the request". */
bool	 cs_kueue_admit(struct cs_cluster *cl, struct cs_req *rq, const char *kind, json_t *body);
/* After a write: holds o suspended while its LocalQueue or ClusterQueue is missing. */
void	 cs_kueue_gate(struct cs *cs, struct cs_cluster *cl, struct cs_object *o);
/* Each tick: releases a held object once it is admissible. */
void	 cs_kueue_tick(struct cs *cs, struct cs_cluster *cl, struct cs_object *o);
json_t	*cs_node_json(const struct cs_node *n);
json_t	*cs_pod_json(const struct cs_pod *p);
/* The pod has scheduling gates (spec.schedulingGates not empty): the scheduler skips it. */
bool	 cs_pod_gated(const struct cs_pod *p);
void	 cs_kube_ray(struct cs *cs, struct cs_cluster *cl, struct cs_req *rq, const char *ns,
	    const char *plural, const char *name, const char *sub);

void	 cs_kube_list(struct cs *cs, struct cs_cluster *cl, struct cs_req *rq, const char *kind,
	    const char *api, json_t *items);			/* consumes items */
const char *cs_jpath(json_t *o, const char *dotted);	/* string at a.b.c or NULL */

/* ---- knode.c: node and pod writes, node lifecycle, taint eviction, pod GC */
/* Answers DELETE/PATCH of a node, nodes/{n}/status, DELETE of a pod and pods/{p}/status;
 * true when rq was one of them. */
bool	 cs_knode_handle(struct cs *cs, struct cs_cluster *cl, struct cs_req *rq);
/* Merges patch into dst: JSON merge patch (RFC 7386), or with strategic the Kubernetes
 * strategic merge patch (lists with a merge key merged by it, $patch directives). */
void	 cs_merge_patch(json_t *dst, json_t *patch, bool strategic);
/* The toleration of tols (borrowed) that tolerates taint, or NULL. */
json_t	*cs_toleration(json_t *tols, json_t *taint);
bool	 cs_node_ready(const struct cs_node *n);
/* Each tick: NotReady taints, NoExecute evictions, pods of deleted nodes removed. */
void	 cs_node_controllers(struct cs *cs, struct cs_cluster *cl);

/* kauthz.c: SelfSubjectAccessReview / SelfSubjectRulesReview; true when answered. */
bool	 cs_kauthz_handle(struct cs_cluster *cl, struct cs_req *rq);

/* ---- persist.c: what survives a restart (state.json in the state dir) */
bool	 cs_persist_load(struct cs *cs, struct err *e);	/* after the fleet is loaded */
void	 cs_persist_save(struct cs *cs);			/* atomic; logs a failure */
void	 cs_persist_tick(struct cs *cs);			/* saves when something moved */
int	 cs_persist_port(struct cs *cs, const char *file);	/* earlier run's port or 0 */

/* ---- yaml.c: one document (all = false) or an array of every document; NULL and err */
json_t	*cs_yaml_load(const char *text, size_t len, bool all, char *err, size_t errlen);

/* ---- kdisc.c: discovery, /openapi/v3, CRD schemas */
bool	 cs_kube_discovery(struct cs *cs, struct cs_cluster *cl, struct cs_req *rq);	/* true when answered */
bool	 cs_crds_load(struct cs *cs, const char *dir, struct err *e);
/* 0 ok (or no schema loaded), 1 unknown field at path, 2 wrong type (what says how). */
int	 cs_crd_check(struct cs *cs, const char *plural, json_t *body, char *path, size_t n,
	    char *what, size_t wn);

/* ---- ktable.c: server-side printing (Accept: ...;as=Table) */
bool	 cs_wants_table(struct cs_req *rq);
json_t	*cs_table(struct cs *cs, const char *kind, json_t *items, json_t *list_meta);
/* Answers obj (borrowed) as itself or as a one-row Table. */
void	 cs_reply_object(struct cs *cs, struct cs_req *rq, const char *kind, json_t *obj);

/* ---- kwatch.c: watch cache per cluster, ?watch=1 streams */
/* Whether item passes a labelSelector and fieldSelector (either NULL). */
bool	 cs_kube_filter(const char *ls, const char *fs, json_t *item);
/* A Kubernetes Status answer (kind Status, status Failure) with code, reason and message,
 * details {name, group, kind} and, unless NULL, causes ([{field, reason, message}], stolen). */
void	 cs_kube_status(struct cs_req *rq, int code, const char *reason, const char *msg,
	    const char *name, const char *group, const char *kind, json_t *causes);
void	 cs_watch_sync(struct cs *cs, struct cs_cluster *cl);	/* record changes (locked) */
void	 cs_watch_sync_all(struct cs *cs);
/* Starts a watch of resource res ("pods", "rayjobs", ...) in ns (NULL = all). */
void	 cs_watch_start(struct cs *cs, struct cs_cluster *cl, struct cs_req *rq,
	    const char *res, const char *ns);
void	 cs_watch_free(struct cs_cluster *cl);
/* The chunked body of a watch: fills buf, blocks until there is something; 0 = end. */
long	 cs_stream_read(struct cs_stream *s, char *buf, size_t max);
void	 cs_stream_free(struct cs_stream *s);
bool	 cs_http_stopping(void);
/* /_sim/watch-compact {"cluster"}: the watch history is dropped (open watches get 410);
 * /_sim/watch-log?cluster=&kind=: wall-clock times of each Ray object's status changes. */
void	 cs_watch_sim(struct cs *cs, struct cs_req *rq, const char *what, json_t *body);
/* Whether the request is a watch (?watch=1|true). */
bool	 cs_is_watch(struct cs_req *rq);

/* ---- sched.c, status.c */
json_t	*cs_object_cluster_spec(struct cs_object *o);
bool	 cs_object_active(struct cs *cs, struct cs_object *o);
void	 cs_status_update(struct cs *cs, struct cs_cluster *cl, struct cs_object *o);
int	 cs_group_want(json_t *group);
void	 cs_tick(struct cs *cs);
void	 cs_object_deleted(struct cs *cs, struct cs_cluster *cl, struct cs_object *o);
void	 cs_object_changed(struct cs *cs, struct cs_cluster *cl, struct cs_object *o);
/* RayService zero-downtime upgrade (status.c): a change of rayClusterConfig (other than
 * replicas) starts a pending cluster that takes over after CS_UPGRADE_S simulated seconds;
 * cs_object_retemplate (sched.c) then gives the pods the new template's images. */
#define CS_UPGRADE_S	10.0
void	 cs_status_spec_change(struct cs *cs, struct cs_object *o, json_t *next_spec);
void	 cs_object_retemplate(struct cs_cluster *cl, struct cs_object *o);
bool	 cs_pool_stockout(struct cs *cs, const struct cs_pool *p);
/* A fault with upgrade_hold matches the cluster: upgrades' pending clusters stay not ready. */
bool	 cs_upgrade_held(struct cs *cs, const struct cs_cluster *cl);
/* spot.c: a provider-shaped spot reclaim of n (signal "interruption", or on AWS
 * "rebalance": a rebalance recommendation, no reclaim); false and why when n cannot get it. */
bool	 cs_preempt(struct cs *cs, struct cs_cluster *cl, struct cs_node *n, double notice_s,
	    const char *signal, struct err *e);
/* Each tick: nodes whose reclaim notice ran out go (their pods with them). */
void	 cs_spot_tick(struct cs *cs, struct cs_cluster *cl, double now);
json_t	*cs_state_json(struct cs *cs);

/* ---- tokens (ident.c) */
struct cs_token *cs_token_issue(struct cs *cs, enum cs_tok_kind kind, const char *principal,
	    const char *tenant, double ttl);
struct cs_token *cs_token_find(struct cs *cs, enum cs_tok_kind kind, const char *value);
struct cs_token *cs_bearer(struct cs *cs, struct cs_req *rq, enum cs_tok_kind kind,
	    bool *expired);

#endif
