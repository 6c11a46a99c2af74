/* cloudsim kplain: the plain Kubernetes objects fleetd keeps next to a Ray object —
 * ConfigMaps and ServiceAccounts (core v1), Roles and RoleBindings (rbac v1), Kueue
 * LocalQueues, ClusterQueues and WorkloadPriorityClasses, PodTemplates and
 * ProvisioningRequests (autoscaling.x-k8s.io/v1, GKE queued provisioning), and the Services the simulated
 * KubeRay operator keeps for a RayService (cs_plain_put/cs_plain_del): get, list, create, server-side
 * apply (the applier's keys merged over the object: keys written by another manager, such as
 * the acknowledgement a job patches into its signal ConfigMap, are kept), JSON merge patch
 * and delete.  One store per member cluster, keyed "plural/namespace/name". */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cloudsim/cs.h"
#include "core/jsonx.h"

static const struct {
	const char	*group;		/* "" = core */
	const char	*version;
	const char	*plural, *kind;
	bool		 namespaced;
} kinds[] = {
	{ "", "v1", "configmaps", "ConfigMap", true },
	{ "", "v1", "serviceaccounts", "ServiceAccount", true },
	{ "", "v1", "services", "Service", true },
	{ "", "v1", "secrets", "Secret", true },
	{ "networking.k8s.io", "v1", "networkpolicies", "NetworkPolicy", true },
	/* issue 27: GKE flex-start with queued provisioning (the pods' PodTemplates and the
	 * ProvisioningRequest naming them) */
	{ "", "v1", "podtemplates", "PodTemplate", true },
	{ "autoscaling.x-k8s.io", "v1", "provisioningrequests", "ProvisioningRequest", true },
	{ "rbac.authorization.k8s.io", "v1", "roles", "Role", true },
	{ "rbac.authorization.k8s.io", "v1", "rolebindings", "RoleBinding", true },
	/* issue 26: GKE dynamic slicing's Slice (tpuslice.c), where the slice controller runs */
	{ "accelerator.gke.io", "v1beta1", "slices", "Slice", false },
	{ "kueue.x-k8s.io", "v1beta1", "localqueues", "LocalQueue", true },
	{ "kueue.x-k8s.io", "v1beta1", "clusterqueues", "ClusterQueue", false },
	{ "kueue.x-k8s.io", "v1beta1", "workloadpriorityclasses", "WorkloadPriorityClass", false },
};

#define NKINDS	(sizeof(kinds) / sizeof(kinds[0]))

static void
key_of(int k, const char *ns, const char *name, char *out, size_t n)
{
	/* a key longer than out is cut (names are DNS-1123, far shorter) */
	if (snprintf(out, n, "%s/%s/%s", kinds[k].plural, kinds[k].namespaced ? ns : "",
	    name) >= (int)n)
		out[n - 1] = '\0';
}

/* The resource as an API server names it in its messages: "podtemplates",
 * "provisioningrequests.autoscaling.x-k8s.io" (k8s.io/apimachinery errors.NewNotFound with
 * the group-qualified resource). */
static const char *
qualified(int k, char *out, size_t n)
{
	snprintf(out, n, "%s%s%s", kinds[k].plural, kinds[k].group[0] ? "." : "",
	    kinds[k].group);
	return out;
}

/* A Kubernetes Status naming the object (404 NotFound, 409 AlreadyExists). */
static void
status_of(struct cs_req *rq, int k, int code, const char *reason, const char *name)
{
	char q[160], msg[512];

	snprintf(msg, sizeof(msg), "%s \"%s\" %s", qualified(k, q, sizeof(q)), name,
	    code == 404 ? "not found" : "already exists");
	cs_kube_status(rq, code, reason, msg, name, kinds[k].group, kinds[k].plural, NULL);
}

/* A 422 Invalid Status with causes ([{field, reason, message}]; stolen), its message as
 * the API server joins them: KIND[.GROUP] "name" is invalid: FIELD: MESSAGE, or [..., ...]
 * for more than one. */
