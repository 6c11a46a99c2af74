#!/usr/bin/env bash
# bench/capacity.sh — issue 5: a cloudsim fleet of 100 clouds (environment x provider x
# region, every catalog region) and 300 member clusters with 50 ms added latency on every
# provider and Kubernetes call.  Times a full capacity refresh against the slowest single
# cluster's sequence of calls (one cluster per provider, alone, same latency), the capacity
# search of each environment (curl time_total, median) against one call's latency, and
# fleetd's peak RSS.  Appends to bench/RESULTS.md.  Needs a release build (make build;
# BENCH_BUILD names another folder).  Knobs: BENCH_CLUSTERS, BENCH_CLOUDS, BENCH_LATENCY_MS,
# BENCH_REFRESHES (warm refreshes per run), BENCH_SEARCHES, BENCH_POLL_CONCURRENCY (a list
# of FLEETD_POLL_CONCURRENCY values, the poller's connections; default "256"),
# BENCH_PERF=1 (perf profile of fleetd during the whole fleet's warm refreshes, summarised
# in bench/profiles/capacity.txt).
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
. "$top/bench/lib.sh"
. "$top/bench/perf.sh"
nclusters=${BENCH_CLUSTERS:-300}
nclouds=${BENCH_CLOUDS:-100}
lat=${BENCH_LATENCY_MS:-50}
refreshes=${BENCH_REFRESHES:-5}
searches=${BENCH_SEARCHES:-11}
concs=${BENCH_POLL_CONCURRENCY:-256}
bench_work capacity
bench_need fleetd cloudsim
load0=$(cut -d' ' -f1-3 /proc/loadavg)
py() { python3 "$top/bench/capacity_fleet.py" "$@"; }
median() { sort -g | awk '{a[NR] = $1} END {print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2}'; }
cpu_s() { awk '{printf "%.2f", ($14 + $15) / 100}' "/proc/$1/stat"; }

# ---- fleet, Postgres, cloudsim (latency from the fleet file's fault: every call but /_sim)
py gen "$work/fleet.json" --clouds "$nclouds" --clusters "$nclusters" --latency-ms "$lat"
bench_pg
pgurl=$DATABASE_URL
unset DATABASE_URL	# each fleetd below names its own database
bench_cloudsim "$work/fleet.json"
export FLEETD_MASTER_KEY=MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=
export FLEETD_LOG_LEVEL=debug FLEETD_POLL_INTERVAL_MS=3600000

