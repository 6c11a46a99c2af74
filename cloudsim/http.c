/* cloudsim http: two libmicrohttpd daemons (plain HTTP for the provider APIs and /_sim,
 * TLS for the member Kubernetes API servers), request parsing, fault injection, routing
 * and error replies in each service family's own shape. */
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include <arpa/inet.h>
#include <microhttpd.h>
#include <netinet/in.h>

#include "cloudsim/cs.h"
#include "core/crypto.h"

static struct MHD_Daemon *plain_d, *tls_d;
static volatile bool stopping;	/* set before the daemons stop: sleeping faults end */

/* Sleeps ms milliseconds in small steps; false when cloudsim is stopping. */
static bool
nap(long ms)
{
	while (ms > 0 && !stopping) {
		long step = ms > 50 ? 50 : ms;

		usleep((useconds_t)step * 1000);
		ms -= step;
	}
	return !stopping;
}
static int tls_marker;

bool
cs_http_stopping(void)
{
	return stopping;
}

static ssize_t
stream_cb(void *cls, uint64_t pos, char *buf, size_t max)
{
	long n = cs_stream_read(cls, buf, max);

	(void)pos;
	return n > 0 ? (ssize_t)n : MHD_CONTENT_READER_END_OF_STREAM;
}

static void
stream_free(void *cls)
{
	cs_stream_free(cls);
}

const char *
cs_query(const struct cs_req *rq, const char *name)
{
	size_t i;

	for (i = 0; i < rq->nqs; i++)
		if (strcmp(rq->qs[i].k, name) == 0)
			return rq->qs[i].v;
	return NULL;
}

const char *
cs_header(const struct cs_req *rq, const char *name)
{
	size_t i;

	for (i = 0; i < rq->nhdr; i++)
		if (strcasecmp(rq->hdr[i].k, name) == 0)
			return rq->hdr[i].v;
	return NULL;
}

void
cs_reply_text(struct cs_req *rq, int status, const char *ctype, const char *text)
{
	free(rq->resp);
	rq->status = status;
	rq->ctype = ctype;
	rq->resp = strdup(text ? text : "");
	rq->resp_len = strlen(rq->resp);
}

void
cs_reply_json(struct cs_req *rq, int status, json_t *body)
{
	char *s = json_dumps(body, JSON_COMPACT);

	cs_reply_text(rq, status, "application/json", s ? s : "{}");
	free(s);
	json_decref(body);
}

void
cs_reply_header(struct cs_req *rq, const char *name, const char *value)
{
	if (rq->nrhdr >= sizeof(rq->rhdr) / sizeof(rq->rhdr[0]))
		return;
	rq->rhdr[rq->nrhdr].k = strdup(name);
	rq->rhdr[rq->nrhdr].v = strdup(value);
	rq->nrhdr++;
}

static const char *
google_status(int status)
{
	switch (status) {
	case 400: return "INVALID_ARGUMENT";
	case 401: return "UNAUTHENTICATED";
	case 403: return "PERMISSION_DENIED";
	case 404: return "NOT_FOUND";
	case 409: return "ALREADY_EXISTS";
	case 429: return "RESOURCE_EXHAUSTED";
	case 503: return "UNAVAILABLE";
	default: return "INTERNAL";
	}
}

static json_t *
aad_error(const char *code, const char *msg)
{
	char ts[32], trace[40], corr[40];
	int n = 0;

	cs_rfc3339(time(NULL), ts);
	cs_uuid(trace);
	cs_uuid(corr);
	if (strncmp(msg, "AADSTS", 6) == 0)
		n = atoi(msg + 6);
	return json_pack("{s:s, s:s, s:[i], s:s, s:s, s:s}", "error", code, "error_description",
	    msg, "error_codes", n, "timestamp", ts, "trace_id", trace, "correlation_id", corr);
}

