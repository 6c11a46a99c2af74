#!/usr/bin/env bash
# bench/fleet.sh — issue 29's cost curve: one run that builds the fleet at each size of
# FLEET_SIZES (default "100 300 1000" cloudsim HyperPod clusters) with
# FLEET_JOBS_PER_CLUSTER (default 20: 2,000 / 6,000 / 20,000) running jobs and
# FLEET_REPLICAS (default 3) fleetd replicas sharing the clusters by leases, and prints per
# size:
#   - CPU seconds per cluster-hour, fleetd (all replicas) and Postgres apart (/proc/PID/stat;
#     Postgres: the postmaster, its children and the children it reaped), over a steady
#     window with every job running and nothing changing but the members;
#   - Postgres statements per second per running job (pg_stat_statements);
#   - VmRSS/VmHWM per replica;
#   - status p99 from the member's change to fleetd's job state (Running, Complete, and the
#     completions of the first 30 s after the replicas start);
# all from bench/status.sh at that size; then
#   - dispatch jobs/s (bench/dispatch.sh, FLEET_DISPATCH_JOBS admitted jobs over the size's
#     clusters, default 1,000 — the throughput is the measure, not the fleet's total);
#   - warm capacity refresh of the whole fleet and its ratio to the slowest single cluster
#     (bench/capacity.sh, BENCH_CLUSTERS = size);
#   - API ratios with workers on against API-only: GET one job, a list of 20, POST
#     (bench/api.sh, BENCH_CLUSTERS = size).
# FLEET_PARTS picks the parts (default "status dispatch capacity api memory"; memory runs
# once, not per size: bench/memory.sh, fleetd's VmHWM with 100,000 pending jobs and 1,000
# clusters).  Each part runs on
# its own Postgres and cloudsim, one after the other; run it alone on the machine.  Prints
# one Markdown table; FLEET_RECORD=1 appends it to bench/RESULTS.md with the command, date,
# commit and load.  A smoke run: FLEET_SIZES=20 FLEET_JOBS_PER_CLUSTER=5 BENCH_RUN_S=60
# BENCH_WINDOW_S=10 FLEET_PARTS=status bash bench/fleet.sh.  Needs a release build (make
# build; BENCH_BUILD overrides the folder).
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
sizes=${FLEET_SIZES:-100 300 1000}
per=${FLEET_JOBS_PER_CLUSTER:-20}
replicas=${FLEET_REPLICAS:-3}
parts=${FLEET_PARTS:-status dispatch capacity api memory}
out=$(mktemp -d /tmp/fleetd-bench-fleet.XXXXXX)
trap 'rm -rf "$out"' EXIT
has() { case " $parts " in *" $1 "*) return 0;; esac; return 1; }
val() {	# val FILE PREFIX KEY: KEY=value of the first line starting with PREFIX
	grep -m1 "^$2 " "$1" 2>/dev/null | tr ' ' '\n' | sed -n "s/^$3=//p" | head -1
}
started=$(date -u '+%Y-%m-%d %H:%M:%S UTC')
load0=$(cut -d' ' -f1-3 /proc/loadavg)
rows=""
for n in $sizes; do
	jobs=$((n * per))
	echo "==== $n clusters, $jobs running jobs, $replicas replicas"
	st=$out/status-$n.txt di=$out/dispatch-$n.txt ca=$out/capacity-$n.txt ap=$out/api-$n.txt
	if has status; then
		BENCH_CLUSTERS=$n BENCH_JOBS=$jobs BENCH_REPLICAS=$replicas BENCH_NO_RECORD=1 \
			BENCH_RUN_S=${BENCH_RUN_S:-$((300 + jobs / 40))} bash "$top/bench/status.sh" 2>&1 | tee "$st" || true
	fi
	if has dispatch; then
		BENCH_CLUSTERS=$n BENCH_JOBS=${FLEET_DISPATCH_JOBS:-1000} BENCH_RECORD=0 \
			bash "$top/bench/dispatch.sh" 2>&1 | tee "$di" || true
	fi
	if has capacity; then
		BENCH_CLUSTERS=$n BENCH_CLOUDS=$(( n < 100 ? n : 100 )) BENCH_RESULTS=/dev/null \
			bash "$top/bench/capacity.sh" 2>&1 | tee "$ca" || true
	fi
	if has api; then
		BENCH_CLUSTERS=$n BENCH_RECORD=0 bash "$top/bench/api.sh" 2>&1 | tee "$ap" || true
	fi
	row=$(python3 - "$n" "$jobs" "$st" "$di" "$ca" "$ap" <<'PY'
import re, sys
n, jobs, st, di, ca, ap = sys.argv[1:]
def text(p):
    try:
        return open(p, errors="replace").read()
    except OSError:
        return ""
def kv(t, prefix):
    m = re.search(r"^%s (.*)$" % prefix, t, re.M)
    return dict(x.split("=", 1) for x in m.group(1).split()) if m else {}
s, f = kv(text(st), "FLEET_STEADY"), kv(text(st), "FLEET_STATUS")
m = re.search(r"\((\d+) jobs/s\)", text(di))
disp = m.group(1) if m else "-"
m = re.search(r"^fleet, .*?warm [\d.]+ ms \(wall (\d+) ms\)", text(ca), re.M)
solo = [int(x) for x in re.findall(r"^solo \w+: .*?\(wall (\d+) ms\)", text(ca), re.M)]
refresh = "%s ms (%.1fx the slowest single cluster)" % (m.group(1), int(m.group(1)) / max(solo)) \
    if m and solo else "-"
# api.sh: the two modes' tables; requests/s of each route, workers over API-only
t = text(ap)
blocks = re.split(r"^fleetd (?:API-only|with workers)", t, flags=re.M)
def rps(block, route):
    m = re.search(r"^\| %s \| (\d+) \|" % re.escape(route), block, re.M)
    return float(m.group(1)) if m else None
ratios = []
if len(blocks) >= 3:
    for label, route in (("GET", "GET /v1/jobs/{id}"), ("list", "GET /v1/jobs?limit=20"),
                         ("POST", "POST /v1/jobs")):
        a, w = rps(blocks[1], route), rps(blocks[2], route)
        ratios.append("%s %.2fx" % (label, w / a) if a and w is not None else "%s -" % label)
api = ", ".join(ratios) or "-"
print("| %s | %s (%s running) | %s / %s | %s | %s | %s | %s / %s / %s | %s | %s |" % (
    n, jobs, s.get("running", "-"), s.get("cpu_fleetd", "-"), s.get("cpu_pg", "-"),
    s.get("stmts_per_job_s", "-"), s.get("mem", "-").replace(",", " "), disp,
    f.get("run_p99", "-"), f.get("complete_p99", "-"), f.get("after_start_p99", "-"),
    refresh, api))
PY
)
	rows+="$row"$'\n'
done
{
	echo "### Fleet cost curve ($started, \`FLEET_SIZES=\"$sizes\" bash bench/fleet.sh\`, commit $(git -C "$top" rev-parse --short HEAD), $replicas replicas)"
	echo
	echo "Load average at the start $load0, at the end $(cut -d' ' -f1-3 /proc/loadavg) (2 cores). Parts: $parts."
	echo
	echo "| clusters | jobs | CPU s per cluster-hour, fleetd / Postgres | statements/s per running job | VmRSS/VmHWM MiB per replica | dispatch jobs/s | status p99 s: Running / Complete / after a start | warm refresh | API with workers / API-only |"
	echo "|---|---|---|---|---|---|---|---|---|"
	printf '%s' "$rows"
	if has memory; then
		echo
		bash "$top/bench/memory.sh" 2>&1 | tee "$out/memory.txt" >&2 || true
		grep '^fleetd (FLEETD_WORKERS' "$out/memory.txt" | sed 's/^/- /' || true
	fi
} >"$out/table.md"
echo
cat "$out/table.md"
if [ "${FLEET_RECORD:-0}" = 1 ]; then
	{ echo; cat "$out/table.md"; } >>"$top/bench/RESULTS.md"
fi
