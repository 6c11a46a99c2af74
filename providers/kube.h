/* kube: the Kubernetes API client of a member cluster (TLS verified with the cluster's CA,
 * bearer token) — free capacity from nodes and pods, server-side apply, get, delete,
 * events, namespaces and a reachability check. Parsers are pure and fuzzable. */
#ifndef FLEET_PROVIDERS_KUBE_H
#define FLEET_PROVIDERS_KUBE_H

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

#include "core/err.h"
#include "providers/provider.h"

/* GKE dynamic slicing (TPU7x sub-blocks of an All Capacity mode reservation): each node of
 * a 4x4x4 sub-block carries, for every shape a slice can be carved in, the id of its
 * partition of that shape and the partition's state, cloud.google.com/gke-tpu-partition-
 * <shape>-id and -state (HEALTHY, DEGRADED: usable; UNHEALTHY, UNSET, INCOMPLETE: not):
 * https://docs.cloud.google.com/kubernetes-engine/docs/how-to/create-dynamic-slices
 * ("Verify the status of the nodes and the partitions") and
 * https://docs.cloud.google.com/kubernetes-engine/docs/concepts/dynamic-slicing (sub-slicing:
 * 2x2x1, 2x2x2, 2x2x4, 2x4x4 inside one sub-block). */
#define KUBE_TPU_PARTS	5
extern const char *const kube_tpu_part_shapes[KUBE_TPU_PARTS];	/* smallest first */
/* Index of shape in kube_tpu_part_shapes, -1 when no partition of it is labelled. */
int	 kube_tpu_part_index(const char *shape);

struct kube_node {
	char		name[254];
	char		pool[96];	/* from the provider's pool label, "" when absent */
	char		rack[128];	/* rack / NVLink domain label, "" when absent */
	char		block[128];	/* scale unit / InfiniBand block label, "" when absent */
	char		slice[128];	/* TPU slice (the pool of a multi-host slice), else "" */
	char		tpu_topology[24];
	char		parts[KUBE_TPU_PARTS][64];	/* dynamic slicing: the node's usable
						 * partition of each shape, "" none */
	char		instance_type[96];
	long long	alloc_cpu_m, alloc_mem, alloc_accel;
	long long	used_cpu_m, used_mem, used_accel;	/* requests of live pods */
	bool		ready;		/* Ready=True, schedulable, no NoExecute taint */
};

struct kube_capacity {
	const char		*pool_label;	/* set before parsing (ops->pool_label) */
	const char		*rack_label;
	const char		*block_label;	/* set after init (ops->block_label); NULL:
						 * fleet.io/block only */
	struct kube_node	*v;
	size_t			 n, cap;
	json_t			*use;		/* node name -> [cpu_m, mem, accel] until finish */
	int			 pages;
	int			 pods;		/* live pods counted */
};

void	 kube_capacity_init(struct kube_capacity *c, const char *pool_label,
	    const char *rack_label);
void	 kube_capacity_cleanup(struct kube_capacity *c);

/* Quantity "500m", "4", "1.5", "16Gi", "1e3", "128974848" -> integer (millis when milli,
 * else units, rounded up).  False on anything else or out of range. */
bool	 kube_parse_quantity(const char *s, bool milli, long long *out);

/* Pure parsers of one page of a NodeList / PodList; *next gets metadata.continue
 * (malloc'd) or NULL.  False with 502 "kube.bad_answer" on a malformed page. */
bool	 kube_parse_nodes(const char *body, size_t len, struct kube_capacity *out, char **next,
	    struct err *e);
bool	 kube_parse_pods(const char *body, size_t len, struct kube_capacity *out, char **next,
	    struct err *e);
/* Subtracts pod usage from node allocatable (call once every page is parsed). */
void	 kube_capacity_finish(struct kube_capacity *out);
static inline long long kube_free_accel(const struct kube_node *n)
{
	return n->alloc_accel > n->used_accel ? n->alloc_accel - n->used_accel : 0;
}
static inline long long kube_free_cpu(const struct kube_node *n)
{
	return n->alloc_cpu_m > n->used_cpu_m ? n->alloc_cpu_m - n->used_cpu_m : 0;
}
static inline long long kube_free_mem(const struct kube_node *n)
{
	return n->alloc_mem > n->used_mem ? n->alloc_mem - n->used_mem : 0;
}

/* Queues the node and pod lists of cluster k (paged) into f. */
bool	 kube_capacity_begin(struct prov_fetch *f, const struct prov_cluster *k,
	    struct kube_capacity *out, struct err *e);
/* Synchronous capacity of one cluster (lists, then finish). */
bool	 kube_capacity_get(const struct prov_cluster *k, struct kube_capacity *out,
	    struct err *e);

/* ---- objects */

struct kube_ref {
	char	uid[64];
	char	resource_version[64];
	long long generation;
};

/* API path of an object: /api/v1/... or /apis/<group>/<version>/..., with the plural
 * from the kind (RayJob -> rayjobs).  ns NULL or "" for cluster-scoped; name may be NULL
 * for the collection. */
