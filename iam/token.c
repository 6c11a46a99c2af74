/* token: secrets are "fleet_" + 43 base64url characters (256 random bits); only their
 * sha-256 reaches the database.  A 2-second cache spares a query per request; it is used
 * only while this replica LISTENs on fleet_tokens, where every revocation NOTIFYs on
 * commit and empties the cache of every replica.  A generation counter keeps a lookup
 * that raced a revocation from caching what it read before it. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <uuid/uuid.h>

#include "core/crypto.h"
#include "core/jsonx.h"
#include "core/listen.h"
#include "core/log.h"
#include "iam/token.h"

#define CACHE_SLOTS	256
#define CACHE_TTL_S	2

struct cached {
	char	 sha[65];
	time_t	 at;
	char	 id[40];
	char	 name[128];
	int	 role;
	char	 team[64];
	char	*envs;		/* malloc'd, comma-joined */
};

static pthread_mutex_t cache_mu = PTHREAD_MUTEX_INITIALIZER;
static struct cached cache[CACHE_SLOTS];
static unsigned long cache_gen;		/* under cache_mu; +1 at every flush */
static atomic_bool listening;		/* the revocation listener is connected */
static atomic_bool listen_run;
static pthread_t listen_thread;
static char *listen_url;

static const char *const role_names[] = { "none", "viewer", "submitter", "operator", "admin" };

int
token_role_parse(const char *s)
{
	for (int i = 1; i <= TOKEN_ADMIN; i++)
		if (s != NULL && strcmp(s, role_names[i]) == 0)
			return i;
	return TOKEN_NONE;
}

/* A token's public object, built by Postgres (never the secret's hash). */
#define TOKEN_JSON "json_build_object('id', id::text, 'name', name, 'role', role," \
	" 'environments', to_json(environments), 'team', team, 'revoked', revoked_at IS NOT NULL," \
	" 'created_at', to_char(created_at AT TIME ZONE 'UTC'," \
	" 'YYYY-MM-DD\"T\"HH24:MI:SS.US\"Z\"'), 'version', version)::text"

/* envs as a Postgres text[] literal built from validated names only. */
static bool
envs_literal(json_t *envs, char *out, size_t outlen, struct err *e)
{
	size_t i, n = 0;
	json_t *v;

	if (!json_is_array(envs) || json_array_size(envs) == 0 || json_array_size(envs) > 64)
		return err_field(e, 400, "token.bad_environments", "/environments",
		    "environments must be a list of 1 to 64 names, or [\"*\"]");
	n += (size_t)snprintf(out + n, outlen - n, "{");
	json_array_foreach(envs, i, v) {
		const char *s = json_string_value(v);
		char ptr[48];

		snprintf(ptr, sizeof(ptr), "/environments/%zu", i);
		if (s == NULL || (strcmp(s, "*") != 0 &&
		    (strlen(s) < 2 || strlen(s) > 31 || strspn(s,
		    "abcdefghijklmnopqrstuvwxyz0123456789-") != strlen(s))))
			return err_field(e, 400, "token.bad_environment", ptr,
			    "environment names are lowercase letters, digits and dashes, or *");
		if (n + strlen(s) + 4 >= outlen)
			return err_field(e, 400, "token.bad_environments", "/environments",
			    "too many environments");
		n += (size_t)snprintf(out + n, outlen - n, "%s%s", i ? "," : "", s);
	}
	snprintf(out + n, outlen - n, "}");
	return true;
}

bool
token_create(struct db *c, const char *name, const char *role, json_t *envs, const char *team,
	     char **secret, json_t **out, struct err *e)
{
	static const char sql[] =
	    "INSERT INTO api_tokens (id, name, role, environments, secret_sha256, team)"
	    " VALUES ($1, $2, $3, $4::text[], $5, $6) RETURNING " TOKEN_JSON;
	static const char sql_team[] = "SELECT count(*) FROM teams WHERE name = $1"
	    " AND environments @> $2::text[] AND NOT ('*' = ANY($2::text[]))";
	long long n = 0;
	char lit[2400], id[37], sha[65], *b64 = NULL;
	uint8_t raw[32];
	uuid_t u;
	bool ok = false;

	*secret = NULL;
	if (name == NULL || *name == '\0' || strlen(name) > 100)
		return err_field(e, 400, "token.bad_name", "/name", "name must be 1 to 100 characters");
	if (token_role_parse(role) == TOKEN_NONE)
		return err_field(e, 400, "token.bad_role", "/role",
		    "role must be viewer, submitter, operator or admin");
	if (!envs_literal(envs, lit, sizeof(lit), e))
		return false;
	if (team != NULL) {
		const char *p[2] = { team, lit };

		if (token_role_parse(role) == TOKEN_ADMIN)
			return err_field(e, 422, "token.bad_role", "/role",
			    "a role held in a team is viewer, submitter or operator");
		if (!jsonx_name_ok(team, 63))
			return err_field(e, 422, "token.bad_team", "/team",
			    "team must match ^[a-z][a-z0-9-]{1,62}$");
		if (!db_count(c, sql_team, 2, p, &n, e))
			return false;
		if (n == 0)
			return err_field(e, 422, "token.bad_team", "/team",
			    "team %.64s not found in every environment of the token", team);
	}
	if (!crypto_random(raw, sizeof(raw)))
		return err_set(e, 500, "token.random", "no randomness available");
	b64 = crypto_b64url_encode(raw, sizeof(raw));
	if (b64 == NULL)
		goto cleanup;
	if (asprintf(secret, "fleet_%s", b64) < 0) {
		*secret = NULL;
		goto cleanup;
	}
	crypto_sha256_hex(*secret, strlen(*secret), sha);
	uuid_generate_random(u);
	uuid_unparse_lower(u, id);
	{
		const char *p[6] = { id, name, role, lit, sha, team };

		if (!db_get_json(c, sql, 6, p, "token.not_found", "token", out, e))
			goto cleanup;
	}
	ok = true;
cleanup:
	if (!ok) {
		free(*secret);
		*secret = NULL;
	}
	free(b64);
	return ok;
}

