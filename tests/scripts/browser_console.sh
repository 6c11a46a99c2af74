#!/usr/bin/env bash
# browser_console: the web console in real Chromium (Debian's chromium; playwright-core and
# axe-core from tests/browser/package-lock.json, no browser download) against the `make run`
# stack (scripts/run.sh on a free port with its own state folder). Screenshots are kept in
# BUILD_DIR/browser-artifacts/.
set -euo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
build=$(cd "${FLEETD_BUILD_DIR:-$top/build/asan}" && pwd)
out=$build/browser-artifacts
command -v chromium >/dev/null || { echo "FAIL: chromium is missing (scripts/deps.sh)"; exit 1; }
bash "$top/tests/lib/ensure_npm.sh" "$top/tests/browser"
. "$top/tests/lib/run_stack.sh"
run_stack_start browser
admin=$tok
scoped_env=$(api "$url/v1/environments" | python3 -c 'import json,sys; print(json.load(sys.stdin)["items"][-1]["name"])')
mk() { api -X POST "$url/v1/tokens" -d "{\"name\":\"$1\",\"role\":\"$2\",\"environments\":[\"$3\"]}" |
	python3 -c 'import json,sys; print(json.load(sys.stdin)["secret"])'; }
viewer=$(mk console-viewer viewer '*')
scoped=$(mk console-scoped operator "$scoped_env")
rm -rf "$out"
FLEET_URL=$url ADMIN_TOKEN=$admin VIEWER_TOKEN=$viewer SCOPED_TOKEN=$scoped SCOPED_ENV=$scoped_env \
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
