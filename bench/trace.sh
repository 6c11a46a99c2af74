#!/usr/bin/env bash
# bench/trace.sh — issue 17: scheduling quality on a synthetic multi-team trace, in
# simulated time, through the real scheduler (sched_bench runs one scheduler_cycle per
# step).  5 teams (queues of one cohort, weights 1/1/2/2/3, nominal quotas as floors),
# bursty arrivals (each team has busy hours with 8x the quiet rate), gangs of 1-4 pods of
# 1-8 H100 each, priorities 0/10/20, BENCH_TRACE_JOBS jobs (default 10,000) with run
# times of 5-240 simulated minutes, on 32 clusters x 16 nodes x 8 H100 (4,096).
# Each step of BENCH_TRACE_STEP simulated seconds (default 120): jobs whose time is up
# succeed, new arrivals are inserted pending, one scheduler cycle runs, admitted jobs
# start their clock, preempted ones go back to pending.  Reports per team: mean deviation
# of its share from the weighted DRF ideal (water-filling over the teams with demand, in
# points of the fleet, over contended steps), time below its floor while a gang of it
# fitting under the floor waited (beyond one cycle), longest wait, preemptions and
# preempt-requeue cycles (a job preempted twice or more), and how often a pending job
# fit the free nodes of a cluster and its quota and still waited after the cycle.
# Postgres from scripts/pg.sh (durable).  Prints a result block; BENCH_RECORD=1 appends it
# to bench/RESULTS.md.  BENCH_BUILD names the build folder (default build/rel).
set -euo pipefail
unset PG_FSYNC	# scripts/pg.sh durable (fsync, full_page_writes, synchronous_commit on)
top=$(cd "$(dirname "$0")/.." && pwd)
build=${BENCH_BUILD:-$top/build/rel}
work=$(mktemp -d /tmp/fleetd-trace.XXXXXX)
cleanup() {
	bash "$top/scripts/pg.sh" stop "$work/pg" || true
	[ -n "${BENCH_KEEP:-}" ] || rm -rf "$work"
}
trap cleanup EXIT
cmake -S "$top" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$build" -j2 --target fleetd sched_bench >/dev/null
bash "$top/scripts/pg.sh" start "$work/pg" >/dev/null
export DATABASE_URL=$(bash "$top/scripts/pg.sh" url "$work/pg")
export FLEETD_LOG_LEVEL=warn FLEETD_SNAPSHOT_MAX_AGE=100000000
pgbin=$(bash "$top/scripts/pg.sh" bindir "$work/pg")
"$build/fleetd" migrate >/dev/null
started=$(date -u '+%Y-%m-%d %H:%M:%S UTC')
load0=$(cut -d' ' -f1-3 /proc/loadavg)

python3 - "$build/sched_bench" "$pgbin/psql" "$DATABASE_URL" "${BENCH_TRACE_JOBS:-10000}" \
	"${BENCH_TRACE_STEP:-120}" "${BENCH_TRACE_SEED:-17}" "$started" "$load0" \
	>"$work/result.md" <<'PY'
import json, random, subprocess, sys, time
bench, psql, db, njobs, step, seed, started, load0 = sys.argv[1:9]
njobs, step, seed = int(njobs), int(step), int(seed)
rng = random.Random(seed)

