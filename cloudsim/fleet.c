/* cloudsim fleet: reads the fleet file into clusters, pools and nodes (labelled and
 * tainted the way each platform does it) and the identities of the emulated clouds. */
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cloudsim/cs.h"
#include "core/crypto.h"
#include "core/hash.h"

const char *
cs_provider_name(enum cs_provider p)
{
	return p == CS_GKE ? "gke" : p == CS_AKS ? "aks" : "hyperpod";
}

const char *
cs_rack_label(enum cs_provider p)
{
	return p == CS_GKE ? "cloud.google.com/gce-topology-subblock" :
	    p == CS_AKS ? "fleet.io/rack" : "topology.k8s.aws/network-node-layer-3";
}

/* The scale unit above the rack: GKE's gce-topology-block, the AWS network's layer 2
 * (providers/gke.c and hyperpod.c cite the pages); AKS documents none: fleet.io/block. */
const char *
cs_block_label(enum cs_provider p)
{
	return p == CS_GKE ? "cloud.google.com/gce-topology-block" :
	    p == CS_AKS ? "fleet.io/block" : "topology.k8s.aws/network-node-layer-2";
}

struct cs_cluster *
cs_cluster_find(struct cs *cs, const char *name)
{
	size_t i;

	for (i = 0; name != NULL && i < cs->nclusters; i++)
		if (strcmp(cs->clusters[i].name, name) == 0)
			return &cs->clusters[i];
	return NULL;
}

struct cs_gsa *
cs_gsa_find(struct cs *cs, const char *email)
{
	size_t i;

	for (i = 0; email != NULL && i < cs->gsas.n; i++) {
		struct cs_gsa *g = cs->gsas.v[i];

		if (strcmp(g->email, email) == 0 || strcmp(g->unique_id, email) == 0)
			return g;
	}
	return NULL;
}

struct cs_aws_role *
cs_role_find(struct cs *cs, const char *account, const char *name)
{
	size_t i;

	for (i = 0; name != NULL && i < cs->roles.n; i++) {
		struct cs_aws_role *r = cs->roles.v[i];

		if ((account == NULL || strcmp(r->account, account) == 0) &&
		    strcmp(r->name, name) == 0)
			return r;
	}
	return NULL;
}

static const char *
jstr(json_t *o, const char *k, const char *def)
{
	json_t *v = json_object_get(o, k);

	return json_is_string(v) ? json_string_value(v) : def;
}

static double
jnum(json_t *o, const char *k, double def)
{
	json_t *v = json_object_get(o, k);

	return json_is_number(v) ? json_number_value(v) : def;
}

