/* kube: free capacity of a member cluster from its Kubernetes API — nodes (allocatable,
 * labels, taints, readiness) minus the requests of live pods — with pure page parsers and
 * batch requests; error mapping of Kubernetes Status answers. */
#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/jsonx.h"
#include "providers/creds_int.h"
#include "providers/kube.h"

#define PAGE_LIMIT	"500"
#define QTY_MAX		(1LL << 62)

void
kube_capacity_init(struct kube_capacity *c, const char *pool_label, const char *rack_label)
{
	memset(c, 0, sizeof(*c));
	c->pool_label = pool_label;
	c->rack_label = rack_label;
	c->use = json_object();
}

void
kube_capacity_cleanup(struct kube_capacity *c)
{
	if (c == NULL)
		return;
	free(c->v);
	json_decref(c->use);
	memset(c, 0, sizeof(*c));
}

bool
kube_parse_quantity(const char *s, bool milli, long long *out)
{
	static const struct { const char *sfx; long double mul; } t[] = {
		{ "Ki", 1024.0L }, { "Mi", 1048576.0L }, { "Gi", 1073741824.0L },
		{ "Ti", 1099511627776.0L }, { "Pi", 1125899906842624.0L },
		{ "Ei", 1152921504606846976.0L }, { "n", 1e-9L }, { "u", 1e-6L },
		{ "m", 1e-3L }, { "k", 1e3L }, { "M", 1e6L }, { "G", 1e9L }, { "T", 1e12L },
		{ "P", 1e15L }, { "E", 1e18L }, { "", 1.0L },
	};
	const char *p = s;
	char *end;
	long double v, mul = 1;
	size_t i;

	if (s == NULL || *s == '\0' || strlen(s) > 64)
		return false;
	if (*p == '+')
		p++;
	if (!isdigit((unsigned char)*p) && *p != '.')
		return false;
	v = strtold(p, &end);
	if (end == p || v < 0 || !isfinite((double)v))
		return false;
	/* strtold eats exponents ("1e3") and hex; refuse hex, keep decimal exponents */
	if (memchr(p, 'x', (size_t)(end - p)) || memchr(p, 'X', (size_t)(end - p)))
		return false;
	for (i = 0; i < sizeof(t) / sizeof(t[0]); i++)
		if (strcmp(end, t[i].sfx) == 0) {
			mul = t[i].mul;
			break;
		}
	if (i == sizeof(t) / sizeof(t[0]))
		return false;
	v = v * mul * (milli ? 1000.0L : 1.0L);
	if (v > (long double)QTY_MAX)
		return false;
	*out = (long long)ceill(v - 1e-9L);
	if (*out < 0)
		*out = 0;
	return true;
}

json_t *
kube_list_load(const char *body, size_t len, const char *kind, struct err *e)
{
	json_t *j = body ? json_loadb(body, len, 0, NULL) : NULL;

	if (!json_is_object(j) || !json_is_array(json_object_get(j, "items"))) {
		json_decref(j);
		err_set(e, 502, "kube.bad_answer", "%s: answer is not a list", kind);
		return NULL;
	}
	return j;
}

static bool
qty(json_t *res, const char *name, bool milli, long long *out)
{
	json_t *q = json_object_get(res, name);

	*out = 0;
	if (q == NULL)
		return true;
	/* the API always sends strings; a bare integer is tolerated */
	if (json_is_integer(q) && json_integer_value(q) >= 0 &&
	    json_integer_value(q) < (1LL << 40)) {
		*out = json_integer_value(q) * (milli ? 1000 : 1);
		return true;
	}
	/* One container asks at most 2^50 (a petabyte, a million cores): sums of thousands of
	 * them stay far from overflow. */
	return json_is_string(q) && kube_parse_quantity(json_string_value(q), milli, out) &&
	    *out >= 0 && *out <= (1LL << 50);
}

