/* idem_store: the idempotency_keys table (the SQL behind api/idem.c's Idempotency-Key).
 * A row lives 24 hours; the janitor deletes expired ones. */
#ifndef FLEET_CORE_IDEM_STORE_H
#define FLEET_CORE_IDEM_STORE_H

#include <stdbool.h>

#include "core/arena.h"
#include "core/db.h"
#include "core/err.h"

/* One stored answer; strings in the arena given to idem_store_get. */
struct idem_row {
	const char	*body_sha256;	/* hex of the first request's body */
	const char	*path;
	int		 status;
	const char	*response;	/* JSON text ("null" when there was no body) */
	const char	*location;	/* NULL when none */
};

/* The live row of (token_id, key): *found false when there is none. */
bool	idem_store_get(struct db *c, const char *token_id, const char *key,
	    struct arena *a, struct idem_row *row, bool *found, struct err *e);
/* Records an answer for (token_id, key, method); *stored false when a live row already
 * holds that key (another request with it is still being processed). */
bool	idem_store_put(struct db *c, const char *token_id, const char *key,
	    const char *method, const struct idem_row *row, bool *stored, struct err *e);
/* Deletes the rows past their 24-hour window; *deleted counts them. */
bool	idem_store_expire(struct db *c, long *deleted, struct err *e);

#endif
