/* hyperpod: the SageMaker HyperPod driver — DescribeCluster instance groups and
 * ListClusterNodes (JSON 1.1, X-Amz-Target, NextToken) signed with SigV4 under the
 * assumed role, and phase-2 checks with STS AssumeRole and IAM GetRole tags. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/config.h"
#include "providers/creds_int.h"
#include "providers/provider.h"

#define TAG_CLOUD	"fleet.io/cloud-id"
#define JSON11		"application/x-amz-json-1.1"

static long long
jint(json_t *v)
{
	return prov_json_count(v, -1);
}

bool
prov_hyperpod_parse_cluster(const char *body, size_t len, struct prov_pools *out,
    struct err *e)
{
	json_t *j = prov_json_object(body, len, "sagemaker describe cluster", e), *groups, *g;
	size_t i;

	if (j == NULL)
		return false;
	groups = json_object_get(j, "InstanceGroups");
	if (!json_is_array(groups)) {
		json_decref(j);
		return err_set(e, 502, "prov.bad_answer", "sagemaker describe cluster: no "
		    "InstanceGroups");
	}
	json_array_foreach(groups, i, g) {
		const char *name = json_string_value(json_object_get(g, "InstanceGroupName")),
		    *type = json_string_value(json_object_get(g, "InstanceType"));
		long long cur = jint(json_object_get(g, "CurrentCount")),
		    tgt = jint(json_object_get(g, "TargetCount"));
		struct prov_pool *p;

		if (name == NULL || type == NULL || cur < 0 || cur > 100000 || tgt > 100000) {
			json_decref(j);
			return err_set(e, 502, "prov.bad_answer", "sagemaker describe cluster: "
			    "instance group %zu lacks name, type or a sane count", i);
		}
		p = prov_pools_find(out, name);
		if (p == NULL)
			p = prov_pools_add(out);
		snprintf(p->name, sizeof(p->name), "%s", name);
		snprintf(p->machine_type, sizeof(p->machine_type), "%s", type);
		p->nodes = (int)cur;
		/* An instance group on a SageMaker training plan (reserved capacity, AWS
		 * capacity blocks) names it in TrainingPlanArn (issue 27):
		 * https://docs.aws.amazon.com/sagemaker/latest/APIReference/API_ClusterInstanceGroupDetails.html */
		if (json_string_value(json_object_get(g, "TrainingPlanArn")) != NULL)
			snprintf(p->capacity_type, sizeof(p->capacity_type), "reservation");
		p->min_nodes = (int)cur;
		p->max_nodes = (int)(tgt > cur ? tgt : cur);
	}
	out->pages++;
	json_decref(j);
	return true;
}

bool
prov_hyperpod_parse_nodes(const char *body, size_t len, struct prov_pools *out, char **next,
    struct err *e)
{
	json_t *j = prov_json_object(body, len, "sagemaker list cluster nodes", e), *list, *n,
	    *counts;
	size_t i;

	*next = NULL;
	if (j == NULL)
		return false;
	list = json_object_get(j, "ClusterNodeSummaries");
	if (!json_is_array(list)) {
		json_decref(j);
		return err_set(e, 502, "prov.bad_answer", "sagemaker list cluster nodes: no "
		    "ClusterNodeSummaries");
	}
	if (out->extra == NULL)
		out->extra = json_object();
	counts = json_object_get(out->extra, "running");
	if (counts == NULL) {
		counts = json_object();
		json_object_set_new(out->extra, "running", counts);
	}
	json_array_foreach(list, i, n) {
		const char *g = json_string_value(json_object_get(n, "InstanceGroupName")),
		    *st = json_string_value(json_object_get(json_object_get(n, "InstanceStatus"),
		    "Status"));
		json_t *c;

		if (g == NULL)
			continue;
		c = json_object_get(counts, g);
		if (c == NULL) {
			c = json_integer(0);
			json_object_set_new(counts, g, c);
		}
		if (st != NULL && strcmp(st, "Running") == 0)
			json_integer_set(c, json_integer_value(c) + 1);
	}
	prov_json_next(json_object_get(j, "NextToken"), next);
	out->pages++;
	json_decref(j);
	return true;
}

