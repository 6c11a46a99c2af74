#!/usr/bin/env bash
# pg.sh start DIR | stop DIR | url DIR — a private Postgres under DIR, run as the
# postgres user (Postgres refuses root), unix socket inside DIR, a free TCP port on loopback.
# Durable by default (fsync, full_page_writes, synchronous_commit on): `make run` and every
# benchmark use it so.  PG_FSYNC=off (tests/run.sh sets it, for speed only) turns fsync off.
# PG_SOCKET_ONLY=1 (`make run`): no TCP at all, the socket folder DIR mode 0700, so no other
# local user can reach the trust-authenticated server; `url` then names the socket.
set -euo pipefail
cmd=${1:?usage: pg.sh start|stop|url DIR}
dir=$(realpath -m "${2:?usage: pg.sh start|stop|url DIR}")
bindir=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n1)
[ -x "$bindir/initdb" ] || { echo "pg.sh: no postgresql server found (apt-get install postgresql)" >&2; exit 1; }

as_pg() {
	if [ "$(id -u)" -eq 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}

free_port() {
	python3 - <<'PY' 2>/dev/null || echo $((20000 + RANDOM % 20000))
import socket
s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()
PY
}

case "$cmd" in
start)
	mkdir -p "$dir"
	[ "$(id -u)" -eq 0 ] && chown postgres:postgres "$dir"
	# Every ancestor must be traversable by the postgres user.
	d=$dir; while [ "$d" != / ]; do d=$(dirname "$d"); [ "$(id -u)" -eq 0 ] && chmod o+x "$d" 2>/dev/null || true; done
	if [ ! -f "$dir/data/PG_VERSION" ]; then
		as_pg "$bindir/initdb" -D "$dir/data" -U postgres -A trust --no-sync >/dev/null
	fi
	if as_pg "$bindir/pg_ctl" -D "$dir/data" status >/dev/null 2>&1; then
		exit 0
	fi
	# A restart keeps its port so clients reconnect to the same address.
	if [ -f "$dir/port" ]; then port=$(cat "$dir/port"); else port=$(free_port); fi
	echo "$port" >"$dir/port"
	[ "$(id -u)" -eq 0 ] && chown postgres:postgres "$dir/port"
	case ${PG_FSYNC:-on} in on|off) ;; *) echo "pg.sh: PG_FSYNC must be on or off" >&2; exit 2;; esac
	durable="-c fsync=${PG_FSYNC:-on} -c full_page_writes=on -c synchronous_commit=on"
	listen="-c listen_addresses=127.0.0.1"
	if [ "${PG_SOCKET_ONLY:-0}" = 1 ]; then
		listen="-c listen_addresses= -c unix_socket_permissions=0700"
		chmod 700 "$dir"; touch "$dir/socket_only"
	else
		rm -f "$dir/socket_only"
	fi
	as_pg "$bindir/pg_ctl" -D "$dir/data" -l "$dir/log" -w -t 60 \
		-o "-p $port -k $dir $listen $durable -c max_connections=300 -c shared_buffers=256MB" \
		start >/dev/null
	as_pg "$bindir/psql" -h "$dir" -p "$port" -U postgres -qAt -c "SELECT 1 FROM pg_database WHERE datname='fleet'" postgres | grep -q 1 ||
		as_pg "$bindir/createdb" -h "$dir" -p "$port" -U postgres fleet
	;;
stop)
	if [ -f "$dir/data/PG_VERSION" ]; then
		as_pg "$bindir/pg_ctl" -D "$dir/data" -m fast -w stop >/dev/null 2>&1 || true
	fi
	;;
restart)
	as_pg "$bindir/pg_ctl" -D "$dir/data" -m fast -w restart >/dev/null
	;;
url)
	if [ -f "$dir/socket_only" ]; then
		echo "postgresql://postgres@/fleet?host=$dir&port=$(cat "$dir/port")"
	else
		echo "postgresql://postgres@127.0.0.1:$(cat "$dir/port")/fleet"
	fi
	;;
bindir)
	echo "$bindir"
	;;
*)
	echo "usage: pg.sh start|stop|restart|url DIR" >&2; exit 2
	;;
esac
