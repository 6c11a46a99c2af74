"""failuredrill: the failure drill (issue 24).  A demo-shaped fleet (GKE, AKS and HyperPod H100
pools in racks of nodes, GKE and AKS spot pools, CPU pools for the heads) runs N RayJobs; then,
all at once: 5 % of the GPU nodes running jobs are deleted (`kubectl delete node`), one whole
rack is deleted, spot nodes running jobs are reclaimed with each provider's own signals (as
cloudsim models them: POST /_sim/spot-reclaim — GKE's termination taint, AWS NTH's taint,
cordon and events, Azure's scheduled-event condition), workers are OOM-killed and jobs get a
bad image (`kubectl patch pod --subresource=status` with the kubelet's reasons).  Figures:
running jobs recovered where a spare existed, node loss -> replacement pod Running p50/p99
(simulated seconds, from the pods' startTime on cloudsim's clock), jobs with a classified
reason among those that failed, jobs stalled without a reason, retries placed on a failed
node or rack, post-mortems retrievable after teardown (every job cancelled, every object
gone).  Rack-topology jobs on the lost rack are counted apart (figures
rack_topology_jobs_on_lost_rack / _recovered): the rack repair moves them, to a spare rack of
their cluster first, through the move machinery; not asserted here as a target."""
import json
import math
import os
import random
import ssl
import subprocess
import time
import urllib.request

import checks
import register
from lib import ENV, FINAL, H100, CheckFailed, log

CLASSES = ("infrastructure", "capacity", "preemption", "configuration", "user_code")
GPU_POOLS = {"test-gke-usc1": ("h100", "h100-spot"), "test-aks-eus": ("h100", "h100spot"),
             "test-hp-usw2": ("p5",)}
SPOT_POOLS = {("test-gke-usc1", "h100-spot"), ("test-aks-eus", "h100spot")}
TARGET_P99_S = 60


def shape(a):
    """How many jobs of each sort, and the pools' sizes, for a.jobs jobs: on-demand jobs with
    one 2-GPU worker (4 to a node), spot jobs with one 8-GPU worker (a node each), rack jobs
    (2 workers of 4 GPUs in one rack); every pool about 40 % larger than its share."""
    spot = max(2, round(a.jobs * 0.12))
    rack = round(a.jobs * 0.04)
    ondemand = a.jobs - spot - rack
    nodes_needed = math.ceil(ondemand / 4) + rack
    return {"spot": spot, "rack": rack, "ondemand": ondemand,
            "gke": max(8, 4 * math.ceil(nodes_needed * 0.7 / 4)),
            "aks": max(8, 4 * math.ceil(nodes_needed * 0.35 / 4)),
            "hp": max(8, 4 * math.ceil(nodes_needed * 0.35 / 4)),
            "gke_spot": max(2, math.ceil(spot * 0.6) + 2),
            "aks_spot": max(2, math.ceil(spot * 0.4) + 2),
            "heads": max(2, math.ceil(a.jobs / 40) + 1)}


