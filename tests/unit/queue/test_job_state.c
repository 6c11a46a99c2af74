/* test_job_state: the state names round-trip, and each predicate holds for exactly the
 * states the migrations and the SQL lists of job_state.h name. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "queue/job_state.h"

struct state_case {
	const char	*name;
	enum job_state	 state;
	bool		 final, live, placed;
};

static const struct state_case cases[] = {
	{ "pending", JOB_PENDING, false, true, false },
	{ "admitted", JOB_ADMITTED, false, true, true },
	{ "dispatched", JOB_DISPATCHED, false, true, true },
	{ "running", JOB_RUNNING, false, true, true },
	{ "preempted", JOB_PREEMPTED, false, true, false },
	{ "moving", JOB_MOVING, false, true, false },
	{ "succeeded", JOB_SUCCEEDED, true, false, false },
	{ "failed", JOB_FAILED, true, false, false },
	{ "cancelled", JOB_CANCELLED, true, false, false },
};

#define NCASES	(sizeof(cases) / sizeof(cases[0]))

static void
test_names(void **state)
{
	(void)state;
	for (size_t i = 0; i < NCASES; i++) {
		assert_int_equal(job_state_parse(cases[i].name), cases[i].state);
		assert_string_equal(job_state_name(cases[i].state), cases[i].name);
	}
	assert_int_equal(job_state_parse(NULL), JOB_STATE_UNKNOWN);
	assert_int_equal(job_state_parse("Running"), JOB_STATE_UNKNOWN);
	assert_int_equal(job_state_parse(""), JOB_STATE_UNKNOWN);
	assert_string_equal(job_state_name(JOB_STATE_UNKNOWN), "unknown");
	assert_string_equal(job_state_name((enum job_state)99), "unknown");
}

static void
test_predicates(void **state)
{
	(void)state;
	for (size_t i = 0; i < NCASES; i++) {
		assert_int_equal(job_state_is_final(cases[i].state), cases[i].final);
		assert_int_equal(job_state_is_live(cases[i].state), cases[i].live);
		assert_int_equal(job_state_is_placed(cases[i].state), cases[i].placed);
	}
	assert_false(job_state_is_final(JOB_STATE_UNKNOWN));
	assert_false(job_state_is_live(JOB_STATE_UNKNOWN));
	assert_false(job_state_is_placed(JOB_STATE_UNKNOWN));
}

/* The SQL lists name the same states as the predicates. */
static void
test_sql_lists(void **state)
{
	(void)state;
	for (size_t i = 0; i < NCASES; i++) {
		char quoted[32];

		snprintf(quoted, sizeof(quoted), "'%s'", cases[i].name);
		assert_int_equal(strstr(JOB_STATES_FINAL_SQL, quoted) != NULL, cases[i].final);
		assert_int_equal(strstr(JOB_STATES_LIVE_SQL, quoted) != NULL, cases[i].live);
		assert_int_equal(strstr(JOB_STATES_PLACED_SQL, quoted) != NULL, cases[i].placed);
	}
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_names),
		cmocka_unit_test(test_predicates),
		cmocka_unit_test(test_sql_lists),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
