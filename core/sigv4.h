/* sigv4: AWS Signature Version 4 — canonical request, string to sign, signature;
 * used by fleetd to sign and by cloudsim to verify, so both share one implementation. */
#ifndef FLEET_CORE_SIGV4_H
#define FLEET_CORE_SIGV4_H

#include <stdbool.h>
#include <stddef.h>

#include "core/err.h"

struct sigv4_header {
	const char	*name;
	const char	*value;
};

struct sigv4_request {
	const char		*method;	/* "GET" */
	const char		*path;		/* raw path as sent, e.g. "/a%20b" */
	const char		*query;		/* raw query without '?', may be NULL */
	const struct sigv4_header *headers;	/* as sent (any case, untrimmed) */
	size_t			 nheaders;
	const void		*payload;
	size_t			 payload_len;
	const char		*payload_hash;	/* hex sha256 or "UNSIGNED-PAYLOAD"; NULL: hash payload */
};

struct sigv4_key {
	const char	*access_key;
	const char	*secret_key;
	const char	*region;	/* "us-east-1" */
	const char	*service;	/* "sts", "sagemaker", "iam" */
	const char	*amz_date;	/* "20150830T123600Z" */
};

/* Each out string is malloc'd and owned by the caller.
 * signed_headers: ";"-joined lowercase names, e.g. "host;x-amz-date"; NULL = all. */
char	*sigv4_canonical_request(const struct sigv4_request *rq, const char *signed_headers);
char	*sigv4_string_to_sign(const struct sigv4_key *k, const char *canonical_request);
/* hex signature (64 chars + NUL) */
void	 sigv4_signature(const struct sigv4_key *k, const char *string_to_sign, char out[65]);
/* Full "AWS4-HMAC-SHA256 Credential=..., SignedHeaders=..., Signature=..." value. */
char	*sigv4_authorization(const struct sigv4_key *k, const struct sigv4_request *rq,
	    const char *signed_headers);

/* Parsed Authorization header (borrowed copies inside, freed by sigv4_auth_cleanup). */
struct sigv4_auth {
	char	*access_key;
	char	*date;		/* yyyymmdd of the credential scope */
	char	*region;
	char	*service;
	char	*signed_headers;
	char	*signature;
};
bool	sigv4_parse_authorization(const char *value, struct sigv4_auth *out, struct err *e);
void	sigv4_auth_cleanup(struct sigv4_auth *a);

#endif
