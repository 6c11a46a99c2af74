/* sched_trace: a synthetic multi-team trace (bursty arrivals, mixed gangs and priorities)
 * replayed through sched_cycle_run in simulated time, jobs shaped by loader_add_job from
 * the same spec JSON the API stores; quality figures per team (see sched_trace.h). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "bench/sim/sched_trace.h"
#include "bench/sim/trace_model.h"
#include "queue/sched/loader.h"
#include "queue/sched/sched_int.h"

#define FLAVOR		"nvidia-h100-80gb"
#define ACCEL_NODE	8
#define ENV		"trace"

struct tjob {
	int		 team, prio, workers, accel;
	bool		 preempt;
	const char	*topo;		/* NULL, "host" or "rack" */
	int64_t		 size;		/* accelerators */
	int64_t		 arrive, run_s, left_s, end, pend_since, waited;
	int		 preempted;
	enum sched_reason why;		/* the last cycle's reason while pending */
	struct sched_job *j;
};

struct edge {
	int		 from, to;	/* preemptor, victim (job indices) */
	size_t		 seq;
	int64_t		 at;
};

struct team_acc {
	int64_t		 alloc, demand;
	double		*dev;		/* per cycle with demand: |actual - ideal| */
	size_t		 n_dev, cap_dev;
	double		 sum_share, sum_ideal, sum_bias;
	int		 run;		/* current run of cycles below floor */
};

struct sim {
	const struct sched_trace_config	*cfg;
	struct sched_model		*m;
	struct tjob			*jobs;
	int				 n_jobs, arrived;
	int				*live;		/* arrived, not finished */
	int				 n_live;
	struct edge			*edges;
	size_t				 n_edges, cap_edges;
	struct team_acc			 acc[SCHED_TRACE_MAX_TEAMS];
	int64_t				 capacity;
	int64_t				 end;		/* simulated time at the end */
	uint64_t			 rng;
};

/* --- random numbers (xorshift64*, reproducible from the seed) --- */

static double
unif(struct sim *s)
{
	s->rng ^= s->rng >> 12;
	s->rng ^= s->rng << 25;
	s->rng ^= s->rng >> 27;
	return (double)((s->rng * 2685821657736338717ULL) >> 11) / 9007199254740992.0;
}

static int
pow2_upto(struct sim *s, int max)
{
	int k = 0, v;

	while ((1 << (k + 1)) <= max)
		k++;
	v = 1 << (int)(unif(s) * (k + 1));
	return v > max ? max : v;
}

static double
gauss(struct sim *s)
{
	double u = unif(s), v = unif(s);

	return sqrt(-2.0 * log(u > 1e-12 ? u : 1e-12)) * cos(2.0 * M_PI * v);
}

void
sched_trace_default(struct sched_trace_config *c)
{
	static const struct sched_trace_team teams[] = {
		{ "research", 3, 384, 0.15, 8, 8 },
		{ "training", 2, 384, 0.20, 4, 8 },
		{ "inference", 2, 256, 0.25, 2, 4 },
		{ "data", 1, 192, 0.15, 4, 2 },
		{ "eval", 1, 192, 0.15, 2, 8 },
		{ "sandbox", 1, 128, 0.10, 1, 2 },
	};

	memset(c, 0, sizeof(*c));
	memcpy(c->teams, teams, sizeof(teams));
	c->n_teams = 6;
	c->n_jobs = 10000;
	c->clusters = 12;
	c->nodes = 16;
	c->rack_nodes = 4;
	c->cycle_s = 10;
	c->load = 0.9;
	c->burst_frac = 0.7;
	c->median_run_s = 1200;
	c->seed = 0x5eed17b;
	c->max_holds = -1;
}

/* --- the trace --- */

