/* err: the one error record every fallible function fills, once, and passes up. */
#ifndef FLEET_CORE_ERR_H
#define FLEET_CORE_ERR_H

#include <stdbool.h>

struct err {
	int	status;		/* HTTP status to answer with */
	char	code[48];	/* stable: "queue.job_not_found" */
	char	msg[256];	/* short, lowercase, no final period */
	char	detail[512];	/* optional full sentence */
	char	pointer[128];	/* optional JSON pointer of the offending field */
	int	retry_after;	/* seconds for Retry-After, 0 = none */
};

/* Fills e (when not NULL) and returns false, so callers can write
 * `return err_field(e, 400, "x.bad", "/name", "name %s is taken", name);`; pointer is the
 * JSON pointer naming the field at fault, NULL for none. */
bool err_field(struct err *e, int status, const char *code, const char *pointer,
	       const char *fmt, ...) __attribute__((format(printf, 5, 6)));
/* err_field with no pointer: `return err_set(e, 404, "x.not_found", "x %s not found", id);`
 * (fmt and its arguments are the ...). */
#define err_set(e, status, code, ...) err_field((e), (status), (code), NULL, __VA_ARGS__)
/* Sets the optional detail sentence; returns false. */
bool err_detail(struct err *e, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void err_clear(struct err *e);
bool err_is_set(const struct err *e);

#endif
