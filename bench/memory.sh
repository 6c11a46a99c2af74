#!/usr/bin/env bash
# bench/memory.sh — issue 29 item 7: fleetd's peak RSS (VmHWM from /proc) with 100,000
# pending jobs and 1,000 clusters (BENCH_JOBS, BENCH_CLUSTERS_PER_CLOUD x 100 clouds of
# bench/lib.sh's SQL-seeded fleet: 30 queues, 3 flavors).  One `fleetd serve` with
# FLEETD_WORKERS (default scheduler: the worker that holds the pending jobs) runs until its
# cycles are committed (the most jobs admitted at once has not grown for 5 s and the
# scheduler has finished two rounds since it grew: a cycle loads the head of each queue
# only, and the next one goes on), then its VmHWM and VmRSS are read; a second pass with every worker that runs without members (scheduler,
# dispatch, status, mover, janitor, sweep — the seeded clusters are not reachable) gives
# the figure as deployed.  Target ≤ 64 MiB.  Prints one line per pass; BENCH_RECORD=1
# appends them to bench/RESULTS.md with the command, date, commit and load.  Smoke run:
# BENCH_JOBS=2000 BENCH_CLUSTERS_PER_CLOUD=1 bash bench/memory.sh.  Needs a release build
# (make build; BENCH_BUILD overrides the folder).
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
. "$top/bench/lib.sh"
jobs=${BENCH_JOBS:-100000}
per=${BENCH_CLUSTERS_PER_CLOUD:-10}
passes=${BENCH_PASSES:-scheduler scheduler,dispatch,status,mover,janitor,sweep}
bench_work memory
bench_need fleetd
bench_pg
bench_fleetd_env
psql() { "$pgbin/psql" -qAtX -v ON_ERROR_STOP=1 "$DATABASE_URL" "$@"; }
bench_seed_fleet "$per" 0 99
nclusters=$(psql -c "SELECT count(*) FROM clusters")
port=$(bench_free_port)
FLEETD_METRICS_TOKEN=$(head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n')
export FLEETD_METRICS_TOKEN
# scheduler rounds finished: cycles run plus cycles skipped (nothing committed since)
rounds() {
	{ curl -sf -H "Authorization: Bearer $FLEETD_METRICS_TOKEN" "http://127.0.0.1:$port/metrics" ||
	    true; } | awk '/^fleetd_scheduler_cycles(_skipped)?_total / {n += $2} END {print n + 0}'
}
started=$(date -u '+%Y-%m-%d %H:%M:%S UTC')
load0=$(cut -d' ' -f1-3 /proc/loadavg)
lines=""
for workers in $passes; do
	psql -c "SET client_min_messages = warning" -c "TRUNCATE jobs CASCADE" -c "
INSERT INTO jobs (id, name, environment, queue_id, kind, priority_class, priority, spec, enqueued_at)
SELECT gen_random_uuid(), 'job-' || i, 'bench', q.id, 'RayJob', 'default', (i % 3) * 10,
       $bench_job_spec, now() - make_interval(secs => $jobs - i)
  FROM generate_series(0, $jobs - 1) i JOIN queues q ON q.name = 'q-' || (i % 30);" \
	    -c "VACUUM ANALYZE" >/dev/null
	FLEETD_WORKERS=$workers FLEETD_LISTEN=127.0.0.1:$port "$bin/fleetd" serve >"$work/fleetd.log" 2>&1 &
	fpid=$!
	pids=("$fpid")
	for _ in $(seq 100); do curl -sf "http://127.0.0.1:$port/healthz" >/dev/null && break; sleep 0.1; done
	last=0 same=0 t0=$(date +%s) moved=0
	for _ in $(seq 1200); do
		n=$(psql -c "SELECT count(*) FROM jobs WHERE state <> 'pending'")
		r=$(rounds)
		# the most ever admitted at once: dispatch's retries (every worker, members not
		# reachable) send admitted jobs back to pending and the scheduler admits them again
		if [ "$n" -gt "$last" ]; then same=0 last=$n moved=$r; else same=$((same + 1)); fi
		[ "$same" -ge 10 ] && [ "$r" -ge $((moved + 2)) ] && break
		sleep 0.5
	done
	mem=$(bench_rss_mib "$fpid")
	kill "$fpid"; wait "$fpid" 2>/dev/null || true; pids=()
	pending=$(psql -c "SELECT count(*) FROM jobs WHERE state = 'pending'")
	line="fleetd (FLEETD_WORKERS=$workers), $jobs jobs seeded pending ($last admitted at the most, $pending pending at the end, after $(( $(date +%s) - t0 )) s), $nclusters clusters: VmRSS/VmHWM ${mem} MiB (target VmHWM ≤ 64 MiB)"
	echo "$line"
	lines+="- $line"$'\n'
done
if [ "${BENCH_RECORD:-0}" = 1 ]; then
	{
		echo
		echo "### Memory with pending jobs ($started, \`bash bench/memory.sh\`, commit $(git -C "$top" rev-parse --short HEAD))"
		echo
		echo "Load average at the start $load0, at the end $(cut -d' ' -f1-3 /proc/loadavg) (2 cores)."
		echo
		printf '%s' "$lines"
	} >>"$top/bench/RESULTS.md"
fi
