#!/usr/bin/env python3
"""demo.py STATE_DIR — registers cloudsim's demo fleet with a running fleetd, the way a
platform team would: environments, clouds (phase 1), the identities iam.required asks for
(done here through cloudsim's /_sim/iam, as Terraform would against the real providers),
phase 2, member clusters, priority classes and queues.  FLEET_URL and FLEET_TOKEN name
fleetd.  Idempotent enough to run twice: existing objects are reused."""
import json
import os
import sys

import fleetapi

state = sys.argv[1]
fleet = os.environ["FLEET_URL"].rstrip("/")
token = os.environ["FLEET_TOKEN"]
sim = json.load(open(os.path.join(state, "clusters.json")))
ca = open(os.path.join(state, "ca.pem")).read()
fleetd_sa = json.load(open(os.path.join(state, "gcp-fleetd-key.json")))["client_email"]


def call(method, url, body=None, auth=True):
    return fleetapi.call(method, url, token if auth else None, body)


def must(status, body, what, ok=(200, 201, 202, 204)):
    if status not in ok:
        print(f"{what}: {status} {body}", file=sys.stderr)
        sys.exit(1)
    return body


def account_of(c):
    if c["provider"] == "gke":
        return {"project": c["project"]}
    if c["provider"] == "aks":
        return {"subscription_id": c["subscription"], "tenant_id": c["iam"]["control_plane"]["tenant_id"],
                "resource_group": c["resource_group"]}
    return {"account_id": c["account"]}


def identities(c):
    iam = c["iam"]
    if c["provider"] == "gke":
        return iam["control_plane"]["service_account"], iam["cluster_role"]["service_account"]
    if c["provider"] == "aks":
        return iam["control_plane"]["resource_id"], iam["cluster_role"]["resource_id"]
    return iam["control_plane"]["role_arn"], iam["cluster_role"]["role_arn"]


def prepare_identities(c, cloud):
    """What Terraform does between phase 1 and phase 2, from iam.required."""
    cid, ext = cloud["id"], cloud["external_id"]
    tags = {"fleet.io/cloud-id": cid, "fleet.io/environment": cloud["environment"]}
    cp, cl = identities(c)
    if c["provider"] == "gke":
        must(*call("POST", sim["cloudsim_url"] + "/_sim/iam", {"provider": "gcp", "service_account": cp,
             "description": f"fleet.io/cloud-id={cid}", "token_creators": [fleetd_sa]}, False), "sim iam")
        must(*call("POST", sim["cloudsim_url"] + "/_sim/iam", {"provider": "gcp", "service_account": cl,
             "description": f"fleet.io/cloud-id={cid}"}, False), "sim iam")
    elif c["provider"] == "aks":
        # azurerm_federated_identity_credential on the control-plane identity, exactly as
        # iam.required names it (fleetd's tenant as issuer, its service principal as subject)
        fics = cloud["iam"]["required"]["control_plane_identity"]["federated_identity_credentials"]
        must(*call("POST", sim["cloudsim_url"] + "/_sim/iam", {"provider": "azure", "resource_id": cp,
             "tags": tags, "federated_identity_credentials": fics}, False), "sim iam")
        must(*call("POST", sim["cloudsim_url"] + "/_sim/iam", {"provider": "azure", "resource_id": cl,
             "tags": tags}, False), "sim iam")
    else:
        must(*call("POST", sim["cloudsim_url"] + "/_sim/iam", {"provider": "aws", "role_arn": cp,
             "external_id": ext, "tags": tags}, False), "sim iam")
        must(*call("POST", sim["cloudsim_url"] + "/_sim/iam", {"provider": "aws", "role_arn": cl,
             "tags": tags}, False), "sim iam")
    return cp, cl


def find(path, key, value):
    st, body = call("GET", fleet + path + ("&" if "?" in path else "?") + "limit=500")
    for item in (body or {}).get("items", []):
        if item.get(key) == value:
            return item
    return None


envs = sorted({c["environment"] for c in sim["clusters"]})
for env in envs:
    st, body = call("POST", fleet + "/v1/environments", {"name": env, "description": f"{env} (demo)"})
    must(st, body, "environment", ok=(201, 409))

