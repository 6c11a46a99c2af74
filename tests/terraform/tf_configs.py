"""tf_configs: what tests/terraform/provider_cycle.py runs terraform with — the TF runner (a
scratch working directory, exit codes checked, plans that must be clean) and the
configurations it applies: the main one (three clouds through both registration phases, a
member cluster, queue, priority class, token; v holds what changes between steps), the
plan-time errors, a phase 2 that must fail, and the provider's CA settings."""
import json
import os
import subprocess
import time

from lib import CheckFailed, log

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.abspath(os.path.join(HERE, "..", ".."))
ENV = "tfprod"
H100 = "nvidia-h100-80gb"


class TF:
    def __init__(self, workdir, env):
        self.dir = workdir
        self.env = env
        os.makedirs(workdir, exist_ok=True)

    def write(self, text, name="main.tf"):
        with open(os.path.join(self.dir, name), "w") as f:
            f.write(text)

    def run(self, *args, ok=(0,), timeout=120):
        t0 = time.time()
        if args[0] == "version":
            cmd = ["terraform", *args]
        elif args[0] == "fmt":      # flags before the path
            cmd = ["terraform", "fmt", "-no-color", *args[1:]]
        else:
            cmd = ["terraform", *args, "-no-color"]
        r = subprocess.run(cmd, cwd=self.dir, env=self.env, capture_output=True, text=True,
                           timeout=timeout)
        log(f"terraform {' '.join(args)} -> {r.returncode} ({time.time() - t0:.1f}s)")
        if r.returncode not in ok:
            raise CheckFailed(f"terraform {' '.join(args)} exited {r.returncode}:\n"
                              f"{r.stdout[-4000:]}\n{r.stderr[-4000:]}")
        return r

    def plan_clean(self, what):
        r = self.run("plan", "-input=false", "-detailed-exitcode", ok=(0, 2))
        if r.returncode != 0:
            raise CheckFailed(f"{what}: plan is not clean:\n{r.stdout[-4000:]}")

    def state(self):
        return json.load(open(os.path.join(self.dir, "terraform.tfstate")))


