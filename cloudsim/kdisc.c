/* cloudsim kdisc: what a Kubernetes client reads before it acts — /api, /api/v1, /apis,
 * /apis/ray.io/v1 discovery, /openapi/v3 (core kinds and the KubeRay CRD schemas, with the
 * PATCH parameters kubectl probes for fieldValidation and dryRun), and the CRD schema
 * check behind fieldValidation=Strict and server-side apply. */
#include <ctype.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cloudsim/cs.h"

/* The core resources this API server serves (i13: add a row for a new kind). */
static const struct core_res {
	const char *name, *kind, *shorts, *verbs;
	bool namespaced;
} core[] = {
	{ "namespaces", "Namespace", "ns", "create,get,list,patch,watch", false },
	{ "nodes", "Node", "no", "delete,get,list,patch,watch", false },
	{ "pods", "Pod", "po", "delete,get,list,watch", true },
	{ "events", "Event", "ev", "get,list,watch", true },
	{ "configmaps", "ConfigMap", "cm", "create,delete,get,list,patch", true },
	{ "serviceaccounts", "ServiceAccount", "sa", "create,delete,get,list,patch", true },
	{ "secrets", "Secret", "", "create,delete,get,list,patch", true },
	{ "podtemplates", "PodTemplate", "", "create,delete,get,list,patch", true },
};

/* The other API groups whose objects kplain.c stores (issue 13); kueue.x-k8s.io only on a
 * cluster that runs Kueue (its CRDs come with the installation). */
static const struct group_res {
	const char *group, *version, *name, *kind;
	bool namespaced, kueue;
	const char *verbs;		/* NULL: create,delete,get,list,patch */
	const char *shorts;		/* the CRD's shortNames, NULL: none */
} groups[] = {
	{ "rbac.authorization.k8s.io", "v1", "roles", "Role", true, false, NULL, NULL },
	/* issue 25: the attempt's NetworkPolicy (cloudsim enforces it: netpol.c) */
	{ "networking.k8s.io", "v1", "networkpolicies", "NetworkPolicy", true, false, NULL, NULL },
	{ "rbac.authorization.k8s.io", "v1", "rolebindings", "RoleBinding", true, false, NULL, NULL },
	/* issue 27: GKE's queued provisioning (the cluster autoscaler's CRD, which GKE serves;
	 * its names: cluster-autoscaler/apis/config/crd/autoscaling.x-k8s.io_provisioningrequests.yaml
	 * in https://github.com/kubernetes/autoscaler) */
	{ "autoscaling.x-k8s.io", "v1", "provisioningrequests", "ProvisioningRequest", true,
	  false, NULL, "provreq,provreqs" },
	/* issue 26: the slice controller's CRD (GKE dynamic slicing, tpuslice.c) */
	{ "accelerator.gke.io", "v1beta1", "slices", "Slice", false, false, NULL, NULL },
	{ "kueue.x-k8s.io", "v1beta1", "localqueues", "LocalQueue", true, true, NULL, NULL },
	{ "kueue.x-k8s.io", "v1beta1", "clusterqueues", "ClusterQueue", false, true, NULL, NULL },
	{ "kueue.x-k8s.io", "v1beta1", "workloadpriorityclasses", "WorkloadPriorityClass", false,
	  true, NULL, NULL },
	/* kauthz.c: what kubectl auth can-i asks */
	{ "authorization.k8s.io", "v1", "selfsubjectaccessreviews", "SelfSubjectAccessReview",
	  false, false, "create", NULL },
	{ "authorization.k8s.io", "v1", "selfsubjectrulesreviews", "SelfSubjectRulesReview",
	  false, false, "create", NULL },
};

#define NGROUPS	(sizeof(groups) / sizeof(groups[0]))

static bool
group_served(const struct cs_cluster *cl, const char *group)
{
	for (size_t i = 0; i < NGROUPS; i++)
		if (strcmp(groups[i].group, group) == 0)
			return strcmp(group, "accelerator.gke.io") == 0 ? cs_slices_on(cl) :
			    !groups[i].kueue || cs_kueue_on(cl);
	return false;
}

static const char *
group_version(const char *group)
{
	for (size_t i = 0; i < NGROUPS; i++)
		if (strcmp(groups[i].group, group) == 0)
			return groups[i].version;
	return NULL;
}

