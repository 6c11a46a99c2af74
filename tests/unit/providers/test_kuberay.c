/* test_kuberay: renders the golden corpus (4 kinds x 3 providers x on-demand/spot x
 * none/rack/slice-or-host x fixed/elastic), compares it with tests/fixtures/kuberay
 * (FLEETD_UPDATE_GOLDEN=1 rewrites them) and checks every manifest structurally. */
#include <regex.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "providers/kuberay.h"

#define FIXTURES "tests/fixtures/kuberay"

static const char *const kinds[] = { "RayJob", "RayCluster", "RayService", "RayCronJob" };
static const char *const provs[] = { "gke", "aks", "hyperpod" };
static const char *const topos[] = { "none", "rack", "slice" };	/* slice: host off GKE */

struct corpus_case {
	char	 name[96];
	int	 kind, prov, spot, topo, elastic, idx;
	char	 job_id[40];
	struct job_spec spec;
	struct kuberay_input in;
};

/* ------------------------------------------------------------------ spec builder */

static json_t *
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

static void
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

static void
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

/* ------------------------------------------------------------------ structural checks */

static json_t *
cluster_of(json_t *m, int kind)
{
	json_t *spec = json_object_get(m, "spec");

	switch (kind) {
	case 0:	return json_object_get(spec, "rayClusterSpec");
	case 1:	return spec;
	case 2:	return json_object_get(spec, "rayClusterConfig");
	default: return json_object_get(json_object_get(spec, "jobTemplate"), "rayClusterSpec");
	}
}

static const char *
str_at(json_t *o, const char *k)
{
	return json_string_value(json_object_get(o, k));
}

static bool
has_toleration(json_t *pod, const char *key)
{
	json_t *t;
	size_t i;

	json_array_foreach(json_object_get(pod, "tolerations"), i, t) {
		if (strcmp(str_at(t, "key"), key) == 0)
			return true;
	}
	return false;
}

/* shm, requests == limits, fleet labels: common to head and workers. */
static void
check_pod(const struct corpus_case *c, json_t *tmpl, const char *role)
{
	json_t *pod = json_object_get(tmpl, "spec"), *ctr, *vol, *res;
	json_t *labels = json_object_get(json_object_get(tmpl, "metadata"), "labels");

	assert_string_equal(str_at(labels, "fleet.io/job-id"), c->job_id);
	assert_string_equal(str_at(labels, "fleet.io/role"), role);
	ctr = json_array_get(json_object_get(pod, "containers"), 0);
	vol = json_array_get(json_object_get(pod, "volumes"), 0);
	assert_string_equal(str_at(vol, "name"), "dshm");
	assert_string_equal(str_at(json_object_get(vol, "emptyDir"), "medium"), "Memory");
	assert_non_null(str_at(json_object_get(vol, "emptyDir"), "sizeLimit"));
	assert_string_equal(str_at(json_array_get(json_object_get(ctr, "volumeMounts"), 0),
	    "mountPath"), "/dev/shm");
	res = json_object_get(ctr, "resources");
	assert_true(json_equal(json_object_get(res, "requests"), json_object_get(res, "limits")));
	assert_non_null(json_object_get(json_object_get(res, "limits"), "memory"));
	if (c->spec.checkpoint_uri != NULL)
		assert_int_equal(json_integer_value(json_object_get(pod,
		    "terminationGracePeriodSeconds")), 120);
	/* issue 13: the checkpoint signal ConfigMap is mounted in every Ray container, and the
	 * pod runs as the account its Role lets patch the ack */
	{
		char sig[64];
		json_t *v, *mnt;
		size_t i;
		bool vol = false, mounted = false;

		assert_true(kuberay_signal_name(c->job_id, c->in.attempt, sig, sizeof(sig)));
		assert_string_equal(str_at(pod, "serviceAccountName"), sig);
		json_array_foreach(json_object_get(pod, "volumes"), i, v)
			vol |= strcmp(str_at(v, "name"), "fleet-signal") == 0 &&
			    strcmp(str_at(json_object_get(v, "configMap"), "name"), sig) == 0;
		json_array_foreach(json_object_get(ctr, "volumeMounts"), i, mnt)
			mounted |= strcmp(str_at(mnt, "mountPath"), "/etc/fleet/signal") == 0 &&
			    json_is_true(json_object_get(mnt, "readOnly"));
		assert_true(vol);
		assert_true(mounted);
	}
}

