#!/usr/bin/env bash
# pg.sh start|stop|restart|destroy|url|bindir DIR — a private Postgres for DIR, run as the
# postgres user (Postgres refuses root), its unix socket in its own folder, a free TCP port on
# loopback.  Durable by default (fsync, full_page_writes, synchronous_commit on): `make run` and
# every benchmark use it so.  PG_FSYNC=off (tests/run.sh sets it, for speed only) turns fsync off.
#
# Password authentication everywhere (scram-sha-256, socket and TCP): the superuser postgres
# has a password generated at the first start, kept in DIR/pgpass (mode 0600, owned by whoever
# ran pg.sh).  `url` names no password: clients set PGPASSFILE=DIR/pgpass (libpq: fleetd, psql,
# pgbench, the test harness).  PG_SOCKET_ONLY=1 (`make run`): no TCP at all, the socket folder
# mode 0700; `url` then names the socket.
#
# The server's files (data, log, socket) go in DIR itself when the postgres user can reach it;
# otherwise (DIR under a folder closed to postgres, e.g. a mktemp -d) in a postgres-owned folder
# of its own under /tmp, named in DIR/server_dir, as scripts/pg_ha.sh does.  No folder above
# DIR is ever chmod-ed.  `destroy` stops the server and removes that folder (its log is copied
# to DIR/log first); `stop` keeps everything for a later start.
set -euo pipefail
cmd=${1:?usage: pg.sh start|stop|restart|destroy|url|bindir DIR}
dir=$(realpath -m "${2:?usage: pg.sh CMD DIR}")
bindir=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n1)
[ -x "$bindir/initdb" ] || { echo "pg.sh: no postgresql server found (apt-get install postgresql)" >&2; exit 1; }
root=0; [ "$(id -u)" -eq 0 ] && root=1

as_pg() {
	if [ "$root" = 1 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}

free_port() {
	python3 - <<'PY' 2>/dev/null || echo $((20000 + RANDOM % 20000))
import socket
s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()
PY
}

# pg: the folder with the server's files (see above).
pg=$dir
[ -f "$dir/server_dir" ] && pg=$(cat "$dir/server_dir")

ours() { [ -d "$pg" ] && [ ! -L "$pg" ] && [ "$(stat -c %U "$pg")" = postgres ]; }

# server_dir: picks pg at start.  A recorded folder is kept only while it is still ours (a
# postgres-owned folder, not a symlink: /tmp is shared); otherwise a new one.
server_dir() {
	[ "$root" = 1 ] || return 0
	if [ -f "$dir/server_dir" ]; then
		ours && return 0
	elif as_pg test -x "$(dirname "$dir")"; then
		pg=$dir
		chown postgres:postgres "$dir"
		return 0
	fi
	pg=$(mktemp -d /tmp/fleetd-pg.XXXXXX)
	chown postgres:postgres "$pg"
	echo "$pg" >"$dir/server_dir"
}

# psql as a client of ours (whoever runs pg.sh, with the password in DIR/pgpass).
client() {
	local prog=$1
	shift
	PGPASSFILE=$dir/pgpass "$bindir/$prog" -w -h "$pg" -p "$(cat "$dir/port")" -U postgres "$@"
}

case "$cmd" in
start)
	mkdir -p "$dir"
	server_dir
	[ -s "$dir/pgpass" ] || (umask 077; echo "*:*:*:postgres:$(openssl rand -hex 24)" >"$dir/pgpass")
	if [ ! -f "$pg/data/PG_VERSION" ]; then
		# initdb reads the password as the postgres user: from a file in pg, removed at once
		trap 'rm -f "$pg/pwfile"' EXIT
		(umask 077; cut -d: -f5 "$dir/pgpass" >"$pg/pwfile")
		[ "$root" = 1 ] && chown postgres:postgres "$pg/pwfile"
		as_pg "$bindir/initdb" -D "$pg/data" -U postgres --pwfile="$pg/pwfile" \
			--auth-host=scram-sha-256 --auth-local=scram-sha-256 --no-sync >/dev/null
		rm -f "$pg/pwfile"
	fi
	if as_pg "$bindir/pg_ctl" -D "$pg/data" status >/dev/null 2>&1; then
		exit 0
	fi
	# A restart keeps its port so clients reconnect to the same address.
	if [ -f "$dir/port" ]; then port=$(cat "$dir/port"); else port=$(free_port); fi
	echo "$port" >"$dir/port"
	case ${PG_FSYNC:-on} in on|off) ;; *) echo "pg.sh: PG_FSYNC must be on or off" >&2; exit 2;; esac
	durable="-c fsync=${PG_FSYNC:-on} -c full_page_writes=on -c synchronous_commit=on"
	listen="-c listen_addresses=127.0.0.1"
	if [ "${PG_SOCKET_ONLY:-0}" = 1 ]; then
		listen="-c listen_addresses= -c unix_socket_permissions=0700"
		chmod 700 "$pg"; touch "$dir/socket_only"
	else
		rm -f "$dir/socket_only"
	fi
	as_pg "$bindir/pg_ctl" -D "$pg/data" -l "$pg/log" -w -t 60 \
		-o "-p $port -k $pg $listen $durable -c max_connections=300 -c shared_buffers=256MB" \
		start >/dev/null
	# A cluster made by an older pg.sh trusted every local user: give postgres the password
	# (trust still admits us) and ask for it from now on.
	if grep -qE '^[^#]*[[:space:]]trust[[:space:]]*$' "$pg/data/pg_hba.conf"; then
		pw=$(cut -d: -f5 "$dir/pgpass")
		"$bindir/psql" -X -qAt -h "$pg" -p "$port" -U postgres -d postgres \
			-c "ALTER ROLE postgres PASSWORD '$pw'" >/dev/null
		as_pg sed -i -E 's/[[:space:]]trust[[:space:]]*$/ scram-sha-256/' "$pg/data/pg_hba.conf"
		as_pg "$bindir/pg_ctl" -D "$pg/data" reload >/dev/null
	fi
	client psql -X -qAt -c "SELECT 1 FROM pg_database WHERE datname='fleet'" postgres | grep -q 1 ||
		client createdb fleet
	;;
stop)
	if [ -f "$pg/data/PG_VERSION" ]; then
		as_pg "$bindir/pg_ctl" -D "$pg/data" -m fast -w stop >/dev/null 2>&1 || true
	fi
	;;
restart)
	as_pg "$bindir/pg_ctl" -D "$pg/data" -m fast -w restart >/dev/null
	;;
destroy)
	if [ -f "$pg/data/PG_VERSION" ]; then
		as_pg "$bindir/pg_ctl" -D "$pg/data" -m fast -w stop >/dev/null 2>&1 || true
	fi
	if [ "$pg" != "$dir" ]; then
		if ours; then
			cp "$pg/log" "$dir/log" 2>/dev/null || true
			rm -rf "$pg"
		fi
		rm -f "$dir/server_dir"
	fi
	;;
url)
	if [ -f "$dir/socket_only" ]; then
		echo "postgresql://postgres@/fleet?host=$pg&port=$(cat "$dir/port")"
	else
		echo "postgresql://postgres@127.0.0.1:$(cat "$dir/port")/fleet"
	fi
	;;
bindir)
	echo "$bindir"
	;;
*)
	echo "usage: pg.sh start|stop|restart|destroy|url|bindir DIR" >&2; exit 2
	;;
esac
