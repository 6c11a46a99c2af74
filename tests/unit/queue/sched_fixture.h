/* sched_fixture: small builders shared by the scheduler's unit tests (header only). */
#ifndef FLEET_TEST_SCHED_FIXTURE_H
#define FLEET_TEST_SCHED_FIXTURE_H

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "queue/sched/sched.h"

#define FX_NOW	1000000

static inline struct sched_vec
fx_vec(int64_t accel, int64_t cpu, int64_t mem)
{
	struct sched_vec v = { { accel, cpu, mem } };

	return v;
}

static inline struct sched_model *
fx_model(void)
{
	struct sched_config cfg;

	sched_config_default(&cfg);
	cfg.max_candidates = 0;
	return sched_model_new(&cfg, FX_NOW);
}

/* A cluster with one pool of n identical nodes (8 accelerators, 64 cpu, 512 GiB),
 * racks of rack_size nodes when rack_size > 0. */
static inline struct sched_cluster *
fx_cluster(struct sched_model *m, const char *id, const char *region, const char *flavor,
	   double price, int nodes, int64_t accel_per_node, int rack_size)
{
	struct err e = { 0 };
	struct sched_cluster *c = sched_model_add_cluster(m, id, "prod", region, "gke", &e);
	struct sched_pool *p;
	int i;

	assert_non_null(c);
	p = sched_cluster_add_pool(m, c, flavor, false, price, &e);
	assert_non_null(p);
	for (i = 0; i < nodes; i++) {
		char nid[64], rack[64];

		snprintf(nid, sizeof(nid), "%s-n%d", id, i);
		snprintf(rack, sizeof(rack), "%s-r%d", id, rack_size > 0 ? i / rack_size : 0);
		assert_true(sched_pool_add_node(m, c, p, nid, rack_size > 0 ? rack : NULL, NULL, NULL,
		    fx_vec(accel_per_node, 64000, 524288), fx_vec(accel_per_node, 64000, 524288),
		    &e));
	}
	return c;
}

static inline struct sched_quota
fx_quota(int64_t nominal, int64_t borrow_limit, int64_t lend_limit)
{
	struct sched_quota q;

	q.nominal = fx_vec(nominal, SCHED_UNSET, SCHED_UNSET);
	q.borrow_limit = fx_vec(borrow_limit, SCHED_UNSET, SCHED_UNSET);
	q.lend_limit = fx_vec(lend_limit, SCHED_UNSET, SCHED_UNSET);
	return q;
}

static inline struct sched_queue *
fx_queue(struct sched_model *m, const char *id, const char *cohort, double weight,
	 const char *flavor, int64_t nominal, int64_t borrow_limit, int64_t lend_limit)
{
	struct err e = { 0 };
	struct sched_queue *q = sched_model_add_queue(m, id, "prod", cohort, weight,
	    SCHED_BEST_EFFORT_FIFO, &e);
	struct sched_quota quota = fx_quota(nominal, borrow_limit, lend_limit);

	assert_non_null(q);
	assert_true(sched_queue_set_quota(m, q, flavor, &quota, &e));
	return q;
}

/* A job of pods x per_pod accelerators (1 cpu, 1 GiB each). */
static inline struct sched_job *
fx_job(struct sched_model *m, const char *id, const char *queue, int prio, int64_t t,
       const char *flavor, int pods, int64_t per_pod)
{
	struct err e = { 0 };
	struct sched_job *j = sched_model_add_job(m, id, queue, prio, t, SCHED_PENDING, &e);

	assert_non_null(j);
	assert_true(sched_job_add_group(m, j, flavor, pods, pods, fx_vec(per_pod, 1000, 1024), &e));
	return j;
}

static inline void
fx_finalize(struct sched_model *m)
{
	struct err e = { 0 };

	if (!sched_model_finalize(m, &e))
		fail_msg("finalize: %s: %s", e.code, e.msg);
}

static inline const struct sched_decision *
fx_decision(const struct sched_model *m, const struct sched_cycle *cy, const char *job)
{
	size_t i;

	for (i = 0; i < cy->n; i++)
		if (strcmp(sched_model_job(m, (size_t)cy->d[i].job)->id, job) == 0)
			return &cy->d[i];
	return NULL;
}

static inline int64_t
fx_usage(const struct sched_model *m, const char *queue, const char *flavor)
{
	size_t i;
	int f = -1;

	for (i = 0; i < sched_model_n_queues(m); i++) {
		struct sched_queue *q = sched_model_queue(m, i);

		if (strcmp(q->id, queue) != 0)
			continue;
		if (!sched_model_flavor((struct sched_model *)m, flavor, &f, NULL))
			return -1;
		return q->usage[f].v[SCHED_ACCEL];
	}
	return -1;
}

/* An admitted job with its in-flight reservation: pods of per_pod accelerators
 * packed onto the cluster's nodes from first_node on. */
static inline struct sched_job *
fx_admitted(struct sched_model *m, const char *id, const char *queue, int prio,
	    const char *flavor, int pods, int64_t per_pod, const char *cluster, int first_node,
	    int64_t admitted_at)
{
	struct err e = { 0 };
	struct sched_job *j = sched_model_add_job(m, id, queue, prio, admitted_at - 10,
	    SCHED_ADMITTED, &e);
	int per_node = per_pod > 0 ? (int)(8 / per_pod) : 8, left = pods, node = first_node;

	assert_non_null(j);
	assert_true(sched_job_add_group(m, j, flavor, pods, pods, fx_vec(per_pod, 1000, 1024), &e));
	assert_true(sched_job_set_cluster(m, j, cluster, true, admitted_at, &e));
	while (left > 0) {
		char nid[64];
		int k = left < per_node ? left : per_node;

		snprintf(nid, sizeof(nid), "%s-n%d", cluster, node++);
		if (!sched_job_add_alloc(m, j, 0, nid, k, &e))
			fail_msg("alloc: %s", e.msg);
		left -= k;
	}
	return j;
}

#endif
