/* audit: one row per mutation, written in the same transaction as the change. */
#ifndef FLEET_CORE_AUDIT_H
#define FLEET_CORE_AUDIT_H

#include <stdbool.h>

#include <jansson.h>

#include "core/db.h"
#include "core/err.h"

struct actor {
	char	id[40];		/* token id (uuid) or "" for the bootstrap command */
	char	name[128];	/* token name, or an OIDC user's email (else sub) */
	char	team[64];	/* the OIDC group map's team, "" when none */
	char	request_id[64];
};

/* before/after are borrowed; secrets must already be redacted by the caller
 * (audit_redact helps). */
bool	audit_write(struct db *c, const struct actor *who, const char *action,
	    const char *rtype, const char *rid, const char *env, json_t *before,
	    json_t *after, struct err *e);
/* What GET /v1/audit filters on (NULL: no filter). */
struct audit_filter {
	const char		*resource_type, *resource_id;
	const char		*actor;		/* id or name */
	const char		*since, *until;	/* RFC 3339 */
	const char *const	*envs;		/* the caller's: "*" sees all, rows of no
						 * environment too */
	int			 nenvs;
};

/* Rows newest first, id below after (a cursor: the last id of a page; NULL: the newest),
 * at most limit; *out a new array. */
bool	audit_list(struct db *c, int limit, const char *after, const struct audit_filter *f,
	    json_t **out, struct err *e);
/* Copy of o with every member named like a secret replaced by "[redacted]". */
json_t	*audit_redact(json_t *o);

#endif
