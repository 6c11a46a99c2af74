/* test_jobspec: the job spec parser accepts what it should, refuses every bad field with
 * its JSON pointer and code, round-trips through its canonical form, and totals gangs. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "providers/jobspec.h"

static const char *BASE = "{\"kind\":\"RayJob\",\"queue\":\"team-a\",\"name\":\"train-llm\","
    "\"ray_version\":\"2.52.0\",\"entrypoint\":\"python train.py\","
    "\"head\":{\"cpu\":\"4\",\"memory\":\"16Gi\"},"
    "\"worker_groups\":[{\"name\":\"gpu\",\"replicas\":2,\"cpu\":\"32\",\"memory\":\"256Gi\","
    "\"accelerator\":{\"flavor\":\"nvidia-h100-80gb\",\"count\":8}}]}";

/* RFC 7386 merge patch: objects merge, null deletes, anything else replaces. */
static json_t *
merge_patch(json_t *target, json_t *patch)
{
	const char *k;
	json_t *v;

	if (!json_is_object(patch))
		return json_incref(patch);
	if (!json_is_object(target))
		target = json_object();
	else
		target = json_deep_copy(target);
	json_object_foreach(patch, k, v) {
		if (json_is_null(v)) {
			json_object_del(target, k);
		} else {
			json_t *cur = json_object_get(target, k);

			json_object_set_new(target, k, merge_patch(cur, v));
		}
	}
	return target;
}

static json_t *
spec_json(const char *patch)
{
	json_t *base = json_loads(BASE, 0, NULL), *p, *out;

	assert_non_null(base);
	if (patch == NULL)
		return base;
	p = json_loads(patch, 0, NULL);
	assert_non_null(p);
	out = merge_patch(base, p);
	json_decref(base);
	json_decref(p);
	return out;
}

/* ------------------------------------------------------------------ invalid table */

struct bad_case {
	const char *patch;	/* merge patch over BASE */
	const char *code;
	const char *pointer;
};

