#!/usr/bin/env bash
# tests/fuzz/run.sh SECONDS [TARGET...] — builds every libFuzzer target (tests/fuzz/fuzz_*.c)
# into build/fuzz/ and runs each for SECONDS over a scratch copy of its seed corpus.
# Prints executions and findings per target; exits non-zero on any crash, leak or sanitizer
# report. Findings are copied to build/fuzz/findings/<target>/ (never into the repo).
# Environment: FUZZ_OUT (build dir), FUZZ_BUILD_JOBS, FUZZ_MAX_LEN, FUZZ_ARGS (extra
# libFuzzer flags, e.g. "-fork=1 -ignore_crashes=1" to list every finding of a long run).
set -uo pipefail
secs=${1:?usage: tests/fuzz/run.sh SECONDS [TARGET...]}; shift
top=$(cd "$(dirname "$0")/../.." && pwd)
out=${FUZZ_OUT:-$top/build/fuzz}
jobs=${FUZZ_BUILD_JOBS:-2}

command -v clang >/dev/null || { echo "fuzz: clang is not installed (make deps)" >&2; exit 1; }
mkdir -p "$out"
if ! make --no-print-directory -s -f "$top/tests/fuzz/fuzz.mk" -j"$jobs" TOP="$top" OUT="$out" all; then
	echo "fuzz: build failed" >&2
	exit 1
fi

targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
	for f in "$top"/tests/fuzz/fuzz_*.c; do
		t=$(basename "$f" .c)
		targets+=("${t#fuzz_}")
	done
fi

scratch=$(mktemp -d /tmp/fleetd-fuzz.XXXXXX)
trap 'rm -rf "$scratch"' EXIT INT TERM
export ASAN_OPTIONS=${FUZZ_ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0:allocator_may_return_null=1}
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
unset LSAN_OPTIONS
failed=0
printf '%-12s %12s %10s %8s %s\n' target executions exec/s corpus findings
for t in "${targets[@]}"; do
	bin=$out/fuzz_$t
	[ -x "$bin" ] || { echo "fuzz: no target $t" >&2; failed=1; continue; }
	work=$scratch/$t
	mkdir -p "$work/corpus" "$work/artifacts"
	[ -d "$top/tests/fuzz/corpus/$t" ] && cp -r "$top/tests/fuzz/corpus/$t/." "$work/corpus/"
	dict=()
	[ -f "$top/tests/fuzz/$t.dict" ] && dict=(-dict="$top/tests/fuzz/$t.dict")
	(cd "$work" && "$bin" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 \
	    -max_len=${FUZZ_MAX_LEN:-8192} -print_final_stats=1 ${FUZZ_ARGS:-} "${dict[@]}" \
	    -artifact_prefix="$work/artifacts/" "$work/corpus" >"$work/log" 2>&1)
	rc=$?
	runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$work/log" | tail -1)
	rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$work/log" | tail -1)
	ncorp=$(find "$work/corpus" -type f | wc -l)
	nart=$(find "$work/artifacts" -type f | wc -l)
	reports=$(grep -cE '^(==[0-9]+==ERROR|SUMMARY: |.*runtime error:)' "$work/log")
	if [ "$rc" -ne 0 ] || [ "$nart" -gt 0 ] || [ "$reports" -gt 0 ]; then
		failed=1
		mkdir -p "$out/findings/$t"
		cp "$work/log" "$out/findings/$t/log"
		[ "$nart" -gt 0 ] && cp "$work/artifacts/"* "$out/findings/$t/"
		printf '%-12s %12s %10s %8s %s\n' "$t" "${runs:-?}" "${rate:-?}" "$ncorp" \
		    "FAIL rc=$rc artifacts=$nart reports=$reports ($out/findings/$t)"
		grep -m5 -E 'ERROR|runtime error|SUMMARY|Assertion|fuzz:' "$work/log" | sed 's/^/    /'
	else
		printf '%-12s %12s %10s %8s %s\n' "$t" "${runs:-?}" "${rate:-?}" "$ncorp" "0"
	fi
done
exit $failed
