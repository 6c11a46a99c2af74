/* fuzz_providers: the provider drivers' pure response parsers (GKE, AKS, HyperPod, STS,
 * token endpoints, IAM XML, Kubernetes node and pod lists) on arbitrary answers, chained
 * as a refresh chains them.
 * Input: one selector byte, then NUL-separated chunks (JSON never holds a raw NUL). */
#include <math.h>

#include "providers/creds_int.h"
#include "providers/kube.h"
#include "providers/provider.h"
#include "tests/fuzz/fuzz.h"

#define MAX_CHUNKS 4

struct chunks {
	const char	*p[MAX_CHUNKS];
	size_t		 n[MAX_CHUNKS];
};

static void
split(const uint8_t *d, size_t size, struct chunks *c)
{
	for (int i = 0; i < MAX_CHUNKS; i++) {
		const uint8_t *z = size ? memchr(d, 0, size) : NULL;
		size_t n = z ? (size_t)(z - d) : size;

		c->p[i] = (const char *)d;
		c->n[i] = n;
		d += n + (z != NULL);
		size -= n + (z != NULL);
	}
}

/* A malloc'd NUL-terminated copy, as http_resp bodies are. */
static char *
body(const struct chunks *c, int i)
{
	return strndup(c->p[i], c->n[i]);
}

static void
check_next(char *next)
{
	FUZZ_CHECK(next == NULL || next[0] != '\0', "empty page token");
	free(next);
}

static void
check_pools(const struct prov_pools *out)
{
	for (size_t i = 0; i < out->n; i++) {
		const struct prov_pool *p = &out->v[i];

		FUZZ_CHECK(p->nodes >= 0 && p->min_nodes >= 0 && p->max_nodes >= p->nodes,
		    "pool %s nodes %d min %d max %d", p->name, p->nodes, p->min_nodes,
		    p->max_nodes);
		FUZZ_CHECK(p->accel_per_node >= 0 && p->vcpus >= 0 && p->reserved >= 0,
		    "pool %s accel %d vcpus %d reserved %d", p->name, p->accel_per_node, p->vcpus,
		    p->reserved);
		FUZZ_CHECK(p->quota_left >= -1, "pool %s quota_left %d", p->name, p->quota_left);
	}
}

static void
gke(const struct chunks *c)
{
	struct prov_pools out;
	struct err e = { 0 };
	char *next = NULL, *b0 = body(c, 0), *b1 = body(c, 1), *b2 = body(c, 2);

	prov_pools_init(&out);
	if (prov_gke_parse_node_pools(b0, c->n[0], &out, &next, &e))
		check_next(next);
	else
		FUZZ_CHECK(next == NULL && e.status == 502, "node pools refusal %d", e.status);
	prov_gke_parse_region(b1, c->n[1], &out, &e);
	next = NULL;
	if (prov_gke_parse_reservations(b2, c->n[2], &out, &next, &e))
		check_next(next);
	prov_gke_finish(&out);
	check_pools(&out);
	prov_pools_cleanup(&out);
	free(b0);
	free(b1);
	free(b2);
}

static void
aks(const struct chunks *c)
{
	struct prov_pools out;
	struct err e = { 0 };
	char *next = NULL, *b0 = body(c, 0), *b1 = body(c, 1), *b2 = body(c, 2);

	prov_pools_init(&out);
	if (prov_aks_parse_agent_pools(b0, c->n[0], &out, &next, &e))
		check_next(next);
	next = NULL;
	if (prov_aks_parse_skus(b1, c->n[1], "eastus", &out, &next, &e))
		check_next(next);
	next = NULL;
	if (prov_aks_parse_usages(b2, c->n[2], &out, &next, &e))
		check_next(next);
	prov_aks_finish(&out);
	check_pools(&out);
	prov_pools_cleanup(&out);
	free(b0);
	free(b1);
	free(b2);
}

static void
hyperpod(const struct chunks *c)
{
	struct prov_pools out;
	struct err e = { 0 };
	char *next = NULL, *b0 = body(c, 0), *b1 = body(c, 1), *key = body(c, 2);
	char tag[64];

	prov_pools_init(&out);
	prov_hyperpod_parse_cluster(b0, c->n[0], &out, &e);
	if (prov_hyperpod_parse_nodes(b1, c->n[1], &out, &next, &e))
		check_next(next);
	check_pools(&out);
	prov_pools_cleanup(&out);
	if (prov_hyperpod_role_tag(b1, c->n[1], key, tag, sizeof(tag)))
		FUZZ_CHECK(strlen(tag) < sizeof(tag), "role tag");
	free(b0);
	free(b1);
	free(key);
}

