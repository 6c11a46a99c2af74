/* kuberay: renders ray.io/v1 manifests the way a careful platform engineer writes them:
 * fleet labels, /dev/shm, head on on-demand nodes, provider node vocabulary, gangs. */
#include <ctype.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/crypto.h"
#include "providers/kuberay.h"

#define HASH_HEX	12	/* hex characters of the job id hash in object names */

static const char *const provider_names[] = { "gke", "aks", "hyperpod" };
static const char *const sched_names[] = { "none", "volcano", "yunikorn", "kai", "kueue" };

const char *
kuberay_provider_name(enum kuberay_provider p)
{
	return (unsigned)p < 3 ? provider_names[p] : "?";
}

bool
kuberay_provider_from_name(const char *name, enum kuberay_provider *out)
{
	for (int i = 0; name != NULL && i < 3; i++) {
		if (strcmp(name, provider_names[i]) == 0) {
			*out = (enum kuberay_provider)i;
			return true;
		}
	}
	return false;
}

bool
kuberay_scheduler_from_name(const char *name, enum kuberay_scheduler *out)
{
	for (int i = 0; name != NULL && i < 5; i++) {
		if (strcmp(name, sched_names[i]) == 0) {
			*out = (enum kuberay_scheduler)i;
			return true;
		}
	}
	return false;
}

int
kuberay_name_max(enum jobspec_kind kind)
{
	switch (kind) {
	case JOBSPEC_RAYCLUSTER:	return 53;
	case JOBSPEC_RAYCRONJOB:	return 36;
	default:			return 47;
	}
}

const char *
kuberay_accel_resource(const char *flavor)
{
	if (flavor == NULL)
		return NULL;
	if (strncmp(flavor, "tpu", 3) == 0)
		return "google.com/tpu";
	if (strncmp(flavor, "amd-", 4) == 0)
		return "amd.com/gpu";
	if (strncmp(flavor, "aws-", 4) == 0 || strstr(flavor, "trainium") != NULL ||
	    strstr(flavor, "inferentia") != NULL)
		return "aws.amazon.com/neuron";
	return "nvidia.com/gpu";
}

/* One row per accelerator family: flavor prefix, image tag suffix. */
static const struct {
	const char	*prefix;
	const char	*suffix;
} image_table[] = {
	{ "nvidia-",	"-gpu" },	/* CUDA build; plain tags are CPU-only */
	{ "tpu",	"" },		/* libtpu ships with jax[tpu] in the image's Python */
};

const char *
kuberay_default_image(const char *ray_version, const char *flavor, char *buf, size_t len)
{
	const char *suffix = "";

	for (size_t i = 0; flavor != NULL && i < sizeof(image_table) / sizeof(image_table[0]);
	    i++)
		if (strncmp(flavor, image_table[i].prefix, strlen(image_table[i].prefix)) == 0)
			suffix = image_table[i].suffix;
	snprintf(buf, len, "rayproject/ray:%s%s", ray_version ? ray_version : "latest", suffix);
	return buf;
}

static bool
gpu_build(const char *image)
{
	const char *tag = strrchr(image, ':'), *slash = strrchr(image, '/');

	if (tag == NULL || (slash != NULL && slash > tag))
		tag = image;
	return strstr(tag, "-gpu") != NULL || strstr(tag, "-cu") != NULL ||
	    strstr(image, "cuda") != NULL || strstr(image, "gpu") != NULL;
}

bool
kuberay_image_warning(const struct job_spec *s, char *buf, size_t len)
{
	if (!s->image_set || gpu_build(s->image))
		return false;
	for (size_t i = 0; i < s->ngroups; i++) {
		const char *f = s->groups[i].accel_flavor;

		if (f != NULL && strncmp(f, "nvidia-", 7) == 0) {
			snprintf(buf, len, "image %.200s looks like a CPU build (no -gpu or -cuXX tag) "
			    "but worker group %.63s asks for %.48s: its pods may crash-loop without "
			    "CUDA", s->image, s->groups[i].name, f);
			return true;
		}
	}
	return false;
}

const char *
kuberay_rack_label(enum kuberay_provider p)
{
	switch (p) {
	case KUBERAY_GKE:	return "cloud.google.com/gce-topology-subblock";
	case KUBERAY_HYPERPOD:	return "topology.k8s.aws/network-node-layer-3";
	default:		return "fleet.io/rack";
	}
}

/* The scale unit above the rack, as each provider labels it (providers/gke.c and
 * providers/hyperpod.c cite the pages; AKS documents none: fleet.io/block). */
const char *
kuberay_block_label(enum kuberay_provider p)
{
	switch (p) {
	case KUBERAY_GKE:	return "cloud.google.com/gce-topology-block";
	case KUBERAY_HYPERPOD:	return "topology.k8s.aws/network-node-layer-2";
	default:		return "fleet.io/block";
	}
}

static const char *
pool_label(enum kuberay_provider p)
{
	switch (p) {
	case KUBERAY_GKE:	return "cloud.google.com/gke-nodepool";
	case KUBERAY_AKS:	return "kubernetes.azure.com/agentpool";
	default:		return "sagemaker.amazonaws.com/instance-group-name";
	}
}

/* FNV-1a 64: a stable, well-spread hash for names (not a security boundary). */
static uint64_t
fnv1a(const char *s)
{
	uint64_t h = 1469598103934665603ULL;

	for (; *s != '\0'; s++) {
		h ^= (unsigned char)*s;
		h *= 1099511628211ULL;
	}
	return h;
}

/* Lowercase [a-z0-9-] copy of s, runs of other characters folded into one '-', at most
 * max characters, no leading or trailing '-'. */
static void
slug(const char *s, char *out, size_t max)
{
	size_t n = 0;

	for (; s != NULL && *s != '\0' && n < max; s++) {
		char c = (char)tolower((unsigned char)*s);

		if (!isalnum((unsigned char)c))
			c = '-';
		if (c == '-' && (n == 0 || out[n - 1] == '-'))
			continue;
		out[n++] = c;
	}
	while (n > 0 && out[n - 1] == '-')
		n--;
	out[n] = '\0';
}

