output "cluster_id" {
  description = "fleetd cluster id."
  value       = restapi_object.cluster.id
}
