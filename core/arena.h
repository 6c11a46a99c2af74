/* arena: bump allocator owned by one request (or one job of work); freed at once. */
#ifndef FLEET_CORE_ARENA_H
#define FLEET_CORE_ARENA_H

#include <stddef.h>

struct arena;

struct arena	*arena_new(void);
void		 arena_free(struct arena *a);		/* accepts NULL */
void		*arena_alloc(struct arena *a, size_t n);	/* zeroed; aborts on OOM */
char		*arena_strdup(struct arena *a, const char *s);	/* NULL -> NULL */
char		*arena_strndup(struct arena *a, const char *s, size_t n);
char		*arena_printf(struct arena *a, const char *fmt, ...)
		    __attribute__((format(printf, 2, 3)));
size_t		 arena_used(const struct arena *a);

#endif
