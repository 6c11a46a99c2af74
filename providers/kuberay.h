/* kuberay: pure renderer of ray.io/v1 RayJob, RayCluster, RayService and RayCronJob
 * manifests from a job spec and its placement (struct in, json_t out, no I/O). */
#ifndef FLEET_PROVIDERS_KUBERAY_H
#define FLEET_PROVIDERS_KUBERAY_H

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

#include "core/err.h"
#include "providers/jobspec.h"

enum kuberay_provider {
	KUBERAY_GKE,
	KUBERAY_AKS,
	KUBERAY_HYPERPOD,
};

/* The batch scheduler the member cluster declares it runs. */
enum kuberay_scheduler {
	KUBERAY_SCHED_NONE,
	KUBERAY_SCHED_VOLCANO,
	KUBERAY_SCHED_YUNIKORN,
	KUBERAY_SCHED_KAI,
	KUBERAY_SCHED_KUEUE,
};

/* One allocation of the scheduler's decision: pods of group `group` (0 = the head, i =
 * spec group i-1) on node `node` (NULL: a node still to grow, not named yet). */
struct kuberay_pin {
	int		 group;
	const char	*node;
};

#define KUBERAY_MAX_RACKS	64	/* racks one topology pack job may span */

struct kuberay_placement {
	enum kuberay_provider provider;
	const char	*cluster;	/* member cluster name (annotation only) */
	const char	*pool;		/* workers: GKE node pool, AKS agent pool, HyperPod
					 * instance group; required */
	const char	*cpu_pool;	/* workers without accelerators; NULL = pool */
	const char	*head_pool;	/* on-demand pool for the head; NULL = any on-demand node */
	const char	*machine_type;	/* instance type; HyperPod: node.kubernetes.io/instance-type */
	const char	*accelerator;	/* GKE gke-accelerator value; NULL = the group's flavor */
	bool		 spot;		/* workers run on spot capacity (the head never does) */
	bool		 flex_start;	/* GKE: workers on a flex-start pool with queued provisioning
					 * (Dynamic Workload Scheduler): their pods consume the
					 * attempt's ProvisioningRequest (kuberay_provisioning_objects) */
	const char	*rack_id;	/* topology rack: required */
	const char	*rack_label;	/* node label naming the rack; NULL = provider default */
	const char	*racks[KUBERAY_MAX_RACKS];	/* topology pack: the racks chosen
							 * (required, >= 1; borrowed) */
	size_t		 nracks;
	const char	*block;		/* topology pack: their scale unit; NULL = unlabelled */
	const char	*block_label;	/* node label naming the scale unit; NULL = default */
	const char	*host;		/* topology host: node name; NULL = pod affinity on hostname */
	const char	*tpu_accelerator; /* slice (GKE): gke-tpu-accelerator, e.g. tpu-v5p-slice */
	const char	*tpu_topology;	/* slice: gke-tpu-topology; NULL = the job's slice shape */
	int		 tpu_hosts;	/* slice: hosts per slice; 0 = derived from the spec */
	/* slice (GKE dynamic slicing, issue 26): the partitions of the job's shape the
	 * scheduler carved out of reserved TPU7x sub-blocks, one per replica (borrowed); the
	 * attempt forms one Slice on each (kuberay_tpu_slice_objects) and its pods select
	 * them.  0: fixed slices (a node pool of the shape) */
	const char	*tpu_partitions[KUBERAY_MAX_RACKS];
	size_t		 ntpu_partitions;
	/* The nodes the scheduler chose (one placement truth): a group whose allocations all
	 * name a node is pinned to them (required kubernetes.io/hostname In [...]), so the
	 * member's scheduler puts each pod where fleetd accounted it; NULL: no pins. */
	const struct kuberay_pin *pins;
	size_t		 npins;
};

struct kuberay_batch {
	enum kuberay_scheduler kind;
	const char	*queue;		/* scheduler queue; NULL = the fleetd queue name */
	bool		 kueue_elastic;	/* Kueue admits autoscaling Ray objects (feature gate
					 * ElasticJobsViaWorkloadSlices): elastic jobs carry the
					 * queue-name label and kueue.x-k8s.io/elastic-job: "true";
					 * false: elastic jobs get no queue-name label (Kueue's
					 * webhook refuses the pair) and Kueue does not gate them */
};

/* An environment's KubeRay History Server setting (providers/kuberay_history.c); strings
 * borrowed from its canonical JSON. */