static void
invalid(struct cs_req *rq, int k, const char *name, json_t *causes)
{
	char msg[1024];
	size_t off, i;
	json_t *c;

	off = (size_t)snprintf(msg, sizeof(msg), "%s%s%s \"%s\" is invalid: %s", kinds[k].kind,
	    kinds[k].group[0] ? "." : "", kinds[k].group, name,
	    json_array_size(causes) > 1 ? "[" : "");
	json_array_foreach(causes, i, c)
		if (off < sizeof(msg))
			off += (size_t)snprintf(msg + off, sizeof(msg) - off, "%s%s: %s",
			    i ? ", " : "", json_string_value(json_object_get(c, "field")),
			    json_string_value(json_object_get(c, "message")));
	if (json_array_size(causes) > 1 && off < sizeof(msg))
		snprintf(msg + off, sizeof(msg) - off, "]");
	cs_kube_status(rq, 422, "Invalid", msg, name, kinds[k].group, kinds[k].kind, causes);
}

static void
cause(json_t *causes, const char *field, const char *reason, const char *message)
{
	json_array_append_new(causes, json_pack("{s:s, s:s, s:s}", "field", field, "reason",
	    reason, "message", message));
}

/* What the ProvisioningRequest CRD's schema requires of a new object (the cluster
 * autoscaler's autoscaling.x-k8s.io_provisioningrequests.yaml: spec with podSets, 1 to 32
 * of {count >= 1, podTemplateRef.name}, and provisioningClassName):
 * https://github.com/kubernetes/autoscaler/blob/master/cluster-autoscaler/apis/config/crd/autoscaling.x-k8s.io_provisioningrequests.yaml
 * The causes found (new array; empty when it passes); other kinds pass. */
static json_t *
schema_causes(int k, json_t *o)
{
	json_t *causes = json_array(), *spec = json_object_get(o, "spec"), *sets, *ps;
	char f[96];
	size_t i;

	if (strcmp(kinds[k].plural, "provisioningrequests") != 0)
		return causes;
	if (!json_is_object(spec)) {
		cause(causes, "spec", "FieldValueRequired", "Required value");
		return causes;
	}
	sets = json_object_get(spec, "podSets");
	if (sets == NULL)
		cause(causes, "spec.podSets", "FieldValueRequired", "Required value");
	else if (!json_is_array(sets))
		cause(causes, "spec.podSets", "FieldValueTypeInvalid",
		    "Invalid value: \"string\": spec.podSets in body must be of type array");
	else if (json_array_size(sets) < 1 || json_array_size(sets) > 32)
		cause(causes, "spec.podSets", json_array_size(sets) < 1 ? "FieldValueInvalid" :
		    "FieldValueTooMany", json_array_size(sets) < 1 ?
		    "Invalid value: 0: spec.podSets in body should have at least 1 items" :
		    "Too many: must have at most 32 items");
	json_array_foreach(json_is_array(sets) ? sets : NULL, i, ps) {
		json_t *cnt = json_object_get(ps, "count");

		snprintf(f, sizeof(f), "spec.podSets[%zu].count", i);
		if (cnt == NULL)
			cause(causes, f, "FieldValueRequired", "Required value");
		else if (!json_is_integer(cnt) || json_integer_value(cnt) < 1)
			cause(causes, f, "FieldValueInvalid", "Invalid value: must be an integer of "
			    "at least 1");
		snprintf(f, sizeof(f), "spec.podSets[%zu].podTemplateRef.name", i);
		if (!json_is_string(json_object_get(json_object_get(ps, "podTemplateRef"), "name")))
			cause(causes, f, "FieldValueRequired", "Required value");
	}
	if (!json_is_string(json_object_get(spec, "provisioningClassName")))
		cause(causes, "spec.provisioningClassName", "FieldValueRequired", "Required value");
	return causes;
}

/* The ProvisioningRequest CRD's transition rules: spec.provisioningClassName, podSets and
 * parameters each carry x-kubernetes-validations "self == oldSelf" (Value is immutable),
 * judged when the old and the new object both have the field; the causes (new array). */
