/* resources: create, read, update and delete of each resource through fleetd's REST API
 * (generic for the plain ones), phase 2 of cloud registration, member clusters with a
 * write-only credential, and the data sources. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <curl/curl.h>

#include "tf.h"

void tf_validate_cloud(const struct tf_res *r, json_t *config, struct tf_diags *d);

static char *
item_path(const struct tf_res *r, json_t *state)
{
	const char *key = json_string_value(tf_get(state, r->key));
	char *esc, *p = NULL;

	if (!key)
		return NULL;
	esc = curl_easy_escape(NULL, key, 0);
	if (esc && asprintf(&p, "%s/%s", r->coll, esc) < 0)
		p = NULL;
	curl_free(esc);
	return p;
}

/* ------------------------------------------------------------------ generic REST */

bool
tf_res_create(const struct tf_res *r, json_t *planned, json_t *config, json_t **api,
    struct tf_diags *d)
{
	json_t *body;
	int st;
	bool ok;

	if (r->ops && r->ops->create)
		return r->ops->create(r, planned, config, api, d);
	body = tf_body(r->attrs, planned);
	ok = tf_api("POST", r->coll, body, 201, 0, false, api, &st, d);
	json_decref(body);
	return ok;
}

bool
tf_res_read(const struct tf_res *r, json_t *state, json_t **api, struct tf_diags *d)
{
	char *path;
	int st;
	bool ok;

	if (r->ops && r->ops->read)
		return r->ops->read(r, state, api, d);
	path = item_path(r, state);
	if (!path) {
		*api = NULL;
		return true;
	}
	ok = tf_api("GET", path, NULL, 200, 0, true, api, &st, d);
	if (ok && st == 404) {
		json_decref(*api);
		*api = NULL;
	}
	free(path);
	return ok;
}

bool
tf_res_update(const struct tf_res *r, json_t *prior, json_t *planned, json_t *config,
    json_t **api, struct tf_diags *d)
{
	json_t *body;
	char *path;
	int st;
	bool ok;

	if (r->ops && r->ops->update)
		return r->ops->update(r, prior, planned, config, api, d);
	path = item_path(r, prior);
	body = tf_body(r->attrs, planned);
	ok = path && tf_api_ex("PUT", path, body, tf_get(prior, "version"), 200, 0, false, api,
	    &st, d);
	json_decref(body);
	free(path);
	return ok;
}

bool
tf_res_remove(const struct tf_res *r, json_t *state, struct tf_diags *d)
{
	json_t *out = NULL;
	char *path;
	int st;
	bool ok;

	if (r->ops && r->ops->remove)
		return r->ops->remove(r, state, d);
	path = item_path(r, state);
	ok = !path || tf_api_ex("DELETE", path, NULL, tf_get(state, "version"), 204, 200, true,
	    &out, &st, d);
	json_decref(out);
	free(path);
	return ok;
}

/* ------------------------------------------------------------------ fleet_cloud */

static void
cloud_validate(const struct tf_res *r, json_t *config, struct tf_diags *d)
{
	tf_validate_cloud(r, config, d);
}

const struct tf_ops tf_ops_cloud = {.validate = cloud_validate};

/* ------------------------------------------------------------------ fleet_cloud_iam */

static char *
cloud_path(const char *cloud_id, const char *suffix)
{
	char *esc = curl_easy_escape(NULL, cloud_id ? cloud_id : "", 0), *p = NULL;

	if (esc && asprintf(&p, "/v1/clouds/%s%s", esc, suffix) < 0)
		p = NULL;
	curl_free(esc);
	return p;
}

/* POSTs the pair to /iam (lock) or /iam/rotate and waits while fleetd's verification
 * fails (IAM is eventually consistent), up to iam_verification_timeout; then fails the
 * apply with one diagnostic per failed check. */
