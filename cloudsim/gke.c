/* cloudsim gke: container.googleapis.com v1 clusters and node pools, and Compute Engine
 * regions (with quotas[] computed from the fleet) and zonal reservations (paged). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cloudsim/cs.h"
#include "core/jsonx.h"

static json_t *
gke_taints(json_t *taints)
{
	json_t *out = json_array(), *t;
	size_t i;

	json_array_foreach(taints, i, t) {
		const char *e = json_string_value(json_object_get(t, "effect"));

		json_array_append_new(out, json_pack("{s:O, s:O, s:s}", "key",
		    json_object_get(t, "key"), "value", json_object_get(t, "value"), "effect",
		    e && !strcmp(e, "NoExecute") ? "NO_EXECUTE" : e && !strcmp(e, "PreferNoSchedule") ?
		    "PREFER_NO_SCHEDULE" : "NO_SCHEDULE"));
	}
	return out;
}

static json_t *
node_pool(struct cs_cluster *cl, struct cs_pool *p)
{
	char base[400];
	const char *nodes_sa = json_string_value(json_object_get(json_object_get(cl->iam,
	    "cluster_role"), "service_account"));
	json_t *cfg, *np, *acc = json_array();

	snprintf(base, sizeof(base), "projects/%s/locations/%s/clusters/%s/nodePools/%s",
	    cl->account, cl->region, cl->name, p->name);
	if (p->mt->accel != NULL && !p->mt->tpu)
		json_array_append_new(acc, json_pack("{s:o, s:s, s:{s:s}}", "acceleratorCount",
		    json_sprintf("%d", p->mt->accel_count), "acceleratorType", p->mt->accel,
		    "gpuDriverInstallationConfig", "gpuDriverVersion", "LATEST"));
	cfg = json_pack("{s:s, s:i, s:s, s:[s], s:s, s:O, s:o, s:o, s:b, s:s}", "machineType",
	    p->mt->name, "diskSizeGb", 200, "diskType", "pd-balanced", "oauthScopes",
	    "https://www.googleapis.com/auth/cloud-platform", "serviceAccount",
	    nodes_sa ? nodes_sa : "default", "labels", p->extra_labels ? p->extra_labels :
	    json_object(), "taints", gke_taints(p->extra_taints), "accelerators", acc, "spot",
	    p->spot, "imageType", "COS_CONTAINERD");
	if (p->extra_labels == NULL)
		json_decref(json_object_get(cfg, "labels"));
	np = json_pack("{s:s, s:o, s:i, s:{s:b, s:i, s:i, s:s}, s:{s:b, s:b}, s:s, s:s, "
	    "s:[s], s:i, s:{s:s}, s:o, s:s}",
	    "name", p->name, "config", cfg, "initialNodeCount", p->initial, "autoscaling",
	    "enabled", p->autoscale, "minNodeCount", p->min, "maxNodeCount", p->max,
	    "locationPolicy", "ANY", "management", "autoUpgrade", 1, "autoRepair", 1, "status",
	    "RUNNING", "version", "1.30.4-gke.1348000", "locations", cl->zone,
	    "podIpv4CidrSize", 24, "maxPodsConstraint", "maxPodsPerNode", "110", "selfLink",
	    json_sprintf("https://container.googleapis.com/v1/%s", base), "etag",
	    "b2b5a6f6-cs");
	/* capacity types as the NodePool resource states them:
	 * https://cloud.google.com/kubernetes-engine/docs/reference/rest/v1/projects.locations.clusters.nodePools */
	if (strcmp(p->capacity, "flex_start") == 0)
		json_object_set_new(np, "queuedProvisioning", json_pack("{s:b}", "enabled", 1));
	else if (strcmp(p->capacity, "reservation") == 0)
		json_object_set_new(cfg, "reservationAffinity", json_pack("{s:s, s:s, s:[s]}",
		    "consumeReservationType", "SPECIFIC_RESERVATION", "key",
		    "compute.googleapis.com/reservation-name", "values", p->name));
	if (p->mt->tpu)
		json_object_set_new(np, "placementPolicy", json_pack("{s:s, s:s}", "type",
		    "COMPACT", "tpuTopology", p->tpu_topology[0] ? p->tpu_topology : "2x2x1"));
	json_object_set_new(np, "instanceGroupUrls", json_pack("[o]", json_sprintf(
	    "https://www.googleapis.com/compute/v1/projects/%s/zones/%s/instanceGroupManagers/"
	    "gke-%s-%s-grp", cl->account, cl->zone, cl->name, p->name)));
	return np;
}

