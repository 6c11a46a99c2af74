/* fleetctl: the on-call command line for fleetd — finds the command, parses its flags
 * (every command has --help and -o json), sets up output, and runs it. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "cli/cli.h"

static const struct cli_flag global_flags[] = {
	{ "output", 'o', "FORMAT", "table (default) or json" },
	{ "help", 'h', NULL, "show this help" },
	{ NULL, 0, NULL, NULL },
};

static const struct cli_cmd *const tables[] = { cli_login_cmds, cli_jobs_cmds,
    cli_fleet_cmds, cli_explain_cmds, cli_completion_cmds, NULL };

static const char *const groups[][2] = {
	{ "jobs", "list, inspect, submit, cancel and move jobs" },
	{ "clusters", "list member clusters; cordon, uncordon and drain them" },
	{ "regions", "drain every cluster of a region" },
	{ "operations", "follow long-running operations (drains, moves)" },
	{ "queues", "list queues" },
	{ "teams", "list teams" },
	{ "clouds", "list and inspect clouds" },
	{ "envs", "list and inspect environments" },
	{ NULL, NULL },
};

/* Flag i of cmd counting its own flags first, then the global ones; NULL past the end. */
static const struct cli_flag *
flag_at(const struct cli_cmd *cmd, int i)
{
	int n = 0;

	while (cmd->flags != NULL && cmd->flags[n].name != NULL)
		n++;
	if (i < n)
		return &cmd->flags[i];
	i -= n;
	return i < 2 ? &global_flags[i] : NULL;
}

const char *
cli_arg(const struct cli_args *a, const char *name)
{
	const struct cli_flag *f;

	for (int i = 0; i < CLI_MAX_FLAGS && (f = flag_at(a->cmd, i)) != NULL; i++)
		if (strcmp(f->name, name) == 0)
			return a->val[i];
	return NULL;
}

bool
cli_switch(const struct cli_args *a, const char *name)
{
	return cli_arg(a, name) != NULL;
}

static void
cmd_title(const struct cli_cmd *cmd, char *buf, size_t len)
{
	snprintf(buf, len, "%s%s%s", cmd->group ? cmd->group : "", cmd->group ? " " : "",
	    cmd->name);
}

static void
cmd_help(FILE *out, const struct cli_cmd *cmd)
{
	const struct cli_flag *f;
	char title[64], left[64];

	cmd_title(cmd, title, sizeof(title));
	fprintf(out, "usage: fleetctl %s%s%s [flags]\n\n%s\n\nflags:\n", title,
	    cmd->pos ? " " : "", cmd->pos ? cmd->pos : "", cmd->summary);
	for (int i = 0; (f = flag_at(cmd, i)) != NULL; i++) {
		if (f->short_name != 0)
			snprintf(left, sizeof(left), "-%c, --%s%s%s", f->short_name, f->name,
			    f->arg ? " " : "", f->arg ? f->arg : "");
		else
			snprintf(left, sizeof(left), "    --%s%s%s", f->name, f->arg ? " " : "",
			    f->arg ? f->arg : "");
		fprintf(out, "  %-26s %s\n", left, f->help);
	}
	fprintf(out, "\nexit codes: 0 ok, 1 error, 2 usage, 3 not found\n");
}

static void
group_help(FILE *out, const char *group)
{
	char title[64];

	if (group != NULL)
		fprintf(out, "usage: fleetctl %s COMMAND [flags]\n\ncommands:\n", group);
	else
		fprintf(out, "usage: fleetctl COMMAND [flags]\n\nfleetctl talks to fleetd "
		    "(FLEET_URL, FLEET_TOKEN, or ~/.config/fleet/config from `fleetctl login`)."
		    "\nTables fit the terminal (COLUMNS when not a TTY); NO_COLOR turns colour off;"
		    "\nFLEETCTL_PAGE_SIZE and FLEETCTL_POLL_MS tune list pages and --wait polling."
		    "\n\ncommands:\n");
	for (int t = 0; tables[t] != NULL; t++)
		for (const struct cli_cmd *c = tables[t]; c->name != NULL; c++) {
			if (group != NULL && (c->group == NULL || strcmp(c->group, group) != 0))
				continue;
			if (group == NULL && c->group != NULL)
				continue;
			cmd_title(c, title, sizeof(title));
			snprintf(title + strlen(title), sizeof(title) - strlen(title), "%s%s",
			    c->pos ? " " : "", c->pos ? c->pos : "");
			fprintf(out, "  %-26s %s\n", title, c->summary);
		}
	for (int g = 0; group == NULL && groups[g][0] != NULL; g++)
		fprintf(out, "  %-26s %s\n", groups[g][0], groups[g][1]);
	fprintf(out, "\nRun `fleetctl %s%sCOMMAND --help` for its flags.\n", group ? group : "",
	    group ? " " : "");
}

