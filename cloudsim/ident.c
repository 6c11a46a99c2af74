/* cloudsim ident: the emulated clouds' identities (GCP service accounts, AWS users and
 * roles, Azure apps, subscriptions and managed identities), per-cluster phase 2
 * identities, and the bearer / session tokens cloudsim hands out. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "cloudsim/cs.h"
#include "core/crypto.h"

static const char *
jstr(json_t *o, const char *k, const char *def)
{
	json_t *v = json_object_get(o, k);

	return json_is_string(v) ? json_string_value(v) : def;
}

static char *
read_rel(struct cs *cs, const char *file)
{
	char path[2048];

	if (file[0] == '/')
		snprintf(path, sizeof(path), "%s", file);
	else
		snprintf(path, sizeof(path), "%s/%s", cs->fleet_dir, file);
	return cs_read_file(path, NULL);
}

static struct cs_gsa *
gsa_add(struct cs *cs, const char *email, const char *project, const char *pub)
{
	struct cs_gsa *g = calloc(1, sizeof(*g));
	unsigned char r[8];
	unsigned long long u = 0;
	int i;

	if (g == NULL)
		abort();
	cs_copy(g->email, sizeof(g->email), email);
	cs_copy(g->project, sizeof(g->project), project);
	crypto_random(r, sizeof(r));
	for (i = 0; i < 8; i++)
		u = u << 8 | r[i];
	snprintf(g->unique_id, sizeof(g->unique_id), "1%019llu", u % 10000000000000000000ULL);
	g->public_pem = pub ? strdup(pub) : NULL;
	g->description = strdup("");
	g->display_name = strdup("");
	g->token_creators = json_array();
	cs_vec_push(&cs->gsas, g);
	return g;
}

static struct cs_aws_role *
role_add(struct cs *cs, const char *account, const char *name)
{
	struct cs_aws_role *r = calloc(1, sizeof(*r));
	char hex[24];

	if (r == NULL)
		abort();
	cs_copy(r->account, sizeof(r->account), account);
	cs_copy(r->name, sizeof(r->name), name);
	cs_hex_token(hex, 8);
	snprintf(r->id, sizeof(r->id), "AROA%.16s", hex);
	for (char *p = r->id; *p; p++)
		if (*p >= 'a' && *p <= 'z')
			*p = (char)(*p - 32);
	r->trusted = json_array();
	r->tags = json_object();
	cs_vec_push(&cs->roles, r);
	return r;
}

static void
upper(char *s)
{
	for (; *s; s++)
		if (*s >= 'a' && *s <= 'z')
			*s = (char)(*s - 32);
}

static bool
load_fleetd(struct cs *cs, json_t *f, struct err *e)
{
	json_t *g = json_object_get(f, "gcp"), *a = json_object_get(f, "aws"),
	    *z = json_object_get(f, "azure");
	struct cs_aws_user *u = calloc(1, sizeof(*u));
	struct cs_az_app *app = calloc(1, sizeof(*app));
	char *pub = NULL, hex[64];

	if (u == NULL || app == NULL)
		abort();
	if (jstr(g, "private_key_file", NULL) != NULL) {
		cs->fleetd_gcp_key_pem = read_rel(cs, jstr(g, "private_key_file", NULL));
		if (cs->fleetd_gcp_key_pem == NULL) {
			free(u);
			free(app);
			return err_set(e, 400, "cloudsim.fleet", "cannot read fleetd gcp key");
		}
		pub = cs_public_from_private(cs->fleetd_gcp_key_pem);
	} else {
		cs->fleetd_gcp_key_pem = cs_rsa_generate_pem(&pub);
	}
	if (pub == NULL) {
		free(u);
		free(app);
		return err_set(e, 400, "cloudsim.fleet", "fleetd gcp key is not an rsa key");
	}
	gsa_add(cs, jstr(g, "email", "fleetd@fleet-admin.iam.gserviceaccount.com"),
	    jstr(g, "project", "fleet-admin"), pub);
	free(pub);
	cs_copy(u->account, sizeof(u->account), jstr(a, "account", "111111111111"));
	cs_copy(u->name, sizeof(u->name), jstr(a, "user", "fleetd"));
	cs_hex_token(hex, 8);
	upper(hex);
	snprintf(u->access_key, sizeof(u->access_key), "AKIA%.16s", hex);
	cs_copy(u->access_key, sizeof(u->access_key), jstr(a, "access_key", u->access_key));
	cs_hex_token(hex, 20);
	cs_copy(u->secret_key, sizeof(u->secret_key), jstr(a, "secret_key", hex));
	cs_vec_push(&cs->users, u);
	cs_uuid(app->tenant);
	cs_copy(app->tenant, sizeof(app->tenant), jstr(z, "tenant", app->tenant));
	cs_uuid(app->client_id);
	cs_copy(app->client_id, sizeof(app->client_id), jstr(z, "client_id", app->client_id));
	cs_hex_token(hex, 20);
	cs_copy(app->secret, sizeof(app->secret), jstr(z, "client_secret", hex));
	cs_copy(app->name, sizeof(app->name), "fleetd");
	/* the object id of fleetd's service principal is the `sub` of its tokens; fleetd has
	 * no setting for it and names itself by its client id in iam.required, so unless the
	 * fleet file says otherwise the two are the same here */
	cs_copy(app->object_id, sizeof(app->object_id), jstr(z, "object_id", app->client_id));
	app->multi_tenant = !json_is_false(json_object_get(z, "multi_tenant"));
	cs_vec_push(&cs->apps, app);
	return true;
}