static void
node_labels(struct cs_node *n, const struct cs_pool *p, int idx)
{
	const struct cs_cluster *cl = p->cl;
	const struct cs_machine *mt = p->mt;
	json_t *l = json_object();

	json_object_set_new(l, "kubernetes.io/hostname", json_string(n->name));
	json_object_set_new(l, "kubernetes.io/os", json_string("linux"));
	json_object_set_new(l, "kubernetes.io/arch", json_string("amd64"));
	json_object_set_new(l, "node.kubernetes.io/instance-type", json_string(mt->name));
	json_object_set_new(l, "topology.kubernetes.io/region", json_string(cl->region));
	json_object_set_new(l, "topology.kubernetes.io/zone", json_string(n->zone));
	json_object_set_new(l, "fleet.io/pool", json_string(p->name));
	json_object_set_new(l, "fleet.io/rack", json_string(n->rack));
	json_object_set_new(l, "fleet.io/block", json_string(n->block));
	if (cl->provider == CS_GKE) {
		const char *block = n->block;

		json_object_set_new(l, "cloud.google.com/gke-nodepool", json_string(p->name));
		json_object_set_new(l, "cloud.google.com/gke-os-distribution",
		    json_string("cos"));
		json_object_set_new(l, "cloud.google.com/gce-topology-block", json_string(block));
		json_object_set_new(l, "cloud.google.com/gce-topology-subblock",
		    json_string(n->rack));
		json_object_set_new(l, "cloud.google.com/gce-topology-host",
		    json_sprintf("%08x", hash_str(n->name)));
		if (p->spot)
			json_object_set_new(l, "cloud.google.com/gke-spot", json_string("true"));
		if (mt->accel != NULL && mt->tpu && p->dynamic_slicing) {
			/* no slice until a Slice forms one (tpuslice.c) */
			json_object_set_new(l, "cloud.google.com/gke-tpu-accelerator",
			    json_string(mt->accel));
			cs_tpu_partition_labels(l, p, idx);
		} else if (mt->accel != NULL && mt->tpu) {
			json_object_set_new(l, "cloud.google.com/gke-tpu-accelerator",
			    json_string(mt->accel));
			json_object_set_new(l, "cloud.google.com/gke-tpu-topology",
			    json_string(p->tpu_topology[0] ? p->tpu_topology : "2x2x1"));
		} else if (mt->accel != NULL) {
			json_object_set_new(l, "cloud.google.com/gke-accelerator",
			    json_string(mt->accel));
			json_object_set_new(l, "cloud.google.com/gke-gpu", json_string("true"));
		}
	} else if (cl->provider == CS_AKS) {
		json_object_set_new(l, "kubernetes.azure.com/agentpool", json_string(p->name));
		json_object_set_new(l, "agentpool", json_string(p->name));
		json_object_set_new(l, "kubernetes.azure.com/mode",
		    json_string(mt->accel ? "user" : "system"));
		json_object_set_new(l, "kubernetes.azure.com/cluster",
		    json_sprintf("MC_%s_%s_%s", cl->resource_group, cl->name, cl->region));
		if (p->spot)
			json_object_set_new(l, "kubernetes.azure.com/scalesetpriority",
			    json_string("spot"));
		if (mt->accel != NULL)
			json_object_set_new(l, "kubernetes.azure.com/accelerator",
			    json_string("nvidia"));
	} else {
		json_object_set_new(l, "sagemaker.amazonaws.com/instance-group-name",
		    json_string(p->name));
		json_object_set_new(l, "sagemaker.amazonaws.com/compute-type",
		    json_string("hyperpod"));
		json_object_set_new(l, "sagemaker.amazonaws.com/node-health-status",
		    json_string("Schedulable"));
		json_object_set_new(l, "topology.k8s.aws/network-node-layer-1",
		    json_sprintf("nn-%08x", hash_str(cl->name)));
		json_object_set_new(l, "topology.k8s.aws/network-node-layer-2",
		    json_string(n->block));
		json_object_set_new(l, "topology.k8s.aws/network-node-layer-3",
		    json_string(n->rack));
		if (p->spot)
			json_object_set_new(l, "eks.amazonaws.com/capacityType",
			    json_string("SPOT"));
	}
	if (p->extra_labels != NULL)
		json_object_update(l, p->extra_labels);
	(void)idx;
	n->labels = l;
}

static void
node_taints(struct cs_node *n, const struct cs_pool *p)
{
	json_t *t = json_array();
	const struct cs_machine *mt = p->mt;

	if (p->cl->provider == CS_GKE && mt->accel != NULL)
		json_array_append_new(t, json_pack("{s:s, s:s, s:s}", "key",
		    mt->tpu ? "google.com/tpu" : "nvidia.com/gpu", "value", "present", "effect",
		    "NoSchedule"));
	if (p->cl->provider == CS_AKS && p->spot)
		json_array_append_new(t, json_pack("{s:s, s:s, s:s}", "key",
		    "kubernetes.azure.com/scalesetpriority", "value", "spot", "effect",
		    "NoSchedule"));
	if (p->cl->provider == CS_AKS && mt->accel != NULL)
		json_array_append_new(t, json_pack("{s:s, s:s, s:s}", "key", "sku", "value", "gpu",
		    "effect", "NoSchedule"));
	if (p->extra_taints != NULL)
		json_array_extend(t, p->extra_taints);
	n->taints = t;
}

