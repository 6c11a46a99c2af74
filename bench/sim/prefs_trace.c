/* prefs_trace: the capacity-preference trace (see prefs_trace.h).  Each cycle builds the
 * scheduler's model from the simulated fleet and jobs (as queue/sched/loader.c does from
 * rows), runs sched_cycle_run — admissions, then sched_prefs.c's migrations — and carries
 * its decisions out: an admission occupies its nodes, a migration checkpoints the job,
 * frees its source and restarts it on the target after restart_s. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/sim/prefs_trace.h"
#include "bench/sim/trace_model.h"
#include "queue/sched/sched.h"

#define FLAVOR	"nvidia-h100-80gb"
#define GPUS	8
#define MAXPODS	2

struct pnode {
	int		 cluster;
	enum sched_ctype type;
	bool		 avail;		/* a reclaimed spot node is gone until back_at */
	int64_t		 back_at;
	int64_t		 held_until;	/* a reservation node of the previous tenant; 0 free */
	int		 job;		/* -1 none */
};

enum pstate { P_FUTURE, P_PENDING, P_RUNNING, P_DONE };

struct pjob {
	int64_t		 arrive, run_s;
	double		 progress, ckpt;	/* useful seconds done, at the last checkpoint */
	enum pstate	 state;
	int		 pods, node[MAXPODS];
	int64_t		 first_start, started_at, restart_until, migrated_at;
	int		 migrations;
	char		 id[16];
};

struct psim {
	const struct prefs_trace_config	*cfg;
	enum prefs_policy		 policy;
	struct pnode			*nodes;
	int				 n_nodes;
	struct pjob			*jobs;
	uint64_t			 rng;
	double				 gpu_s[SCHED_NCTYPES];
	struct prefs_trace_result	*out;
};

static const char *const policy_names[PREFS_NPOLICIES] = {
	[PREFS_WAIT] = "wait for the preferred type",
	[PREFS_ANYWHERE] = "start anywhere, never migrate",
	[PREFS_MIGRATE] = "start anywhere, migrate (fleetd)",
};

const char *
prefs_policy_name(enum prefs_policy p)
{
	return (unsigned)p < PREFS_NPOLICIES ? policy_names[p] : "?";
}

void
prefs_trace_default(struct prefs_trace_config *c)
{
	memset(c, 0, sizeof(*c));
	c->n_jobs = 1500;
	c->clusters = 4;
	c->res_nodes = 6;
	c->od_nodes = 1;
	c->spot_nodes = 8;
	c->cycle_s = 60;
	c->load = 0.95;
	c->median_run_s = 4 * 3600;
	c->ckpt_every_s = 1800;
	c->restart_s = 300;
	c->res_free_over_s = 12 * 3600;
	c->res_held_frac = 0.75;
	c->reclaim_per_node_h = 0.05;
	c->spot_back_s = 2 * 3600;
	c->min_run_s = 600;
	c->cooldown_s = 1800;
	c->max_migrations = 2;
	c->seed = 0x5eed27;
}

static double
unif(struct psim *s)
{
	s->rng ^= s->rng >> 12;
	s->rng ^= s->rng << 25;
	s->rng ^= s->rng >> 27;
	return (double)((s->rng * 2685821657736338717ULL) >> 11) / 9007199254740992.0;
}

static double
gauss(struct psim *s)
{
	double u = unif(s), v = unif(s);

	return sqrt(-2.0 * log(u > 1e-12 ? u : 1e-12)) * cos(2.0 * M_PI * v);
}