static json_t *
group_json(const char *group, const char *version)
{
	char gv[96];

	snprintf(gv, sizeof(gv), "%s/%s", group, version);
	return json_pack("{s:s, s:[{s:s, s:s}], s:{s:s, s:s}}", "name", group, "versions",
	    "groupVersion", gv, "version", version, "preferredVersion", "groupVersion", gv,
	    "version", version);
}

static json_t *
split(const char *csv)
{
	json_t *a = json_array();
	char *buf = strdup(csv), *p = buf, *t;

	while ((t = strsep(&p, ",")) != NULL)
		if (*t)
			json_array_append_new(a, json_string(t));
	free(buf);
	return a;
}

/* /apis/GROUP/VERSION: the group's resources */
static void
group_resources(struct cs_req *rq, const char *group, const char *version)
{
	json_t *res = json_array();
	char gv[96];

	for (size_t i = 0; i < NGROUPS; i++) {
		json_t *r;
		char sing[64];
		size_t n;

		if (strcmp(groups[i].group, group) != 0)
			continue;
		/* singularName: the lowercased kind, as API servers report it (a CRD's
		 * spec.names.singular) */
		for (n = 0; groups[i].kind[n] != '\0' && n + 1 < sizeof(sing); n++)
			sing[n] = (char)tolower((unsigned char)groups[i].kind[n]);
		sing[n] = '\0';
		r = json_pack("{s:s, s:s, s:b, s:s, s:o}", "name", groups[i].name, "singularName",
		    sing, "namespaced", groups[i].namespaced, "kind", groups[i].kind, "verbs",
		    split(groups[i].verbs ? groups[i].verbs : "create,delete,get,list,patch"));
		if (groups[i].shorts != NULL)
			json_object_set_new(r, "shortNames", split(groups[i].shorts));
		json_array_append_new(res, r);
	}
	snprintf(gv, sizeof(gv), "%s/%s", group, version);
	cs_reply_json(rq, 200, json_pack("{s:s, s:s, s:s, s:o}", "kind", "APIResourceList",
	    "apiVersion", "v1", "groupVersion", gv, "resources", res));
}

static const char *const ray_plurals[] = { "rayclusters", "rayjobs", "rayservices",
	"raycronjobs" };

static void
api_v1(struct cs_req *rq)
{
	json_t *res = json_array();
	size_t i;

	for (i = 0; i < sizeof(core) / sizeof(core[0]); i++)
		json_array_append_new(res, json_pack("{s:s, s:s, s:b, s:s, s:o, s:o}", "name",
		    core[i].name, "singularName", "", "namespaced", core[i].namespaced, "kind",
		    core[i].kind, "verbs", split(core[i].verbs), "shortNames",
		    split(core[i].shorts)));
	json_array_append_new(res, json_pack("{s:s, s:s, s:b, s:s, s:[s, s, s]}", "name",
	    "pods/status", "singularName", "", "namespaced", 1, "kind", "Pod", "verbs", "get",
	    "patch", "update"));
	json_array_append_new(res, json_pack("{s:s, s:s, s:b, s:s, s:[s, s, s]}", "name",
	    "nodes/status", "singularName", "", "namespaced", 0, "kind", "Node", "verbs", "get",
	    "patch", "update"));
	cs_reply_json(rq, 200, json_pack("{s:s, s:s, s:s, s:o}", "kind", "APIResourceList",
	    "apiVersion", "v1", "groupVersion", "v1", "resources", res));
}

static const char *
singular(const char *plural, char *out, size_t n)
{
	snprintf(out, n, "%.*s", (int)strlen(plural) - 1, plural);
	return out;
}

static void
ray_v1(struct cs_req *rq)
{
	json_t *res = json_array();
	char sing[32];
	size_t i;

	for (i = 0; i < 4; i++) {
		json_array_append_new(res, json_pack("{s:s, s:s, s:b, s:s, s:o, s:[s]}", "name",
		    ray_plurals[i], "singularName", singular(ray_plurals[i], sing, sizeof(sing)),
		    "namespaced", 1, "kind", cs_kind_of(ray_plurals[i]), "verbs",
		    split("create,delete,get,list,patch,update,watch"), "categories", "all"));
		json_array_append_new(res, json_pack("{s:o, s:s, s:b, s:s, s:[s, s, s]}", "name",
		    json_sprintf("%s/status", ray_plurals[i]), "singularName", "", "namespaced", 1,
		    "kind", cs_kind_of(ray_plurals[i]), "verbs", "get", "patch", "update"));
	}
	cs_reply_json(rq, 200, json_pack("{s:s, s:s, s:s, s:o}", "kind", "APIResourceList",
	    "apiVersion", "v1", "groupVersion", "ray.io/v1", "resources", res));
}

