"""regionloss: the region-loss drill (issue 18).  Three regions (GKE us-central1, AKS eastus,
HyperPod us-west-2) with room for every job in any two of them; RayJobs, RayClusters and
RayServices of three priorities run; the region holding the most jobs is partitioned by a
cloudsim fault.  On-call first drains it as usual (the answer says the source is unreachable
and since when), then with "source": "unreachable".  Figures: time until every movable job
runs elsewhere (simulated time = wall time x cloudsim's time scale; target <= 5 min), jobs
lost (0), jobs running twice once the region heals (before and after the orphan sweep: 0
after), orphans left (0), and the sweep's deletions (audit rows, metric)."""
import json
import math
import os
import random
import subprocess
import time

import checks
import register
from lib import ENV, FINAL, H100, CheckFailed, log

DRILL_CLUSTERS = ("test-gke-usc1", "test-aks-eus", "test-hp-usw2")
GPU_POOL = {"test-gke-usc1": "h100", "test-aks-eus": "h100", "test-hp-usw2": "p5"}
HEAD_POOL = {"test-gke-usc1": "system", "test-aks-eus": "system", "test-hp-usw2": "controller"}
REGIONS = ["us-central1", "eastus", "us-west-2"]
EVACUATE_AFTER_S = 4
PRIORITIES = (("low", 10), ("normal", 100), ("high", 1000))
TARGET_SIM_S = 300


def edit_fleet(fleet, a):
    """Three regions, each able to hold about 60 % of the load's GPUs and heads; jobs run
    for a long (simulated) time, so that everything still runs when the region falls."""
    fleet["clusters"] = [c for c in fleet["clusters"] if c["name"] in DRILL_CLUSTERS]
    gpus = a.jobs * 1.5
    share = float(os.environ.get("DRILL_REGION_SHARE", "0.6"))   # of the load's GPUs per region
    nodes = max(2, math.ceil(gpus * share / 8) + 1)
    heads = max(2, math.ceil(a.jobs * 0.6 / 12) + 1)
    for c in fleet["clusters"]:
        pools = []
        for p in c["pools"]:
            if p["name"] == GPU_POOL[c["name"]]:
                p.update({"nodes": nodes, "max": nodes, "min": 0})
                p.pop("busy", None)
            elif p["name"] == HEAD_POOL[c["name"]]:
                p.update({"nodes": heads, "max": heads})
            else:
                continue    # spot, L4 and TPU pools play no part
            pools.append(p)
        c["pools"] = pools
    # lists in pages of 500 (the test fleet's 2 makes every list of 200 jobs 100 calls)
    fleet.setdefault("sim", {}).update({"job_run_s": 10_000_000, "pod_start_s": 2,
                                        "page_size": 500})


def job_body(i, rng):
    """Each job may run in two of the three regions (chosen at random): the load spreads
    over all three, and every job has somewhere to go when one region falls."""
    r = rng.random()
    kind = "RayJob" if r < 0.7 else "RayCluster" if r < 0.9 else "RayService"
    pclass = rng.choice(PRIORITIES)[0]
    b = {"environment": ENV, "kind": kind, "queue": rng.choice(["qa", "qb"]),
         "name": f"drill{i}", "ray_version": "2.52.0", "priority_class": pclass,
         "constraints": {"regions": rng.sample(REGIONS, 2)},
         "head": {"cpu": "500m", "memory": "1Gi"},
         "worker_groups": [{"name": "gpu", "replicas": 1, "cpu": "2", "memory": "8Gi",
                            "accelerator": {"flavor": H100, "count": rng.choice([1, 2])}}]}
    if kind == "RayJob":
        b["entrypoint"] = "python train.py"
        b["checkpoint"] = {"uri": f"s3://drill/ckpt/{i}", "grace_seconds": 30}
    elif kind == "RayService":
        b["serve_config"] = {"applications": [{"name": "app", "import_path": "serve:app"}]}
    return b


