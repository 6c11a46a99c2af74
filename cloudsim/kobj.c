/* cloudsim kobj: ray.io/v1 objects on a member cluster — create, get, list, update, delete,
 * server-side apply (fieldManager, force, conflicts) and JSON merge patch. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cloudsim/cs.h"
#include "core/jsonx.h"

static const struct {
	const char *plural, *kind;
} kinds[] = {
	{ "rayclusters", "RayCluster" },
	{ "rayjobs", "RayJob" },
	{ "rayservices", "RayService" },
	{ "raycronjobs", "RayCronJob" },
};

const char *
cs_kind_of(const char *plural)
{
	size_t i;

	for (i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++)
		if (strcmp(kinds[i].plural, plural) == 0)
			return kinds[i].kind;
	return NULL;
}

struct cs_object *
cs_object_find(struct cs_cluster *cl, const char *plural, const char *ns, const char *name)
{
	size_t i;

	for (i = 0; i < cl->objects.n; i++) {
		struct cs_object *o = cl->objects.v[i];

		if (!o->deleted && strcmp(o->plural, plural) == 0 && strcmp(o->ns, ns) == 0 &&
		    strcmp(o->name, name) == 0)
			return o;
	}
	return NULL;
}

static void
count_apply(struct cs *cs, struct cs_cluster *cl, struct cs_object *o)
{
	char key[400];

	o->applies++;
	snprintf(key, sizeof(key), "%s/%s/%s/%s", cl->name, o->ns, o->plural, o->name);
	json_object_set_new(cs->apply_counts, key, json_integer(json_integer_value(
	    json_object_get(cs->apply_counts, key)) + 1));
}

/* A Kubernetes 422 Status with one cause. */
static void
invalid(struct cs_req *rq, const char *kind, const char *name, const char *field,
    const char *reason, const char *what)
{
	char msg[768];

	snprintf(msg, sizeof(msg), "%s.ray.io \"%s\" is invalid: %s: %s", kind, name, field,
	    what);
	cs_kube_status(rq, 422, "Invalid", msg, name, "ray.io", kind, json_pack("[{s:s, s:s, "
	    "s:s}]", "reason", reason, "message", what, "field", field));
}

static void
not_found(struct cs_req *rq, const char *plural, const char *name)
{
	char msg[512];

	snprintf(msg, sizeof(msg), "%s.ray.io \"%s\" not found", plural, name);
	cs_kube_status(rq, 404, "NotFound", msg, name, "ray.io", plural, NULL);
}

static void
conflict(struct cs_req *rq, const char *plural, const char *name, const char *msg,
    json_t *causes)
{
	cs_kube_status(rq, 409, "Conflict", msg, name, "ray.io", plural, causes ? causes :
	    json_array());
}

/* Checks a pod template at path; fills field/what on failure. */
static bool
check_template(json_t *t, const char *path, char *field, size_t fn, const char **what)
{
	json_t *c = json_object_get(json_object_get(t, "spec"), "containers");

	if (!json_is_object(t)) {
		snprintf(field, fn, "%s", path);
		*what = "Required value";
		return false;
	}
	if (!json_is_array(c) || json_array_size(c) == 0) {
		snprintf(field, fn, "%s.spec.containers", path);
		*what = "Required value";
		return false;
	}
	return true;
}

static bool
check_cluster_spec(json_t *cs_spec, const char *path, char *field, size_t fn,
    const char **what)
{
	json_t *head = json_object_get(cs_spec, "headGroupSpec"), *wg, *g;
	char p[512];
	size_t i;

	if (!json_is_object(cs_spec)) {
		snprintf(field, fn, "%s", path);
		*what = "Invalid value: must be an object";
		return false;
	}
	if (!json_is_object(head)) {
		snprintf(field, fn, "%s.headGroupSpec", path);
		*what = "Required value";
		return false;
	}
	snprintf(p, sizeof(p), "%s.headGroupSpec.template", path);
	if (!check_template(json_object_get(head, "template"), p, field, fn, what))
		return false;
	wg = json_object_get(cs_spec, "workerGroupSpecs");
	if (wg != NULL && !json_is_array(wg)) {
		snprintf(field, fn, "%s.workerGroupSpecs", path);
		*what = "Invalid value: must be an array";
		return false;
	}
	json_array_foreach(wg, i, g) {
		const char *keys[] = { "replicas", "minReplicas", "maxReplicas", "numOfHosts" };
		size_t k;

		if (!json_is_string(json_object_get(g, "groupName"))) {
			snprintf(field, fn, "%s.workerGroupSpecs[%zu].groupName", path, i);
			*what = "Required value";
			return false;
		}
		for (k = 0; k < 4; k++) {
			json_t *v = json_object_get(g, keys[k]);

			if (v != NULL && (!json_is_integer(v) || json_integer_value(v) < 0)) {
				snprintf(field, fn, "%s.workerGroupSpecs[%zu].%s", path, i, keys[k]);
				*what = "Invalid value: must be a non-negative integer";
				return false;
			}
		}
		snprintf(p, sizeof(p), "%s.workerGroupSpecs[%zu].template", path, i);
		if (!check_template(json_object_get(g, "template"), p, field, fn, what))
			return false;
	}
	return true;
}

