#!/usr/bin/env bash
# region_drill: the short region-loss drill (tests/chaos/regionloss.py, issue 18) — 3 regions,
# 24 jobs of mixed kinds and priorities, one region partitioned, drained with
# "source": "unreachable", healed, swept.  Prints its figures; `make chaos` runs 200 jobs.
set -uo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
build=${FLEETD_BUILD_DIR:-$top/build/asan}
out=$(mktemp -d /tmp/fleetd-drill-short.XXXXXX)
mkdir -p "$out/regionloss"
timeout -k 10 300 python3 "$top/tests/chaos/chaos.py" regionloss --build "$build" \
	--workdir "$out/regionloss/w" --jobs "${DRILL_JOBS:-24}" --time-scale 10 --settle 40
rc=$?
cat "$out/regionloss/result-regionloss.json" 2>/dev/null || true
if [ "$rc" = 0 ]; then rm -rf "$out"; else echo "region_drill: logs kept in $out" >&2; fi
exit $rc
