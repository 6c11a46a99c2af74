/* textbuf: a growing malloc'd text buffer — what Prometheus writers append to — and a
 * whole file read into one. */
#ifndef FLEET_CORE_TEXTBUF_H
#define FLEET_CORE_TEXTBUF_H

#include <stdarg.h>
#include <stddef.h>

/* Appends formatted text to *buf (len used, cap allocated), growing it; aborts on OOM. */
void	textbuf_appendf(char **buf, size_t *len, size_t *cap, const char *fmt, ...)
	    __attribute__((format(printf, 4, 5)));
void	textbuf_vappendf(char **buf, size_t *len, size_t *cap, const char *fmt, va_list ap)
	    __attribute__((format(printf, 4, 0)));
/* Appends n bytes of s (kept NUL-terminated), growing *buf; aborts on OOM. */
void	textbuf_append(char **buf, size_t *len, size_t *cap, const char *s, size_t n);
/* The whole file at path, malloc'd and NUL-terminated (*len, when not NULL, its length);
 * NULL when it cannot be read. */
char	*textbuf_read_file(const char *path, size_t *len);

#endif
