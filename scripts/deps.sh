#!/usr/bin/env bash
# Installs the Debian packages fleetd needs to build, run and test; quiet and idempotent.
set -euo pipefail
pkgs=(build-essential cmake pkg-config libmicrohttpd-dev libpq-dev libcurl4-openssl-dev
      libssl-dev libjansson-dev uuid-dev libcmocka-dev libyaml-dev postgresql postgresql-contrib
      curl wrk prometheus clang libclang-rt-14-dev python3 openssl
      libgrpc-dev libprotobuf-c-dev protobuf-c-compiler libmsgpack-dev
      systemd chromium patroni etcd-server)
missing=()
for p in "${pkgs[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
# Node.js may come from another source (nodesource ships npm inside nodejs).
command -v npm >/dev/null 2>&1 || missing+=(nodejs npm)
[ ${#missing[@]} -eq 0 ] && exit 0
echo "installing: ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
if [ "$(id -u)" -ne 0 ]; then SUDO=sudo; else SUDO=; fi
$SUDO apt-get update -qq >/dev/null
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
