/* audit: append-only log of who changed what. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "core/audit.h"

static const char sql_insert[] =
    "INSERT INTO audit_log (actor_id, actor_name, action, resource_type, resource_id,"
    " environment, before, after, request_id)"
    " VALUES (NULLIF($1, '')::uuid, $2, $3, $4, $5, $6, $7::jsonb, $8::jsonb, NULLIF($9, ''))";

static bool
secret_name(const char *k)
{
	static const char *const names[] = { "token", "secret", "password", "credentials",
	    "private_key", "client_secret", "secret_access_key", NULL };

	for (int i = 0; names[i] != NULL; i++)
		if (strcasecmp(k, names[i]) == 0)
			return true;
	return false;
}

json_t *
audit_redact(json_t *o)
{
	json_t *copy, *v;
	const char *k;
	size_t i;

	if (json_is_object(o)) {
		copy = json_object();
		json_object_foreach(o, k, v)
			json_object_set_new(copy, k, secret_name(k) ?
			    json_string("[redacted]") : audit_redact(v));
		return copy;
	}
	if (json_is_array(o)) {
		copy = json_array();
		json_array_foreach(o, i, v)
			json_array_append_new(copy, audit_redact(v));
		return copy;
	}
	return o ? json_deep_copy(o) : NULL;
}

bool
audit_write(struct db *c, const struct actor *who, const char *action, const char *rtype,
	    const char *rid, const char *env, json_t *before, json_t *after, struct err *e)
{
	json_t *b = audit_redact(before), *a = audit_redact(after);
	char *bs = b ? json_dumps(b, JSON_COMPACT) : NULL;
	char *as = a ? json_dumps(a, JSON_COMPACT) : NULL;
	const char *p[9] = { who->id, who->name[0] ? who->name : "system", action, rtype, rid,
	    env, bs, as, who->request_id };
	/* nothing reads the row back: it goes with the transaction's next round trip */
	bool ok = db_exec_later(c, sql_insert, 9, p, e);

	free(bs);
	free(as);
	json_decref(b);
	json_decref(a);
	return ok;
}

bool
audit_list(struct db *c, int limit, const char *after, const struct audit_filter *f,
	   json_t **out, struct err *e)
{
	static const char sql[] =
	    "SELECT json_build_object('id', id::text, 'at', at, 'actor', json_build_object("
	    "'id', actor_id, 'name', actor_name), 'action', action, 'resource_type',"
	    " resource_type, 'resource_id', resource_id, 'environment', environment,"
	    " 'before', before, 'after', after, 'request_id', request_id)::text"
	    " FROM audit_log"
	    " WHERE ($1 = '' OR id < $1::bigint)"
	    " AND ($3::text IS NULL OR resource_type = $3)"
	    " AND ($4::text IS NULL OR resource_id = $4)"
	    " AND ($5::text IS NULL OR actor_id::text = $5 OR actor_name = $5)"
	    " AND ($6::timestamptz IS NULL OR at >= $6::timestamptz)"
	    " AND ($7::timestamptz IS NULL OR at < $7::timestamptz)"
	    " AND ($8::text[] IS NULL OR environment = ANY($8::text[]))"
	    " ORDER BY id DESC LIMIT $2";
	static const char *const none[1] = { NULL };	/* no environment: no row */
	const char *p[5] = { f->resource_type, f->resource_id, f->actor, f->since, f->until };

	return db_list_page(c, sql, limit, after, DB_CURSOR_SERIAL, p, 5,
	    f->envs != NULL ? f->envs : none, f->envs != NULL ? f->nenvs : 0, out, e);
}
