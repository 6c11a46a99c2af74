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

static void
copy(char *dst, size_t n, const char *src)
{
	size_t l = src ? strnlen(src, n - 1) : 0;

	if (l > 0)
		memcpy(dst, src, l);
	dst[l] = '\0';
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
	copy(g->email, sizeof(g->email), email);
	copy(g->project, sizeof(g->project), project);
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
	copy(r->account, sizeof(r->account), account);
	copy(r->name, sizeof(r->name), name);
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
	copy(u->account, sizeof(u->account), jstr(a, "account", "111111111111"));
	copy(u->name, sizeof(u->name), jstr(a, "user", "fleetd"));
	cs_hex_token(hex, 8);
	upper(hex);
	snprintf(u->access_key, sizeof(u->access_key), "AKIA%.16s", hex);
	copy(u->access_key, sizeof(u->access_key), jstr(a, "access_key", u->access_key));
	cs_hex_token(hex, 20);
	copy(u->secret_key, sizeof(u->secret_key), jstr(a, "secret_key", hex));
	cs_vec_push(&cs->users, u);
	cs_uuid(app->tenant);
	copy(app->tenant, sizeof(app->tenant), jstr(z, "tenant", app->tenant));
	cs_uuid(app->client_id);
	copy(app->client_id, sizeof(app->client_id), jstr(z, "client_id", app->client_id));
	cs_hex_token(hex, 20);
	copy(app->secret, sizeof(app->secret), jstr(z, "client_secret", hex));
	copy(app->name, sizeof(app->name), "fleetd");
	cs_vec_push(&cs->apps, app);
	return true;
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

static void
auto_aks(struct cs *cs, struct cs_cluster *cl)
{
	struct cs_az_app *app = calloc(1, sizeof(*app));
	struct cs_az_identity *mi = calloc(1, sizeof(*mi));
	struct cs_az_sub *sub = sub_find(cs, cl->account);
	char rid[512];

	if (app == NULL || mi == NULL)
		abort();
	copy(app->tenant, sizeof(app->tenant), sub->tenant);
	cs_uuid(app->client_id);
	cs_hex_token(app->secret, 20);
	snprintf(app->name, sizeof(app->name), "fleet-cp-%s", cl->name);
	cs_vec_push(&cs->apps, app);
	copy(mi->subscription, sizeof(mi->subscription), cl->account);
	copy(mi->resource_group, sizeof(mi->resource_group), cl->resource_group);
	snprintf(mi->name, sizeof(mi->name), "fleet-nodes-%s", cl->name);
	copy(mi->location, sizeof(mi->location), cl->region);
	copy(mi->tenant, sizeof(mi->tenant), sub->tenant);
	cs_uuid(mi->client_id);
	cs_uuid(mi->principal_id);
	mi->tags = json_object();
	cs_vec_push(&cs->mis, mi);
	snprintf(rid, sizeof(rid), "/subscriptions/%s/resourceGroups/%s/providers/"
	    "Microsoft.ManagedIdentity/userAssignedIdentities/%s", mi->subscription,
	    mi->resource_group, mi->name);
	cl->iam = json_pack("{s:{s:s, s:s, s:s}, s:{s:s, s:s, s:s}, s:s}", "control_plane",
	    "tenant_id", app->tenant, "client_id", app->client_id, "client_secret", app->secret,
	    "cluster_role", "resource_id", rid, "client_id", mi->client_id, "principal_id",
	    mi->principal_id, "cloud_id_in", "managed identity tag fleet.io/cloud-id");
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
		copy(u->account, sizeof(u->account), jstr(v, "account", ""));
		copy(u->name, sizeof(u->name), jstr(v, "name", ""));
		copy(u->access_key, sizeof(u->access_key), jstr(v, "access_key", ""));
		copy(u->secret_key, sizeof(u->secret_key), jstr(v, "secret_key", ""));
		cs_vec_push(&cs->users, u);
	}
	json_array_foreach(json_object_get(z, "subscriptions"), i, v) {
		struct cs_az_sub *s = calloc(1, sizeof(*s));

		if (s == NULL)
			abort();
		copy(s->id, sizeof(s->id), jstr(v, "id", ""));
		copy(s->tenant, sizeof(s->tenant), jstr(v, "tenant",
		    ((struct cs_az_app *)cs->apps.v[0])->tenant));
		cs_vec_push(&cs->subs, s);
	}
	json_array_foreach(json_object_get(z, "apps"), i, v) {
		struct cs_az_app *p = calloc(1, sizeof(*p));

		if (p == NULL)
			abort();
		copy(p->tenant, sizeof(p->tenant), jstr(v, "tenant",
		    ((struct cs_az_app *)cs->apps.v[0])->tenant));
		copy(p->client_id, sizeof(p->client_id), jstr(v, "client_id", ""));
		copy(p->secret, sizeof(p->secret), jstr(v, "client_secret", ""));
		copy(p->name, sizeof(p->name), jstr(v, "name", ""));
		cs_vec_push(&cs->apps, p);
	}
}

