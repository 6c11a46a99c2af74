/* gke: the GKE driver — node pools (container v1), Compute regional quotas and
 * reservations, and phase-2 checks of the two service accounts. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/config.h"
#include "providers/creds_int.h"
#include "providers/provider.h"

static long long
jint(json_t *v)
{
	return prov_json_count(v, 0);
}

/* TPU machine types carry no accelerators[]: the machine type names the generation and
 * the chips per host (ct5p-hightpu-4t = 4 v5p chips), and GKE labels the nodes with the
 * gke-tpu-accelerator value below
 * (https://cloud.google.com/kubernetes-engine/docs/concepts/plan-tpus). */
static void
tpu_from_machine(struct prov_pool *p)
{
	static const struct { const char *prefix, *accel; } gens[] = {
		{ "ct5p-", "tpu-v5p-slice" }, { "ct5lp-", "tpu-v5-lite-podslice" },
		{ "ct6e-", "tpu-v6e-slice" }, { "tpu7x-", "tpu7x" },
	};
	const char *t;

	if (p->accel_per_node > 0)
		return;
	for (size_t i = 0; i < sizeof(gens) / sizeof(gens[0]); i++) {
		if (strncmp(p->machine_type, gens[i].prefix, strlen(gens[i].prefix)) != 0)
			continue;
		snprintf(p->accel_type, sizeof(p->accel_type), "%s", gens[i].accel);
		t = strrchr(p->machine_type, '-');
		p->accel_per_node = t ? atoi(t + 1) : 4;
		if (p->accel_per_node <= 0)
			p->accel_per_node = 4;
		return;
	}
}

static bool
parse_pool(json_t *np, struct prov_pools *out)
{
	json_t *config = json_object_get(np, "config"), *acc, *as, *a;
	struct prov_pool *p;
	const char *name = json_string_value(json_object_get(np, "name")),
	    *mt = json_string_value(json_object_get(config, "machineType")), *topo;
	long long zones = (long long)json_array_size(json_object_get(np, "locations"));
	size_t i;

	if (name == NULL || mt == NULL || !json_is_object(config))
		return false;
	if (zones <= 0)
		zones = 1;
	p = prov_pools_add(out);
	snprintf(p->name, sizeof(p->name), "%s", name);
	snprintf(p->machine_type, sizeof(p->machine_type), "%s", mt);
	acc = json_object_get(config, "accelerators");
	json_array_foreach(acc, i, a) {
		const char *t = json_string_value(json_object_get(a, "acceleratorType"));

		if (t == NULL)
			continue;
		snprintf(p->accel_type, sizeof(p->accel_type), "%s", t);
		p->accel_per_node += (int)jint(json_object_get(a, "acceleratorCount"));
	}
	tpu_from_machine(p);
	topo = json_string_value(json_object_get(json_object_get(np, "placementPolicy"),
	    "tpuTopology"));
	if (topo != NULL)
		snprintf(p->tpu_topology, sizeof(p->tpu_topology), "%s", topo);
	p->spot = json_is_true(json_object_get(config, "spot")) ||
	    json_is_true(json_object_get(config, "preemptible"));
	/* Capacity type (issue 27).  A pool with queuedProvisioning.enabled gets nodes only
	 * through a ProvisioningRequest (Dynamic Workload Scheduler, flex-start); one whose
	 * nodes must consume a specific reservation runs on reserved capacity:
	 * https://cloud.google.com/kubernetes-engine/docs/reference/rest/v1/projects.locations.clusters.nodePools
	 * (NodePool.queuedProvisioning, NodeConfig.reservationAffinity.consumeReservationType) */
	if (json_is_true(json_object_get(json_object_get(np, "queuedProvisioning"), "enabled")))
		snprintf(p->capacity_type, sizeof(p->capacity_type), "flex_start");
	else if (!p->spot && json_string_value(json_object_get(json_object_get(config,
	    "reservationAffinity"), "consumeReservationType")) != NULL &&
	    strcmp(json_string_value(json_object_get(json_object_get(config,
	    "reservationAffinity"), "consumeReservationType")), "SPECIFIC_RESERVATION") == 0)
		snprintf(p->capacity_type, sizeof(p->capacity_type), "reservation");
	p->nodes = (int)(jint(json_object_get(np, "initialNodeCount")) * zones);
	if (json_object_get(np, "currentNodeCount") != NULL)
		p->nodes = (int)jint(json_object_get(np, "currentNodeCount"));
	as = json_object_get(np, "autoscaling");
	p->autoscaling = json_is_true(json_object_get(as, "enabled"));
	p->min_nodes = p->max_nodes = p->nodes;
	if (p->autoscaling) {
		if (json_object_get(as, "totalMaxNodeCount") != NULL) {
			p->min_nodes = (int)jint(json_object_get(as, "totalMinNodeCount"));
			p->max_nodes = (int)jint(json_object_get(as, "totalMaxNodeCount"));
		} else {
			p->min_nodes = (int)(jint(json_object_get(as, "minNodeCount")) * zones);
			p->max_nodes = (int)(jint(json_object_get(as, "maxNodeCount")) * zones);
		}
	}
	if (p->nodes < 0 || p->max_nodes < 0 || p->accel_per_node < 0 || p->min_nodes < 0) {
		out->n--;
		return false;
	}
	if (p->max_nodes < p->nodes)
		p->max_nodes = p->nodes;
	return true;
}

