/* h_cloud: /v1/clouds — phase 1, reads, replace, delete; phase 2 and rotation. */
#include <string.h>

#include "api/handlers.h"
#include "iam/registry.h"
#include "iam/reverify.h"
#include "regions/cloud.h"

/* Reads a cloud visible to the caller; 404 otherwise (existence does not leak). */
static bool
visible_cloud(struct request *rq, struct db *c, const char *id, bool lock, json_t **out,
	      struct err *e)
{
	if (!cloud_get(c, id, lock, out, e))
		return false;
	if (!rq_env_visible(rq, json_string_value(json_object_get(*out, "environment")))) {
		json_decref(*out);
		*out = NULL;
		return err_set(e, 404, "cloud.not_found", "cloud not found");
	}
	return true;
}

HANDLER(h_cloud_create)
{
	json_t *obj = NULL;
	const char *env = json_string_value(json_object_get(rq->json, "environment"));

	if (env != NULL && !rq_env_visible(rq, env))
		return err_field(e, 404, "env.not_found", "/environment",
		    "environment %.64s not found", env);
	if (!registry_cloud_create(rq->db, rq->json, &obj, e))
		return false;
	if (!audit_write(rq->db, &rq->actor, "cloud.create", "cloud",
	    json_string_value(json_object_get(obj, "id")), env, NULL, obj, e)) {
		json_decref(obj);
		return false;
	}
	rq_reply_object(rq, 201, obj, "/v1/clouds");
	return true;
}

HANDLER(h_cloud_list)
{
	const char *after;
	int limit;
	json_t *items = NULL;

	if (!rq_page(rq, &limit, &after, e) ||
	    !cloud_list(rq->db, limit + 1, after, rq_query(rq, "environment"),
	    rq_query(rq, "provider"), rq_query(rq, "region"), rq->envs, rq->nenvs, &items, e))
		return false;
	rq_reply(rq, 200, page_reply(rq, items, limit, "id"));
	return true;
}

HANDLER(h_cloud_get)
{
	json_t *obj = NULL;

	if (!visible_cloud(rq, rq->db, rq_param(rq, "id"), false, &obj, e))
		return false;
	rq_reply_object(rq, 200, obj, "/v1/clouds");
	return true;
}

HANDLER(h_cloud_replace)
{
	const char *id = rq_param(rq, "id");
	json_t *cur = NULL, *before = NULL, *obj = NULL;
	bool ok = false;

	if (!visible_cloud(rq, rq->db, id, true, &cur, e))
		return false;
	if (!rq_if_match(rq, json_integer_value(json_object_get(cur, "version")), e) ||
	    !registry_cloud_replace(rq->db, id, rq->json, &before, &obj, e))
		goto cleanup;
	if (!json_equal(before, obj) && !audit_write(rq->db, &rq->actor, "cloud.update",
	    "cloud", id, json_string_value(json_object_get(obj, "environment")), before, obj, e))
		goto cleanup;
	rq_reply_object(rq, 200, obj, "/v1/clouds");
	obj = NULL;
	ok = true;
cleanup:
	json_decref(cur);
	json_decref(before);
	json_decref(obj);
	return ok;
}

HANDLER(h_cloud_delete)
{
	const char *id = rq_param(rq, "id");
	json_t *before = NULL;
	bool ok = false;

	if (!visible_cloud(rq, rq->db, id, true, &before, e))
		return false;
	if (!rq_if_match(rq, json_integer_value(json_object_get(before, "version")), e) ||
	    !cloud_delete(rq->db, id, e) ||
	    !audit_write(rq->db, &rq->actor, "cloud.delete", "cloud", id,
	    json_string_value(json_object_get(before, "environment")), before, NULL, e))
		goto cleanup;
	rq->status = 204;
	ok = true;
cleanup:
	json_decref(before);
	return ok;
}

/* Step 1 of phase 2 / rotation: read the cloud and check the body in a short transaction. */
static bool
pair_prepare(struct db *c, void *arg, struct err *e)
{
	struct request *rq = arg;
	json_t *cloud = NULL;
	const char *cp, *cl;

	if (!visible_cloud(rq, c, rq_param(rq, "id"), false, &cloud, e))
		return false;
	rq_reply(rq, 0, cloud);	/* parked until the answer is built */
	if (!registry_pair_parse(cloud, rq->json, &cp, &cl, e))
		return false;
	return registry_pair_unused(c, rq_param(rq, "id"), cp, cl, e);
}