void
cs_gke_handle(struct cs *cs, struct cs_req *rq, struct cs_token *t)
{
	struct cs_cluster *cl;
	json_t *pools;
	size_t i;
	int nodes = 0;

	/* seg: gke v1 projects P locations L clusters C [nodePools [NP]] */
	if (rq->nseg < 8 || strcmp(rq->seg[1], "v1") || strcmp(rq->seg[2], "projects") ||
	    strcmp(rq->seg[4], "locations") || strcmp(rq->seg[6], "clusters") || rq->nseg > 10 ||
	    strcmp(rq->method, "GET") != 0 || (rq->nseg >= 9 && strcmp(rq->seg[8], "nodePools"))) {
		cs_reply_error(rq, 404, "NOT_FOUND", "Not found: %s.", rq->path);
		return;
	}
	cl = cs_cluster_find(cs, rq->seg[7]);
	if (cl == NULL || cl->provider != CS_GKE || strcmp(cl->account, rq->seg[3]) ||
	    (strcmp(cl->region, rq->seg[5]) && strcmp(cl->zone, rq->seg[5]) &&
	    strcmp(rq->seg[5], "-"))) {
		cs_reply_error(rq, 404, "NOT_FOUND", "Not found: projects/%s/locations/%s/"
		    "clusters/%s.", rq->seg[3], rq->seg[5], rq->seg[7]);
		return;
	}
	if (strcmp(t->tenant, cl->account) != 0) {
		cs_reply_error(rq, 403, "PERMISSION_DENIED", "Required \"container.clusters.get\" "
		    "permission(s) for \"projects/%s/locations/%s/clusters/%s\".", cl->account,
		    cl->region, cl->name);
		return;
	}
	if (rq->nseg == 10) {
		for (i = 0; i < cl->npools; i++)
			if (strcmp(cl->pools[i].name, rq->seg[9]) == 0) {
				cs_reply_json(rq, 200, node_pool(cl, &cl->pools[i]));
				return;
			}
		cs_reply_error(rq, 404, "NOT_FOUND", "Not found: projects/%s/locations/%s/clusters/"
		    "%s/nodePools/%s.", cl->account, cl->region, cl->name, rq->seg[9]);
		return;
	}
	pools = json_array();
	for (i = 0; i < cl->npools; i++) {
		json_array_append_new(pools, node_pool(cl, &cl->pools[i]));
		nodes += cs_pool_nodes(cl, &cl->pools[i]);
	}
	if (rq->nseg == 9) {
		cs_reply_json(rq, 200, json_pack("{s:o}", "nodePools", pools));
		return;
	}
	cs_reply_json(rq, 200, json_pack("{s:s, s:s, s:s, s:[s], s:o, s:s, s:s, s:s, s:s, "
	    "s:i, s:o, s:s, s:s, s:s}", "name", cl->name, "location", cl->region, "status",
	    "RUNNING", "locations", cl->zone, "nodePools", pools, "currentMasterVersion",
	    "1.30.4-gke.1348000", "currentNodeVersion", "1.30.4-gke.1348000",
	    "initialClusterVersion", "1.30.4-gke.1348000", "endpoint", "127.0.0.1",
	    "currentNodeCount", nodes, "selfLink", json_sprintf("https://container.googleapis.com/"
	    "v1/projects/%s/locations/%s/clusters/%s", cl->account, cl->region, cl->name),
	    "createTime", "2026-01-01T00:00:00+00:00", "zone", cl->region, "id",
	    "8f3c1f0e6a0d4b6e9a2f1c3b5d7e9f10"));
}

