/* job_text: GET /v1/jobs/{id} and the job list answered as JSON text written straight from
 * the row's columns — no json_build_object in SQL, no parse and re-serialize in fleetd
 * (jsonb columns are copied as the server prints them).  Same members, same order and the
 * same timestamp form as JOB_JSON (queue/jobs/job.h).  Lists keep the text of recently listed
 * jobs in memory, keyed by the xmin of the job row and of its queue, cluster and cloud
 * rows: any committed change to one of them changes the key, so a page is one small query
 * for ids and keys plus one query for the rows not cached (or changed) — never stale. */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <uuid/uuid.h>

#include "core/arena.h"
#include "core/hash.h"
#include "core/textbuf.h"
#include "queue/jobs/job_text.h"

#define COLS \
	"j.id, j.name, j.environment, q.name, j.queue_id, j.kind, j.state, j.reason," \
	" j.priority_class, j.priority, j.attempt, j.cluster_id, k.name, c.region, c.provider," \
	" j.placement, j.object_name, j.spec, j.enqueued_at, j.dispatched_at, j.started_at," \
	" j.finished_at, j.version, j.created_at, j.updated_at, j.checkpoint ||" \
	" jsonb_build_object('age_seconds'," \
	"  extract(epoch from now() - (j.checkpoint->>'at')::timestamptz)::int), " \
	JOB_SERVE_ENDPOINT ", " JOB_SPEC_UPDATE ", q.team, j.capacity_migrations"

/* Member names and how each column is written: s string, n number, j JSON, t timestamp. */
static const struct {
	const char	*name;
	char		 kind;
} cols[] = {
	{ "id", 's' }, { "name", 's' }, { "environment", 's' }, { "queue", 's' },
	{ "queue_id", 's' }, { "kind", 's' }, { "state", 's' }, { "reason", 's' },
	{ "priority_class", 's' }, { "priority", 'n' }, { "attempt", 'n' },
	{ "cluster_id", 's' }, { "cluster", 's' }, { "region", 's' }, { "provider", 's' },
	{ "placement", 'j' }, { "object_name", 's' }, { "spec", 'j' }, { "enqueued_at", 't' },
	{ "dispatched_at", 't' }, { "started_at", 't' }, { "finished_at", 't' },
	{ "version", 'n' }, { "created_at", 't' }, { "updated_at", 't' }, { "checkpoint", 'j' },
	{ "serve_endpoint", 'j' }, { "spec_update", 'j' }, { "team", 's' },
	{ "capacity_migrations", 'n' },
};
#define NCOLS (sizeof(cols) / sizeof(cols[0]))
#define COL_ID		0
#define COL_ENV		2
#define COL_VERSION	22
#define COL_CHECKPOINT	25	/* its age changes with time: such a job is never kept */
#define COL_TEAM	28
#define COL_KEYS	30	/* after the columns: j.xmin, q.xmin, k.xmin, c.xmin */
#define KEYS " j.xmin, q.xmin, k.xmin, c.xmin"

struct buf {
	char	*p;
	size_t	 len, cap;
};

static void
put(struct buf *b, const char *s, size_t n)
{
	textbuf_append(&b->p, &b->len, &b->cap, s, n);
}

static void
puts_(struct buf *b, const char *s)
{
	put(b, s, strlen(s));
}

/* A JSON string: quotes, backslash and control characters escaped (text is UTF-8). */
static void
put_string(struct buf *b, const char *s)
{
	static const char hex[] = "0123456789abcdef";
	const char *run = s;

	put(b, "\"", 1);
	for (; *s != '\0'; s++) {
		unsigned char ch = (unsigned char)*s;
		char esc[7];

		if (ch >= 0x20 && ch != '"' && ch != '\\')
			continue;
		put(b, run, (size_t)(s - run));
		run = s + 1;
		switch (ch) {
		case '"':  put(b, "\\\"", 2); break;
		case '\\': put(b, "\\\\", 2); break;
		case '\n': put(b, "\\n", 2); break;
		case '\r': put(b, "\\r", 2); break;
		case '\t': put(b, "\\t", 2); break;
		case '\b': put(b, "\\b", 2); break;
		case '\f': put(b, "\\f", 2); break;
		default:
			memcpy(esc, "\\u00", 4);
			esc[4] = hex[ch >> 4];
			esc[5] = hex[ch & 15];
			put(b, esc, 6);
		}
	}
	put(b, run, (size_t)(s - run));
	put(b, "\"", 1);
}