bool
kuberay_object_name(enum jobspec_kind kind, const char *spec_name, const char *job_id,
		    int attempt, char *buf, size_t len)
{
	char base[64], suffix[40];
	int max = kuberay_name_max(kind), room;

	if (job_id == NULL || job_id[0] == '\0' || attempt < 1 || len < (size_t)max + 1)
		return false;
	/* A RayService keeps one name across attempts: KubeRay names its serve Service
	 * <name>-serve-svc, the endpoint clients hold (the attempt is in its labels) */
	if (kind == JOBSPEC_RAYSERVICE)
		snprintf(suffix, sizeof(suffix), "-%0*llx", HASH_HEX,
		    (unsigned long long)(fnv1a(job_id) >> (64 - 4 * HASH_HEX)));
	else
		snprintf(suffix, sizeof(suffix), "-%0*llx-a%d", HASH_HEX,
		    (unsigned long long)(fnv1a(job_id) >> (64 - 4 * HASH_HEX)), attempt);
	room = max - (int)strlen(suffix);
	if (room < 4)
		return false;
	slug(spec_name, base, (size_t)room);
	if (base[0] == '\0') {
		snprintf(base, sizeof(base), "ray");
	} else if (!isalpha((unsigned char)base[0])) {
		/* DNS-1035 starts with a letter: prefix "r" (ray) when the name does not */
		memmove(base + 1, base, strlen(base) + 1);
		base[0] = 'r';
		base[room] = '\0';
		while (base[strlen(base) - 1] == '-')
			base[strlen(base) - 1] = '\0';
	}
	snprintf(buf, len, "%s%s", base, suffix);
	return true;
}

/* Injective (environment, queue) -> DNS label of at most 63 characters:
 *   fleet-<env>-<queue>             env without '-' (the first '-' after fleet- splits);
 *   fleet--<len(env)>-<env>-<queue> env with a '-' (its length says where it ends);
 *   fleet--h<16 hex>-<readable>     too long or not label characters: sha-256 of
 *                                   env NUL queue (distinct from the forms above, which
 *                                   have a digit after "fleet--" or no "--" at all). */
bool
kuberay_namespace(const char *environment, const char *queue, char *buf, size_t len)
{
	static const char ok[] = "abcdefghijklmnopqrstuvwxyz0123456789-";
	char full[200], sha[65], readable[64], *in;
	size_t el, ql;
	int n;

	if (len < 64 || environment == NULL || queue == NULL)
		return false;
	el = strlen(environment);
	ql = strlen(queue);
	if (el == 0 || ql == 0)
		return false;
	n = -1;
	if (el < 64 && ql < 64 && strspn(environment, ok) == el && strspn(queue, ok) == ql &&
	    queue[ql - 1] != '-') {
		if (strchr(environment, '-') == NULL)
			n = snprintf(full, sizeof(full), "fleet-%s-%s", environment, queue);
		else
			n = snprintf(full, sizeof(full), "fleet--%zu-%s-%s", el, environment, queue);
	}
	if (n > 0 && n <= 63) {
		snprintf(buf, len, "%s", full);
		return true;
	}
	in = malloc(el + ql + 2);
	if (in == NULL)
		return false;
	memcpy(in, environment, el + 1);
	memcpy(in + el + 1, queue, ql + 1);
	crypto_sha256_hex(in, el + ql + 1, sha);
	free(in);
	snprintf(full, sizeof(full), "%s-%s", environment, queue);
	slug(full, readable, 63 - 25);
	snprintf(buf, len, "fleet--h%.16s%s%s", sha, readable[0] ? "-" : "", readable);
	return true;
}

/* ------------------------------------------------------------------ render context */

struct ctx {
	const struct kuberay_input *in;
	const struct job_spec *s;
	const struct kuberay_placement *p;
	const char	*queue;
	char		 name[64];
	char		 ns[64];
	char		 attempt[16];
	char		 signal[64];	/* signal ConfigMap and service account */
	bool		 elastic;
	enum jobspec_gcs_ft gcs;
};

static bool
label_value_ok(const char *v)
{
	size_t n = strlen(v);

	if (n > 63)
		return false;
	if (n == 0)
		return true;
	if (!isalnum((unsigned char)v[0]) || !isalnum((unsigned char)v[n - 1]))
		return false;
	for (size_t i = 0; i < n; i++) {
		if (!isalnum((unsigned char)v[i]) && v[i] != '-' && v[i] != '_' && v[i] != '.')
			return false;
	}
	return true;
}

static bool
uuid_ok(const char *s)
{
	if (s == NULL || strlen(s) != 36)
		return false;
	for (int i = 0; i < 36; i++) {
		bool dash = i == 8 || i == 13 || i == 18 || i == 23;

		if (dash ? s[i] != '-' : !isxdigit((unsigned char)s[i]))
			return false;
	}
	return true;
}

static bool
check_input(struct ctx *c, struct err *e)
{
	const struct kuberay_input *in = c->in;
	const struct kuberay_placement *p = &in->placement;

	if (in->spec == NULL || !uuid_ok(in->job_id) || in->attempt < 1)
		return err_set(e, 422, "kuberay.bad_input", "spec, a uuid job id and attempt >= 1 "
		    "are required");
	if (in->environment == NULL || !jobspec_dns_label(in->environment, 63) ||
	    !label_value_ok(c->queue))
		return err_set(e, 422, "kuberay.bad_input", "environment and queue must be dns labels");
	if ((unsigned)p->provider > KUBERAY_HYPERPOD || p->pool == NULL ||
	    !label_value_ok(p->pool) || (p->cpu_pool && !label_value_ok(p->cpu_pool)) ||
	    (p->head_pool && !label_value_ok(p->head_pool)))
		return err_set(e, 422, "kuberay.bad_placement", "placement needs a provider and a "
		    "valid pool name");
	if (in->batch.queue != NULL && !label_value_ok(in->batch.queue))
		return err_set(e, 422, "kuberay.bad_placement", "batch scheduler queue is not a "
		    "valid label value");
	if (in->spec->topology == JOBSPEC_TOPO_RACK && (p->rack_id == NULL ||
	    !label_value_ok(p->rack_id)))
		return err_set(e, 422, "kuberay.bad_placement", "topology rack needs the rack id");
	if (in->spec->topology == JOBSPEC_TOPO_PACK) {
		bool ok = p->nracks > 0 && p->nracks <= KUBERAY_MAX_RACKS &&
		    (p->block == NULL || label_value_ok(p->block));

		for (size_t i = 0; ok && i < p->nracks; i++)
			ok = p->racks[i] != NULL && label_value_ok(p->racks[i]);
		if (!ok)
			return err_set(e, 422, "kuberay.bad_placement", "topology pack needs the "
			    "racks chosen (1 to 64 label values)");
	}
	if (in->spec->topology == JOBSPEC_TOPO_SLICE && (p->provider != KUBERAY_GKE ||
	    p->tpu_accelerator == NULL || !label_value_ok(p->tpu_accelerator)))
		return err_set(e, 422, "kuberay.unsupported_topology", "tpu slices need a gke "
		    "placement with a tpu accelerator");
	if (in->spec->priority_class != NULL && !label_value_ok(in->spec->priority_class))
		return err_set(e, 422, "kuberay.bad_input", "priority class is not a label value");
	return true;
}

