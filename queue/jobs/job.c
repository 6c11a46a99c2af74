/* job: submit with admission checks, reads, lists, transitions and cancellation. */
#include <stdlib.h>
#include <string.h>

#include <uuid/uuid.h>

#include "core/jsonx.h"
#include "providers/jobspec.h"
#include "queue/cost/budget.h"
#include "queue/jobs/job.h"
#include "queue/jobs/queue.h"
#include "queue/jobs/submit_cache.h"
#include "regions/catalog.h"
#include "regions/env.h"
#include "regions/flavor.h"

static const char sql_event[] =
    "INSERT INTO job_events (job_id, type, from_state, to_state, attempt, message, data)"
    " SELECT $1::uuid, $2, $3, $4, attempt, $5, $6::jsonb FROM jobs WHERE id = $1::uuid";

bool
job_get(struct db *c, const char *id, bool for_update, json_t **out, struct err *e)
{
	static const char sql[] = "SELECT " JOB_JSON JOB_FROM " WHERE j.id = $1::uuid";
	static const char sql_lock[] = "SELECT " JOB_JSON JOB_FROM " WHERE j.id = $1::uuid"
	    " FOR UPDATE OF j";
	return db_get_id_json(c, for_update ? sql_lock : sql, id, "queue.job_not_found", "job",
	    out, e);
}

bool
job_manifest(struct db *c, const char *id, json_t **out, struct err *e)
{
	static const char sql[] = "SELECT manifest::text FROM jobs WHERE id = $1::uuid"
	    " AND manifest IS NOT NULL";
	const char *p[1] = { id };

	if (db_get_json(c, sql, 1, p, "queue.no_manifest", "manifest", out, e))
		return true;
	if (e->status == 404)
		err_set(e, 404, "queue.no_manifest",
		    "the job has not been applied to a cluster yet");
	return false;
}

/* topology pack (issue 26): the accelerator gang of each flavor must fit the racks of one
 * scale unit (InfiniBand block; a cluster's racks without a block label are one unit) of a
 * cluster the job allows (spot, providers, regions), as
 * queue/sched/sched_blocks.c places it: only nodes with a rack count, and a pack gang never
 * grows nodes.  400 topology.too_large at /topology naming the largest scale unit known;
 * nothing is refused while no node of the flavor carries a rack (the fleet has not said what
 * it holds: the job waits and explain says why). */
static bool
pack_fits(struct db *c, const char *env, const struct job_spec *s, const char *providers,
    struct err *e)
{
	static const char sql[] =
	    "SELECT u.name, u.blk, u.accel, u.racks FROM"
	    " (SELECT k.name, coalesce(x->>'block', '') AS blk,"
	    "  sum(coalesce((x->>'alloc_accel')::bigint, cap.accel_per_node)) AS accel,"
	    "  count(DISTINCT x->>'rack') AS racks"
	    " FROM capacity cap JOIN clusters k ON k.id = cap.cluster_id"
	    " JOIN clouds cl ON cl.id = k.cloud_id,"
	    " jsonb_array_elements(cap.topology->'nodes') x"
	    " WHERE cl.environment = $1 AND cap.flavor = $2 AND ($3::boolean IS NULL OR"
	    " cap.spot = $3::boolean) AND ($4::text[] IS NULL OR cl.provider = ANY($4::text[]))"
	    " AND ($5::text[] IS NULL OR cl.region = ANY($5::text[]))"
	    " AND coalesce(x->>'rack', '') <> ''"
	    " GROUP BY k.id, k.name, blk) u ORDER BY u.accel DESC, u.name, u.blk LIMIT 1";
	const char *spot = s->spot == JOBSPEC_SPOT_ONLY ? "true" :
	    s->spot == JOBSPEC_SPOT_NEVER ? "false" : NULL;
	char regs[600] = "{";

