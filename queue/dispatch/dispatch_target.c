/* dispatch_target: what the dispatch and status workers share — a member cluster with
 * its decrypted token, the manifest of a claimed job, paged lists, and deduplicated job
 * events. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/http.h"
#include "core/log.h"
#include "providers/jobspec.h"
#include "providers/kube.h"
#include "providers/kuberay.h"
#include "queue/dispatch/dispatch.h"
#include "regions/cluster.h"

#define LIST_MAX_PAGES	2000
#define LIST_TIMEOUT_MS	15000L

static char *
xstrdup(const char *s)
{
	char *d = strdup(s ? s : "");

	if (d == NULL)
		abort();
	return d;
}

bool
dispatch_target_load(struct db *c, const char *cluster_id, struct dispatch_target **out,
    struct err *e)
{
	static const char sql[] = "SELECT k.name, c.provider, k.api_server, k.ca_cert,"
	    " k.batch_scheduler, k.stockout_timeout_s, k.kueue::text, k.batch_probe::text"
	    " FROM clusters k JOIN clouds c ON c.id = k.cloud_id WHERE k.id = $1::uuid";
	const char *p[1] = { cluster_id };
	struct dispatch_target *t = NULL;
	PGresult *r = NULL;

	*out = NULL;
	if (!db_exec(c, sql, 1, p, &r, e))
		return false;
	if (PQntuples(r) == 0) {
		PQclear(r);
		return err_set(e, 404, "cluster.not_found", "cluster not found");
	}
	if ((t = calloc(1, sizeof(*t))) == NULL)
		abort();
	snprintf(t->id, sizeof(t->id), "%s", cluster_id);
	snprintf(t->name, sizeof(t->name), "%s", PQgetvalue(r, 0, 0));
	snprintf(t->provider, sizeof(t->provider), "%s", PQgetvalue(r, 0, 1));
	t->api_server = xstrdup(PQgetvalue(r, 0, 2));
	t->ca_pem = xstrdup(PQgetvalue(r, 0, 3));
	snprintf(t->batch_scheduler, sizeof(t->batch_scheduler), "%s", PQgetvalue(r, 0, 4));
	t->stockout_timeout_s = atoi(PQgetvalue(r, 0, 5));
	{
		json_t *kq = json_loads(PQgetvalue(r, 0, 6), 0, NULL),
		    *probe = json_loads(PQgetvalue(r, 0, 7), 0, NULL);
		const char *cq = json_string_value(json_object_get(kq, "cluster_queue")),
		    *pre = json_string_value(json_object_get(kq, "local_queue_prefix"));

		t->kueue_elastic = cluster_kueue_elastic(kq, probe);
		snprintf(t->kueue_cluster_queue, sizeof(t->kueue_cluster_queue), "%s",
		    cq ? cq : "fleetd");
		snprintf(t->kueue_lq_prefix, sizeof(t->kueue_lq_prefix), "%s", pre ? pre : "");
		json_decref(kq);
		json_decref(probe);
	}
	PQclear(r);
	if ((t->token = cluster_token(c, cluster_id, e)) == NULL) {
		dispatch_target_free(t);
		return false;
	}
	t->pc.id = t->id;
	t->pc.name = t->name;
	t->pc.api_server = t->api_server;
	t->pc.ca_pem = t->ca_pem;
	t->pc.token = t->token;
	t->pc.provider_cluster_id = "";
	*out = t;
	return true;
}

void
dispatch_target_free(struct dispatch_target *t)
{
	if (t == NULL)
		return;
	if (t->token != NULL) {
		memset(t->token, 0, strlen(t->token));
		free(t->token);
	}
	free(t->api_server);
	free(t->ca_pem);
	free(t);
}

void
dispatch_job_free(struct dispatch_job *j)
{
	if (j == NULL)
		return;
	json_decref(j->spec);
	json_decref(j->placement);
	free(j);
}

static const char *
pstr(json_t *o, const char *k)
{
	const char *s = json_string_value(json_object_get(o, k));

	return s != NULL && s[0] != '\0' ? s : NULL;
}

/* The pool of worker groups without accelerators when it differs from the main pool. */
static const char *
cpu_pool_of(const struct job_spec *s, json_t *placement, const char *main)
{
	json_t *a;
	size_t i;

	json_array_foreach(json_object_get(placement, "allocs"), i, a) {
		json_int_t g = json_integer_value(json_object_get(a, "group"));
		const char *pool = pstr(a, "pool");

		if (g < 1 || (size_t)g > s->ngroups || pool == NULL)
			continue;
		if (s->groups[g - 1].accel_flavor == NULL && (main == NULL ||
		    strcmp(pool, main) != 0))
			return pool;
	}
	return NULL;
}

