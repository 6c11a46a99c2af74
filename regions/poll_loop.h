/* poll_loop: the capacity refresh loop — one replica at a time (advisory lock), every
 * FLEETD_POLL_INTERVAL_MS, or at once when kicked (a cluster was registered). */
#ifndef FLEET_REGIONS_POLL_LOOP_H
#define FLEET_REGIONS_POLL_LOOP_H

#include <stdbool.h>

#include "core/err.h"

bool	poll_loop_start(struct err *e);
void	poll_loop_stop(void);
/* Asks for a refresh as soon as possible (this replica, or the lock holder via NOTIFY). */
void	poll_loop_kick(void);

#endif
