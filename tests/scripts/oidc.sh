#!/usr/bin/env bash
# oidc: fleetd against a real OpenID provider (oidc-provider from tests/oidc, two users in
# two groups, logins by the authorization-code flow with PKCE): roles from groups, a group
# change on the next token (refresh), key rotation and retirement after the grace, forged,
# wrong-audience and expired tokens refused with 401 problems, static tokens unchanged;
# event streams: bounded per user across its tokens, ended at the token's expiry and when
# the user's groups change.
# Needs node and npm (a missing one is a failure) and FLEETD_TEST_DATABASE_URL (tests/run.sh).
name=oidc
. "$(dirname "$0")/../oidc/lib.sh"

aud=https://fleetd.test
ip=$(free_port)
iss=http://127.0.0.1:$ip
export ISSUER=$iss AUDIENCE=$aud
cat >"$tmp/users.json" <<'EOF'
{"alice": {"email": "alice@example.com", "groups": ["ml-viewers"]},
 "bob": {"email": "bob@example.com", "groups": ["platform-admins"]},
 "carol": {"email": "carol@example.com", "groups": ["strangers"]}}
EOF
node "$dir/forge.mjs" key RS256 k1 >"$tmp/k1.json"
node "$dir/forge.mjs" key ES256 k2 >"$tmp/k2.json"
keys() { python3 -c 'import json, sys
print(json.dumps({"keys": [json.load(open(f)) for f in sys.argv[1:]]}))' "$@" >"$tmp/keys.json"; }

login() { node "$dir/login.mjs" login "$1" "${2:-$aud}" >"$tmp/login.json" ||
	fail "login of $1 failed"; python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))[sys.argv[2]])' "$tmp/login.json" "${3:-access_token}"; }

# call TOKEN METHOD PATH [BODY] -> "STATUS CODE" (CODE: the problem's code, "-" on success)
call() {
	local out=$tmp/answer st
	st=$(curl -s -o "$out" -w '%{http_code}' -X "$2" -H "Authorization: Bearer $1" \
		${4:+-H 'Content-Type: application/json' --data "$4"} "$url$3") || st=000
	printf '%s %s\n' "$st" "$(python3 -c 'import json,sys
try: print(json.load(open(sys.argv[1])).get("code") or "-")
except Exception: print("-")' "$out")"
}
expect() {	# WHAT WANT GOT
	[ "$2" = "$3" ] || { cat "$tmp/answer" >&2; echo >&2; fail "$1: want '$2', got '$3'"; }
	echo "ok   $1 ($3)"
}

keys "$tmp/k1.json"
idp_start RS256
fleetd_db
fp=$(free_port)
fleetd_start FLEETD_LOG_LEVEL=debug \
	FLEETD_OIDC_ISSUER=$iss FLEETD_OIDC_AUDIENCE=$aud FLEETD_OIDC_LEEWAY=5 FLEETD_OIDC_KEY_GRACE=4 \
	FLEETD_OIDC_REFRESH_MIN=0 FLEETD_OIDC_JWKS_MAX_AGE=1 FLEETD_SSE_PER_TOKEN=2 FLEETD_SSE_HEARTBEAT=1 \
	FLEETD_OIDC_GROUPS='{"ml-viewers": {"role": "viewer", "environments": ["*"], "team": "ml"},
 "platform-admins": {"role": "admin", "environments": ["*"], "team": "platform"}}'

echo "== the console without SSO (no FLEETD_OIDC_CONSOLE_CLIENT_ID)"
[ "$(curl -sf "$url/v1/console/config")" = '{"oidc":null}' ] ||
	fail "GET /v1/console/config names an SSO login without a console client: $(curl -s "$url/v1/console/config")"
curl -s -D - -o /dev/null "$url/" | tr -d '\r' | grep -qi "^content-security-policy: .*connect-src 'self';" ||
	fail "the console's connect-src allows more than 'self' without SSO"
echo "ok   no SSO button, connect-src 'self' only"

echo "== roles from groups"
alice=$(login alice)
alice_refresh=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["refresh_token"])' "$tmp/login.json")
bob=$(login bob)
expect "viewer reads" "200 -" "$(call "$alice" GET /v1/environments)"
expect "viewer cannot submit" "403 auth.forbidden" "$(call "$alice" POST /v1/jobs '{}')"
expect "viewer cannot create an environment" "403 auth.forbidden" \
	"$(call "$alice" POST /v1/environments '{"name":"oidc-a"}')"
expect "admin group creates an environment" "201 -" \
	"$(call "$bob" POST /v1/environments '{"name":"oidc-b"}')"
call "$bob" GET /v1/whoami >/dev/null
python3 - "$tmp/answer" <<'EOF' || fail "whoami does not name bob as admin of team platform"
import json, sys
w = json.load(open(sys.argv[1]))
assert w["name"] == "bob@example.com" and w["role"] == "admin" and w["team"] == "platform", w
EOF
echo "ok   whoami names the user, role and team"
call "$static" GET "/v1/audit?resource_type=environment" >/dev/null
python3 - "$tmp/answer" <<'EOF' || fail "the audit row does not name bob"
import json, sys
rows = [r for r in json.load(open(sys.argv[1]))["items"] if r["action"] == "environment.create"]
assert rows and rows[0]["actor"]["name"] == "bob@example.com", rows
EOF
echo "ok   the audit row names bob@example.com"
expect "static tokens keep working" "200 -" "$(call "$static" GET /v1/environments)"

