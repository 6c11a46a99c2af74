/* reverify: continuous verification of locked IAM pairs.  A locked pair is verified again
 * (the checks of phase 2 plus the negative ones of each driver) on demand and by the
 * iam-verify worker every FLEETD_IAM_VERIFY_INTERVAL seconds.  Failed checks put the cloud
 * in `degraded` (no new placements: the loader takes active clouds only), with an audit
 * row; a later pass returns it to `active`.  A verification that could not run (provider
 * unreachable) changes nothing. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/config.h"
#include "core/log.h"
#include "core/textbuf.h"
#include "core/ticker.h"
#include "iam/registry.h"
#include "iam/reverify.h"
#include "regions/cloud.h"

static atomic_ulong n_passed, n_failed, n_unverified, n_drift, n_restored;
static atomic_long n_degraded = -1;	/* clouds degraded at the last count; -1: not yet */

/* Counts the degraded clouds after a verification or a worker round, so that a scrape of
 * /metrics reads a number and runs no SQL. */
static void
degraded_refresh(void)
{
	struct err e = { 0 };
	struct db *c = db_acquire(1000, &e);
	PGresult *r = NULL;

	if (c != NULL && db_exec(c, "SELECT count(*) FROM clouds WHERE state = 'degraded'", 0,
	    NULL, &r, &e))
		atomic_store(&n_degraded, atol(PQgetvalue(r, 0, 0)));
	PQclear(r);
	db_release(c);
}

struct load_arg {
	const char	*id;
	json_t		*cloud;
};

static bool
load(struct db *c, void *arg, struct err *e)
{
	struct load_arg *a = arg;
	const char *state;

	json_decref(a->cloud);
	a->cloud = NULL;
	if (!cloud_get(c, a->id, false, &a->cloud, e))
		return false;
	state = json_string_value(json_object_get(a->cloud, "state"));
	if (strcmp(state, "active") != 0 && strcmp(state, "degraded") != 0)
		return err_set(e, 409, "iam.not_locked", "the cloud has no locked iam pair to "
		    "verify; finish phase 2 first");
	return true;
}

struct record_arg {
	const char		*id;
	const struct actor	*who;
	bool			 passed;
	json_t			*failed;	/* the failed checks */
	json_t			*cloud;		/* out */
};

static bool
record(struct db *c, void *arg, struct err *e)
{
	static const char sql[] = "UPDATE clouds SET state = $2, iam_failed_checks = $3::jsonb,"
	    " iam_checked_at = now(), version = version + CASE WHEN state = $2 THEN 0 ELSE 1 END,"
	    " updated_at = CASE WHEN state = $2 THEN updated_at ELSE now() END"
	    " WHERE id = $1::uuid AND state IN ('active', 'degraded')";
	struct record_arg *a = arg;
	json_t *before = NULL;
	char *failed = json_dumps(a->failed, JSON_COMPACT);
	const char *to = a->passed ? "active" : "degraded", *from;
	const char *p[3] = { a->id, to, failed };
	bool ok = false;

	json_decref(a->cloud);
	a->cloud = NULL;
	if (!cloud_get(c, a->id, true, &before, e))
		goto cleanup;
	from = json_string_value(json_object_get(before, "state"));
	if (!db_exec(c, sql, 3, p, NULL, e) || !cloud_get(c, a->id, false, &a->cloud, e))
		goto cleanup;
	if (strcmp(from, to) != 0 && (strcmp(from, "active") == 0 ||
	    strcmp(from, "degraded") == 0)) {
		json_t *b = json_pack("{s:s, s:O}", "state", from, "failed_checks",
		    json_object_get(json_object_get(before, "iam"), "failed_checks"));
		json_t *af = json_pack("{s:s, s:O}", "state", to, "failed_checks", a->failed);

		ok = audit_write(c, a->who, a->passed ? "cloud.iam.restored" : "cloud.iam.degraded",
		    "cloud", a->id, json_string_value(json_object_get(before, "environment")), b,
		    af, e);
		json_decref(b);
		json_decref(af);
		if (!ok)
			goto cleanup;
		atomic_fetch_add(a->passed ? &n_restored : &n_drift, 1);
		log_warn(NULL, "iam", a->passed ? "iam pair verified again, cloud active" :
		    "iam pair drifted, cloud degraded", "{s:s}", "cloud", a->id);
	}
	ok = true;
cleanup:
	json_decref(before);
	free(failed);
	return ok;
}

bool
iam_reverify(const char *cloud_id, const struct actor *who, json_t **cloud, json_t **checks,
	     enum iam_verify_result *result, struct err *e)
{
	struct load_arg la = { .id = cloud_id };
	struct record_arg ra = { .id = cloud_id, .who = who };
	struct err ve = { 0 };
	json_t *iam, *ck;
	size_t i;
	bool ok = false;