bool
token_list(struct db *c, int limit, const char *after, const char *const *envs, int nenvs,
	   json_t **out, struct err *e)
{
	static const char sql[] = "SELECT " TOKEN_JSON " FROM api_tokens WHERE id::text > $1"
	    " AND ($3::text[] IS NULL OR (NOT ('*' = ANY(environments))"
	    " AND environments <@ $3::text[])) ORDER BY id LIMIT $2";

	return db_list_page(c, sql, limit, after, DB_CURSOR_TEXT, NULL, 0, envs, nenvs, out, e);
}

bool
token_get(struct db *c, const char *id, bool lock, json_t **out, struct err *e)
{
	static const char sql[] = "SELECT " TOKEN_JSON " FROM api_tokens"
	    " WHERE id = $1::uuid AND revoked_at IS NULL";
	static const char sql_lock[] = "SELECT " TOKEN_JSON " FROM api_tokens"
	    " WHERE id = $1::uuid AND revoked_at IS NULL FOR UPDATE";
	return db_get_id_json(c, lock ? sql_lock : sql, id, "token.not_found", "token", out, e);
}

bool
token_revoke(struct db *c, const char *id, struct err *e)
{
	static const char sql[] = "UPDATE api_tokens SET revoked_at = now(), updated_at = now(),"
	    " version = version + 1 WHERE id = $1::uuid AND revoked_at IS NULL";
	const char *p[1] = { id };
	bool ok;

	/* delivered on commit to every replica's listener, this one included */
	ok = db_exec(c, sql, 1, p, NULL, e) &&
	    db_exec(c, "SELECT pg_notify('fleet_tokens', $1)", 1, p, NULL, e);
	token_cache_flush();
	return ok;
}

static bool
cache_get(const char *sha, struct arena *a, struct token_principal *p)
{
	struct cached *s = &cache[(unsigned char)sha[0] * 16 % CACHE_SLOTS +
	    ((unsigned char)sha[1] % 16)];
	bool hit = false;

	if (!atomic_load(&listening))
		return false;
	pthread_mutex_lock(&cache_mu);
	if (strcmp(s->sha, sha) == 0 && time(NULL) - s->at < CACHE_TTL_S) {
		char *envs = arena_strdup(a, s->envs), *save = NULL, *tok;

		snprintf(p->id, sizeof(p->id), "%s", s->id);
		snprintf(p->name, sizeof(p->name), "%s", s->name);
		p->role = s->role;
		snprintf(p->team, sizeof(p->team), "%s", s->team);
		p->envs = arena_alloc(a, sizeof(char *) * 65);
		p->nenvs = 0;
		for (tok = strtok_r(envs, ",", &save); tok && p->nenvs < 64;
		    tok = strtok_r(NULL, ",", &save))
			p->envs[p->nenvs++] = tok;
		hit = true;
	}
	pthread_mutex_unlock(&cache_mu);
	return hit;
}

static unsigned long
cache_generation(void)
{
	unsigned long g;

	pthread_mutex_lock(&cache_mu);
	g = cache_gen;
	pthread_mutex_unlock(&cache_mu);
	return g;
}

