/* test_jobspec_pod: the "pod" section of the head and worker groups (issue 26): refusals
 * with a JSON pointer, the environment pod policy, the canonical form round-trips, the
 * new rayStartParams, and the renderer (goldens tests/fixtures/kuberay/rayjob-*-pod.json,
 * checked by validate-manifest with the rest). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "providers/jobspec.h"
#include "providers/kuberay.h"
#include "tests/harness/harness.h"

#define FIXTURES "tests/fixtures/kuberay"

/* A RayJob whose first worker group carries pod (JSON text, NULL: none) and whose head
 * carries head_pod. */
static json_t *
spec(const char *head_pod, const char *pod, const char *params)
{
	char text[16384];
	json_error_t je;
	json_t *j;

	snprintf(text, sizeof(text), "{\"kind\":\"RayJob\",\"queue\":\"team-a\",\"name\":\"pod\","
	    "\"ray_version\":\"2.52.0\",\"entrypoint\":\"python train.py\","
	    "\"head\":{\"cpu\":\"4\",\"memory\":\"16Gi\"%s%s},"
	    "\"worker_groups\":[{\"name\":\"gpu\",\"replicas\":2,\"cpu\":\"32\",\"memory\":\"256Gi\","
	    "\"accelerator\":{\"flavor\":\"nvidia-h100-80gb\",\"count\":8}%s%s%s%s}]}",
	    head_pod ? ",\"pod\":" : "", head_pod ? head_pod : "",
	    pod ? ",\"pod\":" : "", pod ? pod : "",
	    params ? ",\"ray_start_params\":" : "", params ? params : "");
	j = json_loads(text, 0, &je);
	if (j == NULL)
		fail_msg("bad test json: %s: %s", je.text, text);
	return j;
}

static void
expect_refused(const char *head_pod, const char *pod, const char *params, int status,
	       const char *code, const char *pointer)
{
	struct job_spec s;
	struct err e = { 0 };
	json_t *j = spec(head_pod, pod, params);

	if (jobspec_from_json(j, &s, &e))
		fail_msg("accepted: %s", pod ? pod : head_pod ? head_pod : params);
	if (e.status != status || strcmp(e.code, code) != 0 || strcmp(e.pointer, pointer) != 0)
		fail_msg("%s: got %d %s at %s (%s), want %d %s at %s",
		    pod ? pod : head_pod ? head_pod : params, e.status, e.code, e.pointer, e.msg,
		    status, code, pointer);
	json_decref(j);
}

static const char *const FULL = "{"
    "\"env\":[{\"name\":\"HF_HOME\",\"value\":\"/data/hf\"},"
    "{\"name\":\"WANDB_API_KEY\",\"secret_key_ref\":{\"name\":\"wandb\",\"key\":\"api-key\"}}],"
    "\"env_from\":[{\"secret\":\"hf-token\"},{\"config_map\":\"train-config\"}],"
    "\"volumes\":[{\"name\":\"data\",\"persistent_volume_claim\":{\"claim_name\":\"datasets\","
    "\"read_only\":true}},"
    "{\"name\":\"ckpt\",\"csi\":{\"driver\":\"gcsfuse.csi.storage.gke.io\","
    "\"volume_attributes\":{\"bucketName\":\"fleet-ckpt\",\"mountOptions\":\"implicit-dirs\"}}},"
    "{\"name\":\"certs\",\"secret\":{\"secret_name\":\"ca-bundle\"}},"
    "{\"name\":\"conf\",\"config_map\":{\"name\":\"train-config\"}},"
    "{\"name\":\"scratch\",\"empty_dir\":{\"size_limit\":\"100Gi\"}}],"
    "\"volume_mounts\":[{\"name\":\"data\",\"mount_path\":\"/data\",\"read_only\":true},"
    "{\"name\":\"ckpt\",\"mount_path\":\"/ckpt\"},{\"name\":\"certs\",\"mount_path\":\"/certs\","
    "\"read_only\":true},{\"name\":\"conf\",\"mount_path\":\"/conf\",\"sub_path\":\"train\"},"
    "{\"name\":\"scratch\",\"mount_path\":\"/scratch\"}],"
    "\"annotations\":{\"example.com/owner\":\"ml-platform\"},"
    "\"labels\":{\"team\":\"research\",\"example.com/cost-center\":\"cc-42\"},"
    "\"tolerations\":[{\"key\":\"example.com/dedicated\",\"operator\":\"Equal\","
    "\"value\":\"research\",\"effect\":\"NoSchedule\"},{\"key\":\"node.kubernetes.io/unreachable\","
    "\"operator\":\"Exists\",\"effect\":\"NoExecute\",\"toleration_seconds\":300}],"
    "\"service_account\":\"train-wi\","
    "\"containers\":[{\"name\":\"log-shipper\",\"image\":\"fluent/fluent-bit:3.1\","
    "\"args\":[\"-c\",\"/conf/fluent-bit.conf\"],\"env\":[{\"name\":\"LOG_LEVEL\","
    "\"value\":\"info\"}],\"resources\":{\"cpu\":\"100m\",\"memory\":\"128Mi\"},"
    "\"volume_mounts\":[{\"name\":\"conf\",\"mount_path\":\"/conf\",\"read_only\":true}]}]}";

