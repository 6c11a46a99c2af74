#!/usr/bin/env python3
"""chaos.py SUITE [options] — one chaos suite against a private Postgres, cloudsim and fleetd
replicas on loopback: crash | replicas | dbrestart | dbfailover | faults | regionloss |
failuredrill.  Prints PASS/FAIL per check,
writes WORKDIR/../result-SUITE.json (figures and failures) and exits 1 on any failure.
Everything it starts it stops, also on failure or SIGTERM."""
import argparse
import os
import signal
import sys
import time
import traceback

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import checks  # noqa: E402
from lib import CheckFailed, Checks, Sim, log  # noqa: E402

SUITES = ("crash", "replicas", "dbrestart", "dbfailover", "faults", "regionloss",
          "failuredrill")


def parse():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("suite", choices=SUITES)
    ap.add_argument("--build", default=os.environ.get("FLEETD_BUILD_DIR", "build/rel"))
    ap.add_argument("--workdir", required=True)
    ap.add_argument("--jobs", type=int, default=100)
    ap.add_argument("--kills", type=int, default=3)
    ap.add_argument("--kill-every", type=float, default=5.0, help="mean seconds between kills")
    ap.add_argument("--targeted-kills", type=int, default=1,
                    help="crash: how many kills land while a dispatch is in flight")
    ap.add_argument("--time-scale", type=float, default=20)
    ap.add_argument("--threads", type=int, default=8)
    ap.add_argument("--seed", type=int, default=int(time.time()))
    ap.add_argument("--settle", type=int, default=240, help="seconds for jobs to settle")
    ap.add_argument("--transitional", type=int, default=75,
                    help="longest allowed stay in admitted/dispatched/preempted/moving (the"
                    " clusters' stockout timeout is 30 s)")
    ap.add_argument("--faults", default="all", help="faults suite: comma list or all")
    ap.add_argument("--fault-seconds", type=float, default=8)
    ap.add_argument("--db-outages", type=int, default=1)
    ap.add_argument("--db-restarts", type=int, default=1)
    ap.add_argument("--db-failovers", type=int, default=1,
                    help="dbfailover: how many times the HA Postgres loses its primary")
    ap.add_argument("--fresh-instance-id", action="store_true",
                    help="a restarted replica gets a new FLEETD_INSTANCE_ID (default: keeps it)")
    ap.add_argument("--spot-reclaims", type=int, default=20,
                    help="failuredrill: spot nodes running jobs to reclaim")
    ap.add_argument("--ooms", type=int, default=10, help="failuredrill: workers OOM-killed")
    ap.add_argument("--bad-images", type=int, default=5,
                    help="failuredrill: jobs whose workers get a bad image")
    ap.add_argument("--known-gaps", default="",
                    help="failuredrill: comma list of targets printed, not asserted (recovery)")
    return ap.parse_args()


def main():
    a = parse()
    import random  # noqa: PLC0415
    random.seed(a.seed)
    signal.signal(signal.SIGTERM, lambda *_: (_ for _ in ()).throw(KeyboardInterrupt()))
    sim = Sim(a.workdir, a.build, time_scale=a.time_scale, tag=a.suite[:2])
    sim.fresh_ids = a.fresh_instance_id
    ck = Checks()
    fig = {"seed": a.seed, "jobs": a.jobs}
    t0 = time.time()
    log(f"suite {a.suite}: {a.jobs} jobs, seed {a.seed}, build {a.build}, workdir {a.workdir}")
    try:
        mod = __import__(a.suite)
        if hasattr(mod, "edit_fleet"):
            sim.edit_fleet = lambda f: mod.edit_fleet(f, a)
        if hasattr(mod, "start_pg"):
            mod.start_pg(sim)   # a suite's own database (dbfailover: Patroni)
        else:
            sim.start_pg()
        sim.start_cloudsim()
        sim.migrate_and_tokens()
        mod.run(sim, a, ck, fig)
    except CheckFailed as ex:
        ck.ok("suite ran to its end", False, str(ex))
    except KeyboardInterrupt:
        ck.ok("suite ran to its end", False, "interrupted")
    except Exception:  # noqa: BLE001 - a bug in the suite is a failure too, with its trace
        ck.ok("suite ran to its end", False, traceback.format_exc())
    finally:
        fig["wall_s"] = round(time.time() - t0, 1)
        sim.stop_all()
    out = checks.write_result(sim, a.suite, ck, fig)
    bad = ck.failed()
    log(f"suite {a.suite}: {len(ck.results) - len(bad)}/{len(ck.results)} checks passed;"
        f" figures {out['figures']}")
    for name, _, detail in bad:
        print(f"FAILED: {name}\n{detail}\n", file=sys.stderr)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