bool
cs_ident_load(struct cs *cs, json_t *root, struct err *e)
{
	size_t i;

	if (!load_fleetd(cs, json_object_get(root, "fleetd"), e))
		return false;
	load_lists(cs, root);
	for (i = 0; i < cs->nclusters; i++) {
		struct cs_cluster *cl = &cs->clusters[i];

		if (cl->provider == CS_AKS && sub_find(cs, cl->account) == NULL) {
			struct cs_az_sub *s = calloc(1, sizeof(*s));

			if (s == NULL)
				abort();
			copy(s->id, sizeof(s->id), cl->account);
			copy(s->tenant, sizeof(s->tenant),
			    ((struct cs_az_app *)cs->apps.v[0])->tenant);
			cs_vec_push(&cs->subs, s);
		}
		if (cl->iam != NULL)
			continue;
		if (cl->provider == CS_GKE)
			auto_gke(cs, cl);
		else if (cl->provider == CS_AKS)
			auto_aks(cs, cl);
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
	free(p);
}

static void
vfree(struct cs_vec *v, void (*fn)(void *))
{
	size_t i;

	for (i = 0; i < v->n; i++)
		fn(v->v[i]);
	free(v->v);
	memset(v, 0, sizeof(*v));
}

void
cs_ident_free(struct cs *cs)
{
	vfree(&cs->gsas, gsa_free);
	vfree(&cs->roles, role_free);
	vfree(&cs->users, free);
	vfree(&cs->apps, free);
	vfree(&cs->mis, mi_free);
	vfree(&cs->subs, free);
	vfree(&cs->tokens, free);
	vfree(&cs->faults, free);
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
	copy(t->principal, sizeof(t->principal), principal);
	copy(t->tenant, sizeof(t->tenant), tenant);
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

/* POST /_sim/iam: what Terraform would do between phase 1 and phase 2 — set an AWS role's
 * external id and tags, a GCP service account's description, an Azure identity's tags. */
bool
cs_sim_iam(struct cs *cs, json_t *b, struct err *e)
{
	const char *prov = jstr(b, "provider", ""), *k;
	json_t *tags = json_object_get(b, "tags"), *v;
	size_t i;

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
		if (json_is_array(json_object_get(b, "token_creators")))
			json_array_extend(g->token_creators, json_object_get(b, "token_creators"));
		return true;
	}
	if (strcmp(prov, "azure") == 0) {
		const char *rid = jstr(b, "resource_id", "");

		for (i = 0; i < cs->mis.n; i++) {
			struct cs_az_identity *m = cs->mis.v[i];
			char id[512];

			snprintf(id, sizeof(id), "/subscriptions/%s/resourceGroups/%s/providers/"
			    "Microsoft.ManagedIdentity/userAssignedIdentities/%s", m->subscription,
			    m->resource_group, m->name);
			if (strcasecmp(id, rid) == 0) {
				if (tags != NULL)
					json_object_update(m->tags, tags);
				return true;
			}
		}
		return err_set(e, 404, "sim.no_identity", "managed identity not found");
	}
	return err_set(e, 400, "sim.bad_iam", "provider must be aws, gcp or azure");
}
