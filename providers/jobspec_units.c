/* jobspec_units: the syntax checks and arithmetic shared by the job spec and the renderer:
 * Kubernetes quantities, cron schedules, DNS labels and resource totals. */
#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "providers/jobspec.h"

#define MAX_CPU_MILLI	(1000LL * 1000 * 1000)		/* a million cores */
#define MAX_MEMORY	(1LL << 60)			/* one exbibyte */

bool
jobspec_dns_label(const char *s, size_t max)
{
	size_t n = s ? strlen(s) : 0;

	if (n == 0 || n > max || !isalnum((unsigned char)s[0]) || !isalnum((unsigned char)s[n - 1]))
		return false;
	for (size_t i = 0; i < n; i++) {
		if (!(islower((unsigned char)s[i]) || isdigit((unsigned char)s[i]) || s[i] == '-'))
			return false;
	}
	return true;
}

/* ------------------------------------------------------------------ quantities */

/* Parses "<digits>[.<digits>][suffix]" exactly; result = value * scale (scale 1000 for
 * millicores, 1 for bytes) as an integer, or false when not exact or out of range. */
static bool
quantity_text(const char *s, int64_t scale, int64_t max, int64_t *out)
{
	static const struct { const char *sfx; int64_t num, den; } sfx[] = {
		{ "", 1, 1 }, { "m", 1, 1000 }, { "k", 1000LL, 1 }, { "M", 1000000LL, 1 },
		{ "G", 1000000000LL, 1 }, { "T", 1000000000000LL, 1 },
		{ "P", 1000000000000000LL, 1 }, { "E", 1000000000000000000LL, 1 },
		{ "Ki", 1LL << 10, 1 }, { "Mi", 1LL << 20, 1 }, { "Gi", 1LL << 30, 1 },
		{ "Ti", 1LL << 40, 1 }, { "Pi", 1LL << 50, 1 }, { "Ei", 1LL << 60, 1 },
	};
	unsigned __int128 mant = 0, den = 1, v;
	int digits = 0, frac = 0;
	const char *p = s;

	while (isdigit((unsigned char)*p) && digits < 19) {
		mant = mant * 10 + (unsigned)(*p++ - '0');
		digits++;
	}
	if (*p == '.') {
		p++;
		while (isdigit((unsigned char)*p) && frac < 9) {
			mant = mant * 10 + (unsigned)(*p++ - '0');
			den *= 10;
			frac++;
			digits++;
		}
		if (frac == 0)
			return false;
	}
	if (digits == 0 || isdigit((unsigned char)*p))
		return false;
	for (size_t i = 0; i < sizeof(sfx) / sizeof(sfx[0]); i++) {
		if (strcmp(p, sfx[i].sfx) != 0)
			continue;
		v = mant * (unsigned __int128)sfx[i].num * (unsigned __int128)scale;
		den *= (unsigned __int128)sfx[i].den;
		if (v % den != 0 || v / den == 0 || v / den > (unsigned __int128)max)
			return false;
		*out = (int64_t)(v / den);
		return true;
	}
	return false;
}

static bool
quantity(json_t *v, int64_t scale, int64_t max, int64_t *out)
{
	if (json_is_string(v))
		return quantity_text(json_string_value(v), scale, max, out);
	if (json_is_integer(v)) {
		json_int_t x = json_integer_value(v);

		if (x <= 0 || x > max / scale)
			return false;
		*out = (int64_t)x * scale;
		return true;
	}
	if (json_is_real(v)) {
		double x = json_real_value(v) * (double)scale, r = round(x);

		if (!isfinite(x) || r <= 0 || r > (double)max || fabs(x - r) > 1e-6)
			return false;
		*out = (int64_t)r;
		return true;
	}
	return false;
}

bool
jobspec_parse_cpu(json_t *v, int64_t *milli)
{
	return quantity(v, 1000, MAX_CPU_MILLI, milli);
}

bool
jobspec_parse_memory(json_t *v, int64_t *bytes)
{
	return quantity(v, 1, MAX_MEMORY, bytes);
}

void
jobspec_fmt_cpu(int64_t milli, char *buf, size_t len)
{
	if (milli % 1000 == 0)
		snprintf(buf, len, "%lld", (long long)(milli / 1000));
	else
		snprintf(buf, len, "%lldm", (long long)milli);
}