bool
prov_gke_parse_node_pools(const char *body, size_t len, struct prov_pools *out, char **next,
    struct err *e)
{
	json_t *j = prov_json_object(body, len, "gke node pools", e), *pools, *np;
	size_t i;

	*next = NULL;
	if (j == NULL)
		return false;
	pools = json_object_get(j, "nodePools");
	if (pools != NULL && !json_is_array(pools)) {
		json_decref(j);
		return err_set(e, 502, "prov.bad_answer", "gke node pools: nodePools is not a list");
	}
	json_array_foreach(pools, i, np) {
		if (!parse_pool(np, out)) {
			json_decref(j);
			return err_set(e, 502, "prov.bad_answer", "gke node pools: pool %zu lacks "
			    "name, machine type or sane counts", i);
		}
	}
	out->pages++;
	prov_json_next(json_object_get(j, "nextPageToken"), next);
	json_decref(j);
	return true;
}

/* A zone listed twice is read once (its reservations would count twice). */
static bool
has_zone(json_t *zones, const char *z)
{
	json_t *v;
	size_t i;

	json_array_foreach(zones, i, v)
		if (strcmp(json_string_value(v), z) == 0)
			return true;
	return false;
}

bool
prov_gke_parse_region(const char *body, size_t len, struct prov_pools *out, struct err *e)
{
	json_t *j = prov_json_object(body, len, "gce region", e), *q, *zones;
	size_t i;

	if (j == NULL)
		return false;
	json_array_foreach(json_object_get(j, "quotas"), i, q) {
		const char *m = json_string_value(json_object_get(q, "metric"));
		json_t *l = json_object_get(q, "limit"), *u = json_object_get(q, "usage");

		if (m == NULL || !json_is_number(l) || !json_is_number(u))
			continue;
		prov_pools_add_quota(out, m, json_number_value(l), json_number_value(u));
	}
	/* zone URLs ".../zones/us-central1-a" -> names, for the zonal reservation lists */
	if (out->extra == NULL)
		out->extra = json_object();
	zones = json_array();
	json_array_foreach(json_object_get(j, "zones"), i, q) {
		const char *z = json_string_value(q), *slash = z ? strrchr(z, '/') : NULL;

		z = slash ? slash + 1 : z;
		if (z != NULL && z[0] != '\0' && strlen(z) < 64 && strspn(z,
		    "abcdefghijklmnopqrstuvwxyz0123456789-") == strlen(z) && !has_zone(zones, z))
			json_array_append_new(zones, json_string(z));
	}
	json_object_set_new(out->extra, "zones", zones);
	out->pages++;
	json_decref(j);
	return true;
}