struct lock_arg {
	struct request	*rq;
	long		 version;
	bool		 rotate;
	json_t		*out;
};

static bool
pair_lock(struct db *c, void *arg, struct err *e)
{
	struct lock_arg *a = arg;
	const char *cp = json_string_value(json_object_get(a->rq->json, "control_plane_role"));
	const char *cl = json_string_value(json_object_get(a->rq->json, "cluster_role"));

	return registry_pair_lock(c, &a->rq->actor, rq_param(a->rq, "id"), a->version, cp, cl,
	    a->rotate, &a->out, e);
}

/* Phase 2 and rotation: check, verify with the provider outside any transaction, lock. */
static bool
pair_flow(struct request *rq, bool rotate, struct err *e)
{
	struct lock_arg la = { .rq = rq, .rotate = rotate };
	json_t *cloud, *checks = json_array();
	const char *state;
	bool ok = false;

	if (!db_tx(pair_prepare, rq, e))
		goto cleanup;
	cloud = rq->reply;
	state = json_string_value(json_object_get(cloud, "state"));
	if (!rotate && strcmp(state, "pending_iam") != 0) {
		err_set(e, 409, "iam.locked", "the cloud's iam pair is locked");
		err_detail(e, "Use POST /v1/clouds/{id}/iam/rotate (admin) to replace a locked pair.");
		goto cleanup;
	}
	if (rotate && strcmp(state, "pending_iam") == 0) {	/* nothing to rotate yet */
		err_set(e, 409, "iam.not_locked", "only a locked pair can be rotated; finish "
		    "phase 2 first");
		goto cleanup;
	}
	la.version = json_integer_value(json_object_get(cloud, "version"));
	if (!registry_pair_verify(cloud,
	    json_string_value(json_object_get(rq->json, "control_plane_role")),
	    json_string_value(json_object_get(rq->json, "cluster_role")), checks, e)) {
		if (e->status == 422) {
			json_t *errors = json_array(), *ck;
			size_t i;

			json_array_foreach(checks, i, ck)
				if (!json_is_true(json_object_get(ck, "ok")))
					json_array_append_new(errors, json_pack("{s:s, s:s, s:s}",
					    "pointer", json_string_value(json_object_get(ck, "pointer")) ?
					    json_string_value(json_object_get(ck, "pointer")) : "",
					    "check", json_string_value(json_object_get(ck, "check")),
					    "detail", json_string_value(json_object_get(ck, "message"))));
			rq_problem(rq, 422, "iam.verification_failed",
			    "the iam pair did not pass verification",
			    "The cloud stays pending_iam; fix each failed check and retry.", errors);
			ok = true;
		}
		goto cleanup;
	}
	if (!db_tx(pair_lock, &la, e))
		goto cleanup;
	rq_reply_object(rq, 200, la.out, "/v1/clouds");
	ok = true;
cleanup:
	json_decref(checks);
	return ok;
}

HANDLER(h_cloud_iam)
{
	return pair_flow(rq, false, e);
}

HANDLER(h_cloud_iam_rotate)
{
	return pair_flow(rq, true, e);
}

static bool
verify_visible(struct db *c, void *arg, struct err *e)
{
	struct request *rq = arg;
	json_t *cloud = NULL;
	bool ok = visible_cloud(rq, c, rq_param(rq, "id"), false, &cloud, e);

	json_decref(cloud);
	return ok;
}

/* POST /v1/clouds/{id}/iam/verify: the locked pair verified again now, with the negative
 * checks; the answer is the verdict, the cloud after it and every check. */
HANDLER(h_cloud_iam_verify)
{
	static const char *const results[] = { "passed", "failed", "unverified" };
	enum iam_verify_result res;
	json_t *cloud = NULL, *checks = NULL, *reply;
	struct err ve = { 0 };

	if (!db_tx(verify_visible, rq, e))
		return false;
	if (!iam_reverify(rq_param(rq, "id"), &rq->actor, &cloud, &checks, &res, &ve)) {
		json_decref(checks);
		*e = ve;
		return false;
	}
	reply = json_pack("{s:s, s:o, s:o}", "result", results[res], "cloud", cloud, "checks",
	    checks);
	if (res == IAM_VERIFY_UNVERIFIED)
		json_object_set_new(reply, "detail", json_string(ve.msg));
	rq_reply(rq, 200, reply);
	return true;
}
