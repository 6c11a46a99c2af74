#!/usr/bin/env bash
# hcl_check_selftest: proves hcl_check.sh can fail. Runs it against fixtures/openapi-min.yaml
# (must pass), then against copies with one path, one request field, one nested request field
# and one response field removed, and against a .tf with a syntax error (each must fail,
# naming the problem).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
spec=$here/fixtures/openapi-min.yaml
failures=0

"$here/hcl_check.sh" "$spec" "$root/terraform" >"$tmp/out" 2>&1 ||
	{ cat "$tmp/out"; echo "FAIL: modules do not match the minimal spec"; exit 1; }

# expect_fail NAME SED-EXPRESSION EXPECTED-TEXT
expect_fail() {
	sed "$2" "$spec" >"$tmp/$1.yaml"
	if cmp -s "$spec" "$tmp/$1.yaml"; then
		echo "FAIL $1: the edit changed nothing"; failures=$((failures + 1)); return
	fi
	if "$here/hcl_check.sh" "$tmp/$1.yaml" "$root/terraform" >"$tmp/$1.out" 2>&1; then
		echo "FAIL $1: accepted"; failures=$((failures + 1))
	elif ! grep -qF -- "$3" "$tmp/$1.out"; then
		echo "FAIL $1: did not report '$3'"; cat "$tmp/$1.out"; failures=$((failures + 1))
	else
		echo "ok   $1"
	fi
}

expect_fail no-rotate '/^  \/v1\/clouds\/{id}\/iam\/rotate:/,/^  \/v1\/clouds\/{cloud_id}\/clusters:/{/^  \/v1\/clouds\/{cloud_id}\/clusters:/!d}' \
	'POST /v1/clouds/{id}/iam/rotate: path not in the OpenAPI spec'
expect_fail no-queue-delete '/^  \/v1\/queues\/{id}:/,/^  \/v1\/priority-classes:/{/delete:/d}' \
	'has no DELETE'
expect_fail no-cohort '/^        cohort: {type: string}/d' 'field "cohort" is not in the request schema'
expect_fail no-project 's/properties: {project: {type: string}}/properties: {gcp_project: {type: string}}/' \
	'field "account.project" is not in the request schema'
expect_fail no-token 's/properties: {token: {type: string}}/properties: {secret: {type: string}}/' \
	'field "credentials.token" is not in the request schema'
expect_fail no-external-id '/^            external_id: {type: string}/d' \
	'response field "external_id" is not in the response schema'
expect_fail no-iam-required '/^                required: {type: object, additionalProperties: true}/d' \
	'response field "iam.required" is not in the response schema'

mkdir -p "$tmp/tf"
cp "$root/terraform/modules/restapi/fleet-queue/"*.tf "$tmp/tf/"
printf 'resource "restapi_object" "x" {\n  path = \n}\n' >"$tmp/tf/broken.tf"
if "$here/hcl_check.sh" "$spec" "$tmp/tf" >"$tmp/broken.out" 2>&1 ||
   ! grep -q 'HCL parse error' "$tmp/broken.out"; then
	echo "FAIL broken-hcl: not reported"; cat "$tmp/broken.out"; failures=$((failures + 1))
else
	echo "ok   broken-hcl"
fi
rm "$tmp/tf/broken.tf"
sed -i 's/id_attribute = "id"/id_attribute = "name"/' "$tmp/tf/main.tf"
sed -i 's#source  = "Mastercard/restapi"#source  = "someone/restapi"#' "$tmp/tf/versions.tf"
if "$here/hcl_check.sh" "$spec" "$tmp/tf" >"$tmp/attr.out" 2>&1 ||
   ! grep -q 'id_attribute must be "id"' "$tmp/attr.out" ||
   ! grep -q 'does not declare Mastercard/restapi' "$tmp/attr.out"; then
	echo "FAIL id-attribute/provider: not reported"; cat "$tmp/attr.out"; failures=$((failures + 1))
else
	echo "ok   id-attribute/provider"
fi

[ "$failures" -eq 0 ] || { echo "hcl_check_selftest: $failures failure(s)"; exit 1; }
echo "hcl_check_selftest: all cases behave"
