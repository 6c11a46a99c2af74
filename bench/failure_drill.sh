#!/usr/bin/env bash
# bench/failure_drill.sh — issue 24's failure drill (tests/chaos/failuredrill.py): 200 running
# RayJobs on a demo-shaped cloudsim fleet (GKE, AKS, HyperPod H100 pools in racks of 4, GKE
# and AKS spot pools); then 5 % of the GPU nodes running jobs deleted and one whole rack
# (`kubectl delete node`), 20 spot nodes reclaimed with the providers' signals as cloudsim
# models them, 10 workers OOM-killed and 5 jobs given a bad image (`kubectl patch pod
# --subresource=status`).  Prints: jobs recovered where a spare existed, node loss -> replacement
# Running p50/p99 (simulated s), failed jobs with a classified reason, jobs stalled without a
# reason, retries on a failed node or rack, post-mortems after teardown.  Figures are in
# simulated time (cloudsim's clock), so the machine's load matters little; the wall time does.
# DRILL_JOBS (200), DRILL_SPOT (20), DRILL_OOM (10), DRILL_BAD_IMAGE (5), DRILL_TIME_SCALE
# (4: fleetd's own waits run on the wall clock, so a higher scale stretches them in simulated
# time and shortens a 30 s spot notice below one status cycle), DRILL_SETTLE (wall seconds
# per phase, 300), DRILL_SEED (the faults' random seed; default the clock), BENCH_BUILD
# (build/rel), BENCH_KEEP=1 keeps the logs; BENCH_RECORD=1 appends the block to
# bench/RESULTS.md (default: print only).  tests/scripts/failure_drill.sh is the
# short form `make test` runs.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
build=${BENCH_BUILD:-$top/build/rel}
jobs=${DRILL_JOBS:-200}
for b in fleetd cloudsim fleetctl; do
	[ -x "$build/$b" ] || { echo "build first: make build ($build/$b missing)" >&2; exit 1; }
done
work=$(mktemp -d /tmp/fleetd-bench-faildrill.XXXXXX)
trap '[ -n "${BENCH_KEEP:-}" ] || rm -rf "$work"' EXIT
load0=$(cut -d' ' -f1-3 /proc/loadavg)
rc=0
python3 "$top/tests/chaos/chaos.py" failuredrill --build "$build" --workdir "$work/w" \
	--jobs "$jobs" --spot-reclaims "${DRILL_SPOT:-20}" --ooms "${DRILL_OOM:-10}" \
	--bad-images "${DRILL_BAD_IMAGE:-5}" --time-scale "${DRILL_TIME_SCALE:-4}" \
	--settle "${DRILL_SETTLE:-300}" ${DRILL_SEED:+--seed "$DRILL_SEED"} || rc=$?
load1=$(cut -d' ' -f1-3 /proc/loadavg)
[ -s "$work/result-failuredrill.json" ] || { echo "no result (rc $rc)" >&2; exit 1; }
block=$(
	echo "## Failure drill ($(date -u '+%Y-%m-%d %H:%M UTC'), \`DRILL_JOBS=$jobs bash bench/failure_drill.sh\`, commit $(git -C "$top" rev-parse --short HEAD))"
	echo
	echo "Load average before: $load0, after: $load1. Times are simulated seconds (cloudsim's clock)."
	echo
	python3 - "$work/result-failuredrill.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
print("| figure | value |\n|---|---|")
for k, v in r["figures"].items():
    print(f"| {k} | {json.dumps(v) if isinstance(v, (dict, list)) else v} |")
bad = r.get("failed") or []
print(f"\nchecks: {r['checks'] - len(bad)} of {r['checks']} passed" + "".join(
    f"\n- FAILED: {b[0]}" for b in bad))
PY
)
echo "$block"
if [ "${BENCH_RECORD:-0}" = 1 ]; then
	printf '\n%s\n' "$block" >>"$top/bench/RESULTS.md"
fi
exit $rc