/* The renderer's input for j on t; s (parsed here) and tpu back it.  On failure fills e;
 * the caller releases s with jobspec_cleanup either way. */
static bool
fill_input(const struct dispatch_job *j, const struct dispatch_target *t, struct kuberay_input *in,
    struct job_spec *s, char *tpu, size_t tn, char *lq, size_t lqn, struct err *e)
{
	struct kuberay_placement *p = &in->placement;
	json_t *pl = j->placement;
	const char *prov = pstr(pl, "provider") ? pstr(pl, "provider") : t->provider;

	memset(in, 0, sizeof(*in));
	memset(s, 0, sizeof(*s));
	if (!jobspec_from_json(j->spec, s, e))
		return false;
	if (!kuberay_provider_from_name(prov, &p->provider))
		return err_set(e, 422, "kuberay.bad_placement", "unknown provider %.16s", prov);
	if (!kuberay_scheduler_from_name(t->batch_scheduler, &in->batch.kind))
		in->batch.kind = KUBERAY_SCHED_NONE;
	if (in->batch.kind == KUBERAY_SCHED_KUEUE) {
		/* the LocalQueue fleetd ensures for the job's queue (dispatch_kueue_apply) */
		in->batch.kueue_elastic = t->kueue_elastic;
		snprintf(lq, lqn, "%s%s", t->kueue_lq_prefix, j->queue);
		in->batch.queue = lq;
	}
	in->spec = s;
	in->job_id = j->id;
	in->attempt = j->attempt;
	in->environment = j->environment;
	in->queue = j->queue;
	p->cluster = t->name;
	p->pool = pstr(pl, "pool");
	p->head_pool = pstr(pl, "head_pool");
	p->cpu_pool = cpu_pool_of(s, pl, p->pool);
	p->machine_type = pstr(pl, "machine_type");
	p->spot = json_is_true(json_object_get(pl, "spot"));
	if (s->topology == JOBSPEC_TOPO_RACK)
		p->rack_id = pstr(pl, "rack");
	if (s->topology == JOBSPEC_TOPO_HOST)
		p->host = pstr(pl, "host");
	if (s->topology == JOBSPEC_TOPO_SLICE && pstr(pl, "flavor") != NULL) {
		const char *f = pstr(pl, "flavor");
		size_t n = strlen(f);

		snprintf(tpu, tn, "%s%s", f, n > 6 && strcmp(f + n - 6, "-slice") == 0 ?
		    "" : "-slice");
		p->tpu_accelerator = tpu;
	}
	return true;
}

/* The scheduler's allocations as the renderer's pins (nodes borrowed from placement);
 * NULL when there are none.  Caller frees. */
static struct kuberay_pin *
pins_of(json_t *placement, size_t *n)
{
	json_t *allocs = json_object_get(placement, "allocs"), *a;
	struct kuberay_pin *pins;
	size_t i;

	*n = 0;
	if (json_array_size(allocs) == 0)
		return NULL;
	pins = calloc(json_array_size(allocs), sizeof(*pins));
	if (pins == NULL)
		return NULL;
	json_array_foreach(allocs, i, a) {
		pins[*n].group = (int)json_integer_value(json_object_get(a, "group"));
		pins[*n].node = json_is_true(json_object_get(a, "grown")) ? NULL : pstr(a, "node");
		(*n)++;
	}
	return pins;
}

json_t *
dispatch_render(const struct dispatch_job *j, const struct dispatch_target *t, struct err *e)
{
	struct kuberay_input in;
	struct kuberay_pin *pins = NULL;
	struct job_spec s;
	json_t *out = NULL;
	char tpu[64], lq[128];

	if (fill_input(j, t, &in, &s, tpu, sizeof(tpu), lq, sizeof(lq), e)) {
		pins = pins_of(j->placement, &in.placement.npins);
		in.placement.pins = pins;
		out = kuberay_render(&in, e);
	}
	jobspec_cleanup(&s);
	free(pins);
	return out;
}

