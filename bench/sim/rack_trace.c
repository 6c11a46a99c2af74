/* rack_trace: topology pack against topology none on NVL72 racks in simulated time (see
 * rack_trace.h).  The jobs enter through the loader from the spec JSON the API stores;
 * each cycle is sched_cycle_run; an admission's racks are what sched_place counted. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "bench/sim/rack_trace.h"
#include "bench/sim/trace_model.h"
#include "queue/sched/loader.h"
#include "queue/sched/sched_int.h"

#define GPUS	4	/* per tray */
#define FLAVOR	"nvidia-gb200"

struct tjob {
	int		 gpus;
	int64_t		 arrive, run_s, end;
	struct sched_job *j;
	bool		 done;
};

struct sim {
	const struct rack_trace_config *c;
	struct sched_model	*m;
	struct tjob		*jobs;
	uint64_t		 rng;
	int			 rack_gpus;
};

static double
unit(struct sim *s)
{
	s->rng ^= s->rng << 13;
	s->rng ^= s->rng >> 7;
	s->rng ^= s->rng << 17;
	return (double)(s->rng >> 11) / 9007199254740992.0;
}

/* Gang sizes, small ones most often: 8 to 512 GPUs (whole trays of 4). */
static int
gang_size(struct sim *s)
{
	static const struct { int gpus; double w; } sizes[] = {
		{ 8, 0.22 }, { 16, 0.16 }, { 32, 0.14 }, { 48, 0.06 }, { 64, 0.10 }, { 72, 0.06 },
		{ 128, 0.08 }, { 144, 0.06 }, { 256, 0.06 }, { 288, 0.03 }, { 512, 0.03 },
	};
	double x = unit(s), acc = 0;

	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		acc += sizes[i].w;
		if (x < acc)
			return sizes[i].gpus;
	}
	return 8;
}

static bool
build(struct sim *s, struct err *e)
{
	const struct rack_trace_config *c = s->c;
	struct sched_cluster *k = sched_model_add_cluster(s->m, "gb", "bench", "us-central1",
	    "gke", e);
	struct sched_pool *gp, *cp;
	struct sched_vec tray = { { GPUS, 140000, 884 * 1024 } }, head = { { 0, 64000, 256 * 1024 } };
	char id[64], rack[48], block[32];
	int u, r, t;

	if (k == NULL)
		return false;
	gp = sched_cluster_add_pool(s->m, k, FLAVOR, false, 60.0, e);
	if (gp == NULL)
		return false;
	for (u = 0; u < c->units; u++)
		for (r = 0; r < c->racks; r++)
			for (t = 0; t < c->trays; t++) {
				snprintf(id, sizeof(id), "u%d-r%d-t%d", u, r, t);
				snprintf(rack, sizeof(rack), "u%d-r%d", u, r);
				snprintf(block, sizeof(block), "u%d", u);
				if (!sched_pool_add_node(s->m, k, gp, id, rack, NULL, NULL, tray, tray, e))
					return false;
				sched_node_set_block(s->m, k, block);
			}
	if ((cp = sched_cluster_add_pool(s->m, k, "cpu", false, 1.0, e)) == NULL)
		return false;
	for (t = 0; t < c->n_jobs / 8 + 8; t++) {	/* heads never wait for room */
		snprintf(id, sizeof(id), "cpu-%d", t);
		if (!sched_pool_add_node(s->m, k, cp, id, NULL, NULL, NULL, head, head, e))
			return false;
	}
	return trace_queue(s->m, "bench", FLAVOR, e) && sched_model_finalize(s->m, e);
}

static bool
submit(struct sim *s, int i, struct err *e)
{
	struct tjob *t = &s->jobs[i];
	char id[16];
	json_t *spec;

	snprintf(id, sizeof(id), "j%05d", i);
	spec = json_pack("{s:s, s:s, s:s, s:s, s:s, s:{s:s, s:s}, s:[{s:s, s:i, s:s, s:s, "
	    "s:{s:s, s:i}}], s:s}", "kind", "RayJob", "queue", "q", "name", id,
	    "ray_version", "2.52.0", "entrypoint", "python train.py", "head", "cpu", "2",
	    "memory", "8Gi", "worker_groups", "name", "w", "replicas", t->gpus / GPUS, "cpu", "16",
	    "memory", "128Gi", "accelerator", "flavor", FLAVOR, "count", GPUS,
	    "topology", s->c->topology);
	t->j = spec ? loader_add_job(s->m, id, "q", 0, false, t->arrive, SCHED_PENDING, spec, e) :
	    NULL;
	json_decref(spec);
	return t->j != NULL || err_set(e, 500, "trace.job", "job %s not loaded", id);
}

/* Free GPUs in racks that are partly used, and all free GPUs. */
static void
fragments(const struct sim *s, int64_t *frag, int64_t *free_all)
{
	const struct sched_cluster *k = s->m->clusters[0];
	int nr = s->c->units * s->c->racks, per = s->c->trays;

	*frag = *free_all = 0;
	for (int r = 0; r < nr; r++) {
		int64_t f = 0;

		for (int t = 0; t < per; t++)
			f += k->nodes[r * per + t].free.v[SCHED_ACCEL];
		*free_all += f;
		if (f > 0 && f < (int64_t)per * GPUS)
			*frag += f;
	}
}