/* timestamptz as the server prints it in UTC ("2026-12-01 14:02:18.566+00") to the form
 * of to_json ("2026-12-01T14:02:18.566+00:00"). */
static void
put_time(struct buf *b, const char *s)
{
	size_t n = strlen(s);
	const char *sign = NULL;

	put(b, "\"", 1);
	for (size_t i = 11; i < n; i++)
		if (s[i] == '+' || s[i] == '-')
			sign = s + i;
	if (n > 10 && s[10] == ' ') {
		put(b, s, 10);
		put(b, "T", 1);
		put(b, s + 11, n - 11);
	} else {
		put(b, s, n);
	}
	if (sign != NULL && strlen(sign) == 3)	/* "+00": hours only */
		put(b, ":00", 3);
	put(b, "\"", 1);
}

static void
put_row(struct buf *b, const PGresult *r, int row)
{
	put(b, "{", 1);
	for (size_t i = 0; i < NCOLS; i++) {
		const char *v = PQgetisnull(r, row, (int)i) ? NULL : PQgetvalue(r, row, (int)i);

		if (i > 0)
			put(b, ",", 1);
		put(b, "\"", 1);
		puts_(b, cols[i].name);
		put(b, "\":", 2);
		if (v == NULL)
			put(b, "null", 4);
		else if (cols[i].kind == 's')
			put_string(b, v);
		else if (cols[i].kind == 't')
			put_time(b, v);
		else
			puts_(b, v);
	}
	put(b, "}", 1);
}

/* Copies b into the arena and frees it. */
static char *
to_arena(struct arena *a, struct buf *b, size_t *len)
{
	char *s = arena_strndup(a, b->p ? b->p : "", b->len);

	*len = b->len;
	free(b->p);
	b->p = NULL;
	return s;
}


/* ---- text of recently listed jobs, keyed by row versions */

#define CACHE_MAX	4096		/* jobs; at ~1.5 KB each about 6 MB */
#define CACHE_BUCKETS	8192

struct entry {
	char		 id[37];
	char		 key[64];	/* "xmin/xmin/xmin/xmin" */
	char		*json;
	size_t		 len;
	struct entry	*next;		/* bucket chain */
};

static struct {
	pthread_mutex_t	 mu;
	struct entry	*buckets[CACHE_BUCKETS];
	struct entry	*ring[CACHE_MAX];	/* insertion order: the oldest goes first */
	int		 head, n;
} cache = { .mu = PTHREAD_MUTEX_INITIALIZER };

static unsigned
bucket_of(const char *id)
{
	return hash_str(id) % CACHE_BUCKETS;
}

static struct entry **
slot_of(const char *id)
{
	struct entry **p = &cache.buckets[bucket_of(id)];

	while (*p != NULL && strcmp((*p)->id, id) != 0)
		p = &(*p)->next;
	return p;
}

/* The key of job_page_keys: "j.xmin/q.xmin/k.xmin/c.xmin", empty for no cluster. */
static void
row_key(const PGresult *r, int row, int col, char *key, size_t size)
{
	snprintf(key, size, "%s/%s/%s/%s", PQgetvalue(r, row, col), PQgetvalue(r, row, col + 1),
	    PQgetvalue(r, row, col + 2), PQgetvalue(r, row, col + 3));
}

/* Appends the cached text of id to b when its key matches; false on a miss. */
static bool
cache_put_into(struct buf *b, const char *id, const char *key)
{
	struct entry *en;
	bool hit = false;

	pthread_mutex_lock(&cache.mu);
	en = *slot_of(id);
	if (en != NULL && strcmp(en->key, key) == 0) {
		put(b, en->json, en->len);
		hit = true;
	}
	pthread_mutex_unlock(&cache.mu);
	return hit;
}

