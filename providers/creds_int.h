/* creds_int: helpers shared by creds.c, creds_flow.c and the drivers (not public API). */
#ifndef FLEET_PROVIDERS_CREDS_INT_H
#define FLEET_PROVIDERS_CREDS_INT_H

#include <stdbool.h>
#include <stddef.h>

#include "core/http.h"
#include "providers/provider.h"

bool	 creds_cache_get(const char *cloud, const char *role, struct prov_creds *out);
void	 creds_cache_put(const char *cloud, const char *role, const struct prov_creds *c);
/* RFC 3339 "2024-05-01T10:00:00[.123]Z" -> epoch seconds; 0 when unreadable. */
double	 creds_parse_time(const char *s);
/* application/x-www-form-urlencoded value; free with creds_form_free. */
char	*creds_form_escape(const char *s);
void	 creds_form_free(char *s);
bool	 creds_xml_text(const char *xml, size_t len, const char *tag, char *out, size_t n);
/* "Code: Message (status N)" from an AWS XML or JSON error answer. */
void	 creds_aws_error(const struct http_resp *r, char *out, size_t n);
/* "status N: message" from a Google, ARM or AAD JSON error answer. */
void	 creds_json_error(const struct http_resp *r, char *out, size_t n);
/* STS AssumeRole XML answer -> temporary credentials. */
bool	 prov_aws_parse_assume_role(const char *body, size_t len, struct prov_creds *out,
	    struct err *e);
/* Token endpoint answer {access_token, expires_in} or {accessToken, expireTime}. */
bool	 prov_parse_token(const char *body, size_t len, struct prov_creds *out, struct err *e);
/* fleetd's own ARM token in tenant (client secret; cached per tenant). */
bool	 creds_azure_arm_token(const char *tenant, struct prov_creds *out, struct err *e);

#endif