echo "== refused tokens"
expect "signed by another key" "401 auth.bad_signature" \
	"$(call "$(node "$dir/forge.mjs" other-key "$tmp/keys.json" bob platform-admins)" GET /v1/environments)"
expect "alg none" "401 auth.bad_alg" \
	"$(call "$(node "$dir/forge.mjs" none "$tmp/keys.json" bob platform-admins)" GET /v1/environments)"
expect "HS256 keyed with the public key" "401 auth.bad_alg" \
	"$(call "$(node "$dir/forge.mjs" hs256 "$tmp/keys.json" bob platform-admins)" GET /v1/environments)"
expect "expired" "401 auth.token_expired" \
	"$(call "$(node "$dir/forge.mjs" expired "$tmp/keys.json" bob platform-admins)" GET /v1/environments)"
expect "another issuer" "401 auth.wrong_issuer" \
	"$(call "$(node "$dir/forge.mjs" wrong-iss "$tmp/keys.json" bob platform-admins)" GET /v1/environments)"
expect "a real token for another audience" "401 auth.wrong_audience" \
	"$(call "$(login bob https://other.example)" GET /v1/environments)"
expect "a user of no mapped group" "403 auth.no_role" "$(call "$(login carol)" GET /v1/environments)"

# stream NAME TOKEN: an event stream read by curl in the background; its pid in $NAME
stream() {
	curl -sN -H "Authorization: Bearer $2" "$url/v1/events?follow=true" >"$tmp/$1.out" 2>&1 &
	printf -v "$1" %s "$!"
	streams="$streams $!"
}
alive() { kill -0 "$1" 2>/dev/null; }
# ends PID SECONDS: the stream's curl exits (fleetd ended the stream) within SECONDS
ends() { for _ in $(seq $(($2 * 5))); do alive "$1" || return 0; sleep 0.2; done; return 1; }

echo "== event streams"
stream s1 "$alice"
alice_b=$(login alice)
stream s2 "$alice_b"
sleep 1
alive "$s1" && alive "$s2" || fail "a user's first two streams did not stay open"
expect "a third stream of the same user (another token): the per-user bound" "429" \
	"$(curl -s -o /dev/null --max-time 5 -w '%{http_code}' -H "Authorization: Bearer $alice_b" "$url/v1/events?follow=true")"
kill "$s2"; wait "$s2" 2>/dev/null || true
sleep 3				# past two token checks and heartbeats: s2's slot is free
alive "$s1" || fail "an OIDC user's stream ended while its token is valid"
echo "ok   an OIDC user's stream stays open while its token is valid"
short=$(node "$dir/forge.mjs" short "$tmp/keys.json" dave ml-viewers)
stream s3 "$short"
sleep 2
alive "$s3" || { cat "$tmp/s3.out"; fail "the stream of a token valid for 6 s ended at once"; }
ends "$s3" 12 || fail "the stream outlived its token's expiry"
echo "ok   the stream ends with its token's expiry"

echo "== a group change takes effect on the next token"
python3 - "$tmp/users.json" <<'EOF'
import json, sys
u = json.load(open(sys.argv[1])); u["alice"]["groups"] = ["platform-admins"]
json.dump(u, open(sys.argv[1], "w"))
EOF
expect "the old token is still a viewer's" "403 auth.forbidden" \
	"$(call "$alice" POST /v1/environments '{"name":"oidc-c"}')"
alice2=$(node "$dir/login.mjs" refresh "$alice_refresh" "$aud" |
	python3 -c 'import json,sys; print(json.load(sys.stdin)["access_token"])')
expect "the refreshed token is an admin's" "201 -" \
	"$(call "$alice2" POST /v1/environments '{"name":"oidc-c"}')"
ends "$s1" 5 || fail "the stream opened with alice's old groups outlived her group change"
echo "ok   the stream opened with the old groups ended on the new token's first use"

echo "== key rotation"
keys "$tmp/k2.json" "$tmp/k1.json"	# a new ES256 key signs; the old one still published
idp_start ES256
bob2=$(login bob)
[ "$(python3 -c 'import base64,json,sys; h=sys.argv[1].split(".")[0]; print(json.loads(base64.urlsafe_b64decode(h+"="*(-len(h)%4)))["kid"])' "$bob2")" = k2 ] ||
	fail "the provider did not sign with the new key"
expect "a token of the new key (unknown kid: JWKS refetched)" "200 -" "$(call "$bob2" GET /v1/environments)"
expect "a token of the old key while it is published" "200 -" "$(call "$bob" GET /v1/environments)"
keys "$tmp/k2.json"			# the old key retired
idp_start ES256
sleep 1.2				# past FLEETD_OIDC_JWKS_MAX_AGE: the next request refetches
expect "the retired key within the grace" "200 -" "$(call "$bob" GET /v1/environments)"
sleep 5					# past FLEETD_OIDC_KEY_GRACE
expect "the retired key after the grace" "401 auth.key_retired" "$(call "$bob" GET /v1/environments)"
expect "the new key still" "200 -" "$(call "$bob2" GET /v1/environments)"

fleetd_stop
if grep -q "$bob\|$alice" "$tmp/fleetd.log"; then fail "a bearer token is in fleetd's log"; fi
echo "oidc: all checks passed"
