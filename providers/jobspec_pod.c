/* jobspec_pod: the "pod" section of the head and of each worker group (env, env_from,
 * volumes and their mounts, annotations, labels, tolerations, service account, sidecar
 * containers), validated into a canonical object (the environment's pod policy:
 * jobspec_pod_policy.c).  Every refusal is 422 with a JSON pointer. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "core/jsonx.h"
#include "providers/jobspec.h"

#define PTR	256
#define MAX_ENV		64
#define MAX_ENV_FROM	16
#define MAX_VOLUMES	16
#define MAX_MOUNTS	32
#define MAX_META	64
#define MAX_TOLS	16
#define MAX_SIDECARS	4
#define MAX_ARGS	64

/* Volume kinds in the order the policy lists them. */
const char *const jobspec_volume_kinds[] = { "persistent_volume_claim", "csi", "secret",
	"config_map", "empty_dir", NULL };
const char *const jobspec_csi_drivers[] = { "gcsfuse.csi.storage.gke.io", "fsx.csi.aws.com",
	"file.csi.azure.com", "blob.csi.azure.com", NULL };
#define kinds		jobspec_volume_kinds
#define csi_drivers	jobspec_csi_drivers
/* label and annotation prefixes fleetd, KubeRay and the batch schedulers own */
static const char *const owned_prefixes[] = { "fleet.io", "ray.io", "kueue.x-k8s.io",
	"volcano.sh", "yunikorn.apache.org", "kai.scheduler", NULL };
/* volumes and mounts fleetd renders itself */
static const char *const reserved_volumes[] = { "dshm", "fleet-signal", NULL };
static const char *const reserved_paths[] = { "/dev/shm", "/etc/fleet", NULL };

/* dst = base "/" member, cut at n - 1 bytes (pointers are for people: never longer). */
static void
join(char *dst, size_t n, const char *base, const char *member)
{
	size_t a = strlen(base), b = strlen(member);

	if (a > n - 1)
		a = n - 1;
	memmove(dst, base, a);
	if (a + 1 < n)
		dst[a++] = '/';
	if (b > n - 1 - a)
		b = n - 1 - a;
	memcpy(dst + a, member, b);
	dst[a + b] = '\0';
}

static bool
bad(struct err *e, const char *ptr, const char *msg)
{
	return err_field(e, 422, "jobspec.invalid_pod", ptr, "%s", msg);
}

bool
jobspec_in_list(const char *const *list, const char *s)
{
	for (size_t i = 0; s != NULL && list[i] != NULL; i++)
		if (strcmp(list[i], s) == 0)
			return true;
	return false;
}
#define in_list jobspec_in_list

/* DNS-1123 subdomain: lowercase labels joined by dots, at most max. */
static bool
dns_subdomain(const char *s, size_t max)
{
	size_t n = s ? strlen(s) : 0;

	if (n == 0 || n > max || !isalnum((unsigned char)s[0]) || !isalnum((unsigned char)s[n - 1]))
		return false;
	for (size_t i = 0; i < n; i++) {
		if (!(islower((unsigned char)s[i]) || isdigit((unsigned char)s[i]) || s[i] == '-' ||
		    s[i] == '.'))
			return false;
		if (s[i] == '.' && (s[i + 1] == '.' || s[i + 1] == '-' || s[i - 1] == '-'))
			return false;
	}
	return true;
}

/* Kubernetes' qualified-name part: [A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?, <= 63. */
static bool
qname(const char *s, size_t n)
{
	if (n == 0 || n > 63 || !isalnum((unsigned char)s[0]) || !isalnum((unsigned char)s[n - 1]))
		return false;
	for (size_t i = 0; i < n; i++)
		if (!isalnum((unsigned char)s[i]) && s[i] != '-' && s[i] != '_' && s[i] != '.')
			return false;
	return true;
}

/* A label or annotation key ([prefix/]name); false with *owned set when the prefix (or
 * a subdomain of it) is one fleetd, KubeRay or a batch scheduler owns. */
