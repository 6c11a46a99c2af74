/* cloudsim outputs: what a caller reads from the state dir — fleetd.env (base URLs and
 * fleetd's base identity), clusters.json (member clusters and their IAM identities) and
 * fleetd's GCP service-account key file. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cloudsim/cs.h"
#include "core/hash.h"

char *
cs_hyperpod_arn(const struct cs_cluster *cl)
{
	char *s = NULL;

	if (asprintf(&s, "arn:aws:sagemaker:%s:%s:cluster/%08x%04x", cl->region, cl->account,
	    hash_str(cl->name), hash_str(cl->region) & 0xffff) < 0)
		abort();
	return s;
}

char *
cs_provider_cluster_id(const struct cs_cluster *cl)
{
	char *s = NULL;
	int r;

	if (cl->provider == CS_HYPERPOD)
		return cs_hyperpod_arn(cl);
	if (cl->provider == CS_GKE)
		r = asprintf(&s, "projects/%s/locations/%s/clusters/%s", cl->account, cl->region,
		    cl->name);
	else
		r = asprintf(&s, "/subscriptions/%s/resourceGroups/%s/providers/"
		    "Microsoft.ContainerService/managedClusters/%s", cl->account,
		    cl->resource_group, cl->name);
	if (r < 0)
		abort();
	return s;
}

static bool
write_key(struct cs *cs, struct err *e)
{
	struct cs_gsa *g = cs->gsas.v[0];
	json_t *k;
	char *text, kid[48];
	bool ok;

	cs_hex_token(kid, 20);
	k = json_pack("{s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:s}", "type", "service_account",
	    "project_id", g->project, "private_key_id", kid, "private_key",
	    cs->fleetd_gcp_key_pem, "client_email", g->email, "client_id", g->unique_id,
	    "auth_uri", "https://accounts.google.com/o/oauth2/auth", "universe_domain",
	    "googleapis.com");
	json_object_set_new(k, "token_uri", json_sprintf("%s/gcp/oauth2/token", cs->base_url));
	text = json_dumps(k, JSON_INDENT(2));
	ok = cs_write_file(cs->state_dir, "gcp-fleetd-key.json", text, e);
	free(text);
	json_decref(k);
	return ok;
}

static bool
write_env(struct cs *cs, struct err *e)
{
	struct cs_aws_user *u = cs->users.v[0];
	struct cs_az_app *a = cs->apps.v[0];
	const char *b = cs->base_url;
	char *t = NULL;
	bool ok;

	if (asprintf(&t,
	    "# written by cloudsim: base URLs and fleetd's base identity\n"
	    "FLEETD_CLOUDSIM_URL=%s\n"
	    "FLEETD_GCP_OAUTH_URL=%s/gcp/oauth2\n"
	    "FLEETD_GCP_IAMCREDENTIALS_URL=%s/gcp/iamcredentials\n"
	    "FLEETD_GCP_IAM_URL=%s/gcp/iam\n"
	    "FLEETD_GKE_URL=%s/gke\n"
	    "FLEETD_GCE_URL=%s/gce\n"
	    "FLEETD_AZURE_LOGIN_URL=%s/azure/login\n"
	    "FLEETD_ARM_URL=%s/arm\n"
	    "FLEETD_AZURE_PRICES_URL=%s/azure/prices\n"
	    "FLEETD_AWS_PRICES_URL=%s/aws/pricing\n"
	    "FLEETD_AWS_STS_URL=%s/aws/sts\n"
	    "FLEETD_AWS_IAM_URL=%s/aws/iam\n"
	    "FLEETD_SAGEMAKER_URL=%s/aws/sagemaker\n"
	    "FLEETD_KUBE_URL=%s\n"
	    "FLEETD_KUBE_CA_FILE=%s/ca.pem\n"
	    "FLEETD_CLOUDSIM_CLUSTERS=%s/clusters.json\n"
	    "FLEETD_GCP_KEY_FILE=%s/gcp-fleetd-key.json\n"
	    "FLEETD_AWS_ACCESS_KEY_ID=%s\n"
	    "FLEETD_AWS_SECRET_ACCESS_KEY=%s\n"
	    "FLEETD_AWS_ACCOUNT_ID=%s\n"
	    "FLEETD_AZURE_TENANT_ID=%s\n"
	    "FLEETD_AZURE_CLIENT_ID=%s\n"
	    "FLEETD_AZURE_CLIENT_SECRET=%s\n",
	    b, b, b, b, b, b, b, b, b, b, b, b, b, cs->kube_url, cs->state_dir, cs->state_dir,
	    cs->state_dir, u->access_key, u->secret_key, u->account, a->tenant, a->client_id,
	    a->secret) < 0)
		abort();
	ok = cs_write_file(cs->state_dir, "fleetd.env", t, e);
	free(t);
	return ok;
}

static json_t *
cluster_json(struct cs *cs, struct cs_cluster *cl)
{
	json_t *pools = json_array(), *c;
	char *id = cs_provider_cluster_id(cl);
	size_t i;

	for (i = 0; i < cl->npools; i++) {
		struct cs_pool *p = &cl->pools[i];

		json_array_append_new(pools, json_pack("{s:s, s:s, s:s?, s:i, s:b, s:f}",
		    "name", p->name, "machine_type", p->mt->name, "accelerator", p->mt->accel,
		    "accelerators_per_node", p->mt->accel_count, "spot", p->spot,
		    "price_per_hour", p->price));
	}
	c = json_pack("{s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:o, s:O}",
	    "name", cl->name, "provider", cs_provider_name(cl->provider), "environment", cl->env,
	    "region", cl->region, "zone", cl->zone, "token", cl->token, "provider_cluster_id", id,
	    "batch_scheduler", cl->batch_scheduler, "rack_label", cs_rack_label(cl->provider),
	    "block_label", cs_block_label(cl->provider),
	    "kubernetes_version", cl->k8s_version, "ca_file", "", "pools", pools, "iam", cl->iam);
	json_object_set_new(c, "api_server", json_sprintf("%s/k8s/%s", cs->kube_url, cl->name));
	json_object_set_new(c, "ca_file", json_sprintf("%s/ca.pem", cs->state_dir));
	json_object_set_new(c, cl->provider == CS_GKE ? "project" :
	    cl->provider == CS_AKS ? "subscription" : "account", json_string(cl->account));
	if (cl->provider == CS_AKS)
		json_object_set_new(c, "resource_group", json_string(cl->resource_group));
	free(id);
	return c;
}

bool
cs_write_outputs(struct cs *cs, struct err *e)
{
	json_t *all = json_array(), *doc;
	char *text;
	size_t i;
	bool ok;

	for (i = 0; i < cs->nclusters; i++)
		json_array_append_new(all, cluster_json(cs, &cs->clusters[i]));
	doc = json_pack("{s:s, s:s, s:o}", "cloudsim_url", cs->base_url, "kube_url",
	    cs->kube_url, "clusters", all);
	text = json_dumps(doc, JSON_INDENT(2));
	ok = cs_write_file(cs->state_dir, "clusters.json", text, e) && write_key(cs, e) &&
	    write_env(cs, e);
	free(text);
	json_decref(doc);
	return ok;
}
