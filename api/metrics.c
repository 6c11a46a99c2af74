/* metrics: request counters by route template and status, a latency histogram per route,
 * database pool gauges; one mutex, fixed-size tables (route templates are few). */
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/metrics.h"
#include "core/db.h"
#include "core/http.h"
#include "core/textbuf.h"

#define MAX_SERIES	512
#define MAX_WRITERS	16

static const double buckets[] = { 0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5 };
#define NBUCKETS (sizeof(buckets) / sizeof(buckets[0]))

struct series {
	const char	*route;		/* static route pattern */
	char		 method[8];
	int		 status;
	unsigned long	 count;
};

struct hist {
	const char	*route;
	unsigned long	 le[NBUCKETS];
	unsigned long	 count;
	double		 sum;
};

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static struct series series[MAX_SERIES];
static int nseries;
static struct hist hists[MAX_SERIES];
static int nhists;
static metrics_writer writers[MAX_WRITERS];
static int nwriters;

/* The methods of HTTP (RFC 9110) and PATCH keep their name; any other is "other", so
 * invented methods cannot fill the series table. */
static const char *
method_bucket(const char *m)
{
	static const char *const known[] = { "GET", "HEAD", "POST", "PUT", "DELETE", "PATCH",
		"OPTIONS", "CONNECT", "TRACE", NULL };

	for (int i = 0; m != NULL && known[i] != NULL; i++)
		if (strcmp(m, known[i]) == 0)
			return known[i];
	return "other";
}

void
metrics_observe_request(const char *route, const char *method, int status, double seconds)
{
	struct series *s = NULL;
	struct hist *h = NULL;

	method = method_bucket(method);
	pthread_mutex_lock(&mu);
	for (int i = 0; i < nseries; i++) {
		if (series[i].route == route && series[i].status == status &&
		    strcmp(series[i].method, method) == 0) {
			s = &series[i];
			break;
		}
	}
	if (s == NULL && nseries < MAX_SERIES) {
		s = &series[nseries++];
		s->route = route;
		snprintf(s->method, sizeof(s->method), "%s", method);
		s->status = status;
	}
	if (s != NULL)
		s->count++;
	for (int i = 0; i < nhists; i++)
		if (hists[i].route == route)
			h = &hists[i];
	if (h == NULL && nhists < MAX_SERIES) {
		h = &hists[nhists++];
		h->route = route;
	}
	if (h != NULL) {
		for (size_t b = 0; b < NBUCKETS; b++)
			if (seconds <= buckets[b])
				h->le[b]++;
		h->count++;
		h->sum += seconds;
	}
	pthread_mutex_unlock(&mu);
}

void
metrics_register(metrics_writer fn)
{
	pthread_mutex_lock(&mu);
	if (nwriters < MAX_WRITERS)
		writers[nwriters++] = fn;
	pthread_mutex_unlock(&mu);
}

char *
metrics_render(size_t *len)
{
	size_t cap = 8192, n = 0;
	char *b = malloc(cap);
	int in_use, idle, size;
	metrics_writer w[MAX_WRITERS];
	int nw;

	if (b == NULL)
		abort();
	b[0] = '\0';
	pthread_mutex_lock(&mu);
	textbuf_appendf(&b, &n, &cap, "# HELP fleetd_http_requests_total HTTP requests answered.\n"
	    "# TYPE fleetd_http_requests_total counter\n");
	for (int i = 0; i < nseries; i++)
		textbuf_appendf(&b, &n, &cap,
		    "fleetd_http_requests_total{route=\"%s\",method=\"%s\",status=\"%d\"} %lu\n",
		    series[i].route, series[i].method, series[i].status, series[i].count);
	textbuf_appendf(&b, &n, &cap, "# HELP fleetd_http_request_duration_seconds Time to "
	    "answer a request.\n# TYPE fleetd_http_request_duration_seconds histogram\n");
	for (int i = 0; i < nhists; i++) {
		for (size_t k = 0; k < NBUCKETS; k++)
			textbuf_appendf(&b, &n, &cap, "fleetd_http_request_duration_seconds_bucket"
			    "{route=\"%s\",le=\"%g\"} %lu\n", hists[i].route, buckets[k],
			    hists[i].le[k]);
		textbuf_appendf(&b, &n, &cap, "fleetd_http_request_duration_seconds_bucket"
		    "{route=\"%s\",le=\"+Inf\"} %lu\n", hists[i].route, hists[i].count);
		textbuf_appendf(&b, &n, &cap, "fleetd_http_request_duration_seconds_sum"
		    "{route=\"%s\"} %.6f\n", hists[i].route, hists[i].sum);
		textbuf_appendf(&b, &n, &cap, "fleetd_http_request_duration_seconds_count"
		    "{route=\"%s\"} %lu\n", hists[i].route, hists[i].count);
	}
	nw = nwriters;
	memcpy(w, writers, sizeof(w));
	pthread_mutex_unlock(&mu);
	db_pool_stats(&in_use, &idle, &size);
	textbuf_appendf(&b, &n, &cap,
	    "# HELP fleetd_db_pool_connections Database pool connections by state.\n"
	    "# TYPE fleetd_db_pool_connections gauge\n"
	    "fleetd_db_pool_connections{state=\"in_use\"} %d\n"
	    "fleetd_db_pool_connections{state=\"idle\"} %d\n"
	    "# HELP fleetd_db_pool_size Database pool size.\n"
	    "# TYPE fleetd_db_pool_size gauge\nfleetd_db_pool_size %d\n", in_use, idle, size);
	textbuf_appendf(&b, &n, &cap,
	    "# HELP fleetd_http_client_connections_total Connections opened to members and clouds"
	    " (a call on a kept connection opens none).\n"
	    "# TYPE fleetd_http_client_connections_total counter\n"
	    "fleetd_http_client_connections_total %ld\n", http_connects());
	for (int i = 0; i < nw; i++)
		w[i](&b, &n, &cap);
	*len = n;
	return b;
}