static const struct bad_case bad[] = {
	{ "{\"colour\":\"red\"}", "api.unknown_field", "/colour" },
	{ "{\"labels\":[\"team\"]}", "api.wrong_type", "/labels" },
	{ "{\"labels\":{\"Team\":\"ml\"}}", "jobspec.invalid_value", "/labels" },
	{ "{\"labels\":{\"team\":7}}", "jobspec.invalid_value", "/labels/team" },
	{ "{\"labels\":{\"team\":\"a-value-that-is-far-too-long-for-a-label-of-sixty-three-"
	  "bytes-xy\"}}", "jobspec.invalid_value", "/labels/team" },
	{ "{\"head\":{\"gpu\":1}}", "api.unknown_field", "/head/gpu" },
	{ "{\"kind\":\"RayThing\"}", "jobspec.invalid_value", "/kind" },
	{ "{\"kind\":null}", "api.missing_field", "/kind" },
	{ "{\"kind\":5}", "api.wrong_type", "/kind" },
	{ "{\"queue\":null}", "api.missing_field", "/queue" },
	{ "{\"queue\":\"Team_A\"}", "jobspec.invalid_name", "/queue" },
	{ "{\"priority_class\":\"-high\"}", "jobspec.invalid_name", "/priority_class" },
	{ "{\"name\":\"\"}", "jobspec.invalid_name", "/name" },
	{ "{\"ray_version\":\"latest\"}", "jobspec.invalid_value", "/ray_version" },
	{ "{\"ray_version\":\"2.52\"}", "jobspec.invalid_value", "/ray_version" },
	{ "{\"image\":\"ray project\"}", "jobspec.invalid_value", "/image" },
	{ "{\"entrypoint\":null}", "api.missing_field", "/entrypoint" },
	{ "{\"entrypoint\":\"\"}", "jobspec.invalid_value", "/entrypoint" },
	{ "{\"schedule\":\"0 * * * *\"}", "jobspec.not_applicable", "/schedule" },
	{ "{\"serve_config\":{\"applications\":[]}}", "jobspec.not_applicable", "/serve_config" },
	{ "{\"head\":null}", "api.missing_field", "/head" },
	{ "{\"head\":{\"cpu\":\"4x\"}}", "jobspec.invalid_quantity", "/head/cpu" },
	{ "{\"head\":{\"cpu\":\"-4\"}}", "jobspec.invalid_quantity", "/head/cpu" },
	{ "{\"head\":{\"cpu\":-2}}", "jobspec.invalid_quantity", "/head/cpu" },
	{ "{\"head\":{\"cpu\":0}}", "jobspec.invalid_quantity", "/head/cpu" },
	{ "{\"head\":{\"cpu\":\"0.0001\"}}", "jobspec.invalid_quantity", "/head/cpu" },
	{ "{\"head\":{\"cpu\":true}}", "jobspec.invalid_quantity", "/head/cpu" },
	{ "{\"head\":{\"cpu\":null}}", "api.missing_field", "/head/cpu" },
	{ "{\"head\":{\"memory\":\"16GB\"}}", "jobspec.invalid_quantity", "/head/memory" },
	{ "{\"head\":{\"memory\":\"-1Gi\"}}", "jobspec.invalid_quantity", "/head/memory" },
	{ "{\"head\":{\"memory\":\"1.5\"}}", "jobspec.invalid_quantity", "/head/memory" },
	{ "{\"head\":{\"memory\":\"\"}}", "jobspec.invalid_quantity", "/head/memory" },
	{ "{\"worker_groups\":[]}", "jobspec.invalid_value", "/worker_groups" },
	{ "{\"worker_groups\":{}}", "api.wrong_type", "/worker_groups" },
	{ "{\"worker_groups\":null}", "api.missing_field", "/worker_groups" },
	{ "{\"worker_groups\":[7]}", "api.wrong_type", "/worker_groups/0" },
	{ "{\"worker_groups\":[{\"name\":\"a\",\"replicas\":0,\"cpu\":1,\"memory\":\"1Gi\"}]}",
	  "jobspec.invalid_value", "/worker_groups/0/replicas" },
	{ "{\"worker_groups\":[{\"name\":\"a\",\"replicas\":-3,\"cpu\":1,\"memory\":\"1Gi\"}]}",
	  "jobspec.invalid_value", "/worker_groups/0/replicas" },
	{ "{\"worker_groups\":[{\"name\":\"a\",\"cpu\":1,\"memory\":\"1Gi\"}]}",
	  "api.missing_field", "/worker_groups/0/replicas" },
	{ "{\"worker_groups\":[{\"name\":\"a\",\"min_replicas\":4,\"max_replicas\":2,"
	  "\"cpu\":1,\"memory\":\"1Gi\"}]}", "jobspec.invalid_value", "/worker_groups/0/min_replicas" },
	{ "{\"worker_groups\":[{\"name\":\"a\",\"min_replicas\":0,\"max_replicas\":0,"
	  "\"cpu\":1,\"memory\":\"1Gi\"}]}", "jobspec.invalid_value", "/worker_groups/0/max_replicas" },
	{ "{\"worker_groups\":[{\"name\":\"a\",\"min_replicas\":1,\"cpu\":1,\"memory\":\"1Gi\"}]}",
	  "api.missing_field", "/worker_groups/0/max_replicas" },
	{ "{\"worker_groups\":[{\"name\":\"a\",\"replicas\":1,\"max_replicas\":3,\"cpu\":1,"
	  "\"memory\":\"1Gi\"}]}", "jobspec.invalid_value", "/worker_groups/0/max_replicas" },
	{ "{\"worker_groups\":[{\"name\":\"a\",\"replicas\":1.5,\"cpu\":1,\"memory\":\"1Gi\"}]}",
	  "api.wrong_type", "/worker_groups/0/replicas" },
	{ "{\"worker_groups\":[{\"name\":\"a\",\"replicas\":1,\"cpu\":\"4x\",\"memory\":\"1Gi\"}]}",
	  "jobspec.invalid_quantity", "/worker_groups/0/cpu" },
	{ "{\"worker_groups\":[{\"name\":\"a\",\"replicas\":1,\"cpu\":1,\"memory\":\"-5Mi\"}]}",
	  "jobspec.invalid_quantity", "/worker_groups/0/memory" },
	{ "{\"worker_groups\":[{\"name\":\"a\",\"replicas\":1,\"cpu\":1}]}",
	  "api.missing_field", "/worker_groups/0/memory" },
	{ "{\"worker_groups\":[{\"name\":\"A B\",\"replicas\":1,\"cpu\":1,\"memory\":\"1Gi\"}]}",
	  "jobspec.invalid_name", "/worker_groups/0/name" },
	{ "{\"worker_groups\":[{\"name\":\"a\",\"replicas\":1,\"cpu\":1,\"memory\":\"1Gi\"},"
	  "{\"name\":\"a\",\"replicas\":1,\"cpu\":1,\"memory\":\"1Gi\"}]}",
	  "jobspec.invalid_value", "/worker_groups/1/name" },
	{ "{\"worker_groups\":[{\"name\":\"a\",\"replicas\":1,\"cpu\":1,\"memory\":\"1Gi\","
	  "\"zone\":\"x\"}]}", "api.unknown_field", "/worker_groups/0/zone" },
	{ "{\"worker_groups\":[{\"name\":\"a\",\"replicas\":1,\"cpu\":1,\"memory\":\"1Gi\","
	  "\"accelerator\":{\"flavor\":\"NVIDIA H100\"}}]}",
	  "jobspec.invalid_name", "/worker_groups/0/accelerator/flavor" },
	{ "{\"worker_groups\":[{\"name\":\"a\",\"replicas\":1,\"cpu\":1,\"memory\":\"1Gi\","
	  "\"accelerator\":{\"flavor\":\"8-h100\"}}]}",
	  "jobspec.invalid_name", "/worker_groups/0/accelerator/flavor" },
	{ "{\"worker_groups\":[{\"name\":\"a\",\"replicas\":1,\"cpu\":1,\"memory\":\"1Gi\","
	  "\"accelerator\":{\"count\":8}}]}",
	  "api.missing_field", "/worker_groups/0/accelerator/flavor" },
	{ "{\"worker_groups\":[{\"name\":\"a\",\"replicas\":1,\"cpu\":1,\"memory\":\"1Gi\","
	  "\"accelerator\":{\"flavor\":\"nvidia-l4\",\"count\":0}}]}",
	  "jobspec.invalid_value", "/worker_groups/0/accelerator/count" },
	{ "{\"topology\":\"ring\"}", "jobspec.invalid_value", "/topology" },
	{ "{\"topology\":{\"type\":\"mesh\"}}", "jobspec.invalid_value", "/topology/type" },
	{ "{\"topology\":\"slice\"}", "api.missing_field", "/topology/shape" },
	{ "{\"topology\":{\"type\":\"slice\",\"shape\":\"2x2x\"}}", "jobspec.invalid_shape",
	  "/topology/shape" },
	{ "{\"topology\":{\"type\":\"slice\",\"shape\":\"16\"}}", "jobspec.invalid_shape",
	  "/topology/shape" },
	{ "{\"topology\":{\"type\":\"slice\",\"shape\":\"0x2x4\"}}", "jobspec.invalid_shape",
	  "/topology/shape" },
	{ "{\"topology\":{\"type\":\"rack\",\"shape\":\"2x2\"}}", "jobspec.invalid_value",
	  "/topology/shape" },
	{ "{\"topology\":{\"type\":\"slice\",\"shape\":\"2x2x3\"}}", "jobspec.invalid_value",
	  "/worker_groups/0/accelerator/count" },
	{ "{\"topology\":{\"type\":\"slice\",\"shape\":\"2x2\"},\"worker_groups\":[{\"name\":\"a\","
	  "\"replicas\":1,\"cpu\":1,\"memory\":\"1Gi\"}]}", "jobspec.invalid_value", "/worker_groups" },
	{ "{\"topology\":{\"type\":\"slice\",\"shape\":\"2x2\",\"size\":4}}", "api.unknown_field",
	  "/topology/size" },
	{ "{\"constraints\":{\"regions\":[\"us-central1\",\"us-central1\"]}}",
	  "jobspec.invalid_value", "/constraints/regions/1" },
	{ "{\"constraints\":{\"regions\":[\"US Central\"]}}", "jobspec.invalid_value",
	  "/constraints/regions/0" },
	{ "{\"constraints\":{\"regions\":\"us-east1\"}}", "api.wrong_type", "/constraints/regions" },
	{ "{\"constraints\":{\"providers\":[\"gke\",\"ec2\"]}}", "jobspec.invalid_value",
	  "/constraints/providers/1" },
	{ "{\"constraints\":{\"spot\":\"yes\"}}", "api.wrong_type", "/constraints/spot" },
	{ "{\"constraints\":{\"max_price\":-1}}", "jobspec.invalid_value", "/constraints/max_price" },
	{ "{\"constraints\":{\"max_price\":\"3\"}}", "api.wrong_type", "/constraints/max_price" },
	{ "{\"constraints\":{\"zones\":[]}}", "api.unknown_field", "/constraints/zones" },
	{ "{\"runtime_env\":\"pip: [x]\"}", "api.wrong_type", "/runtime_env" },
	{ "{\"checkpoint\":{\"grace_seconds\":30}}", "api.missing_field", "/checkpoint/uri" },
	{ "{\"checkpoint\":{\"uri\":\"/mnt/ckpt\"}}", "jobspec.invalid_value", "/checkpoint/uri" },
	{ "{\"checkpoint\":{\"uri\":\"gs://b/c\",\"grace_seconds\":-1}}", "jobspec.invalid_value",
	  "/checkpoint/grace_seconds" },
	{ "{\"checkpoint\":{\"uri\":\"gs://b/c\",\"every\":5}}", "api.unknown_field",
	  "/checkpoint/every" },
	{ "{\"gcs_fault_tolerance\":\"yes\"}", "api.wrong_type", "/gcs_fault_tolerance" },
	{ "{\"gcs_fault_tolerance\":{\"backend\":\"etcd\"}}", "jobspec.invalid_value",
	  "/gcs_fault_tolerance/backend" },
	{ "{\"gcs_fault_tolerance\":{\"backend\":\"redis\"}}", "api.missing_field",
	  "/gcs_fault_tolerance/redis_address" },
	{ "{\"gcs_fault_tolerance\":{\"backend\":\"redis\",\"redis_address\":\"r:6379\","
	  "\"storage_size\":\"1Gi\"}}", "jobspec.invalid_value", "/gcs_fault_tolerance/storage_size" },
	{ "{\"gcs_fault_tolerance\":{\"redis_address\":\"r:6379\"}}", "jobspec.invalid_value",
	  "/gcs_fault_tolerance/redis_address" },
	{ "{\"gcs_fault_tolerance\":{\"backend\":\"redis\",\"redis_address\":\"r:6379\","
	  "\"redis_password_secret\":{\"name\":\"redis\"}}}", "api.missing_field",
	  "/gcs_fault_tolerance/redis_password_secret/key" },
	{ "{\"gcs_fault_tolerance\":{\"storage_size\":\"lots\"}}", "jobspec.invalid_quantity",
	  "/gcs_fault_tolerance/storage_size" },
	{ "{\"ttl_seconds_after_finished\":-5}", "jobspec.invalid_value",
	  "/ttl_seconds_after_finished" },
	{ "{\"active_deadline_seconds\":0}", "jobspec.invalid_value", "/active_deadline_seconds" },
	{ "{\"backoff_limit\":\"3\"}", "api.wrong_type", "/backoff_limit" },
	{ "{\"submission_mode\":\"InteractiveMode\"}", "jobspec.invalid_value", "/submission_mode" },
	{ "{\"deletion_policy\":{\"on_success\":\"DeleteCluster\"}}", "api.missing_field",
	  "/deletion_policy/on_failure" },
	{ "{\"deletion_policy\":{\"on_success\":\"DeleteNone\",\"on_failure\":\"DeleteCluster\"}}",
	  "jobspec.invalid_value", "/deletion_policy/on_success" },
	/* kind-specific */
	{ "{\"kind\":\"RayCronJob\"}", "api.missing_field", "/schedule" },
	{ "{\"kind\":\"RayCronJob\",\"schedule\":\"every hour\"}", "jobspec.invalid_schedule",
	  "/schedule" },
	{ "{\"kind\":\"RayCronJob\",\"schedule\":\"61 * * * *\"}", "jobspec.invalid_schedule",
	  "/schedule" },
	{ "{\"kind\":\"RayCronJob\",\"schedule\":\"0 * * *\"}", "jobspec.invalid_schedule",
	  "/schedule" },
	{ "{\"kind\":\"RayCronJob\",\"schedule\":\"@hourly\",\"time_zone\":\"Europe/Paris Time\"}",
	  "jobspec.invalid_value", "/time_zone" },
	{ "{\"kind\":\"RayCronJob\",\"schedule\":\"@hourly\",\"entrypoint\":null}",
	  "api.missing_field", "/entrypoint" },
	{ "{\"kind\":\"RayCluster\"}", "jobspec.not_applicable", "/entrypoint" },
	{ "{\"kind\":\"RayCluster\",\"entrypoint\":null,\"time_zone\":\"UTC\"}",
	  "jobspec.not_applicable", "/time_zone" },
	{ "{\"kind\":\"RayCluster\",\"entrypoint\":null,\"backoff_limit\":2}",
	  "jobspec.not_applicable", "/backoff_limit" },
	{ "{\"kind\":\"RayService\",\"entrypoint\":null}", "api.missing_field", "/serve_config" },
	{ "{\"kind\":\"RayService\",\"entrypoint\":null,\"serve_config\":{\"apps\":[]}}",
	  "jobspec.invalid_value", "/serve_config/applications" },
	{ "{\"kind\":\"RayService\",\"entrypoint\":null,\"serve_config\":\"applications: []\"}",
	  "api.wrong_type", "/serve_config" },
	/* issue 26: the upgrade deadline is a RayService's, a minute to a week */
	{ "{\"upgrade_deadline_seconds\":600}", "jobspec.not_applicable",
	  "/upgrade_deadline_seconds" },
	{ "{\"kind\":\"RayService\",\"entrypoint\":null,\"serve_config\":{\"applications\":[]},"
	  "\"upgrade_deadline_seconds\":30}", "jobspec.invalid_value", "/upgrade_deadline_seconds" },
	{ "{\"kind\":\"RayService\",\"entrypoint\":null,\"serve_config\":{\"applications\":[]},"
	  "\"upgrade_deadline_seconds\":\"1h\"}", "api.wrong_type", "/upgrade_deadline_seconds" },
};

