/* arena: a list of chunks; allocations are 16-byte aligned and zeroed. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/arena.h"

#define CHUNK_MIN	(16 * 1024)

struct chunk {
	struct chunk	*next;
	size_t		 size;		/* usable bytes in data */
	size_t		 used;
	_Alignas(16) unsigned char data[];
};

struct arena {
	struct chunk	*head;
	size_t		 total;		/* bytes handed out */
};

struct arena *
arena_new(void)
{
	struct arena *a = calloc(1, sizeof(*a));

	if (a == NULL)
		abort();
	return a;
}

void
arena_free(struct arena *a)
{
	struct chunk *c, *next;

	if (a == NULL)
		return;
	for (c = a->head; c != NULL; c = next) {
		next = c->next;
		free(c);
	}
	free(a);
}

void *
arena_alloc(struct arena *a, size_t n)
{
	struct chunk *c = a->head;
	size_t need = (n + 15) & ~(size_t)15;
	void *p;

	if (need < n)
		abort();
	if (c == NULL || c->size - c->used < need) {
		size_t size = need > CHUNK_MIN ? need : CHUNK_MIN;

		c = malloc(sizeof(*c) + size);
		if (c == NULL)
			abort();
		c->size = size;
		c->used = 0;
		c->next = a->head;
		a->head = c;
	}
	p = c->data + c->used;
	c->used += need;
	a->total += need;
	memset(p, 0, n);
	return p;
}

char *
arena_strndup(struct arena *a, const char *s, size_t n)
{
	char *p;

	if (s == NULL)
		return NULL;
	p = arena_alloc(a, n + 1);
	memcpy(p, s, n);
	p[n] = '\0';
	return p;
}

char *
arena_strdup(struct arena *a, const char *s)
{
	return s == NULL ? NULL : arena_strndup(a, s, strlen(s));
}

char *
arena_printf(struct arena *a, const char *fmt, ...)
{
	va_list ap;
	int n;
	char *p;

	va_start(ap, fmt);
	n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n < 0)
		return arena_strdup(a, "");
	p = arena_alloc(a, (size_t)n + 1);
	va_start(ap, fmt);
	vsnprintf(p, (size_t)n + 1, fmt, ap);
	va_end(ap);
	return p;
}

size_t
arena_used(const struct arena *a)
{
	return a->total;
}
