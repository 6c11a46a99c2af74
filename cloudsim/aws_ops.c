/* cloudsim aws_ops: the AWS operations behind SigV4 — STS AssumeRole (trust policy
 * principal and sts:ExternalId), GetCallerIdentity, IAM GetRole with tags, SageMaker
 * HyperPod DescribeCluster, ListClusters and ListClusterNodes with NextToken paging. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cloudsim/cs.h"
#include "core/crypto.h"

struct params {
	struct cs_kv	*kv;
	size_t		 n;
};

static void
params_parse(struct params *p, const char *s)
{
	while (s != NULL && *s) {
		const char *amp = strchr(s, '&'), *eq;
		size_t len = amp ? (size_t)(amp - s) : strlen(s);

		eq = memchr(s, '=', len);
		if (len > 0 && p->n < 100) {
			p->kv = realloc(p->kv, (p->n + 1) * sizeof(*p->kv));
			if (p->kv == NULL)
				abort();
			p->kv[p->n].k = cs_form_decode(s, eq ? (size_t)(eq - s) : len);
			p->kv[p->n].v = eq ? cs_form_decode(eq + 1, len - (size_t)(eq - s) - 1) :
			    strdup("");
			p->n++;
		}
		s = amp ? amp + 1 : s + len;
	}
}

static const char *
param(const struct params *p, const char *k)
{
	size_t i;

	for (i = 0; i < p->n; i++)
		if (strcmp(p->kv[i].k, k) == 0)
			return p->kv[i].v;
	return NULL;
}

static void
params_free(struct params *p)
{
	size_t i;

	for (i = 0; i < p->n; i++) {
		free(p->kv[i].k);
		free(p->kv[i].v);
	}
	free(p->kv);
}

static void
caller(struct cs_token *tok, struct cs_aws_user *user, char *arn, size_t n, const char **acct)
{
	if (user != NULL) {
		snprintf(arn, n, "arn:aws:iam::%s:user/%s", user->account, user->name);
		*acct = user->account;
	} else {
		snprintf(arn, n, "%s", tok->principal);
		*acct = tok->tenant;
	}
}

/* GetCallerIdentity's UserId: an IAM user's unique id (AIDA...), or for a role session
 * the role's unique id and the session name ("AROA...:session"). */
static void
caller_user_id(struct cs *cs, const struct cs_aws_user *user, const char *arn, char *out,
    size_t n)
{
	const char *p = strstr(arn, ":assumed-role/"), *slash;
	struct cs_aws_role *r = NULL;
	char acct[16] = "", name[96] = "";

	if (user != NULL) {
		snprintf(out, n, "AIDA%.16s", strlen(user->access_key) > 4 ? user->access_key + 4 :
		    user->access_key);
		return;
	}
	if (p != NULL && p - arn > 13 && (slash = strchr(p + 14, '/')) != NULL) {
		snprintf(acct, sizeof(acct), "%.*s", (int)(p - arn - 13), arn + 13);
		snprintf(name, sizeof(name), "%.*s", (int)(slash - p - 14), p + 14);
		r = cs_role_find(cs, acct, name);
	}
	snprintf(out, n, "%s:%s", r ? r->id : "AROAUNKNOWN", p && strrchr(arn, '/') ?
	    strrchr(arn, '/') + 1 : "");
}

static void
xml_reply(struct cs_req *rq, const char *action, const char *ns, const char *result)
{
	char *x = NULL;

	if (asprintf(&x, "<%sResponse xmlns=\"%s\">\n  <%sResult>\n%s  </%sResult>\n"
	    "  <ResponseMetadata>\n    <RequestId>%s</RequestId>\n  </ResponseMetadata>\n"
	    "</%sResponse>\n", action, ns, action, result, action, rq->req_id, action) < 0)
		abort();
	cs_reply_text(rq, 200, "text/xml", x);
	free(x);
}

static bool
session_name_ok(const char *s)
{
	size_t n = s ? strlen(s) : 0, i;

	if (n < 2 || n > 64)
		return false;
	for (i = 0; i < n; i++)
		if (!(isalnum((unsigned char)s[i]) || strchr("_+=,.@-", s[i])))
			return false;
	return true;
}