static void
shape_job(struct sim *s, struct tjob *t)
{
	const struct sched_trace_config *c = s->cfg;
	const struct sched_trace_team *tm;
	double x = unif(s), acc = 0.0;
	int i;

	t->team = c->n_teams - 1;
	for (i = 0; i < c->n_teams; i++)
		if (x < (acc += c->teams[i].mix)) {
			t->team = i;
			break;
		}
	tm = &c->teams[t->team];
	t->workers = pow2_upto(s, tm->max_workers);
	t->accel = pow2_upto(s, tm->max_accel < ACCEL_NODE ? tm->max_accel : ACCEL_NODE);
	t->size = (int64_t)t->workers * t->accel;
	x = unif(s);
	t->prio = x < 0.15 ? 20 : x < 0.75 ? 10 : 0;
	t->preempt = t->prio > 0;
	x = unif(s);
	if (t->size <= ACCEL_NODE && x < 0.2)
		t->topo = "host";
	else if (t->accel == ACCEL_NODE && t->size <= (int64_t)c->rack_nodes * ACCEL_NODE &&
	    t->size >= 16 && x < 0.5)
		t->topo = "rack";
	t->run_s = (int64_t)((double)c->median_run_s * exp(gauss(s)));
	if (t->run_s < 60)
		t->run_s = 60;
	if (t->run_s > 12 * 3600)
		t->run_s = 12 * 3600;
	t->left_s = t->run_s;
}

static int
arrive_cmp(const void *a, const void *b)
{
	const struct tjob *x = a, *y = b;

	if (x->arrive != y->arrive)
		return x->arrive < y->arrive ? -1 : 1;
	return x->team - y->team;
}

/* Arrivals: per team, burst_frac of its jobs in bursts of 15 min to 2 h (one per 8 h
 * of trace on average), the rest spread evenly; horizon from the offered load. */
static void
arrivals(struct sim *s)
{
	const struct sched_trace_config *c = s->cfg;
	double work = 0.0;
	int64_t horizon, bstart[SCHED_TRACE_MAX_TEAMS][64], blen[SCHED_TRACE_MAX_TEAMS][64];
	int nb, i, k;

	for (i = 0; i < s->n_jobs; i++)
		work += (double)s->jobs[i].size * (double)s->jobs[i].run_s;
	horizon = (int64_t)(work / ((double)s->capacity * c->load));
	nb = (int)(horizon / (8 * 3600));
	nb = nb < 2 ? 2 : nb > 64 ? 64 : nb;
	for (i = 0; i < c->n_teams; i++)
		for (k = 0; k < nb; k++) {
			blen[i][k] = 900 + (int64_t)(unif(s) * 6300);
			bstart[i][k] = (int64_t)(unif(s) * (double)(horizon - blen[i][k]));
		}
	for (i = 0; i < s->n_jobs; i++) {
		struct tjob *t = &s->jobs[i];

		if (unif(s) < c->burst_frac) {
			k = (int)(unif(s) * nb);
			t->arrive = bstart[t->team][k] + (int64_t)(unif(s) * (double)blen[t->team][k]);
		} else {
			t->arrive = (int64_t)(unif(s) * (double)horizon);
		}
	}
	qsort(s->jobs, (size_t)s->n_jobs, sizeof(*s->jobs), arrive_cmp);
}

/* --- the fleet and the queues, as the loader builds them --- */

static bool
build_fleet(struct sim *s, struct err *e)
{
	const struct sched_trace_config *c = s->cfg;
	static const char *const prov[] = { "gke", "aks", "hyperpod" };
	struct sched_vec gpu = { { ACCEL_NODE, 200000, 2097152 } };
	struct sched_vec cpu = { { 0, 64000, 262144 } };
	char id[32], node[48], rack[48], region[16];
	int k, n;

	for (k = 0; k < c->clusters; k++) {
		struct sched_cluster *cl;
		struct sched_pool *gp, *cp;

		snprintf(id, sizeof(id), "k%02d", k);
		snprintf(region, sizeof(region), "region-%d", k % 4);
		if ((cl = sched_model_add_cluster(s->m, id, ENV, region, prov[k % 3], e)) == NULL ||
		    (gp = sched_cluster_add_pool(s->m, cl, FLAVOR, false, 88.0 * (1 + (k % 4) / 10.0),
		    e)) == NULL || (cp = sched_cluster_add_pool(s->m, cl, "cpu", false, 3.1, e)) == NULL)
			return false;
		for (n = 0; n < c->nodes; n++) {
			snprintf(node, sizeof(node), "%s-g%d", id, n);
			snprintf(rack, sizeof(rack), "%s-r%d", id, n / c->rack_nodes);
			if (!sched_pool_add_node(s->m, cl, gp, node, rack, NULL, NULL, gpu, gpu, e))
				return false;
		}
		for (n = 0; n < 8; n++) {
			snprintf(node, sizeof(node), "%s-c%d", id, n);
			if (!sched_pool_add_node(s->m, cl, cp, node, NULL, NULL, NULL, cpu, cpu, e))
				return false;
		}
	}
	s->capacity = (int64_t)c->clusters * c->nodes * ACCEL_NODE;
	return true;
}

