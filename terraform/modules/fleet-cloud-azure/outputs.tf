output "cloud_id" {
  description = "fleetd cloud id, known once phase 2 has made the cloud active (use it for member clusters)."
  value       = fleet_cloud_iam.this.cloud_id
}

output "external_id" {
  description = "External id fleetd generated for this cloud."
  value       = fleet_cloud.this.external_id
}

output "state" {
  description = "Cloud state after phase 2 (\"active\")."
  value       = fleet_cloud_iam.this.state
}

output "control_plane_identity_id" {
  value = azurerm_user_assigned_identity.control_plane.id
}

output "cluster_identity_id" {
  description = "Use as the kubelet identity of this cloud's AKS clusters."
  value       = azurerm_user_assigned_identity.cluster.id
}