/* ---- OpenAPI v3 */

static json_t *
param(const char *name, const char *in)
{
	return json_pack("{s:s, s:s, s:b, s:{s:s}}", "name", name, "in", in, "required",
	    strcmp(in, "path") == 0, "schema", "type", strcmp(name, "force") == 0 ?
	    "boolean" : "string");
}

static json_t *
op(const char *id, const char *group, const char *version, const char *kind, bool patch)
{
	json_t *o = json_pack("{s:s, s:{s:{s:s}}, s:{s:s, s:s, s:s}}", "operationId", id,
	    "responses", "200", "description", "OK", "x-kubernetes-group-version-kind",
	    "group", group, "version", version, "kind", kind), *ps = json_array();

	json_array_append_new(ps, param("dryRun", "query"));
	json_array_append_new(ps, param("fieldManager", "query"));
	json_array_append_new(ps, param("fieldValidation", "query"));
	if (patch)
		json_array_append_new(ps, param("force", "query"));
	json_object_set_new(o, "parameters", ps);
	return o;
}

static json_t *
item_path(const char *group, const char *version, const char *kind, bool write)
{
	json_t *p = json_object();

	json_object_set_new(p, "get", json_pack("{s:s, s:{s:{s:s}}, s:{s:s, s:s, s:s}}",
	    "operationId", "read", "responses", "200", "description", "OK",
	    "x-kubernetes-group-version-kind", "group", group, "version", version, "kind", kind));
	if (write) {
		json_object_set_new(p, "patch", op("patch", group, version, kind, true));
		json_object_set_new(p, "put", op("replace", group, version, kind, false));
		json_object_set_new(p, "delete", op("delete", group, version, kind, false));
	}
	json_object_set_new(p, "parameters", json_pack("[o]", param("name", "path")));
	return p;
}

static json_t *
doc(json_t *paths, json_t *schemas)
{
	return json_pack("{s:s, s:{s:s, s:s}, s:o, s:{s:o}}", "openapi", "3.0.0", "info",
	    "title", "Kubernetes", "version", "v1.30.4", "paths", paths, "components", "schemas",
	    schemas);
}

static json_t *
gvk_schema(const char *group, const char *kind, json_t *schema)
{
	json_t *s = schema ? json_deep_copy(schema) : json_pack("{s:s, s:b}", "type", "object",
	    "x-kubernetes-preserve-unknown-fields", 1);

	json_object_set_new(s, "x-kubernetes-group-version-kind", json_pack("[{s:s, s:s, s:s}]",
	    "group", group, "version", "v1", "kind", kind));
	return s;
}

static void
openapi_core(struct cs_req *rq)
{
	json_t *paths = json_object(), *schemas = json_object();
	char p[128], s[64];
	size_t i;

	for (i = 0; i < sizeof(core) / sizeof(core[0]); i++) {
		bool ns = core[i].namespaced, w = strstr(core[i].verbs, "patch") != NULL;

		snprintf(p, sizeof(p), "/api/v1/%s%s/{name}", ns ? "namespaces/{namespace}/" : "",
		    core[i].name);
		json_object_set_new(paths, p, item_path("", "v1", core[i].kind, w));
		snprintf(s, sizeof(s), "io.k8s.api.core.v1.%s", core[i].kind);
		json_object_set_new(schemas, s, gvk_schema("", core[i].kind, NULL));
	}
	cs_reply_json(rq, 200, doc(paths, schemas));
}

static void
openapi_ray(struct cs *cs, struct cs_req *rq)
{
	json_t *paths = json_object(), *schemas = json_object();
	char p[128], s[64];
	size_t i;

	for (i = 0; i < 4; i++) {
		const char *kind = cs_kind_of(ray_plurals[i]);

		snprintf(p, sizeof(p), "/apis/ray.io/v1/namespaces/{namespace}/%s/{name}",
		    ray_plurals[i]);
		json_object_set_new(paths, p, item_path("ray.io", "v1", kind, true));
		snprintf(s, sizeof(s), "io.ray.v1.%s", kind);
		json_object_set_new(schemas, s, gvk_schema("ray.io", kind,
		    json_object_get(cs->crds, ray_plurals[i])));
	}
	cs_reply_json(rq, 200, doc(paths, schemas));
}

