#!/usr/bin/env bash
# bench/status.sh — how fast a status change on a member cluster reaches the job in fleetd,
# and how many member API calls the status worker makes, with watches against polling:
# 3,000 RayJobs running on 300 cloudsim HyperPod clusters (BENCH_JOBS, BENCH_CLUSTERS).
# Latency = the job's state change in fleetd (job_events.at) minus the wall-clock moment
# cloudsim's RayJob changed (/_sim/watch-log), for Initializing->Running (during the ramp)
# and Running->Complete; calls per minute from fleetd_status_member_calls_total over a
# steady window (BENCH_WINDOW_S) with watches, then with FLEETD_STATUS_WATCH=0.
# BENCH_REPLICAS fleetd replicas (default 1) share the clusters by leases.  The
# completions are followed by replicas started one second before the first RayJob
# completes, so the Complete figures include the first seconds after a replica start
# ("after start": the completions of the first 30 s, counted apart).
# At issue 29's size: BENCH_CLUSTERS=1000 BENCH_JOBS=20000 BENCH_REPLICAS=3 (fleet from
# cloudsim's test fleet, one HyperPod cluster per 20 jobs; BENCH_RUN_S must leave room for
# the ramp and both windows).  Needs a release build (make build; BENCH_BUILD overrides the
# folder). Appends to bench/RESULTS.md unless BENCH_NO_RECORD=1.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
. "$top/bench/lib.sh"
jobs=${BENCH_JOBS:-3000}
nclusters=${BENCH_CLUSTERS:-300}
run_s=${BENCH_RUN_S:-300}		# how long each RayJob runs (cloudsim time = wall here)
window=${BENCH_WINDOW_S:-60}
replicas=${BENCH_REPLICAS:-1}
per=$(( (jobs + nclusters - 1) / nclusters ))
bench_work status
bench_need fleetd cloudsim

# ---- fleet: nclusters HyperPod clusters, each with room for its share of the jobs
bench_fleet_file "$nclusters" "$per" "$run_s" <<'PY'
n, per, run_s = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3])
base["sim"].update({"page_size": 500, "job_run_s": run_s, "pod_start_s": 2})
base["clusters"] = [{"name": "w-%03d" % i, "provider": "hyperpod", "environment": "bench",
    "region": "us-west-2", "account": "222222222222", "pools": [
    {"name": "controller", "machine_type": "ml.m5.4xlarge", "nodes": (per + 7) // 8},
    {"name": "p5", "machine_type": "ml.p5.48xlarge", "nodes": per, "price_per_hour": 98.32}]}
    for i in range(n)]
PY

bench_pg
bench_pg_statements_on
bench_cloudsim "$work/fleet.json"
bench_fleetd_env
token=$("$bin/fleetd" token create --name bench --role admin --env '*' | grep '^fleet_')
port=$(bench_free_port)
ports=("$port")
for _ in $(seq 2 "$replicas"); do ports+=("$(bench_free_port)"); done
fpids=()
start_fleetd() {	# start_fleetd WORKERS WATCH [N]: N replicas (default $replicas), the first on $port
	local i n=${3:-$replicas}
	fpids=()
	for i in $(seq 0 $((n - 1))); do
		FLEETD_LISTEN=127.0.0.1:${ports[$i]} FLEETD_INSTANCE_ID=bench-$i FLEETD_WORKERS=$1 \
			FLEETD_STATUS_WATCH=$2 "$bin/fleetd" serve >>"$work/fleetd.log" 2>&1 &
		fpids+=($!)
		pids+=($!)
	done
	for i in $(seq 0 $((n - 1))); do
		for _ in $(seq 100); do curl -sf "http://127.0.0.1:${ports[$i]}/healthz" >/dev/null && break; sleep 0.1; done
	done
	fpid=${fpids[0]}
}
stop_fleetd() { local p; for p in "${fpids[@]}"; do kill "$p"; wait "$p" 2>/dev/null || true; done; }
q() { psql -qAt "$DATABASE_URL" -c "$1"; }
calls() {	# list + watch calls of the status worker so far, over the replicas
	local p
	for p in "${ports[@]:0:${#fpids[@]}}"; do
		curl -sf -H "Authorization: Bearer $token" "http://127.0.0.1:$p/metrics" || true
	done | awk '/^fleetd_status_member_calls_total/ { n += $2 } END { print n + 0 }'
}

# ---- registration (clouds by SQL, clusters over the API, capacity as a poller writes it)
start_fleetd none 1 1
python3 - "$top/scripts" "$work/cs/clusters.json" "http://127.0.0.1:$port" "$token" "$DATABASE_URL" "$per" <<'PY'
import json, subprocess, sys, urllib.error, urllib.request
sys.path.insert(0, sys.argv.pop(1))	# scripts/: fleetapi
cl = json.load(open(sys.argv[1]))["clusters"]
api, token, db, per = sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5])
import fleetapi
sql = lambda s: fleetapi.sql(db, s)
post = lambda path, body: fleetapi.post_or_exit(api, token, path, body)
post("/v1/environments", {"name": "bench"})
post("/v1/queues", {"name": "qq", "environment": "bench",
    "nominal_quota": {"nvidia-h100-80gb": 1000000}})
