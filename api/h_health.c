/* h_health: liveness, readiness, metrics and the OpenAPI document. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/handlers.h"
#include "api/metrics.h"
#include "core/config.h"
#include "core/crypto.h"
#include "core/textbuf.h"
#include "core/migrate.h"

HANDLER(h_healthz)
{
	(void)e;
	rq_reply(rq, 200, json_pack("{s:s}", "status", "ok"));
	return true;
}

HANDLER(h_readyz)
{
	struct err dbe = { 0 };
	struct db *c = db_acquire(2000, &dbe);
	int pending = 0;

	(void)e;
	if (c == NULL) {
		rq_reply(rq, 503, json_pack("{s:s, s:s}", "status", "unavailable", "reason",
		    "database unreachable"));
		rq->retry_after = 2;
		return true;
	}
	if (!migrate_pending(c, cfg.migrations_dir, &pending, &dbe)) {
		db_release(c);
		rq_reply(rq, 503, json_pack("{s:s, s:s}", "status", "unavailable", "reason",
		    strcmp(dbe.code, "db.unavailable") == 0 ? "database unreachable" : dbe.msg));
		rq->retry_after = 2;
		return true;
	}
	db_release(c);
	if (pending > 0) {
		rq_reply(rq, 503, json_pack("{s:s, s:s, s:i}", "status", "unavailable",
		    "reason", "migrations pending", "pending", pending));
		return true;
	}
	rq_reply(rq, 200, json_pack("{s:s}", "status", "ready"));
	return true;
}

HANDLER(h_metrics)
{
	size_t len;
	char *text = metrics_render(&len);

	(void)e;
	rq->raw = arena_strndup(rq->arena, text, len);
	rq->raw_len = len;
	rq->status = 200;
	rq->content_type = "text/plain; version=0.0.4; charset=utf-8";
	free(text);
	return true;
}

static char *openapi_doc;
static size_t openapi_len;
static pthread_once_t openapi_once = PTHREAD_ONCE_INIT;

/* Reads the contract once; it lives as long as the process. */
static void
openapi_load(void)
{
	openapi_doc = textbuf_read_file(cfg.openapi_path, &openapi_len);
}

HANDLER(h_openapi)
{
	pthread_once(&openapi_once, openapi_load);
	if (openapi_doc == NULL)
		return err_set(e, 500, "api.no_openapi", "the openapi document is missing");
	rq->raw = openapi_doc;
	rq->raw_len = openapi_len;
	rq->status = 200;
	rq->content_type = "application/yaml";
	return true;
}
