#!/usr/bin/env bash
# hcl_check: the Terraform modules against the API contract, under ctest — parses every .tf
# with a real HCL parser and checks each fleetd path, method and field against
# api/openapi.yaml (tests/terraform/hcl_check.sh), then proves that checker can fail
# (tests/terraform/hcl_check_selftest.sh).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
bash "$root/tests/terraform/hcl_check.sh" "$root/api/openapi.yaml"
bash "$root/tests/terraform/hcl_check_selftest.sh"