static bool
is_apply(struct cs_req *rq)
{
	const char *ct = cs_header(rq, "Content-Type");

	return strcmp(rq->method, "PATCH") == 0 && ct != NULL &&
	    strncmp(ct, "application/apply-patch+yaml", 28) == 0;
}

static const char *
plural_of(const char *kind)
{
	size_t i;

	for (i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++)
		if (strcmp(kinds[i].kind, kind) == 0)
			return kinds[i].plural;
	return "";
}

/* The CRD schema (--crd-dir): server-side apply refuses a field the schema does not
 * declare; other writes follow fieldValidation (Strict refuses, Warn (default) answers
 * with a Warning header, Ignore drops it); a value of the wrong type is 422 always. */
static bool
schema_ok(struct cs_req *rq, const char *kind, const char *name, json_t *body)
{
	const char *fv = cs_query(rq, "fieldValidation"), *ns = cs_jpath(body,
	    "metadata.namespace");
	char path[512], what[768], msg[1024];
	int rc = cs_crd_check(cs_g, plural_of(kind), body, path, sizeof(path), what,
	    sizeof(what));

	if (fv != NULL && strcmp(fv, "Strict") && strcmp(fv, "Warn") && strcmp(fv, "Ignore")) {
		cs_reply_error(rq, 400, "BadRequest", "fieldValidation must be one of Ignore, Warn "
		    "or Strict");
		return false;
	}
	if (rc == 2) {
		invalid(rq, kind, name, path, "FieldValueTypeInvalid", what);
		return false;
	}
	if (rc != 1)
		return true;
	if (is_apply(rq)) {
		cs_reply_error(rq, 400, "BadRequest", "failed to create typed patch object "
		    "(%s/%s; ray.io/v1, Kind=%s): .%s: field not declared in schema", ns ? ns : "",
		    name, kind, path);
		return false;
	}
	if (fv != NULL && strcmp(fv, "Strict") == 0) {
		cs_reply_error(rq, 400, "BadRequest", "%s in version \"v1\" cannot be handled as "
		    "a %s: strict decoding error: unknown field \"%s\"", kind, kind, path);
		return false;
	}
	if (fv == NULL || strcmp(fv, "Warn") == 0) {
		snprintf(msg, sizeof(msg), "299 - \"unknown field \\\"%s\\\"\"", path);
		cs_reply_header(rq, "Warning", msg);
	}
	return true;
}

/* Whether the request asks for ?dryRun=All (nothing is stored). */
static bool
dry_run(struct cs_req *rq)
{
	const char *d = cs_query(rq, "dryRun");

	return d != NULL && strcmp(d, "All") == 0;
}

/* What a write would have stored: body with the server's metadata of o (or new ones). */
static json_t *
dry_view(struct cs *cs, struct cs_object *o, json_t *body, const char *ns)
{
	json_t *v = json_deep_copy(body), *md;
	char ts[32], uid[40];

	if (!json_is_object(json_object_get(v, "metadata")))
		json_object_set_new(v, "metadata", json_object());
	md = json_object_get(v, "metadata");
	json_object_set_new(md, "namespace", json_string(ns));
	if (o != NULL) {
		json_object_set(md, "uid", jsonx_meta(o->live, "uid"));
		json_object_set(md, "creationTimestamp",
		    jsonx_meta(o->live, "creationTimestamp"));
		json_object_set_new(md, "resourceVersion", json_sprintf("%lld", o->rv));
		json_object_set_new(md, "generation", json_integer(o->generation));
		if (json_object_get(o->live, "status") != NULL)
			json_object_set(v, "status", json_object_get(o->live, "status"));
	} else {
		cs_uuid(uid);
		cs_rfc3339(cs_now(cs), ts);
		json_object_set_new(md, "uid", json_string(uid));
		json_object_set_new(md, "creationTimestamp", json_string(ts));
		json_object_set_new(md, "generation", json_integer(1));
	}
	return v;
}

