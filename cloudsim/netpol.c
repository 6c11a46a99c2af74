/* cloudsim netpol: pod-to-pod traffic on a member cluster, as the stored NetworkPolicies
 * (networking.k8s.io/v1, kplain.c) and a Ray head's token auth let it through — POST
 * /_sim/connect {cluster, from: {namespace, pod | labels}, to: {namespace, pod | object},
 * port, authorization?}.  Answers {connected, policies, allowed_by, status}: status is what
 * the head's dashboard answers on port 8265 (Ray token auth: 401 without a token, 403 with
 * another, 200 with the Secret's).
 *
 * NetworkPolicy semantics (https://kubernetes.io/docs/concepts/services-networking/
 * network-policies/): a pod no Ingress policy of its namespace selects admits everything;
 * a selected pod admits a connection only when a rule of one of those policies admits it.
 * A rule admits when one of its peers matches the source (or it has no "from") and one of
 * its ports matches (or it has none).  A peer with podSelector alone means pods of the
 * policy's namespace; namespaceSelector alone every pod of matching namespaces; both,
 * matching pods of matching namespaces.  ipBlock peers (cluster-external CIDRs) match no
 * pod here. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cloudsim/cs.h"
#include "core/crypto.h"
#include "core/jsonx.h"

/* A label selector (matchLabels, matchExpressions: In, NotIn, Exists, DoesNotExist)
 * against labels; an empty selector matches everything, NULL nothing. */
static bool
selects(json_t *sel, json_t *labels)
{
	const char *k;
	json_t *v, *x, *vals, *have;
	size_t i, j;

	if (!json_is_object(sel))
		return false;
	json_object_foreach(json_object_get(sel, "matchLabels"), k, v) {
		have = json_object_get(labels, k);
		if (!json_is_string(have) || !json_equal(have, v))
			return false;
	}
	json_array_foreach(json_object_get(sel, "matchExpressions"), i, x) {
		const char *key = json_string_value(json_object_get(x, "key"));
		const char *op = json_string_value(json_object_get(x, "operator"));
		bool in = false;

		if (key == NULL || op == NULL)
			return false;
		have = json_object_get(labels, key);
		vals = json_object_get(x, "values");
		json_array_foreach(vals, j, v)
			in |= json_is_string(have) && json_equal(have, v);
		if ((strcmp(op, "In") == 0 && !in) || (strcmp(op, "NotIn") == 0 && in) ||
		    (strcmp(op, "Exists") == 0 && have == NULL) ||
		    (strcmp(op, "DoesNotExist") == 0 && have != NULL))
			return false;
	}
	return true;
}

/* Namespace ns's labels (kubernetes.io/metadata.name always). */
static json_t *
ns_labels(struct cs_cluster *cl, const char *ns)
{
	json_t *v, *l;
	size_t i;

	json_array_foreach(cl->namespaces, i, v)
		if (strcmp(jsonx_meta_str(v, "name") ? jsonx_meta_str(v, "name") : "", ns) == 0) {
			l = json_deep_copy(jsonx_meta(v, "labels"));
			if (l == NULL)
				l = json_object();
			json_object_set_new(l, "kubernetes.io/metadata.name", json_string(ns));
			return l;
		}
	return json_pack("{s:s}", "kubernetes.io/metadata.name", ns);
}

static bool
peer_matches(struct cs_cluster *cl, json_t *peer, const char *policy_ns, const char *src_ns,
    json_t *src_labels)
{
	json_t *ps = json_object_get(peer, "podSelector"), *nss = json_object_get(peer,
	    "namespaceSelector"), *nl;
	bool ok;

	if (ps == NULL && nss == NULL)
		return false;	/* ipBlock: no pod */
	if (nss == NULL)
		return strcmp(src_ns, policy_ns) == 0 && selects(ps, src_labels);
	nl = ns_labels(cl, src_ns);
	ok = selects(nss, nl) && (ps == NULL || selects(ps, src_labels));
	json_decref(nl);
	return ok;
}

/* A port entry: port (number, or a container port's name on the destination) and
 * protocol (TCP when absent); endPort makes a range. */
