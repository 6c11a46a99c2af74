/* cloudsim tpuslice: GKE dynamic slicing of Ironwood (TPU7x) in All Capacity mode (issue 26)
 * as GKE documents it:
 * https://docs.cloud.google.com/kubernetes-engine/docs/concepts/dynamic-slicing,
 * https://docs.cloud.google.com/kubernetes-engine/docs/how-to/create-dynamic-slices and
 * https://docs.cloud.google.com/kubernetes-engine/docs/reference/crds/slice.
 * A pool with "dynamic_slicing": true is provisioned incrementally (workload policy
 * accelerator-topology-mode provision_only): every 16 nodes are one 4x4x4 sub-block, each node
 * labelled cloud.google.com/gke-accelerator-topology-mode: PROVISION_ONLY and, for every shape
 * a slice can be carved in (2x2x1, 2x2x2, 2x2x4, 2x4x4 and the whole 4x4x4), its partition's
 * cloud.google.com/gke-tpu-partition-<shape>-id and -state (HEALTHY); no gke-tpu-topology: no
 * interconnect is formed.  A Slice (accelerator.gke.io/v1beta1, cluster-scoped, served where
 * such a pool exists: the slice controller) is validated as the controller does — type tpu7x,
 * a topology of the sub-slice shapes (one partition of that shape) or of 4x4x4 multiples
 * (A <= B <= C, (A*B*C)/64 partitions of 4x4x4), every partition whole, none used by another
 * slice — then Ready/ACTIVE, and its nodes get cloud.google.com/gke-tpu-slice: <name> and
 * cloud.google.com/gke-tpu-topology: <topology>; otherwise Ready False with reason
 * SliceCreationFailed.  When the Slice is gone the two labels go too. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cloudsim/cs.h"
#include "core/hash.h"

#define NPARTS	5

static const char *const shapes[NPARTS] = { "2x2x1", "2x2x2", "2x2x4", "2x4x4", "4x4x4" };

bool
cs_slices_on(const struct cs_cluster *cl)
{
	if (cl->provider != CS_GKE)
		return false;
	for (size_t i = 0; i < cl->npools; i++)
		if (cl->pools[i].dynamic_slicing)
			return true;
	return false;
}

/* Host q (0..15) of a sub-block holds chips x in [2hx, 2hx+1], y in [2hy, 2hy+1], z = hz
 * (hx = q % 2, hy = q / 2 % 2, hz = q / 4): its partition of each shape, nested. */
static int
part_index(int k, int q)
{
	int hx = q % 2, hy = q / 2 % 2, hz = q / 4;

	switch (k) {
	case 0:
		return q;
	case 1:
		return hx + 2 * hy + 4 * (hz / 2);
	case 2:
		return hx + 2 * hy;
	case 3:
		return hx;
	default:
		return 0;
	}
}

void
cs_tpu_partition_labels(json_t *l, const struct cs_pool *p, int idx)
{
	int sub = idx / 16, q = idx % 16;

	json_object_set_new(l, "cloud.google.com/gke-accelerator-topology-mode",
	    json_string("PROVISION_ONLY"));
	for (int k = 0; k < NPARTS; k++) {
		char key[96], seed[160];

		snprintf(seed, sizeof(seed), "%s/%d/%s/%d", p->rack_prefix, sub, shapes[k],
		    part_index(k, q));
		snprintf(key, sizeof(key), "cloud.google.com/gke-tpu-partition-%s-id", shapes[k]);
		json_object_set_new(l, key, json_sprintf("%08x%08x", hash_str(seed),
		    hash_str(p->rack_prefix)));
		snprintf(key, sizeof(key), "cloud.google.com/gke-tpu-partition-%s-state",
		    shapes[k]);
		json_object_set_new(l, key, json_string("HEALTHY"));
	}
}

static const char *
lbl(const struct cs_node *n, const char *k)
{
	return json_string_value(json_object_get(n->labels, k));
}