static void
assume_role(struct cs *cs, struct cs_req *rq, const struct params *p, struct cs_token *tok,
    struct cs_aws_user *user)
{
	const char *arn = param(p, "RoleArn"), *sn = param(p, "RoleSessionName"),
	    *xid = param(p, "ExternalId"), *ds = param(p, "DurationSeconds"), *acct, *name;
	char me[300], acc[16] = "", *res = NULL, exp[32], *ids[3];
	struct cs_aws_role *r = NULL;
	struct cs_token *t;
	bool trusted = false;
	long dur = ds ? atol(ds) : 3600;
	size_t i;
	json_t *v;

	if (arn == NULL || sn == NULL) {
		cs_reply_error(rq, 400, "ValidationError", "1 validation error detected: Value null "
		    "at '%s' failed to satisfy constraint: Member must not be null",
		    arn == NULL ? "roleArn" : "roleSessionName");
		return;
	}
	if (!session_name_ok(sn)) {
		cs_reply_error(rq, 400, "ValidationError", "1 validation error detected: Value "
		    "'%s' at 'roleSessionName' failed to satisfy constraint: Member must satisfy "
		    "regular expression pattern: [\\w+=,.@-]*", sn);
		return;
	}
	if (dur < 900 || dur > 3600) {
		cs_reply_error(rq, 400, "ValidationError", "The requested DurationSeconds exceeds "
		    "the MaxSessionDuration set for this role.");
		return;
	}
	caller(tok, user, me, sizeof(me), &acct);
	name = strstr(arn, ":role/");
	if (strncmp(arn, "arn:aws:iam::", 13) == 0 && name != NULL && name - arn - 13 < 16) {
		snprintf(acc, sizeof(acc), "%.*s", (int)(name - arn - 13), arn + 13);
		name = strrchr(name, '/') + 1;
		r = cs_role_find(cs, acc, name);
	} else {
		cs_reply_error(rq, 400, "ValidationError", "%s is invalid", arn);
		return;
	}
	json_array_foreach(r ? r->trusted : NULL, i, v)
		if (json_is_string(v) && strcmp(json_string_value(v), me) == 0)
			trusted = true;
	if (r == NULL || !trusted || (r->external_id != NULL && (xid == NULL ||
	    strcmp(xid, r->external_id) != 0))) {
		cs_reply_error(rq, 403, "AccessDenied", "User: %s is not authorized to perform: "
		    "sts:AssumeRole on resource: %s", me, arn);
		return;
	}
	snprintf(me, sizeof(me), "arn:aws:sts::%s:assumed-role/%s/%s", r->account, r->name, sn);
	t = cs_token_issue(cs, CS_TOK_AWS, me, r->account, (double)dur);
	cs_rfc3339(t->expires, exp);
	ids[0] = cs_xml_escape(me);
	ids[1] = cs_xml_escape(t->session);
	ids[2] = cs_xml_escape(sn);
	if (asprintf(&res, "    <AssumedRoleUser>\n      <Arn>%s</Arn>\n"
	    "      <AssumedRoleId>%s:%s</AssumedRoleId>\n    </AssumedRoleUser>\n"
	    "    <Credentials>\n      <AccessKeyId>%s</AccessKeyId>\n"
	    "      <SecretAccessKey>%s</SecretAccessKey>\n      <SessionToken>%s</SessionToken>\n"
	    "      <Expiration>%s</Expiration>\n    </Credentials>\n"
	    "    <PackedPolicySize>6</PackedPolicySize>\n", ids[0], r->id, ids[2], t->value,
	    t->secret, ids[1], exp) < 0)
		abort();
	xml_reply(rq, "AssumeRole", "https://sts.amazonaws.com/doc/2011-06-15/", res);
	free(res);
	for (i = 0; i < 3; i++)
		free(ids[i]);
}

static char *
pct_encode(const char *s)
{
	size_t n = strlen(s), i, o = 0;
	char *out = malloc(n * 3 + 1);

	if (out == NULL)
		abort();
	for (i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];

		if (isalnum(c) || strchr("-_.~", c))
			out[o++] = (char)c;
		else
			o += (size_t)sprintf(out + o, "%%%02X", c);
	}
	out[o] = '\0';
	return out;
}

static void
get_role(struct cs *cs, struct cs_req *rq, const struct params *p, struct cs_token *tok,
    struct cs_aws_user *user)
{
	const char *name = param(p, "RoleName"), *acct, *k;
	char me[300], *res = NULL, *tags = strdup(""), *doc, *enc;
	struct cs_aws_role *r;
	json_t *pol, *v;