cloud = sql("INSERT INTO clouds (id, name, environment, provider, region, account,"
    " external_id, state, required) VALUES (gen_random_uuid(), 'bench-hp', 'bench', 'hyperpod',"
    " 'us-west-2', '{\"account_id\": \"222222222222\"}', 'x', 'active', '{}') RETURNING id")
for c in cl:
    post("/v1/clouds/%s/clusters" % cloud, {"name": c["name"], "api_server": c["api_server"],
        "ca_cert": open(c["ca_file"]).read(), "credentials": {"token": c["token"]},
        "provider_cluster_id": c["provider_cluster_id"]})
PY
seed=$(curl -sf -H "Authorization: Bearer $token" -H 'Content-Type: application/json' \
	-X POST "http://127.0.0.1:$port/v1/jobs" -d '{"environment":"bench","kind":"RayJob",
	"queue":"qq","name":"w","ray_version":"2.52.0","entrypoint":"python b.py",
	"head":{"cpu":"1","memory":"4Gi"},"worker_groups":[{"name":"gpu","replicas":1,"cpu":"8",
	"memory":"64Gi","accelerator":{"flavor":"nvidia-h100-80gb","count":8}}]}')
stop_fleetd
seed_id=$(python3 -c 'import json,sys;print(json.loads(sys.argv[1])["id"])' "$seed")
q "INSERT INTO jobs (id, name, environment, queue_id, kind, priority_class, priority, spec,
	state, attempt, cluster_id, placement, next_try_at)
	SELECT gen_random_uuid(), 'w', 'bench', s.queue_id, 'RayJob', 'default', 0, s.spec,
	'admitted', 1, k.id, jsonb_build_object('cluster', k.id, 'cluster_name', k.name,
	'region', 'us-west-2', 'provider', 'hyperpod', 'pool', 'p5', 'head_pool', 'controller',
	'machine_type', 'ml.p5.48xlarge', 'flavor', 'nvidia-h100-80gb', 'spot', false,
	'allocs', '[]'::jsonb), now()
	FROM generate_series(0, $jobs - 1) i
	JOIN (SELECT id, name, row_number() OVER (ORDER BY name) - 1 AS n FROM clusters) k
	 ON k.n = i % $nclusters,
	(SELECT queue_id, spec FROM jobs WHERE id = '$seed_id') s;
	DELETE FROM jobs WHERE id = '$seed_id'"

# ---- ramp with watches: every job dispatched and running
start_fleetd dispatch,status 1
t0=$(date +%s)
for _ in $(seq 1200); do
	n=$(q "SELECT count(*) FROM jobs WHERE state = 'running'")
	[ "$n" -ge "$jobs" ] && break
	[ $(( $(date +%s) - t0 )) -ge $(( run_s / 2 )) ] && break
	sleep 0.5
done
ramp=$(( $(date +%s) - t0 ))
running=$(q "SELECT count(*) FROM jobs WHERE state = 'running'")
echo "ramp: $running/$jobs running after ${ramp}s"

# ---- steady window with watches (and the cost of following: CPU of fleetd and of Postgres,
# statements, memory per replica), then with polling
q "SELECT pg_stat_statements_reset()" >/dev/null
c0=$(calls); f0=$(bench_cpu_s "${fpids[@]}"); p0=$(bench_pg_cpu_s); s0=$(bench_pg_statements)
sleep "$window"
c1=$(calls); f1=$(bench_cpu_s "${fpids[@]}"); p1=$(bench_pg_cpu_s); s1=$(bench_pg_statements)
watch_cpm=$(python3 -c "print(round(($c1 - $c0) * 60 / $window))")
steady_running=$(q "SELECT count(*) FROM jobs WHERE state = 'running'")
mem=$(for p in "${fpids[@]}"; do bench_rss_mib "$p"; done | paste -sd' ')
read -r cpu_f cpu_p stmts <<<"$(python3 -c "
ch = $nclusters * $window / 3600
print('%.1f %.1f %.3f' % (($f1 - $f0) / ch, ($p1 - $p0) / ch,
      ($s1 - $s0) / $window / max($steady_running, 1)))")"
echo "steady ${window}s, $steady_running running: CPU s per cluster-hour fleetd $cpu_f, Postgres $cpu_p; statements/s per running job $stmts; VmRSS/VmHWM MiB per replica: $mem"
echo "statements of the steady window, most called first (calls, total ms, statement):"
q "SELECT calls, round(total_exec_time), left(regexp_replace(query, '\s+', ' ', 'g'), 110)
	FROM pg_stat_statements ORDER BY calls DESC LIMIT 12" | sed 's/^/  /'
