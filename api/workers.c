/* workers: starts and stops the background loops; each loop owns its thread. */
#include "api/workers.h"

bool
workers_start(struct err *e)
{
	(void)e;
	return true;
}

void
workers_stop(void)
{
}