/* ------------------------------------------------------------------ pod templates */

static json_t *
fleet_labels(const struct ctx *c)
{
	return json_pack("{s:s, s:s, s:s, s:s, s:s}",
	    "app.kubernetes.io/managed-by", "fleetd",
	    "fleet.io/job-id", c->in->job_id, "fleet.io/queue", c->queue,
	    "fleet.io/environment", c->in->environment, "fleet.io/attempt", c->attempt);
}

static json_t *
resources(int64_t cpu_milli, int64_t memory, const char *accel, int count)
{
	char cpu[32], mem[32];
	json_t *r;

	jobspec_fmt_cpu(cpu_milli, cpu, sizeof(cpu));
	jobspec_fmt_memory(memory, mem, sizeof(mem));
	r = json_pack("{s:s, s:s}", "cpu", cpu, "memory", mem);
	if (accel != NULL)
		json_object_set_new(r, accel, json_sprintf("%d", count));
	/* requests == limits: guaranteed QoS, and required for extended resources */
	return json_pack("{s:o, s:o}", "requests", json_deep_copy(r), "limits", r);
}

/* /dev/shm as memory-backed emptyDir: 30% of the pod memory (Ray's object store
 * default), at least 64Mi, rounded down to a whole Mi. */
static json_t *
shm_volume(int64_t memory)
{
	int64_t shm = memory / 10 * 3;
	char buf[32];

	shm -= shm % (1LL << 20);
	if (shm < (64LL << 20))
		shm = 64LL << 20;
	if (shm > memory)
		shm = memory;
	jobspec_fmt_memory(shm, buf, sizeof(buf));
	return json_pack("{s:s, s:{s:s, s:s}}", "name", "dshm", "emptyDir", "medium", "Memory",
	    "sizeLimit", buf);
}

static json_t *
container_env(const struct ctx *c)
{
	json_t *env = json_pack("[{s:s, s:s}, {s:s, s:s}, {s:s, s:s}, {s:s, s:s}]",
	    "name", "FLEET_JOB_ID", "value", c->in->job_id,
	    "name", "FLEET_ATTEMPT", "value", c->attempt,
	    "name", "FLEET_SIGNAL_DIR", "value", KUBERAY_SIGNAL_DIR,
	    "name", "FLEET_SIGNAL_CONFIGMAP", "value", c->signal);

	json_array_append_new(env, json_pack("{s:s, s:s}", "name", "FLEET_NAMESPACE", "value",
	    c->ns));

	if (c->s->checkpoint_uri != NULL) {
		char grace[16];

		snprintf(grace, sizeof(grace), "%d", c->s->checkpoint_grace_seconds);
		json_array_append_new(env, json_pack("{s:s, s:s}", "name", "FLEET_CHECKPOINT_URI",
		    "value", c->s->checkpoint_uri));
		json_array_append_new(env, json_pack("{s:s, s:s}", "name",
		    "FLEET_CHECKPOINT_GRACE_SECONDS", "value", grace));
	}
	return env;
}

static json_t *
toleration(const char *key, const char *value)
{
	if (value == NULL)
		return json_pack("{s:s, s:s, s:s}", "key", key, "operator", "Exists",
		    "effect", "NoSchedule");
	return json_pack("{s:s, s:s, s:s, s:s}", "key", key, "operator", "Equal", "value", value,
	    "effect", "NoSchedule");
}

static json_t *
match_expr(const char *key, const char *op, const char *value)
{
	if (value == NULL)
		return json_pack("{s:s, s:s}", "key", key, "operator", op);
	return json_pack("{s:s, s:s, s:[s]}", "key", key, "operator", op, "values", value);
}

static json_t *
required_node_affinity(json_t *exprs)
{
	return json_pack("{s:{s:{s:[{s:o}]}}}", "nodeAffinity",
	    "requiredDuringSchedulingIgnoredDuringExecution", "nodeSelectorTerms",
	    "matchExpressions", exprs);
}

/* The kubernetes.io/hostname In [...] expression pinning group gi (0 = the head) to the
 * nodes the scheduler chose for it, so the member's scheduler cannot put a pod on another
 * node than the one fleetd accounted it on (where a later decision may count on the room).
 * NULL when the placement has no pins for the group, or one of them is a node still to
 * grow (no name yet) or a name no label value can hold. */
static json_t *
pin_expr(const struct ctx *c, int gi)
{
	json_t *nodes = json_array(), *v;
	size_t i, k;

	for (i = 0; i < c->p->npins; i++) {
		const struct kuberay_pin *pin = &c->p->pins[i];
		bool dup = false;

		if (pin->group != gi)
			continue;
		if (pin->node == NULL || !label_value_ok(pin->node)) {
			json_decref(nodes);
			return NULL;
		}
		json_array_foreach(nodes, k, v)
			dup |= strcmp(json_string_value(v), pin->node) == 0;
		if (!dup)
			json_array_append_new(nodes, json_string(pin->node));
	}
	if (json_array_size(nodes) == 0) {
		json_decref(nodes);
		return NULL;
	}
	return json_pack("{s:s, s:s, s:o}", "key", "kubernetes.io/hostname", "operator", "In",
	    "values", nodes);
}