static void
test_refusals(void **state)
{
	static const struct {
		const char *head_pod, *pod, *code, *pointer;
		int status;
	} rows[] = {
		{ NULL, "{\"env\":[{\"name\":\"FLEET_JOB_ID\",\"value\":\"x\"}]}",
		  "jobspec.invalid_pod", "/worker_groups/0/pod/env/0/name", 422 },
		{ NULL, "{\"env\":[{\"name\":\"fleet_attempt\",\"value\":\"x\"}]}",
		  "jobspec.invalid_pod", "/worker_groups/0/pod/env/0/name", 422 },
		{ NULL, "{\"env\":[{\"name\":\"1BAD\",\"value\":\"x\"}]}",
		  "jobspec.invalid_pod", "/worker_groups/0/pod/env/0/name", 422 },
		{ NULL, "{\"env\":[{\"name\":\"A\",\"value\":\"x\"},{\"name\":\"A\",\"value\":\"y\"}]}",
		  "jobspec.invalid_pod", "/worker_groups/0/pod/env/1/name", 422 },
		{ NULL, "{\"env\":[{\"name\":\"HF_TOKEN\",\"value\":\"hf_abc\"}]}",
		  "jobspec.secret_in_env", "/worker_groups/0/pod/env/0/value", 422 },
		{ NULL, "{\"containers\":[{\"name\":\"s\",\"image\":\"b\",\"env\":"
		  "[{\"name\":\"db_password\",\"value\":\"x\"}]}]}",
		  "jobspec.secret_in_env", "/worker_groups/0/pod/containers/0/env/0/value", 422 },
		{ NULL, "{\"env\":[{\"name\":\"A\"}]}",
		  "jobspec.invalid_pod", "/worker_groups/0/pod/env/0", 422 },
		{ NULL, "{\"env_from\":[{\"secret\":\"Bad_Name\"}]}",
		  "jobspec.invalid_pod", "/worker_groups/0/pod/env_from/0/secret", 422 },
		{ NULL, "{\"volumes\":[{\"name\":\"h\",\"host_path\":{\"path\":\"/\"}}]}",
		  "jobspec.pod_not_allowed", "/worker_groups/0/pod/volumes/0/host_path", 422 },
		{ NULL, "{\"volumes\":[{\"name\":\"d\",\"empty_dir\":{}},"
		  "{\"name\":\"h\",\"hostPath\":{\"path\":\"/\"}}]}",
		  "jobspec.pod_not_allowed", "/worker_groups/0/pod/volumes/1/hostPath", 422 },
		{ NULL, "{\"volumes\":[{\"name\":\"n\",\"nfs\":{}}]}",
		  "jobspec.invalid_pod", "/worker_groups/0/pod/volumes/0/nfs", 422 },
		{ NULL, "{\"volumes\":[{\"name\":\"c\",\"csi\":{\"driver\":\"evil.example.com\"}}]}",
		  "jobspec.invalid_pod", "/worker_groups/0/pod/volumes/0/csi/driver", 422 },
		{ NULL, "{\"volumes\":[{\"name\":\"dshm\",\"empty_dir\":{}}]}",
		  "jobspec.invalid_pod", "/worker_groups/0/pod/volumes/0/name", 422 },
		{ NULL, "{\"volume_mounts\":[{\"name\":\"nope\",\"mount_path\":\"/x\"}]}",
		  "jobspec.invalid_pod", "/worker_groups/0/pod/volume_mounts/0/name", 422 },
		{ NULL, "{\"volumes\":[{\"name\":\"d\",\"empty_dir\":{}}],\"volume_mounts\":"
		  "[{\"name\":\"d\",\"mount_path\":\"/etc/fleet/signal\"}]}",
		  "jobspec.invalid_pod", "/worker_groups/0/pod/volume_mounts/0/mount_path", 422 },
		{ NULL, "{\"volumes\":[{\"name\":\"d\",\"empty_dir\":{}}],\"volume_mounts\":"
		  "[{\"name\":\"d\",\"mount_path\":\"/a/../etc\"}]}",
		  "jobspec.invalid_pod", "/worker_groups/0/pod/volume_mounts/0/mount_path", 422 },
		{ NULL, "{\"labels\":{\"fleet.io/job-id\":\"x\"}}",
		  "jobspec.invalid_pod", "/worker_groups/0/pod/labels/fleet.io~1job-id", 422 },
		{ NULL, "{\"labels\":{\"ray.io/node-type\":\"worker\"}}",
		  "jobspec.invalid_pod", "/worker_groups/0/pod/labels/ray.io~1node-type", 422 },
		{ NULL, "{\"labels\":{\"kueue.x-k8s.io/queue-name\":\"other\"}}",
		  "jobspec.invalid_pod", "/worker_groups/0/pod/labels/kueue.x-k8s.io~1queue-name",
		  422 },
		{ "{\"annotations\":{\"x.fleet.io/a\":\"b\"}}", NULL,
		  "jobspec.invalid_pod", "/head/pod/annotations/x.fleet.io~1a", 422 },
		{ NULL, "{\"labels\":{\"team\":\"has space\"}}",
		  "jobspec.invalid_pod", "/worker_groups/0/pod/labels/team", 422 },
		{ NULL, "{\"tolerations\":[{\"key\":\"k\",\"operator\":\"Maybe\"}]}",
		  "jobspec.invalid_pod", "/worker_groups/0/pod/tolerations/0/operator", 422 },
		{ NULL, "{\"tolerations\":[{\"key\":\"k\",\"toleration_seconds\":5}]}",
		  "jobspec.invalid_pod", "/worker_groups/0/pod/tolerations/0/toleration_seconds",
		  422 },
		{ NULL, "{\"service_account\":\"Not Valid\"}",
		  "jobspec.invalid_pod", "/worker_groups/0/pod/service_account", 422 },
		{ NULL, "{\"containers\":[{\"name\":\"s\",\"image\":\"busybox\",\"privileged\":true}]}",
		  "jobspec.pod_not_allowed", "/worker_groups/0/pod/containers/0/privileged", 422 },
		{ NULL, "{\"containers\":[{\"name\":\"s\",\"image\":\"busybox\","
		  "\"security_context\":{\"privileged\":true}}]}",
		  "jobspec.pod_not_allowed", "/worker_groups/0/pod/containers/0/security_context",
		  422 },
		{ NULL, "{\"containers\":[{\"name\":\"ray-worker\",\"image\":\"busybox\"}]}",
		  "jobspec.invalid_pod", "/worker_groups/0/pod/containers/0/name", 422 },
		{ NULL, "{\"containers\":[{\"name\":\"s\",\"image\":\"busybox\",\"env\":"
		  "[{\"name\":\"FLEET_X\",\"value\":\"1\"}]}]}",
		  "jobspec.invalid_pod", "/worker_groups/0/pod/containers/0/env/0/name", 422 },
		{ NULL, "{\"containers\":[{\"name\":\"s\",\"image\":\"busybox\","
		  "\"resources\":{\"cpu\":\"lots\",\"memory\":\"1Gi\"}}]}",
		  "jobspec.invalid_pod", "/worker_groups/0/pod/containers/0/resources", 422 },
		{ NULL, "{\"host_network\":true}",
		  "api.unknown_field", "/worker_groups/0/pod/host_network", 400 },
	};

	(void)state;
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++)
		expect_refused(rows[i].head_pod, rows[i].pod, NULL, rows[i].status, rows[i].code,
		    rows[i].pointer);
}

