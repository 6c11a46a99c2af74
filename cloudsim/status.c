/* cloudsim status: the status fields KubeRay sets on RayCluster, RayJob, RayService and
 * RayCronJob, advanced on the simulated clock (durations from the fleet's "sim" block,
 * per object from the cloudsim.fleet.io/run-seconds and /outcome annotations). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cloudsim/cs.h"
#include "core/jsonx.h"

json_t *
cs_object_cluster_spec(struct cs_object *o)
{
	json_t *spec = json_object_get(o->live, "spec");

	if (strcmp(o->kind, "RayCluster") == 0)
		return spec;
	if (strcmp(o->kind, "RayJob") == 0)
		return json_object_get(spec, "rayClusterSpec");
	if (strcmp(o->kind, "RayService") == 0)
		return json_object_get(spec, "rayClusterConfig");
	return NULL;
}

static bool
suspended(struct cs_object *o)
{
	return json_is_true(json_object_get(json_object_get(o->live, "spec"), "suspend"));
}

/* What the KubeRay operator refuses before creating anything; NULL when fine. */
static const char *
operator_invalid(struct cs_object *o)
{
	size_t n = strlen(o->name);
	json_t *spec = json_object_get(o->live, "spec");

	if (strcmp(o->kind, "RayCluster") == 0 && n > 53)
		return "RayCluster name should be no more than 53 characters";
	if (strcmp(o->kind, "RayJob") == 0 && n > 47)
		return "RayJob name should be no more than 47 characters";
	if (strcmp(o->kind, "RayService") == 0 && n > 47)
		return "RayService name should be no more than 47 characters";
	if (strcmp(o->kind, "RayCronJob") == 0 && n > 36)
		return "RayCronJob name should be no more than 36 characters";
	if (strcmp(o->kind, "RayJob") == 0 && json_is_true(json_object_get(spec, "suspend")) &&
	    !json_is_true(json_object_get(spec, "shutdownAfterJobFinishes")))
		return "a RayJob with shutdownAfterJobFinishes set to false is not allowed to be "
		    "suspended";
	return NULL;
}

bool
cs_object_active(struct cs *cs, struct cs_object *o)
{
	(void)cs;
	if (o->deleted || operator_invalid(o) != NULL)
		return false;
	if (strcmp(o->kind, "RayCluster") == 0)
		return !suspended(o);
	if (strcmp(o->kind, "RayJob") == 0)
		return !suspended(o) && o->cluster_gone == 0;
	return strcmp(o->kind, "RayService") == 0;
}

static const char *
annotation(struct cs_object *o, const char *key)
{
	return json_string_value(json_object_get(jsonx_meta(o->live, "annotations"), key));
}

static json_t *
qty(long long v, bool cpu, bool mem)
{
	if (cpu)
		return v % 1000 ? json_sprintf("%lldm", v) : json_sprintf("%lld", v / 1000);
	if (mem)
		return v % (1LL << 30) ? json_sprintf("%lld", v) : json_sprintf("%lldGi", v >> 30);
	return json_sprintf("%lld", v);
}