def edit_fleet(fleet, a):
    """The demo's shape (cloudsim/fleets/demo.json: H100 pools in racks of 4, spot pools
    beside them, CPU pools for heads) on the test fleet's three first clusters, sized for
    the load.  Jobs run for ever (simulated): only the faults end them."""
    s = shape(a)
    keep = {"test-gke-usc1", "test-aks-eus", "test-hp-usw2"}
    fleet["clusters"] = [c for c in fleet["clusters"] if c["name"] in keep]
    for c in fleet["clusters"]:
        head = c["pools"][0]
        head.update({"nodes": s["heads"], "max": s["heads"]})
        if c["provider"] == "gke":
            gpu = [{"name": "h100", "machine_type": "a3-highgpu-8g", "nodes": s["gke"],
                    "max": s["gke"], "nodes_per_rack": 4, "price_per_hour": 88.49},
                   {"name": "h100-spot", "machine_type": "a3-highgpu-8g", "nodes": s["gke_spot"],
                    "max": s["gke_spot"], "nodes_per_rack": 4, "spot": True,
                    "price_per_hour": 26.55}]
        elif c["provider"] == "aks":
            gpu = [{"name": "h100", "machine_type": "Standard_ND96isr_H100_v5", "nodes": s["aks"],
                    "max": s["aks"], "nodes_per_rack": 4, "price_per_hour": 98.32},
                   {"name": "h100spot", "machine_type": "Standard_ND96isr_H100_v5",
                    "nodes": s["aks_spot"], "max": s["aks_spot"], "nodes_per_rack": 4,
                    "spot": True, "price_per_hour": 39.3}]
        else:
            gpu = [{"name": "p5", "machine_type": "ml.p5.48xlarge", "nodes": s["hp"],
                    "max": s["hp"], "nodes_per_rack": 4, "price_per_hour": 98.32}]
        c["pools"] = [head] + gpu
    fleet.setdefault("sim", {}).update({"job_run_s": 10_000_000, "pod_start_s": 2,
                                        "page_size": 500, "autoscale_delay_s": 20,
                                        "preempt_notice_s": 30})


def job_body(i, sort):
    b = {"environment": ENV, "kind": "RayJob", "queue": "qa" if i % 2 else "qb",
         "name": f"fd{i}", "ray_version": "2.52.0", "entrypoint": "python train.py",
         "checkpoint": {"uri": f"s3://drill/ckpt/{i}", "grace_seconds": 10},
         "head": {"cpu": "250m", "memory": "512Mi"},
         "worker_groups": [{"name": "gpu", "replicas": 1, "cpu": "2", "memory": "8Gi",
                            "accelerator": {"flavor": H100, "count": 2}}]}
    if sort == "spot":
        b["constraints"] = {"spot": True}
        b["worker_groups"][0]["accelerator"]["count"] = 8
    elif sort == "rack":
        b["topology"] = "rack"
        b["worker_groups"][0].update({"replicas": 2, "accelerator": {"flavor": H100, "count": 4}})
    if sort != "spot":
        b["constraints"] = {"spot": False}
    return b


class Members:
    """The member clusters as an outside client sees them: their API (urllib, the cluster's
    token and cloudsim's CA) and kubectl with a kubeconfig of one context per cluster."""

    def __init__(self, sim):
        self.sim = sim
        self.by = {c["name"]: c for c in sim.clusters}
        self.ca = os.path.join(sim.csdir, "ca.pem")
        self.ctx = ssl.create_default_context(cafile=self.ca)
        self.kubeconfig = os.path.join(sim.dir, "kubeconfig")
        cfg = {"apiVersion": "v1", "kind": "Config", "clusters": [], "users": [], "contexts": []}
        for c in sim.clusters:
            cfg["clusters"].append({"name": c["name"], "cluster": {
                "server": c["api_server"], "certificate-authority": self.ca}})
            cfg["users"].append({"name": c["name"], "user": {"token": c["token"]}})
            cfg["contexts"].append({"name": c["name"], "context": {"cluster": c["name"],
                                                                   "user": c["name"]}})
        cfg["current-context"] = sim.clusters[0]["name"]
        with open(self.kubeconfig, "w") as f:
            json.dump(cfg, f)
        os.chmod(self.kubeconfig, 0o600)
        self.kubectl_calls = 0

    def get(self, cluster, path):
        c = self.by[cluster]
        req = urllib.request.Request(c["api_server"] + path,
                                     headers={"Authorization": "Bearer " + c["token"]})
        with urllib.request.urlopen(req, context=self.ctx, timeout=60) as r:
            return json.loads(r.read())

    def pods(self, cluster):
        return self.get(cluster, "/api/v1/pods?labelSelector=fleet.io%2Fjob-id")["items"]

    def nodes(self, cluster):
        return self.get(cluster, "/api/v1/nodes")["items"]

    def kubectl(self, cluster, *args):
        self.kubectl_calls += 1
        r = subprocess.run(["kubectl", "--kubeconfig", self.kubeconfig, "--context", cluster,
                            "--request-timeout=30s", *args], capture_output=True, text=True,
                           timeout=90)
        if r.returncode != 0:
            raise CheckFailed(f"kubectl {' '.join(args)} on {cluster}: {r.stderr.strip()[:300]}")
        return r.stdout


