/* lease: member clusters shared among live replicas (see lease.h).  One thread with a
 * connection of its own (LISTEN fleet_leases: a cluster registered, a replica that stops)
 * runs a turn every LEASE_TURN_MS; the workers read the held set from memory. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <libpq-fe.h>

#include "core/config.h"
#include "core/listen.h"
#include "core/log.h"
#include "core/mono.h"
#include "core/textbuf.h"
#include "core/worker_thread.h"
#include "regions/lease.h"

#define LEASE_TURN_MS	1000
#define LEASE_MARGIN_S	1.0	/* a lease is given up locally this long before it expires */

struct held {
	char		id[40];
	long long	epoch;
};

static struct {
	pthread_mutex_t		mu;
	int			users;		/* lease_start calls not yet stopped */
	struct worker_thread	th;
	struct held		*v;		/* sorted by id */
	size_t			n;
	double			until;		/* mono_s: the whole set is valid until then */
	atomic_ulong		taken, released, lost, turns;
	atomic_ulong		gen;		/* lease_generation */
} L = { .mu = PTHREAD_MUTEX_INITIALIZER };

static int
held_cmp(const void *a, const void *b)
{
	return strcmp(((const struct held *)a)->id, ((const struct held *)b)->id);
}

/* Replaces the held set (v is adopted) valid until the given moment. */
static void
publish(struct held *v, size_t n, double until)
{
	struct held *old;
	bool same;

	if (n > 0)
		qsort(v, n, sizeof(*v), held_cmp);
	pthread_mutex_lock(&L.mu);
	same = n == L.n && mono_s() < L.until;
	for (size_t i = 0; same && i < n; i++)
		same = strcmp(v[i].id, L.v[i].id) == 0 && v[i].epoch == L.v[i].epoch;
	if (!same)
		atomic_fetch_add(&L.gen, 1);
	old = L.v;
	L.v = v;
	L.n = n;
	L.until = until;
	pthread_mutex_unlock(&L.mu);
	free(old);
}

unsigned long
lease_generation(void)
{
	return atomic_load(&L.gen);
}

bool
lease_held(const char *cluster_id, long long *epoch)
{
	struct held key, *h = NULL;

	snprintf(key.id, sizeof(key.id), "%s", cluster_id);
	pthread_mutex_lock(&L.mu);
	if (mono_s() < L.until && L.n > 0)
		h = bsearch(&key, L.v, L.n, sizeof(*L.v), held_cmp);
	if (h != NULL && epoch != NULL)
		*epoch = h->epoch;
	pthread_mutex_unlock(&L.mu);
	return h != NULL;
}

char *
lease_ids(void)
{
	char *buf = NULL;
	size_t len = 0, cap = 0;

	textbuf_append(&buf, &len, &cap, "{", 1);
	pthread_mutex_lock(&L.mu);
	for (size_t i = 0; mono_s() < L.until && i < L.n; i++)
		textbuf_appendf(&buf, &len, &cap, "%s%s", i ? "," : "", L.v[i].id);
	pthread_mutex_unlock(&L.mu);
	textbuf_append(&buf, &len, &cap, "}", 1);
	return buf;
}

bool
lease_fence(struct db *c, const char *cluster_id, struct err *e)
{
	static const char sql[] =
	    "SELECT count(*) FROM (SELECT 1 FROM cluster_leases WHERE cluster_id = $1::uuid"
	    " AND holder = $2 AND epoch = $3::bigint AND expires_at > now() FOR SHARE) l";
	long long epoch, n = 0;
	char ep[24];

	if (!lease_held(cluster_id, &epoch)) {
		atomic_fetch_add(&L.lost, 1);
		return err_set(e, 409, "lease.lost", "this replica no longer holds cluster %s",
		    cluster_id);
	}
	snprintf(ep, sizeof(ep), "%lld", epoch);
	{
		const char *p[3] = { cluster_id, cfg.instance_id, ep };

		if (!db_count(c, sql, 3, p, &n, e))
			return false;
	}
	if (n == 0) {
		atomic_fetch_add(&L.lost, 1);
		return err_set(e, 409, "lease.lost", "the lease of cluster %s was taken over",
		    cluster_id);
	}
	return true;
}

/* ---- the thread */

static PGresult *
run(PGconn *c, const char *sql, int n, const char *const *p)
{
	PGresult *r = PQexecParams(c, sql, n, NULL, p, NULL, NULL, 0);
	ExecStatusType st = PQresultStatus(r);

	if (st != PGRES_TUPLES_OK && st != PGRES_COMMAND_OK) {
		log_warn(NULL, "lease", "query failed", "{s:s}", "error", PQerrorMessage(c));
		PQclear(r);
		return NULL;
	}
	return r;
}

