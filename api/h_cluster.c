/* h_cluster: member clusters — create (after a reachability probe), list, get, replace,
 * delete, cordon and uncordon.  Credentials never appear in an answer. */
#include <stdlib.h>
#include <string.h>

#include "api/crud.h"
#include "api/handlers.h"
#include "regions/cloud.h"
#include "regions/cluster.h"
#include "regions/poll_loop.h"
#include "providers/provider.h"

/* What the member's batch scheduler allows, read before the row is written (network:
 * outside transactions); token is the one to use (the body's, or the stored one). */
static void
batch_probe(struct cluster_input *in, const char *token)
{
	struct prov_cluster k = { NULL, in->name, in->api_server, in->ca_cert, token,
		in->provider_cluster_id, NULL };

	json_decref(in->probe);
	in->probe = token ? cluster_batch_probe(&k, in->batch_scheduler, in->kueue_elastic,
	    in->kueue_cluster_queue) : NULL;
}

/* cloud_id: the routes under /v1/clouds/{cloud_id}/clusters/{id} */
static const struct crud clusters = {
	.type = "cluster", .code = "cluster.not_found", .noun = "cluster",
	.collection = "/v1/clusters", .scoped = true, .parent = "cloud_id",
	.get = cluster_get, .del = cluster_delete,
};

struct create_arg {
	struct request		*rq;
	struct cluster_input	 in;
	json_t			*cloud;
	json_t			*out;
};

static bool
create_check(struct db *c, void *arg, struct err *e)
{
	struct create_arg *a = arg;
	const char *provider;

	if (!cloud_get(c, rq_param(a->rq, "id"), false, &a->cloud, e))
		return false;
	if (!rq_env_visible(a->rq, json_string_value(json_object_get(a->cloud, "environment"))))
		return err_set(e, 404, "cloud.not_found", "cloud not found");
	if (strcmp(json_string_value(json_object_get(a->cloud, "state")), "active") != 0) {
		err_set(e, 409, "cloud.not_active", "the cloud's iam pair is not verified yet");
		return err_detail(e, "Finish phase 2 (POST /v1/clouds/{id}/iam) before attaching "
		    "clusters.");
	}
	provider = json_string_value(json_object_get(a->cloud, "provider"));
	return cluster_parse(a->rq->json, provider, false, &a->in, e) &&
	    cluster_provider_id_bound(a->cloud, a->in.provider_cluster_id, e);
}

static bool
create_insert(struct db *c, void *arg, struct err *e)
{
	struct create_arg *a = arg;
	const char *env = json_string_value(json_object_get(a->cloud, "environment"));

	json_decref(a->out);
	a->out = NULL;
	return cluster_create(c, rq_param(a->rq, "id"), &a->in, &a->out, e) &&
	    audit_write(c, &a->rq->actor, "cluster.create", "cluster",
	    json_string_value(json_object_get(a->out, "id")), env, NULL, a->out, e);
}

HANDLER(h_cluster_create)
{
	struct create_arg a = { .rq = rq };
	bool ok = false;

	if (!db_tx(create_check, &a, e))
		goto cleanup;
	if (!cluster_probe(a.in.api_server, a.in.ca_cert, a.in.token, e))
		goto cleanup;
	batch_probe(&a.in, a.in.token);
	if (!db_tx(create_insert, &a, e))
		goto cleanup;
	rq_reply_object(rq, 201, a.out, "/v1/clusters");
	a.out = NULL;
	poll_loop_kick();	/* its capacity is wanted now, not at the next period */
	ok = true;
cleanup:
	json_decref(a.in.probe);
	json_decref(a.cloud);
	json_decref(a.out);
	return ok;
}

HANDLER(h_cluster_list)
{
	const char *after;
	int limit;
	json_t *items = NULL;
	bool all = rq_env_visible(rq, "*");
	const char *cloud_id = rq_param(rq, "id");
	json_t *cloud = NULL;

	/* under /v1/clouds/{id}: a cloud that is absent or not visible is 404, not [] */
	if (cloud_id != NULL) {
		if (!cloud_get(rq->db, cloud_id, false, &cloud, e))
			return false;
		all = rq_env_visible(rq, json_string_value(json_object_get(cloud,
		    "environment")));
		json_decref(cloud);
		if (!all)
			return err_set(e, 404, "cloud.not_found", "cloud not found");
	}
	if (!rq_page(rq, &limit, &after, e) ||
	    !cluster_list(rq->db, limit + 1, after, rq_query(rq, "environment"),
	    rq_query(rq, "region"), rq_query(rq, "provider"), rq_param(rq, "id"),
	    all ? NULL : rq->envs, rq->nenvs, &items, e))
		return false;
	rq_reply(rq, 200, rq_page_reply(rq, items, limit, "id"));
	return true;
}

HANDLER(h_cluster_get)
{
	return crud_read(rq, &clusters, e);
}

