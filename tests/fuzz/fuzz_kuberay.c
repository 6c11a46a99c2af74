/* fuzz_kuberay: every job spec the parser accepts renders, on each provider's fixed
 * placement, into a deterministic manifest whose names and labels respect Kubernetes'
 * length and grammar limits. */
#include <ctype.h>

#include "core/jsonx.h"
#include "providers/jobspec.h"
#include "providers/kuberay.h"
#include "tests/fuzz/fuzz.h"

static const char JOB_ID[] = "0b7f3c1e-9a4d-4e2b-8c6f-5d1a2b3c4d5e";
static const char LONG_ENV[] = "environment-with-a-rather-long-name-that-fills-the-label-000063";

/* DNS-1123 label (dns1035: must start with a letter). */
static bool
dns_label(const char *s, size_t max, bool dns1035)
{
	size_t n = strlen(s);

	if (n == 0 || n > max || s[n - 1] == '-' || s[0] == '-')
		return false;
	if (dns1035 && !islower((unsigned char)s[0]))
		return false;
	for (size_t i = 0; i < n; i++)
		if (!islower((unsigned char)s[i]) && !isdigit((unsigned char)s[i]) && s[i] != '-')
			return false;
	return true;
}

static bool
label_value(const char *v)
{
	size_t n = strlen(v);

	if (n == 0)
		return true;
	if (n > 63 || !isalnum((unsigned char)v[0]) || !isalnum((unsigned char)v[n - 1]))
		return false;
	for (size_t i = 0; i < n; i++)
		if (!isalnum((unsigned char)v[i]) && v[i] != '-' && v[i] != '_' && v[i] != '.')
			return false;
	return true;
}

/* Label keys: optional DNS prefix (<= 253) and '/', then a name of at most 63. */
static bool
label_key(const char *k)
{
	const char *slash = strrchr(k, '/');
	const char *name = slash ? slash + 1 : k;

	if (slash != NULL && (slash == k || (size_t)(slash - k) > 253))
		return false;
	return *name != '\0' && label_value(name);
}

/* Walks the manifest: every "labels" object, every groupName, every container name. */
static void
check_tree(json_t *v, const char *key)
{
	const char *k;
	json_t *m;
	size_t i;

	if (json_is_object(v)) {
		json_object_foreach(v, k, m) {
			if (strcmp(k, "labels") == 0 && json_is_object(m)) {
				const char *lk;
				json_t *lv;

				json_object_foreach(m, lk, lv) {
					FUZZ_CHECK(json_is_string(lv), "label %s is not a string", lk);
					FUZZ_CHECK(label_key(lk), "bad label key %s", lk);
					FUZZ_CHECK(label_value(json_string_value(lv)),
					    "bad label %s=%s", lk, json_string_value(lv));
				}
			}
			if (strcmp(k, "groupName") == 0)
				FUZZ_CHECK(json_is_string(m) &&
				    dns_label(json_string_value(m), 63, false), "groupName %s",
				    json_string_value(m));
			check_tree(m, k);
		}
	} else if (json_is_array(v)) {
		json_array_foreach(v, i, m)
			check_tree(m, key);
	}
}

static void
render(const struct job_spec *s, enum kuberay_provider prov, uint32_t h)
{
	struct kuberay_input in = {
		.spec = s, .job_id = JOB_ID, .attempt = 1 + (int)(h % 7) * (int)(h % 100003),
		.environment = (h & 0x100) ? LONG_ENV : "prod",
		.placement = {
			.provider = prov, .cluster = "member-1", .pool = "gpu-pool",
			.cpu_pool = (h & 0x200) ? "cpu-pool" : NULL,
			.head_pool = (h & 0x400) ? "head-pool" : NULL,
			.machine_type = "p5.48xlarge", .spot = (h & 0x800) != 0,
			.rack_id = "rack-7", .host = (h & 0x1000) ? "node-3" : NULL,
			.tpu_accelerator = "tpu-v5p-slice",
		},
		.batch = { .kind = (enum kuberay_scheduler)((h >> 13) % 5) },
		.suspend = (h & 0x40000) != 0,
		.checkpoint_deadline = (h & 0x80000) ? "2030-01-01T00:00:00Z" : NULL,
	};
	struct err e = { 0 }, e2 = { 0 };
	json_t *m = kuberay_render(&in, &e), *again;
	const char *name, *ns;
	bool expressible = s->topology != JOBSPEC_TOPO_SLICE || prov == KUBERAY_GKE;

	if (!expressible) {
		FUZZ_CHECK(m == NULL && e.status == 422, "slice rendered off gke");
		return;
	}
	FUZZ_CHECK(m != NULL, "render refused a valid spec on %s: %s %s",
	    kuberay_provider_name(prov), e.code, e.msg);
	name = json_string_value(json_object_get(json_object_get(m, "metadata"), "name"));
	ns = json_string_value(json_object_get(json_object_get(m, "metadata"), "namespace"));
	FUZZ_CHECK(name != NULL && dns_label(name, (size_t)kuberay_name_max(s->kind), true),
	    "object name %s (limit %d)", name ? name : "(null)", kuberay_name_max(s->kind));
	FUZZ_CHECK(ns != NULL && dns_label(ns, 63, false), "namespace %s", ns ? ns : "(null)");
	check_tree(m, "");
	again = kuberay_render(&in, &e2);
	FUZZ_CHECK(again != NULL && json_equal(m, again), "render is not deterministic");
	json_decref(again);
	json_decref(m);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct err e = { 0 };
	struct job_spec s;
	json_t *j = jsonx_parse_object((const char *)data, size, &e);
	uint32_t h = 2166136261u;

	if (j == NULL)
		return 0;
	for (size_t i = 0; i < size; i++)
		h = (h ^ data[i]) * 16777619u;
	if (jobspec_from_json(j, &s, &e)) {
		render(&s, KUBERAY_GKE, h);
		render(&s, KUBERAY_AKS, h);
		render(&s, KUBERAY_HYPERPOD, h);
		jobspec_cleanup(&s);
	}
	json_decref(j);
	return 0;
}
