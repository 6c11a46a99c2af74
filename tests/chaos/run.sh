#!/usr/bin/env bash
# tests/chaos/run.sh [--short] [BUILD_DIR] — the chaos suites (crash, replicas, dbrestart,
# faults), each with its own Postgres, cloudsim and fleetd replicas on loopback.  Full sizes
# by default (issue 10: 2,000 jobs, 20 kills); --short is the few-minute version `make test`
# runs (tests/scripts/chaos_short.sh).  Sizes can be overridden: CHAOS_JOBS, CHAOS_KILLS,
# CHAOS_SUITES (comma list), CHAOS_OUT (where results and logs go).  Both sizes aim a kill
# at an in-flight dispatch: an object a dead replica's apply leaves behind a cancel is
# deleted by the orphan sweep (issue 18).  The region-loss drill (regionloss) runs in full
# sizes only; tests/scripts/region_drill.sh is its short version.  Stops everything it
# started, also on failure or Ctrl-C.  Exit status 1 when any check failed.
set -uo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
short=0
if [ "${1:-}" = "--short" ]; then short=1; shift; fi
build=${1:-${FLEETD_BUILD_DIR:-$top/build/rel}}
build=$(cd "$build" && pwd) || { echo "chaos: no build directory $build" >&2; exit 2; }
for b in fleetd cloudsim; do
	[ -x "$build/$b" ] || { echo "chaos: $build/$b missing (make build)" >&2; exit 2; }
done
out=${CHAOS_OUT:-$(mktemp -d /tmp/fleetd-chaos.XXXXXX)}
mkdir -p "$out"

# Stops what the suites started, by the pids they recorded (only fleetd/cloudsim processes),
# and their Postgres.  chaos.py does this itself; this is for a hard interruption.
declare -A pids=()	# running suites: pid -> name
cleanup() {
	for p in "${!pids[@]}"; do kill -TERM "$p" 2>/dev/null; done
	for f in "$out"/*/w/pids; do
		[ -f "$f" ] || continue
		while read -r pid; do
			if grep -qaE 'fleetd|cloudsim' "/proc/$pid/cmdline" 2>/dev/null; then
				kill -TERM "$pid" 2>/dev/null || true
			fi
		done <"$f"
	done
	for d in "$out"/*/w/pg; do
		if [ -f "$d/home" ]; then	# dbfailover's Patroni pair (scripts/pg_ha.sh)
			bash "$top/scripts/pg_ha.sh" destroy "$d" >/dev/null 2>&1
		elif [ -d "$d" ]; then
			bash "$top/scripts/pg.sh" destroy "$d" >/dev/null 2>&1
		fi
	done
}
trap cleanup EXIT
trap 'exit 130' INT TERM

if [ "$short" = 1 ]; then
	jobs=${CHAOS_JOBS:-100}; kills=${CHAOS_KILLS:-3}
	declare -A args=(
		[crash]="--jobs $jobs --kills $kills --kill-every 4 --settle 90 --targeted-kills 1"
		[replicas]="--jobs $((jobs * 3 / 5)) --kills 2 --kill-every 4 --settle 90"
		[dbrestart]="--jobs $((jobs * 3 / 5)) --db-restarts 1 --db-outages 1 --kill-every 3 --settle 90"
		[dbfailover]="--jobs $((jobs * 2 / 5)) --db-failovers 1 --kill-every 4 --settle 90"
		[faults]="--jobs $((jobs * 3 / 5)) --faults 5xx,partition-cluster,expired-tokens --fault-seconds 4 --settle 90"
	)
	limit=240
else
	jobs=${CHAOS_JOBS:-2000}; kills=${CHAOS_KILLS:-20}
	declare -A args=(
		[crash]="--jobs $jobs --kills $kills --kill-every 12 --settle 900"
		[replicas]="--jobs $jobs --kills $kills --kill-every 12 --settle 900"
		[dbrestart]="--jobs $jobs --db-restarts 3 --db-outages 3 --kill-every 15 --settle 900"
		[dbfailover]="--jobs $jobs --db-failovers 3 --kill-every 20 --settle 900"
		[faults]="--jobs $jobs --faults all --fault-seconds 10 --settle 900"
		[regionloss]="--jobs ${DRILL_JOBS:-200} --time-scale 10 --settle 600"
	)
	limit=3600
fi
# the region-loss drill (issue 18) runs in full here; its short version is
# tests/scripts/region_drill.sh
default_suites=crash,replicas,dbrestart,faults
[ "$short" = 1 ] || default_suites=$default_suites,dbfailover,regionloss
suites=${CHAOS_SUITES:-$default_suites}
# --short runs two suites at a time (each has its own Postgres, cloudsim and ports; they
# share nothing but the CPU), which halves make test's longest step; full sizes run one at a
# time unless CHAOS_PARALLEL says otherwise.  Each suite's output goes to its own file and is
# printed whole when the suite ends, so two suites never interleave their lines.
parallel=${CHAOS_PARALLEL:-$([ "$short" = 1 ] && echo 2 || echo 1)}
run_suite() {
	local s=$1 r=0
	rm -rf "$out/$s"
	mkdir -p "$out/$s"
	echo "=== chaos $s: ${args[$s]} (logs in $out/$s)"
	# shellcheck disable=SC2086 # word splitting of the argument list is intended
	timeout -k 30 "$limit" python3 "$top/tests/chaos/chaos.py" "$s" --build "$build" \
		--workdir "$out/$s/w" ${args[$s]} ${CHAOS_ARGS:-} || r=1
	cp -f "$out/$s/result-$s.json" "$out/" 2>/dev/null || true
	# the server's folder under /tmp (pg.sh; its log is copied into w/pg), not for HA's
	[ -f "$out/$s/w/pg/server_dir" ] && bash "$top/scripts/pg.sh" destroy "$out/$s/w/pg" >/dev/null 2>&1
	return $r
}
rc=0
wait_one() {	# waits for any running suite, prints its output, records its status
	local done_pid st=0
	wait -n -p done_pid "${!pids[@]}" || st=$?
	[ "$st" = 0 ] || rc=1
	cat "$out/${pids[$done_pid]}.out"
	unset "pids[$done_pid]"
}
for s in ${suites//,/ }; do
	[ -n "${args[$s]:-}" ] || { echo "chaos: unknown suite $s" >&2; rc=2; continue; }
	while [ "${#pids[@]}" -ge "$parallel" ]; do wait_one; done
	run_suite "$s" >"$out/$s.out" 2>&1 &
	pids[$!]=$s
done
while [ "${#pids[@]}" -gt 0 ]; do wait_one; done
python3 "$top/tests/chaos/summary.py" "$out"
echo "chaos: results in $out"
exit $rc
