/* cluster: validation, reachability probe, rows; credentials are sealed before they reach
 * SQL and opened only for the drivers. */
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include <uuid/uuid.h>

#include "core/config.h"
#include "core/crypto.h"
#include "core/http.h"
#include "core/jsonx.h"
#include "providers/kube.h"
#include "regions/catalog.h"
#include "regions/cluster.h"

bool
cluster_master_key(uint8_t key[32], struct err *e)
{
	size_t n = 0;
	uint8_t *raw = cfg.master_key ? crypto_b64_decode(cfg.master_key, &n) : NULL;

	if (raw == NULL || n != 32) {
		free(raw);
		return err_set(e, 503, "config.no_master_key",
		    "FLEETD_MASTER_KEY must be set to base64 of 32 bytes");
	}
	memcpy(key, raw, 32);
	memset(raw, 0, n);
	free(raw);
	return true;
}

/* A PEM certificate block whose body is valid base64. */
static bool
pem_valid(const char *s)
{
	const char *b = strstr(s, "-----BEGIN CERTIFICATE-----");
	const char *end = b ? strstr(b, "-----END CERTIFICATE-----") : NULL;
	char *body;
	uint8_t *der;
	size_t n = 0, k = 0;

	if (b == NULL || end == NULL || end - b > 65536)
		return false;
	b += strlen("-----BEGIN CERTIFICATE-----");
	body = calloc(1, (size_t)(end - b) + 1);
	for (const char *p = b; p < end; p++)
		if (*p != '\n' && *p != '\r' && *p != ' ')
			body[k++] = *p;
	der = crypto_b64_decode(body, &n);
	free(body);
	free(der);
	return der != NULL && n > 64;
}

/* Copies segment i (0-based, '/'-separated, no leading '/') of s into out; false when
 * it is missing, empty or longer than outlen - 1. */
static bool
segment(const char *s, int i, char *out, size_t outlen)
{
	const char *p = s, *end;

	for (; i > 0; i--) {
		if ((p = strchr(p, '/')) == NULL)
			return false;
		p++;
	}
	end = strchr(p, '/');
	if (end == NULL)
		end = p + strlen(p);
	if (end == p || (size_t)(end - p) >= outlen)
		return false;
	memcpy(out, p, (size_t)(end - p));
	out[end - p] = '\0';
	return true;
}

static int
count_char(const char *s, char c)
{
	int n = 0;

	for (; *s != '\0'; s++)
		n += *s == c;
	return n;
}

static bool
chars_only(const char *s, const char *set)
{
	return s[0] != '\0' && strspn(s, set) == strlen(s);
}

#define LOWER_DIGITS	"abcdefghijklmnopqrstuvwxyz0123456789"
/* The stored kueue settings: NULL unless the scheduler parameter $s is kueue. */
#define KUEUE_SQL(s, el, cq, pre) "CASE WHEN $" #s " = 'kueue' THEN jsonb_build_object(" \
	"'elastic_jobs', $" #el "::boolean, 'cluster_queue', $" #cq "::text," \
	" 'local_queue_prefix', $" #pre "::text) END"

/* Parses a provider cluster id into its parts; false unless it is exactly the provider's
 * grammar (no dot segments, no extra segments, no characters a URL would reinterpret):
 *   gke:      projects/<project>/locations/<region or zone>/clusters/<name>
 *   aks:      /subscriptions/<uuid>/resourceGroups/<rg>/providers/
 *             Microsoft.ContainerService/managedClusters/<name>
 *   hyperpod: arn:aws:sagemaker:<region>:<12 digits>:cluster/<id> */