/* RayCluster-style status from the pods owned by o; *ready when all are running. */
static json_t *
cluster_status(struct cs *cs, struct cs_cluster *cl, struct cs_object *o, bool *ready)
{
	json_t *spec = cs_object_cluster_spec(o), *g, *st;
	long long cpu = 0, mem = 0, gpu = 0, tpu = 0;
	int want = 0, minw = 0, maxw = 0, running = 0, total = 0;
	bool head_ready = false;
	const char *head = "";
	size_t i;

	json_array_foreach(json_object_get(spec, "workerGroupSpecs"), i, g) {
		json_t *h = json_object_get(g, "numOfHosts");
		long long hosts = json_is_integer(h) && json_integer_value(h) > 0 ?
		    json_integer_value(h) : 1;

		want += cs_group_want(g);
		minw += (int)(json_integer_value(json_object_get(g, "minReplicas")) * hosts);
		maxw += (int)(json_integer_value(json_object_get(g, "maxReplicas")) * hosts);
	}
	for (i = 0; i < cl->pods.n; i++) {
		struct cs_pod *p = cl->pods.v[i];

		if (strcmp(p->owner_uid, o->uid) != 0)
			continue;
		total++;
		cpu += p->cpu_m;
		mem += p->mem_b;
		gpu += p->gpu;
		tpu += p->tpu;
		if (p->head) {
			head = p->name;
			head_ready = p->running_at > 0;
		} else if (p->running_at > 0) {
			running++;
		}
	}
	*ready = head_ready && running >= want && total > 0;
	st = json_pack("{s:i, s:i, s:i, s:i, s:i, s:o, s:o, s:o, s:o, s:{s:s, s:s, s:s, s:s}, "
	    "s:I, s:[{s:s, s:s, s:s}, {s:s, s:s, s:s}]}",
	    "desiredWorkerReplicas", want, "minWorkerReplicas", minw, "maxWorkerReplicas", maxw,
	    "readyWorkerReplicas", running, "availableWorkerReplicas", running,
	    "desiredCPU", qty(cpu, true, false), "desiredMemory", qty(mem, false, true),
	    "desiredGPU", qty(gpu, false, false), "desiredTPU", qty(tpu, false, false),
	    "endpoints", "client", "10001", "dashboard", "8265", "gcs-server", "6379", "metrics",
	    "8080", "observedGeneration", (json_int_t)o->generation,
	    "conditions", "type", "HeadPodReady", "status", head_ready ? "True" : "False",
	    "reason", head_ready ? "HeadPodRunningAndReady" : "HeadPodNotFound",
	    "type", "RayClusterProvisioned", "status", *ready || o->ready_at > 0 ? "True" :
	    "False", "reason", *ready || o->ready_at > 0 ? "AllPodRunningAndReadyFirstTime" :
	    "RayClusterPodsProvisioning");
	if (*head) {
		json_object_set_new(st, "head", json_pack("{s:s, s:s, s:s}", "podName", head,
		    "podIP", "10.8.0.10", "serviceIP", "10.12.0.10"));
		json_object_set_new(json_object_get(st, "head"), "serviceName",
		    json_sprintf("%s-head-svc", o->cluster_name));
	}
	(void)cs;
	return st;
}

/* The kernel's OOM killer ends a running worker's container (its memory limit exceeded)
 * and the kubelet reports it as it reports any container's end: exit code 137 (SIGKILL),
 * reason OOMKilled — in lastState.terminated once it has restarted the container
 * (restartPolicy Always, the Pod default: restartCount + 1, state running again), or in
 * state.terminated with the pod Failed when the pod's restartPolicy is Never.  The kubelet
 * posts no Warning event of its own for it (the pod-level "OOMKilled" event cloudsim
 * used to post was a shortcut no member gives).  Shapes:
 * https://kubernetes.io/docs/tasks/configure-pod-container/assign-memory-resource/
 * ("Exceed a Container's memory limit": lastState.terminated, reason OOMKilled, exitCode
 * 137, the restart) and
 * https://kubernetes.io/docs/concepts/workloads/pods/pod-lifecycle/#container-states
 * Returns false when no worker of o runs (nothing to kill). */
static bool
oom_kill(struct cs *cs, struct cs_cluster *cl, struct cs_object *o, double now)
{
	size_t i;

	for (i = 0; i < cl->pods.n; i++) {
		struct cs_pod *p = cl->pods.v[i];
		const char *rp;

		if (strcmp(p->owner_uid, o->uid) != 0 || p->head || p->running_at <= 0)
			continue;
		rp = json_string_value(json_object_get(json_object_get(p->obj, "spec"),
		    "restartPolicy"));
		p->oom_at = now;
		p->oom_started = p->running_at;
		p->oom_final = rp != NULL && strcmp(rp, "Never") == 0;
		if (!p->oom_final) {
			p->restarts++;
			p->running_at = now;
			cs_container_started(cs, cl, p);
		}
		snprintf(p->rv, sizeof(p->rv), "%lld", ++cl->rv);
		return true;
	}
	return false;
}

/* Whether a worker of o was OOM-killed already. */
static bool
oom_done(struct cs_cluster *cl, struct cs_object *o)
{
	for (size_t i = 0; i < cl->pods.n; i++) {
		const struct cs_pod *p = cl->pods.v[i];

		if (strcmp(p->owner_uid, o->uid) == 0 && p->oom_at > 0)
			return true;
	}
	return false;
}

