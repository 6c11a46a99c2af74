/* cloudsim member-cluster lifecycle of Ray objects: RayJob status progression, suspend,
 * refused specs, image pull and crash-loop back-off, RayCronJob.  Scheduling is
 * test_cloudsim_sched.c, spot reclaims and node failures test_cloudsim_failure.c. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include "cs_pods.h"

static struct csh H;

static int
setup(void **state)
{
	(void)state;
	return csh_setup(&H, "40");
}

struct job_want {
	const char	*status;
};

static bool
job_is(struct csh *h, void *arg)
{
	struct job_want *w = arg;
	struct csh_resp r = csh_kube(h, HP, "GET", "/apis/ray.io/v1/namespaces/default/rayjobs/"
	    "job-a", NULL, NULL);
	const char *s = json_string_value(json_object_get(json_object_get(r.json, "status"),
	    "jobDeploymentStatus"));
	bool ok = s != NULL && strcmp(s, w->status) == 0;

	csh_resp_free(&r);
	return ok;
}

static void
test_rayjob_progression_and_suspend(void **state)
{
	const char *g6 = "\"nodeSelector\":{\"sagemaker.amazonaws.com/instance-group-name\":"
	    "\"g6\"}";
	struct job_want jw = { "Initializing" };
	struct csh_resp r;
	json_t *p;
	char rc[160];
	struct csh_want w = { HP, "susp", "Running", 3 };

	(void)state;
	assert_int_equal(csh_apply(&H, HP, "rayjobs", "job-a", csh_ray_body("RayJob", "job-a", 1, 8,
	    g6, "\"shutdownAfterJobFinishes\":true,\"ttlSecondsAfterFinished\":0,")), 201);
	r = csh_kube(&H, HP, "GET", "/apis/ray.io/v1/namespaces/default/rayjobs/job-a", NULL,
	    NULL);
	assert_string_equal(json_string_value(json_object_get(json_object_get(r.json, "status"),
	    "jobDeploymentStatus")), "Initializing");
	snprintf(rc, sizeof(rc), "%s", json_string_value(json_object_get(json_object_get(r.json,
	    "status"), "rayClusterName")));
	csh_resp_free(&r);
	jw.status = "Running";
	assert_true(csh_wait(&H, job_is, &jw, 10));
	jw.status = "Complete";
	assert_true(csh_wait(&H, job_is, &jw, 10));
	r = csh_kube(&H, HP, "GET", "/apis/ray.io/v1/namespaces/default/rayjobs/job-a", NULL,
	    NULL);
	assert_string_equal(json_string_value(json_object_get(json_object_get(r.json, "status"),
	    "jobStatus")), "SUCCEEDED");
	assert_non_null(json_object_get(json_object_get(r.json, "status"), "endTime"));
	csh_resp_free(&r);
	usleep(500000);
	p = csh_pods(&H, HP, rc);
	assert_int_equal(json_array_size(p), 0);	/* shut down after finishing */
	json_decref(p);
	/* suspend tears the pods down, resume brings them back */
	assert_int_equal(csh_apply(&H, HP, "rayclusters", "susp", csh_ray_body("RayCluster", "susp",
	    2, 8, g6, "")), 201);
	assert_true(csh_wait(&H, csh_pods_in_phase, &w, 10));
	r = csh_kube(&H, HP, "PATCH", "/apis/ray.io/v1/namespaces/default/rayclusters/susp",
	    "application/merge-patch+json", "{\"spec\":{\"suspend\":true}}");
	assert_int_equal(r.status, 200);
	csh_resp_free(&r);
	p = csh_pods(&H, HP, "susp");
	assert_int_equal(json_array_size(p), 0);
	json_decref(p);
	r = csh_kube(&H, HP, "GET", "/apis/ray.io/v1/namespaces/default/rayclusters/susp", NULL,
	    NULL);
	assert_string_equal(json_string_value(json_object_get(json_object_get(r.json, "status"),
	    "state")), "suspended");
	csh_resp_free(&r);
	/* the operator refuses a suspended RayJob that would not shut down, and long names */
	assert_int_equal(csh_apply(&H, HP, "rayjobs", "bad-suspend", csh_ray_body("RayJob",
	    "bad-suspend", 1, 8, g6, "\"suspend\":true,")), 201);
	usleep(300000);
	r = csh_kube(&H, HP, "GET", "/apis/ray.io/v1/namespaces/default/rayjobs/bad-suspend",
	    NULL, NULL);
	assert_string_equal(json_string_value(json_object_get(json_object_get(r.json, "status"),
	    "jobDeploymentStatus")), "ValidationFailed");
	csh_resp_free(&r);
	{
		const char *longname = "a-rayjob-name-that-is-much-too-long-for-kuberay-x";

		assert_int_equal(csh_apply(&H, HP, "rayjobs", longname, csh_ray_body("RayJob",
		    longname, 1, 8, g6, "")), 201);
		usleep(300000);
		assert_true(csh_has_event(&H, HP, longname, "InvalidRayJobSpec"));
	}
	/* an image that cannot be pulled: pods wait in ImagePullBackOff with kubelet events */
	{
		char *s = csh_ray_body("RayCluster", "nopull", 1, 0, "", "");
		json_t *b = json_loads(s, 0, NULL);

		free(s);
		json_object_set_new(json_object_get(b, "metadata"), "annotations", json_pack(
		    "{s:s}", "cloudsim.fleet.io/outcome", "image-pull-backoff"));
		s = json_dumps(b, JSON_COMPACT);
		json_decref(b);
		assert_int_equal(csh_apply(&H, HP, "rayclusters", "nopull", s), 201);
		usleep(500000);
		p = csh_pods(&H, HP, "nopull");
		assert_int_equal(csh_count_phase(p, "Pending"), 2);
		assert_string_equal(json_string_value(json_object_get(json_object_get(
		    json_object_get(json_array_get(json_object_get(json_object_get(json_array_get(
		    p, 0), "status"), "containerStatuses"), 0), "state"), "waiting"), "reason")),
		    "ImagePullBackOff");
		json_decref(p);
		assert_true(csh_has_event(&H, HP, "nopull-head", "BackOff"));
	}
	/* issue 13: GPU workers on the CPU image find no CUDA and crash-loop like under the
	 * kubelet: CrashLoopBackOff, a restart count, BackOff events; the head runs */
	{
		char *s = csh_ray_body("RayCluster", "cpuimg", 1, 8, g6, "");
		json_t *pod, *cst, *b = json_loads(s, 0, NULL);
		size_t i;
		int loops = 0;

		free(s);
		json_string_set(json_object_get(json_array_get(json_object_get(json_object_get(
		    json_object_get(json_array_get(json_object_get(json_object_get(b, "spec"),
		    "workerGroupSpecs"), 0), "template"), "spec"), "containers"), 0), "image"),
		    "rayproject/ray:2.9.0");
		s = json_dumps(b, JSON_COMPACT);
		json_decref(b);
		assert_int_equal(csh_apply(&H, HP, "rayclusters", "cpuimg", s), 201);
		usleep(1500000);
		p = csh_pods(&H, HP, "cpuimg");
		json_array_foreach(p, i, pod) {
			cst = json_array_get(json_object_get(json_object_get(pod, "status"),
			    "containerStatuses"), 0);
			if (strstr(json_string_value(json_object_get(json_object_get(pod, "metadata"),
			    "name")), "worker") == NULL)
				continue;
			assert_string_equal(json_string_value(json_object_get(json_object_get(
			    json_object_get(cst, "state"), "waiting"), "reason")), "CrashLoopBackOff");
			assert_true(json_integer_value(json_object_get(cst, "restartCount")) >= 1);
			assert_int_equal(json_integer_value(json_object_get(json_object_get(
			    json_object_get(cst, "lastState"), "terminated"), "exitCode")), 1);
			/* the kubelet names the pod's own container */
			assert_string_equal(json_string_value(json_object_get(cst, "name")), "w");
			assert_non_null(strstr(json_string_value(json_object_get(json_object_get(
			    json_object_get(cst, "state"), "waiting"), "message")),
			    "restarting failed container=w pod=cpuimg-gpu-worker-"));
			loops++;
		}
		json_decref(p);
		assert_int_equal(loops, 1);
		assert_true(csh_has_event(&H, HP, "cpuimg-gpu-worker", "BackOff"));
		assert_true(csh_has_event(&H, HP, "cpuimg-gpu-worker", "Created"));
		{
			char *m = csh_event_message(&H, HP, "cpuimg-gpu-worker", "BackOff");

			assert_non_null(m);
			assert_non_null(strstr(m, "Back-off restarting failed container w in pod "
			    "cpuimg-gpu-worker-"));
			free(m);
		}
		r = csh_kube(&H, HP, "DELETE", "/apis/ray.io/v1/namespaces/default/rayclusters/"
		    "cpuimg", NULL, NULL);
		csh_resp_free(&r);
	}
	/* deletion frees the GPUs the workers held */
	r = csh_kube(&H, HP, "DELETE", "/apis/ray.io/v1/namespaces/default/rayclusters/susp",
	    NULL, NULL);
	assert_int_equal(r.status, 200);
	csh_resp_free(&r);
}

