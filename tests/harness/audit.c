/* audit: what the audit log must hold.  A test notes each write it expects, in order
 * (harness_audit_expect), and checks the log against the list once (harness_audit_check):
 * the same rows in the same order, each with an environment, an actor and a request id. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include <libpq-fe.h>

#include "tests/harness/harness.h"

#define MAX_AUDIT	128

static struct {
	char	action[40], id[40];
} want[MAX_AUDIT];
static int nwant;

void
harness_audit_expect(const char *action, const char *id)
{
	if (nwant == MAX_AUDIT)
		fail_msg("more than %d expected audit rows", MAX_AUDIT);
	snprintf(want[nwant].action, sizeof(want[0].action), "%s", action);
	snprintf(want[nwant].id, sizeof(want[0].id), "%s", id);
	nwant++;
}

int
harness_audit_check(const char *types)
{
	PGresult *r = harness_sql_result("SELECT action, resource_id, coalesce(environment, ''),"
	    " actor_name, coalesce(request_id, ''), actor_id IS NOT NULL FROM audit_log"
	    " WHERE resource_type IN (%s) ORDER BY id", types);
	int n = PQntuples(r);

	for (int i = 0; i < n || i < nwant; i++) {
		const char *a = i < n ? PQgetvalue(r, i, 0) : "(none)";
		const char *id = i < n ? PQgetvalue(r, i, 1) : "";

		if (i >= nwant || strcmp(a, want[i].action) != 0 || strcmp(id, want[i].id) != 0)
			fail_msg("audit row %d: have %s %s, want %s %s", i, a, id,
			    i < nwant ? want[i].action : "(none)", i < nwant ? want[i].id : "");
		if (PQgetvalue(r, i, 2)[0] == '\0' || PQgetvalue(r, i, 3)[0] == '\0' ||
		    PQgetvalue(r, i, 4)[0] == '\0' || strcmp(PQgetvalue(r, i, 5), "t") != 0)
			fail_msg("audit row %d (%s %s) lacks environment, actor or request id", i,
			    a, id);
	}
	PQclear(r);
	return n;
}

long
harness_audit_count(const char *token, const char *id, const char *action)
{
	json_t *page = harness_get_ok(token, "/v1/audit?resource_id=%s&limit=200", id), *x;
	long n = 0;
	size_t i;

	json_array_foreach(json_object_get(page, "items"), i, x)
		n += strcmp(harness_js(x, "action"), action) == 0;
	return n;
}