newdb() {	# newdb NAME: a migrated database, prints its URL
	psql -qAt "$pgurl" -c "CREATE DATABASE $1" >/dev/null
	DATABASE_URL=${pgurl%/*}/$1 "$bin/fleetd" migrate >/dev/null
	echo "${pgurl%/*}/$1"
}
# /metrics takes a token: the one every fleetd of this run is started with
FLEETD_METRICS_TOKEN=$(head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n')
export FLEETD_METRICS_TOKEN
start_fleetd() {	# start_fleetd DBURL WORKERS LOG [POLL_CONCURRENCY]
	port=$(bench_free_port)
	DATABASE_URL=$1 FLEETD_WORKERS=$2 FLEETD_LISTEN=127.0.0.1:$port \
		FLEETD_POLL_CONCURRENCY=${4:-256} "$bin/fleetd" serve >"$3" 2>&1 &
	fpid=$!
	pids+=($fpid)
	for _ in $(seq 100); do curl -sf "http://127.0.0.1:$port/healthz" >/dev/null && return; sleep 0.1; done
	echo "fleetd did not start" >&2; tail "$3" >&2; exit 1
}
forget() {	# forget PID: no longer ours to stop
	local keep=() q
	for q in "${pids[@]}"; do [ "$q" = "$1" ] || keep+=("$q"); done
	pids=("${keep[@]}")
}
stop_fleetd() { kill "$fpid"; wait "$fpid" 2>/dev/null || true; forget "$fpid"; }
register() {	# register DBURL PREFIX [CLUSTER]
	local tok
	tok=$(DATABASE_URL=$1 "$bin/fleetd" token create --name bench --role admin --env '*' | grep '^fleet_')
	start_fleetd "$1" "" "$work/register.log"
	FLEET_URL=http://127.0.0.1:$port FLEET_TOKEN=$tok py register "$work/cs" "$2" ${3:+"$3"}
	stop_fleetd
}
# wait_refresh LOG N: waits for the N-th poller "refresh" line; prints "epoch_of_line ms ok failed
# calls"
wait_refresh() {
	python3 - "$1" "$2" <<'PY'
import datetime, json, sys, time
log, n = sys.argv[1], int(sys.argv[2])
end = time.time() + 300
while time.time() < end:
    lines = [json.loads(l) for l in open(log, errors="replace") if '"msg":"refresh"' in l]
    if len(lines) >= n:
        l = lines[n - 1]
        t = datetime.datetime.strptime(l["ts"], "%Y-%m-%dT%H:%M:%S.%fZ").replace(
            tzinfo=datetime.timezone.utc).timestamp()
        print("%.3f %.1f %d %d %d" % (t, l["ms"], l["ok"], l["failed"], l.get("calls", -1)))
        sys.exit(0)
    time.sleep(0.05)
sys.exit("no refresh %d in %s" % (n, log))
PY
}
# connections fleetd opened so far (a warm refresh should reuse the kept ones)
conns() { curl -sf -H "Authorization: Bearer $FLEETD_METRICS_TOKEN" "http://127.0.0.1:$port/metrics" | awk '/^fleetd_http_client_connections_total/ {print $2; f = 1} END {if (!f) print 0}'; }
# measure DBURL LOG CONC: cold refresh at start, then $refreshes NOTIFY-triggered ones.
# Sets cold_ms, warm_ms (median network phase), warm_wall (median NOTIFY -> logged, ms),
# ok_n, fail_n, calls_n (HTTP calls of the last warm refresh), cpu_fleetd / cpu_cloudsim (CPU
# seconds per warm refresh), conns_warm (connections opened per warm refresh).
measure() {
	local t0 line walls=() nets=() c0 s0
	start_fleetd "$1" poller "$2" "${3/#solo/256}"
	read -r _ cold_ms ok_n fail_n _ <<<"$(wait_refresh "$2" 1)"
	c0=$(cpu_s "$fpid"); s0=$(cpu_s "$cspid"); n0=$(conns)
	[ "$3" = solo ] || perf_begin "$fpid" "$2.perf"	# where fleetd's CPU goes
	# one psql session notifies and says when (server clock), so no client start-up counts
	coproc PQ { psql -qAt "$1"; }
	pids+=($PQ_PID)
	for i in $(seq 2 $((refreshes + 1))); do
		sleep 0.3
		echo "SELECT extract(epoch FROM clock_timestamp()); NOTIFY fleet_poll;" >&"${PQ[1]}"
		read -r t0 <&"${PQ[0]}"
		line=$(wait_refresh "$2" "$i")
		read -r t ms ok_n fail_n calls_n <<<"$line"
		walls+=("$(python3 -c "print(round(($t - $t0) * 1000))")")
		nets+=("$ms")
	done
	[ "$3" = solo ] || perf_end capacity "fleetd during $refreshes warm refreshes of $nclusters clusters, FLEETD_POLL_CONCURRENCY=$3"
	echo '\q' >&"${PQ[1]}"
	local qp=$PQ_PID
	wait "$qp" 2>/dev/null || true
	forget "$qp"
	cpu_fleetd=$(python3 -c "print(round(($(cpu_s "$fpid") - $c0) / $refreshes, 2))")
	conns_warm=$(python3 -c "print(round(($(conns) - $n0) / $refreshes, 1))")
	cpu_cloudsim=$(python3 -c "print(round(($(cpu_s "$cspid") - $s0) / $refreshes, 2))")
	warm_wall=$(printf '%s\n' "${walls[@]}" | median)
	warm_ms=$(printf '%s\n' "${nets[@]}" | median)
}

# ---- the slowest single cluster: each provider's solo cluster alone, same latency
slow_cold=0 slow_warm=0 solo_rows=""
for p in gke aks hyperpod; do
	db=$(newdb "solo_$p")
	register "$db" solo "solo-$p" >/dev/null
	measure "$db" "$work/solo-$p.log" solo
	stop_fleetd
	echo "solo $p: cold ${cold_ms} ms, warm ${warm_ms} ms (wall ${warm_wall} ms), ok $ok_n, $calls_n calls"
	solo_rows+="| single $p cluster, alone | ${cold_ms%.*} ms | ${warm_ms%.*} ms | ${warm_wall} ms | $ok_n ok | | fleetd ${cpu_fleetd} s; $calls_n calls | |"$'\n'
	slow_cold=$(python3 -c "print(max($slow_cold, $cold_ms))")
	slow_warm=$(python3 -c "print(max($slow_warm, $warm_wall))")
done

# ---- the whole fleet
db=$(newdb fleet_all)
register "$db" bench >"$work/register.out"
reg=$(cat "$work/register.out")
echo "$reg"
nreg=$(psql -qAt "$db" -c "SELECT count(*) FROM clusters")
ncl=$(psql -qAt "$db" -c "SELECT count(*) FROM clouds WHERE state = 'active'")
nreal=$(psql -qAt "$db" -c "SELECT count(DISTINCT (provider, region)) FROM clouds")
tok=$(DATABASE_URL=$db "$bin/fleetd" token create --name search --role viewer --env '*' | grep '^fleet_')
rows=""
for dc in $concs; do
	measure "$db" "$work/fleet-$dc.log" "$dc"
	rss=$(awk '/VmHWM/ {print $2}' "/proc/$fpid/status")
	lat_avg=$(curl -sf -H "Authorization: Bearer $FLEETD_METRICS_TOKEN" "http://127.0.0.1:$port/metrics" | python3 -c '
import re, sys
s, c = {}, {}
for l in sys.stdin:
    m = re.match(r"fleetd_provider_latency_seconds_(sum|count)\{provider=\"(\w+)\"\} (\S+)", l)
    if m:
        (s if m.group(1) == "sum" else c)[m.group(2)] = float(m.group(3))
print(", ".join("%s %.0f ms" % (k, 1000 * s[k] / c[k]) for k in s if c.get(k)))')
	echo "fleet, $dc connections: cold ${cold_ms} ms, warm ${warm_ms} ms (wall ${warm_wall} ms), ok $ok_n failed $fail_n, VmHWM ${rss} kB, CPU/refresh fleetd ${cpu_fleetd}s cloudsim ${cpu_cloudsim}s, connections opened/refresh ${conns_warm}, calls/refresh $calls_n; mean call latency: $lat_avg"
	ratio_cold=$(python3 -c "print(f'{$cold_ms / $slow_cold:.1f}')")
	ratio_warm=$(python3 -c "print(f'{$warm_wall / $slow_warm:.1f}')")
	rows+="| all $nreg clusters, $dc poller connections | ${cold_ms%.*} ms (${ratio_cold}x) | ${warm_ms%.*} ms | ${warm_wall} ms (${ratio_warm}x) | $ok_n ok, $fail_n failed | $((rss / 1024)) MB | fleetd ${cpu_fleetd} s, cloudsim ${cpu_cloudsim} s; ${conns_warm} connections opened; $calls_n calls | $lat_avg |"$'\n'
	[ "$dc" = "${concs##* }" ] || stop_fleetd
done

# ---- search: every environment, 16 H100 in one rack, fresh snapshots (fleetd still up)
search_rows="" all_t=()
for env in $(psql -qAt "$db" -c "SELECT name FROM environments ORDER BY name"); do
	body="{\"environment\":\"$env\",\"flavor\":\"nvidia-h100-80gb\",\"count\":16,\"topology\":\"rack\"}"
	curl -sf -H "Authorization: Bearer $tok" -H 'Content-Type: application/json' \
		-X POST "http://127.0.0.1:$port/v1/capacity/search" -d "$body" >"$work/search-$env.json"
	read -r ncand nrej nreg_env <<<"$(python3 -c '
import json, sys
a = json.load(open(sys.argv[1]))
print(len(a["candidates"]), len(a["rejected"]), sys.argv[2])' "$work/search-$env.json" \
		"$(psql -qAt "$db" -c "SELECT count(*) FROM clusters k JOIN clouds c ON c.id = k.cloud_id WHERE c.environment = '$env'")")"
	[ $((ncand + nrej)) -eq "$nreg_env" ] || { echo "search $env: $ncand + $nrej != $nreg_env clusters" >&2; exit 1; }
	ts=()
	for _ in $(seq "$searches"); do
		ts+=("$(curl -sf -o /dev/null -w '%{time_total}' -H "Authorization: Bearer $tok" \
			-H 'Content-Type: application/json' -X POST \
			"http://127.0.0.1:$port/v1/capacity/search" -d "$body")")
	done
	all_t+=("${ts[@]}")
	med=$(printf '%s\n' "${ts[@]}" | median)
	regions=$(psql -qAt "$db" -c "SELECT count(*) FROM clouds WHERE environment = '$env'")
	echo "search $env ($regions regions, $nreg_env clusters): median $(python3 -c "print(round($med * 1000, 1))") ms, $ncand candidates, $nrej rejected"
	search_rows+="| search \`$env\`: $regions regions, $nreg_env clusters ($ncand candidates, $nrej rejected with reasons) | $(python3 -c "print(f'{$med * 1000:.1f} ms ({$med * 1000 / $lat:.2f}x)')") |"$'\n'
done
smed=$(printf '%s\n' "${all_t[@]}" | median)
stop_fleetd

{
	echo
	echo "## Capacity refresh and search ($(date -u +%Y-%m-%d), \`bash bench/capacity.sh\`, BENCH_POLL_CONCURRENCY=\"$concs\")"
	echo
	echo "Machine: $(nproc) cores shared with other work; load average $load0 at the start, $(cut -d' ' -f1-3 /proc/loadavg) at the end."
	echo
	echo "cloudsim fleet from \`bench/capacity_fleet.py gen\`: $ncl clouds (environment x provider x region; $nreal distinct real catalog regions, each used by up to 4 environments because fleetd allows one cloud per environment, provider and region), $nreg member clusters of the three providers, ${lat} ms added to every provider, identity and Kubernetes call. Registration through the API (phase 1, \`/_sim/iam\`, phase 2, clusters). Refresh: cold = first after start (credentials fetched), warm = median of $refreshes NOTIFY-triggered ones; network = the poller's own \`ms\`, wall = NOTIFY until the refresh is logged (rows written). Ratios: cold network / slowest solo cold, warm wall / slowest solo warm wall (target ≤ 3x); search / ${lat} ms (target ≤ 1.5x)."
	echo
	echo "| refresh | cold (network) | warm (network) | warm (wall) | clusters | fleetd VmHWM | CPU (connections opened, calls) per warm refresh | mean call latency |"
	echo "|---|---|---|---|---|---|---|---|"
	printf '%s' "$solo_rows"
	printf '%s' "$rows"
	echo
	echo "| search (POST /v1/capacity/search, 16 x nvidia-h100-80gb in one rack, median of $searches) | time_total |"
	echo "|---|---|"
	printf '%s' "$search_rows"
	echo "| all environments | $(python3 -c "print(f'{$smed * 1000:.1f} ms ({$smed * 1000 / $lat:.2f}x)')") |"
} >>"${BENCH_RESULTS:-$top/bench/RESULTS.md}"
echo "appended to ${BENCH_RESULTS:-bench/RESULTS.md}"