static void
hyperpod_finish(struct prov_pools *out)
{
	json_t *running = json_object_get(out->extra, "running");

	for (size_t i = 0; i < out->n; i++) {
		json_t *c = json_object_get(running, out->v[i].name);

		if (json_is_integer(c)) {
			out->v[i].nodes = (int)json_integer_value(c);
			if (out->v[i].max_nodes < out->v[i].nodes)
				out->v[i].max_nodes = out->v[i].nodes;
		}
	}
}

/* ---- requests */

struct page_ctx {
	struct prov_pool_job	*job;
	int			 kind;	/* 0 describe cluster, 1 list nodes */
};

static bool sm_call(struct prov_fetch *f, struct prov_pool_job *job, int kind,
    const char *next, struct err *e);

/* SageMaker answers an expired or unknown session with 400: a credentials refusal too. */
static bool
sm_status_err(const struct http_resp *r, const char *what, struct err *e)
{
	char why[400];

	prov_status_err(r, what, e);
	creds_aws_error(r, why, sizeof(why));
	if (strstr(why, "ExpiredToken") != NULL || strstr(why, "InvalidClientTokenId"))
		err_set(e, 401, "prov.unauthorized", "%s: %s", what, why);
	return false;
}

static void
sm_done(struct prov_fetch *f, void *ctx, struct http_resp *r, const struct err *e)
{
	struct prov_pool_job *job = ((struct page_ctx *)ctx)->job;
	int kind = ((struct page_ctx *)ctx)->kind;
	const char *what = kind == 0 ? "sagemaker describe cluster" :
	    "sagemaker list cluster nodes";
	struct err pe = { 0 };
	char *next = NULL;
	bool ok;

	free(ctx);
	if (!prov_page_ok(f, r, e, what, sm_status_err))
		return;
	if (kind == 0)
		ok = prov_hyperpod_parse_cluster(r->body, r->body_len, job->out, &pe);
	else
		ok = prov_hyperpod_parse_nodes(r->body, r->body_len, job->out, &next, &pe);
	if (!ok) {
		prov_fetch_fail(f, &pe);
	} else if (next != NULL && prov_page_more(f, job->out->pages, "prov.paging", what)) {
		sm_call(f, job, kind, next, &pe);
	}
	free(next);
}

static bool
sm_call(struct prov_fetch *f, struct prov_pool_job *job, int kind, const char *next,
    struct err *e)
{
	struct page_ctx *ctx = calloc(1, sizeof(*ctx));
	struct prov_aws_sig *sig = calloc(1, sizeof(*sig));
	const struct prov_creds *cr = job->creds;
	struct http_req rq = { 0 };
	json_t *b;
	char *body, url[256];
	bool ok = false;

	if (ctx == NULL || sig == NULL)
		abort();
	ctx->job = job;
	ctx->kind = kind;
	b = json_pack("{s:s}", "ClusterName", job->cluster->provider_cluster_id);
	if (kind == 1)
		json_object_set_new(b, "MaxResults", json_integer(100));
	if (next != NULL)
		json_object_set_new(b, "NextToken", json_string(next));
	body = json_dumps(b, JSON_COMPACT);
	json_decref(b);
	/* default: the region's own endpoint, as the SDKs build it */
	if (cfg.sagemaker_url != NULL && cfg.sagemaker_url[0] != '\0')
		snprintf(url, sizeof(url), "%s", cfg.sagemaker_url);
	else
		snprintf(url, sizeof(url), "https://api.sagemaker.%s.amazonaws.com/",
		    job->cloud->region);
	if (!prov_aws_sign("POST", url, job->cloud->region, "sagemaker",
	    cr->access_key, cr->secret_key, cr->session_token, JSON11, kind == 0 ?
	    "SageMaker.DescribeCluster" : "SageMaker.ListClusterNodes", body, sig, e)) {
		prov_fetch_fail(f, e);
		goto cleanup;
	}
	rq.method = "POST";
	rq.url = url;
	rq.body = body;
	rq.body_len = strlen(body);
	rq.headers = sig->h;
	rq.nheaders = sig->n;
	ok = prov_fetch_add(f, &rq, sm_done, ctx);
	if (ok)
		ctx = NULL;
	else
		*e = f->err;
cleanup:
	free(ctx);
	free(sig);
	free(body);
	return ok;
}

