/* log: one JSON object per line on stdout; the level is tested before any formatting. */
#ifndef FLEET_CORE_LOG_H
#define FLEET_CORE_LOG_H

#include <stdbool.h>

enum log_level { LOG_DEBUG, LOG_INFO, LOG_WARN, LOG_ERROR };

extern enum log_level log_min_level;

bool log_set_level(const char *name);	/* "debug" | "info" | "warn" | "error" */
/* req may be NULL (no request); fields is a jansson pack format or NULL. */
void log_write(enum log_level lvl, const char *req, const char *mod, const char *msg,
	       const char *fields, ...);

#define log_at(lvl, req, mod, msg, ...) do {				\
	if ((lvl) >= log_min_level)					\
		log_write((lvl), (req), (mod), (msg), __VA_ARGS__);	\
} while (0)
#define log_debug(req, mod, msg, ...)	log_at(LOG_DEBUG, req, mod, msg, __VA_ARGS__)
#define log_info(req, mod, msg, ...)	log_at(LOG_INFO, req, mod, msg, __VA_ARGS__)
#define log_warn(req, mod, msg, ...)	log_at(LOG_WARN, req, mod, msg, __VA_ARGS__)
#define log_error(req, mod, msg, ...)	log_at(LOG_ERROR, req, mod, msg, __VA_ARGS__)

#endif
