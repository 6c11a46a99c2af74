/* janitor: deletes idempotency keys past their 24-hour window every
 * FLEETD_JANITOR_INTERVAL_MS (PgBouncer's janitor timer, our housekeeping loop). */
#include <stdbool.h>

#include "api/janitor.h"
#include "api/server.h"
#include "core/config.h"
#include "core/idem_store.h"
#include "core/log.h"
#include "core/ticker.h"

static void
sweep(void)
{
	struct err e = { 0 };
	struct db *c = db_acquire(1000, &e);
	long n = 0;

	if (c == NULL || !idem_store_expire(c, &n, &e))
		log_warn(NULL, "janitor", "sweep failed", "{s:s}", "code", e.code);
	else if (n > 0)
		log_info(NULL, "janitor", "expired idempotency keys deleted", "{s:i}", "rows", (int)n);
	db_release(c);
}

static long
period_ms(void)
{
	return cfg.janitor_interval_ms > 0 ? cfg.janitor_interval_ms : 600000;
}

static struct ticker ticker = TICKER_INIT(sweep, period_ms);

bool
janitor_start(struct err *e)
{
	return ticker_start(&ticker, "janitor.start", "cannot start the janitor thread", e);
}

void
janitor_stop(void)
{
	ticker_stop(&ticker);
}
