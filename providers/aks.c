/* aks: the AKS driver — ARM agent pools, Microsoft.Compute SKUs (capabilities and
 * restrictions) and regional usages (quota), nextLink paging, and phase-2 checks: a token
 * of the control-plane managed identity by federation, both identities' cloud-id tags. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "core/config.h"
#include "providers/creds_int.h"
#include "providers/provider.h"

#define API_AKS		"2024-05-01"
#define API_SKUS	"2021-07-01"
#define API_USAGES	"2023-07-01"
#define API_MSI		"2023-01-31"
#define TAG_CLOUD	"fleet.io/cloud-id"

/* An ARM list page: a json object whose value, when present, is a list. */
static json_t *
load(const char *body, size_t len, const char *what, struct err *e)
{
	json_t *j = prov_json_object(body, len, what, e);

	if (j == NULL)
		return NULL;
	if (json_object_get(j, "value") != NULL && !json_is_array(json_object_get(j, "value"))) {
		json_decref(j);
		err_set(e, 502, "prov.bad_answer", "%s: value is not a list", what);
		return NULL;
	}
	return j;
}

static long long
jint(json_t *v)
{
	return prov_json_count(v, 0);
}

/* One ARM list page: item(v, i, out, ctx, e) for each member of value, then the page count
 * and *next (nextLink). */
static bool
arm_page(const char *body, size_t len, const char *what,
    bool (*item)(json_t *, size_t, struct prov_pools *, void *, struct err *), void *ctx,
    struct prov_pools *out, char **next, struct err *e)
{
	json_t *j = load(body, len, what, e), *v;
	size_t i;

	*next = NULL;
	if (j == NULL)
		return false;
	json_array_foreach(json_object_get(j, "value"), i, v)
		if (!item(v, i, out, ctx, e)) {
			json_decref(j);
			return false;
		}
	out->pages++;
	prov_json_next(json_object_get(j, "nextLink"), next);
	json_decref(j);
	return true;
}

static bool
agent_pool(json_t *v, size_t i, struct prov_pools *out, void *ctx, struct err *e)
{
	json_t *pr = json_object_get(v, "properties");
	const char *name = json_string_value(json_object_get(v, "name")),
	    *size = json_string_value(json_object_get(pr, "vmSize")),
	    *prio = json_string_value(json_object_get(pr, "scaleSetPriority"));
	struct prov_pool *p;

	(void)ctx;
	if (name == NULL || size == NULL || jint(json_object_get(pr, "count")) < 0)
		return err_set(e, 502, "prov.bad_answer", "aks agent pools: pool %zu lacks "
		    "name, vmSize or a sane count", i);
	p = prov_pools_add(out);
	snprintf(p->name, sizeof(p->name), "%s", name);
	snprintf(p->machine_type, sizeof(p->machine_type), "%s", size);
	p->nodes = (int)jint(json_object_get(pr, "count"));
	p->spot = prio != NULL && strcmp(prio, "Spot") == 0;
	/* An agent pool tied to a capacity reservation group runs on reserved capacity
	 * (issue 27): properties.capacityReservationGroupID,
	 * https://learn.microsoft.com/en-us/rest/api/aks/agent-pools/get and
	 * https://learn.microsoft.com/en-us/azure/aks/use-capacity-reservation-groups */
	if (!p->spot && json_string_value(json_object_get(pr, "capacityReservationGroupID")) != NULL)
		snprintf(p->capacity_type, sizeof(p->capacity_type), "reservation");
	p->autoscaling = json_is_true(json_object_get(pr, "enableAutoScaling"));
	p->min_nodes = p->max_nodes = p->nodes;
	if (p->autoscaling) {
		p->min_nodes = (int)jint(json_object_get(pr, "minCount"));
		p->max_nodes = (int)jint(json_object_get(pr, "maxCount"));
	}
	if (p->max_nodes < p->nodes)
		p->max_nodes = p->nodes;
	if (p->min_nodes < 0)
		p->min_nodes = 0;
	return true;
}

bool
prov_aks_parse_agent_pools(const char *body, size_t len, struct prov_pools *out, char **next,
    struct err *e)
{
	return arm_page(body, len, "aks agent pools", agent_pool, NULL, out, next, e);
}

static const char *
capability(json_t *sku, const char *name)
{
	json_t *c;
	size_t i;

	json_array_foreach(json_object_get(sku, "capabilities"), i, c) {
		const char *n = json_string_value(json_object_get(c, "name"));

		if (n != NULL && strcmp(n, name) == 0)
			return json_string_value(json_object_get(c, "value"));
	}
	return NULL;
}

