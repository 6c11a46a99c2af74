/* rayauth: each job's Ray auth token, sealed at rest (see rayauth.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "core/crypto.h"
#include "core/jsonx.h"
#include "core/textbuf.h"
#include "providers/kuberay.h"
#include "queue/jobs/job.h"
#include "queue/jobs/rayauth.h"
#include "regions/cluster.h"

void
rayauth_free(char *token)
{
	if (token == NULL)
		return;
	memset(token, 0, strlen(token));
	free(token);
}

/* The additional data binding a sealed token to its job: a row copied onto another job
 * does not open. */
static void
aad(const char *job_id, char *buf, size_t n)
{
	snprintf(buf, n, "ray-auth:%s", job_id);
}

bool
rayauth_get(struct db *c, const char *job_id, char **token, struct err *e)
{
	static const char sql[] = "SELECT sealed FROM job_ray_auth WHERE job_id = $1::uuid";
	const char *p[1] = { job_id };
	PGresult *r = NULL;
	char ad[64];
	bool ok = false;

	*token = NULL;
	if (!db_uuid_ok(job_id))
		return err_set(e, 404, "queue.job_not_found", "job not found");
	if (!db_exec(c, sql, 1, p, &r, e))
		goto cleanup;
	if (PQntuples(r) == 0) {
		err_set(e, 404, "rayauth.not_yet", "the job has no ray cluster yet");
		goto cleanup;
	}
	aad(job_id, ad, sizeof(ad));
	*token = cluster_open(ad, PQgetvalue(r, 0, 0), e);
	ok = *token != NULL;
cleanup:
	PQclear(r);
	return ok;
}

struct ensure {
	const char	*job_id;
	char		*token;
};

static bool
ensure_tx(struct db *c, void *arg, struct err *e)
{
	static const char ins[] = "INSERT INTO job_ray_auth (job_id, sealed) VALUES"
	    " ($1::uuid, $2) ON CONFLICT (job_id) DO NOTHING";
	struct ensure *x = arg;
	uint8_t raw[32];
	char ad[64], *fresh = NULL, *sealed = NULL;
	const char *p[2];
	bool ok = false;

	rayauth_free(x->token);
	x->token = NULL;
	if (rayauth_get(c, x->job_id, &x->token, e))
		return true;
	if (e->status != 404 || strcmp(e->code, "rayauth.not_yet") != 0)
		return false;
	err_clear(e);
	if (!crypto_random(raw, sizeof(raw)))
		return err_set(e, 500, "rayauth.random", "no randomness for the token");
	fresh = crypto_b64url_encode(raw, sizeof(raw));
	memset(raw, 0, sizeof(raw));
	aad(x->job_id, ad, sizeof(ad));
	if (fresh == NULL || (sealed = cluster_seal(ad, fresh, e)) == NULL)
		goto cleanup;
	p[0] = x->job_id;
	p[1] = sealed;
	/* a concurrent first dispatch may win: read back whichever row stands */
	ok = db_exec(c, ins, 2, p, NULL, e) && rayauth_get(c, x->job_id, &x->token, e);
cleanup:
	rayauth_free(fresh);
	free(sealed);
	return ok;
}

bool
rayauth_ensure(const char *job_id, char **token, struct err *e)
{
	struct ensure x = { job_id, NULL };

	*token = NULL;
	if (!db_tx(ensure_tx, &x, e)) {
		rayauth_free(x.token);
		return false;
	}
	*token = x.token;
	return true;
}

/* ---- the tokens of a dispatch batch in one transaction */

struct ensure_many {
	const char *const	*ids;
	size_t			 n;
	char			**tokens;
};

/* A text[] literal of the ids whose token is still missing ("{}" when none): ids come
 * from the database (canonical uuids) and sealed values are base64, so neither needs
 * quoting; *missing counts them. */
