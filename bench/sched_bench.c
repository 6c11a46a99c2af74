/* sched_bench: runs scheduler_cycle on one environment until nothing more is admitted and
 * prints one JSON line: jobs admitted and durably recorded per second (up to the commit of
 * the last admitting cycle; the final cycle that finds nothing is reported apart), the
 * load / decide / commit split, the per-job cost of the first cycle, and peak RSS (VmHWM).
 * usage: DATABASE_URL=... [SCHED_BENCH_POOL=N] sched_bench ENV [MAX_CYCLES] */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/config.h"
#include "core/db.h"
#include "core/err.h"
#include "core/mono.h"
#include "queue/sched/scheduler.h"

/* Peak resident set of this process in kB (VmHWM), 0 when unknown. */
static long
peak_rss_kb(void)
{
	FILE *f = fopen("/proc/self/status", "r");
	char line[256];
	long kb = 0;

	if (f == NULL)
		return 0;
	while (fgets(line, sizeof(line), f) != NULL)
		if (strncmp(line, "VmHWM:", 6) == 0)
			kb = atol(line + 6);
	fclose(f);
	return kb;
}

/* One integer from a query on a pooled connection; -1 on error. */
static long
count(const char *sql, const char *env)
{
	struct err e = { 0 };
	struct db *c = db_acquire(5000, &e);
	const char *p[1] = { env };
	PGresult *r = NULL;
	long v = -1;

	if (c != NULL && db_exec(c, sql, 1, p, &r, &e))
		v = atol(PQgetvalue(r, 0, 0));
	PQclear(r);
	if (c != NULL)
		db_release(c);
	return v;
}

int
main(int argc, char **argv)
{
	static const char sql_pending[] = "SELECT count(*) FROM jobs WHERE environment = $1"
	    " AND state = 'pending'";
	static const char sql_recorded[] = "SELECT count(*) FROM jobs j WHERE j.environment = $1"
	    " AND j.state = 'admitted' AND EXISTS (SELECT 1 FROM placements p WHERE p.job_id = j.id"
	    " AND p.attempt = j.attempt) AND EXISTS (SELECT 1 FROM job_events v WHERE v.job_id ="
	    " j.id AND v.to_state = 'admitted' AND v.attempt = j.attempt)";
	struct sched_stats st, first = { 0 };
	struct err e = { 0 };
	const char *env;
	char **rest = NULL;
	int nrest = 0, max_cycles, cycles = 0;
	size_t admitted = 0;
	double load = 0, decide = 0, commit = 0, t0, wall, done = 0;
	long pending0, recorded;

	if (!config_load(argc, argv, 1, &rest, &nrest, &e) || nrest < 1) {
		fprintf(stderr, "usage: DATABASE_URL=... sched_bench ENV [MAX_CYCLES]%s%s\n",
		    e.msg[0] ? ": " : "", e.msg);
		return 2;
	}
	env = rest[0];
	max_cycles = nrest > 1 ? atoi(rest[1]) : 1000;
	/* pool 1 = the cycle's one connection only (one commit lane); 3 = two lanes + spare */
	if (!db_pool_init(cfg.database_url, getenv("SCHED_BENCH_POOL") ?
	    atoi(getenv("SCHED_BENCH_POOL")) : 3, &e)) {
		fprintf(stderr, "sched_bench: %s\n", e.msg);
		return 1;
	}
	pending0 = count(sql_pending, env);
	t0 = mono_s();
	while (cycles < max_cycles) {
		if (!scheduler_cycle(env, "sched_bench", &st, &e)) {
			fprintf(stderr, "sched_bench: cycle %d: %s %s\n", cycles, e.code, e.msg);
			return 1;
		}
		if (cycles++ == 0)
			first = st;
		admitted += st.admitted;
		load += st.load_s;
		decide += st.decide_s;
		commit += st.commit_s;
		fprintf(stderr, "cycle %d: pending %zu admitted %zu preempted %zu load %.3f s decide"
		    " %.3f s commit %.3f s\n", cycles, st.pending, st.admitted, st.preempted,
		    st.load_s, st.decide_s, st.commit_s);
		if (st.admitted == 0 && st.preempted == 0)
			break;
		done = mono_s() - t0;	/* the last admission is committed */
	}
	wall = mono_s() - t0;
	recorded = count(sql_recorded, env);
	printf("{\"environment\":\"%s\",\"pending\":%ld,\"cycles\":%d,\"admitted\":%zu,"
	    "\"recorded\":%ld,\"seconds\":%.3f,\"seconds_with_last_cycle\":%.3f,\"load_s\":%.3f,\"decide_s\":%.3f,\"commit_s\":%.3f,"
	    "\"jobs_per_s\":%.0f,\"first_cycle\":{\"jobs\":%zu,\"admitted\":%zu,\"load_s\":%.3f,"
	    "\"decide_s\":%.3f,\"commit_s\":%.3f,\"us_per_job\":%.2f},\"vmhwm_kb\":%ld}\n",
	    env, pending0, cycles, admitted, recorded, done, wall, load, decide, commit,
	    done > 0 ? (double)admitted / done : 0.0, first.pending, first.admitted, first.load_s,
	    first.decide_s, first.commit_s, first.pending ? 1e6 * (first.load_s + first.decide_s +
	    first.commit_s) / (double)first.pending : 0.0, peak_rss_kb());
	db_pool_close();
	config_cleanup();
	return recorded == (long)admitted ? 0 : 1;
}