static bool
hyperpod_pools_begin(struct prov_fetch *f, struct prov_pool_job *job, struct err *e)
{
	if (!prov_cluster_id_ok(job, "arn:aws:sagemaker:", "hyperpod cluster id is not a "
	    "sagemaker cluster arn", e))
		return false;
	return sm_call(f, job, 0, NULL, e) && sm_call(f, job, 1, NULL, e);
}

static void
hyperpod_pools_finish(struct prov_pool_job *job)
{
	hyperpod_finish(job->out);
}

/* ---- phase 2 */

/* Value of tag key in an IAM GetRole XML answer, into out. */
bool
prov_hyperpod_role_tag(const char *xml, size_t len, const char *key, char *out, size_t n)
{
	char want[160];
	const char *k, *end = xml + len;

	snprintf(want, sizeof(want), "<Key>%s</Key>", key);
	k = xml ? memmem(xml, len, want, strlen(want)) : NULL;
	if (k == NULL)
		return false;
	k += strlen(want);
	return creds_xml_text(k, (size_t)(end - k), "Value", out, n);
}

static bool
check_role(const struct prov_cloud *c, const char *arn, const char *kind,
    const struct prov_creds *cr, bool temp, json_t *checks, struct err *e)
{
	struct prov_aws_sig *sig = calloc(1, sizeof(*sig));
	const char *name = strrchr(arn, '/'), *ct = "application/x-www-form-urlencoded; "
	    "charset=utf-8";
	char *body = NULL, *esc, why[512], check[64], ptr[64], tag[128];
	struct http_req rq = { 0 };
	struct http_resp r = { 0 };
	bool ok = false;

	if (sig == NULL)
		abort();
	snprintf(ptr, sizeof(ptr), "/%s", kind);
	snprintf(check, sizeof(check), "%s_exists", kind);
	if (name == NULL || strstr(arn, ":role/") == NULL) {
		prov_check_add(checks, check, false, ptr, "%s is not an iam role arn", arn);
		free(sig);
		return false;
	}
	esc = creds_form_escape(name + 1);
	if (asprintf(&body, "Action=GetRole&RoleName=%s&Version=2010-05-08", esc) < 0)
		abort();
	creds_form_free(esc);
	if (!prov_aws_sign("POST", cfg.aws_iam_url ? cfg.aws_iam_url : "https://iam.amazonaws.com",
	    "us-east-1", "iam", temp ? cr->access_key : cfg.aws_access_key_id ?
	    cfg.aws_access_key_id : "", temp ? cr->secret_key : cfg.aws_secret_access_key ?
	    cfg.aws_secret_access_key : "",
	    temp ? cr->session_token : NULL, ct, NULL, body, sig, e))
		goto cleanup;
	rq.method = "POST";
	rq.url = cfg.aws_iam_url ? cfg.aws_iam_url : "https://iam.amazonaws.com";
	rq.body = body;
	rq.body_len = strlen(body);
	rq.headers = sig->h;
	rq.nheaders = sig->n;
	if (!prov_call(&rq, &r, e))
		goto cleanup;
	if (r.status != 200) {
		creds_aws_error(&r, why, sizeof(why));
		prov_check_add(checks, check, false, ptr, "role %s not found or not readable: %s",
		    arn, why);
		goto cleanup;
	}
	prov_check_add(checks, check, true, ptr, "role %s exists", arn);
	snprintf(check, sizeof(check), "%s_cloud_tag", kind);
	ok = prov_hyperpod_role_tag(r.body, r.body_len, TAG_CLOUD, tag, sizeof(tag)) &&
	    strcmp(tag, c->id) == 0;
	if (ok)
		prov_check_add(checks, check, true, ptr, "role carries tag " TAG_CLOUD "=%s",
		    c->id);
	else
		prov_check_add(checks, check, false, ptr, "role %s lacks the tag " TAG_CLOUD
		    "=%s", arn, c->id);
cleanup:
	http_resp_cleanup(&r);
	free(body);
	free(sig);
	return ok;
}

