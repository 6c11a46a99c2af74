# bench/perf.sh — sourced by the bench scripts: with BENCH_PERF=1, a perf profile of one
# process during the measured phase, summarised into bench/profiles/<name>.txt (where the
# time goes, for a target the run missed).  Without BENCH_PERF both calls do nothing.
#   perf_begin PID DATAFILE        start recording PID (call graphs)
#   perf_end NAME "what was measured"   stop and write bench/profiles/NAME.txt
# The summary: the command, date, commit and load; CPU by DSO; the top symbols by self
# time; and the top call chains by inclusive time (children), so a reader sees both the
# hot leaves and the fleetd functions above them.
perf_pid= perf_data=
perf_begin() {
	[ "${BENCH_PERF:-0}" = 1 ] || return 0
	command -v perf >/dev/null || { echo "BENCH_PERF=1 but no perf on this machine" >&2; return 0; }
	perf_data=$2
	perf record -q -g -p "$1" -o "$perf_data" >/dev/null 2>&1 &
	perf_pid=$!
	sleep 0.3
}
perf_end() {
	[ -n "$perf_pid" ] || return 0
	local top out
	top=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
	out=$top/bench/profiles/$1.txt
	kill -INT "$perf_pid" 2>/dev/null || true
	wait "$perf_pid" 2>/dev/null || true
	perf_pid=
	mkdir -p "$top/bench/profiles"
	{
		echo "# $1: perf profile ($2)"
		echo "# $(date -u '+%Y-%m-%d %H:%M UTC'), commit $(git -C "$top" rev-parse --short HEAD 2>/dev/null)," \
			"load average $(cut -d' ' -f1-3 /proc/loadavg), $(nproc) cores; command: ${0#$top/} (BENCH_PERF=1)"
		echo
		echo "## CPU by DSO (self)"
		perf report -i "$perf_data" --no-children --sort dso --stdio 2>/dev/null |
			grep -E '^ +[0-9.]+%' | head -12 || true
		echo
		echo "## Top symbols (self)"
		perf report -i "$perf_data" --no-children --sort dso,symbol --stdio -g none 2>/dev/null |
			grep -E '^ +[0-9.]+%' | head -30 || true
		echo
		echo "## Top functions with their callees (inclusive)"
		perf report -i "$perf_data" --children --sort symbol --stdio -g none 2>/dev/null |
			grep -E '^ +[0-9.]+%' | head -30 || true
	} >"$out"
	echo "profile: $out" >&2
}