static bool
restricted(json_t *sku, const char *location)
{
	json_t *r, *v;
	size_t i, k;

	json_array_foreach(json_object_get(sku, "restrictions"), i, r) {
		const char *t = json_string_value(json_object_get(r, "type"));

		if (t == NULL || strcmp(t, "Location") != 0)
			continue;
		json_array_foreach(json_object_get(r, "values"), k, v)
			if (json_is_string(v) && strcasecmp(json_string_value(v), location) == 0)
				return true;
		if (json_array_size(json_object_get(r, "values")) == 0)
			return true;
	}
	return false;
}

static bool
sku(json_t *v, size_t i, struct prov_pools *out, void *location, struct err *e)
{
	const char *name = json_string_value(json_object_get(v, "name")),
	    *rt = json_string_value(json_object_get(v, "resourceType")),
	    *fam = json_string_value(json_object_get(v, "family")),
	    *cpu = capability(v, "vCPUs"), *gpu = capability(v, "GPUs");

	(void)i;
	(void)e;
	if (name == NULL || (rt != NULL && strcmp(rt, "virtualMachines") != 0))
		return true;
	json_object_set_new(json_object_get(out->extra, "skus"), name, json_pack(
	    "{s:i, s:i, s:s, s:b}", "vcpus", cpu ? atoi(cpu) : 0, "gpus", gpu ? atoi(gpu) : 0,
	    "family", fam ? fam : "", "restricted", restricted(v, location)));
	return true;
}

bool
prov_aks_parse_skus(const char *body, size_t len, const char *location,
    struct prov_pools *out, char **next, struct err *e)
{
	if (out->extra == NULL)
		out->extra = json_object();
	if (json_object_get(out->extra, "skus") == NULL)
		json_object_set_new(out->extra, "skus", json_object());
	return arm_page(body, len, "compute skus", sku, (void *)location, out, next, e);
}

static bool
usage(json_t *v, size_t i, struct prov_pools *out, void *ctx, struct err *e)
{
	const char *m = json_string_value(json_object_get(json_object_get(v, "name"),
	    "value"));
	json_t *l = json_object_get(v, "limit"), *u = json_object_get(v, "currentValue");

	(void)i;
	(void)ctx;
	(void)e;
	if (m == NULL || !json_is_number(l) || !json_is_number(u))
		return true;
	prov_pools_add_quota(out, m, json_number_value(l), json_number_value(u));
	return true;
}

bool
prov_aks_parse_usages(const char *body, size_t len, struct prov_pools *out, char **next,
    struct err *e)
{
	return arm_page(body, len, "compute usages", usage, NULL, out, next, e);
}

static double
left(const struct prov_pools *out, const char *metric)
{
	const struct prov_quota *q = prov_pools_quota(out, metric);

	if (q == NULL)
		return -1;
	return q->limit > q->usage ? q->limit - q->usage : 0;
}

void
prov_aks_finish(struct prov_pools *out)
{
	json_t *skus = json_object_get(out->extra, "skus");

	for (size_t i = 0; i < out->n; i++) {
		struct prov_pool *p = &out->v[i];
		json_t *s = json_object_get(skus, p->machine_type);
		const char *fam = json_string_value(json_object_get(s, "family"));
		double cores;
		int vcpus, gpus;

		if (s == NULL)
			continue;
		vcpus = (int)json_integer_value(json_object_get(s, "vcpus"));
		gpus = (int)json_integer_value(json_object_get(s, "gpus"));
		if (vcpus > 0)
			p->vcpus = vcpus;
		if (gpus > 0 && p->accel_per_node == 0)
			p->accel_per_node = gpus;
		if (json_is_true(json_object_get(s, "restricted"))) {
			p->quota_left = 0;
			continue;
		}
		if (p->vcpus <= 0 || p->accel_per_node <= 0)
			continue;
		/* spot VMs count against lowPriorityCores, others against their family and
		 * the regional total */
		if (p->spot) {
			cores = left(out, "lowPriorityCores");
		} else {
			double fl = fam && fam[0] ? left(out, fam) : -1, tl = left(out, "cores");

			cores = fl < 0 ? tl : tl < 0 ? fl : fl < tl ? fl : tl;
		}
		if (cores >= 0 && p->vcpus > 0)
			p->quota_left = (int)fmin(floor(cores / p->vcpus) * p->accel_per_node,
			    (double)PROV_COUNT_MAX);
	}
}