static json_t *
immutable_causes(int k, json_t *old, json_t *next)
{
	static const struct { const char *field, *type; } rules[] = {
		{ "provisioningClassName", "string" }, { "podSets", "array" },
		{ "parameters", "object" },
	};
	json_t *causes = json_array(), *o = json_object_get(old, "spec"),
	    *n = json_object_get(next, "spec");
	char f[64], m[96];

	if (strcmp(kinds[k].plural, "provisioningrequests") != 0)
		return causes;
	for (size_t i = 0; i < sizeof(rules) / sizeof(rules[0]); i++) {
		json_t *a = json_object_get(o, rules[i].field), *b = json_object_get(n, rules[i].field);

		if (a == NULL || b == NULL || json_equal(a, b))
			continue;
		snprintf(f, sizeof(f), "spec.%s", rules[i].field);
		snprintf(m, sizeof(m), "Invalid value: \"%s\": Value is immutable", rules[i].type);
		cause(causes, f, "FieldValueInvalid", m);
	}
	return causes;
}

/* Whether the new object o passes its schema; else the 422 is answered. */
static bool
schema_ok(struct cs_req *rq, int k, const char *name, json_t *o)
{
	json_t *causes = schema_causes(k, o);

	if (json_array_size(causes) == 0) {
		json_decref(causes);
		return true;
	}
	invalid(rq, k, name, causes);
	return false;
}

json_t *
cs_plain_get(struct cs_cluster *cl, const char *plural, const char *ns, const char *name)
{
	char key[512];

	for (size_t k = 0; k < NKINDS; k++)
		if (strcmp(kinds[k].plural, plural) == 0) {
			key_of((int)k, ns ? ns : "", name, key, sizeof(key));
			return cl->plain ? json_object_get(cl->plain, key) : NULL;
		}
	return NULL;
}

static void
merge(json_t *dst, json_t *src, bool nulls_delete)
{
	const char *k;
	json_t *v, *d;

	json_object_foreach(src, k, v) {
		d = json_object_get(dst, k);
		if (json_is_null(v) && nulls_delete)
			json_object_del(dst, k);
		else if (json_is_object(v) && json_is_object(d))
			merge(d, v, nulls_delete);
		else
			json_object_set(dst, k, v);
	}
}

static json_t *
body_of(struct cs_req *rq)
{
	json_t *b = rq->body && rq->body_len ? json_loadb(rq->body, rq->body_len,
	    JSON_REJECT_DUPLICATES, NULL) : NULL;

	if (!json_is_object(b)) {
		json_decref(b);
		cs_reply_error(rq, 400, "BadRequest", "the body of the request is not a JSON "
		    "object");
		return NULL;
	}
	return b;
}

static void
stamp(struct cs *cs, struct cs_cluster *cl, json_t *o, int k, const char *ns,
    const char *name, bool fresh)
{
	json_t *md = json_object_get(o, "metadata");
	char ts[32], rv[24], uid[40];

	if (!json_is_object(md)) {
		md = json_object();
		json_object_set_new(o, "metadata", md);
	}
	json_object_set_new(o, "apiVersion", kinds[k].group[0] ? json_sprintf("%s/%s",
	    kinds[k].group, kinds[k].version) : json_string("v1"));
	json_object_set_new(o, "kind", json_string(kinds[k].kind));
	json_object_set_new(md, "name", json_string(name));
	if (kinds[k].namespaced)
		json_object_set_new(md, "namespace", json_string(ns));
	if (fresh) {
		cs_uuid(uid);
		cs_rfc3339(cs_now(cs), ts);
		json_object_set_new(md, "uid", json_string(uid));
		json_object_set_new(md, "creationTimestamp", json_string(ts));
	}
	snprintf(rv, sizeof(rv), "%lld", ++cl->rv);
	json_object_set_new(md, "resourceVersion", json_string(rv));
}

/* What the simulated operator keeps (a RayService's serve Service): stored under its key,
 * stamped like an object a client created; a no-op when it is there already. */
