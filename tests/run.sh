#!/usr/bin/env bash
# tests/run.sh BUILD_DIR [ctest args…] — starts a throwaway Postgres, runs every test
# through ctest, and stops what it started even when a test fails.
set -uo pipefail
build=${1:?usage: tests/run.sh BUILD_DIR}; shift
top=$(cd "$(dirname "$0")/.." && pwd)
pgdir=$(mktemp -d /tmp/fleetd-test-pg.XXXXXX)
cleanup() {
	bash "$top/scripts/pg.sh" destroy "$pgdir"
	rm -rf "$pgdir"
}
trap cleanup EXIT INT TERM
# Tests only: fsync off for speed (scripts/pg.sh is durable by default: make run, bench/).
export PG_FSYNC=off
bash "$top/scripts/pg.sh" start "$pgdir" || { echo "tests: could not start postgres" >&2; exit 1; }
export FLEETD_TEST_DATABASE_URL=$(bash "$top/scripts/pg.sh" url "$pgdir")
export FLEETD_TEST_PGDIR=$pgdir
export PGPASSFILE=$pgdir/pgpass	# the password pg.sh generated: every libpq client reads it
export FLEETD_BUILD_DIR=$(cd "$build" && pwd)
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0:halt_on_error=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
export LSAN_OPTIONS=${LSAN_OPTIONS:-suppressions=$top/tests/lsan.supp}
# Tests run beside each other (tests/schedule.txt: the longest first; one wall-clock-bound
# test at a time): most of a test's time is spent waiting on simulated clusters, so two
# slots per core, a test taking one (a timing test two, with its core to itself but for
# waiting tests or one CPU-bound tool; nproc + 1 tests of one slot each, any of them, made
# timing-bound tests fail on a loaded machine).  FLEETD_TEST_JOBS=1 runs them one at a time.
jobs=${FLEETD_TEST_JOBS:-$((2 * $(nproc)))}
cd "$build" && ctest --output-on-failure -j"$jobs" "$@"