static const struct cli_cmd *
find_cmd(const char *group, const char *name)
{
	for (int t = 0; tables[t] != NULL; t++)
		for (const struct cli_cmd *c = tables[t]; c->name != NULL; c++) {
			if ((group == NULL) != (c->group == NULL))
				continue;
			if ((group == NULL || strcmp(c->group, group) == 0) &&
			    strcmp(c->name, name) == 0)
				return c;
		}
	return NULL;
}

static bool
is_group(const char *s)
{
	for (int g = 0; groups[g][0] != NULL; g++)
		if (strcmp(groups[g][0], s) == 0)
			return true;
	return false;
}

/* One flag at argv[*i] ("--name", "--name=v", "-x", "-x v"); CLI_USAGE with a message. */
static int
parse_flag(struct cli_args *a, int argc, char **argv, int *i, const char *title)
{
	const char *s = argv[*i], *eq = NULL, *name = s + 1;
	size_t nlen;
	const struct cli_flag *f = NULL;
	int k;

	if (s[1] == '-') {
		name = s + 2;
		eq = strchr(name, '=');
	}
	nlen = eq ? (size_t)(eq - name) : strlen(name);
	for (k = 0; (f = flag_at(a->cmd, k)) != NULL; k++) {
		if (s[1] == '-' && strlen(f->name) == nlen && strncmp(f->name, name, nlen) == 0)
			break;
		if (s[1] != '-' && nlen == 1 && f->short_name == name[0])
			break;
	}
	if (f == NULL || k >= CLI_MAX_FLAGS)
		return cli_fail(CLI_USAGE, "unknown flag %s for `fleetctl %s` (see --help)", s,
		    title);
	if (f->arg == NULL) {
		if (eq != NULL)
			return cli_fail(CLI_USAGE, "--%s takes no value", f->name);
		a->val[k] = "";
	} else if (eq != NULL) {
		a->val[k] = eq + 1;
	} else if (*i + 1 < argc) {
		a->val[k] = argv[++*i];
	} else {
		return cli_fail(CLI_USAGE, "--%s needs a value (%s)", f->name, f->arg);
	}
	return CLI_OK;
}

/* Flags and positionals of argv[from..], in any order; "--" ends flags; a lone "-" is a
 * positional (stdin). */
static int
parse_args(struct cli_args *a, int argc, char **argv, int from)
{
	char title[64];
	bool flags = true;
	int rc;

	cmd_title(a->cmd, title, sizeof(title));
	for (int i = from; i < argc; i++) {
		if (flags && strcmp(argv[i], "--") == 0) {
			flags = false;
		} else if (flags && argv[i][0] == '-' && argv[i][1] != '\0') {
			if ((rc = parse_flag(a, argc, argv, &i, title)) != CLI_OK)
				return rc;
		} else if (a->npos < CLI_MAX_POS) {
			a->pos[a->npos++] = argv[i];
		} else {
			return cli_fail(CLI_USAGE, "too many arguments for `fleetctl %s`", title);
		}
	}
	if (cli_switch(a, "help"))
		return CLI_OK;
	if (a->npos != a->cmd->npos)
		return cli_fail(CLI_USAGE, "`fleetctl %s` takes %s%s (see --help)", title,
		    a->cmd->npos ? "" : "no arguments", a->cmd->npos ? a->cmd->pos : "");
	if (cli_arg(a, "output") && strcmp(cli_arg(a, "output"), "json") != 0 &&
	    strcmp(cli_arg(a, "output"), "table") != 0)
		return cli_fail(CLI_USAGE, "-o takes json or table, not %s", cli_arg(a, "output"));
	return CLI_OK;
}