def main_tf(sim, v):
    """The configuration; v holds what changes between steps."""
    gke = next(c for c in sim.clusters if c["provider"] == "gke")
    aks = next(c for c in sim.clusters if c["provider"] == "aks")
    hp = next(c for c in sim.clusters if c["provider"] == "hyperpod")
    fleetd_sa = json.load(open(sim.fleetd_env["FLEETD_GCP_KEY_FILE"]))["client_email"]
    aks_cp = aks["iam"]["control_plane"]
    sim_iam = f"{sim.sim_url}/_sim/iam"
    extra = v.get("extra", "")
    return f'''
terraform {{
  required_providers {{
    fleet = {{ source = "fleetd/fleet" }}
  }}
}}

provider "fleet" {{
  # url and token from FLEET_URL and FLEET_TOKEN
  request_timeout          = 20
  max_retries              = 3
  iam_verification_timeout = 20
}}

variable "gke_token" {{
  type      = string
  sensitive = true
  ephemeral = true
}}

locals {{
  sim_iam = "{sim_iam}"
}}

resource "fleet_environment" "e" {{
  name        = "{ENV}"
  description = "{v.get('env_desc', 'managed by terraform')}"
  upgrade_deadline_seconds = {v.get('env_deadline', 1800)}
  pod_policy = {{
    containers   = false
    volume_kinds = {v.get('env_volume_kinds', '["persistent_volume_claim", "csi", "secret", "config_map", "empty_dir"]')}
  }}
  history_server = {{
    storage         = "gs://tf-ray-logs/{ENV}"
    collector_image = "quay.io/kuberay/collector:v1.7.0"
    url             = "https://ray-history.example.com"
  }}{v.get('env_ingress', '')}
}}

{v.get('flavor', '')}
resource "fleet_priority_class" "normal" {{
  name  = "tf-normal"
  value = 100
}}

resource "fleet_queue" "q" {{
  name                   = "tf-q"
  environment            = fleet_environment.e.name
  weight                 = {v.get('weight', 1)}
  nominal_quota          = {{ "{H100}" = 8 }}
  default_priority_class = fleet_priority_class.normal.name
}}

resource "fleet_webhook" "portal" {{
  environment = fleet_environment.e.name
  url         = "https://portal.example.com/hooks/fleet"
  types       = ["job.state_changed", "job.failed"]
}}

resource "fleet_budget" "q" {{
  name         = "tf-q-monthly"
  environment  = fleet_environment.e.name
  scope        = "queue"
  queue        = fleet_queue.q.name
  amount_usd   = 5000
  soft_percent = 90
  hard         = true
}}

resource "fleet_api_token" "ci" {{
  name         = "tf-ci"
  role         = "{v.get('token_role', 'viewer')}"
  environments = [fleet_environment.e.name]
}}

resource "fleet_team" "ml" {{
  name         = "tf-ml"
  environments = [fleet_environment.e.name]
  description  = "managed by terraform"
}}

resource "fleet_queue" "ml" {{
  name        = "tf-ml-q"
  environment = fleet_environment.e.name
  team        = fleet_team.ml.name
}}

resource "fleet_api_token" "ml" {{
  name         = "tf-ml-submitter"
  role         = "submitter"
  environments = [fleet_environment.e.name]
  team         = fleet_team.ml.name
}}

# ---- GKE: phase 1, the service accounts' labels (terraform_data stands in for google_*), phase 2
resource "fleet_cloud" "gke" {{
  name          = "tf-gke-usc1"
  environment   = fleet_environment.e.name
  provider_type = "gke"
  region        = "{gke['region']}"
  account       = {{ project = "{gke['project']}" }}
}}

resource "terraform_data" "gke_iam" {{
  input = {{
    cp      = "{gke['iam']['control_plane']['service_account']}"
    cl      = "{gke['iam']['cluster_role']['service_account']}"
    cloud   = fleet_cloud.gke.id
    sa_want = fleet_cloud.gke.iam_required.control_plane_service_account.account_id
  }}
  provisioner "local-exec" {{
    command = <<-EOT
      curl -fsS -X POST ${{local.sim_iam}} -H 'Content-Type: application/json' -d '{{"provider":"gcp","service_account":"${{self.input.cp}}","description":"fleet.io/cloud-id=${{self.input.cloud}}","token_creators":["{fleetd_sa}"]}}'
      curl -fsS -X POST ${{local.sim_iam}} -H 'Content-Type: application/json' -d '{{"provider":"gcp","service_account":"${{self.input.cl}}","description":"fleet.io/cloud-id=${{self.input.cloud}}"}}'
    EOT
  }}
}}

resource "fleet_cloud_iam" "gke" {{
  cloud_id           = fleet_cloud.gke.id
  control_plane_role = terraform_data.gke_iam.output.cp
  cluster_role       = terraform_data.gke_iam.output.cl
}}

# ---- AKS
resource "fleet_cloud" "aks" {{
  name          = "tf-aks-eus"
  environment   = fleet_environment.e.name
  provider_type = "aks"
  region        = "{aks['region']}"
  account = {{
    subscription_id = "{aks['provider_cluster_id'].split('/')[2]}"
    tenant_id       = "{aks_cp.get('tenant_id', '')}"
    resource_group  = "{aks['provider_cluster_id'].split('/')[4]}"
  }}
}}

resource "terraform_data" "aks_iam" {{
  input = {{
    cp    = "{aks_cp['resource_id']}"
    cl    = "{aks['iam']['cluster_role']['resource_id']}"
    cloud = fleet_cloud.aks.id
    env   = fleet_cloud.aks.environment
  }}
  provisioner "local-exec" {{
    command = <<-EOT
      for id in ${{self.input.cp}} ${{self.input.cl}}; do
        curl -fsS -X POST ${{local.sim_iam}} -H 'Content-Type: application/json' -d '{{"provider":"azure","resource_id":"'$id'","tags":{{"fleet.io/cloud-id":"${{self.input.cloud}}","fleet.io/environment":"${{self.input.env}}"}}}}' || exit 1
      done
    EOT
  }}
}}

resource "fleet_cloud_iam" "aks" {{
  cloud_id           = fleet_cloud.aks.id
  control_plane_role = terraform_data.aks_iam.output.cp
  cluster_role       = terraform_data.aks_iam.output.cl
}}

# ---- HyperPod
resource "fleet_cloud" "hp" {{
  name          = "tf-hp-usw2"
  environment   = fleet_environment.e.name
  provider_type = "hyperpod"
  region        = "{hp['region']}"
  account       = {{ account_id = "{hp['account']}" }}
}}

resource "terraform_data" "hp_iam" {{
  input = {{
    cp    = "{hp['iam']['control_plane']['role_arn']}"
    cl    = "{hp['iam']['cluster_role']['role_arn']}"
    cloud = fleet_cloud.hp.id
    env   = fleet_cloud.hp.environment
    ext   = fleet_cloud.hp.external_id
    trust = fleet_cloud.hp.iam_required.control_plane_role.assume_role_policy
  }}
  provisioner "local-exec" {{
    command = <<-EOT
      curl -fsS -X POST ${{local.sim_iam}} -H 'Content-Type: application/json' -d '{{"provider":"aws","role_arn":"${{self.input.cp}}","external_id":"${{self.input.ext}}","tags":{{"fleet.io/cloud-id":"${{self.input.cloud}}","fleet.io/environment":"${{self.input.env}}"}}}}'
      curl -fsS -X POST ${{local.sim_iam}} -H 'Content-Type: application/json' -d '{{"provider":"aws","role_arn":"${{self.input.cl}}","tags":{{"fleet.io/cloud-id":"${{self.input.cloud}}","fleet.io/environment":"${{self.input.env}}"}}}}'
    EOT
  }}
}}

resource "fleet_cloud_iam" "hp" {{
  cloud_id           = fleet_cloud.hp.id
  control_plane_role = terraform_data.hp_iam.output.cp
  cluster_role       = terraform_data.hp_iam.output.cl
}}

# ---- a member cluster through the fleet-cluster module; its token is ephemeral and write-only
module "gke_a" {{
  source              = "{TOP}/terraform/modules/fleet-cluster"
  cloud_id            = fleet_cloud_iam.gke.cloud_id
  name                = "{gke['name']}"
  api_server          = "{gke['api_server']}"
  ca_cert             = file("{gke['ca_file']}")
  token               = var.gke_token
  provider_cluster_id = "{gke['provider_cluster_id']}"
  batch_scheduler     = "{gke.get('batch_scheduler', 'none')}"
  labels              = {{ team = "{v.get('label', 'ml')}" }}
}}

# ---- more queues and a priority class through the fleet-queue module
module "team" {{
  source           = "{TOP}/terraform/modules/fleet-queue"
  environment      = fleet_environment.e.name
  priority_classes = {{ tf-batch = {{ value = 10 }} }}
  queues = {{
    tf-team = {{
      cohort                 = "ml"
      nominal_quota          = {{ "nvidia-l4" = 4 }}
      default_priority_class = "tf-batch"
    }}
  }}
}}

data "fleet_regions" "gke" {{
  provider_type = "gke"
}}

data "fleet_cloud" "hp" {{
  id = fleet_cloud_iam.hp.id
}}

data "fleet_capacity" "prod" {{
  environment = fleet_environment.e.name
  depends_on  = [module.gke_a]
}}

output "hp_state" {{ value = data.fleet_cloud.hp.state }}
output "gke_regions" {{ value = length(data.fleet_regions.gke.regions) }}
output "gke_sa" {{ value = fleet_cloud.gke.iam_required.control_plane_service_account.email }}
output "aks_roles" {{ value = length(fleet_cloud.aks.iam_required.role_definitions) }}
output "token_secret" {{
  value     = fleet_api_token.ci.secret
  sensitive = true
}}
output "webhook_secret" {{
  value     = fleet_webhook.portal.secret
  sensitive = true
}}
{extra}
'''


