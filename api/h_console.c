/* h_console: the web console at / — three static files read once from console_dir and
 * served with a strict Content-Security-Policy (no inline script or style, nothing from
 * another origin) — and GET /v1/whoami, which tells the console the token's role and
 * environments (so a viewer sees no operator buttons). */
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
