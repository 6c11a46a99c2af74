# prod and dev, each in two regions: four clouds, each with its own scoped IAM pair, one
# apply, with terraform-provider-fleet. The environments, queues per environment, fleet-wide
# priority classes, and optional member clusters (tokens write-only: never in the state).

resource "fleet_environment" "this" {
  for_each    = var.projects
  name        = each.key
  description = "GCP project ${each.value}"
}

locals {
  clouds = {
    for pair in setproduct(keys(var.projects), var.regions) :
    "${pair[0]}/${pair[1]}" => { environment = pair[0], region = pair[1] }
  }
}

module "cloud" {
  source   = "../../modules/fleet-cloud-gcp"
  for_each = local.clouds

  name        = "${each.value.environment}-${each.value.region}"
  environment = fleet_environment.this[each.value.environment].name
  region      = each.value.region
  project     = var.projects[each.value.environment]
}

module "priority_classes" {
  source      = "../../modules/fleet-queue"
  environment = fleet_environment.this["prod"].name
  priority_classes = {
    production  = { value = 1000, preempt = true }
    batch       = { value = 100 }
    best-effort = { value = 0 }
  }
}

module "prod_queues" {
  source      = "../../modules/fleet-queue"
  environment = fleet_environment.this["prod"].name
  queues = {
    training = {
      cohort                 = "gpu"
      weight                 = 3
      nominal_quota          = { "nvidia-h100-80gb" = 64, "tpu-v5p" = 128 }
      borrowing_limit        = { "nvidia-h100-80gb" = 32 }
      default_priority_class = "production"
      queueing_strategy      = "strict_fifo"
    }
    inference = {
      cohort                 = "gpu"
      nominal_quota          = { "nvidia-l4" = 32 }
      lending_limit          = { "nvidia-l4" = 8 }
      default_priority_class = "production"
    }
  }
  depends_on = [module.priority_classes]
}

module "dev_queues" {
  source      = "../../modules/fleet-queue"
  environment = fleet_environment.this["dev"].name
  queues = {
    experiments = {
      nominal_quota          = { "nvidia-l4" = 8, "nvidia-a100-40gb" = 8 }
      default_priority_class = "best-effort"
    }
  }
  depends_on = [module.priority_classes]
}

data "google_container_cluster" "member" {
  for_each = var.clusters
  project  = var.projects[split("/", each.value.cloud)[0]]
  location = split("/", each.value.cloud)[1]
  name     = each.value.gke_name
}

module "cluster" {
  source   = "../../modules/fleet-cluster"
  for_each = var.clusters

  # cloud_id comes from the phase-2 object: the cloud is active before a cluster joins it.
  cloud_id            = module.cloud[each.value.cloud].cloud_id
  name                = each.value.gke_name
  api_server          = "https://${data.google_container_cluster.member[each.key].endpoint}"
  ca_cert             = base64decode(data.google_container_cluster.member[each.key].master_auth[0].cluster_ca_certificate)
  token               = var.cluster_tokens[each.key]
  provider_cluster_id = data.google_container_cluster.member[each.key].id
  labels = {
    environment = split("/", each.value.cloud)[0]
    region      = split("/", each.value.cloud)[1]
  }
}