static void
check_head(const struct corpus_case *c, json_t *head)
{
	json_t *pod = json_object_get(head, "spec");
	json_t *sel = json_object_get(pod, "nodeSelector");
	json_t *ex = json_object_get(json_array_get(json_object_get(json_object_get(json_object_get(
	    json_object_get(pod, "affinity"), "nodeAffinity"),
	    "requiredDuringSchedulingIgnoredDuringExecution"), "nodeSelectorTerms"), 0),
	    "matchExpressions");
	const char *key = c->prov == 0 ? "cloud.google.com/gke-spot" : c->prov == 1 ?
	    "kubernetes.azure.com/scalesetpriority" : "eks.amazonaws.com/capacityType";
	bool excluded = false;
	json_t *x;
	size_t i;

	check_pod(c, head, "head");
	/* never spot: no spot toleration, no spot selector, spot excluded by affinity */
	assert_false(has_toleration(pod, "cloud.google.com/gke-spot"));
	assert_false(has_toleration(pod, "kubernetes.azure.com/scalesetpriority"));
	assert_null(json_object_get(sel, "cloud.google.com/gke-spot"));
	assert_null(json_object_get(sel, "kubernetes.azure.com/scalesetpriority"));
	if (c->in.placement.head_pool == NULL && sel != NULL)
		fail_msg("%s: head selects a pool it was not given", c->name);
	json_array_foreach(ex, i, x) {
		if (strcmp(str_at(x, "key"), key) == 0)
			excluded = strcmp(str_at(x, "operator"), "DoesNotExist") == 0 ||
			    strcmp(str_at(x, "operator"), "NotIn") == 0;
	}
	if (!excluded)
		fail_msg("%s: head does not exclude spot nodes", c->name);
	assert_null(json_object_get(json_object_get(json_object_get(pod, "containers"), 0),
	    "nonexistent"));
}