void
cs_plain_put(struct cs *cs, struct cs_cluster *cl, const char *plural, const char *ns,
    const char *name, json_t *obj)
{
	char key[512];

	for (size_t k = 0; k < NKINDS; k++) {
		if (strcmp(kinds[k].plural, plural) != 0)
			continue;
		key_of((int)k, ns ? ns : "", name, key, sizeof(key));
		if (cl->plain == NULL)
			cl->plain = json_object();
		if (json_object_get(cl->plain, key) != NULL)
			break;
		stamp(cs, cl, obj, (int)k, ns, name, true);
		json_object_set(cl->plain, key, obj);
		break;
	}
	json_decref(obj);
}

void
cs_plain_del(struct cs_cluster *cl, const char *plural, const char *ns, const char *name)
{
	char key[512];

	for (size_t k = 0; k < NKINDS; k++)
		if (strcmp(kinds[k].plural, plural) == 0 && cl->plain != NULL) {
			key_of((int)k, ns ? ns : "", name, key, sizeof(key));
			if (json_object_del(cl->plain, key) == 0)
				cl->rv++;
		}
}

static void
one(struct cs *cs, struct cs_cluster *cl, struct cs_req *rq, int k, const char *ns,
    const char *name)
{
	const char *ct = cs_header(rq, "Content-Type");
	char key[512];
	json_t *cur, *b, *next, *causes;

	key_of(k, ns, name, key, sizeof(key));
	if (cl->plain == NULL)
		cl->plain = json_object();
	cur = json_object_get(cl->plain, key);
	if (strcmp(rq->method, "GET") == 0) {
		if (cur == NULL) {
			status_of(rq, k, 404, "NotFound", name);
		} else {	/* a Table when kubectl asks for one */
			json_t *copy = json_deep_copy(cur);

			cs_reply_object(cs, rq, kinds[k].kind, copy);
			json_decref(copy);
		}
	} else if (strcmp(rq->method, "DELETE") == 0) {
		if (cur == NULL) {
			status_of(rq, k, 404, "NotFound", name);
			return;
		}
		cs_reply_json(rq, 200, json_deep_copy(cur));
		json_object_del(cl->plain, key);
		cl->rv++;
	} else if (strcmp(rq->method, "PATCH") == 0) {
		bool apply = ct != NULL && strstr(ct, "apply-patch") != NULL;

		if ((b = body_of(rq)) == NULL)
			return;
		if (cur == NULL && !apply) {
			json_decref(b);
			status_of(rq, k, 404, "NotFound", name);
			return;
		}
		if (cur == NULL) {
			if (!schema_ok(rq, k, name, b)) {
				json_decref(b);
				return;
			}
			stamp(cs, cl, b, k, ns, name, true);
			json_object_set(cl->plain, key, b);
			cs_reply_json(rq, 201, b);
			return;
		}
		/* apply: the applier's fields over the object; merge patch: null deletes */
		json_object_del(json_object_get(b, "metadata"), "uid");
		json_object_del(json_object_get(b, "metadata"), "resourceVersion");
		next = json_deep_copy(cur);
		merge(next, b, !apply);
		json_decref(b);
		causes = immutable_causes(k, cur, next);
		if (json_array_size(causes) > 0) {
			json_decref(next);
			invalid(rq, k, name, causes);
			return;
		}
		json_decref(causes);
		stamp(cs, cl, next, k, ns, name, false);
		json_object_set_new(cl->plain, key, next);
		cs_reply_json(rq, 200, json_deep_copy(next));
	} else {
		cs_reply_error(rq, 405, "MethodNotAllowed", "the server does not allow this method "
		    "on the requested resource");
	}
}

