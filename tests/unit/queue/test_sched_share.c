/* test_sched_share: pending jobs loaded with equal worker groups share one copy of their
 * groups and requests (issue 17: 100,000 pending jobs in 64 MiB), a job that is admitted or
 * requeued takes its own copy before its counts change, and the decisions are those of the
 * same jobs each with groups of its own.  Admitted jobs of equal groups share the admitted
 * copy the same way (issue 29). */
#include "sched_fixture.h"

#include <jansson.h>

#include "queue/sched/loader.h"

#define U SCHED_UNSET

static json_t *
spec(const char *flavor, int replicas)
{
	json_t *s = json_pack("{s:s, s:s, s:s, s:s, s:s, s:{s:s, s:s}, s:[{s:s, s:i, s:s,"
	    " s:s, s:{s:s, s:i}}]}", "kind", "RayJob", "queue", "q", "name", "j",
	    "ray_version", "2.52.0", "entrypoint", "python x.py", "head", "cpu", "1",
	    "memory", "1Gi", "worker_groups", "name", "w", "replicas", replicas, "cpu", "1",
	    "memory", "1Gi", "accelerator", "flavor", flavor, "count", 8);

	assert_non_null(s);
	return s;
}

/* A model of two 8-GPU nodes and n pending jobs, one node each; job 3 asks for two nodes
 * (other groups).  share: loaded through loader_add_job (groups shared), else each job's
 * groups copied (sched_job_own_groups right after loading). */
static struct sched_model *
world(bool share)
{
	struct sched_model *m = fx_model();
	struct err e = { 0 };
	struct sched_cluster *c = fx_cluster(m, "c1", "r1", "nvidia-h100-80gb", 10.0, 2, 8, 0);
	struct sched_pool *p = sched_cluster_add_pool(m, c, "cpu", false, 1.0, &e);

	assert_non_null(p);	/* the heads' on-demand cpu node */
	assert_true(sched_pool_add_node(m, c, p, "c1-cpu", NULL, NULL, NULL,
	    fx_vec(0, 64000, 524288), fx_vec(0, 64000, 524288), &e));
	{
		struct sched_queue *q = fx_queue(m, "q", "co", 1, "nvidia-h100-80gb", 64, U, U);
		struct sched_quota cpu = fx_quota(64, U, U);

		assert_true(sched_queue_set_quota(m, q, "cpu", &cpu, &e));
	}
	for (int i = 0; i < 6; i++) {
		char id[16];
		json_t *s = spec("nvidia-h100-80gb", i == 3 ? 2 : 1);
		struct sched_job *j;

		snprintf(id, sizeof(id), "j%d", i);
		j = loader_add_job(m, id, "q", 0, false, FX_NOW - 100 + i, SCHED_PENDING, s, &e);
		assert_non_null(j);
		if (!share)
			sched_job_own_groups(m, j);
		json_decref(s);
	}
	fx_finalize(m);
	return m;
}

static void
test_shared_until_written(void **state)
{
	struct sched_model *m = world(true), *own = world(false);
	struct sched_job *j0 = sched_model_job(m, 0), *j1 = sched_model_job(m, 1);
	struct sched_job *j3 = sched_model_job(m, 3), *j5 = sched_model_job(m, 5);
	struct arena *a = arena_new();
	struct sched_cycle cy[2];

	(void)state;
	assert_ptr_equal(j0->groups, j1->groups);
	assert_ptr_equal(j0->req, j5->req);
	assert_true(j0->shared_groups && j5->shared_groups);
	assert_ptr_not_equal(j0->groups, j3->groups);	/* two replicas: another shape */
	assert_false(sched_model_job(own, 0)->shared_groups);
	/* the first two fit (one node each): admitted, their counts written in a copy that
	 * the two share (equal admitted groups), not in the pending jobs' copy */
	sched_cycle_run(m, a, &cy[0]);
	sched_cycle_run(own, a, &cy[1]);
	if (cy[0].admitted != 2)
		fail_msg("admitted %zu, first: %s", cy[0].admitted,
		    sched_reason_code(cy[0].d[0].reason));
	assert_int_equal(cy[0].n, cy[1].n);
	for (size_t i = 0; i < cy[0].n; i++) {
		assert_int_equal(cy[0].d[i].job, cy[1].d[i].job);
		assert_int_equal(cy[0].d[i].outcome, cy[1].d[i].outcome);
		assert_int_equal(cy[0].d[i].reason, cy[1].d[i].reason);
		assert_int_equal(cy[0].d[i].place->cluster, cy[1].d[i].place->cluster);
	}
	assert_int_equal(j0->state, SCHED_ADMITTED);
	assert_int_equal(j1->state, SCHED_ADMITTED);
	assert_ptr_not_equal(j0->groups, j5->groups);
	assert_ptr_not_equal(j0->req, j5->req);
	assert_ptr_equal(j0->groups, j1->groups);
	assert_true(j0->shared_groups && j1->shared_groups);
	assert_int_equal(j0->groups[1].count, j0->groups[1].min);
	assert_int_equal(j5->groups[1].count, 0);	/* the pending sharers saw no write */
	assert_int_equal(sched_model_job(m, 2)->groups[1].count, 0);
	/* back to pending: counts cleared on its own copy, the others unchanged */
	sched_model_requeue_job(m, j0);
	assert_int_equal(j0->groups[1].count, 0);
	assert_int_equal(j1->groups[1].count, j1->groups[1].min);
	arena_free(a);
	sched_model_free(m);
	sched_model_free(own);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_shared_until_written),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
