/* textbuf: vsnprintf into the free tail, doubling when it does not fit. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/textbuf.h"

void
textbuf_vappendf(char **buf, size_t *len, size_t *cap, const char *fmt, va_list ap)
{
	for (;;) {
		va_list copy;
		int n;

		if (*buf == NULL || *cap == 0) {
			*cap = *cap ? *cap : 4096;
			if ((*buf = realloc(*buf, *cap)) == NULL)
				abort();
		}
		va_copy(copy, ap);
		n = vsnprintf(*buf + *len, *cap - *len, fmt, copy);
		va_end(copy);
		if (n < 0)
			return;
		if ((size_t)n < *cap - *len) {
			*len += (size_t)n;
			return;
		}
		*cap = (*cap + (size_t)n) * 2;
		if ((*buf = realloc(*buf, *cap)) == NULL)
			abort();
	}
}

void
textbuf_append(char **buf, size_t *len, size_t *cap, const char *s, size_t n)
{
	if (*buf == NULL || *len + n + 1 > *cap) {
		size_t c = *cap ? *cap : 256;

		while (c < *len + n + 1)
			c *= 2;
		if ((*buf = realloc(*buf, c)) == NULL)
			abort();
		*cap = c;
	}
	memcpy(*buf + *len, s, n);
	*len += n;
	(*buf)[*len] = '\0';
}

void
textbuf_appendf(char **buf, size_t *len, size_t *cap, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	textbuf_vappendf(buf, len, cap, fmt, ap);
	va_end(ap);
}

char *
textbuf_read_file(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	char *buf = NULL;
	long n;

	if (f == NULL)
		return NULL;
	if (fseek(f, 0, SEEK_END) == 0 && (n = ftell(f)) >= 0 && fseek(f, 0, SEEK_SET) == 0 &&
	    (buf = malloc((size_t)n + 1)) != NULL) {
		if (fread(buf, 1, (size_t)n, f) != (size_t)n) {
			free(buf);
			buf = NULL;
		} else {
			buf[n] = '\0';
			if (len != NULL)
				*len = (size_t)n;
		}
	}
	fclose(f);
	return buf;
}