/* Appends the (cluster_id, epoch) rows of r to *v. */
static void
add_rows(const PGresult *r, struct held **v, size_t *n, size_t *cap)
{
	for (int i = 0; i < PQntuples(r); i++) {
		if (*n == *cap) {
			*cap = *cap ? *cap * 2 : 64;
			if ((*v = realloc(*v, *cap * sizeof(**v))) == NULL)
				abort();
		}
		snprintf((*v)[*n].id, sizeof((*v)[*n].id), "%s", PQgetvalue(r, i, 0));
		(*v)[*n].epoch = atoll(PQgetvalue(r, i, 1));
		(*n)++;
	}
}

/* One turn: heartbeat, renew, then take up to the fair share or hand back beyond it.
 * False when the database failed (the held set then runs out at its deadline). */
static bool
turn(PGconn *c)
{
	static const char sql_beat[] =
	    "INSERT INTO replicas (instance_id, seen_at) VALUES ($1, now())"
	    " ON CONFLICT (instance_id) DO UPDATE SET seen_at = now()";
	static const char sql_new[] =
	    "INSERT INTO cluster_leases (cluster_id) SELECT k.id FROM clusters k WHERE NOT EXISTS"
	    " (SELECT 1 FROM cluster_leases l WHERE l.cluster_id = k.id)"
	    " ON CONFLICT (cluster_id) DO NOTHING";
	static const char sql_renew[] =
	    "UPDATE cluster_leases SET expires_at = now() + make_interval(secs => $2::int)"
	    " WHERE holder = $1 AND expires_at > now() RETURNING cluster_id, epoch";
	static const char sql_share[] =
	    "SELECT (SELECT count(*) FROM cluster_leases), (SELECT count(*) FROM replicas"
	    " WHERE seen_at > now() - make_interval(secs => $1::int))";
	static const char sql_take[] =
	    "UPDATE cluster_leases l SET holder = $1, epoch = l.epoch + 1,"
	    " expires_at = now() + make_interval(secs => $2::int)"
	    " FROM (SELECT cluster_id FROM cluster_leases WHERE holder IS NULL OR expires_at <= now()"
	    "  ORDER BY cluster_id LIMIT $3::int FOR UPDATE SKIP LOCKED) f"
	    " WHERE l.cluster_id = f.cluster_id RETURNING l.cluster_id, l.epoch";
	static const char sql_release[] =
	    "UPDATE cluster_leases SET holder = NULL, expires_at = now()"
	    " WHERE holder = $1 AND cluster_id = ANY($2::uuid[])";
	char ttl[16], want[24];
	const char *p[3] = { cfg.instance_id, ttl, want };
	struct held *v = NULL;
	size_t n = 0, cap = 0;
	long long clusters, live, fair;
	double t0 = mono_s();
	PGresult *r;

	snprintf(ttl, sizeof(ttl), "%d", cfg.lease_ttl_s);
	if ((r = run(c, sql_beat, 1, p)) == NULL)
		return false;
	PQclear(r);
	if ((r = run(c, sql_new, 0, NULL)) == NULL)
		return false;
	PQclear(r);
	if ((r = run(c, sql_renew, 2, p)) == NULL)
		return false;
	add_rows(r, &v, &n, &cap);
	PQclear(r);
	/* renewed leases are good for ttl from before the renewal was asked */
	publish(v, n, t0 + cfg.lease_ttl_s - LEASE_MARGIN_S);
	if ((r = run(c, sql_share, 1, (const char *const[]){ ttl })) == NULL)
		return false;
	clusters = atoll(PQgetvalue(r, 0, 0));
	live = atoll(PQgetvalue(r, 0, 1));
	PQclear(r);
	fair = live > 0 ? (clusters + live - 1) / live : clusters;
	if ((long long)n < fair) {
		struct held *w = malloc((n ? n : 1) * sizeof(*w));
		size_t m = n, wcap = n ? n : 1;

		if (w == NULL)
			abort();
		if (n > 0)
			memcpy(w, v, n * sizeof(*w));
		snprintf(want, sizeof(want), "%lld", fair - (long long)n);
		t0 = mono_s();
		if ((r = run(c, sql_take, 3, p)) == NULL) {
			free(w);
			return false;
		}
		atomic_fetch_add(&L.taken, (unsigned long)PQntuples(r));
		if (PQntuples(r) > 0)
			log_info(NULL, "lease", "clusters taken", "{s:i, s:I, s:I}", "taken",
			    PQntuples(r), "fair_share", (json_int_t)fair, "replicas", (json_int_t)live);
		add_rows(r, &w, &m, &wcap);
		PQclear(r);
		publish(w, m, t0 + cfg.lease_ttl_s - LEASE_MARGIN_S);
	} else if ((long long)n > fair) {
		/* Hand back the last ones: off the local set first, so no new work starts on
		 * them; work already running is fenced when it writes. */
		char *ids = NULL;
		size_t len = 0, icap = 0, keep = (size_t)fair;
		struct held *w = malloc((keep ? keep : 1) * sizeof(*w));
		double until;

		if (w == NULL)
			abort();
		if (keep > 0)
			memcpy(w, v, keep * sizeof(*w));
		textbuf_append(&ids, &len, &icap, "{", 1);
		for (size_t i = keep; i < n; i++)
			textbuf_appendf(&ids, &len, &icap, "%s%s", i > keep ? "," : "", v[i].id);
		textbuf_append(&ids, &len, &icap, "}", 1);
		pthread_mutex_lock(&L.mu);
		until = L.until;
		pthread_mutex_unlock(&L.mu);
		publish(w, keep, until);
		r = run(c, sql_release, 2, (const char *const[]){ cfg.instance_id, ids });
		free(ids);
		if (r == NULL)
			return false;
		atomic_fetch_add(&L.released, (unsigned long)(n - keep));
		log_info(NULL, "lease", "clusters handed back", "{s:I, s:I, s:I}", "released",
		    (json_int_t)(n - keep), "fair_share", (json_int_t)fair, "replicas",
		    (json_int_t)live);
		PQclear(r);
	}
	atomic_fetch_add(&L.turns, 1);
	return true;
}

