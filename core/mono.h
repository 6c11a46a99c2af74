/* mono: the monotonic clock in seconds, the one clock every loop, timeout and measurement
 * of elapsed time reads (not wall time: it does not jump). */
#ifndef FLEET_CORE_MONO_H
#define FLEET_CORE_MONO_H

/* CLOCK_MONOTONIC in seconds. */
double	mono_s(void);

#endif
