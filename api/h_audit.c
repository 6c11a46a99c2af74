/* h_audit: GET /v1/audit — admin; filters by resource, actor and time; newest first.  Rows
 * of no environment (tokens, priority classes) are shown to '*' callers only. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/handlers.h"

HANDLER(h_audit_list)
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
	    " AND ($8::boolean OR environment = ANY($9::text[]))"
	    " ORDER BY id DESC LIMIT $2";
	const char *after, *p[9];
	char lim[16], envs[2400] = "{";
	int limit;
	size_t n = 1;
	PGresult *r = NULL;
	json_t *items;

	if (!rq_page(rq, &limit, &after, e))
		return false;
	if (after != NULL && strspn(after, "0123456789") != strlen(after))
		return err_field(e, 400, "api.bad_cursor", "/query/after",
		    "after is not a cursor returned by this list");
	for (int i = 0; i < rq->nenvs && n + 40 < sizeof(envs); i++)
		n += (size_t)snprintf(envs + n, sizeof(envs) - n, "%s%s", i ? "," : "",
		    rq->envs[i]);
	snprintf(envs + n, sizeof(envs) - n, "}");
	snprintf(lim, sizeof(lim), "%d", limit + 1);
	p[0] = after ? after : "";
	p[1] = lim;
	p[2] = rq_query(rq, "resource_type");
	p[3] = rq_query(rq, "resource_id");
	p[4] = rq_query(rq, "actor");
	p[5] = rq_query(rq, "since");
	p[6] = rq_query(rq, "until");
	p[7] = rq_env_visible(rq, "*") ? "true" : "false";
	p[8] = envs;
	if (!db_exec(rq->db, sql, 9, p, &r, e))
		return false;
	items = json_array();
	for (int i = 0; i < PQntuples(r); i++)
		json_array_append_new(items, json_loads(PQgetvalue(r, i, 0), 0, NULL));
	PQclear(r);
	rq_reply(rq, 200, page_reply(rq, items, limit, "id"));
	return true;
}