static void
test_ray_params(void **state)
{
	struct job_spec s;
	struct err e = { 0 };
	json_t *j = spec(NULL, NULL, "{\"enable-resource-isolation\":true,"
	    "\"system-reserved-cpu\":\"0.5\",\"system-reserved-memory\":2147483648,"
	    "\"labels\":\"example.com/pool=a,tier=gold\"}");

	(void)state;
	if (!jobspec_from_json(j, &s, &e))
		fail_msg("refused: %s %s at %s", e.code, e.msg, e.pointer);
	assert_string_equal(json_string_value(json_object_get(s.groups[0].ray_start_params,
	    "enable-resource-isolation")), "true");
	assert_string_equal(json_string_value(json_object_get(s.groups[0].ray_start_params,
	    "system-reserved-memory")), "2147483648");
	jobspec_cleanup(&s);
	json_decref(j);
	expect_refused(NULL, NULL, "{\"enable-resource-isolation\":\"yes\"}", 400,
	    "jobspec.invalid_ray_start_param",
	    "/worker_groups/0/ray_start_params/enable-resource-isolation");
	expect_refused(NULL, NULL, "{\"system-reserved-cpu\":\"-1\"}", 400,
	    "jobspec.invalid_ray_start_param", "/worker_groups/0/ray_start_params/system-reserved-cpu");
	expect_refused(NULL, NULL, "{\"labels\":\"ray.io/node-id=x\"}", 400,
	    "jobspec.invalid_ray_start_param", "/worker_groups/0/ray_start_params/labels");
}

