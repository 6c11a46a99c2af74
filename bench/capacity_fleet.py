#!/usr/bin/env python3
"""capacity_fleet.py gen OUT [--clouds 100] [--clusters 300] [--envs 4] [--latency-ms 50]
capacity_fleet.py register STATE_DIR ENV_PREFIX [CLUSTER]

gen writes a cloudsim fleet file for bench/capacity.sh: `clouds` (environment, provider, region)
triples spread over every region fleetd's catalog knows (regions/catalog.c: 11 GKE, 10 AKS,
6 HyperPod = 27 real regions) and over `envs` environments, since fleetd allows one cloud per
(environment, provider, region); `clusters` member clusters dealt round-robin over them; plus
one solo cluster per provider in environment "solo" (registered alone to time the slowest
single-cluster sequence).  Every provider and Kubernetes call gets latency_ms of added
latency through a fleet-file fault.  Generated fleets live in a temp dir, never in git.

register is scripts/demo.py's flow (environments, phase 1, the identities through
/_sim/iam, phase 2, member clusters) for the clusters of cloudsim's STATE_DIR whose
environment starts with ENV_PREFIX (or only CLUSTER), eight clouds at a time.  FLEET_URL
and FLEET_TOKEN name fleetd."""
import argparse
import json
import os
import sys
from concurrent.futures import ThreadPoolExecutor

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "scripts"))
import fleetapi  # noqa: E402  (scripts/fleetapi.py)

# regions/catalog.c, with the accelerator pool each region offers (cloudsim machine types)
REGIONS = {
    "gke": [("us-central1", "h100"), ("us-east1", "l4"), ("us-east4", "h100"),
            ("us-east5", "h100"), ("us-south1", "h100"), ("us-west1", "h100"),
            ("us-west4", "h100"), ("europe-west1", "h100"), ("europe-west4", "h100"),
            ("asia-northeast1", "h100"), ("asia-southeast1", "h100")],
    "aks": [("eastus", "h100"), ("eastus2", "h100"), ("westus2", "a100"), ("westus3", "h100"),
            ("southcentralus", "h100"), ("northeurope", "a100"), ("westeurope", "a100"),
            ("swedencentral", "h100"), ("uksouth", "h100"), ("japaneast", "h100")],
    "hyperpod": [("us-east-1", "h100"), ("us-east-2", "h100"), ("us-west-2", "h100"),
                 ("eu-west-1", "l4"), ("eu-central-1", "l4"), ("ap-northeast-1", "h100")],
}
MACHINES = {
    "gke": {"system": "e2-standard-8", "h100": ("a3-highgpu-8g", 88.49),
            "a100": ("a2-ultragpu-8g", 40.22), "l4": ("g2-standard-48", 4.0)},
    "aks": {"system": "Standard_D8s_v5", "h100": ("Standard_ND96isr_H100_v5", 98.32),
            "a100": ("Standard_ND96amsr_A100_v4", 32.77), "l4": None},
    "hyperpod": {"system": "ml.m5.4xlarge", "h100": ("ml.p5.48xlarge", 98.32),
                 "a100": ("ml.p4de.24xlarge", 40.96), "l4": ("ml.g6.48xlarge", 13.35)},
}
SHORT = {"gke": "g", "aks": "a", "hyperpod": "h"}


def pools(provider, accel, i):
    """A system pool and one accelerator pool of 4 nodes (2 racks), some of it busy, that
    may grow to 8; every third cluster also has a spot pool."""
    m = MACHINES[provider]
    mt, price = m[accel]
    out = [{"name": "system", "machine_type": m["system"], "nodes": 1},
           {"name": accel, "machine_type": mt, "nodes": 4, "min": 0, "max": 8,
            "nodes_per_rack": 2, "price_per_hour": price, "busy": [8, 4, 0, 0][: 1 + i % 3]}]
    if i % 3 == 0:
        out.append({"name": accel + "-spot", "machine_type": mt, "nodes": 2, "max": 4,
                    "spot": True, "nodes_per_rack": 2, "price_per_hour": round(price * 0.4, 2)})
    return out


