#!/usr/bin/env bash
# hcl_check: parses every terraform/**/*.tf with @cdktf/hcl2json and checks each fleetd path,
# method and field the restapi objects use against api/openapi.yaml (or the spec given as $1).
# npm packages are pinned in package.json + package-lock.json and installed into
# tests/terraform/node_modules by tests/lib/ensure_npm.sh.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
spec=${1:-$root/api/openapi.yaml}
shift || true
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=("$root/terraform")

bash "$root/tests/lib/ensure_npm.sh" "$here"
[ -f "$spec" ] || { echo "hcl_check: no OpenAPI spec at $spec" >&2; exit 1; }
spec=$(realpath "$spec")
for i in "${!targets[@]}"; do targets[$i]=$(realpath "${targets[$i]}"); done
cd "$root"
exec node "$here/hcl_check.js" "$spec" "${targets[@]}"
