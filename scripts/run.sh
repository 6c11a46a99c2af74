#!/usr/bin/env bash
# make run: a private Postgres (unless DATABASE_URL is set), cloudsim with the demo fleet,
# migrations, an admin token, the demo registrations, and fleetd on 127.0.0.1:8080.
# Ctrl-C stops fleetd, cloudsim and the private Postgres.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
state=$top/.fleet
bin=$top/build/rel
mkdir -p "$state"
cd "$top"

pids=()
own_pg=0
stop_all() {
	trap - EXIT INT TERM
	for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
	for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
	[ "$own_pg" = 1 ] && bash "$top/scripts/pg.sh" stop "$state/pg"
	echo "stopped."
}
trap stop_all EXIT INT TERM

if [ -z "${DATABASE_URL:-}" ]; then
	PG_SOCKET_ONLY=1 bash "$top/scripts/pg.sh" start "$state/pg"	# no TCP: see pg.sh
	own_pg=1
	export DATABASE_URL=$(bash "$top/scripts/pg.sh" url "$state/pg")
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

"$bin/fleetd" serve --migrate >>"$state/fleetd.log" 2>&1 &
pids+=($!)
for _ in $(seq 100); do curl -sf "http://$FLEETD_LISTEN/healthz" >/dev/null 2>&1 && break; sleep 0.1; done
if [ -s "$state/cloudsim/clusters.json" ]; then
	FLEET_URL="http://$FLEETD_LISTEN" FLEET_TOKEN=$token python3 "$top/scripts/demo.py" \
		"$state/cloudsim" >"$state/demo.log" 2>&1 || echo "demo registration failed; see $state/demo.log" >&2
fi
cat <<EOT

fleetd is serving on http://$FLEETD_LISTEN   (Ctrl-C stops everything)
admin token: $token   (also in .fleet/admin.token)
logs: .fleet/fleetd.log, .fleet/cloudsim.log

try:
  curl -s -H "Authorization: Bearer \$(cat .fleet/admin.token)" http://$FLEETD_LISTEN/v1/environments
  FLEET_URL=http://$FLEETD_LISTEN FLEET_TOKEN=\$(cat .fleet/admin.token) build/rel/fleetctl clusters ls

EOT
wait "${pids[-1]}"