bool	 kube_object_path(const char *api_version, const char *kind, const char *ns,
	    const char *name, char *out, size_t n);
/* Server-side apply (PATCH application/apply-patch+yaml, JSON body, fieldManager=fleetd,
 * force=true); obj needs apiVersion, kind, metadata.name (and namespace when namespaced).
 * *live (optional) gets the object the server answered. */
bool	 kube_apply(const struct prov_cluster *k, json_t *obj, struct kube_ref *ref,
	    json_t **live, struct err *e);
/* Server-side apply of every object of the array at once (independent objects: no order
 * among them); true when all were applied, else e says the first refusal. */
bool	 kube_apply_all(const struct prov_cluster *k, json_t *objs, struct err *e);
/* uid, resourceVersion and generation of the object a member answered with (body of len
 * bytes), read without building it: true only when the body is one JSON object with one
 * "metadata" object whose uid and resourceVersion, when present, are plain strings (absent
 * fields are empty, generation 0, as ref_from leaves them); false (ref zeroed) on anything
 * else, which the caller then parses in full. */
bool	 kube_ref_scan(const char *body, size_t len, struct kube_ref *ref);
/* Server-side apply of every object of the array at once, each with its own outcome:
 * refs[i] as kube_apply fills it (refs may be NULL: the answers are then not parsed),
 * or errs[i] (status != 0) when object i was refused or its call failed.  texts (may be
 * NULL): texts[i] gets object i's compact JSON as sent (malloc'd, the caller frees it;
 * NULL when none was made), for a caller that stores the object too. */
void	 kube_apply_each(const struct prov_cluster *k, json_t *objs, struct kube_ref *refs,
	    struct err *errs, char **texts);
/* GET of an API path (discovery, any object): true when the cluster answered, with its
 * HTTP status in *status and, on 200, the JSON object in *out (new); false with e when
 * no answer came or a 200 carried no JSON object. */
bool	 kube_get_path(const struct prov_cluster *k, const char *path, long *status,
	    json_t **out, struct err *e);
/* 404 "kube.not_found" when absent. */
bool	 kube_get_object(const struct prov_cluster *k, const char *api_version,
	    const char *kind, const char *ns, const char *name, json_t **out, struct err *e);
/* Idempotent: an absent object is success with *existed false (existed may be NULL). */
bool	 kube_delete_object(const struct prov_cluster *k, const char *api_version,
	    const char *kind, const char *ns, const char *name, bool *existed, struct err *e);
/* DELETE of a pod with gracePeriodSeconds=0 (a force delete, as `kubectl delete pod
 * --force --grace-period=0`: a pod on a node whose kubelet is gone); absent is success. */
bool	 kube_delete_pod_now(const struct prov_cluster *k, const char *ns, const char *name,
	    struct err *e);
/* JSON merge patch (RFC 7386, field manager fleetd) of an object fleetd does not own
 * whole (a RayCronJob's run); 404 kube.not_found when it is gone. */
bool	 kube_patch_object(const struct prov_cluster *k, const char *api_version,
	    const char *kind, const char *ns, const char *name, json_t *patch, struct err *e);
/* The same on the object's status subresource (…/status): what a controller reports, which
 * fleetd corrects only where the controller's own API gives no other way (a RayService
 * upgrade rolled back past its deadline, queue/change/updater.c). */
bool	 kube_patch_status(const struct prov_cluster *k, const char *api_version,
	    const char *kind, const char *ns, const char *name, json_t *patch, struct err *e);
/* Events of ns about the object (kind, name); *items is a new array. */
bool	 kube_list_events(const struct prov_cluster *k, const char *ns, const char *kind,
	    const char *name, json_t **items, struct err *e);
/* Creates the namespace unless it exists. */
bool	 kube_ensure_namespace(const struct prov_cluster *k, const char *ns, struct err *e);
/* Reachability: TLS with the cluster's CA and the token accepted (GET /version). */
bool	 kube_check(const struct prov_cluster *k, struct err *e);

/* Maps a Kubernetes answer (Status object) to e: 401 kube.unauthorized, 403
 * kube.forbidden, 404 kube.not_found, 409 kube.conflict, 422 kube.invalid, 429
 * kube.throttled, else 502 kube.bad_status.  Always returns false. */
bool	 kube_status_err(const struct http_resp *r, const char *what, struct err *e);
/* A Kubernetes list answer (body of len bytes): a JSON object with an items array, new
 * reference; else NULL and 502 kube.bad_answer "<kind>: answer is not a list". */
json_t	*kube_list_load(const char *body, size_t len, const char *kind, struct err *e);
/* The answer r to a list call: 200 and kube_list_load of its body, else NULL and e
 * (kube_status_err); what names the call in messages. */
json_t	*kube_list_answer(const struct http_resp *r, const char *what, struct err *e);

/* Whether a node taint says the provider is taking the node away — GKE's termination
 * notice of spot and preemptible VMs, AWS Node Termination Handler's taints, AKS's spot
 * eviction and node auto-drain: such a node takes no new pod and counts as not free. */
bool	kube_taint_reclaims(const char *key);

#endif
