#!/usr/bin/env bash
# bench/api.sh — issue 17: fleetd's API against the database's own ceiling, in one run, on
# one durable Postgres (scripts/pg.sh: fsync, full_page_writes, synchronous_commit on) that
# fleetd and pgbench share.  Seeds BENCH_CLUSTERS clusters with capacity (as
# bench/scheduler.sh does), 30 queues and BENCH_JOBS jobs (default 100,000: 30% succeeded,
# 10% failed, 10% running, 50% pending); then, for fleetd API-only (FLEETD_WORKERS=none)
# and fleetd with background workers (BENCH_WORKERS, default every loop but the poller:
# the bench's clusters are not reachable), wrk with 32 connections on
#   GET /v1/jobs/{id}, GET /v1/jobs?limit=20 (plain, ?state=running, ?queue=q-7),
#   GET /v1/capacity, POST /v1/jobs (unique names, queue and flavor present: admission
#   checks run), POST /v1/jobs/{id}/cancel (each pending job cancelled once)
# with p50/p99, pgbench -S and -N (8 clients) just before each mode, fleetd's VmHWM, and
# the ratios against the targets.  Prints one result block; BENCH_RECORD=1 also appends it
# to bench/RESULTS.md.  Needs a release build (make build; BENCH_BUILD names another).
# Knobs: BENCH_DURATION (per wrk run, default 10s; the cancel run BENCH_CANCEL_DURATION,
# default 5s, as each pending job is cancelled once), BENCH_JOBS, BENCH_CLUSTERS,
# BENCH_WORKERS, BENCH_MODES ("api workers"), BENCH_PERF=1 (perf record -g of fleetd and of
# every Postgres process during each run; a summary per route, top symbols of each with the
# command and date, goes to bench/profiles/<route>.txt (API-only) and
# bench/profiles/workers-<route>.txt; raw data under $BENCH_PERF_DIR, default
# /tmp/fleetd-api-perf).  Issue 17 accepts a missed target only with its profile: the record
# run is `BENCH_PERF=1 BENCH_RECORD=1 bash bench/api.sh`.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
. "$top/bench/lib.sh"
dur=${BENCH_DURATION:-10s}
njobs=${BENCH_JOBS:-100000}
nclusters=${BENCH_CLUSTERS:-500}
modes=${BENCH_MODES:-api workers}
workers=${BENCH_WORKERS:-scheduler,dispatch,status,mover,janitor,sweep}
conns=32
fpid=
bench_work api
command -v wrk >/dev/null || bash "$top/scripts/deps.sh"
bench_need fleetd
started=$(date -u '+%Y-%m-%d %H:%M:%S UTC')
load0=$(cut -d' ' -f1-3 /proc/loadavg)

