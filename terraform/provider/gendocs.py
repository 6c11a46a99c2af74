"""gendocs: writes docs/ in the Terraform registry layout (index.md, resources/*.md,
data-sources/*.md) from the provider's own schema, as `terraform providers schema -json`
reports it, plus one example per page.  Usage: gendocs.py BUILD_DIR OUT_DIR
(`make provider-docs` writes docs/; tests/terraform/provider_cycle.py checks docs/ is current
and validates every example with terraform)."""
import json
import os
import subprocess
import sys
import tempfile

TOP = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))

EXAMPLES = {
    "provider": '''provider "fleet" {
  url   = "https://fleetd.internal.example.com" # or FLEET_URL
  token = var.fleetd_token                      # or FLEET_TOKEN

  request_timeout          = 30  # seconds per HTTP attempt
  max_retries              = 5   # transport errors, 429 and 5xx; Retry-After honoured
  iam_verification_timeout = 120 # how long fleet_cloud_iam retries a failed verification
}

variable "fleetd_token" {
  type      = string
  sensitive = true
}''',
    "fleet_environment": '''resource "fleet_environment" "prod" {
  name        = "prod"
  description = "production training and inference"
  dashboard_ingress = {
    host       = "ray.prod.example.com"
    tls_secret = "ray-dashboard-tls"
  }
}''',
    "fleet_priority_class": '''resource "fleet_priority_class" "production" {
  name        = "production"
  value       = 1000
  preempt     = true
  description = "may evict batch work"
}''',
    "fleet_queue": '''resource "fleet_queue" "training" {
  name                   = "training"
  environment            = fleet_environment.prod.name
  cohort                 = "gpu"
  weight                 = 3
  nominal_quota          = { "nvidia-h100-80gb" = 64 }
  borrowing_limit        = { "nvidia-h100-80gb" = 32 }
  default_priority_class = fleet_priority_class.production.name
  queueing_strategy      = "strict_fifo"
  capacity_preference = {
    order            = ["reservation", "on_demand", "spot"]
    min_run_seconds  = 600
    cooldown_seconds = 1800
    max_migrations   = 2
  }
}''',
    "fleet_flavor": '''resource "fleet_flavor" "gb300" {
  name       = "nvidia-gb300-nvl72"
  kind       = "gpu"
  memory_gib = 288
  rack_size  = 18 # nodes per NVLink domain: 18 trays of 4 GPUs
  machine_types = [{
    provider              = "gke"
    machine_type          = "a4x-maxgpu-4g-metal"
    accelerators_per_node = 4
    node_label = {
      key   = "cloud.google.com/gke-accelerator"
      value = "nvidia-gb300"
    }
  }]
}''',
    "fleet_team": '''resource "fleet_team" "ml" {
  name         = "ml"
  environments = [fleet_environment.prod.name]
  description  = "the ML platform team"
}

resource "fleet_queue" "ml" {
  name        = "ml-training"
  environment = fleet_environment.prod.name
  team        = fleet_team.ml.name
}

resource "fleet_api_token" "ml_portal" {
  name         = "ml-portal"
  role         = "submitter"
  environments = [fleet_environment.prod.name]
  team         = fleet_team.ml.name
}''',
    "fleet_api_token": '''resource "fleet_api_token" "ci" {
  name         = "ci-readonly"
  role         = "viewer"
  environments = [fleet_environment.prod.name]
}

output "ci_token" {
  value     = fleet_api_token.ci.secret
  sensitive = true
}''',
    "fleet_webhook": '''resource "fleet_webhook" "portal" {
  environment = fleet_environment.prod.name
  url         = "https://portal.example.com/hooks/fleet"
  types       = ["job.state_changed", "job.failed"]
}

output "portal_webhook_secret" {
  value     = fleet_webhook.portal.secret
  sensitive = true
}''',
    "fleet_budget": '''resource "fleet_budget" "training" {
  name         = "training-monthly"
  environment  = fleet_environment.prod.name
  scope        = "queue"
  queue        = fleet_queue.training.name
  amount_usd   = 20000
  soft_percent = 80
  hard         = true # refuse new submissions once spent; running jobs go on
}''',
    "fleet_cloud": '''resource "fleet_cloud" "gke_usc1" {
  name          = "prod-us-central1"
  environment   = fleet_environment.prod.name
  provider_type = "gke"
  region        = "us-central1"
  account       = { project = "acme-ml-prod" }
}

# The IAM documents come back typed, for the cloud's own provider resources:
output "control_plane_service_account" {
  value = fleet_cloud.gke_usc1.iam_required.control_plane_service_account.account_id
}''',
    "fleet_cloud_iam": '''# Phase 2: after the identities named in fleet_cloud.gke_usc1.iam_required exist
# (google_service_account and bindings; see terraform/modules/fleet-cloud-gcp).
resource "fleet_cloud_iam" "gke_usc1" {
  cloud_id           = fleet_cloud.gke_usc1.id
  control_plane_role = "fcp-prod-usc1@acme-ml-prod.iam.gserviceaccount.com"
  cluster_role       = "fnodes-prod-usc1@acme-ml-prod.iam.gserviceaccount.com"
}''',
    "fleet_cluster": '''variable "ray_a_token" {
  type      = string
  sensitive = true
  ephemeral = true # never in plan or state
}

resource "fleet_cluster" "ray_a" {
  cloud_id            = fleet_cloud_iam.gke_usc1.cloud_id # waits for the active cloud
  name                = "fleet-1a2b3c4d-ray-a"
  api_server          = "https://10.0.0.2"
  ca_cert             = file("ray-a-ca.pem")
  token_wo            = var.ray_a_token
  token_wo_version    = 1 # raise to send a new token
  provider_cluster_id = "projects/acme-ml-prod/locations/us-central1/clusters/fleet-1a2b3c4d-ray-a"
  batch_scheduler     = "kueue"
  labels              = { team = "ml" }
}''',
    "data.fleet_regions": '''data "fleet_regions" "gke" {
  provider_type = "gke"
}

output "gke_regions" {
  value = data.fleet_regions.gke.regions
}''',
    "data.fleet_cloud": '''data "fleet_cloud" "gke_usc1" {
  id = fleet_cloud_iam.gke_usc1.cloud_id
}

output "gke_usc1_state" {
  value = data.fleet_cloud.gke_usc1.state
}''',
    "data.fleet_capacity": '''data "fleet_capacity" "prod_h100" {
  environment = fleet_environment.prod.name
  flavor      = "nvidia-h100-80gb"
}

output "h100_free_now" {
  value = sum(concat([0], [for row in data.fleet_capacity.prod_h100.items : row.free_now]))
}''',
}