/* Sum of accelerator resources of a resource map. */
static bool
accel_of(json_t *res, long long *out)
{
	static const char *const names[] = { "nvidia.com/gpu", "google.com/tpu", "amd.com/gpu" };
	long long v;

	*out = 0;
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		if (!qty(res, names[i], false, &v))
			return false;
		*out += v;
	}
	return true;
}


bool
kube_taint_reclaims(const char *key)
{
	static const char *const exact[] = {
		"cloud.google.com/impending-node-termination",	/* GKE spot and preemptible VMs */
		"kubernetes.azure.com/scalesetpriority-eviction",
		"remediator.kubernetes.azure.com/unschedulable",	/* AKS node auto-drain */
	};

	if (strncmp(key, "aws-node-termination-handler/", 29) == 0)	/* NTH: spot-itn, ... */
		return true;
	for (size_t i = 0; i < sizeof(exact) / sizeof(exact[0]); i++)
		if (strcmp(key, exact[i]) == 0)
			return true;
	return false;
}

static bool
node_ready(json_t *node)
{
	json_t *c, *t, *spec = json_object_get(node, "spec");
	bool ready = false;
	size_t i;

	json_array_foreach(json_object_get(json_object_get(node, "status"), "conditions"), i, c) {
		const char *type = json_string_value(json_object_get(c, "type")),
		    *st = json_string_value(json_object_get(c, "status"));

		if (type != NULL && strcmp(type, "Ready") == 0)
			ready = st != NULL && strcmp(st, "True") == 0;
	}
	if (json_is_true(json_object_get(spec, "unschedulable")))
		return false;
	json_array_foreach(json_object_get(spec, "taints"), i, t) {
		const char *k = json_string_value(json_object_get(t, "key")),
		    *eff = json_string_value(json_object_get(t, "effect"));

		if (eff != NULL && strcmp(eff, "NoExecute") == 0)
			return false;
		if (k != NULL && (strcmp(k, "node.kubernetes.io/unschedulable") == 0 ||
		    strcmp(k, "node.kubernetes.io/not-ready") == 0 || kube_taint_reclaims(k)))
			return false;
	}
	return ready;
}

static void
label(json_t *labels, const char *key, char *out, size_t n)
{
	const char *v = key ? json_string_value(json_object_get(labels, key)) : NULL;

	snprintf(out, n, "%s", v ? v : "");
}

const char *const kube_tpu_part_shapes[KUBE_TPU_PARTS] = { "2x2x1", "2x2x2", "2x2x4",
    "2x4x4", "4x4x4" };

int
kube_tpu_part_index(const char *shape)
{
	for (int i = 0; shape != NULL && i < KUBE_TPU_PARTS; i++)
		if (strcmp(shape, kube_tpu_part_shapes[i]) == 0)
			return i;
	return -1;
}

/* The node's dynamic-slicing partitions (kube.h); true when it has any.  A partition whose
 * state is not HEALTHY or DEGRADED is left out: no slice can be formed on it. */
static bool
partitions(json_t *labels, struct kube_node *n)
{
	bool any = false;

	for (int i = 0; i < KUBE_TPU_PARTS; i++) {
		char key[96], st[24];

		snprintf(key, sizeof(key), "cloud.google.com/gke-tpu-partition-%s-id",
		    kube_tpu_part_shapes[i]);
		label(labels, key, n->parts[i], sizeof(n->parts[i]));
		if (n->parts[i][0] == '\0')
			continue;
		any = true;
		snprintf(key, sizeof(key), "cloud.google.com/gke-tpu-partition-%s-state",
		    kube_tpu_part_shapes[i]);
		label(labels, key, st, sizeof(st));
		if (st[0] != '\0' && strcmp(st, "HEALTHY") != 0 && strcmp(st, "DEGRADED") != 0)
			n->parts[i][0] = '\0';
	}
	return any;
}

