#!/usr/bin/env bash
# pg_ha.sh start | stop | url | primary | kill-primary | wait-primary | wait-sync DIR
# pg_ha.sh restart-node DIR node1|node2
#
# A highly available Postgres under DIR, built from Debian's patroni and etcd-server the
# way a platform team runs one on its own machines: one etcd member, two Patroni nodes
# (node1, node2) in synchronous mode, so a commit is acknowledged only once the synchronous
# standby has it and the standby that takes over after a failover holds every
# acknowledged write.  Everything listens on free loopback ports; Postgres runs as the
# postgres user (it refuses root), in a folder of its own (named in DIR/home, mode 0700,
# owned by postgres) so that no folder above DIR needs opening to it.  Passwords are generated at start (scram-sha-256) and
# kept in DIR (mode 0600): the client URL names a passfile, never a password.
#
#   url           libpq multi-host URL for fleetd (target_session_attrs=read-write: libpq
#                 tries both nodes and keeps the one that takes writes)
#   primary       the node that leads now (node1 | node2), from Patroni's REST API
#   kill-primary  SIGKILL of the leader's Patroni and Postgres: a machine lost, not a
#                 clean switchover; the standby is promoted once the leader key expires
#   wait-primary  waits until a node leads and takes writes again (prints the seconds)
#   wait-sync     waits until a standby streams synchronously
#   restart-node  starts a killed node again: it rejoins as a standby (pg_rewind)
#   destroy       stop, then remove the postgres-owned folder (its logs are copied into
#                 DIR/logs first)
#
# PATRONI_TTL (default 10) bounds the failover: the leader key's lease in etcd.
set -euo pipefail
cmd=${1:?usage: pg_ha.sh start|stop|url|primary|kill-primary|wait-primary DIR}
dir=$(realpath -m "${2:?usage: pg_ha.sh CMD DIR}")
bindir=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n1)
ttl=${PATRONI_TTL:-10}

for b in patroni etcd; do
	command -v "$b" >/dev/null || { echo "pg_ha.sh: $b missing (apt-get install patroni etcd-server)" >&2; exit 1; }
done
[ -x "$bindir/initdb" ] || { echo "pg_ha.sh: no postgresql server found" >&2; exit 1; }

home=
[ -f "$dir/home" ] && home=$(cat "$dir/home")

