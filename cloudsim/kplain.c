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
	json_t *cur, *b;

	key_of(k, ns, name, key, sizeof(key));
	if (cl->plain == NULL)
		cl->plain = json_object();
	cur = json_object_get(cl->plain, key);
	if (strcmp(rq->method, "GET") == 0) {
		if (cur == NULL)
			cs_reply_error(rq, 404, "NotFound", "%s \"%s\" not found", kinds[k].plural,
			    name);
		else
			cs_reply_json(rq, 200, json_deep_copy(cur));
	} else if (strcmp(rq->method, "DELETE") == 0) {
		if (cur == NULL) {
			cs_reply_error(rq, 404, "NotFound", "%s \"%s\" not found", kinds[k].plural,
			    name);
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
			cs_reply_error(rq, 404, "NotFound", "%s \"%s\" not found", kinds[k].plural,
			    name);
			return;
		}
		if (cur == NULL) {
			stamp(cs, cl, b, k, ns, name, true);
			json_object_set(cl->plain, key, b);
			cs_reply_json(rq, 201, b);
			return;
		}
		/* apply: the applier's fields over the object; merge patch: null deletes */
		json_object_del(json_object_get(b, "metadata"), "uid");
		json_object_del(json_object_get(b, "metadata"), "resourceVersion");
		merge(cur, b, !apply);
		json_decref(b);
		stamp(cs, cl, cur, k, ns, name, false);
		cs_reply_json(rq, 200, json_deep_copy(cur));
	} else {
		cs_reply_error(rq, 405, "MethodNotAllowed", "the server does not allow this method "
		    "on the requested resource");
	}
}

static void
collection(struct cs *cs, struct cs_cluster *cl, struct cs_req *rq, int k, const char *ns)
{
	json_t *items = json_array(), *v, *b;
	const char *key, *name;
	char prefix[256], nm[256];

	snprintf(prefix, sizeof(prefix), "%s/%s/", kinds[k].plural, kinds[k].namespaced && ns ?
	    ns : "");
	if (strcmp(rq->method, "POST") == 0) {
		json_decref(items);
		if ((b = body_of(rq)) == NULL)
			return;
		name = jsonx_meta_str(b, "name");
		if (name == NULL || !cs_dns1123_label(name, 253)) {
			json_decref(b);
			cs_reply_error(rq, 422, "Invalid", "%s \"%s\" is invalid: metadata.name: "
			    "Invalid value", kinds[k].kind, name ? name : "");
			return;
		}
		if (cs_plain_get(cl, kinds[k].plural, ns, name) != NULL) {
			json_decref(b);
			cs_reply_error(rq, 409, "AlreadyExists", "%s \"%s\" already exists",
			    kinds[k].plural, name);
			return;
		}
		if (cl->plain == NULL)
			cl->plain = json_object();
		/* a copy: stamp replaces metadata.name, which name points into */
		snprintf(nm, sizeof(nm), "%s", name);
		stamp(cs, cl, b, k, ns, nm, true);
		key_of(k, ns ? ns : "", nm, prefix, sizeof(prefix));
		json_object_set(cl->plain, prefix, b);
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