/* Caches p unless the cache was flushed since gen (the row may be stale). */
static void
cache_put(const char *sha, const struct token_principal *p, unsigned long gen)
{
	struct cached *s = &cache[(unsigned char)sha[0] * 16 % CACHE_SLOTS +
	    ((unsigned char)sha[1] % 16)];
	size_t len = 1;
	char *envs;

	for (int i = 0; i < p->nenvs; i++)
		len += strlen(p->envs[i]) + 1;
	envs = calloc(1, len);
	for (int i = 0; i < p->nenvs; i++) {
		if (i)
			strcat(envs, ",");
		strcat(envs, p->envs[i]);
	}
	pthread_mutex_lock(&cache_mu);
	if (gen != cache_gen || !atomic_load(&listening)) {
		pthread_mutex_unlock(&cache_mu);
		free(envs);
		return;
	}
	free(s->envs);
	snprintf(s->sha, sizeof(s->sha), "%s", sha);
	s->at = time(NULL);
	snprintf(s->id, sizeof(s->id), "%s", p->id);
	snprintf(s->name, sizeof(s->name), "%s", p->name);
	s->role = p->role;
	snprintf(s->team, sizeof(s->team), "%s", p->team);
	s->envs = envs;
	pthread_mutex_unlock(&cache_mu);
}

void
token_cache_flush(void)
{
	pthread_mutex_lock(&cache_mu);
	cache_gen++;
	for (int i = 0; i < CACHE_SLOTS; i++) {
		free(cache[i].envs);
		memset(&cache[i], 0, sizeof(cache[i]));
	}
	pthread_mutex_unlock(&cache_mu);
}

/* The listener: (re)connects, LISTENs, and flushes the cache on every notification and
 * on every (re)connect (a revocation may have been missed while away). */
static void *
listen_loop(void *arg)
{
	PGconn *c = NULL;

	(void)arg;
	while (atomic_load(&listen_run)) {
		if (c == NULL || PQstatus(c) != CONNECTION_OK) {
			atomic_store(&listening, false);
			PQfinish(c);
			if ((c = listen_open(listen_url, "fleet_tokens")) == NULL) {
				for (int i = 0; i < 10 && atomic_load(&listen_run); i++)
					usleep(100 * 1000);
				continue;
			}
			token_cache_flush();
			atomic_store(&listening, true);
		}
		if (listen_wait(c, 200))
			token_cache_flush();
	}
	atomic_store(&listening, false);
	PQfinish(c);
	return NULL;
}

bool
token_listen_start(const char *url, struct err *e)
{
	free(listen_url);
	listen_url = strdup(url ? url : "");
	atomic_store(&listen_run, true);
	if (listen_url == NULL || pthread_create(&listen_thread, NULL, listen_loop, NULL) != 0) {
		atomic_store(&listen_run, false);
		return err_set(e, 500, "token.listen", "cannot start the revocation listener");
	}
	return true;
}

void
token_listen_stop(void)
{
	if (!atomic_load(&listen_run))
		return;
	atomic_store(&listen_run, false);
	pthread_join(listen_thread, NULL);
	free(listen_url);
	listen_url = NULL;
	token_cache_flush();
}

bool
token_authenticate(const char *secret, struct arena *a, struct token_principal *p,
		   struct err *e)
{
	static const char sql[] = "SELECT id::text, name, role, environments, coalesce(team, '')"
	    " FROM api_tokens WHERE secret_sha256 = $1 AND revoked_at IS NULL";
	char sha[65];
	const char *params[1] = { sha };
	struct db *c = NULL;
	PGresult *r = NULL;
	unsigned long gen;
	bool ok = false;

	if (strlen(secret) > 200)
		return err_set(e, 401, "auth.bad_token", "the bearer token is not valid");
	crypto_sha256_hex(secret, strlen(secret), sha);
	if (cache_get(sha, a, p))
		return true;
	gen = cache_generation();
	if ((c = db_acquire(5000, e)) == NULL)
		return false;
	if (!db_exec(c, sql, 1, params, &r, e))
		goto cleanup;
	if (PQntuples(r) != 1) {
		err_set(e, 401, "auth.bad_token", "the bearer token is not valid");
		goto cleanup;
	}
	snprintf(p->id, sizeof(p->id), "%s", PQgetvalue(r, 0, 0));
	snprintf(p->name, sizeof(p->name), "%s", PQgetvalue(r, 0, 1));
	p->role = token_role_parse(PQgetvalue(r, 0, 2));
	snprintf(p->team, sizeof(p->team), "%s", PQgetvalue(r, 0, 4));
	{
		/* text[] output: {a,b} — names are validated at creation, so no quoting. */
		char *lit = arena_strdup(a, PQgetvalue(r, 0, 3)), *save = NULL, *tok;
		size_t n = strlen(lit);

		if (n >= 2) {
			lit[n - 1] = '\0';
			lit++;
		}
		p->envs = arena_alloc(a, sizeof(char *) * 65);
		p->nenvs = 0;
		for (tok = strtok_r(lit, ",", &save); tok && p->nenvs < 64;
		    tok = strtok_r(NULL, ",", &save))
			p->envs[p->nenvs++] = tok;
	}
	cache_put(sha, p, gen);
	ok = true;
cleanup:
	PQclear(r);
	db_release(c);
	return ok;
}
