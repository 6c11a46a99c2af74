/* h_console: the web console at / — three static files read once from console_dir and
 * served with a strict Content-Security-Policy (no inline script or style, nothing from
 * another origin) — and GET /v1/whoami, which tells the console the token's role and
 * environments (so a viewer sees no operator buttons), and GET /v1/console/config, which
 * tells the console whether to offer "Log in with SSO" (authorization-code flow with PKCE at
 * the OIDC issuer, as the public client FLEETD_OIDC_CONSOLE_CLIENT_ID) and with what. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/handlers.h"
#include "core/config.h"
#include "core/textbuf.h"

static const struct {
	const char	*file;
	const char	*type;
} assets[] = {
	{ "index.html", "text/html; charset=utf-8" },
	{ "app.js", "text/javascript; charset=utf-8" },
	{ "app.css", "text/css; charset=utf-8" },
};
#define NASSETS (sizeof(assets) / sizeof(assets[0]))

static char *body[NASSETS];
static size_t blen[NASSETS];
static pthread_once_t once = PTHREAD_ONCE_INIT;

static void
load(void)
{
	for (size_t i = 0; i < NASSETS; i++) {
		char path[1024];

		snprintf(path, sizeof(path), "%s/%s", cfg.console_dir, assets[i].file);
		body[i] = textbuf_read_file(path, &blen[i]);
	}
}

static bool
serve(struct request *rq, size_t i, struct err *e)
{
	pthread_once(&once, load);
	if (body[i] == NULL)
		return err_set(e, 404, "console.missing", "the console is not installed");
	rq->raw = body[i];
	rq->raw_len = blen[i];
	rq->status = 200;
	rq->content_type = assets[i].type;
	return true;
}

HANDLER(h_console_index)
{
	return serve(rq, 0, e);
}

HANDLER(h_console_js)
{
	return serve(rq, 1, e);
}

HANDLER(h_console_css)
{
	return serve(rq, 2, e);
}

static char csp[1024];
static pthread_once_t csp_once = PTHREAD_ONCE_INIT;

static bool
sso_enabled(void)
{
	return cfg.oidc_issuer != NULL && cfg.oidc_console_client_id != NULL &&
	    cfg.oidc_console_client_id[0] != '\0';
}

/* The issuer's origin (scheme://host[:port]) into out; false when it is not an http(s) URL
 * or holds a character that could end a CSP source expression. */
static bool
issuer_origin(char *out, size_t n)
{
	const char *s = cfg.oidc_issuer, *p;
	size_t len;

	if (strncmp(s, "https://", 8) == 0)
		p = s + 8;
	else if (strncmp(s, "http://", 7) == 0)
		p = s + 7;
	else
		return false;
	len = (size_t)(p - s) + strcspn(p, "/?#");
	if (len == (size_t)(p - s) || len >= n)
		return false;
	for (size_t i = 0; i < len; i++)
		if (s[i] <= ' ' || s[i] == ';' || s[i] == ',' || s[i] == '\'' || s[i] == '"' ||
		    (unsigned char)s[i] >= 0x7f)
			return false;
	memcpy(out, s, len);
	out[len] = '\0';
	return true;
}

static void
csp_build(void)
{
	char origin[512] = "";

	if (sso_enabled() && !issuer_origin(origin, sizeof(origin)))
		origin[0] = '\0';
	/* the console: its own scripts, styles and API only (and, with SSO, the issuer's
	 * discovery document and token endpoint); no inline code, no frames */
	snprintf(csp, sizeof(csp),
	    "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'%s%s; "
	    "img-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
	    origin[0] ? " " : "", origin);
}

const char *
console_csp(void)
{
	pthread_once(&csp_once, csp_build);
	return csp;
}

HANDLER(h_console_config)
{
	char origin[512];

	(void)e;
	if (!sso_enabled() || !issuer_origin(origin, sizeof(origin))) {
		rq_reply(rq, 200, json_pack("{s:n}", "oidc"));
		return true;
	}
	rq_reply(rq, 200, json_pack("{s:{s:s, s:s, s:s, s:s*}}", "oidc", "issuer", cfg.oidc_issuer,
	    "client_id", cfg.oidc_console_client_id, "scope", cfg.oidc_console_scopes,
	    "resource", cfg.oidc_audience));
	return true;
}

HANDLER(h_whoami)
{
	static const char *const roles[] = { "none", "viewer", "submitter", "operator", "admin" };
	json_t *envs = json_array();

	(void)e;
	for (int i = 0; i < rq->nenvs; i++)
		json_array_append_new(envs, json_string(rq->envs[i]));
	rq_reply(rq, 200, json_pack("{s:s, s:s, s:s, s:o, s:s*}", "id", rq->actor.id, "name",
	    rq->actor.name, "role", roles[rq->role], "environments", envs, "team",
	    rq->actor.team[0] ? rq->actor.team : NULL));
	return true;
}