void
cs_aad_issuer(const char *tenant, char *out, size_t n)
{
	snprintf(out, n, "https://login.microsoftonline.com/%s/v2.0", tenant);
}

struct cs_az_identity *
cs_mi_find(struct cs *cs, const char *rid, const char *client_id)
{
	char id[512];
	size_t i;

	for (i = 0; i < cs->mis.n; i++) {
		struct cs_az_identity *m = cs->mis.v[i];

		snprintf(id, sizeof(id), "/subscriptions/%s/resourceGroups/%s/providers/"
		    "Microsoft.ManagedIdentity/userAssignedIdentities/%s", m->subscription,
		    m->resource_group, m->name);
		if ((rid != NULL && strcasecmp(id, rid) == 0) ||
		    (client_id != NULL && strcasecmp(m->client_id, client_id) == 0))
			return m;
	}
	return NULL;
}

/* The federated credential Terraform creates from iam.required: fleetd's Entra tokens
 * (issuer: fleetd's tenant, subject: its service principal) may sign in as m. */
static json_t *
fleetd_fic(struct cs *cs)
{
	struct cs_az_app *fleetd = cs->apps.v[0];
	char iss[128];

	cs_aad_issuer(fleetd->tenant, iss, sizeof(iss));
	return json_pack("{s:s, s:s, s:s, s:[s]}", "name", "fleetd", "issuer", iss, "subject",
	    fleetd->object_id, "audiences", "api://AzureADTokenExchange");
}

static struct cs_az_sub *
sub_find(struct cs *cs, const char *id)
{
	size_t i;

	for (i = 0; i < cs->subs.n; i++)
		if (strcmp(((struct cs_az_sub *)cs->subs.v[i])->id, id) == 0)
			return cs->subs.v[i];
	return NULL;
}

static void
auto_gke(struct cs *cs, struct cs_cluster *cl)
{
	struct cs_gsa *fleetd = cs->gsas.v[0], *cp, *nodes;
	char email[160];

	snprintf(email, sizeof(email), "fcp-%.26s@%s.iam.gserviceaccount.com", cl->name,
	    cl->account);
	cp = gsa_add(cs, email, cl->account, NULL);
	json_array_append_new(cp->token_creators, json_string(fleetd->email));
	free(cp->display_name);
	cp->display_name = strdup("fleetd control plane");
	snprintf(email, sizeof(email), "fnodes-%.23s@%s.iam.gserviceaccount.com", cl->name,
	    cl->account);
	nodes = gsa_add(cs, email, cl->account, NULL);
	cl->iam = json_pack("{s:{s:s}, s:{s:s}, s:s}", "control_plane", "service_account",
	    cp->email, "cluster_role", "service_account", nodes->email, "cloud_id_in",
	    "service account description \"fleet.io/cloud-id=<id>\"");
}

