#!/usr/bin/env bash
# pg_auth (issue 25, hole 10): scripts/pg.sh's Postgres asks every client for the password it
# generated (scram-sha-256; none over TCP, as root or as another user, gets in without it; with
# DIR/pgpass as PGPASSFILE it does), and starting it for a DIR under a 0700 folder changes the
# mode of no folder above DIR (the server's files then go in a postgres-owned folder of their
# own, removed by `destroy`).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
t=$(mktemp -d /tmp/fleetd-pgauth.XXXXXX)	# mode 0700, root's: closed to postgres
dir=$t/closed/pg
trap 'bash "$root/scripts/pg.sh" destroy "$dir" >/dev/null 2>&1 || true; rm -rf "$t"' EXIT
fail() { echo "pg_auth: $*" >&2; exit 1; }
mkdir -m 700 "$t/closed"
modes() { local d=$dir; while [ "$d" != / ]; do d=$(dirname "$d"); stat -c '%a %U %n' "$d"; done; }
before=$(modes)
PG_FSYNC=off bash "$root/scripts/pg.sh" start "$dir"
after=$(modes)
[ "$before" = "$after" ] || fail "folders above DIR changed: before
$before
after
$after"
unset PGPASSFILE PGPASSWORD
bindir=$(bash "$root/scripts/pg.sh" bindir "$dir")
url=$(bash "$root/scripts/pg.sh" url "$dir")
port=$(cat "$dir/port")
case ${url#*://} in *:*@*) fail "the url holds a password: $url";; esac
[ "$(stat -c %a "$dir/pgpass")" = 600 ] || fail "DIR/pgpass is not mode 0600"
psql() { "$bindir/psql" -X -w -qAt "$@" </dev/null; }
if psql "postgresql://postgres@127.0.0.1:$port/fleet" -c 'SELECT 1' >/dev/null 2>&1; then
	fail "a TCP connection as postgres without the password was accepted"
fi
if [ "$(id -u)" -eq 0 ] && id nobody >/dev/null 2>&1; then
	if runuser -u nobody -- "$bindir/psql" -X -w "postgresql://postgres@127.0.0.1:$port/fleet" \
		-qAt -c 'SELECT 1' </dev/null >/dev/null 2>&1; then
		fail "another local user (nobody) connected over TCP"
	fi
fi
[ "$(PGPASSFILE=$dir/pgpass psql "$url" -c 'SELECT 1')" = 1 ] || fail "cannot connect with DIR/pgpass"
trust=$(PGPASSFILE=$dir/pgpass psql "$url" -c "SELECT count(*) FROM pg_hba_file_rules WHERE auth_method <> 'scram-sha-256'")
[ "$trust" = 0 ] || fail "$trust pg_hba rules other than scram-sha-256"
server=$dir
if [ "$(id -u)" -eq 0 ]; then
	[ -f "$dir/server_dir" ] || fail "DIR is closed to postgres but no server_dir was made"
	server=$(cat "$dir/server_dir")
	[ "$(stat -c '%U %a' "$server")" = "postgres 700" ] || fail "$server is not postgres's, mode 0700"
fi
[ ! -e "$server/pwfile" ] || fail "initdb's password file was left in $server"
# a stop and a start keep the password and the data
bash "$root/scripts/pg.sh" stop "$dir"
PG_FSYNC=off bash "$root/scripts/pg.sh" start "$dir"
[ "$(PGPASSFILE=$dir/pgpass psql "$url" -c 'SELECT 1')" = 1 ] || fail "cannot connect after a restart"
bash "$root/scripts/pg.sh" destroy "$dir"
[ "$server" = "$dir" ] || [ ! -e "$server" ] || fail "destroy left $server"
echo "pg_auth: password required over TCP, accepted from DIR/pgpass, no folder above DIR changed"
