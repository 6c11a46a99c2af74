#!/usr/bin/env bash
# chaos_short: the few-minute version of the chaos suites (tests/chaos/): 100 jobs with 3
# kill -9 of fleetd, 3 replicas with 2 leader kills, a database restart and an outage, and a
# few cloudsim faults (5xx, a partitioned cluster, expired tokens).  Uses the build that
# tests/run.sh names (FLEETD_BUILD_DIR), else build/asan.  `make chaos` runs the full sizes.
set -uo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
build=${FLEETD_BUILD_DIR:-$top/build/asan}
out=$(mktemp -d /tmp/fleetd-chaos-short.XXXXXX)
CHAOS_OUT=$out bash "$top/tests/chaos/run.sh" --short "$build"
rc=$?
# keep the logs of a failed run for the reader; drop those of a passing one
if [ "$rc" = 0 ]; then rm -rf "$out"; else echo "chaos_short: logs kept in $out" >&2; fi
exit $rc
