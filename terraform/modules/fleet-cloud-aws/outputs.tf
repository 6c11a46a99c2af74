output "cloud_id" {
  description = "fleetd cloud id, known once phase 2 has made the cloud active (use it for member clusters)."
  # Read from the phase-2 resource, so that dependents wait for the active cloud.
  value = fleet_cloud_iam.this.cloud_id
}

output "external_id" {
  description = "External id fleetd passes to sts:AssumeRole."
  value       = fleet_cloud.this.external_id
}

output "state" {
  description = "Cloud state after phase 2 (\"active\")."
  value       = fleet_cloud_iam.this.state
}

output "control_plane_role_arn" {
  value = aws_iam_role.control_plane.arn
}

output "cluster_role_arn" {
  value = aws_iam_role.cluster.arn
}
