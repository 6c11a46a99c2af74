/* table: fleetctl's pure renderer — JSON items and a column spec in, aligned text out.
 * Depends on jansson and libc only, so tests compile it in directly. */
#include <ctype.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/table.h"

#define GAP		2	/* spaces between columns */
#define MIN_COL		4	/* a shrunk column keeps at least this many (or its header) */
#define SOFT_MIN	12	/* before dropping optional columns, shrink no further */
#define ELLIPSIS	"\xe2\x80\xa6"

void
cli_buf_addn(struct cli_buf *b, const char *s, size_t n)
{
	if (b->oom)
		return;
	if (b->n + n + 1 > b->cap) {
		size_t cap = b->cap ? b->cap : 256;
		char *q;

		while (cap < b->n + n + 1)
			cap *= 2;
		if ((q = realloc(b->p, cap)) == NULL) {
			b->oom = true;
			return;
		}
		b->p = q;
		b->cap = cap;
	}
	memcpy(b->p + b->n, s, n);
	b->n += n;
	b->p[b->n] = '\0';
}

void
cli_buf_add(struct cli_buf *b, const char *s)
{
	cli_buf_addn(b, s, strlen(s));
}

void
cli_buf_pad(struct cli_buf *b, size_t n)
{
	while (n-- > 0)
		cli_buf_addn(b, " ", 1);
}