static int
terminal_width(void)
{
	struct winsize ws;
	const char *cols = getenv("COLUMNS");

	if (isatty(STDOUT_FILENO) && ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0)
		return ws.ws_col;
	if (cols != NULL && atoi(cols) > 0)
		return atoi(cols);
	return 0;
}

static void
ctx_init(struct cli_ctx *c, const struct cli_args *a)
{
	const char *nc = getenv("NO_COLOR");

	memset(c, 0, sizeof(*c));
	c->json = cli_arg(a, "output") != NULL && strcmp(cli_arg(a, "output"), "json") == 0;
	c->color = isatty(STDOUT_FILENO) && (nc == NULL || nc[0] == '\0');
	c->err_tty = isatty(STDERR_FILENO);
	c->width = terminal_width();
	c->now = time(NULL);
}

static int
run(int argc, char **argv)
{
	const struct cli_cmd *cmd;
	struct cli_args a = { 0 };
	struct cli_ctx c;
	int rc, at = 2;

	if (argc < 2) {
		group_help(stderr, NULL);
		return CLI_USAGE;
	}
	if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 ||
	    strcmp(argv[1], "help") == 0) {
		group_help(stdout, NULL);
		return CLI_OK;
	}
	if (is_group(argv[1])) {
		if (argc < 3 || argv[2][0] == '-') {
			bool help = argc >= 3 && (strcmp(argv[2], "--help") == 0 ||
			    strcmp(argv[2], "-h") == 0);

			group_help(help ? stdout : stderr, argv[1]);
			return help ? CLI_OK : CLI_USAGE;
		}
		cmd = find_cmd(argv[1], argv[2]);
		at = 3;
		if (cmd == NULL)
			return cli_fail(CLI_USAGE, "unknown command `%s %s` (see fleetctl %s "
			    "--help)", argv[1], argv[2], argv[1]);
	} else if ((cmd = find_cmd(NULL, argv[1])) == NULL) {
		return cli_fail(CLI_USAGE, "unknown command `%s` (see fleetctl --help)", argv[1]);
	}
	a.cmd = cmd;
	if ((rc = parse_args(&a, argc, argv, at)) != CLI_OK)
		return rc;
	if (cli_switch(&a, "help")) {
		cmd_help(stdout, cmd);
		return CLI_OK;
	}
	ctx_init(&c, &a);
	rc = cli_config_load(&c);
	if (rc == CLI_OK || cmd->run == cli_login_cmds[0].run)
		rc = cmd->run(&c, &a);
	cli_ctx_cleanup(&c);
	return rc;
}

/* `fleetctl -o json jobs ls` means `fleetctl jobs ls -o json`: moves leading -o/--output
 * (with its value) to the end, where every command parses it. */
static void
hoist_output(int argc, char **argv)
{
	int moved = 0;

	while (argc - moved > 2 && argv[1][0] == '-') {
		int n = strncmp(argv[1], "--output=", 9) == 0 ? 1 :
		    strcmp(argv[1], "-o") == 0 || strcmp(argv[1], "--output") == 0 ? 2 : 0;
		char *take[2] = { argv[1], argv[2] };

		if (n == 0 || argc - moved <= n + 1)
			return;
		memmove(&argv[1], &argv[1 + n], (size_t)(argc - 1 - n) * sizeof(*argv));
		argv[argc - n] = take[0];
		if (n == 2)
			argv[argc - 1] = take[1];
		moved += n;
	}
}

int
main(int argc, char **argv)
{
	int rc;

	hoist_output(argc, argv);
	rc = run(argc, argv);

	if (fflush(stdout) != 0 && rc == CLI_OK)
		rc = CLI_ERROR;
	return rc;
}