static bool
build_queues(struct sim *s, struct err *e)
{
	struct sched_quota open, q;
	int i;

	trace_quota_open(&open);
	for (i = 0; i < s->cfg->n_teams; i++) {
		struct sched_queue *sq = sched_model_add_queue(s->m, s->cfg->teams[i].name, ENV,
		    "cohort", s->cfg->teams[i].weight, SCHED_BEST_EFFORT_FIFO, e);

		q = open;
		q.nominal.v[SCHED_ACCEL] = s->cfg->teams[i].floor;
		if (sq == NULL || !sched_queue_set_quota(s->m, sq, "cpu", &open, e) ||
		    !sched_queue_set_quota(s->m, sq, FLAVOR, &q, e))
			return false;
	}
	return sched_model_finalize(s->m, e);
}

/* The job enters the model through the loader, from the spec the API would store. */
static bool
submit(struct sim *s, int k, struct err *e)
{
	struct tjob *t = &s->jobs[k];
	char id[16], cpu[16], mem[16];
	json_t *spec;

	snprintf(id, sizeof(id), "j%05d", k);
	snprintf(cpu, sizeof(cpu), "%d", t->accel * 20);
	snprintf(mem, sizeof(mem), "%dGi", t->accel * 200);
	spec = json_pack("{s:s, s:s, s:s, s:s, s:s, s:{s:s, s:s}, s:[{s:s, s:i, s:s, s:s, "
	    "s:{s:s, s:i}}]}", "kind", "RayJob", "queue", s->cfg->teams[t->team].name, "name", id,
	    "ray_version", "2.52.0", "entrypoint", "python train.py", "head", "cpu", "2",
	    "memory", "8Gi", "worker_groups", "name", "w", "replicas", t->workers, "cpu", cpu,
	    "memory", mem, "accelerator", "flavor", FLAVOR, "count", t->accel);
	if (spec != NULL && t->topo != NULL)
		json_object_set_new(spec, "topology", json_string(t->topo));
	t->j = spec ? loader_add_job(s->m, id, s->cfg->teams[t->team].name, t->prio, t->preempt,
	    t->arrive, SCHED_PENDING, spec, e) : NULL;
	json_decref(spec);
	if (t->j == NULL)
		return e->code[0] ? false : err_set(e, 500, "trace.oom", "out of memory");
	if (t->j->idx != k)
		return err_set(e, 500, "trace.model", "job %s is not the model's job %d", id, k);
	t->pend_since = t->arrive;
	s->acc[t->team].demand += t->size;
	s->live[s->n_live++] = k;
	return true;
}

/* --- one step --- */

static void
drop_live(struct sim *s, int at)
{
	s->live[at] = s->live[--s->n_live];
}

static bool
finish_due(struct sim *s, int64_t now)
{
	bool any = false;
	int i;

	for (i = 0; i < s->n_live; i++) {
		struct tjob *t = &s->jobs[s->live[i]];

		if (t->j->state != SCHED_ADMITTED || t->end > now)
			continue;
		sched_model_finish_job(s->m, t->j);
		s->acc[t->team].alloc -= t->size;
		s->acc[t->team].demand -= t->size;
		drop_live(s, i--);
		any = true;
	}
	return any;
}

static void
add_edge(struct sim *s, int from, int to, int64_t at)
{
	s->edges = sched_grow(s->edges, &s->cap_edges, s->n_edges + 1, sizeof(*s->edges));
	s->edges[s->n_edges].from = from;
	s->edges[s->n_edges].to = to;
	s->edges[s->n_edges].seq = s->n_edges;
	s->edges[s->n_edges].at = at;
	s->n_edges++;
}

/* Admissions start their clocks; victims go back to pending with the run time they
 * had left (they checkpointed), as the caller of a real cycle requeues them. */
static void
apply_cycle(struct sim *s, const struct sched_cycle *cy, int64_t now,
	    struct sched_trace_result *out)
{
	size_t i, v;

