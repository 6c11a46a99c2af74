/* test_cron: the concurrency policy's decision table for a RayCronJob's runs (cron_decide)
 * and the job spec's cron options (422 with the pointer, canonical form). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "queue/follow/cron.h"
#include "tests/unit/queue/sched_fixture.h"

/* Children oldest first, written "K" counted and active, "N" new and active, "k" counted
 * and finished, "n" new and finished; the verdicts "R" run, "S" skip, "T" stop (replaced),
 * "D" done, "-" ignore, each followed by its why (f forbid, q quota, r replaced, . none). */
struct decide_case {
	const char			*name;
	enum jobspec_cron_policy	 policy;
	const char			*children;
	int				 room;
	const char			*want;	/* pairs: action, why */
};

static const struct decide_case cases[] = {
	/* Forbid: one run at a time; the counted one goes on */
	{ "forbid first run", JOBSPEC_CRON_FORBID, "N", 1, "R." },
	{ "forbid overlap", JOBSPEC_CRON_FORBID, "KN", 5, "R.Sf" },
	{ "forbid two new at once", JOBSPEC_CRON_FORBID, "NN", 5, "R.Sf" },
	{ "forbid after a finished run", JOBSPEC_CRON_FORBID, "kN", 1, "D.R." },
	{ "forbid no quota", JOBSPEC_CRON_FORBID, "N", 0, "Sq" },
	{ "forbid nothing new", JOBSPEC_CRON_FORBID, "K", 0, "R." },
	{ "forbid finished before counted", JOBSPEC_CRON_FORBID, "n", 1, "-." },
	/* Replace: the newest runs, the older ones are stopped */
	{ "replace overlap", JOBSPEC_CRON_REPLACE, "KN", 1, "Tr R." },
	{ "replace two old", JOBSPEC_CRON_REPLACE, "KKN", 1, "TrTrR." },
	{ "replace new and newer", JOBSPEC_CRON_REPLACE, "NN", 1, "SrR." },
	{ "replace newest counted", JOBSPEC_CRON_REPLACE, "KK", 0, "TrR." },
	{ "replace no quota keeps the old", JOBSPEC_CRON_REPLACE, "KN", 0, "R.Sq" },
	{ "replace first run", JOBSPEC_CRON_REPLACE, "N", 1, "R." },
	{ "replace finished old", JOBSPEC_CRON_REPLACE, "kN", 1, "D.R." },
	/* Allow: overlap while each run fits the quota */
	{ "allow overlap", JOBSPEC_CRON_ALLOW, "KN", 2, "R.R." },
	{ "allow over quota", JOBSPEC_CRON_ALLOW, "KKN", 2, "R.R.Sq" },
	{ "allow two new, room for one", JOBSPEC_CRON_ALLOW, "NN", 1, "R.Sq" },
	{ "allow counted over a shrunk quota", JOBSPEC_CRON_ALLOW, "KK", 1, "R.R." },
	{ "allow no room", JOBSPEC_CRON_ALLOW, "N", 0, "Sq" },
	{ "allow finished and new", JOBSPEC_CRON_ALLOW, "kKN", 2, "D.R.R." },
};

static char
action_char(enum cron_action a)
{
	switch (a) {
	case CRON_RUN:		return 'R';
	case CRON_SKIP:		return 'S';
	case CRON_STOP:		return 'T';
	case CRON_DONE:		return 'D';
	case CRON_IGNORE:	return '-';
	}
	return '?';
}

static char
why_char(enum cron_why w)
{
	switch (w) {
	case CRON_WHY_FORBID:	return 'f';
	case CRON_WHY_QUOTA:	return 'q';
	case CRON_WHY_REPLACED:	return 'r';
	case CRON_WHY_CAPACITY:	return 'c';
	case CRON_WHY_NONE:	return '.';
	}
	return '?';
}