static void
collection(struct cs *cs, struct cs_cluster *cl, struct cs_req *rq, int k, const char *ns)
{
	json_t *items = json_array(), *v, *b;
	const char *key, *name, *dry;
	char prefix[256], nm[256];

	snprintf(prefix, sizeof(prefix), "%s/%s/", kinds[k].plural, kinds[k].namespaced && ns ?
	    ns : "");
	if (strcmp(rq->method, "POST") == 0) {
		json_decref(items);
		if ((b = body_of(rq)) == NULL)
			return;
		name = jsonx_meta_str(b, "name");
		if (name == NULL || !cs_dns1123_label(name, 253)) {
			json_t *causes = json_array();

			cause(causes, "metadata.name", "FieldValueInvalid", "Invalid value");
			snprintf(nm, sizeof(nm), "%s", name ? name : "");
			json_decref(b);
			invalid(rq, k, nm, causes);
			return;
		}
		/* a copy: stamp replaces metadata.name, which name points into */
		snprintf(nm, sizeof(nm), "%s", name);
		if (cs_plain_get(cl, kinds[k].plural, ns, nm) != NULL) {
			json_decref(b);
			status_of(rq, k, 409, "AlreadyExists", nm);
			return;
		}
		if (!schema_ok(rq, k, nm, b)) {
			json_decref(b);
			return;
		}
		if (cl->plain == NULL)
			cl->plain = json_object();
		dry = cs_query(rq, "dryRun");
		stamp(cs, cl, b, k, ns, nm, true);
		if (dry == NULL || strcmp(dry, "All") != 0) {	/* ?dryRun=All stores nothing */
			key_of(k, ns ? ns : "", nm, prefix, sizeof(prefix));
			json_object_set(cl->plain, prefix, b);
		}
		cs_reply_json(rq, 201, b);
		return;
	}
	if (strcmp(rq->method, "GET") != 0) {
		json_decref(items);
		cs_reply_error(rq, 405, "MethodNotAllowed", "the server does not allow this method "
		    "on the requested resource");
		return;
	}
	json_object_foreach(cl->plain, key, v)
		if (strncmp(key, prefix, strlen(prefix)) == 0 ||
		    (ns == NULL && strncmp(key, kinds[k].plural, strlen(kinds[k].plural)) == 0 &&
		    key[strlen(kinds[k].plural)] == '/'))
			json_array_append(items, v);
	{
		char list[64], api[64];

		snprintf(list, sizeof(list), "%sList", kinds[k].kind);
		snprintf(api, sizeof(api), "%s%s%s", kinds[k].group, kinds[k].group[0] ? "/" : "",
		    kinds[k].version);
		cs_kube_list(cs, cl, rq, list, api, items);
	}
}

bool
cs_kplain_handle(struct cs *cs, struct cs_cluster *cl, struct cs_req *rq)
{
	/* seg: k8s C api v1 [namespaces NS] PLURAL [NAME]
	 *      k8s C apis GROUP VERSION [namespaces NS] PLURAL [NAME] */
	size_t base, rest;
	const char *ns = NULL;

	if (rq->nseg >= 5 && strcmp(rq->seg[2], "api") == 0 && strcmp(rq->seg[3], "v1") == 0)
		base = 4;
	else if (rq->nseg >= 6 && strcmp(rq->seg[2], "apis") == 0)
		base = 5;
	else
		return false;
	rest = rq->nseg - base;
	if (rest >= 3 && strcmp(rq->seg[base], "namespaces") == 0) {
		ns = rq->seg[base + 1];
		base += 2;
		rest -= 2;
	}
	if (rest < 1 || rest > 2)
		return false;
	for (size_t k = 0; k < NKINDS; k++) {
		bool core = kinds[k].group[0] == '\0';

		if (strcmp(kinds[k].plural, rq->seg[base]) != 0 ||
		    (core ? strcmp(rq->seg[2], "api") != 0 : (strcmp(rq->seg[3],
		    kinds[k].group) != 0 || strcmp(rq->seg[4], kinds[k].version) != 0)))
			continue;
		if (kinds[k].namespaced && ns == NULL && rest == 2)
			return false;
		if ((strcmp(kinds[k].group, "kueue.x-k8s.io") == 0 && !cs_kueue_on(cl)) ||
		    (strcmp(kinds[k].group, "accelerator.gke.io") == 0 && !cs_slices_on(cl))) {
			cs_reply_no_resource(rq);	/* no Kueue (or Slice) CRDs here */
			return true;
		}
		if (ns != NULL && !cs_ns_exists(cl, ns)) {
			cs_reply_error(rq, 404, "NotFound", "namespaces \"%s\" not found", ns);
			return true;
		}
		if (rest == 2)
			one(cs, cl, rq, (int)k, ns ? ns : "", rq->seg[base + 1]);
		else
			collection(cs, cl, rq, (int)k, ns);
		return true;
	}
	return false;
}
