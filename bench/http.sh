#!/usr/bin/env bash
# bench/http.sh — wrk (32 connections, loopback) against a static libmicrohttpd responder,
# fleetd's GET /healthz and its database-backed GET /v1/environments, in one run.
# Appends the figures to bench/RESULTS.md.  Needs the release build (make build).
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
. "$top/bench/lib.sh"
dur=${BENCH_DURATION:-10s}
bench_work http
command -v wrk >/dev/null || bash "$top/scripts/deps.sh"
bench_need fleetd

cc -O2 -o "$work/static" "$top/bench/static_responder.c" $(pkg-config --cflags --libs libmicrohttpd) -lpthread
bench_pg
export FLEETD_LOG_LEVEL=warn FLEETD_THREADS=${FLEETD_THREADS:-4} FLEETD_DB_POOL=${FLEETD_DB_POOL:-8}
"$bin/fleetd" migrate >/dev/null
token=$("$bin/fleetd" token create --name bench --role viewer --env '*' | grep '^fleet_')
for i in $(seq 1 50); do
	psql -qAt "$DATABASE_URL" -c "INSERT INTO environments (id, name) VALUES (gen_random_uuid(), 'env-$i')" >/dev/null
done
sp=$(bench_free_port)
fp=$(bench_free_port)
"$work/static" "$sp" "$FLEETD_THREADS" & pids+=($!)
FLEETD_LISTEN=127.0.0.1:$fp "$bin/fleetd" serve >"$work/fleetd.log" 2>&1 & pids+=($!)
for _ in $(seq 100); do curl -sf "http://127.0.0.1:$fp/healthz" >/dev/null && break; sleep 0.1; done

rps() { wrk -t2 -c32 -d"$dur" "$@" | awk '/Requests\/sec/ {print $2}'; }
static=$(rps "http://127.0.0.1:$sp/")
health=$(rps "http://127.0.0.1:$fp/healthz")
envs=$(rps -H "Authorization: Bearer $token" "http://127.0.0.1:$fp/v1/environments?limit=20")
rss=$(awk '/VmHWM/ {print $2}' /proc/${pids[1]}/status)
# The database's own ceiling for one trivial read per request, on the same machine now.
pgbin=$(bash "$top/scripts/pg.sh" bindir "$work/pg")
"$pgbin/pgbench" -i -q "$DATABASE_URL" >/dev/null 2>&1
pgtps=$("$pgbin/pgbench" -S -c 8 -j 2 -T "${dur%s}" "$DATABASE_URL" 2>/dev/null | awk '/^tps/ {print $3}')
r3=$(python3 -c "print(f'{$pgtps/$static:.2f}')")
r1=$(python3 -c "print(f'{$health/$static:.2f}')")
r2=$(python3 -c "print(f'{$envs/$static:.2f}')")
echo "static $static rps, /healthz $health rps (${r1}x), /v1/environments $envs rps (${r2}x), fleetd peak RSS ${rss} kB"
{
	echo
	echo "## HTTP ($(date -u +%Y-%m-%d), \`bash bench/http.sh\`, wrk -t2 -c32 -d$dur, FLEETD_THREADS=$FLEETD_THREADS)"
	echo
	echo "| target | requests/s | ratio to static |"
	echo "|---|---|---|"
	echo "| static libmicrohttpd responder | $static | 1.00 |"
	echo "| fleetd GET /healthz | $health | $r1 (target ≥ 0.7) |"
	echo "| fleetd GET /v1/environments?limit=20 (Postgres) | $envs | $r2 (target ≥ 0.4) |"
	echo "| pgbench -S -c 8 (Postgres alone, one indexed read per transaction) | $pgtps | $r3 |"
	echo
	echo "fleetd peak RSS during the run: ${rss} kB."
} >>"$top/bench/RESULTS.md"