static void
openapi_group(struct cs_req *rq, const char *group, const char *version)
{
	json_t *paths = json_object(), *schemas = json_object(), *sch;
	char p[256], s[128];

	for (size_t i = 0; i < NGROUPS; i++) {
		if (strcmp(groups[i].group, group) != 0)
			continue;
		snprintf(p, sizeof(p), "/apis/%s/%s/%s%s/{name}", group, version,
		    groups[i].namespaced ? "namespaces/{namespace}/" : "", groups[i].name);
		json_object_set_new(paths, p, item_path(group, version, groups[i].kind, true));
		snprintf(s, sizeof(s), "%s.%s.%s", group, version, groups[i].kind);
		sch = gvk_schema(group, groups[i].kind, NULL);
		json_object_set_new(json_array_get(json_object_get(sch,
		    "x-kubernetes-group-version-kind"), 0), "version", json_string(version));
		json_object_set_new(schemas, s, sch);
	}
	cs_reply_json(rq, 200, doc(paths, schemas));
}

static void
openapi(struct cs *cs, struct cs_cluster *cl, struct cs_req *rq)
{
	/* seg: k8s C openapi v3 [api v1 | apis ray.io v1] */
	if (rq->nseg == 4) {
		json_t *idx = json_pack("{s:{s:s}, s:{s:s}}", "api/v1", "serverRelativeURL",
		    "/openapi/v3/api/v1?hash=C0RE", "apis/ray.io/v1", "serverRelativeURL",
		    "/openapi/v3/apis/ray.io/v1?hash=RAY1");

		for (size_t i = 0; i < NGROUPS; i++) {
			char k[96], u[160];

			if (!group_served(cl, groups[i].group))
				continue;
			snprintf(k, sizeof(k), "apis/%s/%s", groups[i].group, groups[i].version);
			snprintf(u, sizeof(u), "/openapi/v3/%s?hash=G%zu", k, i);
			json_object_set_new(idx, k, json_pack("{s:s}", "serverRelativeURL", u));
		}
		cs_reply_json(rq, 200, json_pack("{s:o}", "paths", idx));
	} else if (rq->nseg == 7 && strcmp(rq->seg[4], "apis") == 0 &&
	    group_served(cl, rq->seg[5]) && strcmp(rq->seg[6], group_version(rq->seg[5])) == 0) {
		openapi_group(rq, rq->seg[5], rq->seg[6]);
	} else if (rq->nseg == 6 && strcmp(rq->seg[4], "api") == 0 &&
	    strcmp(rq->seg[5], "v1") == 0) {
		openapi_core(rq);
	} else if (rq->nseg == 7 && strcmp(rq->seg[4], "apis") == 0 &&
	    strcmp(rq->seg[5], "ray.io") == 0 && strcmp(rq->seg[6], "v1") == 0) {
		openapi_ray(cs, rq);
	} else {
		cs_reply_no_resource(rq);
	}
}

