/* sigv4: AWS Signature Version 4 (AWS4-HMAC-SHA256) for non-S3 services, checked
 * byte for byte against AWS's aws-sig-v4-test-suite. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/crypto.h>

#include "core/crypto.h"
#include "core/sigv4.h"
#include "core/textbuf.h"

/* Growable string; allocation failure aborts, like arena_alloc. */
struct buf {
	char	*p;
	size_t	 len;
	size_t	 cap;
};

static void
buf_add(struct buf *b, const char *s, size_t n)
{
	textbuf_append(&b->p, &b->len, &b->cap, s, n);
}

static void
buf_str(struct buf *b, const char *s)
{
	buf_add(b, s, strlen(s));
}

static void
buf_chr(struct buf *b, char c)
{
	buf_add(b, &c, 1);
}

static bool
unreserved(unsigned char c)
{
	return isalnum(c) || c == '-' || c == '.' || c == '_' || c == '~';
}

/* RFC 3986 encoding, uppercase hex; '/' kept when keep_slash. */
static void
buf_encode(struct buf *b, const char *s, size_t n, bool keep_slash)
{
	static const char hex[] = "0123456789ABCDEF";

	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];
		char esc[3] = { '%', hex[c >> 4], hex[c & 0x0f] };

		if (unreserved(c) || (keep_slash && c == '/'))
			buf_chr(b, (char)c);
		else
			buf_add(b, esc, 3);
	}
}

static int
hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	c = (char)tolower((unsigned char)c);
	return c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

/* Percent-decodes [s, s+n) into a new string; stray '%' stays literal. */
static char *
decode(const char *s, size_t n, size_t *outlen)
{
	char *out = malloc(n + 1);
	size_t o = 0;

	if (out == NULL)
		abort();
	for (size_t i = 0; i < n; i++) {
		int hi, lo;

		if (s[i] == '%' && i + 2 < n && (hi = hexval(s[i + 1])) >= 0 &&
		    (lo = hexval(s[i + 2])) >= 0) {
			out[o++] = (char)(hi << 4 | lo);
			i += 2;
		} else {
			out[o++] = s[i];
		}
	}
	out[o] = '\0';
	*outlen = o;
	return out;
}

/* Canonical URI: remove "." and ".." segments and empty segments, keep a trailing
 * slash, then encode each segment (so an already-encoded path is encoded twice,
 * as AWS expects for every service except S3). */
static void
canonical_uri(struct buf *b, const char *path)
{
	const char *p = path && *path ? path : "/";
	size_t plen = strlen(p), max = 1, n = 0;
	bool trailing = p[plen - 1] == '/';
	const char **segs;
	size_t *lens;

	for (size_t i = 0; i < plen; i++)
		max += p[i] == '/';
	segs = malloc(max * sizeof(*segs));
	lens = malloc(max * sizeof(*lens));
	if (segs == NULL || lens == NULL)
		abort();
	while (*p != '\0') {
		size_t l = strcspn(p, "/");

		if (l == 2 && p[0] == '.' && p[1] == '.') {
			if (n > 0)
				n--;
		} else if (l > 0 && !(l == 1 && p[0] == '.')) {
			segs[n] = p;
			lens[n++] = l;
		}
		p += l;
		if (*p == '/')
			p++;
	}
	for (size_t i = 0; i < n; i++) {
		buf_chr(b, '/');
		buf_encode(b, segs[i], lens[i], false);
	}
	if (n == 0 || trailing)
		buf_chr(b, '/');
	free(segs);
	free(lens);
}

struct qparam {
	char	*name;	/* encoded */
	char	*value;	/* encoded */
};

static int
qparam_cmp(const void *a, const void *b)
{
	const struct qparam *x = a, *y = b;
	int c = strcmp(x->name, y->name);

	return c ? c : strcmp(x->value, y->value);
}

static char *
encode_part(const char *s, size_t n)
{
	struct buf b = { 0 };
	size_t dn = 0;
	char *d = decode(s, n, &dn);

	buf_add(&b, "", 0);
	buf_encode(&b, d, dn, false);
	free(d);
	return b.p;
}

/* Canonical query: every name and value decoded then RFC 3986 encoded, sorted by
 * name then value, "name=value" joined with '&' (a bare name gets "name="). */