void
jobspec_fmt_memory(int64_t bytes, char *buf, size_t len)
{
	static const char *const bin[] = { "Ei", "Pi", "Ti", "Gi", "Mi", "Ki" };
	static const char *const dec[] = { "E", "P", "T", "G", "M", "k" };

	if (bytes > 0) {
		for (int i = 0; i < 6; i++) {
			int64_t unit = 1LL << (10 * (6 - i));

			if (bytes % unit == 0) {
				snprintf(buf, len, "%lld%s", (long long)(bytes / unit), bin[i]);
				return;
			}
		}
		for (int i = 0; i < 6; i++) {
			int64_t unit = 1;

			for (int k = 0; k < 6 - i; k++)
				unit *= 1000;
			if (bytes % unit == 0) {
				snprintf(buf, len, "%lld%s", (long long)(bytes / unit), dec[i]);
				return;
			}
		}
	}
	snprintf(buf, len, "%lld", (long long)bytes);
}

/* ------------------------------------------------------------------ cron */

struct cron_field {
	int		 lo, hi;
	const char *const *names;	/* names[i] is value lo + i; NULL: numbers only */
	bool		 question;	/* '?' allowed (day of month, day of week) */
};

static const char *const month_names[] = { "jan", "feb", "mar", "apr", "may", "jun", "jul",
	"aug", "sep", "oct", "nov", "dec", NULL };
static const char *const dow_names[] = { "sun", "mon", "tue", "wed", "thu", "fri", "sat", NULL };

static const struct cron_field cron_fields[5] = {
	{ 0, 59, NULL, false }, { 0, 23, NULL, false }, { 1, 31, NULL, true },
	{ 1, 12, month_names, false }, { 0, 6, dow_names, true },
};

/* One value: a number in range or a three-letter name; advances *p. */
static bool
cron_value(const char **p, const struct cron_field *f, int *out)
{
	const char *s = *p;

	if (isdigit((unsigned char)*s)) {
		long v = 0;
		int n = 0;

		while (isdigit((unsigned char)*s) && n < 3) {
			v = v * 10 + (*s++ - '0');
			n++;
		}
		if (isdigit((unsigned char)*s) || v < f->lo || v > f->hi)
			return false;
		*out = (int)v;
		*p = s;
		return true;
	}
	for (int i = 0; f->names != NULL && f->names[i] != NULL; i++) {
		if (strncasecmp(s, f->names[i], 3) == 0 && !isalpha((unsigned char)s[3])) {
			*out = f->lo + i;
			*p = s + 3;
			return true;
		}
	}
	return false;
}

static bool
cron_item(const char *s, const struct cron_field *f)
{
	int a, b;

	if (*s == '*' || (*s == '?' && f->question)) {
		s++;
	} else {
		if (!cron_value(&s, f, &a))
			return false;
		if (*s == '-') {
			s++;
			if (!cron_value(&s, f, &b) || b < a)
				return false;
		}
	}
	if (*s == '/') {
		long step = 0;
		int n = 0;

		s++;
		while (isdigit((unsigned char)*s) && n < 3) {
			step = step * 10 + (*s++ - '0');
			n++;
		}
		if (n == 0 || step < 1 || step > f->hi - f->lo + 1)
			return false;
	}
	return *s == '\0';
}

static bool
cron_list(const char *field, const struct cron_field *f)
{
	char buf[128];
	char *save = NULL, *tok;

	if (strlen(field) >= sizeof(buf) || field[0] == ',' || field[strlen(field) - 1] == ',' ||
	    strstr(field, ",,") != NULL)
		return false;
	snprintf(buf, sizeof(buf), "%s", field);
	for (tok = strtok_r(buf, ",", &save); tok != NULL; tok = strtok_r(NULL, ",", &save)) {
		if (!cron_item(tok, f))
			return false;
	}
	return true;
}