bool
cs_kube_discovery(struct cs *cs, struct cs_cluster *cl, struct cs_req *rq)
{
	/* seg: k8s C ... */
	if (rq->nseg == 3 && strcmp(rq->seg[2], "api") == 0) {
		cs_reply_json(rq, 200, json_pack("{s:s, s:[s], s:[{s:s, s:s}]}", "kind",
		    "APIVersions", "versions", "v1", "serverAddressByClientCIDRs", "clientCIDR",
		    "0.0.0.0/0", "serverAddress", "127.0.0.1:443"));
	} else if (rq->nseg == 4 && strcmp(rq->seg[2], "api") == 0 &&
	    strcmp(rq->seg[3], "v1") == 0) {
		api_v1(rq);
	} else if (rq->nseg == 3 && strcmp(rq->seg[2], "apis") == 0) {
		json_t *gl = json_array();

		json_array_append_new(gl, group_json("ray.io", "v1"));
		for (size_t i = 0; i < NGROUPS; i++)
			if (group_served(cl, groups[i].group) && (i == 0 ||
			    strcmp(groups[i - 1].group, groups[i].group) != 0))
				json_array_append_new(gl, group_json(groups[i].group,
				    groups[i].version));
		cs_reply_json(rq, 200, json_pack("{s:s, s:s, s:o}", "kind", "APIGroupList",
		    "apiVersion", "v1", "groups", gl));
	} else if (rq->nseg == 4 && strcmp(rq->seg[2], "apis") == 0 &&
	    group_served(cl, rq->seg[3])) {
		json_t *g = group_json(rq->seg[3], group_version(rq->seg[3]));

		json_object_set_new(g, "kind", json_string("APIGroup"));
		json_object_set_new(g, "apiVersion", json_string("v1"));
		cs_reply_json(rq, 200, g);
	} else if (rq->nseg == 5 && strcmp(rq->seg[2], "apis") == 0 &&
	    group_served(cl, rq->seg[3]) && strcmp(rq->seg[4], group_version(rq->seg[3])) == 0) {
		group_resources(rq, rq->seg[3], rq->seg[4]);
	} else if (rq->nseg == 4 && strcmp(rq->seg[2], "apis") == 0 &&
	    strcmp(rq->seg[3], "ray.io") == 0) {
		cs_reply_json(rq, 200, json_pack("{s:s, s:s, s:s, s:[{s:s, s:s}], s:{s:s, s:s}}",
		    "kind", "APIGroup", "apiVersion", "v1", "name", "ray.io", "versions",
		    "groupVersion", "ray.io/v1", "version", "v1", "preferredVersion", "groupVersion",
		    "ray.io/v1", "version", "v1"));
	} else if (rq->nseg == 5 && strcmp(rq->seg[2], "apis") == 0 &&
	    strcmp(rq->seg[3], "ray.io") == 0 && strcmp(rq->seg[4], "v1") == 0) {
		ray_v1(rq);
	} else if (rq->nseg >= 4 && strcmp(rq->seg[2], "openapi") == 0 &&
	    strcmp(rq->seg[3], "v3") == 0) {
		openapi(cs, cl, rq);
	} else if (rq->nseg == 4 && strcmp(rq->seg[2], "openapi") == 0 &&
	    strcmp(rq->seg[3], "v2") == 0) {
		/* like a server whose v2 document is gone: clients use v3 */
		cs_reply_no_resource(rq);
	} else {
		return false;
	}
	return true;
}

/* ---- CRD schemas */

static bool
load_crd(struct cs *cs, const char *path, struct err *e)
{
	size_t len = 0, i;
	char *text = cs_read_file(path, &len), msg[256] = "";
	json_t *docs, *d, *v;

	if (text == NULL)
		return err_set(e, 400, "cloudsim.crd", "cannot read %s", path);
	docs = cs_yaml_load(text, len, true, msg, sizeof(msg));
	free(text);
	if (docs == NULL)
		return err_set(e, 400, "cloudsim.crd", "%s: %s", path, msg);
	json_array_foreach(docs, i, d) {
		const char *plural = cs_jpath(d, "spec.names.plural");
		size_t j;

		if (plural == NULL || cs_kind_of(plural) == NULL)
			continue;
		json_array_foreach(json_object_get(json_object_get(d, "spec"), "versions"), j, v)
			if (strcmp(json_string_value(json_object_get(v, "name")) ?
			    json_string_value(json_object_get(v, "name")) : "", "v1") == 0)
			{
				char ck[64];

				json_object_set(cs->crds, plural, json_object_get(json_object_get(v,
				    "schema"), "openAPIV3Schema"));
				snprintf(ck, sizeof(ck), "%s/columns", plural);
				if (json_is_array(json_object_get(v, "additionalPrinterColumns")))
					json_object_set(cs->crds, ck, json_object_get(v,
					    "additionalPrinterColumns"));
			}
	}
	json_decref(docs);
	return true;
}