/* Structural validation as the CRD schema does it; answers 422 and returns false. */
static bool
validate(struct cs_req *rq, const char *kind, const char *name, json_t *body)
{
	json_t *spec = json_object_get(body, "spec");
	char field[1024] = "";
	const char *what = NULL;
	bool ok = true;

	if (!cs_dns1123_label(name, 63)) {
		invalid(rq, kind, name, "metadata.name", "FieldValueInvalid", "Invalid value: a "
		    "lowercase RFC 1123 label must consist of lower case alphanumeric characters "
		    "or '-', and must start and end with an alphanumeric character");
		return false;
	}
	if (!schema_ok(rq, kind, name, body))
		return false;
	if (!json_is_object(spec)) {
		invalid(rq, kind, name, "spec", "FieldValueRequired", "Required value");
		return false;
	}
	if (strcmp(kind, "RayCluster") == 0) {
		ok = check_cluster_spec(spec, "spec", field, sizeof(field), &what);
	} else if (strcmp(kind, "RayJob") == 0) {
		json_t *e = json_object_get(spec, "entrypoint");

		if (e != NULL && !json_is_string(e)) {
			snprintf(field, sizeof(field), "spec.entrypoint");
			what = "Invalid value: must be a string";
			ok = false;
		} else if (json_object_get(spec, "rayClusterSpec") != NULL) {
			ok = check_cluster_spec(json_object_get(spec, "rayClusterSpec"),
			    "spec.rayClusterSpec", field, sizeof(field), &what);
		}
	} else if (strcmp(kind, "RayService") == 0) {
		ok = check_cluster_spec(json_object_get(spec, "rayClusterConfig"),
		    "spec.rayClusterConfig", field, sizeof(field), &what);
	} else if (strcmp(kind, "RayCronJob") == 0) {
		if (!json_is_string(json_object_get(spec, "schedule"))) {
			snprintf(field, sizeof(field), "spec.schedule");
			what = "Required value";
			ok = false;
		} else if (!json_is_object(json_object_get(spec, "jobTemplate"))) {
			snprintf(field, sizeof(field), "spec.jobTemplate");
			what = "Required value";
			ok = false;
		}
	}
	if (!ok)
		invalid(rq, kind, name, field, strstr(what, "Required") ? "FieldValueRequired" :
		    "FieldValueInvalid", what);
	return ok;
}

static void
set_meta(struct cs *cs, struct cs_object *o)
{
	json_t *md = json_object_get(o->live, "metadata");
	char ts[32];

	cs_rfc3339(o->created, ts);
	json_object_set_new(md, "namespace", json_string(o->ns));
	json_object_set_new(md, "uid", json_string(o->uid));
	json_object_set_new(md, "resourceVersion", json_sprintf("%lld", o->rv));
	json_object_set_new(md, "generation", json_integer(o->generation));
	json_object_set_new(md, "creationTimestamp", json_string(ts));
	cs_rfc3339(cs_now(cs), ts);
	json_object_set_new(md, "managedFields", json_pack("[{s:s, s:s, s:s, s:s, s:s}]",
	    "manager", o->manager, "operation", strcmp(o->manager, "") ? "Apply" : "Update",
	    "apiVersion", "ray.io/v1", "time", ts, "fieldsType", "FieldsV1"));
	json_object_del(md, "deletionTimestamp");
}

/* Replaces the user-owned parts of live (everything but status) with body. */
static void
take_body(struct cs_object *o, json_t *body)
{
	json_t *status = json_incref(json_object_get(o->live, "status"));

	json_decref(o->live);
	o->live = json_deep_copy(body);
	json_object_del(o->live, "status");
	if (!json_is_object(json_object_get(o->live, "metadata")))
		json_object_set_new(o->live, "metadata", json_object());
	if (status != NULL)
		json_object_set_new(o->live, "status", status);
	json_decref(o->applied);
	o->applied = json_deep_copy(body);
}