void
cs_reply_no_resource(struct cs_req *rq)
{
	cs_reply_error(rq, 404, "NotFound", "the server could not find the requested "
	    "resource");
}

void
cs_reply_error(struct cs_req *rq, int status, const char *code, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;
	json_t *j = NULL;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	switch (rq->fam) {
	case FAM_GOOGLE: {
		bool upper = code != NULL && code[0] >= 'A' && code[0] <= 'Z';
		const char *reason = code != NULL && !upper ? code :
		    status == 401 ? "authError" : status == 404 ? "notFound" :
		    status == 403 ? "forbidden" : status == 429 ? "rateLimitExceeded" :
		    status >= 500 ? "backendError" : "badRequest";

		j = json_pack("{s:{s:i, s:s, s:s, s:[{s:s, s:s, s:s}]}}", "error", "code", status,
		    "message", msg, "status", upper ? code : google_status(status), "errors",
		    "message", msg, "domain", "global", "reason", reason);
		break;
	}
	case FAM_OAUTH:
		j = json_pack("{s:s, s:s}", "error", code, "error_description", msg);
		break;
	case FAM_AAD:
		j = aad_error(code, msg);
		break;
	case FAM_ARM:
		j = json_pack("{s:{s:s, s:s}}", "error", "code", code, "message", msg);
		break;
	case FAM_AWS_QUERY: {
		char *em = cs_xml_escape(msg), *x = NULL;

		if (asprintf(&x, "<ErrorResponse xmlns=\"https://%s.amazonaws.com/doc/%s/\">\n"
		    "  <Error>\n    <Type>%s</Type>\n    <Code>%s</Code>\n    <Message>%s</Message>\n"
		    "  </Error>\n  <RequestId>%s</RequestId>\n</ErrorResponse>\n",
		    strcmp(rq->service, "sts") == 0 ? "sts" : "iam",
		    strcmp(rq->service, "sts") == 0 ? "2011-06-15" : "2010-05-08",
		    status >= 500 ? "Receiver" : "Sender", code, em, rq->req_id) < 0)
			abort();
		cs_reply_text(rq, status, "text/xml", x);
		free(x);
		free(em);
		return;
	}
	case FAM_AWS_JSON:
		j = json_pack("{s:s, s:s}", "__type", code, "message", msg);
		cs_reply_json(rq, status, j);
		rq->ctype = "application/x-amz-json-1.1";
		cs_reply_header(rq, "x-amzn-ErrorType", code);
		return;
	case FAM_K8S:
		j = json_pack("{s:s, s:s, s:{}, s:s, s:s, s:s, s:i}", "kind", "Status",
		    "apiVersion", "v1", "metadata", "status", "Failure", "message", msg, "reason",
		    code, "code", status);
		break;
	default:
		j = json_pack("{s:s, s:s}", "code", code, "error", msg);
		break;
	}
	cs_reply_json(rq, status, j);
}

/* ---- parsing */

static void
kv_add(struct cs_kv **v, size_t *n, char *k, char *val)
{
	*v = realloc(*v, (*n + 1) * sizeof(**v));
	if (*v == NULL)
		abort();
	(*v)[*n].k = k;
	(*v)[*n].v = val;
	(*n)++;
}

static void
parse_uri(struct cs_req *rq)
{
	const char *q = strchr(rq->raw_uri, '?'), *p, *s;

	rq->path = q ? strndup(rq->raw_uri, (size_t)(q - rq->raw_uri)) : strdup(rq->raw_uri);
	rq->query = q ? strdup(q + 1) : NULL;
	for (p = rq->path; *p == '/'; p++)
		;
	while (*p) {
		s = strchr(p, '/');
		if (s == NULL)
			s = p + strlen(p);
		rq->seg = realloc(rq->seg, (rq->nseg + 1) * sizeof(*rq->seg));
		if (rq->seg == NULL)
			abort();
		rq->seg[rq->nseg++] = cs_pct_decode(p, (size_t)(s - p));
		p = *s ? s + 1 : s;
	}
	for (p = rq->query; p != NULL && *p;) {
		const char *amp = strchr(p, '&'), *eq;
		size_t len = amp ? (size_t)(amp - p) : strlen(p);

		eq = memchr(p, '=', len);
		if (len > 0)
			kv_add(&rq->qs, &rq->nqs, cs_form_decode(p, eq ? (size_t)(eq - p) : len),
			    eq ? cs_form_decode(eq + 1, len - (size_t)(eq - p) - 1) : strdup(""));
		p = amp ? amp + 1 : p + len;
	}
}

