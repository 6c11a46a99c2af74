/* member: a member cluster as the workers call it — dispatch, status, cron, sweep, moves
 * and spec updates each load one, call its Kubernetes API, and free it. */
#ifndef FLEET_QUEUE_MEMBER_H
#define FLEET_QUEUE_MEMBER_H

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

#include "core/db.h"
#include "core/err.h"
#include "providers/kuberay.h"
#include "providers/provider.h"

/* A member cluster as the workers call it (heap, member_free). */
struct member {
	char			id[40];
	char			name[64];
	char			provider[16];
	char			batch_scheduler[16];
	bool			kueue_elastic;	/* cluster_kueue_elastic of its row */
	char			kueue_cluster_queue[64];
	char			kueue_lq_prefix[32];
	char			rack_label[64];		/* the cluster's own rack key (its label
						 * fleet.io/rack-key), "" = the provider's */
	char			block_label[64];	/* fleet.io/block-key, likewise */
	int			stockout_timeout_s;
	json_t			*dashboard_ingress;	/* its environment's (issue 25), or NULL */
	struct kuberay_ingress	ingress;	/* points into dashboard_ingress */
	char			*api_server;
	char			*ca_pem;
	char			*token;
	struct prov_cluster	pc;	/* points into this struct */
};

/* Loads cluster id with its decrypted token; 404 "cluster.not_found". */
bool	member_load(struct db *c, const char *cluster_id, struct member **out, struct err *e);
void	member_free(struct member *t);

/* Every item of a (paged) list at path with query (may be NULL); *items is a new array.
 * 502 kube.bad_answer on garbage, kube_status_err mapping on non-200. */
bool	member_list(const struct prov_cluster *k, const char *path, const char *query,
	    json_t **items, struct err *e);
/* The same, and rv gets the list's metadata.resourceVersion (where a watch resumes). */
bool	member_list_rv(const struct prov_cluster *k, const char *path, const char *query,
	    json_t **items, char *rv, size_t rvn, struct err *e);
/* Percent-encodes s for a query string into out; false when it does not fit. */
bool	member_query_escape(const char *s, char *out, size_t n);

#endif
