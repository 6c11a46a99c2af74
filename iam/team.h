/* team: the teams that own queues — a name and the environments its queues may live in.
 * A token or an OIDC group may hold its role in one team (iam/token.c, iam/oidc.c). */
#ifndef FLEET_IAM_TEAM_H
#define FLEET_IAM_TEAM_H

#include <stdbool.h>

#include <jansson.h>

#include "core/db.h"
#include "core/err.h"

/* body {name, environments: [..] (existing, not "*"), description?}; 422 with a pointer to
 * an unknown environment, 409 team.exists. *out a new object. */
bool	team_create(struct db *c, json_t *body, json_t **out, struct err *e);
/* By name (FOR UPDATE when lock); 404 team.not_found. */
bool	team_get(struct db *c, const char *name, bool lock, json_t **out, struct err *e);
/* Teams named > after whose environments all lie in envs (NULL: every team); only that
 * team when only is not NULL. */
bool	team_list(struct db *c, int limit, const char *after, const char *only,
	    const char *const *envs, int nenvs, json_t **out, struct err *e);
/* 409 team.in_use while a queue or an unrevoked token names it. */
bool	team_delete(struct db *c, const char *name, struct err *e);
/* Whether team may own a queue of env: 422 queue.bad_team at /team when it is no team or
 * not one of env's. */
bool	team_check_queue(struct db *c, const char *team, const char *env, struct err *e);

#endif
