/* config: where fleetctl finds its server and token — ~/.config/fleet/config (JSON,
 * mode 0600) overridden by FLEET_URL / FLEET_TOKEN — and `fleetctl login`. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <termios.h>
#include <unistd.h>

#include "cli/cli.h"

static bool
config_path(char *buf, size_t len, const char *leaf)
{
	const char *home = getenv("HOME");
	int n;

	if (home == NULL || home[0] == '\0')
		return false;
	n = snprintf(buf, len, "%s/.config/fleet%s%s", home, leaf ? "/" : "", leaf ? leaf : "");
	return n > 0 && (size_t)n < len;
}

static void
set_str(char **dst, const char *v)
{
	free(*dst);
	*dst = v != NULL ? strdup(v) : NULL;
}

/* Base URL without trailing slashes; false when it is not http(s). */
static bool
normalize_url(char **url)
{
	size_t n;

	if (*url == NULL)
		return true;
	if (strncmp(*url, "http://", 7) != 0 && strncmp(*url, "https://", 8) != 0)
		return false;
	n = strlen(*url);
	while (n > 8 && (*url)[n - 1] == '/')
		(*url)[--n] = '\0';
	return true;
}

int
cli_config_load(struct cli_ctx *c)
{
	char path[1024];
	json_t *cfg = NULL;
	json_error_t je;
	struct stat st;
	const char *v;

	if (config_path(path, sizeof(path), "config") && stat(path, &st) == 0) {
		if ((cfg = json_load_file(path, 0, &je)) == NULL || !json_is_object(cfg)) {
			json_decref(cfg);
			return cli_fail(CLI_ERROR, "cannot read %s: %s", path,
			    cfg == NULL ? je.text : "not a JSON object");
		}
		if ((st.st_mode & 077) != 0)
			fprintf(stderr, "fleetctl: warning: %s is readable by others "
			    "(chmod 600 it)\n", path);
		set_str(&c->url, json_string_value(json_object_get(cfg, "url")));
		set_str(&c->token, json_string_value(json_object_get(cfg, "token")));
		json_decref(cfg);
	}
	if ((v = getenv("FLEET_URL")) != NULL && v[0] != '\0')
		set_str(&c->url, v);
	if ((v = getenv("FLEET_TOKEN")) != NULL && v[0] != '\0')
		set_str(&c->token, v);
	if (c->url == NULL)
		set_str(&c->url, CLI_DEFAULT_URL);
	if (!normalize_url(&c->url))
		return cli_fail(CLI_USAGE, "server URL %s must start with http:// or https://",
		    c->url);
	return CLI_OK;
}

int
cli_need_token(const struct cli_ctx *c)
{
	if (c->token != NULL && c->token[0] != '\0')
		return CLI_OK;
	return cli_fail(CLI_ERROR, "no token: run `fleetctl login` or set FLEET_TOKEN");
}

void
cli_ctx_cleanup(struct cli_ctx *c)
{
	free(c->url);
	if (c->token != NULL)
		explicit_bzero(c->token, strlen(c->token));
	free(c->token);
	c->url = c->token = NULL;
}

/* Writes {url, token} to a temporary file created 0600, then renames it into place. */
static int
config_save(const char *url, const char *token, char *path, size_t len)
{
	char dir[1024], tmp[1100];
	json_t *cfg = json_pack("{s:s, s:s}", "url", url, "token", token);
	char *text = cfg != NULL ? json_dumps(cfg, JSON_INDENT(2)) : NULL;
	int fd = -1, rc = CLI_ERROR;
	size_t n;

	if (text == NULL) {
		rc = cli_fail(CLI_ERROR, "out of memory");
		goto cleanup;
	}
	if (!config_path(dir, sizeof(dir), NULL) || !config_path(path, len, "config")) {
		rc = cli_fail(CLI_ERROR, "HOME is not set: cannot store the config");
		goto cleanup;
	}
	snprintf(tmp, sizeof(tmp), "%s.tmp.%d", path, (int)getpid());
	*strrchr(dir, '/') = '\0';		/* ~/.config */
	if (mkdir(dir, 0700) != 0 && errno != EEXIST)
		goto io_fail;
	snprintf(dir + strlen(dir), sizeof(dir) - strlen(dir), "/fleet");
	if (mkdir(dir, 0700) != 0 && errno != EEXIST)
		goto io_fail;
	if ((fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_TRUNC, 0600)) < 0)
		goto io_fail;
	n = strlen(text);
	if (fchmod(fd, 0600) != 0 || write(fd, text, n) != (ssize_t)n ||
	    write(fd, "\n", 1) != 1 || fsync(fd) != 0 || close(fd) != 0) {
		fd = -1;
		unlink(tmp);
		goto io_fail;
	}
	fd = -1;
	if (rename(tmp, path) != 0) {
		unlink(tmp);
		goto io_fail;
	}
	rc = CLI_OK;
	goto cleanup;