bool
cluster_provider_id_parse(const char *provider, const char *id, struct provider_id *out)
{
	char seg[8][128];

	memset(out, 0, sizeof(*out));
	if (id == NULL || strlen(id) > 512 || strstr(id, "..") != NULL)
		return false;
	if (strcmp(provider, "gke") == 0) {
		if (count_char(id, '/') != 5)
			return false;
		for (int i = 0; i < 6; i++)
			if (!segment(id, i, seg[i], sizeof(seg[i])))
				return false;
		if (strcmp(seg[0], "projects") != 0 || strcmp(seg[2], "locations") != 0 ||
		    strcmp(seg[4], "clusters") != 0 || !chars_only(seg[1], LOWER_DIGITS "-") ||
		    !chars_only(seg[3], LOWER_DIGITS "-") || !chars_only(seg[5], LOWER_DIGITS "-") ||
		    strlen(seg[5]) > 40 || strlen(seg[1]) > 30)
			return false;
		snprintf(out->account, sizeof(out->account), "%s", seg[1]);
		snprintf(out->location, sizeof(out->location), "%s", seg[3]);
		snprintf(out->name, sizeof(out->name), "%s", seg[5]);
		return true;
	}
	if (strcmp(provider, "aks") == 0) {
		if (id[0] != '/' || count_char(id, '/') != 8)
			return false;
		for (int i = 0; i < 8; i++)
			if (!segment(id + 1, i, seg[i], sizeof(seg[i])))
				return false;
		if (strcasecmp(seg[0], "subscriptions") != 0 ||
		    strcasecmp(seg[2], "resourceGroups") != 0 ||
		    strcasecmp(seg[4], "providers") != 0 ||
		    strcasecmp(seg[5], "Microsoft.ContainerService") != 0 ||
		    strcasecmp(seg[6], "managedClusters") != 0 || strlen(seg[1]) != 36 ||
		    !chars_only(seg[1], "0123456789abcdefABCDEF-") || strlen(seg[3]) > 90 ||
		    !chars_only(seg[3], LOWER_DIGITS "ABCDEFGHIJKLMNOPQRSTUVWXYZ._()-") ||
		    seg[3][strlen(seg[3]) - 1] == '.' || strlen(seg[7]) > 63 ||
		    !chars_only(seg[7], LOWER_DIGITS "ABCDEFGHIJKLMNOPQRSTUVWXYZ_-"))
			return false;
		snprintf(out->account, sizeof(out->account), "%s", seg[1]);
		snprintf(out->group, sizeof(out->group), "%s", seg[3]);
		snprintf(out->name, sizeof(out->name), "%s", seg[7]);
		return true;
	}
	if (strcmp(provider, "hyperpod") == 0) {
		const char *p = id + strlen("arn:aws:sagemaker:"), *c1, *c2;

		if (strncmp(id, "arn:aws:sagemaker:", 18) != 0 || (c1 = strchr(p, ':')) == NULL ||
		    (c2 = strchr(c1 + 1, ':')) == NULL || strncmp(c2 + 1, "cluster/", 8) != 0 ||
		    c1 - p < 1 || c1 - p > 30 || c2 - c1 - 1 != 12)
			return false;
		snprintf(out->location, sizeof(out->location), "%.*s", (int)(c1 - p), p);
		snprintf(out->account, sizeof(out->account), "%.12s", c1 + 1);
		snprintf(out->name, sizeof(out->name), "%s", c2 + 9);
		return chars_only(out->location, LOWER_DIGITS "-") &&
		    chars_only(out->account, "0123456789") && strlen(c2 + 9) <= 63 &&
		    chars_only(out->name, LOWER_DIGITS);
	}
	return false;
}

/* Is location the region itself or one of its zones (region + "-" + letter)? */
static bool
in_region(const char *location, const char *region)
{
	size_t n = strlen(region);

	return strcmp(location, region) == 0 || (strncmp(location, region, n) == 0 &&
	    location[n] == '-' && location[n + 1] >= 'a' && location[n + 1] <= 'z' &&
	    location[n + 2] == '\0');
}

bool
cluster_provider_id_bound(json_t *cloud, const char *id, struct err *e)
{
	const char *provider = json_string_value(json_object_get(cloud, "provider"));
	const char *region = json_string_value(json_object_get(cloud, "region"));
	json_t *acct = json_object_get(cloud, "account");
	struct provider_id p;
	const char *want = NULL;
	bool ok;

	if (provider == NULL || region == NULL || !cluster_provider_id_parse(provider, id, &p))
		return err_field(e, 400, "cluster.bad_provider_id", "/provider_cluster_id",
		    "provider_cluster_id is not a %s cluster id", provider ? provider : "");
	if (strcmp(provider, "gke") == 0)
		want = json_string_value(json_object_get(acct, "project"));
	else if (strcmp(provider, "aks") == 0)
		want = json_string_value(json_object_get(acct, "subscription_id"));
	else
		want = json_string_value(json_object_get(acct, "account_id"));
	ok = want != NULL && strcasecmp(want, p.account) == 0;
	/* an AKS resource id names no region: ARM says where it is, the poller checks */
	if (ok && strcmp(provider, "aks") != 0)
		ok = in_region(p.location, region);
	if (!ok)
		return err_field(e, 400, "cluster.bad_provider_id", "/provider_cluster_id",
		    "provider_cluster_id names a cluster outside this cloud's %s and region",
		    strcmp(provider, "gke") == 0 ? "project" : strcmp(provider, "aks") == 0 ?
		    "subscription" : "account");
	return true;
}