/* Builds (without adding) the node that pool p would get at index idx. */
struct cs_node *
cs_node_build(struct cs_pool *p, int idx, double now)
{
	struct cs_cluster *cl = p->cl;
	struct cs_node *n = calloc(1, sizeof(*n));
	unsigned h = hash_str(p->rack_prefix);

	if (n == NULL)
		abort();
	n->pool = p;
	n->created = now;
	cs_uuid(n->uid);
	cs_copy(n->zone, sizeof(n->zone), cl->zone);
	snprintf(n->rack, sizeof(n->rack), "%s-%02d", p->rack_prefix,
	    p->nodes_per_rack > 0 ? idx / p->nodes_per_rack : 0);
	/* the scale unit: racks_per_block racks each, else the pool is one (named as each
	 * platform's ids look: a GKE block id, an AWS network node) */
	if (p->racks_per_block > 0)
		snprintf(n->block, sizeof(n->block), "%s-b%02d", p->rack_prefix,
		    idx / (p->nodes_per_rack * p->racks_per_block));
	else if (cl->provider == CS_HYPERPOD)
		snprintf(n->block, sizeof(n->block), "nn-%08x", hash_str(p->rack_prefix));
	else
		snprintf(n->block, sizeof(n->block), "%08x", hash_str(p->rack_prefix));
	if (cl->provider == CS_GKE)
		snprintf(n->name, sizeof(n->name), "gke-%.24s-%.16s-%08x-%04x", cl->name, p->name,
		    h, (unsigned)(hash_str(n->rack) + (unsigned)idx) & 0xffff);
	else if (cl->provider == CS_AKS)
		snprintf(n->name, sizeof(n->name), "aks-%.12s-%08u-vmss%06x", p->name,
		    h % 100000000u, (unsigned)idx);
	else
		snprintf(n->name, sizeof(n->name), "hyperpod-i-0%08x%08x", h,
		    hash_str(cl->name) + (unsigned)idx);
	n->cpu_m = (long long)p->mt->vcpus * 1000 - 500;
	n->mem_b = (long long)p->mt->mem_gib * 1024 * 1024 * 1024 / 100 * 95;
	if (p->mt->accel != NULL && p->mt->tpu)
		n->tpu = p->mt->accel_count;
	else if (p->mt->accel != NULL)
		n->gpu = p->mt->accel_count;
	node_labels(n, p, idx);
	node_taints(n, p);
	return n;
}

/* Adds one node to pool p (rack by index); returns it. */
struct cs_node *
cs_node_add(struct cs_pool *p, double now)
{
	struct cs_node *n = cs_node_build(p, p->next_index++, now);

	cs_vec_push(&p->cl->nodes, n);
	return n;
}

int
cs_pool_nodes(const struct cs_cluster *cl, const struct cs_pool *p)
{
	int n = 0;

	for (size_t i = 0; i < cl->nodes.n; i++)
		if (((const struct cs_node *)cl->nodes.v[i])->pool == p)
			n++;
	return n;
}

void
cs_node_free(struct cs_node *n)
{
	if (n == NULL)
		return;
	json_decref(n->labels);
	json_decref(n->taints);
	json_decref(n->conditions);
	free(n);
}

void
cs_pod_free(struct cs_pod *p)
{
	if (p == NULL)
		return;
	json_decref(p->obj);
	json_decref(p->status);
	free(p);
}

void
cs_object_free(struct cs_object *o)
{
	if (o == NULL)
		return;
	json_decref(o->applied);
	json_decref(o->live);
	free(o);
}

static struct cs_pod *
busy_pod(struct cs *cs, struct cs_cluster *cl, struct cs_node *n, long long accel)
{
	struct cs_pod *p = calloc(1, sizeof(*p));
	const char *res = n->tpu ? "google.com/tpu" : "nvidia.com/gpu";

	if (p == NULL)
		abort();
	snprintf(p->name, sizeof(p->name), "training-%.100s", n->name);
	cs_copy(p->ns, sizeof(p->ns), "other-team");
	cs_copy(p->node, sizeof(p->node), n->name);
	cs_copy(p->group, sizeof(p->group), "static");
	cs_uuid(p->uid);
	p->cpu_m = 4000;
	p->mem_b = 16LL << 30;
	if (n->tpu)
		p->tpu = accel;
	else
		p->gpu = accel;
	p->created = p->scheduled_at = p->running_at = cs_now(cs);
	p->obj = json_pack("{s:{s:{s:s}}, s:{s:[{s:s, s:s, s:{s:{s:s, s:s, s:I}, s:{s:I}}}], "
	    "s:s, s:[{s:s, s:s, s:s}]}}",
	    "metadata", "labels", "app", "other-team-training",
	    "spec", "containers", "name", "trainer", "image", "nvcr.io/nvidia/pytorch:24.05-py3",
	    "resources", "requests", "cpu", "4", "memory", "16Gi", res, (json_int_t)accel,
	    "limits", res, (json_int_t)accel,
	    "nodeName", n->name, "tolerations", "operator", "Exists", "key", res, "effect",
	    "NoSchedule");
	snprintf(p->rv, sizeof(p->rv), "%lld", ++cl->rv);
	cs_vec_push(&cl->pods, p);
	return p;
}

