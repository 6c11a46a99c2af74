#!/usr/bin/env bash
# bench/dispatch.sh — dispatch throughput and admitted->dispatched latency for 1,000
# admitted jobs over 100 cloudsim member clusters with 20 ms Kubernetes latency, then the
# time from a stockout to the job running on another cluster, in simulated time (fleetd
# withdraws the job on the autoscaler's FailedScaleUp; the 120 s stockout timeout, scaled
# with cloudsim's clock, is only the backstop).  Appends to bench/RESULTS.md.
# Needs a release build (make build; BENCH_BUILD overrides the folder).
# BENCH_PERF=1: perf of fleetd while it dispatches -> bench/profiles/dispatch.txt.
# BENCH_STOCKOUT=0: the throughput part only (A/B runs; appends nothing).  Prints the CPU
# fleetd and cloudsim spent per dispatched job, a figure less bent by a loaded machine.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
. "$top/bench/lib.sh"
. "$top/bench/perf.sh"
jobs=${BENCH_JOBS:-1000}
nclusters=${BENCH_CLUSTERS:-100}
scale=${BENCH_TIME_SCALE:-10}
bench_work dispatch
bench_need fleetd cloudsim

# ---- fleet: nclusters HyperPod clusters for the throughput run, two for the stockout run
bench_fleet_file "$nclusters" <<'PY'
n = int(sys.argv[1])
base["sim"]["page_size"] = 500
base["clusters"] = [{"name": "b-%03d" % i, "provider": "hyperpod", "environment": "bench",
    "region": "us-west-2", "account": "222222222222", "pools": [
    {"name": "controller", "machine_type": "ml.m5.4xlarge", "nodes": 1},
    {"name": "p5", "machine_type": "ml.p5.48xlarge", "nodes": 3, "price_per_hour": 98.32}]}
    for i in range(n)]
base["clusters"] += [
    {"name": "s-a", "provider": "hyperpod", "environment": "sto", "region": "us-east-1",
     "account": "222222222222", "pools": [
        {"name": "controller", "machine_type": "ml.m5.4xlarge", "nodes": 1},
        {"name": "p5", "machine_type": "ml.p5.48xlarge", "nodes": 1, "min": 0, "max": 3,
         "busy": [8], "stockout": True, "price_per_hour": 90.0}]},
    {"name": "s-b", "provider": "hyperpod", "environment": "sto", "region": "us-east-2",
     "account": "222222222222", "pools": [
        {"name": "controller", "machine_type": "ml.m5.4xlarge", "nodes": 1},
        {"name": "p5", "machine_type": "ml.p5.48xlarge", "nodes": 2, "price_per_hour": 98.32}]}]
PY

bench_pg
bench_cloudsim "$work/fleet.json" --time-scale "$scale"
bench_fleetd_env
token=$("$bin/fleetd" token create --name bench --role admin --env '*' | grep '^fleet_')
port=$(bench_free_port)
start_fleetd() {
	FLEETD_LISTEN=127.0.0.1:$port FLEETD_WORKERS=$1 "$bin/fleetd" serve >>"$work/fleetd.log" 2>&1 &
	fpid=$!
	pids+=($fpid)
	for _ in $(seq 100); do curl -sf "http://127.0.0.1:$port/healthz" >/dev/null && break; sleep 0.1; done
}
q() { psql -qAt "$DATABASE_URL" -c "$1"; }

# ---- registration: clouds by SQL, clusters over the API, capacity as a poller writes it
start_fleetd none
python3 - "$top/scripts" "$work/cs/clusters.json" "http://127.0.0.1:$port" "$token" "$DATABASE_URL" <<'PY'
import json, os, subprocess, sys, urllib.error, urllib.request
sys.path.insert(0, sys.argv.pop(1))	# scripts/: fleetapi
cl = json.load(open(sys.argv[1]))["clusters"]
api, token, db = sys.argv[2], sys.argv[3], sys.argv[4]
# the members' own node names: the renderer pins pods to the nodes the scheduler chose,
# so capacity rows with invented names leave the stockout job's pods pending for ever
state = json.load(urllib.request.urlopen(os.environ["FLEETD_CLOUDSIM_URL"] + "/_sim/state"))
node_names = {(c["name"], p["name"]): [n["name"] for n in p["node_list"]]
    for c in state["clusters"] for p in c["pools"]}
