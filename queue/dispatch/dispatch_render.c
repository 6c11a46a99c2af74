/* dispatch_render: a claimed job's KubeRay manifest and checkpoint-signal objects for its
 * placement on a member cluster, and their removal once an attempt is gone. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/db.h"
#include "core/config.h"
#include "core/log.h"
#include "providers/jobspec.h"
#include "providers/kube.h"
#include "providers/kuberay.h"
#include "regions/catalog.h"
#include "queue/dispatch/dispatch.h"
#include "queue/jobs/rayauth.h"

void
dispatch_job_free(struct dispatch_job *j)
{
	if (j == NULL)
		return;
	json_decref(j->spec);
	json_decref(j->placement);
	json_decref(j->history);
	rayauth_free(j->ray_token);
	free(j);
}

static const char *
pstr(json_t *o, const char *k)
{
	const char *s = json_string_value(json_object_get(o, k));

	return s != NULL && s[0] != '\0' ? s : NULL;
}

/* The pool of worker groups without accelerators when it differs from the main pool. */
static const char *
cpu_pool_of(const struct job_spec *s, json_t *placement, const char *main)
{
	json_t *a;
	size_t i;

	json_array_foreach(json_object_get(placement, "allocs"), i, a) {
		json_int_t g = json_integer_value(json_object_get(a, "group"));
		const char *pool = pstr(a, "pool");

		if (g < 1 || (size_t)g > s->ngroups || pool == NULL)
			continue;
		if (s->groups[g - 1].accel_flavor == NULL && (main == NULL ||
		    strcmp(pool, main) != 0))
			return pool;
	}
	return NULL;
}

/* The renderer's input for j on t; s (parsed here) and tpu back it.  On failure fills e;
 * the caller releases s with jobspec_cleanup either way. */
static bool
fill_input(const struct dispatch_job *j, const struct member *t, struct kuberay_input *in,
    struct job_spec *s, char *tpu, size_t tn, char *lq, size_t lqn, struct err *e)
{
	struct kuberay_placement *p = &in->placement;
	json_t *pl = j->placement;
	const char *prov = pstr(pl, "provider") ? pstr(pl, "provider") : t->provider;

	memset(in, 0, sizeof(*in));
	memset(s, 0, sizeof(*s));
	if (!jobspec_from_json(j->spec, s, e))
		return false;
	if (!kuberay_provider_from_name(prov, &p->provider))
		return err_set(e, 422, "kuberay.bad_placement", "unknown provider %.16s", prov);
	if (!kuberay_scheduler_from_name(t->batch_scheduler, &in->batch.kind))
		in->batch.kind = KUBERAY_SCHED_NONE;
	if (in->batch.kind == KUBERAY_SCHED_KUEUE) {
		/* the LocalQueue fleetd ensures for the job's queue (dispatch_kueue_apply) */
		in->batch.kueue_elastic = t->kueue_elastic;
		snprintf(lq, lqn, "%s%s", t->kueue_lq_prefix, j->queue);
		in->batch.queue = lq;
	}
	in->spec = s;
	in->job_id = j->id;
	in->attempt = j->attempt;
	in->environment = j->environment;
	in->queue = j->queue;
	in->operator_ns = cfg.kuberay_namespace;
	if (t->dashboard_ingress != NULL && t->ingress.host != NULL)
		in->ingress = &t->ingress;
	p->cluster = t->name;
	p->pool = pstr(pl, "pool");
	p->head_pool = pstr(pl, "head_pool");
	p->cpu_pool = cpu_pool_of(s, pl, p->pool);
	p->machine_type = pstr(pl, "machine_type");
	p->spot = json_is_true(json_object_get(pl, "spot"));
	/* issue 27: a flex_start pool (GKE queued provisioning) gets a ProvisioningRequest */
	p->flex_start = pstr(pl, "capacity_type") != NULL &&
	    strcmp(pstr(pl, "capacity_type"), "flex_start") == 0;
	if (s->topology == JOBSPEC_TOPO_RACK)
		p->rack_id = pstr(pl, "rack");
	if (s->topology == JOBSPEC_TOPO_HOST)
		p->host = pstr(pl, "host");
	/* the topology keys the cluster declared (its labels fleet.io/rack-key and
	 * fleet.io/block-key), else the provider's */
	p->rack_label = t->rack_label[0] != '\0' ? t->rack_label : NULL;
	p->block_label = t->block_label[0] != '\0' ? t->block_label : NULL;
	if (s->topology == JOBSPEC_TOPO_PACK) {
		json_t *r = json_object_get(pl, "racks");

		for (size_t i = 0; i < json_array_size(r) && i < KUBERAY_MAX_RACKS; i++)
			p->racks[p->nracks++] = json_string_value(json_array_get(r, i));
		p->block = pstr(pl, "block");
	}
	if (s->topology == JOBSPEC_TOPO_SLICE && pstr(pl, "flavor") != NULL) {
		const char *f = pstr(pl, "flavor"), *label = catalog_tpu_accelerator(f);
		size_t n = strlen(f);

		/* the catalog's label (tpu-v5-lite-podslice, tpu7x, ...); a flavor with no GKE
		 * machine type naming one falls back to "<flavor>-slice" */
		if (label != NULL)
			snprintf(tpu, tn, "%s", label);
		else
			snprintf(tpu, tn, "%s%s", f, n > 6 && strcmp(f + n - 6, "-slice") == 0 ?
			    "" : "-slice");
		p->tpu_accelerator = tpu;
		/* issue 26: partitions carved out of GKE dynamic-slicing sub-blocks */
		for (size_t i = 0; i < json_array_size(json_object_get(pl, "tpu_partitions")) &&
		    p->ntpu_partitions < KUBERAY_MAX_RACKS; i++) {
			const char *id = json_string_value(json_array_get(json_object_get(pl,
			    "tpu_partitions"), i));

			if (id != NULL && id[0] != '\0')
				p->tpu_partitions[p->ntpu_partitions++] = id;
		}
	}
	return true;
}

