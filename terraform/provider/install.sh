#!/usr/bin/env bash
# install.sh BUILD_DIR MIRROR_DIR — puts build/terraform-provider-fleet into a Terraform
# filesystem mirror (unpacked layout) as registry.terraform.io/fleetd/fleet, and writes
# MIRROR_DIR/terraformrc, a CLI configuration that installs fleetd/fleet from it only.
set -euo pipefail
build=$(cd "${1:?build dir}" && pwd)
mirror=${2:?mirror dir}
version=0.1.0
mkdir -p "$mirror"
mirror=$(cd "$mirror" && pwd)
dir="$mirror/registry.terraform.io/fleetd/fleet/$version/linux_amd64"
mkdir -p "$dir"
install -m 0755 "$build/terraform-provider-fleet" "$dir/terraform-provider-fleet_v$version"
cat >"$mirror/terraformrc" <<RC
provider_installation {
  filesystem_mirror {
    path    = "$mirror"
    include = ["registry.terraform.io/fleetd/fleet"]
  }
  direct {
    exclude = ["registry.terraform.io/fleetd/fleet"]
  }
}
RC
echo "installed fleetd/fleet $version into $mirror (CLI config: TF_CLI_CONFIG_FILE=$mirror/terraformrc)"
