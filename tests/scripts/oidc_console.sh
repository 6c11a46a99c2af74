#!/usr/bin/env bash
# oidc_console: the console's "Log in with SSO" in real Chromium (Debian's chromium driven by
# playwright-core from tests/browser) against a real OpenID provider (oidc-provider from
# tests/oidc, the console registered as a public client with PKCE required): the login at
# the provider's form, the code exchange at its token endpoint (CORS for the console's origin
# only), the user's team's jobs listed, another team's job a 404, S256 in the authorization
# request, the refresh token, log out; GET /v1/console/config and the CSP's connect-src.
# Needs node, npm, chromium (a missing one is a failure) and FLEETD_TEST_DATABASE_URL.
name=oidc_console
. "$(dirname "$0")/../oidc/lib.sh"
command -v chromium >/dev/null || fail "chromium is missing (scripts/deps.sh)"
bash "$top/tests/lib/ensure_npm.sh" "$top/tests/browser" || fail "could not install tests/browser's packages"

aud=https://fleetd.test
ip=$(free_port)
fp=$(free_port)
iss=http://127.0.0.1:$ip
url=http://127.0.0.1:$fp
cat >"$tmp/users.json" <<'JSON'
{"alice": {"email": "alice@example.com", "groups": ["ml-viewers"]}}
JSON
node "$dir/forge.mjs" key RS256 k1 | python3 -c 'import json,sys; print(json.dumps({"keys": [json.load(sys.stdin)]}))' >"$tmp/keys.json"
idp_start RS256 AUDIENCE="$aud" CONSOLE_REDIRECT="$url/" AUTH_LOG="$tmp/auth.log"

fleetd_db
fleetd_start FLEETD_OIDC_ISSUER="$iss" FLEETD_OIDC_AUDIENCE="$aud" \
	FLEETD_OIDC_CONSOLE_CLIENT_ID=fleet-console-web \
	FLEETD_OIDC_CONSOLE_SCOPES='openid email offline_access fleet' \
	FLEETD_OIDC_GROUPS='{"ml-viewers": {"role": "viewer", "environments": ["*"], "team": "ml"}}'

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

fleetd_stop
echo "oidc_console: all checks passed"