	for (i = 0; i < cy->n; i++) {
		const struct sched_decision *d = &cy->d[i];
		struct tjob *t = &s->jobs[d->job];

		if (d->outcome != SCHED_OUT_ADMIT) {
			t->why = d->reason;
			continue;
		}
		out->teams[t->team].admissions++;
		t->waited += now - t->pend_since;
		t->end = now + t->left_s;
		s->acc[t->team].alloc += t->size;
		for (v = 0; v < d->n_victims; v++) {
			struct tjob *w = &s->jobs[d->victims[v]];

			add_edge(s, d->job, d->victims[v], now);
			out->teams[t->team].preempting++;
			out->teams[w->team].preempted++;
			w->preempted++;
			w->left_s = w->end > now ? w->end - now : 1;
			w->pend_since = now;
			s->acc[w->team].alloc -= w->size;
			out->preemptions++;
		}
	}
	for (i = 0; i < (size_t)s->n_live; i++) {
		struct tjob *t = &s->jobs[s->live[i]];

		if (t->j->state == SCHED_PREEMPTED)
			sched_model_requeue_job(s->m, t->j);
	}
}

/* Weighted DRF with floors (the scheduler's own definition of fair): every team with
 * demand gets min(demand, floor + weight * lambda), lambda >= 0 such that the total is
 * min(capacity, total demand).  One flavor: the dominant resource is the accelerator. */
static void
ideal(const struct sim *s, double *out)
{
	const struct sched_trace_config *c = s->cfg;
	double lo = 0.0, hi = (double)s->capacity, total = 0.0, want, got;
	int i, it;

	for (i = 0; i < c->n_teams; i++)
		total += (double)s->acc[i].demand;
	want = total < (double)s->capacity ? total : (double)s->capacity;
	for (it = 0; it < 60; it++) {
		double mid = (lo + hi) / 2.0;

		for (got = 0.0, i = 0; i < c->n_teams; i++)
			got += fmin((double)s->acc[i].demand, (double)c->teams[i].floor +
			    c->teams[i].weight * mid);
		if (got < want)
			lo = mid;
		else
			hi = mid;
	}
	for (i = 0; i < c->n_teams; i++)
		out[i] = fmin((double)s->acc[i].demand, (double)c->teams[i].floor +
		    c->teams[i].weight * hi);
}

/* Evicted by this very cycle: in its grace period, requeued for the next cycle. */
static bool
evicted_now(const struct tjob *t, int64_t now)
{
	return t->preempted > 0 && t->pend_since == now;
}

/* A pending job fits now when its quota allows it and a cluster packs it: the cycle
 * should have admitted it.  Counted apart when only capacity held for an older,
 * starving job would take it (bounded backfill, by design). */
static void
idle_check(struct sim *s, int64_t now, struct sched_trace_result *out, size_t *idle,
	   size_t *held)
{
	struct sched_placement pl;
	int i;

	memset(idle, 0, SCHED_TRACE_MAX_TEAMS * sizeof(*idle));
	memset(held, 0, SCHED_TRACE_MAX_TEAMS * sizeof(*held));
	for (i = 0; i < s->n_live; i++) {
		struct tjob *t = &s->jobs[s->live[i]];

		if (t->j->state != SCHED_PENDING || evicted_now(t, now) ||
		    sched_quota_check(s->m, t->j) != SCHED_R_CHOSEN)
			continue;
		if (sched_place(s->m, t->j, SCHED_R_CHOSEN, NULL, &pl)) {
			idle[t->team]++;
			if (out->first_idle[0] == '\0')
				snprintf(out->first_idle, sizeof(out->first_idle), "t=%lld s: job %s "
				    "(%s, %lld accelerators, priority %d, cycle said %s) fits on %s",
				    (long long)now, t->j->id, s->cfg->teams[t->team].name,
				    (long long)t->size, t->prio, sched_reason_code(t->why),
				    s->m->clusters[pl.cluster]->id);
		} else if (pl.counts[SCHED_R_RESERVED] > 0) {
			held[t->team]++;
		}
	}
}

static void
run_cycle(struct sim *s, int64_t now, struct sched_trace_result *out, bool *quiet)
{
	struct arena *a = arena_new();
	struct sched_cycle cy;
	size_t k;

	sched_model_set_now(s->m, now);
	for (k = 0; k < s->m->n_clusters; k++)
		s->m->clusters[k]->observed_at = now;
	sched_cycle_run(s->m, a, &cy);
	apply_cycle(s, &cy, now, out);
	*quiet = cy.admitted == 0 && cy.preempted == 0;
	out->cycles++;
	arena_free(a);
}

/* Lowest priority first, newest first: the order victims are taken in. */
static int
victim_cmp(const void *a, const void *b, void *arg)
{
	const struct sim *s = arg;

	return sched_victim_cmp(s->jobs[*(const int *)a].j, s->jobs[*(const int *)b].j);
}