def sim_now(sim):
    """cloudsim's simulated clock (epoch seconds, 1 s resolution)."""
    return ts(sim.sim("GET", "/_sim/state", timeout=60)["sim_time"])


def ts(s):
    return time.mktime(time.strptime(s, "%Y-%m-%dT%H:%M:%SZ")) - time.timezone


def gpus(pod):
    n = 0
    for c in pod["spec"].get("containers", []):
        r = c.get("resources", {})
        n += int((r.get("limits") or r.get("requests") or {}).get("nvidia.com/gpu", 0))
    return n


def snapshot(mem):
    """Per cluster: nodes (name -> {rack, pool, spot, gpus}; pools as cloudsim's state lists
    them) and the pods of the jobs."""
    pool_of = {}
    for c in mem.sim.sim("GET", "/_sim/state", timeout=60)["clusters"]:
        for p in c["pools"]:
            for n in p.get("node_list", []):
                if p["name"] in GPU_POOLS.get(c["name"], ()):
                    pool_of[(c["name"], n["name"])] = (p["name"], bool(p.get("spot")))
    out = {}
    for cl in mem.by:
        nodes = {}
        for n in mem.nodes(cl):
            name = n["metadata"]["name"]
            pool, spot = pool_of.get((cl, name), (None, False))
            nodes[name] = {"rack": n["metadata"].get("labels", {}).get("fleet.io/rack"),
                           "pool": pool, "spot": spot, "gpus": int((n.get("status", {}).get(
                               "allocatable") or {}).get("nvidia.com/gpu", 0))}
        out[cl] = {"nodes": nodes, "pods": mem.pods(cl)}
    return out


def workers_of(snap):
    """job id -> list of (cluster, node, pod) of its worker pods (any attempt)."""
    w = {}
    for cl, s in snap.items():
        for p in s["pods"]:
            lb = p["metadata"].get("labels", {})
            if lb.get("ray.io/node-type") != "worker":
                continue
            w.setdefault(lb["fleet.io/job-id"], []).append((cl, p["spec"].get("nodeName"), p))
    return w


def choose_faults(rng, a, snap, jobs, sorts):
    """The nodes, rack, spot nodes and pods to break; each job in at most one fault."""
    w = workers_of(snap)
    node_jobs = {}
    for jid, ws in w.items():
        for cl, node, _ in ws:
            if node:
                node_jobs.setdefault((cl, node), set()).add(jid)
    used = {}
    for (cl, node), js in node_jobs.items():
        used[(cl, node)] = sum(gpus(p) for j in js for c2, n2, p in w[j] if (c2, n2) == (cl, node))
    busy_od = [k for k in node_jobs if not snap[k[0]]["nodes"].get(k[1], {}).get("spot")
               and snap[k[0]]["nodes"].get(k[1], {}).get("pool")]
    busy_spot = [k for k in node_jobs if snap[k[0]]["nodes"].get(k[1], {}).get("spot")]
    # one whole rack: the on-demand rack holding most jobs whose pool keeps room elsewhere
    racks = {}
    for (cl, node), info in ((k, snap[k[0]]["nodes"][k[1]]) for k in busy_od):
        racks.setdefault((cl, info["pool"], info["rack"]), set()).update(node_jobs[(cl, node)])
    # a pool of one rack has no spare outside it: a rack of a pool with others is lost
    multi = {k for k in racks if sum(1 for i in snap[k[0]]["nodes"].values()
                                     if i["pool"] == k[1] and i["rack"] != k[2]) > 0}
    rack_key = max(multi, key=lambda r: (any(sorts[j] == "rack" for j in racks[r]),
                                         len(racks[r]), r)) if multi else None
    rack_nodes = [(rack_key[0], n) for n, i in snap[rack_key[0]]["nodes"].items()
                  if i["pool"] == rack_key[1] and i["rack"] == rack_key[2]] if rack_key else []
    taken = set()
    for k in rack_nodes:
        taken |= node_jobs.get(k, set())
    # 5 % of the nodes running jobs (at least one), outside that rack, on-demand, sole jobs
    n_kill = max(1, round(len(node_jobs) * 0.05))
    cand = [k for k in busy_od if k not in rack_nodes and not (node_jobs[k] & taken)]
    rng.shuffle(cand)
    kill = []
    for k in cand:
        if len(kill) >= n_kill:
            break
        if node_jobs[k] & taken:
            continue
        kill.append(k)
        taken |= node_jobs[k]
    spot_c = [k for k in busy_spot if not (node_jobs[k] & taken)]
    rng.shuffle(spot_c)
    spot = spot_c[:a.spot_reclaims]
    for k in spot:
        taken |= node_jobs[k]
    rest = [j for j in jobs if j not in taken and sorts[j] == "ondemand" and j in w]
    rng.shuffle(rest)
    oom = rest[:a.ooms]
    bad = rest[a.ooms:a.ooms + a.bad_images]
    return {"kill": kill, "rack": rack_key, "rack_nodes": rack_nodes, "spot": spot, "oom": oom,
            "bad": bad, "node_jobs": node_jobs, "used": used, "workers": w}