/* The scheduler's allocations as the renderer's pins (nodes borrowed from placement);
 * NULL when there are none.  Caller frees. */
static struct kuberay_pin *
pins_of(json_t *placement, size_t *n)
{
	json_t *allocs = json_object_get(placement, "allocs"), *a;
	struct kuberay_pin *pins;
	size_t i;

	*n = 0;
	if (json_array_size(allocs) == 0)
		return NULL;
	pins = calloc(json_array_size(allocs), sizeof(*pins));
	if (pins == NULL)
		return NULL;
	json_array_foreach(allocs, i, a) {
		pins[*n].group = (int)json_integer_value(json_object_get(a, "group"));
		pins[*n].node = json_is_true(json_object_get(a, "grown")) ? NULL : pstr(a, "node");
		(*n)++;
	}
	return pins;
}

/* The environment's History Server setting (migration 0023; *out NULL when it names none),
 * for the renders whose job was not claimed with it (moves, updates, cron runs; a dispatch
 * claims it with the job).  Its own connection, no transaction: renders happen with none
 * open.  A process without a database pool (an offline render, a unit test) has none.  On failure fills e
 * (503: the dispatch tries again; a manifest without the collector would be wrong). */
static bool
history_of(const char *environment, json_t **out, struct err *e)
{
	static const char sql[] = "SELECT history_server::text FROM environments"
	    " WHERE name = $1 AND history_server IS NOT NULL";
	const char *p[1] = { environment };
	struct db *c = NULL;
	PGresult *r = NULL;
	bool ok = false;
	int in_use, idle, size;

	*out = NULL;
	db_pool_stats(&in_use, &idle, &size);
	if (size == 0)
		return true;
	if ((c = db_acquire(5000, e)) == NULL || !db_exec(c, sql, 1, p, &r, e))
		goto cleanup;
	if (PQntuples(r) == 1)
		*out = json_loads(PQgetvalue(r, 0, 0), 0, NULL);
	ok = true;
cleanup:
	PQclear(r);
	db_release(c);
	if (!ok && e->status != 503)
		err_set(e, 503, "dispatch.history_unreadable", "cannot read the environment's "
		    "history server setting");
	return ok;
}

json_t *
dispatch_render(const struct dispatch_job *j, const struct member *t, struct err *e)
{
	struct kuberay_input in;
	struct kuberay_pin *pins = NULL;
	struct kuberay_history hist;
	struct job_spec s;
	json_t *out = NULL, *hs = NULL;
	char tpu[64], lq[128];

	if (j->history_known)
		hs = json_incref(j->history);
	if (fill_input(j, t, &in, &s, tpu, sizeof(tpu), lq, sizeof(lq), e) &&
	    (j->history_known || history_of(j->environment, &hs, e))) {
		pins = pins_of(j->placement, &in.placement.npins);
		in.placement.pins = pins;
		if (hs != NULL && kuberay_history_from_json(hs, &hist))
			in.history = &hist;
		out = kuberay_render(&in, e);
	}
	jobspec_cleanup(&s);
	free(pins);
	json_decref(hs);
	return out;
}