static bool
meta_key(const char *k, bool *owned)
{
	const char *slash = strchr(k, '/');
	char prefix[254];

	*owned = false;
	if (slash == NULL)
		return qname(k, strlen(k));
	if ((size_t)(slash - k) >= sizeof(prefix))
		return false;
	memcpy(prefix, k, (size_t)(slash - k));
	prefix[slash - k] = '\0';
	if (!dns_subdomain(prefix, 253) || !qname(slash + 1, strlen(slash + 1)))
		return false;
	for (size_t i = 0; owned_prefixes[i] != NULL; i++) {
		size_t pl = strlen(prefix), ol = strlen(owned_prefixes[i]);

		if (strcmp(prefix, owned_prefixes[i]) == 0 || (pl > ol &&
		    strcmp(prefix + pl - ol, owned_prefixes[i]) == 0 && prefix[pl - ol - 1] == '.'))
			*owned = true;
	}
	if (strcmp(k, "app.kubernetes.io/managed-by") == 0)
		*owned = true;
	return !*owned;
}

static bool
label_value(const char *v)
{
	size_t n = strlen(v);

	return n == 0 || qname(v, n);
}

static bool
text_ok(const char *s, size_t max)
{
	size_t n = strlen(s);

	return n <= max && jsonx_utf8_valid(s, n);
}

/* An absolute path without "..", NUL or a ':'; not one fleetd mounts. */
static bool
mount_path(const char *p, char *why, size_t len)
{
	if (p[0] != '/' || strlen(p) > 1024 || strstr(p, "/..") != NULL || strchr(p, ':') != NULL) {
		snprintf(why, len, "mount_path must be an absolute path without \"..\" or ':'");
		return false;
	}
	for (size_t i = 0; reserved_paths[i] != NULL; i++) {
		size_t rl = strlen(reserved_paths[i]);

		if (strncmp(p, reserved_paths[i], rl) == 0 && (p[rl] == '\0' || p[rl] == '/')) {
			snprintf(why, len, "mount_path %s is fleetd's own", reserved_paths[i]);
			return false;
		}
	}
	return true;
}

/* ------------------------------------------------------------------ members */

static bool
arr(json_t *o, const char *key, const char *prefix, size_t max, json_t **out, struct err *e)
{
	char ptr[PTR];
	json_t *v = json_object_get(o, key);

	*out = NULL;
	if (v == NULL || json_is_null(v))
		return true;
	join(ptr, sizeof(ptr), prefix, key);
	if (!json_is_array(v))
		return err_field(e, 400, "api.wrong_type", ptr, "%s must be an array", key);
	if (json_array_size(v) > max)
		return err_field(e, 422, "jobspec.invalid_pod", ptr, "%s holds at most %zu entries",
		    key, max);
	*out = v;
	return true;
}

/* A list member of the pod section: every entry is an object, checked by entry at its
 * pointer ptr into a canonical *out (new reference); done holds the entries accepted so far
 * (for uniqueness), ctx what the member needs besides (the pod's volumes for mounts and
 * sidecars).  On failure entry fills e and leaves *out NULL. */
typedef bool (*entry_fn)(json_t *v, const char *ptr, json_t *done, json_t *ctx,
    json_t **out, struct err *e);

struct list_member {
	const char	*key;
	size_t		 max;
	entry_fn	 entry;
};

/* The member m of o (prefix its pointer) as a canonical array in *out (NULL when absent). */
static bool
parse_list(json_t *o, const char *prefix, const struct list_member *m, json_t *ctx,
    json_t **out, struct err *e)
{
	json_t *a, *res, *c;
	char base[PTR], ptr[PTR];

	*out = NULL;
	if (!arr(o, m->key, prefix, m->max, &a, e))
		return false;
	if (a == NULL)
		return true;
	res = json_array();
	for (size_t i = 0; i < json_array_size(a); i++) {
		char idx[24];

		snprintf(idx, sizeof(idx), "%zu", i);
		join(base, sizeof(base), prefix, m->key);
		join(ptr, sizeof(ptr), base, idx);
		c = NULL;
		if (!json_is_object(json_array_get(a, i))) {
			err_field(e, 400, "api.wrong_type", ptr, "%s entries must be objects", m->key);
			json_decref(res);
			return false;
		}
		if (!m->entry(json_array_get(a, i), ptr, res, ctx, &c, e)) {
			json_decref(res);
			return false;
		}
		json_array_append_new(res, c);
	}
	*out = res;
	return true;
}

