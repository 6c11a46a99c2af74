# bench/lib.sh — what the benchmark scripts share.  Sourced right after `set -euo pipefail`:
#	top=$(cd "$(dirname "$0")/.." && pwd)
#	. "$top/bench/lib.sh"
# Sets bin (BENCH_BUILD, default build/rel) and pids (processes stopped on exit), and makes
# scripts/pg.sh durable (fsync, full_page_writes, synchronous_commit on): benchmarks never
# run on a Postgres that may lose a commit.
unset PG_FSYNC
bin=${BENCH_BUILD:-$top/build/rel}
pids=()

# bench_work NAME: a scratch folder $work (/tmp/fleetd-bench-NAME.XXXXXX); on exit the
# processes in $pids are stopped, then the Postgres of $work/pg, then $work is removed
# (kept with BENCH_KEEP=1).
bench_work() {
	work=$(mktemp -d "/tmp/fleetd-bench-$1.XXXXXX")
	trap bench_cleanup EXIT
}

bench_cleanup() {
	local p
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
	if [ -n "${BENCH_KEEP:-}" ]; then
		bash "$top/scripts/pg.sh" stop "$work/pg" >/dev/null 2>&1 || true
	else
		bash "$top/scripts/pg.sh" destroy "$work/pg" >/dev/null 2>&1 || true
		rm -rf "$work"
	fi
}

# bench_need PROGRAM...: each must be built in $bin.
bench_need() {
	local b
	for b in "$@"; do
		[ -x "$bin/$b" ] || { echo "build first: make build ($bin/$b missing)" >&2; exit 1; }
	done
}

# bench_pg: starts Postgres in $work/pg; sets DATABASE_URL and PGPASSFILE (its generated
# password, for fleetd, psql and pgbench; both exported) and pgbin.
bench_pg() {
	bash "$top/scripts/pg.sh" start "$work/pg" >/dev/null
	DATABASE_URL=$(bash "$top/scripts/pg.sh" url "$work/pg")
	PGPASSFILE=$work/pg/pgpass
	export DATABASE_URL PGPASSFILE
	pgbin=$(bash "$top/scripts/pg.sh" bindir "$work/pg")
}

# bench_fleet_file PYTHON_ARGS...: runs the Python program on stdin with cloudsim's test
# fleet (loaded as `base`) and the arguments as sys.argv[1:], and writes what it leaves in
# `base` to $work/fleet.json, the GCP key file path made absolute (the fleet file moves).
bench_fleet_file() {
	local prog
	prog=$(cat)
	python3 - "$top/cloudsim/fleets/test.json" "$@" >"$work/fleet.json" <<PY
import json, os, sys
fleet_path = sys.argv.pop(1)
base = json.load(open(fleet_path))
$prog
key = base["fleetd"]["gcp"]["private_key_file"]
if not key.startswith("/"):
    base["fleetd"]["gcp"]["private_key_file"] = os.path.normpath(
        os.path.join(os.path.dirname(os.path.abspath(fleet_path)), key))
json.dump(base, sys.stdout)
PY
}

# bench_cloudsim FLEET [CLOUDSIM_ARGS...]: starts cloudsim on FLEET with its state in
# $work/cs (log $work/cloudsim.log), waits for it and exports its fleetd.env; cspid.
bench_cloudsim() {
	local fleet=$1
	shift
	mkdir -p "$work/cs"
	"$bin/cloudsim" --fleet "$fleet" --listen 127.0.0.1:0 --state-dir "$work/cs" "$@" \
		>"$work/cloudsim.log" 2>&1 &
	cspid=$!
	pids+=("$cspid")
	for _ in $(seq 300); do [ -s "$work/cs/port" ] && break; sleep 0.1; done
	[ -s "$work/cs/port" ] || { echo "cloudsim did not start" >&2; tail "$work/cloudsim.log" >&2; exit 1; }
	set -a
	. "$work/cs/fleetd.env"
	set +a
}

# bench_fleetd_env: what every fleetd of a benchmark runs with (quiet logs, a master key,
# snapshots that never age out, FLEETD_DB_POOL default 24), then migrates DATABASE_URL.
bench_fleetd_env() {
	export FLEETD_LOG_LEVEL=warn FLEETD_MASTER_KEY=MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=
	export FLEETD_SNAPSHOT_MAX_AGE=1000000 FLEETD_DB_POOL=${FLEETD_DB_POOL:-24}
	"$bin/fleetd" migrate >/dev/null
}