static void
creds(const struct chunks *c)
{
	struct prov_creds cr;
	struct err e = { 0 };
	char *b0 = body(c, 0), *b1 = body(c, 1), *tag = body(c, 2), small[8], *esc;
	struct http_resp r = { .status = 400, .body = b1, .body_len = c->n[1] };
	char msg[128];
	double t;

	if (prov_aws_parse_assume_role(b0, c->n[0], &cr, &e))
		FUZZ_CHECK(cr.access_key[0] && cr.secret_key[0] && isfinite(cr.expires) &&
		    cr.expires > 0, "assume role credentials");
	if (prov_parse_token(b1, c->n[1], &cr, &e))
		FUZZ_CHECK(cr.bearer[0] && isfinite(cr.expires) && cr.expires > 0,
		    "token expiry %f", cr.expires);
	t = creds_parse_time(b0);
	FUZZ_CHECK(isfinite(t), "time");
	if (creds_xml_text(b0, c->n[0], tag, small, sizeof(small)))
		FUZZ_CHECK(strlen(small) < sizeof(small), "xml text");
	creds_aws_error(&r, msg, sizeof(msg));
	FUZZ_CHECK(strlen(msg) < sizeof(msg), "aws error");
	creds_json_error(&r, msg, sizeof(msg));
	FUZZ_CHECK(strlen(msg) < sizeof(msg), "json error");
	esc = creds_form_escape(tag);
	FUZZ_CHECK(esc != NULL && strspn(esc, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
	    "0123456789-._~%") == strlen(esc), "form escape %s", esc);
	creds_form_free(esc);
	free(b0);
	free(b1);
	free(tag);
}

/* A member cluster's node and pod lists, and Kubernetes quantities. */
static void
kube(const struct chunks *c)
{
	struct kube_capacity cap;
	struct err e = { 0 };
	char *b0 = body(c, 0), *b1 = body(c, 1), *q = body(c, 2), *next = NULL;
	long long milli, units;

	kube_capacity_init(&cap, "cloud.google.com/gke-nodepool",
	    "cloud.google.com/gce-topology-subblock");
	if (kube_parse_nodes(b0, c->n[0], &cap, &next, &e))
		check_next(next);
	next = NULL;
	if (kube_parse_pods(b1, c->n[1], &cap, &next, &e))
		check_next(next);
	kube_capacity_finish(&cap);
	for (size_t i = 0; i < cap.n; i++) {
		const struct kube_node *n = &cap.v[i];

		FUZZ_CHECK(n->alloc_cpu_m >= 0 && n->alloc_mem >= 0 && n->alloc_accel >= 0 &&
		    n->used_cpu_m >= 0 && n->used_mem >= 0 && n->used_accel >= 0,
		    "node %s negative figures", n->name);
	}
	kube_capacity_cleanup(&cap);
	/* an apply's answer: the scan reads what the full parse reads, whenever both read it */
	{
		struct kube_ref ref;
		json_t *j = json_loadb(b0, c->n[0], 0, NULL), *md = json_object_get(j, "metadata");

		if (kube_ref_scan(b0, c->n[0], &ref) && json_is_object(md)) {
			const char *uid = json_string_value(json_object_get(md, "uid")),
			    *rv = json_string_value(json_object_get(md, "resourceVersion"));

			FUZZ_CHECK(strcmp(ref.uid, uid ? uid : "") == 0 &&
			    strcmp(ref.resource_version, rv ? rv : "") == 0 && ref.generation ==
			    json_integer_value(json_object_get(md, "generation")),
			    "kube_ref_scan differs from the full parse");
		}
		json_decref(j);
	}
	/* the same quantity in millis and in units agree (both rounded up; the parser's 1e-9
	 * tolerance lets "1n" be 1m but 0 units, hence the slack of one milli) */
	if (kube_parse_quantity(q, true, &milli) && kube_parse_quantity(q, false, &units))
		FUZZ_CHECK(milli >= 0 && units >= 0 && milli <= units * 1000 + 1 &&
		    (units == 0 || milli > (units - 1) * 1000 - 1), "quantity %s: %lld m, %lld",
		    q, milli, units);
	free(b0);
	free(b1);
	free(q);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct chunks c;

	if (size == 0)
		return 0;
	split(data + 1, size - 1, &c);
	switch (data[0] % 5) {
	case 0: gke(&c); break;
	case 1: aks(&c); break;
	case 2: hyperpod(&c); break;
	case 3: creds(&c); break;
	default: kube(&c); break;
	}
	return 0;
}