/* Go time.ParseDuration subset: ([0-9]+(.[0-9]+)?(h|m|s|ms|us|ns))+, positive. */
static bool
cron_every(const char *s)
{
	double total = 0;

	if (*s == '\0')
		return false;
	while (*s != '\0') {
		double v = 0, scale = 1;

		if (!isdigit((unsigned char)*s))
			return false;
		while (isdigit((unsigned char)*s))
			v = v * 10 + (*s++ - '0');
		if (*s == '.') {
			if (!isdigit((unsigned char)*++s))
				return false;
			while (isdigit((unsigned char)*s))
				v += (*s++ - '0') * (scale /= 10);
		}
		if (strncmp(s, "ms", 2) == 0 || strncmp(s, "us", 2) == 0 || strncmp(s, "ns", 2) == 0) {
			v /= s[0] == 'm' ? 1e3 : s[0] == 'u' ? 1e6 : 1e9;
			s += 2;
		} else if (*s == 'h' || *s == 'm' || *s == 's') {
			v *= *s == 'h' ? 3600 : *s == 'm' ? 60 : 1;
			s++;
		} else {
			return false;
		}
		total += v;
	}
	return total >= 1;
}

bool
jobspec_cron_valid(const char *s)
{
	static const char *const macros[] = { "@yearly", "@annually", "@monthly", "@weekly",
		"@daily", "@midnight", "@hourly", NULL };
	char buf[256];
	char *fields[6], *save = NULL, *tok;
	int n = 0;

	if (s == NULL || strlen(s) >= sizeof(buf))
		return false;
	if (s[0] == '@') {
		for (int i = 0; macros[i] != NULL; i++) {
			if (strcmp(s, macros[i]) == 0)
				return true;
		}
		return strncmp(s, "@every ", 7) == 0 && cron_every(s + 7);
	}
	snprintf(buf, sizeof(buf), "%s", s);
	for (tok = strtok_r(buf, " \t", &save); tok != NULL && n < 6;
	     tok = strtok_r(NULL, " \t", &save))
		fields[n++] = tok;
	if (n != 5)
		return false;
	for (int i = 0; i < 5; i++) {
		if (!cron_list(fields[i], &cron_fields[i]))
			return false;
	}
	return true;
}

/* ------------------------------------------------------------------ totals */

int64_t
jobspec_slice_chips(const struct job_spec *s)
{
	int64_t chips = 1;

	if (s->topology != JOBSPEC_TOPO_SLICE || s->slice_ndims == 0)
		return 0;
	for (int i = 0; i < s->slice_ndims; i++)
		chips *= s->slice_dims[i];
	return chips;
}

int
jobspec_group_hosts(const struct job_spec *s, const struct jobspec_group *g)
{
	int64_t chips = jobspec_slice_chips(s);

	if (chips == 0 || g->accel_flavor == NULL || g->accel_count <= 0)
		return 1;
	return (int)(chips / g->accel_count);
}

bool
jobspec_is_elastic(const struct job_spec *s)
{
	for (size_t i = 0; i < s->ngroups; i++) {
		if (s->groups[i].elastic && s->groups[i].min_replicas != s->groups[i].max_replicas)
			return true;
	}
	return false;
}

void
jobspec_totals(const struct job_spec *s, struct jobspec_totals *t)
{
	memset(t, 0, sizeof(*t));
	t->cpu_milli_min = t->cpu_milli_max = s->head_cpu_milli;
	t->memory_min = t->memory_max = s->head_memory_bytes;
	t->pods_min = t->pods_max = 1;
	for (size_t i = 0; i < s->ngroups; i++) {
		const struct jobspec_group *g = &s->groups[i];
		int64_t hosts = jobspec_group_hosts(s, g);
		int64_t lo = (int64_t)g->min_replicas * hosts, hi = (int64_t)g->max_replicas * hosts;

		t->cpu_milli_min += lo * g->cpu_milli;
		t->cpu_milli_max += hi * g->cpu_milli;
		t->memory_min += lo * g->memory_bytes;
		t->memory_max += hi * g->memory_bytes;
		t->pods_min += (int)lo;
		t->pods_max += (int)hi;
		if (g->accel_flavor == NULL)
			continue;
		t->accel_min += lo * g->accel_count;
		t->accel_max += hi * g->accel_count;
		if (g->accel_count > t->accel_per_pod)
			t->accel_per_pod = g->accel_count;
	}
}

int
jobspec_gang_size(const struct job_spec *s)
{
	struct jobspec_totals t;

	jobspec_totals(s, &t);
	return t.pods_min;
}

int64_t
jobspec_total_accelerators(const struct job_spec *s, bool at_max)
{
	struct jobspec_totals t;

	jobspec_totals(s, &t);
	return at_max ? t.accel_max : t.accel_min;
}
