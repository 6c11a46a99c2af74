/* cloudsim ktable: server-side printing — a list or object answered as a meta.k8s.io/v1
 * Table when the client asks for one (Accept: ...;as=Table), with the columns kubectl shows
 * for pods, nodes, namespaces, events and pod templates, and the KubeRay CRDs' printer
 * columns (other kinds: Name and Age, what a CRD without printer columns shows). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cloudsim/cs.h"

bool
cs_wants_table(struct cs_req *rq)
{
	const char *a = cs_header(rq, "Accept");

	return a != NULL && strstr(a, "as=Table") != NULL && !cs_is_watch(rq);
}

static json_t *
age(struct cs *cs, const char *ts)
{
	struct tm tm;
	double d;

	memset(&tm, 0, sizeof(tm));
	if (ts == NULL || strptime(ts, "%Y-%m-%dT%H:%M:%S", &tm) == NULL)
		return json_string("<unknown>");
	d = cs_now(cs) - (double)timegm(&tm);
	if (d < 0)
		d = 0;
	if (d < 120)
		return json_sprintf("%ds", (int)d);
	if (d < 7200)
		return json_sprintf("%dm", (int)(d / 60));
	if (d < 172800)
		return json_sprintf("%dh", (int)(d / 3600));
	return json_sprintf("%dd", (int)(d / 86400));
}

static json_t *
col(const char *name, const char *type, int prio)
{
	return json_pack("{s:s, s:s, s:s, s:s, s:i}", "name", name, "type", type, "format",
	    strcmp(name, "Name") == 0 ? "name" : "", "description", "", "priority", prio);
}

/* Appends a string column per name (NULL-terminated) to cols (NULL: nothing); the ones
 * from index wide on (-1: none) only show with -o wide (priority 1). */
static void
add_cols(json_t *cols, const char *const *names, int wide)
{
	for (int i = 0; cols != NULL && names[i] != NULL; i++)
		json_array_append_new(cols, col(names[i], "string", wide >= 0 && i >= wide));
}

static const char *
str(json_t *o, const char *path, const char *def)
{
	const char *v = cs_jpath(o, path);

	return v ? v : def;
}

static json_t *
pod_cells(struct cs *cs, json_t *p, json_t *cols)
{
	static const char *const names[] = {
	    "Name", "Ready", "Status", "Restarts", "Age", "IP", "Node", NULL };
	json_t *cs0 = json_array_get(cs_jpath(p, "status.phase") ? json_object_get(
	    json_object_get(p, "status"), "containerStatuses") : NULL, 0);
	const char *phase = str(p, "status.phase", "Pending"),
	    *waiting = cs_jpath(cs0, "state.waiting.reason"),
	    *term = cs_jpath(cs0, "state.terminated.reason");
	json_t *rc = json_object_get(cs0, "restartCount");
	bool ready = json_is_boolean(json_object_get(cs0, "ready")) ?
	    json_is_true(json_object_get(cs0, "ready")) : strcmp(phase, "Running") == 0;
	char restarts[24];

	/* kubectl's columns: the container's waiting or terminated reason over the phase */
	snprintf(restarts, sizeof(restarts), "%lld", json_is_integer(rc) ?
	    (long long)json_integer_value(rc) : 0LL);
	add_cols(cols, names, 5);
	return json_pack("[s, s, s, s, o, s, s]", str(p, "metadata.name", ""), ready ? "1/1" :
	    "0/1", waiting ? waiting : term ? term : phase, restarts, age(cs, cs_jpath(p,
	    "metadata.creationTimestamp")), str(p, "status.podIP", "<none>"), str(p,
	    "spec.nodeName", "<none>"));
}

