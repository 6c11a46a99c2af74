/* harness: what integration tests share — a scratch database in the test Postgres, a
 * fleetd process started against it, tokens, and HTTP through libcurl. */
#ifndef FLEET_TESTS_HARNESS_H
#define FLEET_TESTS_HARNESS_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include <jansson.h>

struct fleetd_proc {
	pid_t	pid;
	int	port;
	char	url[64];	/* http://127.0.0.1:PORT */
	char	log[256];	/* its stdout+stderr */
	char	dburl[512];
};

struct http_result {
	long	 status;
	char	*body;		/* malloc'd, NUL-terminated */
	size_t	 len;
	char	*headers;	/* malloc'd raw header block */
	json_t	*json;		/* parsed body or NULL */
};

/* Creates database t_<tag>_<pid> in the test Postgres; aborts the test when
 * FLEETD_TEST_DATABASE_URL is unset: a missing database is a failure. */
void	harness_db_create(const char *tag, char *url, size_t urllen);
void	harness_db_drop(const char *url);
int	harness_free_port(void);
/* Starts `fleetd serve --migrate` with extra "NAME=value" env entries (NULL-terminated). */
void	harness_fleetd_start(struct fleetd_proc *p, const char *dburl, const char *const *env);
/* SIGTERM and wait; returns the exit status. */
int	harness_fleetd_stop(struct fleetd_proc *p);
/* `fleetd token create`; returns malloc'd secret. */
char	*harness_token(const char *dburl, const char *role, const char *envs);
/* One HTTP call; body may be NULL; extra headers "Name: value" NULL-terminated.  Every
 * answer of a fleetd started by harness_fleetd_start is also recorded, one JSON line
 * {method, path, status, content_type, body}, in the file named by FLEETD_RESPONSE_LOG
 * (appended to), else /tmp/fleetd-responses-<pid>.jsonl (fresh per test process). */
void	harness_http(struct http_result *r, const char *method, const char *url,
	    const char *token, const char *body, const char *const *headers);
/* Validates every recorded response against api/openapi.yaml (tests/openapi/validate.js:
 * route, status, content type, JSON body against the response schema), naming route and
 * field on any mismatch or on a response no operation describes.  Call it last in the group
 * teardown: a failure fails the teardown and, since cmocka 1.1 does not count teardown
 * failures, also makes the test process exit 1.  On success the default record file is
 * removed and recording starts afresh. */
void	harness_validate_responses(void);
void	harness_http_free(struct http_result *r);
/* Header value from r->headers (case-insensitive), malloc'd, or NULL. */
char	*harness_header(const struct http_result *r, const char *name);
/* Whole file as a malloc'd string (NULL when missing). */
char	*harness_slurp(const char *path);
/* Runs a shell command, returns its exit status. */
int	harness_sh(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif
