/* kuberay_auth: Ray clusters closed to other tenants (issue 25) — spec.authOptions (token
 * auth), the Secret holding the job's token, the attempt's NetworkPolicy and the dashboard
 * ingress.  Pure: struct in, json_t out.
 *
 * KubeRay 1.7 (ray-project/kuberay v1.7.0, commit 59d663aeec13760646da3db9c1cf8cfe883e30b7,
 * ray-operator/apis/ray/v1/raycluster_types.go "AuthOptions"; sample
 * ray-operator/config/samples/ray-cluster.auth.secret-ref.yaml): authOptions {mode: token,
 * secretName} makes the operator set RAY_AUTH_MODE=token and RAY_AUTH_TOKEN (from the
 * Secret's data key auth_token) on every Ray container, and skip generating its own Secret;
 * the operator refuses mode token below Ray 2.52.0 (utils/validation.go).  Ray then requires
 * "Authorization: Bearer <token>" on the dashboard and the Jobs API
 * (https://docs.ray.io/en/latest/cluster/kubernetes/user-guides/kuberay-auth.html). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/crypto.h"
#include "providers/kuberay.h"

bool
kuberay_auth_supported(const char *v)
{
	int a = 0, b = 0, c = 0;

	if (v == NULL || sscanf(v, "%d.%d.%d", &a, &b, &c) < 2)
		return false;
	return a > 2 || (a == 2 && (b > 52 || (b == 52 && c >= 0)));
}

bool
kuberay_auth_on(const struct kuberay_input *in)
{
	return !in->auth_off && in->spec != NULL && kuberay_auth_supported(in->spec->ray_version);
}

/* A DNS-1123 subdomain: dot-separated labels of [a-z0-9-], at most 253 characters. */
static bool
dns_subdomain(const char *s)
{
	char buf[254], *save = NULL, *l;

	if (s == NULL || strlen(s) == 0 || strlen(s) > 253 || s[0] == '.' ||
	    s[strlen(s) - 1] == '.' || strstr(s, "..") != NULL)
		return false;
	snprintf(buf, sizeof(buf), "%s", s);
	for (l = strtok_r(buf, ".", &save); l != NULL; l = strtok_r(NULL, ".", &save))
		if (!jobspec_dns_label(l, 63))
			return false;
	return true;
}

/* Labels of the attempt's objects: the job, attempt, queue and environment. */
static json_t *
meta(const struct kuberay_input *in, const char *ns, const char *name)
{
	const char *queue = in->queue ? in->queue : in->spec->queue;
	char at[16];

	snprintf(at, sizeof(at), "%d", in->attempt);
	return json_pack("{s:s, s:s, s:{s:s, s:s, s:s, s:s, s:s}}", "name", name,
	    "namespace", ns, "labels", "app.kubernetes.io/managed-by", "fleetd",
	    "fleet.io/job-id", in->job_id, "fleet.io/queue", queue,
	    "fleet.io/environment", in->environment, "fleet.io/attempt", at);
}

json_t *
kuberay_auth_secret(const struct kuberay_input *in, struct err *e)
{
	char ns[64], name[64], *b64;
	json_t *out;

	if (in->spec == NULL || in->environment == NULL || in->auth_token == NULL ||
	    in->auth_token[0] == '\0')
		return err_set(e, 422, "kuberay.bad_input", "the auth secret needs a spec and a "
		    "token"), NULL;
	if (!kuberay_signal_where(in, ns, sizeof(ns), name, sizeof(name), e))
		return NULL;
	if ((b64 = crypto_b64_encode(in->auth_token, strlen(in->auth_token))) == NULL)
		return err_set(e, 500, "kuberay.encode", "cannot encode the token"), NULL;
	out = json_pack("{s:s, s:s, s:o, s:s, s:{s:s}}", "apiVersion", "v1", "kind", "Secret",
	    "metadata", meta(in, ns, name), "type", "Opaque", "data", KUBERAY_AUTH_KEY, b64);
	memset(b64, 0, strlen(b64));
	free(b64);
	return out;
}

static json_t *
port(int p)
{
	return json_pack("{s:s, s:i}", "protocol", "TCP", "port", p);
}

/* A peer: pods of the policy's namespace with these labels. */
static json_t *
pods_peer(json_t *labels)
{
	return json_pack("{s:{s:o}}", "podSelector", "matchLabels", labels);
}

/* A peer: every pod of namespace ns (the label the API server sets on every namespace,
 * https://kubernetes.io/docs/reference/labels-annotations-taints/#kubernetes-io-metadata-name). */
static json_t *
ns_peer(const char *ns)
{
	return json_pack("{s:{s:{s:s}}}", "namespaceSelector", "matchLabels",
	    "kubernetes.io/metadata.name", ns);
}