as_pg() {
	if [ "$(id -u)" -eq 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}

free_port() {
	python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# The REST API answers 200 on /primary only on the node that leads and takes writes.
rest_ok() {
	[ -f "$home/$1/rest_port" ] || return 1
	curl -fsS -o /dev/null --max-time 2 "http://127.0.0.1:$(cat "$home/$1/rest_port")/$2" 2>/dev/null
}

primary() {
	for n in node1 node2; do
		rest_ok "$n" primary && { echo "$n"; return 0; }
	done
	return 1
}

node_conf() {	# name pg_port rest_port
	cat <<EOF
scope: fleet
name: $1
log:
  dir: $home/$1
  level: WARNING
restapi:
  listen: 127.0.0.1:$3
  connect_address: 127.0.0.1:$3
etcd3:
  hosts: 127.0.0.1:$(cat "$home/etcd_port")
bootstrap:
  dcs:
    ttl: $ttl
    loop_wait: 1
    retry_timeout: $(( (ttl - 1) / 3 ))
    maximum_lag_on_failover: 0
    synchronous_mode: true
    postgresql:
      use_pg_rewind: true
      parameters:
        synchronous_commit: "on"
        max_connections: 300
        shared_buffers: 128MB
        wal_level: replica
        wal_log_hints: "on"
        hot_standby: "on"
        max_wal_senders: 8
        max_replication_slots: 8
        fsync: "${PG_FSYNC:-on}"
  initdb:
    - encoding: UTF8
    - auth: scram-sha-256
  pg_hba:
    - local all all scram-sha-256
    - host replication replicator 127.0.0.1/32 scram-sha-256
    - host all all 127.0.0.1/32 scram-sha-256
postgresql:
  listen: 127.0.0.1:$2
  connect_address: 127.0.0.1:$2
  data_dir: $home/$1/data
  bin_dir: $bindir
  pgpass: $home/$1/pgpass.patroni
  parameters:
    unix_socket_directories: $home/$1
  authentication:
    superuser:
      username: postgres
      password: $(cat "$dir/superuser.password")
    replication:
      username: replicator
      password: $(cat "$dir/replicator.password")
    rewind:
      username: postgres
      password: $(cat "$dir/superuser.password")
EOF
}

start_node() {
	as_pg bash -c "umask 077; exec setsid patroni '$home/$1/patroni.yml' >>'$home/$1/patroni.log' 2>&1 </dev/null & echo \$! >'$home/$1/patroni.pid'"
}

case "$cmd" in
start)
	mkdir -p "$dir"
	if [ -z "$home" ]; then
		home=$(mktemp -d /tmp/fleetd-pg-ha.XXXXXX)
		[ "$(id -u)" -eq 0 ] && chown postgres:postgres "$home"
		echo "$home" >"$dir/home"
	fi
	for f in superuser replicator fleet; do
		[ -f "$dir/$f.password" ] || (umask 077; openssl rand -hex 24 >"$dir/$f.password")
	done
	[ -f "$home/etcd_port" ] || { free_port >"$home/etcd_port"; free_port >"$home/etcd_peer_port"; }
	if ! curl -fsS --max-time 2 "http://127.0.0.1:$(cat "$home/etcd_port")/health" >/dev/null 2>&1; then
		mkdir -p "$home/etcd"
		[ "$(id -u)" -eq 0 ] && chown postgres:postgres "$home/etcd"
		ep=$(cat "$home/etcd_port"); pp=$(cat "$home/etcd_peer_port")
		as_pg bash -c "exec setsid etcd --name fleet-etcd --data-dir '$home/etcd/data' \
			--listen-client-urls http://127.0.0.1:$ep --advertise-client-urls http://127.0.0.1:$ep \
			--listen-peer-urls http://127.0.0.1:$pp --initial-advertise-peer-urls http://127.0.0.1:$pp \
			--initial-cluster fleet-etcd=http://127.0.0.1:$pp --enable-v2=false \
			>>'$home/etcd/etcd.log' 2>&1 </dev/null & echo \$! >'$home/etcd/pid'"
		for _ in $(seq 1 100); do
			curl -fsS --max-time 1 "http://127.0.0.1:$ep/health" >/dev/null 2>&1 && break
			sleep 0.1
		done
	fi
	for n in node1 node2; do
		mkdir -p "$home/$n"
		[ -f "$home/$n/pg_port" ] || { free_port >"$home/$n/pg_port"; free_port >"$home/$n/rest_port"; }
		(umask 077; node_conf "$n" "$(cat "$home/$n/pg_port")" "$(cat "$home/$n/rest_port")" >"$home/$n/patroni.yml")
		[ "$(id -u)" -eq 0 ] && chown -R postgres:postgres "$home/$n"
		if ! { [ -f "$home/$n/patroni.pid" ] && kill -0 "$(cat "$home/$n/patroni.pid")" 2>/dev/null; }; then
			start_node "$n"
		fi
		# the first node bootstraps alone, so it is the one that runs initdb
		if [ "$n" = node1 ]; then
			for _ in $(seq 1 600); do primary >/dev/null && break; sleep 0.1; done
			primary >/dev/null || { echo "pg_ha.sh: node1 did not become primary; see $home/node1" >&2; exit 1; }
		fi
	done
	# until the standby streams synchronously (Patroni's /sync answers 200 there)
	for _ in $(seq 1 900); do
		{ rest_ok node1 sync || rest_ok node2 sync; } && break
		sleep 0.1
	done
	{ rest_ok node1 sync || rest_ok node2 sync; } ||
		{ echo "pg_ha.sh: no synchronous standby after 90 s; see $home/node*/" >&2; exit 1; }
	p=$(primary)
	su_pw=$(cat "$dir/superuser.password"); fleet_pw=$(cat "$dir/fleet.password")
	PGPASSWORD=$su_pw "$bindir/psql" -X -qAt -h 127.0.0.1 -p "$(cat "$home/$p/pg_port")" -U postgres -d postgres \
		-v pw="$fleet_pw" >/dev/null <<'SQL'
SELECT format('CREATE ROLE fleet LOGIN PASSWORD %L', :'pw') WHERE NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'fleet') \gexec
SELECT 'CREATE DATABASE fleet OWNER fleet' WHERE NOT EXISTS (SELECT 1 FROM pg_database WHERE datname = 'fleet') \gexec
SQL
	{
		for n in node1 node2; do echo "127.0.0.1:$(cat "$home/$n/pg_port"):*:fleet:$fleet_pw"; done
	} >"$dir/pgpass"
	chmod 600 "$dir/pgpass"
	;;