	/* only the regions the job allows count, as its providers */
	for (size_t i = 0; i < s->nregions && strlen(regs) + 66 < sizeof(regs); i++)
		snprintf(regs + strlen(regs), sizeof(regs) - strlen(regs), "%s%.64s", i ? "," : "",
		    s->regions[i]);
	strcat(regs, "}");
	for (size_t i = 0; i < s->ngroups; i++) {
		const char *fl = s->groups[i].accel_flavor;
		const char *p[5] = { env, fl, spot, providers, s->nregions > 0 ? regs : NULL };
		long long need = 0, most;
		PGresult *r = NULL;
		bool seen = false;

		if (fl == NULL)
			continue;
		for (size_t k = 0; k < i && !seen; k++)
			seen = s->groups[k].accel_flavor != NULL &&
			    strcmp(s->groups[k].accel_flavor, fl) == 0;
		if (seen)
			continue;	/* this flavor's gang was checked with its first group */
		for (size_t k = i; k < s->ngroups; k++)
			if (s->groups[k].accel_flavor != NULL &&
			    strcmp(s->groups[k].accel_flavor, fl) == 0)
				need += (long long)s->groups[k].min_replicas *
				    s->groups[k].accel_count;
		if (!db_exec(c, sql, 5, p, &r, e))
			return false;
		if (PQntuples(r) == 0) {	/* no rack of the flavor known: it waits */
			PQclear(r);
			continue;
		}
		most = atoll(PQgetvalue(r, 0, 2));
		if (need > most) {
			char unit[160];

			if (PQgetvalue(r, 0, 1)[0] != '\0')
				snprintf(unit, sizeof(unit), "block %.64s of cluster %.64s",
				    PQgetvalue(r, 0, 1), PQgetvalue(r, 0, 0));
			else
				snprintf(unit, sizeof(unit), "the racks of cluster %.64s (no block "
				    "label)", PQgetvalue(r, 0, 0));
			err_field(e, 400, "topology.too_large", "/topology", "topology pack: the "
			    "gang needs %lld %s in one scale unit but the largest in %s (%s) "
			    "holds %lld", need, fl, env, unit, most);
			err_detail(e, "topology pack places the accelerator gang on the fewest racks "
			    "(NVLink domains) of one scale unit (InfiniBand block) and never spans "
			    "two; the largest scale unit known is %s: %lld %s on %lld racks. Use "
			    "topology none, or a smaller gang", unit, most, fl,
			    atoll(PQgetvalue(r, 0, 3)));
			PQclear(r);
			return false;
		}
		PQclear(r);
	}
	return true;
}

/* Refuses a job that no cluster of the environment could ever hold, with the reason.
 * While a cluster of the environment has never been observed, nothing is refused: what
 * it can hold is not known yet (a cluster just registered). */
static bool
admissible(struct db *c, const char *env, const struct job_spec *s, long long catalog_gen,
	   struct err *e)
{
	static const char sql_unseen[] = "SELECT count(*) FROM clusters k JOIN clouds c"
	    " ON c.id = k.cloud_id WHERE c.environment = $1 AND NOT EXISTS (SELECT 1 FROM"
	    " capacity cap WHERE cap.cluster_id = k.id)";
	const char *pe[1] = { env };
	PGresult *ru = NULL;
	long long kept[2];
	unsigned long gen;
	char key[320];