static struct cs_az_identity *
mi_add(struct cs *cs, const struct cs_cluster *cl, const char *tenant, const char *prefix,
    bool federated)
{
	struct cs_az_identity *mi = calloc(1, sizeof(*mi));

	if (mi == NULL)
		abort();
	cs_copy(mi->subscription, sizeof(mi->subscription), cl->account);
	cs_copy(mi->resource_group, sizeof(mi->resource_group), cl->resource_group);
	snprintf(mi->name, sizeof(mi->name), "%s-%s", prefix, cl->name);
	cs_copy(mi->location, sizeof(mi->location), cl->region);
	cs_copy(mi->tenant, sizeof(mi->tenant), tenant);
	cs_uuid(mi->client_id);
	cs_uuid(mi->principal_id);
	mi->tags = json_object();
	mi->fics = json_array();
	if (federated)
		json_array_append_new(mi->fics, fleetd_fic(cs));
	cs_vec_push(&cs->mis, mi);
	return mi;
}

static json_t *
mi_json(const struct cs_az_identity *mi)
{
	return json_pack("{s:o, s:s, s:s, s:s}", "resource_id", json_sprintf("/subscriptions/%s/"
	    "resourceGroups/%s/providers/Microsoft.ManagedIdentity/userAssignedIdentities/%s",
	    mi->subscription, mi->resource_group, mi->name), "client_id", mi->client_id,
	    "principal_id", mi->principal_id, "tenant_id", mi->tenant);
}

/* Two user-assigned managed identities per AKS cluster: the control plane, which fleetd
 * signs in as by workload identity federation, and the nodes' identity. The fleet file's
 * azure.federated ("none", "control_plane", "all") says which start with fleetd's
 * federated credential already in place, as if Terraform had run. */
static void
auto_aks(struct cs *cs, struct cs_cluster *cl, const char *federated)
{
	struct cs_az_sub *sub = sub_find(cs, cl->account);
	struct cs_az_identity *cp, *nodes;
	char iss[128];

	cp = mi_add(cs, cl, sub->tenant, "fleet-cp", strcmp(federated, "none") != 0);
	nodes = mi_add(cs, cl, sub->tenant, "fleet-nodes", strcmp(federated, "all") == 0);
	cs_aad_issuer(((struct cs_az_app *)cs->apps.v[0])->tenant, iss, sizeof(iss));
	cl->iam = json_pack("{s:o, s:o, s:{s:s, s:s, s:s}, s:s, s:s}", "control_plane",
	    mi_json(cp), "cluster_role", mi_json(nodes), "federation", "issuer", iss, "subject",
	    ((struct cs_az_app *)cs->apps.v[0])->object_id, "audience",
	    "api://AzureADTokenExchange", "federation_set_via", "POST /_sim/iam {\"provider\":"
	    "\"azure\",\"resource_id\":...,\"federated_subject\":...}", "cloud_id_in",
	    "managed identity tag fleet.io/cloud-id");
}

static void
auto_hyperpod(struct cs *cs, struct cs_cluster *cl)
{
	struct cs_aws_user *fleetd = cs->users.v[0];
	struct cs_aws_role *cp, *nodes;
	char name[96], arn[256], arn2[256];

	snprintf(name, sizeof(name), "fleet-cp-%s", cl->name);
	cp = role_add(cs, cl->account, name);
	snprintf(arn, sizeof(arn), "arn:aws:iam::%s:user/%s", fleetd->account, fleetd->name);
	json_array_append_new(cp->trusted, json_string(arn));
	snprintf(name, sizeof(name), "fleet-nodes-%s", cl->name);
	nodes = role_add(cs, cl->account, name);
	snprintf(arn, sizeof(arn), "arn:aws:iam::%s:role/%s", cp->account, cp->name);
	snprintf(arn2, sizeof(arn2), "arn:aws:iam::%s:role/%s", nodes->account, nodes->name);
	cl->iam = json_pack("{s:{s:s}, s:{s:s}, s:n, s:s, s:s}", "control_plane", "role_arn",
	    arn, "cluster_role", "role_arn", arn2, "external_id", "external_id_set_via",
	    "POST /_sim/iam {\"provider\":\"aws\",\"role_arn\":...,\"external_id\":...}",
	    "cloud_id_in", "IAM role tag fleet.io/cloud-id");
}