static void
test_invalid_table(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct job_spec s;
		struct err e = { 0 };
		json_t *j = spec_json(bad[i].patch);
		bool ok = jobspec_from_json(j, &s, &e);

		if (ok || strcmp(e.code, bad[i].code) != 0 || strcmp(e.pointer, bad[i].pointer) != 0)
			fail_msg("case %zu %s: ok=%d code=%s pointer=%s msg=%s (want %s %s)", i,
			    bad[i].patch, ok, e.code, e.pointer, e.msg, bad[i].code, bad[i].pointer);
		assert_int_equal(e.status, 400);
		assert_true(e.msg[0] != '\0');
		/* a refused spec leaves the output zeroed */
		assert_null(s.queue);
		assert_int_equal(s.ngroups, 0);
		json_decref(j);
	}
}

static void
test_not_object(void **state)
{
	struct job_spec s;
	struct err e = { 0 };
	json_t *j = json_array();

	(void)state;
	assert_false(jobspec_from_json(j, &s, &e));
	assert_string_equal(e.code, "api.not_object");
	json_decref(j);
}

/* ------------------------------------------------------------------ valid table */

struct good_case {
	const char *patch;
	int	 gang;		/* pods at min */
	int64_t	 accel_min, accel_max;
	int64_t	 cpu_min_milli;
	int	 per_pod;
};

