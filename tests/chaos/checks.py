"""checks: the invariants every chaos suite asserts after its faults — acknowledged jobs
exist once, everything settles, one apply per attempt, no orphaned Ray object, reservations
and quota add up, every state change has its event, no secret in any answer, log line or
plain database column, no sanitizer report."""
import glob
import json
import os
import re
import subprocess
import time

from lib import BORROW, FINAL, QUOTA, TRANSITIONAL, events_text, wait_settled

PLURAL = {"RayJob": "rayjobs", "RayCluster": "rayclusters", "RayService": "rayservices",
          "RayCronJob": "raycronjobs"}


def acked_exist(sim, ck, loads):
    acked = {}
    for ld in loads:
        acked.update(ld.acked)
    rows = sim.sql("SELECT name, id, count(*) OVER (PARTITION BY name) FROM jobs")
    byname = {r[0]: (r[1], int(r[2])) for r in rows}
    missing = [n for n, jid in acked.items() if n not in byname or byname[n][0] != jid]
    dups = sorted({n for n, (_, c) in byname.items() if c > 1})
    ck.ok("every job whose POST got 201 exists (with the acknowledged id)", not missing,
          f"{len(missing)} of {len(acked)} missing, e.g. {missing[:5]}")
    ck.ok("no job created twice by a retried POST (Idempotency-Key)", not dups,
          f"{len(dups)} names twice, e.g. {dups[:5]}")
    unacked = [u for ld in loads for u in ld.unacked]
    ck.ok("every submission was eventually acknowledged (retries allowed)", not unacked,
          f"{len(unacked)} never got 201, e.g. {unacked[:3]}")
    cf = [c for ld in loads for c in ld.cancel_failed]
    ck.ok("every cancel was accepted (200/202)", not cf, f"{len(cf)} refused: {cf[:5]}")
    hangs = [h for ld in loads for h in ld.hangs]
    ck.ok("no POST /v1/jobs hung past the client timeout", not hangs,
          f"{len(hangs)} hung: {hangs[:5]}")
    return len(acked), len(missing)


def settled(sim, ck, bound, allow_pending=False):
    t, rows, stalled = wait_settled(sim, bound, allow_pending=allow_pending)
    detail = ""
    if rows:
        why = "no job event for 75 s (stuck)" if stalled else f"{bound}s"
        detail = f"{len(rows)} jobs not final/steady after {why}:\n" + "\n".join(
            f"  {r[1]} {r[2]} {r[3]} a{r[4]} {r[5]}\n{events_text(sim, r[0])}" for r in rows[:4])
    ck.ok(f"every job final or steady within {bound}s", not rows, detail)
    return t


def _name_suffix(job_id, attempt):
    """The suffix providers/kuberay.c gives an object name: 12 hex of the job id's FNV-1a
    hash and the attempt (kuberay_object_name)."""
    h = 1469598103934665603
    for b in job_id.encode():
        h = ((h ^ b) * 1099511628211) & 0xFFFFFFFFFFFFFFFF
    return f"-{h >> (64 - 48):012x}-a{attempt}"


# Events that record a deliberate re-apply of an attempt's object already on its cluster
# (an update, not a second dispatch): the status worker's checkpoint request and a RayJob's
# suspension after a preemption's grace, the mover's checkpoint and suspend at the source,
# and a spec update.  Each may add one apply to that attempt's count.
REAPPLY_SQL = ("SELECT job_id::text, attempt, count(*) FROM job_events WHERE"
               " type IN ('checkpoint_requested', 'spec_applied')"
               " OR (type = 'move' AND (message ILIKE '%checkpoint%' OR message ILIKE '%suspend%'))"
               " OR message LIKE 'preempted; suspended on the cluster%'"
               " GROUP BY 1, 2")