/* Head: on-demand only, whatever the workers run on; on the scheduler's node when named. */
static void
head_placement(const struct ctx *c, json_t *spec)
{
	const struct kuberay_placement *p = c->p;
	json_t *sel = json_object(), *ex = json_array(), *pin;

	if (p->head_pool != NULL)
		json_object_set_new(sel, pool_label(p->provider), json_string(p->head_pool));
	switch (p->provider) {
	case KUBERAY_GKE:
		json_array_append_new(ex, match_expr("cloud.google.com/gke-spot", "DoesNotExist",
		    NULL));
		json_array_append_new(ex, match_expr("cloud.google.com/gke-preemptible",
		    "DoesNotExist", NULL));
		break;
	case KUBERAY_AKS:
		json_array_append_new(ex, match_expr("kubernetes.azure.com/scalesetpriority",
		    "NotIn", "spot"));
		break;
	case KUBERAY_HYPERPOD:
		json_array_append_new(ex, match_expr("eks.amazonaws.com/capacityType", "NotIn",
		    "SPOT"));
		if (p->spot && p->head_pool == NULL)
			json_array_append_new(ex, match_expr(pool_label(p->provider), "NotIn",
			    p->pool));
		break;
	}
	pin = pin_expr(c, 0);
	if (pin != NULL)
		json_array_append_new(ex, pin);
	if (json_object_size(sel) > 0)
		json_object_set_new(spec, "nodeSelector", sel);
	else
		json_decref(sel);
	json_object_set_new(spec, "affinity", required_node_affinity(ex));
}

/* Groups without accelerators move to cpu_pool when one is given; spot and topology
 * belong to the chosen (accelerator) pool only. */
static bool
on_main_pool(const struct ctx *c, const struct jobspec_group *g)
{
	return g->accel_flavor != NULL || c->p->cpu_pool == NULL;
}

/* GKE's cloud.google.com/gke-accelerator value of a flavor: the flavor's own name but where
 * GKE names the GPU otherwise (the A100 40GB is nvidia-tesla-a100:
 * https://cloud.google.com/kubernetes-engine/docs/how-to/gpus, "GPU quota" / accelerator
 * types; the nodes carry it, so a selector of the flavor's name matches none). */
static const char *
gke_accelerator(const char *flavor)
{
	return strcmp(flavor, "nvidia-a100-40gb") == 0 ? "nvidia-tesla-a100" : flavor;
}

static void
worker_selectors(const struct ctx *c, const struct jobspec_group *g, json_t *sel,
		 json_t *tol)
{
	const struct kuberay_placement *p = c->p;
	const char *res = kuberay_accel_resource(g->accel_flavor);
	bool tpu = c->s->topology == JOBSPEC_TOPO_SLICE && g->accel_flavor != NULL;
	bool spot = p->spot && on_main_pool(c, g);

	/* a multi-host TPU group with several replicas spans several slices (GKE: one node
	 * pool each): the slice selectors choose, not one pool */
	if (!(tpu && g->max_replicas > 1))
		json_object_set_new(sel, pool_label(p->provider), json_string(
		    on_main_pool(c, g) ? p->pool : p->cpu_pool));
	if (p->provider == KUBERAY_GKE) {
		if (tpu) {
			json_object_set_new(sel, "cloud.google.com/gke-tpu-accelerator",
			    json_string(p->tpu_accelerator));
			json_object_set_new(sel, "cloud.google.com/gke-tpu-topology", json_string(
			    p->tpu_topology != NULL ? p->tpu_topology : c->s->slice_shape));
			/* a slice carved out of a dynamic-slicing sub-block: the Slice formed on
			 * its partition, as the GKE page's workload selects it
			 * (https://docs.cloud.google.com/kubernetes-engine/docs/how-to/
			 * create-dynamic-slices, "Run workloads on dynamic slicing"); several
			 * replicas: worker_placement requires one of theirs */
			if (p->ntpu_partitions == 1) {
				char sn[64];

				if (kuberay_tpu_slice_name(c->in->job_id, c->in->attempt, 0, sn,
				    sizeof(sn)))
					json_object_set_new(sel, "cloud.google.com/gke-tpu-slice",
					    json_string(sn));
			}
		} else if (g->accel_flavor != NULL) {
			json_object_set_new(sel, "cloud.google.com/gke-accelerator", json_string(
			    p->accelerator != NULL ? p->accelerator :
			    gke_accelerator(g->accel_flavor)));
		}
		if (spot) {
			json_object_set_new(sel, "cloud.google.com/gke-spot", json_string("true"));
			json_array_append_new(tol, toleration("cloud.google.com/gke-spot", "true"));
		}
	} else if (p->provider == KUBERAY_AKS) {
		if (spot) {
			json_object_set_new(sel, "kubernetes.azure.com/scalesetpriority",
			    json_string("spot"));
			json_array_append_new(tol, toleration(
			    "kubernetes.azure.com/scalesetpriority", "spot"));
		}
	} else if (p->machine_type != NULL && g->accel_flavor != NULL) {
		json_object_set_new(sel, "node.kubernetes.io/instance-type",
		    json_string(p->machine_type));
	}
	if (res != NULL)
		json_array_append_new(tol, toleration(res, NULL));
	/* the GPU taint AKS documents for GPU node pools */
	if (res != NULL && p->provider == KUBERAY_AKS)
		json_array_append_new(tol, toleration("sku", "gpu"));
}

/* topology host without a node name (a node still to grow): every pod of the accelerator
 * groups on the node of the first one (a pod matching its own required affinity term may
 * go first). */
static json_t *
host_affinity(const struct ctx *c)
{
	json_t *groups = json_array();

	for (size_t i = 0; i < c->s->ngroups; i++) {
		if (c->s->groups[i].accel_flavor != NULL)
			json_array_append_new(groups, json_string(c->s->groups[i].name));
	}
	return json_pack("{s:{s:[{s:{s:{s:s, s:s}, s:[{s:s, s:s, s:o}]}, s:s}]}}",
	    "podAffinity", "requiredDuringSchedulingIgnoredDuringExecution", "labelSelector",
	    "matchLabels", "fleet.io/job-id", c->in->job_id, "fleet.io/attempt", c->attempt,
	    "matchExpressions", "key", "fleet.io/group", "operator", "In", "values", groups,
	    "topologyKey", "kubernetes.io/hostname");
}

/* topology pack: required node affinity to the chosen racks (NVLink domains) and their
 * scale unit, so the member's scheduler keeps the gang where fleetd packed it. */