def gen(a):
    triples = [(p, r, acc) for p in ("gke", "aks", "hyperpod") for r, acc in REGIONS[p]]
    if a.clouds > len(triples) * a.envs:
        sys.exit("at most %d clouds with %d environments" % (len(triples) * a.envs, a.envs))
    # interleave providers so every environment gets a mix
    triples.sort(key=lambda t: ([x for x in REGIONS[t[0]]].index((t[1], t[2])), t[0]))
    clouds = []
    for k in range(a.clouds):
        env = k % a.envs
        t = triples[(k // a.envs + 7 * env) % len(triples)]
        clouds.append(("bench%d" % env,) + t)
    if len(set(clouds)) != len(clouds):
        sys.exit("duplicate cloud; choose other counts")
    envs = sorted({c[0] for c in clouds}) + ["solo"]
    projects = {e: "fleet-%s" % e for e in envs}
    subs = {e: "5a1e0c2b-7d3f-4e59-9a61-1c0ffee%05d" % i for i, e in enumerate(envs)}
    accounts = {e: "4444444444%02d" % i for i, e in enumerate(envs)}
    gquota = {r: {"NVIDIA_H100_GPUS": 4096, "NVIDIA_L4_GPUS": 4096,
                  "NVIDIA_A100_80GB_GPUS": 4096, "CPUS": 100000} for r, _ in REGIONS["gke"]}
    aquota = {r: {"standardNDSH100v5Family": 100000, "standardNDAMSv4_A100Family": 100000,
                  "standardDSv5Family": 100000} for r, _ in REGIONS["aks"]}
    fleet = {
        "sim": {"page_size": 50, "pod_start_s": 5, "job_run_s": 120, "autoscale_delay_s": 60,
                "token_ttl_s": 3600, "preempt_notice_s": 30},
        "fleetd": {"gcp": {"project": "fleet-admin",
                           "email": "fleetd@fleet-admin.iam.gserviceaccount.com"},
                   "aws": {"account": "111111111111", "user": "fleetd"},
                   "azure": {"tenant": "8d2f4c1a-5b6e-4f70-9a81-0c0ffee0f1ee"}},
        "gcp": {"projects": [{"id": projects[e], "quotas": gquota} for e in envs]},
        "azure": {"subscriptions": [{"id": subs[e], "quotas": aquota} for e in envs]},
        "faults": [{"latency_ms": a.latency_ms}] if a.latency_ms > 0 else [],
        "clusters": [],
    }

    def cluster(name, env, provider, region, accel, i):
        c = {"name": name, "provider": provider, "environment": env, "region": region,
             "batch_scheduler": "kueue", "pools": pools(provider, accel, i)}
        if provider == "gke":
            c["project"] = projects[env]
        elif provider == "aks":
            c["subscription"] = subs[env]
            c["resource_group"] = "rg-" + env
        else:
            c["account"] = accounts[env]
        return c

    for i in range(a.clusters):
        env, prov, region, accel = clouds[i % len(clouds)]
        name = "%s-%s-%s-%d" % (env, SHORT[prov], region, i // len(clouds))
        fleet["clusters"].append(cluster(name, env, prov, region, accel, i))
    # solo clusters: the same shape as the biggest bench clusters (i % 3 == 0: spot pool)
    for prov, region in (("gke", "us-central1"), ("aks", "eastus"), ("hyperpod", "us-west-2")):
        fleet["clusters"].append(cluster("solo-" + prov, "solo", prov, region, "h100", 0))
    with open(a.out, "w") as f:
        json.dump(fleet, f, indent=1)
    print("%d clouds in %d environments, %d clusters (+3 solo), latency %d ms" % (
        len(clouds), a.envs, a.clusters, a.latency_ms))


# ---- register: demo.py's flow against a running fleetd

class Reg:
    def __init__(self, state):
        self.fleet = os.environ["FLEET_URL"].rstrip("/")
        self.token = os.environ["FLEET_TOKEN"]
        self.sim = json.load(open(os.path.join(state, "clusters.json")))
        self.ca = open(os.path.join(state, "ca.pem")).read()
        self.fleetd_sa = json.load(open(os.path.join(state, "gcp-fleetd-key.json")))[
            "client_email"]

    def call(self, method, url, body=None, auth=True):
        return fleetapi.call(method, url, self.token if auth else None, body, timeout=120)

    @staticmethod
    def must(st, body, what, ok=(200, 201)):
        if st not in ok:
            raise SystemExit("%s: %s %s" % (what, st, body))
        return body

    def simiam(self, body):
        self.must(*self.call("POST", self.sim["cloudsim_url"] + "/_sim/iam", body, False),
                  "sim iam")

    @staticmethod
    def account_of(c):
        if c["provider"] == "gke":
            return {"project": c["project"]}
        if c["provider"] == "aks":
            return {"subscription_id": c["subscription"], "tenant_id":
                    c["iam"]["control_plane"]["tenant_id"], "resource_group": c["resource_group"]}
        return {"account_id": c["account"]}

    @staticmethod
    def identities(c):
        iam = c["iam"]
        if c["provider"] == "gke":
            return (iam["control_plane"]["service_account"],
                    iam["cluster_role"]["service_account"])
        if c["provider"] == "aks":
            return iam["control_plane"]["resource_id"], iam["cluster_role"]["resource_id"]
        return iam["control_plane"]["role_arn"], iam["cluster_role"]["role_arn"]

    def prepare(self, c, cloud):
        """What Terraform does between phase 1 and phase 2, from iam.required."""
        cid, ext = cloud["id"], cloud["external_id"]
        tags = {"fleet.io/cloud-id": cid, "fleet.io/environment": cloud["environment"]}
        cp, cl = self.identities(c)
        if c["provider"] == "gke":
            self.simiam({"provider": "gcp", "service_account": cp, "description":
                         "fleet.io/cloud-id=" + cid, "token_creators": [self.fleetd_sa]})
            self.simiam({"provider": "gcp", "service_account": cl,
                         "description": "fleet.io/cloud-id=" + cid})
        elif c["provider"] == "aks":
            # the federated credential on the control-plane identity, as iam.required names it
            fics = cloud["iam"]["required"]["control_plane_identity"][
                "federated_identity_credentials"]
            self.simiam({"provider": "azure", "resource_id": cp, "tags": tags,
                         "federated_identity_credentials": fics})
            self.simiam({"provider": "azure", "resource_id": cl, "tags": tags})
        else:
            self.simiam({"provider": "aws", "role_arn": cp, "external_id": ext, "tags": tags})
            self.simiam({"provider": "aws", "role_arn": cl, "tags": tags})
        return cp, cl

    def one_cloud(self, members):
        c = members[0]
        name = "%s-%s-%s" % (c["environment"], c["provider"], c["region"])
        cloud = self.must(*self.call("POST", self.fleet + "/v1/clouds", {
            "name": name, "environment": c["environment"], "provider": c["provider"],
            "region": c["region"], "account": self.account_of(c)}), "cloud " + name)
        cp, cl = self.prepare(c, cloud)
        st, body = self.call("POST", self.fleet + "/v1/clouds/%s/iam" % cloud["id"],
                             {"control_plane_role": cp, "cluster_role": cl})
        if st != 200:
            return name, "phase 2: %s %s" % (st, body), 0
        for m in members:
            self.must(*self.call("POST", self.fleet + "/v1/clouds/%s/clusters" % cloud["id"], {
                "name": m["name"], "api_server": m["api_server"], "ca_cert": self.ca,
                "credentials": {"token": m["token"]},
                "provider_cluster_id": m["provider_cluster_id"],
                "batch_scheduler": m.get("batch_scheduler", "none")}), "cluster " + m["name"])
        return name, "active", len(members)


def register(a):
    r = Reg(a.state)
    clouds = {}
    for c in r.sim["clusters"]:
        if c["environment"].startswith(a.prefix) and a.cluster in (None, c["name"]):
            clouds.setdefault((c["environment"], c["provider"], c["region"]), []).append(c)
    for env in sorted({k[0] for k in clouds}):
        r.must(*r.call("POST", r.fleet + "/v1/environments", {"name": env}), "environment",
               ok=(201, 409))
    failed, total = [], 0
    with ThreadPoolExecutor(8) as ex:
        for name, st, n in ex.map(r.one_cloud, clouds.values()):
            total += n
            if st != "active":
                failed.append((name, st))
    for name, why in failed:
        print("cloud %s not registered: %s" % (name, why[:300]), file=sys.stderr)
    print("%d clouds, %d active, %d clusters registered" % (
        len(clouds), len(clouds) - len(failed), total))


def main():
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="cmd", required=True)
    g = sub.add_parser("gen")
    g.add_argument("out")
    g.add_argument("--clouds", type=int, default=100)
    g.add_argument("--clusters", type=int, default=300)
    g.add_argument("--envs", type=int, default=4)
    g.add_argument("--latency-ms", type=int, default=50)
    g.set_defaults(fn=gen)
    r = sub.add_parser("register")
    r.add_argument("state")
    r.add_argument("prefix")
    r.add_argument("cluster", nargs="?")
    r.set_defaults(fn=register)
    a = ap.parse_args()
    a.fn(a)


if __name__ == "__main__":
    main()
