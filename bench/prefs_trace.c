/* prefs_trace: runs the capacity-preference trace of bench/sim/prefs_trace.c under its three
 * policies and prints the comparison (markdown) and the target's verdict.
 * usage: prefs_trace [JOBS [SEED]] */
#include <stdio.h>
#include <stdlib.h>

#include "bench/sim/prefs_trace.h"
#include "core/mono.h"

int
main(int argc, char **argv)
{
	struct prefs_trace_config c;
	struct prefs_trace_result r[PREFS_NPOLICIES];
	struct err e = { 0 };
	double t0 = mono_s();
	bool share_ok, wait_ok;

	prefs_trace_default(&c);
	if (argc > 1)
		c.n_jobs = atoi(argv[1]);
	if (argc > 2)
		c.seed = strtoull(argv[2], NULL, 0);
	if (c.n_jobs < 1) {
		fprintf(stderr, "prefs_trace: JOBS must be at least 1\n");
		return 2;
	}
	for (int p = 0; p < PREFS_NPOLICIES; p++)
		if (!prefs_trace_run(&c, (enum prefs_policy)p, &r[p], &e)) {
			fprintf(stderr, "prefs_trace: %s: %s\n", e.code, e.msg);
			return 1;
		}
	printf("%d jobs (seed 0x%llx) ranking reservation > on_demand > spot; %d clusters x (%d"
	    " reservation + %d on-demand + %d spot) nodes x 8 GPUs; offered load %.2f of the"
	    " reservations; %.0f %% of the reservation held by a previous tenant, freeing one"
	    " node at a time over %.1f h; spot reclaims %.2f per node-hour, back after %.1f h;"
	    " periodic checkpoint every %lld s, restart after a migration %lld s; migrations"
	    " after %lld s of run, cooldown %lld s, at most %d per job; a cycle every %lld"
	    " simulated s\n\n", c.n_jobs, (unsigned long long)c.seed, c.clusters, c.res_nodes,
	    c.od_nodes, c.spot_nodes, c.load, 100.0 * c.res_held_frac,
	    (double)c.res_free_over_s / 3600.0, c.reclaim_per_node_h,
	    (double)c.spot_back_s / 3600.0, (long long)c.ckpt_every_s, (long long)c.restart_s,
	    (long long)c.min_run_s, (long long)c.cooldown_s, c.max_migrations,
	    (long long)c.cycle_s);
	printf("| policy | finished | GPU-h run | on preferred type %% | mean wait | p95 wait |"
	    " migrations / job (max) | spot reclaims | work lost: reclaims / migrations GPU-h |\n");
	printf("|---|---|---|---|---|---|---|---|---|\n");
	for (int p = 0; p < PREFS_NPOLICIES; p++)
		printf("| %s | %zu / %zu | %.0f | %.1f | %.1f min | %.1f min | %.2f (%zu) | %zu |"
		    " %.1f / %.1f |\n", prefs_policy_name(r[p].policy), r[p].finished, r[p].jobs,
		    r[p].gpu_h, r[p].preferred_share, r[p].wait_mean_s / 60.0,
		    r[p].wait_p95_s / 60.0, r[p].migrations_per_job, r[p].max_migrations_job,
		    r[p].reclaims, r[p].lost_reclaim_gpu_h, r[p].lost_migrate_gpu_h);
	share_ok = r[PREFS_MIGRATE].preferred_share >= 0.9 * r[PREFS_WAIT].preferred_share;
	/* "the second's wait": no more than 10 % (or one cycle) above it */
	wait_ok = r[PREFS_MIGRATE].wait_mean_s <= 1.1 * r[PREFS_ANYWHERE].wait_mean_s +
	    (double)c.cycle_s;
	printf("\n- preferred share within 10 %% of waiting for it (%.1f %% vs %.1f %%): %s\n",
	    r[PREFS_MIGRATE].preferred_share, r[PREFS_WAIT].preferred_share,
	    share_ok ? "met" : "MISSED");
	printf("- mean wait no worse than starting anywhere (%.1f vs %.1f min, 10 %% or one cycle"
	    " of slack): %s\n", r[PREFS_MIGRATE].wait_mean_s / 60.0,
	    r[PREFS_ANYWHERE].wait_mean_s / 60.0, wait_ok ? "met" : "MISSED");
	printf("- simulated %.1f h per policy, wall %.1f s\n", (double)r[PREFS_MIGRATE].sim_s /
	    3600.0, mono_s() - t0);
	return 0;
}
