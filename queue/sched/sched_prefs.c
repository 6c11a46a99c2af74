/* sched_prefs: capacity preferences (issue 27).  A queue or job ranks capacity types
 * (reservation, on_demand, spot, flex_start); a pending job starts on the best type with room
 * now (or waits for its first choice when it takes only that), and a running job below its
 * first choice migrates to a more preferred type when one frees: planned here, once per
 * cycle after the admissions, into free capacity only, after a minimum run time, at most
 * max_migrations times, and not again within its cooldown (the hysteresis: a job that just
 * moved stays put while what it left and what it took settle).  The scheduler commits a
 * migration as a move (queue/sched/scheduler.c), which the mover carries out with the
 * checkpoint signal (queue/change/mover.c). */
#include <string.h>

#include "queue/sched/sched_int.h"

static const char *const ctype_names[SCHED_NCTYPES] = {
	[SCHED_CT_RESERVATION] = "reservation",
	[SCHED_CT_ON_DEMAND] = "on_demand",
	[SCHED_CT_SPOT] = "spot",
	[SCHED_CT_FLEX_START] = "flex_start",
};

static const char *const verdict_codes[] = {
	[SCHED_MV_NO_PREFERENCE] = "no_preference",
	[SCHED_MV_FIRST_CHOICE] = "on_first_choice",
	[SCHED_MV_NOT_RUNNING] = "not_running",
	[SCHED_MV_MIN_RUN] = "min_run_time",
	[SCHED_MV_COOLDOWN] = "cooldown",
	[SCHED_MV_MAX] = "max_migrations",
	[SCHED_MV_NO_ROOM] = "no_room",
	[SCHED_MV_MIGRATE] = "migrate",
};

const char *
sched_ctype_name(enum sched_ctype t)
{
	return (unsigned)t < SCHED_NCTYPES ? ctype_names[t] : "unknown";
}

int
sched_ctype_parse(const char *s)
{
	for (int i = 0; s != NULL && i < SCHED_NCTYPES; i++)
		if (strcmp(s, ctype_names[i]) == 0)
			return i;
	return -1;
}

const char *
sched_migrate_verdict_code(enum sched_migrate_verdict v)
{
	return (unsigned)v <= SCHED_MV_MIGRATE ? verdict_codes[v] : "unknown";
}

int
sched_job_rank(const struct sched_job *j, enum sched_ctype t)
{
	for (int i = 0; i < j->n_pref; i++)
		if (j->pref[i] == t)
			return i;
	return j->n_pref;
}

int
sched_job_placed_rank(const struct sched_model *m, const struct sched_job *j)
{
	const struct sched_cluster *c;
	int worst = -1;

	if (j->cluster < 0 || (size_t)j->cluster >= m->n_clusters)
		return j->n_pref;
	c = m->clusters[j->cluster];
	for (size_t i = 0; i < j->n_allocs; i++) {
		const struct sched_alloc *a = &j->allocs[i];
		int r;

		if (a->pool < 0 || (size_t)a->pool >= c->n_pools ||
		    c->pools[a->pool].flavor == m->cpu_flavor)
			continue;	/* heads: on-demand cpu pools, whatever the preference */
		r = sched_job_rank(j, c->pools[a->pool].ctype);
		if (r > worst)
			worst = r;
	}
	return worst < 0 ? 0 : worst;
}

/* sched_place restricted to ranks [0, upto). */
static bool
place_ranks(struct sched_model *m, const struct sched_job *j, enum sched_reason quota,
	    struct arena *a, struct sched_placement *out, int upto, int *rank)
{
	struct sched_placement first;
	bool have_first = false, ok = false;

	for (int r = 0; r < upto && !ok; r++) {
		m->ctype_only = j->pref[r];
		ok = sched_place(m, j, quota, a, out);
		if (ok)
			*rank = r;
		else if (!have_first) {
			first = *out;	/* why the first choice failed: the most telling */
			have_first = true;
		}
	}
	m->ctype_only = SCHED_CT_ANY;
	if (!ok && have_first)
		*out = first;
	return ok;
}

bool
sched_place_pref(struct sched_model *m, const struct sched_job *j, enum sched_reason quota,
		 struct arena *a, struct sched_placement *out, int *rank)
{
	*rank = 0;
	if (j->n_pref == 0)
		return sched_place(m, j, quota, a, out);
	return place_ranks(m, j, quota, a, out, j->first_only ? 1 : j->n_pref, rank);
}

/* Whether j may migrate now, before looking for room. */
static enum sched_migrate_verdict
eligible(const struct sched_model *m, const struct sched_job *j, int *rank)
{
	*rank = 0;
	if (j->n_pref < 2)
		return SCHED_MV_NO_PREFERENCE;
	if (j->state != SCHED_RUNNING || j->in_flight || j->moving || j->cluster < 0 ||
	    strchr(j->id, '#') != NULL)
		return SCHED_MV_NOT_RUNNING;
	if ((*rank = sched_job_placed_rank(m, j)) == 0)
		return SCHED_MV_FIRST_CHOICE;
	if (j->migrations >= j->max_migrations)
		return SCHED_MV_MAX;
	if (j->migrated_at > 0 && m->now - j->migrated_at < j->cooldown_s)
		return SCHED_MV_COOLDOWN;
	if (j->started_at > 0 && m->now - j->started_at < j->min_run_s)
		return SCHED_MV_MIN_RUN;
	return SCHED_MV_NO_ROOM;
}