def setup(sim, a):
    sim.fleetd_env.update({"FLEETD_EVACUATE_AFTER": str(EVACUATE_AFTER_S),
                           "FLEETD_ORPHAN_MIN_AGE": "1", "FLEETD_SWEEP_INTERVAL_MS": "1000"})
    sim.start_fleetd("r0", "scheduler,dispatch,status,poller,mover,sweep")
    register.register(sim)
    register.wait_capacity(sim)
    for name, value in PRIORITIES:
        sim.api("POST", "/v1/priority-classes", {"name": name, "value": value}, ok=(201, 409))
    for q in ("qa", "qb"):
        sim.sql(f"UPDATE queues SET nominal_quota = '{{\"{H100}\": 100000}}' WHERE name = '{q}'")


def running_by_cluster(sim):
    return dict((r[0], int(r[1])) for r in sim.sql(
        "SELECT k.name, count(*) FROM jobs j JOIN clusters k ON k.id = j.cluster_id"
        " WHERE j.state = 'running' GROUP BY 1"))


def wait_all_running(sim, n, bound):
    t0 = time.time()
    while time.time() - t0 < bound:
        st = dict((r[0], int(r[1])) for r in sim.sql("SELECT state, count(*) FROM jobs GROUP BY 1"))
        if st.get("running", 0) >= n:
            return time.time() - t0, st
        time.sleep(0.5)
    return None, st


def live_copies(sim):
    """Per job: the clusters where cloudsim runs an object of it (any attempt)."""
    objs = sim.sim("GET", "/_sim/objects", timeout=60).get("objects", [])
    where = {}
    for o in objs:
        labels = ((o.get("object") or {}).get("metadata") or {}).get("labels") or {}
        jid = labels.get("fleet.io/job-id")
        if jid:
            where.setdefault(jid, set()).add(o["cluster"])
    return where