url)
	echo "postgresql://fleet@127.0.0.1:$(cat "$home/node1/pg_port"),127.0.0.1:$(cat "$home/node2/pg_port")/fleet?target_session_attrs=read-write&connect_timeout=3&passfile=$dir/pgpass"
	;;
primary)
	primary
	;;
kill-primary)
	p=$(primary) || { echo "pg_ha.sh: no primary to kill" >&2; exit 1; }
	kill -9 "$(cat "$home/$p/patroni.pid")" 2>/dev/null || true
	[ -f "$home/$p/data/postmaster.pid" ] && kill -9 "$(head -n1 "$home/$p/data/postmaster.pid")" 2>/dev/null || true
	echo "$p"
	;;
wait-primary)
	t0=$(date +%s.%N)
	for _ in $(seq 1 1200); do
		primary >/dev/null && break
		sleep 0.05
	done
	primary >/dev/null || { echo "pg_ha.sh: no primary after 60 s" >&2; exit 1; }
	python3 -c "import sys; print(round($(date +%s.%N) - $t0, 2))"
	;;
wait-sync)	# until a standby streams synchronously again
	for _ in $(seq 1 1200); do
		{ rest_ok node1 sync || rest_ok node2 sync; } && exit 0
		sleep 0.1
	done
	echo "pg_ha.sh: no synchronous standby after 120 s" >&2; exit 1
	;;
restart-node)	# brings a killed node back (it rejoins as a standby, pg_rewind if needed)
	n=${3:?usage: pg_ha.sh restart-node DIR node1|node2}
	start_node "$n"
	;;
stop)
	for n in node1 node2; do
		if [ -f "$home/$n/patroni.pid" ]; then
			kill -TERM "$(cat "$home/$n/patroni.pid")" 2>/dev/null || true
		fi
	done
	for _ in $(seq 1 100); do
		alive=0
		for n in node1 node2; do
			[ -f "$home/$n/patroni.pid" ] && kill -0 "$(cat "$home/$n/patroni.pid")" 2>/dev/null && alive=1
		done
		[ $alive = 0 ] && break
		sleep 0.2
	done
	for n in node1 node2; do
		[ -f "$home/$n/patroni.pid" ] && kill -9 "$(cat "$home/$n/patroni.pid")" 2>/dev/null || true
		if [ -f "$home/$n/data/postmaster.pid" ]; then
			as_pg "$bindir/pg_ctl" -D "$home/$n/data" -m immediate -w stop >/dev/null 2>&1 || true
		fi
	done
	[ -f "$home/etcd/pid" ] && kill -TERM "$(cat "$home/etcd/pid")" 2>/dev/null || true
	;;
destroy)
	bash "$0" stop "$dir"
	if [ -n "$home" ] && [ -d "$home" ]; then
		mkdir -p "$dir/logs"
		for f in "$home"/node*/patroni.log "$home"/node*/patroni.log* "$home"/node*/data/log/* "$home"/etcd/etcd.log; do
			[ -f "$f" ] && cp "$f" "$dir/logs/$(echo "${f#"$home"/}" | tr / _)" 2>/dev/null
		done
		rm -rf "$home" "$dir/home"
	fi
	;;
*)
	echo "usage: pg_ha.sh start|stop|url|primary|kill-primary|wait-primary|wait-sync|restart-node|destroy DIR" >&2; exit 2
	;;
esac
