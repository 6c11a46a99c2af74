#!/usr/bin/env bash
# bench/cloudsim.sh — what cloudsim itself costs at bench/fleet.sh's size: its RSS and CPU
# per member cluster, idle and then under the load fleetd puts on it.  The fleet is
# bench/status.sh's (BENCH_CLUSTERS HyperPod clusters, default 1,000, each with room for
# BENCH_PER_CLUSTER RayJobs, default 20); the load is bench/cloudsim_load.py's:
# BENCH_RUNNING RayJobs per cluster (default 4: the 1,000-cluster row of the last fleet run
# had 3,971 running) created as fleetd renders them, then one list and one watch per cluster and kind as
# fleetd's status worker keeps them (six per cluster: the four ray.io kinds, pods, Warning
# events), with BENCH_LIST_RATE lists per second over random clusters meanwhile.  Prints one
# line per phase with VmRSS/VmHWM, CPU % of a core and the same per cluster.  No Postgres,
# no fleetd.  Needs a release build (make build; BENCH_BUILD overrides the folder).
# Smoke: BENCH_CLUSTERS=50 BENCH_WINDOW_S=10 bash bench/cloudsim.sh.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
. "$top/bench/lib.sh"
nclusters=${BENCH_CLUSTERS:-1000}
per=${BENCH_PER_CLUSTER:-20}
window=${BENCH_WINDOW_S:-30}
bench_work cloudsim
bench_need cloudsim

bench_fleet_file "$nclusters" "$per" <<'PY'
n, per = int(sys.argv[1]), int(sys.argv[2])
base["sim"].update({"page_size": 500, "job_run_s": 100000, "pod_start_s": 2})
base["clusters"] = [{"name": "w-%03d" % i, "provider": "hyperpod", "environment": "bench",
    "region": "us-west-2", "account": "222222222222", "pools": [
    {"name": "controller", "machine_type": "ml.m5.4xlarge", "nodes": (per + 7) // 8},
    {"name": "p5", "machine_type": "ml.p5.48xlarge", "nodes": per, "price_per_hour": 98.32}]}
    for i in range(n)]
PY
bench_cloudsim "$work/fleet.json"
echo "cloudsim pid $cspid, $nclusters clusters, load $(cut -d' ' -f1-3 /proc/loadavg)"
python3 "$top/bench/cloudsim_load.py" "$cspid" "$work/cs" "${BENCH_RUNNING:-4}" "$window" \
	"${BENCH_LIST_RATE:-50}" "$top/tests/fixtures/kuberay/rayjob-hyperpod-ondemand-none-fixed.json"
echo "load at the end $(cut -d' ' -f1-3 /proc/loadavg)"