static void
check_worker_vocab(const struct corpus_case *c, json_t *wg, const char *res)
{
	json_t *pod = json_object_get(json_object_get(wg, "template"), "spec");
	json_t *sel = json_object_get(pod, "nodeSelector");
	bool tpu = res != NULL && strcmp(res, "google.com/tpu") == 0;
	bool main_pool = res != NULL || c->in.placement.cpu_pool == NULL;
	const char *pool = str_at(sel, c->prov == 0 ? "cloud.google.com/gke-nodepool" :
	    c->prov == 1 ? "kubernetes.azure.com/agentpool" :
	    "sagemaker.amazonaws.com/instance-group-name");

	if (tpu && json_integer_value(json_object_get(wg, "maxReplicas")) > 1)
		assert_null(pool);	/* multi-slice: one GKE node pool per slice, none pinned */
	else
		assert_string_equal(pool, main_pool ? c->in.placement.pool :
		    c->in.placement.cpu_pool);
	/* issue 13: the image matches the accelerator (CUDA build for NVIDIA groups) */
	{
		const char *img = str_at(json_array_get(json_object_get(pod, "containers"), 0),
		    "image");
		size_t n = strlen(img);

		if (res != NULL && strcmp(res, "nvidia.com/gpu") == 0)
			assert_string_equal(img + (n > 4 ? n - 4 : 0), "-gpu");
		else
			assert_null(strstr(img, "-gpu"));
	}
	/* issue 13: topology binds the accelerator groups only */
	if (res == NULL) {
		assert_null(json_object_get(sel, "kubernetes.io/hostname"));
		assert_null(json_object_get(json_object_get(pod, "affinity"), "podAffinity"));
	}
	if (c->topo == 2 && c->prov != 0 && res != NULL)
		assert_true(json_integer_value(json_object_get(wg, "maxReplicas")) * c->spec.groups[0].accel_count <= 8);
	if (!main_pool) {
		/* a cpu group on its own pool: no spot, no accelerator, no topology */
		assert_null(json_object_get(sel, "cloud.google.com/gke-spot"));
		assert_null(json_object_get(pod, "tolerations"));
		assert_null(json_object_get(pod, "affinity"));
		return;
	}

	if (c->prov == 0) {
		assert_true(pool != NULL || tpu);
		if (c->spot) {
			assert_string_equal(str_at(sel, "cloud.google.com/gke-spot"), "true");
			assert_true(has_toleration(pod, "cloud.google.com/gke-spot"));
		}
		if (tpu) {
			assert_string_equal(str_at(sel, "cloud.google.com/gke-tpu-accelerator"),
			    "tpu-v5p-slice");
			assert_string_equal(str_at(sel, "cloud.google.com/gke-tpu-topology"), "2x2x4");
			assert_int_equal(json_integer_value(json_object_get(wg, "numOfHosts")), 4);
		} else if (res != NULL) {
			assert_string_equal(str_at(sel, "cloud.google.com/gke-accelerator"),
			    "nvidia-h100-80gb");
		}
	} else if (c->prov == 1) {
		assert_non_null(str_at(sel, "kubernetes.azure.com/agentpool"));
		if (c->spot) {
			assert_string_equal(str_at(sel, "kubernetes.azure.com/scalesetpriority"), "spot");
			assert_true(has_toleration(pod, "kubernetes.azure.com/scalesetpriority"));
		}
	} else {
		assert_non_null(str_at(sel, "sagemaker.amazonaws.com/instance-group-name"));
		if (res != NULL)
			assert_string_equal(str_at(sel, "node.kubernetes.io/instance-type"),
			    "ml.p5.48xlarge");
	}
	if (res != NULL)
		assert_true(has_toleration(pod, res));
	if (res != NULL && c->prov == 1)
		assert_true(has_toleration(pod, "sku"));
	if (c->topo == 1 && res != NULL) {
		json_t *x = json_array_get(json_object_get(json_array_get(json_object_get(
		    json_object_get(json_object_get(json_object_get(pod, "affinity"), "nodeAffinity"),
		    "requiredDuringSchedulingIgnoredDuringExecution"), "nodeSelectorTerms"), 0),
		    "matchExpressions"), 0);

		assert_string_equal(str_at(x, "key"), kuberay_rack_label(c->in.placement.provider));
		assert_string_equal(json_string_value(json_array_get(json_object_get(x, "values"), 0)),
		    "rack-07");
	}
	if (c->topo == 2 && c->prov != 0 && c->in.placement.host != NULL && res != NULL)
		assert_string_equal(str_at(sel, "kubernetes.io/hostname"), c->in.placement.host);
	if (c->topo == 2 && c->prov != 0 && c->in.placement.host == NULL && res != NULL) {
		/* co-located with the other gang workers, never with the cpu-pool group */
		json_t *term = json_array_get(json_object_get(json_object_get(json_object_get(pod,
		    "affinity"), "podAffinity"), "requiredDuringSchedulingIgnoredDuringExecution"), 0);
		json_t *vals = json_object_get(json_array_get(json_object_get(json_object_get(term,
		    "labelSelector"), "matchExpressions"), 0), "values");
		json_t *v;
		size_t i;

		assert_string_equal(str_at(term, "topologyKey"), "kubernetes.io/hostname");
		assert_true(json_array_size(vals) >= 1);
		json_array_foreach(vals, i, v) {
			for (size_t k = 0; k < c->spec.ngroups; k++) {
				if (strcmp(c->spec.groups[k].name, json_string_value(v)) == 0 &&
				    c->in.placement.cpu_pool != NULL)
					assert_non_null(c->spec.groups[k].accel_flavor);
			}
		}
	}
}