static const struct good_case good[] = {
	{ NULL, 3, 16, 16, 4000 + 2 * 32000, 8 },
	{ "{\"worker_groups\":[{\"name\":\"cpu\",\"min_replicas\":0,\"max_replicas\":10,"
	  "\"cpu\":\"500m\",\"memory\":\"1G\"}]}", 1, 0, 0, 4000, 0 },
	{ "{\"worker_groups\":[{\"name\":\"gpu\",\"min_replicas\":2,\"max_replicas\":6,"
	  "\"cpu\":2.5,\"memory\":1073741824,\"accelerator\":{\"flavor\":\"nvidia-l4\"}},"
	  "{\"name\":\"cpu\",\"replicas\":3,\"cpu\":\"1\",\"memory\":\"512Mi\"}]}",
	  6, 2, 6, 4000 + 2 * 2500 + 3 * 1000, 1 },
	{ "{\"topology\":{\"type\":\"slice\",\"shape\":\"2x2x4\"},\"worker_groups\":[{\"name\":"
	  "\"tpu\",\"replicas\":2,\"cpu\":\"200\",\"memory\":\"400Gi\",\"accelerator\":{\"flavor\":"
	  "\"tpu-v5p-slice\",\"count\":4}}]}", 1 + 2 * 4, 32, 32, 4000 + 8 * 200000, 4 },
	{ "{\"topology\":\"rack\",\"constraints\":{\"regions\":[\"us-east1\",\"europe-west4\"],"
	  "\"providers\":[\"gke\",\"hyperpod\"],\"spot\":false,\"max_price\":3.5},"
	  "\"checkpoint\":{\"uri\":\"gs://ckpt/llm\",\"grace_seconds\":300},"
	  "\"runtime_env\":{\"pip\":[\"torch\"],\"env_vars\":{\"A\":\"1\"}},"
	  "\"priority_class\":\"high\",\"ttl_seconds_after_finished\":60,"
	  "\"active_deadline_seconds\":7200,\"backoff_limit\":2,\"submission_mode\":\"HTTPMode\","
	  "\"deletion_policy\":{\"on_success\":\"DeleteCluster\",\"on_failure\":\"DeleteWorkers\"},"
	  "\"gcs_fault_tolerance\":{\"backend\":\"redis\",\"redis_address\":\"redis:6379\","
	  "\"redis_password_secret\":{\"name\":\"redis-pw\",\"key\":\"password\"}}}",
	  3, 16, 16, 68000, 8 },
	{ "{\"kind\":\"RayCronJob\",\"schedule\":\"*/15 9-17 * JAN-MAR,dec mon-fri\","
	  "\"time_zone\":\"Europe/Paris\",\"image\":\"ghcr.io/acme/ray:2.52.0-gpu\"}",
	  3, 16, 16, 68000, 8 },
	{ "{\"kind\":\"RayCluster\",\"entrypoint\":null,\"gcs_fault_tolerance\":true,"
	  "\"topology\":\"host\"}", 3, 16, 16, 68000, 8 },
	{ "{\"kind\":\"RayService\",\"entrypoint\":null,\"gcs_fault_tolerance\":"
	  "{\"storage_size\":\"20Gi\",\"storage_class\":\"premium-rwo\"},"
	  "\"serve_config\":{\"applications\":[{\"name\":\"llm\",\"import_path\":\"serve:app\"}]}}",
	  3, 16, 16, 68000, 8 },
	{ "{\"kind\":\"RayService\",\"entrypoint\":null,\"gcs_fault_tolerance\":false,"
	  "\"serve_config\":{\"applications\":[]}}", 3, 16, 16, 68000, 8 },
	{ "{\"labels\":{\"team\":\"vision\",\"cost-center\":\"4711\"}}", 3, 16, 16,
	  4000 + 2 * 32000, 8 },
};

