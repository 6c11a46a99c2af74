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

output "cluster_name_prefix" {
  description = "GKE clusters of this cloud must be named with this prefix (the IAM condition allows only them)."
  value       = local.required.cluster_name_prefix
}

output "control_plane_service_account" {
  value = google_service_account.control_plane.email
}

output "cluster_service_account" {
  description = "Use as the node service account of this cloud's GKE node pools."
  value       = google_service_account.cluster.email
}