static void
check_workers(const struct corpus_case *c, json_t *cluster)
{
	json_t *wg;
	size_t i;

	json_array_foreach(json_object_get(cluster, "workerGroupSpecs"), i, wg) {
		const struct jobspec_group *g = &c->spec.groups[i];
		const char *res = kuberay_accel_resource(g->accel_flavor);
		json_t *ctr = json_array_get(json_object_get(json_object_get(json_object_get(wg,
		    "template"), "spec"), "containers"), 0);
		json_t *lim = json_object_get(json_object_get(ctr, "resources"), "limits");

		check_pod(c, json_object_get(wg, "template"), "worker");
		assert_int_equal(json_integer_value(json_object_get(wg, "minReplicas")),
		    g->min_replicas);
		assert_int_equal(json_integer_value(json_object_get(wg, "maxReplicas")),
		    g->max_replicas);
		if (res != NULL) {
			char want[16];

			snprintf(want, sizeof(want), "%d", g->accel_count);
			assert_string_equal(str_at(lim, res), want);
		}
		check_worker_vocab(c, wg, res);
	}
	assert_int_equal(i, c->spec.ngroups);
	assert_int_equal(json_is_true(json_object_get(cluster, "enableInTreeAutoscaling")),
	    c->elastic);
}

static void
check_manifest(const struct corpus_case *c, json_t *m)
{
	json_t *md = json_object_get(m, "metadata"), *labels = json_object_get(md, "labels");
	json_t *cluster = cluster_of(m, c->kind), *spec = json_object_get(m, "spec");
	const char *name = str_at(md, "name");
	char attempt[8];
	regex_t re;

	assert_string_equal(str_at(m, "apiVersion"), "ray.io/v1");
	assert_string_equal(str_at(m, "kind"), kinds[c->kind]);
	/* issue 13: never the pair Kueue's webhook refuses (queue-name + in-tree autoscaling) */
	if (json_object_get(labels, "kueue.x-k8s.io/queue-name") != NULL)
		assert_false(json_is_true(json_object_get(cluster, "enableInTreeAutoscaling")));
	if (c->in.batch.kind == KUBERAY_SCHED_KUEUE && c->kind != 2)
		assert_true((json_object_get(labels, "kueue.x-k8s.io/queue-name") != NULL) ==
		    !c->elastic);
	assert_int_equal(regcomp(&re, "^[a-z]([-a-z0-9]*[a-z0-9])?$", REG_EXTENDED | REG_NOSUB), 0);
	if (regexec(&re, name, 0, NULL, 0) != 0 || (int)strlen(name) > kuberay_name_max(
	    (enum jobspec_kind)c->kind))
		fail_msg("%s: bad name %s", c->name, name);
	assert_int_equal(regexec(&re, str_at(md, "namespace"), 0, NULL, 0), 0);
	regfree(&re);
	snprintf(attempt, sizeof(attempt), "%d", c->in.attempt);
	assert_string_equal(str_at(labels, "fleet.io/job-id"), c->job_id);
	assert_string_equal(str_at(labels, "fleet.io/queue"), c->spec.queue);
	assert_string_equal(str_at(labels, "fleet.io/environment"), c->in.environment);
	assert_string_equal(str_at(labels, "fleet.io/attempt"), attempt);
	assert_string_equal(str_at(json_object_get(md, "annotations"), "fleet.io/job-id"),
	    c->job_id);
	assert_non_null(cluster);
	check_head(c, json_object_get(json_object_get(cluster, "headGroupSpec"), "template"));
	check_workers(c, cluster);
	if (c->kind == 0 || c->kind == 3) {
		json_t *job = c->kind == 0 ? spec : json_object_get(spec, "jobTemplate");

		assert_true(json_is_true(json_object_get(job, "shutdownAfterJobFinishes")));
		assert_string_equal(str_at(job, "entrypoint"), c->spec.entrypoint);
		assert_non_null(json_object_get(job, "ttlSecondsAfterFinished"));
		assert_non_null(json_object_get(job, "backoffLimit"));
	}
	if (c->kind == 0 && (c->in.suspend || c->in.batch.kind != KUBERAY_SCHED_KUEUE))
		assert_int_equal(json_is_true(json_object_get(spec, "suspend")), c->in.suspend);
	else if (c->kind == 0)
		assert_null(json_object_get(spec, "suspend"));	/* Kueue owns it */
	if (c->kind == 2)
		assert_non_null(str_at(spec, "serveConfigV2"));
	if (c->kind == 3)
		assert_string_equal(str_at(spec, "schedule"), "0 */6 * * *");
	if (c->in.checkpoint_deadline != NULL)
		assert_string_equal(str_at(json_object_get(md, "annotations"),
		    "fleet.io/checkpoint-requested"), c->in.checkpoint_deadline);
}

