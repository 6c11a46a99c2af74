"""crash: one fleetd replica running every loop under a job load, kill -9 at random
instants (the first while a dispatch is in flight), restarted each time; then nothing lost,
nothing applied twice, everything adds up."""
import random
import statistics
import time

import checks
import register
from lib import Load, log


def await_claim(sim, bound=10):
    """Slows every Kubernetes call by 500 ms and waits until a job is claimed for dispatch
    (admitted, claimed_by set): a kill now lands between the claim (or the apply) and its
    record, the window exactly-once and claim takeover must cover.  Returns the fault id."""
    fid = sim.sim("POST", "/_sim/faults", {"service": "k8s", "latency_ms": 500})["id"]
    t0 = time.time()
    while time.time() - t0 < bound:
        if sim.sql1("SELECT count(*) FROM jobs WHERE state = 'admitted' AND claimed_by IS NOT"
                    " NULL") != "0":
            time.sleep(random.uniform(0, 0.4))
            break
        time.sleep(0.02)
    return fid


def kill_loop(sim, name, kills, every, load=None, targeted=1):
    """kills x (sleep ~every s, kill -9 name, restart it on its port), the first `targeted`
    of them while a dispatch is in flight; returns the restart times (kill to /healthz 200)."""
    back = []
    for k in range(kills):
        time.sleep(every * random.uniform(0.3, 1.7))
        fid = await_claim(sim) if k < targeted else None
        pid = sim.procs[name].popen.pid
        sim.kill9(name)
        t = time.time()
        if fid is not None:
            sim.sim("DELETE", f"/_sim/faults/{fid}")
        acked = len(load.acked) if load else 0
        time.sleep(random.uniform(0, 0.5))
        sim.start_fleetd(name, sim.procs[name].workers)
        back.append(time.time() - t)
        log(f"kill {k + 1}/{kills}{' (during a dispatch)' if fid else ''}: {name} pid {pid} after"
            f" {acked} acks; healthy again in {back[-1]:.2f}s")
    return back


def run(sim, a, ck, fig):
    register.setup_fleet(sim, 1)
    load = Load(sim, a.jobs, threads=a.threads, seed=a.seed).start(
        rate=a.jobs / max(1.0, a.kills * a.kill_every))
    back = kill_loop(sim, "r0", a.kills, a.kill_every, load, targeted=a.targeted_kills)
    ck.ok("the load finished", load.wait(a.settle), "submitters still running")
    fig["kills"] = len(back)
    fig["restart_s_max"] = round(max(back), 2) if back else 0
    fig["restart_s_median"] = round(statistics.median(back), 2) if back else 0
    # connection failures are expected while the only replica is down; anything else is not
    bad = load.bad
    ck.ok("answers during kills are 201, or 503 with Retry-After, or no connection", not bad,
          f"{len(bad)}: {bad[:5]}")
    fig.update(checks.common(sim, ck, [load], a.settle, a.transitional))
    checks.unexpected_exits(sim, ck)
