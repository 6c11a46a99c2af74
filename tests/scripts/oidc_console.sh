#!/usr/bin/env bash
# oidc_console: the console's "Log in with SSO" in real Chromium (Debian's chromium driven by
# playwright-core from tests/browser) against a real OpenID provider (oidc-provider from
# tests/oidc, the console registered as a public client with PKCE required): the login at
# the provider's form, the code exchange at its token endpoint (CORS for the console's origin
# only), the user's team's jobs listed, another team's job a 404, S256 in the authorization
# request, the refresh token, log out; GET /v1/console/config and the CSP's connect-src.
# Needs node, npm, chromium (a missing one is a failure) and FLEETD_TEST_DATABASE_URL.
set -euo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
build=$(cd "${FLEETD_BUILD_DIR:-$top/build/asan}" && pwd)
dir=$top/tests/oidc
fail() { echo "FAIL oidc_console: $*" >&2; exit 1; }
[ -n "${FLEETD_TEST_DATABASE_URL:-}" ] || fail "FLEETD_TEST_DATABASE_URL is unset (run through tests/run.sh)"
[ -x "$build/fleetd" ] || fail "no fleetd in $build"
command -v node >/dev/null || fail "node is required"
command -v chromium >/dev/null || fail "chromium is missing (scripts/deps.sh)"
bash "$top/tests/lib/ensure_npm.sh" "$dir" || fail "could not install tests/oidc's packages"
bash "$top/tests/lib/ensure_npm.sh" "$top/tests/browser" || fail "could not install tests/browser's packages"

tmp=$(mktemp -d /tmp/fleetd-oidc-console.XXXXXX)
idp_pid= fd_pid=
db=oidc_console_$$
base=$FLEETD_TEST_DATABASE_URL
dburl=$(python3 -c 'import sys, urllib.parse as u
p = u.urlsplit(sys.argv[1]); print(u.urlunsplit(p._replace(path="/" + sys.argv[2])))' "$base" "$db")
psql=$(command -v psql || echo "$(bash "$top/scripts/pg.sh" bindir "${FLEETD_TEST_PGDIR:-/nonexistent}")/psql")
cleanup() {
	if [ -n "$fd_pid" ]; then kill "$fd_pid" 2>/dev/null; wait "$fd_pid" 2>/dev/null || true; fi
	if [ -n "$idp_pid" ]; then kill "$idp_pid" 2>/dev/null; wait "$idp_pid" 2>/dev/null || true; fi
	"$psql" "$base" -qAt -c "DROP DATABASE IF EXISTS $db" >/dev/null 2>&1 || true
	rm -rf "$tmp"
}
trap cleanup EXIT
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

aud=https://fleetd.test
ip=$(free_port)
fp=$(free_port)
iss=http://127.0.0.1:$ip
url=http://127.0.0.1:$fp
cat >"$tmp/users.json" <<'JSON'
{"alice": {"email": "alice@example.com", "groups": ["ml-viewers"]}}
JSON
node "$dir/forge.mjs" key RS256 k1 | python3 -c 'import json,sys; print(json.dumps({"keys": [json.load(sys.stdin)]}))' >"$tmp/keys.json"
PORT=$ip KEYS=$tmp/keys.json USERS=$tmp/users.json ALG=RS256 AUDIENCE=$aud CONSOLE_REDIRECT=$url/ \
AUTH_LOG=$tmp/auth.log node "$dir/idp.mjs" >"$tmp/idp.log" 2>&1 &
idp_pid=$!
for _ in $(seq 100); do grep -q '^ready' "$tmp/idp.log" && break; sleep 0.3; done
grep -q '^ready' "$tmp/idp.log" || { cat "$tmp/idp.log"; fail "the identity provider did not start"; }

"$psql" "$base" -qAt -c "CREATE DATABASE $db" >/dev/null || fail "cannot create database $db"
DATABASE_URL=$dburl "$build/fleetd" migrate >/dev/null || fail "migrate failed"
static=$(DATABASE_URL=$dburl "$build/fleetd" token create --name robot --role admin --env '*' |
	grep -o 'fleet_[A-Za-z0-9_-]*' | head -1)
[ -n "$static" ] || fail "no static token"
DATABASE_URL=$dburl FLEETD_LISTEN=127.0.0.1:$fp FLEETD_WORKERS=none \
FLEETD_OIDC_ISSUER=$iss FLEETD_OIDC_AUDIENCE=$aud FLEETD_OIDC_CONSOLE_CLIENT_ID=fleet-console-web \
FLEETD_OIDC_CONSOLE_SCOPES='openid email offline_access fleet' \
FLEETD_OIDC_GROUPS='{"ml-viewers": {"role": "viewer", "environments": ["*"], "team": "ml"}}' \
	"$build/fleetd" serve >"$tmp/fleetd.log" 2>&1 &
fd_pid=$!
for _ in $(seq 100); do curl -sf "$url/healthz" >/dev/null && break; sleep 0.3; done
curl -sf "$url/healthz" >/dev/null || { tail -20 "$tmp/fleetd.log"; fail "fleetd did not start"; }

echo "== the console's configuration and CSP"
python3 - "$url" "$iss" "$aud" <<'PY' || fail "GET /v1/console/config"
import json, sys, urllib.request
url, iss, aud = sys.argv[1:]
c = json.load(urllib.request.urlopen(url + "/v1/console/config"))["oidc"]
assert c == {"issuer": iss, "client_id": "fleet-console-web",
             "scope": "openid email offline_access fleet", "resource": aud}, c
PY
echo "ok   GET /v1/console/config names the issuer, client_id, scope and resource (no token)"
csp=$(curl -s -D - -o /dev/null "$url/" | tr -d '\r' | sed -n 's/^[Cc]ontent-[Ss]ecurity-[Pp]olicy: //p')
case "$csp" in *"connect-src 'self' $iss;"*) ;; *) fail "connect-src does not allow only the issuer: $csp" ;; esac
echo "ok   CSP connect-src: 'self' $iss"
st=$(curl -s -o /dev/null -w '%{http_code}' "$iss/auth?client_id=fleet-console-web&response_type=code&scope=openid&redirect_uri=$url/&state=x")
loc=$(curl -s -o /dev/null -w '%{redirect_url}' "$iss/auth?client_id=fleet-console-web&response_type=code&scope=openid&redirect_uri=$url/&state=x")
case "$loc" in *error=invalid_request*) ;; *) fail "an authorization request without PKCE was not refused ($st $loc)" ;; esac
echo "ok   the provider refuses the console's authorization request without code_challenge"
cors=$(curl -s -D - -o /dev/null -H "Origin: http://127.0.0.1:1" --data \
	"client_id=fleet-console-web&grant_type=refresh_token&refresh_token=x" "$iss/token" |
	tr -d '\r' | grep -i '^access-control-allow-origin' || true)
