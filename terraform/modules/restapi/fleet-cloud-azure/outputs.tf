output "cloud_id" {
  description = "fleetd cloud id, known once phase 2 has made the cloud active (use it for member clusters)."
  # The phase-2 object's id is the cloud id; reading it from there orders dependents after it.
  value = restapi_object.iam.id
}

output "external_id" {
  description = "External id fleetd generated for this cloud."
  value       = local.cloud.external_id
}

output "state" {
  description = "Cloud state after phase 2 (\"active\")."
  value       = jsondecode(restapi_object.iam.api_response).state
}

output "control_plane_identity_id" {
  value = azurerm_user_assigned_identity.control_plane.id
}

output "cluster_identity_id" {
  description = "Use as the kubelet identity of this cloud's AKS clusters."
  value       = azurerm_user_assigned_identity.cluster.id
}