static bool
parse_node(json_t *it, struct kube_capacity *out)
{
	json_t *md = json_object_get(it, "metadata"), *labels = json_object_get(md, "labels"),
	    *alloc = json_object_get(json_object_get(it, "status"), "allocatable");
	const char *name = json_string_value(json_object_get(md, "name"));
	struct kube_node *n;

	if (name == NULL || strlen(name) >= sizeof(n->name) || !json_is_object(alloc))
		return false;
	if (out->n == out->cap) {
		out->cap = out->cap ? out->cap * 2 : 32;
		out->v = realloc(out->v, out->cap * sizeof(*out->v));
		if (out->v == NULL)
			abort();
	}
	n = &out->v[out->n];
	memset(n, 0, sizeof(*n));
	snprintf(n->name, sizeof(n->name), "%s", name);
	if (!qty(alloc, "cpu", true, &n->alloc_cpu_m) || !qty(alloc, "memory", false,
	    &n->alloc_mem) || !accel_of(alloc, &n->alloc_accel))
		return false;
	label(labels, out->pool_label, n->pool, sizeof(n->pool));
	if (n->pool[0] == '\0')	/* the fleet-wide label cloudsim and fleetd both set */
		label(labels, "fleet.io/pool", n->pool, sizeof(n->pool));
	label(labels, out->rack_label, n->rack, sizeof(n->rack));
	if (n->rack[0] == '\0')
		label(labels, "fleet.io/rack", n->rack, sizeof(n->rack));
	label(labels, out->block_label, n->block, sizeof(n->block));
	if (n->block[0] == '\0')
		label(labels, "fleet.io/block", n->block, sizeof(n->block));
	label(labels, "node.kubernetes.io/instance-type", n->instance_type,
	    sizeof(n->instance_type));
	label(labels, "cloud.google.com/gke-tpu-topology", n->tpu_topology,
	    sizeof(n->tpu_topology));
	/* a node of a dynamic-slicing sub-block belongs to no fixed slice: the slice controller
	 * labels gke-tpu-topology on the nodes of each slice it forms, for that slice's life */
	if (partitions(labels, n))
		n->tpu_topology[0] = '\0';
	if (n->tpu_topology[0] != '\0')	/* a multi-host TPU slice is one node pool */
		snprintf(n->slice, sizeof(n->slice), "%s", n->pool);
	n->ready = node_ready(it);
	out->n++;
	return true;
}

/* One page of a NodeList or PodList: item(it, i, out, e) for each item, then *next
 * (metadata.continue) and the page count. */
static bool
parse_page(const char *body, size_t len, const char *kind,
    bool (*item)(json_t *, size_t, struct kube_capacity *, struct err *),
    struct kube_capacity *out, char **next, struct err *e)
{
	json_t *j = kube_list_load(body, len, kind, e), *it;
	size_t i;

	*next = NULL;
	if (j == NULL)
		return false;
	json_array_foreach(json_object_get(j, "items"), i, it)
		if (!item(it, i, out, e)) {
			json_decref(j);
			return false;
		}
	prov_json_next(jsonx_meta(j, "continue"), next);
	out->pages++;
	json_decref(j);
	return true;
}

static bool
node_item(json_t *it, size_t i, struct kube_capacity *out, struct err *e)
{
	if (!parse_node(it, out))
		return err_set(e, 502, "kube.bad_answer", "node list: item %zu has no name "
		    "or unreadable allocatable", i);
	return true;
}

bool
kube_parse_nodes(const char *body, size_t len, struct kube_capacity *out, char **next,
    struct err *e)
{
	return parse_page(body, len, "node list", node_item, out, next, e);
}