def spares(snap, f, sorts):
    """Which jobs on a lost node had a spare: the pool (the rack for rack jobs) keeps, on
    nodes that are not lost, free GPUs for the job's lost workers, given first come first
    served in the order of the lost nodes."""
    lost = set(f["kill"]) | set(f["rack_nodes"])
    free = {}
    for cl, s in snap.items():
        for name, info in s["nodes"].items():
            if info["pool"] and not info["spot"] and (cl, name) not in lost:
                free[(cl, name)] = info["gpus"] - f["used"].get((cl, name), 0)
    had = {}
    for k in f["kill"] + f["rack_nodes"]:
        for jid in sorted(f["node_jobs"].get(k, ())):
            need = [gpus(p) for c2, n2, p in f["workers"][jid] if (c2, n2) == k]
            info = snap[k[0]]["nodes"][k[1]]
            ok = True
            for g in need:
                spot = [n for n, v in free.items() if n[0] == k[0] and v >= g and
                        snap[k[0]]["nodes"][n[1]]["pool"] == info["pool"] and
                        (sorts[jid] != "rack" or snap[k[0]]["nodes"][n[1]]["rack"] == info["rack"])]
                if not spot:
                    ok = False
                    break
                free[spot[0]] -= g
            had[jid] = (ok, k)
    return had


def patch_oom(mem, cl, pod):
    st = {"status": {"containerStatuses": [{
        "name": pod["spec"]["containers"][0]["name"], "ready": False, "restartCount": 3,
        "image": pod["spec"]["containers"][0].get("image", ""),
        "state": {"waiting": {"reason": "CrashLoopBackOff",
                              "message": "back-off 40s restarting failed container"}},
        "lastState": {"terminated": {"reason": "OOMKilled", "exitCode": 137}}}]}}
    mem.kubectl(cl, "-n", pod["metadata"]["namespace"], "patch", "pod", pod["metadata"]["name"],
                "--subresource=status", "--type=merge", "-p", json.dumps(st))


def patch_bad_image(mem, cl, pod):
    img = pod["spec"]["containers"][0].get("image", "")
    st = {"status": {"phase": "Pending", "containerStatuses": [{
        "name": pod["spec"]["containers"][0]["name"], "ready": False, "restartCount": 0,
        "image": img, "state": {"waiting": {"reason": "ImagePullBackOff", "message":
                                            f'Back-off pulling image "{img}"'}}}]}}
    mem.kubectl(cl, "-n", pod["metadata"]["namespace"], "patch", "pod", pod["metadata"]["name"],
                "--subresource=status", "--type=merge", "-p", json.dumps(st))