/* ---- Compute Engine */

static void
quota_add(json_t *q, const char *metric, double usage)
{
	json_t *m = json_object_get(q, metric);

	if (m == NULL) {
		m = json_pack("{s:s, s:f, s:f}", "metric", metric, "limit", 0.0, "usage", 0.0);
		json_object_set_new(q, metric, m);
	}
	json_object_set_new(m, "usage", json_real(json_real_value(json_object_get(m, "usage")) +
	    usage));
}

static json_t *
project_cfg(struct cs *cs, const char *project)
{
	return jsonx_find(json_object_get(json_object_get(cs->fleet, "gcp"), "projects"), "id",
	    project);
}

static void
region(struct cs *cs, struct cs_req *rq, const char *project, const char *name)
{
	json_t *q = json_object(), *lim, *v, *out, *arr = json_array(), *zones = json_array();
	const char *k;
	bool known = false;
	size_t c, i;

	lim = json_object_get(json_object_get(project_cfg(cs, project), "quotas"), name);
	json_object_foreach(lim, k, v) {
		quota_add(q, k, 0);
		json_object_set_new(json_object_get(q, k), "limit", json_real(json_number_value(v)));
	}
	for (c = 0; c < cs->nclusters; c++) {
		struct cs_cluster *cl = &cs->clusters[c];

		if (cl->provider != CS_GKE || strcmp(cl->account, project) ||
		    strcmp(cl->region, name))
			continue;
		known = true;
		json_array_append_new(zones, json_sprintf("https://www.googleapis.com/compute/v1/"
		    "projects/%s/zones/%s", project, cl->zone));
		for (i = 0; i < cl->nodes.n; i++) {
			struct cs_node *n = cl->nodes.v[i];
			const char *m = cs_gce_accel_quota_metric(n->pool->mt->accel, n->pool->spot);

			quota_add(q, n->pool->spot ? "PREEMPTIBLE_CPUS" : "CPUS", n->pool->mt->vcpus);
			if (m != NULL)
				quota_add(q, m, n->pool->mt->accel_count);
		}
	}
	if (!known && lim == NULL) {
		json_decref(q);
		json_decref(arr);
		json_decref(zones);
		cs_reply_error(rq, 404, "notFound", "The resource 'projects/%s/regions/%s' was not "
		    "found", project, name);
		return;
	}
	json_object_foreach(q, k, v)
		json_array_append(arr, v);
	out = json_pack("{s:s, s:s, s:s, s:s, s:s, s:o, s:o}", "kind", "compute#region", "id",
	    "1000", "name", name, "description", name, "status", "UP", "zones", zones,
	    "quotas", arr);
	json_object_set_new(out, "selfLink", json_sprintf("https://www.googleapis.com/compute/v1/"
	    "projects/%s/regions/%s", project, name));
	json_decref(q);
	cs_reply_json(rq, 200, out);
}

/* Zonal reservations (zone != NULL) or the aggregated list over every zone, both paged by
 * maxResults / pageToken as Compute pages them. */
