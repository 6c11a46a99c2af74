/* cloudsim azure: Azure AD v2 token endpoint (client secret, and client assertion for a
 * managed identity's federated credential) and ARM — AKS agent pools, Microsoft.Compute
 * skus (with restrictions) and usages, user-assigned managed identities and their
 * federated credentials; api-version required, nextLink paging, ARM error objects. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "cloudsim/cs.h"

#define ARM_SCOPE	"https://management.azure.com/.default"
#define XCHG_AUD	"api://AzureADTokenExchange"
#define JWT_BEARER	"urn:ietf:params:oauth:client-assertion-type:jwt-bearer"

struct login {
	const char	*tenant;
	char		*gt, *id, *sec, *scope, *cat, *ca;
};

static bool
tenant_known(struct cs *cs, const char *tenant)
{
	size_t i;

	for (i = 0; i < cs->apps.n; i++)
		if (strcmp(((struct cs_az_app *)cs->apps.v[i])->tenant, tenant) == 0)
			return true;
	for (i = 0; i < cs->subs.n; i++)
		if (strcmp(((struct cs_az_sub *)cs->subs.v[i])->tenant, tenant) == 0)
			return true;
	return false;
}

static void
token_reply(struct cs *cs, struct cs_req *rq, struct cs_token *t, const char *scope)
{
	snprintf(t->scope, sizeof(t->scope), "%s", scope);
	cs_reply_json(rq, 200, json_pack("{s:s, s:i, s:i, s:s}", "token_type", "Bearer",
	    "expires_in", (int)cs->cfg.token_ttl_s - 1, "ext_expires_in",
	    (int)cs->cfg.token_ttl_s - 1, "access_token", t->value));
}

/* client_credentials with a client secret: an app of the tenant, or a multi-tenant app
 * consented there (fleetd's). Scopes: ARM, or the token-exchange audience fleetd's own
 * token carries when it is the assertion of a federated credential. */
static void
login_secret(struct cs *cs, struct cs_req *rq, struct login *l)
{
	struct cs_az_app *app = NULL;
	struct cs_token *t;
	size_t i;

	for (i = 0; i < cs->apps.n && l->id != NULL; i++) {
		struct cs_az_app *a = cs->apps.v[i];

		if (strcmp(a->client_id, l->id) == 0 &&
		    (strcmp(a->tenant, l->tenant) == 0 || a->multi_tenant))
			app = a;
	}
	if (app == NULL) {
		cs_reply_error(rq, 400, "unauthorized_client", "AADSTS700016: Application with "
		    "identifier '%s' was not found in the directory '%s'.", l->id ? l->id : "",
		    l->tenant);
	} else if (l->sec == NULL) {
		cs_reply_error(rq, 401, "invalid_client", "AADSTS7000218: The request body must "
		    "contain the following parameter: 'client_assertion' or 'client_secret'.");
	} else if (strcmp(l->sec, app->secret) != 0) {
		cs_reply_error(rq, 401, "invalid_client", "AADSTS7000215: Invalid client secret "
		    "provided. Ensure the secret being sent in the request is the client secret "
		    "value, not the client secret ID, for a secret added to app '%s'.", app->client_id);
	} else if (l->scope == NULL || (strcmp(l->scope, ARM_SCOPE) != 0 &&
	    strcmp(l->scope, XCHG_AUD "/.default") != 0)) {
		cs_reply_error(rq, 400, "invalid_scope", "AADSTS1002012: The provided value for "
		    "scope %s is not valid. Client credential flows must have a scope value with "
		    "/.default suffixed to the resource identifier (application ID URI).",
		    l->scope ? l->scope : "");
	} else {
		t = cs_token_issue(cs, CS_TOK_AZURE, app->client_id, l->tenant,
		    cs->cfg.token_ttl_s);
		snprintf(t->subject, sizeof(t->subject), "%s", app->object_id);
		token_reply(cs, rq, t, l->scope);
	}
}

