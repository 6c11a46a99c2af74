/* output: fleetctl's printing — JSON for scripts, tables and key/value views for people,
 * and the progress bar that follows a long-running operation. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"

#define POLL_MS_DEFAULT	1000

static struct cli_table_opts
opts(const struct cli_ctx *c)
{
	return (struct cli_table_opts){ .width = c->width, .color = c->color, .now = c->now };
}

void
cli_print_json(const json_t *v)
{
	char *t = json_dumps(v, JSON_INDENT(2) | JSON_ENCODE_ANY);

	if (t != NULL)
		printf("%s\n", t);
	free(t);
}

static int
put_text(char *t)
{
	if (t == NULL)
		return cli_fail(CLI_ERROR, "out of memory");
	fputs(t, stdout);
	free(t);
	return CLI_OK;
}

int
cli_print_table(struct cli_ctx *c, const struct cli_view *v, const json_t *list)
{
	struct cli_table_opts o = opts(c);

	if (c->json) {
		cli_print_json(list);
		return CLI_OK;
	}
	return put_text(cli_view_render(v, json_object_get(list, "items"), &o));
}

int
cli_print_object(struct cli_ctx *c, const json_t *obj)
{
	struct cli_table_opts o = opts(c);

	if (c->json || obj == NULL) {
		if (obj != NULL)
			cli_print_json(obj);
		return CLI_OK;
	}
	return put_text(cli_object_render(obj, &o));
}

int
cli_run_list(struct cli_ctx *c, const struct cli_args *a, const char *path,
	     const struct cli_view *v)
{
	const char *lim = cli_arg(a, "limit");
	long limit = 100;
	json_t *list = NULL;
	char *end;
	int rc;

	if (lim != NULL) {
		limit = strtol(lim, &end, 10);
		if (*lim == '\0' || *end != '\0' || limit < 1 || limit > 100000)
			return cli_fail(CLI_USAGE, "--limit takes a number from 1 to 100000");
	}
	if (cli_switch(a, "all"))
		limit = 0;
	if ((rc = cli_need_token(c)) != CLI_OK)
		return rc;
	if ((rc = cli_list(c, path, (size_t)limit, &list)) != CLI_OK)
		return rc;
	rc = cli_print_table(c, v, list);
	if (rc == CLI_OK && !c->json && !json_is_null(json_object_get(list, "next")))
		fprintf(stderr, "fleetctl: more than %ld shown; use --all or --limit\n", limit);
	json_decref(list);
	return rc;
}

static void
print_failures(struct cli_ctx *c, const json_t *op)
{
	struct cli_table_opts o = opts(c);
	const json_t *f = json_object_get(op, "failures");
	char *t;

	if (!json_is_array(f) || json_array_size(f) == 0)
		return;
	t = cli_view_render(&cli_view_failures, f, &o);
	if (t != NULL)
		fprintf(stderr, "\nfailures:\n%s", t);
	free(t);
}

/* The jobs of op still waiting or moving, with what each waits for (stdout). */
void
cli_print_waiting(struct cli_ctx *c, const json_t *op)
{
	struct cli_table_opts o = opts(c);
	const json_t *jobs = json_object_get(op, "jobs"), *j;
	json_t *open = json_array();
	size_t i;
	char *t;

	json_array_foreach(jobs, i, j) {
		const char *st = json_string_value(json_object_get(j, "state"));

		if (st != NULL && (strcmp(st, "waiting") == 0 || strcmp(st, "moving") == 0))
			json_array_append(open, (json_t *)j);
	}
	if (json_array_size(open) > 0 && (t = cli_view_render(&cli_view_op_jobs, open, &o)) !=
	    NULL) {
		printf("\nnot moved yet:\n%s", t);
		free(t);
	}
	json_decref(open);
}

static void
draw(struct cli_ctx *c, const json_t *op, char **last)
{
	char *line = cli_progress_render(op, c->width > 0 ? c->width - 1 : 79,
	    c->err_tty && c->color);

	if (line == NULL)
		return;
	if (c->err_tty) {
		fprintf(stderr, "\r%s\033[K", line);
	} else if (*last == NULL || strcmp(*last, line) != 0) {
		fprintf(stderr, "%s\n", line);
	}
	fflush(stderr);
	free(*last);
	*last = line;
}