[ -z "$cors" ] || fail "the token endpoint answers another origin: $cors"
echo "ok   the token endpoint sends no CORS header to another origin"

echo "== two teams' jobs"
call() { curl -s -o "$tmp/answer" -w '%{http_code}' -H "Authorization: Bearer $static" \
	-H 'Content-Type: application/json' "$@"; }
[ "$(call -X POST "$url/v1/environments" -d '{"name":"dev"}')" = 201 ] || fail "environment: $(cat "$tmp/answer")"
for t in ml other; do
	[ "$(call -X POST "$url/v1/teams" -d "{\"name\":\"$t\",\"environments\":[\"dev\"]}")" = 201 ] ||
		fail "team $t: $(cat "$tmp/answer")"
done
qml=$(python3 -c 'import uuid; print(uuid.uuid4())') qot=$(python3 -c 'import uuid; print(uuid.uuid4())')
jml=$(python3 -c 'import uuid; print(uuid.uuid4())') jot=$(python3 -c 'import uuid; print(uuid.uuid4())')
"$psql" "$dburl" -qAt -v ON_ERROR_STOP=1 >/dev/null <<SQL || fail "cannot insert the queues and jobs"
INSERT INTO queues (id, name, environment, team) VALUES ('$qml', 'q-ml', 'dev', 'ml'), ('$qot', 'q-other', 'dev', 'other');
INSERT INTO jobs (id, name, environment, queue_id, kind, priority_class, priority, spec) VALUES
 ('$jml', 'ml-train', 'dev', '$qml', 'RayJob', 'normal', 100, '{}'),
 ('$jot', 'other-secret', 'dev', '$qot', 'RayJob', 'normal', 100, '{}');
SQL

echo "== chromium: Log in with SSO"
FLEET_URL=$url ISSUER=$iss OWN_JOB=$jml OTHER_JOB=$jot AUTH_LOG=$tmp/auth.log \
	NODE_PATH=$top/tests/browser/node_modules node "$top/tests/browser/oidc_console.test.js" ||
	{ tail -n 20 "$tmp/idp.log" "$tmp/fleetd.log"; fail "the console's SSO test failed"; }

kill -0 "$fd_pid" || fail "fleetd died"
kill "$fd_pid"
wait "$fd_pid" || { tail -30 "$tmp/fleetd.log"; fail "fleetd exited with $? (sanitizer report above?)"; }
fd_pid=
echo "oidc_console: all checks passed"