static enum MHD_Result
hdr_cb(void *cls, enum MHD_ValueKind kind, const char *key, const char *value)
{
	struct cs_req *rq = cls;

	(void)kind;
	if (rq->nhdr < 200)
		kv_add(&rq->hdr, &rq->nhdr, strdup(key), strdup(value ? value : ""));
	return MHD_YES;
}

static void
route(struct cs_req *rq, void (**fn)(struct cs *, struct cs_req *))
{
	static const struct {
		const char *prefix, *service;
		enum cs_family fam;
		void (*fn)(struct cs *, struct cs_req *);
	} t[] = {
		{ "/_sim/", "sim", FAM_SIM, cs_sim_handle },
		{ "/gcp/oauth2/", "gcp_oauth", FAM_OAUTH, cs_gcp_handle },
		{ "/gcp/iamcredentials/", "iamcredentials", FAM_GOOGLE, cs_gcp_handle },
		{ "/gcp/iam/", "gcp_iam", FAM_GOOGLE, cs_gcp_handle },
		{ "/gke/", "gke", FAM_GOOGLE, cs_gcp_handle },
		{ "/gce/", "gce", FAM_GOOGLE, cs_gcp_handle },
		{ "/azure/login/", "azure_login", FAM_AAD, cs_azure_handle },
		{ "/arm/", "arm", FAM_ARM, cs_azure_handle },
		{ "/azure/prices/", "azure_prices", FAM_ARM, cs_prices_handle },
		{ "/aws/pricing/", "aws_pricing", FAM_SIM, cs_aws_prices_handle },
		{ "/aws/sts", "sts", FAM_AWS_QUERY, cs_aws_handle },
		{ "/aws/iam", "aws_iam", FAM_AWS_QUERY, cs_aws_handle },
		{ "/aws/sagemaker", "sagemaker", FAM_AWS_JSON, cs_aws_handle },
	};
	size_t i;

	*fn = NULL;
	rq->service = "none";
	rq->fam = rq->tls ? FAM_K8S : FAM_SIM;
	/* the TLS port serves the Kubernetes API servers under /k8s/ and, for clients that
	 * refuse plain http (MSAL, the Azure SDK's bearer policy), every provider API too */
	if (rq->tls && (strncmp(rq->path, "/k8s/", 5) == 0 || strcmp(rq->path, "/k8s") == 0 ||
	    strncmp(rq->path, "/_sim", 5) == 0)) {
		rq->fam = FAM_K8S;
		rq->service = "k8s";
		if (rq->nseg >= 2 && strcmp(rq->seg[0], "k8s") == 0)
			*fn = cs_kube_handle;
		return;
	}
	for (i = rq->tls ? 1 : 0; i < sizeof(t) / sizeof(t[0]); i++)
		if (strncmp(rq->path, t[i].prefix, strlen(t[i].prefix)) == 0) {
			rq->service = t[i].service;
			rq->fam = t[i].fam;
			*fn = t[i].fn;
			return;
		}
}