/* The federated credential of m matching the assertion's issuer and subject, or NULL. */
static json_t *
fic_match(struct cs_az_identity *m, const char *iss, const char *sub)
{
	json_t *f;
	size_t i;

	json_array_foreach(m->fics, i, f)
		if (strcmp(json_string_value(json_object_get(f, "issuer")), iss) == 0 &&
		    strcmp(json_string_value(json_object_get(f, "subject")), sub) == 0)
			return f;
	return NULL;
}

/* client_credentials with a client assertion for a user-assigned managed identity
 * (workload identity federation): the assertion is a token cloudsim's AD issued (an Entra
 * token of fleetd's app for api://AzureADTokenExchange), accepted when one of the
 * identity's federated credentials names its issuer, subject and audience. */
static void
login_assertion(struct cs *cs, struct cs_req *rq, struct login *l)
{
	struct cs_az_identity *m = l->id ? cs_mi_find(cs, NULL, l->id) : NULL;
	struct cs_token *a = cs_token_find(cs, CS_TOK_AZURE, l->ca), *t;
	char iss[128], aud[256];
	json_t *f = NULL, *v;
	size_t i;
	bool aud_ok = false;

	if (a != NULL) {
		cs_aad_issuer(a->tenant, iss, sizeof(iss));
		snprintf(aud, sizeof(aud), "%s", a->scope);
		if (strlen(aud) > 9 && strcmp(aud + strlen(aud) - 9, "/.default") == 0)
			aud[strlen(aud) - 9] = '\0';
		if (m != NULL && (f = fic_match(m, iss, a->subject)) != NULL)
			json_array_foreach(json_object_get(f, "audiences"), i, v)
				if (strcmp(json_string_value(v), aud) == 0)
					aud_ok = true;
	}
	if (l->cat == NULL || strcmp(l->cat, JWT_BEARER) != 0) {
		cs_reply_error(rq, 400, "invalid_request", "AADSTS50027: client_assertion_type "
		    "must be %s.", JWT_BEARER);
	} else if (m == NULL || strcmp(m->tenant, l->tenant) != 0) {
		cs_reply_error(rq, 400, "unauthorized_client", "AADSTS700016: Application with "
		    "identifier '%s' was not found in the directory '%s'.", l->id ? l->id : "",
		    l->tenant);
	} else if (a == NULL) {
		cs_reply_error(rq, 401, "invalid_client", "AADSTS50027: JWT token is invalid or "
		    "malformed.");
	} else if (a->revoked || a->expires < cs_wall(cs)) {
		cs_reply_error(rq, 400, "invalid_client", "AADSTS700024: Client assertion is not "
		    "within its valid time range.");
	} else if (f == NULL) {
		cs_reply_error(rq, 400, "invalid_client", "AADSTS70021: No matching federated "
		    "identity record found for presented assertion. Assertion Issuer: '%s'. "
		    "Assertion Subject: '%s'. Assertion Audience: '%s'.", iss, a->subject, aud);
	} else if (!aud_ok) {
		cs_reply_error(rq, 400, "invalid_client", "AADSTS700212: No matching federated "
		    "identity record found for presented assertion audience '%s'.", aud);
	} else if (l->scope == NULL || strcmp(l->scope, ARM_SCOPE) != 0) {
		cs_reply_error(rq, 400, "invalid_scope", "AADSTS1002012: The provided value for "
		    "scope %s is not valid.", l->scope ? l->scope : "");
	} else {
		t = cs_token_issue(cs, CS_TOK_AZURE, m->client_id, m->tenant, cs->cfg.token_ttl_s);
		snprintf(t->subject, sizeof(t->subject), "%s", m->principal_id);
		token_reply(cs, rq, t, l->scope);
	}
}

/* GET {authority}/{tenant}/v2.0/.well-known/openid-configuration: the endpoints MSAL
 * resolves before its first token request (on whichever port the client called). */