static void
canonical_query(struct buf *b, const char *query)
{
	struct qparam *qs = NULL;
	size_t n = 0, cap = 0;
	const char *p = query ? query : "";

	while (*p != '\0') {
		size_t l = strcspn(p, "&");
		const char *eq = memchr(p, '=', l);

		if (l > 0) {
			if (n == cap) {
				cap = cap ? cap * 2 : 8;
				qs = realloc(qs, cap * sizeof(*qs));
				if (qs == NULL)
					abort();
			}
			qs[n].name = encode_part(p, eq ? (size_t)(eq - p) : l);
			qs[n].value = eq ? encode_part(eq + 1, l - (size_t)(eq - p) - 1)
			    : encode_part("", 0);
			n++;
		}
		p += l;
		if (*p == '&')
			p++;
	}
	if (n > 0)
		qsort(qs, n, sizeof(*qs), qparam_cmp);
	for (size_t i = 0; i < n; i++) {
		if (i > 0)
			buf_chr(b, '&');
		buf_str(b, qs[i].name);
		buf_chr(b, '=');
		buf_str(b, qs[i].value);
		free(qs[i].name);
		free(qs[i].value);
	}
	free(qs);
}

struct hdr {
	char	*name;	/* lowercased */
	char	*value;	/* trimmed, whitespace runs collapsed */
	size_t	 order;	/* position in the request, keeps same-name values in order */
};

static int
hdr_cmp(const void *a, const void *b)
{
	const struct hdr *x = a, *y = b;
	int c = strcmp(x->name, y->name);

	if (c != 0)
		return c;
	return x->order < y->order ? -1 : x->order > y->order;
}

static bool
is_ws(char c)
{
	return c == ' ' || c == '\t' || c == '\r' || c == '\n';
}

/* Trims and collapses every run of whitespace (folded lines included) to one space. */
static char *
trim_value(const char *v)
{
	struct buf b = { 0 };
	bool gap = false;

	buf_add(&b, "", 0);
	for (v = v ? v : ""; *v != '\0'; v++) {
		if (is_ws(*v)) {
			gap = true;
			continue;
		}
		if (gap && b.len > 0)
			buf_chr(&b, ' ');
		gap = false;
		buf_chr(&b, *v);
	}
	return b.p;
}

static char *
lower_dup(const char *s, size_t n)
{
	char *out = malloc(n + 1);

	if (out == NULL)
		abort();
	for (size_t i = 0; i < n; i++)
		out[i] = (char)tolower((unsigned char)s[i]);
	out[n] = '\0';
	return out;
}

static int
name_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Sorted, de-duplicated lowercase names: from signed_headers, or every header. */
static size_t
signed_names(const struct hdr *h, size_t nh, const char *signed_headers, char ***out)
{
	char **names = NULL;
	size_t n = 0, cap = 0, k = 0;
	const char *p = signed_headers;

	for (size_t i = 0; p != NULL ? *p != '\0' : i < nh; i++) {
		char *name;

		if (p != NULL) {
			size_t l = strcspn(p, ";");

			name = lower_dup(p, l);
			p += l + (p[l] == ';');
		} else {
			name = lower_dup(h[i].name, strlen(h[i].name));
		}
		if (n == cap) {
			cap = cap ? cap * 2 : 8;
			names = realloc(names, cap * sizeof(*names));
			if (names == NULL)
				abort();
		}
		names[n++] = name;
	}
	if (n > 0)
		qsort(names, n, sizeof(*names), name_cmp);
	for (size_t i = 0; i < n; i++) {
		if (names[i][0] == '\0' || (k > 0 && strcmp(names[k - 1], names[i]) == 0))
			free(names[i]);
		else
			names[k++] = names[i];
	}
	*out = names;
	return k;
}

/* Canonical headers block ("name:v1,v2\n" per signed name) then the blank line and
 * the signed-headers line. */
static void
canonical_headers(struct buf *b, const struct sigv4_request *rq, const char *signed_headers)
{
	struct hdr *h = calloc(rq->nheaders ? rq->nheaders : 1, sizeof(*h));
	char **names = NULL;
	size_t nn, j = 0;

	if (h == NULL)
		abort();
	for (size_t i = 0; i < rq->nheaders; i++) {
		const char *name = rq->headers[i].name ? rq->headers[i].name : "";
		size_t l = strlen(name);

		while (l > 0 && is_ws(name[l - 1]))	/* "Name :" tolerated */
			l--;
		h[i].name = lower_dup(name, l);
		h[i].value = trim_value(rq->headers[i].value);
		h[i].order = i;
	}
	if (rq->nheaders > 0)
		qsort(h, rq->nheaders, sizeof(*h), hdr_cmp);
	nn = signed_names(h, rq->nheaders, signed_headers, &names);
	for (size_t i = 0; i < nn; i++) {
		bool first = true;

		buf_str(b, names[i]);
		buf_chr(b, ':');
		while (j < rq->nheaders && strcmp(h[j].name, names[i]) < 0)
			j++;
		for (; j < rq->nheaders && strcmp(h[j].name, names[i]) == 0; j++) {
			if (!first)
				buf_chr(b, ',');
			buf_str(b, h[j].value);
			first = false;
		}
		buf_chr(b, '\n');
	}
	buf_chr(b, '\n');
	for (size_t i = 0; i < nn; i++) {
		if (i > 0)
			buf_chr(b, ';');
		buf_str(b, names[i]);
		free(names[i]);
	}
	buf_chr(b, '\n');
	free(names);
	for (size_t i = 0; i < rq->nheaders; i++) {
		free(h[i].name);
		free(h[i].value);
	}
	free(h);
}