static bool
load_pool(struct cs *cs, struct cs_cluster *cl, struct cs_pool *p, json_t *j, struct err *e)
{
	json_t *busy = json_object_get(j, "busy");
	const char *mt = jstr(j, "machine_type", NULL);
	size_t i;
	int n;

	p->cl = cl;
	cs_copy(p->name, sizeof(p->name), jstr(j, "name", ""));
	p->mt = cs_machine_find(mt);
	if (p->name[0] == '\0' || p->mt == NULL)
		return err_set(e, 400, "cloudsim.fleet", "cluster %s: pool needs a name and a "
		    "known machine_type (got %s)", cl->name, mt ? mt : "none");
	if (p->mt->provider != cl->provider)
		return err_set(e, 400, "cloudsim.fleet", "cluster %s: machine type %s is not "
		    "sold by %s", cl->name, mt, cs_provider_name(cl->provider));
	cs_copy(p->tpu_topology, sizeof(p->tpu_topology), jstr(j, "tpu_topology", ""));
	/* "dynamic_slicing": true — a TPU7x pool of 4x4x4 sub-blocks (16 nodes each) in an All
	 * Capacity mode reservation, provisioned without a slice (tpuslice.c) */
	p->dynamic_slicing = json_is_true(json_object_get(j, "dynamic_slicing"));
	if (p->dynamic_slicing && (!p->mt->tpu || cl->provider != CS_GKE ||
	    p->mt->accel == NULL || strcmp(p->mt->accel, "tpu7x") != 0))
		return err_set(e, 400, "cloudsim.fleet", "cluster %s: pool %s: dynamic slicing "
		    "needs a GKE TPU7x machine type", cl->name, p->name);
	n = (int)jnum(j, "nodes", 0);
	if (p->mt->tpu && p->tpu_topology[0] != '\0' && json_object_get(j, "nodes") == NULL) {
		int a = 1, b = 1, c = 1;

		sscanf(p->tpu_topology, "%dx%dx%d", &a, &b, &c);
		n = a * b * c / (p->mt->accel_count > 0 ? p->mt->accel_count : 1);
		if (n < 1)
			n = 1;
	}
	p->initial = p->target = n < 0 ? 0 : n > 1000 ? 1000 : n;
	p->min = (int)jnum(j, "min", 0);
	p->max = (int)jnum(j, "max", p->initial);
	if (p->max < p->initial)
		p->max = p->initial;
	p->autoscale = json_is_true(json_object_get(j, "autoscaling")) ||
	    (json_object_get(j, "autoscaling") == NULL && p->max > p->initial);
	p->spot = json_is_true(json_object_get(j, "spot"));
	/* "capacity_type": "reservation" | "flex_start": how each provider's API shows the
	 * pool (cloudsim/gke.c, azure.c, aws_ops.c) */
	if (json_string_value(json_object_get(j, "capacity_type")) != NULL &&
	    (strcmp(json_string_value(json_object_get(j, "capacity_type")), "reservation") == 0 ||
	    strcmp(json_string_value(json_object_get(j, "capacity_type")), "flex_start") == 0))
		snprintf(p->capacity, sizeof(p->capacity), "%s",
		    json_string_value(json_object_get(j, "capacity_type")));
	p->stockout = json_is_true(json_object_get(j, "stockout"));
	p->price = jnum(j, "price_per_hour", 0);
	p->nodes_per_rack = (int)jnum(j, "nodes_per_rack", 4);
	if (p->nodes_per_rack < 1)
		p->nodes_per_rack = 1;
	p->racks_per_block = (int)jnum(j, "racks_per_block", 0);
	if (p->racks_per_block < 0)
		p->racks_per_block = 0;
	snprintf(p->rack_prefix, sizeof(p->rack_prefix), "%.20s-%.20s", cl->name, p->name);
	if (json_is_object(json_object_get(j, "labels")))
		p->extra_labels = json_incref(json_object_get(j, "labels"));
	if (json_is_array(json_object_get(j, "taints")))
		p->extra_taints = json_incref(json_object_get(j, "taints"));
	for (i = 0; i < (size_t)p->initial; i++) {
		struct cs_node *nd = cs_node_add(p, cs_now(cs));
		json_t *b = json_array_get(busy, i);

		if (json_is_integer(b) && json_integer_value(b) > 0)
			busy_pod(cs, cl, nd, json_integer_value(b) > nd->gpu + nd->tpu ?
			    nd->gpu + nd->tpu : json_integer_value(b));
	}
	return true;
}