/* Which cluster and region a request is about, for fault matching (locked). */
static void
scope(struct cs *cs, struct cs_req *rq)
{
	const char *auth = cs_header(rq, "Authorization"), *c;
	size_t i, j;

	for (i = 0; i < rq->nseg && rq->scope_cluster[0] == '\0'; i++)
		if (cs_cluster_find(cs, rq->seg[i]) != NULL)
			snprintf(rq->scope_cluster, sizeof(rq->scope_cluster), "%s", rq->seg[i]);
	for (j = 0; rq->body != NULL && rq->scope_cluster[0] == '\0' && j < cs->nclusters; j++) {
		char pat[80], *arn = NULL;

		snprintf(pat, sizeof(pat), "\"%s\"", cs->clusters[j].name);
		if (cs->clusters[j].provider == CS_HYPERPOD)
			arn = cs_hyperpod_arn(&cs->clusters[j]);
		if (strstr(rq->body, pat) != NULL || (arn != NULL && strstr(rq->body, arn)))
			snprintf(rq->scope_cluster, sizeof(rq->scope_cluster), "%s",
			    cs->clusters[j].name);
		free(arn);
	}
	if (rq->scope_cluster[0] != '\0') {
		snprintf(rq->scope_region, sizeof(rq->scope_region), "%s",
		    cs_cluster_find(cs, rq->scope_cluster)->region);
		return;
	}
	for (i = 0; i < rq->nseg; i++)
		for (j = 0; j < cs->nclusters; j++) {
			size_t n = strlen(cs->clusters[j].region);

			if (strncmp(rq->seg[i], cs->clusters[j].region, n) == 0 &&
			    (rq->seg[i][n] == '\0' || rq->seg[i][n] == '-')) {
				snprintf(rq->scope_region, sizeof(rq->scope_region), "%s",
				    cs->clusters[j].region);
				return;
			}
		}
	if (auth != NULL && (c = strstr(auth, "Credential=")) != NULL) {
		const char *s1 = strchr(c, '/'), *s2 = s1 ? strchr(s1 + 1, '/') : NULL,
		    *s3 = s2 ? strchr(s2 + 1, '/') : NULL;

		if (s3 != NULL && s3 - s2 - 1 < (long)sizeof(rq->scope_region))
			snprintf(rq->scope_region, sizeof(rq->scope_region), "%.*s",
			    (int)(s3 - s2 - 1), s2 + 1);
	}
}

static bool
service_match(const char *want, const char *svc)
{
	if (want[0] == '\0' || strcmp(want, "*") == 0 || strcmp(want, svc) == 0)
		return true;
	if (strcmp(want, "gcp") == 0)
		return !strcmp(svc, "gcp_oauth") || !strcmp(svc, "iamcredentials") ||
		    !strcmp(svc, "gcp_iam") || !strcmp(svc, "gke") || !strcmp(svc, "gce");
	if (strcmp(want, "azure") == 0)
		return !strcmp(svc, "azure_login") || !strcmp(svc, "arm");
	if (strcmp(want, "aws") == 0)
		return !strcmp(svc, "sts") || !strcmp(svc, "aws_iam") || !strcmp(svc, "sagemaker");
	return false;
}

/* Finds the first fault matching rq and copies it; decrements its budget (locked). */
static bool
fault_for(struct cs *cs, struct cs_req *rq, struct cs_fault *out)
{
	size_t i;

	for (i = 0; i < cs->faults.n; i++) {
		struct cs_fault *f = cs->faults.v[i];

		if ((f->stockout || f->upgrade_hold) && !f->hang && !f->unreachable &&
		    f->latency_ms == 0 && f->error_rate <= 0)
			continue;	/* a model fault, not a request fault */
		if (!service_match(f->service, rq->service))
			continue;
		if (f->cluster[0] && strcmp(f->cluster, rq->scope_cluster) != 0)
			continue;
		if (f->region[0] && strcmp(f->region, rq->scope_region) != 0)
			continue;
		if (f->watch_only && !cs_is_watch(rq))
			continue;
		*out = *f;
		if (f->remaining > 0 && --f->remaining == 0) {
			free(f);
			cs_vec_del(&cs->faults, i);
		}
		return true;
	}
	return false;
}