import fleetapi
sql = lambda s: fleetapi.sql(db, s)
post = lambda path, body: fleetapi.post_or_exit(api, token, path, body)
for env in ("bench", "sto"):
    post("/v1/environments", {"name": env})
    post("/v1/queues", {"name": "qq", "environment": env,
        "nominal_quota": {"nvidia-h100-80gb": 100000}})
clouds = {}
for c in cl:
    key = (c["environment"], c["region"])
    if key not in clouds:
        clouds[key] = sql("INSERT INTO clouds (id, name, environment, provider, region, account,"
            " external_id, state, required) VALUES (gen_random_uuid(), '%s-%s', '%s', 'hyperpod',"
            " '%s', '{\"account_id\": \"222222222222\"}', 'x', 'active', '{}') RETURNING id" % (key + key))
    k = post("/v1/clouds/%s/clusters" % clouds[key], {"name": c["name"],
        "api_server": c["api_server"], "ca_cert": open(c["ca_file"]).read(),
        "credentials": {"token": c["token"]}, "provider_cluster_id": c["provider_cluster_id"]})
    names = node_names[(c["name"], "p5")]
    nodes = len(names)
    free = {"s-a": 0, "s-b": 0}.get(c["name"], 8)
    mx = {"s-a": 3}.get(c["name"], nodes)
    topo = json.dumps({"nodes": [{"name": n, "free_accel": free,
        "free_cpu_m": 190000, "free_mem": 2000 << 30, "ready": True} for n in names]})
    ctopo = json.dumps({"nodes": [{"name": n, "free_cpu_m": 14000, "free_mem": 48 << 30,
        "ready": True} for n in node_names[(c["name"], "controller")]]})
    sql("INSERT INTO capacity (cluster_id, pool, flavor, machine_type, price_hour,"
        " accel_per_node, nodes, max_nodes, autoscaling, free_accel, free_cpu_m, free_mem,"
        " topology) VALUES ('%s', 'p5', 'nvidia-h100-80gb', 'ml.p5.48xlarge', 98.32, 8, %d,"
        " %d, %s, %d, 190000, 2147483648000, '%s'), ('%s', 'controller', 'cpu', 'ml.m5.4xlarge',"
        " 0, 0, 1, 1, false, 0, 14000, 51539607552, '%s')" % (k["id"], nodes, mx,
        "true" if mx > nodes else "false", free * nodes, topo, k["id"], ctopo))
PY
seed=$(curl -sf -H "Authorization: Bearer $token" -H 'Content-Type: application/json' \
	-X POST "http://127.0.0.1:$port/v1/jobs" -d '{"environment":"bench","kind":"RayJob",
	"queue":"qq","name":"bench","ray_version":"2.52.0","entrypoint":"python b.py",
	"head":{"cpu":"1","memory":"4Gi"},"worker_groups":[{"name":"gpu","replicas":1,"cpu":"8",
	"memory":"64Gi","accelerator":{"flavor":"nvidia-h100-80gb","count":8}}]}')
kill "$fpid"; wait "$fpid" 2>/dev/null || true

# ---- throughput: jobs admitted with placements, released at once
seed_id=$(python3 -c 'import json,sys;print(json.loads(sys.argv[1])["id"])' "$seed")
q "INSERT INTO jobs (id, name, environment, queue_id, kind, priority_class, priority, spec,
	state, attempt, cluster_id, placement, next_try_at)
	SELECT gen_random_uuid(), 'bench', 'bench', s.queue_id, 'RayJob', 'default', 0, s.spec,
	'admitted', 1, k.id, jsonb_build_object('cluster', k.id, 'cluster_name', k.name,
	'region', 'us-west-2', 'provider', 'hyperpod', 'pool', 'p5', 'head_pool', 'controller',
	'machine_type', 'ml.p5.48xlarge', 'flavor', 'nvidia-h100-80gb', 'spot', false,
	'allocs', '[]'::jsonb), 'infinity'
	FROM generate_series(0, $jobs - 1) i
	JOIN (SELECT id, name, row_number() OVER (ORDER BY name) - 1 AS n FROM clusters
	 WHERE name LIKE 'b-%') k ON k.n = i % $nclusters,
	(SELECT queue_id, spec FROM jobs WHERE id = '$seed_id') s;
	DELETE FROM jobs WHERE id = '$seed_id'"