	*checks = json_array();
	*cloud = NULL;
	if (!db_tx(load, &la, e))
		goto cleanup;
	iam = json_object_get(la.cloud, "iam");
	/* network: outside any transaction */
	ra.passed = registry_pair_verify(la.cloud,
	    json_string_value(json_object_get(iam, "control_plane_role")),
	    json_string_value(json_object_get(iam, "cluster_role")), *checks, &ve);
	if (!ra.passed && ve.status != 422) {
		/* could not ask: no verdict, nothing changes */
		atomic_fetch_add(&n_unverified, 1);
		*result = IAM_VERIFY_UNVERIFIED;
		*e = ve;
		*cloud = la.cloud;
		la.cloud = NULL;
		ok = true;
		goto cleanup;
	}
	ra.failed = json_array();
	json_array_foreach(*checks, i, ck)
		if (!json_is_true(json_object_get(ck, "ok")))
			json_array_append(ra.failed, ck);
	if (!db_tx(record, &ra, e))
		goto cleanup;
	degraded_refresh();
	atomic_fetch_add(ra.passed ? &n_passed : &n_failed, 1);
	*result = ra.passed ? IAM_VERIFY_PASSED : IAM_VERIFY_FAILED;
	*cloud = ra.cloud;
	ra.cloud = NULL;
	ok = true;
cleanup:
	json_decref(la.cloud);
	json_decref(ra.cloud);
	json_decref(ra.failed);
	return ok;
}

/* ---- the iam-verify worker */

/* Claims one cloud whose last check is older than the interval (other replicas skip it);
 * false when none is due. */
static bool
claim(char *id, size_t n)
{
	static const char sql[] = "UPDATE clouds SET iam_checked_at = now() WHERE id = ("
	    "SELECT id FROM clouds WHERE state IN ('active', 'degraded')"
	    " AND iam_checked_at <= now() - make_interval(secs => $1::int)"
	    " ORDER BY iam_checked_at FOR UPDATE SKIP LOCKED LIMIT 1) RETURNING id::text";
	char secs[16];
	const char *p[1] = { secs };
	struct err e = { 0 };
	struct db *c = db_acquire(1000, &e);
	PGresult *r = NULL;
	bool got = false;

	snprintf(secs, sizeof(secs), "%d", cfg.iam_verify_interval_s > 0 ?
	    cfg.iam_verify_interval_s : 86400);
	if (c != NULL && db_exec(c, sql, 1, p, &r, &e) && PQntuples(r) == 1) {
		snprintf(id, n, "%s", PQgetvalue(r, 0, 0));
		got = true;
	}
	PQclear(r);
	db_release(c);
	return got;
}

/* One round: up to 100 due clouds re-verified. */
static void
round_once(void)
{
	struct actor who = { .name = "fleetd iam-verify" };
	char id[40];

	degraded_refresh();
	for (int k = 0; k < 100 && claim(id, sizeof(id)); k++) {
		json_t *cloud = NULL, *checks = NULL;
		enum iam_verify_result res;
		struct err e = { 0 };

		if (!iam_reverify(id, &who, &cloud, &checks, &res, &e) ||
		    res == IAM_VERIFY_UNVERIFIED)
			log_warn(NULL, "iam", "iam pair not verified", "{s:s, s:s}", "cloud",
			    id, "code", e.code);
		json_decref(cloud);
		json_decref(checks);
	}
}

static long
tick_ms(void)
{
	return cfg.iam_verify_interval_s > 0 && cfg.iam_verify_interval_s < 5 ? 1000 : 5000;
}

static struct ticker ticker = TICKER_INIT(round_once, tick_ms);

bool
iam_verify_start(struct err *e)
{
	return ticker_start(&ticker, "iam.verify_start", "cannot start the iam-verify worker", e);
}

void
iam_verify_stop(void)
{
	ticker_stop(&ticker);
}

void
iam_verify_metrics(char **buf, size_t *len, size_t *cap)
{
	long degraded = atomic_load(&n_degraded);

	textbuf_appendf(buf, len, cap,
	    "# HELP fleetd_iam_verifications_total Re-verifications of locked IAM pairs by this "
	    "replica, by result.\n# TYPE fleetd_iam_verifications_total counter\n"
	    "fleetd_iam_verifications_total{result=\"passed\"} %lu\n"
	    "fleetd_iam_verifications_total{result=\"failed\"} %lu\n"
	    "fleetd_iam_verifications_total{result=\"unverified\"} %lu\n"
	    "# HELP fleetd_iam_drift_total Clouds this replica found drifted (active to degraded)."
	    "\n# TYPE fleetd_iam_drift_total counter\nfleetd_iam_drift_total %lu\n"
	    "# HELP fleetd_iam_restored_total Clouds this replica returned to active.\n"
	    "# TYPE fleetd_iam_restored_total counter\nfleetd_iam_restored_total %lu\n",
	    atomic_load(&n_passed), atomic_load(&n_failed), atomic_load(&n_unverified),
	    atomic_load(&n_drift), atomic_load(&n_restored));
	if (degraded >= 0)
		textbuf_appendf(buf, len, cap, "# HELP fleetd_clouds_degraded Clouds whose IAM pair "
		    "failed its last verification.\n# TYPE fleetd_clouds_degraded gauge\n"
		    "fleetd_clouds_degraded %ld\n", degraded);
}
