/* cloud: reads, lists and deletes clouds; every answer is built by Postgres as JSON. */
#include <stdlib.h>
#include <string.h>

#include <uuid/uuid.h>

#include "regions/cloud.h"

bool
cloud_get(struct db *c, const char *id, bool for_update, json_t **out, struct err *e)
{
	static const char sql[] = "SELECT " CLOUD_JSON " FROM clouds c"
	    " LEFT JOIN iam_pairs p ON p.cloud_id = c.id WHERE c.id = $1::uuid";
	static const char sql_lock[] = "SELECT " CLOUD_JSON " FROM clouds c"
	    " LEFT JOIN iam_pairs p ON p.cloud_id = c.id WHERE c.id = $1::uuid FOR UPDATE OF c";
	return db_get_id_json(c, for_update ? sql_lock : sql, id, "cloud.not_found", "cloud",
	    out, e);
}

bool
cloud_list(struct db *c, int limit, const char *after, const char *environment,
	   const char *provider, const char *region, const char *const *envs, int nenvs,
	   json_t **out, struct err *e)
{
	static const char sql[] = "SELECT " CLOUD_JSON ", c.id::text FROM clouds c"
	    " LEFT JOIN iam_pairs p ON p.cloud_id = c.id"
	    " WHERE ($1 = '' OR c.id > $1::uuid) AND ($3::text IS NULL OR c.environment = $3)"
	    " AND ($4::text IS NULL OR c.provider = $4) AND ($5::text IS NULL OR c.region = $5)"
	    " AND ($6::text[] IS NULL OR c.environment = ANY($6::text[]))"
	    " ORDER BY c.id LIMIT $2";
	const char *f[3] = { environment, provider, region };

	return db_list_page(c, sql, limit, after, DB_CURSOR_UUID, f, 3, envs, nenvs, out, e);
}

bool
cloud_delete(struct db *c, const char *id, struct err *e)
{
	static const char sql_used[] = "SELECT (SELECT count(*) FROM clusters WHERE cloud_id = $1::uuid),"
	    " (SELECT count(*) FROM jobs j JOIN clusters k ON k.id = j.cluster_id"
	    "  WHERE k.cloud_id = $1::uuid AND j.state IN ('admitted','dispatched','running','moving'))";
	static const char sql_del[] = "DELETE FROM clouds WHERE id = $1::uuid";
	const char *p[1] = { id };
	PGresult *r = NULL;
	bool ok = false;

	if (!db_exec(c, sql_used, 1, p, &r, e))
		goto cleanup;
	if (atoi(PQgetvalue(r, 0, 0)) > 0 || atoi(PQgetvalue(r, 0, 1)) > 0) {
		err_set(e, 409, "cloud.in_use", "the cloud still has member clusters or running jobs");
		err_detail(e, "Delete its %s clusters first (and let their jobs finish or move).",
		    PQgetvalue(r, 0, 0));
		goto cleanup;
	}
	ok = db_exec(c, sql_del, 1, p, NULL, e);
cleanup:
	PQclear(r);
	return ok;
}