json_t *
dispatch_render_for(const struct dispatch_target *t, const char *id, const char *environment,
    const char *queue, int attempt, json_t *spec, json_t *placement, struct err *e)
{
	struct dispatch_job dj;

	memset(&dj, 0, sizeof(dj));
	snprintf(dj.id, sizeof(dj.id), "%s", id);
	snprintf(dj.cluster_id, sizeof(dj.cluster_id), "%s", t->id);
	snprintf(dj.environment, sizeof(dj.environment), "%s", environment);
	snprintf(dj.queue, sizeof(dj.queue), "%s", queue);
	dj.attempt = attempt;
	dj.spec = spec;
	dj.placement = placement;
	return dispatch_render(&dj, t, e);
}

json_t *
dispatch_signal_render(const struct dispatch_job *j, const struct dispatch_target *t,
    const struct kuberay_signal *sig, bool configmap_only, struct err *e)
{
	struct kuberay_input in;
	struct job_spec s;
	json_t *out = NULL;
	char tpu[64], lq[128];

	if (fill_input(j, t, &in, &s, tpu, sizeof(tpu), lq, sizeof(lq), e))
		out = configmap_only ? kuberay_signal_configmap(&in, sig, e) :
		    kuberay_signal_objects(&in, sig, e);
	jobspec_cleanup(&s);
	return out;
}

bool
dispatch_signal_apply(const struct dispatch_job *j, const struct dispatch_target *t,
    const struct kuberay_signal *sig, bool configmap_only, struct err *e)
{
	json_t *objs = dispatch_signal_render(j, t, sig, configmap_only, e);
	bool ok = objs != NULL;

	if (objs != NULL && json_is_object(objs))
		objs = json_pack("[o]", objs);
	/* ServiceAccount, ConfigMap, Role and RoleBinding name each other but need no order:
	 * applied at once, one round trip instead of four */
	ok = ok && kube_apply_all(&t->pc, objs, e);
	json_decref(objs);
	return ok;
}

const char *
dispatch_kueue_reason(const struct dispatch_job *j, const struct dispatch_target *t,
    bool *gated)
{
	struct kuberay_input in;
	struct job_spec s;
	struct err e = { 0 };
	const char *why = NULL;
	char tpu[64], lq[128];

	*gated = false;
	if (fill_input(j, t, &in, &s, tpu, sizeof(tpu), lq, sizeof(lq), &e))
		*gated = kuberay_kueue_gated(&in, &why);
	jobspec_cleanup(&s);
	return why;
}

bool
dispatch_signal_delete(const struct prov_cluster *pc, const char *ns, const char *job_id,
    int attempt, struct err *e)
{
	static const char *const kinds[4][2] = {
		{ "rbac.authorization.k8s.io/v1", "RoleBinding" },
		{ "rbac.authorization.k8s.io/v1", "Role" },
		{ "v1", "ServiceAccount" },
		{ "v1", "ConfigMap" },
	};
	char name[64];

	if (ns == NULL || job_id == NULL || !kuberay_signal_name(job_id, attempt, name,
	    sizeof(name)))
		return true;	/* no such objects were ever named */
	for (size_t i = 0; i < 4; i++)
		if (!kube_delete_object(pc, kinds[i][0], kinds[i][1], ns, name, NULL, e))
			return false;
	return true;
}

void
dispatch_signal_delete_for(const struct prov_cluster *pc, const json_t *manifest,
    const char *who)
{
	json_t *md = json_object_get(manifest, "metadata"), *l = json_object_get(md, "labels");
	const char *id = json_string_value(json_object_get(l, "fleet.io/job-id"));
	const char *at = json_string_value(json_object_get(l, "fleet.io/attempt"));
	struct err e = { 0 };

	if (id == NULL || at == NULL)
		return;
	if (!dispatch_signal_delete(pc, json_string_value(json_object_get(md, "namespace")), id,
	    atoi(at), &e))
		log_warn(NULL, who, "cannot delete an attempt's signal objects", "{s:s, s:s, s:s}",
		    "job", id, "attempt", at, "error", e.msg);
}