static void
load_lists(struct cs *cs, json_t *root)
{
	json_t *v, *g = json_object_get(root, "gcp"), *a = json_object_get(root, "aws"),
	    *z = json_object_get(root, "azure");
	size_t i;

	json_array_foreach(json_object_get(g, "service_accounts"), i, v) {
		char *pub = jstr(v, "public_key_file", NULL) ?
		    read_rel(cs, jstr(v, "public_key_file", NULL)) : NULL;
		struct cs_gsa *s = gsa_add(cs, jstr(v, "email", ""), jstr(v, "project", ""), pub);

		free(pub);
		free(s->description);
		s->description = strdup(jstr(v, "description", ""));
		if (json_is_array(json_object_get(v, "token_creators")))
			json_array_extend(s->token_creators, json_object_get(v, "token_creators"));
	}
	json_array_foreach(json_object_get(a, "roles"), i, v) {
		struct cs_aws_role *r = role_add(cs, jstr(v, "account", ""), jstr(v, "name", ""));

		if (jstr(v, "external_id", NULL) != NULL)
			r->external_id = strdup(jstr(v, "external_id", NULL));
		if (json_is_array(json_object_get(v, "trusted")))
			json_array_extend(r->trusted, json_object_get(v, "trusted"));
		if (json_is_object(json_object_get(v, "tags")))
			json_object_update(r->tags, json_object_get(v, "tags"));
	}
	json_array_foreach(json_object_get(a, "users"), i, v) {
		struct cs_aws_user *u = calloc(1, sizeof(*u));

		if (u == NULL)
			abort();
		cs_copy(u->account, sizeof(u->account), jstr(v, "account", ""));
		cs_copy(u->name, sizeof(u->name), jstr(v, "name", ""));
		cs_copy(u->access_key, sizeof(u->access_key), jstr(v, "access_key", ""));
		cs_copy(u->secret_key, sizeof(u->secret_key), jstr(v, "secret_key", ""));
		cs_vec_push(&cs->users, u);
	}
	json_array_foreach(json_object_get(z, "subscriptions"), i, v) {
		struct cs_az_sub *s = calloc(1, sizeof(*s));

		if (s == NULL)
			abort();
		cs_copy(s->id, sizeof(s->id), jstr(v, "id", ""));
		cs_copy(s->tenant, sizeof(s->tenant), jstr(v, "tenant",
		    ((struct cs_az_app *)cs->apps.v[0])->tenant));
		cs_vec_push(&cs->subs, s);
	}
	json_array_foreach(json_object_get(z, "apps"), i, v) {
		struct cs_az_app *p = calloc(1, sizeof(*p));

		if (p == NULL)
			abort();
		cs_copy(p->tenant, sizeof(p->tenant), jstr(v, "tenant",
		    ((struct cs_az_app *)cs->apps.v[0])->tenant));
		cs_copy(p->client_id, sizeof(p->client_id), jstr(v, "client_id", ""));
		cs_uuid(p->object_id);
		cs_copy(p->object_id, sizeof(p->object_id), jstr(v, "object_id", p->object_id));
		cs_copy(p->secret, sizeof(p->secret), jstr(v, "client_secret", ""));
		cs_copy(p->name, sizeof(p->name), jstr(v, "name", ""));
		cs_vec_push(&cs->apps, p);
	}
}