json_t *
kuberay_network_policy(const struct kuberay_input *in, struct err *e)
{
	char ns[64], name[64], obj[64];
	json_t *rules, *sub;

	if (in->spec == NULL || in->environment == NULL)
		return err_set(e, 422, "kuberay.bad_input", "the network policy needs a spec"), NULL;
	if (!kuberay_signal_where(in, ns, sizeof(ns), name, sizeof(name), e))
		return NULL;
	/* https://kubernetes.io/docs/concepts/services-networking/network-policies/: a pod
	 * selected by an Ingress policy admits only what some rule of some policy allows; the
	 * rules of one policy are ORed, the peers of one rule are ORed, ports restrict a rule */
	rules = json_array();
	/* the job's own pods (every attempt's: head, workers), on any port: Ray's GCS, raylet,
	 * object manager and worker ports are many and partly random */
	json_array_append_new(rules, json_pack("{s:[o]}", "from", pods_peer(json_pack("{s:s}",
	    "fleet.io/job-id", in->job_id))));
	/* fleetd's path: fleetd reaches a member only through its Kubernetes API (server-side
	 * apply, status), never pod to pod; the KubeRay operator it drives calls the head's
	 * dashboard (job status, HTTPMode submission, RayService serve API) and agent ports */
	json_array_append_new(rules, json_pack("{s:[o], s:[o, o]}", "from",
	    ns_peer(in->operator_ns ? in->operator_ns : "default"), "ports",
	    port(KUBERAY_DASHBOARD_PORT), port(KUBERAY_AGENT_PORT)));
	/* a RayJob's submitter (K8sJobMode): a Job's pod the operator labels with the RayJob's
	 * name (ray-operator/controllers/ray/rayjob_controller.go, RayOriginatedFromCR*); a
	 * RayCronJob's runs are RayJobs named by the operator: any RayJob's submitter of the
	 * namespace (one queue's, one team's) */
	if (in->spec->kind == JOBSPEC_RAYJOB || in->spec->kind == JOBSPEC_RAYCRONJOB) {
		sub = json_pack("{s:s}", "ray.io/originated-from-crd", "RayJob");
		if (in->spec->kind == JOBSPEC_RAYJOB) {
			if (!kuberay_object_name(in->spec->kind, in->spec->name, in->job_id,
			    in->attempt, obj, sizeof(obj))) {
				json_decref(sub);
				json_decref(rules);
				return err_set(e, 422, "kuberay.bad_input", "cannot derive an object "
				    "name"), NULL;
			}
			json_object_set_new(sub, "ray.io/originated-from-cr-name", json_string(obj));
		}
		json_array_append_new(rules, json_pack("{s:[o], s:[o]}", "from", pods_peer(sub),
		    "ports", port(KUBERAY_DASHBOARD_PORT)));
	}
	/* a RayService's Serve endpoint (port 8000 of its <name>-serve-svc) is the
	 * application its clients hold, wherever they run: open, the Ray ports stay closed */
	if (in->spec->kind == JOBSPEC_RAYSERVICE)
		json_array_append_new(rules, json_pack("{s:[o]}", "ports", port(KUBERAY_SERVE_PORT)));
	if (in->ingress != NULL)
		json_array_append_new(rules, json_pack("{s:[o], s:[o]}", "from",
		    ns_peer(in->ingress->controller_ns ? in->ingress->controller_ns :
		    "ingress-nginx"), "ports", port(KUBERAY_DASHBOARD_PORT)));
	return json_pack("{s:s, s:s, s:o, s:{s:{s:{s:s}}, s:[s], s:o}}",
	    "apiVersion", "networking.k8s.io/v1", "kind", "NetworkPolicy",
	    "metadata", meta(in, ns, name), "spec", "podSelector", "matchLabels",
	    "fleet.io/job-id", in->job_id, "policyTypes", "Ingress", "ingress", rules);
}

bool
kuberay_auth_cluster(const struct kuberay_input *in, const char *secret, json_t *cs,
    struct err *e)
{
	const struct kuberay_ingress *g = in->ingress;
	json_t *head = json_object_get(cs, "headGroupSpec"), *opt;

	if (kuberay_auth_on(in))
		json_object_set_new(cs, "authOptions", json_pack("{s:s, s:s}", "mode", "token",
		    "secretName", secret));
	if (g == NULL)
		return true;
	/* the dashboard runs code (the Jobs API): never exposed without the token */
	if (!kuberay_auth_on(in))
		return err_set(e, 422, "kuberay.ingress_needs_auth", "a dashboard ingress needs "
		    "token auth (ray %s or newer)", KUBERAY_AUTH_MIN_RAY);
	if (g->host == NULL || !dns_subdomain(g->host) ||
	    (g->path_type != NULL && strcmp(g->path_type, "Exact") != 0 &&
	    strcmp(g->path_type, "Prefix") != 0 &&
	    strcmp(g->path_type, "ImplementationSpecific") != 0) ||
	    (g->path != NULL && g->path[0] != '/') ||
	    (g->tls_secret != NULL && !dns_subdomain(g->tls_secret)))
		return err_set(e, 422, "kuberay.bad_ingress", "the dashboard ingress needs a host, "
		    "a path starting with / and a known path type");
	/* KubeRay 1.7 CRD, headGroupSpec: enableIngress, ingressOptions {host, path, pathType,
	 * tls [{hosts, secretName}]} */
	opt = json_pack("{s:s, s:s, s:s}", "host", g->host, "path", g->path ? g->path : "/",
	    "pathType", g->path_type ? g->path_type : "Prefix");
	if (g->tls_secret != NULL)
		json_object_set_new(opt, "tls", json_pack("[{s:[s], s:s}]", "hosts", g->host,
		    "secretName", g->tls_secret));
	json_object_set_new(head, "enableIngress", json_true());
	json_object_set_new(head, "ingressOptions", opt);
	return true;
}

bool
kuberay_dashboard_url(const json_t *manifest, char *buf, size_t len)
{
	json_t *md = json_object_get(manifest, "metadata");
	const char *kind = json_string_value(json_object_get(manifest, "kind"));
	const char *name = json_string_value(json_object_get(md, "name"));
	const char *ns = json_string_value(json_object_get(md, "namespace"));

	if (kind == NULL || name == NULL || ns == NULL || (strcmp(kind, "RayCluster") != 0 &&
	    strcmp(kind, "RayService") != 0))
		return false;
	/* the operator's head service: <RayCluster name>-head-svc; a RayService's is
	 * <RayService name>-head-svc, kept across its clusters (docs.ray.io, "RayService") */
	return snprintf(buf, len, "http://%s-head-svc.%s.svc.cluster.local:%d", name, ns,
	    KUBERAY_DASHBOARD_PORT) < (int)len;
}