/* "kueue": {elastic_jobs, cluster_queue, local_queue_prefix}, only with batch_scheduler
 * kueue; absent: elastic jobs off, ClusterQueue "fleetd", no prefix. */
static bool
kueue_parse(json_t *k, struct cluster_input *in, struct err *e)
{
	static const char *const allowed[] = { "elastic_jobs", "cluster_queue",
		"local_queue_prefix", NULL };
	size_t n;

	in->kueue_elastic = false;
	in->kueue_cluster_queue = "fleetd";
	in->kueue_lq_prefix = "";
	if (k == NULL || json_is_null(k))
		return true;
	if (strcmp(in->batch_scheduler, "kueue") != 0)
		return err_field(e, 400, "cluster.bad_kueue", "/kueue",
		    "kueue settings need batch_scheduler kueue");
	if (!json_is_object(k))
		return err_field(e, 400, "api.wrong_type", "/kueue", "kueue must be an object");
	if (!jsonx_only(k, allowed, "/kueue", e) ||
	    !jsonx_bool(k, "elastic_jobs", "/kueue", false, &in->kueue_elastic, e) ||
	    !jsonx_str(k, "cluster_queue", "/kueue", false, &in->kueue_cluster_queue, e) ||
	    !jsonx_str(k, "local_queue_prefix", "/kueue", false, &in->kueue_lq_prefix, e))
		return false;
	/* Kubernetes object names: a ClusterQueue is a DNS-1123 subdomain, a LocalQueue name
	 * (prefix + a fleetd queue name of at most 40) stays a DNS-1123 label */
	if (!jsonx_name_ok(in->kueue_cluster_queue, 63))
		return err_field(e, 400, "cluster.bad_kueue", "/kueue/cluster_queue",
		    "cluster_queue must match ^[a-z][a-z0-9-]{1,62}$");
	n = strlen(in->kueue_lq_prefix);
	if (n > 20 || strspn(in->kueue_lq_prefix, LOWER_DIGITS "-") != n ||
	    (n > 0 && !(in->kueue_lq_prefix[0] >= 'a' && in->kueue_lq_prefix[0] <= 'z')))
		return err_field(e, 400, "cluster.bad_kueue", "/kueue/local_queue_prefix",
		    "local_queue_prefix must match ^([a-z][a-z0-9-]{0,19})?$");
	return true;
}

bool
cluster_parse(json_t *body, const char *provider, bool for_replace, struct cluster_input *in,
	      struct err *e)
{
	static const char *const allowed[] = { "name", "api_server", "ca_cert", "credentials",
		"provider_cluster_id", "labels", "batch_scheduler", "kueue", NULL };
	static const char *const cred_allowed[] = { "token", NULL };
	static const char *const scheds[] = { "none", "volcano", "yunikorn", "kai", "kueue", NULL };
	json_t *cred, *v;
	const char *k;
	bool sched_ok = false;