static void
add_reservation(json_t *r, struct prov_pools *out)
{
	json_t *sr = json_object_get(r, "specificReservation"), *ip, *ga;
	const char *mt, *st = json_string_value(json_object_get(r, "status"));
	long long count, used, accel = 0;
	char metric[128];
	size_t i;
	struct prov_quota *q;

	ip = json_object_get(sr, "instanceProperties");
	mt = json_string_value(json_object_get(ip, "machineType"));
	if (mt == NULL || (st != NULL && strcmp(st, "READY") != 0))
		return;
	count = jint(json_object_get(sr, "count"));
	used = jint(json_object_get(sr, "inUseCount"));
	json_array_foreach(json_object_get(ip, "guestAccelerators"), i, ga)
		accel += jint(json_object_get(ga, "acceleratorCount"));
	if (count <= used || count > 100000)
		return;
	snprintf(metric, sizeof(metric), "reservation:%s", mt);
	q = prov_pools_quota_mut(out, metric);
	if (q != NULL) {
		q->limit += (double)((count - used) * (accel > 0 ? accel : 1));
		q->usage += (double)(count - used);
	} else {
		prov_pools_add_quota(out, metric, (double)((count - used) * (accel > 0 ? accel : 1)),
		    (double)(count - used));
	}
}

bool
prov_gke_parse_reservations(const char *body, size_t len, struct prov_pools *out, char **next,
    struct err *e)
{
	json_t *j = prov_json_object(body, len, "gce reservations", e), *items, *v, *r;
	const char *k;
	size_t i;

	*next = NULL;
	if (j == NULL)
		return false;
	items = json_object_get(j, "items");
	if (json_is_array(items)) {		/* zonal list */
		json_array_foreach(items, i, r)
			add_reservation(r, out);
	} else if (json_is_object(items)) {	/* aggregated list: {"zones/x": {...}} */
		json_object_foreach(items, k, v)
			json_array_foreach(json_object_get(v, "reservations"), i, r)
				add_reservation(r, out);
	}
	out->pages++;
	prov_json_next(json_object_get(j, "nextPageToken"), next);
	json_decref(j);
	return true;
}

/* Compute Engine regional quota metric of an accelerator type. */
static void
quota_metric(const char *accel, bool spot, char *out, size_t n)
{
	static const struct { const char *accel, *metric; } m[] = {
		{ "nvidia-h100-mega-80gb", "NVIDIA_H100_MEGA_GPUS" },
		{ "nvidia-h100-80gb", "NVIDIA_H100_GPUS" },
		{ "nvidia-a100-80gb", "NVIDIA_A100_80GB_GPUS" },
		{ "nvidia-tesla-a100", "NVIDIA_A100_GPUS" },
		{ "nvidia-l4", "NVIDIA_L4_GPUS" },
		{ "tpu-v5p-slice", "TPU_V5P_PODSLICE_CHIPS" },
	};

	out[0] = '\0';
	for (size_t i = 0; i < sizeof(m) / sizeof(m[0]); i++)
		if (strcmp(m[i].accel, accel) == 0) {
			snprintf(out, n, "%s%s", spot ? "PREEMPTIBLE_" : "", m[i].metric);
			return;
		}
}

void
prov_gke_finish(struct prov_pools *out)
{
	for (size_t i = 0; i < out->n; i++) {
		struct prov_pool *p = &out->v[i];
		struct prov_quota *q;
		char metric[128];

		if (p->accel_type[0] != '\0') {
			quota_metric(p->accel_type, p->spot, metric, sizeof(metric));
			q = prov_pools_quota_mut(out, metric);
			if (q != NULL)
				p->quota_left = q->limit > q->usage ?
				    (int)fmin(q->limit - q->usage, (double)PROV_COUNT_MAX) : 0;
		}
		snprintf(metric, sizeof(metric), "reservation:%s", p->machine_type);
		q = prov_pools_quota_mut(out, metric);
		if (q != NULL && !p->spot) {
			p->reserved = (int)fmax(0, fmin(q->limit, (double)PROV_COUNT_MAX));
			q->limit = 0;	/* counted once */
		}
	}
}

/* ---- requests */

/* The three reads of a cluster's pools: its node pools (the cluster's own) and its
 * region's quotas (the cloud's, at the same time), then the reservations of each zone the
 * region lists. */
enum page {
	PAGE_NODE_POOLS,
	PAGE_REGION,
	PAGE_RESERVATIONS,
};

struct page_ctx {
	struct prov_pool_job	*job;
	enum page		 kind;
	char			 zone[64];
};