/* Every member is kept, and the canonical form parses to itself. */
static void
test_round_trip(void **state)
{
	struct job_spec s, s2;
	struct err e = { 0 };
	json_t *j = spec(FULL, FULL, NULL), *c1, *c2;

	(void)state;
	if (!jobspec_from_json(j, &s, &e))
		fail_msg("refused: %s %s at %s", e.code, e.msg, e.pointer);
	assert_non_null(s.head_pod);
	assert_non_null(s.groups[0].pod);
	assert_int_equal(json_object_size(s.groups[0].pod), 9);
	c1 = jobspec_to_json(&s);
	assert_true(jobspec_from_json(c1, &s2, &e));
	c2 = jobspec_to_json(&s2);
	assert_true(json_equal(c1, c2));
	assert_true(json_equal(json_object_get(json_array_get(json_object_get(c1,
	    "worker_groups"), 0), "pod"), s.groups[0].pod));
	json_decref(c1);
	json_decref(c2);
	jobspec_cleanup(&s);
	jobspec_cleanup(&s2);
	json_decref(j);
}

static void
policy_refuses(const char *policy_text, const char *pod, const char *pointer)
{
	struct job_spec s;
	struct err e = { 0 };
	json_t *j = spec(NULL, pod, NULL), *in = json_loads(policy_text, 0, NULL), *p = NULL;

	assert_non_null(in);
	assert_true(jobspec_pod_policy_parse(in, "/pod_policy", &p, &e));
	assert_true(jobspec_from_json(j, &s, &e));
	if (jobspec_pod_allowed(&s, p, &e))
		fail_msg("policy %s allowed %s", policy_text, pod);
	assert_int_equal(e.status, 422);
	assert_string_equal(e.code, "jobspec.pod_not_allowed");
	assert_string_equal(e.pointer, pointer);
	jobspec_cleanup(&s);
	json_decref(j);
	json_decref(in);
	json_decref(p);
}