	memset(in, 0, sizeof(*in));
	in->batch_scheduler = "none";
	if (!jsonx_only(body, allowed, "", e) || !jsonx_str(body, "name", "", true, &in->name, e) ||
	    !jsonx_str(body, "api_server", "", true, &in->api_server, e) ||
	    !jsonx_str(body, "ca_cert", "", true, &in->ca_cert, e) ||
	    !jsonx_str(body, "provider_cluster_id", "", true, &in->provider_cluster_id, e) ||
	    !jsonx_str(body, "batch_scheduler", "", false, &in->batch_scheduler, e))
		return false;
	if (!jsonx_name_ok(in->name, 63))
		return err_field(e, 400, "cluster.bad_name", "/name",
		    "name must match ^[a-z][a-z0-9-]{1,62}$");
	if (strncmp(in->api_server, "https://", 8) != 0 || strlen(in->api_server) > 512 ||
	    strlen(in->api_server) < 12)
		return err_field(e, 400, "cluster.bad_api_server", "/api_server",
		    "api_server must be an https:// url");
	if (!pem_valid(in->ca_cert))
		return err_field(e, 400, "cluster.bad_ca", "/ca_cert",
		    "ca_cert must be a PEM certificate");
	{
		struct provider_id pid;

		if (!cluster_provider_id_parse(provider, in->provider_cluster_id, &pid))
			return err_field(e, 400, "cluster.bad_provider_id",
			    "/provider_cluster_id", "provider_cluster_id is not a %s cluster id",
			    provider);
	}
	for (int i = 0; scheds[i] != NULL; i++)
		sched_ok = sched_ok || strcmp(in->batch_scheduler, scheds[i]) == 0;
	if (!sched_ok)
		return err_field(e, 400, "cluster.bad_batch_scheduler", "/batch_scheduler",
		    "batch_scheduler must be none, volcano, yunikorn, kai or kueue");
	if (!kueue_parse(json_object_get(body, "kueue"), in, e))
		return false;
	cred = json_object_get(body, "credentials");
	if (cred == NULL && !for_replace)
		return err_field(e, 400, "api.missing_field", "/credentials",
		    "credentials is required");
	if (cred != NULL) {
		if (!json_is_object(cred))
			return err_field(e, 400, "api.wrong_type", "/credentials",
			    "credentials must be an object");
		if (!jsonx_only(cred, cred_allowed, "/credentials", e) ||
		    !jsonx_str(cred, "token", "/credentials", true, &in->token, e))
			return false;
		if (strlen(in->token) == 0 || strlen(in->token) > 8192)
			return err_field(e, 400, "cluster.bad_token", "/credentials/token",
			    "token must be 1 to 8192 characters");
	}
	in->labels = json_object_get(body, "labels");
	if (in->labels != NULL) {
		if (!json_is_object(in->labels) || json_object_size(in->labels) > 64)
			return err_field(e, 400, "api.wrong_type", "/labels",
			    "labels must be an object of at most 64 strings");
		json_object_foreach(in->labels, k, v) {
			char ptr[220], *o = ptr + 8;

			/* the member's JSON pointer: "~" and "/" escaped (RFC 6901) */
			memcpy(ptr, "/labels/", 8);
			for (const char *x = k; *x != '\0' && o < ptr + sizeof(ptr) - 3; x++) {
				if (*x == '~' || *x == '/') {
					*o++ = '~';
					*o++ = *x == '~' ? '0' : '1';
				} else {
					*o++ = *x;
				}
			}
			*o = '\0';
			if (!json_is_string(v) || strlen(k) > 63 || json_string_length(v) > 63)
				return err_field(e, 400, "cluster.bad_label", ptr,
				    "labels are strings of at most 63 characters");
			/* the cluster's own topology keys: node label keys the poller reads and
			 * the renderer requires (README "Placement") */
			if ((strcmp(k, "fleet.io/rack-key") == 0 ||
			    strcmp(k, "fleet.io/block-key") == 0) &&
			    !catalog_label_key_ok(json_string_value(v)))
				return err_field(e, 400, "cluster.bad_label", ptr,
				    "%s must be a node label key such as nvidia.com/gpu.clique", k);
		}
	}
	return true;
}

bool
cluster_probe(const char *api_server, const char *ca_pem, const char *token, struct err *e)
{
	struct http_req rq = { 0 };
	struct http_resp rs = { 0 };
	char url[600];
	bool ok = false;

	snprintf(url, sizeof(url), "%s/api/v1/namespaces?limit=1", api_server);
	rq.url = url;
	rq.ca_pem = ca_pem;
	rq.bearer = token;
	rq.timeout_ms = 10000;
	rq.max_body = 1024 * 1024;
	if (!http_do(&rq, &rs, NULL)) {
		err_field(e, 422, "cluster.unreachable", "/api_server",
		    "cannot reach the cluster's api server");
		err_detail(e, "The TLS handshake with the given CA or the connection failed: %.200s",
		    rs.error);
	} else if (rs.status == 401 || rs.status == 403) {
		err_field(e, 422, "cluster.unauthorized", "/credentials/token",
		    "the cluster refused the token (%ld)", rs.status);
	} else if (rs.status != 200) {
		err_field(e, 422, "cluster.unreachable", "/api_server",
		    "the cluster answered %ld", rs.status);
	} else {
		ok = true;
	}
	http_resp_cleanup(&rs);
	return ok;
}

char *
cluster_seal(const char *id, const char *text, struct err *e)
{
	uint8_t key[32];
	char *s;

	if (!cluster_master_key(key, e))
		return NULL;
	s = crypto_seal(key, text, id, e);
	memset(key, 0, sizeof(key));
	return s;
}

char *
cluster_open(const char *id, const char *sealed, struct err *e)
{
	uint8_t key[32];
	char *s;

	if (!cluster_master_key(key, e))
		return NULL;
	s = crypto_open(key, sealed, id, e);
	memset(key, 0, sizeof(key));
	return s;
}

static bool
seal_token(const char *id, const char *token, char **sealed, struct err *e)
{
	json_t *cred = json_pack("{s:s}", "token", token);
	char *text = json_dumps(cred, JSON_COMPACT);

	*sealed = cluster_seal(id, text, e);
	memset(text, 0, strlen(text));
	free(text);
	json_decref(cred);
	return *sealed != NULL;
}

bool
cluster_get(struct db *c, const char *id, bool for_update, json_t **out, struct err *e)
{
	static const char sql[] = "SELECT " CLUSTER_JSON " FROM clusters k JOIN clouds c"
	    " ON c.id = k.cloud_id WHERE k.id = $1::uuid";
	static const char sql_lock[] = "SELECT " CLUSTER_JSON " FROM clusters k JOIN clouds c"
	    " ON c.id = k.cloud_id WHERE k.id = $1::uuid FOR UPDATE OF k";
	return db_get_id_json(c, for_update ? sql_lock : sql, id, "cluster.not_found",
	    "cluster", out, e);
}

/* Runs sql with parameters p, the labels of in as JSON text at p[labels_at], and reads
 * row id back into *out. */
static bool
write_row(struct db *c, const char *sql, int n, const char **p, int labels_at,
    const struct cluster_input *in, const char *id, json_t **out, struct err *e)
{
	char *labels = in->labels ? json_dumps(in->labels, JSON_COMPACT) : strdup("{}");
	bool ok;

	p[labels_at] = labels;
	ok = db_exec(c, sql, n, p, NULL, e) && cluster_get(c, id, false, out, e);
	free(labels);
	return ok;
}

bool
cluster_create(struct db *c, const char *cloud_id, const struct cluster_input *in,
	       json_t **out, struct err *e)
{
	static const char sql[] = "INSERT INTO clusters (id, cloud_id, name, api_server, ca_cert,"
	    " credentials_sealed, provider_cluster_id, labels, batch_scheduler, kueue,"
	    " batch_probe, batch_probe_at)"
	    " VALUES ($1, $2::uuid, $3, $4, $5, $6, $7, $8::jsonb, $9, " KUEUE_SQL(9, 10, 11, 12)
	    ", $13::jsonb, CASE WHEN $13 IS NULL THEN NULL ELSE now() END)";
	char id[37], *sealed = NULL, *probe = NULL;
	uuid_t u;
	bool ok;

	uuid_generate_random(u);
	uuid_unparse_lower(u, id);
	if (!seal_token(id, in->token, &sealed, e))
		return false;
	probe = in->probe ? json_dumps(in->probe, JSON_COMPACT) : NULL;
	{
		const char *p[13] = { id, cloud_id, in->name, in->api_server, in->ca_cert, sealed,
		    in->provider_cluster_id, NULL, in->batch_scheduler,
		    in->kueue_elastic ? "true" : "false", in->kueue_cluster_queue,
		    in->kueue_lq_prefix, probe };

		ok = write_row(c, sql, 13, p, 7, in, id, out, e);
	}
	if (!ok && e->status == 409 && strstr(e->detail, "provider_cluster_id") != NULL)
		err_field(e, 409, "cluster.exists", "/provider_cluster_id",
		    "another registration already uses this provider cluster id");
	else if (!ok && e->status == 409)
		err_field(e, 409, "cluster.exists", "/name",
		    "the cloud already has a cluster named %s", in->name);
	free(sealed);
	free(probe);
	return ok;
}

