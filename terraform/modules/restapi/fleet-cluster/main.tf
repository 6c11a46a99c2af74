# One member cluster of an active cloud. fleetd checks it can reach the cluster (TLS with the
# given CA, token accepted) before answering 201. The token is never read back, so it is
# excluded from drift detection; changing it here still sends the new token.

resource "restapi_object" "cluster" {
  path         = "/v1/clouds/${var.cloud_id}/clusters"
  id_attribute = "id"
  data = jsonencode({
    name                = var.name
    api_server          = var.api_server
    ca_cert             = var.ca_cert
    credentials         = { token = var.token }
    provider_cluster_id = var.provider_cluster_id
    labels              = var.labels
  })
  ignore_changes_to = ["credentials"]
  force_new         = ["name", "provider_cluster_id"]
}