bool
dispatch_render_job(const struct dispatch_job *j, const struct member *t, json_t **manifest,
    json_t **signals, json_t **warning, struct err *e)
{
	struct kuberay_input in;
	struct kuberay_pin *pins = NULL;
	struct kuberay_history hist;
	struct job_spec s;
	json_t *hs = NULL;
	char tpu[64], lq[128], msg[512], *token = NULL;
	bool ok = false;

	*manifest = *signals = *warning = NULL;
	if (j->history_known)
		hs = json_incref(j->history);
	if (!fill_input(j, t, &in, &s, tpu, sizeof(tpu), lq, sizeof(lq), e) ||
	    (!j->history_known && !history_of(j->environment, &hs, e)))
		goto cleanup;
	/* dispatch_render's input */
	pins = pins_of(j->placement, &in.placement.npins);
	in.placement.pins = pins;
	if (hs != NULL && kuberay_history_from_json(hs, &hist))
		in.history = &hist;
	if ((*manifest = kuberay_render(&in, e)) == NULL)
		goto cleanup;
	/* dispatch_signal_render's: the same without pins and history */
	in.placement.pins = NULL;
	in.placement.npins = 0;
	in.history = NULL;
	if (kuberay_auth_on(&in)) {
		if (j->ray_token != NULL)
			in.auth_token = j->ray_token;
		else if (!rayauth_ensure(j->id, &token, e))
			goto cleanup;
		else
			in.auth_token = token;
	}
	if ((*signals = kuberay_signal_objects(&in, NULL, e)) == NULL)
		goto cleanup;
	if (kuberay_image_warning(&s, msg, sizeof(msg)))
		*warning = json_pack("{s:s, s:s?}", "message", msg, "image", s.image);
	ok = true;
cleanup:
	if (!ok) {	/* *manifest stays when only the signal objects failed */
		json_decref(*signals);
		*signals = NULL;
	}
	rayauth_free(token);
	jobspec_cleanup(&s);
	free(pins);
	json_decref(hs);
	return ok;
}

/* A job of the given fields for the renders outside a dispatch (moves, updates, cron runs):
 * spec and placement borrowed, the History Server setting read by the render. */
static void
job_for(struct dispatch_job *dj, const struct member *t, const char *id,
    const char *environment, const char *queue, int attempt, json_t *spec, json_t *placement)
{
	memset(dj, 0, sizeof(*dj));
	snprintf(dj->id, sizeof(dj->id), "%s", id);
	snprintf(dj->cluster_id, sizeof(dj->cluster_id), "%s", t->id);
	snprintf(dj->environment, sizeof(dj->environment), "%s", environment);
	snprintf(dj->queue, sizeof(dj->queue), "%s", queue);
	dj->attempt = attempt;
	dj->spec = spec;
	dj->placement = placement;
}

json_t *
dispatch_render_for(const struct member *t, const char *id, const char *environment,
    const char *queue, int attempt, json_t *spec, json_t *placement, struct err *e)
{
	struct dispatch_job dj;

	job_for(&dj, t, id, environment, queue, attempt, spec, placement);
	return dispatch_render(&dj, t, e);
}

bool
dispatch_signal_apply_for(const struct member *t, const char *id, const char *environment,
    const char *queue, int attempt, json_t *spec, json_t *placement, struct err *e)
{
	struct dispatch_job dj;

	job_for(&dj, t, id, environment, queue, attempt, spec, placement);
	return dispatch_signal_apply(&dj, t, NULL, false, e);
}

json_t *
dispatch_signal_render(const struct dispatch_job *j, const struct member *t,
    const struct kuberay_signal *sig, bool configmap_only, struct err *e)
{
	struct kuberay_input in;
	struct job_spec s;
	json_t *out = NULL;
	char tpu[64], lq[128], *token = NULL;

	if (!fill_input(j, t, &in, &s, tpu, sizeof(tpu), lq, sizeof(lq), e))
		goto cleanup;
	if (configmap_only) {
		out = kuberay_signal_configmap(&in, sig, e);
		goto cleanup;
	}
	/* issue 25: the Secret the manifest's authOptions names holds the job's token (one
	 * short transaction of its own: no transaction is open here, nor across the apply) */
	if (kuberay_auth_on(&in)) {
		if (j->ray_token != NULL)	/* read with its batch's */
			in.auth_token = j->ray_token;
		else if (!rayauth_ensure(j->id, &token, e))
			goto cleanup;
		else
			in.auth_token = token;
	}
	out = kuberay_signal_objects(&in, sig, e);
cleanup:
	rayauth_free(token);
	jobspec_cleanup(&s);
	return out;
}

