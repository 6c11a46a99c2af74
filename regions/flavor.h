/* flavor: the catalog's flavors as rows — the built-ins of regions/catalog.c and what an
 * admin added or overrode in table flavors (migrations/0017) — validation of their specs,
 * and flavor_sync, which keeps the catalog's in-memory overlay in step with the table.  The
 * lookups themselves (catalog_flavor_get, catalog_machine_lookup) stay in catalog.c. */
#ifndef FLEET_REGIONS_FLAVOR_H
#define FLEET_REGIONS_FLAVOR_H

#include <stdbool.h>

#include <jansson.h>

#include "core/db.h"
#include "core/err.h"

/* Reloads the overlay from table flavors when catalog_generation moved since the last
 * load (one primary-key read otherwise).  Readers call it before catalog lookups:
 * submission, the scheduler's loader, the poller. */
bool	flavor_sync(struct db *c, struct err *e);
/* As flavor_sync, gen being catalog_generation as read in this transaction already. */
bool	flavor_sync_at(struct db *c, long long gen, struct err *e);
/* Validates body (a PUT body) for flavor name; *spec gets the normalized spec (new
 * reference) on success.  422 "catalog.bad_flavor" with the member's pointer otherwise. */
bool	flavor_spec_valid(const char *name, json_t *body, json_t **spec, struct err *e);
/* The flavor as the API shows it: {name, builtin, overridden, version, kind, ...}; 404
 * "catalog.flavor_not_found" when neither built in nor in the table.  FOR UPDATE when lock. */
bool	flavor_get(struct db *c, const char *name, bool lock, json_t **out, struct err *e);
/* Every flavor (built-ins, overrides, additions) by name after after (NULL: from the
 * start), at most limit; a new array in *out. */
bool	flavor_list(struct db *c, int limit, const char *after, json_t **out, struct err *e);
/* Inserts or replaces the row of name (version + 1 when the spec changed); *created tells
 * which.  409 "catalog.machine_taken" when another flavor already names one of its
 * machine types. */
bool	flavor_put(struct db *c, const char *name, json_t *body, bool *created, json_t **out,
	    struct err *e);
/* Deletes the row: a built-in returns to its shipped definition.  409
 * "catalog.builtin_flavor" for a built-in without a row (built-ins cannot be deleted), 409
 * "catalog.flavor_in_use" for an added flavor a queue's quota or an unfinished job names. */
bool	flavor_delete(struct db *c, const char *name, struct err *e);

#endif