static char *
missing_ids(const struct ensure_many *x, size_t *missing)
{
	char *buf = NULL;
	size_t len = 0, cap = 0;

	*missing = 0;
	textbuf_append(&buf, &len, &cap, "{", 1);
	for (size_t i = 0; i < x->n; i++)
		if (x->tokens[i] == NULL)
			textbuf_appendf(&buf, &len, &cap, "%s%s", (*missing)++ ? "," : "",
			    x->ids[i]);
	textbuf_append(&buf, &len, &cap, "}", 1);
	return buf;
}

/* Opens the stored tokens of the ids in arr into x->tokens. */
static bool
read_many(struct db *c, struct ensure_many *x, const char *arr, struct err *e)
{
	static const char sql[] = "SELECT job_id::text, sealed FROM job_ray_auth"
	    " WHERE job_id = ANY($1::uuid[])";
	const char *p[1] = { arr };
	PGresult *r = NULL;
	bool ok = false;

	if (!db_exec(c, sql, 1, p, &r, e))
		return false;
	for (int row = 0; row < PQntuples(r); row++)
		for (size_t i = 0; i < x->n; i++) {
			char ad[64];

			if (x->tokens[i] != NULL ||
			    strcasecmp(x->ids[i], PQgetvalue(r, row, 0)) != 0)
				continue;
			aad(x->ids[i], ad, sizeof(ad));
			if ((x->tokens[i] = cluster_open(ad, PQgetvalue(r, row, 1), e)) == NULL)
				goto cleanup;
		}
	ok = true;
cleanup:
	PQclear(r);
	return ok;
}

static bool
ensure_many_tx(struct db *c, void *arg, struct err *e)
{
	static const char ins[] = "INSERT INTO job_ray_auth (job_id, sealed)"
	    " SELECT * FROM unnest($1::uuid[], $2::text[]) ON CONFLICT (job_id) DO NOTHING";
	struct ensure_many *x = arg;
	char *arr = NULL, *sealed = NULL;
	size_t missing = 0, len = 0, cap = 0, k = 0;
	const char *p[2];
	bool ok = false;

	for (size_t i = 0; i < x->n; i++) {	/* a retried transaction starts over */
		rayauth_free(x->tokens[i]);
		x->tokens[i] = NULL;
	}
	arr = missing_ids(x, &missing);
	if (!read_many(c, x, arr, e))
		goto cleanup;
	free(arr);
	arr = missing_ids(x, &missing);
	if (missing == 0) {
		ok = true;
		goto cleanup;
	}
	textbuf_append(&sealed, &len, &cap, "{", 1);
	for (size_t i = 0; i < x->n; i++) {
		uint8_t raw[32];
		char ad[64], *fresh, *s;

		if (x->tokens[i] != NULL)
			continue;
		if (!crypto_random(raw, sizeof(raw))) {
			err_set(e, 500, "rayauth.random", "no randomness for the token");
			goto cleanup;
		}
		fresh = crypto_b64url_encode(raw, sizeof(raw));
		memset(raw, 0, sizeof(raw));
		aad(x->ids[i], ad, sizeof(ad));
		s = fresh != NULL ? cluster_seal(ad, fresh, e) : NULL;
		rayauth_free(fresh);
		if (s == NULL) {
			if (e->status == 0)
				err_set(e, 500, "rayauth.seal", "cannot seal the token");
			goto cleanup;
		}
		textbuf_appendf(&sealed, &len, &cap, "%s%s", k++ ? "," : "", s);
		free(s);
	}
	textbuf_append(&sealed, &len, &cap, "}", 1);
	p[0] = arr;
	p[1] = sealed;
	/* a concurrent first dispatch may win a row: read back whichever rows stand */
	if (!db_exec(c, ins, 2, p, NULL, e) || !read_many(c, x, arr, e))
		goto cleanup;
	for (size_t i = 0; i < x->n; i++)
		if (x->tokens[i] == NULL) {
			err_set(e, 500, "rayauth.missing", "a job's token was not stored");
			goto cleanup;
		}
	ok = true;
cleanup:
	free(arr);
	free(sealed);
	return ok;
}