/* ------------------------------------------------------------------ golden corpus */

static void
compare_golden(const struct corpus_case *c, json_t *m)
{
	char path[256], *text = json_dumps(m, JSON_INDENT(2));
	const char *upd = getenv("FLEETD_UPDATE_GOLDEN");
	json_error_t je;
	json_t *want;

	snprintf(path, sizeof(path), FIXTURES "/%s.json", c->name);
	if (upd != NULL && strcmp(upd, "1") == 0) {
		FILE *f = fopen(path, "w");

		if (f == NULL)
			fail_msg("cannot write %s", path);
		fprintf(f, "%s\n", text);
		fclose(f);
	}
	want = json_load_file(path, 0, &je);
	if (want == NULL)
		fail_msg("%s: missing golden file (%s); run with FLEETD_UPDATE_GOLDEN=1", path, je.text);
	if (!json_equal(want, m))
		fail_msg("%s differs from the rendered manifest:\n%s", path, text);
	json_decref(want);
	free(text);
}

static void
test_corpus(void **state)
{
	int idx = 0, count = 0;

	(void)state;
	for (int kind = 0; kind < 4; kind++)
	for (int prov = 0; prov < 3; prov++)
	for (int spot = 0; spot < 2; spot++)
	for (int topo = 0; topo < 3; topo++)
	for (int el = 0; el < 2; el++) {
		struct corpus_case c;
		struct err e = { 0 };
		json_t *m, *again;
		char *a, *b;

		case_init(&c, kind, prov, spot, topo, el, idx++);
		m = kuberay_render(&c.in, &e);
		if (m == NULL)
			fail_msg("%s: render failed: %s %s", c.name, e.code, e.msg);
		check_manifest(&c, m);
		again = kuberay_render(&c.in, &e);	/* deterministic, byte for byte */
		a = json_dumps(m, JSON_INDENT(2));
		b = json_dumps(again, JSON_INDENT(2));
		assert_string_equal(a, b);
		free(a);
		free(b);
		compare_golden(&c, m);
		json_decref(again);
		json_decref(m);
		jobspec_cleanup(&c.spec);
		count++;
	}
	assert_true(count >= 48);
}

/* ------------------------------------------------------------------ names */

static void
test_names(void **state)
{
	static const char *const specs[] = { "llm-train", "0-Llama 3 70B fine tune, with a long "
		"descriptive name that goes on", "---", "A", "9", "x-", NULL };
	const char *id1 = "5f0c0001-1d2e-4f3a-9b7c-000000001eef";
	const char *id2 = "5f0c0002-1d2e-4f3a-9b7c-000000001eef";
	char a[64], b[64], d[64];
	regex_t re;

	(void)state;
	assert_int_equal(regcomp(&re, "^[a-z]([-a-z0-9]*[a-z0-9])?$", REG_EXTENDED | REG_NOSUB), 0);
	for (int k = 0; k < 4; k++) {
		for (int i = 0; specs[i] != NULL; i++) {
			for (int att = 1; att <= 12345; att *= 37) {
				assert_true(kuberay_object_name((enum jobspec_kind)k, specs[i], id1, att,
				    a, sizeof(a)));
				if (regexec(&re, a, 0, NULL, 0) != 0 ||
				    (int)strlen(a) > kuberay_name_max((enum jobspec_kind)k))
					fail_msg("kind %d: bad name '%s'", k, a);
			}
		}
		/* unique per job and per attempt, stable for the same pair */
		assert_true(kuberay_object_name((enum jobspec_kind)k, "x", id1, 1, a, sizeof(a)));
		assert_true(kuberay_object_name((enum jobspec_kind)k, "x", id1, 2, b, sizeof(b)));
		assert_true(kuberay_object_name((enum jobspec_kind)k, "x", id2, 1, d, sizeof(d)));
		assert_string_not_equal(a, b);
		assert_string_not_equal(a, d);
		assert_true(kuberay_object_name((enum jobspec_kind)k, "x", id1, 2, d, sizeof(d)));
		assert_string_equal(b, d);
	}
	regfree(&re);
	assert_int_equal(kuberay_name_max(JOBSPEC_RAYCLUSTER), 53);
	assert_int_equal(kuberay_name_max(JOBSPEC_RAYJOB), 47);
	assert_int_equal(kuberay_name_max(JOBSPEC_RAYSERVICE), 47);
	assert_int_equal(kuberay_name_max(JOBSPEC_RAYCRONJOB), 36);
	assert_true(kuberay_object_name(JOBSPEC_RAYJOB, "llm-train", id1, 3, a, sizeof(a)));
	assert_true(strncmp(a, "llm-train-", 10) == 0);
	assert_true(strcmp(a + strlen(a) - 3, "-a3") == 0);
	assert_false(kuberay_object_name(JOBSPEC_RAYJOB, "x", id1, 0, a, sizeof(a)));
	assert_false(kuberay_object_name(JOBSPEC_RAYJOB, "x", "", 1, a, sizeof(a)));
	assert_false(kuberay_object_name(JOBSPEC_RAYJOB, "x", id1, 1, a, 20));
}

