#!/usr/bin/env bash
# make run: a private Postgres (unless DATABASE_URL is set), cloudsim with the demo fleet,
# migrations, an admin token, the demo registrations, and fleetd on 127.0.0.1:8080.
# fleetd runs under a supervisor: after a crash it is started again (backoff 0.1 s doubling
# to 5 s, at most FLEETD_MAX_RESTARTS a minute) while cloudsim and Postgres keep running.
# Ctrl-C stops fleetd, cloudsim and the private Postgres.
# FLEET_STATE_DIR (default .fleet) and FLEET_BIN (default build/rel) serve the tests.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
state=${FLEET_STATE_DIR:-$top/.fleet}
bin=${FLEET_BIN:-$top/build/rel}
max_restarts=${FLEETD_MAX_RESTARTS:-5}
mkdir -p "$state"
cd "$top"

pids=()
own_pg=0
stop_all() {
	trap - EXIT INT TERM
	local i	# newest first: fleetd (its supervisor) before cloudsim
	for ((i = ${#pids[@]} - 1; i >= 0; i--)); do kill -TERM "${pids[i]}" 2>/dev/null || true; done
	for ((i = ${#pids[@]} - 1; i >= 0; i--)); do wait "${pids[i]}" 2>/dev/null || true; done
	[ "$own_pg" = 1 ] && bash "$top/scripts/pg.sh" stop "$state/pg"
	echo "stopped."
}
trap stop_all EXIT INT TERM

if [ -z "${DATABASE_URL:-}" ]; then
	PG_SOCKET_ONLY=1 bash "$top/scripts/pg.sh" start "$state/pg"	# no TCP: see pg.sh
	own_pg=1
	export DATABASE_URL=$(bash "$top/scripts/pg.sh" url "$state/pg")
	export PGPASSFILE=$state/pg/pgpass	# its generated password (libpq reads it)
fi
if [ ! -s "$state/master.key" ]; then
	(umask 077; openssl rand -base64 32 >"$state/master.key")
fi
export FLEETD_MASTER_KEY=$(cat "$state/master.key")
export FLEETD_LISTEN=${FLEETD_LISTEN:-127.0.0.1:8080}

if [ -x "$bin/cloudsim" ]; then
	# the state dir is kept: cloudsim reloads its IAM settings (trust external ids, tags,
	# federated credentials), tokens, ports, CA and Ray objects, so a second `make run`
	# weakens no trust policy fleetd verified (cloudsim/README.md, "Restarts")
	mkdir -p "$state/cloudsim"; rm -f "$state/cloudsim/port"
	crds=(); [ -d "$top/../shared/kuberay/crds" ] && crds=(--crd-dir "$top/../shared/kuberay/crds")
	"$bin/cloudsim" --fleet "$top/cloudsim/fleets/demo.json" --listen 127.0.0.1:0 \
		--state-dir "$state/cloudsim" "${crds[@]}" >>"$state/cloudsim.log" 2>&1 &
	pids+=($!)
	for _ in $(seq 200); do [ -s "$state/cloudsim/port" ] && break; sleep 0.1; done
	if [ -s "$state/cloudsim/fleetd.env" ]; then
		set -a; . "$state/cloudsim/fleetd.env"; set +a
	else
		echo "cloudsim did not start; see $state/cloudsim.log" >&2
	fi
fi

"$bin/fleetd" migrate >/dev/null
if [ ! -s "$state/admin.token" ] || ! grep -q fleet_ "$state/admin.token"; then
	(umask 077; "$bin/fleetd" token create --name admin --role admin --env '*' | grep '^fleet_' >"$state/admin.token")
fi
token=$(cat "$state/admin.token")

# supervise: runs fleetd until it exits on a signal of ours; restarts it after a crash.
supervise() {
	local child=0 stopping=0 rc backoff=0.1 now started
	local -a recent=()
	trap 'stopping=1; [ "$child" -gt 0 ] && kill -TERM "$child" 2>/dev/null' TERM INT
	while :; do
		started=$(date +%s)
		"$bin/fleetd" serve --migrate >>"$state/fleetd.log" 2>&1 &
		child=$!
		echo "$child" >"$state/fleetd.pid"
		rc=0; wait "$child" || rc=$?
		while [ "$stopping" = 1 ] && kill -0 "$child" 2>/dev/null; do
			wait "$child" || true
		done
		[ "$stopping" = 1 ] && break
		now=$(date +%s)
		local -a keep=()
		for t in "${recent[@]}"; do [ $((now - t)) -lt 60 ] && keep+=("$t"); done
		recent=("${keep[@]}" "$now")
		if [ "${#recent[@]}" -gt "$max_restarts" ]; then
			echo "supervisor: fleetd exited ($rc) ${#recent[@]} times within a minute; not restarting" \
				| tee -a "$state/fleetd.log" >&2
			return 1
		fi
		[ $((now - started)) -ge 30 ] && backoff=0.1	# it had been up a while
		echo "supervisor: fleetd exited ($rc); restarting in ${backoff}s" | tee -a "$state/fleetd.log" >&2
		sleep "$backoff" & wait $! || true
		[ "$stopping" = 1 ] && break
		backoff=$(awk -v b="$backoff" 'BEGIN { b *= 2; if (b > 5) b = 5; print b }')
	done
	rm -f "$state/fleetd.pid"
}
supervise &
pids+=($!)
for _ in $(seq 100); do curl -sf "http://$FLEETD_LISTEN/healthz" >/dev/null 2>&1 && break; sleep 0.1; done
if [ -s "$state/cloudsim/clusters.json" ]; then
	FLEET_URL="http://$FLEETD_LISTEN" FLEET_TOKEN=$token python3 "$top/scripts/demo.py" \
		"$state/cloudsim" >"$state/demo.log" 2>&1 || echo "demo registration failed; see $state/demo.log" >&2
fi
cat <<EOT

fleetd is serving on http://$FLEETD_LISTEN   (Ctrl-C stops everything)
console: http://$FLEETD_LISTEN/   (log in with the admin token; it stays in that browser tab)
admin token: in ${state#"$top"/}/admin.token   (a secret: read it from the file, it is not printed)
logs: .fleet/fleetd.log, .fleet/cloudsim.log

try:
  curl -s -H "Authorization: Bearer \$(cat .fleet/admin.token)" http://$FLEETD_LISTEN/v1/environments
  FLEET_URL=http://$FLEETD_LISTEN FLEET_TOKEN=\$(cat .fleet/admin.token) build/rel/fleetctl clusters ls
  FLEET_URL=http://$FLEETD_LISTEN FLEET_TOKEN=\$(cat .fleet/admin.token) build/rel/fleetctl jobs submit -f examples/first-job.json
  kubectl --kubeconfig .fleet/cloudsim/kubeconfig get pods -A    (a context per member cluster)
  (README: "Your first job")

EOT
wait "${pids[-1]}"
