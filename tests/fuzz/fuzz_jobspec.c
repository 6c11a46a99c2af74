/* fuzz_jobspec: the job spec parser/validator on arbitrary JSON text, as POST /v1/jobs
 * receives it; an accepted spec must round-trip through its canonical form. */
#include "core/jsonx.h"
#include "providers/jobspec.h"
#include "tests/fuzz/fuzz.h"

static bool
all_zero(const void *p, size_t n)
{
	const uint8_t *b = p;

	for (size_t i = 0; i < n; i++)
		if (b[i] != 0)
			return false;
	return true;
}

static void
check_accepted(struct job_spec *s)
{
	struct jobspec_totals t;
	struct job_spec again;
	struct err e = { 0 };
	json_t *canon = jobspec_to_json(s), *canon2;

	FUZZ_CHECK(canon != NULL, "no canonical form");
	FUZZ_CHECK(s->ngroups <= JOBSPEC_MAX_GROUPS && s->nregions <= JOBSPEC_MAX_LIST &&
	    s->nproviders <= JOBSPEC_MAX_LIST, "list bounds");
	FUZZ_CHECK(s->queue != NULL && s->name != NULL && s->image != NULL, "required fields");
	for (size_t i = 0; i < s->ngroups; i++) {
		const struct jobspec_group *g = &s->groups[i];

		FUZZ_CHECK(g->name != NULL && g->min_replicas >= 0 &&
		    g->min_replicas <= g->max_replicas, "group %zu replicas %d..%d", i,
		    g->min_replicas, g->max_replicas);
		FUZZ_CHECK(g->cpu_milli > 0 && g->memory_bytes > 0, "group %zu resources", i);
	}
	jobspec_totals(s, &t);
	FUZZ_CHECK(t.cpu_milli_min <= t.cpu_milli_max && t.memory_min <= t.memory_max &&
	    t.accel_min <= t.accel_max && t.pods_min <= t.pods_max && t.pods_min >= 1,
	    "totals out of order");
	FUZZ_CHECK(jobspec_gang_size(s) >= 1, "empty gang");
	/* canonical form is accepted again and is a fixed point */
	if (!jobspec_from_json(canon, &again, &e)) {
		char *text = json_dumps(canon, JSON_SORT_KEYS);

		FUZZ_CHECK(false, "canonical form refused: %s %s %s\n%s", e.code, e.pointer,
		    e.msg, text);
	}
	canon2 = jobspec_to_json(&again);
	FUZZ_CHECK(canon2 != NULL && json_equal(canon, canon2), "canonical form not stable");
	json_decref(canon2);
	json_decref(canon);
	jobspec_cleanup(&again);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct err e = { 0 };
	struct job_spec s;
	json_t *j = jsonx_parse_object((const char *)data, size, &e);

	if (j == NULL)
		return 0;
	memset(&s, 0xa5, sizeof(s));
	if (jobspec_from_json(j, &s, &e)) {
		check_accepted(&s);
		jobspec_cleanup(&s);
	} else {
		FUZZ_CHECK(e.status >= 400 && e.status < 500 && e.code[0] != '\0' &&
		    e.msg[0] != '\0', "refusal without a 4xx error: %d %s", e.status, e.code);
		FUZZ_CHECK(e.pointer[0] == '\0' || e.pointer[0] == '/', "pointer %s", e.pointer);
		FUZZ_CHECK(all_zero(&s, sizeof(s)), "*out not zeroed on failure");
	}
	json_decref(j);
	return 0;
}