static void
openid_configuration(struct cs *cs, struct cs_req *rq, const char *tenant)
{
	const char *b = rq->tls ? cs->kube_url : cs->base_url;
	char iss[128];

	if (!tenant_known(cs, tenant) && strcmp(tenant, "organizations") != 0 &&
	    strcmp(tenant, "common") != 0) {
		cs_reply_error(rq, 400, "invalid_tenant", "AADSTS90002: Tenant '%s' not found. "
		    "Check to make sure you have the correct tenant ID and are signing into the "
		    "correct cloud.", tenant);
		return;
	}
	cs_aad_issuer(tenant, iss, sizeof(iss));
	cs_reply_json(rq, 200, json_pack("{s:o, s:o, s:o, s:o, s:s, s:[s], s:[s, s], "
	    "s:[s], s:[s], s:s, s:s}",
	    "token_endpoint", json_sprintf("%s/azure/login/%s/oauth2/v2.0/token", b, tenant),
	    "authorization_endpoint", json_sprintf("%s/azure/login/%s/oauth2/v2.0/authorize", b,
	    tenant), "end_session_endpoint", json_sprintf("%s/azure/login/%s/oauth2/v2.0/logout",
	    b, tenant), "jwks_uri", json_sprintf("%s/azure/login/%s/discovery/v2.0/keys", b,
	    tenant), "issuer", iss, "response_types_supported", "code", "token_endpoint_auth_"
	    "methods_supported", "client_secret_post", "private_key_jwt", "scopes_supported",
	    "openid", "id_token_signing_alg_values_supported", "RS256", "tenant_region_scope",
	    "NA", "cloud_instance_name", "microsoftonline.com"));
}

static void
login(struct cs *cs, struct cs_req *rq)
{
	const char *body = rq->body ? rq->body : "";
	struct login l = { rq->nseg >= 3 ? rq->seg[2] : "", cs_form_get(body, "grant_type"),
	    cs_form_get(body, "client_id"), cs_form_get(body, "client_secret"),
	    cs_form_get(body, "scope"), cs_form_get(body, "client_assertion_type"),
	    cs_form_get(body, "client_assertion") };

	if (rq->nseg == 6 && strcmp(rq->seg[3], "v2.0") == 0 &&
	    strcmp(rq->seg[4], ".well-known") == 0 &&
	    strcmp(rq->seg[5], "openid-configuration") == 0 && strcmp(rq->method, "GET") == 0) {
		openid_configuration(cs, rq, l.tenant);
	} else if (rq->nseg != 6 || strcmp(rq->seg[3], "oauth2") || strcmp(rq->seg[4], "v2.0") ||
	    strcmp(rq->seg[5], "token") || strcmp(rq->method, "POST")) {
		cs_reply_error(rq, 404, "invalid_request", "AADSTS900561: The endpoint only "
		    "accepts POST requests.");
	} else if (!tenant_known(cs, l.tenant)) {
		cs_reply_error(rq, 400, "invalid_request", "AADSTS90002: Tenant '%s' not found. "
		    "Check to make sure you have the correct tenant ID and are signing into the "
		    "correct cloud.", l.tenant);
	} else if (l.gt == NULL || strcmp(l.gt, "client_credentials") != 0) {
		cs_reply_error(rq, 400, "unsupported_grant_type", "AADSTS70003: The app requested "
		    "an unsupported grant type '%s'.", l.gt ? l.gt : "");
	} else if (l.ca != NULL && l.sec != NULL) {
		cs_reply_error(rq, 400, "invalid_request", "The request must carry either "
		    "'client_secret' or 'client_assertion', not both.");
	} else if (l.ca != NULL || l.cat != NULL) {
		login_assertion(cs, rq, &l);
	} else {
		login_secret(cs, rq, &l);
	}
	free(l.gt);
	free(l.id);
	free(l.sec);
	free(l.scope);
	free(l.cat);
	free(l.ca);
}

static struct cs_az_sub *
sub_find(struct cs *cs, const char *id)
{
	size_t i;

	for (i = 0; i < cs->subs.n; i++)
		if (strcasecmp(((struct cs_az_sub *)cs->subs.v[i])->id, id) == 0)
			return cs->subs.v[i];
	return NULL;
}