bool
cs_ident_load(struct cs *cs, json_t *root, struct err *e)
{
	const char *fed = jstr(json_object_get(root, "azure"), "federated", "none");
	size_t i;

	if (strcmp(fed, "none") && strcmp(fed, "control_plane") && strcmp(fed, "all"))
		return err_set(e, 400, "cloudsim.fleet", "azure.federated must be none, "
		    "control_plane or all");
	if (!load_fleetd(cs, json_object_get(root, "fleetd"), e))
		return false;
	load_lists(cs, root);
	for (i = 0; i < cs->nclusters; i++) {
		struct cs_cluster *cl = &cs->clusters[i];

		if (cl->provider == CS_AKS && sub_find(cs, cl->account) == NULL) {
			struct cs_az_sub *s = calloc(1, sizeof(*s));

			if (s == NULL)
				abort();
			cs_copy(s->id, sizeof(s->id), cl->account);
			cs_copy(s->tenant, sizeof(s->tenant),
			    ((struct cs_az_app *)cs->apps.v[0])->tenant);
			cs_vec_push(&cs->subs, s);
		}
		if (cl->iam != NULL)
			continue;
		if (cl->provider == CS_GKE)
			auto_gke(cs, cl);
		else if (cl->provider == CS_AKS)
			auto_aks(cs, cl, fed);
		else
			auto_hyperpod(cs, cl);
	}
	return true;
}

static void
gsa_free(void *p)
{
	struct cs_gsa *g = p;

	free(g->description);
	free(g->display_name);
	free(g->public_pem);
	json_decref(g->token_creators);
	free(g);
}

static void
role_free(void *p)
{
	struct cs_aws_role *r = p;

	free(r->external_id);
	json_decref(r->trusted);
	json_decref(r->tags);
	free(r);
}

static void
mi_free(void *p)
{
	json_decref(((struct cs_az_identity *)p)->tags);
	json_decref(((struct cs_az_identity *)p)->fics);
	free(p);
}

void
cs_ident_free(struct cs *cs)
{
	cs_vec_free(&cs->gsas, gsa_free);
	cs_vec_free(&cs->roles, role_free);
	cs_vec_free(&cs->users, free);
	cs_vec_free(&cs->apps, free);
	cs_vec_free(&cs->mis, mi_free);
	cs_vec_free(&cs->subs, free);
	cs_vec_free(&cs->tokens, free);
	cs_vec_free(&cs->faults, free);
	free(cs->fleetd_gcp_key_pem);
	cs->fleetd_gcp_key_pem = NULL;
}

/* ---- tokens */

struct cs_token *
cs_token_issue(struct cs *cs, enum cs_tok_kind kind, const char *principal, const char *tenant,
    double ttl)
{
	struct cs_token *t = calloc(1, sizeof(*t));
	char hex[80];
	size_t i;

	if (t == NULL)
		abort();
	if (cs->tokens.n > 20000) {	/* drop expired ones first */
		for (i = 0; i < cs->tokens.n;) {
			struct cs_token *o = cs->tokens.v[i];

			if (o->expires < cs_wall(cs)) {
				free(o);
				cs_vec_del(&cs->tokens, i);
			} else {
				i++;
			}
		}
	}
	t->kind = kind;
	cs_copy(t->principal, sizeof(t->principal), principal);
	cs_copy(t->subject, sizeof(t->subject), principal);
	cs_copy(t->tenant, sizeof(t->tenant), tenant);
	t->expires = cs_wall(cs) + ttl;
	cs_hex_token(hex, 32);
	if (kind == CS_TOK_GCP) {
		snprintf(t->value, sizeof(t->value), "ya29.c.%s", hex);
	} else if (kind == CS_TOK_AZURE) {
		snprintf(t->value, sizeof(t->value), "eyJ0eXAiOiJKV1QiLCJhbGciOiJSUzI1NiJ9.%.48s", hex);
	} else {
		cs_hex_token(hex, 8);
		upper(hex);
		snprintf(t->value, sizeof(t->value), "ASIA%s", hex);
		cs_hex_token(t->secret, 20);
		cs_hex_token(hex, 32);
		snprintf(t->session, sizeof(t->session), "FwoGZXIvYXdzE%s", hex);
	}
	cs_vec_push(&cs->tokens, t);
	return t;
}