/* ---- requests */

struct page_ctx {
	struct prov_pool_job	*job;
	int			 kind;	/* 0 agent pools, 1 skus, 2 usages */
};

static bool arm_get(struct prov_fetch *f, struct prov_pool_job *job, int kind,
    const char *next);

static void
arm_page_done(struct prov_fetch *f, void *ctx, struct http_resp *r, const struct err *e)
{
	struct prov_pool_job *job = ((struct page_ctx *)ctx)->job;
	int kind = ((struct page_ctx *)ctx)->kind;
	static const char *const what[] = { "aks agent pools", "compute skus", "compute usages" };
	struct err pe = { 0 };
	char *next = NULL;
	bool ok;

	free(ctx);
	if (!prov_page_ok(f, r, e, what[kind], prov_status_err))
		return;
	if (kind == 0)
		ok = prov_aks_parse_agent_pools(r->body, r->body_len, job->out, &next, &pe);
	else if (kind == 1)
		ok = prov_aks_parse_skus(r->body, r->body_len, job->cloud->region, job->out, &next,
		    &pe);
	else
		ok = prov_aks_parse_usages(r->body, r->body_len, job->out, &next, &pe);
	if (!ok) {
		prov_fetch_fail(f, &pe);
	} else if (next != NULL) {
		if (strncmp(next, cfg.arm_url, strlen(cfg.arm_url)) != 0) {
			err_set(&pe, 502, "prov.bad_answer", "%s: nextLink leaves the arm endpoint",
			    what[kind]);
			prov_fetch_fail(f, &pe);
		} else if (prov_page_more(f, job->out->pages, "prov.paging", what[kind])) {
			arm_get(f, job, kind, next);
		}
	}
	free(next);
}

static bool
arm_get(struct prov_fetch *f, struct prov_pool_job *job, int kind, const char *next)
{
	struct page_ctx *ctx = calloc(1, sizeof(*ctx));
	char url[2048];

	if (ctx == NULL)
		abort();
	ctx->job = job;
	ctx->kind = kind;
	if (next != NULL)
		snprintf(url, sizeof(url), "%s", next);
	else if (kind == 0)
		snprintf(url, sizeof(url), "%s%s/agentPools?api-version=" API_AKS, cfg.arm_url,
		    job->cluster->provider_cluster_id);
	else if (kind == 1)
		snprintf(url, sizeof(url), "%s/subscriptions/%s/providers/Microsoft.Compute/skus"
		    "?api-version=" API_SKUS "&%%24filter=location%%20eq%%20%%27%s%%27",
		    cfg.arm_url, job->cloud->subscription, job->cloud->region);
	else
		snprintf(url, sizeof(url), "%s/subscriptions/%s/providers/Microsoft.Compute/"
		    "locations/%s/usages?api-version=" API_USAGES, cfg.arm_url,
		    job->cloud->subscription, job->cloud->region);
	return prov_page_get(f, url, job->creds->bearer, arm_page_done, ctx);
}

static bool
aks_pools_begin(struct prov_fetch *f, struct prov_pool_job *job, struct err *e)
{
	if (!prov_cluster_id_ok(job, "/subscriptions/", "aks cluster id is not an arm resource "
	    "id", e))
		return false;
	if (!arm_get(f, job, 0, NULL)) {
		*e = f->err;
		return false;
	}
	return true;
}

/* The SKUs offered in the region and the region's usages (quota). */
static bool
aks_region_begin(struct prov_fetch *f, struct prov_pool_job *job, struct err *e)
{
	if (!arm_get(f, job, 1, NULL) || !arm_get(f, job, 2, NULL)) {
		*e = f->err;
		return false;
	}
	return true;
}

static void
aks_pools_finish(struct prov_pool_job *job)
{
	prov_aks_finish(job->out);
}

/* ---- phase 2 */

/* Reads one managed identity and appends its exists / cloud-tag checks; its principal id
 * goes to principal (for the distinctness check). False with e only when ARM could not be
 * asked; *passed says whether both checks passed. */