static json_t *
sub_cfg(struct cs *cs, const char *id)
{
	json_t *s;
	size_t i;

	json_array_foreach(json_object_get(json_object_get(cs->fleet, "azure"), "subscriptions"),
	    i, s)
		if (json_is_string(json_object_get(s, "id")) &&
		    strcasecmp(json_string_value(json_object_get(s, "id")), id) == 0)
			return s;
	return NULL;
}

/* Answers items[] one page at a time with a nextLink; consumes items. */
static void
paged(struct cs *cs, struct cs_req *rq, json_t *items)
{
	const char *skip = cs_query(rq, "$skiptoken");
	long off = 0, n = cs->cfg.page_size, i;
	json_t *page = json_array(), *out;

	if (skip != NULL && (sscanf(skip, "s%ld", &off) != 1 || off < 0)) {
		json_decref(items);
		json_decref(page);
		cs_reply_error(rq, 400, "InvalidSkipToken", "The $skiptoken '%s' is invalid.", skip);
		return;
	}
	for (i = off; i < (long)json_array_size(items) && i < off + n; i++)
		json_array_append(page, json_array_get(items, (size_t)i));
	out = json_pack("{s:o}", "value", page);
	if (i < (long)json_array_size(items))
		json_object_set_new(out, "nextLink", json_sprintf("%s%s?api-version=%s&"
		    "$skiptoken=s%ld", rq->tls ? cs->kube_url : cs->base_url, rq->path,
		    cs_query(rq, "api-version"), i));
	json_decref(items);
	cs_reply_json(rq, 200, out);
}

static json_t *
agent_pool(struct cs_cluster *cl, struct cs_pool *p)
{
	json_t *taints = json_array(), *t, *labels, *ap;
	size_t i;

	json_array_foreach(p->extra_taints, i, t)
		json_array_append_new(taints, json_sprintf("%s=%s:%s",
		    json_string_value(json_object_get(t, "key")),
		    json_string_value(json_object_get(t, "value")) ?
		    json_string_value(json_object_get(t, "value")) : "",
		    json_string_value(json_object_get(t, "effect"))));
	if (p->mt->accel != NULL)
		json_array_append_new(taints, json_string("sku=gpu:NoSchedule"));
	if (p->spot)
		json_array_append_new(taints, json_string(
		    "kubernetes.azure.com/scalesetpriority=spot:NoSchedule"));
	labels = p->extra_labels ? json_deep_copy(p->extra_labels) : json_object();
	ap = json_pack("{s:o, s:s, s:s, s:{s:i, s:s, s:i, s:s, s:s, s:s, s:b, s:i, s:i, s:s, "
	    "s:s, s:f, s:o, s:o, s:s, s:{s:s}, s:s, s:[s], s:i, s:s}}",
	    "id", json_sprintf("/subscriptions/%s/resourceGroups/%s/providers/"
	    "Microsoft.ContainerService/managedClusters/%s/agentPools/%s", cl->account,
	    cl->resource_group, cl->name, p->name), "name", p->name, "type",
	    "Microsoft.ContainerService/managedClusters/agentPools", "properties",
	    "count", cs_pool_nodes(cl, p), "vmSize", p->mt->name, "osDiskSizeGB", 128, "osType",
	    "Linux", "osSKU", "Ubuntu", "mode", p->mt->accel ? "User" : "System",
	    "enableAutoScaling", p->autoscale, "minCount", p->min, "maxCount", p->max,
	    "scaleSetPriority", p->spot ? "Spot" : "Regular", "scaleSetEvictionPolicy", "Delete",
	    "spotMaxPrice", p->spot ? -1.0 : 0.0, "nodeLabels", labels, "nodeTaints", taints,
	    "provisioningState", "Succeeded", "powerState", "code", "Running",
	    "orchestratorVersion", cl->k8s_version, "availabilityZones", "1", "maxPods", 110,
	    "type", "VirtualMachineScaleSets");
	/* a pool on a capacity reservation group names it:
	 * https://learn.microsoft.com/en-us/rest/api/aks/agent-pools/get */
	if (ap != NULL && strcmp(p->capacity, "reservation") == 0)
		json_object_set_new(json_object_get(ap, "properties"), "capacityReservationGroupID",
		    json_sprintf("/subscriptions/%s/resourceGroups/%s/providers/Microsoft.Compute/"
		    "capacityReservationGroups/%s", cl->account, cl->resource_group, p->name));
	return ap;
}