static void
job_status(struct cs *cs, struct cs_cluster *cl, struct cs_object *o, json_t *st, double now)
{
	json_t *spec = json_object_get(o->live, "spec");
	const char *rs = annotation(o, "cloudsim.fleet.io/run-seconds"),
	    *outcome = annotation(o, "cloudsim.fleet.io/outcome");
	double run = rs ? atof(rs) : cs->cfg.job_run_s;
	json_t *dl = json_object_get(spec, "activeDeadlineSeconds"),
	    *ttl = json_object_get(spec, "ttlSecondsAfterFinished");
	bool ready = false;
	json_t *cst = o->cluster_gone == 0 && !suspended(o) ?
	    cluster_status(cs, cl, o, &ready) : NULL;
	char ts[32];

	json_object_set_new(st, "rayClusterName", json_string(o->cluster_name));
	json_object_set_new(st, "jobId", json_string(o->job_id));
	cs_rfc3339(o->created, ts);
	json_object_set_new(st, "startTime", json_string(ts));
	if (o->job_end == 0 && suspended(o)) {
		o->ready_at = o->job_start = 0;
		json_object_set_new(st, "jobDeploymentStatus", json_string("Suspended"));
		json_decref(cst);
		return;
	}
	if (o->job_end == 0 && ready && o->job_start == 0)
		o->job_start = now;
	if (ready && o->ready_at == 0)
		o->ready_at = now;
	if (o->job_end == 0 && o->job_start > 0 && now >= o->job_start + run) {
		bool oom = outcome && strcmp(outcome, "oomkilled") == 0;

		/* the worker is OOM-killed first; the Ray job fails at the next tick, as its
		 * driver sees the worker die (the pod shows the kill before the RayJob fails) */
		if (!oom || oom_done(cl, o) || !oom_kill(cs, cl, o, now)) {
			o->job_end = now;
			o->spawned = outcome && (strcmp(outcome, "failed") == 0 || oom) ? 1 : 0;
		}
	}
	if (o->job_end == 0 && json_is_integer(dl) && json_integer_value(dl) > 0 &&
	    now >= o->created + (double)json_integer_value(dl)) {
		o->job_end = now;
		o->spawned = 2;
	}
	if (o->job_end > 0 && json_is_true(json_object_get(spec, "shutdownAfterJobFinishes")) &&
	    now >= o->job_end + (json_is_integer(ttl) ? (double)json_integer_value(ttl) : 0))
		o->cluster_gone = now;
	if (o->job_end > 0) {
		bool ok = o->spawned == 0;

		cs_rfc3339(o->job_end, ts);
		json_object_set_new(st, "endTime", json_string(ts));
		json_object_set_new(st, "jobDeploymentStatus", json_string(ok ? "Complete" :
		    "Failed"));
		json_object_set_new(st, "jobStatus", json_string(o->spawned == 2 ? "RUNNING" :
		    ok ? "SUCCEEDED" : "FAILED"));
		json_object_set_new(st, ok ? "succeeded" : "failed", json_integer(1));
		if (!ok)
			json_object_set_new(st, "reason", json_string(o->spawned == 2 ?
			    "DeadlineExceeded" : "AppFailed"));
		json_object_set_new(st, "message", json_string(ok ? "Job finished successfully." :
		    o->spawned == 2 ? "The RayJob has passed the activeDeadlineSeconds." :
		    "Job entrypoint command failed with exit code 1"));
	} else if (o->job_start > 0) {
		json_object_set_new(st, "jobDeploymentStatus", json_string("Running"));
		json_object_set_new(st, "jobStatus", json_string("RUNNING"));
	} else {
		json_object_set_new(st, "jobDeploymentStatus", json_string("Initializing"));
	}
	if (o->job_start > 0)
		json_object_set_new(st, "dashboardURL", json_sprintf("%s-head-svc.%s.svc:8265",
		    o->cluster_name, o->ns));
	if (cst != NULL)
		json_object_set_new(st, "rayClusterStatus", cst);
}