clouds = {}
for c in sim["clusters"]:
    key = (c["environment"], c["provider"], c["region"])
    if key not in clouds:
        name = f"{c['environment']}-{c['provider']}-{c['region']}"
        st, cloud = call("POST", fleet + "/v1/clouds", {"name": name, "environment": c["environment"],
                         "provider": c["provider"], "region": c["region"], "account": account_of(c)})
        if st == 409:
            cloud = find(f"/v1/clouds?environment={c['environment']}", "name", name)
        else:
            must(st, cloud, f"cloud {name}")
        if cloud["state"] != "active":
            cp, cl = prepare_identities(c, cloud)
            st, body = call("POST", fleet + f"/v1/clouds/{cloud['id']}/iam",
                            {"control_plane_role": cp, "cluster_role": cl})
            if st != 200:
                print(f"phase 2 of {name}: {st} {body}", file=sys.stderr)
                clouds[key] = None
                continue
            cloud = body
        clouds[key] = cloud
        print(f"cloud {name}: {cloud['state']}")
    cloud = clouds[key]
    if cloud is None:
        continue
    st, body = call("POST", fleet + f"/v1/clouds/{cloud['id']}/clusters", {
        "name": c["name"], "api_server": c["api_server"], "ca_cert": ca,
        "credentials": {"token": c["token"]}, "provider_cluster_id": c["provider_cluster_id"],
        "labels": {"demo": "true"}, "batch_scheduler": c.get("batch_scheduler", "none")})
    if st not in (201, 409):
        print(f"cluster {c['name']}: {st} {body}", file=sys.stderr)
    else:
        print(f"cluster {c['name']}: {'registered' if st == 201 else 'exists'}")

for pc in ({"name": "low", "value": 10}, {"name": "default", "value": 100},
           {"name": "high", "value": 1000, "preempt": True, "description": "may preempt lower priorities"}):
    must(*call("POST", fleet + "/v1/priority-classes", pc), "priority class", ok=(201, 409))
for env in envs:
    for q, w in (("research", 1.0), ("prod-training", 2.0)):
        body = {"name": q, "environment": env, "cohort": "ml", "weight": w,
                "nominal_quota": {"nvidia-h100-80gb": 16, "nvidia-a100-80gb": 8, "nvidia-l4": 8,
                                  "tpu-v5p": 16, "nvidia-gb200": 144},
                "default_priority_class": "default"}
        must(*call("POST", fleet + "/v1/queues", body), "queue", ok=(201, 409))
# README "Spot to on-demand on `make run`": a queue that prefers on-demand A100s and takes spot
# while on-demand is full; dev-gke-usc1-moves (one on-demand and one spot a2-highgpu-8g node)
# is the only cluster of dev with that flavor.
if "dev" in envs:
    body = {"name": "moves", "environment": "dev", "weight": 1.0,
            "nominal_quota": {"nvidia-a100-40gb": 32}, "default_priority_class": "default",
            "capacity_preference": {"order": ["on_demand", "spot"], "min_run_seconds": 30,
                                    "cooldown_seconds": 600, "max_migrations": 2}}
    must(*call("POST", fleet + "/v1/queues", body), "queue", ok=(201, 409))
print("demo fleet registered")

# A kubeconfig with one context per demo member cluster, so that kubectl can look at what
# fleetd applied (`kubectl --kubeconfig .fleet/cloudsim/kubeconfig --context NAME ...`).
# JSON is valid YAML; the file holds the demo clusters' bearer tokens, hence mode 0600.
kc = {"apiVersion": "v1", "kind": "Config", "preferences": {},
      "clusters": [{"name": c["name"], "cluster": {"server": c["api_server"],
                    "certificate-authority": os.path.abspath(os.path.join(state, "ca.pem"))}}
                   for c in sim["clusters"]],
      "users": [{"name": c["name"], "user": {"token": c["token"]}} for c in sim["clusters"]],
      "contexts": [{"name": c["name"], "context": {"cluster": c["name"], "user": c["name"]}}
                   for c in sim["clusters"]],
      "current-context": sim["clusters"][0]["name"] if sim["clusters"] else ""}
path = os.path.join(state, "kubeconfig")
fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
with os.fdopen(fd, "w") as f:
    json.dump(kc, f, indent=1)
print(f"kubeconfig for the member clusters: {path}")