static bool
env_name(const char *n)
{
	size_t len = strlen(n);

	if (len == 0 || len > 128 || !(isalpha((unsigned char)n[0]) || n[0] == '_'))
		return false;
	for (size_t i = 0; i < len; i++)
		if (!isalnum((unsigned char)n[i]) && n[i] != '_' && n[i] != '.' && n[i] != '-')
			return false;
	return true;
}

/* Names that hold credentials by convention (HF_TOKEN, WANDB_API_KEY, DB_PASSWORD ...):
 * their literal values would be stored in the job spec, so they need secret_key_ref. */
static bool
secret_name(const char *n)
{
	static const char *const words[] = { "PASSWORD", "PASSWD", "SECRET", "TOKEN", "API_KEY",
		"APIKEY", "ACCESS_KEY", "PRIVATE_KEY", "CREDENTIAL", NULL };
	char up[129];
	size_t i;

	for (i = 0; n[i] != '\0' && i < sizeof(up) - 1; i++)
		up[i] = (char)toupper((unsigned char)n[i]);
	up[i] = '\0';
	for (i = 0; words[i] != NULL; i++)
		if (strstr(up, words[i]) != NULL)
			return true;
	return false;
}

static bool
env_entry(json_t *v, const char *ptr, json_t *done, json_t *ctx, json_t **out,
    struct err *e)
{
	static const char *const keys[] = { "name", "value", "secret_key_ref", NULL };
	static const char *const rkeys[] = { "name", "key", NULL };
	json_t *ref = NULL, *c;
	const char *name = NULL, *val = NULL, *sname = NULL, *skey = NULL;
	char sptr[PTR];

	(void)ctx;
	if (!jsonx_only(v, keys, ptr, e) || !jsonx_str(v, "name", ptr, true, &name, e) ||
	    !jsonx_str(v, "value", ptr, false, &val, e) ||
	    !jsonx_obj(v, "secret_key_ref", ptr, false, &ref, e))
		return false;
	join(sptr, sizeof(sptr), ptr, "name");
	if (!env_name(name))
		return bad(e, sptr, "env name must be a letter or '_', then letters, digits, '_', "
		    "'.' or '-' (at most 128)");
	if (strncasecmp(name, "FLEET_", 6) == 0)
		return bad(e, sptr, "env names FLEET_* are fleetd's own");
	for (size_t k = 0; k < json_array_size(done); k++)
		if (strcmp(jsonx_at(json_array_get(done, k), "name", NULL), name) == 0)
			return bad(e, sptr, "env names must be unique");
	if ((val == NULL) == (ref == NULL))
		return bad(e, ptr, "an env entry needs exactly one of value and secret_key_ref");
	if (val != NULL && secret_name(name)) {
		join(sptr, sizeof(sptr), ptr, "value");
		return err_field(e, 422, "jobspec.secret_in_env", sptr, "env %.64s looks like a "
		    "secret: give it with secret_key_ref (job specs are stored and shown in "
		    "clear)", name);
	}
	if (val != NULL && !text_ok(val, 32768)) {
		join(sptr, sizeof(sptr), ptr, "value");
		return bad(e, sptr, "value must be valid UTF-8 of at most 32768 bytes");
	}
	if (val != NULL) {
		*out = json_pack("{s:s, s:s}", "name", name, "value", val);
		return true;
	}
	join(sptr, sizeof(sptr), ptr, "secret_key_ref");
	if (!jsonx_only(ref, rkeys, sptr, e) || !jsonx_str(ref, "name", sptr, true, &sname, e) ||
	    !jsonx_str(ref, "key", sptr, true, &skey, e))
		return false;
	if (!dns_subdomain(sname, 253) || !qname(skey, strlen(skey)) || strlen(skey) > 253)
		return bad(e, sptr, "secret_key_ref needs a secret name (dns subdomain) and a key");
	c = json_pack("{s:s}", "name", name);
	json_object_set_new(c, "secret_key_ref", json_pack("{s:s, s:s}", "name", sname, "key",
	    skey));
	*out = c;
	return true;
}