static void
pack_exprs(const struct ctx *c, json_t *ex)
{
	const char *rk = c->p->rack_label ? c->p->rack_label : kuberay_rack_label(c->p->provider);
	const char *bk = c->p->block_label ? c->p->block_label :
	    kuberay_block_label(c->p->provider);
	json_t *vals = json_array();

	for (size_t i = 0; i < c->p->nracks; i++)
		json_array_append_new(vals, json_string(c->p->racks[i]));
	json_array_append_new(ex, json_pack("{s:s, s:s, s:o}", "key", rk, "operator", "In",
	    "values", vals));
	if (c->p->block != NULL)
		json_array_append_new(ex, match_expr(bk, "In", c->p->block));
}

/* Workers: the chosen pool, the provider's accelerator and spot vocabulary, topology. */
static void
worker_placement(const struct ctx *c, const struct jobspec_group *g, json_t *spec)
{
	json_t *sel = json_object(), *tol = json_array(), *ex = json_array(), *aff;
	json_t *pin = pin_expr(c, (int)(g - c->s->groups) + 1);

	worker_selectors(c, g, sel, tol);
	if (g->accel_flavor == NULL) {
		/* topology binds the accelerator gang only */
	} else if (c->s->topology == JOBSPEC_TOPO_RACK) {
		const char *key = c->p->rack_label ? c->p->rack_label :
		    kuberay_rack_label(c->p->provider);

		json_array_append_new(ex, match_expr(key, "In", c->p->rack_id));
	} else if (c->s->topology == JOBSPEC_TOPO_PACK) {
		pack_exprs(c, ex);
	} else if (c->s->topology == JOBSPEC_TOPO_HOST && c->p->host != NULL) {
		json_object_set_new(sel, "kubernetes.io/hostname", json_string(c->p->host));
		json_decref(pin);	/* the selector says it already */
		pin = NULL;
	} else if (c->s->topology == JOBSPEC_TOPO_HOST) {
		json_object_set_new(spec, "affinity", host_affinity(c));
	}
	if (g->accel_flavor != NULL && c->s->topology == JOBSPEC_TOPO_SLICE &&
	    c->p->provider == KUBERAY_GKE && c->p->ntpu_partitions > 1) {
		json_t *names = json_array();

		for (size_t i = 0; i < c->p->ntpu_partitions; i++) {
			char sn[64];

			if (kuberay_tpu_slice_name(c->in->job_id, c->in->attempt, (int)i, sn,
			    sizeof(sn)))
				json_array_append_new(names, json_string(sn));
		}
		json_array_append_new(ex, json_pack("{s:s, s:s, s:o}", "key",
		    "cloud.google.com/gke-tpu-slice", "operator", "In", "values", names));
	}
	if (pin != NULL)
		json_array_append_new(ex, pin);
	if (json_array_size(ex) > 0) {
		aff = required_node_affinity(ex);
		if (json_object_get(spec, "affinity") != NULL)	/* host: podAffinity too */
			json_object_update(json_object_get(spec, "affinity"), aff);
		else
			json_object_set(spec, "affinity", aff);
		json_decref(aff);
	} else {
		json_decref(ex);
	}
	json_object_set_new(spec, "nodeSelector", sel);
	if (json_array_size(tol) > 0)
		json_object_set_new(spec, "tolerations", tol);
	else
		json_decref(tol);
}

/* g == NULL renders the head. */
static json_t *
pod_template(const struct ctx *c, const struct jobspec_group *g)
{
	int64_t cpu = g ? g->cpu_milli : c->s->head_cpu_milli;
	int64_t mem = g ? g->memory_bytes : c->s->head_memory_bytes;
	json_t *labels = fleet_labels(c), *ctr, *spec, *meta;
	char image[160];
	const char *img = c->s->image;

	if (!c->s->image_set && g != NULL)
		img = kuberay_default_image(c->s->ray_version, g->accel_flavor, image,
		    sizeof(image));
	json_object_set_new(labels, "fleet.io/role", json_string(g ? "worker" : "head"));
	if (g != NULL)
		json_object_set_new(labels, "fleet.io/group", json_string(g->name));
	ctr = json_pack("{s:s, s:s, s:s, s:o, s:o, s:[{s:s, s:s}]}",
	    "name", g ? "ray-worker" : "ray-head", "image", img,
	    "imagePullPolicy", "IfNotPresent",
	    "env", container_env(c),
	    "resources", resources(cpu, mem, g ? kuberay_accel_resource(g->accel_flavor) : NULL,
	    g ? g->accel_count : 0),
	    "volumeMounts", "name", "dshm", "mountPath", "/dev/shm");
	/* the checkpoint signal (docs/design/contracts.md): a ConfigMap volume, refreshed by the kubelet
	 * without a restart; the pod's service account may patch the ack into it */
	json_array_append_new(json_object_get(ctr, "volumeMounts"), json_pack("{s:s, s:s, s:b}",
	    "name", "fleet-signal", "mountPath", KUBERAY_SIGNAL_DIR, "readOnly", 1));
	if (g == NULL)
		json_object_set_new(ctr, "ports", json_pack("[{s:i, s:s}, {s:i, s:s}, {s:i, s:s}]",
		    "containerPort", 6379, "name", "gcs-server", "containerPort", 8265,
		    "name", "dashboard", "containerPort", 10001, "name", "client"));
	spec = json_pack("{s:s, s:[o], s:[o, {s:s, s:{s:s}}]}", "serviceAccountName", c->signal,
	    "containers", ctr, "volumes", shm_volume(mem), "name", "fleet-signal",
	    "configMap", "name", c->signal);
	if (g == NULL)
		head_placement(c, spec);
	else
		worker_placement(c, g, spec);
	if (c->s->checkpoint_uri != NULL)
		json_object_set_new(spec, "terminationGracePeriodSeconds",
		    json_integer(c->s->checkpoint_grace_seconds));
	meta = json_pack("{s:o}", "labels", labels);
	kuberay_pod_apply(g ? g->pod : c->s->head_pod, meta, spec);
	/* the History Server collector: RayJob and RayService name their owner; a RayCronJob's
	 * RayJobs get generated names, a RayCluster is its own owner */
	kuberay_history_apply(c->in->history, c->s->kind == JOBSPEC_RAYJOB ? "rayjob" :
	    c->s->kind == JOBSPEC_RAYSERVICE ? "rayservice" : NULL, c->name, g == NULL, spec);
	return json_pack("{s:o, s:o}", "metadata", meta, "spec", spec);
}

