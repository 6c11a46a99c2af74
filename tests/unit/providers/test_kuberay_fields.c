/* test_kuberay_fields: single KubeRay renders — object names and namespaces within
 * Kubernetes' limits, refusals, batch scheduler labels, GCS fault tolerance and job fields,
 * the checkpoint signal objects.  The whole corpus: test_kuberay. */
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

#define FIXTURES "tests/fixtures/kuberay"

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
		/* unique per job and per attempt (a RayService: the same name on every attempt,
		 * so that its serve Service keeps its name), stable for the same pair */
		assert_true(kuberay_object_name((enum jobspec_kind)k, "x", id1, 1, a, sizeof(a)));
		assert_true(kuberay_object_name((enum jobspec_kind)k, "x", id1, 2, b, sizeof(b)));
		assert_true(kuberay_object_name((enum jobspec_kind)k, "x", id2, 1, d, sizeof(d)));
		if (k == JOBSPEC_RAYSERVICE)
			assert_string_equal(a, b);
		else
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
	assert_true(kuberay_object_name(JOBSPEC_RAYSERVICE, "serve", id1, 3, a, sizeof(a)));
	assert_true(strncmp(a, "serve-", 6) == 0 && strchr(a + 6, '-') == NULL);
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

/* The scheduling gates of worker group name in manifest m of kind k (borrowed), NULL. */
static json_t *
gates_of(json_t *m, int k, const char *name)
{
	json_t *spec = json_object_get(m, "spec"), *wg;
	size_t i;

	if (k == 0)
		spec = json_object_get(spec, "rayClusterSpec");
	else if (k == 2)
		spec = json_object_get(spec, "rayClusterConfig");
	else if (k == 3)
		spec = json_object_get(json_object_get(spec, "jobTemplate"), "rayClusterSpec");
	json_array_foreach(json_object_get(spec, "workerGroupSpecs"), i, wg)
		if (strcmp(str_at(wg, "groupName"), name) == 0)
			return json_object_get(json_object_get(json_object_get(wg, "template"),
			    "spec"), "schedulingGates");
	return NULL;
}

/* Issue 26: an autoscaled group of a RayCluster or RayJob is created gated (fleetd lifts
 * the gate from the pods it admitted); a fixed group, a RayService, a RayCronJob and a job
 * Kueue gates itself are not. */
