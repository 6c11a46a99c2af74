output "cloud_id" {
  description = "fleetd cloud id, known once phase 2 has made the cloud active (use it for member clusters)."
  # The phase-2 object's id is the cloud id; reading it from there orders dependents after it.
  value = restapi_object.iam.id
}

output "external_id" {
  description = "External id fleetd passes to sts:AssumeRole."
  value       = local.cloud.external_id
}

output "state" {
  description = "Cloud state after phase 2 (\"active\")."
  value       = jsondecode(restapi_object.iam.api_response).state
}

output "control_plane_role_arn" {
  value = aws_iam_role.control_plane.arn
}

output "cluster_role_arn" {
  value = aws_iam_role.cluster.arn
}
