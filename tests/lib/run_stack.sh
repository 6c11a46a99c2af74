# Sourced by the tests/scripts that test the `make run` stack (browser_console.sh,
# run_supervise.sh): run_stack_start TAG [VAR=value ...] starts scripts/run.sh on a free port
# with its own state folder (DATABASE_URL unset: its own Postgres, as `make run` does; the
# VAR=value pairs are added to its environment) and waits until fleetd serves and the demo
# fleet is registered. It needs $top and $build and sets state, port, url, runpid and tok
# (the admin token); everything stops and the state folder goes on exit. fail MSG prints the
# logs' tails and exits 1; api ARGS is curl with the admin token.
run_stack_cleanup() {
	if [ -n "${runpid:-}" ]; then kill -TERM "$runpid" 2>/dev/null || true; wait "$runpid" 2>/dev/null || true; fi
	bash "$top/scripts/pg.sh" destroy "$state/pg" >/dev/null 2>&1 || true
	rm -rf "$state"
}

fail() { echo "FAIL: $*" >&2; tail -n 20 "$state/run.out" "$state/fleetd.log" >&2 || true; exit 1; }

api() { curl -sf -H "Authorization: Bearer $tok" -H 'Content-Type: application/json' "$@"; }

run_stack_start() {
	local tag=$1
	shift
	state=$(mktemp -d "/tmp/fleetd-$tag.XXXXXX")
	port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
	url=http://127.0.0.1:$port
	runpid=
	trap run_stack_cleanup EXIT
	env -u DATABASE_URL FLEET_STATE_DIR="$state" FLEET_BIN="$build" FLEETD_LISTEN=127.0.0.1:$port \
		"$@" bash "$top/scripts/run.sh" >"$state/run.out" 2>&1 &
	runpid=$!
	for _ in $(seq 600); do grep -q "fleetd is serving" "$state/run.out" 2>/dev/null && break; sleep 0.2; done
	grep -q "fleetd is serving" "$state/run.out" || fail "run.sh did not come up"
	grep -q "demo fleet registered" "$state/demo.log" || fail "demo registration failed"
	tok=$(cat "$state/admin.token")
}
