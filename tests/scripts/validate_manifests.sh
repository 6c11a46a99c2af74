#!/usr/bin/env bash
# validate_manifests.sh — every golden KubeRay manifest in tests/fixtures/kuberay must pass
# ../shared/tools/validate-manifest (the real CRD schemas). Run from the repository root.
# Fails when the folder is empty, when the validator is missing, or on any failed document.
set -euo pipefail
cd "$(dirname "$0")/../.."
dir=tests/fixtures/kuberay
validator="$(pwd)/../shared/tools/validate-manifest"

[ -x "$validator" ] || { echo "validate_manifests: $validator not found" >&2; exit 1; }
shopt -s nullglob
files=("$dir"/*.json)
if [ "${#files[@]}" -eq 0 ]; then
	echo "validate_manifests: no manifests in $dir (run test_kuberay with FLEETD_UPDATE_GOLDEN=1)" >&2
	exit 1
fi
out=$("$validator" --quiet "${files[@]}") && rc=0 || rc=$?
printf '%s\n' "$out"
# The validator prints "summary: N passed, M failed, ..."; insist every file was checked.
passed=$(printf '%s\n' "$out" | sed -n 's/^summary: \([0-9]*\) passed.*/\1/p')
if [ "$rc" -ne 0 ] || [ "${passed:-0}" -lt "${#files[@]}" ]; then
	echo "validate_manifests: FAILED ($rc, ${passed:-0} of ${#files[@]} passed)" >&2
	exit 1
fi
echo "validate_manifests: ${#files[@]} manifests valid"
