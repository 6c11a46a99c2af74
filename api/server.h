/* server: libmicrohttpd callbacks, per-request state, dispatch through the route table,
 * problem+json answers.  Only api/ includes this file. */
#ifndef FLEET_API_SERVER_H
#define FLEET_API_SERVER_H

#include <stdbool.h>
#include <stddef.h>
#include <time.h>

#include <jansson.h>

#include "core/arena.h"
#include "core/audit.h"
#include "core/db.h"
#include "core/err.h"

enum role { ROLE_NONE = 0, ROLE_VIEWER, ROLE_SUBMITTER, ROLE_OPERATOR, ROLE_ADMIN };

struct request;
struct sse_stream;
typedef bool (*handler_fn)(struct request *rq, struct err *e);

enum route_flags {
	R_PUBLIC	= 1 << 0,	/* no bearer token needed */
	R_NOTX		= 1 << 1,	/* handler manages its own transactions (network calls) */
	R_BODY		= 1 << 2,	/* takes a JSON object body */
	R_RAW		= 1 << 3,	/* answers rq->raw, not JSON */
	R_GLOBAL	= 1 << 4,	/* writes an object of no environment: '*' tokens only */
	R_BODY_OPT	= 1 << 5,	/* takes a JSON object body when one is sent */
	R_METRICS	= 1 << 6,	/* the metrics token or a token for every environment */
	R_TEAM		= 1 << 7,	/* open to a role held in a team: the handler checks
					 * the team, or the route shows no team's objects */
};

struct route {
	const char	*method;
	const char	*pattern;	/* "/v1/environments/{name}" */
	handler_fn	 fn;
	enum role	 min_role;
	int		 flags;
};

#define MAX_PARAMS 6

struct request {
	struct arena	*arena;
	void		*conn;		/* struct MHD_Connection * */
	char		 id[64];	/* request id, echoed as X-Request-Id */
	const char	*method;
	const char	*path;
	const struct route *route;
	const char	*param_names[MAX_PARAMS];
	const char	*param_values[MAX_PARAMS];
	int		 nparams;
	char		*body;
	size_t		 body_len;
	size_t		 body_cap;
	bool		 body_too_large;
	bool		 body_over_budget;	/* FLEETD_BODY_MEMORY_LIMIT reached: 503 */
	bool		 answered;	/* a response is queued (maybe before the body) */
	json_t		*json;		/* parsed body when the route takes one */
	struct db	*db;		/* open transaction unless the route is R_NOTX */
	struct actor	 actor;		/* who called (token id, name) */
	enum role	 role;
	const char	*team;		/* the team the role is held in (rq->actor.team), NULL
					 * for a role held in environments */
	const char	*const *envs;	/* environments the token may see; "*" = all */
	int		 nenvs;
	long long	 auth_expires;	/* when the credential ends (unix s), 0 = never */
	bool		 auth_oidc;	/* an OIDC access token (actor.id names the user) */
	struct timespec	 start;
	/* answer */
	int		 status;
	json_t		*reply;		/* owned; serialized at the end */
	const char	*location;
	const char	*etag;
	const char	*content_type;
	const char	*raw;		/* R_RAW body (arena or static) */
	size_t		 raw_len;
	const char	*allow;		/* Allow header of a 405 */
	int		 retry_after;	/* Retry-After seconds of a 503 */
	const char	*idem_key;	/* Idempotency-Key to record after success */
	bool		 replayed;	/* the answer is a stored one (Idempotent-Replayed) */
	struct sse_stream *sse;		/* a text/event-stream answer (api/sse.c) */
	char		 body_sha[65];
};

/* Route parameters and query strings, NULL when absent. */
const char	*rq_param(struct request *rq, const char *name);
const char	*rq_query(struct request *rq, const char *name);
const char	*rq_header(struct request *rq, const char *name);
/* Is env visible to the caller's token? */
bool		 rq_env_visible(struct request *rq, const char *env);
/* Is an object of team (NULL: environment-wide) visible to the caller?  A caller holding
 * an environment role sees every team; one holding its role in a team sees that team's
 * objects only (everything else is 404 to it). */
bool		 rq_team_visible(struct request *rq, const char *team);
/* The caller holds its role in a team (rq->team). */
bool		 rq_in_team(struct request *rq);
/* Sets a 2xx JSON answer (steals reply). */
void		 rq_reply(struct request *rq, int status, json_t *reply);
/* Sets a 2xx answer that is JSON text already (in the arena or static), sent as it is. */
void		 rq_reply_text(struct request *rq, int status, const char *json, size_t len);
/* Answers a problem+json with a list of per-field errors (steals errors); for checks that
 * fail several ways at once (422 of phase 2).  The handler then returns true. */
void		 rq_problem(struct request *rq, int status, const char *code, const char *title,
		    const char *detail, json_t *errors);
/* 2xx answer of one object: ETag from its version and, for 201, Location
 * collection + "/" + its id (steals obj). */
void		 rq_reply_object(struct request *rq, int status, json_t *obj,
		    const char *collection);
/* Paging: parses limit (1..500, default 100) and the opaque after cursor. */
bool		 rq_page(struct request *rq, int *limit, const char **after, struct err *e);
/* A list's answer: {"items": items (stolen; the extra row fetched past limit dropped),
 * "next": link or null}.  key_of names the member of the last item that is the cursor. */
json_t		*rq_page_reply(struct request *rq, json_t *items, int limit, const char *key_of);
/* If-Match against the object's version: 412 on mismatch, true when absent. */
bool		 rq_if_match(struct request *rq, long version, struct err *e);
/* ETag header value for a version, arena-allocated. */
const char	*rq_etag(struct request *rq, long version);

bool	server_start(struct err *e);
void	server_stop(void);		/* quiesce, wait for in-flight requests, stop */
int	server_port(void);

/* Idempotency-Key (idem.c): replay a stored answer, or record this one.  Both run
 * inside the request's transaction. */
bool	idem_before(struct request *rq, struct err *e);
bool	idem_after(struct request *rq, struct err *e);

/* route table (router.c) */
extern const struct route routes[];
extern const size_t nroutes;
/* Finds the route for method+path; 404/405 (with allow filled) otherwise. */
const struct route *router_match(struct request *rq, char *allow, size_t allowlen,
	    struct err *e);

#endif
