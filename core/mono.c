/* mono: CLOCK_MONOTONIC as seconds. */
#include <time.h>

#include "core/mono.h"

double
mono_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}