	caller(tok, user, me, sizeof(me), &acct);
	if (name == NULL) {
		free(tags);
		cs_reply_error(rq, 400, "ValidationError", "1 validation error detected: Value null "
		    "at 'roleName' failed to satisfy constraint: Member must not be null");
		return;
	}
	r = cs_role_find(cs, acct, name);
	if (r == NULL) {
		free(tags);
		cs_reply_error(rq, 404, "NoSuchEntity", "The role with name %s cannot be found.",
		    name);
		return;
	}
	json_object_foreach(r->tags, k, v) {
		char *ek = cs_xml_escape(k), *ev = cs_xml_escape(json_is_string(v) ?
		    json_string_value(v) : ""), *n = NULL;

		if (asprintf(&n, "%s        <member>\n          <Key>%s</Key>\n"
		    "          <Value>%s</Value>\n        </member>\n", tags, ek, ev) < 0)
			abort();
		free(tags);
		free(ek);
		free(ev);
		tags = n;
	}
	pol = json_pack("{s:s, s:[{s:s, s:{s:O}, s:s}]}", "Version", "2012-10-17", "Statement",
	    "Effect", "Allow", "Principal", "AWS", r->trusted, "Action", "sts:AssumeRole");
	if (r->external_id != NULL)
		json_object_set_new(json_array_get(json_object_get(pol, "Statement"), 0),
		    "Condition", json_pack("{s:{s:s}}", "StringEquals", "sts:ExternalId",
		    r->external_id));
	doc = json_dumps(pol, JSON_COMPACT);
	enc = pct_encode(doc);
	if (asprintf(&res, "    <Role>\n      <Path>/</Path>\n"
	    "      <AssumeRolePolicyDocument>%s</AssumeRolePolicyDocument>\n"
	    "      <MaxSessionDuration>3600</MaxSessionDuration>\n      <RoleId>%s</RoleId>\n"
	    "      <RoleName>%s</RoleName>\n      <Arn>arn:aws:iam::%s:role/%s</Arn>\n"
	    "      <CreateDate>2026-01-01T00:00:00Z</CreateDate>\n      <Tags>\n%s      </Tags>\n"
	    "      <RoleLastUsed/>\n    </Role>\n", enc, r->id, r->name, r->account, r->name,
	    tags) < 0)
		abort();
	xml_reply(rq, "GetRole", "https://iam.amazonaws.com/doc/2010-05-08/", res);
	free(res);
	free(enc);
	free(doc);
	free(tags);
	json_decref(pol);
}

void
cs_aws_query(struct cs *cs, struct cs_req *rq, struct cs_token *tok, struct cs_aws_user *user)
{
	struct params p = { 0 };
	const char *action, *ver, *ct = cs_header(rq, "Content-Type");
	bool sts = strcmp(rq->service, "sts") == 0;

	if (strcmp(rq->method, "POST") == 0 && (ct == NULL ||
	    strncmp(ct, "application/x-www-form-urlencoded", 33) != 0) && rq->body_len > 0) {
		cs_reply_error(rq, 400, "InvalidParameterValue", "unsupported content type");
		return;
	}
	params_parse(&p, rq->query);
	if (strcmp(rq->method, "POST") == 0)
		params_parse(&p, rq->body);
	action = param(&p, "Action");
	ver = param(&p, "Version");
	if (action == NULL) {
		cs_reply_error(rq, 400, "MissingAction", "Missing Action");
	} else if (ver == NULL || strcmp(ver, sts ? "2011-06-15" : "2010-05-08") != 0) {
		cs_reply_error(rq, 400, "InvalidAction", "Could not find operation %s for version "
		    "%s", action, ver ? ver : "NO_VERSION_SPECIFIED");
	} else if (sts && strcmp(action, "AssumeRole") == 0) {
		assume_role(cs, rq, &p, tok, user);
	} else if (sts && strcmp(action, "GetCallerIdentity") == 0) {
		char me[300], *res = NULL;
		const char *acct;

		char uid[160];

		caller(tok, user, me, sizeof(me), &acct);
		caller_user_id(cs, user, me, uid, sizeof(uid));
		if (asprintf(&res, "    <Arn>%s</Arn>\n    <UserId>%s</UserId>\n"
		    "    <Account>%s</Account>\n", me, uid, acct) < 0)
			abort();
		xml_reply(rq, "GetCallerIdentity", "https://sts.amazonaws.com/doc/2011-06-15/", res);
		free(res);
	} else if (!sts && strcmp(action, "GetRole") == 0) {
		get_role(cs, rq, &p, tok, user);
	} else {
		cs_reply_error(rq, 400, "InvalidAction", "Could not find operation %s for version "
		    "%s", action, ver);
	}
	params_free(&p);
}

