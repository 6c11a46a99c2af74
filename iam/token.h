/* token: API bearer tokens — created with a random secret shown once, stored as sha-256,
 * revocable; roles viewer < submitter < operator < admin, each limited to listed
 * environments, and a role below admin optionally held in one team (iam/team.h). */
#ifndef FLEET_IAM_TOKEN_H
#define FLEET_IAM_TOKEN_H

#include <stdbool.h>

#include <jansson.h>

#include "core/arena.h"
#include "core/db.h"
#include "core/err.h"

enum token_role { TOKEN_NONE = 0, TOKEN_VIEWER = 1, TOKEN_SUBMITTER = 2, TOKEN_OPERATOR = 3,
	TOKEN_ADMIN = 4 };

struct token_principal {
	char	 id[40];
	char	 name[128];
	int	 role;		/* enum token_role */
	char	**envs;		/* arena-owned */
	int	 nenvs;
	char	 team[64];	/* the team the role is held in (token's, or the OIDC group
				 * map's); "" for an environment role */
	long long expires;	/* unix seconds the credential ends (an OIDC token's exp);
				 * 0 = never (a static token lives until revoked) */
	bool	 oidc;		/* an OIDC access token: id names the user, not a token row */
};

int	 token_role_parse(const char *s);	/* TOKEN_NONE when unknown */
/* Creates a token; *secret (malloc'd, caller frees) is the only copy of the secret.
 * envs: array of names or ["*"]; team NULL or an existing team whose environments hold
 * every one of envs (422 at /team otherwise).  Returns the public object (new reference)
 * in *out. */
bool	 token_create(struct db *c, const char *name, const char *role, json_t *envs,
	    const char *team, char **secret, json_t **out, struct err *e);
/* The caller sees a token only when it may see every environment the token names (a
 * "*" token only by a "*" caller); others do not exist for it (404).  envs: the caller's. */
bool	 token_list(struct db *c, int limit, const char *after, const char *const *envs,
	    int nenvs, json_t **out, struct err *e);
/* One unrevoked token (FOR UPDATE when lock), whoever's; 404 token.not_found.  Who may
 * see it is the caller's business (api/h_token.c: every environment it names). */
bool	 token_get(struct db *c, const char *id, bool lock, json_t **out, struct err *e);
/* Revokes id (an unrevoked token) and tells every replica's cache. */
bool	 token_revoke(struct db *c, const char *id, struct err *e);
/* Looks the secret up (own pooled connection, short cache); 401 when unknown or revoked. */
bool	 token_authenticate(const char *secret, struct arena *a, struct token_principal *p,
	    struct err *e);
void	 token_cache_flush(void);
/* Revocation across replicas: a thread LISTENs on fleet_tokens (token_revoke NOTIFYs on
 * commit) and flushes the cache; without that connection nothing is cached. */
bool	 token_listen_start(const char *url, struct err *e);
void	 token_listen_stop(void);

#endif