static void
test_decide(void **state)
{
	(void)state;
	for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
		const struct decide_case *k = &cases[c];
		struct cron_child v[8];
		struct cron_verdict out[8];
		char got[32] = "", want[32] = "";
		size_t n = strlen(k->children), w = 0;

		memset(v, 0, sizeof(v));
		for (size_t i = 0; i < n; i++) {
			char ch = k->children[i];

			snprintf(v[i].name, sizeof(v[i].name), "run-%zu", i);
			v[i].known = ch == 'K' || ch == 'k';
			v[i].active = ch == 'K' || ch == 'N';
		}
		for (size_t i = 0; k->want[i] != '\0'; i++)
			if (k->want[i] != ' ')
				want[w++] = k->want[i];
		cron_decide(k->policy, v, n, k->room, out);
		for (size_t i = 0; i < n; i++) {
			got[2 * i] = action_char(out[i].action);
			got[2 * i + 1] = why_char(out[i].why);
		}
		if (strcmp(got, want) != 0)
			fail_msg("%s (%s, %s, room %d): got %s, want %s", k->name,
			    jobspec_cron_policy_name(k->policy), k->children, k->room, got, want);
	}
}

struct spec_case {
	const char	*kind;
	const char	*cron;		/* JSON of "cron", NULL: absent */
	int		 status;	/* 0: accepted */
	const char	*code;
	const char	*pointer;
	const char	*canonical;	/* concurrency_policy in the canonical form, NULL: no cron */
};

static const struct spec_case specs[] = {
	{ "RayCronJob", NULL, 0, NULL, NULL, NULL },
	{ "RayCronJob", "{\"concurrency_policy\":\"Allow\"}", 0, NULL, NULL, "Allow" },
	{ "RayCronJob", "{\"concurrency_policy\":\"Replace\"}", 0, NULL, NULL, "Replace" },
	{ "RayCronJob", "{\"concurrency_policy\":\"Forbid\"}", 0, NULL, NULL, "Forbid" },
	{ "RayCronJob", "{}", 0, NULL, NULL, "Forbid" },
	{ "RayCronJob", "{\"concurrency_policy\":\"allow\"}", 422, "jobspec.invalid_value",
	  "/cron/concurrency_policy", NULL },
	{ "RayCronJob", "{\"concurrency_policy\":7}", 422, "jobspec.invalid_value",
	  "/cron/concurrency_policy", NULL },
	{ "RayCronJob", "{\"policy\":\"Allow\"}", 400, "api.unknown_field", "/cron/policy", NULL },
	{ "RayCronJob", "\"Allow\"", 400, "api.wrong_type", "/cron", NULL },
	{ "RayJob", "{\"concurrency_policy\":\"Allow\"}", 422, "jobspec.not_applicable", "/cron",
	  NULL },
	{ "RayService", "{}", 422, "jobspec.not_applicable", "/cron", NULL },
};

static void
test_spec(void **state)
{
	(void)state;
	for (size_t c = 0; c < sizeof(specs) / sizeof(specs[0]); c++) {
		const struct spec_case *k = &specs[c];
		char body[1024], cron[160] = "";
		struct job_spec s;
		struct err e = { 0 };
		json_t *j, *canon;
		bool ok;

		if (k->cron != NULL)
			snprintf(cron, sizeof(cron), "\"cron\":%s,", k->cron);
		snprintf(body, sizeof(body), "{\"kind\":\"%s\",\"queue\":\"q\",\"name\":\"n\","
		    "\"ray_version\":\"2.52.0\",%s%s%s\"head\":{\"cpu\":\"1\",\"memory\":\"2Gi\"},"
		    "\"worker_groups\":[{\"name\":\"g\",\"replicas\":1,\"cpu\":\"1\","
		    "\"memory\":\"1Gi\"}]}", k->kind, cron,
		    strcmp(k->kind, "RayService") == 0 ? "\"serve_config\":{\"applications\":[]},"
		    : "\"entrypoint\":\"python x.py\",",
		    strcmp(k->kind, "RayCronJob") == 0 ? "\"schedule\":\"0 */6 * * *\"," : "");
		j = json_loads(body, 0, NULL);
		assert_non_null(j);
		ok = jobspec_from_json(j, &s, &e);
		json_decref(j);
		if (k->status != 0) {
			if (ok || e.status != k->status || strcmp(e.code, k->code) != 0 ||
			    strcmp(e.pointer, k->pointer) != 0)
				fail_msg("case %zu: want %d %s at %s, got ok=%d %d %s at %s", c,
				    k->status, k->code, k->pointer, ok, e.status, e.code, e.pointer);
			continue;
		}
		if (!ok)
			fail_msg("case %zu refused: %d %s %s at %s", c, e.status, e.code, e.msg,
			    e.pointer);
		canon = jobspec_to_json(&s);
		if (k->canonical == NULL) {
			assert_null(json_object_get(canon, "cron"));
			assert_int_equal(s.cron_policy, JOBSPEC_CRON_FORBID);	/* the default */
		} else {
			assert_string_equal(json_string_value(json_object_get(json_object_get(canon,
			    "cron"), "concurrency_policy")), k->canonical);
		}
		jobspec_cleanup(&s);
		/* the canonical form reads back the same */
		assert_true(jobspec_from_json(canon, &s, &e));
		assert_int_equal(s.cron_set, k->canonical != NULL);
		jobspec_cleanup(&s);
		json_decref(canon);
	}
}