/* ------------------------------------------------------------------ specs */

bool
kuberay_grow_gated(const struct kuberay_input *in, const struct jobspec_group *g)
{
	const char *why;

	if (!g->elastic || g->min_replicas >= g->max_replicas || in->spec == NULL)
		return false;
	if (in->spec->kind != JOBSPEC_RAYCLUSTER && in->spec->kind != JOBSPEC_RAYJOB)
		return false;
	return !kuberay_kueue_gated(in, &why);	/* Kueue's workload slices admit growth */
}

static json_t *
worker_group(const struct ctx *c, const struct jobspec_group *g)
{
	int hosts = jobspec_group_hosts(c->s, g);
	json_t *o;

	if (c->s->topology == JOBSPEC_TOPO_SLICE && g->accel_flavor != NULL &&
	    c->p->tpu_hosts > 0)
		hosts = c->p->tpu_hosts;
	o = json_pack("{s:s, s:i, s:i, s:i}", "groupName", g->name,
	    "replicas", g->min_replicas, "minReplicas", g->min_replicas,
	    "maxReplicas", g->max_replicas);
	if (hosts > 1)
		json_object_set_new(o, "numOfHosts", json_integer(hosts));
	json_object_set_new(o, "rayStartParams", g->ray_start_params != NULL ?
	    json_deep_copy(g->ray_start_params) : json_object());
	json_object_set_new(o, "template", pod_template(c, g));
	/* a dynamic slice: the GKE page's workloads carry the slice's shape as
	 * cloud.google.com/gke-tpu-slice-topology (create-dynamic-slices, above) */
	if (c->s->topology == JOBSPEC_TOPO_SLICE && g->accel_flavor != NULL &&
	    c->p->ntpu_partitions > 0 && c->p->provider == KUBERAY_GKE) {
		json_t *md = json_object_get(json_object_get(o, "template"), "metadata");
		json_t *ann = json_object_get(md, "annotations");

		if (!json_is_object(ann)) {
			ann = json_object();
			json_object_set_new(md, "annotations", ann);
		}
		json_object_set_new(ann, "cloud.google.com/gke-tpu-slice-topology", json_string(
		    c->p->tpu_topology != NULL ? c->p->tpu_topology : c->s->slice_shape));
	}
	/* issue 26: every pod of an autoscaled group is created with fleetd's scheduling gate;
	 * the status worker lifts it from as many pods as fleetd admitted (the minimum, plus
	 * the grows the scheduler admitted), so a pod the autoscaler adds above that stays
	 * SchedulingGated (Pending) until its growth is admitted and charged.  A gate can only
	 * be set when the pod is created and only be removed afterwards:
	 * https://kubernetes.io/docs/concepts/scheduling-eviction/pod-scheduling-readiness/ */
	if (kuberay_grow_gated(c->in, g))
		json_object_set_new(json_object_get(json_object_get(o, "template"), "spec"),
		    "schedulingGates", json_pack("[{s:s}]", "name", KUBERAY_GROW_GATE));
	/* flex-start with queued provisioning: the pods consume the attempt's
	 * ProvisioningRequest, named by these two annotations:
	 * https://cloud.google.com/kubernetes-engine/docs/how-to/provisioningrequest */
	if (c->p->flex_start && c->p->provider == KUBERAY_GKE) {
		json_t *md = json_object_get(json_object_get(o, "template"), "metadata");
		json_t *ann = json_object_get(md, "annotations");

		if (!json_is_object(ann)) {
			ann = json_object();
			json_object_set_new(md, "annotations", ann);
		}
		json_object_set_new(ann, "autoscaling.x-k8s.io/consume-provisioning-request",
		    json_string(c->signal));
		json_object_set_new(ann, "autoscaling.x-k8s.io/provisioning-class-name",
		    json_string(KUBERAY_PROVREQ_CLASS));
	}
	return o;
}

static json_t *
gcs_options(const struct ctx *c)
{
	const struct jobspec_gcs *g = &c->s->gcs;
	json_t *o;
	char size[32];

	if (c->gcs == JOBSPEC_GCS_FT_REDIS) {
		o = json_pack("{s:s, s:s}", "backend", "redis", "redisAddress", g->redis_address);
		if (g->redis_secret != NULL)
			json_object_set_new(o, "redisPassword", json_pack("{s:{s:{s:s, s:s}}}",
			    "valueFrom", "secretKeyRef", "name", g->redis_secret,
			    "key", g->redis_secret_key));
		return o;
	}
	o = json_pack("{s:s}", "backend", "rocksdb");
	if (g->storage_bytes > 0 || g->storage_class != NULL) {
		json_t *st = json_object();

		if (g->storage_bytes > 0) {
			jobspec_fmt_memory(g->storage_bytes, size, sizeof(size));
			json_object_set_new(st, "size", json_string(size));
		}
		if (g->storage_class != NULL)
			json_object_set_new(st, "storageClassName", json_string(g->storage_class));
		json_object_set_new(o, "storage", st);
	}
	return o;
}

static json_t *
cluster_spec(const struct ctx *c)
{
	json_t *o, *groups = json_array(), *head_params;

	for (size_t i = 0; i < c->s->ngroups; i++)
		json_array_append_new(groups, worker_group(c, &c->s->groups[i]));
	o = json_pack("{s:s}", "rayVersion", c->s->ray_version);
	if (c->elastic) {
		json_object_set_new(o, "enableInTreeAutoscaling", json_true());
		json_object_set_new(o, "autoscalerOptions", json_pack("{s:s, s:i}",
		    "upscalingMode", c->s->upscaling_mode != NULL ? c->s->upscaling_mode :
		    "Default", "idleTimeoutSeconds", c->s->upscaling_mode != NULL ?
		    c->s->idle_timeout_seconds : 60));
	}
	if (c->gcs == JOBSPEC_GCS_FT_ROCKSDB || c->gcs == JOBSPEC_GCS_FT_REDIS)
		json_object_set_new(o, "gcsFaultToleranceOptions", gcs_options(c));
	/* the head keeps its conservative defaults (no tasks, dashboard reachable) unless the
	 * spec sets an allowed key; dashboard-host is not settable */
	head_params = json_pack("{s:s, s:s}", "num-cpus", "0", "dashboard-host", "0.0.0.0");
	if (c->s->head_ray_start_params != NULL)
		json_object_update(head_params, c->s->head_ray_start_params);
	json_object_set_new(o, "headGroupSpec", json_pack("{s:o, s:o}",
	    "rayStartParams", head_params, "template", pod_template(c, NULL)));
	json_object_set_new(o, "workerGroupSpecs", groups);
	return o;
}

