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
#include "tests/unit/providers/kuberay_cases.h"
#include "tests/harness/harness.h"

#define FIXTURES "tests/fixtures/kuberay"

/* ------------------------------------------------------------------ structural checks */

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
	json_t *cluster = case_cluster(m, c->kind), *spec = json_object_get(m, "spec");
	const char *name = str_at(md, "name");
	char attempt[8];
	regex_t re;

	assert_string_equal(str_at(m, "apiVersion"), "ray.io/v1");
	assert_string_equal(str_at(m, "kind"), kinds[c->kind]);
	/* issue 13: never the pair Kueue's webhook refuses (queue-name + in-tree autoscaling) */
	if (json_object_get(labels, "kueue.x-k8s.io/queue-name") != NULL)
		assert_false(json_is_true(json_object_get(cluster, "enableInTreeAutoscaling")));
	/* RayService and RayCronJob are not Kueue's: never labelled */
	if (c->in.batch.kind == KUBERAY_SCHED_KUEUE)
		assert_true((json_object_get(labels, "kueue.x-k8s.io/queue-name") != NULL) ==
		    (!c->elastic && c->kind != 2 && c->kind != 3));
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
	if (c->kind == 3) {
		assert_string_equal(str_at(spec, "schedule"), "0 */6 * * *");
		/* every run is created suspended: fleetd places it, then lifts suspend */
		assert_true(json_is_true(json_object_get(json_object_get(spec, "jobTemplate"),
		    "suspend")));
	}
	if (c->in.checkpoint_deadline != NULL)
		assert_string_equal(str_at(json_object_get(md, "annotations"),
		    "fleet.io/checkpoint-requested"), c->in.checkpoint_deadline);
}

/* ------------------------------------------------------------------ golden corpus */

static void
compare_golden(const struct corpus_case *c, json_t *m)
{
	char path[256];

	snprintf(path, sizeof(path), FIXTURES "/%s.json", c->name);
	harness_golden_json(path, m);
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

/* topology pack (issue 26): the accelerator workers require the chosen racks (NVLink
 * domains, In [...]) and their scale unit under each provider's labels; the head and the
 * cpu group are not bound.  Goldens rayjob-<provider>-ondemand-pack-fixed.json. */
static void
test_pack(void **state)
{
	(void)state;
	for (int prov = 0; prov < 3; prov++) {
		struct corpus_case c;
		struct err e = { 0 };
		json_t *m, *specs, *g, *ex;
		size_t i;
		int seen = 0;

		case_init(&c, 0, prov, 0, 1, 0, 6 + prov);
		c.spec.topology = JOBSPEC_TOPO_PACK;
		c.in.placement.rack_id = NULL;
		c.in.placement.racks[0] = "rack-07";
		c.in.placement.racks[1] = "rack-08";
		c.in.placement.nracks = 2;
		c.in.placement.block = "block-2";
		snprintf(c.name, sizeof(c.name), "rayjob-%s-ondemand-pack-fixed", provs[prov]);
		m = kuberay_render(&c.in, &e);
		if (m == NULL)
			fail_msg("%s: render failed: %s %s", c.name, e.code, e.msg);
		specs = json_object_get(json_object_get(json_object_get(m, "spec"),
		    "rayClusterSpec"), "workerGroupSpecs");
		json_array_foreach(specs, i, g) {
			json_t *pod = json_object_get(json_object_get(g, "template"), "spec");
			json_t *terms = json_object_get(json_object_get(json_object_get(json_object_get(
			    pod, "affinity"), "nodeAffinity"),
			    "requiredDuringSchedulingIgnoredDuringExecution"), "nodeSelectorTerms");
			size_t k;
			bool rack = false, block = false;

			json_array_foreach(json_object_get(json_array_get(terms, 0), "matchExpressions"),
			    k, ex) {
				json_t *v = json_object_get(ex, "values");

				if (strcmp(str_at(ex, "key"), kuberay_rack_label(c.in.placement.provider))
				    == 0 && json_array_size(v) == 2 && strcmp(json_string_value(
				    json_array_get(v, 1)), "rack-08") == 0)
					rack = true;
				if (strcmp(str_at(ex, "key"), kuberay_block_label(
				    c.in.placement.provider)) == 0 && strcmp(json_string_value(
				    json_array_get(v, 0)), "block-2") == 0)
					block = true;
			}
			if (strcmp(str_at(g, "groupName"), "gpu") == 0) {
				assert_true(rack && block);
				seen++;
			} else {
				assert_false(rack || block);
			}
		}
		assert_int_equal(seen, 1);
		compare_golden(&c, m);
		json_decref(m);
		/* no racks: refused, never rendered unbound */
		c.in.placement.nracks = 0;
		assert_null(kuberay_render(&c.in, &e));
		assert_string_equal(e.code, "kuberay.bad_placement");
		jobspec_cleanup(&c.spec);
	}
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_corpus),
		cmocka_unit_test(test_pack),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
