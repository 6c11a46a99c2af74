/* oidc_int: the key set shared by iam/oidc.c (checks) and iam/oidc_keys.c (fetches). */
#ifndef FLEET_IAM_OIDC_INT_H
#define FLEET_IAM_OIDC_INT_H

#include <time.h>

#include "core/jwk.h"

struct oidc_key {
	struct jwk	*jwk;
	char		*thumb;		/* RFC 7638 thumbprint: the key's identity across fetches */
	time_t		 gone_at;	/* when it left the JWKS; 0 while listed */
};

struct oidc_keyset {
	struct oidc_key	*keys;
	int		 n;
};

#endif