bool
cs_crds_load(struct cs *cs, const char *dir, struct err *e)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	char path[2048];
	bool ok = true;

	if (d == NULL)
		return err_set(e, 400, "cloudsim.crd", "cannot open crd dir %s", dir);
	while (ok && (de = readdir(d)) != NULL) {
		size_t n = strlen(de->d_name);

		if (n < 6 || strcmp(de->d_name + n - 5, ".yaml") != 0)
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		ok = load_crd(cs, path, e);
	}
	closedir(d);
	for (size_t i = 0; ok && i < 4; i++)
		if (json_object_get(cs->crds, ray_plurals[i]) == NULL)
			return err_set(e, 400, "cloudsim.crd", "crd dir %s lacks %s", dir,
			    ray_plurals[i]);
	return ok;
}

static bool
type_ok(json_t *v, json_t *schema)
{
	const char *t = json_string_value(json_object_get(schema, "type"));

	if (t == NULL || json_is_true(json_object_get(schema, "x-kubernetes-int-or-string")))
		return true;
	if (strcmp(t, "object") == 0)
		return json_is_object(v);
	if (strcmp(t, "array") == 0)
		return json_is_array(v);
	if (strcmp(t, "string") == 0)
		return json_is_string(v);
	if (strcmp(t, "integer") == 0)
		return json_is_integer(v);
	if (strcmp(t, "number") == 0)
		return json_is_number(v);
	if (strcmp(t, "boolean") == 0)
		return json_is_boolean(v);
	return true;
}

static const char *
type_name(json_t *v)
{
	return json_is_object(v) ? "object" : json_is_array(v) ? "array" : json_is_string(v) ?
	    "string" : json_is_integer(v) ? "integer" : json_is_number(v) ? "number" :
	    json_is_boolean(v) ? "boolean" : "null";
}

/* Walks v against schema; on the first problem fills path and *unknown / *want. */
static bool
walk(json_t *v, json_t *schema, char *path, size_t n, bool *unknown, const char **want)
{
	size_t len = strlen(path);
	const char *k;
	json_t *x;

	if (schema == NULL || json_is_null(v))
		return true;
	if (!type_ok(v, schema)) {
		*want = json_string_value(json_object_get(schema, "type"));
		return false;
	}
	if (json_is_true(json_object_get(schema, "x-kubernetes-preserve-unknown-fields")))
		return true;
	if (json_is_object(v)) {
		json_t *props = json_object_get(schema, "properties"),
		    *addl = json_object_get(schema, "additionalProperties");

		json_object_foreach(v, k, x) {
			json_t *sub = json_object_get(props, k);

			snprintf(path + len, n - len, "%s%s", len ? "." : "", k);
			if (sub == NULL && json_is_object(addl))
				sub = addl;
			if (sub == NULL && !json_is_true(addl) && props != NULL) {
				*unknown = true;
				return false;
			}
			if (!walk(x, sub, path, n, unknown, want))
				return false;
			path[len] = '\0';
		}
	} else if (json_is_array(v)) {
		size_t i;

		json_array_foreach(v, i, x) {
			snprintf(path + len, n - len, "[%zu]", i);
			if (!walk(x, json_object_get(schema, "items"), path, n, unknown, want))
				return false;
			path[len] = '\0';
		}
	}
	return true;
}

int
cs_crd_check(struct cs *cs, const char *plural, json_t *body, char *path, size_t n,
    char *what, size_t wn)
{
	json_t *schema = json_object_get(cs->crds, plural), *copy;
	bool unknown = false;
	const char *want = NULL;
	int rc = 0;

	path[0] = '\0';
	if (schema == NULL)
		return 0;
	copy = json_deep_copy(body);
	json_object_del(copy, "metadata");	/* the API server's own ObjectMeta checks */
	json_object_del(copy, "status");
	if (!walk(copy, schema, path, n, &unknown, &want)) {
		if (unknown) {
			rc = 1;
		} else {
			const char *p = path;
			json_t *at = copy;
			char key[128];

			while (*p && at != NULL) {	/* find the offending value for the message */
				size_t l = strcspn(p, ".[");

				if (*p == '[') {
					at = json_array_get(at, (size_t)atol(p + 1));
					p = strchr(p, ']') + 1;
				} else {
					snprintf(key, sizeof(key), "%.*s", (int)l, p);
					at = json_object_get(at, key);
					p += l;
				}
				if (*p == '.')
					p++;
			}
			snprintf(what, wn, "Invalid value: \"%s\": %s in body must be of type %s: "
			    "\"%s\"", type_name(at), path, want ? want : "?", type_name(at));
			rc = 2;
		}
	}
	json_decref(copy);
	return rc;
}