static void
test_namespace(void **state)
{
	char ns[64];

	(void)state;
	assert_true(kuberay_namespace("prod", "research", ns, sizeof(ns)));
	assert_string_equal(ns, "fleet-prod-research");
	assert_true(kuberay_namespace("staging-eu-west-with-a-long-name", "queue-with-an-even-"
	    "longer-name-than-the-environment", ns, sizeof(ns)));
	assert_true(strlen(ns) <= 63);
	assert_true(strncmp(ns, "fleet--h", 8) == 0 && strstr(ns, "-staging-eu-west") != NULL);
	assert_false(kuberay_namespace("", "q", ns, sizeof(ns)));
}

/* ------------------------------------------------------------------ refusals and details */

static void
render_case(struct corpus_case *c, int kind, int prov, int spot, int topo, int el, int idx)
{
	case_init(c, kind, prov, spot, topo, el, idx);
}

static void
test_refusals(void **state)
{
	struct corpus_case c;
	struct err e = { 0 };
	json_t *m;

	(void)state;
	/* a slice spec placed on AKS cannot be expressed */
	render_case(&c, 0, 0, 0, 2, 0, 0);
	c.in.placement.provider = KUBERAY_AKS;
	assert_null(kuberay_render(&c.in, &e));
	assert_string_equal(e.code, "kuberay.unsupported_topology");
	assert_int_equal(e.status, 422);
	jobspec_cleanup(&c.spec);

	render_case(&c, 1, 1, 0, 1, 0, 1);
	c.in.placement.rack_id = NULL;
	m = kuberay_render(&c.in, &e);
	assert_null(m);
	assert_string_equal(e.code, "kuberay.bad_placement");
	c.in.placement.rack_id = "rack-07";
	c.in.job_id = "not-a-uuid";
	assert_null(kuberay_render(&c.in, &e));
	assert_string_equal(e.code, "kuberay.bad_input");
	c.in.job_id = c.job_id;
	c.in.placement.pool = NULL;
	assert_null(kuberay_render(&c.in, &e));
	assert_string_equal(e.code, "kuberay.bad_placement");
	c.in.placement.pool = "gpunp";
	c.in.ns = "Not_A_Namespace";
	assert_null(kuberay_render(&c.in, &e));
	c.in.ns = "team-ns";
	m = kuberay_render(&c.in, &e);
	assert_non_null(m);
	assert_string_equal(str_at(json_object_get(m, "metadata"), "namespace"), "team-ns");
	json_decref(m);
	jobspec_cleanup(&c.spec);
}

static json_t *
labels_for(enum kuberay_scheduler s, int kind, json_t **manifest)
{
	struct corpus_case c;
	struct err e = { 0 };

	render_case(&c, kind, 0, 0, 0, 0, 3);	/* idx 3: priority_class high */
	c.in.batch.kind = s;
	c.in.batch.queue = s == KUBERAY_SCHED_YUNIKORN ? "root.research" : NULL;
	*manifest = kuberay_render(&c.in, &e);
	assert_non_null(*manifest);
	jobspec_cleanup(&c.spec);
	return json_object_get(json_object_get(*manifest, "metadata"), "labels");
}