/* The negative check: AssumeRole of cp without the external id must be denied (a trust
 * policy that lost its sts:ExternalId condition lets any holder of fleetd's principal in,
 * the confused deputy).  Fills e only when STS could not be asked. */
static bool
check_external_id_required(const struct prov_cloud *c, const char *cp, json_t *checks,
    struct err *e)
{
	struct prov_cloud neg = *c;
	struct prov_creds cr;
	struct err ne = { 0 };
	bool allowed;

	neg.external_id[0] = '\0';
	neg.id[0] = 'z';	/* its own cache key, never the cloud's */
	memset(&cr, 0, sizeof(cr));
	allowed = prov_creds_get(&neg, cp, &cr, &ne);
	memset(&cr, 0, sizeof(cr));
	prov_creds_invalidate(neg.id);
	if (!allowed && ne.status != 401) {
		*e = ne;
		return false;
	}
	if (allowed)
		prov_check_add(checks, "control_plane_external_id_required", false,
		    "/control_plane_role", "fleetd assumed %s without the external id; the trust "
		    "policy must require sts:ExternalId equal to the cloud's external id", cp);
	else
		prov_check_add(checks, "control_plane_external_id_required", true,
		    "/control_plane_role", "AssumeRole of %s without the external id is denied", cp);
	return !allowed;
}

static bool
hyperpod_verify_pair(const struct prov_cloud *c, const char *cp, const char *cluster,
    json_t *checks, struct err *e)
{
	struct prov_creds cr;
	struct err ce = { 0 };
	bool all = true, temp = false;

	memset(&cr, 0, sizeof(cr));
	prov_creds_invalidate(c->id);
	if (prov_creds_get(c, cp, &cr, &ce)) {
		temp = true;
		prov_check_add(checks, "control_plane_assume", true, "/control_plane_role",
		    "fleetd assumed %s with the cloud's external id", cp);
	} else {
		all = false;
		prov_check_add(checks, "control_plane_assume", false, "/control_plane_role",
		    "fleetd cannot assume %s with external id %s: %s; the trust policy must "
		    "allow fleetd's principal with sts:ExternalId equal to the cloud's external id",
		    cp, c->external_id, ce.msg);
	}
	all = check_external_id_required(c, cp, checks, e) && all;
	if (err_is_set(e))
		return false;
	all = check_role(c, cp, "control_plane_role", &cr, temp, checks, e) && all;
	if (!err_is_set(e))
		all = check_role(c, cluster, "cluster_role", &cr, temp, checks, e) && all;
	memset(&cr, 0, sizeof(cr));
	return prov_verified(all, e);
}

const struct prov_ops prov_hyperpod_ops = {
	.name = "hyperpod",
	.pool_label = "sagemaker.amazonaws.com/instance-group-name",
	/* EKS (and HyperPod's EKS nodes) label each node with its place in the AWS network
	 * hierarchy: topology.k8s.aws/network-node-layer-1 (top) .. -3 (the bottom layer for
	 * most instance types: nodes sharing it are closest; an UltraServer's instances share
	 * it); https://docs.aws.amazon.com/eks/latest/userguide/ml-workload-topology.html.
	 * Layer 3 is the rack, layer 2 the scale unit above it. */
	.rack_label = "topology.k8s.aws/network-node-layer-3",
	.block_label = "topology.k8s.aws/network-node-layer-2",
	.verify_pair = hyperpod_verify_pair,
	.pools_begin = hyperpod_pools_begin,
	.pools_finish = hyperpod_pools_finish,
};