# bench_free_port: a free TCP port on 127.0.0.1.
bench_free_port() {
	python3 -c 'import socket;s=socket.socket();s.bind(("127.0.0.1",0));print(s.getsockname()[1])'
}

# The spec of seeded job i of queue q (SQL; bench/api.sh, bench/scheduler.sh): a RayJob of
# 1-2 workers of 1, 2 or 4 accelerators, the three flavors in turn.
bench_job_spec="jsonb_build_object('kind', 'RayJob', 'queue', q.name, 'name', 'job-' || i,
         'ray_version', '2.52.0', 'entrypoint', 'python train.py',
         'head', jsonb_build_object('cpu', '1', 'memory', '2Gi'),
         'worker_groups', jsonb_build_array(jsonb_build_object('name', 'w',
           'replicas', 1 + i % 2, 'cpu', '8', 'memory', '64Gi',
           'accelerator', jsonb_build_object(
             'flavor', (ARRAY['nvidia-h100-80gb', 'nvidia-a100-80gb', 'nvidia-l4'])[1 + (i / 30) % 3],
             'count', (ARRAY[1, 2, 4])[1 + (i / 2) % 3]))))"

# bench_seed_fleet PER_CLOUD [FIRST LAST]: the SQL-seeded fleet of bench/scheduler.sh and
# bench/api.sh in DATABASE_URL — environment "bench", clouds cloud-FIRST..cloud-LAST
# (default 0..49: 17 gke, 17 aks, 16 hyperpod regions) of PER_CLOUD clusters each; every
# new cluster has one accelerator pool (16 nodes x 8, racks of 4; H100, A100 or L4 in turn)
# and a cpu pool of 8 x 64 cores for heads; 30 queues, 6 per cohort, nominal 600 of each
# flavor, weights 1-3; priority class "default".  Called again with other clouds, it adds
# them (and their clusters) to the same fleet.
bench_seed_fleet() {
	"$pgbin/psql" -qAtX -v ON_ERROR_STOP=1 "$DATABASE_URL" -v per="$1" -v first="${2:-0}" \
	    -v last="${3:-49}" <<'SQL'
INSERT INTO environments (id, name) VALUES (gen_random_uuid(), 'bench') ON CONFLICT DO NOTHING;
INSERT INTO clouds (id, name, environment, provider, region, account, external_id, state, required)
SELECT gen_random_uuid(), 'cloud-' || r, 'bench',
       (ARRAY['gke', 'aks', 'hyperpod'])[1 + r % 3], 'region-' || lpad(r::text, 2, '0'),
       '{}', 'ext', 'active', '{}'
  FROM generate_series(:first, :last) r;
INSERT INTO clusters (id, cloud_id, name, api_server, ca_cert, credentials_sealed, provider_cluster_id)
SELECT gen_random_uuid(), c.id, c.name || '-k' || k, 'https://127.0.0.1:1', 'ca', 'sealed', 'pc-' || c.name || '-k' || k
  FROM clouds c, generate_series(0, :per - 1) k
 WHERE NOT EXISTS (SELECT 1 FROM clusters x WHERE x.cloud_id = c.id);
WITH k AS (SELECT id, name, row_number() OVER (ORDER BY name) AS n FROM clusters
            WHERE id NOT IN (SELECT cluster_id FROM capacity))
INSERT INTO capacity (cluster_id, pool, flavor, machine_type, spot, price_hour, accel_per_node,
                      nodes, max_nodes, free_accel, free_cpu_m, free_mem, topology)
SELECT k.id, 'gpu', f.flavor, f.machine, k.n % 7 = 0, f.price * (1 + (k.n % 5) / 10.0), 8, 16, 16,
       128, 16 * 200000, 16 * 2199023255552,
       (SELECT jsonb_build_object('nodes', jsonb_agg(jsonb_build_object('name', k.name || '-g' || i,
               'rack', 'r' || (i / 4), 'free_accel', 8, 'free_cpu_m', 200000,
               'free_mem', 2199023255552, 'ready', true)))
          FROM generate_series(0, 15) i)
  FROM k, LATERAL (SELECT (ARRAY['nvidia-h100-80gb', 'nvidia-a100-80gb', 'nvidia-l4'])[1 + k.n % 3] AS flavor,
                          (ARRAY['a3-highgpu-8g', 'a2-ultragpu-8g', 'g2-standard-96'])[1 + k.n % 3] AS machine,
                          (ARRAY[88.25, 40.22, 8.0])[1 + k.n % 3] AS price) f
UNION ALL
SELECT k.id, 'cpu', 'cpu', 'n2-standard-64', false, 3.1, 0, 8, 8, 0, 8 * 64000, 8 * 274877906944,
       (SELECT jsonb_build_object('nodes', jsonb_agg(jsonb_build_object('name', k.name || '-c' || i,
               'free_cpu_m', 64000, 'free_mem', 274877906944, 'ready', true)))
          FROM generate_series(0, 7) i)
  FROM k;
INSERT INTO queues (id, name, environment, cohort, weight, nominal_quota)
SELECT gen_random_uuid(), 'q-' || q, 'bench', 'cohort-' || (q / 6), 1 + q % 3,
       '{"nvidia-h100-80gb": 600, "nvidia-a100-80gb": 600, "nvidia-l4": 600}'
  FROM generate_series(0, 29) q
  ON CONFLICT DO NOTHING;
INSERT INTO priority_classes (id, name, value) VALUES (gen_random_uuid(), 'default', 0)
  ON CONFLICT DO NOTHING;
SQL
}