def inject(sim, mem, f):
    """All faults, one kind after the other; returns when each kind started: {"nodes":
    (simulated, wall), "spot": (simulated, wall)}.  Recovery is timed on cloudsim's clock
    (the pods' startTime): this script's own polling of 200 jobs is slower than fleetd."""
    at = {"nodes": (sim_now(sim), time.time())}
    for cl, node in f["kill"] + f["rack_nodes"]:
        mem.kubectl(cl, "delete", "node", node, "--wait=false")
    at["spot"] = (sim_now(sim), time.time())
    for cl, node in f["spot"]:
        sim.sim("POST", "/_sim/spot-reclaim", {"cluster": cl, "node": node})
    for kind, jobs in (("oom", f["oom"]), ("bad", f["bad"])):
        for jid in jobs:
            cl, _, pod = f["workers"][jid][0]
            (patch_oom if kind == "oom" else patch_bad_image)(mem, cl, pod)
    return at


def healthy(sim, mem, jid, attempt, snap_now, lost, wk=None):
    """(all workers of the attempt Running on live nodes, the latest worker startTime)."""
    wk = wk if wk is not None else workers_of(snap_now)
    ws = [(cl, n, p) for cl, n, p in wk.get(jid, [])
          if p["metadata"]["labels"].get("fleet.io/attempt") == str(attempt)
          and not p["metadata"].get("deletionTimestamp")]
    if not ws:
        return False, None, []
    last = 0
    for cl, n, p in ws:
        st = p.get("status", {})
        if st.get("phase") != "Running" or (cl, n) in lost or not st.get("startTime"):
            return False, None, ws
        last = max(last, ts(st["startTime"]))
    return True, last, ws


def pct(xs, q):
    if not xs:
        return None
    xs = sorted(xs)
    return xs[min(len(xs) - 1, max(0, math.ceil(q * len(xs)) - 1))]


def setup(sim):
    # the mover too: a lost rack is left by a move (queue/follow/repair.c rack_move), and a
    # cancel during a move is carried out by the mover (queue/change/mover.c ph_cancel)
    sim.start_fleetd("r0", "scheduler,dispatch,status,poller,sweep,mover")
    register.register(sim)
    register.wait_capacity(sim)
    for q in ("qa", "qb"):
        sim.sql(f"UPDATE queues SET nominal_quota = '{{\"{H100}\": 100000}}',"
                f" max_infra_retries = 3 WHERE name = '{q}'")


def submit(sim, a):
    s = shape(a)
    sorts_list = ["spot"] * s["spot"] + ["rack"] * s["rack"] + ["ondemand"] * s["ondemand"]
    ids, sorts = [], {}
    for i, sort in enumerate(sorts_list):
        j = sim.api("POST", "/v1/jobs", job_body(i, sort), ok=(201,))
        ids.append(j["id"])
        sorts[j["id"]] = sort
    return ids, sorts


def wait_running(sim, ids, bound):
    t0 = time.time()
    while time.time() - t0 < bound:
        st = dict((r[0], int(r[1])) for r in sim.sql("SELECT state, count(*) FROM jobs GROUP BY 1"))
        if st.get("running", 0) >= len(ids):
            return time.time() - t0, st
        time.sleep(0.5)
    return None, st


