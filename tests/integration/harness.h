/* harness: moved to tests/harness/harness.h; this name stays so that a test written against
 * it still builds.  New tests include tests/harness/harness.h. */
#include "tests/harness/harness.h"
