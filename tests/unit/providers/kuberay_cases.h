/* kuberay_cases: the test cases both KubeRay renderer tests build — a job of one of 4 kinds for
 * one of 3 providers, on-demand or spot, none/rack/slice-or-host topology, fixed or elastic
 * (test_kuberay renders the whole corpus, test_kuberay_fields single cases).  Static inline
 * so each test file takes what it uses. */
#ifndef FLEET_TESTS_KUBERAY_CASES_H
#define FLEET_TESTS_KUBERAY_CASES_H

#include "providers/kuberay.h"

static const char *const kinds[] __attribute__((unused)) = { "RayJob", "RayCluster", "RayService", "RayCronJob" };
static const char *const provs[] __attribute__((unused)) = { "gke", "aks", "hyperpod" };
static const char *const topos[] __attribute__((unused)) = { "none", "rack", "slice" };	/* slice: host off GKE */

struct corpus_case {
	char	 name[96];
	int	 kind, prov, spot, topo, elastic, idx;
	char	 job_id[40];
	struct job_spec spec;
	struct kuberay_input in;
};

/* ------------------------------------------------------------------ spec builder */

static inline json_t *
case_spec_json(const struct corpus_case *c)
{
	bool slice = c->topo == 2 && c->prov == 0;
	const char *topo = c->topo == 0 ? "none" : c->topo == 1 ? "rack" : slice ? "slice" : "host";
	json_t *j, *acc, *groups;

	bool host = c->topo == 2 && !slice;

	/* host: the gang at max_replicas (4 x 2 GPUs) fits one 8-GPU node */
	acc = json_pack("{s:s, s:s, s:s}", "name", slice ? "tpu" : "gpu",
	    "cpu", slice ? "200" : host ? "22" : "48",
	    "memory", slice ? "400Gi" : host ? "400Gi" : "800Gi");
	json_object_set_new(acc, "accelerator", json_pack("{s:s, s:i}", "flavor", slice ? "tpu-v5p" :
	    c->prov == 1 ? "nvidia-a100-80gb" : "nvidia-h100-80gb", "count", slice ? 4 :
	    host ? 2 : 8));
	if (c->elastic) {
		json_object_set_new(acc, "min_replicas", json_integer(1));
		json_object_set_new(acc, "max_replicas", json_integer(4));
	} else {
		json_object_set_new(acc, "replicas", json_integer(2));
	}
	groups = json_pack("[o]", acc);
	if (c->idx % 2 == 0)
		json_array_append_new(groups, json_pack("{s:s, s:i, s:s, s:s}", "name", "cpu",
		    "replicas", 2, "cpu", "7500m", "memory", "30Gi"));
	j = json_pack("{s:s, s:s, s:s, s:s, s:{s:s, s:s}, s:o, s:{s:b}}",
	    "kind", kinds[c->kind], "queue", c->idx % 3 ? "research" : "prod-inference",
	    "name", c->idx % 4 == 1 ? "0-llama-3-70b-fine-tune-with-a-long-descriptive-name-abcdefghi" :
	    "llm-train", "ray_version", "2.52.0",
	    "head", "cpu", "4", "memory", "16Gi", "worker_groups", groups,
	    "constraints", "spot", c->spot);
	if (slice)
		json_object_set_new(j, "topology", json_pack("{s:s, s:s}", "type", topo,
		    "shape", "2x2x4"));
	else
		json_object_set_new(j, "topology", json_string(topo));
	if (c->idx % 3 == 0)
		json_object_set_new(j, "priority_class", json_string("high"));
	if (c->idx % 4 == 2)
		json_object_set_new(j, "checkpoint", json_pack("{s:s, s:i}", "uri",
		    "s3://fleet-ckpt/llm", "grace_seconds", 120));
	if (c->kind == 0 || c->kind == 3) {
		json_object_set_new(j, "entrypoint", json_string("python -m train --epochs 3"));
		if (c->idx % 2)
			json_object_set_new(j, "runtime_env", json_pack("{s:[s], s:{s:s}}", "pip",
			    "torch==2.5.1", "env_vars", "NCCL_DEBUG", "WARN"));
		if (c->idx % 3 == 1)
			json_object_set_new(j, "active_deadline_seconds", json_integer(86400));
		if (c->idx % 5 == 2)
			json_object_set_new(j, "deletion_policy", json_pack("{s:s, s:s}",
			    "on_success", "DeleteCluster", "on_failure", "DeleteWorkers"));
	}
	if (c->kind == 3) {
		json_object_set_new(j, "schedule", json_string("0 */6 * * *"));
		if (c->idx % 2)
			json_object_set_new(j, "time_zone", json_string("Europe/Paris"));
	}
	if (c->kind == 2)
		json_object_set_new(j, "serve_config", json_pack("{s:[{s:s, s:s, s:s}]}",
		    "applications", "name", "llm", "route_prefix", "/", "import_path", "serve:app"));
	if (c->kind == 1 && c->idx % 3 == 1)
		json_object_set_new(j, "gcs_fault_tolerance", json_pack("{s:s, s:s, s:{s:s, s:s}}",
		    "backend", "redis", "redis_address", "redis.fleet.svc:6379",
		    "redis_password_secret", "name", "redis-pw", "key", "password"));
	else if (c->kind == 1 && c->idx % 3 == 2)
		json_object_set_new(j, "gcs_fault_tolerance", json_false());
	else if (c->kind == 2 && c->idx % 2)
		json_object_set_new(j, "gcs_fault_tolerance", json_pack("{s:s}", "storage_size",
		    "20Gi"));
	return j;
}