static bool
env_from_entry(json_t *v, const char *ptr, json_t *done, json_t *ctx, json_t **out,
    struct err *e)
{
	static const char *const keys[] = { "secret", "config_map", NULL };
	const char *sec = NULL, *cm = NULL;
	char sptr[PTR];

	(void)done;
	(void)ctx;
	if (!jsonx_only(v, keys, ptr, e) || !jsonx_str(v, "secret", ptr, false, &sec, e) ||
	    !jsonx_str(v, "config_map", ptr, false, &cm, e))
		return false;
	if ((sec == NULL) == (cm == NULL))
		return bad(e, ptr, "an env_from entry names exactly one of secret and config_map");
	join(sptr, sizeof(sptr), ptr, sec ? "secret" : "config_map");
	if (!dns_subdomain(sec ? sec : cm, 253))
		return bad(e, sptr, "name must be a dns subdomain of at most 253 characters");
	*out = json_pack("{s:s}", sec ? "secret" : "config_map", sec ? sec : cm);
	return true;
}

/* One volume source of kind k (its object src at ptr) into canonical *out. */
static bool
volume_source(const char *k, json_t *src, const char *ptr, json_t **out, struct err *e)
{
	const char *s = NULL, *s2 = NULL;
	bool ro = false;
	char sp[PTR];

	*out = NULL;
	if (!json_is_object(src))
		return err_field(e, 400, "api.wrong_type", ptr, "%s must be an object", k);
	if (strcmp(k, "persistent_volume_claim") == 0) {
		if (!jsonx_only(src, (const char *const[]){ "claim_name", "read_only", NULL }, ptr, e) ||
		    !jsonx_str(src, "claim_name", ptr, true, &s, e) ||
		    !jsonx_bool(src, "read_only", ptr, false, &ro, e))
			return false;
		join(sp, sizeof(sp), ptr, "claim_name");
		if (!dns_subdomain(s, 253))
			return bad(e, sp, "claim_name must be a dns subdomain");
		*out = json_pack("{s:s, s:b}", "claim_name", s, "read_only", ro);
	} else if (strcmp(k, "csi") == 0) {
		json_t *attrs = NULL, *v;
		const char *ak;

		if (!jsonx_only(src, (const char *const[]){ "driver", "volume_attributes",
		    "read_only", NULL }, ptr, e) || !jsonx_str(src, "driver", ptr, true, &s, e) ||
		    !jsonx_obj(src, "volume_attributes", ptr, false, &attrs, e) ||
		    !jsonx_bool(src, "read_only", ptr, false, &ro, e))
			return false;
		join(sp, sizeof(sp), ptr, "driver");
		if (!in_list(csi_drivers, s))
			return bad(e, sp, "csi driver must be gcsfuse.csi.storage.gke.io, "
			    "fsx.csi.aws.com, file.csi.azure.com or blob.csi.azure.com");
		join(sp, sizeof(sp), ptr, "volume_attributes");
		if (attrs != NULL && json_object_size(attrs) > 32)
			return bad(e, sp, "volume_attributes holds at most 32 entries");
		json_object_foreach(attrs, ak, v) {
			if (!json_is_string(v) || !qname(ak, strlen(ak)) ||
			    !text_ok(json_string_value(v), 4096))
				return bad(e, sp, "volume_attributes maps names to strings");
		}
		*out = json_pack("{s:s, s:b}", "driver", s, "read_only", ro);
		if (attrs != NULL && json_object_size(attrs) > 0)
			json_object_set(*out, "volume_attributes", attrs);
	} else if (strcmp(k, "secret") == 0 || strcmp(k, "config_map") == 0) {
		const char *key = k[0] == 's' ? "secret_name" : "name";

		if (!jsonx_only(src, (const char *const[]){ key, NULL }, ptr, e) ||
		    !jsonx_str(src, key, ptr, true, &s, e))
			return false;
		join(sp, sizeof(sp), ptr, key);
		if (!dns_subdomain(s, 253))
			return bad(e, sp, "name must be a dns subdomain");
		*out = json_pack("{s:s}", key, s);
	} else {	/* empty_dir */
		int64_t bytes = 0;
		json_t *sz = json_object_get(src, "size_limit");
		char buf[32];

		if (!jsonx_only(src, (const char *const[]){ "size_limit", "medium", NULL }, ptr, e) ||
		    !jsonx_str(src, "medium", ptr, false, &s2, e))
			return false;
		join(sp, sizeof(sp), ptr, "medium");
		if (s2 != NULL && strcmp(s2, "Memory") != 0 && s2[0] != '\0')
			return bad(e, sp, "medium must be Memory or empty");
		join(sp, sizeof(sp), ptr, "size_limit");
		if (sz != NULL && !jobspec_parse_memory(sz, &bytes))
			return bad(e, sp, "size_limit must be a quantity of bytes such as \"10Gi\"");
		*out = json_object();
		if (s2 != NULL && s2[0] != '\0')
			json_object_set_new(*out, "medium", json_string(s2));
		if (bytes > 0) {
			jobspec_fmt_memory(bytes, buf, sizeof(buf));
			json_object_set_new(*out, "size_limit", json_string(buf));
		}
	}
	return true;
}