static struct cs_object *
create(struct cs *cs, struct cs_cluster *cl, const char *plural, const char *ns,
    const char *name, const char *manager, json_t *body)
{
	struct cs_object *o = calloc(1, sizeof(*o));
	char sfx[6];

	if (o == NULL)
		abort();
	snprintf(o->kind, sizeof(o->kind), "%s", cs_kind_of(plural));
	snprintf(o->plural, sizeof(o->plural), "%s", plural);
	snprintf(o->ns, sizeof(o->ns), "%s", ns);
	snprintf(o->name, sizeof(o->name), "%s", name);
	snprintf(o->manager, sizeof(o->manager), "%s", manager ? manager : "");
	cs_uuid(o->uid);
	o->created = cs_now(cs);
	o->generation = 1;
	o->rv = ++cl->rv;
	cs_rand_suffix(sfx, sizeof(sfx));
	if (strcmp(o->kind, "RayCluster") == 0)
		snprintf(o->cluster_name, sizeof(o->cluster_name), "%s", name);
	else if (strcmp(o->kind, "RayService") == 0)
		snprintf(o->cluster_name, sizeof(o->cluster_name), "%.100s-raycluster-%s", name,
		    sfx);
	else
		snprintf(o->cluster_name, sizeof(o->cluster_name), "%.100s-%s", name, sfx);
	cs_rand_suffix(sfx, sizeof(sfx));
	snprintf(o->job_id, sizeof(o->job_id), "%.100s-%s", name, sfx);
	take_body(o, body);
	set_meta(cs, o);
	cs_vec_push(&cl->objects, o);
	return o;
}

/* Leaf paths under prefix where b sets a value different from a. */
static void
diff_paths(json_t *a, json_t *b, const char *prefix, json_t *out)
{
	const char *k;
	json_t *v;
	char p[512];

	if (json_is_object(a) && json_is_object(b)) {
		json_object_foreach(b, k, v) {
			snprintf(p, sizeof(p), "%s.%s", prefix, k);
			diff_paths(json_object_get(a, k), v, p, out);
		}
		return;
	}
	if (a != NULL && !json_equal(a, b) && json_array_size(out) < 20)
		json_array_append_new(out, json_string(prefix));
}

static bool
body_matches_url(struct cs_req *rq, json_t *body, const char *kind, const char *ns,
    const char *name)
{
	const char *bk = json_string_value(json_object_get(body, "kind")),
	    *av = json_string_value(json_object_get(body, "apiVersion")),
	    *bns = cs_jpath(body, "metadata.namespace"), *bn = cs_jpath(body, "metadata.name");

	if (av == NULL || bk == NULL) {
		cs_reply_error(rq, 400, "BadRequest", "Object 'Kind' is missing in '%.200s'",
		    rq->body ? rq->body : "");
		return false;
	}
	if (strcmp(av, "ray.io/v1") != 0 || strcmp(bk, kind) != 0) {
		cs_reply_error(rq, 400, "BadRequest", "the API version in the data (%s) does not "
		    "match the expected API version (ray.io/v1) or kind %s is not %s", av, bk,
		    kind);
		return false;
	}
	if (bns != NULL && strcmp(bns, ns) != 0) {
		cs_reply_error(rq, 400, "BadRequest", "the namespace of the provided object does "
		    "not match the namespace sent on the request");
		return false;
	}
	if (name != NULL && (bn == NULL || strcmp(bn, name) != 0)) {
		cs_reply_error(rq, 400, "BadRequest", "the name of the object (%s) does not match "
		    "the name on the URL (%s)", bn ? bn : "", name);
		return false;
	}
	return true;
}

/* Whether metadata.<key> is the same in a and b (absent equals empty). */
static bool
meta_equal(json_t *a, json_t *b, const char *key)
{
	json_t *x = jsonx_meta(a, key), *y = jsonx_meta(b, key);

	if (x == NULL || y == NULL)
		return json_object_size(x) == 0 && json_object_size(y) == 0;
	return json_equal(x, y);
}