static inline void
case_placement(struct corpus_case *c)
{
	struct kuberay_placement *p = &c->in.placement;
	bool slice = c->topo == 2 && c->prov == 0;

	p->provider = (enum kuberay_provider)c->prov;
	p->spot = c->spot;
	switch (c->prov) {
	case 0:
		p->cluster = "gke-us-central1-prod";
		p->pool = slice ? "v5p-pool" : c->spot ? "a3-spot" : "a3-ondemand";
		p->head_pool = "cpu-ondemand";
		p->cpu_pool = "cpu-ondemand";
		p->machine_type = slice ? "ct5p-hightpu-4t" : "a3-highgpu-8g";
		p->tpu_accelerator = slice ? "tpu-v5p-slice" : NULL;
		break;
	case 1:
		p->cluster = "aks-eastus-prod";
		p->pool = c->spot ? "gpuspot" : "gpunp";
		p->head_pool = c->idx % 2 ? "system" : NULL;
		p->machine_type = "Standard_ND96amsr_A100_v4";
		break;
	default:
		p->cluster = "hyperpod-us-east-1";
		p->pool = c->spot ? "p5-spot" : "p5-ondemand";
		p->head_pool = c->idx % 2 ? "head-group" : NULL;
		p->cpu_pool = "cpu-group";
		p->machine_type = "ml.p5.48xlarge";
		break;
	}
	if (c->topo == 1)
		p->rack_id = "rack-07";
	if (c->topo == 2 && !slice && c->idx % 2)
		p->host = "node-gpu-0042";
}

static inline void
case_init(struct corpus_case *c, int kind, int prov, int spot, int topo, int elastic, int idx)
{
	static const enum kuberay_scheduler sched[] = { KUBERAY_SCHED_NONE, KUBERAY_SCHED_VOLCANO,
		KUBERAY_SCHED_YUNIKORN, KUBERAY_SCHED_KAI, KUBERAY_SCHED_KUEUE };
	struct err e = { 0 };
	json_t *j;
	char lower[16];

	memset(c, 0, sizeof(*c));
	c->kind = kind;
	c->prov = prov;
	c->spot = spot;
	c->topo = topo;
	c->elastic = elastic;
	c->idx = idx;
	for (size_t i = 0; i <= strlen(kinds[kind]); i++)
		lower[i] = (char)(kinds[kind][i] >= 'A' && kinds[kind][i] <= 'Z' ?
		    kinds[kind][i] + 32 : kinds[kind][i]);
	snprintf(c->name, sizeof(c->name), "%s-%s-%s-%s-%s", lower, provs[prov],
	    spot ? "spot" : "ondemand", topo == 2 && prov != 0 ? "host" : topos[topo],
	    elastic ? "elastic" : "fixed");
	snprintf(c->job_id, sizeof(c->job_id), "5f0c%04x-1d2e-4f3a-9b7c-%012x", idx, idx * 7919);
	j = case_spec_json(c);
	if (!jobspec_from_json(j, &c->spec, &e))
		fail_msg("%s: spec refused: %s %s at %s", c->name, e.code, e.msg, e.pointer);
	json_decref(j);
	c->in.spec = &c->spec;
	c->in.job_id = c->job_id;
	c->in.attempt = 1 + idx % 3;
	c->in.environment = idx % 2 ? "prod" : "staging";
	c->in.batch.kind = sched[idx % 5];
	c->in.batch.queue = idx % 5 == 2 ? "root.research" : NULL;
	c->in.suspend = idx % 7 == 3;
	c->in.checkpoint_deadline = idx % 11 == 5 ? "2026-09-01T12:00:00Z" : NULL;
	case_placement(c);
}

static inline const char *
str_at(json_t *o, const char *k)
{
	return json_string_value(json_object_get(o, k));
}

/* The RayCluster spec inside manifest m of kind (the index into kinds[]), borrowed. */
static inline json_t *
case_cluster(json_t *m, int kind)
{
	json_t *spec = json_object_get(m, "spec");

	switch (kind) {
	case 0:	return json_object_get(spec, "rayClusterSpec");
	case 1:	return spec;
	case 2:	return json_object_get(spec, "rayClusterConfig");
	default: return json_object_get(json_object_get(spec, "jobTemplate"), "rayClusterSpec");
	}
}

#endif
