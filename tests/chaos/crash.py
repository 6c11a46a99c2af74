"""crash: one fleetd replica running every loop under a job load, kill -9 at random
instants, restarted each time; then nothing lost, nothing applied twice, everything adds up."""
import random
import statistics
import time

import checks
import register
from lib import Load, log


def kill_loop(sim, name, kills, every, load=None):
    """kills x (sleep ~every s, kill -9 name, restart it on its port); returns the restart
    times (kill to /healthz 200)."""
    back = []
    for k in range(kills):
        time.sleep(every * random.uniform(0.3, 1.7))
        pid = sim.procs[name].popen.pid
        sim.kill9(name)
        t = time.time()
        acked = len(load.acked) if load else 0
        time.sleep(random.uniform(0, 0.5))
        sim.start_fleetd(name, sim.procs[name].workers)
        back.append(time.time() - t)
        log(f"kill {k + 1}/{kills}: {name} pid {pid} after {acked} acks; healthy again in"
            f" {back[-1]:.2f}s")
    return back


def run(sim, a, ck, fig):
    register.setup_fleet(sim, 1)
    load = Load(sim, a.jobs, threads=a.threads, seed=a.seed).start(
        rate=a.jobs / max(1.0, a.kills * a.kill_every))
    back = kill_loop(sim, "r0", a.kills, a.kill_every, load)
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