static void
reservations(struct cs *cs, struct cs_req *rq, const char *project, const char *zone)
{
	const char *mr = cs_query(rq, "maxResults"), *pt = cs_query(rq, "pageToken");
	long max = mr ? atol(mr) : 500, off = 0, seen = 0, taken = 0;
	json_t *items = zone ? json_array() : json_object(), *r, *out;
	size_t i;

	if (max < 1 || max > 500) {
		json_decref(items);
		cs_reply_error(rq, 400, "invalid", "Invalid value for field 'maxResults': '%s'. "
		    "Must be less than or equal to 500", mr);
		return;
	}
	if (pt != NULL && (sscanf(pt, "pt%ld", &off) != 1 || off < 0)) {
		json_decref(items);
		cs_reply_error(rq, 400, "invalid", "Invalid value for field 'pageToken': '%s'. "
		    "Supplied page token is invalid.", pt);
		return;
	}
	if (max > cs->cfg.page_size)
		max = cs->cfg.page_size;
	json_array_foreach(json_object_get(project_cfg(cs, project), "reservations"), i, r) {
		const char *z = json_string_value(json_object_get(r, "zone")),
		    *mt = json_string_value(json_object_get(r, "machine_type"));
		const struct cs_machine *m = cs_machine_find(mt);
		json_t *acc, *one, *bucket;
		char key[96];

		if (z == NULL || (zone != NULL && strcmp(z, zone) != 0) || seen++ < off)
			continue;
		if (taken >= max) {
			seen = -1;
			break;
		}
		acc = json_array();
		if (m != NULL && m->accel != NULL)
			json_array_append_new(acc, json_pack("{s:s, s:i}", "acceleratorType", m->accel,
			    "acceleratorCount", m->accel_count));
		one = json_pack("{s:s, s:s, s:O, s:s, s:s, s:b, s:{s:o, s:o, s:{s:s, s:o}}}",
		    "kind", "compute#reservation", "id", "42", "name", json_object_get(r, "name"),
		    "zone", z, "status", "READY", "specificReservationRequired", 0,
		    "specificReservation", "count", json_sprintf("%lld",
		    json_integer_value(json_object_get(r, "count"))), "inUseCount",
		    json_sprintf("%lld", json_integer_value(json_object_get(r, "in_use"))),
		    "instanceProperties", "machineType", mt ? mt : "", "guestAccelerators", acc);
		json_object_set_new(one, "selfLink", json_sprintf("https://www.googleapis.com/"
		    "compute/v1/projects/%s/zones/%s/reservations/%s", project, z,
		    json_string_value(json_object_get(r, "name"))));
		taken++;
		if (zone != NULL) {
			json_array_append_new(items, one);
			continue;
		}
		snprintf(key, sizeof(key), "zones/%s", z);
		if ((bucket = json_object_get(items, key)) == NULL) {
			bucket = json_pack("{s:[]}", "reservations");
			json_object_set_new(items, key, bucket);
		}
		json_array_append_new(json_object_get(bucket, "reservations"), one);
	}
	out = json_pack("{s:s, s:s, s:o}", "kind", zone ? "compute#reservationList" :
	    "compute#reservationAggregatedList", "id", "projects/reservations", "items", items);
	if (seen < 0)
		json_object_set_new(out, "nextPageToken", json_sprintf("pt%ld", off + taken));
	cs_reply_json(rq, 200, out);
}

void
cs_gce_handle(struct cs *cs, struct cs_req *rq, struct cs_token *t)
{
	/* seg: gce compute v1 projects P regions R | zones Z reservations */
	if (rq->nseg < 7 || strcmp(rq->seg[1], "compute") || strcmp(rq->seg[2], "v1") ||
	    strcmp(rq->seg[3], "projects") || strcmp(rq->method, "GET")) {
		cs_reply_error(rq, 404, "notFound", "The requested URL was not found.");
		return;
	}
	if (strcmp(t->tenant, rq->seg[4]) != 0) {
		cs_reply_error(rq, 403, "forbidden", "Required 'compute.regions.get' permission for "
		    "'projects/%s'", rq->seg[4]);
		return;
	}
	if (rq->nseg == 7 && strcmp(rq->seg[5], "regions") == 0)
		region(cs, rq, rq->seg[4], rq->seg[6]);
	else if (rq->nseg == 8 && strcmp(rq->seg[5], "zones") == 0 &&
	    strcmp(rq->seg[7], "reservations") == 0)
		reservations(cs, rq, rq->seg[4], rq->seg[6]);
	else if (rq->nseg == 7 && strcmp(rq->seg[5], "aggregated") == 0 &&
	    strcmp(rq->seg[6], "reservations") == 0)
		reservations(cs, rq, rq->seg[4], NULL);
	else
		cs_reply_error(rq, 404, "notFound", "The requested URL was not found.");
}