/* Effective request of a pod: max(sum of containers, largest init container) + overhead. */
static bool
pod_request(json_t *spec, long long r[3])
{
	static const char *const lists[] = { "containers", "initContainers" };
	long long init[3] = { 0, 0, 0 }, v[3], ov[3];
	json_t *c;
	size_t i;

	r[0] = r[1] = r[2] = 0;
	for (int l = 0; l < 2; l++)
		json_array_foreach(json_object_get(spec, lists[l]), i, c) {
			json_t *req = json_object_get(json_object_get(c, "resources"), "requests");

			if (!qty(req, "cpu", true, &v[0]) || !qty(req, "memory", false, &v[1]) ||
			    !accel_of(req, &v[2]))
				return false;
			for (int k = 0; k < 3; k++) {
				if (l == 0)
					r[k] += v[k];
				else if (v[k] > init[k])
					init[k] = v[k];
				if (r[k] > (1LL << 56))
					return false;	/* no pod asks that much: a hostile answer */
			}
		}
	if (!qty(json_object_get(spec, "overhead"), "cpu", true, &ov[0]) ||
	    !qty(json_object_get(spec, "overhead"), "memory", false, &ov[1]))
		return false;
	ov[2] = 0;
	for (int k = 0; k < 3; k++)
		r[k] = (r[k] > init[k] ? r[k] : init[k]) + ov[k];
	return true;
}

static bool
pod_item(json_t *it, size_t i, struct kube_capacity *out, struct err *e)
{
	json_t *spec = json_object_get(it, "spec"), *u;
	const char *node = json_string_value(json_object_get(spec, "nodeName")),
	    *phase = json_string_value(json_object_get(json_object_get(it, "status"),
	    "phase"));
	long long r[3];

	if (node == NULL || node[0] == '\0')
		return true;	/* pending: holds nothing yet */
	if (phase != NULL && (strcmp(phase, "Succeeded") == 0 ||
	    strcmp(phase, "Failed") == 0))
		return true;
	if (!pod_request(spec, r))
		return err_set(e, 502, "kube.bad_answer", "pod list: item %zu has an "
		    "unreadable resource request", i);
	u = json_object_get(out->use, node);
	if (u == NULL) {
		u = json_pack("[I, I, I]", (json_int_t)0, (json_int_t)0, (json_int_t)0);
		json_object_set_new(out->use, node, u);
	}
	for (int k = 0; k < 3; k++) {
		json_int_t sum = json_integer_value(json_array_get(u, (size_t)k));

		/* saturate: requests beyond 2^60 on one node are nonsense anyway */
		sum = sum > (1LL << 60) - r[k] ? (1LL << 60) : sum + r[k];
		json_array_set_new(u, (size_t)k, json_integer(sum));
	}
	out->pods++;
	return true;
}

bool
kube_parse_pods(const char *body, size_t len, struct kube_capacity *out, char **next,
    struct err *e)
{
	return parse_page(body, len, "pod list", pod_item, out, next, e);
}

void
kube_capacity_finish(struct kube_capacity *out)
{
	for (size_t i = 0; i < out->n; i++) {
		json_t *u = json_object_get(out->use, out->v[i].name);

		out->v[i].used_cpu_m = json_integer_value(json_array_get(u, 0));
		out->v[i].used_mem = json_integer_value(json_array_get(u, 1));
		out->v[i].used_accel = json_integer_value(json_array_get(u, 2));
	}
}

bool
kube_status_err(const struct http_resp *r, const char *what, struct err *e)
{
	json_t *j = r && r->body ? json_loadb(r->body, r->body_len, 0, NULL) : NULL;
	const char *m = json_string_value(json_object_get(j, "message"));
	long st = r ? r->status : 0;
	char msg[200];

	snprintf(msg, sizeof(msg), "%s", m ? m : "");
	json_decref(j);
	switch (st) {
	case 401: err_set(e, 401, "kube.unauthorized", "%s: token refused", what); break;
	case 403: err_set(e, 403, "kube.forbidden", "%s: forbidden", what); break;
	case 404: err_set(e, 404, "kube.not_found", "%s: not found", what); break;
	case 409: err_set(e, 409, "kube.conflict", "%s: conflict", what); break;
	case 422: err_set(e, 422, "kube.invalid", "%s: object invalid", what); break;
	case 429:
		err_set(e, 429, "kube.throttled", "%s: throttled", what);
		e->retry_after = r->retry_after > 0 ? r->retry_after : 0;
		break;
	default: err_set(e, 502, "kube.bad_status", "%s: unexpected status %ld", what, st);
	}
	if (msg[0] != '\0')
		err_detail(e, "%s", msg);
	return false;
}