struct kuberay_history {
	const char	*storage;	/* gs://B[/P], s3://B[/P], https://A.blob.core.windows.net/C[/P] */
	const char	*collector_image;
	const char	*s3_region;	/* s3 only */
};

struct kuberay_input {
	const struct job_spec *spec;
	const char	*job_id;	/* uuid */
	int		 attempt;	/* >= 1; part of the object name but a RayService's */
	const char	*environment;
	const char	*queue;		/* NULL = spec->queue */
	const char	*ns;		/* namespace; NULL = kuberay_namespace(environment, queue) */
	struct kuberay_placement placement;
	struct kuberay_batch batch;
	bool		 suspend;	/* moves and preemption: spec.suspend */
	const char	*checkpoint_deadline;	/* RFC 3339; sets fleet.io/checkpoint-requested */
	const struct kuberay_history *history;	/* NULL: no History Server collector */
	/* issue 25, closed Ray clusters (providers/kuberay_auth.c) */
	const char	*auth_token;	/* the job's Ray auth token: kuberay_signal_objects adds the
					 * Secret holding it; never in the Ray manifest; NULL = no
					 * Secret (the manifest still names it when auth is on) */
	bool		 auth_off;	/* no spec.authOptions even on a Ray that has token auth */
	const char	*operator_ns;	/* the KubeRay operator's namespace, admitted to the head's
					 * dashboard ports by the NetworkPolicy; NULL = "default" */
	const struct kuberay_ingress *ingress;	/* dashboard ingress; NULL = none */
};

/* headGroupSpec.enableIngress + ingressOptions (KubeRay 1.7 CRD: host, path, pathType,
 * tls[{hosts, secretName}]); the ingress controller's namespace is admitted to the
 * dashboard port by the NetworkPolicy. */
struct kuberay_ingress {
	const char	*host;		/* required, a DNS name */
	const char	*path;		/* NULL = "/" */
	const char	*path_type;	/* Exact | Prefix | ImplementationSpecific; NULL = Prefix */
	const char	*tls_secret;	/* TLS Secret in the job's namespace; NULL = no TLS */
	const char	*controller_ns;	/* namespace of the ingress controller; NULL = ingress-nginx */
};

#define KUBERAY_AUTH_MIN_RAY	"2.52.0"	/* Ray's first release with token auth */
#define KUBERAY_AUTH_KEY	"auth_token"	/* the Secret's data key KubeRay reads */
#define KUBERAY_DASHBOARD_PORT	8265
#define KUBERAY_AGENT_PORT	52365		/* dashboard agent (RayService serve API) */
#define KUBERAY_SERVE_PORT	8000		/* a RayService's Serve HTTP proxy */

/* The checkpoint signal of an attempt (docs/design/contracts.md): what fleetd writes in the ConfigMap
 * fleet-signal-<first 8 hex of the job id>-<attempt>. NULL fields: empty values. */
struct kuberay_signal {
	const char	*requested_at;	/* RFC 3339 UTC */
	const char	*deadline;	/* RFC 3339 UTC */
	const char	*reason;	/* move | preempt | spot */
};

#define KUBERAY_SIGNAL_DIR	"/etc/fleet/signal"

/* Renders the manifest. Deterministic: the same input gives the same bytes. On a
 * placement that cannot express the spec (slice off GKE, rack without a rack id, bad
 * ids) fills e with 422 "kuberay.*" and returns NULL. Caller owns the result. */
json_t		*kuberay_render(const struct kuberay_input *in, struct err *e);
/* The scheduling gate of an autoscaled worker group's pods (issue 26): fleetd lifts it from
 * as many pods as it admitted (queue/follow/grow.c). */
#define KUBERAY_GROW_GATE	"fleet.io/admission"
/* Whether group g of in's spec is rendered with KUBERAY_GROW_GATE: an autoscaled group
 * (min_replicas < max_replicas) of a RayCluster or RayJob that Kueue does not gate. */
bool		 kuberay_grow_gated(const struct kuberay_input *in,
		    const struct jobspec_group *g);

/* "fleet-signal-<first 8 hex of job_id>-<attempt>"; false on a bad id or attempt < 1. */
bool		 kuberay_signal_name(const char *job_id, int attempt, char *buf, size_t len);
/* Grace a provider gives on spot loss: GKE 30 s, AKS 30 s, HyperPod (EC2) 120 s. */
int		 kuberay_spot_grace_cap(enum kuberay_provider p);
/* The grace written in the signal: the spec's checkpoint grace (30 s without one), capped
 * at kuberay_spot_grace_cap for reason "spot". */