	/* the catalog is data (regions/flavor.c): an unknown flavor is refused whatever the
	 * fleet has seen */
	if (!flavor_sync_at(c, catalog_gen, e))
		return false;
	for (size_t i = 0; i < s->ngroups; i++) {
		char fp[64];

		snprintf(fp, sizeof(fp), "/worker_groups/%zu/accelerator/flavor", i);
		if (s->groups[i].accel_flavor != NULL &&
		    !catalog_flavor_check(s->groups[i].accel_flavor, fp, e))
			return false;
	}
	/* a slice job's shape must be one its TPU generation offers (regions/catalog_tpu.c):
	 * otherwise it would wait for a slice no GKE node pool can have.  A TPU flavor an
	 * admin added or overrode has no known shapes and is not checked. */
	for (size_t i = 0; s->topology == JOBSPEC_TOPO_SLICE && i < s->ngroups; i++) {
		const char *fl = s->groups[i].accel_flavor;
		const struct catalog_flavor *f = catalog_flavor_get(fl);
		struct catalog_slice sl;

		if (fl != NULL && f != NULL && f == catalog_builtin_flavor(fl) &&
		    strcmp(f->kind, "tpu") == 0 &&
		    !catalog_slice_parse(fl, s->slice_shape, "/topology/shape", &sl, e))
			return false;
	}
	/* both reads are kept in memory until capacity, clusters or clouds change */
	snprintf(key, sizeof(key), "unseen\x1f%s", env);
	if (!submit_cache_get(key, kept, &gen)) {
		if (!db_exec(c, sql_unseen, 1, pe, &ru, e))
			return false;
		kept[0] = atoll(PQgetvalue(ru, 0, 0));
		kept[1] = 0;
		PQclear(ru);
		submit_cache_put(key, kept, gen);
	}
	if (kept[0] > 0)
		return true;
	static const char sql[] =
	    /* per cluster: every pool of the flavor together (a gang spans pools: TPU slices
	     * are one pool each), then the largest cluster */
	    "SELECT coalesce(max(t.total), -1), coalesce(max(t.rack), 0), count(*) FROM"
	    " (SELECT k.id, sum(cap.max_nodes * cap.accel_per_node) AS total,"
	    "  max(r.rack_accel) AS rack"
	    " FROM capacity cap JOIN clusters k ON k.id = cap.cluster_id"
	    " JOIN clouds c ON c.id = k.cloud_id"
	    " LEFT JOIN LATERAL (SELECT max(n.cnt) * cap.accel_per_node AS rack_accel FROM"
	    "  (SELECT count(*) AS cnt FROM jsonb_array_elements(cap.topology->'nodes') x"
	    "   WHERE x->>'rack' IS NOT NULL GROUP BY x->>'rack') n) r ON true"
	    " WHERE c.environment = $1 AND cap.flavor = $2 AND ($3::boolean IS NULL OR"
	    " cap.spot = $3::boolean) AND ($4::text[] IS NULL OR c.provider = ANY($4::text[]))"
	    " GROUP BY k.id) t";
	char provs[160] = "{", *pl = NULL;

	/* only the providers the job allows count (a spot gang on a provider without spot
	 * capacity is refused here, not left pending) */
	for (size_t i = 0; i < s->nproviders && strlen(provs) + 16 < sizeof(provs); i++)
		snprintf(provs + strlen(provs), sizeof(provs) - strlen(provs), "%s%s", i ? "," : "",
		    s->providers[i]);
	strcat(provs, "}");
	if (s->nproviders > 0)
		pl = provs;
	for (size_t i = 0; i < s->ngroups; i++) {
		const struct jobspec_group *g = &s->groups[i];
		const char *spot = s->spot == JOBSPEC_SPOT_ONLY ? "true" :
		    s->spot == JOBSPEC_SPOT_NEVER ? "false" : NULL;
		const char *p[4] = { env, g->accel_flavor, spot, pl };
		long long need, most, rack;
		PGresult *r = NULL;
		char ptr[64];

		if (g->accel_flavor == NULL)
			continue;
		snprintf(ptr, sizeof(ptr), "/worker_groups/%zu/accelerator/flavor", i);
		snprintf(key, sizeof(key), "most\x1f%s\x1f%s\x1f%s\x1f%s", env, g->accel_flavor,
		    spot ? spot : "any", pl ? pl : "*");
		if (!submit_cache_get(key, kept, &gen)) {
			if (!db_exec(c, sql, 4, p, &r, e))
				return false;
			kept[0] = atoll(PQgetvalue(r, 0, 0));
			kept[1] = atoll(PQgetvalue(r, 0, 1));
			PQclear(r);
			submit_cache_put(key, kept, gen);
		}
		most = kept[0];
		rack = kept[1];
		need = (long long)g->min_replicas * g->accel_count;
		if (most < 0)
			return err_field(e, 422, "queue.unplaceable", ptr, "no cluster in %s%s%s has "
			    "%s%s accelerators", env, pl ? " among providers " : "", pl ? pl : "",
			    g->accel_flavor, spot ? (spot[0] == 't' ? " spot" : " on-demand") : "");
		if (need > most)
			return err_field(e, 422, "queue.unplaceable", ptr,
			    "the gang needs %lld %s "
			    "but the largest cluster in %s can hold %lld", need, g->accel_flavor,
			    env, most);
		if (s->topology == JOBSPEC_TOPO_RACK && rack > 0 && need > rack)
			return err_field(e, 422, "queue.unplaceable", "/topology",
			    "the gang needs "
			    "%lld %s in one rack but the largest rack in %s holds %lld", need,
			    g->accel_flavor, env, rack);
	}
	return s->topology != JOBSPEC_TOPO_PACK || pack_fits(c, env, s, pl, e);
}

