/* jobspec: the concise fleetd job spec (POST /v1/jobs body), strict validation with a
 * JSON pointer per error, canonical JSON form, and resource totals for the scheduler. */
#ifndef FLEET_PROVIDERS_JOBSPEC_H
#define FLEET_PROVIDERS_JOBSPEC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "core/err.h"

#define JOBSPEC_MAX_GROUPS	16
#define JOBSPEC_MAX_LIST	32	/* regions, providers */

enum jobspec_kind {
	JOBSPEC_RAYJOB,
	JOBSPEC_RAYCLUSTER,
	JOBSPEC_RAYSERVICE,
	JOBSPEC_RAYCRONJOB,
};

enum jobspec_topology {
	JOBSPEC_TOPO_NONE,
	JOBSPEC_TOPO_HOST,	/* every worker of the accelerator gang on one node */
	JOBSPEC_TOPO_RACK,	/* one rack / NVLink domain */
	JOBSPEC_TOPO_SLICE,	/* exactly one TPU slice of slice_shape per replica */
	JOBSPEC_TOPO_PACK,	/* fewest racks within one scale unit (IB block) */
};

enum jobspec_spot {
	JOBSPEC_SPOT_ANY,	/* constraints.spot absent */
	JOBSPEC_SPOT_ONLY,	/* spot: true */
	JOBSPEC_SPOT_NEVER,	/* spot: false */
};

enum jobspec_gcs_ft {
	JOBSPEC_GCS_FT_DEFAULT,	/* absent: rocksdb for RayService and RayCluster, off otherwise */
	JOBSPEC_GCS_FT_OFF,
	JOBSPEC_GCS_FT_ROCKSDB,	/* embedded, on a PVC the operator manages */
	JOBSPEC_GCS_FT_REDIS,	/* external redis, password from a secret */
};

/* RayCronJob runs that overlap (the CRD has no such field: fleetd enforces it, queue/follow/cron.c). */
enum jobspec_cron_policy {
	JOBSPEC_CRON_FORBID,	/* default: a run does not start while one runs */
	JOBSPEC_CRON_ALLOW,	/* runs overlap; each running one must fit the quota */
	JOBSPEC_CRON_REPLACE,	/* the running one is stopped, the new one starts */
};

enum jobspec_delete {
	JOBSPEC_DELETE_UNSET,
	JOBSPEC_DELETE_CLUSTER,
	JOBSPEC_DELETE_WORKERS,
	JOBSPEC_DELETE_SELF,
};

struct jobspec_group {
	char	*name;			/* DNS-1123 label, unique in the job */
	bool	 elastic;		/* min_replicas..max_replicas given */
	int	 min_replicas;		/* == max_replicas when fixed */
	int	 max_replicas;
	int64_t	 cpu_milli;		/* per worker pod */
	int64_t	 memory_bytes;		/* per worker pod */
	char	*accel_flavor;		/* NULL: no accelerator */
	int	 accel_count;		/* per worker pod (per host for a slice) */
	json_t	*ray_start_params;	/* validated object of strings, NULL: none */
	json_t	*pod;			/* canonical "pod" section (jobspec_pod.c), NULL: none */
};

struct jobspec_gcs {
	enum jobspec_gcs_ft mode;
	int64_t	 storage_bytes;		/* rocksdb PVC size, 0 = operator default */
	char	*storage_class;		/* rocksdb, optional */
	char	*redis_address;		/* redis: host:port or redis://... */
	char	*redis_secret;		/* redis: secret name holding the password */
	char	*redis_secret_key;	/* redis: key in that secret */
};

/* A capacity preference (issue 27): capacity types ranked best first, as a queue
 * (queues.capacity_preference) or a job (constraints.capacity_preference) states it:
 * {"order": ["reservation"|"on_demand"|"spot"|"flex_start", ...], "first_choice_only",
 *  "max_migrations", "min_run_seconds", "cooldown_seconds"}. */
#define JOBSPEC_NCTYPES	4
struct jobspec_capacity {
	const char *order[JOBSPEC_NCTYPES];	/* static names; n 0 = none stated */
	int	 n;
	bool	 first_only;
	int	 max_migrations;	/* -1: not stated */
	int	 min_run_s;		/* -1: not stated */
	int	 cooldown_s;		/* -1: not stated */
};

/* Parses o (NULL or null: none) into *out; 400 with a pointer under ptr on a bad value. */
bool	 jobspec_capacity_from_json(json_t *o, const char *ptr, struct jobspec_capacity *out,
	    struct err *e);
