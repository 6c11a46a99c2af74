/* delivery: the outbox of the webhooks.  The fan-out and the claim are one statement each;
 * a claimed delivery's next_at is pushed past the send's timeout (its lease), so when a
 * replica dies mid-send another sends it again (at least once).  Sends run with no
 * transaction open; outcomes are recorded in a new one. */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/config.h"
#include "core/crypto.h"
#include "core/http.h"
#include "core/log.h"
#include "core/textbuf.h"
#include "core/ticker.h"
#include "queue/hooks/delivery.h"
#include "queue/hooks/webhook.h"
#include "regions/cluster.h"
#include "queue/jobs/events.h"

#define CLAIM_MAX	32	/* deliveries claimed at once */
#define FANOUT_MAX	"5000"	/* events copied per endpoint and round */
#define ROUND_CLAIMS	50	/* claims per round, so that a stop is not kept waiting */

static struct {
	atomic_ulong	rounds, fanned, delivered, failed, dead, errors;
} M;

/* One claimed delivery on its way. */
struct slot {
	const char	*id, *webhook, *seq, *url, *payload;	/* borrowed from the claim */
	int		 attempts;
	char		 sig[WEBHOOK_SIG_MAX];
	long		 status;	/* HTTP status, 0 when none arrived */
	char		 error[48];	/* why not delivered: a stable code, "" when it was */
};

static bool
fanout_tx(struct db *c, void *arg, struct err *e)
{
	static const char sql[] =
	    "WITH w AS (SELECT id, environment, team, types, cursor,"
	    "  least($2::bigint, cursor + $1::bigint) AS upto FROM webhooks"
	    "  WHERE cursor < $2::bigint ORDER BY id FOR UPDATE SKIP LOCKED),"
	    " ins AS (INSERT INTO webhook_deliveries (webhook_id, seq, job_id, type, payload)"
	    "  SELECT w.id, v.seq, v.job_id, x.t, json_build_object('id', v.seq, 'type', x.t,"
	    "   'job_id', v.job_id, 'job_name', j.name, 'environment', j.environment,"
	    "   'team', j.spec->'labels'->>'team', 'event', v.type, 'from_state', v.from_state,"
	    "   'to_state', v.to_state, 'attempt', v.attempt, 'message', v.message,"
	    "   'failure_class', v.data->>'failure_class', 'data', v.data,"
	    "   'occurred_at', v.at)::text"
	    "  FROM w JOIN job_events v ON v.seq > w.cursor AND v.seq <= w.upto"
	    "  JOIN jobs j ON j.id = v.job_id"
	    "  CROSS JOIN LATERAL (SELECT webhook_event_type(v.type, v.to_state) AS t) x"
	    "  WHERE j.environment = w.environment"
	    "   AND (w.team IS NULL OR j.spec->'labels'->>'team' = w.team)"
	    "   AND ('*' = ANY(w.types) OR x.t = ANY(w.types)"
	    "    OR (x.t = 'job.failed' AND 'job.state_changed' = ANY(w.types)))"
	    "  ORDER BY w.id, v.seq RETURNING 1),"
	    " upd AS (UPDATE webhooks k SET cursor = w.upto FROM w WHERE k.id = w.id RETURNING 1)"
	    " SELECT (SELECT count(*) FROM ins), (SELECT count(*) FROM upd)";
	long long *copied = arg, head;
	PGresult *r = NULL;
	char h[24];
	const char *p[2] = { FANOUT_MAX, h };

	if (!events_head(c, &head, e))
		return false;
	snprintf(h, sizeof(h), "%lld", head);
	if (!db_exec(c, sql, 2, p, &r, e))
		return false;
	*copied = strtoll(PQgetvalue(r, 0, 0), NULL, 10);
	PQclear(r);
	return true;
}

bool
delivery_fanout(long long *copied, struct err *e)
{
	long long head;
	int numbered;

	*copied = 0;
	/* number what committed (the SSE hub does the same; they serialize) */
	if (!events_sequence(&head, &numbered, e) || !db_tx(fanout_tx, copied, e))
		return false;
	atomic_fetch_add(&M.fanned, (unsigned long)*copied);
	return true;
}

long
delivery_backoff_ms(int n, long base, long max, unsigned r)
{
	long d = base > 0 ? base : 1000;

	for (int i = 1; i < n && d < max; i++)
		d *= 2;
	if (d > max)
		d = max;
	return d / 2 + (long)(r % (unsigned)(d / 2 + 1));
}

static void
done(struct http_batch *b, const struct http_req *req, struct http_resp *resp,
    const struct err *e)
{
	struct slot *s = req->user;

	(void)b;
	s->status = resp->status;
	if (e != NULL)
		snprintf(s->error, sizeof(s->error), "%s", e->code);
	else if (resp->status < 200 || resp->status > 299)
		snprintf(s->error, sizeof(s->error), "http.status");
	else
		s->error[0] = '\0';	/* delivered */
}