/* topology host: the accelerator gang at its maximum (elastic growth stays on the node)
 * must fit one node of the environment; 422 naming the largest node otherwise. */
static bool
host_fits(struct db *c, const char *env, const struct job_spec *s, struct err *e)
{
	static const char sql[] =
	    "SELECT x->>'name', cap.pool, k.name,"
	    " coalesce((x->>'alloc_accel')::bigint, cap.accel_per_node),"
	    " coalesce((x->>'alloc_cpu_m')::bigint, (x->>'free_cpu_m')::bigint, 0),"
	    " coalesce((x->>'alloc_mem')::bigint, (x->>'free_mem')::bigint, 0)"
	    " FROM capacity cap JOIN clusters k ON k.id = cap.cluster_id"
	    " JOIN clouds c ON c.id = k.cloud_id,"
	    " jsonb_array_elements(cap.topology->'nodes') x"
	    " WHERE c.environment = $1 AND cap.flavor = $2 AND ($3::boolean IS NULL OR"
	    " cap.spot = $3::boolean) ORDER BY 4 DESC, 5 DESC, 6 DESC, 1 LIMIT 1";
	const char *spot = s->spot == JOBSPEC_SPOT_ONLY ? "true" :
	    s->spot == JOBSPEC_SPOT_NEVER ? "false" : NULL;
	long long accel = 0, cpu = 0, mem = 0;
	const char *flavor = NULL;
	size_t last = 0;
	PGresult *r = NULL;
	char ptr[64];
	bool ok = false;

	for (size_t i = 0; i < s->ngroups; i++) {
		const struct jobspec_group *g = &s->groups[i];

		if (g->accel_flavor == NULL)
			continue;
		flavor = g->accel_flavor;
		last = i;
		accel += (long long)g->max_replicas * g->accel_count;
		cpu += (long long)g->max_replicas * g->cpu_milli;
		mem += (long long)g->max_replicas * g->memory_bytes;
	}
	if (flavor == NULL)
		return true;
	{
		const char *p[3] = { env, flavor, spot };

		if (!db_exec(c, sql, 3, p, &r, e))
			return false;
	}
	snprintf(ptr, sizeof(ptr), "/worker_groups/%zu/%s", last,
	    s->groups[last].elastic ? "max_replicas" : "replicas");
	if (PQntuples(r) == 0) {
		ok = true;	/* no node seen yet: the flavor check above speaks for it */
	} else if (accel > atoll(PQgetvalue(r, 0, 3)) || cpu > atoll(PQgetvalue(r, 0, 4)) ||
	    mem > atoll(PQgetvalue(r, 0, 5))) {
		err_field(e, 422, "queue.unplaceable", ptr, "topology host: the gang needs %lld "
		    "%s on one node but the largest node in %s (%.48s) has %lld", accel, flavor,
		    env, PQgetvalue(r, 0, 0), atoll(PQgetvalue(r, 0, 3)));
		err_detail(e, "topology host puts every accelerator pod on one node, elastic "
		    "growth included: at max_replicas the gang needs %lld %s, %lld millicores and "
		    "%lld MiB; the largest node is %.64s (pool %.64s of cluster %.64s) with %lld, "
		    "%lld and %lld", accel, flavor, cpu, mem >> 20, PQgetvalue(r, 0, 0),
		    PQgetvalue(r, 0, 1), PQgetvalue(r, 0, 2), atoll(PQgetvalue(r, 0, 3)),
		    atoll(PQgetvalue(r, 0, 4)), atoll(PQgetvalue(r, 0, 5)) >> 20);
	} else {
		ok = true;
	}
	PQclear(r);
	return ok;
}

bool
pod_policy_ok(struct db *c, const char *env, const struct job_spec *s, struct err *e)
{
	json_t *policy = NULL;
	bool ok;

	if (s->head_pod == NULL) {
		size_t i;

		for (i = 0; i < s->ngroups && s->groups[i].pod == NULL; i++)
			;
		if (i == s->ngroups)
			return true;	/* no pod section: nothing to ask */
	}
	if (!env_pod_policy(c, env, &policy, e))
		return false;
	ok = jobspec_pod_allowed(s, policy, e);
	json_decref(policy);
	return ok;
}