curl -sf -X POST "$FLEETD_CLOUDSIM_URL/_sim/faults" -d '{"service":"k8s","latency_ms":20}' >/dev/null
start_fleetd dispatch
conns() { curl -sf -H "Authorization: Bearer $token" "http://127.0.0.1:$port/metrics" | awk '/^fleetd_http_client_connections_total/ {print $2; f = 1} END {if (!f) print 0}'; }
c0=$(conns)
# CPU seconds of a process (utime + stime; clock ticks of 1/100 s)
cpu_of() { awk '{printf "%.2f", ($14 + $15) / 100}' "/proc/$1/stat"; }
f0=$(cpu_of "$fpid") s0=$(cpu_of "$cspid")
perf_begin "$fpid" "$work/dispatch.perf"
t0=$(q "UPDATE jobs SET next_try_at = now() WHERE environment = 'bench';
	SELECT pg_notify('fleet_dispatch', ''); SELECT extract(epoch from now())" | tail -1)
for _ in $(seq 600); do
	n=$(q "SELECT count(*) FROM jobs WHERE environment = 'bench' AND state <> 'admitted'")
	[ "$n" -ge "$jobs" ] && break
	sleep 0.5
done
read -r done_n p50 p99 span <<<"$(q "SELECT count(*), round(percentile_cont(0.5) WITHIN GROUP
	(ORDER BY extract(epoch from dispatched_at) - $t0)::numeric, 3),
	round(percentile_cont(0.99) WITHIN GROUP (ORDER BY extract(epoch from dispatched_at)
	- $t0)::numeric, 3), round((max(extract(epoch from dispatched_at)) - $t0)::numeric, 3)
	FROM jobs WHERE environment = 'bench' AND state = 'dispatched'" | tr '|' ' ')"
f1=$(cpu_of "$fpid") s1=$(cpu_of "$cspid")
perf_end dispatch "fleetd dispatching $jobs admitted jobs over $nclusters clusters, 20 ms Kubernetes latency"
applies=$(curl -sf "$FLEETD_CLOUDSIM_URL/_sim/state" | python3 -c 'import json,sys
a = json.load(sys.stdin)["applies"]; print(sum(v for k, v in a.items() if k.startswith("b-")))')
tput=$(python3 -c "print(f'{$done_n/$span:.0f}')")
opened=$(( $(conns) - c0 ))
cpu_ms() { python3 -c "print(f'{($2 - $1) * 1000 / max(1, $done_n):.2f}')"; }
echo "dispatched $done_n/$jobs in ${span}s ($tput jobs/s), admitted->dispatched p50 ${p50}s p99 ${p99}s, applies $applies, connections opened $opened"
echo "CPU per dispatched job: fleetd $(cpu_ms "$f0" "$f1") ms, cloudsim $(cpu_ms "$s0" "$s1") ms (load average $(cut -d' ' -f1-3 /proc/loadavg))"
kill "$fpid"; wait "$fpid" 2>/dev/null || true
# BENCH_STOCKOUT=0: the throughput part only (A/B runs of the dispatcher); nothing recorded
if [ "${BENCH_STOCKOUT:-1}" != 1 ]; then
	[ "${BENCH_RECORD:-1}" != 1 ] || echo "BENCH_STOCKOUT=0: nothing appended to bench/RESULTS.md" >&2
	exit 0
fi

# ---- stockout: s-a's pool is full and cannot grow; the job runs on s-b afterwards
q "UPDATE jobs SET state = 'cancelled', object_uid = NULL WHERE environment = 'bench';
	UPDATE clusters SET stockout_timeout_s = greatest(1, round(120.0 / $scale))"
start_fleetd scheduler,dispatch,status
sid=$(curl -sf -H "Authorization: Bearer $token" -H 'Content-Type: application/json' \
	-X POST "http://127.0.0.1:$port/v1/jobs" -d '{"environment":"sto","kind":"RayJob",
	"queue":"qq","name":"sto","ray_version":"2.52.0","entrypoint":"python b.py",
	"head":{"cpu":"1","memory":"4Gi"},"worker_groups":[{"name":"gpu","replicas":1,"cpu":"8",
	"memory":"64Gi","accelerator":{"flavor":"nvidia-h100-80gb","count":8}}]}' |
	python3 -c 'import json,sys;print(json.load(sys.stdin)["id"])')
for _ in $(seq 200); do
	[ "$(q "SELECT count(*) FROM jobs WHERE id = '$sid' AND state = 'dispatched'")" = 1 ] && break
	sleep 0.1
done
first=$(q "SELECT k.name FROM jobs j JOIN clusters k ON k.id = j.cluster_id WHERE j.id = '$sid'")
# the poller now sees s-b's free nodes
q "UPDATE capacity SET free_accel = 16, topology = jsonb_build_object('nodes', (SELECT
	jsonb_agg(n || '{\"free_accel\": 8}') FROM jsonb_array_elements(topology->'nodes') n))
	WHERE pool = 'p5' AND cluster_id = (SELECT id FROM clusters WHERE name = 's-b')"
