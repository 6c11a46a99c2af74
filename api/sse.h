/* sse: Server-Sent Event streams of job events.  One hub thread per replica polls (every
 * 250 ms, or at once on another replica's NOTIFY fleet_events) for new job_events, numbers
 * them (queue/jobs/events.c), keeps the recent ones in a ring and
 * resumes the suspended connections that have something to send; no thread waits per
 * stream (MHD_ALLOW_SUSPEND_RESUME). */
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
};

/* A stream for connection conn (struct MHD_Connection *); 429 "events.too_many_streams"
 * past the per-token or total bound. */
struct sse_stream *sse_open(const struct sse_opts *o, void *conn, struct err *e);
/* The MHD response (struct MHD_Response *) that plays the stream; it owns s from here. */
void	*sse_response(struct sse_stream *s);
/* Frees a stream that never became a response. */
void	 sse_discard(struct sse_stream *s);
bool	 sse_start(struct err *e);
/* Ends every stream (readers answer end of stream) and stops the hub thread. */
void	 sse_stop(void);

#endif