static bool
port_matches(json_t *pe, int port, json_t *dst_pod)
{
	json_t *p = json_object_get(pe, "port"), *c, *cp;
	const char *proto = json_string_value(json_object_get(pe, "protocol"));
	size_t i, j;

	if (proto != NULL && strcmp(proto, "TCP") != 0)
		return false;
	if (p == NULL)
		return true;
	if (json_is_integer(p)) {
		json_int_t end = json_integer_value(json_object_get(pe, "endPort"));

		return port == json_integer_value(p) || (end > 0 && port >= json_integer_value(p) &&
		    port <= end);
	}
	json_array_foreach(json_object_get(json_object_get(dst_pod, "spec"), "containers"), i, c)
		json_array_foreach(json_object_get(c, "ports"), j, cp)
			if (json_is_string(p) && json_equal(json_object_get(cp, "name"), p) &&
			    json_integer_value(json_object_get(cp, "containerPort")) == port)
				return true;
	return false;
}

/* Whether rule r of a policy in policy_ns admits the source on port. */
static bool
rule_admits(struct cs_cluster *cl, json_t *r, const char *policy_ns, const char *src_ns,
    json_t *src_labels, int port, json_t *dst_pod)
{
	json_t *from = json_object_get(r, "from"), *ports = json_object_get(r, "ports"), *v;
	bool peer = json_array_size(from) == 0, portok = json_array_size(ports) == 0;
	size_t i;

	json_array_foreach(from, i, v)
		peer = peer || peer_matches(cl, v, policy_ns, src_ns, src_labels);
	json_array_foreach(ports, i, v)
		portok = portok || port_matches(v, port, dst_pod);
	return peer && portok;
}

/* An Ingress policy: policyTypes names Ingress, or (absent) always (the API server's
 * default puts Ingress in every policy). */
static bool
is_ingress(json_t *spec)
{
	json_t *t = json_object_get(spec, "policyTypes"), *v;
	size_t i;

	if (t == NULL)
		return true;
	json_array_foreach(t, i, v)
		if (strcmp(json_string_value(v) ? json_string_value(v) : "", "Ingress") == 0)
			return true;
	return false;
}

static struct cs_pod *
find_pod(struct cs_cluster *cl, const char *ns, const char *name, const char *object)
{
	for (size_t i = 0; i < cl->pods.n; i++) {
		struct cs_pod *p = cl->pods.v[i];

		if (strcmp(p->ns, ns) != 0)
			continue;
		if (name != NULL && strcmp(p->name, name) == 0)
			return p;
		if (object != NULL && p->head) {
			for (size_t k = 0; k < cl->objects.n; k++) {
				struct cs_object *o = cl->objects.v[k];

				if (!o->deleted && strcmp(o->uid, p->owner_uid) == 0 &&
				    strcmp(o->name, object) == 0)
					return p;
			}
		}
	}
	return NULL;
}

/* What the head's dashboard answers: its Ray object's authOptions name the Secret whose
 * auth_token the Authorization header must carry as a bearer token. */
static int
dashboard_status(struct cs_cluster *cl, struct cs_pod *head, const char *authz)
{
	struct cs_object *o = NULL;
	json_t *spec, *cs, *ao, *sec;
	const char *secret, *b64, *tok;
	uint8_t *raw;
	size_t n = 0;
	int st;

	for (size_t k = 0; k < cl->objects.n; k++)
		if (strcmp(((struct cs_object *)cl->objects.v[k])->uid, head->owner_uid) == 0)
			o = cl->objects.v[k];
	if (o == NULL)
		return 404;
	spec = json_object_get(o->live, "spec");
	cs = strcmp(o->kind, "RayJob") == 0 ? json_object_get(spec, "rayClusterSpec") :
	    strcmp(o->kind, "RayService") == 0 ? json_object_get(spec, "rayClusterConfig") : spec;
	ao = json_object_get(cs, "authOptions");
	if (ao == NULL || strcmp(json_string_value(json_object_get(ao, "mode")) ?
	    json_string_value(json_object_get(ao, "mode")) : "token", "token") != 0)
		return 200;	/* no token auth: the dashboard is open */
	if (authz == NULL || strncmp(authz, "Bearer ", 7) != 0)
		return 401;
	tok = authz + 7;
	secret = json_string_value(json_object_get(ao, "secretName"));
	sec = secret ? cs_plain_get(cl, "secrets", o->ns, secret) : NULL;
	b64 = json_string_value(json_object_get(json_object_get(sec, "data"), "auth_token"));
	/* the operator would leave the pods without RAY_AUTH_TOKEN: the head never starts */
	if (b64 == NULL || (raw = crypto_b64_decode(b64, &n)) == NULL)
		return 503;
	st = n == strlen(tok) && crypto_equal(raw, tok, n) ? 200 : 403;
	free(raw);
	return st;
}

