/* metrics: Prometheus text exposition of fleetd's own counters and histograms. */
#ifndef FLEET_API_METRICS_H
#define FLEET_API_METRICS_H

#include <stddef.h>

struct arena;

void	 metrics_observe_request(const char *route, const char *method, int status,
	    double seconds);
/* Extra text appended by other modules (scheduler, poller); called at scrape time. */
typedef void (*metrics_writer)(char **buf, size_t *len, size_t *cap);
void	 metrics_register(metrics_writer fn);
/* Renders all metrics into a malloc'd buffer. */
char	*metrics_render(size_t *len);

#endif
