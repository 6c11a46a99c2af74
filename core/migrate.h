/* migrate: forward-only schema migrations from migrations/NNNN_name.sql, each applied in
 * its own transaction and recorded with its sha-256; concurrent migrators serialize. */
#ifndef FLEET_CORE_MIGRATE_H
#define FLEET_CORE_MIGRATE_H

#include <stdbool.h>

#include "core/db.h"
#include "core/err.h"

/* Applies every pending migration; refuses (409 "migrate.checksum") when an applied
 * file has changed.  *applied gets the number applied now. */
bool	migrate_apply(struct db *c, const char *dir, int *applied, struct err *e);
/* Counts pending migrations without applying; fails on a changed applied file. */
bool	migrate_pending(struct db *c, const char *dir, int *pending, struct err *e);

#endif
