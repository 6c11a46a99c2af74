/* cloudsim persist: what survives a restart with the same --state-dir — fleetd's base
 * identity, the member clusters' tokens and ports, every IAM setting Terraform (or
 * /_sim/iam) made (AWS trust external ids and tags, GCP descriptions and token creators,
 * Azure identities' ids, tags and federated credentials), and each cluster's namespaces
 * and Ray objects (their pods are scheduled again). Kept in DIR/state.json. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "cloudsim/cs.h"
#include "core/log.h"

#define SAVE_EVERY_S	2.0

static long long saved_sum = -1;	/* sum of the clusters' rv at the last save */
static double saved_at;
static json_t *saved_iam;		/* the IAM part last written */

static const char *
jstr(json_t *o, const char *k)
{
	return json_string_value(json_object_get(o, k));
}

static void
copy(char *dst, size_t n, const char *src)
{
	if (src != NULL)
		snprintf(dst, n, "%s", src);
}

static int
port_of(const char *url)
{
	const char *c = strrchr(url, ':');

	return c ? atoi(c + 1) : 0;
}

static json_t *
iam_json(struct cs *cs)
{
	json_t *roles = json_array(), *gsas = json_array(), *mis = json_array(), *toks =
	    json_object();
	struct cs_aws_user *u = cs->users.v[0];
	struct cs_az_app *a = cs->apps.v[0];
	size_t i;

	for (i = 0; i < cs->roles.n; i++) {
		struct cs_aws_role *r = cs->roles.v[i];

		json_array_append_new(roles, json_pack("{s:s, s:s, s:s, s:s?, s:O, s:O}", "account",
		    r->account, "name", r->name, "id", r->id, "external_id", r->external_id,
		    "trusted", r->trusted, "tags", r->tags));
	}
	for (i = 0; i < cs->gsas.n; i++) {
		struct cs_gsa *g = cs->gsas.v[i];

		json_array_append_new(gsas, json_pack("{s:s, s:s, s:s, s:s, s:O}", "email", g->email,
		    "unique_id", g->unique_id, "description", g->description, "display_name",
		    g->display_name, "token_creators", g->token_creators));
	}
	for (i = 0; i < cs->mis.n; i++) {
		struct cs_az_identity *m = cs->mis.v[i];

		json_array_append_new(mis, json_pack("{s:s, s:s, s:s, s:s, s:s, s:O, s:O}",
		    "subscription", m->subscription, "resource_group", m->resource_group, "name",
		    m->name, "client_id", m->client_id, "principal_id", m->principal_id, "tags",
		    m->tags, "fics", m->fics));
	}
	for (i = 0; i < cs->nclusters; i++)
		json_object_set_new(toks, cs->clusters[i].name, json_string(cs->clusters[i].token));
	return json_pack("{s:{s:s, s:s, s:s, s:s, s:s, s:s, s:s}, s:o, s:o, s:o, s:o}",
	    "fleetd", "aws_access_key", u->access_key, "aws_secret_key", u->secret_key,
	    "azure_tenant", a->tenant, "azure_client_id", a->client_id, "azure_secret", a->secret,
	    "azure_object_id", a->object_id, "gcp_key_pem", cs->fleetd_gcp_key_pem ?
	    cs->fleetd_gcp_key_pem : "", "roles", roles, "service_accounts", gsas,
	    "managed_identities", mis, "cluster_tokens", toks);
}

static json_t *
object_json(const struct cs_object *o)
{
	return json_pack("{s:s, s:s, s:s, s:s, s:s, s:s, s:I, s:I, s:i, s:O, s:O, s:f, s:f, s:f, "
	    "s:f, s:f, s:s, s:s, s:i, s:f}", "kind", o->kind, "plural", o->plural, "ns", o->ns,
	    "name", o->name, "uid", o->uid, "manager", o->manager, "rv", (json_int_t)o->rv,
	    "generation", (json_int_t)o->generation, "applies", o->applies, "applied",
	    o->applied ? o->applied : json_null(), "live", o->live, "created", o->created,
	    "ready_at", o->ready_at, "job_start", o->job_start, "job_end", o->job_end,
	    "cluster_gone", o->cluster_gone, "cluster_name", o->cluster_name, "job_id", o->job_id,
	    "spawned", o->spawned, "next_cron", o->next_cron);
}

