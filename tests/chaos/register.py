"""register: cloudsim's fleet into fleetd as a platform team would (scripts/demo.py's flow):
environment, clouds (phase 1), identities through cloudsim's /_sim/iam (what Terraform does
between the phases), phase 2, member clusters with their credentials, priority classes and
two queues in one cohort.  A cloud whose phase 2 fails is activated by SQL instead, and the
suite's report says so."""
import json

from lib import BORROW, ENV, QUOTA, CheckFailed, log

STOCKOUT_S = 30


def _account(c):
    if c["provider"] == "gke":
        return {"project": c["project"]}
    if c["provider"] == "aks":
        return {"subscription_id": c["subscription"],
                "tenant_id": c["iam"]["control_plane"].get("tenant_id", c.get("tenant")),
                "resource_group": c["resource_group"]}
    return {"account_id": c["account"]}


def _identities(c):
    iam = c["iam"]
    if c["provider"] == "gke":
        return iam["control_plane"]["service_account"], iam["cluster_role"]["service_account"]
    if c["provider"] == "aks":
        cp = iam["control_plane"]
        return cp.get("resource_id") or cp.get("client_id"), iam["cluster_role"]["resource_id"]
    return iam["control_plane"]["role_arn"], iam["cluster_role"]["role_arn"]


def _prepare(sim, c, cloud):
    cid, ext = cloud["id"], cloud["external_id"]
    tags = {"fleet.io/cloud-id": cid, "fleet.io/environment": cloud["environment"]}
    cp, cl = _identities(c)
    fleetd_sa = json.load(open(sim.fleetd_env["FLEETD_GCP_KEY_FILE"]))["client_email"]
    if c["provider"] == "gke":
        sim.sim("POST", "/_sim/iam", {"provider": "gcp", "service_account": cp,
                                      "description": f"fleet.io/cloud-id={cid}",
                                      "token_creators": [fleetd_sa]})
        sim.sim("POST", "/_sim/iam", {"provider": "gcp", "service_account": cl,
                                      "description": f"fleet.io/cloud-id={cid}"})
    elif c["provider"] == "aks":
        for rid in (cp, cl):
            if rid and rid.startswith("/subscriptions/"):
                sim.sim("POST", "/_sim/iam", {"provider": "azure", "resource_id": rid, "tags": tags})
    else:
        sim.sim("POST", "/_sim/iam", {"provider": "aws", "role_arn": cp, "external_id": ext,
                                      "tags": tags})
        sim.sim("POST", "/_sim/iam", {"provider": "aws", "role_arn": cl, "tags": tags})
    return cp, cl


def register(sim):
    sim.api("POST", "/v1/environments", {"name": ENV, "description": "chaos"}, ok=(201, 409))
    clouds = {}
    for c in sim.clusters:
        key = (c["provider"], c["region"])
        if key not in clouds:
            name = f"{ENV}-{c['provider']}-{c['region']}"
            cloud = sim.api("POST", "/v1/clouds", {"name": name, "environment": ENV,
                                                   "provider": c["provider"], "region": c["region"],
                                                   "account": _account(c)})
            cp, cl = _prepare(sim, c, cloud)
            st, _, text = sim.http("POST", sim.any_replica().url + f"/v1/clouds/{cloud['id']}/iam",
                                   {"control_plane_role": cp, "cluster_role": cl}, timeout=60)
            if st != 200:
                log(f"phase 2 of {name} answered {st} {text[:200]}; activating it by SQL")
                sim.registration = "sql fallback for some clouds"
                sim.sql(f"UPDATE clouds SET state = 'active' WHERE id = '{cloud['id']}'")
                sim.sql(f"INSERT INTO iam_pairs (cloud_id, control_plane_role, cluster_role) VALUES"
                        f" ('{cloud['id']}', '{cp}', '{cl}') ON CONFLICT DO NOTHING")
            clouds[key] = cloud
        cloud = clouds[key]
        out = sim.api("POST", f"/v1/clouds/{cloud['id']}/clusters", {
            "name": c["name"], "api_server": c["api_server"], "ca_cert": sim.ca,
            "credentials": {"token": c["token"]}, "provider_cluster_id": c["provider_cluster_id"],
            "batch_scheduler": c.get("batch_scheduler", "none")})
        sim.cluster_ids[c["name"]] = out["id"]
    # a short stockout timeout, so that withdrawals happen (and are bounded) within a run
    sim.sql(f"UPDATE clusters SET stockout_timeout_s = {STOCKOUT_S}")
    sim.api("POST", "/v1/priority-classes", {"name": "normal", "value": 100}, ok=(201, 409))
    for q, quota in QUOTA.items():
        sim.api("POST", "/v1/queues", {"name": q, "environment": ENV, "cohort": "ml",
                                       "weight": 1.0, "nominal_quota": quota,
                                       "borrowing_limit": BORROW,
                                       "default_priority_class": "normal"}, ok=(201, 409))
    log("registered", len(sim.cluster_ids), "clusters,", sim.registration)


def wait_capacity(sim, timeout=60):
    """Until the poller has written capacity rows for every cluster (the scheduler has
    nothing to place on before)."""
    import time  # noqa: PLC0415
    t0 = time.time()
    n = 0
    while time.time() - t0 < timeout:
        n = int(sim.sql1("SELECT count(DISTINCT cluster_id) FROM capacity WHERE accel_per_node > 0"))
        if n >= len([c for c in sim.clusters]):
            return time.time() - t0
        time.sleep(0.5)
    raise CheckFailed(f"the poller wrote accelerator capacity for {n} of {len(sim.clusters)} clusters"
                      f" in {timeout}s; see {sim.dir}/fleetd-*.log")


def setup_fleet(sim, replicas, workers="scheduler,dispatch,status,poller,sweep"):
    """Starts the replicas, registers the fleet, waits for the first capacity snapshot."""
    for i in range(replicas):
        sim.start_fleetd(f"r{i}", workers)
    register(sim)
    wait_capacity(sim)
