#!/usr/bin/env bash
# readme_routes.sh — every API route README.md names (`GET /v1/...`, `POST /v1/...`, ... in
# backticks; a query string is ignored) is an operation of api/openapi.yaml and a row of
# api/router.c's route table, so the README never walks a reader into a 404.  Then proves
# the check can fail (a route named by the README that does not exist).  Run from anywhere.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# check README SPEC ROUTER: prints each missing route, exits 1 when any is missing.
check() {
	python3 - "$1" "$2" "$3" <<'PY'
import re, sys
readme, spec, router = (open(p, encoding="utf-8").read() for p in sys.argv[1:4])
named = sorted(set(re.findall(r"`(GET|POST|PUT|PATCH|DELETE) (/v1/[^`?\s]*)[^`]*`", readme)))
ops, path = set(), None
for line in spec.splitlines():
    m = re.match(r"^  (/\S*):\s*$", line)
    if m:
        path = m.group(1)
        continue
    if re.match(r"^\S", line):
        path = None
    m = re.match(r"^    (get|post|put|patch|delete):", line)
    if path and m:
        ops.add((m.group(1).upper(), path))
routed = set(re.findall(r'\{\s*"([A-Z]+)",\s*"(/v1/[^"]*)"', router))
bad = 0
if not named:
    print("readme_routes: README.md names no route (the pattern is broken)")
    bad = 1
for method, path in named:
    where = [w for w, s in (("api/openapi.yaml", ops), ("api/router.c", routed))
             if (method, path) not in s]
    if where:
        print(f"readme_routes: README.md names {method} {path}, which is not in "
              + " nor ".join(where))
        bad = 1
    else:
        print(f"ok   {method} {path}")
sys.exit(bad)
PY
}

check "$root/README.md" "$root/api/openapi.yaml" "$root/api/router.c"

# Self-test: a README naming a route that does not exist must fail, naming it.
sed 's#`POST /v1/jobs/{id}/cancel`#`GET /v1/jobs/{id}/nonesuch`#' "$root/README.md" >"$tmp/README.md"
cmp -s "$root/README.md" "$tmp/README.md" && { echo "FAIL self-test: the edit changed nothing"; exit 1; }
if check "$tmp/README.md" "$root/api/openapi.yaml" "$root/api/router.c" >"$tmp/out" 2>&1; then
	echo "FAIL self-test: a README route missing from the API was accepted"; exit 1
fi
grep -qF 'GET /v1/jobs/{id}/nonesuch, which is not in api/openapi.yaml nor api/router.c' "$tmp/out" ||
	{ echo "FAIL self-test: did not name the missing route"; cat "$tmp/out"; exit 1; }
echo "ok   self-test: a missing route is reported"
echo "readme_routes: every route README.md names is served"