bool
job_submit(struct db *c, json_t *body, json_t **out, struct err *e)
{
	return job_submit_by(c, body, NULL, NULL, out, e);
}

bool
job_submitted_by(struct db *c, const char *id, const char *actor, bool *mine, struct err *e)
{
	static const char sql[] = "SELECT count(*) FROM jobs WHERE id = $1::uuid"
	    " AND submitted_by = $2";
	const char *p[2] = { id, actor };
	long long n = 0;

	*mine = false;
	if (!db_uuid_ok(id))
		return err_set(e, 404, "queue.job_not_found", "job not found");
	if (!db_count(c, sql, 2, p, &n, e))
		return false;
	*mine = n > 0;
	return true;
}

bool
job_submit_by(struct db *c, json_t *body, const char *team, const char *actor, json_t **out,
	      struct err *e)
{
	/* the job, its first event and the job as GET answers it (JOB_JSON over the inserted
	 * row) in one round trip (the scheduler is woken after the commit: db_notify) */
	static const char sql[] = "WITH j AS (INSERT INTO jobs (id, name, environment, queue_id,"
	    " kind, priority_class, priority, spec, submitted_by) VALUES ($1, $2, $3, $4::uuid, $5,"
	    " $6, $7::int, $8::jsonb, nullif($9, '')) RETURNING *),"
	    " ev AS (INSERT INTO job_events (job_id, type, from_state, to_state, attempt, message)"
	    " SELECT id, 'submitted', NULL, 'pending', attempt, 'job submitted' FROM j)"
	    " SELECT " JOB_JSON " FROM j JOIN queues q ON q.id = j.queue_id"
	    " LEFT JOIN clusters k ON k.id = j.cluster_id LEFT JOIN clouds c ON c.id = k.cloud_id";
	PGresult *r = NULL;
	struct job_spec s;
	struct queue_submit qs = { 0 };
	json_t *spec_in = NULL, *queue, *canon = NULL;
	const char *env = NULL, *pcname, *budget_team;
	char id[37], prio[24], *spec_s = NULL;
	uuid_t u;
	bool ok = false;

	memset(&s, 0, sizeof(s));
	if (!jsonx_str(body, "environment", "", true, &env, e))
		return false;
	spec_in = json_deep_copy(body);
	json_object_del(spec_in, "environment");
	if (!jobspec_from_json(spec_in, &s, e))
		goto cleanup;
	/* the queue, the priority class and the catalog's generation in one round trip */
	if (!queue_for_submit(c, env, s.queue, s.priority_class, &qs, e) ||
	    !pod_policy_ok(c, env, &s, e))
		goto cleanup;
	queue = qs.queue;
	if (team != NULL && (json_string_value(json_object_get(queue, "team")) == NULL ||
	    strcmp(team, json_string_value(json_object_get(queue, "team"))) != 0)) {
		err_field(e, 404, "queue.not_found", "/queue", "queue %.64s not found in "
		    "environment %.64s", s.queue, env);
		goto cleanup;
	}
	pcname = s.priority_class ? s.priority_class :
	    json_string_value(json_object_get(queue, "default_priority_class"));
	if (pcname != NULL && qs.pc == NULL) {
		err_field(e, 404, "pc.not_found", "/priority_class",
		    "priority class %.64s not found", pcname);
		goto cleanup;
	}
	if (!admissible(c, env, &s, qs.catalog_gen, e) ||
	    (s.topology == JOBSPEC_TOPO_HOST && !host_fits(c, env, &s, e)))
		goto cleanup;
	canon = jobspec_to_json(&s);
	/* a team budget counts the queue's team, else the job's labels.team */
	if ((budget_team = json_string_value(json_object_get(queue, "team"))) == NULL)
		budget_team = jsonx_at(canon, "labels", "team");
	if (qs.budgets && !budget_admit(c, env, s.queue, budget_team, e))
		goto cleanup;
	spec_s = json_dumps(canon, JSON_COMPACT | JSON_PRESERVE_ORDER);
	uuid_generate_random(u);
	uuid_unparse_lower(u, id);
	snprintf(prio, sizeof(prio), "%lld", qs.pc ? json_integer_value(json_object_get(qs.pc,
	    "value")) : 0LL);
	{
		const char *p[9] = { id, s.name, env,
		    json_string_value(json_object_get(queue, "id")), jobspec_kind_name(s.kind),
		    pcname ? pcname : "default", prio, spec_s, actor ? actor : "" };

		if (!db_exec(c, sql, 9, p, &r, e) ||
		    (qs.budgets && !budget_announce(c, id, env, s.queue, budget_team, e)) ||
		    !db_notify(c, "fleet_sched", env, e))
			goto cleanup;
	}
	if (PQntuples(r) != 1 || (*out = json_loads(PQgetvalue(r, 0, 0), 0, NULL)) == NULL) {
		err_set(e, 500, "db.bad_row", "cannot read the job");
		goto cleanup;
	}
	ok = true;
cleanup:
	PQclear(r);
	jobspec_cleanup(&s);
	json_decref(spec_in);
	queue_submit_cleanup(&qs);
	json_decref(canon);
	free(spec_s);
	return ok;
}