bool
cluster_list(struct db *c, int limit, const char *after, const char *environment,
	     const char *region, const char *provider, const char *cloud_id,
	     const char *const *envs, int nenvs, json_t **out, struct err *e)
{
	static const char sql[] = "SELECT " CLUSTER_JSON " FROM clusters k JOIN clouds c"
	    " ON c.id = k.cloud_id"
	    " WHERE ($1 = '' OR k.id > $1::uuid) AND ($3::text IS NULL OR c.environment = $3)"
	    " AND ($4::text IS NULL OR c.region = $4) AND ($5::text IS NULL OR c.provider = $5)"
	    " AND ($6::text IS NULL OR k.cloud_id::text = $6)"
	    " AND ($7::text[] IS NULL OR c.environment = ANY($7::text[]))"
	    " ORDER BY k.id LIMIT $2";
	const char *f[4] = { environment, region, provider, cloud_id };

	return db_list_page(c, sql, limit, after, DB_CURSOR_UUID, f, 4, envs, nenvs, out,
	    e);
}

bool
cluster_replace(struct db *c, const char *id, const struct cluster_input *in, json_t **out,
		struct err *e)
{
	static const char sql[] = "UPDATE clusters SET api_server = $2, ca_cert = $3,"
	    " credentials_sealed = coalesce($4, credentials_sealed), provider_cluster_id = $5,"
	    " labels = $6::jsonb, batch_scheduler = $7, kueue = " KUEUE_SQL(7, 8, 9, 10) ","
	    " version = version + 1, updated_at = now()"
	    " WHERE id = $1::uuid AND (api_server, ca_cert, provider_cluster_id, labels,"
	    " batch_scheduler, kueue) IS DISTINCT FROM ($2, $3, $5, $6::jsonb, $7, "
	    KUEUE_SQL(7, 8, 9, 10) ") OR (id = $1::uuid AND $4::text IS NOT NULL)";
	/* the probe is what fleetd read, not the operator's change: no version of its own */
	static const char sql_probe[] = "UPDATE clusters SET batch_probe = $2::jsonb,"
	    " batch_probe_at = CASE WHEN $2 IS NULL THEN NULL ELSE now() END WHERE id = $1::uuid";
	struct err ce = { 0 };
	char *sealed = NULL, *cur = NULL, *probe = NULL;
	bool ok, same;

	/* credentials are write-only, so Terraform sends them on every apply: the same token
	 * again is no change (same version, no audit row); an unreadable one is replaced */
	if (in->token != NULL)
		cur = cluster_token(c, id, &ce);
	same = cur != NULL && strcmp(cur, in->token) == 0;
	if (cur != NULL) {
		memset(cur, 0, strlen(cur));
		free(cur);
	}
	if (in->token != NULL && !same && !seal_token(id, in->token, &sealed, e))
		return false;
	probe = in->probe ? json_dumps(in->probe, JSON_COMPACT) : NULL;
	{
		const char *p[10] = { id, in->api_server, in->ca_cert, sealed,
		    in->provider_cluster_id, NULL, in->batch_scheduler,
		    in->kueue_elastic ? "true" : "false", in->kueue_cluster_queue,
		    in->kueue_lq_prefix };
		const char *pp[2] = { id, probe };

		ok = db_exec(c, sql_probe, 2, pp, NULL, e) &&
		    write_row(c, sql, 10, p, 5, in, id, out, e);
	}
	free(sealed);
	free(probe);
	return ok;
}

bool
cluster_delete(struct db *c, const char *id, struct err *e)
{
	static const char sql_used[] = "SELECT count(*) FROM jobs WHERE cluster_id = $1::uuid"
	    " AND state IN ('admitted', 'dispatched', 'running', 'moving', 'preempted')";
	static const char *const sql_del[] = {
	    "UPDATE jobs SET cluster_id = NULL WHERE cluster_id = $1::uuid",
	    "DELETE FROM clusters WHERE id = $1::uuid" };

	return db_delete_unused(c, id, sql_used, "cluster.in_use",
	    "%lld jobs are placed on this cluster; drain it first", sql_del, 2, e);
}

