/* cli: what fleetctl's commands share — the context (server, token, output), the
 * command and flag tables, the HTTP calls with their one-line errors, and printing. */
#ifndef FLEET_CLI_CLI_H
#define FLEET_CLI_CLI_H

#include <stdbool.h>
#include <stddef.h>
#include <time.h>

#include <jansson.h>

#include "cli/views.h"

/* Exit codes. */
#define CLI_OK		0
#define CLI_ERROR	1
#define CLI_USAGE	2
#define CLI_NOT_FOUND	3

#define CLI_MAX_FLAGS	16
#define CLI_MAX_POS	4
#define CLI_DEFAULT_URL	"http://127.0.0.1:8080"

struct cli_ctx {
	char	*url;		/* base URL without a trailing slash, malloc'd */
	char	*token;		/* malloc'd; never printed */
	bool	 json;		/* -o json */
	bool	 color;		/* stdout is a TTY and NO_COLOR is unset */
	bool	 err_tty;	/* stderr is a TTY (progress redraws in place) */
	int	 width;		/* terminal columns, 0 = unlimited */
	time_t	 now;
};

struct cli_flag {
	const char	*name;		/* "state" for --state */
	char		 short_name;	/* 'f' for -f, or 0 */
	const char	*arg;		/* "STATE"; NULL for a switch */
	const char	*help;
};

struct cli_args;

struct cli_cmd {
	const char		*group;		/* "jobs", or NULL for a top-level command */
	const char		*name;		/* "ls" */
	const char		*pos;		/* positional synopsis "ID", or NULL */
	int			 npos;		/* exact number of positional arguments */
	const char		*summary;
	const struct cli_flag	*flags;		/* { NULL } terminated, or NULL */
	int			(*run)(struct cli_ctx *c, const struct cli_args *a);
};

struct cli_args {
	const struct cli_cmd	*cmd;
	const char		*pos[CLI_MAX_POS];
	int			 npos;
	const char		*val[CLI_MAX_FLAGS];	/* by flag index; "" for a set switch */
};

/* Command tables, each ended by an entry whose name is NULL. */
extern const struct cli_cmd cli_jobs_cmds[];
extern const struct cli_cmd cli_fleet_cmds[];
extern const struct cli_cmd cli_login_cmds[];
extern const struct cli_cmd cli_completion_cmds[];
extern const struct cli_cmd cli_explain_cmds[];

/* Value of --name, or NULL when absent ("" for a set switch). */
const char *cli_arg(const struct cli_args *a, const char *name);
bool	cli_switch(const struct cli_args *a, const char *name);

/* "fleetctl: <message>" on stderr; returns code. */
int	cli_fail(int code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Config (config.c).  Loads ~/.config/fleet/config, then FLEET_URL / FLEET_TOKEN;
 * CLI_ERROR with a message when the file is unreadable. */
int	cli_config_load(struct cli_ctx *c);
/* CLI_OK when a token is known, else the one line that says how to get one. */
int	cli_need_token(const struct cli_ctx *c);
void	cli_ctx_cleanup(struct cli_ctx *c);

/* HTTP (client.c).  path is relative to the base URL ("/v1/jobs?state=running").
 * On a 2xx answer stores the parsed body in *out (NULL when empty; caller decrefs) and
 * returns CLI_OK; otherwise prints one line — the problem's title, detail and code, or
 * "cannot reach URL: ..." — and returns CLI_NOT_FOUND for 404, else CLI_ERROR.
 * status (may be NULL) receives the HTTP status. */
int	cli_call(struct cli_ctx *c, const char *method, const char *path, const json_t *body,
	    long *status, json_t **out);
/* Follows "next" from path until limit items (0 = all) or the end; *out is
 * {"items": [...], "next": cursor-or-null}. */
int	cli_list(struct cli_ctx *c, const char *path, size_t limit, json_t **out);

/* Follows an SSE stream (path with follow=true): fn gets each event (borrowed) and returns
 * false to end it (CLI_OK).  A dropped stream is resumed with Last-Event-ID. */
typedef bool (*cli_event_fn)(json_t *ev, void *arg);
int	cli_stream(struct cli_ctx *c, const char *path, cli_event_fn fn, void *arg);
/* URL building; each is false (with a message printed) when buf is too small.
 * prefix + percent-encoded id + suffix ("/v1/jobs/", id, "/events"). */
bool	cli_path(char *buf, size_t len, const char *prefix, const char *id, const char *suffix);
/* Appends "?k=v" or "&k=v" (v percent-encoded) when v is not NULL. */
bool	cli_query(char *buf, size_t len, const char *k, const char *v);

/* Output (main.c).  Writes JSON (-o json) or the text, with a final newline. */
void	cli_print_json(const json_t *v);
int	cli_print_table(struct cli_ctx *c, const struct cli_view *v, const json_t *list);
int	cli_print_object(struct cli_ctx *c, const json_t *obj);
/* Runs a list command: GET path (+ --limit/--all) and prints it as v. */
int	cli_run_list(struct cli_ctx *c, const struct cli_args *a, const char *path,
	    const struct cli_view *v);

/* Operations (wait.c): polls GET /v1/operations/{id} with a progress bar on stderr
 * until it is done; prints failures.  CLI_OK only when nothing failed. */
int	cli_wait_operation(struct cli_ctx *c, const json_t *op);
/* Polls GET /v1/jobs/{id} (state changes on stderr) until the job runs again or ends;
 * CLI_OK when it is running or succeeded. */
int	cli_wait_job(struct cli_ctx *c, const char *id);
/* Prints a started operation (id, state, counts), then waits when wait is true. */
int	cli_report_operation(struct cli_ctx *c, const json_t *op, bool wait);
/* The jobs of an operation not moved yet and what each waits for, as a table. */
void	cli_print_waiting(struct cli_ctx *c, const json_t *op);

#endif
