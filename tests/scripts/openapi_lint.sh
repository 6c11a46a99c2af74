#!/usr/bin/env bash
# openapi_lint: lints api/openapi.yaml with Redocly (@redocly/cli pinned in
# tests/openapi/package.json; rules in tests/openapi/redocly.yaml) and checks that the route
# table of api/router.c and the spec describe the same routes, roles and bodies — then proves
# that route check can fail.  Run from anywhere; exits non-zero on any problem.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
dir=$root/tests/openapi
spec=$root/api/openapi.yaml
router=$root/api/router.c
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

bash "$root/tests/lib/ensure_npm.sh" "$dir"

echo "== redocly lint"
"$dir/node_modules/.bin/redocly" lint --config "$dir/redocly.yaml" "$spec"

echo "== routes: api/router.c <-> api/openapi.yaml"
node "$dir/routes_check.js" "$router" "$spec" "$dir/pending_routes.txt"

# The route check must catch a route missing from the spec, a spec operation missing from the
# router, a wrong role and a missing body flag.
expect_fail() {	# NAME FILE-TO-EDIT SED-EXPRESSION EXPECTED-TEXT
	local name=$1 file=$2 expr=$3 want=$4 r=$router s=$spec
	sed "$expr" "$file" >"$tmp/$name"
	if cmp -s "$file" "$tmp/$name"; then
		echo "FAIL self-test $name: the edit changed nothing"; return 1
	fi
	[ "$file" = "$router" ] && r=$tmp/$name || s=$tmp/$name
	if node "$dir/routes_check.js" "$r" "$s" "$dir/pending_routes.txt" >"$tmp/$name.out" 2>&1; then
		echo "FAIL self-test $name: accepted"; return 1
	fi
	grep -qF -- "$want" "$tmp/$name.out" ||
		{ echo "FAIL self-test $name: did not report '$want'"; cat "$tmp/$name.out"; return 1; }
	echo "ok   self-test $name"
}
expect_fail new-route "$router" \
	's#^\(\t{ "GET", "/v1/audit", h_audit_list, ROLE_ADMIN, 0 },\)$#\1\n\t{ "GET", "/v1/audit/{id}", h_audit_list, ROLE_ADMIN, 0 },#' \
	'GET /v1/audit/{id}: in'
expect_fail lost-route "$router" '\#"DELETE", "/v1/queues/{id}"#d' \
	'DELETE /v1/queues/{id}: in'
expect_fail role "$router" 's#\("DELETE", "/v1/queues/{id}", h_queue_delete, \)ROLE_ADMIN#\1ROLE_VIEWER#' \
	'x-fleetd-role is admin, the router requires viewer'
expect_fail body "$router" 's#\("POST", "/v1/queues", h_queue_create, ROLE_ADMIN, \)R_BODY#\10#' \
	'the spec has a requestBody but the route takes none'
expect_fail public "$spec" '0,/^      security: \[\]$/{/^      security: \[\]$/d}' \
	'GET /healthz: public route needs `security: []`'
echo "openapi_lint: ok"