static json_t *
node_cells(struct cs *cs, json_t *n, json_t *cols)
{
	static const char *const names[] = {
	    "Name", "Status", "Roles", "Age", "Version", NULL };
	json_t *c = json_array_get(json_object_get(json_object_get(n, "status"), "conditions"),
	    0);
	char st[64];

	add_cols(cols, names, -1);
	snprintf(st, sizeof(st), "%s%s", strcmp(str(c, "status", ""), "True") == 0 ? "Ready" :
	    "NotReady", json_is_true(json_object_get(json_object_get(n, "spec"),
	    "unschedulable")) ? ",SchedulingDisabled" : "");
	return json_pack("[s, s, s, o, s]", str(n, "metadata.name", ""), st, "<none>", age(cs,
	    cs_jpath(n, "metadata.creationTimestamp")), str(n, "status.nodeInfo.kubeletVersion",
	    ""));
}

static json_t *
ns_cells(struct cs *cs, json_t *n, json_t *cols)
{
	static const char *const names[] = { "Name", "Status", "Age", NULL };

	add_cols(cols, names, -1);
	return json_pack("[s, s, o]", str(n, "metadata.name", ""), "Active", age(cs, cs_jpath(n,
	    "metadata.creationTimestamp")));
}

static json_t *
event_cells(struct cs *cs, json_t *e, json_t *cols)
{
	static const char *const names[] = {
	    "Last Seen", "Type", "Reason", "Object", "Message", NULL };

	add_cols(cols, names, -1);
	return json_pack("[o, s, s, o, s]", age(cs, cs_jpath(e, "lastTimestamp")), str(e, "type",
	    ""), str(e, "reason", ""), json_sprintf("%s/%s", str(e, "involvedObject.kind", ""),
	    str(e, "involvedObject.name", "")), str(e, "message", ""));
}

/* A KubeRay kind: Name and the CRD's additionalPrinterColumns (simple .a.b paths). */
static json_t *
ray_cells(struct cs *cs, const char *plural, json_t *o, json_t *cols)
{
	char key[64];
	json_t *pc, *c, *cells = json_array();
	size_t i;

	snprintf(key, sizeof(key), "%s/columns", plural);
	pc = json_object_get(cs->crds, key);
	if (cols != NULL)
		json_array_append_new(cols, col("Name", "string", 0));
	json_array_append_new(cells, json_string(str(o, "metadata.name", "")));
	json_array_foreach(pc, i, c) {
		const char *path = str(c, "jsonPath", "."), *type = str(c, "type", "string");
		const char *v;
		json_t *raw;

		if (cols != NULL)
			json_array_append_new(cols, col(str(c, "name", ""), strcmp(type, "date") == 0 ?
			    "string" : type, (int)json_integer_value(json_object_get(c, "priority"))));
		v = cs_jpath(o, path + (path[0] == '.'));
		raw = NULL;
		if (v == NULL) {	/* numbers and booleans */
			char buf[256], *p = buf, *k;

			snprintf(buf, sizeof(buf), "%s", path + (path[0] == '.'));
			raw = o;
			while ((k = strsep(&p, ".")) != NULL)
				raw = json_object_get(raw, k);
		}
		if (strcmp(type, "date") == 0 && v != NULL)
			json_array_append_new(cells, age(cs, v));
		else if (v != NULL)
			json_array_append_new(cells, json_string(v));
		else if (raw != NULL)
			json_array_append(cells, raw);
		else
			json_array_append_new(cells, json_null());
	}
	if (json_array_size(pc) == 0) {
		if (cols != NULL)
			json_array_append_new(cols, col("Age", "string", 0));
		json_array_append_new(cells, age(cs, cs_jpath(o, "metadata.creationTimestamp")));
	}
	return cells;
}

static int
cmp_str(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* A PodTemplate's row as the API server prints it (kubernetes
 * pkg/printers/internalversion/printers.go, printPodTemplate: the containers' names and
 * images joined by commas, the template's labels as k=v sorted by key, <none> without;
 * no Age column):
 * https://github.com/kubernetes/kubernetes/blob/master/pkg/printers/internalversion/printers.go */
