/* cloudsim sim: the /_sim control endpoints — ground-truth state, stored objects as they
 * were applied, faults, spot preemption, identity updates for phase 2, token expiry,
 * clock skew and a raw SigV4 verifier for the AWS test suite. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cloudsim/cs.h"
#include "core/jsonx.h"

static json_t *
pool_json(struct cs *cs, struct cs_cluster *cl, struct cs_pool *p)
{
	json_t *racks = json_object(), *per_node = json_array(), *out, *r;
	long long total = 0, used_total = 0;
	int nodes = 0;
	size_t i, j;

	for (i = 0; i < cl->nodes.n; i++) {
		struct cs_node *n = cl->nodes.v[i];
		long long acc = n->gpu + n->tpu, used = 0;

		if (n->pool != p)
			continue;
		nodes++;
		for (j = 0; j < cl->pods.n; j++) {
			struct cs_pod *pd = cl->pods.v[j];

			if (strcmp(pd->node, n->name) == 0)
				used += pd->gpu + pd->tpu;
		}
		total += acc;
		used_total += used;
		json_array_append_new(per_node, json_pack("{s:s, s:s, s:I}", "name", n->name, "rack",
		    n->rack, "free_accelerators", (json_int_t)(acc - used)));
		r = json_object_get(racks, n->rack);
		if (r == NULL) {
			r = json_pack("{s:i, s:I, s:I}", "nodes", 0, "accelerators", (json_int_t)0,
			    "free_accelerators", (json_int_t)0);
			json_object_set_new(racks, n->rack, r);
		}
		json_object_set_new(r, "nodes", json_integer(json_integer_value(json_object_get(r,
		    "nodes")) + 1));
		json_object_set_new(r, "accelerators", json_integer(json_integer_value(
		    json_object_get(r, "accelerators")) + acc));
		json_object_set_new(r, "free_accelerators", json_integer(json_integer_value(
		    json_object_get(r, "free_accelerators")) + acc - used));
	}
	out = json_pack("{s:s, s:s, s:s?, s:i, s:i, s:i, s:i, s:i, s:b, s:b, s:b, s:f, s:s?, "
	    "s:I, s:I, s:o}", "name", p->name, "machine_type", p->mt->name, "accelerator",
	    p->mt->accel, "accelerators_per_node", p->mt->accel_count, "nodes", nodes, "target",
	    p->target, "min", p->min, "max", p->max, "spot", p->spot, "autoscaling", p->autoscale,
	    "stockout", cs_pool_stockout(cs, p), "price_per_hour", p->price, "tpu_topology",
	    p->tpu_topology[0] ? p->tpu_topology : NULL, "accelerators", (json_int_t)total,
	    "free_accelerators", (json_int_t)(total - used_total), "racks", racks);
	/* each node's name and free accelerators (a test seeds capacity rows from them) */
	json_object_set_new(out, "node_list", per_node);
	return out;
}

json_t *
cs_state_json(struct cs *cs)
{
	json_t *clusters = json_array();
	char ts[32];
	size_t c, i;

	for (c = 0; c < cs->nclusters; c++) {
		struct cs_cluster *cl = &cs->clusters[c];
		json_t *pools = json_array(), *objs = json_array();
		int pending = 0, running = 0;

		for (i = 0; i < cl->npools; i++)
			json_array_append_new(pools, pool_json(cs, cl, &cl->pools[i]));
		for (i = 0; i < cl->pods.n; i++) {
			struct cs_pod *p = cl->pods.v[i];

			if (p->running_at > 0)
				running++;
			else
				pending++;
		}
		for (i = 0; i < cl->objects.n; i++) {
			struct cs_object *o = cl->objects.v[i];

			json_array_append_new(objs, json_pack("{s:s, s:s, s:s, s:s, s:i, s:I, s:s, "
			    "s:O*}", "kind", o->kind, "namespace", o->ns, "name", o->name, "uid",
			    o->uid, "applies", o->applies, "resourceVersion", (json_int_t)o->rv,
			    "manager", o->manager, "status", json_object_get(o->live, "status")));
		}
		json_array_append_new(clusters, json_pack("{s:s, s:s, s:s, s:s, s:i, s:o, "
		    "s:{s:i, s:i}, s:o}", "name", cl->name, "provider",
		    cs_provider_name(cl->provider), "environment", cl->env, "region", cl->region,
		    "node_count", (int)cl->nodes.n, "pools", pools, "pods", "pending", pending,
		    "running", running, "objects", objs));
	}
	cs_rfc3339(cs_now(cs), ts);
	return json_pack("{s:s, s:f, s:o, s:O}", "sim_time", ts, "time_scale", cs->time_scale,
	    "clusters", clusters, "applies", cs->apply_counts);
}