struct cs_token *
cs_token_find(struct cs *cs, enum cs_tok_kind kind, const char *value)
{
	size_t i;

	for (i = 0; value != NULL && i < cs->tokens.n; i++) {
		struct cs_token *t = cs->tokens.v[i];

		if (t->kind == kind && strcmp(t->value, value) == 0)
			return t;
	}
	return NULL;
}

/* The token of kind named by "Authorization: Bearer X"; NULL when absent, unknown or
 * expired (then *expired is set). */
struct cs_token *
cs_bearer(struct cs *cs, struct cs_req *rq, enum cs_tok_kind kind, bool *expired)
{
	const char *h = cs_header(rq, "Authorization");
	struct cs_token *t;

	*expired = false;
	if (h == NULL || strncmp(h, "Bearer ", 7) != 0)
		return NULL;
	t = cs_token_find(cs, kind, h + 7);
	if (t != NULL && (t->revoked || t->expires < cs_wall(cs))) {
		*expired = true;
		return NULL;
	}
	return t;
}

/* One federated identity credential as azurerm_federated_identity_credential and ARM
 * hold it: name, https issuer, subject, audiences. */
static bool
fic_valid(json_t *f, struct err *e)
{
	const char *name = jstr(f, "name", ""), *iss = jstr(f, "issuer", ""),
	    *sub = jstr(f, "subject", "");
	json_t *aud = json_object_get(f, "audiences"), *v;
	size_t i, n = strlen(name);

	if (n < 3 || n > 120 || strspn(name, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
	    "0123456789-_") != n)
		return err_set(e, 400, "sim.bad_iam", "federated credential name must be 3-120 "
		    "letters, digits, '-' or '_'");
	if (strncmp(iss, "https://", 8) != 0 || sub[0] == '\0' || strlen(sub) > 600)
		return err_set(e, 400, "sim.bad_iam", "federated credential needs an https issuer "
		    "and a subject");
	if (!json_is_array(aud) || json_array_size(aud) == 0)
		return err_set(e, 400, "sim.bad_iam", "federated credential audiences must be a "
		    "non-empty list");
	json_array_foreach(aud, i, v)
		if (!json_is_string(v))
			return err_set(e, 400, "sim.bad_iam", "audiences must be strings");
	return true;
}

/* Azure: tags, and the identity's federated credentials — the whole list
 * ("federated_identity_credentials", as iam.required spells it) or, shorter, the one
 * named "fleetd" trusting federated_subject (at federated_issuer, default fleetd's
 * tenant; audience api://AzureADTokenExchange). */