static void
ns_add(struct cs_cluster *cl, const char *name, double now)
{
	char ts[32], uid[40];

	cs_rfc3339(now, ts);
	cs_uuid(uid);
	json_array_append_new(cl->namespaces, json_pack("{s:s, s:s, s:{s:s, s:s, s:s, s:s, "
	    "s:{s:s}}, s:{s:[s]}, s:{s:s}}", "apiVersion", "v1", "kind", "Namespace",
	    "metadata", "name", name, "uid", uid, "resourceVersion", "1", "creationTimestamp",
	    ts, "labels", "kubernetes.io/metadata.name", name, "spec", "finalizers",
	    "kubernetes", "status", "phase", "Active"));
}

void
cs_ns_create(struct cs *cs, struct cs_cluster *cl, const char *ns)
{
	if (!cs_ns_exists(cl, ns))
		ns_add(cl, ns, cs_now(cs));
}

static bool
load_cluster(struct cs *cs, struct cs_cluster *cl, json_t *j, struct err *e)
{
	const char *prov = jstr(j, "provider", "");
	json_t *pools = json_object_get(j, "pools");
	size_t i;

	cs_copy(cl->name, sizeof(cl->name), jstr(j, "name", ""));
	if (!cs_dns1123_label(cl->name, 40))
		return err_set(e, 400, "cloudsim.fleet", "cluster name %s is not a dns label "
		    "of at most 40 characters", cl->name);
	if (strcmp(prov, "gke") == 0)
		cl->provider = CS_GKE;
	else if (strcmp(prov, "aks") == 0)
		cl->provider = CS_AKS;
	else if (strcmp(prov, "hyperpod") == 0)
		cl->provider = CS_HYPERPOD;
	else
		return err_set(e, 400, "cloudsim.fleet", "cluster %s: unknown provider %s",
		    cl->name, prov);
	cs_copy(cl->env, sizeof(cl->env), jstr(j, "environment", "dev"));
	cs_copy(cl->region, sizeof(cl->region), jstr(j, "region", ""));
	if (cl->region[0] == '\0')
		return err_set(e, 400, "cloudsim.fleet", "cluster %s: region missing", cl->name);
	if (jstr(j, "zone", NULL) != NULL)
		cs_copy(cl->zone, sizeof(cl->zone), jstr(j, "zone", NULL));
	else
		snprintf(cl->zone, sizeof(cl->zone), cl->provider == CS_GKE ? "%s-a" :
		    cl->provider == CS_AKS ? "%s-1" : "%sa", cl->region);
	cs_copy(cl->account, sizeof(cl->account), jstr(j, cl->provider == CS_GKE ? "project" :
	    cl->provider == CS_AKS ? "subscription" : "account", ""));
	if (cl->account[0] == '\0')
		return err_set(e, 400, "cloudsim.fleet", "cluster %s: project, subscription or "
		    "account missing", cl->name);
	cs_copy(cl->resource_group, sizeof(cl->resource_group), jstr(j, "resource_group",
	    "rg-fleet"));
	cs_copy(cl->batch_scheduler, sizeof(cl->batch_scheduler), jstr(j, "batch_scheduler",
	    "none"));
	cs_copy(cl->k8s_version, sizeof(cl->k8s_version), jstr(j, "kubernetes_version", "1.30.4"));
	if (jstr(j, "token", NULL) != NULL)
		cs_copy(cl->token, sizeof(cl->token), jstr(j, "token", NULL));
	else
		cs_hex_token(cl->token, 24);
	cl->created = cs_now(cs);
	cl->namespaces = json_array();
	cl->events = json_array();
	cl->rv = 100;
	if (json_is_object(json_object_get(j, "iam")))
		cl->iam = json_deep_copy(json_object_get(j, "iam"));
	ns_add(cl, "default", cl->created);
	ns_add(cl, "kube-system", cl->created);
	ns_add(cl, "kube-public", cl->created);
	ns_add(cl, "kube-node-lease", cl->created);
	ns_add(cl, "other-team", cl->created);
	{
		/* Kueue (issue 13): "kueue": {"elastic_jobs": bool, "cluster_queues": [names]} */
		json_t *kq = json_object_get(j, "kueue"), *cqs = json_object_get(kq, "cluster_queues"),
		    *dflt = json_pack("[s]", "fleetd");

		cs_kueue_install(cs, cl, json_is_true(json_object_get(kq, "elastic_jobs")),
		    json_is_array(cqs) ? cqs : dflt);
		json_decref(dflt);
	}
	cl->npools = json_array_size(pools);
	cl->pools = calloc(cl->npools ? cl->npools : 1, sizeof(*cl->pools));
	if (cl->pools == NULL)
		abort();
	for (i = 0; i < cl->npools; i++)
		if (!load_pool(cs, cl, &cl->pools[i], json_array_get(pools, i), e))
			return false;
	return true;
}

