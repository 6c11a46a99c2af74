/* test_kuberay_kueue: Kueue compatibility of the renderer (issue 13) — cluster setting x
 * group elasticity x priority class -> the labels emitted, the Kueue objects dispatch
 * ensures before the object, and never a combination Kueue's webhooks refuse. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "providers/kuberay.h"
#include "tests/unit/providers/kuberay_cases.h"

static void
render_case(struct corpus_case *c, int kind, int prov, int spot, int topo, int el, int idx)
{
	case_init(c, kind, prov, spot, topo, el, idx);
}

/* What Kueue's validating webhooks refuse (kubernetes-sigs/kueue, rayjob_webhook.go and
 * raycluster_webhook.go / common.go ValidateCreate): a labelled object with in-tree
 * autoscaling, unless it opts into workload slices (kueue.x-k8s.io/elastic-job: "true";
 * RayCluster also needs the ElasticJobsViaWorkloadSlices gate). */
static bool
kueue_refuses(json_t *m, int kind, bool gate)
{
	json_t *md = json_object_get(m, "metadata");
	const char *ann = str_at(json_object_get(md, "annotations"), "kueue.x-k8s.io/elastic-job");
	bool slices = ann != NULL && strcmp(ann, "true") == 0;

	if (str_at(json_object_get(md, "labels"), "kueue.x-k8s.io/queue-name") == NULL ||
	    kind > 1)
		return false;
	return json_is_true(json_object_get(case_cluster(m, kind), "enableInTreeAutoscaling")) &&
	    !(slices && (kind == 0 || gate));
}

/* issue 13: cluster setting x group elasticity x priority class -> the labels emitted, the
 * Kueue objects ensured before the object, and never a pair Kueue's webhook refuses. */