# bounded: at most 3 x the 180 s target in simulated time (wall: / time scale)
deadline=$(( $(date +%s) + 540 / scale + 10 ))
ran=0
while [ "$(date +%s)" -lt "$deadline" ]; do
	[ "$(q "SELECT count(*) FROM job_events WHERE job_id = '$sid' AND to_state = 'running' AND attempt >= 2")" -ge 1 ] && { ran=1; break; }
	sleep 0.25
done
read -r wall second <<<"$(q "SELECT coalesce(round(extract(epoch from (SELECT min(at) FROM
	job_events WHERE job_id = '$sid' AND attempt >= 2 AND to_state = 'running') - (SELECT
	min(at) FROM job_events WHERE job_id = '$sid' AND attempt = 1 AND to_state =
	'dispatched'))::numeric, 2), -1), (SELECT coalesce(k.name, '-') FROM jobs j LEFT JOIN
	clusters k ON k.id = j.cluster_id WHERE j.id = '$sid')" | tr '|' ' ')"
if [ "$ran" = 1 ]; then
	sim=$(python3 -c "print(f'{float(\"$wall\") * $scale:.0f}')")
	tries=$(q "SELECT attempt FROM jobs WHERE id = '$sid'")
	echo "stockout on $first -> running on $second after ${wall}s wall = ${sim}s simulated (attempt $tries)"
else
	sim="not reached within $((540 / scale + 10)) s wall ($(q "SELECT state || ' attempt ' ||
		attempt FROM jobs WHERE id = '$sid'"))"
	echo "stockout on $first: job not running on another cluster: $sim" >&2
	q "SELECT j.attempt, j.type, coalesce(j.to_state, ''), coalesce(k.name, ''), left(j.message, 160)
		FROM job_events j LEFT JOIN jobs x ON x.id = j.job_id LEFT JOIN clusters k ON
		k.id = x.cluster_id WHERE j.job_id = '$sid' ORDER BY j.id" >&2
	q "SELECT attempt, decided_at, left(candidates::text, 400) FROM placements WHERE job_id = '$sid' ORDER BY 1" >&2
fi
[ "${BENCH_RECORD:-1}" = 1 ] || exit 0
{
	echo
	echo "## Dispatch ($(date -u +%Y-%m-%d), \`bash bench/dispatch.sh\`, $jobs admitted jobs, $nclusters cloudsim clusters, 20 ms Kubernetes latency, FLEETD_DISPATCH_CONCURRENCY=${FLEETD_DISPATCH_CONCURRENCY:-64}, FLEETD_MEMBER_ROUND=${FLEETD_MEMBER_ROUND:-4})"
	echo
	echo "| measure | value |"
	echo "|---|---|"
	echo "| jobs dispatched | $done_n of $jobs (server-side applies: $applies) |"
	echo "| throughput | $tput jobs/s (all in ${span} s) |"
	echo "| connections fleetd opened to members | $opened (fleetd_http_client_connections_total) |"
	echo "| admitted -> dispatched, median | ${p50} s |"
	echo "| admitted -> dispatched, p99 | ${p99} s |"
	if [ "$ran" = 1 ]; then
		echo "| stockout ($first: FailedScaleUp, 120 s timeout as the backstop) -> running on $second | ${sim} s simulated (${wall} s wall at time scale $scale; target ≤ 60 s) |"
	else
		echo "| stockout ($first: FailedScaleUp, 120 s timeout as the backstop) -> running elsewhere | $sim (target ≤ 60 s simulated) |"
	fi
} >>"$top/bench/RESULTS.md"
