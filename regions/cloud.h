/* cloud: rows of clouds — one environment in one region of one provider account — and their
 * locked IAM pair.  Creation and verification live in iam/registry.c. */
#ifndef FLEET_REGIONS_CLOUD_H
#define FLEET_REGIONS_CLOUD_H

#include <stdbool.h>

#include <jansson.h>

#include "core/db.h"
#include "core/err.h"

/* The SQL expression rendering one cloud row c (joined with iam_pairs p) as JSON text. */
#define CLOUD_JSON \
	"json_build_object('id', c.id, 'name', c.name, 'environment', c.environment," \
	" 'provider', c.provider, 'region', c.region, 'account', c.account, 'state', c.state," \
	" 'external_id', c.external_id, 'iam', json_build_object('required', c.required," \
	" 'control_plane_role', p.control_plane_role, 'cluster_role', p.cluster_role," \
	" 'locked', coalesce(p.locked, false), 'verified_at', p.verified_at," \
	" 'checked_at', c.iam_checked_at, 'failed_checks', c.iam_failed_checks)," \
	" 'version', c.version, 'created_at', c.created_at, 'updated_at', c.updated_at)::text"

/* Reads a cloud; 404 "cloud.not_found" when absent.  for_update locks the row. */
bool	cloud_get(struct db *c, const char *id, bool for_update, json_t **out, struct err *e);
/* Filters may be NULL.  envs: the caller's environments (NULL = all). */
bool	cloud_list(struct db *c, int limit, const char *after, const char *environment,
	    const char *provider, const char *region, const char *const *envs, int nenvs,
	    json_t **out, struct err *e);
/* 409 "cloud.in_use" when it has clusters or jobs. */
bool	cloud_delete(struct db *c, const char *id, struct err *e);

#endif