static void
agent_pools(struct cs *cs, struct cs_req *rq, const char *sub)
{
	struct cs_cluster *cl = cs_cluster_find(cs, rq->seg[8]);
	json_t *items;
	size_t i;

	if (cl == NULL || cl->provider != CS_AKS || strcasecmp(cl->account, sub) ||
	    strcasecmp(cl->resource_group, rq->seg[4])) {
		cs_reply_error(rq, 404, "ResourceNotFound", "The Resource "
		    "'Microsoft.ContainerService/managedClusters/%s' under resource group '%s' was "
		    "not found. For more details please go to https://aka.ms/ARMResourceNotFoundFix",
		    rq->seg[8], rq->seg[4]);
		return;
	}
	if (rq->nseg == 9) {
		cs_reply_json(rq, 200, json_pack("{s:o, s:s, s:s, s:s, s:{s:s, s:s, s:s}}", "id",
		    json_sprintf("/subscriptions/%s/resourceGroups/%s/providers/"
		    "Microsoft.ContainerService/managedClusters/%s", cl->account, cl->resource_group,
		    cl->name), "name", cl->name, "type", "Microsoft.ContainerService/ManagedClusters",
		    "location", cl->region, "properties", "provisioningState", "Succeeded",
		    "kubernetesVersion", cl->k8s_version, "nodeResourceGroup", "MC_rg"));
		return;
	}
	if (rq->nseg == 11) {
		for (i = 0; i < cl->npools; i++)
			if (strcmp(cl->pools[i].name, rq->seg[10]) == 0) {
				cs_reply_json(rq, 200, agent_pool(cl, &cl->pools[i]));
				return;
			}
		cs_reply_error(rq, 404, "NotFound", "Agent pool '%s' not found.", rq->seg[10]);
		return;
	}
	items = json_array();
	for (i = 0; i < cl->npools; i++)
		json_array_append_new(items, agent_pool(cl, &cl->pools[i]));
	paged(cs, rq, items);
}

/* Locations of this subscription's AKS clusters. */
static json_t *
sub_locations(struct cs *cs, const char *sub)
{
	json_t *l = json_array(), *v;
	size_t i, j;

	for (i = 0; i < cs->nclusters; i++) {
		bool dup = false;

		if (cs->clusters[i].provider != CS_AKS || strcasecmp(cs->clusters[i].account, sub))
			continue;
		json_array_foreach(l, j, v)
			if (strcmp(json_string_value(v), cs->clusters[i].region) == 0)
				dup = true;
		if (!dup)
			json_array_append_new(l, json_string(cs->clusters[i].region));
	}
	return l;
}

