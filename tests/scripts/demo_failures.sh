#!/usr/bin/env bash
# demo_failures: README's "Manual failure injection on make run", step by step on the `make run`
# stack (issue 24): kubectl against cloudsim's demo clusters deletes the node under a running
# job (fleetd re-pins it to a spare), taints a spot node as GKE does before reclaiming it (a
# preemption failure, retried on another node) and OOM-kills a job (cloudsim's outcome
# annotation: the container OOMKilled, exit 137). Then `fleetctl jobs explain` alone must
# explain the job that died: the failure class, pods, ranks, nodes, evidence and where its
# post-mortem is kept; `fleetctl jobs postmortem` prints it after the object is gone.
set -euo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
build=$(cd "${FLEETD_BUILD_DIR:-$top/build/asan}" && pwd)
command -v kubectl >/dev/null || { echo "FAIL: kubectl is needed (the README's client)"; exit 1; }
. "$top/tests/lib/run_stack.sh"
run_stack_start demofail
export FLEET_URL=$url FLEET_TOKEN=$tok NO_COLOR=1 COLUMNS=200
ctl() { "$build/fleetctl" "$@"; }
kc() { kubectl --kubeconfig "$state/cloudsim/kubeconfig" --request-timeout=30s "$@"; }
field() { python3 -c 'import json,sys; d=json.load(sys.stdin)
for k in sys.argv[1].split("."): d=d[k]
print(d)' "$1"; }
# wait_for ID JSON-PREDICATE (python over the job `j`) [SECONDS]
wait_for() {
	local i
	for i in $(seq "${3:-120}"); do
		ctl jobs get "$1" -o json | python3 -c "import json,sys; j=json.load(sys.stdin); sys.exit(0 if ($2) else 1)" &&
			return 0
		sleep 1
	done
	ctl jobs events "$1" || true
	fail "job $1: never $2"
}
# worker_node ID: the node of the job's first running worker pod, and its cluster
worker_node() {
	local cl
	cl=$(ctl jobs get "$1" -o json | field cluster)
	echo "$cl $(kc --context "$cl" get pods -A -l "fleet.io/job-id=$1,ray.io/node-type=worker" \
		-o jsonpath='{.items[?(@.status.phase=="Running")].spec.nodeName}' | cut -d' ' -f1)"
}

# ---- 1. a node lost under a running job: repaired on a spare of its pool
j1=$(ctl jobs submit -f "$top/examples/first-job.json" -o json | field id)
wait_for "$j1" 'j["state"] == "running"'
read -r cl1 node1 < <(worker_node "$j1")
[ -n "$node1" ] || fail "no running worker pod for $j1"
kc --context "$cl1" delete node "$node1" --wait=false
for _ in $(seq 120); do
	ctl jobs events "$j1" | grep -q "repaired: $node1 lost" && break
	sleep 1
done
ctl jobs events "$j1" | tee "$state/ev1.txt" | tail -n 5
grep -q "repaired: $node1 lost" "$state/ev1.txt" || fail "no repaired event after deleting $node1"

# ---- 2. spot reclamation as GKE signals it (taint on the node): retried on another node
j2=$(ctl jobs submit -f "$top/examples/spot-checkpoint.json" -o json | field id)
wait_for "$j2" 'j["state"] == "running"'
read -r cl2 node2 < <(worker_node "$j2")
kc --context "$cl2" taint node "$node2" cloud.google.com/impending-node-termination:NoSchedule
wait_for "$j2" 'j["attempt"] >= 2 and j["state"] == "running"' 240
ctl jobs explain "$j2" | tee "$state/x2.txt" | head -n 12
grep -q "^Last failure (retried or moved on): preemption" "$state/x2.txt" ||
	fail "explain of the reclaimed job does not name the preemption"
grep -q "$node2" "$state/x2.txt" || fail "explain does not name the reclaimed node $node2"

# the two jobs leave (their nodes are gone or going: the third job's room is not theirs)
ctl jobs cancel "$j1" >/dev/null
ctl jobs cancel "$j2" >/dev/null
wait_for "$j1" 'j["state"] == "cancelled"'
wait_for "$j2" 'j["state"] == "cancelled"'

# ---- 3. a job that dies: OOM-killed (cloudsim's outcome annotation plays the kubelet's OOM kill)
j3=$(ctl jobs submit -f "$top/examples/first-job.json" -o json | field id)
wait_for "$j3" 'j["state"] == "running"'
cl3=$(ctl jobs get "$j3" -o json | field cluster)
name3=$(ctl jobs manifest "$j3" -o json | field metadata.name)
ns3=$(ctl jobs manifest "$j3" -o json | field metadata.namespace)
kc --context "$cl3" -n "$ns3" annotate rayjob "$name3" --overwrite \
	cloudsim.fleet.io/outcome=oomkilled cloudsim.fleet.io/run-seconds=1
wait_for "$j3" 'j["state"] == "failed"'
# the object goes (KubeRay's TTL, or here by hand), the explanation stays
kc --context "$cl3" -n "$ns3" delete rayjob "$name3" --ignore-not-found --wait=false
ctl jobs explain "$j3" | tee "$state/x3.txt"
for want in "^Failure: user_code — OOMKilled" "^  pods: " "^  ranks: " "^  nodes: " \
	'^  evidence: .*"exit_code":137' "^  retry: +not retried" "^Post-mortem: " \
	"fleetctl jobs postmortem $j3"; do
	grep -Eq "$want" "$state/x3.txt" || fail "fleetctl jobs explain lacks /$want/"
done
# explain comes first: the failure is its first line
head -n 1 "$state/x3.txt" | grep -q "^Failure: user_code" || fail "the failure is not the first line"
ctl jobs postmortem "$j3" | tee "$state/pm3.txt" | head -n 8
grep -q "OOMKilled" "$state/pm3.txt" || fail "the post-mortem does not keep the OOM kill"
echo "demo_failures: node loss repaired, spot reclaim retried, OOM explained"
