/* webhook: the rows of webhook endpoints (per environment, optionally per team), their
 * checks, sealed secrets and signatures.  Delivery (fan-out, sending) is delivery.c. */
#ifndef FLEET_QUEUE_WEBHOOK_H
#define FLEET_QUEUE_WEBHOOK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "core/db.h"
#include "core/err.h"

#define WEBHOOK_GRACE_DEFAULT_S	86400	/* a rotated-out secret signs this long */
#define WEBHOOK_GRACE_MAX_S	(7 * 86400)
#define WEBHOOK_SIG_MAX		256	/* "t=<unix>,v1=<64 hex>[,v1=<64 hex>]" */

/* Whether url may be an endpoint: https://host[:port][/path], or http:// to a loopback
 * host (127.0.0.1, ::1, localhost: tests and development).  No userinfo.  On failure 422
 * at /url with the reason. */
bool	webhook_url_ok(const char *url, struct err *e);
/* Whether t is a webhook event type ("*", "job.submitted", "job.state_changed",
 * "job.failed", "job.operation", "job.event", "budget.threshold"). */
bool	webhook_type_known(const char *t);

/* Creates an endpoint from body {environment, url, types, team?, description?}; *out is
 * the row (never the secret) and *secret the new secret (malloc'd, shown once).  On
 * failure nothing is set. */
bool	webhook_create(struct db *c, json_t *body, json_t **out, char **secret, struct err *e);
bool	webhook_get(struct db *c, const char *id, bool lock, json_t **out, struct err *e);
bool	webhook_list(struct db *c, int limit, const char *after, const char *environment,
	    const char *const *envs, int nenvs, json_t **out, struct err *e);
bool	webhook_delete(struct db *c, const char *id, struct err *e);
/* A new secret (*secret, malloc'd); the old one keeps signing for grace_s seconds. */
bool	webhook_rotate(struct db *c, const char *id, long grace_s, json_t **out, char **secret,
	    struct err *e);
/* Re-queues events from seq from_event on: the endpoint's cursor moves back to
 * from_event - 1 (never forward) and the fan-out copies them again. */
bool	webhook_replay(struct db *c, const char *id, long long from_event, json_t **out,
	    struct err *e);
/* Deliveries of endpoint id in state (NULL: any), id order after the cursor, within the
 * caller's environments envs (NULL or "*": all). */
bool	webhook_deliveries(struct db *c, const char *id, const char *state, int limit,
	    const char *after, const char *const *envs, int nenvs, json_t **out, struct err *e);

/* The Fleet-Signature value for body sent at ts: "t=<ts>,v1=<hex HMAC-SHA256 of
 * "<ts>.<body>" keyed with secret>", and a second v1= with prev when not NULL. */
void	webhook_sign(const char *secret, const char *prev, long long ts, const char *body,
	    size_t len, char out[WEBHOOK_SIG_MAX]);

#endif