static bool
check_identity(const struct prov_cloud *c, const char *rid, const char *kind,
    const char *bearer, json_t *checks, char principal[64], bool *passed, struct err *e)
{
	char url[2048], why[400], check[64], ptr[64];
	struct http_resp r;
	json_t *mi = NULL;
	const char *tag, *pid;

	*passed = false;
	principal[0] = '\0';
	snprintf(url, sizeof(url), "%s%s?api-version=" API_MSI, cfg.arm_url, rid);
	snprintf(ptr, sizeof(ptr), "/%s", kind);
	if (!prov_get(url, bearer, &r, e))
		return false;
	snprintf(check, sizeof(check), "%s_exists", kind);
	if (r.status != 200) {
		creds_json_error(&r, why, sizeof(why));
		prov_check_add(checks, check, false, ptr, r.status == 404 ? "managed identity %s "
		    "not found (%s)" : "managed identity %s cannot be read (%s)", rid, why);
		goto cleanup;
	}
	prov_check_add(checks, check, true, ptr, "managed identity exists");
	mi = json_loadb(r.body ? r.body : "", r.body_len, 0, NULL);
	pid = json_string_value(json_object_get(json_object_get(mi, "properties"),
	    "principalId"));
	snprintf(principal, 64, "%s", pid ? pid : "");
	tag = json_string_value(json_object_get(json_object_get(mi, "tags"), TAG_CLOUD));
	snprintf(check, sizeof(check), "%s_cloud_tag", kind);
	*passed = tag != NULL && strcmp(tag, c->id) == 0;
	if (*passed)
		prov_check_add(checks, check, true, ptr, "managed identity carries tag "
		    TAG_CLOUD "=%s", c->id);
	else if (tag != NULL)
		prov_check_add(checks, check, false, ptr, "managed identity is tagged "
		    TAG_CLOUD "=%s, not this cloud's id %s", tag, c->id);
	else
		prov_check_add(checks, check, false, ptr, "managed identity lacks the tag "
		    TAG_CLOUD "=%s", c->id);
cleanup:
	json_decref(mi);
	http_resp_cleanup(&r);
	return true;
}

/* A refusal by Entra ID or ARM (a check fails) rather than a provider that cannot be
 * reached (the request fails). */
static bool
refused(const struct err *e)
{
	return e->status == 400 || e->status == 401 || e->status == 403 || e->status == 404;
}

/* control_plane_token: fleetd signs in as the control-plane identity through its
 * federated credential (see creds_flow.c). On success cr holds its ARM token. */
static bool
check_token(const struct prov_cloud *c, const char *cp, struct prov_creds *cr,
    json_t *checks, bool *have, struct err *e)
{
	struct err ce = { 0 };

	*have = false;
	if (prov_creds_get(c, cp, cr, &ce)) {
		*have = true;
		prov_check_add(checks, "control_plane_token", true, "/control_plane_role",
		    "fleetd signed in as %s by workload identity federation", cp);
		return true;
	}
	if (!refused(&ce)) {
		*e = ce;
		return false;
	}
	prov_check_add(checks, "control_plane_token", false, "/control_plane_role",
	    "fleetd cannot sign in as this identity: give it the federated credential of "
	    "iam.required (issuer https://login.microsoftonline.com/%s/v2.0, subject %s, "
	    "audience api://AzureADTokenExchange); tenant %s answered: %s",
	    cfg.azure_tenant ? cfg.azure_tenant : "", cfg.azure_client_id ?
	    cfg.azure_client_id : "", c->tenant, ce.msg);
	return true;
}

/* The negative check: the control-plane identity trusts no federated subject but fleetd's
 * own (issuer fleetd's tenant, subject its service principal).  Another subject would let
 * a token of someone else sign in as this identity.  Fills e only when ARM could not be
 * asked. */