def observe(sim, mem, a, f, sorts, at, start_attempt):
    """Until every job that lost a node or a spot node runs again (all workers Running on
    live nodes), or a.settle seconds pass; the simulated recovery time of each."""
    lost = set(f["kill"]) | set(f["rack_nodes"]) | set(f["spot"])
    node_loss = {j for k in f["kill"] + f["rack_nodes"] for j in f["node_jobs"].get(k, ())}
    spot_jobs = {j for k in f["spot"] for j in f["node_jobs"].get(k, ())}
    watch = node_loss | spot_jobs
    rec, where = {}, {}
    t_end = time.time() + a.settle
    while time.time() < t_end and len(rec) < len(watch):
        snap_now = {cl: {"pods": mem.pods(cl), "nodes": {}} for cl in mem.by}
        wk = workers_of(snap_now)
        att = dict((r[0], (r[1], int(r[2]))) for r in sim.sql(
            "SELECT id, state, attempt FROM jobs"))
        for jid in watch - set(rec):
            state, attempt = att[jid]
            if state != "running":
                continue
            # a reclaimed job runs again as a new attempt, or (its node gone before fleetd
            # saw the notice) repaired in place: both count, the classes tell them apart
            t0 = at["spot" if jid in spot_jobs else "nodes"][0]
            ok, last, ws = healthy(sim, mem, jid, attempt, snap_now, lost, wk)
            if ok and last >= t0:
                rec[jid] = last - t0
                where[jid] = [(cl, n) for cl, n, _ in ws]
        time.sleep(1)
    return node_loss, spot_jobs, rec, where


def overcommitted(sim, snap, f):
    """Spare nodes the repairs filled past their GPUs: what ran there before the faults plus
    the GPUs of every group re-pinned to it (`repaired` events), [(node, gpus wanted, has)]."""
    want = dict(f["used"])
    for jid, lost, spare in sim.sql("SELECT job_id, data->>'lost_node', data->>'spare_node'"
                                    " FROM job_events WHERE type = 'repaired'"):
        for cl, node, pod in f["workers"].get(jid, []):
            if node == lost:
                want[(cl, spare)] = want.get((cl, spare), 0) + gpus(pod)
    out = []
    for (cl, node), g in want.items():
        has = snap.get(cl, {}).get("nodes", {}).get(node, {}).get("gpus", 0)
        if has and g > has:
            out.append((node, g, has))
    return out


def classified(sim, jid):
    """The classes the job's failure and failure_signal events name."""
    return set(r[0] for r in sim.sql(
        f"SELECT data->>'class' FROM job_events WHERE job_id = '{jid}' AND type IN"
        " ('failure', 'failure_signal') AND data ? 'class'"))


def teardown(sim, ids, bound=120):
    """Every job cancelled; until no object of theirs is left on any member."""
    for jid in ids:
        sim.api("POST", f"/v1/jobs/{jid}/cancel", {}, ok=(200, 202, 409))
    t0 = time.time()
    left, objs = None, None
    while time.time() - t0 < bound:
        left = int(sim.sql1("SELECT count(*) FROM jobs WHERE state NOT IN"
                            " ('succeeded','failed','cancelled')"))
        objs = [o for o in sim.sim("GET", "/_sim/objects", timeout=60).get("objects", [])
                if ((o.get("object") or {}).get("metadata") or {}).get("labels", {})
                .get("fleet.io/job-id")]
        if left == 0 and not objs:
            return time.time() - t0, 0, 0
        time.sleep(1)
    return None, left, len(objs)