static void
test_policy(void **state)
{
	struct job_spec s;
	struct err e = { 0 };
	json_t *j = spec(FULL, FULL, NULL), *d = jobspec_pod_policy_default(), *p = NULL, *in;

	(void)state;
	/* the default allows every member (NULL policy too) */
	assert_true(jobspec_from_json(j, &s, &e));
	assert_true(jobspec_pod_allowed(&s, d, &e));
	assert_true(jobspec_pod_allowed(&s, NULL, &e));
	jobspec_cleanup(&s);
	json_decref(j);
	policy_refuses("{\"volume_kinds\":[\"persistent_volume_claim\"]}",
	    "{\"volumes\":[{\"name\":\"a\",\"persistent_volume_claim\":{\"claim_name\":\"x\"}},"
	    "{\"name\":\"b\",\"secret\":{\"secret_name\":\"s\"}}]}", "/worker_groups/0/pod/volumes/1");
	policy_refuses("{\"csi_drivers\":[\"fsx.csi.aws.com\"]}",
	    "{\"volumes\":[{\"name\":\"a\",\"csi\":{\"driver\":\"blob.csi.azure.com\"}}]}",
	    "/worker_groups/0/pod/volumes/0/csi/driver");
	policy_refuses("{\"env\":false}", "{\"env\":[{\"name\":\"A\",\"value\":\"1\"}]}",
	    "/worker_groups/0/pod/env");
	policy_refuses("{\"containers\":false}", "{\"containers\":[{\"name\":\"s\","
	    "\"image\":\"busybox\"}]}", "/worker_groups/0/pod/containers");
	policy_refuses("{\"service_account\":false}", "{\"service_account\":\"wi\"}",
	    "/worker_groups/0/pod/service_account");
	policy_refuses("{\"env\":false}", "{\"containers\":[{\"name\":\"s\",\"image\":\"b\","
	    "\"env\":[{\"name\":\"A\",\"value\":\"1\"}]}]}", "/worker_groups/0/pod/containers/0/env");
	/* the policy itself: host_path never, unknown kinds and members refused */
	in = json_loads("{\"volume_kinds\":[\"csi\",\"host_path\"]}", 0, NULL);
	assert_false(jobspec_pod_policy_parse(in, "/pod_policy", &p, &e));
	assert_int_equal(e.status, 422);
	assert_string_equal(e.pointer, "/pod_policy/volume_kinds/1");
	json_decref(in);
	in = json_loads("{\"csi_drivers\":[\"nfs.csi.k8s.io\"]}", 0, NULL);
	assert_false(jobspec_pod_policy_parse(in, "/pod_policy", &p, &e));
	assert_string_equal(e.pointer, "/pod_policy/csi_drivers/0");
	json_decref(in);
	in = json_loads("{\"host_network\":true}", 0, NULL);
	assert_false(jobspec_pod_policy_parse(in, "/pod_policy", &p, &e));
	assert_string_equal(e.pointer, "/pod_policy/host_network");
	json_decref(in);
	/* a partial policy is completed with the defaults */
	in = json_loads("{\"labels\":false}", 0, NULL);
	assert_true(jobspec_pod_policy_parse(in, "/pod_policy", &p, &e));
	assert_true(json_is_false(json_object_get(p, "labels")));
	assert_true(json_equal(json_object_get(p, "volume_kinds"), json_object_get(d,
	    "volume_kinds")));
	json_decref(in);
	json_decref(p);
	json_decref(d);
}

static json_t *
find_named(json_t *arr, const char *name)
{
	json_t *v;
	size_t i;

	json_array_foreach(arr, i, v)
		if (strcmp(json_string_value(json_object_get(v, "name")), name) == 0)
			return v;
	return NULL;
}

