# shellcheck shell=bash
# lib.sh: what tests/scripts/oidc.sh and oidc_console.sh share, sourced after setting name
# (the test's name): the checks of what they need (node, npm, fleetd, the test database; a
# missing one is a failure), a scratch database dropped at exit, the identity provider
# (idp.mjs) and fleetd started, waited for and stopped the same way.  Sets top, build, dir,
# tmp, db, dburl, psql; fail() names the test.
set -euo pipefail
top=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
build=$(cd "${FLEETD_BUILD_DIR:-$top/build/asan}" && pwd)
dir=$top/tests/oidc
fail() { echo "FAIL $name: $*" >&2; exit 1; }
[ -n "${FLEETD_TEST_DATABASE_URL:-}" ] || fail "FLEETD_TEST_DATABASE_URL is unset (run through tests/run.sh)"
[ -x "$build/fleetd" ] || fail "no fleetd in $build"
command -v node >/dev/null || fail "node is required"
bash "$top/tests/lib/ensure_npm.sh" "$dir" || fail "could not install tests/oidc's packages"

tmp=$(mktemp -d "/tmp/fleetd-$name.XXXXXX")
idp_pid= fd_pid= streams=
db=${name}_$$
base=$FLEETD_TEST_DATABASE_URL
dburl=$(python3 -c 'import sys, urllib.parse as u
p = u.urlsplit(sys.argv[1]); print(u.urlunsplit(p._replace(path="/" + sys.argv[2])))' "$base" "$db")
psql=$(command -v psql || echo "$(bash "$top/scripts/pg.sh" bindir "${FLEETD_TEST_PGDIR:-/nonexistent}")/psql")
oidc_cleanup() {
	for p in $streams; do kill "$p" 2>/dev/null || true; done
	if [ -n "$fd_pid" ]; then kill "$fd_pid" 2>/dev/null; wait "$fd_pid" 2>/dev/null || true; fi
	if [ -n "$idp_pid" ]; then kill "$idp_pid" 2>/dev/null; wait "$idp_pid" 2>/dev/null || true; fi
	"$psql" "$base" -qAt -c "DROP DATABASE IF EXISTS $db" >/dev/null 2>&1 || true
	rm -rf "$tmp"
}
trap oidc_cleanup EXIT
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

# idp_start ALG [NAME=value...]: (re)starts the provider on port $ip with $tmp/keys.json and
# $tmp/users.json, its access tokens signed with ALG, the environment given added; waits
# until it is ready.
idp_start() {
	local alg=$1
	shift
	if [ -n "$idp_pid" ]; then kill "$idp_pid" 2>/dev/null; wait "$idp_pid" 2>/dev/null || true; fi
	env PORT="$ip" KEYS="$tmp/keys.json" USERS="$tmp/users.json" ALG="$alg" "$@" \
		node "$dir/idp.mjs" >"$tmp/idp.log" 2>&1 &
	idp_pid=$!
	for _ in $(seq 100); do grep -q '^ready' "$tmp/idp.log" && return 0; sleep 0.3; done
	cat "$tmp/idp.log"
	fail "the identity provider did not start"
}

# fleetd_db: creates and migrates the scratch database; static: an admin token of every
# environment.
fleetd_db() {
	"$psql" "$base" -qAt -c "CREATE DATABASE $db" >/dev/null || fail "cannot create database $db"
	DATABASE_URL=$dburl "$build/fleetd" migrate >/dev/null || fail "migrate failed"
	static=$(DATABASE_URL=$dburl "$build/fleetd" token create --name robot --role admin --env '*' |
		grep -o 'fleet_[A-Za-z0-9_-]*' | head -1)
	[ -n "$static" ] || fail "no static token"
}

# fleetd_start [NAME=value...]: fleetd serve on 127.0.0.1:$fp ($url) on the scratch database
# without workers, the environment given added; waits for /healthz.
fleetd_start() {
	url=http://127.0.0.1:$fp
	env DATABASE_URL="$dburl" FLEETD_LISTEN="127.0.0.1:$fp" FLEETD_WORKERS=none "$@" \
		"$build/fleetd" serve >"$tmp/fleetd.log" 2>&1 &
	fd_pid=$!
	for _ in $(seq 100); do curl -sf "$url/healthz" >/dev/null && break; sleep 0.3; done
	curl -sf "$url/healthz" >/dev/null || { tail -20 "$tmp/fleetd.log"; fail "fleetd did not start"; }
}

# fleetd_stop: fleetd still runs and exits 0 on SIGTERM (a sanitizer report is a failure).
fleetd_stop() {
	kill -0 "$fd_pid" || fail "fleetd died"
	kill "$fd_pid"
	wait "$fd_pid" || { tail -30 "$tmp/fleetd.log"; fail "fleetd exited with $? (sanitizer report above?)"; }
	fd_pid=
}