static void
objects(struct cs *cs, struct cs_req *rq)
{
	const char *cf = cs_query(rq, "cluster"), *nf = cs_query(rq, "namespace"),
	    *kf = cs_query(rq, "kind"), *mf = cs_query(rq, "name");
	json_t *out = json_array();
	size_t c, i;

	for (c = 0; c < cs->nclusters; c++) {
		struct cs_cluster *cl = &cs->clusters[c];

		if (cf && strcmp(cf, cl->name) != 0)
			continue;
		for (i = 0; i < cl->objects.n; i++) {
			struct cs_object *o = cl->objects.v[i];

			if ((nf && strcmp(nf, o->ns)) || (mf && strcmp(mf, o->name)) ||
			    (kf && strcmp(kf, o->kind) && strcmp(kf, o->plural)))
				continue;
			json_array_append_new(out, json_pack("{s:s, s:s, s:s, s:s, s:s, s:i, s:s, "
			    "s:O}", "cluster", cl->name, "kind", o->kind, "namespace", o->ns, "name",
			    o->name, "uid", o->uid, "applies", o->applies, "field_manager",
			    o->manager, "object", o->applied));
		}
	}
	cs_reply_json(rq, 200, json_pack("{s:o}", "objects", out));
}

bool
cs_fault_add(struct cs *cs, json_t *j, int *id, struct err *e)
{
	static const char *const allowed[] = { "service", "cluster", "region", "pool",
	    "latency_ms", "error_rate", "error_status", "retry_after", "hang", "hang_s",
	    "unreachable", "stockout", "upgrade_hold", "count", "watch", NULL };
	struct cs_fault f = { 0 }, *p;
	const char *svc = "", *cl = "", *rg = "", *pool = "";
	long long lat = 0, st = 0, ra = 0, cnt = -1;
	double rate = 0, hs = 0;
	bool hang = false, un = false, so = false, wo = false, uh = false;

	if (!json_is_object(j))
		return err_set(e, 400, "sim.bad_fault", "fault must be an object");
	if (!jsonx_only(j, allowed, "", e) ||
	    !jsonx_str(j, "service", "", false, &svc, e) ||
	    !jsonx_str(j, "cluster", "", false, &cl, e) ||
	    !jsonx_str(j, "region", "", false, &rg, e) ||
	    !jsonx_str(j, "pool", "", false, &pool, e) ||
	    !jsonx_int(j, "latency_ms", "", false, &lat, e) ||
	    !jsonx_num(j, "error_rate", "", false, &rate, e) ||
	    !jsonx_int(j, "error_status", "", false, &st, e) ||
	    !jsonx_int(j, "retry_after", "", false, &ra, e) ||
	    !jsonx_bool(j, "hang", "", false, &hang, e) ||
	    !jsonx_num(j, "hang_s", "", false, &hs, e) ||
	    !jsonx_bool(j, "unreachable", "", false, &un, e) ||
	    !jsonx_bool(j, "stockout", "", false, &so, e) ||
	    !jsonx_bool(j, "upgrade_hold", "", false, &uh, e) ||
	    !jsonx_bool(j, "watch", "", false, &wo, e) ||
	    !jsonx_int(j, "count", "", false, &cnt, e))
		return false;
	if (lat < 0 || lat > 600000 || rate < 0 || rate > 1 || hs < 0 || hs > 3600 || ra < 0 ||
	    ra > 3600 || (st != 0 && (st < 400 || st > 599)) || cnt == 0 || cnt > 1000000)
		return err_set(e, 400, "sim.bad_fault", "fault value out of range");
	if (cl[0] && cs_cluster_find(cs, cl) == NULL)
		return err_set(e, 404, "sim.no_cluster", "cluster %s not found", cl);
	f.id = cs->next_fault++;
	snprintf(f.service, sizeof(f.service), "%s", svc);
	snprintf(f.cluster, sizeof(f.cluster), "%s", cl);
	snprintf(f.region, sizeof(f.region), "%s", rg);
	snprintf(f.pool, sizeof(f.pool), "%s", pool);
	f.latency_ms = (int)lat;
	f.error_rate = rate;
	f.error_status = (int)st;
	f.retry_after = (int)ra;
	f.hang = hang;
	f.hang_s = hs;
	f.unreachable = un;
	f.stockout = so;
	f.upgrade_hold = uh;
	f.watch_only = wo;
	f.remaining = (int)cnt;
	p = malloc(sizeof(*p));
	if (p == NULL)
		abort();
	*p = f;
	cs_vec_push(&cs->faults, p);
	if (id != NULL)
		*id = f.id;
	return true;
}