static void
apply(struct cs *cs, struct cs_cluster *cl, struct cs_req *rq, const char *plural,
    const char *ns, const char *name, json_t *body)
{
	const char *kind = cs_kind_of(plural), *mgr = cs_query(rq, "fieldManager"),
	    *force = cs_query(rq, "force"), *brv = cs_jpath(body, "metadata.resourceVersion");
	struct cs_object *o = cs_object_find(cl, plural, ns, name);
	char msg[1024];

	if (mgr == NULL || *mgr == '\0') {
		cs_reply_error(rq, 400, "BadRequest", "PATCH /apply requires fieldManager: "
		    "fieldManager: Required value: is required for apply patch");
		return;
	}
	if (!body_matches_url(rq, body, kind, ns, name) || !validate(rq, kind, name, body) ||
	    !cs_kueue_admit(cl, rq, kind, body))
		return;
	if (o == NULL) {
		if (brv != NULL) {
			not_found(rq, plural, name);
			return;
		}
		if (dry_run(rq)) {
			cs_reply_json(rq, 201, dry_view(cs, NULL, body, ns));
			return;
		}
		o = create(cs, cl, plural, ns, name, mgr, body);
		count_apply(cs, cl, o);
		cs_object_changed(cs, cl, o);
		cs_reply_json(rq, 201, json_incref(o->live));
		return;
	}
	if (brv != NULL && strtoll(brv, NULL, 10) != o->rv) {
		snprintf(msg, sizeof(msg), "Operation cannot be fulfilled on %s.ray.io \"%s\": the "
		    "object has been modified; please apply your changes to the latest version "
		    "and try again", plural, name);
		conflict(rq, plural, name, msg, NULL);
		return;
	}
	if (strcmp(o->manager, mgr) != 0 && (force == NULL || strcmp(force, "true") != 0)) {
		json_t *paths = json_array(), *causes = json_array(), *p;
		size_t i;

		diff_paths(json_object_get(o->live, "spec"), json_object_get(body, "spec"),
		    ".spec", paths);
		if (json_array_size(paths) > 0) {
			char who[256];
			int off;

			snprintf(who, sizeof(who), "conflict with \"%s\" using ray.io/v1",
			    o->manager);
			off = snprintf(msg, sizeof(msg), "Apply failed with %zu conflict%s: %s:",
			    json_array_size(paths), json_array_size(paths) > 1 ? "s" : "", who);
			json_array_foreach(paths, i, p) {
				if (off < (int)sizeof(msg) - 1)
					off += snprintf(msg + off, sizeof(msg) - (size_t)off, "%s %s",
					    i ? "," : "", json_string_value(p));
				json_array_append_new(causes, json_pack("{s:s, s:s, s:s}", "reason",
				    "FieldManagerConflict", "message", who, "field",
				    json_string_value(p)));
			}
			json_decref(paths);
			conflict(rq, plural, name, msg, causes);
			return;
		}
		json_decref(paths);
		json_decref(causes);
	}
	if (dry_run(rq)) {
		cs_reply_json(rq, 200, dry_view(cs, o, body, ns));
		return;
	}
	count_apply(cs, cl, o);
	if (!json_equal(json_object_get(o->live, "spec"), json_object_get(body, "spec")) ||
	    !meta_equal(body, o->live, "labels") || !meta_equal(body, o->live, "annotations") ||
	    strcmp(o->manager, mgr) != 0) {
		if (!json_equal(json_object_get(o->live, "spec"), json_object_get(body, "spec"))) {
			o->generation++;
			cs_status_spec_change(cs, o, json_object_get(body, "spec"));
		}
		snprintf(o->manager, sizeof(o->manager), "%s", mgr);
		take_body(o, body);
		o->rv = ++cl->rv;
		set_meta(cs, o);
		cs_object_changed(cs, cl, o);
	} else {
		json_decref(o->applied);
		o->applied = json_deep_copy(body);
	}
	cs_reply_json(rq, 200, json_incref(o->live));
}

/* RFC 7386 JSON merge patch of patch into target. */
static void
merge_patch(json_t *target, json_t *patch)
{
	const char *k;
	json_t *v;

	json_object_foreach(patch, k, v) {
		json_t *t = json_object_get(target, k);

		if (json_is_null(v))
			json_object_del(target, k);
		else if (json_is_object(v) && json_is_object(t))
			merge_patch(t, v);
		else
			json_object_set_new(target, k, json_deep_copy(v));
	}
}