bool
job_list(struct db *c, int limit, const char *after, const struct job_filter *f,
	 json_t **out, struct err *e)
{
	static const char sql[] = "SELECT " JOB_JSON JOB_FROM
	    " WHERE ($1 = '' OR j.id > $1::uuid) AND ($3::text IS NULL OR j.state = $3)"
	    " AND ($4::text IS NULL OR q.name = $4 OR q.id::text = $4)"
	    " AND ($5::text IS NULL OR j.environment = $5) AND ($6::text IS NULL OR c.region = $6)"
	    " AND ($7::text IS NULL OR k.name = $7 OR k.id::text = $7)"
	    " AND ($8::text IS NULL OR q.team = $8)"
	    " AND ($9::text[] IS NULL OR j.environment = ANY($9::text[]))"
	    " ORDER BY j.id LIMIT $2";
	const char *p[6] = { f->state, f->queue, f->environment, f->region, f->cluster,
	    f->team };

	return db_list_page(c, sql, limit, after, DB_CURSOR_UUID, p, 6, f->envs, f->nenvs, out,
	    e);
}

bool
job_events(struct db *c, const char *id, int limit, const char *after, json_t **out,
	   struct err *e)
{
	static const char sql[] = "SELECT json_build_object('id', id::text, 'at', at, 'type', type,"
	    " 'from_state', from_state, 'to_state', to_state, 'attempt', attempt, 'message',"
	    " message, 'data', data)::text FROM job_events WHERE job_id = $1::uuid"
	    " AND ($2 = '' OR id > $2::bigint) ORDER BY id LIMIT $3";
	char lim[16];
	const char *p[3] = { id, after ? after : "", lim };

	if (!db_cursor_ok(after, true, e))
		return false;
	snprintf(lim, sizeof(lim), "%d", limit);
	return db_list_json(c, sql, 3, p, out, e);
}

/* A run starts: the placement it runs on, kept for cost_runs() (migration 0019). */
static const char sql_run[] = "INSERT INTO job_runs (job_id, attempt, event_id, placement,"
    " accel_per_node) SELECT j.id, j.attempt, (SELECT max(v.id) FROM job_events v"
    " WHERE v.job_id = j.id AND v.type = 'state' AND v.to_state = 'running'), j.placement,"
    " coalesce((SELECT cap.accel_per_node FROM capacity cap WHERE cap.cluster_id ="
    " j.cluster_id AND cap.pool = j.placement->>'pool' LIMIT 1), 0)"
    " FROM jobs j WHERE j.id = $1::uuid AND j.placement IS NOT NULL";