/* Hands every lease back and leaves the replicas table (a clean stop). */
static void
leave(PGconn *c)
{
	const char *p[1] = { cfg.instance_id };
	PGresult *r;

	publish(NULL, 0, 0);
	if ((r = run(c, "UPDATE cluster_leases SET holder = NULL, expires_at = now()"
	    " WHERE holder = $1", 1, p)) != NULL)
		PQclear(r);
	if ((r = run(c, "DELETE FROM replicas WHERE instance_id = $1", 1, p)) != NULL)
		PQclear(r);
	if ((r = run(c, "NOTIFY fleet_leases", 0, NULL)) != NULL)
		PQclear(r);
}

static void *
loop(void *arg)
{
	PGconn *c = NULL;

	(void)arg;
	while (worker_thread_running(&L.th)) {
		if (c == NULL || PQstatus(c) != CONNECTION_OK) {
			if (c != NULL)
				PQfinish(c);
			if ((c = listen_open(cfg.database_url, "fleet_leases")) == NULL) {
				listen_wait(NULL, LEASE_TURN_MS);
				continue;
			}
		}
		if (!turn(c) && PQstatus(c) != CONNECTION_OK) {
			PQfinish(c);
			c = NULL;
			continue;
		}
		listen_wait(c, LEASE_TURN_MS);
	}
	if (c != NULL) {
		leave(c);
		PQfinish(c);
	} else {
		publish(NULL, 0, 0);
	}
	return NULL;
}

bool
lease_start(struct err *e)
{
	bool ok = true;

	pthread_mutex_lock(&L.mu);
	if (L.users++ == 0)
		ok = worker_thread_start(&L.th, loop, "lease.start", "cannot start the lease thread",
		    e);
	if (!ok)
		L.users--;
	pthread_mutex_unlock(&L.mu);
	return ok;
}

void
lease_stop(void)
{
	bool last;

	pthread_mutex_lock(&L.mu);
	last = L.users > 0 && --L.users == 0;
	pthread_mutex_unlock(&L.mu);
	if (last)
		worker_thread_stop(&L.th);
}

void
lease_metrics(char **buf, size_t *len, size_t *cap)
{
	size_t n;

	pthread_mutex_lock(&L.mu);
	n = mono_s() < L.until ? L.n : 0;
	pthread_mutex_unlock(&L.mu);
	textbuf_appendf(buf, len, cap,
	    "# HELP fleetd_leases_held Member clusters whose lease this replica holds.\n"
	    "# TYPE fleetd_leases_held gauge\nfleetd_leases_held %zu\n"
	    "# HELP fleetd_leases_taken_total Cluster leases this replica took (unheld or expired).\n"
	    "# TYPE fleetd_leases_taken_total counter\nfleetd_leases_taken_total %lu\n"
	    "# HELP fleetd_leases_released_total Cluster leases handed back beyond the fair share.\n"
	    "# TYPE fleetd_leases_released_total counter\nfleetd_leases_released_total %lu\n"
	    "# HELP fleetd_lease_fence_refusals_total Writes refused because the lease was lost.\n"
	    "# TYPE fleetd_lease_fence_refusals_total counter\nfleetd_lease_fence_refusals_total %lu\n"
	    "# HELP fleetd_lease_turns_total Lease turns completed.\n"
	    "# TYPE fleetd_lease_turns_total counter\nfleetd_lease_turns_total %lu\n",
	    n, atomic_load(&L.taken), atomic_load(&L.released), atomic_load(&L.lost),
	    atomic_load(&L.turns));
}
