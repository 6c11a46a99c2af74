#!/usr/bin/env bash
# demo_moves: README's "Spot to on-demand on `make run`", step by step on the `make run` stack
# (issue 27): the demo's queue `moves` prefers on-demand A100s and takes spot while on-demand
# is full (dev-gke-usc1-moves: one on-demand and one spot node). A job holding the on-demand
# node runs first; the job that prefers on-demand starts on spot and explain says why it stays
# there (no room); the hold is cancelled, the scheduler migrates the job: the checkpoint
# signal reaches its ConfigMap, the job acknowledges it there as its code would (kubectl),
# and its next attempt runs on the on-demand pool with that checkpoint, which explain and
# the events say.
set -euo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
build=$(cd "${FLEETD_BUILD_DIR:-$top/build/asan}" && pwd)
command -v kubectl >/dev/null || { echo "FAIL: kubectl is needed (the README's client)"; exit 1; }
. "$top/tests/lib/run_stack.sh"
run_stack_start demomoves
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
# explain_until ID REGEX [SECONDS]: fleetctl jobs explain until its output matches
explain_until() {
	local i
	for i in $(seq "${3:-120}"); do
		ctl jobs explain "$1" >"$state/explain.txt" 2>&1 || true
		grep -Eq "$2" "$state/explain.txt" && return 0
		sleep 1
	done
	cat "$state/explain.txt"
	fail "fleetctl jobs explain $1 never says /$2/"
}

# ---- 1. the on-demand node is taken
h=$(ctl jobs submit -f "$top/examples/demo/on-demand-hold.json" -o json | field id)
wait_for "$h" 'j["state"] == "running" and j["placement"]["capacity_type"] == "on_demand"'

# ---- 2. the job that prefers on-demand starts on spot; explain says why it stays there
t=$(ctl jobs submit -f "$top/examples/demo/spot-to-on-demand.json" -o json | field id)
wait_for "$t" 'j["state"] == "running" and j["placement"]["capacity_type"] == "spot"'
[ "$(ctl jobs get "$t" -o json | field placement.pool)" = a100-spot ] || fail "not on the spot pool"
explain_until "$t" '^capacity preference: on_demand > spot; on spot; migrations 0 of 2; no_room: ' 120
cat "$state/explain.txt" | head -n 3

# ---- 3. the on-demand node frees; the scheduler migrates the job, with the checkpoint signal
ctl jobs cancel "$h" >/dev/null
cl=$(ctl jobs get "$t" -o json | field cluster)
ns=$(ctl jobs manifest "$t" -o json | field metadata.namespace)
cm=fleet-signal-${t:0:8}-1
req=
for _ in $(seq 180); do
	req=$(kc --context "$cl" -n "$ns" get configmap "$cm" -o jsonpath='{.data.checkpoint_requested_at}' 2>/dev/null || true)
	[ -n "$req" ] && break
	sleep 1
done
[ -n "$req" ] || { ctl jobs events "$t" || true; fail "no checkpoint request in $ns/$cm"; }
[ "$(kc --context "$cl" -n "$ns" get configmap "$cm" -o jsonpath='{.data.reason}')" = move ] ||
	fail "the checkpoint request's reason is not move"
# the job's code writes its checkpoint and acknowledges the request it answers
ack=gs://fleet-dev-checkpoints/train-on-demand/step-1200
kc --context "$cl" -n "$ns" patch configmap "$cm" --type merge \
	-p "{\"data\":{\"ack_requested_at\":\"$req\",\"ack_uri\":\"$ack\"}}" >/dev/null ||
	fail "kubectl patch of the acknowledgement failed"

# ---- 4. the next attempt runs on on-demand with that checkpoint
wait_for "$t" 'j["attempt"] == 2 and j["state"] == "running" and j["placement"]["capacity_type"] == "on_demand"' 300
ctl jobs get "$t" -o json >"$state/job.json"
[ "$(field placement.pool <"$state/job.json")" = a100 ] || fail "attempt 2 is not on the on-demand pool"
[ "$(field capacity_migrations <"$state/job.json")" = 1 ] || fail "capacity_migrations is not 1"
[ "$(field checkpoint.uri <"$state/job.json")" = "$ack" ] || fail "the job's checkpoint is not $ack"
ctl jobs events "$t" | tee "$state/events.txt" | tail -n 8
grep -q "capacity preference: spot -> on_demand" "$state/events.txt" || fail "no migration event"
grep -q "checkpoint acknowledged" "$state/events.txt" || fail "no acknowledged checkpoint in the events"
explain_until "$t" '^capacity preference: on_demand > spot; on on_demand; migrations 1 of 2; on_first_choice' 60
head -n 1 "$state/explain.txt"
ctl jobs cancel "$t" >/dev/null
echo "demo_moves: started on spot, moved to on-demand with checkpoint $ack"