bool
dispatch_signal_apply(const struct dispatch_job *j, const struct member *t,
    const struct kuberay_signal *sig, bool configmap_only, struct err *e)
{
	json_t *objs = dispatch_signal_render(j, t, sig, configmap_only, e);
	bool ok = objs != NULL;

	if (objs != NULL && json_is_object(objs))
		objs = json_pack("[o]", objs);
	/* ServiceAccount, ConfigMap, Role and RoleBinding name each other but need no order:
	 * applied at once, one round trip instead of four */
	ok = ok && kube_apply_all(&t->pc, objs, e);
	json_decref(objs);
	return ok;
}

const char *
dispatch_kueue_reason(const struct dispatch_job *j, const struct member *t,
    bool *gated)
{
	struct kuberay_input in;
	struct job_spec s;
	struct err e = { 0 };
	const char *why = NULL;
	char tpu[64], lq[128];

	*gated = false;
	if (fill_input(j, t, &in, &s, tpu, sizeof(tpu), lq, sizeof(lq), &e))
		*gated = kuberay_kueue_gated(&in, &why);
	jobspec_cleanup(&s);
	return why;
}

bool
dispatch_signal_delete(const struct prov_cluster *pc, const char *ns, const char *job_id,
    int attempt, struct err *e)
{
	static const char *const kinds[][2] = {
		{ "rbac.authorization.k8s.io/v1", "RoleBinding" },
		{ "rbac.authorization.k8s.io/v1", "Role" },
		{ "v1", "ServiceAccount" },
		{ "v1", "ConfigMap" },
		{ "v1", "Secret" },	/* issue 25: the token, and the NetworkPolicy */
		{ "networking.k8s.io/v1", "NetworkPolicy" },
	};
	char name[64];

	if (ns == NULL || job_id == NULL || !kuberay_signal_name(job_id, attempt, name,
	    sizeof(name)))
		return true;	/* no such objects were ever named */
	bool existed = false;

	for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++)
		if (!kube_delete_object(pc, kinds[i][0], kinds[i][1], ns, name, NULL, e))
			return false;
	/* issue 27: a flex-start attempt's ProvisioningRequest, then its PodTemplates "-w<i>"
	 * (kuberay_provisioning_objects) until the first absent one */
	if (!kube_delete_object(pc, "autoscaling.x-k8s.io/v1", "ProvisioningRequest", ns, name,
	    &existed, e))
		return false;
	for (int i = 0; existed && i < JOBSPEC_MAX_GROUPS; i++) {
		char tn[80];

		snprintf(tn, sizeof(tn), "%s-w%d", name, i);
		if (!kube_delete_object(pc, "v1", "PodTemplate", ns, tn, &existed, e))
			return false;
	}
	/* issue 26: the attempt's Slices (cluster-scoped), "-0" on until the first absent one;
	 * GKE members only.  A member that serves no Slice kind answers 404: nothing existed */
	existed = pc->provider != NULL && strcmp(pc->provider, "gke") == 0;
	for (int i = 0; existed && i < KUBERAY_MAX_RACKS; i++) {
		char sn[64];

		if (!kuberay_tpu_slice_name(job_id, attempt, i, sn, sizeof(sn)))
			break;
		if (!kube_delete_object(pc, "accelerator.gke.io/v1beta1", "Slice", NULL, sn,
		    &existed, e))
			return false;
	}
	return true;
}

void
dispatch_signal_delete_for(const struct prov_cluster *pc, const json_t *manifest,
    const char *who)
{
	json_t *md = json_object_get(manifest, "metadata"), *l = json_object_get(md, "labels");
	const char *id = json_string_value(json_object_get(l, "fleet.io/job-id"));
	const char *at = json_string_value(json_object_get(l, "fleet.io/attempt"));
	struct err e = { 0 };

	if (id == NULL || at == NULL)
		return;
	if (!dispatch_signal_delete(pc, json_string_value(json_object_get(md, "namespace")), id,
	    atoi(at), &e))
		log_warn(NULL, who, "cannot delete an attempt's signal objects", "{s:s, s:s, s:s}",
		    "job", id, "attempt", at, "error", e.msg);
}