/* ---- SageMaker */

static struct cs_cluster *
hp_cluster(struct cs *cs, struct cs_req *rq, json_t *body, const char *acct, const char *me,
    const char *op)
{
	const char *name = json_string_value(json_object_get(body, "ClusterName"));
	const char *auth = cs_header(rq, "Authorization");
	size_t i;

	if (name == NULL || *name == '\0' || strlen(name) > 256) {
		cs_reply_error(rq, 400, "ValidationException", "1 validation error detected: Value "
		    "null at 'clusterName' failed to satisfy constraint: Member must not be null");
		return NULL;
	}
	for (i = 0; i < cs->nclusters; i++) {
		struct cs_cluster *cl = &cs->clusters[i];
		char *arn, scope[80];
		bool hit;

		if (cl->provider != CS_HYPERPOD)
			continue;
		arn = cs_hyperpod_arn(cl);
		hit = strcmp(name, cl->name) == 0 || strcmp(name, arn) == 0;
		snprintf(scope, sizeof(scope), "/%s/sagemaker/", cl->region);
		if (hit && auth != NULL && strstr(auth, scope) != NULL) {
			if (strcmp(acct, cl->account) != 0) {
				cs_reply_error(rq, 400, "AccessDeniedException", "User: %s is not "
				    "authorized to perform: sagemaker:%s on resource: %s because no "
				    "identity-based policy allows the sagemaker:%s action", me, op, arn,
				    op);
				free(arn);
				return NULL;
			}
			free(arn);
			return cl;
		}
		free(arn);
	}
	cs_reply_error(rq, 400, "ResourceNotFound", "Cluster with name %s not found.", name);
	return NULL;
}

static void
describe(struct cs *cs, struct cs_req *rq, struct cs_cluster *cl)
{
	json_t *groups = json_array();
	char *arn = cs_hyperpod_arn(cl);
	size_t i;

	for (i = 0; i < cl->npools; i++) {
		struct cs_pool *p = &cl->pools[i];

		json_array_append_new(groups, json_pack("{s:i, s:i, s:s, s:s, s:{s:s, s:s}, "
		    "s:s, s:i, s:s}", "CurrentCount", cs_pool_nodes(cl, p), "TargetCount", p->target,
		    "InstanceGroupName", p->name, "InstanceType", p->mt->name, "LifeCycleConfig",
		    "SourceS3Uri", "s3://fleet-hyperpod-lifecycle/", "OnCreate", "on_create.sh",
		    "ExecutionRole", "arn:aws:iam::000000000000:role/hyperpod-exec", "ThreadsPerCore",
		    1, "Status", "InService"));
		json_object_set_new(json_array_get(groups, i), "ExecutionRole",
		    json_sprintf("arn:aws:iam::%s:role/hyperpod-exec-%s", cl->account, cl->name));
		/* reserved capacity: a SageMaker training plan (ClusterInstanceGroupDetails) */
		if (strcmp(p->capacity, "reservation") == 0)
			json_object_set_new(json_array_get(groups, i), "TrainingPlanArn",
			    json_sprintf("arn:aws:sagemaker:%s:%s:training-plan/%s", cl->region,
			    cl->account, p->name));
	}
	cs_reply_json(rq, 200, json_pack("{s:s, s:s, s:s, s:f, s:o, s:{s:{s:o}}, s:s}",
	    "ClusterArn", arn, "ClusterName", cl->name, "ClusterStatus", "InService",
	    "CreationTime", cl->created, "InstanceGroups", groups, "Orchestrator", "Eks",
	    "ClusterArn", json_sprintf("arn:aws:eks:%s:%s:cluster/%s", cl->region, cl->account,
	    cl->name), "NodeRecovery", "Automatic"));
	rq->ctype = "application/x-amz-json-1.1";
	free(arn);
	(void)cs;
}

