/* workers: background threads of fleetd serve — scheduler, dispatcher, status sync, poller. */
#ifndef FLEET_API_WORKERS_H
#define FLEET_API_WORKERS_H

#include <stdbool.h>

#include "core/err.h"

bool	workers_start(struct err *e);
void	workers_stop(void);

#endif