/* NULL when c states nothing. */
json_t	*jobspec_capacity_to_json(const struct jobspec_capacity *c);

struct job_spec {
	enum jobspec_kind kind;
	char	*queue;
	char	*priority_class;	/* NULL: the queue's default */
	char	*name;
	char	*ray_version;		/* "2.52.0" */
	char	*image;			/* head image; default rayproject/ray:<ray_version> */
	bool	 image_set;		/* the user named the image: every pod runs it; else
					 * each group gets kuberay_default_image() */
	char	*entrypoint;		/* RayJob, RayCronJob */
	char	*schedule;		/* RayCronJob: 5-field cron or @hourly... */
	char	*time_zone;		/* RayCronJob, optional */
	bool	 cron_set;		/* the spec named cron options */
	enum jobspec_cron_policy cron_policy;	/* RayCronJob, default Forbid */
	json_t	*serve_config;		/* RayService: object, rendered as serveConfigV2 */
	int64_t	 head_cpu_milli;
	int64_t	 head_memory_bytes;
	json_t	*head_ray_start_params;	/* validated object of strings, NULL: none */
	json_t	*head_pod;		/* canonical "pod" section of the head, NULL: none */
	bool	 autoscaler_set;	/* the spec named autoscaler options */
	int	 idle_timeout_seconds;	/* autoscalerOptions, default 60 */
	const char *upscaling_mode;	/* static: Default (default) | Aggressive | Conservative */
	struct jobspec_group groups[JOBSPEC_MAX_GROUPS];
	size_t	 ngroups;
	enum jobspec_topology topology;
	char	*slice_shape;		/* "2x2x4" */
	int	 slice_dims[3];
	int	 slice_ndims;
	char	*regions[JOBSPEC_MAX_LIST];
	size_t	 nregions;
	char	*providers[JOBSPEC_MAX_LIST];	/* gke | aks | hyperpod */
	size_t	 nproviders;
	enum jobspec_spot spot;
	bool	 has_max_price;
	double	 max_price;		/* per accelerator-hour, USD */
	struct jobspec_capacity capacity;	/* constraints.capacity_preference */
	json_t	*runtime_env;		/* object or NULL */
	char	*checkpoint_uri;	/* NULL: no checkpointing */
	json_t	*labels;		/* {key: value} strings (team: showback, budgets); NULL */
	int	 checkpoint_grace_seconds;
	struct jobspec_gcs gcs;
	int	 ttl_seconds_after_finished;	/* RayJob, default 600 */
	int	 active_deadline_seconds;	/* RayJob, 0 = none */
	int	 backoff_limit;			/* RayJob, default 0 */
	char	*submission_mode;		/* K8sJobMode (default) | HTTPMode | SidecarMode */
	enum jobspec_delete delete_on_success;	/* RayJob deletionStrategy, optional pair */
	enum jobspec_delete delete_on_failure;
	int	 max_infra_retries;		/* -1: the queue's (issue 24) */
	int	 upgrade_deadline_seconds;	/* RayService: 0 = the environment's default */
};

struct jobspec_totals {
	int64_t	cpu_milli_min, cpu_milli_max;		/* head included */
	int64_t	memory_min, memory_max;			/* bytes, head included */
	int64_t	accel_min, accel_max;			/* all worker accelerators */
	int	pods_min, pods_max;			/* gang size: head + worker hosts */
	int	accel_per_pod;				/* largest per-pod (per-node) count */
};

/* Validates j strictly into *out (unknown fields 400 api.unknown_field; every error
 * carries a JSON pointer). On failure fills e and leaves *out zeroed; on success the
 * caller owns *out and releases it with jobspec_cleanup. */
bool		 jobspec_from_json(json_t *j, struct job_spec *out, struct err *e);
/* Canonical form (quantities as strings, defaults spelled out); NULL only on OOM. */
json_t		*jobspec_to_json(const struct job_spec *s);
void		 jobspec_cleanup(struct job_spec *s);

const char	*jobspec_kind_name(enum jobspec_kind k);	/* "RayJob" ... */
/* The kind named name into *out; false (and *out untouched) for any other name or NULL. */
bool		 jobspec_kind_parse(const char *name, enum jobspec_kind *out);
const char	*jobspec_topology_name(enum jobspec_topology t);
const char	*jobspec_delete_name(enum jobspec_delete d);	/* "DeleteCluster" ... */

/* Hosts (pods) one replica of g spans: chips of the slice / accel_count for the
 * accelerator group of a slice job, else 1. */