bool
cluster_set_cordon(struct db *c, const char *id, bool cordoned, json_t **out, struct err *e)
{
	static const char sql[] = "UPDATE clusters SET cordoned = $2::boolean, version = version + 1,"
	    " updated_at = now() WHERE id = $1::uuid AND cordoned <> $2::boolean";
	const char *p[2] = { id, cordoned ? "true" : "false" };

	return db_exec(c, sql, 2, p, NULL, e) && cluster_get(c, id, false, out, e);
}

char *
cluster_open_token(const uint8_t key[32], const char *sealed, const char *id, struct err *e)
{
	char *text = crypto_open(key, sealed, id, e), *tok = NULL;
	json_t *j;

	if (text == NULL)
		return NULL;
	j = json_loads(text, 0, NULL);
	if (json_string_value(json_object_get(j, "token")) != NULL)
		tok = strdup(json_string_value(json_object_get(j, "token")));
	else
		err_set(e, 500, "cluster.bad_credentials", "stored credentials are unreadable");
	json_decref(j);
	memset(text, 0, strlen(text));
	free(text);
	return tok;
}

char *
cluster_token(struct db *c, const char *id, struct err *e)
{
	static const char sql[] = "SELECT credentials_sealed FROM clusters WHERE id = $1::uuid";
	const char *p[1] = { id };
	PGresult *r = NULL;
	uint8_t key[32];
	char *tok = NULL;

	if (!cluster_master_key(key, e) || !db_exec(c, sql, 1, p, &r, e))
		goto cleanup;
	if (PQntuples(r) == 0) {
		err_set(e, 404, "cluster.not_found", "cluster not found");
		goto cleanup;
	}
	tok = cluster_open_token(key, PQgetvalue(r, 0, 0), id, e);
cleanup:
	memset(key, 0, sizeof(key));
	PQclear(r);
	return tok;
}

/* ---- what the batch scheduler allows (issue 13) */

/* The value after "key:" in a YAML text (a line scan of the documented ConfigMap, enough
 * for a flat "featureGates:" map): 1 true, 0 false, -1 absent or neither. */
static int
yaml_bool_after(const char *text, const char *key)
{
	const char *p = text;
	size_t n = strlen(key);

	while ((p = strstr(p, key)) != NULL) {
		const char *q = p + n;

		p = q;
		while (*q == ' ' || *q == '"' || *q == '\'')
			q++;
		if (*q != ':')
			continue;
		q++;
		while (*q == ' ' || *q == '\t')
			q++;
		if (strncasecmp(q, "true", 4) == 0)
			return 1;
		if (strncasecmp(q, "false", 5) == 0)
			return 0;
	}
	return -1;
}

static void
say(char *msg, size_t n, const char *s)
{
	size_t l = strlen(msg);

	snprintf(msg + l, n - l, "%s%s", l ? " " : "", s);
}