static bool
iam_post(json_t *planned, const char *suffix, json_t **api, struct tf_diags *d)
{
	const char *cid = json_string_value(tf_get(planned, "cloud_id"));
	char *path = cloud_path(cid, suffix);
	json_t *body = json_pack("{s:O, s:O}", "control_plane_role",
	    tf_get(planned, "control_plane_role"), "cluster_role", tf_get(planned, "cluster_role"));
	time_t end = time(NULL) + tf_conf.iam_timeout_s;
	bool ok = false;
	int st;

	for (;;) {
		if (!tf_api("POST", path, body, 200, 422, false, api, &st, d))
			break;
		if (st == 200) {
			ok = true;
			break;
		}
		if (time(NULL) >= end || tf_stopping) {
			tf_api_problem(*api, st, "fleetd could not verify the IAM pair", d);
			json_decref(*api);
			*api = NULL;
			break;
		}
		json_decref(*api);
		*api = NULL;
		for (int i = 0; i < 20 && !tf_stopping; i++)
			usleep(100 * 1000);
	}
	json_decref(body);
	free(path);
	return ok;
}

static bool
iam_create(const struct tf_res *r, json_t *planned, json_t *config, json_t **api,
    struct tf_diags *d)
{
	(void)r;
	(void)config;
	return iam_post(planned, "/iam", api, d);
}

static bool
iam_update(const struct tf_res *r, json_t *prior, json_t *planned, json_t *config,
    json_t **api, struct tf_diags *d)
{
	(void)r;
	(void)prior;
	(void)config;
	return iam_post(planned, "/iam/rotate", api, d);
}

/* Gone when the cloud is gone or its pair is not locked (phase 2 then plans again). */
static bool
iam_read(const struct tf_res *r, json_t *state, json_t **api, struct tf_diags *d)
{
	char *path = cloud_path(json_string_value(tf_get(state, "cloud_id")), "");
	int st;
	bool ok;

	(void)r;
	ok = tf_api("GET", path, NULL, 200, 0, true, api, &st, d);
	if (ok && (st == 404 || !json_is_true(json_object_get(json_object_get(*api, "iam"),
	    "locked")))) {
		json_decref(*api);
		*api = NULL;
	}
	free(path);
	return ok;
}

static bool
iam_remove(const struct tf_res *r, json_t *state, struct tf_diags *d)
{
	(void)r;
	(void)state;
	(void)d;
	return true;	/* a locked pair ends with its cloud */
}

static void
iam_validate(const struct tf_res *r, json_t *config, struct tf_diags *d)
{
	json_t *cp = tf_get(config, "control_plane_role"), *cl = tf_get(config, "cluster_role");

	(void)r;
	if (json_is_string(cp) && json_is_string(cl) && json_equal(cp, cl))
		tf_diag(d, true, "cluster_role", "Invalid attribute value",
		    "Attribute \"cluster_role\" must differ from control_plane_role: one identity "
		    "may not be both.");
}

const struct tf_ops tf_ops_cloud_iam = {iam_create, iam_read, iam_update, iam_remove,
	iam_validate};

/* ------------------------------------------------------------------ fleet_cluster */

static char *
cluster_path(json_t *state, bool with_id)
{
	const char *c = json_string_value(tf_get(state, "cloud_id"));
	const char *i = json_string_value(tf_get(state, "id"));
	char *cid = curl_easy_escape(NULL, c ? c : "", 0);
	char *id = curl_easy_escape(NULL, i ? i : "", 0);
	char *p = NULL;

	if (cid && id && asprintf(&p, "/v1/clouds/%s/clusters%s%s", cid, with_id ? "/" : "",
	    with_id ? id : "") < 0)
		p = NULL;
	curl_free(cid);
	curl_free(id);
	return p;
}

static json_t *
cluster_body(const struct tf_res *r, json_t *planned, json_t *config, bool creds)
{
	json_t *body = tf_body(r->attrs, planned);
	json_t *tok = tf_get(config, "token_wo");

	json_object_del(body, "cloud_id");
	if (creds && json_is_string(tok))
		json_object_set_new(body, "credentials", json_pack("{s:O}", "token", tok));
	return body;
}

static bool
cluster_create(const struct tf_res *r, json_t *planned, json_t *config, json_t **api,
    struct tf_diags *d)
{
	char *path = cluster_path(planned, false);
	json_t *body = cluster_body(r, planned, config, true);
	int st;
	bool ok = path && tf_api("POST", path, body, 201, 0, false, api, &st, d);

	json_decref(body);
	free(path);
	return ok;
}