def applies(sim, ck):
    """One dispatch apply per object name (names carry the attempt), plus only the re-applies
    the job's own events account for; and exactly one dispatch apply for the current attempt
    of every job that got as far as its cluster."""
    st = sim.sim("GET", "/_sim/state", timeout=60)
    counts = st.get("applies", {})
    extra = {}
    for jid, att, n in sim.sql(REAPPLY_SQL):
        extra[_name_suffix(jid, int(att))] = int(n)

    def allowed(key):
        m = re.search(r"-[0-9a-f]{12}-a[0-9]+$", key)
        return 1 + (extra.get(m.group(0), 0) if m else 0)

    twice = {k: v for k, v in counts.items() if v > allowed(k)}
    ck.ok("no Ray object applied twice for the same attempt", not twice,
          f"{len(twice)} objects (applies, allowed): "
          f"{[(k, v, allowed(k)) for k, v in list(twice.items())[:5]]}")
    rows = sim.sql("SELECT j.name, k.name, j.manifest->'metadata'->>'namespace', j.kind,"
                   " j.object_name, j.state, j.attempt FROM jobs j JOIN clusters k ON k.id ="
                   " j.cluster_id WHERE j.manifest IS NOT NULL AND j.object_name IS NOT NULL AND"
                   " j.state IN ('running', 'succeeded', 'failed')")
    never = []
    for name, cl, ns, kind, obj, state, att in rows:
        key = f"{cl}/{ns}/{PLURAL.get(kind, kind.lower() + 's')}/{obj}"
        if not 1 <= counts.get(key, 0) <= allowed(key):
            never.append((name, state, att, key, counts.get(key, 0)))
    ck.ok("exactly one apply for the current attempt of every job that reached its cluster",
          not never, f"{len(never)} jobs, e.g. {never[:4]}")
    return len(twice), sum(counts.values())


def orphans(sim, ck, grace=20):
    """No Ray object left on a member cluster for a job that ended or for an attempt that is
    not the job's current one (leaked capacity)."""
    deadline = time.time() + grace
    bad = []
    while True:
        objs = sim.sim("GET", "/_sim/objects", timeout=60).get("objects", [])
        jobs = {r[0]: r[1:] for r in sim.sql("SELECT id, state, coalesce(object_name,''), name"
                                             " FROM jobs")}
        bad = []
        for o in objs:
            labels = ((o.get("object") or {}).get("metadata") or {}).get("labels") or {}
            jid = labels.get("fleet.io/job-id")
            if jid is None:
                continue
            j = jobs.get(jid)
            if j is None or j[0] in FINAL or j[1] != o["name"]:
                bad.append((o["cluster"], o["name"], j[0] if j else "no such job",
                            j[1] if j else ""))
        if not bad or time.time() > deadline:
            break
        time.sleep(1)
    ck.ok("no Ray object left for an ended job or an old attempt", not bad,
          f"{len(bad)} orphans: {bad[:5]}")