static void
check_round_trip(const struct job_spec *s)
{
	struct job_spec again;
	struct err e = { 0 };
	json_t *a = jobspec_to_json(s), *b;

	assert_non_null(a);
	if (!jobspec_from_json(a, &again, &e))
		fail_msg("canonical form refused: %s at %s", e.msg, e.pointer);
	b = jobspec_to_json(&again);
	if (!json_equal(a, b)) {
		char *x = json_dumps(a, JSON_SORT_KEYS), *y = json_dumps(b, JSON_SORT_KEYS);

		fail_msg("not canonical:\n%s\n%s", x, y);
	}
	assert_int_equal(again.kind, s->kind);
	assert_int_equal(again.ngroups, s->ngroups);
	for (size_t i = 0; i < s->ngroups; i++) {
		assert_int_equal(again.groups[i].cpu_milli, s->groups[i].cpu_milli);
		assert_int_equal(again.groups[i].memory_bytes, s->groups[i].memory_bytes);
		assert_int_equal(again.groups[i].min_replicas, s->groups[i].min_replicas);
		assert_int_equal(again.groups[i].max_replicas, s->groups[i].max_replicas);
		assert_int_equal(again.groups[i].elastic, s->groups[i].elastic);
	}
	assert_int_equal(again.head_memory_bytes, s->head_memory_bytes);
	assert_int_equal(again.gcs.mode, s->gcs.mode);
	assert_int_equal(again.spot, s->spot);
	json_decref(a);
	json_decref(b);
	jobspec_cleanup(&again);
}