static bool
cluster_update(const struct tf_res *r, json_t *prior, json_t *planned, json_t *config,
    json_t **api, struct tf_diags *d)
{
	bool rotate = !tf_equal(tf_get(prior, "token_wo_version"),
	    tf_get(planned, "token_wo_version"));
	char *path = cluster_path(prior, true);
	json_t *body = cluster_body(r, planned, config, rotate);
	int st;
	bool ok = path && tf_api_ex("PUT", path, body, tf_get(prior, "version"), 200, 0, false,
	    api, &st, d);

	json_decref(body);
	free(path);
	return ok;
}

static bool
cluster_remove(const struct tf_res *r, json_t *state, struct tf_diags *d)
{
	char *path = cluster_path(state, true);
	json_t *out = NULL;
	int st;
	bool ok;

	(void)r;
	ok = path && tf_api_ex("DELETE", path, NULL, tf_get(state, "version"), 204, 200, true,
	    &out, &st, d);
	json_decref(out);
	free(path);
	return ok;
}

const struct tf_ops tf_ops_cluster = {cluster_create, NULL, cluster_update, cluster_remove,
	NULL};

/* ------------------------------------------------------------------ fleet_flavor */

/* PUT /v1/flavors/{name} creates (201), or overrides a built-in flavor (200). */
static bool
flavor_create(const struct tf_res *r, json_t *planned, json_t *config, json_t **api,
    struct tf_diags *d)
{
	json_t *body = tf_body(r->attrs, planned);
	char *path = item_path(r, planned);
	int st;
	bool ok;

	(void)config;
	ok = path && tf_api("PUT", path, body, 201, 200, false, api, &st, d);
	json_decref(body);
	free(path);
	return ok;
}

const struct tf_ops tf_ops_flavor = {flavor_create, NULL, NULL, NULL, NULL};

/* ------------------------------------------------------------------ data sources */

static json_t *
regions_state(json_t *config)
{
	const char *prov = json_string_value(tf_get(config, "provider_type"));
	json_t *provs = tf_providers_list(), *regions, *x;
	size_t i;

	if (prov)
		regions = tf_regions_list(prov);
	else {
		regions = json_array();
		json_array_foreach(provs, i, x) {
			json_t *rs = tf_regions_list(json_string_value(x)), *y;
			size_t k;

			json_array_foreach(rs, k, y)
				json_array_append_new(regions, json_sprintf("%s/%s",
				    json_string_value(x), json_string_value(y)));
			json_decref(rs);
		}
	}
	return json_pack("{s:O, s:o, s:o}", "provider_type", tf_get(config, "provider_type"), "providers",
	    provs, "regions", regions ? regions : json_array());
}

bool
tf_data_read(const struct tf_res *r, json_t *config, json_t **state, struct tf_diags *d)
{
	json_t *api = NULL;
	char *path = NULL;
	int st;
	bool ok = false;

	*state = NULL;
	if (strcmp(r->type, "fleet_regions") == 0) {
		*state = regions_state(config);
		return true;
	}
	if (strcmp(r->type, "fleet_cloud") == 0)
		path = item_path(r, config);
	else {
		CURLU *u = curl_url();
		char *q = NULL;
		static const char *const filters[] = {"environment", "region", "provider_type", "flavor"};
		static const char *const qnames[] = {"environment", "region", "provider", "flavor"};

		curl_url_set(u, CURLUPART_URL, "http://x/v1/capacity", 0);
		for (size_t i = 0; i < 4; i++) {
			const char *v = json_string_value(tf_get(config, filters[i]));
			if (v && asprintf(&q, "%s=%s", qnames[i], v) >= 0) {
				curl_url_set(u, CURLUPART_QUERY, q, CURLU_APPENDQUERY | CURLU_URLENCODE);
				free(q);
			}
		}
		char *full = NULL;
		curl_url_get(u, CURLUPART_URL, &full, 0);
		path = full ? strdup(full + strlen("http://x")) : NULL;
		curl_free(full);
		curl_url_cleanup(u);
	}
	if (!path)
		return false;
	if (!tf_api("GET", path, NULL, 200, 0, false, &api, &st, d))
		goto cleanup;
	*state = tf_state_from_api(r->attrs, api);
	/* filters and the id are the configuration's own */
	for (const struct tf_attr *a = r->attrs; a->name; a++)
		if (a->flags & (F_REQ | F_OPT))
			json_object_set(*state, a->name, tf_get(config, a->name));
	ok = true;
cleanup:
	json_decref(api);
	free(path);
	return ok;
}