enum sched_migrate_verdict
sched_migrate_check(struct sched_model *m, const struct sched_job *j, struct arena *a,
		    struct sched_placement *out, int *to_rank)
{
	int rank;
	enum sched_migrate_verdict v = eligible(m, j, &rank);

	if (v != SCHED_MV_NO_ROOM)
		return v;
	/* quota: a migration keeps the job's flavors and sizes, so its usage is unchanged */
	return place_ranks(m, j, SCHED_R_CHOSEN, a, out, rank, to_rank) ? SCHED_MV_MIGRATE :
	    SCHED_MV_NO_ROOM;
}

static int
mig_cmp(const void *x, const void *y, void *arg)
{
	const struct sched_model *m = arg;
	const struct sched_job *a = m->jobs[*(const int *)x], *b = m->jobs[*(const int *)y];

	if (a->priority != b->priority)
		return a->priority > b->priority ? -1 : 1;
	if (a->enqueued_at != b->enqueued_at)
		return a->enqueued_at < b->enqueued_at ? -1 : 1;
	return a->idx - b->idx;
}

void
sched_migrate_plan(struct sched_model *m, struct arena *a, struct sched_cycle *out)
{
	int *idx;
	size_t n = 0;

	out->mig = NULL;
	out->n_mig = 0;
	if (!m->cfg.migrate || m->cfg.max_migrations_cycle == 0)
		return;
	idx = arena_alloc(a, (m->n_jobs + 1) * sizeof(*idx));
	for (size_t i = 0; i < m->n_jobs; i++) {
		const struct sched_job *j = m->jobs[i];
		int rank;

		if (j->n_pref >= 2 && j->state == SCHED_RUNNING && eligible(m, j, &rank) ==
		    SCHED_MV_NO_ROOM)
			idx[n++] = (int)i;
	}
	if (n == 0)
		return;
	qsort_r(idx, n, sizeof(*idx), mig_cmp, m);
	out->mig = arena_alloc(a, (n + 1) * sizeof(*out->mig));
	for (size_t i = 0; i < n && out->n_mig < m->cfg.max_migrations_cycle; i++) {
		struct sched_job *j = m->jobs[idx[i]];
		struct sched_migration *mg = &out->mig[out->n_mig];
		int to;

		if (sched_migrate_check(m, j, a, &mg->place, &to) != SCHED_MV_MIGRATE)
			continue;
		mg->job = j->idx;
		mg->from_rank = sched_job_placed_rank(m, j);
		mg->to_rank = to;
		/* the target is reserved now (the source stays held until the move ends), so no
		 * later admission or migration of this cycle takes it */
		sched_capacity_take(m, m->clusters[mg->place.cluster], mg->place.allocs,
		    mg->place.n_allocs);
		out->n_mig++;
	}
}

static json_t *
order_json(const struct sched_job *j)
{
	json_t *arr = json_array();

	for (int i = 0; i < j->n_pref; i++)
		json_array_append_new(arr, json_string(sched_ctype_name(j->pref[i])));
	return arr;
}

static const char *
verdict_detail(enum sched_migrate_verdict v)
{
	switch (v) {
	case SCHED_MV_NO_PREFERENCE:
		return "no ranked capacity types (or one only): never migrated";
	case SCHED_MV_FIRST_CHOICE:
		return "runs on its first choice";
	case SCHED_MV_NOT_RUNNING:
		return "only a running job migrates";
	case SCHED_MV_MIN_RUN:
		return "has not run its minimum run time yet";
	case SCHED_MV_COOLDOWN:
		return "migrated recently: waits its cooldown before another migration";
	case SCHED_MV_MAX:
		return "has migrated as often as it may";
	case SCHED_MV_NO_ROOM:
		return "no free capacity of a more preferred type fits it now";
	case SCHED_MV_MIGRATE:
		return "a more preferred type has room: the scheduler migrates it";
	}
	return "";
}

json_t *
sched_explain_prefs(struct sched_model *m, const struct sched_job *j)
{
	struct arena *a;
	struct sched_placement pl;
	enum sched_migrate_verdict v;
	int to = -1, rank;
	json_t *o;

	if (j->n_pref == 0)
		return json_null();
	a = arena_new();
	rank = j->state == SCHED_PENDING ? -1 : sched_job_placed_rank(m, j);
	v = j->state == SCHED_PENDING ? SCHED_MV_NOT_RUNNING :
	    sched_migrate_check(m, j, a, &pl, &to);
	o = json_pack("{s:o, s:b, s:o, s:i, s:i, s:I, s:I, s:s, s:s}", "order", order_json(j),
	    "first_choice_only", j->first_only, "current", rank >= 0 && rank < j->n_pref ?
	    json_string(sched_ctype_name(j->pref[rank])) : json_null(), "migrations",
	    j->migrations, "max_migrations", j->max_migrations, "min_run_s",
	    (json_int_t)j->min_run_s, "cooldown_s", (json_int_t)j->cooldown_s, "verdict",
	    sched_migrate_verdict_code(v), "detail", verdict_detail(v));
	if (v == SCHED_MV_MIGRATE)
		json_object_set_new(o, "to", json_pack("{s:s, s:s}", "cluster",
		    m->clusters[pl.cluster]->id, "capacity_type", sched_ctype_name(j->pref[to])));
	arena_free(a);
	return o;
}
