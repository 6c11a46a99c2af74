/* cloudsim kauthz: authorization.k8s.io/v1 SelfSubjectAccessReview and
 * SelfSubjectRulesReview, what `kubectl auth can-i [--list]` asks.  cloudsim models one
 * credential per member cluster, its bearer token, bound to cluster-admin (the group
 * system:masters): every request it makes is allowed, and the answers say so in RBAC's
 * words.  A request without that token never gets here (401 in kube.c). */
#include <stdio.h>
#include <string.h>

#include "cloudsim/cs.h"

#define ADMIN_REASON	"RBAC: allowed by ClusterRoleBinding \"cluster-admin\" of ClusterRole " \
			"\"cluster-admin\" to Group \"system:masters\""

static json_t *
review_body(struct cs_req *rq, const char *kind)
{
	json_t *b = json_loadb(rq->body ? rq->body : "", rq->body_len, 0, NULL);

	if (!json_is_object(b) || !json_is_object(json_object_get(b, "spec"))) {
		json_decref(b);
		cs_reply_error(rq, 400, "BadRequest", "the body of %s must be an object with a "
		    "spec", kind);
		return NULL;
	}
	return b;
}

static void
access_review(struct cs_req *rq)
{
	json_t *b = review_body(rq, "SelfSubjectAccessReview"), *spec, *ra, *nra;
	const char *verb;

	if (b == NULL)
		return;
	spec = json_object_get(b, "spec");
	ra = json_object_get(spec, "resourceAttributes");
	nra = json_object_get(spec, "nonResourceAttributes");
	if (json_is_object(ra) == json_is_object(nra)) {
		cs_reply_error(rq, 422, "Invalid", "SelfSubjectAccessReview.authorization.k8s.io "
		    "\"\" is invalid: spec.resourceAttributes: Invalid value: exactly one of "
		    "nonResourceAttributes or resourceAttributes must be specified");
		json_decref(b);
		return;
	}
	verb = json_string_value(json_object_get(json_is_object(ra) ? ra : nra, "verb"));
	if (verb == NULL || *verb == '\0') {
		cs_reply_error(rq, 422, "Invalid", "SelfSubjectAccessReview.authorization.k8s.io "
		    "\"\" is invalid: spec.%s.verb: Required value", json_is_object(ra) ?
		    "resourceAttributes" : "nonResourceAttributes");
		json_decref(b);
		return;
	}
	json_object_set_new(b, "apiVersion", json_string("authorization.k8s.io/v1"));
	json_object_set_new(b, "kind", json_string("SelfSubjectAccessReview"));
	if (!json_is_object(json_object_get(b, "metadata")))
		json_object_set_new(b, "metadata", json_object());
	json_object_set_new(b, "status", json_pack("{s:b, s:s}", "allowed", 1, "reason",
	    ADMIN_REASON));
	cs_reply_json(rq, 201, b);
}

static void
rules_review(struct cs_req *rq)
{
	json_t *b = review_body(rq, "SelfSubjectRulesReview");

	if (b == NULL)
		return;
	json_object_set_new(b, "apiVersion", json_string("authorization.k8s.io/v1"));
	json_object_set_new(b, "kind", json_string("SelfSubjectRulesReview"));
	if (!json_is_object(json_object_get(b, "metadata")))
		json_object_set_new(b, "metadata", json_object());
	json_object_set_new(b, "status", json_pack("{s:[{s:[s], s:[s], s:[s]}], "
	    "s:[{s:[s], s:[s]}], s:b}", "resourceRules", "verbs", "*", "apiGroups", "*",
	    "resources", "*", "nonResourceRules", "verbs", "*", "nonResourceURLs", "*",
	    "incomplete", 0));
	cs_reply_json(rq, 201, b);
}

bool
cs_kauthz_handle(struct cs_cluster *cl, struct cs_req *rq)
{
	(void)cl;
	/* seg: k8s C apis authorization.k8s.io v1 RESOURCE */
	if (rq->nseg != 6 || strcmp(rq->seg[2], "apis") != 0 ||
	    strcmp(rq->seg[3], "authorization.k8s.io") != 0 || strcmp(rq->seg[4], "v1") != 0)
		return false;
	if (strcmp(rq->seg[5], "selfsubjectaccessreviews") != 0 &&
	    strcmp(rq->seg[5], "selfsubjectrulesreviews") != 0)
		cs_reply_no_resource(rq);
	else if (strcmp(rq->method, "POST") != 0)
		cs_reply_error(rq, 405, "MethodNotAllowed", "the server does not allow this method "
		    "on the requested resource");
	else if (strcmp(rq->seg[5], "selfsubjectaccessreviews") == 0)
		access_review(rq);
	else
		rules_review(rq);
	return true;
}