static json_t *
faults_json(struct cs *cs)
{
	json_t *a = json_array();
	size_t i;

	for (i = 0; i < cs->faults.n; i++) {
		struct cs_fault *f = cs->faults.v[i];

		json_array_append_new(a, json_pack("{s:i, s:s, s:s, s:s, s:s, s:i, s:f, s:i, s:i, "
		    "s:b, s:f, s:b, s:b, s:b, s:i}", "id", f->id, "service", f->service, "cluster",
		    f->cluster, "region", f->region, "pool", f->pool, "latency_ms", f->latency_ms,
		    "error_rate", f->error_rate, "error_status", f->error_status, "retry_after",
		    f->retry_after, "hang", f->hang, "hang_s", f->hang_s, "unreachable",
		    f->unreachable, "stockout", f->stockout, "upgrade_hold", f->upgrade_hold,
		    "count", f->remaining));
	}
	return a;
}

static void
faults(struct cs *cs, struct cs_req *rq, json_t *body)
{
	struct err e = { 0 };
	size_t i;
	int id;

	if (strcmp(rq->method, "GET") == 0) {
		cs_reply_json(rq, 200, json_pack("{s:o}", "faults", faults_json(cs)));
	} else if (strcmp(rq->method, "POST") == 0 && rq->nseg == 2) {
		if (!cs_fault_add(cs, body, &id, &e))
			cs_reply_error(rq, e.status, e.code, "%s", e.msg);
		else
			cs_reply_json(rq, 201, json_pack("{s:i}", "id", id));
	} else if (strcmp(rq->method, "DELETE") == 0 && rq->nseg == 2) {
		for (i = 0; i < cs->faults.n; i++)
			free(cs->faults.v[i]);
		cs->faults.n = 0;
		cs_reply_json(rq, 200, json_pack("{s:b}", "cleared", 1));
	} else if (strcmp(rq->method, "DELETE") == 0 && rq->nseg == 3) {
		id = atoi(rq->seg[2]);
		for (i = 0; i < cs->faults.n; i++)
			if (((struct cs_fault *)cs->faults.v[i])->id == id) {
				free(cs->faults.v[i]);
				cs_vec_del(&cs->faults, i);
				cs_reply_json(rq, 200, json_pack("{s:i}", "deleted", id));
				return;
			}
		cs_reply_error(rq, 404, "sim.no_fault", "fault %d not found", id);
	} else {
		cs_reply_error(rq, 405, "sim.method", "method not allowed");
	}
}

/* POST /_sim/spot-reclaim (and its old name /_sim/preempt): a provider-shaped spot reclaim
 * of a node, or of count nodes of a pool (spot.c says what each provider signals). */