def consistency(sim, ck):
    n = sim.sql1("SELECT count(*) FROM jobs WHERE state IN ('admitted','dispatched','running')"
                 " AND (cluster_id IS NULL OR placement IS NULL)")
    ck.ok("no job admitted/dispatched/running without a placement", n == "0", f"{n} jobs")
    # per node and per pool: accelerators of every active job's worker allocations fit
    base = ("FROM jobs j JOIN clusters k ON k.id = j.cluster_id CROSS JOIN LATERAL"
            " jsonb_array_elements(j.placement->'allocs') a LEFT JOIN capacity c ON c.cluster_id ="
            " j.cluster_id AND c.pool = a->>'pool' WHERE j.state IN ('admitted','dispatched',"
            "'running') AND (a->>'group')::int > 0")
    used = ("sum((a->>'pods')::int * coalesce((j.spec->'worker_groups'->((a->>'group')::int - 1)"
            "->'accelerator'->>'count')::int, 0))")
    rows = sim.sql(f"SELECT k.name, a->>'node', {used}, max(c.accel_per_node), string_agg(j.name ||"
                   f" '/' || j.state, ',') {base} AND a->>'node' IS NOT NULL AND NOT"
                   " coalesce((a->>'grown')::boolean, false) GROUP BY 1, 2")
    over = [r for r in rows if r[3] not in ("", None) and int(r[2]) > int(r[3])]
    rows = sim.sql(f"SELECT k.name, a->>'pool', {used}, max(c.max_nodes * c.accel_per_node),"
                   f" string_agg(j.name || '/' || j.state, ',') {base} GROUP BY 1, 2")
    over += [r for r in rows if r[3] not in ("", None) and int(r[2]) > int(r[3])]
    ck.ok("no accelerator booked twice (per node, and per pool at its max size)", not over,
          "(cluster, node or pool, booked, has, jobs): " + f"{over[:5]}")
    # per queue and flavor: usage <= nominal + borrowing limit; per cohort: <= sum nominal
    rows = sim.sql("SELECT q.name, j.placement->>'flavor', sum((j.placement->>'accel')::int) FROM"
                   " jobs j JOIN queues q ON q.id = j.queue_id WHERE j.state IN"
                   " ('admitted','dispatched','running') GROUP BY 1, 2")
    bad, cohort = [], {}
    for q, flavor, used in rows:
        used = int(used)
        cohort[flavor] = cohort.get(flavor, 0) + used
        lim = QUOTA.get(q, {}).get(flavor, 0) + BORROW.get(flavor, 0)
        if used > lim:
            bad.append((q, flavor, used, lim))
    for flavor, used in cohort.items():
        lim = sum(QUOTA[q].get(flavor, 0) for q in QUOTA)
        if used > lim:
            bad.append(("cohort ml", flavor, used, lim))
    ck.ok("quota adds up (queue <= nominal + borrowing, cohort <= its nominal)", not bad,
          f"(queue, flavor, used, limit): {bad}")
    # every state change has its event, chained, and the last one is the job's state
    rows = sim.sql(
        "WITH e AS (SELECT job_id, id, from_state, to_state, lag(to_state) OVER (PARTITION BY"
        " job_id ORDER BY id) AS prev FROM job_events WHERE to_state IS NOT NULL)"
        " SELECT j.name, e.id, e.prev, e.from_state, e.to_state FROM e JOIN jobs j ON j.id ="
        " e.job_id WHERE (e.prev IS NULL AND e.from_state IS NOT NULL AND e.from_state <> '')"
        " OR (e.prev IS NOT NULL AND e.prev IS DISTINCT FROM e.from_state) LIMIT 10")
    ck.ok("job events chain (each from_state is the previous to_state)", not rows, f"{rows}")
    rows = sim.sql(
        "SELECT j.name, j.state, last.to_state FROM jobs j LEFT JOIN LATERAL (SELECT to_state"
        " FROM job_events WHERE job_id = j.id AND to_state IS NOT NULL ORDER BY id DESC LIMIT 1)"
        " last ON true WHERE last.to_state IS DISTINCT FROM j.state LIMIT 10")
    ck.ok("every job's state is its last event's to_state", not rows, f"{rows}")


def transitional(sim, ck, bound):
    """Longest stay in admitted/dispatched/preempted/moving, from the events."""
    states = ",".join(f"'{s}'" for s in TRANSITIONAL)
    rows = sim.sql(
        "WITH e AS (SELECT job_id, at, to_state, lead(at) OVER (PARTITION BY job_id ORDER BY id)"
        " AS until FROM job_events WHERE to_state IS NOT NULL)"
        f" SELECT j.name, e.to_state, extract(epoch from coalesce(e.until, now()) - e.at)::numeric(10,1)"
        f" AS s, j.id FROM e JOIN jobs j ON j.id = e.job_id WHERE e.to_state IN ({states})"
        " ORDER BY s DESC LIMIT 3")
    worst = float(rows[0][2]) if rows else 0.0
    detail = ""
    if worst > bound:
        detail = f"longest: {rows[0][0]} {rows[0][1]} for {worst}s\n{events_text(sim, rows[0][3])}"
    ck.ok(f"no job in a transitional state longer than {bound}s (longest {worst}s)",
          worst <= bound, detail)
    return worst


def _scan(path, secrets, hits):
    try:
        data = open(path, errors="replace").read()
    except OSError:
        return
    for what, s in secrets.items():
        if s and s in data:
            line = next(l for l in data.splitlines() if s in l)
            hits.append((what, os.path.basename(path), line[:200]))