/* The floor cannot hold j even when every borrowing queue gives back what it borrowed
 * (its jobs evicted lowest priority and newest first while it is over its floor, on every
 * cluster at once): the fleet is split by jobs within their floors (gang and topology
 * fragmentation), which no eviction may touch.  Counted apart. */
static bool
floor_blocked(struct sim *s, const struct tjob *t, struct sched_trace_result *out, int team)
{
	struct sched_placement pl;
	int *gone = calloc((size_t)s->n_live + 1, sizeof(*gone));
	int i, k, n = 0;
	bool fits;

	if (gone == NULL)
		abort();
	for (i = 0; i < s->n_live; i++)
		if (s->jobs[s->live[i]].j->state == SCHED_ADMITTED)
			gone[n++] = s->live[i];
	qsort_r(gone, (size_t)n, sizeof(*gone), victim_cmp, s);
	for (i = k = 0; i < n; i++) {
		struct sched_job *v = s->jobs[gone[i]].j;

		if (s->m->queues[v->queue]->ratio <= 0.0)
			continue;
		sched_release(s->m, v);
		gone[k++] = gone[i];
	}
	n = k;
	fits = sched_place(s->m, t->j, SCHED_R_CHOSEN, NULL, &pl);
	for (i = n; i-- > 0;) {
		struct sched_job *v = s->jobs[gone[i]].j;

		sched_capacity_take(s->m, s->m->clusters[v->cluster], v->allocs, v->n_allocs);
		sched_usage_add(s->m, v, +1);
	}
	free(gone);
	if (!fits)
		out->teams[team].floor_blocked_s += s->cfg->cycle_s;
	return !fits;
}

/* Per team after a cycle: share against the ideal, and whether it stays below its
 * floor while a job that fits in the floor waits (beyond the cycle that saw it). */
static void
measure(struct sim *s, int64_t now, struct sched_trace_result *out, bool contended)
{
	const struct sched_trace_config *c = s->cfg;
	double want[SCHED_TRACE_MAX_TEAMS];
	int64_t small[SCHED_TRACE_MAX_TEAMS];
	const struct tjob *smallest[SCHED_TRACE_MAX_TEAMS] = { NULL };
	int i;

	ideal(s, want);
	for (i = 0; i < c->n_teams; i++)
		small[i] = INT64_MAX;
	for (i = 0; i < s->n_live; i++) {
		const struct tjob *t = &s->jobs[s->live[i]];

		if (t->j->state == SCHED_PENDING && !evicted_now(t, now) && t->size < small[t->team]) {
			small[t->team] = t->size;
			smallest[t->team] = t;
		}
	}
	out->contended_cycles += contended;
	for (i = 0; i < c->n_teams; i++) {
		struct team_acc *a = &s->acc[i];
		struct sched_trace_team_result *r = &out->teams[i];
		double d;

		if (small[i] != INT64_MAX && a->alloc + small[i] <= c->teams[i].floor &&
		    !floor_blocked(s, smallest[i], out, i)) {
			r->below_floor_s += c->cycle_s;
			if (++a->run > r->below_floor_cycles_max)
				r->below_floor_cycles_max = a->run;
			if (a->run == 2 && out->first_floor[0] == '\0')
				snprintf(out->first_floor, sizeof(out->first_floor), "t=%lld s: %s uses"
				    " %lld of %lld; job %s (%lld accelerators, priority %d) waits: %s",
				    (long long)now, c->teams[i].name, (long long)a->alloc,
				    (long long)c->teams[i].floor, smallest[i]->j->id,
				    (long long)smallest[i]->size, smallest[i]->prio,
				    sched_reason_code(smallest[i]->why));
		} else {
			a->run = 0;
		}
		if (a->demand == 0)
			continue;
		d = 100.0 * ((double)a->alloc - want[i]) / (double)s->capacity;
		a->dev = sched_grow(a->dev, &a->cap_dev, a->n_dev + 1, sizeof(*a->dev));
		a->dev[a->n_dev++] = fabs(d);
		a->sum_bias += d;
		a->sum_share += 100.0 * (double)a->alloc / (double)s->capacity;
		a->sum_ideal += 100.0 * want[i] / (double)s->capacity;
	}
}