def fleetctl(sim, *args):
    """Runs the build's fleetctl against replica r0 as the admin; (rc, stdout, stderr)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("FLEET")}
    env.update({"FLEET_URL": sim.procs["r0"].url, "FLEET_TOKEN": sim.admin, "HOME": sim.dir,
                "NO_COLOR": "1", "COLUMNS": "200"})
    r = subprocess.run([os.path.join(sim.build, "fleetctl"), *args], env=env,
                       capture_output=True, text=True, timeout=60)
    return r.returncode, r.stdout, r.stderr


def refusals(sim, ck, region, victim):
    """Before evacuation is allowed: a plain move and a plain drain explain themselves."""
    st, _, text = sim.http("POST", sim.any_replica().url + f"/v1/jobs/{victim}/move",
                           {"target": {"region": "eastus"}, "reason": "drill"})
    ck.ok("a plain move from the unreachable region answers 409 move.source_unreachable,"
          " saying since when and offering the flag",
          st == 409 and "move.source_unreachable" in text and "since" in text
          and "source" in text, f"{st} {text[:400]}")
    st, _, text = sim.http("POST", sim.any_replica().url + f"/v1/jobs/{victim}/move",
                           {"target": {"region": "bogus-1"}, "source": "sideways"})
    ck.ok("an unknown source value is a 400 naming /source", st == 400 and "/source" in text,
          f"{st} {text[:300]}")
    op = sim.api("POST", f"/v1/regions/{ENV}/{region}/drain", {}, ok=(200, 202))
    waits = [j for j in op.get("jobs", []) if j["state"] == "waiting"]
    rc, out, err = fleetctl(sim, "operations", "get", op["id"])
    ck.ok("fleetctl operations get shows each waiting job with what it waits for",
          rc == 0 and "WAITING FOR" in out and "source_unreachable" in out,
          f"rc {rc}\n{out[-800:]}\n{err[-300:]}")
    ck.ok("a plain drain of the region leaves its jobs waiting for source_unreachable, with"
          " the reason", waits and all(j["waiting_for"] == "source_unreachable" and
                                      "since" in (j["reason"] or "") for j in waits),
          f"{[(j['state'], j['waiting_for'], j['reason']) for j in op.get('jobs', [])][:4]}")
    sim.api("POST", f"/v1/operations/{op['id']}/cancel", {}, ok=(200,))


def run(sim, a, ck, fig):
    rng = random.Random(a.seed)
    scale = a.time_scale
    setup(sim, a)
    ids = {}
    for i in range(a.jobs):
        j = sim.api("POST", "/v1/jobs", job_body(i, rng), ok=(201,))
        ids[j["id"]] = j["kind"]
    # a deadline, not a figure (returns once they run; the evacuation below is the figure)
    took, st = wait_all_running(sim, a.jobs, max(a.settle, 120))
    ck.ok(f"all {a.jobs} jobs run before the region falls", took is not None, f"states {st}")
    if took is None:
        raise CheckFailed("the load never ran")
    by = running_by_cluster(sim)
    lost_cluster = max(by, key=by.get)
    region = sim.sql1(f"SELECT c.region FROM clusters k JOIN clouds c ON c.id = k.cloud_id"
                      f" WHERE k.name = '{lost_cluster}'")
    on_lost = [r[0] for r in sim.sql(
        f"SELECT j.id FROM jobs j JOIN clusters k ON k.id = j.cluster_id WHERE k.name ="
        f" '{lost_cluster}' AND j.state = 'running'")]
    fig.update({"running_per_cluster": by, "lost_region": region, "jobs_in_lost_region":
                len(on_lost), "time_scale": scale})
    log(f"partitioning {region} ({lost_cluster}, {len(on_lost)} jobs)")

    fid = sim.sim("POST", "/_sim/faults", {"region": region, "unreachable": True})["id"]
    t_fault = time.time()
    while sim.sql1(f"SELECT state FROM clusters WHERE name = '{lost_cluster}'") != "unreachable":
        if time.time() - t_fault > 30:
            raise CheckFailed(f"{lost_cluster} never marked unreachable")
        time.sleep(0.2)
    refusals(sim, ck, region, on_lost[0])
    while time.time() - t_fault < EVACUATE_AFTER_S + 1.5:
        time.sleep(0.2)

    t0 = time.time()
    rc, out, err = fleetctl(sim, "regions", "drain", ENV, region, "--source-unreachable",
                            "-o", "json")
    op = json.loads(out) if rc == 0 and out.strip() else {}
    ck.ok("fleetctl regions drain --source-unreachable starts the evacuation",
          rc == 0 and op.get("target", {}).get("source") == "unreachable",
          f"rc {rc}\n{out[-500:]}\n{err[-500:]}")
    if not op:
        raise CheckFailed("the evacuating drain did not start")
    ck.ok("the evacuating drain covers every job of the region", op["total"] >= len(on_lost),
          f"total {op['total']}, jobs there {len(on_lost)}")
    movable_s, waiting = None, []
    while time.time() - t0 < a.settle:
        op = sim.api("GET", f"/v1/operations/{op['id']}")
        rows = sim.sql("SELECT j.id, j.state, coalesce(k.name, '') FROM jobs j LEFT JOIN clusters k"
                       " ON k.id = j.cluster_id WHERE j.id IN (" +
                       ",".join(f"'{x}'" for x in on_lost) + ")")
        elsewhere = [r for r in rows if r[1] == "running" and r[2] != lost_cluster]
        waiting = [j for j in op["jobs"] if j["state"] == "waiting"]
        stuck = [j for j in waiting if j["waiting_for"] not in ("no_capacity", "quota")]
        if len(elsewhere) + len(waiting) == len(on_lost) and not stuck:
            movable_s = time.time() - t0
            break
        time.sleep(0.25)
    fig["evacuated"] = len(on_lost) - len(waiting)
    fig["waiting_without_room"] = len(waiting)
    fig["evacuation_wall_s"] = movable_s and round(movable_s, 2)
    fig["evacuation_sim_s"] = movable_s and round(movable_s * scale, 1)
    ck.ok(f"every movable job runs elsewhere within {TARGET_SIM_S} s of simulated time",
          movable_s is not None and movable_s * scale <= TARGET_SIM_S,
          f"{movable_s} s wall x {scale}; operation {op['moved']}/{op['total']},"
          f" waiting {[(j['name'], j['waiting_for'], j['reason']) for j in waiting][:5]}")
    ids_sql = ",".join(f"'{x}'" for x in on_lost)
    no_resume = sim.sql(f"SELECT name FROM jobs WHERE id IN ({ids_sql}) AND kind = 'RayJob' AND"
                        " state IN ('dispatched', 'running') AND manifest->'metadata'->'annotations'"
                        "->>'fleet.io/resume-from' IS NULL")
    ck.ok("each evacuated RayJob restarts from its checkpoint (fleet.io/resume-from)",
          not no_resume, f"{no_resume[:5]}")
    fenced = int(sim.sql1("SELECT count(*) FROM job_events WHERE type = 'fenced'"))
    ck.ok("each evacuated attempt is recorded as fenced", fenced >= fig["evacuated"],
          f"{fenced} fenced events for {fig['evacuated']} evacuated")

    bad_victims = sim.sql(
        "SELECT v.name, v.priority, m.name, m.priority FROM job_events e JOIN jobs v ON v.id ="
        " e.job_id JOIN jobs m ON m.id::text = e.data->>'by' WHERE e.to_state = 'preempted'"
        " AND e.message LIKE 'preempted to make room for a moved job%' AND v.priority >="
        " m.priority")
    fig["preempted_by_moves"] = int(sim.sql1(
        "SELECT count(*) FROM job_events WHERE to_state = 'preempted' AND message LIKE"
        " 'preempted to make room for a moved job%'"))
    ck.ok("no move preempted a job of equal or higher priority", not bad_victims,
          f"{bad_victims[:5]}")
    states = dict(sim.sql("SELECT id, state FROM jobs"))
    lost = [x for x in ids if states.get(x) is None or states[x] in FINAL]
    fig["jobs_lost"] = len(lost)
    ck.ok("no job lost (every job still exists and none ended)", not lost, f"{lost[:5]}")

    # the region heals: the source objects are still there, running, until the sweep
    sim.sim("DELETE", f"/_sim/faults/{fid}")
    t_heal = time.time()
    copies = live_copies(sim)
    fig["running_twice_at_heal"] = sum(1 for x in on_lost if len(copies.get(x, ())) > 1)
    twice, left = None, None
    while time.time() - t_heal < 60:
        copies = live_copies(sim)
        twice = [x for x in ids if len(copies.get(x, ())) > 1]
        left = int(sim.sql1("SELECT count(*) FROM orphans WHERE state IN ('pending', 'reported')"))
        if not twice and left == 0:
            break
        time.sleep(0.5)
    fig["running_twice_after_sweep"] = len(twice)
    fig["sweep_wall_s"] = round(time.time() - t_heal, 2)
    ck.ok("no job runs twice once the region healed and the sweep ran", not twice,
          f"{len(twice)}: {twice[:5]}")
    fig["orphans_left"] = left
    ck.ok("no recorded orphan left", left == 0, f"{left} open orphans")
    deleted = int(sim.sql1("SELECT count(*) FROM orphans WHERE state = 'deleted'"))
    audited = int(sim.sql1("SELECT count(*) FROM audit_log WHERE action = 'orphan.delete'"))
    fig["orphans_deleted"] = deleted
    ck.ok("every deletion has its audit row", deleted == audited and deleted >= fig["evacuated"]
          - fig["waiting_without_room"], f"deleted {deleted}, audited {audited}")
    metric = sim.metric(sim.procs["r0"], "fleetd_orphans_deleted_total")
    ck.ok("fleetd_orphans_deleted_total counts them", metric == deleted, f"{metric} vs {deleted}")
    checks.orphans(sim, ck)
    checks.secrets(sim, ck)
    checks.sanitizers(sim, ck)
    checks.unexpected_exits(sim, ck)
    log("figures", fig)