static void
skus(struct cs *cs, struct cs_req *rq, const char *sub)
{
	const char *filter = cs_query(rq, "$filter");
	json_t *locs = sub_locations(cs, sub), *items = json_array(), *l, *r;
	const struct cs_machine *m;
	size_t i, j, k;

	for (i = 0; (m = cs_machine_at(i)) != NULL; i++) {
		if (m->provider != CS_AKS)
			continue;
		json_array_foreach(locs, j, l) {
			const char *loc = json_string_value(l);
			json_t *restr = json_array(), *sku;

			if (filter != NULL && strstr(filter, loc) == NULL)
				continue;
			json_array_foreach(json_object_get(sub_cfg(cs, sub), "restrictions"), k, r)
				if (json_is_string(json_object_get(r, "sku")) &&
				    strcmp(json_string_value(json_object_get(r, "sku")), m->name) == 0 &&
				    json_is_string(json_object_get(r, "location")) &&
				    strcmp(json_string_value(json_object_get(r, "location")), loc) == 0)
					json_array_append_new(restr, json_pack("{s:s, s:[s], s:{s:[s]}, "
					    "s:s}", "type", "Location", "values", loc, "restrictionInfo",
					    "locations", loc, "reasonCode", json_is_string(json_object_get(r,
					    "reason")) ? json_string_value(json_object_get(r, "reason")) :
					    "NotAvailableForSubscription"));
			sku = json_pack("{s:s, s:s, s:s, s:s, s:s, s:[s], s:[{s:s, s:[s, s, s]}], "
			    "s:[{s:s, s:o}, {s:s, s:o}, {s:s, s:o}], s:o}",
			    "resourceType", "virtualMachines", "name", m->name, "tier", "Standard",
			    "size", m->name + 9, "family", cs_azure_family(m->name), "locations", loc,
			    "locationInfo", "location", loc, "zones", "1", "2", "3", "capabilities",
			    "name", "vCPUs", "value", json_sprintf("%d", m->vcpus), "name", "MemoryGB",
			    "value", json_sprintf("%d", m->mem_gib), "name", "GPUs", "value",
			    json_sprintf("%d", m->tpu ? 0 : m->accel_count), "restrictions", restr);
			json_array_append_new(items, sku);
		}
	}
	json_decref(locs);
	paged(cs, rq, items);
}

static void
usage_add(json_t *u, const char *name, double v)
{
	json_t *e = json_object_get(u, name);

	if (e == NULL) {
		e = json_pack("{s:f, s:f, s:{s:s, s:s}, s:s}", "currentValue", 0.0, "limit", 0.0,
		    "name", "value", name, "localizedValue", name, "unit", "Count");
		json_object_set_new(u, name, e);
	}
	json_object_set_new(e, "currentValue", json_real(json_real_value(json_object_get(e,
	    "currentValue")) + v));
}

static void
usages(struct cs *cs, struct cs_req *rq, const char *sub, const char *loc)
{
	json_t *u = json_object(), *lim, *v, *items = json_array();
	const char *k;
	size_t c, i;

	usage_add(u, "cores", 0);
	usage_add(u, "lowPriorityCores", 0);
	lim = json_object_get(json_object_get(sub_cfg(cs, sub), "quotas"), loc);
	json_object_foreach(lim, k, v) {
		usage_add(u, k, 0);
		json_object_set_new(json_object_get(u, k), "limit", json_real(json_number_value(v)));
	}
	for (c = 0; c < cs->nclusters; c++) {
		struct cs_cluster *cl = &cs->clusters[c];

		if (cl->provider != CS_AKS || strcasecmp(cl->account, sub) || strcmp(cl->region, loc))
			continue;
		for (i = 0; i < cl->nodes.n; i++) {
			struct cs_node *n = cl->nodes.v[i];

			if (n->pool->spot) {
				usage_add(u, "lowPriorityCores", n->pool->mt->vcpus);
			} else {
				usage_add(u, "cores", n->pool->mt->vcpus);
				usage_add(u, cs_azure_family(n->pool->mt->name), n->pool->mt->vcpus);
			}
		}
	}
	json_object_foreach(u, k, v)
		json_array_append(items, v);
	json_decref(u);
	paged(cs, rq, items);
}

static json_t *
fic_json(const struct cs_az_identity *m, json_t *f)
{
	return json_pack("{s:o, s:O, s:s, s:{s:O, s:O, s:O}}", "id", json_sprintf(
	    "/subscriptions/%s/resourcegroups/%s/providers/Microsoft.ManagedIdentity/"
	    "userAssignedIdentities/%s/federatedIdentityCredentials/%s", m->subscription,
	    m->resource_group, m->name, json_string_value(json_object_get(f, "name"))), "name",
	    json_object_get(f, "name"), "type",
	    "Microsoft.ManagedIdentity/userAssignedIdentities/federatedIdentityCredentials",
	    "properties", "issuer", json_object_get(f, "issuer"), "subject",
	    json_object_get(f, "subject"), "audiences", json_object_get(f, "audiences"));
}