bool
dispatch_query_escape(const char *s, char *out, size_t n)
{
	static const char hex[] = "0123456789ABCDEF";
	size_t k = 0;

	for (; *s != '\0'; s++) {
		unsigned char ch = (unsigned char)*s;

		if ((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
		    (ch >= '0' && ch <= '9') || ch == '-' || ch == '_' || ch == '.' || ch == '~') {
			if (k + 1 >= n)
				return false;
			out[k++] = (char)ch;
		} else {
			if (k + 3 >= n)
				return false;
			out[k++] = '%';
			out[k++] = hex[ch >> 4];
			out[k++] = hex[ch & 15];
		}
	}
	if (k >= n)
		return false;
	out[k] = '\0';
	return true;
}

/* One page; *next gets metadata.continue (malloc'd) or NULL. */
static bool
list_page(const struct prov_cluster *k, const char *url, json_t *items, char **next,
    char *rv, size_t rvn, struct err *e)
{
	struct http_header h[1] = { { "Accept", "application/json" } };
	struct http_req rq = { 0 };
	struct http_resp r = { 0 };
	json_t *j = NULL, *it;
	const char *cont;
	bool ok = false;
	size_t i;

	*next = NULL;
	rq.url = url;
	rq.bearer = k->token;
	rq.ca_pem = k->ca_pem;
	rq.headers = h;
	rq.nheaders = 1;
	rq.timeout_ms = LIST_TIMEOUT_MS;
	rq.retry.max_attempts = 2;
	rq.retry.max_delay_ms = 1000;
	if (!http_do(&rq, &r, e))
		goto cleanup;
	if ((j = kube_list_answer(&r, "list", e)) == NULL)
		goto cleanup;
	json_array_foreach(json_object_get(j, "items"), i, it)
		if (json_is_object(it))
			json_array_append(items, it);
	if (rv != NULL && rv[0] == '\0')	/* the first page's: a watch from it misses none */
		snprintf(rv, rvn, "%s", json_string_value(json_object_get(json_object_get(j,
		    "metadata"), "resourceVersion")) ? json_string_value(json_object_get(
		    json_object_get(j, "metadata"), "resourceVersion")) : "");
	cont = json_string_value(json_object_get(json_object_get(j, "metadata"), "continue"));
	if (cont != NULL && cont[0] != '\0')
		*next = xstrdup(cont);
	ok = true;
cleanup:
	json_decref(j);
	http_resp_cleanup(&r);
	return ok;
}

bool
dispatch_kube_list(const struct prov_cluster *k, const char *path, const char *query,
    json_t **items, struct err *e)
{
	return dispatch_kube_list_rv(k, path, query, items, NULL, 0, e);
}

bool
dispatch_kube_list_rv(const struct prov_cluster *k, const char *path, const char *query,
    json_t **items, char *rv, size_t rvn, struct err *e)
{
	size_t n = strlen(k->api_server);
	char url[4096], esc[1024], *cont = NULL;
	json_t *all = json_array();
	int pages = 0;

	*items = NULL;
	if (rv != NULL && rvn > 0)
		rv[0] = '\0';
	while (n > 0 && k->api_server[n - 1] == '/')
		n--;
	for (;;) {
		char *next = NULL;

		if (cont != NULL && !dispatch_query_escape(cont, esc, sizeof(esc))) {
			free(cont);
			json_decref(all);
			return err_set(e, 502, "kube.bad_answer", "continue token too long");
		}
		snprintf(url, sizeof(url), "%.*s%s?limit=500%s%s%s%s", (int)n, k->api_server, path,
		    query ? "&" : "", query ? query : "", cont ? "&continue=" : "",
		    cont ? esc : "");
		free(cont);
		cont = NULL;
		if (!list_page(k, url, all, &next, rv, rvn, e)) {
			json_decref(all);
			return false;
		}
		if (next == NULL)
			break;
		if (++pages >= LIST_MAX_PAGES) {
			free(next);
			json_decref(all);
			return err_set(e, 502, "kube.paging", "list has too many pages");
		}
		cont = next;
	}
	*items = all;
	return true;
}

bool
dispatch_event_once(struct db *c, const char *job_id, int attempt, const char *type,
    const char *key, const char *message, json_t *data, struct err *e)
{
	static const char sql[] =
	    "INSERT INTO job_events (job_id, type, attempt, message, data)"
	    " SELECT j.id, $2, j.attempt, $3, $4::jsonb FROM jobs j"
	    " WHERE j.id = $1::uuid AND j.attempt = $5::int AND NOT EXISTS (SELECT 1 FROM"
	    " job_events v WHERE v.job_id = j.id AND v.attempt = j.attempt AND v.type = $2"
	    " AND v.data->>'key' = $6)";
	json_t *d = data ? json_deep_copy(data) : json_object();
	char at[16], *ds;
	bool ok;

	json_object_set_new(d, "key", json_string(key));
	ds = json_dumps(d, JSON_COMPACT);
	snprintf(at, sizeof(at), "%d", attempt);
	{
		const char *p[6] = { job_id, type, message ? message : "", ds, at, key };

		ok = db_exec(c, sql, 6, p, NULL, e);
	}
	free(ds);
	json_decref(d);
	return ok;
}
