"""dbfailover: the primary of a highly available Postgres (scripts/pg_ha.sh: Patroni and
etcd from Debian, two nodes in synchronous mode) is lost under POST load and under
dispatch, F times: SIGKILL of the leader's Patroni and Postgres, as a machine that dies.
fleetd's replicas hold a libpq multi-host URL with target_session_attrs=read-write and are
not restarted.  Checks: every acknowledged job is stored (synchronous replication: the
standby that takes over has every commit fleetd was told of), fleetd serves again (every
replica's /readyz 200 and a POST acknowledged) within SERVE_BOUND seconds of the loss, no
request hangs, no Ray object applied twice, and then the common checks.  Figures: the
failover as Patroni saw it (loss to a new primary) and as fleetd's clients saw it."""
import random
import time

import checks
import register
from dbrestart import Prober, ready_again
from lib import CheckFailed, Load, log

SERVE_BOUND = 30.0   # the check; the target (issue 29) is 15 s, the figure says where it is


def start_pg(sim):
    sim.start_pg_ha()


def serving_again(sim, prober, since, bound):
    """Seconds from since until every replica's /readyz is 200 and a POST is acknowledged
    (None past bound)."""
    dt = ready_again(prober, sim, since, bound)
    if dt is None:
        return None
    t_end = since + bound
    i = 0
    while time.time() < t_end:
        i += 1
        body = sim.job_body(900000 + i, random.Random(i))
        body["name"] = f"{sim.tag}probe{int(since)}-{i}"
        st, _, _ = sim.http("POST", sim.any_replica().url + "/v1/jobs", body, timeout=10,
                            headers={"Idempotency-Key": body["name"]})
        if st == 201:
            return time.time() - since
        time.sleep(0.1)
    return None


def run(sim, a, ck, fig):
    register.setup_fleet(sim, 2)
    pids = {n: p.popen.pid for n, p in sim.procs.items()}
    prober = Prober(sim)
    load = Load(sim, a.jobs, threads=a.threads, seed=a.seed, give_up=a.settle).start(
        rate=a.jobs / max(1.0, a.db_failovers * a.kill_every * 2 + 8))
    patroni_s, serve_s = [], []
    for k in range(a.db_failovers):
        time.sleep(a.kill_every * random.uniform(0.7, 1.3))
        dispatched = sim.sql1("SELECT count(*) FROM jobs WHERE state <> 'pending'")
        lost = sim.pg_ha("kill-primary")
        t_loss = time.time()
        log(f"failover {k + 1}/{a.db_failovers}: primary {lost} killed ({len(load.acked)} acked,"
            f" {dispatched} jobs past pending)")
        sim.pg_ha("wait-primary")
        patroni_s.append(time.time() - t_loss)
        dt = serving_again(sim, prober, t_loss, SERVE_BOUND)
        serve_s.append(dt if dt is not None else float("inf"))
        log(f"  new primary {sim.pg_ha('primary')} after {patroni_s[-1]:.1f}s; fleetd serving"
            f" again after {dt if dt is None else round(dt, 1)}s")
        ck.ok(f"fleetd serves again within {SERVE_BOUND:.0f}s of the primary's loss"
              f" (failover {k + 1})", dt is not None and dt <= SERVE_BOUND, f"took {dt}")
        # the lost machine comes back as a standby (pg_rewind), synchronous again before
        # the next loss, so that one too loses no acknowledged write
        sim.pg_ha("restart-node", lost)
        sim.pg_ha("wait-sync")
    ck.ok("the load finished", load.wait(a.settle), "submitters still running")
    prober.stop.set()
    for t in prober.ts:
        t.join(20)
    rows = prober.between(0, time.time())
    hung = [r for r in rows if r[3] == -1]
    ck.ok("no request hung (all answered within the 15 s client timeout)", not hung and
          not load.hangs, f"{hung[:5]} {load.hangs[:5]}")
    ck.ok("answers are 201, or 503 with Retry-After, or no connection", not load.bad,
          f"{len(load.bad)}: {load.bad[:5]}")
    ck.ok("fleetd recovered without a restart (same processes)",
          all(sim.procs[n].alive() and sim.procs[n].popen.pid == pid for n, pid in pids.items()),
          f"{[(n, p.popen.returncode) for n, p in sim.procs.items()]}")
    fig["db_failovers"] = a.db_failovers
    fig["patroni_failover_s"] = [round(x, 1) for x in patroni_s]
    fig["fleetd_serving_again_s"] = [round(x, 1) for x in serve_s]
    fig["post_statuses"] = {str(k): v for k, v in load.statuses.items()}
    if not patroni_s:
        raise CheckFailed("no failover happened")
    fig.update(checks.common(sim, ck, [load], a.settle, a.transitional))
    checks.unexpected_exits(sim, ck)