bool
rayauth_ensure_many(const char *const *ids, size_t n, char **tokens, struct err *e)
{
	struct ensure_many x = { ids, n, tokens };

	for (size_t i = 0; i < n; i++)
		tokens[i] = NULL;
	for (size_t i = 0; i < n; i++)
		if (!db_uuid_ok(ids[i]))
			return err_set(e, 404, "queue.job_not_found", "job not found");
	if (n == 0)
		return true;
	if (db_tx(ensure_many_tx, &x, e))
		return true;
	for (size_t i = 0; i < n; i++) {
		rayauth_free(tokens[i]);
		tokens[i] = NULL;
	}
	return false;
}

/* The RayCluster spec inside a manifest of any kind. */
static json_t *
cluster_spec(json_t *m)
{
	const char *kind = json_string_value(json_object_get(m, "kind"));
	json_t *spec = json_object_get(m, "spec");

	if (kind == NULL)
		return NULL;
	if (strcmp(kind, "RayJob") == 0)
		return json_object_get(spec, "rayClusterSpec");
	if (strcmp(kind, "RayService") == 0)
		return json_object_get(spec, "rayClusterConfig");
	if (strcmp(kind, "RayCronJob") == 0)
		return json_object_get(json_object_get(spec, "jobTemplate"), "rayClusterSpec");
	return spec;
}

bool
rayauth_dashboard(struct db *c, json_t *job, json_t **out, struct err *e)
{
	const char *id = json_string_value(json_object_get(job, "id"));
	const char *state = json_string_value(json_object_get(job, "state"));
	json_t *m = NULL, *cs, *ao, *ing, *o;
	char *token = NULL, url[512];
	const char *secret;
	bool ok = false;

	if (id == NULL || state == NULL || (strcmp(state, "dispatched") != 0 &&
	    strcmp(state, "running") != 0))
		return err_set(e, 409, "dashboard.no_cluster", "the job has no ray cluster now "
		    "(state %.16s)", state ? state : "unknown");
	if (!job_manifest(c, id, &m, e)) {
		if (e->status == 404)
			err_set(e, 409, "dashboard.no_cluster", "the job has no ray cluster yet");
		return false;
	}
	cs = cluster_spec(m);
	ao = json_object_get(cs, "authOptions");
	secret = json_string_value(json_object_get(ao, "secretName"));
	if (secret != NULL && !rayauth_get(c, id, &token, e)) {
		if (e->status == 404)
			err_set(e, 409, "dashboard.no_cluster", "the job's token is not made yet");
		goto cleanup;
	}
	o = json_pack("{s:s, s:s, s:s?, s:s?, s:s?, s:s?, s:s?}", "job_id", id, "auth",
	    token != NULL ? "token" : "none", "token", token,
	    "namespace", jsonx_meta_str(m, "namespace"),
	    "kind", json_string_value(json_object_get(m, "kind")),
	    "object", jsonx_meta_str(m, "name"), "secret_name", secret);
	json_object_set_new(o, "secret_key", secret ? json_string(KUBERAY_AUTH_KEY) :
	    json_null());
	json_object_set_new(o, "url", kuberay_dashboard_url(m, url, sizeof(url)) ?
	    json_string(url) : json_null());
	ing = json_object_get(json_object_get(cs, "headGroupSpec"), "ingressOptions");
	if (json_is_true(json_object_get(json_object_get(cs, "headGroupSpec"), "enableIngress")) &&
	    json_string_value(json_object_get(ing, "host")) != NULL) {
		snprintf(url, sizeof(url), "%s://%s%s", json_array_size(json_object_get(ing, "tls")) >
		    0 ? "https" : "http", json_string_value(json_object_get(ing, "host")),
		    json_string_value(json_object_get(ing, "path")) ? json_string_value(
		    json_object_get(ing, "path")) : "/");
		json_object_set_new(o, "ingress_url", json_string(url));
	} else {
		json_object_set_new(o, "ingress_url", json_null());
	}
	*out = o;
	ok = true;
cleanup:
	rayauth_free(token);
	json_decref(m);
	return ok;
}