static void
patch(struct cs *cs, struct cs_cluster *cl, struct cs_req *rq, const char *plural,
    const char *ns, const char *name, json_t *body)
{
	struct cs_object *o = cs_object_find(cl, plural, ns, name);
	const char *brv = cs_jpath(body, "metadata.resourceVersion");
	json_t *next;
	char msg[512];

	if (o == NULL) {
		not_found(rq, plural, name);
		return;
	}
	/* a patch naming a resourceVersion is a precondition, as the API server takes it */
	if (brv != NULL && strtoll(brv, NULL, 10) != o->rv) {
		snprintf(msg, sizeof(msg), "Operation cannot be fulfilled on %s.ray.io \"%s\": the "
		    "object has been modified; please apply your changes to the latest version "
		    "and try again", plural, name);
		conflict(rq, plural, name, msg, NULL);
		return;
	}
	next = json_deep_copy(o->live);
	merge_patch(next, body);
	json_object_del(next, "status");
	if (!validate(rq, o->kind, name, next) || !cs_kueue_admit(cl, rq, o->kind, next)) {
		json_decref(next);
		return;
	}
	if (dry_run(rq)) {
		cs_reply_json(rq, 200, dry_view(cs, o, next, ns));
		json_decref(next);
		return;
	}
	if (!json_equal(json_object_get(o->live, "spec"), json_object_get(next, "spec"))) {
		o->generation++;
		cs_status_spec_change(cs, o, json_object_get(next, "spec"));
	}
	take_body(o, next);
	json_decref(o->applied);
	o->applied = next;
	o->rv = ++cl->rv;
	set_meta(cs, o);
	cs_object_changed(cs, cl, o);
	cs_reply_json(rq, 200, json_incref(o->live));
}

/* PATCH …/status (merge patch): a controller's report, changed by hand.  The model keeps
 * only what it computes itself, so the one field it honours is a RayService's
 * pendingServiceStatus cleared (null or without rayClusterName): KubeRay then has no
 * pending cluster (see fleetd's queue/change/updater.c:roll_back). */
static void
patch_status(struct cs *cs, struct cs_cluster *cl, struct cs_req *rq, const char *plural,
    const char *ns, const char *name, json_t *body)
{
	struct cs_object *o = cs_object_find(cl, plural, ns, name);
	json_t *st = json_object_get(body, "status"), *pend;

	if (o == NULL) {
		not_found(rq, plural, name);
		return;
	}
	pend = json_object_get(st, "pendingServiceStatus");
	if (strcmp(o->kind, "RayService") == 0 && json_is_object(st) &&
	    json_object_get(st, "pendingServiceStatus") != NULL &&
	    !json_is_string(json_object_get(pend, "rayClusterName")))
		o->upgrade_cluster[0] = '\0';
	o->rv = ++cl->rv;
	cs_object_changed(cs, cl, o);
	cs_reply_json(rq, 200, json_incref(o->live));
}

static void
post(struct cs *cs, struct cs_cluster *cl, struct cs_req *rq, const char *plural,
    const char *ns, json_t *body)
{
	const char *kind = cs_kind_of(plural), *name = cs_jpath(body, "metadata.name");
	struct cs_object *o;

	if (!body_matches_url(rq, body, kind, ns, NULL))
		return;
	if (name == NULL) {
		invalid(rq, kind, "", "metadata.name", "FieldValueRequired", "Required value: "
		    "name or generateName is required");
		return;
	}
	if (!validate(rq, kind, name, body) || !cs_kueue_admit(cl, rq, kind, body))
		return;
	if (cs_object_find(cl, plural, ns, name) != NULL) {
		char msg[512];

		snprintf(msg, sizeof(msg), "%s.ray.io \"%s\" already exists", plural, name);
		cs_kube_status(rq, 409, "AlreadyExists", msg, name, "ray.io", plural, NULL);
		return;
	}
	if (dry_run(rq)) {
		cs_reply_json(rq, 201, dry_view(cs, NULL, body, ns));
		return;
	}
	o = create(cs, cl, plural, ns, name, cs_query(rq, "fieldManager"), body);
	count_apply(cs, cl, o);
	cs_object_changed(cs, cl, o);
	cs_reply_json(rq, 201, json_incref(o->live));
}

