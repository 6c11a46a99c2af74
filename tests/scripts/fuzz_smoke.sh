#!/usr/bin/env bash
# fuzz_smoke: `make test`'s short fuzz pass — every libFuzzer target for a few seconds
# over its seed corpus (tests/fuzz/run.sh); `make fuzz` runs the long version.
set -uo pipefail
cd "$(dirname "$0")/../.." && exec bash tests/fuzz/run.sh "${FUZZ_SMOKE_SECONDS:-3}"