static void
build(struct psim *s)
{
	const struct prefs_trace_config *c = s->cfg;
	int per = c->res_nodes + c->od_nodes + c->spot_nodes, held, k = 0;
	double mean_run = (double)c->median_run_s * exp(0.8 * 0.8 / 2.0);
	double gpu_h_job = 1.2 * GPUS * mean_run / 3600.0;	/* 20 % of jobs have 2 pods */
	double rate_h = c->load * c->clusters * c->res_nodes * GPUS / gpu_h_job;
	double t = 0;

	s->n_nodes = c->clusters * per;
	s->nodes = calloc((size_t)s->n_nodes + 1, sizeof(*s->nodes));
	held = (int)(c->res_held_frac * c->clusters * c->res_nodes + 0.5);
	for (int cl = 0; cl < c->clusters; cl++)
		for (int i = 0; i < per; i++) {
			struct pnode *n = &s->nodes[cl * per + i];

			n->cluster = cl;
			n->type = i < c->res_nodes ? SCHED_CT_RESERVATION : i < c->res_nodes +
			    c->od_nodes ? SCHED_CT_ON_DEMAND : SCHED_CT_SPOT;
			n->avail = true;
			n->job = -1;
			/* the previous tenant's reservation nodes free one by one */
			if (n->type == SCHED_CT_RESERVATION && k < held) {
				k++;
				n->held_until = 1 + (int64_t)((double)c->res_free_over_s * k / held);
			}
		}
	s->jobs = calloc((size_t)c->n_jobs + 1, sizeof(*s->jobs));
	for (int i = 0; i < c->n_jobs; i++) {
		struct pjob *j = &s->jobs[i];
		double r = (double)c->median_run_s * exp(0.8 * gauss(s));

		t += -log(1.0 - unif(s) * 0.999999) / rate_h * 3600.0;
		j->arrive = (int64_t)t;
		j->run_s = (int64_t)fmin(fmax(r, 600.0), 8.0 * (double)c->median_run_s);
		j->pods = unif(s) < 0.2 ? 2 : 1;
		j->first_start = -1;
		for (int p = 0; p < MAXPODS; p++)
			j->node[p] = -1;
		snprintf(j->id, sizeof(j->id), "j%d", i);
	}
}

static void
free_nodes(struct psim *s, struct pjob *j)
{
	for (int p = 0; p < j->pods; p++)
		if (j->node[p] >= 0) {
			s->nodes[j->node[p]].job = -1;
			j->node[p] = -1;
		}
}

/* Work, spot reclaims and returns, the tenant's reservation, arrivals. */
static void
advance(struct psim *s, int64_t now, int64_t dt)
{
	const struct prefs_trace_config *c = s->cfg;
	double p_reclaim = c->reclaim_per_node_h * (double)dt / 3600.0;

	for (int i = 0; i < c->n_jobs; i++) {
		struct pjob *j = &s->jobs[i];

		if (j->state == P_FUTURE && j->arrive <= now)
			j->state = P_PENDING;
		if (j->state != P_RUNNING)
			continue;
		for (int p = 0; p < j->pods; p++)
			s->gpu_s[s->nodes[j->node[p]].type] += (double)dt * GPUS;
		if (now - dt >= j->restart_until)
			j->progress += (double)dt;
		else if (now > j->restart_until)
			j->progress += (double)(now - j->restart_until);
		j->ckpt = floor(j->progress / (double)c->ckpt_every_s) * (double)c->ckpt_every_s;
		if (j->progress >= (double)j->run_s) {
			j->state = P_DONE;
			free_nodes(s, j);
			s->out->finished++;
		}
	}
	for (int i = 0; i < s->n_nodes; i++) {
		struct pnode *n = &s->nodes[i];

		if (n->held_until > 0 && n->held_until <= now)
			n->held_until = 0;
		if (n->type != SCHED_CT_SPOT)
			continue;
		if (!n->avail && n->back_at <= now)
			n->avail = true;
		else if (n->avail && unif(s) < p_reclaim) {
			n->avail = false;
			n->back_at = now + c->spot_back_s;
			if (n->job >= 0) {
				struct pjob *j = &s->jobs[n->job];

				s->out->reclaims++;
				s->out->lost_reclaim_gpu_h += (j->progress - j->ckpt) * GPUS * j->pods /
				    3600.0;
				j->progress = j->ckpt;
				free_nodes(s, j);
				j->state = P_PENDING;
			}
		}
	}
}

static void
set_prefs(struct psim *s, struct sched_job *j)
{
	j->n_pref = 0;
	j->pref[j->n_pref++] = SCHED_CT_RESERVATION;
	j->pref[j->n_pref++] = SCHED_CT_ON_DEMAND;
	j->pref[j->n_pref++] = SCHED_CT_SPOT;
	j->first_only = s->policy == PREFS_WAIT;
	j->max_migrations = s->cfg->max_migrations;
	j->min_run_s = s->cfg->min_run_s;
	j->cooldown_s = s->cfg->cooldown_s;
}