static void
list_nodes(struct cs *cs, struct cs_req *rq, struct cs_cluster *cl, json_t *body)
{
	json_t *mr = json_object_get(body, "MaxResults"), *out = json_array(), *reply;
	const char *nt = json_string_value(json_object_get(body, "NextToken")),
	    *gc = json_string_value(json_object_get(body, "InstanceGroupNameContains"));
	long max = json_is_integer(mr) ? (long)json_integer_value(mr) : 100, off = 0, seen = 0;
	size_t i;

	if (max < 1 || max > 100) {
		cs_reply_error(rq, 400, "ValidationException", "1 validation error detected: Value "
		    "'%ld' at 'maxResults' failed to satisfy constraint: Member must have value "
		    "between 1 and 100", max);
		json_decref(out);
		return;
	}
	if (max > cs->cfg.page_size)
		max = cs->cfg.page_size;
	if (nt != NULL && (sscanf(nt, "nt-%ld", &off) != 1 || off < 0)) {
		cs_reply_error(rq, 400, "ValidationException", "Invalid NextToken");
		json_decref(out);
		return;
	}
	for (i = 0; i < cl->nodes.n; i++) {
		struct cs_node *n = cl->nodes.v[i];

		if (gc != NULL && strstr(n->pool->name, gc) == NULL)
			continue;
		if (seen++ < off)
			continue;
		if ((long)json_array_size(out) >= max)
			break;
		json_array_append_new(out, json_pack("{s:s, s:s, s:s, s:f, s:{s:s, s:s}}",
		    "InstanceGroupName", n->pool->name, "InstanceId", n->name + 9, "InstanceType",
		    n->pool->mt->name, "LaunchTime", n->created, "InstanceStatus", "Status",
		    n->preempt_at > 0 ? "ShuttingDown" : "Running", "Message", ""));
	}
	reply = json_pack("{s:o}", "ClusterNodeSummaries", out);
	if (i < cl->nodes.n)
		json_object_set_new(reply, "NextToken", json_sprintf("nt-%ld",
		    off + (long)json_array_size(out)));
	cs_reply_json(rq, 200, reply);
	rq->ctype = "application/x-amz-json-1.1";
}

static int
by_name(const void *a, const void *b)
{
	const struct cs_cluster *x = *(struct cs_cluster *const *)a,
	    *y = *(struct cs_cluster *const *)b;

	return strcmp(x->name, y->name);
}

static int
by_created(const void *a, const void *b)
{
	const struct cs_cluster *x = *(struct cs_cluster *const *)a,
	    *y = *(struct cs_cluster *const *)b;

	return x->created < y->created ? -1 : x->created > y->created ? 1 : by_name(a, b);
}

/* ListClusters (SageMaker API reference): the HyperPod clusters of the caller's account in
 * the credential scope's region, NameContains, CreationTimeAfter/Before, SortBy
 * CREATION_TIME (default) | NAME, SortOrder Ascending (default) | Descending, MaxResults
 * 1..100 and NextToken. */