char *
sigv4_canonical_request(const struct sigv4_request *rq, const char *signed_headers)
{
	struct buf b = { 0 };
	char hash[65];

	if (rq == NULL || rq->method == NULL || (rq->nheaders > 0 && rq->headers == NULL))
		return NULL;
	for (const char *m = rq->method; *m != '\0'; m++)
		buf_chr(&b, (char)toupper((unsigned char)*m));
	buf_chr(&b, '\n');
	canonical_uri(&b, rq->path);
	buf_chr(&b, '\n');
	canonical_query(&b, rq->query);
	buf_chr(&b, '\n');
	canonical_headers(&b, rq, signed_headers);
	if (rq->payload_hash != NULL) {
		buf_str(&b, rq->payload_hash);
	} else {
		crypto_sha256_hex(rq->payload, rq->payload ? rq->payload_len : 0, hash);
		buf_str(&b, hash);
	}
	return b.p;
}

static void
scope(struct buf *b, const struct sigv4_key *k)
{
	buf_add(b, k->amz_date, strnlen(k->amz_date, 8));
	buf_chr(b, '/');
	buf_str(b, k->region);
	buf_chr(b, '/');
	buf_str(b, k->service);
	buf_str(b, "/aws4_request");
}

char *
sigv4_string_to_sign(const struct sigv4_key *k, const char *canonical_request)
{
	struct buf b = { 0 };
	char hash[65];

	if (k == NULL || k->amz_date == NULL || k->region == NULL || k->service == NULL ||
	    canonical_request == NULL)
		return NULL;
	buf_str(&b, "AWS4-HMAC-SHA256\n");
	buf_str(&b, k->amz_date);
	buf_chr(&b, '\n');
	scope(&b, k);
	buf_chr(&b, '\n');
	crypto_sha256_hex(canonical_request, strlen(canonical_request), hash);
	buf_str(&b, hash);
	return b.p;
}

void
sigv4_signature(const struct sigv4_key *k, const char *string_to_sign, char out[65])
{
	const char *region = k->region ? k->region : "";
	const char *service = k->service ? k->service : "";
	const char *sts = string_to_sign ? string_to_sign : "";
	uint8_t key[32], mac[32];
	struct buf secret = { 0 };
	char date[9] = "";

	snprintf(date, sizeof(date), "%.8s", k->amz_date ? k->amz_date : "");
	buf_str(&secret, "AWS4");
	buf_str(&secret, k->secret_key ? k->secret_key : "");
	crypto_hmac_sha256(secret.p, secret.len, date, strlen(date), key);
	crypto_hmac_sha256(key, 32, region, strlen(region), key);
	crypto_hmac_sha256(key, 32, service, strlen(service), key);
	crypto_hmac_sha256(key, 32, "aws4_request", 12, key);
	crypto_hmac_sha256(key, 32, sts, strlen(sts), mac);
	crypto_hex(mac, sizeof(mac), out);
	OPENSSL_cleanse(secret.p, secret.len);
	OPENSSL_cleanse(key, sizeof(key));
	free(secret.p);
}

char *
sigv4_authorization(const struct sigv4_key *k, const struct sigv4_request *rq,
    const char *signed_headers)
{
	char *creq = sigv4_canonical_request(rq, signed_headers), *sts = NULL;
	struct buf b = { 0 };
	const char *sh, *end;
	char sig[65];

	if (creq == NULL || k == NULL || k->access_key == NULL || k->secret_key == NULL)
		goto cleanup;
	sts = sigv4_string_to_sign(k, creq);
	if (sts == NULL)
		goto cleanup;
	sigv4_signature(k, sts, sig);
	end = strrchr(creq, '\n');	/* the signed-headers line precedes the hash */
	sh = end;
	while (sh > creq && sh[-1] != '\n')
		sh--;
	buf_str(&b, "AWS4-HMAC-SHA256 Credential=");
	buf_str(&b, k->access_key);
	buf_chr(&b, '/');
	scope(&b, k);
	buf_str(&b, ", SignedHeaders=");
	buf_add(&b, sh, (size_t)(end - sh));
	buf_str(&b, ", Signature=");
	buf_str(&b, sig);
cleanup:
	free(creq);
	free(sts);
	return b.p;
}

