/* oidc: access tokens (JWT) from the company's OpenID provider — keys from its discovery
 * document and JWKS, the token's signature and claims checked, its groups mapped to a role,
 * environments and a team.  A bearer that is not a JWT stays a static token (iam/token.c). */
#ifndef FLEET_IAM_OIDC_H
#define FLEET_IAM_OIDC_H

#include <stdbool.h>
#include <time.h>

#include <jansson.h>

#include "core/arena.h"
#include "core/err.h"
#include "iam/token.h"

/* One row of the group map: members of group get role in envs, and team. */
struct oidc_group {
	char	 *name;
	int	  role;		/* enum token_role */
	char	**envs;
	int	  nenvs;
	char	 *team;		/* NULL when the row names none */
};

/* What a token is checked against (from FLEETD_OIDC_*). */
struct oidc_policy {
	char			*issuer;
	char			*audience;
	char			*groups_claim;
	struct oidc_group	*groups;
	int			 ngroups;
	long			 leeway;	/* seconds of clock skew allowed on exp/nbf/iat */
	long			 grace;		/* seconds a key that left the JWKS still verifies */
};

/* Parses the group map: a JSON object {"group": {"role": "viewer|operator|admin",
 * "environments": ["dev", ...] or ["*"], "team": "ml"}}.  On failure fills e (the text
 * says which member) and leaves p's map empty. */
bool	oidc_policy_groups(struct oidc_policy *p, const char *map_json, struct err *e);
void	oidc_policy_cleanup(struct oidc_policy *p);

/* The keys of a JWKS as last seen, with when each left it. */
struct oidc_keyset;
struct oidc_keyset *oidc_keyset_new(void);
void	oidc_keyset_free(struct oidc_keyset *ks);	/* accepts NULL */
/* Merges a JWKS fetched at now: new keys are added, keys still listed stay (a key that
 * came back is live again), keys no longer listed are marked gone at now, refused
 * (auth.key_retired) past grace and forgotten a day later.  Members that are not usable signing keys are skipped; false (e set) when
 * the document is not a JWKS or holds no usable key. */
bool	oidc_keyset_merge(struct oidc_keyset *ks, json_t *jwks, time_t now, long grace,
	    struct err *e);
int	oidc_keyset_count(const struct oidc_keyset *ks);

/* Shape only: three base64url segments whose first decodes to a JSON object with "alg". */
bool	oidc_is_jwt(const char *token);
/* Checks token against p with the keys of ks at time now: header (alg allow-listed: RS256,
 * PS256, ES256; no crit), key (kid, or the one key fitting alg), signature, iss, aud, exp,
 * nbf, iat, sub.  Returns the claims (new reference) or NULL with e set to 401 and one of
 * auth.bad_token, auth.bad_alg, auth.unknown_key, auth.key_retired, auth.bad_signature,
 * auth.wrong_issuer, auth.wrong_audience, auth.token_expired, auth.token_not_yet_valid. */
json_t	*oidc_verify(const struct oidc_policy *p, const struct oidc_keyset *ks,
	    const char *token, time_t now, struct err *e);
/* The principal of verified claims: id a UUID derived from iss and sub, name the email
 * (else sub), and of the user's groups that the map names, the highest role, the union
 * of the environments of the rows granting that role, and the team of the first of them.
 * 403 auth.no_role when no group of the token is mapped.  Strings come from a. */
bool	oidc_principal(const struct oidc_policy *p, json_t *claims, struct arena *a,
	    struct token_principal *out, struct err *e);

/* The running service, from cfg.  oidc_start: nothing when no issuer is set; else parses
 * the settings (fails the start on a bad one) and tries discovery once (a provider that is
 * down does not stop fleetd; the first token retries). */
bool	oidc_start(struct err *e);
void	oidc_stop(void);
bool	oidc_enabled(void);
/* Verifies a JWT bearer: keys fetched when older than the max age, refetched once on an
 * unknown kid (at most every FLEETD_OIDC_REFRESH_MIN seconds); then oidc_principal. */
bool	oidc_authenticate(const char *token, struct arena *a, struct token_principal *out,
	    struct err *e);

#endif