int		 kuberay_signal_grace(const struct job_spec *s, enum kuberay_provider p,
		    const char *reason);
/* The signal ConfigMap alone (fleetd's keys only). NULL + e (422) on bad input. */
json_t		*kuberay_signal_configmap(const struct kuberay_input *in,
		    const struct kuberay_signal *sig, struct err *e);
/* The same ConfigMap for the object of an attempt already applied (its labels name the
 * job, attempt, queue and environment; its annotation the checkpoint uri); NULL when the
 * manifest lacks them. */
json_t		*kuberay_signal_for_manifest(const json_t *manifest,
		    const struct kuberay_signal *sig, int grace_seconds);
/* Everything applied (server-side, in order) before the attempt's Ray object:
 * ServiceAccount, signal ConfigMap, Role (get, patch on that ConfigMap) and RoleBinding,
 * all named kuberay_signal_name. NULL + e (422) on bad input. */
json_t		*kuberay_signal_objects(const struct kuberay_input *in,
		    const struct kuberay_signal *sig, struct err *e);

/* GKE flex-start with queued provisioning (issue 27): for a flex_start placement, the
 * PodTemplate of each worker group (its rendered pod template), named kuberay_signal_name
 * "-w0", "-w1", ... in group order, and one ProvisioningRequest
 * (autoscaling.x-k8s.io/v1, class queued-provisioning.gke.io) named kuberay_signal_name with
 * a podSet per group; kuberay_signal_objects appends them.  An empty array otherwise. */
#define KUBERAY_PROVREQ_CLASS	"queued-provisioning.gke.io"
json_t		*kuberay_provisioning_objects(const struct kuberay_input *in, struct err *e);
/* The Slice (accelerator.gke.io/v1beta1, cluster-scoped) the attempt forms on partition i:
 * fleet-slice-<16 hex digits of the job id>-<attempt>-<i> (at most 49 characters, as the
 * Slice reference requires); false on a bad id or attempt. */
bool		 kuberay_tpu_slice_name(const char *job_id, int attempt, int i, char *buf,
		    size_t len);
/* The attempt's Slices, one per placement.tpu_partitions (an empty array when it has none):
 * https://docs.cloud.google.com/kubernetes-engine/docs/reference/crds/slice. */
json_t		*kuberay_tpu_slice_objects(const struct kuberay_input *in, struct err *e);

/* kuberay_history.c. Validates an environment's history_server object {storage,
 * collector_image, url?, s3_region?} (400/422 naming ptr's members) into *canon (new
 * reference). */
bool		 kuberay_history_parse(json_t *in, const char *ptr, json_t **canon,
		    struct err *e);
/* h from a canonical object (borrowed strings); false when it has none. */
bool		 kuberay_history_from_json(const json_t *canon, struct kuberay_history *h);
/* Adds the collector sidecar, the shared /tmp/ray volume and the Ray container's event
 * export to a pod spec (KubeRay v1.7.0's History Server samples); owner NULL: none. */
void		 kuberay_history_apply(const struct kuberay_history *h, const char *owner_kind,
		    const char *owner_name, bool head, json_t *spec);
/* Where the History Server shows the job's Ray cluster: {storage, namespace, kind, name,
 * sessions, live | session} (the links only when canon names a url). NULL on bad input. */
json_t		*kuberay_history_link(const json_t *canon, const char *ns, const char *kind,
		    const char *name, bool live);
/* kuberay_auth.c. Whether a Ray version has token auth (>= KUBERAY_AUTH_MIN_RAY). */
bool		 kuberay_auth_supported(const char *ray_version);
/* Whether the manifest of in carries spec.authOptions (supported and not auth_off). */
bool		 kuberay_auth_on(const struct kuberay_input *in);
/* The Secret (v1, type Opaque, data auth_token) holding in->auth_token, named as the
 * attempt's signal objects; NULL + e (422) on bad input or no token.  Caller owns it and
 * must not log it. */
json_t		*kuberay_auth_secret(const struct kuberay_input *in, struct err *e);
/* The attempt's NetworkPolicy (networking.k8s.io/v1, policyTypes [Ingress]) on the job's
 * pods: from the job's own pods any port; from the KubeRay operator's namespace the
 * dashboard and agent ports; from the RayJob's submitter pod the dashboard port; from the
 * ingress controller's namespace the dashboard port when in->ingress; nothing else. */
json_t		*kuberay_network_policy(const struct kuberay_input *in, struct err *e);
/* Adds authOptions {mode: token, secretName: secret} (when kuberay_auth_on) and the
 * ingress fields (headGroupSpec) to a rendered cluster spec; 422 kuberay.bad_ingress on a
 * bad ingress, kuberay.ingress_needs_auth for an ingress without token auth. */