static void
list_clusters(struct cs *cs, struct cs_req *rq, json_t *body, const char *acct)
{
	json_t *mr = json_object_get(body, "MaxResults"), *out = json_array(), *reply,
	    *after = json_object_get(body, "CreationTimeAfter"),
	    *before = json_object_get(body, "CreationTimeBefore");
	const char *nt = json_string_value(json_object_get(body, "NextToken")),
	    *nc = json_string_value(json_object_get(body, "NameContains")),
	    *sb = json_string_value(json_object_get(body, "SortBy")),
	    *so = json_string_value(json_object_get(body, "SortOrder")),
	    *auth = cs_header(rq, "Authorization");
	long max = json_is_integer(mr) ? (long)json_integer_value(mr) : 100, off = 0;
	struct cs_cluster **v = calloc(cs->nclusters + 1, sizeof(*v));
	size_t n = 0, i;
	bool desc = so != NULL && strcmp(so, "Descending") == 0;

	if (v == NULL)
		abort();
	if (max < 1 || max > 100 || (sb && strcmp(sb, "NAME") && strcmp(sb, "CREATION_TIME")) ||
	    (so && strcmp(so, "Ascending") && strcmp(so, "Descending"))) {
		cs_reply_error(rq, 400, "ValidationException", "1 validation error detected: %s",
		    max < 1 || max > 100 ? "Value at 'maxResults' failed to satisfy constraint: "
		    "Member must have value between 1 and 100" : sb && strcmp(sb, "NAME") &&
		    strcmp(sb, "CREATION_TIME") ? "Value at 'sortBy' failed to satisfy constraint: "
		    "Member must satisfy enum value set: [NAME, CREATION_TIME]" : "Value at "
		    "'sortOrder' failed to satisfy constraint: Member must satisfy enum value set: "
		    "[Ascending, Descending]");
		goto cleanup;
	}
	if (nt != NULL && (sscanf(nt, "lc-%ld", &off) != 1 || off < 0)) {
		cs_reply_error(rq, 400, "ValidationException", "Invalid NextToken");
		goto cleanup;
	}
	if (max > cs->cfg.page_size)
		max = cs->cfg.page_size;
	for (i = 0; i < cs->nclusters; i++) {
		struct cs_cluster *cl = &cs->clusters[i];
		char scope[80];

		snprintf(scope, sizeof(scope), "/%s/sagemaker/", cl->region);
		if (cl->provider != CS_HYPERPOD || strcmp(cl->account, acct) != 0 ||
		    auth == NULL || strstr(auth, scope) == NULL ||
		    (nc != NULL && strstr(cl->name, nc) == NULL) ||
		    (json_is_number(after) && cl->created <= json_number_value(after)) ||
		    (json_is_number(before) && cl->created >= json_number_value(before)))
			continue;
		v[n++] = cl;
	}
	qsort(v, n, sizeof(*v), sb != NULL && strcmp(sb, "NAME") == 0 ? by_name : by_created);
	for (i = (size_t)off; i < n && (long)json_array_size(out) < max; i++) {
		struct cs_cluster *cl = v[desc ? n - 1 - i : i];
		char *arn = cs_hyperpod_arn(cl);

		json_array_append_new(out, json_pack("{s:s, s:s, s:s, s:f}", "ClusterArn", arn,
		    "ClusterName", cl->name, "ClusterStatus", "InService", "CreationTime",
		    cl->created));
		free(arn);
	}
	reply = json_pack("{s:o}", "ClusterSummaries", out);
	out = NULL;
	if (i < n)
		json_object_set_new(reply, "NextToken", json_sprintf("lc-%zu", i));
	cs_reply_json(rq, 200, reply);
	rq->ctype = "application/x-amz-json-1.1";
cleanup:
	json_decref(out);
	free(v);
}

void
cs_sagemaker(struct cs *cs, struct cs_req *rq, struct cs_token *tok, struct cs_aws_user *user)
{
	const char *target = cs_header(rq, "X-Amz-Target"), *ct = cs_header(rq, "Content-Type"),
	    *acct;
	json_t *body;
	struct cs_cluster *cl;
	char me[300];

	caller(tok, user, me, sizeof(me), &acct);
	if (strcmp(rq->method, "POST") != 0 || ct == NULL ||
	    strncmp(ct, "application/x-amz-json-1.1", 26) != 0) {
		cs_reply_error(rq, 400, "UnknownOperationException", "requests must be POST "
		    "application/x-amz-json-1.1");
		return;
	}
	body = json_loadb(rq->body ? rq->body : "", rq->body_len, 0, NULL);
	if (!json_is_object(body)) {
		json_decref(body);
		cs_reply_error(rq, 400, "SerializationException", "body is not a JSON object");
		return;
	}
	if (target != NULL && strcmp(target, "SageMaker.DescribeCluster") == 0) {
		if ((cl = hp_cluster(cs, rq, body, acct, me, "DescribeCluster")) != NULL)
			describe(cs, rq, cl);
	} else if (target != NULL && strcmp(target, "SageMaker.ListClusters") == 0) {
		list_clusters(cs, rq, body, acct);
	} else if (target != NULL && strcmp(target, "SageMaker.ListClusterNodes") == 0) {
		if ((cl = hp_cluster(cs, rq, body, acct, me, "ListClusterNodes")) != NULL)
			list_nodes(cs, rq, cl, body);
	} else {
		cs_reply_error(rq, 400, "UnknownOperationException", "The operation %s is not "
		    "supported", target ? target : "(none)");
	}
	json_decref(body);
}