static bool gke_get(struct prov_fetch *f, struct prov_pool_job *job, enum page kind,
    const char *zone, const char *token);

static void
gke_page_done(struct prov_fetch *f, void *ctx, struct http_resp *r, const struct err *e)
{
	static const char *const what[] = {
		[PAGE_NODE_POOLS] = "gke node pools",
		[PAGE_REGION] = "gce region",
		[PAGE_RESERVATIONS] = "gce reservations",
	};
	struct page_ctx *pc = ctx;
	struct prov_pool_job *job = pc->job;
	enum page kind = pc->kind;
	struct err pe = { 0 };
	char *next = NULL, zone[64];
	json_t *z;
	size_t i;
	bool ok = false;

	snprintf(zone, sizeof(zone), "%s", pc->zone);
	free(pc);
	if (!prov_page_ok(f, r, e, what[kind], prov_status_err))
		return;
	switch (kind) {
	case PAGE_NODE_POOLS:
		ok = prov_gke_parse_node_pools(r->body, r->body_len, job->out, &next, &pe);
		break;
	case PAGE_REGION:
		ok = prov_gke_parse_region(r->body, r->body_len, job->out, &pe);
		break;
	case PAGE_RESERVATIONS:
		ok = prov_gke_parse_reservations(r->body, r->body_len, job->out, &next, &pe);
		break;
	}
	if (!ok) {
		prov_fetch_fail(f, &pe);
	} else if (next != NULL) {
		if (prov_page_more(f, job->out->pages, "prov.paging", what[kind]))
			gke_get(f, job, kind, zone, next);
	} else if (kind == PAGE_REGION) {
		json_array_foreach(json_object_get(job->out->extra, "zones"), i, z)
			gke_get(f, job, PAGE_RESERVATIONS, json_string_value(z), NULL);
	}
	free(next);
}

static bool
gke_get(struct prov_fetch *f, struct prov_pool_job *job, enum page kind, const char *zone,
    const char *token)
{
	struct page_ctx *ctx = calloc(1, sizeof(*ctx));
	char url[2048], *tok = token ? creds_form_escape(token) : NULL;

	if (ctx == NULL)
		abort();
	ctx->job = job;
	ctx->kind = kind;
	snprintf(ctx->zone, sizeof(ctx->zone), "%s", zone ? zone : "");
	switch (kind) {
	case PAGE_NODE_POOLS:
		snprintf(url, sizeof(url), "%s/v1/%s/nodePools%s%s", cfg.gke_url,
		    job->cluster->provider_cluster_id, tok ? "?pageToken=" : "", tok ? tok : "");
		break;
	case PAGE_REGION:
		snprintf(url, sizeof(url), "%s/compute/v1/projects/%s/regions/%s", cfg.gce_url,
		    job->cloud->project, job->cloud->region);
		break;
	case PAGE_RESERVATIONS:
		snprintf(url, sizeof(url), "%s/compute/v1/projects/%s/zones/%s/reservations"
		    "?maxResults=500%s%s", cfg.gce_url, job->cloud->project, ctx->zone,
		    tok ? "&pageToken=" : "", tok ? tok : "");
		break;
	}
	if (tok != NULL)
		creds_form_free(tok);
	return prov_page_get(f, url, job->creds->bearer, gke_page_done, ctx);
}

static bool
gke_pools_begin(struct prov_fetch *f, struct prov_pool_job *job, struct err *e)
{
	if (!prov_cluster_id_ok(job, "projects/", "gke cluster id is not "
	    "projects/P/locations/L/clusters/C", e))
		return false;
	if (!gke_get(f, job, PAGE_NODE_POOLS, NULL, NULL)) {
		*e = f->err;
		return false;
	}
	return true;
}

/* The region's quotas, then the reservations of each of its zones. */
static bool
gke_region_begin(struct prov_fetch *f, struct prov_pool_job *job, struct err *e)
{
	if (!gke_get(f, job, PAGE_REGION, NULL, NULL)) {
		*e = f->err;
		return false;
	}
	return true;
}

static void
gke_pools_finish(struct prov_pool_job *job)
{
	prov_gke_finish(job->out);
}

/* ---- phase 2 */

