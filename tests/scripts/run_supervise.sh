#!/usr/bin/env bash
# run_supervise: `make run`'s supervisor (scripts/run.sh on a free port with its own state
# folder) — kill -9 of fleetd: it is back and ready within 3 s, cloudsim and Postgres are the
# same processes, and the job submitted before the kill is still there and runs.
set -euo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
build=${FLEETD_BUILD_DIR:-$top/build/asan}
. "$top/tests/lib/run_stack.sh"
# DATABASE_URL unset: run.sh starts its own Postgres under the state folder, as make run does
run_stack_start run-test FLEETD_MAX_RESTARTS=3
# the banner names the token's file, never the token
grep -qF "$tok" "$state/run.out" && fail "run.sh printed the admin token"
grep -q "admin token: in $state/admin.token" "$state/run.out" || fail "run.sh does not name the token's file"
echo "run_supervise: the banner names $state/admin.token and does not print the token"
# the README's first job, submitted the README's way (fleetctl and examples/first-job.json)
job=$(FLEET_URL=$url FLEET_TOKEN=$tok "$build/fleetctl" jobs submit -f "$top/examples/first-job.json" |
	sed -n 's/^job \([0-9a-f-]*\) submitted.*/\1/p')
[ -n "$job" ] || fail "job not submitted"

fleetd=$(cat "$state/fleetd.pid")
# the server's files: in the state folder, or in the folder of its own pg.sh names there
pgdata=$state/pg/data
[ -f "$state/pg/server_dir" ] && pgdata=$(cat "$state/pg/server_dir")/data
pg=$(head -n1 "$pgdata/postmaster.pid")
cloudsim=$(pgrep -f -- "--state-dir $state/cloudsim" | head -n1)
[ -n "$cloudsim" ] || fail "no cloudsim process"

kill -9 "$fleetd"
t0=$(date +%s%N)
ready=0
for _ in $(seq 100); do
	if curl -sf "$url/readyz" >/dev/null 2>&1; then ready=1; break; fi
	sleep 0.05
done
t1=$(date +%s%N)
ms=$(( (t1 - t0) / 1000000 ))
echo "run_supervise: fleetd killed with SIGKILL, ready again after ${ms} ms"
[ "$ready" = 1 ] || fail "fleetd not ready after the kill"
[ "$ms" -le 3000 ] || fail "fleetd took ${ms} ms to be ready (limit 3000)"
new=$(cat "$state/fleetd.pid")
[ "$new" != "$fleetd" ] || fail "fleetd.pid did not change"
kill -0 "$pg" 2>/dev/null || fail "postgres was stopped"
[ "$(head -n1 "$pgdata/postmaster.pid")" = "$pg" ] || fail "postgres was restarted"
kill -0 "$cloudsim" 2>/dev/null || fail "cloudsim was stopped"
grep -q "supervisor: fleetd exited" "$state/fleetd.log" || fail "no supervisor line in fleetd.log"

# nothing lost: the job is there and goes on to run
state_of() { api "$url/v1/jobs/$job" | python3 -c 'import json,sys; print(json.load(sys.stdin)["state"])'; }
st=
for _ in $(seq 150); do
	st=$(state_of)
	[ "$st" = running ] || [ "$st" = succeeded ] && break
	sleep 0.2
done
echo "run_supervise: job $job is $st after the restart"
[ "$st" = running ] || [ "$st" = succeeded ] || fail "job is $st, not running"
# and the README's kubectl line sees it on its member cluster (.fleet/cloudsim/kubeconfig)
cl=$(api "$url/v1/jobs/$job" | python3 -c 'import json,sys; print(json.load(sys.stdin)["cluster"])')
objs=$(kubectl --kubeconfig "$state/cloudsim/kubeconfig" --context "$cl" get rayjobs -A -o name) ||
	fail "kubectl with the demo kubeconfig failed on $cl"
# a job that already succeeded may have been cleaned up; a running one must be there
[ "$(state_of)" != running ] || grep -q '^rayjob.ray.io/first-job-' <<<"$objs" ||
	fail "kubectl does not see the running first job on $cl"
echo "run_supervise: kubectl sees the first job on $cl"

# a crash loop stops after FLEETD_MAX_RESTARTS in a minute, without touching the others
for i in 1 2 3 4; do
	p=$(cat "$state/fleetd.pid" 2>/dev/null || true)
	[ -n "$p" ] && kill -9 "$p" 2>/dev/null || true
	for _ in $(seq 100); do
		q=$(cat "$state/fleetd.pid" 2>/dev/null || true)
		{ [ -n "$q" ] && [ "$q" != "$p" ]; } || grep -q "not restarting" "$state/fleetd.log" && break
		sleep 0.05
	done
done
grep -q "not restarting" "$state/fleetd.log" || fail "the supervisor did not give up on a crash loop"
echo "run_supervise: ok"