/* The rendered pod templates carry every member; fleetd's own stay; goldens per provider. */
static void
test_render(void **state)
{
	static const char *const provs[] = { "gke", "aks", "hyperpod" };
	struct job_spec s;
	struct err e = { 0 };
	json_t *j = spec(FULL, FULL, "{\"enable-resource-isolation\":true,"
	    "\"system-reserved-cpu\":\"0.5\",\"system-reserved-memory\":\"2147483648\"}");

	(void)state;
	if (!jobspec_from_json(j, &s, &e))
		fail_msg("refused: %s %s at %s", e.code, e.msg, e.pointer);
	for (int p = 0; p < 3; p++) {
		struct kuberay_input in;
		json_t *m, *w, *pod, *ctr, *md, *objs, *subj;
		char path[256];

		memset(&in, 0, sizeof(in));
		in.spec = &s;
		in.job_id = "5f0c2600-1d2e-4f3a-9b7c-000000002626";
		in.attempt = 1;
		in.environment = "prod";
		in.placement.provider = (enum kuberay_provider)p;
		in.placement.pool = p == 0 ? "a3-ondemand" : p == 1 ? "gpunp" : "p5-ondemand";
		in.placement.cluster = "member-1";
		in.placement.machine_type = p == 0 ? "a3-highgpu-8g" : p == 1 ?
		    "Standard_ND96isr_H100_v5" : "ml.p5.48xlarge";
		m = kuberay_render(&in, &e);
		if (m == NULL)
			fail_msg("render: %s %s", e.code, e.msg);
		w = json_object_get(json_array_get(json_object_get(json_object_get(json_object_get(
		    m, "spec"), "rayClusterSpec"), "workerGroupSpecs"), 0), "template");
		pod = json_object_get(w, "spec");
		md = json_object_get(w, "metadata");
		ctr = json_array_get(json_object_get(pod, "containers"), 0);
		assert_string_equal(json_string_value(json_object_get(ctr, "name")), "ray-worker");
		assert_non_null(find_named(json_object_get(ctr, "env"), "FLEET_JOB_ID"));
		assert_string_equal(json_string_value(json_object_get(find_named(json_object_get(ctr,
		    "env"), "HF_HOME"), "value")), "/data/hf");
		assert_string_equal(json_string_value(json_object_get(json_object_get(json_object_get(
		    find_named(json_object_get(ctr, "env"), "WANDB_API_KEY"), "valueFrom"),
		    "secretKeyRef"), "name")), "wandb");
		assert_int_equal(json_array_size(json_object_get(ctr, "envFrom")), 2);
		assert_string_equal(json_string_value(json_object_get(json_object_get(
		    find_named(json_object_get(pod, "volumes"), "data"), "persistentVolumeClaim"),
		    "claimName")), "datasets");
		assert_non_null(find_named(json_object_get(pod, "volumes"), "dshm"));
		assert_non_null(find_named(json_object_get(ctr, "volumeMounts"), "data"));
		assert_string_equal(json_string_value(json_object_get(json_object_get(md, "labels"),
		    "team")), "research");
		assert_string_equal(json_string_value(json_object_get(json_object_get(md, "labels"),
		    "fleet.io/role")), "worker");
		assert_string_equal(json_string_value(json_object_get(json_object_get(md,
		    "annotations"), "gke-gcsfuse/volumes")), "true");
		assert_string_equal(json_string_value(json_object_get(pod, "serviceAccountName")),
		    "train-wi");
		assert_non_null(find_named(json_object_get(pod, "containers"), "log-shipper"));
		assert_true(json_is_false(json_object_get(json_object_get(find_named(
		    json_object_get(pod, "containers"), "log-shipper"), "securityContext"),
		    "privileged")));
		assert_string_equal(json_string_value(json_object_get(json_object_get(json_array_get(
		    json_object_get(json_object_get(json_object_get(m, "spec"), "rayClusterSpec"),
		    "workerGroupSpecs"), 0), "rayStartParams"), "enable-resource-isolation")), "true");
		/* the pods' own account may acknowledge the checkpoint signal too */
		objs = kuberay_signal_objects(&in, NULL, &e);
		assert_non_null(objs);
		subj = NULL;	/* the RoleBinding's, wherever the list puts it */
		for (size_t k = 0; k < json_array_size(objs); k++)
			if (strcmp(json_string_value(json_object_get(json_array_get(objs, k),
			    "kind")) ?: "", "RoleBinding") == 0)
				subj = json_object_get(json_array_get(objs, k), "subjects");
		assert_int_equal(json_array_size(subj), 2);
		assert_non_null(find_named(subj, "train-wi"));
		json_decref(objs);
		snprintf(path, sizeof(path), FIXTURES "/rayjob-%s-pod.json", provs[p]);
		harness_golden_json(path, m);
		json_decref(m);
	}
	jobspec_cleanup(&s);
	json_decref(j);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_refusals),
		cmocka_unit_test(test_ray_params),
		cmocka_unit_test(test_round_trip),
		cmocka_unit_test(test_policy),
		cmocka_unit_test(test_render),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