static bool
cron_spawned(struct csh *h, void *arg)
{
	struct csh_resp r = csh_kube(h, HP, "GET", "/apis/ray.io/v1/namespaces/default/rayjobs?"
	    "labelSelector=ray.io%2Fcronjob-name%3Dnightly", NULL, NULL);
	bool ok = json_array_size(json_object_get(r.json, "items")) >= 1;

	(void)arg;
	csh_resp_free(&r);
	return ok;
}

static void
test_raycronjob(void **state)
{
	char *job = csh_ray_body("RayJob", "x", 1, 0, "", ""), *body = NULL;
	json_t *j = json_loads(job, 0, NULL);
	char *spec = json_dumps(json_object_get(j, "spec"), JSON_COMPACT);
	struct csh_resp r;

	(void)state;
	if (asprintf(&body, "{\"apiVersion\":\"ray.io/v1\",\"kind\":\"RayCronJob\",\"metadata\":"
	    "{\"name\":\"nightly\"},\"spec\":{\"schedule\":\"@every 10s\",\"jobTemplate\":%s}}",
	    spec) < 0)
		fail();
	assert_int_equal(csh_apply(&H, HP, "raycronjobs", "nightly", body), 201);
	assert_true(csh_wait(&H, cron_spawned, NULL, 10));
	r = csh_kube(&H, HP, "GET", "/apis/ray.io/v1/namespaces/default/raycronjobs/nightly",
	    NULL, NULL);
	assert_non_null(json_object_get(json_object_get(r.json, "status"), "lastScheduleTime"));
	csh_resp_free(&r);
	r = csh_kube(&H, HP, "PATCH", "/apis/ray.io/v1/namespaces/default/raycronjobs/nightly?"
	    "fieldManager=fleetd", AP, "{\"apiVersion\":\"ray.io/v1\",\"kind\":\"RayCronJob\","
	    "\"metadata\":{\"name\":\"nightly\"},\"spec\":{}}");
	assert_int_equal(r.status, 422);	/* schedule and jobTemplate are required */
	csh_resp_free(&r);
	free(spec);
	free(job);
	json_decref(j);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_rayjob_progression_and_suspend),
		cmocka_unit_test(test_raycronjob),
	};

	return cmocka_run_group_tests(tests, setup, harness_group_teardown);
}