bool
cs_fleet_load(struct cs *cs, const char *path, struct err *e)
{
	json_error_t je;
	json_t *root, *clusters, *sim;
	char *dup;
	size_t i;

	root = json_load_file(path, JSON_REJECT_DUPLICATES, &je);
	if (root == NULL || !json_is_object(root)) {
		json_decref(root);
		return err_set(e, 400, "cloudsim.fleet", "cannot read fleet file %s: %s line %d",
		    path, je.text, je.line);
	}
	cs->fleet = root;
	dup = strdup(path);
	cs->fleet_dir = strdup(dirname(dup));
	free(dup);
	sim = json_object_get(root, "sim");
	cs->cfg.page_size = (int)jnum(sim, "page_size", 50);
	if (cs->cfg.page_size < 1)
		cs->cfg.page_size = 1;
	cs->cfg.pod_start_s = jnum(sim, "pod_start_s", 5);
	cs->cfg.job_run_s = jnum(sim, "job_run_s", 120);
	cs->cfg.autoscale_delay_s = jnum(sim, "autoscale_delay_s", 60);
	cs->cfg.node_boot_s = jnum(sim, "node_boot_s", 30);
	cs->cfg.token_ttl_s = jnum(sim, "token_ttl_s", 3600);
	cs->cfg.preempt_notice_s = jnum(sim, "preempt_notice_s", 30);
	clusters = json_object_get(root, "clusters");
	if (!json_is_array(clusters) || json_array_size(clusters) == 0)
		return err_set(e, 400, "cloudsim.fleet", "fleet file has no clusters");
	cs->nclusters = json_array_size(clusters);
	cs->clusters = calloc(cs->nclusters, sizeof(*cs->clusters));
	if (cs->clusters == NULL)
		abort();
	for (i = 0; i < cs->nclusters; i++) {
		if (!load_cluster(cs, &cs->clusters[i], json_array_get(clusters, i), e))
			return false;
		if (cs_cluster_find(cs, cs->clusters[i].name) != &cs->clusters[i])
			return err_set(e, 400, "cloudsim.fleet", "cluster %s defined twice",
			    cs->clusters[i].name);
	}
	return cs_ident_load(cs, root, e);
}

static void node_free_v(void *p) { cs_node_free(p); }
static void pod_free_v(void *p) { cs_pod_free(p); }
static void obj_free_v(void *p) { cs_object_free(p); }

void
cs_fleet_free(struct cs *cs)
{
	size_t i, j;

	for (i = 0; cs->clusters != NULL && i < cs->nclusters; i++) {
		struct cs_cluster *cl = &cs->clusters[i];

		cs_vec_free(&cl->nodes, node_free_v);
		cs_vec_free(&cl->pods, pod_free_v);
		cs_vec_free(&cl->objects, obj_free_v);
		for (j = 0; cl->pools != NULL && j < cl->npools; j++) {
			json_decref(cl->pools[j].extra_labels);
			json_decref(cl->pools[j].extra_taints);
		}
		free(cl->pools);
		json_decref(cl->namespaces);
		json_decref(cl->events);
		json_decref(cl->plain);
		json_decref(cl->iam);
		cs_watch_free(cl);
	}
	free(cs->clusters);
	cs->clusters = NULL;
	cs_ident_free(cs);
	json_decref(cs->fleet);
	cs->fleet = NULL;
	free(cs->fleet_dir);
	cs->fleet_dir = NULL;
}
