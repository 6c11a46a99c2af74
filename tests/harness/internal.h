/* internal: what the harness's own files share and tests do not call. */
#ifndef FLEET_TESTS_HARNESS_INTERNAL_H
#define FLEET_TESTS_HARNESS_INTERNAL_H

#include <stdbool.h>

/* http.c: answers from 127.0.0.1:port are recorded (add) or no longer (!add). */
void	harness_rec_port(int port, bool add);
/* http.c: the test process exits 1 at its end (cmocka 1.1 does not count a failed group
 * teardown); once is enough. */
void	harness_fail_at_exit(void);

#endif
