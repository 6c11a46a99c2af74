/* test_loader_window: the loader with a pending window (the scheduler's, issue 29) loads
 * of each queue's pending jobs the head in the cycle's order (priority, then age) and marks
 * the queues it cut; without one (explain, moves, repairs) it loads every pending job. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/db.h"
#include "core/migrate.h"
#include "queue/sched/loader.h"
#include "tests/harness/harness.h"

static char dburl[512];

/* Queue qa holds 100 pending jobs, priority 1 and 0 in turn, each a second younger than the
 * one before; qb 10. */
static int
setup(void **state)
{
	struct err e = { 0 };
	struct db *c;
	int applied = 0;

	(void)state;
	harness_db_create("loader_window", dburl, sizeof(dburl));
	if (!db_pool_init(dburl, 2, &e) || (c = db_acquire(5000, &e)) == NULL) {
		fprintf(stderr, "db: %s\n", e.msg);
		return -1;
	}
	if (!migrate_apply(c, FLEETD_SOURCE_DIR "/migrations", &applied, &e)) {
		fprintf(stderr, "migrate: %s\n", e.msg);
		db_release(c);
		return -1;
	}
	db_release(c);
	harness_sql("INSERT INTO environments (id, name) VALUES (gen_random_uuid(), 'win');"
	    " INSERT INTO priority_classes (id, name, value) VALUES (gen_random_uuid(), 'default', 0)"
	    " ON CONFLICT DO NOTHING;"
	    " INSERT INTO queues (id, name, environment, weight, nominal_quota) SELECT"
	    " gen_random_uuid(), n, 'win', 1, '{}' FROM unnest(ARRAY['qa', 'qb']) n;"
	    " INSERT INTO jobs (id, name, environment, queue_id, kind, priority_class, priority,"
	    " spec, enqueued_at) SELECT gen_random_uuid(), q.name || '-' || i, 'win', q.id, 'RayJob',"
	    " 'default', i %% 2, jsonb_build_object('kind', 'RayJob', 'queue', q.name, 'name',"
	    " q.name || '-' || i, 'ray_version', '2.52.0', 'entrypoint', 'python x.py', 'head',"
	    " jsonb_build_object('cpu', '1', 'memory', '1Gi'), 'worker_groups', jsonb_build_array("
	    " jsonb_build_object('name', 'w', 'replicas', 1, 'cpu', '1', 'memory', '1Gi'))),"
	    " now() - make_interval(secs => 1000 - i) FROM queues q, generate_series(0, 99) i"
	    " WHERE q.name = 'qa' OR (q.name = 'qb' AND i < 10)");
	return 0;
}

static int
teardown(void **state)
{
	(void)state;
	db_pool_close();
	harness_db_drop(dburl);
	return 0;
}

static struct sched_model *
load(size_t window)
{
	struct sched_config conf;
	struct sched_model *m = NULL;
	struct err e = { 0 };
	struct db *c = db_acquire(5000, &e);

	assert_non_null(c);
	sched_config_default(&conf);
	conf.pending_window = window;
	if (!loader_model_cfg(c, "win", &conf, &m, NULL, &e))
		fail_msg("load: %s: %s", e.code, e.msg);
	db_release(c);
	return m;
}

static size_t
pending_in(struct sched_model *m, const char *queue)
{
	struct sched_queue *q = sched_model_find_queue(m, queue);
	size_t i, n = 0;

	assert_non_null(q);
	for (i = 0; i < sched_model_n_jobs(m); i++)
		n += sched_model_job(m, i)->queue == q->idx &&
		    sched_model_job(m, i)->state == SCHED_PENDING;
	return n;
}

static const char *
queue_id(const char *name)
{
	static char id[2][40];
	PGresult *r = harness_sql_result("SELECT id FROM queues WHERE name = '%s'", name);
	char *out = id[name[1] == 'a' ? 0 : 1];

	assert_int_equal(PQntuples(r), 1);
	snprintf(out, sizeof(id[0]), "%s", PQgetvalue(r, 0, 0));
	PQclear(r);
	return out;
}

/* A window of 128 over two queues: 64 each.  qa's are its 50 jobs of priority 1 and the 14
 * oldest of priority 0, and qa is cut; qb's 10 are all there. */
static void
test_head_of_each_queue(void **state)
{
	struct sched_model *m = load(128);
	const char *qa = queue_id("qa"), *qb = queue_id("qb");
	PGresult *r;
	int i;

	(void)state;
	assert_int_equal(pending_in(m, qa), 64);
	assert_int_equal(pending_in(m, qb), 10);
	assert_true(sched_model_find_queue(m, qa)->more);
	assert_false(sched_model_find_queue(m, qb)->more);
	r = harness_sql_result("SELECT id, name FROM jobs WHERE queue_id = '%s' ORDER BY"
	    " priority DESC, enqueued_at", qa);
	assert_int_equal(PQntuples(r), 100);
	for (i = 0; i < PQntuples(r); i++)
		if ((sched_model_find_job(m, PQgetvalue(r, i, 0)) != NULL) != (i < 64))
			fail_msg("%s (rank %d) %s", PQgetvalue(r, i, 1), i + 1, i < 64 ?
			    "missing" : "loaded past the window");
	PQclear(r);
	sched_model_free(m);
}

/* No window: every pending job, no queue cut. */
static void
test_no_window_loads_all(void **state)
{
	struct sched_model *m = load(0);
	const char *qa = queue_id("qa"), *qb = queue_id("qb");

	(void)state;
	assert_int_equal(pending_in(m, qa), 100);
	assert_int_equal(pending_in(m, qb), 10);
	assert_false(sched_model_find_queue(m, qa)->more);
	assert_false(sched_model_find_queue(m, qb)->more);
	sched_model_free(m);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_head_of_each_queue),
		cmocka_unit_test(test_no_window_loads_all),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