static bool
fault_alive(struct cs *cs, int id)
{
	size_t i;

	for (i = 0; i < cs->faults.n; i++)
		if (((struct cs_fault *)cs->faults.v[i])->id == id)
			return true;
	return false;
}

static const char *
injected_code(enum cs_family fam, int status)
{
	bool t = status == 429, u = status == 503;

	switch (fam) {
	case FAM_GOOGLE: return google_status(status);
	case FAM_OAUTH: return t ? "rate_limit_exceeded" : "internal_failure";
	case FAM_AAD: return "temporarily_unavailable";
	case FAM_ARM: return t ? "TooManyRequests" : u ? "ServiceUnavailable" :
	    "InternalServerError";
	case FAM_AWS_QUERY: return t ? "Throttling" : u ? "ServiceUnavailable" : "InternalFailure";
	case FAM_AWS_JSON: return t ? "ThrottlingException" : u ? "ServiceUnavailable" :
	    "InternalFailure";
	case FAM_K8S: return t ? "TooManyRequests" : u ? "ServiceUnavailable" : "InternalError";
	default: return "injected";
	}
}

/* True when the client closed its connection (it gave up, or its process died) while
 * the request waited: the peer's FIN shows as POLLRDHUP even behind a TLS close_notify
 * nobody has read yet.  The API server cancels such a request's context, so a write
 * delayed by a fault never reaches storage. */
static bool
client_gone(const struct cs_req *rq)
{
	const union MHD_ConnectionInfo *ci = MHD_get_connection_info(rq->con,
	    MHD_CONNECTION_INFO_CONNECTION_FD);
	struct pollfd p;

	if (ci == NULL)
		return false;
	p.fd = ci->connect_fd;
	p.events = POLLRDHUP;
	p.revents = 0;
	return poll(&p, 1, 0) == 1 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR)) != 0;
}

/* Applies latency, hangs and injected errors; true when the request was answered. */
static bool
inject(struct cs *cs, struct cs_req *rq)
{
	struct cs_fault f;
	bool hit;
	unsigned r;

	if (rq->fam == FAM_SIM)
		return false;
	pthread_mutex_lock(&cs->lock);
	scope(cs, rq);
	hit = fault_for(cs, rq, &f);
	pthread_mutex_unlock(&cs->lock);
	if (!hit)
		return false;
	if (f.unreachable) {
		rq->drop = true;
		return true;
	}
	if (f.latency_ms > 0 && (!nap(f.latency_ms) || client_gone(rq))) {
		rq->drop = true;
		return true;
	}
	if (f.hang) {
		double waited = 0, limit = f.hang_s > 0 ? f.hang_s : 600;

		while (waited < limit) {
			bool alive;

			if (!nap(50)) {
				rq->drop = true;
				return true;
			}
			waited += 0.05;
			pthread_mutex_lock(&cs->lock);
			alive = fault_alive(cs, f.id);
			pthread_mutex_unlock(&cs->lock);
			if (!alive)
				break;
		}
	}
	crypto_random(&r, sizeof(r));
	if (f.error_rate > 0 && (double)r / 4294967296.0 < f.error_rate) {
		int st = f.error_status ? f.error_status : 503;

		cs_reply_error(rq, st, injected_code(rq->fam, st), "injected fault: status %d", st);
		if (st == 429 || st == 503) {
			char ra[16];

			snprintf(ra, sizeof(ra), "%d", f.retry_after > 0 ? f.retry_after : 1);
			cs_reply_header(rq, "Retry-After", ra);
		}
		return true;
	}
	return false;
}

