#!/usr/bin/env bash
# browser_console: the web console in real Chromium (Debian's chromium; playwright-core and
# axe-core from tests/browser/package-lock.json, no browser download) against the `make run`
# stack (scripts/run.sh on a free port with its own state folder). Screenshots are kept in
# BUILD_DIR/browser-artifacts/. The Costs chart is checked against `fleetctl costs` after a
# job of a team has run.
set -euo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
build=$(cd "${FLEETD_BUILD_DIR:-$top/build/asan}" && pwd)
out=$build/browser-artifacts
command -v chromium >/dev/null || { echo "FAIL: chromium is missing (scripts/deps.sh)"; exit 1; }
command -v kubectl >/dev/null || { echo "FAIL: kubectl is missing (it injects the failed job)"; exit 1; }
bash "$top/tests/lib/ensure_npm.sh" "$top/tests/browser"
. "$top/tests/lib/run_stack.sh"
run_stack_start browser
admin=$tok
scoped_env=$(api "$url/v1/environments" | python3 -c 'import json,sys; print(json.load(sys.stdin)["items"][-1]["name"])')
mk() { api -X POST "$url/v1/tokens" -d "{\"name\":\"$1\",\"role\":\"$2\",\"environments\":[\"$3\"]}" |
	python3 -c 'import json,sys; print(json.load(sys.stdin)["secret"])'; }
viewer=$(mk console-viewer viewer '*')
scoped=$(mk console-scoped operator "$scoped_env")
# a job that died (OOM-killed: cloudsim's outcome annotation, set with kubectl as README's
# "Manual failure injection" does) for the job page's "why" card
fj=$(api -X POST "$url/v1/jobs" -d @"$top/examples/first-job.json" | python3 -c 'import json,sys; print(json.load(sys.stdin)["id"])')
jget() { api "$url/v1/jobs/$fj" | python3 -c "import json,sys; j=json.load(sys.stdin); print(j$1)"; }
for _ in $(seq 120); do [ "$(jget '["state"]')" = running ] && break; sleep 1; done
[ "$(jget '["state"]')" = running ] || fail "the job to fail never ran"
man=$(api "$url/v1/jobs/$fj/manifest")
kubectl --kubeconfig "$state/cloudsim/kubeconfig" --context "$(jget '["cluster"]')" \
	-n "$(echo "$man" | python3 -c 'import json,sys; print(json.load(sys.stdin)["metadata"]["namespace"])')" \
	annotate rayjob "$(echo "$man" | python3 -c 'import json,sys; print(json.load(sys.stdin)["metadata"]["name"])')" \
	--overwrite cloudsim.fleet.io/outcome=oomkilled cloudsim.fleet.io/run-seconds=1 >/dev/null ||
	fail "kubectl annotate failed"
for _ in $(seq 120); do [ "$(jget '["state"]')" = failed ] && break; sleep 1; done
[ "$(jget '["state"]')" = failed ] || fail "the OOM-killed job did not fail"
# a job of team "vision" that ran (on the on-demand A100 node of dev-gke-usc1-moves) and ended:
# the Costs page must chart its spend, the figure `fleetctl costs --group-by team` prints for
# the same UTC day
cj=$(api -X POST "$url/v1/jobs" -d @"$top/examples/demo/on-demand-hold.json" | python3 -c 'import json,sys; print(json.load(sys.stdin)["id"])')
cstate() { api "$url/v1/jobs/$cj" | python3 -c 'import json,sys; print(json.load(sys.stdin)["state"])'; }
for _ in $(seq 120); do [ "$(cstate)" = running ] && break; sleep 1; done
[ "$(cstate)" = running ] || fail "the team's job never ran"
sleep 30
api -X POST "$url/v1/jobs/$cj/cancel" >/dev/null || fail "cancel of the team's job failed"
for _ in $(seq 120); do [ "$(cstate)" = cancelled ] && break; sleep 1; done
[ "$(cstate)" = cancelled ] || fail "the team's job was not cancelled"
day=$(date -u +%Y-%m-%d)
FLEET_URL=$url FLEET_TOKEN=$admin NO_COLOR=1 COLUMNS=200 "$build/fleetctl" costs --group-by team \
	--from "$day" --to "$(date -u -d "$day + 1 day" +%Y-%m-%d)" >"$state/costs.txt" ||
	fail "fleetctl costs failed"
cat "$state/costs.txt"
cost_usd=$(awk 'NR == 1 { for (i = 1; i <= NF; i++) if ($i == "USD") c = i } $1 == "vision" { print $c }' "$state/costs.txt")
python3 -c 'import sys; sys.exit(0 if float(sys.argv[1]) > 0 else 1)' "${cost_usd:-0}" ||
	fail "fleetctl costs shows no spend for team vision"
rm -rf "$out"
COST_TEAM=vision COST_USD=$cost_usd COST_DAY=$day \
FAILED_JOB=$fj FLEET_URL=$url ADMIN_TOKEN=$admin VIEWER_TOKEN=$viewer SCOPED_TOKEN=$scoped SCOPED_ENV=$scoped_env \
	OUT=$out NODE_PATH=$top/tests/browser/node_modules node "$top/tests/browser/console.test.js" ||
	fail "console test failed (screenshots in $out)"
# fleetctl clusters explain on the same stack: the cluster the drain emptied is cordoned
cid=$(api "$url/v1/clusters?limit=500" | python3 -c 'import json,sys
print(next(c["id"] for c in json.load(sys.stdin)["items"] if c["cordoned"]))')
FLEET_URL=$url FLEET_TOKEN=$admin "$build/fleetctl" clusters explain "$cid" >"$state/explain.txt" ||
	fail "fleetctl clusters explain failed"
cat "$state/explain.txt"
grep -q "CORDONED" "$state/explain.txt" && grep -q "^pending jobs in" "$state/explain.txt" ||
	fail "clusters explain does not say the cluster is cordoned"
# fleetctl jobs explain names the clusters next to their ids
jid=$(api "$url/v1/jobs?limit=1" | python3 -c 'import json,sys; print(json.load(sys.stdin)["items"][0]["id"])')
FLEET_URL=$url FLEET_TOKEN=$admin "$build/fleetctl" jobs explain "$jid" >"$state/jexplain.txt" ||
	fail "fleetctl jobs explain failed"
cat "$state/jexplain.txt"
grep -qE '[a-z][a-z0-9-]+ \([0-9a-f]{8}\)' "$state/jexplain.txt" || fail "jobs explain shows no cluster names"
echo "browser_console: screenshots in $out: $(ls "$out" | tr '\n' ' ')"