def secrets(sim, ck):
    """Planted secrets must appear in no captured answer (body or header), no fleetd log line,
    and no plain database column (credentials are sealed, tokens hashed)."""
    sweep(sim)
    sim.capture.flush()
    probe = []
    _scan(os.path.join(sim.csdir, "clusters.json"), sim.secrets, probe)
    ck.ok("the secret scanner finds the planted cluster tokens where they belong (clusters.json)",
          sum(1 for p in probe if p[0].startswith("cluster token")) == len(sim.clusters),
          f"found {probe}")
    hits = []
    _scan(os.path.join(sim.dir, "responses.jsonl"), sim.secrets, hits)
    for f in glob.glob(os.path.join(sim.dir, "fleetd-*.log")):
        _scan(f, sim.secrets, hits)
    dump = os.path.join(sim.dir, "db.sql")
    pgdump = os.path.join(os.path.dirname(sim.psql_bin), "pg_dump")
    r = subprocess.run([pgdump, "-d", sim.pg_url, "-f", dump], capture_output=True, timeout=300)
    if r.returncode == 0:
        _scan(dump, {k: v for k, v in sim.secrets.items() if k != "admin api token"}, hits)
        os.unlink(dump)
    size = os.path.getsize(os.path.join(sim.dir, "responses.jsonl"))
    ck.ok(f"no planted secret ({len(sim.secrets)}) in any answer ({size} bytes captured),"
          " log line or database column", not hits, f"{hits[:5]}")


def sweep(sim):
    """GETs every read route once so its answer is captured for the secret scan."""
    for path in ("/v1/clouds", "/v1/clusters", "/v1/audit?limit=200", "/v1/tokens",
                 "/v1/capacity", "/v1/queues", "/v1/jobs?limit=50", "/metrics", "/readyz"):
        sim.http("GET", sim.any_replica().url + path, timeout=20)
    for cid in sim.cluster_ids.values():
        sim.http("GET", sim.any_replica().url + f"/v1/clusters/{cid}", timeout=20)
    for (jid,) in sim.sql("SELECT id FROM jobs ORDER BY random() LIMIT 20"):
        for sub in ("", "/events", "/manifest", "/placement"):
            sim.http("GET", sim.any_replica().url + f"/v1/jobs/{jid}{sub}", timeout=20)


def sanitizers(sim, ck):
    pat = re.compile(r"AddressSanitizer|LeakSanitizer|runtime error:|UndefinedBehaviorSanitizer")
    hits = []
    for f in glob.glob(os.path.join(sim.dir, "fleetd-*.log")):
        for line in open(f, errors="replace"):
            if pat.search(line):
                hits.append((os.path.basename(f), line.strip()[:200]))
    ck.ok("no sanitizer report in any fleetd log", not hits, f"{hits[:5]}")


def unexpected_exits(sim, ck):
    """A process the suite did not kill (killed ones are replaced on restart) must be alive."""
    dead = [(n, p.popen.returncode) for n, p in sim.procs.items() if not p.alive()]
    dead += sim.crashed
    ck.ok("no process exited on its own", not dead, f"{dead} (logs in {sim.dir})")


def common(sim, ck, loads, settle_bound, transitional_bound, allow_pending=False):
    """The checks every suite ends with; returns its figures."""
    fig = {}
    fig["acked"], fig["lost"] = acked_exist(sim, ck, loads)
    fig["settle_s"] = round(settled(sim, ck, settle_bound, allow_pending), 1)
    fig["double_applies"], fig["applies"] = applies(sim, ck)
    orphans(sim, ck)
    consistency(sim, ck)
    fig["longest_transitional_s"] = transitional(sim, ck, transitional_bound)
    secrets(sim, ck)
    sanitizers(sim, ck)
    fig["states"] = dict((r[0], int(r[1])) for r in sim.sql(
        "SELECT state, count(*) FROM jobs GROUP BY 1"))
    return fig


def write_result(sim, suite, ck, fig):
    out = {"suite": suite, "figures": fig, "failed": [(n, d[:2000]) for n, ok, d in ck.results
                                                      if not ok],
           "checks": len(ck.results), "registration": sim.registration}
    path = os.path.join(os.path.dirname(sim.dir), f"result-{suite}.json")
    json.dump(out, open(path, "w"), indent=1)
    return out