/* Signs slot s with its endpoint's secrets (the previous one too while valid). */
static bool
sign(struct slot *s, const char *sealed, const char *prev_sealed, struct err *e)
{
	char *sec = cluster_open(s->webhook, sealed, e), *prev = NULL;

	if (sec == NULL)
		return false;
	if (prev_sealed != NULL && (prev = cluster_open(s->webhook, prev_sealed, e)) == NULL) {
		memset(sec, 0, strlen(sec));
		free(sec);
		return false;
	}
	webhook_sign(sec, prev, (long long)time(NULL), s->payload, strlen(s->payload), s->sig);
	memset(sec, 0, strlen(sec));
	free(sec);
	if (prev != NULL)
		memset(prev, 0, strlen(prev));
	free(prev);
	return true;
}

static bool
record_tx(struct db *c, void *arg, struct err *e)
{
	static const char sql_ok[] = "UPDATE webhook_deliveries SET state = 'delivered',"
	    " last_status = $2::int, last_error = NULL, updated_at = now()"
	    " WHERE id = $1::bigint AND state = 'pending'";
	static const char sql_fail[] = "UPDATE webhook_deliveries SET state = CASE WHEN"
	    " attempts >= $3::int THEN 'dead' ELSE 'pending' END, next_at = now() +"
	    " make_interval(secs => $4::double precision / 1000), last_status = nullif($2::int, 0),"
	    " last_error = $5, updated_at = now() WHERE id = $1::bigint AND state = 'pending'"
	    " RETURNING state";
	struct slot *slots = ((void **)arg)[0];
	int n = *(int *)((void **)arg)[1];

	for (int i = 0; i < n; i++) {
		struct slot *s = &slots[i];
		char st[16], max[16], delay[24];
		const char *p[5] = { s->id, st, max, delay, s->error };
		PGresult *r = NULL;
		unsigned rnd = 0;

		snprintf(st, sizeof(st), "%ld", s->status);
		if (s->error[0] == '\0') {
			if (!db_exec(c, sql_ok, 2, p, NULL, e))
				return false;
			continue;
		}
		crypto_random(&rnd, sizeof(rnd));
		snprintf(max, sizeof(max), "%d", cfg.webhook_max_attempts);
		snprintf(delay, sizeof(delay), "%ld", delivery_backoff_ms(s->attempts,
		    cfg.webhook_backoff_ms, cfg.webhook_backoff_max_ms, rnd));
		if (!db_exec(c, sql_fail, 5, p, &r, e))
			return false;
		if (PQntuples(r) > 0 && strcmp(PQgetvalue(r, 0, 0), "dead") == 0)
			s->attempts = -1;	/* counted as dead below */
		PQclear(r);
	}
	return true;
}

/* Sends the n claimed rows of r in one batch; fills each slot's outcome. */
static void
send_all(PGresult *r, struct slot *slots, int n)
{
	static const struct http_header fixed[] = {
		{ "Content-Type", "application/json" }, { "User-Agent", "fleetd-webhooks/1" },
	};
	struct http_batch *b = http_batch_new(8);
	struct err e = { 0 };

	for (int i = 0; i < n; i++) {
		struct slot *s = &slots[i];
		struct http_header h[5] = { fixed[0], fixed[1] };
		struct http_req req = { 0 };

		s->id = PQgetvalue(r, i, 0);
		s->webhook = PQgetvalue(r, i, 1);
		s->seq = PQgetvalue(r, i, 2);
		s->attempts = atoi(PQgetvalue(r, i, 3));
		s->payload = PQgetvalue(r, i, 4);
		s->url = PQgetvalue(r, i, 5);
		if (!sign(s, PQgetvalue(r, i, 6), PQgetisnull(r, i, 7) ? NULL :
		    PQgetvalue(r, i, 7), &e)) {
			snprintf(s->error, sizeof(s->error), "%s", e.code);
			atomic_fetch_add(&M.errors, 1);
			continue;
		}
		h[2] = (struct http_header){ "Fleet-Signature", s->sig };
		h[3] = (struct http_header){ "Fleet-Event-Id", s->seq };
		h[4] = (struct http_header){ "Fleet-Delivery-Id", s->id };
		req.method = "POST";
		req.url = s->url;
		req.headers = h;
		req.nheaders = 5;
		req.body = s->payload;
		req.body_len = strlen(s->payload);
		req.timeout_ms = cfg.webhook_timeout_ms > 0 ? cfg.webhook_timeout_ms : 10000;
		req.done = done;
		req.user = s;
		snprintf(s->error, sizeof(s->error), "http.not_sent");	/* until done() */
		if (b != NULL)
			http_batch_add(b, &req, &e);
	}
	if (b != NULL && !http_batch_run(b, &e))
		log_warn(NULL, "webhooks", "send batch failed", "{s:s}", "code", e.code);
	http_batch_free(b);
}