def sql(text):
    out = subprocess.run([psql, "-qAtX", "-v", "ON_ERROR_STOP=1", "-F", "\t", db],
                         input=text, capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit("psql: " + out.stderr)
    return [l.split("\t") for l in out.stdout.splitlines() if l]

TEAMS = [("team-a", 1), ("team-b", 1), ("team-c", 2), ("team-d", 2), ("team-e", 3)]
NCLUSTERS, NODES, PER = 32, 16, 8
CAP = NCLUSTERS * NODES * PER
wsum = sum(w for _, w in TEAMS)
FLOOR = {t: CAP * w // wsum * 8 // 10 for t, w in TEAMS}	# 80% of the weighted split
sql("""
INSERT INTO environments (id, name) VALUES (gen_random_uuid(), 'trace');
INSERT INTO clouds (id, name, environment, provider, region, account, external_id, state, required)
SELECT gen_random_uuid(), 'tc-' || r, 'trace', 'gke', 'region-' || r, '{}', 'ext', 'active', '{}'
  FROM generate_series(0, 7) r;
INSERT INTO clusters (id, cloud_id, name, api_server, ca_cert, credentials_sealed, provider_cluster_id)
SELECT gen_random_uuid(), c.id, c.name || '-k' || k, 'https://127.0.0.1:1', 'ca', 'sealed',
       'pc-' || gen_random_uuid() FROM clouds c, generate_series(0, %d) k;
UPDATE clusters SET state = 'ready';
INSERT INTO capacity (cluster_id, pool, flavor, machine_type, spot, price_hour, accel_per_node,
                      nodes, max_nodes, free_accel, free_cpu_m, free_mem, topology)
SELECT k.id, 'gpu', 'nvidia-h100-80gb', 'a3-highgpu-8g', false, 88.25, %d, %d, %d, %d, %d * 200000,
       %d * 2199023255552::bigint,
       (SELECT jsonb_build_object('nodes', jsonb_agg(jsonb_build_object('name', k.name || '-g' || i,
               'rack', 'r' || (i / 4), 'free_accel', %d, 'free_cpu_m', 200000,
               'free_mem', 2199023255552, 'ready', true))) FROM generate_series(0, %d) i)
  FROM clusters k
UNION ALL
SELECT k.id, 'cpu', 'cpu', 'n2-standard-64', false, 3.1, 0, 16, 16, 0, 16 * 64000,
       16 * 274877906944::bigint,
       (SELECT jsonb_build_object('nodes', jsonb_agg(jsonb_build_object('name', k.name || '-c' || i,
               'free_cpu_m', 64000, 'free_mem', 274877906944, 'ready', true)))
          FROM generate_series(0, 15) i)
  FROM clusters k;
INSERT INTO priority_classes (id, name, value) VALUES (gen_random_uuid(), 'default', 0)
  ON CONFLICT DO NOTHING;
CREATE TABLE trace_jobs (id uuid PRIMARY KEY, team text, arrive int, dur int, accel int,
                         pods int, per int, prio int, admitted int, started int,
                         waited int DEFAULT 0, preemptions int DEFAULT 0, spec jsonb);
""" % (NCLUSTERS // 8 - 1, PER, NODES, NODES, NODES * PER, NODES, NODES, PER, NODES - 1))
for t, w in TEAMS:
    sql("INSERT INTO queues (id, name, environment, cohort, weight, nominal_quota) VALUES "
        "(gen_random_uuid(), '%s', 'trace', 'all', %d, '{\"nvidia-h100-80gb\": %d}')"
        % (t, w, FLOOR[t]))

# The trace: each team's arrivals over 24 simulated hours, 8x denser in its busy hours.
HORIZON = 24 * 3600
rows = []
busy = {t: rng.sample(range(24), 6) for t, _ in TEAMS}
weights = {t: w for t, w in TEAMS}
for n in range(njobs):
    t = rng.choices([x for x, _ in TEAMS], weights=[w + 1 for _, w in TEAMS])[0]
    while True:
        at = rng.randrange(HORIZON)
        if (at // 3600) in busy[t] or rng.random() < 1 / 8:
            break
    pods = rng.choice([1, 1, 1, 2, 2, 4])
    per = rng.choice([1, 2, 4, 8, 8])
    dur = int(rng.choice([5, 10, 20, 30, 60, 120, 240]) * 60 * rng.uniform(0.7, 1.3))
    prio = rng.choice([0, 0, 0, 10, 20])
    rows.append((n, t, at, dur, pods, per, prio))
chunks = [rows[i:i + 2000] for i in range(0, len(rows), 2000)]
for ch in chunks:
    v = ",".join("(gen_random_uuid(), '%s', %d, %d, %d, %d, %d, %d, jsonb_build_object("
        "'kind', 'RayJob', 'queue', '%s', 'name', 'tr-%d', 'ray_version', '2.52.0', "
        "'entrypoint', 'python t.py', 'head', jsonb_build_object('cpu', '1', 'memory', '2Gi'), "
        "'worker_groups', jsonb_build_array(jsonb_build_object('name', 'w', 'replicas', %d, "
        "'cpu', '8', 'memory', '64Gi', 'accelerator', jsonb_build_object('flavor', "
        "'nvidia-h100-80gb', 'count', %d)))))" % (t, at, dur, pods * per, pods, per, prio, t,
        n, pods, per) for n, t, at, dur, pods, per, prio in ch)
    sql("INSERT INTO trace_jobs (id, team, arrive, dur, accel, pods, per, prio, spec) VALUES " + v)

# One step: finish, arrive, cycle, record; returns the state the metrics need.
STEP_SQL = """
UPDATE jobs j SET state = 'succeeded', finished_at = now() FROM trace_jobs t
 WHERE t.id = j.id AND j.state = 'admitted' AND t.started + t.dur <= {now};
INSERT INTO jobs (id, name, environment, queue_id, kind, priority_class, priority, spec, enqueued_at)
SELECT t.id, 'tr', 'trace', q.id, 'RayJob', 'default', t.prio, t.spec,
       timestamptz '2026-01-01' + make_interval(secs => t.arrive)
  FROM trace_jobs t JOIN queues q ON q.name = t.team
 WHERE t.arrive > {prev} AND t.arrive <= {now};
"""
AFTER_SQL = """
UPDATE trace_jobs t SET started = {now}, admitted = coalesce(t.admitted, {now}),
       waited = greatest(t.waited, {now} - t.arrive)
  FROM jobs j WHERE j.id = t.id AND j.state = 'admitted' AND t.started IS NULL;
UPDATE trace_jobs t SET preemptions = t.preemptions + 1, started = NULL
  FROM jobs j WHERE j.id = t.id AND j.state = 'preempted';
UPDATE jobs SET state = 'pending', attempt = attempt WHERE state = 'preempted';
SELECT 'use', t.team, coalesce(sum(t.accel) FILTER (WHERE j.state = 'admitted'), 0),
       coalesce(sum(t.accel) FILTER (WHERE j.state = 'pending'), 0),
       coalesce(min(t.accel) FILTER (WHERE j.state = 'pending'), 0),
       coalesce(max({now} - t.arrive) FILTER (WHERE j.state = 'pending'), 0)
  FROM trace_jobs t JOIN jobs j ON j.id = t.id GROUP BY t.team;
SELECT 'node', k.name, n->>'name', {per} - coalesce((SELECT sum((a->>'pods')::int *
       (j.spec->'worker_groups'->((a->>'group')::int - 1)->'accelerator'->>'count')::int)
       FROM jobs j, jsonb_array_elements(j.placement->'allocs') a
       WHERE j.state = 'admitted' AND j.cluster_id = k.id AND a->>'node' = n->>'name'
         AND (a->>'group')::int > 0), 0)
  FROM clusters k JOIN capacity c ON c.cluster_id = k.id AND c.pool = 'gpu',
       jsonb_array_elements(c.topology->'nodes') n;
SELECT 'pend', t.team, t.pods, t.per, t.accel FROM trace_jobs t JOIN jobs j ON j.id = t.id
 WHERE j.state = 'pending' ORDER BY t.accel LIMIT 400;
"""

def water_fill(demand):
    """Weighted max-min shares of CAP over teams with demand."""
    alloc = {t: 0.0 for t in demand}
    active = {t for t in demand if demand[t] > 0}
    left = float(min(CAP, sum(demand.values())))
    while active and left > 1e-9:
        ws = sum(weights[t] for t in active)
        give = {t: left * weights[t] / ws for t in active}
        done = {t for t in active if alloc[t] + give[t] >= demand[t]}
        if not done:
            for t in active:
                alloc[t] += give[t]
            break
        for t in done:
            left -= demand[t] - alloc[t]
            alloc[t] = demand[t]
        active -= done
    return alloc

dev_sum = {t: 0.0 for t, _ in TEAMS}
dev_max = {t: 0.0 for t, _ in TEAMS}
contended = 0
below = {t: 0 for t, _ in TEAMS}	# consecutive steps below floor with a fitting gang
below_worst = {t: 0 for t, _ in TEAMS}
idle_fit = 0
idle_fit_steps = 0
cycles = preempted = 0
now, prev = 0, -1
t0 = time.time()
last_arrival = max(r[2] for r in rows)
while True:
    sql(STEP_SQL.format(now=now, prev=prev))
    out = subprocess.run([bench, "trace", "1"], capture_output=True, text=True)
    if out.returncode not in (0, 1) or not out.stdout.strip():
        sys.exit("sched_bench: " + out.stderr[-2000:])
    st = json.loads(out.stdout.strip().splitlines()[-1])
    cycles += 1
    res = sql(AFTER_SQL.format(now=now, per=PER))
    use = {t: 0 for t, _ in TEAMS}
    pend = {t: 0 for t, _ in TEAMS}
    gmin = {t: 0 for t, _ in TEAMS}
    free_nodes = {}
    pending_jobs = []
    for r in res:
        if r[0] == "use":
            use[r[1]], pend[r[1]], gmin[r[1]] = int(r[2]), int(r[3]), int(r[4])
        elif r[0] == "node":
            free_nodes.setdefault(r[1], []).append(int(r[3]))
        elif r[0] == "pend":
            pending_jobs.append((r[1], int(r[2]), int(r[3]), int(r[4])))
    demand = {t: use[t] + pend[t] for t in use}
    if sum(demand.values()) >= CAP * 0.9:	# contended: shares matter
        contended += 1
        ideal = water_fill(demand)
        for t in use:
            d = abs(use[t] - ideal[t]) / CAP * 100
            dev_sum[t] += d
            dev_max[t] = max(dev_max[t], d)
    for t in use:
        if pend[t] > 0 and gmin[t] > 0 and use[t] + gmin[t] <= FLOOR[t]:
            below[t] += 1
            below_worst[t] = max(below_worst[t], below[t])
        else:
            below[t] = 0
    # a pending gang that fits the free nodes of one cluster and its quota (floor, or
    # what the cohort leaves unused) and still waits after the cycle
    cohort_free = sum(FLOOR.values()) - sum(use.values())
    fit_now = 0
    for team, pods, per, accel in pending_jobs:
        if use[team] + accel > FLOOR[team] and accel > cohort_free:
            continue
        if any(sum(1 for f in nodes if f >= per) >= pods for nodes in free_nodes.values()):
            fit_now += 1
    idle_fit += fit_now
    idle_fit_steps += fit_now > 0
    still = sum(pend.values())
    if now > last_arrival and still == 0 and sum(use.values()) == 0:
        break
    if now > last_arrival + 7 * 24 * 3600:
        break
    prev, now = now, now + step
wall = time.time() - t0
fin = sql("SELECT team, max(waited), sum(preemptions), count(*) FILTER (WHERE preemptions >= 2),"
          " count(*) FILTER (WHERE admitted IS NULL) FROM trace_jobs GROUP BY team ORDER BY team")
print("### Scheduling trace (%s, `bash bench/trace.sh`)" % started)
print()
print("%d jobs of 5 teams (weights %s; floors = nominal quotas %s of %d H100), 24 simulated "
      "hours of bursty arrivals, steps of %d s (one scheduler cycle each), %d cycles in "
      "%.0f s wall; contended steps (demand ≥ 90%% of the fleet): %d. Load average at the "
      "start %s." % (njobs, "/".join(str(w) for _, w in TEAMS),
      "/".join(str(FLOOR[t]) for t, _ in TEAMS), CAP, step, cycles, wall, contended, load0))
print()
print("| team | weight | share deviation from weighted DRF, mean / max (points) | "
      "longest below floor with a fitting gang waiting (cycles) | longest wait (sim s) | "
      "preemptions | preempt-requeue cycles | never admitted |")
print("|---|---|---|---|---|---|---|---|")
ok_dev = ok_floor = ok_cycles = True
for team, waited, pre, cyc, never in fin:
    mean = dev_sum[team] / contended if contended else 0.0
    ok_dev &= mean <= 5
    ok_floor &= below_worst[team] <= 1
    ok_cycles &= int(cyc) == 0
    print("| %s | %d | %.1f / %.1f | %d | %s | %s | %s | %s |" % (team, weights[team], mean,
          dev_max[team], below_worst[team], waited, pre, cyc, never))
print()
met = lambda b: "met" if b else "**missed**"
print("- mean share deviation ≤ 5 points for every team: %s" % met(ok_dev))
print("- no floor violation beyond one cycle: %s" % met(ok_floor))
print("- zero preempt-requeue cycles: %s" % met(ok_cycles))
print("- pending gangs that fit free nodes and quota but waited after a cycle: %d "
      "(in %d of %d cycles; target 0): %s" % (idle_fit, idle_fit_steps, cycles,
      met(idle_fit == 0)))
PY
cat "$work/result.md"
if [ "${BENCH_RECORD:-0}" = 1 ]; then
	{ echo; cat "$work/result.md"; } >>"$top/bench/RESULTS.md"
fi