bool
job_transition(struct db *c, const char *id, const char *from, const char *to,
	       const char *reason, json_t *data, struct err *e)
{
	static const char sql[] = "UPDATE jobs j SET state = $3, reason = $4,"
	    " version = version + 1, updated_at = now(),"
	    " finished_at = CASE WHEN $3 IN " JOB_STATES_FINAL_SQL " THEN now()"
	    "  ELSE finished_at END,"
	    " started_at = CASE WHEN $3 = 'running' AND started_at IS NULL THEN now()"
	    "  ELSE started_at END"
	    " FROM (SELECT state AS old FROM jobs WHERE id = $1::uuid FOR UPDATE) o"
	    " WHERE j.id = $1::uuid AND j.state = ANY(string_to_array($2, ','))"
	    " RETURNING o.old, j.environment";
	const char *p[4] = { id, from, to, reason };
	char *ds = data ? json_dumps(data, JSON_COMPACT) : NULL;
	PGresult *r = NULL;
	bool ok = false;

	if (!db_exec(c, sql, 4, p, &r, e))
		goto cleanup;
	if (PQntuples(r) == 0) {
		err_set(e, 409, "job.state", "the job is not in state %s", from);
		goto cleanup;
	}
	{
		const char *old = PQgetvalue(r, 0, 0), *env = PQgetvalue(r, 0, 1);
		const char *ev[6] = { id, "state", old, to, reason ? reason : "", ds };

		/* the event's round trip goes with the caller's next statement or COMMIT:
		 * nobody reads its answer (a dispatch batch records each job with one round
		 * trip less) */
		if (!db_exec_later(c, sql_event, 6, ev, e) ||
		    (job_state_parse(to) == JOB_RUNNING && !db_exec(c, sql_run, 1, p, NULL, e)) ||
		    !db_notify(c, "fleet_sched", env, e))
			goto cleanup;
	}
	ok = true;
cleanup:
	free(ds);
	PQclear(r);
	return ok;
}

bool
job_event(struct db *c, const char *id, const char *type, const char *message, json_t *data,
	  struct err *e)
{
	char *ds = data ? json_dumps(data, JSON_COMPACT) : NULL;
	const char *p[6] = { id, type, NULL, NULL, message ? message : "", ds };
	bool ok = db_exec(c, sql_event, 6, p, NULL, e);

	free(ds);
	return ok;
}

bool
job_cancel(struct db *c, const char *id, const char *reason, json_t **out, struct err *e)
{
	static const char sql_req[] = "UPDATE jobs SET cancel_requested = true, version ="
	    " version + 1, updated_at = now(), next_try_at = now() WHERE id = $1::uuid";
	json_t *cur = NULL;
	const char *state;
	enum job_state s;
	bool ok = false;

	if (!job_get(c, id, true, &cur, e))
		return false;
	state = json_string_value(json_object_get(cur, "state"));
	s = job_state_parse(state);
	if (job_state_is_final(s)) {
		err_set(e, 409, "job.finished", "the job already ended (%s)", state);
		goto cleanup;
	}
	/* nothing of it runs on a cluster, or what runs is being deleted already */
	if (s == JOB_PENDING || s == JOB_ADMITTED || s == JOB_PREEMPTED) {
		if (!job_transition(c, id, state, "cancelled",
		    reason ? reason : "cancelled by user",
		    NULL, e))
			goto cleanup;
	} else {
		const char *p[1] = { id };

		if (!db_exec(c, sql_req, 1, p, NULL, e) ||
		    !job_event(c, id, "cancel_requested", reason ? reason : "cancelled by user",
		    NULL, e))
			goto cleanup;
	}
	ok = job_get(c, id, false, out, e);
cleanup:
	json_decref(cur);
	return ok;
}

bool
job_event_once(struct db *c, const char *job_id, int attempt, const char *type,
    const char *key, const char *message, json_t *data, struct err *e)
{
	static const char sql[] =
	    "INSERT INTO job_events (job_id, type, attempt, message, data)"
	    " SELECT j.id, $2, j.attempt, $3, $4::jsonb FROM jobs j"
	    " WHERE j.id = $1::uuid AND j.attempt = $5::int AND NOT EXISTS (SELECT 1 FROM"
	    " job_events v WHERE v.job_id = j.id AND v.attempt = j.attempt AND v.type = $2"
	    " AND v.data->>'key' = $6)";
	json_t *d = data ? json_deep_copy(data) : json_object();
	char at[16], *ds;
	bool ok;

	json_object_set_new(d, "key", json_string(key));
	ds = json_dumps(d, JSON_COMPACT);
	snprintf(at, sizeof(at), "%d", attempt);
	{
		const char *p[6] = { job_id, type, message ? message : "", ds, at, key };

		ok = db_exec(c, sql, 6, p, NULL, e);
	}
	free(ds);
	json_decref(d);
	return ok;
}