IMPORTS = {
    "fleet_environment": ("the environment's name", "prod"),
    "fleet_queue": ("the queue id", "3f0c6a9e-5a55-4d0e-9a4e-2f1f3e7c9b10"),
    "fleet_team": ("the team's name", "ml"),
    "fleet_priority_class": ("the priority class id", "5b1f0f38-0c44-4b8f-8d38-6f0b4d2f3a21"),
    "fleet_flavor": ("the flavor's name", "nvidia-gb300-nvl72"),
    "fleet_api_token": ("the token id (the secret is not returned again: it stays empty)",
                        "7c2d9a51-1e6b-4f4a-9b0e-3d5c8f1a2b34"),
    "fleet_webhook": ("the webhook id (the secret is not returned again: it stays empty)",
                      "6a1e2b3c-4d5e-4f60-8a7b-9c0d1e2f3a4b"),
    "fleet_budget": ("the budget id", "5b4a3c2d-1e0f-4a9b-8c7d-6e5f4a3b2c1d"),
    "fleet_cloud": ("the cloud id", "0d6a4f0e-8f4f-4a4b-9d55-1c2b3a4d5e6f"),
    "fleet_cloud_iam": ("the cloud id (of an active cloud)", "0d6a4f0e-8f4f-4a4b-9d55-1c2b3a4d5e6f"),
    "fleet_cluster": ("the cluster id. The token is write-only and fleetd never returns it: "
                      "token_wo_version is not known after an import, so the first apply "
                      "after it sends token_wo once more",
                      "9e8d7c6b-5a49-4382-b1a0-f9e8d7c6b5a4"),
}

