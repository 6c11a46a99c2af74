#!/usr/bin/env bash
# terraform_provider: terraform-provider-fleet under the real terraform binary (1.11) against
# a live fleetd and cloudsim — the full init/plan/apply/update/replace/drift/import/destroy
# cycle, plan-time validation, both registration phases per provider type, the state scan
# (tests/terraform/provider_cycle.py).  A missing terraform binary is a failure.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
build=${FLEETD_BUILD_DIR:-$root/build/asan}
command -v terraform >/dev/null || { echo "terraform_provider: terraform not on PATH" >&2; exit 1; }
for b in fleetd cloudsim terraform-provider-fleet; do
	[ -x "$build/$b" ] || { echo "terraform_provider: $build/$b missing" >&2; exit 1; }
done
exec timeout -k 10 300 python3 "$root/tests/terraform/provider_cycle.py" "$build"