void
cs_connect_sim(struct cs *cs, struct cs_req *rq, json_t *body)
{
	struct cs_cluster *cl = cs_cluster_find(cs, json_string_value(json_object_get(body,
	    "cluster")));
	json_t *from = json_object_get(body, "from"), *to = json_object_get(body, "to");
	const char *sns = json_string_value(json_object_get(from, "namespace"));
	const char *dns = json_string_value(json_object_get(to, "namespace"));
	int port = (int)json_integer_value(json_object_get(body, "port"));
	json_t *slabels = NULL, *pols = json_array(), *v, *dlabels;
	struct cs_pod *dst, *src = NULL;
	const char *k, *allowed_by = NULL;
	bool selected = false;
	int status = 0;

	if (cl == NULL || sns == NULL || dns == NULL || port <= 0 || port > 65535) {
		json_decref(pols);
		cs_reply_error(rq, 400, "sim.bad_connect", "need cluster, from.namespace, "
		    "to.namespace and a port");
		return;
	}
	dst = find_pod(cl, dns, json_string_value(json_object_get(to, "pod")),
	    json_string_value(json_object_get(to, "object")));
	if (dst == NULL) {
		json_decref(pols);
		cs_reply_error(rq, 404, "sim.no_pod", "no such destination pod");
		return;
	}
	if (json_string_value(json_object_get(from, "pod")) != NULL) {
		src = find_pod(cl, sns, json_string_value(json_object_get(from, "pod")), NULL);
		if (src == NULL) {
			json_decref(pols);
			cs_reply_error(rq, 404, "sim.no_pod", "no such source pod");
			return;
		}
		slabels = json_incref(jsonx_meta(src->obj, "labels"));
	} else {
		/* a pod the simulation does not run (a tenant's own workload): its labels */
		slabels = json_incref(json_object_get(from, "labels"));
	}
	if (slabels == NULL)
		slabels = json_object();
	dlabels = jsonx_meta(dst->obj, "labels");
	json_object_foreach(cl->plain, k, v) {
		json_t *spec = json_object_get(v, "spec"), *r;
		const char *pname = jsonx_meta_str(v, "name");
		size_t i;

		if (strncmp(k, "networkpolicies/", 16) != 0 ||
		    strcmp(jsonx_meta_str(v, "namespace") ? jsonx_meta_str(v, "namespace") : "",
		    dns) != 0 || !is_ingress(spec) ||
		    !selects(json_object_get(spec, "podSelector"), dlabels))
			continue;
		selected = true;
		json_array_append_new(pols, json_string(pname ? pname : ""));
		json_array_foreach(json_object_get(spec, "ingress"), i, r)
			if (allowed_by == NULL && rule_admits(cl, r, dns, sns, slabels, port,
			    dst->obj))
				allowed_by = pname ? pname : "";
	}
	if ((!selected || allowed_by != NULL) && port == 8265 && dst->head)
		status = dashboard_status(cl, dst, json_string_value(json_object_get(body,
		    "authorization")));
	cs_reply_json(rq, 200, json_pack("{s:b, s:o, s:s?, s:i}", "connected", !selected ||
	    allowed_by != NULL, "policies", pols, "allowed_by", allowed_by, "status", status));
	json_decref(slabels);
}