static const char *
cloud_label_in(json_t *sa, const char *cloud_id)
{
	const char *d = json_string_value(json_object_get(sa, "description"));
	char want1[128], want2[128];

	snprintf(want1, sizeof(want1), "fleet.io/cloud-id=%s", cloud_id);
	snprintf(want2, sizeof(want2), "fleet-io-cloud-id=%s", cloud_id);
	if (d != NULL && (strstr(d, want1) != NULL || strstr(d, want2) != NULL))
		return d;
	return NULL;
}

/* Reads one service account and appends its exists / label checks. */
static bool
check_sa(const struct prov_cloud *c, const char *email, const char *kind, const char *bearer,
    json_t *checks, struct err *e)
{
	char url[1024], why[400], check[64], ptr[64];
	struct http_resp r;
	json_t *sa = NULL;
	bool ok = false;

	snprintf(url, sizeof(url), "%s/v1/projects/%s/serviceAccounts/%s", cfg.gcp_iam_url,
	    c->project, email);
	snprintf(ptr, sizeof(ptr), "/%s", kind);
	if (!prov_get(url, bearer, &r, e))
		return false;
	snprintf(check, sizeof(check), "%s_exists", kind);
	if (r.status != 200) {
		creds_json_error(&r, why, sizeof(why));
		prov_check_add(checks, check, false, ptr, "service account %s not found or not "
		    "readable in project %s (%s)", email, c->project, why);
		snprintf(check, sizeof(check), "%s_cloud_label", kind);
		prov_check_add(checks, check, false, ptr, "cannot check the fleet-io-cloud-id "
		    "label of an unreadable service account");
		goto cleanup;
	}
	prov_check_add(checks, check, true, ptr, "service account %s exists", email);
	sa = json_loadb(r.body ? r.body : "", r.body_len, 0, NULL);
	snprintf(check, sizeof(check), "%s_cloud_label", kind);
	ok = cloud_label_in(sa, c->id) != NULL;
	if (ok)
		prov_check_add(checks, check, true, ptr, "service account carries "
		    "fleet-io-cloud-id=%s", c->id);
	else
		prov_check_add(checks, check, false, ptr, "service account %s lacks the label "
		    "fleet-io-cloud-id=%s in its description", email, c->id);
cleanup:
	json_decref(sa);
	http_resp_cleanup(&r);
	return ok;
}

/* fleetd's own service account: the key file's client_email. */
static bool
fleetd_email(char *out, size_t n)
{
	json_t *key = cfg.gcp_sa_key_file ? json_load_file(cfg.gcp_sa_key_file, 0, NULL) : NULL;
	const char *email = json_string_value(json_object_get(key, "client_email"));

	snprintf(out, n, "%s", email ? email : "");
	json_decref(key);
	return out[0] != '\0';
}

/* The negative check: no identity but fleetd's may impersonate the control-plane service
 * account (getIamPolicy: members of the roles that grant it).  Fills e only when the IAM
 * API could not be asked. */