static long
poll_ms(void)
{
	const char *env = getenv("FLEETCTL_POLL_MS");

	return env != NULL && atol(env) > 0 ? atol(env) : POLL_MS_DEFAULT;
}

int
cli_wait_job(struct cli_ctx *c, const char *id)
{
	static const char *const ok[] = { "running", "succeeded", NULL };
	static const char *const bad[] = { "failed", "cancelled", NULL };
	char path[1024], last[64] = "";
	json_t *job = NULL;
	int rc;

	if (!cli_path(path, sizeof(path), "/v1/jobs/", id, NULL))
		return CLI_USAGE;
	for (;;) {
		const char *st;

		if ((rc = cli_call(c, "GET", path, NULL, NULL, &job)) != CLI_OK)
			return rc;
		st = json_string_value(json_object_get(job, "state"));
		st = st != NULL ? st : "unknown";
		if (strcmp(st, last) != 0)
			fprintf(stderr, "job %s: %s\n", id, st);
		snprintf(last, sizeof(last), "%s", st);
		json_decref(job);
		for (int i = 0; ok[i] != NULL; i++)
			if (strcmp(last, ok[i]) == 0)
				return CLI_OK;
		for (int i = 0; bad[i] != NULL; i++)
			if (strcmp(last, bad[i]) == 0)
				return cli_fail(CLI_ERROR, "job %s ended %s", id, last);
		usleep((useconds_t)poll_ms() * 1000);
	}
}

int
cli_wait_operation(struct cli_ctx *c, const json_t *started)
{
	long poll = poll_ms();
	const char *id = json_string_value(json_object_get(started, "id"));
	json_t *op = json_incref((json_t *)started);
	char path[1024], *last = NULL;
	int rc = CLI_OK;

	if (id == NULL || !cli_path(path, sizeof(path), "/v1/operations/", id, NULL)) {
		json_decref(op);
		return cli_fail(CLI_ERROR, "the server's answer has no operation id");
	}
	for (;;) {
		json_t *next = NULL;

		draw(c, op, &last);
		if (cli_operation_done(op))
			break;
		usleep((useconds_t)poll * 1000);
		if ((rc = cli_call(c, "GET", path, NULL, NULL, &next)) != CLI_OK)
			break;
		json_decref(op);
		op = next;
	}
	if (c->err_tty)
		fputc('\n', stderr);
	if (rc == CLI_OK) {
		const char *st = json_string_value(json_object_get(op, "state"));
		json_int_t failed = json_integer_value(json_object_get(op, "failed"));

		if (c->json)
			cli_print_json(op);
		else
			cli_print_waiting(c, op);
		print_failures(c, op);
		if (failed > 0 || (st != NULL && (strcmp(st, "failed") == 0 ||
		    strcmp(st, "cancelled") == 0)))
			rc = cli_fail(CLI_ERROR, "operation %s ended %s with %lld failed", id,
			    st ? st : "unknown", (long long)failed);
	}
	free(last);
	json_decref(op);
	return rc;
}

static const char *
str_or(const json_t *obj, const char *key, const char *dflt)
{
	const char *s = json_string_value(json_object_get(obj, key));

	return s != NULL ? s : dflt;
}

int
cli_report_operation(struct cli_ctx *c, const json_t *op, bool wait)
{
	if (wait)
		return cli_wait_operation(c, op);
	if (c->json) {
		cli_print_json(op);
		return CLI_OK;
	}
	printf("operation %s %s: %lld jobs to move\n", str_or(op, "id", "-"),
	    str_or(op, "state", "started"),
	    (long long)json_integer_value(json_object_get(op, "total")));
	cli_print_waiting(c, op);
	if (!cli_operation_done(op))
		printf("follow it with: fleetctl operations get %s --wait\n",
		    str_or(op, "id", "ID"));
	return CLI_OK;
}