/* Why the Slice cannot be formed, NULL when it can; the nodes it takes are marked in take. */
static const char *
check(struct cs_cluster *cl, const char *name, json_t *spec, bool *take)
{
	const char *type = json_string_value(json_object_get(spec, "type")),
	    *topo = json_string_value(json_object_get(spec, "topology"));
	json_t *ids = json_object_get(spec, "partitionIds"), *id;
	int a = 0, b = 0, c = 0, k = -1, want;
	size_t i, j;
	char key[96], tail;

	if (type == NULL || strcmp(type, "tpu7x") != 0)
		return "spec.type must be tpu7x";
	if (topo == NULL || sscanf(topo, "%dx%dx%d%c", &a, &b, &c, &tail) != 3 || a < 1 ||
	    b < 1 || c < 1)
		return "spec.topology must look like AxBxC";
	for (int s = 0; s < NPARTS - 1; s++)
		if (strcmp(topo, shapes[s]) == 0)
			k = s;
	if (k < 0) {
		if (a % 4 || b % 4 || c % 4 || a > b || b > c || a * b * c > 9216)
			return "the topology is neither a sub-slice shape nor 4x4x4 multiples in "
			    "non-decreasing order";
		k = NPARTS - 1;
	}
	want = k == NPARTS - 1 ? a * b * c / 64 : 1;
	if (!json_is_array(ids) || (int)json_array_size(ids) != want)
		return "the topology doesn't match the number of partitions";
	snprintf(key, sizeof(key), "cloud.google.com/gke-tpu-partition-%s-id", shapes[k]);
	json_array_foreach(ids, i, id) {
		const char *v = json_string_value(id);
		int hosts = 0;

		if (v == NULL)
			return "partitionIds must be strings";
		for (j = 0; j < cl->nodes.n; j++) {
			struct cs_node *n = cl->nodes.v[j];
			const char *used = lbl(n, "cloud.google.com/gke-tpu-slice");

			if (lbl(n, key) == NULL || strcmp(lbl(n, key), v) != 0)
				continue;
			if (used != NULL && strcmp(used, name) != 0)
				return "a node of the partition is used by another slice";
			take[j] = true;
			hosts++;
		}
		if (hosts == 0)
			return "the selected nodes don't exist";
		if (hosts != (k == NPARTS - 1 ? 16 : (1 << k)))
			return "not all nodes within the partition are provisioned";
	}
	return NULL;
}

static void
set_status(struct cs_cluster *cl, json_t *o, bool ready, const char *reason, const char *msg,
    double now)
{
	char t[32];

	cs_rfc3339(now, t);
	json_object_set_new(o, "status", json_pack("{s:[{s:s, s:s, s:s, s:s, s:s}]}",
	    "conditions", "type", "Ready", "status", ready ? "True" : "False", "reason", reason,
	    "message", msg, "lastTransitionTime", t));
	cl->rv++;
}

static bool
retry(json_t *o)
{
	const char *v = json_string_value(json_object_get(json_object_get(json_object_get(o,
	    "metadata"), "annotations"), "slice.gke.io/retry-on-failure"));

	return v != NULL && strcmp(v, "true") == 0;
}

static bool
failed(json_t *o)
{
	const char *r = json_string_value(json_object_get(json_array_get(json_object_get(
	    json_object_get(o, "status"), "conditions"), 0), "reason"));

	return r != NULL && strcmp(r, "SliceCreationFailed") == 0;
}

void
cs_slice_tick(struct cs *cs, struct cs_cluster *cl, double now)
{
	const char *key;
	json_t *o;
	size_t j;

	(void)cs;
	if (!cs_slices_on(cl) || cl->plain == NULL)
		return;
	json_object_foreach(cl->plain, key, o) {
		const char *name = json_string_value(json_object_get(json_object_get(o,
		    "metadata"), "name")), *why;
		json_t *spec = json_object_get(o, "spec");
		bool *take;

		if (strncmp(key, "slices/", 7) != 0 || name == NULL)
			continue;
		/* formed or failed: done, unless a failed formation is to be retried (the
		 * slice.gke.io/retry-on-failure annotation) */
		if (json_object_get(o, "status") != NULL && !(retry(o) && failed(o)))
			continue;
		if ((take = calloc(cl->nodes.n + 1, sizeof(*take))) == NULL)
			abort();
		if ((why = check(cl, name, spec, take)) != NULL) {
			if (!failed(o))	/* a retried failure keeps its condition */
				set_status(cl, o, false, "SliceCreationFailed", why, now);
			free(take);
			continue;
		}
		for (j = 0; j < cl->nodes.n; j++) {
			struct cs_node *n = cl->nodes.v[j];

			if (!take[j])
				continue;
			json_object_set_new(n->labels, "cloud.google.com/gke-tpu-slice",
			    json_string(name));
			json_object_set_new(n->labels, "cloud.google.com/gke-tpu-topology",
			    json_string(json_string_value(json_object_get(spec, "topology"))));
		}
		free(take);
		set_status(cl, o, true, "ACTIVE", "", now);
	}
	/* a deleted Slice: its nodes lose the controller's labels */
	for (j = 0; j < cl->nodes.n; j++) {
		struct cs_node *n = cl->nodes.v[j];
		const char *s = lbl(n, "cloud.google.com/gke-tpu-slice");

		if (s == NULL || !n->pool->dynamic_slicing || cs_plain_get(cl, "slices", "", s))
			continue;
		json_object_del(n->labels, "cloud.google.com/gke-tpu-slice");
		json_object_del(n->labels, "cloud.google.com/gke-tpu-topology");
		cl->rv++;
	}
}
