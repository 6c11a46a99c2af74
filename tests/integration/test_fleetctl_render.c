/* test_fleetctl_render: fleetctl's renderer (compiled in from cli/) against golden text —
 * tables at several widths, cells, views and the progress bar; no server.  The binary
 * against a live fleetd is test_fleetctl. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/table.c"
#include "cli/views.c"
#include "tests/harness/harness.h"

#define FIX		"tests/fixtures/fleetctl/"
#define NOW		1714564800	/* 2024-05-01T12:00:00Z */

/* Every line fits in width terminal columns. */
static void
assert_fits(const char *text, int width)
{
	const char *line = text;

	while (*line != '\0') {
		const char *nl = strchr(line, '\n');
		char buf[1024];

		assert_non_null(nl);
		snprintf(buf, sizeof(buf), "%.*s", (int)(nl - line), line);
		if ((int)cli_text_width(buf) > width)
			fail_msg("line wider than %d: [%s]", width, buf);
		line = nl + 1;
	}
}

struct table_case {
	const char		*input;
	const struct cli_view	*view;
	int			 width;
	bool			 color;
	const char		*golden;
};

static void
test_tables(void **state)
{
	const struct table_case cases[] = {
		{ FIX "jobs.json", &cli_view_jobs, 0, false, FIX "jobs_wide.txt" },
		{ FIX "jobs.json", &cli_view_jobs, 120, false, FIX "jobs_120.txt" },
		{ FIX "jobs.json", &cli_view_jobs, 80, false, FIX "jobs_80.txt" },
		{ FIX "jobs.json", &cli_view_jobs, 0, true, FIX "jobs_color.txt" },
		{ FIX "clusters.json", &cli_view_clusters, 0, false, FIX "clusters_wide.txt" },
		{ FIX "clusters.json", &cli_view_clusters, 90, false, FIX "clusters_90.txt" },
		{ FIX "capacity.json", &cli_view_capacity, 0, false, FIX "capacity.txt" },
		{ FIX "queues.json", &cli_view_queues, 0, false, FIX "queues.txt" },
		{ FIX "events.json", &cli_view_events, 70, false, FIX "events_70.txt" },
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const struct table_case *c = &cases[i];
		struct cli_table_opts o = { .width = c->width, .color = c->color, .now = NOW };
		json_t *in = harness_json_file(c->input);
		char *t = cli_view_render(c->view, json_object_get(in, "items"), &o);

		print_message("table %s\n", c->golden);
		harness_golden(c->golden, t);
		if (c->width > 0)
			assert_fits(t, c->width);
		assert_true((strchr(t, '\033') != NULL) == c->color);
		free(t);
		json_decref(in);
	}
	{	/* the narrow `fleetctl envs ls` of test_fleetctl, compared with this golden */
		char *t = harness_slurp(FIX "envs_ls_50.txt");

		assert_non_null(t);
		assert_fits(t, 50);
		free(t);
	}
}

static void
test_table_edges(void **state)
{
	const struct cli_col cols[] = {
		{ "ID", "id", CLI_CELL_TEXT, CLI_COL_KEEP },
		{ "NAME", "meta.name", CLI_CELL_TEXT, 0 },
		{ "N", "n", CLI_CELL_NUM, CLI_COL_RIGHT },
	};
	struct cli_table_opts o = { .width = 0, .now = NOW };
	json_t *items = json_loads("[{\"id\":\"a\",\"meta\":{\"name\":\"h\\u00e9llo w\\u00f6rld\"},"
	    "\"n\":1.5},{\"id\":\"bbbbbbbb\",\"n\":-0.001},{\"id\":\"c\",\"meta\":null,\"n\":100}]",
	    0, NULL);
	json_t *none = json_array();
	char *t;

	(void)state;
	t = cli_table_render(cols, 3, none, &o);
	assert_string_equal(t, "ID  NAME  N\n");
	free(t);
	json_decref(none);
	t = cli_table_render(cols, 3, items, &o);
	assert_string_equal(t,
	    "ID        NAME           N\n"
	    "a         h\xc3\xa9llo w\xc3\xb6rld  1.5\n"
	    "bbbbbbbb  -              0\n"
	    "c         -            100\n");
	free(t);
	/* 8 + 2 + 4 + 2 + 3 = 19: NAME shrinks to its header, the id stays whole. */
	o.width = 19;
	t = cli_table_render(cols, 3, items, &o);
	assert_string_equal(t,
	    "ID        NAME    N\n"
	    "a         h\xc3\xa9l\xe2\x80\xa6  1.5\n"
	    "bbbbbbbb  -       0\n"
	    "c         -     100\n");
	free(t);
	json_decref(items);
}

struct cell_case {
	const char		*json;
	enum cli_cell_kind	 kind;
	const char		*want;
};

