"""faults: member and provider faults through cloudsim under a job load — 5xx bursts, 429
with Retry-After, hanging API servers, a partitioned cluster, a partitioned region, expired
tokens, clock skew.  A partitioned cluster must leave placement (no decision lands on it while
it is unreachable) and come back when the partition heals; afterwards the common checks (no
job stuck in a transitional state beyond its timeout, one apply per attempt, nothing lost)."""
import random
import time

import checks
import register
from lib import Load, log

ALL = ("5xx", "429", "hang", "partition-cluster", "partition-region", "expired-tokens",
       "clock-skew")
SERVICE = {"gke": "gcp", "aks": "azure", "hyperpod": "aws"}
BACK_BOUND = 30.0
LEAVE_BOUND = 15.0     # 3 failed polls at 1 s, plus the request timeouts


def state_of(sim, name):
    return sim.sql1(f"SELECT state FROM clusters WHERE name = '{name}'")


def wait_state(sim, names, want, bound):
    """Seconds until every cluster of names is in state want (None past bound)."""
    t0 = time.time()
    pred = (lambda s: s != "ready") if want == "!ready" else (lambda s: s == want)
    while time.time() - t0 < bound:
        if all(pred(state_of(sim, n)) for n in names):
            return time.time() - t0
        time.sleep(0.2)
    return None


def partition(sim, ck, fig, label, spec, names, hold):
    """Injects spec, waits for names to leave placement, holds, heals, waits for return."""
    fid = sim.sim("POST", "/_sim/faults", spec)["id"]
    t_in = time.time()
    left = wait_state(sim, names, "!ready", LEAVE_BOUND)
    ck.ok(f"{label}: {names} marked not ready within {LEAVE_BOUND:.0f}s", left is not None,
          f"states {[(n, state_of(sim, n)) for n in names]}")
    db_from = sim.sql1("SELECT now()")
    time.sleep(max(0.0, hold - (time.time() - t_in)))
    db_to = sim.sql1("SELECT now()")
    ids = ",".join(f"'{sim.cluster_ids[n]}'" for n in names)
    placed = sim.sql(f"SELECT j.name, p.decided_at FROM placements p JOIN jobs j ON j.id = p.job_id"
                     f" WHERE p.cluster_id IN ({ids}) AND p.decided_at > '{db_from}'::timestamptz +"
                     f" interval '1 second' AND p.decided_at < '{db_to}'")
    ck.ok(f"{label}: no job placed on an unreachable cluster", left is None or not placed,
          f"{len(placed)} placements: {placed[:5]}")
    sim.sim("DELETE", f"/_sim/faults/{fid}")
    back = wait_state(sim, names, "ready", BACK_BOUND)
    ck.ok(f"{label}: {names} ready again within {BACK_BOUND:.0f}s of the heal", back is not None,
          f"states {[(n, state_of(sim, n)) for n in names]}")
    fig.setdefault("partition", {})[label] = {"left_s": left and round(left, 2),
                                              "back_s": back and round(back, 2)}


def one(sim, ck, fig, fault, a):
    used = [c for c in sim.clusters if c["name"] in ("test-gke-usc1", "test-aks-eus", "test-hp-usw2")]
    c = random.choice(used)
    hold = a.fault_seconds
    log(f"fault {fault} ({c['name']})")
    if fault == "5xx":
        ids = [sim.sim("POST", "/_sim/faults", {"service": "k8s", "cluster": c["name"],
                                                "error_rate": 1.0, "error_status": 500,
                                                "count": 40})["id"],
               sim.sim("POST", "/_sim/faults", {"service": SERVICE[c["provider"]], "error_rate": 1.0,
                                                "error_status": 503, "count": 20})["id"]]
        time.sleep(hold)
        for i in ids:
            sim.http("DELETE", sim.sim_url + f"/_sim/faults/{i}", auth=False, record=False)
    elif fault == "429":
        fid = sim.sim("POST", "/_sim/faults", {"service": "k8s", "error_rate": 0.5,
                                               "error_status": 429, "retry_after": 1})["id"]
        time.sleep(hold)
        sim.sim("DELETE", f"/_sim/faults/{fid}")
    elif fault == "hang":
        fid = sim.sim("POST", "/_sim/faults", {"service": "k8s", "cluster": c["name"], "hang": True,
                                               "hang_s": 20, "count": 4})["id"]
        time.sleep(hold)
        sim.http("DELETE", sim.sim_url + f"/_sim/faults/{fid}", auth=False, record=False)
    elif fault == "partition-cluster":
        partition(sim, ck, fig, fault, {"cluster": c["name"], "unreachable": True}, [c["name"]],
                  max(hold, 10))
    elif fault == "partition-region":
        names = [x["name"] for x in sim.clusters if x["region"] == c["region"]]
        partition(sim, ck, fig, fault, {"region": c["region"], "unreachable": True}, names,
                  max(hold, 10))
    elif fault == "expired-tokens":
        sim.sim("POST", "/_sim/expire-tokens", {})
        time.sleep(hold)
        bad = [x["name"] for x in sim.clusters if state_of(sim, x["name"]) != "ready"]
        ck.ok("expired tokens: every cluster ready after the tokens expired (fresh ones fetched)",
              not bad or wait_state(sim, bad, "ready", BACK_BOUND) is not None,
              f"not ready: {[(n, state_of(sim, n)) for n in bad]}")
    elif fault == "clock-skew":
        sim.sim("POST", "/_sim/clock", {"skew_s": 240})
        time.sleep(hold)
        bad = [x["name"] for x in sim.clusters if state_of(sim, x["name"]) != "ready"]
        sim.sim("POST", "/_sim/clock", {"skew_s": 0})
        ck.ok("clock skew of 240 s (inside the providers' 5 min): every cluster stays ready",
              not bad, f"not ready: {[(n, state_of(sim, n)) for n in bad]}")
    else:
        raise ValueError(f"unknown fault {fault}")


def run(sim, a, ck, fig):
    faults = list(ALL) if a.faults == "all" else [f for f in a.faults.split(",") if f]
    register.setup_fleet(sim, 2)
    span = sum(max(a.fault_seconds, 10) + 14 if f.startswith("partition") else a.fault_seconds + 2
               for f in faults)
    load = Load(sim, a.jobs, threads=a.threads, seed=a.seed, give_up=a.settle).start(
        rate=a.jobs / max(1.0, span))
    for f in faults:
        one(sim, ck, fig, f, a)
        time.sleep(2)
    sim.sim("DELETE", "/_sim/faults")
    ck.ok("the load finished", load.wait(a.settle), "submitters still running")
    fig["faults"] = faults
    fig["post_statuses"] = {str(k): v for k, v in load.statuses.items()}
    ck.ok("API answers are 201, or 503 with Retry-After, during member faults", not load.bad,
          f"{len(load.bad)}: {load.bad[:5]}")
    fig.update(checks.common(sim, ck, [load], a.settle, a.transitional))
    checks.unexpected_exits(sim, ck)