static void
process(struct cs_req *rq)
{
	void (*fn)(struct cs *, struct cs_req *);
	struct cs *cs = cs_g;

	cs_uuid(rq->req_id);
	parse_uri(rq);
	MHD_get_connection_values(rq->con, MHD_HEADER_KIND, hdr_cb, rq);
	route(rq, &fn);
	if (rq->too_big) {
		cs_reply_error(rq, 413, rq->fam == FAM_K8S ? "RequestEntityTooLarge" :
		    "RequestEntityTooLarge", "request body too large");
		return;
	}
	if (fn == NULL) {
		if (rq->fam == FAM_K8S)
			cs_reply_no_resource(rq);
		else
			cs_reply_error(rq, 404, "not_found", "no such endpoint");
		return;
	}
	if (inject(cs, rq))
		return;
	pthread_mutex_lock(&cs->lock);
	fn(cs, rq);
	pthread_mutex_unlock(&cs->lock);
	if (rq->resp == NULL && rq->stream == NULL)
		cs_reply_error(rq, 500, "internal", "no answer");
}

static void *
uri_cb(void *cls, const char *uri, struct MHD_Connection *con)
{
	struct cs_req *rq = calloc(1, sizeof(*rq));

	if (rq == NULL)
		abort();
	rq->raw_uri = strdup(uri ? uri : "/");
	rq->con = con;
	rq->tls = cls == &tls_marker;
	return rq;
}

static enum MHD_Result
access_cb(void *cls, struct MHD_Connection *con, const char *url, const char *method,
    const char *version, const char *upload, size_t *upload_size, void **req_cls)
{
	struct cs_req *rq = *req_cls;
	struct MHD_Response *resp;
	enum MHD_Result ret;
	size_t i;

	(void)version;
	if (rq == NULL) {
		rq = uri_cb(cls, url, con);
		*req_cls = rq;
	}
	if (!rq->started) {
		rq->started = true;
		rq->method = method;
		rq->con = con;
		return MHD_YES;
	}
	if (*upload_size > 0) {
		if (rq->body_len + *upload_size > CS_MAX_BODY) {
			rq->too_big = true;
		} else {
			if (rq->body_len + *upload_size + 1 > rq->body_cap) {
				rq->body_cap = (rq->body_len + *upload_size + 1) * 2;
				rq->body = realloc(rq->body, rq->body_cap);
				if (rq->body == NULL)
					abort();
			}
			memcpy(rq->body + rq->body_len, upload, *upload_size);
			rq->body_len += *upload_size;
			rq->body[rq->body_len] = '\0';
		}
		*upload_size = 0;
		return MHD_YES;
	}
	process(rq);
	if (rq->drop)
		return MHD_NO;
	if (rq->stream != NULL) {	/* a watch: chunked, one JSON event per line */
		resp = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 32 * 1024, stream_cb,
		    rq->stream, stream_free);
		rq->stream = NULL;
		MHD_add_response_header(resp, "Content-Type", "application/json");
		MHD_add_response_header(resp, "Cache-Control", "no-cache, private");
		MHD_add_response_header(resp, "X-Request-Id", rq->req_id);
		ret = MHD_queue_response(con, MHD_HTTP_OK, resp);
		MHD_destroy_response(resp);
		return ret;
	}
	resp = MHD_create_response_from_buffer(rq->resp_len, rq->resp, MHD_RESPMEM_MUST_COPY);
	MHD_add_response_header(resp, "Content-Type", rq->ctype);
	MHD_add_response_header(resp, rq->fam == FAM_AWS_JSON || rq->fam == FAM_AWS_QUERY ?
	    "x-amzn-RequestId" : "X-Request-Id", rq->req_id);
	for (i = 0; i < rq->nrhdr; i++)
		MHD_add_response_header(resp, rq->rhdr[i].k, rq->rhdr[i].v);
	ret = MHD_queue_response(con, (unsigned)rq->status, resp);
	MHD_destroy_response(resp);
	return ret;
}

static void
kv_free(struct cs_kv *v, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++) {
		free(v[i].k);
		free(v[i].v);
	}
}