static void
cache_store(const char *id, const char *key, const char *json, size_t len)
{
	struct entry **p, *en;
	char *copy;

	if (strlen(id) >= sizeof(en->id) || strlen(key) >= sizeof(en->key) ||
	    (copy = malloc(len + 1)) == NULL)
		return;
	memcpy(copy, json, len);
	copy[len] = '\0';
	pthread_mutex_lock(&cache.mu);
	if ((en = *slot_of(id)) != NULL) {	/* a newer version of a cached job */
		free(en->json);
	} else {
		if (cache.n == CACHE_MAX) {	/* forget the oldest */
			struct entry *old = cache.ring[cache.head];

			p = slot_of(old->id);
			*p = old->next;
			free(old->json);
			free(old);
			cache.head = (cache.head + 1) % CACHE_MAX;
			cache.n--;
		}
		if ((en = calloc(1, sizeof(*en))) == NULL) {
			pthread_mutex_unlock(&cache.mu);
			free(copy);
			return;
		}
		snprintf(en->id, sizeof(en->id), "%s", id);
		*slot_of(id) = en;
		cache.ring[(cache.head + cache.n) % CACHE_MAX] = en;
		cache.n++;
	}
	snprintf(en->key, sizeof(en->key), "%s", key);
	en->json = copy;
	en->len = len;
	pthread_mutex_unlock(&cache.mu);
}

bool
job_get_text(struct db *c, const char *id, struct arena *a, struct job_text *out,
	     struct err *e)
{
	static const char sql[] = "SELECT " COLS JOB_TEXT_FROM " WHERE j.id = $1::uuid";
	const char *p[1] = { id };
	struct buf b = { 0 };
	PGresult *r = NULL;
	uuid_t u;
	bool ok = false;

	if (id == NULL || uuid_parse(id, u) != 0)
		return err_set(e, 404, "queue.job_not_found", "job not found");
	if (!db_exec(c, sql, 1, p, &r, e))
		goto cleanup;
	if (PQntuples(r) == 0) {
		err_set(e, 404, "queue.job_not_found", "job not found");
		goto cleanup;
	}
	put_row(&b, r, 0);
	out->json = to_arena(a, &b, &out->len);
	out->id = arena_strdup(a, PQgetvalue(r, 0, COL_ID));
	out->environment = arena_strdup(a, PQgetvalue(r, 0, COL_ENV));
	out->team = PQgetisnull(r, 0, COL_TEAM) ? NULL :
	    arena_strdup(a, PQgetvalue(r, 0, COL_TEAM));
	out->version = atol(PQgetvalue(r, 0, COL_VERSION));
	ok = true;
cleanup:
	PQclear(r);
	return ok;
}

/* Fills the rows of ids (a uuid[] literal) as text into the cache; the keys come from the
 * same rows, so what is stored is what these versions say. */
struct local {		/* rows of this page that are not kept (a checkpoint's age) */
	const char	*id;
	char		*json;
	size_t		 len;
};

static bool
fetch_missing(struct db *c, const char *ids, struct arena *a, struct local *loc, int *nloc,
	      int max, struct err *e)
{
	static const char sql[] = "SELECT " COLS "," KEYS JOB_TEXT_FROM
	    " WHERE j.id = ANY($1::uuid[])";
	PGresult *r = NULL;
	struct buf b = { 0 };
	char key[64];

	if (!db_exec(c, sql, 1, &ids, &r, e))
		return false;
	for (int i = 0; i < PQntuples(r); i++) {
		b.len = 0;
		put_row(&b, r, i);
		if (!PQgetisnull(r, i, COL_CHECKPOINT)) {
			if (*nloc < max) {
				loc[*nloc].id = arena_strdup(a, PQgetvalue(r, i, COL_ID));
				loc[*nloc].json = arena_strndup(a, b.p, b.len);
				loc[*nloc].len = b.len;
				(*nloc)++;
			}
			continue;
		}
		row_key(r, i, COL_KEYS, key, sizeof(key));
		cache_store(PQgetvalue(r, i, COL_ID), key, b.p, b.len);
	}
	free(b.p);
	PQclear(r);
	return true;
}