static void
test_scheduler_labels(void **state)
{
	json_t *m, *l;

	(void)state;
	l = labels_for(KUBERAY_SCHED_VOLCANO, 0, &m);
	assert_string_equal(str_at(l, "volcano.sh/queue-name"), "prod-inference");
	assert_string_equal(str_at(l, "ray.io/gang-scheduling-enabled"), "true");
	assert_string_equal(str_at(l, "ray.io/priority-class-name"), "high");
	json_decref(m);
	l = labels_for(KUBERAY_SCHED_YUNIKORN, 1, &m);
	assert_string_equal(str_at(l, "yunikorn.apache.org/queue"), "root.research");
	assert_string_equal(str_at(l, "yunikorn.apache.org/app-id"),
	    str_at(json_object_get(m, "metadata"), "name"));
	json_decref(m);
	l = labels_for(KUBERAY_SCHED_KAI, 1, &m);
	assert_string_equal(str_at(l, "kai.scheduler/queue"), "prod-inference");
	json_decref(m);
	l = labels_for(KUBERAY_SCHED_KUEUE, 0, &m);
	assert_string_equal(str_at(l, "kueue.x-k8s.io/queue-name"), "prod-inference");
	assert_string_equal(str_at(l, "kueue.x-k8s.io/priority-class"), "high");
	assert_null(json_object_get(l, "ray.io/gang-scheduling-enabled"));
	json_decref(m);
	l = labels_for(KUBERAY_SCHED_KUEUE, 2, &m);	/* Kueue does not manage RayService */
	assert_null(json_object_get(l, "kueue.x-k8s.io/queue-name"));
	json_decref(m);
	l = labels_for(KUBERAY_SCHED_NONE, 0, &m);
	assert_null(json_object_get(l, "ray.io/gang-scheduling-enabled"));
	assert_int_equal(json_object_size(l), 5);
	json_decref(m);
}

static void
test_gcs_and_job_fields(void **state)
{
	struct corpus_case c;
	struct err e = { 0 };
	json_t *m, *g, *spec;

	(void)state;
	/* RayCluster idx 1: redis with a secret reference */
	render_case(&c, 1, 0, 0, 0, 0, 1);
	m = kuberay_render(&c.in, &e);
	g = json_object_get(json_object_get(m, "spec"), "gcsFaultToleranceOptions");
	assert_string_equal(str_at(g, "backend"), "redis");
	assert_string_equal(str_at(g, "redisAddress"), "redis.fleet.svc:6379");
	assert_string_equal(str_at(json_object_get(json_object_get(json_object_get(g,
	    "redisPassword"), "valueFrom"), "secretKeyRef"), "name"), "redis-pw");
	json_decref(m);
	jobspec_cleanup(&c.spec);
	/* RayService by default: embedded rocksdb; RayJob by default: none */
	render_case(&c, 2, 0, 0, 0, 0, 0);
	m = kuberay_render(&c.in, &e);
	g = json_object_get(json_object_get(json_object_get(m, "spec"), "rayClusterConfig"),
	    "gcsFaultToleranceOptions");
	assert_string_equal(str_at(g, "backend"), "rocksdb");
	assert_string_equal(str_at(json_object_get(json_object_get(m, "spec"), "upgradeStrategy"),
	    "type"), "NewCluster");
	json_decref(m);
	jobspec_cleanup(&c.spec);
	render_case(&c, 0, 0, 0, 0, 1, 7);	/* idx 7: runtime env, suspend, deadline */
	c.in.suspend = true;
	m = kuberay_render(&c.in, &e);
	spec = json_object_get(m, "spec");
	assert_null(json_object_get(json_object_get(spec, "rayClusterSpec"),
	    "gcsFaultToleranceOptions"));
	assert_true(json_is_true(json_object_get(spec, "suspend")));
	assert_true(json_is_true(json_object_get(spec, "shutdownAfterJobFinishes")));
	assert_non_null(strstr(str_at(spec, "runtimeEnvYAML"), "torch==2.5.1"));
	assert_int_equal(json_integer_value(json_object_get(spec, "activeDeadlineSeconds")), 86400);
	assert_int_equal(json_integer_value(json_object_get(spec, "ttlSecondsAfterFinished")), 600);
	assert_string_equal(str_at(spec, "submissionMode"), "K8sJobMode");
	json_decref(m);
	jobspec_cleanup(&c.spec);
}

