/* job_text: a job and a page of jobs as JSON text straight from the rows (the read paths
 * of the API: no JSON built in SQL, nothing parsed and re-serialized). */
#ifndef FLEET_QUEUE_JOB_TEXT_H
#define FLEET_QUEUE_JOB_TEXT_H

#include <stdbool.h>
#include <stddef.h>

#include "core/db.h"
#include "core/err.h"
#include "queue/jobs/job.h"

struct arena;

#define JOB_TEXT_FROM JOB_FROM

struct job_text {
	char		*json;		/* the object of job_get, in the arena */
	size_t		 len;
	const char	*id, *environment;
	const char	*team;		/* its queue's team, NULL when environment-wide */
	long		 version;
};

struct job_page {
	char		*items;		/* "[...]" of at most limit objects, in the arena */
	size_t		 len;
	int		 count;		/* objects in items */
	bool		 more;		/* a row beyond limit exists */
	const char	*last_id;	/* id of the last object, NULL when none */
};

/* 404 "queue.job_not_found" when id is not a job (or not a uuid). */
bool	job_get_text(struct db *c, const char *id, struct arena *a, struct job_text *out,
	    struct err *e);
/* The filters and order of job_list; fetches limit + 1 rows to know whether more exist. */
bool	job_list_text(struct db *c, int limit, const char *after, const struct job_filter *f,
	    struct arena *a, struct job_page *out, struct err *e);

#endif
