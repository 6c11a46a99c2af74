/* log: JSON lines, written with one fwrite so concurrent lines never interleave. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/time.h>
#include <time.h>

#include <jansson.h>

#include "core/log.h"

enum log_level log_min_level = LOG_INFO;

static const char *const names[] = { "debug", "info", "warn", "error" };

bool
log_set_level(const char *name)
{
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		if (strcasecmp(name, names[i]) == 0) {
			log_min_level = (enum log_level)i;
			return true;
		}
	}
	return false;
}

void
log_write(enum log_level lvl, const char *req, const char *mod, const char *msg,
	  const char *fields, ...)
{
	json_t *o = NULL, *extra = NULL;
	struct timeval tv;
	struct tm tm;
	char ts[80];
	char *line;
	va_list ap;

	gettimeofday(&tv, NULL);
	gmtime_r(&tv.tv_sec, &tm);
	snprintf(ts, sizeof(ts), "%04d-%02d-%02dT%02d:%02d:%02d.%03ldZ",
	    tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min,
	    tm.tm_sec, (long)(tv.tv_usec / 1000));
	o = json_pack("{s:s, s:s, s:s, s:s}", "ts", ts, "level", names[lvl],
	    "mod", mod ? mod : "-", "msg", msg ? msg : "");
	if (o == NULL)
		return;
	if (req != NULL)
		json_object_set_new(o, "req", json_string(req));
	if (fields != NULL) {
		va_start(ap, fields);
		extra = json_vpack_ex(NULL, 0, fields, ap);
		va_end(ap);
		if (extra != NULL && json_is_object(extra))
			json_object_update(o, extra);
		json_decref(extra);
	}
	line = json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER);
	if (line != NULL) {
		size_t n = strlen(line);

		line[n] = '\n';		/* json_dumps leaves room: replace NUL */
		fwrite(line, 1, n + 1, stdout);
		fflush(stdout);
		free(line);
	}
	json_decref(o);
}