static bool
bad_auth(struct sigv4_auth *a, struct err *e, const char *what)
{
	sigv4_auth_cleanup(a);
	return err_set(e, 400, "sigv4.bad_authorization", "authorization header %s", what);
}

static bool
all_of(const char *s, const char *set)
{
	return *s != '\0' && strspn(s, set) == strlen(s);
}

/* Credential=AKID/yyyymmdd/region/service/aws4_request */
static bool
parse_credential(const char *v, size_t n, struct sigv4_auth *a)
{
	char *parts[5] = { 0 };
	const char *p = v, *end = v + n;
	size_t i;
	bool ok = false;

	for (i = 0; i < 5 && p <= end; i++) {
		const char *slash = i < 4 ? memchr(p, '/', (size_t)(end - p)) : end;

		if (slash == NULL)
			goto cleanup;
		parts[i] = strndup(p, (size_t)(slash - p));
		if (parts[i] == NULL || parts[i][0] == '\0')
			goto cleanup;
		p = slash + 1;
	}
	if (i != 5 || strcmp(parts[4], "aws4_request") != 0 || strlen(parts[1]) != 8 ||
	    !all_of(parts[1], "0123456789") || strchr(parts[3], '/') != NULL)
		goto cleanup;
	a->access_key = parts[0];
	a->date = parts[1];
	a->region = parts[2];
	a->service = parts[3];
	parts[0] = parts[1] = parts[2] = parts[3] = NULL;
	ok = true;
cleanup:
	for (i = 0; i < 5; i++)
		free(parts[i]);
	return ok;
}

bool
sigv4_parse_authorization(const char *value, struct sigv4_auth *out, struct err *e)
{
	static const char algo[] = "AWS4-HMAC-SHA256";
	const char *p = value;

	memset(out, 0, sizeof(*out));
	if (p == NULL)
		return bad_auth(out, e, "is missing");
	while (is_ws(*p))
		p++;
	if (strncmp(p, algo, sizeof(algo) - 1) != 0 || !is_ws(p[sizeof(algo) - 1]))
		return bad_auth(out, e, "has an unsupported algorithm");
	p += sizeof(algo) - 1;
	while (*p != '\0') {
		size_t l, kl;
		const char *eq;

		while (is_ws(*p) || *p == ',')
			p++;
		if (*p == '\0')
			break;
		l = strcspn(p, ",");
		while (l > 0 && is_ws(p[l - 1]))
			l--;
		eq = memchr(p, '=', l);
		if (eq == NULL)
			return bad_auth(out, e, "is malformed");
		kl = (size_t)(eq - p);
		l -= kl + 1;
		if (kl == 10 && strncmp(p, "Credential", kl) == 0 && out->access_key == NULL) {
			if (!parse_credential(eq + 1, l, out))
				return bad_auth(out, e, "has a malformed credential");
		} else if (kl == 13 && strncmp(p, "SignedHeaders", kl) == 0 &&
		    out->signed_headers == NULL) {
			out->signed_headers = strndup(eq + 1, l);
		} else if (kl == 9 && strncmp(p, "Signature", kl) == 0 &&
		    out->signature == NULL) {
			out->signature = strndup(eq + 1, l);
		} else {
			return bad_auth(out, e, "has an unknown or repeated field");
		}
		p = eq + 1 + l;
	}
	if (out->access_key == NULL || out->signed_headers == NULL || out->signature == NULL)
		return bad_auth(out, e, "is incomplete");
	if (!all_of(out->signed_headers, "abcdefghijklmnopqrstuvwxyz0123456789-_.;"))
		return bad_auth(out, e, "has malformed signed headers");
	if (strlen(out->signature) != 64 || !all_of(out->signature, "0123456789abcdef"))
		return bad_auth(out, e, "has a malformed signature");
	return true;
}

void
sigv4_auth_cleanup(struct sigv4_auth *a)
{
	if (a == NULL)
		return;
	free(a->access_key);
	free(a->date);
	free(a->region);
	free(a->service);
	free(a->signed_headers);
	free(a->signature);
	memset(a, 0, sizeof(*a));
}