static bool
volume_entry(json_t *v, const char *ptr, json_t *done, json_t *ctx, json_t **out,
    struct err *e)
{
	json_t *src;
	const char *name = NULL, *k, *kind = NULL;
	char sptr[PTR];
	int n = 0;

	(void)ctx;
	if (!jsonx_str(v, "name", ptr, true, &name, e))
		return false;
	json_object_foreach(v, k, src) {
		if (strcmp(k, "name") == 0)
			continue;
		join(sptr, sizeof(sptr), ptr, k);
		if (strcmp(k, "host_path") == 0 || strcmp(k, "hostPath") == 0)
			return err_field(e, 422, "jobspec.pod_not_allowed", sptr,
			    "host_path volumes are never allowed");
		if (!in_list(kinds, k))
			return bad(e, sptr, "volume kind must be persistent_volume_claim, csi, "
			    "secret, config_map or empty_dir");
		kind = k;
		n++;
	}
	if (n != 1)
		return bad(e, ptr, "a volume has a name and exactly one kind");
	join(sptr, sizeof(sptr), ptr, "name");
	if (!jobspec_dns_label(name, 63) || in_list(reserved_volumes, name))
		return bad(e, sptr, "volume name must be a dns label, not dshm nor fleet-signal");
	if (jsonx_find(done, "name", name) != NULL)
		return bad(e, sptr, "volume names must be unique");
	join(sptr, sizeof(sptr), ptr, kind);
	if (!volume_source(kind, json_object_get(v, kind), sptr, &src, e))
		return false;
	*out = json_pack("{s:s, s:o}", "name", name, kind, src);
	return true;
}

/* volume_mounts of a container: every name is one of the pod's volumes (ctx). */
static bool
mount_entry(json_t *v, const char *ptr, json_t *done, json_t *volumes, json_t **out,
    struct err *e)
{
	static const char *const keys[] = { "name", "mount_path", "read_only", "sub_path", NULL };
	const char *name = NULL, *path = NULL, *sub = NULL;
	char sptr[PTR], why[96];
	bool ro = false;

	if (!jsonx_only(v, keys, ptr, e) || !jsonx_str(v, "name", ptr, true, &name, e) ||
	    !jsonx_str(v, "mount_path", ptr, true, &path, e) ||
	    !jsonx_bool(v, "read_only", ptr, false, &ro, e) ||
	    !jsonx_str(v, "sub_path", ptr, false, &sub, e))
		return false;
	join(sptr, sizeof(sptr), ptr, "name");
	if (jsonx_find(volumes, "name", name) == NULL)
		return bad(e, sptr, "volume_mounts name a volume of this pod's volumes");
	join(sptr, sizeof(sptr), ptr, "mount_path");
	if (!mount_path(path, why, sizeof(why)))
		return bad(e, sptr, why);
	if (jsonx_find(done, "mount_path", path) != NULL)
		return bad(e, sptr, "mount paths must be unique");
	join(sptr, sizeof(sptr), ptr, "sub_path");
	if (sub != NULL && (sub[0] == '/' || sub[0] == '\0' || strstr(sub, "..") != NULL ||
	    strlen(sub) > 1024))
		return bad(e, sptr, "sub_path must be a relative path without \"..\"");
	*out = json_pack("{s:s, s:s, s:b}", "name", name, "mount_path", path, "read_only", ro);
	if (sub != NULL)
		json_object_set_new(*out, "sub_path", json_string(sub));
	return true;
}

