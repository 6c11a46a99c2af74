#!/usr/bin/env bash
# tf_provider_public_api.sh — terraform-provider-fleet speaks to fleetd only through the
# public API: its sources include no header of a server module (api/ queue/ iam/ regions/
# providers/) and its CMake target links none, so a provider and a server of different
# versions cannot disagree through shared code.  The one shared input is a data file:
# regions/catalog_regions.def, which both regions/catalog.c (the server's catalog) and
# terraform/provider/regions.c (the plan-time check) are built from.  With a build
# ($FLEETD_BUILD_DIR, default build/asan), the provider binary defines no catalog_ symbol.
# Run from anywhere; fails naming each problem.
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
build=${FLEETD_BUILD_DIR:-$root/build/asan}
cd "$root" || exit 1
bad=0
fail() { echo "tf_provider_public_api: $*"; bad=1; }

while IFS= read -r l; do
	fail "$l: includes a server module's header"
done < <(grep -nE '^#include "(api|queue|iam|regions|providers)/' terraform/provider/*.c \
	terraform/provider/*.h | grep -v 'regions/catalog_regions.def"')
links=$(grep -nE 'fleet_(api|queue|iam|regions|providers)\b' terraform/provider/CMakeLists.txt |
	grep -v '^[0-9]*:#')
[ -z "$links" ] || fail "terraform/provider/CMakeLists.txt:$links: links a server module"
for f in regions/catalog.c terraform/provider/regions.c; do
	grep -q '#include "regions/catalog_regions.def"' "$f" ||
		fail "$f does not build its regions from regions/catalog_regions.def"
done
bin=$build/terraform-provider-fleet
if [ ! -x "$bin" ]; then
	fail "$bin missing (build first)"
elif nm "$bin" | grep -E ' [TtDdRr] catalog_' >/dev/null; then
	fail "$bin defines the server catalog's symbols: $(nm "$bin" | grep -E ' [TtDdRr] catalog_' | awk '{print $3}' | head -5 | tr '\n' ' ')"
fi
[ "$bad" -eq 0 ] && echo "tf_provider_public_api: the provider links no server module; regions from regions/catalog_regions.def"
exit "$bad"
