/* h_cloud: /v1/clouds — phase 1, reads, replace, delete; phase 2 and rotation. */
#include <string.h>

#include "api/crud.h"
#include "api/handlers.h"
#include "iam/registry.h"
#include "iam/reverify.h"
#include "regions/cloud.h"

/* registry_cloud_replace in crud's shape (the row before is already held). */
static bool
replace(struct db *c, const char *id, json_t *body, json_t **out, struct err *e)
{
	json_t *before = NULL;
	bool ok = registry_cloud_replace(c, id, body, &before, out, e);

	json_decref(before);
	return ok;
}

static const struct crud clouds = {
	.type = "cloud", .code = "cloud.not_found", .noun = "cloud", .collection = "/v1/clouds",
	.scoped = true, .get = cloud_get, .create = registry_cloud_create, .replace = replace,
	.del = cloud_delete,
};

HANDLER(h_cloud_create)
{
	return crud_create(rq, &clouds, NULL, e);
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
	rq_reply(rq, 200, rq_page_reply(rq, items, limit, "id"));
	return true;
}

HANDLER(h_cloud_get)
{
	return crud_read(rq, &clouds, e);
}

HANDLER(h_cloud_replace)
{
	return crud_replace(rq, &clouds, e);
}

HANDLER(h_cloud_delete)
{
	return crud_delete(rq, &clouds, e);
}

/* Step 1 of phase 2 / rotation: read the cloud and check the body in a short transaction. */
static bool
pair_prepare(struct db *c, void *arg, struct err *e)
{
	struct request *rq = arg;
	json_t *cloud = NULL;
	const char *cp, *cl;

	if (!crud_get(rq, &clouds, c, rq_param(rq, "id"), false, &cloud, e))
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
	bool ok = crud_get(rq, &clouds, c, rq_param(rq, "id"), false, &cloud, e);

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
