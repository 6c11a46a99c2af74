#!/usr/bin/env bash
# deploy_check: deploy/ as its checkers see it — the systemd units pass `systemd-analyze
# verify` with no warning (and a broken unit is caught), the alert rules pass `promtool check
# rules` and their unit tests `promtool test rules`, and every query of the Grafana dashboard
# parses as PromQL and names only metrics fleetd exports.
set -euo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
build=$(cd "${FLEETD_BUILD_DIR:-$top/build/asan}" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
command -v systemd-analyze >/dev/null || { echo "FAIL: systemd-analyze missing (scripts/deps.sh)"; exit 1; }
command -v promtool >/dev/null || { echo "FAIL: promtool missing (scripts/deps.sh: prometheus)"; exit 1; }

verify() {	# UNIT-FILE... ; fails on any message
	( cd "$tmp" && SYSTEMD_LOG_LEVEL=notice systemd-analyze verify --man=no "$@" ) >"$tmp/verify.out" 2>&1 || true
	if [ -s "$tmp/verify.out" ]; then cat "$tmp/verify.out"; return 1; fi
}
echo "== systemd-analyze verify"
for u in fleetd.service fleetd@.service; do
	sed "s|/usr/local/bin/fleetd|$build/fleetd|g" "$top/deploy/systemd/$u" >"$tmp/$u"
done
cp "$tmp/fleetd@.service" "$tmp/fleetd@b.service"
verify ./fleetd.service ./fleetd@b.service
sed 's/^Restart=on-failure/Restart=sometimes/' "$tmp/fleetd.service" >"$tmp/broken.service"
if verify ./broken.service >/dev/null; then echo "FAIL: verify did not catch a bad Restart="; exit 1; fi
echo "units ok (a broken one is caught)"

echo "== promtool"
promtool check rules "$top/deploy/prometheus/fleetd-rules.yml"
( cd "$top/deploy/prometheus" && promtool test rules fleetd-rules.test.yml )

echo "== grafana dashboard"
exported=$(grep -rhoE 'fleetd_[a-z_]+' "$top"/api "$top"/queue "$top"/regions "$top"/iam "$top"/core --include='*.c' | sort -u)
python3 - "$top/deploy/grafana/fleetd-dashboard.json" "$tmp/dash-rules.yml" "$top/deploy/prometheus/fleetd-rules.yml" <<'PY' >"$tmp/used"
import json, re, sys
d = json.load(open(sys.argv[1]))
exprs = [t["expr"] for p in d["panels"] for t in p["targets"]]
assert exprs, "no queries"
with open(sys.argv[2], "w") as f:
    f.write("groups:\n  - name: dashboard\n    rules:\n")
    for i, e in enumerate(exprs):
        f.write(f"      - record: dashboard:q{i}\n        expr: {json.dumps(e)}\n")
names = set()
for e in exprs + [open(sys.argv[3]).read()]:
    names |= set(re.findall(r"fleetd_[a-z_]+", e))
print("\n".join(sorted(names)))
PY
promtool check rules "$tmp/dash-rules.yml"
missing=0
while read -r m; do
	base=${m%_bucket}
	if ! grep -qx "$m" <<<"$exported" && ! grep -qx "$base" <<<"$exported"; then
		echo "FAIL: $m is used by the dashboard or the rules but fleetd does not export it"; missing=1
	fi
done <"$tmp/used"
[ "$missing" = 0 ]
echo "deploy_check: ok"