/* JSON is a subset of YAML: runtimeEnvYAML and serveConfigV2 carry sorted, indented JSON. */
static json_t *
yaml_string(const json_t *v)
{
	char *text = json_dumps(v, JSON_INDENT(2) | JSON_SORT_KEYS);
	json_t *s = json_string(text);

	free(text);
	return s;
}

static json_t *
rayjob_spec(const struct ctx *c, bool with_suspend)
{
	const struct job_spec *s = c->s;
	json_t *o = json_pack("{s:s}", "entrypoint", s->entrypoint);

	if (s->runtime_env != NULL)
		json_object_set_new(o, "runtimeEnvYAML", yaml_string(s->runtime_env));
	/* the operator requires shutdownAfterJobFinishes for suspend; fleetd always sets it */
	json_object_set_new(o, "shutdownAfterJobFinishes", json_true());
	json_object_set_new(o, "ttlSecondsAfterFinished",
	    json_integer(s->ttl_seconds_after_finished));
	json_object_set_new(o, "backoffLimit", json_integer(s->backoff_limit));
	if (s->active_deadline_seconds > 0)
		json_object_set_new(o, "activeDeadlineSeconds",
		    json_integer(s->active_deadline_seconds));
	json_object_set_new(o, "submissionMode", json_string(s->submission_mode ?
	    s->submission_mode : "K8sJobMode"));
	if (s->delete_on_success != JOBSPEC_DELETE_UNSET)
		json_object_set_new(o, "deletionStrategy", json_pack("{s:{s:s}, s:{s:s}}",
		    "onSuccess", "policy", jobspec_delete_name(s->delete_on_success),
		    "onFailure", "policy", jobspec_delete_name(s->delete_on_failure)));
	/* Kueue owns spec.suspend while it queues the job: never apply suspend: false */
	if (with_suspend && (c->in->suspend || c->in->batch.kind != KUBERAY_SCHED_KUEUE))
		json_object_set_new(o, "suspend", json_boolean(c->in->suspend));
	json_object_set_new(o, "rayClusterSpec", cluster_spec(c));
	return o;
}

static json_t *
kind_spec(const struct ctx *c)
{
	json_t *o;

	switch (c->s->kind) {
	case JOBSPEC_RAYJOB:
		return rayjob_spec(c, true);
	case JOBSPEC_RAYCRONJOB:
		o = json_pack("{s:s}", "schedule", c->s->schedule);
		if (c->s->time_zone != NULL)
			json_object_set_new(o, "timeZone", json_string(c->s->time_zone));
		if (c->in->suspend)
			json_object_set_new(o, "suspend", json_true());
		/* every run is created suspended (KubeRay copies the template into each child
		 * RayJob): fleetd places the run against the capacity and quota of that moment,
		 * writes its nodes into the child and lifts suspend (queue/follow/cron.c), as Kueue
		 * does for the jobs it admits; the template's pins only name the nodes of the
		 * cron's admission */
		json_object_set_new(o, "jobTemplate", rayjob_spec(c, false));
		json_object_set_new(json_object_get(o, "jobTemplate"), "suspend", json_true());
		return o;
	case JOBSPEC_RAYSERVICE:
		o = json_pack("{s:o, s:{s:s}}", "serveConfigV2", yaml_string(c->s->serve_config),
		    "upgradeStrategy", "type", "NewCluster");
		if (c->in->suspend)
			json_object_set_new(o, "suspend", json_true());
		json_object_set_new(o, "rayClusterConfig", cluster_spec(c));
		return o;
	case JOBSPEC_RAYCLUSTER:
		o = cluster_spec(c);
		if (c->in->suspend)
			json_object_set_new(o, "suspend", json_true());
		return o;
	}
	return NULL;
}

/* Gang-scheduling vocabulary of the member cluster's batch scheduler. */
static void
scheduler_labels(const struct ctx *c, json_t *labels)
{
	const char *q = c->in->batch.queue != NULL ? c->in->batch.queue : c->queue;
	const char *pc = c->s->priority_class;

	switch (c->in->batch.kind) {
	case KUBERAY_SCHED_NONE:
		return;
	case KUBERAY_SCHED_KUEUE:
		/* Kueue does not manage RayService nor RayCronJob, and KubeRay copies none of
		 * the cron's labels into the RayJobs it creates */
		if (c->s->kind == JOBSPEC_RAYSERVICE || c->s->kind == JOBSPEC_RAYCRONJOB)
			return;
		/* Kueue's RayJob/RayCluster webhook refuses queue-name with
		 * enableInTreeAutoscaling unless the cluster runs elastic jobs (workload
		 * slices): never emit that pair; an elastic job is left to KubeRay alone */
		if (c->elastic && !c->in->batch.kueue_elastic)
			return;
		json_object_set_new(labels, "kueue.x-k8s.io/queue-name", json_string(q));
		if (pc != NULL)
			json_object_set_new(labels, "kueue.x-k8s.io/priority-class", json_string(pc));
		return;
	case KUBERAY_SCHED_VOLCANO:
		json_object_set_new(labels, "ray.io/scheduler-name", json_string("volcano"));
		json_object_set_new(labels, "volcano.sh/queue-name", json_string(q));
		break;
	case KUBERAY_SCHED_YUNIKORN:
		json_object_set_new(labels, "ray.io/scheduler-name", json_string("yunikorn"));
		json_object_set_new(labels, "yunikorn.apache.org/app-id", json_string(c->name));
		json_object_set_new(labels, "yunikorn.apache.org/queue", json_string(q));
		break;
	case KUBERAY_SCHED_KAI:
		json_object_set_new(labels, "kai.scheduler/queue", json_string(q));
		break;
	}
	json_object_set_new(labels, "ray.io/gang-scheduling-enabled", json_string("true"));
	if (pc != NULL)
		json_object_set_new(labels, "ray.io/priority-class-name", json_string(pc));
}