/* issue 26: a RayService's own upgrade deadline is kept and written back */
static void
test_upgrade_deadline(void **state)
{
	struct job_spec s;
	struct err e = { 0 };
	json_t *j = spec_json("{\"kind\":\"RayService\",\"entrypoint\":null,\"serve_config\":"
	    "{\"applications\":[]},\"upgrade_deadline_seconds\":600}"), *c;

	(void)state;
	if (!jobspec_from_json(j, &s, &e))
		fail_msg("refused: %s %s at %s", e.code, e.msg, e.pointer);
	assert_int_equal(s.upgrade_deadline_seconds, 600);
	c = jobspec_to_json(&s);
	assert_int_equal(json_integer_value(json_object_get(c, "upgrade_deadline_seconds")), 600);
	json_decref(c);
	jobspec_cleanup(&s);
	json_decref(j);
}

static void
test_valid_table(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		struct job_spec s;
		struct jobspec_totals t;
		struct err e = { 0 };
		json_t *j = spec_json(good[i].patch);

		if (!jobspec_from_json(j, &s, &e))
			fail_msg("case %zu refused: %s %s at %s", i, e.code, e.msg, e.pointer);
		jobspec_totals(&s, &t);
		assert_int_equal(jobspec_gang_size(&s), good[i].gang);
		assert_int_equal(t.accel_min, good[i].accel_min);
		assert_int_equal(t.accel_max, good[i].accel_max);
		assert_int_equal(jobspec_total_accelerators(&s, true), good[i].accel_max);
		assert_int_equal(t.cpu_milli_min, good[i].cpu_min_milli);
		assert_int_equal(t.accel_per_pod, good[i].per_pod);
		check_round_trip(&s);
		jobspec_cleanup(&s);
		json_decref(j);
	}
}

