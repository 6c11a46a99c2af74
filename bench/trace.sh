#!/usr/bin/env bash
# bench/trace.sh — issue 17, scheduling quality on a trace (no database): a synthetic
# multi-team trace (6 teams with weights and quota floors in one cohort, bursty arrivals,
# gangs of 1-64 accelerators with host/rack topology, three priority classes, 10,000 jobs)
# replayed through the scheduler's own model and cycle (queue/sched_*.c, jobs shaped by the
# loader from their spec JSON) in simulated time: no database, no clock, nothing to start or stop.
# Prints per team the share deviation from the weighted-DRF ideal, time below the quota
# floor while a job that fits in it waits, the longest wait, preemptions, preempt-requeue
# cycles and idle waits; then each target's verdict.  Deterministic for a seed.
# TRACE_JOBS=N (default 10000), TRACE_SEED=S, TRACE_MAX_HOLDS=N (default: the scheduler's);
# BENCH_BUILD=DIR (default build/rel);
# BENCH_RECORD=1 appends the block to bench/RESULTS.md (default: print only).
# Then (rack_trace below, issue 26) the NVL72 rack trace: RACK_TRACE_JOBS=N (default 2000),
# RACK_TRACE_SEED=S.  TRACE_PART=sched|racks runs one part only (default: both).
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
build=${BENCH_BUILD:-$top/build/rel}
jobs=${TRACE_JOBS:-10000}
seed=${TRACE_SEED:-0x5eed17b}

part=${TRACE_PART:-all}

# issue 26: mixed 8- to 512-GPU gangs on GB200 NVL72 racks (bench/sim/rack_trace.c), topology
# pack against topology none on the same jobs: racks per gang against the fewest possible,
# free GPUs left in partly used racks.  Simulated time: the figures do not depend on the load.
rack_trace() {
	local n=${RACK_TRACE_JOBS:-2000} s=${RACK_TRACE_SEED:-0x7ac4} out block
	cmake --build "$build" -j2 --target rack_trace >/dev/null
	out=$("$build/rack_trace" "$n" "$s")
	block=$(
		echo "## Topology pack on NVL72 racks ($(date -u '+%Y-%m-%d %H:%M UTC'), commit $(git -C "$top" rev-parse --short HEAD), \`RACK_TRACE_JOBS=$n RACK_TRACE_SEED=$s TRACE_PART=racks bash bench/trace.sh\`)"
		echo
		echo "Load average at the end: $(cut -d' ' -f1-3 /proc/loadavg) (a simulation: its figures do not depend on the load)."
		echo "Racks / fewest: racks an admitted gang spans over ceil(GPUs / 72). Partly used racks: free"
		echo "GPUs in racks neither empty nor full, mean over cycles (and their share of all free GPUs)."
		echo
		echo "$out"
	)
	echo "$block"
	if [ "${BENCH_RECORD:-0}" = 1 ]; then
		printf '\n%s\n' "$block" >>"$top/bench/RESULTS.md"
	fi
}

cmake -S "$top" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
if [ "$part" = racks ]; then
	rack_trace
	exit 0
fi
cmake --build "$build" -j2 --target sched_trace >/dev/null
out=$("$build/sched_trace" "$jobs" "$seed")
load=$(cut -d' ' -f1-3 /proc/loadavg)
block=$(
	echo "## Scheduling quality on a trace ($(date -u '+%Y-%m-%d %H:%M UTC'), \`TRACE_JOBS=$jobs TRACE_SEED=$seed bash bench/trace.sh\`)"
	echo
	echo "Load average at the end: $load (a simulation: its figures do not depend on the load)."
	echo "Deviation: |actual - ideal| accelerator share in % of the fleet, each cycle the team has"
	echo "demand; ideal = weighted DRF with floors (min(demand, floor + weight x lambda), filled to"
	echo "min(capacity, demand)).  Below floor: cycles ending with the team under its floor while a"
	echo "job that fits in the floor waits.  Cycle: a job evicts another that later evicts it."
	echo "Idle waits: job-cycles where a pending job's quota and a cluster's free capacity fit it."
	echo
	echo "$out"
)
echo "$block"
if [ "${BENCH_RECORD:-0}" = 1 ]; then
	printf '\n%s\n' "$block" >>"$top/bench/RESULTS.md"
fi
if [ "$part" = all ]; then
	rack_trace
fi

# ---- Capacity preferences (issue 27), a section of its own: bench/sim/prefs_trace.c replays
# jobs ranking reservation > on_demand > spot, with reservations freeing over time and spot
# reclaims, under three policies (wait for the preferred type; start anywhere, never
# migrate; start anywhere and migrate as the scheduler plans it) and prints the share of
# GPU-hours on the preferred type, waits, migrations per job and checkpoint work lost.
# TRACE_PREFS=0 skips it; TRACE_PREFS_JOBS=N (default 1500), TRACE_PREFS_SEED=S.
prefs_section() {
	local pjobs=${TRACE_PREFS_JOBS:-1500} pseed=${TRACE_PREFS_SEED:-0x5eed27} pout pblock
	cmake --build "$build" -j2 --target prefs_trace >/dev/null
	pout=$("$build/prefs_trace" "$pjobs" "$pseed")
	pblock=$(
		echo "## Capacity preferences on a trace ($(date -u '+%Y-%m-%d %H:%M UTC'), \`TRACE_PREFS_JOBS=$pjobs TRACE_PREFS_SEED=$pseed bash bench/trace.sh\`, commit $(git -C "$top" rev-parse --short HEAD))"
		echo
		echo "Load average at the end: $(cut -d' ' -f1-3 /proc/loadavg) (a simulation in simulated time: its figures do not depend on the load)."
		echo "Preferred share: GPU-hours on the first choice (reservation) over all GPU-hours run."
		echo "Work lost: GPU-hours since the last periodic checkpoint when spot was reclaimed; a"
		echo "migration checkpoints at its signal and loses its restart time only."
		echo
		echo "$pout"
	)
	echo
	echo "$pblock"
	if [ "${BENCH_RECORD:-0}" = 1 ]; then
		printf '\n%s\n' "$pblock" >>"$top/bench/RESULTS.md"
	fi
}
if [ "${TRACE_PREFS:-1}" = 1 ]; then
	prefs_section
fi