# bench_pg_statements_on: loads pg_stat_statements into the Postgres of bench_pg (a restart;
# before fleetd connects), so bench_pg_statements counts statements, not transactions.
bench_pg_statements_on() {
	"$pgbin/psql" -qAtX "$DATABASE_URL" -c "ALTER SYSTEM SET shared_preload_libraries = 'pg_stat_statements'" >/dev/null
	bash "$top/scripts/pg.sh" restart "$work/pg" >/dev/null
	"$pgbin/psql" -qAtX "$DATABASE_URL" -c "CREATE EXTENSION IF NOT EXISTS pg_stat_statements" >/dev/null
}

# bench_pg_statements: statements the server has run so far (pg_stat_statements calls when
# loaded, else the database's committed and rolled-back transactions: a lower bound).
bench_pg_statements() {
	"$pgbin/psql" -qAtX "$DATABASE_URL" -c "SELECT CASE WHEN EXISTS (SELECT 1 FROM pg_extension
		WHERE extname = 'pg_stat_statements') THEN (SELECT sum(calls)::bigint FROM
		pg_stat_statements) ELSE (SELECT xact_commit + xact_rollback FROM pg_stat_database
		WHERE datname = current_database()) END"
}

# bench_cpu_s PID...: CPU seconds (user + system) the processes have used so far.
bench_cpu_s() {
	python3 - "$@" <<'PY'
import os, sys
tck, total = os.sysconf("SC_CLK_TCK"), 0
for p in sys.argv[1:]:
    try:
        f = open("/proc/%s/stat" % p).read().rsplit(")", 1)[1].split()
        total += int(f[11]) + int(f[12])
    except OSError:
        pass
print("%.2f" % (total / tck))
PY
}

# bench_pg_cpu_s: CPU seconds of the whole Postgres server of bench_pg so far — the
# postmaster, every live child, and the children it has reaped (cutime, cstime).
bench_pg_cpu_s() {
	local aux
	aux=$("$pgbin/psql" -qAtX "$DATABASE_URL" -c "SELECT pid FROM pg_stat_activity WHERE backend_type = 'checkpointer'")
	python3 - "$aux" <<'PY'
import os, sys
def stat(p):
    return open("/proc/%s/stat" % p).read().rsplit(")", 1)[1].split()
tck = os.sysconf("SC_CLK_TCK")
pm = stat(sys.argv[1])[1]		# the checkpointer's parent: the postmaster
f = stat(pm)
total = int(f[11]) + int(f[12]) + int(f[13]) + int(f[14])
for p in os.listdir("/proc"):
    if p.isdigit() and p != pm:
        try:
            s = stat(p)
        except OSError:
            continue
        if s[1] == pm:
            total += int(s[11]) + int(s[12])
print("%.2f" % (total / tck))
PY
}

# bench_rss_mib PID: "VmRSS/VmHWM" of the process in MiB.
bench_rss_mib() {
	awk '/VmRSS/ {r = $2} /VmHWM/ {h = $2} END {printf "%.1f/%.1f\n", r / 1024, h / 1024}' "/proc/$1/status"
}