bool
job_list_text(struct db *c, int limit, const char *after, const struct job_filter *f,
	      struct arena *a, struct job_page *out, struct err *e)
{
	/* migrations/0007_job_page.sql: plans made once per connection */
	static const char sql[] = "SELECT job_id, job_key FROM job_page_keys("
	    "nullif($1, '')::uuid, $2::int, $3, $4, $5, $6, $7, $8::text[])";
	/* migrations/0020_teams.sql: the jobs of one team's queues */
	static const char sql_team[] = "SELECT job_id, job_key FROM job_page_keys_team("
	    "nullif($1, '')::uuid, $2::int, $3, $4, $5, $6, $7, $8::text[], $9)";
	char lim[16], *lit, key[64];
	bool ok = false;
	struct buf b = { 0 }, miss = { 0 };
	struct local *loc = arena_alloc(a, sizeof(*loc) * (size_t)(limit + 1));
	PGresult *r = NULL;
	int rows, nloc = 0;

	if (!db_cursor_ok(after, false, e))
		return false;
	lit = db_scope_array(f->envs, f->nenvs);
	snprintf(lim, sizeof(lim), "%d", limit + 1);
	{
		const char *p[9] = { after ? after : "", lim, f->state, f->queue, f->environment,
		    f->region, f->cluster, lit, f->team };

		ok = f->team != NULL ? db_exec(c, sql_team, 9, p, &r, e) :
		    db_exec(c, sql, 8, p, &r, e);
		free(lit);
		if (!ok)
			return false;
		ok = false;
	}
	rows = PQntuples(r);
	out->more = rows > limit;
	out->count = out->more ? limit : rows;
	/* Two passes at most: the rows not cached (or changed) are fetched in one query. */
	for (int pass = 0; pass < 2; pass++) {
		bool missed = false;
		int written = 0;

		b.len = 0;
		put(&b, "[", 1);
		put(&miss, "{", 1);
		for (int i = 0; i < out->count; i++) {
			const char *id = PQgetvalue(r, i, 0);
			size_t mark = b.len;
			struct job_text t;

			if (written > 0)
				put(&b, ",", 1);
			snprintf(key, sizeof(key), "%s", PQgetvalue(r, i, 1));
			if (cache_put_into(&b, id, key)) {
				written++;
				continue;
			}
			b.len = mark;
			if (pass == 0) {
				if (missed)
					put(&miss, ",", 1);
				puts_(&miss, id);
				missed = true;
				continue;
			}
			{
				int l = 0;

				while (l < nloc && strcmp(loc[l].id, id) != 0)
					l++;
				if (l < nloc) {
					if (written++ > 0)
						put(&b, ",", 1);
					put(&b, loc[l].json, loc[l].len);
					continue;
				}
			}
			/* changed again since the first query: read it alone (gone: left out) */
			if (!job_get_text(c, id, a, &t, e)) {
				if (e->status != 404)
					goto cleanup;
				err_clear(e);
				continue;
			}
			if (written++ > 0)
				put(&b, ",", 1);
			put(&b, t.json, t.len);
		}
		put(&b, "]", 1);
		if (!missed)
			break;
		put(&miss, "}", 1);
		if (!fetch_missing(c, miss.p, a, loc, &nloc, limit + 1, e))
			goto cleanup;
		miss.len = 0;
	}
	out->last_id = out->count > 0 ?
	    arena_strdup(a, PQgetvalue(r, out->count - 1, 0)) : NULL;
	out->items = to_arena(a, &b, &out->len);
	ok = true;
cleanup:
	free(b.p);
	free(miss.p);
	PQclear(r);
	return ok;
}