/* The checkpoint signal objects (CONTRACTS.md) and the per-provider spot grace caps. */
static void
test_signal_objects(void **state)
{
	static const struct { int prov; const char *reason; int grace, want; } caps[] = {
		{ 0, "spot", 120, 30 }, { 1, "spot", 120, 30 }, { 2, "spot", 600, 120 },
		{ 2, "spot", 60, 60 }, { 0, "move", 600, 600 }, { 1, "preempt", 90, 90 },
	};
	struct corpus_case c;
	struct kuberay_signal sig = { "2026-09-01T12:00:00Z", "2026-09-01T12:00:30Z", "spot" };
	struct err e = { 0 };
	json_t *objs, *o, *cm;
	size_t i;
	char name[64];

	(void)state;
	case_init(&c, 0, 0, 1, 0, 0, 2);	/* idx 2: a spec with a checkpoint uri */
	objs = kuberay_signal_objects(&c.in, &sig, &e);
	assert_non_null(objs);
	assert_int_equal(json_array_size(objs), 4);
	assert_true(kuberay_signal_name(c.job_id, c.in.attempt, name, sizeof(name)));
	assert_int_equal(strncmp(name, "fleet-signal-5f0c0002-", 22), 0);
	json_array_foreach(objs, i, o) {
		json_t *md = json_object_get(o, "metadata"), *l = json_object_get(md, "labels");

		assert_string_equal(str_at(md, "name"), name);
		assert_string_equal(str_at(l, "fleet.io/job-id"), c.job_id);
		assert_string_equal(str_at(l, "app.kubernetes.io/managed-by"), "fleetd");
		assert_non_null(str_at(l, "fleet.io/attempt"));
		assert_non_null(str_at(l, "fleet.io/queue"));
		assert_non_null(str_at(l, "fleet.io/environment"));
	}
	assert_string_equal(str_at(json_array_get(objs, 0), "kind"), "ServiceAccount");
	cm = json_array_get(objs, 1);
	assert_string_equal(str_at(cm, "kind"), "ConfigMap");
	assert_string_equal(str_at(json_object_get(cm, "data"), "reason"), "spot");
	assert_string_equal(str_at(json_object_get(cm, "data"), "grace_seconds"), "30");
	assert_string_equal(str_at(json_object_get(cm, "data"), "checkpoint_uri"),
	    "s3://fleet-ckpt/llm");
	assert_null(json_object_get(json_object_get(cm, "data"), "ack_uri"));
	o = json_array_get(json_object_get(json_array_get(objs, 2), "rules"), 0);
	assert_string_equal(json_string_value(json_array_get(json_object_get(o, "resourceNames"),
	    0)), name);
	assert_string_equal(json_string_value(json_array_get(json_object_get(o, "verbs"), 1)),
	    "patch");
	assert_string_equal(str_at(json_array_get(json_object_get(json_array_get(objs, 3),
	    "subjects"), 0), "name"), name);
	json_decref(objs);
	for (i = 0; i < sizeof(caps) / sizeof(caps[0]); i++) {
		c.spec.checkpoint_grace_seconds = caps[i].grace;
		assert_int_equal(kuberay_signal_grace(&c.spec, (enum kuberay_provider)caps[i].prov,
		    caps[i].reason), caps[i].want);
	}
	jobspec_cleanup(&c.spec);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_corpus),
		cmocka_unit_test(test_names),
		cmocka_unit_test(test_signal_objects),
		cmocka_unit_test(test_namespace),
		cmocka_unit_test(test_refusals),
		cmocka_unit_test(test_scheduler_labels),
		cmocka_unit_test(test_gcs_and_job_fields),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
