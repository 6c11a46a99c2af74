"""dbrestart: the database goes away under load and comes back, fleetd is not restarted.
`pg.sh restart` (pg_ctl restart -m fast) R times, and O outages (pg.sh stop, a few seconds,
pg.sh start): /readyz is 503 while the database is away and 200 within 10 s after it
returns; requests in flight get 503 with Retry-After or succeed, never hang (client
timeouts); the same replicas serve throughout; nothing lost."""
import random
import threading
import time

import checks
import register
from lib import Load, log

READY_BOUND = 10.0


class Prober:
    """GET /readyz and GET /v1/jobs every 100 ms on every replica, with client timeouts;
    records (t, replica, route, status, has Retry-After, seconds)."""

    def __init__(self, sim):
        self.sim, self.rows, self.stop = sim, [], threading.Event()
        self.lock = threading.Lock()
        self.ts = [threading.Thread(target=self._run, args=(n,), daemon=True)
                   for n in sim.procs if n != "cloudsim"]
        for t in self.ts:
            t.start()

    def _run(self, name):
        pr = self.sim.procs[name]
        while not self.stop.is_set():
            for route, auth in (("/readyz", False), ("/v1/jobs?limit=5", True)):
                t0 = time.time()
                st, h, _ = self.sim.http("GET", pr.url + route, auth=auth, timeout=15)
                with self.lock:
                    self.rows.append((t0, name, route, st, "Retry-After" in h, time.time() - t0))
            time.sleep(0.1)

    def between(self, t0, t1, route=None):
        with self.lock:
            return [r for r in self.rows if t0 <= r[0] <= t1 and (route is None or r[2] == route)]


def ready_again(prober, sim, since, bound):
    """Seconds from since until every replica's /readyz answered 200 (None past bound)."""
    t_end = since + bound + 5
    while time.time() < t_end:
        rows = prober.between(since, time.time(), "/readyz")
        firsts = {}
        for t, n, _, st, _, _ in rows:
            if st == 200 and n not in firsts:
                firsts[n] = t
        if len(firsts) == len(prober.ts):
            return max(firsts.values()) - since
        time.sleep(0.1)
    return None


def run(sim, a, ck, fig):
    register.setup_fleet(sim, 2)
    pids = {n: p.popen.pid for n, p in sim.procs.items()}
    prober = Prober(sim)
    load = Load(sim, a.jobs, threads=a.threads, seed=a.seed, give_up=a.settle).start(
        rate=a.jobs / max(1.0, (a.db_restarts + a.db_outages) * a.kill_every * 1.5 + 8))
    recov, outage_503 = [], []
    events = ["restart"] * a.db_restarts + ["outage"] * a.db_outages
    random.shuffle(events)
    for k, ev in enumerate(events):
        time.sleep(a.kill_every * random.uniform(0.5, 1.5))
        if ev == "restart":
            log(f"db {k + 1}/{len(events)}: pg_ctl restart -m fast")
            sim.pg("restart")
            back = time.time()
        else:
            down = random.uniform(4, 8)
            log(f"db {k + 1}/{len(events)}: stopped for {down:.1f}s")
            sim.pg("stop")
            t_stop = time.time()
            time.sleep(down)
            seen = prober.between(t_stop + 3, time.time(), "/readyz")
            outage_503.append(bool(seen) and all(r[3] == 503 for r in seen))
            ck.ok(f"/readyz is 503 while the database is away (outage {k + 1})",
                  seen and all(r[3] == 503 for r in seen),
                  f"answers: {sorted({r[3] for r in seen})} ({len(seen)} probes)")
            sim.pg("start")
            back = time.time()
        dt = ready_again(prober, sim, back, READY_BOUND)
        recov.append(dt if dt is not None else float("inf"))
        log(f"  /readyz 200 on every replica {dt if dt is None else round(dt, 2)}s after the"
            " database returned")
        ck.ok(f"/readyz 200 within {READY_BOUND:.0f}s after the database returned ({ev} {k + 1})",
              dt is not None and dt <= READY_BOUND, f"took {dt}")
    ck.ok("the load finished", load.wait(a.settle), "submitters still running")
    prober.stop.set()
    for t in prober.ts:
        t.join(20)
    rows = prober.between(0, time.time())
    hung = [r for r in rows if r[3] == -1]
    refused = [r for r in rows if r[3] == 0]
    bad = [r for r in rows if r[3] not in (200, 503) and r[3] > 0]
    no_ra = [r for r in rows if r[3] == 503 and not r[4]]
    ck.ok("no request hung (all answered within the 15 s client timeout)", not hung and
          not load.hangs, f"{hung[:5]} {load.hangs[:5]}")
    ck.ok("fleetd kept accepting connections while the database was away", not refused,
          f"{len(refused)} refused: {refused[:3]}")
    ck.ok("in-flight answers are 200/201 or 503 with Retry-After", not bad and not no_ra and
          not load.bad, f"other statuses {bad[:3]}; 503 without Retry-After {no_ra[:3]};"
          f" POST /v1/jobs {load.bad[:3]}")
    ck.ok("fleetd recovered without a restart (same processes)",
          all(sim.procs[n].alive() and sim.procs[n].popen.pid == pid for n, pid in pids.items()),
          f"{[(n, p.popen.returncode) for n, p in sim.procs.items()]}")
    fig["db_restarts"], fig["db_outages"] = a.db_restarts, a.db_outages
    fig["ready_after_db_s_max"] = round(max(recov), 2) if recov else None
    fig["probes"] = len(rows)
    fig["probe_503"] = sum(1 for r in rows if r[3] == 503)
    fig["post_statuses"] = {str(k): v for k, v in load.statuses.items()}
    fig.update(checks.common(sim, ck, [load], a.settle, a.transitional))
    checks.unexpected_exits(sim, ck)