static bool
parse_meta(json_t *o, const char *key, const char *prefix, json_t **out, struct err *e)
{
	json_t *m = NULL, *v;
	const char *k;
	char base[PTR], ptr[PTR];
	bool labels = strcmp(key, "labels") == 0, owned;
	size_t total = 0;

	*out = NULL;
	if (!jsonx_obj(o, key, prefix, false, &m, e))
		return false;
	if (m == NULL)
		return true;
	join(ptr, sizeof(ptr), prefix, key);
	if (json_object_size(m) > MAX_META)
		return bad(e, ptr, "at most 64 entries");
	json_object_foreach(m, k, v) {
		/* keys with '/' are escaped as ~1 in the pointer (RFC 6901) */
		char ek[160];
		size_t n = 0;

		for (const char *p = k; *p != '\0' && n + 3 < sizeof(ek); p++) {
			if (*p == '/' || *p == '~') {
				ek[n++] = '~';
				ek[n++] = *p == '/' ? '1' : '0';
			} else {
				ek[n++] = *p;
			}
		}
		ek[n] = '\0';
		join(base, sizeof(base), prefix, key);
		join(ptr, sizeof(ptr), base, ek);
		if (!meta_key(k, &owned))
			return bad(e, ptr, owned ? "keys under fleet.io, ray.io, kueue.x-k8s.io and "
			    "the batch schedulers' prefixes are fleetd's, KubeRay's or the "
			    "scheduler's own" : "key must be a qualified name ([prefix/]name)");
		if (!json_is_string(v))
			return err_field(e, 400, "api.wrong_type", ptr, "value must be a string");
		if (labels && !label_value(json_string_value(v)))
			return bad(e, ptr, "label value must be at most 63 letters, digits, '-', '_' "
			    "or '.', starting and ending alphanumeric");
		total += strlen(json_string_value(v));
		if (!text_ok(json_string_value(v), 65536) || total > 65536)
			return bad(e, ptr, "annotations hold at most 64 KiB");
	}
	*out = json_deep_copy(m);
	return true;
}

static bool
toleration_entry(json_t *v, const char *ptr, json_t *done, json_t *ctx, json_t **out,
    struct err *e)
{
	static const char *const keys[] = { "key", "operator", "value", "effect",
		"toleration_seconds", NULL };
	static const char *const effects[] = { "NoSchedule", "PreferNoSchedule", "NoExecute", NULL };
	const char *key = NULL, *op = "Equal", *val = NULL, *eff = NULL;
	long long secs = -1;
	char sptr[PTR];
	bool owned;
	json_t *c;

	(void)done;
	(void)ctx;
	if (!jsonx_only(v, keys, ptr, e) || !jsonx_str(v, "key", ptr, false, &key, e) ||
	    !jsonx_str(v, "operator", ptr, false, &op, e) ||
	    !jsonx_str(v, "value", ptr, false, &val, e) ||
	    !jsonx_str(v, "effect", ptr, false, &eff, e) ||
	    !jsonx_int(v, "toleration_seconds", ptr, false, &secs, e))
		return false;
	join(sptr, sizeof(sptr), ptr, "operator");
	if (strcmp(op, "Equal") != 0 && strcmp(op, "Exists") != 0)
		return bad(e, sptr, "operator must be Equal or Exists");
	join(sptr, sizeof(sptr), ptr, "key");
	if (key != NULL && !meta_key(key, &owned) && !owned)
		return bad(e, sptr, "key must be a qualified name");
	if (key == NULL && strcmp(op, "Exists") != 0)
		return bad(e, sptr, "a toleration without a key needs operator Exists");
	join(sptr, sizeof(sptr), ptr, "value");
	if (val != NULL && (strcmp(op, "Exists") == 0 || !label_value(val)))
		return bad(e, sptr, "value goes with operator Equal and is a label value");
	join(sptr, sizeof(sptr), ptr, "effect");
	if (eff != NULL && !in_list(effects, eff))
		return bad(e, sptr, "effect must be NoSchedule, PreferNoSchedule or NoExecute");
	join(sptr, sizeof(sptr), ptr, "toleration_seconds");
	if (json_object_get(v, "toleration_seconds") != NULL &&
	    (eff == NULL || strcmp(eff, "NoExecute") != 0 || secs < 0 || secs > 86400 * 7))
		return bad(e, sptr, "toleration_seconds (0 to 604800) goes with effect NoExecute");
	c = json_pack("{s:s}", "operator", op);
	if (key != NULL)
		json_object_set_new(c, "key", json_string(key));
	if (val != NULL)
		json_object_set_new(c, "value", json_string(val));
	if (eff != NULL)
		json_object_set_new(c, "effect", json_string(eff));
	if (secs >= 0 && json_object_get(v, "toleration_seconds") != NULL)
		json_object_set_new(c, "toleration_seconds", json_integer(secs));
	*out = c;
	return true;
}

