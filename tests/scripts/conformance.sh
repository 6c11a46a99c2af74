#!/usr/bin/env bash
# conformance.sh — the vendors' own clients (kubectl, gcloud, aws, the Azure SDK for
# JavaScript, @kubernetes/client-node) against cloudsim; see tests/conformance/run.sh.
set -euo pipefail
cd "$(dirname "$0")/../.."
exec bash tests/conformance/run.sh "${FLEETD_BUILD_DIR:-build/asan}"
