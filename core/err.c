/* err: filling struct err. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "core/err.h"

/* err_set is err_field with no pointer (core/err.h). */
bool
err_field(struct err *e, int status, const char *code, const char *pointer,
	  const char *fmt, ...)
{
	va_list ap;

	if (e == NULL)
		return false;
	e->status = status;
	snprintf(e->code, sizeof(e->code), "%s", code);
	va_start(ap, fmt);
	vsnprintf(e->msg, sizeof(e->msg), fmt, ap);
	va_end(ap);
	e->detail[0] = '\0';
	snprintf(e->pointer, sizeof(e->pointer), "%s", pointer ? pointer : "");
	e->retry_after = 0;
	return false;
}

bool
err_detail(struct err *e, const char *fmt, ...)
{
	va_list ap;

	if (e == NULL)
		return false;
	va_start(ap, fmt);
	vsnprintf(e->detail, sizeof(e->detail), fmt, ap);
	va_end(ap);
	return false;
}

void
err_clear(struct err *e)
{
	if (e != NULL)
		memset(e, 0, sizeof(*e));
}

bool
err_is_set(const struct err *e)
{
	return e != NULL && e->status != 0;
}
