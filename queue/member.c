/* member: a member cluster as the workers call it (dispatch, status, cron, sweep, moves,
 * spec updates) — its row with the decrypted token, and paged lists of its objects. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/http.h"
#include "core/jsonx.h"
#include "core/log.h"
#include "providers/kube.h"
#include "queue/member.h"
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
member_load(struct db *c, const char *cluster_id, struct member **out,
    struct err *e)
{
	static const char sql[] = "SELECT k.name, c.provider, k.api_server, k.ca_cert,"
	    " k.batch_scheduler, k.stockout_timeout_s, k.kueue::text, k.batch_probe::text,"
	    " ev.dashboard_ingress::text,"
	    " coalesce(k.labels->>'fleet.io/rack-key', ''),"
	    " coalesce(k.labels->>'fleet.io/block-key', ''), k.credentials_sealed"
	    " FROM clusters k JOIN clouds c ON c.id = k.cloud_id"
	    " LEFT JOIN environments ev ON ev.name = c.environment WHERE k.id = $1::uuid";
	const char *p[1] = { cluster_id };
	struct member *t = NULL;
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
	snprintf(t->rack_label, sizeof(t->rack_label), "%s", PQgetvalue(r, 0, 9));
	snprintf(t->block_label, sizeof(t->block_label), "%s", PQgetvalue(r, 0, 10));
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
	/* the environment's dashboard ingress (regions/env.c checked its fields) */
	if (!PQgetisnull(r, 0, 8) &&
	    (t->dashboard_ingress = json_loads(PQgetvalue(r, 0, 8), 0, NULL)) != NULL) {
		json_t *di = t->dashboard_ingress;

		t->ingress.host = json_string_value(json_object_get(di, "host"));
		t->ingress.path = json_string_value(json_object_get(di, "path"));
		t->ingress.path_type = json_string_value(json_object_get(di, "path_type"));
		t->ingress.tls_secret = json_string_value(json_object_get(di, "tls_secret"));
		t->ingress.controller_ns = json_string_value(json_object_get(di,
		    "controller_namespace"));
	}
	/* the token from the same row (cluster_token would read it in a second round trip) */
	{
		uint8_t key[32];

		if (cluster_master_key(key, e))
			t->token = cluster_open_token(key, PQgetvalue(r, 0, 11), cluster_id, e);
		memset(key, 0, sizeof(key));
	}
	PQclear(r);
	if (t->token == NULL) {
		member_free(t);
		return false;
	}
	t->pc.id = t->id;
	t->pc.name = t->name;
	t->pc.api_server = t->api_server;
	t->pc.ca_pem = t->ca_pem;
	t->pc.token = t->token;
	t->pc.provider_cluster_id = "";
	t->pc.provider = t->provider;
	*out = t;
	return true;
}

void
member_free(struct member *t)
{
	if (t == NULL)
		return;
	if (t->token != NULL) {
		memset(t->token, 0, strlen(t->token));
		free(t->token);
	}
	free(t->api_server);
	free(t->ca_pem);
	json_decref(t->dashboard_ingress);
	free(t);
}

bool
member_query_escape(const char *s, char *out, size_t n)
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
	if (rv != NULL && rv[0] == '\0') {	/* the first page's: a watch from it misses none */
		const char *v = jsonx_meta_str(j, "resourceVersion");

		snprintf(rv, rvn, "%s", v ? v : "");
	}
	cont = jsonx_meta_str(j, "continue");
	if (cont != NULL && cont[0] != '\0')
		*next = xstrdup(cont);
	ok = true;
cleanup:
	json_decref(j);
	http_resp_cleanup(&r);
	return ok;
}

bool
member_list(const struct prov_cluster *k, const char *path, const char *query,
    json_t **items, struct err *e)
{
	return member_list_rv(k, path, query, items, NULL, 0, e);
}

bool
member_list_rv(const struct prov_cluster *k, const char *path, const char *query,
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

		if (cont != NULL && !member_query_escape(cont, esc, sizeof(esc))) {
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