static void
record(struct sim *s, const struct sched_cycle *cy, int64_t now, struct rack_trace_result *o,
       double *ratio_sum, double *multi_sum, int64_t *used, int64_t *fewest, int64_t *wait)
{
	for (size_t d = 0; d < cy->n; d++) {
		const struct sched_decision *x = &cy->d[d];
		struct tjob *t;
		int least;

		if (x->outcome != SCHED_OUT_ADMIT)
			continue;
		t = &s->jobs[x->job];
		t->end = now + t->run_s;
		least = (t->gpus + s->rack_gpus - 1) / s->rack_gpus;
		o->admitted++;
		*ratio_sum += (double)x->place->racks_used / least;
		*used += x->place->racks_used;
		*fewest += least;
		*wait += now - t->arrive;
		o->at_min += x->place->racks_used == least;
		if (least > 1) {
			o->multi_rack++;
			*multi_sum += (double)x->place->racks_used / least;
		}
	}
}

static bool
simulate(struct sim *s, struct rack_trace_result *o, struct err *e)
{
	double ratio_sum = 0, multi_sum = 0, frag_sum = 0, frag_free = 0, busy = 0;
	int64_t now = 0, used = 0, fewest = 0, wait = 0, frag, free_all;
	int next = 0, live = 0;

	while (next < s->c->n_jobs || live > 0) {
		struct arena *a = arena_new();
		struct sched_cycle cy;

		for (int i = 0; i < next; i++) {
			struct tjob *t = &s->jobs[i];

			if (!t->done && t->j->state == SCHED_ADMITTED && t->end <= now) {
				sched_model_finish_job(s->m, t->j);
				t->done = true;
				live--;
			}
		}
		while (next < s->c->n_jobs && s->jobs[next].arrive <= now) {
			if (!submit(s, next++, e)) {
				arena_free(a);
				return false;
			}
			live++;
		}
		sched_model_set_now(s->m, now);
		s->m->clusters[0]->observed_at = now;
		sched_cycle_run(s->m, a, &cy);
		record(s, &cy, now, o, &ratio_sum, &multi_sum, &used, &fewest, &wait);
		arena_free(a);
		fragments(s, &frag, &free_all);
		frag_sum += (double)frag;
		frag_free += (double)free_all;
		busy += (double)(o->capacity - free_all);
		o->cycles++;
		now += s->c->cycle_s;
		if (o->cycles > 10000000)
			return err_set(e, 500, "trace.stuck", "the trace does not drain");
	}
	o->sim_s = now;
	o->ratio_mean = o->admitted ? ratio_sum / (double)o->admitted : 0;
	o->ratio_multi = o->multi_rack ? multi_sum / (double)o->multi_rack : 0;
	o->ratio_total = fewest ? (double)used / (double)fewest : 0;
	o->frag_mean = o->cycles ? frag_sum / (double)o->cycles : 0;
	o->frag_share = frag_free > 0 ? 100.0 * frag_sum / frag_free : 0;
	o->utilization = o->cycles ? 100.0 * busy / ((double)o->cycles * (double)o->capacity) : 0;
	o->wait_mean_s = o->admitted ? wait / (int64_t)o->admitted : 0;
	return true;
}

void
rack_trace_default(struct rack_trace_config *c)
{
	memset(c, 0, sizeof(*c));
	c->n_jobs = 2000;
	c->units = 4;
	c->racks = 8;
	c->trays = 18;
	c->cycle_s = 60;
	c->load = 0.8;
	c->median_run_s = 2 * 3600;
	c->seed = 0x7ac4;
	c->topology = "pack";
}

bool
rack_trace_run(const struct rack_trace_config *c, struct rack_trace_result *out,
	       struct err *e)
{
	struct sched_config sc;
	struct sim s;
	double gpu_s = 0, t = 0;
	bool ok = false;
	int i;

	memset(out, 0, sizeof(*out));
	memset(&s, 0, sizeof(s));
	if (c->n_jobs < 1 || c->units < 1 || c->racks < 1 || c->trays < 1 || c->cycle_s < 1 ||
	    !(c->load > 0.0) || c->median_run_s < 1 || c->topology == NULL ||
	    (strcmp(c->topology, "pack") != 0 && strcmp(c->topology, "none") != 0) ||
	    (int64_t)c->racks * c->trays * GPUS < 512)
		return err_set(e, 400, "trace.bad_config", "bad rack trace configuration (a scale "
		    "unit must hold 512 GPUs)");
	s.c = c;
	s.rng = c->seed ? c->seed : 1;
	s.rack_gpus = c->trays * GPUS;
	out->capacity = (int64_t)c->units * c->racks * c->trays * GPUS;
	s.jobs = calloc((size_t)c->n_jobs, sizeof(*s.jobs));
	sched_config_default(&sc);
	s.m = sched_model_new(&sc, 0);
	if (s.jobs == NULL) {
		err_set(e, 500, "trace.oom", "out of memory");
		goto cleanup;
	}
	if (!build(&s, e))
		goto cleanup;
	/* sizes and run times first, then arrivals spaced for the offered load */
	for (i = 0; i < c->n_jobs; i++) {
		s.jobs[i].gpus = gang_size(&s);
		s.jobs[i].run_s = (int64_t)((double)c->median_run_s * exp(0.8 * (unit(&s) * 2 - 1)));
		if (s.jobs[i].run_s < c->cycle_s)
			s.jobs[i].run_s = c->cycle_s;
		gpu_s += (double)s.jobs[i].gpus * (double)s.jobs[i].run_s;
	}
	for (i = 0; i < c->n_jobs; i++) {
		double mean_gap = gpu_s / (double)c->n_jobs / ((double)out->capacity * c->load);

		s.jobs[i].arrive = (int64_t)t;
		t += -log(1.0 - unit(&s) * 0.999999) * mean_gap;
	}
	ok = simulate(&s, out, e);
cleanup:
	free(s.jobs);
	sched_model_free(s.m);
	return ok;
}