static bool
model(struct psim *s, int64_t now, struct sched_model **out, struct err *e)
{
	const struct prefs_trace_config *c = s->cfg;
	struct sched_config cfg;
	struct sched_model *m;
	char id[32];

	sched_config_default(&cfg);
	cfg.preempt = false;
	cfg.migrate = s->policy == PREFS_MIGRATE;
	cfg.max_candidates = 4;
	m = sched_model_new(&cfg, now);	/* its clusters observed now */
	for (int cl = 0; cl < c->clusters; cl++) {
		struct sched_cluster *k;
		struct sched_pool *p[SCHED_NCTYPES], *cpu;
		struct sched_vec big = { { 0, 1000000, 1000000 } };

		snprintf(id, sizeof(id), "c%d", cl);
		if ((k = sched_model_add_cluster(m, id, "trace", "r1", "gke", e)) == NULL)
			goto fail;
		cpu = sched_cluster_add_pool(m, k, "cpu", false, 1, e);
		snprintf(id, sizeof(id), "c%d-cpu", cl);
		if (cpu == NULL || !sched_pool_add_node(m, k, cpu, id, NULL, NULL, NULL, big, big, e))
			goto fail;
		for (int t = 0; t < SCHED_NCTYPES; t++) {
			p[t] = NULL;
			if (t == SCHED_CT_FLEX_START)
				continue;
			p[t] = sched_cluster_add_pool(m, k, FLAVOR, t == SCHED_CT_SPOT,
			    t == SCHED_CT_SPOT ? 30 : t == SCHED_CT_RESERVATION ? 60 : 88, e);
			if (p[t] == NULL)
				goto fail;
			p[t]->ctype = (enum sched_ctype)t;
		}
		for (int i = 0; i < s->n_nodes; i++) {
			struct pnode *n = &s->nodes[i];
			struct sched_vec al = { { GPUS, 200000, 1800000 } }, fr = al;

			if (n->cluster != cl || !n->avail)
				continue;
			if (n->job >= 0 || n->held_until > 0)
				memset(&fr, 0, sizeof(fr));
			snprintf(id, sizeof(id), "n%d", i);
			if (!sched_pool_add_node(m, k, p[n->type], id, NULL, NULL, NULL, al, fr, e))
				goto fail;
		}
	}
	if (!trace_queue(m, "trace", FLAVOR, e))
		goto fail;
	for (int i = 0; i < c->n_jobs; i++) {
		struct pjob *pj = &s->jobs[i];
		struct sched_vec head = { { 0, 1000, 2048 } }, pod = { { GPUS, 8000, 65536 } };
		struct sched_job *j;
		bool run = pj->state == P_RUNNING;

		if (pj->state != P_PENDING && !run)
			continue;
		j = sched_model_add_job(m, pj->id, "q", 0, pj->arrive, run ? SCHED_RUNNING :
		    SCHED_PENDING, e);
		if (j == NULL || !sched_job_add_group(m, j, "cpu", 1, 1, head, e) ||
		    !sched_job_add_group(m, j, FLAVOR, pj->pods, pj->pods, pod, e))
			goto fail;
		j->groups[0].head = true;
		set_prefs(s, j);
		if (!run)
			continue;
		j->migrations = pj->migrations;
		j->migrated_at = pj->migrated_at;
		j->started_at = pj->started_at;
		j->moving = now < pj->restart_until;
		snprintf(id, sizeof(id), "c%d", s->nodes[pj->node[0]].cluster);
		if (!sched_job_set_cluster(m, j, id, false, pj->started_at, e))
			goto fail;
		snprintf(id, sizeof(id), "c%d-cpu", s->nodes[pj->node[0]].cluster);
		if (!sched_job_add_alloc(m, j, 0, id, 1, e))
			goto fail;
		for (int p = 0; p < pj->pods; p++) {
			snprintf(id, sizeof(id), "n%d", pj->node[p]);
			if (!sched_job_add_alloc(m, j, 1, id, 1, e))
				goto fail;
		}
	}
	if (!sched_model_finalize(m, e))
		goto fail;
	*out = m;
	return true;
fail:
	sched_model_free(m);
	return false;
}

/* The job's GPU nodes (simulation indices) in a placement's allocations. */
static int
gpu_nodes(struct sched_model *m, const struct sched_placement *pl, int *out)
{
	const struct sched_cluster *k = sched_model_cluster(m, (size_t)pl->cluster);
	int n = 0;

	for (size_t i = 0; i < pl->n_allocs; i++) {
		const struct sched_alloc *a = &pl->allocs[i];

		if (a->group != 1 || a->node < 0 || (size_t)a->node >= k->n_nodes)
			continue;
		for (int p = 0; p < a->pods && n < MAXPODS; p++)
			out[n++] = atoi(k->nodes[a->node].id + 1);
	}
	return n;
}