/* Runs cycles every cycle_s of simulated time until every job has run (or a day after
 * the last arrival); a cycle whose inputs did not change since a cycle that changed
 * nothing is skipped (it would decide the same, so the last verdicts stand), unless a
 * waiting job reaches starve_after in the meantime. */
static bool
simulate(struct sim *s, struct sched_trace_result *out, struct err *e)
{
	const struct sched_trace_config *c = s->cfg;
	int64_t now = s->jobs[0].arrive - s->jobs[0].arrive % c->cycle_s, util = 0;
	int64_t stop = s->jobs[s->n_jobs - 1].arrive + 86400;
	size_t idle[SCHED_TRACE_MAX_TEAMS] = { 0 }, held[SCHED_TRACE_MAX_TEAMS] = { 0 }, ticks = 0;
	bool quiet = false;

	while ((s->arrived < s->n_jobs || s->n_live > 0) && now <= stop) {
		bool changed = finish_due(s, now), starving = false;
		int64_t demand = 0;
		int i;

		while (s->arrived < s->n_jobs && s->jobs[s->arrived].arrive <= now) {
			if (!submit(s, s->arrived++, e))
				return false;
			changed = true;
		}
		for (i = 0; quiet && !changed && i < s->n_live; i++) {
			const struct tjob *t = &s->jobs[s->live[i]];
			int64_t ripe = t->pend_since + s->m->cfg.starve_after;

			starving |= t->j->state == SCHED_PENDING && ripe > now - c->cycle_s &&
			    ripe <= now;
		}
		if (!quiet || changed || starving) {
			run_cycle(s, now, out, &quiet);
			idle_check(s, now, out, idle, held);
		}
		for (i = 0; i < c->n_teams; i++) {
			out->teams[i].idle_waits += idle[i];
			out->teams[i].held_waits += held[i];
			out->idle_waits += idle[i];
			out->held_waits += held[i];
			util += s->acc[i].alloc;
			demand += s->acc[i].demand;
		}
		measure(s, now, out, demand > s->capacity);
		ticks++;
		now += c->cycle_s;
	}
	out->sim_s = (int64_t)ticks * c->cycle_s;
	s->end = now;
	out->utilization = ticks ? 100.0 * (double)util / ((double)ticks * (double)s->capacity) : 0;
	return true;
}

static int
dbl_cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static int
i64_cmp(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return x < y ? -1 : x > y;
}