json_t *
kube_list_answer(const struct http_resp *r, const char *what, struct err *e)
{
	if (r->status != 200) {
		kube_status_err(r, what, e);
		return NULL;
	}
	return kube_list_load(r->body, r->body_len, what, e);
}

/* ---- requests */

struct list_ctx {
	const struct prov_cluster	*k;
	struct kube_capacity		*out;
	bool				 pods;
};

static bool list_get(struct prov_fetch *f, struct list_ctx *ctx, const char *cont);

static void
list_done(struct prov_fetch *f, void *vctx, struct http_resp *r, const struct err *e)
{
	struct list_ctx *ctx = vctx;
	const char *what = ctx->pods ? "pod list" : "node list";
	struct err pe = { 0 };
	char *next = NULL;
	bool ok;

	if (!prov_page_ok(f, r, e, what, kube_status_err)) {
		free(ctx);
		return;
	}
	ok = ctx->pods ? kube_parse_pods(r->body, r->body_len, ctx->out, &next, &pe) :
	    kube_parse_nodes(r->body, r->body_len, ctx->out, &next, &pe);
	if (!ok) {
		prov_fetch_fail(f, &pe);
	} else if (next != NULL && prov_page_more(f, ctx->out->pages, "kube.paging", what)) {
		if (list_get(f, ctx, next))
			ctx = NULL;	/* the next page owns it */
	}
	free(next);
	free(ctx);
}

static bool
list_get(struct prov_fetch *f, struct list_ctx *ctx, const char *cont)
{
	char url[2048], *c = cont ? creds_form_escape(cont) : NULL;
	size_t n = strlen(ctx->k->api_server);
	struct http_req rq = { 0 };

	while (n > 0 && ctx->k->api_server[n - 1] == '/')
		n--;
	snprintf(url, sizeof(url), "%.*s/api/v1/%s?limit=" PAGE_LIMIT "%s%s%s", (int)n,
	    ctx->k->api_server, ctx->pods ? "pods" : "nodes", ctx->pods ?
	    "&fieldSelector=status.phase%21%3DSucceeded%2Cstatus.phase%21%3DFailed" : "",
	    c ? "&continue=" : "", c ? c : "");
	if (c != NULL)
		creds_form_free(c);
	rq.url = url;
	rq.bearer = ctx->k->token;
	rq.ca_pem = ctx->k->ca_pem;
	return prov_fetch_add(f, &rq, list_done, ctx);
}

bool
kube_capacity_begin(struct prov_fetch *f, const struct prov_cluster *k,
    struct kube_capacity *out, struct err *e)
{
	for (int i = 0; i < 2; i++) {
		struct list_ctx *ctx = calloc(1, sizeof(*ctx));

		if (ctx == NULL)
			abort();
		ctx->k = k;
		ctx->out = out;
		ctx->pods = i == 1;
		if (!list_get(f, ctx, NULL)) {
			free(ctx);
			*e = f->err;
			return false;
		}
	}
	return true;
}

bool
kube_capacity_get(const struct prov_cluster *k, struct kube_capacity *out, struct err *e)
{
	struct prov_fetch f;
	bool ok = false;

	prov_fetch_init(&f, http_batch_new(2));
	if (f.b == NULL)
		return err_set(e, 500, "kube.oom", "out of memory");
	if (kube_capacity_begin(&f, k, out, e) && prov_fetch_run_sync(&f, e)) {
		kube_capacity_finish(out);
		ok = true;
	}
	http_batch_free(f.b);
	return ok;
}