echo "FLEET_STEADY running=$steady_running cpu_fleetd=$cpu_f cpu_pg=$cpu_p stmts_per_job_s=$stmts mem=${mem// /,}"
stop_fleetd
start_fleetd dispatch,status 0
sleep 2
c0=$(calls); sleep "$window"; c1=$(calls)
poll_cpm=$(python3 -c "print(round(($c1 - $c0) * 60 / $window))")
stop_fleetd
echo "member calls per minute: watch $watch_cpm, polling $poll_cpm (steady, $running running)"

# ---- completions with watches, followed by replicas started just before the first
first=$(q "SELECT coalesce(extract(epoch FROM min(started_at))::bigint, 0) FROM jobs WHERE state = 'running'")
wait_s=$(( first + run_s - 1 - $(date +%s) ))
[ "$wait_s" -gt 0 ] && sleep "$wait_s"
start_fleetd dispatch,status 1
started_ms=$(date +%s%3N)
for _ in $(seq $(( run_s * 4 ))); do
	n=$(q "SELECT count(*) FROM jobs WHERE state = 'succeeded'")
	[ "$n" -ge "$running" ] && break
	sleep 0.5
done
stop_fleetd

# ---- latencies: fleetd's job_events against cloudsim's wall-clock transitions
curl -sf "$FLEETD_CLOUDSIM_URL/_sim/watch-log" >"$work/log.json"
q "SELECT k.name || '/rayjobs/' || (j.manifest->'metadata'->>'namespace') || '/' ||
	(j.manifest->'metadata'->>'name'), coalesce((SELECT (extract(epoch FROM min(at)) * 1000)::bigint
	FROM job_events v WHERE v.job_id = j.id AND v.to_state = 'running'), -1),
	coalesce((SELECT (extract(epoch FROM min(at)) * 1000)::bigint FROM job_events v
	WHERE v.job_id = j.id AND v.to_state = 'succeeded'), -1)
	FROM jobs j JOIN clusters k ON k.id = j.cluster_id" >"$work/jobs.txt"
read -r rn rp50 rp99 cn cp50 cp99 sn sp50 sp99 <<<"$(python3 - "$work/log.json" "$work/jobs.txt" "$started_ms" <<'PY'
import json, sys
tr = json.load(open(sys.argv[1]))["transitions"]
started = int(sys.argv[3])
run, done, early = [], [], []
for line in open(sys.argv[2]):
    key, r, s = line.strip().split("|")
    t = tr.get(key, [])
    at = {st: ms for st, ms in reversed(t)}	# first time in each state
    if int(r) > 0 and "Running" in at:
        run.append(int(r) - at["Running"])
    if int(s) > 0 and "Complete" in at:
        done.append(int(s) - at["Complete"])
        if at["Complete"] < started + 30000:
            early.append(int(s) - at["Complete"])
def pct(v, p):
    v = sorted(v)
    return v[min(len(v) - 1, int(round(p * (len(v) - 1))))] / 1000 if v else float("nan")
print(len(run), pct(run, .5), pct(run, .99), len(done), pct(done, .5), pct(done, .99),
      len(early), pct(early, .5), pct(early, .99))
PY
)"
echo "Initializing->Running seen by fleetd: n=$rn p50 ${rp50}s p99 ${rp99}s"
echo "Running->Complete seen by fleetd: n=$cn p50 ${cp50}s p99 ${cp99}s"
echo "Running->Complete in the first 30 s after the replicas started: n=$sn p50 ${sp50}s p99 ${sp99}s"
echo "FLEET_STATUS run_p99=$rp99 complete_p99=$cp99 after_start_p99=$sp99 watch_cpm=$watch_cpm poll_cpm=$poll_cpm"
[ "${BENCH_NO_RECORD:-0}" = 1 ] && exit 0
{
	echo
	echo "## Status by watches ($(date -u +%Y-%m-%d), \`bash bench/status.sh\`, $jobs RayJobs on $nclusters cloudsim clusters, $replicas replicas, commit $(git -C "$top" rev-parse --short HEAD), load $(cut -d' ' -f1-3 /proc/loadavg))"
	echo
	echo "| measure | value |"
	echo "|---|---|"
	echo "| jobs running at once | $running of $jobs (ramp ${ramp} s) |"
	echo "| member status change -> job state in fleetd (Running), p50 / p99 | ${rp50} s / ${rp99} s (n=$rn; target p99 ≤ 1 s) |"
	echo "| member status change -> job state in fleetd (Complete), p50 / p99 | ${cp50} s / ${cp99} s (n=$cn) |"
	echo "| same, completions of the first 30 s after the replicas started, p50 / p99 | ${sp50} s / ${sp99} s (n=$sn) |"
	echo "| status worker's member API calls per minute, watches | $watch_cpm |"
	echo "| status worker's member API calls per minute, polling (FLEETD_STATUS_WATCH=0) | $poll_cpm |"
	echo "| steady, watches: CPU s per cluster-hour, fleetd (all replicas) / Postgres | $cpu_f / $cpu_p |"
	echo "| steady, watches: Postgres statements per second per running job | $stmts |"
	echo "| VmRSS/VmHWM MiB per replica | $mem |"
} >>"$top/bench/RESULTS.md"
