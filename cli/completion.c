/* completion: `fleetctl completion bash|zsh` prints a completion script made from the
 * command tables (groups, commands, each command's flags); zsh runs it through
 * bashcompinit. */
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"

static const struct cli_cmd *const *
all_tables(void)
{
	static const struct cli_cmd *const t[] = { cli_login_cmds, cli_jobs_cmds,
	    cli_fleet_cmds, cli_explain_cmds, cli_completion_cmds, NULL };

	return t;
}

/* Words for position 1: groups and top-level commands, each once. */
static void
first_words(void)
{
	char seen[2048] = " ";

	for (const struct cli_cmd *const *t = all_tables(); *t != NULL; t++)
		for (const struct cli_cmd *c = *t; c->name != NULL; c++) {
			const char *w = c->group ? c->group : c->name;
			char key[80];

			snprintf(key, sizeof(key), " %s ", w);
			if (strstr(seen, key) != NULL)
				continue;
			if (strlen(seen) + strlen(w) + 2 < sizeof(seen)) {
				strcat(seen, w);
				strcat(seen, " ");
			}
			printf(" %s", w);
		}
}

static void
flags_of(const struct cli_cmd *c)
{
	for (const struct cli_flag *f = c->flags; f != NULL && f->name != NULL; f++)
		printf(" --%s", f->name);
	printf(" --output --help");
}

static int
completion_run(struct cli_ctx *ctx, const struct cli_args *a)
{
	const char *sh = a->pos[0];
	const struct cli_cmd *const *t;
	const struct cli_cmd *c;

	(void)ctx;
	if (strcmp(sh, "bash") != 0 && strcmp(sh, "zsh") != 0)
		return cli_fail(CLI_USAGE, "completion for bash or zsh, not %s", sh);
	printf("# fleetctl completion for %s: eval \"$(fleetctl completion %s)\"\n", sh, sh);
	if (strcmp(sh, "zsh") == 0)
		printf("autoload -U +X bashcompinit && bashcompinit\n");
	printf("_fleetctl() {\n\tlocal cur=${COMP_WORDS[COMP_CWORD]} w1=${COMP_WORDS[1]}"
	    " w2=${COMP_WORDS[2]} words=\n\tif [ \"$COMP_CWORD\" -eq 1 ]; then\n\t\twords=\"");
	first_words();
	printf("\"\n\telif [ \"$COMP_CWORD\" -eq 2 ]; then\n\t\tcase $w1 in\n");
	/* position 2: the commands of a group (from every table), or a top-level command's flags */
	{
		char done[1024] = " ", key[80];

		for (t = all_tables(); *t != NULL; t++)
			for (c = *t; c->name != NULL; c++) {
				if (c->group == NULL) {
					printf("\t\t%s) words=\"", c->name);
					flags_of(c);
					printf("\";;\n");
					continue;
				}
				snprintf(key, sizeof(key), " %s ", c->group);
				if (strstr(done, key) != NULL || strlen(done) + strlen(key) >= sizeof(done))
					continue;
				strcat(done, c->group);
				strcat(done, " ");
				printf("\t\t%s) words=\"", c->group);
				for (const struct cli_cmd *const *u = all_tables(); *u != NULL; u++)
					for (const struct cli_cmd *d = *u; d->name != NULL; d++)
						if (d->group != NULL && strcmp(d->group, c->group) == 0)
							printf(" %s", d->name);
				printf("\";;\n");
			}
	}
	printf("\t\tesac\n\telse\n\t\tcase \"$w1 $w2\" in\n");
	for (t = all_tables(); *t != NULL; t++)
		for (c = *t; c->name != NULL; c++) {
			if (c->group == NULL)
				continue;
			printf("\t\t\"%s %s\") words=\"", c->group, c->name);
			flags_of(c);
			printf("\";;\n");
		}
	printf("\t\t*) case $w1 in\n");
	for (t = all_tables(); *t != NULL; t++)
		for (c = *t; c->name != NULL; c++)
			if (c->group == NULL) {
				printf("\t\t\t%s) words=\"", c->name);
				flags_of(c);
				printf("\";;\n");
			}
	printf("\t\t\tesac;;\n\t\tesac\n\tfi\n"
	    "\tCOMPREPLY=($(compgen -W \"$words\" -- \"$cur\"))\n}\n"
	    "complete -F _fleetctl fleetctl\n");
	return CLI_OK;
}

const struct cli_cmd cli_completion_cmds[] = {
	{ NULL, "completion", "bash|zsh", 1, "print a shell completion script "
	    "(eval \"$(fleetctl completion bash)\")", NULL, completion_run },
	{ NULL, NULL, NULL, 0, NULL, NULL, NULL },
};