NOTES = {
    "fleet_cloud": "Phase 1 of registration: fleetd creates the cloud `pending_iam` and answers its "
    "`external_id` and, in `iam_required`, the exact IAM documents (in the provider's grammar, "
    "scoped to this cloud) to create before `fleet_cloud_iam`. Members of `iam_required` that "
    "belong to another provider are null; AWS policy documents are JSON strings. "
    "`environment`, `provider_type`, `region` and `account` force a replacement (fleetd answers "
    "409 to an in-place change); the region is checked against the provider's catalog at plan time.",
    "fleet_cloud_iam": "Phase 2: fleetd verifies the named identities against the provider and "
    "locks the pair; the cloud becomes `active`. A failed verification is retried every 2 s for "
    "the provider's `iam_verification_timeout` (IAM is eventually consistent); then the apply "
    "fails with one error per failed check. A changed pair is rotated (audited). Destroying it "
    "changes nothing in fleetd: the pair ends with its cloud.",
    "fleet_cluster": "`token_wo` is a write-only attribute (Terraform 1.11): Terraform sends it to "
    "fleetd and never stores it in the plan or the state; fleetd seals it at rest. Since a "
    "write-only value cannot be compared between runs, raise `token_wo_version` to send a new one.",
    "fleet_team": "Every argument forces a replacement (teams cannot be edited); a team is "
    "deleted only once no queue and no unrevoked token names it (fleetd answers 409).",
    "fleet_api_token": "Every argument forces a replacement (tokens cannot be edited). `secret` is "
    "returned once, at creation, and stored in the state as a sensitive value.",
    "fleet_webhook": "Every argument forces a replacement (endpoints cannot be edited; a "
    "replacement starts from the events after its creation). `secret` is returned once, at "
    "creation, and stored in the state as a sensitive value; rotate it through the API "
    "(`POST /v1/webhooks/{id}/rotate-secret`).",
    "fleet_queue": "A change made through the API or fleetctl shows in the next plan as a diff "
    "of that field; a queue deleted outside Terraform is planned for re-creation.",
}


def type_str(t):
    if isinstance(t, str):
        return t
    if t[0] in ("list", "set", "map"):
        return f"{t[0]}({type_str(t[1])})"
    if t[0] == "object":
        return "object"
    return json.dumps(t)


def attr_lines(attrs, prefix=""):
    req, opt, ro = [], [], []
    for name, a in sorted(attrs.items()):
        if "nested_type" in a:
            kind = {"single": "object", "list": "list of objects"}.get(
                a["nested_type"].get("nesting_mode"), "object")
        else:
            kind = type_str(a.get("type", "string"))
        flags = []
        if prefix and a.get("required"):
            flags.append("required")
        elif prefix and a.get("optional"):
            flags.append("optional")
        if a.get("sensitive"):
            flags.append("sensitive")
        if a.get("write_only"):
            flags.append("write-only")
        line = f"- `{prefix}{name}` ({kind}{', ' + ', '.join(flags) if flags else ''}) " \
               f"{a.get('description', '')}"
        if a.get("required"):
            req.append(line)
        elif a.get("optional"):
            opt.append(line)
        else:
            ro.append(line)
        if "nested_type" in a and prefix.count(".") < 2:
            sub_req, sub_opt, sub_ro = attr_lines(a["nested_type"]["attributes"], f"{prefix}{name}.")
            (req if a.get("required") else opt if a.get("optional") else ro).extend(
                sub_req + sub_opt + sub_ro)
    return req, opt, ro


def page(kind, name, schema):
    block = schema["block"]
    short = name.replace("fleet_", "")
    key = name if kind == "resource" else f"data.{name}"
    label = "Resource" if kind == "resource" else "Data Source"
    out = [f"---\npage_title: \"{name} {label} - fleet\"\nsubcategory: \"\"\ndescription: |-\n"
           f"  {block.get('description', '')}\n---\n",
           f"# {name} ({label})\n", block.get("description", "") + "\n"]
    if name in NOTES and kind == "resource":
        out.append(NOTES[name] + "\n")
    out.append("## Example Usage\n\n```terraform\n" + EXAMPLES[key] + "\n```\n")
    req, opt, ro = attr_lines(block.get("attributes", {}))
    out.append("## Schema\n")
    if req:
        out.append("### Required\n\n" + "\n".join(req) + "\n")
    if opt:
        out.append("### Optional\n\n" + "\n".join(opt) + "\n")
    if ro:
        out.append("### Read-Only\n\n" + "\n".join(ro) + "\n")
    if kind == "resource" and name in IMPORTS:
        what, ex = IMPORTS[name]
        rname = EXAMPLES[key].split('"')[3]
        out.append(f"## Import\n\nImport by {what}:\n\n```shell\n"
                   f"terraform import {name}.{rname} {ex}\n```\n")
    return short, "\n".join(out)