static json_t *
podtemplate_cells(json_t *o, json_t *cols)
{
	static const char *const names[] = { "Name", "Containers", "Images", "Pod Labels", NULL };
	json_t *tmpl = json_object_get(o, "template"), *c, *v;
	json_t *lb = json_object_get(json_object_get(tmpl, "metadata"), "labels");
	json_t *ctrs = json_object_get(json_object_get(tmpl, "spec"), "containers");
	const char **keys = calloc(json_object_size(lb) + 1, sizeof(*keys)), *k;
	char cn[512] = "", im[1024] = "", lab[1024] = "";
	size_t i, n = 0, off;

	add_cols(cols, names, -1);
	json_array_foreach(ctrs, i, c) {
		off = strlen(cn);
		snprintf(cn + off, sizeof(cn) - off, "%s%s", i ? "," : "", str(c, "name", ""));
		off = strlen(im);
		snprintf(im + off, sizeof(im) - off, "%s%s", i ? "," : "", str(c, "image", ""));
	}
	json_object_foreach(lb, k, v) {
		(void)v;
		keys[n++] = k;
	}
	qsort(keys, n, sizeof(*keys), cmp_str);
	for (i = 0; i < n; i++) {
		off = strlen(lab);
		snprintf(lab + off, sizeof(lab) - off, "%s%s=%s", i ? "," : "", keys[i],
		    json_string_value(json_object_get(lb, keys[i])) ?
		    json_string_value(json_object_get(lb, keys[i])) : "");
	}
	free(keys);
	return json_pack("[s, s, s, s]", str(o, "metadata.name", ""), cn, im,
	    n ? lab : "<none>");
}

static json_t *
cells(struct cs *cs, const char *kind, json_t *o, json_t *cols)
{
	const char *plural = NULL;
	static const char *const ray[] = { "rayclusters", "rayjobs", "rayservices",
	    "raycronjobs" };

	if (strcmp(kind, "Pod") == 0)
		return pod_cells(cs, o, cols);
	if (strcmp(kind, "Node") == 0)
		return node_cells(cs, o, cols);
	if (strcmp(kind, "Namespace") == 0)
		return ns_cells(cs, o, cols);
	if (strcmp(kind, "Event") == 0)
		return event_cells(cs, o, cols);
	if (strcmp(kind, "PodTemplate") == 0)
		return podtemplate_cells(o, cols);
	for (size_t i = 0; i < 4; i++)
		if (strcmp(cs_kind_of(ray[i]), kind) == 0)
			plural = ray[i];
	return ray_cells(cs, plural ? plural : "", o, cols);
}

json_t *
cs_table(struct cs *cs, const char *kind, json_t *items, json_t *list_meta)
{
	json_t *cols = json_array(), *rows = json_array(), *it;
	size_t i;

	json_array_foreach(items, i, it)
		json_array_append_new(rows, json_pack("{s:o, s:O}", "cells", cells(cs, kind, it,
		    i == 0 ? cols : NULL), "object", it));
	if (json_array_size(items) == 0) {	/* the columns still */
		json_t *empty = json_object();

		json_decref(cells(cs, kind, empty, cols));
		json_decref(empty);
	}
	return json_pack("{s:s, s:s, s:o, s:o, s:o}", "kind", "Table", "apiVersion",
	    "meta.k8s.io/v1", "metadata", list_meta ? json_incref(list_meta) : json_object(),
	    "columnDefinitions", cols, "rows", rows);
}

void
cs_reply_object(struct cs *cs, struct cs_req *rq, const char *kind, json_t *obj)
{
	json_t *one;

	if (!cs_wants_table(rq)) {
		cs_reply_json(rq, 200, json_incref(obj));
		return;
	}
	one = json_pack("[O]", obj);
	cs_reply_json(rq, 200, cs_table(cs, kind, one, NULL));
	json_decref(one);
}