static void
test_defaults_and_fields(void **state)
{
	struct job_spec s;
	struct err e = { 0 };
	json_t *j = spec_json(good[4].patch);

	(void)state;
	assert_true(jobspec_from_json(j, &s, &e));
	assert_string_equal(s.image, "rayproject/ray:2.52.0");
	assert_int_equal(s.topology, JOBSPEC_TOPO_RACK);
	assert_int_equal(s.spot, JOBSPEC_SPOT_NEVER);
	assert_true(s.has_max_price);
	assert_int_equal(s.nregions, 2);
	assert_string_equal(s.providers[1], "hyperpod");
	assert_int_equal(s.checkpoint_grace_seconds, 300);
	assert_int_equal(s.gcs.mode, JOBSPEC_GCS_FT_REDIS);
	assert_string_equal(s.gcs.redis_secret, "redis-pw");
	assert_int_equal(s.delete_on_failure, JOBSPEC_DELETE_WORKERS);
	assert_string_equal(s.submission_mode, "HTTPMode");
	assert_int_equal(s.groups[0].accel_count, 8);
	jobspec_cleanup(&s);
	jobspec_cleanup(&s);	/* idempotent */
	json_decref(j);

	j = spec_json(NULL);
	assert_true(jobspec_from_json(j, &s, &e));
	assert_int_equal(s.ttl_seconds_after_finished, 600);
	assert_int_equal(s.backoff_limit, 0);
	assert_string_equal(s.submission_mode, "K8sJobMode");
	assert_int_equal(s.gcs.mode, JOBSPEC_GCS_FT_DEFAULT);
	assert_int_equal(s.spot, JOBSPEC_SPOT_ANY);
	assert_false(jobspec_is_elastic(&s));
	jobspec_cleanup(&s);
	json_decref(j);
}

/* ------------------------------------------------------------------ units */

