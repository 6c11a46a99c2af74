"""replicas: three fleetd replicas on one database under a job load; kill -9 the scheduler
leader (GET /metrics fleetd_scheduler_leading) K times, measure the time until another
replica leads, restart the killed one; never two leaders at once; then the common checks."""
import random
import statistics
import threading
import time

import checks
import register
from lib import Load, log

REPLICAS = 3


def leaders(sim):
    """Names of live replicas whose /metrics says they lead."""
    out = []
    for n, p in list(sim.procs.items()):
        if n != "cloudsim" and p.alive() and (sim.metric(p, "fleetd_scheduler_leading") or 0) > 0:
            out.append(n)
    return out


class Watch:
    """Samples the leaders every 200 ms; remembers every instant with two or more."""

    def __init__(self, sim):
        self.sim, self.split, self.stop = sim, [], threading.Event()
        self.t = threading.Thread(target=self._run, daemon=True)
        self.t.start()

    def _run(self):
        while not self.stop.is_set():
            ls = leaders(self.sim)
            if len(ls) > 1:
                # the gauge of a replica that just lost its session may lag: confirm
                time.sleep(0.5)
                again = leaders(self.sim)
                if len(again) > 1:
                    self.split.append((time.strftime("%H:%M:%S"), again))
            time.sleep(0.2)


def wait_leader(sim, exclude, timeout):
    t0 = time.time()
    while time.time() - t0 < timeout:
        ls = [n for n in leaders(sim) if n != exclude]
        if ls:
            return ls[0], time.time() - t0
        time.sleep(0.05)
    return None, timeout


def run(sim, a, ck, fig):
    register.setup_fleet(sim, REPLICAS)
    first, _ = wait_leader(sim, None, 30)
    ck.ok("one replica leads the scheduler after start", first is not None, "none leads after 30s")
    watch = Watch(sim)
    load = Load(sim, a.jobs, threads=a.threads, seed=a.seed).start(
        rate=a.jobs / max(1.0, a.kills * a.kill_every))
    failover = []
    for k in range(a.kills):
        time.sleep(a.kill_every * random.uniform(0.3, 1.7))
        cur = leaders(sim)
        if len(cur) != 1:
            cur2, _ = wait_leader(sim, None, 10)
            cur = [cur2] if cur2 else []
        if not cur:
            ck.ok(f"a leader exists before kill {k + 1}", False, "no replica leads")
            break
        victim = cur[0]
        sim.kill9(victim)
        new, dt = wait_leader(sim, victim, 30)
        failover.append(dt)
        log(f"kill {k + 1}/{a.kills}: leader {victim} killed; {new} leads after {dt:.2f}s;"
            f" {len(load.acked)} acked")
        if new is None:
            ck.ok(f"another replica leads after kill {k + 1}", False, "none within 30s")
        # sometimes a non-leader too: dispatch and status claims must move as well
        if random.random() < 0.3:
            others = [n for n in sim.procs if n not in ("cloudsim", victim, new)]
            if others:
                o = random.choice(others)
                sim.kill9(o)
                sim.start_fleetd(o, sim.procs[o].workers)
                log(f"  and non-leader {o} killed and restarted")
        time.sleep(random.uniform(0, 1))
        sim.start_fleetd(victim, sim.procs[victim].workers)
    ck.ok("the load finished", load.wait(a.settle), "submitters still running")
    watch.stop.set()
    watch.t.join(5)
    fig["replicas"] = REPLICAS
    fig["leader_kills"] = len(failover)
    if failover:
        fig["failover_s_max"] = round(max(failover), 2)
        fig["failover_s_median"] = round(statistics.median(failover), 2)
    ck.ok("leadership moved within 10 s of every leader kill",
          failover and max(failover) <= 10, f"failover times {[round(x, 2) for x in failover]}")
    ck.ok("never two scheduler leaders at once", not watch.split, f"{watch.split[:5]}")
    ck.ok("answers are 201, or 503 with Retry-After, or no connection", not load.bad,
          f"{len(load.bad)}: {load.bad[:5]}")
    fig.update(checks.common(sim, ck, [load], a.settle, a.transitional))
    checks.unexpected_exits(sim, ck)