static bool
parse_strings(json_t *o, const char *key, const char *prefix, json_t **out, struct err *e)
{
	json_t *a;
	char ptr[PTR + 32];

	*out = NULL;
	if (!arr(o, key, prefix, MAX_ARGS, &a, e))
		return false;
	if (a == NULL)
		return true;
	for (size_t i = 0; i < json_array_size(a); i++) {
		json_t *v = json_array_get(a, i);

		snprintf(ptr, sizeof(ptr), "%.200s/%s/%zu", prefix, key, i);
		if (!json_is_string(v))
			return err_field(e, 400, "api.wrong_type", ptr, "entries must be strings");
		if (!text_ok(json_string_value(v), 4096))
			return bad(e, ptr, "entries are UTF-8 of at most 4096 bytes");
	}
	*out = json_deep_copy(a);
	return true;
}

/* The list members of a pod section and of its sidecars, one row each. */
static const struct list_member L_ENV = { "env", MAX_ENV, env_entry };
static const struct list_member L_ENV_FROM = { "env_from", MAX_ENV_FROM, env_from_entry };
static const struct list_member L_VOLUMES = { "volumes", MAX_VOLUMES, volume_entry };
static const struct list_member L_MOUNTS = { "volume_mounts", MAX_MOUNTS, mount_entry };
static const struct list_member L_TOLS = { "tolerations", MAX_TOLS, toleration_entry };

static bool
sidecar_entry(json_t *v, const char *ptr, json_t *done, json_t *volumes, json_t **out,
    struct err *e)
{
	static const char *const keys[] = { "name", "image", "command", "args", "env",
		"resources", "volume_mounts", NULL };
	static const char *const rkeys[] = { "cpu", "memory", NULL };
	const char *name = NULL, *image = NULL;
	json_t *c = NULL, *x = NULL, *res = NULL;
	char sptr[PTR], buf[32];
	int64_t cpu = 0, mem = 0;