static double
cron_interval(const char *s)
{
	int n = 0;
	char u = 's';

	if (s == NULL)
		return 3600;
	if (sscanf(s, "@every %d%c", &n, &u) >= 1 && n > 0)
		return n * (u == 'h' ? 3600.0 : u == 'm' ? 60.0 : 1.0);
	if (sscanf(s, "*/%d ", &n) == 1 && n > 0)
		return n * 60.0;
	if (strncmp(s, "* ", 2) == 0)
		return 60;
	if (strcmp(s, "@daily") == 0)
		return 86400;
	return 3600;
}

static void
cron_status(struct cs *cs, struct cs_cluster *cl, struct cs_object *o, json_t *st, double now)
{
	json_t *spec = json_object_get(o->live, "spec");
	double iv = cron_interval(json_string_value(json_object_get(spec, "schedule")));
	char ts[32];

	if (o->next_cron == 0)
		o->next_cron = o->created + iv;
	if (now >= o->next_cron && !json_is_true(json_object_get(spec, "suspend"))) {
		o->next_cron = now + iv;
		o->job_start = now;
		if (cs_object_spawn(cs, cl, o) != NULL)
			o->spawned++;
	}
	if (o->job_start > 0) {
		cs_rfc3339(o->job_start, ts);
		json_object_set_new(st, "lastScheduleTime", json_string(ts));
	}
}

/* KubeRay starts a zero-downtime upgrade when a RayService's rayClusterConfig changes
 * other than in replicas: a pending cluster with a new name. */
void
cs_status_spec_change(struct cs *cs, struct cs_object *o, json_t *next_spec)
{
	json_t *a, *b;
	char sfx[8];
	size_t i;
	json_t *g;

	if (strcmp(o->kind, "RayService") != 0)
		return;
	a = json_deep_copy(json_object_get(json_object_get(o->live, "spec"), "rayClusterConfig"));
	b = json_deep_copy(json_object_get(next_spec, "rayClusterConfig"));
	json_array_foreach(json_object_get(a, "workerGroupSpecs"), i, g)
		json_object_del(g, "replicas");
	json_array_foreach(json_object_get(b, "workerGroupSpecs"), i, g)
		json_object_del(g, "replicas");
	if (!json_equal(a, b)) {
		cs_rand_suffix(sfx, sizeof(sfx));
		snprintf(o->upgrade_cluster, sizeof(o->upgrade_cluster), "%.100s-raycluster-%s",
		    o->name, sfx);
		o->upgrade_at = cs_now(cs) + CS_UPGRADE_S;
	}
	json_decref(a);
	json_decref(b);
}

/* KubeRay's serve Service of a RayService, <name>-serve-svc (port 8000, named "serve"),
 * created once the Ray cluster serves and kept across upgrades: the stable endpoint clients
 * use. It goes with the RayService (cs_object_deleted). */
static void
serve_service(struct cs *cs, struct cs_cluster *cl, const struct cs_object *o)
{
	char name[192];

	snprintf(name, sizeof(name), "%s-serve-svc", o->name);
	if (cs_plain_get(cl, "services", o->ns, name) != NULL)
		return;
	cs_plain_put(cs, cl, "services", o->ns, name, json_pack("{s:{s:{s:s, s:s}, s:[{s:s,"
	    " s:s, s:s, s:s, s:b}]}, s:{s:s, s:{s:s}, s:[{s:s, s:i, s:i, s:s}]}}",
	    "metadata", "labels", "ray.io/serve", o->name, "ray.io/node-type", "serve",
	    "ownerReferences", "apiVersion", "ray.io/v1", "kind", "RayService", "name", o->name,
	    "uid", o->uid, "controller", 1, "spec", "type", "ClusterIP", "selector",
	    "ray.io/serve", "true", "ports", "name", "serve", "port", 8000, "targetPort", 8000,
	    "protocol", "TCP"));
}