void
cs_persist_save(struct cs *cs)
{
	json_t *clusters = json_object(), *doc, *objs;
	struct err e = { 0 };
	size_t i, j;
	char *text;

	for (i = 0; i < cs->nclusters; i++) {
		struct cs_cluster *cl = &cs->clusters[i];

		objs = json_array();
		for (j = 0; j < cl->objects.n; j++)
			if (!((struct cs_object *)cl->objects.v[j])->deleted)
				json_array_append_new(objs, object_json(cl->objects.v[j]));
		json_object_set_new(clusters, cl->name, json_pack("{s:I, s:O, s:o}", "rv",
		    (json_int_t)cl->rv, "namespaces", cl->namespaces, "objects", objs));
	}
	json_decref(saved_iam);
	saved_iam = iam_json(cs);
	doc = json_pack("{s:i, s:{s:i, s:i}, s:O, s:o, s:O}", "version", 1, "ports", "http",
	    port_of(cs->base_url), "kube", port_of(cs->kube_url), "iam", saved_iam, "clusters",
	    clusters, "apply_counts", cs->apply_counts);
	text = json_dumps(doc, JSON_COMPACT);
	if (text == NULL || !cs_write_file(cs->state_dir, "state.json", text, &e))
		log_warn(NULL, "cloudsim", "cannot save state", "{s:s}", "error", e.msg);
	free(text);
	json_decref(doc);
	saved_at = cs_wall(cs);
	saved_sum = 0;
	for (i = 0; i < cs->nclusters; i++)
		saved_sum += cs->clusters[i].rv;
}

void
cs_persist_tick(struct cs *cs)
{
	long long sum = 0;
	json_t *now;
	size_t i;
	bool iam_moved;

	if (cs_wall(cs) - saved_at < SAVE_EVERY_S && saved_sum >= 0)
		return;
	for (i = 0; i < cs->nclusters; i++)
		sum += cs->clusters[i].rv;
	now = iam_json(cs);
	iam_moved = !json_equal(now, saved_iam);
	json_decref(now);
	if (sum != saved_sum || iam_moved)
		cs_persist_save(cs);
	else
		saved_at = cs_wall(cs);
}

static int loaded_port, loaded_kube_port;	/* the earlier run's, from state.json */

int
cs_persist_port(struct cs *cs, const char *file)
{
	(void)cs;
	return strcmp(file, "kube_port") == 0 ? loaded_kube_port : loaded_port;
}


/* ---- load */

