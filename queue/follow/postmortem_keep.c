/* postmortem_keep: the post-mortem of an attempt about to be deleted when the status worker
 * did not keep one as it ended (a cancel, the orphan sweep): reads the attempt's pods and
 * their Warning events from the member and records them (queue/follow/status_postmortem.c
 * says what and how much).  Network first, then one statement; never fails the caller. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/jsonx.h"
#include "core/log.h"
#include "queue/follow/status.h"
#include "queue/member.h"

static bool
kept(struct db *c, const char *job, const char *attempt)
{
	static const char sql[] = "SELECT 1 FROM job_postmortems WHERE job_id = $1::uuid AND"
	    " attempt = $2::int";
	const char *p[2] = { job, attempt };
	struct err e = { 0 };
	PGresult *r = NULL;
	bool yes = true;	/* unreadable: do not list the member for nothing */

	if (db_exec(c, sql, 2, p, &r, &e))
		yes = PQntuples(r) > 0;
	PQclear(r);
	return yes;
}

void
status_postmortem_keep(const struct member *t, const char *job, int attempt, const char *ns,
    const char *kind, const char *trigger)
{
	static const char sql[] = "INSERT INTO job_postmortems (job_id, attempt, cluster_id,"
	    " trigger, record) SELECT j.id, $2::int, $3::uuid, $4, $5::jsonb ||"
	    " jsonb_build_object('timings', jsonb_build_object('enqueued_at', j.enqueued_at,"
	    " 'dispatched_at', j.dispatched_at, 'started_at', j.started_at, 'finished_at',"
	    " j.finished_at, 'recorded_at', now()), 'state', j.state, 'reason', j.reason,"
	    " 'checkpoint', j.checkpoint) FROM jobs j WHERE j.id = $1::uuid"
	    " ON CONFLICT (job_id, attempt) DO NOTHING";
	struct err e = { 0 };
	struct db *c = db_acquire(5000, &e);
	json_t *pods = NULL, *events = NULL, *mine = json_array(), *rec = NULL, *ev;
	char at[16], path[256], sel[200], *txt = NULL;
	size_t i;

	snprintf(at, sizeof(at), "%d", attempt);
	if (c == NULL || kept(c, job, at))
		goto cleanup;
	db_release(c);	/* no connection held across the member's calls */
	c = NULL;
	snprintf(path, sizeof(path), "/api/v1/namespaces/%s/pods", ns);
	snprintf(sel, sizeof(sel), "labelSelector=fleet.io%%2Fjob-id%%3D%s%%2Cfleet.io%%2F"
	    "attempt%%3D%d", job, attempt);
	if (!member_list(&t->pc, path, sel, &pods, &e))
		goto cleanup;
	snprintf(path, sizeof(path), "/api/v1/namespaces/%s/events", ns);
	if (!member_list(&t->pc, path, "fieldSelector=type%3DWarning", &events, &e))
		goto cleanup;
	json_array_foreach(events, i, ev) {
		const char *who = json_string_value(json_object_get(json_object_get(ev,
		    "involvedObject"), "name"));
		json_t *p;
		size_t k;

		json_array_foreach(pods, k, p)
			if (who != NULL && strcmp(who, jsonx_meta_str(p, "name")) == 0)
				json_array_append(mine, ev);
	}
	{
		json_t *findings = status_classify(pods, NULL, mine, NULL);

		rec = status_postmortem(pods, mine, NULL, kind, NULL, trigger, "", findings);
		json_decref(findings);
	}
	txt = json_dumps(rec, JSON_COMPACT);
	{
		const char *p[5] = { job, at, t->id, trigger, txt };

		if (txt == NULL || (c = db_acquire(5000, &e)) == NULL ||
		    !db_exec(c, sql, 5, p, NULL, &e))
			goto cleanup;
	}
cleanup:
	if (e.code[0] != '\0')
		log_warn(NULL, "status", "post-mortem not kept", "{s:s, s:i, s:s}", "job", job,
		    "attempt", attempt, "error", e.msg);
	free(txt);
	json_decref(rec);
	json_decref(pods);
	json_decref(events);
	json_decref(mine);
	db_release(c);
}