static void
apply(struct psim *s, struct sched_model *m, const struct sched_cycle *cy, int64_t now)
{
	for (size_t i = 0; i < cy->n; i++) {
		const struct sched_decision *d = &cy->d[i];
		struct pjob *pj;
		int nodes[MAXPODS], n;

		if (d->outcome != SCHED_OUT_ADMIT)
			continue;
		pj = &s->jobs[atoi(sched_model_job(m, (size_t)d->job)->id + 1)];
		n = gpu_nodes(m, d->place, nodes);
		for (int p = 0; p < n && p < pj->pods; p++) {
			pj->node[p] = nodes[p];
			s->nodes[nodes[p]].job = (int)(pj - s->jobs);
		}
		pj->state = P_RUNNING;
		pj->started_at = now;
		if (pj->first_start < 0)
			pj->first_start = now;
	}
	for (size_t i = 0; i < cy->n_mig; i++) {
		const struct sched_migration *mg = &cy->mig[i];
		struct pjob *pj = &s->jobs[atoi(sched_model_job(m, (size_t)mg->job)->id + 1)];
		int nodes[MAXPODS], n = gpu_nodes(m, &mg->place, nodes);

		/* the checkpoint signal: it writes one now, stops, restarts at the target */
		free_nodes(s, pj);
		for (int p = 0; p < n && p < pj->pods; p++) {
			pj->node[p] = nodes[p];
			s->nodes[nodes[p]].job = (int)(pj - s->jobs);
		}
		pj->ckpt = pj->progress;
		pj->restart_until = now + s->cfg->restart_s;
		pj->migrations++;
		pj->migrated_at = now;
		pj->started_at = now;
		s->out->migrations++;
		s->out->lost_migrate_gpu_h += (double)s->cfg->restart_s * GPUS * pj->pods / 3600.0;
		if ((size_t)pj->migrations > s->out->max_migrations_job)
			s->out->max_migrations_job = (size_t)pj->migrations;
	}
}

static int
dcmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

bool
prefs_trace_run(const struct prefs_trace_config *cfg, enum prefs_policy policy,
		struct prefs_trace_result *out, struct err *e)
{
	struct psim s = { .cfg = cfg, .policy = policy, .rng = cfg->seed | 1, .out = out };
	int64_t now = 0, limit;
	double *waits = NULL, total = 0;
	bool ok = false;
	size_t nw = 0;

	memset(out, 0, sizeof(*out));
	out->policy = policy;
	out->jobs = (size_t)cfg->n_jobs;
	build(&s);
	limit = s.jobs[cfg->n_jobs - 1].arrive + 40 * cfg->median_run_s;
	while (out->finished < (size_t)cfg->n_jobs && now < limit) {
		struct sched_model *m = NULL;
		struct arena *a;
		struct sched_cycle cy;

		now += cfg->cycle_s;
		advance(&s, now, cfg->cycle_s);
		if (!model(&s, now, &m, e))
			goto cleanup;
		a = arena_new();
		sched_cycle_run(m, a, &cy);
		apply(&s, m, &cy, now);
		arena_free(a);
		sched_model_free(m);
	}
	out->sim_s = now;
	for (int t = 0; t < SCHED_NCTYPES; t++)
		total += s.gpu_s[t];
	out->gpu_h = total / 3600.0;
	out->preferred_share = total > 0 ? 100.0 * s.gpu_s[SCHED_CT_RESERVATION] / total : 0;
	waits = calloc((size_t)cfg->n_jobs + 1, sizeof(*waits));
	for (int i = 0; i < cfg->n_jobs; i++)
		if (s.jobs[i].first_start >= 0)
			waits[nw++] = (double)(s.jobs[i].first_start - s.jobs[i].arrive);
	qsort(waits, nw, sizeof(*waits), dcmp);
	for (size_t i = 0; i < nw; i++)
		out->wait_mean_s += waits[i] / (double)nw;
	out->wait_p95_s = nw ? waits[(size_t)(0.95 * (double)(nw - 1))] : 0;
	out->migrations_per_job = (double)out->migrations / (double)cfg->n_jobs;
	ok = true;
cleanup:
	free(waits);
	free(s.nodes);
	free(s.jobs);
	return ok;
}
