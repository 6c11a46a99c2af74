/* listen: select() on the connection's socket, then drain PQnotifies. */
#include <stdio.h>
#include <sys/select.h>

#include "core/listen.h"

PGconn *
listen_open(const char *url, const char *channel)
{
	PGconn *c = PQconnectdb(url);
	char *ident, sql[160];

	if (PQstatus(c) != CONNECTION_OK) {
		PQfinish(c);
		return NULL;
	}
	ident = PQescapeIdentifier(c, channel, 64);
	snprintf(sql, sizeof(sql), "LISTEN %s", ident ? ident : "\"\"");
	PQfreemem(ident);
	if (!listen_exec(c, sql, 0, NULL, PGRES_COMMAND_OK)) {
		PQfinish(c);
		return NULL;
	}
	return c;
}

bool
listen_exec(PGconn *c, const char *sql, int n, const char *const *params, ExecStatusType want)
{
	PGresult *r = PQexecParams(c, sql, n, NULL, params, NULL, NULL, 0);
	bool ok = PQresultStatus(r) == want;

	PQclear(r);
	return ok;
}

bool
listen_wait(PGconn *c, int ms)
{
	return listen_wait_payloads(c, ms, NULL);
}

bool
listen_wait_payloads(PGconn *c, int ms, json_t *into)
{
	int fd = c ? PQsocket(c) : -1;
	struct timeval tv = { ms / 1000, (ms % 1000) * 1000 };
	fd_set rs;
	PGnotify *n;
	bool got = false;

	FD_ZERO(&rs);
	if (fd >= 0)
		FD_SET(fd, &rs);
	if (select(fd + 1, &rs, NULL, NULL, &tv) > 0 && c != NULL)
		PQconsumeInput(c);
	while (c != NULL && (n = PQnotifies(c)) != NULL) {
		if (into != NULL && n->extra != NULL && n->extra[0] != '\0')
			json_object_set_new(into, n->extra, json_true());
		PQfreemem(n);
		got = true;
	}
	return got;
}

bool
listen_alive(PGconn *c)
{
	return c != NULL && PQstatus(c) == CONNECTION_OK;
}

void
listen_close(PGconn *c)
{
	if (c != NULL)
		PQfinish(c);
}