static void
load_iam(struct cs *cs, json_t *iam)
{
	json_t *f = json_object_get(iam, "fleetd"), *v;
	struct cs_aws_user *u = cs->users.v[0];
	struct cs_az_app *a = cs->apps.v[0];
	struct cs_gsa *g0 = cs->gsas.v[0];
	const char *k;
	size_t i;

	copy(u->access_key, sizeof(u->access_key), jstr(f, "aws_access_key"));
	copy(u->secret_key, sizeof(u->secret_key), jstr(f, "aws_secret_key"));
	copy(a->tenant, sizeof(a->tenant), jstr(f, "azure_tenant"));
	copy(a->client_id, sizeof(a->client_id), jstr(f, "azure_client_id"));
	copy(a->secret, sizeof(a->secret), jstr(f, "azure_secret"));
	copy(a->object_id, sizeof(a->object_id), jstr(f, "azure_object_id"));
	if (jstr(f, "gcp_key_pem") != NULL && *jstr(f, "gcp_key_pem") != '\0') {
		char *pub = cs_public_from_private(jstr(f, "gcp_key_pem"));

		if (pub != NULL) {
			free(cs->fleetd_gcp_key_pem);
			cs->fleetd_gcp_key_pem = strdup(jstr(f, "gcp_key_pem"));
			free(g0->public_pem);
			g0->public_pem = pub;
		}
	}
	json_array_foreach(json_object_get(iam, "roles"), i, v) {
		struct cs_aws_role *r = cs_role_find(cs, jstr(v, "account") ? jstr(v, "account") :
		    "", jstr(v, "name") ? jstr(v, "name") : "");

		if (r == NULL)
			continue;
		copy(r->id, sizeof(r->id), jstr(v, "id"));
		free(r->external_id);
		r->external_id = jstr(v, "external_id") ? strdup(jstr(v, "external_id")) : NULL;
		if (json_is_array(json_object_get(v, "trusted"))) {
			json_array_clear(r->trusted);
			json_array_extend(r->trusted, json_object_get(v, "trusted"));
		}
		if (json_is_object(json_object_get(v, "tags"))) {
			json_object_clear(r->tags);
			json_object_update(r->tags, json_object_get(v, "tags"));
		}
	}
	json_array_foreach(json_object_get(iam, "service_accounts"), i, v) {
		struct cs_gsa *g = cs_gsa_find(cs, jstr(v, "email") ? jstr(v, "email") : "");

		if (g == NULL)
			continue;
		copy(g->unique_id, sizeof(g->unique_id), jstr(v, "unique_id"));
		if (jstr(v, "description") != NULL) {
			free(g->description);
			g->description = strdup(jstr(v, "description"));
		}
		if (json_is_array(json_object_get(v, "token_creators"))) {
			json_array_clear(g->token_creators);
			json_array_extend(g->token_creators, json_object_get(v, "token_creators"));
		}
	}
	json_array_foreach(json_object_get(iam, "managed_identities"), i, v) {
		char rid[512];
		struct cs_az_identity *m;

		snprintf(rid, sizeof(rid), "/subscriptions/%s/resourceGroups/%s/providers/"
		    "Microsoft.ManagedIdentity/userAssignedIdentities/%s", jstr(v, "subscription") ?
		    jstr(v, "subscription") : "", jstr(v, "resource_group") ?
		    jstr(v, "resource_group") : "", jstr(v, "name") ? jstr(v, "name") : "");
		if ((m = cs_mi_find(cs, rid, NULL)) == NULL)
			continue;
		copy(m->client_id, sizeof(m->client_id), jstr(v, "client_id"));
		copy(m->principal_id, sizeof(m->principal_id), jstr(v, "principal_id"));
		for (size_t c = 0; c < cs->nclusters; c++) {	/* clusters.json's iam block */
			json_t *iam = cs->clusters[c].iam, *id;
			const char *role;

			json_object_foreach(iam, role, id)
				if (json_is_object(id) && jstr(id, "resource_id") != NULL &&
				    strcasecmp(jstr(id, "resource_id"), rid) == 0) {
					json_object_set_new(id, "client_id", json_string(m->client_id));
					json_object_set_new(id, "principal_id",
					    json_string(m->principal_id));
				}
		}
		if (json_is_object(json_object_get(v, "tags"))) {
			json_object_clear(m->tags);
			json_object_update(m->tags, json_object_get(v, "tags"));
		}
		if (json_is_array(json_object_get(v, "fics"))) {
			json_decref(m->fics);
			m->fics = json_deep_copy(json_object_get(v, "fics"));
		}
	}
	json_object_foreach(json_object_get(iam, "cluster_tokens"), k, v) {
		struct cs_cluster *cl = cs_cluster_find(cs, k);

		if (cl != NULL && json_is_string(v))
			copy(cl->token, sizeof(cl->token), json_string_value(v));
	}
}

static double
num(json_t *o, const char *k)
{
	return json_number_value(json_object_get(o, k));
}