BAD_TF = '''
terraform {
  required_providers {
    fleet = { source = "fleetd/fleet" }
  }
}
provider "fleet" {}
resource "fleet_queue" "bad" {
  name          = "Bad_Name"
  environment   = "tfprod"
  weight        = 0
  nominal_quota = { "nvidia-h100-80gb" = -1 }
}
resource "fleet_cloud" "bad" {
  name          = "tf-bad"
  environment   = "tfprod"
  provider_type = "gke"
  region        = "mars-north1"
  account       = { account_id = "123" }
}
resource "fleet_api_token" "bad" {
  name         = "x"
  role         = "root"
  environments = ["tfprod"]
}
resource "fleet_cloud_iam" "bad" {
  cloud_id           = "0d6a4f0e-8f4f-4a4b-9d55-1c2b3a4d5e6f"
  control_plane_role = "same@p.iam.gserviceaccount.com"
  cluster_role       = "same@p.iam.gserviceaccount.com"
}
resource "fleet_environment" "bad" {
  name = "tf-bad"
  dashboard_ingress = {
    host      = "ray.example.com"
    path      = "dash"
    path_type = "Regex"
  }
}
resource "fleet_cluster" "bad" {
  cloud_id            = "0d6a4f0e-8f4f-4a4b-9d55-1c2b3a4d5e6f"
  name                = "c1"
  api_server          = "http://10.0.0.1"
  ca_cert             = "x"
  token_wo            = "t"
  provider_cluster_id = "p"
  batch_scheduler     = "slurm"
}
'''


