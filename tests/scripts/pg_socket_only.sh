#!/usr/bin/env bash
# pg_socket_only: `make run`'s private Postgres (PG_SOCKET_ONLY=1, as scripts/run.sh starts
# it) takes no TCP connection and its socket folder admits its owner only.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
dir=$(mktemp -d /tmp/fleetd-pgsock.XXXXXX)
trap 'bash "$root/scripts/pg.sh" destroy "$dir" >/dev/null 2>&1 || true; rm -rf "$dir"' EXIT
PG_FSYNC=off PG_SOCKET_ONLY=1 bash "$root/scripts/pg.sh" start "$dir"
url=$(bash "$root/scripts/pg.sh" url "$dir")
bindir=$(bash "$root/scripts/pg.sh" bindir "$dir")
port=$(cat "$dir/port")
export PGPASSFILE=$dir/pgpass
sock=${url#*host=}; sock=${sock%%&*}
fail() { echo "pg_socket_only: $*" >&2; exit 1; }
case $url in *127.0.0.1*|*localhost*) fail "the url names a TCP address: $url";; esac
[ "$("$bindir/psql" "$url" -qAt -c 'SELECT 1')" = 1 ] || fail "cannot connect through $url"
if "$bindir/psql" "postgresql://postgres@127.0.0.1:$port/fleet" -qAt -c 'SELECT 1' >/dev/null 2>&1; then
	fail "a TCP connection to 127.0.0.1:$port was accepted"
fi
[ "$("$bindir/psql" "$url" -qAt -c 'SHOW listen_addresses')" = "" ] || fail "listen_addresses is not empty"
mode=$(stat -c %a "$sock")
[ "$mode" = 700 ] || fail "socket folder mode is $mode, want 700"
if [ "$(id -u)" -eq 0 ] && id nobody >/dev/null 2>&1; then
	if runuser -u nobody -- "$bindir/psql" "$url" -qAt -c 'SELECT 1' >/dev/null 2>&1; then
		fail "another local user (nobody) connected through the socket"
	fi
fi
grep -q 'PG_SOCKET_ONLY=1' "$root/scripts/run.sh" || fail "scripts/run.sh does not ask for a socket-only Postgres"
echo "pg_socket_only: socket only ($url), TCP refused, folder 0700, other users refused"
