/* sse: Server-Sent Event streams of job events.  One hub thread per replica polls (every
 * 250 ms, or at once on another replica's NOTIFY fleet_events) for new job_events, numbers
 * them (queue/jobs/events.c), keeps the recent ones in a ring and
 * resumes the suspended connections that have something to send; no thread waits per
 * stream (MHD_ALLOW_SUSPEND_RESUME).  A stream resumed from before the ring is replayed
 * from the database by one replay thread (never an HTTP worker), a batch per turn; a stream
 * of every job replays at most cfg.sse_replay_max events, then gets a `reset` event and
 * goes on live (a job's stream replays its one job's history whole).  Streams
 * end when their credential is revoked or expires, or when its role, team or
 * environments change. */
#ifndef FLEET_API_SSE_H
#define FLEET_API_SSE_H

#include <stdbool.h>

#include "core/err.h"

struct sse_stream;

struct sse_opts {
	const char	*token_id;	/* per-token bound */
	const char	*job_id;	/* NULL = every job */
	const char	*environment;	/* NULL = every environment in scope */
	const char	*const *envs;	/* the token's environments ("*" = all) */
	int		 nenvs;
	const char	*team;		/* the caller's team: only its queues' events; NULL = all */
	long long	 after;		/* first event sent is the first with seq > after */
	int		 role;		/* the caller's role (enum role) when it opened */
	bool		 oidc;		/* token_id names an OIDC user, not an api_tokens row */
	long long	 expires;	/* unix s the credential ends (the stream with it); 0 = never */
};

/* A stream for connection conn (struct MHD_Connection *); 429 "events.too_many_streams"
 * past the per-principal bound (cfg.sse_per_token, by default one less than the HTTP
 * threads; token_id counts an OIDC user's every token together) or the total bound. */
struct sse_stream *sse_open(const struct sse_opts *o, void *conn, struct err *e);
/* The MHD response (struct MHD_Response *) that plays the stream; it owns s from here. */
void	*sse_response(struct sse_stream *s);
/* Frees a stream that never became a response. */
void	 sse_discard(struct sse_stream *s);
bool	 sse_start(struct err *e);
/* Ends every stream (readers answer end of stream) and stops the hub thread. */
void	 sse_stop(void);
/* An OIDC user (id) authenticated with role, team (NULL: none) and envs: its streams
 * opened with other claims (its groups changed) end within a hub turn. */
void	 sse_principal_seen(const char *id, int role, const char *team,
	    const char *const *envs, int nenvs);
/* The per-principal bound in force. */
int	 sse_per_principal(void);

#endif
