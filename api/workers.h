/* workers: fleetd serve's background loops (scheduler, dispatch, status, mover, poller, …),
 * one row each in api/workers.c's table, chosen by FLEETD_WORKERS. */
#ifndef FLEET_API_WORKERS_H
#define FLEET_API_WORKERS_H

#include <stdbool.h>

#include "core/err.h"

/* Starts the rows FLEETD_WORKERS names, in table order; on failure fills e (the rows
 * already started stay running: call workers_stop). */
bool	workers_start(struct err *e);
/* Stops the running rows in reverse order; safe to call twice. */
void	workers_stop(void);

#endif