bool		 kuberay_auth_cluster(const struct kuberay_input *in, const char *secret,
		    json_t *cluster_spec, struct err *e);
/* Namespace and name (kuberay_signal_name) of the attempt's objects; false + e (422). */
bool		 kuberay_signal_where(const struct kuberay_input *in, char *ns, size_t nn,
		    char *name, size_t n, struct err *e);
/* The head's in-cluster dashboard URL for a rendered manifest (RayCluster, RayService:
 * http://<name>-head-svc.<ns>.svc.cluster.local:8265), written to buf; false for a kind
 * whose head service KubeRay names itself (RayJob, RayCronJob). */
bool		 kuberay_dashboard_url(const json_t *manifest, char *buf, size_t len);

/* kuberay_pod.c. Adds a validated pod section (jobspec_parse_pod) to a pod template: env,
 * envFrom and mounts to the first (Ray) container of spec, volumes, tolerations, service
 * account and sidecars to spec, labels and annotations to meta (fleetd's keys win). NULL
 * pod: nothing. */
void		 kuberay_pod_apply(json_t *pod, json_t *meta, json_t *spec);
/* The pod sections' service accounts as RoleBinding subjects in ns, each once. */
void		 kuberay_pod_accounts(const struct job_spec *s, const char *ns, json_t *subjects);

/* Kueue compatibility of a rendered manifest: whether Kueue gates it (it carries the
 * queue-name label) and why not; reason is a sentence for explain. */
bool		 kuberay_kueue_gated(const struct kuberay_input *in, const char **reason);
/* The Kueue objects the manifest's labels name, to apply before it: its LocalQueue
 * (spec.clusterQueue = cluster_queue) and, when it names one, its WorkloadPriorityClass
 * (value priority_value).  Labels app.kubernetes.io/managed-by, fleet.io/queue and
 * fleet.io/environment (shared objects: no job or attempt).  An empty array when Kueue
 * does not gate the manifest; NULL + e (422) on a manifest without valid names. */
json_t		*kuberay_kueue_objects(const json_t *manifest, const char *cluster_queue,
		    int priority_value, struct err *e);

/* "<name>-<hash of job id>-a<attempt>", a DNS-1035 label within the operator's limit
 * for kind (kuberay_name_max); a RayService's is "<name>-<hash of job id>" whatever the
 * attempt (its serve Service <name>-serve-svc is the endpoint clients keep; the attempt is
 * in the fleet.io/attempt label). False when job_id is empty, attempt < 1 or len too small. */
bool		 kuberay_object_name(enum jobspec_kind kind, const char *spec_name,
		    const char *job_id, int attempt, char *buf, size_t len);
/* "fleet-<environment>-<queue>", a DNS-1123 label (hashed when over 63 characters). */
bool		 kuberay_namespace(const char *environment, const char *queue, char *buf,
		    size_t len);
int		 kuberay_name_max(enum jobspec_kind kind);	/* 47, 53, 47, 36 */

/* Extended resource for an accelerator flavor: google.com/tpu, nvidia.com/gpu,
 * amd.com/gpu or aws.amazon.com/neuron. */
const char	*kuberay_accel_resource(const char *flavor);
/* The default image of a pod by its accelerator (one table, see README "Images"):
 * NULL flavor (head, cpu workers) and TPU: rayproject/ray:<v> (libtpu comes with the
 * Python environment); NVIDIA: rayproject/ray:<v>-gpu (the CUDA build). Writes buf. */
const char	*kuberay_default_image(const char *ray_version, const char *flavor, char *buf,
		    size_t len);
/* When s names an image that looks like a CPU build (no -gpu, -cuXX or cuda in the tag)
 * while a group asks for NVIDIA GPUs: a warning sentence in buf, true. */
bool		 kuberay_image_warning(const struct job_spec *s, char *buf, size_t len);
/* Default node label naming a rack / NVLink domain for the provider. */
const char	*kuberay_rack_label(enum kuberay_provider p);
/* Default node label naming a scale unit / InfiniBand block for the provider. */
const char	*kuberay_block_label(enum kuberay_provider p);
const char	*kuberay_provider_name(enum kuberay_provider p);	/* gke | aks | hyperpod */
bool		 kuberay_provider_from_name(const char *name, enum kuberay_provider *out);
bool		 kuberay_scheduler_from_name(const char *name, enum kuberay_scheduler *out);

#endif
