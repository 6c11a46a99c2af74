# One member cluster of an active cloud. fleetd checks it can reach the cluster (TLS with the
# given CA, token accepted) before answering. The token goes through the write-only attribute
# token_wo (Terraform 1.11): it is sent to fleetd and never stored in the plan or the state;
# raise token_version to send a new one.

resource "fleet_cluster" "this" {
  cloud_id            = var.cloud_id
  name                = var.name
  api_server          = var.api_server
  ca_cert             = var.ca_cert
  token_wo            = var.token
  token_wo_version    = var.token_version
  provider_cluster_id = var.provider_cluster_id
  labels              = var.labels
  batch_scheduler     = var.batch_scheduler
  kueue               = var.kueue
}