/* A cron's counted runs ("<id>#run:<name>", queue/sched/loader.c) hold quota like jobs but are no
 * jobs the scheduler's commit can evict (it skips ids with '#'): a reclaim must never count
 * on evicting one, or the preemptor would be admitted over quota while the run goes on. */
static void
test_runs_not_victims(void **state)
{
	struct sched_model *m = fx_model();
	struct arena *a = arena_new();
	struct sched_cycle cy;
	const struct sched_decision *d;
	struct sched_job *j;

	(void)state;
	fx_cluster(m, "c1", "r1", "gpu", 10.0, 4, 8, 0);
	fx_queue(m, "a", "co", 1, "gpu", 16, SCHED_UNSET, SCHED_UNSET);
	fx_queue(m, "b", "co", 1, "gpu", 16, SCHED_UNSET, SCHED_UNSET);
	fx_admitted(m, "cron#run:x", "b", 0, "gpu", 2, 8, "c1", 0, FX_NOW - 60);
	fx_admitted(m, "cron#run:y", "b", 0, "gpu", 2, 8, "c1", 2, FX_NOW - 30);
	j = fx_job(m, "a-0", "a", 0, FX_NOW - 5, "gpu", 1, 8);
	j->can_preempt = true;
	fx_finalize(m);
	assert_int_equal(sched_quota_check(m, j), SCHED_R_OVER_QUOTA);
	sched_cycle_run(m, a, &cy);
	d = fx_decision(m, &cy, "a-0");
	for (size_t v = 0; d->outcome == SCHED_OUT_ADMIT && v < d->n_victims; v++)
		if (strchr(sched_model_job(m, (size_t)d->victims[v])->id, '#') != NULL)
			fail_msg("admitted by evicting %s, which nothing evicts",
			    sched_model_job(m, (size_t)d->victims[v])->id);
	assert_int_equal(d->outcome, SCHED_OUT_PENDING);
	assert_int_equal(fx_usage(m, "b", "gpu"), 32);
	arena_free(a);
	sched_model_free(m);
}

static void
test_expired(void **state)
{
	static const struct {
		const char	*child;
		long long	 now;
		bool		 want;
	} t[] = {
		/* 2026-12-01T10:00:00Z = 1796119200 */
		{ "{\"spec\":{\"ttlSecondsAfterFinished\":600},\"status\":{\"jobDeploymentStatus\":"
		  "\"Complete\",\"endTime\":\"2026-12-01T10:00:00Z\"}}", 1796119200 + 599, false },
		{ "{\"spec\":{\"ttlSecondsAfterFinished\":600},\"status\":{\"jobDeploymentStatus\":"
		  "\"Complete\",\"endTime\":\"2026-12-01T10:00:00Z\"}}", 1796119200 + 600, true },
		{ "{\"spec\":{},\"status\":{\"jobDeploymentStatus\":\"Failed\",\"endTime\":"
		  "\"2026-12-01T10:00:00Z\"}}", 1796119200, true },
		{ "{\"spec\":{\"ttlSecondsAfterFinished\":0},\"status\":{\"jobDeploymentStatus\":"
		  "\"Running\",\"endTime\":\"2026-12-01T10:00:00Z\"}}", 1796119200 + 9999, false },
		{ "{\"status\":{\"jobDeploymentStatus\":\"Complete\"}}", 1796119200, false },
		{ "{}", 1796119200, false },
	};

	(void)state;
	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		json_t *c = json_loads(t[i].child, 0, NULL);

		assert_non_null(c);
		if (cron_expired(c, t[i].now) != t[i].want)
			fail_msg("case %zu: want %d", i, t[i].want);
		json_decref(c);
	}
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_decide),
		cmocka_unit_test(test_spec),
		cmocka_unit_test(test_runs_not_victims),
		cmocka_unit_test(test_expired),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
