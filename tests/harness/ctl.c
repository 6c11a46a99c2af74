/* ctl: runs the fleetctl binary in a scratch HOME — exit code, stdout and stderr — and
 * checks that no planted secret (harness_secret) shows in what it printed. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#include "tests/harness/harness.h"

char harness_ctl_home[64];

void
harness_ctl_home_make(void)
{
	if (access(HARNESS_FLEETCTL, X_OK) != 0)
		fail_msg("%s is missing: build the fleetctl target first", HARNESS_FLEETCTL);
	snprintf(harness_ctl_home, sizeof(harness_ctl_home), "/tmp/fleetctl-home.XXXXXX");
	assert_non_null(mkdtemp(harness_ctl_home));
}

void
harness_ctl_home_drop(void)
{
	if (harness_ctl_home[0] != '\0')
		harness_sh("rm -rf '%s'", harness_ctl_home);
	harness_ctl_home[0] = '\0';
}

void
harness_ctl_free(struct harness_ctl *r)
{
	free(r->out);
	free(r->err);
	memset(r, 0, sizeof(*r));
}

/* Child side of ctl_run: environment, stdin, stdout/stderr to files, exec. */
static void __attribute__((noreturn))
ctl_child(const char *in, const char *outp, const char *errp, const char *const *env,
	  const char *const *argv)
{
	int o = open(outp, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	int e = open(errp, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	int i = open(in != NULL ? in : "/dev/null", O_RDONLY);

	dup2(i, 0);
	dup2(o, 1);
	dup2(e, 2);
	unsetenv("FLEET_URL");
	unsetenv("FLEET_TOKEN");
	unsetenv("COLUMNS");
	unsetenv("NO_COLOR");
	setenv("HOME", harness_ctl_home, 1);
	for (int k = 0; env != NULL && env[k] != NULL; k++)
		putenv((char *)env[k]);
	execv(HARNESS_FLEETCTL, (char *const *)argv);
	_exit(127);
}

void
harness_ctl_run(struct harness_ctl *r, const char *in, const char *const *env, const char *const *args)
{
	char outp[128], errp[128], inp[128];
	const char *argv[32] = { "fleetctl" };
	pid_t pid;
	int st, n = 1;

	snprintf(outp, sizeof(outp), "%s/out", harness_ctl_home);
	snprintf(errp, sizeof(errp), "%s/err", harness_ctl_home);
	snprintf(inp, sizeof(inp), "%s/in", harness_ctl_home);
	if (in != NULL) {
		FILE *f = fopen(inp, "w");

		assert_non_null(f);
		fputs(in, f);
		fclose(f);
	}
	while (args[n - 1] != NULL && n < 31) {
		argv[n] = args[n - 1];
		n++;
	}
	argv[n] = NULL;
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0)
		ctl_child(in != NULL ? inp : NULL, outp, errp, env, argv);
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st));
	r->rc = WEXITSTATUS(st);
	r->out = harness_slurp(outp);
	r->err = harness_slurp(errp);
	assert_non_null(r->out);
	assert_non_null(r->err);
	/* A planted secret (a token) never shows, whatever the command. */
	harness_secret_check("fleetctl", r->out);
	harness_secret_check("fleetctl", r->err);
}

void
harness_ctl_one_line(const struct harness_ctl *r, int rc, const char *prefix, const char *suffix)
{
	size_t n = strlen(r->err);

	if (r->rc != rc)
		fail_msg("want exit %d, got %d: %s%s", rc, r->rc, r->out, r->err);
	assert_string_equal(r->out, "");
	assert_true(n > 0 && r->err[n - 1] == '\n');
	assert_null(memchr(r->err, '\n', n - 1));
	if (strncmp(r->err, prefix, strlen(prefix)) != 0)
		fail_msg("want a line starting [%s], got [%s]", prefix, r->err);
	if (suffix != NULL && (n < strlen(suffix) ||
	    strcmp(r->err + n - strlen(suffix), suffix) != 0))
		fail_msg("want a line ending [%s], got [%s]", suffix, r->err);
}

char *
harness_ctl_tty(int cols, const char *const *env, const char *const *args)
{
	int m = posix_openpt(O_RDWR | O_NOCTTY), s, st;
	struct winsize ws = { .ws_row = 24, .ws_col = (unsigned short)cols };
	struct termios t;
	char errp[128], *buf = calloc(1, 65536);
	size_t n = 0;
	ssize_t k;
	pid_t pid;

	assert_true(m >= 0 && grantpt(m) == 0 && unlockpt(m) == 0);
	s = open(ptsname(m), O_RDWR | O_NOCTTY);
	assert_true(s >= 0);
	assert_int_equal(tcgetattr(s, &t), 0);
	cfmakeraw(&t);
	assert_int_equal(tcsetattr(s, TCSANOW, &t), 0);
	assert_int_equal(ioctl(s, TIOCSWINSZ, &ws), 0);
	snprintf(errp, sizeof(errp), "%s/err", harness_ctl_home);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		int e = open(errp, O_WRONLY | O_CREAT | O_TRUNC, 0600);

		dup2(s, 1);
		dup2(e, 2);
		close(m);
		setenv("HOME", harness_ctl_home, 1);
		unsetenv("COLUMNS");
		unsetenv("NO_COLOR");
		for (int i = 0; env != NULL && env[i] != NULL; i++)
			putenv((char *)env[i]);
		{
			const char *argv[32] = { "fleetctl" };

			for (int i = 0; args[i] != NULL && i < 30; i++)
				argv[i + 1] = args[i];
			execv(HARNESS_FLEETCTL, (char *const *)argv);
		}
		_exit(127);
	}
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	fcntl(m, F_SETFL, O_NONBLOCK);
	while (n < 65535 && (k = read(m, buf + n, 65535 - n)) > 0)
		n += (size_t)k;
	close(s);
	close(m);
	return buf;
}

void
harness_strip_ansi(char *s)
{
	char *w = s;

	while (*s != '\0') {
		if (*s == '\033') {
			for (s++; *s != '\0' && *s != 'm'; s++)
				;
			if (*s == 'm')
				s++;
			continue;
		}
		*w++ = *s++;
	}
	*w = '\0';
}