def fail_iam_tf(sim):
    """A cloud whose identities were never tagged: phase 2 must fail with the checks."""
    hp = next(c for c in sim.clusters if c["provider"] == "hyperpod" and c["region"] == "us-east-1")
    return f'''
terraform {{
  required_providers {{
    fleet = {{ source = "fleetd/fleet" }}
  }}
}}
provider "fleet" {{
  iam_verification_timeout = 60
}}
resource "fleet_cloud" "hp2" {{
  name          = "tf-hp-use1"
  environment   = "{ENV}"
  provider_type = "hyperpod"
  region        = "us-east-1"
  account       = {{ account_id = "{hp['account']}" }}
}}
resource "fleet_cloud_iam" "hp2" {{
  cloud_id           = fleet_cloud.hp2.id
  control_plane_role = "{hp['iam']['control_plane']['role_arn']}"
  cluster_role       = "{hp['iam']['cluster_role']['role_arn']}"
}}
'''


CA_TF = '''
terraform {
  required_providers {
    fleet = { source = "fleetd/fleet" }
  }
}
provider "fleet" {
  ca_cert     = %s
  max_retries = 0
}
data "fleet_capacity" "all" {}
output "rows" { value = length(data.fleet_capacity.all.items) }
'''


# issue 26: a flavor fleetd does not ship, added by the admin without a rebuild
FLAVOR_TF = '''
resource "fleet_flavor" "b300" {
  name       = "tf-b300"
  kind       = "gpu"
  memory_gib = 288
  machine_types = [{
    provider              = "hyperpod"
    machine_type          = "ml.p6-b300.48xlarge"
    accelerators_per_node = 8
    vcpus                 = 192
    on_demand_hour        = 140.5
    node_label = {
      key   = "node.kubernetes.io/instance-type"
      value = "ml.p6-b300.48xlarge"
    }
  }]
}
'''