def run(sim, a, ck, fig):
    rng = random.Random(a.seed)
    setup(sim)
    mem = Members(sim)
    ids, sorts = submit(sim, a)
    # a deadline, not a figure (returns once they run): the short drill's settle (20 s) is
    # the observation window below, too short a wait for 20 jobs beside other tests
    took, st = wait_running(sim, ids, max(a.settle, 120))
    ck.ok(f"all {len(ids)} jobs run before the faults", took is not None, f"states {st}")
    if took is None:
        raise CheckFailed("the load never ran")
    fig["time_scale"] = a.time_scale
    fig["jobs_by_sort"] = {s: sum(1 for v in sorts.values() if v == s) for s in set(sorts.values())}
    snap = snapshot(mem)
    f = choose_faults(rng, a, snap, ids, sorts)
    had = spares(snap, f, sorts)
    start_attempt = dict((r[0], int(r[1])) for r in sim.sql("SELECT id, attempt FROM jobs"))
    fig["faults"] = {"nodes_running_jobs": len(f["node_jobs"]), "nodes_deleted": len(f["kill"]),
                     "rack": "/".join(str(x) for x in f["rack"]) if f["rack"] else None,
                     "rack_nodes_deleted": len(f["rack_nodes"]), "spot_reclaimed": len(f["spot"]),
                     "oom_workers": len(f["oom"]), "bad_image_jobs": len(f["bad"])}
    log("faults", fig["faults"])
    at = inject(sim, mem, f)
    fig["kubectl_calls"] = mem.kubectl_calls
    node_loss, spot_jobs, rec, where = observe(sim, mem, a, f, sorts, at, start_attempt)

    # recovered where a spare existed (rack-topology jobs of the lost rack apart)
    rack_jobs = {j for j in node_loss if sorts[j] == "rack"}
    with_spare = {j for j in node_loss - rack_jobs if had.get(j, (False,))[0]}
    recovered = with_spare & set(rec)
    fig["node_loss_jobs"] = len(node_loss)
    fig["node_loss_jobs_with_spare"] = len(with_spare)
    fig["node_loss_recovered"] = len(recovered)
    fig["recovered_where_spare_pct"] = round(100.0 * len(recovered) / len(with_spare), 1) \
        if with_spare else None
    fig["rack_topology_jobs_on_lost_rack"] = len(rack_jobs)
    fig["rack_topology_jobs_recovered"] = len(rack_jobs & set(rec))
    fig["spot_jobs"] = len(spot_jobs)
    fig["spot_jobs_recovered"] = len(spot_jobs & set(rec))
    secs = [rec[j] for j in node_loss if j in rec]
    fig["node_loss_to_running_p50_sim_s"] = pct(secs, 0.5)
    fig["node_loss_to_running_p99_sim_s"] = pct(secs, 0.99)
    spot_secs = [rec[j] for j in spot_jobs if j in rec]
    fig["spot_reclaim_to_running_p50_sim_s"] = pct(spot_secs, 0.5)
    fig["spot_reclaim_to_running_p99_sim_s"] = pct(spot_secs, 0.99)
    missing = sorted(with_spare - recovered)
    over = overcommitted(sim, snap, f)
    fig["spares_overcommitted_by_repairs"] = len(over)
    name = "every running job that lost a node where a spare existed runs again (100 %)"
    detail = f"{len(missing)} not recovered: " + "; ".join(
        f"{j} {had[j][1]} {sim.sql1(f'SELECT state FROM jobs WHERE id = {chr(39)}{j}{chr(39)}')}"
        for j in missing[:5]) + (f"; spares over-committed by repairs: {over[:5]}" if over else "")
    if missing and "recovery" in a.known_gaps:
        log(f"KNOWN GAP (not asserted, --known-gaps recovery): {name}: {detail}")
    else:
        ck.ok(name, not missing, detail)
    ck.ok(f"node loss -> replacement Running p99 <= {TARGET_P99_S} s simulated",
          secs and pct(secs, 0.99) <= TARGET_P99_S, f"{sorted(secs)}")
    retried = {j for j in spot_jobs & set(rec) if int(sim.sql1(
        f"SELECT attempt FROM jobs WHERE id = '{j}'")) > start_attempt[j]}
    fig["spot_jobs_retried"] = len(retried)
    fig["spot_jobs_repaired_in_place"] = len((spot_jobs & set(rec)) - retried)
    ck.ok("every job on a reclaimed spot node runs again (a new attempt, or repaired)",
          spot_jobs <= set(rec), f"{sorted(spot_jobs - set(rec))[:5]}")

    # let the status worker classify what it saw (a few of its cycles)
    time.sleep(max(3.0, 30.0 / a.time_scale))
    states = dict((r[0], (r[1], int(r[2]))) for r in sim.sql("SELECT id, state, attempt FROM jobs"))
    failed = {j for j, (s, at) in states.items() if s == "failed" or at > start_attempt[j]}
    failed |= set(f["oom"]) | set(f["bad"]) | spot_jobs
    unclassified = sorted(j for j in failed if not (classified(sim, j) & set(CLASSES)))
    fig["failed_jobs"] = len(failed)
    fig["classified_pct"] = round(100.0 * (len(failed) - len(unclassified)) / len(failed), 1) \
        if failed else None
    want = {"oom": "user_code", "bad": "configuration"}
    wrong = [(j, k, sorted(classified(sim, j))) for k in want for j in f[k]
             if want[k] not in classified(sim, j)]
    spot_wrong = [j for j in spot_jobs if "preemption" not in classified(sim, j)]
    fig["class_mismatches"] = len(wrong) + len(spot_wrong)
    ck.ok("every job that failed has a classified reason (100 %)", not unclassified,
          f"{unclassified[:5]}")
    ck.ok("OOM is user_code, a bad image configuration, a spot reclaim preemption",
          not wrong and not spot_wrong, f"{wrong[:5]} spot {spot_wrong[:5]}")

    # stalled without a reason: every job not healthy must be explained by explain
    snap_end = {cl: {"pods": mem.pods(cl), "nodes": {}} for cl in mem.by}
    lost = set(f["kill"]) | set(f["rack_nodes"]) | set(f["spot"])
    silent = []
    stalled = 0
    for jid, (s, at) in states.items():
        if s in FINAL:
            continue
        ok, _, _ = healthy(sim, mem, jid, at, snap_end, lost) if s == "running" else (False, 0, 0)
        if ok:
            continue
        stalled += 1
        x = sim.api("GET", f"/v1/jobs/{jid}/placement")
        why = [k for k in ("failure", "waiting_for_spare", "last_failure", "signals") if x.get(k)]
        if s == "pending" and (x.get("candidates") or x.get("reason") or x.get("why")):
            why.append("pending")
        if not why:
            silent.append((jid, s, sorted(x)[:12]))
    fig["jobs_not_healthy_at_end"] = stalled
    fig["stalled_without_reason"] = len(silent)
    ck.ok("no job stalls without a reason (explain names one for each)", not silent,
          f"{silent[:5]}")

    # retries and repairs never on a failed node or rack
    bad_rack = f["rack"]
    on_failed = []
    for jid, nodes in where.items():
        for cl, n in nodes:
            info = snap[cl]["nodes"].get(n) or {}
            if (cl, n) in lost or (bad_rack and (cl, info.get("pool"), info.get("rack")) == bad_rack
                                   and (cl, n) in set(f["rack_nodes"])):
                on_failed.append((jid, cl, n))
    avoid = sim.sql("SELECT j.id, a->>'node' FROM jobs j, jsonb_array_elements(j.placement->"
                    "'allocs') a WHERE j.attempt > 1 AND j.state IN ('dispatched','running')")
    on_failed += [(j, "placement", n) for j, n in avoid
                  if any(n == k[1] for k in lost)]
    fig["retries_on_failed_node_or_rack"] = len(on_failed)
    ck.ok("no retry or repair placed on a failed node or rack", not on_failed, f"{on_failed[:5]}")

    # post-mortems after teardown
    took, left, objs = teardown(sim, ids, bound=max(a.settle, 120))
    ck.ok("teardown: every job cancelled, no object left on a member", took is not None,
          f"{left} jobs live, {objs} objects left")
    no_pm = []
    for jid in sorted(failed):
        pm = sim.api("GET", f"/v1/jobs/{jid}/postmortem")
        items = pm.get("items") or []
        if not items or not any((i.get("record") or {}).get("pods") for i in items):
            no_pm.append((jid, len(items)))
    fig["postmortems_after_teardown_pct"] = round(100.0 * (len(failed) - len(no_pm)) /
                                                  len(failed), 1) if failed else None
    ck.ok("a post-mortem with the pods is retrievable after teardown for every failed job"
          " (100 %)", not no_pm, f"{no_pm[:5]}")
    checks.sanitizers(sim, ck)
    checks.unexpected_exits(sim, ck)
    log("figures", fig)
