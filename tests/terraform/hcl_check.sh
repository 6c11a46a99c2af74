#!/usr/bin/env bash
# hcl_check: parses every terraform/**/*.tf with @cdktf/hcl2json and checks each fleetd path,
# method and field the restapi objects use against api/openapi.yaml (or the spec given as $1).
# npm packages are pinned in package.json and cached in tests/terraform/node_modules.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
spec=${1:-$root/api/openapi.yaml}
shift || true
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=("$root/terraform")

command -v node >/dev/null || { echo "hcl_check: node is required" >&2; exit 1; }
if [ ! -f "$here/node_modules/@cdktf/hcl2json/package.json" ] ||
   [ ! -f "$here/node_modules/yaml/package.json" ]; then
	(cd "$here" && npm install --no-audit --no-fund --loglevel=error >&2)
fi
[ -f "$spec" ] || { echo "hcl_check: no OpenAPI spec at $spec" >&2; exit 1; }
spec=$(realpath "$spec")
for i in "${!targets[@]}"; do targets[$i]=$(realpath "${targets[$i]}"); done
cd "$root"
exec node "$here/hcl_check.js" "$spec" "${targets[@]}"