void
cli_buf_printf(struct cli_buf *b, const char *fmt, ...)
{
	char tmp[256], *big;
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(tmp, sizeof(tmp), fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	if ((size_t)n < sizeof(tmp)) {
		cli_buf_addn(b, tmp, (size_t)n);
		return;
	}
	if ((big = malloc((size_t)n + 1)) == NULL) {
		b->oom = true;
		return;
	}
	va_start(ap, fmt);
	vsnprintf(big, (size_t)n + 1, fmt, ap);
	va_end(ap);
	cli_buf_addn(b, big, (size_t)n);
	free(big);
}

char *
cli_buf_take(struct cli_buf *b)
{
	if (b->oom) {
		free(b->p);
		return NULL;
	}
	if (b->p == NULL)
		return strdup("");
	return b->p;
}

size_t
cli_text_width(const char *s)
{
	size_t w = 0;

	for (; *s != '\0'; s++)
		if (((unsigned char)*s & 0xC0) != 0x80)
			w++;
	return w;
}

/* Byte length of the first n code points of s. */
static size_t
prefix_bytes(const char *s, size_t n)
{
	size_t i = 0;

	while (s[i] != '\0') {
		if (((unsigned char)s[i] & 0xC0) != 0x80) {
			if (n == 0)
				break;
			n--;
		}
		i++;
	}
	return i;
}

void
cli_buf_add_clean(struct cli_buf *b, const char *s)
{
	for (; *s != '\0'; s++) {
		unsigned char c = (unsigned char)*s;

		cli_buf_addn(b, (c < 0x20 || c == 0x7f) ? " " : s, 1);
	}
}

const json_t *
cli_json_path(const json_t *obj, const char *path)
{
	const char *dot;
	char key[128];

	while (obj != NULL && (dot = strchr(path, '.')) != NULL) {
		snprintf(key, sizeof(key), "%.*s", (int)(dot - path), path);
		obj = json_object_get(obj, key);
		path = dot + 1;
	}
	return obj != NULL ? json_object_get(obj, path) : NULL;
}

bool
cli_time_parse(const char *s, time_t *out)
{
	struct tm tm = { 0 };
	int n = 0, oh = 0, om = 0;
	long off = 0;
	const char *p;

	if (s == NULL || sscanf(s, "%4d-%2d-%2d%*1[Tt ]%2d:%2d:%2d%n", &tm.tm_year, &tm.tm_mon,
	    &tm.tm_mday, &tm.tm_hour, &tm.tm_min, &tm.tm_sec, &n) != 6 || n != 19)
		return false;
	p = s + n;
	if (*p == '.')
		for (p++; isdigit((unsigned char)*p); p++)
			;
	if (*p == 'Z' || *p == 'z') {
		p++;
	} else if (*p == '+' || *p == '-') {
		int k = 0;

		if (sscanf(p + 1, "%2d:%2d%n", &oh, &om, &k) != 2 &&
		    sscanf(p + 1, "%2d%n", &oh, &k) != 1)
			return false;
		off = (oh * 3600L + om * 60L) * (*p == '-' ? -1 : 1);
		p += 1 + k;
	} else {
		return false;
	}
	if (*p != '\0')
		return false;
	tm.tm_year -= 1900;
	tm.tm_mon -= 1;
	*out = timegm(&tm) - off;
	return true;
}

static void
fmt_num(struct cli_buf *b, double x)
{
	char tmp[64];
	char *dot;
	size_t n;

	snprintf(tmp, sizeof(tmp), "%.2f", x);
	if ((dot = strchr(tmp, '.')) != NULL) {
		n = strlen(tmp);
		while (n > 0 && tmp[n - 1] == '0')
			tmp[--n] = '\0';
		if (n > 0 && tmp[n - 1] == '.')
			tmp[--n] = '\0';
	}
	cli_buf_add(b, strcmp(tmp, "-0") == 0 ? "0" : tmp);
}

static void
fmt_age(struct cli_buf *b, const char *s, time_t now)
{
	time_t t;
	long long d;

	if (!cli_time_parse(s, &t)) {
		cli_buf_add_clean(b, s);
		return;
	}
	d = now > t ? (long long)(now - t) : 0;
	if (d < 120)
		cli_buf_printf(b, "%llds", d);
	else if (d < 120 * 60)
		cli_buf_printf(b, "%lldm", d / 60);
	else if (d < 48 * 3600)
		cli_buf_printf(b, "%lldh", d / 3600);
	else
		cli_buf_printf(b, "%lldd", d / 86400);
}

static void
fmt_time(struct cli_buf *b, const char *s)
{
	struct tm tm;
	time_t t;
	char tmp[32];

	if (!cli_time_parse(s, &t) || gmtime_r(&t, &tm) == NULL) {
		cli_buf_add_clean(b, s);
		return;
	}
	strftime(tmp, sizeof(tmp), "%Y-%m-%d %H:%M", &tm);
	cli_buf_add(b, tmp);
}

static void fmt_value(struct cli_buf *b, const json_t *v, enum cli_cell_kind kind, time_t now);

static void
fmt_compound(struct cli_buf *b, const json_t *v, enum cli_cell_kind kind, time_t now)
{
	const char *k;
	json_t *m;
	size_t i;
	bool first = true;

	if (json_is_object(v) && kind == CLI_CELL_KV) {
		json_object_foreach((json_t *)v, k, m) {
			if (!first)
				cli_buf_add(b, ",");
			first = false;
			cli_buf_add_clean(b, k);
			cli_buf_add(b, "=");
			fmt_value(b, m, CLI_CELL_TEXT, now);
		}
		if (first)
			cli_buf_add(b, "-");
	} else if (json_is_array(v) && json_array_size(v) > 0) {
		json_array_foreach(v, i, m) {
			if (i > 0)
				cli_buf_add(b, ",");
			fmt_value(b, m, CLI_CELL_TEXT, now);
		}
	} else if (json_is_array(v)) {
		cli_buf_add(b, "-");
	} else {
		char *t = json_dumps(v, JSON_COMPACT | JSON_ENSURE_ASCII);

		cli_buf_add_clean(b, t != NULL ? t : "{}");
		free(t);
	}
}

static void
fmt_value(struct cli_buf *b, const json_t *v, enum cli_cell_kind kind, time_t now)
{
	if (v == NULL || json_is_null(v))
		cli_buf_add(b, "-");
	else if (json_is_true(v))
		cli_buf_add(b, "yes");
	else if (json_is_false(v))
		cli_buf_add(b, "no");
	else if (json_is_integer(v))
		cli_buf_printf(b, "%lld", (long long)json_integer_value(v));
	else if (json_is_real(v))
		fmt_num(b, json_real_value(v));
	else if (json_is_string(v) && kind == CLI_CELL_AGE)
		fmt_age(b, json_string_value(v), now);
	else if (json_is_string(v) && kind == CLI_CELL_TIME)
		fmt_time(b, json_string_value(v));
	else if (json_is_string(v))
		cli_buf_add_clean(b, json_string_value(v)[0] != '\0' ? json_string_value(v) : "-");
	else
		fmt_compound(b, v, kind, now);
}

char *
cli_cell_format(const json_t *v, enum cli_cell_kind kind, time_t now)
{
	struct cli_buf b = { 0 };

	fmt_value(&b, v, kind, now);
	return cli_buf_take(&b);
}

const char *
cli_state_color(const char *s)
{
	static const char *const green[] = { "ready", "running", "succeeded", "active",
	    "admitted", "completed", "done", "ok", NULL };
	static const char *const red[] = { "failed", "unreachable", "error", "degraded", NULL };
	static const char *const yellow[] = { "pending", "moving", "preempted", "dispatched",
	    "pending_iam", "draining", "cordoned", "waiting", "queued", NULL };

	for (int i = 0; green[i] != NULL; i++)
		if (strcmp(s, green[i]) == 0)
			return CLI_C_GREEN;
	for (int i = 0; red[i] != NULL; i++)
		if (strcmp(s, red[i]) == 0)
			return CLI_C_RED;
	for (int i = 0; yellow[i] != NULL; i++)
		if (strcmp(s, yellow[i]) == 0)
			return CLI_C_YELLOW;
	return NULL;
}

struct colw {
	size_t	nat;		/* widest cell, header included */
	size_t	min;		/* narrowest it may shrink to */
	size_t	soft;		/* narrowest while optional columns are still shown */
	size_t	w;		/* chosen */
	bool	hidden;		/* dropped: an optional column on a narrow terminal */
};

/* How far a column may shrink in each pass: first to a readable width (states whole),
 * then to the minimum (states whole), then states too. */
static size_t
floor_of(const struct cli_col *col, const struct colw *cw, int pass)
{
	if (col->kind == CLI_CELL_STATE && pass < 2)
		return cw->nat;
	return pass == 0 ? cw->soft : cw->min;
}

/* Shrinks the widest shrinkable column, one column at a time, until the row fits;
 * false when even the narrowest layout of this pass is too wide. */
static bool
shrink(const struct cli_col *cols, size_t ncols, struct colw *cw, int width, int pass)
{
	size_t total = 0, i, seen = 0;

	for (i = 0; i < ncols; i++) {
		cw[i].w = cw[i].nat;
		if (!cw[i].hidden)
			total += cw[i].w + (seen++ > 0 ? GAP : 0);
	}
	while (width > 0 && total > (size_t)width) {
		size_t best = ncols;

		for (i = 0; i < ncols; i++) {
			if (cw[i].hidden || (cols[i].flags & CLI_COL_KEEP) ||
			    cw[i].w <= floor_of(&cols[i], &cw[i], pass))
				continue;
			if (best == ncols || cw[i].w >= cw[best].w)
				best = i;
		}
		if (best == ncols)
			return false;
		cw[best].w--;
		total--;
	}
	return true;
}

/* Shrinks columns to a readable width, dropping optional columns (rightmost first)
 * while that is not enough; only then shrinks what is left further. */
static void
fit_widths(const struct cli_col *cols, size_t ncols, struct colw *cw, int width)
{
	while (!shrink(cols, ncols, cw, width, 0)) {
		size_t i = ncols;

		while (i > 0 && (cw[i - 1].hidden || !(cols[i - 1].flags & CLI_COL_OPTIONAL)))
			i--;
		if (i == 0) {
			if (!shrink(cols, ncols, cw, width, 1))
				shrink(cols, ncols, cw, width, 2);
			return;
		}
		cw[i - 1].hidden = true;
	}
}

/* One cell, truncated to w with an ellipsis, padded unless it is the row's last. */
static void
emit_cell(struct cli_buf *b, const char *text, size_t w, bool right, bool last,
	  const char *color)
{
	size_t tw = cli_text_width(text);
	bool cut = tw > w;

	if (cut)
		tw = w;
	if (right)
		cli_buf_pad(b, w - tw);
	if (color != NULL)
		cli_buf_add(b, color);
	if (cut && w > 0) {
		cli_buf_addn(b, text, prefix_bytes(text, w - 1));
		cli_buf_add(b, ELLIPSIS);
	} else if (!cut) {
		cli_buf_add(b, text);
	}
	if (color != NULL)
		cli_buf_add(b, CLI_C_RESET);
	if (!right && !last)
		cli_buf_pad(b, w - tw);
}

static void
emit_row(struct cli_buf *b, const struct cli_col *cols, size_t ncols, char **cells,
	 const struct colw *cw, bool header, bool color)
{
	size_t last = ncols, i;
	bool first = true;

	for (i = 0; i < ncols; i++)
		if (!cw[i].hidden)
			last = i;
	for (i = 0; i < ncols; i++) {
		const char *c = NULL;

		if (cw[i].hidden)
			continue;
		if (color && header)
			c = CLI_C_BOLD;
		else if (color && cols[i].kind == CLI_CELL_STATE)
			c = cli_state_color(cells[i]);
		if (!first)
			cli_buf_pad(b, GAP);
		first = false;
		emit_cell(b, cells[i], cw[i].w, (cols[i].flags & CLI_COL_RIGHT) != 0,
		    i == last, c);
	}
	cli_buf_add(b, "\n");
}

char *
cli_table_render(const struct cli_col *cols, size_t ncols, const json_t *items,
		 const struct cli_table_opts *o)
{
	size_t nrows = json_is_array(items) ? json_array_size(items) : 0;
	char **cells = calloc((nrows + 1) * ncols + 1, sizeof(*cells));
	struct colw *cw = calloc(ncols + 1, sizeof(*cw));
	struct cli_buf b = { 0 };
	size_t r, i;

	if (cells == NULL || cw == NULL) {
		b.oom = true;
		goto cleanup;
	}
	for (i = 0; i < ncols; i++) {
		cells[i] = strdup(cols[i].header);
		b.oom |= cells[i] == NULL;
	}
	for (r = 0; r < nrows && !b.oom; r++) {
		for (i = 0; i < ncols; i++) {
			char **c = &cells[(r + 1) * ncols + i];

			*c = cli_cell_format(cli_json_path(json_array_get(items, r), cols[i].path),
			    cols[i].kind, o->now);
			b.oom |= *c == NULL;
		}
	}
	if (b.oom)
		goto cleanup;
	for (i = 0; i < ncols; i++) {
		size_t hw = cli_text_width(cols[i].header);

		for (r = 0; r <= nrows; r++) {
			size_t tw = cli_text_width(cells[r * ncols + i]);

			cw[i].nat = tw > cw[i].nat ? tw : cw[i].nat;
		}
		cw[i].min = hw > MIN_COL ? hw : MIN_COL;
		cw[i].min = cw[i].min < cw[i].nat ? cw[i].min : cw[i].nat;
		cw[i].soft = hw > SOFT_MIN ? hw : SOFT_MIN;
		cw[i].soft = cw[i].soft < cw[i].nat ? cw[i].soft : cw[i].nat;
	}
	fit_widths(cols, ncols, cw, o->width);
	for (r = 0; r <= nrows; r++)
		emit_row(&b, cols, ncols, &cells[r * ncols], cw, r == 0, o->color);
cleanup:
	for (i = 0; cells != NULL && i < (nrows + 1) * ncols; i++)
		free(cells[i]);
	free(cells);
	free(cw);
	return cli_buf_take(&b);
}

static bool
is_scalar_list(const json_t *v)
{
	size_t i;
	json_t *m;

	json_array_foreach(v, i, m)
		if (json_is_object(m) || json_is_array(m))
			return false;
	return true;
}

static void
render_members(struct cli_buf *b, const json_t *obj, int depth, const struct cli_table_opts *o)
{
	size_t keyw = 0, i;
	const char *k;
	json_t *v, *m;

	json_object_foreach((json_t *)obj, k, v)
		keyw = cli_text_width(k) + 1 > keyw ? cli_text_width(k) + 1 : keyw;
	json_object_foreach((json_t *)obj, k, v) {
		cli_buf_pad(b, (size_t)depth * 2);
		if (o->color)
			cli_buf_add(b, CLI_C_BOLD);
		cli_buf_add_clean(b, k);
		cli_buf_add(b, ":");
		if (o->color)
			cli_buf_add(b, CLI_C_RESET);
		if (json_is_object(v) && json_object_size(v) > 0) {
			cli_buf_add(b, "\n");
			render_members(b, v, depth + 1, o);
			continue;
		}
		if (json_is_array(v) && json_array_size(v) > 0 && !is_scalar_list(v)) {
			cli_buf_add(b, "\n");
			json_array_foreach(v, i, m) {
				cli_buf_pad(b, (size_t)depth * 2 + 2);
				cli_buf_add(b, "- ");
				fmt_value(b, m, CLI_CELL_TEXT, o->now);
				cli_buf_add(b, "\n");
			}
			continue;
		}
		cli_buf_pad(b, keyw - cli_text_width(k));
		fmt_value(b, v, CLI_CELL_TEXT, o->now);
		cli_buf_add(b, "\n");
	}
}

char *
cli_object_render(const json_t *obj, const struct cli_table_opts *o)
{
	struct cli_buf b = { 0 };

	if (json_is_object(obj)) {
		render_members(&b, obj, 0, o);
	} else {
		fmt_value(&b, obj, CLI_CELL_TEXT, o->now);
		cli_buf_add(&b, "\n");
	}
	return cli_buf_take(&b);
}
