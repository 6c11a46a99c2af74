/* env: environments (prod, staging, dev, …), the unit of isolation every object belongs to.
 * regions/ is the fleet's inventory, not only regions: environments (env.c), clouds
 * (cloud.c), member clusters (cluster.c), the catalog and the capacity snapshots. */
#ifndef FLEET_REGIONS_ENV_H
#define FLEET_REGIONS_ENV_H

#include <stdbool.h>

#include <jansson.h>

#include "core/db.h"
#include "core/err.h"

bool	env_name_valid(const char *name);
/* body: {"name", "description"?}; *out is the created object (new reference). */
bool	env_create(struct db *c, json_t *body, json_t **out, struct err *e);
/* The environment name (FOR UPDATE when lock); 404 env.not_found. */
bool	env_get(struct db *c, const char *name, bool lock, json_t **out, struct err *e);
/* Lists names > after (or all when after is NULL) visible through the filter
 * (NULL = all; else array of allowed names). */
bool	env_list(struct db *c, int limit, const char *after, const char *const *only,
	    int nonly, json_t **out, struct err *e);
/* PUT: replaces the description and, when the body has one, the pod_policy; the name is immutable (409 naming the field). */
bool	env_replace(struct db *c, const char *name, json_t *body, json_t **out,
	    struct err *e);
/* The environment's pod policy (new reference); 404 env.not_found. */
bool	env_pod_policy(struct db *c, const char *name, json_t **out, struct err *e);
bool	env_delete(struct db *c, const char *name, struct err *e);

#endif
