/* submit_cache: what the submit-time admissibility checks read from capacity, clusters and
 * clouds (per environment, flavor and spot choice), kept in memory until one of those
 * tables changes: a trigger NOTIFYs fleet_capacity (migrations/0009) and a listener thread
 * forgets everything.  While the listener is not connected nothing is kept. */
#ifndef FLEET_QUEUE_SUBMIT_CACHE_H
#define FLEET_QUEUE_SUBMIT_CACHE_H

#include <stdbool.h>

/* Starts the listener on url (a thread of its own); submit_cache_stop joins it. */
bool	submit_cache_start(const char *url);
void	submit_cache_stop(void);

/* Copies the two numbers kept for key into v; false on a miss.  *gen receives the
 * generation to hand to submit_cache_put for a value read from the database now. */
bool	submit_cache_get(const char *key, long long v[2], unsigned long *gen);
/* Keeps v for key unless the tables changed since gen was read. */
void	submit_cache_put(const char *key, const long long v[2], unsigned long gen);

#endif