struct replace_arg {
	struct request		*rq;
	struct cluster_input	 in;
	json_t			*before;
	json_t			*out;
	long			 version;	/* of the row the checks read */
	bool			 endpoint;	/* api_server or ca_cert changes */
	char			*token;		/* stored token for the batch probe (heap) */
};

/* Checks of a PUT, in a first transaction: visibility, If-Match, the body, what may not
 * change, and whether the endpoint changes (then credentials are required again). */
static bool
replace_check(struct db *c, void *arg, struct err *e)
{
	struct replace_arg *a = arg;
	struct request *rq = a->rq;
	json_t *b;

	json_decref(a->before);
	a->before = NULL;
	if (!crud_get(rq, &clusters, c, rq_param(rq, "id"), false, &a->before, e))
		return false;
	b = a->before;
	a->version = (long)json_integer_value(json_object_get(b, "version"));
	if (!rq_if_match(rq, a->version, e) ||
	    !cluster_parse(rq->json, json_string_value(json_object_get(b, "provider")), true,
	    &a->in, e))
		return false;
	if (strcmp(a->in.name, json_string_value(json_object_get(b, "name"))) != 0)
		return err_field(e, 409, "cluster.immutable", "/name",
		    "name is immutable; register a new cluster instead");
	/* which provider cluster this is: fleet-cluster marks it force_new */
	if (strcmp(a->in.provider_cluster_id,
	    json_string_value(json_object_get(b, "provider_cluster_id"))) != 0)
		return err_field(e, 409, "cluster.immutable", "/provider_cluster_id",
		    "provider_cluster_id is immutable; register a new cluster instead");
	a->endpoint = strcmp(a->in.api_server,
	    json_string_value(json_object_get(b, "api_server"))) != 0 ||
	    strcmp(a->in.ca_cert, json_string_value(json_object_get(b, "ca_cert"))) != 0;
	/* the stored token must never be sent to another host or trust another CA */
	if (a->endpoint && a->in.token == NULL)
		return err_field(e, 400, "cluster.credentials_required", "/credentials",
		    "a new api_server or ca_cert needs the cluster's credentials again");
	if (a->in.token == NULL && a->token == NULL &&
	    strcmp(a->in.batch_scheduler, "kueue") == 0 &&
	    (a->token = cluster_token(c, rq_param(rq, "id"), e)) == NULL)
		return false;
	return true;
}

static bool
replace_write(struct db *c, void *arg, struct err *e)
{
	struct replace_arg *a = arg;
	struct request *rq = a->rq;
	const char *id = rq_param(rq, "id");
	json_t *now = NULL;
	bool ok;

	json_decref(a->out);
	a->out = NULL;
	if (!crud_get(rq, &clusters, c, id, true, &now, e))
		return false;
	/* the row the probe was for must still be the row we change */
	ok = json_integer_value(json_object_get(now, "version")) == a->version ||
	    err_set(e, 409, "cluster.changed", "the cluster changed during the request; retry");
	json_decref(now);
	if (!ok || !cluster_replace(c, id, &a->in, &a->out, e))
		return false;
	if (json_integer_value(json_object_get(a->out, "version")) != a->version &&
	    !audit_write(c, &rq->actor, "cluster.update", "cluster", id,
	    json_string_value(json_object_get(a->out, "environment")), a->before, a->out, e))
		return false;
	return true;
}

/* R_NOTX: check, probe a changed endpoint outside any transaction (as create does), then
 * write if the row did not change meanwhile. */
HANDLER(h_cluster_replace)
{
	struct replace_arg a = { .rq = rq };
	bool ok = false;

	if (!db_tx(replace_check, &a, e))
		goto cleanup;
	if (a.endpoint && !cluster_probe(a.in.api_server, a.in.ca_cert, a.in.token, e))
		goto cleanup;
	batch_probe(&a.in, a.in.token ? a.in.token : a.token);
	if (!db_tx(replace_write, &a, e))
		goto cleanup;
	rq_reply_object(rq, 200, a.out, "/v1/clusters");
	a.out = NULL;
	ok = true;
cleanup:
	json_decref(a.in.probe);
	if (a.token != NULL) {
		memset(a.token, 0, strlen(a.token));
		free(a.token);
	}
	json_decref(a.before);
	json_decref(a.out);
	return ok;
}

HANDLER(h_cluster_delete)
{
	return crud_delete(rq, &clusters, e);
}

static bool
set_cordon(struct db *c, const char *id, void *on, json_t **out, struct err *e)
{
	return cluster_set_cordon(c, id, *(bool *)on, out, e);
}

static bool
cordon(struct request *rq, bool on, struct err *e)
{
	return crud_action(rq, &clusters, rq_param(rq, "id"), on ? "cordon" : "uncordon",
	    set_cordon, &on, e);
}

HANDLER(h_cluster_cordon)
{
	return cordon(rq, true, e);
}

HANDLER(h_cluster_uncordon)
{
	return cordon(rq, false, e);
}