static void
del(struct cs *cs, struct cs_cluster *cl, struct cs_req *rq, const char *plural,
    const char *ns, const char *name)
{
	struct cs_object *o = cs_object_find(cl, plural, ns, name);
	json_t *out;
	char ts[32];

	if (o == NULL) {
		not_found(rq, plural, name);
		return;
	}
	out = json_deep_copy(o->live);
	cs_rfc3339(cs_now(cs), ts);
	json_object_set_new(json_object_get(out, "metadata"), "deletionTimestamp",
	    json_string(ts));
	if (!dry_run(rq))
		cs_object_deleted(cs, cl, o);
	cs_reply_json(rq, 200, out);
}

/* PUT: a full replacement that must name the current resourceVersion. */
static void
update(struct cs *cs, struct cs_cluster *cl, struct cs_req *rq, const char *plural,
    const char *ns, const char *name, json_t *body)
{
	struct cs_object *o = cs_object_find(cl, plural, ns, name);
	const char *brv = cs_jpath(body, "metadata.resourceVersion");
	char msg[512];

	if (!body_matches_url(rq, body, cs_kind_of(plural), ns, name))
		return;
	if (o == NULL) {
		not_found(rq, plural, name);
		return;
	}
	if (brv == NULL) {
		invalid(rq, o->kind, name, "metadata.resourceVersion", "FieldValueInvalid",
		    "Invalid value: 0x0: must be specified for an update");
		return;
	}
	if (strtoll(brv, NULL, 10) != o->rv) {
		snprintf(msg, sizeof(msg), "Operation cannot be fulfilled on %s.ray.io \"%s\": the "
		    "object has been modified; please apply your changes to the latest version "
		    "and try again", plural, name);
		conflict(rq, plural, name, msg, NULL);
		return;
	}
	if (!validate(rq, o->kind, name, body) || !cs_kueue_admit(cl, rq, o->kind, body))
		return;
	if (dry_run(rq)) {
		cs_reply_json(rq, 200, dry_view(cs, o, body, ns));
		return;
	}
	if (!json_equal(json_object_get(o->live, "spec"), json_object_get(body, "spec")))
		o->generation++;
	take_body(o, body);
	o->rv = ++cl->rv;
	set_meta(cs, o);
	cs_object_changed(cs, cl, o);
	cs_reply_json(rq, 200, json_incref(o->live));
}

static json_t *
parse_body(struct cs_req *rq)
{
	const char *ct = cs_header(rq, "Content-Type");
	json_t *b;

	if (rq->body == NULL || rq->body_len == 0) {
		cs_reply_error(rq, 400, "BadRequest", "the body of the request is empty");
		return NULL;
	}
	b = json_loadb(rq->body, rq->body_len, JSON_REJECT_DUPLICATES, NULL);
	if (b == NULL && ct != NULL && strstr(ct, "yaml") != NULL) {	/* YAML bodies */
		char msg[256] = "";

		b = cs_yaml_load(rq->body, rq->body_len, false, msg, sizeof(msg));
		if (b == NULL) {
			cs_reply_error(rq, 400, "BadRequest", "error decoding YAML: %s", msg);
			return NULL;
		}
	}
	if (!json_is_object(b)) {
		json_decref(b);
		cs_reply_error(rq, 400, "BadRequest", "error decoding YAML: error converting YAML "
		    "to JSON: the body is not a JSON/YAML object");
		return NULL;
	}
	return b;
}