def schema_json(build):
    with tempfile.TemporaryDirectory() as tmp:
        mirror = os.path.join(tmp, "mirror")
        subprocess.run(["bash", os.path.join(TOP, "terraform/provider/install.sh"), build, mirror],
                       check=True, capture_output=True)
        with open(os.path.join(tmp, "main.tf"), "w") as f:
            f.write('terraform {\n  required_providers {\n    fleet = { source = "fleetd/fleet" }\n'
                    '  }\n}\n')
        env = dict(os.environ, TF_CLI_CONFIG_FILE=os.path.join(mirror, "terraformrc"),
                   CHECKPOINT_DISABLE="1", ASAN_OPTIONS="detect_leaks=0")
        subprocess.run(["terraform", "init", "-input=false", "-no-color"], cwd=tmp, env=env,
                       check=True, capture_output=True)
        r = subprocess.run(["terraform", "providers", "schema", "-json"], cwd=tmp, env=env,
                           check=True, capture_output=True, text=True)
        return json.loads(r.stdout)["provider_schemas"]["registry.terraform.io/fleetd/fleet"]


def index_page(schema):
    req, opt, ro = attr_lines(schema["provider"]["block"]["attributes"])
    res = "\n".join(f"- [{n}](resources/{n.replace('fleet_', '')}.md)"
                    for n in sorted(schema["resource_schemas"]))
    ds = "\n".join(f"- [{n}](data-sources/{n.replace('fleet_', '')}.md)"
                   for n in sorted(schema["data_source_schemas"]))
    return f'''---
page_title: "fleet Provider"
description: |-
  Manage fleetd (the Ray fleet control plane) with Terraform.
---

# fleet Provider

terraform-provider-fleet manages [fleetd](../README.md): environments, clouds (two-phase
registration with their scoped IAM pair), member clusters, queues, priority classes and API
tokens. It speaks Terraform's plugin protocol 6 and needs Terraform 1.11 or later (write-only
attributes). Build it and install it into a local filesystem mirror with `make provider`; then
point `TF_CLI_CONFIG_FILE` at `build/tf-mirror/terraformrc` and `terraform init` installs
`fleetd/fleet` without a registry.

```terraform
terraform {{
  required_providers {{
    fleet = {{ source = "fleetd/fleet" }}
  }}
}}
```

Every fleetd rule that can be checked without the server is checked at plan time, naming the
attribute (names, providers, regions per provider, account fields per provider, quantities,
weights, roles). Calls are retried on transport errors, 429 and 5xx with backoff, honouring
Retry-After; creates carry an Idempotency-Key so a retried create is never made twice.

## Example Usage

```terraform
{EXAMPLES["provider"]}
```

## Schema

### Optional

{chr(10).join(opt)}

## Resources

{res}

## Data Sources

{ds}
'''


def main():
    build, out = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
    schema = schema_json(build)
    os.makedirs(os.path.join(out, "resources"), exist_ok=True)
    os.makedirs(os.path.join(out, "data-sources"), exist_ok=True)
    with open(os.path.join(out, "index.md"), "w") as f:
        f.write(index_page(schema))
    for kind, tab, sub in (("resource", "resource_schemas", "resources"),
                           ("data", "data_source_schemas", "data-sources")):
        for name, s in sorted(schema[tab].items()):
            short, text = page(kind, name, s)
            with open(os.path.join(out, sub, short + ".md"), "w") as f:
                f.write(text)
    print(f"gendocs: wrote {out}")


if __name__ == "__main__":
    main()