	*out = NULL;
	if (json_object_get(v, "privileged") != NULL ||
	    json_object_get(v, "security_context") != NULL) {
		join(sptr, sizeof(sptr), ptr, json_object_get(v, "privileged") ?
		    "privileged" : "security_context");
		return err_field(e, 422, "jobspec.pod_not_allowed", sptr,
		    "privileged containers and security contexts are never allowed");
	}
	if (!jsonx_only(v, keys, ptr, e) || !jsonx_str(v, "name", ptr, true, &name, e) ||
	    !jsonx_str(v, "image", ptr, true, &image, e) ||
	    !jsonx_obj(v, "resources", ptr, false, &res, e))
		return false;
	join(sptr, sizeof(sptr), ptr, "name");
	if (!jobspec_dns_label(name, 63) || strncmp(name, "ray-", 4) == 0 ||
	    strncmp(name, "fleet-", 6) == 0)
		return bad(e, sptr, "container name must be a dns label not starting ray- or fleet-");
	if (jsonx_find(done, "name", name) != NULL)
		return bad(e, sptr, "container names must be unique");
	join(sptr, sizeof(sptr), ptr, "image");
	if (image[0] == '\0' || strlen(image) > 512 || strpbrk(image, " \t\r\n\"'") != NULL)
		return bad(e, sptr, "image must be an image reference without spaces");
	c = json_pack("{s:s, s:s}", "name", name, "image", image);
	for (int k = 0; k < 2; k++) {
		if (!parse_strings(v, k ? "args" : "command", ptr, &x, e))
			goto fail;
		if (x != NULL)
			json_object_set_new(c, k ? "args" : "command", x);
	}
	if (!parse_list(v, ptr, &L_ENV, NULL, &x, e))
		goto fail;
	if (x != NULL)
		json_object_set_new(c, "env", x);
	if (!parse_list(v, ptr, &L_MOUNTS, volumes, &x, e))
		goto fail;
	if (x != NULL)
		json_object_set_new(c, "volume_mounts", x);
	if (res != NULL) {
		join(sptr, sizeof(sptr), ptr, "resources");
		if (!jsonx_only(res, rkeys, sptr, e))
			goto fail;
		if (!jobspec_parse_cpu(json_object_get(res, "cpu"), &cpu) ||
		    !jobspec_parse_memory(json_object_get(res, "memory"), &mem)) {
			bad(e, sptr, "resources needs cpu and memory quantities such as \"500m\" and "
			    "\"1Gi\"");
			goto fail;
		}
		x = json_object();
		jobspec_fmt_cpu(cpu, buf, sizeof(buf));
		json_object_set_new(x, "cpu", json_string(buf));
		jobspec_fmt_memory(mem, buf, sizeof(buf));
		json_object_set_new(x, "memory", json_string(buf));
		json_object_set_new(c, "resources", x);
	}
	*out = c;
	return true;
fail:
	json_decref(c);
	return false;
}

static const struct list_member L_SIDECARS = { "containers", MAX_SIDECARS, sidecar_entry };

/* The pod section's members after its volumes, in the order they are checked (the first
 * refusal is the one reported); list NULL: a metadata map (parse_meta). */
static const struct {
	const char			*key;
	const struct list_member	*list;
} pod_members[] = {
	{ "env", &L_ENV }, { "env_from", &L_ENV_FROM }, { "volume_mounts", &L_MOUNTS },
	{ "annotations", NULL }, { "labels", NULL }, { "tolerations", &L_TOLS },
	{ "containers", &L_SIDECARS },
};

bool
jobspec_parse_pod(json_t *o, const char *prefix, json_t **out, struct err *e)
{
	static const char *const keys[] = { "env", "env_from", "volumes", "volume_mounts",
		"annotations", "labels", "tolerations", "service_account", "containers", NULL };
	json_t *p = json_object_get(o, "pod"), *res = NULL, *x, *vols = NULL;
	const char *sa = NULL;
	char ptr[PTR], sptr[PTR];
	bool ok = false;

	*out = NULL;
	if (p == NULL || json_is_null(p))
		return true;
	join(ptr, sizeof(ptr), prefix, "pod");
	if (!json_is_object(p))
		return err_field(e, 400, "api.wrong_type", ptr, "pod must be an object");
	if (!jsonx_only(p, keys, ptr, e) || !jsonx_str(p, "service_account", ptr, false, &sa, e))
		return false;
	res = json_object();
	if (!parse_list(p, ptr, &L_VOLUMES, NULL, &vols, e))
		goto cleanup;
	if (vols != NULL)
		json_object_set(res, "volumes", vols);
	for (size_t k = 0; k < sizeof(pod_members) / sizeof(pod_members[0]); k++) {
		if (!(pod_members[k].list != NULL ?
		    parse_list(p, ptr, pod_members[k].list, vols, &x, e) :
		    parse_meta(p, pod_members[k].key, ptr, &x, e)))
			goto cleanup;
		if (x != NULL)
			json_object_set_new(res, pod_members[k].key, x);
	}
	if (sa != NULL) {
		join(sptr, sizeof(sptr), ptr, "service_account");
		if (!dns_subdomain(sa, 253)) {
			bad(e, sptr, "service_account must be a dns subdomain");
			goto cleanup;
		}
		json_object_set_new(res, "service_account", json_string(sa));
	}
	if (json_object_size(res) > 0) {
		*out = res;
		res = NULL;
	}
	ok = true;
cleanup:
	json_decref(res);
	json_decref(vols);
	return ok;
}