json_t *
cluster_batch_probe(const struct prov_cluster *k, const char *batch_scheduler,
    bool elastic_jobs, const char *cluster_queue)
{
	json_t *out, *disc = NULL, *cm = NULL, *cq = NULL, *elastic = json_null(),
	    *ray = json_null(), *cqx = json_null(), *api = json_null();
	char path[300], msg[1024] = "", ts[40];
	long st = 0;
	struct err e = { 0 };
	bool mismatch = false, unknown = false;
	time_t now = time(NULL);
	struct tm tm;

	if (batch_scheduler == NULL || strcmp(batch_scheduler, "kueue") != 0)
		return NULL;
	if (!kube_get_path(k, "/apis/kueue.x-k8s.io", &st, &disc, &e)) {
		snprintf(msg, sizeof(msg), "The member did not answer discovery: %.200s", e.msg);
		unknown = true;
		goto done;
	}
	if (st == 404) {
		api = json_false();
		mismatch = true;
		say(msg, sizeof(msg), "The member serves no kueue.x-k8s.io API group: Kueue is "
		    "not installed, so nothing would gate the jobs.");
		goto done;
	}
	if (st != 200) {
		snprintf(msg, sizeof(msg), "Discovery of kueue.x-k8s.io answered %ld.", st);
		unknown = true;
		goto done;
	}
	api = json_true();
	err_clear(&e);
	if (kube_get_path(k, "/api/v1/namespaces/kueue-system/configmaps/kueue-manager-config",
	    &st, &cm, &e) && st == 200) {
		const char *y = json_string_value(json_object_get(json_object_get(cm, "data"),
		    "controller_manager_config.yaml"));
		int g = y ? yaml_bool_after(y, "ElasticJobsViaWorkloadSlices") : -1;

		if (y == NULL) {
			unknown = true;
			say(msg, sizeof(msg), "The Kueue ConfigMap has no controller_manager_config"
			    ".yaml.");
		} else {
			/* alpha gate, off unless the configuration turns it on */
			json_decref(elastic);
			elastic = json_boolean(g == 1);
			json_decref(ray);
			ray = json_boolean(strstr(y, "ray.io/rayjob") != NULL &&
			    strstr(y, "ray.io/raycluster") != NULL);
			if (!json_is_true(ray)) {
				mismatch = true;
				say(msg, sizeof(msg), "Kueue's integrations.frameworks lacks ray.io/"
				    "rayjob or ray.io/raycluster: Kueue would not gate Ray objects.");
			}
			if ((g == 1) != elastic_jobs) {
				mismatch = true;
				say(msg, sizeof(msg), g == 1 ? "Kueue has the "
				    "ElasticJobsViaWorkloadSlices feature gate on but the registration "
				    "says elastic_jobs false: elastic jobs run without Kueue's gate." :
				    "The registration says elastic_jobs true but Kueue's configuration "
				    "does not turn the ElasticJobsViaWorkloadSlices feature gate on "
				    "(its webhook refuses autoscaling Ray objects with a queue-name): "
				    "elastic jobs are applied without the queue-name label.");
			}
		}
	} else {
		unknown = true;
		say(msg, sizeof(msg), "The Kueue ConfigMap kueue-system/kueue-manager-config is "
		    "not readable: elastic jobs are taken as registered.");
	}
	err_clear(&e);
	snprintf(path, sizeof(path), "/apis/kueue.x-k8s.io/v1beta1/clusterqueues/%s",
	    cluster_queue ? cluster_queue : "");
	if (cluster_queue != NULL && kube_get_path(k, path, &st, &cq, &e) &&
	    (st == 200 || st == 404)) {
		json_decref(cqx);
		cqx = json_boolean(st == 200);
		if (st == 404) {
			char s[200];

			mismatch = true;
			snprintf(s, sizeof(s), "ClusterQueue %.63s does not exist: Kueue leaves the "
			    "jobs of fleetd's LocalQueues inadmissible.", cluster_queue);
			say(msg, sizeof(msg), s);
		}
	} else {
		unknown = true;
	}
done:
	gmtime_r(&now, &tm);
	strftime(ts, sizeof(ts), "%Y-%m-%dT%H:%M:%SZ", &tm);
	out = json_pack("{s:s, s:s, s:o, s:o, s:o, s:o, s:s}", "checked_at", ts, "condition",
	    mismatch ? "mismatch" : unknown ? "unverified" : "verified", "kueue_api", api,
	    "elastic_jobs", elastic, "ray_integration", ray, "cluster_queue_exists", cqx,
	    "message", msg[0] ? msg : "Kueue is installed, integrates Ray objects and agrees "
	    "with the registration.");
	json_decref(disc);
	json_decref(cm);
	json_decref(cq);
	return out;
}

bool
cluster_set_probe(struct db *c, const char *id, json_t *probe, struct err *e)
{
	static const char sql[] = "UPDATE clusters SET batch_probe = $2::jsonb,"
	    " batch_probe_at = now() WHERE id = $1::uuid";
	char *text = probe ? json_dumps(probe, JSON_COMPACT) : NULL;
	const char *p[2] = { id, text };
	bool ok = db_exec(c, sql, 2, p, NULL, e);

	free(text);
	return ok;
}

bool
cluster_kueue_elastic(json_t *kueue, json_t *probe)
{
	return json_is_true(json_object_get(kueue, "elastic_jobs")) &&
	    !json_is_false(json_object_get(probe, "elastic_jobs"));
}