static void
spot_reclaim(struct cs *cs, struct cs_req *rq, json_t *b)
{
	struct cs_cluster *cl = cs_cluster_find(cs, json_string_value(json_object_get(b,
	    "cluster")));
	const char *node = json_string_value(json_object_get(b, "node")),
	    *pool = json_string_value(json_object_get(b, "pool")),
	    *signal = json_string_value(json_object_get(b, "signal"));
	json_t *cnt = json_object_get(b, "count"), *ns = json_object_get(b, "notice_s"), *out;
	long long want = json_is_integer(cnt) ? json_integer_value(cnt) : 1;
	double notice = json_is_number(ns) ? json_number_value(ns) : cs->cfg.preempt_notice_s;
	struct err e = { 0 };
	size_t i;

	if (cl == NULL || (node == NULL && pool == NULL) || want < 1 || notice < 0 ||
	    notice > 86400) {
		cs_reply_error(rq, 400, "sim.bad_preempt", "need cluster and node or pool, count "
		    ">= 1, 0 <= notice_s <= 86400");
		return;
	}
	out = json_array();
	for (i = 0; i < cl->nodes.n && (long long)json_array_size(out) < want; i++) {
		struct cs_node *n = cl->nodes.v[i];

		if ((pool != NULL && n->preempt_at > 0) || (node && strcmp(node, n->name)) ||
		    (pool && strcmp(pool, n->pool->name)))
			continue;
		if (!cs_preempt(cs, cl, n, notice, signal, &e)) {
			json_decref(out);
			cs_reply_error(rq, e.status, e.code, "%s", e.msg);
			return;
		}
		json_array_append_new(out, json_string(n->name));
	}
	if (json_array_size(out) == 0) {
		json_decref(out);
		cs_reply_error(rq, 404, "sim.no_node", "no matching node to preempt");
		return;
	}
	cs_reply_json(rq, 200, json_pack("{s:o, s:f}", "preempted", out, "notice_s", notice));
}

static void
verify(struct cs *cs, struct cs_req *rq, json_t *b);

void
cs_sim_handle(struct cs *cs, struct cs_req *rq)
{
	const char *what = rq->nseg >= 2 ? rq->seg[1] : "";
	json_t *body = NULL;
	struct err e = { 0 };

	if (rq->body_len > 0) {
		body = json_loadb(rq->body, rq->body_len, 0, NULL);
		if (!json_is_object(body)) {
			json_decref(body);
			cs_reply_error(rq, 400, "sim.bad_json", "body must be a json object");
			return;
		}
	}
	if (strcmp(what, "state") == 0) {
		cs_reply_json(rq, 200, cs_state_json(cs));
	} else if (strcmp(what, "objects") == 0) {
		objects(cs, rq);
	} else if (strncmp(what, "watch-", 6) == 0) {
		cs_watch_sim(cs, rq, what + 6, body);
	} else if (strcmp(what, "connect") == 0 && strcmp(rq->method, "POST") == 0) {
		cs_connect_sim(cs, rq, body);
	} else if (strcmp(what, "faults") == 0) {
		faults(cs, rq, body);
	} else if ((strcmp(what, "spot-reclaim") == 0 || strcmp(what, "preempt") == 0) &&
	    strcmp(rq->method, "POST") == 0) {
		spot_reclaim(cs, rq, body);
	} else if (strcmp(what, "iam") == 0 && strcmp(rq->method, "POST") == 0) {
		if (cs_sim_iam(cs, body, &e))
			cs_reply_json(rq, 200, json_pack("{s:b}", "updated", 1));
		else
			cs_reply_error(rq, e.status, e.code, "%s", e.msg);
	} else if (strcmp(what, "expire-tokens") == 0 && strcmp(rq->method, "POST") == 0) {
		const char *p = json_string_value(json_object_get(body, "provider"));
		size_t i, n = 0;

		for (i = 0; i < cs->tokens.n; i++) {
			struct cs_token *t = cs->tokens.v[i];

			if (p == NULL || (strcmp(p, "gcp") == 0 && t->kind == CS_TOK_GCP) ||
			    (strcmp(p, "azure") == 0 && t->kind == CS_TOK_AZURE) ||
			    (strcmp(p, "aws") == 0 && t->kind == CS_TOK_AWS)) {
				t->revoked = true;
				n++;
			}
		}
		cs_reply_json(rq, 200, json_pack("{s:i}", "expired", (int)n));
	} else if (strcmp(what, "clock") == 0 && strcmp(rq->method, "POST") == 0) {
		json_t *s = json_object_get(body, "skew_s");

		if (!json_is_number(s) || json_number_value(s) < -86400 * 365.0 * 20 ||
		    json_number_value(s) > 86400 * 365.0 * 20) {
			cs_reply_error(rq, 400, "sim.bad_clock", "skew_s must be a number");
		} else {
			cs->clock_skew = json_number_value(s);
			cs_reply_json(rq, 200, json_pack("{s:f}", "skew_s", cs->clock_skew));
		}
	} else if (strcmp(what, "sigv4") == 0 && strcmp(rq->method, "POST") == 0) {
		verify(cs, rq, body);
	} else {
		cs_reply_error(rq, 404, "sim.not_found", "no such endpoint");
	}
	json_decref(body);
}

