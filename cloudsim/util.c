/* cloudsim util: vectors, clocks, ids, percent decoding, Kubernetes quantities and names. */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cloudsim/cs.h"
#include "core/crypto.h"
#include "core/mono.h"

void
cs_vec_push(struct cs_vec *v, void *p)
{
	if (v->n == v->cap) {
		v->cap = v->cap ? v->cap * 2 : 16;
		v->v = realloc(v->v, v->cap * sizeof(*v->v));
		if (v->v == NULL)
			abort();
	}
	v->v[v->n++] = p;
}

void
cs_vec_del(struct cs_vec *v, size_t i)
{
	if (i >= v->n)
		return;
	memmove(&v->v[i], &v->v[i + 1], (v->n - i - 1) * sizeof(*v->v));
	v->n--;
}

void
cs_vec_free(struct cs_vec *v, void (*fn)(void *))
{
	for (size_t i = 0; i < v->n; i++)
		fn(v->v[i]);
	free(v->v);
	memset(v, 0, sizeof(*v));
}

double
cs_now(const struct cs *cs)
{
	return cs->wall0 + (mono_s() - cs->mono0) * cs->time_scale;
}

double
cs_wall(const struct cs *cs)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9 + cs->clock_skew;
}

void
cs_rfc3339(double t, char out[32])
{
	time_t s = (time_t)t;
	struct tm tm;

	gmtime_r(&s, &tm);
	strftime(out, 32, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

void
cs_uuid(char out[40])
{
	unsigned char b[16];

	crypto_random(b, sizeof(b));
	b[6] = (b[6] & 0x0f) | 0x40;
	b[8] = (b[8] & 0x3f) | 0x80;
	snprintf(out, 40, "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x",
	    b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12],
	    b[13], b[14], b[15]);
}

void
cs_rand_suffix(char *out, size_t n)
{
	static const char al[] = "bcdfghjklmnpqrstvwxz2456789";
	unsigned char b[64];
	size_t i;

	if (n == 0)
		return;
	if (n > sizeof(b))
		n = sizeof(b);
	crypto_random(b, n);
	for (i = 0; i + 1 < n; i++)
		out[i] = al[b[i] % (sizeof(al) - 1)];
	out[n - 1] = '\0';
}

void
cs_hex_token(char *out, size_t bytes)
{
	unsigned char b[64];

	if (bytes > sizeof(b))
		bytes = sizeof(b);
	crypto_random(b, bytes);
	crypto_hex(b, bytes, out);
}

char *
cs_read_file(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	char *buf = NULL;
	size_t n = 0, cap = 0, r;

	if (f == NULL)
		return NULL;
	for (;;) {
		if (cap - n < 4096) {
			cap = cap ? cap * 2 : 8192;
			buf = realloc(buf, cap + 1);
			if (buf == NULL)
				abort();
		}
		r = fread(buf + n, 1, cap - n, f);
		n += r;
		if (r == 0)
			break;
	}
	fclose(f);
	buf[n] = '\0';
	if (len != NULL)
		*len = n;
	return buf;
}

bool
cs_write_file(const char *dir, const char *name, const char *text, struct err *e)
{
	char path[1024], tmp[1100];
	FILE *f;
	size_t n = strlen(text);

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	f = fopen(tmp, "w");
	if (f == NULL)
		return err_set(e, 500, "cloudsim.write", "cannot write %s: %s", path,
		    strerror(errno));
	if (fwrite(text, 1, n, f) != n || fclose(f) != 0)
		return err_set(e, 500, "cloudsim.write", "cannot write %s", path);
	if (rename(tmp, path) != 0)
		return err_set(e, 500, "cloudsim.write", "cannot rename %s", path);
	return true;
}

static int
hexv(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

static char *
decode(const char *s, size_t n, bool form)
{
	char *out = malloc(n + 1);
	size_t i, o = 0;

	if (out == NULL)
		abort();
	for (i = 0; i < n; i++) {
		if (s[i] == '%' && i + 2 < n && hexv(s[i + 1]) >= 0 && hexv(s[i + 2]) >= 0) {
			out[o++] = (char)(hexv(s[i + 1]) * 16 + hexv(s[i + 2]));
			i += 2;
		} else if (form && s[i] == '+') {
			out[o++] = ' ';
		} else {
			out[o++] = s[i];
		}
	}
	out[o] = '\0';
	return out;
}

char *
cs_pct_decode(const char *s, size_t n)
{
	return decode(s, n, false);
}

char *
cs_form_decode(const char *s, size_t n)
{
	return decode(s, n, true);
}

char *
cs_form_get(const char *body, const char *key)
{
	const char *p = body;
	size_t kl = strlen(key);

	while (p != NULL && *p) {
		const char *amp = strchr(p, '&');
		size_t len = amp ? (size_t)(amp - p) : strlen(p);

		if (len > kl && strncmp(p, key, kl) == 0 && p[kl] == '=')
			return cs_form_decode(p + kl + 1, len - kl - 1);
		p = amp ? amp + 1 : NULL;
	}
	return NULL;
}

void
cs_copy(char *dst, size_t n, const char *src)
{
	size_t l = src ? strnlen(src, n - 1) : 0;

	if (l > 0)
		memcpy(dst, src, l);
	dst[l] = '\0';
}

/* Kubernetes resource quantity: "2", "500m", "1.5", "64Gi", "1G", "100Mi", "1e3". */
long long
cs_parse_quantity(const char *s, bool cpu)
{
	char *end;
	double v, mul = 1;

	if (s == NULL || *s == '\0' || strlen(s) > 64)
		return -1;
	errno = 0;
	v = strtod(s, &end);
	if (errno != 0 || end == s || !isfinite(v) || v < 0)
		return -1;
	if (strcmp(end, "") == 0)
		mul = 1;
	else if (strcmp(end, "m") == 0)
		mul = 0.001;
	else if (strcmp(end, "k") == 0)
		mul = 1e3;
	else if (strcmp(end, "M") == 0)
		mul = 1e6;
	else if (strcmp(end, "G") == 0)
		mul = 1e9;
	else if (strcmp(end, "T") == 0)
		mul = 1e12;
	else if (strcmp(end, "Ki") == 0)
		mul = 1024.0;
	else if (strcmp(end, "Mi") == 0)
		mul = 1024.0 * 1024;
	else if (strcmp(end, "Gi") == 0)
		mul = 1024.0 * 1024 * 1024;
	else if (strcmp(end, "Ti") == 0)
		mul = 1024.0 * 1024 * 1024 * 1024;
	else
		return -1;
	v *= mul;
	if (cpu)
		v *= 1000;
	if (v > 9e18)
		return -1;
	return (long long)ceil(v - 1e-9);
}

long long
cs_json_quantity(json_t *v, bool cpu)
{
	if (json_is_string(v))
		return cs_parse_quantity(json_string_value(v), cpu);
	if (json_is_integer(v) && json_integer_value(v) >= 0 &&
	    json_integer_value(v) < 1000000000000LL)
		return json_integer_value(v) * (cpu ? 1000 : 1);
	if (json_is_real(v) && json_real_value(v) >= 0 && json_real_value(v) < 1e12)
		return (long long)ceil(json_real_value(v) * (cpu ? 1000 : 1));
	return -1;
}

static bool
label_chars(const char *s, size_t max, bool alpha_first)
{
	size_t n = strlen(s), i;

	if (n == 0 || n > max)
		return false;
	if (!(islower((unsigned char)s[0]) || (!alpha_first && isdigit((unsigned char)s[0]))))
		return false;
	if (!(islower((unsigned char)s[n - 1]) || isdigit((unsigned char)s[n - 1])))
		return false;
	for (i = 0; i < n; i++)
		if (!(islower((unsigned char)s[i]) || isdigit((unsigned char)s[i]) ||
		    s[i] == '-'))
			return false;
	return true;
}

bool
cs_dns1123_label(const char *s, size_t max)
{
	return label_chars(s, max, false);
}

char *
cs_xml_escape(const char *s)
{
	size_t n = 0, i;
	char *o, *p;

	for (i = 0; s[i]; i++)
		n += (s[i] == '<' || s[i] == '>') ? 4 : s[i] == '&' ? 5 :
		    (s[i] == '"' || s[i] == '\'') ? 6 : 1;
	o = p = malloc(n + 1);
	if (o == NULL)
		abort();
	for (i = 0; s[i]; i++) {
		const char *r = NULL;

		switch (s[i]) {
		case '<': r = "&lt;"; break;
		case '>': r = "&gt;"; break;
		case '&': r = "&amp;"; break;
		case '"': r = "&quot;"; break;
		case '\'': r = "&apos;"; break;
		default: *p++ = s[i]; continue;
		}
		memcpy(p, r, strlen(r));
		p += strlen(r);
	}
	*p = '\0';
	return o;
}