bool
delivery_send_due(int *sent, struct err *e)
{
	static const char sql[] =
	    "UPDATE webhook_deliveries d SET attempts = d.attempts + 1, updated_at = now(),"
	    "  next_at = now() + make_interval(secs => $2::int)"
	    " FROM webhooks w WHERE w.id = d.webhook_id AND d.id IN (SELECT c.id"
	    "  FROM webhook_deliveries c WHERE c.state = 'pending' AND c.next_at <= now()"
	    "   AND NOT EXISTS (SELECT 1 FROM webhook_deliveries p WHERE p.webhook_id ="
	    "    c.webhook_id AND p.job_id = c.job_id AND p.state = 'pending'"
	    "    AND (p.seq, p.id) < (c.seq, c.id))"
	    "  ORDER BY c.next_at, c.id LIMIT $1::int FOR UPDATE SKIP LOCKED)"
	    " RETURNING d.id::text, d.webhook_id::text, d.seq::text, d.attempts, d.payload,"
	    "  w.url, w.secret_sealed, CASE WHEN w.prev_secret_until > now() THEN"
	    "  w.prev_secret_sealed END";
	char lim[16], lease[16];
	const char *p[2] = { lim, lease };
	struct slot *slots = NULL;
	PGresult *r = NULL;
	bool ok = false;
	int n;

	*sent = 0;
	snprintf(lim, sizeof(lim), "%d", CLAIM_MAX);
	/* the lease: past the send's timeout, so only a dead sender's rows come back */
	snprintf(lease, sizeof(lease), "%d", (cfg.webhook_timeout_ms > 0 ?
	    cfg.webhook_timeout_ms : 10000) / 1000 + 30);
	if (!db_claim(sql, 2, p, &r, e))
		return false;
	n = PQntuples(r);
	if (n == 0) {
		ok = true;
		goto cleanup;
	}
	slots = calloc((size_t)n, sizeof(*slots));
	send_all(r, slots, n);
	{
		void *arg[2] = { slots, &n };

		if (!db_tx(record_tx, arg, e))
			goto cleanup;
	}
	for (int i = 0; i < n; i++) {
		if (slots[i].error[0] == '\0')
			atomic_fetch_add(&M.delivered, 1);
		else
			atomic_fetch_add(&M.failed, 1);
		if (slots[i].attempts < 0)
			atomic_fetch_add(&M.dead, 1);
	}
	*sent = n;
	ok = true;
cleanup:
	free(slots);
	PQclear(r);
	return ok;
}

static void
round_(void)
{
	struct err e = { 0 };
	long long copied;
	int sent = 1;

	atomic_fetch_add(&M.rounds, 1);
	if (!delivery_fanout(&copied, &e))
		log_warn(NULL, "webhooks", "fan-out failed", "{s:s}", "code", e.code);
	for (int i = 0; i < ROUND_CLAIMS && sent > 0; i++) {
		if (!delivery_send_due(&sent, &e)) {
			log_warn(NULL, "webhooks", "send failed", "{s:s}", "code", e.code);
			break;
		}
	}
}

static long
period_ms(void)
{
	return cfg.webhook_interval_ms > 0 ? cfg.webhook_interval_ms : 1000;
}

static struct ticker ticker = TICKER_INIT(round_, period_ms);

bool
delivery_start(struct err *e)
{
	return ticker_start(&ticker, "webhooks.start", "cannot start the webhooks thread", e);
}

void
delivery_stop(void)
{
	ticker_stop(&ticker);
}

void
delivery_metrics(char **buf, size_t *len, size_t *cap)
{
	textbuf_appendf(buf, len, cap,
	    "# HELP fleetd_webhook_rounds_total Rounds of the webhooks worker on this replica.\n"
	    "# TYPE fleetd_webhook_rounds_total counter\nfleetd_webhook_rounds_total %lu\n"
	    "# HELP fleetd_webhook_fanned_out_total Deliveries the fan-out put in outboxes.\n"
	    "# TYPE fleetd_webhook_fanned_out_total counter\nfleetd_webhook_fanned_out_total %lu\n"
	    "# HELP fleetd_webhook_attempts_total Delivery attempts, by outcome.\n"
	    "# TYPE fleetd_webhook_attempts_total counter\n"
	    "fleetd_webhook_attempts_total{outcome=\"delivered\"} %lu\n"
	    "fleetd_webhook_attempts_total{outcome=\"failed\"} %lu\n"
	    "# HELP fleetd_webhook_dead_total Deliveries dead-lettered after their last attempt.\n"
	    "# TYPE fleetd_webhook_dead_total counter\nfleetd_webhook_dead_total %lu\n"
	    "# HELP fleetd_webhook_sign_errors_total Deliveries that could not be signed (no master"
	    " key).\n"
	    "# TYPE fleetd_webhook_sign_errors_total counter\nfleetd_webhook_sign_errors_total %lu\n",
	    atomic_load(&M.rounds), atomic_load(&M.fanned), atomic_load(&M.delivered),
	    atomic_load(&M.failed), atomic_load(&M.dead), atomic_load(&M.errors));
}