static void
done_cb(void *cls, struct MHD_Connection *con, void **req_cls,
    enum MHD_RequestTerminationCode toe)
{
	struct cs_req *rq = *req_cls;
	size_t i;

	(void)cls;
	(void)con;
	(void)toe;
	if (rq == NULL)
		return;
	for (i = 0; i < rq->nseg; i++)
		free(rq->seg[i]);
	free(rq->seg);
	kv_free(rq->qs, rq->nqs);
	free(rq->qs);
	kv_free(rq->hdr, rq->nhdr);
	free(rq->hdr);
	kv_free(rq->rhdr, rq->nrhdr);
	free(rq->raw_uri);
	free(rq->path);
	free(rq->query);
	free(rq->body);
	free(rq->resp);
	cs_stream_free(rq->stream);
	free(rq);
	*req_cls = NULL;
}

static struct MHD_Daemon *
start(const char *host, int port, const char *key, const char *cert, void *marker)
{
	struct sockaddr_in sin;
	unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_THREAD_PER_CONNECTION |
	    MHD_USE_POLL;

	memset(&sin, 0, sizeof(sin));
	sin.sin_family = AF_INET;
	sin.sin_port = htons((uint16_t)port);
	if (inet_pton(AF_INET, host, &sin.sin_addr) != 1)
		return NULL;
	if (key != NULL)
		return MHD_start_daemon(flags | MHD_USE_TLS, (uint16_t)port, NULL, NULL,
		    access_cb, marker, MHD_OPTION_SOCK_ADDR, &sin, MHD_OPTION_URI_LOG_CALLBACK,
		    uri_cb, marker, MHD_OPTION_NOTIFY_COMPLETED, done_cb, NULL,
		    MHD_OPTION_HTTPS_MEM_KEY, key, MHD_OPTION_HTTPS_MEM_CERT, cert,
		    MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)120, MHD_OPTION_END);
	return MHD_start_daemon(flags, (uint16_t)port, NULL, NULL, access_cb, marker,
	    MHD_OPTION_SOCK_ADDR, &sin, MHD_OPTION_URI_LOG_CALLBACK, uri_cb, marker,
	    MHD_OPTION_NOTIFY_COMPLETED, done_cb, NULL, MHD_OPTION_CONNECTION_TIMEOUT,
	    (unsigned)120, MHD_OPTION_END);
}

static int
bound_port(struct MHD_Daemon *d)
{
	const union MHD_DaemonInfo *i = MHD_get_daemon_info(d, MHD_DAEMON_INFO_BIND_PORT);

	return i ? i->port : 0;
}

bool
cs_http_start(struct cs *cs, const char *host, int port, int kube_port, const char *key_pem,
    const char *cert_pem, struct err *e)
{
	plain_d = start(host, port, NULL, NULL, NULL);
	if (plain_d == NULL)
		return err_set(e, 500, "cloudsim.listen", "cannot listen on %s:%d", host, port);
	tls_d = start(host, kube_port, key_pem, cert_pem, &tls_marker);
	if (tls_d == NULL && kube_port != 0)	/* the earlier run's port is taken */
		tls_d = start(host, 0, key_pem, cert_pem, &tls_marker);
	if (tls_d == NULL) {
		MHD_stop_daemon(plain_d);
		plain_d = NULL;
		return err_set(e, 500, "cloudsim.listen", "cannot start the tls listener");
	}
	snprintf(cs->base_url, sizeof(cs->base_url), "http://%s:%d", host, bound_port(plain_d));
	snprintf(cs->kube_url, sizeof(cs->kube_url), "https://%s:%d", host, bound_port(tls_d));
	return true;
}

void
cs_http_stop(void)
{
	stopping = true;
	if (tls_d != NULL)
		MHD_stop_daemon(tls_d);
	if (plain_d != NULL)
		MHD_stop_daemon(plain_d);
	tls_d = plain_d = NULL;
}
