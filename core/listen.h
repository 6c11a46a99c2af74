/* listen: the dedicated connections of background loops — LISTEN on a channel, wait for
 * a NOTIFY or a timeout. */
#ifndef FLEET_CORE_LISTEN_H
#define FLEET_CORE_LISTEN_H

#include <stdbool.h>

#include <jansson.h>
#include <libpq-fe.h>

/* Connects to url and LISTENs on channel; NULL when the database cannot be reached. */
PGconn	*listen_open(const char *url, const char *channel);
/* Runs sql with n text params on such a connection; true when its status is want. */
bool	 listen_exec(PGconn *c, const char *sql, int n, const char *const *params,
	    ExecStatusType want);
/* Waits up to ms for a notification (all pending ones are consumed); true when one came. */
bool	 listen_wait(PGconn *c, int ms);
/* Same, and each non-empty payload becomes a key of into (payload -> true). */
bool	 listen_wait_payloads(PGconn *c, int ms, json_t *into);
/* Is the connection still up (a lost one is reopened by the caller)? */
bool	 listen_alive(PGconn *c);
void	 listen_close(PGconn *c);

#endif
