/* fuzz: what the libFuzzer targets share — a property check that reports and aborts (so
 * libFuzzer records the input), and a reader that splits the input into fields. */
#ifndef FLEET_TESTS_FUZZ_H
#define FLEET_TESTS_FUZZ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A violated property is a finding, like a sanitizer report: it aborts, unless
 * FUZZ_CONTINUE is set (exploration builds that list every finding of a long run). */
#define FUZZ_CHECK(cond, ...) do {						\
	if (!(cond)) {								\
		fprintf(stderr, "fuzz: property failed at %s:%d: %s: ",		\
		    __FILE__, __LINE__, #cond);					\
		fprintf(stderr, __VA_ARGS__);					\
		fputc('\n', stderr);						\
		if (getenv("FUZZ_CONTINUE") == NULL)				\
			abort();						\
	}									\
} while (0)

/* Cursor over the fuzz input. */
struct fuzz_in {
	const uint8_t	*p;
	size_t		 n;
};

/* Next byte, 0 when the input is exhausted. */
static inline uint8_t
fuzz_byte(struct fuzz_in *in)
{
	uint8_t b = 0;

	if (in->n > 0) {
		b = in->p[0];
		in->p++;
		in->n--;
	}
	return b;
}

/* Next field up to the separator byte (not included) as a malloc'd NUL-terminated string;
 * embedded NULs cut the string short, as C callers would see it. */
static inline char *
fuzz_field(struct fuzz_in *in, uint8_t sep)
{
	const uint8_t *end = memchr(in->p, sep, in->n);
	size_t len = end ? (size_t)(end - in->p) : in->n;
	char *s = malloc(len + 1);

	if (s == NULL)
		abort();
	memcpy(s, in->p, len);
	s[len] = '\0';
	in->p += len;
	in->n -= len;
	if (end != NULL) {
		in->p++;
		in->n--;
	}
	return s;
}

/* The rest of the input as a malloc'd NUL-terminated string. */
static inline char *
fuzz_rest(struct fuzz_in *in, size_t *len)
{
	char *s = malloc(in->n + 1);

	if (s == NULL)
		abort();
	memcpy(s, in->p, in->n);
	s[in->n] = '\0';
	if (len != NULL)
		*len = in->n;
	in->p += in->n;
	in->n = 0;
	return s;
}

#endif