static void
test_cells(void **state)
{
	static const struct cell_case cases[] = {
		{ "null", CLI_CELL_TEXT, "-" },
		{ "\"\"", CLI_CELL_TEXT, "-" },
		{ "true", CLI_CELL_TEXT, "yes" },
		{ "false", CLI_CELL_TEXT, "no" },
		{ "42", CLI_CELL_TEXT, "42" },
		{ "0.126", CLI_CELL_NUM, "0.13" },
		{ "-0.001", CLI_CELL_NUM, "0" },
		{ "2.0", CLI_CELL_NUM, "2" },
		{ "[\"a\",\"b\",3]", CLI_CELL_TEXT, "a,b,3" },
		{ "[]", CLI_CELL_TEXT, "-" },
		{ "{\"a\":1,\"b\":\"x\"}", CLI_CELL_KV, "a=1,b=x" },
		{ "{}", CLI_CELL_KV, "-" },
		{ "{\"a\":1}", CLI_CELL_TEXT, "{\"a\":1}" },
		{ "\"a\\nb\\u001b[31m\"", CLI_CELL_TEXT, "a b [31m" },
		{ "\"2024-05-01T11:59:59Z\"", CLI_CELL_AGE, "1s" },
		{ "\"2024-05-01T11:58:01Z\"", CLI_CELL_AGE, "119s" },
		{ "\"2024-05-01T11:58:00Z\"", CLI_CELL_AGE, "2m" },
		{ "\"2024-05-01T11:00:00Z\"", CLI_CELL_AGE, "60m" },
		{ "\"2024-05-01T12:00:00+02:00\"", CLI_CELL_AGE, "2h" },
		{ "\"2024-04-28T12:00:00.999-01:30\"", CLI_CELL_AGE, "2d" },
		{ "\"2024-05-01T12:00:10Z\"", CLI_CELL_AGE, "0s" },
		{ "\"yesterday\"", CLI_CELL_AGE, "yesterday" },
		{ "\"2024-05-01T09:30:00.5+05:30\"", CLI_CELL_TIME, "2024-05-01 04:00" },
		{ "\"2024-05-01T09:30:00\"", CLI_CELL_TIME, "2024-05-01T09:30:00" },
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		json_t *v = json_loads(cases[i].json, JSON_DECODE_ANY, NULL);
		char *t = cli_cell_format(v, cases[i].kind, NOW);

		if (strcmp(t, cases[i].want) != 0)
			fail_msg("cell %s: want [%s], got [%s]", cases[i].json, cases[i].want, t);
		free(t);
		json_decref(v);
	}
}

static void
test_views(void **state)
{
	struct cli_table_opts o = { .width = 100, .now = NOW };
	const char *const explain[][2] = {
		{ FIX "explain_admitted.json", FIX "explain_admitted.txt" },
		{ FIX "explain_pending.json", FIX "explain_pending.txt" },
		{ FIX "explain_placed.json", FIX "explain_placed.txt" },
		{ FIX "explain_pack.json", FIX "explain_pack.txt" },	/* Racks: (issue 26) */
	};
	json_t *in, *wrapped;
	char *t, *t2;

	(void)state;
	for (size_t i = 0; i < sizeof(explain) / sizeof(explain[0]); i++) {
		in = harness_json_file(explain[i][0]);
		t = cli_explain_render(in, &o);
		harness_golden(explain[i][1], t);
		if (json_object_get(in, "decision") != NULL)
			wrapped = json_pack("{s:O}", "decision", json_object_get(in, "decision"));
		else
			wrapped = json_pack("{s:O}", "decision", in);
		t2 = cli_explain_render(wrapped, &o);
		/* The bare decision shows the same, less the merged top-level lines. */
		if (json_object_get(in, "decision") == NULL)
			assert_string_equal(t, t2);
		else
			assert_non_null(strstr(t, "\nState:      running\n"));
		free(t);
		free(t2);
		json_decref(wrapped);
		json_decref(in);
	}
	in = harness_json_file(FIX "job.json");
	t = cli_object_render(in, &o);
	harness_golden(FIX "job_get.txt", t);
	free(t);
	json_decref(in);
	in = harness_json_file(FIX "plan.json");
	t = cli_plan_render(in, &o);
	harness_golden(FIX "plan.txt", t);
	free(t);
	json_decref(in);
}

struct progress_case {
	const char	*op;
	int		 width;
	const char	*want;
	bool		 done;
};

static void
test_progress(void **state)
{
	static const struct progress_case cases[] = {
		{ "{\"state\":\"running\",\"total\":20,\"moved\":9,\"waiting\":3,\"failed\":1}", 0,
		  "[###############...............]  50%  9/20 moved, 3 waiting, 1 failed  "
		  "(running)", false },
		{ "{\"state\":\"succeeded\",\"total\":20,\"moved\":20,\"waiting\":0,\"failed\":0}", 0,
		  "[##############################] 100%  20/20 moved, 0 waiting, 0 failed  "
		  "(succeeded)", true },
		{ "{\"state\":\"succeeded\",\"total\":0,\"moved\":0,\"waiting\":0,\"failed\":0}", 60,
		  "[########] 100%  0/0 moved, 0 waiting, 0 failed  (succeeded)", true },
		{ "{\"state\":\"pending\",\"total\":4,\"moved\":1}", 50,
		  "  25%  1/4 moved, 0 waiting, 0 failed  (pending)", false },
		{ "{\"id\":\"x\"}", 0,
		  "[##############################] 100%  0/0 moved, 0 waiting, 0 failed  "
		  "(unknown)", true },
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		json_t *op = json_loads(cases[i].op, 0, NULL);
		char *t = cli_progress_render(op, cases[i].width, false);

		assert_string_equal(t, cases[i].want);
		if (cases[i].width > 0)
			assert_true((int)cli_text_width(t) <= cases[i].width);
		assert_int_equal(cli_operation_done(op), cases[i].done);
		free(t);
		json_decref(op);
	}
}

int
main(void)
{
	const struct CMUnitTest render[] = {
		cmocka_unit_test(test_tables),
		cmocka_unit_test(test_table_edges),
		cmocka_unit_test(test_cells),
		cmocka_unit_test(test_views),
		cmocka_unit_test(test_progress),
	};

	return cmocka_run_group_tests_name("fleetctl render", render, NULL, NULL);
}
