#!/usr/bin/env python3
"""summary.py OUT — the figures of every result-*.json under OUT as a Markdown table (the
form bench/RESULTS.md records), then each failed check by name."""
import glob
import json
import os
import sys

KEYS = [("jobs", "jobs"), ("acked", "acked (201)"), ("lost", "lost"),
        ("double_applies", "double applies"), ("kills", "kills survived"),
        ("leader_kills", "leader kills"), ("restart_s_max", "restart to healthy, max s"),
        ("failover_s_max", "leader failover, max s"), ("failover_s_median", "failover, median s"),
        ("db_restarts", "db restarts"), ("db_outages", "db outages"),
        ("ready_after_db_s_max", "/readyz 200 after db back, max s"),
        ("db_failovers", "db failovers"), ("patroni_failover_s", "new primary after loss, s"),
        ("fleetd_serving_again_s", "fleetd serving again after loss, s"),
        ("settle_s", "settle after load, s"), ("longest_transitional_s", "longest transitional, s"),
        ("wall_s", "wall, s")]


def main():
    out = sys.argv[1]
    res = []
    for f in sorted(glob.glob(os.path.join(out, "result-*.json"))):
        res.append(json.load(open(f)))
    if not res:
        print("no results")
        return
    print("| suite | checks | " + " | ".join(label for k, label in KEYS) + " |")
    print("|---|---|" + "---|" * len(KEYS))
    for r in res:
        fig = r["figures"]
        print(f"| {r['suite']} | {r['checks'] - len(r['failed'])}/{r['checks']} | " +
              " | ".join(str(fig.get(k, "")) for k, _ in KEYS) + " |")
    for r in res:
        for name, detail in r["failed"]:
            print(f"- {r['suite']}: FAILED {name}: {detail.splitlines()[0][:300] if detail else ''}")
        if "partition" in r["figures"]:
            print(f"- {r['suite']}: partitions {r['figures']['partition']}")


if __name__ == "__main__":
    main()
