/* table: pure rendering of server JSON for fleetctl — aligned tables sized to a width,
 * key/value views of one object, cell formatting.  No I/O: text in, text out. */
#ifndef FLEET_CLI_TABLE_H
#define FLEET_CLI_TABLE_H

#include <stdbool.h>
#include <stddef.h>
#include <time.h>

#include <jansson.h>

enum cli_cell_kind {
	CLI_CELL_TEXT,		/* strings as is, numbers, yes/no, arrays joined with "," */
	CLI_CELL_STATE,		/* text, coloured by value on a colour terminal */
	CLI_CELL_AGE,		/* RFC 3339 time -> "42s", "5m", "3h", "12d" before now */
	CLI_CELL_TIME,		/* RFC 3339 time -> "2024-05-01 12:00" in UTC */
	CLI_CELL_KV,		/* object -> "k=v,k=v" */
	CLI_CELL_NUM,		/* number with at most 2 decimals, trailing zeros dropped */
};

#define CLI_C_BOLD	"\033[1m"
#define CLI_C_RED	"\033[31m"
#define CLI_C_GREEN	"\033[32m"
#define CLI_C_YELLOW	"\033[33m"
#define CLI_C_RESET	"\033[0m"

#define CLI_COL_KEEP	0x1u	/* never truncate (ids people copy) */
#define CLI_COL_RIGHT	0x2u	/* right-align (numbers) */
#define CLI_COL_OPTIONAL 0x4u	/* dropped (rightmost first) when shrinking is not enough */

struct cli_col {
	const char		*header;	/* "STATE" */
	const char		*path;		/* member name, dotted for nesting: "target.region" */
	enum cli_cell_kind	 kind;
	unsigned		 flags;		/* CLI_COL_* */
};

struct cli_table_opts {
	int	width;		/* total columns available; <= 0: no limit */
	bool	color;		/* ANSI escapes for the header and states */
	time_t	now;		/* reference for CLI_CELL_AGE */
};

/* The rows of items (an array of objects; anything else renders as no rows) under a
 * header line, columns two spaces apart, shrunk widest-first with an ellipsis when the
 * table is wider than o->width, and optional columns dropped when that is not enough.  Malloc'd text, every line ending in "\n"; NULL only
 * when memory runs out. */
char	*cli_table_render(const struct cli_col *cols, size_t ncols, const json_t *items,
	    const struct cli_table_opts *o);

/* The colour escape for a state value ("running" green, "failed" red, "pending"
 * yellow), or NULL. */
const char *cli_state_color(const char *state);

/* "key:  value" lines for one object, nested objects indented by two spaces.
 * Malloc'd; NULL only when memory runs out. */
char	*cli_object_render(const json_t *obj, const struct cli_table_opts *o);

/* One value as a single-line cell (control characters become spaces).  Malloc'd. */
char	*cli_cell_format(const json_t *v, enum cli_cell_kind kind, time_t now);

/* A growing string.  Zero-initialise; after a failed allocation every call is a no-op
 * and cli_buf_take returns NULL. */
struct cli_buf {
	char	*p;
	size_t	 n, cap;
	bool	 oom;
};

void	cli_buf_addn(struct cli_buf *b, const char *s, size_t n);
void	cli_buf_add(struct cli_buf *b, const char *s);
/* Appends s with control characters (newlines, escapes) turned into spaces. */
void	cli_buf_add_clean(struct cli_buf *b, const char *s);
void	cli_buf_pad(struct cli_buf *b, size_t n);
void	cli_buf_printf(struct cli_buf *b, const char *fmt, ...)
	    __attribute__((format(printf, 2, 3)));
/* The text ("" when nothing was added), handed to the caller; NULL when memory ran
 * out (the buffer is released either way). */
char	*cli_buf_take(struct cli_buf *b);

/* Member at a dotted path ("a.b"), borrowed, or NULL. */
const json_t *cli_json_path(const json_t *obj, const char *path);

/* Seconds since the epoch of an RFC 3339 time ("2024-05-01T12:00:00.5+02:00");
 * false when s is not one. */
bool	cli_time_parse(const char *s, time_t *out);

/* Terminal columns taken by s (UTF-8 code points). */
size_t	cli_text_width(const char *s);

#endif