static void
test_grow_gate(void **state)
{
	struct corpus_case c;
	struct err e = { 0 };
	json_t *m, *g;

	(void)state;
	for (int k = 0; k < 4; k++)
		for (int el = 0; el < 2; el++) {
			render_case(&c, k, 0, 0, 0, el, 4);	/* idx 4: no batch scheduler */
			m = kuberay_render(&c.in, &e);
			assert_non_null(m);
			g = gates_of(m, k, "gpu");
			if (el && k < 2) {
				assert_int_equal(json_array_size(g), 1);
				assert_string_equal(str_at(json_array_get(g, 0), "name"),
				    KUBERAY_GROW_GATE);
			} else {
				assert_null(g);
			}
			assert_null(gates_of(m, k, "cpu"));	/* fixed: 2 replicas */
			json_decref(m);
			jobspec_cleanup(&c.spec);
		}
	render_case(&c, 1, 0, 0, 0, 1, 4);
	c.in.batch.kind = KUBERAY_SCHED_KUEUE;
	c.in.batch.kueue_elastic = true;	/* Kueue's workload slices admit the growth */
	m = kuberay_render(&c.in, &e);
	assert_non_null(m);
	assert_null(gates_of(m, 1, "gpu"));
	json_decref(m);
	jobspec_cleanup(&c.spec);
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

/* The checkpoint signal objects (docs/design/contracts.md) and the per-provider spot grace caps. */
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
	/* ServiceAccount, ConfigMap, Role, RoleBinding, and (issue 25) the NetworkPolicy; the
	 * Secret only with a token (test_kuberay_auth) */
	assert_int_equal(json_array_size(objs), 5);
	assert_string_equal(str_at(json_array_get(objs, 4), "kind"), "NetworkPolicy");
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

/* GKE flex-start with queued provisioning (issue 27): the worker pods name the attempt's
 * ProvisioningRequest, which the signal objects carry with a PodTemplate per worker group. */
static void
test_flex_start(void **state)
{
	struct corpus_case c;
	struct err e = { 0 };
	json_t *objs, *m, *g, *ann, *pr, *pt, *ps;
	char name[64];
	size_t i, npt = 0;

	(void)state;
	case_init(&c, 0, 0, 0, 0, 0, 2);
	/* not flex-start: no annotation, no ProvisioningRequest */
	m = kuberay_render(&c.in, &e);
	assert_non_null(m);
	json_array_foreach(json_object_get(json_object_get(json_object_get(m, "spec"),
	    "rayClusterSpec"), "workerGroupSpecs"), i, g)
		assert_null(json_object_get(json_object_get(json_object_get(g, "template"),
		    "metadata"), "annotations"));
	json_decref(m);
	objs = kuberay_signal_objects(&c.in, NULL, &e);
	assert_int_equal(json_array_size(objs), 5);
	json_decref(objs);

	c.in.placement.flex_start = true;
	assert_true(kuberay_signal_name(c.job_id, c.in.attempt, name, sizeof(name)));
	m = kuberay_render(&c.in, &e);
	assert_non_null(m);
	assert_true(json_array_size(json_object_get(json_object_get(json_object_get(m, "spec"),
	    "rayClusterSpec"), "workerGroupSpecs")) >= 1);
	json_array_foreach(json_object_get(json_object_get(json_object_get(m, "spec"),
	    "rayClusterSpec"), "workerGroupSpecs"), i, g) {
		ann = json_object_get(json_object_get(json_object_get(g, "template"), "metadata"),
		    "annotations");
		assert_string_equal(str_at(ann, "autoscaling.x-k8s.io/consume-provisioning-request"),
		    name);
		assert_string_equal(str_at(ann, "autoscaling.x-k8s.io/provisioning-class-name"),
		    "queued-provisioning.gke.io");
	}
	/* the head does not consume it (it runs on an on-demand pool) */
	assert_null(json_object_get(json_object_get(json_object_get(json_object_get(
	    json_object_get(json_object_get(m, "spec"), "rayClusterSpec"), "headGroupSpec"),
	    "template"), "metadata"), "annotations"));
	objs = kuberay_signal_objects(&c.in, NULL, &e);
	assert_non_null(objs);
	pr = json_array_get(objs, json_array_size(objs) - 1);
	assert_string_equal(str_at(pr, "apiVersion"), "autoscaling.x-k8s.io/v1");
	assert_string_equal(str_at(pr, "kind"), "ProvisioningRequest");
	assert_string_equal(str_at(json_object_get(pr, "metadata"), "name"), name);
	assert_string_equal(str_at(json_object_get(pr, "spec"), "provisioningClassName"),
	    "queued-provisioning.gke.io");
	ps = json_object_get(json_object_get(pr, "spec"), "podSets");
	assert_int_equal(json_array_size(ps), json_array_size(json_object_get(json_object_get(
	    json_object_get(m, "spec"), "rayClusterSpec"), "workerGroupSpecs")));
	json_array_foreach(objs, i, pt) {
		json_t *set;

		if (strcmp(str_at(pt, "kind"), "PodTemplate") != 0)
			continue;
		set = json_array_get(ps, npt);
		g = json_array_get(json_object_get(json_object_get(json_object_get(m, "spec"),
		    "rayClusterSpec"), "workerGroupSpecs"), npt++);
		assert_string_equal(str_at(pt, "apiVersion"), "v1");
		assert_string_equal(str_at(json_object_get(set, "podTemplateRef"), "name"),
		    str_at(json_object_get(pt, "metadata"), "name"));
		assert_string_equal(str_at(json_object_get(pt, "metadata"), "namespace"),
		    str_at(json_object_get(pr, "metadata"), "namespace"));
		/* the pods the request provisions for are the group's own */
		assert_true(json_equal(json_object_get(pt, "template"), json_object_get(g,
		    "template")));
		assert_int_equal(json_integer_value(json_object_get(set, "count")),
		    json_integer_value(json_object_get(g, "replicas")));
	}
	assert_int_equal(npt, json_array_size(ps));
	json_decref(objs);
	json_decref(m);
	/* another provider: no ProvisioningRequest (flex-start is GKE's) */
	c.in.placement.provider = KUBERAY_AKS;
	objs = kuberay_signal_objects(&c.in, NULL, &e);
	assert_int_equal(json_array_size(objs), 5);
	json_decref(objs);
	jobspec_cleanup(&c.spec);
}

/* The values of pod spec ps's required node-affinity expression on key (NULL: none). */
static json_t *
affinity_values(json_t *ps, const char *key)
{
	json_t *terms = json_object_get(json_object_get(json_object_get(json_object_get(ps,
	    "affinity"), "nodeAffinity"), "requiredDuringSchedulingIgnoredDuringExecution"),
	    "nodeSelectorTerms"), *ex;
	size_t i;

	assert_true(json_array_size(terms) <= 1);	/* one term: its expressions all hold */
	json_array_foreach(json_object_get(json_array_get(terms, 0), "matchExpressions"), i, ex)
		if (strcmp(str_at(ex, "key"), key) == 0) {
			assert_string_equal(str_at(ex, "operator"), "In");
			return json_object_get(ex, "values");
		}
	return NULL;
}

/* One placement truth: every group whose nodes the scheduler named is pinned to them, so
 * the member cannot put a pod where fleetd did not account it; a group on a node still to
 * grow is not; a host job keeps its one hostname selector. */
static void
test_pins(void **state)
{
	static const struct kuberay_pin pins[] = {
		{ 0, "aks-system-0" }, { 1, "aks-h100-1" }, { 1, "aks-h100-0" }, { 1, "aks-h100-1" },
		{ 2, "aks-system-1" }, { 2, NULL },
	};
	struct corpus_case c;
	struct err e = { 0 };
	json_t *m, *spec, *v;

	(void)state;
	render_case(&c, 1, 1, 0, 1, 0, 0);	/* RayCluster, AKS, rack; idx 0: a cpu group */
	c.in.placement.pins = pins;
	c.in.placement.npins = sizeof(pins) / sizeof(pins[0]);
	m = kuberay_render(&c.in, &e);
	assert_non_null(m);
	spec = json_object_get(m, "spec");
	v = affinity_values(json_object_get(json_object_get(json_object_get(spec,
	    "headGroupSpec"), "template"), "spec"), "kubernetes.io/hostname");
	assert_non_null(v);
	assert_int_equal(json_array_size(v), 1);
	assert_string_equal(json_string_value(json_array_get(v, 0)), "aks-system-0");
	/* the GPU group: its rack and its two nodes, in one term */
	v = json_object_get(json_object_get(json_array_get(json_object_get(spec,
	    "workerGroupSpecs"), 0), "template"), "spec");
	assert_non_null(affinity_values(v, "fleet.io/rack"));
	v = affinity_values(v, "kubernetes.io/hostname");
	assert_non_null(v);
	assert_int_equal(json_array_size(v), 2);
	assert_string_equal(json_string_value(json_array_get(v, 0)), "aks-h100-1");
	assert_string_equal(json_string_value(json_array_get(v, 1)), "aks-h100-0");
	/* the cpu group has a pod on a node still to grow: not pinned */
	v = json_object_get(json_object_get(json_array_get(json_object_get(spec,
	    "workerGroupSpecs"), 1), "template"), "spec");
	assert_null(affinity_values(v, "kubernetes.io/hostname"));
	json_decref(m);
	jobspec_cleanup(&c.spec);

	render_case(&c, 0, 1, 0, 2, 0, 1);	/* RayJob, AKS, host on a named node */
	c.in.placement.host = "aks-h100-2";
	c.in.placement.pins = pins;
	c.in.placement.npins = 4;
	m = kuberay_render(&c.in, &e);
	assert_non_null(m);
	v = json_object_get(json_object_get(json_array_get(json_object_get(json_object_get(
	    json_object_get(m, "spec"), "rayClusterSpec"), "workerGroupSpecs"), 0), "template"),
	    "spec");
	assert_string_equal(str_at(json_object_get(v, "nodeSelector"), "kubernetes.io/hostname"),
	    "aks-h100-2");
	assert_null(affinity_values(v, "kubernetes.io/hostname"));
	json_decref(m);
	jobspec_cleanup(&c.spec);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_names),
		cmocka_unit_test(test_signal_objects),
		cmocka_unit_test(test_namespace),
		cmocka_unit_test(test_refusals),
		cmocka_unit_test(test_scheduler_labels),
		cmocka_unit_test(test_gcs_and_job_fields),
		cmocka_unit_test(test_pins),
		cmocka_unit_test(test_flex_start),
		cmocka_unit_test(test_grow_gate),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
