/* janitor: housekeeping loop — expired idempotency keys. */
#ifndef FLEET_API_JANITOR_H
#define FLEET_API_JANITOR_H

#include <stdbool.h>

#include "core/err.h"

bool	janitor_start(struct err *e);
void	janitor_stop(void);

#endif
