/* cluster: member Kubernetes clusters under an active cloud — API server, CA, credentials
 * sealed with AES-256-GCM under FLEETD_MASTER_KEY (never returned, never logged). */
#ifndef FLEET_REGIONS_CLUSTER_H
#define FLEET_REGIONS_CLUSTER_H

#include <stdbool.h>
#include <stdint.h>

#include <jansson.h>

#include "core/db.h"
#include "core/err.h"

/* SQL rendering of a cluster row k joined with its cloud c. */
#define CLUSTER_JSON \
	"json_build_object('id', k.id, 'name', k.name, 'cloud_id', k.cloud_id," \
	" 'environment', c.environment, 'provider', c.provider, 'region', c.region," \
	" 'api_server', k.api_server, 'ca_cert', k.ca_cert, 'provider_cluster_id'," \
	" k.provider_cluster_id, 'labels', k.labels, 'batch_scheduler', k.batch_scheduler," \
	" 'kueue', k.kueue, 'batch_scheduler_probe', k.batch_probe," \
	" 'state', k.state, 'cordoned', k.cordoned, 'last_refresh_at', k.last_refresh_at," \
	" 'last_error', k.last_error, 'version', k.version, 'created_at', k.created_at," \
	" 'updated_at', k.updated_at)::text"

/* The validated body of POST /v1/clouds/{id}/clusters (borrowed strings). */
struct cluster_input {
	const char	*name;
	const char	*api_server;
	const char	*ca_cert;
	const char	*token;
	const char	*provider_cluster_id;
	json_t		*labels;
	const char	*batch_scheduler;	/* none|volcano|yunikorn|kai|kueue */
	/* kueue only (batch_scheduler "kueue"): body "kueue" {elastic_jobs, cluster_queue,
	 * local_queue_prefix}, defaults false, "fleetd", "" */
	bool		 kueue_elastic;	/* ElasticJobsViaWorkloadSlices is on: autoscaling Ray
					 * objects may carry the queue-name label */
	const char	*kueue_cluster_queue;	/* spec.clusterQueue of the LocalQueues fleetd
						 * ensures */
	const char	*kueue_lq_prefix;	/* LocalQueue name = prefix + fleetd queue name */
	json_t		*probe;		/* set by the handler: cluster_batch_probe's answer
					 * (owned by the caller), stored with the row */
};

/* The 32-byte master key from FLEETD_MASTER_KEY; 503 "config.no_master_key" when unset
 * or malformed. */
bool	cluster_master_key(uint8_t key[32], struct err *e);
/* text sealed with the master key and bound to id (AES-256-GCM with id as associated
 * data), and opened again: what every secret fleetd must use later is stored as (cluster
 * credentials, webhook secrets).  malloc'd; NULL + e on a missing key or a forged seal. */
char	*cluster_seal(const char *id, const char *text, struct err *e);
char	*cluster_open(const char *id, const char *sealed, struct err *e);
/* The parts of a provider cluster id (see cluster_provider_id_parse). */
struct provider_id {
	char	account[128];	/* gke project, aks subscription, aws account */
	char	location[128];	/* gke region or zone, aws region; "" for aks */
	char	group[128];	/* aks resource group */
	char	name[128];
};

bool	cluster_provider_id_parse(const char *provider, const char *id,
	    struct provider_id *out);
/* 400 "cluster.bad_provider_id" unless id parses and names a cluster of the cloud's own
 * project / subscription / account and (gke, hyperpod) region. */
bool	cluster_provider_id_bound(json_t *cloud, const char *id, struct err *e);
bool	cluster_parse(json_t *body, const char *provider, bool for_replace,
	    struct cluster_input *in, struct err *e);
/* Can fleetd reach the API server with this CA and token?  Network: outside transactions.
 * 422 "cluster.unreachable" with the reason otherwise. */
bool	cluster_probe(const char *api_server, const char *ca_pem, const char *token,
	    struct err *e);
bool	cluster_create(struct db *c, const char *cloud_id, const struct cluster_input *in,
	    json_t **out, struct err *e);
bool	cluster_get(struct db *c, const char *id, bool for_update, json_t **out,
	    struct err *e);
bool	cluster_list(struct db *c, int limit, const char *after, const char *environment,
	    const char *region, const char *provider, const char *cloud_id,
	    const char *const *envs, int nenvs, json_t **out, struct err *e);
/* PUT: labels, batch_scheduler, api_server, ca_cert, credentials replace; name immutable. */
bool	cluster_replace(struct db *c, const char *id, const struct cluster_input *in,
	    json_t **out, struct err *e);
/* What the member's batch scheduler really allows, read on the member (network: outside
 * transactions): for kueue, the kueue.x-k8s.io API group (discovery), the Kueue manager's
 * documented ConfigMap kueue-system/kueue-manager-config (featureGates
 * ElasticJobsViaWorkloadSlices, integrations.frameworks ray.io/rayjob and ray.io/raycluster)
 * and the ClusterQueue the LocalQueues will name.  A new object {checked_at, condition:
 * verified|mismatch|unverified, kueue_api, elastic_jobs (true|false|null = unreadable),
 * ray_integration, cluster_queue_exists, message}; NULL when the scheduler is not kueue. */
struct prov_cluster;
json_t	*cluster_batch_probe(const struct prov_cluster *k, const char *batch_scheduler,
	    bool elastic_jobs, const char *cluster_queue);
/* Stores a probe answer (not a change of the row: no version bump). */
bool	cluster_set_probe(struct db *c, const char *id, json_t *probe, struct err *e);
/* Whether autoscaling Ray objects may carry Kueue's queue-name label on this cluster: the
 * registration says elastic jobs and the last probe did not read them off. */
bool	cluster_kueue_elastic(json_t *kueue, json_t *probe);

/* 409 "cluster.in_use" while jobs are placed on it. */
bool	cluster_delete(struct db *c, const char *id, struct err *e);
bool	cluster_set_cordon(struct db *c, const char *id, bool cordoned, json_t **out,
	    struct err *e);
/* Decrypted bearer token of a cluster (malloc'd). */
char	*cluster_token(struct db *c, const char *id, struct err *e);
/* The bearer token of sealed credentials (crypto_open with key and the cluster id as the
 * associated data), malloc'd; NULL with e when they do not open or hold no token. */
char	*cluster_open_token(const uint8_t key[32], const char *sealed, const char *id,
	    struct err *e);

#endif