void
cs_kube_ray(struct cs *cs, struct cs_cluster *cl, struct cs_req *rq, const char *ns,
    const char *plural, const char *name, const char *sub)
{
	const char *ct = cs_header(rq, "Content-Type"), *m = rq->method;
	struct cs_object *o;
	json_t *body = NULL, *items;
	char lk[40];
	size_t i;

	if (cs_kind_of(plural) == NULL || (sub != NULL && strcmp(sub, "status") != 0)) {
		cs_reply_no_resource(rq);
		return;
	}
	if (ns != NULL && !cs_ns_exists(cl, ns) && strcmp(m, "GET") != 0) {
		cs_reply_error(rq, 404, "NotFound", "namespaces \"%s\" not found", ns);
		return;
	}
	if (strcmp(m, "GET") == 0 && name == NULL && cs_is_watch(rq)) {
		cs_watch_start(cs, cl, rq, plural, ns);
		return;
	}
	if (strcmp(m, "GET") == 0 && name == NULL) {
		items = json_array();
		for (i = 0; i < cl->objects.n; i++) {
			o = cl->objects.v[i];
			if (!o->deleted && strcmp(o->plural, plural) == 0 &&
			    (ns == NULL || strcmp(o->ns, ns) == 0))
				json_array_append(items, o->live);
		}
		snprintf(lk, sizeof(lk), "%sList", cs_kind_of(plural));
		cs_kube_list(cs, cl, rq, lk, "ray.io/v1", items);
		return;
	}
	if (ns == NULL) {
		cs_reply_error(rq, 405, "MethodNotAllowed", "the server does not allow this "
		    "method on the requested resource");
		return;
	}
	if (strcmp(m, "GET") == 0) {
		o = cs_object_find(cl, plural, ns, name);
		if (o == NULL)
			not_found(rq, plural, name);
		else
			cs_reply_object(cs, rq, o->kind, o->live);
	} else if (strcmp(m, "DELETE") == 0 && name != NULL && sub == NULL) {
		del(cs, cl, rq, plural, ns, name);
	} else if (strcmp(m, "POST") == 0 && name == NULL) {
		if ((body = parse_body(rq)) != NULL)
			post(cs, cl, rq, plural, ns, body);
	} else if (strcmp(m, "PUT") == 0 && name != NULL && sub == NULL) {
		if ((body = parse_body(rq)) != NULL)
			update(cs, cl, rq, plural, ns, name, body);
	} else if (strcmp(m, "PATCH") == 0 && name != NULL && sub == NULL) {
		if (ct != NULL && strncmp(ct, "application/apply-patch+yaml", 28) == 0) {
			if ((body = parse_body(rq)) != NULL)
				apply(cs, cl, rq, plural, ns, name, body);
		} else if (ct != NULL && strncmp(ct, "application/merge-patch+json", 28) == 0) {
			if ((body = parse_body(rq)) != NULL)
				patch(cs, cl, rq, plural, ns, name, body);
		} else {
			cs_reply_error(rq, 415, "UnsupportedMediaType", "the body of the request was "
			    "in an unknown format - accepted media types include: "
			    "application/merge-patch+json, application/apply-patch+yaml");
		}
	} else if (strcmp(m, "PATCH") == 0 && name != NULL && sub != NULL) {
		if (ct != NULL && strncmp(ct, "application/merge-patch+json", 28) == 0) {
			if ((body = parse_body(rq)) != NULL)
				patch_status(cs, cl, rq, plural, ns, name, body);
		} else {
			cs_reply_error(rq, 415, "UnsupportedMediaType", "the body of the request was "
			    "in an unknown format - accepted media types include: "
			    "application/merge-patch+json");
		}
	} else {
		cs_reply_error(rq, 405, "MethodNotAllowed", "the server does not allow this "
		    "method on the requested resource");
	}
	json_decref(body);
}

/* A RayJob created by RayCronJob cron from its jobTemplate; NULL when it cannot be. */
struct cs_object *
cs_object_spawn(struct cs *cs, struct cs_cluster *cl, struct cs_object *cron)
{
	json_t *tmpl = json_object_get(json_object_get(cron->live, "spec"), "jobTemplate"), *b;
	struct cs_object *o;
	char name[64], sfx[6], ts[32];

	if (!json_is_object(tmpl))
		return NULL;
	cs_rand_suffix(sfx, sizeof(sfx));
	snprintf(name, sizeof(name), "%.50s-%s", cron->name, sfx);
	cs_rfc3339(cs_now(cs), ts);
	b = json_pack("{s:s, s:s, s:{s:s, s:s, s:{s:s}, s:{s:s}, s:[{s:s, s:s, s:s, s:s, s:b,"
	    " s:b}]}, s:O}",
	    "apiVersion", "ray.io/v1", "kind", "RayJob", "metadata", "name", name, "namespace",
	    cron->ns, "labels", "ray.io/cronjob-name", cron->name, "annotations",
	    "ray.io/cronjob-scheduled-timestamp", ts, "ownerReferences", "apiVersion",
	    "ray.io/v1", "kind", "RayCronJob", "name", cron->name, "uid", cron->uid,
	    "controller", 1, "blockOwnerDeletion", 1, "spec", tmpl);
	if (b == NULL)
		return NULL;
	o = create(cs, cl, "rayjobs", cron->ns, name, "raycronjob-controller", b);
	json_decref(b);
	return o;
}