static void
test_kueue_compat(void **state)
{
	static const struct {
		int	 kind;		/* 0 RayJob, 1 RayCluster, 2 RayService, 3 RayCronJob */
		int	 elastic;	/* the job's worker group autoscales */
		bool	 cluster_elastic; /* registration: elastic jobs allowed */
		int	 idx;		/* 3: priority class high, queue prod-inference; 4: none */
		bool	 queue_label, slices_ann, pc_label;
		int	 objects;	/* LocalQueue (+ WorkloadPriorityClass) */
	} t[] = {
		{ 0, 0, false, 3, true, false, true, 2 },	/* fixed: gated, pc ensured */
		{ 0, 0, false, 4, true, false, false, 1 },	/* fixed, no pc: queue only */
		{ 0, 1, false, 3, false, false, false, 0 },	/* elastic, not allowed: ungated */
		{ 0, 1, true, 3, true, true, true, 2 },		/* elastic allowed: slices */
		{ 0, 1, true, 4, true, true, false, 1 },
		{ 1, 0, false, 4, true, false, false, 1 },
		{ 1, 1, false, 4, false, false, false, 0 },
		{ 1, 1, true, 3, true, true, true, 2 },
		{ 2, 0, false, 3, false, false, false, 0 },	/* RayService: not Kueue's */
		{ 2, 1, true, 3, false, false, false, 0 },
		/* RayCronJob: Kueue has no integration for it and KubeRay copies no label of
		 * the cron into its runs, which fleetd places itself (before: labelled) */
		{ 3, 0, false, 3, false, false, false, 0 },
		{ 3, 1, true, 3, false, false, false, 0 },
	};

	(void)state;
	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		struct corpus_case c;
		struct err e = { 0 };
		json_t *m, *lb, *ann, *objs;
		const char *why = NULL;
		bool gated;

		render_case(&c, t[i].kind, 0, 0, 0, t[i].elastic, t[i].idx);
		c.in.batch.kind = KUBERAY_SCHED_KUEUE;
		c.in.batch.queue = "team-prod-inference";
		c.in.batch.kueue_elastic = t[i].cluster_elastic;
		m = kuberay_render(&c.in, &e);
		assert_non_null(m);
		lb = json_object_get(json_object_get(m, "metadata"), "labels");
		ann = json_object_get(json_object_get(m, "metadata"), "annotations");
		if ((str_at(lb, "kueue.x-k8s.io/queue-name") != NULL) != t[i].queue_label ||
		    (str_at(ann, "kueue.x-k8s.io/elastic-job") != NULL) != t[i].slices_ann ||
		    (str_at(lb, "kueue.x-k8s.io/priority-class") != NULL) != t[i].pc_label)
			fail_msg("row %zu: queue %d slices %d pc %d", i,
			    str_at(lb, "kueue.x-k8s.io/queue-name") != NULL,
			    str_at(ann, "kueue.x-k8s.io/elastic-job") != NULL,
			    str_at(lb, "kueue.x-k8s.io/priority-class") != NULL);
		if (t[i].queue_label)
			assert_string_equal(str_at(lb, "kueue.x-k8s.io/queue-name"),
			    "team-prod-inference");
		/* what the cluster would refuse is never emitted (gate as registered) */
		assert_false(kueue_refuses(m, t[i].kind, t[i].cluster_elastic));
		gated = kuberay_kueue_gated(&c.in, &why);
		assert_int_equal(gated, t[i].queue_label);
		assert_non_null(why);
		if (t[i].kind < 2 && t[i].elastic && !t[i].cluster_elastic)
			assert_non_null(strstr(why, "does not gate it"));
		if (t[i].kind == 3) {
			json_t *tmpl = json_object_get(json_object_get(m, "spec"), "jobTemplate");

			assert_non_null(strstr(why, "RayCronJob"));
			/* every run is created suspended: fleetd places it, then lifts suspend */
			assert_true(json_is_true(json_object_get(tmpl, "suspend")));
			assert_true(json_is_true(json_object_get(tmpl, "shutdownAfterJobFinishes")));
		}
		objs = kuberay_kueue_objects(m, "fleetd", 1000, &e);
		assert_non_null(objs);
		assert_int_equal(json_array_size(objs), t[i].objects);
		if (t[i].objects > 0) {
			json_t *lq = json_array_get(objs, 0), *l;

			assert_string_equal(str_at(lq, "kind"), "LocalQueue");
			assert_string_equal(str_at(lq, "apiVersion"), "kueue.x-k8s.io/v1beta1");
			assert_string_equal(str_at(json_object_get(lq, "metadata"), "name"),
			    "team-prod-inference");
			assert_string_equal(str_at(json_object_get(lq, "metadata"), "namespace"),
			    str_at(json_object_get(m, "metadata"), "namespace"));
			assert_string_equal(str_at(json_object_get(lq, "spec"), "clusterQueue"),
			    "fleetd");
			l = json_object_get(json_object_get(lq, "metadata"), "labels");
			assert_string_equal(str_at(l, "app.kubernetes.io/managed-by"), "fleetd");
			assert_string_equal(str_at(l, "fleet.io/queue"), str_at(lb, "fleet.io/queue"));
			assert_string_equal(str_at(l, "fleet.io/environment"),
			    str_at(lb, "fleet.io/environment"));
			assert_null(json_object_get(l, "fleet.io/job-id"));	/* shared */
		}
		if (t[i].objects > 1) {
			json_t *wpc = json_array_get(objs, 1);

			assert_string_equal(str_at(wpc, "kind"), "WorkloadPriorityClass");
			assert_string_equal(str_at(json_object_get(wpc, "metadata"), "name"), "high");
			assert_int_equal(json_integer_value(json_object_get(wpc, "value")), 1000);
		}
		json_decref(objs);
		/* a manifest naming no valid queue cannot be ensured */
		if (t[i].queue_label) {
			json_object_set_new(lb, "kueue.x-k8s.io/queue-name", json_string("Bad_Q"));
			assert_null(kuberay_kueue_objects(m, "fleetd", 1, &e));
			assert_string_equal(e.code, "kuberay.bad_input");
		}
		json_decref(m);
		jobspec_cleanup(&c.spec);
	}
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_kueue_compat),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