static json_t *
mi_json(const struct cs_az_identity *m)
{
	return json_pack("{s:o, s:s, s:s, s:s, s:O, s:{s:s, s:s, s:s}}", "id",
	    json_sprintf("/subscriptions/%s/resourcegroups/%s/providers/"
	    "Microsoft.ManagedIdentity/userAssignedIdentities/%s", m->subscription,
	    m->resource_group, m->name), "name", m->name, "type",
	    "Microsoft.ManagedIdentity/userAssignedIdentities", "location", m->location,
	    "tags", m->tags, "properties", "tenantId", m->tenant, "principalId",
	    m->principal_id, "clientId", m->client_id);
}

/* GET the user-assigned identities of a subscription (rg NULL) or resource group, paged. */
static void
identities(struct cs *cs, struct cs_req *rq, const char *sub, const char *rg)
{
	json_t *items = json_array();
	size_t i;

	for (i = 0; i < cs->mis.n; i++) {
		struct cs_az_identity *m = cs->mis.v[i];

		if (strcasecmp(m->subscription, sub) == 0 &&
		    (rg == NULL || strcasecmp(m->resource_group, rg) == 0))
			json_array_append_new(items, mi_json(m));
	}
	paged(cs, rq, items);
}

/* GET .../userAssignedIdentities/{n}[/federatedIdentityCredentials] */
static void
identity(struct cs *cs, struct cs_req *rq, const char *sub)
{
	json_t *items, *f;
	size_t i, j;

	for (i = 0; i < cs->mis.n; i++) {
		struct cs_az_identity *m = cs->mis.v[i];

		if (strcasecmp(m->subscription, sub) || strcasecmp(m->resource_group, rq->seg[4]) ||
		    strcmp(m->name, rq->seg[8]))
			continue;
		if (rq->nseg == 10) {
			items = json_array();
			json_array_foreach(m->fics, j, f)
				json_array_append_new(items, fic_json(m, f));
			paged(cs, rq, items);
			return;
		}
		cs_reply_json(rq, 200, mi_json(m));
		return;
	}
	cs_reply_error(rq, 404, "ResourceNotFound", "The Resource "
	    "'Microsoft.ManagedIdentity/userAssignedIdentities/%s' under resource group '%s' was "
	    "not found. For more details please go to https://aka.ms/ARMResourceNotFoundFix",
	    rq->seg[8], rq->seg[4]);
}

static bool
seg_is(struct cs_req *rq, size_t i, const char *s)
{
	return i < rq->nseg && strcasecmp(rq->seg[i], s) == 0;
}