/* Parses a raw HTTP request (the test suite's .req/.sreq format) and verifies it. */
static void
verify(struct cs *cs, struct cs_req *rq, json_t *b)
{
	const char *raw = json_string_value(json_object_get(b, "request")),
	    *secret = json_string_value(json_object_get(b, "secret_key")),
	    *now = json_string_value(json_object_get(b, "now")), *code = NULL;
	char *text, *line, *p, *method, *target, *q, *body = NULL, msg[512] = "";
	struct cs_kv *hdr = NULL;
	size_t nh = 0, i;
	bool ok;

	if (raw == NULL || secret == NULL) {
		cs_reply_error(rq, 400, "sim.bad_sigv4", "need request and secret_key");
		return;
	}
	text = strdup(raw);
	p = strstr(text, "\n\n");
	if (p != NULL) {
		*p = '\0';
		body = p + 2;
	}
	p = text;
	line = strsep(&p, "\n");
	method = strsep(&line, " ");
	target = line;
	if (target != NULL && strrchr(target, ' ') != NULL)
		*strrchr(target, ' ') = '\0';
	while (p != NULL && (line = strsep(&p, "\n")) != NULL) {
		char *c;

		if ((line[0] == ' ' || line[0] == '\t') && nh > 0) {	/* folded line */
			char *j = NULL;

			if (asprintf(&j, "%s %s", hdr[nh - 1].v, line) < 0)
				abort();
			free(hdr[nh - 1].v);
			hdr[nh - 1].v = j;
			continue;
		}
		if ((c = strchr(line, ':')) == NULL || nh >= 64)
			continue;
		hdr = realloc(hdr, (nh + 1) * sizeof(*hdr));
		if (hdr == NULL)
			abort();
		hdr[nh].k = strndup(line, (size_t)(c - line));
		hdr[nh].v = strdup(c + 1);
		nh++;
	}
	if (method == NULL || target == NULL) {
		ok = false;
		code = "IncompleteSignature";
		snprintf(msg, sizeof(msg), "no request line");
	} else {
		q = strchr(target, '?');
		if (q != NULL)
			*q++ = '\0';
		ok = cs_sigv4_verify(cs, method, target, q, hdr, nh, body ? body : "",
		    body ? strlen(body) : 0, secret, now, &code, msg, sizeof(msg));
	}
	cs_reply_json(rq, 200, json_pack("{s:b, s:s?, s:s}", "valid", ok, "code", ok ? NULL : code,
	    "message", msg));
	for (i = 0; i < nh; i++) {
		free(hdr[i].k);
		free(hdr[i].v);
	}
	free(hdr);
	free(text);
}
