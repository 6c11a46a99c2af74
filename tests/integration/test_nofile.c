/* test_nofile: `fleetd serve` started with a low open-file soft limit under a higher hard
 * one raises the soft limit to the hard one (read back from /proc/PID/limits), logs both
 * values, and sizes each thread's idle-connection cache from the raised limit less the
 * room it keeps for its HTTP clients, the database pool and listeners (issue 29 item 7). */
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <cmocka.h>

#include <jansson.h>

#include "core/http.h"
#include "tests/integration/harness.h"

#define LOW	256

static char dburl[512];

/* /proc/pid/limits "Max open files  SOFT  HARD  files": both values. */
static void
proc_nofile(pid_t pid, long long *soft, long long *hard)
{
	char path[64], line[256];
	FILE *f;
	bool found = false;

	snprintf(path, sizeof(path), "/proc/%d/limits", (int)pid);
	f = fopen(path, "r");
	assert_non_null(f);
	while (fgets(line, sizeof(line), f) != NULL) {
		char s[32], h[32];

		if (strncmp(line, "Max open files", 14) != 0)
			continue;
		assert_int_equal(sscanf(line + 14, "%31s %31s", s, h), 2);
		*soft = strcmp(s, "unlimited") == 0 ? -1 : atoll(s);
		*hard = strcmp(h, "unlimited") == 0 ? -1 : atoll(h);
		found = true;
	}
	fclose(f);
	assert_true(found);
}

/* fleetd's "open files" log line, parsed. */
static json_t *
open_files_line(const struct fleetd_proc *p)
{
	char *log = harness_slurp(p->log), *line, *save = NULL;
	json_t *out = NULL;

	assert_non_null(log);
	for (line = strtok_r(log, "\n", &save); line != NULL && out == NULL;
	    line = strtok_r(NULL, "\n", &save)) {
		json_t *o = json_loads(line, 0, NULL);

		if (o != NULL && json_is_string(json_object_get(o, "msg")) &&
		    strcmp(json_string_value(json_object_get(o, "msg")), "open files") == 0)
			out = o;
		else
			json_decref(o);
	}
	if (out == NULL)
		fail_msg("no \"open files\" line in fleetd's log:\n%s", log);
	free(log);
	return out;
}

static void
test_soft_limit_raised_to_hard(void **state)
{
	static const char *const env[] = { "FLEETD_WORKERS=none", NULL };
	struct fleetd_proc p;
	struct rlimit rl, low;
	long long soft = 0, hard = 0, keep;
	json_t *line;

	(void)state;
	assert_int_equal(getrlimit(RLIMIT_NOFILE, &rl), 0);
	if (rl.rlim_max != RLIM_INFINITY && rl.rlim_max <= LOW)
		fail_msg("the hard open-file limit (%llu) must be above %d for this test",
		    (unsigned long long)rl.rlim_max, LOW);
	harness_db_create("nofile", dburl, sizeof(dburl));
	/* fleetd inherits a soft limit of LOW under the same hard limit */
	low = rl;
	low.rlim_cur = LOW;
	assert_int_equal(setrlimit(RLIMIT_NOFILE, &low), 0);
	harness_fleetd_start(&p, dburl, env);
	assert_int_equal(setrlimit(RLIMIT_NOFILE, &rl), 0);

	proc_nofile(p.pid, &soft, &hard);
	assert_true(soft == hard);
	assert_true(hard == (rl.rlim_max == RLIM_INFINITY ? -1 : (long long)rl.rlim_max));

	line = open_files_line(&p);
	assert_int_equal(json_integer_value(json_object_get(line, "soft_limit_at_start")), LOW);
	assert_true(json_integer_value(json_object_get(line, "hard_limit")) == hard);
	if (hard > 0)
		assert_true(json_integer_value(json_object_get(line, "limit")) == hard);
	keep = json_integer_value(json_object_get(line, "idle_connections_per_thread"));
	/* sized from the raised limit: the same arithmetic as core/http.c, and more than the
	 * floor that the low limit alone would have given */
	assert_int_equal(keep, http_keep_for(
	    (long)json_integer_value(json_object_get(line, "limit")),
	    (long)json_integer_value(json_object_get(line, "reserved")),
	    (int)json_integer_value(json_object_get(line, "threads"))));
	assert_int_equal(http_keep_for(LOW,
	    (long)json_integer_value(json_object_get(line, "reserved")),
	    (int)json_integer_value(json_object_get(line, "threads"))), 16);
	if (hard < 0 || hard >= 65536)
		assert_true(keep > 16);
	json_decref(line);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_soft_limit_raised_to_hard),
	};

	return cmocka_run_group_tests(tests, NULL, harness_group_teardown);
}