static void
load_cluster(struct cs *cs, struct cs_cluster *cl, json_t *c)
{
	json_t *v, *ns = json_object_get(c, "namespaces");
	size_t i;

	if (json_is_integer(json_object_get(c, "rv")) &&
	    json_integer_value(json_object_get(c, "rv")) > cl->rv)
		cl->rv = json_integer_value(json_object_get(c, "rv"));
	json_array_foreach(ns, i, v) {
		const char *name = cs_jpath(v, "metadata.name");

		if (name != NULL && !cs_ns_exists(cl, name))
			json_array_append(cl->namespaces, v);
	}
	json_array_foreach(json_object_get(c, "objects"), i, v) {
		struct cs_object *o;

		if (cs_kind_of(jstr(v, "plural") ? jstr(v, "plural") : "") == NULL ||
		    !json_is_object(json_object_get(v, "live")))
			continue;
		if ((o = calloc(1, sizeof(*o))) == NULL)
			abort();
		copy(o->kind, sizeof(o->kind), jstr(v, "kind"));
		copy(o->plural, sizeof(o->plural), jstr(v, "plural"));
		copy(o->ns, sizeof(o->ns), jstr(v, "ns"));
		copy(o->name, sizeof(o->name), jstr(v, "name"));
		copy(o->uid, sizeof(o->uid), jstr(v, "uid"));
		copy(o->manager, sizeof(o->manager), jstr(v, "manager"));
		copy(o->cluster_name, sizeof(o->cluster_name), jstr(v, "cluster_name"));
		copy(o->job_id, sizeof(o->job_id), jstr(v, "job_id"));
		o->rv = (long long)num(v, "rv");
		o->generation = (long long)num(v, "generation");
		o->applies = (int)num(v, "applies");
		o->applied = json_deep_copy(json_object_get(v, "applied"));
		o->live = json_deep_copy(json_object_get(v, "live"));
		o->created = num(v, "created");
		o->ready_at = num(v, "ready_at");
		o->job_start = num(v, "job_start");
		o->job_end = num(v, "job_end");
		o->cluster_gone = num(v, "cluster_gone");
		o->spawned = (int)num(v, "spawned");
		o->next_cron = num(v, "next_cron");
		cs_vec_push(&cl->objects, o);
		cs_object_changed(cs, cl, o);	/* its pods are scheduled again */
	}
}

bool
cs_persist_load(struct cs *cs, struct err *e)
{
	char path[1024], *text;
	json_t *doc, *c;
	const char *k;

	snprintf(path, sizeof(path), "%s/state.json", cs->state_dir);
	if ((text = cs_read_file(path, NULL)) == NULL)
		return true;	/* a first start */
	doc = json_loads(text, 0, NULL);
	free(text);
	if (!json_is_object(doc) || json_integer_value(json_object_get(doc, "version")) != 1) {
		json_decref(doc);
		return err_set(e, 400, "cloudsim.state", "%s is not a cloudsim state file", path);
	}
	loaded_port = (int)json_integer_value(json_object_get(json_object_get(doc, "ports"),
	    "http"));
	loaded_kube_port = (int)json_integer_value(json_object_get(json_object_get(doc, "ports"),
	    "kube"));
	if (loaded_port < 0 || loaded_port > 65535 || loaded_kube_port < 0 ||
	    loaded_kube_port > 65535)
		loaded_port = loaded_kube_port = 0;
	load_iam(cs, json_object_get(doc, "iam"));
	json_object_foreach(json_object_get(doc, "clusters"), k, c) {
		struct cs_cluster *cl = cs_cluster_find(cs, k);

		if (cl != NULL)
			load_cluster(cs, cl, c);
	}
	if (json_is_object(json_object_get(doc, "apply_counts")))
		json_object_update(cs->apply_counts, json_object_get(doc, "apply_counts"));
	json_decref(doc);
	log_info(NULL, "cloudsim", "state reloaded", "{s:s}", "file", path);
	return true;
}