int		 jobspec_group_hosts(const struct job_spec *s, const struct jobspec_group *g);
bool		 jobspec_is_elastic(const struct job_spec *s);
int64_t		 jobspec_slice_chips(const struct job_spec *s);	/* 0 unless slice */
void		 jobspec_totals(const struct job_spec *s, struct jobspec_totals *out);
int		 jobspec_gang_size(const struct job_spec *s);	/* pods at min replicas */
int64_t		 jobspec_total_accelerators(const struct job_spec *s, bool at_max);

/* jobspec_ray.c. The object o's "ray_start_params" (allow-listed keys, checked values,
 * every value as a string) into *out (NULL when absent; caller owns); prefix is o's JSON
 * pointer, head allows head-only keys. 400 jobspec.invalid_ray_start_param + pointer. */
bool		 jobspec_parse_ray_params(json_t *o, const char *prefix, bool head, json_t **out,
		    struct err *e);
/* root's "autoscaler" {idle_timeout_seconds 0..86400, upscaling_mode} into s (defaults
 * 60 and Default when absent). */
bool		 jobspec_parse_autoscaler(json_t *root, struct job_spec *s, struct err *e);
json_t		*jobspec_autoscaler_to_json(const struct job_spec *s);	/* NULL: not set */
/* root's "cron" {concurrency_policy Allow|Forbid|Replace} (RayCronJob only; 422
 * jobspec.invalid_value / jobspec.not_applicable with the pointer) into s. */
bool		 jobspec_parse_cron(json_t *root, struct job_spec *s, struct err *e);
json_t		*jobspec_cron_to_json(const struct job_spec *s);	/* NULL: not set */
const char	*jobspec_cron_policy_name(enum jobspec_cron_policy p);	/* "Forbid" ... */
/* "Allow"/"Forbid"/"Replace" into *out; false for anything else (NULL too). */
bool		 jobspec_cron_policy_from_name(const char *s, enum jobspec_cron_policy *out);

/* jobspec_pod.c. o's "pod" (env, env_from, volumes, volume_mounts, annotations, labels,
 * tolerations, service_account, containers) validated into canonical JSON *out (NULL when
 * absent; caller owns); prefix is o's JSON pointer. Bad values: 422 jobspec.invalid_pod,
 * host_path and privileged containers: 422 jobspec.pod_not_allowed, both with a pointer. */
bool		 jobspec_parse_pod(json_t *o, const char *prefix, json_t **out, struct err *e);
/* The volume kinds and CSI drivers a pod section knows (NULL-terminated), and whether s
 * is one of list's strings (NULL s: false). */
extern const char *const jobspec_volume_kinds[];
extern const char *const jobspec_csi_drivers[];
bool		 jobspec_in_list(const char *const *list, const char *s);
/* jobspec_pod_policy.c. The pod policy of an environment: {env, env_from, annotations, labels, tolerations,
 * service_account, containers: bool; volume_kinds, csi_drivers: [string]}. The default
 * allows everything the pod section knows (host_path is never a kind). */
json_t		*jobspec_pod_policy_default(void);
/* in (the policy a client sent, at JSON pointer prefix) completed with the defaults into
 * *out (caller owns). 422 env.pod_policy_invalid with the pointer. */
bool		 jobspec_pod_policy_parse(json_t *in, const char *prefix, json_t **out,
		    struct err *e);
/* Whether every pod section of s is allowed by policy (NULL: the default); else 422
 * jobspec.pod_not_allowed pointing at the refused member, e.g. /worker_groups/0/pod/volumes/1. */
bool		 jobspec_pod_allowed(const struct job_spec *s, json_t *policy, struct err *e);

/* Kubernetes quantities. cpu: "4", "500m", "2.5", 2.5 -> millicores; memory: "16Gi",
 * "1G", 1073741824 -> bytes. Positive, exact (no sub-millicore, no fractional byte). */
bool		 jobspec_parse_cpu(json_t *v, int64_t *milli);
bool		 jobspec_parse_memory(json_t *v, int64_t *bytes);
/* Canonical text: "4" / "500m"; "16Gi" / "1G" / "1000". buf >= 32 bytes. */
void		 jobspec_fmt_cpu(int64_t milli, char *buf, size_t len);
void		 jobspec_fmt_memory(int64_t bytes, char *buf, size_t len);
/* 5-field cron (lists, ranges, steps, month/day names, ?) or @yearly/@annually/
 * @monthly/@weekly/@daily/@midnight/@hourly/@every <duration>. */
bool		 jobspec_cron_valid(const char *s);
/* Lowercase DNS-1123 label of at most max characters. */
bool		 jobspec_dns_label(const char *s, size_t max);

#endif