static bool
sim_azure(struct cs *cs, json_t *b, json_t *tags, struct err *e)
{
	struct cs_az_identity *m = cs_mi_find(cs, jstr(b, "resource_id", ""), NULL);
	json_t *list = json_object_get(b, "federated_identity_credentials"), *f, *g, *nl;
	const char *subject = jstr(b, "federated_subject", NULL);
	char iss[128];
	size_t i, j;

	if (m == NULL)
		return err_set(e, 404, "sim.no_identity", "managed identity not found");
	if (list != NULL && !json_is_array(list))
		return err_set(e, 400, "sim.bad_iam", "federated_identity_credentials must be a "
		    "list");
	nl = list != NULL ? json_deep_copy(list) : json_deep_copy(m->fics);
	if (subject != NULL) {
		cs_aad_issuer(((struct cs_az_app *)cs->apps.v[0])->tenant, iss, sizeof(iss));
		json_array_foreach(nl, i, f)
			if (strcmp(jstr(f, "name", ""), "fleetd") == 0) {
				json_array_remove(nl, i);
				break;
			}
		json_array_append_new(nl, json_pack("{s:s, s:s, s:s, s:[s]}", "name", "fleetd",
		    "issuer", jstr(b, "federated_issuer", iss), "subject", subject, "audiences",
		    jstr(b, "federated_audience", "api://AzureADTokenExchange")));
	}
	if (json_array_size(nl) > 20) {
		json_decref(nl);
		return err_set(e, 400, "sim.bad_iam", "at most 20 federated credentials");
	}
	json_array_foreach(nl, i, f) {
		if (!fic_valid(f, e)) {
			json_decref(nl);
			return false;
		}
		for (j = 0; j < i; j++) {
			g = json_array_get(nl, j);
			if (strcmp(jstr(f, "name", ""), jstr(g, "name", "")) == 0 ||
			    (strcmp(jstr(f, "issuer", ""), jstr(g, "issuer", "")) == 0 &&
			    strcmp(jstr(f, "subject", ""), jstr(g, "subject", "")) == 0)) {
				json_decref(nl);
				return err_set(e, 409, "sim.bad_iam", "federated credential names "
				    "and issuer/subject pairs must be unique");
			}
		}
	}
	json_decref(m->fics);
	m->fics = nl;
	if (tags != NULL)
		json_object_update(m->tags, tags);
	return true;
}

/* POST /_sim/iam: what Terraform would do between phase 1 and phase 2 — set an AWS role's
 * external id and tags, a GCP service account's description, an Azure identity's tags and
 * federated credentials. */
bool
cs_sim_iam(struct cs *cs, json_t *b, struct err *e)
{
	const char *prov = jstr(b, "provider", ""), *k;
	json_t *tags = json_object_get(b, "tags"), *v;

	if (tags != NULL && !json_is_object(tags))
		return err_set(e, 400, "sim.bad_iam", "tags must be an object");
	json_object_foreach(tags, k, v)
		if (!json_is_string(v))
			return err_set(e, 400, "sim.bad_iam", "tag values must be strings");
	if (strcmp(prov, "aws") == 0) {
		const char *arn = jstr(b, "role_arn", ""), *name = strstr(arn, ":role/");
		char acct[16];
		struct cs_aws_role *r;

		if (strncmp(arn, "arn:aws:iam::", 13) != 0 || name == NULL ||
		    name - arn - 13 >= (long)sizeof(acct))
			return err_set(e, 400, "sim.bad_iam", "role_arn is not an iam role arn");
		snprintf(acct, sizeof(acct), "%.*s", (int)(name - arn - 13), arn + 13);
		r = cs_role_find(cs, acct, strrchr(name, '/') + 1);
		if (r == NULL)
			return err_set(e, 404, "sim.no_identity", "role %s not found", arn);
		if (json_object_get(b, "external_id") != NULL) {
			free(r->external_id);
			r->external_id = jstr(b, "external_id", NULL) ?
			    strdup(jstr(b, "external_id", NULL)) : NULL;
		}
		if (tags != NULL)
			json_object_update(r->tags, tags);
		return true;
	}
	if (strcmp(prov, "gcp") == 0) {
		struct cs_gsa *g = cs_gsa_find(cs, jstr(b, "service_account", ""));

		if (g == NULL)
			return err_set(e, 404, "sim.no_identity", "service account not found");
		if (jstr(b, "description", NULL) != NULL) {
			free(g->description);
			g->description = strdup(jstr(b, "description", NULL));
		}
		/* token_creators adds; token_creators_set replaces (a binding removed) */
		if (json_is_array(json_object_get(b, "token_creators_set")))
			json_array_clear(g->token_creators);
		if (json_is_array(json_object_get(b, "token_creators_set")))
			json_array_extend(g->token_creators, json_object_get(b, "token_creators_set"));
		if (json_is_array(json_object_get(b, "token_creators")))
			json_array_extend(g->token_creators, json_object_get(b, "token_creators"));
		return true;
	}
	if (strcmp(prov, "azure") == 0)
		return sim_azure(cs, b, tags, e);
	return err_set(e, 400, "sim.bad_iam", "provider must be aws, gcp or azure");
}