io_fail:
	rc = cli_fail(CLI_ERROR, "cannot write %s: %s", path, strerror(errno));
cleanup:
	if (fd >= 0)
		close(fd);
	if (text != NULL)
		explicit_bzero(text, strlen(text));
	free(text);
	json_decref(cfg);
	return rc;
}

/* One line from stdin after a prompt on stderr, without echo when secret and on a TTY.
 * Malloc'd, without the newline; NULL at end of input. */
static char *
prompt(const char *what, bool secret)
{
	struct termios old, quiet;
	bool noecho = secret && isatty(STDIN_FILENO) && tcgetattr(STDIN_FILENO, &old) == 0;
	char *line = NULL;
	size_t cap = 0;
	ssize_t n;

	fprintf(stderr, "%s: ", what);
	fflush(stderr);
	if (noecho) {
		quiet = old;
		quiet.c_lflag &= ~(tcflag_t)ECHO;
		tcsetattr(STDIN_FILENO, TCSAFLUSH, &quiet);
	}
	n = getline(&line, &cap, stdin);
	if (noecho) {
		tcsetattr(STDIN_FILENO, TCSAFLUSH, &old);
		fputc('\n', stderr);
	}
	if (n < 0) {
		free(line);
		return NULL;
	}
	line[strcspn(line, "\r\n")] = '\0';
	return line;
}

static int
login_run(struct cli_ctx *c, const struct cli_args *a)
{
	char *url = NULL, *token = NULL, path[1024], label[1100];
	json_t *page = NULL;
	int rc = CLI_USAGE;

	url = cli_arg(a, "url") ? strdup(cli_arg(a, "url")) : NULL;
	token = cli_arg(a, "token") ? strdup(cli_arg(a, "token")) : NULL;
	if (url == NULL) {
		snprintf(label, sizeof(label), "fleetd URL [%s]", c->url);
		if ((url = prompt(label, false)) != NULL && url[0] == '\0')
			set_str(&url, c->url);
	}
	if (token == NULL)
		token = prompt("Token", true);
	if (url == NULL || token == NULL || token[0] == '\0') {
		rc = cli_fail(CLI_USAGE, "login needs a URL and a token (--url, --token)");
		goto cleanup;
	}
	if (!normalize_url(&url)) {
		rc = cli_fail(CLI_USAGE, "URL must start with http:// or https://");
		goto cleanup;
	}
	set_str(&c->url, url);
	set_str(&c->token, token);
	if ((rc = cli_call(c, "GET", "/v1/environments?limit=1", NULL, NULL, &page)) != CLI_OK)
		goto cleanup;
	if ((rc = config_save(url, token, path, sizeof(path))) != CLI_OK)
		goto cleanup;
	printf("logged in to %s (saved in %s)\n", url, path);
cleanup:
	json_decref(page);
	if (token != NULL)
		explicit_bzero(token, strlen(token));
	free(token);
	free(url);
	return rc;
}

static const struct cli_flag login_flags[] = {
	{ "url", 0, "URL", "fleetd base URL (asked when absent)" },
	{ "token", 0, "TOKEN", "API token (asked without echo when absent)" },
	{ NULL, 0, NULL, NULL },
};

const struct cli_cmd cli_login_cmds[] = {
	{ NULL, "login", NULL, 0, "check and store the fleetd URL and token in "
	    "~/.config/fleet/config", login_flags, login_run },
	{ NULL, NULL, NULL, 0, NULL, NULL, NULL },
};