bench_pg
pgserver=$work/pg	# pg.sh keeps the server's files elsewhere when postgres cannot reach $work
[ -f "$work/pg/server_dir" ] && pgserver=$(cat "$work/pg/server_dir")
pgmaster=$(head -1 "$pgserver/data/postmaster.pid")
psql() { "$pgbin/psql" -qAtX -v ON_ERROR_STOP=1 "$@"; }
durable=$(psql "$DATABASE_URL" -c "SELECT string_agg(name || '=' || setting, ', ' ORDER BY name)
	FROM pg_settings WHERE name IN ('fsync', 'full_page_writes', 'synchronous_commit')")
export FLEETD_LOG_LEVEL=warn FLEETD_SNAPSHOT_MAX_AGE=1000000
export FLEETD_MASTER_KEY=MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=
"$bin/fleetd" migrate >/dev/null
token=$("$bin/fleetd" token create --name bench --role operator --env '*' | grep '^fleet_')

# ---- the fleet (as bench/scheduler.sh), 30 queues, the jobs
echo "seeding $nclusters clusters, 30 queues, $njobs jobs..." >&2
bench_seed_fleet $(( (nclusters + 49) / 50 ))
psql "$DATABASE_URL" -c "UPDATE clusters SET state = 'ready'"
psql "$DATABASE_URL" -v njobs="$njobs" -v bench_job_spec="$bench_job_spec" <<'SQL'
WITH k AS (SELECT id, row_number() OVER (ORDER BY name) - 1 AS n, count(*) OVER () AS total
             FROM clusters)
INSERT INTO jobs (id, name, environment, queue_id, kind, priority_class, priority, spec, state,
                  attempt, cluster_id, placement, enqueued_at, started_at, finished_at)
SELECT gen_random_uuid(), 'job-' || i, 'bench', q.id, 'RayJob', 'default', (i % 3) * 10,
       :bench_job_spec,
       s.state, CASE WHEN s.state = 'pending' THEN 0 ELSE 1 END,
       CASE WHEN s.state = 'pending' THEN NULL ELSE k.id END,
       CASE WHEN s.state = 'pending' THEN NULL ELSE jsonb_build_object('cluster', k.id,
         'pool', 'gpu', 'flavor', 'nvidia-h100-80gb') END,
       now() - make_interval(secs => :njobs - i),
       CASE WHEN s.state <> 'pending' THEN now() - make_interval(secs => :njobs - i) END,
       CASE WHEN s.state IN ('succeeded', 'failed') THEN now() END
  FROM generate_series(0, :njobs - 1) i
  JOIN queues q ON q.name = 'q-' || (i % 30)
  JOIN k ON k.n = i % k.total
  CROSS JOIN LATERAL (SELECT CASE WHEN i % 10 < 3 THEN 'succeeded' WHEN i % 10 = 3 THEN 'failed'
                                  WHEN i % 10 = 4 THEN 'running' ELSE 'pending' END AS state) s;
-- numbered already (migrations/0010): the event sequencer has nothing to catch up on
INSERT INTO job_events (job_id, type, from_state, to_state, attempt, message, seq)
SELECT id, 'submitted', NULL, 'pending', 0, 'job submitted', row_number() OVER (ORDER BY id)
  FROM jobs;
UPDATE job_event_seq SET last = (SELECT coalesce(max(seq), 0) FROM job_events);
VACUUM ANALYZE;
SQL
psql "$DATABASE_URL" -c "SELECT id FROM jobs ORDER BY random() LIMIT 5000" >"$work/ids"
psql "$DATABASE_URL" -c "SELECT id FROM jobs WHERE state = 'pending' ORDER BY random()" >"$work/pending"

# pgbench's own tables in a database of their own on the same server.
psql "$DATABASE_URL" -c "CREATE DATABASE pgb" >/dev/null
pgurl=${DATABASE_URL%/*}/pgb
"$pgbin/pgbench" -i -q -s "${BENCH_PGBENCH_SCALE:-10}" "$pgurl" >/dev/null 2>&1
pgbench_tps() {	# pgbench_tps -S|-N
	"$pgbin/pgbench" "$1" -c 8 -j 2 -T "${dur%s}" "$pgurl" 2>/dev/null | awk '/^tps/ {print $3; exit}'
}

# ---- wrk scripts
cat >"$work/get.lua" <<'LUA'
local ids = {}
function init(args)
	for l in io.lines(args[1]) do ids[#ids + 1] = l end
	math.randomseed(os.time() + math.floor(os.clock() * 1e6))
end
request = function() return wrk.format("GET", "/v1/jobs/" .. ids[math.random(#ids)]) end
LUA
cat >"$work/submit.lua" <<'LUA'
local n, threads = 0, 0
tid = 0
local flavors = { "nvidia-h100-80gb", "nvidia-a100-80gb", "nvidia-l4" }
function setup(thread) thread:set("tid", threads); threads = threads + 1 end
function init(args) prefix = args[1] .. "-" .. tid end
request = function()
	n = n + 1
	local body = '{"environment":"bench","kind":"RayJob","queue":"q-' .. (n % 30) ..
	    '","name":"' .. prefix .. '-' .. n .. '","ray_version":"2.52.0",' ..
	    '"entrypoint":"python train.py","head":{"cpu":"1","memory":"2Gi"},' ..
	    '"worker_groups":[{"name":"w","replicas":' .. (1 + n % 2) .. ',"cpu":"8",' ..
	    '"memory":"64Gi","accelerator":{"flavor":"' .. flavors[1 + n % 3] ..
	    '","count":' .. ({ 1, 2, 4 })[1 + n % 3] .. '}}]}'
	-- a headers table replaces wrk.headers (the token): copy them
	local h = { ["Content-Type"] = "application/json" }
	for k, v in pairs(wrk.headers) do h[k] = v end
	return wrk.format("POST", "/v1/jobs", h, body)
end
LUA
# Each thread takes every threads-th pending id from its own offset: each job once.
cat >"$work/cancel.lua" <<'LUA'
local ids, n, threads = {}, 0, 0
tid = 0
function setup(thread) thread:set("tid", threads); threads = threads + 1 end
function init(args)
	local all, k, i = {}, tonumber(args[2]), tonumber(args[3])
	for l in io.lines(args[1]) do all[#all + 1] = l end
	nthreads = tonumber(args[4])
	-- this run's slice [i/k, (i+1)/k) of the pending ids
	local lo, hi = math.floor(#all * i / k) + 1, math.floor(#all * (i + 1) / k)
	for j = lo + tid, hi, nthreads do ids[#ids + 1] = all[j] end
end
request = function()
	n = n + 1
	return wrk.format("POST", "/v1/jobs/" .. ids[1 + (n - 1) % #ids] .. "/cancel")
end
LUA

port=$(bench_free_port)
start_fleetd() {	# start_fleetd WORKERS
	FLEETD_LISTEN=127.0.0.1:$port FLEETD_WORKERS=$1 "$bin/fleetd" serve >>"$work/fleetd.log" 2>&1 &
	fpid=$!
	pids=("$fpid")	# one fleetd at a time: the one the exit trap stops
	for _ in $(seq 200); do curl -sf "http://127.0.0.1:$port/healthz" >/dev/null && return; sleep 0.1; done
	echo "fleetd did not start" >&2; tail "$work/fleetd.log" >&2; exit 1
}
stop_fleetd() { kill "$fpid"; wait "$fpid" 2>/dev/null || true; fpid=; pids=(); }
perf_top() {	# perf_top DATA: the top self-time symbols, no call graph
	perf report -i "$1" --no-children --sort dso,sym --stdio -g none --percent-limit 0.4 \
		2>/dev/null | grep -v '^#' | grep -v '^$' | head -30 || true
}
perf_samples() {	# perf_samples DATA: how many samples
	perf report -i "$1" --stdio -n --sort comm -g none 2>/dev/null |
		awk '/^ +[0-9.]+%/ {n += $(NF - 1)} END {print n + 0}' || true
}
bench() {	# bench MODE NAME PATH [LUA [ARGS...]]: wrk output in $work/MODE-NAME.wrk
	local mode=$1 name=$2 path=$3 perf= perfpg= script=() pdir= tag= pgpids= t0 l0
	shift 3
	if [ $# -gt 0 ]; then script=(-s "$1"); shift; fi
	if [ "${BENCH_PERF:-0}" = 1 ]; then
		pdir=${BENCH_PERF_DIR:-/tmp/fleetd-api-perf}
		tag=$name; [ "$mode" = api ] || tag=$mode-$name
		mkdir -p "$pdir" "$top/bench/profiles"
		# the postmaster and its children (backends forked later are followed)
		pgpids=$( (echo "$pgmaster"; pgrep -P "$pgmaster") | paste -sd, -)
		perf record -g -o "$pdir/$tag.fleetd.data" -p "$fpid" -- sleep "${dur%s}" \
			>/dev/null 2>&1 & perf=$!
		perf record -g -o "$pdir/$tag.postgres.data" -p "$pgpids" -- sleep "${dur%s}" \
			>/dev/null 2>&1 & perfpg=$!
	fi
	t0=$(date -u '+%Y-%m-%d %H:%M:%S UTC'); l0=$(cut -d' ' -f1-3 /proc/loadavg)
	wrk -t2 -c$conns -d"$dur" --latency -H "Authorization: Bearer $token" "${script[@]}" \
		"http://127.0.0.1:$port$path" -- "$@" >"$work/$mode-$name.wrk" 2>&1 || true
	if [ -n "$perf" ]; then
		wait "$perf" "$perfpg" || true
		{
			echo "# bench/api.sh profile: $mode mode, $name ($path)"
			echo "# command: BENCH_PERF=1 bash bench/api.sh (BENCH_DURATION=$dur, BENCH_JOBS=$njobs," \
				"BENCH_CLUSTERS=$nclusters, FLEETD_WORKERS=$([ "$mode" = api ] && echo none || echo "$workers"))"
			echo "# date: $t0, commit $(git -C "$top" rev-parse --short HEAD 2>/dev/null || echo unknown)," \
				"load average at start $l0"
			echo "# perf record -g -p <fleetd> and -p <postmaster + backends>, for the wrk run;" \
				"perf report --no-children --sort dso,sym (self time; % of each process's samples)"
			echo "# wrk: $(awk '/Requests\/sec/ {r = $2} /^ +99%/ {p = $2}
				END {printf "%s rps, p99 %s", r, p}' "$work/$mode-$name.wrk")"
			echo "# samples (4 kHz: 4,000 = one CPU second): fleetd" \
				"$(perf_samples "$pdir/$tag.fleetd.data"), postgres" \
				"$(perf_samples "$pdir/$tag.postgres.data")"
			echo
			echo "## fleetd"
			perf_top "$pdir/$tag.fleetd.data"
			echo
			echo "## postgres (all of the server's processes: fleetd's backends, WAL writer, ...)"
			perf_top "$pdir/$tag.postgres.data"
		} >"$top/bench/profiles/$tag.txt"
	fi
	awk -v m="$mode" -v n="$name" '/Requests\/sec/ {r = $2} /Non-2xx/ {x = $NF}
		END {printf "%s %s: %s rps, non-2xx %s\n", m, n, r, x + 0}' "$work/$mode-$name.wrk" >&2
}

slice=0
nslices=$(wc -w <<<"$modes")
for mode in $modes; do
	echo "$mode: pgbench -S, -N..." >&2
	echo "$(pgbench_tps -S)" >"$work/$mode-pgS"
	echo "$(pgbench_tps -N)" >"$work/$mode-pgN"
	if [ "$mode" = api ]; then start_fleetd none; else start_fleetd "$workers"; sleep 2; fi
	bench "$mode" get "/v1/jobs/x" "$work/get.lua" "$work/ids"
	bench "$mode" list "/v1/jobs?limit=20"
	bench "$mode" list_state "/v1/jobs?limit=20&state=running"
	bench "$mode" list_queue "/v1/jobs?limit=20&queue=q-7"
	bench "$mode" capacity "/v1/capacity"
	bench "$mode" submit "/v1/jobs" "$work/submit.lua" "$mode"
	BENCH_DURATION_SAVE=$dur; dur=${BENCH_CANCEL_DURATION:-5s}	# each pending job once
	bench "$mode" cancel "/v1/jobs/x/cancel" "$work/cancel.lua" "$work/pending" \
		"$nslices" "$slice" 2
	dur=$BENCH_DURATION_SAVE
	awk '/VmHWM/ {print $2}' "/proc/$fpid/status" >"$work/$mode-hwm"
	stop_fleetd
	slice=$((slice + 1))
done
load1=$(cut -d' ' -f1-3 /proc/loadavg)
commit=$(git -C "$top" rev-parse --short HEAD 2>/dev/null || echo unknown)

python3 - "$work" "$modes" "$started" "$load0" "$load1" "$dur" "$njobs" "$nclusters" \
	"$workers" "$durable" "$commit" >"$work/result.md" <<'PY'
import os, re, sys
work, modes, started, load0, load1, dur, njobs, nclusters, workers, durable, commit = sys.argv[1:]
def ms(s):
    m = re.match(r"([\d.]+)(us|ms|s|m)$", s)
    if not m:
        return float("nan")
    return float(m.group(1)) * {"us": 1e-3, "ms": 1, "s": 1e3, "m": 6e4}[m.group(2)]
def wrk(mode, name):
    t = open(os.path.join(work, "%s-%s.wrk" % (mode, name))).read()
    d = {"rps": 0.0, "p50": float("nan"), "p99": float("nan"), "errors": 0, "requests": 0}
    m = re.search(r"Requests/sec:\s+([\d.]+)", t)
    if m: d["rps"] = float(m.group(1))
    m = re.search(r"^\s+50%\s+(\S+)", t, re.M)
    if m: d["p50"] = ms(m.group(1))
    m = re.search(r"^\s+99%\s+(\S+)", t, re.M)
    if m: d["p99"] = ms(m.group(1))
    m = re.search(r"(\d+) requests in", t)
    if m: d["requests"] = int(m.group(1))
    m = re.search(r"Non-2xx or 3xx responses: (\d+)", t)
    if m: d["errors"] += int(m.group(1))
    m = re.search(r"Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)", t)
    if m: d["errors"] += sum(int(x) for x in m.groups())
    return d
def num(p):
    try:
        return float(open(os.path.join(work, p)).read().strip())
    except Exception:
        return float("nan")
routes = [("get", "GET /v1/jobs/{id}", "S", 0.5, True),
          ("list", "GET /v1/jobs?limit=20", "S", 0.25, True),
          ("list_state", "GET /v1/jobs?limit=20&state=running", "S", 0.25, True),
          ("list_queue", "GET /v1/jobs?limit=20&queue=q-7", "S", 0.25, True),
          ("capacity", "GET /v1/capacity", None, None, True),
          ("submit", "POST /v1/jobs", "N", 0.6, False),
          ("cancel", "POST /v1/jobs/{id}/cancel", None, None, False)]
def met(ok):
    return "met" if ok else "**missed**"
print("### API (%s, `bash bench/api.sh`, commit %s)" % (started, commit))
print()
print("Command: `bash bench/api.sh` (BENCH_DURATION=%s, BENCH_JOBS=%s, BENCH_CLUSTERS=%s). "
      "Postgres: scripts/pg.sh, %s, shared by fleetd and pgbench. wrk -t2 -c32 --latency; "
      "pgbench -c 8 -j 2 (scale 10, own database) just before each mode. Load average at the "
      "start %s, at the end %s (2 cores)." % (dur, njobs, nclusters, durable, load0, load1))
ncancel = sum(1 for _ in open(os.path.join(work, "pending"))) // len(modes.split())
for mode in modes.split():
    S, N = num("%s-pgS" % mode), num("%s-pgN" % mode)
    hwm = num("%s-hwm" % mode)
    label = ("fleetd API-only (FLEETD_WORKERS=none)" if mode == "api"
             else "fleetd with workers (FLEETD_WORKERS=%s)" % workers)
    print()
    print("%s: pgbench -S %.0f tps, pgbench -N %.0f tps; fleetd VmHWM %.1f MiB" % (label, S, N, hwm / 1024))
    print()
    print("| route | requests/s | p50 ms | p99 ms | errors | ratio | target | |")
    print("|---|---|---|---|---|---|---|---|")
    for key, name, base, target, read in routes:
        d = wrk(mode, key)
        checks, cells = [], []
        ratio = ""
        if base:
            b = S if base == "S" else N
            r = d["rps"] / b if b == b and b > 0 else float("nan")
            ratio = "%.2f x pgbench -%s" % (r, base)
            cells.append("≥ %.2f x" % target)
            checks.append(r >= target)
        if read:
            cells.append("p99 ≤ 20 ms")
            checks.append(d["p99"] <= 20)
        cells.append("0 errors")
        checks.append(d["errors"] == 0 and d["requests"] > 0)
        if key == "cancel" and d["requests"] > ncancel:
            cells.append("(only %d pending jobs for this run: cancels beyond them answer 409;"
                         " lower BENCH_CANCEL_DURATION)" % ncancel)
        print("| %s | %.0f | %.2f | %.2f | %d of %d | %s | %s | %s |" % (
            name, d["rps"], d["p50"], d["p99"], d["errors"], d["requests"], ratio,
            ", ".join(cells), met(all(checks))))
PY
cat "$work/result.md"
if [ "${BENCH_RECORD:-0}" = 1 ]; then
	{ echo; cat "$work/result.md"; } >>"$top/bench/RESULTS.md"
fi