static void
test_quantities(void **state)
{
	static const struct { const char *json; bool cpu; bool ok; int64_t want; } q[] = {
		{ "\"4\"", true, true, 4000 }, { "\"500m\"", true, true, 500 },
		{ "2.5", true, true, 2500 }, { "4", true, true, 4000 }, { "\"0.25\"", true, true, 250 },
		{ "\"1k\"", true, true, 1000000 }, { "\"4x\"", true, false, 0 },
		{ "\"-1\"", true, false, 0 }, { "\"\"", true, false, 0 }, { "\"m\"", true, false, 0 },
		{ "\"1.\"", true, false, 0 }, { "\"0\"", true, false, 0 }, { "\"1e3\"", true, false, 0 },
		{ "\"0.5m\"", true, false, 0 }, { "\" 4\"", true, false, 0 },
		{ "\"16Gi\"", false, true, 16LL << 30 }, { "\"512Mi\"", false, true, 512LL << 20 },
		{ "\"1G\"", false, true, 1000000000LL }, { "\"1.5Gi\"", false, true, 3LL << 29 },
		{ "1024", false, true, 1024 }, { "\"100\"", false, true, 100 },
		{ "\"16gi\"", false, false, 0 }, { "\"16GB\"", false, false, 0 },
		{ "\"500m\"", false, false, 0 }, { "1.5", false, false, 0 }, { "-1", false, false, 0 },
		{ "\"2Ei\"", false, false, 0 }, { "\"99999999999999999999\"", false, false, 0 },
	};

	(void)state;
	for (size_t i = 0; i < sizeof(q) / sizeof(q[0]); i++) {
		json_t *v = json_loads(q[i].json, JSON_DECODE_ANY, NULL);
		int64_t out = -1;
		bool ok = q[i].cpu ? jobspec_parse_cpu(v, &out) : jobspec_parse_memory(v, &out);

		if (ok != q[i].ok || (ok && out != q[i].want))
			fail_msg("quantity %s (%s): ok=%d out=%lld", q[i].json,
			    q[i].cpu ? "cpu" : "memory", ok, (long long)out);
		json_decref(v);
	}
}

static void
test_format(void **state)
{
	static const struct { int64_t bytes; const char *want; } m[] = {
		{ 16LL << 30, "16Gi" }, { 1000000000LL, "1G" }, { 1536LL << 20, "1536Mi" },
		{ 1000, "1k" }, { 1001, "1001" }, { 3LL << 40, "3Ti" },
	};
	char buf[32];

	(void)state;
	for (size_t i = 0; i < sizeof(m) / sizeof(m[0]); i++) {
		jobspec_fmt_memory(m[i].bytes, buf, sizeof(buf));
		assert_string_equal(buf, m[i].want);
	}
	jobspec_fmt_cpu(4000, buf, sizeof(buf));
	assert_string_equal(buf, "4");
	jobspec_fmt_cpu(2500, buf, sizeof(buf));
	assert_string_equal(buf, "2500m");
}

static void
test_cron(void **state)
{
	static const char *const ok[] = { "* * * * *", "0 0 * * *", "*/5 * * * *",
		"0 9-17 * * 1-5", "15,45 */2 1,15 * *", "0 0 1 jan *", "0 0 * * SUN",
		"0 0 ? * mon-fri", "30 4 1-31/2 JAN-DEC/3 *", "5/10 * * * *", "@hourly", "@daily",
		"@midnight", "@weekly", "@monthly", "@yearly", "@annually", "@every 1h30m",
		"@every 90s", "@every 1.5h", "@every 1m500ms", "0 0 * * 6", "59 23 31 12 0", NULL };
	static const char *const bad_cron[] = { "", "* * * *", "* * * * * *", "60 * * * *",
		"* 24 * * *", "* * 0 * *", "* * 32 * *", "* * * 13 *", "* * * * 7", "*/0 * * * *",
		"5-1 * * * *", "1,,2 * * * *", ",1 * * * *", "* * * foo *", "* * * * funday",
		"? * * * *", "@reboot", "@every", "@every 5", "@every 500ms", "@every 0x10s", "@every 1e3s", "@every 1.h", "@every 1h 2m", "TZ=UTC 0 0 * * *",
		"a b c d e", "1-2-3 * * * *", "*/ * * * *", "0 0 * * mon-", NULL };

	(void)state;
	for (int i = 0; ok[i] != NULL; i++) {
		if (!jobspec_cron_valid(ok[i]))
			fail_msg("cron refused: '%s'", ok[i]);
	}
	for (int i = 0; bad_cron[i] != NULL; i++) {
		if (jobspec_cron_valid(bad_cron[i]))
			fail_msg("cron accepted: '%s'", bad_cron[i]);
	}
	assert_false(jobspec_cron_valid(NULL));
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_invalid_table),
		cmocka_unit_test(test_not_object),
		cmocka_unit_test(test_valid_table),
		cmocka_unit_test(test_upgrade_deadline),
		cmocka_unit_test(test_defaults_and_fields),
		cmocka_unit_test(test_quantities),
		cmocka_unit_test(test_format),
		cmocka_unit_test(test_cron),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