static bool
check_federation(const struct prov_cloud *c, const char *cp, const char *bearer,
    json_t *checks, struct err *e)
{
	const char *subject = cfg.azure_principal_id ? cfg.azure_principal_id :
	    cfg.azure_client_id ? cfg.azure_client_id : "";
	char url[1400], issuer[160], why[512];
	struct http_resp r = { 0 };
	json_t *list = NULL, *f;
	size_t i;
	bool ok = true;

	(void)c;
	snprintf(issuer, sizeof(issuer), "https://login.microsoftonline.com/%s/v2.0",
	    cfg.azure_tenant ? cfg.azure_tenant : "");
	snprintf(url, sizeof(url), "%s%s/federatedIdentityCredentials?api-version=" API_MSI,
	    cfg.arm_url, cp);
	if (!prov_get(url, bearer, &r, e))
		return false;
	if (r.status != 200) {
		creds_json_error(&r, why, sizeof(why));
		prov_check_add(checks, "control_plane_federation_subject", false,
		    "/control_plane_role", "the federated credentials of %s cannot be read (%s)",
		    cp, why);
		http_resp_cleanup(&r);
		return false;
	}
	list = json_loadb(r.body ? r.body : "", r.body_len, 0, NULL);
	json_array_foreach(json_object_get(list, "value"), i, f) {
		json_t *pr = json_object_get(f, "properties");
		const char *sub = json_string_value(json_object_get(pr, "subject"));
		const char *iss = json_string_value(json_object_get(pr, "issuer"));

		if (sub != NULL && iss != NULL && strcmp(sub, subject) == 0 &&
		    strcmp(iss, issuer) == 0)
			continue;
		ok = false;
		prov_check_add(checks, "control_plane_federation_subject", false,
		    "/control_plane_role", "federated credential %s of %s trusts subject %s of "
		    "issuer %s; only fleetd's (subject %s) may sign in as this identity",
		    json_string_value(json_object_get(f, "name")) ?
		    json_string_value(json_object_get(f, "name")) : "?", cp, sub ? sub : "?",
		    iss ? iss : "?", subject);
	}
	if (ok)
		prov_check_add(checks, "control_plane_federation_subject", true,
		    "/control_plane_role", "a federated token of another subject is refused: only "
		    "fleetd's subject is trusted");
	json_decref(list);
	http_resp_cleanup(&r);
	return ok;
}

static bool
aks_verify_pair(const struct prov_cloud *c, const char *cp, const char *cluster,
    json_t *checks, struct err *e)
{
	struct prov_creds cr;
	struct err be = { 0 };
	char p_cp[64] = "", p_cl[64] = "";
	bool all, have, ok1 = false, ok2 = false;

	prov_creds_invalidate(c->id);
	if (!check_token(c, cp, &cr, checks, &have, e))
		return false;
	all = have;
	/* without the identity's own token, fleetd's reads the identities to say what else
	 * is wrong */
	if (!have && !creds_azure_arm_token(c->tenant, &cr, &be)) {
		if (!refused(&be)) {
			*e = be;
			return false;
		}
		prov_check_add(checks, "control_plane_role_exists", false, "/control_plane_role",
		    "fleetd cannot read identities in tenant %s: %s", c->tenant, be.msg);
		prov_check_add(checks, "cluster_role_exists", false, "/cluster_role",
		    "fleetd cannot read identities in tenant %s: %s", c->tenant, be.msg);
		return err_set(e, 422, "iam.verification_failed", "the iam pair failed "
		    "verification");
	}
	if (!check_identity(c, cp, "control_plane_role", cr.bearer, checks, p_cp, &ok1, e) ||
	    !check_identity(c, cluster, "cluster_role", cr.bearer, checks, p_cl, &ok2, e)) {
		memset(&cr, 0, sizeof(cr));
		return false;
	}
	if (have && !check_federation(c, cp, cr.bearer, checks, e)) {
		all = false;
		if (err_is_set(e)) {
			memset(&cr, 0, sizeof(cr));
			return false;
		}
	}
	memset(&cr, 0, sizeof(cr));
	all = all && ok1 && ok2;
	if (p_cp[0] != '\0' && strcmp(p_cp, p_cl) == 0) {
		all = false;
		prov_check_add(checks, "identities_distinct", false, "/cluster_role", "the control "
		    "plane and the cluster name the same identity (principal %s)", p_cp);
	}
	return prov_verified(all, e);
}

const struct prov_ops prov_aks_ops = {
	.name = "aks",
	.pool_label = "kubernetes.azure.com/agentpool",
	/* AKS documents no node label for the NVLink domain of its ND GB200/GB300 v6 racks
	 * nor for the InfiniBand scale unit
	 * (https://learn.microsoft.com/azure/virtual-machines/sizes/gpu-accelerated/
	 * nd-gb200-v6-series lists none): the cluster's operator labels the nodes with
	 * fleet.io/rack and fleet.io/block (for example from nvidia.com/gpu.clique, which
	 * NVIDIA's GPU feature discovery sets on multi-node NVLink systems). */
	.rack_label = "fleet.io/rack",
	.block_label = "fleet.io/block",
	.verify_pair = aks_verify_pair,
	.pools_begin = aks_pools_begin,
	.region_begin = aks_region_begin,
	.pools_finish = aks_pools_finish,
};