void
cs_status_update(struct cs *cs, struct cs_cluster *cl, struct cs_object *o)
{
	double now = cs_now(cs);
	json_t *st = json_object(), *old = json_object_get(o->live, "status"), *cmp;
	bool ready = false;
	const char *invalid = NULL;
	char ts[32];

	if (o->deleted)
		goto done;
	if (operator_invalid(o) != NULL) {
		const char *why = operator_invalid(o);

		json_object_set_new(st, "observedGeneration", json_integer(o->generation));
		if (strcmp(o->kind, "RayJob") == 0) {
			json_object_set_new(st, "jobDeploymentStatus",
			    json_string("ValidationFailed"));
			json_object_set_new(st, "reason", json_string("ValidationFailed"));
			json_object_set_new(st, "message", json_string(why));
		} else if (strcmp(o->kind, "RayCluster") == 0) {
			json_object_set_new(st, "state", json_string("failed"));
			json_object_set_new(st, "reason", json_string(why));
		} else if (strcmp(o->kind, "RayService") == 0) {
			json_object_set_new(st, "conditions", json_pack("[{s:s, s:s, s:s, s:s}]",
			    "type", "Ready", "status", "False", "reason", "ValidationFailed",
			    "message", why));
		}
		invalid = why;
	} else if (strcmp(o->kind, "RayCluster") == 0) {
		if (suspended(o)) {
			json_object_set_new(st, "state", json_string("suspended"));
		} else {
			json_decref(st);
			st = cluster_status(cs, cl, o, &ready);
			if (ready && o->ready_at == 0)
				o->ready_at = now;
			if (ready)
				json_object_set_new(st, "state", json_string("ready"));
		}
	} else if (strcmp(o->kind, "RayJob") == 0) {
		json_object_set_new(st, "observedGeneration", json_integer(o->generation));
		job_status(cs, cl, o, st, now);
	} else if (strcmp(o->kind, "RayService") == 0) {
		json_t *cst;

		if (o->upgrade_cluster[0] != '\0' && now >= o->upgrade_at &&
		    !cs_upgrade_held(cs, cl)) {
			snprintf(o->cluster_name, sizeof(o->cluster_name), "%s", o->upgrade_cluster);
			o->upgrade_cluster[0] = '\0';
			cs_object_retemplate(cl, o);
		}
		cst = cluster_status(cs, cl, o, &ready);
		if (ready)
			serve_service(cs, cl, o);
		json_object_set_new(st, "observedGeneration", json_integer(o->generation));
		json_object_set_new(st, "serviceStatus", json_string(ready ? "Running" : ""));
		json_object_set_new(st, "numServeEndpoints", json_integer(ready ?
		    json_integer_value(json_object_get(cst, "readyWorkerReplicas")) + 1 : 0));
		json_object_set_new(st, "conditions", json_pack("[{s:s, s:s, s:s}]", "type",
		    "Ready", "status", ready ? "True" : "False", "reason", ready ?
		    "NonZeroServeEndpoints" : "Initializing"));
		json_object_set_new(st, "activeServiceStatus", json_pack("{s:s, s:o, s:{s:{s:s}}}",
		    "rayClusterName", o->cluster_name, "rayClusterStatus", cst,
		    "applicationStatuses", "app", "status", ready ? "RUNNING" : "DEPLOYING"));
		json_array_append_new(json_object_get(st, "conditions"), json_pack("{s:s, s:s, s:s}",
		    "type", "UpgradeInProgress", "status", o->upgrade_cluster[0] ? "True" : "False",
		    "reason", o->upgrade_cluster[0] ? "BothActivePendingClustersExist" :
		    "NoPendingCluster"));
		if (o->upgrade_cluster[0] != '\0')
			json_object_set_new(st, "pendingServiceStatus", json_pack("{s:s}",
			    "rayClusterName", o->upgrade_cluster));
	} else {
		cron_status(cs, cl, o, st, now);
	}
	cmp = json_deep_copy(old);
	if (json_is_object(cmp))
		json_object_del(cmp, "lastUpdateTime");
	if (!json_equal(cmp, st)) {
		if (invalid != NULL)
			cs_event(cs, cl, o->ns, o->kind, o->name, o->uid, "Warning",
			    strcmp(o->kind, "RayJob") == 0 ? "InvalidRayJobSpec" :
			    "InvalidRayClusterSpec", invalid);
		cs_rfc3339(now, ts);
		json_object_set_new(st, "lastUpdateTime", json_string(ts));
		json_object_set(o->live, "status", st);
		o->rv = ++cl->rv;
		json_object_set_new(json_object_get(o->live, "metadata"), "resourceVersion",
		    json_sprintf("%lld", o->rv));
	}
	json_decref(cmp);
done:
	json_decref(st);
}