static bool
check_impersonators(const struct prov_cloud *c, const char *cp, const char *bearer,
    json_t *checks, struct err *e)
{
	static const char *const roles[] = { "roles/iam.serviceAccountTokenCreator",
		"roles/iam.serviceAccountUser", "roles/iam.workloadIdentityUser", "roles/owner",
		"roles/editor", NULL };
	static const struct http_header ct[] = { { "Content-Type", "application/json" } };
	char url[1024], me[320], why[400], bad[600] = "";
	struct http_req rq = { 0 };
	struct http_resp r = { 0 };
	json_t *pol = NULL, *b, *m;
	size_t i, j;
	bool ok = true;

	if (!fleetd_email(me, sizeof(me)))
		return err_set(e, 500, "prov.gcp_key", "gcp service-account key file missing or "
		    "invalid");
	snprintf(url, sizeof(url), "%s/v1/projects/%s/serviceAccounts/%s:getIamPolicy",
	    cfg.gcp_iam_url, c->project, cp);
	rq.method = "POST";
	rq.url = url;
	rq.body = "{}";
	rq.body_len = 2;
	rq.headers = ct;
	rq.nheaders = 1;
	rq.bearer = bearer;
	if (!prov_call(&rq, &r, e))
		return false;
	if (r.status != 200) {
		creds_json_error(&r, why, sizeof(why));
		prov_check_add(checks, "control_plane_impersonators", false, "/control_plane_role",
		    "the iam policy of %s cannot be read (%s)", cp, why);
		http_resp_cleanup(&r);
		return false;
	}
	pol = json_loadb(r.body ? r.body : "", r.body_len, 0, NULL);
	json_array_foreach(json_object_get(pol, "bindings"), i, b) {
		const char *role = json_string_value(json_object_get(b, "role"));
		bool grants = false;

		for (int k = 0; role != NULL && roles[k] != NULL; k++)
			grants = grants || strcmp(role, roles[k]) == 0;
		if (!grants)
			continue;
		json_array_foreach(json_object_get(b, "members"), j, m) {
			const char *who = json_string_value(m);

			if (who != NULL && strncmp(who, "serviceAccount:", 15) == 0 &&
			    strcmp(who + 15, me) == 0)
				continue;
			ok = false;
			if (strlen(bad) + strlen(who ? who : "?") + 4 < sizeof(bad))
				snprintf(bad + strlen(bad), sizeof(bad) - strlen(bad), "%s%s (%s)",
				    bad[0] ? ", " : "", who ? who : "?", role);
		}
	}
	if (ok)
		prov_check_add(checks, "control_plane_impersonators", true, "/control_plane_role",
		    "only fleetd (%s) may impersonate %s", me, cp);
	else
		prov_check_add(checks, "control_plane_impersonators", false, "/control_plane_role",
		    "identities other than fleetd may impersonate %s: %s", cp, bad);
	json_decref(pol);
	http_resp_cleanup(&r);
	return ok;
}

static bool
gke_verify_pair(const struct prov_cloud *c, const char *cp, const char *cluster,
    json_t *checks, struct err *e)
{
	struct prov_creds cr, base;
	struct err ce = { 0 };
	bool all = true, have = false;
	const char *bearer;

	if (!prov_gcp_base_token(&base, e))
		return false;
	prov_creds_invalidate(c->id);
	if (prov_creds_get(c, cp, &cr, &ce)) {
		have = true;
		prov_check_add(checks, "control_plane_token", true, "/control_plane_role",
		    "fleetd impersonated %s", cp);
	} else {
		all = false;
		prov_check_add(checks, "control_plane_token", false, "/control_plane_role",
		    "fleetd cannot impersonate %s: %s; grant fleetd's service account "
		    "roles/iam.serviceAccountTokenCreator on it", cp, ce.msg);
	}
	/* service accounts are read as the control-plane identity, which lives in the
	 * cloud's project; fleetd's own identity usually may not read them */
	bearer = have ? cr.bearer : base.bearer;
	all = check_sa(c, cp, "control_plane_role", bearer, checks, e) && all;
	if (err_is_set(e))
		goto cleanup;
	all = check_sa(c, cluster, "cluster_role", bearer, checks, e) && all;
	if (err_is_set(e))
		goto cleanup;
	if (have) {
		all = check_impersonators(c, cp, cr.bearer, checks, e) && all;
		if (err_is_set(e))
			goto cleanup;
	}
cleanup:
	memset(&cr, 0, sizeof(cr));
	memset(&base, 0, sizeof(base));
	return prov_verified(all, e);
}

const struct prov_ops prov_gke_ops = {
	.name = "gke",
	.pool_label = "cloud.google.com/gke-nodepool",
	/* GKE labels each node of a reserved block with its place in it:
	 * cloud.google.com/gce-topology-block (the block: sub-blocks joined by one
	 * network fabric), -subblock (the rack: an NVL72 rack of A4X, the NVLink domain) and
	 * -host; https://cloud.google.com/ai-hypercomputer/docs/workloads/
	 * schedule-gke-workloads-tas ("Topology of GKE nodes"). */
	.rack_label = "cloud.google.com/gce-topology-subblock",
	.block_label = "cloud.google.com/gce-topology-block",
	.verify_pair = gke_verify_pair,
	.pools_begin = gke_pools_begin,
	.region_begin = gke_region_begin,
	.pools_finish = gke_pools_finish,
};