static int
edge_cmp(const void *a, const void *b)
{
	const struct edge *x = a, *y = b;

	if (x->from != y->from)
		return x->from - y->from;
	if (x->to != y->to)
		return x->to - y->to;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* A preempt-requeue cycle: a evicts b, and later b (requeued) evicts a. */
static void
count_cycles(struct sim *s, struct sched_trace_result *out)
{
	size_t i, lo, hi;

	qsort(s->edges, s->n_edges, sizeof(*s->edges), edge_cmp);
	for (i = 0; i < s->n_edges; i++) {
		struct edge key = { s->edges[i].to, s->edges[i].from, (size_t)-1, 0 };

		/* past the last (b, a) edge; it must be later than this (a, b) one */
		for (lo = 0, hi = s->n_edges; lo < hi;) {
			size_t mid = (lo + hi) / 2;

			if (edge_cmp(&s->edges[mid], &key) < 0)
				lo = mid + 1;
			else
				hi = mid;
		}
		if (lo == 0 || s->edges[lo - 1].from != key.from || s->edges[lo - 1].to != key.to ||
		    s->edges[lo - 1].seq < s->edges[i].seq)
			continue;
		if (out->first_cycle[0] == '\0') {
			const struct tjob *x = &s->jobs[key.to], *y = &s->jobs[key.from];

			snprintf(out->first_cycle, sizeof(out->first_cycle), "%s (%s, priority %d)"
			    " evicts %s (%s, priority %d) at t=%lld s, which evicts it back at t=%lld s",
			    x->j->id, s->cfg->teams[x->team].name, x->prio, y->j->id,
			    s->cfg->teams[y->team].name, y->prio, (long long)s->edges[i].at,
			    (long long)s->edges[lo - 1].at);
		}
		out->ping_pongs++;
		out->ping_pongs_at_once += s->edges[lo - 1].at - s->edges[i].at <= s->cfg->cycle_s;
		out->teams[s->jobs[key.from].team].cycles++;
		if (s->jobs[key.to].team != s->jobs[key.from].team)
			out->teams[s->jobs[key.to].team].cycles++;
	}
}

static void
summarize(struct sim *s, struct sched_trace_result *out)
{
	const struct sched_trace_config *c = s->cfg;
	int64_t *waits = calloc((size_t)s->n_jobs + 1, sizeof(*waits));
	int i, k;

	if (waits == NULL)
		abort();
	out->n_teams = c->n_teams;
	out->capacity = s->capacity;
	for (i = 0; i < c->n_teams; i++) {
		struct sched_trace_team_result *r = &out->teams[i];
		struct team_acc *a = &s->acc[i];
		size_t n = 0;

		snprintf(r->name, sizeof(r->name), "%s", c->teams[i].name);
		r->weight = c->teams[i].weight;
		r->floor = c->teams[i].floor;
		for (k = 0; k < s->n_jobs; k++) {
			const struct tjob *t = &s->jobs[k];

			if (t->team != i)
				continue;
			r->jobs++;
			if (t->j != NULL && t->j->state == SCHED_FINISHED)
				r->finished++;
			else if (t->j != NULL && t->j->state == SCHED_PENDING && t->preempted == 0)
				r->never_admitted++;
			waits[n++] = t->waited + (t->j != NULL && t->j->state == SCHED_PENDING ?
			    s->end - t->pend_since : 0);
			if ((size_t)t->preempted > out->max_preempted_per_job)
				out->max_preempted_per_job = (size_t)t->preempted;
		}
		qsort(waits, n, sizeof(*waits), i64_cmp);
		r->wait_max_s = n ? waits[n - 1] : 0;
		r->wait_p95_s = n ? waits[(n * 95) / 100 < n ? (n * 95) / 100 : n - 1] : 0;
		if (a->n_dev > 0) {
			r->dev_mean = 0;
			for (k = 0; k < (int)a->n_dev; k++)
				r->dev_mean += a->dev[k];
			r->dev_mean /= (double)a->n_dev;
			r->bias = a->sum_bias / (double)a->n_dev;
			r->share_mean = a->sum_share / (double)a->n_dev;
			r->ideal_mean = a->sum_ideal / (double)a->n_dev;
			qsort(a->dev, a->n_dev, sizeof(*a->dev), dbl_cmp);
			r->dev_p95 = a->dev[(a->n_dev * 95) / 100 < a->n_dev ? (a->n_dev * 95) / 100 :
			    a->n_dev - 1];
		}
	}
	count_cycles(s, out);
	free(waits);
}

bool
sched_trace_run(const struct sched_trace_config *cfg, struct sched_trace_result *out,
		struct err *e)
{
	struct sched_config sc;
	struct sim s;
	bool ok = false;
	int i;

	memset(out, 0, sizeof(*out));
	memset(&s, 0, sizeof(s));
	if (cfg->n_teams < 1 || cfg->n_teams > SCHED_TRACE_MAX_TEAMS || cfg->n_jobs < 1 ||
	    cfg->clusters < 1 || cfg->nodes < 1 || cfg->rack_nodes < 1 || cfg->cycle_s < 1 ||
	    !(cfg->load > 0.0))
		return err_set(e, 400, "trace.bad_config", "bad trace configuration");
	s.cfg = cfg;
	s.rng = cfg->seed ? cfg->seed : 1;
	s.n_jobs = cfg->n_jobs;
	s.jobs = calloc((size_t)cfg->n_jobs, sizeof(*s.jobs));
	s.live = calloc((size_t)cfg->n_jobs, sizeof(*s.live));
	sched_config_default(&sc);
	if (cfg->max_holds >= 0)
		sc.max_holds = (size_t)cfg->max_holds;
	s.m = sched_model_new(&sc, 0);
	if (s.jobs == NULL || s.live == NULL) {
		err_set(e, 500, "trace.oom", "out of memory");
		goto cleanup;
	}
	if (!build_fleet(&s, e) || !build_queues(&s, e))
		goto cleanup;
	for (i = 0; i < s.n_jobs; i++)
		shape_job(&s, &s.jobs[i]);
	arrivals(&s);
	if (!simulate(&s, out, e))
		goto cleanup;
	summarize(&s, out);
	ok = true;
cleanup:
	for (i = 0; i < SCHED_TRACE_MAX_TEAMS; i++)
		free(s.acc[i].dev);
	free(s.edges);
	free(s.live);
	free(s.jobs);
	sched_model_free(s.m);
	return ok;
}