static json_t *
metadata(const struct ctx *c)
{
	const struct kuberay_placement *p = c->p;
	json_t *labels = fleet_labels(c), *ann;

	scheduler_labels(c, labels);
	ann = json_pack("{s:s, s:s, s:s, s:s, s:s, s:s, s:s}",
	    "fleet.io/job-id", c->in->job_id, "fleet.io/queue", c->queue,
	    "fleet.io/environment", c->in->environment, "fleet.io/attempt", c->attempt,
	    "fleet.io/job-name", c->s->name, "fleet.io/provider", kuberay_provider_name(p->provider),
	    "fleet.io/pool", p->pool);
	if (p->cluster != NULL)
		json_object_set_new(ann, "fleet.io/cluster", json_string(p->cluster));
	if (c->s->priority_class != NULL)
		json_object_set_new(ann, "fleet.io/priority-class", json_string(c->s->priority_class));
	if (c->s->checkpoint_uri != NULL)
		json_object_set_new(ann, "fleet.io/checkpoint-uri", json_string(c->s->checkpoint_uri));
	if (c->in->checkpoint_deadline != NULL)
		json_object_set_new(ann, "fleet.io/checkpoint-requested",
		    json_string(c->in->checkpoint_deadline));
	/* an elastic job Kueue gates: its webhook admits enableInTreeAutoscaling only on an
	 * object that opts into workload slices */
	if (c->elastic && json_object_get(labels, "kueue.x-k8s.io/queue-name") != NULL)
		json_object_set_new(ann, "kueue.x-k8s.io/elastic-job", json_string("true"));
	return json_pack("{s:s, s:s, s:o, s:o}", "name", c->name, "namespace", c->ns,
	    "labels", labels, "annotations", ann);
}

bool
kuberay_kueue_gated(const struct kuberay_input *in, const char **reason)
{
	bool elastic = in->spec != NULL && jobspec_is_elastic(in->spec);

	*reason = NULL;
	if (in->batch.kind != KUBERAY_SCHED_KUEUE) {
		*reason = "the cluster's batch scheduler is not Kueue";
		return false;
	}
	if (in->spec != NULL && in->spec->kind == JOBSPEC_RAYSERVICE) {
		*reason = "Kueue does not manage RayService: KubeRay runs it directly";
		return false;
	}
	if (in->spec != NULL && in->spec->kind == JOBSPEC_RAYCRONJOB) {
		*reason = "Kueue has no RayCronJob integration and KubeRay copies none of the "
		    "cron's labels into its runs: fleetd places and admits each run itself";
		return false;
	}
	if (elastic && !in->batch.kueue_elastic) {
		*reason = "elastic job on a Kueue cluster without elastic jobs "
		    "(ElasticJobsViaWorkloadSlices): Kueue's webhook refuses an autoscaling Ray "
		    "object with a queue-name, so fleetd applies it without the label; Kueue "
		    "does not gate it and fleetd's own admission is the only quota check";
		return false;
	}
	*reason = elastic ? "Kueue gates it as an elastic job (workload slices)" :
	    "Kueue gates it through its LocalQueue";
	return true;
}

/* The RayCluster spec inside a kind's spec. */
static json_t *
cluster_of(enum jobspec_kind kind, json_t *spec)
{
	switch (kind) {
	case JOBSPEC_RAYJOB:		return json_object_get(spec, "rayClusterSpec");
	case JOBSPEC_RAYSERVICE:	return json_object_get(spec, "rayClusterConfig");
	case JOBSPEC_RAYCRONJOB:	return json_object_get(json_object_get(spec,
					    "jobTemplate"), "rayClusterSpec");
	default:			return spec;
	}
}

json_t *
kuberay_render(const struct kuberay_input *in, struct err *e)
{
	struct ctx c;
	json_t *out;

	memset(&c, 0, sizeof(c));
	c.in = in;
	c.s = in->spec;
	c.p = &in->placement;
	c.queue = in->queue != NULL ? in->queue : (in->spec ? in->spec->queue : NULL);
	if (c.queue == NULL)
		c.queue = "";
	if (!check_input(&c, e))
		return NULL;
	if (!kuberay_object_name(c.s->kind, c.s->name, in->job_id, in->attempt, c.name,
	    sizeof(c.name)))
		return err_set(e, 422, "kuberay.bad_input", "cannot derive an object name"), NULL;
	if (in->ns != NULL) {
		if (!jobspec_dns_label(in->ns, 63))
			return err_set(e, 422, "kuberay.bad_input", "namespace is not a dns label"),
			    NULL;
		snprintf(c.ns, sizeof(c.ns), "%s", in->ns);
	} else if (!kuberay_namespace(in->environment, c.queue, c.ns, sizeof(c.ns))) {
		return err_set(e, 422, "kuberay.bad_input", "cannot derive a namespace"), NULL;
	}
	snprintf(c.attempt, sizeof(c.attempt), "%d", in->attempt);
	if (!kuberay_signal_name(in->job_id, in->attempt, c.signal, sizeof(c.signal)))
		return err_set(e, 422, "kuberay.bad_input", "cannot derive the signal name"), NULL;
	c.elastic = jobspec_is_elastic(c.s);
	c.gcs = c.s->gcs.mode;
	if (c.gcs == JOBSPEC_GCS_FT_DEFAULT)
		c.gcs = c.s->kind == JOBSPEC_RAYSERVICE || c.s->kind == JOBSPEC_RAYCLUSTER ?
		    JOBSPEC_GCS_FT_ROCKSDB : JOBSPEC_GCS_FT_OFF;
	out = json_pack("{s:s, s:s, s:o, s:o}", "apiVersion", "ray.io/v1",
	    "kind", jobspec_kind_name(c.s->kind), "metadata", metadata(&c), "spec", kind_spec(&c));
	/* issue 25: token auth on the attempt's Secret (named as its signal objects) and the
	 * dashboard ingress, in whichever cluster spec the kind carries */
	if (!kuberay_auth_cluster(in, c.signal, cluster_of(c.s->kind, json_object_get(out,
	    "spec")), e)) {
		json_decref(out);
		return NULL;
	}
	return out;
}