static void
arm(struct cs *cs, struct cs_req *rq)
{
	bool expired;
	struct cs_token *t = cs_bearer(cs, rq, CS_TOK_AZURE, &expired);
	struct cs_az_sub *sub;
	const char *h = cs_header(rq, "Authorization");

	if (t == NULL) {
		if (h == NULL)
			cs_reply_error(rq, 401, "AuthenticationFailed", "Authentication failed. The "
			    "'Authorization' header is missing.");
		else if (expired)
			cs_reply_error(rq, 401, "ExpiredAuthenticationToken", "The access token "
			    "expiry UTC time is earlier than current UTC time.");
		else
			cs_reply_error(rq, 401, "InvalidAuthenticationToken", "The access token is "
			    "invalid.");
		return;
	}
	if (strcmp(t->scope, ARM_SCOPE) != 0) {
		cs_reply_error(rq, 401, "InvalidAuthenticationToken", "The access token has been "
		    "obtained for wrong audience or resource '%.*s'. It should exactly match with "
		    "one of the allowed audiences 'https://management.core.windows.net/',"
		    "'https://management.azure.com/'.", (int)(strlen(t->scope) > 9 ?
		    strlen(t->scope) - 9 : 0), t->scope);
		return;
	}
	if (cs_query(rq, "api-version") == NULL || *cs_query(rq, "api-version") == '\0') {
		cs_reply_error(rq, 400, "MissingApiVersionParameter", "The api-version query "
		    "parameter (?api-version=) is required for all requests.");
		return;
	}
	if (!seg_is(rq, 1, "subscriptions") || rq->nseg < 3) {
		cs_reply_error(rq, 404, "InvalidResourceType", "The resource type could not be "
		    "found.");
		return;
	}
	sub = sub_find(cs, rq->seg[2]);
	if (sub == NULL) {
		cs_reply_error(rq, 404, "SubscriptionNotFound", "The subscription '%s' could not "
		    "be found.", rq->seg[2]);
		return;
	}
	if (strcmp(sub->tenant, t->tenant) != 0) {
		cs_reply_error(rq, 401, "InvalidAuthenticationTokenTenant", "The access token is "
		    "from the wrong issuer 'https://sts.windows.net/%s/'. It must match the tenant "
		    "'https://sts.windows.net/%s/' associated with this subscription.", t->tenant,
		    sub->tenant);
		return;
	}
	if (strcmp(rq->method, "GET") != 0) {
		cs_reply_error(rq, 405, "MethodNotAllowed", "The requested method is not allowed.");
	} else if ((rq->nseg == 9 || rq->nseg == 10 || rq->nseg == 11) &&
	    seg_is(rq, 3, "resourceGroups") && seg_is(rq, 5, "providers") &&
	    seg_is(rq, 6, "Microsoft.ContainerService") && seg_is(rq, 7, "managedClusters") &&
	    (rq->nseg == 9 || seg_is(rq, 9, "agentPools"))) {
		agent_pools(cs, rq, sub->id);
	} else if (rq->nseg == 6 && seg_is(rq, 3, "providers") &&
	    seg_is(rq, 4, "Microsoft.Compute") && seg_is(rq, 5, "skus")) {
		skus(cs, rq, sub->id);
	} else if (rq->nseg == 8 && seg_is(rq, 3, "providers") &&
	    seg_is(rq, 4, "Microsoft.Compute") && seg_is(rq, 5, "locations") &&
	    seg_is(rq, 7, "usages")) {
		usages(cs, rq, sub->id, rq->seg[6]);
	} else if ((rq->nseg == 9 || (rq->nseg == 10 &&
	    seg_is(rq, 9, "federatedIdentityCredentials"))) && seg_is(rq, 3, "resourceGroups") &&
	    seg_is(rq, 5, "providers") && seg_is(rq, 6, "Microsoft.ManagedIdentity") &&
	    seg_is(rq, 7, "userAssignedIdentities")) {
		identity(cs, rq, sub->id);
	} else if (rq->nseg == 8 && seg_is(rq, 3, "resourceGroups") && seg_is(rq, 5, "providers") &&
	    seg_is(rq, 6, "Microsoft.ManagedIdentity") &&
	    seg_is(rq, 7, "userAssignedIdentities")) {
		identities(cs, rq, sub->id, rq->seg[4]);
	} else if (rq->nseg == 6 && seg_is(rq, 3, "providers") &&
	    seg_is(rq, 4, "Microsoft.ManagedIdentity") &&
	    seg_is(rq, 5, "userAssignedIdentities")) {
		identities(cs, rq, sub->id, NULL);
	} else {
		cs_reply_error(rq, 404, "InvalidResourceType", "The resource type could not be "
		    "found in the namespace for api version '%s'.", cs_query(rq, "api-version"));
	}
}

void
cs_azure_handle(struct cs *cs, struct cs_req *rq)
{
	if (strcmp(rq->service, "azure_login") == 0)
		login(cs, rq);
	else
		arm(cs, rq);
}
