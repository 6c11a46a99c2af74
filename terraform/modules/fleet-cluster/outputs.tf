output "cluster_id" {
  description = "fleetd cluster id."
  value       = fleet_cluster.this.id
}
